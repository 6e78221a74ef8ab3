#!/usr/bin/env bash
# CPU per eval case over HTTP against the same case in process (BENCHMARKS.md, issue 40):
# the eval example's suite on a dataset of N cases, `pactum eval --jobs 1`, once through an
# `openai` provider at a local OpenAI-compatible stub (Python's http.server with HTTP/1.1
# keep-alive, as real providers keep connections open; one fixed reply) and once through a
# `scripted` provider with the same reply N times (in process). `perf stat -r REPS` counts
# pactum's CPU only (the stub is not its child); each figure is the difference between N
# cases and 16, over N - 16. With `--callgrind`, instructions per case instead (valgrind,
# which the load of the machine does not move).
#
#   bash benches/eval_http.sh [N=256] [REPS=5] [--callgrind]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-256}
REPS=${2:-5}
MODE=${3:-perf}
cargo build -q --release --bin pactum
BIN=$PWD/target/release/pactum
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pactum-eval-http.XXXXXX")
STUB_PID=
trap '[ -n "$STUB_PID" ] && kill "$STUB_PID" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT
cp -r examples/eval-classify/. "$WORK/"
rm -rf "$WORK/.pactum"
REPLY='{"label": "billing", "confidence": 0.93, "reasons": ["reads as billing"]}'

# The stub: one fixed chat completion, keep-alive, on a free port.
cat >"$WORK/stub.py" <<'EOF'
import http.server, json, sys
reply = sys.argv[1]
body = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "model": "stub-1",
                   "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": reply}}],
                   "usage": {"prompt_tokens": 230, "completion_tokens": 24}}).encode()
# The answer in one write: headers and body apart would meet the client's delayed ACK
# (Nagle on this side, 40 ms per call on Linux), which real servers do not make you wait.
answer = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
          + str(len(body)).encode() + b"\r\n\r\n" + body)
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.wfile.write(answer)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
EOF
python3 "$WORK/stub.py" "$REPLY" >"$WORK/port" &
STUB_PID=$!
for _ in $(seq 1 50); do [ -s "$WORK/port" ] && break; sleep 0.1; done
PORT=$(cat "$WORK/port")

# N cases (the example's 16, again and again under new ids) and N scripted replies.
python3 - "$WORK" "$N" "$REPLY" <<'EOF'
import json, sys
work, n, reply = sys.argv[1], int(sys.argv[2]), sys.argv[3]
base = [json.loads(l) for l in open(f"{work}/evals/classify/cases.jsonl")]
for count in (16, n):
    with open(f"{work}/evals/classify/cases-{count}.jsonl", "w") as out:
        for i in range(count):
            case = dict(base[i % len(base)], id=f"case-{i:05d}")
            out.write(json.dumps(case) + "\n")
with open(f"{work}/replies.json", "w") as out:
    json.dump({"responses": [{"text": reply, "usage": {"prompt_tokens": 230, "completion_tokens": 24}}] * n}, out)
EOF
cat >>"$WORK/pactum.toml" <<EOF

[providers.stub]
kind = "openai"
base_url = "http://127.0.0.1:$PORT/v1"
model = "stub-1"
api_key_env = "STUB_API_KEY"

[providers.inproc]
kind = "scripted"
fixtures = "replies.json"
EOF
cd "$WORK"
# The stub is named in this pactum.toml only: trusted, as the operator who wrote it.
export STUB_API_KEY=sk-stub-0123456789 PACTUM_TRUST_CONFIG=1
SUITE=evals/classify/EVAL-CLASSIFY-001.json
cp "$SUITE" suite.template
suite() { # cases: the suite reads the dataset of that many
  sed "s#evals/classify/cases.jsonl#evals/classify/cases-$1.jsonl#" suite.template >"$SUITE"
}
measure() { # provider cases -> ms of CPU, or instructions
  suite "$2"
  # The suite's verdict does not matter here (every reply says `billing`): exit 1 is kept.
  if [ "$MODE" = "--callgrind" ]; then
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" eval --provider "$1" --jobs 1 \
      >/dev/null 2>measured.txt || true
    awk '/Collected :/ {print $4}' measured.txt
  else
    perf stat -r "$REPS" -x, -e task-clock "$BIN" eval --provider "$1" --jobs 1 \
      >/dev/null 2>measured.txt || true
    awk -F, '/task-clock/ {print $1}' measured.txt
  fi
}
for provider in inproc stub; do
  few=$(measure "$provider" 16)
  many=$(measure "$provider" "$N")
  per=$(awk -v a="$few" -v b="$many" -v n="$N" 'BEGIN { printf "%.4f", (b - a) / (n - 16) }')
  eval "per_$provider=$per"
  unit=$([ "$MODE" = "--callgrind" ] && echo "instructions" || echo "ms CPU")
  printf '%-7s 16 cases: %s, %d cases: %s; per case: %s %s\n' "$provider" "$few" "$N" "$many" "$per" "$unit"
done
awk -v a="$per_inproc" -v b="$per_stub" 'BEGIN { printf "over HTTP / in process: %.2f\n", b / a }'
