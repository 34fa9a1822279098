//! Hostlist algebra for SCR (issue 3). This crate is an empty shell until that issue lands;
//! nothing here pretends to work yet.
