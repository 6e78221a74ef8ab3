//! Strings and quotes for the tolerant parser: opening quotes of every kind (straight,
//! single, typographic, doubled, escaped), escapes, raw control characters, and the one
//! hard question of lenient JSON: whether a quote inside a value ends it.
//!
//! A quote ends a string when what follows can follow a value (the end, a comment, a
//! comma before another item or member, a closer that is not followed by prose running
//! into another quote and closer), when another item or member follows without a comma,
//! or when no other such quote follows on its line, unless it pairs with a quote kept
//! earlier and runs straight into text (`print("hi")` in code over several lines). After
//! a comma, a quoted word that no `:` follows is not a key (`log("a", "b")`). A backtick
//! string ends at its next unescaped backtick. Every other quote is kept as text and
//! reported as `unescaped_quote` (a guess). The look-ahead of each check stops at the end
//! of its line or at the quote that the caller then consumes, so reading a string stays
//! linear.

use serde_json::Value;

use super::{Parser, is_key_byte};
use crate::extract::RepairKind;
use crate::extract::scan::{find_any, is_json_ws};

/// Whether `quote` occurs in `rest` before the next newline. Reads only up to that
/// quote or newline, which the caller then consumes, so repeated checks stay linear.
fn quote_later_on_line(rest: &[u8], quote: &[u8]) -> bool {
    let Some(&first) = quote.first() else { return false };
    let mut from = 0;
    while let Some(found) = rest.get(from..).and_then(|r| find_any([b'\n', first], r)) {
        let at = from + found;
        let here = rest.get(at..).unwrap_or_default();
        if here.first() == Some(&b'\n') {
            return false;
        }
        if here.starts_with(quote) {
            return true;
        }
        from = at + 1;
    }
    false
}

/// Whether `quote` followed by blanks and a closer (`}` or `]`) occurs in `rest` before
/// the next newline; reads up to the first such quote or the newline.
fn closing_quote_later_on_line(rest: &[u8], quote: &[u8]) -> bool {
    let Some(&first) = quote.first() else { return false };
    let mut from = 0;
    while let Some(found) = rest.get(from..).and_then(|r| find_any([b'\n', first], r)) {
        let at = from + found;
        let here = rest.get(at..).unwrap_or_default();
        if here.first() == Some(&b'\n') {
            return false;
        }
        if let Some(tail) = here.strip_prefix(quote) {
            let next = tail.iter().find(|&&b| b != b' ' && b != b'\t');
            if matches!(next, Some(b'}' | b']')) {
                return true;
            }
        }
        from = at + 1;
    }
    false
}

/// Whether `rest`, what follows a closer inside a container (blanks skipped), can come
/// next there: nothing, a comma, a closer, a comment, or another value or member
/// (letters, digits, a signed number, an ellipsis, quotes, brackets, any non-ASCII
/// byte); operators and other punctuation (`]+`, `](`, `])`) cannot.
fn can_follow_closer(rest: &[u8]) -> bool {
    match rest {
        [] => true,
        [b'-', b'I', ..] => true,
        [b'+' | b'-' | b'.', next, ..] => next.is_ascii_digit() || *next == b'.',
        [b, ..] => {
            b.is_ascii_alphanumeric()
                || !b.is_ascii()
                || matches!(b, b',' | b'}' | b']' | b'"' | b'\'' | b'{' | b'[' | b'/' | b'#' | b'`')
        }
    }
}

/// Whether `rest` is a blank, a short word or phrase on one line without quotes or
/// brackets, then `quote`, then (blanks and) a comma or `]`: `  comment" ]`. Reads at
/// most about 80 bytes.
fn word_then_quote(rest: &[u8], quote: &[u8]) -> bool {
    let Some(&first) = quote.first() else { return false };
    if !rest.first().is_some_and(|&b| b == b' ' || b == b'\t') {
        return false;
    }
    let blanks = |from: usize| {
        from + rest.iter().skip(from).take(16).take_while(|&&b| b == b' ' || b == b'\t').count()
    };
    let word = blanks(0);
    let len = rest
        .iter()
        .skip(word)
        .take(64)
        .take_while(|&&b| {
            b != first
                && !matches!(
                    b,
                    b',' | b'[' | b']' | b'{' | b'}' | b':' | b'\n' | b'\r' | b'"' | b'\\'
                )
        })
        .count();
    let end = word + len;
    if len == 0 || !rest.get(end..).is_some_and(|r| r.starts_with(quote)) {
        return false;
    }
    matches!(rest.get(blanks(end + quote.len())), Some(b',' | b']'))
}

