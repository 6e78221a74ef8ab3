//! Attacks on the OpenTelemetry export (SPEC §22), each through the binary where it can be:
//! secrets in every place a span has, hostile and slow collectors, records that would make
//! spans without bound, `ledger export` of broken, huge and strange ledgers, live spans
//! against exported ones in every shape a run has, and the `--otlp` URL in its forms.

use std::path::Path;

use pactum::authority::Permit;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cli_otel::{CLASSIFY, SUM, by_trace, demo, ledger, pactum, records};
use crate::common::{self, Out};
use crate::otlp::{Answer, Collector, Span};

// --- Helpers -------------------------------------------------------------------------------

/// Edits a JSON file of `dir` in place.
fn edit(dir: &Path, rel: &str, f: impl FnOnce(&mut Value)) {
    let path = dir.join(rel);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    f(&mut doc);
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}

/// `n` copies of the demo's kernel work order (ids `WO-MANY-000`, ...), their paths.
fn many(dir: &Path, n: usize) -> Vec<String> {
    let wo: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(SUM)).unwrap()).unwrap();
    (0..n)
        .map(|i| {
            let mut copy = wo.clone();
            copy["work_order_id"] = json!(format!("WO-MANY-{i:03}"));
            let rel = format!("work_orders/many-{i:03}.json");
            std::fs::write(dir.join(&rel), copy.to_string()).unwrap();
            rel
        })
        .collect()
}

/// A ledger file of `records` (objects), chained as pactum chains them: `seq` from 1, `at`
/// (unless given), `prev` and `hash`, each line the record's canonical JSON.
fn chained(records: impl IntoIterator<Item = Value>) -> String {
    let mut prev = "0".repeat(64);
    let mut out = String::new();
    for (i, record) in records.into_iter().enumerate() {
        let Value::Object(mut map) = record else { panic!("a record is an object") };
        map.insert("seq".into(), json!(i + 1));
        map.entry("at").or_insert_with(|| json!("2026-11-27T12:00:00.000Z"));
        map.insert("prev".into(), json!(prev));
        map.remove("hash");
        let hash = pactum::digest::chain_hash(&Value::Object(map.clone()));
        map.insert("hash".into(), json!(hash));
        out.push_str(&pactum::digest::canonical_json(&Value::Object(map)));
        out.push('\n');
        prev = hash;
    }
    out
}

/// `ledger export --otlp URL FILE --json` (plus `extra`) in `dir`.
fn export(dir: &Path, url: &str, file: &str, extra: &[&str], env: &[(&str, &str)]) -> Out {
    let mut args = vec!["ledger", "export", "--otlp", url, file, "--json"];
    args.extend_from_slice(extra);
    pactum(dir, &args, env)
}

/// Every request's body, as text (for looking for a secret in any field of any span).
fn bodies(collector: &Collector) -> Vec<String> {
    collector.requests().iter().map(|r| String::from_utf8_lossy(&r.body).into_owned()).collect()
}

fn assert_nowhere(collector: &Collector, secret: &str, what: &str) {
    for body in bodies(collector) {
        assert!(!body.contains(secret), "{what}: `{secret}` reached the collector");
    }
}

/// Standard base64 of `bytes` (as a model or a tool might echo a secret).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Spans in a stable order, for comparing what two collectors received.
fn sorted(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_by(|a, b| (&a.trace_id, &a.span_id).cmp(&(&b.trace_id, &b.span_id)));
    spans
}

// --- 1. No secret reaches a collector --------------------------------------------------------

#[test]
fn without_content_no_span_carries_customer_text_not_even_an_error_message() {
    let dir = demo();
    // The contract refuses this input; its value is a customer's text.
    let private = "jane.doe@example.com wants order 88123 refunded";
    edit(dir.path(), CLASSIFY, |wo| wo["input"]["mode"] = json!(private));
    let collector = Collector::start();
    pactum(dir.path(), &["run", CLASSIFY, "--otlp", &collector.url()], &[]).status(1);
    let spans = collector.spans();
    assert!(!spans.is_empty());
    assert_nowhere(&collector, "jane.doe", "an error's message without --otlp-content");
    let failed: Vec<&Span> = spans.iter().filter(|s| s.status_code == 2).collect();
    assert!(!failed.is_empty(), "{spans:#?}");
    for span in failed {
        // The code says what failed; the message, which quotes the input, stays home.
        assert_eq!(span.text("error.type"), "input_schema_invalid", "{span:#?}");
        assert_eq!(span.status_message, "input_schema_invalid", "{span:#?}");
    }
    // With --otlp-content the message goes too: it is content.
    let collector = Collector::start();
    let args = ["run", CLASSIFY, "--otlp", &collector.url(), "--otlp-content"];
    pactum(dir.path(), &args, &[]).status(1);
    let spans = collector.spans();
    assert!(spans.iter().any(|s| s.status_message.contains("jane.doe")), "{spans:#?}");
}

