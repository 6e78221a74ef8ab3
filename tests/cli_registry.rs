//! Governance through the real `pactum` binary (SPEC §3.3, §4, §5 check 8, §7, §12):
//! `registry add|promote|deprecate|remove|verify|log`, `diff`, `validate` check 8 and
//! `new contract`, each in a fresh temporary tree.
//!
//! Every refused lifecycle command is checked for its code, exit status 1 (2 for usage
//! errors) and for leaving registry.json byte-for-byte unchanged. The history chain is
//! re-verified here with an independent canonical-JSON + SHA-256 implementation, not with
//! the library's.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::sha256_hex;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_pactum");
const ID: &str = "PRC-NOTES-001";
const PACK: &str = "PRM-NOTES-001";
const ZEROS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn pactum(cwd: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("the pactum binary runs")
}

fn code_of(out: &Output) -> i32 {
    out.status.code().expect("pactum exited normally")
}

fn describe(args: &[&str], out: &Output) -> String {
    format!(
        "pactum {}\nexit {:?}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Parses stdout as exactly one JSON document (trailing text is an error).
fn one_json(args: &[&str], out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("stdout is not one JSON document ({e})\n{}", describe(args, out))
    })
}

/// Canonical form: object keys sorted at every level (arrays keep their order).
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = serde_json::Map::new();
            for key in keys {
                out.insert(key.clone(), canonical(&map[key]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The hash an event must carry, computed without the library.
fn event_hash(event: &Value) -> String {
    let mut without = event.clone();
    without.as_object_mut().expect("an event is an object").remove("hash");
    sha256_hex(serde_json::to_string(&canonical(&without)).unwrap().as_bytes())
}

fn is_lower_hex_64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks `seq` 1..n, `prev` links (64 zeros first) and every `hash`; returns the events.
fn check_chain_independently(registry: &Value) -> Vec<Value> {
    let history = registry["history"].as_array().expect("registry.json has a history").clone();
    let mut prev = ZEROS.to_string();
    for (i, event) in history.iter().enumerate() {
        assert_eq!(event["seq"], json!(i + 1), "seq of event #{i}: {event}");
        assert_eq!(event["prev"].as_str(), Some(prev.as_str()), "prev of event #{i}: {event}");
        let hash = event["hash"].as_str().expect("hash is a string");
        assert!(is_lower_hex_64(hash), "hash is lowercase hex SHA-256: {hash}");
        assert_eq!(hash, event_hash(event), "hash of event #{i} does not recompute: {event}");
        prev = hash.to_string();
    }
    history
}

fn no_temp_files(dir: &Path) {
    let temps: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".registry.json.tmp-"))
        .collect();
    assert!(temps.is_empty(), "temporary files left behind: {temps:?}");
}

/// One scaffolded project (`pactum new contract PRC-NOTES-001`) in a fresh tempdir.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let tree = Tree { dir: tempfile::tempdir().unwrap() };
        let args = ["new", "contract", ID];
        let out = tree.run(&args);
        assert_eq!(code_of(&out), 0, "{}", describe(&args, &out));
        // What the author does next: the scaffold's placeholders written.
        crate::common::write_placeholders(tree.root());
        tree
    }

    /// A tree whose pack and contract 1.0.0 are active.
    fn active() -> Tree {
        let tree = Tree::new();
        tree.ok(&["registry", "promote", &format!("{PACK}@1.0.0")]);
        tree.ok(&["registry", "promote", &format!("{ID}@1.0.0")]);
        tree
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    fn run(&self, args: &[&str]) -> Output {
        pactum(self.root(), args)
    }

    /// Runs with `--json` appended; returns the exit status and the one JSON document.
    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        (code_of(&out), one_json(&all, &out))
    }

    /// A command that must succeed (exit 0, `"ok": true`).
    fn ok(&self, args: &[&str]) -> Value {
        let (status, value) = self.json(args);
        assert_eq!(status, 0, "pactum {} failed: {value:#}", args.join(" "));
        assert_eq!(value["ok"], json!(true), "{value:#}");
        value
    }

    /// A command that must be refused with `code` and `exit`, changing nothing on disk.
    fn refused(&self, args: &[&str], code: &str, exit: i32) -> Value {
        let before = self.registry_bytes();
        let (status, value) = self.json(args);
        assert_eq!(status, exit, "exit status of pactum {}: {value:#}", args.join(" "));
        assert_eq!(value["ok"], json!(false), "{value:#}");
        assert_eq!(value["code"], json!(code), "code of pactum {}: {value:#}", args.join(" "));
        assert!(value["message"].as_str().is_some_and(|m| !m.is_empty()), "{value:#}");
        let errors = value["errors"].as_array().expect("errors is an array");
        assert!(!errors.is_empty(), "{value:#}");
        // A refusal by the gate lists validate's findings, each with its own code and
        // file; the first is the main one.
        if errors[0].get("file").is_some() {
            assert_eq!(errors[0]["code"], json!(code), "{value:#}");
        } else {
            assert!(errors.iter().all(|e| e["code"] == json!(code)), "{value:#}");
        }
        assert!(
            self.registry_bytes() == before,
            "registry.json changed after the refused `pactum {}`",
            args.join(" ")
        );
        no_temp_files(self.root());
        value
    }

    fn registry_bytes(&self) -> Vec<u8> {
        std::fs::read(self.path("registry.json")).unwrap()
    }

    fn registry(&self) -> Value {
        serde_json::from_slice(&self.registry_bytes()).expect("registry.json is JSON")
    }

    /// The registry entry of `id@version`.
    fn entry(&self, id: &str, version: &str) -> Value {
        let registry = self.registry();
        let (list, key) = if id.starts_with("PRM-") {
            ("prompt_packs", "prompt_pack_id")
        } else {
            ("contracts", "contract_id")
        };
        registry[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e[key] == json!(id) && e["version"] == json!(version))
            .cloned()
            .unwrap_or_else(|| panic!("{id}@{version} is not in registry.json"))
    }

    /// The scaffolded contract 1.0.0 as JSON.
    fn base_contract(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.path("contracts/notes/1.0.0.json")).unwrap())
            .unwrap()
    }

    /// Writes `contracts/notes/<version>.json`: the base contract with `version` set and
    /// `edit` applied. Returns the path relative to the root.
    fn write_version(&self, version: &str, edit: impl FnOnce(&mut Value)) -> String {
        let mut contract = self.base_contract();
        contract["version"] = json!(version);
        edit(&mut contract);
        let rel = format!("contracts/notes/{version}.json");
        std::fs::write(self.path(&rel), serde_json::to_vec_pretty(&contract).unwrap()).unwrap();
        rel
    }
}

fn add_optional_input(c: &mut Value) {
    c["input_schema"]["properties"]["lang"] = json!({"type": "string"});
}

fn add_required_input(c: &mut Value) {
    add_optional_input(c);
    c["input_schema"]["required"].as_array_mut().unwrap().push(json!("lang"));
    // Its examples give the new input, so the version passes the gate on its own merits.
    for example in c["examples"].as_array_mut().into_iter().flatten() {
        example["input"]["lang"] = json!("en");
    }
}

fn is_timestamp(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.len() == 20 && s.ends_with('Z') && s.as_bytes()[10] == b'T')
}

// ---------------------------------------------------------------------------------------
// Lifecycle: legal transitions
// ---------------------------------------------------------------------------------------

