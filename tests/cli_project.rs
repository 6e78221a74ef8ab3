//! A project in git (SPEC §17), through the binary and the real `git`: `pactum init`,
//! `new version`, drafts as working copies, `registry discard`/`list`, and the registry
//! merge driver on two branches that each add and promote contracts.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Out, pactum_in, repo};
use serde_json::{Value, json};

/// The folder holding the built binary, so git can run the merge driver as `pactum`.
fn bin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pactum")).parent().unwrap().to_path_buf()
}

#[allow(clippy::disallowed_methods)] // a test reads its own environment
fn path_with_bin() -> String {
    let old = std::env::var("PATH").unwrap_or_default();
    format!("{}:{old}", bin_dir().display())
}

/// `git ARGS` in `dir`, isolated from the machine's git config, with `pactum` on PATH.
fn git(dir: &Path, args: &[&str]) -> Out {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", dir.join(".no-global-gitconfig"))
        .env("GIT_AUTHOR_NAME", "Dev")
        .env("GIT_AUTHOR_EMAIL", "dev@team.example")
        .env("GIT_COMMITTER_NAME", "Dev")
        .env("GIT_COMMITTER_EMAIL", "dev@team.example")
        .env("PATH", path_with_bin())
        .env("PACTUM_ACTOR", "merger@team.example")
        .output()
        .expect("git runs");
    out.into()
}

fn git_ok(dir: &Path, args: &[&str]) -> Out {
    let out = git(dir, args);
    assert_eq!(out.code, 0, "git {args:?} failed:\n{}\n{}", out.stdout, out.stderr);
    out
}

/// A fresh git repository (on branch `main`) in a temp folder; the project lives in `sub`
/// inside it (the repository's top level when `sub` is empty).
struct Repo {
    _tmp: tempfile::TempDir,
    top: PathBuf,
    root: PathBuf,
}

impl Repo {
    fn new(sub: &str) -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("repo");
        std::fs::create_dir_all(&top).unwrap();
        git_ok(&top, &["init", "-q", "-b", "main"]);
        git_ok(&top, &["config", "user.email", "dev@team.example"]);
        git_ok(&top, &["config", "user.name", "Dev"]);
        let root = if sub.is_empty() { top.clone() } else { top.join(sub) };
        Repo { _tmp: tmp, top, root }
    }

    /// `pactum ARGS` in the project root, as `actor`.
    fn run_as(&self, actor: &str, args: &[&str]) -> Out {
        let mut cmd = pactum_in(&self.root);
        cmd.env("PACTUM_ACTOR", actor).env("PATH", path_with_bin()).args(args);
        let out: Out = cmd.output().unwrap().into();
        // What the author does next: the scaffold's placeholders written.
        if args.starts_with(&["new", "contract"]) && out.code == 0 {
            crate::common::write_placeholders(&self.root);
        }
        out
    }

    fn run(&self, args: &[&str]) -> Out {
        self.run_as("dev@team.example", args)
    }

    fn ok(&self, args: &[&str]) -> Out {
        let out = self.run(args);
        assert_eq!(out.code, 0, "pactum {args:?}:\n{}\n{}", out.stdout, out.stderr);
        out
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        let v = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
        (out.code, v)
    }

    fn registry(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.root.join("registry.json")).unwrap())
            .unwrap()
    }

    fn commit_all(&self, message: &str) {
        git_ok(&self.top, &["add", "-A"]);
        git_ok(&self.top, &["commit", "-q", "-m", message]);
    }

    /// Writes a contract file over the scaffold with one more optional input (a minor change).
    fn add_optional_input(&self, rel: &str, name: &str) {
        let path = self.root.join(rel);
        let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        c["input_schema"]["properties"][name] = json!({"type": "string"});
        std::fs::write(&path, serde_json::to_string_pretty(&c).unwrap() + "\n").unwrap();
    }
}

fn actions(registry: &Value) -> Vec<String> {
    registry["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{} {}", e["action"].as_str().unwrap(), subject(e)))
        .collect()
}

fn subject(e: &Value) -> String {
    match (e["id"].as_str(), e["version"].as_str()) {
        (Some(id), Some(v)) => format!("{id}@{v}"),
        _ => String::new(),
    }
}

// ---------------------------------------------------------------------------------------
// init
// ---------------------------------------------------------------------------------------

#[test]
fn init_creates_a_project_registers_the_merge_driver_and_is_idempotent() {
    let r = Repo::new("");
    let out = r.ok(&["init"]);
    for created in [
        "registry.json",
        "contracts/",
        "prompt_packs/",
        "work_orders/",
        ".gitignore",
        ".gitattributes",
    ] {
        assert!(out.stdout.contains(&format!("created   {created}")), "{created}: {}", out.stdout);
    }
    assert!(out.stdout.contains("registered the registry.json merge driver"), "{}", out.stdout);
    // The embedded schemas, byte for byte.
    for (name, text) in [
        ("prompt_contract.schema.json", include_str!("../schemas/prompt_contract.schema.json")),
        ("registry.schema.json", include_str!("../schemas/registry.schema.json")),
        ("work_order.schema.json", include_str!("../schemas/work_order.schema.json")),
    ] {
        assert_eq!(std::fs::read_to_string(r.root.join("schemas").join(name)).unwrap(), text);
    }
    let gitignore = std::fs::read_to_string(r.root.join(".gitignore")).unwrap();
    assert!(
        gitignore.lines().any(|l| l == ".*.lock") && gitignore.lines().any(|l| l == ".pactum/")
    );
    let attributes = std::fs::read_to_string(r.root.join(".gitattributes")).unwrap();
    assert!(attributes.lines().any(|l| l == "registry.json merge=pactum-registry"), "{attributes}");
    let driver = git_ok(&r.top, &["config", "--get", "merge.pactum-registry.driver"]);
    assert_eq!(driver.stdout.trim(), "pactum registry merge %O %A %B");
    assert_eq!(r.registry()["$schema"], json!("schemas/registry.schema.json"));
    assert_eq!(r.registry()["contracts"], json!([]));
    r.ok(&["validate"]);
    r.ok(&["registry", "verify"]);

    // Twice: nothing changes, nothing is overwritten.
    std::fs::write(r.root.join("schemas/registry.schema.json"), "{}\n").unwrap();
    let before = std::fs::read(r.root.join("registry.json")).unwrap();
    let out = r.ok(&["init"]);
    assert!(!out.stdout.contains("created"), "{}", out.stdout);
    assert!(
        out.stdout.contains("kept      schemas/registry.schema.json (differs"),
        "{}",
        out.stdout
    );
    assert_eq!(std::fs::read(r.root.join("registry.json")).unwrap(), before);
    assert_eq!(
        std::fs::read_to_string(r.root.join("schemas/registry.schema.json")).unwrap(),
        "{}\n"
    );
    // `schemas --write` refreshes them.
    let out = r.ok(&["schemas", "--write", "schemas"]);
    assert!(out.stdout.contains("refreshed schemas/registry.schema.json"), "{}", out.stdout);
    assert_eq!(
        std::fs::read_to_string(r.root.join("schemas/registry.schema.json")).unwrap(),
        include_str!("../schemas/registry.schema.json")
    );
}

