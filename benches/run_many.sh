#!/usr/bin/env bash
# CPU per exchange work order in one `pactum run` (BENCHMARKS.md, issue 40): N classify
# work orders on the dry-run provider, in a copy of the repository's project with its own
# ledger, against one work order, `perf stat -r REPS` each. The difference over N - 1 is a
# work order's cost beyond the process's start.
#
#   bash benches/run_many.sh [N=200] [REPS=5]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
REPS=${2:-5}
cargo build -q --release --bin pactum
BIN=$PWD/target/release/pactum
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pactum-run-many.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
git ls-files -z registry.json contracts prompt_packs schemas | xargs -0 -I{} cp --parents {} "$WORK"
mkdir -p "$WORK/wo"
for i in $(seq 1 "$N"); do
  printf '{"work_order_id": "WO-MANY-%04d", "kind": "exchange", "contract": "PRC-CLASSIFY-001@^1", "input": {"user_input": "I was charged twice (case %d)", "history": [], "mode": "careful"}, "provider": {"name": "dry-run"}}\n' "$i" "$i" >"$WORK/wo/$i.json"
done
cd "$WORK"
measure() { # files... -> task-clock in ms
  perf stat -r "$REPS" -x, -e task-clock "$BIN" run --ledger run.jsonl "$@" 2>&1 >/dev/null \
    | awk -F, '/task-clock/ {print $1}'
}
one=$(measure wo/1.json)
all=$(measure $(seq -f 'wo/%g.json' 1 "$N"))
awk -v one="$one" -v all="$all" -v n="$N" 'BEGIN {
  printf "1 work order: %.1f ms CPU; %d: %.1f ms CPU; per work order: %.3f ms\n",
    one, n, all, (all - one) / (n - 1)
}'
