//! JSON extraction from messy LLM responses (SPEC §6.3).
//!
//! [`extract`] turns a response text into one JSON value. It gathers *candidates* in
//! order and keeps the first success:
//!
//! 1. **Fenced** — markdown code blocks (three or more backticks, any or no language tag,
//!    JSON allowed on the opening line), in order; a block whose trimmed content parses is
//!    a candidate. Unclosed blocks are skipped; unparsable ones fall through. Where
//!    openers and closers may appear is documented in `fence.rs`.
//! 2. **Embedded** — the *outermost* bracket regions of the text (`embedded.rs`), in order;
//!    a `{` region (a `[` region with [`ExtractOptions::want_array`]) that parses whole is
//!    a candidate, and text after it is ignored. A region that fails to parse is never
//!    searched for a nested candidate, and a bracket that is never closed makes the rest
//!    of the text one unclosed region: a fragment of a broken or truncated parent is never
//!    an answer. A `{` that prose follows (`{broken and …`, a stray `{` line), where no
//!    member can begin, is not a parent and opens no region.
//! 3. **Direct** — the whole trimmed text parses (a bare array, number, string or `null`
//!    is found here).
//! 4. With [`ExtractOptions::repair`], a tolerant parser (`repair.rs`) retries the fenced
//!    blocks (unclosed ones included), then the wanted regions (the unclosed one whole),
//!    then the whole text, and reports every repair it applied with its span.
//! 5. With [`ExtractOptions::coerce`], a schema whose top-level type is `array` and nothing
//!    chosen, a `{` region that stands alone is offered for coercion to wrap.
//!
//! Bare prefixes (`{`, `[`, `{"hel`, `{"a":`) hold no value and are refused in every
//! mode: a repair that closed them would answer with an empty or invented value.
//!
//! **Choice.** Without a [`Guide`], the first candidate wins and repair runs only when
//! the strict steps found nothing. With a guide (the contract's `output_schema`), the
//! first candidate that the schema *accepts* wins, strict or repaired; when none does,
//! the first that parsed is returned (and then fails the schema, not extraction). The
//! candidates passed over are listed in [`Extracted::candidates`]. With
//! [`ExtractOptions::coerce`] a candidate that fails the schema is also tried after
//! schema-aligned coercion (`coerce.rs`), each coercion reported like a repair.
//!
//! **Never confidently wrong.** Where a reply has two plausible readings (a repair that
//! has to guess, two JSON values back to back), the result says so with
//! [`Extracted::ambiguous`]. Strict mode (without `repair`) never returns an ambiguous
//! result: it refuses instead. An empty value (`{}`, `[]`) or a value cut off by the end
//! after a complete one (`{"a": 1}{}`, `{"a": 1} {"a": 1, "b`) is no second reading; with
//! a guide, values back to back are ambiguous only when the schema accepts more than one.
//! A JSON document inside a JSON string (`"{\"a\": 1}"`, stringified twice) is decoded
//! in lenient mode (`stringified_json`) and refused in strict mode, unless a guide
//! accepts the string. Without a guide, a reply that *declares* two different
//! JSON values has two readings as well: another closed fenced block holding an object
//! or array (read leniently if need be), another region of the wanted kind outside the
//! fenced blocks that parses, or a region after an inline `` ```json `` marker. Strict
//! mode then refuses the reply; lenient mode returns the first candidate in the order
//! above, flagged, with the other value listed as a candidate (`another_reading`). A
//! guide chooses instead (the first candidate it accepts wins, unflagged).
//!
//! [`extract_envelope`] first takes the string `text` of an API-level envelope object.
//!
//! Every result carries its [`Method`] and the byte span of the JSON in the text. A
//! leading byte-order mark is ignored, but spans still index the original text.
//!
//! **Bounds.** Extraction is linear in practice and bounded in the worst case: fences
//! are found with a vectorised byte search and each block is scanned once; the outermost
//! regions are found in one pass and never overlap, so the strict parser reads each byte
//! of them at most twice (once more to tell a value repeated back to back), so it reads
//! at most four times the text in all. Looking for a second reading runs once per
//! extraction and stops at the first: the blocks and regions it reads do not overlap,
//! which adds at most two strict and one tolerant read of the text. The repair pass
//! reads each byte a bounded number of times. JSON nested deeper than `serde_json`'s
//! recursion limit (127 levels) does not parse and fails fast.
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

mod coerce;
mod embedded;
mod fence;
mod repair;
mod scan;
mod tolerant;

use std::fmt;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use embedded::Region;
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
    /// An outermost bracket region inside the text.
    Embedded,
    /// The whole trimmed text.
    Direct,
    /// The tolerant parser.
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
    /// Embedded candidates are `[` regions instead of `{` regions (the output schema's
    /// top-level type is `array`).
    pub want_array: bool,
    /// Try the tolerant parser (lenient mode; the contract's `extraction.repair`).
    pub repair: bool,
    /// With a [`Guide`], coerce a candidate that fails the schema towards it (the
    /// contract's `extraction.coerce`): a string to the number or boolean the schema
    /// wants, a single value to a one-item array, an enum value matched
    /// case-insensitively; only where the schema (through local `$ref`s and optional
    /// fields) names one type for the value.
    pub coerce: bool,
}

/// The output schema, to choose between candidates and to coerce towards.
#[derive(Clone, Copy)]
pub struct Guide<'a> {
    /// The schema document (read by coercion: `type`, `properties`, `items`, `enum`).
    pub schema: &'a Value,
    /// Whether a value fits the schema (a compiled validator's `is_valid`).
    pub accepts: &'a dyn Fn(&Value) -> bool,
}

impl fmt::Debug for Guide<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guide").field("schema", self.schema).finish_non_exhaustive()
    }
}

