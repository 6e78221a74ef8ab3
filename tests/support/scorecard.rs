//! The extraction scorecard: runs strict and lenient extraction over a corpus of messy
//! model replies and counts, per mode, how often the expected value comes out (`exact`),
//! a different value comes out (`wrong`) or nothing does (`refused`).
//!
//! A corpus is JSON Lines; each line has `id`, `input` (the reply), `expected` (read only
//! when `expected_stated` is true), `expected_kind` and `category`, and optionally
//! `schema` (an output schema) and `coerce` (true when the expected value needs
//! schema-aligned coercion). The peer corpus (`../shared/peer/llm-outputs.jsonl`) and the
//! in-repo corpus (`tests/fixtures/extract/replies.jsonl`) share this shape, and
//! `bench/scripts/extract_peers.py` scores the peer parsers with the same rules:
//!
//! - **scored** lines state an expected value of kind `parsed`, `parsed-implied`,
//!   `repaired` or `partial` (what a schema-free extractor should return);
//! - **refusal** lines (category `none`, no stated value) hold no JSON and should give
//!   nothing;
//! - **valid-JSON** lines are scored lines whose category says the reply holds strictly
//!   valid JSON (`fenced`, `embedded`, `trailing`, `raw`, `scalar`): strict mode must
//!   never be wrong on them;
//! - **schema** lines (`expected_kind` `coerced` or `chosen`, in-repo only) are run with
//!   their `schema` guiding the choice and coercion on.

#![allow(dead_code)]

use std::fmt::Write as _;

use pactum::extract::{ExtractOptions, Extracted, Guide, extract_guided};
use serde_json::Value;

/// Expected kinds a schema-free extractor should reproduce.
pub const SCORED_KINDS: &[&str] = &["parsed", "parsed-implied", "repaired", "partial"];

/// Categories whose replies hold strictly valid JSON.
pub const VALID_JSON_CATEGORIES: &[&str] = &["fenced", "embedded", "trailing", "raw", "scalar"];

/// One corpus line.
#[derive(Debug, Clone)]
pub struct Line {
    pub id: String,
    pub input: String,
    pub expected: Option<Value>,
    pub expected_kind: String,
    pub category: String,
    pub schema: Option<Value>,
}

impl Line {
    /// Reads one JSON line; panics with the line's position when it is malformed.
    pub fn parse(text: &str, at: usize) -> Line {
        let value: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("corpus line {at} is not JSON: {e}"));
        let field = |name: &str| value[name].as_str().unwrap_or_default().to_owned();
        let stated = value["expected_stated"].as_bool().unwrap_or(false);
        Line {
            id: field("id"),
            input: field("input"),
            expected: stated.then(|| value["expected"].clone()),
            expected_kind: field("expected_kind"),
            category: field("category"),
            schema: value.get("schema").cloned(),
        }
    }

    pub fn is_scored(&self) -> bool {
        self.expected.is_some() && SCORED_KINDS.contains(&self.expected_kind.as_str())
    }

    pub fn is_refusal(&self) -> bool {
        self.category == "none" && self.expected.is_none()
    }

    pub fn is_valid_json(&self) -> bool {
        self.is_scored() && VALID_JSON_CATEGORIES.contains(&self.category.as_str())
    }

    pub fn is_coercion(&self) -> bool {
        matches!(self.expected_kind.as_str(), "coerced" | "chosen")
            && self.expected.is_some()
            && self.schema.is_some()
    }
}

/// Reads a whole corpus.
pub fn read_corpus(text: &str) -> Vec<Line> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(at, l)| Line::parse(l, at + 1))
        .collect()
}

/// Counts of one mode over one set of lines.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub exact: usize,
    pub wrong: usize,
    pub refused: usize,
    /// Results flagged `ambiguous` (whatever their value).
    pub ambiguous: usize,
}

/// The scorecard of one mode.
#[derive(Debug, Default, Clone)]
pub struct Mode {
    pub scored: Counts,
    /// Scored lines holding valid JSON.
    pub valid_json: Counts,
    /// Refusal lines: `exact` counts refusals, `wrong` counts values returned.
    pub refusals: Counts,
    pub coercion: Counts,
    /// `id: what happened` for every wrong or refused scored line.
    pub misses: Vec<String>,
    /// Ids of the valid-JSON lines with a wrong value.
    pub valid_json_wrong: Vec<String>,
}

