#!/usr/bin/env bash
# Runs every test of the project after installing what it needs (see setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
if command -v cargo-nextest >/dev/null; then
  cargo nextest run --workspace --no-fail-fast
else
  cargo test --workspace --no-fail-fast
fi
# doc tests are not run by nextest
cargo test --workspace --doc --quiet