#[test]
fn the_collectors_token_never_reaches_a_span_in_any_form() {
    let dir = demo();
    let token = "otlp-tok-7Hq2Zx9Lw4Kp";
    let tenant = "acme-tenant-secret-42";
    // As OpenTelemetry says to write headers: values percent-encoded.
    let headers = format!("Authorization=Bearer%20{token}, X-Tenant = {tenant}");
    // The token turns up in the customer's text, bare and base64-encoded, and in the reply.
    let encoded = base64(token.as_bytes());
    edit(dir.path(), CLASSIFY, |wo| {
        wo["input"]["history"] = json!([format!("my token: {token}"), format!("b64 {encoded}")])
    });
    edit(dir.path(), "fixtures/demo_classify.json", |f| {
        let reply = f["responses"][0]["text"].as_str().unwrap().to_string();
        f["responses"][0]["text"] = json!(format!("{reply}\nAlso: {token} / {tenant}"));
    });
    let collector = Collector::start();
    let env = [("OTEL_EXPORTER_OTLP_HEADERS", headers.as_str())];
    let args = ["run", CLASSIFY, SUM, "--otlp", &collector.url(), "--otlp-content"];
    let out = pactum(dir.path(), &args, &env);
    out.status(0);
    let requests = collector.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        // The collector gets its token where it belongs: in the header, decoded.
        assert_eq!(r.header("authorization"), Some(format!("Bearer {token}").as_str()));
        assert_eq!(r.header("x-tenant"), Some(tenant));
    }
    let spans = collector.spans();
    let chat = spans
        .iter()
        .find(|s| {
            s.text("pactum.work_order.id") == "WO-DEMO-CLASSIFY-001" && s.name.starts_with("chat")
        })
        .unwrap();
    assert!(chat.text("gen_ai.input.messages").contains("my token: "), "{chat:#?}");
    for secret in [token, tenant, encoded.as_str()] {
        assert_nowhere(&collector, secret, "a live run");
        assert!(!std::fs::read_to_string(ledger(dir.path())).unwrap().contains(secret));
        assert!(!out.stdout.contains(secret) && !out.stderr.contains(secret));
    }
}

#[test]
fn ledger_export_masks_what_the_environment_marks_secret_even_in_an_older_ledger() {
    let dir = demo();
    let key = "sk-export-9f8e7d6c5b4a3210";
    // A run that did not know the key: the model's reply holds it, and so does the ledger.
    edit(dir.path(), "fixtures/demo_classify.json", |f| {
        let reply = f["responses"][0]["text"].as_str().unwrap().to_string();
        f["responses"][0]["text"] =
            json!(format!("{reply}\nkey={key} b64={}", base64(key.as_bytes())));
    });
    pactum(dir.path(), &["run", CLASSIFY], &[]).status(0);
    assert!(std::fs::read_to_string(ledger(dir.path())).unwrap().contains(key));
    // Exported where the environment names it a key, it is masked on every span.
    let collector = Collector::start();
    let env = [("LEAKED_API_KEY", key)];
    let out =
        export(dir.path(), &collector.url(), ".pactum/ledger.jsonl", &["--otlp-content"], &env);
    out.status(0);
    let spans = collector.spans();
    let chat = spans.iter().find(|s| s.name.starts_with("chat")).unwrap();
    assert!(chat.text("gen_ai.output.messages").contains("[redacted]"), "{chat:#?}");
    assert_nowhere(&collector, key, "ledger export");
    assert_nowhere(&collector, &base64(key.as_bytes()), "ledger export, base64");
}

// --- 2. A hostile or slow collector ----------------------------------------------------------

/// The longest a run may wait for its collector once its work is done: pactum waits at most
/// 10 s for its spans at the end; the rest is slack for a loaded machine.
const EXIT_BOUND: Duration = Duration::from_secs(12);

