//! Tools from MCP servers through the binary (SPEC §23): a real server process (a small
//! MCP server on the Python standard library, `tests/fixtures/mcp/server.py`) configured in
//! `pactum.toml`, its tools in kernel steps and sections, one registry per run.
//!
//! Every answer here follows from the tool: the server reads its orders from a file the
//! test writes, and the scripted synthesis reply only fits a prompt that holds the tool's
//! result (`expect_prompt`), so a changed order changes the run.

use crate::common::repo;
use crate::kernel_harness::Project;
use serde_json::{Value, json};

/// A kernel project whose `pactum.toml` runs the test server with `server_args`, and whose
/// order `A-17` has `status`.
fn project(server_args: &str, status: &str) -> Project {
    let p = Project::empty();
    // A checkout the user trusts: its tool server may start (SPEC §24).
    p.trust();
    let server = repo().join("tests/fixtures/mcp/server.py");
    p.write("tools/server.py", &std::fs::read_to_string(server).unwrap());
    p.write_json("tools/orders.json", &json!({"A-17": {"status": status, "carrier": "DHL"}}));
    p.write(
        "pactum.toml",
        &format!(
            "[tools.orders]\ncommand = [\"python3\", \"tools/server.py\"{server_args}]\ntimeout_s = 20\n"
        ),
    );
    p.write_json("wo.json", &work_order());
    p.write_json("fixtures.json", &fixtures(status));
    p
}

fn work_order() -> Value {
    json!({"work_order_id": "WO-ORDER", "kind": "kernel",
           "request": "Where is order A-17?", "provider": {"fixtures": "fixtures.json"}})
}

/// Scripted replies of a run that looks order A-17 up; the synthesis reply expects the
/// tool's answer (`status`) in its prompt.
fn fixtures(status: &str) -> Value {
    fixtures_with(json!({"order_id": "A-17"}), &[], status)
}

/// Like [`fixtures`], with the plan step's `arguments` and replies inserted after the plan.
fn fixtures_with(arguments: Value, after_plan: &[Value], status: &str) -> Value {
    let plan = json!({"goal": "Find order A-17.", "steps": [
        {"step_id": "s1", "description": "Look the order up.", "status": "pending",
         "tool": "lookup_order", "arguments": arguments}]});
    let mut f = json!({"responses": [
        {"contract_id": "PRC-PROFILE-001", "text": "Look an order up."},
        {"contract_id": "PRC-PLAN-001", "expect_prompt": ["lookup_order", "Looks an order up by its id."],
         "text": plan.to_string()},
        {"contract_id": "PRC-SEMANTIC-001", "text": "The order was found."},
        {"contract_id": "PRC-CONVERGE-001", "text": "{\"converged\": true, \"reason\": \"found\"}"},
        {"contract_id": "PRC-SYNTH-001",
         "expect_prompt": [format!("\"status\":\"{status}\"")],
         "text": json!({"answer_text": format!("Order A-17 is {status}."), "metadata": {}}).to_string()}
    ]});
    let responses = f["responses"].as_array_mut().unwrap();
    for (i, r) in after_plan.iter().enumerate() {
        responses.insert(2 + i, r.clone());
    }
    f
}

