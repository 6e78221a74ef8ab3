//! Section trees and progressive disclosure through the binary (SPEC §14, §15): `render`
//! with the tools offered and `--open KEY`, `new contract --tree`, and the disclosure loop
//! of the shipped example `WO-DEMO-RUNBOOK-001` on scripted fixtures, with its ledger.

use crate::common;

use std::path::Path;

use serde_json::{Value, json};

/// A copy of the shipped tree with its work orders and fixtures.
fn shipped() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_shipped(dir.path());
    common::copy_tree(&common::repo().join("work_orders"), &dir.path().join("work_orders"));
    common::copy_tree(&common::repo().join("fixtures"), &dir.path().join("fixtures"));
    dir
}

fn output(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn render_json(dir: &Path, extra: &[&str]) -> Value {
    std::fs::write(
        dir.join("input.json"),
        r#"{"question": "What does E204 mean?", "severity": "sev1"}"#,
    )
    .unwrap();
    let mut cmd = common::pactum_in(dir);
    cmd.args(["render", "PRC-RUNBOOK-001", "--input", "input.json", "--json"]).args(extra);
    let (status, stdout, stderr) = output(&mut cmd);
    assert_eq!(status, 0, "{stdout}{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

fn tool_names(doc: &Value) -> Vec<&str> {
    doc["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[test]
fn render_shows_summaries_and_the_tools_offered() {
    let dir = shipped();
    let doc = render_json(dir.path(), &[]);
    assert_eq!(tool_names(&doc), ["read_file", "open_sections"], "{doc:#}");
    let schema = &doc["tools"][1]["input_schema"];
    assert_eq!(schema["required"], json!(["section_keys", "reason"]), "{doc:#}");
    let user = doc["messages"][1]["content"].as_str().unwrap();
    // The enabled condition holds for sev1: the paging section is numbered 2.
    assert!(user.contains("## 2. Paging\n"), "{user}");
    assert!(user.contains("## 3. Runbook\nThe orders service runbook"), "{user}");
    assert!(
        user.contains(
            "[This section is summarized. Full content is available at `/context/runbook.md`.]"
        ),
        "{user}"
    );
    assert!(
        user.contains("call `open_sections` with key \"capacity\""),
        "the capacity section brings a tool, so it is opened, not read: {user}"
    );
    assert!(!user.contains("ordersctl"), "summarized content stays out: {user}");

    // Opening a child opens its parent; the capacity tool is offered once it is open.
    let doc = render_json(dir.path(), &["--open", "runbook.errors", "--open", "capacity"]);
    assert_eq!(tool_names(&doc), ["calculator"], "{doc:#}");
    let user = doc["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("### 3.2. Error codes\n- E101"), "{user}");
    assert!(user.contains("## 4. Capacity\nEach worker handles 120"), "{user}");

    // The text form lists the tools after the messages.
    let (status, stdout, _) = output(common::pactum_in(dir.path()).args([
        "render",
        "PRC-RUNBOOK-001",
        "--input",
        "input.json",
    ]));
    assert_eq!(status, 0);
    insta::assert_snapshot!("runbook_render_text", stdout);
}

#[test]
fn new_contract_tree_scaffolds_a_valid_tree_pack() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (status, stdout, stderr) =
        output(common::pactum_in(root).args(["new", "contract", "PRC-NOTES-001", "--tree"]));
    assert_eq!(status, 0, "{stdout}{stderr}");
    let pack: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("prompt_packs/notes/1.0.0.json")).unwrap(),
    )
    .unwrap();
    let keys: Vec<&str> =
        pack["sections"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["role", "output_format", "task", "reference"]);
    assert_eq!(pack["sections"][3]["visibility"], "summary");
    let (status, stdout, stderr) = output(common::pactum_in(root).arg("validate"));
    assert_eq!(status, 0, "{stdout}{stderr}");
    std::fs::write(root.join("input.json"), r#"{"input": "x"}"#).unwrap();
    let (status, stdout, stderr) = output(common::pactum_in(root).args([
        "render",
        "PRC-NOTES-001",
        "--input",
        "input.json",
        "--allow-draft",
    ]));
    assert_eq!(status, 0, "{stdout}{stderr}");
    assert!(stdout.contains("## 2. Reference\n"), "{stdout}");
    assert!(stdout.contains("--- tools offered ---\nread_file: "), "{stdout}");
}

/// The exchange records of the one run in `dir/ledger.jsonl`, after checking the chain and
/// that the run's start and end records bracket them.
fn ledger(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("ledger.jsonl")).unwrap();
    assert_eq!(
        common::check_ledger_chain_independently(&dir.join("ledger.jsonl")),
        text.lines().count()
    );
    let all: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(all.first().map(|r| &r["event"]), Some(&json!("work_order_started")));
    let end = all.last().map(|r| r["event"].as_str().unwrap());
    assert!(matches!(end, Some("work_order_completed" | "work_order_failed")), "{all:#?}");
    all.into_iter().filter(|r| r["kind"] == "exchange").collect()
}

#[test]
fn the_runbook_demo_reads_opens_calls_a_tool_and_answers() {
    let dir = shipped();
    let (status, stdout, stderr) = output(common::pactum_in(dir.path()).args([
        "run",
        "work_orders/WO-DEMO-RUNBOOK-001.json",
        "--json",
        "--ledger",
        "ledger.jsonl",
    ]));
    assert_eq!(status, 0, "{stdout}{stderr}");
    let result = common::single_result(serde_json::from_str(&stdout).unwrap());
    assert_eq!(result["ok"], true, "{result:#}");
    assert!(result["output"]["answer"].as_str().unwrap().contains("6 workers"), "{result:#}");
    let records = ledger(dir.path());
    let verdicts: Vec<&str> = records.iter().map(|r| r["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["tool_calls", "tool_calls", "tool_calls", "ok"]);
    let calls: Vec<&Value> =
        records.iter().filter_map(|r| r["disclosures"].as_array()).flatten().collect();
    assert_eq!(calls[0]["tool"], "read_file");
    assert_eq!(calls[0]["opened"], json!(["/context/runbook.md"]));
    assert!(
        calls[0]["result"].as_str().unwrap().contains("## 2. Error codes\n- E101"),
        "{calls:#?}"
    );
    // The file the model read is on disk under the exchange's context folder, as read.
    let on_disk = dir
        .path()
        .join("work_orders/out/WO-DEMO-RUNBOOK-001/PRC-RUNBOOK-001@1.0.0/context/runbook.md");
    let on_disk = std::fs::read_to_string(&on_disk).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(calls[0]["result"].as_str().unwrap(), on_disk);
    assert_eq!(calls[1]["tool"], "open_sections");
    assert_eq!(calls[1]["opened"], json!(["capacity"]));
    assert!(calls[1]["reason"].as_str().unwrap().contains("per-worker throughput"));
    assert_eq!(calls[2]["tool"], "calculator");
    assert_eq!(calls[2]["result"], r#"{"result":5.208333333333333}"#);
    // Each call re-rendered: the prompt after opening `capacity` differs from the first.
    assert_ne!(records[0]["prompt_hash"], records[2]["prompt_hash"]);
    assert!(calls.iter().all(|c| c["is_error"] == false), "{calls:#?}");
    for r in &records {
        let findings = pactum::schema::check_ledger_entry(r);
        assert!(findings.is_empty(), "a record breaks ledger_entry.schema.json: {findings:?}");
    }
    let mut broken = records[0].clone();
    broken["disclosures"] = json!([{"tool": "read_file"}]);
    assert!(!pactum::schema::check_ledger_entry(&broken).is_empty(), "the schema checks calls");
}

/// A project copy whose runbook work order is answered by `responses`.
fn run_with(responses: Value, max: u32) -> (Value, Vec<Value>) {
    run_constrained(responses, json!({"max_disclosures": max}))
}

/// The same with the work order's `constraints` set to `constraints`.
fn run_constrained(responses: Value, constraints: Value) -> (Value, Vec<Value>) {
    let dir = shipped();
    std::fs::write(
        dir.path().join("fixtures/demo_runbook.json"),
        serde_json::to_string(&json!({ "responses": responses })).unwrap(),
    )
    .unwrap();
    let wo_path = dir.path().join("work_orders/WO-DEMO-RUNBOOK-001.json");
    let mut wo: Value = serde_json::from_str(&std::fs::read_to_string(&wo_path).unwrap()).unwrap();
    for (name, value) in constraints.as_object().unwrap() {
        wo["constraints"][name] = value.clone();
    }
    std::fs::write(&wo_path, serde_json::to_string(&wo).unwrap()).unwrap();
    let (_, stdout, stderr) = output(common::pactum_in(dir.path()).args([
        "run",
        "work_orders/WO-DEMO-RUNBOOK-001.json",
        "--json",
        "--ledger",
        "ledger.jsonl",
    ]));
    let doc: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    (common::single_result(doc), ledger(dir.path()))
}

#[test]
fn unknown_keys_and_paths_are_tool_errors_the_model_sees() {
    let answer = r#"{"answer": "Check the stock service.", "sources": []}"#;
    let (result, records) = run_with(
        json!([
            {"tool_calls": [
                {"name": "open_sections", "arguments": {"section_keys": ["nope"], "reason": "guess"}},
                {"name": "read_file", "arguments": {"path": "/etc/passwd"}},
                {"name": "read_file", "arguments": {"path": "/context/../registry.json"}},
                {"name": "calculator", "arguments": {"expression": "1 + 1"}}
            ]},
            {"text": answer}
        ]),
        4,
    );
    assert_eq!(result["ok"], true, "the exchange went on: {result:#}");
    let calls = records[0]["disclosures"].as_array().unwrap();
    assert!(calls.iter().all(|c| c["is_error"] == true), "{calls:#?}");
    assert!(calls[0]["result"].as_str().unwrap().contains("no section has the key \"nope\""));
    assert!(calls[1]["result"].as_str().unwrap().contains("only the context files"));
    assert!(calls[2]["result"].as_str().unwrap().contains("/context/runbook.md"));
    assert!(
        calls[3]["result"].as_str().unwrap().contains("not offered"),
        "a section tool is offered only once its section is open: {calls:#?}"
    );
}

#[test]
fn a_model_that_keeps_asking_stops_at_max_disclosures() {
    let read = json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "/context/runbook.md"}}]});
    let (result, records) = run_with(json!([read, read, read, read]), 2);
    assert_eq!(result["ok"], false, "{result:#}");
    assert_eq!(result["errors"][0]["code"], "disclosure_limit_exceeded", "{result:#}");
    let verdicts: Vec<&str> = records.iter().map(|r| r["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["tool_calls", "tool_calls", "disclosure_limit_exceeded"]);
    // The call that was refused is in the record that ended the exchange (issue 22).
    let refused = records[2]["disclosures"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{:#}", records[2]);
    assert_eq!(refused[0]["tool"], "read_file");
    assert_eq!(refused[0]["refused"], "disclosure_limit_exceeded");
    assert_eq!(refused[0]["is_error"], true);
    assert!(refused[0]["result"].as_str().unwrap().contains("not run"));
    // A limit of zero: the first call already ends the exchange, and is recorded.
    let (result, records) = run_with(json!([read]), 0);
    assert_eq!(result["errors"][0]["code"], "disclosure_limit_exceeded", "{result:#}");
    assert_eq!(records[0]["disclosures"][0]["refused"], "disclosure_limit_exceeded");
    // One reply with more calls than remain: the first are answered, the rest refused, and
    // every one of them is in the exchange's record.
    let three = json!({"tool_calls": [
        {"name": "read_file", "arguments": {"path": "/context/runbook.md"}},
        {"name": "open_sections", "arguments": {"section_keys": ["capacity"], "reason": "r"}},
        {"name": "read_file", "arguments": {"path": "/context/runbook.md"}}
    ]});
    let (result, records) = run_with(json!([three]), 2);
    assert_eq!(result["errors"][0]["code"], "disclosure_limit_exceeded", "{result:#}");
    assert_eq!(records.len(), 1, "{records:#?}");
    let calls = records[0]["disclosures"].as_array().unwrap();
    let refused: Vec<&Value> = calls.iter().map(|c| &c["refused"]).collect();
    assert_eq!(refused, [&Value::Null, &Value::Null, &json!("disclosure_limit_exceeded")]);
    assert_eq!(calls[1]["opened"], json!(["capacity"]), "{calls:#?}");
    for r in &records {
        let findings = pactum::schema::check_ledger_entry(r);
        assert!(findings.is_empty(), "{findings:?}");
    }
}

#[test]
fn calls_of_a_sections_own_tools_count_against_max_disclosures() {
    let open = json!({"tool_calls": [
        {"name": "open_sections", "arguments": {"section_keys": ["capacity"], "reason": "r"}}
    ]});
    let calc = |e: &str| json!({"name": "calculator", "arguments": {"expression": e}});
    let two = json!({"tool_calls": [calc("500 / 96"), calc("500 / 80")]});
    let answer = json!({"text": ANSWER});
    // Three calls, two allowed: the second calculator call is refused, not run.
    let (result, records) = run_with(json!([open, two, answer]), 2);
    assert_eq!(result["errors"][0]["code"], "disclosure_limit_exceeded", "{result:#}");
    let calls = records[1]["disclosures"].as_array().unwrap();
    let tools: Vec<(&str, &Value)> =
        calls.iter().map(|c| (c["tool"].as_str().unwrap(), &c["refused"])).collect();
    assert_eq!(
        tools,
        [("calculator", &Value::Null), ("calculator", &json!("disclosure_limit_exceeded"))],
        "{calls:#?}"
    );
    assert_eq!(calls[0]["result"], r#"{"result":5.208333333333333}"#);
    // Three allowed: every call runs and the model answers.
    let (result, _) = run_with(json!([open, two, answer]), 3);
    assert_eq!(result["ok"], true, "{result:#}");
}

#[test]
fn the_token_budget_is_checked_again_before_each_tool_round() {
    let read = json!({"tool_calls": [
        {"name": "read_file", "arguments": {"path": "/context/runbook.md"}}
    ]});
    let answer = json!({"text": ANSWER});
    let usage = |result: &Value| {
        let u = &result["usage"];
        (u["prompt_tokens"].as_u64().unwrap(), u["completion_tokens"].as_u64().unwrap())
    };
    // What each round costs, measured with no budget.
    let (one, _) = run_constrained(json!([answer]), json!({}));
    let (p0, c_answer) = usage(&one);
    let (two, _) = run_constrained(json!([read, answer]), json!({}));
    assert_eq!(two["ok"], true, "{two:#}");
    let (prompts, completions) = usage(&two);
    let (p1, c_read) = (prompts - p0, completions - c_answer);
    // Enough for the first round and its reply, not for the second round's prompt (which
    // carries the file just read) plus the reply it may get.
    let max_tokens = 400;
    let budget = p0 + c_read + max_tokens + p1 / 2;
    let (result, records) = run_constrained(json!([read, answer]), json!({"token_budget": budget}));
    assert_eq!(result["errors"][0]["code"], "budget_exceeded", "{result:#}");
    let verdicts: Vec<&str> = records.iter().map(|r| r["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["tool_calls", "budget_exceeded"], "the second round never ran");
    assert_eq!(usage(&result), (p0, c_read), "{result:#}");
    // With the second round's cost in the budget, the same exchange completes.
    let budget = p0 + c_read + 2 * (p1 + max_tokens);
    let (result, _) = run_constrained(json!([read, answer]), json!({"token_budget": budget}));
    assert_eq!(result["ok"], true, "{result:#}");
}

/// The prompt of a tool round carries the results of the calls before it: the check before
/// the round counts them, not only the rendered messages (which reading a file leaves as they
/// were). Usage is scripted, so the arithmetic is exact.
#[test]
fn the_check_before_a_tool_round_counts_the_tool_results_it_carries() {
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 10});
    let read = json!({"tool_calls": [
        {"name": "read_file", "arguments": {"path": "/context/runbook.md"}}
    ], "usage": usage});
    let answer = json!({"text": ANSWER, "usage": usage});
    // The rendered prompt's estimate (no usage scripted: pactum estimates it) and the file's.
    let (one, _) = run_constrained(json!([{"text": ANSWER}]), json!({}));
    let prompt = one["usage"]["prompt_tokens"].as_u64().unwrap();
    let (two, records) = run_constrained(json!([read, answer]), json!({}));
    assert_eq!(two["ok"], true, "{two:#}");
    let content = records[0]["disclosures"][0]["result"].as_str().unwrap();
    let file = (content.len() as u64).div_ceil(4);
    assert!(content.contains("## 2. Error codes"), "the runbook was read: {content}");
    let max_tokens = 400;
    // After the first round (20 tokens): room for the prompt, the reply and half the file.
    let budget = 20 + prompt + max_tokens + file / 2;
    let (result, records) = run_constrained(json!([read, answer]), json!({"token_budget": budget}));
    assert_eq!(result["errors"][0]["code"], "budget_exceeded", "{result:#}");
    let verdicts: Vec<&str> = records.iter().map(|r| r["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["tool_calls", "budget_exceeded"], "the second round never ran");
    // Room for the whole file too: the round runs and the model answers.
    let budget = 20 + prompt + max_tokens + 2 * file;
    let (result, _) = run_constrained(json!([read, answer]), json!({"token_budget": budget}));
    assert_eq!(result["ok"], true, "{result:#}");
}

#[test]
fn a_reply_without_usage_is_charged_for_the_tool_results_its_request_carried() {
    // No usage scripted: pactum estimates both calls, and the second carries the file.
    let read = json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "/context/runbook.md"}}]});
    let (one, _) = run_constrained(json!([{"text": ANSWER}]), json!({}));
    let alone = one["usage"]["prompt_tokens"].as_u64().unwrap();
    let (two, records) = run_constrained(json!([read, {"text": ANSWER}]), json!({}));
    assert_eq!(two["ok"], true, "{two:#}");
    let content = records[0]["disclosures"][0]["result"].as_str().unwrap();
    let file = (content.len() as u64).div_ceil(4);
    assert!(file > 100, "a file big enough to tell: {file}");
    let charged = two["usage"]["prompt_tokens"].as_u64().unwrap();
    // Two calls of the same prompt, the second with the file: at least the file more than
    // twice the prompt alone.
    assert!(charged >= 2 * alone + file, "charged {charged}, prompt {alone}, file {file}: {two:#}");
}

// --- Native tool calls over HTTP, against a mock server on 127.0.0.1 ----------------------

use crate::mock_http;

use mock_http::{MockReply, MockServer};

pub(crate) const ANSWER: &str =
    r#"{"answer": "Run 6 workers.", "sources": ["/context/runbook.md", "capacity"]}"#;

/// `run WO-DEMO-RUNBOOK-001 --provider NAME` with `env`; the result and the ledger.
fn run_http(provider: &str, env: &[(&str, String)]) -> (Value, Vec<Value>) {
    let dir = shipped();
    let mut cmd = common::pactum_in(dir.path());
    cmd.args([
        "run",
        "work_orders/WO-DEMO-RUNBOOK-001.json",
        "--json",
        "--ledger",
        "ledger.jsonl",
        "--provider",
        provider,
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (_, stdout, stderr) = output(&mut cmd);
    let doc: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    (common::single_result(doc), ledger(dir.path()))
}

pub(crate) fn openai_reply(message: Value, finish: &str) -> MockReply {
    MockReply::json(
        200,
        &json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-mock-1",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 5}}),
    )
}

pub(crate) fn openai_call(id: &str, name: &str, arguments: Value) -> MockReply {
    openai_reply(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function",
             "function": {"name": name, "arguments": arguments.to_string()}}]}),
        "tool_calls",
    )
}

fn names_openai(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap()).collect())
        .unwrap_or_default()
}

