//! Source positions for RFC 6901 JSON pointers, for compiler-style diagnostics.
//!
//! Validator findings name the offending value with a JSON pointer such as
//! `/boundary/temperature`. This module maps such a pointer back to a byte [`Span`] in the JSON
//! or YAML text the value was read from ([`locate`], [`locate_key`], [`locate_best`]), and turns a
//! byte offset into a 1-based line and column ([`line_col`], or [`LineIndex`] for many lookups)
//! and the text of that line ([`line_text`]).
//!
//! * **JSON** (strict RFC 8259) is walked by a small iterative scanner that compares object keys
//!   after unescaping them and skips everything off the path without building a tree. It is
//!   linear in the size of the text, handles any nesting depth, and checks the whole document:
//!   malformed text locates nothing.
//! * **YAML** is walked through the event stream of `granit_parser` (re-exported by
//!   `serde_saphyr`). Block and flow styles, quoted keys, anchors and aliases are understood; only
//!   the first document of a stream is searched. A scalar key matches a pointer token equal to
//!   its text (so `1: x` is found by `/1`); complex (collection) keys never match, and merge keys
//!   (`<<`) are not expanded, so a merged-in value is found by [`locate_best`] at its mapping.
//!
//! Conventions shared by both syntaxes:
//!
//! * Spans are half-open byte ranges into the text passed in; a value's span covers the whole
//!   value (an object with its braces, a string with its quotes). A YAML alias is located at its
//!   `*name` token, and YAML anchors and tags are not part of a node's span. A YAML block
//!   sequence starts at its first `-`; a `|` or `>` block scalar covers its content lines, without
//!   the indicator line and trailing line breaks; an empty value (`key:`) has an empty span.
//! * When an object has duplicate keys, the **last** member wins, as in `serde_json`: the path is
//!   searched only under the last value of a repeated key.
//! * A leading byte order mark is skipped, and is not counted as a column.
//! * Lines end at `\n`; a `\r` before it is not part of the line's text.
//!
//! ```
//! use pactum::source::{Syntax, line_col, line_text, locate};
//!
//! let text = "{\n  \"a\": [1, 2]\n}\n";
//! let span = locate(text, Syntax::Json, "/a/1").unwrap();
//! assert_eq!(&text[span.start..span.end], "2");
//! assert_eq!(line_col(text, span.start), (2, 12));
//! assert_eq!(line_text(text, 2), "  \"a\": [1, 2]");
//! ```

use serde_saphyr::granit_parser::{Event, Marker, Parser, ScalarStyle, StructureStyle};
use std::collections::HashMap;

/// The byte order mark some editors put at the start of a file.
const BOM: &str = "\u{feff}";

/// A half-open range of byte offsets into a source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// Offset of the first byte.
    pub start: usize,
    /// Offset one past the last byte.
    pub end: usize,
}

impl Span {
    /// The span `start..end`.
    pub const fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// The text this span covers, or `None` if it does not fit `text` (out of range, reversed, or
    /// not on character boundaries).
    pub fn slice(self, text: &str) -> Option<&str> {
        text.get(self.start..self.end)
    }
}

/// The syntax of a source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syntax {
    /// Strict RFC 8259 JSON.
    Json,
    /// YAML 1.2 (only the first document of a stream is searched).
    Yaml,
}

/// Where the value at `pointer` sits in `text`.
///
/// Returns `None` if the text is malformed, the pointer is not a valid RFC 6901 pointer (it must
/// be empty or start with `/`), or no value exists at that path. The empty pointer names the whole
/// document. For a pointer whose last token names an object key that does not exist (e.g. a
/// missing required property reported at its parent, or `additionalProperties` naming an extra
/// key), callers pass the parent pointer; for an existing key, [`locate_key`] gives the span of
/// the key itself.
pub fn locate(text: &str, syntax: Syntax, pointer: &str) -> Option<Span> {
    let tokens = strict_tokens(pointer)?;
    let (walk, leaves) = Walk::run(text, syntax, &[tokens]);
    if !walk.complete {
        return None;
    }
    walk.current(leaves[0])?.value
}

/// The span of the property name (a quoted key includes its quotes) of the object member at
/// `pointer`.
///
/// Returns `None` where [`locate`] would, and also for the whole document and array elements,
/// which have no name.
pub fn locate_key(text: &str, syntax: Syntax, pointer: &str) -> Option<Span> {
    let tokens = strict_tokens(pointer)?;
    let (walk, leaves) = Walk::run(text, syntax, &[tokens]);
    if !walk.complete {
        return None;
    }
    walk.current(leaves[0])?.key
}

/// Best location for a diagnostic: the value at `pointer`, else the deepest existing ancestor (so
/// a finding is never without a position).
///
/// This never fails: for malformed text it uses whatever was found before the error, and when
/// nothing was found it returns the empty span at offset 0. A pointer that does not start with
/// `/` is read as if it did.
pub fn locate_best(text: &str, syntax: Syntax, pointer: &str) -> Span {
    locate_best_many(text, syntax, &[pointer])[0]
}

/// [`locate_best`] for many pointers into one text, in one pass over it: linear in the
/// size of the text plus the length of the pointers, where a [`locate_best`] per pointer
/// would be linear in the text *times* the number of pointers. The spans come in the order
/// of `pointers`.
///
/// ```
/// use pactum::source::{Span, Syntax, locate_best_many};
///
/// let text = r#"{"a": [10, 20], "b": {"c": true}}"#;
/// let spans = locate_best_many(text, Syntax::Json, &["/a/1", "/b/c", "/b/missing"]);
/// let shown: Vec<&str> = spans.iter().map(|s| s.slice(text).unwrap()).collect();
/// assert_eq!(shown, ["20", "true", r#"{"c": true}"#]);
/// ```
pub fn locate_best_many(text: &str, syntax: Syntax, pointers: &[&str]) -> Vec<Span> {
    let tokens: Vec<Vec<String>> = pointers.iter().map(|p| pointer_tokens(p)).collect();
    let (walk, leaves) = Walk::run(text, syntax, &tokens);
    leaves.iter().map(|&leaf| walk.best(leaf)).collect()
}

/// 1-based line and 1-based column counted in Unicode scalar values (chars), for a byte offset
/// (clamped to text length / char boundary).
///
/// This scans the text up to `offset`; use a [`LineIndex`] for many lookups in one text.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = floor_char_boundary(text, offset);
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|&&byte| byte == b'\n').count() + 1;
    let line_start = before.iter().rposition(|&byte| byte == b'\n').map_or(0, |i| i + 1);
    (line, column(text, line_start, offset))
}

/// The text of 1-based line `line` without its line terminator (handles `\n` and `\r\n`), or ""
/// if out of range. A byte order mark opening the first line is left out.
pub fn line_text(text: &str, line: usize) -> &str {
    match line.checked_sub(1).and_then(|index| text.split('\n').nth(index)) {
        Some(raw) => trim_line(raw, line),
        None => "",
    }
}

/// A precomputed index of line starts for many lookups in one text (O(log n) per lookup).
///
/// Pass the same text the index was built from to its methods. A different text gives wrong
/// positions, but never a panic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineIndex {
    /// Byte offset at which each line starts; the first is always 0.
    starts: Vec<usize>,
}

impl LineIndex {
    /// Index the line starts of `text`.
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// The number of lines (a text ending in `\n` has an empty last line).
    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// Same as the free function [`line_col`], in O(log n) plus the length of the line.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(text, offset);
        let line = self.starts.partition_point(|&start| start <= offset).max(1);
        let line_start = self.starts.get(line - 1).map_or(0, |&start| start.min(offset));
        (line, column(text, line_start, offset))
    }

    /// Same as the free function [`line_text`], without scanning the text.
    pub fn line_text<'t>(&self, text: &'t str, line: usize) -> &'t str {
        let Some(&start) = line.checked_sub(1).and_then(|index| self.starts.get(index)) else {
            return "";
        };
        let end = self.starts.get(line).map_or(text.len(), |&next| next.saturating_sub(1));
        text.get(start..end).map_or("", |raw| trim_line(raw, line))
    }
}

