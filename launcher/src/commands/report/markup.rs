//! What both pages are made of: their stylesheet, and text made safe to stand in them.

/// Text made safe for HTML content and attribute values: markup escaped, control and
/// reordering characters replaced (U+FFFD).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // a control character (no character of HTML's) or one that reorders text (a
            // name shown other than it is), from records anyone who logs may have written
            '\t' | '\n' => out.push(c),
            c if scr::text::misleads(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The pages' stylesheet (the job's report and the site-wide one).
pub const STYLE: &str = r#"
:root { --ink:#1d2330; --muted:#5b6475; --line:#dde1e8; --bg:#f4f6f9; --card:#fff;
        --blue:#1f77b4; --red:#c81e1e; --green:#2c8c2c; --amber:#b48700; --purple:#7d5bb0; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
header { background:#1d2330; color:#fff; padding:22px 32px; }
header h1 { margin:0 0 4px; font-size:26px; font-weight:600; }
header p { margin:2px 0; color:#c9cfdb; font-size:14px; }
header code { color:#fff; }
main { max-width:1180px; margin:0 auto; padding:18px 24px 40px; }
section { background:var(--card); border:1px solid var(--line); border-radius:8px;
          padding:16px 22px; margin:18px 0; }
h2 { font-size:19px; margin:2px 0 10px; }
p.lead { color:var(--muted); margin:0 0 12px; max-width:70em; }
figure { margin:10px 0; }
figure svg { width:100%; height:auto; display:block; }
.cards { display:grid; grid-template-columns:repeat(4, 1fr); gap:12px; }
.card { border:1px solid var(--line); border-radius:8px; padding:10px 14px; }
.card .label { color:var(--muted); font-size:13px; }
.card .value { font-size:22px; font-weight:600; }
.card .detail { color:var(--muted); font-size:13px; }
.card.bad .value { color:var(--red); }
.card.good .value { color:var(--green); }
.advice { border-left:4px solid var(--blue); background:#eef5fb; padding:8px 14px; margin:12px 0; }
table { border-collapse:collapse; width:100%; font-size:14px; margin:6px 0 4px; }
th, td { text-align:left; padding:5px 10px; border-bottom:1px solid var(--line); }
th { background:#f0f2f6; font-weight:600; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
tr.died td, tr.failure td { color:var(--red); }
.tag { display:inline-block; padding:0 8px; border-radius:10px; font-size:12px; font-weight:600; }
.tag.ended, .tag.complete { background:#e3f3e3; color:var(--green); }
.tag.died, .tag.failed, .tag.incomplete { background:#fbe4e4; color:var(--red); }
.tag.halted, .tag.cache-only, .tag.flushing { background:#fbf1d6; color:var(--amber); }
.tag.open { background:#eceef2; color:var(--muted); }
.tag.current { background:#e7e0f4; color:var(--purple); }
.tag.prefix, .tag.cache-and-prefix { background:#e3eef8; color:var(--blue); }
#interval-table { width:auto; }
dl { margin:0; } dt { font-weight:600; margin-top:10px; } dd { margin:2px 0 0 18px; color:var(--muted); }
details summary { cursor:pointer; font-weight:600; margin:8px 0; }
footer { color:var(--muted); font-size:13px; text-align:center; padding:10px; }
"#;

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escaped_text_holds_no_markup_control_or_reordering_character() {
        assert_eq!(
            escape("<b a='1'>\u{1b}[31mx\u{202e}gpj.exe\u{7}\ty"),
            "&lt;b a=&#39;1&#39;&gt;\u{fffd}[31mx\u{fffd}gpj.exe\u{fffd}\ty"
        );
    }
}
