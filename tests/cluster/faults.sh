#!/usr/bin/env bash
# A seeded fault campaign on the SLURM cluster of tests/cluster/cluster.sh (needs root).
#
#   tests/cluster/faults.sh [--seed N] [--rounds R] [--kinds K1,K2,…] [--cycle] [--size BYTES]
#                           [--checkpoints C] [--keep]
#
# --cycle takes the kinds in turn instead of at random (moments and nodes stay random);
# --keep leaves the cluster and the logs (under /var/lib/scr-cluster/jobs/faults/logs).
#
# Each round runs a checkpointing job (examples/c/test_api: C checkpoints of BYTES per rank,
# every byte checkable) as `salloc --no-kill -N5 scr-run srun -N4 -n4`, and injects one
# fault at a random moment:
#   node         a node killed (its namespaces, slurmd and all), brought back after the round
#   rank         kill -9 of the application on one node
#   scr-run      kill -9 of scr-run (the allocation ends with it)
#   drain        kill -9 of the drain's `scr copy` on one node (SCR_FLUSH=0: it must drain)
#   agent-kill   kill -9 of the transfer agents (SCR_FLUSH_ASYNC=1)
#   agent-stop   SIGSTOP of the transfer agents: the ranks must take over
#   cache-full   one node's cache (its /dev/shm tmpfs) shrunk to below what a checkpoint needs
#   prefix-full  the prefix's file system filled up
#   cache-damage a cached checkpoint file on one node truncated or a byte of it flipped
#   prefix-damage a flushed checkpoint file on the prefix truncated or a byte of it flipped
#   network      one node's network cut for 3 s
#   slurmctld    slurmctld killed and started again
# After the fault is undone the job is submitted again if it did not finish (as a user
# would, at most twice). Then a fresh job restarts from the prefix and verifies every byte.
# A round is "recovered" when that verification restarts from the last checkpoint
# (C) and its data checks; "older" counts rounds where some restart came from an older
# checkpoint than the newest one completed before it; "lost" counts rounds where a
# checkpoint SCR completed could not be restarted from or failed verification. Processes or
# temporaries left behind are counted too. The same seed gives the same faults at the same
# moments (their effect still depends on timing). Prints a table; exits 1 if anything was
# lost or left behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$(pwd)
seed=1 rounds=24 kinds_arg=all size=262144 ckpts=12 keep=0 cycle=0
while [ $# -gt 0 ]; do
  case $1 in
    --seed) seed=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --kinds) kinds_arg=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --checkpoints) ckpts=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --cycle) cycle=1; shift ;;
    -h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "faults: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
all_kinds=(node rank scr-run drain agent-kill agent-stop cache-full prefix-full cache-damage prefix-damage network slurmctld)
if [ "$kinds_arg" = all ]; then kinds=("${all_kinds[@]}"); else IFS=, read -r -a kinds <<< "$kinds_arg"; fi
for k in "${kinds[@]}"; do
  printf '%s\n' "${all_kinds[@]}" | grep -qx -- "$k" || { echo "faults: unknown fault kind '$k' (${all_kinds[*]})" >&2; exit 2; }
done

STATE=/var/lib/scr-cluster
FULL=/var/lib/scr-faults          # a small file system for the prefix-full rounds
harness=$src/tests/cluster/cluster.sh
export SLURM_CONF=$STATE/slurm.conf PDSH_RCMD_TYPE=ssh USER=root

# --- build: the commands, libscr and the application, copied where every node sees them
echo "faults: building"
cargo build --quiet -p scr-launcher -p scr-runtime
# the prefix-full file system must exist before the nodes' mount namespaces are made
mkdir -p "$FULL"
mountpoint -q "$FULL" || mount -t tmpfs -o size=16m scr-faults "$FULL"
"$harness" up 5 >/dev/null
cleanup() {
  [ $keep -eq 1 ] || "$harness" down >/dev/null 2>&1 || true
  umount "$FULL" 2>/dev/null || true
}
trap cleanup EXIT
J=$STATE/jobs/faults
rm -rf "$J"; mkdir -p "$J/bin" "$J/logs"
cp target/debug/libscr_runtime.so "$J/libscr.so"
cp target/debug/scr target/debug/scr-run "$J/bin/"
mpicc examples/c/test_api.c -I lib/include -L"$J" -lscr -Wl,-rpath,"$J" -o "$J/test_api"

RANDOM=$seed
rnd() { echo $((RANDOM % $1)); }

# --- the job
common_env=(SCR_CACHE_BASE=/dev/shm SCR_COPY_TYPE=XOR SCR_SET_SIZE=4 SCR_FLUSH=3
  SCR_RUNS=3 SCR_RUN_DELAY=0 SCR_CRC_ON_COPY=1 SCR_CRC_ON_FLUSH=1 SCR_LOCK_TIMEOUT=20
  TEST_API_SLEEP_MS=400 TEST_API_TIMES=1 TEST_API_UNTIL=$ckpts)
