"""The pactum package as a user installs it: from the wheel, in a fresh virtual environment
(`.ci/run` builds the wheel, makes the environment and runs this file there). PACTUM_REPO is
the checkout: its README and its shipped project."""

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import pactum

REPO = Path(os.environ["PACTUM_REPO"])
RECORDED = "I was charged twice for my subscription this month."
MESSAGE = "Hi, I was charged twice for my subscription this month, can you help?"


@pytest.fixture()
def project(tmp_path):
    """A copy of the shipped project (registry, contracts, packs, fixtures, work orders)."""
    for name in ["registry.json", "contracts", "prompt_packs", "fixtures", "work_orders", "schemas", "frameworks", "docs"]:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name)
        elif source.exists():
            shutil.copy(source, tmp_path / name)
    return tmp_path


def readme_section(title):
    text = (REPO / "README.md").read_text()
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_example_runs_as_written(monkeypatch, capsys):
    section = readme_section("Use it from Python")
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    expected = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(REPO)
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out == expected


def test_a_call_returns_the_validated_output_and_its_ledger_record(project):
    client = pactum.open(project, provider="dry-run")
    r = client.call("PRC-CLASSIFY-001@^1", {"user_input": MESSAGE})
    assert (r.contract_id, r.version, r.provider) == ("PRC-CLASSIFY-001", "1.0.0", "dry-run")
    assert r.output["label"] in {"billing", "technical", "account", "other"}
    assert r.usage["prompt_tokens"] > 0
    records = [json.loads(line) for line in (project / ".pactum/ledger.jsonl").read_text().splitlines()]
    named = [x for x in records if x["seq"] == r.ledger_seq]
    assert named and named[0]["hash"] == r.ledger_hash and named[0]["event"] == "exchange"


def test_eight_threads_share_one_client(project):
    client = pactum.open(project, provider="dry-run")
    hashes, failures = [], []

    def work(i):
        try:
            for j in range(5):
                hashes.append(client.call("PRC-CLASSIFY-001@^1", {"user_input": f"message {i}-{j}"}).ledger_hash)
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert len(set(hashes)) == 40
    out = subprocess.run(["pactum", "ledger", "verify", "--json"], cwd=project, capture_output=True, text=True)
    assert json.loads(out.stdout)["records"] == 120, out.stdout


def test_acall_runs_calls_concurrently_without_blocking_the_loop(project):
    client = pactum.open(project, provider="dry-run", ledger=False)

    async def main():
        ticks = 0
        done = asyncio.Event()

        async def heartbeat():
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0)

        beat = asyncio.create_task(heartbeat())
        calls = [client.acall("PRC-CLASSIFY-001@^1", {"user_input": f"m{i}"}) for i in range(20)]
        results = await asyncio.gather(*calls)
        done.set()
        await beat
        return results, ticks

    results, ticks = asyncio.run(main())
    assert len(results) == 20 and all(r.contract_id == "PRC-CLASSIFY-001" for r in results)
    # The loop kept running while the calls were in flight.
    assert ticks > 1


def test_every_error_family(project):
    client = pactum.open(project, provider="dry-run", ledger=False)
    with pytest.raises(pactum.InputInvalid) as e:
        client.call("PRC-CLASSIFY-001@^1", {"user_input": 42})
    assert e.value.code == "input_schema_invalid" and e.value.errors[0]["pointer"] == "/user_input"
    assert isinstance(e.value, pactum.PactumError)
    with pytest.raises(pactum.NotFound) as e:
        client.call("PRC-CLASSIFY-009@^1", {})
    assert e.value.code == "contract_not_found"
    with pytest.raises(pactum.NotFound) as e:
        client.call("PRC-CLASSIFY-001@^7", {"user_input": "x"})
    assert e.value.code == "contract_version_not_found"
    # A provider that is not configured (no model).
    with pytest.raises(pactum.ProviderError) as e:
        pactum.open(project, provider="openai", ledger=False).call("PRC-CLASSIFY-001@^1", {"user_input": "x"})
    assert e.value.code == "provider_not_configured"
    # Replies that are never JSON, repairs included.
    bad = {"responses": [{"contract_id": "PRC-CLASSIFY-001", "text": "I think it is billing."}]
           + [{"contract_id": "PRC-REPAIRJSON-001", "text": "Still no JSON."}] * 2}
    (project / "bad.json").write_text(json.dumps(bad))
    (project / "pactum.toml").write_text('[providers.bad]\nkind = "scripted"\nfixtures = "bad.json"\n')
    with pytest.raises(pactum.OutputInvalid) as e:
        pactum.open(project, provider="bad", ledger=False).call("PRC-CLASSIFY-001@^1", {"user_input": "x"})
    assert e.value.code in {"output_json_extraction_failed", "supervisor_unrecoverable"}
    # pactum.toml that does not parse.
    (project / "pactum.toml").write_text("[providers.bad\n")
    with pytest.raises(pactum.ConfigError) as e:
        pactum.open(project, ledger=False)
    assert e.value.code == "config_invalid"
    (project / "pactum.toml").unlink()
    # An active contract's file edited: its hash no longer matches.
    contract = project / "contracts/classify/1.0.0.json"
    contract.write_text(contract.read_text().replace("four queues", "five queues"))
    with pytest.raises(pactum.RegistryError) as e:
        pactum.open(project, provider="dry-run", ledger=False).call("PRC-CLASSIFY-001@^1", {"user_input": "x"})
    assert e.value.code == "contract_hash_mismatch"