/// The lines of the server's call log (the arguments of every call it received). The server
/// creates the log when it starts: a missing log fails the test (the server never ran, and
/// "no call" would pass for nothing).
fn calls_received(p: &Project) -> Vec<Value> {
    let log = p.path("tools/calls.log");
    std::fs::read_to_string(&log)
        .unwrap_or_else(|e| panic!("{}: {e}; the server never started", log.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Whether the server process the run started is gone (killed and reaped: not even a
/// zombie is left in the process table).
fn server_gone(p: &Project) -> bool {
    let pid = std::fs::read_to_string(p.path("tools/server.pid")).unwrap();
    !std::path::Path::new(&format!("/proc/{}", pid.trim())).exists()
}

#[test]
fn a_kernel_step_calls_a_tool_of_a_stdio_server_and_the_answer_follows_from_it() {
    for status in ["shipped", "delayed"] {
        let p = project("", status);
        let run = p.run(&[]);
        assert_eq!(run.status(), "converged", "{}", run.out);
        assert_eq!(run.answer_text(), format!("Order A-17 is {status}."));
        let calls = p.ledger().tool_calls();
        assert_eq!(calls[0]["tool"], "lookup_order");
        assert_eq!(calls[0]["output"]["status"], status);
        p.verify_ledger("ledger.jsonl");
    }
    // The scripted synthesis reply of one status does not fit the other's prompt.
    let p = project("", "lost");
    p.write_json("fixtures.json", &fixtures("shipped"));
    let run = p.run(&[]);
    assert_ne!(run.answer_text(), "Order A-17 is shipped.", "{}", run.out);
}

#[test]
fn arguments_are_checked_against_the_servers_input_schema_before_the_call() {
    // `a17` breaks the tool's pattern: the supervisor repairs the call, and the server only
    // ever receives the repaired arguments.
    let p = project("", "shipped");
    let repair = json!({"contract_id": "PRC-REPAIRTOOL-001",
                        "text": "{\"arguments\": {\"order_id\": \"A-17\"}}"});
    p.write_json("fixtures.json", &fixtures_with(json!({"order_id": "a17"}), &[repair], "shipped"));
    let run = p.run(&[]);
    assert_eq!(run.status(), "converged", "{}", run.out);
    assert_eq!(calls_received(&p), [json!({"order_id": "A-17"})]);
    assert_eq!(run.answer_text(), "Order A-17 is shipped.");
}

/// The deadline (`timeout_s`) of the servers whose deadline a test waits for. Every request
/// runs within it, starting the server and `initialize` included, so it must hold a Python
/// start on a loaded machine (which a second did not); the servers of the other tests have
/// 20 s, never waited for.
const DEADLINE_S: u32 = 10;

/// How long a run or `validate` facing a server that never answers may take: the deadline
/// and the rest of the run, seconds on a loaded machine; one that ignored the deadline
/// would wait for the server until [`KILLED_AFTER`] (or for its 300 s sleep).
const IN_TIME: std::time::Duration = std::time::Duration::from_secs(60);

/// When a run or `validate` of these tests is killed (and the test fails).
const KILLED_AFTER: std::time::Duration = std::time::Duration::from_secs(120);

#[test]
fn a_slow_call_fails_its_step_in_time_and_the_server_is_stopped_with_the_run() {
    let p = project(", \"--sleep\", \"300\"", "shipped");
    p.write(
        "pactum.toml",
        &std::fs::read_to_string(p.path("pactum.toml"))
            .unwrap()
            .replace("timeout_s = 20", &format!("timeout_s = {DEADLINE_S}")),
    );
    let (run, took) = run_bounded(&p);
    assert!(took < IN_TIME, "{took:?}");
    let calls = p.ledger().tool_calls();
    assert_eq!(calls[0]["error"]["code"], "tool_failed", "{calls:#?}");
    assert!(
        calls[0]["error"]["message"].as_str().unwrap().contains("no answer in time"),
        "{calls:#?}"
    );
    assert!(server_gone(&p), "the server outlived the run: {}", run.out);
}

#[test]
fn an_endless_message_is_cut_at_the_cap_and_fails_the_call() {
    let p = project(", \"--flood\"", "shipped");
    let run = p.run(&[]);
    let calls = p.ledger().tool_calls();
    assert_eq!(calls[0]["error"]["code"], "tool_failed", "{}", run.out);
    assert!(
        calls[0]["error"]["message"].as_str().unwrap().contains("over 4194304 bytes"),
        "{calls:#?}"
    );
    assert!(server_gone(&p));
}

#[test]
fn a_server_gets_no_api_key_from_the_environment() {
    let p = project(", \"--env\"", "shipped");
    let mut cmd = p.pactum();
    cmd.env("OPENAI_API_KEY", "sk-secret-of-the-ci").env("SOME_TOKEN", "t");
    let run = p.run_with(cmd, &[]);
    let calls = p.ledger().tool_calls();
    let env: Vec<&str> =
        calls[0]["output"]["env"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(env.contains(&"PATH"), "{env:?}");
    assert!(
        !env.contains(&"OPENAI_API_KEY") && !env.contains(&"SOME_TOKEN"),
        "{env:?}\n{}",
        run.out
    );
}

#[test]
fn listings_are_read_page_by_page() {
    // One tool per page: the second, `track_parcel`, is on page two and still offered.
    let p = project(", \"--page-size\", \"1\", \"--extra\", \"track_parcel\"", "shipped");
    p.edit("fixtures.json", |f| {
        f["responses"][1]["expect_prompt"] = json!(["lookup_order", "track_parcel"]);
    });
    let run = p.run(&[]);
    assert_eq!(run.status(), "converged", "{}", run.out);
}

#[test]
fn servers_start_only_when_a_run_needs_their_tools() {
    // A server that cannot start does not touch an exchange whose pack names no tool.
    let p = project(", \"--die\"", "shipped");
    p.write_json(
        "wo.json",
        &json!({"work_order_id": "WO-X", "kind": "exchange",
        "contract": "PRC-CLASSIFY-001", "input": {"user_input": "hello"},
        "provider": {"fixtures": "fixtures.json"}}),
    );
    p.write_json("fixtures.json", &json!({"responses": [
        {"contract_id": "PRC-CLASSIFY-001", "text": "{\"label\": \"other\", \"confidence\": 0.9}"}]}));
    let run = p.run(&[]);
    assert_eq!(run.status(), "completed", "{}", run.out);
    assert!(!p.path("tools/server.pid").exists(), "the server was started");
    // A kernel run needs every tool: the server's failure is the run's.
    p.write_json("wo.json", &work_order());
    let run = p.run(&[]);
    assert_eq!(run.json["code"], "tool_server_failed", "{}", run.out);
}

// --- validate ----------------------------------------------------------------------------

/// `pactum validate` in the project: its exit status and the `tool_*` findings as
/// (code, message).
fn validate(p: &Project, args: &[&str]) -> (i32, Vec<(String, String)>) {
    let mut cmd = p.pactum();
    cmd.args(["validate", "--format", "json"]).args(args).timeout(KILLED_AFTER);
    let out = p.exec(cmd);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    let findings = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"].as_str().unwrap().starts_with("tool"))
        .map(|d| {
            (d["code"].as_str().unwrap().to_string(), d["message"].as_str().unwrap().to_string())
        })
        .collect();
    (out.code, findings)
}

/// `pactum tools lock --json` in the project: its exit status and its JSON.
fn tools_lock(p: &Project, args: &[&str]) -> (i32, Value) {
    let mut cmd = p.pactum();
    cmd.args(["tools", "lock", "--json"]).args(args);
    let out = p.exec(cmd);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    (out.code, doc)
}

/// A kernel work order in the project's `work_orders/` naming `tools`.
fn work_order_naming(p: &Project, tools: Value) {
    let mut wo = work_order();
    wo["tools"] = tools;
    p.write_json("work_orders/wo.json", &wo);
}

#[test]
fn validate_checks_names_against_the_tool_lock_and_starts_no_server() {
    let p = project("", "shipped");
    work_order_naming(&p, json!(["lookup_order", "lookup_ordr", "calculator"]));
    // `tools lock` asks the server for its tools and records them.
    let (status, doc) = tools_lock(&p, &[]);
    assert_eq!((status, &doc["servers"], &doc["tools"]), (0, &json!(1), &json!(1)), "{doc}");
    assert!(p.path("tools/server.pid").exists(), "the server was asked for its tools");
    assert!(server_gone(&p), "and stopped again");
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path("pactum.tools.lock")).unwrap())
            .unwrap();
    assert_eq!(lock["servers"]["orders"]["tools"][0]["name"], "lookup_order", "{lock:#}");
    assert_eq!(lock["servers"]["orders"]["command"][1], "tools/server.py", "{lock:#}");
    std::fs::remove_file(p.path("tools/server.pid")).unwrap();
    // validate reads the lock: the server never starts, the typo is still found.
    let (status, findings) = validate(&p, &[]);
    assert_eq!(status, 1);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].0, "tool_unknown");
    assert!(
        findings[0].1.contains("`lookup_ordr`")
            && findings[0].1.contains("did you mean lookup_order?"),
        "{findings:?}"
    );
    assert!(!p.path("tools/server.pid").exists(), "validate started the server");
    // The lock still matches what the server lists: `--check` says so and writes nothing.
    let (status, doc) = tools_lock(&p, &["--check"]);
    assert_eq!((status, &doc["written"]), (0, &json!(false)), "{doc}");
}

#[test]
fn a_lock_that_no_longer_fits_the_config_or_the_server_is_stale() {
    let p = project("", "shipped");
    work_order_naming(&p, json!(["lookup_order"]));
    // No lock: the names only the server could offer cannot be checked; said so.
    let (status, findings) = validate(&p, &[]);
    assert_eq!(status, 1);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].0, "tools_lock_stale");
    assert!(findings[0].1.contains("no pactum.tools.lock"), "{findings:?}");
    assert_eq!(tools_lock(&p, &[]).0, 0);
    assert!(validate(&p, &[]).1.is_empty());
    // The server's command changes in pactum.toml: the lock no longer speaks for it.
    let toml = std::fs::read_to_string(p.path("pactum.toml")).unwrap();
    p.write(
        "pactum.toml",
        &toml.replace(r#""tools/server.py""#, r#""tools/server.py", "--page", "1""#),
    );
    let (_, findings) = validate(&p, &[]);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].0, "tools_lock_stale");
    assert!(findings[0].1.contains("reached another way"), "{findings:?}");
    p.write("pactum.toml", &toml);
    // The server lists another tool than the lock records: `run` refuses it, and so does
    // `tools lock --check`.
    p.edit("pactum.tools.lock", |lock| {
        lock["servers"]["orders"]["tools"][0]["description"] = json!("Something else.");
    });
    let run = p.run(&[]);
    assert_eq!(run.json["code"], "tools_lock_stale", "{}", run.out);
    assert!(
        run.json["message"].as_str().unwrap().contains("description or input schema changed"),
        "{}",
        run.out
    );
    let (status, doc) = tools_lock(&p, &["--check"]);
    assert_eq!((status, &doc["code"]), (1, &json!("tools_lock_stale")), "{doc}");
    // A lock that is no lock is a finding on the lock.
    p.write("pactum.tools.lock", "{\"lock_version\": 1,");
    let mut cmd = p.pactum();
    cmd.args(["validate", "--format", "json"]);
    let doc: Value = serde_json::from_str(&p.exec(cmd).stdout).unwrap();
    let stale: Vec<&Value> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "tools_lock_stale")
        .collect();
    assert_eq!(stale.len(), 1, "{doc:#}");
    assert_eq!(stale[0]["file"], "pactum.tools.lock", "{doc:#}");
}

