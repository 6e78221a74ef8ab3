#!/usr/bin/env bash
# `pactum worker` on a Redis Stream against `pactum run` (BENCHMARKS.md, SPEC §22).
#
# A project with the shipped contracts and N classify work orders answered by the scripted
# provider (no model: the queue and pactum are what is measured). For REPS repetitions:
#   run      `pactum run` on the N work orders, one at a time (--jobs 1): pactum's own cost
#   1 worker N work orders submitted, then one worker started; time until N results
#   4 workers the same with four workers (each --concurrency 1) on one stream
# Per work order = wall time / N; the queue's overhead = 1 worker minus run. Then the
# recovery: 4 work orders whose reply takes 1 s, a worker (--concurrency 2, --claim-idle
# CLAIM) killed with SIGKILL while it runs two of them, a second worker started at once;
# the time from the kill until the two orphaned work orders have their results.
#
#   bash benches/worker.sh [N=200] [REPS=3] [CLAIM=2s]
#
# Needs redis-server and redis-cli (Debian: apt-get install redis-server).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
REPS=${2:-3}
CLAIM=${3:-2s}
cargo build -q --release --bin pactum
TARGET=${CARGO_TARGET_DIR:-target}
case $TARGET in /*) ;; *) TARGET=$(pwd)/$TARGET ;; esac
BIN=$TARGET/release/pactum
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pactum-worker.XXXXXX")
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
Q=redis://127.0.0.1:$PORT/0
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --pidfile "$WORK/redis.pid" --logfile "$WORK/redis.log"
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
until redis-cli -p "$PORT" ping >/dev/null 2>&1; do sleep 0.05; done

# project DIR COUNT DELAY_MS: the shipped contracts and COUNT classify work orders.
project() {
  mkdir -p "$1/work_orders" "$1/fixtures"
  cp -r registry.json contracts prompt_packs "$1/"
  python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
root, n, delay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
reply = {"responses": [{"contract_id": "PRC-CLASSIFY-001", "delay_ms": delay,
    "text": "{\"label\": \"billing\", \"confidence\": 0.9, \"reasons\": [\"a double charge\"]}",
    "usage": {"prompt_tokens": 10, "completion_tokens": 5}}]}
json.dump(reply, open(f"{root}/fixtures/q.json", "w"))
for i in range(n):
    json.dump({"work_order_id": f"WO-Q-{i:05d}", "kind": "exchange", "contract": "PRC-CLASSIFY-001@^1",
               "input": {"user_input": f"I was charged twice ({i})", "history": [], "mode": "careful"},
               "provider": {"fixtures": "../fixtures/q.json"}},
              open(f"{root}/work_orders/WO-Q-{i:05d}.json", "w"))
EOF
}

now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
per_wo_ms() { awk -v t="$1" -v n="$2" 'BEGIN {printf "%.2f", t * 1000 / n}'; }

# drain WORKERS DIR STREAM: start WORKERS workers on STREAM, wait for N results, stop them;
# prints the seconds from the first start to the last result.
drain() {
  local workers=$1 dir=$2 stream=$3 pids=() start end
  start=$(now)
  for w in $(seq "$workers"); do
    (cd "$dir" && exec "$BIN" worker --queue "$Q" --stream "$stream" --worker-id "w$w" \
      --claim-idle 30s --ledger "w$w.jsonl" 2>/dev/null >/dev/null) &
    pids+=($!)
  done
  until [ "$(redis-cli -p "$PORT" xlen "$stream:results")" -ge "$N" ]; do sleep 0.01; done
  end=$(now)
  kill -TERM "${pids[@]}"
  wait "${pids[@]}" || true
  awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}'
}

run_s=() one_s=() four_s=()
for rep in $(seq "$REPS"); do
  dir="$WORK/p$rep"
  project "$dir" "$N" 0
  start=$(now)
  (cd "$dir" && "$BIN" run work_orders/*.json --jobs 1 --ledger run.jsonl >/dev/null 2>&1) ||
    { echo "pactum run failed in $dir" >&2; exit 1; }
  run_s+=("$(awk -v a="$start" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}')")
  (cd "$dir" && "$BIN" submit work_orders/*.json --queue "$Q" --stream "one$rep" >/dev/null)
  one_s+=("$(drain 1 "$dir" "one$rep")")
  (cd "$dir" && "$BIN" submit work_orders/*.json --queue "$Q" --stream "four$rep" >/dev/null)
  four_s+=("$(drain 4 "$dir" "four$rep")")
done
run=$(printf '%s\n' "${run_s[@]}" | median)
one=$(printf '%s\n' "${one_s[@]}" | median)
four=$(printf '%s\n' "${four_s[@]}" | median)
printf '| path (N=%s, median of %s) | wall (s) | per work order (ms) | work orders/s |\n' "$N" "$REPS"
printf '|---|---|---|---|\n'
for row in "pactum run --jobs 1:$run" "1 worker:$one" "4 workers:$four"; do
  name=${row%%:*} t=${row##*:}
  printf '| %s | %s | %s | %s |\n' "$name" "$t" "$(per_wo_ms "$t" "$N")" \
    "$(awk -v t="$t" -v n="$N" 'BEGIN {printf "%.0f", n / t}')"
done
printf '\nqueue overhead per work order (1 worker - run): %s ms\n' \
  "$(awk -v a="$one" -v b="$run" -v n="$N" 'BEGIN {printf "%.2f", (a - b) * 1000 / n}')"

# Recovery after SIGKILL.
dir="$WORK/kill"
project "$dir" 4 1000
(cd "$dir" && "$BIN" submit work_orders/*.json --queue "$Q" --stream kill >/dev/null)
(cd "$dir" && exec "$BIN" worker --queue "$Q" --stream kill --worker-id doomed --concurrency 2 \
  --claim-idle "$CLAIM" --ledger doomed.jsonl >/dev/null 2>&1) &
doomed=$!
until [ "$(grep -c work_order_started "$dir/doomed.jsonl" 2>/dev/null)" = 2 ]; do sleep 0.01; done
held=$(python3 -c 'import json,sys; print(" ".join(json.loads(l)["work_order_id"] for l in open(sys.argv[1]) if "work_order_started" in l))' "$dir/doomed.jsonl")
kill -KILL "$doomed"
killed_ms=$(python3 -c 'import time; print(int(time.time() * 1000))')
(cd "$dir" && exec "$BIN" worker --queue "$Q" --stream kill --worker-id heir --concurrency 2 \
  --claim-idle "$CLAIM" --ledger heir.jsonl >/dev/null 2>&1) &
heir=$!
until [ "$(redis-cli -p "$PORT" xlen kill:results)" -ge 4 ]; do sleep 0.01; done
kill -TERM "$heir"; wait "$heir" || true
# A result entry's id starts with the millisecond it was written.
(cd "$dir" && "$BIN" results --json --queue "$Q" --stream kill) | python3 -c '
import json, sys
held, killed = sys.argv[1].split(), int(sys.argv[2])
results = json.load(sys.stdin)["results"]
done = [int(r["id"].split("-")[0]) - killed for r in results if r["work_order_id"] in held]
assert len(done) == 2 and all(r["worker_id"] == "heir" for r in results if r["work_order_id"] in held), results
counts = {}
for r in results: counts[r["work_order_id"]] = counts.get(r["work_order_id"], 0) + 1
assert sorted(counts.values()) == [1, 1, 1, 1], counts
print(f"SIGKILL to the orphans completed (--claim-idle {sys.argv[3]}, replies take 1 s): {max(done)} ms; one result per id: {len(counts)} ids")
' "$held" "$killed_ms" "$CLAIM"
