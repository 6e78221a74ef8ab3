//! The exchange path through the library API, with a provider of the test's own that records
//! every request: what a [`PromptRequest`] carries (SPEC §8.5), that a provider without
//! system messages gets one joined message (SPEC §3.2), and that every kernel loop prompt
//! carries the run's remaining TTL and budget when its role contract declares them.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pactum::error::Result;
use pactum::executor::Runner;
use pactum::gateway::select::ProviderSet;
use pactum::gateway::{
    FinishReason, PromptRequest, Provider, ProviderResponse, ResponseBody, Role,
};
use pactum::project::Project;
use pactum::work_order::WorkOrder;
use serde_json::json;

/// Answers every request with one fixed reply and keeps the requests.
struct Recorder {
    system_messages: bool,
    requests: Mutex<Vec<PromptRequest>>,
}

impl Recorder {
    fn new(system_messages: bool) -> Arc<Recorder> {
        Arc::new(Recorder { system_messages, requests: Mutex::default() })
    }
}

impl Provider for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    fn supports_system_messages(&self) -> bool {
        self.system_messages
    }

    fn complete(&self, request: &PromptRequest) -> Result<ProviderResponse> {
        self.requests.lock().unwrap().push(request.clone());
        Ok(ProviderResponse::text(r#"{"label": "billing", "confidence": 0.9}"#))
    }
}

/// Runs an exchange work order for PRC-CLASSIFY-001 through `recorder`; the one request.
fn exchange(recorder: &Arc<Recorder>) -> PromptRequest {
    let project = Project::open(&common::repo().join("registry.json")).unwrap();
    let wo = WorkOrder::from_value(
        &json!({
            "work_order_id": "WO-LIB-001",
            "kind": "exchange",
            "contract": "PRC-CLASSIFY-001@^1",
            "input": {"user_input": "I was charged twice.", "mode": "fast"},
            "session_id": "S-42",
            "agent_id": "agent-7",
            "agent_class": "KERNEL.semantic",
            "tier": "ho1",
            "constraints": {"timeout_s": 12},
        }),
        &common::repo().join("work_orders/WO-LIB-001.json"),
    )
    .unwrap();
    let runner = Runner {
        project: &project,
        providers: ProviderSet::single(recorder.clone()),
        ledger: None,
        cycle_log: None,
        allow_draft: false,
    };
    let result = runner.run(&wo);
    assert!(result.ok, "{:#}", serde_json::to_value(&result).unwrap());
    let mut requests = recorder.requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    requests.pop().unwrap()
}

#[test]
fn a_prompt_request_carries_the_contract_the_pack_and_the_work_order_ids() {
    let request = exchange(&Recorder::new(true));

    assert_eq!(request.contract_id, "PRC-CLASSIFY-001");
    assert_eq!(request.contract_version, "1.0.0");
    assert_eq!(request.prompt_pack_id, "PRM-CLASSIFY-001");
    assert_eq!(request.prompt_pack_version, "1.0.0");
    assert_eq!(request.boundary.max_tokens, 256);
    assert_eq!(request.boundary.temperature, 0.0);
    assert_eq!(request.input_schema.as_ref().unwrap()["required"], json!(["user_input"]));
    assert_eq!(request.output_schema.as_ref().unwrap()["required"], json!(["label", "confidence"]));
    assert_eq!(request.template_variables["user_input"], "I was charged twice.");
    assert_eq!(request.template_variables["mode"], "fast");
    assert_eq!(request.work_order_id.as_deref(), Some("WO-LIB-001"));
    assert_eq!(request.session_id.as_deref(), Some("S-42"));
    assert_eq!(request.agent_id.as_deref(), Some("agent-7"));
    assert_eq!(request.agent_class.as_deref(), Some("KERNEL.semantic"));
    assert_eq!(request.tier.as_deref(), Some("ho1"));
    assert_eq!(request.timeout, Some(Duration::from_secs(12)));
    let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::User]);
}