def test_a_work_order_runs_and_validate_reports_findings(project):
    client = pactum.open(project, ledger=False)
    result = client.run(project / "work_orders/WO-DEMO-CLASSIFY-001.json")
    assert result["ok"] and result["output"]["label"] == "billing", result
    assert pactum.validate(project) == []
    (project / "contracts/classify/9.0.0.json").write_text("{")
    findings = pactum.validate([project])
    assert [f["code"] for f in findings] == ["contract_parse_error"]
    assert findings[0]["file"].endswith("contracts/classify/9.0.0.json")


def test_generated_types_are_checked_by_mypy(project, tmp_path):
    out = tmp_path / "app" / "contracts.py"
    subprocess.run(["pactum", "generate", "python", "--out", str(out)], cwd=project, check=True)
    app = out.parent
    (app / "good.py").write_text(
        "import pactum\n"
        "from contracts import Classify001Input, classify_001\n\n"
        f"client = pactum.open({str(project)!r}, provider='dry-run', ledger=False)\n"
        "answer = classify_001(client, Classify001Input(user_input='I was charged twice.'))\n"
        "label: str = answer.label\n"
        "print(label)\n"
    )
    (app / "bad.py").write_text(
        "from contracts import Classify001Input\n\n"
        "Classify001Input(user_inpt='I was charged twice.')\n"
    )
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental"]
    good = subprocess.run(mypy + ["good.py", "contracts.py"], cwd=app, capture_output=True, text=True)
    assert good.returncode == 0, good.stdout
    bad = subprocess.run(mypy + ["bad.py"], cwd=app, capture_output=True, text=True)
    assert bad.returncode == 1 and 'Unexpected keyword argument "user_inpt"' in bad.stdout, bad.stdout
    # And the typed function runs.
    ran = subprocess.run([sys.executable, "good.py"], cwd=app, capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.strip() in {"billing", "technical", "account", "other"}, ran.stderr
    # The TypeScript declarations are written too.
    ts = tmp_path / "contracts.d.ts"
    subprocess.run(["pactum", "generate", "typescript", "--out", str(ts)], cwd=project, check=True)
    assert "export interface Classify001Input" in ts.read_text()


def test_the_installed_command_is_pactum(project):
    version = subprocess.run(["pactum", "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("pactum ")
    where = shutil.which("pactum")
    assert where and Path(where).parent == Path(sys.executable).parent, where
    checked = subprocess.run(["pactum", "validate"], cwd=project, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_route_key_routes_a_weighted_label_stably_and_the_ledger_says_which(tmp_path):
    # The example's `ci` provider replays its cassette: an input it holds a recording of.
    project = tmp_path / "canary"
    shutil.copytree(REPO / "examples/eval-classify", project, ignore=shutil.ignore_patterns(".pactum"))
    for args in (["registry", "promote", "PRC-CLASSIFY-001@1.1.0"],
                 ["registry", "label", "PRC-CLASSIFY-001", "production", "1.0.0"],
                 ["registry", "label", "PRC-CLASSIFY-001", "production", "1.1.0", "--weight", "50"]):
        subprocess.run(["pactum", *args], cwd=project, check=True, capture_output=True)
    client = pactum.open(project, provider="ci")
    served = {}
    for key in (f"customer-{i}" for i in range(16)):
        first = client.call("PRC-CLASSIFY-001@production", {"user_input": RECORDED}, route_key=key)
        again = client.call("PRC-CLASSIFY-001@production", {"user_input": RECORDED}, route_key=key)
        assert first.version == again.version, key
        served[key] = first.version
    assert set(served.values()) == {"1.0.0", "1.1.0"}, served
    records = [json.loads(line) for line in (project / ".pactum/ledger.jsonl").read_text().splitlines()]
    exchanges = [r for r in records if r.get("event") == "exchange"]
    assert len(exchanges) == 32
    assert all(r["label"] == "production" and r["label_weight"] == 50 for r in exchanges), exchanges[0]
    # Another process routes every key the same way.
    script = (
        "import json, sys, pactum\n"
        f"c = pactum.open({str(project)!r}, provider='ci', ledger=False)\n"
        f"keys = {sorted(served)!r}\n"
        f"print(json.dumps({{k: c.call('PRC-CLASSIFY-001@production', {{'user_input': {RECORDED!r}}}, route_key=k).version for k in keys}}))\n"
    )
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(other.stdout) == served
