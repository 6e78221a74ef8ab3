//! Context assembly through the binary (SPEC §16, issue 13): `pactum run` reads a
//! contract's `file_refs`, `framework_refs` and `ledger_queries` before rendering, the work
//! order wins entry by entry, missing references fail closed, `context_budget` cuts and
//! warns; `pactum render --work-order` shows the assembled context; `pactum validate`
//! reports the references a run would refuse.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{Out, pactum_in, single_result};
use pactum::registry::{EntryKind, lifecycle, store};
use serde_json::{Value, json};
use tempfile::TempDir;

fn at() -> lifecycle::Stamp {
    lifecycle::Stamp::new("2026-01-01T00:00:00Z", "tester@example.com")
}

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

fn write_json(root: &Path, rel: &str, value: &Value) -> PathBuf {
    write(root, rel, &serde_json::to_string_pretty(value).unwrap())
}

/// Registers and activates `doc` at `rel`.
fn register(root: &Path, rel: &str, doc: &Value) {
    let file = write_json(root, rel, doc);
    let registry = root.join("registry.json");
    store::update(&registry, |reg| lifecycle::add(reg, &file, &at())).unwrap();
    let id = doc.get("contract_id").or_else(|| doc.get("prompt_pack_id")).unwrap();
    let id = id.as_str().unwrap();
    let version = pactum::id::parse_version(doc["version"].as_str().unwrap()).unwrap();
    let kind = EntryKind::of_id(id).unwrap();
    store::update(&registry, |reg| lifecycle::promote(reg, kind, id, &version, &at())).unwrap();
}

/// A project whose PRC-CTX-001 requires a policy file, a framework and the last two
/// exchanges of the session; its pack prints all three.
fn project(required: Value) -> TempDir {
    project_with(
        required,
        "Policy: {{ assembled_context.files['docs/policy.md'] }}\n{% for e in assembled_context.ledger.exchange %}- earlier: {{ e.work_order_id }} {{ e.verdict }}\n{% endfor %}",
    )
}

/// Like [`project`], with the pack's `context` section given.
fn project_with(required: Value, context: &str) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    store::update(&root.join("registry.json"), |_| Ok(())).unwrap();
    write(root, "docs/policy.md", "Refunds within 30 days.");
    write(root, "frameworks/FMWK-TONE.md", "Answer politely.");
    let pack = json!({"prompt_pack_id": "PRM-CTX-001", "version": "1.0.0", "sections": {
        "role": "{{ assembled_context.frameworks['FMWK-TONE'] }}",
        "context": context,
        "task": "Answer: {{ question }}"
    }});
    register(root, "prompt_packs/ctx/1.0.0.json", &pack);
    let contract = json!({
        "contract_id": "PRC-CTX-001", "version": "1.0.0", "prompt_pack_id": "PRM-CTX-001",
        "boundary": {"max_tokens": 64, "temperature": 0},
        "input_schema": {"type": "object", "required": ["question"],
                         "properties": {"question": {"type": "string"}}},
        "required_context": required
    });
    register(root, "contracts/ctx/1.0.0.json", &contract);
    dir
}

fn full() -> Value {
    json!({"file_refs": ["docs/policy.md"], "framework_refs": ["FMWK-TONE"],
           "ledger_queries": [{"event_type": "exchange", "tier": "ho1", "max_entries": 2, "recency": "session"}]})
}

fn work_order(root: &Path, name: &str, extra: Value) -> PathBuf {
    let mut wo = json!({"work_order_id": format!("WO-{}", name.to_uppercase()), "kind": "exchange",
                        "contract": "PRC-CTX-001", "input": {"question": "may I return it?"},
                        "session_id": "s-1", "tier": "ho1",
                        "provider": {"fixtures": "fixtures.json"}});
    for (k, v) in extra.as_object().unwrap() {
        wo[k] = v.clone();
    }
    write_json(root, &format!("work_orders/{name}.json"), &wo)
}

