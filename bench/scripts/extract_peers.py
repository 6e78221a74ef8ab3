#!/usr/bin/env python3
"""Scores the peer JSON repairers on an extraction corpus, with the rules of
tests/support/scorecard.rs, and prints rows for the table in BENCHMARKS.md.

Peers: the `json_repair` Python package and the `jsonrepair` npm package (run through
extract_peers.js with node). Install them first:

    pip install json_repair
    npm install --prefix bench/scripts/node jsonrepair

Usage (from the repository root):

    python3 bench/scripts/extract_peers.py ../shared/peer/llm-outputs.jsonl
    python3 bench/scripts/extract_peers.py tests/fixtures/extract/replies.jsonl
    python3 bench/scripts/extract_peers.py ../shared/peer/llm-outputs.jsonl --without json-repair-

`--without PREFIX` leaves out the lines whose id starts with PREFIX (e.g. a peer's own
test suite).

Each line's `input` is handed to the peer as is (both peers read the whole text; neither
looks for fences or prose around the JSON by itself). `exact`: the peer returned the
expected value; `wrong`: another value; `refused`: it raised, or returned json_repair's
empty-string "nothing found". Scored lines are those with a stated expected value of kind
`parsed`, `parsed-implied`, `repaired` or `partial`; "valid JSON: wrong" counts wrong
answers on scored lines whose category holds strictly valid JSON; "refusals kept" counts
the no-JSON lines (category `none`) on which the peer returned nothing.
"""

import json
import os
import subprocess
import sys

SCORED_KINDS = {"parsed", "parsed-implied", "repaired", "partial"}
VALID_JSON = {"fenced", "embedded", "trailing", "raw", "scalar"}
HERE = os.path.dirname(os.path.abspath(__file__))


def read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def json_repair_outcomes(lines):
    import json_repair

    out = []
    for line in lines:
        try:
            value = json_repair.loads(line["input"])
        except Exception:  # noqa: BLE001 - any failure is a refusal
            out.append(("refused", None))
            continue
        if value == "" and line.get("expected") != "":
            out.append(("refused", None))
        else:
            out.append(("value", value))
    return out


def jsonrepair_outcomes(lines):
    script = os.path.join(HERE, "extract_peers.js")
    inputs = json.dumps([line["input"] for line in lines])
    done = subprocess.run(
        ["node", script], input=inputs, capture_output=True, text=True, check=True
    )
    return [tuple(x) for x in json.loads(done.stdout)]


def same(a, b):
    # Python compares 1 == 1.0 == True; compare JSON texts of canonical forms instead.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def score(lines, outcomes):
    counts = dict(exact=0, wrong=0, refused=0, valid_wrong=0, refusals_kept=0)
    for line, (kind, value) in zip(lines, outcomes):
        stated = line.get("expected_stated", False)
        if stated and line.get("expected_kind") in SCORED_KINDS:
            if kind == "refused":
                counts["refused"] += 1
            elif same(value, line["expected"]):
                counts["exact"] += 1
            else:
                counts["wrong"] += 1
                if line.get("category") in VALID_JSON:
                    counts["valid_wrong"] += 1
        elif line.get("category") == "none" and not stated:
            counts["refusals_kept"] += kind == "refused"
    return counts


def main():
    args = sys.argv[1:]
    without = None
    if "--without" in args:
        at = args.index("--without")
        without = args[at + 1]
        del args[at : at + 2]
    default = "../shared/peer/llm-outputs.jsonl"
    if not os.path.exists(default):
        default = "../../shared/peer/llm-outputs.jsonl"  # a git worktree one folder deeper
    path = args[0] if args else default
    lines = [l for l in read(path) if not (without and l["id"].startswith(without))]
    refusals = sum(1 for l in lines if l.get("category") == "none" and not l.get("expected_stated"))
    print(f"{path}: {len(lines)} replies" + (f" (without {without}*)" if without else ""))
    # The columns of the pactum rows printed by the scorecard tests; a peer has no
    # ambiguity flag and no schema guidance ("-").
    print("| peer | exact | wrong | refused | ambiguous | valid JSON: wrong | refusals kept | with schema: exact |")
    print("|---|---|---|---|---|---|---|---|")
    for name, run in [("json_repair (Python)", json_repair_outcomes), ("jsonrepair (npm)", jsonrepair_outcomes)]:
        c = score(lines, run(lines))
        print(f"| {name} | {c['exact']} | {c['wrong']} | {c['refused']} | - | {c['valid_wrong']} | {c['refusals_kept']}/{refusals} | - |")


if __name__ == "__main__":
    main()
