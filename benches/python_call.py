#!/usr/bin/env python3
"""One call's cost from Python, side by side in one run (issue 39; BENCHMARKS.md, "From
Python"): the pactum package's `client.call` against the Rust facade's `Client::call`
(examples/client_call.rs), on the offline dry-run provider and against a local
OpenAI-compatible stub, and Instructor validating the same reply into a Pydantic model
from the same stub.

Run from the repository root, in a virtual environment holding the release wheel,
`instructor` and `openai`, with the release build of the example beside it:

    python/build-wheel.sh && cargo build --release --example client_call
    python3 -m venv /tmp/bench-venv && /tmp/bench-venv/bin/pip install target/wheels/pactum-*.whl instructor openai
    /tmp/bench-venv/bin/python benches/python_call.py [N]

Each figure is the mean over N calls (default 2000) after a warm-up, in microseconds of
wall time and of this process's CPU (the stub runs in a process of its own; its CPU is
not counted).
"""

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pactum

ROOT = Path(__file__).resolve().parent.parent
N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
MESSAGE = "I was charged twice for my subscription this month."
REPLY = json.dumps({"label": "billing", "confidence": 0.9, "reasons": ["a double charge"]})

STUB = r'''
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
REPLY = sys.argv[1]
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes: without this, the client's delayed ACK holds
    # the body back 40 ms (Nagle's algorithm), for every client alike.
    disable_nagle_algorithm = True
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": REPLY}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
'''


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(call):
    for _ in range(min(N, 50)):
        call()
    wall, used = time.perf_counter(), cpu()
    for _ in range(N):
        call()
    return {"wall_us": (time.perf_counter() - wall) * 1e6 / N, "cpu_us": (cpu() - used) * 1e6 / N}


def rust(provider, env):
    example = ROOT / "target/release/examples/client_call"
    out = subprocess.run([str(example), str(ROOT), provider, str(N)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    stub = subprocess.Popen([sys.executable, "-c", STUB, REPLY], stdout=subprocess.PIPE, text=True)
    try:
        port = int(stub.stdout.readline())
        base = f"http://127.0.0.1:{port}/v1"
        env = dict(os.environ, OPENAI_BASE_URL=base, OPENAI_API_KEY="sk-bench", PACTUM_MODEL="stub")
        os.environ.update(env)
        rows = {}
        rows["rust dry-run"] = rust("dry-run", env)
        client = pactum.open(ROOT, provider="dry-run", ledger=False)
        rows["python dry-run"] = measure(lambda: client.call("PRC-CLASSIFY-001@^1", {"user_input": MESSAGE}))
        rows["rust openai stub"] = rust("openai", env)
        client = pactum.open(ROOT, provider="openai", ledger=False)
        rows["python openai stub"] = measure(lambda: client.call("PRC-CLASSIFY-001@^1", {"user_input": MESSAGE}))
        try:
            import instructor
            from openai import OpenAI
            from pydantic import BaseModel, Field
            from typing import List, Literal

            class Classify(BaseModel):
                label: Literal["billing", "technical", "account", "other"]
                confidence: float = Field(ge=0, le=1)
                reasons: List[str] = []

            ic = instructor.from_openai(OpenAI(base_url=base, api_key="sk-bench"), mode=instructor.Mode.JSON)
            messages = [{"role": "user", "content": f"Classify this message: {MESSAGE}"}]
            rows["instructor openai stub"] = measure(lambda: ic.chat.completions.create(
                model="stub", response_model=Classify, messages=messages, max_retries=0))
        except ImportError as e:
            rows["instructor openai stub"] = {"skipped": str(e)}
        print(json.dumps({"calls": N, "rows": rows}, indent=2))
    finally:
        stub.kill()


if __name__ == "__main__":
    main()
