//! The OpenAI-compatible provider: `POST {base_url}/chat/completions` (SPEC §8.5, §13).
//!
//! Works with OpenAI and with servers that speak its chat-completions API: vLLM, Ollama,
//! llama.cpp's `llama-server`, LM Studio. Local servers usually need no key, so the
//! `Authorization: Bearer` header is sent only when [`OpenAiConfig::api_key`] is set.
//!
//! **Request.** `{model, messages: [{role, content}], max_tokens, temperature}`. When the
//! contract sets `boundary.structured_output`, the schema goes in
//! `response_format: {"type": "json_schema", "json_schema": {"name", "schema", "strict": false}}`:
//! the `json_schema` response format is the form OpenAI, vLLM, llama.cpp, Ollama (0.5+) and
//! LM Studio all document for schema-constrained output. `name` is the contract id
//! reduced to the characters OpenAI allows (`a-z A-Z 0-9 _ -`, at most 64). `strict` is
//! `false` because OpenAI's strict mode rejects schemas that do not list every property as
//! `required` and set `additionalProperties: false` everywhere, which contract schemas need
//! not do; the executor validates the output against the schema anyway.
//!
//! **`max_tokens`.** OpenAI deprecated `max_tokens` in favour of `max_completion_tokens`, and
//! its reasoning models (o-series, GPT-5) reject `max_tokens` with 400
//! `unsupported_parameter`. Most compatible servers still know only `max_tokens`, so that is
//! the default; set [`OpenAiConfig::max_completion_tokens`] for the newer OpenAI models.
//!
//! **Response.** `choices[0].message.content` is the body: a string as it is; an array of
//! content parts (`{"type": "text", "text": ...}`, as some compatible servers send) as its
//! text parts joined; an object as an API-level envelope (SPEC §6.3 step 0), which must
//! carry a string `text` (and may carry `files`). A missing or null content with a
//! `refusal` is an error quoting the refusal. `choices[0].finish_reason`
//! goes through [`FinishReason::from_api`], `usage.prompt_tokens` / `completion_tokens` become
//! [`Usage`], and `model` names the model that answered.
//!
//! **Tools (SPEC §15).** Tools offered go in `tools: [{"type": "function", "function":
//! {name, description, parameters}}]`. A reply's `choices[0].message.tool_calls` (`{id,
//! type: "function", function: {name, arguments}}`, `arguments` a JSON string; content
//! then usually null) become [`ToolCall`]s; arguments that are not JSON are kept as the
//! string, so the tool answers with an error the model sees. Earlier rounds follow the
//! rendered messages as the API defines them: an `assistant` message with the
//! `tool_calls`, then one `{"role": "tool", "tool_call_id", "content"}` message per result.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::authority::Permit;
use crate::error::{ProviderFailure, Result};
use crate::gateway::http::{self, ApiKind, Endpoint, HttpReply, RetryPolicy, SettingNames};
use crate::gateway::{
    FinishReason, PromptRequest, Provider, ProviderResponse, ResponseBody, Secret, ToolCall, Usage,
};

/// The public OpenAI API.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// How long one attempt may take unless the work order sets `constraints.timeout_s`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

const KIND: ApiKind = ApiKind {
    settings: SettingNames { base_url: "OPENAI_BASE_URL", api_key: "OPENAI_API_KEY" },
    answer: "a chat completion",
    api: "an OpenAI-compatible API",
};

/// Settings of an OpenAI-compatible provider.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenAiConfig {
    /// The provider's name in results and the ledger.
    pub name: String,
    /// The API root, ending before `/chat/completions`.
    /// Its origin is the only one the provider sends to: a [`Permit`] says who chose it
    /// (`Permit::application` for a library caller's own URL).
    pub base_url: Permit<String>,
    /// Sent as a bearer token when set (and not empty).
    pub api_key: Option<Secret>,
    /// Why a key the environment holds was not given to this provider (its base URL comes
    /// from a repository file the environment does not confirm); told on a refusal.
    pub key_withheld: Option<String>,
    /// The model to ask; required.
    pub model: String,
    /// How long one attempt may take unless the request sets its own timeout.
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// Send the token limit as `max_completion_tokens` instead of `max_tokens`.
    pub max_completion_tokens: bool,
}