submit() { # LOG PREFIX [VAR=VALUE…]: one job of checkpoints of $round_size bytes per rank;
  # returns its exit status
  local log=$1 prefix=$2; shift 2
  (cd "$prefix" && env "${common_env[@]}" "$@" SCR_PREFIX="$prefix" \
    timeout 150 salloc --no-kill -N5 "$J/bin/scr-run" srun -N4 -n4 "$J/test_api" "$round_size" "$ckpts") \
    >> "$log" 2>&1
}

# whether checkpoint C is complete on the prefix, as the index lists it
finished() {
  "$J/bin/scr" index -p "$1" --list 2>/dev/null | awk -v want="ckpt.$ckpts" '$2 == "YES" && $NF == want { found = 1 } END { exit !found }'
}

# --- the faults: inject KIND NODE DELAY_MS LOG PREFIX, then undo KIND NODE PREFIX
wait_for() { # PATTERN SECONDS: waits until a process matching PATTERN runs
  local i
  for i in $(seq $(($2 * 20))); do pgrep -f "$1" >/dev/null && return 0; sleep 0.05; done
  return 1
}
# damage FILE flip|truncate: a byte in the middle flipped, or the file cut to 100 bytes
damage='import sys
p, how = sys.argv[1], sys.argv[2]
b = bytearray(open(p, "rb").read())
if how == "flip":
    b[len(b) // 2] ^= 0xff
else:
    b = b[:100]
open(p, "wb").write(b)'
inject() {
  local kind=$1 node=$2 delay=$3 log=$4 prefix=$5 f
  local how=flip; [ $((delay % 2)) -eq 0 ] || how=truncate
  sleep "$(echo "$delay / 1000" | bc -l)"
  echo "faults: injecting $kind on node$node after $delay ms" >> "$log"
  case $kind in
    node) "$harness" kill-node "$node" ;;
    rank) "$harness" kill-app "$node" test_api ;;
    # (patterns anchored at the program itself: not the shells, ssh or timeout around it)
    scr-run) pkill -9 -f "^$J/bin/scr-run " || true ;;
    drain) wait_for "^$J/bin/scr copy" 60 && sleep "0.0$(rnd 10)" && pkill -9 -f "^$J/bin/scr copy" || true ;;
    agent-kill) wait_for "^$J/bin/scr transfer" 20 && pkill -9 -f "^$J/bin/scr transfer" || true ;;
    agent-stop) wait_for "^$J/bin/scr transfer" 20 && pkill -STOP -f "^$J/bin/scr transfer" || true ;;
    cache-full) "$harness" shm-size "$node" 600k 2>>"$log" || true ;;
    prefix-full) fallocate -l "$(df --output=avail -B1 "$FULL" | tail -1)" "$FULL/filler" 2>/dev/null ||
                   dd if=/dev/zero of="$FULL/filler" bs=64k 2>/dev/null || true ;;
    cache-damage)
      echo "faults: damage: $how" >> "$log"
      f=$("$harness" exec "$node" sh -c 'find /dev/shm -name "rank_*.ckpt" | sort | tail -1' 2>/dev/null || true)
      [ -n "$f" ] && "$harness" exec "$node" python3 -c "$damage" "$f" "$how" 2>>"$log" || true ;;
    prefix-damage)
      echo "faults: damage: $how" >> "$log"
      f=$(find "$prefix" -name 'rank_*.ckpt' 2>/dev/null | sort | tail -1)
      [ -n "$f" ] && python3 -c "$damage" "$f" "$how" 2>>"$log" || true ;;
    network) "$harness" partition "$node"; sleep 3; "$harness" heal "$node" ;;
    slurmctld) "$harness" restart-ctld ;;
  esac
}
undo() {
  local kind=$1 node=$2
  case $kind in
    node) "$harness" revive "$node" >/dev/null ;;
    agent-stop) pkill -CONT -f "^$J/bin/scr transfer" || true ;;
    cache-full) "$harness" shm-size "$node" 50% || true ;;
    prefix-full) rm -f "$FULL/filler" ;;
    network) "$harness" heal "$node" ;;
  esac
  # let SLURM see every node idle again
  for _ in $(seq 300); do
    [ "$(sinfo -h -N -o %N -t idle 2>/dev/null | wc -l)" -eq 5 ] && break
    scontrol update nodename=node[1-5] state=resume >/dev/null 2>&1 || true
    sleep 0.2
  done
}

