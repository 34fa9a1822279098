//! SCR configuration files: `KEY=VALUE` lines, or descriptor lines whose
//! first pair names the parent and whose further pairs are its attributes:
//!
//! ```text
//! SCR_FLUSH=10                                   # simple parameter
//! STORE=/dev/shm GROUP=NODE COUNT=1              # v1.1.8+ descriptors
//! CKPT=0 INTERVAL=1 GROUP=NODE STORE=/dev/shm TYPE=XOR SET_SIZE=8
//! CACHEDESC=0 BASE=/tmp SIZE=2                   # 1.1-8 descriptors
//! CKPTDESC=0 INTERVAL=1 BASE=/tmp TYPE=LOCAL HOP_DISTANCE=1
//! CNTLDIR=/tmp BYTES=1GB                         # capacity checks
//! ```
//! `#` starts a comment anywhere; keys are upper-cased; spaces or tabs may surround `=`.
//! In values, `$NAME` and `${NAME}` are replaced by that environment variable (as SCR
//! does: `SCR_PREFIX=$PWD/ckpt`), an unset one is an error naming it, and `\` makes the
//! next character literal (`\$`).

use crate::error::{Error, Result};
use std::path::Path;

/// Longest key or value SCR accepts.
pub const MAX_TOKEN: usize = 1024;

/// One `KEY=VALUE [CHILD=VALUE …]` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigEntry {
    pub line: usize,
    pub key: String,
    pub value: String,
    pub children: Vec<(String, String)>,
}

/// A parsed configuration file: its entries in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigFile {
    pub origin: String,
    pub entries: Vec<ConfigEntry>,
    /// The file's permission bits when others may read it, judged on the handle its text
    /// was read through (a secret in it is then not used): `None` for text of no file.
    pub others_may_read: Option<u32>,
}

/// The largest configuration file read (SCR's are a few kilobytes).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

impl ConfigFile {
    pub fn read(path: &Path) -> Result<Self> {
        Self::read_with(path, |path, limit| {
            let file = crate::io::open_regular(path)?;
            let others_may_read = crate::io::readable_by_others(&file);
            let len = file
                .metadata()
                .map_err(|e| Error::io(path, "stat", e))?
                .len();
            Ok((
                crate::io::read_open_file(path, file, len, limit)?,
                others_may_read,
            ))
        })
    }

    /// [`ConfigFile::read`] of a file SCR takes settings from only when it is this user's
    /// (or root's), nobody else can write it, and nobody else may change the way to it
    /// (who could swap it for a file of theirs by name): otherwise [`Error::Untrusted`].
    pub fn read_trusted(path: &Path) -> Result<Self> {
        Self::read_with(path, crate::safe_fs::read_only_yours)
    }

    fn read_with(
        path: &Path,
        read: impl Fn(&Path, u64) -> Result<(Vec<u8>, Option<u32>)>,
    ) -> Result<Self> {
        // (the reader judges whose the entry is first; a directory of the user's own is
        // then named as such)
        let (bytes, others_may_read) = read(path, MAX_CONFIG_BYTES).map_err(|e| match e {
            Error::Invalid { .. } if path.is_dir() => {
                Error::invalid(path, "is a directory, expected an SCR configuration file")
            }
            e => e,
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            Error::invalid(
                path,
                format!(
                    "is not UTF-8 text (bad byte at offset {})",
                    e.utf8_error().valid_up_to()
                ),
            )
        })?;
        Ok(ConfigFile {
            others_may_read,
            ..Self::parse(&text, &path.display().to_string())?
        })
    }

    /// Parses configuration text; `origin` names it in errors (a path, or "SCR_Config").
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let mut entries = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let content = strip_comment(raw);
            let pairs = tokenize(content).map_err(|what| Error::Config {
                origin: format!("{origin}:{line}"),
                what,
            })?;
            let mut pairs = pairs.into_iter();
            let Some((key, value)) = pairs.next() else {
                continue;
            };
            entries.push(ConfigEntry {
                line,
                key,
                value,
                children: pairs.collect(),
            });
        }
        Ok(ConfigFile {
            origin: origin.to_string(),
            entries,
            others_may_read: None,
        })
    }

    /// `origin:line` for messages about an entry.
    pub fn location(&self, entry: &ConfigEntry) -> String {
        format!("{}:{}", self.origin, entry.line)
    }
}

/// A line up to its comment: a `#` that is neither in double quotes nor escaped (`\#`).
fn strip_comment(line: &str) -> &str {
    let (mut quoted, mut escaped) = (false, false);
    for (at, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..at],
            _ => {}
        }
    }
    line
}

