//! `pactum eval` end to end (SPEC §19): a project with two versions of a triage contract,
//! answered by a scripted "model" that is right on every case for 1.0.0 and wrong on some
//! for 1.1.0, so pass rates, regressions and the McNemar p-value follow from the fixture
//! (`tests/fixtures/eval/`), and a change of the model's quality changes the verdict.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{self, Out};

/// The cases of `tests/fixtures/eval/evals/triage/cases.jsonl`: id, message, right label.
const CASES: [(&str, &str, &str); 8] = [
    ("double-charge", "I was charged twice this month", "billing"),
    ("upload-crash", "The app crashes when I upload a photo", "technical"),
    ("password", "I forgot my password and cannot log in", "account"),
    ("invoice-copy", "Please send me a copy of my last invoice", "billing"),
    ("export-500", "The export button returns error 500", "technical"),
    ("change-email", "How do I change the email on my profile?", "account"),
    ("office", "Do you have an office in Lisbon?", "other"),
    ("refund-late", "My refund has not arrived yet", "billing"),
];

const ACTOR: &str = "eval-tests@example.com";

/// A project with PRC-TRIAGE-001 at 1.0.0 and 1.1.0 (both active), its suite and dataset,
/// and the shipped contracts (the judge among them).
pub struct EvalProject {
    dir: tempfile::TempDir,
}

impl EvalProject {
    pub fn new() -> EvalProject {
        let p = EvalProject::with_draft();
        p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.1.0"]).status(0);
        p
    }

    /// The same project with PRC-TRIAGE-001@1.1.0 still a draft (a candidate to promote).
    pub fn with_draft() -> EvalProject {
        let dir = tempfile::Builder::new().prefix("pactum-eval-").tempdir().unwrap();
        common::copy_shipped(dir.path());
        common::copy_tree(&common::repo().join("tests/fixtures/eval"), dir.path());
        // What the shipped refund contract requires, so the project validates clean.
        common::copy_tree(&common::repo().join("frameworks"), &dir.path().join("frameworks"));
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        std::fs::copy(
            common::repo().join("docs/refund-policy.md"),
            dir.path().join("docs/refund-policy.md"),
        )
        .unwrap();
        let p = EvalProject { dir };
        p.pactum(&[
            "registry",
            "add",
            "prompt_packs/triage/1.0.0.json",
            "prompt_packs/triage/2.0.0.json",
            "contracts/triage/1.0.0.json",
            "contracts/triage/1.1.0.json",
        ])
        .status(0);
        for pin in ["PRM-TRIAGE-001@1.0.0", "PRC-TRIAGE-001@1.0.0", "PRM-TRIAGE-001@2.0.0"] {
            p.pactum(&["registry", "promote", pin]).status(0);
        }
        p
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn pactum(&self, args: &[&str]) -> Out {
        Out::of(common::pactum_in(self.root()).env("PACTUM_ACTOR", ACTOR).args(args))
    }

    /// The scripted model: for each version, in dataset order, the right label unless
    /// `wrong` gives another (`(version, case id, label)`); each reply reports a latency
    /// of 10 ms times the case's position, and only answers the prompt holding its message.
    pub fn model(&self, wrong: &[(&str, &str, &str)]) {
        let mut responses = Vec::new();
        for version in ["1.0.0", "1.1.0"] {
            for (i, (id, message, right)) in CASES.iter().enumerate() {
                let label = wrong
                    .iter()
                    .find(|(v, c, _)| *v == version && c == id)
                    .map_or(*right, |(_, _, l)| *l);
                responses.push(json!({
                    "contract_id": "PRC-TRIAGE-001", "contract_version": version,
                    "expect_prompt": [message],
                    "text": json!({"label": label, "confidence": 0.9}).to_string(),
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10},
                    "latency_ms": 10 * (i as u64 + 1),
                }));
            }
        }
        self.write("model.json", &json!({"responses": responses}).to_string());
    }

    /// pactum.toml: the scripted model as the default provider, plus `extra`.
    pub fn config(&self, extra: &str) {
        self.write(
            "pactum.toml",
            &format!(
                "[defaults]\nprovider = \"model\"\n\n[providers.model]\nkind = \"scripted\"\nfixtures = \"model.json\"\n\n{extra}"
            ),
        );
    }