/// How long the run in `dir` took to exit after writing its last ledger record.
fn exit_delay(dir: &Path, exited: std::time::SystemTime) -> Duration {
    let last = records(dir).last().unwrap()["at"].as_str().unwrap().to_string();
    let written = std::time::SystemTime::from(last.parse::<jiff::Timestamp>().unwrap());
    exited.duration_since(written).unwrap_or_default()
}

#[test]
fn a_hostile_collector_never_fails_a_run_nor_holds_its_exit_past_the_bound() {
    // The run against a collector that takes everything: how many spans it makes.
    let dir = demo();
    let wos = many(dir.path(), 30);
    let mut args: Vec<&str> = vec!["run"];
    args.extend(wos.iter().map(String::as_str));
    args.push("--otlp-content");
    let good = Collector::start();
    let good_url = good.url();
    let mut with = args.clone();
    with.extend(["--otlp", &good_url]);
    pactum(dir.path(), &with, &[]).status(0);
    let spans = good.spans().len();
    assert!(spans > 128, "more than one batch: {spans}");
    // Followed by no one: where a redirect points.
    let elsewhere = Collector::start();
    let cases = [
        ("silent", Answer::Silent),
        ("slow", Answer::After(Duration::from_secs(30))),
        ("endless", Answer::Endless),
        ("redirect", Answer::Redirect(format!("{}/v1/traces", elsewhere.url()))),
        ("reset", Answer::Reset),
        ("garbage", Answer::Garbage),
        ("refusing", Answer::Status(500)),
    ];
    common::check_cases_at_once(
        &cases,
        |c| c.0,
        |(_, answer)| {
            let dir = demo();
            many(dir.path(), 30);
            let collector = Collector::answering(answer.clone());
            let mut with = args.clone();
            let url = collector.url();
            with.extend(["--otlp", &url]);
            let out = pactum(dir.path(), &with, &[]);
            let delay = exit_delay(dir.path(), std::time::SystemTime::now());
            out.status(0);
            assert!(delay < EXIT_BOUND, "the run exited {delay:?} after its last record");
            assert!(out.stderr.contains("warning[otlp_export_failed]"), "{out}");
            // The warning says how many of the run's spans did not arrive.
            assert!(out.stderr.contains(&format!(" of {spans} spans")), "{out}");
        },
    );
    assert_eq!(elsewhere.connections(), 0, "a redirect is never followed");
}

#[test]
fn a_collector_that_is_unavailable_once_loses_nothing_and_fails_nothing() {
    let dir = demo();
    let collector = Collector::answering(Answer::FirstUnavailable(1));
    let out = pactum(dir.path(), &["run", SUM, CLASSIFY, "--otlp", &collector.url()], &[]);
    out.status(0);
    assert!(!out.stderr.contains("otlp_export_failed"), "the retry delivered them: {out}");
    let live = collector.spans();
    let all = Collector::start();
    let doc = export(dir.path(), &all.url(), ".pactum/ledger.jsonl", &[], &[]).status(0).json();
    assert_eq!(live.len() as u64, doc["spans"].as_u64().unwrap());
    // `ledger export` too: a refusal the retry got past is no failure.
    let flaky = Collector::answering(Answer::FirstUnavailable(1));
    let doc = export(dir.path(), &flaky.url(), ".pactum/ledger.jsonl", &[], &[]).status(0).json();
    assert_eq!(flaky.spans().len() as u64, doc["spans"].as_u64().unwrap());
}

