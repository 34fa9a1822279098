#!/usr/bin/env bash
# The main job, as far as it exists today: builds SCR and inspects a prefix directory written
# by real SCR v2.0.0 (tests/golden/xor/prefix) with our commands. The checkpoint → node loss →
# restart → drain demo arrives with the runtime library and the launcher.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cargo build --release --quiet -p scr-launcher
scr=target/release/scr
prefix=tests/golden/xor/prefix
echo "== the index SCR v2.0.0 wrote ($prefix/.scr/index.scr)"
$scr print "$prefix/.scr/index.scr" | head -n 20
echo "== its flush file, as JSON"
$scr print --json "$prefix/.scr/flush.scr"
echo "== the same command under SCR's own name"
ln -sf "$(pwd)/$scr" target/release/scr_print_hash_file
target/release/scr_print_hash_file "$prefix/.scr/halt.scr"
echo "== a damaged copy is reported, not trusted"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
head -c 200 "$prefix/.scr/index.scr" > "$tmp/index.scr"
$scr print "$tmp/index.scr" || echo "(exit code $?)"