#[test]
fn init_appends_missing_lines_to_existing_git_files_and_keeps_the_rest() {
    let r = Repo::new("");
    std::fs::write(r.root.join(".gitignore"), "target/\n.pactum/").unwrap();
    std::fs::write(r.root.join(".gitattributes"), "*.png binary\n").unwrap();
    let out = r.ok(&["init"]);
    assert!(
        out.stdout.contains("updated   .gitignore (added .*.lock, work_orders/**/out/)"),
        "{}",
        out.stdout
    );
    assert_eq!(
        std::fs::read_to_string(r.root.join(".gitignore")).unwrap(),
        "target/\n.pactum/\n.*.lock\nwork_orders/**/out/\n"
    );
    assert_eq!(
        std::fs::read_to_string(r.root.join(".gitattributes")).unwrap(),
        "*.png binary\nregistry.json merge=pactum-registry\n"
    );
}

#[test]
fn init_outside_git_creates_the_project_and_says_how_to_get_the_driver() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("new-project");
    let out: Out = pactum_in(tmp.path())
        .env("GIT_CEILING_DIRECTORIES", tmp.path())
        .args(["init", "new-project"])
        .output()
        .unwrap()
        .into();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(dir.join("registry.json").is_file() && dir.join("schemas").is_dir());
    assert!(out.stdout.contains("not in a git work tree"), "{}", out.stdout);
}

