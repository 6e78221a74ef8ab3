//! Telemetry on OpenTelemetry (SPEC §22), through the binary, against a collector that
//! decodes the real OTLP protobuf (`tests/support/otlp.rs`): one trace per work order, its
//! exchanges as `chat` spans and its tool calls as `execute_tool` spans under the work
//! order's `invoke_agent` root, GenAI attributes and pactum's own, content only with
//! `--otlp-content` and masked, `ledger export --otlp` giving the spans the run sent, and a
//! collector that is down failing `ledger export` but never a run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{self, Out};
use crate::otlp::{Collector, Span};

/// A copy of the shipped project with its demo work orders and their scripted fixtures.
pub(crate) fn demo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_shipped(dir.path());
    for folder in ["work_orders", "fixtures"] {
        common::copy_tree(&common::repo().join(folder), &dir.path().join(folder));
    }
    dir
}

pub(crate) fn pactum(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = common::pactum_in(dir);
    cmd.args(args).timeout(std::time::Duration::from_secs(60));
    for (k, v) in env {
        cmd.env(k, v);
    }
    Out::of(&mut cmd)
}

pub(crate) const SUM: &str = "work_orders/WO-DEMO-SUM-001.json";
pub(crate) const CLASSIFY: &str = "work_orders/WO-DEMO-CLASSIFY-001.json";

pub(crate) fn ledger(dir: &Path) -> PathBuf {
    dir.join(".pactum/ledger.jsonl")
}

pub(crate) fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(ledger(dir))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub(crate) fn by_trace(spans: &[Span]) -> BTreeMap<String, Vec<Span>> {
    let mut traces: BTreeMap<String, Vec<Span>> = BTreeMap::new();
    for s in spans {
        traces.entry(s.trace_id.clone()).or_default().push(s.clone());
    }
    traces
}

fn root_of(trace: &[Span]) -> &Span {
    let roots: Vec<&Span> = trace.iter().filter(|s| s.parent_span_id.is_empty()).collect();
    assert_eq!(roots.len(), 1, "one root per trace: {trace:#?}");
    roots[0]
}