#[test]
fn a_provider_without_system_messages_gets_one_user_message() {
    let with = exchange(&Recorder::new(true));
    let without = exchange(&Recorder::new(false));

    assert_eq!(without.messages.len(), 1);
    assert_eq!(without.messages[0].role, Role::User);
    let text = &without.messages[0].content;
    assert!(text.contains("triage step") && text.contains("I was charged twice."), "{text}");
    // Same contract, same input: only the message layout differs.
    assert_eq!(with.template_variables, without.template_variables);
}

// --- the kernel's run limits in every loop prompt ------------------------------------------

/// Plays the kernel's roles for "sum 5 and 10" (a one-step calculator plan that converges),
/// reports 100 + 10 tokens per call, and keeps the requests.
struct KernelRecorder {
    requests: Mutex<Vec<PromptRequest>>,
}

impl Provider for KernelRecorder {
    fn name(&self) -> &str {
        "kernel-recorder"
    }

    fn complete(&self, request: &PromptRequest) -> Result<ProviderResponse> {
        self.requests.lock().unwrap().push(request.clone());
        let text = match request.contract_id.as_str() {
            "PRC-PLAN-001" => json!({"goal": "Add 5 and 10.", "steps": [{"step_id": "s1",
                "description": "Add them.", "status": "pending", "tool": "calculator",
                "arguments": {"expression": "5 + 10"}}]})
            .to_string(),
            "PRC-CONVERGE-001" => json!({"converged": true, "reason": "s1 gives 15."}).to_string(),
            "PRC-SYNTH-001" => json!({"answer_text": "15", "metadata": {}}).to_string(),
            _ => "Verdict: answered".to_string(),
        };
        Ok(ProviderResponse {
            body: ResponseBody::Text(text),
            finish_reason: Some(FinishReason::Stop),
            usage: Some(pactum::gateway::Usage { prompt_tokens: 100, completion_tokens: 10 }),
            latency: Duration::ZERO,
            latency_recorded: false,
            model: None,
            attempts: 1,
            tool_calls: Vec::new(),
        })
    }
}

/// Runs a kernel work order with `constraints` (and role pins `contracts`); the requests by
/// contract id, in order.
fn kernel_requests(
    constraints: serde_json::Value,
    contracts: serde_json::Value,
) -> Vec<PromptRequest> {
    let project = Project::open(&common::repo().join("registry.json")).unwrap();
    let wo = WorkOrder::from_value(
        &json!({"work_order_id": "WO-LIMITS", "kind": "kernel", "request": "sum 5 and 10",
                "constraints": constraints, "contracts": contracts}),
        &common::repo().join("work_orders/WO-LIMITS.json"),
    )
    .unwrap();
    let recorder = Arc::new(KernelRecorder { requests: Mutex::default() });
    let runner = Runner {
        project: &project,
        providers: ProviderSet::single(recorder.clone()),
        ledger: None,
        cycle_log: None,
        allow_draft: false,
    };
    let result = runner.run(&wo);
    assert_eq!(result.status, "converged", "{:#}", serde_json::to_value(&result).unwrap());
    recorder.requests.lock().unwrap().clone()
}

fn ids(requests: &[PromptRequest]) -> Vec<&str> {
    requests.iter().map(|r| r.contract_id.as_str()).collect()
}

#[test]
fn every_loop_prompt_carries_the_remaining_ttl_and_budget() {
    let requests = kernel_requests(json!({"ttl": 6, "token_budget": 5000}), json!({}));
    let loop_ids = ["PRC-PROFILE-001", "PRC-PLAN-001", "PRC-SEMANTIC-001", "PRC-CONVERGE-001"];
    assert_eq!(ids(&requests), [&loop_ids[..], &["PRC-SYNTH-001"]].concat());
    let mut ttl = 6;
    let mut budget = 5000;
    for request in &requests[..4] {
        assert_eq!(request.contract_version, "1.1.0", "an unpinned role runs its latest version");
        assert_eq!(request.prompt_pack_version, "2.0.0");
        let vars = &request.template_variables;
        assert_eq!(
            (&vars["ttl_remaining"], &vars["budget_remaining"]),
            (&json!(ttl), &json!(budget))
        );
        // The pack shows them to the model.
        let user = &request.messages.last().unwrap().content;
        let shown = format!(
            "Run limits: {ttl} model calls left in this run, this one included; {budget} tokens of budget left."
        );
        assert!(user.contains(&shown), "{} lacks {shown:?}:\n{user}", request.contract_id);
        ttl -= 1;
        budget -= 110;
    }
    // Phase E gets the TTL left when the loop stopped (SPEC §9).
    assert_eq!(requests[4].template_variables["ttl_remaining"], 2);
}

