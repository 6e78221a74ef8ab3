//! Ledger records as OpenTelemetry spans (SPEC §22): the one mapping, for a run's live export
//! and for `ledger export --otlp` alike, so a ledger exported later gives the spans its run
//! sent (same ids, same attributes; only the prompt text, which the ledger keeps as a hash,
//! is missing).
//!
//! - A work order is a trace. Its `work_order_started` record opens it (the trace id and the
//!   root span's id come from that record's hash); its `work_order_completed` or
//!   `work_order_failed` record ends the root span, `invoke_agent {id}`.
//! - An exchange record is a `chat {model}` span under its work order's root (or the root of
//!   a trace of its own when no work order is open for it: an eval case, a library call);
//!   it ends when the record was written and starts `latency_ms` before.
//! - A tool call is an `execute_tool {tool}` span: under its exchange's span (the calls a
//!   reply made, `disclosures`) or under the work order's root (a kernel step's call, in
//!   its cycle record's `tool_calls`).
//! - An `eval_completed` record is one `eval` span.
//!
//! Span ids are the first bytes of the record's hash (and of the SHA-256 of the hash and the
//! call's place, for tool calls): deterministic, and a span names the ledger record it came
//! from (`pactum.ledger.seq`, `pactum.ledger.hash`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value as Attr};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use serde_json::{Map, Value, json};

/// The most of one content attribute's text (a prompt, a reply, a tool's arguments or
/// result) a span carries: collectors refuse large requests, and a span is for finding the
/// exchange, the ledger is for reading it whole.
pub const MAX_CONTENT_BYTES: usize = 16 * 1024;

/// Work orders open at once whose end is awaited; past it the oldest open one is forgotten
/// (its spans still go out; its root span does not). Only a run that died between a start
/// and its end leaves one open.
const MAX_OPEN: usize = 65_536;

/// The traces of work orders started and not yet ended.
#[derive(Debug, Default)]
pub struct Traces {
    open: HashMap<String, Open>,
    /// Order of opening, for forgetting the oldest past [`MAX_OPEN`].
    opened: std::collections::VecDeque<(String, TraceId)>,
}

#[derive(Clone, Copy, Debug)]
struct Open {
    trace: TraceId,
    root: SpanId,
    start: SystemTime,
}

impl Traces {
    /// The spans `record` makes (none for a `work_order_started`: its span ends later).
    /// `attached` holds what the writer attached (the prompt); content attributes are set
    /// only when `content` is.
    pub fn spans(
        &mut self,
        record: &Value,
        attached: &Map<String, Value>,
        content: bool,
    ) -> Vec<SpanData> {
        let Some(hash) = record.get("hash").and_then(Value::as_str) else { return Vec::new() };
        let id = Ids::of(hash);
        let end = time_of(record);
        let event = record.get("event").and_then(Value::as_str);
        let kind = record.get("kind").and_then(Value::as_str).unwrap_or("");
        let wo = text(record, "work_order_id");
        match (kind, event) {
            ("work_order", Some("work_order_started")) => {
                if let Some(wo) = wo {
                    self.open(wo, Open { trace: id.trace, root: id.root, start: end });
                }
                Vec::new()
            }
            ("work_order", _) => {
                let open = wo.and_then(|wo| self.close(wo));
                vec![work_order_span(record, open, &id, end)]
            }
            ("exchange", _) => {
                let parent = self.parent(wo);
                exchange_spans(record, attached, content, parent, &id, end)
            }
            ("cycle", _) => {
                let parent = self.parent(wo).unwrap_or((id.trace, SpanId::INVALID));
                tool_spans(record.get("tool_calls"), content, parent, &id, end)
            }
            ("eval", _) => vec![eval_span(record, &id, end)],
            _ => Vec::new(),
        }
    }

    fn parent(&self, wo: Option<&str>) -> Option<(TraceId, SpanId)> {
        wo.and_then(|wo| self.open.get(wo)).map(|o| (o.trace, o.root))
    }

