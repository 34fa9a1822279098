#!/usr/bin/env bash
# Installs what building and testing SCR needs on a fresh Debian machine, then builds.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tests compare against the real tools: SLURM's scontrol (hostlist expansion) and
# ClusterShell's nodeset (compression and set operations).
need_apt=()
command -v cc >/dev/null || need_apt+=(gcc)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v scontrol >/dev/null || need_apt+=(slurm-client)
command -v nodeset >/dev/null || need_apt+=(clustershell)
command -v bc >/dev/null || need_apt+=(bc)   # benches/hostlist.sh
command -v ping >/dev/null || need_apt+=(iputils-ping)   # scr-run's down-node detection
# MPI: MPICH, and libclang for the mpi crate's bindings
command -v mpiexec >/dev/null || need_apt+=(mpich)
[ -e /usr/include/x86_64-linux-gnu/mpich/mpi.h ] || [ -e /usr/include/mpich/mpi.h ] || need_apt+=(libmpich-dev)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || need_apt+=(libclang-dev)
command -v gfortran >/dev/null || need_apt+=(gfortran)   # Fortran bindings and example
# the SLURM cluster of the end-to-end tests (tests/cluster/cluster.sh)
command -v slurmctld >/dev/null || need_apt+=(slurm-wlm)
command -v munged >/dev/null || need_apt+=(munge)
command -v pdsh >/dev/null || need_apt+=(pdsh)
command -v sshd >/dev/null && [ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v ssh >/dev/null || need_apt+=(openssh-client)
command -v ip >/dev/null || need_apt+=(iproute2)
command -v nsenter >/dev/null || need_apt+=(util-linux)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to install: ${need_apt[*]}" >&2; exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}"
fi

if ! command -v cargo >/dev/null; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null; then
  echo "setup: no Rust toolchain found: install rustup's stable toolchain (Rust 1.89 or newer)" >&2
  exit 1
fi

cargo build --workspace --all-targets --quiet
