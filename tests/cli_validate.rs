//! `pactum validate` end to end (SPEC §5, §11, §12): the real binary on fixture trees.
//!
//! Every test copies a fixture from `tests/fixtures/validate/` into a fresh temporary
//! folder (`<tmp>/project`), breaks it on purpose when it needs to, and runs the binary
//! there with relative paths, so output paths are stable and the repository's own
//! registry.json is never picked up.
//!
//! - `good/`: a clean project (PRC-GREET-001 1.0.0 and 1.1.0, PRC-SUMMARIZE-001 1.0.0;
//!   JSON and YAML packs and work orders) registered and promoted with `pactum registry`,
//!   history included.
//! - `broken/`: the same project registered, then broken after registration (an edited
//!   contract, an unparsable contract, an unregistered pack, a registry entry whose file was
//!   deleted, a work order pinning an unknown id, an unused input). Every output format is
//!   snapshotted on it.
//!
//! Variants are built at test time from `good/`. Edits to registered files change their
//! SHA-256; tests that want one finding only call [`Tree::resync`], which drops the history
//! (allowed for hand-written registries) and records the files' current hashes.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{copy_tree, pactum_in, sha256_hex};
use quick_xml::events::Event;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/validate").join(name)
}

/// 1-based line and character column of the character right after the first `prefix`.
fn pos_after(text: &str, prefix: &str) -> (u64, u64) {
    let at = text.find(prefix).unwrap_or_else(|| panic!("`{prefix}` not in:\n{text}"));
    let offset = at + prefix.len();
    let before = &text[..offset];
    let line = before.matches('\n').count() as u64 + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..offset].chars().count() as u64 + 1;
    (line, column)
}

/// Line and column of the `{` opening element `index` of the top-level array `list` in a
/// registry.json pretty-printed with two-space indentation.
fn entry_pos(registry: &str, list: &str, index: usize) -> (u64, u64) {
    let lines: Vec<&str> = registry.lines().collect();
    let start = lines.iter().position(|l| *l == format!("  \"{list}\": [")).unwrap();
    let open = lines[start + 1..]
        .iter()
        .take_while(|l| !l.starts_with("  ]"))
        .enumerate()
        .filter(|(_, l)| **l == "    {")
        .nth(index)
        .map(|(i, _)| start + 1 + i)
        .unwrap_or_else(|| panic!("no {list}[{index}] in:\n{registry}"));
    (open as u64 + 1, 5)
}

/// A fixture copied into `<tmp>/project`; `<tmp>` itself is free for files "outside".
struct Tree {
    tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        copy_tree(&fixture(name), &root);
        Tree { tmp, root }
    }

    /// The folder above the project root.
    fn outside(&self) -> &Path {
        self.tmp.path()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.path(rel)).unwrap()
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// Replaces the first `from` in a file (which must contain it) with `to`.
    fn edit(&self, rel: &str, from: &str, to: &str) {
        let text = self.read(rel);
        assert!(text.contains(from), "`{from}` not in {rel}:\n{text}");
        self.write(rel, &text.replacen(from, to, 1));
    }

    fn registry(&self) -> Value {
        serde_json::from_str(&self.read("registry.json")).unwrap()
    }

    fn set_registry(&self, value: &Value) {
        self.write("registry.json", &(serde_json::to_string_pretty(value).unwrap() + "\n"));
    }

    /// Edits registry.json as JSON.
    fn edit_registry(&self, f: impl FnOnce(&mut Value)) {
        let mut r = self.registry();
        f(&mut r);
        self.set_registry(&r);
    }

    /// Drops the history and records every existing entry file's current SHA-256, so that
    /// deliberate edits do not also show up as hash mismatches; then starts a new history
    /// from the entries as they stand (`registry adopt`), so the replay holds.
    fn resync(&self) {
        self.rehash();
        adopt(&self.root);
    }

    /// [`Tree::resync`] without the new history.
    fn rehash(&self) {
        let root = self.root.clone();
        self.edit_registry(|r| {
            r.as_object_mut().unwrap().remove("history");
            for list in ["contracts", "prompt_packs"] {
                for entry in r[list].as_array_mut().unwrap() {
                    let path = root.join(entry["path"].as_str().unwrap());
                    if let Ok(bytes) = fs::read(path) {
                        entry["sha256"] = json!(sha256_hex(&bytes));
                    }
                }
            }
        });
    }

    /// The binary, run in the project root.
    fn pactum(&self) -> assert_cmd::Command {
        pactum_in(&self.root)
    }

    fn validate(&self, args: &[&str]) -> Output {
        self.pactum().arg("validate").args(args).output().unwrap()
    }

    /// `validate --format json ARGS`: the document and the exit status.
    fn validate_json(&self, args: &[&str]) -> (Value, i32) {
        let out = self.pactum().args(["validate", "--format", "json"]).args(args).output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{stdout}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert!(out.stderr.is_empty(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        (doc, out.status.code().unwrap())
    }

    /// Runs a `pactum registry ...` command in the root; it must succeed.
    fn registry_cmd(&self, args: &[&str]) {
        let out = self.pactum().arg("registry").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "pactum registry {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

fn diagnostics(doc: &Value) -> &Vec<Value> {
    doc["diagnostics"].as_array().unwrap()
}

fn codes(doc: &Value) -> BTreeSet<&str> {
    diagnostics(doc).iter().map(|d| d["code"].as_str().unwrap()).collect()
}

/// Every finding with `code` in `file`.
fn all<'a>(doc: &'a Value, code: &str, file: &str) -> Vec<&'a Value> {
    diagnostics(doc).iter().filter(|d| d["code"] == code && d["file"] == file).collect()
}

/// The one finding with `code` in `file`; fails listing every finding otherwise.
fn one<'a>(doc: &'a Value, code: &str, file: &str) -> &'a Value {
    let found = all(doc, code, file);
    assert_eq!(
        found.len(),
        1,
        "expected one {code} in {file}, got:\n{}",
        serde_json::to_string_pretty(diagnostics(doc)).unwrap()
    );
    found[0]
}

/// A finding's severity, position, pointer and a help line; message must contain `needle`.
fn check(d: &Value, severity: &str, pointer: Option<&str>, at: Option<(u64, u64)>, needle: &str) {
    assert_eq!(d["severity"], severity, "{d:#}");
    match pointer {
        Some(p) => assert_eq!(d["pointer"], p, "{d:#}"),
        None => assert!(d["pointer"].is_null(), "{d:#}"),
    }
    match at {
        Some((line, column)) => {
            assert_eq!(
                (d["line"].as_u64(), d["column"].as_u64()),
                (Some(line), Some(column)),
                "{d:#}"
            )
        }
        None => assert!(d["line"].is_null() && d["column"].is_null(), "{d:#}"),
    }
    let message = d["message"].as_str().unwrap();
    assert!(!needle.is_empty(), "an empty fragment is in every message: {d:#}");
    assert!(message.contains(needle), "message lacks `{needle}`: {d:#}");
    let help = d["help"].as_str().unwrap_or_default();
    assert!(!help.is_empty(), "no help: {d:#}");
}

/// The summary agrees with the findings; `ok` is "no errors".
fn check_summary(doc: &Value) {
    let errors = diagnostics(doc).iter().filter(|d| d["severity"] == "error").count();
    let warnings = diagnostics(doc).iter().filter(|d| d["severity"] == "warning").count();
    assert_eq!(doc["summary"]["errors"], errors as u64, "{doc:#}");
    assert_eq!(doc["summary"]["warnings"], warnings as u64, "{doc:#}");
    assert_eq!(doc["ok"], errors == 0, "{doc:#}");
}

/// A minimal contract binding `pack` (any version) with one declared input.
fn extra_contract(id: &str, pack: &str) -> String {
    format!(
        r#"{{
  "contract_id": "{id}",
  "version": "1.0.0",
  "prompt_pack_id": "{pack}",
  "boundary": {{ "max_tokens": 10, "temperature": 0 }},
  "input_schema": {{ "type": "object", "properties": {{ "name": {{ "type": "string" }} }} }}
}}
"#
    )
}

fn work_order(id: &str, pin: &str) -> String {
    format!(
        r#"{{
  "work_order_id": "{id}",
  "kind": "exchange",
  "contract": "{pin}",
  "input": {{ "name": "Ada" }}
}}
"#
    )
}

// ---------------------------------------------------------------------------------------
// Clean trees
// ---------------------------------------------------------------------------------------

#[test]
fn validate_clean_tree_exits_zero_with_summary() {
    let tree = Tree::new("good");
    let out = tree.validate(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(stdout(&out), "checked 9 files: 0 errors, 0 warnings\n");
    assert_eq!(stderr(&out), "");

    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 0);
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["summary"], json!({"files": 9, "errors": 0, "warnings": 0}));
    assert_eq!(doc["diagnostics"], json!([]));
}

#[test]
fn validate_fixture_registries_hash_their_files_exactly() {
    // Guards the fixtures themselves: a checkout that rewrote line endings would make
    // every other test here fail for the wrong reason.
    // broken/contracts/greet/1.0.0.json was edited after registration on purpose.
    let edited = fixture("broken").join("contracts/greet/1.0.0.json");
    for name in ["good", "broken"] {
        let root = fixture(name);
        let registry: Value =
            serde_json::from_str(&fs::read_to_string(root.join("registry.json")).unwrap()).unwrap();
        for list in ["contracts", "prompt_packs"] {
            for entry in registry[list].as_array().unwrap() {
                let path = root.join(entry["path"].as_str().unwrap());
                let Ok(bytes) = fs::read(&path) else { continue };
                if path == edited {
                    assert_ne!(entry["sha256"], sha256_hex(&bytes));
                    continue;
                }
                assert_eq!(entry["sha256"], sha256_hex(&bytes), "{}", path.display());
            }
        }
    }
}

#[test]
fn validate_allows_unknown_top_level_keys() {
    let tree = Tree::new("good");
    tree.edit(
        "contracts/greet/1.1.0.json",
        "  \"version\": \"1.1.0\",\n",
        "  \"version\": \"1.1.0\",\n  \"x_owner\": \"team-a\",\n",
    );
    tree.resync();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 0, "{doc:#}");
    assert_eq!(doc["summary"]["errors"], 0);
}

// ---------------------------------------------------------------------------------------
// Checks 1-3: parse, schema, embedded schemas
// ---------------------------------------------------------------------------------------

