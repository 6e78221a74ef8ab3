//! The OpenAI-compatible and Anthropic providers against a mock HTTP server on 127.0.0.1:
//! request shapes, answers, retries, timeouts, failure codes and secret hygiene.

use crate::mock_http;

use std::time::{Duration, Instant};

use mock_http::{MockReply, MockServer, RefusedPort};
use pactum::Error;
use pactum::authority::Permit;
use pactum::gateway::anthropic::{AnthropicConfig, AnthropicProvider, STRUCTURED_OUTPUT_TOOL};
use pactum::gateway::http::RetryPolicy;
use pactum::gateway::openai::{OpenAiConfig, OpenAiProvider};
use pactum::gateway::{
    Boundary, FinishReason, Message, PromptRequest, Provider, ResponseBody, Secret, Usage,
};
use serde_json::{Value, json};

const KEY: &str = "sk-pactum-LEAKCHECK-5d1e9a7c";

/// Both providers, so every transport behaviour is checked for each.
#[derive(Clone, Copy, Debug)]
enum Api {
    OpenAi,
    Anthropic,
}

const BOTH: [Api; 2] = [Api::OpenAi, Api::Anthropic];

/// Retries with waits of a millisecond or two, so the suite stays fast.
fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(2),
        max_retry_after: Duration::from_millis(50),
    }
}

fn openai_config(url: &str) -> OpenAiConfig {
    OpenAiConfig {
        base_url: Permit::application(format!("{url}/v1/")),
        api_key: Some(Secret::new(KEY)),
        model: "gpt-test".to_string(),
        timeout: Duration::from_secs(5),
        retry: fast_retry(),
        ..OpenAiConfig::default()
    }
}

fn anthropic_config(url: &str) -> AnthropicConfig {
    AnthropicConfig {
        base_url: Permit::application(url.to_string()),
        api_key: Some(Secret::new(KEY)),
        model: "claude-test".to_string(),
        timeout: Duration::from_secs(5),
        retry: fast_retry(),
        ..AnthropicConfig::default()
    }
}

fn provider(api: Api, url: &str) -> Box<dyn Provider> {
    match api {
        Api::OpenAi => Box::new(OpenAiProvider::new(openai_config(url))),
        Api::Anthropic => Box::new(AnthropicProvider::new(anthropic_config(url))),
    }
}

/// A 200 answer carrying `text`, stopped for `reason` (the API's own word).
fn answer(api: Api, text: &str, reason: &str) -> MockReply {
    let body = match api {
        Api::OpenAi => json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-test-2025",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": null},
                "finish_reason": reason,
            }],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        }),
        Api::Anthropic => json!({
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test-2025",
            "content": [{"type": "text", "text": text}],
            "stop_reason": reason,
            "stop_sequence": null,
            "usage": {"input_tokens": 12, "output_tokens": 5},
        }),
    };
    MockReply::json(200, &body)
}

fn ok(api: Api, text: &str) -> MockReply {
    match api {
        Api::OpenAi => answer(api, text, "stop"),
        Api::Anthropic => answer(api, text, "end_turn"),
    }
}

fn request() -> PromptRequest {
    PromptRequest {
        contract_id: "PRC-CLASSIFY-001".to_string(),
        contract_version: "1.2.0".to_string(),
        prompt_pack_id: "PRM-CLASSIFY-001".to_string(),
        prompt_pack_version: "1.0.0".to_string(),
        boundary: Boundary {
            max_tokens: 256,
            temperature: 0.25,
            provider_id: None,
            structured_output: None,
        },
        input_schema: None,
        output_schema: None,
        template_variables: json!({"text": "hello"}),
        messages: vec![Message::system("You classify text."), Message::user("Classify: hello")],
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

fn label_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"label": {"type": "string", "enum": ["greeting", "other"]}},
        "required": ["label"],
    })
}

fn text(body: &ResponseBody) -> &str {
    match body {
        ResponseBody::Text(text) => text,
        ResponseBody::Envelope(value) => panic!("expected text, got envelope {value}"),
    }
}

