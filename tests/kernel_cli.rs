//! The kernel as the CLI shows it (SPEC §3.4, §8.6, §9, §12): the cycle log (fields, schema,
//! `--log FILE`, `ledger verify`), how `pactum run` prints a final answer for people and
//! with `--json`, and what a work order's `contracts` pins and `tools` allow-list do.

use crate::kernel_harness as harness;
use crate::mock_http;

use harness::{
    DEFAULT_TTL, Project, chat_completion, check_run, pairs, schema, schema_errors, statuses, step,
};
use mock_http::{MockReply, MockServer};
use serde_json::{Value, json};

/// The fields SPEC §8.6 asks of every cycle record.
const CYCLE_FIELDS: [&str; 13] = [
    "step_number",
    "plan_state",
    "llm_output",
    "supervisor_actions",
    "tool_calls",
    "ttl_remaining",
    "errors",
    "timestamp",
    "contract_id",
    "version",
    "sha256",
    "usage",
    "latency_ms",
];

fn assert_cycle_fields(record: &Value) {
    for field in CYCLE_FIELDS {
        assert!(record.get(field).is_some(), "cycle record without `{field}`: {record:#}");
    }
    let errors = schema_errors(&schema("ledger_entry.schema.json"), record);
    assert!(errors.is_empty(), "{errors:?}\n{record:#}");
}

// --- cycle log ---------------------------------------------------------------------------

#[test]
fn every_cycle_record_has_the_cycle_log_fields_also_when_the_cycle_failed() {
    // A provider failure (no reply at all) and an output failure (a reply with no JSON).
    for scenario in ["provider_error", "repair_json_plan", "tool_failure"] {
        let p = Project::scenario(scenario);
        let run = p.run(&[]);
        check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");
        let ledger = p.ledger();
        let cycles = ledger.cycles();
        assert_eq!(
            cycles.len() as u64,
            run.cycles() + 1,
            "{scenario}: one record per cycle + Phase E"
        );
        for c in &cycles {
            assert_cycle_fields(c);
        }
        let numbers: Vec<u64> = cycles.iter().map(|c| c["step_number"].as_u64().unwrap()).collect();
        let expected: Vec<u64> = (1..=cycles.len() as u64).collect();
        assert_eq!(numbers, expected, "{scenario}");
        let failed: Vec<&&Value> =
            cycles.iter().filter(|c| !c["errors"].as_array().unwrap().is_empty()).collect();
        match scenario {
            "provider_error" => {
                assert_eq!(failed[0]["errors"][0]["code"], "provider_timeout");
                assert_eq!(failed[0]["usage"], Value::Null);
                assert_eq!(failed[0]["latency_ms"], 0);
            }
            "repair_json_plan" => {
                assert_eq!(failed[0]["role"], "plan");
                assert_eq!(failed[0]["errors"][0]["code"], "output_json_extraction_failed");
                assert!(failed[0]["llm_output"].as_str().unwrap().contains("oops"));
            }
            _ => {
                let calls = ledger.tool_calls();
                assert_eq!(calls[0]["error"]["code"], "tool_failed");
            }
        }
    }
}

#[test]
fn log_sends_cycle_records_to_their_own_file_and_both_files_verify() {
    let p = Project::scenario("thought_tool_thought");
    let run = p.run(&["--log", "cycles.jsonl"]);
    check_run(&p, &run, DEFAULT_TTL, "cycles.jsonl");

    assert_eq!(run.status(), "converged");
    let ledger = p.ledger();
    let log = p.records("cycles.jsonl");
    assert!(ledger.cycles().is_empty(), "no cycle record in the ledger");
    assert_eq!(ledger.exchanges().len(), 7);
    assert_eq!(log.exchanges().len(), 0, "no exchange record in the cycle log");
    assert_eq!(log.cycles().len(), 7);
    for c in log.cycles() {
        assert_cycle_fields(c);
    }
    assert_eq!(log.0[0]["seq"], 1, "the cycle log is its own chain");
    assert_eq!(log.tool_calls()[0]["output"], json!({"result": 15}));

    // An edited cycle record breaks the chain at its line.
    let text = std::fs::read_to_string(p.path("cycles.jsonl")).unwrap();
    let edited = text.replacen("\"ttl_remaining\":8", "\"ttl_remaining\":9", 1);
    assert_ne!(edited, text);
    p.write("cycles.jsonl", &edited);
    let mut cmd = p.pactum();
    cmd.args(["ledger", "verify", "cycles.jsonl"]);
    let out = p.exec(cmd);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("ledger_broken"), "{out}");
    assert!(out.stderr.contains("cycles.jsonl:2"), "names the edited line: {out}");
}

