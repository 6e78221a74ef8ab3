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
//! - An evaluation run is a trace too: its `eval_completed` record is the root `eval`
//!   span (starting at the run's `started_at`), and its cases' exchanges, which name the run
//!   (`eval_run`, also on a worker's ledger), are `chat` spans under it.
//! - A replayed or scripted exchange (`latency_recorded`) is a span of no length: the
//!   recording's latency is an attribute (`pactum.latency.recorded_ms`), not a measurement.
//! - With content, a reply that called tools has `tool_call` parts, and a later round's
//!   input carries the earlier rounds (the model's calls, a `tool` message of responses).
//!
//! A work order's records after its start name the start record (`work_order_started`), so
//! each finds its trace on its own: a kernel's cycles in a `--log` file of their own, and two
//! runs of one id at once (`--jobs`), come out as they went. A record that names no start
//! (an older ledger) joins the last open start of its work-order id.
//!
//! Span ids are the first bytes of the record's hash (and of the SHA-256 of the hash and the
//! call's place, for tool calls): deterministic, and a span names the ledger record it came
//! from (`pactum.ledger.seq`, `pactum.ledger.hash`).
//!
//! **Every text a span carries passes one gate ([`Text`], made only by `Gate`):** masked by
//! the process's redactor (the run's, which masked the ledger too; for `ledger export`, the
//! exporting environment's, which may know a key the run did not), then cut: content
//! (`--otlp-content`) to [`MAX_CONTENT_BYTES`], everything else (a span's name, an id, a
//! model, a code) to [`MAX_TEXT_BYTES`], arrays to [`MAX_ITEMS`] items. Without content a
//! failure's status is its code: error messages quote inputs and replies.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value as Attr};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use serde_json::{Map, Value, json};

use crate::redact::Redactor;

/// The most of one content attribute's text (a prompt, a reply, a tool's arguments or
/// result) a span carries, the note saying it was cut included: collectors refuse large
/// requests, and a span is for finding the exchange, the ledger is for reading it whole.
pub const MAX_CONTENT_BYTES: usize = 16 * 1024;

/// The most of any other text on a span (its name, an id, a model, a code, a status without
/// content, an array's item), the note saying it was cut included.
pub const MAX_TEXT_BYTES: usize = 1024;

/// The most items of an array attribute (an eval's suites).
pub const MAX_ITEMS: usize = 128;

/// Work orders open at once whose end is awaited; past it the oldest open one is forgotten
/// (its spans still go out; its root span does not). Only a run that died between a start
/// and its end leaves one open.
const MAX_OPEN: usize = 65_536;

/// The traces of work orders started and not yet ended, and the gate every text passes.
#[derive(Debug)]
pub struct Traces {
    redactor: Arc<Redactor>,
    /// By the hash of their `work_order_started` record.
    open: HashMap<String, Open>,
    /// The last start of each work-order id (by the SHA-256 of the id: an id may be as long
    /// as a ledger line), for records that do not name their start.
    latest: HashMap<String, String>,
    /// Starts in the order they came, for forgetting the oldest past [`MAX_OPEN`].
    opened: VecDeque<String>,
}

#[derive(Clone, Debug)]
struct Open {
    trace: TraceId,
    root: SpanId,
    start: SystemTime,
    /// The SHA-256 of the work order's id.
    key: String,
}

impl Traces {
    /// A mapping whose spans' texts are masked by `redactor`.
    pub fn new(redactor: Arc<Redactor>) -> Traces {
        Traces { redactor, open: HashMap::new(), latest: HashMap::new(), opened: VecDeque::new() }
    }

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
        let redactor = Arc::clone(&self.redactor);
        let gate = Gate { redactor: &redactor, content };
        match (kind, event) {
            ("work_order", Some("work_order_started")) => {
                if let Some(wo) = wo {
                    self.open(hash, wo, &id, end);
                }
                Vec::new()
            }
            ("work_order", _) => {
                let open = self.close(record, wo, end);
                vec![work_order_span(&gate, record, open, &id, end)]
            }
            ("exchange", _) => {
                let parent = self.parent(record, wo);
                exchange_spans(&gate, record, attached, parent, &id, end)
            }
            ("cycle", _) => {
                let parent = self.parent(record, wo).unwrap_or((id.trace, SpanId::INVALID));
                tool_spans(&gate, record.get("tool_calls"), parent, &id, end)
            }
            ("eval", _) => vec![eval_span(&gate, record, &id, end)],
            _ => Vec::new(),
        }
    }

    /// The resource of spans sent for `instance` (a worker's id: `service.instance.id`),
    /// its id through the same gate as every span's text.
    pub fn resource(&self, instance: Option<&str>) -> Resource {
        let mut resource = Resource::builder_empty()
            .with_service_name("pactum")
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
        if let Some(instance) = instance {
            let gate = Gate { redactor: &self.redactor, content: false };
            resource = resource
                .with_attribute(KeyValue::new("service.instance.id", gate.text(instance).0));
        }
        resource.build()
    }

    /// The root a record hangs under: the start record it names (from the record alone),
    /// else the last start of its work order's id still open.
    fn parent(&self, record: &Value, wo: Option<&str>) -> Option<(TraceId, SpanId)> {
        if let Some(start) = named_start(record).or_else(|| named_eval(record)) {
            let ids = Ids::of(start);
            return Some((ids.trace, ids.root));
        }
        let start = wo.and_then(|wo| self.latest.get(&key(wo)))?;
        self.open.get(start).map(|o| (o.trace, o.root))
    }

    fn open(&mut self, hash: &str, wo: &str, id: &Ids, start: SystemTime) {
        while self.open.len() >= MAX_OPEN {
            let Some(oldest) = self.opened.pop_front() else { break };
            if let Some(o) = self.open.remove(&oldest) {
                self.forget(&o.key, &oldest);
            }
        }
        let key = key(wo);
        self.latest.insert(key.clone(), hash.to_string());
        self.open.insert(hash.to_string(), Open { trace: id.trace, root: id.root, start, key });
        self.opened.push_back(hash.to_string());
        // Starts of work orders that ended are dropped once they outnumber the open ones
        // (a pass over at most 2 × MAX_OPEN entries, once per MAX_OPEN starts).
        if self.opened.len() > 2 * MAX_OPEN {
            let open = &self.open;
            self.opened.retain(|h| open.contains_key(h));
        }
    }

    /// The work order an end record closes: the start it names, else the last start of its
    /// id. A start it names that is not open (in another file, or forgotten) still gives the
    /// trace and root; the root then starts when it ends.
    fn close(&mut self, record: &Value, wo: Option<&str>, end: SystemTime) -> Option<Open> {
        let named = named_start(record);
        let start = match named {
            Some(start) => start.to_string(),
            None => self.latest.get(&key(wo?))?.clone(),
        };
        match self.open.remove(&start) {
            Some(o) => {
                self.forget(&o.key, &start);
                Some(o)
            }
            None => named.map(|start| {
                let ids = Ids::of(start);
                Open { trace: ids.trace, root: ids.root, start: end, key: String::new() }
            }),
        }
    }

    /// Drops `key`'s last start when it is `start`.
    fn forget(&mut self, key: &str, start: &str) {
        if self.latest.get(key).is_some_and(|s| s == start) {
            self.latest.remove(key);
        }
    }
}

