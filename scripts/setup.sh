#!/usr/bin/env bash
# Installs what building and testing SCR needs on a fresh Debian machine, then builds.
# Safe to run again: it installs only what is missing.
#
#   scripts/setup.sh            install what is missing, make MPICH the default MPI, build
#   scripts/setup.sh --no-build the same without the build (the campaign, the histories and
#                               the benches build what they run themselves)
#   scripts/setup.sh --check    print the Debian packages that are missing, one a line; change nothing
#   scripts/setup.sh --proofs   print "package<TAB>path" for each dependency found
#
# Each dependency is detected by the very file or command that uses it, never by a
# look-alike: bindgen (through clang-sys) loads `libclang.so` or `libclang-N.so[.M]`, and
# parses headers with clang's own `stddef.h`; the image's `libclang-cpp.so.14` is neither.
# SCR_SETUP_ROOT (default /) makes every look-up relative to another root: the tests run
# the detection against fake roots that lack one package each.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${SCR_SETUP_ROOT:-}
root=${root%/}

# A command as the shell would find it on PATH, under the root.
find_command() {
  local dir
  local IFS=:
  for dir in $PATH /usr/sbin /sbin; do
    [ -n "$dir" ] && [ -x "$root$dir/$1" ] && [ ! -d "$root$dir/$1" ] && { echo "$dir/$1"; return 0; }
  done
  return 1
}

# The first existing path matching a glob (relative to the root), optionally filtered by
# an extended regular expression on the file name.
find_file() {
  local pattern=$1 name_regex=${2:-} path
  shopt -s nullglob
  for path in $root$pattern; do
    [ -e "$path" ] || continue   # a pattern without wildcards stands for itself
    if [ -z "$name_regex" ] || [[ "$(basename "$path")" =~ $name_regex ]]; then
      shopt -u nullglob; echo "${path#"$root"}"; return 0
    fi
  done
  shopt -u nullglob
  return 1
}

# The library bindgen loads: clang-sys searches these directories for `libclang.so`,
# `libclang-N.so` and their versioned names (not `libclang-cpp`).
find_libclang() {
  local dir
  for dir in '/usr/lib/llvm-*/lib' /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
    find_file "$dir/libclang*.so*" '^libclang(-[0-9]+(\.[0-9]+)*)?\.so(\.[0-9]+)*$' && return 0
  done
  return 1
}

# dependency table: package, how it is proven, what proves it
# kinds: cmd (a command on PATH), file (a glob under the root), libclang, clangheaders
deps=(
  # the C compiler the cc crate, mpicc and the tests' examples run
  "gcc cmd cc"
  "pkg-config cmd pkg-config"
  # tests compare hostlists with SLURM's scontrol and ClusterShell's nodeset
  "slurm-client cmd scontrol"
  "clustershell cmd nodeset"
  "bc cmd bc"
  # the state-file durability test reads a writer's system calls
  "strace cmd strace"
  "iputils-ping cmd ping"
  # MPICH: hydra's launcher and the compiler wrapper the mpi crate's build probes
  "mpich cmd mpiexec.mpich"
  "libmpich-dev cmd mpicc.mpich"
  "libmpich-dev file /usr/include/x86_64-linux-gnu/mpich/mpi.h"
  # bindgen's libclang and clang's own headers
  "libclang-dev libclang -"
  "libclang-dev file /usr/lib/llvm-*/lib/clang/*/include/stddef.h"
  # Fortran bindings and examples (mpif90 calls gfortran)
  "gfortran cmd gfortran"
  # Open MPI, the second MPI libscr builds against
  "openmpi-bin cmd mpirun.openmpi"
  "libopenmpi-dev cmd mpicc.openmpi"
  "libopenmpi-dev file /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h"
  # the Python module's test: Debian's mpi4py (built against Open MPI) under Debian's python3
  "python3-mpi4py file /usr/lib/python3/dist-packages/mpi4py/__init__.py"
  # the user guide's test of the module's setup.py: Debian's pip installs it (offline)
  "python3-pip file /usr/lib/python3/dist-packages/pip/__init__.py"
  # the event log's syslog test runs a real rsyslogd
  "rsyslog cmd rsyslogd"
  # the database log's tests start a private MariaDB server in a temporary directory
  # (its core package: the binaries, without the system service) and query it
  "mariadb-server-core cmd mariadbd"
  "mariadb-server-core cmd mariadb-install-db"
  "mariadb-client-core cmd mariadb"
  # and one that speaks TLS, with certificates the openssl command makes
  "openssl cmd openssl"
  # scr report's page is rendered by a real browser in its test (headless Chromium)
  "chromium cmd chromium"
  # the install tests: CMake's find_package, man -l, and the installed modulefile loaded
  # with Debian's Lmod (its shell initialization, which the test sources)
  "cmake cmd cmake"
  "man-db cmd man"
  "lmod file /usr/share/lmod/lmod/init/bash"
  # the SLURM cluster of the end-to-end tests (tests/cluster/cluster.sh)
  "slurm-wlm cmd slurmctld"
  "slurm-wlm cmd slurmd"
  "munge cmd munged"
  "pdsh cmd pdsh"
  "openssh-server file /usr/sbin/sshd"
  "openssh-client cmd ssh"
  "iproute2 cmd ip"
  # namespaces (nsenter), the hostile-input tests' second user (setpriv), lock holders
  # (flock) and full file systems (fallocate)
  "util-linux cmd nsenter"
  "util-linux cmd setpriv"
  "util-linux cmd flock"
  # the fault campaign and the transfer-agent tests signal processes by pattern
  "procps cmd pkill"
  # the access-control-list tests share a prefix with another user's group (setfacl)
  "acl cmd setfacl"
)