    fn open(&mut self, wo: &str, open: Open) {
        if self.open.len() >= MAX_OPEN
            && let Some((oldest, trace)) = self.opened.pop_front()
            && self.open.get(&oldest).is_some_and(|o| o.trace == trace)
        {
            self.open.remove(&oldest);
        }
        self.open.insert(wo.to_string(), open);
        self.opened.push_back((wo.to_string(), open.trace));
        // Entries of work orders that ended are dropped as the queue turns over.
        while self.opened.len() > 2 * MAX_OPEN {
            self.opened.pop_front();
        }
    }

    fn close(&mut self, wo: &str) -> Option<Open> {
        self.open.remove(wo)
    }
}

/// The ids a record's spans take, from its hash.
struct Ids {
    trace: TraceId,
    root: SpanId,
    span: SpanId,
    hash: String,
}

impl Ids {
    fn of(hash: &str) -> Ids {
        let bytes = hex_bytes(hash);
        let trace = TraceId::from_bytes(bytes[..16].try_into().unwrap_or([1; 16]));
        let root = SpanId::from_bytes(bytes[16..24].try_into().unwrap_or([2; 8]));
        let span = SpanId::from_bytes(bytes[..8].try_into().unwrap_or([3; 8]));
        Ids { trace, root, span, hash: hash.to_string() }
    }

    /// The id of the record's `n`th tool call's span.
    fn tool(&self, n: usize) -> SpanId {
        let digest = crate::digest::sha256_hex(format!("{}:tool:{n}", self.hash).as_bytes());
        SpanId::from_bytes(hex_bytes(&digest)[..8].try_into().unwrap_or([4; 8]))
    }
}

/// The 32 bytes of a SHA-256 in hex (zeros where the text is no hex: never for a record
/// the ledger wrote).
fn hex_bytes(hex: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, pair) in hex.as_bytes().chunks(2).take(32).enumerate() {
        let digit = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
        out[i] = (digit(pair[0]) << 4) | pair.get(1).map_or(0, |&c| digit(c));
    }
    out
}

fn text<'v>(record: &'v Value, key: &str) -> Option<&'v str> {
    record.get(key).and_then(Value::as_str)
}

/// When the record was written (`at`), else now.
fn time_of(record: &Value) -> SystemTime {
    text(record, "at")
        .and_then(|at| at.parse::<jiff::Timestamp>().ok())
        .map_or_else(SystemTime::now, SystemTime::from)
}

fn before(end: SystemTime, record: &Value) -> SystemTime {
    let ms = record.get("latency_ms").and_then(Value::as_u64).unwrap_or(0);
    end.checked_sub(Duration::from_millis(ms)).unwrap_or(end)
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("pactum").with_version(env!("CARGO_PKG_VERSION")).build()
}

struct Span {
    name: String,
    trace: TraceId,
    id: SpanId,
    parent: SpanId,
    kind: SpanKind,
    start: SystemTime,
    end: SystemTime,
    attributes: Vec<KeyValue>,
    status: Status,
}

impl Span {
    fn data(self) -> SpanData {
        SpanData {
            span_context: SpanContext::new(
                self.trace,
                self.id,
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: self.parent,
            parent_span_is_remote: false,
            span_kind: self.kind,
            name: Cow::Owned(self.name),
            start_time: self.start,
            end_time: self.end.max(self.start),
            attributes: self.attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: self.status,
            instrumentation_scope: scope(),
        }
    }
}

/// Attributes taken from a record's fields, when present.
struct Attrs<'r> {
    record: &'r Value,
    out: Vec<KeyValue>,
}