/// The `work_order_started` record a record names, when it names one.
fn named_start(record: &Value) -> Option<&str> {
    text(record, "work_order_started").filter(|h| crate::digest::is_sha256_hex(h))
}

/// The evaluation run a record names (`eval_run`): an eval case's exchange, the run's
/// `eval_completed`. The run's trace and its `eval` span's id come from it.
fn named_eval(record: &Value) -> Option<&str> {
    text(record, "eval_run").filter(|h| crate::digest::is_sha256_hex(h))
}

/// What a work order's id is known by.
fn key(wo: &str) -> String {
    crate::digest::sha256_hex(wo.as_bytes())
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

/// Text a span may carry: masked, then cut to its bound. Made only by [`Gate`].
#[derive(Clone, Debug)]
struct Text(String);

/// The one way text reaches a span.
struct Gate<'r> {
    redactor: &'r Redactor,
    /// Whether content (`--otlp-content`) goes.
    content: bool,
}

impl Gate<'_> {
    /// A name, an id, a model, a code: masked, cut to [`MAX_TEXT_BYTES`].
    fn text(&self, text: &str) -> Text {
        Text(cut(&self.redactor.redact(text), MAX_TEXT_BYTES))
    }

    /// Content: masked, cut to [`MAX_CONTENT_BYTES`].
    fn content(&self, text: &str) -> Text {
        Text(cut(&self.redactor.redact(text), MAX_CONTENT_BYTES))
    }

    /// A value's text as content (a string's own text, anything else its JSON).
    fn content_of(&self, value: &Value) -> Text {
        match value {
            Value::String(s) => self.content(s),
            other => self.content(&other.to_string()),
        }
    }
}

/// `text`, or as much of it as fits `limit` bytes with a note saying how long it was.
fn cut(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let note = format!("… [cut: {} bytes in all]", text.len());
    let mut at = limit.saturating_sub(note.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}{note}", &text[..at])
}

struct Span {
    name: Text,
    trace: TraceId,
    id: SpanId,
    parent: SpanId,
    kind: SpanKind,
    start: SystemTime,
    end: SystemTime,
    attributes: Attrs,
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
            name: Cow::Owned(self.name.0),
            start_time: self.start,
            end_time: self.end.max(self.start),
            attributes: self.attributes.out,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: self.status,
            instrumentation_scope: scope(),
        }
    }
}

/// A span's attributes: texts from the gate, numbers and flags.
struct Attrs {
    out: Vec<KeyValue>,
}

impl Attrs {
    /// The attributes every span of a record has, when present.
    fn of(gate: &Gate, record: &Value) -> Self {
        let mut a = Attrs { out: Vec::new() };
        a.field(gate, "pactum.ledger.hash", record, "hash");
        a.int("pactum.ledger.seq", record.get("seq"));
        a.field(gate, "pactum.worker.id", record, "worker_id");
        a.field(gate, "gen_ai.conversation.id", record, "session_id");
        a.field(gate, "gen_ai.agent.id", record, "agent_id");
        a.field(gate, "pactum.agent.class", record, "agent_class");
        a.field(gate, "pactum.tier", record, "tier");
        a
    }

    fn text(&mut self, key: &'static str, text: Text) {
        self.out.push(KeyValue::new(key, text.0));
    }

    fn flag(&mut self, key: &'static str, value: bool) {
        self.out.push(KeyValue::new(key, value));
    }

    fn int(&mut self, key: &'static str, value: Option<&Value>) {
        if let Some(v) = value.and_then(Value::as_i64) {
            self.out.push(KeyValue::new(key, v));
        }
    }

