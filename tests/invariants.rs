//! Architecture invariants of the shipped tree (SPEC §8.2, §2):
//! - no prompt prose in `src/`: all prompt text lives in packs (string literals of the
//!   library and binary are scanned for instruction phrasing; unit-test modules are not
//!   shipped and are skipped);
//! - every shipped contract has an `input_schema`; every JSON-producing kernel role's
//!   contract has an `output_schema` and the text roles' contracts do not; PRC-SYNTH-001's
//!   output schema is `schemas/final_answer.schema.json`;
//! - every contract and pack file is registered with its SHA-256, every kernel role resolves,
//!   and the tree validates clean;
//! - every shipped contract, pack and work order names its editor schema in `"$schema"`;
//! - the shipped demo work orders run offline from a copy of the repository: the kernel demo
//!   computes 5 + 10 with the calculator and answers 15, and only because the calculator's
//!   15 reaches the prompts its scripted replies answer (with 5 + 11 it does not answer 15;
//!   with a synthesis pack that withholds the results the answer is degraded);
//! - every source file opens with a `//!` module doc.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pactum::executor::roles::Role;
use pactum::id::{Pin, Requirement};
use pactum::project::Project;
use pactum::resolve::ResolveOptions;
use serde_json::Value;

use common::{repo, sha256_hex};

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn files_under(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(repo().join(dir))
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    out.sort();
    out
}

// --- no prompt prose in src/ -------------------------------------------------------------

/// Phrases that give instruction prose away.
const INSTRUCTION_PHRASES: [&str; 10] = [
    "You are",
    "you are",
    "Respond",
    "respond with",
    "Reply with",
    "reply with",
    "Your task",
    "Return only",
    "Answer with",
    "answer with",
];

/// Literals shorter than this are labels or messages, not prompts.
const MIN_PROSE_CHARS: usize = 60;

/// A string literal in a source file.
#[derive(Debug, PartialEq)]
struct Literal {
    line: usize,
    text: String,
    in_test_module: bool,
}

/// The string literals of Rust source (plain, raw, byte), skipping comments and char
/// literals, each marked when it sits inside a `#[cfg(test)]` module.
fn string_literals(source: &str) -> Vec<Literal> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    // Code with literals and comments blanked, for finding test modules.
    let mut code = String::with_capacity(chars.len());
    let mut spans = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                code.push(' ');
                i += 1;
            }
            continue;
        }
        if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if i >= chars.len() {
                    break;
                }
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    code.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    code.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    code.push(if chars[i] == '\n' { '\n' } else { ' ' });
                    i += 1;
                }
            }
            continue;
        }
        // Raw strings: r"..", r#".."#, br#".."#.
        let raw_start = if c == 'r' && (at(i + 1) == '"' || at(i + 1) == '#') {
            Some(i + 1)
        } else if c == 'b' && at(i + 1) == 'r' && (at(i + 2) == '"' || at(i + 2) == '#') {
            Some(i + 2)
        } else {
            None
        };
        let ident_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if let (Some(mut j), false) = (raw_start, ident_before) {
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            if at(j) == '"' {
                let start_line = line;
                let begin = j + 1;
                let mut k = begin;
                let closes = |k: usize| at(k) == '"' && (1..=hashes).all(|h| at(k + h) == '#');
                while k < chars.len() && !closes(k) {
                    if chars[k] == '\n' {
                        line += 1;
                    }
                    k += 1;
                }
                let text: String = chars[begin..k.min(chars.len())].iter().collect();
                spans.push((code.len(), start_line, text));
                let end = (k + 1 + hashes).min(chars.len());
                for ch in &chars[i..end] {
                    code.push(if *ch == '\n' { '\n' } else { ' ' });
                }
                i = end;
                continue;
            }
        }
        if c == '"' {
            let start_line = line;
            let mut k = i + 1;
            let mut text = String::new();
            while k < chars.len() && chars[k] != '"' {
                if chars[k] == '\\' && at(k + 1) == '\n' {
                    // A line continuation: the newline and the next line's indent vanish.
                    k += 1;
                    while k < chars.len() && chars[k].is_whitespace() {
                        if chars[k] == '\n' {
                            line += 1;
                        }
                        k += 1;
                    }
                    continue;
                }
                if chars[k] == '\\' {
                    // `\n` reads as the line break it is (so "\nYou are" starts a word);
                    // `\"`, `\\`, `\'` as their character; `\u{..}` and `\x..` roughly.
                    k += 1;
                    text.push(match at(k) {
                        'n' | 'r' => '\n',
                        't' => '\t',
                        other => other,
                    });
                    k += 1;
                    continue;
                }
                if k < chars.len() {
                    if chars[k] == '\n' {
                        line += 1;
                    }
                    text.push(chars[k]);
                    k += 1;
                }
            }
            spans.push((code.len(), start_line, text));
            let end = (k + 1).min(chars.len());
            for ch in &chars[i..end] {
                code.push(if *ch == '\n' { '\n' } else { ' ' });
            }
            i = end;
            continue;
        }
        if c == '\'' {
            // A char literal ('x', '\n', '\u{..}', '"') or a lifetime ('a).
            let end = if at(i + 1) == '\\' {
                let mut k = i + 3;
                while k < chars.len() && chars[k] != '\'' {
                    k += 1;
                }
                Some(k + 1)
            } else if at(i + 2) == '\'' {
                Some(i + 3)
            } else {
                None
            };
            if let Some(end) = end {
                for _ in i..end.min(chars.len()) {
                    code.push(' ');
                }
                i = end;
                continue;
            }
        }
        if c == '\n' {
            line += 1;
        }
        code.push(c);
        i += 1;
    }
    // `#[cfg(test)] mod name { ... }` ranges, in byte offsets of `code`.
    let mut test_ranges = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("#[cfg(test)]") {
        let start = from + found;
        let rest = &code[start..];
        let mut item = rest["#[cfg(test)]".len()..].trim_start();
        // Attributes between `#[cfg(test)]` and the module (an `allow` with its comment).
        while item.starts_with("#[") {
            item = item.split_once('\n').map_or("", |(_, after)| after).trim_start();
        }
        if item.starts_with("mod ")
            && let Some(open) = rest.find('{')
        {
            let mut depth = 0;
            let mut end = code.len();
            for (offset, ch) in code[start + open..].char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = start + open + offset;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            test_ranges.push(start..end);
        }
        from = start + 1;
    }
    for (offset, line, text) in spans {
        let in_test_module = test_ranges.iter().any(|r| r.contains(&offset));
        out.push(Literal { line, text, in_test_module });
    }
    out
}

