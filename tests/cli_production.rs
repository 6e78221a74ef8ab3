//! From production back to evidence (SPEC §26), through the binary: exchange records carry
//! their input, `pactum eval dataset --from-ledger` turns them into a suite's dataset, and
//! `pactum stats` says how each version behaves.

use serde_json::{Value, json};

use crate::common::{self, Out};

fn pactum(dir: &std::path::Path, args: &[&str]) -> Out {
    let mut cmd = common::pactum_in(dir);
    cmd.args(args);
    Out::of(&mut cmd)
}

const CLASSIFY: &str = "work_orders/WO-DEMO-CLASSIFY-001.json";

fn records(dir: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join(".pactum/ledger.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn recorded_exchanges_become_a_dataset_a_suite_runs() {
    let dir = crate::cli_otel::demo();
    for _ in 0..3 {
        pactum(dir.path(), &["run", CLASSIFY]).status(0);
    }
    let exchange = records(dir.path()).into_iter().find(|r| r["event"] == "exchange").unwrap();
    assert_eq!(exchange["input"]["mode"], "careful", "the record carries its input: {exchange:#}");
    let out = pactum(
        dir.path(),
        &[
            "eval",
            "dataset",
            "--from-ledger",
            "--contract",
            "PRC-CLASSIFY-001@^1",
            "--out",
            "evals/prod/cases.jsonl",
            "--json",
        ],
    );
    out.status(0);
    assert_eq!(out.json()["cases"], 3, "{out}");
    // The file is a suite's dataset: validate takes it, eval runs it.
    std::fs::write(
        dir.path().join("evals/prod/EVAL-PROD-001.json"),
        json!({"eval_id": "EVAL-PROD-001", "contract": "PRC-CLASSIFY-001@^1", "dataset": "evals/prod/cases.jsonl",
               "assertions": [], "thresholds": {"pass_rate": 1.0}})
        .to_string(),
    )
    .unwrap();
    let out = pactum(dir.path(), &["validate", "--format", "json"]);
    let doc = out.json();
    assert!(
        doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| !d["file"].as_str().unwrap_or("").starts_with("evals/")),
        "{doc:#}"
    );
    // Sampling is reproducible; the seed chooses.
    let sample = |seed: &str| {
        pactum(
            dir.path(),
            &[
                "eval",
                "dataset",
                "--from-ledger",
                "--contract",
                "PRC-CLASSIFY-001",
                "--sample",
                "2",
                "--seed",
                seed,
                "--out",
                "s.jsonl",
            ],
        )
        .status(0);
        std::fs::read_to_string(dir.path().join("s.jsonl")).unwrap()
    };
    assert_eq!(sample("1"), sample("1"));
    assert_eq!(sample("1").lines().count(), 2);
    // Only failed exchanges: none here.
    let out = pactum(
        dir.path(),
        &[
            "eval",
            "dataset",
            "--from-ledger",
            "--contract",
            "PRC-CLASSIFY-001",
            "--where",
            "verdict=invalid",
            "--out",
            "bad.jsonl",
            "--json",
        ],
    );
    assert_eq!(out.json()["cases"], 0, "{out}");
    let out = pactum(
        dir.path(),
        &[
            "eval",
            "dataset",
            "--from-ledger",
            "--contract",
            "PRC-CLASSIFY-001",
            "--where",
            "verdict=maybe",
            "--out",
            "x.jsonl",
        ],
    );
    out.status(2);
}

#[test]
fn inputs_with_masked_values_are_skipped_and_counted_and_inputs_can_be_left_out() {
    let dir = crate::cli_otel::demo();
    // The environment's secret appears in the input: the ledger masks it.
    let wo = dir.path().join(CLASSIFY);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&wo).unwrap()).unwrap();
    doc["input"]["history"] = json!(["my token is sk-prod-secret-000111222"]);
    std::fs::write(&wo, doc.to_string()).unwrap();
    let mut cmd = common::pactum_in(dir.path());
    cmd.args(["run", CLASSIFY]).env("SHOP_API_KEY", "sk-prod-secret-000111222");
    Out::of(&mut cmd).status(0);
    let text = std::fs::read_to_string(dir.path().join(".pactum/ledger.jsonl")).unwrap();
    assert!(!text.contains("sk-prod-secret-000111222"));
    let out = pactum(
        dir.path(),
        &[
            "eval",
            "dataset",
            "--from-ledger",
            "--contract",
            "PRC-CLASSIFY-001",
            "--out",
            "c.jsonl",
            "--json",
        ],
    );
    let built = out.json();
    assert_eq!(
        (built["cases"].as_u64(), built["masked"].as_u64()),
        (Some(0), Some(1)),
        "{built:#}"
    );
    // [ledger] inputs = false: no input recorded.
    std::fs::write(dir.path().join("pactum.toml"), "[ledger]\ninputs = false\n").unwrap();
    pactum(dir.path(), &["run", crate::cli_otel::CLASSIFY]).status(0);
    let last = records(dir.path()).into_iter().rfind(|r| r["event"] == "exchange").unwrap();
    assert!(last.get("input").is_none(), "{last:#}");
}

#[test]
fn stats_give_one_row_per_version_in_every_format() {
    let dir = crate::cli_otel::demo();
    for _ in 0..4 {
        pactum(dir.path(), &["run", CLASSIFY]).status(0);
    }
    let out = pactum(dir.path(), &["stats", "--contract", "PRC-CLASSIFY-001", "--json"]);
    out.status(0);
    let doc = out.json();
    assert_eq!(doc["rows"].as_array().unwrap().len(), 1, "{doc:#}");
    let row = &doc["rows"][0];
    assert_eq!((row["group"].as_str(), row["calls"].as_u64()), (Some("1.0.0"), Some(4)));
    assert_eq!(row["validated_at_once"], 1.0);
    assert_eq!(row["prompt_tokens"], 4 * 210);
    let text = pactum(dir.path(), &["stats"]).stdout;
    assert!(
        text.contains("PRC-CLASSIFY-001 version 1.0.0: 4 calls, 100.0% validated at once"),
        "{text}"
    );
    let md = pactum(dir.path(), &["stats", "--by", "provider", "--format", "markdown"]).stdout;
    assert!(md.contains("| PRC-CLASSIFY-001 | scripted | 4 |"), "{md}");
    // A ledger that does not verify is refused, never counted.
    let path = dir.path().join(".pactum/ledger.jsonl");
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        "\"verdict\":\"ok\"",
        "\"verdict\":\"no\"",
        1,
    );
    std::fs::write(&path, text).unwrap();
    let out = pactum(dir.path(), &["stats", "--json"]);
    out.status(1);
    assert_eq!(out.json()["code"], "ledger_broken", "{out}");
}
