//! Throughput of `pactum::extract` on large prose and on hostile 1 MiB responses.
//!
//! Run with `cargo bench --bench extract`. Large prose should extract at 500 MB/s or
//! more; hostile inputs must finish in milliseconds.
#![allow(clippy::disallowed_methods)] // tests, benches and examples build their trees directly

use divan::Bencher;
use divan::counter::BytesCount;
use pactum::extract::{ExtractOptions, extract};

fn main() {
    divan::main();
}

const MIB: usize = 1 << 20;

/// `unit` repeated to fill about 1 MiB.
fn fill(unit: &str) -> String {
    unit.repeat(MIB / unit.len())
}

/// About 1 MiB of plain prose, with the odd inline `code` span.
fn prose() -> String {
    fill("The quick brown fox jumps over the lazy dog; see `fox` in section 4.2, then go on. ")
}

/// Extraction modes, as bench arguments.
const MODES: &[&str] = &["strict", "repair"];

/// Runs extraction on `text` in `mode`, counting the bytes of the text.
fn run(bencher: Bencher, text: String, mode: &str, want_array: bool) {
    let options = ExtractOptions { want_array, repair: mode == "repair", coerce: false };
    bencher.counter(BytesCount::of_str(&text)).bench(|| extract(divan::black_box(&text), &options));
}

#[divan::bench(args = MODES)]
fn prose_then_fence(bencher: Bencher, mode: &str) {
    run(bencher, format!("{}\n```json\n{{\"answer\": 42}}\n```\n", prose()), mode, false);
}

#[divan::bench(args = MODES)]
fn prose_then_embedded(bencher: Bencher, mode: &str) {
    run(bencher, format!("{} The result is {{\"answer\": 42}}.", prose()), mode, false);
}

#[divan::bench(args = MODES)]
fn prose_without_json(bencher: Bencher, mode: &str) {
    run(bencher, prose(), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_open_braces(bencher: Bencher, mode: &str) {
    run(bencher, fill("{"), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_open_brackets(bencher: Bencher, mode: &str) {
    run(bencher, fill("["), mode, true);
}

#[divan::bench(args = MODES)]
fn hostile_dangling_keys(bencher: Bencher, mode: &str) {
    run(bencher, fill("{\"a\":"), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_unbalanced_quotes(bencher: Bencher, mode: &str) {
    run(bencher, fill("{\"a\":\"\\\"{"), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_unclosed_strings(bencher: Bencher, mode: &str) {
    run(bencher, fill("{\"a\": \"x "), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_fences(bencher: Bencher, mode: &str) {
    run(bencher, fill("```\n```json\n{\n"), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_failing_candidates(bencher: Bencher, mode: &str) {
    run(bencher, fill("{\"a\": [1, 2, }]} "), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_deep_nesting(bencher: Bencher, mode: &str) {
    let half = MIB / 12;
    run(bencher, format!("{}1{}", "{\"a\":".repeat(half), "}".repeat(half)), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_unquoted_values(bencher: Bencher, mode: &str) {
    run(bencher, format!("{{{}\"b\": 1}}", fill("\"a\": x, ")), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_fenced_strings(bencher: Bencher, mode: &str) {
    run(bencher, format!("{}```\"]", fill("[\"```{\"a\": [\"")), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_words_and_quotes(bencher: Bencher, mode: &str) {
    run(bencher, fill("[\"a\" b\" c\"] "), mode, true);
}

#[divan::bench(args = MODES)]
fn hostile_rows(bencher: Bencher, mode: &str) {
    run(bencher, fill("{\"r\": [[1], 2], [3], "), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_distinct_fences(bencher: Bencher, mode: &str) {
    let blocks: String = (0..MIB / 24).map(|i| format!("```json\n{{'a': {i}}}\n```\n")).collect();
    run(bencher, blocks, mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_same_fences(bencher: Bencher, mode: &str) {
    run(bencher, fill("```json\n{'a': 1}\n```\n"), mode, false);
}

// The shapes of issue 26's repairs.

#[divan::bench(args = MODES)]
fn hostile_prose_braces(bencher: Bencher, mode: &str) {
    run(bencher, fill("{ see {"), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_comments_into_closers(bencher: Bencher, mode: &str) {
    run(bencher, fill("{\"a\": [1 # x]}\n"), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_unclosed_html_comments(bencher: Bencher, mode: &str) {
    run(bencher, fill("{\"a\": <!-- "), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_strings_before_closers(bencher: Bencher, mode: &str) {
    run(bencher, fill("{\"a\": [\"x]}"), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_trailing_fragments(bencher: Bencher, mode: &str) {
    run(bencher, fill("{\"a\": 1}{} "), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_code_quotes(bencher: Bencher, mode: &str) {
    run(bencher, format!("{{\"c\": \"{}\"}}", fill("p(\"x\")\n")), mode, false);
}

#[divan::bench(args = MODES)]
fn hostile_members_without_brace(bencher: Bencher, mode: &str) {
    run(bencher, format!("{}}}", fill("\"k\": `a`, ")), mode, false);
}
