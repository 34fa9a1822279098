#!/usr/bin/env bash
# What the default flush of a job launched without scr-run costs the application: 4 ranks on
# 4 emulated nodes (as the quick start's `srun -n4 -N4 ./test_api`), SIZE MiB each per
# checkpoint, CKPTS checkpoints, COMPUTE_MS of "computing" after each (0: back to back, the
# worst case: each checkpoint after the first waits for the previous one's flush before its
# cached copy can go). Compared with SCR_FLUSH=10, v2.0's default that scr-run's runs keep
# (checkpoints only in cache until the drain). The time of each checkpoint is what test_api
# prints with TEST_API_TIMES=1 (Start_output to Complete_output's return); the run's wall time
# includes SCR_Finalize, which under both waits for or makes the last flush.
# Cache and prefix on /dev/shm; the background flush is paced by SCR_FLUSH_ASYNC_BW
# (200 MB/s per node by default).
# Run: ./benches/flush_default.sh [SIZE_MIB [CKPTS [COMPUTE_MS]]]   (default: 64 5 0)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build   # what it needs, installed when missing (needs root then)
size=${1:-64} ckpts=${2:-5} compute=${3:-0}
cargo build --release --quiet -p scr-runtime --lib
root=$(pwd)
work=$(mktemp -d /dev/shm/scr-flush-default.XXXXXX); trap 'rm -rf "$work"' EXIT
ln -s "$root/target/release/libscr_runtime.so" "$work/libscr.so"
mpicc -O2 examples/c/test_api.c -I lib/include -L"$work" -lscr -Wl,-rpath,"$work" -o "$work/test_api"
unset SCR_FLUSH SCR_FLUSH_ASYNC SCR_FLUSH_TYPE SCR_DRAIN_FOLLOWS SCR_CONF_FILE SCR_CACHE_BYPASS
export SCR_CACHE_BASE=$work/cache SCR_PREFIX=$work/prefix SCR_JOB_ID=flushbench
export SCR_SYSTEM_CONF_FILE=$work/scr.conf TEST_API_TIMES=1
if [ "$compute" -gt 0 ]; then export TEST_API_SLEEP_MS=$compute; fi
echo "SCR_CNTL_BASE=$work/cntl" > "$work/scr.conf"

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# runs the job 3 times with the given environment (none: the new default); sets `ckpt`
# (median over runs of the checkpoints' total seconds), `each` (median checkpoint) and `wall`
measure() {
  local totals=() walls=() all=()
  for rep in 1 2 3; do
    rm -rf "$work/prefix" "$work/cache" "$work/cntl"; mkdir -p "$work/prefix"
    local s e out
    s=$(date +%s.%N)
    out=$(cd "$work/prefix" && env "$@" mpiexec -launcher fork -hosts n1,n2,n3,n4 -n 4 \
      "$work/test_api" $((size << 20)) "$ckpts")
    e=$(date +%s.%N)
    mapfile -t took < <(sed -n 's/^test_api: checkpoint [0-9]* took \([0-9.]*\) s$/\1/p' <<<"$out")
    [ "${#took[@]}" -eq "$ckpts" ] || { echo "expected $ckpts checkpoints: $out"; exit 1; }
    all+=("${took[@]}")
    totals+=("$(printf '%s\n' "${took[@]}" | paste -sd+ | bc -l)")
    walls+=("$(echo "$e - $s" | bc -l)")
  done
  ckpt=$(printf '%s\n' "${totals[@]}" | median)
  each=$(printf '%s\n' "${all[@]}" | median)
  wall=$(printf '%s\n' "${walls[@]}" | median)
}

measure
new_ckpt=$ckpt new_each=$each new_wall=$wall
measure SCR_FLUSH=10
old_ckpt=$ckpt old_each=$each old_wall=$wall
printf '4 ranks x %d MiB, %d checkpoints, %d ms between (medians of 3 runs)\n' "$size" "$ckpts" "$compute"
printf '  without scr-run, every checkpoint flushed in the background: checkpoints %.3f s (each %.3f s), run %.2f s\n' \
  "$new_ckpt" "$new_each" "$new_wall"
printf '  SCR_FLUSH=10 (v2.0, kept under scr-run):                   checkpoints %.3f s (each %.3f s), run %.2f s\n' \
  "$old_ckpt" "$old_each" "$old_wall"
printf '  ratio new/old: checkpoints %.2f, run %.2f\n' \
  "$(echo "$new_ckpt / $old_ckpt" | bc -l)" "$(echo "$new_wall / $old_wall" | bc -l)"
