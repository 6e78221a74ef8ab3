//! JSON extraction from messy LLM responses (SPEC §6.3).
//!
//! [`extract`] turns a response text into one JSON value by trying, in order, and keeping
//! the first success:
//!
//! 1. **Fenced** — markdown code blocks (three or more backticks, any or no language tag,
//!    JSON allowed on the opening line), in order; the first whose trimmed content parses
//!    wins. Unclosed blocks are skipped; unparsable ones fall through. Where openers and
//!    closers may appear is documented in `fence.rs`.
//! 2. **Embedded** — each `{` (each `[` with [`ExtractOptions::want_array`]) in order
//!    starts a candidate that ends at its matching bracket, ignoring brackets inside JSON
//!    strings; the first candidate that parses wins, and text after it is ignored. A
//!    candidate that fails (prose like `use {x}`) does not hide later ones.
//! 3. **Direct** — the whole trimmed text parses (a bare array, number, string or `null`
//!    is found here).
//! 4. With [`ExtractOptions::repair`], and only after 1–3 fail, a tolerant parser retries
//!    the fenced blocks (unclosed ones included), then the `{` candidates, then the whole
//!    text, and reports every repair it applied (see `repair.rs`).
//!
//! [`extract_envelope`] first takes the string `text` of an API-level envelope object.
//!
//! Every result carries its [`Method`] and the byte span of the JSON in the text. A
//! leading byte-order mark is ignored, but spans still index the original text.
//!
//! **Bounds.** Extraction is linear in practice and bounded in the worst case: fences
//! are found with a vectorised byte search and each block is scanned once; all embedded
//! candidates are matched in one amortized-linear pass (`embedded.rs`); the strict parser
//! only ever sees balanced candidates, and the bytes handed to it are capped at 8× the
//! text length plus 64 KiB (when that budget runs out, extraction stops and says so). The
//! repair pass reads each byte a bounded number of times. JSON nested deeper than
//! `serde_json`'s recursion limit (127 levels) does not parse and fails fast.
//!
//! ```
//! use pactum::extract::{extract, ExtractOptions, Method};
//!
//! let text = "Sure! Here it is:\n```json\n{\"answer\": 42}\n```\nAnything else?";
//! let found = extract(text, &ExtractOptions::default()).unwrap();
//! assert_eq!(found.method, Method::Fenced);
//! assert_eq!(found.value["answer"], 42);
//! assert_eq!(&text[found.span.0..found.span.1], "{\"answer\": 42}");
//!
//! let broken = "{'answer': 42, // sure\n";
//! assert!(extract(broken, &ExtractOptions::default()).is_err());
//! let options = ExtractOptions { repair: true, ..ExtractOptions::default() };
//! let found = extract(broken, &options).unwrap();
//! assert_eq!(found.method, Method::Repaired);
//! assert_eq!(found.value["answer"], 42);
//! ```

mod embedded;
mod fence;
mod repair;
mod scan;

use std::fmt;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use fence::{Block, Fences};

/// Deepest nesting that can parse: `serde_json`'s recursion limit, which the tolerant
/// parser shares.
const MAX_DEPTH: usize = 127;

/// How the JSON was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Content of a markdown code block.
    Fenced,
    /// A bracket-matched candidate inside the text.
    Embedded,
    /// The whole trimmed text.
    Direct,
    /// The tolerant parser, after the strict methods failed.
    Repaired,
}

impl Method {
    /// The stable name, as serialized: `fenced`, `embedded`, `direct` or `repaired`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Fenced => "fenced",
            Method::Embedded => "embedded",
            Method::Direct => "direct",
            Method::Repaired => "repaired",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to look for and how leniently.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct ExtractOptions {
    /// Embedded candidates start at `[` instead of `{` (the output schema's top-level
    /// type is `array`).
    pub want_array: bool,
    /// Try the tolerant parser after the strict methods fail.
    pub repair: bool,
}

/// One kind of slip the tolerant parser repaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RepairKind {
    /// A comma before `]` or `}`.
    TrailingComma,
    /// A string in `'single quotes'`.
    SingleQuotes,
    /// An object key without quotes.
    UnquotedKey,
    /// A `//` or `/* */` comment.
    Comment,
    /// A raw newline, tab or other control character inside a string.
    RawControlCharacter,
    /// Python's `True`, `False` or `None`.
    PythonLiteral,
    /// A string in typographic quotes (`“…”`, `‘…’`).
    SmartQuotes,
    /// The input ended inside the value; open strings and containers were closed.
    TruncatedTail,
    /// A quote inside a string that did not end it.
    UnescapedQuote,
    /// An unknown escape or a lone surrogate, kept literally (or as U+FFFD).
    InvalidEscape,
    /// The value was read from a fenced block that is never closed.
    UnclosedFence,
}

