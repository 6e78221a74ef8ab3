//! Opt-in repair: a tolerant JSON parser and the order in which it is tried.
//!
//! The parser is an explicit state machine over a stack of open containers (no
//! recursion), limited to [`MAX_DEPTH`] nested containers like `serde_json`. It accepts
//! strict JSON plus the slips LLMs make, and reports each one as a [`Repair`]:
//!
//! | slip | kind |
//! | --- | --- |
//! | `[1, 2,]`, `{"a": 1,}` | `trailing_comma` (at the comma) |
//! | `'text'` | `single_quotes` (at the opening quote) |
//! | `“text”`, `‘text’` | `smart_quotes` (at the opening quote) |
//! | `{key: 1}` (ASCII letters, digits, `_`, `$`, `-`) | `unquoted_key` |
//! | `// …` to the end of the line, `/* … */` | `comment` |
//! | raw control characters (newline, tab, …) inside a string | `raw_control_character` (once per string, at the first) |
//! | inside a container, a quote not followed by `,` `:` `}` `]` `/` or the end while another one follows on its line | `unescaped_quote` (the quote is kept) |
//! | `\x`, `\u12` and lone surrogates | `invalid_escape` (kept literally; lone surrogates become U+FFFD) |
//! | `True`, `False`, `None` | `python_literal` |
//! | the input ends inside the value | `truncated_tail` (once, at the end) |
//! | the value comes from a fenced block that is never closed | `unclosed_fence` (at the end of the text) |
//!
//! At a truncated end, open strings are closed, then open arrays and objects; a key
//! without a value, a partial key, and a partial literal or number (`tr`, `-`, `1.`) are
//! dropped. A complete number at the end is kept. A truncated value that holds no scalar
//! and no object member (`{` alone, `{"a":`, `[[[`) is not accepted.
//!
//! Candidates ([`repair`]) mirror the strict order: each fenced block's content (the
//! unclosed one included, up to the end of the text), which must hold one value and
//! nothing else but comments; then each `{` (each `[` when an array is wanted), with text
//! after the value ignored; then the whole trimmed text, again as one value. A `{` candidate is skipped when the next non-blank byte cannot
//! continue an object (`{{`, `{ (`). After a failed candidate the next one is searched
//! after the position where the parser gave up, so the bracket candidates read each byte
//! a bounded number of times and the whole repair stays linear; a candidate nesting
//! deeper than [`MAX_DEPTH`] ends the bracket candidates (the later ones inside the same
//! nest would fail alike).

use serde_json::{Map, Number, Value};

use super::MAX_DEPTH;
use super::fence::Block;
use super::scan::{find_any, find_byte, is_json_ws, skip_json_ws};
use super::{Repair, RepairKind};

/// A value found by the tolerant parser.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Repaired {
    pub value: Value,
    pub span: (usize, usize),
    pub repairs: Vec<Repair>,
}

/// Tries the repair candidates in order; on failure returns a sentence for the detail.
pub(super) fn repair(
    text: &str,
    floor: usize,
    blocks: &[Block],
    want_array: bool,
) -> Result<Repaired, String> {
    let bytes = text.as_bytes();
    let mut parser = Parser::new(text);
    for block in blocks {
        if let Ok(mut found) = parser.run(block.content.start, block.content.end, true) {
            if !block.closed {
                found.repairs.push(Repair { kind: RepairKind::UnclosedFence, offset: text.len() });
            }
            return Ok(found);
        }
    }
    let open = if want_array { b'[' } else { b'{' };
    let mut pos = floor;
    let mut first_error = None;
    while let Some(found) = bytes.get(pos..).and_then(|rest| find_byte(open, rest)) {
        let start = pos + found;
        pos = start + 1;
        if !may_open(bytes, start, want_array) {
            continue;
        }
        match parser.run(start, text.len(), false) {
            Ok(found) => return Ok(found),
            Err(stop) => {
                first_error.get_or_insert(stop.at);
                // Later candidates inside a too-deep nest would fail the same way.
                if stop.too_deep {
                    break;
                }
                pos = pos.max(stop.at);
            }
        }
    }
    let body = text.get(floor..).unwrap_or_default();
    let trimmed = body.trim();
    if !trimmed.is_empty() {
        let start = text.len() - body.trim_start().len();
        if let Ok(found) = parser.run(start, start + trimmed.len(), true) {
            return Ok(found);
        }
    }
    Err(match first_error {
        Some(at) => format!(
            "no candidate could be repaired (the first `{}` candidate fails at byte {at})",
            char::from(open)
        ),
        None => "no candidate could be repaired".to_owned(),
    })
}

