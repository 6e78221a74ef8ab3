//! The replay provider: answers from a recorded cassette, with a `record` mode around a
//! real provider, so a team records once and runs CI offline.
//!
//! A recording is keyed by contract id + version + the model + the hash of the rendered
//! messages ([`prompt_hash`]): a changed prompt, contract, version or model is a miss
//! (`replay_miss`), never a stale answer — two models never share a recording. The model
//! is the one the replay provider is configured for (its `model`, else the model of the
//! provider it records with); a provider that names no model matches recordings whatever
//! their model, as long as only one model's recording fits. The cassette is one JSON file,
//! rewritten atomically after each recording:
//!
//! ```json
//! { "cassette_version": 2, "entries": [ { "key": "PRC-CLASSIFY-001@1.0.0#gpt-4o-mini#3f2a…",
//!   "contract_id": "PRC-CLASSIFY-001", "contract_version": "1.0.0", "model": "gpt-4o-mini",
//!   "prompt_hash": "3f2a…", "body": "…", "finish_reason": "stop", "usage": {…},
//!   "recorded_from": "openai" } ] }
//! ```
//!
//! A recording keeps the call's `latency_ms`, which replaying reports as the call's
//! latency (an evaluation's p50/p95 in CI are the recorded model's).
//!
//! Cassettes of version 1 (recorded before the model was in the key) stay readable: their
//! recordings answer only a replay provider that names no model; one that names a model
//! misses them with a message saying to re-record.
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

/// The cassette format this pactum writes (1: recordings without a model).
pub const CASSETTE_VERSION: u32 = 2;

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
    /// The model the recording is of; absent in version-1 cassettes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    prompt_hash: String,
    /// A string (text) or an object (envelope).
    body: Value,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// How long the recorded call took; replayed as the call's latency, so an evaluation
    /// in CI reports the model's latency, not the cassette's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency_ms: Option<u64>,
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

/// The recordings of a cassette: by key, and by the key without the model (to tell a
/// request for another model from a request nobody recorded).
#[derive(Default)]
struct Recordings {
    by_key: BTreeMap<String, Recording>,
    by_exchange: BTreeMap<String, Vec<String>>,
}

impl Recordings {
    fn insert(&mut self, r: Recording) {
        let keys = self.by_exchange.entry(exchange_key(&r.key, r.model.as_deref())).or_default();
        if !keys.contains(&r.key) {
            keys.push(r.key.clone());
        }
        self.by_key.insert(r.key.clone(), r);
    }

    /// The recordings of one exchange, whatever their model.
    fn of_exchange(&self, exchange: &str) -> Vec<&Recording> {
        self.by_exchange
            .get(exchange)
            .map(|keys| keys.iter().filter_map(|k| self.by_key.get(k)).collect())
            .unwrap_or_default()
    }
}

/// Answers from a cassette; in record mode, asks `inner` and records the answer.
pub struct ReplayProvider {
    path: PathBuf,
    mode: Mode,
    inner: Option<Arc<dyn Provider>>,
    /// The model recordings are keyed on (see the module docs).
    model: Option<String>,
    entries: Mutex<Recordings>,
}

impl std::fmt::Debug for ReplayProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayProvider")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

fn fail(failure: ProviderFailure, message: String) -> Error {
    Error::provider("replay", failure, message)
}

/// The key of a request in a cassette, for `model` (none: the key of a version-1
/// cassette, which did not record models).
pub fn key_of(request: &PromptRequest, model: Option<&str>) -> String {
    let mut key = format!("{}@{}#", request.contract_id, request.contract_version);
    if let Some(model) = model {
        key.push_str(model);
        key.push('#');
    }
    key.push_str(&prompt_hash(&request.messages));
    if !request.turns.is_empty() {
        let turns = serde_json::to_value(&request.turns).unwrap_or(Value::Null);
        let hash = crate::digest::sha256_hex(crate::digest::canonical_json(&turns).as_bytes());
        key.push('+');
        key.push_str(&hash);
    }
    key
}

/// A recording's key with its model taken out: the exchange it answers.
fn exchange_key(key: &str, model: Option<&str>) -> String {
    match model {
        Some(m) => key.replacen(&format!("#{m}#"), "#", 1),
        None => key.to_string(),
    }
}