#[test]
fn spans_past_the_queue_are_counted_as_lost_never_silently() {
    use pactum::ledger::{Durability, Kind, Ledger, Location};
    use pactum::redact::Redactor;
    use pactum::telemetry::{Settings, Telemetry};
    use std::sync::Arc;
    // A collector slower than the records come: the queue fills.
    let collector = Collector::answering(Answer::After(Duration::from_millis(1500)));
    let endpoint = pactum::telemetry::endpoint(&collector.url()).unwrap();
    let settings = Settings::new(Permit::application(endpoint));
    let telemetry = Telemetry::start(&settings, Arc::new(Redactor::new())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(&Location::chosen(&dir.path().join("ledger.jsonl")))
        .unwrap()
        .with_durability(Durability::Grouped)
        .observed_by(telemetry.clone());
    let n = 5_000;
    for i in 0..n {
        let fields = json!({"event": "exchange", "model": "m", "verdict": "ok", "n": i});
        ledger.append(Kind::Exchange, fields.as_object().unwrap().clone()).unwrap();
    }
    let report = telemetry.finish();
    let got = collector.spans().len();
    assert!(got < n, "the premise: the queue could not hold every span ({got})");
    assert_eq!(report.counts.spans, n as u64);
    assert_eq!(report.counts.delivered, got as u64, "{report:?}");
    assert!(report.counts.dropped > 0, "{report:?}");
    let problem = report.problem().unwrap_or_default();
    assert!(problem.contains(&format!("{} of {n} spans", n - got)), "{report:?}");
    assert!(problem.contains("did not fit the queue"), "{problem}");
}

#[test]
fn ledger_export_to_a_collector_that_never_answers_stops_at_the_first_failure() {
    let dir = tempfile::tempdir().unwrap();
    let records = (0..5_000).map(|i| {
        json!({"kind": "exchange", "event": "exchange", "model": "m", "verdict": "ok",
            "work_order_id": format!("WO-{i}"), "latency_ms": 3})
    });
    std::fs::write(dir.path().join("big.jsonl"), chained(records)).unwrap();
    let collector = Collector::answering(Answer::Silent);
    let started = Instant::now();
    let mut cmd = common::pactum_in(dir.path());
    cmd.args(["ledger", "export", "--otlp", &collector.url(), "big.jsonl", "--json"]);
    cmd.timeout(Duration::from_secs(120));
    let out = Out::of(&mut cmd);
    let took = started.elapsed();
    out.status(1);
    assert_eq!(out.json()["code"], "otlp_export_failed", "{out}");
    // One batch's 10 s, and the reading of the ledger (it took minutes): well inside a
    // minute on a loaded machine. That nothing is sent after the failure is counted below.
    assert!(took < Duration::from_secs(60), "export took {took:?}");
    assert_eq!(collector.requests().len(), 1, "nothing more is sent once a batch failed");
}

// --- 3. Span sizes -----------------------------------------------------------------------------

/// Attributes that carry content (`--otlp-content`), cut at 16 KiB of text each.
const CONTENT_KEYS: [&str; 4] = [
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
];

/// Every string on `span` within its bound: content 16 KiB of text (JSON-escaped at most
/// 6 bytes a byte, plus the cut's note), anything else 1 KiB, arrays 128 items.
fn assert_bounded(span: &Span) {
    assert!(span.name.len() <= 1024, "a span name of {} bytes", span.name.len());
    assert!(span.status_message.len() <= 16 * 1024 + 100, "{}", span.status_message.len());
    for (key, value) in &span.attributes {
        let limit = if CONTENT_KEYS.contains(&key.as_str()) { 6 * 16 * 1024 + 200 } else { 1024 };
        match value {
            Value::String(s) => assert!(s.len() <= limit, "{key}: {} bytes", s.len()),
            Value::Array(items) => {
                assert!(items.len() <= 128, "{key}: {} items", items.len());
                for item in items {
                    assert!(item.as_str().is_none_or(|s| s.len() <= 1024), "{key}: an item");
                }
            }
            _ => {}
        }
    }
    assert!(span.size <= 200 * 1024, "a span of {} bytes", span.size);
}

#[test]
fn no_span_grows_with_its_record_but_by_content_and_that_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let huge = |c: &str| c.repeat(64 * 1024);
    let wo = huge("W");
    let records = vec![
        json!({"kind": "work_order", "event": "work_order_started", "work_order_id": wo}),
        json!({"kind": "exchange", "event": "exchange", "work_order_id": wo, "model": huge("m"),
            "response_model": huge("r"), "provider": huge("p"), "finish_reason": huge("f"),
            "contract_id": huge("c"), "verdict": huge("v"), "errors": [{"message": huge("e")}],
            "raw_response": "x".repeat(1 << 20), "latency_ms": 5,
            "disclosures": [{"id": huge("i"), "tool": huge("t"), "arguments": {"a": huge("a")},
                "result": huge("o")}]}),
        json!({"kind": "cycle", "work_order_id": wo, "tool_calls": [{"tool": huge("t"),
            "step_id": huge("s"), "arguments": huge("a"),
            "error": {"code": huge("k"), "message": huge("e")}}]}),
        json!({"kind": "work_order", "event": "work_order_failed", "work_order_id": wo,
            "code": huge("k"), "message": huge("e")}),
        json!({"kind": "eval", "event": "eval_completed", "provider": huge("p"), "ok": false,
            "suites": (0..10_000).map(|i| json!({"eval_id": format!("EVAL-{i}")})).collect::<Vec<_>>()}),
    ];
    std::fs::write(dir.path().join("huge.jsonl"), chained(records)).unwrap();
    for content in [false, true] {
        let collector = Collector::start();
        let extra: &[&str] = if content { &["--otlp-content"] } else { &[] };
        let doc = export(dir.path(), &collector.url(), "huge.jsonl", extra, &[]).status(0).json();
        let spans = collector.spans();
        assert_eq!(spans.len() as u64, doc["spans"].as_u64().unwrap());
        // The exchange and its tool call, the cycle's tool call, the work order, the eval.
        assert_eq!(spans.len(), 5);
        for span in &spans {
            assert_bounded(span);
        }
        for r in collector.requests() {
            assert!(r.body.len() <= 1 << 20, "a request of {} bytes", r.body.len());
        }
    }
}