#[test]
fn each_work_order_is_one_trace_of_its_exchanges_and_tool_calls() {
    let dir = demo();
    let collector = Collector::start();
    let out = pactum(dir.path(), &["run", SUM, CLASSIFY, "--otlp", &collector.url()], &[]);
    out.status(0);
    assert!(!out.stderr.contains("otlp_export_failed"), "{out}");
    let requests = collector.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r.path, "/v1/traces", "the base URL gets the traces path");
        assert_eq!(r.content_type, "application/x-protobuf");
    }
    let spans = collector.spans();
    let traces = by_trace(&spans);
    assert_eq!(traces.len(), 2, "one trace per work order: {spans:#?}");
    let registry: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("registry.json")).unwrap())
            .unwrap();
    for trace in traces.values() {
        let root = root_of(trace);
        assert_eq!(root.attr("gen_ai.operation.name"), "invoke_agent");
        assert_eq!(root.status_code, 1, "the work order completed: {root:#?}");
        assert_eq!(root.resource["service.name"], "pactum");
        assert_eq!(root.scope, "pactum");
        let wo = root.text("pactum.work_order.id").to_string();
        assert_eq!(root.name, format!("invoke_agent {wo}"));
        for s in trace.iter().filter(|s| !s.parent_span_id.is_empty()) {
            // Every span of the trace hangs under the root, or under one of its exchanges.
            let parent = trace.iter().find(|p| p.span_id == s.parent_span_id).unwrap();
            assert!(
                parent.span_id == root.span_id || parent.attr("gen_ai.operation.name") == "chat"
            );
            assert!(s.start_ns >= root.start_ns && s.end_ns <= root.end_ns + 1_000_000, "{s:#?}");
        }
        let chats: Vec<&Span> =
            trace.iter().filter(|s| s.attr("gen_ai.operation.name") == "chat").collect();
        assert!(!chats.is_empty());
        for chat in &chats {
            assert_eq!(chat.kind, 3, "an exchange is a client span");
            assert_eq!(chat.attr("pactum.work_order.id"), &json!(wo));
            // The contract's id, version and hash are the registry's.
            let id = chat.text("pactum.contract.id");
            let version = chat.text("pactum.contract.version");
            let entry = registry["contracts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["contract_id"] == id && e["version"] == version)
                .unwrap_or_else(|| panic!("{id}@{version} not in the registry"));
            assert_eq!(chat.attr("pactum.contract.sha256"), &entry["sha256"]);
            assert!(chat.attributes.contains_key("gen_ai.usage.input_tokens"));
            assert!(chat.attributes.contains_key("gen_ai.usage.output_tokens"));
            assert_eq!(chat.text("pactum.prompt.sha256").len(), 64);
            assert!(
                !chat.attributes.contains_key("gen_ai.input.messages"),
                "no content unless asked"
            );
            assert!(!chat.attributes.contains_key("gen_ai.output.messages"));
        }
        if wo == "WO-DEMO-CLASSIFY-001" {
            assert_eq!(chats.len(), 1);
            assert_eq!(chats[0].attr("gen_ai.usage.input_tokens"), 210);
            assert_eq!(chats[0].attr("gen_ai.usage.output_tokens"), 40);
            assert_eq!(chats[0].attr("pactum.verdict"), "ok");
            assert_eq!(chats[0].attr("pactum.extraction_method"), "fenced");
        } else {
            let tools: Vec<&Span> = trace
                .iter()
                .filter(|s| s.attr("gen_ai.operation.name") == "execute_tool")
                .collect();
            assert_eq!(tools.len(), 1, "{trace:#?}");
            assert_eq!(tools[0].name, "execute_tool calculator");
            assert_eq!(tools[0].attr("gen_ai.tool.name"), "calculator");
            assert_eq!(tools[0].parent_span_id, root.span_id);
            assert!(!tools[0].attributes.contains_key("gen_ai.tool.call.result"));
        }
    }
    // Every exchange record of the ledger is one chat span, named by its hash.
    let exchanges: Vec<Value> =
        records(dir.path()).into_iter().filter(|r| r["kind"] == "exchange").collect();
    let chats: Vec<&Span> =
        spans.iter().filter(|s| s.attr("gen_ai.operation.name") == "chat").collect();
    assert_eq!(chats.len(), exchanges.len());
    for r in &exchanges {
        let span = chats.iter().find(|s| s.attr("pactum.ledger.hash") == &r["hash"]).unwrap();
        assert_eq!(span.attr("pactum.ledger.seq"), &r["seq"]);
        let ms = r["latency_ms"].as_u64().unwrap();
        assert_eq!((span.end_ns - span.start_ns) / 1_000_000, ms);
    }
}

#[test]
fn content_goes_only_when_asked_and_masked() {
    let dir = demo();
    let secret = "sk-otel-demo-secret-4321";
    // The work order's input carries a value the environment marks secret.
    let wo = dir.path().join(CLASSIFY);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&wo).unwrap()).unwrap();
    doc["input"]["history"] = json!([format!("my token is {secret}")]);
    std::fs::write(&wo, doc.to_string()).unwrap();
    let collector = Collector::start();
    let out = pactum(
        dir.path(),
        &[
            "run",
            SUM,
            CLASSIFY,
            "--otlp",
            &format!("{}/v1/traces", collector.url()),
            "--otlp-content",
        ],
        &[("DEMO_TOKEN", secret)],
    );
    out.status(0);
    let spans = collector.spans();
    assert!(collector.requests().iter().all(|r| r.path == "/v1/traces"));
    let chat = spans
        .iter()
        .find(|s| {
            s.text("pactum.work_order.id") == "WO-DEMO-CLASSIFY-001"
                && s.attr("gen_ai.operation.name") == "chat"
        })
        .unwrap();
    let input: Value = serde_json::from_str(chat.text("gen_ai.input.messages")).unwrap();
    let text = input.to_string();
    assert!(text.contains("I was charged twice"), "the prompt is there: {text}");
    assert_eq!(input[0]["parts"][0]["type"], "text");
    let output: Value = serde_json::from_str(chat.text("gen_ai.output.messages")).unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert!(output[0]["parts"][0]["content"].as_str().unwrap().contains("\"billing\""));
    let tool = spans.iter().find(|s| s.attr("gen_ai.operation.name") == "execute_tool").unwrap();
    let result: Value = serde_json::from_str(tool.text("gen_ai.tool.call.result")).unwrap();
    assert_eq!(result, json!({"result": 15}), "what the calculator computed: {tool:#?}");
    // Nothing of any span holds the secret.
    for r in collector.requests() {
        assert!(!String::from_utf8_lossy(&r.body).contains(secret));
    }
    assert!(text.contains("my token is"), "{text}");
}