    /// The ledger's records. The ledger must exist: "no record of a kind" would otherwise
    /// pass when nothing wrote it.
    pub fn records(&self) -> Vec<Value> {
        let path = self.path(".pactum/ledger.jsonl");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; nothing wrote the ledger", path.display()));
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

/// 1.1.0 gets six of the eight cases wrong.
const SIX_WRONG: [(&str, &str, &str); 6] = [
    ("1.1.0", "double-charge", "technical"),
    ("1.1.0", "upload-crash", "billing"),
    ("1.1.0", "password", "other"),
    ("1.1.0", "invoice-copy", "other"),
    ("1.1.0", "export-500", "account"),
    ("1.1.0", "change-email", "billing"),
];

const COMPARE: [&str; 5] =
    ["eval", "--contract", "PRC-TRIAGE-001@1.1.0", "--against", "PRC-TRIAGE-001@1.0.0"];

fn with(args: &[&str], more: &[&str]) -> Vec<String> {
    args.iter().chain(more).map(|s| s.to_string()).collect()
}

fn run(p: &EvalProject, args: Vec<String>) -> Out {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    p.pactum(&refs)
}

#[test]
fn a_version_that_regresses_on_six_cases_of_eight_is_a_significant_regression() {
    let p = EvalProject::new();
    p.model(&SIX_WRONG);
    p.config("");

    let out = run(&p, with(&COMPARE, &["--json"]));

    out.status(1);
    let doc = out.json();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["code"], "eval_regression", "{doc:#}");
    let suites = doc["suites"].as_array().unwrap();
    assert_eq!(suites.len(), 2, "one entry per version: {doc:#}");
    let (base, cand) = (&suites[0], &suites[1]);
    assert_eq!(
        (base["version"].as_str(), base["role"].as_str()),
        (Some("1.0.0"), Some("baseline"))
    );
    assert_eq!(
        (cand["version"].as_str(), cand["role"].as_str()),
        (Some("1.1.0"), Some("candidate"))
    );
    assert_eq!((base["cases"].as_u64(), base["passed"].as_u64()), (Some(8), Some(8)));
    assert_eq!((cand["cases"].as_u64(), cand["passed"].as_u64()), (Some(8), Some(2)));
    assert_eq!(cand["pass_rate"], 0.25);
    assert_eq!(cand["schema_valid_rate"], 1.0);
    assert_eq!(cand["failures"], json!({"equals": 6}));
    assert_eq!(cand["usage"], json!({"prompt_tokens": 800, "completion_tokens": 80}));
    // Latencies 10..80 ms: the nearest-rank p50 is the 4th, the p95 the 8th.
    assert_eq!(cand["latency_ms"], json!({"p50": 40.0, "p95": 80.0}));
    assert_eq!(cand["eval_id"], "EVAL-TRIAGE-001");
    assert_eq!(cand["dataset"], "evals/triage/cases.jsonl");
    let dataset = std::fs::read(p.path("evals/triage/cases.jsonl")).unwrap();
    assert_eq!(cand["dataset_sha256"], common::sha256_hex(&dataset));
    let c = &doc["comparison"];
    assert_eq!(c["baseline"], "PRC-TRIAGE-001@1.0.0");
    assert_eq!(c["candidate"], "PRC-TRIAGE-001@1.1.0");
    assert_eq!(c["pass_rate_delta"], -0.75);
    assert_eq!(
        c["regressions"],
        json!([
            "double-charge",
            "upload-crash",
            "password",
            "invoice-copy",
            "export-500",
            "change-email"
        ])
    );
    assert_eq!(c["improvements"], json!([]));
    // Exact McNemar: 2 * (1/2)^6.
    assert_eq!(c["p_value"], 0.03125);
    assert_eq!(c["significant_regression"], true);
    // A failed case keeps its output and says why.
    let first = &cand["results"][0];
    assert_eq!(first["case_id"], "double-charge");
    assert_eq!(first["ok"], false);
    assert_eq!(first["output"], json!({"label": "technical", "confidence": 0.9}));
    assert_eq!(
        first["assertions"][2],
        json!({"kind": "equals", "ok": false, "message": "equals /label: \"technical\" is not \"billing\""})
    );
    // A passing case on which both versions agree keeps no output.
    assert!(cand["results"][6].get("output").is_none(), "{:#}", cand["results"][6]);
    let messages: Vec<&str> =
        doc["errors"].as_array().unwrap().iter().map(|e| e["message"].as_str().unwrap()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("2 of 8 cases pass (25.0%), below the suite's threshold 75.0%")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("regressed against PRC-TRIAGE-001@1.0.0 on 6 case(s)")
            && m.contains("p = 0.0312")),
        "{messages:?}"
    );

    // As text, for people.
    let out = run(&p, with(&COMPARE, &[]));
    out.status(1);
    assert!(out.stdout.contains("1.1.0      2/8 passed (25.0%) below 75.0%"), "{out}");
    assert!(out.stdout.contains("1.1.0 vs 1.0.0: pass rate −75.0 pp, 6 regressions"), "{out}");
    assert!(out.stdout.contains("exact McNemar p = 0.0312 (significant regression)"), "{out}");
    assert!(out.stderr.contains("error[eval_regression]"), "{out}");
}

#[test]
fn two_regressions_of_eight_are_noise_and_pass_a_lower_bar() {
    let p = EvalProject::new();
    p.model(&SIX_WRONG[..2]);
    p.config("");

    let doc = run(&p, with(&COMPARE, &["--json"])).status(0).json();

    assert_eq!(doc["ok"], true, "{doc:#}");
    assert_eq!(doc["comparison"]["regressions"].as_array().unwrap().len(), 2);
    // 2 * (1/4) = 0.5: not significant.
    assert_eq!(doc["comparison"]["p_value"], 0.5);
    assert_eq!(doc["comparison"]["significant_regression"], false);
    assert_eq!(doc["suites"][1]["pass_rate"], 0.75);
}

#[test]
fn without_a_baseline_the_suite_thresholds_decide() {
    let p = EvalProject::new();
    p.model(&SIX_WRONG[..3]);
    p.config("");

    // The suite's pin (^1) runs the highest active version, 1.1.0: 5 of 8 < 75%.
    let doc = run(&p, vec!["eval".into(), "--json".into()]).status(1).json();

    assert_eq!(doc["code"], "eval_regression");
    assert_eq!(doc["suites"].as_array().unwrap().len(), 1);
    assert_eq!(doc["suites"][0]["version"], "1.1.0");
    assert_eq!(doc["suites"][0]["passed"], 5);
    assert!(doc.get("comparison").is_none());
    // On 1.0.0, every case passes.
    let doc = run(
        &p,
        vec![
            "eval".into(),
            "EVAL-TRIAGE-001".into(),
            "--contract".into(),
            "PRC-TRIAGE-001@1.0.0".into(),
            "--json".into(),
        ],
    )
    .status(0)
    .json();
    assert_eq!(doc["suites"][0]["passed"], 8, "{doc:#}");
}

