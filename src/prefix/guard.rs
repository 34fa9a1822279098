//! What a job learns of its prefix before any work: whose the prefix is, and whether the
//! datasets SCR flushed there are still indexed.
//!
//! Whoever owns the prefix may rename anything in it, sticky bit or not: `.scr` (the index)
//! and `scr.current` can vanish under a job whose prefix is a team directory. What they
//! cannot change is a directory of the user's itself: each dataset directory SCR publishes
//! carries a mark ([`DATASET_MARK`], an extended attribute only its owner can set or
//! remove), so a prefix holding marked directories and no index is one whose index went
//! away, and a job there refuses to start over from nothing.

use crate::{Error, Result, layout, safe_fs};
use rustix::fs::{AtFlags, Mode, OFlags, XattrFlags};
use std::path::Path;

/// The extended attribute on a dataset's directory on the prefix: the dataset's id.
pub const DATASET_MARK: &str = "user.scr.dataset";

/// How many names of marked directories an error lists.
const NAMES_SAID: usize = 5;

/// A prefix that belongs to neither this user nor root is refused unless `shared`
/// (SCR_PREFIX_SHARED) says to use it, and then said in a warning (the `Ok` text): its
/// owner may rename anything in it at any moment, sticky bit or not — remove `.scr` and
/// `scr.current`, and swap a dataset's directory for one of theirs while a job reads its
/// files (the application then reads theirs) or writes them (the job's data lands in the
/// owner's directory).
pub fn check_owner(prefix: &Path, shared: bool) -> Result<Option<String>> {
    let st = rustix::fs::stat(prefix)
        .map_err(|e| Error::io(prefix, "inspect", std::io::Error::from(e)))?;
    let me = rustix::process::geteuid().as_raw();
    if st.st_uid == me || st.st_uid == 0 {
        return Ok(None);
    }
    let what = format!(
        "belongs to user id {}, not to you (id {me}) nor to root: its owner can rename or \
         remove {}/, scr.current and the datasets' directories in it at any time, and swap a \
         dataset's directory for one of theirs while your job reads it (your application \
         would read their files) or writes it (your data would land in their directory)",
        st.st_uid,
        layout::HIDDEN
    );
    if !shared {
        return Err(Error::untrusted(
            prefix,
            format!(
                "{what}. Use a prefix of your own on a way only you and root may change (in a \
                 team directory, only where it is sticky), or set SCR_PREFIX_SHARED=1 if you \
                 trust its owner"
            ),
        ));
    }
    Ok(Some(format!(
        "the prefix {} {what}; SCR refuses to start over when the index is gone and datasets it \
         flushed are still there, but a prefix of your own keeps them out of anyone else's \
         hands",
        prefix.display()
    )))
}

/// Refuses a prefix whose path another user may change, unless `shared` (SCR_PREFIX_SHARED)
/// says to use it: one who owns a directory on the way to it, or may write one that is not
/// sticky (its group, everyone, an ACL's entry; [`safe_fs::path_control`]), or owns a link
/// that the prefix is. They could swap the prefix for another directory of the user's (the
/// job would restart from that one's checkpoints and write its own into that one's index,
/// or SCR_PREFIX_PURGE would delete them) or lead it to one of theirs (which reads the
/// user's data). The prefix directory itself is judged apart: its mode by
/// [`safe_fs::check_prefix_mode`] and [`check_not_shared`], its owner by [`check_owner`].
pub fn check_path_not_redirectable(prefix: &Path, shared: bool) -> Result<()> {
    if shared {
        return Ok(());
    }
    let refuse = |who: String| {
        Err(Error::untrusted(
            prefix,
            format!(
                "{who}, so others may change where this prefix leads: they could swap it for \
                 another directory of yours (your job would restart from that one's \
                 checkpoints, or SCR_PREFIX_PURGE would delete them) or lead it to a directory \
                 of theirs (which reads your data). Use a prefix on a path only you and root \
                 may change (sticky directories such as /tmp are fine: there only an entry's \
                 owner may rename it), or set SCR_PREFIX_SHARED=1 to use this one anyway"
            ),
        ))
    };
    let me = rustix::process::geteuid().as_raw();
    // the way to the prefix, then the prefix's own name: a link there is followed, its
    // target's way judged in turn
    match safe_fs::others_may_redirect_name(prefix, |uid| uid == me)? {
        Some(who) => refuse(who),
        None => Ok(()),
    }
}

