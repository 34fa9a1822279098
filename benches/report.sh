#!/usr/bin/env bash
# `scr report` on a large event log: elapsed time and maximum resident set size (from
# /usr/bin/time -v) of the HTML page and of --json, for a generated log of SIZE_MB.
# The log is what a long job writes (runs of 200 checkpoints, each flushed, one failed
# checkpoint in 50, runs that die and restart from their newest checkpoint), with what a
# neighbour could add: lines that are no events, and one line of 8 MiB.
# Run: ./benches/report.sh [SIZE_MB]   (default: 120; SCR_BIN=path measures another scr)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build   # what it needs, installed when missing (needs root then)
size=${1:-120}
if [ -z "${SCR_BIN:-}" ]; then
  cargo build --release --quiet -p scr-launcher --bin scr
  SCR_BIN=$(pwd)/target/release/scr
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/prefix/.scr"
/usr/bin/python3 - "$work/prefix/.scr/log" "$size" <<'PY'
import datetime, sys
path, size = sys.argv[1], int(sys.argv[2]) << 20
t = datetime.datetime(2026, 11, 23, 10, tzinfo=datetime.timezone.utc)
out, written, run, dset = open(path, "w"), 0, 0, 0
def line(text):
    global written
    s = f"{t.isoformat(timespec='milliseconds')} {text} user=alice jobid={run // 5}\n"
    out.write(s); written += len(s)
while written < size:
    run += 1
    line("event=START ranks=1024 nodes=64")
    if dset:
        t += datetime.timedelta(seconds=30)
        line(f"event=FETCH name=ckpt.{dset} dset={dset} bytes=68719476736 secs=30.000 mb_per_s=2184.5")
        line(f"event=RESTART name=ckpt.{dset} dset={dset}")
    for i in range(200):
        dset += 1; t += datetime.timedelta(seconds=600)
        if i % 50 == 49:
            line(f"event=CHECKPOINT_FAILED name=ckpt.{dset} dset={dset} failed_ranks=3 secs=4.000")
            continue
        line(f"event=CHECKPOINT name=ckpt.{dset} dset={dset} bytes=68719476736 secs=5.000 mb_per_s=13107.2")
        t += datetime.timedelta(seconds=40)
        line(f"event=FLUSH name=ckpt.{dset} dset={dset} bytes=68719476736 secs=40.000 mb_per_s=1638.4 async=1")
        if i % 20 == 0:
            out.write("not an event\n")
    if run == 3:
        out.write("x" * (8 << 20) + "\n")
    if run % 4:
        line("event=END")
PY
printf 'log: %s bytes, %s lines\n' "$(stat -c %s "$work/prefix/.scr/log")" "$(wc -l < "$work/prefix/.scr/log")"

measure() { # what, then the command
  local what=$1; shift
  /usr/bin/time -v "$@" > /dev/null 2> "$work/time" || { cat "$work/time" >&2; exit 1; }
  local elapsed user rss
  elapsed=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time")
  user=$(sed -n 's/.*User time (seconds): //p' "$work/time")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time")
  printf '%-8s elapsed %8s   user %7s s   max RSS %8.1f MiB\n' "$what" "$elapsed" "$user" \
    "$(echo "$rss / 1024" | bc -l)"
}
measure "page" "$SCR_BIN" report "$work/prefix" -o "$work/page.html"
measure "--json" "$SCR_BIN" report "$work/prefix" --json
