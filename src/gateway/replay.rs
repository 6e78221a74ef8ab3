//! The replay provider: answers from a recorded cassette, with a `record` mode around a
//! real provider, so a team records once and runs CI offline.
//!
//! A recording is keyed by contract id + version + the hash of the rendered messages
//! ([`prompt_hash`]): a changed prompt, contract or version is a miss (`replay_miss`), never
//! a stale answer. The cassette is one JSON file, rewritten atomically after each
//! recording:
//!
//! ```json
//! { "cassette_version": 1, "entries": [ { "key": "PRC-CLASSIFY-001@1.0.0#3f2a…",
//!   "contract_id": "PRC-CLASSIFY-001", "contract_version": "1.0.0", "prompt_hash": "3f2a…",
//!   "body": "…", "finish_reason": "stop", "usage": {…}, "recorded_from": "openai" } ] }
//! ```
//!
//! A reply that called tools (SPEC §15) records them in `tool_calls` (`[{id, name,
//! arguments}]`). A request after such a reply carries the earlier rounds of tool use, and
//! its key adds their hash (`…#<prompt hash>+<turns hash>`), so each round has its own
//! recording.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, ProviderFailure, Result};
use crate::gateway::{
    FinishReason, PromptRequest, Provider, ProviderResponse, ResponseBody, ToolCall, Usage,
    prompt_hash,
};

/// Replay only, or record through a real provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Replay,
    Record,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Recording {
    key: String,
    contract_id: String,
    contract_version: String,
    prompt_hash: String,
    /// A string (text) or an object (envelope).
    body: Value,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    recorded_from: Option<String>,
    /// Tools the model called instead of answering.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall>,
}

#[derive(Serialize, Deserialize)]
struct Cassette {
    cassette_version: u32,
    entries: Vec<Recording>,
}

/// Answers from a cassette; in record mode, asks `inner` and records the answer.
pub struct ReplayProvider {
    path: PathBuf,
    mode: Mode,
    inner: Option<Arc<dyn Provider>>,
    entries: Mutex<BTreeMap<String, Recording>>,
}

impl std::fmt::Debug for ReplayProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayProvider")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

fn fail(failure: ProviderFailure, message: String) -> Error {
    Error::provider("replay", failure, message)
}

/// The key of a request in a cassette.
pub fn key_of(request: &PromptRequest) -> String {
    let mut key = format!(
        "{}@{}#{}",
        request.contract_id,
        request.contract_version,
        prompt_hash(&request.messages)
    );
    if !request.turns.is_empty() {
        let turns = serde_json::to_value(&request.turns).unwrap_or(Value::Null);
        let hash = crate::digest::sha256_hex(crate::digest::canonical_json(&turns).as_bytes());
        key.push('+');
        key.push_str(&hash);
    }
    key
}

impl ReplayProvider {
    /// Opens a cassette. In replay mode it must exist; in record mode it is created.
    pub fn open(
        path: &Path,
        mode: Mode,
        inner: Option<Arc<dyn Provider>>,
    ) -> Result<ReplayProvider> {
        if mode == Mode::Record && inner.is_none() {
            return Err(fail(
                ProviderFailure::NotConfigured,
                "record mode needs a real provider to record from (record_with)".into(),
            ));
        }
        let mut entries = BTreeMap::new();
        if crate::confine::target_of(path).is_some() {
            let doc = crate::document::load(path, None).map_err(|e| {
                fail(ProviderFailure::NotConfigured, format!("cannot read cassette: {e}"))
            })?;
            let cassette = Cassette::deserialize(&doc.value).map_err(|e| {
                fail(
                    ProviderFailure::NotConfigured,
                    format!("cassette {} is malformed: {e}", path.display()),
                )
            })?;
            for r in cassette.entries {
                entries.insert(r.key.clone(), r);
            }
        } else if mode == Mode::Replay {
            return Err(fail(
                ProviderFailure::NotConfigured,
                format!(
                    "cassette {} does not exist; record it first (mode = \"record\")",
                    path.display()
                ),
            ));
        }
        Ok(ReplayProvider { path: path.to_path_buf(), mode, inner, entries: Mutex::new(entries) })
    }

