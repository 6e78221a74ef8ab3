//! One reproducer per error code (SPEC §11): each `reproduces_<code>` test triggers its code
//! the way a user would meet it — through the library API or the `pactum` binary, on a
//! small project built in a temporary folder — and asserts the code. It then runs the
//! command the code's example in `docs/error-codes.md` names, in that project, and checks
//! that the example is what the binary prints (`doc_example`; the format is described at
//! the top of the doc). The meta test at the end keeps this file and the doc in step with
//! `Code::ALL`.
//!
//! No network: the HTTP providers talk to the mock server in `support/mock_http.rs`.

use crate::common;

use crate::mock_http;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mock_http::{MockReply, MockServer, RefusedPort};
use pactum::authority::Permit;
use pactum::diagnostic::{Diagnostic, Report};
use pactum::executor::memory::Memory;
use pactum::executor::tools::ToolRegistry;
use pactum::gateway::http::RetryPolicy;
use pactum::gateway::openai::{OpenAiConfig, OpenAiProvider};
use pactum::gateway::replay::{Mode, ReplayProvider};
use pactum::gateway::scripted::ScriptedProvider;
use pactum::gateway::{Boundary, Message, PromptRequest, Provider};
use pactum::id::Pin;
use pactum::pack::PromptPack;
use pactum::project::{Project, Resolved};
use pactum::registry::lifecycle::{self, Added, Promoted};
use pactum::registry::{EntryKind, Registry, store};
use pactum::resolve::ResolveOptions;
use pactum::validate::{NoProgress, ValidateOptions, validate};
use pactum::{Code, Error, Severity};
use serde_json::{Value, json};
use tempfile::TempDir;

// --- Helpers ------------------------------------------------------------------------------

/// The time every registry write in these tests is stamped with.
const AT_TIME: &str = "2026-01-01T00:00:00Z";

fn at() -> pactum::registry::lifecycle::Stamp {
    pactum::registry::lifecycle::Stamp::new(AT_TIME, "tester@example.com")
}

/// PRC-T-001@1.0.0: classifies `text`, bound to PRM-T-001, answers `{"label": ...}`.
fn contract() -> Value {
    json!({
        "contract_id": "PRC-T-001",
        "version": "1.0.0",
        "prompt_pack_id": "PRM-T-001",
        "boundary": {"max_tokens": 64, "temperature": 0},
        "input_schema": {
            "type": "object",
            "required": ["text"],
            "properties": {"text": {"type": "string"}},
        },
        "output_schema": {
            "type": "object",
            "required": ["label"],
            "properties": {"label": {"enum": ["greeting", "other"]}},
        },
    })
}

/// PRM-T-001@1.0.0: one template that uses `text`.
fn pack() -> Value {
    json!({"prompt_pack_id": "PRM-T-001", "version": "1.0.0", "template": "Classify: {{ text }}"})
}

/// Where a contract or pack file lives in a test project: `contracts/t/1.0.0.json`.
fn file_of(doc: &Value) -> String {
    let folder = if doc.get("contract_id").is_some() { "contracts" } else { "prompt_packs" };
    format!("{folder}/t/{}.json", doc["version"].as_str().unwrap())
}

fn write_json(root: &Path, rel: &str, value: &Value) -> PathBuf {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path
}

fn registry_path(root: &Path) -> PathBuf {
    root.join("registry.json")
}

/// A project with an empty registry.json.
fn empty_project() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    store::update(&registry_path(dir.path()), |_| Ok(())).unwrap();
    dir
}

/// Writes `doc` to its file and registers it as a draft (`pactum registry add`).
fn add(root: &Path, doc: &Value) -> Result<Added, Error> {
    let file = write_json(root, &file_of(doc), doc);
    store::update(&registry_path(root), |reg| lifecycle::add(reg, &file, &at()))
}

/// `pactum registry promote ID@VERSION`.
fn promote(root: &Path, id: &str, version: &str) -> Result<Promoted, Error> {
    let kind = EntryKind::of_id(id).unwrap();
    let version = pactum::id::parse_version(version).unwrap();
    store::update(&registry_path(root), |reg| lifecycle::promote(reg, kind, id, &version, &at()))
}

/// `pactum registry deprecate ID@VERSION --successor SUCCESSOR`.
fn deprecate(root: &Path, id: &str, version: &str, successor: &str) -> Result<(), Error> {
    let kind = EntryKind::of_id(id).unwrap();
    let (version, successor) = (
        pactum::id::parse_version(version).unwrap(),
        pactum::id::parse_version(successor).unwrap(),
    );
    store::update(&registry_path(root), |reg| {
        lifecycle::deprecate(reg, kind, id, &version, &successor, &at()).map(drop)
    })
}

/// A project where `contract` and `pack` are registered and active.
fn project_with(contract: Value, pack: Value) -> TempDir {
    let dir = empty_project();
    let root = dir.path();
    add(root, &pack).unwrap();
    add(root, &contract).unwrap();
    promote(root, pack["prompt_pack_id"].as_str().unwrap(), pack["version"].as_str().unwrap())
        .unwrap();
    promote(root, contract["contract_id"].as_str().unwrap(), contract["version"].as_str().unwrap())
        .unwrap();
    dir
}

/// The standard project: PRC-T-001@1.0.0 and PRM-T-001@1.0.0, both active.
fn classify_project() -> TempDir {
    project_with(contract(), pack())
}

/// Edits registry.json by hand (what a careless merge or a tamperer does).
fn edit_registry(root: &Path, edit: impl FnOnce(&mut Value)) {
    let path = registry_path(root);
    let mut value: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut value);
    fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
}

/// What `pactum resolve PIN` does in the library.
fn resolve(root: &Path, pin: &str, allow_draft: bool) -> Result<Resolved, Error> {
    let project = Project::open(&registry_path(root))?;
    project.resolve(&Pin::parse(pin)?, ResolveOptions { allow_draft, route: None })
}

/// The error of a call that must fail.
fn err<T: std::fmt::Debug>(result: Result<T, Error>) -> Error {
    match result {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(e) => e,
    }
}

/// Asserts an error's code and returns its message.
fn assert_code(error: &Error, code: Code) -> String {
    assert_eq!(error.code(), code, "{error}");
    error.to_string()
}

/// `pactum validate ROOT` in the library.
fn validate_tree(root: &Path) -> Report {
    validate(root, &ValidateOptions::default(), &NoProgress).unwrap()
}

/// The first finding with `code`; fails listing every finding when there is none.
fn finding(report: &Report, code: Code) -> Diagnostic {
    match report.diagnostics.iter().find(|d| d.code == code) {
        Some(d) => d.clone(),
        None => panic!("no {code} finding in {:#?}", report.diagnostics),
    }
}

/// The `pactum` binary, run in `dir`, with no provider settings from the environment.
fn pactum(dir: &Path) -> assert_cmd::Command {
    common::pactum_in(dir)
}

/// Runs a command that prints one JSON document; returns it with the exit status.
fn json_of(cmd: &mut assert_cmd::Command) -> (Value, i32) {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("stdout is not one JSON document ({e}):\n{stdout}\nstderr:\n{stderr}")
    });
    (value, out.status.code().unwrap_or(-1))
}

/// `pactum run WO --json` on a work order written into `root/work_orders/`, answered by
/// scripted `responses` (the run is offline: no provider is configured).
fn run_json(root: &Path, work_order: Value, responses: Value) -> (Value, i32) {
    write_json(root, "work_orders/fixtures.json", &json!({"responses": responses}));
    let mut wo = work_order;
    wo["provider"] = json!({"fixtures": "fixtures.json"});
    let path = write_json(root, "work_orders/wo.json", &wo);
    let (doc, status) = json_of(pactum(root).arg("run").arg(path).arg("--json"));
    (common::single_result(doc), status)
}

/// The codes of a run result's `errors`.
fn error_codes(result: &Value) -> Vec<&str> {
    result["errors"].as_array().unwrap().iter().filter_map(|e| e["code"].as_str()).collect()
}

/// A project holding a copy of the shipped kernel contracts and packs.
fn kernel_project() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for folder in ["contracts", "prompt_packs"] {
        common::copy_tree(&repo.join(folder), &dir.path().join(folder));
    }
    fs::copy(repo.join("registry.json"), registry_path(dir.path())).unwrap();
    dir
}

/// A kernel work order on a sum, with `constraints`.
fn kernel_work_order(constraints: Value) -> Value {
    json!({"work_order_id": "WO-SUM-001", "kind": "kernel", "request": "sum 5 and 10",
           "tools": ["calculator"], "constraints": constraints})
}

/// A prompt request as the executor builds it for PRC-T-001.
fn request() -> PromptRequest {
    PromptRequest {
        contract_id: "PRC-T-001".to_string(),
        contract_version: "1.0.0".to_string(),
        prompt_pack_id: "PRM-T-001".to_string(),
        prompt_pack_version: "1.0.0".to_string(),
        boundary: Boundary {
            max_tokens: 64,
            temperature: 0.0,
            provider_id: None,
            structured_output: None,
        },
        input_schema: None,
        output_schema: None,
        template_variables: json!({"text": "hello"}),
        messages: vec![Message::user("Classify: hello")],
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

/// An OpenAI-compatible provider at `url` that tries once and waits at most `timeout`.
fn openai(url: &str, timeout: Duration) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig {
        base_url: Permit::application(format!("{url}/v1")),
        model: "gpt-test".to_string(),
        timeout,
        retry: RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
            max_retry_after: Duration::from_millis(1),
        },
        ..OpenAiConfig::default()
    })
}

/// The error an OpenAI-compatible server at `url` makes a call fail with.
fn openai_error(reply: MockReply) -> Error {
    let server = MockServer::start(vec![reply]);
    err(openai(&server.url(), Duration::from_secs(5)).complete(&request()))
}

/// The standard project whose pactum.toml makes `openai` an OpenAI-compatible provider at
/// `url` that tries once (`defaults` and `provider` add lines to those tables), with an
/// exchange work order `work_orders/wo.json` that uses it.
fn openai_project(url: &str, defaults: &str, provider: &str) -> TempDir {
    let dir = classify_project();
    let toml = format!(
        "[defaults]\nprovider = \"openai\"\n{defaults}\n\n[providers.openai]\nkind = \"openai\"\n\
         base_url = \"{url}/v1\"\n{provider}\n\n[retry]\nattempts = 1\nbase_delay_ms = 1\n\
         max_delay_ms = 1\nmax_retry_after_s = 0\n"
    );
    fs::write(dir.path().join("pactum.toml"), toml).unwrap();
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}});
    write_json(dir.path(), "work_orders/wo.json", &wo);
    dir
}

/// `pactum run work_orders/wo.json` against a server giving `reply`: the doc example of
/// `code` (the model is configured unless `model` is false).
fn openai_doc_example(reply: MockReply, defaults: &str, model: bool, code: Code) {
    let server = MockServer::start(vec![reply]);
    let dir =
        openai_project(&server.url(), defaults, if model { "model = \"gpt-test\"" } else { "" });
    doc_example(dir.path(), code, 1);
}

/// A pack built in memory (no file), for rendering.
fn pack_in_memory(template: &str) -> PromptPack {
    let value = json!({"prompt_pack_id": "PRM-T-001", "version": "1.0.0", "template": template});
    PromptPack::from_value(&value, "0", Path::new("prompt_packs/t/1.0.0.json")).unwrap()
}

