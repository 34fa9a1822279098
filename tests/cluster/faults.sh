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
# fault at a random moment (one on a node: counted from the application's start there):
#   node         a node killed (its namespaces, slurmd and all), brought back after the round
#   rank         kill -9 of the application on one node
#   scr-run      kill -9 of scr-run (the allocation ends with it)
#   drain        kill -9 of the drain's `scr copy` on one node (SCR_FLUSH=0: it must drain)
#   agent-kill   kill -9 of the transfer agents (SCR_FLUSH_ASYNC=1)
#   agent-stop   SIGSTOP of the transfer agents: the ranks must take over
#   cache-full   one node's cache (its /dev/shm tmpfs) shrunk: less room left than a
#                checkpoint needs
#   prefix-full  the prefix's file system filled up
#   cache-damage a cached checkpoint file on one node truncated or a byte of it flipped
#   prefix-damage a flushed checkpoint file on the prefix truncated or a byte of it flipped
#   network      one node's network cut for 3 s
#   slurmctld    slurmctld killed and started again
# Each injection says in the round's log whether it took effect ("faults: injected KIND …",
# after the action succeeded while the job ran) or not ("faults: MISSED KIND: why": the
# drain or the agents never ran, the application or the job had already ended, no file to
# damage, the cache could not be shrunk, …). After the fault is undone the job is submitted
# again if it did not finish (as a user would, at most twice), and after a killed drain the
# operator runs the drain again. A job "finished" when the application's own output, over
# all its submissions, shows checkpoint C completed ("test_api: checkpoint C took", which it
# prints only for a checkpoint SCR completed): never what the index under test says. Then a fresh job restarts from the prefix
# and verifies every byte (test_api checks each against a pattern encoding its place).
# Columns of the table, per fault kind:
#   injected     rounds whose fault took effect; missed: those whose fault did not (not
#                counted as recovered: they tested nothing)
#   recovered    injected, finished, and the verification restarted from the newest
#                checkpoint the application saw complete (C) and its data checked
#   older        some restart (within the job or a resubmission) came from a checkpoint
#                older than the newest one the application saw complete before it
#   resubmitted  rounds whose job was submitted more than once
#   over budget  rounds that needed more resubmissions than the kind's budget (below: what
#                SCR promises for that fault), or never finished
#   lost         the verification did not restart from the newest checkpoint the
#                application saw complete, or that checkpoint failed verification
#   left over    processes or temporaries left behind
# The same seed gives the same faults at the same moments (their effect still depends on
# timing). Prints a table; exits 1 if any round was lost, left something behind, missed its
# fault or went over budget.
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
    -h|--help) sed -n '2,50p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
# what the campaign needs (MPICH, SLURM, munge, pdsh, …), installed when missing
./scripts/setup.sh --no-build
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

# rnd N sets R to a number below N: not $(rnd N), whose subshell bash reseeds (the same seed
# would not give the same rounds)
RANDOM=$seed
rnd() { R=$((RANDOM % $1)); }

# --- the job
# SCR_MIN_NODES: the job needs 4 of its 5 nodes. Without it scr-run, as SCR's scr_srun, needs
# as many nodes as the last run used (its nodes file, written at SCR_Init), else all 5: a node
# lost before the first run's SCR_Init would end the job for want of the spare.
common_env=(SCR_MIN_NODES=4 SCR_CACHE_BASE=/dev/shm SCR_COPY_TYPE=XOR SCR_SET_SIZE=4 SCR_FLUSH=3
  SCR_RUNS=3 SCR_RUN_DELAY=0 SCR_CRC_ON_COPY=1 SCR_CRC_ON_FLUSH=1 SCR_LOCK_TIMEOUT=20
  TEST_API_SLEEP_MS=400 TEST_API_TIMES=1 TEST_API_UNTIL=$ckpts)
