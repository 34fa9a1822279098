#![allow(clippy::needless_range_loop)] // index loops read best for matrices

use super::*;
use crate::dataset::Dataset;
use crate::meta::Meta;
use crate::xor::{self, MemberFiles, XorHeader};
use std::path::{Path, PathBuf};

#[test]
fn field_arithmetic() {
    for a in 1..=255u8 {
        assert_eq!(gf::mul(a, gf::inv(a)), 1);
        assert_eq!(gf::mul(a, 1), a);
        assert_eq!(gf::mul(a, 0), 0);
    }
    assert_eq!(gf::mul(2, 0x80), 0x1d, "reduction by 0x11d");
    let m = vec![vec![1, 2, 3], vec![4, 5, 6], vec![7, 8, 10]];
    let inv = gf::invert(m.clone()).unwrap();
    for i in 0..3 {
        for j in 0..3 {
            let x = (0..3).fold(0, |acc, t| acc ^ gf::mul(m[i][t], inv[t][j]));
            assert_eq!(x, u8::from(i == j));
        }
    }
    assert!(gf::invert(vec![vec![1, 1], vec![1, 1]]).is_none());
}

#[test]
fn vector_multiply_add_matches_the_field() {
    let src: Vec<u8> = (0..1000).map(|i| (i * 37 + 11) as u8).collect();
    for c in [2u8, 0x1d, 0x8e, 0xff] {
        for len in [0, 1, 31, 32, 33, 999] {
            let mut dst: Vec<u8> = (0..len).map(|i| (i * 5) as u8).collect();
            let expect: Vec<u8> = dst
                .iter()
                .zip(&src)
                .map(|(d, s)| d ^ gf::mul(c, *s))
                .collect();
            gf::mul_add(&mut dst, &src[..len], c);
            assert_eq!(dst, expect, "c={c} len={len}");
        }
    }
}

#[test]
fn every_member_contributes_each_chunk_once_and_holds_k_parities() {
    for code in [
        StripeCode::xor(5),
        StripeCode::reed_solomon(7, 3),
        StripeCode::reed_solomon(4, 2),
    ] {
        for m in 0..code.n {
            let mut chunks = Vec::new();
            let mut slots = Vec::new();
            for s in 0..code.n {
                match code.role(m, s) {
                    Role::Data { chunk, .. } => chunks.push(chunk),
                    Role::Parity { slot } => slots.push(slot),
                }
            }
            for slot in 0..code.k {
                let s = code.stripe_held(m, slot);
                assert_eq!(code.role(m, s), Role::Parity { slot }, "{code:?}");
            }
            chunks.sort();
            slots.sort();
            assert_eq!(chunks, (0..code.data_chunks()).collect::<Vec<_>>());
            assert_eq!(slots, (0..code.k).collect::<Vec<_>>());
        }
        for s in 0..code.n {
            let mut idx: Vec<usize> = (0..code.n)
                .filter_map(|m| match code.role(m, s) {
                    Role::Data { index, .. } => Some(index),
                    _ => None,
                })
                .collect();
            idx.sort();
            assert_eq!(idx, (0..code.data_chunks()).collect::<Vec<_>>());
        }
    }
}

/// Encodes random stripes and rebuilds every combination of up to k lost members.
#[test]
fn any_k_lost_members_are_rebuilt() {
    for code in [
        StripeCode::xor(4),
        StripeCode::reed_solomon(5, 2),
        StripeCode::reed_solomon(6, 3),
    ] {
        let d = code.data_chunks();
        for stripe in 0..code.n {
            let data: Vec<u8> = (0..d).map(|i| (i * 37 + stripe * 11 + 5) as u8).collect();
            let value = |m: usize| match code.role(m, stripe) {
                Role::Data { index, .. } => data[index],
                Role::Parity { slot } => (0..d).fold(0, |acc, i| {
                    acc ^ gf::mul(code.coefficient(slot, i), data[i])
                }),
            };
            for mask in 1u32..(1 << code.n) {
                let lost: Vec<usize> = (0..code.n).filter(|m| mask & (1 << m) != 0).collect();
                if lost.len() > code.k {
                    assert!(code.rebuild_weights(stripe, &lost).is_err());
                    continue;
                }
                for (l, from) in code.rebuild_weights(stripe, &lost).unwrap() {
                    let got = from
                        .iter()
                        .fold(0, |acc, &(m, w)| acc ^ gf::mul(w, value(m)));
                    assert_eq!(got, value(l), "{code:?} stripe {stripe} lost {lost:?}");
                }
            }
        }
    }
}

