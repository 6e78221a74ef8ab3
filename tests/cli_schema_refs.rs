//! JSON Schema references through the real binary (issue 22), in projects made with
//! `pactum init`, contracts registered with `pactum registry add` and `promote`:
//!
//! - the compatibility check compares every reference form by what it resolves to — a
//!   JSON pointer, an anchor, a dynamic anchor, an embedded `$id`, a schema file — so a
//!   tightened target needs a major bump and a re-described one a patch;
//! - the schema cost measure follows the same references, so an anchor chain that would
//!   validate in exponential time is refused by `validate` and before a run compiles it;
//! - an active contract's hash covers the schema files it references: `promote` records
//!   them (`refs`), and `resolve`, `run`, `validate` and `registry verify` notice a changed
//!   one.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

const PACK: &str = "PRM-REFS-001";

/// What one command did.
struct Out {
    status: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!("stdout is not one JSON document ({e}):\n{}\n{}", self.stdout, self.stderr)
        })
    }
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {}\nstdout:\n{}\nstderr:\n{}", self.status, self.stdout, self.stderr)
    }
}

/// A project made with `pactum init`, holding the pack every contract here binds.
struct Project {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Project {
    fn new() -> Project {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        let out = run_in(tmp.path(), &["init", "project"], None);
        assert_eq!(out.status, 0, "{out}");
        let p = Project { _tmp: tmp, root };
        p.write(
            "prompt_packs/refs/1.0.0.json",
            &json!({"prompt_pack_id": PACK, "version": "1.0.0", "template": "Say: {{ text }}"}),
        );
        p.ok(&["registry", "add", "prompt_packs/refs/1.0.0.json"]);
        p.ok(&["registry", "promote", &format!("{PACK}@1.0.0")]);
        p
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn write(&self, rel: &str, value: &Value) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_string_pretty(value).unwrap() + "\n").unwrap();
    }

    fn run(&self, args: &[&str]) -> Out {
        run_in(&self.root, args, None)
    }

    fn run_with_input(&self, args: &[&str], stdin: &str) -> Out {
        run_in(&self.root, args, Some(stdin))
    }

    /// A command that must succeed; its `--json` document.
    fn ok(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        assert_eq!(out.status, 0, "pactum {}: {out}", args.join(" "));
        out.json()
    }

    /// A command that must fail with `code`; its `--json` document.
    fn refused(&self, args: &[&str], code: &str) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        assert_eq!(out.status, 1, "pactum {}: {out}", args.join(" "));
        let doc = out.json();
        assert_eq!(doc["code"], code, "pactum {}: {doc:#}", args.join(" "));
        doc
    }

    /// Writes `contracts/<folder>/<version>.json` and registers it as a draft.
    fn add_contract(&self, id: &str, version: &str, output_schema: Value) -> String {
        let folder = id.split('-').nth(1).unwrap().to_lowercase();
        let rel = format!("contracts/{folder}/{version}.json");
        self.write(&rel, &contract(id, version, output_schema));
        self.ok(&["registry", "add", &rel]);
        rel
    }

    fn registry(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.path("registry.json")).unwrap()).unwrap()
    }

    /// `pactum validate --format json`: status and report.
    fn validate(&self) -> (i32, Value) {
        let out = self.run(&["validate", "--format", "json"]);
        (out.status, out.json())
    }
}

fn run_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> Out {
    let mut cmd = common::pactum_in(dir);
    cmd.env("PACTUM_ACTOR", "dev@team.example")
        .env("GIT_CEILING_DIRECTORIES", dir)
        .args(args)
        .timeout(Duration::from_secs(60));
    cmd.write_stdin(stdin.unwrap_or(""));
    let out = cmd.output().unwrap();
    Out {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn contract(id: &str, version: &str, output_schema: Value) -> Value {
    json!({
        "contract_id": id, "version": version, "prompt_pack_id": PACK,
        "boundary": {"max_tokens": 64, "temperature": 0},
        "input_schema": {"type": "object", "required": ["text"],
                         "properties": {"text": {"type": "string"}}},
        "output_schema": output_schema,
    })
}

/// Every finding of `code` in a validate report.
fn findings<'a>(report: &'a Value, code: &str) -> Vec<&'a Value> {
    report["diagnostics"].as_array().unwrap().iter().filter(|d| d["code"] == code).collect()
}

// --- Compatibility: every reference form -------------------------------------------------

/// One reference form: the output's `answer` refers to a target schema through it.
/// `schema(target)` builds the output schema around the target.
struct Form {
    id: &'static str,
    schema: fn(Value) -> Value,
    /// Where the diff reports a change inside the target of version 1.0.2.
    at: &'static str,
    /// The target is a file of its own (`common/answer-VERSION.json`), not in the schema.
    file: bool,
}