#[test]
fn one_eval_completed_record_per_run_and_every_exchange_in_the_ledger() {
    let p = EvalProject::new();
    p.model(&SIX_WRONG);
    p.config("[prices.scripted]\nprompt_per_mtok = 1.0\ncompletion_per_mtok = 4.0\n");

    let doc = run(&p, with(&COMPARE, &["--json"])).status(1).json();

    // 800 prompt + 80 completion tokens at 1 and 4 per million.
    assert_eq!(doc["suites"][1]["cost"], 0.00112, "{doc:#}");
    let records = p.records();
    let exchanges: Vec<&Value> = records.iter().filter(|r| r["event"] == "exchange").collect();
    assert_eq!(exchanges.len(), 16, "8 cases on two versions");
    assert!(exchanges.iter().all(|r| r["work_order_id"] == "EVAL-TRIAGE-001"));
    let evals: Vec<&Value> = records.iter().filter(|r| r["event"] == "eval_completed").collect();
    assert_eq!(evals.len(), 1);
    let e = evals[0];
    assert_eq!(e["kind"], "eval");
    assert_eq!(e["ok"], false);
    assert_eq!(e["provider"], "scripted");
    let suite = &e["suites"][0];
    assert_eq!(suite["eval_id"], "EVAL-TRIAGE-001");
    assert_eq!(suite["dataset_sha256"], doc["suites"][0]["dataset_sha256"]);
    assert_eq!(suite["versions"][1]["pass_rate"], 0.25);
    assert_eq!(suite["comparison"]["p_value"], 0.03125);
    assert_eq!(suite["comparison"]["regressions"], 6);
    for r in &records {
        assert_eq!(pactum::schema::check_ledger_entry(r), vec![], "{r:#}");
    }
    // The ledger still verifies, by pactum and by an independent check.
    p.pactum(&["ledger", "verify"]).status(0);
    assert_eq!(
        common::check_ledger_chain_independently(&p.path(".pactum/ledger.jsonl")),
        records.len()
    );
}

#[test]
fn filter_runs_only_the_tagged_cases_and_repeat_runs_each_case_again() {
    let p = EvalProject::new();
    // The script answers only the three billing cases, in order.
    let billing: Vec<Value> = CASES
        .iter()
        .filter(|(_, _, label)| *label == "billing")
        .map(|(_, message, _)| json!({"expect_prompt": [message], "text": "{\"label\": \"billing\", \"confidence\": 0.8}"}))
        .collect();
    p.write("model.json", &json!({"responses": billing}).to_string());
    p.config("");

    let doc = run(
        &p,
        vec![
            "eval".into(),
            "--contract".into(),
            "PRC-TRIAGE-001@1.0.0".into(),
            "--filter".into(),
            "billing".into(),
            "--json".into(),
        ],
    )
    .status(0)
    .json();
    assert_eq!(doc["suites"][0]["cases"], 3, "{doc:#}");
    let ids: Vec<&str> = doc["suites"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["case_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["double-charge", "invoice-copy", "refund-late"]);

    p.model(&[]);
    // Twice each: the script has one reply per case, so the second run of the first case
    // takes the reply written for the second case's prompt, and is refused.
    let doc = run(
        &p,
        vec![
            "eval".into(),
            "--contract".into(),
            "PRC-TRIAGE-001@1.0.0".into(),
            "--repeat".into(),
            "2".into(),
            "--json".into(),
        ],
    )
    .status(1)
    .json();
    let first = &doc["suites"][0]["results"][0];
    assert_eq!(first["samples"], 2, "{doc:#}");
    assert_eq!(first["passed_samples"], 1, "{doc:#}");
    assert_eq!(first["ok"], false);
    assert_eq!(
        doc["code"], "script_prompt_mismatch",
        "a case that could not run is named: {doc:#}"
    );
}

#[test]
fn a_dataset_line_that_is_not_a_case_stops_the_run_naming_its_line() {
    let p = EvalProject::new();
    p.model(&[]);
    p.config("");
    let path = p.path("evals/triage/cases.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"id\": \"broken\", \"input\": {\"message\": \"x\"}, \"expect\": [{\"kind\": \"equals\"}]}\n");
    std::fs::write(&path, text).unwrap();

    let out = run(&p, vec!["eval".into(), "--json".into()]);

    out.status(1);
    let doc = out.json();
    assert_eq!(doc["code"], "eval_dataset_invalid", "{doc:#}");
    assert!(
        doc["message"].as_str().unwrap().starts_with("evals/triage/cases.jsonl:9: "),
        "{doc:#}"
    );
}

#[test]
fn markdown_and_junit_reports() {
    let p = EvalProject::new();
    p.model(&SIX_WRONG);
    p.config("");

    let out = run(&p, with(&COMPARE, &["--format", "markdown"]));
    out.status(1);
    let md = &out.stdout;
    assert!(md.starts_with("### ❌ pactum eval\n"), "{md}");
    assert!(
        md.contains("| version | passed | pass rate | schema valid | p50 | p95 | tokens | cost |"),
        "{md}"
    );
    assert!(
        md.contains("| 1.0.0 (baseline) | 8/8 | 100.0% | 100.0% | 40 ms | 80 ms | 880 | – |"),
        "{md}"
    );
    assert!(md.contains("| 1.1.0 | 2/8 | 25.0% ❌ | 100.0% | 40 ms | 80 ms | 880 | – |"), "{md}");
    assert!(md.contains("**1.1.0 vs 1.0.0:** pass rate −75.0 pp · 6 regressions · 0 improvements · exact McNemar p = 0.0312 (significant regression)"), "{md}");
    assert!(md.contains("<details><summary>Failed cases (6)</summary>"), "{md}");

    let out = run(&p, with(&COMPARE, &["--format", "junit"]));
    out.status(1);
    let xml = &out.stdout;
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"pactum eval\" tests=\"16\" failures=\"6\" errors=\"0\">"), "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 16, "one test case per case and version");
    assert_eq!(xml.matches("<failure ").count(), 6);
    assert!(xml.contains("<testsuite name=\"EVAL-TRIAGE-001 PRC-TRIAGE-001@1.1.0\""), "{xml}");
    // A JUnit viewer keys a case by classname and name: the versions' runs of a case, one
    // passing and one failing, stay apart.
    let keys: std::collections::BTreeSet<String> = xml
        .lines()
        .filter_map(|l| l.trim().strip_prefix("<testcase "))
        .map(|l| l.split(" time=").next().unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), 16, "{keys:#?}");
    assert!(
        xml.contains(" @ PRC-TRIAGE-001@1.0.0\" classname=\"pactum.eval.EVAL-TRIAGE-001\""),
        "{xml}"
    );
    let mut reader = quick_xml::Reader::from_str(xml);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("not well-formed XML: {e}\n{xml}"),
        }
    }
}

