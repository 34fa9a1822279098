#!/usr/bin/env bash
# The history checker (histories/, `scr-histories`): random histories of SCR jobs, faults and
# operator commands, run as real MPICH jobs on emulated nodes and judged against the model of
# what SCR promises; prints a table (histories, steps, operations and faults by kind, pairs
# of features that met, restarts verified, violations with their seeds). Any violation is
# shrunk and written as a shell script that reproduces it.
#   ./scripts/histories.sh --seed S --count N   N new histories drawn from seed S
#   ./scripts/histories.sh --soak MINUTES        new histories for that long
#   ./scripts/histories.sh --replay SEED         one history again (a violation's seed)
#   ./scripts/histories.sh --ci                  CI: the kept regressions (histories/regressions.txt),
#                                                then new histories from a seed derived from the
#                                                commit, for about three minutes
#   ./scripts/histories.sh --planted NAME …      against a copy of the workspace with
#                                                histories/planted/NAME.patch applied
# Exit status: 0 no violation, 1 a violation, 2 bad usage or setup.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build   # what it needs, installed when missing (needs root then)
# (--lib applies to every package named with it, hence two builds)
cargo build --quiet -p scr-runtime --lib
cargo build --quiet -p scr-launcher --bin scr
cargo build --quiet -p scr-histories
args=()
if [[ ${1:-} == --ci ]]; then
  shift
  commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo 1)
  args=(--regressions histories/regressions.txt --seed $((16#$commit)) --count 1000000 --budget 180)
fi
exec target/debug/scr-histories --build target/debug "${args[@]}" "$@"
