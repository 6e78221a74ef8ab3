//! The Anthropic provider: `POST {base_url}/v1/messages` (SPEC §8.5, §13).
//!
//! **Request.** Headers `x-api-key`, `anthropic-version` and `content-type:
//! application/json`; body `{model, max_tokens, temperature, system?, messages}`. The
//! messages API takes system text as a top-level `system` string, so every system message
//! is joined into it (separated by a blank line); user and assistant messages go in
//! `messages` in order. An API key is required: without one the call fails with
//! `provider_not_configured` before any request is sent, as does a contract whose
//! `boundary.temperature` is above the API's 1 ([`MAX_TEMPERATURE`]; contracts allow up to
//! 2).
//!
//! **Structured output: a forced tool.** When the contract sets
//! `boundary.structured_output`, the request declares one tool, [`STRUCTURED_OUTPUT_TOOL`],
//! whose `input_schema` is the schema, and forces it with
//! `tool_choice: {"type": "tool", "name": ...}`. The model then answers with a `tool_use`
//! block whose `input` fits the schema; that `input`, serialized to a JSON string, is the
//! response body, and the `tool_use` stop reason is reported as [`FinishReason::Stop`]
//! (the tool is only the carrier of the answer). Anthropic also documents JSON outputs
//! (`output_config.format` with a `json_schema`, formerly the beta `output_format`), but
//! only for its newest models; the forced tool works with every model that supports tools
//! and with Anthropic-compatible proxies, so pactum uses it. A tool's `input_schema` must be
//! an object schema (`"type": "object"`): a schema of any other root type is not sent, and
//! the executor's extraction and validation still govern the answer.
//!
//! **Response.** The text of every `text` block in `content`, concatenated (or the forced
//! tool's input, see above). `stop_reason` goes through [`FinishReason::from_api`]
//! (`max_tokens` is [`FinishReason::Length`]). Usage: `prompt_tokens` is `input_tokens` plus
//! the cache-write and cache-read input tokens, since all of them are billed input;
//! `completion_tokens` is `output_tokens`.
//!
//! **Tools (SPEC §15).** Tools offered go in `tools: [{name, description, input_schema}]`
//! (with the structured-output tool, if any, then chosen with `tool_choice: {"type":
//! "any"}` so the model either calls a disclosure tool or answers through it). A reply's
//! `tool_use` blocks (`{id, name, input}`, stop reason `tool_use`) become [`ToolCall`]s.
//! Earlier rounds follow the rendered messages as the API defines them: an `assistant`
//! message whose content is the text and `tool_use` blocks, then a `user` message of
//! `tool_result` blocks (`tool_use_id`, `content`, `is_error`).

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::authority::Permit;
use crate::error::{ProviderFailure, Result};
use crate::gateway::http::{ApiKind, Endpoint, HttpReply, RetryPolicy, SettingNames};
use crate::gateway::{
    FinishReason, PromptRequest, Provider, ProviderResponse, ResponseBody, Role, Secret, ToolCall,
    Usage,
};

/// The public Anthropic API (without the `/v1`).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent by default.
pub const DEFAULT_API_VERSION: &str = "2023-06-01";
/// How long one attempt may take unless the work order sets `constraints.timeout_s`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The highest `temperature` the messages API takes.
pub const MAX_TEMPERATURE: f64 = 1.0;
/// The name of the tool that carries structured output.
pub const STRUCTURED_OUTPUT_TOOL: &str = "structured_output";

const KIND: ApiKind = ApiKind {
    settings: SettingNames { base_url: "ANTHROPIC_BASE_URL", api_key: "ANTHROPIC_API_KEY" },
    answer: "a message",
    api: "the Anthropic API",
};

/// Settings of the Anthropic provider.
#[derive(Clone, Debug, PartialEq)]
pub struct AnthropicConfig {
    /// The provider's name in results and the ledger.
    pub name: String,
    /// The API root, ending before `/v1/messages`.
    /// Its origin is the only one the provider sends to: a [`Permit`] says who chose it
    /// (`Permit::application` for a library caller's own URL).
    pub base_url: Permit<String>,
    /// Required; sent as `x-api-key`.
    pub api_key: Option<Secret>,
    /// Why a key the environment holds was not given to this provider (its base URL comes
    /// from a repository file the environment does not confirm); told on a refusal.
    pub key_withheld: Option<String>,
    /// The model to ask; required.
    pub model: String,
    /// How long one attempt may take unless the request sets its own timeout.
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// The `anthropic-version` header.
    pub api_version: String,
}