#[test]
fn init_over_a_broken_registry_refuses_with_its_location() {
    let r = Repo::new("");
    std::fs::write(
        r.root.join("registry.json"),
        "{\"registry_version\": 1,\n  \"contracts\": [}\n",
    )
    .unwrap();
    let out = r.run(&["init"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stderr.contains("error[registry_invalid]"), "{}", out.stderr);
    assert!(out.stderr.contains("registry.json:2:"), "{}", out.stderr);
    // Nothing else was created.
    assert!(!r.root.join("schemas").exists());
}

#[test]
fn init_kernel_registers_the_role_contracts_active_and_a_kernel_work_order_runs() {
    let r = Repo::new("");
    let out = r.ok(&["init", "--kernel"]);
    assert!(
        out.stdout.contains("registered 52 kernel contracts and packs (active)"),
        "{}",
        out.stdout
    );
    let reg = r.registry();
    // 13 roles at 1.0.0, and 12 of them again at 1.1.0 (the versions that take the run
    // limits), and the judge; each with its pack.
    assert_eq!(reg["contracts"].as_array().unwrap().len(), 26);
    assert!(
        reg["contracts"].as_array().unwrap().iter().any(|e| e["contract_id"] == "PRC-JUDGE-001")
    );
    let plan: Vec<&Value> = reg["contracts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["contract_id"] == "PRC-PLAN-001")
        .map(|e| &e["version"])
        .collect();
    assert_eq!(plan, ["1.0.0", "1.1.0"]);
    assert!(reg["contracts"].as_array().unwrap().iter().all(|e| e["state"] == json!("active")));
    r.ok(&["validate"]);
    r.ok(&["registry", "verify"]);
    // The demo kernel work order, with its scripted replies, runs in the new project.
    std::fs::create_dir_all(r.root.join("fixtures")).unwrap();
    std::fs::copy(repo().join("fixtures/demo_sum.json"), r.root.join("fixtures/demo_sum.json"))
        .unwrap();
    std::fs::copy(
        repo().join("work_orders/WO-DEMO-SUM-001.json"),
        r.root.join("work_orders/WO-DEMO-SUM-001.json"),
    )
    .unwrap();
    let (code, v) = r.json(&["run", "work_orders/WO-DEMO-SUM-001.json"]);
    assert_eq!(code, 0, "{v:#}");
    let v = common::single_result(v);
    assert!(v["final_answer"]["answer_text"].as_str().unwrap().contains("15"), "{v:#}");
    // Again: the kernel files are kept and not registered twice.
    let out = r.ok(&["init", "--kernel"]);
    assert!(!out.stdout.contains("registered"), "{}", out.stdout);
    assert_eq!(r.registry()["contracts"].as_array().unwrap().len(), 26);
}

// ---------------------------------------------------------------------------------------
// versions and drafts
// ---------------------------------------------------------------------------------------

#[test]
fn the_version_workflow_from_new_contract_to_remove() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);

    let out = r.ok(&["new", "version", "PRC-SUMMARIZE-001@1.1.0"]);
    assert!(out.stdout.contains("created contracts/summarize/1.1.0.json"), "{}", out.stdout);
    let rel = "contracts/summarize/1.1.0.json";
    let text = std::fs::read_to_string(r.root.join(rel)).unwrap();
    let c: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(c["version"], json!("1.1.0"));
    assert_eq!(c["$schema"], json!("../../schemas/prompt_contract.schema.json"));
    assert!(r.root.join("contracts/summarize").join(c["$schema"].as_str().unwrap()).is_file());
    // Only the version changed: the rest of the file is byte for byte the 1.0.0 file.
    let old = std::fs::read_to_string(r.root.join("contracts/summarize/1.0.0.json")).unwrap();
    assert_eq!(text.replace("\"1.1.0\"", "\"1.0.0\""), old);

    // Editing the draft is not an error and writes no history.
    let events = actions(&r.registry()).len();
    r.add_optional_input(rel, "tone");
    r.ok(&["validate"]);
    assert_eq!(actions(&r.registry()).len(), events);
    let (_, diff) = r.json(&["diff", "PRC-SUMMARIZE-001@1.0.0", "PRC-SUMMARIZE-001@1.1.0"]);
    assert_eq!(diff["required_bump"], json!("minor"), "{diff:#}");
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.1.0"]);
    r.ok(&["registry", "deprecate", "PRC-SUMMARIZE-001@1.0.0", "--successor", "1.1.0"]);
    r.ok(&["registry", "remove", "PRC-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "verify"]);
    r.ok(&["validate"]);
    let reg = r.registry();
    assert!(
        reg["history"].as_array().unwrap().iter().all(|e| e["actor"] == json!("dev@team.example"))
    );
}

#[test]
fn new_version_with_pack_copies_the_pack_and_pins_it() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    let (code, v) = r.json(&["new", "version", "PRC-SUMMARIZE-001@2.0.0", "--pack"]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["prompt_pack"]["version"], json!("2.0.0"));
    let pack: Value = serde_json::from_str(
        &std::fs::read_to_string(r.root.join("prompt_packs/summarize/2.0.0.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(pack["version"], json!("2.0.0"));
    let c: Value = serde_json::from_str(
        &std::fs::read_to_string(r.root.join("contracts/summarize/2.0.0.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(c["prompt_pack_version"], json!("2.0.0"));
    r.ok(&["validate"]);
    // The new contract binds the new (draft) pack: promote the pack first, then the contract.
    let refused = r.run(&["registry", "promote", "PRC-SUMMARIZE-001@2.0.0"]);
    assert!(
        refused.stderr.contains("`pactum registry promote PRM-SUMMARIZE-001@2.0.0`"),
        "{}",
        refused.stderr
    );
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@2.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@2.0.0"]);
}

#[test]
fn init_and_new_version_never_write_through_a_symlink() {
    let outside = tempfile::tempdir().unwrap();
    // A cloned pull request whose `schemas` folder is a link out of the project.
    let r = Repo::new("");
    std::os::unix::fs::symlink(outside.path(), r.root.join("schemas")).unwrap();
    let out = r.run(&["init"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("error[path_escape]"), "{}", out.stderr);
    assert!(out.stderr.contains("symlink"), "{}", out.stderr);
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing written outside");

    // A version folder that is a link: inside the project it may be read, never written
    // through; leading out of the project it is not even read.
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    let folder = r.root.join("contracts/summarize");
    let moved = r.root.join("elsewhere");
    std::fs::rename(&folder, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &folder).unwrap();
    let before = std::fs::read(r.root.join("registry.json")).unwrap();
    let (code, v) = r.json(&["new", "version", "PRC-SUMMARIZE-001@1.1.0"]);
    assert_eq!((code, v["code"].clone()), (1, json!("path_escape")), "{v:#}");
    assert!(v["message"].as_str().unwrap().contains("symlink"), "{v:#}");
    assert!(!moved.join("1.1.0.json").exists(), "nothing written through the link");
    assert_eq!(std::fs::read(r.root.join("registry.json")).unwrap(), before);

    std::fs::rename(&moved, outside.path().join("summarize")).unwrap();
    std::fs::remove_file(&folder).unwrap();
    std::os::unix::fs::symlink(outside.path().join("summarize"), &folder).unwrap();
    let (code, v) = r.json(&["new", "version", "PRC-SUMMARIZE-001@1.1.0"]);
    assert_eq!((code, v["code"].clone()), (1, json!("path_escape")), "{v:#}");
    assert!(!outside.path().join("summarize/1.1.0.json").exists());
    assert_eq!(std::fs::read(r.root.join("registry.json")).unwrap(), before);
}

#[test]
fn new_version_refuses_a_lower_or_taken_version_and_writes_nothing() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    let before = std::fs::read(r.root.join("registry.json")).unwrap();
    for (version, why) in
        [("1.0.0", "already registered (draft)"), ("0.9.0", "not higher than 1.0.0")]
    {
        let (code, v) = r.json(&["new", "version", &format!("PRC-SUMMARIZE-001@{version}")]);
        assert_eq!(code, 1, "{v:#}");
        assert_eq!(v["code"], json!("registry_transition_invalid"));
        let message = v["message"].as_str().unwrap();
        assert!(
            message.contains(why)
                && message.contains("1.0.1 (patch), 1.1.0 (minor) or 2.0.0 (major)"),
            "{message}"
        );
    }
    let (code, v) = r.json(&["new", "version", "PRC-SUMARIZE-001@2.0.0"]);
    assert_eq!((code, v["code"].clone()), (1, json!("contract_not_found")), "{v:#}");
    assert!(v["message"].as_str().unwrap().contains("did you mean PRC-SUMMARIZE-001?"), "{v:#}");
    // A file already at the new version's path is never overwritten.
    std::fs::write(r.root.join("contracts/summarize/1.1.0.json"), "mine\n").unwrap();
    let (code, v) = r.json(&["new", "version", "PRC-SUMMARIZE-001@1.1.0"]);
    assert_eq!((code, v["code"].clone()), (2, json!("io_error")), "{v:#}");
    assert_eq!(
        std::fs::read_to_string(r.root.join("contracts/summarize/1.1.0.json")).unwrap(),
        "mine\n"
    );
    assert_eq!(std::fs::read(r.root.join("registry.json")).unwrap(), before);
}

#[test]
fn discard_drops_a_draft_and_refuses_anything_else() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    r.ok(&["new", "version", "PRC-SUMMARIZE-001@1.1.0"]);
    // An active version cannot be discarded; the message names the way out.
    let (code, v) = r.json(&["registry", "discard", "PRC-SUMMARIZE-001@1.0.0"]);
    assert_eq!((code, v["code"].clone()), (1, json!("registry_transition_invalid")), "{v:#}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("pactum registry deprecate PRC-SUMMARIZE-001@1.0.0")
    );
    // Without --delete the file stays (and is then an unregistered file validate reports).
    let out = r.ok(&["registry", "discard", "PRC-SUMMARIZE-001@1.1.0"]);
    assert!(out.stdout.contains("is still there"), "{}", out.stdout);
    assert!(r.root.join("contracts/summarize/1.1.0.json").is_file());
    let (_, doc) = r.json(&["validate"]);
    assert!(
        doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == json!("contract_unregistered"))
    );
    r.ok(&["registry", "add", "contracts/summarize/1.1.0.json"]);
    let (code, v) = r.json(&["registry", "discard", "PRC-SUMMARIZE-001@1.1.0", "--delete"]);
    assert_eq!((code, v["deleted"].clone()), (0, json!(true)), "{v:#}");
    assert!(!r.root.join("contracts/summarize/1.1.0.json").exists());
    let reg = r.registry();
    assert!(actions(&reg).contains(&"discard PRC-SUMMARIZE-001@1.1.0".to_string()));
    r.ok(&["registry", "verify"]);
    r.ok(&["validate"]);
}

#[cfg(unix)]
#[test]
fn discard_delete_removes_only_what_the_draft_owns() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    let active = r.root.join("contracts/summarize/1.0.0.json");
    let active_bytes = std::fs::read(&active).unwrap();
    // A draft whose file was replaced by a link to the active version: the link goes, the
    // active file stays.
    r.ok(&["new", "version", "PRC-SUMMARIZE-001@1.1.0"]);
    let draft = r.root.join("contracts/summarize/1.1.0.json");
    std::fs::remove_file(&draft).unwrap();
    std::os::unix::fs::symlink("1.0.0.json", &draft).unwrap();
    let (code, v) = r.json(&["registry", "discard", "PRC-SUMMARIZE-001@1.1.0", "--delete"]);
    assert_eq!((code, v["deleted"].clone()), (0, json!(true)), "{v:#}");
    assert!(std::fs::symlink_metadata(&draft).is_err(), "the link is gone");
    assert_eq!(std::fs::read(&active).unwrap(), active_bytes, "its target is not");
    // A draft whose path was edited to name registry.json, pactum.toml, a file with a
    // hidden component anywhere in its path or another entry's file: refused, nothing
    // changes.
    std::fs::create_dir_all(r.root.join(".git/hooks")).unwrap();
    std::fs::write(r.root.join(".git/hooks/x.json"), "{}").unwrap();
    std::fs::create_dir_all(r.root.join("contracts/.secret")).unwrap();
    std::fs::write(r.root.join("contracts/.secret/a.json"), "{}").unwrap();
    for (i, target) in [
        "registry.json",
        "./registry.json",
        "pactum.toml",
        ".gitignore",
        ".git/hooks/x.json",
        "contracts/.secret/a.json",
        "./contracts/.secret/a.json",
        "contracts/summarize/1.0.0.json",
        "contracts/summarize/../summarize/1.0.0.json",
    ]
    .into_iter()
    .enumerate()
    {
        let version = format!("1.2.{i}");
        r.ok(&["new", "version", &format!("PRC-SUMMARIZE-001@{version}")]);
        std::fs::write(r.root.join("pactum.toml"), "").unwrap();
        let text = std::fs::read_to_string(r.root.join("registry.json")).unwrap();
        let mut reg: Value = serde_json::from_str(&text).unwrap();
        for e in reg["contracts"].as_array_mut().unwrap() {
            if e["version"] == json!(version) {
                e["path"] = json!(target);
            }
        }
        let edited = serde_json::to_string_pretty(&reg).unwrap();
        std::fs::write(r.root.join("registry.json"), &edited).unwrap();
        let (code, v) =
            r.json(&["registry", "discard", &format!("PRC-SUMMARIZE-001@{version}"), "--delete"]);
        assert_eq!((code, v["code"].clone()), (1, json!("path_escape")), "{target}: {v:#}");
        assert_eq!(
            std::fs::read_to_string(r.root.join("registry.json")).unwrap(),
            edited,
            "{target}"
        );
        for kept in [
            "registry.json",
            "pactum.toml",
            ".gitignore",
            ".git/hooks/x.json",
            "contracts/.secret/a.json",
            "contracts/summarize/1.0.0.json",
        ] {
            assert!(r.root.join(kept).is_file(), "{target}: {kept} was deleted");
        }
        // Put the entry's path back and drop it, for the next round.
        std::fs::write(r.root.join("registry.json"), &text).unwrap();
        r.ok(&["registry", "discard", &format!("PRC-SUMMARIZE-001@{version}"), "--delete"]);
    }
}

#[test]
fn list_shows_versions_states_latest_active_and_pinning_work_orders() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    r.ok(&["new", "version", "PRC-SUMMARIZE-001@1.1.0"]);
    std::fs::write(
        r.root.join("work_orders/WO-SUM-1.json"),
        r#"{"work_order_id": "WO-SUM-1", "kind": "exchange", "contract": "PRC-SUMMARIZE-001@^1", "input": {"input": "x"}}"#,
    )
    .unwrap();
    let out = r.ok(&["registry", "list"]);
    assert!(out.stdout.contains("PRC-SUMMARIZE-001 (latest active 1.0.0)"), "{}", out.stdout);
    let line = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("1.0.0") && l.contains("contracts/"))
        .unwrap();
    assert!(line.contains("active") && line.contains("pinned by WO-SUM-1"), "{line}");
    let line = out.stdout.lines().find(|l| l.trim_start().starts_with("1.1.0")).unwrap();
    assert!(line.contains("draft") && !line.contains("pinned"), "{line}");
    let (code, v) = r.json(&["registry", "list", "PRM-SUMMARIZE-001"]);
    assert_eq!(code, 0);
    let ids = v["ids"].as_array().unwrap();
    assert_eq!(ids.len(), 1, "{v:#}");
    assert_eq!(ids[0]["latest_active"], json!("1.0.0"));
    assert_eq!(
        ids[0]["versions"][0]["bound_by"],
        json!(["PRC-SUMMARIZE-001@1.0.0", "PRC-SUMMARIZE-001@1.1.0"])
    );
    let (code, v) = r.json(&["registry", "list", "PRC-SUMARIZE-001"]);
    assert_eq!((code, v["code"].clone()), (1, json!("contract_not_found")), "{v:#}");
}

#[test]
fn hand_edits_of_registry_json_fail_verify_and_validate() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    r.ok(&["new", "version", "PRC-SUMMARIZE-001@1.1.0"]);
    let good = std::fs::read(r.root.join("registry.json")).unwrap();
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<(&str, Edit)> = vec![
        // A new hash (and file) for an active version.
        (
            "/contracts/0/sha256",
            Box::new(|v: &mut Value| v["contracts"][0]["sha256"] = json!("0".repeat(64))),
        ),
        // A draft flipped to active without promote.
        (
            "/contracts/1/state",
            Box::new(|v: &mut Value| v["contracts"][1]["state"] = json!("active")),
        ),
        // An entry deleted.
        (
            "/history/",
            Box::new(|v: &mut Value| {
                v["contracts"].as_array_mut().unwrap().remove(1);
            }),
        ),
    ];
    for (pointer, edit) in edits {
        let mut reg: Value = serde_json::from_slice(&good).unwrap();
        edit(&mut reg);
        std::fs::write(r.root.join("registry.json"), serde_json::to_string_pretty(&reg).unwrap())
            .unwrap();
        let (code, v) = r.json(&["registry", "verify"]);
        assert_eq!(code, 1, "{pointer}: {v:#}");
        assert!(
            v["errors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["code"] == json!("registry_history_mismatch")
                    && e["pointer"].as_str().unwrap().starts_with(pointer)),
            "{pointer}: {v:#}"
        );
        let (code, doc) = r.json(&["validate"]);
        assert_eq!(code, 1, "{pointer}: {doc:#}");
        let d = doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["code"] == json!("registry_history_mismatch"))
            .unwrap_or_else(|| panic!("{pointer}: {doc:#}"));
        assert_eq!(d["file"], json!("registry.json"));
        assert!(d["line"].as_u64().unwrap() > 1, "{d:#}");
    }
}

