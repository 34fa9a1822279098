#!/usr/bin/env bash
# The main job: an MPI application on 4 emulated nodes (8 ranks, 2 per node) checkpoints
# through SCR with XOR redundancy, is killed after its last checkpoint (which exists only in
# the node-local caches), loses a node, and restarts: the lost node's files are rebuilt
# from XOR in cache and verified byte for byte; SCR_Finalize drains the newest checkpoint.
# Then two nodes of one XOR set are lost at once: the restart falls back to the prefix.
# (scr-run's relaunch loop and the post-run scavenge arrive with issues 6-7.)
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
export SCR_JOB_ID=demo SCR_COPY_TYPE=XOR SCR_SET_SIZE=4 SCR_FLUSH=2 MPIEXEC_TIMEOUT=120
scr=$root/target/release/scr
run() { (cd "$work/prefix" && mpiexec -launcher fork -hosts n1:2,n2:2,n3:2,n4:2 -n 8 "$work/test_api" 1048576 "$@"); }
lose() {
  for n in "$@"; do rm -rf "$work"/cache/*/scr.demo/node."$n" "$work"/cntl/*/scr.demo/node."$n"; done
}

echo "== run 1: 8 ranks on emulated nodes n1..n4 write 3 checkpoints (flush every 2nd), then the job is killed"
TEST_API_NO_FINALIZE=1 run 3
echo "== the prefix has ckpt.2; ckpt.3 exists only in cache, protected by XOR:"
"$scr" index -p "$work/prefix"
find "$work/cache" -path '*scr.dataset.3*' -type f | sed "s|$work/||" | sort
echo "== node n3 is lost: its cache and control directories are gone"
lose n3
echo "== run 2: the restart rebuilds n3's files of ckpt.3 from XOR and verifies them (fetching is off)"
SCR_FETCH=0 run 1
echo "== nodes n1 and n2 are lost together: two members of each XOR set"
lose n1 n2
echo "== run 3: ckpt.4 cannot be rebuilt; the restart fetches it from the prefix (SCR_Finalize flushed it)"
run 1
echo "== the index records the fetch (and ckpt.5 is current)"
"$scr" index -p "$work/prefix" --json