/// Names and ids a span carries pass the masker too, content or not: a session id that
/// holds a secret (an application's token used as its conversation key) reaches the collector
/// masked, in the attribute and in the ledger alike, and so does one of an older ledger
/// exported once the environment marks it.
#[test]
fn ids_a_span_carries_are_masked_with_or_without_content() {
    let dir = demo();
    let secret = "sk-otel-session-secret-8765";
    let wo = dir.path().join(CLASSIFY);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&wo).unwrap()).unwrap();
    doc["session_id"] = json!(format!("session {secret}"));
    doc["agent_id"] = json!(secret);
    std::fs::write(&wo, doc.to_string()).unwrap();
    for content in [false, true] {
        let collector = Collector::start();
        let url = format!("{}/v1/traces", collector.url());
        let mut args = vec!["run", CLASSIFY, "--otlp", &url];
        if content {
            args.push("--otlp-content");
        }
        pactum(dir.path(), &args, &[("DEMO_TOKEN", secret)]).status(0);
        let spans = collector.spans();
        let chat = spans.iter().find(|s| s.attr("gen_ai.operation.name") == "chat").unwrap();
        let session = chat.text("gen_ai.conversation.id");
        assert!(session.starts_with("session ") && !session.contains(secret), "{chat:#?}");
        assert!(!chat.text("gen_ai.agent.id").is_empty(), "{chat:#?}");
        for r in collector.requests() {
            assert!(!String::from_utf8_lossy(&r.body).contains(secret), "content {content}");
        }
    }
    assert!(!std::fs::read_to_string(ledger(dir.path())).unwrap().contains(secret));
    // A ledger written before the value was marked holds it; exported where the
    // environment marks it, every span's ids are masked all the same.
    std::fs::remove_dir_all(dir.path().join(".pactum")).unwrap();
    pactum(dir.path(), &["run", CLASSIFY], &[]).status(0);
    assert!(std::fs::read_to_string(ledger(dir.path())).unwrap().contains(secret));
    let collector = Collector::start();
    let url = format!("{}/v1/traces", collector.url());
    pactum(dir.path(), &["ledger", "export", "--otlp", &url], &[("DEMO_TOKEN", secret)]).status(0);
    let spans = collector.spans();
    let chat = spans.iter().find(|s| s.attr("gen_ai.operation.name") == "chat").unwrap();
    assert!(chat.text("gen_ai.conversation.id").starts_with("session "), "{chat:#?}");
    for r in collector.requests() {
        assert!(!String::from_utf8_lossy(&r.body).contains(secret), "ledger export");
    }
}

#[test]
fn an_exported_ledger_gives_the_spans_its_run_sent() {
    let dir = demo();
    let live = Collector::start();
    pactum(dir.path(), &["run", SUM, CLASSIFY, "--otlp", &live.url()], &[]).status(0);
    let later = Collector::start();
    let out = pactum(dir.path(), &["ledger", "export", "--otlp", &later.url(), "--json"], &[]);
    out.status(0);
    let doc = out.json();
    assert_eq!(doc["records"], records(dir.path()).len());
    let key = |s: &Span| (s.trace_id.clone(), s.span_id.clone());
    let mut sent = live.spans();
    let mut exported = later.spans();
    sent.sort_by_key(key);
    exported.sort_by_key(key);
    assert_eq!(doc["spans"], exported.len());
    assert_eq!(sent, exported);
}

