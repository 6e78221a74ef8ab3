//! The extraction scorecard on the project's own corpus of messy replies
//! (`tests/fixtures/extract/replies.jsonl`, written for this repository: valid JSON in
//! every wrapping, truncated parents, one line per repair, schema-guided choices,
//! coercions, replies with no JSON and replies with two readings), scored as in
//! `tests/support/scorecard.rs`. It always runs;
//! `cargo test --test suite extract_scorecard -- --nocapture` prints the table.

use crate::scorecard;

use pactum::extract::{ExtractOptions, RepairKind, extract};
use scorecard::{Line, read_corpus, run_line, score, table};

fn corpus() -> Vec<Line> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/extract/replies.jsonl");
    let text = std::fs::read_to_string(path).expect("the in-repo corpus is readable");
    read_corpus(&text)
}

fn line<'a>(lines: &'a [Line], id: &str) -> &'a Line {
    lines.iter().find(|l| l.id == id).unwrap_or_else(|| panic!("no line {id}"))
}

#[test]
fn scorecard_on_the_in_repo_corpus() {
    let lines = corpus();
    let strict = score(&lines, false);
    let lenient = score(&lines, true);
    println!("{}", table("in-repo corpus", &lines, &strict, &lenient));
    println!("strict misses:\n  {}", strict.misses.join("\n  "));
    println!("lenient misses:\n  {}", lenient.misses.join("\n  "));

    // Strict mode: every reply holding valid JSON comes out exactly, nothing is wrong.
    let valid = lines.iter().filter(|l| l.is_valid_json()).count();
    assert_eq!(strict.valid_json.exact, valid, "{}", strict.misses.join("\n"));
    assert_eq!(strict.scored.wrong, 0, "{}", strict.misses.join("\n"));
    assert_eq!(strict.scored.ambiguous, 0, "strict mode never returns an ambiguous result");
    // Lenient mode: every scored line comes out exactly.
    let scored = lines.iter().filter(|l| l.is_scored()).count();
    assert_eq!(lenient.scored.exact, scored, "{}", lenient.misses.join("\n"));
    // Replies without JSON are refused in both modes; schema lines come out exactly.
    for mode in [&strict, &lenient] {
        assert_eq!(mode.refusals.wrong, 0, "{}", mode.misses.join("\n"));
    }
    let guided = lines.iter().filter(|l| l.is_coercion()).count();
    assert_eq!(lenient.coercion.exact, guided, "{}", lenient.misses.join("\n"));
}

#[test]
fn ambiguous_replies_are_flagged_in_lenient_mode_and_refused_in_strict_mode() {
    let lines = corpus();
    for id in ["ambiguous-001", "ambiguous-002", "repair-concatenated", "repair-premature-closer"] {
        let l = line(&lines, id);
        assert!(run_line(l, false).is_none(), "{id}: strict mode must refuse");
        let found = run_line(l, true).unwrap_or_else(|| panic!("{id}: lenient found nothing"));
        assert!(found.ambiguous, "{id}: {found:?}");
        assert!(found.repairs.iter().any(|r| r.kind.is_guess()), "{id}: {found:?}");
    }
    // Two fenced blocks with different values and no schema: two readings.
    let l = line(&lines, "ambiguous-003");
    assert!(run_line(l, false).is_none(), "strict mode must refuse two readings");
    let found = run_line(l, true).expect("lenient mode returns the first reading");
    assert!(found.ambiguous && found.repairs.is_empty(), "{found:?}");
    let verdicts: Vec<&str> = found.candidates.iter().map(|c| c.verdict).collect();
    assert_eq!(verdicts, ["another_reading"]);
    // A quote before ':' that opens nothing leaves no reading at all.
    let l = line(&lines, "none-005");
    assert!(run_line(l, false).is_none() && run_line(l, true).is_none());
    // The same value twice is one reading, even for strict mode.
    let found = run_line(line(&lines, "repair-doubled"), false).unwrap();
    assert!(!found.ambiguous && found.repairs.is_empty(), "{found:?}");
}

#[test]
fn every_repair_is_reported_with_a_span_inside_the_reply() {
    let lenient = ExtractOptions { repair: true, ..ExtractOptions::default() };
    for l in
        corpus().iter().filter(|l| l.expected_kind == "repaired" || l.expected_kind == "partial")
    {
        let found = extract(&l.input, &lenient).unwrap_or_else(|e| panic!("{}: {e}", l.id));
        assert!(!found.repairs.is_empty(), "{}: no repair reported", l.id);
        for repair in &found.repairs {
            let (start, end) = repair.span;
            assert!(start <= end && l.input.get(start..end).is_some(), "{}: {repair:?}", l.id);
        }
    }
}

#[test]
fn coercions_are_reported_with_their_pointers() {
    let lines = corpus();
    let found = run_line(line(&lines, "coerce-nested"), true).unwrap();
    let coercions: Vec<(RepairKind, Option<&str>)> =
        found.repairs.iter().map(|r| (r.kind, r.pointer.as_deref())).collect();
    assert_eq!(
        coercions,
        [
            (RepairKind::CoercedBoolean, Some("/0/in_stock")),
            (RepairKind::CoercedNumber, Some("/0/qty"))
        ]
    );
    // Without coercion the same reply is returned as written (and then fails the schema).
    let found =
        pactum::extract::extract(&line(&lines, "coerce-number").input, &ExtractOptions::default());
    assert_eq!(found.map(|f| f.value["age"].clone()).ok(), Some(serde_json::json!("42")));
}
