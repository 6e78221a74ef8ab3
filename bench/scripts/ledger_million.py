#!/usr/bin/env python3
"""Writes a ledger of N exchange records (default 1,000,000) for the context-assembly
measurement in BENCHMARKS.md: records shaped like `pactum run` writes them (event, session,
tier, contract, verdict, raw response, usage), one second apart, ending now, so a
`recency` of 7d reaches back over about the last 604,800 of them. The records are
hash-chained like pactum's (`prev`/`hash` over the canonical JSON without `hash`), so
`pactum ledger verify` accepts the file too.

usage: ledger_million.py OUT.jsonl [N]
"""
import datetime
import hashlib
import json
import sys

out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
prev = "0" * 64
with open(out, "w") as f:
    for i in range(1, n + 1):
        at = (now - datetime.timedelta(seconds=n - i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        record = {
            "seq": i, "at": at, "kind": "exchange", "event": "exchange",
            "session_id": f"s-{i % 97}", "tier": "ho1",
            "work_order_id": f"WO-BENCH-{i}", "contract_id": "PRC-BENCH-001",
            "contract_version": "1.0.0", "verdict": "ok",
            "raw_response": f"{{\"decision\": \"approve\", \"reply\": \"case {i} approved\"}}",
            "usage": {"prompt_tokens": 200, "completion_tokens": 30}, "latency_ms": 12,
            "prev": prev,
        }
        canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        record["hash"] = prev = hashlib.sha256(canonical.encode()).hexdigest()
        f.write(json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")