/// Refuses a prefix others may create names in (sticky: one that is not is refused anyway,
/// by [`safe_fs::check_prefix_mode`]) unless `shared` (SCR_PREFIX_SHARED) says to use it:
/// everyone, its group (a project directory's; not its owner's private group), or a user
/// or group its access control list names (a project sharing the directory through
/// `setfacl`). They
/// can create the directories the job's datasets will be flushed to, or `.scr`, before the
/// job does. SCR refuses to write into them, so the checkpoints would stay in cache only
/// and the next allocation would start over; better said before any work.
pub fn check_not_shared(prefix: &Path, shared: bool) -> Result<()> {
    if shared {
        return Ok(());
    }
    let Some(who) = safe_fs::others_may_create_in(prefix)? else {
        return Ok(());
    };
    Err(Error::untrusted(
        prefix,
        format!(
            "{who}: others can create the directories your datasets are flushed to (their \
             names are predictable: ckpt.1, ckpt.2, …) or SCR's {} before you do; SCR writes \
             into none of them, so your checkpoints would reach no file system but the nodes' \
             caches. Make a directory of your own in it (mkdir -m 700 {}/<you>) and set \
             SCR_PREFIX to it, or set SCR_PREFIX_SHARED=1 to use this one anyway",
            layout::HIDDEN,
            prefix.display()
        ),
    ))
}

/// Marks `name`, a dataset's directory right below the prefix, as dataset `id`'s, when it
/// is a directory of this user's (a dataset named otherwise is not marked). Best effort: a
/// file system without extended attributes leaves it unmarked.
pub fn mark_dataset_dir(prefix: &Path, name: &str, id: u64) {
    let rel = Path::new(name);
    if rel.components().count() != 1 {
        return;
    }
    let Ok(Some(dir)) = safe_fs::Beneath::open(prefix).and_then(|b| b.open_dir(rel)) else {
        return;
    };
    let _ = rustix::fs::fsetxattr(
        &dir,
        DATASET_MARK,
        id.to_string().as_bytes(),
        XattrFlags::empty(),
    );
}

/// Refuses a prefix whose index is gone while directories of this user's that SCR marked
/// as datasets' are still in it: a job there would start over without them, silently.
pub fn check_index_not_lost(prefix: &Path) -> Result<()> {
    let index = layout::index_file(prefix);
    match rustix::fs::stat(&index) {
        Ok(_) => return Ok(()),
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {}
        Err(e) => return Err(Error::io(&index, "inspect", e.into())),
    }
    let marked = marked_dirs(prefix)?;
    if marked.is_empty() {
        return Ok(());
    }
    let mut said: Vec<&str> = marked.iter().take(NAMES_SAID).map(String::as_str).collect();
    if marked.len() > NAMES_SAID {
        said.push("…");
    }
    Err(Error::refused(format!(
        "the prefix {} holds {} dataset director{} SCR flushed ({}) but no index ({} is \
         gone: moved or removed, by you or by whoever owns the prefix); a job here would \
         start over without them. Put the {} directory that held it back, or move those \
         directories out of the prefix to start over",
        prefix.display(),
        marked.len(),
        if marked.len() == 1 { "y" } else { "ies" },
        said.join(", "),
        index.display(),
        layout::HIDDEN
    )))
}

/// The directories right below the prefix that are this user's and carry
/// [`DATASET_MARK`], by name, sorted.
fn marked_dirs(prefix: &Path) -> Result<Vec<String>> {
    let io_err = |action, e: rustix::io::Errno| Error::io(prefix, action, e.into());
    let root = rustix::fs::open(
        prefix,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_err("open directory", e))?;
    let me = rustix::process::geteuid().as_raw();
    let mut names = Vec::new();
    let dir = rustix::fs::Dir::read_from(&root).map_err(|e| io_err("list", e))?;
    for entry in dir {
        let entry = entry.map_err(|e| io_err("list", e))?;
        let name = entry.file_name();
        if name.to_bytes().starts_with(b".") {
            continue;
        }
        let Ok(st) = rustix::fs::statat(&root, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        if st.st_uid != me
            || rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory
        {
            continue;
        }
        let Ok(fd) = rustix::fs::openat(
            &root,
            name,
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            continue;
        };
        let mut value = [0u8; 32];
        if rustix::fs::fgetxattr(&fd, DATASET_MARK, &mut value).is_ok() {
            names.push(String::from_utf8_lossy(name.to_bytes()).into_owned());
        }
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_directory_without_an_index_is_refused_and_with_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir(p.join("ckpt.1")).unwrap();
        std::fs::create_dir(p.join("other")).unwrap();
        mark_dataset_dir(p, "ckpt.1", 1);
        mark_dataset_dir(p, "missing", 2);
        let mut value = [0u8; 32];
        if rustix::fs::getxattr(p.join("ckpt.1"), DATASET_MARK, &mut value).is_err() {
            // no extended attributes on this file system: nothing to judge by
            return;
        }
        let e = check_index_not_lost(p).unwrap_err().to_string();
        assert!(e.contains("ckpt.1") && !e.contains("other"), "{e}");
        safe_fs::create_dirs_in(p, &layout::prefix_hidden_dir(p), layout::HIDDEN_DIR_MODE).unwrap();
        std::fs::write(layout::index_file(p), b"").unwrap();
        check_index_not_lost(p).unwrap();
    }
}
