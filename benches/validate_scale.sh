#!/usr/bin/env bash
# `pactum validate` against its floor, side by side in one run (BENCHMARKS.md).
#
# The floor (examples/validate_floor.rs) reads, hashes and parses every file once on one
# thread. For each generated tree the floor and `pactum validate` run alternately, REPS
# times; the table gives the median wall time of each, their ratio, and pactum's peak RSS.
# Cases: files (N contracts + N packs), versions (N versions of one id), findings (N
# findings in one file), each at N/2 and N so that linear growth shows as a 2x step.
#
#   bash benches/validate_scale.sh [N=10000] [REPS=5]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000}
REPS=${2:-5}
WORK=${TMPDIR:-/tmp}/pactum-scale
cargo build -q --release --bin pactum --example generate_tree --example validate_floor
BIN=target/release
mkdir -p "$WORK"

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

printf '| case | files | floor (s) | pactum validate (s) | ratio | pactum peak RSS (MB) |\n'
printf '|---|---|---|---|---|---|\n'
for mode in files versions findings; do
  for n in $((N / 2)) "$N"; do
    tree="$WORK/$mode-$n"
    [ -f "$tree/registry.json" ] || "$BIN/examples/generate_tree" "$tree" "$n" "$mode" >/dev/null
    floor=() pactum=() rss=()
    files=""
    for _ in $(seq "$REPS"); do
      out=$("$BIN/examples/validate_floor" "$tree")
      files=${out%% files*}
      floor+=("$(sed -E 's/.*: ([0-9.]+) s$/\1/' <<<"$out")")
      t=$( { /usr/bin/time -f '%e %M' "$BIN/pactum" validate "$tree" --format json >/dev/null || true; } 2>&1 | tail -1)
      pactum+=("${t% *}")
      rss+=("${t#* }")
    done
    f=$(printf '%s\n' "${floor[@]}" | median)
    p=$(printf '%s\n' "${pactum[@]}" | median)
    r=$(printf '%s\n' "${rss[@]}" | median)
    awk -v m="$mode" -v n="$n" -v files="$files" -v f="$f" -v p="$p" -v r="$r" \
      'BEGIN {printf "| %s %d | %s | %.3f | %.3f | %.2f | %.0f |\n", m, n, files, f, p, p / f, r / 1024}'
  done
done
