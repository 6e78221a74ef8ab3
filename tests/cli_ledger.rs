//! The ledger's defences through the binary (issue 22; SPEC §10, §18): one line budget
//! for the writer and every reader, exactly one serialisation of a record, every cycle
//! recorded (or the run fails), and values from records and models kept on their own line
//! in text output. The confinement of ledger paths is tested with the commands that
//! assemble context (`tests/cli_context.rs`,
//! `a_symlinked_pactum_folder_is_refused_by_every_command_that_opens_the_ledger`), the
//! refused tool calls with the disclosure loop (`tests/cli_disclosure.rs`). The confinement of ledger paths is tested with the
//! commands that assemble context (`tests/cli_context.rs`,
//! `a_symlinked_pactum_folder_is_refused_by_every_command_that_opens_the_ledger`).
//! SECURITY.md names these tests.

use crate::exchange_harness as harness;
use crate::kernel_harness;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use harness::{Out, Project, read_records, sha256_hex};
use serde_json::{Value, json};

const MAX_LINE: usize = pactum::ledger::MAX_LINE_BYTES;

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_string).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

/// A project whose ledger (`ledger.jsonl`, passed with `--ledger`) holds one good run
/// (three records), and the work order that ran.
fn one_run() -> (Project, std::path::PathBuf) {
    let p = Project::new();
    p.copy_fixture("scripted/classify_ok.json", "wo/ok.json");
    let wo = p.classify_wo("WO-LEDGER-OK", json!({"provider": {"fixtures": "ok.json"}}));
    p.run(&[&wo], &[], &[]).status(0);
    (p, wo)
}

/// The code and the line (`file:LINE:`) a failing command names, from its JSON.
fn named(out: &Out) -> (String, String) {
    let doc = out.json();
    let code = doc["code"].as_str().unwrap_or_else(|| panic!("{out}")).to_string();
    let message = doc["message"].as_str().unwrap();
    let rest = message.split_once("ledger.jsonl:").map_or("", |(_, r)| r);
    (code, rest.split(':').next().unwrap_or_default().to_string())
}

fn verify(p: &Project) -> Out {
    p.pactum(&["ledger", "verify", &p.ledger().display().to_string(), "--json"], &[])
}

fn query(p: &Project) -> Out {
    p.pactum(&["ledger", "query", "--ledger", &p.ledger().display().to_string(), "--json"], &[])
}

// --- One budget per line --------------------------------------------------------------------

#[test]
fn a_model_reply_over_the_line_budget_is_cut_with_a_marker_and_the_ledger_verifies() {
    let p = Project::new();
    let reply =
        format!("{{\"label\": \"billing\", \"confidence\": 0.9}}\n{}", "x".repeat(MAX_LINE + 1024));
    p.fixtures("big.json", json!([{"text": reply}]));
    let wo = p.classify_wo(
        "WO-LEDGER-BIG",
        json!({"provider": {"fixtures": "big.json"}, "constraints": {"max_repair_attempts": 0}}),
    );
    let out = p.run(&[&wo], &["--json"], &[]);
    assert!(out.stdout.contains("WO-LEDGER-BIG"), "{out}");
    let text = std::fs::read_to_string(p.ledger()).unwrap();
    let longest = text.lines().map(str::len).max().unwrap() + 1;
    assert!(longest <= MAX_LINE, "a line of {longest} bytes was written");
    let exchange = p.records().pop().unwrap();
    let cut = &exchange["cut"]["raw_response"];
    assert_eq!(cut["bytes"], reply.len(), "{cut}");
    assert_eq!(cut["sha256"], sha256_hex(reply.as_bytes()));
    assert_eq!(cut["type"], "string");
    let kept = exchange["raw_response"].as_str().unwrap();
    assert!(reply.starts_with(kept) && kept.len() > MAX_LINE / 2, "{}", kept.len());
    assert_eq!(cut["kept_bytes"], kept.len());
    let findings = pactum::schema::check_ledger_entry(&exchange);
    assert!(findings.is_empty(), "{findings:?}");
    verify(&p).status(0);
}