fn render(template: &str, input: Value) -> Result<Vec<Message>, Error> {
    pactum::render::render(&pack_in_memory(template), &input, true)
}

// --- The examples of docs/error-codes.md ---------------------------------------------------

/// The `**Example:**` of a code's section in docs/error-codes.md: what it names (a `pactum`
/// command, or `library: ...`) and the lines of the ```text block after it. The format is
/// described at the top of the doc; [`every_code_has_a_reproducer_and_a_doc_section`]
/// checks that every section has one.
fn doc_example_of_section(code: Code) -> Result<(String, Vec<String>), String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/error-codes.md");
    let docs = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let heading = format!("\n## {code}\n");
    let start = docs.find(&heading).ok_or(format!("no `## {code}` section"))? + heading.len();
    let section = &docs[start..docs[start..].find("\n## ").map_or(docs.len(), |i| start + i)];
    let mut lines = section.lines();
    let named = lines
        .by_ref()
        .find_map(|l| l.strip_prefix("**Example:**"))
        .ok_or(format!("## {code}: no `**Example:**` line"))?
        .trim()
        .to_string();
    let named = match named.strip_prefix('`').and_then(|n| n.strip_suffix('`')) {
        Some(command) if command.starts_with("pactum ") => command.to_string(),
        _ if named.starts_with("library: ") => named,
        _ => {
            return Err(format!(
                "## {code}: `**Example:**` must name a command (`pactum ...` in backticks) or \
                 `library: ...`, not {named:?}"
            ));
        }
    };
    if lines.by_ref().find(|l| !l.trim().is_empty()) != Some("```text") {
        return Err(format!("## {code}: the example line must be followed by a ```text block"));
    }
    let example: Vec<String> = lines.take_while(|l| *l != "```").map(str::to_string).collect();
    if example.is_empty() {
        return Err(format!("## {code}: the example block is empty"));
    }
    Ok((named, example))
}

/// Whether `line` matches `pattern`, where `…` stands for any run of characters.
fn matches_line(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split('…').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return pattern == line;
    }
    let Some(mut rest) = line.strip_prefix(first) else { return false };
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Whether `example` is a run of consecutive lines of `output` (with `…` wildcards).
fn is_excerpt(example: &[String], output: &str) -> bool {
    let lines: Vec<&str> = output.lines().collect();
    lines.len() >= example.len()
        && (0..=lines.len() - example.len())
            .any(|k| example.iter().zip(&lines[k..]).all(|(p, l)| matches_line(p, l)))
}

/// What `pactum ARGS` prints in `root`, stdout and stderr together in the order they were
/// written (as on a terminal), with its exit status. No provider settings from the
/// environment, no colour; stdin is `stdin` or empty.
fn printed_by(root: &Path, args: &[&str], stdin: Option<PathBuf>) -> (i32, String) {
    use std::io::Read;
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pactum"));
    cmd.current_dir(root).env("NO_COLOR", "1").env_remove("CLICOLOR_FORCE");
    for var in common::PROVIDER_VARS {
        cmd.env_remove(var);
    }
    cmd.args(args).stdout(writer.try_clone().unwrap()).stderr(writer);
    cmd.stdin(match stdin {
        Some(file) => std::process::Stdio::from(fs::File::open(file).unwrap()),
        None => std::process::Stdio::null(),
    });
    let mut child = cmd.spawn().unwrap();
    drop(cmd); // the pipe ends when the child's copies of the writer close
    let mut printed = String::new();
    reader.read_to_string(&mut printed).unwrap();
    let status = child.wait().unwrap();
    (status.code().unwrap_or(-1), printed)
}

/// Runs the command a code's doc example names in `root` as a user would, checks its exit
/// status, and checks that the example is what it prints.
fn doc_example(root: &Path, code: Code, status: i32) {
    let (command, example) = doc_example_of_section(code).unwrap_or_else(|e| panic!("{e}"));
    let Some(args) = command.strip_prefix("pactum ") else {
        panic!("## {code}: the example names `{command}`, but its reproducer runs the binary")
    };
    let (args, stdin) = match args.split_once(" < ") {
        Some((args, file)) => (args, Some(root.join(file.trim()))),
        None => (args, None),
    };
    let args: Vec<&str> = args.split_whitespace().collect();
    let (exit, printed) = printed_by(root, &args, stdin);
    assert_eq!(exit, status, "`{command}` for {code} printed:\n{printed}");
    // Every hint it prints names a command and flags that exist on the command printing it
    // (the usage_error example names a wrong flag on purpose).
    if code != Code::UsageError {
        let problems = crate::cli_hints::hint_problems(&args, &printed);
        assert!(
            problems.is_empty(),
            "`{command}` for {code} prints hints that name nothing real:\n{}\n--- printed\n{printed}",
            problems.join("\n")
        );
    }
    assert!(
        is_excerpt(&example, &printed),
        "docs/error-codes.md, ## {code}: the example is not what `{command}` prints.\n\
         --- example\n{}\n--- printed\n{printed}",
        example.join("\n")
    );
}

/// For a code only the library reports: the example (`library: ...`) is the error as the
/// binary would print it, `error[code]: message`.
fn doc_example_of(error: &Error) {
    let code = error.code();
    let (named, example) = doc_example_of_section(code).unwrap_or_else(|e| panic!("{e}"));
    assert!(named.starts_with("library: "), "## {code}: a library example says `library: ...`");
    let printed = format!("error[{code}]: {error}");
    assert!(
        is_excerpt(&example, &printed),
        "docs/error-codes.md, ## {code}: the example is not the error.\n--- example\n{}\n\
         --- error\n{printed}",
        example.join("\n")
    );
}

#[test]
fn doc_examples_match_lines_with_wildcards_and_excerpts() {
    assert!(matches_line("a…c", "abbbc") && matches_line("…", "") && matches_line("x", "x"));
    assert!(matches_line("port …/v1: …", "port 4242/v1: refused"));
    assert!(!matches_line("a…c", "abd") && !matches_line("ab…b", "ab") && !matches_line("x", "xy"));
    let example = ["b".to_string(), "c…".to_string()];
    assert!(is_excerpt(&example, "a\nb\ncd\n"));
    assert!(!is_excerpt(&example, "b\na\ncd\n"), "consecutive lines");
    assert!(!is_excerpt(&example, "b\n"));
}

// --- Files and documents ------------------------------------------------------------------

#[test]
fn reproduces_contract_parse_error() {
    let dir = empty_project();
    let file = dir.path().join("contracts/t/1.0.0.json");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, "{\n  \"contract_id\": \"PRC-T-001\",\n}\n").unwrap();

    let d = finding(&validate_tree(dir.path()), Code::ContractParseError);

    assert_eq!(d.file.as_deref(), Some("contracts/t/1.0.0.json"));
    assert_eq!((d.line, d.column), (Some(3), Some(1)), "{d:?}");
    doc_example(dir.path(), Code::ContractParseError, 1);
}

#[test]
fn reproduces_contract_schema_invalid() {
    let dir = empty_project();
    let mut c = contract();
    c["boundary"]["max_tokens"] = json!(0);

    let e = err(add(dir.path(), &c));

    assert_code(&e, Code::ContractSchemaInvalid);
    assert_eq!(e.findings()[0].pointer, "/boundary/max_tokens");
    doc_example(dir.path(), Code::ContractSchemaInvalid, 1);
}

#[test]
fn reproduces_prompt_pack_invalid() {
    let dir = empty_project();
    let mut p = pack();
    p["template"] = json!("Classify: {{ text");
    write_json(dir.path(), &file_of(&p), &p);

    let d = finding(&validate_tree(dir.path()), Code::PromptPackInvalid);

    assert_eq!(d.pointer.as_deref(), Some("/template"));
    assert!(d.message.contains("does not compile"), "{}", d.message);
    doc_example(dir.path(), Code::PromptPackInvalid, 1);
}

#[test]
fn reproduces_work_order_invalid() {
    let dir = classify_project();
    let wo = write_json(
        dir.path(),
        "work_orders/wo.json",
        &json!({"work_order_id": "WO-T-001", "contract": "PRC-T-001", "input": {"text": "hi"}}),
    );

    let (out, status) = json_of(pactum(dir.path()).arg("run").arg(wo).arg("--json"));

    assert_eq!(out["code"], "work_order_invalid", "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::WorkOrderInvalid, 1);
    // A work order that is no JSON at all: the same code, at the line and column, in `run`
    // and in `validate` (never `contract_parse_error`: it is not a contract).
    fs::write(dir.path().join("work_orders/wo.json"), "{\"work_order_id\": \"WO-T-001\",\n")
        .unwrap();
    let (out, status) = json_of(pactum(dir.path()).args(["run", "work_orders/wo.json", "--json"]));
    assert_eq!((out["code"].as_str(), status), (Some("work_order_invalid"), 1), "{out:#}");
    assert!(out["message"].as_str().unwrap().contains("work_orders/wo.json:2:1"), "{out:#}");
    let d = finding(&validate_tree(dir.path()), Code::WorkOrderInvalid);
    assert_eq!((d.file.as_deref(), d.line), (Some("work_orders/wo.json"), Some(2)));
}

#[test]
fn reproduces_registry_invalid() {
    let dir = empty_project();
    edit_registry(dir.path(), |r| r["registry_version"] = json!(2));

    let e = err(Registry::load(&registry_path(dir.path())));

    assert_code(&e, Code::RegistryInvalid);
    assert_eq!(e.findings()[0].pointer, "/registry_version");
    doc_example(dir.path(), Code::RegistryInvalid, 1);
}

#[test]
fn reproduces_config_invalid() {
    let dir = empty_project();
    fs::write(dir.path().join("pactum.toml"), "[project]\ndeprecation_dayz = 14\n").unwrap();

    let e = err(Project::open(&registry_path(dir.path())));

    let message = assert_code(&e, Code::ConfigInvalid);
    assert!(message.contains("2:1") && message.contains("deprecation_dayz"), "{message}");
    doc_example(dir.path(), Code::ConfigInvalid, 1);
}

#[test]
fn reproduces_file_too_large() {
    let dir = empty_project();
    let file = dir.path().join("contracts/t/1.0.0.json");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    // A sparse file: the size is checked before anything is read.
    fs::File::create(&file).unwrap().set_len(pactum::document::MAX_FILE_BYTES + 1).unwrap();

    let d = finding(&validate_tree(dir.path()), Code::FileTooLarge);

    assert_eq!(d.file.as_deref(), Some("contracts/t/1.0.0.json"));
    doc_example(dir.path(), Code::FileTooLarge, 1);
}

#[test]
fn reproduces_path_escape() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("project");
    fs::create_dir(&root).unwrap();
    store::update(&registry_path(&root), |_| Ok(())).unwrap();
    let outside = write_json(outer.path(), "elsewhere/1.0.0.json", &contract());

    let e = err(store::update(&registry_path(&root), |reg| lifecycle::add(reg, &outside, &at())));

    let message = assert_code(&e, Code::PathEscape);
    assert!(message.contains("outside the project root"), "{message}");
    doc_example(&root, Code::PathEscape, 1);
}

#[test]
fn reproduces_suppression_unused() {
    let mut c = contract();
    c["x-pactum-ignore"] = json!(["example_failed"]);
    let dir = project_with(c, pack());

    let d = finding(&validate_tree(dir.path()), Code::SuppressionUnused);

    assert_eq!(d.pointer.as_deref(), Some("/x-pactum-ignore"), "{d:?}");
    doc_example(dir.path(), Code::SuppressionUnused, 0);
}

