//! A path is checked with its context (issue 44): `pactum validate FILE|FOLDER` inside a
//! project reports every finding about the named files, including those that need another
//! file of the project, and nothing about the other files. What the pre-commit hook runs
//! (the changed files only) fails exactly when the whole project's run has a finding about
//! one of them.

use std::path::Path;

use serde_json::Value;

use crate::common::{Out, pactum_in};

/// A project (`pactum init`) with PRC-TRIAGE-001 and its pack as drafts (`new contract`):
/// its files change freely, so a finding is about what the test broke, not a hash.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    Out::of(pactum_in(dir.path()).args(["init"])).status(0);
    Out::of(pactum_in(dir.path()).args(["new", "contract", "PRC-TRIAGE-001"])).status(0);
    Out::of(pactum_in(dir.path()).args(["new", "contract", "PRC-OTHER-001"])).status(0);
    crate::common::write_placeholders(dir.path());
    dir
}

const PACK: &str = "prompt_packs/triage/1.0.0.json";
const CONTRACT: &str = "contracts/triage/1.0.0.json";

fn edit(root: &Path, rel: &str, from: &str, to: &str) {
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "`{from}` not in {rel}:\n{text}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `pactum validate ARGS --json`: the exit status and the report.
fn validate(root: &Path, args: &[&str]) -> (i32, Value) {
    let out = Out::of(pactum_in(root).arg("validate").args(args).arg("--json"));
    (out.code, out.json())
}

/// Each finding as `code file message`, sorted.
fn findings(doc: &Value) -> Vec<String> {
    let mut out: Vec<String> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| format!("{} {} {}", d["code"], d["file"], d["message"]))
        .collect();
    out.sort();
    out
}

