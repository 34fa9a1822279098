#!/usr/bin/env bash
# Relaunch overhead of scr-run (issue 6): the time from one run's exit to the next run's
# start with SCR_RUN_DELAY=0, on 4 emulated nodes (SCR_NODELIST) on this machine. Each run is
# a shell that records when it started and when it exits (exit 1, so scr-run relaunches).
# Prints the median and maximum gap over 10 relaunches; target: under 2 s.
# Run: ./benches/relaunch.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p scr-launcher
scr_run=$(pwd)/target/release/scr-run
work=$(mktemp -d /tmp/scr-relaunch.XXXXXX); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/prefix" "$work/cache"
runs=11
(cd "$work/prefix" && SCR_PREFIX="$work/prefix" SCR_CACHE_BASE="$work/cache" SCR_NODELIST='n[1-4]' \
  SCR_RUNS=$runs SCR_RUN_DELAY=0 SCR_JOB_ID=relaunch \
  "$scr_run" sh -c "date +%s.%N >> '$work/starts'; date +%s.%N >> '$work/ends'; exit 1" \
  2>/dev/null) || true
paste <(tail -n +2 "$work/starts") <(head -n -1 "$work/ends") |
  awk '{print $1 - $2}' | sort -n |
  awk '{g[NR]=$1} END {printf "relaunch gap over %d relaunches: median %.3f s, max %.3f s (target < 2 s)\n", NR, g[int((NR+1)/2)], g[NR]}'