/// One kind of slip the tolerant parser repaired, or a coercion applied.
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
    /// A `//`, `#` or `/* */` comment.
    Comment,
    /// A raw newline, tab or other control character inside a string.
    RawControlCharacter,
    /// Python's `True`, `False` or `None`.
    PythonLiteral,
    /// A string in typographic quotes (`“…”`, `‘…’`).
    SmartQuotes,
    /// The input ended inside the value; open strings and containers were closed.
    TruncatedTail,
    /// A quote inside a string that did not end it (a guess: ambiguous).
    UnescapedQuote,
    /// An unknown escape or a lone surrogate, kept literally (or as U+FFFD).
    InvalidEscape,
    /// The value was read from a fenced block that is never closed.
    UnclosedFence,
    /// Two members or items without a comma between them.
    MissingComma,
    /// A value that is a bare word or phrase, read as a string.
    UnquotedString,
    /// JavaScript's `undefined`, `NaN` or `Infinity`, read as `null` (as `JSON.stringify`
    /// writes them).
    JavascriptLiteral,
    /// A closing bracket of the wrong kind, read as the closer of the open container.
    MismatchedCloser,
    /// A `...` or `…` placeholder standing for more items, dropped.
    Ellipsis,
    /// Escaped quotes (`{\"a\": 1}`) or a JSON document inside a JSON string, decoded.
    EscapedJson,
    /// Several JSON values back to back, read as a list or as the first (ambiguous).
    ConcatenatedValues,
    /// The same JSON value twice in a row, read once.
    DoubledValue,
    /// A string value running into the next member (closed before the comma), or an
    /// unquoted value closed by a quote further on (ambiguous).
    MissingQuote,
    /// An object closed before more members followed; the closer was skipped (ambiguous).
    PrematureCloser,
    /// `TRUE`, `Null` and other literals in the wrong case.
    LiteralCase,
    /// A key without its value (`{"a": }`), read as `null` (so a schema that forbids
    /// `null` refuses it).
    MissingValue,
    /// A bare word between members (`{"a": 1, NOTE "b": 2}`) or a lone quote before a
    /// comma or closer, dropped (ambiguous).
    StrayText,
    /// A string in doubled quotes (`""key""`, as CSV escapes them).
    DoubledQuotes,
    /// A number written the JavaScript way (`.5`, `1.`, `+1`), normalised.
    NumberFormat,
    /// A raw line break (and its indentation) just before a string's closing quote,
    /// dropped as layout (ambiguous: it may have been meant).
    TrailingLineBreak,
    /// A string value holding a fenced block of JSON whose quotes are not escaped
    /// (`"```json {"a": 1}```"`), read as that JSON value (ambiguous: the text may have
    /// been meant).
    FencedJson,
    /// An array closed too early inside a list of rows (`[[1, 2], 3, 4], [5, 6]]`): the
    /// items after the last row are read as the row whose opener is missing (ambiguous).
    MissingOpener,
    /// A string never closed whose text ends with the closers that balance the open
    /// containers (`{"time": "12:20}`), a closing fence or a stray `'` after them: the
    /// string ends before them and they close the value.
    UnclosedString,
    /// A string in JavaScript backticks (`` `text` ``).
    BacktickQuotes,
    /// Members without the object's opening brace (`"a": 1, "b": 2}`), read as an object.
    MissingBrace,
    /// An empty value (`{}`, `[]`) or a value cut off by the end of the text, after a
    /// complete value (`{"a": 1}{}`, `{"a": 1} {"a": 1, "b`): dropped, the complete value
    /// kept.
    TrailingFragment,
    /// Several JSON values back to back, read as the list the schema wants (its top-level
    /// type is `array`).
    JoinedValues,
    /// A JSON document encoded as a JSON string (`"{\"a\": 1}"`: stringified twice),
    /// decoded.
    StringifiedJson,
    /// Coercion: a string read as the number the schema wants.
    CoercedNumber,
    /// Coercion: a string read as the boolean the schema wants (`"true"`, `"yes"`, `"y"`,
    /// `"on"`, `"1"` and their opposites, any case).
    CoercedBoolean,
    /// Coercion: a single value wrapped in the one-item array the schema wants.
    WrappedInArray,
    /// Coercion: an enum value matched case-insensitively.
    EnumCase,
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
            RepairKind::MissingComma => "missing_comma",
            RepairKind::UnquotedString => "unquoted_string",
            RepairKind::JavascriptLiteral => "javascript_literal",
            RepairKind::MismatchedCloser => "mismatched_closer",
            RepairKind::Ellipsis => "ellipsis",
            RepairKind::EscapedJson => "escaped_json",
            RepairKind::ConcatenatedValues => "concatenated_values",
            RepairKind::DoubledValue => "doubled_value",
            RepairKind::MissingQuote => "missing_quote",
            RepairKind::PrematureCloser => "premature_closer",
            RepairKind::LiteralCase => "literal_case",
            RepairKind::MissingValue => "missing_value",
            RepairKind::StrayText => "stray_text",
            RepairKind::DoubledQuotes => "doubled_quotes",
            RepairKind::NumberFormat => "number_format",
            RepairKind::TrailingLineBreak => "trailing_line_break",
            RepairKind::FencedJson => "fenced_json",
            RepairKind::MissingOpener => "missing_opener",
            RepairKind::UnclosedString => "unclosed_string",
            RepairKind::BacktickQuotes => "backtick_quotes",
            RepairKind::MissingBrace => "missing_brace",
            RepairKind::TrailingFragment => "trailing_fragment",
            RepairKind::JoinedValues => "joined_values",
            RepairKind::StringifiedJson => "stringified_json",
            RepairKind::CoercedNumber => "coerced_number",
            RepairKind::CoercedBoolean => "coerced_boolean",
            RepairKind::WrappedInArray => "wrapped_in_array",
            RepairKind::EnumCase => "enum_case",
        }
    }

    /// Whether this repair picks one of two plausible readings (the result is then
    /// [`Extracted::ambiguous`]).
    #[must_use]
    pub const fn is_guess(self) -> bool {
        matches!(
            self,
            RepairKind::UnescapedQuote
                | RepairKind::ConcatenatedValues
                | RepairKind::MissingQuote
                | RepairKind::PrematureCloser
                | RepairKind::StrayText
                | RepairKind::TrailingLineBreak
                | RepairKind::FencedJson
                | RepairKind::MissingOpener
        )
    }

    /// Whether this is a schema-aligned coercion rather than a syntax repair.
    #[must_use]
    pub const fn is_coercion(self) -> bool {
        matches!(
            self,
            RepairKind::CoercedNumber
                | RepairKind::CoercedBoolean
                | RepairKind::WrappedInArray
                | RepairKind::EnumCase
        )
    }
}

impl fmt::Display for RepairKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A repair or coercion applied to reach the value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Repair {
    /// What was repaired.
    pub kind: RepairKind,
    /// Byte range `[start, end)` in the text that the repair is about (empty at the
    /// point of an insertion; for a truncated tail or an unclosed fence, the end of the
    /// text the value was read from; for a coercion, the candidate's span).
    pub span: (usize, usize),
    /// For a coercion, the JSON pointer of the coerced value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
}

impl Repair {
    /// A syntax repair at `span`.
    #[must_use]
    pub const fn at(kind: RepairKind, span: (usize, usize)) -> Self {
        Repair { kind, span, pointer: None }
    }
}

/// A candidate passed over: where it was and why it lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Considered {
    /// How it was found.
    pub method: Method,
    /// Its byte range in the text.
    pub span: (usize, usize),
    /// Why it was not chosen: `fails_schema` or `ambiguous`; or `another_reading`, a
    /// different JSON value elsewhere in a reply without a schema, which makes the
    /// chosen one ambiguous (strict mode then refuses the reply).
    pub verdict: &'static str,
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
    /// The repairs and coercions applied, in order.
    pub repairs: Vec<Repair>,
    /// Whether the reply has another plausible reading (see [`RepairKind::is_guess`]);
    /// a run reports it as an `output_extraction_ambiguous` warning.
    pub ambiguous: bool,
    /// The other candidates considered before this one was chosen.
    pub candidates: Vec<Considered>,
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

