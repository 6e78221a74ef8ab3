//! pactum's spans as a GenAI viewer reads them (SPEC §22): Arize Phoenix from PyPI
//! (`arize-phoenix`, which `.ci/run` installs into `target/ci-tools/phoenix`), started on
//! free loopback ports, takes a run's and an evaluation's spans over OTLP/HTTP; the test
//! reads them back through Phoenix's own REST API, as Phoenix understood them (its span
//! kinds, its `llm.*` attributes).
//!
//! What it checks is what a team sees in Phoenix: a work order is one trace of an AGENT span
//! with LLM spans under it, named by the provider's kind (`openai`, not the config table's
//! name) with the model and the tokens; a reply that called tools shows its tool calls, and
//! a later round's input the tool turns; tools are TOOL spans under the chat that called
//! them; an evaluation's cases are LLM spans under its `eval` span, in one trace.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::cli_disclosure::{ANSWER, openai_call, openai_reply};
use crate::common;
use crate::mock_http::MockServer;

/// A running Phoenix server, killed when dropped.
struct Phoenix {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    fn start() -> Phoenix {
        let tools = std::env::var_os("PACTUM_CI_TOOLS").map(PathBuf::from).unwrap_or_else(|| {
            panic!(
                "this test needs Arize Phoenix, which .ci/run installs into \
                 target/ci-tools/phoenix and names in PACTUM_CI_TOOLS; run it there, or \
                 without --ignored"
            )
        });
        let program = tools.join("phoenix/bin/phoenix");
        assert!(program.is_file(), "{} is missing: run .ci/run", program.display());
        let dir = tempfile::tempdir().unwrap();
        let free = || TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let (port, grpc) = (free(), free());
        let mut child = Command::new(&program)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", program.display()));
        // Ready when its server says so on stderr (its start-up imports take seconds on a
        // busy machine: waited for, not timed); a server that exits first ends the wait.
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (lines_in, lines_out) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            // Read to the end, so the server never blocks on a full pipe.
            for line in stderr.lines().map_while(Result::ok) {
                let _ = lines_in.send(line);
            }
        });
        let mut said = Vec::new();
        loop {
            match lines_out.recv() {
                Ok(line) if line.contains("Application startup complete") => break,
                Ok(line) => said.push(line),
                Err(_) => panic!("phoenix serve exited before it was ready:\n{}", said.join("\n")),
            }
        }
        Phoenix { child, port, _dir: dir }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn get(&self, path: &str) -> Option<String> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(10)))
            .build()
            .into();
        let mut response = agent.get(format!("{}{path}", self.url())).call().ok()?;
        response.body_mut().read_to_string().ok()
    }

    /// The spans of the default project, once there are at least `n`: Phoenix writes what
    /// it took in the background, so it is asked again until it holds them (or has exited;
    /// the bound on asking is only a guard against a test that never ends, far past any
    /// machine's load).
    fn spans(&mut self, n: usize) -> Vec<Value> {
        let mut seen = 0;
        for _ in 0..20_000 {
            let spans: Vec<Value> = self
                .get("/v1/projects/default/spans?limit=1000")
                .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                .and_then(|doc| doc["data"].as_array().cloned())
                .unwrap_or_default();
            if spans.len() >= n {
                return spans;
            }
            seen = spans.len();
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("phoenix serve exited ({status}) holding {seen} spans, not {n}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("Phoenix holds {seen} spans, not {n}, after 20,000 looks");
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn attr<'s>(span: &'s Value, key: &str) -> &'s Value {
    &span["attributes"][key]
}

fn parent_of<'s>(spans: &'s [Value], span: &Value) -> &'s Value {
    let parent = span["parent_id"].as_str().unwrap_or_else(|| panic!("no parent: {span:#}"));
    spans
        .iter()
        .find(|s| s["context"]["span_id"] == parent)
        .unwrap_or_else(|| panic!("no span {parent}"))
}

