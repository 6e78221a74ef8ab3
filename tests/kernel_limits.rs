//! How kernel runs end when something runs out or breaks (SPEC §8.1, §8.5, §9): the TTL
//! (2, 3, exactly enough, 0), the token budget, a provider that cannot be reached, and a
//! provider failure in the middle of a pass. In every case Phase E still produces a
//! schema-valid final answer.

use crate::kernel_harness as harness;
use crate::mock_http;

use harness::{
    DEFAULT_TTL, FAST_RETRY, Project, chat_completion, check_run, pairs, statuses, step,
};
use mock_http::{MockReply, MockServer, RefusedPort};
use serde_json::{Value, json};

// --- TTL ---------------------------------------------------------------------------------

#[test]
fn a_ttl_of_two_expires_after_profile_and_plan() {
    let p = Project::scenario("long_plan");
    p.constrain("ttl", json!(2));
    let run = p.run(&[]);
    check_run(&p, &run, 2, "ledger.jsonl");

    assert_eq!(run.status(), "ttl_expired", "{:#}", run.json);
    assert_eq!(run.json["ok"], false);
    assert_eq!(run.out.code, 1);
    assert_eq!(run.cycles(), 2);
    assert_eq!(run.ttl_remaining(), 0);
    assert_eq!(run.error_codes(), ["ttl_expired"]);
    // The model said `ttl_exhausted: false`; the kernel knows better.
    assert_eq!(run.answer()["ttl_exhausted"], true, "{:#}", run.answer());

    let ledger = p.ledger();
    assert_eq!(
        ledger.exchange_roles(),
        ["task_profile", "plan", "synthesis"],
        "nothing after TTL 0"
    );
    assert!(ledger.tool_calls().is_empty(), "no step ran, not even the tool step");
    let plan = ledger.final_plan();
    assert_eq!(statuses(&plan), pairs(&[("s1", "pending"), ("s2", "pending"), ("s3", "pending")]));
    // Phase E answered, and says what it lacked.
    let meta = &run.answer()["metadata"];
    assert_eq!(meta["degraded"], true, "{meta:#}");
    assert!(meta["missing_fields"].as_array().unwrap().contains(&json!("convergence_assessment")));
    assert!(meta["plan_state"].is_object(), "the plan is carried: {meta:#}");
    // The stop is in the log: the Phase E record names ttl_expired.
    let phase_e = ledger.cycles().last().cloned().cloned().unwrap();
    assert_eq!(phase_e["phase"], "E");
    assert_eq!(phase_e["errors"][0]["code"], "ttl_expired", "{phase_e:#}");
    assert_eq!(phase_e["degraded"], true);
}

#[test]
fn a_ttl_of_three_runs_the_steps_it_can_and_leaves_the_rest_pending() {
    let p = Project::scenario("long_plan");
    p.constrain("ttl", json!(3));
    let run = p.run(&[]);
    check_run(&p, &run, 3, "ledger.jsonl");

    assert_eq!(run.status(), "ttl_expired");
    assert_eq!(run.cycles(), 3);
    let ledger = p.ledger();
    assert_eq!(ledger.exchange_roles(), ["task_profile", "plan", "reasoning_step", "synthesis"]);
    let plan = ledger.final_plan();
    assert_eq!(
        statuses(&plan),
        pairs(&[("s1", "complete"), ("s2", "complete"), ("s3", "pending")])
    );
    assert_eq!(step(&plan, "s1")["result"], json!({"result": 15}));
}

#[test]
fn a_ttl_that_is_exactly_enough_converges_without_the_time_limit_flag() {
    let p = Project::scenario("long_plan");
    p.constrain("ttl", json!(6));
    let run = p.run(&[]);
    check_run(&p, &run, 6, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.ttl_remaining(), 0);
    assert_eq!(run.json["errors"], json!([]));
    assert_ne!(run.answer()["ttl_exhausted"], true, "{:#}", run.answer());
}