/// Where the double quote that closes a quoted value is in `quoted` (what follows the
/// opening one): the first not escaped with `\`.
fn closing_quote(quoted: &str) -> Option<usize> {
    let mut escaped = false;
    for (at, c) in quoted.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(at),
            _ => {}
        }
    }
    None
}

/// Splits a line into `KEY=VALUE` pairs, upper-casing keys.
fn tokenize(line: &str) -> std::result::Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    let mut rest = line.trim_matches([' ', '\t', '\r']);
    while !rest.is_empty() {
        let key_end = rest.find([' ', '\t', '=']).unwrap_or(rest.len());
        let key = &rest[..key_end];
        rest = rest[key_end..].trim_start_matches([' ', '\t']);
        let Some(after_eq) = rest.strip_prefix('=') else {
            return Err(format!(
                "expected KEY=VALUE, found {key:?} without '=' (write it as {key}=<value>)"
            ));
        };
        if key.is_empty() {
            return Err("found '=' without a key before it".into());
        }
        rest = after_eq.trim_start_matches([' ', '\t']);
        // a value in double quotes may hold '=' and spaces (SCR v3.1's
        // SCR_PREFIX="/my/dir/with/=/sign")
        let (value, after) = match rest.strip_prefix('"') {
            Some(quoted) => {
                let end = closing_quote(quoted)
                    .ok_or_else(|| format!("the value of {key} opens a '\"' it does not close"))?;
                (&quoted[..end], &quoted[end + 1..])
            }
            None => {
                let value_end = rest.find([' ', '\t', '=']).unwrap_or(rest.len());
                (&rest[..value_end], &rest[value_end..])
            }
        };
        if value.is_empty() {
            return Err(format!("{key}= has no value"));
        }
        rest = after.trim_start_matches([' ', '\t']);
        if rest.starts_with('=') {
            return Err(format!(
                "value of {key} is followed by another '='; put a value holding '=' in double \
                 quotes ({key}=\"a=b\")"
            ));
        }
        for (what, token) in [("key", key), ("value", value)] {
            if token.len() > MAX_TOKEN {
                return Err(format!(
                    "{what} is {} characters long; at most {MAX_TOKEN} are allowed",
                    token.len()
                ));
            }
            if token.chars().any(char::is_control) {
                return Err(format!("{what} {token:?} contains a control character"));
            }
        }
        let value = expand_value(value, &|name| std::env::var(name).ok())?;
        pairs.push((key.to_ascii_uppercase(), value));
    }
    Ok(pairs)
}

/// A value with `$NAME` and `${NAME}` replaced by environment variables (`env`) and `\x`
/// read as a literal `x`. SCR reads names of letters and `_`; digits after the first
/// character are accepted too, as in a shell.
pub fn expand_value(
    raw: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, next)) => out.push(next),
                None => return Err(format!("{raw:?} ends in a lone '\\' (write \\\\ for one)")),
            },
            '$' => {
                let braced = chars.next_if(|&(_, c)| c == '{').is_some();
                let start = at + 1 + usize::from(braced);
                let mut end = start;
                while let Some(&(i, c)) = chars.peek() {
                    let first = i == start;
                    if c == '_' || c.is_ascii_alphabetic() || (!first && c.is_ascii_digit()) {
                        end = i + c.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                let name = &raw[start..end];
                if braced && chars.next_if(|&(_, c)| c == '}').is_none() {
                    return Err(format!("{raw:?}: '${{' without its closing '}}'"));
                }
                if name.is_empty() {
                    return Err(format!(
                        "{raw:?}: '$' must start an environment variable name (write \\$ for a '$')"
                    ));
                }
                let value = env(name).ok_or_else(|| {
                    format!(
                        "{raw:?} uses the environment variable {name}, which is not set (set it, \
                         or write \\$ for a '$')"
                    )
                })?;
                out.push_str(&value);
            }
            c => out.push(c),
        }
    }
    if out.len() > MAX_TOKEN {
        return Err(format!(
            "{raw:?} is {} characters long once expanded; at most {MAX_TOKEN} are allowed",
            out.len()
        ));
    }
    if out.chars().any(char::is_control) {
        return Err(format!("{raw:?} holds a control character once expanded"));
    }
    Ok(out)
}