/// Whether the bracket at `at` is followed (after whitespace) by something the tolerant
/// parser could continue with; saves a parser run on `{{{{…` and prose like `{ see`.
fn may_open(bytes: &[u8], at: usize, want_array: bool) -> bool {
    let next = bytes.get(skip_json_ws(bytes, at + 1)).copied();
    match next {
        Some(b'"' | b'\'' | b'/' | 0xE2) => true,
        Some(b) if want_array => {
            b.is_ascii_alphanumeric() || matches!(b, b'[' | b'{' | b']' | b'-')
        }
        Some(b) => is_key_byte(b) || b == b'}',
        None => false,
    }
}

/// Bytes of an unquoted key.
fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'-')
}

/// Parses one value from `text[start..limit]` (leading whitespace and comments skipped).
/// With `whole`, only whitespace and comments may follow it. On failure returns the byte
/// position where the parser gave up.
#[cfg(test)]
pub(super) fn parse(
    text: &str,
    start: usize,
    limit: usize,
    whole: bool,
) -> Result<Repaired, usize> {
    Parser::new(text).run(start, limit, whole).map_err(|stop| stop.at)
}

/// Why a parser run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stop {
    /// Where the parser gave up.
    at: usize,
    /// The value nests deeper than [`MAX_DEPTH`].
    too_deep: bool,
}

impl From<usize> for Stop {
    fn from(at: usize) -> Self {
        Stop { at, too_deep: false }
    }
}

/// Whether `value` holds a scalar or an object member anywhere (recursion bounded by
/// [`MAX_DEPTH`]).
fn has_content(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(has_content),
        Value::Object(map) => !map.is_empty(),
        _ => true,
    }
}

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

/// What the parser expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value (or `]` right after `[` or a comma in an array).
    Value,
    /// A key (or `}` right after `{` or a comma in an object).
    Key,
    /// The `:` after a key.
    Colon,
    /// A `,` or the closer of the innermost container.
    Next,
}

/// An open container.
#[derive(Debug)]
enum Frame {
    Array(Vec<Value>),
    /// The object so far and the key waiting for its value.
    Object(Map<String, Value>, Option<String>),
}

impl Frame {
    fn into_value(self) -> Value {
        match self {
            Frame::Array(items) => Value::Array(items),
            Frame::Object(map, _) => Value::Object(map),
        }
    }
}

/// What a scalar or key scan produced.
enum Token<T> {
    Done(T),
    /// The input ended inside the token; it is dropped.
    Truncated,
}

