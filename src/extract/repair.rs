//! Lenient repair: where the tolerant parser (`tolerant.rs`) runs, and in which order.
//!
//! Candidates mirror the strict order: each fenced block's content (the unclosed one
//! included, up to the end of the text, reported as `unclosed_fence`), which must hold one
//! value and nothing else but comments; then each outermost region of the wanted kind
//! (`embedded.rs`), the unclosed last one included, whole, with text after the value
//! ignored; then the whole trimmed text, where values back to back are read as a list
//! (`joined_values`, no guess, when the schema's top-level type is `array`). A block or
//! whole text that fails and starts with `"key":` and ends with `}` is read once more as
//! an object whose opening brace is missing (`missing_brace`).
//! A region is skipped when the next non-blank byte cannot continue it (`{{`, `{ (`), and
//! never searched for a nested candidate: regions do not overlap, and after a value the
//! search resumes past its end, so the region candidates read each byte a bounded number
//! of times and the whole repair stays linear. A candidate nesting deeper than
//! [`MAX_DEPTH`](super::MAX_DEPTH) ends the region candidates.
//!
//! A candidate that needed no repair is not offered: the strict steps saw it already.

use super::embedded::Region;
use super::fence::Block;
use super::scan::skip_json_ws;
use super::tolerant::{Parser, Repaired, starts_bare_key};
use super::{Repair, RepairKind};

/// Offers the repair candidates in order until `offer` returns true; on running out,
/// returns a sentence for the detail. Candidates that needed no repair are not offered
/// (the strict steps saw them already).
pub(super) fn repair(
    text: &str,
    floor: usize,
    blocks: &[Block],
    regions: &[Region],
    want_array: bool,
    offer: &mut dyn FnMut(Repaired) -> bool,
) -> Result<(), String> {
    let mut parser = Parser::new(text);
    let mut offered = 0usize;
    let mut give = |mut found: Repaired, offered: &mut usize| {
        if found.repairs.is_empty() {
            return false;
        }
        // Values back to back are the list a schema of top-level type `array` wants.
        if want_array && found.value.is_array() {
            for repair in &mut found.repairs {
                if repair.kind == RepairKind::ConcatenatedValues {
                    repair.kind = RepairKind::JoinedValues;
                }
            }
        }
        *offered += 1;
        offer(found)
    };
    for block in blocks {
        let (start, end) = (block.content.start, block.content.end);
        let found = parser.run(start, end, true).or_else(|_| parser.run_members(start, end, true));
        if let Ok(mut found) = found {
            if !block.closed {
                found.repairs.push(Repair::at(RepairKind::UnclosedFence, (text.len(), text.len())));
            }
            if give(found, &mut offered) {
                return Ok(());
            }
        }
    }
    let mut first_error = None;
    let mut resume = floor;
    for region in regions.iter().filter(|r| r.array == want_array) {
        if region.start < resume || !may_open(text.as_bytes(), region.start, want_array) {
            continue;
        }
        match parser.run(region.start, text.len(), false) {
            Ok(found) => {
                resume = found.span.1;
                if give(found, &mut offered) {
                    return Ok(());
                }
            }
            Err(stop) => {
                first_error.get_or_insert(stop.at);
                if stop.too_deep {
                    break;
                }
            }
        }
    }
    let body = text.get(floor..).unwrap_or_default();
    let trimmed = body.trim();
    if !trimmed.is_empty() {
        let start = text.len() - body.trim_start().len();
        let end = start + trimmed.len();
        let found = parser.run(start, end, true).or_else(|_| parser.run_members(start, end, true));
        if let Ok(found) = found
            && give(found, &mut offered)
        {
            return Ok(());
        }
    }
    let open = if want_array { '[' } else { '{' };
    Err(match (offered, first_error) {
        (n, _) if n > 0 => format!("{n} repaired candidate(s), none chosen"),
        (_, Some(at)) => {
            format!("no candidate could be repaired (the first `{open}` region fails at byte {at})")
        }
        _ => "no candidate could be repaired".to_owned(),
    })
}

/// Whether the bracket at `at` is followed (after whitespace) by something the tolerant
/// parser could continue with; saves a parser run on `{{{{…` and prose like `{ see`.
fn may_open(bytes: &[u8], at: usize, want_array: bool) -> bool {
    let next = bytes.get(skip_json_ws(bytes, at + 1)).copied();
    match next {
        Some(b'"' | b'\'' | b'/' | b'#' | b'\\' | b'`' | b'<' | 0xE2) => true,
        Some(b) if want_array => {
            b.is_ascii_alphanumeric() || matches!(b, b'[' | b'{' | b']' | b'-' | b'.' | b'(')
        }
        Some(b) => starts_bare_key(b) || b == b'}',
        None => false,
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::extract::embedded::regions;
    use serde_json::json;

    /// Runs the repair candidates of `text` (no fences) and renders the first offered.
    fn first(text: &str, want_array: bool) -> String {
        let regions = regions(text.as_bytes(), 0);
        let mut got = String::new();
        let outcome = repair(text, 0, &[], &regions, want_array, &mut |found| {
            let kinds: Vec<&str> = found.repairs.iter().map(|r| r.kind.as_str()).collect();
            got = format!("{} {}", found.value, kinds.join(","));
            true
        });
        outcome.map(|()| got).unwrap_or_else(|e| e)
    }

    #[test]
    fn regions_are_tried_whole_and_in_order() {
        assert_eq!(first("x {'a': 1} y", false), r#"{"a":1} single_quotes"#);
        // A broken parent is repaired whole, never answered by a complete child.
        assert_eq!(
            first(r#"{"a": {"b": 1}, "c": {"d": 2"#, false),
            r#"{"a":{"b":1},"c":{"d":2}} truncated_tail"#
        );
        assert_eq!(first("[1, 2,] and {'a': 1}", true), "[1,2] trailing_comma");
        // Strictly valid candidates are the strict steps' business.
        assert_eq!(first(r#"{"a": 1}"#, false), "no candidate could be repaired");
        assert_eq!(
            first("{x:: y} then", false),
            "no candidate could be repaired (the first `{` region fails at byte 3)"
        );
        // A `{` that prose follows opens no region.
        assert_eq!(first("{x y z} then", false), "no candidate could be repaired");
    }

    #[test]
    fn the_whole_text_reads_values_back_to_back() {
        // The list is what a schema of top-level type `array` wants: no guess.
        assert_eq!(
            first(r#"{"a": 1}, {'b': 2}"#, true),
            r#"[{"a":1},{"b":2}] single_quotes,joined_values"#
        );
        // An empty or cut-off value after a complete one is dropped.
        assert_eq!(first(r#"{'a': 1}, []"#, true), r#"{"a":1} single_quotes,trailing_fragment"#);
        assert_eq!(
            first(r#"{'a': 1}{'a': 1}"#, true),
            r#"{"a":1} single_quotes,single_quotes,doubled_value"#
        );
    }

    #[test]
    fn unclosed_fences_are_reported() {
        let text = "```json\n{\"a\": 1}";
        let block = Block { content: 7..text.len(), closed: false };
        let mut got = None;
        let outcome = repair(text, 0, &[block], &[], false, &mut |found| {
            got = Some(found);
            true
        });
        assert_eq!(outcome, Ok(()));
        let found = got.unwrap();
        assert_eq!(found.value, json!({"a": 1}));
        assert_eq!(found.repairs, [Repair::at(RepairKind::UnclosedFence, (16, 16))]);
    }
}
