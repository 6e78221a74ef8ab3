#!/usr/bin/env bash
# The extraction scorecard side by side, in one run: pactum (strict and lenient, from the
# scorecard tests) and the peer repairers json_repair and jsonrepair (extract_peers.py),
# on the peer corpus and on the in-repo corpus. Run from the repository root:
#
#   pip install json_repair && npm install --prefix bench/scripts/node jsonrepair
#   bash bench/scripts/extract_scorecard.sh [path/to/llm-outputs.jsonl]
set -euo pipefail
cd "$(dirname "$0")/../.."
# `../shared` beside the clone, or `../../shared` for a git worktree one folder deeper
# (where the peer test looks too).
default=../shared/peer/llm-outputs.jsonl
[ -e "$default" ] || default=../../shared/peer/llm-outputs.jsonl
peer="${1:-$default}"
rows() { grep -E '^(peer corpus|in-repo corpus|\| )'; }

echo "== peer corpus: $peer"
cargo test -q --test suite extract_peer -- --include-ignored --nocapture 2>/dev/null | rows
python3 bench/scripts/extract_peers.py "$peer" | tail -n +4
echo "-- without json_repair's own test suite"
python3 bench/scripts/extract_peers.py "$peer" --without json-repair- | tail -n +4
echo
echo "== in-repo corpus: tests/fixtures/extract/replies.jsonl"
cargo test -q --test suite extract_scorecard::scorecard_on_the_in_repo_corpus -- --nocapture 2>/dev/null | rows
python3 bench/scripts/extract_peers.py tests/fixtures/extract/replies.jsonl | tail -n +4