    /// `key` from a string field of `record`, when it has one.
    fn field(&mut self, gate: &Gate, key: &'static str, record: &Value, field: &str) {
        if let Some(v) = text(record, field) {
            self.text(key, gate.text(v));
        }
    }

    /// An array of texts, at most [`MAX_ITEMS`] of them.
    fn texts<'v>(&mut self, gate: &Gate, key: &'static str, items: impl Iterator<Item = &'v str>) {
        let items = items.take(MAX_ITEMS).map(|s| StringValue::from(gate.text(s).0)).collect();
        self.out.push(KeyValue::new(key, Attr::Array(Array::String(items))));
    }
}

/// The failure of a record: its code as `error.type` and as the status; with content, the
/// status is its first message instead (messages quote inputs and replies).
fn failure(gate: &Gate, record: &Value, code: Option<&str>, attrs: &mut Attrs) -> Status {
    let Some(code) = code else { return Status::Unset };
    let code = gate.text(code);
    attrs.text("error.type", code.clone());
    if !gate.content {
        return Status::error(code.0);
    }
    let message = record
        .get("errors")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .or(text(record, "message"));
    Status::error(message.map_or(code, |m| gate.content(m)).0)
}

fn work_order_span(
    gate: &Gate,
    record: &Value,
    open: Option<Open>,
    id: &Ids,
    end: SystemTime,
) -> SpanData {
    let wo = text(record, "work_order_id").unwrap_or("");
    let mut a = Attrs::of(gate, record);
    a.text("gen_ai.operation.name", gate.text("invoke_agent"));
    a.field(gate, "pactum.work_order.id", record, "work_order_id");
    a.field(gate, "pactum.work_order.kind", record, "work_order_kind");
    a.field(gate, "pactum.work_order.file", record, "work_order_file");
    a.field(gate, "pactum.work_order.status", record, "status");
    let failed = text(record, "event") == Some("work_order_failed");
    let code = failed.then(|| text(record, "code").unwrap_or("work_order_failed"));
    let status = failure(gate, record, code, &mut a);
    let (trace, root, start) = match open {
        Some(o) => (o.trace, o.root, o.start),
        // Ended without a start this ledger saw (a work order that could not load): a
        // trace of its own.
        None => (id.trace, id.root, end),
    };
    Span {
        name: gate.text(&if wo.is_empty() {
            "invoke_agent".to_string()
        } else {
            format!("invoke_agent {wo}")
        }),
        trace,
        id: root,
        parent: SpanId::INVALID,
        kind: SpanKind::Internal,
        start,
        end,
        attributes: a,
        status: if failed { status } else { Status::Ok },
    }
    .data()
}

/// A recorded finish reason as the provider's own API names it: the ledger keeps one name
/// for a reply that calls tools (`tool_use`), which OpenAI calls `tool_calls`.
fn api_reason<'r>(provider_kind: Option<&str>, reason: &'r str) -> &'r str {
    match (provider_kind, reason) {
        (Some("openai"), "tool_use") => "tool_calls",
        _ => reason,
    }
}

fn exchange_spans(
    gate: &Gate,
    record: &Value,
    attached: &Map<String, Value>,
    parent: Option<(TraceId, SpanId)>,
    id: &Ids,
    end: SystemTime,
) -> Vec<SpanData> {
    let (trace, parent) = parent.unwrap_or((id.trace, SpanId::INVALID));
    let model = text(record, "model").or(text(record, "response_model"));
    let mut a = Attrs::of(gate, record);
    a.text("gen_ai.operation.name", gate.text("chat"));
    // The provider's kind (`openai`, `anthropic`: what GenAI viewers know), its table's
    // name in pactum.toml as pactum's own attribute.
    let kind = if text(record, "provider_kind").is_some() { "provider_kind" } else { "provider" };
    a.field(gate, "gen_ai.provider.name", record, kind);
    a.field(gate, "pactum.provider", record, "provider");
    a.field(gate, "gen_ai.request.model", record, "model");
    a.field(gate, "gen_ai.response.model", record, "response_model");
    let usage = record.get("usage");
    a.int("gen_ai.usage.input_tokens", usage.and_then(|u| u.get("prompt_tokens")));
    a.int("gen_ai.usage.output_tokens", usage.and_then(|u| u.get("completion_tokens")));
    let provider_kind = text(record, "provider_kind").or(text(record, "provider"));
    let finish_reason = text(record, "finish_reason").map(|r| api_reason(provider_kind, r));
    if let Some(reason) = finish_reason {
        a.texts(gate, "gen_ai.response.finish_reasons", std::iter::once(reason));
    }
    a.field(gate, "pactum.contract.id", record, "contract_id");
    a.field(gate, "pactum.contract.version", record, "contract_version");
    a.field(gate, "pactum.contract.sha256", record, "contract_sha256");
    a.field(gate, "pactum.prompt_pack.id", record, "prompt_pack_id");
    a.field(gate, "pactum.prompt_pack.version", record, "prompt_pack_version");
    a.field(gate, "pactum.prompt_pack.sha256", record, "prompt_pack_sha256");
    a.field(gate, "pactum.prompt.sha256", record, "prompt_hash");
    a.field(gate, "pactum.work_order.id", record, "work_order_id");
    a.field(gate, "pactum.verdict", record, "verdict");
    a.field(gate, "pactum.extraction_method", record, "extraction_method");
    a.field(gate, "pactum.role", record, "role");
    a.int("pactum.repair_attempt", record.get("repair_attempt"));
    a.int("pactum.attempts", record.get("attempts"));
    // A replayed or scripted latency is the recording's: an attribute, never the span's
    // length, which only a measured call has.
    let recorded = record.get("latency_recorded").and_then(Value::as_bool) == Some(true);
    if recorded {
        a.int("pactum.latency.recorded_ms", record.get("latency_ms"));
    }
    if gate.content {
        if let Some(prompt) = attached.get("prompt").and_then(Value::as_array) {
            let turns = attached.get("turns");
            a.text("gen_ai.input.messages", input_messages(gate, prompt, turns));
        }
        if let Some(reply) = record.get("raw_response").filter(|r| !r.is_null()) {
            let calls = record.get("disclosures");
            let output = output_messages(gate, reply, calls, finish_reason);
            a.text("gen_ai.output.messages", output);
        }
    }
    let verdict = text(record, "verdict").unwrap_or("ok");
    let code = (verdict != "ok" && verdict != "tool_calls").then_some(verdict);
    let status = failure(gate, record, code, &mut a);
    let chat = Span {
        name: gate.text(&model.map_or_else(|| "chat".to_string(), |m| format!("chat {m}"))),
        trace,
        id: id.span,
        parent,
        kind: SpanKind::Client,
        start: if recorded { end } else { before(end, record) },
        end,
        attributes: a,
        status,
    };
    let mut spans = tool_spans(gate, record.get("disclosures"), (trace, id.span), id, end);
    spans.insert(0, chat.data());
    spans
}

