#!/bin/sh
# Found by scr-histories (soak, --seed 77, history 3147135402757500738; replay with
# ./scripts/histories.sh --replay 3147135402757500738), shrunk to 2 runs and a lost cache.
# A run with SCR_FLUSH_ASYNC=1 ends without SCR_Finalize while ckpt.1's flush is running:
# its staged copies (.rank_R.0.tmp.<pid>.<n>) wait in ckpt.1/ on the prefix and the flush
# file says FLUSHING. Both nodes then lose their cache and control directories. Neither the
# next run's SCR_Init nor `scr postrun` removes the temporaries: the only record of where
# the flush wrote was in the lost caches. Expected (SPEC §4.11: nothing is left behind when a
# run ends, in every order of faults): no temporary on the prefix once the next run started.
# The last line lists what is left.
set -eu
APP=${APP:?hist_app: histories/app/hist_app.c built against libscr}
SCR_COMMAND=${SCR_COMMAND:?the scr command}; CMD=$SCR_COMMAND
J=$(mktemp -d)
mkdir "$J/prefix" "$J/cache" "$J/cntl"
echo "SCR_CNTL_BASE=$J/cntl" > "$J/scr.conf"
for v in $(env | sed -n 's/^\(S[CL][RU][A-Z_]*\)=.*/\1/p'); do unset "$v"; done
export SCR_SYSTEM_CONF_FILE="$J/scr.conf" SCR_CACHE_BASE="$J/cache" SCR_PREFIX="$J/prefix" SCR_JOB_ID=4242 MPIEXEC_TIMEOUT=60
cd "$J/prefix"
env SCR_COPY_TYPE=XOR SCR_FLUSH=1 SCR_FLUSH_ASYNC=1 SCR_PREFIX_SIZE=0 SCR_CACHE_SIZE=1 SCR_RESHAPE=0 SCR_FLUSH_ASYNC_BW=40000 mpiexec -launcher fork -hosts n1:1,n2:1 -n 2 "$APP" init restart ckpt=1:1:100 quit || true
rm -rf "$J/cache/$(id -un)/scr.4242/node.n1"
rm -rf "$J/cntl/$(id -un)/scr.4242/node.n1"
rm -rf "$J/cache/$(id -un)/scr.4242/node.n2"
rm -rf "$J/cntl/$(id -un)/scr.4242/node.n2"
env SCR_COPY_TYPE=XOR SCR_FLUSH=1 SCR_FLUSH_ASYNC=0 SCR_PREFIX_SIZE=0 SCR_CACHE_SIZE=1 SCR_RESHAPE=1 mpiexec -launcher fork -hosts n1:1,n2:1 -n 2 "$APP" layout=1:1:1:100:2 init restart finalize || true
SCR_NODELIST='n[1-2]' "$CMD" postrun -p "$J/prefix" || true
find "$J/prefix" -name '.*.tmp.*'