#[test]
fn reproduces_no_project() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("notes")).unwrap();
    fs::write(dir.path().join("notes/a.json"), "{}").unwrap();

    let (out, status) = json_of(pactum(dir.path()).args(["validate", "notes", "--json"]));

    assert_eq!((out["code"].as_str(), status), (Some("no_project"), 2), "{out:#}");
    doc_example(dir.path(), Code::NoProject, 2);
    // A file that is no JSON or YAML document, outside any project, is in none either
    // (it is not parsed as a contract), and a broken `.json` there is still shown.
    fs::write(dir.path().join("notes/plain.txt"), "hello").unwrap();
    let (out, status) = json_of(pactum(dir.path()).args(["validate", "notes/plain.txt", "--json"]));
    assert_eq!((out["code"].as_str(), status), (Some("no_project"), 2), "{out:#}");
    fs::write(dir.path().join("notes/broken.json"), "{\"a\": ").unwrap();
    let (out, status) =
        json_of(pactum(dir.path()).args(["validate", "notes/broken.json", "--json"]));
    assert_eq!(status, 1, "{out:#}");
    assert_eq!(out["diagnostics"][0]["code"], "contract_parse_error", "{out:#}");
}

#[test]
fn reproduces_io_error() {
    let dir = tempfile::tempdir().unwrap();

    let (out, status) =
        json_of(pactum(dir.path()).args(["resolve", "PRC-T-001", "--root", "missing", "--json"]));

    assert_eq!(out["code"], "io_error", "{out:#}");
    assert_eq!(status, 2, "I/O errors exit 2");
    doc_example(dir.path(), Code::IoError, 2);
}

