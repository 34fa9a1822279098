//! The model's account of the prefix's index: which entries it must and may list, which it
//! may say are valid, and which may be current. A name written again (after a restart from
//! an older checkpoint) has an entry per copy, so entries are judged per name.

use super::Model;

/// One index entry as `scr index --json` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The dataset's name.
    pub name: String,
    /// Complete and never failed.
    pub valid: bool,
    /// Marked current.
    pub current: bool,
}

impl Model {
    /// Judges the prefix's index against the model.
    pub fn judge_index(&self, entries: &[Entry]) -> Result<(), String> {
        for c in self.ckpts.iter().filter(|c| !c.output) {
            if c.surely_on_prefix() && !c.rejected {
                // README, "The drain" / guide config.rst (config-22): a flushed checkpoint is
                // indexed complete
                let listed: Vec<&Entry> = entries.iter().filter(|e| e.name == c.name()).collect();
                if listed.is_empty() {
                    return Err(format!("{} is flushed but not in the index", c.label()));
                }
                if !listed.iter().any(|e| e.valid) {
                    return Err(format!("the index says {} is not valid", c.label()));
                }
            }
        }
        let mut names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let listed: Vec<&Entry> = entries.iter().filter(|e| e.name == name).collect();
            let copies: Vec<_> = self.copies(name).collect();
            if copies.is_empty() {
                return Err(format!(
                    "the index lists {name}, which the history never wrote"
                ));
            }
            if copies.iter().all(|c| c.output) {
                continue;
            }
            // an entry per copy not dropped nor deleted (the drain indexes one it cannot
            // complete as incomplete: README, "The drain"), valid only for a flushed one
            let present = copies
                .iter()
                .filter(|c| !c.dropped && !c.window_deleted)
                .count();
            if listed.len() > present {
                let why = if copies.iter().any(|c| c.dropped) {
                    // guide manage.rst (manage-13): --drop removes the entry
                    "after scr index --drop"
                } else {
                    // README, SCR_PREFIX_SIZE: the window removes files, metadata and entry
                    "though SCR_PREFIX_SIZE deleted it"
                };
                return Err(format!(
                    "the index lists {name} {} time(s) {why}; {present} cop{} of it may be listed",
                    listed.len(),
                    if present == 1 { "y" } else { "ies" }
                ));
            }
            let flushed = copies.iter().filter(|c| c.may_be_indexed()).count();
            if listed.iter().filter(|e| e.valid).count() > flushed {
                return Err(format!(
                    "the index says {name} is valid; {flushed} cop{} of it may have been flushed",
                    if flushed == 1 { "y" } else { "ies" }
                ));
            }
        }
        let current: Vec<&Entry> = entries.iter().filter(|e| e.current).collect();
        if current.len() > 1 {
            let names: Vec<&str> = current.iter().map(|e| e.name.as_str()).collect();
            return Err(format!(
                "the index marks several datasets current: {names:?}"
            ));
        }
        // SPEC §4.7: CURRENT never moves backwards while a newer complete one is on the
        // prefix (below the operator's choice, which the operator may move backwards)
        let bound = self.operator_current.unwrap_or(u32::MAX);
        let newest_sure = self
            .ckpts
            .iter()
            .filter(|c| !c.output && c.surely_on_prefix() && !c.rejected && c.serial <= bound)
            .max_by_key(|c| c.serial);
        if let Some(s) = newest_sure {
            match current.first().map(|e| (e, self.current_copy(&e.name))) {
                Some((_, Some(c))) if c >= s.serial => {}
                Some((e, c)) => {
                    return Err(format!(
                        "the index's current is {}{}, older than {} on the prefix",
                        e.name,
                        c.map(|c| format!(" (#{c})")).unwrap_or_default(),
                        s.label()
                    ));
                }
                None if self.current_may_be_unset => {}
                None => {
                    return Err(format!(
                        "the index marks nothing current; {} is on the prefix",
                        s.label()
                    ));
                }
            }
        }
        Ok(())
    }
}
