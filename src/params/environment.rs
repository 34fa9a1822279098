//! `SCR_*` environment variables that name no parameter: a typo (`SCR_FLUSH_ASYNK=1`) would
//! otherwise change nothing without a word, where the same line in a configuration file is
//! warned of.

use super::table::{NOT_PARAMETER_PREFIXES, NOT_PARAMETERS, PARAMS, spec};

/// One warning for each `SCR_*` name among `names` that is no parameter and none of the
/// variables SCR, its tools, sites' modules or its tests legitimately set, naming the
/// parameter most likely meant.
pub fn unknown_variables<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut unknown: Vec<&str> = names
        .into_iter()
        .filter(|n| n.starts_with("SCR_") && spec(n).is_none())
        .filter(|n| !NOT_PARAMETERS.contains(n))
        .filter(|n| !NOT_PARAMETER_PREFIXES.iter().any(|p| n.starts_with(p)))
        .collect();
    unknown.sort_unstable();
    unknown.dedup();
    unknown
        .into_iter()
        .map(|name| {
            let meant = closest(name)
                .map(|p| format!("did you mean {p}? "))
                .unwrap_or_default();
            format!(
                "environment variable {name}: no SCR parameter has this name (ignored; \
                 {meant}`scr config` lists them)"
            )
        })
        .collect()
}

/// The parameter a misspelt name most likely means: the nearest by edits, when few edits
/// make it (a third of the name's length at most, and three).
fn closest(name: &str) -> Option<&'static str> {
    let most = (name.len() / 3).min(3);
    PARAMS
        .iter()
        .map(|p| (edits(name, p.name), p.name))
        .filter(|&(d, _)| d <= most)
        .min()
        .map(|(_, p)| p)
}

/// Levenshtein distance: insertions, deletions and substitutions of one byte.
fn edits(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let next = (diagonal + usize::from(x != y))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_is_warned_of_with_the_parameter_meant_and_known_names_are_not() {
        let w = unknown_variables([
            "SCR_FLUSH_ASYNK",
            "SCR_HALT_SECOND",
            "SCR_FLUSH",
            "SCR_JOB_ID",
            "SCR_SYSTEM_CONF_FILE",
            "SCR_ROOT",
            "SCR_LAUNCH_ID",
            "SCR_TEST_MPI",
            "SCR_QQQQQQQQQQQQQ",
            "PATH",
        ]);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("SCR_FLUSH_ASYNK") && w[0].contains("did you mean SCR_FLUSH_ASYNC?"));
        assert!(w[1].contains("did you mean SCR_HALT_SECONDS?"), "{w:?}");
        assert!(w[2].contains("SCR_QQQQQQQQQQQQQ") && !w[2].contains("did you mean"));
    }

    #[test]
    fn the_names_exempted_are_no_parameters() {
        for n in NOT_PARAMETERS {
            assert!(
                spec(n).is_none(),
                "{n} is a parameter: it needs no exemption"
            );
            assert!(n.starts_with("SCR_"), "{n}");
        }
    }
}