/// Where a case expects its finding: right after a text of the file, at a fixed line and
/// column, or both (right after a text, which is at that line and column).
enum At {
    After(&'static str),
    Fixed(u64, u64),
    Both(&'static str, u64, u64),
}

impl At {
    /// The line and column in `text`, the file's content.
    fn in_text(&self, text: &str) -> (u64, u64) {
        match *self {
            At::After(prefix) => pos_after(text, prefix),
            At::Fixed(line, column) => (line, column),
            At::Both(prefix, line, column) => {
                let at = pos_after(text, prefix);
                assert_eq!(at, (line, column), "`{prefix}` is not where the case says");
                at
            }
        }
    }
}

/// How a [`BadFile`] case makes its file in the `good` tree.
enum Content {
    /// A new file with this text.
    Write(&'static str),
    /// The first `from` of the existing file replaced with `to`.
    Edit(&'static str, &'static str),
    /// A new work order (its id the file's stem) pinning this contract requirement.
    WorkOrder(&'static str),
}

/// A file that must give exactly one error finding of `code` in it, at its pointer and
/// position, whose message says every text of `says` (and, in the text report, `text`):
/// files that do not parse, and work orders that check 10 refuses, alike.
struct BadFile {
    name: &'static str,
    file: &'static str,
    content: Content,
    code: &'static str,
    pointer: Option<&'static str>,
    at: At,
    says: &'static [&'static str],
    text: Option<&'static str>,
}

const BAD_FILES: &[BadFile] = &[
    // The missing comma is noticed where the next key starts.
    BadFile {
        name: "JSON with a missing comma",
        file: "contracts/notes/1.0.0.json",
        content: Content::Write(
            "{\n  \"contract_id\": \"PRC-NOTES-001\"\n  \"version\": \"1.0.0\"\n}\n",
        ),
        code: "contract_parse_error",
        pointer: None,
        at: At::Fixed(3, 3),
        says: &["expected `,`"],
        text: Some(
            "error[contract_parse_error]: expected `,` or `}`\n \
             --> contracts/notes/1.0.0.json:3:3\n  |\n3 |   \"version\": \"1.0.0\"\n  |   ^\n  = help: ",
        ),
    },
    BadFile {
        name: "an empty file, at its start",
        file: "contracts/empty/1.0.0.json",
        content: Content::Write(""),
        code: "contract_parse_error",
        pointer: None,
        at: At::Fixed(1, 1),
        says: &["EOF while parsing a value"],
        text: None,
    },
    BadFile {
        name: "YAML pack with an unclosed bracket",
        file: "prompt_packs/summarize/1.0.0.yaml",
        content: Content::Edit("  constraints: Keep", "  constraints: [Keep"),
        code: "contract_parse_error",
        pointer: None,
        at: At::Both("  constraints: ", 11, 16),
        says: &["unclosed bracket '['"],
        text: None,
    },
    BadFile {
        name: "work order pinning an unknown contract",
        file: "work_orders/WO-LOST-001.json",
        content: Content::WorkOrder("PRC-GRET-001@^1"),
        code: "contract_not_found",
        pointer: Some("/contract"),
        at: At::Fixed(4, 15),
        says: &["did you mean PRC-GREET-001"],
        text: None,
    },
    BadFile {
        name: "work order pinning a version nothing matches",
        file: "work_orders/WO-FUTURE-001.json",
        content: Content::WorkOrder("PRC-GREET-001@^4"),
        code: "contract_version_not_found",
        pointer: Some("/contract"),
        at: At::Fixed(4, 15),
        says: &["^4", "1.0.0, 1.1.0"],
        text: None,
    },
    BadFile {
        name: "work order of an unknown kind",
        file: "work_orders/WO-BAD-001.json",
        content: Content::Write(
            "{\n  \"work_order_id\": \"WO-BAD-001\",\n  \"kind\": \"batch\",\n  \"input\": {}\n}\n",
        ),
        code: "work_order_invalid",
        pointer: Some("/kind"),
        at: At::Fixed(3, 11),
        says: &["batch"],
        text: None,
    },
    BadFile {
        name: "YAML work order of an unknown kind, at the value",
        file: "work_orders/WO-SUMMARIZE-001.yaml",
        content: Content::Edit("kind: exchange", "kind: batch"),
        code: "work_order_invalid",
        pointer: Some("/kind"),
        at: At::Fixed(2, 7),
        says: &["batch"],
        text: None,
    },
];

/// Every case of [`BAD_FILES`] on its own copy of `good` (registry.json untouched).
#[test]
fn validate_reports_each_bad_file_once_at_its_place() {
    common::check_cases(
        BAD_FILES,
        |case| case.name,
        |case| {
            let tree = Tree::new("good");
            match case.content {
                Content::Write(text) => tree.write(case.file, text),
                Content::Edit(from, to) => tree.edit(case.file, from, to),
                Content::WorkOrder(pin) => {
                    let id = Path::new(case.file).file_stem().unwrap().to_str().unwrap();
                    tree.write(case.file, &work_order(id, pin));
                }
            }
            let (doc, status) = tree.validate_json(&[]);
            assert_eq!(status, 1, "{doc:#}");
            check_summary(&doc);
            let d = one(&doc, case.code, case.file);
            let at = case.at.in_text(&tree.read(case.file));
            check(d, "error", case.pointer, Some(at), case.says[0]);
            for part in case.says {
                assert!(d["message"].as_str().unwrap().contains(part), "`{part}` missing: {d:#}");
            }
            if let Some(expected) = case.text {
                let text = stdout(&tree.validate(&[]));
                assert!(text.contains(expected), "{text}");
            }
        },
    );
}

/// One edit of the `good` tree that must give exactly one error finding, with its code,
/// file, pointer, position and a word of its message.
struct SingleEdit {
    name: &'static str,
    file: &'static str,
    from: &'static str,
    to: &'static str,
    code: &'static str,
    pointer: &'static str,
    at: At,
    says: &'static str,
}

const SINGLE_EDITS: &[SingleEdit] = &[
    SingleEdit {
        name: "temperature out of range",
        file: "contracts/greet/1.1.0.json",
        from: "\"temperature\": 0.3",
        to: "\"temperature\": 3",
        code: "contract_schema_invalid",
        pointer: "/boundary/temperature",
        at: At::Fixed(8, 20),
        says: "maximum of 2",
    },
    SingleEdit {
        name: "unknown key in the boundary",
        file: "contracts/greet/1.1.0.json",
        from: "\"max_tokens\": 120,",
        to: "\"max_tokens\": 120,\n    \"top_p\": 0.9,",
        code: "contract_schema_invalid",
        pointer: "/boundary/top_p",
        at: At::After("\"top_p\": "),
        says: "top_p",
    },
    SingleEdit {
        // A missing property is reported on the object that lacks it: the root, at 1:1.
        name: "missing required field",
        file: "contracts/summarize/1.0.0.json",
        from: "  \"prompt_pack_id\": \"PRM-SUMMARIZE-001\",\n",
        to: "",
        code: "contract_schema_invalid",
        pointer: "/prompt_pack_id",
        at: At::Fixed(1, 1),
        says: "prompt_pack_id",
    },
    SingleEdit {
        name: "invalid embedded input schema",
        file: "contracts/greet/1.1.0.json",
        from: "\"tone\": { \"type\": \"string\",",
        to: "\"tone\": { \"type\": \"strin\",",
        code: "contract_schema_invalid",
        pointer: "/input_schema/properties/tone/type",
        at: At::After("\"tone\": { \"type\": "),
        says: "not a valid JSON Schema",
    },
    SingleEdit {
        name: "network $ref in the output schema",
        file: "contracts/greet/1.0.0.json",
        from: "\"greeting\": { \"type\": \"string\" }",
        to: "\"greeting\": { \"$ref\": \"https://example.com/greeting.json\" }",
        code: "contract_schema_invalid",
        pointer: "/output_schema/properties/greeting/$ref",
        at: At::After("\"greeting\": { \"$ref\": "),
        says: "network",
    },
    SingleEdit {
        name: "pack that is not registered",
        file: "contracts/greet/1.1.0.json",
        from: "\"prompt_pack_id\": \"PRM-GREET-001\"",
        to: "\"prompt_pack_id\": \"PRM-GRETE-001\"",
        code: "prompt_pack_not_found",
        pointer: "/prompt_pack_id",
        at: At::After("\"prompt_pack_id\": "),
        says: "did you mean PRM-GREET-001",
    },
    SingleEdit {
        name: "pack with no matching version",
        file: "contracts/greet/1.1.0.json",
        from: "\"prompt_pack_version\": \"^1.1\"",
        to: "\"prompt_pack_version\": \"^3\"",
        code: "prompt_pack_not_found",
        pointer: "/prompt_pack_version",
        at: At::After("\"prompt_pack_version\": "),
        says: "^3",
    },
    SingleEdit {
        name: "template syntax error",
        file: "prompt_packs/greet/1.0.0.json",
        from: "for {{ name }}.",
        to: "for {{ name .",
        code: "prompt_pack_invalid",
        pointer: "/template",
        at: At::After("\"template\": "),
        says: "does not compile",
    },
    SingleEdit {
        name: "version that is not the registered one",
        file: "contracts/summarize/1.0.0.json",
        from: "\"version\": \"1.0.0\"",
        to: "\"version\": \"1.0.1\"",
        code: "contract_id_mismatch",
        pointer: "/version",
        at: At::After("\"version\": "),
        says: "PRC-SUMMARIZE-001@1.0.1",
    },
    SingleEdit {
        name: "id that is not the registered one",
        file: "contracts/summarize/1.0.0.json",
        from: "\"PRC-SUMMARIZE-001\"",
        to: "\"PRC-SUMMARY-001\"",
        code: "contract_id_mismatch",
        pointer: "/contract_id",
        at: At::After("\"contract_id\": "),
        says: "PRC-SUMMARY-001@1.0.0",
    },
];

/// Every case of [`SINGLE_EDITS`] on its own copy of `good`; fails naming every case that
/// did not give its one finding where it belongs.
#[test]
fn validate_reports_each_single_edit_once_at_its_place() {
    common::check_cases(
        SINGLE_EDITS,
        |case| case.name,
        |case| {
            let tree = Tree::new("good");
            tree.edit(case.file, case.from, case.to);
            tree.resync();
            let (doc, status) = tree.validate_json(&[]);
            assert_eq!(status, 1, "{doc:#}");
            let at = case.at.in_text(&tree.read(case.file));
            let d = one(&doc, case.code, case.file);
            check(d, "error", Some(case.pointer), Some(at), case.says);
        },
    );
}

#[test]
fn validate_reports_wrong_type_at_the_value_position() {
    let tree = Tree::new("good");
    let rel = "contracts/greet/1.1.0.json";
    tree.edit(rel, "\"temperature\": 0.3", "\"temperature\": \"hot\"");
    tree.resync();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    let d = one(&doc, "contract_schema_invalid", rel);
    let at = pos_after(&tree.read(rel), "\"temperature\": ");
    assert_eq!(at, (8, 20));
    check(d, "error", Some("/boundary/temperature"), Some(at), "number");
    assert!(d["message"].as_str().unwrap().starts_with("/boundary/temperature: "), "{d:#}");
    assert_eq!(codes(&doc), BTreeSet::from(["contract_schema_invalid"]), "{doc:#}");

    let text = stdout(&tree.validate(&[]));
    assert!(
        text.contains(
            " --> contracts/greet/1.1.0.json:8:20\n  |\n8 |     \"temperature\": \"hot\"\n  |                    ^\n"
        ),
        "{text}"
    );
}

#[test]
fn validate_reports_invalid_structured_output_schema() {
    let tree = Tree::new("good");
    let rel = "contracts/greet/1.1.0.json";
    tree.edit(
        rel,
        "\"temperature\": 0.3",
        "\"temperature\": 0.3,\n    \"structured_output\": { \"type\": 12 }",
    );
    tree.resync();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    let d = one(&doc, "contract_schema_invalid", rel);
    let pointer = d["pointer"].as_str().unwrap();
    assert!(pointer.starts_with("/boundary/structured_output"), "{d:#}");
    assert!(d["line"].as_u64().unwrap() >= 9, "{d:#}");
}

#[test]
fn validate_refuses_ref_that_leaves_the_root() {
    let tree = Tree::new("good");
    fs::write(tree.outside().join("outside.json"), "{\"type\": \"string\"}\n").unwrap();
    let rel = "contracts/greet/1.0.0.json";
    // contracts/greet/ is two levels below the root: three `..` leave it.
    tree.edit(
        rel,
        "\"greeting\": { \"type\": \"string\" }",
        "\"greeting\": { \"$ref\": \"../../../outside.json\" }",
    );
    tree.resync();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    // Reported at the reference itself (the schema's resolved graph says why it leads
    // nowhere).
    let at = pos_after(&tree.read(rel), "\"$ref\": ");
    check(
        one(&doc, "contract_schema_invalid", rel),
        "error",
        Some("/output_schema/properties/greeting/$ref"),
        Some(at),
        "outside the project root",
    );
    // The file was not read: nothing from it is validated or reported.
    assert_eq!(codes(&doc), BTreeSet::from(["contract_schema_invalid"]), "{doc:#}");
}

#[test]
fn validate_follows_local_ref_to_shared_schema_inside_the_root() {
    let tree = Tree::new("good");
    tree.write("schemas/text.schema.json", "{\"type\": \"string\", \"minLength\": 1}\n");
    let rel = "contracts/summarize/1.0.0.json";
    tree.edit(
        rel,
        "\"text\": { \"type\": \"string\" }",
        "\"text\": { \"$ref\": \"../../schemas/text.schema.json\" }",
    );
    tree.resync();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 0, "{doc:#}");
}

#[test]
fn validate_reports_file_larger_than_the_limit() {
    let tree = Tree::new("good");
    let mut big = String::with_capacity(17 * 1024 * 1024 + 2);
    big.push('{');
    big.push_str(&" ".repeat(17 * 1024 * 1024));
    big.push('}');
    tree.write("contracts/huge/1.0.0.json", &big);
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    check(one(&doc, "file_too_large", "contracts/huge/1.0.0.json"), "error", None, None, "limit");
}

// ---------------------------------------------------------------------------------------
// Check 4: the registry
// ---------------------------------------------------------------------------------------

/// Appends a copy of contract entry `index` with a new version and path.
fn add_entry(r: &mut Value, index: usize, version: &str, path: &str) -> usize {
    let list = r["contracts"].as_array_mut().unwrap();
    let mut e = list[index].clone();
    e["version"] = json!(version);
    e["path"] = json!(path);
    list.push(e);
    list.len() - 1
}

/// A registry entry whose path leads out of the root; `{outside}` in `path` is the folder
/// above the root, where `outside_file` is written.
struct EscapingPath {
    name: &'static str,
    outside_file: &'static str,
    path: &'static str,
    version: &'static str,
    says: &'static str,
}

const ESCAPING_PATHS: &[EscapingPath] = &[
    EscapingPath {
        name: "a path through ..",
        outside_file: "1.5.0.json",
        path: "../1.5.0.json",
        version: "1.5.0",
        says: "..",
    },
    EscapingPath {
        name: "an absolute path",
        outside_file: "abs.json",
        path: "{outside}/abs.json",
        version: "1.6.0",
        says: "absolute",
    },
];

#[test]
fn validate_reports_registry_paths_leaving_the_root_as_path_escape_at_the_path() {
    common::check_cases(
        ESCAPING_PATHS,
        |case| case.name,
        |case| {
            let tree = Tree::new("good");
            fs::write(tree.outside().join(case.outside_file), "{}").unwrap();
            let outside = tree.outside().to_string_lossy().replace('\\', "/");
            let path = case.path.replace("{outside}", &outside);
            let mut index = 0;
            tree.edit_registry(|r| index = add_entry(r, 1, case.version, &path));
            let (doc, status) = tree.validate_json(&[]);
            assert_eq!(status, 1);
            let d = one(&doc, "path_escape", "registry.json");
            // At the opening quote of the path's value.
            let at = pos_after(&tree.read("registry.json"), &format!("\"path\": \"{path}"));
            let at = (at.0, at.1 - path.chars().count() as u64 - 1);
            check(
                d,
                "error",
                Some(format!("/contracts/{index}/path").as_str()),
                Some(at),
                case.says,
            );
        },
    );
}

#[cfg(unix)]
#[test]
fn validate_reports_symlink_leaving_the_root() {
    let tree = Tree::new("good");
    let secret = tree.outside().join("secret.json");
    fs::write(&secret, extra_contract("PRC-SECRET-001", "PRM-GREET-001")).unwrap();
    std::os::unix::fs::symlink(&secret, tree.path("contracts/greet/link.json")).unwrap();
    let mut index = 0;
    tree.edit_registry(|r| index = add_entry(r, 1, "1.8.0", "contracts/greet/link.json"));
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    // The walked file itself...
    let walked = one(&doc, "path_escape", "contracts/greet/link.json");
    check(walked, "error", None, None, "symlink");
    // ...and the registry entry that names it.
    let entry = one(&doc, "path_escape", "registry.json");
    let at = pos_after(&tree.read("registry.json"), "\"path\": \"contracts/greet/link.json");
    let at = (at.0, at.1 - "\"contracts/greet/link.json".len() as u64);
    check(entry, "error", Some(format!("/contracts/{index}/path").as_str()), Some(at), "symlink");
    // Nothing outside the root was read as a contract.
    assert!(!stdout(&tree.validate(&[])).contains("PRC-SECRET-001"));
}

#[test]
fn validate_reports_registry_entry_whose_file_is_missing() {
    let tree = Tree::new("good");
    fs::remove_file(tree.path("contracts/summarize/1.0.0.json")).unwrap();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    let at = pos_after(&tree.read("registry.json"), "\"path\": ");
    let registry = tree.read("registry.json");
    let line =
        registry.lines().position(|l| l.contains("\"contracts/summarize/1.0.0.json\"")).unwrap();
    check(
        one(&doc, "registry_file_missing", "registry.json"),
        "error",
        Some("/contracts/2/path"),
        Some((line as u64 + 1, at.1)),
        "contracts/summarize/1.0.0.json",
    );
}

/// A second entry of PRC-GREET-001@1.0.0: identical, or with another state.
const DUPLICATES: &[(&str, Option<&str>)] =
    &[("a duplicate in another state", Some("draft")), ("an identical duplicate", None)];

#[test]
fn validate_reports_a_duplicate_registry_entry_at_the_second_one() {
    common::check_cases(
        DUPLICATES,
        |case| case.0,
        |&(_, state)| {
            let tree = Tree::new("good");
            tree.edit_registry(|r| {
                let list = r["contracts"].as_array_mut().unwrap();
                let mut copy = list[0].clone();
                if let Some(state) = state {
                    copy["state"] = json!(state);
                }
                list.push(copy);
            });
            let (doc, status) = tree.validate_json(&[]);
            assert_eq!(status, 1);
            let d = one(&doc, "registry_duplicate_entry", "registry.json");
            let at = entry_pos(&tree.read("registry.json"), "contracts", 3);
            check(d, "error", Some("/contracts/3"), Some(at), "PRC-GREET-001@1.0.0");
            assert!(d["message"].as_str().unwrap().contains("also at /contracts/0"), "{d:#}");
        },
    );
}

#[test]
fn validate_reports_broken_history_chain_at_the_edited_event() {
    let tree = Tree::new("good");
    tree.edit_registry(|r| r["history"][3]["version"] = json!("9.9.9"));
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    let d = one(&doc, "registry_history_broken", "registry.json");
    let at = entry_pos(&tree.read("registry.json"), "history", 3);
    check(d, "error", Some("/history/3"), Some(at), "event 4");
    assert!(d["message"].as_str().unwrap().contains("edited"), "{d:#}");
}

#[test]
fn validate_reports_unparsable_registry_and_still_checks_files() {
    let tree = Tree::new("good");
    tree.edit("registry.json", "\"state\": \"active\",", "\"state\": \"active\"");
    tree.edit("contracts/greet/1.1.0.json", "\"temperature\": 0.3", "\"temperature\": 3");
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    check_summary(&doc);
    let d = one(&doc, "registry_invalid", "registry.json");
    // The comma is missing at the end of line 9; the parser notices at the next key.
    check(d, "error", None, Some((10, 7)), "expected `,`");
    // The per-file checks still ran.
    one(&doc, "contract_schema_invalid", "contracts/greet/1.1.0.json");
    // Registry checks did not (no hash mismatch for the edited contract).
    assert!(all(&doc, "contract_hash_mismatch", "contracts/greet/1.1.0.json").is_empty());
}

#[test]
fn validate_shows_the_offending_registry_line_in_text_output() {
    let tree = Tree::new("good");
    tree.edit("registry.json", "\"state\": \"active\",", "\"state\": \"active\"");
    let text = stdout(&tree.validate(&[]));
    assert!(
        text.contains("  --> registry.json:10:7\n   |\n10 |       \"registered_at\""),
        "{text}"
    );
}

#[test]
fn validate_reports_registry_that_fails_its_schema() {
    let tree = Tree::new("good");
    tree.edit_registry(|r| r["contracts"][1]["state"] = json!("retired"));
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    let d = one(&doc, "registry_invalid", "registry.json");
    assert_eq!(d["severity"], "error");
    assert_eq!(d["pointer"], "/contracts/1/state", "{d:#}");
    assert!(d["message"].as_str().unwrap().contains("retired"), "{d:#}");
    assert!(d["help"].as_str().unwrap().contains("registry.schema.json"), "{d:#}");
}

#[test]
fn validate_places_registry_schema_errors_at_line_and_column() {
    let tree = Tree::new("good");
    tree.edit_registry(|r| r["contracts"][1]["state"] = json!("retired"));
    let (doc, _) = tree.validate_json(&[]);
    let d = one(&doc, "registry_invalid", "registry.json");
    let at = pos_after(&tree.read("registry.json"), "\"state\": \"retired");
    let at = (at.0, at.1 - "\"retired".len() as u64);
    check(d, "error", Some("/contracts/1/state"), Some(at), "retired");
}

#[test]
fn validate_reports_unregistered_contract_with_add_command_help() {
    let tree = Tree::new("good");
    let rel = "contracts/extra/1.0.0.json";
    tree.write(rel, &extra_contract("PRC-EXTRA-001", "PRM-GREET-001"));
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    let d = one(&doc, "contract_unregistered", rel);
    check(d, "error", None, None, "PRC-EXTRA-001@1.0.0");
    assert!(d["help"].as_str().unwrap().contains(&format!("pactum registry add {rel}")), "{d:#}");
}

#[test]
fn validate_reports_hash_mismatch_with_help() {
    let tree = Tree::new("good");
    let rel = "contracts/greet/1.1.0.json";
    let registered = tree.registry()["contracts"][1]["sha256"].as_str().unwrap().to_string();
    tree.edit(rel, "\"max_tokens\": 120", "\"max_tokens\": 121");
    let actual = sha256_hex(tree.read(rel).as_bytes());
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    let d = one(&doc, "contract_hash_mismatch", rel);
    check(d, "error", None, None, &registered);
    assert!(d["message"].as_str().unwrap().contains(&actual), "{d:#}");
    // An active version never changes.
    assert!(d["help"].as_str().unwrap().contains("new version"), "{d:#}");
}

#[test]
fn validate_treats_a_draft_as_a_working_copy_and_a_promoted_file_as_frozen() {
    let tree = Tree::new("good");
    let rel = "contracts/greet/1.2.0.json";
    tree.write(rel, &tree.read("contracts/greet/1.1.0.json").replace("\"1.1.0\"", "\"1.2.0\""));
    tree.registry_cmd(&["add", rel]);
    // Editing a draft is not an error and writes no history.
    let events = tree.registry()["history"].as_array().unwrap().len();
    tree.edit(rel, "\"max_tokens\": 120", "\"max_tokens\": 200");
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 0, "{doc:#}");
    assert_eq!(tree.registry()["history"].as_array().unwrap().len(), events);
    // Its content is checked as usual.
    tree.edit(rel, "\"max_tokens\": 200", "\"max_tokens\": -1");
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    one(&doc, "contract_schema_invalid", rel);
    tree.edit(rel, "\"max_tokens\": -1", "\"max_tokens\": 200");
    // Promote freezes it: an edit after that is a hash mismatch whose help names the fix.
    tree.registry_cmd(&["promote", "PRC-GREET-001@1.2.0"]);
    tree.edit(rel, "\"max_tokens\": 200", "\"max_tokens\": 300");
    let (doc, _) = tree.validate_json(&[]);
    let d = one(&doc, "contract_hash_mismatch", rel);
    let help = d["help"].as_str().unwrap();
    assert!(help.contains("pactum new version PRC-GREET-001@1.2.1"), "{d:#}");
    assert!(help.contains(&format!("git checkout -- {rel}")), "{d:#}");
}

// ---------------------------------------------------------------------------------------
// Checks 5-6: packs and template variables
// ---------------------------------------------------------------------------------------

#[test]
fn validate_reports_pack_with_both_template_and_sections() {
    let tree = Tree::new("good");
    let rel = "prompt_packs/greet/1.1.0.json";
    tree.edit(
        rel,
        "  \"template\":",
        "  \"sections\": { \"task\": \"Greet {{ name }}.\" },\n  \"template\":",
    );
    tree.resync();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    let found = all(&doc, "prompt_pack_invalid", rel);
    let d = found.iter().find(|d| d["message"].as_str().unwrap().contains("not both"));
    let d = d.unwrap_or_else(|| panic!("no `not both` finding in {found:#?}"));
    check(d, "error", Some(""), Some((1, 1)), "`template` or `sections`");
    // The contract bound to it says so too.
    check(
        one(&doc, "prompt_pack_invalid", "contracts/greet/1.1.0.json"),
        "error",
        Some("/prompt_pack_id"),
        Some((4, 21)),
        "PRM-GREET-001@1.1.0",
    );
}

#[test]
fn validate_reports_template_and_sections_once() {
    let tree = Tree::new("good");
    let rel = "prompt_packs/greet/1.1.0.json";
    tree.edit(
        rel,
        "  \"template\":",
        "  \"sections\": { \"task\": \"Greet {{ name }}.\" },\n  \"template\":",
    );
    tree.resync();
    let (doc, _) = tree.validate_json(&[]);
    let d = one(&doc, "prompt_pack_invalid", rel);
    assert!(d["message"].as_str().unwrap().contains("not both"), "{d:#}");
}

#[test]
fn validate_reports_undeclared_template_variable() {
    let tree = Tree::new("good");
    let pack = "prompt_packs/greet/1.1.0.json";
    tree.edit(pack, "for {{ name }}", "for {{ name }} ({{ nickname }})");
    tree.resync();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    // Reported where it is used: the template, in the pack file, at its line:column.
    let at = pos_after(&tree.read(pack), "\"template\": ");
    let d = one(&doc, "template_variable_undeclared", pack);
    check(d, "error", Some("/template"), Some(at), "`nickname`");
    let message = d["message"].as_str().unwrap();
    assert!(message.contains("the input_schema of contracts/greet/1.1.0.json"), "{d:#}");
    assert!(!message.contains("did you mean"), "nothing is close to `nickname`: {d:#}");
    assert!(d["help"].as_str().unwrap().contains("add `nickname` (with its type)"), "{d:#}");
    assert!(all(&doc, "template_variable_undeclared", "contracts/greet/1.1.0.json").is_empty());

    // A typo of a declared input: did you mean it?
    tree.edit(pack, "({{ nickname }})", "({{ nmae }})");
    tree.resync();
    let (doc, _) = tree.validate_json(&[]);
    let d = one(&doc, "template_variable_undeclared", pack);
    assert!(d["message"].as_str().unwrap().ends_with("did you mean `name`?"), "{d:#}");
    assert!(d["help"].as_str().unwrap().starts_with("write `name` in the template"), "{d:#}");
    // Checked with its context from either file of the pair (the pre-commit hook's case).
    for named in [pack, "contracts/greet/1.1.0.json"] {
        let (doc, status) = tree.validate_json(&[named]);
        assert_eq!(status, 1, "{named}: {doc:#}");
        one(&doc, "template_variable_undeclared", pack);
    }
}

#[test]
fn validate_warns_about_unused_input_and_fails_only_with_strict() {
    let tree = Tree::new("good");
    let rel = "contracts/summarize/1.0.0.json";
    tree.edit(
        rel,
        "\"max_words\": { \"type\": \"integer\", \"minimum\": 5 }",
        "\"max_words\": { \"type\": \"integer\", \"minimum\": 5 },\n      \"audience\": { \"type\": \"string\" }",
    );
    tree.resync();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 0, "{doc:#}");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["summary"]["warnings"], 1);
    let at = pos_after(&tree.read(rel), "\"audience\": ");
    check(
        one(&doc, "template_input_unused", rel),
        "warning",
        Some("/input_schema/properties/audience"),
        Some(at),
        "`audience`",
    );
    let out = tree.validate(&[]);
    assert!(stdout(&out).contains("warning[template_input_unused]"), "{}", stdout(&out));
    assert!(stdout(&out).ends_with("checked 9 files: 0 errors, 1 warning\n"), "{}", stdout(&out));

    let (strict, status) = tree.validate_json(&["--strict"]);
    assert_eq!(status, 1);
    assert_eq!(strict["ok"], false);
    assert_eq!(strict["summary"]["errors"], 1);
    assert_eq!(one(&strict, "template_input_unused", rel)["severity"], "error");
    let out = tree.validate(&["--strict"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("error[template_input_unused]"), "{}", stdout(&out));
}