#[test]
fn reproduces_input_parse_error() {
    let dir = classify_project();
    fs::write(dir.path().join("input.json"), "{\"text\": ").unwrap();

    let (out, status) = json_of(
        pactum(dir.path())
            .args(["render", "PRC-T-001", "--input", "-", "--json"])
            .write_stdin("{\"text\": "),
    );

    assert_eq!(out["code"], "input_parse_error", "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::InputParseError, 1);
}

#[test]
fn reproduces_pin_invalid() {
    let dir = classify_project();

    let (out, status) = json_of(pactum(dir.path()).args(["resolve", "PRC-T-001@>=one", "--json"]));

    assert_eq!(out["code"], "pin_invalid", "{out:#}");
    assert_eq!(status, 2, "a malformed pin is a usage error");
    doc_example(dir.path(), Code::PinInvalid, 2);
}

#[test]
fn reproduces_usage_error() {
    let dir = classify_project();

    let (out, status) = json_of(pactum(dir.path()).args(["validate", "--json", "--strictt"]));

    assert_eq!(out["code"], "usage_error", "{out:#}");
    assert_eq!(out["ok"], false);
    let message = out["message"].as_str().unwrap();
    assert!(message.contains("'--strictt'"), "{message}");
    assert!(message.ends_with("run `pactum validate --help` for the usage"), "{message}");
    assert_eq!(status, 2, "a malformed command line is a usage error");
    doc_example(dir.path(), Code::UsageError, 2);
}

#[test]
fn reproduces_config_insecure() {
    let dir = classify_project();
    fs::write(
        dir.path().join("pactum.toml"),
        "[providers.x]\nkind = \"openai\"\nbase_url = \"http://llm.example.com/v1\"\napi_key_env = \"X_API_KEY\"\n",
    )
    .unwrap();

    let e = err(Project::open(&registry_path(dir.path())));

    let message = assert_code(&e, Code::ConfigInsecure);
    assert!(message.contains("pactum.toml:3:12") && message.contains("without https"), "{message}");
    doc_example(dir.path(), Code::ConfigInsecure, 1);
}

#[test]
fn reproduces_schema_limit_exceeded() {
    // Each definition refers twice to the next: 2^40 subschemas from a few hundred bytes.
    let mut defs = serde_json::Map::new();
    for i in 0..40 {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(format!("d{i}"), json!({"anyOf": [{"$ref": next}, {"$ref": next}]}));
    }
    defs.insert("d40".into(), json!({"type": "string"}));
    let mut c = contract();
    c["output_schema"] = json!({"$defs": defs, "$ref": "#/$defs/d0"});
    let dir = empty_project();
    write_json(dir.path(), &file_of(&c), &c);

    let d = finding(&validate_tree(dir.path()), Code::SchemaLimitExceeded);

    assert_eq!(d.pointer.as_deref(), Some("/output_schema"));
    assert!(d.message.contains("expands to more than"), "{}", d.message);
    doc_example(dir.path(), Code::SchemaLimitExceeded, 1);
}

#[test]
fn reproduces_schema_too_costly() {
    // A chain of 600 definitions, each a reference to the next: deeper than the measure
    // (and the validator) follows, so its cost cannot be bounded.
    let mut defs = serde_json::Map::new();
    for i in 0..600 {
        defs.insert(format!("d{i}"), json!({"$ref": format!("#/$defs/d{}", i + 1)}));
    }
    defs.insert("d600".into(), json!({"type": "string"}));
    let mut c = contract();
    c["output_schema"] = json!({"$defs": defs, "$ref": "#/$defs/d0"});
    let dir = empty_project();
    write_json(dir.path(), &file_of(&c), &c);

    let d = finding(&validate_tree(dir.path()), Code::SchemaTooCostly);

    assert_eq!(d.pointer.as_deref(), Some("/output_schema"));
    assert!(d.message.contains("cannot be bounded"), "{}", d.message);
    doc_example(dir.path(), Code::SchemaTooCostly, 1);
}

#[test]
fn reproduces_validation_too_costly() {
    // A schema well within its own bound (300 branches of one `anyOf`), applied to every
    // item of a 3 MB reply: unbounded, validating it would take seconds in release and
    // minutes in debug. It is refused before the validator runs.
    let branches: Vec<Value> =
        (0..300).map(|i| json!({"type": "object", "required": [format!("k{i}")]})).collect();
    let dir = tempfile::tempdir().unwrap();
    write_json(
        dir.path(),
        "branches.json",
        &json!({"type": "array", "items": {"anyOf": branches}}),
    );
    let reply = serde_json::to_string(&vec![json!({"k299": 1}); 250_000]).unwrap();
    fs::write(dir.path().join("reply.txt"), &reply).unwrap();

    // That the value is refused before the validator runs (unbounded, minutes in a debug
    // build) is counted in the library's tests (`schema::validation_cost`, `exchange`).
    let (out, status) = json_of(
        pactum(dir.path())
            .args(["extract", "--schema", "branches.json", "--json"])
            .write_stdin(reply),
    );

    assert_eq!(out["code"], "validation_too_costly", "{out:#}");
    assert!(out["message"].as_str().unwrap().contains("750001 nodes"), "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::ValidationTooCostly, 1);
}

// --- Registry and resolution --------------------------------------------------------------

#[test]
fn reproduces_contract_not_found() {
    let dir = classify_project();

    let e = err(resolve(dir.path(), "PRC-TT-001", false));

    let message = assert_code(&e, Code::ContractNotFound);
    assert!(message.ends_with("did you mean PRC-T-001?"), "{message}");
    doc_example(dir.path(), Code::ContractNotFound, 1);
}

#[test]
fn reproduces_contract_version_not_found() {
    let dir = classify_project();

    let e = err(resolve(dir.path(), "PRC-T-001@^2", false));

    let message = assert_code(&e, Code::ContractVersionNotFound);
    assert!(message.ends_with("available versions: 1.0.0"), "{message}");
    doc_example(dir.path(), Code::ContractVersionNotFound, 1);
}

#[test]
fn reproduces_contract_not_active() {
    let dir = classify_project();
    let mut draft = contract();
    draft["version"] = json!("1.1.0");
    add(dir.path(), &draft).unwrap();

    let e = err(resolve(dir.path(), "PRC-T-001@1.1.0", false));

    assert_code(&e, Code::ContractNotActive);
    assert!(resolve(dir.path(), "PRC-T-001@1.1.0", true).is_ok(), "--allow-draft resolves it");
    doc_example(dir.path(), Code::ContractNotActive, 1);
}

#[test]
fn reproduces_contract_deprecated() {
    let dir = classify_project();
    let mut successor = contract();
    successor["version"] = json!("1.1.0");
    add(dir.path(), &successor).unwrap();
    promote(dir.path(), "PRC-T-001", "1.1.0").unwrap();
    deprecate(dir.path(), "PRC-T-001", "1.0.0", "1.1.0").unwrap();

    let resolved = resolve(dir.path(), "PRC-T-001@1.0.0", false).unwrap();

    let warning = &resolved.warnings[0];
    assert_eq!(warning.code, Code::ContractDeprecated);
    assert_eq!(warning.code.default_severity(), Severity::Warning);
    assert!(warning.message.contains("its successor is 1.1.0"), "{}", warning.message);
    doc_example(dir.path(), Code::ContractDeprecated, 0);
}

#[test]
fn reproduces_contract_hash_mismatch() {
    let dir = classify_project();
    let mut edited = contract();
    edited["boundary"]["max_tokens"] = json!(128);
    write_json(dir.path(), &file_of(&edited), &edited);

    let e = err(resolve(dir.path(), "PRC-T-001", false));

    let message = assert_code(&e, Code::ContractHashMismatch);
    assert!(message.contains("never changes: restore it"), "{message}");
    doc_example(dir.path(), Code::ContractHashMismatch, 1);

    // A schema file an active contract references is covered by its hash too.
    let dir = empty_project();
    write_json(dir.path(), "schemas/label.json", &json!({"enum": ["greeting", "other"]}));
    let mut c = contract();
    c["output_schema"]["properties"]["label"] = json!({"$ref": "../../schemas/label.json"});
    add(dir.path(), &pack()).unwrap();
    add(dir.path(), &c).unwrap();
    promote(dir.path(), "PRM-T-001", "1.0.0").unwrap();
    promote(dir.path(), "PRC-T-001", "1.0.0").unwrap();
    write_json(dir.path(), "schemas/label.json", &json!({"enum": ["greeting"]}));

    let e = err(resolve(dir.path(), "PRC-T-001", false));

    let message = assert_code(&e, Code::ContractHashMismatch);
    assert!(message.starts_with("schemas/label.json: SHA-256 is"), "{message}");
    assert!(message.contains("PRC-T-001@1.0.0 was promoted with SHA-256"), "{message}");
}

#[test]
fn reproduces_contract_id_mismatch() {
    let dir = classify_project();
    // The entry of a hand-written registry (no history to replay, so nothing says the
    // entry was edited) claims 1.0.1 for a file (hash unchanged) that says 1.0.0.
    edit_registry(dir.path(), |r| {
        r["contracts"][0]["version"] = json!("1.0.1");
        r.as_object_mut().unwrap().remove("history");
    });

    let e = err(resolve(dir.path(), "PRC-T-001@1.0.1", false));

    let message = assert_code(&e, Code::ContractIdMismatch);
    assert!(message.contains("file says PRC-T-001@1.0.0"), "{message}");
    doc_example(dir.path(), Code::ContractIdMismatch, 1);
}

#[test]
fn reproduces_contract_unregistered() {
    let dir = empty_project();
    write_json(dir.path(), &file_of(&contract()), &contract());

    let d = finding(&validate_tree(dir.path()), Code::ContractUnregistered);

    assert_eq!(d.file.as_deref(), Some("contracts/t/1.0.0.json"));
    assert!(d.help.unwrap().contains("pactum registry add"));
    doc_example(dir.path(), Code::ContractUnregistered, 1);
}

#[test]
fn reproduces_prompt_pack_not_found() {
    let dir = empty_project();
    let mut c = contract();
    c["prompt_pack_id"] = json!("PRM-NOPE-001");
    add(dir.path(), &c).unwrap();

    let e = err(resolve(dir.path(), "PRC-T-001", true));

    let message = assert_code(&e, Code::PromptPackNotFound);
    assert!(message.contains("prompt pack PRM-NOPE-001 is not registered"), "{message}");
    doc_example(dir.path(), Code::PromptPackNotFound, 1);
}

#[test]
fn reproduces_registry_file_missing() {
    let dir = classify_project();
    fs::remove_file(dir.path().join(file_of(&contract()))).unwrap();

    let e = err(resolve(dir.path(), "PRC-T-001", false));

    assert_code(&e, Code::RegistryFileMissing);
    doc_example(dir.path(), Code::RegistryFileMissing, 1);
}

#[test]
fn reproduces_registry_duplicate_entry() {
    let dir = classify_project();
    edit_registry(dir.path(), |r| {
        let entry = r["contracts"][0].clone();
        r["contracts"].as_array_mut().unwrap().push(entry);
    });

    let e = err(Registry::open(&registry_path(dir.path())));

    assert_code(&e, Code::RegistryDuplicateEntry);
    doc_example(dir.path(), Code::RegistryDuplicateEntry, 1);
}

#[test]
fn reproduces_registry_history_broken() {
    let dir = classify_project();
    edit_registry(dir.path(), |r| r["history"][1]["at"] = json!("2025-06-01T00:00:00Z"));

    let e = err(Registry::open(&registry_path(dir.path())));

    let message = assert_code(&e, Code::RegistryHistoryBroken);
    assert!(message.contains("at event 2"), "{message}");
    doc_example(dir.path(), Code::RegistryHistoryBroken, 1);
}

#[test]
fn reproduces_registry_history_mismatch() {
    let dir = classify_project();
    // A hand edit that keeps the chain intact: the entry's state flipped.
    edit_registry(dir.path(), |r| r["contracts"][0]["state"] = json!("deprecated"));

    let findings = lifecycle::verify(&Registry::open(&registry_path(dir.path())).unwrap());

    let d = findings.iter().find(|d| d.code == Code::RegistryHistoryMismatch).expect("a mismatch");
    assert_eq!(d.pointer.as_deref(), Some("/contracts/0/state"));
    assert!(
        d.message.contains(
            "PRC-T-001@1.0.0: the entry says deprecated, but the history leaves it active"
        ),
        "{}",
        d.message
    );
    doc_example(dir.path(), Code::RegistryHistoryMismatch, 1);
}

#[test]
fn reproduces_registry_history_missing() {
    let dir = classify_project();
    edit_registry(dir.path(), |r| {
        r.as_object_mut().unwrap().remove("history");
    });

    let findings = lifecycle::verify(&Registry::open(&registry_path(dir.path())).unwrap());

    let d = findings.iter().find(|d| d.code == Code::RegistryHistoryMissing).expect("a warning");
    assert_eq!(d.severity, Severity::Warning);
    assert!(d.help.as_deref().unwrap_or_default().contains("pactum registry adopt"), "{d:?}");
    doc_example(dir.path(), Code::RegistryHistoryMissing, 0);
}

#[test]
fn reproduces_registry_merge_conflict() {
    let base = r#"{"registry_version": 1, "contracts": [], "prompt_packs": [], "history": []}"#;
    let side = |sha: char| {
        let mut r = Registry::empty(Path::new("registry.json"));
        let entry = pactum::registry::Entry {
            kind: EntryKind::Contract,
            id: "PRC-T-001".into(),
            version: pactum::id::parse_version("1.0.0").unwrap(),
            path: "contracts/t/1.0.0.json".into(),
            sha256: sha.to_string().repeat(64),
            state: pactum::registry::State::Draft,
            registered_at: AT_TIME.into(),
            activated_at: None,
            deprecated_at: None,
            successor_version: None,
            removed_at: None,
            refs: None,
        };
        r.entries.push(entry);
        r.history = None;
        r.to_json()
    };
    let (ours, theirs) = (side('a'), side('b'));

    let e = err(pactum::registry::merge::merge(
        [Path::new("base"), Path::new("ours"), Path::new("theirs")],
        [base, &ours, &theirs],
        &at(),
    ));

    let message = assert_code(&e, Code::RegistryMergeConflict);
    assert!(
        message.starts_with("cannot merge registry.json: PRC-T-001@1.0.0: both sides changed it with different content"),
        "{message}"
    );
    // The same through the binary, as git runs the driver.
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [("base.json", base), ("ours.json", &ours), ("theirs.json", &theirs)] {
        fs::write(dir.path().join(name), text).unwrap();
    }
    doc_example(dir.path(), Code::RegistryMergeConflict, 1);
}

#[test]
fn reproduces_registry_transition_invalid() {
    let dir = classify_project();
    let version = pactum::id::parse_version("1.0.0").unwrap();

    let e = err(store::update(&registry_path(dir.path()), |reg| {
        lifecycle::remove(reg, EntryKind::Contract, "PRC-T-001", &version, &at())
    }));

    let message = assert_code(&e, Code::RegistryTransitionInvalid);
    assert!(message.contains("deprecate it first"), "{message}");
    doc_example(dir.path(), Code::RegistryTransitionInvalid, 1);
}

#[test]
fn reproduces_registry_entry_immutable() {
    let dir = classify_project();
    let mut edited = contract();
    edited["boundary"]["temperature"] = json!(0.7);

    let e = err(add(dir.path(), &edited));

    assert_code(&e, Code::RegistryEntryImmutable);
    doc_example(dir.path(), Code::RegistryEntryImmutable, 1);
}

#[test]
fn reproduces_successor_missing() {
    let dir = classify_project();

    let e = err(deprecate(dir.path(), "PRC-T-001", "1.0.0", "2.0.0"));

    let message = assert_code(&e, Code::SuccessorMissing);
    assert!(message.contains("successor 2.0.0 is not registered"), "{message}");
    doc_example(dir.path(), Code::SuccessorMissing, 1);
}

#[test]
fn reproduces_deprecation_period_over() {
    let dir = classify_project();
    let mut successor = contract();
    successor["version"] = json!("1.1.0");
    add(dir.path(), &successor).unwrap();
    promote(dir.path(), "PRC-T-001", "1.1.0").unwrap();
    deprecate(dir.path(), "PRC-T-001", "1.0.0", "1.1.0").unwrap();
    // Deprecated on 2026-01-01; 60 days later the 30-day migration period is over.
    let options =
        ValidateOptions { now: "2026-03-02T00:00:00Z".parse().unwrap(), ..Default::default() };

    let report = validate(dir.path(), &options, &NoProgress).unwrap();

    let d = finding(&report, Code::DeprecationPeriodOver);
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(report.errors(), 0, "{:#?}", report.diagnostics);
    doc_example(dir.path(), Code::DeprecationPeriodOver, 0);
}

#[test]
fn reproduces_incompatible_version_bump() {
    let dir = classify_project();
    // A new required input is a breaking change, but 1.0.1 declares a patch.
    let mut next = contract();
    next["version"] = json!("1.0.1");
    next["input_schema"]["required"] = json!(["text", "lang"]);
    next["input_schema"]["properties"]["lang"] = json!({"type": "string"});
    add(dir.path(), &next).unwrap();

    let e = err(promote(dir.path(), "PRC-T-001", "1.0.1"));

    let message = assert_code(&e, Code::IncompatibleVersionBump);
    assert!(message.contains("is a patch bump but the changes need major"), "{message}");
    doc_example(dir.path(), Code::IncompatibleVersionBump, 1);
}

// --- Templates ----------------------------------------------------------------------------

#[test]
fn reproduces_template_variable_missing() {
    let e = err(render("Classify: {{ text }}", json!({})));

    let message = assert_code(&e, Code::TemplateVariableMissing);
    assert!(message.contains("uses `text`, which has no value"), "{message}");
    // Through `pactum render`: an input the schema allows (`text` optional) but the template
    // cannot render.
    let mut c = contract();
    c["input_schema"]["required"] = json!([]);
    let dir = project_with(c, pack());
    fs::write(dir.path().join("input.json"), "{}").unwrap();
    doc_example(dir.path(), Code::TemplateVariableMissing, 1);
}

#[test]
fn reproduces_template_variable_undeclared() {
    let mut p = pack();
    p["template"] = json!("Classify this {{ lang }} text: {{ text }}");
    let dir = project_with(contract(), p);

    let d = finding(&validate_tree(dir.path()), Code::TemplateVariableUndeclared);

    // Where it is used: the pack's template.
    assert_eq!(d.file.as_deref(), Some("prompt_packs/t/1.0.0.json"));
    assert_eq!(d.pointer.as_deref(), Some("/template"));
    assert!(d.message.contains("uses `lang`"), "{}", d.message);
    doc_example(dir.path(), Code::TemplateVariableUndeclared, 1);
}

#[test]
fn reproduces_template_input_unused() {
    let mut c = contract();
    c["input_schema"]["properties"]["tone"] = json!({"type": "string"});
    let dir = project_with(c, pack());

    let report = validate_tree(dir.path());

    let d = finding(&report, Code::TemplateInputUnused);
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(d.pointer.as_deref(), Some("/input_schema/properties/tone"));
    doc_example(dir.path(), Code::TemplateInputUnused, 0);
}

#[test]
fn reproduces_template_render_failed() {
    let e = err(render("{{ text + 1 }}", json!({"text": "hello"})));

    assert_code(&e, Code::TemplateRenderFailed);
    let mut p = pack();
    p["template"] = json!("{{ text + 1 }}");
    let dir = project_with(contract(), p);
    fs::write(dir.path().join("input.json"), r#"{"text": "hello"}"#).unwrap();
    doc_example(dir.path(), Code::TemplateRenderFailed, 1);
}

#[test]
fn reproduces_template_limit_exceeded() {
    let spin = "{% for i in range(1000) %}{% for j in range(1000) %}.{% endfor %}{% endfor %}";

    let e = err(render(spin, json!({})));

    let message = assert_code(&e, Code::TemplateLimitExceeded);
    assert!(message.contains("ran out of fuel"), "{message}");
    let mut p = pack();
    p["template"] = json!(format!("{spin}{{{{ text }}}}"));
    let dir = project_with(contract(), p);
    fs::write(dir.path().join("input.json"), r#"{"text": "hello"}"#).unwrap();
    doc_example(dir.path(), Code::TemplateLimitExceeded, 1);
}

/// PRM-T-001@1.0.0 as a section tree: a task and a summarized reference (SPEC §14, §15).
fn tree_pack() -> Value {
    json!({"prompt_pack_id": "PRM-T-001", "version": "1.0.0", "sections": [
        {"key": "task", "title": "Task", "template": "Classify: {{ text }}"},
        {"key": "reference", "title": "Reference", "visibility": "summary",
         "summary": "Label definitions.", "template": "greeting: a hello; other: the rest."}
    ]})
}

#[test]
fn reproduces_section_not_found() {
    let dir = project_with(contract(), tree_pack());
    fs::write(dir.path().join("input.json"), r#"{"text": "hello"}"#).unwrap();

    let (out, status) = json_of(pactum(dir.path()).args([
        "render",
        "PRC-T-001",
        "--input",
        "input.json",
        "--open",
        "refrence",
        "--json",
    ]));

    assert_eq!((out["code"].as_str(), status), (Some("section_not_found"), 1), "{out:#}");
    assert!(out["message"].as_str().unwrap().contains("task, reference"), "{out:#}");
    doc_example(dir.path(), Code::SectionNotFound, 1);
}

// --- One exchange -------------------------------------------------------------------------

#[test]
fn reproduces_input_schema_invalid() {
    let dir = classify_project();
    fs::write(dir.path().join("input.json"), r#"{"text": 42}"#).unwrap();

    let (out, status) = json_of(
        pactum(dir.path())
            .args(["render", "PRC-T-001", "--input", "-", "--json"])
            .write_stdin(r#"{"text": 42}"#),
    );

    assert_eq!(out["code"], "input_schema_invalid", "{out:#}");
    assert_eq!(out["errors"][0]["pointer"], "/text");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::InputSchemaInvalid, 1);
}

#[test]
fn reproduces_required_context_missing() {
    let mut c = contract();
    c["required_context"] = json!({"framework_refs": ["FMWK-STYLE-001"]});
    let dir = project_with(c, pack());
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}});

    let (out, status) = run_json(dir.path(), wo, json!([{"text": "{\"label\": \"greeting\"}"}]));

    assert_eq!(error_codes(&out), ["required_context_missing"], "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::RequiredContextMissing, 1);
}

#[test]
fn reproduces_context_truncated() {
    let mut c = contract();
    c["required_context"] = json!({"file_refs": ["docs/notes.md"]});
    let dir = project_with(c, pack());
    fs::create_dir_all(dir.path().join("docs")).unwrap();
    fs::write(dir.path().join("docs/notes.md"), "n".repeat(200)).unwrap();
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}, "constraints": {"context_budget": 20}});

    let (out, status) = run_json(dir.path(), wo, json!([{"text": "{\"label\": \"greeting\"}"}]));

    assert_eq!(out["warnings"][0]["code"], "context_truncated", "{out:#}");
    assert_eq!((out["ok"].as_bool(), status), (Some(true), 0), "a warning does not fail the run");
    doc_example(dir.path(), Code::ContextTruncated, 0);
}

#[test]
fn reproduces_output_json_extraction_failed() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("reply.txt"), "Sorry, I cannot help.").unwrap();

    let (out, status) = json_of(
        pactum(dir.path()).args(["extract", "--json"]).write_stdin("Sorry, I cannot help."),
    );

    assert_eq!(out["code"], "output_json_extraction_failed", "{out:#}");
    assert_eq!(out["methods_tried"], json!(["fenced", "embedded", "direct"]));
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::OutputJsonExtractionFailed, 1);
}

