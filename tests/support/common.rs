//! What every CLI test shares: the checkout, prerequisites outside it (for tests that
//! `#[ignore]` without them), copying a project tree, SHA-256 hex, an independent check of a
//! ledger's hash chain, the `pactum` binary with a controlled environment, what one
//! command did, and running a table of named cases.
//!
//! Include it with `#[path = "support/common.rs"] mod common;` (the harnesses under
//! `tests/fixtures/` include it themselves and re-export it).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Environment variables that choose or configure a provider; every command starts without
/// them so the developer's environment never leaks into a test.
pub const PROVIDER_VARS: [&str; 11] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "PACTUM_TRUST_CONFIG",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "PACTUM_MODEL",
    "PACTUM_PROVIDER",
];

/// This crate's checkout.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// --- Prerequisites outside the repository -------------------------------------------------
//
// A test that needs something this repository does not hold (the peer material in
// `../shared/`, an external tool such as util-linux `script`) is marked
// `#[ignore = "needs …; .ci/run runs it"]`, so a plain `cargo test` (a user's clean clone)
// reports it as ignored, never as passed. `.ci/run` runs these tests explicitly
// (`cargo test -- --ignored`); CI has `../shared/` beside the clone and the tools installed.
// Inside such a test, `require_tool` / `require_shared` fail it with a message naming what
// is missing: when the test runs, a missing prerequisite is a failure, not a skip.

/// `tool`, checked to run (`tool --version`); fails the test when it is not installed.
pub fn require_tool<'a>(tool: &'a str, what_for: &str) -> &'a str {
    match std::process::Command::new(tool).arg("--version").output() {
        Ok(_) => tool,
        Err(e) => panic!(
            "this test needs `{tool}` ({what_for}), which does not run ({e}); install it (CI \
             must have it), or run the tests without --ignored"
        ),
    }
}

/// `../shared/<rel>` beside the checkout; fails the test when it is absent.
pub fn require_shared(rel: &str) -> PathBuf {
    let path = repo().join("..").join("shared").join(rel);
    assert!(
        path.exists(),
        "this test needs {} (the peer material CI keeps beside the clone), which is absent; \
         put it there, or run the tests without --ignored",
        path.display()
    );
    path
}

/// Copies the folder `from` to `to`, recursively; from the checkout, only what git would
/// commit (its files, tracked or new, but none that git ignores). So a test starts from the
/// tree as it is committed, whatever was run in the checkout before: running the README's
/// eval example leaves a `.pactum/` ledger in `examples/eval-classify/`, which a copy of
/// that folder must not take along. A folder outside any git work tree (a temporary one) is
/// copied whole.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let Some(files) = committable_files(from) else { return copy_everything(from, to) };
    for rel in files {
        let source = from.join(&rel);
        // Listed by git but deleted in the work tree: not part of the tree as it is.
        if !source.is_file() {
            continue;
        }
        let target = to.join(&rel);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&source, &target)
            .unwrap_or_else(|e| panic!("copying {}: {e}", source.display()));
    }
}

/// The files under `dir` that git tracks or would add (`git ls-files --cached --others
/// --exclude-standard`), relative to `dir`; `None` when `dir` is in no git work tree.
fn committable_files(dir: &Path) -> Option<Vec<PathBuf>> {
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."])
        .current_dir(dir)
        .output()
        .ok()
        .filter(|out| out.status.success())?;
    let mut files: Vec<PathBuf> = out
        .stdout
        .split(|&b| b == 0)
        .filter(|rel| !rel.is_empty())
        .map(|rel| PathBuf::from(String::from_utf8(rel.to_vec()).unwrap()))
        .collect();
    files.sort();
    files.dedup();
    Some(files)
}