fn forms() -> Vec<Form> {
    vec![
        Form {
            id: "PRC-POINTER-001",
            schema: |t| {
                json!({"type": "object", "properties": {"answer": {"$ref": "#/$defs/answer"}},
                       "$defs": {"answer": t}})
            },
            at: "/output_schema/$defs/answer",
            file: false,
        },
        Form {
            id: "PRC-ANCHOR-001",
            schema: |mut t| {
                t["$anchor"] = json!("text");
                json!({"type": "object", "properties": {"answer": {"$ref": "#text"}},
                       "$defs": {"named": t}})
            },
            at: "/output_schema/$defs/named",
            file: false,
        },
        Form {
            id: "PRC-DYNAMIC-001",
            schema: |mut t| {
                t["$dynamicAnchor"] = json!("text");
                json!({"type": "object", "properties": {"answer": {"$dynamicRef": "#text"}},
                       "$defs": {"dyn": t}})
            },
            at: "/output_schema/$defs/dyn",
            file: false,
        },
        Form {
            id: "PRC-EMBEDDED-001",
            schema: |mut t| {
                t["$id"] = json!("answer.json");
                json!({"type": "object", "properties": {"answer": {"$ref": "answer.json"}},
                       "$defs": {"embedded": t}})
            },
            at: "/output_schema/$defs/embedded",
            file: false,
        },
        Form {
            id: "PRC-FILE-001",
            schema: |_| {
                json!({"type": "object",
                       "properties": {"answer": {"$ref": "../../common/answer.json"}}})
            },
            at: "common/answer-1.0.2.json#",
            file: true,
        },
    ]
}

#[test]
fn every_reference_form_is_compared_by_its_target_in_promote_validate_and_diff() {
    let p = Project::new();
    let target = json!({"type": "string"});
    let described = json!({"type": "string", "description": "what the model answers"});
    let tightened = json!({"type": "string", "maxLength": 10});
    for form in forms() {
        let id = form.id;
        // A file target is a new file per version (a referenced file never changes once
        // an active version references it).
        let version = |version: &str, t: &Value| -> Value {
            if !form.file {
                return (form.schema)(t.clone());
            }
            p.write(&format!("common/answer-{version}.json"), t);
            let text = (form.schema)(t.clone()).to_string();
            serde_json::from_str(&text.replace("answer.json", &format!("answer-{version}.json")))
                .unwrap()
        };
        p.add_contract(id, "1.0.0", version("1.0.0", &target));
        p.ok(&["registry", "promote", &format!("{id}@1.0.0")]);

        // Only a description changed behind the reference: a patch is enough.
        p.add_contract(id, "1.0.1", version("1.0.1", &described));
        let diff = p.ok(&["diff", &format!("{id}@1.0.0"), "1.0.1"]);
        assert_eq!(diff["required_bump"], "patch", "{id}: {diff:#}");
        p.ok(&["registry", "promote", &format!("{id}@1.0.1")]);

        // The target tightened: a patch is refused, by promote, validate and diff.
        let rel = p.add_contract(id, "1.0.2", version("1.0.2", &tightened));
        let at = format!("{}/maxLength", form.at);
        let refused = p
            .refused(&["registry", "promote", &format!("{id}@1.0.2")], "incompatible_version_bump");
        let message = refused["message"].as_str().unwrap();
        assert!(message.contains(&format!("{at} bound_tightened (major)")), "{id}: {message}");
        let out = p.run(&["diff", &format!("{id}@1.0.1"), "1.0.2", "--json"]);
        let doc = out.json();
        assert_eq!(doc["required_bump"], "major", "{id}: {doc:#}");
        let (status, report) = p.validate();
        assert_eq!(status, 1, "{report:#}");
        let bumps = findings(&report, "incompatible_version_bump");
        assert!(bumps.iter().any(|d| d["file"] == rel.as_str()), "{id}: {report:#}");
        // Released as the major version it is, it is promoted.
        std::fs::remove_file(p.path(&rel)).unwrap();
        p.ok(&["registry", "discard", &format!("{id}@1.0.2")]);
        p.add_contract(id, "2.0.0", version("2.0.0", &tightened));
        p.ok(&["registry", "promote", &format!("{id}@2.0.0")]);
    }
    let (status, report) = p.validate();
    assert_eq!(status, 0, "{report:#}");
}

// --- Cost: anchor chains ----------------------------------------------------------------