#[test]
fn reproduces_output_schema_invalid() {
    let dir = tempfile::tempdir().unwrap();
    write_json(dir.path(), "label.json", &contract()["output_schema"]);
    fs::write(dir.path().join("reply.txt"), "Here you go: {\"label\": \"farewell\"}").unwrap();

    let (out, status) = json_of(
        pactum(dir.path())
            .args(["extract", "--schema", "label.json", "--json"])
            .write_stdin("Here you go: {\"label\": \"farewell\"}"),
    );

    assert_eq!(out["code"], "output_schema_invalid", "{out:#}");
    assert_eq!(out["errors"][0]["pointer"], "/label");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::OutputSchemaInvalid, 1);
}

#[test]
fn reproduces_output_truncated() {
    let dir = classify_project();
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}});
    let cut_off = json!([{"text": "{\"label\": \"gree", "finish_reason": "length"}]);

    let (out, status) = run_json(dir.path(), wo, cut_off);

    assert_eq!(error_codes(&out), ["output_truncated"], "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::OutputTruncated, 1);
}

#[test]
fn reproduces_output_extraction_ambiguous() {
    let mut c = contract();
    c["extraction"] = json!({"repair": true});
    let dir = project_with(c, pack());
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}});
    // Two objects back to back: the first, or a list of both?
    let reply = json!([{"text": "{\"label\": \"greeting\"}\n{\"label\": \"other\"}"}]);

    let (out, status) = run_json(dir.path(), wo, reply);

    assert_eq!(out["warnings"][0]["code"], "output_extraction_ambiguous", "{out:#}");
    assert_eq!(out["extraction"]["ambiguous"], true, "{out:#}");
    // The object the schema accepts, not the list of both.
    assert_eq!(out["output"], json!({"label": "greeting"}), "{out:#}");
    let message = out["warnings"][0]["message"].as_str().unwrap();
    assert!(message.contains("the embedded value from bytes 0..21 was used"), "{message}");
    assert_eq!((out["ok"].as_bool(), status), (Some(true), 0), "a warning does not fail the run");
    doc_example(dir.path(), Code::OutputExtractionAmbiguous, 0);
}

#[test]
fn reproduces_example_failed() {
    let mut c = contract();
    c["examples"] = json!([{"name": "greeting", "input": {"text": "hi"},
                            "response": "{\"label\": \"hello\"}", "expect": "ok"}]);
    let dir = project_with(c, pack());

    let d = finding(&validate_tree(dir.path()), Code::ExampleFailed);

    assert_eq!(d.pointer.as_deref(), Some("/examples/0"));
    assert!(d.message.contains("gives `output_schema_invalid`"), "{}", d.message);
    doc_example(dir.path(), Code::ExampleFailed, 1);
}

#[test]
fn reproduces_expected_output_missing() {
    let p = json!({"prompt_pack_id": "PRM-T-001", "version": "1.0.0",
                   "sections": {"task": "Classify: {{ text }}", "expected_outputs": ["label.md"]}});
    let dir = project_with(contract(), p);
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}});

    let (out, status) = run_json(dir.path(), wo, json!([{"text": "{\"label\": \"greeting\"}"}]));

    assert_eq!(out["warnings"][0]["code"], "expected_output_missing", "{out:#}");
    assert_eq!((out["ok"].as_bool(), status), (Some(true), 0), "a warning does not fail the run");
    doc_example(dir.path(), Code::ExpectedOutputMissing, 0);
}

#[test]
fn reproduces_repair_unavailable() {
    let dir = classify_project();
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}, "constraints": {"max_repair_attempts": 3}});

    let (out, status) = run_json(dir.path(), wo, json!([{"text": "{\"label\": \"greeting\"}"}]));

    assert_eq!(out["warnings"][0]["code"], "repair_unavailable", "{out:#}");
    assert_eq!((out["ok"].as_bool(), status), (Some(true), 0), "a warning does not fail the run");
    let d = finding(&validate_tree(dir.path()), Code::RepairUnavailable);
    assert_eq!(d.pointer.as_deref(), Some("/constraints/max_repair_attempts"), "{d:?}");
    doc_example(dir.path(), Code::RepairUnavailable, 0);
}

#[test]
fn reproduces_output_dir_protected() {
    let p = json!({"prompt_pack_id": "PRM-T-001", "version": "1.0.0",
                   "sections": {"task": "Classify: {{ text }}", "expected_outputs": ["label.md"]}});
    let dir = project_with(contract(), p);
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}, "output_dir": ".."});
    let reply =
        json!({"envelope": {"text": "{\"label\": \"x\"}", "files": {"registry.json": "{}"}}});

    let (out, status) = run_json(dir.path(), wo, json!([reply]));

    assert_eq!(error_codes(&out), ["output_dir_protected"], "{out:#}");
    assert_eq!(status, 1);
    assert!(fs::read_to_string(dir.path().join("registry.json")).unwrap().len() > 2);
    doc_example(dir.path(), Code::OutputDirProtected, 1);
}

#[test]
fn reproduces_disclosure_limit_exceeded() {
    let dir = project_with(contract(), tree_pack());
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}, "constraints": {"max_disclosures": 1}});
    let read = json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "/context/reference.md"}}]});

    let (out, status) = run_json(dir.path(), wo, json!([read, read]));

    assert_eq!(error_codes(&out), ["disclosure_limit_exceeded"], "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::DisclosureLimitExceeded, 1);
}

#[test]
fn reproduces_budget_exceeded() {
    let dir = classify_project();
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}, "constraints": {"token_budget": 50}});

    let (out, status) = run_json(dir.path(), wo, json!([{"text": "{\"label\": \"greeting\"}"}]));

    assert_eq!(error_codes(&out), ["budget_exceeded"], "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::BudgetExceeded, 1);
}

#[test]
fn reproduces_secret_limit_exceeded() {
    let mut marking = contract();
    marking["input_schema"]["properties"]["tokens"] =
        json!({"type": "array", "items": {"$ref": "#/$defs/token"}});
    marking["input_schema"]["$defs"] = json!({"token": {"type": "string", "x-secret": true}});
    let dir = project_with(marking, pack());
    let tokens: Vec<String> =
        (0..=pactum::redact::MAX_MARKED).map(|i| format!("token-{i:06}")).collect();
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello", "tokens": tokens}});

    let (out, status) = run_json(dir.path(), wo, json!([{"text": "{\"label\": \"greeting\"}"}]));

    assert_eq!(error_codes(&out), ["secret_limit_exceeded"], "{out:#}");
    assert_eq!(status, 1);
    let ledger = fs::read_to_string(dir.path().join(".pactum/ledger.jsonl")).unwrap();
    assert!(ledger.contains("\"verdict\":\"secret_limit_exceeded\""), "{ledger}");
    assert!(!ledger.contains("token-0") && !out.to_string().contains("token-0"), "{ledger}");
    // An input whose secrets could not all be marked is not recorded at all.
    let record: Value = serde_json::from_str(ledger.lines().last().unwrap()).unwrap();
    assert!(record.get("input").is_none(), "{record:#}");
    doc_example(dir.path(), Code::SecretLimitExceeded, 1);
}

// --- Providers ----------------------------------------------------------------------------

#[test]
fn reproduces_provider_error() {
    let e = openai_error(MockReply::json(400, &json!({"error": {"message": "unknown model"}})));

    assert_code(&e, Code::ProviderError);
    assert!(matches!(e, Error::Provider { status: Some(400), .. }), "{e:?}");
    let reply = MockReply::json(400, &json!({"error": {"message": "unknown model"}}));
    openai_doc_example(reply, "", true, Code::ProviderError);
}

#[test]
fn reproduces_provider_timeout() {
    let server =
        MockServer::start(vec![MockReply::json(200, &json!({})).delay(Duration::from_millis(500))]);
    let provider = openai(&server.url(), Duration::from_millis(50));

    let e = err(provider.complete(&request()));

    assert_code(&e, Code::ProviderTimeout);
    let slow = MockReply::json(200, &json!({})).delay(Duration::from_millis(500));
    openai_doc_example(slow, "timeout_s = 0.05", true, Code::ProviderTimeout);
}

#[test]
fn reproduces_provider_unreachable() {
    let refused = RefusedPort::new();
    let provider = openai(&refused.url(), Duration::from_secs(5));

    let e = err(provider.complete(&request()));

    assert_code(&e, Code::ProviderUnreachable);
    let dir = openai_project(&refused.url(), "", "model = \"gpt-test\"");
    doc_example(dir.path(), Code::ProviderUnreachable, 1);
}