/// The tolerant parser; one is reused for every candidate of a text.
struct Parser<'a> {
    text: &'a str,
    /// The bytes of the current run, up to its limit.
    bytes: &'a [u8],
    pos: usize,
    repairs: Vec<Repair>,
    truncated: bool,
    /// Whether the value being read sits inside a container.
    nested: bool,
    /// Open containers, kept between runs for its allocation.
    stack: Vec<Frame>,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser {
            text,
            bytes: &[],
            pos: 0,
            repairs: vec![],
            truncated: false,
            nested: false,
            stack: vec![],
        }
    }

    /// Parses one value from `text[start..limit]` (leading whitespace and comments
    /// skipped); with `whole`, only whitespace and comments may follow it.
    fn run(&mut self, start: usize, limit: usize, whole: bool) -> Result<Repaired, Stop> {
        self.bytes = self.text.as_bytes().get(..limit).ok_or(start)?;
        self.pos = start;
        self.repairs.clear();
        self.truncated = false;
        self.skip_trivia();
        let value_start = self.pos;
        let mut stack = std::mem::take(&mut self.stack);
        let value = self.value(&mut stack);
        stack.clear();
        self.stack = stack;
        let value = value?;
        let end = self.pos;
        if whole {
            self.skip_trivia();
            if self.pos < self.bytes.len() {
                return Err(self.pos.into());
            }
        }
        if self.truncated && !has_content(&value) {
            return Err(end.into());
        }
        Ok(Repaired { value, span: (value_start, end), repairs: std::mem::take(&mut self.repairs) })
    }

    fn note(&mut self, kind: RepairKind, offset: usize) {
        self.repairs.push(Repair { kind, offset });
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// The text from `from` to the current position (both on character boundaries).
    fn slice(&self, from: usize) -> &'a str {
        self.text.get(from..self.pos).unwrap_or_default()
    }

    /// Records the truncated tail once.
    fn truncate(&mut self) {
        if !self.truncated {
            self.truncated = true;
            self.note(RepairKind::TruncatedTail, self.bytes.len());
        }
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) {
        loop {
            while self.peek().is_some_and(is_json_ws) {
                self.pos += 1;
            }
            let start = self.pos;
            match (self.peek(), self.bytes.get(self.pos + 1)) {
                (Some(b'/'), Some(b'/')) => {
                    let rest = self.bytes.get(start..).unwrap_or_default();
                    self.pos = find_byte(b'\n', rest).map_or(self.bytes.len(), |n| start + n);
                }
                (Some(b'/'), Some(b'*')) => {
                    let rest = self.bytes.get(start + 2..).unwrap_or_default();
                    self.pos = rest
                        .windows(2)
                        .position(|w| w == b"*/")
                        .map_or(self.bytes.len(), |n| start + 2 + n + 2);
                }
                _ => return,
            }
            self.note(RepairKind::Comment, start);
        }
    }

    /// Parses one value with an explicit stack of open containers (empty on entry).
    fn value(&mut self, stack: &mut Vec<Frame>) -> Result<Value, Stop> {
        let mut expect = Expect::Value;
        let mut comma: Option<usize> = None;
        loop {
            self.skip_trivia();
            let Some(byte) = self.peek() else {
                return Ok(self.close_truncated(stack)?);
            };
            let done = match expect {
                Expect::Value => match byte {
                    b'{' | b'[' => {
                        if stack.len() >= MAX_DEPTH {
                            return Err(Stop { at: self.pos, too_deep: true });
                        }
                        self.pos += 1;
                        comma = None;
                        if byte == b'{' {
                            stack.push(Frame::Object(Map::new(), None));
                            expect = Expect::Key;
                        } else {
                            stack.push(Frame::Array(vec![]));
                        }
                        continue;
                    }
                    b']' if matches!(stack.last(), Some(Frame::Array(_))) => {
                        if let Some(at) = comma.take() {
                            self.note(RepairKind::TrailingComma, at);
                        }
                        self.pos += 1;
                        stack.pop().map(Frame::into_value)
                    }
                    _ => {
                        comma = None;
                        self.nested = !stack.is_empty();
                        match self.scalar()? {
                            Token::Done(value) => Some(value),
                            Token::Truncated => return Ok(self.close_truncated(stack)?),
                        }
                    }
                },
                Expect::Key => {
                    if byte == b'}' {
                        if let Some(at) = comma.take() {
                            self.note(RepairKind::TrailingComma, at);
                        }
                        self.pos += 1;
                        stack.pop().map(Frame::into_value)
                    } else {
                        comma = None;
                        self.nested = true;
                        let Token::Done(key) = self.key()? else {
                            return Ok(self.close_truncated(stack)?);
                        };
                        if let Some(Frame::Object(_, pending)) = stack.last_mut() {
                            *pending = Some(key);
                        }
                        expect = Expect::Colon;
                        continue;
                    }
                }
                Expect::Colon => {
                    if byte != b':' {
                        return Err(self.pos.into());
                    }
                    self.pos += 1;
                    expect = Expect::Value;
                    continue;
                }
                Expect::Next => match (byte, stack.last()) {
                    (b',', Some(frame)) => {
                        comma = Some(self.pos);
                        self.pos += 1;
                        expect = match frame {
                            Frame::Array(_) => Expect::Value,
                            Frame::Object(..) => Expect::Key,
                        };
                        continue;
                    }
                    (b'}', Some(Frame::Object(..))) | (b']', Some(Frame::Array(_))) => {
                        self.pos += 1;
                        stack.pop().map(Frame::into_value)
                    }
                    _ => return Err(self.pos.into()),
                },
            };
            let Some(value) = done else { return Err(self.pos.into()) };
            match stack.last_mut() {
                None => return Ok(value),
                Some(Frame::Array(items)) => items.push(value),
                Some(Frame::Object(map, pending)) => {
                    if let Some(key) = pending.take() {
                        map.insert(key, value);
                    }
                }
            }
            expect = Expect::Next;
        }
    }

    /// The input ended: closes every open container, dropping a key without a value.
    fn close_truncated(&mut self, stack: &mut Vec<Frame>) -> Result<Value, usize> {
        let mut carry: Option<Value> = None;
        while let Some(frame) = stack.pop() {
            self.truncate();
            carry = Some(match frame {
                Frame::Array(mut items) => {
                    items.extend(carry.take());
                    Value::Array(items)
                }
                Frame::Object(mut map, pending) => {
                    if let (Some(key), Some(value)) = (pending, carry.take()) {
                        map.insert(key, value);
                    }
                    Value::Object(map)
                }
            });
        }
        carry.ok_or(self.pos)
    }

    /// A string, number or literal.
    fn scalar(&mut self) -> Result<Token<Value>, usize> {
        let start = self.pos;
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => {
                while self
                    .peek()
                    .is_some_and(|b| matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'))
                {
                    self.pos += 1;
                }
                match self.slice(start).parse::<Number>() {
                    Ok(number) => Ok(Token::Done(Value::Number(number))),
                    Err(_) if self.pos == self.bytes.len() => {
                        self.truncate();
                        Ok(Token::Truncated)
                    }
                    Err(_) => Err(start),
                }
            }
            Some(b) if b.is_ascii_alphabetic() => {
                while self.peek().is_some_and(|b| b.is_ascii_alphanumeric()) {
                    self.pos += 1;
                }
                let word = self.slice(start);
                let value = match word {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    "null" => Value::Null,
                    "True" | "False" | "None" => {
                        self.note(RepairKind::PythonLiteral, start);
                        match word {
                            "True" => Value::Bool(true),
                            "False" => Value::Bool(false),
                            _ => Value::Null,
                        }
                    }
                    _ if self.pos == self.bytes.len()
                        && ["true", "false", "null", "True", "False", "None"]
                            .iter()
                            .any(|full| full.starts_with(word)) =>
                    {
                        self.truncate();
                        return Ok(Token::Truncated);
                    }
                    _ => return Err(start),
                };
                Ok(Token::Done(value))
            }
            _ => Ok(Token::Done(Value::String(self.string()?))),
        }
    }

    /// An object key: a string in any accepted quotes, or a bare word.
    fn key(&mut self) -> Result<Token<String>, usize> {
        let start = self.pos;
        if self.peek().is_some_and(is_key_byte) {
            while self.peek().is_some_and(is_key_byte) {
                self.pos += 1;
            }
            if self.pos == self.bytes.len() {
                self.truncate();
                return Ok(Token::Truncated);
            }
            self.note(RepairKind::UnquotedKey, start);
            return Ok(Token::Done(self.slice(start).to_owned()));
        }
        let before = self.truncated;
        let key = self.string()?;
        // A key cut off by the end of the input is dropped.
        if self.truncated && !before { Ok(Token::Truncated) } else { Ok(Token::Done(key)) }
    }

    /// A string opened by `"`, `'`, `“` or `‘` at the current position.
    fn string(&mut self) -> Result<String, usize> {
        const LEFT_DOUBLE: &[u8] = "“".as_bytes();
        const RIGHT_DOUBLE: &[u8] = "”".as_bytes();
        const LEFT_SINGLE: &[u8] = "‘".as_bytes();
        const RIGHT_SINGLE: &[u8] = "’".as_bytes();
        let start = self.pos;
        let rest = self.bytes.get(start..).unwrap_or_default();
        // The closing quotes accepted, and the quote's width.
        let (closers, width): (&[&[u8]], usize) = match rest.first() {
            Some(b'"') => (&[b"\""], 1),
            Some(b'\'') => {
                self.note(RepairKind::SingleQuotes, start);
                (&[b"'"], 1)
            }
            _ if rest.starts_with(LEFT_DOUBLE) || rest.starts_with(RIGHT_DOUBLE) => {
                self.note(RepairKind::SmartQuotes, start);
                (&[RIGHT_DOUBLE, LEFT_DOUBLE], 3)
            }
            _ if rest.starts_with(LEFT_SINGLE) || rest.starts_with(RIGHT_SINGLE) => {
                self.note(RepairKind::SmartQuotes, start);
                (&[RIGHT_SINGLE, LEFT_SINGLE], 3)
            }
            _ => return Err(start),
        };
        let single = rest.first() == Some(&b'\'');
        self.pos += width;
        let mut out = String::new();
        let mut run = self.pos;
        let mut control_noted = false;
        loop {
            let Some(byte) = self.peek() else {
                out.push_str(self.slice(run));
                self.truncate();
                return Ok(out);
            };
            let here = self.pos;
            if byte == b'\\' {
                out.push_str(self.slice(run));
                run = self.escape(&mut out, single);
                continue;
            }
            if byte < 0x20 {
                if !control_noted {
                    control_noted = true;
                    self.note(RepairKind::RawControlCharacter, here);
                }
                self.pos += 1;
                continue;
            }
            let rest = self.bytes.get(here..).unwrap_or_default();
            if let Some(closer) = closers.iter().find(|c| rest.starts_with(c)) {
                if self.ends_string(closer, here + closer.len()) {
                    out.push_str(self.slice(run));
                    self.pos = here + closer.len();
                    return Ok(out);
                }
                self.note(RepairKind::UnescapedQuote, here);
                self.pos += closer.len();
                continue;
            }
            self.pos += 1;
        }
    }

    /// Whether the quote `quote` ending at `after` closes its string: always for a
    /// top-level string; else when what follows it (after whitespace) is `,` `:` `}` `]`
    /// `/` or the end of the input, or when no other such quote follows on the same line.
    fn ends_string(&self, quote: &[u8], after: usize) -> bool {
        if !self.nested {
            return true;
        }
        let rest = self.bytes.get(after..).unwrap_or_default();
        let structural = rest
            .iter()
            .find(|&&b| !is_json_ws(b))
            .is_none_or(|b| matches!(b, b',' | b':' | b'}' | b']' | b'/'));
        structural || !quote_later_on_line(rest, quote)
    }

    /// Decodes the escape at the current backslash into `out`; returns where the next
    /// literal run starts.
    fn escape(&mut self, out: &mut String, single: bool) -> usize {
        let at = self.pos;
        let Some(&code) = self.bytes.get(at + 1) else {
            // A backslash cut off by the end: dropped.
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
            b'\'' => {
                if !single {
                    self.note(RepairKind::InvalidEscape, at);
                }
                Some('\'')
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
                self.note(RepairKind::InvalidEscape, at);
                char::REPLACEMENT_CHARACTER
            }));
            return self.pos;
        }
        // Unknown escape: keep the backslash; the next character stays in the next run.
        self.note(RepairKind::InvalidEscape, at);
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
mod tests {
    use super::*;
    use serde_json::json;

