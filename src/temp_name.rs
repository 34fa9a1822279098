//! The names of the hidden temporaries SCR's writers make beside a file before they rename
//! or link it into place, and how to tell them (and their writer) apart from anything else
//! in a directory: a rule of its own, shared by the plain writers ([`crate::io`]) and the
//! confined ones ([`crate::safe_fs`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether a file name is one of [`temporary_name`]'s: `.<file>.tmp.<pid>.<n>` and
/// `.<file>.new.<pid>.<n>`, which a writer killed mid-copy leaves behind
/// ([`crate::safe_fs::Beneath::remove_temporaries`] removes them).
pub(crate) fn is_temporary_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    let mut parts = rest.rsplitn(4, '.');
    let (n, pid, kind) = (parts.next(), parts.next(), parts.next());
    let digits =
        |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    digits(n)
        && digits(pid)
        && matches!(kind, Some("tmp" | "new"))
        && parts.next().is_some_and(|f| !f.is_empty())
}

/// The process id a [`temporary_name`] carries (`.<file>.<kind>.<pid>.<n>`).
pub(crate) fn temporary_writer(name: &str) -> Option<u32> {
    if !is_temporary_name(name) {
        return None;
    }
    name.rsplit('.').nth(1)?.parse().ok()
}

/// A hidden temporary beside `path`, `.<file>.<kind>.<pid>.<n>` (`kind` is `tmp` for a
/// replacement renamed over the file, `new` for a file linked into place):
/// [`is_temporary_name`] recognises exactly these names.
pub fn temporary_name(path: &Path, kind: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // the counter keeps this process's names apart; random bits from the kernel make them
    // unguessable to anyone who would take one ahead in a directory others can write
    let mut random = [0u8; 8];
    // SAFETY: getrandom writes at most random.len() bytes into it
    let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
    let salt = if got == random.len() as isize {
        u64::from_le_bytes(random)
    } else {
        // (no getrandom: the clock's low bits, which still differ between two runs)
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::from(d.subsec_nanos()))
    };
    let n = COUNTER.fetch_add(1, Ordering::Relaxed) ^ (salt << 16);
    parent_dir(path).join(format!(".{name}.{kind}.{}.{n}", std::process::id()))
}

/// The directory `path` names a file in (`.` for a bare name).
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