impl RepairKind {
    /// The stable name, as serialized (`snake_case`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            RepairKind::TrailingComma => "trailing_comma",
            RepairKind::SingleQuotes => "single_quotes",
            RepairKind::UnquotedKey => "unquoted_key",
            RepairKind::Comment => "comment",
            RepairKind::RawControlCharacter => "raw_control_character",
            RepairKind::PythonLiteral => "python_literal",
            RepairKind::SmartQuotes => "smart_quotes",
            RepairKind::TruncatedTail => "truncated_tail",
            RepairKind::UnescapedQuote => "unescaped_quote",
            RepairKind::InvalidEscape => "invalid_escape",
            RepairKind::UnclosedFence => "unclosed_fence",
        }
    }
}

impl fmt::Display for RepairKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A repair applied by the tolerant parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Repair {
    /// What was repaired.
    pub kind: RepairKind,
    /// Byte offset in the text where the repair applied (for a truncated tail, the end
    /// of the text the value was read from; for an unclosed fence, the end of the text).
    pub offset: usize,
}

/// A JSON value found in a response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Extracted {
    /// The value.
    pub value: Value,
    /// How it was found.
    pub method: Method,
    /// Byte range `[start, end)` of the JSON in the text it came from (the envelope's
    /// `text` when `envelope` is true).
    pub span: (usize, usize),
    /// Whether the text came from an envelope object's `text` field.
    pub envelope: bool,
    /// The repairs applied; empty unless `method` is [`Method::Repaired`].
    pub repairs: Vec<Repair>,
}

/// No JSON could be extracted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtractFailure {
    /// The methods tried, in order: `envelope`, `fenced`, `embedded`, `direct`,
    /// `repaired`.
    pub methods_tried: Vec<&'static str>,
    /// What each method found, for a human.
    pub detail: String,
}

impl fmt::Display for ExtractFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no JSON found (tried {}): {}", self.methods_tried.join(", "), self.detail)
    }
}

impl std::error::Error for ExtractFailure {}

/// Extracts one JSON value from a response text (SPEC §6.3).
///
/// # Errors
///
/// [`ExtractFailure`] when no method finds JSON, when the text is empty or only
/// whitespace, or when the parse budget runs out; it lists the methods tried.
///
/// ```
/// use pactum::extract::{extract, ExtractOptions, Method};
///
/// let found = extract("Use {x} like this: {\"a\": [1, 2]} ok?", &ExtractOptions::default());
/// let found = found.unwrap();
/// assert_eq!((found.method, found.span), (Method::Embedded, (19, 32)));
///
/// let failure = extract("no JSON here", &ExtractOptions::default()).unwrap_err();
/// assert_eq!(failure.methods_tried, ["fenced", "embedded", "direct"]);
/// ```
pub fn extract(text: &str, options: &ExtractOptions) -> Result<Extracted, ExtractFailure> {
    let mut run = Run::new(text);
    if text.get(run.floor..).unwrap_or_default().trim().is_empty() {
        let mut methods_tried = vec!["fenced", "embedded", "direct"];
        if options.repair {
            methods_tried.push("repaired");
        }
        let detail = "the response is empty or only whitespace".to_owned();
        return Err(ExtractFailure { methods_tried, detail });
    }
    let mut blocks = vec![];
    let found = run
        .fenced(&mut blocks, options.repair)
        .or_else(|| run.embedded(options.want_array))
        .or_else(|| run.direct())
        .or_else(|| if options.repair { run.repaired(&blocks, options.want_array) } else { None });
    found.ok_or_else(|| run.failure())
}

/// Extracts the JSON from an envelope: an object whose string `text` holds the response.
///
/// # Errors
///
/// [`ExtractFailure`] with `methods_tried == ["envelope"]` when `envelope` is not an
/// object or has no string `text`; otherwise as [`extract`], with `envelope` listed first.
///
/// ```
/// use pactum::extract::{extract_envelope, ExtractOptions};
/// use serde_json::json;
///
/// let envelope = json!({"text": "```json\n[1, 2]\n```", "finish_reason": "stop"});
/// let found = extract_envelope(&envelope, &ExtractOptions::default()).unwrap();
/// assert!(found.envelope);
/// assert_eq!(found.value, json!([1, 2]));
///
/// let failure = extract_envelope(&json!({"content": "{}"}), &ExtractOptions::default());
/// assert_eq!(failure.unwrap_err().methods_tried, ["envelope"]);
/// ```
pub fn extract_envelope(
    envelope: &Value,
    options: &ExtractOptions,
) -> Result<Extracted, ExtractFailure> {
    let envelope_failure =
        |detail: String| ExtractFailure { methods_tried: vec!["envelope"], detail };
    let Value::Object(fields) = envelope else {
        return Err(envelope_failure(format!(
            "the envelope must be a JSON object with a string `text`, got {}",
            kind_of(envelope)
        )));
    };
    match fields.get("text") {
        Some(Value::String(text)) => match extract(text, options) {
            Ok(found) => Ok(Extracted { envelope: true, ..found }),
            Err(mut failure) => {
                failure.methods_tried.insert(0, "envelope");
                Err(failure)
            }
        },
        Some(other) => Err(envelope_failure(format!(
            "the envelope's `text` must be a string, got {}",
            kind_of(other)
        ))),
        None => Err(envelope_failure("the envelope object has no `text` field".to_owned())),
    }
}

