#!/usr/bin/env bash
# The main job, end to end on one machine: 8 ranks on 4 emulated nodes under scr-run, with
# XOR redundancy and nothing flushed during the run (SCR_FLUSH=0).
#  1. The first run writes 3 checkpoints and dies; node n3 dies with it (its cache and control
#     directories vanish).
#  2. scr-run relaunches; SCR_Init rebuilds n3's files of ckpt.3 from XOR in cache, the
#     application verifies every byte and writes 3 more checkpoints, then ends without
#     SCR_Finalize, as a job killed at its time limit would.
#  3. scr-run's drain (scr postrun) copies ckpt.6 from the caches to the prefix and indexes it.
#  4. Two nodes of one XOR set are lost; a new job cannot rebuild from cache and restarts from
#     the drained copy on the prefix, verified.
#  5. The job's report (`scr report`, from the event log) is written where it outlasts the
#     demo, and its path said.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cargo build --release --quiet -p scr-runtime --lib
cargo build --release --quiet -p scr-launcher
root=$(pwd)
# where cargo built (CARGO_TARGET_DIR, relative to here when relative, as cargo takes it)
target=${CARGO_TARGET_DIR:-target}; case $target in /*) ;; *) target=$root/$target ;; esac
work=$(mktemp -d /tmp/scr-demo.XXXXXX); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/prefix" "$work/cache" "$work/cntl"
ln -s "$target/release/libscr_runtime.so" "$work/libscr.so"
mpicc -O2 examples/c/test_api.c -I lib/include -L"$work" -lscr -Wl,-rpath,"$work" -o "$work/test_api"
echo "SCR_CNTL_BASE=$work/cntl" > "$work/scr.conf"
export SCR_SYSTEM_CONF_FILE=$work/scr.conf SCR_CACHE_BASE=$work/cache SCR_PREFIX=$work/prefix
export SCR_JOB_ID=demo SCR_COPY_TYPE=XOR SCR_SET_SIZE=4 SCR_FLUSH=0 MPIEXEC_TIMEOUT=120
export SCR_NODELIST='n[1-4]' SCR_RUN_DELAY=0 SCR_RUNS=2
# the event log (<prefix>/.scr/log), from which the job's report is drawn at the end
export SCR_LOG_ENABLE=1 SCR_LOG_SYSLOG_ENABLE=0
export PATH="$target/release:$PATH"
lose() {
  for n in "$@"; do rm -rf "$work"/cache/*/scr.demo/node."$n" "$work"/cntl/*/scr.demo/node."$n"; done
}

# what scr-run launches: the MPI job; after the first run, node n3 is gone
cat > "$work/job.sh" <<JOB
#!/usr/bin/env bash
mpiexec -launcher fork -hosts n1,n2,n3,n4 -n 8 "$work/test_api" 1048576 3; rc=\$?
if [ ! -e "$work/n3-lost" ]; then
  touch "$work/n3-lost"
  echo "== node n3 failed with the run: its cache and control directories are gone"
  rm -rf "$work"/cache/*/scr.demo/node.n3 "$work"/cntl/*/scr.demo/node.n3
fi
exit \$rc
JOB
chmod +x "$work/job.sh"

echo "== scr-run: 8 ranks on emulated nodes n1..n4, XOR sets of 4, no flush during the run"
(cd "$work/prefix" && TEST_API_FAIL_FIRST=1 TEST_API_NO_FINALIZE=1 scr-run "$work/job.sh")
echo "== the prefix index after scr-run's drain"
scr index -p "$work/prefix"
echo "== nodes n1 and n2 are lost together: two members of each XOR set"
lose n1 n2
echo "== a new job: the cache cannot be rebuilt, so the drained ckpt.6 is fetched from the prefix"
(cd "$work/prefix" && SCR_FLUSH=1 mpiexec -launcher fork -hosts n1,n2,n3,n4 -n 8 "$work/test_api" 1048576 1)
echo "== the index records the fetch of ckpt.6, and ckpt.7 (flushed: SCR_FLUSH=1) is current"
scr index -p "$work/prefix" --json
# the job's report (a page of its runs, failures, checkpoint costs and interval), kept after
# the demo's directory is removed
report=$(mktemp /tmp/scr-demo-report.XXXXXX.html)
scr report -p "$work/prefix" -o "$report" >/dev/null
echo "== the job's report: $report (open it in a browser; \`scr report\` writes one for any prefix)"
