//! Telemetry on OpenTelemetry (SPEC §22): every exchange, tool call and work order of a run
//! as spans following the GenAI semantic conventions, sent over OTLP/HTTP (protobuf).
//!
//! **Architecture invariant:** spans are made from ledger records, by one mapping
//! (`spans`), and nothing else: a run's exporter is a [`ledger::Observer`] of the ledgers it
//! writes, and `ledger export --otlp` feeds a ledger file's records to the same mapping. So a
//! span never holds what the ledger would not (secrets are masked before a record is written;
//! the prompt an observer is handed beside it is masked by the same redactor), and an exported
//! ledger gives the spans its run sent. Content (prompt, reply, tool arguments and results)
//! goes only with `content` (`--otlp-content`), cut to [`spans::MAX_CONTENT_BYTES`].
//!
//! Every text a span carries is masked by the process's redactor and cut to a bound
//! (`spans`' gate), so neither a secret the environment names nor a record of any size
//! reaches a collector.
//!
//! Off the hot path: an appended record is turned into spans and queued; a thread of the
//! exporter's own sends them (`send`: at most 2,048 queued; past that spans are dropped,
//! never waited for). A collector that is down, slow or hostile never fails a run and holds
//! its exit at most [`WAIT_AT_EXIT`]: [`Telemetry::finish`] says how many spans did not
//! arrive, and why.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::authority::Permit;
use crate::error::{Error, Result};
use crate::ledger::{self, Location};
use crate::redact::Redactor;

mod client;
mod send;
pub mod spans;

pub use send::{Counts, MAX_QUEUED};

/// The longest a run waits for its spans to be sent once it is done (one batch's time).
pub const WAIT_AT_EXIT: Duration = client::TIMEOUT;

/// Where spans go and what they carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The collector's traces URL (`…/v1/traces`; see [`endpoint`]), with who chose it.
    pub endpoint: Permit<String>,
    /// Prompt and reply text (masked) on exchange spans, arguments and results on tool
    /// spans.
    pub content: bool,
    /// The process's `service.instance.id` (a worker's id).
    pub instance: Option<String>,
    /// Sent with every export request: the collector's credentials, so only to an endpoint
    /// the environment or a flag named ([`Settings::choose`]).
    pub headers: Headers,
}

impl Settings {
    /// Spans to `endpoint` (a traces URL: see [`endpoint`]), no content, no headers.
    pub fn new(endpoint: Permit<String>) -> Settings {
        Settings { endpoint, content: false, instance: None, headers: Headers::default() }
    }
}

/// Headers of export requests (`OTEL_EXPORTER_OTLP_HEADERS`: `name=value` pairs separated
/// by commas, values percent-decoded as the OTLP exporter decodes them). Their values are
/// never shown: `Debug` prints the names.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Headers(Vec<(String, String)>);

impl Headers {
    /// The pairs of a `name=value,...` list (names trimmed and lower-cased; pairs without
    /// `=` or a name skipped).
    pub fn parse(list: &str) -> Headers {
        Headers(
            list.split(',')
                .filter_map(|pair| {
                    let (name, value) = pair.split_once('=')?;
                    let name = name.trim().to_ascii_lowercase();
                    (!name.is_empty()).then(|| (name, percent_decoded(value.trim())))
                })
                .collect(),
        )
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }
}

impl std::fmt::Debug for Headers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(name, _)| name)).finish()
    }
}

/// What a command's telemetry settings came to: the settings (none when no collector is
/// named, or only an unconfirmed one) and what of pactum.toml did not act, and why (SPEC
/// §24: `config_unconfirmed` warnings).
#[derive(Debug, Default)]
pub struct Chosen {
    pub settings: Option<Settings>,
    pub ignored: Vec<String>,
}