#[test]
fn validate_no_tools_starts_no_server_and_reports_only_what_needs_none() {
    let p = project(", \"--die\"", "shipped");
    work_order_naming(&p, json!(["lookup_order", "lookup_ordr", "memory_reed"]));
    // A server that cannot start cannot be locked: `tools lock` fails, naming it, and
    // validate, with no lock to read, says so (never a silent pass).
    let (status, doc) = tools_lock(&p, &[]);
    assert_eq!((status, &doc["code"]), (1, &json!("tool_server_failed")), "{doc}");
    std::fs::remove_file(p.path("tools/server.pid")).unwrap();
    let (status, findings) = validate(&p, &[]);
    assert_eq!(status, 1);
    assert_eq!(
        findings.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(),
        ["tools_lock_stale"],
        "{findings:?}"
    );
    assert!(!p.path("tools/server.pid").exists(), "validate started the server");
    // With --no-tools the server does not start; any name might be a tool of a server
    // without an `allow` list, so nothing is reported.
    let (_, findings) = validate(&p, &["--no-tools"]);
    assert!(findings.is_empty(), "{findings:?}");
    assert!(!p.path("tools/server.pid").exists(), "--no-tools started the server");
    // With an `allow` list, the names it gives are the server's tools.
    let toml = std::fs::read_to_string(p.path("pactum.toml")).unwrap();
    p.write("pactum.toml", &format!("{toml}allow = [\"lookup_order\"]\n"));
    let (_, findings) = validate(&p, &["--no-tools"]);
    let unknown: Vec<&str> = findings.iter().map(|f| f.1.as_str()).collect();
    assert_eq!(unknown.len(), 2, "{unknown:?}");
    assert!(
        unknown.iter().any(|m| m.contains("`lookup_ordr`"))
            && unknown.iter().any(|m| m.contains("`memory_reed`")),
        "{unknown:?}"
    );
}

#[test]
fn validate_without_servers_checks_names_against_the_builtins() {
    let p = project("", "shipped");
    std::fs::remove_file(p.path("pactum.toml")).unwrap();
    work_order_naming(&p, json!(["calculator", "lookup_order"]));
    let (_, findings) = validate(&p, &[]);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(findings[0].1.contains("`lookup_order`"), "{findings:?}");
}

// --- sections share the run's registry ---------------------------------------------------

/// Registers and activates `doc` at `rel` in the project.
fn register(p: &Project, rel: &str, doc: &Value) {
    use pactum::registry::{EntryKind, lifecycle, store};
    p.write_json(rel, doc);
    let at = lifecycle::Stamp::new("2026-01-01T00:00:00Z", "tester@example.com");
    let registry = p.path("registry.json");
    store::update(&registry, |reg| lifecycle::add(reg, &p.path(rel), &at)).unwrap();
    let id = doc.get("contract_id").or_else(|| doc.get("prompt_pack_id")).unwrap();
    let id = id.as_str().unwrap();
    let version = pactum::id::parse_version(doc["version"].as_str().unwrap()).unwrap();
    let kind = EntryKind::of_id(id).unwrap();
    store::update(&registry, |reg| lifecycle::promote(reg, kind, id, &version, &at)).unwrap();
}

