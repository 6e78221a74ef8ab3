//! The LLM gateway: one [`Provider`] trait, many providers (SPEC §8.5).
//!
//! Every model call in pactum goes through a [`Provider`]. The request is built from the
//! resolved contract (ids, versions, boundary, schemas, rendered messages, work-order ids);
//! the response is text or an envelope object, with finish reason, usage and latency.
//!
//! Real providers: [`openai`] (any OpenAI-compatible chat-completions server) and
//! [`anthropic`] (the messages API), both over [`http`] with retries and backoff.
//! Offline providers, for demos and CI and clearly named as such: [`scripted`] (fixture
//! file), [`replay`] (recorded cassette, with a record mode around a real provider) and
//! [`dry_run`] (a minimal schema-valid answer made from `output_schema`).

use std::time::Duration;

use serde_json::Value;

use crate::error::Result;

pub mod anthropic;
pub mod dry_run;
pub mod http;
pub mod openai;
pub mod replay;
pub mod scripted;
pub mod select;

/// The provider kinds a `pactum.toml` entry or `--provider` can name.
pub const KINDS: &[&str] = &["openai", "anthropic", "scripted", "replay", "dry-run"];

/// Who a chat message is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One rendered chat message.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Message { role: Role::System, content: content.into() }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Message { role: Role::User, content: content.into() }
    }
}

/// The call parameters a contract's `boundary` fixes (SPEC §3.1).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Boundary {
    pub max_tokens: u32,
    pub temperature: f64,
    pub provider_id: Option<String>,
    /// A JSON Schema handed to the provider as its structured-output format.
    pub structured_output: Option<Value>,
}

/// A tool offered to the model (SPEC §15): the providers send it in their own wire format.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema for the call's arguments (an object).
    pub input_schema: Value,
}

/// One tool call the model made.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; tool results answer it.
    pub id: String,
    pub name: String,
    /// The call's arguments (an object).
    pub arguments: Value,
}

/// The answer to one tool call, as the model will see it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] it answers.
    pub id: String,
    pub content: String,
    /// True when the call failed (unknown key, path outside the context folder, ...).
    pub is_error: bool,
}

/// One round of tool use after the rendered messages: what the model said and asked, and
/// the answers it got.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolTurn {
    /// Text the model sent along with its calls (often empty).
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub results: Vec<ToolResult>,
}

/// Everything a provider needs for one call, built from the resolved contract.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PromptRequest {
    pub contract_id: String,
    pub contract_version: String,
    pub prompt_pack_id: String,
    pub prompt_pack_version: String,
    pub boundary: Boundary,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    pub template_variables: Value,
    /// Rendered messages, system first when there is one.
    pub messages: Vec<Message>,
    pub work_order_id: Option<String>,
    pub session_id: Option<String>,
    pub agent_id: Option<String>,
    pub agent_class: Option<String>,
    pub tier: Option<String>,
    /// Per-request timeout (work order `constraints.timeout_s`); `None` = provider default.
    pub timeout: Option<Duration>,
    /// Tools offered to the model (SPEC §15); empty for most exchanges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Earlier rounds of tool use in this exchange, after `messages`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<ToolTurn>,
}

/// The body of a provider's answer: plain text, or an envelope object (SPEC §6.3 step 0)
/// that must carry a string `text` (and may carry `files`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum ResponseBody {
    Text(String),
    Envelope(Value),
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    /// The reply was cut off at `max_tokens`.
    Length,
    ToolUse,
    Other(String),
}

impl FinishReason {
    /// Maps the names OpenAI and Anthropic use.
    pub fn from_api(reason: &str) -> FinishReason {
        match reason {
            "stop" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "tool_calls" | "tool_use" => FinishReason::ToolUse,
            other => FinishReason::Other(other.to_string()),
        }
    }
}

/// Token usage as the provider reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Usage {
    /// Prompt plus completion tokens, saturating: a provider reporting numbers near 2^64
    /// cannot wrap the sum to something small and slip past a token budget (SPEC §18).
    pub fn total(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// Both counts added, saturating.
    #[must_use]
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
            completion_tokens: self.completion_tokens.saturating_add(other.completion_tokens),
        }
    }
}

/// A provider-reported token count: an integer as it is, a fractional or huge number
/// saturated (`1e30` counts as `u64::MAX`, not as nothing), anything else 0.
pub fn token_count(value: Option<&Value>) -> u64 {
    // `as` from f64 saturates (and maps NaN and negatives to 0).
    value.and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f as u64))).unwrap_or(0)
}

