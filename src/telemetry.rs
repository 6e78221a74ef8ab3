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
//! Off the hot path: an appended record is turned into spans and queued; the SDK's batch
//! processor sends them from its own thread (at most 2,048 queued; past that spans are
//! dropped, never waited for). A collector that is down never fails a run: [`Telemetry::finish`]
//! says what was not delivered.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SpanProcessor};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::ledger::{self, Location};

mod client;
pub mod spans;

pub use client::Delivery;

/// Where spans go and what they carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The collector's traces URL (`…/v1/traces`; see [`endpoint`]).
    pub endpoint: String,
    /// Prompt and reply text (masked) on exchange spans, arguments and results on tool
    /// spans.
    pub content: bool,
    /// The process's `service.instance.id` (a worker's id).
    pub instance: Option<String>,
}

impl Settings {
    /// The settings of a run: `--otlp` (`cli`), else the environment's
    /// `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT`, else `[telemetry] otlp_endpoint`; `None` when
    /// none is set. Content goes with `--otlp-content` or `[telemetry] content`.
    pub fn choose(
        cli: Option<&str>,
        content: bool,
        config: &crate::config::Config,
        instance: Option<&str>,
    ) -> Result<Option<Settings>> {
        let url = cli
            .or(config.env.otlp_endpoint.as_deref())
            .or(config.telemetry.otlp_endpoint.as_deref());
        let Some(url) = url else { return Ok(None) };
        Ok(Some(Settings {
            endpoint: endpoint(url)?,
            content: content || config.telemetry.content,
            instance: instance.map(str::to_string),
        }))
    }
}

/// The traces URL of `url`: the collector's base URL gets `/v1/traces`, a URL that already
/// ends so is kept. Only `http://` and `https://` URLs with a host are taken (`usage_error`
/// otherwise, naming the URL without its credentials or query).
pub fn endpoint(url: &str) -> Result<String> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let rest = lower.strip_prefix("http://").or_else(|| lower.strip_prefix("https://"));
    let bad = |why: &str| Error::Usage {
        message: format!(
            "--otlp `{}` {why}; give the collector's base URL (http://localhost:4318) or its /v1/traces URL",
            crate::redact::shown_url(url)
        ),
    };
    let Some(rest) = rest else { return Err(bad("is not an http:// or https:// URL")) };
    if rest.is_empty() || rest.starts_with(['/', '?', '#']) {
        return Err(bad("names no host"));
    }
    if url.contains(['?', '#']) {
        return Err(bad("has a query or fragment"));
    }
    let base = url.trim_end_matches('/');
    Ok(if base.ends_with("/v1/traces") { base.to_string() } else { format!("{base}/v1/traces") })
}

/// A run's exporter: observes its ledgers, queues each record's spans for the batch
/// processor.
#[derive(Debug)]
pub struct Telemetry {
    processor: BatchSpanProcessor,
    traces: Mutex<spans::Traces>,
    content: bool,
    delivery: Arc<Delivery>,
    shown: String,
}

/// What a finished exporter delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The collector, as messages show it.
    pub collector: String,
    /// Export requests the collector accepted.
    pub accepted: u64,
    /// Export requests that failed, and the first failure's message.
    pub failed: u64,
    pub first_failure: Option<String>,
}

impl Report {
    /// A warning's text when something was not delivered.
    pub fn problem(&self) -> Option<String> {
        (self.failed > 0).then(|| {
            format!(
                "{} of {} span export requests to {} failed: {}",
                self.failed,
                self.failed + self.accepted,
                self.collector,
                self.first_failure.as_deref().unwrap_or("no reason given")
            )
        })
    }
}

impl Telemetry {
    /// An exporter to `settings.endpoint`; nothing is sent until spans are queued.
    pub fn start(settings: &Settings) -> Result<Arc<Telemetry>> {
        Telemetry::with_batch(settings, if settings.content { 64 } else { 512 })
    }

