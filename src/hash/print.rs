//! Text forms of a hash: SCR's `scr_print_hash_file` layout, and JSON for scripts.

use super::Hash;
use serde_json::{Map, Value};
use std::fmt;

/// `scr_print_hash_file`'s layout: one key per line, two more spaces per level, starting at two.
impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn level(hash: &Hash, indent: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            for (key, child) in hash.iter() {
                writeln!(f, "{:indent$}{key}", "")?;
                level(child, indent + 2, f)?;
            }
            Ok(())
        }
        level(self, 2, f)
    }
}

impl Hash {
    /// JSON for scripts, in stored order. A key whose children are all bare values becomes a
    /// string (one value) or an array of strings (several); anything else an object.
    pub fn to_json(&self) -> Value {
        let all_bare = !self.is_empty() && self.iter().all(|(_, c)| c.is_empty());
        if all_bare && self.len() == 1 {
            return Value::String(self.keys().next().expect("one key").to_owned());
        }
        if all_bare {
            return Value::Array(self.keys().map(|k| Value::String(k.to_owned())).collect());
        }
        Value::Object(
            self.iter()
                .map(|(k, c)| (k.to_owned(), c.to_json()))
                .collect::<Map<_, _>>(),
        )
    }

    /// The top level as a JSON object, even when it holds only bare keys.
    pub fn to_json_object(&self) -> Value {
        Value::Object(
            self.iter()
                .map(|(k, c)| (k.to_owned(), c.to_json()))
                .collect::<Map<_, _>>(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_scr() {
        let mut h = Hash::new();
        h.set_value("NODES", 4);
        h.set_kv("DSET", 3).set_value("ID", 3);
        assert_eq!(
            h.to_string(),
            "  NODES\n    4\n  DSET\n    3\n      ID\n        3\n"
        );
        assert_eq!(Hash::new().to_string(), "");
    }

    #[test]
    fn json_collapses_values() {
        let mut h = Hash::new();
        h.set_value("NODES", 4);
        let loc = h.child("LOCATION");
        loc.child("PFS");
        loc.child("CACHE");
        h.child("EMPTY");
        assert_eq!(
            h.to_json_object().to_string(),
            r#"{"NODES":"4","LOCATION":["PFS","CACHE"],"EMPTY":{}}"#
        );
    }
}
