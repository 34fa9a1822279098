//! Who besides its owner may write a file or directory, read on its open handle: the
//! permission bits, and the POSIX access control list (ACL) when it has one. On a file with
//! an ACL the group bits of its mode are the ACL's mask, not its group's permissions, and
//! the users and groups the ACL names appear nowhere in the mode: a project directory with
//! a default ACL (`setfacl -d -m g:proj:rwx`) gives every file created in it an entry the
//! mode does not show.

use rustix::fd::AsFd;

/// The extended attribute the kernel keeps a file's access ACL in.
const ACCESS_ACL: &str = "system.posix_acl_access";
/// The version of the ACL attribute's layout (`POSIX_ACL_XATTR_VERSION`).
const VERSION: u32 = 2;
/// The most bytes of an ACL read: far more than any file system stores (ext4 keeps an
/// ACL within a block); a longer one is not judged, and so not trusted.
const MOST_BYTES: usize = 64 * 1024;

// entry tags (`ACL_USER_OBJ`…)
pub(super) const USER_OBJ: u16 = 0x01;
pub(super) const USER: u16 = 0x02;
pub(super) const GROUP_OBJ: u16 = 0x04;
pub(super) const GROUP: u16 = 0x08;
pub(super) const MASK: u16 = 0x10;
pub(super) const OTHER: u16 = 0x20;
/// The write permission of an entry.
const WRITE: u16 = 0x2;

/// Who other than the owner may write a file, as its mode and its ACL say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Writers {
    /// Everyone (the mode's, or the ACL's `other` entry).
    pub everyone: bool,
    /// The file's own group (its `group::` entry through the mask, or the mode's group
    /// bits when there is no ACL).
    pub owning_group: bool,
    /// Users the ACL names with write permission through the mask.
    pub users: Vec<u32>,
    /// Groups the ACL names with write permission through the mask.
    pub groups: Vec<u32>,
}

/// Who other than the owner may write the file open as `fd`, whose mode is `mode`; an
/// error saying why when its ACL cannot be read or understood (then it is not trusted).
pub(super) fn writers(fd: impl AsFd, mode: u32) -> Result<Writers, String> {
    let from_mode = Writers {
        everyone: mode & 0o002 != 0,
        owning_group: mode & 0o020 != 0,
        ..Writers::default()
    };
    match read(fd.as_fd()) {
        Ok(None) => Ok(from_mode),
        Ok(Some(bytes)) => {
            let mut acl = parse(&bytes)?;
            // the mode's other bits are the ACL's other entry; either is enough
            acl.everyone |= from_mode.everyone;
            Ok(acl)
        }
        Err(e) => Err(format!(
            "has an access control list SCR could not read ({e})"
        )),
    }
}