// ---------------------------------------------------------------------------------------
// Checks 7-10: lifecycle, compatibility, examples, work orders
// ---------------------------------------------------------------------------------------

/// Marks contract entry `index` deprecated, by hand (history dropped).
fn deprecate_by_hand(tree: &Tree, index: usize, since: &str, successor: Option<&str>) {
    tree.edit_registry(|r| {
        r.as_object_mut().unwrap().remove("history");
        let e = &mut r["contracts"][index];
        e["state"] = json!("deprecated");
        e["deprecated_at"] = json!(since);
        if let Some(s) = successor {
            e["successor_version"] = json!(s);
        }
    });
}

/// PRC-SUMMARIZE-001@1.0.0 deprecated by hand with a successor that is no valid one (or
/// none): what the finding says, says once, and never says.
struct BadSuccessor {
    name: &'static str,
    successor: Option<&'static str>,
    says: &'static [&'static str],
    once: &'static [&'static str],
    never_says: &'static [&'static str],
}

const BAD_SUCCESSORS: &[BadSuccessor] = &[
    BadSuccessor {
        name: "a lower successor",
        successor: Some("0.9.0"),
        says: &["not higher", "0.9.0 is not higher than 1.0.0"],
        once: &["0.9.0"],
        never_says: &[],
    },
    BadSuccessor {
        name: "a successor that is not registered",
        successor: Some("1.9.0"),
        says: &["not registered"],
        once: &[],
        never_says: &[],
    },
    BadSuccessor {
        name: "no successor",
        successor: None,
        says: &["missing"],
        once: &[],
        never_says: &["?"],
    },
];