/// The options of a mode (`strict` or `lenient`) for a line.
pub fn options(lenient: bool, line: &Line, coerce: bool) -> ExtractOptions {
    let want_array = line.schema.as_ref().and_then(|s| s.get("type")).is_some_and(|t| t == "array");
    ExtractOptions { want_array, repair: lenient, coerce }
}

/// Extracts one line the way the scorecard does: coercion lines with their schema.
pub fn run_line(line: &Line, lenient: bool) -> Option<Extracted> {
    let coerce = line.is_coercion();
    let options = options(lenient, line, coerce);
    match (&line.schema, coerce) {
        (Some(schema), true) => {
            let accepts = |value: &Value| accepts(schema, value);
            let guide = Guide { schema, accepts: &accepts };
            extract_guided(&line.input, &options, Some(&guide)).ok()
        }
        _ => extract_guided(&line.input, &options, None).ok(),
    }
}

/// Whether `value` fits `schema` (compiled on each call; corpora are small).
pub fn accepts(schema: &Value, value: &Value) -> bool {
    jsonschema::validator_for(schema).is_ok_and(|v| v.is_valid(value))
}

/// Scores one mode over a corpus.
pub fn score(lines: &[Line], lenient: bool) -> Mode {
    let mut mode = Mode::default();
    for line in lines {
        let found = run_line(line, lenient);
        let ambiguous = found.as_ref().is_some_and(|f| f.ambiguous);
        let tally = |counts: &mut Counts, hit: Option<bool>| {
            match hit {
                Some(true) => counts.exact += 1,
                Some(false) => counts.wrong += 1,
                None => counts.refused += 1,
            }
            counts.ambiguous += usize::from(ambiguous);
        };
        let hit = |expected: &Value| found.as_ref().map(|f| f.value == *expected);
        if line.is_coercion() {
            tally(&mut mode.coercion, line.expected.as_ref().and_then(hit));
        } else if let Some(expected) = line.expected.as_ref().filter(|_| line.is_scored()) {
            let outcome = hit(expected);
            tally(&mut mode.scored, outcome);
            if line.is_valid_json() {
                tally(&mut mode.valid_json, outcome);
                if outcome == Some(false) {
                    mode.valid_json_wrong.push(line.id.clone());
                }
            }
            match (&found, outcome) {
                (Some(f), Some(false)) => mode.misses.push(format!(
                    "{} wrong{}: {} by {} (expected {expected})",
                    line.id,
                    if ambiguous { " (ambiguous)" } else { "" },
                    f.value,
                    f.method
                )),
                (None, _) => mode.misses.push(format!("{} refused (expected {expected})", line.id)),
                _ => {}
            }
        } else if line.is_refusal() {
            match &found {
                None => mode.refusals.exact += 1,
                Some(f) => {
                    mode.refusals.wrong += 1;
                    mode.misses
                        .push(format!("{} should refuse: {} by {}", line.id, f.value, f.method));
                }
            }
        }
    }
    mode
}

/// The table printed by the tests (and mirrored in BENCHMARKS.md).
pub fn table(name: &str, lines: &[Line], strict: &Mode, lenient: &Mode) -> String {
    let scored = lines.iter().filter(|l| l.is_scored()).count();
    let valid = lines.iter().filter(|l| l.is_valid_json()).count();
    let refusals = lines.iter().filter(|l| l.is_refusal()).count();
    let coercion = lines.iter().filter(|l| l.is_coercion()).count();
    let mut out = format!(
        "{name}: {} replies, {scored} scored ({valid} hold valid JSON), {refusals} should be \
         refused, {coercion} run with their schema\n",
        lines.len()
    );
    out.push_str("| mode | exact | wrong | refused | ambiguous | valid JSON: wrong | refusals kept | with schema: exact |\n");
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for (label, mode) in [("pactum strict", strict), ("pactum lenient", lenient)] {
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} | {} | {}/{refusals} | {}/{coercion} |",
            mode.scored.exact,
            mode.scored.wrong,
            mode.scored.refused,
            mode.scored.ambiguous,
            mode.valid_json.wrong,
            mode.refusals.exact,
            mode.coercion.exact,
        );
    }
    out
}