#[test]
fn a_last_line_past_the_budget_stops_run_at_once_and_every_reader_names_it() {
    let (p, wo) = one_run();
    // A last line eight times the budget (a sparse run of zeros), then its newline.
    let file = std::fs::OpenOptions::new().append(true).open(p.ledger()).unwrap();
    let len = file.metadata().unwrap().len();
    file.set_len(len + 8 * MAX_LINE as u64).unwrap();
    (&file).write_all(b"\n").unwrap();
    let before = std::fs::metadata(p.ledger()).unwrap().len();

    let start = Instant::now();
    let out = p.run(&[&wo], &["--json"], &[]);
    let took = start.elapsed();
    out.status(1);
    assert_eq!(named(&out), ("ledger_corrupt".to_string(), "4".to_string()), "{out}");
    assert!(out.stdout.contains("longer than"), "{out}");
    // Reading the whole line backwards in blocks took minutes; the budget is read, no more.
    assert!(took < Duration::from_secs(30), "run took {took:?}");
    assert_eq!(std::fs::metadata(p.ledger()).unwrap().len(), before, "nothing was appended");

    for out in [verify(&p), query(&p)] {
        out.status(1);
        assert_eq!(named(&out), ("ledger_corrupt".to_string(), "4".to_string()), "{out}");
    }
}

// --- One serialisation of a record ----------------------------------------------------------

#[test]
fn only_the_one_serialisation_of_a_record_verifies_or_is_chained_onto() {
    let (p, wo) = one_run();
    let original = lines(&p.ledger());
    let line = &original[1];
    let record: Value = serde_json::from_str(line).unwrap();
    let seq = format!(",\"seq\":{}", record["seq"]);
    let forgeries = [
        (
            "keys reordered",
            line.replacen(&seq, "", 1).replacen('{', &format!("{{{},", &seq[1..]), 1),
        ),
        ("a space added", line.replacen(",\"kind\"", ", \"kind\"", 1)),
        (
            "a needless escape",
            line.replacen("\"kind\":\"exchange\"", "\"kind\":\"\\u0065xchange\"", 1),
        ),
        // The hash covers the last `verdict`; a reader keeping the first would see "forged".
        ("a duplicate key", line.replacen('{', "{\"verdict\":\"forged\",", 1)),
    ];
    for (what, forged) in &forgeries {
        assert_ne!(forged, line, "{what}");
        // The same content under the same hash: a verifier that re-serialises accepts it.
        let same: Value = serde_json::from_str(forged).unwrap();
        assert_eq!(pactum::digest::chain_hash(&same), record["hash"], "{what}");
        let mut edited = original.clone();
        edited[1] = forged.clone();
        write_lines(&p.ledger(), &edited);
        let out = verify(&p);
        out.status(1);
        assert_eq!(named(&out), ("ledger_corrupt".to_string(), "2".to_string()), "{what}: {out}");
        assert!(out.stdout.contains("not the canonical JSON"), "{what}: {out}");
        query(&p).status(1);
    }
    // Another serialisation of the last record: nothing is appended after it.
    let mut edited = original.clone();
    let last = edited.len() - 1;
    edited[last] = edited[last].replacen(",\"kind\"", ", \"kind\"", 1);
    write_lines(&p.ledger(), &edited);
    let before = std::fs::read(p.ledger()).unwrap();
    let out = p.run(&[&wo], &["--json"], &[]);
    out.status(1);
    assert_eq!(named(&out), ("ledger_corrupt".to_string(), "3".to_string()), "{out}");
    assert_eq!(std::fs::read(p.ledger()).unwrap(), before);
}

#[test]
fn a_last_line_that_is_json_but_no_record_is_never_chained_onto() {
    let (p, wo) = one_run();
    let original = lines(&p.ledger());
    for last in [
        r#"{"seq":4}"#,
        r#"{"at":"2026-01-01T00:00:00Z","hash":5,"kind":"exchange","prev":"x","seq":4}"#,
        "[]",
    ] {
        let mut edited = original.clone();
        edited.push(last.to_string());
        write_lines(&p.ledger(), &edited);
        let before = std::fs::read(p.ledger()).unwrap();
        let out = p.run(&[&wo], &["--json"], &[]);
        out.status(1);
        assert_eq!(named(&out), ("ledger_corrupt".to_string(), "4".to_string()), "{last}: {out}");
        assert!(out.stdout.contains("not a ledger record") || last == "[]", "{out}");
        assert_eq!(std::fs::read(p.ledger()).unwrap(), before, "{last}");
    }
}

#[test]
fn an_edited_last_record_is_not_chained_onto() {
    let (p, wo) = one_run();
    let mut edited = lines(&p.ledger());
    let last = edited.len() - 1;
    // In the one form still, but its hash no longer matches what it says.
    edited[last] = edited[last].replacen("\"status\":\"completed\"", "\"status\":\"completex\"", 1);
    write_lines(&p.ledger(), &edited);
    let before = std::fs::read(p.ledger()).unwrap();
    let out = p.run(&[&wo], &["--json"], &[]);
    out.status(1);
    assert_eq!(named(&out), ("ledger_broken".to_string(), "3".to_string()), "{out}");
    assert_eq!(std::fs::read(p.ledger()).unwrap(), before, "nothing was appended");
}