fn codes(doc: &Value) -> Vec<String> {
    doc["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].to_string()).collect()
}

#[test]
fn a_pack_named_alone_fails_as_the_whole_project_does_on_the_variable_its_contract_lacks() {
    let dir = project();
    let root = dir.path();
    assert_eq!(validate(root, &[PACK]).0, 0);
    edit(root, PACK, "{{ input }}", "{{ tickt }}");
    let (status, whole) = validate(root, &[]);
    assert_eq!(status, 1, "{whole:#}");
    assert_eq!(whole["summary"]["errors"], 2, "{whole:#}");
    // What the pre-commit hook runs: the changed pack alone. Every finding of the whole
    // run is about the pack (the undeclared variable, the unused input, the example that
    // no longer renders), though each is on the contract that binds it.
    let (status, named) = validate(root, &[PACK]);
    assert_eq!(status, 1, "{named:#}");
    assert_eq!(findings(&named), findings(&whole));
    assert!(codes(&named).contains(&"\"template_variable_undeclared\"".to_string()), "{named:#}");
    assert_eq!(named["summary"]["files"], 1, "{named:#}");
    // Named with the contract, the same findings, once each.
    let (_, both) = validate(root, &[PACK, CONTRACT]);
    assert_eq!(findings(&both), findings(&whole));
    // Another contract named alone: none of those findings is about it.
    let (status, other) = validate(root, &["contracts/other/1.0.0.json"]);
    assert_eq!((status, findings(&other)), (0, Vec::<String>::new()), "{other:#}");
    // The folder of packs stands for every pack in it.
    let (status, folder) = validate(root, &["prompt_packs"]);
    assert_eq!((status, findings(&folder)), (1, findings(&whole)));
}

#[test]
fn a_contract_binding_its_pack_through_an_escaped_id_is_still_context() {
    // The files that need a named file are found by the ids they mention; a JSON escape
    // spells the id in other bytes, and such a file is read as context all the same.
    let dir = project();
    let root = dir.path();
    edit(
        root,
        CONTRACT,
        "\"prompt_pack_id\": \"PRM-TRIAGE-001\"",
        "\"prompt_pack_id\": \"PRM\\u002dTRIAGE-001\"",
    );
    edit(root, PACK, "{{ input }}", "{{ tickt }}");
    let (_, whole) = validate(root, &[]);
    let (status, named) = validate(root, &[PACK]);
    assert_eq!(status, 1, "{named:#}");
    assert_eq!(findings(&named), findings(&whole));
}

#[test]
fn a_contract_named_alone_reports_its_examples_failing_through_its_pack() {
    let dir = project();
    let root = dir.path();
    // The example's input gives `input`; the pack now needs `topic`, which the contract
    // declares but the example does not give.
    edit(root, PACK, "{{ input }}", "{{ input }} {{ topic }}");
    edit(
        root,
        CONTRACT,
        "\"properties\": {",
        "\"properties\": {\n      \"topic\": {\"type\": \"string\"},",
    );
    let (_, whole) = validate(root, &[]);
    let (status, named) = validate(root, &[CONTRACT]);
    assert_eq!(status, 1, "{named:#}");
    assert_eq!(codes(&named), vec!["\"example_failed\"".to_string()], "{named:#}");
    assert_eq!(findings(&named), findings(&whole));
}

/// The project with both contracts and packs active (promoted), and a work order pinning
/// PRC-TRIAGE-001.
fn active_project(input: &str) -> tempfile::TempDir {
    let dir = project();
    let root = dir.path();
    for pin in ["PRM-TRIAGE-001@1.0.0", "PRC-TRIAGE-001@1.0.0"] {
        Out::of(pactum_in(root).args(["registry", "promote", pin])).status(0);
    }
    write(
        root,
        "work_orders/WO-TRIAGE-1.json",
        &format!(
            r#"{{"work_order_id": "WO-TRIAGE-1", "kind": "exchange", "contract": "PRC-TRIAGE-001@^1", "input": {input}}}"#
        ),
    );
    dir
}

#[test]
fn a_work_order_named_alone_is_checked_against_its_contracts_input_schema() {
    let dir = active_project(r#"{"inptu": "hello"}"#);
    let root = dir.path();
    let (status, whole) = validate(root, &[]);
    assert_eq!(status, 1, "{whole:#}");
    for args in [&["work_orders/WO-TRIAGE-1.json"][..], &["work_orders"]] {
        let (status, named) = validate(root, args);
        assert_eq!(status, 1, "{args:?}: {named:#}");
        assert!(codes(&named).iter().all(|c| c == "\"input_schema_invalid\""), "{named:#}");
        assert_eq!(findings(&named), findings(&whole), "{args:?}");
    }
}

#[test]
fn a_contract_named_alone_reports_the_work_orders_its_change_breaks() {
    // A variant: the contract is the changed file, the work order its context.
    let dir = active_project(r#"{"input": "hello"}"#);
    let root = dir.path();
    assert_eq!(validate(root, &[]).0, 0);
    edit(root, CONTRACT, "\"minLength\": 1,", "\"minLength\": 10,");
    let (_, whole) = validate(root, &[]);
    let (status, named) = validate(root, &[CONTRACT]);
    assert_eq!(status, 1, "{named:#}");
    let on_work_order: Vec<&Value> = named["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["file"] == "work_orders/WO-TRIAGE-1.json")
        .collect();
    assert_eq!(on_work_order.len(), 1, "{named:#}");
    assert_eq!(on_work_order[0]["code"], "input_schema_invalid");
    assert_eq!(findings(&named), findings(&whole));
}

#[test]
fn a_dataset_named_alone_is_checked_against_its_suites_contract() {
    let dir = project();
    let root = dir.path();
    write(
        root,
        "evals/triage/EVAL-TRIAGE-001.json",
        r#"{"eval_id": "EVAL-TRIAGE-001", "contract": "PRC-TRIAGE-001@1.0.0", "dataset": "evals/triage/cases.jsonl",
           "assertions": [{"kind": "one_of", "pointer": "/result", "values": ["a"]}]}"#,
    );
    write(
        root,
        "evals/triage/cases.jsonl",
        "{\"id\": \"a\", \"input\": {\"input\": \"x\"}}\n{\"id\": \"b\", \"input\": {\"inptu\": \"x\"}}\n",
    );
    let (status, whole) = validate(root, &[]);
    assert_eq!(status, 1, "{whole:#}");
    let (status, named) = validate(root, &["evals/triage/cases.jsonl"]);
    assert_eq!(status, 1, "{named:#}");
    assert_eq!(findings(&named), findings(&whole));
    let d = &named["diagnostics"][0];
    assert_eq!(
        (&d["code"], &d["file"], &d["line"]),
        (&"input_schema_invalid".into(), &"evals/triage/cases.jsonl".into(), &2.into())
    );
    assert_eq!(named["summary"]["files"], 1, "{named:#}");
    // The contract named alone: the dataset line its input_schema refuses is about it.
    let (status, contract) = validate(root, &[CONTRACT]);
    assert_eq!((status, findings(&contract)), (1, findings(&whole)));
    // Another contract: nothing.
    assert_eq!(validate(root, &["contracts/other/1.0.0.json"]).0, 0);
}

#[test]
fn every_file_named_alone_reports_what_the_whole_run_reports_on_it_and_nothing_it_does_not() {
    // Many breakages at once; each file of the project, named alone, gets at least every
    // finding the whole run has on that file, and only findings the whole run has.
    let dir = active_project(r#"{"inptu": "hello"}"#);
    let root = dir.path();
    edit(root, "prompt_packs/other/1.0.0.json", "{{ input }}", "{{ inptu }}");
    write(root, "contracts/stray/1.0.0.json", "{ not json");
    edit(root, "contracts/other/1.0.0.json", "\"max_tokens\": 512", "\"max_tokens\": -1");
    let (_, whole) = validate(root, &[]);
    let all = findings(&whole);
    assert!(all.len() >= 5, "{whole:#}");
    for file in [
        PACK,
        CONTRACT,
        "prompt_packs/other/1.0.0.json",
        "contracts/other/1.0.0.json",
        "contracts/stray/1.0.0.json",
        "work_orders/WO-TRIAGE-1.json",
    ] {
        let (status, named) = validate(root, &[file]);
        let named = findings(&named);
        let own: Vec<&String> =
            all.iter().filter(|f| f.contains(&format!(" \"{file}\" "))).collect();
        for f in &own {
            assert!(named.contains(f), "{file}: {f} missing from {named:#?}");
        }
        for f in &named {
            assert!(all.contains(f), "{file}: {f} is not in the whole run's {all:#?}");
        }
        let errors = named.iter().any(|f| !f.starts_with("\"template_input_unused\""));
        assert_eq!(status, i32::from(errors), "{file}: {named:#?}");
    }
}