impl<'r> Attrs<'r> {
    fn new(record: &'r Value) -> Self {
        let mut a = Attrs { record, out: Vec::new() };
        a.set("pactum.ledger.hash", record.get("hash"));
        a.int("pactum.ledger.seq", record.get("seq"));
        a.set("pactum.worker.id", record.get("worker_id"));
        a.set("gen_ai.conversation.id", record.get("session_id"));
        a.set("gen_ai.agent.id", record.get("agent_id"));
        a.set("pactum.agent.class", record.get("agent_class"));
        a.set("pactum.tier", record.get("tier"));
        a
    }

    fn put(&mut self, key: &'static str, value: impl Into<Attr>) {
        self.out.push(KeyValue::new(key, value));
    }

    /// `key` from a string field.
    fn set(&mut self, key: &'static str, value: Option<&Value>) {
        if let Some(v) = value.and_then(Value::as_str) {
            self.put(key, v.to_string());
        }
    }

    fn int(&mut self, key: &'static str, value: Option<&Value>) {
        if let Some(v) = value.and_then(Value::as_i64) {
            self.put(key, v);
        }
    }

    fn field(&mut self, key: &'static str, field: &str) {
        self.set(key, self.record.get(field));
    }
}

/// A value's text for a content attribute, cut to [`MAX_CONTENT_BYTES`].
fn content_text(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    cut(text)
}

fn cut(mut text: String) -> String {
    if text.len() > MAX_CONTENT_BYTES {
        let whole = text.len();
        let mut at = MAX_CONTENT_BYTES;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
        text.push_str(&format!("… [cut: {whole} bytes in all; the ledger keeps them]"));
    }
    text
}

/// The failure of a record: its code as `error.type` and its first message as the status.
fn failure(record: &Value, code: Option<&str>, attrs: &mut Attrs) -> Status {
    let Some(code) = code else { return Status::Unset };
    attrs.put("error.type", code.to_string());
    let message = record
        .get("errors")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .or(text(record, "message"))
        .unwrap_or(code);
    Status::error(cut(message.to_string()))
}

fn work_order_span(record: &Value, open: Option<Open>, id: &Ids, end: SystemTime) -> SpanData {
    let wo = text(record, "work_order_id").unwrap_or("");
    let mut a = Attrs::new(record);
    a.put("gen_ai.operation.name", "invoke_agent");
    a.field("pactum.work_order.id", "work_order_id");
    a.field("pactum.work_order.kind", "work_order_kind");
    a.field("pactum.work_order.file", "work_order_file");
    a.field("pactum.work_order.status", "status");
    let failed = text(record, "event") == Some("work_order_failed");
    let code = failed.then(|| text(record, "code").unwrap_or("work_order_failed"));
    let status = failure(record, code, &mut a);
    let (trace, root, start) = match open {
        Some(o) => (o.trace, o.root, o.start),
        // Ended without a start this ledger saw (a work order that could not load): a
        // trace of its own.
        None => (id.trace, id.root, end),
    };
    Span {
        name: if wo.is_empty() { "invoke_agent".into() } else { format!("invoke_agent {wo}") },
        trace,
        id: root,
        parent: SpanId::INVALID,
        kind: SpanKind::Internal,
        start,
        end,
        attributes: a.out,
        status: if failed { status } else { Status::Ok },
    }
    .data()
}