/// Writes a set (member m has files of sizes `sizes[m]`) under `root` as a drain leaves
/// it: user files by ORIG, parity files in `.scr/`, encoded with `code`.
fn write_set(code: StripeCode, root: &Path, sizes: &[Vec<usize>]) -> Vec<PathBuf> {
    let n = sizes.len();
    let dir = root.join(".scr");
    std::fs::create_dir_all(root.join("ckpt")).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let mut lists = Vec::new();
    let mut logical = Vec::new();
    for (m, files) in sizes.iter().enumerate() {
        let mut metas = Vec::new();
        let mut data = Vec::new();
        for (k, &size) in files.iter().enumerate() {
            let orig = format!("ckpt/rank_{m}.{k}");
            let bytes: Vec<u8> = (0..size).map(|i| (i * 7 + m * 13 + k) as u8).collect();
            std::fs::write(root.join(&orig), &bytes).unwrap();
            let mut meta =
                Meta::for_user_file(&format!("rank_{m}.{k}"), n as u64, &orig, "/p", "x");
            meta.set_size(size as u64);
            meta.set_crc32(crc32fast::hash(&bytes));
            meta.set_complete(true);
            metas.push(meta);
            data.extend(bytes);
        }
        lists.push(MemberFiles {
            rank: m as u64,
            files: metas,
        });
        logical.push(data);
    }
    let max = logical.iter().map(Vec::len).max().unwrap() as u64;
    let chunk = xor::chunk_size(max, code.data_chunks() as u64) as usize;
    for l in &mut logical {
        l.resize(code.data_chunks() * chunk, 0);
    }
    let template = XorHeader {
        chunk: chunk as u64,
        ranks: n as u64,
        group: (0..n as u64).collect(),
        dataset: Dataset::new(),
        current: lists[0].clone(),
        partner: lists[0].clone(),
        failures: None,
        far_partners: Vec::new(),
    };
    (0..n)
        .map(|p| {
            let mut parity = vec![0u8; code.k * chunk];
            for s in 0..n {
                let Role::Parity { slot } = code.role(p, s) else {
                    continue;
                };
                for m in 0..n {
                    if let Role::Data { chunk: c, index } = code.role(m, s) {
                        gf::mul_add(
                            &mut parity[slot * chunk..(slot + 1) * chunk],
                            &logical[m][c * chunk..(c + 1) * chunk],
                            code.coefficient(slot, index),
                        );
                    }
                }
            }
            // the header the encode writes last, which a rebuild writes again
            let mut bytes = parity_header_bytes(code, p, &lists, &template);
            bytes.extend(parity);
            let path = dir.join(code.file_name(0, p as u64));
            std::fs::write(&path, bytes).unwrap();
            path
        })
        .collect()
}

fn lose_and_rebuild(code: StripeCode, sizes: &[Vec<usize>], lost: &[usize]) {
    let dir = tempfile::tempdir().unwrap();
    let parity = write_set(code, dir.path(), sizes);
    let user = |m: usize, k: usize| dir.path().join(format!("ckpt/rank_{m}.{k}"));
    let mut before = Vec::new();
    for &l in lost {
        for k in 0..sizes[l].len() {
            before.push((user(l, k), std::fs::read(user(l, k)).unwrap()));
            std::fs::remove_file(user(l, k)).unwrap();
        }
        before.push((parity[l].clone(), std::fs::read(&parity[l]).unwrap()));
        std::fs::remove_file(&parity[l]).unwrap();
    }
    let given: Vec<Option<PathBuf>> = (0..code.n)
        .map(|m| (!lost.contains(&m)).then(|| parity[m].clone()))
        .collect();
    let missing: Vec<PathBuf> = lost.iter().map(|&l| parity[l].clone()).collect();
    let written = rebuild_serial(code, lost, &missing, &given, dir.path(), 333).unwrap();
    assert_eq!(written.len(), before.len());
    for (path, bytes) in before {
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "{code:?} lost {lost:?}: {}",
            path.display()
        );
    }
}

#[test]
fn serial_rebuild_restores_lost_members_byte_for_byte() {
    // differing counts and sizes, a member without files, an empty file
    let sizes = vec![
        vec![1000, 0],
        vec![],
        vec![2500],
        vec![10, 20, 30],
        vec![700],
    ];
    for l in 0..5 {
        lose_and_rebuild(StripeCode::xor(5), &sizes, &[l]);
    }
    for lost in [[0, 1], [1, 3], [2, 4], [0, 4]] {
        lose_and_rebuild(StripeCode::reed_solomon(5, 2), &sizes, &lost);
    }
    lose_and_rebuild(StripeCode::reed_solomon(5, 2), &sizes, &[3]);
}

#[test]
fn a_chunk_the_members_and_the_file_length_do_not_back_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let code = StripeCode::xor(3);
    let parity = write_set(code, dir.path(), &[vec![300], vec![200], vec![100]]);
    std::fs::remove_file(dir.path().join("ckpt/rank_0.0")).unwrap();
    let lost = parity[0].clone();
    std::fs::remove_file(&lost).unwrap();
    let given = vec![None, Some(parity[1].clone()), Some(parity[2].clone())];
    let refused = || {
        rebuild_serial(
            code,
            &[0],
            std::slice::from_ref(&lost),
            &given,
            dir.path(),
            64,
        )
        .unwrap_err()
        .to_string()
    };
    // a header claiming a huge CHUNK, the file grown to match: refused, nothing written
    for p in &parity[1..] {
        let (mut header, offset) = XorHeader::read(p).unwrap();
        header.chunk = 1 << 40;
        let mut bytes = header.to_hash().to_file_bytes();
        bytes.extend(&std::fs::read(p).unwrap()[offset as usize..]);
        std::fs::write(p, &bytes).unwrap();
    }
    let e = refused();
    assert!(
        e.contains("CHUNK 1099511627776") && e.contains("make it"),
        "{e}"
    );
    // the right CHUNK but a parity file longer than its header and chunk
    let parity2 = write_set(code, dir.path(), &[vec![300], vec![200], vec![100]]);
    std::fs::remove_file(dir.path().join("ckpt/rank_0.0")).unwrap();
    std::fs::remove_file(&parity2[0]).unwrap();
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(&parity2[1])
        .unwrap();
    f.set_len(std::fs::metadata(&parity2[1]).unwrap().len() + 4096)
        .unwrap();
    let e = refused();
    assert!(e.contains("header and 1 chunk(s)"), "{e}");
    assert!(!lost.exists() && !dir.path().join("ckpt/rank_0.0").exists());
}

