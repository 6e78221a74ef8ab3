//! What OTLP export costs an exchange (SPEC §22): the record's spans made and queued on the
//! appending thread, the batch sent from the exporter's own thread to a collector on
//! 127.0.0.1 that reads and acknowledges every request.
//!
//! - `record_to_spans`: the mapping alone, for a typical exchange record.
//! - `append` vs `append_with_otlp`: one exchange record appended to a ledger (grouped
//!   durability, so the disk's sync latency does not hide the difference), without and with
//!   the exporter observing the ledger. The difference is the overhead per exchange.
//!
//! Run: `cargo bench --bench telemetry`.
#![allow(clippy::disallowed_methods)] // tests, benches and examples build their trees directly

use std::sync::Arc;

use pactum::ledger::{Durability, Kind, Ledger, Location};
use pactum::telemetry::spans::Traces;
use pactum::telemetry::{Settings, Telemetry};
use serde_json::{Map, Value, json};

#[path = "../tests/support/otlp.rs"]
mod otlp;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

/// The fields of a typical exchange record (the shipped classify contract's).
fn exchange() -> Map<String, Value> {
    let record = json!({
        "event": "exchange", "work_order_id": "WO-BENCH-001", "session_id": "s-1",
        "contract_id": "PRC-CLASSIFY-001", "contract_version": "1.0.0",
        "contract_sha256": "4d2a17dc28ffb6b56e40bb7409bc9804a770745f4a1948148e3b7adb51067279",
        "prompt_pack_id": "PRM-CLASSIFY-001", "prompt_pack_version": "1.0.0",
        "prompt_pack_sha256": "62c334891350fb73fc7d1447c6b6d71bc72cc52680e2275cf567fc428650cd94",
        "prompt_hash": "1d0c3c6a8b0f1e6f5d5b1b8e5e8c1f0a9d7e6c5b4a3928171615141312111009",
        "provider": "openai", "model": "gpt-4o-mini", "response_model": "gpt-4o-mini-2024-07-18",
        "raw_response": "Sure.\n```json\n{\"label\": \"billing\", \"confidence\": 0.92, \"reasons\": [\"double charge\"]}\n```",
        "finish_reason": "stop", "usage": {"prompt_tokens": 210, "completion_tokens": 40},
        "latency_ms": 812, "attempts": 1, "repair_attempt": 0, "extraction_method": "fenced",
        "verdict": "ok", "errors": [],
        "output": {"label": "billing", "confidence": 0.92, "reasons": ["double charge"]},
    });
    record.as_object().cloned().unwrap()
}

#[divan::bench]
fn record_to_spans(bencher: divan::Bencher) {
    let mut record = Value::Object(exchange());
    record["hash"] = json!("7f".repeat(32));
    record["seq"] = json!(2);
    record["at"] = json!("2026-11-27T12:00:00.123Z");
    let mut traces = Traces::new(Arc::new(pactum::redact::Redactor::new()));
    bencher.bench_local(|| traces.spans(&record, &Map::new(), false));
}

fn appending(bencher: divan::Bencher, otlp: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = Ledger::open(&Location::chosen(&dir.path().join("ledger.jsonl")))
        .unwrap()
        .with_durability(Durability::Grouped);
    // The tests' collector (it keeps what it receives, decoded only when asked).
    let collector = otlp::Collector::start();
    let telemetry = otlp.then(|| {
        let endpoint = pactum::telemetry::endpoint(&collector.url()).unwrap();
        let redactor = Arc::new(pactum::redact::Redactor::new());
        Telemetry::start(&Settings::new(pactum::authority::Permit::application(endpoint)), redactor)
            .unwrap()
    });
    if let Some(t) = &telemetry {
        ledger = ledger.observed_by(Arc::clone(t) as Arc<dyn pactum::ledger::Observer>);
    }
    let fields = exchange();
    bencher.bench_local(|| ledger.append(Kind::Exchange, fields.clone()).unwrap());
    drop(ledger);
    if let Some(t) = telemetry {
        let report = t.finish();
        assert_eq!(report.problem(), None, "{report:?}");
        assert!(report.requests > 0);
        assert!(!collector.spans().is_empty(), "the collector decoded what was sent");
    }
}

/// One exchange record appended, no exporter.
#[divan::bench(sample_count = 200)]
fn append(bencher: divan::Bencher) {
    appending(bencher, false);
}

/// The same with the OTLP exporter observing the ledger.
#[divan::bench(sample_count = 200)]
fn append_with_otlp(bencher: divan::Bencher) {
    appending(bencher, true);
}