    /// Adds one recording to the cassette on disk: under a lock on `<cassette>.lock`, the
    /// file is re-read and merged, so recorders running at once (`--jobs`, several
    /// processes) lose nothing.
    fn save(&self, recording: &Recording) -> Result<()> {
        let lock_path = self.path.with_extension("lock");
        let lock = crate::confine::open_for_update(&lock_path, false)?;
        lock.lock().map_err(|e| Error::io(&lock_path, e))?;
        let mut entries = BTreeMap::new();
        if crate::confine::target_of(&self.path).is_some() {
            let doc = crate::document::load(&self.path, None)?;
            if let Ok(cassette) = Cassette::deserialize(&doc.value) {
                for r in cassette.entries {
                    entries.insert(r.key.clone(), r);
                }
            }
        }
        entries.insert(recording.key.clone(), recording.clone());
        let cassette = Cassette { cassette_version: 1, entries: entries.into_values().collect() };
        let mut text = serde_json::to_string_pretty(&cassette).unwrap_or_default();
        text.push('\n');
        let written = crate::registry::store::write_atomic(&self.path, text.as_bytes());
        let _ = lock.unlock();
        written
    }
}

impl Provider for ReplayProvider {
    fn name(&self) -> &str {
        match self.mode {
            Mode::Replay => "replay",
            Mode::Record => "replay-record",
        }
    }

    fn supports_system_messages(&self) -> bool {
        self.inner.as_ref().is_none_or(|p| p.supports_system_messages())
    }

    fn is_offline(&self) -> bool {
        self.mode == Mode::Replay
    }

    fn complete(&self, request: &PromptRequest) -> Result<ProviderResponse> {
        let started = Instant::now();
        let key = key_of(request);
        if self.mode == Mode::Replay {
            let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            let Some(r) = entries.get(&key) else {
                return Err(fail(
                    ProviderFailure::ReplayMiss,
                    format!(
                        "{} has no recording for {}@{} with this prompt (hash {}); re-record the cassette",
                        self.path.display(),
                        request.contract_id,
                        request.contract_version,
                        prompt_hash(&request.messages)
                    ),
                ));
            };
            let body = match &r.body {
                Value::String(s) => ResponseBody::Text(s.clone()),
                other => ResponseBody::Envelope(other.clone()),
            };
            return Ok(ProviderResponse {
                body,
                finish_reason: r.finish_reason.as_deref().map(FinishReason::from_api),
                usage: r.usage,
                latency: started.elapsed(),
                model: Some("replay".into()),
                attempts: 1,
                tool_calls: r.tool_calls.clone(),
            });
        }
        let inner = self.inner.as_ref().ok_or_else(|| {
            fail(ProviderFailure::NotConfigured, "no provider to record from".into())
        })?;
        let response = inner.complete(request)?;
        let recording = Recording {
            key: key.clone(),
            contract_id: request.contract_id.clone(),
            contract_version: request.contract_version.clone(),
            prompt_hash: prompt_hash(&request.messages),
            body: match &response.body {
                ResponseBody::Text(t) => Value::String(t.clone()),
                ResponseBody::Envelope(v) => v.clone(),
            },
            finish_reason: response.finish_reason.as_ref().map(|f| match f {
                FinishReason::Stop => "stop".to_string(),
                FinishReason::Length => "length".to_string(),
                FinishReason::ToolUse => "tool_use".to_string(),
                FinishReason::Other(o) => o.clone(),
            }),
            usage: response.usage,
            recorded_from: Some(inner.name().to_string()),
            tool_calls: response.tool_calls.clone(),
        };
        self.save(&recording)?;
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).insert(key, recording);
        Ok(response)
    }
}