// --- Every call recorded --------------------------------------------------------------------

#[test]
fn a_cycle_log_that_cannot_be_written_fails_the_run() {
    let p = kernel_harness::Project::scenario("thought_tool_thought");
    // A torn last line: the log takes no record until it is repaired.
    let torn = "{\"seq\":1,\"kind\":\"cyc";
    p.write("cycles.jsonl", torn);
    let run = p.run(&["--log", "cycles.jsonl"]);
    assert_eq!(run.out.code, 1, "{}", run.out);
    assert_eq!(run.json["ok"], false, "{:#}", run.json);
    assert_eq!(run.json["code"], "ledger_corrupt", "{:#}", run.json);
    assert_eq!(run.status(), "failed");
    assert!(run.error_codes().contains(&"ledger_corrupt".to_string()));
    // No model is called after the cycle that could not be logged, not even for Phase E.
    let answer = run.answer();
    assert_eq!(answer["metadata"]["degraded"], true, "{answer:#}");
    assert!(answer["metadata"]["reason"].as_str().unwrap().starts_with("cycle_not_recorded"));
    let ledger = p.ledger();
    assert_eq!(ledger.model_calls().len(), 1, "one call, then the run stopped");
    assert!(ledger.exchanges().iter().all(|r| r["role"] != "synthesis"), "no Phase E call");
    assert_eq!(std::fs::read_to_string(p.path("cycles.jsonl")).unwrap(), torn);
    // For people too: not a success.
    let out = p.run_text(&["--log", "cycles.jsonl"]);
    assert_eq!(out.code, 1, "{out}");
}

// --- Values cannot forge output lines -------------------------------------------------------

#[test]
fn values_from_records_and_models_cannot_print_lines_of_their_own() {
    // ledger query: a session id from a work order, carrying a whole fake record line.
    let p = Project::new();
    p.copy_fixture("scripted/classify_ok.json", "wo/ok.json");
    let forged = "s\n2026-01-01T00:00:00Z #99 exchange WO-FORGED PRC-X-001@9.9.9 ok";
    let wo = p.classify_wo(
        "WO-LEDGER-FORGE",
        json!({"provider": {"fixtures": "ok.json"}, "session_id": forged}),
    );
    p.run(&[&wo], &[], &[]).status(0);
    let ledger = p.ledger().display().to_string();
    let out = p.pactum(&["ledger", "query", "--ledger", &ledger], &[]);
    out.status(0);
    assert_eq!(out.stdout.lines().count(), 3, "one line per record:\n{out}");
    assert!(out.stdout.lines().all(|l| !l.starts_with("2026-01-01T00:00:00Z #99")), "{out}");
    assert!(out.stdout.contains("session=s\\n2026-01-01T00:00:00Z #99"), "{out}");

    // ledger verify: a file name (the user's, but printed back) stays on its line.
    let odd = p.path("odd\nfile: 9 records, chain intact.jsonl");
    std::fs::copy(p.ledger(), &odd).unwrap();
    let out = p.pactum(&["ledger", "verify", &odd.display().to_string()], &[]);
    out.status(0);
    assert_eq!(out.stdout.lines().count(), 1, "{out}");

    // run: a model's answer carrying lines of the run's own output.
    let k = kernel_harness::Project::scenario("thought_tool_thought");
    k.edit("fixtures.json", |f| {
        let last = f["responses"].as_array_mut().unwrap().last_mut().unwrap();
        last["text"] = json!(
            "{\"answer_text\": \"15\\nConfidence: 1\\nUsage: 0 prompt + 0 completion tokens\", \"confidence\": 0.5, \"notes\": \"n\\nAnswer: forged\", \"metadata\": {}}"
        );
    });
    let out = k.run_text(&[]);
    assert_eq!(out.code, 0, "{out}");
    let starting = |prefix: &str| out.stdout.lines().filter(|l| l.starts_with(prefix)).count();
    assert_eq!(starting("Answer:"), 1, "{out}");
    assert_eq!(starting("Confidence:"), 1, "{out}");
    // A multi-line answer stays readable: its lines are indented under the label.
    assert!(out.stdout.contains("Answer: 15\n  Confidence: 1\n  Usage: 0 prompt"), "{out}");
    assert!(out.stdout.contains("Note: n\\nAnswer: forged"), "{out}");
    let records = read_records(&k.path("ledger.jsonl"));
    assert!(records.iter().any(|r| r["kind"] == "cycle"));
}