#[test]
fn validate_reports_deprecated_entry_without_a_valid_successor() {
    common::check_cases(
        BAD_SUCCESSORS,
        |case| case.name,
        |case| {
            let tree = Tree::new("good");
            deprecate_by_hand(&tree, 2, "2099-01-01T00:00:00Z", case.successor);
            let (doc, status) = tree.validate_json(&[]);
            assert_eq!(status, 1, "{doc:#}");
            let d = one(&doc, "successor_missing", "registry.json");
            let pointer = "/contracts/2/successor_version";
            let registry = tree.read("registry.json");
            // At the successor's value, or at the entry when it names none.
            let at = match case.successor {
                Some(_) => pos_after(&registry, "\"successor_version\": "),
                None => entry_pos(&registry, "contracts", 2),
            };
            check(d, "error", Some(pointer), Some(at), case.says[0]);
            let message = d["message"].as_str().unwrap();
            assert!(message.contains("PRC-SUMMARIZE-001@1.0.0"), "{d:#}");
            for part in case.says {
                assert!(message.contains(part), "`{part}` missing: {message}");
            }
            for part in case.once {
                assert_eq!(message.matches(part).count(), 1, "`{part}` not once: {message}");
            }
            for part in case.never_says {
                assert!(!message.contains(part), "`{part}` is there: {message}");
            }
        },
    );
}

