//! The exchange path through the library API, with a provider of the test's own that records
//! every request: what a [`PromptRequest`] carries (SPEC §8.5) and that a provider without
//! system messages gets one joined message (SPEC §3.2).

#[path = "support/common.rs"]
mod common;

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
        Ok(ProviderResponse {
            body: ResponseBody::Text(r#"{"label": "billing", "confidence": 0.9}"#.into()),
            finish_reason: Some(FinishReason::Stop),
            usage: None,
            latency: Duration::ZERO,
            model: None,
            attempts: 1,
            tool_calls: Vec::new(),
        })
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