#[test]
fn a_collector_that_is_down_warns_a_run_and_fails_an_export() {
    let dir = demo();
    let refused = crate::mock_http::RefusedPort::new();
    let out = pactum(dir.path(), &["run", CLASSIFY, "--otlp", &refused.url()], &[]);
    out.status(0);
    assert!(out.stderr.contains("warning[otlp_export_failed]"), "{out}");
    let out = pactum(dir.path(), &["ledger", "export", "--otlp", &refused.url()], &[]);
    out.status(1);
    assert!(out.stderr.contains("otlp_export_failed"), "{out}");
    // A collector that answers but refuses: the status is named.
    let refusing = Collector::refusing(403);
    let out = pactum(dir.path(), &["ledger", "export", "--otlp", &refusing.url(), "--json"], &[]);
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["code"], "otlp_export_failed");
    assert!(doc["message"].as_str().unwrap().contains("403"), "{doc}");
    // What the collector said comes along: MLflow's 422 names the header it wants (JSON),
    // an OTLP collector's Status its message (protobuf); one line, the token masked.
    use crate::mock_http::{MockReply, MockServer};
    let token = "Bearer otlp-token-0123456789abcdef";
    let json = MockReply::json(
        422,
        &json!({"detail": format!("Missing header x-mlflow-experiment-id (got {token})\n\u{1b}[2J")}),
    );
    let mut status = vec![0x08, 3, 0x12];
    let said = "traces rejected: span too large";
    status.push(said.len() as u8);
    status.extend_from_slice(said.as_bytes());
    let proto = MockReply::text(400, &String::from_utf8(status).unwrap())
        .header("content-type", "application/x-protobuf");
    // The token where a one-line excerpt would cut it, and split across lines.
    let long = MockReply::text(401, &format!("{}{token}", "x".repeat(290)));
    let split = MockReply::text(401, "bad token Bearer otlp-token-01234\n56789abcdef");
    let left_out = "its answer is left out: it quotes a header of the request";
    for (reply, expected) in [
        (json, "Missing header x-mlflow-experiment-id (got"),
        (proto, said),
        (long, "xxxxxxxx"),
        (split, left_out),
    ] {
        let server = MockServer::start(vec![reply.clone(), reply.clone(), reply]);
        let env =
            [("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20otlp-token-0123456789abcdef")];
        let args = ["ledger", "export", "--otlp", &server.url(), "--json"];
        let out = pactum(dir.path(), &args, &env);
        out.status(1);
        let message = out.json()["message"].as_str().unwrap().to_string();
        assert!(message.contains(expected), "{message}");
        assert!(!message.contains("otlp-token-0123456789abcdef"), "{message}");
        assert!(!message.contains("otlp-token-01234"), "no part of it: {message}");
        assert!(!message.contains('\u{1b}') && !message.contains('\n'), "{message}");
    }
}

#[test]
fn the_collector_comes_from_the_flag_the_environment_or_pactum_toml() {
    let dir = demo();
    // pactum.toml names one collector, the environment another, the flag a third.
    let (from_toml, from_env, from_flag) =
        (Collector::start(), Collector::start(), Collector::start());
    std::fs::write(
        dir.path().join("pactum.toml"),
        format!("[telemetry]\notlp_endpoint = \"{}\"\n", from_toml.url()),
    )
    .unwrap();
    // pactum.toml's collector only where the environment confirms the checkout (SPEC §24);
    // otherwise the run says so and sends nothing.
    let out = pactum(dir.path(), &["run", CLASSIFY], &[]);
    out.status(0);
    assert!(out.stderr.contains("warning[config_unconfirmed]: `telemetry.otlp_endpoint`"), "{out}");
    assert!(from_toml.spans().is_empty(), "spans went to a collector only pactum.toml named");
    pactum(dir.path(), &["run", CLASSIFY, "--trust-config"], &[]).status(0);
    assert!(!from_toml.spans().is_empty());
    let env_url = from_env.url();
    pactum(dir.path(), &["run", CLASSIFY], &[("OTEL_EXPORTER_OTLP_ENDPOINT", &env_url)]).status(0);
    assert!(!from_env.spans().is_empty());
    let before = (from_toml.spans().len(), from_env.spans().len());
    pactum(
        dir.path(),
        &["run", CLASSIFY, "--otlp", &from_flag.url()],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &env_url)],
    )
    .status(0);
    assert!(!from_flag.spans().is_empty());
    assert_eq!((from_toml.spans().len(), from_env.spans().len()), before);
    // A URL that is none is a usage error before anything runs; credentials never shown.
    let out = pactum(dir.path(), &["run", CLASSIFY, "--otlp", "ftp://u:hunter2@x"], &[]);
    out.status(2);
    assert!(out.stderr.contains("usage_error") && !out.stderr.contains("hunter2"), "{out}");
    // The refusal names where the URL came from.
    let out = pactum(
        dir.path(),
        &["run", CLASSIFY],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318")],
    );
    out.status(2);
    assert!(out.stderr.contains("OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT `localhost:4318`"), "{out}");
    std::fs::write(dir.path().join("pactum.toml"), "[telemetry]\notlp_endpoint = \"collector\"\n")
        .unwrap();
    let out = pactum(dir.path(), &["run", CLASSIFY, "--trust-config"], &[]);
    out.status(2);
    assert!(out.stderr.contains("[telemetry] otlp_endpoint in pactum.toml `collector`"), "{out}");
}

