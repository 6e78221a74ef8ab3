//! The tolerant JSON parser behind lenient repair (`repair.rs` decides where it runs);
//! strings, quotes and escapes are read in `string.rs`.
//!
//! An explicit state machine over a stack of open containers (no recursion), limited to
//! [`MAX_DEPTH`] nested containers like `serde_json`. It accepts strict JSON plus the
//! slips LLMs make, and reports each one as a [`Repair`] with the span it is about:
//!
//! | slip | kind |
//! | --- | --- |
//! | `[1, 2,]`, `{"a": 1,}` | `trailing_comma` |
//! | `'text'` | `single_quotes` |
//! | `“text”`, `‘text’` | `smart_quotes` |
//! | `{key: 1}`, `{te!st: 1}`, `{last.name: 1}` (printable ASCII but brackets, quotes, `:`, `,`, `\`) | `unquoted_key` |
//! | `// …`, `# …` to the end of the line, `/* … */`, `<!-- … -->` | `comment` |
//! | `{"a": 1 # note}`: a line comment that runs into the closers ending its line (read again with them as structure when the first reading fails or is cut off) | `comment` |
//! | `` `text` `` (a JavaScript template string; raw line breaks allowed) | `backtick_quotes` |
//! | `{"time": "12:20}`, `{"k": ["v]}` ```` ``` ````: a string never closed, followed only by the closers of every open container (a closing fence and a stray `'` allowed) | `unclosed_string` (`missing_quote`, a guess, for one closer; not when the string's own text leaves a bracket open) |
//! | `"a": 1, "b": 2}` (a block or the whole text) | `missing_brace` |
//! | `{"a": 1, etc}`: garbage after a trailing comma; `{"a": 1,, "b": 2}` | `stray_text` (a guess); `trailing_comma` |
//! | `{"a": 1}{}`, `{"a": 1} {"a": 1, "b`: an empty value or one cut off by the end after a complete one | `trailing_fragment` (dropped) |
//! | raw control characters (newline, tab, …) inside a string | `raw_control_character` (once per string) |
//! | inside a container, a quote that cannot end the value (not followed by the end, a comment, `,` and another item or member, or a closer; not a closer followed by an operator, as in a character class `['"]+`; a closer of the outermost container not followed by prose running into another quote and closer) while another quote follows on its line | `unescaped_quote` (kept; a guess) |
//! | a quote before `:` with no quote kept before it in the string (`{"a": "{ b": {} }"}`) | none: it ends the value, and the `:` fails the candidate |
//! | a string value running into `, "key":`; an unquoted value that a quote closes later on its line (`{"a": x, y.", …}`); in an array, a word closed by a quote (`["a" b" ]`, read as the next item) unless a quote kept earlier waits for its pair | `missing_quote` (a guess) |
//! | `{"a": 1, NOTE "b": 2}`: a bare word before a quoted key; a lone quote before a comma or closer | `stray_text` (dropped; a guess) |
//! | `"hello⏎  "`: a raw line break and its indentation just before the closing quote | `trailing_line_break` (dropped as layout; a guess) |
//! | `"```json {"a": 1}```"`: a string value that is a fenced block of a JSON object or array with quotes not escaped | `fenced_json` (read as that value; a guess) |
//! | `{"rows": [[1, 2], 3, 4], [5, 6]]}`: a row without its opener, its closer read as the list's | `missing_opener` (a guess; `premature_closer` when the items are all rows) |
//! | `\x`, `\u12` and lone surrogates | `invalid_escape` (kept literally; lone surrogates become U+FFFD) |
//! | `True`, `False`, `None`, `(1, 2)` | `python_literal` (a tuple becomes an array) |
//! | `TRUE`, `Null`, … | `literal_case` |
//! | `undefined`, `NaN`, `Infinity`, `-Infinity` | `javascript_literal` (all `null`, as `JSON.stringify` writes them) |
//! | `.5`, `1.`, `+1`, `1_000` | `number_format` |
//! | `{"a": 1 "b": 2}`, `[1 2]` | `missing_comma` |
//! | `{"a": hello world}`, `{"id": 57e-x1}` (inside a container, up to `,` `}` `]` or the line end) | `unquoted_string` |
//! | `[1, 2}`: a closer of the wrong kind | `mismatched_closer` (closes the open containers up to its own kind, or is skipped when none is open) |
//! | `{"a": 1}, "b": 2}`: an object closed before more members | `premature_closer` (a guess) |
//! | `...` or `…` where an item or member would be | `ellipsis` (dropped) |
//! | `{"a": }`: a key without its value | `missing_value` (`null`) |
//! | `{\"a\": 1}` | `escaped_json` |
//! | `{""a"": ''x''}` (quotes doubled as CSV escapes them) | `doubled_quotes` |
//! | the input ends inside the value, or a fence closer (```` ``` ````) cuts it | `truncated_tail` (once, at the end) |
//! | several values back to back, parsed whole | `concatenated_values` (a list; a guess) or `doubled_value` (the same value twice: one) |
//!
//! At a truncated end, open strings are closed (a cut `\u` escape or surrogate pair is
//! dropped), then open arrays and objects; a key
//! without a value and a partial key are dropped; a partial number keeps its digits
//! (`1.` → `1`, `-` is dropped) and a partial keyword that can only be one literal is
//! completed (`tr` → `true`). A truncated value that holds no scalar and no object member
//! (`{` alone, `{"a":`, `[[[`), or that is a bare string never closed (`"}`), is not
//! accepted.

use serde_json::{Map, Number, Value};

mod string;

pub(super) use string::starts_member;

use super::scan::{find_any, find_byte, is_json_ws, skip_json_ws};
use super::{MAX_DEPTH, Repair, RepairKind};

/// A value found by the tolerant parser.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Repaired {
    pub value: Value,
    pub span: (usize, usize),
    pub repairs: Vec<Repair>,
}

/// Why a parser run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stop {
    /// Where the parser gave up.
    pub at: usize,
    /// The value nests deeper than [`MAX_DEPTH`].
    pub too_deep: bool,
}

impl From<usize> for Stop {
    fn from(at: usize) -> Self {
        Stop { at, too_deep: false }
    }
}

/// Bytes of an unquoted key.
pub(super) fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'-')
}

/// Bytes of an unquoted key with punctuation (`te!st`, `last.name`, `@type`): printable
/// ASCII but for JSON's structure, quotes and backslashes.
pub(super) fn is_loose_key_byte(b: u8) -> bool {
    b.is_ascii_graphic()
        && !matches!(b, b'{' | b'}' | b'[' | b']' | b':' | b',' | b'"' | b'\'' | b'`' | b'\\')
}

/// Whether an unquoted key may start with `b`: a key byte, or punctuation that starts no
/// comment, ellipsis or other token of its own.
pub(super) fn starts_bare_key(b: u8) -> bool {
    is_key_byte(b) || (is_loose_key_byte(b) && !matches!(b, b'/' | b'#' | b'<' | b'.' | b'+'))
}

/// Length of the bytes at the start of `rest` that end before a `}` on the same line and
/// hold nothing a member could be made of (no `:`, quote, bracket or comma): garbage
/// after a trailing comma (`{"a": 1, etc}`). Reads at most about 80 bytes.
fn garbage_before_closer(rest: &[u8]) -> Option<usize> {
    let len = rest.iter().take(80).position(|&b| {
        matches!(b, b'}' | b':' | b'"' | b'\'' | b'{' | b'[' | b']' | b',' | b'\n' | b'`')
    })?;
    (len > 0 && rest.get(len) == Some(&b'}')).then_some(len)
}

/// Where a `//` or `#` comment from `start` to `line_end` ends: before a run of closers
/// (and blanks) that ends its line, when the comment holds no opener of its own
/// (`{"a": 1 # note}`: the `}` closes the object, it is not part of the note).
fn comment_end(bytes: &[u8], start: usize, line_end: usize) -> usize {
    let line = bytes.get(start..line_end).unwrap_or_default();
    let trailing =
        line.iter().rev().take_while(|&&b| matches!(b, b'}' | b']' | b' ' | b'\t' | b'\r')).count();
    let body = line.get(..line.len() - trailing).unwrap_or_default();
    let closers = line.get(body.len()..).unwrap_or_default();
    if closers.iter().any(|&b| matches!(b, b'}' | b']'))
        && !body.iter().any(|&b| matches!(b, b'{' | b'['))
    {
        start + body.len()
    } else {
        line_end
    }
}

/// Whether the bytes from `at` to the end are a cut-off `\uXXXX` escape (`\`, `\u`, `\u0`,
/// … with fewer than four hex digits).
fn cut_unicode_escape(rest: &[u8]) -> bool {
    rest.len() < 6
        && rest.first() == Some(&b'\\')
        && rest.get(1).is_none_or(|&b| b == b'u')
        && rest.iter().skip(2).all(u8::is_ascii_hexdigit)
}