/// The prompt's messages in the GenAI conventions' shape (a role and its parts), then the
/// exchange's earlier rounds of tool use (`turns`): the model's text and `tool_call` parts,
/// then a `tool` message of `tool_call_response` parts.
fn input_messages(gate: &Gate, prompt: &[Value], turns: Option<&Value>) -> Text {
    let mut messages: Vec<Message> = prompt
        .iter()
        .map(|m| Message {
            role: m.get("role").and_then(Value::as_str).map(|r| gate.text(r).0),
            parts: vec![Part::Text(masked(gate, m.get("content")))],
            finish_reason: None,
        })
        .collect();
    for turn in turns.and_then(Value::as_array).into_iter().flatten() {
        let mut parts = Vec::new();
        let said = masked(gate, turn.get("text"));
        if !said.is_empty() {
            parts.push(Part::Text(said));
        }
        let calls = turn.get("calls").and_then(Value::as_array).into_iter().flatten();
        parts.extend(calls.map(|c| Part::call(gate, c, "name")));
        messages.push(Message { role: Some("assistant".into()), parts, finish_reason: None });
        let results = turn.get("results").and_then(Value::as_array).into_iter().flatten();
        let parts = results
            .map(|r| Part::Response {
                id: text(r, "id").map(|id| gate.text(id).0),
                response: masked(gate, r.get("content")),
            })
            .collect();
        messages.push(Message { role: Some("tool".into()), parts, finish_reason: None });
    }
    fitted(messages, "the prompt's")
}

/// The reply as one assistant message: its text, and a `tool_call` part per call it made
/// (`calls`: the record's `disclosures`).
fn output_messages(
    gate: &Gate,
    reply: &Value,
    calls: Option<&Value>,
    finish_reason: Option<&str>,
) -> Text {
    let calls: Vec<&Value> = calls.and_then(Value::as_array).into_iter().flatten().collect();
    let said = masked(gate, Some(reply));
    let mut parts = Vec::new();
    if !said.is_empty() || calls.is_empty() {
        parts.push(Part::Text(said));
    }
    parts.extend(calls.into_iter().map(|c| Part::call(gate, c, "tool")));
    let reply = Message {
        role: Some("assistant".into()),
        parts,
        finish_reason: finish_reason.map(|r| gate.text(r).0),
    };
    fitted(vec![reply], "the reply's")
}

/// A value's text, masked (a string's own text, anything else its JSON).
fn masked(gate: &Gate, value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => gate.redactor.redact(s).into_owned(),
        Some(Value::Null) | None => String::new(),
        Some(other) => gate.redactor.redact(&other.to_string()).into_owned(),
    }
}

/// A message in the GenAI conventions' shape, before it is fitted into its attribute.
struct Message {
    role: Option<String>,
    parts: Vec<Part>,
    finish_reason: Option<String>,
}

enum Part {
    Text(String),
    /// A call: its arguments as masked JSON text (JSON again when they fit).
    Call {
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    Response {
        id: Option<String>,
        response: String,
    },
}

impl Part {
    /// The bytes of the part's content.
    fn len(&self) -> usize {
        match self {
            Part::Text(t) => t.len(),
            Part::Call { arguments, .. } => arguments.len(),
            Part::Response { response, .. } => response.len(),
        }
    }

    /// A `tool_call` part from a call whose tool is named by `name_key`.
    fn call(gate: &Gate, call: &Value, name_key: &str) -> Part {
        Part::Call {
            id: text(call, "id").map(|id| gate.text(id).0),
            name: text(call, name_key).map(|n| gate.text(n).0),
            arguments: masked(gate, call.get("arguments")),
        }
    }

