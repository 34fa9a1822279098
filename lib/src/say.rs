//! What the library prints on the job's stderr. Every rank of a job writes to one stream
//! (the launcher's), so each message goes out as one whole line in one write: two ranks'
//! messages never mix mid-line.

use std::io::Write;

/// Writes `text` and a newline to stderr in one write.
pub(crate) fn line(text: std::fmt::Arguments) {
    let mut line = text.to_string();
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `eprintln!` as one write (see [`line`]).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say::line(format_args!($($arg)*))
    };
}