/// A chain of `levels` definitions, each referring `fanout` times to the next through
/// `link(i)`: `(what definition i declares, a reference to it)`.
fn chain(levels: usize, fanout: usize, link: fn(usize) -> (Value, Value)) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..levels {
        let (mut def, _) = link(i);
        let (_, next) = link(i + 1);
        def["anyOf"] = Value::Array(vec![next; fanout]);
        defs.insert(format!("d{i}"), def);
    }
    let (mut last, _) = link(levels);
    last["type"] = json!("string");
    defs.insert(format!("d{levels}"), last);
    let (_, first) = link(0);
    let mut schema = json!({"$defs": defs});
    for (key, value) in first.as_object().unwrap() {
        schema[key] = value.clone();
    }
    schema
}

fn anchor(i: usize) -> (Value, Value) {
    (json!({"$anchor": format!("a{i}")}), json!({"$ref": format!("#a{i}")}))
}

fn dynamic(i: usize) -> (Value, Value) {
    (json!({"$dynamicAnchor": format!("a{i}")}), json!({"$dynamicRef": format!("#a{i}")}))
}

fn embedded(i: usize) -> (Value, Value) {
    (json!({"$id": format!("d{i}.json")}), json!({"$ref": format!("d{i}.json")}))
}

#[test]
fn reference_chains_are_refused_by_validate_and_before_a_run_compiles_them() {
    let p = Project::new();
    // The report's chain was 2.4 KB at 24 levels; 30 levels is 2^31 subschemas, which an
    // evaluation would never finish. 600 single links are only too deep to measure.
    let cases: [(&str, Value, &str); 4] = [
        ("PRC-ANCHORS-001", chain(30, 2, anchor), "schema_limit_exceeded"),
        ("PRC-DYNAMICS-001", chain(30, 2, dynamic), "schema_limit_exceeded"),
        ("PRC-IDS-001", chain(30, 2, embedded), "schema_limit_exceeded"),
        ("PRC-DEEP-001", chain(600, 1, anchor), "schema_too_costly"),
    ];
    let mut rels = Vec::new();
    for (id, schema, _) in &cases {
        rels.push(p.add_contract(id, "1.0.0", schema.clone()));
    }
    let (status, report) = p.validate();
    assert_eq!(status, 1, "{report:#}");
    for ((id, _, code), rel) in cases.iter().zip(&rels) {
        let found = findings(&report, code);
        assert!(
            found.iter().any(|d| d["file"] == rel.as_str() && d["pointer"] == "/output_schema"),
            "{id}: no {code} at /output_schema: {report:#}"
        );
        // Promotion refuses it (the draft stays a draft).
        p.refused(&["registry", "promote", &format!("{id}@1.0.0")], code);
        // A run (a render compiles the validators, as does `run`) refuses it before any call.
        let out = p.run_with_input(
            &["render", id, "--allow-draft", "--input", "-", "--json"],
            r#"{"text": "hi"}"#,
        );
        assert_eq!(out.status, 1, "{id}: {out}");
        assert_eq!(out.json()["code"], *code, "{id}: {out}");
        let wo = format!("work_orders/{}.json", id.to_lowercase());
        p.write(
            &wo,
            &json!({"work_order_id": format!("WO-{}", id.trim_start_matches("PRC-")), "kind": "exchange",
                    "contract": format!("{id}@=1.0.0"), "input": {"text": "hi"}}),
        );
        let out = p.run(&["run", &wo, "--allow-draft", "--json"]);
        assert_eq!(out.status, 1, "{id}: {out}");
        let doc = common::single_result(out.json());
        assert_eq!(doc["errors"][0]["code"], *code, "{id}: {doc:#}");
        std::fs::remove_file(p.path(&wo)).unwrap();
    }
}

// --- Immutability: referenced files -----------------------------------------------------

/// Recomputes an event's hash without the library: SHA-256 of its canonical JSON (keys
/// sorted at every level, no whitespace) without `hash`.
fn event_hash(event: &Value) -> String {
    fn canonical(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let sorted: std::collections::BTreeMap<&String, Value> =
                    map.iter().map(|(k, v)| (k, canonical(v))).collect();
                Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
            other => other.clone(),
        }
    }
    let mut without = event.clone();
    without.as_object_mut().unwrap().remove("hash");
    common::sha256_hex(serde_json::to_string(&canonical(&without)).unwrap().as_bytes())
}

