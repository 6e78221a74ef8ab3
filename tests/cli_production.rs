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

// --- canaries: weighted labels -----------------------------------------------------------

/// The eval example with 1.1.0 promoted and `production` at 1.0.0 90%, 1.1.0 10%.
fn canary() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_tree(&common::repo().join("examples/eval-classify"), dir.path());
    let _ = std::fs::remove_dir_all(dir.path().join(".pactum"));
    pactum(dir.path(), &["registry", "promote", "PRC-CLASSIFY-001@1.1.0"]).status(0);
    pactum(dir.path(), &["registry", "label", "PRC-CLASSIFY-001", "production", "1.0.0"]).status(0);
    let out = pactum(
        dir.path(),
        &["registry", "label", "PRC-CLASSIFY-001", "production", "1.1.0", "--weight", "10"],
    );
    out.status(0);
    assert!(out.stdout.contains("1.0.0 -> 1.0.0 90%, 1.1.0 10%"), "{out}");
    dir
}

/// The version `PRC-CLASSIFY-001@production` resolves to for `key`, in a process of its own.
fn served(dir: &std::path::Path, key: &str) -> String {
    let wo = json!({"work_order_id": "WO-CANARY-1", "kind": "exchange", "contract": "PRC-CLASSIFY-001@production",
                    "route_key": key, "input": {"user_input": "I was charged twice for my subscription this month."},
                    "provider": {"name": "ci"}});
    std::fs::write(dir.join("wo.json"), wo.to_string()).unwrap();
    let out = pactum(dir, &["run", "wo.json", "--json"]);
    let doc = common::single_result(out.json());
    doc["contract"].as_str().unwrap_or_else(|| panic!("{doc:#}")).to_string()
}