/// A JSON type name with its article, for messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// State of one extraction: the text, the parse budget and what each method found.
struct Run<'a> {
    text: &'a str,
    /// Where the text starts after a byte-order mark.
    floor: usize,
    /// Bytes the strict parser may read in all: 8 times the text plus 64 KiB.
    budget_total: usize,
    /// Bytes the strict parser may still read.
    budget: usize,
    exhausted: bool,
    tried: Vec<&'static str>,
    notes: Vec<String>,
}

impl<'a> Run<'a> {
    fn new(text: &'a str) -> Self {
        let floor = if text.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
        let budget = text.len().saturating_mul(8).saturating_add(64 * 1024);
        // Room for every method up front: one allocation, none on the hot path's pushes.
        let (tried, notes) = (Vec::with_capacity(5), vec![]);
        Self { text, floor, budget_total: budget, budget, exhausted: false, tried, notes }
    }

    /// Parses `text[start..end]` strictly, or returns `None` once the budget is spent.
    /// With `validate_first`, the text is first checked without building a value, which
    /// is cheaper for the many embedded candidates that fail.
    fn parse(
        &mut self,
        start: usize,
        end: usize,
        validate_first: bool,
    ) -> Option<serde_json::Result<Value>> {
        let len = end.saturating_sub(start);
        if self.exhausted || len > self.budget {
            if !self.exhausted {
                self.exhausted = true;
                self.notes.push(format!(
                    "stopped: the parse budget ({} bytes: 8 times the text plus 64 KiB) ran out",
                    self.budget_total
                ));
            }
            return None;
        }
        self.budget -= len;
        let text = self.text.get(start..end).unwrap_or_default();
        if validate_first && let Err(error) = serde_json::from_str::<IgnoredAny>(text) {
            return Some(Err(error));
        }
        Some(serde_json::from_str(text))
    }

    fn found(value: Value, method: Method, span: (usize, usize)) -> Extracted {
        Extracted { value, method, span, envelope: false, repairs: vec![] }
    }

    /// Fenced blocks in order; with `keep`, every block is kept for the repair stage.
    fn fenced(&mut self, blocks: &mut Vec<Block>, keep: bool) -> Option<Extracted> {
        self.tried.push("fenced");
        let mut unclosed = false;
        let mut seen = 0usize;
        for block in Fences::new(self.text.as_bytes(), self.floor) {
            seen += 1;
            if keep {
                blocks.push(block.clone());
            }
            if !block.closed {
                unclosed = true;
                continue;
            }
            let (start, end) = trimmed(self.text, block.content.start, block.content.end);
            if start < end
                && let Ok(value) = self.parse(start, end, false)?
            {
                return Some(Self::found(value, Method::Fenced, (start, end)));
            }
        }
        self.notes.push(match (seen, unclosed) {
            (0, _) => "no fenced code block".to_owned(),
            (1, true) => "the only fenced block is unclosed".to_owned(),
            (n, true) => format!("{n} fenced blocks, none holds JSON (the last is unclosed)"),
            (n, false) => format!("{n} fenced block(s), none holds JSON"),
        });
        None
    }

    fn embedded(&mut self, want_array: bool) -> Option<Extracted> {
        if self.exhausted {
            return None;
        }
        self.tried.push("embedded");
        let candidates = embedded::candidates(self.text.as_bytes(), self.floor, want_array);
        for &(start, end) in &candidates.matched {
            if let Ok(value) = self.parse(start, end + 1, true)? {
                return Some(Self::found(value, Method::Embedded, (start, end + 1)));
            }
        }
        let open = if want_array { '[' } else { '{' };
        let unmatched = candidates.total - candidates.matched.len();
        self.notes.push(match candidates.total {
            0 => format!("no `{open}` that could start JSON"),
            n => format!(
                "{n} `{open}` candidate(s), none parses ({unmatched} unbalanced or too deep)"
            ),
        });
        None
    }

    fn direct(&mut self) -> Option<Extracted> {
        if self.exhausted {
            return None;
        }
        self.tried.push("direct");
        let (start, end) = trimmed(self.text, self.floor, self.text.len());
        match self.parse(start, end, false)? {
            Ok(value) => Some(Self::found(value, Method::Direct, (start, end))),
            Err(error) => {
                self.notes.push(format!("the trimmed text is not JSON ({error})"));
                None
            }
        }
    }

    fn repaired(&mut self, blocks: &[Block], want_array: bool) -> Option<Extracted> {
        if self.exhausted {
            return None;
        }
        self.tried.push("repaired");
        match repair::repair(self.text, self.floor, blocks, want_array) {
            Ok(found) => Some(Extracted {
                value: found.value,
                method: Method::Repaired,
                span: found.span,
                envelope: false,
                repairs: found.repairs,
            }),
            Err(note) => {
                self.notes.push(note);
                None
            }
        }
    }