impl Default for AnthropicConfig {
    /// Name `anthropic`, the public API, no key, no model, 120 s timeout, default retries,
    /// API version 2023-06-01.
    fn default() -> Self {
        AnthropicConfig {
            name: "anthropic".to_string(),
            base_url: Permit::pactum(DEFAULT_BASE_URL.to_string()),
            api_key: None,
            key_withheld: None,
            model: String::new(),
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
            api_version: DEFAULT_API_VERSION.to_string(),
        }
    }
}

/// A provider that calls Anthropic's messages API.
///
/// ```
/// use pactum::gateway::Secret;
/// use pactum::gateway::anthropic::{AnthropicConfig, AnthropicProvider};
///
/// let provider = AnthropicProvider::new(AnthropicConfig {
///     api_key: Some(Secret::new("the key, read by the binary")),
///     model: "claude-sonnet-4-5".to_string(),
///     ..AnthropicConfig::default()
/// });
/// assert!(!format!("{provider:?}").contains("the key"));
/// ```
#[derive(Clone, Debug)]
pub struct AnthropicProvider {
    config: AnthropicConfig,
    endpoint: Endpoint,
}

impl AnthropicProvider {
    /// A provider with these settings. Missing settings are reported by
    /// [`Provider::complete`], before any request is sent.
    pub fn new(config: AnthropicConfig) -> Self {
        let endpoint = Endpoint::new(
            &config.name,
            &config.base_url,
            "v1/messages",
            config.api_key.as_ref(),
            config.timeout,
            &config.retry,
            KIND,
        )
        .with_key_withheld(config.key_withheld.clone());
        AnthropicProvider { config, endpoint }
    }

    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    /// The JSON body of the messages request.
    fn request_body(&self, request: &PromptRequest) -> Value {
        let boundary = &request.boundary;
        let mut system = Vec::new();
        let mut messages = Vec::new();
        for message in &request.messages {
            match message.role {
                Role::System => system.push(message.content.as_str()),
                Role::User | Role::Assistant => {
                    messages.push(json!({"role": message.role, "content": message.content}));
                }
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(self.config.model));
        body.insert("max_tokens".into(), json!(boundary.max_tokens));
        body.insert("temperature".into(), json!(boundary.temperature));
        if !system.is_empty() {
            body.insert("system".into(), json!(system.join("\n\n")));
        }
        for turn in &request.turns {
            let mut blocks = Vec::new();
            if !turn.text.is_empty() {
                blocks.push(json!({"type": "text", "text": turn.text}));
            }
            for c in &turn.calls {
                blocks.push(
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}),
                );
            }
            messages.push(json!({"role": "assistant", "content": blocks}));
            let results: Vec<Value> = turn
                .results
                .iter()
                .map(|r| {
                    json!({"type": "tool_result", "tool_use_id": r.id, "content": r.content,
                           "is_error": r.is_error})
                })
                .collect();
            messages.push(json!({"role": "user", "content": results}));
        }
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let mut tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
                .collect();
            if let Some(schema) =
                boundary.structured_output.as_ref().filter(|s| is_object_schema(s))
            {
                tools.push(json!({
                    "name": STRUCTURED_OUTPUT_TOOL,
                    "description": "Give your complete answer as this tool's input.",
                    "input_schema": schema,
                }));
                body.insert("tool_choice".into(), json!({"type": "any"}));
            }
            body.insert("tools".into(), Value::Array(tools));
        } else if let Some(schema) =
            boundary.structured_output.as_ref().filter(|s| is_object_schema(s))
        {
            body.insert(
                "tools".into(),
                json!([{
                    "name": STRUCTURED_OUTPUT_TOOL,
                    "description": "Give your complete answer as this tool's input.",
                    "input_schema": schema,
                }]),
            );
            body.insert(
                "tool_choice".into(),
                json!({"type": "tool", "name": STRUCTURED_OUTPUT_TOOL}),
            );
        }
        Value::Object(body)
    }

    /// Reads a messages-API answer.
    fn parse(&self, reply: HttpReply) -> Result<ProviderResponse> {
        let body = &reply.body;
        let Some(content) = body.get("content").and_then(Value::as_array) else {
            return Err(self.endpoint.missing(body, "content"));
        };
        let mut text = String::new();
        let mut tool_input = None;
        let mut calls = Vec::new();
        for block in content {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    text.push_str(block.get("text").and_then(Value::as_str).unwrap_or(""))
                }
                Some("tool_use")
                    if block.get("name").and_then(Value::as_str)
                        == Some(STRUCTURED_OUTPUT_TOOL) =>
                {
                    tool_input = block.get("input");
                }
                Some("tool_use") => {
                    if let Some(name) = block.get("name").and_then(Value::as_str) {
                        let id = block
                            .get("id")
                            .and_then(Value::as_str)
                            .map_or_else(|| format!("call_{}", calls.len()), str::to_string);
                        let arguments = block.get("input").cloned().unwrap_or_else(|| json!({}));
                        calls.push(ToolCall { id, name: name.to_string(), arguments });
                    }
                }
                _ => {}
            }
        }
        let stop_reason = body.get("stop_reason").and_then(Value::as_str);
        let finish_reason = match (stop_reason, tool_input) {
            (Some("tool_use"), Some(_)) => Some(FinishReason::Stop),
            (reason, _) => reason.map(FinishReason::from_api),
        };
        if let Some(input) = tool_input {
            text = input.to_string();
        }
        let usage = body.get("usage").filter(|u| u.is_object()).map(|u| {
            let count = |name: &str| crate::gateway::token_count(u.get(name));
            Usage {
                prompt_tokens: count("input_tokens")
                    .saturating_add(count("cache_creation_input_tokens"))
                    .saturating_add(count("cache_read_input_tokens")),
                completion_tokens: count("output_tokens"),
            }
        });
        let mut response =
            self.endpoint.response(&reply, ResponseBody::Text(text), finish_reason, usage);
        // An answer through the structured-output tool wins over calls made alongside it.
        if tool_input.is_none() {
            response.tool_calls = calls;
        }
        Ok(response)
    }
}