/// `value` written so that a configuration line reads it back unchanged: `$`, `\`, `"`
/// and `#` escaped, in double quotes when it holds `=` or white space.
pub fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    for c in value.chars() {
        if matches!(c, '$' | '\\' | '"' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    if value.contains(['=', ' ', '\t']) {
        format!("\"{out}\"")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_syntaxes() {
        let text = "\
# system config
SCR_FLUSH = 10   # every ten
scr_copy_type=xor
STORE=/dev/shm GROUP=NODE COUNT=1
CKPTDESC=0 INTERVAL=1 BASE=/tmp TYPE=LOCAL HOP_DISTANCE=1

\tCNTLDIR\t=\t/tmp BYTES=1GB
";
        let c = ConfigFile::parse(text, "test.conf").unwrap();
        assert_eq!(c.entries.len(), 5);
        assert_eq!(
            (
                c.entries[0].key.as_str(),
                c.entries[0].value.as_str(),
                c.entries[0].line
            ),
            ("SCR_FLUSH", "10", 2)
        );
        assert_eq!(c.entries[1].key, "SCR_COPY_TYPE");
        assert_eq!(c.entries[1].value, "xor", "values keep their case");
        assert_eq!(c.entries[3].children[2], ("TYPE".into(), "LOCAL".into()));
        assert_eq!(c.entries[4].children, [("BYTES".into(), "1GB".into())]);
    }

    #[test]
    fn environment_variables_in_values_are_expanded() {
        let env = |name: &str| match name {
            "PWD" => Some("/home/u/run".to_string()),
            "JOB_2" => Some("42".to_string()),
            _ => None,
        };
        let x = |raw: &str| expand_value(raw, &env);
        assert_eq!(x("$PWD/PFS").unwrap(), "/home/u/run/PFS");
        assert_eq!(x("${PWD}x").unwrap(), "/home/u/runx");
        assert_eq!(x("/s/$JOB_2/c").unwrap(), "/s/42/c");
        assert_eq!(x("a\\$PWD").unwrap(), "a$PWD");
        assert_eq!(x("plain").unwrap(), "plain");
        for (bad, needle) in [
            ("$NOPE/x", "NOPE, which is not set"),
            ("$/x", "must start an environment variable"),
            ("${PWD", "closing"),
            ("x\\", "lone"),
        ] {
            let e = x(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
        for v in [
            "/a$b\\c",
            "$",
            "plain",
            "/with/=/sign",
            "two words",
            "\"x",
            "a\"b c",
            "/a/#b",
            "# x",
        ] {
            let line = format!("K={}", escape_value(v));
            let back = ConfigFile::parse(&line, "t").unwrap();
            assert_eq!(back.entries[0].value, v, "{line} reads back");
        }
    }

    #[test]
    fn an_unset_variable_names_the_file_and_line() {
        let err = ConfigFile::parse(
            "SCR_FLUSH=1\nSCR_PREFIX=$SCR_TEST_SURELY_UNSET_VAR/p\n",
            "u.conf",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("u.conf:2: ") && err.contains("SCR_TEST_SURELY_UNSET_VAR"),
            "{err}"
        );
    }

    #[test]
    fn a_quoted_value_may_hold_equals_signs_and_spaces() {
        let c = ConfigFile::parse(
            "SCR_PREFIX=\"/my/dir/with/=/sign\" # as v3.1's guide\nA=\"x y\" B=1",
            "t",
        )
        .unwrap();
        assert_eq!(c.entries[0].value, "/my/dir/with/=/sign");
        assert_eq!(c.entries[1].value, "x y");
        assert_eq!(c.entries[1].children, [("B".into(), "1".into())]);
        // a '#' in quotes or escaped is the value's; an escaped '"' does not close it
        let c = ConfigFile::parse("P=\"/a/#b\" # c\nQ=/x\\#y#z\nR=\"s \\\" t\"", "t").unwrap();
        assert_eq!(c.entries[0].value, "/a/#b");
        assert_eq!(c.entries[1].value, "/x#y");
        assert_eq!(c.entries[2].value, "s \" t");
        let e = ConfigFile::parse("A=\"open", "t").unwrap_err().to_string();
        assert!(e.contains("does not close"), "{e}");
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        for (text, needle) in [
            ("SCR_FLUSH", "without '='"),
            ("=5", "without a key"),
            ("SCR_FLUSH=", "has no value"),
            ("A=B=C", "another '='"),
            ("CKPT=0 INTERVAL", "without '='"),
        ] {
            let err = ConfigFile::parse(&format!("\n{text}\n"), "u.conf")
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("u.conf:2: "), "{err}");
            assert!(err.contains(needle), "{text}: {err}");
        }
        let long = format!("K={}", "x".repeat(2000));
        assert!(
            ConfigFile::parse(&long, "u")
                .unwrap_err()
                .to_string()
                .contains("at most 1024")
        );
    }
}