#[test]
fn validate_rejects_too_small_version_bump() {
    let tree = Tree::new("good");
    let rel = "contracts/summarize/1.0.1.json";
    let text = tree
        .read("contracts/summarize/1.0.0.json")
        .replacen("\"version\": \"1.0.0\"", "\"version\": \"1.0.1\"", 1)
        .replacen("[\"text\", \"max_words\"]", "[\"text\", \"max_words\", \"language\"]", 1)
        .replacen(
            "\"text\": { \"type\": \"string\" },",
            "\"text\": { \"type\": \"string\" },\n      \"language\": { \"type\": \"string\" },",
            1,
        );
    tree.write(rel, &text);
    tree.registry_cmd(&["add", rel]);
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    let at = pos_after(&text, "\"version\": ");
    let d = one(&doc, "incompatible_version_bump", rel);
    check(d, "error", Some("/version"), Some(at), "1.0.0 -> 1.0.1");
    let message = d["message"].as_str().unwrap();
    assert!(message.contains("patch") && message.contains("major"), "{d:#}");
    assert!(message.contains("/input_schema/properties/language"), "{d:#}");
    assert!(d["help"].as_str().unwrap().contains("pactum diff"), "{d:#}");
}

#[test]
fn validate_accepts_minor_bump_that_adds_an_optional_input() {
    // good/ already has PRC-GREET-001 1.0.0 -> 1.1.0 adding optional `tone`: no finding.
    let tree = Tree::new("good");
    let (doc, _) = tree.validate_json(&[]);
    assert!(!codes(&doc).contains("incompatible_version_bump"), "{doc:#}");
}

#[test]
fn validate_reports_failing_contract_example() {
    let tree = Tree::new("good");
    let rel = "contracts/greet/1.0.0.json";
    tree.edit(rel, "\"expect\": \"output_schema_invalid\"", "\"expect\": \"ok\"");
    tree.resync();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    let text = tree.read(rel);
    let line = text.lines().position(|l| l.contains("\"missing greeting\"")).unwrap() as u64;
    let d = one(&doc, "example_failed", rel);
    // The pointer is the example; its object opens on the line above its name.
    check(d, "error", Some("/examples/1"), Some((line, 5)), "output_schema_invalid");
    assert!(d["message"].as_str().unwrap().contains("expects `ok`"), "{d:#}");
}

#[test]
fn validate_reports_work_order_pinning_a_draft() {
    let tree = Tree::new("good");
    let contract = "contracts/greet/1.2.0.json";
    tree.write(
        contract,
        &tree.read("contracts/greet/1.1.0.json").replace("\"1.1.0\"", "\"1.2.0\""),
    );
    tree.registry_cmd(&["add", contract]);
    let rel = "work_orders/WO-DRAFT-001.json";
    tree.write(rel, &work_order("WO-DRAFT-001", "PRC-GREET-001@1.2.0"));
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    check(
        one(&doc, "contract_not_active", rel),
        "error",
        Some("/contract"),
        Some((4, 15)),
        "draft",
    );
    // A range that the draft would match still resolves to the active version.
    assert!(all(&doc, "contract_not_active", "work_orders/WO-GREET-001.json").is_empty());
}

#[test]
fn validate_warns_when_a_work_order_pins_a_deprecated_version() {
    let tree = Tree::new("good");
    tree.registry_cmd(&["deprecate", "PRC-GREET-001@1.0.0", "--successor", "1.1.0"]);
    let rel = "work_orders/WO-OLD-001.json";
    tree.write(rel, &work_order("WO-OLD-001", "PRC-GREET-001@1.0.0"));
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 0, "{doc:#}");
    let d = one(&doc, "contract_deprecated", rel);
    check(d, "warning", Some("/contract"), Some((4, 15)), "successor is 1.1.0");
    assert_eq!(doc["summary"]["warnings"], 1, "{doc:#}");
    let (_, status) = tree.validate_json(&["--strict"]);
    assert_eq!(status, 1);
}

#[test]
fn validate_warns_when_the_deprecation_period_is_over() {
    let tree = Tree::new("good");
    deprecate_by_hand(&tree, 0, "2020-01-01T00:00:00Z", Some("1.1.0"));
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 0, "{doc:#}");
    let d = one(&doc, "deprecation_period_over", "registry.json");
    let at = entry_pos(&tree.read("registry.json"), "contracts", 0);
    check(d, "warning", Some("/contracts/0"), Some(at), "PRC-GREET-001@1.0.0");
    assert!(
        d["help"].as_str().unwrap().contains("pactum registry remove PRC-GREET-001@1.0.0"),
        "{d:#}"
    );
    assert!(!d["message"].as_str().unwrap().contains("still pinning"), "{d:#}");

    // Work orders that still pin it are listed.
    tree.write("work_orders/WO-OLD-001.json", &work_order("WO-OLD-001", "PRC-GREET-001@=1.0.0"));
    let (doc, _) = tree.validate_json(&[]);
    let d = one(&doc, "deprecation_period_over", "registry.json");
    assert!(d["message"].as_str().unwrap().contains("work_orders/WO-OLD-001.json"), "{d:#}");

    // Within the period: no warning.
    let tree = Tree::new("good");
    deprecate_by_hand(&tree, 0, "2999-01-01T00:00:00Z", Some("1.1.0"));
    let (doc, _) = tree.validate_json(&[]);
    assert!(!codes(&doc).contains("deprecation_period_over"), "{doc:#}");
}

// ---------------------------------------------------------------------------------------
// Every finding at once
// ---------------------------------------------------------------------------------------