/// The replay checks every field the history implies: removing its successor or its path
/// check lets the hand edits below through (each has the right hash, id and version).
#[test]
fn verify_replays_successors_and_paths_not_only_states_and_hashes() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    for v in ["1.1.0", "1.2.0"] {
        r.ok(&["new", "version", &format!("PRC-SUMMARIZE-001@{v}")]);
        r.ok(&["registry", "promote", &format!("PRC-SUMMARIZE-001@{v}")]);
    }
    r.ok(&["registry", "deprecate", "PRC-SUMMARIZE-001@1.0.0", "--successor", "1.1.0"]);
    r.ok(&["registry", "verify"]);
    let good: Value = r.registry();
    let index = |v: &str| {
        good["contracts"].as_array().unwrap().iter().position(|e| e["version"] == json!(v)).unwrap()
    };
    // Another existing, higher successor: `successor_missing` has nothing to say.
    let mut edited = good.clone();
    edited["contracts"][index("1.0.0")]["successor_version"] = json!("1.2.0");
    // The same bytes at another path: hash, id and version all agree.
    let mut moved = good.clone();
    std::fs::copy(
        r.root.join("contracts/summarize/1.2.0.json"),
        r.root.join("contracts/summarize/copy.json"),
    )
    .unwrap();
    moved["contracts"][index("1.2.0")]["path"] = json!("contracts/summarize/copy.json");
    for (reg, pointer) in [
        (edited, format!("/contracts/{}/successor_version", index("1.0.0"))),
        (moved, format!("/contracts/{}/path", index("1.2.0"))),
    ] {
        std::fs::write(r.root.join("registry.json"), serde_json::to_string_pretty(&reg).unwrap())
            .unwrap();
        let (code, v) = r.json(&["registry", "verify"]);
        assert_eq!(code, 1, "{pointer}: {v:#}");
        let found: Vec<(&str, &str)> = v["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["code"].as_str().unwrap(), e["pointer"].as_str().unwrap_or("")))
            .collect();
        assert!(
            found.contains(&("registry_history_mismatch", pointer.as_str())),
            "{pointer}: {found:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// merges
// ---------------------------------------------------------------------------------------

/// A repository with one active contract on `main`, committed.
fn team_repo(sub: &str) -> Repo {
    let r = Repo::new(sub);
    std::fs::create_dir_all(&r.root).unwrap();
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    r.commit_all("summarize");
    r
}

fn promote_new(r: &Repo, actor: &str, id: &str) {
    let pack = id.replace("PRC-", "PRM-");
    for args in [
        vec!["new", "contract", id],
        vec!["registry", "promote", &format!("{pack}@1.0.0")],
        vec!["registry", "promote", &format!("{id}@1.0.0")],
    ] {
        let out = r.run_as(actor, &args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    }
}

fn merges_cleanly(sub: &str) {
    let r = team_repo(sub);
    let main_events = actions(&r.registry()).len();
    git_ok(&r.top, &["checkout", "-q", "-b", "alice"]);
    promote_new(&r, "alice@team.example", "PRC-TRANSLATE-001");
    r.commit_all("translate");
    git_ok(&r.top, &["checkout", "-q", "main"]);
    git_ok(&r.top, &["checkout", "-q", "-b", "bob"]);
    promote_new(&r, "bob@team.example", "PRC-CLASSIFY-001");
    let out = r.run_as("bob@team.example", &["new", "version", "PRC-SUMMARIZE-001@1.1.0"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    r.commit_all("classify");

    let merge = git(&r.top, &["merge", "--no-edit", "alice"]);
    assert_eq!(merge.code, 0, "merge failed:\n{}\n{}", merge.stdout, merge.stderr);
    let reg = r.registry();
    let ids: Vec<&str> = reg["contracts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["contract_id"].as_str().unwrap())
        .collect();
    for id in ["PRC-SUMMARIZE-001", "PRC-CLASSIFY-001", "PRC-TRANSLATE-001"] {
        assert!(ids.contains(&id), "{id} missing after the merge: {ids:?}");
    }
    let history = reg["history"].as_array().unwrap();
    // Ours (bob: 3 + 1 events), then theirs (alice: 4), then the merge event.
    assert_eq!(history.len(), main_events + 5 + 4 + 1, "{:#?}", actions(&reg));
    let last = history.last().unwrap();
    assert_eq!(last["action"], json!("merge"));
    assert_eq!(last["heads"].as_array().unwrap().len(), 2);
    assert_eq!(last["actor"], json!("merger@team.example"));
    let actors: Vec<&str> = history.iter().map(|e| e["actor"].as_str().unwrap()).collect();
    assert!(actors.contains(&"alice@team.example") && actors.contains(&"bob@team.example"));
    let seqs: Vec<u64> = history.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=history.len() as u64).collect::<Vec<_>>(), "re-numbered");
    r.ok(&["registry", "verify"]);
    r.ok(&["validate"]);
    // The merge commit is an ordinary commit; the tree is clean.
    let status = git_ok(&r.top, &["status", "--porcelain"]);
    assert_eq!(status.stdout.trim(), "", "{}", status.stdout);
}

#[test]
fn the_merge_driver_refuses_a_side_that_does_not_verify_and_takes_large_registries() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    let base: Value = r.registry();
    let write = |name: &str, v: &Value| {
        let p = r.root.join(name);
        std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
        p.display().to_string()
    };
    let entry = base["contracts"][0].clone();
    // Their side: an active version the history never promoted, or a path leading out.
    let mut forged = base.clone();
    let mut extra = entry.clone();
    extra["version"] = json!("9.0.0");
    extra["path"] = json!("contracts/summarize/9.0.0.json");
    forged["contracts"].as_array_mut().unwrap().push(extra);
    let mut escaping = base.clone();
    escaping["contracts"][0]["path"] = json!("../../etc/passwd");
    for theirs in [forged, escaping] {
        let (b, o, t) = (write("b.json", &base), write("o.json", &base), write("t.json", &theirs));
        let before = std::fs::read(&o).unwrap();
        let (code, v) = r.json(&["registry", "merge", &b, &o, &t]);
        assert_eq!((code, v["code"].clone()), (1, json!("registry_merge_conflict")), "{v:#}");
        assert!(v["message"].as_str().unwrap().contains("their side"), "{v:#}");
        assert_eq!(std::fs::read(&o).unwrap(), before, "nothing was written");
    }
    // A registry.json over 16 MiB (the limit of other governed files) merges.
    let mut large = base.clone();
    large["x-notes"] = json!("n".repeat(17 * 1024 * 1024));
    let (b, o, t) = (write("b.json", &base), write("o.json", &large), write("t.json", &base));
    let (code, v) = r.json(&["registry", "merge", &b, &o, &t]);
    assert_eq!(code, 0, "{v:#}");
}

/// Where the project sits in its repository (the folder `Repo::new` takes): the merge
/// driver works the same from either.
const PROJECT_FOLDERS: &[(&str, &str)] =
    &[("at the top level of the repository", ""), ("in a subfolder of the repository", "prompts")];

#[test]
fn two_branches_that_add_and_promote_contracts_merge_without_a_conflict() {
    common::check_cases(PROJECT_FOLDERS, |case| case.0, |&(_, sub)| merges_cleanly(sub));
}

#[test]
fn the_same_version_added_with_different_content_on_both_sides_is_a_conflict_naming_it() {
    let r = team_repo("");
    git_ok(&r.top, &["checkout", "-q", "-b", "alice"]);
    r.ok(&["new", "version", "PRC-SUMMARIZE-001@1.1.0"]);
    r.add_optional_input("contracts/summarize/1.1.0.json", "tone");
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.1.0"]);
    r.commit_all("alice 1.1.0");
    git_ok(&r.top, &["checkout", "-q", "main"]);
    r.ok(&["new", "version", "PRC-SUMMARIZE-001@1.1.0"]);
    r.add_optional_input("contracts/summarize/1.1.0.json", "audience");
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.1.0"]);
    r.commit_all("main 1.1.0");
    let all = merge_conflicts(
        &r,
        "PRC-SUMMARIZE-001@1.1.0: both sides changed it with different content",
    );
    assert!(all.contains("CONFLICT") && all.contains("registry.json"), "{all}");
}

/// Merges `alice` into the checked-out branch and asserts the registry driver refused it
/// with `registry_merge_conflict` naming `names`, writing nothing (registry.json is still
/// ours, with no conflict markers); what git printed.
fn merge_conflicts(r: &Repo, names: &str) -> String {
    let ours = std::fs::read(r.root.join("registry.json")).unwrap();
    let merge = git(&r.top, &["merge", "--no-edit", "alice"]);
    assert_ne!(merge.code, 0, "the merge should conflict:\n{}", merge.stdout);
    let all = format!("{}{}", merge.stdout, merge.stderr);
    assert!(all.contains("error[registry_merge_conflict]"), "{all}");
    assert!(all.contains(names), "the conflict names the entry: {all}");
    assert_eq!(std::fs::read(r.root.join("registry.json")).unwrap(), ours);
    all
}

#[test]
fn one_version_deprecated_with_two_successors_is_a_conflict_naming_it() {
    let r = team_repo("");
    for v in ["1.1.0", "1.2.0"] {
        r.ok(&["new", "version", &format!("PRC-SUMMARIZE-001@{v}")]);
        r.ok(&["registry", "promote", &format!("PRC-SUMMARIZE-001@{v}")]);
    }
    r.commit_all("1.1.0 and 1.2.0");
    git_ok(&r.top, &["checkout", "-q", "-b", "alice"]);
    r.ok(&["registry", "deprecate", "PRC-SUMMARIZE-001@1.0.0", "--successor", "1.2.0"]);
    r.commit_all("alice deprecates 1.0.0 for 1.2.0");
    git_ok(&r.top, &["checkout", "-q", "main"]);
    r.ok(&["registry", "deprecate", "PRC-SUMMARIZE-001@1.0.0", "--successor", "1.1.0"]);
    r.commit_all("main deprecates 1.0.0 for 1.1.0");
    merge_conflicts(
        &r,
        "PRC-SUMMARIZE-001@1.0.0: deprecated on both sides with different successors (ours 1.1.0, theirs 1.2.0)",
    );
}

#[test]
fn the_merge_driver_refuses_unrelated_histories() {
    let r = team_repo("");
    let base = std::fs::read_to_string(r.root.join("registry.json")).unwrap();
    // "theirs" rewrote the history: the first event's time changed and the chain re-hashed.
    let tmp = tempfile::tempdir().unwrap();
    let rewritten_root = tmp.path();
    r.ok(&["new", "contract", "PRC-TRANSLATE-001"]);
    let ours = std::fs::read_to_string(r.root.join("registry.json")).unwrap();
    std::fs::write(rewritten_root.join("registry.json"), &base).unwrap();
    let mut theirs: Value = serde_json::from_str(&base).unwrap();
    theirs["history"][0]["at"] = json!("2020-01-01T00:00:00Z");
    // The entry it registered says so too: theirs replays on its own (timestamps are
    // replayed), and only the rewritten history is wrong.
    assert_eq!(theirs["history"][0]["action"], json!("add"));
    let (first, version) =
        (theirs["history"][0]["id"].clone(), theirs["history"][0]["version"].clone());
    for list in ["contracts", "prompt_packs"] {
        for entry in theirs[list].as_array_mut().into_iter().flatten() {
            if (entry["contract_id"] == first || entry["prompt_pack_id"] == first)
                && entry["version"] == version
            {
                entry["registered_at"] = json!("2020-01-01T00:00:00Z");
            }
        }
    }
    rechain(&mut theirs);
    let paths = ["base.json", "ours.json", "theirs.json"].map(|n| rewritten_root.join(n));
    std::fs::write(&paths[0], &base).unwrap();
    std::fs::write(&paths[1], &ours).unwrap();
    std::fs::write(&paths[2], serde_json::to_string_pretty(&theirs).unwrap()).unwrap();
    let out: Out = pactum_in(rewritten_root)
        .args(["registry", "merge"])
        .args(paths.iter().map(|p| p.as_os_str()))
        .output()
        .unwrap()
        .into();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stderr.contains("error[registry_merge_conflict]"), "{}", out.stderr);
    assert!(
        out.stderr.contains("the histories are unrelated: theirs does not continue"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read_to_string(&paths[1]).unwrap(), ours, "nothing written");
}

/// Re-numbers and re-chains a history the way the spec defines it (canonical JSON,
/// written here without the library).
fn rechain(registry: &mut Value) {
    let mut prev = "0".repeat(64);
    for (i, event) in registry["history"].as_array_mut().unwrap().iter_mut().enumerate() {
        event["seq"] = json!(i + 1);
        event["prev"] = json!(prev);
        let mut bare = event.clone();
        bare.as_object_mut().unwrap().remove("hash");
        let hash = common::sha256_hex(canonical(&bare).as_bytes());
        event["hash"] = json!(hash);
        prev = hash;
    }
}

fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[*k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(","))
        }
        other => other.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// validate checks what run would refuse
// ---------------------------------------------------------------------------------------

#[test]
fn validate_reports_what_run_would_refuse_before_any_call() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    // An exchange whose input breaks the contract's input_schema (empty string, extra key).
    std::fs::write(
        r.root.join("work_orders/WO-BAD-INPUT.json"),
        "{\n  \"work_order_id\": \"WO-BAD-INPUT\",\n  \"kind\": \"exchange\",\n  \"contract\": \"PRC-SUMMARIZE-001\",\n  \"input\": {\n    \"input\": \"\",\n    \"extra\": 1\n  }\n}\n",
    )
    .unwrap();
    // A kernel work order in a project without the kernel role contracts.
    std::fs::write(
        r.root.join("work_orders/WO-KERNEL.json"),
        r#"{"work_order_id": "WO-KERNEL", "kind": "kernel", "request": "add 5 and 10"}"#,
    )
    .unwrap();
    // A work order whose scripted fixtures are malformed.
    std::fs::write(r.root.join("work_orders/replies.json"), r#"{"responses": [{"txt": "typo"}]}"#)
        .unwrap();
    std::fs::write(
        r.root.join("work_orders/WO-FIXTURES.json"),
        r#"{"work_order_id": "WO-FIXTURES", "kind": "exchange", "contract": "PRC-SUMMARIZE-001", "input": {"input": "x"}, "provider": {"fixtures": "replies.json"}}"#,
    )
    .unwrap();
    let (code, doc) = r.json(&["validate"]);
    assert_eq!(code, 1, "{doc:#}");
    let find = |code: &str, file: &str| -> Vec<Value> {
        doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["code"] == json!(code) && d["file"] == json!(file))
            .cloned()
            .collect()
    };
    let bad = find("input_schema_invalid", "work_orders/WO-BAD-INPUT.json");
    let pointers: Vec<&str> = bad.iter().map(|d| d["pointer"].as_str().unwrap()).collect();
    assert!(pointers.contains(&"/input/input"), "{bad:#?}");
    let at_value = bad.iter().find(|d| d["pointer"] == json!("/input/input")).unwrap();
    assert_eq!(
        (at_value["line"].clone(), at_value["column"].clone()),
        (json!(6), json!(14)),
        "{at_value:#}"
    );
    let kernel = find("contract_not_found", "work_orders/WO-KERNEL.json");
    assert_eq!(kernel.len(), 13, "one per kernel role: {kernel:#?}");
    assert!(
        kernel[0]["help"].as_str().unwrap().contains("pactum init --kernel"),
        "{:#}",
        kernel[0]
    );
    let fixtures = find("provider_not_configured", "work_orders/WO-FIXTURES.json");
    assert_eq!(fixtures.len(), 1, "{doc:#}");
    assert_eq!(fixtures[0]["pointer"], json!("/provider/fixtures"));
    assert!(fixtures[0]["message"].as_str().unwrap().contains("txt"), "{:#}", fixtures[0]);

    // The same input fails `run` before any call, with the same code.
    let (code, v) = r.json(&["run", "work_orders/WO-BAD-INPUT.json"]);
    assert_eq!((code, v["code"].clone()), (1, json!("input_schema_invalid")), "{v:#}");

    // With the kernel contracts registered, the kernel work order validates.
    r.ok(&["init", "--kernel"]);
    let (_, doc) = r.json(&["validate"]);
    assert!(
        !doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["file"] == json!("work_orders/WO-KERNEL.json")),
        "{doc:#}"
    );
}

#[test]
fn validate_reports_required_context_a_work_order_lacks() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    let rel = "contracts/summarize/1.0.0.json";
    let mut c: Value =
        serde_json::from_str(&std::fs::read_to_string(r.root.join(rel)).unwrap()).unwrap();
    c["required_context"] = json!({"framework_refs": ["FMWK-STYLE"]});
    std::fs::write(r.root.join(rel), serde_json::to_string_pretty(&c).unwrap()).unwrap();
    // The framework exists when it is promoted (the gate checks what validate checks) and
    // is gone later: the work order that gives no framework is what validate reports.
    std::fs::create_dir_all(r.root.join("frameworks")).unwrap();
    std::fs::write(r.root.join("frameworks/FMWK-STYLE.md"), "Be brief.").unwrap();
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    std::fs::remove_file(r.root.join("frameworks/FMWK-STYLE.md")).unwrap();
    std::fs::write(
        r.root.join("work_orders/WO-CTX.json"),
        r#"{"work_order_id": "WO-CTX", "kind": "exchange", "contract": "PRC-SUMMARIZE-001", "input": {"input": "x"}, "assembled_context": {"frameworks": {}}}"#,
    )
    .unwrap();
    let (code, doc) = r.json(&["validate"]);
    assert_eq!(code, 1, "{doc:#}");
    let d = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| {
            d["code"] == json!("required_context_missing")
                && d["file"] == json!("work_orders/WO-CTX.json")
        })
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(d["pointer"], json!("/assembled_context"));
    assert!(d["message"].as_str().unwrap().contains("framework:FMWK-STYLE"), "{d:#}");
}