fn copy_everything(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_everything(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Copies the repository's registry.json, contracts/ and prompt_packs/ into `to`.
pub fn copy_shipped(to: &Path) {
    std::fs::copy(repo().join("registry.json"), to.join("registry.json")).unwrap();
    copy_tree(&repo().join("contracts"), &to.join("contracts"));
    copy_tree(&repo().join("prompt_packs"), &to.join("prompt_packs"));
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Re-checks a ledger file's hash chain without the library's digest or JSON code: every
/// line must be a record whose `hash` is the SHA-256 of the line's own bytes with the
/// `"hash":"…"` member cut out (the line is written in canonical form, so those bytes are
/// what was hashed), whose `prev` is the previous line's `hash` (64 zeros first) and whose
/// `seq` counts from 1. Returns the number of records.
pub fn check_ledger_chain_independently(path: &Path) -> usize {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the ledger {}: {e}", path.display()));
    assert!(text.ends_with('\n'), "{}: the last record is cut off", path.display());
    let mut prev = "0".repeat(64);
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let record: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{}:{n}: not JSON ({e})", path.display()));
        let hash = record["hash"].as_str().unwrap_or_else(|| panic!("line {n} has no hash"));
        assert!(
            hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
            "line {n}: hash is not lowercase hex SHA-256: {hash}"
        );
        let member = format!("\"hash\":\"{hash}\"");
        assert_eq!(line.matches(&member).count(), 1, "line {n}: {line}");
        let without = if line.contains(&format!(",{member}")) {
            line.replacen(&format!(",{member}"), "", 1)
        } else {
            line.replacen(&format!("{member},"), "", 1)
        };
        assert_eq!(sha256_hex(without.as_bytes()), hash, "line {n}: the hash does not recompute");
        assert_eq!(record["prev"], prev.as_str(), "line {n}: prev is not the previous hash");
        assert_eq!(record["seq"], n, "line {n}: seq");
        prev = hash.to_string();
        count = n;
    }
    count
}

/// The binary, in `dir`, without colour and without provider settings from the environment.
pub fn pactum_in(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("pactum").unwrap();
    cmd.current_dir(dir).env("NO_COLOR", "1").env_remove("CLICOLOR_FORCE");
    for var in PROVIDER_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// The one work order's result in a `run --json` document (`{"ok", "results": [R]}`);
/// a document without `results` (a failure before any work order ran) as it is.
pub fn single_result(doc: Value) -> Value {
    match doc.get("results").and_then(Value::as_array) {
        Some(results) if results.len() == 1 => results[0].clone(),
        _ => doc,
    }
}

/// What one command did.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Out {
    fn from(output: std::process::Output) -> Out {
        Out {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Out {
    /// Runs `cmd` to completion.
    pub fn of(cmd: &mut Command) -> Out {
        Out::from(cmd.output().unwrap())
    }

    /// stdout as one JSON document (the test fails with the output when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{self}"))
    }

    /// Asserts the exit status, showing the output when it differs.
    pub fn status(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit status:\n{self}");
        self
    }
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {}\n--- stdout\n{}\n--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

// --- Tables of cases -----------------------------------------------------------------------

/// Runs `check` on every case of a table-driven test, each to its end (a failing case does
/// not hide the ones after it), then fails naming every case that failed, with its message.
/// `name` gives a case's name, which is what a failure is reported under.
pub fn check_cases<C>(cases: &[C], name: impl Fn(&C) -> &str, check: impl Fn(&C)) {
    let outcomes = cases.iter().map(|case| {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(case)));
        (name(case).to_string(), outcome)
    });
    report_cases(cases.len(), outcomes.collect());
}

/// [`check_cases`] with every case at once, one thread each: for cases that wait on servers
/// and deadlines, not on the processor.
pub fn check_cases_at_once<C: Sync>(
    cases: &[C],
    name: impl Fn(&C) -> &str + Sync,
    check: impl Fn(&C) + Sync,
) {
    let outcomes = std::thread::scope(|scope| {
        let handles: Vec<_> = cases
            .iter()
            .map(|case| {
                let check = &check;
                (name(case).to_string(), scope.spawn(move || check(case)))
            })
            .collect();
        handles.into_iter().map(|(name, handle)| (name, handle.join())).collect()
    });
    report_cases(cases.len(), outcomes);
}

/// Fails naming every case whose check panicked, with its message.
fn report_cases(count: usize, outcomes: Vec<(String, std::thread::Result<()>)>) {
    let failed: Vec<String> = outcomes
        .into_iter()
        .filter_map(|(name, outcome)| {
            outcome.err().map(|e| {
                let why = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                format!("{name}: {why}")
            })
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {count} cases failed:\n{}",
        failed.len(),
        failed.join("\n\n")
    );
}

/// The edit `pactum new contract` asks its author for: every scaffold placeholder in the
/// JSON files under `root`'s `contracts/` and `prompt_packs/` written as text of the
/// author's own (the placeholder's words without its parentheses), as a test's project
/// needs before it promotes what it scaffolded (`scaffold_placeholder`).
pub fn write_placeholders(root: &Path) {
    for folder in ["contracts", "prompt_packs"] {
        let mut stack = vec![root.join(folder)];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let mut written = text.clone();
                for placeholder in pactum::scaffold::placeholder::ALL {
                    let words = placeholder.trim_start_matches('(').trim_end_matches(')');
                    written = written.replace(placeholder, words);
                }
                if written != text {
                    std::fs::write(&path, written).unwrap();
                }
            }
        }
    }
}