/// The ACL attribute of `fd`; None when it has none (or its file system keeps none: the
/// mode says everything then).
fn read(fd: rustix::fd::BorrowedFd<'_>) -> std::io::Result<Option<Vec<u8>>> {
    use rustix::io::Errno;
    let mut buf = vec![0u8; 4096];
    loop {
        match rustix::fs::fgetxattr(fd, ACCESS_ACL, &mut buf[..]) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(Some(buf));
            }
            Err(Errno::NODATA | Errno::NOTSUP) => return Ok(None),
            Err(Errno::RANGE) if buf.len() < MOST_BYTES => {
                let len = rustix::fs::fgetxattr_query(fd, ACCESS_ACL)?;
                if len > MOST_BYTES {
                    return Err(std::io::Error::other(format!(
                        "{len} bytes, more than SCR reads"
                    )));
                }
                buf.resize(len.max(buf.len() * 2).min(MOST_BYTES), 0);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Decodes an ACL attribute (a little-endian header holding the version, then entries of
/// tag u16, permissions u16, id u32) into who it lets write: the named users' and groups'
/// and the owning group's permissions count through the mask.
fn parse(bytes: &[u8]) -> Result<Writers, String> {
    let bad = |why: &str| format!("has an access control list that does not decode ({why})");
    let (header, entries) = bytes
        .split_first_chunk::<4>()
        .ok_or_else(|| bad("no header"))?;
    if u32::from_le_bytes(*header) != VERSION {
        return Err(bad("an unknown version"));
    }
    if entries.len() % 8 != 0 {
        return Err(bad("a partial entry"));
    }
    let entries: Vec<(u16, u16, u32)> = entries
        .chunks_exact(8)
        .map(|e| {
            (
                u16::from_le_bytes([e[0], e[1]]),
                u16::from_le_bytes([e[2], e[3]]),
                u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
            )
        })
        .collect();
    // without a mask (an ACL of the three base entries), nothing is masked
    let mask = entries
        .iter()
        .find(|(tag, _, _)| *tag == MASK)
        .map_or(0o7, |&(_, perm, _)| perm);
    let mut writers = Writers::default();
    for (tag, perm, id) in entries {
        let masked = perm & mask & WRITE != 0;
        match tag {
            USER_OBJ | MASK => {}
            USER if masked => writers.users.push(id),
            GROUP_OBJ if masked => writers.owning_group = true,
            GROUP if masked => writers.groups.push(id),
            OTHER => writers.everyone |= perm & WRITE != 0,
            USER | GROUP_OBJ | GROUP => {}
            _ => return Err(bad(&format!("an unknown entry tag {tag:#x}"))),
        }
    }
    Ok(writers)
}

/// Gives the open `file` the access ACL of `entries` (tag, permissions, id), as `setfacl`
/// would.
#[cfg(test)]
pub(super) fn set(file: &std::fs::File, entries: &[(u16, u16, u32)]) -> std::io::Result<()> {
    rustix::fs::fsetxattr(
        file,
        ACCESS_ACL,
        &tests::acl(entries),
        rustix::fs::XattrFlags::empty(),
    )
    .map_err(Into::into)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in super::super) fn acl(entries: &[(u16, u16, u32)]) -> Vec<u8> {
        let mut bytes = VERSION.to_le_bytes().to_vec();
        for (tag, perm, id) in entries {
            bytes.extend(tag.to_le_bytes());
            bytes.extend(perm.to_le_bytes());
            bytes.extend(id.to_le_bytes());
        }
        bytes
    }

    /// The id of an entry that names nobody (the owner's, the group's, the mask, other).
    pub(in super::super) const ANY: u32 = u32::MAX;

    #[test]
    fn named_entries_and_the_group_write_through_the_mask_only() {
        // user::rw- user:1000:rwx group::rw- group:50:rwx mask::rw- other::r--
        let w = parse(&acl(&[
            (USER_OBJ, 6, ANY),
            (USER, 7, 1000),
            (GROUP_OBJ, 6, ANY),
            (GROUP, 7, 50),
            (MASK, 6, ANY),
            (OTHER, 4, ANY),
        ]))
        .unwrap();
        assert_eq!(
            w,
            Writers {
                everyone: false,
                owning_group: true,
                users: vec![1000],
                groups: vec![50],
            }
        );
        // mask::r--: nobody but the owner writes, whatever the entries say
        let w = parse(&acl(&[
            (USER_OBJ, 6, ANY),
            (USER, 7, 1000),
            (GROUP_OBJ, 7, ANY),
            (GROUP, 7, 50),
            (MASK, 4, ANY),
            (OTHER, 0, ANY),
        ]))
        .unwrap();
        assert_eq!(w, Writers::default());
        // other::-w- is everyone's, mask or not
        let w = parse(&acl(&[(USER_OBJ, 6, ANY), (MASK, 0, ANY), (OTHER, 2, ANY)])).unwrap();
        assert!(w.everyone);
    }

    #[test]
    fn an_acl_that_does_not_decode_is_an_error() {
        assert!(parse(&[]).is_err());
        assert!(parse(&3u32.to_le_bytes()).is_err());
        let mut partial = acl(&[(USER_OBJ, 6, ANY)]);
        partial.pop();
        assert!(parse(&partial).is_err());
        assert!(parse(&acl(&[(0x40, 6, ANY)])).is_err());
    }

    #[test]
    fn an_acl_set_on_a_file_is_read_from_its_handle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        let file = std::fs::File::open(&path).unwrap();
        assert_eq!(writers(&file, 0o644).unwrap(), Writers::default());
        let entries = [
            (USER_OBJ, 6, ANY),
            (GROUP_OBJ, 4, ANY),
            (GROUP, 6, 4242),
            (MASK, 6, ANY),
            (OTHER, 4, ANY),
        ];
        set(&file, &entries).expect("the tests' file system keeps ACLs");
        let mode = std::os::unix::fs::MetadataExt::mode(&file.metadata().unwrap());
        assert_eq!(mode & 0o070, 0o060, "the mask is the mode's group bits");
        assert_eq!(writers(&file, mode).unwrap().groups, [4242]);
    }
}
