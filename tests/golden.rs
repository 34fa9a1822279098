//! Files written by real SCR v2.0.0 (copied from the project's shared reference into
//! tests/golden) must parse, validate as their kind, and round-trip byte for byte.

use scr::HashView;
use scr::io::read_hash_file_with_size;
use std::path::{Path, PathBuf};

fn golden_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_none_or(|x| x != "txt") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden"),
        &mut out,
    );
    out.sort();
    assert!(out.len() >= 14, "golden files missing: {out:?}");
    out
}

#[test]
fn golden_files_round_trip_byte_for_byte() {
    for path in golden_files() {
        let bytes = std::fs::read(&path).unwrap();
        let (hash, size) = read_hash_file_with_size(&path, scr::io::MAX_HASH_FILE_BYTES)
            .unwrap_or_else(|e| panic!("{e}"));
        let written = hash.to_file_bytes();
        assert_eq!(
            written,
            bytes[..size as usize],
            "{} does not round-trip",
            path.display()
        );
        let txt = std::fs::read_to_string(path.with_extension(format!(
            "{}txt",
            path.extension().map(|e| format!("{}.", e.to_string_lossy())).unwrap_or_default()
        )))
        .unwrap();
        assert_eq!(
            hash.to_string(),
            txt,
            "{} prints differently",
            path.display()
        );
    }
}

#[test]
fn golden_files_validate_as_their_kind() {
    let g = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let idx = scr::index::IndexFile::read(&g.join("xor/prefix/.scr/index.scr")).unwrap();
    assert_eq!(idx.current(), Some("ckpt.3"));
    let names: Vec<_> = idx
        .restart_candidates(None)
        .into_iter()
        .map(|e| (e.id, e.name))
        .collect();
    assert_eq!(
        names,
        [
            (3, "ckpt.3".to_string()),
            (2, "ckpt.2".into()),
            (1, "ckpt.1".into())
        ]
    );
    assert_eq!(idx.dataset(3, "ckpt.3").unwrap().size(), Some(262178));

    let flush = scr::flush::FlushFile::read(&g.join("xor/prefix/.scr/flush.scr")).unwrap();
    assert_eq!(flush.latest(), Some(3));
    assert!(!flush.needs_flush(3));
    assert_eq!(flush.name(3), Some("ckpt.3"));

    let halt = scr::halt::HaltFile::read(&g.join("misc/halt_with_conditions.scr")).unwrap();
    assert_eq!(halt.decision(0, None).unwrap().reason(), "TESTREASON");
    assert_eq!(
        (halt.checkpoints_left(), halt.halt_seconds()),
        (Some(5), Some(300))
    );

    let nodes = scr::nodes::NodesFile::read(&g.join("xor/prefix/.scr/nodes.scr")).unwrap();
    assert_eq!(nodes.nodes(), Some(4));

    let summary =
        scr::summary::Summary::read(&g.join("xor/prefix/.scr/scr.dataset.3/summary.scr")).unwrap();
    assert!(summary.is_complete());
    assert_eq!(summary.dataset().unwrap().name(), Some("ckpt.3"));

    let prefix = g.join("xor/prefix");
    let map = scr::rank2file::read_tree(&prefix, &prefix.join(".scr/scr.dataset.3/rank2file.scr"))
        .unwrap();
    assert_eq!(map.len(), 4);
    assert_eq!(map[&1][0].name, "ckpt.3/rank_1.ckpt");
    assert_eq!((map[&1][0].size, map[&1][0].crc), (65544, Some(0xd7e4332c)));

    let fm =
        scr::filemap::Filemap::read(&g.join("xor/cntl/root/scr.gXOR/filemap_0.scrinfo")).unwrap();
    assert_eq!(fm.ranks(), [0, 3]);
    assert_eq!(fm.expected_files(3, 0), Some(2));
    assert!(fm.has_all_files(3, 0));
    let meta = fm
        .meta(
            3,
            0,
            "/p/lscratchb/user1/gXOR/nodes/node0/root/scr.gXOR/scr.dataset.3/rank_0.ckpt",
        )
        .unwrap();
    assert_eq!(
        (meta.size(), meta.orig()),
        (Some(65543), Some("ckpt.3/rank_0.ckpt"))
    );
    assert_eq!(fm.reddesc(3, 3).unwrap().position().unwrap().group_rank, 3);

    let master =
        scr::filemap::MasterFilemap::read(&g.join("xor/cntl/root/scr.gXOR/filemap.scrinfo"))
            .unwrap();
    assert_eq!(
        master.filemaps(),
        ["/tmp/user1/cntl/root/scr.gXOR/filemap_0.scrinfo"]
    );
}