/// A project whose reasoning steps run PRC-NOTES-001, a contract whose task section brings
/// the tools `memory_read` and `lookup_order`; the plan writes a note to memory in a tool
/// step (s1), then reasons (s2) through that contract.
fn notes_project(status: &str) -> Project {
    let p = project("", status);
    register(
        &p,
        "prompt_packs/notes/1.0.0.json",
        &json!({
        "prompt_pack_id": "PRM-NOTES-001", "version": "1.0.0",
        "sections": [{"key": "task", "title": "Task", "tools": ["memory_read", "lookup_order"],
                      "template": "Do this step: {{ step.description }} (for: {{ request }})"}]}),
    );
    register(
        &p,
        "contracts/notes/1.0.0.json",
        &json!({
        "contract_id": "PRC-NOTES-001", "version": "1.0.0", "prompt_pack_id": "PRM-NOTES-001",
        "boundary": {"max_tokens": 256, "temperature": 0},
        "input_schema": {"type": "object", "required": ["request", "step"],
                         "properties": {"request": {"type": "string"}, "step": {"type": "object"},
                                        "goal": {}, "previous_results": {}}}}),
    );
    let mut wo = work_order();
    wo["contracts"] = json!({"reasoning_step": "PRC-NOTES-001@1.0.0"});
    p.write_json("wo.json", &wo);
    let plan = json!({"goal": "Report order A-17 with its carrier.", "steps": [
        {"step_id": "s1", "description": "Note the carrier.", "status": "pending",
         "tool": "memory_write", "arguments": {"key": "notes/carrier", "value": "DHL"}},
        {"step_id": "s2", "description": "Combine the note and the order.", "status": "pending"}]});
    p.write_json("fixtures.json", &json!({"responses": [
        {"contract_id": "PRC-PROFILE-001", "text": "Look an order up."},
        {"contract_id": "PRC-PLAN-001", "text": plan.to_string()},
        {"contract_id": "PRC-NOTES-001", "expect_prompt": ["Combine the note and the order."],
         "tool_calls": [{"name": "memory_read", "arguments": {"key": "notes/carrier"}},
                        {"name": "lookup_order", "arguments": {"order_id": "A-17"}}]},
        {"contract_id": "PRC-NOTES-001",
         "expect_prompt": ["{\"found\":true,\"value\":\"DHL\"}", &format!("\"status\":\"{status}\"")],
         "text": format!("A-17 is {status}, with DHL.")},
        {"contract_id": "PRC-SEMANTIC-001", "text": "Done."},
        {"contract_id": "PRC-CONVERGE-001", "text": "{\"converged\": true, \"reason\": \"done\"}"},
        {"contract_id": "PRC-SYNTH-001", "expect_prompt": [&format!("A-17 is {status}, with DHL.")],
         "text": json!({"answer_text": format!("A-17 is {status}, with DHL."), "metadata": {}}).to_string()}
    ]}));
    p
}

/// Every section-tool call of the ledger's exchange records: (tool, result, is_error).
fn section_calls(p: &Project) -> Vec<(String, String, bool)> {
    p.ledger()
        .exchanges()
        .iter()
        .filter_map(|r| r["disclosures"].as_array())
        .flatten()
        .map(|c| {
            (
                c["tool"].as_str().unwrap().to_string(),
                c["result"].as_str().unwrap_or_default().to_string(),
                c["is_error"] == true,
            )
        })
        .collect()
}

#[test]
fn a_section_tool_reads_the_memory_a_kernel_step_wrote_and_calls_the_servers_tools() {
    for status in ["shipped", "returned"] {
        let p = notes_project(status);
        let run = p.run(&[]);
        assert_eq!(run.status(), "converged", "{}", run.out);
        assert_eq!(run.answer_text(), format!("A-17 is {status}, with DHL."));
        let calls = section_calls(&p);
        assert_eq!(calls[0].0, "memory_read");
        assert!(calls[0].1.contains("\"value\":\"DHL\""), "{calls:?}");
        assert_eq!(calls[1].0, "lookup_order");
        assert!(calls[1].1.contains(status), "{calls:?}");
        // The server answered the section's call: one process served the whole run.
        assert_eq!(calls_received(&p), [json!({"order_id": "A-17"})]);
    }
}

#[test]
fn the_work_orders_allow_list_applies_to_section_tools_too() {
    let p = notes_project("shipped");
    p.edit("wo.json", |wo| wo["tools"] = json!(["memory_write", "memory_read"]));
    let run = p.run(&[]);
    let calls = section_calls(&p);
    assert_eq!(calls[0].0, "memory_read");
    assert!(!calls[0].2, "{calls:?}");
    // `lookup_order` is not allowed: the model sees a tool error, the server is not called.
    assert_eq!(calls[1].0, "lookup_order");
    assert!(calls[1].2, "{calls:?}\n{}", run.out);
    assert!(calls_received(&p).is_empty());
}

// --- streamable HTTP ---------------------------------------------------------------------

