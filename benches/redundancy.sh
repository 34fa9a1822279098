#!/usr/bin/env bash
# Redundancy benchmark: what SCR_Complete_checkpoint costs per scheme, against the floor of
# this machine and against real SCR, all measured in this run.
#
# 4 ranks on 4 emulated nodes, cache on tmpfs, SCR_SET_SIZE=4, no flush, SCR_MPI_BUF_SIZE
# 4 MiB (BUF=… to change). The same program (benches/c/bench_ckpt.c, SCR v2.0 calls only)
# runs with our library and, when REAL_SCR names an LLNL SCR v2.0.0 install, with real
# SCR's (its lib/libscr.so, each rank its own node through the fakenode.so shim built from
# ../shared/tools/fakenode.c into $REAL_SCR/lib). Each figure is the median over COUNT
# checkpoints (default 5) of Complete alone, every rank having written first.
#
# The floor of each scheme (benches/c/floor.c) moves the same bytes with plain MPI from
# memory and writes them once, waiting as the library does (testing, yielding the processor
# between tests): SINGLE writes the checkpoint; PARTNER sends it to the right neighbour and
# writes the left one's; XOR and RS run the library's ring with a one-pass XOR kernel and
# write the parity (RS: n-2 steps carrying both slots' sums of SIZE/(n-2), 2 x SIZE sent per
# rank; the XOR kernel makes its floor a lower bound). The checkpoint write itself is not in
# Complete, so SINGLE's floor is zero and its row compares with a raw write+fsync of the
# same bytes instead.
#
# Both transports: "shm" gives each rank its node name with SCR_NODE_NAME (MPICH sees one
# host and uses shared memory), "hosts" launches with -launcher fork -hosts n1,…,n4 (MPICH
# sees four hosts). Then the rebuild: SCR_Init after node n2's cache and control
# directories are removed, less SCR_Init with every node intact, against the Complete that
# wrote what it rebuilds.
#
# BENCH_PHASES=1 adds, under each of our schemes, the median over the timed checkpoints of
# each phase of rank 0's Complete (the library's SCR_DEBUG=2 breakdown: the totals'
# allreduce, the parity ring's reads, kernel, MPI waits and writes, a copy's reads, MPI,
# writes and fsync, the parity file's creation and header, the filemaps, the flush file).
#
# Run: ./benches/redundancy.sh [SIZES_MIB...]   (default: 64 256)
#      REAL_SCR=/opt/scr-2.0.0 ./benches/redundancy.sh   (with real SCR beside ours)
#      BENCH_PHASES=1 ./benches/redundancy.sh 256     (where each Complete's time goes)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build   # what it needs, installed when missing (needs root then)
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(64 256)
count=${COUNT:-5}
buf=${BUF:-4194304}
cargo build --release --quiet -p scr-runtime --lib
work=$(mktemp -d /dev/shm/scr-bench.XXXXXX)
cleanup() { rm -rf "$work" /dev/shm/scr-bench-real; }
trap cleanup EXIT
mkdir "$work/ours"
ln -s "$(pwd)/target/release/libscr_runtime.so" "$work/ours/libscr.so"
# no rpath: the library is chosen at run time with LD_LIBRARY_PATH
mpicc -O2 benches/c/bench_ckpt.c -I lib/include -L"$work/ours" -lscr -o "$work/bench_ckpt"
mpicc -O2 -Wno-stringop-overflow benches/c/floor.c -o "$work/floor"
real=""
if [ -n "${REAL_SCR:-}" ]; then
  if [ -f "$REAL_SCR/lib/libscr.so" ] && [ -f "$REAL_SCR/lib/fakenode.so" ]; then
    real=$REAL_SCR
  else
    echo "REAL_SCR=$REAL_SCR: needs lib/libscr.so and lib/fakenode.so; real SCR left out" >&2
  fi
fi