#[test]
fn reproduces_provider_rate_limited() {
    let e = openai_error(MockReply::text(429, "slow down").header("retry-after", "0"));

    assert_code(&e, Code::ProviderRateLimited);
    let reply = MockReply::text(429, "slow down").header("retry-after", "0");
    openai_doc_example(reply, "", true, Code::ProviderRateLimited);
}

#[test]
fn reproduces_provider_response_invalid() {
    let e = openai_error(MockReply::json(200, &json!({"object": "list", "data": []})));

    let message = assert_code(&e, Code::ProviderResponseInvalid);
    assert!(message.contains("no `choices[0]`"), "{message}");
    let reply = MockReply::json(200, &json!({"object": "list", "data": []}));
    openai_doc_example(reply, "", true, Code::ProviderResponseInvalid);
}

#[test]
fn reproduces_provider_not_configured() {
    // Nothing listens there: the missing model is reported before any request is sent.
    let refused = RefusedPort::new();
    let provider = OpenAiProvider::new(OpenAiConfig {
        base_url: Permit::application(refused.url()),
        model: String::new(),
        ..OpenAiConfig::default()
    });

    let e = err(provider.complete(&request()));

    let message = assert_code(&e, Code::ProviderNotConfigured);
    assert!(message.contains("no model is configured"), "{message}");
    let dir = openai_project(&refused.url(), "", "");
    doc_example(dir.path(), Code::ProviderNotConfigured, 1);
}

#[test]
fn reproduces_replay_miss() {
    let dir = tempfile::tempdir().unwrap();
    let cassette =
        write_json(dir.path(), "cassette.json", &json!({"cassette_version": 1, "entries": []}));
    let provider = ReplayProvider::open(&cassette, Mode::Replay, None).unwrap();

    let e = err(provider.complete(&request()));

    assert_code(&e, Code::ReplayMiss);
    // Through `pactum run`: a work order replaying an empty cassette.
    let dir = classify_project();
    write_json(
        dir.path(),
        "work_orders/cassette.json",
        &json!({"cassette_version": 1, "entries": []}),
    );
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"},
                    "provider": {"name": "replay", "cassette": "cassette.json"}});
    write_json(dir.path(), "work_orders/wo.json", &wo);
    doc_example(dir.path(), Code::ReplayMiss, 1);
}

#[test]
fn reproduces_script_exhausted() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = write_json(dir.path(), "fixtures.json", &json!({"responses": []}));
    let provider = ScriptedProvider::load(&fixtures, dir.path()).unwrap();

    let e = err(provider.complete(&request()));

    let message = assert_code(&e, Code::ScriptExhausted);
    assert!(message.contains("no response left for PRC-T-001@1.0.0"), "{message}");
    // Through `pactum run`: an exchange whose fixtures hold no response.
    let dir = classify_project();
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}});
    let (out, _) = run_json(dir.path(), wo, json!([]));
    assert_eq!(error_codes(&out), ["script_exhausted"], "{out:#}");
    doc_example(dir.path(), Code::ScriptExhausted, 1);
}

#[test]
fn reproduces_script_prompt_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let reply = json!({"contract_id": "PRC-T-001", "expect_prompt": ["Classify: goodbye"],
                       "text": "{\"label\": \"other\"}"});
    let fixtures = write_json(dir.path(), "fixtures.json", &json!({"responses": [reply]}));
    let provider = ScriptedProvider::load(&fixtures, dir.path()).unwrap();

    let e = err(provider.complete(&request()));

    let message = assert_code(&e, Code::ScriptPromptMismatch);
    assert!(message.contains("expects the prompt to contain \"Classify: goodbye\""), "{message}");
    // Through `pactum run`: the reply was written for another input.
    let dir = classify_project();
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}});
    let (out, _) = run_json(dir.path(), wo, json!([reply]));
    assert_eq!(error_codes(&out), ["script_prompt_mismatch"], "{out:#}");
    doc_example(dir.path(), Code::ScriptPromptMismatch, 1);
}

// --- Kernel -------------------------------------------------------------------------------

fn builtin_tools() -> ToolRegistry {
    ToolRegistry::builtin(Arc::new(Memory::new()))
}

#[test]
fn reproduces_tool_not_found() {
    let e = err(builtin_tools().call("calculater", &json!({"expression": "5 + 10"})));

    let message = assert_code(&e, Code::ToolNotFound);
    assert!(message.contains("calculator"), "{message}");
    // Through `pactum run`: a kernel work order allowing a tool that does not exist.
    let dir = kernel_project();
    let mut wo = kernel_work_order(json!({"ttl": 10}));
    wo["tools"] = json!(["calculater"]);
    let (out, _) = run_json(dir.path(), wo, json!([]));
    assert_eq!(error_codes(&out)[0], "tool_not_found", "{out:#}");
    doc_example(dir.path(), Code::ToolNotFound, 1);
}

#[test]
fn reproduces_tool_input_invalid() {
    let e = err(builtin_tools().call("calculator", &json!({"expr": "5 + 10"})));

    assert_code(&e, Code::ToolInputInvalid);
    // A run never reports it: the kernel hands a bad call to the supervisor, whose failure is
    // `supervisor_unrecoverable`. So the example is the library's.
    doc_example_of(&e);
}

#[test]
fn reproduces_tool_failed() {
    let e = err(builtin_tools().call("calculator", &json!({"expression": "1 / 0"})));

    let message = assert_code(&e, Code::ToolFailed);
    assert!(message.contains("division by zero"), "{message}");
    // Through `pactum run`: a plan step divides by zero; the loop goes on and converges.
    let dir = kernel_project();
    let plan = json!({"goal": "Divide.", "steps": [{"step_id": "s1", "description": "Divide 1 by 0.",
                      "status": "pending", "tool": "calculator",
                      "arguments": {"expression": "1 / 0"}}]});
    let responses = json!([
        {"contract_id": "PRC-PROFILE-001", "text": "Exact arithmetic."},
        {"contract_id": "PRC-PLAN-001", "text": plan.to_string()},
        {"contract_id": "PRC-SEMANTIC-001", "text": "Step s1 failed: division by zero."},
        {"contract_id": "PRC-CONVERGE-001",
         "text": "{\"converged\": true, \"reason\": \"1 / 0 has no value.\", \"confidence\": 0.9}"},
        {"contract_id": "PRC-SYNTH-001",
         "text": "{\"answer_text\": \"1 / 0 has no value.\", \"metadata\": {}}"},
    ]);
    let (out, status) = run_json(dir.path(), kernel_work_order(json!({"ttl": 10})), responses);
    assert_eq!(error_codes(&out), ["tool_failed"], "{out:#}");
    // The step failed, but the run converged: it is ok and exits 0, with the error listed.
    assert_eq!((out["ok"].as_bool(), status), (Some(true), 0), "{out:#}");
    doc_example(dir.path(), Code::ToolFailed, 0);
}

/// A kernel project whose `pactum.toml` runs the test MCP server (`tests/fixtures/mcp`)
/// with `args`, and a work order whose plan looks order A-17 up.
fn mcp_project(args: &str, allow: &str) -> TempDir {
    let dir = kernel_project();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    fs::create_dir_all(dir.path().join("tools")).unwrap();
    fs::copy(repo.join("tests/fixtures/mcp/server.py"), dir.path().join("tools/server.py"))
        .unwrap();
    write_json(dir.path(), "tools/orders.json", &json!({"A-17": {"status": "shipped"}}));
    fs::write(
        dir.path().join("pactum.toml"),
        format!("[tools.orders]\ncommand = [\"python3\", \"tools/server.py\"{args}]\n{allow}"),
    )
    .unwrap();
    dir
}

/// `pactum run --json --trust-config` of a kernel work order in an [`mcp_project`]: the
/// checkout is trusted, so its tool server starts (SPEC §24).
fn mcp_run(dir: &Path) -> (Value, i32) {
    let wo = json!({"work_order_id": "WO-ORDER-001", "kind": "kernel",
                    "request": "Where is order A-17?", "constraints": {"ttl": 10},
                    "provider": {"fixtures": "fixtures.json"}});
    write_json(dir, "work_orders/fixtures.json", &json!({"responses": []}));
    let path = write_json(dir, "work_orders/wo.json", &wo);
    let (doc, status) =
        json_of(pactum(dir).arg("run").arg(path).arg("--json").arg("--trust-config"));
    (common::single_result(doc), status)
}

#[test]
fn reproduces_config_unconfirmed() {
    // The checkout is not confirmed: its tool server's command does not start.
    let dir = mcp_project("", "");
    let wo = json!({"work_order_id": "WO-ORDER-001", "kind": "kernel",
                    "request": "Where is order A-17?", "tools": ["lookup_order"]});
    let (out, status) = run_json(dir.path(), wo, json!([]));
    assert_eq!(out["code"], "config_unconfirmed", "{out:#}");
    let message = out["message"].as_str().unwrap();
    assert!(
        message.contains("`tools.orders.command` in pactum.toml starts the program `python3`"),
        "{message}"
    );
    assert_eq!(status, 1);
    assert!(!dir.path().join("tools/server.pid").exists(), "the server started");
    // validate notes the setting, at its line, as a warning.
    let d = finding(&validate_tree(dir.path()), Code::ConfigUnconfirmed);
    assert_eq!((d.file.as_deref(), d.line), (Some("pactum.toml"), Some(2)), "{d:?}");
    doc_example(dir.path(), Code::ConfigUnconfirmed, 0);
}

#[test]
fn reproduces_registry_history_rewritten() {
    // An event the base agreed on, edited and the chain recomputed.
    let repo = crate::cli_base::Repo::new();
    repo.forge(|r| r.history.as_mut().unwrap()[2].actor = Some("someone-else@example.com".into()));
    let out = repo.pactum(&["registry", "verify", "--base", "main", "--json"]);
    assert_eq!(out.json()["code"], "registry_history_rewritten", "{out}");
    assert_eq!(Code::RegistryHistoryRewritten.as_str(), "registry_history_rewritten");
    doc_example(repo.root(), Code::RegistryHistoryRewritten, 1);
}

#[test]
fn reproduces_registry_event_unverified() {
    // A promotion typed by hand, without the evidence the base's gate requires.
    let repo = crate::cli_base::Repo::new();
    repo.forge(|r| crate::cli_base::hand_promote(r, "1.1.0", None));
    let out = repo.pactum(&["registry", "verify", "--base", "main", "--json"]);
    assert_eq!(out.json()["code"], "registry_event_unverified", "{out}");
    assert_eq!(Code::RegistryEventUnverified.as_str(), "registry_event_unverified");
    doc_example(repo.root(), Code::RegistryEventUnverified, 1);
}

#[test]
fn reproduces_registry_event_unsigned() {
    // The base asks for signed events; a promotion comes without a signature.
    let keys = tempfile::tempdir().unwrap();
    let (_, line) = crate::cli_base::ssh_key(keys.path(), "alice", "alice@example.com");
    let repo = crate::cli_base::Repo::new();
    crate::cli_base::git(repo.root(), &["checkout", "-q", "main"]);
    fs::write(repo.path("allowed_signers"), format!("{line}\n")).unwrap();
    repo.edit_text("pactum.toml", |t| t.replace("eval = true", "signers = \"allowed_signers\""));
    repo.commit("signers");
    crate::cli_base::git(repo.root(), &["checkout", "-q", "-B", "pr"]);
    repo.forge(|r| crate::cli_base::hand_promote(r, "1.1.0", None));
    let out = repo.pactum(&["registry", "verify", "--base", "main", "--json"]);
    assert_eq!(out.json()["code"], "registry_event_unsigned", "{out}");
    assert_eq!(Code::RegistryEventUnsigned.as_str(), "registry_event_unsigned");
    doc_example(repo.root(), Code::RegistryEventUnsigned, 1);
}