/// Whether `rest` is a short quoted text on one line (the quote closing within 64
/// bytes) that no `:` follows: not a key. Reads at most about 80 bytes.
fn quoted_non_key(rest: &[u8]) -> bool {
    let text = rest.get(1..).unwrap_or_default();
    let mut at = 0;
    let len = loop {
        match text.get(at) {
            _ if at >= 64 => return false,
            None | Some(b'\n') => return false,
            Some(b'"') => break at,
            Some(b'\\') => at += 2,
            Some(_) => at += 1,
        }
    };
    // `""key""`: doubled quotes open a key.
    if len == 0 || text.get(len) != Some(&b'"') {
        return false;
    }
    let after = text.get(len + 1..).unwrap_or_default();
    let next = after.iter().take(16).find(|&&b| !is_json_ws(b));
    next.is_some_and(|&b| b != b':')
}

/// Whether `rest` starts with `, "key":` (blanks allowed; a short key on one line): the
/// start of another object member. Reads at most about 80 bytes.
pub(in crate::extract) fn starts_member(rest: &[u8], comma: bool) -> bool {
    let mut at = 0;
    let blanks = |at: &mut usize| {
        while rest.get(*at).is_some_and(|&b| is_json_ws(b)) && *at < 80 {
            *at += 1;
        }
    };
    if comma {
        if rest.first() != Some(&b',') {
            return false;
        }
        at = 1;
    }
    blanks(&mut at);
    if rest.get(at) != Some(&b'"') {
        return false;
    }
    let key = rest.get(at + 1..).unwrap_or_default();
    let Some(len) = key.iter().take(64).position(|&b| b == b'"' || b == b'\n') else {
        return false;
    };
    if key.get(len) != Some(&b'"') || len == 0 {
        return false;
    }
    at += len + 2;
    blanks(&mut at);
    rest.get(at) == Some(&b':')
}

