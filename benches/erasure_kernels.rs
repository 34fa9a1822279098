//! Throughput of the redundancy kernels against memory bandwidth measured in the same run:
//! XOR of one buffer into another (XOR scheme), GF(2^8) multiply-add (Reed–Solomon), and
//! plain `copy_from_slice` of the same bytes (the reference).
//!
//! Run: `cargo bench --bench erasure_kernels`

use scr::erasure::gf;
use scr::xor::xor_into;
use std::hint::black_box;
use std::time::Instant;

const BYTES: usize = 64 << 20;
const REPS: usize = 5;

/// Median GB/s of `f` over REPS runs on BYTES bytes.
fn rate(mut f: impl FnMut()) -> f64 {
    let mut secs: Vec<f64> = (0..REPS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    BYTES as f64 / secs[REPS / 2] / 1e9
}

fn main() {
    let src: Vec<u8> = (0..BYTES).map(|i| (i * 31 + 7) as u8).collect();
    let mut dst = vec![0u8; BYTES];
    let copy = rate(|| {
        dst.copy_from_slice(black_box(&src));
        black_box(&dst);
    });
    let xor = rate(|| {
        xor_into(&mut dst, black_box(&src));
        black_box(&dst);
    });
    let mul = rate(|| {
        gf::mul_add(&mut dst, black_box(&src), 0x8e);
        black_box(&dst);
    });
    println!(
        "{:<36} {:>8} {:>10}",
        "kernel (64 MiB buffers)", "GB/s", "vs copy"
    );
    for (name, r) in [
        ("memory copy (reference)", copy),
        ("XOR into (XOR scheme)", xor),
        ("GF(2^8) multiply-add (Reed-Solomon)", mul),
    ] {
        println!("{name:<36} {r:>8.2} {:>9.2}x", r / copy);
    }
}