/// Characters an [`Excerpt`] shows on each side of its column: a finding never copies a
/// whole line, however long (a minified or hostile one-line file).
pub const EXCERPT_SIDE: usize = 80;

/// A window of one source line around a column: at most [`EXCERPT_SIDE`] characters before
/// it and [`EXCERPT_SIDE`] from it, so a report's size does not grow with the line's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Excerpt {
    /// The window, without the line terminator.
    pub text: String,
    /// The 1-based column (in characters) of the window's first character in the line.
    pub first_column: usize,
    /// Whether the line goes on before the window.
    pub cut_before: bool,
    /// Whether the line goes on after the window.
    pub cut_after: bool,
    /// The whole line's length in characters.
    pub line_chars: usize,
}

impl Excerpt {
    /// An excerpt of a short line, whole (tests and callers that hold only a line).
    pub fn whole(line: &str) -> Excerpt {
        let text = line.trim_end_matches(['\n', '\r']).to_string();
        Excerpt { line_chars: text.chars().count(), text, first_column: 1, ..Excerpt::default() }
    }
}

/// Where one finding sits: its line, column and excerpt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub line: usize,
    pub column: usize,
    pub excerpt: Excerpt,
}

impl LineIndex {
    /// The byte range of line `line` (1-based) without its terminator, a BOM left out of
    /// the first line.
    fn line_range(&self, text: &str, line: usize) -> (usize, usize) {
        let Some(&start) = line.checked_sub(1).and_then(|i| self.starts.get(i)) else {
            return (text.len(), text.len());
        };
        let mut end = self.starts.get(line).map_or(text.len(), |&next| next.saturating_sub(1));
        end = end.max(start);
        if text.as_bytes().get(start..end).is_some_and(|b| b.ends_with(b"\r")) {
            end -= 1;
        }
        let start = if line == 1 && text.starts_with(BOM) { BOM.len().min(end) } else { start };
        (start, end)
    }

    /// Line, column and excerpt for each byte offset into `text`, in the order given.
    /// Linear in the text plus the offsets (sorted once): columns are counted forward from
    /// the previous offset on the same line, each line's length is counted once, and an
    /// excerpt reads only its window.
    pub fn place_offsets(&self, text: &str, offsets: &[usize]) -> Vec<Placed> {
        let mut order: Vec<usize> = (0..offsets.len()).collect();
        order.sort_by_key(|&i| offsets[i]);
        let mut out: Vec<Option<Placed>> = vec![None; offsets.len()];
        let mut previous: Option<(usize, usize, usize)> = None; // line, offset, column
        let mut line_chars: HashMap<usize, usize> = HashMap::new();
        for i in order {
            let offset = floor_char_boundary(text, offsets[i]);
            let line = self.starts.partition_point(|&start| start <= offset).max(1);
            let (start, end) = self.line_range(text, line);
            let offset = offset.clamp(start, end.max(start));
            let column = match previous {
                Some((l, o, c)) if l == line && o <= offset => {
                    c + text.get(o..offset).map_or(0, chars_in)
                }
                _ => text.get(start..offset).map_or(0, chars_in) + 1,
            };
            previous = Some((line, offset, column));
            let chars =
                *line_chars.entry(line).or_insert_with(|| text.get(start..end).map_or(0, chars_in));
            let excerpt = window(text, start, end, offset, column, chars);
            out[i] = Some(Placed { line, column, excerpt });
        }
        out.into_iter().flatten().collect()
    }

    /// The excerpt of line `line` around the 1-based character `column` (a finding that
    /// came with its position, such as a parse error): linear in the line.
    pub fn excerpt_at(&self, text: &str, line: usize, column: usize) -> Excerpt {
        let (start, end) = self.line_range(text, line);
        let Some(slice) = text.get(start..end) else { return Excerpt::default() };
        let target = column.max(1) - 1;
        let offset = slice.char_indices().nth(target).map_or(end, |(i, _)| start + i);
        let chars = slice.chars().count();
        window(text, start, end, offset, target.min(chars) + 1, chars)
    }
}

/// The characters of `text`, its bytes counted as work (`crate::work`: the cost test of
/// [`LineIndex::place_offsets`]).
fn chars_in(text: &str) -> usize {
    crate::work::count(text.len());
    text.chars().count()
}

/// The window of the line `start..end` around `offset` (at 1-based `column`).
fn window(
    text: &str,
    start: usize,
    end: usize,
    offset: usize,
    column: usize,
    line_chars: usize,
) -> Excerpt {
    let Some(before) = text.get(start..offset) else { return Excerpt::default() };
    let from = before.char_indices().rev().nth(EXCERPT_SIDE - 1).map_or(start, |(i, _)| start + i);
    let after = text.get(offset..end).unwrap_or("");
    let to = after.char_indices().nth(EXCERPT_SIDE).map_or(end, |(i, _)| offset + i);
    let shown_before = text.get(from..offset).map_or(0, |t| t.chars().count());
    Excerpt {
        text: text.get(from..to).unwrap_or("").to_string(),
        first_column: column.saturating_sub(shown_before).max(1),
        cut_before: from > start,
        cut_after: to < end,
        line_chars,
    }
}

/// Split a pointer into its tokens, each unescaped with [`unescape_token`].
///
/// The empty pointer has no tokens, and `/` has one empty token. A pointer that does not start
/// with `/` is not valid RFC 6901; it is split as if it did.
pub fn pointer_tokens(pointer: &str) -> Vec<String> {
    if pointer.is_empty() {
        return Vec::new();
    }
    let rest = pointer.strip_prefix('/').unwrap_or(pointer);
    rest.split('/').map(unescape_token).collect()
}

/// Unescape one pointer token: `~1` becomes `/`, then `~0` becomes `~`. Any other `~` is kept.
pub fn unescape_token(token: &str) -> String {
    if token.contains('~') { token.replace("~1", "/").replace("~0", "~") } else { token.to_owned() }
}

/// Escape one key or index for use as a pointer token: `~` becomes `~0` and `/` becomes `~1`.
pub fn escape_token(token: &str) -> String {
    if token.contains(['~', '/']) {
        token.replace('~', "~0").replace('/', "~1")
    } else {
        token.to_owned()
    }
}

/// The tokens of a valid RFC 6901 pointer (empty, or starting with `/`).
fn strict_tokens(pointer: &str) -> Option<Vec<String>> {
    (pointer.is_empty() || pointer.starts_with('/')).then(|| pointer_tokens(pointer))
}

/// The array index a token names: `0`, or decimal digits without a leading zero.
fn array_index(token: &str) -> Option<usize> {
    let digits = token.bytes().all(|byte| byte.is_ascii_digit());
    if token.is_empty() || !digits || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

/// The largest char boundary at or before `offset`, clamped to the text.
fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The 1-based column of `offset` on the line starting at `line_start`, skipping a leading BOM.
fn column(text: &str, line_start: usize, offset: usize) -> usize {
    let start =
        if line_start == 0 && text.starts_with(BOM) { BOM.len().min(offset) } else { line_start };
    text.get(start..offset).map_or(0, |before| before.chars().count()) + 1
}

/// Line `line`'s raw text without its `\r`, and without a BOM if it is the first line.
fn trim_line(raw: &str, line: usize) -> &str {
    let raw = raw.strip_suffix('\r').unwrap_or(raw);
    if line == 1 { raw.strip_prefix(BOM).unwrap_or(raw) } else { raw }
}

/// What was found for one node of the pointers' trie.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// The span of the member's key, for an object member.
    key: Option<Span>,
    /// The span of the whole value, once it is complete.
    value: Option<Span>,
}

/// The trie node of the document itself.
const ROOT: usize = 0;

