//! `pactum validate` in real CI (issue 14): reports that the real consumers accept, paths
//! that name files of the repository when the project sits in a subfolder of a git
//! repository, machine formats written byte for byte, NDJSON from `--watch`, JSON about
//! argument errors, and human output that neither drives the terminal nor commands the
//! GitHub Actions runner (SPEC §5, §12, §18).
//!
//! The tests marked `#[ignore]` check the reports against the consumers' own schemas in
//! `../shared/peer/ci-formats/` (the OASIS SARIF 2.1.0 schema, Jenkins' `junit-10.xsd`,
//! Surefire's test-report schema; `xmllint` for the XML ones). They are not part of a clean
//! clone, so a plain `cargo test` reports them as ignored; `.ci/run` runs them with
//! `--include-ignored`, and there a missing file or tool fails with a message saying what
//! to provide.

use crate::exchange_harness as harness;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{Out, copy_tree, pactum_in, repo, sha256_hex};
use serde_json::{Value, json};

// --- Helpers ------------------------------------------------------------------------------

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/validate").join(name)
}

/// A git repository in a temp folder with the `broken` fixture project in `prompts/`.
struct Monorepo {
    dir: tempfile::TempDir,
}

impl Monorepo {
    fn new() -> Monorepo {
        let dir = tempfile::Builder::new().prefix("pactum-monorepo-").tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        copy_tree(&fixture("broken"), &dir.path().join("prompts"));
        std::fs::write(dir.path().join("README.md"), "a repository with prompts inside\n").unwrap();
        Monorepo { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `pactum validate ARGS` run in `cwd` (relative to the repository root).
    fn validate(&self, cwd: &str, args: &[&str]) -> Out {
        Out::of(pactum_in(&self.root().join(cwd)).arg("validate").args(args))
    }
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap_or_else(|e| panic!("git is needed for the monorepo tests: {e}"));
    assert!(status.success(), "git {args:?} failed");
}

/// Every file a JSON report names.
fn json_files(doc: &Value) -> Vec<String> {
    doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["file"].as_str().map(str::to_string))
        .collect()
}

/// The `uri` of every SARIF result.
fn sarif_uris(doc: &Value) -> Vec<String> {
    doc["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let location = &r["locations"][0]["physicalLocation"]["artifactLocation"];
            location["uri"].as_str().unwrap().to_string()
        })
        .collect()
}

/// The `name` of every `<testcase>` of a JUnit report (names hold no `"` once escaped).
fn junit_case_names(xml: &str) -> Vec<String> {
    xml.split("<testcase name=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().replace("&amp;", "&"))
        .collect()
}

/// The `file=` property of every GitHub annotation.
fn annotation_files(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("::"))
        .filter_map(|l| {
            let properties = l.split("::").nth(1)?;
            properties
                .split_once(' ')?
                .1
                .split(',')
                .find_map(|p| p.strip_prefix("file=").map(|f| f.replace("%2C", ",")))
        })
        .collect()
}

/// A file of `shared/peer/ci-formats/` beside the repository (or beside the folder that
/// holds it, for a worktree), or a failure saying how to provide it.
fn ci_format(name: &str) -> PathBuf {
    let rel = Path::new("shared/peer/ci-formats").join(name);
    let candidates = [repo().join("..").join(&rel), repo().join("../..").join(&rel)];
    candidates.iter().find(|p| p.is_file()).cloned().unwrap_or_else(|| {
        panic!(
            "{} is missing: this test checks pactum's reports against the consumers' own \
             schema; run it where shared/ sits beside the repository (as CI does)",
            candidates[0].display()
        )
    })
}

