#!/usr/bin/env bash
# How every phase grows with the job: 8, 32, 128 and 256 ranks, 4 per emulated node, 16 MiB
# and 64 KiB per rank, cache on tmpfs, prefix on disk (/tmp).
#
# Per phase (benches/c/bench_scale.c) — SCR_Init, SCR_Need_checkpoint, Complete of a SINGLE
# and of an XOR checkpoint (sets of 8), Complete with a flush, SCR_Init restarting after one
# node's cache is lost (the rebuild), the restart, SCR_Init + SCR_Have_restart fetching from
# the prefix with every cache gone, SCR_Finalize — it prints the wall seconds, rank 0's CPU
# seconds, the bytes MPI delivered to rank 0 (an MPI profiling shim, benches/c/mpi_bytes.c,
# counts them) and rank 0's peak memory; then the growth from 32 to 256 ranks of each.
#
# The ranks share 2 cores, so wall time grows with the total work (8x from 32 to 256 ranks
# for a phase whose work per rank is fixed) however well a phase scales; rank 0's CPU
# seconds and received bytes are the honest measure of work on one rank: they should stay
# flat where SCR's per-rank work is fixed, and grow at most like log N where a tree is used.
#
# Runs on Open MPI: its ranks yield an oversubscribed core while they wait, where MPICH's
# busy polling makes a barrier of 256 ranks on 2 cores take seconds.
#
# Run: ./benches/scale.sh            RANKS="8 32" SIZES="65536" ./benches/scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build   # what it needs, installed when missing (needs root then)
read -r -a rank_counts <<<"${RANKS:-8 32 128 256}"
read -r -a sizes <<<"${SIZES:-16777216 65536}"
target="$(pwd)/target/openmpi"
SCR_TEST_MPI=openmpi MPICC=mpicc.openmpi CARGO_TARGET_DIR="$target" \
  cargo build --release --quiet -p scr-runtime --lib
work=$(mktemp -d /dev/shm/scr-scale.XXXXXX)
pfs=$(mktemp -d /tmp/scr-scale-prefix.XXXXXX)
trap 'rm -rf "$work" "$pfs"' EXIT
ln -s "$target/release/libscr_runtime.so" "$work/libscr.so"
mpicc.openmpi -O2 benches/c/bench_scale.c -I lib/include -L"$work" -lscr -Wl,-rpath,"$work" -ldl \
  -o "$work/bench_scale"
mpicc.openmpi -O2 -shared -fPIC benches/c/mpi_bytes.c -o "$work/mpi_bytes.so"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

run() { # ranks size mode -> "phase NAME wall cpu bytes rss" lines
  local d="$work/job"
  (cd "$pfs/prefix" && mpirun.openmpi --oversubscribe --mca btl_vader_single_copy_mechanism none \
     -np "$1" -x LD_PRELOAD="$work/mpi_bytes.so" -x SCR_SYSTEM_CONF_FILE="$d/scr.conf" \
     -x SCR_PREFIX="$pfs/prefix" -x SCR_JOB_ID=scale \
     sh -c 'SCR_NODE_NAME=n$((OMPI_COMM_WORLD_RANK / 4)) exec "$0" "$@"' \
     "$work/bench_scale" "$3" "$2") | grep '^phase '
}

results="$work/results"
: >"$results"
for size in "${sizes[@]}"; do
  for ranks in "${rank_counts[@]}"; do
    d="$work/job"
    rm -rf "$d" "$pfs/prefix"; mkdir -p "$d/cntl" "$d/cache" "$pfs/prefix"
    cat >"$d/scr.conf" <<EOF
SCR_CNTL_BASE=$d/cntl
SCR_CACHE_BASE=$d/cache
SCR_CACHE_SIZE=2
SCR_FLUSH=3
CKPT=0 INTERVAL=1 TYPE=SINGLE
CKPT=1 INTERVAL=2 TYPE=XOR SET_SIZE=8
EOF
    echo "$size B/rank, $ranks ranks ..." >&2
    run "$ranks" "$size" write | sed "s/^/$size $ranks /" >>"$results"
    rm -rf "$d"/cache/*/scr.scale/node.n1 "$d"/cntl/*/scr.scale/node.n1
    run "$ranks" "$size" restart | sed -e "s/ init / init_rebuild /" -e "s/^/$size $ranks /" >>"$results"
    rm -rf "$d"/cache/* "$d"/cntl/*
    run "$ranks" "$size" fetch | sed -e "s/ init / init_fetch /" -e "s/^/$size $ranks /" >>"$results"
  done
done

# one table per size: rows are phases, columns per rank count; then the growth 32 -> 256
awk -v counts="${rank_counts[*]}" '
  BEGIN { n = split(counts, rc, " "); f = (n > 2) ? 2 : 1 }  # from 32 of 8 32 128 256
  { key = $1 SUBSEP $4 SUBSEP $2
    if (!(($1 SUBSEP $4) in seen)) { seen[$1 SUBSEP $4] = 1; order[$1, ++np[$1]] = $4 }
    if (!($1 in sz)) { sz[$1] = 1; sizes[++ns] = $1 }
    # a phase measured twice in one run (complete_xor): the last one
    wall[key] = $5; cpu[key] = $6; bytes[key] = $7; rss[key] = $8 }
  function human(b) { return b < 0 ? "-" : b >= 1048576 ? sprintf("%.1fM", b / 1048576) : b >= 1024 ? sprintf("%.1fK", b / 1024) : b "" }
  function growth(a, b) { return (a > 0) ? sprintf("%.1fx", b / a) : "-" }
  END {
    for (s = 1; s <= ns; s++) {
      S = sizes[s]
      printf "\n%s bytes per rank, 4 ranks per node: wall s / rank 0 CPU s / bytes to rank 0 / rank 0 peak RSS\n", S
      printf "%-16s", "phase"
      for (i = 1; i <= n; i++) printf " | %-30s", rc[i] " ranks"
      printf " | growth %s->%s: wall, CPU, bytes\n", rc[f], rc[n]
      for (p = 1; p <= np[S]; p++) {
        ph = order[S, p]; printf "%-16s", ph
        for (i = 1; i <= n; i++) {
          k = S SUBSEP ph SUBSEP rc[i]
          printf " | %7.3f %6.3f %7s %6.0fM", wall[k], cpu[k], human(bytes[k]), rss[k] / 1024
        }
        a = S SUBSEP ph SUBSEP rc[f]; b = S SUBSEP ph SUBSEP rc[n]
        printf " | %s %s %s\n", growth(wall[a], wall[b]), growth(cpu[a], cpu[b]), growth(bytes[a], bytes[b])
      }
    }
    printf "\nwork from %s to %s ranks: %.0fx in total, 1x per rank for every phase but the rebuild (one node: 1x in total)\n", rc[f], rc[n], rc[n] / rc[f]
  }' "$results"
