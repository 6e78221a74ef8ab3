//! The scripted provider: answers from a fixture file, for demos and tests. Offline and
//! clearly named as such: it never pretends to be a model.
//!
//! ```json
//! { "note": "optional, for the reader", "responses": [
//!     { "contract_id": "PRC-PLAN-001", "text": "{\"goal\": ...}" },
//!     { "text": "any contract takes this one", "finish_reason": "stop",
//!       "usage": { "prompt_tokens": 12, "completion_tokens": 30 } },
//!     { "envelope": { "text": "...", "files": { "out/a.md": "# A" } } },
//!     { "contract_id": "PRC-SYNTH-001", "expect_prompt": ["{\"s1\":{\"result\":15}}"],
//!       "text": "{\"answer_text\": \"The sum is 15.\", \"metadata\": {}}" },
//!     { "contract_id": "PRC-SYNTH-001", "error": { "code": "provider_unreachable", "message": "simulated outage" } },
//!     { "tool_calls": [ { "name": "read_file", "arguments": { "path": "/context/reference.md" } } ] }
//! ] }
//! ```
//!
//! A response may give the `latency_ms` it reports (it is still served at once), and a
//! `delay_ms` it is really served after (a slow model: for tests of workers killed while a
//! work order runs).
//!
//! A response with `tool_calls` (and optionally `text`) stands for a model that calls tools
//! instead of answering (SPEC §15); each call's `id` defaults to `call_N`, N its position.
//!
//! Responses are consumed in order: a request takes the first unused response whose
//! `contract_id` is absent or equal to its own (and whose `contract_version`, when given, is
//! the request's: two versions of one contract can be scripted apart, the way an eval
//! compares them). A response may simulate a provider failure
//! (`error.code` is one of the provider codes). When none is left: `script_exhausted`.
//!
//! A scripted reply is only true for the prompt it was written for. `expect_prompt` lists
//! substrings the prompt being answered (its messages, joined by blank lines) must contain;
//! when one is missing the request fails with `script_prompt_mismatch`, naming the response
//! and the missing text, and the response stays unused. So a demo whose answer depends on
//! a tool's result can state that the result must be in the prompt that answer replies to.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, ProviderFailure, Result};
use crate::gateway::{
    FinishReason, PromptRequest, Provider, ProviderResponse, ResponseBody, ToolCall, Usage,
};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    contract_id: Option<String>,
    /// Answers only this version of the contract.
    contract_version: Option<String>,
    text: Option<String>,
    envelope: Option<Value>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    error: Option<FixtureError>,
    /// Tool calls the model makes instead of answering.
    tool_calls: Option<Vec<FixtureToolCall>>,
    /// The latency the response reports (it is served at once): for evaluations whose
    /// p50/p95 a test checks.
    latency_ms: Option<u64>,
    /// How long the response really takes to arrive.
    delay_ms: Option<u64>,
    /// Substrings the prompt this response answers must contain.
    #[serde(default)]
    expect_prompt: Vec<String>,
    /// Free-form note for the reader of the fixture file.
    #[allow(dead_code)]
    note: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureToolCall {
    id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: Value,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureError {
    code: String,
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureFile {
    responses: Vec<Fixture>,
    /// Free-form note for the reader of the fixture file (e.g. that the replies are scripted).
    #[allow(dead_code)]
    note: Option<String>,
}

/// Answers from a fixture file, in order or keyed by contract id.
#[derive(Debug)]
pub struct ScriptedProvider {
    /// The fixture file as messages name it: relative to the project root.
    shown: PathBuf,
    /// Responses in file order; `None` once used. The index is the response's position.
    queue: Mutex<Vec<Option<Fixture>>>,
}

fn not_configured(message: String) -> Error {
    Error::provider("scripted", ProviderFailure::NotConfigured, message)
}

impl ScriptedProvider {
    /// Reads a fixture file (JSON or YAML) of the project at `root` (messages name the
    /// file relative to it).
    pub fn load(path: &Path, root: &Path) -> Result<ScriptedProvider> {
        let shown = crate::confine::Root::new(root).shown(path);
        let doc = crate::document::load(path, None).map_err(|e| {
            not_configured(format!("cannot read fixtures {}: {e}", shown.display()))
        })?;
        let file = FixtureFile::deserialize(&doc.value).map_err(|e| {
            not_configured(format!("fixtures {} are malformed: {e}", shown.display()))
        })?;
        for (i, f) in file.responses.iter().enumerate() {
            let bodies = usize::from(f.text.is_some() && f.tool_calls.is_none())
                + usize::from(f.envelope.is_some())
                + usize::from(f.error.is_some())
                + usize::from(f.tool_calls.is_some());
            if bodies != 1 {
                return Err(not_configured(format!(
                    "fixtures {} response {i}: needs exactly one of `text`, `envelope`, `error` and `tool_calls` (`text` may go with `tool_calls`)",
                    shown.display()
                )));
            }
            if f.expect_prompt.iter().any(String::is_empty) {
                return Err(not_configured(format!(
                    "fixtures {} response {i}: `expect_prompt` holds an empty string, which every prompt contains; remove it or write the text the prompt must contain",
                    shown.display()
                )));
            }
        }
        Ok(ScriptedProvider {
            shown,
            queue: Mutex::new(file.responses.into_iter().map(Some).collect()),
        })
    }

    /// Responses not used yet.
    pub fn remaining(&self) -> usize {
        self.queue.lock().map(|q| q.iter().flatten().count()).unwrap_or(0)
    }

    /// Fails with `script_prompt_mismatch` when the prompt lacks text response `index`
    /// expects.
    fn check_prompt(&self, index: usize, f: &Fixture, request: &PromptRequest) -> Result<()> {
        if f.expect_prompt.is_empty() {
            return Ok(());
        }
        // Everything the model would see: the messages and, in a tool loop, the results of
        // the calls it made (so an answer can be tied to what a tool computed).
        let results = request.turns.iter().flat_map(|t| t.results.iter());
        let prompt: Vec<&str> = request
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .chain(results.map(|r| r.content.as_str()))
            .collect();
        let prompt = prompt.join("\n\n");
        let missing: Vec<String> = f
            .expect_prompt
            .iter()
            .filter(|text| !prompt.contains(text.as_str()))
            .map(|text| format!("{text:?}"))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let message = format!(
            "{} response {index} ({}) expects the prompt to contain {}, but the prompt for {}@{} does not; the run did not produce what the script was written for: fix the run, or the response's `expect_prompt` and text",
            self.shown.display(),
            f.contract_id.as_deref().unwrap_or("any contract"),
            missing.join(" and "),
            request.contract_id,
            request.contract_version
        );
        Err(Error::provider("scripted", ProviderFailure::ScriptPromptMismatch, message))
    }
}

fn failure_of(code: &str) -> ProviderFailure {
    match code {
        "provider_timeout" => ProviderFailure::Timeout,
        "provider_unreachable" => ProviderFailure::Unreachable,
        "provider_rate_limited" => ProviderFailure::RateLimited,
        "provider_response_invalid" => ProviderFailure::InvalidResponse,
        "provider_not_configured" => ProviderFailure::NotConfigured,
        "replay_miss" => ProviderFailure::ReplayMiss,
        "script_exhausted" => ProviderFailure::ScriptExhausted,
        "script_prompt_mismatch" => ProviderFailure::ScriptPromptMismatch,
        _ => ProviderFailure::Status,
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn default_jobs(&self) -> usize {
        // Responses are served in order: calls at once would take them in any order.
        1
    }

    fn is_offline(&self) -> bool {
        true
    }

    fn complete(&self, request: &PromptRequest) -> Result<ProviderResponse> {
        let started = Instant::now();
        let fixture = {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            let next = queue.iter_mut().enumerate().find(|(_, slot)| {
                slot.as_ref().is_some_and(|f| {
                    f.contract_id.as_ref().is_none_or(|id| id == &request.contract_id)
                        && f.contract_version
                            .as_ref()
                            .is_none_or(|v| v == &request.contract_version)
                })
            });
            match next {
                Some((index, slot)) => {
                    if let Some(f) = slot.as_ref() {
                        self.check_prompt(index, f, request)?;
                    }
                    slot.take()
                }
                None => None,
            }
        };
        let Some(fixture) = fixture else {
            let message = format!(
                "{} has no response left for {}@{}; add one to the fixtures",
                self.shown.display(),
                request.contract_id,
                request.contract_version
            );
            return Err(Error::provider("scripted", ProviderFailure::ScriptExhausted, message));
        };
        if let Some(delay) = fixture.delay_ms {
            std::thread::sleep(Duration::from_millis(delay));
        }
        if let Some(e) = fixture.error {
            let message = e.message.unwrap_or_else(|| format!("simulated {}", e.code));
            // A simulated failure stands for one request that failed.
            return Err(Error::provider("scripted", failure_of(&e.code), message)
                .with_attempts(1, Duration::ZERO));
        }
        let body = match (fixture.text, fixture.envelope) {
            (Some(t), _) => ResponseBody::Text(t),
            (None, Some(v)) => ResponseBody::Envelope(v),
            (None, None) => ResponseBody::Text(String::new()),
        };
        let tool_calls: Vec<ToolCall> = fixture
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: c.id.unwrap_or_else(|| format!("call_{i}")),
                name: c.name,
                arguments: if c.arguments.is_null() {
                    Value::Object(Default::default())
                } else {
                    c.arguments
                },
            })
            .collect();
        let default_finish = if tool_calls.is_empty() { "stop" } else { "tool_calls" };
        Ok(ProviderResponse {
            body,
            finish_reason: Some(FinishReason::from_api(
                fixture.finish_reason.as_deref().unwrap_or(default_finish),
            )),
            usage: fixture.usage,
            latency: fixture
                .latency_ms
                .map(Duration::from_millis)
                .unwrap_or_else(|| started.elapsed().max(Duration::from_micros(1))),
            latency_recorded: fixture.latency_ms.is_some(),
            model: Some("scripted".into()),
            attempts: 1,
            tool_calls,
        })
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;
    use crate::gateway::{Boundary, Message};
    use serde_json::json;

    fn provider(responses: Value) -> (tempfile::TempDir, ScriptedProvider) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fixtures.json");
        std::fs::write(&path, json!({"responses": responses}).to_string()).unwrap();
        let provider = ScriptedProvider::load(&path, dir.path()).unwrap();
        (dir, provider)
    }

    fn request(contract_id: &str, system: &str, user: &str) -> PromptRequest {
        PromptRequest {
            contract_id: contract_id.to_string(),
            contract_version: "1.0.0".to_string(),
            prompt_pack_id: "PRM-T-001".to_string(),
            prompt_pack_version: "1.0.0".to_string(),
            boundary: Boundary {
                max_tokens: 64,
                temperature: 0.0,
                provider_id: None,
                structured_output: None,
            },
            input_schema: None,
            output_schema: None,
            template_variables: json!({}),
            messages: vec![Message::system(system), Message::user(user)],
            work_order_id: None,
            session_id: None,
            agent_id: None,
            agent_class: None,
            tier: None,
            timeout: None,
            tools: Vec::new(),
            turns: Vec::new(),
        }
    }

    fn text(r: &ProviderResponse) -> &str {
        match &r.body {
            ResponseBody::Text(t) => t,
            ResponseBody::Envelope(_) => panic!("expected text, got {r:?}"),
        }
    }

    #[test]
    fn responses_are_used_in_order_and_by_contract() {
        let (_dir, p) = provider(json!([
            {"contract_id": "PRC-B-001", "text": "b"},
            {"text": "any 1"},
            {"text": "any 2"},
        ]));
        assert_eq!(text(&p.complete(&request("PRC-A-001", "", "x")).unwrap()), "any 1");
        assert_eq!(text(&p.complete(&request("PRC-B-001", "", "x")).unwrap()), "b");
        assert_eq!(p.remaining(), 1);
        assert_eq!(text(&p.complete(&request("PRC-B-001", "", "x")).unwrap()), "any 2");
        let e = p.complete(&request("PRC-A-001", "", "x")).unwrap_err();
        assert_eq!(e.code(), Code::ScriptExhausted, "{e}");
    }

    #[test]
    fn a_response_may_answer_one_version_only() {
        let (_dir, p) = provider(json!([
            {"contract_id": "PRC-A-001", "contract_version": "1.1.0", "text": "new"},
            {"contract_id": "PRC-A-001", "contract_version": "1.0.0", "text": "old"},
        ]));
        let mut newer = request("PRC-A-001", "", "x");
        newer.contract_version = "1.1.0".into();
        assert_eq!(text(&p.complete(&request("PRC-A-001", "", "x")).unwrap()), "old");
        assert_eq!(text(&p.complete(&newer).unwrap()), "new");
        assert_eq!(p.complete(&newer).unwrap_err().code(), Code::ScriptExhausted);
    }

    #[test]
    fn expect_prompt_serves_a_response_only_to_a_prompt_that_contains_its_text() {
        let (_dir, p) = provider(json!([
            {"contract_id": "PRC-SYNTH-001", "expect_prompt": ["{\"result\":15}", "sum of 5 and 10"],
             "text": "The sum is 15."},
        ]));
        // Every expected text must be there; system and user messages both count.
        let wrong = request("PRC-SYNTH-001", "sum of 5 and 10", "results: {\"result\":16}");
        let e = p.complete(&wrong).unwrap_err();
        assert_eq!(e.code(), Code::ScriptPromptMismatch, "{e}");
        let message = e.to_string();
        assert!(
            message.contains(
                "response 0 (PRC-SYNTH-001) expects the prompt to contain \"{\\\"result\\\":15}\""
            ),
            "{message}"
        );
        assert!(!message.contains("sum of 5 and 10"), "only the missing text is named: {message}");
        assert!(message.contains("the prompt for PRC-SYNTH-001@1.0.0 does not"), "{message}");
        // The response was not used up by the mismatch.
        assert_eq!(p.remaining(), 1);
        let right = request("PRC-SYNTH-001", "sum of 5 and 10", "results: {\"result\":15}");
        assert_eq!(text(&p.complete(&right).unwrap()), "The sum is 15.");
        assert_eq!(p.remaining(), 0);
    }

    #[test]
    fn an_empty_expected_text_is_refused_when_the_fixtures_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fixtures.json");
        std::fs::write(&path, r#"{"responses": [{"text": "x", "expect_prompt": ["ok", ""]}]}"#)
            .unwrap();
        let e = ScriptedProvider::load(&path, dir.path()).unwrap_err();
        assert_eq!(e.code(), Code::ProviderNotConfigured);
        assert!(e.to_string().contains("response 0: `expect_prompt` holds an empty string"), "{e}");
        std::fs::write(&path, r#"{"responses": [{"text": "x", "expect_prompt": "15"}]}"#).unwrap();
        let e = ScriptedProvider::load(&path, dir.path()).unwrap_err();
        assert!(e.to_string().contains("malformed"), "a list is required: {e}");
    }
}