#[test]
fn openai_carries_tools_tool_calls_and_tool_messages() {
    let server = MockServer::start(vec![
        openai_call("call_read", "read_file", json!({"path": "/context/runbook.md"})),
        openai_call(
            "call_open",
            "open_sections",
            json!({"section_keys": ["capacity"], "reason": "throughput"}),
        ),
        openai_call("call_calc", "calculator", json!({"expression": "500 / 96"})),
        openai_reply(json!({"role": "assistant", "content": ANSWER}), "stop"),
    ]);
    let env = [
        ("OPENAI_BASE_URL", server.url()),
        ("OPENAI_API_KEY", "sk-test".to_string()),
        ("PACTUM_MODEL", "gpt-mock-1".to_string()),
    ];
    let (result, records) = run_http("openai", &env);
    assert_eq!(result["ok"], true, "{result:#}");
    assert_eq!(result["output"]["answer"], "Run 6 workers.");
    assert_eq!(result["usage"]["prompt_tokens"], 200, "every round is charged: {result:#}");
    let bodies: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(bodies.len(), 4);

    // The first request offers the disclosure tools as functions, with their schemas.
    assert_eq!(names_openai(&bodies[0]), ["read_file", "open_sections"]);
    let tool = &bodies[0]["tools"][1];
    assert_eq!(tool["type"], "function");
    assert_eq!(tool["function"]["parameters"]["required"], json!(["section_keys", "reason"]));
    assert_eq!(bodies[0]["messages"].as_array().unwrap().len(), 2);

    // The second carries the call and its result: an assistant message with `tool_calls`,
    // then a `tool` message answering it by `tool_call_id`.
    let messages = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["content"], Value::Null);
    let call = &messages[2]["tool_calls"][0];
    assert_eq!(call["id"], "call_read");
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "read_file");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"path": "/context/runbook.md"}), "arguments are a JSON string");
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_read");
    assert!(messages[3]["content"].as_str().unwrap().contains("## 1. Restart"), "{messages:#?}");

    // After `open_sections`, the prompt is rendered again with capacity in full, and its
    // calculator is offered.
    let user = bodies[2]["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("## 3. Capacity\nEach worker handles 120"), "{user}");
    assert_eq!(names_openai(&bodies[2]), ["read_file", "calculator"]);
    let last = bodies[3]["messages"].as_array().unwrap();
    assert_eq!(last.len(), 2 + 3 * 2, "three rounds of call and result: {last:#?}");
    assert_eq!(last[7]["tool_call_id"], "call_calc");
    assert!(last[7]["content"].as_str().unwrap().contains("5.208"), "{last:#?}");

    let verdicts: Vec<&str> = records.iter().map(|r| r["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["tool_calls", "tool_calls", "tool_calls", "ok"]);
    assert_eq!(records[1]["disclosures"][0]["opened"], json!(["capacity"]));
    assert_eq!(records[1]["disclosures"][0]["reason"], "throughput");
}

fn anthropic_reply(content: Value, stop: &str) -> MockReply {
    MockReply::json(
        200,
        &json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-mock",
                "content": content, "stop_reason": stop,
                "usage": {"input_tokens": 40, "output_tokens": 4}}),
    )
}