#[test]
fn a_weighted_label_routes_each_key_to_one_version_and_the_ledger_says_which() {
    let dir = canary();
    let text = std::fs::read_to_string(dir.path().join("registry.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["labels"]["PRC-CLASSIFY-001"]["production"], json!({"1.0.0": 90, "1.1.0": 10}));
    // The move is a history event the replay accounts for.
    pactum(dir.path(), &["registry", "verify"]).status(0);
    let log = pactum(dir.path(), &["registry", "log"]).stdout;
    // Which label moved, from where, and the canary's weights.
    let moves: Vec<&str> = log.lines().filter(|l| l.contains(" labeled ")).collect();
    assert_eq!(moves.len(), 2, "{log}");
    assert!(moves[0].ends_with("  label production"), "{log}");
    assert!(moves[1].ends_with("  label production (was 1.0.0): 1.0.0 90%, 1.1.0 10%"), "{log}");
    // The same key, the same version, in every process; the ledger records label and weight.
    let keys: Vec<String> = (0..12).map(|i| format!("customer-{i}")).collect();
    let first: Vec<String> = keys.iter().map(|k| served(dir.path(), k)).collect();
    let again: Vec<String> = keys.iter().map(|k| served(dir.path(), k)).collect();
    assert_eq!(first, again);
    let picked = |key: &str| {
        pactum::registry::label::Targets::from_json(&json!({"1.0.0": 90, "1.1.0": 10}))
            .unwrap()
            .pick(key)
            .0
            .to_string()
    };
    for (k, v) in keys.iter().zip(&first) {
        assert_eq!(v, &format!("PRC-CLASSIFY-001@{}", picked(k)), "{k}");
    }
    let records = records(dir.path());
    let exchange = records.iter().find(|r| r["event"] == "exchange").unwrap();
    assert_eq!(exchange["label"], "production");
    assert!(exchange["label_weight"] == 90 || exchange["label_weight"] == 10, "{exchange:#}");
    // Stats by label and by version see the split.
    let rows = pactum(dir.path(), &["stats", "--by", "version", "--json"]).json()["rows"].clone();
    let calls: u64 = rows.as_array().unwrap().iter().map(|r| r["calls"].as_u64().unwrap()).sum();
    assert_eq!(calls, 24);
    // A rollback is weight 0: the label names 1.0.0 alone again.
    let out = pactum(
        dir.path(),
        &["registry", "label", "PRC-CLASSIFY-001", "production", "1.1.0", "--weight", "0"],
    );
    out.status(0);
    assert!(out.stdout.contains("-> 1.0.0\n"), "{out}");
    for k in &keys {
        assert_eq!(served(dir.path(), k), "PRC-CLASSIFY-001@1.0.0");
    }
    pactum(dir.path(), &["registry", "verify"]).status(0);
}

#[test]
fn weights_typed_by_hand_are_refused_by_verify() {
    let dir = canary();
    let path = dir.path().join("registry.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let with = |weights: Value| {
        let mut d = doc.clone();
        d["labels"]["PRC-CLASSIFY-001"]["production"] = weights;
        std::fs::write(&path, serde_json::to_string_pretty(&d).unwrap()).unwrap();
    };
    // The canary flipped to 90% by hand: the history moved it to 10%.
    with(json!({"1.0.0": 10, "1.1.0": 90}));
    let out = pactum(dir.path(), &["registry", "verify", "--json"]);
    out.status(1);
    assert_eq!(out.json()["code"], "registry_history_mismatch", "{out}");
    // Weights that do not add up to 100 do not even read.
    with(json!({"1.0.0": 50, "1.1.0": 10}));
    let out = pactum(dir.path(), &["registry", "verify", "--json"]);
    assert_ne!(out.code, 0, "{out}");
}

#[test]
fn the_merge_driver_merges_weights_and_refuses_two_different_canaries() {
    let base = canary();
    let read = |d: &std::path::Path| std::fs::read_to_string(d.join("registry.json")).unwrap();
    let b = read(base.path());
    let ours = tempfile::tempdir().unwrap();
    common::copy_tree(base.path(), ours.path());
    let theirs = tempfile::tempdir().unwrap();
    common::copy_tree(base.path(), theirs.path());
    // Ours widens the canary; theirs adds another label.
    pactum(
        ours.path(),
        &["registry", "label", "PRC-CLASSIFY-001", "production", "1.1.0", "--weight", "25"],
    )
    .status(0);
    pactum(theirs.path(), &["registry", "label", "PRC-CLASSIFY-001", "staging", "1.1.0"]).status(0);
    let work = tempfile::tempdir().unwrap();
    let (bp, op, tp) =
        (work.path().join("b.json"), work.path().join("o.json"), work.path().join("t.json"));
    std::fs::write(&bp, &b).unwrap();
    std::fs::write(&op, read(ours.path())).unwrap();
    std::fs::write(&tp, read(theirs.path())).unwrap();
    let args =
        ["registry", "merge", bp.to_str().unwrap(), op.to_str().unwrap(), tp.to_str().unwrap()];
    pactum(ours.path(), &args).status(0);
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&op).unwrap()).unwrap();
    assert_eq!(
        merged["labels"]["PRC-CLASSIFY-001"]["production"],
        json!({"1.0.0": 75, "1.1.0": 25})
    );
    assert_eq!(merged["labels"]["PRC-CLASSIFY-001"]["staging"], "1.1.0");
    // Both sides reweigh production differently: a conflict, nothing written.
    pactum(
        theirs.path(),
        &["registry", "label", "PRC-CLASSIFY-001", "production", "1.1.0", "--weight", "50"],
    )
    .status(0);
    std::fs::write(&op, read(ours.path())).unwrap();
    std::fs::write(&tp, read(theirs.path())).unwrap();
    let out = pactum(ours.path(), &args);
    out.status(1);
    assert!(out.stderr.contains("label `production`"), "{out}");
}

#[test]
fn stats_and_datasets_of_a_project_without_a_ledger_say_so() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_tree(&common::repo().join("examples/eval-classify"), dir.path());
    let _ = std::fs::remove_dir_all(dir.path().join(".pactum"));
    let commands: [&[&str]; 3] = [
        &["stats", "--json"],
        &[
            "eval",
            "dataset",
            "--from-ledger",
            "--contract",
            "PRC-CLASSIFY-001",
            "--out",
            "d.jsonl",
            "--json",
        ],
        &["stats", "elsewhere.jsonl", "--json"],
    ];
    for (i, args) in commands.iter().enumerate() {
        let out = pactum(dir.path(), args);
        out.status(2);
        let doc = out.json();
        assert_eq!(doc["code"], "io_error", "{out}");
        let message = doc["message"].as_str().unwrap();
        let (file, reason) = if i < 2 {
            (
                ".pactum/ledger.jsonl",
                "no ledger yet: a project's ledger is written by its first `pactum run`",
            )
        } else {
            ("elsewhere.jsonl", "no such ledger file")
        };
        assert!(message.starts_with(file) && message.contains(reason), "{message}");
    }
    assert!(!dir.path().join("d.jsonl").exists());
}