/// The call's error; the test fails if the call succeeded.
fn fail(api: Api, provider: &dyn Provider, request: &PromptRequest) -> Error {
    match provider.complete(request) {
        Ok(response) => panic!("{api:?}: expected an error, got {response:?}"),
        Err(error) => error,
    }
}

fn code(error: &Error) -> &'static str {
    error.code().as_str()
}

fn status(error: &Error) -> Option<u16> {
    match error {
        Error::Provider { status, .. } => *status,
        other => panic!("expected a provider error, got {other:?}"),
    }
}

// --- Successful calls and request shapes -------------------------------------------------

#[test]
fn openai_success_sends_the_contract_request_and_reads_the_answer() {
    let server =
        MockServer::start(vec![ok(Api::OpenAi, "greeting").delay(Duration::from_millis(30))]);
    let provider = OpenAiProvider::new(openai_config(&server.url()));
    assert_eq!(provider.name(), "openai");

    let response = provider.complete(&request()).unwrap();

    assert_eq!(text(&response.body), "greeting");
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(Usage { prompt_tokens: 12, completion_tokens: 5 }));
    assert_eq!(response.model.as_deref(), Some("gpt-test-2025"));
    assert_eq!(response.attempts, 1);
    assert!(response.latency >= Duration::from_millis(30), "{:?}", response.latency);

    let sent = &server.requests()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert!(sent.header("content-type").unwrap().starts_with("application/json"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "You classify text."},
                {"role": "user", "content": "Classify: hello"},
            ],
            "max_tokens": 256,
            "temperature": 0.25,
        })
    );
}

#[test]
fn openai_structured_output_asks_for_a_json_schema_response_format() {
    let server = MockServer::start(vec![ok(Api::OpenAi, r#"{"label":"greeting"}"#)]);
    let provider = OpenAiProvider::new(OpenAiConfig {
        max_completion_tokens: true,
        ..openai_config(&server.url())
    });
    let mut request = request();
    request.contract_id = "team.billing/PRC CLASSIFY".to_string();
    request.boundary.structured_output = Some(label_schema());

    let response = provider.complete(&request).unwrap();

    assert_eq!(text(&response.body), r#"{"label":"greeting"}"#);
    let sent = server.requests()[0].json();
    assert_eq!(
        sent["response_format"],
        json!({
            "type": "json_schema",
            "json_schema": {"name": "team_billing_PRC_CLASSIFY", "schema": label_schema(), "strict": false},
        })
    );
    assert_eq!(sent["max_completion_tokens"], json!(256));
    assert!(sent.get("max_tokens").is_none(), "{sent}");
}

#[test]
fn openai_without_a_key_sends_no_authorization_header() {
    let server = MockServer::start(vec![ok(Api::OpenAi, "hi"), ok(Api::OpenAi, "hi")]);
    for api_key in [None, Some(Secret::new(""))] {
        let provider =
            OpenAiProvider::new(OpenAiConfig { api_key, ..openai_config(&server.url()) });
        provider.complete(&request()).unwrap();
    }
    assert_eq!(server.hits(), 2);
    for sent in server.requests() {
        assert_eq!(sent.header("authorization"), None);
    }
}

#[test]
fn openai_refusal_is_an_error_that_quotes_it() {
    let refusal = json!({
        "model": "gpt-test",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."},
            "finish_reason": "stop",
        }],
    });
    let server = MockServer::start(vec![MockReply::json(200, &refusal)]);
    let provider = provider(Api::OpenAi, &server.url());

    let error = fail(Api::OpenAi, provider.as_ref(), &request());

    assert_eq!(code(&error), "provider_response_invalid");
    assert!(error.to_string().contains("refused to answer: I can't help with that."), "{error}");
    assert_eq!(server.hits(), 1);
}

#[test]
fn anthropic_success_sends_system_apart_and_reads_the_answer() {
    let server =
        MockServer::start(vec![ok(Api::Anthropic, "greeting").delay(Duration::from_millis(30))]);
    let provider = AnthropicProvider::new(anthropic_config(&server.url()));
    assert_eq!(provider.name(), "anthropic");
    let mut request = request();
    request.messages.insert(1, Message::system("Answer with one word."));

    let response = provider.complete(&request).unwrap();

    assert_eq!(text(&response.body), "greeting");
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(Usage { prompt_tokens: 12, completion_tokens: 5 }));
    assert_eq!(response.model.as_deref(), Some("claude-test-2025"));
    assert_eq!(response.attempts, 1);
    assert!(response.latency >= Duration::from_millis(30), "{:?}", response.latency);

    let sent = &server.requests()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert!(sent.header("content-type").unwrap().starts_with("application/json"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "claude-test",
            "max_tokens": 256,
            "temperature": 0.25,
            "system": "You classify text.\n\nAnswer with one word.",
            "messages": [{"role": "user", "content": "Classify: hello"}],
        })
    );
}