#[test]
fn serial_rebuild_refuses_bad_input_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let code = StripeCode::xor(3);
    let parity = write_set(code, dir.path(), &[vec![300], vec![200], vec![100]]);
    let given = |skip: usize| -> Vec<Option<PathBuf>> {
        (0..3)
            .map(|m| (m != skip).then(|| parity[m].clone()))
            .collect()
    };
    // a member that is not lost: its files exist and are never written into
    let err = rebuild_serial(code, &[0], &[parity[0].clone()], &given(0), dir.path(), 64)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("already exists") && err.contains("never replaces"),
        "{err}"
    );
    // a damaged survivor: the rebuilt file fails its owner's CRC, and nothing is written
    let lost0 = [dir.path().join("ckpt/rank_0.0"), parity[0].clone()];
    let kept: Vec<Vec<u8>> = lost0.iter().map(|p| std::fs::read(p).unwrap()).collect();
    for p in &lost0 {
        std::fs::remove_file(p).unwrap();
    }
    let listing = |d: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let before = [
        listing(&dir.path().join("ckpt")),
        listing(&dir.path().join(".scr")),
    ];
    let victim = dir.path().join("ckpt/rank_1.0");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[160] ^= 0xff; // in the chunk that rebuilds part of member 0
    std::fs::write(&victim, &bytes).unwrap();
    let err = rebuild_serial(code, &[0], &[parity[0].clone()], &given(0), dir.path(), 64)
        .unwrap_err()
        .to_string();
    assert!(err.contains("an input file is damaged"), "{err}");
    let after = [
        listing(&dir.path().join("ckpt")),
        listing(&dir.path().join(".scr")),
    ];
    assert_eq!(
        before, after,
        "no file or temporary left by the refused rebuild"
    );
    bytes[160] ^= 0xff;
    std::fs::write(&victim, &bytes).unwrap();
    for (p, b) in lost0.iter().zip(kept) {
        std::fs::write(p, b).unwrap();
    }
    // a path escaping the root is refused
    let (mut header, offset) = XorHeader::read(&parity[2]).unwrap();
    let mut evil = Meta::for_user_file("passwd", 3, "../../etc/passwd", "/p", "x");
    evil.set_size(200);
    header.partner.files[0] = evil;
    let mut bytes = header.to_hash().to_file_bytes();
    bytes.extend(&std::fs::read(&parity[2]).unwrap()[offset as usize..]);
    std::fs::write(&parity[2], bytes).unwrap();
    let err = rebuild_serial(code, &[1], &[parity[1].clone()], &given(1), dir.path(), 64)
        .unwrap_err()
        .to_string();
    assert!(err.contains(".."), "{err}");
    // XOR files are not RS files
    let err = rebuild_serial(
        StripeCode::reed_solomon(3, 2),
        &[1],
        &[parity[1].clone()],
        &given(1),
        dir.path(),
        64,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not a Reed–Solomon file"), "{err}");
}

#[test]
fn sum_mul_add_is_the_field_sum_and_zero_past_a_short_source() {
    let sum: Vec<u8> = (0..100u32).map(|i| (i * 37 + 5) as u8).collect();
    let src: Vec<u8> = (0..90u32).map(|i| (i * 11 + 3) as u8).collect();
    for c in [0u8, 1, 2, 0x8e] {
        let mut expect = sum.clone();
        for (e, s) in expect.iter_mut().zip(&src) {
            *e ^= gf::mul(c, *s);
        }
        let mut out = vec![0xaa; 100];
        gf::sum_mul_add(&mut out, &sum, &src, c);
        assert_eq!(out, expect, "coefficient {c}");
    }
}

#[test]
fn scaled_is_the_field_product_and_zero_past_a_short_source() {
    let src: Vec<u8> = (0..90u32).map(|i| (i * 11 + 3) as u8).collect();
    for c in [0u8, 1, 2, 0x8e] {
        let mut expect = vec![0u8; 100];
        for (e, s) in expect.iter_mut().zip(&src) {
            *e = gf::mul(c, *s);
        }
        let mut out = vec![0xaa; 100];
        gf::scaled(&mut out, &src, c);
        assert_eq!(out, expect, "coefficient {c}");
    }
}
