#!/usr/bin/env bash
# Relaunch overhead of scr-run: the time from one run's exit to the next run's
# start with SCR_RUN_DELAY=0. Target: under 2 s for 4 nodes.
#
#   ./benches/relaunch.sh           4 emulated nodes (SCR_NODELIST) on this machine, 10
#                                   relaunches of a shell that exits 1
#   ./benches/relaunch.sh --slurm   the real SLURM cluster of tests/cluster (needs root):
#                                   salloc -N5, scr-run srun -N4, 6 runs; node3 is killed
#                                   during run 3, so runs 4-6 start without it on the spare
#
# "app exit -> next start" is what the application sees (rank 0's last line to the next
# run's first); "scr-run's share" is from srun returning to scr-run starting the next srun
# (its down-node tests and the launch), read from its --json events. After a node death
# the first figure also holds SLURM noticing it (SlurmdTimeout), which scr-run does not add.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build   # what it needs, installed when missing (needs root then)
cargo build --release --quiet -p scr-launcher

gaps() { # starts ends: the gaps between each end and the next start
  paste <(tail -n +2 "$1") <(head -n -1 "$2") | awk '{printf "%.3f\n", $1 - $2}'
}
summary() { sort -n | awk -v what="$1" '{g[NR]=$1} END {printf "%s over %d relaunches: median %.3f s, max %.3f s (target < 2 s)\n", what, NR, g[int((NR+1)/2)], g[NR]}'; }

if [ "${1:-}" != --slurm ]; then
  scr_run=$(pwd)/target/release/scr-run
  work=$(mktemp -d /tmp/scr-relaunch.XXXXXX); trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/prefix" "$work/cache"
  (cd "$work/prefix" && SCR_PREFIX="$work/prefix" SCR_CACHE_BASE="$work/cache" SCR_NODELIST='n[1-4]' \
    SCR_RUNS=11 SCR_RUN_DELAY=0 SCR_JOB_ID=relaunch \
    "$scr_run" sh -c "date +%s.%N >> '$work/starts'; date +%s.%N >> '$work/ends'; exit 1" \
    2>/dev/null) || true
  gaps "$work/starts" "$work/ends" | summary "relaunch gap (local)"
  exit 0
fi

cluster=tests/cluster/cluster.sh
state=${SCR_CLUSTER_STATE:-/var/lib/scr-cluster}
"$cluster" up 5 >/dev/null
work=$state/jobs/relaunch-bench # outside /tmp: every node has its own /tmp
keep=/tmp/scr-relaunch-slurm # the job's events and messages outlive the cluster
trap 'rm -rf "$keep"; cp -r "$work" "$keep" 2>/dev/null; cp "$state"/log/slurmctld.log "$keep"/ 2>/dev/null; [ -n "${KEEP_CLUSTER:-}" ] || "$cluster" down >/dev/null 2>&1 || true' EXIT
rm -rf "$work"; mkdir -p "$work/bin" "$work/prefix"
cp target/release/scr target/release/scr-run "$work/bin/"
cat > "$work/app.sh" <<APP
#!/bin/sh
[ "\$SLURM_PROCID" = 0 ] && date +%s.%N >> $work/starts
sleep 2
[ "\$SLURM_PROCID" = 0 ] && date +%s.%N >> $work/ends
exit 1
APP
chmod +x "$work/app.sh"
(
  while [ "$(cat "$work/starts" 2>/dev/null | wc -l)" -lt 3 ]; do sleep 0.1; done
  sleep 1; "$cluster" kill-node 3 >/dev/null
) &
killer=$!
(cd "$work/prefix" && env -u SCR_NODELIST -u SCR_JOB_ID -u SLURM_JOBID -u SLURM_JOB_ID \
  -u SCR_CONF_FILE SLURM_CONF="$state/slurm.conf" PDSH_RCMD_TYPE=ssh USER=root \
  SCR_PREFIX="$work/prefix" SCR_RUN_DELAY=0 SCR_RUNS=6 SCR_MIN_NODES=4 \
  timeout 120 salloc --no-kill -N5 "$work/bin/scr-run" --json srun -N4 -n4 "$work/app.sh" \
  > "$work/events.json" 2> "$work/stderr") || true
wait "$killer" || true
mapfile -t app < <(gaps "$work/starts" "$work/ends")
mapfile -t own < <(python3 - "$work/events.json" <<'PY'
import json, sys, datetime
ended = None
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    t = datetime.datetime.fromisoformat(e["time"]).timestamp()
    if e["event"] == "run_ended":
        ended = t
    elif e["event"] == "launch" and ended is not None:
        print(f"{t - ended:.3f}")
PY
)
excluded=$(grep -o '"exclude":"[^"]*"' "$work/events.json" | tail -1 || true)
echo "SLURM, 4 of 5 nodes, node3 killed during run 3 (last launch $excluded)"
printf '  relaunch  app exit -> next start  scr-run'"'"'s share\n'
for i in "${!app[@]}"; do
  note=""; [ "$i" = 2 ] && note="  (node3 died in this run)"
  printf '  %d -> %d    %8s s              %8s s%s\n' $((i + 1)) $((i + 2)) "${app[$i]}" "${own[$i]:-?}" "$note"
done
{ for i in "${!app[@]}"; do [ "$i" != 2 ] && echo "${app[$i]}"; done; } | summary "app exit -> next start, healthy relaunches"
printf '%s\n' "${own[@]}" | summary "scr-run's share, all relaunches"
echo "scr-run's events and messages: $keep/events.json, $keep/stderr"