fn run(root: &Path, wo: &Path, replies: usize) -> (Value, i32) {
    let responses: Vec<Value> =
        (0..replies).map(|i| json!({"text": format!("answer {i}")})).collect();
    write_json(root, "work_orders/fixtures.json", &json!({"responses": responses}));
    let out = pactum_in(root).arg("run").arg(wo).arg("--json").output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (single_result(doc), out.status.code().unwrap_or(-1))
}

fn pactum(root: &Path, args: &[&str]) -> Out {
    pactum_in(root).args(args).output().unwrap().into()
}

/// The project ledger's exchange records (each run's start and end records left out).
fn exchange_records(root: &Path) -> Vec<Value> {
    fs::read_to_string(root.join(".pactum/ledger.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "exchange")
        .collect()
}

#[test]
fn run_assembles_files_frameworks_and_session_history_into_the_prompt() {
    let dir = project(full());
    let root = dir.path();
    for n in 1..=3 {
        let wo = work_order(root, &format!("ask-{n}"), json!({}));
        let (out, status) = run(root, &wo, 1);
        assert_eq!((status, &out["ok"]), (0, &json!(true)), "{out:#}");
    }
    // Another session's exchange is not history of s-1.
    let other = work_order(root, "other", json!({"session_id": "s-2"}));
    assert_eq!(run(root, &other, 1).1, 0);
    let records = exchange_records(root);
    let prompt = |r: &Value| r["raw_response"].clone();
    assert_eq!(prompt(&records[0]), "answer 0");
    for r in &records {
        assert_eq!(r["event"], "exchange");
        assert_eq!(r["tier"], "ho1");
        assert!(r["session_id"].is_string(), "{r:#}");
    }
    // The fourth run of s-1 sees the policy, the framework and the last two s-1 exchanges.
    let wo = work_order(root, "ask-4", json!({}));
    let out = pactum(root, &["render", "--work-order", wo.to_str().unwrap(), "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let ctx = &doc["assembled_context"];
    assert_eq!(ctx["files"]["docs/policy.md"], "Refunds within 30 days.");
    assert_eq!(ctx["frameworks"]["FMWK-TONE"], "Answer politely.");
    let earlier: Vec<&str> = ctx["ledger"]["exchange"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["work_order_id"].as_str().unwrap())
        .collect();
    assert_eq!(earlier, ["WO-ASK-2", "WO-ASK-3"], "newest two of the session, oldest first");
    let messages = doc["messages"].to_string();
    assert!(messages.contains("Answer politely."), "{messages}");
    assert!(messages.contains("Policy: Refunds within 30 days."), "{messages}");
    assert!(messages.contains("- earlier: WO-ASK-3 ok"), "{messages}");
    // The text form shows the context before the messages.
    let out = pactum(root, &["render", "--work-order", wo.to_str().unwrap()]);
    assert!(out.stdout.starts_with("--- assembled_context ---\n{"), "{}", out.stdout);
    assert!(out.stdout.contains("--- user ---"), "{}", out.stdout);
}

/// The project's own ledger is opened by one function (`ledger::Location`): a committed
/// `.pactum` that links outside the project is refused by every command, for reading as
/// for writing (issue 22); a ledger the user names on the command line may be anywhere.
#[cfg(unix)]
#[test]
fn a_symlinked_pactum_folder_is_refused_by_every_command_that_opens_the_ledger() {
    let dir = project(full());
    let root = dir.path();
    let wo = work_order(root, "ask-1", json!({}));
    assert_eq!(run(root, &wo, 1).1, 0);
    // The ledger moves out; a committed `.pactum` link points at it.
    let outside = tempfile::tempdir().unwrap();
    let elsewhere = outside.path().join("pactum");
    fs::rename(root.join(".pactum"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join(".pactum")).unwrap();
    let before = fs::read(elsewhere.join("ledger.jsonl")).unwrap();
    let wo = wo.to_str().unwrap();
    let escapes = |out: &Out, what: &str| {
        assert_eq!(out.code, 1, "{what}: {out:?}");
        let doc: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(doc["code"], "path_escape", "{what}: {doc:#}");
    };
    let run_out = pactum(root, &["run", wo, "--json"]);
    escapes(&run_out, "run");
    escapes(&pactum(root, &["render", "--work-order", wo, "--json"]), "render --work-order");
    escapes(&pactum(root, &["ledger", "query", "--json"]), "ledger query");
    escapes(&pactum(root, &["ledger", "verify", "--json"]), "ledger verify");
    assert_eq!(fs::read(elsewhere.join("ledger.jsonl")).unwrap(), before, "nothing written");
    // A link to a file inside the project is refused too: the ledger is read where it is.
    fs::remove_file(root.join(".pactum")).unwrap();
    fs::create_dir(root.join(".pactum")).unwrap();
    fs::copy(elsewhere.join("ledger.jsonl"), root.join("copy.jsonl")).unwrap();
    std::os::unix::fs::symlink(root.join("copy.jsonl"), root.join(".pactum/ledger.jsonl")).unwrap();
    escapes(&pactum(root, &["ledger", "verify", "--json"]), "ledger verify of a linked file");
    escapes(&pactum(root, &["ledger", "query", "--json"]), "ledger query of a linked file");
    // The user may name any ledger on the command line.
    let chosen = elsewhere.join("ledger.jsonl");
    let chosen = chosen.to_str().unwrap();
    assert_eq!(pactum(root, &["ledger", "verify", chosen]).code, 0);
    assert_eq!(pactum(root, &["ledger", "query", "--ledger", chosen]).code, 0);
    let out = pactum(root, &["render", "--work-order", wo, "--ledger", chosen, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn the_work_order_wins_entry_by_entry() {
    let dir = project(full());
    let root = dir.path();
    let wo = work_order(
        root,
        "given",
        json!({"assembled_context": {"files": {"docs/policy.md": "No refunds."},
                                     "ledger": {"exchange": [{"work_order_id": "WO-GIVEN", "verdict": "ok"}]}}}),
    );
    let out = pactum(root, &["render", "--work-order", wo.to_str().unwrap(), "--json"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["assembled_context"]["files"]["docs/policy.md"], "No refunds.");
    assert_eq!(doc["assembled_context"]["frameworks"]["FMWK-TONE"], "Answer politely.");
    assert_eq!(doc["assembled_context"]["ledger"]["exchange"][0]["work_order_id"], "WO-GIVEN");
}

#[test]
fn missing_or_escaping_references_fail_closed_without_a_call() {
    let dir = project_with(
        json!({"file_refs": ["docs/gone.md"], "framework_refs": ["FMWK-NONE"]}),
        "none",
    );
    let root = dir.path();
    let wo = work_order(root, "missing", json!({}));
    let (out, status) = run(root, &wo, 1);
    assert_eq!((status, out["code"].as_str()), (1, Some("required_context_missing")), "{out:#}");
    let message = out["message"].as_str().unwrap();
    assert!(
        message.contains("file:docs/gone.md") && message.contains("framework:FMWK-NONE"),
        "{message}"
    );
    let records = exchange_records(root);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["verdict"], "required_context_missing");
    assert!(records[0]["raw_response"].is_null(), "no call was made");
    // validate reports what run refuses, at the contract's pointer and the work order.
    let out = pactum(root, &["validate", "--json"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let found: Vec<(String, String)> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["code"].as_str().unwrap().into(), d["pointer"].as_str().unwrap_or("").into()))
        .collect();
    for want in [
        ("required_context_missing", "/required_context/file_refs/0"),
        ("required_context_missing", "/required_context/framework_refs/0"),
        ("required_context_missing", "/contract"),
    ] {
        assert!(
            found.iter().any(|(c, p)| (c.as_str(), p.as_str()) == want),
            "{want:?} in {found:?}"
        );
    }
    assert_eq!(out.code, 1);

    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.md", "s");
    #[cfg(unix)]
    {
        let dir = project_with(json!({"file_refs": ["docs/link.md"]}), "none");
        let root = dir.path();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), root.join("docs/link.md"))
            .unwrap();
        let wo = work_order(root, "link", json!({}));
        let (out, status) = run(root, &wo, 1);
        assert_eq!((status, out["code"].as_str()), (1, Some("path_escape")), "{out:#}");
        let out = pactum(root, &["validate", "--json"]);
        assert!(out.stdout.contains("\"path_escape\""), "{}", out.stdout);
    }
}

#[test]
fn file_refs_never_put_git_or_dot_files_into_a_prompt() {
    for rel in [".git/config", "docs/../.git/config", ".pactum/ledger.jsonl", ".env"] {
        let dir =
            project_with(json!({"file_refs": [rel]}), "{{ assembled_context.files | tojson }}");
        let root = dir.path();
        write(root, ".git/config", "[http]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n");
        write(root, ".env", "SHOP_API_KEY=1234567890\n");
        write(root, ".pactum/ledger.jsonl", "");
        // `expect_prompt` would turn the secret into one bit per work order: no call at all.
        let wo = work_order(root, "git", json!({}));
        let responses =
            json!({"responses": [{"text": "leak", "expect_prompt": ["AUTHORIZATION"]}]});
        write_json(root, "work_orders/fixtures.json", &responses);
        let out: Out = pactum_in(root)
            .args(["run", &wo.display().to_string(), "--json"])
            .output()
            .unwrap()
            .into();
        let doc = single_result(serde_json::from_str(&out.stdout).unwrap());
        assert_eq!(doc["code"], "path_escape", "{rel}: {doc:#}");
        assert!(
            !out.stdout.contains("AUTHORIZATION") && !out.stdout.contains("1234567890"),
            "{out}"
        );
        let out = pactum(root, &["validate", "--json"]);
        assert!(out.stdout.contains("\"path_escape\""), "{rel}: {}", out.stdout);
        let out = pactum(root, &["render", "--work-order", &wo.display().to_string(), "--json"]);
        assert!(!out.stdout.contains("AUTHORIZATION"), "{rel}: {out}");
    }
}

#[test]
fn a_context_budget_cuts_files_first_and_warns() {
    let dir = project_with(
        json!({"file_refs": ["docs/big.md"], "framework_refs": ["FMWK-TONE"]}),
        "{{ assembled_context.files['docs/big.md'] }}",
    );
    let root = dir.path();
    write(root, "docs/big.md", &"long text ".repeat(2000));
    let wo = work_order(root, "budget", json!({"constraints": {"context_budget": 100}}));
    let (out, status) = run(root, &wo, 1);
    assert_eq!(status, 0, "{out:#}");
    let warning = &out["warnings"][0];
    assert_eq!(warning["code"], "context_truncated", "{out:#}");
    assert!(
        warning["message"].as_str().unwrap().contains("files[docs/big.md] cut from 20000"),
        "{warning}"
    );
    let record = &exchange_records(root)[0];
    assert_eq!(record["warnings"][0]["code"], "context_truncated", "the ledger records the cut");
}

#[test]
fn render_work_order_refuses_kernel_work_orders_and_bad_arguments() {
    let dir = project(full());
    let root = dir.path();
    let wo = write_json(
        root,
        "work_orders/k.json",
        &json!({"work_order_id": "WO-K", "kind": "kernel", "request": "sum"}),
    );
    let out = pactum(root, &["render", "--work-order", wo.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("renders exchange work orders"), "{}", out.stderr);
    let out = pactum(root, &["render", "PRC-CTX-001", "--work-order", wo.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:?}");
    let out = pactum(root, &["render"]);
    assert_eq!(out.code, 2, "{out:?}");
}

#[test]
fn ledger_query_reads_newest_first_and_failures_before_resolution_are_recorded() {
    let dir = project(full());
    let root = dir.path();
    for (name, session) in [("q-1", "s-1"), ("q-2", "s-2"), ("q-3", "s-1")] {
        let wo = work_order(root, name, json!({"session_id": session}));
        assert_eq!(run(root, &wo, 1).1, 0);
    }
    // An unknown contract fails before resolution: no exchange, but a record.
    let wo = work_order(root, "unknown", json!({"contract": "PRC-NOPE-001"}));
    let (out, status) = run(root, &wo, 1);
    assert_eq!((status, out["code"].as_str()), (1, Some("contract_not_found")), "{out:#}");
    // So does a work order that does not load.
    let bad = write(root, "work_orders/bad.json", "{\"work_order_id\": ");
    assert_eq!(run(root, &bad, 1).1, 1);

    let query = |args: &[&str]| -> Vec<Value> {
        let mut all = vec!["ledger", "query", "--json"];
        all.extend_from_slice(args);
        let out = pactum(root, &all);
        assert_eq!(out.code, 0, "{out:?}");
        let doc: Value = serde_json::from_str(&out.stdout).unwrap();
        doc["records"].as_array().unwrap().clone()
    };
    let ids = |records: &[Value]| -> Vec<Value> {
        records.iter().map(|r| r["work_order_id"].clone()).collect()
    };
    let newest = query(&["--limit", "2"]);
    assert_eq!(ids(&newest), [Value::Null, json!("WO-UNKNOWN")], "newest first");
    assert_eq!(newest[0]["event"], "work_order_failed");
    assert_eq!(newest[0]["code"], "work_order_invalid");
    assert_eq!(newest[1]["code"], "contract_not_found");
    assert_eq!(newest[1]["session_id"], "s-1");
    let session = query(&["--event", "exchange", "--session", "s-1"]);
    assert_eq!(ids(&session), [json!("WO-Q-3"), json!("WO-Q-1")]);
    assert_eq!(query(&["--event", "work_order_failed"]).len(), 2);
    // Three runs of three records, the unknown contract's start and end, the bad file's one.
    assert_eq!(query(&["--since", "1h"]).len(), 12);
    assert_eq!(query(&["--event", "work_order_started"]).len(), 4);
    assert_eq!(query(&["--event", "work_order_completed", "--session", "s-2"]).len(), 1);
    // The text form: one line per record.
    let out = pactum(root, &["ledger", "query", "--event", "exchange", "--limit", "1"]);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("#8 exchange WO-Q-3 PRC-CTX-001@1.0.0 ok session=s-1"),
        "{}",
        out.stdout
    );
    let out = pactum(root, &["ledger", "query", "--since", "yesterday"]);
    assert_eq!(out.code, 2, "{out:?}");
    // A ledger with a broken line is named by its line, from the end or not.
    let ledger = root.join(".pactum/ledger.jsonl");
    let mut lines: Vec<String> =
        fs::read_to_string(&ledger).unwrap().lines().map(str::to_string).collect();
    lines[1] = "{not a record".into();
    fs::write(&ledger, lines.join("\n") + "\n").unwrap();
    let out = pactum(root, &["ledger", "query", "--event", "work_order_started"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("ledger_corrupt") && out.stderr.contains("ledger.jsonl:2:"),
        "{}",
        out.stderr
    );
    assert_eq!(query(&["--limit", "3"]).len(), 3, "a query that stops before the line succeeds");
}

#[test]
fn the_shipped_refund_demo_assembles_its_context_offline() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::copy_shipped(root);
    for sub in ["frameworks", "fixtures", "work_orders"] {
        common::copy_tree(&common::repo().join(sub), &root.join(sub));
    }
    fs::create_dir_all(root.join("docs")).unwrap();
    fs::copy(common::repo().join("docs/refund-policy.md"), root.join("docs/refund-policy.md"))
        .unwrap();
    let wo = "work_orders/WO-DEMO-REFUND-001.json";
    let out = pactum(root, &["render", "--work-order", wo, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let ctx = &doc["assembled_context"];
    assert!(ctx["files"]["docs/refund-policy.md"].as_str().unwrap().contains("within 30 days"));
    assert!(
        ctx["frameworks"]["FMWK-SUPPORT-TONE"]
            .as_str()
            .unwrap()
            .contains("decision in the first sentence")
    );
    assert_eq!(ctx["ledger"]["exchange"], json!([]), "a new session has no history");
    // The run answers offline (its scripted reply needs the assembled policy in the prompt),
    // and the second run of the session sees the first in its history.
    for _ in 0..2 {
        let out = pactum_in(root).args(["run", wo, "--json"]).output().unwrap();
        let result = single_result(serde_json::from_slice(&out.stdout).unwrap());
        assert_eq!(result["output"]["decision"], "approve", "{result:#}");
    }
    let out = pactum(root, &["render", "--work-order", wo, "--json"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["assembled_context"]["ledger"]["exchange"].as_array().unwrap().len(), 2);
    let out = pactum(root, &["validate"]);
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn a_malformed_recency_is_refused_at_its_pointer() {
    let dir = project(full());
    let root = dir.path();
    let path = root.join("contracts/ctx/1.0.0.json");
    let mut c: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    c["required_context"]["ledger_queries"][0]["recency"] = json!("1w");
    fs::write(&path, serde_json::to_string_pretty(&c).unwrap()).unwrap();
    let out = pactum(root, &["validate", "contracts/ctx/1.0.0.json", "--json"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let d = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "contract_schema_invalid")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(d["pointer"], "/required_context/ledger_queries/0/recency", "{d:#}");
    assert_eq!(out.code, 1);
}

#[test]
fn session_history_shows_later_prompts_the_validated_output_not_the_raw_reply() {
    let dir = project(full());
    let root = dir.path();
    // An exchange of a JSON contract in the session, answered with prose around a fence.
    register(
        root,
        "prompt_packs/label/1.0.0.json",
        &json!({
        "prompt_pack_id": "PRM-LABEL-001", "version": "1.0.0", "template": "Label: {{ question }}"}),
    );
    register(
        root,
        "contracts/label/1.0.0.json",
        &json!({
        "contract_id": "PRC-LABEL-001", "version": "1.0.0", "prompt_pack_id": "PRM-LABEL-001",
        "boundary": {"max_tokens": 64, "temperature": 0},
        "input_schema": {"type": "object", "required": ["question"], "properties": {"question": {"type": "string"}}},
        "output_schema": {"type": "object", "required": ["label"], "properties": {"label": {"type": "string"}}}}),
    );
    write_json(
        root,
        "work_orders/fixtures.json",
        &json!({"responses": [
        {"text": "Sure! Here it is:\n```json\n{\"label\": \"refund\"}\n```\nAnything else?"}]}),
    );
    let wo = work_order(root, "label", json!({"contract": "PRC-LABEL-001"}));
    let out = pactum_in(root).arg("run").arg(&wo).arg("--json").output().unwrap();
    let doc = single_result(serde_json::from_slice(&out.stdout).unwrap());
    assert_eq!(doc["ok"], true, "{doc:#}");
    // The next prompt of the session sees `{"label": "refund"}`, no fence, no prose.
    let next = work_order(root, "ask", json!({}));
    let out = pactum(root, &["render", "--work-order", next.to_str().unwrap(), "--json"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let history = doc["assembled_context"]["ledger"]["exchange"].as_array().unwrap().clone();
    let last = history.last().unwrap();
    assert_eq!(last["work_order_id"], "WO-LABEL");
    assert_eq!(last["output"], json!({"label": "refund"}), "{history:#?}");
    // The ledger keeps the reply as it came, beside the output.
    let records = exchange_records(root);
    assert!(records[0]["raw_response"].as_str().unwrap().contains("```json"));
    assert_eq!(records[0]["output"], json!({"label": "refund"}));
}
