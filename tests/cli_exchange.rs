//! End-to-end tests of exchange work orders through the `pactum` binary, offline: the
//! scripted and dry-run providers, supervisor repair, `--jobs`, files a provider returns,
//! and the `render` and `extract` commands (SPEC §3.4, §6, §8.3, §8.5, §12, §13).
//!
//! HTTP providers, replay and secret hygiene are in `cli_exchange_http.rs`; the ledger in
//! `cli_exchange_ledger.rs`. Every test builds its own project in a tempdir.

use crate::exchange_harness as harness;

use harness::{Project, classify_output_schema, first_code, schema_errors};
use serde_json::{Value, json};

// --- scripted ----------------------------------------------------------------------------

#[test]
fn scripted_fixtures_run_offline_and_say_so() {
    let p = Project::new();
    p.copy_fixture("scripted/classify_ok.json", "wo/fx.json");
    let wo = p.classify_wo("WO-SCRIPTED-1", json!({"provider": {"fixtures": "fx.json"}}));

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(0);
    assert!(out.stderr.contains("offline"), "the run must say it is offline:\n{out}");
    assert!(out.stderr.contains("scripted"), "and what answers:\n{out}");
    assert_eq!(r["ok"], true);
    assert_eq!(r["work_order_id"], "WO-SCRIPTED-1");
    assert_eq!(r["status"], "completed");
    assert_eq!(r["provider"], "scripted");
    assert_eq!(r["contract"], "PRC-CLASSIFY-001@1.0.0");
    assert_eq!(
        r["output"],
        json!({"label": "billing", "confidence": 0.92, "reasons": ["double charge"]})
    );
    assert_eq!(r["extraction"]["method"], "fenced");
    assert_eq!(r["usage"], json!({"prompt_tokens": 120, "completion_tokens": 30}));
    assert_eq!(r["errors"], json!([]));
    assert_eq!(r["repair_attempts"], 0);
    let records = p.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["provider"], "scripted");
    assert_eq!(records[0]["verdict"], "ok");
}

#[test]
fn scripted_run_prints_a_summary_for_people() {
    let p = Project::new();
    p.copy_fixture("scripted/classify_ok.json", "wo/fx.json");
    let wo = p.classify_wo("WO-SCRIPTED-TEXT", json!({"provider": {"fixtures": "fx.json"}}));

    let out = p.run(&[&wo], &[], &[]);

    out.status(0);
    assert!(out.stdout.contains("WO-SCRIPTED-TEXT"), "{out}");
    assert!(out.stdout.contains("Output:") && out.stdout.contains("billing"), "{out}");
    assert!(out.stdout.contains("via scripted"), "{out}");
    assert!(out.stderr.contains("offline"), "{out}");
    assert!(serde_json::from_str::<Value>(&out.stdout).is_err(), "text output is not JSON");
    assert!(out.stdout.contains("Extracted: fenced"), "{out}");

    // A reply that is the JSON and nothing else was not found inside anything.
    let bare = r#"{"label": "billing", "confidence": 0.9, "reasons": ["double charge"]}"#;
    p.fixtures("bare.json", json!([{"contract_id": "PRC-CLASSIFY-001", "text": bare}]));
    let wo = p.classify_wo("WO-SCRIPTED-BARE", json!({"provider": {"fixtures": "bare.json"}}));
    let out = p.run(&[&wo], &[], &[]);
    out.status(0);
    assert!(out.stdout.contains(&format!("Extracted: direct (bytes 0..{})", bare.len())), "{out}");
    // Prose around it: found embedded.
    let prose = format!("Sure. {bare} Anything else?");
    p.fixtures("prose.json", json!([{"contract_id": "PRC-CLASSIFY-001", "text": prose}]));
    let wo = p.classify_wo("WO-SCRIPTED-PROSE", json!({"provider": {"fixtures": "prose.json"}}));
    let out = p.run(&[&wo], &[], &[]);
    assert!(out.stdout.contains("Extracted: embedded (bytes 6.."), "{out}");
}

/// A classify work order that fails before or at its scripted call: the scripted replies of
/// the fixtures file it names (no file when `None`), its other fields, the status of its
/// result (`None`: refused before it runs, so there is none), and the code and a text of the
/// first error's message the run must fail with.
struct Failing {
    name: &'static str,
    id: &'static str,
    fixtures: Option<Value>,
    extra: Value,
    status: Option<&'static str>,
    code: &'static str,
    says: Option<&'static str>,
}

fn failing() -> Vec<Failing> {
    let ok = || {
        let text = std::fs::read_to_string(harness::fixture("scripted/classify_ok.json")).unwrap();
        Some(serde_json::from_str::<Value>(&text).unwrap()["responses"].clone())
    };
    vec![
        Failing {
            name: "a simulated outage fails with its code",
            id: "WO-SCRIPTED-DOWN",
            fixtures: Some(
                json!([{"error": {"code": "provider_unreachable", "message": "simulated outage"}}]),
            ),
            extra: json!({}),
            status: Some("failed"),
            code: "provider_unreachable",
            says: Some("simulated outage"),
        },
        Failing {
            name: "a simulated failure without a message",
            id: "WO-SCRIPTED-SHAPE",
            fixtures: Some(json!([{"error": {"code": "provider_timeout"}}])),
            extra: json!({}),
            status: Some("failed"),
            code: "provider_timeout",
            says: None,
        },
        Failing {
            name: "a script without replies is exhausted",
            id: "WO-SCRIPTED-EMPTY",
            fixtures: Some(json!([])),
            extra: json!({}),
            status: Some("failed"),
            code: "script_exhausted",
            says: None,
        },
        Failing {
            name: "a missing fixtures file is an error, not a model call",
            id: "WO-SCRIPTED-NOFILE",
            fixtures: None,
            extra: json!({}),
            status: None,
            code: "provider_not_configured",
            says: None,
        },
        // An unresolvable pin fails before any call, listing the versions.
        Failing {
            name: "a pin no version matches",
            id: "WO-PIN-MISSING",
            fixtures: ok(),
            extra: json!({"contract": "PRC-CLASSIFY-001@=2.0.0"}),
            status: Some("failed"),
            code: "contract_version_not_found",
            says: Some("1.0.0"),
        },
        Failing {
            name: "a pin of an unknown id",
            id: "WO-PIN-UNKNOWN",
            fixtures: ok(),
            extra: json!({"contract": "PRC-CLASIFY-001"}),
            status: Some("failed"),
            code: "contract_not_found",
            says: Some("PRC-CLASSIFY-001"),
        },
    ]
}

