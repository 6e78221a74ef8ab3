//! Step 2: embedded JSON, found as the *outermost* bracket regions of the text (SPEC §6.3).
//!
//! One left-to-right pass. Outside any region, every `{` or `[` opens a region (but a `{`
//! that prose follows, where no member can begin, is prose: see [`prose_brace`]); inside a
//! region the scan tracks JSON string state (`"` toggles it, `\` escapes the next byte
//! inside a string) and a stack of open brackets; a closer of the wrong kind is skipped
//! (a broken region stays whole), and the region ends at the closer that empties the
//! stack. Brackets of either kind nest, so an array's
//! objects are inside the array's region and never candidates of their own: a region is
//! only ever tried whole. A region that is never closed runs to the end of the text and
//! ends the scan; nothing after its opener is searched.
//!
//! The caller keeps the regions whose opener is the wanted kind (`{`, or `[` when the
//! output schema wants an array) as candidates. Because regions never overlap, the bytes
//! of all candidates add up to at most the text's length, and the pass visits each byte
//! once: bytes that cannot change the state are skipped with a vectorised search.

use super::scan::{find_any, is_json_ws};

/// One outermost bracket region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Region {
    /// Byte offset of the opening bracket.
    pub start: usize,
    /// One past the closing bracket, or the end of the text when `closed` is false.
    pub end: usize,
    /// Whether the opener is `[` (else `{`).
    pub array: bool,
    /// Whether a bracket brought the region back to depth zero.
    pub closed: bool,
}

/// The outermost regions of `bytes[from..]`, in order; the last may be unclosed.
pub(super) fn regions(bytes: &[u8], from: usize) -> Vec<Region> {
    let mut found = vec![];
    let mut pos = from;
    while let Some(skip) = bytes.get(pos..).and_then(|rest| find_any([b'{', b'['], rest)) {
        let start = pos + skip;
        let array = bytes.get(start) == Some(&b'[');
        if !array && prose_brace(bytes, start + 1) {
            pos = start + 1;
            continue;
        }
        match region_end(bytes, start + 1) {
            Some(end) => {
                found.push(Region { start, end, array, closed: true });
                pos = end;
            }
            None => {
                found.push(Region { start, end: bytes.len(), array, closed: false });
                break;
            }
        }
    }
    found
}

/// Whether the `{` just before `from` is prose rather than an object: what follows it
/// cannot begin a member. That is a word (letters, digits, punctuation) that no `:` (or
/// quote, as after a key whose colon is missing) follows (`{broken and …`, a line of prose after a stray `{`), another `{`, or a byte
/// that starts no key at all (`{%`, `{(`). A quote, a `}`, a comment, an ellipsis, a
/// `[`, the end of the text or more than 64 blanks leave it an object: a truncated or
/// broken JSON parent (`{"a": {"b": 1}, "c": …`) stays one region. Reads at most about
/// 130 bytes.
fn prose_brace(bytes: &[u8], from: usize) -> bool {
    let rest = bytes.get(from..).unwrap_or_default();
    let blanks = rest.iter().take(65).take_while(|&&b| is_json_ws(b)).count();
    let Some(&first) = rest.get(blanks).filter(|_| blanks <= 64) else { return false };
    let word = |b: u8| {
        b.is_ascii_graphic()
            && !matches!(b, b'{' | b'}' | b'[' | b']' | b':' | b',' | b'"' | b'\'' | b'`' | b'\\')
    };
    match first {
        b'{' => true,
        b'}' | b'"' | b'\'' | b'`' | b'\\' | b'/' | b'#' | b'<' | b'.' | b'[' => false,
        b if word(b) => {
            let after = rest.get(blanks..).unwrap_or_default();
            let len = after.iter().take(65).take_while(|&&b| word(b)).count();
            if len > 64 {
                return false;
            }
            let gap = after.get(len..).unwrap_or_default();
            let spaces = gap.iter().take(64).take_while(|&&b| is_json_ws(b)).count();
            // A quote after the word is a value whose colon is missing (`{a "x", …}`):
            // a broken parent, not prose.
            match gap.get(spaces) {
                None => false,
                Some(&b) => !matches!(b, b':' | b'"' | b'\''),
            }
        }
        b => b.is_ascii(),
    }
}