    /// The part's JSON, its content cut to `room` bytes of JSON with `note` when it is given.
    fn json(&self, cut: Option<(usize, &str)>) -> Value {
        let fit = |content: &str| match cut {
            Some((room, note)) => format!("{}{note}", json_prefix(content, room)),
            None => content.to_string(),
        };
        match self {
            Part::Text(t) => json!({"type": "text", "content": fit(t)}),
            Part::Call { id, name, arguments } => {
                let arguments = match cut {
                    None => serde_json::from_str(arguments)
                        .unwrap_or_else(|_| Value::String(arguments.clone())),
                    Some(_) => Value::String(fit(arguments)),
                };
                json!({"type": "tool_call", "id": id, "name": name, "arguments": arguments})
            }
            Part::Response { id, response } => {
                json!({"type": "tool_call_response", "id": id, "response": fit(response)})
            }
        }
    }
}

/// The bytes kept back for the part cut last: at least a text part of the note alone.
const CUT_RESERVE: usize = 160;

/// `messages` as one JSON text of at most about [`MAX_CONTENT_BYTES`] that stays JSON when
/// they are cut: the parts share the bytes, the part where they run out is cut (saying how
/// long `whose` text was in all) and the rest left out.
fn fitted(messages: Vec<Message>, whose: &str) -> Text {
    let whole: usize = messages.iter().flat_map(|m| &m.parts).map(Part::len).sum();
    let note = format!("… [cut: {whose} {whole} bytes in all]");
    // Kept back for the part that says where the text was cut.
    let mut left = MAX_CONTENT_BYTES - CUT_RESERVE;
    let mut out = Vec::new();
    'messages: for m in messages {
        // The message's own frame (its role, finish reason, brackets, the comma after it).
        let mut frame = json!({"role": m.role, "parts": []});
        if let Some(reason) = &m.finish_reason {
            frame["finish_reason"] = json!(reason);
        }
        left = left.saturating_sub(frame.to_string().len() + 1);
        let mut parts = Vec::new();
        let mut full = false;
        for p in &m.parts {
            let part = p.json(None);
            // Its JSON and the comma before the next.
            let size = part.to_string().len() + 1;
            if size <= left {
                left -= size;
                parts.push(part);
                continue;
            }
            // Cut within the part when its frame (type, ids, the note) leaves room, else
            // a text part of the note alone.
            // The array's own brackets come out of the reserve too.
            let room = (left + CUT_RESERVE).saturating_sub(2);
            let frame = p.json(Some((0, &note))).to_string().len() + 1;
            parts.push(if frame <= room {
                p.json(Some((room - frame, &note)))
            } else {
                json!({"type": "text", "content": note})
            });
            full = true;
            break;
        }
        let mut message = json!({"role": m.role, "parts": parts});
        if let Some(reason) = m.finish_reason {
            message["finish_reason"] = json!(reason);
        }
        out.push(message);
        if full || left == 0 {
            break 'messages;
        }
    }
    Text(Value::Array(out).to_string())
}

/// The longest prefix of `text` whose JSON escaping takes at most `room` bytes.
fn json_prefix(text: &str, room: usize) -> &str {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        let cost = match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        };
        if used + cost > room {
            return &text[..at];
        }
        used += cost;
    }
    text
}

/// The spans of tool calls (`calls`: an array of calls, as `disclosures` and a cycle's
/// `tool_calls` hold them) under `parent`. A call spans the time it took, ending when it
/// was answered (`at`, `latency_ms`: a kernel step's and a reply's calls say both); a call
/// of an older record that does not ends with its record.
fn tool_spans(
    gate: &Gate,
    calls: Option<&Value>,
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
            let mut a = Attrs { out: Vec::new() };
            a.text("gen_ai.operation.name", gate.text("execute_tool"));
            a.text("gen_ai.tool.type", gate.text("function"));
            a.field(gate, "gen_ai.tool.name", call, "tool");
            a.field(gate, "gen_ai.tool.call.id", call, "id");
            a.field(gate, "pactum.step_id", call, "step_id");
            if gate.content {
                if let Some(args) = call.get("arguments") {
                    a.text("gen_ai.tool.call.arguments", gate.content_of(args));
                }
                if let Some(result) = call.get("result").or(call.get("output")) {
                    a.text("gen_ai.tool.call.result", gate.content_of(result));
                }
            }
            let code = if let Some(refused) = text(call, "refused") {
                Some(refused)
            } else if let Some(e) = call.get("error") {
                Some(text(e, "code").unwrap_or("tool_failed"))
            } else if call.get("is_error").and_then(Value::as_bool) == Some(true) {
                Some("tool_error")
            } else {
                None
            };
            let status = match code {
                Some(code) => {
                    let code = gate.text(code);
                    a.text("error.type", code.clone());
                    let message = call.get("error").and_then(|e| text(e, "message"));
                    match message.filter(|_| gate.content) {
                        Some(message) => Status::error(gate.content(message).0),
                        None => Status::error(code.0),
                    }
                }
                None => Status::Unset,
            };
            let ended = text(call, "at")
                .and_then(|at| at.parse::<jiff::Timestamp>().ok())
                .map_or(end, SystemTime::from);
            Span {
                name: gate.text(&if tool.is_empty() {
                    "execute_tool".to_string()
                } else {
                    format!("execute_tool {tool}")
                }),
                trace,
                id: id.tool(n),
                parent,
                kind: SpanKind::Internal,
                start: before(ended, call),
                end: ended,
                attributes: a,
                status,
            }
            .data()
        })
        .collect()
}