#[test]
fn failing_runs_name_their_code_and_message_at_top_level() {
    harness::check_cases(
        &failing(),
        |case| case.name,
        |case| {
            let p = Project::new();
            let file = format!("{}.fixtures.json", case.id);
            if let Some(fixtures) = &case.fixtures {
                p.fixtures(&file, fixtures.clone());
            }
            let mut extra = json!({"provider": {"fixtures": file}});
            harness::merge(&mut extra, case.extra.clone());
            let wo = p.classify_wo(case.id, extra);

            let (out, r) = p.run_json(&wo, &[], &[]);

            out.status(1);
            assert_eq!(r["ok"], false, "{r:#}");
            if let Some(status) = case.status {
                assert_eq!(r["status"], status, "{r:#}");
            }
            assert!(r.get("output").is_none(), "a failed run has no output: {r:#}");
            assert_eq!(r["code"], case.code, "{r:#}");
            assert_eq!(first_code(&r), case.code, "{r:#}");
            assert!(r["message"].is_string(), "{r:#}");
            if let Some(says) = case.says {
                let message = r["errors"][0]["message"].as_str().unwrap();
                assert!(message.contains(says), "`{says}` missing: {r:#}");
            }
        },
    );
}

#[test]
fn a_missing_or_invalid_work_order_is_reported() {
    let p = Project::new();
    let out = p.run(&[&p.path("wo/none.json")], &["--json"], &[]);
    out.status(2);
    let doc = out.json();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["code"], "io_error", "{doc:#}");

    let bad = p.write_json(
        "wo/bad.json",
        &json!({"work_order_id": "wo-lowercase", "kind": "exchange", "contract": "PRC-CLASSIFY-001"}),
    );
    let out = p.run(&[&bad], &["--json"], &[]);
    out.status(1);
    assert_eq!(out.json()["code"], "work_order_invalid", "{out}");
}

#[test]
fn run_text_names_the_work_order_line_and_pointer_of_every_bad_value() {
    let p = Project::new();
    p.copy_fixture("scripted/classify_ok.json", "wo/fx.json");
    let wo = p.write(
        "wo/bad_input.json",
        "{\n  \"work_order_id\": \"WO-BAD-INPUT\",\n  \"kind\": \"exchange\",\n  \
         \"contract\": \"PRC-CLASSIFY-001@^1\",\n  \"provider\": {\"fixtures\": \"fx.json\"},\n  \
         \"input\": {\n    \"user_input\": \"\",\n    \"mode\": \"sloppy\"\n  }\n}\n",
    );
    let out = p.run(&[&wo], &[], &[]);
    out.status(1);
    // Named relative to the folder the command ran in (the project root).
    let shown = "wo/bad_input.json";
    assert!(
        out.stderr.contains(&format!("{shown}:7:19: /input/user_input: \"\" is shorter")),
        "{out}"
    );
    assert!(out.stderr.contains(&format!("{shown}:8:13: /input/mode: ")), "{out}");
    assert!(out.stderr.contains("help: fix `input` in"), "{out}");

    // The JSON result's top-level message names the pointer too.
    let (_, r) = p.run_json(&wo, &[], &[]);
    let message = r["message"].as_str().unwrap();
    assert!(message.starts_with("/user_input: ") || message.starts_with("/mode: "), "{r:#}");

    // An invalid work order: every finding with its line:column.
    let broken = p.write(
        "wo/broken.json",
        "{\n  \"work_order_id\": \"WO-BROKEN\",\n  \"kind\": \"exchange\",\n  \
         \"contract\": \"PRC-CLASSIFY-001\",\n  \"constraints\": {\"ttl\": -1}\n}\n",
    );
    let out = p.run(&[&broken], &[], &[]);
    out.status(1);
    let shown = "wo/broken.json";
    assert!(out.stderr.contains("error[work_order_invalid]"), "{out}");
    assert!(out.stderr.contains(&format!("{shown}:5:26: /constraints/ttl: -1 is less")), "{out}");
    assert!(
        out.stderr.contains(&format!("help: fix the values at these places in {shown}")),
        "{out}"
    );
}

#[test]
fn yaml_work_orders_and_fixtures_run_like_json_ones() {
    let p = Project::new();
    p.write(
        "wo/fx.yaml",
        "responses:\n  - contract_id: PRC-CLASSIFY-001\n    text: '{\"label\": \"account\", \"confidence\": 0.7}'\n",
    );
    let wo = p.write(
        "wo/yaml.yaml",
        "work_order_id: WO-YAML-1\nkind: exchange\ncontract: PRC-CLASSIFY-001@1.0.0\ninput:\n  user_input: I cannot log in\nprovider:\n  fixtures: fx.yaml\n",
    );
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(0);
    assert_eq!(r["work_order_id"], "WO-YAML-1");
    assert_eq!(r["output"], json!({"label": "account", "confidence": 0.7}));
}

// --- dry-run -----------------------------------------------------------------------------