/// Runs `xmllint --noout --schema XSD FILE`; panics with xmllint's output when the file
/// does not validate, or with how to install xmllint when it is missing.
fn xmllint(xsd: &Path, xml: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.xml");
    std::fs::write(&file, xml).unwrap();
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(xsd)
        .arg(&file)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "xmllint is needed to check JUnit XML (Debian: apt-get install libxml2-utils): {e}"
            )
        });
    assert!(
        out.status.success(),
        "{} does not accept the report:\n{}\n{xml}",
        xsd.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

// --- Paths in a monorepo ------------------------------------------------------------------

#[test]
fn a_project_in_a_subfolder_names_files_from_the_repository_root_in_every_format() {
    let repo = Monorepo::new();
    // From the repository root (as GitHub runs it) and from inside the project.
    for (cwd, path) in [("", "prompts"), ("prompts", "."), ("prompts/contracts", "..")] {
        let json = repo.validate(cwd, &[path, "--format", "json"]);
        json.status(1);
        let doc = json.json();
        let files = json_files(&doc);
        assert!(!files.is_empty(), "{json}");
        for file in &files {
            assert!(file.starts_with("prompts/"), "cwd {cwd:?}: {file}");
            assert!(repo.root().join(file).is_file(), "cwd {cwd:?}: {file} does not exist");
        }

        let sarif = repo.validate(cwd, &[path, "--format", "sarif"]);
        let doc = sarif.json();
        let uris = sarif_uris(&doc);
        assert_eq!(uris.len(), doc["runs"][0]["results"].as_array().unwrap().len());
        for uri in &uris {
            assert!(uri.starts_with("prompts/"), "cwd {cwd:?}: {uri}");
            assert!(repo.root().join(uri).is_file(), "cwd {cwd:?}: {uri} does not exist");
        }

        let junit = repo.validate(cwd, &[path, "--format", "junit"]);
        let names = junit_case_names(&junit.stdout);
        assert!(names.len() > 5, "{junit}");
        for name in names.iter().filter(|n| *n != "project") {
            assert!(name.starts_with("prompts/"), "cwd {cwd:?}: {name}");
            assert!(repo.root().join(name).is_file(), "cwd {cwd:?}: {name} does not exist");
        }
        assert!(names.contains(&"prompts/registry.json".to_string()), "{names:?}");

        let github = repo.validate(cwd, &[path, "--format", "github"]);
        let files = annotation_files(&github.stdout);
        assert!(!files.is_empty(), "{github}");
        for file in &files {
            assert!(file.starts_with("prompts/"), "cwd {cwd:?}: {file}");
            assert!(repo.root().join(file).is_file(), "cwd {cwd:?}: {file} does not exist");
        }

        let text = repo.validate(cwd, &[path]);
        assert!(text.stdout.contains("--> prompts/contracts/greet/1.0.0.json:8:20"), "{text}");
    }
}

#[test]
fn a_git_worktree_file_marks_the_repository_root_too() {
    // `git worktree add` leaves a `.git` file, not a folder.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".git"), "gitdir: /nowhere\n").unwrap();
    copy_tree(&fixture("broken"), &dir.path().join("team/prompts"));
    let out = Out::of(pactum_in(&dir.path().join("team/prompts")).args(["validate", "--json"]));
    for file in json_files(&out.json()) {
        assert!(file.starts_with("team/prompts/"), "{file}");
    }
}

#[test]
fn without_git_files_are_named_from_the_current_folder_and_never_with_two_slashes() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("broken"), &dir.path().join("work/prompts"));
    std::fs::create_dir_all(dir.path().join("elsewhere")).unwrap();

    // The current folder holds the project: names relative to it.
    let inside =
        Out::of(pactum_in(&dir.path().join("work")).args(["validate", "prompts", "--json"]));
    for file in json_files(&inside.json()) {
        assert!(file.starts_with("prompts/"), "{file}");
    }

    // The project is outside the current folder: absolute paths, one leading slash.
    let project = dir.path().join("work/prompts").canonicalize().unwrap();
    let project = project.to_str().unwrap();
    let mut outside = pactum_in(&dir.path().join("elsewhere"));
    let out = Out::of(outside.args(["validate", project, "--json"]));
    let files = json_files(&out.json());
    assert!(!files.is_empty());
    for file in &files {
        assert!(file.starts_with(&format!("{project}/")), "{file}");
        assert!(!file.starts_with("//"), "{file}");
        assert!(Path::new(file).is_file(), "{file}");
    }
    let sarif = Out::of(
        pactum_in(&dir.path().join("elsewhere")).args(["validate", project, "--format", "sarif"]),
    );
    for uri in sarif_uris(&sarif.json()) {
        assert!(uri.starts_with(&format!("file://{project}/")), "{uri}");
    }
    for out in ["text", "github", "junit"] {
        let out = Out::of(
            pactum_in(&dir.path().join("elsewhere")).args(["validate", project, "--format", out]),
        );
        assert!(!out.stdout.contains("//tmp") && !out.stdout.contains(&format!("/{project}")));
    }
}