/// Extracts one JSON value from a response text (SPEC §6.3), without a schema.
///
/// # Errors
///
/// [`ExtractFailure`] when no method finds JSON or when the text is empty or only
/// whitespace; it lists the methods tried.
///
/// ```
/// use pactum::extract::{extract, ExtractOptions, Method};
///
/// let found = extract("Use {x} like this: {\"a\": [1, 2]} ok?", &ExtractOptions::default());
/// let found = found.unwrap();
/// assert_eq!((found.method, found.span), (Method::Embedded, (19, 32)));
///
/// // A truncated parent is refused, not answered with its first complete child.
/// let truncated = "{\"a\": {\"b\": 1}, \"c\": {\"d\": 2";
/// assert!(extract(truncated, &ExtractOptions::default()).is_err());
///
/// let failure = extract("no JSON here", &ExtractOptions::default()).unwrap_err();
/// assert_eq!(failure.methods_tried, ["fenced", "embedded", "direct"]);
/// ```
pub fn extract(text: &str, options: &ExtractOptions) -> Result<Extracted, ExtractFailure> {
    extract_guided(text, options, None)
}

/// Extracts one JSON value, choosing between candidates with the output schema.
///
/// # Errors
///
/// As [`extract`].
///
/// ```
/// use pactum::extract::{extract_guided, ExtractOptions, Guide, Method};
/// use serde_json::{json, Value};
///
/// let schema = json!({"type": "object", "required": ["label"]});
/// let accepts = |v: &Value| v.get("label").is_some();
/// let guide = Guide { schema: &schema, accepts: &accepts };
/// let text = "Input was {\"text\": \"hi\"}; answer: {\"label\": \"greeting\"}";
/// let found = extract_guided(text, &ExtractOptions::default(), Some(&guide)).unwrap();
/// assert_eq!(found.value, json!({"label": "greeting"}));
/// assert_eq!(found.candidates[0].verdict, "fails_schema");
/// ```
pub fn extract_guided(
    text: &str,
    options: &ExtractOptions,
    guide: Option<&Guide<'_>>,
) -> Result<Extracted, ExtractFailure> {
    let mut run = Run::new(text, *options, guide);
    if text.get(run.floor..).unwrap_or_default().trim().is_empty() {
        let mut methods_tried = vec!["fenced", "embedded", "direct"];
        if options.repair {
            methods_tried.push("repaired");
        }
        let detail = "the response is empty or only whitespace".to_owned();
        return Err(ExtractFailure { methods_tried, detail });
    }
    let blocks: Vec<Block> = Fences::new(text.as_bytes(), run.floor).collect();
    let regions = embedded::regions(text.as_bytes(), run.floor);
    run.blocks = &blocks;
    run.regions = &regions;
    let mut done = run.fenced() || run.embedded() || run.direct();
    if !done && options.repair {
        done = run.repaired();
    }
    if !done {
        run.single_object();
    }
    run.finish()
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
    extract_envelope_guided(envelope, options, None)
}