#[test]
fn dry_run_output_fits_the_output_schema() {
    let p = Project::new();
    let wo = p.classify_wo("WO-DRY-1", json!({}));

    let (out, r) = p.run_json(&wo, &["--provider", "dry-run"], &[]);

    out.status(0);
    assert_eq!(r["ok"], true);
    assert_eq!(r["provider"], "dry-run");
    let errors = schema_errors(&classify_output_schema(), &r["output"]);
    assert!(errors.is_empty(), "dry-run output {} does not fit: {errors:?}", r["output"]);
    assert_eq!(p.records().len(), 1);
}

#[test]
fn dry_run_fits_a_second_contracts_schema() {
    let p = Project::new();
    p.register_report();
    let wo = p.write_json(
        "wo/dry-report.json",
        &json!({"work_order_id": "WO-DRY-REPORT", "kind": "exchange", "contract": "PRC-REPORT-001",
                "input": {"subject": "uptime", "audience": "ops"}}),
    );
    let (out, r) = p.run_json(&wo, &["--provider", "dry-run"], &[]);
    out.status(0);
    let contract: Value = serde_json::from_str(
        &std::fs::read_to_string(harness::fixture("report/contract.json")).unwrap(),
    )
    .unwrap();
    let errors = schema_errors(&contract["output_schema"], &r["output"]);
    assert!(errors.is_empty(), "{} does not fit: {errors:?}", r["output"]);
}

#[test]
fn nothing_configured_falls_back_to_dry_run_and_says_so() {
    let p = Project::new();
    let wo = p.classify_wo("WO-DRY-DEFAULT", json!({}));
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(0);
    assert_eq!(r["provider"], "dry-run");
    assert!(out.stderr.contains("offline") && out.stderr.contains("dry-run"), "{out}");
}

// --- supervisor repair (scripted) --------------------------------------------------------

#[test]
fn repair_fixes_an_output_that_fails_the_schema() {
    let p = Project::new();
    p.copy_fixture("scripted/repair_once.json", "wo/fx.json");
    let wo = p.classify_wo("WO-REPAIR-ONCE", json!({"provider": {"fixtures": "fx.json"}}));

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(0);
    assert_eq!(r["ok"], true, "{r:#}");
    assert_eq!(r["repair_attempts"], 1);
    assert_eq!(r["output"], json!({"label": "billing", "confidence": 0.8}));
    assert_eq!(r["errors"], json!([]));
    assert_eq!(r["supervisor_actions"][0]["outcome"], "repaired", "{r:#}");
    // Usage covers both calls.
    assert_eq!(r["usage"], json!({"prompt_tokens": 400, "completion_tokens": 24}));
    let records = p.records();
    assert_eq!(records.len(), 2, "one record for the exchange, one per repair attempt");
    assert_eq!(records[0]["contract_id"], "PRC-CLASSIFY-001");
    assert_eq!(records[0]["verdict"], "output_schema_invalid");
    assert_eq!(records[0]["repair_attempt"], 0);
    assert_eq!(records[1]["contract_id"], "PRC-REPAIRJSON-001");
    assert_eq!(records[1]["verdict"], "ok");
    assert_eq!(records[1]["repair_attempt"], 1);
}

#[test]
fn zero_repair_attempts_fail_at_once_with_the_original_code() {
    let p = Project::new();
    p.copy_fixture("scripted/repair_once.json", "wo/fx.json");
    let wo = p.classify_wo(
        "WO-REPAIR-ZERO",
        json!({"provider": {"fixtures": "fx.json"}, "constraints": {"max_repair_attempts": 0}}),
    );

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(1);
    assert_eq!(r["ok"], false);
    assert_eq!(first_code(&r), "output_schema_invalid");
    assert_eq!(r["repair_attempts"], 0);
    let pointers: Vec<&str> =
        r["errors"].as_array().unwrap().iter().map(|f| f["pointer"].as_str().unwrap()).collect();
    assert_eq!(pointers, ["/label"]);
    assert_eq!(p.records().len(), 1, "no repair call was made");
}

/// Replies that never fit the schema, under two repair attempts given explicitly and under
/// the default budget (which is two).
const NEVER_FIT: &[(&str, &str, Option<u64>)] = &[
    ("two repair attempts given", "WO-REPAIR-NEVER", Some(2)),
    ("the default repair budget", "WO-REPAIR-DEFAULT", None),
];