#[test]
fn reproduces_ledger_rewritten() {
    // A signed checkpoint of the head, then the ledger rewritten and re-chained.
    let keys = tempfile::tempdir().unwrap();
    let (key, line) = crate::cli_base::ssh_key(keys.path(), "alice", "alice@example.com");
    let dir = crate::cli_otel::demo();
    fs::write(dir.path().join("allowed_signers"), format!("{line}\n")).unwrap();
    fs::write(dir.path().join("pactum.toml"), "[gate]\nsigners = \"allowed_signers\"\n").unwrap();
    pactum(dir.path()).args(["run", crate::cli_otel::CLASSIFY]).assert().success();
    pactum(dir.path()).args(["ledger", "checkpoint", "--sign-key"]).arg(&key).assert().success();
    crate::cli_base::rewrite_ledger(dir.path());
    let (out, status) = json_of(pactum(dir.path()).args(["ledger", "verify", "--json"]));
    assert_eq!((out["code"].as_str(), status), (Some("ledger_rewritten"), 1), "{out:#}");
    assert_eq!(Code::LedgerRewritten.as_str(), "ledger_rewritten");
    doc_example(dir.path(), Code::LedgerRewritten, 1);
}

#[test]
fn reproduces_ledger_unavailable() {
    let dir = empty_project();
    // Nothing listens on port 1 of the loopback; the deadline is one second.
    let url = "postgres://fleet@127.0.0.1:1/audit?connect_timeout=1";
    let (out, status) = json_of(pactum(dir.path()).args(["ledger", "verify", url, "--json"]));
    assert_eq!((out["code"].as_str(), status), (Some("ledger_unavailable"), 1), "{out:#}");
    assert_eq!(Code::LedgerUnavailable.as_str(), "ledger_unavailable");
    doc_example(dir.path(), Code::LedgerUnavailable, 1);
}

#[test]
fn reproduces_scaffold_placeholder() {
    // A scaffolded contract and pack, promoted unchanged: refused, each placeholder named.
    let dir = tempfile::tempdir().unwrap();
    let (_, status) = json_of(pactum(dir.path()).args(["init", "--json"]));
    assert_eq!(status, 0);
    let (_, status) =
        json_of(pactum(dir.path()).args(["new", "contract", "PRC-SUMMARIZE-001", "--json"]));
    assert_eq!(status, 0);
    // In the draft, a warning at the string.
    let report = validate_tree(dir.path());
    let d = finding(&report, Code::ScaffoldPlaceholder);
    assert_eq!(d.severity, pactum::error::Severity::Warning);
    assert!(report.diagnostics.iter().any(|d| d.code == Code::ScaffoldPlaceholder
        && d.pointer.as_deref() == Some("/sections/role")
        && d.line.is_some()));
    doc_example(dir.path(), Code::ScaffoldPlaceholder, 1);
    // Written, it goes.
    let pack = dir.path().join("prompt_packs/summarize/1.0.0.json");
    let text = fs::read_to_string(&pack)
        .unwrap()
        .replace("(the role the model plays)", "You summarize support tickets.")
        .replace("(what to do with the input)", "Summarize this ticket in one sentence.")
        .replace(
            "(the exact output shape, e.g. a JSON object with a `result` string)",
            "A JSON object with the summary as `result`.",
        );
    fs::write(&pack, text).unwrap();
    let (_, status) = json_of(pactum(dir.path()).args([
        "registry",
        "promote",
        "PRM-SUMMARIZE-001@1.0.0",
        "--json",
    ]));
    assert_eq!(status, 0);
    // The contract's description is still the scaffold's.
    let (doc, status) = json_of(pactum(dir.path()).args([
        "registry",
        "promote",
        "PRC-SUMMARIZE-001@1.0.0",
        "--json",
    ]));
    assert_eq!(status, 1, "{doc}");
    assert_eq!(doc["code"], "scaffold_placeholder", "{doc}");
    assert!(doc["message"].as_str().unwrap().contains("/metadata/description"), "{doc}");
}

#[test]
fn reproduces_generated_stale() {
    // Types generated, then a new version promoted: the file no longer matches.
    let dir = classify_project();
    let (_, status) = json_of(pactum(dir.path()).args([
        "generate",
        "python",
        "--out",
        "app/contracts.py",
        "--json",
    ]));
    assert_eq!(status, 0);
    fs::write(dir.path().join("pactum.toml"), "[generate]\npython = \"app/contracts.py\"\n")
        .unwrap();
    assert!(!validate_tree(dir.path()).diagnostics.iter().any(|d| d.code == Code::GeneratedStale));
    let mut c = contract();
    c["version"] = json!("1.1.0");
    add(dir.path(), &c).unwrap();
    promote(dir.path(), "PRC-T-001", "1.1.0").unwrap();
    let d = finding(&validate_tree(dir.path()), Code::GeneratedStale);
    assert_eq!(d.file.as_deref(), Some("app/contracts.py"));
    doc_example(dir.path(), Code::GeneratedStale, 0);
}

#[test]
fn reproduces_tools_lock_stale() {
    // The lock records another tool list than the server offers.
    let dir = mcp_project("", "");
    let (_, status) = json_of(pactum(dir.path()).args(["tools", "lock", "--json"]));
    assert_eq!(status, 0);
    let lock = dir.path().join("pactum.tools.lock");
    let text = fs::read_to_string(&lock).unwrap();
    fs::write(&lock, text.replace("Looks an order up by its id.", "Looks an order up.")).unwrap();
    let (out, status) = mcp_run(dir.path());
    assert_eq!(error_codes(&out)[0], "tools_lock_stale", "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::ToolsLockStale, 1);
}

#[test]
fn reproduces_tool_name_taken() {
    // The server lists a tool named like a built-in.
    let dir = mcp_project(", \"--extra\", \"echo\"", "");
    let (out, status) = mcp_run(dir.path());
    assert_eq!(error_codes(&out)[0], "tool_name_taken", "{out:#}");
    assert!(out["message"].as_str().unwrap().contains("tool server `orders`"), "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::ToolNameTaken, 1);
}

#[test]
fn reproduces_tool_unknown() {
    // The server's `allow` list names a tool the server does not offer.
    let dir = mcp_project("", "allow = [\"lookup_ordr\"]\n");
    let (out, status) = mcp_run(dir.path());
    assert_eq!(error_codes(&out)[0], "tool_unknown", "{out:#}");
    assert!(out["message"].as_str().unwrap().contains("did you mean lookup_order?"), "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::ToolUnknown, 1);
}

#[test]
fn reproduces_tool_server_failed() {
    // The server exits at once; what it said on stderr is in the message.
    let dir = mcp_project(", \"--die\"", "");
    let (out, status) = mcp_run(dir.path());
    assert_eq!(error_codes(&out)[0], "tool_server_failed", "{out:#}");
    let message = out["message"].as_str().unwrap();
    assert!(message.contains("cannot open the order database"), "{message}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::ToolServerFailed, 1);
}

#[test]
fn reproduces_supervisor_unrecoverable() {
    let dir = kernel_project();
    // The plan is not JSON, and neither is the one repair the work order allows.
    let responses = json!([
        {"contract_id": "PRC-PROFILE-001", "text": "Exact arithmetic."},
        {"contract_id": "PRC-PLAN-001", "text": "First add, then report."},
        {"contract_id": "PRC-REPAIRJSON-001", "text": "Still no JSON, sorry."},
    ]);
    let wo = kernel_work_order(json!({"ttl": 10, "max_repair_attempts": 1}));

    let (out, status) = run_json(dir.path(), wo, responses);

    assert_eq!(error_codes(&out)[0], "supervisor_unrecoverable", "{out:#}");
    assert_eq!(out["status"], "unrecoverable");
    assert!(out["final_answer"]["answer_text"].is_string(), "Phase E still answers");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::SupervisorUnrecoverable, 1);
}

#[test]
fn reproduces_ttl_expired() {
    let dir = kernel_project();
    let responses = json!([{"contract_id": "PRC-PROFILE-001", "text": "Exact arithmetic."}]);
    let wo = kernel_work_order(json!({"ttl": 1}));

    let (out, status) = run_json(dir.path(), wo, responses);

    assert_eq!(error_codes(&out)[0], "ttl_expired", "{out:#}");
    assert_eq!(out["final_answer"]["ttl_exhausted"], true);
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::TtlExpired, 1);
}

// --- Ledger -------------------------------------------------------------------------------

#[test]
fn reproduces_ledger_broken() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.jsonl");
    let ledger = pactum::ledger::Ledger::open(&pactum::ledger::Location::chosen(&path)).unwrap();
    for verdict in ["ok", "ok"] {
        let mut fields = serde_json::Map::new();
        fields.insert("verdict".into(), json!(verdict));
        ledger.append(pactum::ledger::Kind::Exchange, fields).unwrap();
    }
    drop(ledger);
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, text.replacen("\"ok\"", "\"failed\"", 1)).unwrap();

    let e = err(pactum::ledger::verify(&pactum::ledger::Location::chosen(&path), None));

    let message = assert_code(&e, Code::LedgerBroken);
    assert!(message.contains(":1: record 1 was edited"), "{message}");
    doc_example(dir.path(), Code::LedgerBroken, 1);
}

#[test]
fn reproduces_ledger_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.jsonl");
    let ledger = pactum::ledger::Ledger::open(&pactum::ledger::Location::chosen(&path)).unwrap();
    ledger.append(pactum::ledger::Kind::Exchange, serde_json::Map::new()).unwrap();
    // A crash cut the second record off before its newline.
    let mut torn = fs::read(&path).unwrap();
    torn.extend_from_slice(b"{\"seq\":2,\"kind\":\"exch");
    fs::write(&path, &torn).unwrap();

    let e = err(ledger.append(pactum::ledger::Kind::Exchange, serde_json::Map::new()));

    let message = assert_code(&e, Code::LedgerCorrupt);
    assert!(
        message.contains(":2:") && message.contains("delete the incomplete line 2"),
        "{message}"
    );
    assert_eq!(fs::read(&path).unwrap(), torn, "nothing was appended to the torn line");
    doc_example(dir.path(), Code::LedgerCorrupt, 1);
}

// --- Evaluation ---------------------------------------------------------------------------

/// The standard project with an eval suite of PRC-T-001 (`evals/t/EVAL-T-001.json`, every
/// case must pass) and its dataset `lines`.
fn eval_project(suite_extra: Value, lines: &str) -> TempDir {
    let dir = classify_project();
    let mut suite = json!({"eval_id": "EVAL-T-001", "contract": "PRC-T-001@^1",
                           "dataset": "evals/t/cases.jsonl"});
    if let (Value::Object(s), Value::Object(extra)) = (&mut suite, suite_extra) {
        s.extend(extra);
    }
    write_json(dir.path(), "evals/t/EVAL-T-001.json", &suite);
    fs::write(dir.path().join("evals/t/cases.jsonl"), lines).unwrap();
    dir
}