#[test]
#[ignore = "needs Arize Phoenix from PyPI (.ci/run installs it)"]
fn phoenix_shows_runs_tool_calls_and_evaluations_as_genai_traces() {
    let mut phoenix = Phoenix::start();
    // The runbook demo on an OpenAI-compatible server: it reads a file, opens a section,
    // calls the calculator, then answers.
    let server = MockServer::start(vec![
        openai_call("call_read", "read_file", json!({"path": "/context/runbook.md"})),
        openai_call(
            "call_open",
            "open_sections",
            json!({"section_keys": ["capacity"], "reason": "throughput"}),
        ),
        openai_call("call_calc", "calculator", json!({"expression": "500 / 96"})),
        openai_reply(json!({"role": "assistant", "content": ANSWER}), "stop"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    common::copy_shipped(dir.path());
    common::copy_tree(&common::repo().join("work_orders"), &dir.path().join("work_orders"));
    common::copy_tree(&common::repo().join("fixtures"), &dir.path().join("fixtures"));
    let url = phoenix.url();
    let out = common::Out::of(
        common::pactum_in(dir.path())
            .args(["run", "work_orders/WO-DEMO-RUNBOOK-001.json", "--provider", "openai"])
            .args(["--otlp", &url, "--otlp-content"])
            .env("OPENAI_BASE_URL", server.url())
            .env("OPENAI_API_KEY", "sk-phoenix-test-0123456789")
            .env("PACTUM_MODEL", "gpt-mock-1"),
    );
    out.status(0);
    assert!(!out.stderr.contains("otlp_export_failed"), "{out}");
    // The root, four chats and three tool calls.
    let spans = phoenix.spans(8);
    let text = serde_json::to_string(&spans).unwrap();
    assert!(!text.contains("sk-phoenix-test-0123456789"), "the key reached Phoenix");
    let root = spans.iter().find(|s| s["parent_id"].is_null()).unwrap();
    assert_eq!(root["name"], "invoke_agent WO-DEMO-RUNBOOK-001");
    assert_eq!(root["span_kind"], "AGENT", "{root:#}");
    let trace = &root["context"]["trace_id"];
    assert!(spans.iter().all(|s| &s["context"]["trace_id"] == trace), "one trace");
    let mut chats: Vec<&Value> = spans.iter().filter(|s| s["span_kind"] == "LLM").collect();
    chats.sort_by_key(|s| s["start_time"].as_str().unwrap().to_string());
    assert_eq!(chats.len(), 4, "{text}");
    for chat in &chats {
        assert_eq!(parent_of(&spans, chat)["name"], root["name"]);
        assert_eq!(chat["name"], "chat gpt-mock-1");
        assert_eq!(attr(chat, "gen_ai.provider.name"), "openai", "{chat:#}");
        assert_eq!(attr(chat, "gen_ai.request.model"), "gpt-mock-1");
        assert_eq!(attr(chat, "llm.token_count.prompt"), 50, "{chat:#}");
        assert_eq!(attr(chat, "llm.token_count.completion"), 5);
    }
    // The first reply called read_file: Phoenix shows the call, and OpenAI's own reason.
    let first = chats[0];
    assert_eq!(attr(first, "llm.finish_reason"), "tool_calls", "{first:#}");
    let called = "llm.output_messages.0.message.tool_calls.0.tool_call.function.name";
    assert_eq!(attr(first, called), "read_file", "{first:#}");
    // The last round's input carries the earlier rounds: the calls and the tool answers.
    let last = chats[3];
    let roles: Vec<&str> = (0..20)
        .filter_map(|i| attr(last, &format!("llm.input_messages.{i}.message.role")).as_str())
        .collect();
    assert_eq!(roles.iter().filter(|r| **r == "tool").count(), 3, "{roles:?} {last:#}");
    assert_eq!(roles.iter().filter(|r| **r == "assistant").count(), 3, "{roles:?}");
    // Each tool call is a TOOL span under the chat whose reply asked for it.
    let tools: Vec<&Value> = spans.iter().filter(|s| s["span_kind"] == "TOOL").collect();
    assert_eq!(tools.len(), 3, "{text}");
    for tool in &tools {
        assert_eq!(parent_of(&spans, tool)["span_kind"], "LLM");
    }

    // An evaluation on recorded answers: its cases under its eval span, in one trace.
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("eval-classify");
    common::copy_tree(&common::repo().join("examples/eval-classify"), &project);
    let out = common::Out::of(common::pactum_in(&project).args(["eval", "--json", "--otlp", &url]));
    out.status(0);
    let cases = out.json()["suites"][0]["cases"].as_u64().unwrap() as usize;
    let spans = phoenix.spans(8 + cases + 1);
    let eval = spans.iter().find(|s| s["name"] == "eval").unwrap();
    let under: Vec<&Value> = spans
        .iter()
        .filter(|s| s["parent_id"].as_str() == eval["context"]["span_id"].as_str())
        .collect();
    assert_eq!(under.len(), cases, "every case under the eval span");
    for case in under {
        assert_eq!(case["span_kind"], "LLM");
        assert_eq!(case["context"]["trace_id"], eval["context"]["trace_id"]);
        // Replayed: the recording's latency is an attribute, not the span's length.
        assert_eq!(case["start_time"], case["end_time"], "{case:#}");
        assert!(attr(case, "pactum.latency.recorded_ms").is_u64(), "{case:#}");
    }

    // The README's Phoenix block as written, but for the installation (done) and the
    // port (a free one instead of 6006), with the binary the tests built.
    let blocks = crate::readme_tour::sh_blocks("Traces in your stack");
    let lines: Vec<&str> = blocks[1].lines().collect();
    assert!(lines[0].starts_with("pip install arize-phoenix && phoenix serve"), "{lines:?}");
    let script = lines[1..]
        .join("\n")
        .replace("http://localhost:6006", &url)
        .replace("cargo run -q --", env!("CARGO_BIN_EXE_pactum"));
    assert!(!script.contains("cargo") && script.contains("--otlp"), "{script}");
    let demo = crate::cli_otel::demo();
    crate::readme_tour::bash(demo.path(), &script).status(0);
    let spans = phoenix.spans(8 + cases + 1 + 1);
    let sum = spans.iter().find(|s| s["name"] == "invoke_agent WO-DEMO-SUM-001").unwrap();
    assert_eq!(sum["span_kind"], "AGENT");
}