/// Whether `phrase` occurs in `text` as whole words ("answer with" is not in "answer
/// within").
fn contains_phrase(text: &str, phrase: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(phrase).any(|(at, _)| {
        !word(text[..at].chars().next_back()) && !word(text[at + phrase.len()..].chars().next())
    })
}

/// Whether a literal reads like prompt prose.
fn is_prompt_prose(text: &str) -> bool {
    text.chars().count() >= MIN_PROSE_CHARS
        && INSTRUCTION_PHRASES.iter().any(|p| contains_phrase(text, p))
}

#[test]
fn the_literal_scanner_finds_strings_and_skips_comments_chars_and_lifetimes() {
    let source = r####"
//! You are reading a doc comment, which is not a literal at all, however long it gets here.
fn f<'a>(x: &'a str) -> char {
    let q = '"';
    let e = '\'';
    let s = "plain \"quoted\" text";
    /* "not a literal" */
    let r = r#"raw "inner" text"#;
    let b = br"bytes";
    let _ = format!("{x}{s}{r}{q}{e}");
    'x'
}
#[cfg(test)]
mod tests {
    fn t() { let _ = "inside tests"; }
}
fn after() -> &'static str { "after tests" }
fn cont() -> &'static str { "one \
    two" }
"####;
    let literals = string_literals(source);
    let found: Vec<(usize, &str, bool)> =
        literals.iter().map(|l| (l.line, l.text.as_str(), l.in_test_module)).collect();
    assert_eq!(
        found,
        [
            (6, r#"plain "quoted" text"#, false),
            (8, r#"raw "inner" text"#, false),
            (9, "bytes", false),
            (10, "{x}{s}{r}{q}{e}", false),
            (15, "inside tests", true),
            (17, "after tests", false),
            (18, "one two", false),
        ]
    );
}

#[test]
fn the_prose_detector_flags_instructions_and_spares_messages() {
    let prompt = "You are a careful planner. Break the request into steps and list them.";
    assert!(is_prompt_prose(prompt));
    assert!(is_prompt_prose(
        "Reply with one JSON object and nothing else, following the schema below exactly."
    ));
    assert!(!is_prompt_prose("You are here."), "short literals are labels");
    assert!(!is_prompt_prose(
        "POST https://example.test did not answer within 60 s; raise constraints.timeout_s"
    ));
    assert!(contains_phrase("Then respond with JSON.", "respond with"));
    assert!(!contains_phrase("Correspond with", "respond with"));
    assert!(!is_prompt_prose(
        "no registry.json here or in any parent folder; pass --root DIR or create one"
    ));
    // The scanner and the detector together catch a literal added to a source file.
    let source = format!("fn system() -> &'static str {{\n    \"{prompt}\"\n}}\n");
    let flagged: Vec<Literal> =
        string_literals(&source).into_iter().filter(|l| is_prompt_prose(&l.text)).collect();
    assert_eq!(flagged.len(), 1);
    assert_eq!(flagged[0].line, 2);
}

#[test]
fn no_prompt_prose_in_src() {
    let mut offenders = Vec::new();
    let (mut scanned, mut in_tests) = (0, 0);
    for path in files_under("src", "rs") {
        let source = std::fs::read_to_string(&path).unwrap();
        for literal in string_literals(&source) {
            scanned += 1;
            if literal.in_test_module {
                in_tests += 1;
                if is_prompt_prose(&literal.text) {
                    eprintln!("(skipped, unit-test module) {}:{}", path.display(), literal.line);
                }
            } else if is_prompt_prose(&literal.text) {
                let rel = path.strip_prefix(repo()).unwrap().display().to_string();
                offenders.push(format!("{rel}:{}: {:?}", literal.line, literal.text));
            }
        }
    }
    assert!(scanned > 500, "the scanner saw only {scanned} literals");
    assert!(in_tests > 100 && in_tests < scanned, "{in_tests} of {scanned} in test modules");
    assert!(
        offenders.is_empty(),
        "prompt text belongs in prompt_packs/, not src/:\n{}",
        offenders.join("\n")
    );
}

// --- contracts ---------------------------------------------------------------------------

fn contracts() -> Vec<(PathBuf, Value)> {
    files_under("contracts", "json").into_iter().map(|p| (p.clone(), read_json(&p))).collect()
}

fn contract(id: &str) -> Value {
    contracts()
        .into_iter()
        .map(|(_, c)| c)
        .find(|c| c["contract_id"] == id)
        .unwrap_or_else(|| panic!("no shipped contract {id}"))
}

#[test]
fn every_shipped_contract_has_an_input_schema() {
    let all = contracts();
    assert!(all.len() >= 14, "13 kernel roles + PRC-CLASSIFY-001");
    for (path, c) in all {
        assert!(c["input_schema"].is_object(), "{} has no input_schema", path.display());
    }
}

#[test]
fn json_roles_have_an_output_schema_and_text_roles_do_not() {
    let json_roles: BTreeSet<&str> =
        Role::ALL.into_iter().filter(|r| r.produces_json()).map(Role::name).collect();
    assert_eq!(
        json_roles,
        BTreeSet::from([
            "plan",
            "subplan",
            "refinement",
            "convergence",
            "repair_json",
            "synthesis"
        ]),
        "SPEC §8.2 names the JSON roles"
    );
    for role in Role::ALL {
        let c = contract(role.contract_id());
        if role.produces_json() {
            assert!(
                c["output_schema"].is_object(),
                "{} ({}) produces JSON and needs an output_schema",
                role.contract_id(),
                role.name()
            );
        } else {
            assert!(
                c.get("output_schema").is_none(),
                "{} ({}) is a text role and must not have an output_schema",
                role.contract_id(),
                role.name()
            );
        }
    }
    assert!(contract("PRC-CLASSIFY-001")["output_schema"].is_object());
}

#[test]
fn the_synthesis_output_schema_is_the_final_answer_schema() {
    let mut expected = read_json(&repo().join("schemas/final_answer.schema.json"));
    for key in ["$schema", "$id", "title", "description"] {
        expected.as_object_mut().unwrap().remove(key);
    }
    assert_eq!(contract("PRC-SYNTH-001")["output_schema"], expected);
}

#[test]
fn every_contract_and_pack_file_is_registered_with_its_sha256() {
    let registry = read_json(&repo().join("registry.json"));
    for (dir, list, id_key) in [
        ("contracts", "contracts", "contract_id"),
        ("prompt_packs", "prompt_packs", "prompt_pack_id"),
    ] {
        let entries = registry[list].as_array().unwrap();
        let mut files = files_under(dir, "json");
        files.extend(files_under(dir, "yaml"));
        files.extend(files_under(dir, "yml"));
        assert!(!files.is_empty());
        for path in files {
            let rel = path.strip_prefix(repo()).unwrap().to_string_lossy().replace('\\', "/");
            let entry = entries
                .iter()
                .find(|e| e["path"] == rel.as_str())
                .unwrap_or_else(|| panic!("{rel} is not registered in registry.json"));
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(
                entry["sha256"],
                sha256_hex(&bytes).as_str(),
                "{rel}: sha256 differs from the registry"
            );
            if rel.ends_with(".json") {
                let doc = read_json(&path);
                assert_eq!(entry[id_key], doc[id_key], "{rel}");
                assert_eq!(entry["version"], doc["version"], "{rel}");
            }
        }
    }
}

#[test]
fn every_shipped_file_names_its_editor_schema() {
    for (dir, schema) in [
        ("contracts", "prompt_contract.schema.json"),
        ("prompt_packs", "prompt_pack.schema.json"),
        ("work_orders", "work_order.schema.json"),
    ] {
        let files = files_under(dir, "json");
        assert!(!files.is_empty(), "{dir}/ is empty");
        for path in files {
            let doc = read_json(&path);
            let named = doc["$schema"]
                .as_str()
                .unwrap_or_else(|| panic!("{} has no \"$schema\"", path.display()));
            let target = path.parent().unwrap().join(named);
            assert!(
                named.ends_with(schema) && target.canonicalize().is_ok(),
                "{}: \"$schema\": {named:?} must reach schemas/{schema}",
                path.display()
            );
        }
    }
}

#[test]
fn every_kernel_role_resolves_to_its_shipped_contract_and_pack() {
    let project = Project::open(&repo().join("registry.json")).unwrap();
    for role in Role::ALL {
        let pin = Pin { id: role.contract_id().to_string(), requirement: Requirement::Latest };
        let resolved = project
            .resolve(&pin, ResolveOptions::default())
            .unwrap_or_else(|e| panic!("{} ({}): {e}", role.contract_id(), role.name()));
        assert_eq!(resolved.contract.id, role.contract_id());
        assert!(resolved.warnings.is_empty(), "{}: {:?}", role.name(), resolved.warnings);
        assert!(resolved.pack.id.starts_with("PRM-"), "{}", resolved.pack.id);
    }
}

#[test]
fn the_shipped_tree_validates_clean() {
    let out = assert_cmd::Command::cargo_bin("pactum")
        .unwrap()
        .current_dir(repo())
        .args(["validate", ".", "--json", "--strict"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(report["summary"]["errors"], 0, "{report:#}");
    assert_eq!(report["summary"]["warnings"], 0, "{report:#}");
    assert_eq!(out.status.code(), Some(0));
}

// --- the shipped demos -------------------------------------------------------------------

/// A copy of the shipped tree with its demo work orders and their scripted replies.
fn demo_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_shipped(dir.path());
    common::copy_tree(&repo().join("work_orders"), &dir.path().join("work_orders"));
    common::copy_tree(&repo().join("fixtures"), &dir.path().join("fixtures"));
    dir
}

/// `pactum run work_orders/WO --json --ledger ledger.jsonl` in `dir`: the command's output
/// and the ledger's records.
fn run_demo_in(dir: &Path, wo: &str) -> (common::Out, Vec<Value>) {
    let out = common::Out::of(common::pactum_in(dir).args([
        "run",
        &format!("work_orders/{wo}"),
        "--json",
        "--ledger",
        "ledger.jsonl",
    ]));
    assert!(out.stderr.contains("offline"), "the demo says it runs offline:\n{out}");
    let ledger = std::fs::read_to_string(dir.join("ledger.jsonl")).unwrap();
    let records = ledger.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (out, records)
}

/// The shipped demo in a copy of the shipped tree; it must exit 0.
fn run_demo(wo: &str) -> (Value, Vec<Value>) {
    let dir = demo_tree();
    let (out, records) = run_demo_in(dir.path(), wo);
    out.status(0);
    (common::single_result(out.json()), records)
}

/// The demo's calculator result as it appears in a prompt (the kernel's execution results).
const RESULT_15: &str = r#"{"s1":{"error":null,"result":{"result":15},"status":"complete"}}"#;

#[test]
fn the_kernel_demo_computes_the_sum_with_the_calculator_and_answers_15() {
    let (result, records) = run_demo("WO-DEMO-SUM-001.json");
    assert_eq!(result["ok"], true, "{result:#}");
    assert_eq!(result["kind"], "kernel");
    assert_eq!(result["errors"], serde_json::json!([]), "{result:#}");
    let answer = &result["final_answer"];
    assert_eq!(answer["answer_text"], "The sum of 5 and 10 is 15.", "{answer:#}");
    assert!(answer["metadata"].get("degraded").is_none(), "not a degraded answer: {answer:#}");
    let calls: Vec<&Value> =
        records.iter().filter_map(|r| r["tool_calls"].as_array()).flatten().collect();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0]["tool"], "calculator");
    assert_eq!(calls[0]["output"]["result"], 15);
    // The scripted synthesis reply is served only to a prompt holding the calculator's
    // result (its `expect_prompt`), so the answer above proves the 15 reached synthesis.
    let fixtures = read_json(&repo().join("fixtures/demo_sum.json"));
    let synthesis = fixtures["responses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["contract_id"] == "PRC-SYNTH-001")
        .expect("the demo scripts a synthesis reply");
    let expected: Vec<&str> =
        synthesis["expect_prompt"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(expected.contains(&RESULT_15), "{synthesis:#}");
    let served = records
        .iter()
        .find(|r| r["kind"] == "exchange" && r["contract_id"] == "PRC-SYNTH-001")
        .expect("a synthesis exchange");
    assert_eq!(served["verdict"], "ok", "{served:#}");
}

#[test]
fn the_kernel_demo_does_not_answer_15_when_the_plan_adds_5_and_11() {
    let dir = demo_tree();
    let fixtures = dir.path().join("fixtures/demo_sum.json");
    let text = std::fs::read_to_string(&fixtures).unwrap();
    assert!(text.contains(r#"\"expression\": \"5 + 10\""#), "the plan the demo scripts");
    std::fs::write(&fixtures, text.replace(r#"\"5 + 10\""#, r#"\"5 + 11\""#)).unwrap();

    let (out, records) = run_demo_in(dir.path(), "WO-DEMO-SUM-001.json");

    out.status(1);
    let result = common::single_result(out.json());
    assert_eq!(result["ok"], false, "{result:#}");
    assert_eq!(result["status"], "failed", "{result:#}");
    let calls: Vec<&Value> =
        records.iter().filter_map(|r| r["tool_calls"].as_array()).flatten().collect();
    assert_eq!(calls[0]["output"]["result"], 16, "the calculator really ran: {calls:#?}");
    // Semantic validation was scripted for a result of 15: its reply is refused.
    assert_eq!(result["code"], "script_prompt_mismatch", "{result:#}");
    assert!(
        result["message"].as_str().unwrap().contains("response 2 (PRC-SEMANTIC-001)"),
        "{result:#}"
    );
    // So is the synthesis reply: Phase E builds a degraded answer from what the run has.
    let answer = &result["final_answer"];
    assert_eq!(answer["metadata"]["degraded"], true, "{answer:#}");
    let reason = answer["metadata"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("synthesis_failed: script_prompt_mismatch")
            && reason.contains("response 4 (PRC-SYNTH-001)"),
        "{reason}"
    );
    let text = answer["answer_text"].as_str().unwrap();
    assert!(!text.contains("is 15"), "{text}");
    assert!(text.contains(r#"gave {"result":16}"#), "{text}");
}

#[test]
fn the_kernel_demo_answer_needs_the_calculators_result_in_the_synthesis_prompt() {
    // A synthesis pack that withholds the execution results (registered as 1.0.1, which
    // PRC-SYNTH-001's `^1` binding picks): everything else in the run is unchanged.
    let dir = demo_tree();
    let mut pack = read_json(&repo().join("prompt_packs/synth/1.0.0.json"));
    pack["version"] = Value::from("1.0.1");
    let context = pack["sections"]["context"].as_str().unwrap();
    assert!(context.contains("{{ execution_results }}"), "{context}");
    pack["sections"]["context"] =
        Value::from(context.replace("{{ execution_results }}", "(withheld)"));
    let file = dir.path().join("prompt_packs/synth/1.0.1.json");
    std::fs::write(&file, serde_json::to_string_pretty(&pack).unwrap()).unwrap();
    for args in [
        &["registry", "add", "prompt_packs/synth/1.0.1.json"][..],
        &["registry", "promote", "PRM-SYNTH-001@1.0.1"][..],
    ] {
        common::Out::of(common::pactum_in(dir.path()).args(args)).status(0);
    }

    let (out, records) = run_demo_in(dir.path(), "WO-DEMO-SUM-001.json");

    let result = common::single_result(out.json());
    assert_eq!(result["status"], "converged", "the loop itself is unchanged: {result:#}");
    let synthesis = records
        .iter()
        .find(|r| r["kind"] == "exchange" && r["contract_id"] == "PRC-SYNTH-001")
        .expect("a synthesis exchange");
    assert_eq!(synthesis["prompt_pack_version"], "1.0.1", "{synthesis:#}");
    assert_eq!(synthesis["errors"][0]["code"], "script_prompt_mismatch", "{synthesis:#}");
    let answer = &result["final_answer"];
    assert_ne!(answer["answer_text"], "The sum of 5 and 10 is 15.", "{answer:#}");
    assert_eq!(answer["metadata"]["degraded"], true, "{answer:#}");
}

#[test]
fn the_exchange_demo_classifies_offline() {
    let (result, records) = run_demo("WO-DEMO-CLASSIFY-001.json");
    assert_eq!(result["ok"], true, "{result:#}");
    assert_eq!(result["kind"], "exchange");
    assert!(result["output"]["label"].is_string(), "{result:#}");
    let events: Vec<&Value> = records.iter().map(|r| &r["event"]).collect();
    assert_eq!(events, ["work_order_started", "exchange", "work_order_completed"]);
    assert_eq!(records[1]["contract_id"], "PRC-CLASSIFY-001");
}

/// The scripted classification answers the work order's question only: another input, and
/// the demo fails instead of answering the old question.
#[test]
fn the_exchange_demo_answers_only_the_question_it_was_asked() {
    let dir = demo_tree();
    let file = dir.path().join("work_orders/WO-DEMO-CLASSIFY-001.json");
    let mut wo = read_json(&file);
    wo["input"]["user_input"] = Value::from("Where is my parcel? It has not arrived.");
    std::fs::write(&file, serde_json::to_string_pretty(&wo).unwrap()).unwrap();
    let (out, records) = run_demo_in(dir.path(), "WO-DEMO-CLASSIFY-001.json");
    assert_eq!(out.code, 1, "{out}");
    let exchange = records.iter().find(|r| r["kind"] == "exchange").expect("an exchange");
    assert_eq!(exchange["errors"][0]["code"], "script_prompt_mismatch", "{exchange:#}");
}

/// The runbook demo's answer is served only after the calculator computed 500 / 96: a
/// different computation, and the scripted answer is refused.
#[test]
fn the_runbook_demo_answers_from_what_the_calculator_computed() {
    let (result, _) = run_demo("WO-DEMO-RUNBOOK-001.json");
    assert_eq!(result["ok"], true, "{result:#}");
    let dir = demo_tree();
    let file = dir.path().join("fixtures/demo_runbook.json");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("500 / (120 * 0.8)"), "{text}");
    std::fs::write(&file, text.replace("500 / (120 * 0.8)", "500 / (100 * 0.8)")).unwrap();
    let (out, records) = run_demo_in(dir.path(), "WO-DEMO-RUNBOOK-001.json");
    assert_eq!(out.code, 1, "{out}");
    let last = records.iter().rfind(|r| r["kind"] == "exchange").expect("an exchange");
    assert_eq!(last["errors"][0]["code"], "script_prompt_mismatch", "{last:#}");
    assert!(last["errors"][0]["message"].as_str().unwrap().contains("5.208333333333333"));
}

// --- module docs -------------------------------------------------------------------------

#[test]
fn every_source_file_starts_with_a_module_doc() {
    let missing: Vec<String> = files_under("src", "rs")
        .into_iter()
        .filter(|p| !std::fs::read_to_string(p).unwrap().starts_with("//!"))
        .map(|p| p.strip_prefix(repo()).unwrap().display().to_string())
        .collect();
    assert!(missing.is_empty(), "files without a `//!` module doc: {missing:?}");
}

// --- one door for JSON Schema validation -------------------------------------------------

/// `clippy.toml` forbids `jsonschema`'s validation and compilation methods in the library
/// and the binary; `src/schema.rs` (whose `schema::Validator` measures every instance
/// first) carries the only allows outside test modules, each marked `// the one door`, and
/// touches no file (its allows must not cover `std::fs`).
#[test]
fn only_schema_may_validate() {
    let clippy = std::fs::read_to_string(repo().join("clippy.toml")).unwrap();
    for method in [
        "jsonschema::Validator::is_valid",
        "jsonschema::Validator::iter_errors",
        "jsonschema::Validator::validate",
        "jsonschema::validator_for",
        "jsonschema::options",
        "jsonschema::draft202012::new",
        "jsonschema::draft202012::options",
        "jsonschema::meta::validator_for",
    ] {
        assert!(
            clippy.contains(&format!("path = \"{method}\"")),
            "clippy.toml no longer forbids {method}"
        );
    }
    let schema = std::fs::read_to_string(repo().join("src/schema.rs")).unwrap();
    let library = schema.split("#[cfg(test)]").next().unwrap();
    for disk in ["std::fs", "fs::", "File::", ".exists(", ".metadata(", "read_dir", "canonicalize"]
    {
        assert!(!library.contains(disk), "src/schema.rs touches the file system ({disk})");
    }
    let doors = library.lines().filter(|l| l.contains("allow(clippy::disallowed_methods)")).count();
    let marked = library
        .lines()
        .filter(|l| {
            l.contains("allow(clippy::disallowed_methods)") && l.contains("// the one door")
        })
        .count();
    assert!(doors > 0, "src/schema.rs holds the door");
    assert_eq!(doors, marked, "every allow in src/schema.rs names the one door");
    // In the binary, only test modules may opt out.
    for file in files_under("src/bin", "rs") {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains("jsonschema::"),
            "{}: validate through pactum::schema",
            file.display()
        );
    }
}

// --- one door for the file system --------------------------------------------------------

/// `clippy.toml` forbids `std::fs` (and the `Path` methods that touch the disk) in the
/// library; the only module allowed to use them is `src/confine.rs`. Elsewhere in the
/// library an `allow` may only open a test module, so a feature cannot opt out quietly.
#[test]
fn only_confine_may_touch_the_file_system() {
    let clippy = std::fs::read_to_string(repo().join("clippy.toml")).unwrap();
    for method in [
        "std::fs::read",
        "std::fs::write",
        "std::fs::File::open",
        "std::fs::OpenOptions::open",
        "std::fs::remove_file",
        "std::fs::rename",
        "std::fs::create_dir_all",
        "walkdir::WalkDir::new",
        "std::path::Path::canonicalize",
        "std::path::Path::exists",
    ] {
        assert!(
            clippy.contains(&format!("path = \"{method}\"")),
            "clippy.toml no longer forbids {method}"
        );
    }
    let mut allowed = Vec::new();
    for file in files_under("src", "rs") {
        let rel = file.strip_prefix(repo()).unwrap().to_string_lossy().replace('\\', "/");
        if rel.starts_with("src/bin/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.contains("clippy::disallowed_methods") {
                continue;
            }
            if line.trim_start().starts_with("#![allow") {
                allowed.push(rel.clone());
                continue;
            }
            // src/schema.rs is the one door for JSON Schema validation: its item-level
            // allows are for `jsonschema` (see `only_schema_may_validate`), never `std::fs`;
            // src/authority.rs the one door for programs and connections (see
            // `only_authority_may_start_programs_or_connect`), and config.rs's
            // `apply_env` the one place the library makes permits of the environment;
            // src/client.rs's `Environment::process`, the facade's reading of it.
            if (rel == "src/schema.rs" || rel == "src/authority.rs" || rel == "src/client.rs")
                && line.contains("// the one door")
            {
                continue;
            }
            if rel == "src/config.rs" && line.contains("// Permit::environment") {
                continue;
            }
            let next = lines.get(i + 1).copied().unwrap_or("").trim();
            let next = next.strip_prefix("pub(super) ").unwrap_or(next);
            assert!(
                next == "mod tests {" || next == "mod tests;" || next == "mod agreement;",
                "{rel}:{}: `allow(clippy::disallowed_methods)` outside a test module; touch files through src/confine.rs",
                i + 1
            );
        }
    }
    assert_eq!(allowed, ["src/confine.rs"], "only confine.rs may allow std::fs module-wide");
}

/// No committed file is authority to act (SPEC §24): starting a program, opening a
/// connection and building an HTTP agent are forbidden by clippy.toml everywhere but in
/// src/authority.rs, which does each only for a `Permit`; a permit out of thin air is
/// forbidden in the library too (the binary and tests make them, with an allow).
#[test]
fn only_authority_may_start_programs_or_connect() {
    let clippy = std::fs::read_to_string(repo().join("clippy.toml")).unwrap();
    for method in [
        "std::process::Command::new",
        "std::net::TcpStream::connect",
        "std::net::TcpStream::connect_timeout",
        "ureq::Agent::new_with_config",
        "ureq::Agent::new_with_defaults",
        "ureq::agent",
        "ureq::post",
        "pactum::authority::Permit::environment",
        "pactum::authority::Permit::flag",
        "pactum::authority::Permit::application",
    ] {
        assert!(
            clippy.contains(&format!("path = \"{method}\"")),
            "clippy.toml no longer forbids {method}"
        );
    }
    // The acts themselves, outside tests, only in src/authority.rs.
    let mut offenders = Vec::new();
    for file in files_under("src", "rs") {
        let rel = file.strip_prefix(repo()).unwrap().to_string_lossy().replace('\\', "/");
        if rel == "src/authority.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for needle in ["Command::new(", "TcpStream::connect", "Agent::new_with", "ureq::agent("] {
            if code.contains(needle) {
                offenders.push(format!("{rel}: {needle}"));
            }
        }
    }
    assert!(offenders.is_empty(), "acts outside src/authority.rs: {offenders:?}");
    let authority = std::fs::read_to_string(repo().join("src/authority.rs")).unwrap();
    assert!(!authority.contains("std::fs"), "src/authority.rs must not touch files");
}

/// What users read never cites the product specification, which they do not have: not the
/// README, SECURITY.md or the examples, not the error-code docs (`explain` prints them), not
/// the schemas (editors show their descriptions), not a message in the sources.
#[test]
fn no_user_facing_text_cites_the_spec() {
    let mut offenders = Vec::new();
    let mut texts: Vec<(String, String)> = ["docs/error-codes.md", "README.md", "SECURITY.md"]
        .into_iter()
        .map(|name| (name.into(), std::fs::read_to_string(repo().join(name)).unwrap()))
        .collect();
    for entry in walkdir::WalkDir::new(repo().join("examples")) {
        let entry = entry.unwrap();
        if entry.file_type().is_file()
            && let Ok(text) = std::fs::read_to_string(entry.path())
        {
            texts.push((entry.path().display().to_string(), text));
        }
    }
    for file in files_under("schemas", "json") {
        texts.push((file.display().to_string(), std::fs::read_to_string(&file).unwrap()));
    }
    for (name, text) in &texts {
        for (i, line) in text.lines().enumerate() {
            if line.contains("SPEC §") {
                offenders.push(format!("{name}:{}: {line}", i + 1));
            }
        }
    }
    for path in files_under("src", "rs") {
        let source = std::fs::read_to_string(&path).unwrap();
        for literal in string_literals(&source) {
            if !literal.in_test_module && literal.text.contains("SPEC §") {
                offenders.push(format!("{}:{}: {:?}", path.display(), literal.line, literal.text));
            }
        }
    }
    assert!(offenders.is_empty(), "user-facing text cites SPEC:\n{}", offenders.join("\n"));
}

/// Issue 38: a test's copy of a folder of the checkout is the folder as committed. Running
/// the README's eval example leaves `examples/eval-classify/.pactum/` (git-ignored), which a
/// copy that took it along turned into a failing test. Here in a repository of its own: an
/// ignored ledger and editor file stay behind; tracked files and new ones git would add are
/// copied.
#[test]
fn tree_copies_take_what_git_would_commit_and_nothing_it_ignores() {
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(repo.path())
            .output()
            .expect("git runs (the README's Set up needs it)");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    let project = repo.path().join("example");
    for (rel, text) in [
        (".gitignore", ".pactum/\n*.swp\n"),
        ("registry.json", "{}"),
        ("contracts/a/1.0.0.json", "{}"),
        (".pactum/ledger.jsonl", "left behind by a run\n"),
        ("contracts/a/1.0.0.json.swp", "editor"),
        ("new.json", "not yet added"),
    ] {
        let path = project.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    git(&["add", "example/.gitignore", "example/registry.json", "example/contracts"]);
    let copy = tempfile::tempdir().unwrap();
    common::copy_tree(&project, copy.path());
    let mut copied: Vec<String> = walkdir::WalkDir::new(copy.path())
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(copy.path()).unwrap().to_string_lossy().into_owned())
        .collect();
    copied.sort();
    assert_eq!(copied, [".gitignore", "contracts/a/1.0.0.json", "new.json", "registry.json"]);
}