#[test]
fn a_huge_prompt_and_reply_go_as_cut_content_that_is_still_json() {
    let dir = demo();
    // Twenty turns of 200 KiB each (the contract bounds their number, not their length),
    // and a 5 MiB reply.
    let turn = "lorem ipsum \u{e9}\"\\ ".repeat(12 * 1024);
    edit(dir.path(), CLASSIFY, |wo| {
        wo["input"]["history"] = json!(vec![turn.clone(); 20]);
        wo["constraints"]["token_budget"] = json!(100_000_000);
    });
    edit(dir.path(), "fixtures/demo_classify.json", |f| {
        let reply = f["responses"][0]["text"].as_str().unwrap().to_string();
        f["responses"][0]["text"] = json!(format!("{reply}\n{}", "z".repeat(5 << 20)));
        f["responses"][0].as_object_mut().unwrap().remove("expect_prompt");
    });
    let collector = Collector::start();
    let args = ["run", CLASSIFY, "--otlp", &collector.url(), "--otlp-content"];
    pactum(dir.path(), &args, &[]).status(0);
    let spans = collector.spans();
    let chat = spans.iter().find(|s| s.name.starts_with("chat")).unwrap();
    for span in &spans {
        assert_bounded(span);
    }
    for key in ["gen_ai.input.messages", "gen_ai.output.messages"] {
        let text = chat.text(key);
        let messages: Value = serde_json::from_str(text).unwrap_or_else(|e| {
            panic!("{key} is no JSON ({e}): {}…", &text[..200.min(text.len())])
        });
        let all: String = messages
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["parts"].as_array().unwrap().iter())
            .map(|p| p["content"].as_str().unwrap_or(""))
            .collect();
        assert!(all.len() <= 16 * 1024 + 100, "{key}: {} bytes of text", all.len());
        assert!(all.contains("[cut: "), "{key} says it was cut");
    }
}

// --- 4. ledger export --------------------------------------------------------------------------

#[test]
fn a_broken_or_corrupt_ledger_is_refused_before_anything_is_sent() {
    let dir = demo();
    pactum(dir.path(), &["run", CLASSIFY, SUM], &[]).status(0);
    let good = std::fs::read_to_string(ledger(dir.path())).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let edited = {
        let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        l[1] = l[1].replacen("\"verdict\":\"", "\"verdict\":\"x", 1);
        l.join("\n") + "\n"
    };
    let cases = [
        ("an edited record", edited, "ledger_broken"),
        ("a torn last line", format!("{good}{{\"seq\":"), "ledger_corrupt"),
        (
            "a line that is no JSON",
            format!("{}\nnot json\n{}\n", lines[0], lines[1]),
            "ledger_corrupt",
        ),
        (
            "a record missing from the chain",
            format!("{}\n{}\n", lines[0], lines[2]),
            "ledger_broken",
        ),
    ];
    common::check_cases(
        &cases,
        |c| c.0,
        |(_, text, code)| {
            std::fs::write(dir.path().join("bad.jsonl"), text).unwrap();
            let collector = Collector::start();
            let out = export(dir.path(), &collector.url(), "bad.jsonl", &["--otlp-content"], &[]);
            out.status(1);
            assert_eq!(out.json()["code"], *code, "{out}");
            assert_eq!(collector.connections(), 0, "nothing is sent");
        },
    );
}

