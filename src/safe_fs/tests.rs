use super::*;
use std::os::unix::fs::PermissionsExt;

#[test]
fn directories_of_others_links_and_open_modes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    create_dirs_in(base, &base.join("a/b"), 0o700).unwrap();
    assert!(base.join("a/b").is_dir());
    create_dirs_in(base, &base.join("a/b"), 0o700).unwrap();
    std::os::unix::fs::symlink(base.join("a"), base.join("l")).unwrap();
    let e = create_dirs_in(base, &base.join("l/b"), 0o700)
        .unwrap_err()
        .to_string();
    assert!(e.contains("symbolic link"), "{e}");
    fs::create_dir(base.join("open")).unwrap();
    fs::set_permissions(base.join("open"), fs::Permissions::from_mode(0o777)).unwrap();
    let e = create_dirs_in(base, &base.join("open/x"), 0o700)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("writable by everyone") && e.contains("chmod o-w"),
        "{e}"
    );
    assert!(create_dirs_in(base, &base.join("../x"), 0o700).is_err());
}

#[test]
fn a_file_of_another_size_than_recorded_is_refused_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("ckpt.1")).unwrap();
    fs::write(dir.path().join("ckpt.1/a"), b"12345").unwrap();
    let prefix = Beneath::open(dir.path()).unwrap();
    let rel = Path::new("ckpt.1/a");
    assert!(prefix.open_file_of_size(rel, 5).is_ok());
    let e = prefix.open_file_of_size(rel, 6).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("5 bytes, not the 6"), "{e}");
    let gone = prefix
        .open_file_of_size(Path::new("ckpt.1/b"), 5)
        .unwrap_err();
    assert_eq!(gone.kind(), crate::ErrorKind::Io, "{gone}");
}

#[test]
fn configuration_with_another_name_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("scr.conf");
    fs::write(&conf, b"SCR_FLUSH=1\n").unwrap();
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o644)).unwrap();
    assert!(read_trusted_file(&conf, 1024).is_ok());
    fs::hard_link(&conf, dir.path().join("elsewhere")).unwrap();
    let e = read_trusted_file(&conf, 1024).unwrap_err().to_string();
    assert!(e.contains("scr.conf") && e.contains("2 names"), "{e}");
    // nor is the user told to make a file anyone may write trusted as it is
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o666)).unwrap();
    let e = read_trusted_file(&conf, 1024).unwrap_err().to_string();
    assert!(e.contains("2 names") && !e.contains("chmod"), "{e}");
}

#[test]
fn a_missing_directory_is_created_owner_only_and_nothing_through_a_link() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    let dir = base.join("run=1/output");
    assert!(create_missing_dir(&dir, 0o700).unwrap());
    for made in [&dir, &base.join("run=1")] {
        let mode = fs::metadata(made).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", made.display());
    }
    // what exists is left as it is
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o750)).unwrap();
    assert!(!create_missing_dir(&dir, 0o700).unwrap());
    assert_eq!(
        fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o750
    );
    // a dangling link in the directory's place is not created through
    let elsewhere = base.join("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, base.join("link")).unwrap();
    assert!(!create_missing_dir(&base.join("link"), 0o700).unwrap());
    assert!(create_missing_dir(&base.join("link/below"), 0o700).is_err());
    assert!(!elsewhere.exists());
}

#[test]
fn leftover_temporaries_are_swept_only_below_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("prefix");
    fs::create_dir_all(root.join("ckpt.1")).unwrap();
    fs::write(root.join("ckpt.1/.rank_0.ckpt.tmp.1234.7"), b"half").unwrap();
    fs::write(root.join("ckpt.1/rank_0.ckpt"), b"whole").unwrap();
    // a link a neighbour planted to a directory holding temporary-looking names
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::write(elsewhere.join(".notes.new.1.2"), b"mine").unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join("ckpt.2")).unwrap();
    let beneath = Beneath::open(&root).unwrap();
    beneath.remove_temporaries(Path::new("ckpt.1"));
    beneath.remove_temporaries(Path::new("ckpt.2"));
    let left: Vec<_> = fs::read_dir(root.join("ckpt.1"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["rank_0.ckpt"]);
    assert!(elsewhere.join(".notes.new.1.2").exists());
}