fn exchange_spans(
    record: &Value,
    attached: &Map<String, Value>,
    content: bool,
    parent: Option<(TraceId, SpanId)>,
    id: &Ids,
    end: SystemTime,
) -> Vec<SpanData> {
    let (trace, parent) = parent.unwrap_or((id.trace, SpanId::INVALID));
    let model = text(record, "model").or(text(record, "response_model"));
    let mut a = Attrs::new(record);
    a.put("gen_ai.operation.name", "chat");
    a.field("gen_ai.provider.name", "provider");
    a.field("gen_ai.request.model", "model");
    a.field("gen_ai.response.model", "response_model");
    let usage = record.get("usage");
    a.int("gen_ai.usage.input_tokens", usage.and_then(|u| u.get("prompt_tokens")));
    a.int("gen_ai.usage.output_tokens", usage.and_then(|u| u.get("completion_tokens")));
    if let Some(reason) = text(record, "finish_reason") {
        let reasons = Array::String(vec![StringValue::from(reason.to_string())]);
        a.put("gen_ai.response.finish_reasons", Attr::Array(reasons));
    }
    a.field("pactum.contract.id", "contract_id");
    a.field("pactum.contract.version", "contract_version");
    a.field("pactum.contract.sha256", "contract_sha256");
    a.field("pactum.prompt_pack.id", "prompt_pack_id");
    a.field("pactum.prompt_pack.version", "prompt_pack_version");
    a.field("pactum.prompt_pack.sha256", "prompt_pack_sha256");
    a.field("pactum.prompt.sha256", "prompt_hash");
    a.field("pactum.work_order.id", "work_order_id");
    a.field("pactum.verdict", "verdict");
    a.field("pactum.extraction_method", "extraction_method");
    a.field("pactum.role", "role");
    a.int("pactum.repair_attempt", record.get("repair_attempt"));
    a.int("pactum.attempts", record.get("attempts"));
    if content {
        if let Some(prompt) = attached.get("prompt").and_then(Value::as_array) {
            a.put("gen_ai.input.messages", cut(input_messages(prompt).to_string()));
        }
        if let Some(reply) = record.get("raw_response").filter(|r| !r.is_null()) {
            let reason = text(record, "finish_reason");
            a.put("gen_ai.output.messages", output_messages(reply, reason).to_string());
        }
    }
    let verdict = text(record, "verdict").unwrap_or("ok");
    let code = (verdict != "ok" && verdict != "tool_calls").then_some(verdict);
    let status = failure(record, code, &mut a);
    let chat = Span {
        name: model.map_or_else(|| "chat".to_string(), |m| format!("chat {m}")),
        trace,
        id: id.span,
        parent,
        kind: SpanKind::Client,
        start: before(end, record),
        end,
        attributes: a.out,
        status,
    };
    let mut spans = tool_spans(record.get("disclosures"), content, (trace, id.span), id, end);
    spans.insert(0, chat.data());
    spans
}

/// The prompt's messages in the GenAI conventions' shape: role and text parts.
fn input_messages(prompt: &[Value]) -> Value {
    Value::Array(
        prompt
            .iter()
            .map(|m| {
                json!({
                    "role": m.get("role").cloned().unwrap_or(Value::Null),
                    "parts": [{"type": "text", "content": m.get("content").cloned().unwrap_or(Value::Null)}],
                })
            })
            .collect(),
    )
}

fn output_messages(reply: &Value, finish_reason: Option<&str>) -> Value {
    json!([{
        "role": "assistant",
        "parts": [{"type": "text", "content": content_text(reply)}],
        "finish_reason": finish_reason,
    }])
}