#[test]
fn eval_cases_are_spans_too() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("eval-classify");
    common::copy_tree(&common::repo().join("examples/eval-classify"), &project);
    let collector = Collector::start();
    let out = pactum(&project, &["eval", "--json", "--otlp", &collector.url()], &[]);
    out.status(0);
    let cases = out.json()["suites"][0]["cases"].as_u64().unwrap();
    assert!(cases > 1);
    let spans = collector.spans();
    let chats = spans.iter().filter(|s| s.attr("gen_ai.operation.name") == "chat").count();
    assert_eq!(chats as u64, cases, "one chat span per case");
    let evals: Vec<&Span> = spans.iter().filter(|s| s.name == "eval").collect();
    assert_eq!(evals.len(), 1);
    assert_eq!(evals[0].attr("pactum.eval.ok"), true);
    assert_eq!(evals[0].attr("pactum.eval.suites"), &json!(["EVAL-CLASSIFY-001"]));
    // One trace: every case's chat under the run's eval span, within its time.
    let eval = evals[0];
    assert!(eval.parent_span_id.is_empty());
    for chat in spans.iter().filter(|s| s.attr("gen_ai.operation.name") == "chat") {
        assert_eq!(chat.trace_id, eval.trace_id, "{chat:#?}");
        assert_eq!(chat.parent_span_id, eval.span_id, "{chat:#?}");
        assert!(chat.start_ns >= eval.start_ns && chat.end_ns <= eval.end_ns, "{chat:#?}");
    }
    let records = records(&project);
    let run = records.iter().find(|r| r["event"] == "eval_completed").unwrap()["eval_run"].clone();
    assert_eq!(run.as_str().map(str::len), Some(64), "{run}");
    let cases = records.iter().filter(|r| r["kind"] == "exchange");
    assert!(cases.clone().all(|r| r["eval_run"] == run));
}

#[test]
fn the_readme_traces_section_runs_as_written_against_a_collector() {
    let blocks = crate::readme_tour::sh_blocks("Traces in your stack");
    assert_eq!(blocks.len(), 2, "Jaeger's block, then Phoenix's (tests/cli_otel_phoenix.rs)");
    // The block as written, but for the container (the test's collector stands in for
    // Jaeger, on a free port instead of 4318) and with the binary the tests built.
    let collector = Collector::start();
    let lines: Vec<&str> = blocks[0].lines().collect();
    assert!(lines[0].starts_with("docker run"), "{lines:#?}");
    let script = lines[1..]
        .join("\n")
        .replace("http://localhost:4318", &collector.url())
        .replace("cargo run -q --", env!("CARGO_BIN_EXE_pactum"));
    assert!(!script.contains("cargo") && script.contains("--otlp"), "{script}");
    let dir = demo();
    let out = crate::readme_tour::bash(dir.path(), &script);
    out.status(0);
    assert!(out.stdout.contains("records sent as"), "{out}");
    // The run's spans, then the same spans again from the ledger.
    let spans = collector.spans();
    let traces: std::collections::BTreeSet<&str> =
        spans.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(traces.len(), 2, "two work orders");
    let mut once: Vec<(&str, &str)> =
        spans.iter().map(|s| (s.trace_id.as_str(), s.span_id.as_str())).collect();
    once.sort();
    let sent = once.len();
    once.dedup();
    assert_eq!(once.len() * 2, sent, "the export sent each span of the run again");
}

#[test]
fn the_readme_settings_parse_with_the_telemetry_table() {
    let readme = std::fs::read_to_string(common::repo().join("README.md")).unwrap();
    let blocks = crate::readme_tour::fenced("Configuration (`pactum.toml`)", "toml");
    assert_eq!(blocks.len(), 1, "{readme:.0}");
    let config = pactum::config::Config::parse(&blocks[0], Path::new("pactum.toml")).unwrap();
    assert_eq!(config.telemetry.otlp_endpoint.as_deref(), Some("http://localhost:4318"));
    assert!(!config.telemetry.content);
}