/// Whether `value` holds a scalar or an object member anywhere (recursion bounded by
/// [`MAX_DEPTH`]).
pub(super) fn has_content(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(has_content),
        Value::Object(map) => !map.is_empty(),
        _ => true,
    }
}

/// Whether `rest` is a quote followed by blanks and a comma, a closer or the end: a
/// quote that opens nothing.
fn stray_quote(rest: &[u8]) -> bool {
    let after = rest.get(1..).unwrap_or_default();
    let next = after.iter().take(80).find(|&&b| !is_json_ws(b));
    rest.first() == Some(&b'"') && matches!(next, Some(b',' | b'}' | b']'))
}

/// Whether `rest` is a comma and then an opening bracket (blanks allowed): an array
/// where an object wants a key.
fn comma_then_bracket(rest: &[u8]) -> bool {
    let mut bytes = rest.iter().copied().filter(|&b| !is_json_ws(b));
    bytes.next() == Some(b',') && bytes.next() == Some(b'[')
}

/// `[[1, 2], 3, 4]`: one or more arrays, then a run of other values that is the row
/// whose opener is missing; the rows with that run as the last, or the items unchanged.
fn rows_missing_opener(mut items: Vec<Value>) -> Result<Vec<Value>, Vec<Value>> {
    let rows = items.iter().take_while(|v| v.is_array()).count();
    let tail = items.get(rows..).unwrap_or_default();
    if rows == 0 || tail.is_empty() || tail.iter().any(|v| v.is_array() || v.is_object()) {
        return Err(items);
    }
    let row = items.split_off(rows);
    items.push(Value::Array(row));
    Ok(items)
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
    /// Items so far and the closer (`]`, or `)` for a Python tuple).
    Array(Vec<Value>, u8),
    /// The object so far and the key waiting for its value.
    Object(Map<String, Value>, Option<String>),
}

impl Frame {
    fn into_value(self) -> Value {
        match self {
            Frame::Array(items, _) => Value::Array(items),
            Frame::Object(map, _) => Value::Object(map),
        }
    }