impl Parser<'_> {
    /// `"```json {"a": 1}```"`: a string value that is a fenced block whose content is a
    /// JSON object or array with quotes that are not escaped, read as that value (a
    /// guess, reported as `fenced_json` over the whole string, with the content's own
    /// repairs). Not inside another such block; `None` leaves the position unchanged.
    pub(super) fn fenced_json(&mut self) -> Option<Value> {
        if !self.nested || self.outer_depth.is_some() {
            return None;
        }
        let start = self.pos;
        let tag = self.rest().strip_prefix(b"\"```")?;
        let tag = tag.iter().take(16).take_while(|b| b.is_ascii_alphanumeric()).count();
        let open = start + 4 + tag;
        let close = self.fence_end(open)?;
        // One attempt per closing marker: attempts then read disjoint contents.
        if self.fence_tried.replace(close) == Some(close) {
            return None;
        }
        let content = self.bytes.get(open..close)?;
        // Escaped quotes make it an ordinary string that holds a fence.
        let raw_quote = content.iter().enumerate().any(|(i, &b)| {
            b == b'"' && content.get(..i).is_none_or(|before| before.last() != Some(&b'\\'))
        });
        let first = content.iter().find(|&&b| !is_json_ws(b));
        if !raw_quote || !matches!(first, Some(b'{' | b'[')) {
            return None;
        }
        let mut inner = Parser::new(self.text);
        inner.outer_depth = Some(self.depth + 1);
        let found = inner.run(open, close, true).ok()?;
        if inner.truncated || !(found.value.is_object() || found.value.is_array()) {
            return None;
        }
        self.repairs.extend(found.repairs);
        self.pos = close + 4;
        self.note(RepairKind::FencedJson, start);
        Some(found.value)
    }

    /// Where the first `` ```" `` at or after `from` starts; remembers the last search
    /// so that searches from later positions reuse it.
    fn fence_end(&mut self, from: usize) -> Option<usize> {
        if let Some((searched, found)) = self.fence_end
            && searched <= from
            && found.is_none_or(|at| at >= from)
        {
            return found;
        }
        let rest = self.bytes.get(from..).unwrap_or_default();
        let found = memchr::memmem::find(rest, b"```\"").map(|at| from + at);
        crate::work::count(found.map_or(rest.len(), |at| at - from + 4));
        self.fence_end = Some((from, found));
        found
    }

    /// A string opened by `"`, `'`, `“`, `‘` or `\"` at the current position.
    pub(super) fn string(&mut self) -> Result<String, usize> {
        const LEFT_DOUBLE: &[u8] = "“".as_bytes();
        const RIGHT_DOUBLE: &[u8] = "”".as_bytes();
        const LEFT_SINGLE: &[u8] = "‘".as_bytes();
        const RIGHT_SINGLE: &[u8] = "’".as_bytes();
        let start = self.pos;
        let rest = self.rest();
        // The closing quotes accepted, the quote's width and the kind of slip.
        // `""key""`, `''text''`: doubled quotes (as CSV escapes them) around a word.
        let doubled =
            |c: u8| !is_json_ws(c) && !matches!(c, b',' | b':' | b'}' | b']' | b'"' | b'\'');
        let (closers, width, kind): (&[&[u8]], usize, Option<RepairKind>) = match rest {
            [b'"', b'"', c, ..] if doubled(*c) => (&[b"\"\""], 2, Some(RepairKind::DoubledQuotes)),
            [b'\'', b'\'', c, ..] if doubled(*c) => (&[b"''"], 2, Some(RepairKind::DoubledQuotes)),
            [b'"', ..] => (&[b"\""], 1, None),
            [b'\'', ..] => (&[b"'"], 1, Some(RepairKind::SingleQuotes)),
            [b'`', ..] => (&[b"`"], 1, Some(RepairKind::BacktickQuotes)),
            [b'\\', b'"', ..] => (&[b"\\\""], 2, Some(RepairKind::EscapedJson)),
            _ if rest.starts_with(LEFT_DOUBLE) || rest.starts_with(RIGHT_DOUBLE) => {
                (&[RIGHT_DOUBLE, LEFT_DOUBLE], 3, Some(RepairKind::SmartQuotes))
            }
            _ if rest.starts_with(LEFT_SINGLE) || rest.starts_with(RIGHT_SINGLE) => {
                (&[RIGHT_SINGLE, LEFT_SINGLE], 3, Some(RepairKind::SmartQuotes))
            }
            _ => return Err(start),
        };
        let opener = rest.first().copied().unwrap_or(b'"');
        // A template literal may hold raw line breaks.
        let backtick = opener == b'`';
        let escaped_quotes = kind == Some(RepairKind::EscapedJson);
        let value_in_object = self.in_object;
        self.pos += width;
        let mut out = String::new();
        let mut run = self.pos;
        let mut control_noted = false;
        // Quotes kept as text so far: quoting inside text comes in pairs.
        let mut kept = 0usize;
        loop {
            let Some(byte) = self.peek() else {
                out.push_str(self.slice(run));
                self.truncate();
                if let Some(kind) = kind {
                    self.note_span(kind, start, start + width);
                }
                return Ok(out);
            };
            let here = self.pos;
            let rest = self.rest();
            if let Some(closer) = closers.iter().find(|c| rest.starts_with(c)) {
                if self.ends_string(closer, here + closer.len(), kept) {
                    // `"hello⏎"`: a raw line break (with its indentation) just before the
                    // closing quote is layout, not text (a guess).
                    let raw = self.slice(run);
                    let text = raw.trim_end_matches([' ', '\t', '\r', '\n']);
                    if self.nested && !self.in_key && raw[text.len()..].contains('\n') {
                        let from = run + text.len();
                        self.note_span(RepairKind::TrailingLineBreak, from, here);
                        out.push_str(text);
                    } else {
                        out.push_str(raw);
                    }
                    self.pos = here + closer.len();
                    if let Some(kind) = kind {
                        self.note(kind, start);
                    }
                    return Ok(out);
                }
                self.note_span(RepairKind::UnescapedQuote, here, here + closer.len());
                self.pos += closer.len();
                kept += 1;
                continue;
            }
            if byte == b'\\' && !escaped_quotes {
                out.push_str(self.slice(run));
                run = self.escape(&mut out, opener);
                continue;
            }
            if byte < 0x20 {
                if !control_noted && !backtick {
                    control_noted = true;
                    self.note_span(RepairKind::RawControlCharacter, here, here + 1);
                }
                self.pos += 1;
                continue;
            }
            // `"New York, "gender": …`: the closing quote is missing before the comma.
            if byte == b',' && value_in_object && !escaped_quotes && starts_member(rest, true) {
                out.push_str(self.slice(run));
                self.note_span(RepairKind::MissingQuote, here, here);
                return Ok(out.trim_end().to_owned());
            }
            self.pos += 1;
        }
    }

    /// Whether the quote `quote` ending at `after` closes its string: always for a key
    /// or a top-level string; else when what follows it can follow a value
    /// ([`Self::plausible_end`]), when a new item or member follows without a comma, or
    /// when no other such quote follows on the same line. `kept` counts the quotes
    /// already kept as text in this string.
    fn ends_string(&self, quote: &[u8], after: usize, kept: usize) -> bool {
        // A template literal cannot hold a backtick that is not escaped.
        if !self.nested || self.in_key || quote == b"`" {
            return true;
        }
        let rest = self.bytes.get(after..).unwrap_or_default();
        // A quote before `:` closes a key quoted inside the text (`"the reply {"ok": 1}"`)
        // only when the key's opening quote was kept; otherwise it ends the value, and
        // the `:` after it is an error: `{"a": "{ b": {} }"}` has no reading.
        if kept.is_multiple_of(2) && rest.iter().take(80).find(|&&b| !is_json_ws(b)) == Some(&b':')
        {
            return true;
        }
        // In an array, `"x" "y"` or `"x" [1]`: a string or container after a blank is the
        // next item.
        let next_item = !self.in_object
            && rest.first().is_some_and(|&b| is_json_ws(b))
            && rest
                .iter()
                .find(|&&b| !is_json_ws(b))
                .is_some_and(|b| matches!(b, b'[' | b'{') || quote.first() == Some(b));
        // In an array, `"x" y" ]`: a word closed by the same quote and followed by a comma
        // or closer is the next item, its comma and opening quote missing; unless a quote
        // kept earlier in this string waits for its pair (`"say "hi" now"`).
        let word_item = !self.in_object && kept.is_multiple_of(2) && word_then_quote(rest, quote);
        // `"print("hi")⏎…"`: a quote that pairs with one kept earlier and runs straight
        // into text that cannot follow a value closes the inner quotation, even when no
        // other quote follows on its line (code over several lines).
        let pairs_inner = !kept.is_multiple_of(2)
            && rest.first().is_some_and(|&b| {
                !is_json_ws(b) && !matches!(b, b',' | b'}' | b']' | b':' | b'/' | b'#')
            });
        self.plausible_end(rest, quote)
            || next_item
            || word_item
            || starts_member(rest, false)
            || (!pairs_inner && !quote_later_on_line(rest, quote))
    }

    /// Whether `rest`, what follows a closing quote, can follow a string value: the end,
    /// a comment, a comma before another item or member, or a closer; one that closes the
    /// outermost container must be followed by the end of the line, another value or
    /// member, or at least not by prose running into another quote and closer on the same
    /// line (`… {"b": "c"}, more"}`: those quotes belong to the text). A `:` never follows
    /// a value. Reads to the end of the line at most.
    fn plausible_end(&self, rest: &[u8], quote: &[u8]) -> bool {
        let skip = |from: usize| {
            from + rest
                .get(from..)
                .unwrap_or_default()
                .iter()
                .take_while(|&&b| is_json_ws(b))
                .count()
        };
        let at = skip(0);
        match rest.get(at) {
            None | Some(b'/' | b'#') => true,
            Some(b',') => {
                let next = skip(at + 1);
                match rest.get(next) {
                    None => true,
                    Some(&b) if self.in_object => {
                        let after = rest.get(at..).unwrap_or_default();
                        // `, "b");`: a quoted word that no `:` follows is no key.
                        starts_member(after, true)
                            || (b == b'"' && !quoted_non_key(rest.get(next..).unwrap_or_default()))
                            || is_key_byte(b)
                            || matches!(b, b'}' | b'\'' | b'\\' | b'/' | b'#' | b'<' | b'`')
                    }
                    Some(&b) => !matches!(b, b':' | b','),
                }
            }
            Some(b'}' | b']') => {
                let after = skip(at + 1);
                if self.depth > 1 {
                    // Inside the outermost container a closer is followed by the next
                    // closer, a comma, a comment, another value or member (a missing
                    // comma), or nothing; `['"](` and `[^'"]+` are text (a regular
                    // expression's character class), not a string ending in a closer.
                    return can_follow_closer(rest.get(after..).unwrap_or_default());
                }
                let line_end = rest.get(at + 1..after).is_some_and(|gap| gap.contains(&b'\n'));
                let next = rest.get(skip(after + usize::from(rest.get(after) == Some(&b','))));
                line_end
                    || next.is_none_or(|b| matches!(b, b'{' | b'[' | b'\n'))
                    || starts_member(rest.get(after..).unwrap_or_default(), true)
                    || !closing_quote_later_on_line(rest.get(at + 1..).unwrap_or_default(), quote)
            }
            _ => false,
        }
    }

    /// Decodes the escape at the current backslash into `out`; returns where the next
    /// literal run starts.
    fn escape(&mut self, out: &mut String, opener: u8) -> usize {
        let at = self.pos;
        // A backslash or a `\u` escape cut off by the end: dropped.
        if super::cut_unicode_escape(self.bytes.get(at..).unwrap_or_default()) {
            self.pos = self.bytes.len();
            return self.pos;
        }
        let Some(&code) = self.bytes.get(at + 1) else {
            self.pos = self.bytes.len();
            return self.pos;
        };
        self.pos = at + 2;
        let simple = match code {
            b'"' => Some('"'),
            b'\\' => Some('\\'),
            b'/' => Some('/'),
            b'b' => Some('\u{8}'),
            b'f' => Some('\u{c}'),
            b'n' => Some('\n'),
            b'r' => Some('\r'),
            b't' => Some('\t'),
            b'\'' | b'`' => {
                if opener != code {
                    self.note_span(RepairKind::InvalidEscape, at, at + 2);
                }
                Some(char::from(code))
            }
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            return self.pos;
        }
        if code == b'u'
            && let Some(unit) = self.hex4(at + 2)
        {
            self.pos = at + 6;
            let rest = self.bytes.get(at + 6..).unwrap_or_default();
            if (0xD800..0xDC00).contains(&unit)
                && (rest.is_empty() || super::cut_unicode_escape(rest))
            {
                // A surrogate pair cut off by the end: dropped whole.
                self.pos = self.bytes.len();
                return self.pos;
            }
            let decoded = if (0xD800..0xDC00).contains(&unit) {
                let low = (self.bytes.get(at + 6..at + 8) == Some(b"\\u"))
                    .then(|| self.hex4(at + 8))
                    .flatten()
                    .filter(|low| (0xDC00..0xE000).contains(low));
                low.and_then(|low| {
                    self.pos = at + 12;
                    char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                })
            } else {
                char::from_u32(unit)
            };
            out.push(decoded.unwrap_or_else(|| {
                self.note_span(RepairKind::InvalidEscape, at, self.pos);
                char::REPLACEMENT_CHARACTER
            }));
            return self.pos;
        }
        // Unknown escape: keep the backslash; the next character stays in the next run.
        self.note_span(RepairKind::InvalidEscape, at, at + 1);
        out.push('\\');
        self.pos = at + 1;
        self.pos
    }

    /// The four hex digits at `at`, if there are four.
    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.bytes.get(at..at + 4)?;
        digits.iter().try_fold(0u32, |acc, &d| Some(acc * 16 + char::from(d).to_digit(16)?))
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::super::Parser;
    use super::super::tests::check;
    use crate::extract::RepairKind;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    #[test]
    fn a_closer_followed_by_an_operator_is_text() {
        check(
            r#"{"a": {"re": "^[^'"]+$", "n": 1}}"#,
            r#"{"a":{"n":1,"re":"^[^'\"]+$"}} unescaped_quote"#,
        );
        check(
            r#"{"r": [{"re": "(['"])(\w+)\1"}]}"#,
            r#"{"r":[{"re":"(['\"])(\\w+)\\1"}]} unescaped_quote,invalid_escape,invalid_escape"#,
        );
        // A closer followed by a comma, a closer, a signed number or nothing still ends.
        check(r#"[["a"] -1]"#, r#"[["a"],-1] missing_comma"#);
        check(r#"[["a"],]"#, r#"[["a"]] trailing_comma"#);
    }

    #[test]
    fn a_word_closed_by_a_quote_is_the_next_item() {
        check(r#"["a", "b" c" ]"#, r#"["a","b","c"] missing_comma,missing_quote"#);
        check(r#"["b" c d", "e"]"#, r#"["b","c d","e"] missing_comma,missing_quote"#);
        // A quote kept earlier waits for its pair: the words are one quoted phrase.
        check(r#"["say "hi" now"]"#, r#"["say \"hi\" now"] unescaped_quote,unescaped_quote"#);
        // In an object the word would be a key without a colon: the quote is text.
        check(r#"{"a": "5" screen"}"#, r#"{"a":"5\" screen"} unescaped_quote"#);
    }

    #[test]
    fn a_trailing_raw_line_break_is_layout() {
        check(
            "{\"a\": \"hello\n    \"}",
            r#"{"a":"hello"} raw_control_character,trailing_line_break"#,
        );
        check("[\"x\r\n\", \"y\\n\"]", r#"["x","y\n"] raw_control_character,trailing_line_break"#);
        // Inside the text, or escaped, a line break stays.
        check("{\"a\": \"x\ny\"}", r#"{"a":"x\ny"} raw_control_character"#);
        check("{\"a\": \"x\\n\", \"b\": 1,}", r#"{"a":"x\n","b":1} trailing_comma"#);
    }

    #[test]
    fn a_quote_before_a_colon_ends_the_value_unless_it_closes_a_quoted_key() {
        check(r#"{"a": "{ b": {} }"}"#, "error at 11");
        check(
            r#"{"t": "he said "wait": no"}"#,
            r#"{"t":"he said \"wait\": no"} unescaped_quote,unescaped_quote"#,
        );
    }

    #[test]
    fn fenced_json_inside_a_string() {
        check(
            r#"{"code": "```json {"a": [1, 2]}```", "n": 1}"#,
            r#"{"code":{"a":[1,2]},"n":1} fenced_json"#,
        );
        check(
            "{\"v\": \"```json\n{\"a\": 'x',}\n```\"}",
            r#"{"v":{"a":"x"}} single_quotes,trailing_comma,fenced_json"#,
        );
        check(r#"["```{"a": 1}```"]"#, r#"[{"a":1}] fenced_json"#);
        // Escaped quotes make it an ordinary string; so does content that is not JSON.
        check(
            r#"{"code": "```json {\"a\": 1}```", "n": 1,}"#,
            r#"{"code":"```json {\"a\": 1}```","n":1} trailing_comma"#,
        );
        check(
            r#"{"c": "```py print("x")```"}"#,
            r#"{"c":"```py print(\"x\")```"} unescaped_quote,unescaped_quote"#,
        );
        // One inside another: the first `` ```" `` ends the outer block, whose content
        // then holds an unclosed string, so there is no fenced reading (and no other).
        check(r#"{"a": "```{"b": "```{"c": 1}```"}```"}"#, "error at 24");
    }

    /// Words, and the item of them written without its comma and opening quote.
    fn words() -> impl Strategy<Value = (Vec<String>, usize)> {
        prop::collection::vec("[a-z]{1,6}( [a-z]{1,6})?", 2..6).prop_flat_map(|words| {
            let len = words.len();
            (Just(words), 1..len)
        })
    }

    /// Parses `text` whole and checks that the value re-serializes and parses back, and
    /// that `kind` is reported.
    fn repaired(text: &str, kind: RepairKind) -> Result<Value, TestCaseError> {
        let found = Parser::new(text).run(0, text.len(), true);
        let found =
            found.map_err(|stop| TestCaseError::fail(format!("{text:?} fails at {}", stop.at)))?;
        let reparsed: Value = serde_json::from_str(&found.value.to_string())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&reparsed, &found.value);
        prop_assert!(
            found.repairs.iter().any(|r| r.kind == kind),
            "{:?} not in {:?} for {}",
            kind,
            found.repairs,
            text
        );
        for repair in &found.repairs {
            prop_assert!(repair.span.0 <= repair.span.1 && repair.span.1 <= text.len());
        }
        Ok(found.value)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn words_without_comma_and_opening_quote((words, cut) in words()) {
            let mut text = String::from("[");
            for (i, word) in words.iter().enumerate() {
                match i {
                    0 => text.push_str(&format!("\"{word}\"")),
                    _ if i == cut => text.push_str(&format!(" {word}\"")),
                    _ => text.push_str(&format!(", \"{word}\"")),
                }
            }
            text.push_str(" ]");
            let value = repaired(&text, RepairKind::MissingQuote)?;
            prop_assert_eq!(value, json!(words));
        }

        #[test]
        fn quotes_in_character_classes(
            before in "[a-z^]{0,4}",
            class in "[a-z']{0,2}\"[a-z']{0,2}",
            operator in "[+*?(]",
            after in "[a-z]{0,4}",
        ) {
            let pattern = format!("{before}[{class}]{operator}{after}");
            let text = format!("{{\"rules\": [{{\"re\": \"{pattern}\"}}], \"n\": 1}}");
            let value = repaired(&text, RepairKind::UnescapedQuote)?;
            // The pattern comes back as written (an unknown escape keeps its backslash).
            prop_assert_eq!(value, json!({"rules": [{"re": pattern}], "n": 1}));
        }

        #[test]
        fn trailing_raw_line_breaks(
            map in prop::collection::btree_map("[a-z]{1,4}", "[a-z]([a-z ]{0,6}[a-z])?", 1..4),
            indent in "[ \t]{0,4}",
            crlf: bool,
        ) {
            let nl = if crlf { "\r\n" } else { "\n" };
            let members: Vec<String> =
                map.iter().map(|(k, v)| format!("\"{k}\": \"{v}{nl}{indent}\"")).collect();
            let text = format!("{{{}}}", members.join(", "));
            let value = repaired(&text, RepairKind::TrailingLineBreak)?;
            prop_assert_eq!(value, json!(map));
        }

        #[test]
        fn fenced_json_values(inner in prop::collection::btree_map("[a-z]{1,4}", "[a-z ]{0,6}", 1..4), tag in "(json|JSON)?", newline: bool) {
            let sep = if newline { "\n" } else { " " };
            let inner = json!(inner);
            let text = format!("{{\"v\": \"```{tag}{sep}{inner}{sep}```\", \"n\": 1}}");
            let value = repaired(&text, RepairKind::FencedJson)?;
            prop_assert_eq!(value, json!({"v": inner, "n": 1}));
        }
    }
}