impl Settings {
    /// The settings of a run: `--otlp` (`cli`), else the environment's
    /// `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT`, else `[telemetry] otlp_endpoint` when the
    /// environment confirms committed settings ([`crate::authority::Trust`]). Content goes
    /// with `--otlp-content`, or `[telemetry] content` when confirmed. The collector's
    /// headers (`OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`) go only to an endpoint the flag or
    /// the environment named, never to one a repository file named, confirmed or not.
    pub fn choose(
        cli: Option<&Permit<String>>,
        content: bool,
        config: &crate::config::Config,
        instance: Option<&str>,
    ) -> Result<Chosen> {
        let trust = crate::authority::Trust::of(config);
        let file = crate::config::FILE_NAME;
        let mut ignored = Vec::new();
        let named = match (cli, &config.env.otlp_endpoint, &config.telemetry.otlp_endpoint) {
            (Some(url), _, _) => Some((url.clone(), "--otlp")),
            (None, Some(url), _) => Some((url.clone(), "OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT")),
            (None, None, Some(url)) => {
                match trust.confirm(url.clone(), file, "telemetry.otlp_endpoint") {
                    Ok(url) => Some((url, "[telemetry] otlp_endpoint in pactum.toml")),
                    Err(why) => {
                        let shown = crate::redact::shown_url(url);
                        ignored.push(why.message(&format!(
                            "sends spans to {shown}; no spans were sent (or pass --otlp {shown})"
                        )));
                        None
                    }
                }
            }
            (None, None, None) => None,
        };
        let content = content
            || (config.telemetry.content
                && match trust.confirm((), file, "telemetry.content") {
                    Ok(_) => true,
                    Err(why) => {
                        if named.is_some() {
                            ignored.push(why.message(
                                "sends prompts and replies on the spans; they carry none (or pass --otlp-content)",
                            ));
                        }
                        false
                    }
                });
        let Some((url, source)) = named else { return Ok(Chosen { settings: None, ignored }) };
        let headers = match &config.env.otlp_headers {
            Some(list) if url.named_by_the_operator() => Headers::parse(list.expose()),
            Some(_) => {
                ignored.push(format!(
                    "OTEL_EXPORTER_OTLP_HEADERS is not sent to {}: that collector is named by pactum.toml, and the collector's credentials go only to an endpoint the environment or --otlp names",
                    crate::redact::shown_url(url.get())
                ));
                Headers::default()
            }
            None => Headers::default(),
        };
        let endpoint = url.normalised(endpoint_from(url.get(), source)?);
        Ok(Chosen {
            settings: Some(Settings {
                endpoint,
                content,
                instance: instance.map(str::to_string),
                headers,
            }),
            ignored,
        })
    }
}

/// The traces URL of `url`: the collector's base URL gets `/v1/traces`, a URL that already
/// ends so is kept (surrounding white space and trailing slashes dropped, the scheme in any
/// case). Only an `http://` or `https://` URL with a host, a port if any from 1 to 65535,
/// and neither query nor fragment is taken (`usage_error` otherwise, naming the URL without
/// its credentials or query), so a URL that can name no collector stops the command before
/// anything runs.
pub fn endpoint(url: &str) -> Result<String> {
    endpoint_from(url, "--otlp")
}

/// [`endpoint`], a refusal naming where the URL came from (`source`).
fn endpoint_from(url: &str, source: &str) -> Result<String> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let rest = lower.strip_prefix("http://").or_else(|| lower.strip_prefix("https://"));
    let bad = |why: &str| Error::Usage {
        message: format!(
            "{source} `{}` {why}; give the collector's base URL (http://localhost:4318) or its /v1/traces URL",
            crate::redact::shown_url(url)
        ),
    };
    let Some(rest) = rest else { return Err(bad("is not an http:// or https:// URL")) };
    if url.contains(['?', '#']) {
        return Err(bad("has a query or fragment"));
    }
    let base = url.trim_end_matches('/');
    let traces =
        if base.ends_with("/v1/traces") { base.to_string() } else { format!("{base}/v1/traces") };
    let uri: ureq::http::Uri = traces.parse().map_err(|_| bad("is not a valid URL"))?;
    let authority = rest.split('/').next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if uri.host().is_none_or(str::is_empty) || host.starts_with(':') {
        return Err(bad("names no host"));
    }
    // The port, after an IPv6 address's brackets (`Uri` takes any digits, then has none).
    let after_host = host.rsplit_once(']').map_or(host, |(_, rest)| rest);
    if let Some((_, port)) = after_host.rsplit_once(':')
        && !matches!(port.parse::<u16>(), Ok(p) if p > 0)
    {
        return Err(bad("names no port from 1 to 65535"));
    }
    Ok(traces)
}