#[test]
fn validate_reports_every_finding_never_stopping_at_the_first() {
    let tree = Tree::new("good");
    // Files.
    tree.write(
        "contracts/notes/1.0.0.json",
        "{\n  \"contract_id\": \"PRC-NOTES-001\"\n  \"version\": \"1.0.0\"\n}\n",
    );
    tree.edit("contracts/greet/1.0.0.json", "\"temperature\": 0.3", "\"temperature\": \"hot\"");
    tree.edit(
        "contracts/summarize/1.0.0.json",
        "\"max_words\": { \"type\": \"integer\", \"minimum\": 5 }",
        "\"max_words\": { \"type\": \"integer\", \"minimum\": 5 },\n      \"audience\": { \"type\": \"string\" }",
    );
    tree.edit(
        "contracts/greet/1.1.0.json",
        "\"expect\": \"ok\"",
        "\"expect\": \"output_schema_invalid\"",
    );
    tree.edit("prompt_packs/greet/1.1.0.json", "for {{ name }}", "for {{ name }} ({{ nickname }})");
    tree.write("contracts/extra/1.0.0.json", &extra_contract("PRC-EXTRA-001", "PRM-NOPE-001"));
    tree.write(
        "prompt_packs/greet/2.0.0.json",
        "{\n  \"prompt_pack_id\": \"PRM-GREET-001\",\n  \"version\": \"2.0.0\",\n  \"template\": \"Hi {{ name }}\",\n  \"sections\": { \"task\": \"Hi\" }\n}\n",
    );
    let bump = tree
        .read("contracts/summarize/1.0.0.json")
        .replacen("\"version\": \"1.0.0\"", "\"version\": \"1.0.1\"", 1)
        .replacen("[\"text\", \"max_words\"]", "[\"text\", \"max_words\", \"audience\"]", 1);
    tree.write("contracts/summarize/1.0.1.json", &bump);
    // Work orders.
    tree.write("work_orders/WO-LOST-001.json", &work_order("WO-LOST-001", "PRC-GRET-001"));
    tree.write("work_orders/WO-FUTURE-001.json", &work_order("WO-FUTURE-001", "PRC-GREET-001@^4"));
    tree.write(
        "work_orders/WO-DRAFT-001.json",
        &work_order("WO-DRAFT-001", "PRC-SUMMARIZE-001@1.0.1"),
    );
    tree.write(
        "work_orders/WO-BAD-001.json",
        "{\"work_order_id\": \"WO-BAD-001\", \"kind\": \"batch\"}\n",
    );
    // The registry.
    let bump_sha = sha256_hex(bump.as_bytes());
    tree.edit_registry(|r| {
        r["history"][3]["version"] = json!("9.9.9");
        let list = r["contracts"].as_array_mut().unwrap();
        let mut dup = list[0].clone();
        dup["state"] = json!("draft");
        let mut missing = list[1].clone();
        missing["version"] = json!("1.7.0");
        missing["path"] = json!("contracts/greet/1.7.0.json");
        let mut escape = list[1].clone();
        escape["version"] = json!("1.8.0");
        escape["path"] = json!("../1.8.0.json");
        let mut mismatch = list[1].clone();
        mismatch["version"] = json!("1.9.0");
        let mut draft = list[2].clone();
        draft["version"] = json!("1.0.1");
        draft["path"] = json!("contracts/summarize/1.0.1.json");
        draft["sha256"] = json!(bump_sha);
        draft["state"] = json!("draft");
        let summarize = &mut list[2];
        summarize["state"] = json!("deprecated");
        summarize["deprecated_at"] = json!("2020-01-01T00:00:00Z");
        summarize["successor_version"] = json!("0.1.0");
        list.extend([dup, missing, escape, mismatch, draft]);
    });

    let out = tree.validate(&["--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "", "nothing panicked or complained on stderr");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    check_summary(&doc);
    let expected = [
        "contract_parse_error",
        "contract_schema_invalid",
        "contract_hash_mismatch",
        "contract_id_mismatch",
        "contract_unregistered",
        "contract_not_found",
        "contract_version_not_found",
        "contract_not_active",
        "contract_deprecated",
        "prompt_pack_not_found",
        "prompt_pack_invalid",
        "template_variable_undeclared",
        "template_input_unused",
        "registry_file_missing",
        "registry_duplicate_entry",
        "registry_history_broken",
        "path_escape",
        "successor_missing",
        "deprecation_period_over",
        "incompatible_version_bump",
        "example_failed",
        "work_order_invalid",
    ];
    let found = codes(&doc);
    let missing: Vec<&str> = expected.iter().copied().filter(|c| !found.contains(c)).collect();
    assert!(missing.is_empty(), "missing {missing:?} in:\n{doc:#}");
    // Every finding names a file, and every finding with a pointer has a position.
    for d in diagnostics(&doc) {
        assert!(d["file"].is_string(), "{d:#}");
        assert!(d["help"].is_string(), "{d:#}");
        if d["pointer"].is_string() {
            assert!(
                d["line"].as_u64().unwrap() >= 1 && d["column"].as_u64().unwrap() >= 1,
                "{d:#}"
            );
        }
    }
    // The text report says the same.
    let text = stdout(&tree.validate(&[]));
    for code in expected {
        assert!(text.contains(&format!("[{code}]: ")), "{code} missing from text:\n{text}");
    }
    let summary = format!(
        "checked {} files: {} errors, {} warnings\n",
        doc["summary"]["files"], doc["summary"]["errors"], doc["summary"]["warnings"]
    );
    assert!(text.ends_with(&summary), "{text}");
}

// ---------------------------------------------------------------------------------------
// Output formats on one representative broken tree
// ---------------------------------------------------------------------------------------

fn broken_output(format: &str) -> (String, i32) {
    let tree = Tree::new("broken");
    let out = tree.validate(&["--format", format]);
    assert_eq!(stderr(&out), "");
    (stdout(&out), out.status.code().unwrap())
}

#[test]
fn validate_text_output_is_compiler_style() {
    let (text, status) = broken_output("text");
    assert_eq!(status, 1);
    assert!(!text.contains('\u{1b}'), "no ANSI escapes when not a terminal");
    assert!(text.contains(
        "error[contract_schema_invalid]: /boundary/temperature: 3 is greater than the maximum of 2\n \
         --> contracts/greet/1.0.0.json:8:20\n  |\n8 |     \"temperature\": 3\n  |                    ^\n  \
         = help: "
    ), "{text}");
    assert!(text.ends_with("checked 12 files: 6 errors, 1 warning\n"), "{text}");
    insta::assert_snapshot!("text_broken", text);
}

#[test]
fn validate_json_output_has_the_documented_shape() {
    let (text, status) = broken_output("json");
    assert_eq!(status, 1);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let keys: BTreeSet<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
    for key in ["ok", "version", "summary", "diagnostics"] {
        assert!(keys.contains(key), "{key} missing: {keys:?}");
    }
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["summary"], json!({"files": 12, "errors": 6, "warnings": 1}));
    check_summary(&doc);
    let expected_keys: BTreeSet<&str> =
        ["code", "severity", "file", "pointer", "line", "column", "message", "help"].into();
    for d in diagnostics(&doc) {
        let keys: BTreeSet<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, expected_keys, "{d:#}");
        assert!(d["code"].is_string() && d["message"].is_string(), "{d:#}");
        assert!(["error", "warning", "note"].contains(&d["severity"].as_str().unwrap()), "{d:#}");
        for key in ["file", "pointer", "help"] {
            assert!(d[key].is_null() || d[key].is_string(), "{d:#}");
        }
        for key in ["line", "column"] {
            assert!(d[key].is_null() || d[key].as_u64().unwrap() >= 1, "{d:#}");
        }
    }
    insta::assert_snapshot!("json_broken", text);
}

#[test]
fn validate_sarif_output_is_sarif_2_1_0() {
    let (text, status) = broken_output("sarif");
    assert_eq!(status, 1);
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["version"], "2.1.0");
    assert!(doc["$schema"].as_str().unwrap().contains("sarif"), "{}", doc["$schema"]);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert_eq!(driver["name"], "pactum");
    let rule_ids: Vec<&str> =
        driver["rules"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    let results = runs[0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 7);
    let result_ids: BTreeSet<&str> =
        results.iter().map(|r| r["ruleId"].as_str().unwrap()).collect();
    assert_eq!(rule_ids.iter().copied().collect::<BTreeSet<_>>(), result_ids);
    assert_eq!(rule_ids.len(), result_ids.len(), "one rule per code");
    for r in results {
        let index = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rule_ids[index], r["ruleId"], "{r:#}");
        assert!(["error", "warning", "note"].contains(&r["level"].as_str().unwrap()), "{r:#}");
        assert!(!r["message"]["text"].as_str().unwrap().is_empty(), "{r:#}");
        let locations = r["locations"].as_array().unwrap();
        assert_eq!(locations.len(), 1, "{r:#}");
        let physical = &locations[0]["physicalLocation"];
        let uri = physical["artifactLocation"]["uri"].as_str().unwrap();
        assert!(!uri.is_empty() && !uri.starts_with('/') && !uri.contains("://"), "{r:#}");
        assert!(!uri.contains(".."), "{r:#}");
        if let Some(region) = physical.get("region") {
            assert!(region["startLine"].as_u64().unwrap() >= 1, "{r:#}");
            assert!(region["startColumn"].as_u64().unwrap_or(1) >= 1, "{r:#}");
        }
    }
    // Results that have a line carry it as region.startLine.
    let schema = results.iter().find(|r| r["ruleId"] == "contract_schema_invalid").unwrap();
    let region = &schema["locations"][0]["physicalLocation"]["region"];
    assert_eq!((region["startLine"].as_u64(), region["startColumn"].as_u64()), (Some(8), Some(20)));

    doc["runs"][0]["tool"]["driver"]["version"] = json!("[version]");
    insta::assert_json_snapshot!("sarif_broken", doc);
}

#[test]
fn validate_sarif_results_always_have_a_start_line() {
    let (text, _) = broken_output("sarif");
    let doc: Value = serde_json::from_str(&text).unwrap();
    for r in doc["runs"][0]["results"].as_array().unwrap() {
        let region = &r["locations"][0]["physicalLocation"]["region"];
        assert!(region["startLine"].as_u64().is_some_and(|l| l >= 1), "{r:#}");
    }
}

#[test]
fn validate_junit_output_counts_files_and_failures() {
    let (text, status) = broken_output("junit");
    assert_eq!(status, 1);
    let (json_text, _) = broken_output("json");
    let doc: Value = serde_json::from_str(&json_text).unwrap();
    let files_with_errors: BTreeSet<&str> = diagnostics(&doc)
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| d["file"].as_str().unwrap())
        .collect();

    let mut reader = quick_xml::Reader::from_str(&text);
    let mut attrs_of: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    let mut failing_cases = BTreeSet::new();
    let mut current_case = None;
    loop {
        match reader.read_event().unwrap() {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) => {
                let name: String = e.name().as_ref().to_owned();
                let attrs: BTreeMap<String, String> = e
                    .attributes()
                    .map(|a| {
                        let a = a.unwrap();
                        (
                            a.key.as_ref().to_owned(),
                            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                .unwrap()
                                .into_owned(),
                        )
                    })
                    .collect();
                if name == "testcase" {
                    current_case = Some(attrs["name"].clone());
                }
                if name == "failure" {
                    failing_cases.insert(current_case.clone().unwrap());
                }
                attrs_of.push((name, attrs));
            }
            _ => {}
        }
    }
    let count = |name: &str| attrs_of.iter().filter(|(n, _)| n == name).count();
    assert_eq!(count("testsuites"), 1);
    assert_eq!(count("testsuite"), 1);
    let cases: Vec<&BTreeMap<String, String>> =
        attrs_of.iter().filter(|(n, _)| n == "testcase").map(|(_, a)| a).collect();
    // One test case per checked file.
    assert_eq!(cases.len() as u64, doc["summary"]["files"].as_u64().unwrap());
    let suite = &attrs_of.iter().find(|(n, _)| n == "testsuite").unwrap().1;
    assert_eq!(suite["tests"], cases.len().to_string());
    assert_eq!(suite["failures"], files_with_errors.len().to_string());
    let suites = &attrs_of.iter().find(|(n, _)| n == "testsuites").unwrap().1;
    assert_eq!(suites["failures"], files_with_errors.len().to_string());
    assert_eq!(failing_cases, files_with_errors.iter().map(|f| f.to_string()).collect());
    insta::assert_snapshot!("junit_broken", text);
}

#[test]
fn validate_github_output_is_workflow_annotations() {
    let (text, status) = broken_output("github");
    assert_eq!(status, 1);
    let lines: Vec<&str> = text.lines().collect();
    let annotations: Vec<&&str> = lines.iter().filter(|l| l.starts_with("::")).collect();
    assert_eq!(annotations.len(), 7, "{text}");
    for line in &annotations {
        assert!(line.starts_with("::error file=") || line.starts_with("::warning file="), "{line}");
        let (props, message) = line[2..].split_once("::").unwrap();
        assert!(!message.is_empty() && !message.contains('\n'), "{line}");
        assert!(props.contains(",title="), "{line}");
    }
    assert!(
        lines.contains(
            &"::error file=contracts/greet/1.0.0.json,line=8,col=20,title=contract_schema_invalid::/boundary/temperature: 3 is greater than the maximum of 2%0Ahelp: make the contract fit schemas/prompt_contract.schema.json (add \"$schema\" to let your editor check it); PRC-GREET-001@1.0.0 is active and its file never changes: make the fix in a new version (`pactum new version PRC-GREET-001@1.1.1`)"
        ),
        "{text}"
    );
    assert!(
        annotations.iter().any(|l| l.starts_with(
            "::warning file=contracts/summarize/1.0.0.json,line=15,col=19,title=template_input_unused::"
        )),
        "{text}"
    );
    insta::assert_snapshot!("github_broken", text);
}

