//! Parity headers through the serial rebuild (the drain's `scr index --build`, `scr
//! rebuild-xor`): any bytes as two survivors' parity files of a set of three, whose files
//! are laid out as their headers name them, rebuild or give a typed error — never a panic,
//! never more memory or time than the input's size explains (run with -rss_limit_mb and
//! -timeout; counts and sizes in headers are checked against what is present), and never a
//! file outside the work directory.
#![no_main]
use libfuzzer_sys::fuzz_target;
use scr::erasure::{StripeCode, rebuild_serial};
use scr::xor::XorHeader;
use std::path::{Path, PathBuf};

/// Lays out the user files a survivor's header names (zeros, at most 64 KiB each), so the
/// rebuild gets past opening them.
fn place_files(root: &Path, parity: &Path) {
    let Ok((h, _)) = XorHeader::read(parity) else {
        return;
    };
    for m in &h.current.files {
        let (Some(orig), Some(size)) = (m.orig(), m.size()) else {
            continue;
        };
        if scr::rank2file::check_relative(orig).is_err() || size > 64 << 10 {
            continue;
        }
        let path = root.join(orig);
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(&path, vec![0u8; size as usize]);
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let split = (u16::from_le_bytes([data[0], data[1]]) as usize).min(data.len() - 2);
    let (first, second) = data[2..].split_at(split);
    let work = std::env::temp_dir().join(format!("scr-fuzz-parity.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let root = work.join("prefix");
    let dir = root.join(".scr/scr.dataset.1");
    std::fs::create_dir_all(&dir).unwrap();
    let parity: Vec<PathBuf> = (1..=3).map(|i| dir.join(format!("xor.0_{i}_of_3.scr"))).collect();
    std::fs::write(&parity[1], first).unwrap();
    std::fs::write(&parity[2], second).unwrap();
    place_files(&root, &parity[1]);
    place_files(&root, &parity[2]);
    let given = [None, Some(parity[1].clone()), Some(parity[2].clone())];
    if let Ok(written) = rebuild_serial(StripeCode::xor(3), &[0], &[parity[0].clone()], &given, &root, 4096) {
        for w in written {
            assert!(w.starts_with(&root), "{} written outside the prefix", w.display());
        }
    }
    let _ = std::fs::remove_dir_all(&work);
});