/// The spans of tool calls (`calls`: an array of calls, as `disclosures` and a cycle's
/// `tool_calls` hold them) under `parent`. A call that says when it ended and how long it
/// took (a kernel step's) spans that time; a reply's calls end with their record.
fn tool_spans(
    calls: Option<&Value>,
    content: bool,
    (trace, parent): (TraceId, SpanId),
    id: &Ids,
    end: SystemTime,
) -> Vec<SpanData> {
    let Some(calls) = calls.and_then(Value::as_array) else { return Vec::new() };
    calls
        .iter()
        .enumerate()
        .map(|(n, call)| {
            let tool = text(call, "tool").unwrap_or("");
            let mut a = Attrs { record: call, out: Vec::new() };
            a.put("gen_ai.operation.name", "execute_tool");
            a.put("gen_ai.tool.type", "function");
            a.field("gen_ai.tool.name", "tool");
            a.field("gen_ai.tool.call.id", "id");
            a.field("pactum.step_id", "step_id");
            if content {
                if let Some(args) = call.get("arguments") {
                    a.put("gen_ai.tool.call.arguments", content_text(args));
                }
                if let Some(result) = call.get("result").or(call.get("output")) {
                    a.put("gen_ai.tool.call.result", content_text(result));
                }
            }
            let code = if let Some(refused) = text(call, "refused") {
                Some(refused.to_string())
            } else if let Some(e) = call.get("error") {
                Some(text(e, "code").unwrap_or("tool_failed").to_string())
            } else if call.get("is_error").and_then(Value::as_bool) == Some(true) {
                Some("tool_error".to_string())
            } else {
                None
            };
            let status = match &code {
                Some(code) => {
                    a.put("error.type", code.clone());
                    let message = call.get("error").and_then(|e| text(e, "message"));
                    Status::error(cut(message.unwrap_or(code).to_string()))
                }
                None => Status::Unset,
            };
            let ended = text(call, "at")
                .and_then(|at| at.parse::<jiff::Timestamp>().ok())
                .map_or(end, SystemTime::from);
            Span {
                name: if tool.is_empty() {
                    "execute_tool".into()
                } else {
                    format!("execute_tool {tool}")
                },
                trace,
                id: id.tool(n),
                parent,
                kind: SpanKind::Internal,
                start: before(ended, call),
                end: ended,
                attributes: a.out,
                status,
            }
            .data()
        })
        .collect()
}