impl Provider for AnthropicProvider {
    fn model(&self) -> Option<&str> {
        Some(self.config.model.as_str()).filter(|m| !m.trim().is_empty())
    }

    fn name(&self) -> &str {
        &self.config.name
    }

    fn kind(&self) -> &str {
        "anthropic"
    }

    fn complete(&self, request: &PromptRequest) -> Result<ProviderResponse> {
        let not_configured =
            |message: &str| self.endpoint.error(ProviderFailure::NotConfigured, message);
        let Some(key) = self.endpoint.key() else {
            if let Some(why) = self.endpoint.key_withheld() {
                return Err(not_configured(why));
            }
            return Err(not_configured(
                "no API key is configured; set ANTHROPIC_API_KEY (or the variable the \
                 provider's `api_key_env` in pactum.toml names)",
            ));
        };
        if self.config.model.trim().is_empty() {
            return Err(not_configured(
                "no model is configured; set the provider's `model` in pactum.toml",
            ));
        }
        // The messages API takes a temperature from 0 to 1 (a contract's may be up to 2, as
        // OpenAI's): refused before a request that could only come back a 400.
        let temperature = request.boundary.temperature;
        if temperature > MAX_TEMPERATURE {
            return Err(not_configured(&format!(
                "{}@{}'s boundary.temperature is {temperature}, and Anthropic's messages API \
                 takes 0 to {MAX_TEMPERATURE}; set the contract's boundary.temperature to at most \
                 {MAX_TEMPERATURE} (a new version), or send it to a provider that takes it",
                request.contract_id, request.contract_version
            )));
        }
        let headers = [
            ("x-api-key", key.expose().to_string()),
            ("anthropic-version", self.config.api_version.clone()),
        ];
        let body = self.request_body(request);
        let reply = self.endpoint.post(&headers, &body, request.timeout)?;
        let (attempts, latency) = (reply.attempts, reply.latency);
        self.parse(reply).map_err(|e| e.with_attempts(attempts, latency))
    }
}

/// Whether a schema can be a tool's `input_schema`: its root type is `object`.
fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}