#[test]
#[ignore = "needs ../shared/peer/ci-formats/junit-10.xsd and xmllint; .ci/run runs it"]
fn the_junit_report_is_valid_against_jenkins_junit_10_xsd() {
    let xsd = common::require_shared("peer/ci-formats/junit-10.xsd");
    let xmllint = common::require_tool("xmllint", "checking JUnit XML against its schema");
    let p = EvalProject::new();
    p.model(&SIX_WRONG);
    p.config("");
    let out = run(&p, with(&COMPARE, &["--format", "junit"]));
    let file = p.write("report.xml", &out.stdout);
    let check = std::process::Command::new(xmllint)
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(&file)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
}

#[test]
fn record_fills_the_cassette_and_replay_never_calls_out() {
    let p = EvalProject::new();
    p.model(&SIX_WRONG);
    p.config(
        "[providers.ci]\nkind = \"replay\"\ncassette = \"evals/cassettes/triage.json\"\nrecord_with = \"model\"\nmodel = \"triage-model\"\n",
    );

    // The cassette and its folder do not exist yet: recording creates them.
    let recorded = run(&p, with(&COMPARE, &["--provider", "ci", "--record", "--json"]));
    recorded.status(1);
    let cassette: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path("evals/cassettes/triage.json")).unwrap(),
    )
    .unwrap();
    let entries = cassette["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 16);
    assert!(
        entries.iter().all(|e| e["model"] == "triage-model" && e["recorded_from"] == "scripted")
    );

    // The model is gone: replaying answers from the cassette alone, the same verdicts.
    std::fs::remove_file(p.path("model.json")).unwrap();
    let replayed = run(&p, with(&COMPARE, &["--provider", "ci", "--replay", "--json"]));
    replayed.status(1);
    let (a, b) = (recorded.json(), replayed.json());
    assert_eq!(a["comparison"], b["comparison"]);
    assert_eq!(a["suites"][1]["results"], b["suites"][1]["results"]);
    assert_eq!(
        b["suites"][1]["latency_ms"],
        json!({"p50": 40.0, "p95": 80.0}),
        "the recorded latencies"
    );
    let last = p.records().into_iter().rev().find(|r| r["event"] == "eval_completed").unwrap();
    assert_eq!(last["cassette"], "evals/cassettes/triage.json");
    assert_eq!(last["provider"], "replay");

    // A changed case is a miss, never a live call.
    let path = p.path("evals/triage/cases.jsonl");
    let text =
        std::fs::read_to_string(&path).unwrap().replace("charged twice", "charged three times");
    std::fs::write(&path, text).unwrap();
    let out = run(&p, with(&COMPARE, &["--provider", "ci", "--replay", "--json"]));
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["code"], "replay_miss", "{doc:#}");
    assert!(doc["message"].as_str().unwrap().contains("could not run"), "{doc:#}");

    // --replay needs a replay provider.
    let out = run(&p, vec!["eval".into(), "--provider".into(), "model".into(), "--replay".into()]);
    out.status(1);
    assert!(out.stderr.contains("--replay applies to a replay provider"), "{out}");
}

/// A judge contract's verdicts, scripted: `(pass, reason)` in call order.
fn judge_replies(verdicts: &[(bool, &str)]) -> Vec<Value> {
    verdicts
        .iter()
        .map(|(pass, reason)| {
            json!({"contract_id": "PRC-JUDGE-001",
                   "text": json!({"pass": pass, "score": if *pass { 0.9 } else { 0.2 }, "reason": reason}).to_string(),
                   "usage": {"prompt_tokens": 50, "completion_tokens": 5}})
        })
        .collect()
}

