#!/usr/bin/env bash
# A real SLURM cluster on this machine: N nodes (default 4), each a network, UTS and mount
# namespace with its own hostname (node<i>), address (10.99.0.<i>), /tmp and /dev/shm,
# slurmd and sshd; slurmctld and munge on the host. Needs root.
#
#   tests/cluster/cluster.sh up [N]       bring it up (tears down a previous one first)
#   tests/cluster/cluster.sh down         remove everything it started (also after a crash)
#   tests/cluster/cluster.sh env          print the environment commands need (SLURM_CONF)
#   tests/cluster/cluster.sh kill-node I  kill node I hard: its processes and its network
#   tests/cluster/cluster.sh kill-slurmd I  kill only node I's slurmd
#   tests/cluster/cluster.sh partition I  cut node I's network (processes keep running)
#   tests/cluster/cluster.sh heal I       reconnect node I's network after a partition
#   tests/cluster/cluster.sh shm-size I S resize node I's /dev/shm tmpfs to S (e.g. 4m, 50%)
#   tests/cluster/cluster.sh restart-ctld kill slurmctld and start it again (state kept)
#   tests/cluster/cluster.sh wipe-cache I empty node I's /tmp and /dev/shm
#   tests/cluster/cluster.sh revive I     bring node I back (keeps /tmp, loses /dev/shm)
#   tests/cluster/cluster.sh kill-app I NAME  kill -9 the processes named NAME on node I only
#   tests/cluster/cluster.sh exec I CMD…  run a command on node I (nodes share the PID
#                                         namespace: pkill there reaches every node)
#
# Everything it starts is recorded under $SCR_CLUSTER_STATE (default /var/lib/scr-cluster):
# PIDs in pids/, config blocks it adds to /etc/hosts and /root/.ssh marked with
# "scr-cluster"; tear-down kills only those PIDs (checking /proc/<pid>/comm against PID
# reuse) and what runs inside the namespaces it created.
set -euo pipefail
STATE=${SCR_CLUSTER_STATE:-/var/lib/scr-cluster}   # not under /tmp: each node mounts its own /tmp
BRIDGE=scrbr0
NET=10.99.0
MARK="# scr-cluster"