/// The test server on streamable HTTP (a loopback port of its own), killed when dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl HttpServer {
    fn start(p: &Project, extra: &[&str]) -> HttpServer {
        let port_file = p.path("tools/port");
        let child = std::process::Command::new("python3")
            .arg("tools/server.py")
            .arg("--http")
            .arg(&port_file)
            .args(extra)
            .current_dir(p.root())
            .spawn()
            .unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !port_file.exists() {
            assert!(std::time::Instant::now() < until, "the HTTP server did not start");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let port = std::fs::read_to_string(&port_file).unwrap();
        HttpServer { child, url: format!("http://127.0.0.1:{}/mcp", port.trim()) }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_kernel_step_calls_a_tool_of_a_streamable_http_server_answering_json_or_events() {
    for (status, extra) in [("shipped", &[][..]), ("delayed", &["--sse"][..])] {
        let p = project("", status);
        let server = HttpServer::start(&p, extra);
        p.write(
            "pactum.toml",
            &format!("[tools.orders]\nurl = \"{}\"\ntimeout_s = 20\n", server.url),
        );
        let run = p.run(&[]);
        assert_eq!(run.status(), "converged", "{extra:?}: {}", run.out);
        assert_eq!(run.answer_text(), format!("Order A-17 is {status}."));
        assert_eq!(calls_received(&p), [json!({"order_id": "A-17"})]);
    }
}

#[test]
fn an_http_server_that_is_not_there_is_a_clear_failure() {
    let p = project("", "shipped");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    p.write(
        "pactum.toml",
        &format!("[tools.orders]\nurl = \"http://127.0.0.1:{port}/mcp\"\ntimeout_s = 2\n"),
    );
    let run = p.run(&[]);
    assert_eq!(run.json["code"], "tool_server_failed", "{}", run.out);
    assert!(
        run.json["message"].as_str().unwrap().contains("tool server `orders`: initialize"),
        "{}",
        run.out
    );
    // The answer says why: the server, not a scripted reply that no longer fits a run that
    // never started (no model is asked to sum it up).
    let answer = run.answer_text();
    assert!(answer.contains("the run could not start: tool_server_failed"), "{answer}");
    assert!(!answer.contains("script_prompt_mismatch"), "{answer}");
    assert!(!p.ledger().exchanges().iter().any(|e| e["contract_id"] == "PRC-SYNTH-001"));
}

/// Messages about a scripted fixture name it relative to the project: no absolute path of
/// the machine the run was on reaches the answer or the ledger.
#[test]
fn a_scripted_reply_that_does_not_fit_names_its_fixture_relative_to_the_project() {
    let p = project("", "lost");
    p.write_json("fixtures.json", &fixtures("shipped"));
    let run = p.run(&[]);
    let root = p.root().display().to_string();
    let ledger = std::fs::read_to_string(p.path("ledger.jsonl")).unwrap();
    assert!(ledger.contains("script_prompt_mismatch"), "{ledger}");
    assert!(ledger.contains("fixtures.json response"), "{ledger}");
    assert!(!ledger.contains(&root) && !run.answer_text().contains(&root), "{}", run.out);
}

// --- interoperability with the official SDK (ignored: .ci/run installs the SDK) ----------

/// The Python of the venv `.ci/run` installs the MCP SDK into (`PACTUM_CI_TOOLS/venv`);
/// the test fails, never skips, when it is missing.
fn sdk_python() -> std::path::PathBuf {
    let dir = std::env::var_os("PACTUM_CI_TOOLS").map(std::path::PathBuf::from).unwrap_or_else(|| {
        panic!("this test needs the MCP Python SDK, which .ci/run installs into target/ci-tools/venv and names in PACTUM_CI_TOOLS; run it there, or without --ignored")
    });
    let python = dir.join("venv/bin/python");
    let ok = std::process::Command::new(&python)
        .args(["-c", "import mcp.server"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{} cannot import the MCP SDK (pip install 'mcp>=1.10,<3')", python.display());
    python
}

#[test]
#[ignore = "needs the MCP Python SDK (.ci/run installs it and sets PACTUM_CI_TOOLS)"]
fn a_server_built_with_the_official_python_sdk_serves_runs_over_stdio_and_streamable_http() {
    let python = sdk_python();
    let sdk_server = repo().join("tests/fixtures/mcp/sdk_server.py");
    for (transport, status) in [("stdio", "shipped"), ("http", "delayed")] {
        let p = project("", status);
        p.write("tools/sdk_server.py", &std::fs::read_to_string(&sdk_server).unwrap());
        let mut server = None;
        let config = if transport == "stdio" {
            format!(
                "[tools.orders]\ncommand = [{:?}, \"tools/sdk_server.py\"]\ntimeout_s = 20\n",
                python.display().to_string()
            )
        } else {
            let port =
                std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let child = std::process::Command::new(&python)
                .args(["tools/sdk_server.py", "--http", &port.to_string()])
                .current_dir(p.root())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            server = Some(KillOnDrop(child));
            let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(std::time::Instant::now() < until, "the SDK's HTTP server did not start");
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            format!("[tools.orders]\nurl = \"http://127.0.0.1:{port}/mcp\"\ntimeout_s = 20\n")
        };
        p.write("pactum.toml", &config);
        let run = p.run(&[]);
        assert_eq!(run.status(), "converged", "{transport}: {}", run.out);
        assert_eq!(run.answer_text(), format!("Order A-17 is {status}."), "{transport}");
        let calls = p.ledger().tool_calls();
        assert_eq!(calls[0]["tool"], "lookup_order", "{transport}");
        // `tools lock` lists the SDK server's tools, and validate checks names against it.
        work_order_naming(&p, json!(["lookup_order", "lookup_ordr"]));
        let (status, doc) = tools_lock(&p, &[]);
        assert_eq!((status, &doc["tools"]), (0, &json!(1)), "{transport}: {doc}");
        let (_, findings) = validate(&p, &[]);
        assert_eq!(findings.len(), 1, "{transport}: {findings:?}");
        assert!(findings[0].1.contains("`lookup_ordr`"), "{transport}: {findings:?}");
        drop(server);
    }
}

/// A child process killed and reaped when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// --- the example, as the README runs it --------------------------------------------------

#[test]
fn the_readme_example_looks_an_order_up_through_its_server_and_depends_on_its_answer() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme.split("## Tools from MCP servers").nth(1).unwrap();
    let section = section.split("\n## ").next().unwrap();
    let commands = section.split("```sh\n").nth(1).unwrap().split("\n```").next().unwrap();
    let expected = section.split("```text\n").nth(1).unwrap().split("\n```").next().unwrap();
    assert!(
        commands.starts_with("cp -r examples/mcp /tmp/orders && cd /tmp/orders\n"),
        "{commands}"
    );
    let dir = tempfile::tempdir().unwrap();
    crate::common::copy_tree(&repo().join("examples/mcp"), dir.path());
    let run = |args: &[&str]| {
        let out = crate::common::pactum_in(dir.path()).args(args).output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap(), text)
    };
    // Every command after the copy, as written.
    let mut printed = String::new();
    for line in commands.lines().skip(1) {
        let args: Vec<&str> = line.strip_prefix("pactum ").unwrap().split_whitespace().collect();
        let (status, text) = run(&args);
        assert_eq!(status, 0, "{line}:\n{text}");
        printed = text;
    }
    for line in expected.lines() {
        assert!(printed.contains(line), "the README says `{line}`; the run printed:\n{printed}");
    }
    // The answer follows from the server: another carrier, and the script no longer fits.
    let server = dir.path().join("tools/orders.py");
    let code = std::fs::read_to_string(&server).unwrap();
    std::fs::write(&server, code.replace("\"carrier\": \"DHL\"", "\"carrier\": \"UPS\"")).unwrap();
    let (_, text) = run(&["run", "work_orders/WO-ORDER-LOOKUP-001.json", "--trust-config"]);
    assert!(
        text.contains("script_prompt_mismatch")
            && !text.contains("Answer: Order A-1042 has shipped with DHL"),
        "{text}"
    );
}

#[test]
fn render_shows_a_sections_server_tool_with_its_input_schema() {
    let p = notes_project("shipped");
    p.write_json(
        "input.json",
        &json!({"request": "Where is A-17?", "step": {"description": "Look."}}),
    );
    let mut cmd = p.pactum();
    cmd.args(["render", "PRC-NOTES-001", "--input", "input.json", "--json"]);
    let out = p.exec(cmd);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    let names: Vec<&str> =
        doc["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["memory_read", "lookup_order"], "{doc:#}");
    assert_eq!(doc["tools"][1]["input_schema"]["required"], json!(["order_id"]));
}

// --- hostile servers (tests/fixtures/mcp/hostile.py) -------------------------------------

/// A kernel project whose server is `hostile.py` misbehaving as `args` say, with a timeout
/// of [`DEADLINE_S`].
fn hostile_project(args: &[&str]) -> Project {
    let p = project("", "shipped");
    let server = repo().join("tests/fixtures/mcp/hostile.py");
    p.write("tools/hostile.py", &std::fs::read_to_string(server).unwrap());
    // JSON string escapes (`\u001b`) are TOML's too.
    let args: String = args.iter().map(|a| format!(", {}", json!(a))).collect();
    p.write(
        "pactum.toml",
        &format!(
            "[tools.orders]\ncommand = [\"python3\", \"tools/hostile.py\"{args}]\ntimeout_s = {DEADLINE_S}\n"
        ),
    );
    p
}

/// `pactum run` of the project, killed (and the test failed) after [`KILLED_AFTER`]; with
/// how long it took.
fn run_bounded(p: &Project) -> (crate::kernel_harness::Run, std::time::Duration) {
    let mut cmd = p.pactum();
    cmd.timeout(KILLED_AFTER);
    let started = std::time::Instant::now();
    let run = p.run_with(cmd, &[]);
    (run, started.elapsed())
}

/// The message of the run's first tool call, which must have failed.
fn failed_call(p: &Project, run: &crate::kernel_harness::Run) -> String {
    let calls = p.ledger().tool_calls();
    assert_eq!(
        calls.first().map(|c| &c["error"]["code"]),
        Some(&json!("tool_failed")),
        "{calls:#?}\n{}",
        run.out
    );
    calls[0]["error"]["message"].as_str().unwrap().to_string()
}

#[test]
fn a_server_that_never_answers_initialize_fails_run_and_tools_lock_in_time() {
    let p = hostile_project(&["silent"]);
    let (run, took) = run_bounded(&p);
    assert_eq!(run.json["code"], "tool_server_failed", "{}", run.out);
    assert!(
        run.json["message"].as_str().unwrap().contains("initialize: no answer in time"),
        "{}",
        run.out
    );
    assert!(took < IN_TIME, "{took:?}");
    assert!(server_gone(&p));
    let started = std::time::Instant::now();
    let (status, doc) = tools_lock(&p, &[]);
    assert_eq!((status, &doc["code"]), (1, &json!("tool_server_failed")), "{doc}");
    assert!(started.elapsed() < IN_TIME, "{:?}", started.elapsed());
}

#[test]
fn a_server_sending_notifications_without_end_fails_the_call_at_its_deadline() {
    let p = hostile_project(&["chatter"]);
    let (run, took) = run_bounded(&p);
    assert!(failed_call(&p, &run).contains("no answer in time"), "{}", run.out);
    assert!(took < IN_TIME, "{took:?}");
    assert!(server_gone(&p));
}

#[test]
fn a_server_that_stops_reading_while_it_pings_fails_the_call_at_its_deadline() {
    let p = hostile_project(&["deaf"]);
    let (run, took) = run_bounded(&p);
    let message = failed_call(&p, &run);
    assert!(message.contains("in time"), "{message}\n{}", run.out);
    assert!(took < IN_TIME, "{took:?}");
    assert!(server_gone(&p));
}

#[test]
fn a_listing_whose_definitions_are_too_big_fails_the_server_in_run_and_tools_lock() {
    let p = hostile_project(&["bulky"]);
    let (run, _) = run_bounded(&p);
    assert_eq!(run.json["code"], "tool_server_failed", "{}", run.out);
    assert!(
        run.json["message"]
            .as_str()
            .unwrap_or("")
            .contains("tool definitions take more than 1048576 bytes"),
        "{}",
        run.out
    );
    let (status, doc) = tools_lock(&p, &[]);
    assert_eq!((status, &doc["code"]), (1, &json!("tool_server_failed")), "{doc}");
}

#[test]
fn only_the_response_with_the_requests_own_id_is_taken() {
    let p = hostile_project(&["odd-ids"]);
    let (run, _) = run_bounded(&p);
    assert_eq!(run.status(), "converged", "{}", run.out);
    let calls = p.ledger().tool_calls();
    assert_eq!(calls[0]["output"]["status"], "shipped", "{calls:#?}");
}

#[test]
fn a_grandchild_holding_the_servers_output_is_stopped_with_the_run() {
    let p = hostile_project(&["grandchild"]);
    let (run, took) = run_bounded(&p);
    assert_eq!(run.status(), "converged", "{}", run.out);
    assert!(took < IN_TIME, "{took:?}");
    assert!(server_gone(&p));
    // Killed: gone, or a zombie left to init (the grandchild is not pactum's to reap). A
    // SIGKILL sent as pactum ended may still be pending until the process is next
    // scheduled (`ShdPnd` holds it), so the state is read again for a moment.
    let pid = std::fs::read_to_string(p.path("tools/grandchild.pid")).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let (status, gone) = loop {
        let status = std::fs::read_to_string(format!("/proc/{}/status", pid.trim()));
        let gone = status.as_ref().map_or(true, |s| s.contains("State:\tZ"));
        if gone || std::time::Instant::now() > deadline {
            break (status, gone);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    if !gone {
        let _ = std::process::Command::new("kill").arg(pid.trim()).status();
    }
    assert!(gone, "the server's grandchild outlived the run: {status:?}");
}

#[test]
fn tool_names_that_escape_the_terminal_or_differ_only_in_case_are_refused() {
    for (name, code) in [
        ("red\u{1b}[31m", "tool_server_failed"),
        ("memory_write\u{200b}", "tool_server_failed"),
        ("..", "tool_server_failed"),
        ("Memory_Write", "tool_name_taken"),
        ("LOOKUP_ORDER", "tool_name_taken"),
    ] {
        let p = hostile_project(&["names", name]);
        let (run, _) = run_bounded(&p);
        assert_eq!(run.json["code"], code, "{name:?}: {}", run.out);
        assert!(
            !run.out.stdout.contains('\u{1b}') && !run.out.stderr.contains('\u{1b}'),
            "{}",
            run.out
        );
        // A name no listing may hold fails the lock; a name that collides is recorded (it
        // is what the server lists) and validate refuses it as the run does.
        let (status, doc) = tools_lock(&p, &[]);
        if code == "tool_server_failed" {
            assert_eq!((status, &doc["code"]), (1, &json!(code)), "{name:?}: {doc}");
        } else {
            assert_eq!(status, 0, "{name:?}: {doc}");
            work_order_naming(&p, json!(["lookup_order"]));
            let (_, findings) = validate(&p, &[]);
            assert_eq!(
                findings.first().map(|f| f.0.as_str()),
                Some(code),
                "{name:?}: {findings:?}"
            );
        }
    }
}

/// A server's `allow` list decides what a run registers: a tool the server offers but the
/// list leaves out is neither shown to the model nor callable, even when a plan names it.
#[test]
fn a_tool_the_servers_allow_list_leaves_out_is_not_registered_for_the_run() {
    let p = project(", \"--extra\", \"wipe_disk\"", "shipped");
    let toml = std::fs::read_to_string(p.path("pactum.toml")).unwrap();
    p.write("pactum.toml", &format!("{toml}allow = [\"lookup_order\"]\n"));
    let mut f = fixtures("shipped");
    f["responses"][1]["text"] = Value::from(
        json!({"goal": "Wipe.", "steps": [
        {"step_id": "s1", "description": "Wipe the disk.", "status": "pending",
         "tool": "wipe_disk", "arguments": {"order_id": "A-17"}}]})
        .to_string(),
    );
    p.write_json("fixtures.json", &f);
    let run = p.run(&[]);
    assert!(calls_received(&p).is_empty(), "the unlisted tool was called: {}", run.out);
    let plans: Vec<String> = p
        .ledger()
        .exchanges()
        .iter()
        .filter(|e| e["contract_id"] == "PRC-PLAN-001")
        .map(|e| e.to_string())
        .collect();
    assert!(!plans.is_empty(), "{}", run.out);
    assert!(plans.iter().all(|e| !e.contains("wipe_disk\\\",\\\"description")), "{plans:#?}");
    assert!(run.out.stdout.contains("wipe_disk"), "{}", run.out);
}

/// A tool's output is capped at 256 KiB: a 300 KiB answer fails the call, one under the cap
/// is taken whole.
#[test]
fn a_tool_output_over_256_kib_fails_the_call_and_one_under_it_is_taken() {
    for (kib, taken) in [(300, false), (200, true)] {
        let p = project("", "shipped");
        let note = "n".repeat(kib * 1024);
        p.write_json(
            "tools/orders.json",
            &json!({"A-17": {"status": "shipped", "carrier": "DHL", "note": note}}),
        );
        let run = p.run(&[]);
        let calls = p.ledger().tool_calls();
        assert_eq!(calls_received(&p).len(), 1, "{}", run.out);
        if taken {
            assert!(calls[0]["error"].is_null(), "{calls:#?}");
            assert_eq!(calls[0]["output"]["note"].as_str().map(str::len), Some(kib * 1024));
        } else {
            assert_eq!(calls[0]["error"]["code"], "tool_failed", "{}", run.out);
            let message = calls[0]["error"]["message"].as_str().unwrap();
            assert!(message.contains("at most 262144 bytes"), "{message}");
        }
    }
}

#[test]
fn a_server_answering_the_2024_11_05_revision_serves_the_run_and_an_unknown_one_is_refused() {
    // Servers built on the npm SDK 1.0.x answer `2024-11-05`: same initialize, tools/list
    // and tools/call shapes, so the run uses them.
    let p = project(", \"--version\", \"2024-11-05\"", "shipped");
    let run = p.run(&[]);
    assert_eq!(run.status(), "converged", "{}", run.out);
    assert_eq!(run.answer_text(), "Order A-17 is shipped.");
    let p = project(", \"--version\", \"2023-01-01\"", "shipped");
    let run = p.run(&[]);
    assert_eq!(run.json["code"], "tool_server_failed", "{}", run.out);
    let message = run.json["message"].as_str().unwrap();
    assert!(message.contains("`2023-01-01`") && message.contains("2024-11-05"), "{message}");
}

/// The project of [`project`] whose server also lists `echo` and `read_file` (as the MCP
/// reference servers do), with `naming` in its `[tools.orders]` table.
fn colliding_project(naming: &str) -> Project {
    let p = project(", \"--extra\", \"echo\", \"--extra\", \"read_file\"", "shipped");
    p.write(
        "pactum.toml",
        &format!(
            "[tools.orders]\ncommand = [\"python3\", \"tools/server.py\", \"--extra\", \"echo\", \"--extra\", \"read_file\"]\ntimeout_s = 20\n{naming}"
        ),
    );
    p
}

#[test]
fn every_tool_name_collision_is_reported_by_run_and_validate_until_prefix_or_rename_resolves_it() {
    let p = colliding_project("");
    let run = p.run(&[]);
    assert_eq!(run.json["code"], "tool_name_taken", "{}", run.out);
    let message = run.json["message"].as_str().unwrap();
    assert!(message.contains("tool `echo` is offered by the built-in tools"), "{message}");
    assert!(message.contains("`read_file` (by pactum's disclosure tools"), "{message}");
    assert!(message.contains("`prefix`"), "{message}");
    let (status, _) = tools_lock(&p, &[]);
    assert_eq!(status, 0);
    let (_, findings) = validate(&p, &[]);
    let taken: Vec<&String> =
        findings.iter().filter(|(c, _)| c == "tool_name_taken").map(|(_, m)| m).collect();
    assert_eq!(taken.len(), 2, "{findings:?}");
    assert!(taken[0].contains("`echo`") && taken[1].contains("`read_file`"), "{taken:?}");

    // Renamed, the server's tools take names of their own: the run uses the server's
    // `lookup_order` as before, and validate has nothing to say about tool names.
    let p = colliding_project("rename = { echo = \"orders_echo\", read_file = \"orders_read\" }\n");
    let run = p.run(&[]);
    assert_eq!(run.status(), "converged", "{}", run.out);
    assert_eq!(run.answer_text(), "Order A-17 is shipped.");
    assert_eq!(tools_lock(&p, &[]).0, 0);
    work_order_naming(&p, json!(["lookup_order", "orders_echo", "echo"]));
    let (_, findings) = validate(&p, &[]);
    assert!(findings.is_empty(), "{findings:?}");

    // A prefix renames every tool: the plan must then call `o_lookup_order`.
    let p = colliding_project("prefix = \"o_\"\n");
    assert_eq!(tools_lock(&p, &[]).0, 0);
    work_order_naming(&p, json!(["o_lookup_order", "o_echo", "o_read_file"]));
    let (_, findings) = validate(&p, &[]);
    assert!(findings.is_empty(), "{findings:?}");
    work_order_naming(&p, json!(["lookup_order"]));
    let (_, findings) = validate(&p, &[]);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].0, "tool_unknown", "{findings:?}");

    // A rename of a tool the server does not list is a mistake, not a no-op.
    let p = colliding_project("rename = { ecko = \"orders_echo\" }\n");
    let run = p.run(&[]);
    assert_eq!(run.json["code"], "tool_unknown", "{}", run.out);
}

#[test]
fn a_timed_out_call_is_cancelled_and_its_failure_does_not_quote_the_start_up_banner() {
    let p = project(
        ", \"--sleep\", \"300\", \"--banner\", \"orders server 1.0 listening on stdio\"",
        "shipped",
    );
    p.write(
        "pactum.toml",
        &std::fs::read_to_string(p.path("pactum.toml"))
            .unwrap()
            .replace("timeout_s = 20", &format!("timeout_s = {DEADLINE_S}")),
    );
    let (run, took) = run_bounded(&p);
    assert!(took < IN_TIME, "{took:?}");
    let message = failed_call(&p, &run);
    assert!(message.contains("no answer in time"), "{message}");
    assert!(!message.contains("listening"), "{message}");
    // The server was told: `notifications/cancelled` names the request that ran out.
    let said = std::fs::read_to_string(p.path("tools/notifications.log")).unwrap();
    let cancelled: Vec<Value> = said
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|n| n["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{said}");
    assert!(cancelled[0]["params"]["requestId"].is_u64(), "{said}");
    assert!(server_gone(&p));
}

#[test]
fn a_server_that_cannot_start_is_what_the_answer_blames_not_the_script_written_for_its_tools() {
    let p = project(", \"--die\"", "shipped");
    // The text a user reads: the answer names the server's failure first.
    let mut cmd = p.pactum();
    cmd.args(["run", "wo.json", "--ledger", "ledger.jsonl"]);
    let out = p.exec(cmd);
    assert_eq!(out.code, 1, "{out}");
    let answer = out.stdout.lines().find(|l| l.starts_with("Answer: ")).unwrap_or_default();
    assert!(
        answer.starts_with(
            "Answer: No synthesized answer is available (the run could not start: tool_server_failed: tool server `orders`"
        ),
        "{out}"
    );
    assert!(answer.contains("cannot open the order database"), "{out}");
    // And so do the JSON answer's reason and the run's first error.
    let run = p.run(&[]);
    assert_eq!(run.json["code"], "tool_server_failed", "{}", run.out);
    let reason = run.json["final_answer"]["metadata"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("the run could not start: tool_server_failed: "), "{reason}");
    // No model was asked to sum up a run that never started.
    assert!(!reason.contains("synthesis_failed"), "{reason}");
    assert!(!p.ledger().exchanges().iter().any(|e| e["contract_id"] == "PRC-SYNTH-001"));
}
