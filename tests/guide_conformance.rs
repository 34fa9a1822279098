//! `doc/guide-conformance.md` stays true: every statement of SCR v3.1's user guide it lists
//! names tests that exist, or says why it has none (left out, or differs on purpose with the
//! README's word for it); its counts are its rows'; and every test of `lib/tests/guide_*.rs`
//! names its section of the guide and is named in the document.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const GUIDE_FILES: [&str; 8] = [
    "quick",
    "integration",
    "api",
    "python_api",
    "config",
    "run",
    "halt",
    "manage",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn document() -> String {
    std::fs::read_to_string(root().join("doc/guide-conformance.md")).unwrap()
}

/// The cells of a Markdown table row (`\|` is a bar inside a cell).
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

/// `path::function` references in a cell (backticked, with a path and `::`).
fn test_refs(cell: &str) -> Vec<(String, String)> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|r| {
            let (path, name) = r.rsplit_once("::")?;
            (path.ends_with(".rs") && !name.is_empty()).then(|| (path.into(), name.into()))
        })
        .collect()
}

fn defines_fn(source: &str, name: &str) -> bool {
    source.match_indices(&format!("fn {name}")).any(|(at, m)| {
        let next = source[at + m.len()..].chars().next();
        !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[derive(Default, Debug, PartialEq, Eq)]
struct Counts {
    statements: u64,
    covered: u64,
    differs: u64,
    left_out: u64,
}

#[test]
fn every_statement_names_tests_that_exist_or_says_why_none() {
    let doc = document();
    let mut sources: BTreeMap<String, String> = BTreeMap::new();
    let mut counted: BTreeMap<String, Counts> = BTreeMap::new();
    let mut said: BTreeMap<String, Counts> = BTreeMap::new();
    let mut section: Option<String> = None;
    let mut next_id: BTreeMap<String, u64> = BTreeMap::new();
    let mut problems = Vec::new();
    for (n, line) in doc.lines().enumerate() {
        let at = format!("doc/guide-conformance.md:{}", n + 1);
        if let Some(h) = line.strip_prefix("## ") {
            section = h
                .split_once(".rst")
                .map(|(f, _)| f.to_string())
                .filter(|f| GUIDE_FILES.contains(&f.as_str()));
            continue;
        }
        if !line.starts_with('|') {
            continue;
        }
        let c = cells(line);
        // the counts table: `| api.rst | 87 | … |` or `| **all** | … |`
        if c.len() == 5 && (c[0].ends_with(".rst") || c[0] == "**all**") && section.is_none() {
            let nums: Vec<u64> = c[1..].iter().filter_map(|x| x.parse().ok()).collect();
            if nums.len() == 4 {
                let key = c[0].trim_end_matches(".rst").trim_matches('*').to_string();
                said.insert(
                    key,
                    Counts {
                        statements: nums[0],
                        covered: nums[1],
                        differs: nums[2],
                        left_out: nums[3],
                    },
                );
            }
            continue;
        }
        let Some(file) = section.clone() else {
            continue;
        };
        let Some((prefix, number)) = c[0].rsplit_once('-') else {
            continue;
        };
        let Ok(number) = number.parse::<u64>() else {
            continue;
        };
        if c.len() != 5 {
            problems.push(format!("{at}: a row of {} cells, not 5", c.len()));
            continue;
        }
        let expected = next_id.entry(file.clone()).or_insert(1);
        if prefix != file || number != *expected {
            problems.push(format!("{at}: {} where {file}-{expected} comes", c[0]));
        }
        *expected = number + 1;
        if c[1].is_empty() || c[2].is_empty() {
            problems.push(format!("{at}: {}: no heading or no statement", c[0]));
        }
        let checked = &c[3];
        let refs = test_refs(checked);
        for (path, name) in &refs {
            let source = sources
                .entry(path.clone())
                .or_insert_with(|| std::fs::read_to_string(root().join(path)).unwrap_or_default());
            if !defines_fn(source, name) {
                problems.push(format!("{at}: {}: no fn {name} in {path}", c[0]));
            }
        }
        let tally = counted.entry(file.clone()).or_default();
        tally.statements += 1;
        if let Some(why) = checked.strip_prefix("differs on purpose:") {
            tally.differs += 1;
            let what = why.split("<br>").next().unwrap_or_default().trim();
            if what.len() < 20 || !what.contains("README") {
                problems.push(format!(
                    "{at}: {}: a difference must say what this project does and where the README says why",
                    c[0]
                ));
            }
        } else if let Some(why) = checked.strip_prefix("left out:") {
            tally.left_out += 1;
            if why.trim().len() < 10 || !refs.is_empty() {
                problems.push(format!(
                    "{at}: {}: left out needs a reason, and no test",
                    c[0]
                ));
            }
        } else {
            tally.covered += 1;
            let rest = checked
                .split("<br>")
                .filter(|part| test_refs(part).len() != 1 || !part.starts_with('`'))
                .count();
            if refs.is_empty() || rest > 0 {
                problems.push(format!(
                    "{at}: {}: neither tests (`path::fn`, one a line) nor \"left out:\" or \"differs on purpose:\"",
                    c[0]
                ));
            }
        }
    }
    let mut all = Counts::default();
    for f in GUIDE_FILES {
        let c = counted.remove(f).unwrap_or_default();
        if c.statements == 0 {
            problems.push(format!("no statements of {f}.rst"));
        }
        all.statements += c.statements;
        all.covered += c.covered;
        all.differs += c.differs;
        all.left_out += c.left_out;
        if said.get(f) != Some(&c) {
            problems.push(format!(
                "the counts of {f}.rst say {:?}, its rows {c:?}",
                said.get(f)
            ));
        }
    }
    if said.get("all") != Some(&all) {
        problems.push(format!(
            "the counts' total says {:?}, the rows {all:?}",
            said.get("all")
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_guide_test_names_its_section_and_is_in_the_document() {
    let doc = document();
    let dir = root().join("lib/tests");
    let mut problems = Vec::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("guide_") && name.ends_with(".rs")) {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        let rel = Path::new("lib/tests").join(&name);
        let lines: Vec<&str> = source.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if *line != "#[test]" {
                continue;
            }
            let Some(test) = lines
                .get(i + 1)
                .and_then(|l| l.strip_prefix("fn "))
                .and_then(|l| l.split('(').next())
            else {
                continue;
            };
            seen += 1;
            // its doc comment (the lines above) names a guide file and a heading
            let comment: String = lines[..i]
                .iter()
                .rev()
                .take_while(|l| l.starts_with("///"))
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            let names_section = GUIDE_FILES
                .iter()
                .any(|f| comment.contains(&format!("{f}.rst, \"")));
            if !names_section {
                problems.push(format!(
                    "{}: {test}: its doc comment names no section (`/// api.rst, \"Heading\": …`)",
                    rel.display()
                ));
            }
            if !doc.contains(&format!("`{}::{test}`", rel.display())) {
                problems.push(format!(
                    "{}: {test} is not named in doc/guide-conformance.md",
                    rel.display()
                ));
            }
        }
    }
    assert!(seen > 0, "no tests in lib/tests/guide_*.rs");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
