#!/usr/bin/env python3
"""A curated mutation run over pactum's trust-critical rules (issue 29, item 2).

This is the "equivalent" of a cargo-mutants run that issue 29 allows, not cargo-mutants:
the mutants are written by hand in scripts/mutants.toml, one per rule (a check deleted or
weakened), each with the narrow `cargo test` arguments that must catch it. See TESTING.md.

For each mutant the runner
  1. checks that `find` occurs exactly once in `file` (it refuses to run otherwise),
  2. writes the file with `find` replaced by `replace`,
  3. builds the tests (`cargo test --no-run ARGS`): a build failure is "unviable",
  4. runs them (`cargo test ARGS`): a non-zero exit status is "caught", zero "SURVIVED",
  5. restores the file in a `finally` and checks `git diff --quiet` on it.

Before the mutants, every distinct test command runs once on the unmutated tree and must
pass (a test that fails anyway would "catch" every mutant); `--no-baseline` skips that.

Exit status: 0 when every mutant was caught or survived with a `survives = "reason"` in
the TOML; 1 when a mutant survived unexplained, was unviable, timed out, or was caught
although the TOML says it survives (the explanation is stale); 2 on a usage or setup
error (a dirty file, a `find` that does not occur exactly once, an unknown key).

Python 3.11+ standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LIST = ROOT / "scripts" / "mutants.toml"
KEYS = {"name", "file", "find", "replace", "test", "why", "survives", "timeout"}
REQUIRED = ("name", "file", "find", "replace", "test")


class Refused(Exception):
    """A setup problem: nothing is mutated."""


@dataclass
class Mutant:
    name: str
    file: str
    find: str
    replace: str
    test: list[str]
    why: str = ""
    survives: str = ""
    timeout: int = 1200


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # caught | SURVIVED | unviable | timeout
    seconds: float
    failed: list[str] = field(default_factory=list)
    log: Path | None = None


def load(path: Path) -> list[Mutant]:
    with path.open("rb") as f:
        doc = tomllib.load(f)
    raw = doc.get("mutant")
    if not isinstance(raw, list) or not raw:
        raise Refused(f"{path}: no [[mutant]] tables")
    out, names = [], set()
    for i, m in enumerate(raw):
        unknown = set(m) - KEYS
        if unknown:
            raise Refused(f"{path}: mutant #{i + 1}: unknown key(s) {sorted(unknown)}")
        missing = [k for k in REQUIRED if k not in m]
        if missing:
            raise Refused(f"{path}: mutant #{i + 1}: missing {missing}")
        if not isinstance(m["test"], list) or not all(isinstance(a, str) for a in m["test"]):
            raise Refused(f"{path}: {m['name']}: `test` must be a list of strings")
        if m["name"] in names:
            raise Refused(f"{path}: two mutants are named {m['name']}")
        if m["find"] == m["replace"]:
            raise Refused(f"{path}: {m['name']}: `replace` is the same as `find`")
        names.add(m["name"])
        out.append(Mutant(**m))
    return out


def git(*args: str, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                          check=check)


def preflight(mutants: list[Mutant]) -> None:
    """Every mutated file is committed as it is, and every `find` occurs exactly once."""
    for file in sorted({m.file for m in mutants}):
        path = ROOT / file
        if not path.is_file():
            raise Refused(f"{file}: no such file")
        if git("ls-files", "--error-unmatch", "--", file).returncode != 0:
            raise Refused(f"{file}: not tracked by git (the runner restores against git)")
        dirty = git("status", "--porcelain", "--", file).stdout.strip()
        if dirty:
            raise Refused(f"{file} has uncommitted changes; commit or stash them first:\n{dirty}")
    for m in mutants:
        n = (ROOT / m.file).read_text(encoding="utf-8").count(m.find)
        if n != 1:
            raise Refused(f"{m.name}: `find` occurs {n} times in {m.file} (it must occur exactly once)")


def cargo(args: list[str], log, timeout: float) -> int | None:
    """Runs cargo with `args`, output appended to `log`; None on timeout."""
    log.write(f"\n$ cargo {' '.join(args)}\n")
    log.flush()
    proc = subprocess.Popen(["cargo", *args], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        # The whole session (cargo and the test binaries it started).
        os.killpg(proc.pid, 9)
        proc.wait()
        return None


def build_args(test: list[str]) -> list[str]:
    """`cargo test --no-run` with the cargo-level arguments (those before `--`)."""
    cut = test.index("--") if "--" in test else len(test)
    return ["test", "--no-run", *test[:cut]]


FAILED = re.compile(r"^test (\S+) \.\.\. FAILED", re.M)


PASSED = re.compile(r"^test result: \w+\. (\d+) passed", re.M)


def failed_tests(log_path: Path, since: int) -> list[str]:
    text = log_path.read_text(encoding="utf-8", errors="replace")[since:]
    return sorted(set(FAILED.findall(text)))


def baseline(mutants: list[Mutant], logs: Path) -> None:
    seen: list[list[str]] = []
    for m in mutants:
        if m.test not in seen:
            seen.append(m.test)
    for i, test in enumerate(seen):
        log_path = logs / f"baseline-{i + 1}.log"
        started = time.monotonic()
        with log_path.open("w") as log:
            rc = cargo(["test", *test], log, timeout=1800)
        took = time.monotonic() - started
        print(f"baseline {' '.join(test):<60} {'ok' if rc == 0 else 'FAILED':>7} {took:6.0f}s",
              flush=True)
        if rc != 0:
            raise Refused(f"`cargo test {' '.join(test)}` fails without any mutant "
                          f"(log: {log_path}); it cannot tell a mutant apart")
        ran = sum(int(n) for n in PASSED.findall(log_path.read_text(encoding="utf-8", errors="replace")))
        if ran == 0:
            raise Refused(f"`cargo test {' '.join(test)}` runs no test (log: {log_path}): a test "
                          "that is filtered out or ignored catches nothing (pass `--include-ignored` "
                          "after `--` for an ignored one)")


def run_one(m: Mutant, logs: Path) -> Outcome:
    path = ROOT / m.file
    original = path.read_bytes()
    text = original.decode("utf-8")
    log_path = logs / f"{m.name}.log"
    started = time.monotonic()
    try:
        path.write_bytes(text.replace(m.find, m.replace, 1).encode("utf-8"))
        with log_path.open("w") as log:
            log.write(f"mutant {m.name}: {m.file}\n--- find\n{m.find}\n+++ replace\n{m.replace}\n")
            rc = cargo(build_args(m.test), log, timeout=m.timeout)
            if rc != 0:
                status = "timeout" if rc is None else "unviable"
                return Outcome(m, status, time.monotonic() - started, log=log_path)
            log.flush()
            since = log_path.stat().st_size
            rc = cargo(["test", *m.test], log, timeout=m.timeout)
        if rc is None:
            status = "timeout"
        else:
            status = "caught" if rc != 0 else "SURVIVED"
        return Outcome(m, status, time.monotonic() - started, failed_tests(log_path, since),
                       log_path)
    finally:
        path.write_bytes(original)
        if git("diff", "--quiet", "--", m.file).returncode != 0:
            print(f"FATAL: {m.file} differs from git after restoring it", file=sys.stderr)
            sys.exit(2)


def table(outcomes: list[Outcome]) -> str:
    rows = [("mutant", "result", "secs", "caught by / why it survives")]
    for o in outcomes:
        if o.status == "caught":
            note = ", ".join(o.failed) or "(a test failed; see log)"
        elif o.status == "SURVIVED" and o.mutant.survives:
            note = f"explained: {o.mutant.survives}"
        elif o.log:
            note = f"log: {o.log.relative_to(ROOT) if o.log.is_relative_to(ROOT) else o.log}"
        else:
            note = ""
        rows.append((o.mutant.name, o.status, f"{o.seconds:.0f}", note))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    lines = [f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]:>5}  {r[3]}" for r in rows]
    lines.insert(1, "-" * min(120, max(len(x) for x in lines)))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", default=[], metavar="NAME_SUBSTRING",
                    help="run only mutants whose name contains this (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip running each test command once on the unmutated tree")
    ap.add_argument("--mutants", type=Path, default=DEFAULT_LIST, help="the TOML list")
    args = ap.parse_args(argv)
    try:
        mutants = load(args.mutants)
        if args.only:
            mutants = [m for m in mutants if any(s in m.name for s in args.only)]
            if not mutants:
                raise Refused(f"no mutant name contains {args.only}")
        if args.list:
            for m in mutants:
                mark = "  [survives]" if m.survives else ""
                print(f"{m.name}{mark}\n    {m.file}\n    cargo test {' '.join(m.test)}")
                if m.why:
                    print(f"    {m.why}")
            return 0
        preflight(mutants)
        logs = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "mutants"
        logs.mkdir(parents=True, exist_ok=True)
        head = git("rev-parse", "--short", "HEAD").stdout.strip()
        print(f"{len(mutants)} mutant(s) at {head}; logs in {logs}", flush=True)
        if not args.no_baseline:
            baseline(mutants, logs)
    except Refused as e:
        print(f"mutants: refused: {e}", file=sys.stderr)
        return 2
    outcomes = []
    for i, m in enumerate(mutants):
        o = run_one(m, logs)
        outcomes.append(o)
        print(f"[{i + 1}/{len(mutants)}] {m.name}: {o.status} ({o.seconds:.0f}s)"
              + (f" by {', '.join(o.failed)}" if o.failed else ""), flush=True)
    print()
    print(table(outcomes))
    bad = [o for o in outcomes if o.status in ("unviable", "timeout")
           or (o.status == "SURVIVED" and not o.mutant.survives)]
    stale = [o for o in outcomes if o.status == "caught" and o.mutant.survives]
    for o in stale:
        print(f"{o.mutant.name}: marked `survives` but was caught: remove the explanation")
    counts = {s: sum(o.status == s for o in outcomes) for s in
              ("caught", "SURVIVED", "unviable", "timeout")}
    print("\n" + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return 1 if bad or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