#[test]
fn judge_assertions_ask_the_judge_contract_through_a_governed_exchange() {
    let p = EvalProject::new();
    p.config("");
    // Two cases; the judge passes the first and fails the second.
    p.write(
        "evals/triage/cases.jsonl",
        "{\"id\": \"a\", \"input\": {\"message\": \"I was charged twice this month\"}, \"expect\": [{\"kind\": \"judge\", \"contract\": \"PRC-JUDGE-001@^1\", \"pointer\": \"/label\", \"criteria\": \"names the queue for the problem\", \"expected\": \"billing\"}]}\n\
         {\"id\": \"b\", \"input\": {\"message\": \"Do you have an office in Lisbon?\"}, \"expect\": [{\"kind\": \"judge\", \"contract\": \"PRC-JUDGE-001@^1\", \"criteria\": \"names the queue for the problem\"}]}\n",
    );
    let mut responses: Vec<Value> = ["billing", "billing"]
        .iter()
        .map(|label| json!({"contract_id": "PRC-TRIAGE-001", "text": json!({"label": label, "confidence": 0.9}).to_string()}))
        .collect();
    responses.extend(judge_replies(&[
        (true, "billing is right"),
        (false, "an office question is not billing"),
    ]));
    p.write("model.json", &json!({"responses": responses}).to_string());

    let doc = run(
        &p,
        vec!["eval".into(), "--contract".into(), "PRC-TRIAGE-001@1.0.0".into(), "--json".into()],
    )
    .status(1)
    .json();

    let suite = &doc["suites"][0];
    assert_eq!(suite["passed"], 1, "{doc:#}");
    assert_eq!(suite["failures"], json!({"judge": 1}));
    assert_eq!(suite["judge_usage"], json!({"prompt_tokens": 100, "completion_tokens": 10}));
    assert_eq!(
        suite["results"][1]["assertions"][2],
        json!({"kind": "judge", "ok": false, "message": "judge (output): an office question is not billing"})
    );
    // The judge's calls are exchanges of their own, validated and recorded.
    let records = p.records();
    let judged: Vec<&Value> =
        records.iter().filter(|r| r["contract_id"] == "PRC-JUDGE-001").collect();
    assert_eq!(judged.len(), 2);
    assert!(judged.iter().all(|r| r["role"] == "judge" && r["verdict"] == "ok"), "{judged:#?}");
    // What the judge was asked: the input, the value at the pointer, the criteria.
    let first_judge_prompt = judged[0]["prompt_hash"].as_str().unwrap();
    assert_eq!(first_judge_prompt.len(), 64);

    // A judge reply without a verdict fails the assertion with the judge's schema error.
    let mut responses: Vec<Value> = ["billing", "billing"]
        .iter()
        .map(|label| json!({"contract_id": "PRC-TRIAGE-001", "text": json!({"label": label, "confidence": 0.9}).to_string()}))
        .collect();
    responses.push(json!({"contract_id": "PRC-JUDGE-001", "text": "{\"score\": 1}"}));
    responses.extend(judge_replies(&[(true, "fine")]));
    p.write("model.json", &json!({"responses": responses}).to_string());
    let doc = run(
        &p,
        vec!["eval".into(), "--contract".into(), "PRC-TRIAGE-001@1.0.0".into(), "--json".into()],
    )
    .status(1)
    .json();
    let message = doc["suites"][0]["results"][0]["assertions"][2]["message"].as_str().unwrap();
    assert!(
        message.contains("the judge gave no verdict") && message.contains("output_schema"),
        "{message}"
    );
}

#[test]
fn a_draft_is_evaluated_only_when_allowed() {
    let p = EvalProject::new();
    p.model(&[]);
    p.config("");
    let v = p.pactum(&["new", "version", "PRC-TRIAGE-001@1.2.0", "--json"]);
    v.status(0);

    let out = run(
        &p,
        vec!["eval".into(), "--contract".into(), "PRC-TRIAGE-001@1.2.0".into(), "--json".into()],
    );
    out.status(1);
    assert_eq!(out.json()["code"], "contract_not_active");
    assert!(out.json()["message"].as_str().unwrap().contains("--allow-draft"), "{out}");
}

#[test]
fn no_suite_and_unknown_suites_are_usage_errors() {
    let p = EvalProject::new();
    p.config("");
    let out = run(&p, vec!["eval".into(), "EVAL-TRAIGE-001".into()]);
    out.status(2);
    assert!(out.stderr.contains("did you mean EVAL-TRIAGE-001?"), "{out}");
    let out = run(&p, vec!["eval".into(), "--contract".into(), "PRC-CLASSIFY-001@1.0.0".into()]);
    out.status(2);
    assert!(out.stderr.contains("no eval suite under evals/ evaluates PRC-CLASSIFY-001"), "{out}");
}