#[test]
fn without_a_token_budget_only_the_ttl_is_given() {
    let requests = kernel_requests(json!({"ttl": 6}), json!({}));
    let vars = &requests[1].template_variables;
    assert_eq!(vars["ttl_remaining"], 5);
    assert!(vars.get("budget_remaining").is_none(), "{vars:#?}");
    let user = &requests[1].messages.last().unwrap().content;
    assert!(
        user.contains("Run limits: 5 model calls left in this run, this one included."),
        "{user}"
    );
}

#[test]
fn role_contracts_that_do_not_declare_the_limits_are_called_as_before() {
    // 1.0.0 role contracts refuse unknown inputs (`additionalProperties: false`).
    let pins = json!({"task_profile": "PRC-PROFILE-001@1.0.0", "plan": "PRC-PLAN-001@1.0.0",
                      "semantic_validation": "PRC-SEMANTIC-001@1.0.0", "convergence": "PRC-CONVERGE-001@1.0.0"});
    let requests = kernel_requests(json!({"ttl": 6, "token_budget": 5000}), pins);
    for request in &requests[..4] {
        assert_eq!(
            (request.contract_version.as_str(), request.prompt_pack_version.as_str()),
            ("1.0.0", "1.0.0")
        );
        let vars = &request.template_variables;
        assert!(
            vars.get("ttl_remaining").is_none() && vars.get("budget_remaining").is_none(),
            "{vars:#?}"
        );
        assert!(
            !request.messages.iter().any(|m| m.content.contains("Run limits")),
            "{}",
            request.contract_id
        );
    }
}

// --- a ledger that cannot record the run ----------------------------------------------------

#[test]
fn a_ledger_that_refuses_the_start_record_stops_the_run_before_any_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.jsonl");
    // A torn last line: nothing is appended until it is repaired (SPEC §18).
    std::fs::write(&path, "{\"seq\":1,\"kind\":\"exch").unwrap();
    let ledger = pactum::ledger::Ledger::open(&pactum::ledger::Location::chosen(&path)).unwrap();
    let project = Project::open(&common::repo().join("registry.json")).unwrap();
    let recorder = Arc::new(KernelRecorder { requests: Mutex::default() });
    let runner = Runner {
        project: &project,
        providers: ProviderSet::single(recorder.clone()),
        ledger: Some(&ledger),
        cycle_log: Some(&ledger),
        allow_draft: false,
    };
    let file = common::repo().join("work_orders/WO-LEDGER.json");
    let exchange = WorkOrder::from_value(
        &json!({"work_order_id": "WO-X", "kind": "exchange", "contract": "PRC-CLASSIFY-001@^1",
                "input": {"user_input": "I was charged twice."}}),
        &file,
    )
    .unwrap();
    let result = runner.run(&exchange);
    assert!(!result.ok);
    assert_eq!(result.code.as_deref(), Some("ledger_corrupt"), "{result:#?}");
    let kernel = WorkOrder::from_value(
        &json!({"work_order_id": "WO-K", "kind": "kernel", "request": "sum 5 and 10"}),
        &file,
    )
    .unwrap();
    let result = runner.run(&kernel);
    assert_eq!((result.ok, result.status.as_str()), (false, "failed"));
    // Phase E still answers, from what pactum knows, without a model.
    let answer = result.final_answer.expect("Phase E always answers");
    assert!(answer.is_degraded());
    let reason = answer.metadata["reason"].as_str().unwrap();
    assert!(reason.starts_with("run_not_recorded: ledger_corrupt"), "{reason}");
    assert!(recorder.requests.lock().unwrap().is_empty(), "no model was called");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"seq\":1,\"kind\":\"exch");
}
