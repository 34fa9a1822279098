//! The SCR runtime library that MPI applications link (issue 4). An empty shell until that
//! issue lands: it builds, and exports nothing that pretends to work.
