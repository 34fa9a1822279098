//! Hash codec benchmark: pack+unpack and write+read of a filemap and of a summary (with its
//! rank-to-file map) for 100,000 ranks, against plain file I/O of the same bytes.
//!
//! Run: `cargo bench --bench hash_codec` (files go to /dev/shm when it exists).

use scr::HashView;
use scr::dataset::{Dataset, Origin};
use scr::filemap::Filemap;
use scr::hash::Hash;
use scr::meta::{FileType, Meta};
use scr::rank2file::{self, FileRecord, RankFiles};
use std::path::{Path, PathBuf};
use std::time::Instant;

const RANKS: u64 = 100_000;

fn filemap() -> Hash {
    let mut m = Filemap::new();
    let dset = Dataset::create(
        7,
        "ckpt.7",
        true,
        false,
        &Origin {
            user: Some("user1".into()),
            created_us: 1,
            ..Default::default()
        },
        Some(7),
    );
    for r in 0..RANKS {
        let path = format!("/dev/shm/user1/scr.1145655/scr.dataset.7/rank_{r}.ckpt");
        m.add_file(7, r, &path);
        let mut meta = Meta::for_user_file(
            &format!("rank_{r}.ckpt"),
            RANKS,
            &format!("ckpt.7/rank_{r}.ckpt"),
            "/p/prefix/ckpt.7",
            &format!("rank_{r}.ckpt"),
        );
        meta.set_filetype(FileType::User);
        meta.set_size(524294 + r);
        meta.set_crc32(r as u32 * 2654435761);
        meta.set_complete(true);
        m.set_meta(7, r, &path, &meta);
        m.set_expected_files(7, r, 1);
        m.set_dataset(7, r, &dset);
    }
    m.into_hash()
}

fn summary() -> Hash {
    let files: RankFiles = (0..RANKS)
        .map(|r| {
            (
                r,
                vec![FileRecord {
                    name: format!("ckpt.7/rank_{r}.ckpt"),
                    size: 524294 + r,
                    crc: Some(r as u32),
                    segments: vec![],
                }],
            )
        })
        .collect();
    let mut h = Hash::new();
    h.set_value("VERSION", 6);
    h.set_value("COMPLETE", 1);
    h.set(rank2file::EMBEDDED, rank2file::leaf_hash(&files));
    h
}

/// Median seconds of `reps` runs of `f`.
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[reps / 2]
}

fn bench(name: &str, hash: &Hash, dir: &Path) {
    let reps = 7;
    let bytes = hash.to_file_bytes();
    let mb = bytes.len() as f64 / 1e6;
    let packed = hash.pack();
    let codec = time(reps, || {
        let p = hash.pack();
        std::hint::black_box(Hash::unpack(&p).unwrap());
    });
    let unpack_only = time(reps, || {
        std::hint::black_box(Hash::unpack(&packed).unwrap());
    });
    // where the codec's time goes: the tree walk that packs, the decode that builds the
    // tree, freeing it, and the CRC pass (done once on write and once on read)
    let pack_only = time(reps, || {
        std::hint::black_box(hash.pack());
    });
    let mut decoded = Vec::new();
    let build_only = time(reps, || decoded.push(Hash::unpack(&packed).unwrap()));
    let drop_only = time(reps, || drop(decoded.pop()));
    let crc_only = time(reps, || {
        std::hint::black_box(crc32fast::hash(&packed));
    });
    let path = dir.join(format!("{name}.scr"));
    let ours = time(reps, || {
        scr::io::write_hash_file(&path, hash).unwrap();
        std::hint::black_box(scr::io::read_hash_file(&path).unwrap());
    });
    let raw_path = dir.join(format!("{name}.raw"));
    let raw = time(reps, || {
        std::fs::write(&raw_path, &bytes).unwrap();
        std::hint::black_box(std::fs::read(&raw_path).unwrap());
    });
    let raw_sync = time(reps, || {
        use std::io::Write;
        let mut f = std::fs::File::create(&raw_path).unwrap();
        f.write_all(&bytes).unwrap();
        f.sync_all().unwrap();
        std::hint::black_box(std::fs::read(&raw_path).unwrap());
    });
    println!(
        "{name:<9} {mb:>7.1} MB | pack+unpack {:>7.0} MB/s (unpack {:>6.0} MB/s) | write+read {:>6.0} MB/s | fs::write+read {:>6.0} MB/s -> ratio {:.2} | with fsync {:>6.0} MB/s -> ratio {:.2}",
        mb / codec,
        mb / unpack_only,
        mb / ours,
        mb / raw,
        raw / ours,
        mb / raw_sync,
        raw_sync / ours,
    );
    println!(
        "{:<9} {:>10} | ours {:.1} ms; each pass alone: pack {:.1}, build the tree {:.1}, free it {:.1}, crc {:.1} (twice); raw I/O {:.1} ms",
        "",
        "",
        ours * 1e3,
        pack_only * 1e3,
        build_only * 1e3,
        drop_only * 1e3,
        crc_only * 1e3,
        raw * 1e3,
    );
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // `cargo test --benches` smoke mode: nothing to run
    }
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = tempfile::Builder::new()
        .prefix("scr-bench-")
        .tempdir_in(base)
        .unwrap();
    println!(
        "hash codec benchmark, {RANKS} ranks, files in {} (median of 7)",
        dir.path().display()
    );
    println!("ratio = time of plain std::fs I/O of the same bytes / time of ours (1.0 = as fast)");
    bench("filemap", &filemap(), dir.path());
    bench("summary", &summary(), dir.path());
}