#[test]
fn legal_transitions_walk_draft_active_deprecated_removed() {
    let t = Tree::new();
    assert_eq!(t.entry(ID, "1.0.0")["state"], json!("draft"));
    assert_eq!(t.entry(PACK, "1.0.0")["state"], json!("draft"));

    // Options may follow the subcommand; run from another folder with --root.
    let elsewhere = tempfile::tempdir().unwrap();
    let root = t.root().to_str().unwrap().to_string();
    let pin = format!("{PACK}@1.0.0");
    let args = ["registry", "promote", pin.as_str(), "--root", root.as_str(), "--format", "json"];
    let out = pactum(elsewhere.path(), &args);
    assert_eq!(code_of(&out), 0, "{}", describe(&args, &out));
    let v = one_json(&args, &out);
    assert_eq!(v["state"], json!("active"));
    assert_eq!(v["kind"], json!("prompt_pack"));
    assert_eq!(v["compared_with"], Value::Null);

    let v = t.ok(&["registry", "promote", &format!("{ID}@1.0.0")]);
    assert_eq!((v["id"].clone(), v["state"].clone()), (json!(ID), json!("active")));
    let e = t.entry(ID, "1.0.0");
    assert!(is_timestamp(&e["activated_at"]), "{e}");

    // add → draft, then promote with the compatibility check against 1.0.0.
    let rel = t.write_version("1.1.0", add_optional_input);
    let v = t.ok(&["registry", "add", &rel]);
    assert_eq!(v["action"], json!("add"));
    let added = &v["entries"][0];
    assert_eq!(added["result"], json!("new"));
    assert_eq!(added["state"], json!("draft"));
    assert_eq!(added["path"], json!(rel));
    assert_eq!(added["sha256"], json!(sha256_hex(&std::fs::read(t.path(&rel)).unwrap())));
    let v = t.ok(&["registry", "promote", &format!("{ID}@1.1.0")]);
    assert_eq!(v["compared_with"], json!("1.0.0"));
    assert_eq!(v["required_bump"], json!("minor"));
    assert_eq!(v["declared_bump"], json!("minor"));
    assert_eq!(t.entry(ID, "1.1.0")["state"], json!("active"));

    // deprecate with a higher active successor (options after the pin, --root too).
    let v = t.ok(&[
        "registry",
        "deprecate",
        &format!("{ID}@1.0.0"),
        "--root",
        &root,
        "--successor",
        "1.1.0",
    ]);
    assert_eq!(v["state"], json!("deprecated"));
    assert_eq!(v["successor_version"], json!("1.1.0"));
    let e = t.entry(ID, "1.0.0");
    assert_eq!(e["state"], json!("deprecated"));
    assert_eq!(e["successor_version"], json!("1.1.0"));
    assert!(is_timestamp(&e["deprecated_at"]), "{e}");

    // remove a deprecated one.
    let v = t.ok(&["registry", "remove", &format!("{ID}@1.0.0")]);
    assert_eq!(v["state"], json!("removed"));
    let e = t.entry(ID, "1.0.0");
    assert_eq!(e["state"], json!("removed"));
    assert!(is_timestamp(&e["removed_at"]), "{e}");
    // The entry's identity fields never changed.
    assert_eq!(e["path"], json!("contracts/notes/1.0.0.json"));
    assert_eq!(
        e["sha256"],
        json!(sha256_hex(&std::fs::read(t.path("contracts/notes/1.0.0.json")).unwrap()))
    );

    let v = t.ok(&["registry", "verify"]);
    assert_eq!(v["entries"], json!(3));
    assert_eq!(v["history"], json!(8));
    no_temp_files(t.root());

    // Text mode says what happened.
    let out = t.run(&["registry", "verify"]);
    assert_eq!(code_of(&out), 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok"));
}

// ---------------------------------------------------------------------------------------
// Lifecycle: illegal transitions
// ---------------------------------------------------------------------------------------

#[test]
fn illegal_transitions_are_refused_and_leave_registry_json_unchanged() {
    let t = Tree::active();
    let rel = t.write_version("1.1.0", add_optional_input);
    t.ok(&["registry", "add", &rel]); // 1.1.0 is a draft
    let v100 = format!("{ID}@1.0.0");
    let v110 = format!("{ID}@1.1.0");

    let v = t.refused(&["registry", "promote", &v100], "registry_transition_invalid", 1);
    assert!(v["message"].as_str().unwrap().contains("active"), "{v:#}");
    t.refused(
        &["registry", "deprecate", &v110, "--successor", "2.0.0"],
        "registry_transition_invalid",
        1,
    );
    t.refused(&["registry", "remove", &v100], "registry_transition_invalid", 1);
    t.refused(&["registry", "remove", &v110], "registry_transition_invalid", 1);

    // Successors: a draft, a lower one, the same one, a missing one.
    let v = t.refused(
        &["registry", "deprecate", &v100, "--successor", "1.1.0"],
        "successor_missing",
        1,
    );
    assert!(v["message"].as_str().unwrap().contains("draft"), "{v:#}");
    let v = t.refused(
        &["registry", "deprecate", &v100, "--successor", "0.9.0"],
        "successor_missing",
        1,
    );
    assert!(v["message"].as_str().unwrap().contains("not higher"), "{v:#}");
    t.refused(&["registry", "deprecate", &v100, "--successor", "1.0.0"], "successor_missing", 1);
    let v = t.refused(
        &["registry", "deprecate", &v100, "--successor", "3.0.0"],
        "successor_missing",
        1,
    );
    assert!(v["message"].as_str().unwrap().contains("not registered"), "{v:#}");

    // Unknown ids and versions.
    let v = t.refused(&["registry", "promote", "PRC-NOTEZ-001@1.0.0"], "contract_not_found", 1);
    assert!(v["message"].as_str().unwrap().contains("did you mean"), "{v:#}");
    assert!(v["message"].as_str().unwrap().contains(ID), "{v:#}");
    t.refused(
        &["registry", "deprecate", "PRC-NOTEZ-001@1.0.0", "--successor", "1.1.0"],
        "contract_not_found",
        1,
    );
    t.refused(&["registry", "remove", "PRC-NOTEZ-001@1.0.0"], "contract_not_found", 1);
    let v = t.refused(
        &["registry", "promote", &format!("{ID}@9.9.9")],
        "contract_version_not_found",
        1,
    );
    assert!(v["message"].as_str().unwrap().contains("1.1.0"), "lists versions: {v:#}");
    t.refused(&["registry", "promote", "PRM-NOTEZ-001@1.0.0"], "prompt_pack_not_found", 1);

    // Usage errors: a range instead of an exact pin, a bad successor.
    t.refused(&["registry", "promote", &format!("{ID}@^1.0")], "pin_invalid", 2);
    t.refused(&["registry", "deprecate", &v100, "--successor", "1.1"], "pin_invalid", 2);

    // Now walk 1.0.0 to removed and try everything on it.
    t.ok(&["registry", "promote", &v110]);
    t.ok(&["registry", "deprecate", &v100, "--successor", "1.1.0"]);
    t.refused(&["registry", "promote", &v100], "registry_transition_invalid", 1);
    t.refused(
        &["registry", "deprecate", &v100, "--successor", "1.1.0"],
        "registry_transition_invalid",
        1,
    );
    t.ok(&["registry", "remove", &v100]);
    t.refused(&["registry", "promote", &v100], "registry_transition_invalid", 1);
    t.refused(&["registry", "remove", &v100], "registry_transition_invalid", 1);
    t.refused(
        &["registry", "deprecate", &v100, "--successor", "1.1.0"],
        "registry_transition_invalid",
        1,
    );
    // A removed (and lower) version is no successor.
    let rel = t.write_version("1.2.0", add_optional_input);
    t.ok(&["registry", "add", &rel]);
    t.ok(&["registry", "promote", &format!("{ID}@1.2.0")]);
    t.refused(
        &["registry", "deprecate", &format!("{ID}@1.2.0"), "--successor", "1.0.0"],
        "successor_missing",
        1,
    );

    check_chain_independently(&t.registry());
}

#[test]
fn refusals_print_error_code_on_stderr_in_text_mode() {
    let t = Tree::active();
    let before = t.registry_bytes();
    let out = t.run(&["registry", "promote", &format!("{ID}@1.0.0")]);
    assert_eq!(code_of(&out), 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error[registry_transition_invalid]"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(t.registry_bytes(), before);
}

#[test]
fn promote_refuses_a_contract_whose_pack_is_a_draft() {
    let t = Tree::new();
    // The gate: validate would report the draft pack once the contract is active.
    let v = t.refused(&["registry", "promote", &format!("{ID}@1.0.0")], "prompt_pack_not_found", 1);
    let message = v["message"].as_str().unwrap();
    assert!(message.contains(&format!("pactum registry promote {PACK}@1.0.0")), "{message}");
    // Once the pack is active the same promote goes through.
    t.ok(&["registry", "promote", &format!("{PACK}@1.0.0")]);
    t.ok(&["registry", "promote", &format!("{ID}@1.0.0")]);
}

#[test]
fn promote_refuses_a_bump_smaller_than_the_changes_need() {
    let t = Tree::active();
    // 1.0.0 → 1.0.1 adds a required input: needs major, declares patch.
    let rel = t.write_version("1.0.1", add_required_input);
    t.ok(&["registry", "add", &rel]);
    let v =
        t.refused(&["registry", "promote", &format!("{ID}@1.0.1")], "incompatible_version_bump", 1);
    let message = v["message"].as_str().unwrap();
    for needle in ["/input_schema/properties/lang", "added_required", "patch", "major", "1.0.0"] {
        assert!(message.contains(needle), "message lacks {needle:?}: {message}");
    }
    assert_eq!(t.entry(ID, "1.0.1")["state"], json!("draft"));

    // A minor bump is still too small for a new required input.
    let rel = t.write_version("1.1.0", add_required_input);
    t.ok(&["registry", "add", &rel]);
    t.refused(&["registry", "promote", &format!("{ID}@1.1.0")], "incompatible_version_bump", 1);

    // A major bump is enough.
    let rel = t.write_version("2.0.0", add_required_input);
    t.ok(&["registry", "add", &rel]);
    let v = t.ok(&["registry", "promote", &format!("{ID}@2.0.0")]);
    assert_eq!(v["required_bump"], json!("major"));
    assert_eq!(v["declared_bump"], json!("major"));
}

#[test]
fn promote_checks_the_bump_against_a_deprecated_previous_version() {
    // 1.0.0 is deprecated in favour of 2.0.0; a 1.0.1 "patch" that retypes the output must
    // still be refused, as `validate` (check 8) refuses it. Today promote compares only
    // with the highest *active* lower version, finds none, and activates 1.0.1: every
    // `^1.0` caller silently gets a breaking output type.
    let t = Tree::active();
    let retype = |c: &mut Value| {
        c["output_schema"]["properties"]["result"]["type"] = json!("integer");
        // Its examples answer in the new type, so only the bump is wrong.
        for example in c["examples"].as_array_mut().into_iter().flatten() {
            example["response"] = json!("{\"result\": 1}");
        }
    };
    let major = t.write_version("2.0.0", retype);
    let patch = t.write_version("1.0.1", retype);
    t.ok(&["registry", "add", &major, &patch]);
    t.ok(&["registry", "promote", &format!("{ID}@2.0.0")]);
    t.ok(&["registry", "deprecate", &format!("{ID}@1.0.0"), "--successor", "2.0.0"]);
    let (_, report) = validate_json(t.root(), &[]);
    assert_eq!(diagnostics_with_code(&report, "incompatible_version_bump").len(), 1, "{report:#}");
    t.refused(&["registry", "promote", &format!("{ID}@1.0.1")], "incompatible_version_bump", 1);
}

#[test]
fn promote_and_validate_check_the_bump_against_a_removed_previous_version() {
    // 1.0.0 is deprecated in favour of 2.0.0, then removed. What `^1` callers were promised
    // is still 1.0.0's: a 1.0.1 "patch" that retypes the output must be refused by promote
    // and reported by validate, however the removed version's file was treated since.
    let t = Tree::active();
    let retype = |c: &mut Value| {
        c["output_schema"]["properties"]["result"]["type"] = json!("integer");
        for example in c["examples"].as_array_mut().into_iter().flatten() {
            example["response"] = json!("{\"result\": 1}");
        }
    };
    let major = t.write_version("2.0.0", retype);
    let patch = t.write_version("1.0.1", retype);
    t.ok(&["registry", "add", &major, &patch]);
    t.ok(&["registry", "promote", &format!("{ID}@2.0.0")]);
    t.ok(&["registry", "deprecate", &format!("{ID}@1.0.0"), "--successor", "2.0.0"]);
    t.ok(&["registry", "remove", &format!("{ID}@1.0.0")]);
    assert_eq!(t.entry(ID, "1.0.0")["state"], json!("removed"));

    let expect_refused = |needles: &[&str]| {
        let (_, report) = validate_json(t.root(), &[]);
        let found = diagnostics_with_code(&report, "incompatible_version_bump");
        assert_eq!(found.len(), 1, "{report:#}");
        assert_eq!(found[0]["file"], json!(patch), "{report:#}");
        let v = t.refused(
            &["registry", "promote", &format!("{ID}@1.0.1")],
            "incompatible_version_bump",
            1,
        );
        let message = v["message"].as_str().unwrap();
        for needle in needles {
            assert!(message.contains(needle), "promote's message lacks {needle:?}: {message}");
            let finding = found[0]["message"].as_str().unwrap();
            assert!(finding.contains(needle), "validate's finding lacks {needle:?}: {finding}");
        }
        found[0]["help"].as_str().unwrap_or_default().to_string()
    };
    // The removed file as frozen: compared, and the retype needs major.
    expect_refused(&["/output_schema/properties/result", "1.0.0", "patch", "major"]);

    // The removed file edited to look like the new version: not the frozen file, so it
    // cannot be compared and only a major version may follow.
    let old = t.path("contracts/notes/1.0.0.json");
    let frozen = std::fs::read(&old).unwrap();
    let mut edited = t.base_contract();
    retype(&mut edited);
    std::fs::write(&old, serde_json::to_vec_pretty(&edited).unwrap()).unwrap();
    expect_refused(&["no longer the one frozen", "only a major version may follow"]);

    // The removed file deleted: the same, with a hint naming a free major version.
    std::fs::remove_file(&old).unwrap();
    let help = expect_refused(&["its file is gone", "only a major version may follow"]);
    assert!(help.contains(&format!("pactum new version {ID}@3.0.0")), "{help}");

    // Restored as frozen, the comparison is back; a major version is always accepted.
    std::fs::write(&old, &frozen).unwrap();
    expect_refused(&["/output_schema/properties/result"]);
    let next = t.write_version("3.0.0", retype);
    std::fs::remove_file(&old).unwrap();
    t.ok(&["registry", "discard", &format!("{ID}@1.0.1"), "--delete"]);
    t.ok(&["registry", "add", &next]);
    let (_, report) = validate_json(t.root(), &[]);
    assert!(diagnostics_with_code(&report, "incompatible_version_bump").is_empty(), "{report:#}");
    t.ok(&["registry", "promote", &format!("{ID}@3.0.0")]);
}

#[test]
fn remove_never_strands_a_deprecated_version_without_its_successor() {
    // 1.0.0 → successor 1.1.0 → successor 1.2.0. Removing 1.1.0 is legal on its own, but it
    // leaves 1.0.0 pointing at a removed successor: `registry verify` and `validate` would
    // then fail with successor_missing, and no command could repair it (1.0.0 is no longer
    // active, so it cannot be deprecated again with another successor). So `remove`
    // refuses, names the dependent version, and writes nothing.
    let t = Tree::active();
    let a = t.write_version("1.1.0", add_optional_input);
    let b = t.write_version("1.2.0", |c| {
        add_optional_input(c);
        c["input_schema"]["properties"]["tone"] = json!({"type": "string"});
    });
    t.ok(&["registry", "add", &a, &b]);
    t.ok(&["registry", "promote", &format!("{ID}@1.1.0")]);
    t.ok(&["registry", "promote", &format!("{ID}@1.2.0")]);
    t.ok(&["registry", "deprecate", &format!("{ID}@1.0.0"), "--successor", "1.1.0"]);
    t.ok(&["registry", "deprecate", &format!("{ID}@1.1.0"), "--successor", "1.2.0"]);
    let before = t.registry_bytes();
    let (status, v) = t.json(&["registry", "remove", &format!("{ID}@1.1.0")]);
    assert_eq!(status, 1, "{v:#}");
    assert_eq!(v["code"], "registry_transition_invalid", "{v:#}");
    assert_eq!(t.registry_bytes(), before);
    assert!(v["message"].as_str().unwrap().contains("1.0.0"), "names the dependent: {v:#}");
    let (status, verify) = t.json(&["registry", "verify"]);
    assert_eq!(status, 0, "the refused remove left a registry that verifies: {verify:#}");
}

#[test]
fn remove_refuses_a_pack_version_an_active_contract_pins() {
    // The scaffolded contract pins `prompt_pack_version: "1.0.0"`. Promote refuses a
    // contract whose pack is not active; symmetrically, removing that pack version while
    // the active contract pins it must be refused, or `pactum resolve PRC-NOTES-001` fails
    // with prompt_pack_not_found (and `registry verify` still says ok).
    let t = Tree::active();
    let mut pack: Value =
        serde_json::from_slice(&std::fs::read(t.path("prompt_packs/notes/1.0.0.json")).unwrap())
            .unwrap();
    pack["version"] = json!("1.1.0");
    let rel = "prompt_packs/notes/1.1.0.json";
    std::fs::write(t.path(rel), serde_json::to_vec_pretty(&pack).unwrap()).unwrap();
    t.ok(&["registry", "add", rel]);
    t.ok(&["registry", "promote", &format!("{PACK}@1.1.0")]);
    t.ok(&["registry", "deprecate", &format!("{PACK}@1.0.0"), "--successor", "1.1.0"]);
    let v = t.refused(
        &["registry", "remove", &format!("{PACK}@1.0.0")],
        "registry_transition_invalid",
        1,
    );
    assert!(v["message"].as_str().unwrap().contains(ID), "names the contract: {v:#}");
    t.ok(&["resolve", ID]);
}

#[test]
fn promote_freezes_the_drafts_content_at_that_moment() {
    let t = Tree::active();
    let rel = t.write_version("1.1.0", add_optional_input);
    t.ok(&["registry", "add", &rel]);
    // The draft is edited after `add`: that is its working copy, not an error.
    let mut text = std::fs::read(t.path(&rel)).unwrap();
    text.extend_from_slice(b"\n");
    std::fs::write(t.path(&rel), &text).unwrap();
    let frozen = sha256_hex(&text);
    let v = t.ok(&["registry", "promote", &format!("{ID}@1.1.0")]);
    assert_eq!(v["sha256"], json!(frozen));
    assert_eq!(t.entry(ID, "1.1.0")["sha256"], json!(frozen));
    let history = check_chain_independently(&t.registry());
    let last = history.last().unwrap();
    assert_eq!((last["action"].clone(), last["sha256"].clone()), (json!("promote"), json!(frozen)));
    t.ok(&["registry", "verify"]);
    // From then on the file never changes.
    text.extend_from_slice(b"\n");
    std::fs::write(t.path(&rel), &text).unwrap();
    t.refused(&["registry", "verify"], "contract_hash_mismatch", 1);
}

// ---------------------------------------------------------------------------------------
// add
// ---------------------------------------------------------------------------------------

#[test]
fn add_reports_unchanged_and_refreshes_an_edited_draft() {
    let t = Tree::new();
    let rel = "contracts/notes/1.0.0.json";
    let before = t.registry_bytes();
    let v = t.ok(&["registry", "add", rel]);
    assert_eq!(v["entries"][0]["result"], json!("unchanged"));
    assert_eq!(v["entries"][0]["state"], json!("draft"));
    assert!(t.registry_bytes() == before, "an unchanged add must not change registry.json");

    // Edit the draft: a working copy. Re-adding it changes nothing and records nothing.
    let mut c = t.base_contract();
    c["metadata"]["description"] = json!("Takes notes.");
    std::fs::write(t.path(rel), serde_json::to_vec_pretty(&c).unwrap()).unwrap();
    let v = t.ok(&["registry", "add", rel, "--format", "json"]);
    assert_eq!(v["entries"][0]["result"], json!("unchanged"));
    assert_eq!(v["entries"][0]["state"], json!("draft"));
    assert!(
        t.registry_bytes() == before,
        "re-adding an edited draft must not change registry.json"
    );
    t.ok(&["registry", "verify"]);

    // A draft moved to another file: re-adding records the new path (`update`).
    let moved = "contracts/notes/draft.json";
    std::fs::rename(t.path(rel), t.path(moved)).unwrap();
    let new_sha = sha256_hex(&std::fs::read(t.path(moved)).unwrap());
    let v = t.ok(&["registry", "add", moved]);
    assert_eq!(v["entries"][0]["result"], json!("updated"));
    assert_eq!(t.entry(ID, "1.0.0")["path"], json!(moved));
    assert_eq!(t.entry(ID, "1.0.0")["sha256"], json!(new_sha));
    let history = check_chain_independently(&t.registry());
    let last = history.last().unwrap();
    assert_eq!(last["action"], json!("update"));
    assert_eq!(last["path"], json!(moved));
    t.ok(&["registry", "verify"]);
    std::fs::rename(t.path(moved), t.path(rel)).unwrap();
    t.ok(&["registry", "add", rel]);
    // A copy beside the registered file claims the same version: refused, naming both.
    let copy = "contracts/notes/copy.json";
    std::fs::copy(t.path(rel), t.path(copy)).unwrap();
    let v = t.refused(&["registry", "add", copy], "registry_duplicate_entry", 1);
    let message = v["message"].as_str().unwrap();
    assert!(message.starts_with(copy) && message.contains(&format!("from {rel}")), "{message}");
    std::fs::remove_file(t.path(copy)).unwrap();

    // Several files in one command.
    let a = t.write_version("1.1.0", add_optional_input);
    let b = t.write_version("1.2.0", add_optional_input);
    let v = t.ok(&["registry", "add", &a, &b]);
    assert_eq!(v["entries"].as_array().unwrap().len(), 2);
    assert!(v["entries"].as_array().unwrap().iter().all(|e| e["result"] == json!("new")));
}

#[test]
fn re_adding_an_active_file_with_changed_content_is_refused() {
    let t = Tree::active();
    let rel = "contracts/notes/1.0.0.json";
    let mut c = t.base_contract();
    c["metadata"]["description"] = json!("changed after activation");
    std::fs::write(t.path(rel), serde_json::to_vec_pretty(&c).unwrap()).unwrap();
    let v = t.refused(&["registry", "add", rel], "registry_entry_immutable", 1);
    assert!(v["message"].as_str().unwrap().contains(&format!("{ID}@1.0.0")), "{v:#}");
    // Also for the pack.
    let pack = "prompt_packs/notes/1.0.0.json";
    let mut text = std::fs::read(t.path(pack)).unwrap();
    text.extend_from_slice(b" ");
    std::fs::write(t.path(pack), text).unwrap();
    t.refused(&["registry", "add", pack], "registry_entry_immutable", 1);
}

#[test]
fn a_byte_identical_copy_of_an_active_file_is_a_second_claim_not_a_change() {
    let t = Tree::active();
    let rel = "contracts/notes/1.0.0.json";
    std::fs::create_dir_all(t.path("contracts/copy")).unwrap();
    std::fs::copy(t.path(rel), t.path("contracts/copy/1.0.0.json")).unwrap();
    let v =
        t.refused(&["registry", "add", "contracts/copy/1.0.0.json"], "registry_duplicate_entry", 1);
    let message = v["message"].as_str().unwrap();
    assert!(message.contains("(active) from contracts/notes/1.0.0.json"), "{message}");
    assert!(!message.contains("changed"), "{message}");
}

#[test]
fn a_failing_file_makes_the_whole_add_refused() {
    let t = Tree::active();
    let good = t.write_version("1.1.0", add_optional_input);
    std::fs::write(t.path("not_governed.json"), b"{\"hello\": 1}").unwrap();
    t.refused(&["registry", "add", &good, "not_governed.json"], "contract_schema_invalid", 1);
    assert!(
        !String::from_utf8_lossy(&t.registry_bytes()).contains("1.1.0"),
        "nothing of a refused add is registered"
    );
    // A missing file is an I/O error (exit 2) that names the file, whether its folder
    // exists or not (a mistyped folder once walked up to a project root of "").
    for missing in ["contracts/notes/nope.json", "contracts/PRC-NOTES-001/1.0.0.json"] {
        let v = t.refused(&["registry", "add", missing], "io_error", 2);
        let message = v["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("{missing}: ")), "{v:#}");
    }
}

#[test]
fn root_names_the_project_folder_and_is_never_walked_up_from() {
    // A folder inside the project without a registry.json, and one that does not exist:
    // no registry command acts on the project above them.
    let t = Tree::active();
    std::fs::create_dir_all(t.path("other")).unwrap();
    let v100 = format!("{ID}@1.0.0");
    let commands: [&[&str]; 4] = [
        &["registry", "label", ID, "prod", "1.0.0"],
        &["registry", "verify"],
        &["registry", "list"],
        &["registry", "promote", &v100],
    ];
    for args in commands {
        for root in ["other", "missing"] {
            let with: Vec<&str> = args.iter().copied().chain(["--root", root]).collect();
            let v = t.refused(&with, "io_error", 2);
            let message = v["message"].as_str().unwrap();
            assert!(message.starts_with(root), "{v:#}");
            assert!(message.contains("--root"), "{v:#}");
        }
    }
    // `registry add` may start a registry in an existing folder, never in a missing one.
    t.refused(
        &["registry", "add", "contracts/notes/1.0.0.json", "--root", "missing"],
        "io_error",
        2,
    );
    assert!(!t.path("missing").exists());
}

#[test]
fn add_refuses_files_outside_the_root() {
    let t = Tree::active();
    // A sibling of the project root, so `..` from inside the root reaches it.
    let outside = tempfile::tempdir_in(t.root().parent().unwrap()).unwrap();
    let mut c = t.base_contract();
    c["version"] = json!("1.1.0");
    let file = outside.path().join("1.1.0.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&c).unwrap()).unwrap();
    let v = t.refused(&["registry", "add", file.to_str().unwrap()], "path_escape", 1);
    assert!(v["message"].as_str().unwrap().contains("outside"), "{v:#}");
    // Through `..` from inside the root.
    let name = outside.path().file_name().unwrap().to_str().unwrap();
    let dotdot = format!("../{name}/1.1.0.json");
    assert!(t.root().join(&dotdot).is_file(), "{dotdot} reaches the file");
    t.refused(&["registry", "add", &dotdot], "path_escape", 1);
    // A symlink inside the root that leads outside.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&file, t.path("contracts/notes/link.json")).unwrap();
        t.refused(&["registry", "add", "contracts/notes/link.json"], "path_escape", 1);
    }
}

#[test]
fn add_refuses_files_with_a_hidden_component_anywhere_in_their_path() {
    // A governed file never lives in `.git/`, `.pactum/` or any dot-folder, nor is it a
    // dot-file: `registry add` refuses it as it refuses a path leaving the root.
    let t = Tree::active();
    let mut c = t.base_contract();
    c["version"] = json!("1.1.0");
    let bytes = serde_json::to_vec_pretty(&c).unwrap();
    for rel in [
        "contracts/.secret/1.1.0.json",
        ".drafts/1.1.0.json",
        ".git/hooks/1.1.0.json",
        "contracts/notes/.1.1.0.json",
    ] {
        std::fs::create_dir_all(t.path(rel).parent().unwrap()).unwrap();
        std::fs::write(t.path(rel), &bytes).unwrap();
        let v = t.refused(&["registry", "add", rel], "path_escape", 1);
        assert!(v["message"].as_str().unwrap().contains("hidden"), "{rel}: {v:#}");
        // Spelled through `./` and `..`, or absolute: the same.
        let dotted = format!("./contracts/../{rel}");
        t.refused(&["registry", "add", &dotted], "path_escape", 1);
        t.refused(&["registry", "add", t.path(rel).to_str().unwrap()], "path_escape", 1);
    }
    // A visible link to a hidden file: what would be registered is the hidden file.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(".secret/1.1.0.json", t.path("contracts/link.json")).unwrap();
        t.refused(&["registry", "add", "contracts/link.json"], "path_escape", 1);
    }
    // The same file in a visible folder is registered.
    let rel = t.write_version("1.1.0", |_| {});
    t.ok(&["registry", "add", &rel]);
}

#[test]
fn schema_references_reach_project_content_only_never_hidden_folders() {
    // A `$ref` is read like any file a document names for pactum: `.schemas/lang.json` is
    // refused as `.git/config` would be (a finding may quote what it read), and the same
    // schema in a visible folder is recorded in the entry's `refs` at promote.
    let t = Tree::new();
    for folder in [".schemas", "schemas-shared"] {
        std::fs::create_dir_all(t.path(folder)).unwrap();
        std::fs::write(t.path(&format!("{folder}/lang.json")), br#"{"type": "string"}"#).unwrap();
    }
    let rel = "contracts/notes/1.0.0.json";
    let mut c = t.base_contract();
    c["input_schema"]["properties"]["lang"] = json!({"$ref": "../../.schemas/lang.json"});
    std::fs::write(t.path(rel), serde_json::to_vec_pretty(&c).unwrap()).unwrap();
    t.ok(&["registry", "add", rel]);
    // The gate validates the contract bound to the pack, and refuses.
    let (status, refused) = t.json(&["registry", "promote", &format!("{PACK}@1.0.0")]);
    assert_eq!(status, 1, "{refused:#}");
    assert_eq!(refused["code"], "contract_schema_invalid", "{refused:#}");
    assert!(refused["message"].as_str().unwrap().contains("hidden path `.schemas`"), "{refused:#}");

    c["input_schema"]["properties"]["lang"] = json!({"$ref": "../../schemas-shared/lang.json"});
    std::fs::write(t.path(rel), serde_json::to_vec_pretty(&c).unwrap()).unwrap();
    t.ok(&["registry", "add", rel]);
    t.ok(&["registry", "promote", &format!("{PACK}@1.0.0")]);
    t.ok(&["registry", "promote", &format!("{ID}@1.0.0")]);
    assert!(
        t.entry(ID, "1.0.0")["refs"].get("schemas-shared/lang.json").is_some(),
        "{:#}",
        t.registry()
    );
    t.ok(&["registry", "verify"]);
    t.ok(&["resolve", ID]);
}

// ---------------------------------------------------------------------------------------
// verify and log
// ---------------------------------------------------------------------------------------

#[test]
fn verify_passes_on_a_good_tree_and_fails_after_a_file_or_event_edit() {
    let t = Tree::active();
    let v = t.ok(&["registry", "verify"]);
    assert_eq!(v["errors"], json!([]));
    assert_eq!(v["entries"], json!(2));
    assert_eq!(v["history"], json!(4));

    // A governed file edited by hand: hash mismatch.
    let rel = "contracts/notes/1.0.0.json";
    let good = std::fs::read(t.path(rel)).unwrap();
    let mut edited = good.clone();
    edited.extend_from_slice(b"\n");
    std::fs::write(t.path(rel), &edited).unwrap();
    let (status, v) = t.json(&["registry", "verify"]);
    assert_eq!(status, 1, "{v:#}");
    assert_eq!(v["ok"], json!(false));
    assert_eq!(v["code"], json!("contract_hash_mismatch"));
    assert!(v["message"].as_str().is_some());
    let errors = v["errors"].as_array().unwrap();
    assert!(
        errors.iter().any(|e| e["code"] == json!("contract_hash_mismatch")
            && e["pointer"] == json!("/contracts/0/sha256")),
        "{v:#}"
    );
    let out = t.run(&["registry", "verify"]);
    assert_eq!(code_of(&out), 1);
    assert!(String::from_utf8_lossy(&out.stdout).contains("contract_hash_mismatch"));
    std::fs::write(t.path(rel), &good).unwrap();
    t.ok(&["registry", "verify"]);

    // An event edited by hand: the chain breaks.
    let good_registry = t.registry_bytes();
    let mut reg = t.registry();
    reg["history"][1]["version"] = json!("9.9.9");
    std::fs::write(t.path("registry.json"), serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
    let (status, v) = t.json(&["registry", "verify"]);
    assert_eq!(status, 1, "{v:#}");
    assert_eq!(v["code"], json!("registry_history_broken"));
    assert!(
        v["errors"].as_array().unwrap().iter().any(|e| e["pointer"] == json!("/history/1")),
        "{v:#}"
    );
    // Writers refuse to append to a broken chain.
    let rel = t.write_version("1.1.0", add_optional_input);
    t.refused(&["registry", "add", &rel], "registry_history_broken", 1);

    // An event removed: the chain breaks too.
    let mut reg: Value = serde_json::from_slice(&good_registry).unwrap();
    reg["history"].as_array_mut().unwrap().remove(1);
    std::fs::write(t.path("registry.json"), serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
    let (status, v) = t.json(&["registry", "verify"]);
    assert_eq!((status, v["code"].clone()), (1, json!("registry_history_broken")), "{v:#}");

    // Events reordered.
    let mut reg: Value = serde_json::from_slice(&good_registry).unwrap();
    reg["history"].as_array_mut().unwrap().swap(1, 2);
    std::fs::write(t.path("registry.json"), serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
    let (status, v) = t.json(&["registry", "verify"]);
    assert_eq!((status, v["code"].clone()), (1, json!("registry_history_broken")), "{v:#}");

    // An entry path edited to leave the root.
    let mut reg: Value = serde_json::from_slice(&good_registry).unwrap();
    reg["contracts"][0]["path"] = json!("../outside/1.0.0.json");
    std::fs::write(t.path("registry.json"), serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
    let (status, v) = t.json(&["registry", "verify"]);
    assert_eq!((status, v["code"].clone()), (1, json!("path_escape")), "{v:#}");
    assert!(
        v["errors"].as_array().unwrap().iter().any(|e| e["pointer"] == json!("/contracts/0/path")),
        "{v:#}"
    );

    std::fs::write(t.path("registry.json"), &good_registry).unwrap();
    t.ok(&["registry", "verify"]);
}

#[test]
fn verify_and_the_runtime_replay_entry_timestamps() {
    // 1.0.0 promoted, then deprecated in favour of 1.1.0. Each timestamp of an entry is the
    // time of the history event that made it; a hand edit (a migration period stretched
    // by moving `deprecated_at`, an older `registered_at`, a `removed_at` on a version
    // never removed, an `activated_at` dropped) is a `registry_history_mismatch` at that
    // field, from `verify`, `validate` and the runtime alike.
    let t = Tree::active();
    let rel = t.write_version("1.1.0", add_optional_input);
    t.ok(&["registry", "add", &rel]);
    t.ok(&["registry", "promote", &format!("{ID}@1.1.0")]);
    t.ok(&["registry", "deprecate", &format!("{ID}@1.0.0"), "--successor", "1.1.0"]);
    t.ok(&["registry", "verify"]);
    let good = t.registry_bytes();
    let index = |version: &str| {
        t.registry()["contracts"]
            .as_array()
            .unwrap()
            .iter()
            .position(|e| e["version"] == json!(version))
            .unwrap()
    };
    let (old, new) = (index("1.0.0"), index("1.1.0"));
    let far = json!("2099-01-01T00:00:00Z");
    let cases: Vec<(usize, &str, Option<Value>)> = vec![
        (old, "deprecated_at", Some(far.clone())),
        (old, "registered_at", Some(json!("2020-01-01T00:00:00Z"))),
        (old, "activated_at", Some(far.clone())),
        (old, "activated_at", None),
        (old, "removed_at", Some(far.clone())),
        (new, "activated_at", Some(far.clone())),
        (new, "deprecated_at", Some(far.clone())),
    ];
    for (at, field, value) in cases {
        let mut reg: Value = serde_json::from_slice(&good).unwrap();
        let entry = reg["contracts"][at].as_object_mut().unwrap();
        match &value {
            Some(v) => entry.insert(field.to_string(), v.clone()),
            None => entry.remove(field),
        };
        std::fs::write(t.path("registry.json"), serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
        let case = format!("{field} of /contracts/{at} set to {value:?}");
        let (status, v) = t.json(&["registry", "verify"]);
        assert_eq!(status, 1, "{case}: {v:#}");
        assert_eq!(v["code"], json!("registry_history_mismatch"), "{case}: {v:#}");
        let pointer = json!(format!("/contracts/{at}/{field}"));
        let found: Vec<&Value> =
            v["errors"].as_array().unwrap().iter().filter(|e| e["pointer"] == pointer).collect();
        assert_eq!(found.len(), 1, "{case}: {v:#}");
        assert!(found[0]["message"].as_str().unwrap().contains(field), "{case}: {v:#}");
        let (_, report) = validate_json(t.root(), &[]);
        let mismatches = diagnostics_with_code(&report, "registry_history_mismatch");
        assert!(mismatches.iter().any(|d| d["pointer"] == pointer), "{case}: {report:#}");
        if at == new {
            // The runtime refuses the entry it would use.
            let (status, v) = t.json(&["resolve", ID]);
            assert_ne!(status, 0, "{case}: {v:#}");
            assert_eq!(v["code"], json!("registry_history_mismatch"), "{case}: {v:#}");
        }
    }
    std::fs::write(t.path("registry.json"), &good).unwrap();
    t.ok(&["registry", "verify"]);
    t.ok(&["resolve", ID]);
}

#[test]
fn adopted_entries_keep_their_timestamps_in_the_adopt_event() {
    // A registry without a history (hand-written, or from before histories) is adopted:
    // each entry's timestamps, which predate the history, are recorded in its `adopt`
    // event, so a later hand edit of them is a mismatch like any other.
    let t = Tree::active();
    let mut reg = t.registry();
    reg.as_object_mut().unwrap().remove("history");
    reg["contracts"][0]["activated_at"] = json!("2025-06-01T12:00:00Z");
    std::fs::write(t.path("registry.json"), serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
    t.ok(&["registry", "adopt"]);
    let adopted = t.registry();
    let event = adopted["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == json!("adopt") && e["id"] == json!(ID))
        .cloned()
        .unwrap();
    assert_eq!(event["times"]["activated_at"], json!("2025-06-01T12:00:00Z"), "{event:#}");
    assert_eq!(event["times"]["registered_at"], reg["contracts"][0]["registered_at"]);
    t.ok(&["registry", "verify"]);
    let good = t.registry_bytes();
    for (field, value) in [
        ("activated_at", json!("2026-06-01T12:00:00Z")),
        ("registered_at", json!("2020-01-01T00:00:00Z")),
        ("deprecated_at", json!("2099-01-01T00:00:00Z")),
    ] {
        let mut reg: Value = serde_json::from_slice(&good).unwrap();
        reg["contracts"][0][field] = value;
        std::fs::write(t.path("registry.json"), serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
        let (status, v) = t.json(&["registry", "verify"]);
        assert_eq!((status, v["code"].clone()), (1, json!("registry_history_mismatch")), "{v:#}");
        let pointer = json!(format!("/contracts/0/{field}"));
        assert!(v["errors"].as_array().unwrap().iter().any(|e| e["pointer"] == pointer), "{v:#}");
    }
    std::fs::write(t.path("registry.json"), &good).unwrap();
    // A transition after the adoption is replayed from its own event.
    let rel = t.write_version("1.1.0", add_optional_input);
    t.ok(&["registry", "add", &rel]);
    t.ok(&["registry", "promote", &format!("{ID}@1.1.0")]);
    t.ok(&["registry", "deprecate", &format!("{ID}@1.0.0"), "--successor", "1.1.0"]);
    t.ok(&["registry", "verify"]);
}

#[test]
fn log_lists_events_in_order_and_filters_by_id() {
    let t = Tree::active();
    let rel = t.write_version("1.1.0", add_optional_input);
    t.ok(&["registry", "add", &rel]);
    t.ok(&["registry", "promote", &format!("{ID}@1.1.0")]);
    t.ok(&["registry", "deprecate", &format!("{ID}@1.0.0"), "--successor", "1.1.0"]);

    let v = t.ok(&["registry", "log"]);
    let events = v["events"].as_array().unwrap();
    let summary: Vec<(u64, &str, &str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["seq"].as_u64().unwrap(),
                e["action"].as_str().unwrap(),
                e["id"].as_str().unwrap(),
                e["version"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (1, "add", PACK, "1.0.0"),
            (2, "add", ID, "1.0.0"),
            (3, "promote", PACK, "1.0.0"),
            (4, "promote", ID, "1.0.0"),
            (5, "add", ID, "1.1.0"),
            (6, "promote", ID, "1.1.0"),
            (7, "deprecate", ID, "1.0.0"),
        ]
    );
    // The log is the history of registry.json, event for event.
    assert_eq!(json!(events), t.registry()["history"]);

    let v = t.ok(&["registry", "log", PACK]);
    let seqs: Vec<u64> =
        v["events"].as_array().unwrap().iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 3]);
    assert!(v["events"].as_array().unwrap().iter().all(|e| e["id"] == json!(PACK)));

    let v = t.ok(&["registry", "log", ID, "--format", "json"]);
    let seqs: Vec<u64> =
        v["events"].as_array().unwrap().iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [2, 4, 5, 6, 7]);

    // An id the registry never had is not found (as for `list`), one that is no id is
    // refused with the rule, and an id with a version is a usage error.
    for args in [["registry", "log", "PRC-NOTEZ-001"], ["registry", "list", "PRC-NOTEZ-001"]] {
        let v = t.refused(&args, "contract_not_found", 1);
        assert!(v["message"].as_str().unwrap().contains(ID), "did you mean: {v:#}");
    }
    for sub in ["log", "list"] {
        t.refused(&["registry", sub, "bogus"], "pin_invalid", 2);
        t.refused(&["registry", sub, &format!("{ID}@1.0.0")], "usage_error", 2);
    }

    // Text: one line per event, in order.
    let out = t.run(&["registry", "log", ID]);
    assert_eq!(code_of(&out), 0);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].contains("add") && lines[4].contains("deprecate"), "{text}");
}

// ---------------------------------------------------------------------------------------
// History chain, checked without the library
// ---------------------------------------------------------------------------------------

#[test]
fn history_chain_verifies_independently_of_the_library() {
    let t = Tree::active();
    let a = t.write_version("1.1.0", add_optional_input);
    t.ok(&["registry", "add", &a]);
    // Edit the draft (a working copy: no event until promote freezes it).
    let mut c: Value = serde_json::from_slice(&std::fs::read(t.path(&a)).unwrap()).unwrap();
    c["metadata"]["description"] = json!("second draft");
    std::fs::write(t.path(&a), serde_json::to_vec_pretty(&c).unwrap()).unwrap();
    t.ok(&["registry", "add", &a]);
    t.ok(&["registry", "promote", &format!("{ID}@1.1.0")]);
    t.ok(&["registry", "deprecate", &format!("{ID}@1.0.0"), "--successor", "1.1.0"]);
    t.ok(&["registry", "remove", &format!("{ID}@1.0.0")]);
    let b = t.write_version("2.0.0", add_required_input);
    t.ok(&["registry", "add", &b]);
    t.ok(&["registry", "promote", &format!("{ID}@2.0.0")]);

    let registry = t.registry();
    let history = check_chain_independently(&registry);
    let actions: Vec<&str> = history.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(
        actions,
        [
            "add",
            "add",
            "promote",
            "promote",
            "add",
            "promote",
            "deprecate",
            "remove",
            "add",
            "promote"
        ]
    );
    for event in &history {
        let keys: Vec<&String> = event.as_object().unwrap().keys().collect();
        let mut keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
        keys.sort();
        // Every event records who made it; `add` the file, `deprecate` the successor.
        let expected: &[&str] = match event["action"].as_str().unwrap() {
            "add" => {
                &["action", "actor", "at", "hash", "id", "path", "prev", "seq", "sha256", "version"]
            }
            "deprecate" => &[
                "action",
                "actor",
                "at",
                "hash",
                "id",
                "prev",
                "seq",
                "sha256",
                "successor",
                "version",
            ],
            _ => &["action", "actor", "at", "hash", "id", "prev", "seq", "sha256", "version"],
        };
        assert_eq!(keys, expected, "{event}");
        assert!(is_timestamp(&event["at"]), "{event}");
        assert!(is_lower_hex_64(event["sha256"].as_str().unwrap()), "{event}");
    }
    // Entries hash their file's exact bytes, and the last event of each version carries it.
    for list in ["contracts", "prompt_packs"] {
        for entry in registry[list].as_array().unwrap() {
            let bytes = std::fs::read(t.path(entry["path"].as_str().unwrap())).unwrap();
            assert_eq!(entry["sha256"], json!(sha256_hex(&bytes)), "{entry}");
            let id = entry.get("contract_id").or_else(|| entry.get("prompt_pack_id")).unwrap();
            let last = history
                .iter()
                .rev()
                .find(|e| &e["id"] == id && e["version"] == entry["version"])
                .unwrap();
            assert_eq!(last["sha256"], entry["sha256"], "{entry}");
        }
    }
    // The independent check is not vacuous: an edited event no longer recomputes.
    let mut edited = history[5].clone();
    edited["version"] = json!("1.1.1");
    assert_ne!(event_hash(&edited), history[5]["hash"].as_str().unwrap());
    // And it agrees with the library's verdict.
    t.ok(&["registry", "verify"]);
}

// ---------------------------------------------------------------------------------------
// diff (SPEC §12 shape)
// ---------------------------------------------------------------------------------------

fn check_diff_shape(v: &Value, from: &str, to: &str, required: &str, declared: &str) {
    assert_eq!(v["ok"], json!(true), "{v:#}");
    assert_eq!(v["from"], json!(from), "{v:#}");
    assert_eq!(v["to"], json!(to), "{v:#}");
    assert_eq!(v["required_bump"], json!(required), "{v:#}");
    assert_eq!(v["declared_bump"], json!(declared), "{v:#}");
    for c in v["changes"].as_array().expect("changes is an array") {
        assert!(c["pointer"].as_str().is_some_and(|p| p.starts_with('/')), "{c}");
        assert!(c["kind"].as_str().is_some(), "{c}");
        assert!(["patch", "minor", "major", "none"].contains(&c["bump"].as_str().unwrap()), "{c}");
    }
}

fn changes(v: &Value) -> Vec<(String, String, String)> {
    v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["pointer"].as_str().unwrap().to_string(),
                c["kind"].as_str().unwrap().to_string(),
                c["bump"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn owned(items: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    items.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect()
}

/// A new version of the scaffolded contract, `edit`ed, diffed against 1.0.0 (with `flags`):
/// the bump its changes need (also the one its version declares) and the changes, in order.
struct Diff {
    name: &'static str,
    version: &'static str,
    edit: fn(&mut Value),
    flags: &'static [&'static str],
    bump: &'static str,
    changes: &'static [(&'static str, &'static str, &'static str)],
}

const DIFFS: &[Diff] = &[
    Diff {
        name: "an added optional input is minor",
        version: "1.1.0",
        edit: add_optional_input,
        flags: &[],
        bump: "minor",
        changes: &[("/input_schema/properties/lang", "added_optional", "minor")],
    },
    Diff {
        name: "a retyped output property is major",
        version: "2.0.0",
        edit: |c| c["output_schema"]["properties"]["result"]["type"] = json!("integer"),
        flags: &["--format", "json"],
        bump: "major",
        changes: &[("/output_schema/properties/result/type", "retyped", "major")],
    },
    Diff {
        name: "description and metadata changes are patch",
        version: "1.0.1",
        edit: |c| {
            c["metadata"]["description"] = json!("Takes notes.");
            c["input_schema"]["properties"]["input"]["description"] = json!("The notes.");
        },
        flags: &[],
        bump: "patch",
        changes: &[
            ("/input_schema/properties/input/description", "annotation_changed", "patch"),
            ("/metadata/description", "metadata_changed", "patch"),
        ],
    },
];

#[test]
fn diff_reports_the_bump_each_change_needs() {
    common::check_cases(
        DIFFS,
        |case| case.name,
        |case| {
            let t = Tree::new();
            let rel = t.write_version(case.version, case.edit);
            t.ok(&["registry", "add", &rel]);
            let (from, to) = (format!("{ID}@1.0.0"), format!("{ID}@{}", case.version));
            let mut args = vec!["diff", from.as_str(), to.as_str()];
            args.extend_from_slice(case.flags);
            let v = t.ok(&args);
            check_diff_shape(&v, &from, &to, case.bump, case.bump);
            assert_eq!(changes(&v), owned(case.changes), "{v:#}");
        },
    );
}

#[test]
fn diff_accepts_a_bare_second_version_and_reports_a_too_small_declared_bump() {
    let t = Tree::new();
    let rel = t.write_version("1.1.0", add_required_input);
    t.ok(&["registry", "add", &rel]);
    let (status, v) = t.json(&["diff", &format!("{ID}@1.0.0"), "1.1.0"]);
    // The change needs major, the versions declare minor: reported, not hidden, and the
    // command fails (exit 1) like `promote` would.
    assert_eq!(status, 1, "{v:#}");
    assert_eq!(v["ok"], json!(false));
    assert_eq!(v["code"], json!("incompatible_version_bump"));
    let mut shape = v.clone();
    shape["ok"] = json!(true);
    check_diff_shape(&shape, &format!("{ID}@1.0.0"), &format!("{ID}@1.1.0"), "major", "minor");
    assert!(changes(&v).iter().any(|(p, k, b)| p == "/input_schema/properties/lang"
        && k == "added_required"
        && b == "major"));

    // Text mode lists each change with its bump.
    let out = t.run(&["diff", &format!("{ID}@1.0.0"), "1.1.0"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("major") && stdout.contains("/input_schema/properties/lang"),
        "{stdout}"
    );

    // An unregistered version is refused with the versions that exist.
    let (status, v) = t.json(&["diff", &format!("{ID}@1.0.0"), "3.0.0"]);
    assert_eq!(status, 1, "{v:#}");
    assert_eq!(v["code"], json!("contract_version_not_found"));
    assert!(v["message"].as_str().unwrap().contains("1.1.0"), "{v:#}");
    // A range is not a version to diff.
    let (status, v) = t.json(&["diff", &format!("{ID}@^1.0"), "1.1.0"]);
    assert_eq!((status, v["code"].clone()), (2, json!("pin_invalid")), "{v:#}");
    // Two different ids are refused.
    let (status, v) = t.json(&["diff", &format!("{ID}@1.0.0"), "PRC-OTHER-001@1.1.0"]);
    assert_eq!((status, v["code"].clone()), (2, json!("pin_invalid")), "{v:#}");
    assert!(v["message"].as_str().unwrap().contains("two versions of one contract"), "{v:#}");
    // An unknown id: contract_not_found with "did you mean".
    let typo = ID.replace("NOTES", "NOTE");
    let (status, v) = t.json(&["diff", &format!("{typo}@1.0.0"), "1.1.0"]);
    assert_eq!((status, v["code"].clone()), (1, json!("contract_not_found")), "{v:#}");
    assert!(v["message"].as_str().unwrap().contains(&format!("did you mean {ID}?")), "{v:#}");
}

#[test]
fn diff_text_warning_names_the_bare_id() {
    let t = Tree::new();
    let rel = t.write_version("1.0.1", add_required_input);
    t.ok(&["registry", "add", &rel]);
    let out = t.run(&["diff", &format!("{ID}@1.0.0"), "1.0.1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error[incompatible_version_bump]"), "{stderr}");
    assert!(stderr.contains(&format!("{ID} 1.0.0 -> 1.0.1")), "{stderr}");
    assert!(!stderr.contains(&format!("{ID}@1.0.0 1.0.0")), "{stderr}");
}

// ---------------------------------------------------------------------------------------
// validate check 8
// ---------------------------------------------------------------------------------------

fn validate_json(cwd: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["validate"];
    args.extend_from_slice(extra);
    args.push("--json");
    let out = pactum(cwd, &args);
    (code_of(&out), one_json(&args, &out))
}

fn diagnostics_with_code<'a>(report: &'a Value, code: &str) -> Vec<&'a Value> {
    report["diagnostics"].as_array().unwrap().iter().filter(|d| d["code"] == json!(code)).collect()
}

/// The 1-based line of the first line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).expect("needle is in the file") + 1
}

#[test]
fn validate_flags_a_declared_bump_that_is_too_small_at_the_newer_files_version() {
    let t = Tree::active();
    // 1.0.0 → 1.0.1 adds an optional input: needs minor, declares patch.
    let rel = t.write_version("1.0.1", add_optional_input);
    t.ok(&["registry", "add", &rel]);
    let (status, report) = validate_json(t.root(), &[]);
    assert_eq!(status, 1, "{report:#}");
    assert_eq!(report["ok"], json!(false));
    let found = diagnostics_with_code(&report, "incompatible_version_bump");
    assert_eq!(found.len(), 1, "{report:#}");
    let d = found[0];
    assert_eq!(d["severity"], json!("error"));
    assert_eq!(d["file"], json!(rel));
    assert_eq!(d["pointer"], json!("/version"));
    let text = std::fs::read_to_string(t.path(&rel)).unwrap();
    assert_eq!(d["line"], json!(line_of(&text, "\"version\": \"1.0.1\"")), "{d}");
    let message = d["message"].as_str().unwrap();
    assert!(message.contains("/input_schema/properties/lang") && message.contains("minor"), "{d}");

    // Without a registry the versions come from the files, and the check still runs.
    let bare = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(bare.path().join("contracts/notes")).unwrap();
    for v in ["1.0.0", "1.0.1"] {
        let rel = format!("contracts/notes/{v}.json");
        std::fs::copy(t.path(&rel), bare.path().join(&rel)).unwrap();
    }
    let (status, report) = validate_json(bare.path(), &[]);
    assert_eq!(status, 1, "{report:#}");
    let found = diagnostics_with_code(&report, "incompatible_version_bump");
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["file"], json!("contracts/notes/1.0.1.json"));
    assert_eq!(found[0]["pointer"], json!("/version"));
}

#[test]
fn validate_accepts_a_declared_bump_that_is_big_enough() {
    let t = Tree::active();
    let rel = t.write_version("1.1.0", add_optional_input);
    t.ok(&["registry", "add", &rel]);
    let rel = t.write_version("2.0.0", add_required_input);
    t.ok(&["registry", "add", &rel]);
    let (_, report) = validate_json(t.root(), &[]);
    assert!(diagnostics_with_code(&report, "incompatible_version_bump").is_empty(), "{report:#}");
}

#[test]
fn validate_checks_every_pair_of_a_long_version_line_whatever_the_threads() {
    // 70 versions of one id (enough to be checked on several threads): three patch bumps
    // that add an input, one of them at the seam between two threads' runs of pairs.
    let t = Tree::active();
    let bare = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(bare.path().join("contracts/notes")).unwrap();
    let mut contract: Value =
        serde_json::from_slice(&std::fs::read(t.path("contracts/notes/1.0.0.json")).unwrap())
            .unwrap();
    let adds = [(10, "lang"), (35, "tone"), (36, "mood")];
    for k in 0..70 {
        if let Some((_, name)) = adds.iter().find(|(at, _)| *at == k) {
            contract["input_schema"]["properties"][*name] = json!({"type": "string"});
        }
        contract["version"] = json!(format!("1.0.{k}"));
        let rel = format!("contracts/notes/1.0.{k}.json");
        std::fs::write(bare.path().join(rel), serde_json::to_vec_pretty(&contract).unwrap())
            .unwrap();
    }
    let flagged = |jobs: &str| {
        let (_, report) = validate_json(bare.path(), &["--jobs", jobs]);
        let mut files: Vec<String> = diagnostics_with_code(&report, "incompatible_version_bump")
            .iter()
            .map(|d| d["file"].as_str().unwrap().to_string())
            .collect();
        files.sort();
        files
    };
    let expected: Vec<String> =
        [10, 35, 36].iter().map(|k| format!("contracts/notes/1.0.{k}.json")).collect();
    assert_eq!(flagged("1"), expected);
    assert_eq!(flagged("2"), expected);
    assert_eq!(flagged("3"), expected);
}

// ---------------------------------------------------------------------------------------
// new contract
// ---------------------------------------------------------------------------------------

#[test]
fn new_contract_scaffolds_drafts_that_validate_but_for_their_placeholders() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let args = ["new", "contract", "PRC-NOTES-001"];
    let out = pactum(root, &args);
    assert_eq!(code_of(&out), 0, "{}", describe(&args, &out));

    let contract_rel = "contracts/notes/1.0.0.json";
    let pack_rel = "prompt_packs/notes/1.0.0.json";
    for rel in ["registry.json", contract_rel, pack_rel] {
        assert!(root.join(rel).is_file(), "{rel} was not created");
    }
    let contract: Value =
        serde_json::from_slice(&std::fs::read(root.join(contract_rel)).unwrap()).unwrap();
    let pack: Value = serde_json::from_slice(&std::fs::read(root.join(pack_rel)).unwrap()).unwrap();
    assert!(
        contract["$schema"].as_str().is_some_and(|s| s.ends_with("prompt_contract.schema.json"))
    );
    assert!(pack["$schema"].as_str().is_some_and(|s| s.ends_with("prompt_pack.schema.json")));
    assert_eq!(contract["contract_id"], json!("PRC-NOTES-001"));
    assert_eq!(contract["prompt_pack_id"], json!("PRM-NOTES-001"));
    assert_eq!(pack["prompt_pack_id"], json!("PRM-NOTES-001"));

    let registry: Value =
        serde_json::from_slice(&std::fs::read(root.join("registry.json")).unwrap()).unwrap();
    assert_eq!(registry["registry_version"], json!(1));
    let c = &registry["contracts"][0];
    let p = &registry["prompt_packs"][0];
    assert_eq!((c["state"].clone(), p["state"].clone()), (json!("draft"), json!("draft")));
    assert_eq!(c["path"], json!(contract_rel));
    assert_eq!(p["path"], json!(pack_rel));
    assert_eq!(c["sha256"], json!(sha256_hex(&std::fs::read(root.join(contract_rel)).unwrap())));
    assert_eq!(p["sha256"], json!(sha256_hex(&std::fs::read(root.join(pack_rel)).unwrap())));
    assert_eq!(check_chain_independently(&registry).len(), 2);

    // Valid drafts, but for the placeholders the author is to replace: one warning each.
    let (status, report) = validate_json(root, &[]);
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(report["ok"], json!(true));
    assert_eq!(report["summary"]["errors"], json!(0), "{report:#}");
    assert_eq!(report["summary"]["warnings"], json!(4), "{report:#}");
    let codes: Vec<&Value> =
        report["diagnostics"].as_array().unwrap().iter().map(|d| &d["code"]).collect();
    assert!(codes.iter().all(|c| *c == "scaffold_placeholder"), "{report:#}");
    let (status, report) = validate_json(root, &["--strict"]);
    assert_eq!(status, 1, "--strict keeps placeholders out of a commit: {report:#}");
    crate::common::write_placeholders(root);
    let (status, report) = validate_json(root, &["--strict"]);
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(report["summary"]["warnings"], json!(0), "{report:#}");

    // A second contract next to it, with JSON output; the tree stays clean.
    let args = ["new", "contract", "PRC-TODO-001", "--json"];
    let out = pactum(root, &args);
    assert_eq!(code_of(&out), 0, "{}", describe(&args, &out));
    let v = one_json(&args, &out);
    assert_eq!(v["ok"], json!(true));
    assert_eq!(v["contract"], json!("contracts/todo/1.0.0.json"));
    assert_eq!(v["prompt_pack_id"], json!("PRM-TODO-001"));
    let (status, report) = validate_json(root, &[]);
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(report["summary"]["warnings"], json!(4), "the new one's placeholders: {report:#}");
}

#[test]
fn new_contract_refuses_an_id_that_exists() {
    let t = Tree::new();
    let registry = t.registry_bytes();
    let contract = std::fs::read(t.path("contracts/notes/1.0.0.json")).unwrap();
    let (status, v) = t.json(&["new", "contract", ID]);
    assert_eq!(status, 1, "{v:#}");
    assert_eq!(v["ok"], json!(false));
    assert_eq!(v["code"], json!("registry_duplicate_entry"));
    assert_eq!(t.registry_bytes(), registry);
    assert_eq!(std::fs::read(t.path("contracts/notes/1.0.0.json")).unwrap(), contract);
    let out = t.run(&["new", "contract", ID]);
    assert_ne!(code_of(&out), 0);
}

#[test]
fn new_contract_with_a_taken_folder_name_gets_a_numbered_folder() {
    let t = Tree::new();
    let (status, v) = t.json(&["new", "contract", "PRC-NOTES-002"]);
    assert_eq!(status, 0, "{v:#}");
    assert!(t.path("contracts/notes-002/1.0.0.json").is_file(), "{v:#}");
    assert!(t.path("prompt_packs/notes-002/1.0.0.json").is_file(), "{v:#}");
    let (status, v) = t.json(&["validate"]);
    assert_eq!(status, 0, "{v:#}");
}

#[test]
fn new_contract_refuses_an_invalid_id_with_pin_invalid() {
    let dir = tempfile::tempdir().unwrap();
    // The last two look like ids to someone who read "capital letters, `-` and digits":
    // the message says the name is one word of letters.
    let ids =
        ["notes", "PRC-notes-001", "PRC-NOTES", "PRM-NOTES-001", "PRC-B2-001", "PRC-MY-TOOL-001"];
    for id in ids {
        let args = ["new", "contract", id, "--json"];
        let out = pactum(dir.path(), &args);
        assert_eq!(code_of(&out), 2, "{}", describe(&args, &out));
        let v = one_json(&args, &out);
        assert_eq!(v["code"], json!("pin_invalid"), "{id}: {v:#}");
        let message = v["message"].as_str().unwrap();
        assert!(message.contains("one word of capital letters"), "{id}: {v:#}");
        assert!(!message.contains("  "), "one space between words: {message}");
        let text = pactum(dir.path(), &["new", "contract", id]);
        assert_eq!(code_of(&text), 2);
        assert!(String::from_utf8_lossy(&text.stderr).contains("error[pin_invalid]"));
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "nothing is created for an invalid id: {left:?}");
}

#[test]
fn a_pack_version_with_placeholders_is_not_promoted_behind_a_higher_one() {
    // 1.1.0 of pack and contract written, 1.0.0 left as scaffolded; the copied contract
    // still pins pack 1.0.0. With pack 1.1.0 active, 1.0.0 is superseded — but the contract
    // would serve it, so its placeholders still refuse its promotion.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let run = |args: &[&str]| {
        let out = pactum(root, args);
        (code_of(&out), describe(args, &out))
    };
    assert_eq!(run(&["new", "contract", "PRC-SUM-001"]).0, 0);
    assert_eq!(run(&["new", "version", "PRM-SUM-001@1.1.0"]).0, 0);
    assert_eq!(run(&["new", "version", "PRC-SUM-001@1.1.0"]).0, 0);
    for rel in ["prompt_packs/sum/1.1.0.json", "contracts/sum/1.1.0.json"] {
        let path = root.join(rel);
        let mut text = std::fs::read_to_string(&path).unwrap();
        for p in pactum::scaffold::placeholder::ALL {
            text = text.replace(p, p.trim_start_matches('(').trim_end_matches(')'));
        }
        std::fs::write(&path, text).unwrap();
    }
    let (code, out) = run(&["registry", "promote", "PRM-SUM-001@1.1.0"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = run(&["registry", "promote", "PRM-SUM-001@1.0.0"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("scaffold_placeholder"), "{out}");
    let (code, out) = run(&["registry", "promote", "PRC-SUM-001@1.1.0"]);
    assert_eq!(code, 1, "its pack is still a draft: {out}");
}