#[test]
fn replies_that_never_fit_end_in_supervisor_unrecoverable() {
    harness::check_cases(
        NEVER_FIT,
        |case| case.0,
        |&(_, id, attempts)| {
            let p = Project::new();
            p.copy_fixture("scripted/repair_never.json", "wo/fx.json");
            let mut extra = json!({"provider": {"fixtures": "fx.json"}});
            if let Some(attempts) = attempts {
                extra["constraints"] = json!({"max_repair_attempts": attempts});
            }
            let wo = p.classify_wo(id, extra);

            let (out, r) = p.run_json(&wo, &[], &[]);

            out.status(1);
            assert_eq!(r["ok"], false);
            assert_eq!(first_code(&r), "supervisor_unrecoverable", "{r:#}");
            assert_eq!(r["repair_attempts"], 2);
            let outcomes: Vec<&str> = r["supervisor_actions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["outcome"].as_str().unwrap())
                .collect();
            assert_eq!(outcomes, ["rejected", "rejected"]);
            let records = p.records();
            assert_eq!(records.len(), 3, "the exchange and two repair attempts, never a third");
            let verdicts: Vec<&str> =
                records.iter().map(|r| r["verdict"].as_str().unwrap()).collect();
            assert_eq!(
                verdicts,
                [
                    "output_json_extraction_failed",
                    "output_json_extraction_failed",
                    "output_schema_invalid"
                ]
            );
            let attempts: Vec<u64> =
                records.iter().map(|r| r["repair_attempt"].as_u64().unwrap()).collect();
            assert_eq!(attempts, [0, 1, 2]);
        },
    );
}

// --- --jobs ------------------------------------------------------------------------------

#[test]
fn jobs_run_eight_work_orders_and_report_them_in_input_order() {
    let p = Project::new();
    let labels = ["billing", "technical", "account", "other"];
    let mut paths = Vec::new();
    for i in 0..8 {
        let text = format!(r#"{{"label": "{}", "confidence": 0.{i}}}"#, labels[i % 4]);
        p.fixtures(&format!("fx{i}.json"), json!([{"text": text}]));
        paths.push(p.classify_wo(
            &format!("WO-JOBS-{i}"),
            json!({"provider": {"fixtures": format!("fx{i}.json")},
                   "input": {"user_input": format!("message number {i}")}}),
        ));
    }
    let refs: Vec<&std::path::Path> = paths.iter().map(|p| p.as_path()).collect();

    let out = p.run(&refs, &["--jobs", "4", "--json"], &[]);

    out.status(0);
    let doc = out.json();
    assert_eq!(doc["ok"], true);
    let results = doc["results"].as_array().expect("a results array");
    assert_eq!(results.len(), 8);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["work_order_id"], format!("WO-JOBS-{i}"), "results keep the input order");
        assert_eq!(r["ok"], true);
        assert_eq!(r["output"]["label"], labels[i % 4]);
        assert_eq!(r["output"]["confidence"].as_f64(), Some(i as f64 / 10.0));
    }
    let verify = p.pactum(&["ledger", "verify", &p.ledger().display().to_string(), "--json"], &[]);
    verify.status(0);
    assert!(verify.json()["records"].as_u64().unwrap() >= 8, "{verify}");
    assert_eq!(p.records().len(), 8);
}

#[test]
fn one_failing_work_order_among_several_fails_the_batch() {
    let p = Project::new();
    p.copy_fixture("scripted/classify_ok.json", "wo/fx.json");
    p.fixtures("bad.json", json!([{"text": "no json at all"}]));
    let good = p.classify_wo("WO-BATCH-GOOD", json!({"provider": {"fixtures": "fx.json"}}));
    let bad = p.classify_wo(
        "WO-BATCH-BAD",
        json!({"provider": {"fixtures": "bad.json"}, "constraints": {"max_repair_attempts": 0}}),
    );
    let out = p.run(&[&good, &bad], &["--jobs", "2", "--json"], &[]);
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["results"][0]["ok"], true);
    assert_eq!(doc["results"][1]["ok"], false);
    assert_eq!(first_code(&doc["results"][1]), "output_json_extraction_failed");
}

// --- files a provider returns ------------------------------------------------------------

fn report_wo(p: &Project, id: &str, fixtures: &str, extra: Value) -> std::path::PathBuf {
    let mut wo = json!({
        "work_order_id": id, "kind": "exchange", "contract": "PRC-REPORT-001@^1",
        "input": {"subject": "the outage", "audience": "engineers"},
        "provider": {"fixtures": fixtures},
    });
    harness::merge(&mut wo, extra);
    p.write_json(&format!("wo/{id}.json"), &wo)
}

fn envelope(files: Value) -> Value {
    json!([{"envelope": {"text": "{\"summary\": \"written\"}", "files": files}}])
}