/// [`extract_envelope`] with a [`Guide`], as [`extract_guided`].
///
/// # Errors
///
/// As [`extract_envelope`].
pub fn extract_envelope_guided(
    envelope: &Value,
    options: &ExtractOptions,
    guide: Option<&Guide<'_>>,
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
        Some(Value::String(text)) => match extract_guided(text, options, guide) {
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

/// State of one extraction: the text, the candidates so far and what
/// each method found.
struct Run<'a, 'g> {
    text: &'a str,
    options: ExtractOptions,
    guide: Option<&'g Guide<'g>>,
    /// Where the text starts after a byte-order mark.
    floor: usize,
    tried: Vec<&'static str>,
    notes: Vec<String>,
    /// The chosen candidate.
    chosen: Option<Extracted>,
    /// The first candidate that parsed (returned when the guide accepts none).
    fallback: Option<Extracted>,
    /// Candidates passed over.
    considered: Vec<Considered>,
    /// An ambiguous strict candidate, offered in lenient mode after the repair stage.
    deferred: Option<Extracted>,
    /// The fenced blocks and the outermost regions of the text.
    blocks: &'a [Block],
    regions: &'a [Region],
    /// Strict mode found two readings of the reply (see [`Run::rival`]) and refuses it:
    /// no later candidate is offered.
    two_readings: bool,
}

impl<'a, 'g> Run<'a, 'g> {
    fn new(text: &'a str, options: ExtractOptions, guide: Option<&'g Guide<'g>>) -> Self {
        let floor = if text.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
        Self {
            text,
            options,
            guide,
            floor,
            tried: Vec::with_capacity(5),
            notes: vec![],
            chosen: None,
            fallback: None,
            considered: vec![],
            deferred: None,
            blocks: &[],
            regions: &[],
            two_readings: false,
        }
    }

    /// Parses `text[start..end]` strictly. With `validate_first`, the text is first
    /// checked without building a value, which is cheaper for the many embedded
    /// candidates that fail.
    fn parse(&self, start: usize, end: usize, validate_first: bool) -> serde_json::Result<Value> {
        let text = self.text.get(start..end).unwrap_or_default();
        if validate_first {
            crate::work::count(text.len());
            serde_json::from_str::<IgnoredAny>(text)?;
        }
        crate::work::count(text.len());
        serde_json::from_str(text)
    }

    /// Offers a candidate; returns true when extraction is decided.
    fn offer(&mut self, mut found: Extracted) -> bool {
        // `"{\"a\": 1}"`: a JSON document stringified twice. Without a schema that wants
        // the string, the document is meant; strict mode, which repairs nothing, refuses.
        if self.guide.is_none()
            && let Some(decoded) = stringified(&found.value)
        {
            if !self.options.repair {
                self.notes.push(format!(
                    "the {} candidate at bytes {}..{} is a JSON document inside a JSON string \
                     (stringified twice); strict mode does not decode it",
                    found.method, found.span.0, found.span.1
                ));
                self.considered.push(Considered {
                    method: found.method,
                    span: found.span,
                    verdict: "ambiguous",
                });
                return false;
            }
            found.repairs.push(Repair::at(RepairKind::StringifiedJson, found.span));
            found = Extracted { value: decoded, method: Method::Repaired, ..found };
        }
        if self.guide.is_none()
            && !found.ambiguous
            && let Some((method, span)) = self.rival(&found)
        {
            found.ambiguous = true;
            self.two_readings = !self.options.repair;
            self.notes.push(format!(
                "the {} JSON at bytes {}..{} differs from the {} candidate at bytes {}..{}, \
                 and no schema says which is meant",
                method, span.0, span.1, found.method, found.span.0, found.span.1
            ));
            self.considered.push(Considered { method, span, verdict: "another_reading" });
        }
        if found.ambiguous && !self.options.repair {
            self.notes.push(format!(
                "the {} candidate at bytes {}..{} has another plausible reading; strict mode \
                 refuses it",
                found.method, found.span.0, found.span.1
            ));
            self.considered.push(Considered {
                method: found.method,
                span: found.span,
                verdict: "ambiguous",
            });
            return false;
        }
        let Some(guide) = self.guide else {
            self.chosen = Some(found);
            return true;
        };
        if (guide.accepts)(&found.value) {
            self.chosen = Some(found);
            return true;
        }
        // A JSON document inside a JSON string, when the string is not what is wanted.
        if self.options.repair
            && let Value::String(inner) = &found.value
            && let Ok(decoded) = strict_json(inner.trim())
            && (decoded.is_object() || decoded.is_array())
            && (guide.accepts)(&decoded)
        {
            let mut repairs = found.repairs.clone();
            repairs.push(Repair::at(RepairKind::EscapedJson, found.span));
            let method = Method::Repaired;
            self.chosen = Some(Extracted { value: decoded, repairs, method, ..found });
            return true;
        }
        if self.options.coerce
            && let Some((value, coercions)) = coerce::coerce(&found.value, guide.schema)
            && (guide.accepts)(&value)
        {
            let mut repairs = found.repairs.clone();
            repairs.extend(coercions.into_iter().map(|(kind, pointer)| Repair {
                kind,
                span: found.span,
                pointer: Some(pointer),
            }));
            self.chosen = Some(Extracted { value, repairs, ..found });
            return true;
        }
        self.considered.push(Considered {
            method: found.method,
            span: found.span,
            verdict: "fails_schema",
        });
        if self.fallback.is_none() {
            self.fallback = Some(found);
        }
        false
    }

    fn found(value: Value, method: Method, span: (usize, usize)) -> Extracted {
        Extracted {
            value,
            method,
            span,
            envelope: false,
            repairs: vec![],
            ambiguous: false,
            candidates: vec![],
        }
    }

    /// Fenced blocks in order.
    fn fenced(&mut self) -> bool {
        self.tried.push("fenced");
        let (mut seen, mut unclosed, mut parsed) = (0usize, false, 0usize);
        for block in self.blocks {
            seen += 1;
            if !block.closed {
                unclosed = true;
                continue;
            }
            let (start, end) = trimmed(self.text, block.content.start, block.content.end);
            if start < end
                && let Ok(value) = self.parse(start, end, false)
            {
                parsed += 1;
                if self.offer(Self::found(value, Method::Fenced, (start, end))) {
                    return true;
                }
                if self.two_readings {
                    return false;
                }
            }
        }
        self.notes.push(match (seen, unclosed, parsed) {
            (0, _, _) => "no fenced code block".to_owned(),
            (1, true, _) => "the only fenced block is unclosed".to_owned(),
            (n, _, p) if p > 0 => format!("{n} fenced block(s), {p} hold JSON that is not chosen"),
            (n, true, _) => format!("{n} fenced blocks, none holds JSON (the last is unclosed)"),
            (n, false, _) => format!("{n} fenced block(s), none holds JSON"),
        });
        false
    }

    /// The wanted outermost regions in order.
    fn embedded(&mut self) -> bool {
        if self.two_readings {
            return false;
        }
        self.tried.push("embedded");
        let regions = self.regions;
        let want_array = self.options.want_array;
        let (mut wanted, mut failed, mut parsed) = (0usize, 0usize, 0usize);
        // A region that is the whole trimmed text is the reply itself: found directly.
        let whole = trimmed(self.text, self.floor, self.text.len());
        for (i, &region) in regions.iter().enumerate() {
            if region.array != want_array {
                continue;
            }
            wanted += 1;
            if !region.closed {
                continue;
            }
            let Ok(value) = self.parse(region.start, region.end, true) else {
                failed += 1;
                continue;
            };
            parsed += 1;
            let span = (region.start, region.end);
            let method = if span == whole { Method::Direct } else { Method::Embedded };
            let mut found = Self::found(value, method, span);
            if let Some(reading) = self.second_reading(regions, i, &found.value) {
                // Two readings: strict mode refuses; lenient mode lets repair read the
                // text whole first and keeps this one for last.
                found.ambiguous = true;
                let span = found.span;
                self.notes.push(format!(
                    "the `{}` region at bytes {}..{} is ambiguous: {reading}",
                    if want_array { '[' } else { '{' },
                    span.0,
                    span.1
                ));
                if self.options.repair {
                    self.deferred = Some(found);
                } else {
                    self.considered.push(Considered {
                        method: Method::Embedded,
                        span,
                        verdict: "ambiguous",
                    });
                }
                return false;
            }
            if self.offer(found) {
                return true;
            }
            if self.two_readings {
                return false;
            }
        }
        let open = if want_array { '[' } else { '{' };
        let unclosed = regions.last().is_some_and(|r| !r.closed);
        let mut note = match (wanted, parsed) {
            (0, _) => format!("no `{open}` region"),
            (n, 0) => format!("{n} `{open}` region(s), {failed} fail to parse"),
            (n, p) => format!("{n} `{open}` region(s), {p} parse but are not chosen"),
        };
        if unclosed {
            note.push_str(
                " (a bracket is never closed: the rest of the text is one truncated region, \
                 whose fragments are never answers)",
            );
        }
        self.notes.push(note);
        false
    }

    /// Why the region `i`, which parsed to `value`, has a second plausible reading: more
    /// members follow its closing brace (`{"a": 1}, "b": 2}`), or another value follows
    /// it with only whitespace and commas between (the first value, or a list of both?).
    /// The same value twice is not ambiguous, nor is an empty value or one cut off by the
    /// end after it. With a guide, the schema decides when it can: a value it rejects has
    /// no say, and a value it accepts has a second reading only when it accepts the next
    /// value too.
    fn second_reading(&self, regions: &[Region], i: usize, value: &Value) -> Option<String> {
        let accepts = |v: &Value| self.guide.is_none_or(|g| (g.accepts)(v));
        if !accepts(value) {
            return None;
        }
        let region = regions.get(i)?;
        let bytes = self.text.as_bytes();
        let after = bytes.get(region.end..).unwrap_or_default();
        if !region.array && tolerant::starts_member(after, true) {
            return Some("more members follow its closing brace".to_owned());
        }
        let next = regions.get(i + 1)?;
        let gap = bytes.get(region.end..next.start).unwrap_or_default();
        if !gap.iter().all(|&b| scan::is_json_ws(b) || b == b',') {
            return None;
        }
        // A value cut off by the end of the text (a copy cut short) or an empty one
        // (`{"a": 2}{}`) is not another reading.
        if !next.closed {
            return None;
        }
        let next = self.parse(next.start, next.end, true).ok();
        let other = next.is_none_or(|v| v != *value && tolerant::has_content(&v) && accepts(&v));
        other.then(|| "another JSON value follows it back to back".to_owned())
    }

    /// Without a schema to choose, a JSON value elsewhere in the reply that differs from
    /// `found` and does not overlap it: the reply has two readings. The values a reply
    /// declares are the content of each closed fenced block that is an object or array
    /// (read leniently if need be: a block is code the model wrote), each region of the
    /// wanted kind outside the fenced blocks that parses strictly, and each region outside
    /// them right after a `` ```json `` marker inside a line (read leniently too). Stops
    /// at the first rival; it runs once per extraction (the first candidate offered is
    /// chosen, or refuses the reply), and blocks and regions do not overlap among
    /// themselves, so it reads each byte a bounded number of times.
    fn rival(&self, found: &Extracted) -> Option<(Method, (usize, usize))> {
        let text = self.text;
        let bytes = text.as_bytes();
        let (start, end) = found.span;
        let mut parser = tolerant::Parser::new(text);
        let mut differs = |span: (usize, usize), lenient: bool| {
            if span.0 < end && start < span.1 {
                return false;
            }
            let value = self.parse(span.0, span.1, true).ok().or_else(|| {
                if !lenient {
                    return None;
                }
                let read = parser.run(span.0, span.1, true).ok()?;
                let rest = text.get(read.span.1..span.1).unwrap_or_default();
                rest.trim().is_empty().then_some(read.value)
            });
            // An empty object or array declares nothing.
            value.is_some_and(|value| value != found.value && tolerant::has_content(&value))
        };
        for block in self.blocks.iter().filter(|b| b.closed) {
            let span = trimmed(text, block.content.start, block.content.end);
            if matches!(bytes.get(span.0), Some(b'{' | b'[')) && differs(span, true) {
                return Some((Method::Fenced, span));
            }
        }
        let in_block = |at: usize| {
            let after = self.blocks.partition_point(|b| b.content.start <= at);
            after > 0 && self.blocks.get(after - 1).is_some_and(|b| b.content.contains(&at))
        };
        for region in self.regions.iter().filter(|r| r.closed && !in_block(r.start)) {
            let span = (region.start, region.end);
            let marked = json_marker_before(bytes, region.start);
            let wanted = region.array == self.options.want_array;
            if (marked || wanted) && differs(span, marked) {
                return Some((Method::Embedded, span));
            }
        }
        None
    }

    fn direct(&mut self) -> bool {
        if self.two_readings {
            return false;
        }
        self.tried.push("direct");
        let (start, end) = trimmed(self.text, self.floor, self.text.len());
        match self.parse(start, end, false) {
            Ok(value) => self.offer(Self::found(value, Method::Direct, (start, end))),
            Err(error) => {
                self.notes.push(format!("the trimmed text is not JSON ({error})"));
                false
            }
        }
    }

    /// With coercion towards a schema whose top-level type is `array`, and nothing chosen:
    /// a `{` region standing alone (no other value back to back with it, which would make
    /// it one item of a list) is offered, for coercion to wrap in a one-item array.
    fn single_object(&mut self) -> bool {
        if !(self.options.want_array && self.options.coerce && self.guide.is_some())
            || self.two_readings
        {
            return false;
        }
        let (bytes, regions) = (self.text.as_bytes(), self.regions);
        let apart = |a: &Region, b: &Region| {
            let gap = bytes.get(a.end..b.start).unwrap_or_default();
            !gap.iter().all(|&b| scan::is_json_ws(b) || b == b',')
        };
        for (i, region) in regions.iter().enumerate() {
            let alone =
                i.checked_sub(1).and_then(|p| regions.get(p)).is_none_or(|p| apart(p, region))
                    && regions.get(i + 1).is_none_or(|n| apart(region, n));
            if region.array || !region.closed || !alone {
                continue;
            }
            let Ok(value) = self.parse(region.start, region.end, true) else { continue };
            if self.offer(Self::found(value, Method::Embedded, (region.start, region.end))) {
                return true;
            }
        }
        false
    }

    fn repaired(&mut self) -> bool {
        self.tried.push("repaired");
        let (blocks, regions) = (self.blocks, self.regions);
        let (text, floor, want_array) = (self.text, self.floor, self.options.want_array);
        let outcome = repair::repair(text, floor, blocks, regions, want_array, &mut |found| {
            let ambiguous = found.repairs.iter().any(|r| r.kind.is_guess());
            self.offer(Extracted {
                value: found.value,
                method: Method::Repaired,
                span: found.span,
                envelope: false,
                repairs: found.repairs,
                ambiguous,
                candidates: vec![],
            })
        });
        match outcome {
            Ok(()) => true,
            Err(note) => {
                self.notes.push(note);
                false
            }
        }
    }

    fn finish(mut self) -> Result<Extracted, ExtractFailure> {
        if self.chosen.is_none()
            && let Some(deferred) = self.deferred.take()
        {
            self.offer(deferred);
        }
        let Run { chosen, fallback, mut considered, tried, notes, .. } = self;
        match chosen.or(fallback) {
            Some(mut found) => {
                considered.retain(|c| c.span != found.span || c.method != found.method);
                found.candidates = considered;
                Ok(found)
            }
            None => Err(ExtractFailure { methods_tried: tried, detail: notes.join("; ") }),
        }
    }
}

/// The JSON document a string value holds, when it holds a whole non-empty object or
/// array (a document stringified twice).
fn stringified(value: &Value) -> Option<Value> {
    let Value::String(inner) = value else { return None };
    let inner = inner.trim();
    if !(inner.starts_with('{') || inner.starts_with('[')) {
        return None;
    }
    strict_json(inner).ok().filter(tolerant::has_content)
}

/// `text` parsed strictly, its bytes counted as work (`crate::work`).
fn strict_json(text: &str) -> serde_json::Result<Value> {
    crate::work::count(text.len());
    serde_json::from_str(text)
}

/// Whether a `` ```json `` marker (any case) stands right before `at`, blanks between.
fn json_marker_before(bytes: &[u8], at: usize) -> bool {
    let before = bytes.get(..at).unwrap_or_default();
    let blanks = before.iter().rev().take(16).take_while(|&&b| scan::is_json_ws(b)).count();
    let before = before.get(..before.len() - blanks).unwrap_or_default();
    before.len() >= 7
        && before.get(before.len() - 7..).is_some_and(|m| m.eq_ignore_ascii_case(b"```json"))
}

/// The range `start..end` of `text` without leading and trailing whitespace.
fn trimmed(text: &str, start: usize, end: usize) -> (usize, usize) {
    let slice = text.get(start..end).unwrap_or_default();
    let lead = slice.len() - slice.trim_start().len();
    (start + lead, start + lead + slice.trim().len())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const STRICT: ExtractOptions =
        ExtractOptions { want_array: false, repair: false, coerce: false };
    const ARRAY: ExtractOptions = ExtractOptions { want_array: true, repair: false, coerce: false };
    const REPAIR: ExtractOptions =
        ExtractOptions { want_array: false, repair: true, coerce: false };

    /// Renders an outcome as `method value [kind@offset ...]` or `fail method,method`.
    fn render(result: &Result<Extracted, ExtractFailure>) -> String {
        match result {
            Ok(found) => {
                let mut out = format!("{} {}", found.method, found.value);
                for repair in &found.repairs {
                    out.push_str(&format!(" {}@{}", repair.kind, repair.span.0));
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
                Method::Repaired => {
                    tolerant::Parser::new(text).run(start, end, true).ok().map(|r| r.value)
                }
                _ => spanned.and_then(|s| serde_json::from_str::<Value>(s).ok()),
            };
            assert_eq!(reparsed.as_ref(), Some(&found.value), "span of {text:?}");
            assert_eq!(found.method == Method::Repaired, !found.repairs.is_empty(), "{text:?}");
            assert_eq!(
                found.ambiguous,
                found.repairs.iter().any(|r| r.kind.is_guess())
                    || found.ambiguous && options.repair,
                "{text:?}"
            );
            assert!(
                options.repair || !found.ambiguous,
                "strict mode returned an ambiguous result for {text:?}"
            );
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
            r#"direct {"a":"see ```json\n{\"b\": 1}\n```"}"#,
        );
    }

    #[test]
    fn fences_in_order_with_fall_through() {
        // Two blocks with different JSON: two readings, refused (see `several_readings`).
        check("```json\n{\"a\":1}\n```\n```json\n{\"b\":2}\n```", "fail fenced");
        check("```json\n{\"a\":1}\n```\n```json\n{\"a\":1}\n```", r#"fenced {"a":1}"#);
        check("```\nnot json\n```\n```json\n{\"b\": 2}\n```", r#"fenced {"b":2}"#);
        check("```python\nprint(\"hi)\n```\n```json\n{\"b\": 2}\n```", r#"fenced {"b":2}"#);
        check("```python\nprint(1)\n```\nResult: {\"a\": 1}", r#"embedded {"a":1}"#);
        check("```json\n{\"a\": 1}\n```json\n{\"b\": 2}\n```", "fail fenced");
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

    /// Without a schema, a reply that declares two different JSON values has two
    /// readings: strict mode refuses, lenient mode returns the first and says so; a
    /// schema that accepts one of them decides.
    #[test]
    fn several_readings_without_a_schema() {
        let two_fences = "```json\n{\"a\": 1}\n```\nor\n```json\n{'b': 2}\n```";
        let failure = extract(two_fences, &STRICT).unwrap_err();
        assert!(failure.detail.contains("no schema says which is meant"), "{}", failure.detail);
        let found = extract(two_fences, &REPAIR).unwrap();
        assert_eq!(
            (found.method, &found.value, found.ambiguous),
            (Method::Fenced, &json!({"a": 1}), true)
        );
        assert_eq!(
            found.candidates,
            [Considered { method: Method::Fenced, span: (32, 40), verdict: "another_reading" }]
        );
        // Inline ```json markers declare JSON too, whatever its kind.
        let inline = "ok ```json {\"a\": 1} ``` and ```json [1, True] ``` done";
        check(inline, "fail fenced,embedded");
        let found = extract(inline, &REPAIR).unwrap();
        assert_eq!((&found.value, found.ambiguous), (&json!({"a": 1}), true));
        // Prose `{` regions count when they parse; other kinds and non-JSON code do not.
        let prose = "First: {\"a\": 1}. Second: {\"a\": 2}.";
        check(prose, "fail fenced,embedded");
        assert!(extract(prose, &REPAIR).is_ok_and(|f| f.ambiguous && f.value == json!({"a": 1})));
        check("According to [1], {\"a\": 2}", r#"embedded {"a":2}"#);
        check("```python\nx = {'a': 1}\n```\n```json\n{\"b\": 2}\n```", r#"fenced {"b":2}"#);
        check("```json\n{\"a\": 1}\n```\nso {\"a\": 1} it is", r#"fenced {"a":1}"#);
        // A schema chooses, and then nothing is ambiguous.
        let schema = json!({"required": ["b"]});
        let accepts = |v: &Value| v.get("b").is_some();
        let guide = Guide { schema: &schema, accepts: &accepts };
        let found =
            extract_guided(prose.replace("\"a\": 2", "\"b\": 2").as_str(), &STRICT, Some(&guide));
        assert!(found.is_ok_and(|f| !f.ambiguous && f.value == json!({"b": 2})));
        let found = extract_guided(two_fences, &REPAIR, Some(&guide)).unwrap();
        assert_eq!(
            (&found.value, found.ambiguous, found.method),
            (&json!({"b": 2}), false, Method::Repaired)
        );
    }

    #[test]
    fn embedded_candidates() {
        check("The answer is {\"a\": 1}.", r#"embedded {"a":1}"#);
        check("x {\"a\": \"}{\", \"b\": 2} y", r#"embedded {"a":"}{","b":2}"#);
        check("x {\"a\": \"\\\"}\"} y", r#"embedded {"a":"\"}"}"#);
        check("{\"a\": 1} and {\"b\": 2}", "fail fenced,embedded");
        check("{\"a\": 1} and {\"a\": 1}", r#"embedded {"a":1}"#);
        check("use {x} like this: {\"a\":1}", r#"embedded {"a":1}"#);
        // An unclosed bracket makes the rest one truncated region: refused.
        check("a { \"b\": {\"a\": 1}", "fail fenced,embedded,direct");
        // A `{` that prose follows (no member can begin there) is not a parent.
        check("a { b {\"a\": 1}", r#"embedded {"a":1}"#);
        check("{\"a\" oops} then {\"b\": 2}", r#"embedded {"b":2}"#);
        // A broken parent is never searched for a child.
        check("{\"x\": {\"a\": 1}, oops}", "fail fenced,embedded,direct");
        check("{\"a\": {\"b\": 1}, \"c\": {\"d\": 2", "fail fenced,embedded,direct");
        check("{\"a\": 1} trailing } text {", r#"embedded {"a":1}"#);
        check("He said \"{\" then {\"a\": 1}", "fail fenced,embedded,direct");
        check("héllo → {\"ü\": \"ß\"} ✓", r#"embedded {"ü":"ß"}"#);
        check("[{\"a\": 1}, {\"b\": 2}]", r#"direct [{"a":1},{"b":2}]"#);
        check("{\"a\": NaN} {\"b\": [1, {\"c\": 2}]}", r#"embedded {"b":[1,{"c":2}]}"#);
    }

    #[test]
    fn want_array_selects_brackets() {
        check_with(ARRAY, "Items: [1, 2, 3] done", "embedded [1,2,3]");
        check_with(ARRAY, "[{\"a\": 1}, {\"b\": 2}]", r#"direct [{"a":1},{"b":2}]"#);
        check_with(ARRAY, "see [citation] then [\"x\"]", r#"embedded ["x"]"#);
        check_with(ARRAY, "see [1] and [2, 3]", "fail fenced,embedded");
        check_with(ARRAY, "see [1] and [1]", "embedded [1]");
        check_with(ARRAY, "{\"a\": [1]}", r#"direct {"a":[1]}"#);
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
        // An object that is the whole reply is found at the embedded step, and named for
        // what it is: the reply itself.
        check("{\"a\": 1}", r#"direct {"a":1}"#);
        check(" \n{\"a\": 1}\n", r#"direct {"a":1}"#);
        check("ok {\"a\": 1}", r#"embedded {"a":1}"#);
        check("nope", "fail fenced,embedded,direct");
    }

    #[test]
    fn empty_input_and_byte_order_mark() {
        check("", "fail fenced,embedded,direct");
        check("  \n\t ", "fail fenced,embedded,direct");
        check("\u{feff}", "fail fenced,embedded,direct");
        check_with(REPAIR, " ", "fail fenced,embedded,direct,repaired");
        check("\u{feff}{\"a\": 1}", r#"direct {"a":1}"#);
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
        check(&depth(MAX_DEPTH), &format!("direct {}", depth(MAX_DEPTH)));
        // Too deep for the parser: refused, never answered by the inner object.
        check(&depth(MAX_DEPTH + 1), "fail fenced,embedded,direct");
        check(&depth(20_000), "fail fenced,embedded,direct");
        let arrays = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        check(&arrays, "fail fenced,embedded,direct");
        check_with(ARRAY, &arrays, "fail fenced,embedded,direct");
        check_with(REPAIR, &"[".repeat(100_000), "fail fenced,embedded,direct,repaired");
        check_with(REPAIR, &"{\"a\":".repeat(100_000), "fail fenced,embedded,direct,repaired");
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
        let failure = extract("```\nx\n```\nuse {x: 1} and {\"a\" 1}", &STRICT).unwrap_err();
        assert_eq!(
            failure.detail,
            "1 fenced block(s), none holds JSON; 2 `{` region(s), 2 fail to parse; the trimmed \
             text is not JSON (expected value at line 1 column 1)"
        );
        let failure = extract("```json\n{\"a\": 1", &ARRAY).unwrap_err();
        assert!(failure.detail.starts_with("the only fenced block is unclosed; no `[` region"));
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
        check_with(REPAIR, "{\"a\": 1}", r#"direct {"a":1}"#);
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
        let want = ExtractOptions { want_array: true, repair: true, coerce: false };
        check_with(want, "Items: [1, 2,", "repaired [1,2] truncated_tail@13");
    }

    #[test]
    fn serialized_names() {
        assert_eq!(serde_json::to_value(Method::Embedded).unwrap(), json!("embedded"));
        let repair = Repair::at(RepairKind::RawControlCharacter, (3, 4));
        assert_eq!(
            serde_json::to_value(repair).unwrap(),
            json!({"kind": "raw_control_character", "span": [3, 4]})
        );
        for kind in [RepairKind::TrailingComma, RepairKind::SmartQuotes, RepairKind::TruncatedTail]
        {
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
        }
        for method in [Method::Fenced, Method::Embedded, Method::Direct, Method::Repaired] {
            assert_eq!(serde_json::to_value(method).unwrap(), json!(method.as_str()));
        }
    }

    /// Issue 26: the classes of round two, through the whole extraction.
    #[test]
    fn round_two_classes() {
        // A `{` that prose follows is not a parent; a broken JSON parent still is.
        check(
            "The result is {broken and {\"facts\": [\"valid\"]} is here",
            r#"embedded {"facts":["valid"]}"#,
        );
        check("{\nHere it is:\n{\"a\": 1}", r#"embedded {"a":1}"#);
        check("{{\"a\": 1}}", r#"embedded {"a":1}"#);
        check("{x: 1, \"b\": {\"a\": 1}", "fail fenced,embedded,direct");
        check("{\"x\" 1, \"b\": {\"a\": 1}}", "fail fenced,embedded,direct");
        check("{x \"1\", \"b\": {\"a\": 1}}", "fail fenced,embedded,direct");
        // An empty or cut-off value after a complete one: not another reading.
        check("{\"a\": 2}{}", r#"embedded {"a":2}"#);
        check("{\"a\": 2}, []", r#"embedded {"a":2}"#);
        check("{\"a\": 2}\n{\"a\": 2, \"b\": [", r#"embedded {"a":2}"#);
        check("{\"a\": 2}\n{\"b\": 3}", "fail fenced,embedded,direct");
        // Stringified twice: strict refuses, lenient decodes.
        let twice = r#""{\"a\": [1, 2]}""#;
        check(twice, "fail fenced,embedded,direct");
        let found = extract(twice, &REPAIR).unwrap();
        assert_eq!((found.value, found.method), (json!({"a": [1, 2]}), Method::Repaired));
        assert_eq!(found.repairs, [Repair::at(RepairKind::StringifiedJson, (0, twice.len()))]);
        // Values back to back: the schema picks one, or wants the list.
        let schema = json!({"required": ["b"]});
        let accepts = |v: &Value| v.get("b").is_some();
        let guide = Guide { schema: &schema, accepts: &accepts };
        let found = extract_guided("{\"a\": 1}\n{\"b\": 2}", &STRICT, Some(&guide));
        assert!(found.is_ok_and(|f| f.value == json!({"b": 2}) && !f.ambiguous));
        let any = |_: &Value| true;
        let loose = Guide { schema: &schema, accepts: &any };
        let e = extract_guided("{\"a\": 1}\n{\"b\": 2}", &STRICT, Some(&loose)).unwrap_err();
        assert_eq!(e.methods_tried, ["fenced", "embedded", "direct"], "{}", e.detail);
        let list = ExtractOptions { want_array: true, repair: true, coerce: false };
        let found = extract("{\"a\": 1}\n{\"b\": 2}", &list).unwrap();
        assert_eq!((&found.value, found.ambiguous), (&json!([{"a": 1}, {"b": 2}]), false));
        assert_eq!(found.repairs.last().map(|r| r.kind), Some(RepairKind::JoinedValues));
        // A single object where the schema wants an array is wrapped by coercion, but
        // never one of several objects back to back.
        let schema = json!({"type": "array", "items": {"type": "object"}});
        let is_list = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_object));
        let guide = Guide { schema: &schema, accepts: &is_list };
        let coerce = ExtractOptions { want_array: true, repair: false, coerce: true };
        let found = extract_guided("Only {\"id\": 1} matches.", &coerce, Some(&guide)).unwrap();
        assert_eq!(found.value, json!([{"id": 1}]));
        assert_eq!(found.repairs[0].kind, RepairKind::WrappedInArray);
        let e = extract_guided("{\"id\": 1}\n{\"id\": 2}", &coerce, Some(&guide)).unwrap_err();
        assert_eq!(e.methods_tried, ["fenced", "embedded", "direct"], "{}", e.detail);
        let lenient = ExtractOptions { repair: true, ..coerce };
        let found = extract_guided("{\"id\": 1}\n{\"id\": 2}", &lenient, Some(&guide)).unwrap();
        assert_eq!(found.value, json!([{"id": 1}, {"id": 2}]));
        // Missing values are null, and a schema that forbids null then refuses them.
        let found = extract("{\"a\": 1, \"b\": }", &REPAIR).unwrap();
        assert_eq!((found.value, found.ambiguous), (json!({"a": 1, "b": null}), false));
        // Bare prefixes stay refused.
        for prefix in ["{", "[", "{\"hel", "{\"a\":"] {
            check_with(REPAIR, prefix, "fail fenced,embedded,direct,repaired");
        }
    }

    /// The costs of the round-two shapes grow linearly: 4 times the text takes about 4
    /// times the work, never 16. The work counted is every byte a search looks at and every
    /// byte handed to the strict or the tolerant parser (`crate::work`), so a step that
    /// searched or parsed again from each opener, or a look-ahead to the end of the text
    /// from each byte, fails here.
    #[test]
    fn round_two_shapes_stay_linear() {
        let shapes = [
            ("", "{ see {"),
            ("", "{\"a\": 1 # x}\n"),
            ("", "{\"a\": <!-- "),
            ("", "{\"a\": [\"x]}"),
            ("", "{\"a\": 1}{} "),
            ("", "{\"c\": \"p(\"x\")\n"),
            ("", "{te!st: `a"),
            ("", "\"k\": 1, "),
            ("", "{\"a\": /* "),
            // Inside one object: each value's search for a closing fence, remembered.
            ("{", "\"k\": \"```x\", "),
        ];
        for (head, unit) in shapes {
            crate::work::assert_linear(&format!("{head}{unit:?}"), 8 << 10, |bytes| {
                let text = format!("{head}{}", unit.repeat(bytes / unit.len()));
                crate::work::work_of(|| (extract(&text, &REPAIR), extract(&text, &STRICT)))
            });
        }
    }

    /// Asserts that extraction finds nothing in `text` after trying every method `options`
    /// allow (not a refusal that gave up early).
    #[track_caller]
    fn refused(text: &str, options: &ExtractOptions) {
        let e = extract(text, options).unwrap_err();
        let mut all = vec!["fenced", "embedded", "direct"];
        if options.repair {
            all.push("repaired");
        }
        let head: String = text.chars().take(40).collect();
        assert_eq!(e.methods_tried, all, "{head:?}…: {}", e.detail);
    }

    /// The hostile inputs of the benchmark (which times them at 1 MiB), at a quarter of its
    /// size: results are asserted, not timings; a cost quadratic in the text would still
    /// take minutes here.
    #[test]
    fn hostile_inputs() {
        const SIZE: usize = 1 << 18;
        let fill = |unit: &str| unit.repeat(SIZE / unit.len());
        let both = [STRICT, REPAIR];
        for options in both {
            refused(&fill("{"), &options);
            refused(&fill("["), &ExtractOptions { want_array: true, ..options });
            refused(&fill("{\"a\":"), &options);
            refused(&fill("\""), &options);
            // Strict: refused; lenient: at most a truncated string full of guessed quotes.
            let quotes = extract(&fill("{\"a\":\"\\\"{"), &options);
            assert!(quotes.as_ref().map_or(true, |f| f.ambiguous && options.repair), "{quotes:?}");
            refused(&fill("```\n"), &options);
            refused(&fill("```"), &options);
            refused(&fill("{\"a\": [1, 2, }]}"), &options);
            let fences = format!("{}```json\n{{\"a\": 1}}\n```", fill("```\n"));
            assert_eq!(extract(&fences, &options).map(|f| f.method), Ok(Method::Fenced));
            let prose = fill("Lorem ipsum dolor sit amet. ");
            refused(&prose, &options);
            let tail = format!("{prose}\n```json\n{{\"a\": 1}}\n```\n");
            assert_eq!(extract(&tail, &options).map(|f| f.value), Ok(json!({"a": 1})));
        }
        // The shapes of the newer repairs and of two readings.
        let unquoted = format!("{{{}\"b\": 1}}", fill("\"a\": x, "));
        refused(&unquoted, &STRICT);
        let found = extract(&unquoted, &REPAIR).map(|f| f.value);
        assert_eq!(found, Ok(json!({"a": "x", "b": 1})));
        let fenced = format!("{}```\"]", fill("[\"```{\"a\": [\""));
        assert!(extract(&fenced, &ExtractOptions { want_array: true, ..REPAIR }).is_ok());
        let same = fill("```json\n{'a': 1}\n```\n");
        refused(&same, &STRICT);
        let found = extract(&same, &REPAIR).unwrap();
        assert_eq!((found.value, found.ambiguous), (json!({"a": 1}), false));
        let distinct: String =
            (0..SIZE / 24).map(|i| format!("```json\n{{'a': {i}}}\n```\n")).collect();
        refused(&distinct, &STRICT);
        let found = extract(&distinct, &REPAIR).unwrap();
        assert_eq!((found.value, found.ambiguous), (json!({"a": 0}), true));
        let truncated = format!("{{\"a\": \"{}", "x".repeat(SIZE));
        assert_eq!(
            extract(&truncated, &REPAIR).map(|f| f.value["a"].as_str().map(str::len)),
            Ok(Some(SIZE))
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
                        found
                            .repairs
                            .iter()
                            .all(|r| r.span.0 <= r.span.1 && r.span.1 <= text.len()),
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
            // Around prose without backticks or JSON of its own (a `{` or `[` there would
            // be a second candidate, and without a schema two readings are ambiguous), the
            // fenced block is what is found, whole.
            let prose = |s: &str| s.replace(['`', '{', '['], "");
            let clean = format!("{}\n```json\n{json}\n```\n{}", prose(&before), prose(&after));
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
            let whole = before.trim().is_empty() && after.trim().is_empty();
            let method = if whole { Method::Direct } else { Method::Embedded };
            prop_assert_eq!(found.map(|f| (f.method, f.value, f.span)), Ok((method, value.clone(), (before.len(), before.len() + json.len()))));
            let array = Value::Array(vec![value]);
            let json = serde_json::to_string(&array).unwrap_or_default();
            let text = format!("{before}{json}{after}");
            let found = extract(&text, &ARRAY);
            prop_assert_eq!(found.map(|f| (f.value, f.span)), Ok((array, (before.len(), before.len() + json.len()))));
        }

        /// Two fenced blocks or two prose objects: with different values strict mode
        /// refuses and lenient mode returns the first, flagged; with the same value twice
        /// there is one reading.
        #[test]
        fn two_values_without_a_schema_are_two_readings(
            first in json_object(),
            second in json_object(),
            between in PROSE,
            fenced: bool,
        ) {
            let wrap = |v: &Value| if fenced { format!("\n```json\n{v}\n```\n") } else { v.to_string() };
            for other in [&second, &first] {
                let text = format!("{}{between}{}", wrap(&first), wrap(other));
                // An empty object declares nothing: it is no second reading.
                let distinct = *other != first && tolerant::has_content(other);
                let strict = extract(&text, &STRICT);
                prop_assert_eq!(strict.as_ref().map(|f| &f.value).ok(), (!distinct).then_some(&first), "{}", text);
                let lenient = extract(&text, &REPAIR);
                prop_assert!(lenient.is_ok(), "{}", text);
                let lenient = lenient.unwrap_or_else(|_| unreachable!());
                // Back to back (or separated by commas only), prose objects are read as a
                // list (another reading).
                let back_to_back =
                    !fenced && between.trim_matches(|c: char| c.is_whitespace() || c == ',').is_empty();
                if !back_to_back {
                    prop_assert_eq!(&lenient.value, &first, "{}", text);
                }
                prop_assert_eq!(lenient.ambiguous, distinct, "{}", text);
            }
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