/// One prefix of the pointers searched for: the document (the root), or a node reached
/// from its parent by one token.
#[derive(Debug, Default)]
struct Node {
    parent: usize,
    /// Children by token, and by array index for tokens that are one.
    keys: std::collections::HashMap<String, usize>,
    indexes: std::collections::HashMap<usize, usize>,
    /// How many times a value for this node was entered (a duplicate key enters it again).
    visits: u32,
    /// The parent's `visits` when this node was last entered: a slot filled while an earlier
    /// member of a repeated key was read is stale, since the last member wins.
    entered_in: u32,
    slot: Slot,
}

/// The state of a search for a set of pointers, shared by both syntaxes: a trie of the
/// pointers' tokens. A value is *on the path* when its path is a prefix of some pointer;
/// the scanners carry its trie node, and what is found for it goes to that node's slot.
struct Walk {
    nodes: Vec<Node>,
    /// Whether the whole text (the first document, for YAML) was read without error.
    complete: bool,
}

impl Walk {
    /// Search `text` for every pointer given by its tokens; returns the walk and each
    /// pointer's trie node.
    fn run(text: &str, syntax: Syntax, pointers: &[Vec<String>]) -> (Self, Vec<usize>) {
        let mut walk = Walk { nodes: vec![Node { visits: 1, ..Node::default() }], complete: false };
        let leaves = pointers.iter().map(|tokens| walk.insert(tokens)).collect();
        walk.complete = match syntax {
            Syntax::Json => scan_json(text, &mut walk),
            Syntax::Yaml => scan_yaml(text, &mut walk),
        }
        .is_some();
        (walk, leaves)
    }

    /// Adds a pointer to the trie; returns its node.
    fn insert(&mut self, tokens: &[String]) -> usize {
        let mut at = ROOT;
        for token in tokens {
            at = match self.nodes[at].keys.get(token) {
                Some(&child) => child,
                None => {
                    let child = self.nodes.len();
                    self.nodes.push(Node { parent: at, ..Node::default() });
                    self.nodes[at].keys.insert(token.clone(), child);
                    if let Some(index) = array_index(token) {
                        self.nodes[at].indexes.insert(index, child);
                    }
                    child
                }
            };
        }
        at
    }

    /// Whether members of an on-path object at `node` can be on the path (so their keys
    /// must be read).
    fn wants_keys(&self, node: usize) -> bool {
        !self.nodes[node].keys.is_empty()
    }

    /// The child of `node` for an object member named `key`.
    fn child_key(&self, node: usize, key: &str) -> Option<usize> {
        self.nodes[node].keys.get(key).copied()
    }

    /// The child of `node` for array element `index`.
    fn child_index(&self, node: usize, index: usize) -> Option<usize> {
        self.nodes[node].indexes.get(&index).copied()
    }

    /// A value for `node` starts (with its key, for an object member): it replaces what an
    /// earlier member with the same key (a duplicate, which this one overrides) led to.
    fn enter(&mut self, node: usize, key: Option<Span>) {
        let parent_visits = self.nodes[self.nodes[node].parent].visits;
        let entered = &mut self.nodes[node];
        entered.visits += 1;
        entered.entered_in = parent_visits;
        entered.slot = Slot { key, value: None };
    }

    /// The on-path value of `node` is complete and occupies `span`.
    fn found(&mut self, node: usize, span: Span) {
        self.nodes[node].slot.value = Some(span);
    }

    /// The slot of `node`, unless it was never entered or belongs to a member that a later
    /// duplicate key overrode (itself or one of its ancestors).
    fn current(&self, node: usize) -> Option<Slot> {
        let mut at = node;
        while at != ROOT {
            let n = &self.nodes[at];
            if n.visits == 0 || n.entered_in != self.nodes[n.parent].visits {
                return None;
            }
            at = n.parent;
        }
        Some(self.nodes[node].slot)
    }

    /// The best span for `node`: its value, else the deepest current ancestor's value (or
    /// key), else the empty span at 0.
    fn best(&self, node: usize) -> Span {
        let mut chain = vec![node];
        let mut at = node;
        while at != ROOT {
            at = self.nodes[at].parent;
            chain.push(at);
        }
        // The deepest node whose whole chain to the root is current.
        let mut deepest = None;
        for &n in chain.iter().rev() {
            let Some(slot) = self.current_step(n) else { break };
            if let Some(span) = slot.value.or(slot.key) {
                deepest = Some(span);
            }
        }
        deepest.unwrap_or_default()
    }

    /// The slot of `node` when it is current relative to its parent (one step of
    /// [`Walk::current`]).
    fn current_step(&self, node: usize) -> Option<Slot> {
        let n = &self.nodes[node];
        let fresh = node == ROOT || (n.visits > 0 && n.entered_in == self.nodes[n.parent].visits);
        fresh.then_some(n.slot)
    }
}

/// An object or array the JSON scanner is inside of.
#[derive(Clone, Copy)]
struct JsonFrame {
    object: bool,
    /// The container's trie node when it is on the path.
    node: Option<usize>,
    /// Offset of the opening bracket.
    start: usize,
    /// Index of the current member.
    count: usize,
}

/// Walk strict JSON text for `walk`'s pointers; `None` if the text is malformed.
///
/// The loop alternates between reading one value (or opening a container) and, once a value is
/// complete, closing containers until a `,` starts the next member. Containers live on an
/// explicit stack, so any depth is fine.
fn scan_json(text: &str, walk: &mut Walk) -> Option<()> {
    let start = if text.starts_with(BOM) { BOM.len() } else { 0 };
    let mut json = JsonScanner { bytes: text.as_bytes(), pos: start };
    let mut stack: Vec<JsonFrame> = Vec::new();
    let mut node = Some(ROOT);
    loop {
        json.skip_whitespace();
        let start = json.pos;
        let object = match json.peek()? {
            b'{' => Some(true),
            b'[' => Some(false),
            b'"' => json.string(None).map(|_| None)?,
            b't' => json.literal(b"true").map(|()| None)?,
            b'f' => json.literal(b"false").map(|()| None)?,
            b'n' => json.literal(b"null").map(|()| None)?,
            b'-' | b'0'..=b'9' => json.number().map(|()| None)?,
            _ => return None,
        };
        if let Some(object) = object {
            json.pos += 1;
            json.skip_whitespace();
            if json.peek() != Some(if object { b'}' } else { b']' }) {
                let frame = JsonFrame { object, node, start, count: 0 };
                node = json.member(frame, walk)?;
                stack.push(frame);
                continue;
            }
            json.pos += 1;
        }
        if let Some(node) = node {
            walk.found(node, Span::new(start, json.pos));
        }
        loop {
            json.skip_whitespace();
            let Some(top) = stack.last_mut() else {
                return (json.pos == json.bytes.len()).then_some(());
            };
            let byte = json.peek()?;
            json.pos += 1;
            if byte == b',' {
                top.count += 1;
                let frame = *top;
                node = json.member(frame, walk)?;
                break;
            }
            if byte != if top.object { b'}' } else { b']' } {
                return None;
            }
            let frame = stack.pop()?;
            if let Some(node) = frame.node {
                walk.found(node, Span::new(frame.start, json.pos));
            }
        }
    }
}