#[test]
fn anthropic_carries_tools_tool_use_and_tool_result_blocks() {
    let server = MockServer::start(vec![
        anthropic_reply(
            json!([{"type": "text", "text": "Let me check the runbook."},
                   {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                    "input": {"path": "/context/nowhere.md"}}]),
            "tool_use",
        ),
        anthropic_reply(json!([{"type": "text", "text": ANSWER}]), "end_turn"),
    ]);
    let env = [
        ("ANTHROPIC_BASE_URL", server.url()),
        ("ANTHROPIC_API_KEY", "sk-ant-test".to_string()),
        ("PACTUM_MODEL", "claude-mock".to_string()),
    ];
    let (result, records) = run_http("anthropic", &env);
    assert_eq!(result["ok"], true, "{result:#}");
    let bodies: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(bodies.len(), 2);
    let tools = bodies[0]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["read_file", "open_sections"]);
    assert_eq!(tools[0]["input_schema"]["required"], json!(["path"]));
    assert!(bodies[0].get("tool_choice").is_none(), "the model may answer without tools");
    assert!(bodies[0]["system"].as_str().unwrap().contains("on-call assistant"));

    let messages = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["content"],
        json!([{"type": "text", "text": "Let me check the runbook."},
               {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                "input": {"path": "/context/nowhere.md"}}])
    );
    assert_eq!(messages[2]["role"], "user");
    let block = &messages[2]["content"][0];
    assert_eq!(block["type"], "tool_result");
    assert_eq!(block["tool_use_id"], "toolu_1");
    assert_eq!(block["is_error"], true, "a path outside the context files: {block:#}");
    assert!(block["content"].as_str().unwrap().contains("/context/runbook.md"), "{block:#}");
    assert_eq!(records[0]["verdict"], "tool_calls");
    assert_eq!(records[0]["disclosures"][0]["is_error"], true);
}