fn eval_span(record: &Value, id: &Ids, end: SystemTime) -> SpanData {
    let mut a = Attrs::new(record);
    a.put("gen_ai.operation.name", "evaluate");
    a.field("gen_ai.provider.name", "provider");
    let suites: Vec<StringValue> = record
        .get("suites")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| text(s, "eval_id"))
        .map(|s| StringValue::from(s.to_string()))
        .collect();
    a.put("pactum.eval.suites", Attr::Array(Array::String(suites)));
    let ok = record.get("ok").and_then(Value::as_bool).unwrap_or(false);
    a.put("pactum.eval.ok", ok);
    Span {
        name: "eval".into(),
        trace: id.trace,
        id: id.root,
        parent: SpanId::INVALID,
        kind: SpanKind::Internal,
        start: end,
        end,
        attributes: a.out,
        status: if ok { Status::Ok } else { Status::error("the evaluation found problems") },
    }
    .data()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr<'s>(span: &'s SpanData, key: &str) -> Option<&'s Attr> {
        span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
    }

    const H1: &str = "1111111111111111111111111111111111111111111111111111111111111111";
    const H2: &str = "2222222222222222222222222222222222222222222222222222222222222222";
    const H3: &str = "3333333333333333333333333333333333333333333333333333333333333333";

    #[test]
    fn a_work_order_is_one_trace_with_its_exchanges_and_their_tool_calls_under_it() {
        let mut t = Traces::default();
        let started = json!({"kind": "work_order", "event": "work_order_started", "work_order_id": "WO-1",
            "hash": H1, "seq": 1, "at": "2026-01-01T00:00:00Z"});
        assert!(t.spans(&started, &Map::new(), false).is_empty());
        let exchange = json!({"kind": "exchange", "event": "exchange", "work_order_id": "WO-1", "hash": H2,
            "seq": 2, "at": "2026-01-01T00:00:02.500Z", "latency_ms": 1500, "model": "m1",
            "usage": {"prompt_tokens": 10, "completion_tokens": 3}, "verdict": "ok",
            "contract_id": "PRC-A-001", "raw_response": "secret reply",
            "disclosures": [{"id": "c1", "tool": "memory_read", "arguments": {"k": 1}, "is_error": false, "result": "x"}]});
        let prompt = json!({"prompt": [{"role": "user", "content": "hello"}]});
        let spans = t.spans(&exchange, prompt.as_object().unwrap(), false);
        assert_eq!(spans.len(), 2);
        let (chat, tool) = (&spans[0], &spans[1]);
        assert_eq!(chat.name, "chat m1");
        assert_eq!(chat.span_context.trace_id(), Ids::of(H1).trace);
        assert_eq!(chat.parent_span_id, Ids::of(H1).root);
        assert_eq!(
            chat.end_time.duration_since(chat.start_time).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(attr(chat, "gen_ai.usage.input_tokens"), Some(&Attr::I64(10)));
        assert_eq!(attr(chat, "pactum.contract.id"), Some(&Attr::from("PRC-A-001")));
        assert!(attr(chat, "gen_ai.output.messages").is_none(), "no content unless asked");
        assert!(attr(chat, "gen_ai.input.messages").is_none());
        assert_eq!(tool.parent_span_id, chat.span_context.span_id());
        assert_eq!(tool.name, "execute_tool memory_read");
        let ended = json!({"kind": "work_order", "event": "work_order_completed", "work_order_id": "WO-1",
            "hash": H3, "seq": 3, "at": "2026-01-01T00:00:03Z", "status": "completed"});
        let root = t.spans(&ended, &Map::new(), false);
        assert_eq!(root.len(), 1);
        assert_eq!(root[0].span_context.span_id(), Ids::of(H1).root);
        assert_eq!(root[0].parent_span_id, SpanId::INVALID);
        assert_eq!(
            root[0].end_time.duration_since(root[0].start_time).unwrap(),
            Duration::from_secs(3)
        );
        // With content: the prompt and the reply, in the conventions' message shape.
        let spans = t.spans(&exchange, prompt.as_object().unwrap(), true);
        let input = attr(&spans[0], "gen_ai.input.messages").unwrap().as_str();
        assert!(input.contains("\"hello\"") && input.contains("\"parts\""), "{input}");
        let output = attr(&spans[0], "gen_ai.output.messages").unwrap().as_str();
        assert!(output.contains("secret reply"), "{output}");
        // The work order ended: a later exchange of the same id is a trace of its own.
        let later = t.spans(&exchange, &Map::new(), false);
        assert_eq!(later[0].parent_span_id, SpanId::INVALID);
        assert_eq!(later[0].span_context.trace_id(), Ids::of(H2).trace);
    }

    #[test]
    fn failures_carry_their_code_and_content_is_cut() {
        let mut t = Traces::default();
        let long = "é".repeat(MAX_CONTENT_BYTES);
        let exchange = json!({"kind": "exchange", "hash": H2, "verdict": "output_schema_invalid",
            "errors": [{"code": "output_schema_invalid", "message": "no `label`"}], "raw_response": long});
        let spans = t.spans(&exchange, &Map::new(), true);
        assert_eq!(attr(&spans[0], "error.type"), Some(&Attr::from("output_schema_invalid")));
        assert_eq!(spans[0].status, Status::error("no `label`"));
        let output = attr(&spans[0], "gen_ai.output.messages").unwrap().as_str();
        assert!(
            output.len() < MAX_CONTENT_BYTES + 200 && output.contains("[cut: "),
            "{}",
            output.len()
        );
        let failed = json!({"kind": "work_order", "event": "work_order_failed", "hash": H3,
            "work_order_id": null, "code": "work_order_invalid", "message": "bad file"});
        let root = t.spans(&failed, &Map::new(), false);
        assert_eq!(root[0].status, Status::error("bad file"));
        assert_eq!(root[0].name, "invoke_agent");
    }

    #[test]
    fn ids_come_from_the_hash() {
        let ids = Ids::of(H2);
        assert_eq!(ids.trace, TraceId::from_bytes([0x22; 16]));
        assert_eq!(ids.span, SpanId::from_bytes([0x22; 8]));
        assert_ne!(ids.tool(0), ids.tool(1));
        assert_eq!(ids.tool(1), Ids::of(H2).tool(1));
    }
}