/// A ledger of `work_orders` kernel-shaped work orders: a start, an exchange with `tools`
/// disclosed tool calls, a cycle with one tool call, an end; `4 * work_orders` records.
fn shaped_ledger(work_orders: usize, tools: usize) -> String {
    chained((0..work_orders).flat_map(|i| {
        let wo = format!("WO-{i:06}");
        let calls: Vec<Value> = (0..tools)
            .map(|t| json!({"id": format!("c{t}"), "tool": "calculator", "result": t}))
            .collect();
        [
            json!({"kind": "work_order", "event": "work_order_started", "work_order_id": wo}),
            json!({"kind": "exchange", "event": "exchange", "work_order_id": wo, "model": "m",
                "verdict": "tool_calls", "latency_ms": 4, "disclosures": calls}),
            json!({"kind": "cycle", "work_order_id": wo, "tool_calls": [{"tool": "memory_read",
                "step_id": "s1", "latency_ms": 1, "at": "2026-11-27T12:00:00.000Z"}]}),
            json!({"kind": "work_order", "event": "work_order_completed", "work_order_id": wo,
                "status": "completed"}),
        ]
    }))
}

/// `ledger export` of `text`: every span it counts arrives, each once.
fn exports_whole(text: &str, records: u64, spans: usize) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ledger.jsonl"), text).unwrap();
    let collector = Collector::start();
    let doc = export(dir.path(), &collector.url(), "ledger.jsonl", &[], &[]).status(0).json();
    assert_eq!(doc["records"], records);
    assert_eq!(doc["spans"], spans);
    let got = collector.spans();
    assert_eq!(got.len(), spans, "every span the export counted arrived");
    let mut ids: Vec<(&str, &str)> =
        got.iter().map(|s| (s.trace_id.as_str(), s.span_id.as_str())).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), spans, "each span once");
}

#[test]
fn a_record_of_thousands_of_tool_calls_is_exported_whole() {
    // One record making 5,000 spans at once: more than a queue of 2,048 holds.
    exports_whole(&shaped_ledger(1, 5_000), 4, 5_003);
    // And 4,000 records.
    exports_whole(&shaped_ledger(1_000, 1), 4_000, 4_000);
}

#[test]
fn a_ledger_of_thrice_the_queue_is_exported_whole() {
    // Three times the queue (6,400 records), a dozen batches: every span arrives and the
    // count says so. (It was ignored as slow; it takes about 5 s of one test thread.)
    exports_whole(&shaped_ledger(1_600, 1), 6_400, 6_400);
}

// That `ledger export` does work linear in the ledger is counted in the library's own tests
// (`telemetry::tests::ledger_export_does_work_linear_in_the_ledger`), where the work done
// can be counted rather than timed.

#[test]
fn records_that_are_not_pactums_shape_never_panic_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let records = vec![
        json!({"kind": "exchange", "usage": "lots", "disclosures": {"a": 1}, "latency_ms": -5,
            "verdict": 7, "model": ["m"], "errors": "none", "finish_reason": 3}),
        json!({"kind": "exchange", "latency_ms": u64::MAX, "usage": {"prompt_tokens": -1,
            "completion_tokens": 1e300}, "raw_response": {"nested": [1, 2]}, "verdict": "ok"}),
        json!({"kind": "cycle", "tool_calls": [1, "x", null, {"at": "not a time", "latency_ms": 1e30},
            {"tool": 5, "error": "boom", "is_error": "yes", "refused": 3}]}),
        json!({"kind": "cycle", "tool_calls": {"tool": "x"}}),
        json!({"kind": "work_order", "event": "work_order_started", "work_order_id": ["x"]}),
        json!({"kind": "work_order", "event": "work_order_started", "work_order_id": ""}),
        json!({"kind": "work_order", "event": "work_order_completed", "work_order_id": ""}),
        json!({"kind": "work_order", "event": 5}),
        json!({"kind": "work_order"}),
        json!({"kind": "eval", "suites": "x", "ok": "yes"}),
        json!({"kind": "eval", "suites": [1, {"eval_id": 2}, {"eval_id": "E"}]}),
        json!({"kind": "mystery", "event": "exchange"}),
        json!({"kind": "exchange", "at": "0001-01-01T00:00:00Z", "latency_ms": 10_000}),
        json!({"kind": "exchange", "at": "9999-01-01T00:00:00Z"}),
        json!({"kind": "exchange", "at": "1969-07-20T20:17:40Z", "latency_ms": 1}),
    ];
    std::fs::write(dir.path().join("odd.jsonl"), chained(records)).unwrap();
    for content in [false, true] {
        let collector = Collector::start();
        let extra: &[&str] = if content { &["--otlp-content"] } else { &[] };
        let out = export(dir.path(), &collector.url(), "odd.jsonl", extra, &[]);
        out.status(0);
        assert_eq!(collector.spans().len() as u64, out.json()["spans"].as_u64().unwrap());
    }
}