#[test]
fn a_file_outside_the_registry_folder_is_named_by_its_absolute_path() {
    // --registry elsewhere: the checked file is outside the registry's folder.
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("broken"), &dir.path().join("a"));
    copy_tree(&fixture("good"), &dir.path().join("b"));
    let registry = dir.path().join("b/registry.json");
    let out = Out::of(pactum_in(dir.path()).args([
        "validate",
        "a/contracts",
        "--registry",
        registry.to_str().unwrap(),
        "--json",
    ]));
    let files = json_files(&out.json());
    assert!(files.iter().any(|f| f.starts_with("a/contracts/")), "{files:?}");
    assert!(files.iter().all(|f| !f.starts_with('/')), "{files:?}");
}

// --- The consumers' schemas ---------------------------------------------------------------

fn broken_report(format: &str) -> String {
    let repo = Monorepo::new();
    let out = repo.validate("", &["prompts", "--format", format]);
    out.status(1);
    out.stdout
}

#[test]
#[ignore = "needs ../shared/peer/ci-formats/sarif-schema-2.1.0.json; .ci/run runs it"]
fn sarif_output_validates_against_the_oasis_sarif_2_1_0_schema() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(ci_format("sarif-schema-2.1.0.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the OASIS schema compiles");
    let doc: Value = serde_json::from_str(&broken_report("sarif")).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The check can fail: a result without its message is refused.
    let mut broken = doc.clone();
    broken["runs"][0]["results"][0].as_object_mut().unwrap().remove("message");
    assert!(!validator.is_valid(&broken));

    // Nothing the standard does not define: with every object of the schema closed, the
    // log still validates (a consumer's typed reader would drop an unknown property).
    let closed = jsonschema::options()
        .should_validate_formats(true)
        .build(&closed_objects(schema))
        .expect("the closed OASIS schema compiles");
    let errors: Vec<String> = closed.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let mut extra = doc.clone();
    extra["runs"][0]["results"][0]["severity"] = json!("error");
    assert!(!closed.is_valid(&extra), "a property SARIF does not define is refused");
}

/// `schema` with `"additionalProperties": false` on every subschema that lists
/// `properties` and does not say otherwise.
fn closed_objects(mut schema: Value) -> Value {
    fn close(value: &mut Value) {
        match value {
            Value::Object(map) => {
                if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                    map.insert("additionalProperties".into(), Value::Bool(false));
                }
                for (key, sub) in map.iter_mut() {
                    match (key.as_str(), sub) {
                        // Maps of names to schemas: each value is a schema, the map is not.
                        ("properties" | "definitions" | "$defs", Value::Object(named)) => {
                            named.values_mut().for_each(close)
                        }
                        (_, sub) => close(sub),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(close),
            _ => {}
        }
    }
    close(&mut schema);
    schema
}

#[test]
#[ignore = "needs ../shared/peer/ci-formats/junit-10.xsd and xmllint; .ci/run runs it"]
fn junit_output_validates_against_jenkins_junit_10_xsd() {
    let xsd = ci_format("junit-10.xsd");
    let xml = broken_report("junit");
    assert!(xml.contains("<failure"), "{xml}");
    xmllint(&xsd, &xml);
    // A hostile report too: escaped text, notes as properties.
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("broken"), dir.path());
    std::fs::write(dir.path().join("contracts/odd & <x>.json"), "{\"a\": \u{7f}\"").unwrap();
    let out = Out::of(pactum_in(dir.path()).args(["validate", "--format", "junit"]));
    xmllint(&xsd, &out.stdout);
    // The check can fail: the `file` attribute the issue found is refused.
    let with_file = xml.replacen("<testcase name=", "<testcase file=\"a\" name=", 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.xml");
    std::fs::write(&file, with_file).unwrap();
    let status = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(&file)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "junit-10.xsd must refuse a `file` attribute on <testcase>");
}

#[test]
#[ignore = "needs ../shared/peer/ci-formats/surefire-test-report.xsd and xmllint; .ci/run runs it"]
fn junit_test_suite_validates_against_the_surefire_schema() {
    let xsd = ci_format("surefire-test-report.xsd");
    let xml = broken_report("junit");
    // Surefire's reports are one <testsuite>: ours, taken out of <testsuites>.
    let start = xml.find("<testsuite ").unwrap();
    let end = xml.find("</testsuite>").unwrap() + "</testsuite>".len();
    let suite = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}\n", &xml[start..end]);
    assert!(suite.contains("<property name=\"note\"") || !xml.contains("<property"));
    xmllint(&xsd, &suite);
}

// --- Exact bytes --------------------------------------------------------------------------