launch=()
use_transport() { # transport: sets the launch command for 4 ranks on 4 nodes
  case "$1" in
    shm) launch=(mpiexec -n 4 sh -c 'SCR_NODE_NAME=n$PMI_RANK exec "$0" "$@"') ;;
    hosts) launch=(mpiexec -launcher fork -hosts n1,n2,n3,n4 -n 4) ;;
  esac
}
value() { awk -v k="$1" '$1 == k {print $2}'; }
fixed() { if [ -n "$1" ]; then printf '%.3f' "$1"; else echo -; fi; }
ratio() { if [ -n "$2" ] && [ -n "$1" ]; then printf '%.2fx' "$(echo "$1 / $2" | bc -l)"; else echo -; fi; }

ours() { # transport size scheme [count] -> bench_ckpt's output (phases into $work/phases)
  local d="$work/run"; rm -rf "$d"; mkdir -p "$d/prefix" "$d/cntl" "$d/cache"
  echo "SCR_CNTL_BASE=$d/cntl" > "$d/scr.conf"
  local debug=0; [ -z "${BENCH_PHASES:-}" ] || debug=2
  (cd "$d/prefix" && env LD_LIBRARY_PATH="$work/ours" SCR_SYSTEM_CONF_FILE="$d/scr.conf" \
     SCR_CACHE_BASE="$d/cache" SCR_PREFIX="$d/prefix" SCR_JOB_ID=bench SCR_FLUSH=0 \
     SCR_COPY_TYPE="$3" SCR_SET_SIZE=4 SCR_MPI_BUF_SIZE="$buf" SCR_DEBUG="$debug" \
     "${launch[@]}" "$work/bench_ckpt" scr "$2" "${4:-$count}" 2>"$work/phases")
}
phases() { # the median of each phase over the timed checkpoints (the first is the warm-up)
  grep 'scr_complete_output phases: ' "$work/phases" | tail -n +2 | sed 's/.*phases: //' |
    python3 -c '
import sys, statistics
rows = [dict((p.rsplit(" ", 2)[0], float(p.rsplit(" ", 2)[1])) for p in l.strip().split(", ")) for l in sys.stdin if l.strip()]
names = list(dict.fromkeys(n for r in rows for n in r))
print(", ".join(f"{n} {statistics.median(r.get(n, 0.0) for r in rows):.4f}" for n in names))'
}
init() { # transport size scheme [lose] -> SCR_Init's seconds restarting from the last run
  # (after removing node n2's cache and control directories with "lose")
  local d="$work/run"
  [ -z "${4:-}" ] || rm -rf "$d"/cache/*/scr.bench/node.n2 "$d"/cntl/*/scr.bench/node.n2
  (cd "$d/prefix" && env LD_LIBRARY_PATH="$work/ours" SCR_SYSTEM_CONF_FILE="$d/scr.conf" \
     SCR_CACHE_BASE="$d/cache" SCR_PREFIX="$d/prefix" SCR_JOB_ID=bench SCR_FLUSH=0 SCR_FETCH=0 \
     SCR_COPY_TYPE="$3" SCR_SET_SIZE=4 SCR_MPI_BUF_SIZE="$buf" \
     "${launch[@]}" "$work/bench_ckpt" scr "$2" 0) | value init_seconds
}
real_scr() { # transport size scheme -> real SCR's Complete seconds
  local d=/dev/shm/scr-bench-real
  rm -rf "$d" /dev/shm/"${USER:-root}" /dev/shm/"${USER:-root}"_fakenode*; mkdir -p "$d/prefix"
  (cd "$d/prefix" && env USER="${USER:-root}" LD_LIBRARY_PATH="$real/lib" \
     LD_PRELOAD="$real/lib/fakenode.so" FAKE_PPN=1 FAKE_NODE_BASE="$d/nodes" \
     SCR_PREFIX="$d/prefix" SCR_JOB_ID=1234 SCR_FLUSH=0 SCR_COPY_TYPE="$3" SCR_SET_SIZE=4 \
     SCR_MPI_BUF_SIZE="$buf" "${launch[@]}" "$work/bench_ckpt" scr "$2" "$count" 2>/dev/null) \
     | value complete_median_seconds
  rm -rf /dev/shm/"${USER:-root}" /dev/shm/"${USER:-root}"_fakenode*
}
floor() { # transport size mode -> seconds
  rm -rf "$work/floor.d"; mkdir -p "$work/floor.d"
  "${launch[@]}" "$work/floor" "$3" "$2" "$count" "$buf" "$work/floor.d" | value median_seconds
}
raw() { # transport size -> seconds of a raw write+fsync of the checkpoint
  rm -rf "$work/raw"; mkdir -p "$work/raw"
  LD_LIBRARY_PATH="$work/ours" "${launch[@]}" "$work/bench_ckpt" raw "$2" "$count" "$work/raw" | value median_seconds
}