# --- rounds
declare -A n_rounds n_recovered n_older n_resubmitted n_lost n_left
for k in "${kinds[@]}"; do n_rounds[$k]=0 n_recovered[$k]=0 n_older[$k]=0 n_resubmitted[$k]=0 n_lost[$k]=0 n_left[$k]=0; done
started=$(date +%s)
for r in $(seq 1 "$rounds"); do
  pick=$(rnd ${#kinds[@]})
  [ $cycle -eq 0 ] || pick=$(((r - 1) % ${#kinds[@]}))
  kind=${kinds[$pick]}
  node=$((1 + $(rnd 4)))
  delay=$((800 + $(rnd 4500)))
  log=$J/logs/round$r.$kind.log
  if [ "$kind" = prefix-full ]; then prefix=$FULL/prefix; else prefix=$J/prefix; fi
  rm -rf "$J/prefix" "$FULL/prefix" "$FULL/filler"; mkdir -p "$prefix"
  extra=() round_size=$size
  case $kind in
    # big enough that the drain takes a while: the kill must find it running
    drain) extra=(SCR_FLUSH=0 SCR_FILE_BUF_SIZE=65536) round_size=33554432 ;;
    agent-kill|agent-stop) extra=(SCR_FLUSH_ASYNC=1 SCR_FLUSH_ASYNC_STALL=2) ;;
  esac
  inject "$kind" "$node" "$delay" "$log" "$prefix" &
  injector=$!
  status=0; submit "$log" "$prefix" "${extra[@]}" || status=$?
  wait "$injector" 2>/dev/null || true
  undo "$kind" "$node"
  submissions=1
  if [ "$kind" = drain ] && ! grep -q "(ckpt.$ckpts) drained" "$log"; then
    # the operator runs the drain again for the job whose drain was killed (its caches
    # are still on the nodes), as SCR's scr_postrun can be run by hand
    jobid=$(grep -o 'Granted job allocation [0-9]*' "$log" | head -1 | awk '{print $4}')
    echo "faults: draining job $jobid again" >> "$log"
    (cd "$prefix" && env SCR_JOB_ID="$jobid" SCR_PREFIX="$prefix" \
      timeout 120 salloc -N5 "$J/bin/scr" postrun -p "$prefix") >> "$log" 2>&1 || true
    submissions=2
  fi
  # finished: the last checkpoint is complete on the prefix (an exit status alone does not
  # tell: salloc may exit 0 when scr-run was killed)
  while ! finished "$prefix" && [ $submissions -lt 3 ]; do
    echo "faults: the job did not finish (exit $status); submitting it again" >> "$log"
    submissions=$((submissions + 1)); status=0
    submit "$log" "$prefix" "${extra[@]}" || status=$?
  done
  # verification: a new job restarts from the prefix and checks every byte
  vlog=$J/logs/round$r.verify.log
  (cd "$prefix" && env SCR_CACHE_BASE=/dev/shm SCR_PREFIX="$prefix" TEST_API_UNTIL="$ckpts" \
    timeout 120 salloc -N4 srun -N4 -n4 "$J/test_api" "$round_size" 0) > "$vlog" 2>&1 || true
  n_rounds[$kind]=$((n_rounds[$kind] + 1))
  [ $submissions -gt 1 ] && n_resubmitted[$kind]=$((n_resubmitted[$kind] + 1))
  if grep -q "restarted from ckpt.$ckpts (timestep $ckpts), data verified" "$vlog"; then
    n_recovered[$kind]=$((n_recovered[$kind] + 1)); verdict=recovered
  else
    n_lost[$kind]=$((n_lost[$kind] + 1)); verdict=LOST
  fi
  # a restart from a checkpoint older than the newest one completed before it
  if awk -v dummy=0 '
      /test_api: checkpoint [0-9]+ took/ { t = $3 + 0; if (t > newest) newest = t }
      /test_api: restarted from ckpt\./ { split($4, a, "."); if (a[2] + 0 < newest) older = 1 }
      END { exit older ? 0 : 1 }' "$log"; then
    n_older[$kind]=$((n_older[$kind] + 1))
  fi
  # nothing left behind: processes of this campaign's job, temporaries on the prefix
  left=$(pgrep -f "$J/" | grep -vx "$$" | wc -l || true)
  temps=$(find "$prefix" -name '.*.tmp.*' -o -name '.*.new.*' 2>/dev/null | wc -l)
  if [ "$left" -gt 0 ] || [ "$temps" -gt 0 ]; then
    n_left[$kind]=$((n_left[$kind] + 1))
    echo "faults: round $r left $left process(es) and $temps temporary file(s)" >> "$log"
    pkill -9 -f "$J/" || true
  fi
  for i in 1 2 3 4 5; do "$harness" wipe-cache "$i" 2>/dev/null || true; done
  printf 'round %3d  %-12s node%d  %5d ms  %s  submissions %d\n' "$r" "$kind" "$node" "$delay" "$verdict" "$submissions"
done

# --- the table
echo
printf '%-13s %6s %9s %6s %11s %5s %10s\n' "fault" rounds recovered older resubmitted lost "left over"
bad=0
for k in "${kinds[@]}"; do
  [ "${n_rounds[$k]}" -gt 0 ] || continue
  printf '%-13s %6d %9d %6d %11d %5d %10d\n' "$k" "${n_rounds[$k]}" "${n_recovered[$k]}" "${n_older[$k]}" \
    "${n_resubmitted[$k]}" "${n_lost[$k]}" "${n_left[$k]}"
  bad=$((bad + n_lost[$k] + n_left[$k]))
done
echo "seed $seed, $rounds rounds, $(( $(date +%s) - started )) s; logs in $J/logs"
[ $bad -eq 0 ]
