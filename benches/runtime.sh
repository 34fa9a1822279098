#!/usr/bin/env bash
# Runtime library benchmark: 4 ranks on 4 emulated nodes, cache on tmpfs, prefix on
# disk (/tmp, as a parallel file system would be: tmpfs on this VM pays for first-touch pages
# on every new GiB, which swamps the copy itself),
# SINGLE scheme, 64 and 256 MiB per rank. Prints the median time per checkpoint and its ratio
# to plain write+fsync of the same files in the same run, and flush throughput against `cp`
# of the same bytes to the same target. Four ranks share two cores here, so single runs vary
# by 20 %: the no-flush comparison alternates raw and SCR runs three times (9 checkpoints
# each) and takes the median of each side's medians.
# Run: ./benches/runtime.sh [SIZES_MIB...]   (default: 64 256)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build   # what it needs, installed when missing (needs root then)
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(64 256)
cargo build --release --quiet -p scr-runtime --lib
work=$(mktemp -d /dev/shm/scr-bench.XXXXXX)
pfs=$(mktemp -d /tmp/scr-bench-prefix.XXXXXX); trap 'rm -rf "$work" "$pfs"' EXIT
ln -s "$(pwd)/target/release/libscr_runtime.so" "$work/libscr.so"
mpicc -O2 benches/c/bench_ckpt.c -I lib/include -L"$work" -lscr -Wl,-rpath,"$work" -o "$work/bench_ckpt"
count=3
launch=(mpiexec -launcher fork -hosts n1,n2,n3,n4 -n 4)

run_scr() { # size flush crc_copy crc_flush [count] -> median seconds (env: ASYNC, COMPUTE_MS)
  local d="$work/run"; rm -rf "$d" "$pfs/prefix"; mkdir -p "$pfs/prefix" "$d/cntl" "$d/cache"
  ln -s "$pfs/prefix" "$d/prefix"
  echo "SCR_CNTL_BASE=$d/cntl" > "$d/scr.conf"
  (cd "$d/prefix" && SCR_SYSTEM_CONF_FILE="$d/scr.conf" SCR_CACHE_BASE="$d/cache" SCR_PREFIX="$d/prefix" \
     SCR_JOB_ID=bench SCR_FLUSH="$2" SCR_CRC_ON_COPY="$3" SCR_CRC_ON_FLUSH="$4" SCR_COPY_TYPE=SINGLE \
     SCR_FLUSH_ASYNC="${ASYNC:-0}" BENCH_COMPUTE_MS="${COMPUTE_MS:-0}" \
     "${launch[@]}" "$work/bench_ckpt" scr "$1" "${5:-$count}") | awk '$1 == "median_seconds" {print $2}'
}
run_raw() { # size [count] -> median seconds
  local d="$work/raw"; rm -rf "$d"; mkdir -p "$d"
  "${launch[@]}" "$work/bench_ckpt" raw "$1" "${2:-$count}" "$d" | awk '$1 == "median_seconds" {print $2}'
}
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
cp_rate() { # size -> MB/s of 4 parallel cp + fsync of the last run's cached files into new
  # directories of its prefix: the same bytes, the same target, and (like the flushes, which
  # keep every dataset) fresh files, not recycled ones
  local d="$work/run" best=0
  mapfile -t src < <(find "$d/cache" -name 'rank_*.ckpt' | sort)
  [ ${#src[@]} -eq 4 ] || { echo "cp reference: expected 4 cached files, found ${#src[@]}" >&2; exit 1; }
  for rep in 1 2 3; do
    local dst="$d/prefix/cp.$rep"; mkdir -p "$dst"
    local s e; s=$(date +%s.%N)
    for r in 0 1 2 3; do (cp "${src[$r]}" "$dst/$r" && sync "$dst/$r") & done; wait
    e=$(date +%s.%N)
    local rate; rate=$(echo "4 * $1 * 1.048576 / ($e - $s)" | bc -l)
    best=$(echo "if ($rate > $best) $rate else $best" | bc -l)
  done
  printf '%.0f' "$best"
}

printf '%-8s %-34s %10s %12s\n' "MiB/rank" "configuration" "s/ckpt" "vs raw write"
for size in "${sizes[@]}"; do
  raws=() singles=()
  for rep in 1 2 3; do
    raws+=("$(run_raw "$size" 9)")
    singles+=("$(run_scr "$size" 0 0 0 9)")
  done
  raw=$(median3 "${raws[@]}")
  printf '%-8s %-34s %10.3f %12s\n' "$size" "raw write+fsync (reference)" "$raw" "1.00"
  base=""
  for cfg in "0 0 0:SINGLE, no flush" "0 1 0:SINGLE, no flush, CRC on copy" "1 0 1:SINGLE, flush every ckpt, CRC" "1 0 0:SINGLE, flush every ckpt"; do
    read -r flush crc_copy crc_flush <<<"${cfg%%:*}"
    if [ "$cfg" = "0 0 0:SINGLE, no flush" ]; then
      t=$(median3 "${singles[@]}")
    else
      t=$(run_scr "$size" "$flush" "$crc_copy" "$crc_flush")
    fi
    if [ "$flush" = 1 ]; then
      # a run right after gigabytes were written and deleted meets the device still busy
      # writing them back; the better of two runs measures the flush, not that
      t2=$(run_scr "$size" "$flush" "$crc_copy" "$crc_flush")
      t=$(echo "if ($t2 < $t) $t2 else $t" | bc -l)
    fi
    printf '%-8s %-34s %10.3f %11.2fx\n' "$size" "${cfg#*:}" "$t" "$(echo "$t / $raw" | bc -l)"
    [ -n "$base" ] || base=$t
    if [ "$flush" = 1 ]; then
      flush_s=$(echo "$t - $base" | bc -l)
      rate=$(echo "4 * $size * 1.048576 / $flush_s" | bc -l)
      cp=$(cp_rate "$size")
      printf '%-8s %-34s %10s %12s\n' "" "  flush: $(printf '%.0f' "$rate") MB/s, cp: $cp MB/s" "" "$(printf '%.0f%% of cp' "$(echo "100 * $rate / $cp" | bc -l)")"
    fi
  done
done

# Asynchronous against synchronous flush, every checkpoint, the application computing 1 s
# between checkpoints: the checkpoint time the application sees (SCR_FLUSH_ASYNC_BW at its
# default, 200 MiB/s per node).
printf '\n%-8s %-44s %10s\n' "MiB/rank" "flush every checkpoint, 1 s compute between" "s/ckpt"
for size in "${sizes[@]}"; do
  sync_t=$(COMPUTE_MS=1000 run_scr "$size" 1 0 1)
  async_t=$(ASYNC=1 COMPUTE_MS=1000 run_scr "$size" 1 0 1)
  printf '%-8s %-44s %10.3f\n' "$size" "synchronous flush" "$sync_t"
  printf '%-8s %-44s %10.3f %s\n' "$size" "asynchronous flush" "$async_t" "($(printf '%.2f' "$(echo "$async_t / $sync_t" | bc -l)")x of synchronous)"
done