#[test]
fn concurrent_kernel_runs_share_one_ledger_and_keep_their_own_cycle_numbers() {
    let p = Project::scenario("thought_tool_thought");
    let from = harness::repo().join("tests/fixtures/kernel/tool_failure");
    std::fs::create_dir_all(p.path("b")).unwrap();
    for file in ["wo.json", "fixtures.json"] {
        std::fs::copy(from.join(file), p.path(&format!("b/{file}"))).unwrap();
    }
    let mut cmd = p.pactum();
    cmd.args(["run", "wo.json", "b/wo.json", "--jobs", "2", "--ledger", "ledger.jsonl", "--json"]);
    let out = p.exec(cmd);
    assert_eq!(out.code, 0, "{out}");
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["ok"], true);
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["status"] == "converged"), "{doc:#}");
    p.verify_ledger("ledger.jsonl");
    let ledger = p.ledger();
    for r in results {
        let id = &r["work_order_id"];
        let numbers: Vec<u64> = ledger
            .cycles()
            .iter()
            .filter(|c| &c["work_order_id"] == id)
            .map(|c| c["step_number"].as_u64().unwrap())
            .collect();
        let expected: Vec<u64> = (1..=r["cycles"].as_u64().unwrap() + 1).collect();
        assert_eq!(numbers, expected, "{id}");
    }
}

#[test]
fn cycle_records_of_calls_that_never_reached_the_model_are_numbered_and_schema_valid() {
    // Three ways a cycle fails before the provider is asked: the pinned contract rejects the
    // input, the budget cannot fit the call, the pinned version does not exist.
    // With the cycle records each leaves: the failed cycle and Phase E, after the task
    // profile's cycle when the plan's pin is the one that fails.
    let cases: [(&str, Value, usize); 3] = [
        ("contracts", json!({"task_profile": "PRC-CLASSIFY-001"}), 2),
        ("constraints", json!({"token_budget": 1}), 2),
        ("contracts", json!({"plan": "PRC-PLAN-001@=9.9.9"}), 3),
    ];
    for (field, value, records) in cases {
        let p = Project::scenario("thought_tool_thought");
        p.edit("wo.json", |wo| wo[field] = value.clone());
        let run = p.run(&[]);
        assert_ne!(run.status(), "converged", "{value}");
        let ledger = p.ledger();
        let numbers: Vec<u64> =
            ledger.cycles().iter().map(|c| c["step_number"].as_u64().unwrap()).collect();
        for c in ledger.cycles() {
            assert_cycle_fields(c);
        }
        assert_eq!(numbers.len(), records, "{value}: {numbers:?}");
        assert!(
            numbers.windows(2).all(|w| w[0] < w[1]),
            "{value}: one record per cycle, each with its own number: {numbers:?}"
        );
    }
}