impl Default for OpenAiConfig {
    /// Name `openai`, the public API, no key, no model, 120 s timeout, default retries,
    /// `max_tokens`.
    fn default() -> Self {
        OpenAiConfig {
            name: "openai".to_string(),
            base_url: Permit::pactum(DEFAULT_BASE_URL.to_string()),
            api_key: None,
            key_withheld: None,
            model: String::new(),
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
            max_completion_tokens: false,
        }
    }
}

/// A provider that calls an OpenAI-compatible chat-completions endpoint.
///
/// ```
/// use std::time::Duration;
/// use pactum::gateway::Provider;
/// use pactum::gateway::openai::{OpenAiConfig, OpenAiProvider};
///
/// // A local Ollama server needs no key.
/// let provider = OpenAiProvider::new(OpenAiConfig {
///     name: "ollama".to_string(),
///     // The application chose this URL itself (a repository file could not).
///     base_url: pactum::authority::Permit::application("http://localhost:11434/v1".to_string()),
///     model: "llama3.2".to_string(),
///     timeout: Duration::from_secs(300),
///     ..OpenAiConfig::default()
/// });
/// assert_eq!(provider.name(), "ollama");
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    endpoint: Endpoint,
}

impl OpenAiProvider {
    /// A provider with these settings. Missing settings are reported by
    /// [`Provider::complete`], before any request is sent.
    pub fn new(config: OpenAiConfig) -> Self {
        let endpoint = Endpoint::new(
            &config.name,
            &config.base_url,
            "chat/completions",
            config.api_key.as_ref(),
            config.timeout,
            &config.retry,
            KIND,
        )
        .with_key_withheld(config.key_withheld.clone());
        OpenAiProvider { config, endpoint }
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The JSON body of the chat-completions request.
    fn request_body(&self, request: &PromptRequest) -> Value {
        let boundary = &request.boundary;
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect();
        let mut messages = messages;
        for turn in &request.turns {
            let calls: Vec<Value> = turn
                .calls
                .iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": c.arguments.to_string()}})
                })
                .collect();
            let content = if turn.text.is_empty() { Value::Null } else { json!(turn.text) };
            messages.push(json!({"role": "assistant", "content": content, "tool_calls": calls}));
            for r in &turn.results {
                messages.push(json!({"role": "tool", "tool_call_id": r.id, "content": r.content}));
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(self.config.model));
        body.insert("messages".into(), Value::Array(messages));
        let limit =
            if self.config.max_completion_tokens { "max_completion_tokens" } else { "max_tokens" };
        body.insert(limit.into(), json!(boundary.max_tokens));
        body.insert("temperature".into(), json!(boundary.temperature));
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.input_schema}})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(schema) = &boundary.structured_output {
            body.insert(
                "response_format".into(),
                json!({
                    "type": "json_schema",
                    "json_schema": {
                        "name": schema_name(&request.contract_id),
                        "schema": schema,
                        "strict": false,
                    },
                }),
            );
        }
        Value::Object(body)
    }

    /// Reads a chat completion.
    fn parse(&self, reply: HttpReply) -> Result<ProviderResponse> {
        let endpoint = &self.endpoint;
        let body = &reply.body;
        let Some(choice) = body.get("choices").and_then(|c| c.get(0)) else {
            return Err(endpoint.missing(body, "choices[0]"));
        };
        let message = choice.get("message");
        let tool_calls = tool_calls(message);
        let content = match message.and_then(|m| m.get("content")) {
            None | Some(Value::Null) if !tool_calls.is_empty() => ResponseBody::Text(String::new()),
            Some(Value::String(text)) => ResponseBody::Text(text.clone()),
            Some(Value::Array(parts)) => ResponseBody::Text(text_parts(parts)),
            Some(Value::Object(envelope)) => {
                ResponseBody::Envelope(Value::Object(envelope.clone()))
            }
            _ => {
                let refusal = message.and_then(|m| m.get("refusal")).and_then(Value::as_str);
                return Err(match refusal {
                    Some(refusal) => endpoint.error(
                        ProviderFailure::InvalidResponse,
                        &format!(
                            "the model refused to answer: {}; rephrase the prompt or check the \
                             contract's instructions",
                            http::excerpt(refusal, endpoint.key())
                        ),
                    ),
                    None => endpoint.invalid("`choices[0].message.content` is missing"),
                });
            }
        };
        let usage = body.get("usage").filter(|u| u.is_object()).map(|u| Usage {
            prompt_tokens: crate::gateway::token_count(u.get("prompt_tokens")),
            completion_tokens: crate::gateway::token_count(u.get("completion_tokens")),
        });
        let finish_reason =
            choice.get("finish_reason").and_then(Value::as_str).map(FinishReason::from_api);
        let mut response = endpoint.response(&reply, content, finish_reason, usage);
        response.tool_calls = tool_calls;
        Ok(response)
    }
}

