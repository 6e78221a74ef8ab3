//! The scripted provider: answers from a fixture file, for demos and tests. Offline and
//! clearly named as such: it never pretends to be a model.
//!
//! ```json
//! { "responses": [
//!     { "contract_id": "PRC-PLAN-001", "text": "{\"goal\": ...}" },
//!     { "text": "any contract takes this one", "finish_reason": "stop",
//!       "usage": { "prompt_tokens": 12, "completion_tokens": 30 } },
//!     { "envelope": { "text": "...", "files": { "out/a.md": "# A" } } },
//!     { "contract_id": "PRC-SYNTH-001", "error": { "code": "provider_unreachable", "message": "simulated outage" } }
//! ] }
//! ```
//!
//! Responses are consumed in order: a request takes the first unused response whose
//! `contract_id` is absent or equal to its own. A response may simulate a provider failure
//! (`error.code` is one of the provider codes). When none is left: `script_exhausted`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, ProviderFailure, Result};
use crate::gateway::{
    FinishReason, PromptRequest, Provider, ProviderResponse, ResponseBody, Usage,
};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    contract_id: Option<String>,
    text: Option<String>,
    envelope: Option<Value>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    error: Option<FixtureError>,
    /// Free-form note for the reader of the fixture file.
    #[allow(dead_code)]
    note: Option<String>,
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
}

/// Answers from a fixture file, in order or keyed by contract id.
#[derive(Debug)]
pub struct ScriptedProvider {
    path: PathBuf,
    queue: Mutex<Vec<Option<Fixture>>>,
}

fn not_configured(message: String) -> Error {
    Error::provider("scripted", ProviderFailure::NotConfigured, message)
}

impl ScriptedProvider {
    /// Reads a fixture file (JSON or YAML).
    pub fn load(path: &Path) -> Result<ScriptedProvider> {
        let doc = crate::document::load(path, None)
            .map_err(|e| not_configured(format!("cannot read fixtures {}: {e}", path.display())))?;
        let file = FixtureFile::deserialize(&doc.value).map_err(|e| {
            not_configured(format!("fixtures {} are malformed: {e}", path.display()))
        })?;
        for (i, f) in file.responses.iter().enumerate() {
            let bodies = usize::from(f.text.is_some())
                + usize::from(f.envelope.is_some())
                + usize::from(f.error.is_some());
            if bodies != 1 {
                return Err(not_configured(format!(
                    "fixtures {} response {i}: needs exactly one of `text`, `envelope` and `error`",
                    path.display()
                )));
            }
        }
        Ok(ScriptedProvider {
            path: path.to_path_buf(),
            queue: Mutex::new(file.responses.into_iter().map(Some).collect()),
        })
    }

    /// Responses not used yet.
    pub fn remaining(&self) -> usize {
        self.queue.lock().map(|q| q.iter().flatten().count()).unwrap_or(0)
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
        _ => ProviderFailure::Status,
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn is_offline(&self) -> bool {
        true
    }

    fn complete(&self, request: &PromptRequest) -> Result<ProviderResponse> {
        let started = Instant::now();
        let fixture = {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue
                .iter_mut()
                .find(|slot| {
                    slot.as_ref().is_some_and(|f| {
                        f.contract_id.as_ref().is_none_or(|id| id == &request.contract_id)
                    })
                })
                .and_then(Option::take)
        };
        let Some(fixture) = fixture else {
            let message = format!(
                "{} has no response left for {}@{}; add one to the fixtures",
                self.path.display(),
                request.contract_id,
                request.contract_version
            );
            return Err(Error::provider("scripted", ProviderFailure::ScriptExhausted, message));
        };
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
        Ok(ProviderResponse {
            body,
            finish_reason: Some(
                fixture.finish_reason.as_deref().map_or(FinishReason::Stop, FinishReason::from_api),
            ),
            usage: fixture.usage,
            latency: started.elapsed().max(Duration::from_micros(1)),
            model: Some("scripted".into()),
            attempts: 1,
        })
    }
}
