//! What the library prints: on stderr, and on stdout what SCR's user guide says goes there
//! (why a job halts). Every rank of a job writes to one stream (the launcher's), so each
//! message goes out as one whole line in one write: two ranks' messages never mix mid-line.

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

/// Writes `text` and a newline to stdout in one write: what SCR's user guide says goes to
/// stdout (why a job halts).
pub(crate) fn out_line(text: std::fmt::Arguments) {
    let mut line = text.to_string();
    line.push('\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}

/// `println!` as one write, flushed at once (see [`out_line`]).
macro_rules! say_out {
    ($($arg:tt)*) => {
        $crate::say::out_line(format_args!($($arg)*))
    };
}