    fn failure(self) -> ExtractFailure {
        ExtractFailure { methods_tried: self.tried, detail: self.notes.join("; ") }
    }
}

/// The range `start..end` of `text` without leading and trailing whitespace.
fn trimmed(text: &str, start: usize, end: usize) -> (usize, usize) {
    let slice = text.get(start..end).unwrap_or_default();
    let lead = slice.len() - slice.trim_start().len();
    (start + lead, start + lead + slice.trim().len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const STRICT: ExtractOptions = ExtractOptions { want_array: false, repair: false };
    const ARRAY: ExtractOptions = ExtractOptions { want_array: true, repair: false };
    const REPAIR: ExtractOptions = ExtractOptions { want_array: false, repair: true };

    /// Renders an outcome as `method value [kind@offset ...]` or `fail method,method`.
    fn render(result: &Result<Extracted, ExtractFailure>) -> String {
        match result {
            Ok(found) => {
                let mut out = format!("{} {}", found.method, found.value);
                for repair in &found.repairs {
                    out.push_str(&format!(" {}@{}", repair.kind, repair.offset));
                }
                out
            }
            Err(failure) => format!("fail {}", failure.methods_tried.join(",")),
        }
    }

    /// Extracts, checks the invariants every result keeps, and compares the rendering.
    fn check_with(options: ExtractOptions, text: &str, want: &str) {
        let result = extract(text, &options);
        if let Ok(found) = &result {
            let (start, end) = found.span;
            let spanned = text.get(start..end);
            assert!(spanned.is_some(), "span {:?} of {text:?}", found.span);
            let reparsed = match found.method {
                Method::Repaired => repair::parse(text, start, end, false).ok().map(|r| r.value),
                _ => spanned.and_then(|s| serde_json::from_str::<Value>(s).ok()),
            };
            assert_eq!(reparsed.as_ref(), Some(&found.value), "span of {text:?}");
            assert_eq!(found.method == Method::Repaired, !found.repairs.is_empty(), "{text:?}");
            assert!(!found.envelope);
        }
        assert_eq!(render(&result), want, "input {text:?}");
    }

    fn check(text: &str, want: &str) {
        check_with(STRICT, text, want);
    }

    fn span(text: &str, options: ExtractOptions) -> (usize, usize) {
        extract(text, &options).map(|found| found.span).unwrap_or((usize::MAX, 0))
    }

    #[test]
    fn fenced_blocks() {
        check("```json\n{\"a\": 1}\n```", r#"fenced {"a":1}"#);
        check("Here:\n```\n[1, 2]\n```\nDone.", "fenced [1,2]");
        check("```json\n1\n```", "fenced 1");
        check("```JSON\nnull\n```", "fenced null");
        check("```json {\"a\": 1}```", r#"fenced {"a":1}"#);
        check("```{\"a\":1}```", r#"fenced {"a":1}"#);
        check("```json\n{\"a\": 1}```", r#"fenced {"a":1}"#);
        check("text\n    ```json\n    {\"a\": 1}\n    ```\n    ", r#"fenced {"a":1}"#);
        check("\t```\n{\"a\": 1}\n\t```", r#"fenced {"a":1}"#);
        check("```json\r\n{\"a\": 1}\r\n```\r\n", r#"fenced {"a":1}"#);
        check("\u{feff}```json\n1\n```", "fenced 1");
    }

    #[test]
    fn fence_markers_and_backticks_inside_strings() {
        check("```json\n{\"a\": \"x ``` y\"}\n```", r#"fenced {"a":"x ``` y"}"#);
        check("```json\n{\"a\": \"```\"}\n```", r#"fenced {"a":"```"}"#);
        check("```json\n{\"a\": \"\\\"```\"}\n```", r#"fenced {"a":"\"```"}"#);
        check("```json\n{\"a\": \"`b`\"}\n```", r#"fenced {"a":"`b`"}"#);
        check("````json\n{\"a\": \"```\\n```\"}\n````", r#"fenced {"a":"```\n```"}"#);
        // The four-backtick block holds a three-backtick one, which is not JSON itself.
        check("````\n```\n{\"a\": 1}\n```\n````", r#"embedded {"a":1}"#);
        // A JSON string holding a fence is not a fence.
        check(
            r#"{"a": "see ```json\n{\"b\": 1}\n```"}"#,
            r#"embedded {"a":"see ```json\n{\"b\": 1}\n```"}"#,
        );
    }

    #[test]
    fn fences_in_order_with_fall_through() {
        check("```json\n{\"a\":1}\n```\n```json\n{\"b\":2}\n```", r#"fenced {"a":1}"#);
        check("```\nnot json\n```\n```json\n{\"b\": 2}\n```", r#"fenced {"b":2}"#);
        check("```python\nprint(\"hi)\n```\n```json\n{\"b\": 2}\n```", r#"fenced {"b":2}"#);
        check("```python\nprint(1)\n```\nResult: {\"a\": 1}", r#"embedded {"a":1}"#);
        check("```json\n{\"a\": 1}\n```json\n{\"b\": 2}\n```", r#"fenced {"a":1}"#);
        check(&format!("{}```json\n{{\"a\":1}}\n```", "```\n```\n".repeat(3)), r#"fenced {"a":1}"#);
        // Unclosed: skipped by the strict fence step.
        check("```json\n{\"a\": 1}", r#"embedded {"a":1}"#);
        check("```json\n{\"a\": 1}\n````", r#"fenced {"a":1}"#);
        check("````{\"a\": 1}```", r#"embedded {"a":1}"#);
        check("```json\n1", "fail fenced,embedded,direct");
        // Inline triple backticks in prose do not open a block.
        check("Use ```x``` then {\"a\": 1}", r#"embedded {"a":1}"#);
        check("``\n{\"a\": 1}\n``", r#"embedded {"a":1}"#);
    }

    #[test]
    fn embedded_candidates() {
        check("The answer is {\"a\": 1}.", r#"embedded {"a":1}"#);
        check("x {\"a\": \"}{\", \"b\": 2} y", r#"embedded {"a":"}{","b":2}"#);
        check("x {\"a\": \"\\\"}\"} y", r#"embedded {"a":"\"}"}"#);
        check("{\"a\": 1} and {\"b\": 2}", r#"embedded {"a":1}"#);
        check("use {x} like this: {\"a\":1}", r#"embedded {"a":1}"#);
        check("a { b {\"a\": 1}", r#"embedded {"a":1}"#);
        check("{\"a\" oops} then {\"b\": 2}", r#"embedded {"b":2}"#);
        check("{\"x\": {\"a\": 1}, oops}", r#"embedded {"a":1}"#);
        check("{\"a\": 1} trailing } text {", r#"embedded {"a":1}"#);
        check("He said \"{\" then {\"a\": 1}", r#"embedded {"a":1}"#);
        check("héllo → {\"ü\": \"ß\"} ✓", r#"embedded {"ü":"ß"}"#);
        check("[{\"a\": 1}, {\"b\": 2}]", r#"embedded {"a":1}"#);
        check("{\"a\": NaN} {\"b\": [1, {\"c\": 2}]}", r#"embedded {"b":[1,{"c":2}]}"#);
    }

    #[test]
    fn want_array_selects_brackets() {
        check_with(ARRAY, "Items: [1, 2, 3] done", "embedded [1,2,3]");
        check_with(ARRAY, "[{\"a\": 1}, {\"b\": 2}]", r#"embedded [{"a":1},{"b":2}]"#);
        check_with(ARRAY, "see [citation] then [\"x\"]", r#"embedded ["x"]"#);
        check_with(ARRAY, "see [1] and [2, 3]", "embedded [1]");
        check_with(ARRAY, "{\"a\": [1]}", "embedded [1]");
        check_with(ARRAY, "{\"a\": 1}", r#"direct {"a":1}"#);
        check("Items: [1, 2, 3] done", "fail fenced,embedded,direct");
    }

    #[test]
    fn direct_finds_bare_values() {
        check("42", "direct 42");
        check("  null \n", "direct null");
        check("\"hi\"", r#"direct "hi""#);
        check("true", "direct true");
        check("[1, 2]", "direct [1,2]");
        check("-1.5e3", "direct -1500.0");
        check("{\"a\": 1}", r#"embedded {"a":1}"#);
        check("nope", "fail fenced,embedded,direct");
    }

    #[test]
    fn empty_input_and_byte_order_mark() {
        check("", "fail fenced,embedded,direct");
        check("  \n\t ", "fail fenced,embedded,direct");
        check("\u{feff}", "fail fenced,embedded,direct");
        check_with(REPAIR, " ", "fail fenced,embedded,direct,repaired");
        check("\u{feff}{\"a\": 1}", r#"embedded {"a":1}"#);
        assert_eq!(span("\u{feff}{\"a\": 1}", STRICT), (3, 11));
        assert_eq!(span("\u{feff} 42 ", STRICT), (4, 6));
    }

    #[test]
    fn spans_index_the_original_text() {
        assert_eq!(span("ab\n```json\n {\"a\": 1} \n```", STRICT), (12, 20));
        assert_eq!(span("é {\"a\": 1} z", STRICT), (3, 11));
        assert_eq!(span("\n 7 \n", STRICT), (2, 3));
        assert_eq!(span("x {'a': 1,} y", REPAIR), (2, 11));
        assert_eq!(span("x {'a': 1", REPAIR), (2, 9));
    }

    #[test]
    fn deep_nesting_fails_fast() {
        let depth = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
        check(&depth(MAX_DEPTH), &format!("embedded {}", depth(MAX_DEPTH)));
        // Too deep for the parser: the first candidate that parses is the inner object.
        check(&depth(MAX_DEPTH + 1), &format!("embedded {}", depth(MAX_DEPTH)));
        check(&depth(20_000), &format!("embedded {}", depth(MAX_DEPTH)));
        let arrays = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        check(&arrays, "fail fenced,embedded,direct");
        check_with(ARRAY, &arrays, &format!("embedded {}", "[".repeat(127) + &"]".repeat(127)));
        check_with(REPAIR, &"[".repeat(100_000), "fail fenced,embedded,direct,repaired");
        check_with(REPAIR, &"{\"a\":".repeat(100_000), "fail fenced,embedded,direct,repaired");
    }

    #[test]
    fn parse_budget_stops_extraction() {
        // Nested candidates that all fail late: their spans add up quadratically.
        let group = format!("{}x{}", "{\"a\":".repeat(100), "}".repeat(100));
        let text = group.repeat(200);
        let failure = extract(&text, &STRICT).unwrap_err();
        assert_eq!(failure.methods_tried, ["fenced", "embedded"]);
        assert!(
            failure.detail.ends_with(
                "stopped: the parse budget (1027136 bytes: 8 times the text plus 64 KiB) ran out"
            ),
            "{}",
            failure.detail
        );
    }

    #[test]
    fn envelopes() {
        let envelope = json!({"text": "Sure: {\"a\": 1}", "finish_reason": "stop"});
        let found = extract_envelope(&envelope, &STRICT).unwrap();
        assert_eq!(
            (found.value, found.method, found.span, found.envelope),
            (json!({"a": 1}), Method::Embedded, (6, 14), true)
        );
        let fail = |envelope: Value| extract_envelope(&envelope, &STRICT).unwrap_err();
        let failure = fail(json!([1]));
        assert_eq!(failure.methods_tried, ["envelope"]);
        assert!(failure.detail.contains("got an array"), "{}", failure.detail);
        assert!(fail(json!({"content": "{}"})).detail.contains("no `text` field"));
        assert!(fail(json!({"text": 5})).detail.contains("must be a string, got a number"));
        assert!(fail(json!({"text": null})).detail.contains("got null"));
        let failure = fail(json!({"text": ""}));
        assert_eq!(failure.methods_tried, ["envelope", "fenced", "embedded", "direct"]);
        let failure = fail(json!({"text": "no json"}));
        assert_eq!(failure.methods_tried, ["envelope", "fenced", "embedded", "direct"]);
        assert!(failure.to_string().starts_with("no JSON found (tried envelope, fenced"));
    }

    #[test]
    fn failures_explain_each_method() {
        let failure = extract("```\nx\n```\nuse {x} and {\"a\" 1}", &STRICT).unwrap_err();
        assert_eq!(
            failure.detail,
            "1 fenced block(s), none holds JSON; 1 `{` candidate(s), none parses (0 unbalanced or \
             too deep); \
             the trimmed text is not JSON (expected value at line 1 column 1)"
        );
        let failure = extract("```json\n{\"a\": 1", &ARRAY).unwrap_err();
        assert!(failure.detail.starts_with("the only fenced block is unclosed; no `[` that"));
    }

    #[test]
    fn repairs_are_reported() {
        check_with(REPAIR, "{'a': 1}", r#"repaired {"a":1} single_quotes@1"#);
        check_with(REPAIR, "{a: 1}", r#"repaired {"a":1} unquoted_key@1"#);
        check_with(REPAIR, "[1, 2,]", "repaired [1,2] trailing_comma@5");
        check_with(
            REPAIR,
            "{\"a\": 1, // note\n}",
            r#"repaired {"a":1} comment@9 trailing_comma@7"#,
        );
        check_with(REPAIR, "{\"a\": /* c */ 1}", r#"repaired {"a":1} comment@6"#);
        check_with(REPAIR, "{\"a\": \"x\ny\"}", r#"repaired {"a":"x\ny"} raw_control_character@8"#);
        check_with(
            REPAIR,
            "{\"a\": True, \"b\": None}",
            r#"repaired {"a":true,"b":null} python_literal@6 python_literal@17"#,
        );
        check_with(REPAIR, "{“a”: “b”}", r#"repaired {"a":"b"} smart_quotes@1 smart_quotes@10"#);
        check_with(REPAIR, "{\"a\": [1, 2", r#"repaired {"a":[1,2]} truncated_tail@11"#);
        check_with(
            REPAIR,
            "{\"a\": \"say \"hi\" now\"}",
            r#"repaired {"a":"say \"hi\" now"} unescaped_quote@11 unescaped_quote@14"#,
        );
        check_with(
            REPAIR,
            r#"{"path": "C:\Users"}"#,
            r#"repaired {"path":"C:\\Users"} invalid_escape@12"#,
        );
        check_with(REPAIR, "True", "repaired true python_literal@0");
    }

    #[test]
    fn repair_candidates_in_order() {
        // Strict results are untouched by the repair option.
        check_with(REPAIR, "{\"a\": 1}", r#"embedded {"a":1}"#);
        // Fence content first, with offsets in the whole text.
        check_with(REPAIR, "```json\n{\"a\": 1,}\n```", r#"repaired {"a":1} trailing_comma@15"#);
        check_with(
            REPAIR,
            "{'z': 0}\n```json\n{'a': 1}\n```",
            r#"repaired {"a":1} single_quotes@18"#,
        );
        // An unclosed fence runs to the end of the text.
        check_with(
            REPAIR,
            "```json\n{\"a\": [1",
            r#"repaired {"a":[1]} truncated_tail@16 unclosed_fence@16"#,
        );
        check_with(REPAIR, "```json\n\"done\"", r#"repaired "done" unclosed_fence@14"#);
        // A truncated object inside a closed fence.
        check_with(
            REPAIR,
            "```\n{\"a\": \"b\"\n```\nok",
            r#"repaired {"a":"b"} truncated_tail@14"#,
        );
        // Then each `{`, resuming after a failure.
        check_with(REPAIR, "use {x} and {'a': 1}", r#"repaired {"a":1} single_quotes@13"#);
        check_with(
            REPAIR,
            "Sure: {\"a\": [1, 2,],} thanks",
            r#"repaired {"a":[1,2]} trailing_comma@17 trailing_comma@19"#,
        );
        // Then the whole text.
        check_with(
            REPAIR,
            "['a', 'b',]",
            r#"repaired ["a","b"] single_quotes@1 single_quotes@6 trailing_comma@9"#,
        );
        check_with(REPAIR, "['a'] and more", "fail fenced,embedded,direct,repaired");
        // Truncation alone produces nothing worth returning.
        check_with(REPAIR, "Hello { world", "fail fenced,embedded,direct,repaired");
        check_with(REPAIR, "just prose", "fail fenced,embedded,direct,repaired");
        let want = ExtractOptions { want_array: true, repair: true };
        check_with(want, "Items: [1, 2,", "repaired [1,2] truncated_tail@13");
    }

    #[test]
    fn serialized_names() {
        assert_eq!(serde_json::to_value(Method::Embedded).unwrap(), json!("embedded"));
        let repair = Repair { kind: RepairKind::RawControlCharacter, offset: 3 };
        assert_eq!(
            serde_json::to_value(repair).unwrap(),
            json!({"kind": "raw_control_character", "offset": 3})
        );
        for kind in [RepairKind::TrailingComma, RepairKind::SmartQuotes, RepairKind::TruncatedTail]
        {
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
        }
        for method in [Method::Fenced, Method::Embedded, Method::Direct, Method::Repaired] {
            assert_eq!(serde_json::to_value(method).unwrap(), json!(method.as_str()));
        }
    }

    /// The 1 MiB hostile inputs of the benchmark: results are asserted, not timings.
    #[test]
    fn hostile_inputs() {
        const MIB: usize = 1 << 20;
        let fill = |unit: &str| unit.repeat(MIB / unit.len());
        let both = [STRICT, REPAIR];
        for options in both {
            assert!(extract(&fill("{"), &options).is_err());
            assert!(extract(&fill("["), &ExtractOptions { want_array: true, ..options }).is_err());
            assert!(extract(&fill("{\"a\":"), &options).is_err());
            assert!(extract(&fill("\""), &options).is_err());
            assert!(extract(&fill("{\"a\":\"\\\"{"), &options).is_err());
            assert!(extract(&fill("```\n"), &options).is_err());
            assert!(extract(&fill("```"), &options).is_err());
            assert!(extract(&fill("{\"a\": [1, 2, x]}"), &options).is_err());
            let fences = format!("{}```json\n{{\"a\": 1}}\n```", fill("```\n"));
            assert_eq!(extract(&fences, &options).map(|f| f.method), Ok(Method::Fenced));
            let prose = fill("Lorem ipsum dolor sit amet. ");
            assert!(extract(&prose, &options).is_err());
            let tail = format!("{prose}\n```json\n{{\"a\": 1}}\n```\n");
            assert_eq!(extract(&tail, &options).map(|f| f.value), Ok(json!({"a": 1})));
        }
        let truncated = format!("{{\"a\": \"{}", "x".repeat(MIB));
        assert_eq!(
            extract(&truncated, &REPAIR).map(|f| f.value["a"].as_str().map(str::len)),
            Ok(Some(MIB))
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z{}\\[\\]\"\\\\` é\n]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\"{}]{0,4}", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    fn json_object() -> impl Strategy<Value = Value> {
        prop::collection::btree_map("[a-z\"{}]{0,4}", json_value(), 0..4)
            .prop_map(|map| Value::Object(map.into_iter().collect()))
    }

    /// Prose without `{`, `[`, backticks or quotes.
    const PROSE: &str = "[^{\\[`\"]{0,40}";

    /// What every extraction result must satisfy, whatever the text (module docs): the span
    /// lies inside the text on character boundaries; a strict result's span re-parses to its
    /// value and carries no repairs; only the repair option repairs, at offsets inside the
    /// text; with repair, a text the strict methods handle gives the strict result.
    fn check_outcome(text: &str, options: &ExtractOptions) -> Result<(), TestCaseError> {
        let outcome = extract(text, options);
        match &outcome {
            Ok(found) => {
                let (start, end) = found.span;
                prop_assert!(
                    start <= end && end <= text.len(),
                    "{:?} in {} bytes",
                    found.span,
                    text.len()
                );
                prop_assert!(text.is_char_boundary(start) && text.is_char_boundary(end));
                if found.method == Method::Repaired {
                    prop_assert!(options.repair, "repaired without the repair option");
                    prop_assert!(
                        found.repairs.iter().all(|r| r.offset <= text.len()),
                        "{:?}",
                        found.repairs
                    );
                } else {
                    prop_assert!(found.repairs.is_empty(), "{:?}", found.repairs);
                    let reparsed: Option<Value> = serde_json::from_str(&text[start..end]).ok();
                    prop_assert_eq!(
                        reparsed.as_ref(),
                        Some(&found.value),
                        "span {:?} of {:?}",
                        found.span,
                        text
                    );
                }
                prop_assert!(!found.envelope);
            }
            Err(failure) => prop_assert!(!failure.methods_tried.is_empty()),
        }
        if options.repair {
            let strict = ExtractOptions { repair: false, ..*options };
            if let Ok(found) = extract(text, &strict) {
                prop_assert_eq!(
                    outcome,
                    Ok(found),
                    "repair runs only after the strict methods fail"
                );
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_text_gives_a_consistent_result(text in any::<String>(), syntax in "[{}\\[\\]\"'\\\\`:,\n a1/*]{0,80}") {
            for options in [STRICT, ARRAY, REPAIR] {
                check_outcome(&text, &options)?;
                check_outcome(&syntax, &options)?;
            }
        }

        #[test]
        fn every_prefix_of_a_fenced_reply_gives_a_consistent_result(
            value in json_value(),
            before in any::<String>(),
            after in any::<String>(),
            pretty: bool,
        ) {
            let json = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) };
            let json = json.unwrap_or_default();
            let response = format!("{before}\n```json\n{json}\n```\n{after}");
            for (cut, _) in response.char_indices() {
                check_outcome(&response[..cut], &STRICT)?;
                check_outcome(&response[..cut], &REPAIR)?;
            }
            check_outcome(&response, &REPAIR)?;
            check_outcome(&format!("{before}{json}{after}"), &REPAIR)?;
            // Around prose without backticks, the fenced block is what is found, whole.
            let clean = format!("{}\n```json\n{json}\n```\n{}", before.replace('`', ""), after.replace('`', ""));
            let found = extract(&clean, &STRICT);
            prop_assert_eq!(
                found.map(|f| (f.method, f.value, clean[f.span.0..f.span.1].to_string())),
                Ok((Method::Fenced, value, json))
            );
        }

        #[test]
        fn prose_json_prose_yields_the_json(
            before in PROSE,
            value in json_object(),
            after in PROSE,
            pretty: bool,
        ) {
            let json = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) };
            let json = json.unwrap_or_default();
            let text = format!("{before}{json}{after}");
            let found = extract(&text, &STRICT);
            prop_assert_eq!(found.map(|f| (f.method, f.value, f.span)), Ok((Method::Embedded, value.clone(), (before.len(), before.len() + json.len()))));
            let array = Value::Array(vec![value]);
            let json = serde_json::to_string(&array).unwrap_or_default();
            let text = format!("{before}{json}{after}");
            let found = extract(&text, &ARRAY);
            prop_assert_eq!(found.map(|f| (f.value, f.span)), Ok((array, (before.len(), before.len() + json.len()))));
        }

        #[test]
        fn truncated_objects_repair_to_a_prefix(value in json_object(), cut in 0.0f64..1.0) {
            // A cut of an object that the strict methods cannot read (they may find a whole
            // inner object) repairs to a prefix of it: the first keys in order, each but the
            // last with its whole value (the last may itself be cut short), or fails.
            let json = serde_json::to_string(&value).unwrap_or_default();
            let at = (json.len() as f64 * cut) as usize;
            let at = (0..=at).rev().find(|&i| json.is_char_boundary(i)).unwrap_or(0);
            let text = &json[..at];
            check_outcome(text, &REPAIR)?;
            let repaired = extract(text, &REPAIR).ok().filter(|f| f.method == Method::Repaired);
            if let Some(found) = repaired {
                let (Some(original), Some(repaired)) = (value.as_object(), found.value.as_object()) else {
                    return Err(TestCaseError::fail(format!("{text:?} gave {}", found.value)));
                };
                let kept: Vec<&String> = repaired.keys().collect();
                let first: Vec<&String> = original.keys().take(kept.len()).collect();
                prop_assert_eq!(&kept, &first, "{:?}", text);
                for key in kept.iter().take(kept.len().saturating_sub(1)) {
                    prop_assert_eq!(&repaired[*key], &original[*key], "{:?}", text);
                }
            }
        }
    }
}