# the application's output line-buffered (stdbuf): a rank killed mid-run would otherwise take
# the checkpoints it saw complete, still in its stdio buffer, with it, and the oracle below
# reads them
app=(stdbuf -oL "$J/test_api")
submit() { # LOG PREFIX [VAR=VALUE…]: one job of checkpoints of $round_size bytes per rank;
  # returns its exit status
  local log=$1 prefix=$2; shift 2
  echo "faults: submitting the job" >> "$log"
  (cd "$prefix" && env "${common_env[@]}" "$@" SCR_PREFIX="$prefix" \
    timeout "$job_timeout" salloc --no-kill -N5 "$J/bin/scr-run" srun -N4 -n4 "${app[@]}" "$round_size" "$ckpts") \
    >> "$log" 2>&1 || {
    local status=$?
    # the campaign's own bound, not the fault, ended it: said, so a round over budget tells
    [ $status -ne 124 ] || echo "faults: the job ran past the campaign's bound of $job_timeout s" >> "$log"
    return $status
  }
}

# The newest checkpoint the application saw complete in LOG (0: none), from its own words
# (test_api says "checkpoint N took" only for a checkpoint SCR completed). Not the index:
# that is the code under test's claim.
newest_completed() {
  awk '/^test_api: checkpoint [0-9]+ took/ { t = $3 + 0; if (t > newest) newest = t }
       END { print newest + 0 }' "$1"
}

# Resubmissions each kind may need: what SCR promises for that fault. A round needing more is
# "over budget" and fails the campaign.
declare -A budget=(
  [node]=0          # scr-run relaunches without the dead node, on the spare (-N5 for -N4),
                    # from the XOR rebuild in cache; a node lost in the drain is rebuilt there
  [rank]=0          # scr-run relaunches the application within the allocation
  [scr-run]=1       # the allocation ends with scr-run: the user submits again
  [drain]=0         # the application finished; the operator runs the drain again (its own
                    # step below, not a submission)
  [agent-kill]=0    # the ranks take the flush over from dead agents
  [agent-stop]=0    # … and from stopped ones (SCR_FLUSH_ASYNC_STALL)
  [cache-full]=1    # the cache stays too small until the job ends (it is undone after):
                    # scr-run checks free space before the first run only, so its relaunches
                    # land on the same node and fail again
  [prefix-full]=1   # the prefix stays full until the job ends: no flush can succeed in it
  [cache-damage]=0  # a damaged cached file is found by its CRC and rebuilt from XOR or
                    # written again
  [prefix-damage]=0 # a damaged flushed file is found by its CRC when read; the job goes on
  [network]=0       # the cut (3 s) is shorter than SlurmdTimeout (10 s): the node stays up,
                    # and a run that dies of it is relaunched (without the node if SLURM
                    # marked it down: SCR_MIN_NODES=4)
  [slurmctld]=0     # running jobs survive a slurmctld restart (its state is saved)
)
max_resubmissions=2

# --- the faults: inject KIND NODE DELAY_MS LOG PREFIX, then undo KIND NODE PREFIX
# The round's first submission has ended once $J/round.over exists: waiting for a process of
# the job is pointless then.
wait_for() { # PATTERN SECONDS: waits until a process matching PATTERN runs
  local i
  for i in $(seq $(($2 * 20))); do
    pgrep -f "$1" >/dev/null && return 0
    [ ! -e "$J/round.over" ] || return 1
    sleep 0.05
  done
  return 1
}
holder() { cat "$STATE/pids/holder.node$1"; }
# on_node_p I pgrep|pkill ARGS…: of node I's processes only (nodes share the PID namespace)
on_node_p() { local i=$1 cmd=$2; shift 2; "$cmd" --ns "$(holder "$i")" --nslist net "$@"; }
wait_for_app() { # NODE SECONDS: waits until the application runs on node NODE
  local i
  for i in $(seq $(($2 * 20))); do
    on_node_p "$1" pgrep -x test_api >/dev/null && return 0
    [ ! -e "$J/round.over" ] || return 1
    sleep 0.05
  done
  return 1
}
job_running() { pgrep -f "^$J/bin/scr-run " >/dev/null; }
job_on_node() { on_node_p "$1" pgrep -f "^$J/" >/dev/null 2>&1; }
# damage FILE flip|truncate: a byte in the middle flipped, or the file cut to 100 bytes; fails
# (saying why) unless a file that existed changed
damage='import sys
p, how = sys.argv[1], sys.argv[2]
try:
    b = bytearray(open(p, "rb").read())
