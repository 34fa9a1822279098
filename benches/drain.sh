#!/usr/bin/env bash
# Drain benchmark: 4 ranks on 4 emulated nodes each leave SIZE MiB only in cache
# (SCR_FLUSH=0, the job dies after its checkpoint); `scr postrun` copies it to the prefix,
# CRC-checks and indexes it. Compared in the same run with 4 parallel `cp` of the same cached
# files to the same file system, each followed by sync. Cache and prefix on tmpfs.
#
# Then whether the drain time follows the largest node or the sum over nodes: 8 ranks of
# SIZE/4 MiB placed 5 on n1 and 1 on each of n2-n4. Compared with `cp` of n1's files alone and
# of all files one after another (each with sync): nodes are copied side by side, so the drain
# should take about as long as its largest node, not the sum.
# Run: ./benches/drain.sh [SIZE_MIB]   (default: 256)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build   # what it needs, installed when missing (needs root then)
size=${1:-256}
cargo build --release --quiet -p scr-runtime --lib
cargo build --release --quiet -p scr-launcher
root=$(pwd)
work=$(mktemp -d /dev/shm/scr-drain.XXXXXX); trap 'rm -rf "$work"' EXIT
ln -s "$root/target/release/libscr_runtime.so" "$work/libscr.so"
mpicc -O2 examples/c/test_api.c -I lib/include -L"$work" -lscr -Wl,-rpath,"$work" -o "$work/test_api"
export SCR_CACHE_BASE=$work/cache SCR_PREFIX=$work/prefix SCR_JOB_ID=drain SCR_NODELIST='n[1-4]'
export SCR_SYSTEM_CONF_FILE=$work/scr.conf SCR_COPY_TYPE=SINGLE SCR_FLUSH=0
echo "SCR_CNTL_BASE=$work/cntl" > "$work/scr.conf"
best_drain=0 best_cp=0
for rep in 1 2 3; do
  rm -rf "$work/prefix" "$work/cache" "$work/cntl" "$work/cp"; mkdir -p "$work/prefix" "$work/cp"
  (cd "$work/prefix" && TEST_API_NO_FINALIZE=1 mpiexec -launcher fork -hosts n1,n2,n3,n4 -n 4 \
     "$work/test_api" $((size << 20)) 1 >/dev/null)
  s=$(date +%s.%N)
  "$root/target/release/scr" postrun -p "$work/prefix" 2>"$work/postrun.log" || { cat "$work/postrun.log"; exit 1; }
  e=$(date +%s.%N)
  drain=$(echo "4 * $size * 1.048576 / ($e - $s)" | bc -l)
  mapfile -t src < <(find "$work/cache" -name 'rank_*.ckpt' | sort)
  s=$(date +%s.%N)
  for i in "${!src[@]}"; do (cp "${src[$i]}" "$work/cp/$i" && sync "$work/cp/$i") & done; wait
  e=$(date +%s.%N)
  cp_rate=$(echo "4 * $size * 1.048576 / ($e - $s)" | bc -l)
  best_drain=$(echo "if ($drain > $best_drain) $drain else $best_drain" | bc -l)
  best_cp=$(echo "if ($cp_rate > $best_cp) $cp_rate else $best_cp" | bc -l)
done
printf 'drain of 4 x %d MiB: scr postrun %.0f MB/s, cp %.0f MB/s: %.0f %% of cp (best of 3)\n' \
  "$size" "$best_drain" "$best_cp" "$(echo "100 * $best_drain / $best_cp" | bc -l)"

# the largest node against the sum
small=$((size / 4))
rm -rf "$work/prefix" "$work/cache" "$work/cntl" "$work/cp"; mkdir -p "$work/prefix" "$work/cp"
(cd "$work/prefix" && TEST_API_NO_FINALIZE=1 mpiexec -launcher fork -hosts n1:5,n2:1,n3:1,n4:1 -n 8 \
   "$work/test_api" $((small << 20)) 1 >/dev/null)
s=$(date +%s.%N)
"$root/target/release/scr" postrun -p "$work/prefix" 2>"$work/postrun.log" || { cat "$work/postrun.log"; exit 1; }
e=$(date +%s.%N)
wall=$(echo "$e - $s" | bc -l)
copy_all() { for f in "$@"; do cp "$f" "$work/cp/" && sync "$work/cp/$(basename "$f")"; done; }
mapfile -t n1 < <(find "$work/cache" -path '*node.n1*' -name 'rank_*.ckpt')
mapfile -t all < <(find "$work/cache" -name 'rank_*.ckpt')
s=$(date +%s.%N); copy_all "${n1[@]}"; e=$(date +%s.%N); largest=$(echo "$e - $s" | bc -l)
rm -rf "$work/cp"/*
s=$(date +%s.%N); copy_all "${all[@]}"; e=$(date +%s.%N); sum=$(echo "$e - $s" | bc -l)
grep -E ': n[1-4]: copied' "$work/postrun.log" | sed 's/^/  /'
printf 'skewed drain (n1: 5 x %d MiB, n2-n4: 1 x %d MiB): scr postrun %.2f s; cp of n1 alone %.2f s, of every node in turn %.2f s: drain/largest %.2f, drain/sum %.2f\n' \
  "$small" "$small" "$wall" "$largest" "$sum" "$(echo "$wall / $largest" | bc -l)" "$(echo "$wall / $sum" | bc -l)"