#[test]
fn a_ttl_of_zero_runs_no_pass_and_only_phase_e_asks_the_model() {
    let p = Project::scenario("long_plan");
    p.constrain("ttl", json!(0));
    let run = p.run(&[]);
    check_run(&p, &run, 0, "ledger.jsonl");

    assert_eq!(run.status(), "ttl_expired", "{:#}", run.json);
    assert_eq!(run.cycles(), 0);
    assert_eq!(run.ttl_remaining(), 0);
    assert_eq!(run.answer()["ttl_exhausted"], true);
    let ledger = p.ledger();
    assert_eq!(ledger.exchange_roles(), ["synthesis"]);
    assert_eq!(ledger.cycles().len(), 1, "only the Phase E record");
    assert!(ledger.final_plan().is_null());
    let meta = &run.answer()["metadata"];
    assert_eq!(meta["degraded"], true);
    assert_eq!(
        meta["missing_fields"],
        json!([
            "plan_state",
            "execution_results",
            "convergence_assessment",
            "execution_passes",
            "semantic_validation",
            "task_profile"
        ])
    );
}

#[test]
fn a_ttl_of_zero_without_a_synthesis_reply_explains_that_nothing_ran() {
    let p = Project::scenario("long_plan");
    p.constrain("ttl", json!(0));
    p.write_json("fixtures.json", &json!({"responses": []}));
    let run = p.run(&[]);
    check_run(&p, &run, 0, "ledger.jsonl");

    assert_eq!(run.status(), "ttl_expired");
    let text = run.answer_text();
    assert!(text.contains("No execution pass took place"), "{text}");
    assert!(text.contains("0 passes ran with 0 refinements"), "{text}");
    assert!(text.contains("convergence status: ttl_expired"), "{text}");
    assert!(text.contains("time limit"), "{text}");
    assert_eq!(run.answer()["ttl_exhausted"], true);
    let meta = &run.answer()["metadata"];
    assert_eq!(meta["degraded"], true);
    assert!(meta["reason"].as_str().unwrap().contains("script_exhausted"), "{meta:#}");
    assert_eq!(meta["missing_fields"].as_array().unwrap().len(), 6);
}

#[test]
fn with_a_ttl_of_zero_the_synthesis_prompt_reports_zero_passes() {
    // Through an OpenAI-compatible mock server, to see what Phase E was given.
    let server = MockServer::start(vec![MockReply::json(
        200,
        &chat_completion(
            r#"{"answer_text": "Nothing was executed: the run had no cycles left.", "confidence": 0, "used_step_ids": [], "notes": null, "ttl_exhausted": true, "metadata": {}}"#,
        ),
    )]);
    let p = Project::scenario("long_plan");
    p.constrain("ttl", json!(0));
    let mut cmd = p.pactum();
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .env("OPENAI_API_KEY", "x")
        .env("PACTUM_MODEL", "m");
    let run = p.run_with(cmd, &["--provider", "openai"]);
    check_run(&p, &run, 0, "ledger.jsonl");

    assert_eq!(run.status(), "ttl_expired");
    assert_eq!(run.json["provider"], "openai");
    assert_eq!(server.hits(), 1, "one call: Phase E");
    let body = server.requests()[0].json();
    let prompt: String = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(prompt.contains("passes: 0, refinements: 0"), "{prompt}");
    assert!(prompt.contains("convergence_status: ttl_expired"), "{prompt}");
    assert!(prompt.contains("ttl_remaining: 0"), "{prompt}");
    assert!(prompt.contains("compute (5 + 10) * 2 and explain the steps"), "{prompt}");
    let text = run.answer_text();
    assert!(text.starts_with("Nothing was executed: the run had no cycles left. "), "{text}");
    assert!(text.contains("No execution pass took place."), "pactum says so too: {text}");
    assert_eq!(run.answer()["ttl_exhausted"], true);
}

// --- budget ------------------------------------------------------------------------------