/// Arguments validate refuses with exit status 2: the code (`None`: the argument parser's own
/// error, which has none) and what stderr says. A usage error pactum finds after parsing
/// (`--select` names codes the parser cannot know) exits 2 like one the parser finds; under
/// `--format json` every refusal with a code is one JSON document.
struct Refused {
    name: &'static str,
    args: &'static [&'static str],
    code: Option<&'static str>,
    says: &'static [&'static str],
}

const REFUSED: &[Refused] = &[
    Refused {
        name: "an unknown format",
        args: &["--format", "xml"],
        code: None,
        says: &["text, json, sarif, junit, github"],
    },
    Refused {
        name: "a --select code that does not exist",
        args: &["--select", "no_such_code"],
        code: Some("usage_error"),
        says: &[],
    },
    Refused {
        name: "a path that does not exist",
        args: &["no/such/folder"],
        code: Some("io_error"),
        says: &["no/such/folder"],
    },
    Refused {
        name: "a --registry that does not exist",
        args: &["--registry", "nowhere.json"],
        code: Some("io_error"),
        says: &["nowhere.json"],
    },
];

#[test]
fn validate_refuses_bad_arguments_and_missing_paths_with_exit_2() {
    let tree = Tree::new("good");
    common::check_cases(
        REFUSED,
        |case| case.name,
        |case| {
            let out = tree.validate(case.args);
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
            assert_eq!(stdout(&out), "");
            let err = stderr(&out);
            if let Some(code) = case.code {
                assert!(err.contains(&format!("error[{code}]")), "{err}");
            }
            for part in case.says {
                assert!(err.contains(part), "`{part}` missing: {err}");
            }
            let Some(code) = case.code else { return };
            let (doc, status) = tree.validate_json(case.args);
            assert_eq!((status, doc["code"].as_str()), (2, Some(code)), "{doc:#}");
            assert_eq!(doc["ok"], false, "{doc:#}");
            assert!(doc["message"].is_string() && doc["errors"].is_array(), "{doc:#}");
            for part in case.says {
                assert!(doc["message"].as_str().unwrap().contains(part), "`{part}`: {doc:#}");
            }
        },
    );
}

// ---------------------------------------------------------------------------------------
// Discovery
// ---------------------------------------------------------------------------------------

#[test]
fn validate_single_file_uses_the_registry_found_above() {
    let tree = Tree::new("good");
    let (doc, status) = tree.validate_json(&["contracts/greet/1.1.0.json"]);
    assert_eq!(status, 0, "{doc:#}");
    // The file (registry.json is its context, not reported on).
    assert_eq!(doc["summary"]["files"], 1);

    tree.edit("contracts/greet/1.1.0.json", "\"temperature\": 0.3", "\"temperature\": 3");
    // Only the named file is checked, with its path relative to the root.
    tree.edit("contracts/summarize/1.0.0.json", "\"temperature\": 0", "\"temperature\": 9");
    let (doc, status) = tree.validate_json(&["contracts/greet/1.1.0.json"]);
    assert_eq!(status, 1);
    one(&doc, "contract_schema_invalid", "contracts/greet/1.1.0.json");
    one(&doc, "contract_hash_mismatch", "contracts/greet/1.1.0.json");
    assert!(all(&doc, "contract_schema_invalid", "contracts/summarize/1.0.0.json").is_empty());
}

#[test]
fn validate_subfolder_finds_the_registry_by_walking_up() {
    let tree = Tree::new("good");
    tree.edit("contracts/greet/1.1.0.json", "\"max_tokens\": 120", "\"max_tokens\": 121");
    let (doc, status) = tree.validate_json(&["contracts"]);
    assert_eq!(status, 1);
    // Contracts only (registry.json is context); paths relative to the registry's folder.
    assert_eq!(doc["summary"]["files"], 3);
    one(&doc, "contract_hash_mismatch", "contracts/greet/1.1.0.json");

    // Run from inside the subfolder with no PATH: the same findings. Outside a git work
    // tree, files are named from the current folder (what a CI job resolves relative
    // paths against); the registry.json above it by its absolute path.
    let out = pactum_in(&tree.path("contracts")).args(["validate", "--json"]).output().unwrap();
    let inner: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(inner["summary"], doc["summary"]);
    one(&inner, "contract_hash_mismatch", "greet/1.1.0.json");
    let json = pactum_in(&tree.path("contracts")).args(["validate", "--format", "junit"]).output();
    let junit = String::from_utf8(json.unwrap().stdout).unwrap();
    assert!(junit.contains("<testcase name=\"greet/1.1.0.json\""), "{junit}");
}

/// Fails unless no registry.json sits in `dir` or any folder above it.
fn assert_no_registry_above(dir: &Path) {
    for folder in dir.ancestors() {
        assert!(
            !folder.join("registry.json").exists(),
            "{} exists: this test needs a temp folder with no registry above it",
            folder.join("registry.json").display()
        );
    }
}

#[test]
fn validate_without_registry_skips_registry_checks_with_a_note() {
    let tree = Tree::new("good");
    fs::remove_file(tree.path("registry.json")).unwrap();
    assert_no_registry_above(&tree.root);
    let out = tree.validate(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("note: no registry.json found in "), "{text}");
    assert!(text.contains("registry checks skipped"), "{text}");
    assert!(text.ends_with("checked 8 files: 0 errors, 0 warnings\n"), "{text}");
    let (doc, _) = tree.validate_json(&[]);
    let notes = doc["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().contains("registry checks skipped")),
        "{doc:#}"
    );

    // The exit status follows the remaining findings.
    tree.edit("contracts/greet/1.1.0.json", "\"temperature\": 0.3", "\"temperature\": 3");
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    one(&doc, "contract_schema_invalid", "contracts/greet/1.1.0.json");
    assert!(!codes(&doc).contains("contract_hash_mismatch"), "{doc:#}");
}

#[test]
fn validate_registry_flag_overrides_the_discovered_registry() {
    let tree = Tree::new("good");
    fs::rename(tree.path("registry.json"), tree.path("pinned.json")).unwrap();
    tree.write("registry.json", "not json\n");
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    one(&doc, "registry_invalid", "registry.json");

    let (doc, status) = tree.validate_json(&["--registry", "pinned.json"]);
    assert_eq!(status, 0, "{doc:#}");
    assert_eq!(doc["summary"]["files"], 9);

    let out = tree.validate(&["--registry", "nowhere.json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn validate_skips_hidden_folders_target_and_shared_schemas() {
    let tree = Tree::new("good");
    for rel in [
        "contracts/.drafts/bad.json",
        "contracts/.bad.json",
        "contracts/target/bad.json",
        "contracts/node_modules/bad.json",
        "contracts/schemas/bad.json",
        "contracts/greet/shared.schema.json",
        "schemas/bad.json",
        ".cache/bad.json",
        "target/bad.json",
    ] {
        tree.write(rel, "{ this is not json\n");
    }
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 0, "{doc:#}");
    assert_eq!(doc["summary"]["files"], 9);
    // Walking a plain folder (not the root) skips them too.
    let (doc, status) = tree.validate_json(&["contracts"]);
    assert_eq!(status, 0, "{doc:#}");
    assert_eq!(doc["summary"]["files"], 3);
    // Without a registry, PATH = the root is walked as a plain folder.
    fs::remove_file(tree.path("registry.json")).unwrap();
    assert_no_registry_above(&tree.root);
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 0, "{doc:#}");
    assert_eq!(doc["summary"]["files"], 8);
}

// ---------------------------------------------------------------------------------------
// Flags and scale
// ---------------------------------------------------------------------------------------

#[test]
fn validate_json_flag_is_an_alias_for_format_json() {
    let tree = Tree::new("broken");
    let a = tree.validate(&["--json"]);
    let b = tree.validate(&["--format", "json"]);
    assert_eq!(a.status.code(), Some(1));
    assert_eq!(a.status.code(), b.status.code());
    assert_eq!(stdout(&a), stdout(&b));
}

#[test]
fn validate_jobs_1_gives_the_same_report_as_the_default() {
    let tree = Tree::new("broken");
    for format in ["text", "json", "sarif", "junit", "github"] {
        let serial = tree.validate(&["--jobs", "1", "--format", format]);
        let parallel = tree.validate(&["--format", format]);
        assert_eq!(serial.status.code(), parallel.status.code(), "{format}");
        assert_eq!(stdout(&serial), stdout(&parallel), "{format}");
    }
}

/// Writes `n` contracts and `n` packs with a registry.json hashing them; returns the root.
fn generated_tree(n: usize) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("project");
    let mut contracts = Vec::new();
    let mut packs = Vec::new();
    for i in 1..=n {
        let contract = format!(
            "{{\n  \"contract_id\": \"PRC-GEN-{i:03}\",\n  \"version\": \"1.0.0\",\n  \
             \"prompt_pack_id\": \"PRM-GEN-{i:03}\",\n  \
             \"boundary\": {{ \"max_tokens\": 100, \"temperature\": 0 }},\n  \
             \"input_schema\": {{ \"type\": \"object\", \"properties\": {{ \"topic\": {{ \"type\": \"string\" }} }} }}\n}}\n"
        );
        let pack = format!(
            "{{\n  \"prompt_pack_id\": \"PRM-GEN-{i:03}\",\n  \"version\": \"1.0.0\",\n  \
             \"template\": \"Write about {{{{ topic }}}} (item {i}).\"\n}}\n"
        );
        for (list, kind, id_key, id, text) in [
            (&mut contracts, "contracts", "contract_id", format!("PRC-GEN-{i:03}"), contract),
            (&mut packs, "prompt_packs", "prompt_pack_id", format!("PRM-GEN-{i:03}"), pack),
        ] {
            let rel = format!("{kind}/gen{i:03}/1.0.0.json");
            let path = root.join(&rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, &text).unwrap();
            list.push(json!({
                id_key: id, "version": "1.0.0", "path": rel, "sha256": sha256_hex(text.as_bytes()),
                "state": "active", "registered_at": "2026-01-01T00:00:00Z",
                "activated_at": "2026-01-01T00:00:00Z",
            }));
        }
    }
    let registry = json!({"registry_version": 1, "contracts": contracts, "prompt_packs": packs});
    fs::write(root.join("registry.json"), serde_json::to_string_pretty(&registry).unwrap())
        .unwrap();
    adopt(&root);
    (tmp, root)
}