#[test]
fn the_phase_e_cycle_record_carries_the_synthesis_usage() {
    let p = Project::scenario("thought_tool_thought");
    let usage = json!({"prompt_tokens": 520, "completion_tokens": 60});
    p.edit("fixtures.json", |f| {
        for r in f["responses"].as_array_mut().unwrap() {
            r["usage"] = json!({"prompt_tokens": 100, "completion_tokens": 10});
        }
        f["responses"][6]["usage"] = usage.clone();
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");
    let ledger = p.ledger();
    let synth = ledger.exchanges().into_iter().find(|x| x["role"] == "synthesis").unwrap();
    assert_eq!(synth["usage"], usage, "the exchange record has it");
    let phase_e = ledger.cycles().into_iter().last().unwrap();
    assert_eq!(phase_e["llm_output"], synth["raw_response"]);
    assert_eq!(phase_e["usage"], usage, "{phase_e:#}");
}

// --- display -----------------------------------------------------------------------------

#[test]
fn text_output_shows_the_answer_confidence_and_note() {
    let p = Project::scenario("thought_tool_thought");
    let out = p.run_text(&[]);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("WO-KERNEL-TTT (kernel) ok: converged via scripted"), "{out}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines.contains(&"Answer: The sum of 5 and 10 is 15."), "{out}");
    assert!(lines.contains(&"Confidence: 0.95"), "{out}");
    assert!(lines.contains(&"Note: Computed with the calculator."), "{out}");
    assert!(!out.stdout.contains("Time limit"), "{out}");
    assert!(!out.stdout.contains("Metadata:"), "empty metadata prints nothing: {out}");
    assert!(!out.stdout.contains("No final answer available"), "{out}");
    assert!(out.stderr.contains("offline"), "scripted runs say so: {out}");
    let answer_at = lines.iter().position(|l| l.starts_with("Answer:")).unwrap();
    let note_at = lines.iter().position(|l| l.starts_with("Note:")).unwrap();
    assert!(answer_at < note_at);
}

#[test]
fn text_output_warns_about_the_time_limit_and_summarizes_metadata() {
    let p = Project::scenario("long_plan");
    p.constrain("ttl", json!(2));
    let out = p.run_text(&[]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stdout.contains("failed: ttl_expired"), "{out}");
    assert!(out.stdout.contains("Answer: (5 + 10) * 2 = 30"), "{out}");
    assert!(out.stdout.contains("Confidence: 0.7"), "{out}");
    let warning =
        out.stdout.lines().find(|l| l.contains("Time limit reached")).unwrap_or_else(|| {
            panic!("no time-limit warning:\n{out}");
        });
    assert!(warning.contains("TTL"), "{warning}");
    let meta = out.stdout.lines().find(|l| l.starts_with("Metadata: ")).expect("a metadata line");
    assert!(meta.contains("degraded=true"), "{meta}");
    assert!(meta.contains("reason=incomplete_state"), "{meta}");
    assert!(meta.contains("missing_fields=["), "{meta}");
    assert!(meta.contains("plan_state=(2 fields)"), "objects are summarized: {meta}");
    assert!(out.stderr.contains("error[ttl_expired]"), "{out}");
}

#[test]
fn json_output_has_the_final_answer_at_top_level() {
    let p = Project::scenario("thought_tool_thought");
    let run = p.run(&[]);
    let r = &run.json;
    for key in ["ok", "work_order_id", "kind", "status", "final_answer", "usage", "errors"] {
        assert!(r.get(key).is_some(), "no `{key}`: {r:#}");
    }
    assert_eq!(r["kind"], "kernel");
    assert_eq!(r["work_order_id"], "WO-KERNEL-TTT");
    assert!(r.get("output").is_none(), "kernel results carry final_answer, not output");
    assert!(r["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    let answer = r["final_answer"].as_object().unwrap();
    let keys: Vec<&str> = answer.keys().map(String::as_str).collect();
    for key in &keys {
        assert!(
            ["answer_text", "confidence", "used_step_ids", "notes", "ttl_exhausted", "metadata"]
                .contains(key),
            "unexpected final_answer field {key}"
        );
    }
    assert_eq!(answer["metadata"], json!({}));
}

#[test]
fn a_kernel_whose_setup_fails_still_ends_with_a_final_answer() {
    // `tools` names a tool that does not exist: no pass runs (tool_not_found), yet Phase E
    // answers — so "No final answer available" cannot be reached from the CLI.
    let p = Project::scenario("thought_tool_thought");
    p.edit("wo.json", |wo| wo["tools"] = json!(["nope"]));
    p.drop_replies("PRC-SYNTH-001");
    let run = p.run(&[]);

    assert_eq!(run.json["ok"], false);
    assert_eq!(run.out.code, 1);
    assert_eq!(run.error_codes()[0], "tool_not_found");
    assert!(run.json["errors"][0]["message"].as_str().unwrap().contains("calculator"));
    assert_eq!(run.cycles(), 0);
    assert_eq!(run.ttl_remaining(), DEFAULT_TTL);
    assert!(p.ledger().model_calls().is_empty(), "no loop cycle");
    let answer = run.answer();
    assert_eq!(answer["metadata"]["degraded"], true, "{answer:#}");
    assert!(run.answer_text().contains("No execution pass took place"), "{}", run.answer_text());
    assert!(schema_errors(&schema("final_answer.schema.json"), answer).is_empty());

    let out = p.run_text(&[]);
    assert!(out.stdout.contains("Answer: No synthesized answer is available"), "{out}");
    assert!(!out.stdout.contains("No final answer available"), "{out}");
    assert!(out.stderr.contains("error[tool_not_found]"), "{out}");
}

// --- contracts and tools of a work order --------------------------------------------------

#[test]
fn a_pinned_role_uses_the_pinned_version() {
    let p = Project::scenario("thought_tool_thought");
    p.edit("wo.json", |wo| {
        wo["contracts"] = json!({"plan": "PRC-PLAN-001@1.0.0", "synthesis": "PRC-SYNTH-001@^1"})
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    let ledger = p.ledger();
    let plan = ledger.exchanges().into_iter().find(|x| x["role"] == "plan").unwrap();
    assert_eq!(plan["contract_id"], "PRC-PLAN-001");
    assert_eq!(plan["contract_version"], "1.0.0");
    let cycle = ledger.cycles().into_iter().find(|c| c["role"] == "plan").unwrap();
    assert_eq!(cycle["version"], "1.0.0");
    assert_eq!(cycle["sha256"], plan["contract_sha256"]);
}

#[test]
fn a_pin_of_a_missing_version_fails_the_run_without_calling_the_model_for_it() {
    let p = Project::scenario("thought_tool_thought");
    p.edit("wo.json", |wo| wo["contracts"] = json!({"plan": "PRC-PLAN-001@=9.9.9"}));
    let run = p.run(&[]);

    assert_eq!(run.status(), "failed", "{:#}", run.json);
    assert_eq!(run.out.code, 1);
    assert_eq!(run.error_codes(), ["contract_version_not_found"]);
    assert!(run.json["errors"][0]["message"].as_str().unwrap().contains("1.0.0"), "lists versions");
    assert_eq!(run.cycles(), 1);
    assert_eq!(p.ledger().exchange_roles(), ["task_profile", "synthesis"]);
    assert!(schema_errors(&schema("final_answer.schema.json"), run.answer()).is_empty());
}

#[test]
fn an_unknown_role_in_contracts_is_an_invalid_work_order() {
    let p = Project::scenario("thought_tool_thought");
    p.edit("wo.json", |wo| wo["contracts"] = json!({"planner": "PRC-PLAN-001"}));
    let run = p.run(&[]);

    assert_eq!(run.out.code, 1, "{}", run.out);
    assert_eq!(run.json["ok"], false);
    assert_eq!(run.json["code"], "work_order_invalid");
    assert_eq!(run.json["errors"][0]["pointer"], "/contracts");
    assert!(run.json["message"].as_str().unwrap().contains("planner"));
    assert!(run.json.get("final_answer").is_none(), "nothing ran");
    // Nothing ran, and the ledger says so (SPEC §10: failures before resolution).
    let records = p.ledger().0;
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["event"], "work_order_failed");
    assert_eq!(records[0]["code"], "work_order_invalid");
    assert!(records[0]["work_order_id"].is_null(), "the file did not load");
    assert!(records[0]["work_order_file"].as_str().unwrap().ends_with("wo.json"), "{records:#?}");
}

#[test]
fn a_tool_outside_the_allow_list_is_treated_as_unknown_and_repaired() {
    let p = Project::scenario("restricted_tools");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.actions(), [("repair_missing_tool".to_string(), "repaired".to_string())]);
    let ledger = p.ledger();
    assert!(ledger.exchange_roles().contains(&"repair_missing_tool".to_string()));
    let calls = ledger.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["tool"], "calculator", "echo never ran");
    assert_eq!(statuses(&ledger.final_plan()), [("s1".to_string(), "complete".to_string())]);

    // A repair that keeps the disallowed tool is rejected.
    let p = Project::scenario("restricted_tools");
    p.edit("fixtures.json", |f| {
        let responses = f["responses"].as_array_mut().unwrap();
        let echo = json!({"contract_id": "PRC-MISSINGTOOL-001",
                          "text": "{\"step_id\": \"s1\", \"description\": \"Say it.\", \"tool\": \"echo\", \"arguments\": {\"text\": \"15\"}}"});
        responses[2] = echo.clone();
        responses.insert(3, echo);
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");
    assert_eq!(run.status(), "unrecoverable", "{:#}", run.json);
    let why = run.json["supervisor_actions"][1]["errors"][0].as_str().unwrap();
    assert!(why.contains("echo") && why.contains("not available"), "{why}");
    assert!(p.ledger().tool_calls().is_empty());
}

#[test]
fn pinning_the_tool_call_repair_does_not_affect_the_missing_tool_repair() {
    // The missing-tool repair is served by the repair_missing_tool role; a pin of another
    // role (here a version that does not exist) must not matter to it.
    let p = Project::scenario("missing_tool");
    p.edit("wo.json", |wo| {
        wo["contracts"] = json!({"repair_tool_call": "PRC-REPAIRTOOL-001@=9.9.9"})
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.actions(), [("repair_missing_tool".to_string(), "repaired".to_string())]);
}

#[test]
fn the_plan_prompt_offers_only_the_allowed_tools() {
    // Through an OpenAI-compatible mock server, to read the prompts the kernel sends.
    let plan = json!({"goal": "Report the sum.", "steps": [{"step_id": "s1", "description": "Add.",
        "status": "pending", "tool": "calculator", "arguments": {"expression": "5 + 10"}}]});
    let replies = [
        "Exact arithmetic.".to_string(),
        plan.to_string(),
        "s1 returned 15.".to_string(),
        json!({"converged": true, "reason": "15"}).to_string(),
        json!({"answer_text": "15", "metadata": {}}).to_string(),
    ];
    let server = MockServer::start(
        replies.iter().map(|r| MockReply::json(200, &chat_completion(r))).collect(),
    );
    let p = Project::scenario("restricted_tools");
    let mut cmd = p.pactum();
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .env("OPENAI_API_KEY", "x")
        .env("PACTUM_MODEL", "m");
    let run = p.run_with(cmd, &["--provider", "openai"]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(server.hits(), 5);
    let prompt = |i: usize| -> String {
        server.requests()[i].json()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let plan_prompt = prompt(1);
    assert!(plan_prompt.contains("- calculator:"), "{plan_prompt}");
    for hidden in ["- echo:", "- memory_read:", "- memory_write:", "- memory_search:"] {
        assert!(!plan_prompt.contains(hidden), "{hidden} is not allowed: {plan_prompt}");
    }
    assert!(plan_prompt.contains("Exact arithmetic."), "the profile reaches the planner");
    // The semantic validation sees the tool's result.
    assert!(prompt(2).contains("15"), "{}", prompt(2));
}

#[test]
fn with_no_tools_allowed_a_tool_step_is_repaired_into_a_reasoning_step() {
    let p = Project::scenario("missing_tool");
    p.edit("wo.json", |wo| wo["tools"] = json!([]));
    p.edit("fixtures.json", |f| {
        let responses = f["responses"].as_array_mut().unwrap();
        responses[2] = json!({"contract_id": "PRC-MISSINGTOOL-001",
            "text": "{\"step_id\": \"s1\", \"description\": \"Add 5 and 10 by reasoning.\"}"});
        responses.insert(3, json!({"contract_id": "PRC-REASON-001", "text": "5 + 10 = 15."}));
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.actions(), [("repair_missing_tool".to_string(), "repaired".to_string())]);
    let ledger = p.ledger();
    assert_eq!(
        ledger.exchange_roles(),
        [
            "task_profile",
            "plan",
            "repair_missing_tool",
            "reasoning_step",
            "semantic_validation",
            "convergence",
            "synthesis"
        ]
    );
    assert!(ledger.tool_calls().is_empty());
    let plan = ledger.final_plan();
    assert_eq!(statuses(&plan), pairs(&[("s1", "complete")]));
    let s1 = step(&plan, "s1");
    assert!(s1.get("tool").is_none(), "{s1:#}");
    assert_eq!(s1["result"], "5 + 10 = 15.");
}