/// What of a collector's settings the redactor must mask (SPEC §18): each value of
/// `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS` (`headers`: the variables' values, `key=value`
/// pairs separated by commas) as written and as the exporter sends it (percent-decoded),
/// and the credential after its scheme (`Bearer TOKEN`); and the password of the
/// collector's URL (`endpoint`; a user without one, which is then a token), as written and
/// decoded.
pub fn collector_secrets(headers: &[&str], endpoint: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |value: &str| {
        let value = value.trim();
        let decoded = percent_decoded(value);
        for v in [value, decoded.as_str()] {
            out.push(v.to_string());
            // `Scheme credential`: the credential alone too (the scheme is no secret).
            if let Some((_, credential)) = v.split_once(char::is_whitespace) {
                out.push(credential.trim().to_string());
            }
        }
    };
    for pair in headers.iter().flat_map(|h| h.split(',')) {
        if let Some((_, value)) = pair.split_once('=') {
            add(value);
        }
    }
    if let Some(endpoint) = endpoint {
        let rest = endpoint.split_once("://").map_or("", |(_, rest)| rest);
        let authority = rest.split('/').next().unwrap_or("");
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            // The password; a user alone is a token (`https://TOKEN@host`).
            add(userinfo.split_once(':').map_or(userinfo, |(_, password)| password));
        }
    }
    out.retain(|s| !s.is_empty());
    out.sort();
    out.dedup();
    out
}

/// `text` with each `%XX` replaced by its byte (as the OTLP exporter decodes header values);
/// `text` as is when that is not UTF-8.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).and_then(|&b| hex(b)),
            bytes.get(i + 2).and_then(|&b| hex(b)),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// A run's exporter: observes its ledgers, queues each record's spans for the sending
/// thread.
#[derive(Debug)]
pub struct Telemetry {
    queue: send::Queue,
    traces: Mutex<spans::Traces>,
    content: bool,
    shown: String,
}

/// What a finished exporter delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The collector, as messages show it.
    pub collector: String,
    /// What happened to each span.
    pub counts: Counts,
    /// Export requests the collector accepted.
    pub requests: u64,
}

impl Report {
    /// Spans the collector is not known to have taken.
    pub fn lost(&self) -> u64 {
        self.counts.spans.saturating_sub(self.counts.delivered)
    }

    /// A warning's text when a span did not arrive: how many, and why.
    pub fn problem(&self) -> Option<String> {
        let c = &self.counts;
        let mut why = Vec::new();
        if let Some(failure) = &c.first_failure {
            why.push(failure.clone());
        }
        if c.dropped > 0 {
            why.push(format!(
                "{} did not fit the queue of {MAX_QUEUED} (the collector was slower than the run)",
                c.dropped
            ));
        }
        if c.unsent > 0 {
            why.push(format!(
                "{} were still on their way after waiting {} s at the end",
                c.unsent,
                WAIT_AT_EXIT.as_secs()
            ));
        }
        (self.lost() > 0).then(|| {
            format!(
                "{} of {} spans did not reach {}: {}",
                self.lost(),
                c.spans,
                self.collector,
                if why.is_empty() { "no reason given".to_string() } else { why.join("; ") }
            )
        })
    }
}

/// How many spans go in one export request: fewer with content (each may carry 48 KiB of
/// text), so a request stays a few MiB at most, below what collectors take.
fn batch_size(content: bool) -> usize {
    if content { 64 } else { 512 }
}

impl Telemetry {
    /// An exporter to `settings.endpoint`, masking every span's texts with `redactor` (the
    /// process's: the binary passes the one its output and ledgers mask with); nothing is
    /// sent until spans are queued.
    pub fn start(settings: &Settings, redactor: Arc<Redactor>) -> Result<Arc<Telemetry>> {
        let shown = crate::redact::shown_url(settings.endpoint.get());
        let traces = spans::Traces::new(redactor);
        let resource = traces.resource(settings.instance.as_deref());
        let sink = send::Sink::new(settings, &shown, &resource)?;
        Ok(Arc::new(Telemetry {
            queue: send::Queue::start(sink, batch_size(settings.content))?,
            traces: Mutex::new(traces),
            content: settings.content,
            shown,
        }))
    }

    /// Queues the spans of `record`; how many it made.
    pub fn record(&self, record: &Value, attached: &Map<String, Value>) -> usize {
        let spans = {
            let mut traces = self.traces.lock().unwrap_or_else(|p| p.into_inner());
            traces.spans(record, attached, self.content)
        };
        let n = spans.len();
        self.queue.push(spans);
        n
    }