/// A cursor over JSON text.
struct JsonScanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl JsonScanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Consume `byte`, or fail.
    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// Start member `frame.count` of the container `frame`: read the key and colon of an
    /// object member. Returns the member's trie node when its value is on the path.
    fn member(&mut self, frame: JsonFrame, walk: &mut Walk) -> Option<Option<usize>> {
        if !frame.object {
            let child = frame.node.and_then(|parent| walk.child_index(parent, frame.count));
            if let Some(child) = child {
                walk.enter(child, None);
            }
            return Some(child);
        }
        self.skip_whitespace();
        let key_start = self.pos;
        if self.peek()? != b'"' {
            return None;
        }
        let child = match frame.node.filter(|&parent| walk.wants_keys(parent)) {
            Some(parent) => {
                let key = self.key()?;
                walk.child_key(parent, &key)
            }
            None => self.string(None).map(|_| None)?,
        };
        let key = Span::new(key_start, self.pos);
        self.skip_whitespace();
        self.expect(b':')?;
        if let Some(child) = child {
            walk.enter(child, Some(key));
        }
        Some(child)
    }

    /// Read a string and return its unescaped content, the cursor being on its opening
    /// quote (borrowed from the text when it has no escapes).
    fn key(&mut self) -> Option<std::borrow::Cow<'_, str>> {
        let start = self.pos + 1;
        let plain_end =
            self.bytes.get(start..)?.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
        if let Some(len) = plain_end
            && self.bytes.get(start + len) == Some(&b'"')
        {
            self.pos = start + len + 1;
            let raw = std::str::from_utf8(&self.bytes[start..start + len]).ok()?;
            return Some(std::borrow::Cow::Borrowed(raw));
        }
        self.pos += 1;
        let mut out = String::new();
        loop {
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    return Some(std::borrow::Cow::Owned(out));
                }
                b'\\' => out.push(self.escape()?),
                0..=0x1f => return None,
                first => {
                    // Copy one UTF-8 character (the text is a `str`: `pos` is on a boundary).
                    let len = match first {
                        0..=0x7f => 1,
                        0xc0..=0xdf => 2,
                        0xe0..=0xef => 3,
                        _ => 4,
                    };
                    let bytes = self.bytes.get(self.pos..self.pos + len)?;
                    out.push_str(std::str::from_utf8(bytes).ok()?);
                    self.pos += len;
                }
            }
        }
    }

    /// Read a string, the cursor being on its opening quote. Returns whether its unescaped
    /// content equals `wanted` (always `false` without `wanted`).
    fn string(&mut self, wanted: Option<&str>) -> Option<bool> {
        self.pos += 1;
        let wanted = wanted.map(str::as_bytes);
        let mut equal = wanted.is_some();
        // Bytes of `wanted` matched so far (meaningful while `equal`).
        let mut matched = 0;
        loop {
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    return Some(equal && wanted.is_some_and(|wanted| wanted.len() == matched));
                }
                b'\\' => {
                    let decoded = self.escape()?;
                    if equal {
                        let mut buffer = [0; 4];
                        let decoded = decoded.encode_utf8(&mut buffer).as_bytes();
                        let rest = wanted.and_then(|wanted| wanted.get(matched..));
                        equal = rest.is_some_and(|rest| rest.starts_with(decoded));
                        matched += decoded.len();
                    }
                }
                0..=0x1f => return None,
                byte => {
                    if equal {
                        equal = wanted.and_then(|wanted| wanted.get(matched)) == Some(&byte);
                        matched += 1;
                    }
                    self.pos += 1;
                }
            }
        }
    }

    /// Decode one escape sequence, the cursor being on its backslash. A `\u` escape of a high
    /// surrogate must be followed by one of a low surrogate; lone surrogates are malformed (as
    /// `serde_json` reads them).
    fn escape(&mut self) -> Option<char> {
        let kind = *self.bytes.get(self.pos + 1)?;
        self.pos += 2;
        let decoded = match kind {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                let code = match high {
                    0xD800..=0xDBFF => {
                        self.expect(b'\\')?;
                        self.expect(b'u')?;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                    }
                    _ => high,
                };
                return char::from_u32(code);
            }
            _ => return None,
        };
        Some(decoded)
    }

    /// Read four hex digits.
    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.pos..self.pos + 4)?;
        let mut value = 0;
        for &digit in digits {
            value = value * 16 + char::from(digit).to_digit(16)?;
        }
        self.pos += 4;
        Some(value)
    }

    /// Read a number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => self.digits()?,
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.digits()?;
        }
        Some(())
    }

    /// Read one or more decimal digits.
    fn digits(&mut self) -> Option<()> {
        let start = self.pos;
        while self.peek().is_some_and(|byte| byte.is_ascii_digit()) {
            self.pos += 1;
        }
        (self.pos > start).then_some(())
    }

    /// Read the keyword `word`.
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let found = self.bytes.get(self.pos..)?.starts_with(word);
        found.then(|| self.pos += word.len())
    }
}

/// A mapping or sequence the YAML walk is inside of.
struct YamlFrame {
    mapping: bool,
    flow: bool,
    /// The collection's trie node when it is on the path.
    node: Option<usize>,
    start: usize,
    /// End of the last complete child (the end of a block collection).
    last_end: usize,
    /// Index of the current sequence element.
    count: usize,
    /// Whether the next child of a mapping is a key (else a value).
    want_key: bool,
    /// The trie node of the value after the current key, when it is on the path.
    pending: Option<usize>,
}

/// Walk the first document of a YAML stream for `walk`'s pointers; `None` if it is
/// malformed.
fn scan_yaml(text: &str, walk: &mut Walk) -> Option<()> {
    let mut stack: Vec<YamlFrame> = Vec::new();
    for item in Parser::new_from_str(text) {
        let (event, marks) = item.ok()?;
        let start = byte_offset(text, marks.start)?;
        let end = byte_offset(text, marks.end)?.max(start);
        match event {
            Event::Scalar(value, style, ..) => {
                // A block scalar's span runs over the line breaks and blank lines after it.
                let end = match style {
                    ScalarStyle::Literal | ScalarStyle::Folded => {
                        text.get(start..end).map_or(end, |raw| start + raw.trim_end().len())
                    }
                    _ => end,
                };
                yaml_leaf(&mut stack, walk, Some(&value), Span::new(start, end));
            }
            Event::Alias(_) => yaml_leaf(&mut stack, walk, None, Span::new(start, end)),
            Event::MappingStart(style, ..) => {
                yaml_open(&mut stack, walk, true, style, Span::new(start, end));
            }
            Event::SequenceStart(style, ..) => {
                // An indentless block sequence starts after its first `- `: include the dash.
                let start = match style {
                    StructureStyle::Block => dash_before(text, start),
                    StructureStyle::Flow => start,
                };
                yaml_open(&mut stack, walk, false, style, Span::new(start, end));
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let frame = stack.pop()?;
                let end = if frame.flow { end } else { frame.last_end };
                yaml_close(&mut stack, walk, frame.node, Span::new(frame.start, end));
            }
            Event::DocumentEnd | Event::StreamEnd => return Some(()),
            _ => {}
        }
    }
    None
}

/// A byte offset for a parser marker, which counts chars and (for string input) bytes.
fn byte_offset(text: &str, marker: Marker) -> Option<usize> {
    let offset = match marker.byte_offset() {
        Some(offset) => offset,
        None => text.char_indices().map(|(i, _)| i).chain([text.len()]).nth(marker.index())?,
    };
    text.is_char_boundary(offset).then_some(offset)
}

/// Move `start` back over blanks to a `-` just before it, unless it already is at a `-` entry
/// indicator.
fn dash_before(text: &str, start: usize) -> usize {
    let bytes = text.as_bytes();
    let at_dash = bytes.get(start) == Some(&b'-')
        && matches!(bytes.get(start + 1), None | Some(b' ' | b'\t' | b'\r' | b'\n'));
    if at_dash {
        return start;
    }
    let before = bytes.get(..start).unwrap_or_default();
    let blanks = before.iter().rev().take_while(|&&byte| byte == b' ' || byte == b'\t').count();
    let at = start - blanks;
    if at > 0 && before.get(at - 1) == Some(&b'-') { at - 1 } else { start }
}

/// A YAML node starts: its role in its parent. Returns its trie node when it is on the path.
/// A mapping key is never on the path itself, but a matching scalar key puts the value
/// after it there.
fn yaml_begin(
    stack: &mut [YamlFrame],
    walk: &mut Walk,
    key: Option<&str>,
    span: Span,
) -> Option<usize> {
    let Some(top) = stack.last_mut() else {
        return Some(ROOT);
    };
    if !top.mapping {
        let child = top.node.and_then(|parent| walk.child_index(parent, top.count));
        if let Some(child) = child {
            walk.enter(child, None);
        }
        child
    } else if top.want_key {
        top.pending = top.node.zip(key).and_then(|(parent, key)| walk.child_key(parent, key));
        if let Some(child) = top.pending {
            walk.enter(child, Some(span));
        }
        None
    } else {
        top.pending
    }
}

