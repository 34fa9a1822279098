#!/usr/bin/env bash
# Runs every test of the project after installing what it needs (see setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# doc tests first (nextest does not run them), so the run ends on the full test summary
cargo test --workspace --doc --quiet
if command -v cargo-nextest >/dev/null; then
  cargo nextest run --workspace --no-fail-fast
else
  cargo test --workspace --no-fail-fast
fi