    /// Sends what is queued, waiting at most [`WAIT_AT_EXIT`], stops the exporter and says
    /// what was delivered.
    pub fn finish(&self) -> Report {
        let counts = self.queue.finish(WAIT_AT_EXIT);
        Report { collector: self.shown.clone(), requests: self.queue.requests(), counts }
    }
}

impl ledger::Observer for Telemetry {
    fn wants_attachments(&self) -> bool {
        self.content
    }

    fn appended(&self, record: &Value, attached: &Map<String, Value>) {
        self.record(record, attached);
    }
}

/// What [`export`] sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    pub records: u64,
    pub spans: u64,
    pub report: Report,
}

/// Sends the spans of every record of the ledger at `location` (SPEC §22, `ledger export
/// --otlp`), their texts masked by `redactor` (the exporting process's: a key its
/// environment names is masked even in a ledger written without it). The ledger is
/// verified first: a broken or corrupt one is refused before anything is sent. Records are
/// read a line at a time and their spans sent in batches on this thread, each waited for:
/// nothing is dropped, memory holds one batch, and the first batch the collector does not
/// take ends the export (`otlp_export_failed`), at most [`WAIT_AT_EXIT`] after it was sent.
/// A record's `worker_id` is its spans' `service.instance.id`, as the worker's own export
/// said.
pub fn export(
    location: &Location,
    settings: &Settings,
    redactor: Arc<Redactor>,
) -> Result<Exported> {
    ledger::verify(location, None)?;
    let shown = crate::redact::shown_url(settings.endpoint.get());
    let mut traces = spans::Traces::new(redactor);
    let mut instance: Option<String> = None;
    let mut sink = send::Sink::new(settings, &shown, &traces.resource(None))?;
    let size = batch_size(settings.content);
    let mut batch = Vec::with_capacity(size);
    let mut counts = Counts::default();
    let send = |sink: &send::Sink, batch: &mut Vec<_>, counts: &mut Counts| {
        let n = batch.len() as u64;
        if n == 0 {
            return Ok(());
        }
        match sink.send(std::mem::take(batch)) {
            Ok(()) => {
                counts.delivered += n;
                Ok(())
            }
            Err(reason) => Err(Error::OtlpExportFailed {
                collector: shown.clone(),
                delivered: counts.delivered,
                reason,
            }),
        }
    };
    let records = ledger::for_each_record(location, |record| {
        let worker = record.get("worker_id").and_then(Value::as_str);
        if worker != instance.as_deref() {
            send(&sink, &mut batch, &mut counts)?;
            instance = worker.map(str::to_string);
            sink.set_resource(&traces.resource(worker));
        }
        for span in traces.spans(record, &Map::new(), settings.content) {
            counts.spans += 1;
            batch.push(span);
            if batch.len() >= size {
                send(&sink, &mut batch, &mut counts)?;
            }
        }
        Ok(())
    })?;
    send(&sink, &mut batch, &mut counts)?;
    let report = Report { collector: shown.clone(), requests: sink.requests(), counts };
    Ok(Exported { records, spans: report.counts.spans, report })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn endpoints_take_a_base_url_or_the_traces_url() {
        assert_eq!(endpoint("http://localhost:4318").unwrap(), "http://localhost:4318/v1/traces");
        assert_eq!(endpoint("http://localhost:4318/").unwrap(), "http://localhost:4318/v1/traces");
        assert_eq!(
            endpoint(" https://otel.example/v1/traces ").unwrap(),
            "https://otel.example/v1/traces"
        );
        assert_eq!(
            endpoint("http://collector:4318/otlp").unwrap(),
            "http://collector:4318/otlp/v1/traces"
        );
        assert_eq!(endpoint("http://[::1]:4318/").unwrap(), "http://[::1]:4318/v1/traces");
        assert_eq!(endpoint("HTTPS://c.example").unwrap(), "HTTPS://c.example/v1/traces");
        assert_eq!(endpoint("http://u:p@c:65535//").unwrap(), "http://u:p@c:65535/v1/traces");
        for bad in [
            "localhost:4318",
            "file:///tmp/x",
            "http://",
            "http:///v1",
            "ftp://x",
            "http://:4318",
            "http://u:p@:4318",
            "http://127.0.0.1:99999",
            "http://127.0.0.1:0",
            "http://127.0.0.1:http",
            "http://127.0.0.1 :4318",
            "http://[::1",
        ] {
            let e = endpoint(bad).unwrap_err();
            assert_eq!(e.code(), crate::Code::UsageError, "{bad}");
        }
        let e = endpoint("http://user:hunter2@c:4318/?token=hunter3").unwrap_err().to_string();
        assert!(!e.contains("hunter2") && !e.contains("hunter3"), "{e}");
        let e = endpoint("http://user:hunter2@c:4318/a b").unwrap_err().to_string();
        assert!(!e.contains("hunter2") && !e.contains("hunter3"), "{e}");
    }

    #[test]
    fn a_collectors_secrets_are_its_header_values_in_each_form_and_its_url_credentials() {
        let headers = ["Authorization=Bearer%20tok-123456, x-key = k%2Fey-7890 ,bad", "b=c"];
        let secrets = collector_secrets(&headers, Some("http://user:pa%40ss@c:4318/v1/traces"));
        for s in [
            "Bearer%20tok-123456",
            "Bearer tok-123456",
            "tok-123456",
            "k%2Fey-7890",
            "k/ey-7890",
            "pa%40ss",
            "pa@ss",
        ] {
            assert!(secrets.iter().any(|x| x == s), "{s}: {secrets:?}");
        }
        assert!(!secrets.iter().any(|x| ["Bearer", "bad", "user"].contains(&x.as_str())));
        let token = collector_secrets(&[], Some("https://tok-abcdef@c.example"));
        assert_eq!(token, ["tok-abcdef"]);
        assert_eq!(percent_decoded("a%zz%4"), "a%zz%4");
        assert_eq!(percent_decoded("%C3%A9%ff"), "%C3%A9%ff", "not UTF-8: as written");
    }

    /// A ledger of `work_orders` kernel-shaped work orders (a start, an exchange with two
    /// disclosed tool calls, a cycle with a tool call, an end): `4 * work_orders` records.
    fn shaped_ledger(work_orders: usize) -> String {
        let at = "2026-11-27T12:00:00.000Z";
        let records: Vec<Value> = (0..work_orders)
            .flat_map(|i| {
                let wo = format!("WO-{i:06}");
                let calls: Vec<Value> = (0..2)
                    .map(|t| serde_json::json!({"id": format!("c{t}"), "tool": "calculator", "result": t}))
                    .collect();
                [
                    serde_json::json!({"at": at, "kind": "work_order", "event": "work_order_started", "work_order_id": wo}),
                    serde_json::json!({"at": at, "kind": "exchange", "event": "exchange", "work_order_id": wo,
                        "model": "m", "verdict": "tool_calls", "latency_ms": 4, "disclosures": calls}),
                    serde_json::json!({"at": at, "kind": "cycle", "work_order_id": wo, "tool_calls": [
                        {"tool": "memory_read", "step_id": "s1", "latency_ms": 1, "at": at}]}),
                    serde_json::json!({"at": at, "kind": "work_order", "event": "work_order_completed",
                        "work_order_id": wo, "status": "completed"}),
                ]
            })
            .collect();
        ledger::chain(&records)
    }

    /// `ledger export` does work linear in the ledger: each record is read, checked, mapped
    /// and sent once, and batches are sent as they fill. The work counted: the ledger's
    /// bytes read, decoded and hashed, the bytes masked, and every allocation (the spans,
    /// their encoding, the requests) on the exporting thread.
    #[test]
    fn ledger_export_does_work_linear_in_the_ledger() {
        let collector = send::tests::Collector::start(Some(200));
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            content: true,
            ..Settings::new(crate::authority::Permit::application(collector.url.clone()))
        };
        crate::work::assert_linear("ledger export", 50, |work_orders| {
            let path = dir.path().join(format!("{work_orders}.jsonl"));
            std::fs::write(&path, shaped_ledger(work_orders)).unwrap();
            let location = Location::chosen(&path);
            let redactor = Arc::new(Redactor::new());
            let (sent, work) = crate::work::counted(|| export(&location, &settings, redactor));
            assert_eq!(sent.unwrap().records, 4 * work_orders as u64);
            work
        });
    }
}