#[test]
fn envelope_files_are_written_under_the_default_output_folder() {
    let p = Project::new();
    p.register_report();
    p.fixtures("files.json", envelope(json!({"a.md": "# A", "notes/b.md": "# B\n"})));
    let wo = report_wo(&p, "WO-FILES-1", "files.json", json!({}));

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(0);
    assert_eq!(r["ok"], true, "{r:#}");
    assert_eq!(r["output"], json!({"summary": "written"}));
    assert_eq!(r["extraction"]["envelope"], true);
    let dir = p.path("wo/out/WO-FILES-1");
    assert_eq!(std::fs::read_to_string(dir.join("a.md")).unwrap(), "# A");
    assert_eq!(std::fs::read_to_string(dir.join("notes/b.md")).unwrap(), "# B\n");
    let mut files: Vec<&str> =
        r["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    files.sort();
    assert_eq!(files, ["a.md", "notes/b.md"]);
    assert_eq!(r["warnings"], json!([]), "every expected file exists");
}

#[test]
fn envelope_files_go_to_the_work_orders_output_dir() {
    let p = Project::new();
    p.register_report();
    p.fixtures("files.json", envelope(json!({"a.md": "# A", "notes/b.md": "# B"})));
    let wo = report_wo(&p, "WO-FILES-DIR", "files.json", json!({"output_dir": "reports/here"}));

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(0);
    assert_eq!(std::fs::read_to_string(p.path("wo/reports/here/a.md")).unwrap(), "# A");
    assert!(p.path("wo/reports/here/notes/b.md").is_file());
    assert!(!p.path("wo/out").exists(), "nothing under the default folder");
    assert_eq!(r["files"].as_array().unwrap().len(), 2);
}

#[test]
fn a_missing_expected_file_is_a_warning() {
    let p = Project::new();
    p.register_report();
    p.fixtures("files.json", envelope(json!({"a.md": "# A"})));
    let wo = report_wo(&p, "WO-FILES-MISSING", "files.json", json!({}));

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(0);
    assert_eq!(r["ok"], true, "a missing file is a warning, not a failure: {r:#}");
    assert_eq!(r["files"], json!(["a.md"]));
    let warnings = r["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{r:#}");
    assert_eq!(warnings[0]["code"], "expected_output_missing");
    assert!(warnings[0]["message"].as_str().unwrap().contains("notes/b.md"), "{r:#}");

    // For people, the warning goes to stderr.
    p.fixtures("files2.json", envelope(json!({"a.md": "# A"})));
    let wo = report_wo(&p, "WO-FILES-MISSING-TEXT", "files2.json", json!({}));
    let out = p.run(&[&wo], &[], &[]);
    out.status(0);
    assert!(out.stderr.contains("warning[expected_output_missing]"), "{out}");
}

#[test]
fn a_text_reply_without_files_warns_for_every_expected_file() {
    let p = Project::new();
    p.register_report();
    p.fixtures("text.json", json!([{"text": "{\"summary\": \"no files\"}"}]));
    let wo = report_wo(&p, "WO-FILES-NONE", "text.json", json!({}));
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(0);
    let codes: Vec<&str> =
        r["warnings"].as_array().unwrap().iter().map(|w| w["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["expected_output_missing", "expected_output_missing"], "{r:#}");
}

#[test]
fn a_null_file_is_one_the_provider_wrote_itself() {
    let p = Project::new();
    p.register_report();
    // The provider wrote it into the output folder pactum made for it (on a first run).
    p.fixtures("first.json", envelope(json!({"a.md": "# A", "notes/b.md": "# B"})));
    let wo = report_wo(&p, "WO-FILES-NULL", "first.json", json!({}));
    p.run_json(&wo, &[], &[]).0.status(0);
    std::fs::remove_file(p.path("wo/out/WO-FILES-NULL/notes/b.md")).unwrap();
    p.write("wo/out/WO-FILES-NULL/notes/b.md", "written by the provider");
    p.fixtures("files.json", envelope(json!({"a.md": "# A", "notes/b.md": null})));
    let wo = report_wo(&p, "WO-FILES-NULL", "files.json", json!({}));
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(0);
    assert_eq!(r["warnings"], json!([]), "{r:#}");
    assert_eq!(
        std::fs::read_to_string(p.path("wo/out/WO-FILES-NULL/notes/b.md")).unwrap(),
        "written by the provider",
        "a null content leaves the file alone"
    );
}

#[test]
fn file_paths_that_escape_the_output_folder_are_refused() {
    let p = Project::new();
    p.register_report();
    let outside = p.path("abs-escape.md");
    p.fixtures(
        "files.json",
        envelope(json!({
            "a.md": "# A",
            "../escape.md": "escaped",
            "notes/../../escape2.md": "escaped",
            outside.display().to_string(): "escaped",
        })),
    );
    let wo = report_wo(&p, "WO-FILES-ESCAPE", "files.json", json!({}));

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(1);
    assert_eq!(r["ok"], false);
    let codes: Vec<&str> =
        r["errors"].as_array().unwrap().iter().map(|e| e["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["path_escape", "path_escape", "path_escape"], "{r:#}");
    let dir = p.path("wo/out/WO-FILES-ESCAPE");
    assert!(dir.join("a.md").is_file(), "the safe file is still written");
    for (path, _) in p.all_files() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !["escape.md", "escape2.md", "abs-escape.md"].contains(&name.as_str()),
            "{} was written",
            path.display()
        );
    }
}

#[cfg(unix)]
#[test]
fn file_paths_through_a_symlink_do_not_leave_the_output_folder() {
    let p = Project::new();
    p.register_report();
    let outside = tempfile::tempdir().unwrap();
    let dir = p.path("wo/out/WO-FILES-LINK");
    // The folder is pactum's (made by a first run); then a link appears in it.
    p.fixtures("first.json", envelope(json!({"a.md": "# A"})));
    let wo = report_wo(&p, "WO-FILES-LINK", "first.json", json!({}));
    p.run_json(&wo, &[], &[]).0.status(0);
    std::os::unix::fs::symlink(outside.path(), dir.join("link")).unwrap();
    p.fixtures("files.json", envelope(json!({"a.md": "# A", "link/owned.md": "escaped"})));
    let wo = report_wo(&p, "WO-FILES-LINK", "files.json", json!({}));

    let (_out, r) = p.run_json(&wo, &[], &[]);

    assert!(
        !outside.path().join("owned.md").exists(),
        "a file was written outside the output folder through a symlink"
    );
    assert_eq!(r["ok"], false, "{r:#}");
    assert!(r["errors"].as_array().unwrap().iter().any(|e| e["code"] == "path_escape"), "{r:#}");
}

// --- render ------------------------------------------------------------------------------

#[test]
fn render_prints_the_messages_as_json() {
    let p = Project::new();
    let input =
        p.write_json("input.json", &json!({"user_input": "My login fails", "mode": "careful"}));

    let out = p.pactum(
        &["render", "PRC-CLASSIFY-001", "--input", &input.display().to_string(), "--json"],
        &[],
    );

    out.status(0);
    let doc = out.json();
    assert_eq!(doc["ok"], true);
    let messages = doc["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "user");
    let system = messages[0]["content"].as_str().unwrap();
    let user = messages[1]["content"].as_str().unwrap();
    assert!(system.contains("triage step"), "role goes in the system message: {system}");
    assert!(user.contains("My login fails"), "{user}");
    assert!(user.contains("weighing every plausible label"), "mode=careful: {user}");
    assert!(user.contains("## ") && user.contains("Task"), "numbered headings: {user}");
}

#[test]
fn render_single_message_joins_system_and_user_sections() {
    let p = Project::new();
    let input = p.write_json("input.json", &json!({"user_input": "My login fails"}));
    let input = input.display().to_string();

    let out = p.pactum(
        &["render", "PRC-CLASSIFY-001", "--input", &input, "--single-message", "--json"],
        &[],
    );

    out.status(0);
    let messages = out.json()["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 1, "{messages:#?}");
    assert_eq!(messages[0]["role"], "user");
    let text = messages[0]["content"].as_str().unwrap();
    let role = text.find("triage step").expect("the role section is kept");
    let message = text.find("My login fails").expect("the input is kept");
    assert!(role < message, "system sections come first: {text}");
}

#[test]
fn render_reads_the_input_from_stdin_and_prints_text() {
    let p = Project::new();
    let out = p.pactum_stdin(
        &["render", "PRC-CLASSIFY-001@=1.0.0", "--input", "-"],
        &[],
        Some(r#"{"user_input": "a {{ literal }} stays"}"#),
    );
    out.status(0);
    assert!(out.stdout.contains("--- system ---") && out.stdout.contains("--- user ---"), "{out}");
    assert!(out.stdout.contains("a {{ literal }} stays"), "values are never expanded: {out}");
}

#[test]
fn render_rejects_invalid_input_with_every_pointer() {
    let p = Project::new();
    let out = p.pactum_stdin(
        &["render", "PRC-CLASSIFY-001", "--input", "-", "--json"],
        &[],
        Some(r#"{"user_input": "", "mode": "sloppy", "extra": 1}"#),
    );
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["code"], "input_schema_invalid");
    assert!(doc["message"].is_string());
    let mut pointers: Vec<&str> =
        doc["errors"].as_array().unwrap().iter().map(|e| e["pointer"].as_str().unwrap()).collect();
    pointers.sort();
    assert_eq!(pointers, ["/extra", "/mode", "/user_input"], "{doc:#}");
}

#[test]
fn render_text_names_the_input_files_line_for_every_bad_value() {
    let p = Project::new();
    let input = p.write("in.json", "{\n  \"user_input\": \"hi\",\n  \"mode\": \"sloppy\"\n}\n");
    let out = p.pactum(&["render", "PRC-CLASSIFY-001", "--input", input.to_str().unwrap()], &[]);
    out.status(1);
    assert!(out.stderr.contains("error[input_schema_invalid]"), "{out}");
    // Named relative to the folder the command ran in (the project root).
    let shown = "in.json";
    assert!(
        out.stderr.contains(&format!("{shown}:3:11: /mode: \"sloppy\" is not one of")),
        "{out}"
    );
    assert!(out.stderr.contains("fix the input at these pointers"), "{out}");
}

#[test]
fn render_reports_a_missing_template_variable() {
    let p = Project::new();
    p.register_report();
    let out = p.pactum_stdin(
        &["render", "PRC-REPORT-001", "--input", "-", "--json"],
        &[],
        Some(r#"{"subject": "uptime"}"#),
    );
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["code"], "template_variable_missing", "{doc:#}");
    assert!(doc["message"].as_str().unwrap().contains("audience"), "{doc:#}");

    let out = p.pactum_stdin(
        &["render", "PRC-REPORT-001", "--input", "-", "--json"],
        &[],
        Some(r#"{"subject": "uptime", "audience": "ops"}"#),
    );
    out.status(0);
    let user = out.json()["messages"][1]["content"].as_str().unwrap().to_string();
    assert!(user.contains("about uptime for ops"), "{user}");
    assert!(user.contains("a.md") && user.contains("notes/b.md"), "expected outputs: {user}");
}

#[test]
fn run_reports_a_missing_template_variable_without_calling() {
    let p = Project::new();
    p.register_report();
    p.fixtures("fx.json", json!([{"text": "{\"summary\": \"x\"}"}]));
    let wo = p.write_json(
        "wo/tv.json",
        &json!({"work_order_id": "WO-TV", "kind": "exchange", "contract": "PRC-REPORT-001",
                "input": {"subject": "uptime"}, "provider": {"fixtures": "fx.json"}}),
    );
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(1);
    assert_eq!(first_code(&r), "template_variable_missing");
}

// --- extract -----------------------------------------------------------------------------

#[test]
fn extract_reports_method_span_and_value() {
    let p = Project::new();
    let response = "Sure!\n```json\n{\"label\": \"technical\", \"confidence\": 0.4}\n```\nBye";

    let out = p.pactum_stdin(
        &["extract", "--contract", "PRC-CLASSIFY-001", "--json"],
        &[],
        Some(response),
    );

    out.status(0);
    let doc = out.json();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["method"], "fenced");
    assert_eq!(doc["envelope"], false);
    assert_eq!(doc["value"], json!({"label": "technical", "confidence": 0.4}));
    assert_eq!(doc["repairs"], json!([]));
    let (s, e) =
        (doc["span"][0].as_u64().unwrap() as usize, doc["span"][1].as_u64().unwrap() as usize);
    let spanned: Value = serde_json::from_str(&response[s..e]).unwrap();
    assert_eq!(spanned, doc["value"], "the span points at the value");
}

#[test]
fn extract_methods_embedded_and_direct() {
    let p = Project::new();
    let out = p.pactum_stdin(&["extract", "--json"], &[], Some("The answer is {\"a\": \"}\"} ok"));
    out.status(0);
    let doc = out.json();
    assert_eq!(doc["method"], "embedded");
    assert_eq!(doc["value"], json!({"a": "}"}));
    assert_eq!(doc["span"], json!([14, 24]));

    let out = p.pactum_stdin(&["extract", "--json"], &[], Some("  [1, 2, 3]\n"));
    out.status(0);
    let doc = out.json();
    assert_eq!(doc["method"], "direct");
    assert_eq!(doc["value"], json!([1, 2, 3]));
}

#[test]
fn extract_with_a_schema_file_prefers_arrays_when_the_schema_wants_one() {
    let p = Project::new();
    let schema = p.write_json(
        "list.schema.json",
        &json!({"type": "array", "items": {"type": "integer"}, "minItems": 1}),
    );
    let schema = schema.display().to_string();
    let out = p.pactum_stdin(
        &["extract", "--schema", &schema, "--json"],
        &[],
        Some("meta {\"x\": 1} then [4, 5]"),
    );
    out.status(0);
    assert_eq!(out.json()["value"], json!([4, 5]), "{out}");

    let out = p.pactum_stdin(&["extract", "--schema", &schema, "--json"], &[], Some("[\"a\"]"));
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["code"], "output_schema_invalid");
    assert_eq!(doc["value"], json!(["a"]));
}

#[test]
fn extract_with_an_invalid_schema_file_says_it_is_not_a_json_schema() {
    let p = Project::new();
    let schema = p.write("bad.schema.json", "{\n  \"type\": \"list\"\n}\n");
    let schema = schema.display().to_string();
    let out = p.pactum_stdin(&["extract", "--schema", &schema, "--json"], &[], Some("[1]"));
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["code"], "contract_schema_invalid", "{doc:#}");
    let message = doc["message"].as_str().unwrap();
    assert!(message.contains("not a valid JSON Schema"), "{message}");
    assert!(!message.contains("contract"), "the file is no contract: {message}");
    assert_eq!(doc["errors"][0]["pointer"], "/type", "{doc:#}");

    let out = p.pactum_stdin(&["extract", "--schema", &schema], &[], Some("[1]"));
    out.status(1);
    assert!(out.stderr.contains("bad.schema.json:2:11: /type: "), "{out}");
    assert!(!out.stderr.contains(&schema), "named relative to the current folder: {out}");
}

#[test]
fn extract_envelope_takes_the_text_field() {
    let p = Project::new();
    let out = p.pactum_stdin(
        &["extract", "--envelope", "--json"],
        &[],
        Some(r##"{"text": "x {\"k\": true} y", "files": {"a.md": "# A"}}"##),
    );
    out.status(0);
    let doc = out.json();
    assert_eq!(doc["envelope"], true);
    assert_eq!(doc["value"], json!({"k": true}));
    assert_eq!(doc["span"], json!([2, 13]));

    let out = p.pactum_stdin(&["extract", "--envelope", "--json"], &[], Some(r#"{"text": 5}"#));
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["code"], "output_json_extraction_failed");
    assert_eq!(doc["methods_tried"], json!(["envelope"]));
}

#[test]
fn extract_failures_name_the_methods_tried_and_the_bad_value() {
    let p = Project::new();
    let out = p.pactum_stdin(&["extract", "--json"], &[], Some("no json here, sorry"));
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["code"], "output_json_extraction_failed");
    assert_eq!(doc["methods_tried"], json!(["fenced", "embedded", "direct"]));
    assert!(doc["message"].is_string());

    let out = p.pactum_stdin(
        &["extract", "--contract", "PRC-CLASSIFY-001", "--json"],
        &[],
        Some(r#"{"label": "refund", "confidence": 7}"#),
    );
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["code"], "output_schema_invalid");
    assert_eq!(doc["value"], json!({"label": "refund", "confidence": 7}));
    let mut pointers: Vec<&str> =
        doc["errors"].as_array().unwrap().iter().map(|e| e["pointer"].as_str().unwrap()).collect();
    pointers.sort();
    assert_eq!(pointers, ["/confidence", "/label"]);

    // Text mode: the value on stdout, provenance or the error on stderr.
    let out = p.pactum_stdin(&["extract"], &[], Some("```\n{\"z\": 1}\n```"));
    out.status(0);
    assert_eq!(serde_json::from_str::<Value>(&out.stdout).unwrap(), json!({"z": 1}));
    assert!(out.stderr.contains("fenced"), "{out}");
    let out = p.pactum_stdin(&["extract"], &[], Some("nothing"));
    out.status(1);
    assert!(out.stderr.contains("output_json_extraction_failed"), "{out}");
}

#[test]
fn extract_repair_is_opt_in_and_reported() {
    let p = Project::new();
    let text = "{'label': 'billing', 'confidence': 0.5,}";
    let out = p.pactum_stdin(&["extract", "--json"], &[], Some(text));
    out.status(1);
    let out = p.pactum_stdin(&["extract", "--repair", "--json"], &[], Some(text));
    out.status(0);
    let doc = out.json();
    assert_eq!(doc["method"], "repaired");
    assert_eq!(doc["value"], json!({"label": "billing", "confidence": 0.5}));
    assert!(!doc["repairs"].as_array().unwrap().is_empty(), "{doc:#}");
}

#[test]
fn extract_chooses_the_candidate_the_schema_accepts_and_lists_the_others() {
    let p = Project::new();
    let schema = p.write_json(
        "label.schema.json",
        &json!({"type": "object", "required": ["label"], "properties": {"label": {"enum": ["spam", "ham"]}}}),
    );
    let schema = schema.display().to_string();
    let text = "You sent {\"text\": \"win\"}. Answer: {\"label\": \"spam\"}";
    let out = p.pactum_stdin(&["extract", "--schema", &schema, "--json"], &[], Some(text));
    out.status(0);
    let doc = out.json();
    assert_eq!(doc["value"], json!({"label": "spam"}), "{doc:#}");
    assert_eq!(
        doc["candidates"],
        json!([{"method": "embedded", "span": [9, 24], "verdict": "fails_schema"}])
    );
    assert_eq!(doc["ambiguous"], false);
}

#[test]
fn extract_refuses_ambiguous_replies_unless_repair_is_on_and_then_says_so() {
    let p = Project::new();
    let text = "{\"a\": 1}, {\"a\": 2}";
    let out = p.pactum_stdin(&["extract", "--json"], &[], Some(text));
    out.status(1);
    assert!(out.json()["message"].as_str().unwrap().contains("is ambiguous"), "{out}");
    let out = p.pactum_stdin(&["extract", "--repair", "--json"], &[], Some(text));
    out.status(0);
    let doc = out.json();
    assert_eq!(doc["ambiguous"], true);
    assert_eq!(doc["value"], json!([{"a": 1}, {"a": 2}]));
    assert_eq!(doc["repairs"][0], json!({"kind": "concatenated_values", "span": [0, 18]}));
}

#[test]
fn extract_coerce_needs_a_schema_and_reports_each_coercion() {
    let p = Project::new();
    let out = p.pactum_stdin(&["extract", "--coerce"], &[], Some("{}"));
    out.status(2);
    let schema = p.write_json(
        "n.schema.json",
        &json!({"type": "object", "properties": {"n": {"type": "integer"}, "tags": {"type": "array"}}}),
    );
    let schema = schema.display().to_string();
    let text = "{\"n\": \"7\", \"tags\": \"x\"}";
    let out = p.pactum_stdin(&["extract", "--schema", &schema, "--json"], &[], Some(text));
    out.status(1);
    assert_eq!(out.json()["code"], "output_schema_invalid");
    let out =
        p.pactum_stdin(&["extract", "--schema", &schema, "--coerce", "--json"], &[], Some(text));
    out.status(0);
    let doc = out.json();
    assert_eq!(doc["value"], json!({"n": 7, "tags": ["x"]}));
    assert_eq!(
        doc["repairs"],
        json!([{"kind": "coerced_number", "span": [0, 23], "pointer": "/n"},
               {"kind": "wrapped_in_array", "span": [0, 23], "pointer": "/tags"}])
    );
}

#[test]
fn without_a_registered_repair_contract_a_bad_output_fails_at_once() {
    let p = Project::new();
    // A registry without PRC-REPAIRJSON-001 (hand-edited, so without history).
    let mut registry: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path("registry.json")).unwrap()).unwrap();
    registry.as_object_mut().unwrap().remove("history");
    registry["contracts"]
        .as_array_mut()
        .unwrap()
        .retain(|e| e["contract_id"] != "PRC-REPAIRJSON-001");
    p.write_json("registry.json", &registry);
    p.copy_fixture("scripted/repair_once.json", "wo/fx.json");
    // The default budget of two repair attempts is there; the repair contract is not.
    let wo = p.classify_wo("WO-NO-REPAIR", json!({"provider": {"fixtures": "fx.json"}}));

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(1);
    assert_eq!(first_code(&r), "output_schema_invalid", "{r:#}");
    assert_eq!(r["repair_attempts"], 0);
    let actions = r["supervisor_actions"].as_array().map_or(0, Vec::len);
    assert_eq!(actions, 0, "{r:#}");
    assert_eq!(p.records().len(), 1, "no repair call was made");
}

/// Registers PRC-LENIENT-001: PRC-CLASSIFY-001 with `"extraction": {"repair": true}`.
fn register_lenient_contract(p: &Project) {
    let mut contract: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path("contracts/classify/1.0.0.json")).unwrap(),
    )
    .unwrap();
    contract["contract_id"] = json!("PRC-LENIENT-001");
    contract["extraction"] = json!({"repair": true});
    contract.as_object_mut().unwrap().remove("examples");
    let path = p.write_json("contracts/lenient/1.0.0.json", &contract).display().to_string();
    let root = p.root().display().to_string();
    p.pactum(&["registry", "add", "--root", &root, &path], &[]).status(0);
    p.pactum(&["registry", "promote", "--root", &root, "PRC-LENIENT-001@1.0.0"], &[]).status(0);
}

#[test]
fn a_contract_that_opts_in_to_repair_accepts_a_sloppy_reply_and_reports_the_repairs() {
    let p = Project::new();
    register_lenient_contract(&p);
    let sloppy = "Here you go: {'label': 'billing', 'confidence': 0.9,} // sure";
    for id in ["PRC-LENIENT-001", "PRC-CLASSIFY-001"] {
        p.fixtures(&format!("{id}.json"), json!([{"contract_id": id, "text": sloppy}]));
    }
    let wo = |id: &str| {
        p.classify_wo(
            &format!("WO-{id}"),
            json!({
                "contract": format!("{id}@^1"),
                "provider": {"fixtures": format!("{id}.json")},
                "constraints": {"max_repair_attempts": 0},
            }),
        )
    };

    let (out, r) = p.run_json(&wo("PRC-LENIENT-001"), &[], &[]);
    out.status(0);
    assert_eq!(r["output"], json!({"label": "billing", "confidence": 0.9}), "{r:#}");
    assert_eq!(r["extraction"]["method"], "repaired", "{r:#}");
    let repairs: Vec<&str> = r["extraction"]["repairs"]
        .as_array()
        .unwrap_or_else(|| panic!("no repairs listed: {r:#}"))
        .iter()
        .map(|x| x.as_str().or_else(|| x["kind"].as_str()).unwrap())
        .collect();
    assert!(repairs.contains(&"single_quotes"), "{repairs:?}");
    assert!(repairs.contains(&"trailing_comma"), "{repairs:?}");

    // The same reply under the strict default is an extraction failure.
    let (out, r) = p.run_json(&wo("PRC-CLASSIFY-001"), &[], &[]);
    out.status(1);
    assert_eq!(first_code(&r), "output_json_extraction_failed", "{r:#}");
}

/// A failed run's headline names its contract whatever failed: the resolved version when
/// the input is refused before the call, the pin when nothing resolves.
#[test]
fn failed_headlines_name_the_contract() {
    let p = Project::new();
    p.fixtures("any.json", json!([{"text": "{}"}]));
    let misfit = p.classify_wo(
        "WO-HEAD-1",
        json!({"input": {"user_input": ""}, "provider": {"fixtures": "any.json"}}),
    );
    let out = p.run(&[&misfit], &[], &[]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stdout.contains("WO-HEAD-1 (exchange) failed: [PRC-CLASSIFY-001@1.0.0]"), "{out}");
    let mistyped = p.classify_wo(
        "WO-HEAD-2",
        json!({"contract": "PRC-CLASIFY-001@^1", "provider": {"fixtures": "any.json"}}),
    );
    let out = p.run(&[&mistyped], &[], &[]);
    assert!(out.stdout.contains("WO-HEAD-2 (exchange) failed: [PRC-CLASIFY-001@^1]"), "{out}");
}