echo "SCR_Complete_checkpoint, median of $count, 4 ranks on 4 nodes, SCR_MPI_BUF_SIZE=$buf"
[ -n "$real" ] || echo "(real SCR not measured: set REAL_SCR to an SCR v2.0.0 install to compare)"
printf '%-6s %-5s %-8s %9s %9s %9s %9s %9s\n' transp MiB scheme "ours s" "floor s" "vs floor" "real s" "vs real"
for transport in shm hosts; do
  use_transport "$transport"
  for size in "${sizes[@]}"; do
    w=$(raw "$transport" "$size")
    printf '%-6s %-5s %-8s %9s %9.3f %9s\n' "$transport" "$size" "write" "" "$w" "(raw write+fsync of the checkpoint)"
    declare -A done_s=()
    for scheme in SINGLE PARTNER XOR RS; do
      case $scheme in SINGLE) mode="";; PARTNER) mode=partner;; XOR) mode=xor;; RS) mode=rs;; esac
      out=$(ours "$transport" "$size" "$scheme")
      t=$(value complete_median_seconds <<<"$out")
      done_s[$scheme]=$t
      f=""; [ -z "$mode" ] || f=$(floor "$transport" "$size" "$mode")
      r=""; [ -z "$real" ] || [ "$scheme" = RS ] || r=$(real_scr "$transport" "$size" "$scheme")
      printf '%-6s %-5s %-8s %9.3f %9s %9s %9s %9s\n' "$transport" "$size" "$scheme" "$t" \
        "$(fixed "$f")" "$(ratio "$t" "$f")" "$(fixed "$r")" "$(ratio "$t" "$r")"
      [ -z "${BENCH_PHASES:-}" ] || printf '%-21s phases (rank 0, median s): %s\n' "" "$(phases)"
      if [ "$scheme" = SINGLE ]; then
        whole=$(value median_seconds <<<"$out")
        printf '%-6s %-5s %-8s %9.3f %9.3f %9s   (the whole checkpoint: write + Complete, vs the raw write)\n' \
          "$transport" "$size" "SINGLE" "$whole" "$w" "$(ratio "$whole" "$w")"
      fi
    done
    printf '%-6s %-5s %-8s %9s   RS (2 failures) / XOR = %s\n' "$transport" "$size" "" "" \
      "$(ratio "${done_s[RS]}" "${done_s[XOR]}")"
    for scheme in PARTNER XOR RS; do
      ours "$transport" "$size" "$scheme" 1 >/dev/null
      intact=$(init "$transport" "$size" "$scheme")
      lost=$(init "$transport" "$size" "$scheme" lose)
      extra=$(echo "$lost - $intact" | bc -l)
      printf '%-6s %-5s %-8s %9.3f   SCR_Init after losing node n2 (%.3f with every node): rebuild %.3f s = %s the Complete\n' \
        "$transport" "$size" "$scheme" "$lost" "$intact" "$extra" "$(ratio "$extra" "${done_s[$scheme]}")"
    done
  done
done