// --- 5. The live run's spans are the export's ---------------------------------------------------

/// The spans a live run sent, and those `ledger export` sends of each ledger it wrote.
fn live_and_exported(dir: &Path, run: &[&str], ledgers: &[&str]) -> (Vec<Span>, Vec<Span>) {
    let live = Collector::start();
    let mut args = run.to_vec();
    let url = live.url();
    args.extend(["--otlp", &url]);
    let out = pactum(dir, &args, &[]);
    assert!(!out.stderr.contains("otlp_export_failed"), "{out}");
    let later = Collector::start();
    let mut counted = 0;
    for file in ledgers {
        let doc = export(dir, &later.url(), file, &[], &[]).status(0).json();
        counted += doc["spans"].as_u64().unwrap();
    }
    let exported = later.spans();
    assert_eq!(exported.len() as u64, counted);
    (sorted(live.spans()), sorted(exported))
}

#[test]
fn live_spans_equal_exported_spans_in_every_shape_of_run() {
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "a failing work order",
            &["run", "work_orders/WO-DEMO-REFUND-001.json"],
            &[".pactum/ledger.jsonl"],
        ),
        (
            "a tool-calling exchange",
            &["run", "work_orders/WO-DEMO-RUNBOOK-001.json"],
            &[".pactum/ledger.jsonl"],
        ),
        (
            "the same id twice, one after the other",
            &["run", CLASSIFY, CLASSIFY, SUM, SUM],
            &[".pactum/ledger.jsonl"],
        ),
        (
            "--jobs 2, the same ids at once",
            &[
                "run",
                "--jobs",
                "2",
                SUM,
                SUM,
                CLASSIFY,
                CLASSIFY,
                "work_orders/WO-DEMO-REFUND-001.json",
            ],
            &[".pactum/ledger.jsonl"],
        ),
        (
            "a kernel run with a separate --log",
            &["run", SUM, "--log", "cycles.jsonl"],
            &[".pactum/ledger.jsonl", "cycles.jsonl"],
        ),
        (
            "--ledger and --log both chosen",
            &["run", SUM, CLASSIFY, "--ledger", "l.jsonl", "--log", "c.jsonl", "--jobs", "2"],
            &["l.jsonl", "c.jsonl"],
        ),
    ];
    common::check_cases(
        cases,
        |c| c.0,
        |(name, run, ledgers)| {
            let dir = demo();
            let (live, exported) = live_and_exported(dir.path(), run, ledgers);
            assert!(!live.is_empty(), "{name}");
            assert_eq!(live, exported, "{name}");
            // Each trace has one root: a kernel's tool calls hang under their work order's
            // root wherever its cycles were logged.
            for (trace, spans) in by_trace(&live) {
                let roots = spans.iter().filter(|s| s.parent_span_id.is_empty()).count();
                assert_eq!(roots, 1, "{name}: trace {trace}: {spans:#?}");
            }
        },
    );
}