    fn with_batch(settings: &Settings, batch: usize) -> Result<Arc<Telemetry>> {
        let shown = crate::redact::shown_url(&settings.endpoint);
        let client = client::Client::new(shown.clone());
        let delivery = client.delivery.clone();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(settings.endpoint.clone())
            .with_timeout(client::TIMEOUT)
            .build()
            .map_err(|e| Error::Usage {
                message: format!("cannot export spans to {shown}: {e}"),
            })?;
        let config = BatchConfigBuilder::default()
            .with_max_queue_size(2048)
            .with_max_export_batch_size(batch)
            .with_scheduled_delay(Duration::from_millis(500))
            .build();
        let mut processor = BatchSpanProcessor::new(exporter, config);
        let mut resource = Resource::builder_empty()
            .with_service_name("pactum")
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
        if let Some(instance) = &settings.instance {
            resource =
                resource.with_attribute(KeyValue::new("service.instance.id", instance.clone()));
        }
        processor.set_resource(&resource.build());
        Ok(Arc::new(Telemetry {
            processor,
            traces: Mutex::new(spans::Traces::default()),
            content: settings.content,
            delivery,
            shown,
        }))
    }

    /// Queues the spans of `record`.
    pub fn record(&self, record: &Value, attached: &Map<String, Value>) -> usize {
        let spans = {
            let mut traces = self.traces.lock().unwrap_or_else(|p| p.into_inner());
            traces.spans(record, attached, self.content)
        };
        let n = spans.len();
        for span in spans {
            self.processor.on_end(span);
        }
        n
    }

    /// Sends what is queued and waits for it (at most the export timeout per batch).
    pub fn flush(&self) {
        let _ = self.processor.force_flush();
    }

    /// Sends what is queued, stops the exporter and says what was delivered.
    pub fn finish(&self) -> Report {
        let _ = self.processor.force_flush();
        let _ = self.processor.shutdown_with_timeout(client::TIMEOUT);
        self.report()
    }

    fn report(&self) -> Report {
        use std::sync::atomic::Ordering;
        Report {
            collector: self.shown.clone(),
            accepted: self.delivery.accepted.load(Ordering::Acquire),
            failed: self.delivery.failed.load(Ordering::Acquire),
            first_failure: self
                .delivery
                .first_failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
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
/// --otlp`). The ledger is verified first: a broken or corrupt one is refused before
/// anything is sent. Records are read a line at a time and sent in batches, waiting for
/// each (the queue never drops a span here). `otlp_export_failed` when the collector did
/// not take them all.
pub fn export(location: &Location, settings: &Settings) -> Result<Exported> {
    ledger::verify(location, None)?;
    let telemetry = Telemetry::with_batch(settings, 512)?;
    let mut spans = 0u64;
    let mut queued = 0usize;
    let records = ledger::for_each_record(location, |record| {
        let n = telemetry.record(record, &Map::new());
        spans += n as u64;
        queued += n;
        // The queue holds 2,048: flush well before, so nothing is dropped.
        if queued >= 1024 {
            telemetry.flush();
            queued = 0;
        }
        Ok(())
    })?;
    let report = telemetry.finish();
    if report.failed > 0 {
        return Err(Error::OtlpExportFailed {
            collector: report.collector.clone(),
            failed: report.failed,
            reason: report.first_failure.clone().unwrap_or_default(),
        });
    }
    Ok(Exported { records, spans, report })
}

#[cfg(test)]
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
        for bad in ["localhost:4318", "file:///tmp/x", "http://", "http:///v1", "ftp://x"] {
            let e = endpoint(bad).unwrap_err();
            assert_eq!(e.code(), crate::Code::UsageError, "{bad}");
        }
        let e = endpoint("http://user:hunter2@c:4318/?token=hunter3").unwrap_err().to_string();
        assert!(!e.contains("hunter2") && !e.contains("hunter3"), "{e}");
    }
}