/// The tool calls of a chat-completion message, in order; a call without an id gets
/// `call_N`.
fn tool_calls(message: Option<&Value>) -> Vec<ToolCall> {
    let Some(calls) = message.and_then(|m| m.get("tool_calls")).and_then(Value::as_array) else {
        return Vec::new();
    };
    calls
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let function = c.get("function")?;
            let name = function.get("name")?.as_str()?.to_string();
            let arguments = match function.get("arguments") {
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                }
                Some(other) => other.clone(),
                None => json!({}),
            };
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("call_{i}"), str::to_string);
            Some(ToolCall { id, name, arguments })
        })
        .collect()
}

impl Provider for OpenAiProvider {
    fn model(&self) -> Option<&str> {
        Some(self.config.model.as_str()).filter(|m| !m.trim().is_empty())
    }

    fn name(&self) -> &str {
        &self.config.name
    }

    fn kind(&self) -> &str {
        "openai"
    }

    fn complete(&self, request: &PromptRequest) -> Result<ProviderResponse> {
        if self.config.model.trim().is_empty() {
            return Err(self.endpoint.error(
                ProviderFailure::NotConfigured,
                "no model is configured; set PACTUM_MODEL or the provider's `model` in \
                 pactum.toml",
            ));
        }
        let mut headers = Vec::new();
        if let Some(key) = self.endpoint.key() {
            headers.push(("authorization", format!("Bearer {}", key.expose())));
        }
        let body = self.request_body(request);
        let reply = self.endpoint.post(&headers, &body, request.timeout)?;
        let (attempts, latency) = (reply.attempts, reply.latency);
        self.parse(reply).map_err(|e| e.with_attempts(attempts, latency))
    }
}

/// The text of a content-parts array (`[{"type": "text", "text": ...}, ...]`), concatenated.
fn text_parts(parts: &[Value]) -> String {
    parts
        .iter()
        .filter(|p| matches!(p.get("type").and_then(Value::as_str), Some("text" | "output_text")))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

/// A `response_format` name from a contract id: `a-z A-Z 0-9 _ -` only, at most 64 long.
fn schema_name(contract_id: &str) -> String {
    let name: String = contract_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(64)
        .collect();
    if name.is_empty() { "output".to_string() } else { name }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn schema_names_keep_only_allowed_characters() {
        let check = |id: &str, want: &str| assert_eq!(schema_name(id), want, "{id}");
        check("PRC-CLASSIFY-001", "PRC-CLASSIFY-001");
        check("team.billing/summary v2", "team_billing_summary_v2");
        check("écrire", "_crire");
        check("", "output");
        assert_eq!(schema_name(&"a".repeat(100)).len(), 64);
    }
}