fn eval_span(gate: &Gate, record: &Value, id: &Ids, end: SystemTime) -> SpanData {
    let mut a = Attrs::of(gate, record);
    a.text("gen_ai.operation.name", gate.text("evaluate"));
    a.field(gate, "gen_ai.provider.name", record, "provider");
    let suites = record.get("suites").and_then(Value::as_array).into_iter().flatten();
    a.texts(gate, "pactum.eval.suites", suites.filter_map(|s| text(s, "eval_id")));
    let ok = record.get("ok").and_then(Value::as_bool).unwrap_or(false);
    a.flag("pactum.eval.ok", ok);
    // The run its cases named: their chats hang under this span, in its trace.
    let (trace, root) = match named_eval(record) {
        Some(run) => {
            let ids = Ids::of(run);
            (ids.trace, ids.root)
        }
        None => (id.trace, id.root),
    };
    let start = text(record, "started_at")
        .and_then(|at| at.parse::<jiff::Timestamp>().ok())
        .map_or(end, SystemTime::from);
    Span {
        name: gate.text("eval"),
        trace,
        id: root,
        parent: SpanId::INVALID,
        kind: SpanKind::Internal,
        start: start.min(end),
        end,
        attributes: a,
        status: if ok { Status::Ok } else { Status::error("the evaluation found problems") },
    }
    .data()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn attr<'s>(span: &'s SpanData, key: &str) -> Option<&'s Attr> {
        span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
    }

    fn traces() -> Traces {
        Traces::new(Arc::new(Redactor::new()))
    }

    const H1: &str = "1111111111111111111111111111111111111111111111111111111111111111";
    const H2: &str = "2222222222222222222222222222222222222222222222222222222222222222";
    const H3: &str = "3333333333333333333333333333333333333333333333333333333333333333";

    #[test]
    fn a_work_order_is_one_trace_with_its_exchanges_and_their_tool_calls_under_it() {
        let mut t = traces();
        let started = json!({"kind": "work_order", "event": "work_order_started", "work_order_id": "WO-1",
            "hash": H1, "seq": 1, "at": "2026-01-01T00:00:00Z"});
        assert!(t.spans(&started, &Map::new(), false).is_empty());
        let exchange = json!({"kind": "exchange", "event": "exchange", "work_order_id": "WO-1", "hash": H2,
            "seq": 2, "at": "2026-01-01T00:00:02.500Z", "latency_ms": 1500, "model": "m1",
            "usage": {"prompt_tokens": 10, "completion_tokens": 3}, "verdict": "ok",
            "contract_id": "PRC-A-001", "raw_response": "secret reply",
            "disclosures": [{"id": "c1", "tool": "memory_read", "arguments": {"k": 1}, "is_error": false, "result": "x",
                "at": "2026-01-01T00:00:02.400Z", "latency_ms": 250}]});
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
        // The call spans the time it took, ending when it was answered.
        let answered =
            SystemTime::from("2026-01-01T00:00:02.400Z".parse::<jiff::Timestamp>().unwrap());
        assert_eq!(
            (tool.start_time, tool.end_time),
            (answered - Duration::from_millis(250), answered)
        );
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
        // A record naming its work order's start hangs under it, whatever is open.
        let cycle = json!({"kind": "cycle", "hash": H3, "work_order_id": "WO-2",
            "work_order_started": H1, "tool_calls": [{"tool": "calculator"}]});
        let tools = t.spans(&cycle, &Map::new(), false);
        assert_eq!(tools[0].span_context.trace_id(), Ids::of(H1).trace);
        assert_eq!(tools[0].parent_span_id, Ids::of(H1).root);
    }

    #[test]
    fn tool_use_goes_as_tool_call_parts_and_later_rounds_carry_the_tool_turns() {
        let mut t = traces();
        let calls = json!([{"id": "c1", "tool": "read_file", "arguments": {"path": "a.md"},
            "result": "body"}]);
        let asked = json!({"kind": "exchange", "hash": H2, "verdict": "tool_calls",
            "provider_kind": "openai", "finish_reason": "tool_use", "raw_response": "",
            "disclosures": calls});
        let spans = t.spans(&asked, &Map::new(), true);
        let output: Value =
            serde_json::from_str(&attr(&spans[0], "gen_ai.output.messages").unwrap().as_str())
                .unwrap();
        assert_eq!(
            output,
            json!([{"role": "assistant", "finish_reason": "tool_calls", "parts": [
                {"type": "tool_call", "id": "c1", "name": "read_file",
                 "arguments": {"path": "a.md"}}]}])
        );
        let answered = json!({"kind": "exchange", "hash": H3, "verdict": "ok",
            "raw_response": "{}"});
        let attached = json!({"prompt": [{"role": "user", "content": "hi"}],
            "turns": [{"text": "looking", "calls": [{"id": "c1", "name": "read_file",
                "arguments": {"path": "a.md"}}],
                "results": [{"id": "c1", "content": "body", "is_error": false}]}]});
        let spans = t.spans(&answered, attached.as_object().unwrap(), true);
        let input: Value =
            serde_json::from_str(&attr(&spans[0], "gen_ai.input.messages").unwrap().as_str())
                .unwrap();
        assert_eq!(
            input,
            json!([
                {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
                {"role": "assistant", "parts": [{"type": "text", "content": "looking"},
                    {"type": "tool_call", "id": "c1", "name": "read_file",
                     "arguments": {"path": "a.md"}}]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",
                    "response": "body"}]}])
        );
        // Thousands of calls: still JSON, still bounded, and it says it was cut.
        let many: Vec<Value> = (0..5000)
            .map(|i| json!({"id": format!("c{i}"), "name": "t", "arguments": {"q": "\"x\n"}}))
            .collect();
        let attached = json!({"prompt": [], "turns": [{"text": "", "calls": many,
            "results": []}]});
        let spans = t.spans(&answered, attached.as_object().unwrap(), true);
        let text = attr(&spans[0], "gen_ai.input.messages").unwrap().as_str();
        assert!(text.len() <= MAX_CONTENT_BYTES, "{}", text.len());
        let input: Value = serde_json::from_str(&text).unwrap();
        assert!(input.to_string().contains("[cut: the prompt's"), "{input}");
        // A reply's calls with huge ids and arguments of line feeds: the output too.
        let calls: Vec<Value> = (0..4)
            .map(|i| {
                json!({"id": format!("{i}{}", "i".repeat(900)), "tool": "t".repeat(900),
                "arguments": {"q": "\n".repeat(3000)}})
            })
            .collect();
        let asked = json!({"kind": "exchange", "hash": H2, "verdict": "tool_calls",
            "finish_reason": "r".repeat(900), "raw_response": "x".repeat(100),
            "disclosures": calls});
        let spans = t.spans(&asked, &Map::new(), true);
        let text = attr(&spans[0], "gen_ai.output.messages").unwrap().as_str();
        assert!(text.len() <= MAX_CONTENT_BYTES, "{}", text.len());
        serde_json::from_str::<Value>(&text).unwrap();
    }

    #[test]
    fn an_evaluations_cases_hang_under_its_eval_span_and_replayed_latency_is_no_length() {
        let mut t = traces();
        let case = json!({"kind": "exchange", "hash": H2, "eval_run": H1, "verdict": "ok",
            "at": "2026-01-01T00:00:02Z", "latency_ms": 900, "latency_recorded": true});
        let chat = &t.spans(&case, &Map::new(), false)[0];
        assert_eq!(chat.span_context.trace_id(), Ids::of(H1).trace);
        assert_eq!(chat.parent_span_id, Ids::of(H1).root);
        assert_eq!(chat.start_time, chat.end_time, "a recorded latency is not measured");
        assert_eq!(attr(chat, "pactum.latency.recorded_ms"), Some(&Attr::I64(900)));
        let done = json!({"kind": "eval", "event": "eval_completed", "hash": H3,
            "eval_run": H1, "started_at": "2026-01-01T00:00:01Z", "at": "2026-01-01T00:00:03Z",
            "ok": true, "suites": []});
        let eval = &t.spans(&done, &Map::new(), false)[0];
        assert_eq!(eval.span_context.trace_id(), Ids::of(H1).trace);
        assert_eq!(eval.span_context.span_id(), Ids::of(H1).root);
        assert_eq!(eval.end_time.duration_since(eval.start_time).unwrap(), Duration::from_secs(2));
        // A measured exchange spans its latency.
        let live = json!({"kind": "exchange", "hash": H2, "verdict": "ok",
            "at": "2026-01-01T00:00:02Z", "latency_ms": 900});
        let chat = &t.spans(&live, &Map::new(), false)[0];
        assert_eq!(
            chat.end_time.duration_since(chat.start_time).unwrap(),
            Duration::from_millis(900)
        );
        assert!(attr(chat, "pactum.latency.recorded_ms").is_none());
    }

    #[test]
    fn failures_carry_their_code_and_their_message_only_as_content() {
        let mut t = traces();
        let long = "é".repeat(MAX_CONTENT_BYTES);
        let exchange = json!({"kind": "exchange", "hash": H2, "verdict": "output_schema_invalid",
            "errors": [{"code": "output_schema_invalid", "message": "no `label` in jane's reply"}],
            "raw_response": long});
        let spans = t.spans(&exchange, &Map::new(), true);
        assert_eq!(attr(&spans[0], "error.type"), Some(&Attr::from("output_schema_invalid")));
        assert_eq!(spans[0].status, Status::error("no `label` in jane's reply"));
        let output = attr(&spans[0], "gen_ai.output.messages").unwrap().as_str();
        let parsed: Value = serde_json::from_str(&output).unwrap();
        let text = parsed[0]["parts"][0]["content"].as_str().unwrap();
        assert!(
            text.len() <= MAX_CONTENT_BYTES && text.ends_with(" bytes in all]"),
            "{}",
            text.len()
        );
        // Without content, the status is the code: the message quotes the reply.
        let spans = t.spans(&exchange, &Map::new(), false);
        assert_eq!(spans[0].status, Status::error("output_schema_invalid"));
        let failed = json!({"kind": "work_order", "event": "work_order_failed", "hash": H3,
            "work_order_id": null, "code": "work_order_invalid", "message": "bad file"});
        let root = t.spans(&failed, &Map::new(), false);
        assert_eq!(root[0].status, Status::error("work_order_invalid"));
        assert_eq!(root[0].name, "invoke_agent");
        let root = t.spans(&failed, &Map::new(), true);
        assert_eq!(root[0].status, Status::error("bad file"));
    }

    #[test]
    fn every_text_of_a_span_is_masked_and_bounded() {
        let redactor = Arc::new(Redactor::new());
        let secret = "sk-span-secret-0123456789";
        redactor.add(secret);
        let mut t = Traces::new(redactor);
        let huge = format!("{secret}{}", "x".repeat(1 << 20));
        let record = json!({"kind": "exchange", "hash": H2, "model": huge, "work_order_id": huge,
            "verdict": huge, "errors": [{"message": huge}], "raw_response": huge,
            "finish_reason": huge, "worker_id": secret,
            "disclosures": [{"tool": huge, "arguments": {"k": huge}, "result": huge,
                "error": {"code": huge, "message": huge}}]});
        let prompt = json!({"prompt": [{"role": "user", "content": huge}, {"role": "user", "content": "more"}]});
        for content in [false, true] {
            for span in t.spans(&record, prompt.as_object().unwrap(), content) {
                assert!(span.name.len() <= MAX_TEXT_BYTES && !span.name.contains(secret));
                if let Status::Error { description } = &span.status {
                    assert!(
                        description.len() <= MAX_CONTENT_BYTES && !description.contains(secret)
                    );
                }
                for kv in &span.attributes {
                    let text = kv.value.as_str();
                    let limit = if kv.key.as_str().starts_with("gen_ai.") && text.starts_with('[') {
                        2 * MAX_CONTENT_BYTES
                    } else if kv.key.as_str().starts_with("gen_ai.tool.call.a")
                        || kv.key.as_str().starts_with("gen_ai.tool.call.r")
                    {
                        MAX_CONTENT_BYTES
                    } else {
                        MAX_TEXT_BYTES
                    };
                    assert!(text.len() <= limit, "{}: {}", kv.key, text.len());
                    assert!(!text.contains(secret), "{}", kv.key);
                }
                if let Some(input) = attr(&span, "gen_ai.input.messages") {
                    // Cut, the prompt is still JSON: its first message cut, the rest left out.
                    let messages: Value = serde_json::from_str(&input.as_str()).unwrap();
                    assert_eq!(messages.as_array().unwrap().len(), 1, "{messages}");
                }
            }
        }
        let resource = t.resource(Some(secret));
        let instance = resource.get(&opentelemetry::Key::new("service.instance.id")).unwrap();
        assert_eq!(instance.as_str(), "[redacted]");
    }

    #[test]
    fn ids_come_from_the_hash() {
        let ids = Ids::of(H2);
        assert_eq!(ids.trace, TraceId::from_bytes([0x22; 16]));
        assert_eq!(ids.span, SpanId::from_bytes([0x22; 8]));
        assert_ne!(ids.tool(0), ids.tool(1));
        assert_eq!(ids.tool(1), Ids::of(H2).tool(1));
    }

    /// The mapping costs what a record holds, linearly: its tool calls (a reply or a
    /// kernel cycle of thousands), and its content (a reply of megabytes, masked, then cut).
    #[test]
    fn a_records_spans_cost_work_linear_in_its_calls_and_its_content() {
        let redactor = Arc::new(Redactor::new());
        redactor.add("sk-linear-secret-000");
        let mut t = Traces::new(redactor);
        let calls = |n: usize| {
            let calls: Vec<Value> = (0..n)
                .map(|i| json!({"tool": "calculator", "id": format!("c{i}"), "result": i}))
                .collect();
            json!({"kind": "exchange", "hash": H2, "model": "m", "disclosures": calls})
        };
        let reply =
            |n: usize| json!({"kind": "exchange", "hash": H2, "raw_response": "r".repeat(n)});
        for (what, make, n) in [
            ("tool calls", &calls as &dyn Fn(usize) -> Value, 1_500),
            ("reply bytes", &reply, 1 << 20),
        ] {
            // The work counted: every allocation (each attribute and span is built), and
            // the bytes the masking scans (`crate::redact`).
            crate::work::assert_linear(what, n, |n| {
                let record = make(n);
                crate::work::work_of(|| t.spans(&record, &Map::new(), true))
            });
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            Just(Value::from(u64::MAX)),
            "[a-z0-9:.TZ\\-é ]{0,24}".prop_map(Value::String),
            Just(json!("2026-01-01T00:00:00Z")),
            Just(json!(H1)),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(field(), inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    /// The names the mapping reads, and some it does not.
    fn field() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("kind"),
            Just("event"),
            Just("hash"),
            Just("at"),
            Just("latency_ms"),
            Just("work_order_id"),
            Just("work_order_started"),
            Just("model"),
            Just("usage"),
            Just("prompt_tokens"),
            Just("verdict"),
            Just("errors"),
            Just("message"),
            Just("raw_response"),
            Just("finish_reason"),
            Just("disclosures"),
            Just("tool_calls"),
            Just("tool"),
            Just("arguments"),
            Just("result"),
            Just("error"),
            Just("code"),
            Just("refused"),
            Just("is_error"),
            Just("suites"),
            Just("eval_id"),
            Just("ok"),
            Just("seq"),
            Just("other"),
        ]
        .prop_map(str::to_string)
    }

    proptest! {
        /// Whatever a record holds (`ledger export` reads hand-written ones too), the mapping
        /// makes spans without panicking, and its texts stay bounded.
        #[test]
        fn any_record_maps_without_panicking(
            records in prop::collection::vec(
                (prop::sample::select(vec!["exchange", "cycle", "work_order", "eval", "x"]),
                 prop::collection::btree_map(field(), json_value(), 0..8)),
                1..6),
            content in any::<bool>(),
        ) {
            let mut t = traces();
            for (i, (kind, fields)) in records.into_iter().enumerate() {
                let mut record: Map<String, Value> = fields.into_iter().collect();
                record.insert("kind".into(), json!(kind));
                record.entry("hash").or_insert_with(|| json!([H1, H2, H3][i % 3]));
                let prompt = json!({"prompt": record.get("errors").cloned().unwrap_or(json!([]))});
                for span in t.spans(&Value::Object(record), prompt.as_object().unwrap(), content) {
                    prop_assert!(span.name.len() <= MAX_TEXT_BYTES);
                }
            }
        }
    }
}