/// A project whose contract id carries a DEL and an escape sequence: every finding about
/// it quotes them.
fn tree_with_control_characters() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("good"), dir.path());
    let path = dir.path().join("contracts/odd.json");
    std::fs::write(
        &path,
        "{\"contract_id\": \"PRC-\u{7f}\\u001b[2J\", \"version\": \"1.0.0\", \"prompt_pack_id\": \
         \"PRM-X-001\", \"boundary\": {\"max_tokens\": 1, \"temperature\": 0}}",
    )
    .unwrap();
    dir
}

#[test]
fn machine_formats_are_written_byte_for_byte_when_stdout_is_a_pipe() {
    let dir = tree_with_control_characters();
    for format in ["json", "sarif", "junit"] {
        let out = pactum_in(dir.path()).args(["validate", "--format", format]).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let bytes = &out.stdout;
        assert!(bytes.contains(&0x7f), "{format}: the DEL was stripped");
        if format == "junit" {
            // XML 1.0 cannot carry ESC at all: it becomes U+FFFD, never an escape sequence.
            assert!(!bytes.contains(&0x1b), "{format}");
        }
    }
    // JSON strings carry ESC escaped (`\u001b`), as JSON requires, and the value reads
    // back exactly.
    let out = Out::of(pactum_in(dir.path()).args(["validate", "--format", "json"]));
    let doc = out.json();
    let message = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["file"] == "contracts/odd.json" && d["code"] == "contract_schema_invalid")
        .expect("a finding about the odd contract")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("PRC-\u{7f}"), "{message:?}");
}

#[test]
fn human_formats_show_control_characters_escaped() {
    let dir = tree_with_control_characters();
    for format in ["text", "github"] {
        let out = pactum_in(dir.path()).args(["validate", "--format", format]).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.contains('\u{7f}') && !text.contains('\u{1b}'), "{format}: {text:?}");
        assert!(text.contains("PRC-\\u{7f}\\u{1b}[2J"), "{format}: {text}");
    }
}

// --- Streams and argument errors -----------------------------------------------------------

/// Reads lines from a child's stdout on a thread, so the test can wait with a deadline.
fn line_reader(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[test]
fn watch_with_json_writes_one_compact_document_per_line() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("good"), dir.path());
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("pactum"))
        .args(["validate", "--watch", "--format", "json"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = line_reader(&mut child);
    let deadline = Duration::from_secs(60);
    let first = lines.recv_timeout(deadline).expect("a first report");
    let doc: Value = serde_json::from_str(&first).expect("one JSON document on one line");
    assert_eq!(doc["ok"], true, "{first}");

    // Break a contract; keep editing until the watcher's report arrives (it may still be
    // setting up its watches when the first edit lands).
    let contract = std::fs::read_dir(dir.path().join("contracts"))
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .map(|e| std::fs::read_dir(e.path()).unwrap().flatten().next().unwrap().path())
        .unwrap();
    let started = Instant::now();
    let second = loop {
        std::fs::write(&contract, "{ broken").unwrap();
        if let Ok(line) = lines.recv_timeout(Duration::from_secs(2)) {
            break line;
        }
        assert!(started.elapsed() < deadline, "no report after the change");
    };
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    let doc: Value = serde_json::from_str(&second).expect("the second line is one document");
    assert_eq!(doc["ok"], false, "{second}");
    assert!(
        doc["diagnostics"].as_array().unwrap().iter().any(|d| d["code"] == "contract_parse_error")
    );
    assert!(!second.contains("  "), "compact: {second}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("re-validating"), "the change notice is on stderr: {stderr}");
}

#[test]
fn argument_errors_under_json_are_one_json_document() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["validate", "--json", "--strictt"][..],
        &["validate", "--format", "yaml"],
        &["resolve", "--format", "json"],
        &["registry", "--json", "frobnicate"],
        &["--json", "nosuchcommand"],
        &["render", "PRC-X-001", "--format=json"],
    ] {
        let out = Out::of(pactum_in(dir.path()).args(args));
        out.status(2);
        if args.contains(&"yaml") {
            // `--format yaml` is the error itself: nothing asked for JSON.
            assert!(out.stdout.is_empty(), "{args:?}: {out}");
            assert!(out.stderr.contains("yaml"), "{args:?}: {out}");
            continue;
        }
        let doc = out.json();
        assert_eq!(doc["ok"], false, "{args:?}");
        assert_eq!(doc["code"], "usage_error", "{args:?}");
        let message = doc["message"].as_str().unwrap();
        assert!(message.contains("--help"), "{args:?}: {message}");
        assert!(out.stderr.is_empty(), "{args:?}: {out}");
    }
    // Without JSON asked for, clap's message goes to stderr as before.
    let out = Out::of(pactum_in(dir.path()).args(["validate", "--strictt"]));
    out.status(2);
    assert!(out.stdout.is_empty() && out.stderr.contains("--strictt"), "{out}");
}