#[test]
fn a_tree_is_removed_through_handles_and_nothing_a_link_leads_to() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("prefix");
    fs::create_dir_all(root.join(".scr/scr.dataset.3/drained/sub")).unwrap();
    fs::write(root.join(".scr/scr.dataset.3/drained/sub/f"), b"x").unwrap();
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir_all(elsewhere.join("scr.dataset.4")).unwrap();
    fs::write(elsewhere.join("scr.dataset.4/keep"), b"mine").unwrap();
    // a link inside the tree, and a link in the place of a tree
    std::os::unix::fs::symlink(&elsewhere, root.join(".scr/scr.dataset.3/link")).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.join("scr.dataset.4"),
        root.join(".scr/scr.dataset.4"),
    )
    .unwrap();
    let beneath = Beneath::open(&root).unwrap();
    assert!(
        beneath
            .remove_tree(Path::new(".scr/scr.dataset.3"))
            .unwrap()
    );
    assert!(
        beneath
            .remove_tree(Path::new(".scr/scr.dataset.4"))
            .unwrap()
    );
    assert!(
        !beneath
            .remove_tree(Path::new(".scr/scr.dataset.5"))
            .unwrap()
    );
    assert_eq!(fs::read_dir(root.join(".scr")).unwrap().count(), 0);
    assert!(elsewhere.join("scr.dataset.4/keep").exists());
}

#[test]
fn who_an_acl_lets_write_is_judged_on_the_handle() {
    use acl::tests::ANY;
    use acl::{GROUP, GROUP_OBJ, MASK, OTHER, USER, USER_OBJ};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    fs::write(&path, b"x").unwrap();
    let file = File::open(&path).unwrap();
    let judge = |entries: &[(u16, u16, u32)]| {
        acl::set(&file, entries).expect("the tests' file system keeps ACLs");
        let meta = file.metadata().unwrap();
        writable_by_others(&file, meta.mode(), meta.gid())
    };
    // (the kernel takes the entries in the order of their tags)
    let base = |named: (u16, u16, u32), mask: u16| {
        let mut entries = [
            (USER_OBJ, 6, ANY),
            named,
            (GROUP_OBJ, 4, ANY),
            (MASK, mask, ANY),
            (OTHER, 4, ANY),
        ];
        entries.sort_by_key(|&(tag, _, _)| tag);
        entries
    };
    // (the tests run as root, whose group is its own alone)
    let e = judge(&base((GROUP, 6, 4242), 6)).unwrap();
    assert!(
        e.contains("group id 4242") && e.contains("setfacl -x g:4242"),
        "{e}"
    );
    let e = judge(&base((USER, 7, 4242), 7)).unwrap();
    assert!(
        e.contains("user id 4242") && e.contains("setfacl -x u:4242"),
        "{e}"
    );
    // the mask withholds write; entries for the user's own group, or for the user
    assert_eq!(judge(&base((GROUP, 6, 4242), 4)), None);
    assert_eq!(judge(&base((GROUP, 6, 0), 6)), None);
    assert_eq!(judge(&base((USER, 6, my_uid()), 6)), None);
    // a directory is judged alike
    let sub = dir.path().join("d");
    fs::create_dir(&sub).unwrap();
    assert!(is_own_dir(&sub));
    let status = std::process::Command::new("setfacl")
        .args(["-m", "g:4242:rwx"])
        .arg(&sub)
        .status();
    if status.is_ok_and(|s| s.success()) {
        assert!(!is_own_dir(&sub));
        let e = check_owned_dir(&sub).unwrap_err().to_string();
        assert!(e.contains("group id 4242"), "{e}");
    }
}

#[test]
fn a_group_is_shared_when_another_account_has_it_as_its_own() {
    // nobody's account has the group nogroup (65534) as its own; no account but root
    // has root's group
    assert!(another_account_has_group(65534, b"root"));
    assert!(!another_account_has_group(0, b"root"));
}
