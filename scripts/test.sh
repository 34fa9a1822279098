#!/usr/bin/env bash
# Runs every test of the project after installing what it needs (see setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# doc tests first (nextest does not run them)
cargo test --workspace --doc --quiet
# The SLURM cluster scenarios run on their own, after everything else: while they ran next to
# the other MPI jobs of the suite, those jobs' processes were killed now and then (the
# cluster's nodes share this machine's PID namespace; see lib/tests/cluster.rs).
# The runtime's MPI suite runs again with libscr built against Open MPI (its own target
# directory; MPICC tells the mpi crate's build which MPI to bind).
openmpi_suite='binary(mpi_single) | binary(fetch) | binary(halting) | binary(compat) | binary(redundancy) | binary(containers) | binary(async_flush)'
openmpi_env=(env SCR_TEST_MPI=openmpi MPICC=mpicc.openmpi CARGO_TARGET_DIR="$(pwd)/target/openmpi")
if command -v cargo-nextest >/dev/null; then
  status=0
  cargo nextest run --workspace --no-fail-fast -E 'not binary(cluster)' || status=$?
  "${openmpi_env[@]}" cargo nextest run -p scr-runtime --no-fail-fast -E "$openmpi_suite" || status=$?
  cargo nextest run -p scr-runtime --no-fail-fast -E 'binary(cluster)' || status=$?
  # the fault campaign, short: each kind of fault once, seeded (the long one: --rounds 200)
  timeout 1500 tests/cluster/faults.sh --seed 3 --rounds 12 --cycle || status=$?
  # histories judged against the model of SCR's promises, about three minutes
  ./scripts/histories.sh --ci || status=$?
  exit $status
else
  # every test target but the cluster's, which runs on its own below
  targets=$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    for t in p["targets"]:
        if "test" in t["kind"] and t["name"] != "cluster":
            print("--test", t["name"])')
  # shellcheck disable=SC2086 # one word per target
  cargo test --workspace --no-fail-fast --lib --bins $targets
  for t in mpi_single fetch halting compat redundancy containers async_flush; do
    "${openmpi_env[@]}" cargo test -p scr-runtime --test $t
  done
  cargo test -p scr-runtime --test cluster -- --test-threads=1
  timeout 1500 tests/cluster/faults.sh --seed 3 --rounds 12 --cycle
  ./scripts/histories.sh --ci
fi
