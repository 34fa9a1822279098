#!/usr/bin/env bash
# Runs the fuzz targets: ./fuzz/run.sh [seconds per target, default 600] [target ...]
# Uses the stable toolchain with RUSTC_BOOTSTRAP=1 (cargo-fuzz needs nightly flags);
# installs cargo-fuzz if missing. Seeds come from fuzz/seeds/<target>.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-600}; shift || true
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(hash_file config hostlist parity_rebuild)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null || true
  echo "fuzzing $t for $secs s"
  cargo fuzz run -O "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 2>&1 | tail -n 5
done
