#!/usr/bin/env bash
# Hostlist benchmark: `scr glob-hosts` side by side with ClusterShell's `nodeset` and
# SLURM's `scontrol` on the same inputs, median of 3 runs each; prints times and ratios.
# Run: ./benches/hostlist.sh   (needs scontrol and nodeset: ./scripts/setup.sh installs them)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --no-build   # what it needs, installed when missing (needs root then)
cargo build --release --quiet -p scr-launcher
scr=$(pwd)/target/release/scr
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
printf 'ClusterName=bench\nSlurmctldHost=localhost\n' > "$work/slurm.conf"
export SLURM_CONF=$work/slurm.conf

# inputs
# 1,000,000 hosts as 16 ranges (SLURM refuses a range over 65,536 hosts)
million=$(for p in a b c d e f g h i j k l m n o p; do printf '%s[0-62499],' "$p"; done); million=${million%,}
/usr/bin/python3 - "$work" <<'PY'
import random, sys
w = sys.argv[1]; r = random.Random(42)
def names(lo, hi):
    xs = [f"node{i}" for i in range(lo, hi)]; r.shuffle(xs); return xs
open(f"{w}/shuffled100k", "w").write(",".join(names(0, 100000)))
open(f"{w}/shuffled10k", "w").write(",".join(names(0, 10000)))
open(f"{w}/A", "w").write("\n".join(names(0, 100000)) + "\n")
open(f"{w}/B", "w").write("\n".join(names(50000, 150000)) + "\n")
PY
bfolded=$("$scr" glob-hosts -C "@$work/B")

median() { sort -g | sed -n 2p; }
timeit() { # runs "$@" 3 times, prints the median wall time in seconds
  for _ in 1 2 3; do
    local s e; s=$(date +%s.%N); "$@" > "$work/out" 2>&1 || { echo "FAILED: $*" >&2; cat "$work/out" >&2; exit 1; }
    e=$(date +%s.%N); echo "$e - $s" | bc -l
  done | median
}

row() { # name ours nodeset scontrol
  local name=$1 ours=$2 ns=$3 sc=$4
  local r1 r2="-"
  r1=$(echo "$ns / $ours" | bc -l | xargs printf '%.1f')
  [ "$sc" = "-" ] || { r2=$(echo "$sc / $ours" | bc -l | xargs printf '%.1f'); sc=$(printf '%.3f' "$sc"); }
  printf '%-44s %9.3f %9.3f %9s %12sx %12sx\n' "$name" "$ours" "$ns" "$sc" "$r1" "$r2"
}

printf '%-44s %9s %9s %9s %13s %13s\n' operation "ours(s)" "nodeset" "scontrol" "vs nodeset" "vs scontrol"
o=$(timeit "$scr" glob-hosts --expand -h "$million")
n=$(timeit nodeset -e -S '\n' "$million")
s=$(timeit scontrol show hostnames "$million")
row "expand 1,000,000 hosts" "$o" "$n" "$s"

o=$(timeit "$scr" glob-hosts -C "@$work/shuffled100k")
n=$(timeit sh -c "nodeset -f < '$work/shuffled100k'")
row "compress 100,000 shuffled names" "$o" "$n" "-"

o=$(timeit "$scr" glob-hosts -C "$(cat "$work/shuffled10k")")
n=$(timeit nodeset -f "$(cat "$work/shuffled10k")")
s=$(timeit scontrol show hostlist "$(cat "$work/shuffled10k")")
row "compress 10,000 shuffled names (arg limit)" "$o" "$n" "$s"

o=$(timeit "$scr" glob-hosts -m "@$work/A:@$work/B")
n=$(timeit sh -c "nodeset -f -x '$bfolded' < '$work/A'")
row "minus, 100,000 - 100,000 (half overlap)" "$o" "$n" "-"

o=$(timeit "$scr" glob-hosts -i "@$work/A:@$work/B")
n=$(timeit sh -c "nodeset -f -i '$bfolded' < '$work/A'")
row "intersection, 100,000 & 100,000" "$o" "$n" "-"
echo "(scontrol has no set operations and takes at most 128 KiB in one argument; '-' = cannot do it)"