/// A provider's answer to one [`PromptRequest`].
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ProviderResponse {
    pub body: ResponseBody,
    pub finish_reason: Option<FinishReason>,
    /// `None` when the provider did not report usage.
    pub usage: Option<Usage>,
    #[serde(serialize_with = "serialize_millis")]
    pub latency: Duration,
    /// The latency is a recording's (a replayed cassette's) or a script's, not how long
    /// this call took: the ledger says so (`latency_recorded`), and a span does not
    /// present it as measured (SPEC §22).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latency_recorded: bool,
    /// The model that answered, when the provider says.
    pub model: Option<String>,
    /// HTTP attempts made (1 for offline providers).
    pub attempts: u32,
    /// Tools the model asked to call instead of answering (SPEC §15); the exchange answers
    /// them and calls again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

impl ProviderResponse {
    /// A finished text reply with nothing else known: no usage, no model, answered at once
    /// in one attempt (what an offline or hand-written provider returns).
    pub fn text(text: impl Into<String>) -> ProviderResponse {
        ProviderResponse {
            body: ResponseBody::Text(text.into()),
            finish_reason: Some(FinishReason::Stop),
            usage: None,
            latency: Duration::ZERO,
            latency_recorded: false,
            model: None,
            attempts: 1,
            tool_calls: Vec::new(),
        }
    }
}

fn serialize_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

/// One way of answering prompt requests.
pub trait Provider: Send + Sync {
    /// The provider's name as it appears in results and the ledger (`openai`, `scripted`, ...).
    fn name(&self) -> &str;

    /// What kind of provider it is (`openai`, `anthropic`, ...), whatever its table in
    /// pactum.toml is called: a span's `gen_ai.provider.name` (SPEC §22).
    fn kind(&self) -> &str {
        self.name()
    }

    /// Whether the provider takes a separate system message. When it does not, the
    /// executor joins system and user sections into one message (SPEC §3.2).
    fn supports_system_messages(&self) -> bool {
        true
    }

    /// True for the offline providers (scripted, replay, dry-run).
    fn is_offline(&self) -> bool {
        false
    }

    /// How many calls at once suit this provider when nobody says (`pactum eval --jobs`):
    /// a few for an HTTP API, one for a script that answers in order.
    fn default_jobs(&self) -> usize {
        4
    }

    /// The model this provider is configured to ask, when it names one (replay cassettes
    /// key their recordings on it).
    fn model(&self) -> Option<&str> {
        None
    }

    /// Answers one request.
    fn complete(&self, request: &PromptRequest) -> Result<ProviderResponse>;
}

/// SHA-256 of the rendered messages' canonical JSON: identifies a prompt in the ledger
/// and in replay cassettes.
pub fn prompt_hash(messages: &[Message]) -> String {
    let value = serde_json::to_value(messages).unwrap_or(Value::Null);
    crate::digest::sha256_hex(crate::digest::canonical_json(&value).as_bytes())
}

/// A rough offline token count (about four characters per token, plus a little per
/// message), used only to refuse calls a budget cannot pay for; providers' reported usage
/// is what gets charged.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(|m| (m.content.len() as u64).div_ceil(4) + 4).sum::<u64>() + 2
}

impl PromptRequest {
    /// The prompt tokens this request sends, estimated as [`estimate_tokens`] does: its
    /// messages and every earlier tool round it carries (the model's text and calls, the
    /// tools' results). The one estimate of a request, for the budget's check before a
    /// call and for charging a reply whose provider reports no usage.
    pub fn estimated_prompt_tokens(&self) -> u64 {
        let rounds: u64 = self
            .turns
            .iter()
            .map(|t| {
                let calls: u64 = t
                    .calls
                    .iter()
                    .map(|c| {
                        (c.name.len() as u64 + c.arguments.to_string().len() as u64).div_ceil(4)
                    })
                    .sum();
                let results: u64 =
                    t.results.iter().map(|r| (r.content.len() as u64).div_ceil(4)).sum();
                (t.text.len() as u64).div_ceil(4) + calls + results
            })
            .sum();
        estimate_tokens(&self.messages) + rounds
    }
}

/// A secret (API key). Its `Debug` and `Display` never show the value. Clones share the
/// value and its masker, which is built once, at the first [`Secret::scrub`], and reused
/// for every text after it (a reply's strings are scrubbed one by one: building the masker
/// per string cost more than the rest of an exchange over HTTP).
#[derive(Clone)]
pub struct Secret(std::sync::Arc<SecretValue>);

struct SecretValue {
    value: String,
    masker: std::sync::OnceLock<crate::redact::Redactor>,
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.0.value == other.0.value
    }
}

impl Eq for Secret {}

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(std::sync::Arc::new(SecretValue {
            value: value.into(),
            masker: std::sync::OnceLock::new(),
        }))
    }

    /// The secret itself, for the one place that needs it (a request header).
    pub fn expose(&self) -> &str {
        &self.0.value
    }

    /// Replaces every occurrence of the secret in `text` (e.g. an error body the server
    /// echoed), plain, URL-encoded or base64-encoded, so it can never reach a message, log
    /// or ledger ([`crate::redact`]).
    pub fn scrub(&self, text: &str) -> String {
        let masker = self.0.masker.get_or_init(|| {
            let r = crate::redact::Redactor::new();
            r.add(&self.0.value);
            r
        });
        masker.redact(text).into_owned()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod secret_tests {
    use super::*;

    /// Issue 40: a key's masker is built once and reused for every text it scrubs (a
    /// reply's strings one by one), in every clone of the key.
    #[test]
    fn a_secret_builds_its_masker_once_for_every_text() {
        let key = Secret::new("sk-test-0123456789abcdef");
        let clone = key.clone();
        for i in 0..50 {
            let text = format!("echo {i}: sk-test-0123456789abcdef");
            assert_eq!(key.scrub(&text), format!("echo {i}: [redacted]"));
            assert_eq!(clone.scrub("none"), "none");
        }
        let masker = key.0.masker.get().expect("built at the first scrub");
        assert_eq!(masker.automaton_builds(), 1);
    }
}