#[test]
fn run_json_has_one_shape_for_one_work_order_or_many() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    let wo = |id: &str, input: &str| {
        let path = format!("work_orders/{id}.json");
        std::fs::write(
            r.root.join(&path),
            format!(r#"{{"work_order_id": "{id}", "kind": "exchange", "contract": "PRC-SUMMARIZE-001", "input": {{"input": "{input}"}}}}"#),
        )
        .unwrap();
        path
    };
    let good = wo("WO-GOOD", "some text");
    let bad = wo("WO-BAD", "");
    let (code, one) = r.json(&["run", &good]);
    assert_eq!(code, 0, "{one:#}");
    assert_eq!(one["ok"], json!(true));
    let results = one["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["work_order_id"], json!("WO-GOOD"));
    assert!(results[0]["output"].is_object() && results[0]["usage"].is_object(), "{one:#}");
    let (code, many) = r.json(&["run", &good, &bad]);
    assert_eq!(code, 1, "{many:#}");
    assert_eq!(many["ok"], json!(false));
    assert_eq!(many["code"], json!("input_schema_invalid"), "the first failure's code: {many:#}");
    assert!(
        many["message"].as_str().is_some()
            && many["errors"].as_array().is_some_and(|e| !e.is_empty())
    );
    let ids: Vec<&str> = many["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["work_order_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["WO-GOOD", "WO-BAD"]);
    // The same keys at the top level either way (plus the failure's code and message).
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&one), ["ledger", "ok", "results"]);
    assert_eq!(keys(&many), ["code", "errors", "ledger", "message", "ok", "results"]);
}