prove() {
  local kind=$1 what=$2
  case $kind in
    cmd) find_command "$what" ;;
    file) find_file "$what" ;;
    libclang) find_libclang ;;
    *) echo "setup: unknown proof kind $kind" >&2; exit 2 ;;
  esac
}

missing=()
proofs=()
for row in "${deps[@]}"; do
  read -r pkg kind what <<<"$row"
  if found=$(prove "$kind" "$what"); then
    proofs+=("$pkg	$found")
  else
    case " ${missing[*]:-} " in *" $pkg "*) ;; *) missing+=("$pkg") ;; esac
  fi
done

build=1
case ${1:-} in
  --no-build) build=0 ;;
  --check) [ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}"; exit 0 ;;
  --proofs) [ ${#proofs[@]} -eq 0 ] || printf '%s\n' "${proofs[@]}"; exit 0 ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--no-build | --check | --proofs]" >&2; exit 2 ;;
esac
[ -z "$root" ] || { echo "setup: SCR_SETUP_ROOT is only for --check and --proofs" >&2; exit 2; }

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] && [ $build -eq 0 ]; then
    # a script that builds only what it runs may need none of them: it goes on, and fails
    # naming what it lacks if it needs one
    echo "setup: WARNING: not installed: ${missing[*]} (going on; root installs them: sudo apt-get install ${missing[*]})" >&2
  elif [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to install: ${missing[*]} (run: sudo apt-get install ${missing[*]})" >&2
    exit 1
  else
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
    still=$("$0" --check)
    if [ -n "$still" ]; then
      echo "setup: installed, but still not found: $still" >&2; exit 1
    fi
  fi
fi

# With Open MPI installed beside MPICH, Debian's alternatives may point mpicc/mpiexec at
# Open MPI; MPICH stays the default (hydra's -launcher fork emulates nodes in the tests).
if [ "$(id -u)" -eq 0 ]; then
  [ "$(readlink -f /usr/bin/mpicc)" = "$(readlink -f /usr/bin/mpicc.mpich)" ] ||
    update-alternatives --quiet --set mpi /usr/bin/mpicc.mpich
  [ "$(readlink -f /usr/bin/mpirun)" = "$(readlink -f /usr/bin/mpirun.mpich)" ] ||
    update-alternatives --quiet --set mpirun /usr/bin/mpirun.mpich
fi
if [ "$(readlink -f "$(command -v mpiexec)")" != "$(readlink -f "$(command -v mpiexec.mpich)")" ]; then
  echo "setup: mpiexec is not MPICH's; as root: update-alternatives --set mpirun /usr/bin/mpirun.mpich" >&2
  [ $build -eq 0 ] || exit 1
fi

if ! command -v cargo >/dev/null; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null; then
  echo "setup: no Rust toolchain found: install rustup's stable toolchain (Rust 1.89 or newer)" >&2
  exit 1
fi

[ $build -eq 0 ] || cargo build --workspace --all-targets --quiet