/// The JSON form of an argument error keeps clap's words (what is missing, the tips) on
/// one line and names the exact subcommand's help; JSON is asked for by `--json` or
/// `--format json` before a `--` only.
#[test]
fn json_usage_errors_keep_clap_s_words_and_json_is_asked_for_before_a_double_dash_only() {
    let dir = tempfile::tempdir().unwrap();
    let message = |args: &[&str]| {
        let out = Out::of(pactum_in(dir.path()).args(args));
        out.status(2);
        let doc = out.json();
        assert_eq!(doc["code"], "usage_error", "{args:?}");
        doc["message"].as_str().unwrap().to_string()
    };
    let run = message(&["run", "--json"]);
    assert!(run.contains("were not provided: <WO>..."), "{run}");
    assert!(run.ends_with("run `pactum run --help` for the usage"), "{run}");
    let promote = message(&["registry", "promote", "--json"]);
    assert!(promote.contains("<PIN>"), "{promote}");
    assert!(promote.contains("`pactum registry promote --help`"), "{promote}");
    let unknown = message(&["validate", "--strictt", "--json"]);
    assert!(unknown.contains("'--strictt'") && unknown.contains("`pactum validate --help`"));
    for text in [&run, &promote, &unknown] {
        assert!(!text.contains('\n') && !text.contains(":;"), "{text}");
    }
    for args in [
        &["validate", "--format", "json", "--strictt"][..],
        &["validate", "--format=json", "--strictt"],
    ] {
        message(args);
    }
    // `json` as a path, `--json` after `--`: nothing asked for JSON.
    for args in [
        &["validate", "--format", "sarif", "json", "--strictt"][..],
        &["validate", "json", "--strictt"],
        &["render", "PRC-X-001", "--strictt", "--", "--json"],
        &[],
    ] {
        let out = Out::of(pactum_in(dir.path()).args(args));
        out.status(2);
        assert!(out.stdout.is_empty(), "{args:?}: {out}");
        assert!(!out.stderr.trim_start().starts_with('{'), "{args:?}: {out}");
    }
}

// --- Terminal and CI output ---------------------------------------------------------------

/// No line a GitHub runner would read as a command (other than pactum's own annotations),
/// and no control character but line feed and tab.
fn assert_inert(what: &str, text: &str, annotations_allowed: bool) {
    for line in text.lines() {
        let trimmed = line.trim_start();
        let ours = annotations_allowed
            && ["::error ", "::warning ", "::notice ", "::error::", "::warning::", "::notice::"]
                .iter()
                .any(|p| line.starts_with(p));
        assert!(ours || !trimmed.starts_with("::"), "{what}: a workflow command: {line:?}");
        assert!(!line.contains("##["), "{what}: a legacy workflow command: {line:?}");
        assert!(
            !line.chars().any(|c| c.is_control() && c != '\t'),
            "{what}: a control character: {line:?}"
        );
    }
}

#[test]
fn findings_from_hostile_files_cannot_command_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture("good"), dir.path());
    // A key with a line break and a forged command: the schema finding quotes it.
    std::fs::write(
        dir.path().join("contracts/hostile.json"),
        "{\"contract_id\": \"PRC-H-001\", \"version\": \"1.0.0\", \"prompt_pack_id\": \
         \"PRM-H-001\", \"boundary\": {\"max_tokens\": 1, \"temperature\": 0, \
         \"x\\n::error file=README.md::forged\\r\\n##[add-mask]k\\u001b[2J\": 1}}",
    )
    .unwrap();
    for format in ["text", "github"] {
        let out = Out::of(pactum_in(dir.path()).args(["validate", "--format", format]));
        out.status(1);
        assert!(out.stdout.contains("forged"), "{format}: the finding is shown: {out}");
        assert_inert(format, &out.stdout, format == "github");
        if format == "github" {
            let files = annotation_files(&out.stdout);
            assert!(files.iter().all(|f| f == "contracts/hostile.json"), "{files:?}");
        }
    }
}

