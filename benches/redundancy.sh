#!/usr/bin/env bash
# Redundancy benchmark (issue 5): 4 ranks on 4 emulated nodes, cache on tmpfs, SCR_SET_SIZE=4,
# no flush. Median seconds per checkpoint (write + Complete_checkpoint) for raw write+fsync,
# SINGLE, PARTNER, XOR and RS (2 failures), then the time SCR_Init takes to rebuild a lost node, the redundancy cost over SINGLE, and the ratio to real SCR v2.0.0's
# redundancy step measured on this machine kind (../shared/reference/perf-anchors.md, 4 MiB
# MPI chunks: PARTNER 0.356/1.142 s, XOR 0.404/1.327 s at 64/256 MiB per rank).
# Run: ./benches/redundancy.sh [SIZES_MIB...]   (default: 64 256)
# BUF_SIZES="131072 4194304" picks the SCR_MPI_BUF_SIZE values compared (default: SCR's
# 128 KiB, 4 MiB, and ours).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(64 256)
read -r -a bufs <<<"${BUF_SIZES:-131072 4194304 default}"
cargo build --release --quiet -p scr-runtime --lib
work=$(mktemp -d /dev/shm/scr-bench.XXXXXX); trap 'rm -rf "$work"' EXIT
ln -s "$(pwd)/target/release/libscr_runtime.so" "$work/libscr.so"
mpicc -O2 benches/c/bench_ckpt.c -I lib/include -L"$work" -lscr -Wl,-rpath,"$work" -o "$work/bench_ckpt"
count=3
launch=(mpiexec -launcher fork -hosts n1,n2,n3,n4 -n 4)

run_scr() { # size scheme bufsize -> median seconds
  local d="$work/run"; rm -rf "$d"; mkdir -p "$d/prefix" "$d/cntl" "$d/cache"
  echo "SCR_CNTL_BASE=$d/cntl" > "$d/scr.conf"
  local buf=(); [ "$3" = default ] || buf=(SCR_MPI_BUF_SIZE="$3")
  (cd "$d/prefix" && env SCR_SYSTEM_CONF_FILE="$d/scr.conf" SCR_CACHE_BASE="$d/cache" SCR_PREFIX="$d/prefix" \
     SCR_JOB_ID=bench SCR_FLUSH=0 SCR_COPY_TYPE="$2" SCR_SET_SIZE=4 "${buf[@]}" \
     "${launch[@]}" "$work/bench_ckpt" scr "$1" "$count") | awk '/median_seconds/ {print $2}'
}
run_raw() { # size -> median seconds
  local d="$work/raw"; rm -rf "$d"; mkdir -p "$d"
  "${launch[@]}" "$work/bench_ckpt" raw "$1" "$count" "$d" | awk '/median_seconds/ {print $2}'
}
rebuild_time() { # size scheme -> seconds of SCR_Init after losing node n2 of the last run
  local d="$work/run"
  rm -rf "$d"/cache/*/scr.bench/node.n2 "$d"/cntl/*/scr.bench/node.n2
  (cd "$d/prefix" && env SCR_SYSTEM_CONF_FILE="$d/scr.conf" SCR_CACHE_BASE="$d/cache" SCR_PREFIX="$d/prefix" \
     SCR_JOB_ID=bench SCR_FLUSH=0 SCR_FETCH=0 SCR_COPY_TYPE="$2" SCR_SET_SIZE=4 \
     "${launch[@]}" "$work/bench_ckpt" scr "$1" 0) | awk '/init_seconds/ {print $2}'
}
anchor() { # scheme size -> real SCR's redundancy seconds
  case "$1:$2" in
    PARTNER:64) echo 0.356;; PARTNER:256) echo 1.142;; XOR:64) echo 0.404;; XOR:256) echo 1.327;; *) echo "";;
  esac
}

printf '%-8s %-24s %9s %10s %14s %16s\n' "MiB/rank" "configuration" "s/ckpt" "vs raw" "redundancy s" "vs real SCR"
for size in "${sizes[@]}"; do
  raw=$(run_raw "$size")
  printf '%-8s %-24s %9.3f %10s\n' "$size" "raw write+fsync" "$raw" "1.00"
  single=$(run_scr "$size" SINGLE default)
  printf '%-8s %-24s %9.3f %9.2fx\n' "$size" "SINGLE" "$single" "$(echo "$single / $raw" | bc -l)"
  for scheme in PARTNER XOR RS; do
    for buf in "${bufs[@]}"; do
      t=$(run_scr "$size" "$scheme" "$buf")
      extra=$(echo "$t - $single" | bc -l)
      a=$(anchor "$scheme" "$size"); ratio=""
      [ -z "$a" ] || ratio=$(printf '%.2fx' "$(echo "$extra / $a" | bc -l)")
      label="$scheme buf=$buf"
      printf '%-8s %-24s %9.3f %9.2fx %14.3f %16s\n' "$size" "$label" "$t" "$(echo "$t / $raw" | bc -l)" "$extra" "$ratio"
    done
    printf '%-8s %-24s %9.3f s   (SCR_Init after losing node n2, fetch off)\n' "$size" "  $scheme rebuild" "$(rebuild_time "$size" "$scheme")"
  done
done