/// One past the bracket that closes the region opened just before `from`, if any.
/// Closers are matched to openers by kind; a closer of the wrong kind is skipped, so a
/// broken region (`{"a": [1}, {"b": 2}]`) stays one region instead of ending early.
fn region_end(bytes: &[u8], from: usize) -> Option<usize> {
    let opener = bytes.get(from.checked_sub(1)?).copied()?;
    let mut open = vec![opener];
    let mut pos = from;
    let mut in_string = false;
    loop {
        let rest = bytes.get(pos..)?;
        let at = pos
            + if in_string {
                find_any([b'"', b'\\'], rest)?
            } else {
                find_any([b'"', b'{', b'[', b'}', b']'], rest)?
            };
        pos = at + 1;
        match bytes.get(at).copied() {
            Some(b'"') => in_string = !in_string,
            // Only searched for inside strings: skip the escaped byte.
            Some(b'\\') => pos = at + 2,
            Some(b @ (b'{' | b'[')) => open.push(b),
            Some(closer) => {
                let matches = match open.last() {
                    Some(b'{') => closer == b'}',
                    _ => closer == b']',
                };
                if matches {
                    open.pop();
                    if open.is_empty() {
                        return Some(pos);
                    }
                }
            }
            None => return None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Renders the regions of `text` as their slices, an unclosed one with a trailing `…`.
    fn render(text: &str) -> Vec<String> {
        regions(text.as_bytes(), 0)
            .into_iter()
            .map(|r| {
                let slice = &text[r.start..r.end];
                if r.closed { slice.to_owned() } else { format!("{slice}…") }
            })
            .collect()
    }

    #[test]
    fn outermost_regions_only() {
        assert_eq!(render(r#"{"a":{"b":"}"}}"#), [r#"{"a":{"b":"}"}}"#]);
        assert_eq!(render(r#"x {"a":"\"{"} y"#), [r#"{"a":"\"{"}"#]);
        assert_eq!(render(r#"{x} {"a":1"#), [r#"{"a":1…"#]);
        assert_eq!(render(r#"[1, [2], "]"] {}"#), [r#"[1, [2], "]"]"#, "{}"]);
        assert_eq!(render(r#"[{"a": 1}, {"b": 2}]"#), [r#"[{"a": 1}, {"b": 2}]"#]);
        assert_eq!(render("{{{{"), ["{…"]);
        assert_eq!(render("no brackets } ] here"), Vec::<String>::new());
        // A truncated parent is one unclosed region: its complete children are not regions.
        assert_eq!(render(r#"{"a": {"b": 1}, "c": {"d": 2"#), [r#"{"a": {"b": 1}, "c": {"d": 2…"#]);
        // Quotes outside regions are prose.
        assert_eq!(render(r#"He said "{" then {"a": 1}"#), [r#"{" then {"a": 1}…"#]);
        assert_eq!(render("é {\"ü\": 1} ✓"), ["{\"ü\": 1}"]);
        // A closer of the wrong kind does not end a region early.
        assert_eq!(
            render(r#"{"a": [1}, "b": {"c": 2}]} {}"#),
            [r#"{"a": [1}, "b": {"c": 2}]}"#, "{}"]
        );
        assert_eq!(render("[1, 2} x"), ["[1, 2} x…"]);
    }

    #[test]
    fn hostile_inputs_stay_linear() {
        let text = "{\"a\":".repeat(200_000);
        assert_eq!(regions(text.as_bytes(), 0).len(), 1);
        let text = "{\"a\": [1, x]} ".repeat(100_000);
        assert_eq!(regions(text.as_bytes(), 0).len(), 100_000);
        let text = "[".repeat(1 << 20);
        assert_eq!(
            regions(text.as_bytes(), 0),
            [Region { start: 0, end: 1 << 20, array: true, closed: false }]
        );
    }

    /// Reference: a byte-by-byte scan.
    fn naive(bytes: &[u8]) -> Vec<Region> {
        let mut found = vec![];
        let mut i = 0;
        while i < bytes.len() {
            if !matches!(bytes[i], b'{' | b'[') || (bytes[i] == b'{' && prose_brace(bytes, i + 1)) {
                i += 1;
                continue;
            }
            let (start, mut in_string, mut escaped) = (i, false, false);
            let mut open: Vec<u8> = vec![];
            let mut end = None;
            for (pos, &b) in bytes.iter().enumerate().skip(start) {
                if in_string {
                    match (escaped, b) {
                        (true, _) => escaped = false,
                        (false, b'\\') => escaped = true,
                        (false, b'"') => in_string = false,
                        _ => {}
                    }
                } else if b == b'"' {
                    in_string = true;
                } else if matches!(b, b'{' | b'[') {
                    open.push(if b == b'{' { b'}' } else { b']' });
                } else if matches!(b, b'}' | b']') && open.last() == Some(&b) {
                    open.pop();
                    if open.is_empty() {
                        end = Some(pos + 1);
                        break;
                    }
                }
            }
            let array = bytes[start] == b'[';
            match end {
                Some(end) => {
                    found.push(Region { start, end, array, closed: true });
                    i = end;
                }
                None => {
                    found.push(Region { start, end: bytes.len(), array, closed: false });
                    break;
                }
            }
        }
        found
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn one_pass_equals_naive(text in "[{}\\[\\]\"\\\\a ]{0,48}") {
            prop_assert_eq!(regions(text.as_bytes(), 0), naive(text.as_bytes()));
        }
    }
}