#[test]
fn render_extract_and_run_escape_what_files_and_models_say() {
    let p = harness::Project::new();
    p.register_report();

    // render: the input is inserted verbatim into the prompt; the text output escapes it.
    let input = p.write_json(
        "input.json",
        &json!({"subject": "x\n::error::forged\n##[set-output name=a]b", "audience": "\u{1b}[2Jall"}),
    );
    let input = input.to_str().unwrap();
    let text = p.pactum(&["render", "PRC-REPORT-001", "--input", input], &[]);
    text.status(0);
    assert!(text.stdout.contains("forged"), "{text}");
    assert_inert("render", &text.stdout, false);
    let json = p.pactum(&["render", "PRC-REPORT-001", "--input", input, "--json"], &[]);
    let messages = json.json()["messages"].to_string();
    assert!(messages.contains("\\n::error::forged"), "JSON keeps the text exactly: {messages}");

    // extract: a value from a model reply.
    let reply = "{\"a\": \"##[error]forged \u{7f}\u{9b}31m\"}";
    let text = p.pactum_stdin(&["extract"], &[], Some(reply));
    text.status(0);
    assert_inert("extract", &text.stdout, false);
    assert!(text.stdout.contains("##\\u{5b}error]forged \\u{7f}\\u{9b}31m"), "{text}");
    let json = p.pactum_stdin(&["extract", "--json"], &[], Some(reply));
    assert!(json.stdout.contains('\u{7f}'), "JSON output is exact: {json}");
    assert_eq!(json.json()["value"]["a"], "##[error]forged \u{7f}\u{9b}31m");

    // run: the model's output, and an invalid reply's error message.
    let wo = json!({"work_order_id": "WO-HOSTILE-1", "kind": "exchange",
        "contract": "PRC-REPORT-001@1.0.0", "input": {"subject": "s", "audience": "a"},
        "provider": {"fixtures": "fx.json"}});
    let wo = p.write_json("wo/hostile.json", &wo);
    p.fixtures(
        "fx.json",
        json!([{"contract_id": "PRC-REPORT-001",
                "text": "{\"summary\": \"done ##[error]forged\\u007f\\n::warning::x\"}"}]),
    );
    let out = p.run(&[&wo], &[], &[]);
    out.status(0);
    assert!(out.stdout.contains("forged"), "{out}");
    assert_inert("run stdout", &out.stdout, false);
    assert_inert("run stderr", &out.stderr, false);

    let wo2 = json!({"work_order_id": "WO-HOSTILE-2", "kind": "exchange",
        "contract": "PRC-REPORT-001@1.0.0", "input": {"subject": "s", "audience": "a"},
        "provider": {"fixtures": "fx2.json"}});
    let wo2 = p.write_json("wo/hostile2.json", &wo2);
    p.fixtures(
        "fx2.json",
        json!([{"contract_id": "PRC-REPORT-001", "text": "{\"summary\": 5, \"\\n::error::k\\u001b\": 1}"},
               {"contract_id": "PRC-REPORT-001", "text": "{\"summary\": 5, \"\\n::error::k\\u001b\": 1}"},
               {"contract_id": "PRC-REPORT-001", "text": "{\"summary\": 5, \"\\n::error::k\\u001b\": 1}"}]),
    );
    let out = p.run(&[&wo2], &[], &[]);
    assert_inert("failed run stdout", &out.stdout, false);
    assert_inert("failed run stderr", &out.stderr, false);
}

#[test]
fn registry_and_resolve_text_output_is_escaped() {
    let p = harness::Project::new();
    p.register_report();
    // A file name that carries a forged command, registered as a draft.
    let name = "contracts/x\u{1b}[1m##[error]y.json";
    let mut contract: Value = serde_json::from_str(
        &std::fs::read_to_string(harness::fixture("report/contract.json")).unwrap(),
    )
    .unwrap();
    contract["version"] = json!("1.0.1");
    let path = p.write_json(name, &contract);
    let out = p.pactum(&["registry", "add", path.to_str().unwrap()], &[]);
    out.status(0);
    assert!(out.stdout.contains("registered"), "{out}");
    assert_inert("registry add", &out.stdout, false);
    let out = p.pactum(&["resolve", "PRC-REPORT-001@1.0.1", "--allow-draft"], &[]);
    out.status(0);
    assert_inert("resolve", &out.stdout, false);
    assert!(out.stdout.contains("x\\u{1b}[1m##\\u{5b}error]y.json"), "{out}");
    let out = p.pactum(&["resolve", "PRC-REPORT-001@1.0.1", "--allow-draft", "--json"], &[]);
    assert_eq!(out.json()["path"], name, "JSON keeps the path exactly");
    let sha = sha256_hex(&std::fs::read(&path).unwrap());
    assert_eq!(out.json()["sha256"], sha);
}
