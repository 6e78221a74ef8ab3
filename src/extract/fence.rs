//! Step 1: markdown code fences.
//!
//! Where fences may appear (the precise rule, kept linear):
//!
//! - An **opener** is a run of three or more backticks that starts a line: only spaces and
//!   tabs stand between it and the previous `\n` (or the start of the text), so indented
//!   fences count and inline code such as ``use ```x``` here`` in prose does not. An
//!   optional info string follows: spaces and tabs, then everything up to the first
//!   whitespace, `{`, `[`, `"` or backtick (`json`, `JSON`, `ts`, ...). The content starts
//!   right after the info string, so JSON on the opening line (```` ```json {"a": 1}```` or
//!   ```` ```{"a":1} ````) is content too.
//! - A **closer** is a run of at least as many backticks as the opener, found by scanning
//!   the content while tracking JSON string state (`"` toggles it, `\` escapes the next
//!   byte inside a string). A run closes the block when it is outside a string (so a closer
//!   right after the JSON on the same line works, and a run inside `"a ``` b"` does not),
//!   or when it sits alone on its line (only blanks before and after it), which closes
//!   blocks whose content is not JSON and leaves an odd number of quotes. Shorter runs
//!   never close, so a four-backtick fence may wrap triple-backtick text.
//! - Scanning resumes after the closer, so blocks never overlap. A block without a closer
//!   runs to the end of the text (as in CommonMark) and ends the scan; it is reported as
//!   unclosed, and the strict step skips it.
//!
//! Every byte is visited a bounded number of times: openers are found with a fast search
//! for backticks, and each block's content is scanned once.

use std::ops::Range;

use super::scan::{at_line_start, find_any, find_byte, rest_of_line_blank};

/// One fenced block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Block {
    /// Byte range of the content: from the end of the info string to the closer, or to
    /// the end of the text when the block is unclosed. Both ends are on ASCII bytes or at
    /// the end of the text, hence on character boundaries.
    pub content: Range<usize>,
    /// Whether a closer was found.
    pub closed: bool,
}

/// Iterator over the fenced blocks of `bytes[floor..]`, in order.
pub(super) struct Fences<'a> {
    bytes: &'a [u8],
    floor: usize,
    pos: usize,
    done: bool,
}

impl<'a> Fences<'a> {
    /// Blocks of `bytes` starting at `floor` (the byte after a byte-order mark, or 0).
    pub(super) fn new(bytes: &'a [u8], floor: usize) -> Self {
        Self { bytes, floor, pos: floor, done: false }
    }
}

impl Iterator for Fences<'_> {
    type Item = Block;

    fn next(&mut self) -> Option<Block> {
        if self.done {
            return None;
        }
        let bytes = self.bytes;
        loop {
            let Some(start) = bytes.get(self.pos..).and_then(|rest| find_byte(b'`', rest)) else {
                self.done = true;
                return None;
            };
            let start = self.pos + start;
            let run = backtick_run(bytes, start);
            self.pos = start + run;
            if run < 3 || !at_line_start(bytes, self.floor, start) {
                continue;
            }
            let content_start = info_string_end(bytes, start + run);
            return Some(match find_closer(bytes, self.floor, content_start, run) {
                Some((closer, closer_len)) => {
                    self.pos = closer + closer_len;
                    Block { content: content_start..closer, closed: true }
                }
                None => {
                    self.done = true;
                    Block { content: content_start..bytes.len(), closed: false }
                }
            });
        }
    }
}

/// Length of the run of backticks starting at `at`.
fn backtick_run(bytes: &[u8], at: usize) -> usize {
    bytes.get(at..).unwrap_or_default().iter().take_while(|&&b| b == b'`').count()
}

/// End of the optional info string that follows an opener ending at `from`.
fn info_string_end(bytes: &[u8], from: usize) -> usize {
    let rest = bytes.get(from..).unwrap_or_default();
    let blanks = rest.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    let tag = rest
        .iter()
        .skip(blanks)
        .take_while(|&&b| !(b.is_ascii_whitespace() || matches!(b, b'{' | b'[' | b'"' | b'`')))
        .count();
    from + blanks + tag
}

/// Start and length of the run closing a block opened by `min_len` backticks, scanning
/// the content from `from`.
fn find_closer(bytes: &[u8], floor: usize, from: usize, min_len: usize) -> Option<(usize, usize)> {
    let mut pos = from;
    let mut in_string = false;
    loop {
        let rest = bytes.get(pos..)?;
        let found = if in_string {
            find_any([b'"', b'\\', b'`'], rest)
        } else {
            find_any([b'"', b'`'], rest)
        };
        let at = pos + found?;
        match bytes.get(at) {
            Some(b'"') => {
                in_string = !in_string;
                pos = at + 1;
            }
            // Only searched for inside strings: skip the escaped byte.
            Some(b'\\') => pos = at + 2,
            _ => {
                let run = backtick_run(bytes, at);
                let closes = run >= min_len
                    && (!in_string
                        || (at_line_start(bytes, floor, at)
                            && rest_of_line_blank(bytes, at + run)));
                if closes {
                    return Some((at, run));
                }
                pos = at + run;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    /// Renders every block as `content` (closed) or `content…` (unclosed).
    fn blocks(text: &str) -> Vec<String> {
        Fences::new(text.as_bytes(), 0)
            .map(|b| {
                let content = &text[b.content];
                if b.closed { content.to_owned() } else { format!("{content}…") }
            })
            .collect()
    }

    #[test]
    fn openers_and_closers() {
        let cases: &[(&str, &[&str])] = &[
            ("```json\n{}\n```", &["\n{}\n"]),
            ("a\n  ```\nx\n  ```\nb", &["\nx\n  "]),
            ("```json {\"a\": 1}```", &[" {\"a\": 1}"]),
            ("```{\"a\":1}```", &["{\"a\":1}"]),
            ("```json{\"a\":1}```", &["{\"a\":1}"]),
            ("```json\r\n{}\r\n```\r\n", &["\r\n{}\r\n"]),
            ("inline ```x``` here", &[]),
            ("````\n```\nx\n```\n````", &["\n```\nx\n```\n"]),
            ("```\n{\"a\": \"```\"}\n```", &["\n{\"a\": \"```\"}\n"]),
            ("```\n{\"a\": \"\\\"```\"}\n```", &["\n{\"a\": \"\\\"```\"}\n"]),
            ("```\nprint(\"hi)\n```\n```\n{}\n```", &["\nprint(\"hi)\n", "\n{}\n"]),
            ("```\nunclosed", &["\nunclosed…"]),
            ("```a\n1\n```\n```b\n2", &["\n1\n", "\n2…"]),
            ("``\n1\n``", &[]),
            ("```\n```\n```\n```", &["\n", "\n"]),
            ("```typescript main.ts\nx\n```", &[" main.ts\nx\n"]),
        ];
        for (text, want) in cases {
            assert_eq!(blocks(text), *want, "{text:?}");
        }
    }
}