#[test]
fn reproduces_eval_suite_invalid() {
    let dir = eval_project(
        json!({"assertions": [{"kind": "equals", "pointer": "/labl", "value": "greeting"}]}),
        "{\"id\": \"hello\", \"input\": {\"text\": \"hello\"}}\n",
    );
    // The library refuses a suite whose assertion cannot compile.
    let bad = json!({"eval_id": "EVAL-T-001", "contract": "PRC-T-001@^1", "dataset": "evals/t/cases.jsonl",
                     "assertions": [{"kind": "matches", "pattern": "(a)\\1"}]});
    let e = err(pactum::eval::Suite::from_value(&bad, Path::new("EVAL-T-001.json"), dir.path()));
    let message = assert_code(&e, Code::EvalSuiteInvalid);
    assert!(message.contains("/assertions/0/pattern: the regex does not compile"), "{message}");
    // `validate` names a pointer the contract's output_schema does not have.
    let report = validate_tree(dir.path());
    let d = finding(&report, Code::EvalSuiteInvalid);
    assert_eq!((d.file.as_deref(), d.line), (Some("evals/t/EVAL-T-001.json"), Some(5)), "{d:?}");
    doc_example(dir.path(), Code::EvalSuiteInvalid, 1);
}

#[test]
fn reproduces_eval_dataset_invalid() {
    let dir = eval_project(
        json!({}),
        "{\"id\": \"hello\", \"input\": {\"text\": \"hello\"}}\n{\"input\": {\"text\": \"bye\"}}\n",
    );
    // The dataset reader names the line.
    let mut dataset =
        pactum::eval::dataset::Dataset::open(dir.path(), "evals/t/cases.jsonl").unwrap();
    assert!(dataset.next().unwrap().is_ok());
    let e = err(dataset.next().unwrap());
    let message = assert_code(&e, Code::EvalDatasetInvalid);
    assert!(message.starts_with("evals/t/cases.jsonl:2: not a case: /id:"), "{message}");
    // `pactum eval` stops there (`validate` reports it at the line too).
    let d = finding(&validate_tree(dir.path()), Code::EvalDatasetInvalid);
    assert_eq!((d.file.as_deref(), d.line), (Some("evals/t/cases.jsonl"), Some(2)));
    doc_example(dir.path(), Code::EvalDatasetInvalid, 1);
}

#[test]
fn reproduces_eval_regression() {
    // A scripted model answers `greeting` to both cases: the case that expects `other`
    // fails, and the suite wants every case to pass. (The dry-run stand-in would measure no
    // model: `provider_not_configured`.)
    let dir = eval_project(
        json!({}),
        "{\"id\": \"hello\", \"input\": {\"text\": \"hello\"}, \"expect\": [{\"kind\": \"equals\", \"pointer\": \"/label\", \"value\": \"greeting\"}]}\n\
         {\"id\": \"weather\", \"input\": {\"text\": \"it rains\"}, \"expect\": [{\"kind\": \"equals\", \"pointer\": \"/label\", \"value\": \"other\"}]}\n",
    );
    let reply = json!({"contract_id": "PRC-T-001", "text": "{\"label\": \"greeting\"}"});
    write_json(dir.path(), "model.json", &json!({"responses": [reply, reply]}));
    fs::write(
        dir.path().join("pactum.toml"),
        "[defaults]\nprovider = \"model\"\n\n[providers.model]\nkind = \"scripted\"\nfixtures = \"model.json\"\n",
    )
    .unwrap();

    let (out, status) = json_of(pactum(dir.path()).args(["eval", "--json"]));

    assert_eq!(status, 1);
    assert_eq!(out["code"], "eval_regression", "{out:#}");
    assert_eq!(out["suites"][0]["passed"], 1);
    doc_example(dir.path(), Code::EvalRegression, 1);
}

#[test]
fn reproduces_semantic_rejected() {
    // The judge of the work order's semantic_check rejects the classification; the work
    // order escalates.
    let dir = kernel_project();
    let wo = json!({"work_order_id": "WO-SEM-001", "kind": "exchange", "contract": "PRC-CLASSIFY-001",
                    "input": {"user_input": "I was charged twice this month."},
                    "semantic_check": {"judge": "PRC-JUDGE-001@^1", "on_fail": "escalate",
                                       "criteria": "The label names the queue that handles the problem."}});
    let replies = json!([
        {"contract_id": "PRC-CLASSIFY-001", "text": "{\"label\": \"technical\", \"confidence\": 0.6}"},
        {"contract_id": "PRC-JUDGE-001",
         "text": "{\"pass\": false, \"reason\": \"A double charge is a billing problem.\"}"},
    ]);

    let (out, status) = run_json(dir.path(), wo, replies);

    assert_eq!(error_codes(&out), ["semantic_rejected"], "{out:#}");
    assert!(out["message"].as_str().unwrap().contains("A double charge is a billing problem."));
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::SemanticRejected, 1);
}

// --- Internal -------------------------------------------------------------------------------

// --- Queue -----------------------------------------------------------------------------------

#[test]
fn reproduces_queue_unavailable() {
    let dir = empty_project();
    // Nothing listens on port 1 of the loopback.
    let (out, status) =
        json_of(pactum(dir.path()).args(["results", "--json", "--queue", "redis://127.0.0.1:1/0"]));

    assert_eq!(out["code"], "queue_unavailable", "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::QueueUnavailable, 1);
}

#[test]
fn reproduces_otlp_export_failed() {
    let dir = empty_project();
    // A ledger with one record; nothing listens on port 1 of the loopback.
    let ledger = pactum::ledger::Ledger::open(&pactum::ledger::Location::chosen(
        &dir.path().join("ledger.jsonl"),
    ))
    .unwrap();
    let mut fields = serde_json::Map::new();
    fields.insert("event".into(), json!("work_order_failed"));
    fields.insert("work_order_id".into(), json!("WO-X"));
    ledger.append(pactum::ledger::Kind::WorkOrder, fields).unwrap();
    drop(ledger);
    let (out, status) = json_of(pactum(dir.path()).args([
        "ledger",
        "export",
        "--json",
        "--otlp",
        "http://127.0.0.1:1",
        "ledger.jsonl",
    ]));

    assert_eq!(out["code"], "otlp_export_failed", "{out:#}");
    assert_eq!(status, 1);
    doc_example(dir.path(), Code::OtlpExportFailed, 1);
}

#[test]
fn reproduces_queue_protocol_error() {
    // Something on the queue's port that does not speak RESP: every reply is garbage.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}/0", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut buffer = [0u8; 4096];
                while matches!(stream.read(&mut buffer), Ok(n) if n > 0) {
                    if stream.write_all(b"?this is no RESP\r\n").is_err() {
                        return;
                    }
                }
            });
        }
    });
    let dir = empty_project();

    let (out, status) = json_of(pactum(dir.path()).args(["results", "--json", "--queue", &url]));

    assert_eq!((out["code"].as_str(), status), (Some("queue_protocol_error"), 1), "{out:#}");
    let parsed = pactum::queue::redis::RedisUrl::parse(&Permit::application(url.clone())).unwrap();
    let e =
        err(pactum::queue::redis::RedisQueue::open(&parsed, "pactum", "g").and_then(|mut q| {
            use pactum::queue::Queue;
            q.results("0", None).map(|_| ())
        }));
    assert_code(&e, Code::QueueProtocolError);
    doc_example_of(&e);
}

#[test]
fn reproduces_internal_error() {
    // A panic in a validate worker is never a success, and never a file silently missing
    // from the report: the whole run is `internal_error`. (The binary's handling of a panic
    // anywhere, exit 2, is in tests/trust_boundaries.rs.)
    struct PanicsInWorkers(std::sync::atomic::AtomicUsize);
    impl pactum::validate::Progress for PanicsInWorkers {
        fn start(&self, _: usize) {}
        fn advance(&self) {
            // The first call (the registry) is on the calling thread; the rest in workers.
            if self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) > 0 {
                panic!("a check panicked");
            }
        }
        fn finish(&self) {}
    }
    let dir = classify_project();

    let e = err(pactum::validate::validate(
        dir.path(),
        &Default::default(),
        &PanicsInWorkers(Default::default()),
    ));

    let message = assert_code(&e, Code::InternalError);
    assert!(message.contains("a validate worker panicked: a check panicked"), "{message}");
    doc_example_of(&e);
}

// --- Codes in --json output (SPEC §12: a failure has a top-level "code") ---------------

#[test]
fn run_json_names_the_main_failure_at_top_level() {
    let dir = classify_project();
    let wo = json!({"work_order_id": "WO-T-001", "kind": "exchange", "contract": "PRC-T-001",
                    "input": {"text": "hello"}, "constraints": {"token_budget": 50}});

    let (out, _) = run_json(dir.path(), wo, json!([]));

    assert_eq!(out["ok"], false);
    assert_eq!(out["code"], "budget_exceeded", "{out:#}");
    assert!(out["message"].is_string(), "{out:#}");
}

#[test]
fn validate_json_reports_an_unreadable_path_as_json() {
    let dir = tempfile::tempdir().unwrap();

    let (out, status) = json_of(pactum(dir.path()).args(["validate", "missing", "--json"]));

    assert_eq!(out["code"], "io_error", "{out:#}");
    assert_eq!(status, 2);
}

// --- The codes, their reproducers and their docs ------------------------------------------

/// The body of `fn reproduces_<code>(` in this file, up to the next test.
fn reproducer_body<'a>(source: &'a str, code: &str) -> Option<&'a str> {
    let start = source.find(&format!("fn reproduces_{code}("))?;
    let rest = &source[start..];
    let end = rest[1..].find("\n#[test]").map_or(rest.len(), |i| i + 1);
    Some(&rest[..end])
}

#[test]
fn every_code_has_a_reproducer_and_a_doc_section() {
    let source = include_str!("error_codes.rs");
    let docs_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/error-codes.md");
    let docs = fs::read_to_string(&docs_path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", docs_path.display()));
    let headings: Vec<&str> = docs.lines().filter_map(|l| l.strip_prefix("## ")).collect();

    let mut problems = Vec::new();
    for &code in Code::ALL {
        let name = code.as_str();
        match reproducer_body(source, name) {
            None => problems
                .push(format!("{name}: no `fn reproduces_{name}()` in tests/error_codes.rs")),
            Some(body) => {
                let variant = format!("Code::{code:?}");
                if !body.contains(&variant) && !body.contains(&format!("\"{name}\"")) {
                    problems.push(format!("{name}: reproduces_{name} never asserts {variant}"));
                }
                if !body.contains("doc_example(") && !body.contains("doc_example_of(") {
                    problems.push(format!(
                        "{name}: reproduces_{name} does not check the doc's example \
                         (doc_example or doc_example_of)"
                    ));
                }
            }
        }
        if !headings.contains(&name) {
            problems.push(format!("{name}: no `## {name}` section in docs/error-codes.md"));
        } else if let Err(e) = doc_example_of_section(code) {
            problems.push(format!("docs/error-codes.md: {e}"));
        }
    }
    for heading in &headings {
        if Code::from_name(heading).is_none() {
            problems.push(format!("docs/error-codes.md: `## {heading}` is not a code"));
        }
    }
    let documented: Vec<&str> =
        headings.iter().copied().filter(|h| Code::from_name(h).is_some()).collect();
    let all: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    if problems.is_empty() && documented != all {
        problems.push("docs/error-codes.md: sections are not in Code::ALL order".to_string());
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