#[test]
fn anthropic_refuses_a_temperature_above_one_before_any_request() {
    let server = MockServer::start(vec![ok(Api::Anthropic, "greeting")]);
    let provider = AnthropicProvider::new(anthropic_config(&server.url()));
    let mut request = request();
    request.boundary.temperature = 1.5;
    let e = provider.complete(&request).unwrap_err();
    assert_eq!(e.code().as_str(), "provider_not_configured");
    let message = e.to_string();
    assert!(message.contains("PRC-CLASSIFY-001@1.2.0") && message.contains("1.5"), "{message}");
    assert!(message.contains("at most 1"), "{message}");
    assert_eq!(server.hits(), 0, "nothing was sent");
    // 1 itself is the API's own bound, and goes.
    request.boundary.temperature = 1.0;
    provider.complete(&request).unwrap();
    assert_eq!(server.requests()[0].json()["temperature"], 1.0);
}

#[test]
fn anthropic_usage_counts_cached_input_tokens() {
    let body = json!({
        "type": "message",
        "model": "claude-test",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 10,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 1000,
            "output_tokens": 7,
        },
    });
    let server = MockServer::start(vec![MockReply::json(200, &body)]);
    let response = provider(Api::Anthropic, &server.url()).complete(&request()).unwrap();
    assert_eq!(text(&response.body), "ab");
    assert_eq!(response.usage, Some(Usage { prompt_tokens: 1110, completion_tokens: 7 }));
}