// ---------------------------------------------------------------------------------------
// explain, schemas, ledger verify
// ---------------------------------------------------------------------------------------

#[test]
fn explain_prints_every_codes_documentation() {
    let r = Repo::new("");
    let out = r.ok(&["explain", "registry_merge_conflict"]);
    assert!(out.stdout.starts_with("## registry_merge_conflict"), "{}", out.stdout);
    assert!(
        out.stdout.contains("**Fix:**") && !out.stdout.contains("## template_variable_missing"),
        "{}",
        out.stdout
    );
    // As printed in diagnostics, too.
    let out = r.ok(&["explain", "error[contract_hash_mismatch]"]);
    assert!(out.stdout.starts_with("## contract_hash_mismatch"), "{}", out.stdout);
    // Typed in capitals or with dashes, a code is still the code.
    for typed in ["TOOL_NAME_TAKEN", "Tool-Name-Taken", "error[TOOL_NAME_TAKEN]"] {
        let out = r.ok(&["explain", typed]);
        assert!(out.stdout.starts_with("## tool_name_taken"), "{typed}: {}", out.stdout);
    }
    let (code, v) = r.json(&["explain", "registry_history_missing"]);
    assert_eq!((code, v["severity"].clone()), (0, json!("warning")), "{v:#}");
    let out = r.run(&["explain", "registry_merge_conflct"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("error[usage_error]"), "{}", out.stderr);
    assert!(out.stderr.contains("did you mean registry_merge_conflict?"), "{}", out.stderr);
    let (code, v) = r.json(&["explain", "nope"]);
    assert_eq!((code, v["code"].clone()), (2, json!("usage_error")), "{v:#}");
    // Every code of the schema of error codes has a section.
    let docs = std::fs::read_to_string(repo().join("docs/error-codes.md")).unwrap();
    let codes: Vec<&str> = docs.lines().filter_map(|l| l.strip_prefix("## ")).collect();
    assert!(codes.len() > 50);
    for code in codes {
        let out = r.ok(&["explain", code]);
        assert!(out.stdout.starts_with(&format!("## {code}")), "{code}: {}", out.stdout);
    }
}

#[test]
fn schemas_lists_prints_and_writes_the_embedded_schemas() {
    let r = Repo::new("");
    let out = r.ok(&["schemas"]);
    assert!(out.stdout.lines().any(|l| l == "prompt_contract.schema.json"), "{}", out.stdout);
    let out = r.ok(&["schemas", "work_order.schema.json"]);
    assert_eq!(out.stdout, include_str!("../schemas/work_order.schema.json"));
    let out = r.run(&["schemas", "nope.schema.json"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("the schemas are: prompt_contract.schema.json"), "{}", out.stderr);
    r.ok(&["schemas", "--write", "out/schemas"]);
    assert_eq!(
        std::fs::read_to_string(r.root.join("out/schemas/registry.schema.json")).unwrap(),
        include_str!("../schemas/registry.schema.json")
    );
}

#[test]
fn ledger_verify_defaults_to_the_project_ledger_and_detects_a_cut_tail() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    r.ok(&["registry", "promote", "PRM-SUMMARIZE-001@1.0.0"]);
    r.ok(&["registry", "promote", "PRC-SUMMARIZE-001@1.0.0"]);
    std::fs::write(
        r.root.join("work_orders/WO-SUM.json"),
        r#"{"work_order_id": "WO-SUM", "kind": "exchange", "contract": "PRC-SUMMARIZE-001", "input": {"input": "text"}}"#,
    )
    .unwrap();
    for _ in 0..3 {
        r.ok(&["run", "work_orders/WO-SUM.json"]);
    }
    let (code, v) = r.json(&["ledger", "verify"]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(
        (v["file"].clone(), v["records"].clone()),
        (json!(".pactum/ledger.jsonl"), json!(9)),
        "three runs of one exchange: start, exchange and end records"
    );
    let head = v["last_hash"].as_str().unwrap().to_string();
    // From a subfolder, with --root.
    let sub = r.root.join("work_orders");
    let out: Out =
        pactum_in(&sub).args(["ledger", "verify", "--root", ".."]).output().unwrap().into();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The head an earlier verify printed is still there: fine, also after more records.
    r.ok(&["run", "work_orders/WO-SUM.json"]);
    let out = r.ok(&["ledger", "verify", "--expect-head", &head]);
    assert!(
        out.stdout.contains("the expected head is record 9; 3 records were appended since"),
        "{}",
        out.stdout
    );
    // Cut the records from the expected head on: the chain still verifies, the head is gone.
    let text = std::fs::read_to_string(r.root.join(".pactum/ledger.jsonl")).unwrap();
    let kept: Vec<&str> = text.lines().take(8).collect();
    std::fs::write(r.root.join(".pactum/ledger.jsonl"), kept.join("\n") + "\n").unwrap();
    r.ok(&["ledger", "verify"]);
    let (code, v) = r.json(&["ledger", "verify", "--expect-head", &head]);
    assert_eq!((code, v["code"].clone()), (1, json!("ledger_rewritten")), "{v:#}");
    assert!(v["message"].as_str().unwrap().contains("cut from the end"), "{v:#}");
}

#[test]
fn a_registry_left_with_conflict_markers_says_so_at_the_marker() {
    let r = Repo::new("");
    r.ok(&["init"]);
    std::fs::write(
        r.root.join("registry.json"),
        "{\n  \"registry_version\": 1,\n<<<<<<< HEAD\n  \"contracts\": [],\n=======\n  \"contracts\": [{}],\n>>>>>>> theirs\n  \"prompt_packs\": []\n}\n",
    )
    .unwrap();
    let (code, doc) = r.json(&["validate"]);
    assert_eq!(code, 1, "{doc:#}");
    let d = &doc["diagnostics"][0];
    assert_eq!(
        (d["code"].clone(), d["line"].clone()),
        (json!("registry_invalid"), json!(3)),
        "{doc:#}"
    );
    assert!(d["message"].as_str().unwrap().contains("unresolved git conflict markers"), "{d:#}");
    let out = r.run(&["registry", "verify"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("registry.json:3:1") && out.stderr.contains("git checkout --ours"),
        "{}",
        out.stderr
    );
}

#[test]
fn validate_takes_root_and_ids_are_explained_not_called_pins() {
    let r = Repo::new("");
    r.ok(&["init"]);
    r.ok(&["new", "contract", "PRC-SUMMARIZE-001"]);
    std::fs::create_dir_all(r.root.join("elsewhere")).unwrap();
    let out: Out = pactum_in(&r.root.join("elsewhere"))
        .args(["validate", "--root", "..", "--json"])
        .output()
        .unwrap()
        .into();
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["files"], json!(3), "{doc:#}");
    for (args, fragment) in [
        (
            vec!["new", "contract", "summarize"],
            "`summarize` is not a valid id: a contract id is `PRC-`",
        ),
        (vec!["resolve", "summarize"], "`summarize` is not a valid id"),
    ] {
        let out = r.run(&args);
        assert_eq!(out.code, 2, "{args:?}");
        assert!(
            out.stderr.contains(fragment) && !out.stderr.contains("not a valid pin"),
            "{args:?}: {}",
            out.stderr
        );
    }
}

/// A new user's slips are answered with the names they know: the folder they mistyped
/// (never the registry's lock file inside it), a ledger not written yet, a file where a
/// project folder was meant.
#[test]
fn first_steps_slips_name_what_the_user_named() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    Out::of(pactum_in(root).args(["init", "p"])).status(0);
    std::fs::write(root.join("f.json"), b"x").unwrap();
    let p = root.join("p");
    let cases: [(&Path, &[&str], &str, &str); 4] = [
        (root, &["new", "contract", "PRC-V-001", "--root", "missing"], "missing: ", "pactum init"),
        (root, &["registry", "add", "p/x.json", "--root", "missing"], "missing", "--root"),
        (&p, &["ledger", "verify"], ".pactum/ledger.jsonl: ", "no ledger yet"),
        (root, &["init", "f.json"], "f.json: ", "is a file"),
    ];
    for (cwd, args, starts, says) in cases {
        let mut with = args.to_vec();
        with.push("--json");
        let doc = Out::of(pactum_in(cwd).args(&with)).status(2).json();
        assert_eq!(doc["code"], "io_error", "{args:?}: {doc:#}");
        let message = doc["message"].as_str().unwrap();
        assert!(message.starts_with(starts) && message.contains(says), "{args:?}: {message}");
        assert!(!message.contains(".registry.lock"), "{args:?}: {message}");
    }
    assert!(!root.join("missing").exists());
    assert_eq!(std::fs::read(root.join("f.json")).unwrap(), b"x");
}