    /// Parses `text` whole and renders the value and the repair kinds, or the error byte.
    fn check(text: &str, want: &str) {
        let got = match parse(text, 0, text.len(), false) {
            Ok(found) => {
                let kinds: Vec<&str> = found.repairs.iter().map(|r| r.kind.as_str()).collect();
                format!("{} {}", found.value, kinds.join(","))
            }
            Err(at) => format!("error at {at}"),
        };
        assert_eq!(got.trim_end(), want, "input {text:?}");
    }

    #[test]
    fn strict_json_needs_no_repair() {
        check(
            r#"{"a": [1, -2.5e3, true, false, null, "x\"\u00e9\ud83d\ude00"]}"#,
            "{\"a\":[1,-2500.0,true,false,null,\"x\\\"é😀\"]}",
        );
        check("[]", "[]");
        check("{}", "{}");
        check("  \"s\" trailing", "\"s\"");
    }

    #[test]
    fn each_slip_is_repaired_and_reported() {
        check("[1, 2,]", "[1,2] trailing_comma");
        check("{'a': 'it's'}", "{\"a\":\"it's\"} single_quotes,single_quotes,unescaped_quote");
        check("{a: 1, b_2: 2}", "{\"a\":1,\"b_2\":2} unquoted_key,unquoted_key");
        check("{\"a\": 1 // c\n /* d */}", "{\"a\":1} comment,comment");
        check("{\"a\": \"x\ny\"}", "{\"a\":\"x\\ny\"} raw_control_character");
        check(
            "[True, False, None]",
            "[true,false,null] python_literal,python_literal,python_literal",
        );
        check("{“a”: ‘b’}", "{\"a\":\"b\"} smart_quotes,smart_quotes");
        check(r#"["a" x, "b"]"#, r#"["a\" x, \"b"] unescaped_quote,unescaped_quote"#);
        check(
            r#"{"a": "say "hi" now"}"#,
            r#"{"a":"say \"hi\" now"} unescaped_quote,unescaped_quote"#,
        );
        check(r#"["C:\Users", "\ud800"]"#, r#"["C:\\Users","�"] invalid_escape,invalid_escape"#);
    }

    #[test]
    fn truncated_tails_are_closed() {
        check(r#"{"a": [1, {"b": "te"#, r#"{"a":[1,{"b":"te"}]} truncated_tail"#);
        check(r#"{"a": 1, "b""#, r#"{"a":1} truncated_tail"#);
        check(r#"{"a": 1, "b":"#, r#"{"a":1} truncated_tail"#);
        check(r#"{"a": 1, "b"#, r#"{"a":1} truncated_tail"#);
        check(r#"{"a": tr"#, "error at 8");
        check(r#"{"a": 1, "b": tr"#, r#"{"a":1} truncated_tail"#);
        check(r#"[1, 2."#, "[1] truncated_tail");
        check(r#"[1, 23"#, "[1,23] truncated_tail");
        check(r#"["a","#, r#"["a"] truncated_tail"#);
        check(r#"["a\"#, r#"["a"] truncated_tail"#);
        check("{", "error at 1");
        check("", "error at 0");
        check("{a", "error at 2");
    }

    #[test]
    fn hard_errors() {
        check("{\"a\" 1}", "error at 5");
        check("[1 2]", "error at 3");
        check("{x}", "error at 2");
        check("nope", "error at 0");
        check("{\"a\": }", "error at 6");
        let deep = "[".repeat(MAX_DEPTH + 1);
        check(&deep, &format!("error at {MAX_DEPTH}"));
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&ok, 0, ok.len(), true).is_ok());
        assert_eq!(parse("[1] x", 0, 5, true), Err(4));
        assert_eq!(parse("[1] // x", 0, 8, true).map(|r| r.value), Ok(json!([1])));
    }
}