    fn closer(&self) -> u8 {
        match self {
            Frame::Array(_, closer) => *closer,
            Frame::Object(..) => b'}',
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
pub(super) struct Parser<'a> {
    text: &'a str,
    /// The bytes of the current run, up to its limit.
    bytes: &'a [u8],
    pos: usize,
    repairs: Vec<Repair>,
    truncated: bool,
    /// Whether the value being read sits inside a container, and inside an object.
    nested: bool,
    in_object: bool,
    /// Whether the string being read is an object key.
    in_key: bool,
    /// How many containers are open around the value being read.
    depth: usize,
    /// Where a whole-text run's value starts (the only place a top-level tuple is read).
    whole_start: Option<usize>,
    /// Open containers, kept between runs for its allocation.
    stack: Vec<Frame>,
    /// Containers open around this parser's text, for a parser reading a fenced block
    /// inside a string (which reads no fenced block itself).
    outer_depth: Option<usize>,
    /// The last search for the end of a fenced block inside a string: where it started
    /// and what it found (see `string.rs`), so that repeated searches stay linear.
    fence_end: Option<(usize, Option<usize>)>,
    /// The closing marker of the last fenced block tried inside a string.
    fence_tried: Option<usize>,
    /// The next value is an object whose opening brace is missing (see [`Self::members`]).
    members: bool,
    /// Whether a comment line ending with closers was seen, and whether such closers are
    /// read as structure (see [`Self::run`]).
    comment_closers: bool,
    closers_in_comments: bool,
}

impl<'a> Parser<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Parser {
            text,
            bytes: &[],
            pos: 0,
            repairs: vec![],
            truncated: false,
            nested: false,
            in_object: false,
            in_key: false,
            depth: 0,
            whole_start: None,
            stack: vec![],
            outer_depth: None,
            fence_end: None,
            fence_tried: None,
            members: false,
            comment_closers: false,
            closers_in_comments: false,
        }
    }

    /// [`Self::run`] over members without their object's opening brace
    /// (`"a": 1, "b": 2}`), read as that object and reported as `missing_brace`; only
    /// where `text[start..limit]` starts with a quoted key and a colon and ends with the
    /// closing brace (prose such as `Note: 50% {` is no object).
    pub(super) fn run_members(
        &mut self,
        start: usize,
        limit: usize,
        whole: bool,
    ) -> Result<Repaired, Stop> {
        let bytes = self.text.as_bytes().get(start..limit).unwrap_or_default();
        let rest = bytes.get(skip_json_ws(bytes, 0)..).unwrap_or_default();
        let closed = rest.iter().rev().find(|&&b| !is_json_ws(b)) == Some(&b'}');
        if !(starts_member(rest, false) && closed) {
            return Err(start.into());
        }
        self.members = true;
        let found = self.run(start, limit, whole);
        self.members = false;
        found
    }

    /// Parses one value from `text[start..limit]` (leading whitespace and comments
    /// skipped); with `whole`, values back to back are read as a list and only
    /// whitespace and comments may follow.
    ///
    /// A `//` or `#` comment runs to the end of its line. When the value then fails or
    /// is cut off, and a comment line ended with closers (`{"a": 1 # note}`), it is read
    /// once more with those closers taken as structure; the second reading is kept when
    /// it completes the value. So each candidate is read at most twice.
    pub(super) fn run(
        &mut self,
        start: usize,
        limit: usize,
        whole: bool,
    ) -> Result<Repaired, Stop> {
        self.closers_in_comments = false;
        self.comment_closers = false;
        let members = self.members;
        let first = self.run_once(start, limit, whole);
        crate::work::count(self.pos.saturating_sub(start));
        let complete = first
            .as_ref()
            .is_ok_and(|f| !f.repairs.iter().any(|r| r.kind == RepairKind::TruncatedTail));
        if complete || !self.comment_closers {
            return first;
        }
        self.closers_in_comments = true;
        self.members = members;
        let second = self.run_once(start, limit, whole);
        crate::work::count(self.pos.saturating_sub(start));
        self.closers_in_comments = false;
        match second {
            Ok(found) if !found.repairs.iter().any(|r| r.kind == RepairKind::TruncatedTail) => {
                Ok(found)
            }
            _ => first,
        }
    }

    fn run_once(&mut self, start: usize, limit: usize, whole: bool) -> Result<Repaired, Stop> {
        self.bytes = self.text.as_bytes().get(..limit).ok_or(start)?;
        self.pos = start;
        self.repairs.clear();
        self.truncated = false;
        self.fence_end = None;
        self.fence_tried = None;
        self.skip_trivia();
        let value_start = self.pos;
        self.whole_start = whole.then_some(value_start);
        let mut value = self.one()?;
        let mut end = self.pos;
        if whole {
            let mut more = vec![];
            loop {
                self.skip_trivia();
                let gap = self.pos;
                if self.peek() == Some(b',') {
                    self.pos += 1;
                    self.skip_trivia();
                }
                if !matches!(self.peek(), Some(b'{' | b'[')) || self.truncated {
                    self.pos = gap;
                    break;
                }
                // An empty value or one cut off by the end (a copy that was cut short)
                // after a complete one is dropped, not read as a second item.
                let (from, noted) = (self.pos, self.repairs.len());
                let next = self.one()?;
                if self.truncated || !has_content(&next) {
                    self.repairs.truncate(noted);
                    self.truncated = false;
                    self.note_span(RepairKind::TrailingFragment, from, self.pos);
                    continue;
                }
                more.push(next);
                end = self.pos;
            }
            if !more.is_empty() {
                let doubled = more.iter().all(|v| *v == value);
                if doubled {
                    self.note_span(RepairKind::DoubledValue, value_start, end);
                } else {
                    self.note_span(RepairKind::ConcatenatedValues, value_start, end);
                    more.insert(0, value);
                    value = Value::Array(more);
                }
            }
            self.skip_trivia();
            if self.pos < self.bytes.len() {
                return Err(self.pos.into());
            }
        }
        // A truncated value must hold something: not an empty container, and not a bare
        // string whose closing quote never came (`"}` after a stray fence opener).
        if self.truncated && (!has_content(&value) || value.is_string()) {
            return Err(end.into());
        }
        Ok(Repaired { value, span: (value_start, end), repairs: std::mem::take(&mut self.repairs) })
    }

    /// One value, with the stack kept between runs.
    fn one(&mut self) -> Result<Value, Stop> {
        let mut stack = std::mem::take(&mut self.stack);
        let value = self.value(&mut stack);
        stack.clear();
        self.stack = stack;
        value
    }

    /// Records a repair about `text[start..self.pos]` (empty when nothing was read yet).
    fn note(&mut self, kind: RepairKind, start: usize) {
        let end = self.pos.max(start);
        self.repairs.push(Repair::at(kind, (start, end)));
    }

    /// Records a repair about `text[start..end]`.
    fn note_span(&mut self, kind: RepairKind, start: usize, end: usize) {
        self.repairs.push(Repair::at(kind, (start, end)));
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    /// The text from `from` to the current position (both on character boundaries).
    fn slice(&self, from: usize) -> &'a str {
        self.text.get(from..self.pos).unwrap_or_default()
    }

    /// Records the truncated tail once.
    fn truncate(&mut self) {
        if !self.truncated {
            self.truncated = true;
            let end = self.bytes.len();
            self.note_span(RepairKind::TruncatedTail, end, end);
        }
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) {
        loop {
            while self.peek().is_some_and(is_json_ws) {
                self.pos += 1;
            }
            let start = self.pos;
            let rest = self.rest();
            let end = match rest {
                [b'/', b'/', ..] | [b'#', ..] => {
                    let line_end = find_byte(b'\n', rest).map_or(self.bytes.len(), |n| start + n);
                    let end = comment_end(self.bytes, start, line_end);
                    self.comment_closers |= end < line_end;
                    if self.closers_in_comments { end } else { line_end }
                }
                [b'<', b'!', b'-', b'-', tail @ ..] => {
                    let found = memchr::memmem::find(tail, b"-->");
                    crate::work::count(found.map_or(tail.len(), |n| n + 3));
                    found.map_or(self.bytes.len(), |n| start + 4 + n + 3)
                }
                [b'/', b'*', tail @ ..] => {
                    let found = memchr::memmem::find(tail, b"*/");
                    crate::work::count(found.map_or(tail.len(), |n| n + 2));
                    found.map_or(self.bytes.len(), |n| start + 2 + n + 2)
                }
                _ => return,
            };
            self.pos = end;
            self.note(RepairKind::Comment, start);
        }
    }

    /// Length of an ellipsis placeholder (`...` or `…`) at the current position.
    fn ellipsis(&self) -> usize {
        let rest = self.rest();
        if rest.starts_with(b"...") {
            rest.iter().take_while(|&&b| b == b'.').count()
        } else if rest.starts_with("…".as_bytes()) {
            "…".len()
        } else {
            0
        }
    }

    /// Whether a fence marker (```` ``` ````) cuts the value off here.
    fn at_fence(&self) -> bool {
        self.rest().starts_with(b"```")
    }

    /// Parses one value with an explicit stack of open containers (empty on entry).
    fn value(&mut self, stack: &mut Vec<Frame>) -> Result<Value, Stop> {
        let mut expect = Expect::Value;
        let mut comma: Option<usize> = None;
        if std::mem::take(&mut self.members) {
            // `"a": 1, "b": 2}`: the members of an object whose opening brace is missing.
            self.note_span(RepairKind::MissingBrace, self.pos, self.pos);
            stack.push(Frame::Object(Map::new(), None));
            expect = Expect::Key;
        }
        loop {
            self.skip_trivia();
            let Some(byte) = self.peek() else {
                return Ok(self.close_truncated(stack)?);
            };
            if self.at_fence() {
                self.bytes = self.bytes.get(..self.pos).unwrap_or_default();
                return Ok(self.close_truncated(stack)?);
            }
            let placeholder = self.ellipsis();
            if placeholder > 0 && matches!(expect, Expect::Value | Expect::Key) && !stack.is_empty()
            {
                let start = self.pos;
                self.pos += placeholder;
                self.note(RepairKind::Ellipsis, start);
                if let Some(Frame::Object(_, pending)) = stack.last_mut() {
                    *pending = None;
                }
                comma = None;
                expect = Expect::Next;
                continue;
            }
            let done = match expect {
                Expect::Value => match byte {
                    b'{' | b'[' | b'(' => {
                        if stack.len() + self.outer_depth.unwrap_or(0) >= MAX_DEPTH {
                            return Err(Stop { at: self.pos, too_deep: true });
                        }
                        if byte == b'(' {
                            if stack.is_empty() && self.whole_start != Some(self.pos) {
                                return Err(self.pos.into());
                            }
                            self.note_span(RepairKind::PythonLiteral, self.pos, self.pos + 1);
                        }
                        self.pos += 1;
                        comma = None;
                        match byte {
                            b'{' => {
                                stack.push(Frame::Object(Map::new(), None));
                                expect = Expect::Key;
                            }
                            b'[' => stack.push(Frame::Array(vec![], b']')),
                            _ => stack.push(Frame::Array(vec![], b')')),
                        }
                        continue;
                    }
                    b']' | b')' if matches!(stack.last(), Some(Frame::Array(_, c)) if *c == byte) =>
                    {
                        if let Some(at) = comma.take() {
                            self.note_span(RepairKind::TrailingComma, at, at + 1);
                        }
                        self.pos += 1;
                        stack.pop().map(Frame::into_value)
                    }
                    b'}' | b',' if matches!(stack.last(), Some(Frame::Object(..))) => {
                        // `{"a": }`: a key without its value reads as `null`.
                        self.note_span(RepairKind::MissingValue, self.pos, self.pos);
                        Some(Value::Null)
                    }
                    // `[1,, 2]`: a doubled comma.
                    b',' if comma.is_some() => {
                        self.note_span(RepairKind::TrailingComma, self.pos, self.pos + 1);
                        self.pos += 1;
                        continue;
                    }
                    _ => {
                        comma = None;
                        self.nested = !stack.is_empty();
                        self.depth = stack.len();
                        self.in_object = matches!(stack.last(), Some(Frame::Object(..)));
                        let (at, before) = (self.pos, self.truncated);
                        match self.scalar()? {
                            Token::Done(Value::String(text))
                                if !before && self.truncated && !stack.is_empty() =>
                            {
                                match self.close_unclosed_string(stack, at, text) {
                                    Ok(done) => return Ok(done),
                                    Err(text) => Some(Value::String(text)),
                                }
                            }
                            Token::Done(value) => Some(value),
                            Token::Truncated => return Ok(self.close_truncated(stack)?),
                        }
                    }
                },
                Expect::Key => {
                    if byte == b'}' {
                        if let Some(at) = comma.take() {
                            self.note_span(RepairKind::TrailingComma, at, at + 1);
                        }
                        self.pos += 1;
                        stack.pop().map(Frame::into_value)
                    } else if matches!(byte, b']' | b')') {
                        self.mismatched(stack, byte);
                        expect = Expect::Next;
                        continue;
                    } else if byte == b',' && comma.is_some() {
                        // `{"a": 1,, "b": 2}`: a doubled comma.
                        self.note_span(RepairKind::TrailingComma, self.pos, self.pos + 1);
                        self.pos += 1;
                        continue;
                    } else if comma.is_some()
                        && let Some(len) = garbage_before_closer(self.rest())
                    {
                        // `{"a": 1, etc}`: garbage after a trailing comma, dropped.
                        self.note_span(RepairKind::StrayText, self.pos, self.pos + len);
                        self.pos += len;
                        continue;
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
                Expect::Next => {
                    let Some(frame) = stack.last() else { return Err(self.pos.into()) };
                    let object = matches!(frame, Frame::Object(..));
                    match byte {
                        b',' => {
                            comma = Some(self.pos);
                            self.pos += 1;
                            expect = if object { Expect::Key } else { Expect::Value };
                            continue;
                        }
                        b if b == frame.closer() => {
                            self.pos += 1;
                            let closed = stack.pop().map(Frame::into_value);
                            // `{"a": 1}, "b": 2}`: the outermost object closed too soon.
                            if stack.is_empty()
                                && object
                                && starts_member(self.rest(), true)
                                && let Some(Value::Object(map)) = closed
                            {
                                let at = self.pos - 1;
                                self.note_span(RepairKind::PrematureCloser, at, at + 1);
                                stack.push(Frame::Object(map, None));
                                continue;
                            }
                            // `{"rows": [[1, 2], 3, 4], [5, 6]]}`: a list of rows closed by
                            // the closer of a row whose opener is missing.
                            if !object
                                && matches!(stack.last(), Some(Frame::Object(..)))
                                && comma_then_bracket(self.rest())
                                && let Some(Value::Array(items)) = closed
                            {
                                // Rows followed by more rows: only the list closed early.
                                let at = self.pos - 1;
                                let (items, kind) = match rows_missing_opener(items) {
                                    Ok(rows) => (rows, RepairKind::MissingOpener),
                                    Err(items) => (items, RepairKind::PrematureCloser),
                                };
                                if items.last().is_some_and(Value::is_array) {
                                    self.note_span(kind, at, at + 1);
                                    stack.push(Frame::Array(items, b']'));
                                    continue;
                                }
                                Some(Value::Array(items))
                            } else {
                                closed
                            }
                        }
                        b'}' | b']' | b')' => {
                            self.mismatched(stack, byte);
                            continue;
                        }
                        // `"a": "x"⏎",}`: a lone quote before a comma or closer.
                        b'"' if stray_quote(self.rest()) => {
                            self.note_span(RepairKind::StrayText, self.pos, self.pos + 1);
                            self.pos += 1;
                            continue;
                        }
                        _ if self.starts_next(object) => {
                            self.note_span(RepairKind::MissingComma, self.pos, self.pos);
                            expect = if object { Expect::Key } else { Expect::Value };
                            continue;
                        }
                        _ => return Err(self.pos.into()),
                    }
                }
            };
            let Some(value) = done else { return Err(self.pos.into()) };
            if let Some(done) = self.attach(stack, value) {
                return Ok(done);
            }
            expect = Expect::Next;
        }
    }

    /// Adds a finished value to the innermost container, or returns it at the top.
    fn attach(&mut self, stack: &mut [Frame], value: Value) -> Option<Value> {
        match stack.last_mut() {
            None => Some(value),
            Some(Frame::Array(items, _)) => {
                items.push(value);
                None
            }
            Some(Frame::Object(map, pending)) => {
                if let Some(key) = pending.take() {
                    map.insert(key, value);
                }
                None
            }
        }
    }

    /// A closer that does not match the innermost container: when a container of its kind
    /// is open, the ones inside it are closed (the closer is read again); otherwise it is
    /// skipped.
    fn mismatched(&mut self, stack: &mut Vec<Frame>, byte: u8) {
        let at = self.pos;
        self.note_span(RepairKind::MismatchedCloser, at, at + 1);
        if stack.iter().any(|f| f.closer() == byte) {
            if let Some(value) = stack.pop().map(Frame::into_value) {
                // Never the last frame: a deeper one has this closer.
                let _ = self.attach(stack, value);
            }
        } else {
            self.pos += 1;
        }
    }

    /// Whether the byte at the current position starts another member (`object`) or
    /// item without a comma before it.
    fn starts_next(&self, object: bool) -> bool {
        let Some(b) = self.peek() else { return false };
        let rest = self.rest();
        if rest.starts_with("“".as_bytes()) || rest.starts_with("‘".as_bytes()) {
            return true;
        }
        if object {
            matches!(b, b'"' | b'\'') || b.is_ascii_alphabetic()
        } else {
            matches!(b, b'"' | b'\'' | b'{' | b'[' | b'(' | b'-' | b'+' | b'.' | b'0'..=b'9')
                || b.is_ascii_alphabetic()
        }
    }

    /// The input ended: closes every open container, dropping a key without a value.
    fn close_truncated(&mut self, stack: &mut Vec<Frame>) -> Result<Value, usize> {
        let mut carry: Option<Value> = None;
        while let Some(frame) = stack.pop() {
            self.truncate();
            carry = Some(match frame {
                Frame::Array(mut items, _) => {
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

    /// A string opened at `at` ran to the end of the input as `text`. When the input ends
    /// with the closers of every open container, innermost first (blanks between, a
    /// closing fence after them, a stray `'` before them in a `"` string), and nothing
    /// else is left in the string, they were meant to close the value
    /// (`{"time": "12:20}`): the string ends before them and the containers are closed,
    /// reported as `unclosed_string` (as `missing_quote`, a guess, when one closer closes
    /// one container: the closer may be the string's own text cut off). Not when the string's own text leaves a bracket open
    /// (`{"a": "if (x) {y}`: the closer may be its own) or would be empty. Returns the
    /// finished value, or the text unchanged.
    fn close_unclosed_string(
        &mut self,
        stack: &mut Vec<Frame>,
        at: usize,
        text: String,
    ) -> Result<Value, String> {
        let bytes = self.bytes;
        let blank_back = |mut end: usize| {
            while end > at && bytes.get(end - 1).is_some_and(|&b| is_json_ws(b)) {
                end -= 1;
            }
            end
        };
        let mut end = blank_back(bytes.len());
        if bytes.get(..end).is_some_and(|b| b.ends_with(b"```")) && end >= at + 3 {
            end = blank_back(end - 3);
        }
        // The outermost container's closer comes last.
        for frame in stack.iter() {
            end = blank_back(end);
            if end <= at + 1 || bytes.get(end - 1) != Some(&frame.closer()) {
                return Err(text);
            }
            end -= 1;
        }
        let mut cut = blank_back(end);
        if bytes.get(at) == Some(&b'"') && cut > at + 1 && bytes.get(cut - 1) == Some(&b'\'') {
            cut -= 1;
        }
        let tail = self.text.get(cut..bytes.len()).unwrap_or_default();
        let Some(kept) = text.strip_suffix(tail).filter(|kept| !kept.trim().is_empty()) else {
            return Err(text);
        };
        let (mut curly, mut square) = (0usize, 0usize);
        for b in kept.bytes() {
            match b {
                b'{' => curly += 1,
                b'}' => curly = curly.saturating_sub(1),
                b'[' => square += 1,
                b']' => square = square.saturating_sub(1),
                _ => {}
            }
        }
        if curly > 0 || square > 0 {
            return Err(text);
        }
        let mut value = Value::String(kept.to_owned());
        self.truncated = false;
        self.repairs.retain(|r| {
            r.kind != RepairKind::TruncatedTail
                && !(r.kind == RepairKind::RawControlCharacter && r.span.0 >= cut)
        });
        // One closer may as well be the string's own text cut off (`{"a": "b}`): a guess.
        // Two or more that balance the nesting are structure.
        let kind =
            if stack.len() > 1 { RepairKind::UnclosedString } else { RepairKind::MissingQuote };
        self.note_span(kind, cut, bytes.len());
        self.pos = bytes.len();
        while let Some(mut frame) = stack.pop() {
            match &mut frame {
                Frame::Array(items, _) => items.push(value),
                Frame::Object(map, pending) => {
                    if let Some(key) = pending.take() {
                        map.insert(key, value);
                    }
                }
            }
            value = frame.into_value();
        }
        Ok(value)
    }

    /// A string, number, literal or (inside a container) unquoted text.
    fn scalar(&mut self) -> Result<Token<Value>, usize> {
        let start = self.pos;
        match self.peek() {
            Some(b'-' | b'+' | b'.' | b'0'..=b'9') => self.number(start),
            Some(b) if b.is_ascii_alphabetic() => self.word(start),
            _ => match self.fenced_json() {
                Some(value) => Ok(Token::Done(value)),
                None => Ok(Token::Done(Value::String(self.string()?))),
            },
        }
    }

    /// Whether the byte ends a bare token.
    fn ends_token(b: u8) -> bool {
        is_json_ws(b) || matches!(b, b',' | b'}' | b']' | b')' | b':' | b'"' | b'`')
    }

    fn number(&mut self, start: usize) -> Result<Token<Value>, usize> {
        while self
            .peek()
            .is_some_and(|b| matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-' | b'_'))
        {
            self.pos += 1;
        }
        if self.slice(start) == "-" && self.rest().starts_with(b"Infinity") {
            self.pos += "Infinity".len();
            self.note(RepairKind::JavascriptLiteral, start);
            return Ok(Token::Done(Value::Null));
        }
        let at_end = self.pos == self.bytes.len();
        // `1/3`, `57eeeeb1-…`: text that starts like a number.
        if !at_end && self.peek().is_some_and(|b| !Self::ends_token(b)) {
            if self.nested {
                return self.unquoted(start);
            }
            return Err(start);
        }
        let raw = self.slice(start);
        if let Ok(number) = raw.parse::<Number>() {
            return Ok(Token::Done(Value::Number(number)));
        }
        let mut normal = raw.replace('_', "");
        if let Some(rest) = normal.strip_prefix('+') {
            normal = rest.to_owned();
        }
        for (from, to) in [("-.", "-0."), (".", "0.")] {
            if normal.starts_with(from) {
                normal = format!("{to}{}", &normal[from.len()..]);
                break;
            }
        }
        if at_end {
            // Truncated inside the number: keep the digits read.
            let digits = normal.trim_end_matches(['.', 'e', 'E', '+', '-']);
            self.truncate();
            return match digits.parse::<Number>() {
                Ok(number) if !digits.is_empty() => Ok(Token::Done(Value::Number(number))),
                _ => Ok(Token::Truncated),
            };
        }
        if normal.ends_with('.') {
            normal.push('0');
        }
        match normal.parse::<Number>() {
            Ok(number) => {
                self.note(RepairKind::NumberFormat, start);
                Ok(Token::Done(Value::Number(number)))
            }
            Err(_) if self.nested => self.unquoted(start),
            Err(_) => Err(start),
        }
    }

    fn word(&mut self, start: usize) -> Result<Token<Value>, usize> {
        while self.peek().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
            self.pos += 1;
        }
        let word = self.slice(start);
        let at_end = self.pos == self.bytes.len();
        let literal = match word {
            "true" => Some((Value::Bool(true), None)),
            "false" => Some((Value::Bool(false), None)),
            "null" => Some((Value::Null, None)),
            "True" => Some((Value::Bool(true), Some(RepairKind::PythonLiteral))),
            "False" => Some((Value::Bool(false), Some(RepairKind::PythonLiteral))),
            "None" => Some((Value::Null, Some(RepairKind::PythonLiteral))),
            "undefined" | "NaN" | "Infinity" => {
                Some((Value::Null, Some(RepairKind::JavascriptLiteral)))
            }
            _ => match word.to_ascii_lowercase().as_str() {
                "true" => Some((Value::Bool(true), Some(RepairKind::LiteralCase))),
                "false" => Some((Value::Bool(false), Some(RepairKind::LiteralCase))),
                "null" => Some((Value::Null, Some(RepairKind::LiteralCase))),
                _ => None,
            },
        };
        let next_ends = at_end || self.peek().is_some_and(Self::ends_token);
        if let Some((value, kind)) = literal
            && next_ends
        {
            if let Some(kind) = kind {
                self.note(kind, start);
            }
            return Ok(Token::Done(value));
        }
        if at_end {
            // Truncated inside a keyword that can only be one literal.
            let completed =
                ["true", "false", "null"].into_iter().find(|full| full.starts_with(word));
            self.truncate();
            return Ok(match completed {
                Some("true") => Token::Done(Value::Bool(true)),
                Some("false") => Token::Done(Value::Bool(false)),
                Some(_) => Token::Done(Value::Null),
                None if self.nested => Token::Done(Value::String(word.to_owned())),
                None => Token::Truncated,
            });
        }
        if self.nested {
            return self.unquoted(start);
        }
        Err(start)
    }

    /// Unquoted text inside a container, from `start` up to `,` `}` `]` or the end of the
    /// line (blanks trimmed); `"` ends it too in an object, where a key may follow.
    fn unquoted(&mut self, start: usize) -> Result<Token<Value>, usize> {
        self.pos = start;
        let stops: &[u8] = if self.in_object { b",}]\n\r\"" } else { b",}])\n\r" };
        while self.peek().is_some_and(|b| !stops.contains(&b)) && !self.at_fence() {
            self.pos += 1;
        }
        // `{"a": ipsum, sic, datum.", "b": 1}`: the opening quote is missing and the
        // closing one ends the value further on its line.
        if self.in_object && self.peek() == Some(b',') {
            // The next quote, if no line break comes first (reads up to that quote only).
            let rest = self.bytes.get(start..).unwrap_or_default();
            let quote = find_any([b'"', b'\n'], rest).filter(|&at| rest.get(at) == Some(&b'"'));
            if let Some(quote) = quote
                && rest.get(quote + 1..).is_some_and(|after| {
                    matches!(after.iter().find(|&&b| !is_json_ws(b)), None | Some(b',' | b'}'))
                })
            {
                self.pos = start + quote;
                let text = self.slice(start).to_owned();
                self.pos += 1;
                self.note(RepairKind::MissingQuote, start);
                return Ok(Token::Done(Value::String(text)));
            }
        }
        let text = self.slice(start).trim_end();
        // `["a" comment" ]`: in an array, a word closed by a quote lost its opening one.
        if !self.in_object
            && let Some(word) = text.strip_suffix('"')
            && !word.is_empty()
            && !word.contains('"')
        {
            self.pos = start + text.len();
            self.note(RepairKind::MissingQuote, start);
            return Ok(Token::Done(Value::String(word.to_owned())));
        }
        if text.is_empty() {
            return Err(start);
        }
        self.pos = start + text.len();
        self.note(RepairKind::UnquotedString, start);
        Ok(Token::Done(Value::String(text.to_owned())))
    }

    /// An object key: a string in any accepted quotes, or a bare word.
    fn key(&mut self) -> Result<Token<String>, usize> {
        let start = self.pos;
        if self.peek().is_some_and(starts_bare_key) {
            while self.peek().is_some_and(is_loose_key_byte) {
                self.pos += 1;
            }
            if self.pos == self.bytes.len() {
                self.truncate();
                return Ok(Token::Truncated);
            }
            // `{"a": 1, COMMENT "b": 2}`: a stray word before a quoted key is dropped.
            let word_end = self.pos;
            let next = self.bytes.get(word_end..).unwrap_or_default();
            if next.first().is_some_and(|&b| is_json_ws(b)) && starts_member(next, false) {
                self.note_span(RepairKind::StrayText, start, word_end);
                while self.peek().is_some_and(is_json_ws) {
                    self.pos += 1;
                }
                return self.key();
            }
            self.note(RepairKind::UnquotedKey, start);
            return Ok(Token::Done(self.slice(start).to_owned()));
        }
        let before = self.truncated;
        self.in_object = false;
        self.in_key = true;
        let key = self.string();
        self.in_key = false;
        let key = key?;
        // A line break inside a key means the quotes are not what they seem; one at its
        // end is a slip (reported as a raw control character).
        let key = match key.trim_end_matches(['\n', '\r']) {
            trimmed if trimmed.contains('\n') => return Err(start),
            trimmed => trimmed.to_owned(),
        };
        // A key cut off by the end of the input is dropped.
        if self.truncated && !before { Ok(Token::Truncated) } else { Ok(Token::Done(key)) }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Parses `text` (values back to back read whole) and renders the value and the
    /// repair kinds, or the error byte.
    pub(super) fn check(text: &str, want: &str) {
        let got = match Parser::new(text).run(0, text.len(), true) {
            Ok(found) => {
                let kinds: Vec<&str> = found.repairs.iter().map(|r| r.kind.as_str()).collect();
                format!("{} {}", found.value, kinds.join(","))
            }
            Err(stop) => format!("error at {}", stop.at),
        };
        assert_eq!(got.trim_end(), want, "input {text:?}");
    }

    /// Parses one value from the start, ignoring what follows it.
    pub(super) fn check_prefix(text: &str, want: &str) {
        let got = match Parser::new(text).run(0, text.len(), false) {
            Ok(found) => {
                let kinds: Vec<&str> = found.repairs.iter().map(|r| r.kind.as_str()).collect();
                format!("{} {}", found.value, kinds.join(","))
            }
            Err(stop) => format!("error at {}", stop.at),
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
        check_prefix("  \"s\" trailing", "\"s\"");
    }

    #[test]
    fn each_slip_is_repaired_and_reported() {
        check("[1, 2,]", "[1,2] trailing_comma");
        check(
            "{'a': 'it''s'}",
            "{\"a\":\"it''s\"} single_quotes,unescaped_quote,unescaped_quote,single_quotes",
        );
        check("{a: 1, b_2: 2}", "{\"a\":1,\"b_2\":2} unquoted_key,unquoted_key");
        check("{\"a\": 1 // c\n /* d */ # e\n}", "{\"a\":1} comment,comment,comment");
        check("{\"a\": \"x\ny\"}", "{\"a\":\"x\\ny\"} raw_control_character");
        check(
            "[True, False, None]",
            "[true,false,null] python_literal,python_literal,python_literal",
        );
        check("(1, 2)", "[1,2] python_literal");
        check("[TRUE, Null]", "[true,null] literal_case,literal_case");
        check(
            "[undefined, NaN, Infinity, -Infinity]",
            "[null,null,null,null] javascript_literal,javascript_literal,javascript_literal,javascript_literal",
        );
        check("{“a”: ‘b’}", "{\"a\":\"b\"} smart_quotes,smart_quotes");
        check(
            r#"{"a": "say "hi" now"}"#,
            r#"{"a":"say \"hi\" now"} unescaped_quote,unescaped_quote"#,
        );
        check(r#"{"a": "Porto, "b": 1}"#, r#"{"a":"Porto","b":1} missing_quote"#);
        check(r#"{"a": one, two.", "b": 1}"#, r#"{"a":"one, two.","b":1} missing_quote"#);
        check(r#"{"a": 1, NOTE "b": 2}"#, r#"{"a":1,"b":2} stray_text"#);
        check(
            r##"{""a"": ''x y'', ""b"": 2}"##,
            r#"{"a":"x y","b":2} doubled_quotes,doubled_quotes,doubled_quotes"#,
        );
        // JSON quoted inside a string value: a quote before `:` never ends a value, and a
        // closer followed by prose that runs into another quote and closer is text.
        check(
            r#"{"note": "the reply was {"ok": true}, not what we asked", "n": 1}"#,
            r#"{"n":1,"note":"the reply was {\"ok\": true}, not what we asked"} unescaped_quote,unescaped_quote"#,
        );
        check(
            r#"{"why": "input {"x": "y"}, sadly"}"#,
            r#"{"why":"input {\"x\": \"y\"}, sadly"} unescaped_quote,unescaped_quote,unescaped_quote,unescaped_quote"#,
        );
        // But a closer followed by another value or member is the end.
        check(r#"{"a": "x"}, {"b": "y"}"#, r#"[{"a":"x"},{"b":"y"}] concatenated_values"#);
        check(r#"["C:\Users", "\ud800"]"#, r#"["C:\\Users","�"] invalid_escape,invalid_escape"#);
        check(r#"{"a": 1 "b": 2}"#, r#"{"a":1,"b":2} missing_comma"#);
        check(r#"["x" "y" 3]"#, r#"["x","y",3] missing_comma,missing_comma"#);
        check(
            r#"{"a": in progress, "b": 57e-x1}"#,
            r#"{"a":"in progress","b":"57e-x1"} unquoted_string,unquoted_string"#,
        );
        check(r#"{"a": [1, 2}"#, r#"{"a":[1,2]} mismatched_closer"#);
        check(r#"[{"a": 1}}, 2]"#, r#"[{"a":1},2] mismatched_closer"#);
        check(r#"{"a": 1}, "b": 2}"#, r#"{"a":1,"b":2} premature_closer"#);
        check(r#"{"a": [1, ...], ...}"#, r#"{"a":[1]} ellipsis,ellipsis"#);
        check("[1, …]", "[1] ellipsis");
        check(r#"{\"a\": \"b\"}"#, r#"{"a":"b"} escaped_json,escaped_json"#);
        check(
            r#"[.5, 1., +1, 1_000, -.5]"#,
            "[0.5,1.0,1,1000,-0.5] number_format,number_format,number_format,number_format,number_format",
        );
        check(r#"{"a": }"#, r#"{"a":null} missing_value"#);
        check(r#"{"a": 1}, {"b": 2}"#, r#"[{"a":1},{"b":2}] concatenated_values"#);
        check(r#"[1] [1]"#, "[1] doubled_value");
    }

    #[test]
    fn rows_and_stray_quotes() {
        // A row without its opener: the list's closer is read as the row's.
        check(
            r#"{"rows": [[1, 2], 3, 4], [5, 6]], "n": 1}"#,
            r#"{"n":1,"rows":[[1,2],[3,4],[5,6]]} missing_opener"#,
        );
        check(r#"{"rows": [[1], [2]], [3]]}"#, r#"{"rows":[[1],[2],[3]]} premature_closer"#);
        // Not rows: the object wants a key there.
        check(r#"{"a": [1, 2], [3]}"#, "error at 14");
        // A lone quote before a comma or closer is dropped.
        check(r#"{"a": 1 "}"#, r#"{"a":1} stray_text"#);
        check(
            "{\"a\": \"hi\n\"\n\",}",
            r#"{"a":"hi"} raw_control_character,trailing_line_break,stray_text,trailing_comma"#,
        );
        check(r#"["a" ", "b"]"#, r#"["a","b"] stray_text"#);
    }

    #[test]
    fn unclosed_strings_end_before_the_closers_that_balance_them() {
        check(r#"{"key": ["value]}"#, r#"{"key":["value"]} unclosed_string"#);
        check("{\"a\": [{\"b\": \"x}]}\n```", r#"{"a":[{"b":"x"}]} unclosed_string"#);
        check(r#"{"a": [{"t": "water'}]}"#, r#"{"a":[{"t":"water"}]} unclosed_string"#);
        // One closer for one container: the closer may be the text cut off (a guess).
        check(r#"{"time": "12:20}"#, r#"{"time":"12:20"} missing_quote"#);
        check("{\"k\": \"v}\n", r#"{"k":"v"} missing_quote"#);
        // Not when the closers do not balance the nesting, the text opens a bracket of
        // its own, or nothing would be left.
        check(r#"{"a": {"b": "x}"#, r#"{"a":{"b":"x}"}} truncated_tail"#);
        check(r#"{"a": "if (x) {y}"#, r#"{"a":"if (x) {y}"} truncated_tail"#);
        check(r#"{"a": "}"#, r#"{"a":"}"} truncated_tail"#);
        check(r#"{"a": ["x]]}"#, r#"{"a":["x]"]} unclosed_string"#);
    }

    #[test]
    fn round_two_repairs() {
        // A missing value is `null`.
        check(
            r#"{"k": , "b": 1, "e":}"#,
            r#"{"b":1,"e":null,"k":null} missing_value,missing_value"#,
        );
        // A `#` or `//` comment that runs into the closers that end its line.
        check("{\"a\": 1 # note}\nthanks", r#"{"a":1} comment,missing_comma,truncated_tail"#);
        check_prefix("{\"a\": 1 # note}\nthanks", r#"{"a":1} comment"#);
        check_prefix("{\"a\": [1, 2 // two]}\nok", r#"{"a":[1,2]} comment"#);
        // Closers in a comment stay comment when the value completes without them.
        check("{\"a\": [ // list ]\n 1]}", r#"{"a":[1]} comment"#);
        // A `\u` escape or a surrogate pair cut off by the end is dropped.
        check(r#"{"a": "caf\u00"#, r#"{"a":"caf"} truncated_tail"#);
        check(r#"{"a": "x\ud83d\ude"#, r#"{"a":"x"} truncated_tail"#);
        check(r#"{"a": "x\"#, r#"{"a":"x"} truncated_tail"#);
        // Members without the opening brace (only through `run_members`).
        let text = r#""a": 1, "b": [2]}"#;
        let found = Parser::new(text).run_members(0, text.len(), true).map(|f| f.value);
        assert_eq!(found, Ok(json!({"a": 1, "b": [2]})));
        // Refused before any parsing, at the start: prose, and members without their `}`.
        let refused = Err(Stop { at: 0, too_deep: false });
        assert_eq!(Parser::new("Note: 50% {").run_members(0, 11, true), refused);
        assert_eq!(Parser::new(r#""a": 1"#).run_members(0, 6, true), refused);
        // Keys with punctuation, backtick strings, HTML comments, garbage after a comma.
        check(
            "{te!st: 1, last.name: 2, @id: 3}",
            r#"{"@id":3,"last.name":2,"te!st":1} unquoted_key,unquoted_key,unquoted_key"#,
        );
        check(
            "{\"a\": `x\ny`, \"b\": `it\\`s`}",
            r#"{"a":"x\ny","b":"it`s"} backtick_quotes,backtick_quotes"#,
        );
        check("{\"a\": 1, <!-- c --> \"b\": 2} <!-- d", r#"{"a":1,"b":2} comment,comment"#);
        check(r#"{"a": 1, "b": 2, etc.}"#, r#"{"a":1,"b":2} stray_text,trailing_comma"#);
        check(r#"{"a": 1,, "b": 2}"#, r#"{"a":1,"b":2} trailing_comma"#);
        check("[1,, 2]", "[1,2] trailing_comma");
        // An empty or cut-off value after a complete one is dropped.
        check(r#"{"a": 2}{}"#, r#"{"a":2} trailing_fragment"#);
        check(r#"{"a": 2}, []"#, r#"{"a":2} trailing_fragment"#);
        check("{\"a\": 2}\n{\"a\": 2, \"b", r#"{"a":2} trailing_fragment"#);
        check(r#"{"a": 2} {"b": 3}"#, r#"[{"a":2},{"b":3}] concatenated_values"#);
        // Inner quotes of code: pairs across lines; a quoted word no `:` follows is no key.
        check(
            "{\"code\": \"f():\n  print(\"hi\")\", \"n\": 1}",
            r#"{"code":"f():\n  print(\"hi\")","n":1} raw_control_character,unescaped_quote,unescaped_quote"#,
        );
        check(
            r#"{"code": "log("a", "b");"}"#,
            r#"{"code":"log(\"a\", \"b\");"} unescaped_quote,unescaped_quote,unescaped_quote,unescaped_quote"#,
        );
    }

    #[test]
    fn truncated_tails_are_closed() {
        check(r#"{"a": [1, {"b": "te"#, r#"{"a":[1,{"b":"te"}]} truncated_tail"#);
        check(r#"{"a": 1, "b""#, r#"{"a":1} truncated_tail"#);
        check(r#"{"a": 1, "b":"#, r#"{"a":1} truncated_tail"#);
        check(r#"{"a": 1, "b"#, r#"{"a":1} truncated_tail"#);
        check(r#"{"a": tr"#, r#"{"a":true} truncated_tail"#);
        check(r#"{"a": nu"#, r#"{"a":null} truncated_tail"#);
        check(r#"{"a": 1, "b": xy"#, r#"{"a":1,"b":"xy"} truncated_tail"#);
        check(r#"[1, 2."#, "[1,2] truncated_tail");
        check(r#"[1, 23"#, "[1,23] truncated_tail");
        check(r#"[1, -"#, "[1] truncated_tail");
        check(r#"["a","#, r#"["a"] truncated_tail"#);
        check(r#"["a\"#, r#"["a"] truncated_tail"#);
        check("{\"a\": \"b\", \"n\": 1```", r#"{"a":"b","n":1} truncated_tail"#);
        check("{", "error at 1");
        // A bare string never closed is not a value (`"}` after a stray fence opener).
        check("\"}", "error at 2");
        check(r#"["}"#, r#"["}"] truncated_tail"#);
        check("", "error at 0");
        check("{a", "error at 2");
    }

    #[test]
    fn hard_errors() {
        check("{\"a\" 1}", "error at 5");
        check("{x}", "error at 2");
        check("nope", "error at 4");
        check("[1, }", "error at 4");
        check("{\"line\nbreak\": 1}", "error at 1");
        check("x (1, 2)", "error at 0");
        let deep = "[".repeat(MAX_DEPTH + 1);
        check(&deep, &format!("error at {MAX_DEPTH}"));
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(Parser::new(&ok).run(0, ok.len(), true).is_ok());
        assert_eq!(Parser::new("[1] x").run(0, 5, true).map_err(|s| s.at), Err(4));
        let found = Parser::new("[1] // x").run(0, 8, true).map(|r| r.value);
        assert_eq!(found, Ok(json!([1])));
    }

    /// The slips the sloppy writer can make, one bit each.
    const SLIPS: [RepairKind; 12] = [
        RepairKind::TrailingComma,
        RepairKind::SingleQuotes,
        RepairKind::UnquotedKey,
        RepairKind::Comment,
        RepairKind::PythonLiteral,
        RepairKind::SmartQuotes,
        RepairKind::MissingComma,
        RepairKind::JavascriptLiteral,
        RepairKind::LiteralCase,
        RepairKind::NumberFormat,
        RepairKind::Ellipsis,
        RepairKind::UnquotedString,
    ];

    /// Records a slip made (when it is on); returns whether it is.
    fn mark(made: &mut u16, bit: Option<u16>) -> bool {
        if let Some(bit) = bit {
            *made |= bit;
        }
        bit.is_some()
    }

    /// Writes `value` as an LLM might, making each slip of `slips` wherever it applies,
    /// and records which slips it made.
    fn sloppy(value: &Value, slips: u16, made: &mut u16, out: &mut String) {
        let on = |kind: RepairKind| {
            let bit = SLIPS.iter().position(|&k| k == kind).map_or(0, |i| 1u16 << i);
            (slips & bit != 0).then_some(bit)
        };
        match value {
            Value::Null => out.push_str(if mark(made, on(RepairKind::JavascriptLiteral)) {
                "undefined"
            } else if mark(made, on(RepairKind::PythonLiteral)) {
                "None"
            } else if mark(made, on(RepairKind::LiteralCase)) {
                "NULL"
            } else {
                "null"
            }),
            Value::Bool(b) => {
                let python = if *b { "True" } else { "False" };
                let upper = if *b { "TRUE" } else { "FALSE" };
                out.push_str(if mark(made, on(RepairKind::PythonLiteral)) {
                    python
                } else if mark(made, on(RepairKind::LiteralCase)) {
                    upper
                } else if *b {
                    "true"
                } else {
                    "false"
                })
            }
            Value::Number(n) => {
                if n.as_u64().is_some() && mark(made, on(RepairKind::NumberFormat)) {
                    out.push('+');
                }
                out.push_str(&n.to_string());
            }
            Value::String(s) => {
                if !s.is_empty() && !s.contains(' ') && mark(made, on(RepairKind::UnquotedString)) {
                    // Only inside containers, where the writer always is here; a leading
                    // letter keeps it from reading as a number or a literal.
                    out.push('w');
                    out.push_str(s);
                } else if mark(made, on(RepairKind::SingleQuotes)) {
                    out.push_str(&format!("'{s}'"));
                } else if mark(made, on(RepairKind::SmartQuotes)) {
                    out.push_str(&format!("“{s}”"));
                } else {
                    out.push_str(&format!("\"{s}\""));
                }
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    // After a string, a missing comma reads as a quote inside it unless
                    // another string or a container follows (see the unit tests).
                    let after_string = i > 0 && items.get(i - 1).is_some_and(Value::is_string);
                    if i > 0 {
                        let missing = !after_string && mark(made, on(RepairKind::MissingComma));
                        out.push_str(if missing { " " } else { ", " });
                    }
                    sloppy(item, slips, made, out);
                }
                if !items.is_empty() && mark(made, on(RepairKind::Ellipsis)) {
                    out.push_str(", ...");
                }
                if !items.is_empty() && mark(made, on(RepairKind::TrailingComma)) {
                    out.push(',');
                }
                out.push(']');
            }
            Value::Object(map) => {
                out.push('{');
                for (i, (key, item)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push_str(if mark(made, on(RepairKind::Comment)) {
                            ", // note\n"
                        } else {
                            ", "
                        });
                    }
                    if mark(made, on(RepairKind::UnquotedKey)) {
                        out.push_str(key);
                    } else {
                        out.push_str(&format!("\"{key}\""));
                    }
                    out.push_str(": ");
                    sloppy(item, slips, made, out);
                }
                if !map.is_empty() && mark(made, on(RepairKind::TrailingComma)) {
                    out.push(',');
                }
                out.push('}');
            }
        }
    }

    /// The value the sloppy writer's reader must find: what it wrote, with unquoted
    /// strings read back with their `w` and literals of JavaScript read as `null`.
    fn expected(value: &Value, slips: u16) -> Value {
        let unquoted = slips & (1 << 11) != 0;
        match value {
            Value::String(s) if unquoted && !s.is_empty() && !s.contains(' ') => {
                Value::String(format!("w{s}"))
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| expected(v, slips)).collect()),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), expected(v, slips))).collect())
            }
            other => other.clone(),
        }
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            "[a-z ]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z_]{1,5}", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    fn container() -> impl Strategy<Value = Value> {
        value().prop_filter("a container", |v| v.is_array() || v.is_object())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        /// Every slip, alone or with others, is repaired to the value that was meant,
        /// reported, and the repaired value is JSON that parses back to itself.
        #[test]
        fn sloppy_json_is_repaired_and_reported(value in container(), slips in 0u16..(1 << 12)) {
            let (mut text, mut made) = (String::new(), 0u16);
            sloppy(&value, slips, &mut made, &mut text);
            let found = Parser::new(&text).run(0, text.len(), true);
            let found = found.map_err(|stop| format!("{text:?} fails at {}", stop.at));
            prop_assert!(found.is_ok(), "{:?}", found);
            let found = found.unwrap_or_else(|_| unreachable!());
            prop_assert_eq!(&found.value, &expected(&value, slips), "{}", text);
            let reparsed: Value = serde_json::from_str(&found.value.to_string()).unwrap_or_default();
            prop_assert_eq!(&reparsed, &found.value);
            for (i, kind) in SLIPS.iter().enumerate() {
                let reported = found.repairs.iter().any(|r| r.kind == *kind);
                prop_assert_eq!(made & (1 << i) != 0, reported, "{:?} in {}", kind, text);
            }
            for repair in &found.repairs {
                prop_assert!(repair.span.0 <= repair.span.1 && repair.span.1 <= text.len());
            }
        }

        /// Escaped quotes, values back to back, a value written twice and an object
        /// closed too soon are repaired to the values meant, reported, and parse back.
        #[test]
        fn whole_text_slips_are_repaired_and_reported(first in container(), second in container()) {
            // An empty value after another is a fragment, dropped (`{"a": 1}{}`).
            let dropped = |kind| if has_content(&second) { kind } else { RepairKind::TrailingFragment };
            let doubled = if has_content(&first) { RepairKind::DoubledValue } else { RepairKind::TrailingFragment };
            let cases = [
                (first.to_string().replace('"', "\\\""), first.clone(), RepairKind::EscapedJson),
                (format!("{first}, {second}"), json!([first, second]), dropped(RepairKind::ConcatenatedValues)),
                (format!("{first}\n{first}"), first.clone(), doubled),
            ];
            for (text, want, kind) in cases {
                let merged = kind == RepairKind::TrailingFragment || (kind == RepairKind::ConcatenatedValues && first == second);
                let want = if merged { first.clone() } else { want };
                let found = Parser::new(&text).run(0, text.len(), true);
                prop_assert!(found.is_ok(), "{}", text);
                let found = found.unwrap_or_else(|_| unreachable!());
                prop_assert_eq!(&found.value, &want, "{}", text);
                let reparsed: Value = serde_json::from_str(&found.value.to_string()).unwrap_or_default();
                prop_assert_eq!(&reparsed, &found.value);
                let reported = found.repairs.iter().any(|r| r.kind == kind);
                let needed = kind != RepairKind::EscapedJson || text.contains('"');
                let needed = needed && !(kind == RepairKind::ConcatenatedValues && first == second);
                prop_assert!(reported || !needed, "{:?} not reported for {}", kind, text);
            }
            if let (Value::Object(a), Value::Object(b)) = (&first, &second)
                && !a.is_empty() && !b.is_empty() && a.keys().all(|k| !b.contains_key(k))
            {
                // `{"a": 1}, "b": 2}`: the first object's brace closed too soon.
                let inner = second.to_string();
                let text = format!("{first}, {}", &inner[1..]);
                let found = Parser::new(&text).run(0, text.len(), false);
                prop_assert!(found.is_ok(), "{}", text);
                let found = found.unwrap_or_else(|_| unreachable!());
                let mut merged = a.clone();
                merged.extend(b.clone());
                prop_assert_eq!(found.value, Value::Object(merged), "{}", text);
                prop_assert!(found.repairs.iter().any(|r| r.kind == RepairKind::PrematureCloser));
            }
        }

        /// A list of rows in an object, one row written without its opener, is read as
        /// the rows meant; a lone quote after any member is dropped; both are reported
        /// and the value parses back.
        #[test]
        fn rows_without_an_opener_and_stray_quotes(
            rows in prop::collection::vec(prop::collection::vec(any::<i16>(), 1..4), 3..6),
            pick in any::<prop::sample::Index>(),
            quote_after in any::<prop::sample::Index>(),
        ) {
            let rows: Vec<Vec<i16>> = {
                let len = rows[0].len();
                rows.into_iter().map(|mut r| { r.resize(len, 7); r }).collect()
            };
            // A row after the first and before the last loses its opener: rows before it
            // show the shape, and the closer before `, [` is the clue.
            let open = 1 + pick.index(rows.len() - 2);
            let written: Vec<String> = rows
                .iter()
                .enumerate()
                .map(|(i, row)| {
                    let items = row.iter().map(i16::to_string).collect::<Vec<_>>().join(", ");
                    if i == open { format!("{items}]") } else { format!("[{items}]") }
                })
                .collect();
            // The missing opener's closer ends the list when `, [` follows it.
            let text = format!("{{\"rows\": [{}], \"n\": 1}}", written.join(", "));
            let found = Parser::new(&text).run(0, text.len(), true);
            prop_assert!(found.is_ok(), "{}", text);
            let found = found.unwrap_or_else(|_| unreachable!());
            prop_assert_eq!(&found.value, &json!({"rows": rows, "n": 1}), "{}", text);
            prop_assert!(found.repairs.iter().any(|r| r.kind == RepairKind::MissingOpener));
            let reparsed: Value = serde_json::from_str(&found.value.to_string()).unwrap_or_default();
            prop_assert_eq!(&reparsed, &found.value);
            // A lone quote on its own line after one member.
            let members: Vec<String> = (0..rows.len()).map(|i| format!("\"k{i}\": {i}")).collect();
            let at = quote_after.index(members.len());
            let mut text = String::from("{");
            for (i, member) in members.iter().enumerate() {
                if i > 0 { text.push_str(", "); }
                text.push_str(member);
                if i == at { text.push_str("\n\""); }
            }
            text.push('}');
            let found = Parser::new(&text).run(0, text.len(), true);
            prop_assert!(found.is_ok(), "{}", text);
            let found = found.unwrap_or_else(|_| unreachable!());
            let want: serde_json::Map<String, Value> = (0..rows.len()).map(|i| (format!("k{i}"), json!(i))).collect();
            prop_assert_eq!(&found.value, &Value::Object(want), "{}", text);
            prop_assert!(found.repairs.iter().any(|r| r.kind == RepairKind::StrayText));
        }

        /// Any cut of a value either fails or repairs to JSON that parses back to itself,
        /// with `truncated_tail` reported when the cut is inside the value.
        #[test]
        fn truncations_repair_to_json_that_parses(value in container(), cut in 0.0f64..1.0) {
            let json = value.to_string();
            let at = (json.len() as f64 * cut) as usize;
            let at = (0..=at).rev().find(|&i| json.is_char_boundary(i)).unwrap_or(0);
            let text = &json[..at];
            if let Ok(found) = Parser::new(text).run(0, text.len(), false) {
                let reparsed: Value = serde_json::from_str(&found.value.to_string()).unwrap_or_default();
                prop_assert_eq!(&reparsed, &found.value);
                prop_assert!(found.span.1 <= text.len());
                let truncated = found.repairs.iter().any(|r| r.kind == RepairKind::TruncatedTail);
                prop_assert!(truncated || found.value == value, "{}", text);
            }
        }

        /// The slips of round two, each made in a random object: the value meant comes
        /// back, the slip is reported, and the value parses back to itself.
        #[test]
        fn round_two_slips_are_repaired_and_reported(
            map in prop::collection::btree_map("[a-z]{1,5}", "[a-z]([a-z ]{0,6}[a-z])?", 1..5),
            word in "[a-z]{1,6}",
            inner in any::<bool>(),
        ) {
            let value = json!(map);
            let json = value.to_string();
            let body = &json[1..json.len() - 1];
            let members: Vec<String> = map.iter().map(|(k, v)| format!("\"{k}\": \"{v}\"")).collect();
            let nested = json!({"list": [value.clone()]});
            let last = json.len() - 2; // the last string's closing quote
            let cases: Vec<(String, Value, RepairKind)> = vec![
                // The last string's quote missing before the closers.
                if inner {
                    (format!("{{\"list\": [{}{}]}}", &json[..last], "}"), nested.clone(), RepairKind::UnclosedString)
                } else {
                    (format!("{}}}", &json[..last]), value.clone(), RepairKind::MissingQuote)
                },
                (format!("{json}{{}}"), value.clone(), RepairKind::TrailingFragment),
                (format!("{json}\n{}", &json[..json.len() / 2 + 1]), value.clone(), RepairKind::TrailingFragment),
                (format!("{{{body}, \"{word}\": }}"), { let mut v = value.clone(); v[&word] = Value::Null; v }, RepairKind::MissingValue),
                (format!("{{{body} # {word}}}\n{word}"), value.clone(), RepairKind::Comment),
                (format!("{{{body}, \"{word}\": \"{word}\\u00"), { let mut v = value.clone(); v[&word] = json!(word); v }, RepairKind::TruncatedTail),
                (format!("{body}}}"), value.clone(), RepairKind::MissingBrace),
                (format!("{{{}}}", map.iter().map(|(k, v)| format!("{k}.{word}!: `{v}`")).collect::<Vec<_>>().join(", ")),
                    Value::Object(map.iter().map(|(k, v)| (format!("{k}.{word}!"), json!(v))).collect()), RepairKind::BacktickQuotes),
                (format!("{{<!-- {word} --> {}}}", members.join(&format!(", <!-- {word} --> "))), value.clone(), RepairKind::Comment),
                (format!("{{{body}, {word} }}"), value.clone(), RepairKind::StrayText),
            ];
            for (text, want, kind) in cases {
                let found = if kind == RepairKind::MissingBrace {
                    Parser::new(&text).run_members(0, text.len(), true)
                } else {
                    Parser::new(&text).run(0, text.len(), kind != RepairKind::Comment || !text.ends_with(&word))
                };
                prop_assert!(found.is_ok(), "{:?} fails", text);
                let found = found.unwrap_or_else(|_| unreachable!());
                // A comment running into the closer on the value's last line: the prose
                // after it is not part of the value.
                prop_assert_eq!(&found.value, &want, "{}", text);
                let reparsed: Value = serde_json::from_str(&found.value.to_string()).unwrap_or_default();
                prop_assert_eq!(&reparsed, &found.value);
                prop_assert!(found.repairs.iter().any(|r| r.kind == kind), "{:?} not in {:?} for {}", kind, found.repairs, text);
                for repair in &found.repairs {
                    prop_assert!(repair.span.0 <= repair.span.1 && repair.span.1 <= text.len());
                }
            }
        }

        /// Text around the special cases (quotes, escapes, closers, placeholders) never
        /// panics, and whatever is found re-serializes to JSON.
        #[test]
        fn any_text_never_panics(text in "[{}\\[\\]()\"'\\\\:,.\n a1tTN_#/*`…“”]{0,60}") {
            if let Ok(found) = Parser::new(&text).run(0, text.len(), true) {
                let reparsed: Value = serde_json::from_str(&found.value.to_string()).unwrap_or_default();
                prop_assert_eq!(reparsed, found.value);
            }
            let _ = Parser::new(&text).run(0, text.len(), false);
        }
    }
}