#[test]
fn a_budget_too_small_for_any_call_stops_before_the_model_is_asked() {
    let p = Project::scenario("thought_tool_thought");
    p.constrain("token_budget", json!(1));
    let run = p.run(&[]);

    assert_eq!(run.status(), "budget_exceeded", "{:#}", run.json);
    assert_eq!(run.out.code, 1);
    assert_eq!(run.error_codes(), ["budget_exceeded"]);
    assert_eq!(run.cycles(), 0, "a call that is not made is not a cycle");
    assert_eq!(run.ttl_remaining(), DEFAULT_TTL);
    let ledger = p.ledger();
    assert!(ledger.model_calls().is_empty(), "no prompt was sent");
    assert!(ledger.exchanges().iter().all(|x| x["verdict"] == "budget_exceeded"));
    let answer = run.answer();
    assert_eq!(answer["metadata"]["degraded"], true);
    let reason = answer["metadata"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("synthesis_failed: budget_exceeded"), "{reason}");
    let errors = harness::schema_errors(&harness::schema("final_answer.schema.json"), answer);
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn a_budget_that_runs_out_mid_run_ends_the_loop_with_budget_exceeded() {
    // Room for the profile (512 max tokens), not for the plan (2048).
    let p = Project::scenario("thought_tool_thought");
    p.constrain("token_budget", json!(1500));
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "budget_exceeded", "{:#}", run.json);
    assert_eq!(run.cycles(), 1);
    assert_eq!(run.error_codes(), ["budget_exceeded"]);
    let ledger = p.ledger();
    assert_eq!(ledger.exchange_roles(), ["task_profile", "plan", "synthesis"]);
    assert_eq!(ledger.exchanges()[1]["verdict"], "budget_exceeded");
    let phase_e = ledger.cycles().last().cloned().cloned().unwrap();
    assert_eq!(phase_e["errors"][0]["code"], "budget_exceeded", "{phase_e:#}");
    let usage = &run.json["usage"];
    let total =
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap();
    assert!(total <= 1500, "{usage}");
}

// --- providers ---------------------------------------------------------------------------

#[test]
fn an_unreachable_provider_fails_the_run_with_a_degraded_answer() {
    let p = Project::scenario("thought_tool_thought");
    p.write("pactum.toml", FAST_RETRY);
    let refused = RefusedPort::new();
    let mut cmd = p.pactum();
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", refused.url()))
        .env("OPENAI_API_KEY", "x")
        .env("PACTUM_MODEL", "m");
    let run = p.run_with(cmd, &["--provider", "openai"]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "failed", "{:#}", run.json);
    assert_eq!(run.out.code, 1);
    assert_eq!(run.json["provider"], "openai");
    assert_eq!(run.error_codes(), ["provider_unreachable"]);
    let answer = run.answer();
    assert_eq!(answer["metadata"]["degraded"], true);
    let reason = answer["metadata"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("synthesis_failed"), "{reason}");
    assert!(reason.contains("provider_unreachable"), "{reason}");
    assert!(run.answer_text().contains("calculate the sum of 5 and 10"));
    let ledger = p.ledger();
    assert_eq!(ledger.exchange_roles(), ["task_profile", "synthesis"]);
    assert!(ledger.exchanges().iter().all(|x| x["verdict"] == "provider_unreachable"));
    // Retries exhausted: every call was tried the configured 3 times.
    assert!(ledger.exchanges().iter().all(|x| x["attempts"] == 3), "{:#?}", ledger.exchanges());
    assert!(!std::fs::read_to_string(p.path("ledger.jsonl")).unwrap().contains("\"x\""));
}

#[test]
fn a_provider_failure_mid_run_stops_the_loop_and_phase_e_uses_what_is_known() {
    let p = Project::scenario("provider_error");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "failed", "{:#}", run.json);
    assert_eq!(run.error_codes(), ["provider_timeout"]);
    assert_eq!(run.cycles(), 3, "profile, plan, and the failed semantic validation");
    let ledger = p.ledger();
    let plan = ledger.final_plan();
    assert_eq!(statuses(&plan), pairs(&[("s1", "complete")]));
    let failed = ledger.cycles().into_iter().find(|c| c["role"] == "semantic_validation").unwrap();
    assert_eq!(failed["llm_output"], Value::Null);
    assert_eq!(failed["errors"][0]["code"], "provider_timeout");
    assert_eq!(failed["contract_id"], "PRC-SEMANTIC-001");
    assert_eq!(failed["version"], "1.1.0", "an unpinned role runs its latest active version");
    let registry = p.read_json("registry.json");
    let entry = registry["contracts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["contract_id"] == "PRC-SEMANTIC-001" && e["version"] == "1.1.0")
        .unwrap();
    assert_eq!(failed["sha256"], entry["sha256"]);
    assert_eq!(failed["tool_calls"][0]["step_id"], "s1", "the tool call is logged with it");

    let answer = run.answer();
    assert!(answer["answer_text"].as_str().unwrap().contains("15"));
    let meta = &answer["metadata"];
    assert_eq!(meta["degraded"], true);
    assert_eq!(
        meta["missing_fields"],
        json!(["convergence_assessment", "execution_passes", "semantic_validation"])
    );
    assert_eq!(meta["plan_state"], plan);
}