#[test]
fn a_kernel_run_with_repairs_gives_the_same_spans_live_and_exported() {
    let p = crate::kernel_harness::Project::scenario("repair_tool_args");
    let run = ["run", "wo.json", "--ledger", "ledger.jsonl", "--log", "log.jsonl"];
    let (live, exported) = live_and_exported(p.root(), &run, &["ledger.jsonl", "log.jsonl"]);
    let records: Vec<Value> = std::fs::read_to_string(p.path("ledger.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(records.iter().any(|r| r["repair_attempt"].as_u64() > Some(0)), "a repair ran");
    assert!(live.iter().any(|s| s.name.starts_with("execute_tool")), "{live:#?}");
    assert_eq!(live, exported);
    let traces = by_trace(&live);
    assert_eq!(traces.len(), 1, "one work order, one trace: {traces:#?}");
}

// --- 6. The --otlp URL --------------------------------------------------------------------------

#[test]
fn otlp_urls_in_every_form_reach_the_collector_or_are_refused_before_the_run() {
    let v6 = Collector::on("[::1]:0", Answer::Status(200));
    let v4 = Collector::start();
    let p = v4.port();
    let taken: Vec<(String, &Collector, &str)> = vec![
        (format!("HTTP://127.0.0.1:{p}"), &v4, "/v1/traces"),
        (format!("  http://127.0.0.1:{p}/ \n"), &v4, "/v1/traces"),
        (format!("http://127.0.0.1:{p}/v1/traces/"), &v4, "/v1/traces"),
        (format!("http://127.0.0.1:{p}/otlp//"), &v4, "/otlp/v1/traces"),
        (format!("http://user:hunter2@127.0.0.1:{p}"), &v4, "/v1/traces"),
        (format!("http://[::1]:{}", v6.port()), &v6, "/v1/traces"),
    ];
    let dir = demo();
    for (url, collector, path) in &taken {
        let before = collector.requests().len();
        let out = pactum(dir.path(), &["run", CLASSIFY, "--otlp", url], &[]);
        out.status(0);
        assert!(!out.stderr.contains("otlp_export_failed"), "{url}: {out}");
        let requests = collector.requests();
        assert!(requests.len() > before, "{url}");
        assert!(requests[before..].iter().all(|r| r.path == *path), "{url}");
        assert!(!out.stdout.contains("hunter2") && !out.stderr.contains("hunter2"), "{out}");
        let out = export(dir.path(), url, ".pactum/ledger.jsonl", &[], &[]);
        out.status(0);
        assert!(!out.stdout.contains("hunter2"), "{out}");
    }
    let refused = [
        format!("http://:{p}"),
        "http://127.0.0.1:99999".to_string(),
        format!("http://u:hunter2@127.0.0.1:{p}/a b"),
        format!("http://127.0.0.1:{p}/?token=hunter2"),
        format!("http://127.0.0.1:{p}#hunter2"),
        format!("127.0.0.1:{p}"),
        "ftp://u:hunter2@x/".to_string(),
        "http://".to_string(),
        String::new(),
    ];
    let before = v4.connections();
    for url in &refused {
        let out = pactum(dir.path(), &["run", CLASSIFY, "--otlp", url], &[]);
        out.status(2);
        assert!(out.stderr.contains("usage_error"), "{url}: {out}");
        assert!(!out.stderr.contains("hunter2"), "{url}: {out}");
        let out = export(dir.path(), url, ".pactum/ledger.jsonl", &[], &[]);
        out.status(2);
        assert!(!out.stdout.contains("hunter2"), "{url}: {out}");
    }
    assert_eq!(v4.connections(), before, "nothing was sent to a refused URL");
}

#[test]
fn a_reply_that_calls_tools_keeps_its_providers_finish_reason_on_the_span() {
    let dir = tempfile::tempdir().unwrap();
    let exchange = |provider: Value, kind: Value| {
        json!({"kind": "exchange", "event": "exchange", "work_order_id": "WO-T", "model": "m",
               "provider": provider, "provider_kind": kind, "verdict": "tool_calls",
               "finish_reason": "tool_use", "latency_ms": 4})
    };
    let text = chained([
        exchange(json!("oa"), json!("openai")),
        exchange(json!("an"), json!("anthropic")),
        exchange(json!("openai"), Value::Null),
    ]);
    std::fs::write(dir.path().join("ledger.jsonl"), text).unwrap();
    let collector = Collector::start();
    export(dir.path(), &collector.url(), "ledger.jsonl", &[], &[]).status(0);
    let mut reasons: Vec<(String, String)> = collector
        .spans()
        .iter()
        .filter(|s| s.attr("gen_ai.operation.name") == "chat")
        .map(|s| {
            (
                s.text("pactum.provider").to_string(),
                s.attr("gen_ai.response.finish_reasons").to_string(),
            )
        })
        .collect();
    reasons.sort();
    assert_eq!(
        reasons,
        [
            ("an".to_string(), "[\"tool_use\"]".to_string()),
            ("oa".to_string(), "[\"tool_calls\"]".to_string()),
            ("openai".to_string(), "[\"tool_calls\"]".to_string()),
        ]
    );
}