#[test]
fn anthropic_structured_output_forces_a_tool_and_returns_its_input() {
    let body = json!({
        "type": "message",
        "model": "claude-test",
        "content": [
            {"type": "text", "text": "Here you go."},
            {"type": "tool_use", "id": "toolu_1", "name": STRUCTURED_OUTPUT_TOOL,
             "input": {"label": "greeting"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 20, "output_tokens": 9},
    });
    let server = MockServer::start(vec![MockReply::json(200, &body)]);
    let provider = provider(Api::Anthropic, &server.url());
    let mut request = request();
    request.boundary.structured_output = Some(label_schema());

    let response = provider.complete(&request).unwrap();

    let output: Value = serde_json::from_str(text(&response.body)).unwrap();
    assert_eq!(output, json!({"label": "greeting"}));
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    let sent = server.requests()[0].json();
    assert_eq!(sent["tools"][0]["name"], json!(STRUCTURED_OUTPUT_TOOL));
    assert_eq!(sent["tools"][0]["input_schema"], label_schema());
    assert_eq!(sent["tool_choice"], json!({"type": "tool", "name": STRUCTURED_OUTPUT_TOOL}));
}

#[test]
fn anthropic_sends_no_tool_for_a_schema_that_is_not_an_object() {
    let server = MockServer::start(vec![ok(Api::Anthropic, "[1, 2]")]);
    let mut request = request();
    request.boundary.structured_output =
        Some(json!({"type": "array", "items": {"type": "integer"}}));

    let response = provider(Api::Anthropic, &server.url()).complete(&request).unwrap();

    assert_eq!(text(&response.body), "[1, 2]");
    let sent = server.requests()[0].json();
    assert!(sent.get("tools").is_none() && sent.get("tool_choice").is_none(), "{sent}");
}

#[test]
fn a_fenced_reply_comes_back_verbatim() {
    let fenced = "Sure:\n```json\n{\"label\": \"greeting\"}\n```\n  trailing  \n";
    for api in BOTH {
        let server = MockServer::start(vec![ok(api, fenced)]);
        let response = provider(api, &server.url()).complete(&request()).unwrap();
        assert_eq!(text(&response.body), fenced, "{api:?}");
    }
}

#[test]
fn a_truncated_reply_finishes_with_length() {
    for (api, reason) in [(Api::OpenAi, "length"), (Api::Anthropic, "max_tokens")] {
        let server = MockServer::start(vec![answer(api, "{\"label\": \"gre", reason)]);
        let response = provider(api, &server.url()).complete(&request()).unwrap();
        assert_eq!(response.finish_reason, Some(FinishReason::Length), "{api:?}");
        assert_eq!(text(&response.body), "{\"label\": \"gre");
    }
}

// --- Retries -----------------------------------------------------------------------------

#[test]
fn server_errors_are_tried_three_times_then_reported() {
    for api in BOTH {
        let failing = MockReply::json(500, &json!({"error": {"message": "upstream exploded"}}));
        let server = MockServer::start(vec![failing; 3]);

        let error = fail(api, provider(api, &server.url()).as_ref(), &request());

        assert_eq!(server.hits(), 3, "{api:?}");
        assert_eq!(code(&error), "provider_error");
        assert_eq!(status(&error), Some(500));
        let message = error.to_string();
        assert!(message.contains("HTTP 500") && message.contains("3 attempts"), "{message}");
        assert!(message.contains("upstream exploded"), "{message}");
    }
}

#[test]
fn rate_limited_then_success_takes_two_attempts() {
    for api in BOTH {
        let limited = MockReply::json(429, &json!({"error": {"message": "slow down"}}))
            .header("retry-after", "0");
        let server = MockServer::start(vec![limited, ok(api, "fine")]);

        let response = provider(api, &server.url()).complete(&request()).unwrap();

        assert_eq!(text(&response.body), "fine", "{api:?}");
        assert_eq!(response.attempts, 2);
        assert_eq!(server.hits(), 2);
    }
}

#[test]
fn rate_limited_on_every_attempt_is_provider_rate_limited() {
    for api in BOTH {
        let server = MockServer::start(vec![MockReply::text(429, "busy"); 3]);
        let error = fail(api, provider(api, &server.url()).as_ref(), &request());
        assert_eq!(code(&error), "provider_rate_limited", "{api:?}");
        assert_eq!(status(&error), Some(429));
        assert_eq!(server.hits(), 3);
    }
}

#[test]
fn retry_after_is_honoured_up_to_its_cap() {
    for api in BOTH {
        // The server asks for 120 s; the policy caps that at 100 ms, while its own backoff
        // would wait at most 2 ms. Uncapped, the wait would pass the 60 s bound, which a
        // loaded machine meets with a wide margin.
        let limited = MockReply::text(503, "maintenance").header("retry-after", "120");
        let server = MockServer::start(vec![limited, ok(api, "back")]);
        let retry = RetryPolicy { max_retry_after: Duration::from_millis(100), ..fast_retry() };
        let provider: Box<dyn Provider> = match api {
            Api::OpenAi => Box::new(OpenAiProvider::new(OpenAiConfig {
                retry,
                ..openai_config(&server.url())
            })),
            Api::Anthropic => Box::new(AnthropicProvider::new(AnthropicConfig {
                retry,
                ..anthropic_config(&server.url())
            })),
        };

        let started = Instant::now();
        let response = provider.complete(&request()).unwrap();
        let waited = started.elapsed();

        assert_eq!(response.attempts, 2, "{api:?}");
        assert!(waited >= Duration::from_millis(100), "{api:?} waited {waited:?}");
        assert!(waited < Duration::from_secs(60), "{api:?} waited {waited:?}");
        assert!(response.latency >= Duration::from_millis(100));
    }
}

#[test]
fn a_bad_request_is_not_retried() {
    for api in BOTH {
        let rejected = MockReply::json(
            400,
            &json!({"error": {"type": "invalid_request_error", "message": "unknown field `foo`"}}),
        );
        let server = MockServer::start(vec![rejected, ok(api, "never")]);

        let error = fail(api, provider(api, &server.url()).as_ref(), &request());

        assert_eq!(server.hits(), 1, "{api:?}");
        assert_eq!(code(&error), "provider_error");
        assert_eq!(status(&error), Some(400));
        let message = error.to_string();
        assert!(
            message.contains("1 attempt") && message.contains("unknown field `foo`"),
            "{message}"
        );
    }
}

#[test]
fn a_slow_server_times_out_after_three_attempts() {
    for api in BOTH {
        let slow = ok(api, "too late").delay(Duration::from_secs(2));
        let server = MockServer::start(vec![slow; 3]);
        let mut request = request();
        request.timeout = Some(Duration::from_millis(150));

        let error = fail(api, provider(api, &server.url()).as_ref(), &request);

        // Each answer comes 2 s late: a timeout, not a reply, ends every attempt.
        assert_eq!(code(&error), "provider_timeout", "{api:?}: {error}");
        assert_eq!(server.hits(), 3);
        let message = error.to_string();
        assert!(message.contains("3 attempts") && message.contains("timeout_s"), "{message}");
    }
}

#[test]
fn the_configured_timeout_applies_when_the_request_sets_none() {
    let server = MockServer::start(vec![ok(Api::OpenAi, "late").delay(Duration::from_secs(2)); 3]);
    let provider = OpenAiProvider::new(OpenAiConfig {
        timeout: Duration::from_millis(150),
        retry: RetryPolicy { max_attempts: 1, ..fast_retry() },
        ..openai_config(&server.url())
    });
    let error = fail(Api::OpenAi, &provider, &request());
    assert_eq!(code(&error), "provider_timeout");
    assert_eq!(server.hits(), 1);
}

#[test]
fn a_refused_connection_is_provider_unreachable() {
    for api in BOTH {
        let refused = RefusedPort::new();
        let url = refused.url();
        let error = fail(api, provider(api, &url).as_ref(), &request());
        assert_eq!(code(&error), "provider_unreachable", "{api:?}: {error}");
        let message = error.to_string();
        assert!(message.contains("3 attempts") && message.contains("_BASE_URL"), "{message}");
    }
}

#[test]
fn a_refused_port_refuses_connections_and_stays_taken() {
    let refused = RefusedPort::new();
    let addr = refused.url().strip_prefix("http://").unwrap().to_string();
    let e = std::net::TcpStream::connect(&addr).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    // Held: no server can bind it, not even one that allows address reuse (std's does).
    assert!(std::net::TcpListener::bind(&addr).is_err(), "{addr} was free to bind");
}

#[test]
fn a_dropped_connection_is_retried() {
    for api in BOTH {
        let server = MockServer::start(vec![MockReply::close(), ok(api, "second time")]);
        let response = provider(api, &server.url()).complete(&request()).unwrap();
        assert_eq!(text(&response.body), "second time", "{api:?}");
        assert_eq!(response.attempts, 2);
    }
}

// --- Invalid answers and missing settings ------------------------------------------------

#[test]
fn a_success_that_is_not_json_is_provider_response_invalid() {
    for api in BOTH {
        let server =
            MockServer::start(vec![MockReply::text(200, "<html>proxy login</html>"), ok(api, "x")]);
        let error = fail(api, provider(api, &server.url()).as_ref(), &request());
        assert_eq!(code(&error), "provider_response_invalid", "{api:?}");
        assert_eq!(server.hits(), 1);
        assert!(error.to_string().contains("proxy login"), "{error}");
    }
}

#[test]
fn json_of_the_wrong_shape_is_provider_response_invalid() {
    for api in BOTH {
        let server = MockServer::start(vec![
            MockReply::json(200, &json!({"hello": "world"})),
            MockReply::json(200, &json!({"error": {"message": "quota gone"}})),
        ]);
        let provider = provider(api, &server.url());
        let error = fail(api, provider.as_ref(), &request());
        assert_eq!(code(&error), "provider_response_invalid", "{api:?}");
        let error = fail(api, provider.as_ref(), &request());
        assert_eq!(code(&error), "provider_response_invalid", "{api:?}");
        assert!(error.to_string().contains("quota gone"), "{error}");
    }
}

#[test]
fn missing_settings_fail_before_any_request() {
    let server = MockServer::start(vec![]);
    let url = server.url();
    let no_model_openai =
        OpenAiProvider::new(OpenAiConfig { model: " ".to_string(), ..openai_config(&url) });
    let no_model_anthropic =
        AnthropicProvider::new(AnthropicConfig { model: String::new(), ..anthropic_config(&url) });
    let no_key_anthropic =
        AnthropicProvider::new(AnthropicConfig { api_key: None, ..anthropic_config(&url) });
    let empty_key_anthropic = AnthropicProvider::new(AnthropicConfig {
        api_key: Some(Secret::new("")),
        ..anthropic_config(&url)
    });
    let cases: [(&dyn Provider, &str); 4] = [
        (&no_model_openai, "model"),
        (&no_model_anthropic, "model"),
        (&no_key_anthropic, "ANTHROPIC_API_KEY"),
        (&empty_key_anthropic, "ANTHROPIC_API_KEY"),
    ];
    for (provider, mentions) in cases {
        let error = provider.complete(&request()).unwrap_err();
        assert_eq!(code(&error), "provider_not_configured", "{error}");
        assert!(error.to_string().contains(mentions), "{error}");
    }
    assert_eq!(server.hits(), 0);
}

// --- Secrets -----------------------------------------------------------------------------

#[test]
fn the_api_key_never_reaches_messages_debug_output_or_responses() {
    let echo = format!("Incorrect API key provided: {KEY}. Check your key.");
    for api in BOTH {
        let server = MockServer::start(vec![
            // 401 echoing the key, in JSON and in a header.
            MockReply::json(401, &json!({"error": {"message": echo, "type": "auth"}}))
                .header("x-echo", KEY),
            // Server errors echoing it, three times.
            MockReply::text(500, &echo),
            MockReply::text(500, &echo),
            MockReply::text(500, &echo),
            // A 200 that is not JSON, and one with an error object.
            MockReply::text(200, &echo),
            MockReply::json(200, &json!({"error": {"message": echo}})),
            // A success whose text echoes it.
            answer(api, &echo, "stop"),
        ]);
        let config_debug = match api {
            Api::OpenAi => format!("{:?}", openai_config(&server.url())),
            Api::Anthropic => format!("{:?}", anthropic_config(&server.url())),
        };
        assert!(!config_debug.contains(KEY), "{config_debug}");
        let provider: Box<dyn Provider> = match api {
            Api::OpenAi => {
                let provider = OpenAiProvider::new(openai_config(&server.url()));
                assert!(!format!("{provider:?}").contains(KEY));
                Box::new(provider)
            }
            Api::Anthropic => {
                let provider = AnthropicProvider::new(anthropic_config(&server.url()));
                assert!(!format!("{provider:?}").contains(KEY));
                Box::new(provider)
            }
        };

        let expected = [
            "provider_error",
            "provider_error",
            "provider_response_invalid",
            "provider_response_invalid",
        ];
        for expected in expected {
            let error = fail(api, provider.as_ref(), &request());
            assert_eq!(code(&error), expected, "{api:?}: {error}");
            for shown in [error.to_string(), format!("{error:?}")] {
                assert!(!shown.contains(KEY), "{api:?} leaked the key: {shown}");
                assert!(shown.contains("[redacted]"), "{api:?}: no server excerpt in {shown}");
            }
        }

        let response = provider.complete(&request()).unwrap();
        let serialized = serde_json::to_string(&response).unwrap();
        assert!(!serialized.contains(KEY), "{api:?}: {serialized}");
        assert!(!format!("{response:?}").contains(KEY));

        // The key did go where it belongs: the auth header of every request.
        let sent = server.requests();
        assert_eq!(sent.len(), 7);
        for request in &sent {
            let auth = request.header("authorization").or(request.header("x-api-key")).unwrap();
            assert!(auth.ends_with(KEY));
            assert!(!request.body.contains(KEY));
        }
    }
}