/// Reads a cassette's recordings (both formats).
fn read_cassette(path: &Path) -> Result<Vec<Recording>> {
    let doc = crate::document::load(path, None)
        .map_err(|e| fail(ProviderFailure::NotConfigured, format!("cannot read cassette: {e}")))?;
    let cassette = Cassette::deserialize(&doc.value).map_err(|e| {
        fail(
            ProviderFailure::NotConfigured,
            format!("cassette {} is malformed: {e}", path.display()),
        )
    })?;
    if cassette.cassette_version > CASSETTE_VERSION {
        return Err(fail(
            ProviderFailure::NotConfigured,
            format!(
                "cassette {} has cassette_version {}, newer than this pactum reads ({CASSETTE_VERSION}); update pactum",
                path.display(),
                cassette.cassette_version
            ),
        ));
    }
    Ok(cassette.entries)
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
        let mut entries = Recordings::default();
        if crate::confine::target_of(path).is_some() {
            for r in read_cassette(path)? {
                entries.insert(r);
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
        let model = inner.as_ref().and_then(|p| p.model()).map(str::to_string);
        Ok(ReplayProvider {
            path: path.to_path_buf(),
            mode,
            inner,
            model,
            entries: Mutex::new(entries),
        })
    }

    /// Keys recordings on `model` (an empty one names none).
    #[must_use]
    pub fn with_model(mut self, model: Option<String>) -> ReplayProvider {
        if let Some(m) = model.filter(|m| !m.trim().is_empty()) {
            self.model = Some(m);
        }
        self
    }

    /// The cassette file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds one recording to the cassette on disk: under a lock on `.<cassette>.lock` beside
    /// it (hidden, and ignored by the `.*.lock` line `init` writes to `.gitignore`), the file
    /// is re-read and merged, so recorders running at once (`--jobs`, several processes)
    /// lose nothing.
    fn save(&self, recording: &Recording) -> Result<()> {
        let name = self.path.file_name().unwrap_or_default().to_string_lossy();
        let lock_path = self.path.with_file_name(format!(".{name}.lock"));
        let lock = crate::confine::open_for_update(&lock_path, false)?;
        lock.lock().map_err(|e| Error::io(&lock_path, e))?;
        let mut entries = BTreeMap::new();
        if crate::confine::target_of(&self.path).is_some()
            && let Ok(recordings) = read_cassette(&self.path)
        {
            for r in recordings {
                entries.insert(r.key.clone(), r);
            }
        }
        entries.insert(recording.key.clone(), recording.clone());
        let cassette = Cassette {
            cassette_version: CASSETTE_VERSION,
            entries: entries.into_values().collect(),
        };
        let mut text = serde_json::to_string_pretty(&cassette).unwrap_or_default();
        text.push('\n');
        let written = crate::registry::store::write_atomic(&self.path, text.as_bytes());
        let _ = lock.unlock();
        written
    }

    /// The recording that answers `request`, or the `replay_miss` saying why none does.
    fn recorded(&self, request: &PromptRequest) -> Result<Recording> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = entries.by_key.get(&key_of(request, self.model.as_deref())) {
            return Ok(r.clone());
        }
        let found = entries.of_exchange(&key_of(request, None));
        let subject = format!(
            "{} has no recording for {}@{}",
            self.path.display(),
            request.contract_id,
            request.contract_version
        );
        let hash = prompt_hash(&request.messages);
        let models = |list: &[&Recording]| -> Vec<String> {
            let mut names: Vec<String> = list
                .iter()
                .map(|r| r.model.clone().unwrap_or_else(|| "none (cassette_version 1)".into()))
                .collect();
            names.sort();
            names.dedup();
            names
        };
        let message = match (&self.model, found.as_slice()) {
            (None, [one]) => return Ok((*one).clone()),
            (None, []) | (Some(_), []) => format!(
                "{subject} with this prompt (hash {hash}); re-record the cassette (mode = \"record\")"
            ),
            (None, several) => format!(
                "{subject} that names no model, and this prompt was recorded for several models ({}); name the model to replay (PACTUM_MODEL, or `model` of the replay provider in pactum.toml)",
                models(several).join(", ")
            ),
            (Some(model), list) if list.iter().all(|r| r.model.is_none()) => format!(
                "{subject} with model {model}: the cassette recorded this prompt before recordings named their model (cassette_version 1); re-record the cassette so it says which model answered"
            ),
            (Some(model), list) => format!(
                "{subject} with model {model} and this prompt (hash {hash}); it was recorded for {}; re-record the cassette for {model}, or replay with the model it was recorded for",
                models(list).join(", ")
            ),
        };
        Err(fail(ProviderFailure::ReplayMiss, message))
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

    fn default_jobs(&self) -> usize {
        match &self.inner {
            Some(inner) if self.mode == Mode::Record => inner.default_jobs(),
            _ => std::thread::available_parallelism().map(usize::from).unwrap_or(1),
        }
    }

    fn is_offline(&self) -> bool {
        self.mode == Mode::Replay
    }

    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    fn complete(&self, request: &PromptRequest) -> Result<ProviderResponse> {
        let started = Instant::now();
        if self.mode == Mode::Replay {
            let r = self.recorded(request)?;
            let body = match &r.body {
                Value::String(s) => ResponseBody::Text(s.clone()),
                other => ResponseBody::Envelope(other.clone()),
            };
            return Ok(ProviderResponse {
                body,
                finish_reason: r.finish_reason.as_deref().map(FinishReason::from_api),
                usage: r.usage,
                latency: r
                    .latency_ms
                    .map_or_else(|| started.elapsed(), std::time::Duration::from_millis),
                latency_recorded: r.latency_ms.is_some(),
                model: Some(r.model.unwrap_or_else(|| "replay".into())),
                attempts: 1,
                tool_calls: r.tool_calls,
            });
        }
        let inner = self.inner.as_ref().ok_or_else(|| {
            fail(ProviderFailure::NotConfigured, "no provider to record from".into())
        })?;
        let response = inner.complete(request)?;
        let model = self.model.clone();
        let key = key_of(request, model.as_deref());
        let recording = Recording {
            key,
            contract_id: request.contract_id.clone(),
            contract_version: request.contract_version.clone(),
            model,
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
            latency_ms: Some(response.latency.as_millis() as u64),
            recorded_from: Some(inner.name().to_string()),
            tool_calls: response.tool_calls.clone(),
        };
        self.save(&recording)?;
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).insert(recording);
        Ok(response)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;
    use crate::gateway::{Boundary, Message};
    use serde_json::json;

    /// A model that answers its own name.
    struct Named(&'static str);

    impl Provider for Named {
        fn name(&self) -> &str {
            "named"
        }
        fn model(&self) -> Option<&str> {
            Some(self.0)
        }
        fn complete(&self, _: &PromptRequest) -> Result<ProviderResponse> {
            Ok(ProviderResponse {
                model: Some(self.0.to_string()),
                ..ProviderResponse::text(format!("answer of {}", self.0))
            })
        }
    }

    fn request() -> PromptRequest {
        PromptRequest {
            contract_id: "PRC-T-001".into(),
            contract_version: "1.0.0".into(),
            prompt_pack_id: "PRM-T-001".into(),
            prompt_pack_version: "1.0.0".into(),
            boundary: Boundary {
                max_tokens: 8,
                temperature: 0.0,
                provider_id: None,
                structured_output: None,
            },
            input_schema: None,
            output_schema: None,
            template_variables: json!({}),
            messages: vec![Message::user("Classify: hello")],
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

    fn text(r: &ProviderResponse) -> String {
        match &r.body {
            ResponseBody::Text(t) => t.clone(),
            ResponseBody::Envelope(v) => v.to_string(),
        }
    }

    fn record(path: &Path, model: &'static str) {
        let p = ReplayProvider::open(path, Mode::Record, Some(Arc::new(Named(model)))).unwrap();
        assert_eq!(p.model(), Some(model));
        p.complete(&request()).unwrap();
    }

    fn replay(path: &Path, model: Option<&str>) -> Result<ProviderResponse> {
        ReplayProvider::open(path, Mode::Replay, None)
            .unwrap()
            .with_model(model.map(str::to_string))
            .complete(&request())
    }

    #[test]
    fn two_models_never_share_a_recording() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cassette.json");
        record(&path, "model-a");
        let e = replay(&path, Some("model-b")).unwrap_err();
        assert_eq!(e.code(), Code::ReplayMiss);
        assert!(e.to_string().contains("with model model-b"), "{e}");
        assert!(e.to_string().contains("it was recorded for model-a"), "{e}");
        record(&path, "model-b");
        assert_eq!(text(&replay(&path, Some("model-a")).unwrap()), "answer of model-a");
        assert_eq!(text(&replay(&path, Some("model-b")).unwrap()), "answer of model-b");
        // The model that answered is the recorded one.
        assert_eq!(replay(&path, Some("model-b")).unwrap().model.as_deref(), Some("model-b"));
        let cassette: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(cassette["cassette_version"], CASSETTE_VERSION);
        assert_eq!(cassette["entries"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_provider_naming_no_model_takes_the_one_model_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cassette.json");
        record(&path, "model-a");
        assert_eq!(text(&replay(&path, None).unwrap()), "answer of model-a");
        record(&path, "model-b");
        let e = replay(&path, None).unwrap_err();
        assert_eq!(e.code(), Code::ReplayMiss);
        assert!(e.to_string().contains("several models (model-a, model-b)"), "{e}");
    }

    #[test]
    fn a_version_1_cassette_reads_and_says_to_re_record_for_a_model() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cassette.json");
        let key = key_of(&request(), None);
        let entry = json!({"key": key, "contract_id": "PRC-T-001", "contract_version": "1.0.0",
                           "prompt_hash": prompt_hash(&request().messages), "body": "old answer",
                           "finish_reason": "stop", "usage": null, "recorded_from": "openai"});
        std::fs::write(&path, json!({"cassette_version": 1, "entries": [entry]}).to_string())
            .unwrap();
        assert_eq!(text(&replay(&path, None).unwrap()), "old answer");
        let e = replay(&path, Some("gpt-4o")).unwrap_err();
        assert_eq!(e.code(), Code::ReplayMiss);
        assert!(e.to_string().contains("before recordings named their model"), "{e}");
        std::fs::write(&path, json!({"cassette_version": 3, "entries": []}).to_string()).unwrap();
        let e = ReplayProvider::open(&path, Mode::Replay, None).unwrap_err();
        assert!(e.to_string().contains("newer than this pactum reads"), "{e}");
    }
}
