//! Arithmetic in GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d).

const fn tables() -> ([u8; 512], [u8; 256]) {
    let mut exp = [0u8; 512];
    let mut log = [0u8; 256];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        log[x as usize] = i as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= 0x11d;
        }
        i += 1;
    }
    while i < 512 {
        exp[i] = exp[i - 255];
        i += 1;
    }
    (exp, log)
}
const TABLES: ([u8; 512], [u8; 256]) = tables();
const EXP: [u8; 512] = TABLES.0;
const LOG: [u8; 256] = TABLES.1;

pub fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        0
    } else {
        EXP[LOG[a as usize] as usize + LOG[b as usize] as usize]
    }
}

/// The inverse of a non-zero element.
pub fn inv(a: u8) -> u8 {
    assert_ne!(a, 0, "zero has no inverse");
    EXP[255 - LOG[a as usize] as usize]
}

/// `out = sum ^ c * src` in one pass over the three (no copy of `sum` first). `src` may be
/// shorter than `out`: what it does not cover is zero.
pub fn sum_mul_add(out: &mut [u8], sum: &[u8], src: &[u8], c: u8) {
    let (len, covered) = (out.len(), src.len().min(out.len()));
    let sum = &sum[..len];
    out[covered..].copy_from_slice(&sum[covered..]);
    let (out, sum, src) = (&mut out[..covered], &sum[..covered], &src[..covered]);
    match c {
        0 => out.copy_from_slice(sum),
        1 => {
            for ((o, s), d) in out.iter_mut().zip(sum).zip(src) {
                *o = s ^ d;
            }
        }
        // SAFETY: the three slices have one length, `covered`
        _ => unsafe { sum_mul_add_raw(out.as_mut_ptr(), sum.as_ptr(), src.as_ptr(), covered, c) },
    }
}

/// `out = c * src`; what `src` does not cover is zero.
pub fn scaled(out: &mut [u8], src: &[u8], c: u8) {
    let covered = src.len().min(out.len());
    out[covered..].fill(0);
    match c {
        1 => out[..covered].copy_from_slice(&src[..covered]),
        _ => {
            out[..covered].fill(0);
            mul_add(&mut out[..covered], &src[..covered], c);
        }
    }
}

/// `dst ^= c * src`, byte by byte.
pub fn mul_add(dst: &mut [u8], src: &[u8], c: u8) {
    match c {
        0 => {}
        1 => crate::xor::xor_into(dst, src),
        _ => {
            let len = dst.len().min(src.len());
            let d = dst.as_mut_ptr();
            // SAFETY: dst and src are valid for len bytes; dst is both the sum read and the
            // output written
            unsafe { sum_mul_add_raw(d, d, src.as_ptr(), len, c) }
        }
    }
}

/// `out = sum ^ c * src` over `len` bytes for a coefficient above 1: the vector kernel
/// where the processor has AVX2, a product table for the bytes it leaves.
///
/// # Safety
/// `out`, `sum` and `src` are each valid for `len` bytes; `out` may be `sum`.
unsafe fn sum_mul_add_raw(out: *mut u8, sum: *const u8, src: *const u8, len: usize, c: u8) {
    #[cfg(target_arch = "x86_64")]
    let done = if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present (checked just above); the caller's promise on the three
        unsafe { simd::mul_add_avx2(out, sum, src, len, c) }
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    let table = mul_table(c);
    for i in done..len {
        // SAFETY: i < len, within the three (the caller's promise)
        unsafe { *out.add(i) = *sum.add(i) ^ table[*src.add(i) as usize] };
    }
}

/// Every product by `c`, for the bytes the vector kernel leaves.
fn mul_table(c: u8) -> [u8; 256] {
    let mut table = [0u8; 256];
    for (x, t) in table.iter_mut().enumerate() {
        *t = mul(c, x as u8);
    }
    table
}

/// Multiplication by a constant as two 16-entry tables (low and high nibble), looked up
/// 32 bytes at a time with a byte shuffle: near memory speed where a 256-entry table
/// does one load per byte.
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// `out = sum ^ c * src` over the largest multiple of 32 of `len` bytes; returns how
    /// many. `out` may be `sum` (each block is read before it is written).
    ///
    /// # Safety
    /// AVX2 is present; `out`, `sum` and `src` are each valid for `len` bytes.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn mul_add_avx2(
        out: *mut u8,
        sum: *const u8,
        src: *const u8,
        len: usize,
        c: u8,
    ) -> usize {
        let mut low = [0u8; 32];
        let mut high = [0u8; 32];
        for i in 0..16u8 {
            low[i as usize] = super::mul(c, i);
            high[i as usize] = super::mul(c, i << 4);
        }
        low.copy_within(0..16, 16);
        high.copy_within(0..16, 16);
        let blocks = len / 32;
        // SAFETY: every load and store below stays within the first blocks * 32 bytes of
        // the three (valid for len bytes, the caller's promise); unaligned throughout.
        unsafe {
            let low = _mm256_loadu_si256(low.as_ptr() as *const __m256i);
            let high = _mm256_loadu_si256(high.as_ptr() as *const __m256i);
            let mask = _mm256_set1_epi8(0x0f);
            for b in 0..blocks {
                let s = _mm256_loadu_si256(src.add(b * 32) as *const __m256i);
                let lo = _mm256_shuffle_epi8(low, _mm256_and_si256(s, mask));
                let hi = _mm256_shuffle_epi8(high, _mm256_and_si256(_mm256_srli_epi64(s, 4), mask));
                let acc = _mm256_loadu_si256(sum.add(b * 32) as *const __m256i);
                _mm256_storeu_si256(
                    out.add(b * 32) as *mut __m256i,
                    _mm256_xor_si256(acc, _mm256_xor_si256(lo, hi)),
                );
            }
        }
        blocks * 32
    }
}

/// Inverts a square matrix (rows of equal length); None if it is singular.
pub fn invert(mut m: Vec<Vec<u8>>) -> Option<Vec<Vec<u8>>> {
    let n = m.len();
    let mut out: Vec<Vec<u8>> = (0..n)
        .map(|i| (0..n).map(|j| u8::from(i == j)).collect())
        .collect();
    for col in 0..n {
        let pivot = (col..n).find(|&r| m[r][col] != 0)?;
        m.swap(col, pivot);
        out.swap(col, pivot);
        let scale = inv(m[col][col]);
        for j in 0..n {
            m[col][j] = mul(m[col][j], scale);
            out[col][j] = mul(out[col][j], scale);
        }
        for r in 0..n {
            let f = m[r][col];
            if r != col && f != 0 {
                for j in 0..n {
                    let (a, b) = (m[col][j], out[col][j]);
                    m[r][j] ^= mul(f, a);
                    out[r][j] ^= mul(f, b);
                }
            }
        }
    }
    Some(out)
}
