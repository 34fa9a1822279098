//! Nodes file (`<prefix>/.scr/nodes.scr`): how many nodes the last run used,
//! which is how many the next run needs.

use crate::hash::Hash;
use crate::view::{check_value, hash_view};

hash_view!(
    /// The nodes file.
    NodesFile, "nodes file", validate = validate, max_bytes = 64 << 10
);

const NODES: &str = "NODES";

fn validate(h: &Hash) -> Result<(), String> {
    check_value::<u64>(h, NODES, "nodes file")
}

impl NodesFile {
    pub fn with_nodes(n: u64) -> Self {
        let mut f = NodesFile::new();
        f.0.set_value(NODES, n);
        f
    }

    pub fn nodes(&self) -> Option<u64> {
        self.0.parsed(NODES).ok().flatten()
    }
}