#[test]
fn validate_checks_suites_their_pins_pointers_judges_and_every_dataset_line() {
    let p = EvalProject::new();
    p.pactum(&["validate"]).status(0);
    p.write(
        "evals/triage/EVAL-TRIAGE-002.yaml",
        "eval_id: EVAL-TRIAGE-002\ncontract: PRC-TRIAGE-001@^1\ndataset: evals/triage/more.jsonl\nassertions:\n  - kind: equals\n    pointer: /labl\n    value: billing\n  - kind: judge\n    contract: PRC-TRIAGE-001@^1\n    criteria: right queue\n  - kind: matches\n    pointer: /label\n    pattern: \"(a)\\\\1\"\n",
    );
    p.write(
        "evals/triage/more.jsonl",
        "{\"id\": \"a\", \"input\": {\"message\": \"\"}}\n\n{\"id\": \"a\", \"input\": {\"message\": \"x\"}}\nnot json\n{\"id\": \"c\", \"input\": {\"message\": \"x\"}, \"expect\": [{\"kind\": \"length\", \"pointer\": \"/confidence/x\", \"max\": 1}]}\n",
    );
    p.write(
        "evals/triage/EVAL-TRIAGE-003.json",
        "{\"eval_id\": \"EVAL-TRIAGE-003\", \"contract\": \"PRC-TRIAGE-009@^1\", \"dataset\": \"../outside.jsonl\", \"repeat\": 0}",
    );
    p.write(
        "evals/triage/EVAL-TRIAGE-004.json",
        "{\"eval_id\": \"EVAL-TRIAGE-004\", \"contract\": \"PRC-TRIAGE-001@^1\", \"dataset\": \"evals/triage/gone.jsonl\"}",
    );

    let out = p.pactum(&["validate", "--json"]);

    out.status(1);
    let doc = out.json();
    let found: Vec<(String, String, u64)> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["file"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let has = |code: &str, file: &str, line: u64| {
        assert!(
            found.contains(&(code.to_string(), file.to_string(), line)),
            "no {code} at {file}:{line} in {found:#?}"
        );
    };
    has("eval_suite_invalid", "evals/triage/EVAL-TRIAGE-002.yaml", 6);
    has("eval_suite_invalid", "evals/triage/EVAL-TRIAGE-002.yaml", 9);
    has("eval_suite_invalid", "evals/triage/EVAL-TRIAGE-002.yaml", 13);
    has("input_schema_invalid", "evals/triage/more.jsonl", 1);
    has("eval_dataset_invalid", "evals/triage/more.jsonl", 3);
    has("eval_dataset_invalid", "evals/triage/more.jsonl", 4);
    has("eval_suite_invalid", "evals/triage/more.jsonl", 5);
    // The third suite fails its schema (repeat 0), so its pin is not looked at yet.
    has("eval_suite_invalid", "evals/triage/EVAL-TRIAGE-003.json", 1);
    let messages: Vec<&str> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert!(messages.iter().any(|m| m.contains("did you mean `/label`?")), "{messages:#?}");
    // A missing dataset is named once, with what is wrong.
    let gone = messages.iter().find(|m| m.contains("gone.jsonl")).expect("the missing dataset");
    assert_eq!(gone.matches("gone.jsonl").count(), 1, "{gone}");
    assert!(gone.contains("No such file"), "{gone}");
    // A line that is no JSON is placed by the file's line only.
    assert!(messages.iter().all(|m| !m.contains("at line 1 column")), "{messages:#?}");
    assert!(
        messages.iter().any(|m| m.contains("PRC-TRIAGE-001@1.1.0 cannot judge")),
        "{messages:#?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("backreferences are not supported")),
        "{messages:#?}"
    );
    assert!(doc["summary"]["files"].as_u64().unwrap() > 0);

    // Fixed schema, an unknown pin and a dataset outside the project.
    p.write(
        "evals/triage/EVAL-TRIAGE-003.json",
        "{\"eval_id\": \"EVAL-TRIAGE-003\", \"contract\": \"PRC-TRIAGE-009@^1\", \"dataset\": \"evals/none.jsonl\"}",
    );
    let doc =
        p.pactum(&["validate", "evals/triage/EVAL-TRIAGE-003.json", "--json"]).status(1).json();
    let codes: Vec<&str> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["contract_not_found", "eval_dataset_invalid"], "{doc:#}");
}