#[test]
fn an_active_contracts_hash_covers_the_schema_files_it_references() {
    let p = Project::new();
    let address = json!({"$id": "address.json", "type": "object", "required": ["zip"],
                         "properties": {"zip": {"$ref": "zip.json"}}});
    let zip = json!({"type": "string", "maxLength": 5});
    p.write("common/address.json", &address);
    p.write("common/zip.json", &zip);
    let id = "PRC-ADDR-001";
    let schema =
        json!({"type": "object", "properties": {"home": {"$ref": "../../common/address.json"}}});
    p.add_contract(id, "1.0.0", schema);
    // A contract without references records none: its entry is as before.
    p.add_contract("PRC-PLAIN-001", "1.0.0", json!({"type": "object"}));
    p.ok(&["registry", "promote", &format!("{id}@1.0.0")]);
    p.ok(&["registry", "promote", "PRC-PLAIN-001@1.0.0"]);

    // The entry and the promote event record every file reached, transitively.
    let sha = |rel: &str| common::sha256_hex(&std::fs::read(p.path(rel)).unwrap());
    let refs = json!({"common/address.json": sha("common/address.json"),
                      "common/zip.json": sha("common/zip.json")});
    let registry = p.registry();
    let entry =
        registry["contracts"].as_array().unwrap().iter().find(|e| e["contract_id"] == id).unwrap();
    assert_eq!(entry["refs"], refs, "{entry:#}");
    let plain = registry["contracts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["contract_id"] == "PRC-PLAIN-001")
        .unwrap();
    assert!(plain.get("refs").is_none(), "{plain:#}");
    let history = registry["history"].as_array().unwrap();
    let promote = history.iter().find(|e| e["action"] == "promote" && e["id"] == id).unwrap();
    assert_eq!(promote["refs"], refs, "{promote:#}");
    assert_eq!(promote["hash"], event_hash(promote), "the event hash covers refs");
    p.ok(&["registry", "verify"]);
    p.ok(&["resolve", id]);
    let (status, report) = p.validate();
    assert_eq!(status, 0, "{report:#}");

    // A referenced file changes (two levels down): every reader notices, naming it.
    p.write("common/zip.json", &json!({"type": "string", "maxLength": 3}));
    let doc = p.refused(&["resolve", id], "contract_hash_mismatch");
    let message = doc["message"].as_str().unwrap();
    assert!(message.starts_with("common/zip.json: SHA-256 is"), "{message}");
    assert!(message.contains(&format!("{id}@1.0.0 was promoted with SHA-256")), "{message}");
    let out = p.run_with_input(&["render", id, "--input", "-", "--json"], r#"{"text": "hi"}"#);
    assert_eq!(out.json()["code"], "contract_hash_mismatch", "{out}");
    p.write(
        "work_orders/addr.json",
        &json!({"work_order_id": "WO-ADDR", "kind": "exchange", "contract": id,
                "input": {"text": "hi"}}),
    );
    let out = p.run(&["run", "work_orders/addr.json", "--json"]);
    assert_eq!(out.status, 1, "{out}");
    let result = common::single_result(out.json());
    assert_eq!(result["errors"][0]["code"], "contract_hash_mismatch", "{result:#}");
    let doc = p.refused(&["registry", "verify"], "contract_hash_mismatch");
    let pointer = doc["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["code"] == "contract_hash_mismatch")
        .unwrap()["pointer"]
        .clone();
    assert_eq!(pointer, "/contracts/0/refs/common~1zip.json", "{doc:#}");
    let (status, report) = p.validate();
    assert_eq!(status, 1, "{report:#}");
    let changed = findings(&report, "contract_hash_mismatch");
    assert!(
        changed.iter().any(|d| d["file"] == "common/zip.json"
            && d["message"].as_str().unwrap().contains(&format!("{id}@1.0.0"))),
        "{report:#}"
    );

    // Gone is changed too; restored, everything is clean again.
    std::fs::remove_file(p.path("common/zip.json")).unwrap();
    let doc = p.refused(&["resolve", id], "contract_hash_mismatch");
    assert!(doc["message"].as_str().unwrap().contains("the file is gone"), "{doc:#}");
    p.write("common/zip.json", &zip);
    p.ok(&["resolve", id]);
    p.ok(&["registry", "verify"]);

    // A hand edit of the recorded hashes does not replay from the history.
    let path = p.path("registry.json");
    let mut edited = p.registry();
    let at = edited["contracts"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e["contract_id"] == id)
        .unwrap();
    edited["contracts"][at]["refs"]["common/zip.json"] = json!("0".repeat(64));
    std::fs::write(&path, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
    let doc = p.refused(&["registry", "verify"], "registry_history_mismatch");
    assert!(
        doc["errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["pointer"] == format!("/contracts/{at}/refs")),
        "{doc:#}"
    );
}

#[test]
fn promote_refuses_a_contract_whose_reference_leads_nowhere() {
    let p = Project::new();
    let id = "PRC-MISSING-001";
    p.add_contract(id, "1.0.0", json!({"$ref": "../../common/nowhere.json"}));
    let doc =
        p.refused(&["registry", "promote", &format!("{id}@1.0.0")], "contract_schema_invalid");
    assert!(doc["message"].as_str().unwrap().contains("does not resolve"), "{doc:#}");
    // Had it been frozen, a file added later would have given it a meaning nobody recorded.
    assert_eq!(
        p.registry()["contracts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["contract_id"] == id)
            .unwrap()["state"],
        "draft"
    );
}
