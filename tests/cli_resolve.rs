//! `pactum resolve ID[@REQ]` end to end (SPEC §4, §11, §12): the real binary on a fixture
//! project copied into a temporary folder.
//!
//! `tests/fixtures/resolve/project/` registers PRC-ROUTE-001 (all versions bind
//! PRM-ROUTE-001 `^1`, pack 1.0.0 active) through `pactum registry`:
//!
//! | version | state                         |
//! |---------|-------------------------------|
//! | 1.0.0   | deprecated, successor 1.2.0   |
//! | 1.1.0   | removed                       |
//! | 1.2.0   | active                        |
//! | 1.2.1   | active                        |
//! | 1.3.0   | active                        |
//! | 2.0.0   | draft                         |

use crate::common;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{copy_tree, pactum_in, sha256_hex};
use serde_json::{Value, json};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/resolve/project")
}

/// The fixture project copied into `<tmp>/project`.
struct Project {
    tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Project {
    fn new() -> Project {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        copy_tree(&fixture(), &root);
        Project { tmp, root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn edit(&self, rel: &str, from: &str, to: &str) {
        let text = fs::read_to_string(self.path(rel)).unwrap();
        assert!(text.contains(from), "`{from}` not in {rel}");
        fs::write(self.path(rel), text.replacen(from, to, 1)).unwrap();
    }

    /// Drops the history and records every entry file's current SHA-256.
    fn resync(&self) {
        let path = self.path("registry.json");
        let mut r: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        r.as_object_mut().unwrap().remove("history");
        for list in ["contracts", "prompt_packs"] {
            for entry in r[list].as_array_mut().unwrap() {
                let bytes = fs::read(self.path(entry["path"].as_str().unwrap())).unwrap();
                entry["sha256"] = json!(sha256_hex(&bytes));
            }
        }
        fs::write(&path, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    }

    fn resolve(&self, args: &[&str]) -> Output {
        pactum_in(&self.root).arg("resolve").args(args).output().unwrap()
    }

    /// `resolve --format json ARGS`: the one JSON document on stdout and the exit status.
    fn resolve_json(&self, args: &[&str]) -> (Value, i32) {
        let out = pactum_in(&self.root)
            .args(["resolve", "--format", "json"])
            .args(args)
            .output()
            .unwrap();
        json_of(&out)
    }
}

fn json_of(out: &Output) -> (Value, i32) {
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let doc = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{stdout}"));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "JSON mode writes nothing on stderr");
    (doc, out.status.code().unwrap())
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// The resolved version of a successful JSON resolution.
fn resolved_version(project: &Project, pin: &str, extra: &[&str]) -> String {
    let mut args = vec![pin];
    args.extend_from_slice(extra);
    let (doc, status) = project.resolve_json(&args);
    assert_eq!(status, 0, "{pin}: {doc:#}");
    assert_eq!(doc["ok"], true, "{pin}: {doc:#}");
    doc["version"].as_str().unwrap().to_string()
}

/// A failed JSON resolution: its code, after checking the failure shape.
fn failure_code(doc: &Value) -> String {
    let keys: BTreeSet<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["ok", "code", "message", "errors"]), "{doc:#}");
    assert_eq!(doc["ok"], false);
    let code = doc["code"].as_str().unwrap().to_string();
    let errors = doc["errors"].as_array().unwrap();
    assert!(!errors.is_empty(), "{doc:#}");
    for e in errors {
        assert!(e["code"].is_string() && e["message"].is_string(), "{doc:#}");
    }
    assert_eq!(errors[0]["code"], code.as_str(), "{doc:#}");
    assert!(!doc["message"].as_str().unwrap().is_empty());
    code
}

#[test]
fn resolve_without_requirement_picks_the_highest_active_version() {
    let project = Project::new();
    // 2.0.0 is a draft and does not count.
    assert_eq!(resolved_version(&project, "PRC-ROUTE-001", &[]), "1.3.0");
    let out = project.resolve(&["PRC-ROUTE-001"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.starts_with("PRC-ROUTE-001@1.3.0 (active)\n"), "{text}");
    assert!(text.contains("path:   contracts/route/1.3.0.json"), "{text}");
    assert!(text.contains("pack:   PRM-ROUTE-001@1.0.0 (active) prompt_packs/route/1.0.0.json"));
    assert_eq!(stderr(&out), "");
}

/// A requirement that resolves: the version it picks, in what state, with which warnings.
struct Picks {
    name: &'static str,
    pin: &'static str,
    flags: &'static [&'static str],
    version: &'static str,
    state: &'static str,
    warnings: &'static [&'static str],
}

/// A requirement that resolves to an active version, without warnings.
const fn active(name: &'static str, pin: &'static str, version: &'static str) -> Picks {
    Picks { name, pin, flags: &[], version, state: "active", warnings: &[] }
}

/// A requirement that resolves to the draft 2.0.0 with `--allow-draft`.
const fn draft(name: &'static str, pin: &'static str) -> Picks {
    Picks { name, pin, flags: &["--allow-draft"], version: "2.0.0", state: "draft", warnings: &[] }
}

const PICKS: &[Picks] = &[
    // Unlike Cargo's caret default, a bare version does not float to 1.3.0.
    active("a bare version is an exact pin", "PRC-ROUTE-001@1.2.0", "1.2.0"),
    active("a bare patch version is an exact pin", "PRC-ROUTE-001@1.2.1", "1.2.1"),
    active("= is an exact pin", "PRC-ROUTE-001@=1.2.0", "1.2.0"),
    active("a caret range picks the highest active match", "PRC-ROUTE-001@^1.2", "1.3.0"),
    active("a tilde range picks the highest active match", "PRC-ROUTE-001@~1.2", "1.2.1"),
    active("a range below the draft", "PRC-ROUTE-001@>=1.0, <2.0", "1.3.0"),
    active("a range below the highest active version", "PRC-ROUTE-001@>=1.0, <1.3", "1.2.1"),
    active("a major caret range", "PRC-ROUTE-001@^1", "1.3.0"),
    Picks {
        name: "a range only a deprecated version matches resolves with the warning",
        pin: "PRC-ROUTE-001@~1.0",
        flags: &[],
        version: "1.0.0",
        state: "deprecated",
        warnings: &["contract_deprecated"],
    },
    draft("--allow-draft lets an exact draft pin resolve", "PRC-ROUTE-001@2.0.0"),
    // Drafts count as active: "latest" picks the draft being worked on.
    draft("--allow-draft makes latest the draft", "PRC-ROUTE-001"),
    draft("--allow-draft lets a range only the draft matches resolve", "PRC-ROUTE-001@^2"),
];

#[test]
fn each_requirement_resolves_to_the_version_it_names() {
    let project = Project::new();
    common::check_cases(
        PICKS,
        |case| case.name,
        |case| {
            assert_eq!(resolved_version(&project, case.pin, case.flags), case.version);
            let mut args = vec![case.pin];
            args.extend_from_slice(case.flags);
            let (doc, _) = project.resolve_json(&args);
            assert_eq!(doc["state"], case.state, "{doc:#}");
            let warnings: Vec<&str> = doc["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w["code"].as_str().unwrap())
                .collect();
            assert_eq!(warnings, case.warnings, "{doc:#}");
        },
    );
}

#[test]
fn resolve_deprecated_version_warns_naming_the_successor_on_stderr() {
    let project = Project::new();
    let out = project.resolve(&["PRC-ROUTE-001@1.0.0"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("PRC-ROUTE-001@1.0.0 (deprecated)\n"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("warning"), "warnings go to stderr");
    let err = stderr(&out);
    assert!(err.starts_with("warning[contract_deprecated]: "), "{err}");
    assert!(err.contains("successor is 1.2.0"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn resolve_deprecated_version_warns_in_json() {
    let project = Project::new();
    let (doc, status) = project.resolve_json(&["PRC-ROUTE-001@=1.0.0"]);
    assert_eq!(status, 0);
    assert_eq!(doc["state"], "deprecated");
    let warnings = doc["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{doc:#}");
    let keys: BTreeSet<&str> =
        warnings[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["code", "message"]));
    assert_eq!(warnings[0]["code"], "contract_deprecated");
    assert!(warnings[0]["message"].as_str().unwrap().contains("successor is 1.2.0"), "{doc:#}");
}

/// A requirement that does not resolve: the exit status and code, in text and in JSON, and
/// what the message says (and never says).
struct Refusal {
    name: &'static str,
    pin: &'static str,
    status: i32,
    code: &'static str,
    says: &'static [&'static str],
    never_says: &'static [&'static str],
}

/// A malformed pin: a usage error.
const fn malformed(name: &'static str, pin: &'static str) -> Refusal {
    Refusal { name, pin, status: 2, code: "pin_invalid", says: &[], never_says: &[] }
}

/// A well-formed requirement nothing answers: exit status 1.
const fn unanswered(
    name: &'static str,
    pin: &'static str,
    code: &'static str,
    says: &'static [&'static str],
) -> Refusal {
    Refusal { name, pin, status: 1, code, says, never_says: &[] }
}

const REFUSALS: &[Refusal] = &[
    // A label nobody set: says how to set it, not "available versions: no labels".
    Refusal {
        name: "a label never set",
        pin: "PRC-ROUTE-001@latest",
        status: 1,
        code: "contract_version_not_found",
        says: &[
            "`label latest`",
            "none labelled yet",
            "pactum registry label PRC-ROUTE-001 latest VERSION",
        ],
        never_says: &["no labels;"],
    },
    unanswered(
        "a draft without --allow-draft",
        "PRC-ROUTE-001@2.0.0",
        "contract_not_active",
        &["--allow-draft"],
    ),
    // The removed version is not offered.
    Refusal {
        name: "a removed version",
        pin: "PRC-ROUTE-001@1.1.0",
        status: 1,
        code: "contract_version_not_found",
        says: &["available versions: 1.0.0 (deprecated), 1.2.0, 1.2.1, 1.3.0, 2.0.0 (draft)"],
        never_says: &["1.1.0 ("],
    },
    unanswered("a range no version matches", "PRC-ROUTE-001@^3", "contract_version_not_found", &[]),
    unanswered(
        "a range only a draft matches names the draft",
        "PRC-ROUTE-001@^2",
        "contract_version_not_found",
        &["2.0.0 (draft)"],
    ),
    unanswered(
        "an unknown id",
        "PRC-ROTUE-001",
        "contract_not_found",
        &["did you mean PRC-ROUTE-001?"],
    ),
    unanswered(
        "an unknown id with a range",
        "PRC-ROUTES-001@^1",
        "contract_not_found",
        &["did you mean PRC-ROUTE-001?"],
    ),
    malformed("an empty requirement", "PRC-ROUTE-001@"),
    malformed("no id", "route"),
    malformed("a requirement that is no version", "PRC-ROUTE-001@^x"),
    malformed("a lowercase id", "PRC-route-001"),
    malformed("a pack id", "PRM-ROUTE-001"),
];

#[test]
fn requirements_that_do_not_resolve_are_refused_with_their_code() {
    let project = Project::new();
    common::check_cases(
        REFUSALS,
        |case| case.name,
        |case| {
            let out = project.resolve(&[case.pin]);
            assert_eq!(out.status.code(), Some(case.status));
            assert_eq!(stdout(&out), "");
            let err = stderr(&out);
            assert!(err.starts_with(&format!("error[{}]: ", case.code)), "{err}");

            let (doc, status) = project.resolve_json(&[case.pin]);
            assert_eq!(status, case.status, "{doc:#}");
            assert_eq!(failure_code(&doc), case.code);
            let message = doc["message"].as_str().unwrap();
            let first = doc["errors"][0]["message"].as_str().unwrap();
            for text in [err.as_str(), message, first] {
                for part in case.says {
                    assert!(text.contains(part), "`{part}` missing: {text}");
                }
                for part in case.never_says {
                    assert!(!text.contains(part), "`{part}` is there: {text}");
                }
            }
        },
    );
}

#[test]
fn resolve_without_a_registry_is_an_io_error() {
    let tmp = tempfile::tempdir().unwrap();
    for folder in tmp.path().ancestors() {
        assert!(!folder.join("registry.json").exists(), "a registry.json above the temp folder");
    }
    let out = pactum_in(tmp.path()).args(["resolve", "PRC-ROUTE-001"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("error[io_error]: "), "{}", stderr(&out));
    assert!(stderr(&out).contains("registry.json"), "{}", stderr(&out));

    let out = pactum_in(tmp.path()).args(["resolve", "--json", "PRC-ROUTE-001"]).output().unwrap();
    let (doc, status) = json_of(&out);
    assert_eq!(status, 2);
    assert_eq!(failure_code(&doc), "io_error");

    // --root naming a folder without one.
    let project = Project::new();
    let empty = project.tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let out = project.resolve(&["--root", empty.to_str().unwrap(), "PRC-ROUTE-001"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--root"), "{}", stderr(&out));
}

#[test]
fn resolve_finds_the_project_from_a_subfolder_or_with_root() {
    let project = Project::new();
    let out = pactum_in(&project.path("contracts/route"))
        .args(["resolve", "--json", "PRC-ROUTE-001@~1.2"])
        .output()
        .unwrap();
    let (doc, status) = json_of(&out);
    assert_eq!(status, 0);
    assert_eq!(doc["version"], "1.2.1");

    let elsewhere = project.tmp.path();
    let out = pactum_in(elsewhere)
        .args(["resolve", "--json", "--root", "project", "PRC-ROUTE-001@~1.2"])
        .output()
        .unwrap();
    let (again, status) = json_of(&out);
    assert_eq!(status, 0);
    assert_eq!(again, doc);
}

#[test]
fn resolve_json_success_has_exactly_the_documented_shape() {
    let project = Project::new();
    let (doc, status) = project.resolve_json(&["PRC-ROUTE-001@^1.2"]);
    assert_eq!(status, 0);
    let keys: BTreeSet<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "ok",
            "contract_id",
            "version",
            "state",
            "path",
            "sha256",
            "prompt_pack",
            "warnings"
        ])
    );
    let pack_keys: BTreeSet<&str> =
        doc["prompt_pack"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(pack_keys, BTreeSet::from(["prompt_pack_id", "version", "path", "sha256"]));
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["contract_id"], "PRC-ROUTE-001");
    assert_eq!(doc["version"], "1.3.0");
    assert_eq!(doc["state"], "active");
    assert_eq!(doc["path"], "contracts/route/1.3.0.json");
    assert_eq!(doc["warnings"], json!([]));
    // The hashes are the files' real SHA-256.
    let contract = fs::read(project.path("contracts/route/1.3.0.json")).unwrap();
    assert_eq!(doc["sha256"], sha256_hex(&contract));
    let pack = &doc["prompt_pack"];
    assert_eq!(pack["prompt_pack_id"], "PRM-ROUTE-001");
    assert_eq!(pack["version"], "1.0.0");
    assert_eq!(pack["path"], "prompt_packs/route/1.0.0.json");
    let pack_bytes = fs::read(project.path("prompt_packs/route/1.0.0.json")).unwrap();
    assert_eq!(pack["sha256"], sha256_hex(&pack_bytes));
    insta::assert_json_snapshot!("resolve_caret_json", doc);
}

#[test]
fn resolve_checks_the_file_hash_on_load() {
    let project = Project::new();
    project.edit("contracts/route/1.3.0.json", "\"max_tokens\": 64", "\"max_tokens\": 65");
    let (doc, status) = project.resolve_json(&["PRC-ROUTE-001"]);
    assert_eq!(status, 1);
    assert_eq!(failure_code(&doc), "contract_hash_mismatch");
    assert!(doc["message"].as_str().unwrap().contains("contracts/route/1.3.0.json"), "{doc:#}");
    // Other versions still resolve.
    assert_eq!(resolved_version(&project, "PRC-ROUTE-001@~1.2", &[]), "1.2.1");
}

#[test]
fn resolve_checks_the_file_id_and_schema_on_load() {
    let project = Project::new();
    project.edit("contracts/route/1.3.0.json", "\"version\": \"1.3.0\"", "\"version\": \"1.3.1\"");
    project.edit("contracts/route/1.2.1.json", "\"temperature\": 0", "\"temperature\": 5");
    project.resync();
    let (doc, status) = project.resolve_json(&["PRC-ROUTE-001@1.3.0"]);
    assert_eq!(status, 1);
    assert_eq!(failure_code(&doc), "contract_id_mismatch");
    let (doc, status) = project.resolve_json(&["PRC-ROUTE-001@1.2.1"]);
    assert_eq!(status, 1);
    assert_eq!(failure_code(&doc), "contract_schema_invalid");
    assert_eq!(resolved_version(&project, "PRC-ROUTE-001@1.2.0", &[]), "1.2.0");
}

#[test]
fn resolve_refuses_a_registry_whose_history_is_broken() {
    let project = Project::new();
    let path = project.path("registry.json");
    let mut r: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    r["history"][2]["at"] = json!("2001-01-01T00:00:00Z");
    fs::write(&path, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    let (doc, status) = project.resolve_json(&["PRC-ROUTE-001"]);
    assert_eq!(status, 1);
    assert_eq!(failure_code(&doc), "registry_history_broken");
}

#[test]
fn resolve_fixture_registry_hashes_its_files_exactly() {
    let root = fixture();
    let r: Value =
        serde_json::from_str(&fs::read_to_string(root.join("registry.json")).unwrap()).unwrap();
    for list in ["contracts", "prompt_packs"] {
        for entry in r[list].as_array().unwrap() {
            let bytes = fs::read(root.join(entry["path"].as_str().unwrap())).unwrap();
            assert_eq!(entry["sha256"], sha256_hex(&bytes), "{entry:#}");
        }
    }
}

/// Runs `pactum registry ARGS` in the project and requires success.
fn registry(project: &Project, args: &[&str]) {
    let out = pactum_in(&project.root).arg("registry").args(args).output().unwrap();
    assert!(out.status.success(), "registry {args:?}:\n{}{}", stdout(&out), stderr(&out));
}

/// Writes pack PRM-ROUTE-001 at `version` (the 1.0.0 template) and registers it as a draft.
fn add_route_pack(project: &Project, version: &str) {
    let text = fs::read_to_string(project.path("prompt_packs/route/1.0.0.json")).unwrap();
    let rel = format!("prompt_packs/route/{version}.json");
    let text = text.replace("\"version\": \"1.0.0\"", &format!("\"version\": \"{version}\""));
    fs::write(project.path(&rel), text).unwrap();
    registry(project, &["add", &rel]);
}

fn resolved_pack(project: &Project) -> (String, Vec<String>) {
    let (doc, status) = project.resolve_json(&["PRC-ROUTE-001"]);
    assert_eq!(status, 0, "{doc:#}");
    let warnings = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap().to_string())
        .collect();
    (doc["prompt_pack"]["version"].as_str().unwrap().to_string(), warnings)
}

#[test]
fn packs_resolve_like_contracts() {
    // Contracts bind PRM-ROUTE-001 `^1`; 1.0.0 is the only pack version at first.
    let project = Project::new();
    assert_eq!(resolved_pack(&project), ("1.0.0".to_string(), vec![]));

    // A higher active version wins; a draft does not count.
    add_route_pack(&project, "1.1.0");
    add_route_pack(&project, "1.2.0");
    registry(&project, &["promote", "PRM-ROUTE-001@1.1.0"]);
    assert_eq!(resolved_pack(&project), ("1.1.0".to_string(), vec![]));

    // An active version is preferred to a higher deprecated one (the successor, 2.0.0,
    // is outside the contracts' `^1`) ...
    add_route_pack(&project, "2.0.0");
    registry(&project, &["promote", "PRM-ROUTE-001@2.0.0"]);
    registry(&project, &["deprecate", "PRM-ROUTE-001@1.1.0", "--successor", "2.0.0"]);
    assert_eq!(resolved_pack(&project), ("1.0.0".to_string(), vec![]));

    // ... and with only deprecated versions left, the highest resolves with a warning.
    registry(&project, &["deprecate", "PRM-ROUTE-001@1.0.0", "--successor", "2.0.0"]);
    let (version, warnings) = resolved_pack(&project);
    assert_eq!(version, "1.1.0");
    assert_eq!(warnings, ["contract_deprecated"]);

    // Loading the resolved pack checks its hash.
    project.edit("prompt_packs/route/1.1.0.json", "Pick the queue", "Choose the queue");
    let (doc, status) = project.resolve_json(&["PRC-ROUTE-001"]);
    assert_eq!(status, 1, "{doc:#}");
    assert_eq!(failure_code(&doc), "contract_hash_mismatch");
    let message = doc["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("prompt_packs/route/1.1.0.json"), "{doc:#}");
}