/// A scalar or alias node.
fn yaml_leaf(stack: &mut [YamlFrame], walk: &mut Walk, key: Option<&str>, span: Span) {
    let node = yaml_begin(stack, walk, key, span);
    yaml_close(stack, walk, node, span);
}

/// A mapping or sequence starts.
fn yaml_open(
    stack: &mut Vec<YamlFrame>,
    walk: &mut Walk,
    mapping: bool,
    style: StructureStyle,
    span: Span,
) {
    let node = yaml_begin(stack, walk, None, span);
    stack.push(YamlFrame {
        mapping,
        flow: style == StructureStyle::Flow,
        node,
        start: span.start,
        last_end: span.end,
        count: 0,
        want_key: true,
        pending: None,
    });
}

/// A node at depth `stack.len()` is complete: record it and move its parent on.
fn yaml_close(stack: &mut [YamlFrame], walk: &mut Walk, node: Option<usize>, span: Span) {
    if let Some(node) = node {
        walk.found(node, span);
    }
    if let Some(top) = stack.last_mut() {
        top.last_end = top.last_end.max(span.end);
        if top.mapping {
            if !top.want_key {
                top.pending = None;
            }
            top.want_key = !top.want_key;
        } else {
            top.count += 1;
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    fn json(text: &str) -> (Syntax, &str) {
        (Syntax::Json, text)
    }

    #[test]
    fn excerpts_are_windows_of_long_lines_with_exact_columns() {
        let line = format!("{{{}\"x\": 1, {}}}", "é".repeat(500), "\"y\": 2,".repeat(300));
        let text = format!("\u{feff}{line}\r\nnext\n");
        let index = LineIndex::new(&text);
        let x = text.find("\"x\"").unwrap();
        let placed = index.place_offsets(&text, &[x, text.len() - 5, 3]);
        assert_eq!((placed[0].line, placed[0].column), (1, 502));
        assert_eq!((placed[0].line, placed[0].column), line_col(&text, x));
        let e = &placed[0].excerpt;
        assert!(e.cut_before && e.cut_after, "{e:?}");
        assert_eq!(e.text.chars().count(), 2 * EXCERPT_SIDE);
        assert_eq!(e.first_column, 502 - EXCERPT_SIDE);
        assert!(e.text[e.text.char_indices().nth(EXCERPT_SIDE).unwrap().0..].starts_with("\"x\""));
        assert_eq!(e.line_chars, line.chars().count());
        assert_eq!((placed[1].line, placed[1].column), (2, 1), "{:?}", placed[1]);
        assert_eq!(placed[1].excerpt, Excerpt::whole("next"));
        assert_eq!(placed[2].column, 1, "the BOM is not a column");
        // A position given as line and column gets the same window.
        assert_eq!(index.excerpt_at(&text, 1, 502), placed[0].excerpt);
        assert!(index.excerpt_at(&text, 9, 1).text.is_empty());
    }

    #[test]
    fn placing_findings_is_linear_in_findings_and_line_length() {
        // One long line with a finding every few bytes: N and 4N of both. The work counted:
        // the bytes whose characters are counted (for columns and the line's length), and
        // every allocation.
        crate::work::assert_linear("findings placed on one long line", 5_000, |n| {
            let text = "[".to_string() + &"1234567,".repeat(n) + "0]";
            let index = LineIndex::new(&text);
            let offsets: Vec<usize> = (0..n).rev().map(|i| 1 + 8 * i).collect();
            let (placed, work) = crate::work::counted(|| index.place_offsets(&text, &offsets));
            assert_eq!(placed[0].column, 2 + 8 * (n - 1));
            let bytes: usize = placed.iter().map(|p| p.excerpt.text.len()).sum();
            assert!(bytes <= n * 2 * EXCERPT_SIDE, "excerpts hold windows, not the line");
            work
        });
    }

    fn yaml(text: &str) -> (Syntax, &str) {
        (Syntax::Yaml, text)
    }

    /// `pointer` locates exactly `expected` in the text; also checks that the line index agrees.
    #[track_caller]
    fn check((syntax, text): (Syntax, &str), pointer: &str, expected: &str) -> Span {
        let span = locate(text, syntax, pointer)
            .unwrap_or_else(|| panic!("{pointer:?} not found in {text:?}"));
        assert_eq!(span.slice(text), Some(expected), "{pointer:?} in {text:?}");
        assert_eq!(locate_best(text, syntax, pointer), span);
        assert_eq!(LineIndex::new(text).line_col(text, span.start), line_col(text, span.start));
        span
    }

    #[track_caller]
    fn missing((syntax, text): (Syntax, &str), pointer: &str) {
        assert_eq!(locate(text, syntax, pointer), None, "{pointer:?} in {text:?}");
        assert_eq!(locate_key(text, syntax, pointer), None, "{pointer:?} in {text:?}");
    }

    #[track_caller]
    fn key<'t>((syntax, text): (Syntax, &'t str), pointer: &str) -> Option<&'t str> {
        locate_key(text, syntax, pointer).and_then(|span| span.slice(text))
    }

    #[test]
    fn json_nested_objects_and_arrays() {
        let text = json(r#"{"a": {"b": [1, {"c": true}, []], "d": null}, "e": -1.5e+3}"#);
        check(text, "", text.1);
        check(text, "/a", r#"{"b": [1, {"c": true}, []], "d": null}"#);
        check(text, "/a/b", r#"[1, {"c": true}, []]"#);
        check(text, "/a/b/0", "1");
        check(text, "/a/b/1", r#"{"c": true}"#);
        check(text, "/a/b/1/c", "true");
        check(text, "/a/b/2", "[]");
        check(text, "/a/d", "null");
        check(text, "/e", "-1.5e+3");
    }

    #[test]
    fn json_whole_document_excludes_whitespace() {
        check(json(" \n\t[1, 2] \r\n"), "", "[1, 2]");
        check(json("\"s\""), "", "\"s\"");
        check(json("0"), "", "0");
    }

    #[test]
    fn json_escaped_keys() {
        let text = json(
            r#"{"a/b": 1, "m~n": 2, "q\"t": 3, "caf\u00e9": 4, "\ud83d\ude00": 5, "\/x\\": 6, "~1": 7, "": 8}"#,
        );
        check(text, "/a~1b", "1");
        check(text, "/m~0n", "2");
        check(text, "/q\"t", "3");
        check(text, "/café", "4");
        check(text, "/😀", "5");
        check(text, "/~1x\\", "6");
        check(text, "/~01", "7");
        check(text, "/", "8");
        missing(text, "/a/b");
        missing(text, "/cafe");
        missing(text, "/caf");
        missing(text, "/café!");
    }

    #[test]
    fn json_non_ascii_columns() {
        let text = json("{\n  \"日本\": \"語\", \"v\": [\"é\", 2]\n}");
        let span = check(text, "/v/1", "2");
        // `  "日本": "語", "v": ["é", ` is 24 chars (31 bytes).
        assert_eq!(line_col(text.1, span.start), (2, 25));
        assert_eq!(line_text(text.1, 2), "  \"日本\": \"語\", \"v\": [\"é\", 2]");
    }

    #[test]
    fn json_crlf() {
        let text = json("{\r\n  \"a\": 1,\r\n  \"b\": [\r\n    true\r\n  ]\r\n}\r\n");
        let span = check(text, "/b/0", "true");
        assert_eq!(line_col(text.1, span.start), (4, 5));
        assert_eq!(line_text(text.1, 4), "    true");
        assert_eq!(LineIndex::new(text.1).line_text(text.1, 4), "    true");
        check(text, "/b", "[\r\n    true\r\n  ]");
    }

    #[test]
    fn json_duplicate_keys_last_wins() {
        let text = json(r#"{"a": 1, "a": 2}"#);
        let span = check(text, "/a", "2");
        assert_eq!(span.start, 14);
        assert_eq!(locate_key(text.1, text.0, "/a"), Some(Span::new(9, 12)));
        // The path continues only under the last duplicate.
        let text = json(r#"{"a": {"b": 1}, "a": {"c": 2}}"#);
        missing(text, "/a/b");
        check(text, "/a/c", "2");
        assert_eq!(locate_best(text.1, text.0, "/a/b").slice(text.1), Some(r#"{"c": 2}"#));
        let text = json(r#"{"a": {"b": 1}, "x": 0, "a": {"b": [2]}}"#);
        check(text, "/a/b", "[2]");
    }

    #[test]
    fn json_missing_paths() {
        let text = json(r#"{"a": [10, 20], "s": "x", "o": {}}"#);
        for pointer in ["/b", "/a/2", "/a/-", "/a/01", "/a/+1", "/a/x", "/s/0", "/o/a", "/a/1/x"] {
            missing(text, pointer);
        }
        missing(json("[0]"), "/a");
        missing(json("[0]"), "/18446744073709551616");
        check(json("[0]"), "/0", "0");
        // Not RFC 6901 pointers.
        missing(text, "a");
        missing(text, "#/a");
    }

    #[test]
    fn json_bom() {
        let text = json("\u{feff}{\"a\": 1}");
        let span = check(text, "/a", "1");
        assert_eq!(line_col(text.1, span.start), (1, 7));
        check(text, "", "{\"a\": 1}");
        assert_eq!(line_text(text.1, 1), "{\"a\": 1}");
    }

    #[test]
    fn json_malformed() {
        for text in [
            "",
            "  ",
            "{",
            "{\"a\": 1,}",
            "{\"a\" 1}",
            "{\"a\": 1 \"b\": 2}",
            "[1 2]",
            "[1,]",
            "[,]",
            "{\"a\": 01}",
            "{\"a\": 1.}",
            "{\"a\": .5}",
            "{\"a\": 1e}",
            "{\"a\": -}",
            "{\"a\": tru}",
            "{\"a\": True}",
            "{\"a\": 1} x",
            "{\"a\": 1}}",
            "[}",
            "{]",
            "{a: 1}",
            "{'a': 1}",
            "{\"a\": \"\\ud800\"}",
            "{\"a\": \"\\udc00\"}",
            "{\"a\": \"\\ud800\\u0041\"}",
            "{\"a\": \"\\x\"}",
            "{\"a\": \"\\u12g4\"}",
            "{\"a\": \"tab\there\"}",
            "{\"a\": \"unterminated}",
            "\u{feff}\u{feff}{}",
        ] {
            missing(json(text), "");
            missing(json(text), "/a");
        }
    }

    #[test]
    fn json_deep_nesting_is_iterative() {
        let depth = 100_000;
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        check(json(&text), "/0/0/0", &text[3..text.len() - 3]);
        let pointer = "/0".repeat(depth);
        assert_eq!(locate(&text, Syntax::Json, &pointer), None);
        let pointer = "/0".repeat(depth - 1);
        check(json(&text), &pointer, "[]");
        // Unclosed: malformed, but the best location still works.
        let open = "[".repeat(depth);
        assert_eq!(locate(&open, Syntax::Json, "/0"), None);
        assert_eq!(locate_best(&open, Syntax::Json, "/0"), Span::default());
        let text = format!("{}1{}", "{\"k\":".repeat(depth), "}".repeat(depth));
        check(json(&text), &"/k".repeat(depth), "1");
    }

    #[test]
    fn many_pointers_in_one_pass_with_duplicate_keys() {
        let text = r#"{"a": {"b": 1, "c": 2}, "a": {"c": 3}, "d": [4, {"e": 5}]}"#;
        let spans = locate_best_many(text, Syntax::Json, &["/a/b", "/a/c", "/d/1/e", "/d/7", ""]);
        let shown: Vec<&str> = spans.iter().map(|s| s.slice(text).unwrap()).collect();
        // The last `a` wins: `/a/b` falls back to it, `/a/c` is its 3.
        assert_eq!(shown, [r#"{"c": 3}"#, "3", "5", r#"[4, {"e": 5}]"#, text]);
        assert_eq!(locate(text, Syntax::Json, "/a/b"), None);
        assert!(locate_best_many(text, Syntax::Json, &[]).is_empty());
    }

    #[test]
    fn locate_best_falls_back_to_ancestors() {
        let text = r#"{"a": {"b": [1, 2]}, "c": 3}"#;
        let best = |pointer| locate_best(text, Syntax::Json, pointer).slice(text);
        assert_eq!(best("/a/b/1"), Some("2"));
        assert_eq!(best("/a/b/7"), Some("[1, 2]"));
        assert_eq!(best("/a/zzz/yyy"), Some(r#"{"b": [1, 2]}"#));
        assert_eq!(best("/nope"), Some(text));
        assert_eq!(best("c"), Some("3"));
        // Malformed text: what was found before the error.
        let broken = r#"{"a": {"b": [1, 2]}, "c": 3"#;
        assert_eq!(locate(broken, Syntax::Json, "/a/b/1"), None);
        let best = locate_best(broken, Syntax::Json, "/a/b/1");
        assert_eq!(best.slice(broken), Some("2"));
        let best = locate_best(broken, Syntax::Json, "/a/x");
        assert_eq!(best.slice(broken), Some(r#"{"b": [1, 2]}"#));
        assert_eq!(locate_best("", Syntax::Json, "/a"), Span::default());
        assert_eq!(locate_best("", Syntax::Yaml, "/a"), Span::default());
        let text = "a:\n  b: [1]\n";
        assert_eq!(locate_best(text, Syntax::Yaml, "/a/b/3").slice(text), Some("[1]"));
        assert_eq!(locate_best(text, Syntax::Yaml, "/x").slice(text), Some("a:\n  b: [1]"));
    }

    #[test]
    fn locate_key_gives_the_property_name() {
        let text = json(r#"{"a": {"b c": 1, "l": [{"k\u00e9": 2}]}}"#);
        assert_eq!(key(text, "/a"), Some(r#""a""#));
        assert_eq!(key(text, "/a/b c"), Some(r#""b c""#));
        assert_eq!(key(text, "/a/l/0/ké"), Some(r#""k\u00e9""#));
        assert_eq!(key(text, ""), None);
        assert_eq!(key(text, "/a/l/0"), None);
        assert_eq!(key(text, "/a/zz"), None);
        let text = yaml("a:\n  \"b c\": 1\n  'd': {e: 2}\n");
        assert_eq!(key(text, "/a"), Some("a"));
        assert_eq!(key(text, "/a/b c"), Some("\"b c\""));
        assert_eq!(key(text, "/a/d"), Some("'d'"));
        assert_eq!(key(text, "/a/d/e"), Some("e"));
        assert_eq!(key(text, "/a/x"), None);
    }

    #[test]
    fn yaml_block_style() {
        let text = yaml("a:\n  b: 1\n  c:\n    - x\n    - y\n  d: true\nz: ~\n");
        check(text, "", "a:\n  b: 1\n  c:\n    - x\n    - y\n  d: true\nz: ~");
        check(text, "/a", "b: 1\n  c:\n    - x\n    - y\n  d: true");
        check(text, "/a/b", "1");
        check(text, "/a/c", "- x\n    - y");
        let span = check(text, "/a/c/1", "y");
        assert_eq!(line_col(text.1, span.start), (5, 7));
        check(text, "/a/d", "true");
        check(text, "/z", "~");
        missing(text, "/a/c/2");
        missing(text, "/a/b/0");
        missing(text, "/b");
        // An empty value is an empty span on its key's line.
        let span = locate("a:\nb: 1\n", Syntax::Yaml, "/a").unwrap();
        assert_eq!((span.start == span.end, line_col("a:\nb: 1\n", span.start).0), (true, 1));
    }

    #[test]
    fn yaml_flow_style() {
        let text = yaml("a: {b: [1, 2], 'c d': x, e: {}}\nf: [[], {g: h}]\n");
        check(text, "/a", "{b: [1, 2], 'c d': x, e: {}}");
        check(text, "/a/b", "[1, 2]");
        check(text, "/a/b/1", "2");
        check(text, "/a/c d", "x");
        check(text, "/a/e", "{}");
        check(text, "/f/0", "[]");
        check(text, "/f/1/g", "h");
        check(yaml("{\"a\": [1, {\"b\": null}]}"), "/a/1/b", "null");
    }

    #[test]
    fn yaml_quoted_and_escaped_keys() {
        let text =
            yaml("\"a/b\": 1\n'it''s': 2\n\"caf\\u00e9\": 3\n\"~\": 4\n1: 5\nplain key: 6\n");
        check(text, "/a~1b", "1");
        check(text, "/it's", "2");
        check(text, "/café", "3");
        check(text, "/~0", "4");
        check(text, "/1", "5");
        check(text, "/plain key", "6");
    }

    #[test]
    fn yaml_multi_line_strings() {
        let text =
            yaml("lit: |\n  hi\n  there\n\nfold: >-\n  a\n  b\nq: \"x\n  y\"\np: one\n  two\n");
        check(text, "/lit", "hi\n  there");
        check(text, "/fold", "a\n  b");
        check(text, "/q", "\"x\n  y\"");
        check(text, "/p", "one\n  two");
    }

    #[test]
    fn yaml_sequences_of_mappings() {
        let text =
            yaml("items:\n  - name: a\n    v: 1\n  - name: b\nflat:\n- k: v\n- - 1\n  - 2\n");
        check(text, "/items", "- name: a\n    v: 1\n  - name: b");
        check(text, "/items/0", "name: a\n    v: 1");
        check(text, "/items/0/v", "1");
        check(text, "/items/1/name", "b");
        check(text, "/flat", "- k: v\n- - 1\n  - 2");
        check(text, "/flat/0", "k: v");
        check(text, "/flat/1", "- 1\n  - 2");
        check(text, "/flat/1/1", "2");
    }

    #[test]
    fn yaml_anchors_aliases_and_tags() {
        let text = yaml("base: &b {x: 1}\nuse: *b\nlist: &l\n  - 1\nt: !!str 5\n");
        check(text, "/base", "{x: 1}");
        check(text, "/base/x", "1");
        check(text, "/use", "*b");
        missing(text, "/use/x");
        assert_eq!(locate_best(text.1, text.0, "/use/x").slice(text.1), Some("*b"));
        check(text, "/list/0", "1");
        check(text, "/t", "5");
        missing(yaml("a: *nowhere\n"), "/a");
    }

    #[test]
    fn yaml_documents_bom_and_crlf() {
        let text = yaml("a: 1\n---\na: 2\nb: 3\n");
        check(text, "/a", "1");
        missing(text, "/b");
        check(yaml("--- \na: 1\n...\n--- [\n"), "/a", "1");
        let text = yaml("\u{feff}k: é\nv: [x]\n");
        let span = check(text, "/k", "é");
        assert_eq!(line_col(text.1, span.start), (1, 4));
        let text = yaml("a:\r\n  b: [1,\r\n    2]\r\n");
        let span = check(text, "/a/b/1", "2");
        assert_eq!(line_col(text.1, span.start), (3, 5));
        check(text, "/a/b", "[1,\r\n    2]");
        missing(yaml(""), "");
        missing(yaml("# only a comment\n"), "");
    }

    #[test]
    fn yaml_non_ascii_columns_and_complex_keys() {
        let text = yaml("ключ: значение\nx: [日本, 語]\n");
        let span = check(text, "/x/1", "語");
        assert_eq!(line_col(text.1, span.start), (2, 9));
        let span = check(text, "/ключ", "значение");
        assert_eq!(line_col(text.1, span.start), (1, 7));
        let text = yaml("? [a]\n: 1\n? {b: c}\n: 2\nb: 3\n");
        check(text, "/b", "3");
        missing(text, "/a");
        check(yaml("a: 1\na: 2\n"), "/a", "2");
    }

    #[test]
    fn yaml_malformed() {
        for text in ["a: [1, 2\n", "a: b: c\n", "a:\n- b\n c: d\n", "'open\n", "a: 1\n b: 2\n"] {
            missing(yaml(text), "");
            missing(yaml(text), "/a");
        }
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        missing(yaml(&deep), "");
        let best = locate_best(&deep, Syntax::Yaml, "/0/0");
        assert_eq!(best.slice(&deep).map(|s| s.trim_start_matches('[')), Some(""), "{best:?}");
        assert!(best.start <= 2, "at the outer brackets, before the parser gave up: {best:?}");
    }

    #[test]
    fn line_helpers() {
        let text = "ab\néx\r\n\n\u{1F600}z";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 2), (1, 3));
        assert_eq!(line_col(text, 3), (2, 1));
        assert_eq!(line_col(text, 4), (2, 1)); // inside `é`: floored
        assert_eq!(line_col(text, 5), (2, 2));
        assert_eq!(line_col(text, 8), (3, 1));
        assert_eq!(line_col(text, 9), (4, 1));
        assert_eq!(line_col(text, 13), (4, 2));
        assert_eq!(line_col(text, 14), (4, 3));
        assert_eq!(line_col(text, 999), (4, 3));
        assert_eq!(line_col("", 5), (1, 1));
        assert_eq!(line_text(text, 1), "ab");
        assert_eq!(line_text(text, 2), "éx");
        assert_eq!(line_text(text, 3), "");
        assert_eq!(line_text(text, 4), "\u{1F600}z");
        assert_eq!(line_text(text, 0), "");
        assert_eq!(line_text(text, 5), "");
        let index = LineIndex::new(text);
        assert_eq!(index.line_count(), 4);
        for line in 0..=5 {
            assert_eq!(index.line_text(text, line), line_text(text, line));
        }
        for offset in 0..=text.len() + 1 {
            assert_eq!(index.line_col(text, offset), line_col(text, offset));
        }
        // An index of another text gives wrong positions, but stays inside the text.
        let other = LineIndex::new("a\nb\nc\nd\ne\n");
        for offset in 0..=text.len() + 1 {
            let (line, column) = other.line_col(text, offset);
            assert!((1..=other.line_count()).contains(&line) && column >= 1, "{offset}");
        }
        for line in 0..=7 {
            let shown = other.line_text(text, line);
            assert!(text.contains(shown), "{line}: {shown:?}");
        }
    }

    #[test]
    fn pointer_token_helpers() {
        assert_eq!(pointer_tokens(""), Vec::<String>::new());
        assert_eq!(pointer_tokens("/"), [""]);
        assert_eq!(pointer_tokens("/a~1b/~0/~01//0"), ["a/b", "~", "~1", "", "0"]);
        assert_eq!(pointer_tokens("a/b"), ["a", "b"]);
        assert_eq!(unescape_token("~2~"), "~2~");
        assert_eq!(escape_token("a/~b"), "a~1~0b");
        assert_eq!(escape_token("plain"), "plain");
        assert_eq!(array_index("0"), Some(0));
        assert_eq!(array_index("10"), Some(10));
        for token in ["", "-", "00", "01", "+1", "1.0", "x", "99999999999999999999999"] {
            assert_eq!(array_index(token), None, "{token:?}");
        }
    }

    /// Every node of `value` with its pointer.
    fn nodes(value: &Value) -> Vec<(String, &Value)> {
        let mut out = Vec::new();
        let mut todo = vec![(String::new(), value)];
        while let Some((pointer, value)) = todo.pop() {
            match value {
                Value::Object(map) => todo
                    .extend(map.iter().map(|(k, v)| (format!("{pointer}/{}", escape_token(k)), v))),
                Value::Array(items) => todo
                    .extend(items.iter().enumerate().map(|(i, v)| (format!("{pointer}/{i}"), v))),
                _ => {}
            }
            out.push((pointer, value));
        }
        out
    }

    fn string() -> impl Strategy<Value = String> {
        "[a-c~/\"\\\\ é😀\t\n\u{1}-]{0,5}"
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1000i32..1000).prop_map(|n| Value::from(f64::from(n) / 8.0)),
            string().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((string(), inner), 0..5)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    /// `value` as block-style YAML, every string double-quoted (JSON escapes are YAML escapes).
    fn to_yaml(value: &Value, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push_str(&pad);
                    }
                    out.push_str(&Value::from(k.as_str()).to_string());
                    out.push(':');
                    yaml_child(v, indent, out);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(&pad);
                    }
                    out.push('-');
                    yaml_child(v, indent, out);
                }
            }
            _ => {
                out.push_str(&value.to_string());
                out.push('\n');
            }
        }
    }

    fn yaml_child(value: &Value, indent: usize, out: &mut String) {
        let block = match value {
            Value::Object(map) => !map.is_empty(),
            Value::Array(items) => !items.is_empty(),
            _ => false,
        };
        if block {
            out.push('\n');
            out.push_str(&" ".repeat(indent + 2));
            to_yaml(value, indent + 2, out);
        } else {
            out.push(' ');
            to_yaml(value, indent, out);
        }
    }

    /// A naive line and column: count chars.
    fn naive_line_col(text: &str, offset: usize) -> (usize, usize) {
        let (mut line, mut col) = (1, 1);
        for c in text[..offset].chars() {
            if c == '\n' {
                (line, col) = (line + 1, 1);
            } else {
                col += 1;
            }
        }
        (line, col)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// One pass for many pointers finds what one pass per pointer finds: every value's
        /// pointer, missing children of each, and odd pointers, in JSON and YAML, also in
        /// documents with duplicate keys and malformed tails.
        #[test]
        fn many_pointers_at_once_locate_like_one_at_a_time(value in value(), cut in 0usize..40) {
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            let mut yaml_text = String::new();
            to_yaml(&value, 0, &mut yaml_text);
            let duplicated = format!("{{\"a\": {pretty}, \"a\": [1, {pretty}], \"b\": 2}}");
            let truncated = pretty.get(..pretty.len().saturating_sub(cut)).unwrap_or(&pretty).to_string();
            let mut pointers: Vec<String> = nodes(&value).into_iter().map(|(p, _)| p).collect();
            let extra: Vec<String> = pointers.iter().map(|p| format!("{p}/nope")).collect();
            pointers.extend(extra);
            pointers.extend(["/a".into(), "/a/1".into(), "/a/0".into(), "/b".into(), "".into(), "x".into()]);
            let duplicated_pointers: Vec<String> =
                pointers.iter().map(|p| format!("/a/1{p}")).collect();
            pointers.extend(duplicated_pointers);
            let refs: Vec<&str> = pointers.iter().map(String::as_str).collect();
            for (syntax, text) in [
                (Syntax::Json, &pretty),
                (Syntax::Yaml, &yaml_text),
                (Syntax::Json, &duplicated),
                (Syntax::Json, &truncated),
            ] {
                let many = locate_best_many(text, syntax, &refs);
                prop_assert_eq!(many.len(), refs.len());
                for (pointer, span) in refs.iter().zip(&many) {
                    prop_assert_eq!(*span, locate_best(text, syntax, pointer), "{} in {}", pointer, text);
                }
            }
        }

        #[test]
        fn every_json_pointer_locates_its_value(value in value()) {
            let compact = serde_json::to_string(&value).unwrap();
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            for text in [&compact, &pretty] {
                let index = LineIndex::new(text);
                for (pointer, node) in nodes(&value) {
                    let span = locate(text, Syntax::Json, &pointer).unwrap();
                    let found: Value = serde_json::from_str(span.slice(text).unwrap()).unwrap();
                    prop_assert_eq!(&found, node, "{} in {}", pointer, text);
                    prop_assert_eq!(locate_best(text, Syntax::Json, &pointer), span);
                    prop_assert_eq!(line_col(text, span.start), naive_line_col(text, span.start));
                    prop_assert_eq!(index.line_col(text, span.end), naive_line_col(text, span.end));
                    if let Some(key) = locate_key(text, Syntax::Json, &pointer) {
                        let key: String = serde_json::from_str(key.slice(text).unwrap()).unwrap();
                        prop_assert_eq!(escape_token(&key), pointer.rsplit('/').next().unwrap());
                    }
                    // JSON is YAML: the YAML walk finds the same spans.
                    prop_assert_eq!(locate(text, Syntax::Yaml, &pointer), Some(span), "{}", pointer);
                }
            }
        }

        #[test]
        fn every_yaml_pointer_locates_its_value(value in value()) {
            let mut text = String::new();
            to_yaml(&value, 0, &mut text);
            for (pointer, node) in nodes(&value) {
                let span = locate(&text, Syntax::Yaml, &pointer);
                prop_assert!(span.is_some(), "{} in {}", pointer, text);
                let span = span.unwrap();
                // Dedent the continuation lines to read the node back on its own.
                let (_, col) = line_col(&text, span.start);
                let snippet = span.slice(&text).unwrap().replace(&format!("\n{}", " ".repeat(col - 1)), "\n");
                let found: Value = serde_saphyr::from_str(&snippet).unwrap();
                prop_assert_eq!(&found, node, "{} in {}", pointer, text);
            }
        }

        #[test]
        fn arbitrary_text_gives_spans_inside_it(text in "[\\[\\]{}:,\"'\\\\ \n\r\t\u{feff}a0é&*!|>#?-]{0,40}", pointer in "(/[a0~1]{0,2}){0,3}") {
            for syntax in [Syntax::Json, Syntax::Yaml] {
                let value = locate(&text, syntax, &pointer);
                let key = locate_key(&text, syntax, &pointer);
                let best = locate_best(&text, syntax, &pointer);
                prop_assert!(best.slice(&text).is_some());
                if let Some(span) = value {
                    prop_assert!(span.slice(&text).is_some(), "{:?}", span);
                    prop_assert_eq!(best, span, "the best location of a value that exists is the value");
                    if syntax == Syntax::Json {
                        // Only a well-formed document locates anything; its value spans parse.
                        prop_assert!(serde_json::from_str::<Value>(text.trim_start_matches(BOM)).is_ok(), "{:?}", text);
                        prop_assert!(serde_json::from_str::<Value>(span.slice(&text).unwrap_or_default()).is_ok());
                    }
                }
                if let Some(k) = key {
                    prop_assert!(k.slice(&text).is_some(), "{:?}", k);
                    let v = value.unwrap_or_default();
                    prop_assert!(value.is_some() && k.end <= v.start, "a key needs its value, after it: {:?} {:?}", k, value);
                }
            }
            for offset in 0..=text.len() + 1 {
                prop_assert_eq!(line_col(&text, offset), LineIndex::new(&text).line_col(&text, offset));
            }
        }

        #[test]
        fn truncated_documents_locate_nothing_but_best_effort_spans(value in value(), cut in 0usize..1000) {
            let text = serde_json::to_string_pretty(&value).unwrap();
            let cut = floor_char_boundary(&text, cut);
            let text = &text[..cut];
            let whole = serde_json::from_str::<Value>(text).is_ok();
            for (pointer, _) in nodes(&value) {
                for syntax in [Syntax::Json, Syntax::Yaml] {
                    let best = locate_best(text, syntax, &pointer);
                    prop_assert!(best.slice(text).is_some());
                }
                // Malformed (cut) JSON locates nothing.
                if !whole {
                    prop_assert_eq!(locate(text, Syntax::Json, &pointer), None, "{} in {:?}", pointer, text);
                }
            }
        }
    }
}