/// Records the entries of `root/registry.json` as they stand as its history (`adopt`).
fn adopt(root: &Path) {
    let stamp = pactum::registry::lifecycle::Stamp::new("2026-01-01T00:00:00Z", "tests");
    pactum::registry::store::update(&root.join("registry.json"), |r| {
        Ok(pactum::registry::lifecycle::adopt(r, &stamp))
    })
    .unwrap();
}

#[test]
#[ignore = "needs util-linux `script` for a pseudo-terminal; .ci/run runs it (cargo test -- --ignored)"]
fn validate_large_tree_on_a_terminal_shows_a_progress_bar_and_clears_it() {
    // A pseudo-terminal from util-linux `script`, so stderr is a terminal.
    let script = common::require_tool("script", "util-linux, for a pseudo-terminal");
    let (_tmp, root) = generated_tree(250);
    let bin = assert_cmd::cargo::cargo_bin("pactum");
    let out = Command::new(script)
        .args(["-qec", &format!("'{}' validate", bin.display()), "/dev/null"])
        .current_dir(&root)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("validating") && screen.contains("/501 files"), "{screen:?}");
    assert!(screen.contains("\u{1b}[2K"), "the bar is cleared when done: {screen:?}");
    assert!(screen.ends_with("checked 501 files: 0 errors, 0 warnings\r\n"), "{screen:?}");
}

#[test]
fn validate_large_tree_writes_nothing_to_stderr() {
    let (_tmp, root) = generated_tree(250);
    let out = pactum_in(&root).arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(stderr(&out), "", "no progress bar when stderr is not a terminal");
    assert_eq!(stdout(&out), "checked 501 files: 0 errors, 0 warnings\n");

    let serial = pactum_in(&root).args(["validate", "--jobs", "1"]).output().unwrap();
    assert_eq!(stdout(&serial), stdout(&out));
    assert_eq!(stderr(&serial), "");
}

/// A tree pack (SPEC §14) for `PRM-GREET-001@1.1.0`, with `{{EXTRA}}` where more sections go.
const TREE_PACK: &str = r#"{
  "prompt_pack_id": "PRM-GREET-001",
  "version": "1.1.0",
  "sections": [
    { "key": "role", "title": "Role", "template": "You write greetings.", "message": "system" },
    { "key": "task", "title": "Task", "template": "Greet {{ name }}. Reply with JSON: {\"greeting\": \"...\"}." },
    { "key": "tone", "title": "Tone", "template": "Use a {{ tone }} tone.", "enabled": "tone is defined" }{{EXTRA}}
  ]
}
"#;

#[test]
fn validate_accepts_a_tree_pack() {
    let tree = Tree::new("good");
    tree.write("prompt_packs/greet/1.1.0.json", &TREE_PACK.replace("{{EXTRA}}", ""));
    tree.resync();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 0, "{doc:#}");
    assert_eq!(doc["summary"]["errors"], 0, "{doc:#}");
}

#[test]
fn validate_reports_tree_findings_at_line_and_column() {
    let tree = Tree::new("good");
    let rel = "prompt_packs/greet/1.1.0.json";
    let extra = r#",
    { "key": "task", "title": "Again", "template": "Twice." }"#;
    tree.write(rel, &TREE_PACK.replace("{{EXTRA}}", extra));
    tree.resync();
    let (doc, status) = tree.validate_json(&[]);
    assert_eq!(status, 1);
    let text = tree.read(rel);
    let at = pos_after(&text, "\"title\": \"Again\"");
    let at = (at.0, pos_after(&text, "{ \"key\": ").1);
    let d = one(&doc, "prompt_pack_invalid", rel);
    check(d, "error", Some("/sections/3/key"), Some(at), "used twice");

    // An `enabled` expression that does not compile, at the expression.
    let extra = r#",
    { "key": "extra", "title": "Extra", "template": "x", "enabled": "tone ==" }"#;
    tree.write(rel, &TREE_PACK.replace("{{EXTRA}}", extra));
    tree.resync();
    let (doc, _) = tree.validate_json(&[]);
    let at = pos_after(&tree.read(rel), "\"x\", \"enabled\": ");
    check(
        one(&doc, "prompt_pack_invalid", rel),
        "error",
        Some("/sections/3/enabled"),
        Some(at),
        "does not compile",
    );

    // An `enabled` expression over an undeclared input: the contract says which.
    let extra = r#",
    { "key": "extra", "title": "Extra", "template": "x", "enabled": "mood == 'sad'" }"#;
    tree.write(rel, &TREE_PACK.replace("{{EXTRA}}", extra));
    tree.resync();
    let (doc, _) = tree.validate_json(&[]);
    let d = one(&doc, "template_variable_undeclared", rel);
    assert!(d["message"].as_str().unwrap().contains("/sections/3/enabled uses `mood`"), "{d:#}");
    assert_eq!(d["pointer"], "/sections/3/enabled", "{d:#}");

    // A tool nobody provides, at the tool's name (SPEC §23: `tool_unknown`).
    let extra = r#",
    { "key": "extra", "title": "Extra", "template": "x", "tools": ["calculator", "teleport"] }"#;
    tree.write(rel, &TREE_PACK.replace("{{EXTRA}}", extra));
    tree.resync();
    let (doc, _) = tree.validate_json(&[]);
    let at = pos_after(&tree.read(rel), "[\"calculator\", ");
    let d = one(&doc, "tool_unknown", rel);
    check(d, "error", Some("/sections/3/tools/1"), Some(at), "`teleport`");
    assert!(d["message"].as_str().unwrap().contains("available tools: calculator"), "{d:#}");

    // A summarized section without its summary.
    let extra = r#",
    { "key": "extra", "title": "Extra", "template": "x", "visibility": "summary" }"#;
    tree.write(rel, &TREE_PACK.replace("{{EXTRA}}", extra));
    tree.resync();
    let (doc, _) = tree.validate_json(&[]);
    let d = one(&doc, "prompt_pack_invalid", rel);
    assert_eq!(d["pointer"], "/sections/3/summary", "{d:#}");
    assert!(d["line"].as_u64().is_some(), "{d:#}");
}

/// Six mistakes in a pack and its contract's inputs, reported in one run: the schema's, the
/// tree's (a duplicate key) and the variables its readable templates and `enabled`
/// expressions use — not in layers that each need a fix before the next shows.
#[test]
fn every_finding_of_a_pack_comes_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    pactum_in(dir.path()).args(["init", "."]).assert().success();
    pactum_in(dir.path()).args(["new", "contract", "PRC-L-001"]).assert().success();
    crate::common::write_placeholders(dir.path());
    let pack = json!({
        "prompt_pack_id": "PRM-L-001",
        "version": "1.0.0",
        "sections": [
            {"key": "role", "title": "Role", "template": "You classify.", "message": "system"},
            {"key": "role", "title": "Again", "template": "dup"},
            {"key": "task", "title": "Task", "template": "{{ input }} {{ topic }}",
             "enabled": "mode == 'careful'",
             "children": [{"key": "sub", "title": "Sub", "template": "x",
                           "visibility": "summary", "enabled": "level > 2"}]},
            {"key": "Bad Key", "title": "T", "template": "y"}
        ]
    });
    fs::write(dir.path().join("prompt_packs/l/1.0.0.json"), pack.to_string()).unwrap();
    let out = pactum_in(dir.path()).args(["validate", "--json"]).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let found: BTreeSet<(String, String)> = diagnostics(&doc)
        .iter()
        .map(|d| {
            let pointer = d["pointer"].as_str().unwrap_or_default().to_string();
            let name = d["message"]
                .as_str()
                .unwrap()
                .split('`')
                .nth(1)
                .filter(|_| d["code"] == "template_variable_undeclared")
                .map(|n| format!(" {n}"))
                .unwrap_or_default();
            (d["code"].as_str().unwrap().to_string(), format!("{pointer}{name}"))
        })
        .collect();
    for expected in [
        ("prompt_pack_invalid", "/sections/1/key"),
        ("prompt_pack_invalid", "/sections/2/children/0/summary"),
        ("prompt_pack_invalid", "/sections/3/key"),
        ("template_variable_undeclared", "/sections/2/template topic"),
        ("template_variable_undeclared", "/sections/2/enabled mode"),
        ("template_variable_undeclared", "/sections/2/children/0/enabled level"),
    ] {
        assert!(
            found.contains(&(expected.0.to_string(), expected.1.to_string())),
            "{expected:?} missing from {found:#?}"
        );
    }
    // Each mistake once: the summary the schema requires is not reported again.
    let summary = diagnostics(&doc)
        .iter()
        .filter(|d| d["code"] == "prompt_pack_invalid")
        .filter(|d| d["pointer"].as_str().unwrap_or_default().starts_with("/sections/2/children/0"))
        .count();
    assert_eq!(summary, 1, "{doc:#}");
}

/// A contract with schema findings still has its pack's variables checked against its
/// inputs in the same run.
#[test]
fn a_contracts_schema_findings_and_its_packs_variables_come_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    pactum_in(dir.path()).args(["init", "."]).assert().success();
    pactum_in(dir.path()).args(["new", "contract", "PRC-L-001"]).assert().success();
    crate::common::write_placeholders(dir.path());
    let contract_path = dir.path().join("contracts/l/1.0.0.json");
    let mut contract: Value =
        serde_json::from_str(&fs::read_to_string(&contract_path).unwrap()).unwrap();
    contract["boundary"]["temperature"] = json!(5);
    fs::write(&contract_path, contract.to_string()).unwrap();
    let pack_path = dir.path().join("prompt_packs/l/1.0.0.json");
    let mut pack: Value = serde_json::from_str(&fs::read_to_string(&pack_path).unwrap()).unwrap();
    pack["sections"]["task"] = json!("{{ input }} {{ nope }}");
    fs::write(&pack_path, pack.to_string()).unwrap();
    let out = pactum_in(dir.path()).args(["validate", "--json"]).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let found: Vec<(&str, &str)> = diagnostics(&doc)
        .iter()
        .map(|d| (d["code"].as_str().unwrap(), d["message"].as_str().unwrap()))
        .collect();
    assert!(
        found.iter().any(|(c, m)| *c == "contract_schema_invalid" && m.contains("temperature")),
        "{found:#?}"
    );
    assert!(
        found.iter().any(|(c, m)| *c == "template_variable_undeclared" && m.contains("`nope`")),
        "{found:#?}"
    );
}