except OSError as e:
    sys.exit("gone: %s" % e)
n = len(b)
if how == "flip":
    if n == 0:
        sys.exit("%s is empty" % p)
    b[n // 2] ^= 0xff
elif n <= 100:
    sys.exit("%s has only %d bytes" % (p, n))
else:
    b = b[:100]
open(p, "wb").write(b)
print("%s: %s (%d bytes before, %d after)" % (p, "byte %d flipped" % (n // 2) if how == "flip" else "truncated", n, len(b)))'
# inject_KIND NODE LOG PREFIX HOW: does the fault; prints what it did and succeeds only when
# it took effect, else prints why not and fails
inject_node() {
  job_on_node "$1" || { echo "no process of the job on node$1"; return 1; }
  "$harness" kill-node "$1" 2>>"$2" || { echo "kill-node failed"; return 1; }
  if ip netns list | grep -qw "scr-node$1"; then echo "node$1 still up"; return 1; fi
  echo "node$1 killed with the job on it"
}
inject_rank() {
  # the application may be between runs (a relaunch) or not started yet: wait a little
  local i
  for i in $(seq 60); do
    on_node_p "$1" pkill -9 -x test_api && { echo "test_api killed on node$1"; return 0; }
    job_running || break
    sleep 0.05
  done
  echo "no test_api on node$1"; return 1
}
inject_scr-run() {
  # (patterns anchored at the program itself: not the shells, ssh or timeout around it)
  pkill -9 -f "^$J/bin/scr-run " && { echo "scr-run killed"; return 0; }
  echo "no scr-run running"; return 1
}
inject_drain() {
  # on that node only (a pkill without --ns reaches every node's copy: then two ranks of an
  # XOR set are missing and no drain can complete); it begins after the application, which
  # takes a minute for these big checkpoints
  # a node's copy takes a tenth of a second on these file systems: a look followed by a kill
  # missed it now and then, so the kill itself is what is tried, as soon as it can land
  local i
  for i in $(seq 15000); do
    on_node_p "$1" pkill -9 -f "^$J/bin/scr copy" && { echo "scr copy killed on node$1"; return 0; }
    [ ! -e "$J/round.over" ] || { echo "no scr copy ran on node$1 (or each ended first)"; return 1; }
    sleep 0.01
  done
  echo "no scr copy on node$1 within its wait"; return 1
}
inject_agent-kill() {
  wait_for "^$J/bin/scr transfer" 150 && pkill -9 -f "^$J/bin/scr transfer" && { echo "scr transfer killed"; return 0; }
  echo "no scr transfer ran"; return 1
}
inject_agent-stop() {
  wait_for "^$J/bin/scr transfer" 150 && pkill -STOP -f "^$J/bin/scr transfer" && { echo "scr transfer stopped"; return 0; }
  echo "no scr transfer ran"; return 1
}
inject_cache-full() {
  # to what the tmpfs holds plus 64k, less room than one checkpoint file needs (it holds MPI's
  # shared memory too, a few MB, so no fixed size would do), at a moment the cache holds one
  # dataset: shrunk while a second one is being written, the room freed when the older one
  # goes would let every later checkpoint fit. A tmpfs cannot shrink below what it holds:
  # try again as the cache changes.
  local i used size avail
  for i in $(seq 60); do
    job_on_node "$1" || { echo "no process of the job on node$1"; return 1; }
    if [ "$("$harness" exec "$1" sh -c 'ls -d /dev/shm/*/scr.*/scr.dataset.* 2>/dev/null | wc -l')" -eq 1 ]; then
      used=$("$harness" exec "$1" df --output=used -B1 /dev/shm | tail -1)
      size=$(((used + 65536 + 4095) / 4096 * 4096))
      if "$harness" shm-size "$1" "$size" 2>/dev/null; then
        avail=$("$harness" exec "$1" df --output=avail -B1 /dev/shm | tail -1)
        [ "$avail" -lt "$round_size" ] &&
          { echo "node$1's /dev/shm shrunk to $size bytes, $avail free"; return 0; }
      fi
    fi
    sleep 0.05
  done
  echo "node$1's /dev/shm could not be shrunk below one checkpoint's room"; return 1
}
inject_prefix-full() {
  local avail
  job_running || { echo "the job had ended"; return 1; }
  fallocate -l "$(df --output=avail -B1 "$FULL" | tail -1)" "$FULL/filler" 2>/dev/null ||
    dd if=/dev/zero of="$FULL/filler" bs=64k 2>/dev/null || true
  avail=$(df --output=avail -B1 "$FULL" | tail -1)
  [ "$avail" -lt 65536 ] && { echo "the prefix's file system filled ($avail bytes left)"; return 0; }
  echo "the prefix's file system still has $avail bytes"; return 1
}
inject_cache-damage() {
  # the newest cached file at that moment (or once there is one); it may vanish between the
  # look and the damage
  local i f
  for i in $(seq 300); do
    job_running || { echo "the job had ended"; return 1; }
    f=$("$harness" exec "$1" sh -c 'find /dev/shm -name "rank_*.ckpt" | sort | tail -1' 2>/dev/null || true)
    [ -n "$f" ] && "$harness" exec "$1" python3 -c "$damage" "$f" "$4" 2>>"$2" && return 0
    sleep 0.05
  done
  echo "no cached checkpoint file on node$1 to damage"; return 1
}
inject_prefix-damage() {
  # at that moment or, before the first flush, once there is a flushed file
  local i f
  for i in $(seq 300); do
    job_running || { echo "the job had ended"; return 1; }
    f=$(find "$3" -name 'rank_*.ckpt' 2>/dev/null | sort | tail -1)
    [ -n "$f" ] && python3 -c "$damage" "$f" "$4" 2>>"$2" && return 0
    sleep 0.05
  done
  echo "no flushed checkpoint file on the prefix to damage"; return 1
}
inject_network() {
  job_on_node "$1" || { echo "no process of the job on node$1"; return 1; }
  "$harness" partition "$1"
  ip link show "scrv$1" | grep -q 'state DOWN' || { "$harness" heal "$1"; echo "node$1's link did not go down"; return 1; }
  sleep 3
  "$harness" heal "$1"
  echo "node$1's network cut for 3 s"
}
inject_slurmctld() {
  local before
  job_running || { echo "the job had ended"; return 1; }
  before=$(cat "$STATE/pids/slurmctld")
  "$harness" restart-ctld
  [ "$(cat "$STATE/pids/slurmctld")" != "$before" ] && sinfo -h >/dev/null 2>&1 &&
    { echo "slurmctld restarted"; return 0; }
  echo "slurmctld did not restart"; return 1
}
inject() {
  local kind=$1 node=$2 delay=$3 log=$4 prefix=$5 what
  local how=flip; [ $((delay % 2)) -eq 0 ] || how=truncate
  # a fault on one node comes DELAY after the application started there, so that it lands
  # mid-run (not before the job reached the node, nor after its end); the others count from
  # the submission
  case $kind in node|rank|network|cache-full|cache-damage) wait_for_app "$node" 60 || true ;; esac
  sleep "$(echo "$delay / 1000" | bc -l)"
  echo "faults: injecting $kind on node$node after $delay ms" >> "$log"
  # the marker comes after the action: "injected" only once it took effect
  if what=$("inject_$kind" "$node" "$log" "$prefix" "$how"); then
    echo "faults: injected $kind on node$node: $what"
  else
    echo "faults: MISSED $kind on node$node: $what"
  fi >> "$log"
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
declare -A n_rounds n_injected n_missed n_recovered n_older n_resubmitted n_over n_lost n_left
for k in "${kinds[@]}"; do
  n_rounds[$k]=0 n_injected[$k]=0 n_missed[$k]=0 n_recovered[$k]=0 n_older[$k]=0
  n_resubmitted[$k]=0 n_over[$k]=0 n_lost[$k]=0 n_left[$k]=0
done
started=$(date +%s)
for r in $(seq 1 "$rounds"); do
  rnd ${#kinds[@]}; pick=$R
  [ $cycle -eq 0 ] || pick=$(((r - 1) % ${#kinds[@]}))
  kind=${kinds[$pick]}
  rnd 4; node=$((1 + R))
  rnd 4500; delay=$((800 + R))
  log=$J/logs/round$r.$kind.log
  if [ "$kind" = prefix-full ]; then prefix=$FULL/prefix; else prefix=$J/prefix; fi
  rm -rf "$J/prefix" "$FULL/prefix" "$FULL/filler" "$J/round.over"; mkdir -p "$prefix"
  extra=() round_size=$size job_timeout=150
  case $kind in
    # big enough that the drain takes a while: the kill must find it running; twelve such
    # checkpoints with XOR and CRCs take a minute on an idle machine and several on a
    # loaded one, where 150 s cut the job short and counted a resubmission against the
    # drain
    drain) extra=(SCR_FLUSH=0 SCR_FILE_BUF_SIZE=65536) round_size=134217728 job_timeout=900 ;;
    agent-kill|agent-stop) extra=(SCR_FLUSH_ASYNC=1 SCR_FLUSH_ASYNC_STALL=2) ;;
  esac
  inject "$kind" "$node" "$delay" "$log" "$prefix" &
  injector=$!
  status=0; submit "$log" "$prefix" "${extra[@]}" || status=$?
  touch "$J/round.over"
  wait "$injector" 2>/dev/null || true
  undo "$kind" "$node"
  if grep -q '^faults: injected ' "$log"; then injected=1; else injected=0; fi
  if [ "$kind" = drain ] && ! grep -q "(ckpt.$ckpts) drained" "$log"; then
    # the operator runs the drain again for the job whose drain was killed (its caches
    # are still on the nodes), as SCR's scr_postrun can be run by hand
    jobid=$(grep -o 'Granted job allocation [0-9]*' "$log" | head -1 | awk '{print $4}')
    echo "faults: draining job $jobid again" >> "$log"
    (cd "$prefix" && env SCR_JOB_ID="$jobid" SCR_PREFIX="$prefix" \
      timeout 120 salloc -N5 "$J/bin/scr" postrun -p "$prefix") >> "$log" 2>&1 || true
  fi
  # finished: the application saw the last checkpoint complete (an exit status alone does
  # not tell: salloc may exit 0 when scr-run was killed)
  resubmissions=0
  while [ "$(newest_completed "$log")" -lt "$ckpts" ] && [ $resubmissions -lt $max_resubmissions ]; do
    echo "faults: the job did not finish (exit $status); submitting it again" >> "$log"
    resubmissions=$((resubmissions + 1)); status=0
    submit "$log" "$prefix" "${extra[@]}" || status=$?
  done
  newest=$(newest_completed "$log")
  # verification: a new job restarts from the prefix and checks every byte; it must restart
  # from the newest checkpoint the application saw complete (or a newer one, completed by a
  # rank killed before it could say so)
  vlog=$J/logs/round$r.verify.log
  (cd "$prefix" && env SCR_CACHE_BASE=/dev/shm SCR_PREFIX="$prefix" TEST_API_UNTIL="$ckpts" \
    timeout 120 salloc -N4 srun -N4 -n4 "${app[@]}" "$round_size" 0) > "$vlog" 2>&1 || true
  n_rounds[$kind]=$((n_rounds[$kind] + 1))
  [ $resubmissions -gt 0 ] && n_resubmitted[$kind]=$((n_resubmitted[$kind] + 1))
  over=0
  if [ "$newest" -lt "$ckpts" ] || [ $resubmissions -gt "${budget[$kind]}" ]; then
    over=1 n_over[$kind]=$((n_over[$kind] + 1))
  fi
  if awk -v want="$newest" '
      /^test_api: restarted from ckpt\.[0-9]+ \(timestep [0-9]+\), data verified/ {
        split($4, a, "."); if (a[2] + 0 >= want) ok = 1 }
      /^test_api: no checkpoint/ { if (want == 0) ok = 1 }
      END { exit !ok }' "$vlog"; then
    verdict=ok
  else
    n_lost[$kind]=$((n_lost[$kind] + 1)); verdict=LOST
  fi
  if [ $injected -eq 0 ]; then
    n_missed[$kind]=$((n_missed[$kind] + 1))
    [ $verdict = LOST ] || verdict=missed
  else
    n_injected[$kind]=$((n_injected[$kind] + 1))
    if [ $verdict = ok ] && [ "$newest" -eq "$ckpts" ]; then
      n_recovered[$kind]=$((n_recovered[$kind] + 1)); verdict=recovered
    elif [ $verdict = ok ]; then
      verdict=unfinished
    fi
  fi
  # a restart from a checkpoint older than the newest one the application saw complete
  # before it
  if awk '
      /^test_api: checkpoint [0-9]+ took/ { t = $3 + 0; if (t > newest) newest = t }
      /^test_api: restarted from ckpt\./ { split($4, a, "."); if (a[2] + 0 < newest) older = 1 }
      END { exit older ? 0 : 1 }' "$log"; then
    n_older[$kind]=$((n_older[$kind] + 1))
  fi
  # nothing left behind: processes of this campaign's job, temporaries on the prefix
  left=$(pgrep -f "$J/" | grep -vx "$$" | wc -l || true)
  temps=$(find "$prefix" -name '.*.tmp.*' -o -name '.*.new.*' 2>/dev/null | wc -l)
  if [ "$left" -gt 0 ] || [ "$temps" -gt 0 ]; then
    n_left[$kind]=$((n_left[$kind] + 1))
    echo "faults: round $r left $left process(es) and $temps temporary file(s)" >> "$log"
    # which ones, to find out why
    { pgrep -af "$J/" | grep -v "^$$ "; find "$prefix" \( -name '.*.tmp.*' -o -name '.*.new.*' \) -ls; } \
      >> "$log" 2>/dev/null || true
    pkill -9 -f "$J/" || true
  fi
  for i in 1 2 3 4 5; do "$harness" wipe-cache "$i" 2>/dev/null || true; done
  printf 'round %3d  %-13s node%d  %5d ms  %-10s resubmissions %d/%d%s\n' "$r" "$kind" "$node" "$delay" \
    "$verdict" "$resubmissions" "${budget[$kind]}" "$([ $over -eq 0 ] || echo '  OVER BUDGET')"
done

# --- the table
echo
printf '%-13s %6s %8s %6s %9s %6s %11s %11s %5s %10s\n' "fault" rounds injected missed recovered older \
  resubmitted "over budget" lost "left over"
bad=0
for k in "${kinds[@]}"; do
  [ "${n_rounds[$k]}" -gt 0 ] || continue
  printf '%-13s %6d %8d %6d %9d %6d %11d %11d %5d %10d\n' "$k" "${n_rounds[$k]}" "${n_injected[$k]}" \
    "${n_missed[$k]}" "${n_recovered[$k]}" "${n_older[$k]}" "${n_resubmitted[$k]}" "${n_over[$k]}" \
    "${n_lost[$k]}" "${n_left[$k]}"
  bad=$((bad + n_lost[$k] + n_left[$k] + n_missed[$k] + n_over[$k]))
done
if [ $bad -eq 0 ]; then
  echo "seed $seed, $rounds rounds, $(( $(date +%s) - started )) s; logs in $J/logs"
  exit 0
fi
# a failing campaign's logs outlive the cluster (which takes $STATE with it when it goes
# down): kept in the checkout's target directory, which CI and a developer both have
kept=$src/target/faults-logs/seed$seed-$(date +%Y%m%dT%H%M%S)
mkdir -p "$kept" && cp -a "$J/logs/." "$kept/"
echo "seed $seed, $rounds rounds, $(( $(date +%s) - started )) s; FAILED: logs kept in $kept"
exit 1