die() { echo "cluster: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "missing $1 (scripts/setup.sh installs $2)"; }

check_requirements() {
  [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, veth pairs, mounts)"
  need ip iproute2; need nsenter util-linux; need unshare util-linux
  need slurmctld slurm-wlm; need slurmd slurm-wlm; need munged munge
  need sshd openssh-server; need pdsh pdsh
  ip netns add scr-probe 2>/dev/null || die "this kernel or container does not allow network namespaces (ip netns add failed)"
  ip netns del scr-probe
  ip link add scr-probe type bridge 2>/dev/null || die "cannot create a bridge (ip link add type bridge failed): the kernel lacks bridge support or CAP_NET_ADMIN"
  ip link del scr-probe
}

# start NAME CMD…: runs CMD detached, records its PID as pids/NAME
start() {
  local name=$1; shift
  setsid "$@" >>"$STATE/log/$name.out" 2>&1 < /dev/null &
  echo $! > "$STATE/pids/$name"
}

holder_pid() { cat "$STATE/pids/holder.node$1"; }
on_node() { local i=$1; shift; nsenter -t "$(holder_pid "$i")" -n -u -m "$@"; }

kill_recorded() { # kill the recorded process NAME if it is still what we started
  local f="$STATE/pids/$1" pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if [ -d "/proc/$pid" ] && [ -n "${2:-}" ] && ! grep -q "$2" "/proc/$pid/comm" 2>/dev/null; then
    rm -f "$f"; return 0 # the PID was reused by something else
  fi
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}

write_slurm_conf() {
  local n=$1 host; host=$(hostname)
  cat > "$STATE/slurm.conf" <<EOF
ClusterName=scrtest
SlurmctldHost=$host($NET.254)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=pmi2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
SlurmdTimeout=10
MessageTimeout=5
TCPTimeout=3
KillWait=5
ReturnToService=1
InactiveLimit=0
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool/slurmd.%n
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.%n.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.%n.log
SlurmctldPort=6817
SlurmdPort=6818
EOF
  for i in $(seq 1 "$n"); do
    echo "NodeName=node$i NodeAddr=$NET.$i NodeHostname=node$i CPUs=2 RealMemory=2000" >> "$STATE/slurm.conf"
  done
  echo "PartitionName=debug Nodes=node[1-$n] Default=YES MaxTime=INFINITE State=UP" >> "$STATE/slurm.conf"
}

node_up() { # network, namespaces, slurmd and sshd of node I
  local i=$1
  ip netns add "scr-node$i"
  ip link add "scrv$i" type veth peer name eth0 netns "scr-node$i"
  ip link set "scrv$i" master "$BRIDGE" up
  ip -n "scr-node$i" addr add "$NET.$i/24" dev eth0
  ip -n "scr-node$i" link set eth0 up
  ip -n "scr-node$i" link set lo up
  mkdir -p "$STATE/nodes/node$i/tmp"
  chmod 1777 "$STATE/nodes/node$i/tmp"
  start "holder.node$i" nsenter --net="/run/netns/scr-node$i" unshare --uts --mount --propagation private \
    sh -c "hostname node$i; mount --bind $STATE/nodes/node$i/tmp /tmp; mount -t tmpfs shm-node$i /dev/shm; exec sleep infinity"
  for _ in $(seq 50); do [ "$(on_node "$i" hostname 2>/dev/null)" = "node$i" ] && break; sleep 0.05; done
  start "slurmd.node$i" nsenter -t "$(holder_pid "$i")" -n -u -m slurmd -D -f "$STATE/slurm.conf" -N "node$i"
  start "sshd.node$i" nsenter -t "$(holder_pid "$i")" -n -u -m /usr/sbin/sshd -D -f "$STATE/sshd_config" \
    -o "ListenAddress=$NET.$i" -o "PidFile=$STATE/run/sshd.node$i.pid"
}

node_kill() { # everything inside node I, and its network
  local i=$1 pid
  if ip netns list | grep -qw "scr-node$i"; then
    for pid in $(ip netns pids "scr-node$i" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  fi
  kill_recorded "slurmd.node$i" slurmd
  kill_recorded "sshd.node$i" sshd
  kill_recorded "holder.node$i" sleep
  ip link del "scrv$i" 2>/dev/null || true
  ip netns del "scr-node$i" 2>/dev/null || true
}

remove_marked() { # remove our marked lines from a file
  [ -f "$1" ] && sed -i "/$MARK/d" "$1" || true
}

down() {
  local i
  if [ -f "$STATE/nodes.count" ]; then
    for i in $(seq 1 "$(cat "$STATE/nodes.count")"); do node_kill "$i"; done
  fi
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^scr-node' || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  kill_recorded slurmctld slurmctld
  kill_recorded munged munged
  if [ -d "$STATE/pids" ]; then
    for f in "$STATE"/pids/*; do [ -e "$f" ] && kill_recorded "$(basename "$f")"; done
  fi
  ip link del "$BRIDGE" 2>/dev/null || true
  remove_marked /etc/hosts
  remove_marked /root/.ssh/config
  remove_marked /root/.ssh/authorized_keys
  rm -rf "$STATE"
}

up() {
  local n=${1:-4} i t0; t0=$(date +%s.%N)
  check_requirements
  down
  mkdir -p "$STATE"/{pids,log,run,ctld,spool,nodes}
  echo "$n" > "$STATE/nodes.count"
  ip link add "$BRIDGE" type bridge
  ip addr add "$NET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  for i in $(seq 1 "$n"); do echo "$NET.$i node$i $MARK" >> /etc/hosts; done
  # ssh: a key of our own, accepted for root, used for the node names
  ssh-keygen -q -t ed25519 -N '' -f "$STATE/id_ed25519"
  mkdir -p /root/.ssh && chmod 700 /root/.ssh
  echo "$(cat "$STATE/id_ed25519.pub") $MARK" >> /root/.ssh/authorized_keys
  chmod 600 /root/.ssh/authorized_keys
  for opt in "Host node*" "  IdentityFile $STATE/id_ed25519" "  StrictHostKeyChecking no" \
             "  UserKnownHostsFile /dev/null" "  BatchMode yes" "  ConnectTimeout 3" "  LogLevel ERROR"; do
    echo "$opt $MARK" >> /root/.ssh/config
  done
  [ -f /etc/ssh/ssh_host_ed25519_key ] || ssh-keygen -A
  mkdir -p /run/sshd
  cat > "$STATE/sshd_config" <<EOF
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
UsePAM no
AuthorizedKeysFile /root/.ssh/authorized_keys
HostKey /etc/ssh/ssh_host_ed25519_key
AcceptEnv *
EOF
  # munge: one daemon, reached by every node through its socket file
  mkdir -p /run/munge && chown munge:munge /run/munge
  [ -f /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
  if ! munge -n >/dev/null 2>&1; then
    start munged setpriv --reuid munge --regid munge --clear-groups munged -F
    for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.05; done
  fi
  write_slurm_conf "$n"
  start slurmctld slurmctld -D -f "$STATE/slurm.conf"
  for i in $(seq 1 "$n"); do node_up "$i"; done
  export SLURM_CONF=$STATE/slurm.conf
  for _ in $(seq 200); do
    [ "$(sinfo -h -o %T -t idle 2>/dev/null | wc -l)" -ge 1 ] &&
      [ "$(sinfo -h -N -o %N -t idle 2>/dev/null | wc -l)" -eq "$n" ] && break
    sleep 0.1
  done
  [ "$(sinfo -h -N -o %N -t idle 2>/dev/null | wc -l)" -eq "$n" ] ||
    die "nodes did not come up idle: $(sinfo 2>&1 | tail -5); logs in $STATE/log"
  printf 'cluster: %d nodes up in %.1f s (SLURM_CONF=%s)\n' "$n" "$(echo "$(date +%s.%N) - $t0" | bc -l)" "$STATE/slurm.conf"
}

cmd=${1:-}; shift || true
case "$cmd" in
  up) up "${1:-4}" ;;
  down) down ;;
  env) echo "export SLURM_CONF=$STATE/slurm.conf PDSH_RCMD_TYPE=ssh" ;;
  kill-node) node_kill "$1" ;;
  kill-slurmd) kill_recorded "slurmd.node$1" slurmd ;;
  partition) ip link set "scrv$1" down ;;
  heal) ip link set "scrv$1" up ;;
  shm-size) on_node "$1" mount -o "remount,size=$2" /dev/shm ;;
  restart-ctld) # as an administrator restarts it: SIGTERM, so it saves its state first
    pid=$(cat "$STATE/pids/slurmctld")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    kill_recorded slurmctld slurmctld
    start slurmctld slurmctld -D -f "$STATE/slurm.conf"
    for _ in $(seq 100); do SLURM_CONF=$STATE/slurm.conf sinfo -h >/dev/null 2>&1 && break; sleep 0.1; done ;;
  wipe-cache) rm -rf "$STATE/nodes/node$1/tmp/"* && on_node "$1" sh -c 'rm -rf /dev/shm/*' ;;
  revive) node_kill "$1"; node_up "$1" ;;
  kill-app) pkill -9 --ns "$(holder_pid "$1")" --nslist net -x "$2" || true ;;
  exec) i=$1; shift; on_node "$i" "$@" ;;
  *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 1 ;;
esac