#[test]
fn new_eval_scaffolds_a_suite_from_the_contract_examples_that_validates_and_runs() {
    let p = EvalProject::new();
    let out = p.pactum(&["new", "eval", "PRC-CLASSIFY-001"]);
    out.status(0);
    assert!(out.stdout.contains("created evals/classify/EVAL-CLASSIFY-001.json and evals/classify/cases.jsonl (3 cases from the contract's examples)"), "{out}");
    let suite: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path("evals/classify/EVAL-CLASSIFY-001.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(suite["contract"], "PRC-CLASSIFY-001@^1");
    assert_eq!(suite["$schema"], "../../schemas/eval_suite.schema.json");
    let lines: Vec<Value> = std::fs::read_to_string(p.path("evals/classify/cases.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    // The example that expects `ok` pins its label (an enum), not its confidence.
    assert_eq!(
        lines[0]["expect"],
        json!([{"kind": "equals", "pointer": "/label", "value": "billing"}])
    );
    assert_eq!(
        lines[0]["input"]["user_input"],
        "I was charged twice for my subscription this month."
    );
    assert!(lines[1].get("expect").is_none());
    p.pactum(&["validate"]).status(0);
    // A contract without examples gets one case with the smallest valid input.
    let out = p.pactum(&["new", "eval", "PRC-TRIAGE-001@1.0.0", "--json"]);
    let doc = out.status(0).json();
    assert_eq!(doc["eval_id"], "EVAL-TRIAGE-002", "EVAL-TRIAGE-001 is taken: {doc:#}");
    assert_eq!(doc["cases"], 1);
    let line = std::fs::read_to_string(p.path(doc["dataset"].as_str().unwrap())).unwrap();
    assert_eq!(line, "{\"id\":\"case-1\",\"input\":{\"message\":\"x\"}}\n");
    p.pactum(&["validate"]).status(0);
    // The scaffold runs (offline, dry-run answers), and says that it measured no model.
    let out = p.pactum(&["eval", "EVAL-CLASSIFY-001", "--provider", "dry-run"]);
    out.status(1);
    assert!(out.stdout.contains("EVAL-CLASSIFY-001 (PRC-CLASSIFY-001"), "{out}");
    assert!(out.stdout.ends_with("no model: these numbers are no evidence\n"), "{out}");
}

// --- The eval gate (registry promote --eval, [gate] eval = true) ---------------------------

/// The last event of the registry's history.
fn last_event(p: &EvalProject) -> Value {
    let registry: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path("registry.json")).unwrap()).unwrap();
    registry["history"].as_array().unwrap().last().unwrap().clone()
}

fn state_of(p: &EvalProject, version: &str) -> String {
    let registry: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path("registry.json")).unwrap()).unwrap();
    registry["contracts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["contract_id"] == "PRC-TRIAGE-001" && e["version"] == version)
        .unwrap()["state"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn promote_eval_refuses_a_regressing_candidate_and_records_the_evidence_of_a_good_one() {
    let p = EvalProject::with_draft();
    p.config("");
    p.model(&SIX_WRONG);

    let out = p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.1.0", "--eval", "--json"]);

    out.status(1);
    let doc = out.json();
    assert_eq!(doc["code"], "eval_regression", "{doc:#}");
    let message = doc["message"].as_str().unwrap();
    assert!(message.starts_with("the eval gate refuses PRC-TRIAGE-001@1.1.0: "), "{message}");
    assert!(message.contains("regressed against PRC-TRIAGE-001@1.0.0 on 6 case(s)"), "{message}");
    assert_eq!(state_of(&p, "1.1.0"), "draft");
    // The measurement is in the ledger even though the promotion was refused.
    let records = p.records();
    let evals: Vec<&Value> = records.iter().filter(|r| r["event"] == "eval_completed").collect();
    assert_eq!(evals.len(), 1);
    assert_eq!(evals[0]["ok"], false);

    // The same candidate, answered well: promoted, with the evidence in the promote event.
    p.model(&[("1.1.0", "office", "billing")]);
    let out = p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.1.0", "--eval", "--json"]);
    let doc = out.status(0).json();
    assert_eq!(state_of(&p, "1.1.0"), "active");
    let dataset = std::fs::read(p.path("evals/triage/cases.jsonl")).unwrap();
    let sha = pactum::digest::sha256_hex(&dataset);
    let expected = json!({
        "provider": "scripted",
        "suites": [{
            "eval_id": "EVAL-TRIAGE-001", "file": "evals/triage/EVAL-TRIAGE-001.json",
            "dataset": "evals/triage/cases.jsonl", "dataset_sha256": sha,
            "candidate": {"version": "1.1.0", "cases": 8, "passed": 7, "pass_rate": 0.875},
            "baseline": {"version": "1.0.0", "cases": 8, "passed": 8, "pass_rate": 1.0},
            "regressions": 1, "improvements": 0, "p_value": 1.0,
        }],
    });
    assert_eq!(doc["eval"], expected, "{doc:#}");
    let event = last_event(&p);
    assert_eq!(event["action"], "promote");
    assert_eq!(event["version"], "1.1.0");
    assert_eq!(event["eval"], expected);
    p.pactum(&["registry", "verify"]).status(0);
    let text = p.pactum(&["registry", "log", "PRC-TRIAGE-001"]);
    text.status(0);
    // The evidence is hashed into the history: a pass rate edited afterwards is caught.
    let registry = std::fs::read_to_string(p.path("registry.json")).unwrap();
    assert_eq!(registry.matches("\"pass_rate\": 0.875").count(), 1, "{registry}");
    std::fs::write(
        p.path("registry.json"),
        registry.replace("\"pass_rate\": 0.875", "\"pass_rate\": 1.0"),
    )
    .unwrap();
    let out = p.pactum(&["registry", "verify", "--json"]);
    out.status(1);
    assert_eq!(out.json()["code"], "registry_history_broken", "{out}");
}

#[test]
fn gate_eval_in_pactum_toml_gates_every_contract_promotion_without_the_flag() {
    let p = EvalProject::with_draft();
    p.config("[gate]\neval = true\n");
    p.model(&SIX_WRONG);

    let out = p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.1.0"]);

    out.status(1);
    assert!(
        out.stderr.contains("error[eval_regression]: the eval gate refuses PRC-TRIAGE-001@1.1.0"),
        "{out}"
    );
    assert_eq!(state_of(&p, "1.1.0"), "draft");
    p.model(&[]);
    let out = p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.1.0"]);
    out.status(0);
    assert!(
        out.stdout.contains("eval gate: EVAL-TRIAGE-001: 1.1.0 passes 8/8 (100.0%), 1.0.0 passes 8/8 (100.0%); 0 regression(s), 0 improvement(s), McNemar p = 1.0000\npromoted PRC-TRIAGE-001@1.1.0 to active"),
        "{out}"
    );
}

#[test]
fn the_gate_evaluates_with_the_gate_provider_and_only_contracts_with_suites() {
    let p = EvalProject::with_draft();
    // The default provider would answer badly; the gate's provider answers well.
    p.model(&SIX_WRONG);
    std::fs::rename(p.path("model.json"), p.path("bad.json")).unwrap();
    p.model(&[]);
    p.write(
        "pactum.toml",
        "[defaults]\nprovider = \"bad\"\n\n[providers.bad]\nkind = \"scripted\"\nfixtures = \"bad.json\"\n\n\
         [providers.good]\nkind = \"scripted\"\nfixtures = \"model.json\"\n\n[gate]\neval = true\nprovider = \"good\"\n",
    );
    // A pack has no suites: --eval on it is a usage error, and the configured gate lets it be.
    let pack = std::fs::read_to_string(p.path("prompt_packs/triage/2.0.0.json"))
        .unwrap()
        .replace("\"2.0.0\"", "\"2.1.0\"");
    p.write("prompt_packs/triage/2.1.0.json", &pack);
    p.pactum(&["registry", "add", "prompt_packs/triage/2.1.0.json"]).status(0);
    let out = p.pactum(&["registry", "promote", "PRM-TRIAGE-001@2.1.0", "--eval", "--json"]);
    assert_eq!(out.status(2).json()["code"], "pin_invalid", "{out}");
    p.pactum(&["registry", "promote", "PRM-TRIAGE-001@2.1.0"]).status(0);
    assert!(last_event(&p).get("eval").is_none());
    p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.1.0"]).status(0);
    assert_eq!(last_event(&p)["eval"]["suites"][0]["candidate"]["passed"], 8);

    // A contract no suite evaluates: --eval has nothing to measure and refuses; the
    // configured gate notes it and promotes.
    std::fs::remove_dir_all(p.path("evals")).unwrap();
    let draft = std::fs::read_to_string(p.path("contracts/triage/1.1.0.json"))
        .unwrap()
        .replace("\"1.1.0\"", "\"1.2.0\"");
    p.write("contracts/triage/1.2.0.json", &draft);
    p.pactum(&["registry", "add", "contracts/triage/1.2.0.json"]).status(0);
    let out = p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.2.0", "--eval"]);
    out.status(2);
    assert!(
        out.stderr.contains(
            "no eval suite under evals/ evaluates PRC-TRIAGE-001, so --eval has nothing to measure"
        ),
        "{out}"
    );
    let out = p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.2.0"]);
    out.status(0);
    assert!(out.stderr.contains("promoted without evaluation"), "{out}");
    assert!(last_event(&p).get("eval").is_none());
}

#[test]
fn promotion_is_refused_while_a_suite_of_the_contract_does_not_validate() {
    let p = EvalProject::with_draft();
    p.config("");
    p.model(&[]);
    let suite = p.path("evals/triage/EVAL-TRIAGE-001.json");
    let good = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(&suite, good.replace("\"pointer\": \"/label\"", "\"pointer\": \"/labl\""))
        .unwrap();

    let out = p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.1.0", "--json"]);

    let doc = out.status(1).json();
    assert_eq!(doc["code"], "eval_suite_invalid", "{doc:#}");
    assert!(
        doc["message"].as_str().unwrap().contains("evals/triage/EVAL-TRIAGE-001.json"),
        "{doc:#}"
    );
    assert_eq!(state_of(&p, "1.1.0"), "draft");
    std::fs::write(&suite, good).unwrap();
    p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.1.0"]).status(0);
}

#[test]
fn an_evaluation_on_no_model_says_so_fails_and_is_no_evidence_for_a_promotion() {
    // No provider configured: the dry-run stand-in answers, schema-valid and meaningless.
    let p = EvalProject::with_draft();
    p.write("pactum.toml", "");
    let out = p.pactum(&["eval"]);
    out.status(1);
    assert!(!out.stdout.contains("ok: every suite meets its thresholds"), "{out}");
    assert!(out.stdout.contains("no model: these numbers are no evidence"), "{out}");
    assert!(out.stderr.contains("error[provider_not_configured]"), "{out}");
    assert!(out.stderr.contains("dry-run stand-in"), "{out}");
    let out = p.pactum(&["eval", "--json"]);
    out.status(1);
    let doc = out.json();
    assert_eq!((&doc["ok"], &doc["evidence"]), (&json!(false), &json!(false)), "{doc}");
    assert_eq!(doc["code"], "provider_not_configured", "{doc}");
    let out = p.pactum(&["eval", "--format", "markdown"]);
    out.status(1);
    assert!(out.stdout.starts_with("### ❌ pactum eval") && out.stdout.contains("**No model:**"));
    // The gate refuses to count it: the candidate stays a draft.
    let out = p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.1.0", "--eval", "--json"]);
    out.status(1);
    assert_eq!(out.json()["code"], "provider_not_configured", "{out}");
    let registry = std::fs::read_to_string(p.path("registry.json")).unwrap();
    assert!(!registry.contains("\"eval_completed\""), "{registry}");
    // With a model, the same project's evaluation is a verdict again.
    p.model(&[]);
    p.config("");
    let out = p.pactum(&["eval"]);
    out.status(0);
    assert!(out.stdout.contains("ok: every suite meets its thresholds"), "{out}");
}

#[test]
fn a_plain_promotion_says_which_suite_was_not_run_and_how_to_run_it() {
    let p = EvalProject::with_draft();
    p.model(&SIX_WRONG);
    p.config("");
    let out = p.pactum(&["registry", "promote", "PRC-TRIAGE-001@1.1.0"]);
    out.status(0);
    assert!(
        out.stderr.contains("EVAL-TRIAGE-001 evaluates PRC-TRIAGE-001 and was not run"),
        "{out}"
    );
    let hint = "`pactum eval --contract PRC-TRIAGE-001@1.1.0 --allow-draft`";
    assert!(out.stderr.contains(hint), "{out}");
    // The command it names is the evaluation that would have refused the version.
    let out = p.pactum(&["eval", "--contract", "PRC-TRIAGE-001@1.1.0", "--allow-draft"]);
    out.status(1);
    assert!(out.stderr.contains("error[eval_regression]"), "{out}");
}