#[test]
fn replay_records_tool_calls_and_plays_the_loop_offline() {
    let dir = shipped();
    std::fs::write(
        dir.path().join("pactum.toml"),
        "[providers.rec]\nkind = \"replay\"\ncassette = \"cassette.json\"\nmode = \"record\"\nrecord_with = \"openai\"\n\n[providers.play]\nkind = \"replay\"\ncassette = \"cassette.json\"\n",
    )
    .unwrap();
    let server = MockServer::start(vec![
        openai_call("call_read", "read_file", json!({"path": "/context/runbook.md"})),
        openai_call("call_again", "read_file", json!({"path": "/context/runbook.md"})),
        openai_reply(json!({"role": "assistant", "content": ANSWER}), "stop"),
    ]);
    let run = |provider: &str, env: &[(&str, String)]| {
        let mut cmd = common::pactum_in(dir.path());
        cmd.args(["run", "work_orders/WO-DEMO-RUNBOOK-001.json", "--json", "--provider", provider]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let (_, stdout, stderr) = output(&mut cmd);
        let doc: Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
        common::single_result(doc)
    };
    let env = [
        ("OPENAI_BASE_URL", server.url()),
        ("OPENAI_API_KEY", "sk-test".to_string()),
        ("PACTUM_MODEL", "gpt-mock-1".to_string()),
    ];
    let recorded = run("rec", &env);
    assert_eq!(recorded["ok"], true, "{recorded:#}");
    let cassette: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("cassette.json")).unwrap())
            .unwrap();
    let entries = cassette["entries"].as_array().unwrap();
    // The same messages twice (a file read does not change the prompt): the rounds of tool
    // use tell the recordings apart.
    assert_eq!(entries.len(), 3, "{cassette:#}");
    let with_calls = entries.iter().filter(|e| e["tool_calls"][0]["name"] == "read_file").count();
    assert_eq!(with_calls, 2, "{cassette:#}");
    drop(server);

    let played = run("play", &[("PACTUM_MODEL", "gpt-mock-1".to_string())]);
    assert_eq!(played["ok"], true, "{played:#}");
    assert_eq!(played["output"], recorded["output"]);
}
