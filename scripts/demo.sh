#!/usr/bin/env bash
# The main job, as far as it exists today: an MPI application on 4 emulated nodes checkpoints
# through SCR, one node is lost (its cache and control directories vanish), and the job
# restarts: SCR refuses the incomplete cache and fetches the newest checkpoint from the
# prefix, verified byte for byte. (Redundancy that rebuilds the lost node from its peers,
# scr-run's relaunch loop and the drain arrive with issues 5-7.)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cargo build --release --quiet -p scr-launcher -p scr-runtime
root=$(pwd)
work=$(mktemp -d /tmp/scr-demo.XXXXXX); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/prefix" "$work/cache" "$work/cntl"
ln -s "$root/target/release/libscr_runtime.so" "$work/libscr.so"
mpicc -O2 examples/c/test_api.c -I lib/include -L"$work" -lscr -Wl,-rpath,"$work" -o "$work/test_api"
echo "SCR_CNTL_BASE=$work/cntl" > "$work/scr.conf"
export SCR_SYSTEM_CONF_FILE=$work/scr.conf SCR_CACHE_BASE=$work/cache SCR_PREFIX=$work/prefix
export SCR_JOB_ID=demo SCR_COPY_TYPE=SINGLE SCR_FLUSH=2 MPIEXEC_TIMEOUT=120
scr=$root/target/release/scr
run() { (cd "$work/prefix" && mpiexec -launcher fork -hosts n1,n2,n3,n4 -n 4 "$work/test_api" 1048576 "$1"); }

echo "== run 1: 4 ranks on emulated nodes n1..n4 write 3 checkpoints (flush every 2nd)"
run 3
echo "== the prefix index"
"$scr" index -p "$work/prefix"
echo "== node n3 is lost: its cache and control directories are gone"
rm -rf "$work"/cache/*/scr.demo/node.n3 "$work"/cntl/*/scr.demo/node.n3
echo "== run 2: the restart fetches ckpt.3 from the prefix and verifies it"
run 1
echo "== the index now records the fetch (and ckpt.4 is current)"
"$scr" index -p "$work/prefix" --json
