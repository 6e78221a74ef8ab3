//! Secret masking (SPEC §18): the one function every text pactum writes out goes through
//! — the ledger, `--json` output, messages on stderr, error messages.
//!
//! What is masked:
//! - **known secrets**: API keys (added by the binary from the environment) and values a
//!   contract marks `"x-secret": true` in its `input_schema` or `output_schema` (added by
//!   the executor as soon as an exchange sees them, wherever the schema applies the mark:
//!   behind every reference form the schema's graph (`schema::graph`) resolves, inside
//!   `allOf`/`anyOf`/`oneOf`, conditionals, items and pattern properties, and everything a
//!   reference the graph cannot resolve applies to — see `marked`), each in every
//!   encoding pactum can anticipate:
//!   as is, JSON-escaped, URL-encoded (percent and form encoding), hex, and base64
//!   (standard and URL-safe, at any of the three byte alignments a secret can have inside
//!   a longer encoded text) — see `encode`;
//! - **URL credentials** anywhere in a text: `scheme://user:password@host` becomes
//!   `scheme://[redacted]@host`, whether or not pactum knew the URL.
//!
//! **One pass:** every encoding of every secret is a needle of an Aho-Corasick automaton
//! (leftmost-longest), so masking a text costs its length whatever the number of secrets.
//! Automata are built when a text is masked after the secrets changed, never per text;
//! needles learned since the last build get an automaton of their own, merged with the
//! smaller existing ones until each is at least twice the size of the next, so learning
//! secrets one exchange at a time costs O(n log n) in builds and a text meets at most
//! log2(n) automata (one while secrets are few). The first time a text holds a needle, an
//! automaton of the reversed needles is built too and run over the reversed text: when two
//! needles overlap (the end of one secret is the start of another), both are masked whole.
//!
//! **Bounded:** one process masks at most [`MAX_MARKED`] distinct marked values, whose
//! needles take at most [`MAX_MARKED_BYTES`]. Past either cap, or when finding the marked
//! values of one instance would take more than [`MAX_WALK`] steps, the redactor refuses:
//! [`Redactor::add_marked`] returns `secret_limit_exceeded` then and for every later call
//! in the process, and the executor starts no exchange after it, so a value the redactor could not learn is never sent or recorded. API keys
//! from the environment (trusted, and bounded by the environment) are not counted.
//!
//! Values shorter than [`MIN_SECRET_LEN`] are not masked (masking `"a"` would garble every
//! text and protect nothing). Masking is idempotent and never reveals a secret's length.

mod encode;
mod marked;

pub use marked::MAX_WALK;

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, OnceLock, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::schema::graph::{Graph, Origin, ProjectFiles, folder_uri};

/// What a masked secret becomes.
pub const MASK: &str = "[redacted]";
/// Shorter values are not treated as secrets.
pub const MIN_SECRET_LEN: usize = 6;
/// The most distinct values marked `x-secret` one process (one `pactum` command) masks.
pub const MAX_MARKED: usize = 10_000;
/// The most bytes those values may take in all their encodings together (what the
/// automata are built from): about 13 times its length for a value of letters and digits,
/// up to some 50 times for one full of punctuation.
pub const MAX_MARKED_BYTES: usize = 4 << 20;

/// A URL as messages show it: its query and fragment left out (a token is often passed
/// there: `?api_key=...`), and every secret [`url_secrets`] finds in what is left masked (the
/// user-info, a token in the path). Every message that names a URL shows it so.
///
/// ```
/// use pactum::redact::shown_url;
/// assert_eq!(shown_url("https://u:pw-123456@h.example/v1?k=1"), "https://[redacted]@h.example/v1?…");
/// assert_eq!(shown_url("http://h.example/t/a1b2c3d4e5f6a7b8c9d0e1f2/v1"), "http://h.example/t/[redacted]/v1");
/// assert_eq!(shown_url("user:pw-123456@h.example/v1"), "[redacted]@h.example/v1");
/// ```
pub fn shown_url(url: &str) -> String {
    let url = url.trim();
    let (bare, cut) = match url.find(['?', '#']) {
        Some(i) => (&url[..i], "?…"),
        None => (url, ""),
    };
    let mut shown = bare.to_string();
    if let Some((start, end)) = user_info(bare) {
        shown.replace_range(start..end, MASK);
    }
    let mut secrets = url_secrets(&shown);
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in secrets.iter().filter(|s| s.as_str() != MASK) {
        shown = shown.replace(secret.as_str(), MASK);
    }
    format!("{shown}{cut}")
}

/// The byte range of a URL's user-info (before the `@` of its authority), with or without
/// a scheme (`http://u:p@h`, `//u:p@h`, `u:p@h`, `http:/u:p@h`). The authority is taken to
/// run to the last `@` before the path that follows it, so a `/` inside a password does not
/// hide it.
fn user_info(url: &str) -> Option<(usize, usize)> {
    // After `scheme:` (letters first, then letters, digits, `+-.`) and any slashes.
    let scheme = url
        .find(':')
        .filter(|&i| {
            let s = &url[..i];
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        })
        .filter(|&i| url[i + 1..].starts_with('/'))
        .map_or(0, |i| i + 1);
    let start = scheme + url[scheme..].len() - url[scheme..].trim_start_matches('/').len();
    let at = start + url[start..].rfind('@')?;
    (at > start).then_some((start, at))
}

/// The secrets a URL the environment names may carry (a provider's `*_BASE_URL`, a
/// collector's endpoint), each as written and percent-decoded:
/// - its user-info: the password (after the first `:`), or all of it when it has none (a
///   token as the user name), with or without a scheme before it;
/// - a path segment (or a `;`-separated part of one) that looks like a token: 20
///   characters or more of letters, digits, `-`, `_`, `.`, `~`, `+`, `=` with both letters
///   and digits, and either upper and lower case, 32 characters or more, or a run of 16
///   letters and digits without a separator (`/key/AbC…`, a hex or base64 token);
///   `gpt-4o-mini-2024-07-18` is not one; a `name=value` part is judged as a query
///   parameter is;
/// - the values of its query parameters that look like credentials — named like one
///   (`key`, `token`, `secret`, `sig`, `pass`, `pwd`, `jwt`, `auth`, `credential`,
///   `session`, `code`, any case and separator: `api-key`, `access_token`,
///   `X-Amz-Signature`, Azure Functions' `code`), or long enough to be one (20 characters
///   or more);
/// - every value of its fragment of 6 characters or more (a fragment is never sent, so
///   nothing there is needed in a message).
///
/// The binary adds them to the redactor, which masks them in every encoding as it does a
/// key.
///
/// ```
/// let found = pactum::redact::url_secrets("https://u:pw-123456@h.example/v1?api-version=2024-02-01&api-key=k%2Bey-123");
/// assert_eq!(found, ["pw-123456", "k%2Bey-123", "k+ey-123"]);
/// let found = pactum::redact::url_secrets("https://f.example/api/Xy7Qw9Zr2Lm4Np6Tv8Ks/run?code=s3cr3t#t0ken-x");
/// assert_eq!(found, ["Xy7Qw9Zr2Lm4Np6Tv8Ks", "s3cr3t", "t0ken-x"]);
/// ```
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |value: &str| {
        for v in [value.to_string(), percent_decode(value)] {
            if !v.is_empty() && v != MASK && !out.contains(&v) {
                out.push(v);
            }
        }
    };
    let url = url.trim();
    let (url, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (url, query) = url.split_once('?').unwrap_or((url, ""));
    let path = match user_info(url) {
        Some((start, end)) => {
            let info = &url[start..end];
            match info.split_once(':') {
                Some((_, password)) => push(password),
                None if info.chars().count() >= MIN_SECRET_LEN => push(info),
                None => {}
            }
            let host_and_path = &url[end + 1..];
            &host_and_path[host_and_path.find('/').unwrap_or(host_and_path.len())..]
        }
        None => match url.find("://") {
            Some(i) => {
                let tail = &url[i + 3..];
                &tail[tail.find('/').unwrap_or(tail.len())..]
            }
            None => url,
        },
    };
    for part in path.split(['/', ';']) {
        match part.split_once('=') {
            Some((name, value)) if credential_name(name) || value.chars().count() >= 20 => {
                push(value)
            }
            Some(_) => {}
            None if looks_like_token(part) || looks_like_token(&percent_decode(part)) => push(part),
            None => {}
        }
    }
    for pair in query.split(['&', ';']) {
        let (name, value) = pair.split_once('=').unwrap_or(("", pair));
        if credential_name(name) || value.chars().count() >= 20 {
            push(value);
        }
    }
    for pair in fragment.split(['&', ';', '#', '?']) {
        let value = pair.split_once('=').map_or(pair, |(_, value)| value);
        if value.chars().count() >= MIN_SECRET_LEN {
            push(value);
        }
    }
    out
}

/// Whether a parameter's name says it holds a credential (see [`url_secrets`]).
fn credential_name(name: &str) -> bool {
    let name: String = percent_decode(name).chars().filter(char::is_ascii_alphanumeric).collect();
    let name = name.to_ascii_lowercase();
    ["key", "token", "secret", "sig", "pass", "pwd", "jwt", "auth", "credential", "session", "code"]
        .iter()
        .any(|word| name.contains(word))
}

/// Whether a URL's path segment looks like a token rather than a name (see [`url_secrets`]).
fn looks_like_token(segment: &str) -> bool {
    let word =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '+' | '=');
    let (upper, lower, digit) = segment.chars().fold((false, false, false), |(u, l, d), c| {
        (u || c.is_ascii_uppercase(), l || c.is_ascii_lowercase(), d || c.is_ascii_digit())
    });
    let longest_run =
        segment.split(|c: char| !c.is_ascii_alphanumeric()).map(str::len).max().unwrap_or(0);
    segment.len() >= 20
        && segment.chars().all(word)
        && (upper || lower)
        && digit
        && ((upper && lower) || segment.len() >= 32 || longest_run >= 16)
}

/// `%XX` sequences (and `+`, as forms write a space) decoded; an invalid sequence or
/// bytes that are not UTF-8 are kept as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_hexdigit);
        if bytes[i] == b'%' && hex(i + 1) && hex(i + 2) {
            let digits = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("00");
            out.push(u8::from_str_radix(digits, 16).unwrap_or(0));
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// Replaces the user-info part of every `scheme://user[:password]@host` in `text`.
pub fn mask_url_credentials(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("://") {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let after = i + 3;
        out.push_str(&rest[..after]);
        let tail = &rest[after..];
        // The authority ends at the first `/`, `?`, `#`, whitespace or quote.
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace() || c == '"')
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) if at > 0 && !authority[..at].starts_with(MASK) => {
                out.push_str(MASK);
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Masks secrets in text and JSON values. Shared (behind an `Arc`) by everything that
/// writes for one process, so a secret learned anywhere is masked everywhere afterwards.
#[derive(Default)]
pub struct Redactor {
    state: RwLock<State>,
}

#[derive(Default)]
struct State {
    /// Every secret, as given.
    secrets: HashSet<String>,
    /// Every text to mask: each secret in each of its encodings.
    needles: HashSet<String>,
    /// Needles no automaton holds yet.
    pending: Vec<String>,
    /// The automata over every other needle, each at least twice as large as the next.
    levels: Vec<Arc<Level>>,
    /// `levels`, as the texts being masked share them.
    matcher: Arc<Vec<Arc<Level>>>,
    /// Marked values among the secrets, and the bytes of their needles (API keys are not
    /// counted).
    marked: usize,
    marked_bytes: usize,
    /// Why the redactor refuses every further marked value, once it does.
    refused: Option<String>,
    /// How many automata were built, and from how many needles in all (tests check it is
    /// neither per text nor quadratic).
    builds: usize,
    built: usize,
}

impl State {
    fn insert(&mut self, secret: &str, needles: Vec<String>) {
        self.secrets.insert(secret.to_string());
        for needle in needles {
            if self.needles.insert(needle.clone()) {
                self.pending.push(needle);
            }
        }
    }

    /// Adds one marked value, unless a cap is reached.
    fn insert_marked(&mut self, secret: &str) -> std::result::Result<(), String> {
        if secret.chars().count() < MIN_SECRET_LEN || self.secrets.contains(secret) {
            return Ok(());
        }
        if self.marked >= MAX_MARKED {
            return Err(refusal(
                &format!(
                    "more than {MAX_MARKED} distinct values are marked `x-secret` in this run, the most pactum masks in one run"
                ),
                "split the work orders over several runs, or mark fewer values secret",
            ));
        }
        let needles = encode::needles(secret);
        let bytes: usize = needles.iter().map(String::len).sum();
        if self.marked_bytes.saturating_add(bytes) > MAX_MARKED_BYTES {
            return Err(refusal(
                &format!(
                    "the values marked `x-secret` in this run take more than {MAX_MARKED_BYTES} bytes in all the encodings pactum looks for, the most it masks in one run"
                ),
                "split the work orders over several runs, or mark fewer or shorter values secret",
            ));
        }
        self.marked += 1;
        self.marked_bytes += bytes;
        self.insert(secret, needles);
        Ok(())
    }

    fn refuse(&mut self, message: String) -> Error {
        let message = self.refused.get_or_insert(message).clone();
        Error::SecretLimit { message }
    }
}

/// The message of a refusal: what happened, what it means, the fix.
fn refusal(what: &str, fix: &str) -> String {
    format!("{what}; no exchange starts after this in this run, so none of them can leak: {fix}")
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secrets themselves.
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        f.debug_struct("Redactor")
            .field("secrets", &state.secrets.len())
            .field("refused", &state.refused.is_some())
            .finish()
    }
}

impl Redactor {
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// Masks `secret` (in every encoding) from now on. For secrets pactum is given (API
    /// keys): they do not count against [`MAX_MARKED`].
    pub fn add(&self, secret: &str) {
        if secret.chars().count() < MIN_SECRET_LEN {
            return;
        }
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        if !state.secrets.contains(secret) {
            state.insert(secret, encode::needles(secret));
        }
    }

    /// Adds every value of `instance` that `schema` marks `"x-secret": true`, for a schema
    /// whose folder is not known: its references inside the schema document resolve, and
    /// one to another file resolves nowhere, so what it applies to is masked whole (see
    /// [`Redactor::add_marked_in`]).
    ///
    /// ```
    /// use pactum::redact::Redactor;
    /// use serde_json::json;
    ///
    /// let r = Redactor::new();
    /// let schema = json!({"properties": {"auth": {"$ref": "#/$defs/token"}},
    ///                     "$defs": {"token": {"type": "string", "x-secret": true}}});
    /// r.add_marked(Some(&schema), &json!({"auth": "tok-123456"})).unwrap();
    /// assert_eq!(r.redact("sent tok-123456"), "sent [redacted]");
    /// ```
    pub fn add_marked(&self, schema: Option<&Value>, instance: &Value) -> Result<()> {
        self.add_marked_from(schema, instance, &Origin::detached())
    }

    /// [`Redactor::add_marked_in`] for a schema of a contract in `base_dir` inside the
    /// project at `root`: its graph reads the files its references name through the
    /// confinement rule ([`ProjectFiles`]), as the compiler's graph does.
    pub fn add_marked_at(
        &self,
        schema: Option<&Value>,
        instance: &Value,
        base_dir: &std::path::Path,
        root: &std::path::Path,
    ) -> Result<()> {
        let files = ProjectFiles::new(root);
        let base = folder_uri(base_dir);
        self.add_marked_from(schema, instance, &Origin::new(&base, &files))
    }

    /// The schema's graph built at `origin`, then [`Redactor::add_marked_in`].
    fn add_marked_from(
        &self,
        schema: Option<&Value>,
        instance: &Value,
        origin: &Origin<'_>,
    ) -> Result<()> {
        self.refused()?;
        let graph = schema.map(|schema| Graph::build(schema, origin));
        self.add_marked_in(graph.as_ref(), instance)
    }

    /// `secret_limit_exceeded` once the redactor has refused a marked value.
    fn refused(&self) -> Result<()> {
        match &self.state.read().unwrap_or_else(|p| p.into_inner()).refused {
            Some(message) => Err(Error::SecretLimit { message: message.clone() }),
            None => Ok(()),
        }
    }

    /// Adds every value of `instance` that the schema of `graph` marks `"x-secret": true`,
    /// wherever the schema applies the mark (the way a validator applies it, erring on the
    /// side of masking). References are followed only as the graph resolved them; one it
    /// left unresolved masks whatever it applies to. Refused with `secret_limit_exceeded`
    /// past [`MAX_MARKED`] values, [`MAX_MARKED_BYTES`] or [`MAX_WALK`] steps, and for
    /// every call after that: the caller must then not send or record anything of
    /// `instance`.
    pub fn add_marked_in(&self, graph: Option<&Graph<'_>>, instance: &Value) -> Result<()> {
        self.refused()?;
        let Some(graph) = graph else { return Ok(()) };
        let found = marked::marked(graph, instance);
        let mut texts: Vec<Cow<'_, str>> = found.names.iter().map(|n| Cow::Borrowed(*n)).collect();
        let mut stack = found.values;
        // A marked value: a string as it is, anything else as its JSON text and every
        // string inside it.
        while let Some(value) = stack.pop() {
            match value {
                Value::String(s) => texts.push(Cow::Borrowed(s)),
                Value::Null | Value::Bool(_) => {}
                Value::Number(n) => texts.push(Cow::Owned(n.to_string())),
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.values()),
            }
        }
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        for text in &texts {
            if let Err(message) = state.insert_marked(text) {
                return Err(state.refuse(message));
            }
        }
        if found.incomplete {
            return Err(state.refuse(refusal(
                &format!("finding the values a schema marks `x-secret` in this input took more than {MAX_WALK} steps"),
                "simplify the schema around its `x-secret` marks, or send a smaller input",
            )));
        }
        Ok(())
    }

    /// The automata over every needle. Needles added since the last text get one of their
    /// own, merged with the smallest existing ones until each automaton is at least twice
    /// the size of the next: a needle is built again only when its automaton at least
    /// doubles, so learning secrets one exchange at a time costs O(n log n) builds in all,
    /// and a text is scanned by at most log2(n) automata (one, while secrets are few).
    fn matcher(&self) -> Arc<Vec<Arc<Level>>> {
        {
            let state = self.state.read().unwrap_or_else(|p| p.into_inner());
            if state.pending.is_empty() {
                return state.matcher.clone();
            }
        }
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        if !state.pending.is_empty() {
            let mut needles = std::mem::take(&mut state.pending);
            while let Some(last) = state.levels.last()
                && last.needles.len() < 2 * needles.len()
            {
                needles.extend(last.needles.iter().cloned());
                state.levels.pop();
            }
            state.builds += 1;
            state.built += needles.len();
            state.levels.push(Arc::new(Level::build(needles)));
            state.matcher = Arc::new(state.levels.clone());
        }
        state.matcher.clone()
    }

    /// How many automata this redactor built (tests of what is built once).
    #[cfg(test)]
    pub(crate) fn automaton_builds(&self) -> usize {
        self.state.read().unwrap_or_else(|p| p.into_inner()).builds
    }

    /// `text` with every known secret and URL credential masked.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let text = mask_url_credentials(text);
        match mask(&self.matcher(), &text) {
            Some(masked) => Cow::Owned(masked),
            None => text,
        }
    }

    /// A JSON value with every string (and object key) masked.
    pub fn redact_value(&self, value: Value) -> Value {
        match value {
            Value::String(s) => match self.redact(&s) {
                Cow::Borrowed(_) => Value::String(s),
                Cow::Owned(masked) => Value::String(masked),
            },
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.redact_value(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.redact(&k).into_owned(), self.redact_value(v)))
                    .collect(),
            ),
            other => other,
        }
    }
}

/// Finds a set of needles in a text in one pass.
struct Level {
    needles: Vec<String>,
    /// The needles, leftmost-longest; `None` when the automaton could not be built (more
    /// states than it can number): every text is then masked whole rather than any secret
    /// shown.
    forward: Option<AhoCorasick>,
    /// The needles reversed, run over the reversed text: what `forward` skipped because it
    /// began inside an earlier match. Built the first time a text holds a needle.
    backward: OnceLock<Option<AhoCorasick>>,
}

/// An automaton over `patterns`; the bytes it is built from are counted as work
/// (`crate::work`: the cost tests below).
fn automaton(patterns: impl Iterator<Item = Vec<u8>>) -> Option<AhoCorasick> {
    let counted = patterns.inspect(|p| crate::work::count(p.len()));
    AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(counted).ok()
}

impl Level {
    fn build(needles: Vec<String>) -> Level {
        let forward = automaton(needles.iter().map(|n| n.as_bytes().to_vec()));
        Level { needles, forward, backward: OnceLock::new() }
    }

    /// Adds the spans of `bytes` this level's needles cover to `spans`; `reversed` is
    /// `bytes` reversed, made the first time a level needs it.
    fn spans(&self, bytes: &[u8], reversed: &mut Option<Vec<u8>>, spans: &mut Vec<(usize, usize)>) {
        let Some(forward) = &self.forward else { return spans.push((0, bytes.len())) };
        // Each level scans the whole text (once more when a needle is in it, backwards).
        crate::work::count(bytes.len());
        let before = spans.len();
        spans.extend(forward.find_iter(bytes).map(|m| (m.start(), m.end())));
        if spans.len() == before {
            return;
        }
        let backward = self.backward.get_or_init(|| {
            automaton(self.needles.iter().map(|n| n.bytes().rev().collect::<Vec<u8>>()))
        });
        let Some(backward) = backward else { return spans.push((0, bytes.len())) };
        let reversed = reversed.get_or_insert_with(|| bytes.iter().rev().copied().collect());
        crate::work::count(bytes.len());
        let n = bytes.len();
        spans.extend(backward.find_iter(&reversed[..]).map(|m| (n - m.end(), n - m.start())));
    }
}

/// `text` with every span some level's needles cover masked (one mask per run of
/// overlapping or touching spans), or `None` when no needle is in it.
fn mask(levels: &[Arc<Level>], text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut reversed = None;
    for level in levels {
        level.spans(bytes, &mut reversed, &mut spans);
    }
    if spans.is_empty() || text.is_empty() {
        return None;
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut spans = spans.into_iter().peekable();
    while let Some((mut start, mut end)) = spans.next() {
        while let Some(&(next_start, next_end)) = spans.peek() {
            if next_start > end {
                break;
            }
            end = end.max(next_end);
            spans.next();
        }
        // Needles are whole UTF-8 texts, so spans fall on character boundaries; this only
        // keeps slicing panic-free.
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let start = start.max(at);
        out.push_str(&text[at..start]);
        if end > start {
            out.push_str(MASK);
        }
        at = at.max(end);
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// `text` with one secret masked in every encoding (for a key that is not shared through
/// a [`Redactor`], such as the one a provider holds).
pub fn mask_secret(text: &str, secret: &str) -> String {
    let r = Redactor::new();
    r.add(secret);
    r.redact(text).into_owned()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &str = "sk-test-0123456789abcdef";

    fn hex(s: &str) -> String {
        s.bytes().map(|b| format!("{b:02x}")).collect()
    }

    /// `text` masked by a redactor that knows `secrets`.
    fn check(secrets: &[&str], text: &str, expect: &str) {
        let r = Redactor::new();
        secrets.iter().for_each(|s| r.add(s));
        assert_eq!(r.redact(text), expect, "secrets {secrets:?}");
        assert_eq!(r.redact(expect), expect, "idempotent");
    }

    #[test]
    fn keys_are_masked_plain_url_encoded_and_base64_at_every_alignment() {
        let r = Redactor::new();
        r.add(KEY);
        assert_eq!(r.redact(&format!("key {KEY}!")), "key [redacted]!");
        let header = format!("Authorization: Bearer {KEY}");
        for prefix in ["", "x", "xy", "xyz"] {
            let encoded = encode::base64(format!("{prefix}{header}").as_bytes());
            for text in [
                encoded.clone(),
                encoded.trim_end_matches('=').to_string(),
                encoded.replace('+', "-").replace('/', "_"),
            ] {
                let masked = r.redact(&text);
                assert!(masked.contains(MASK), "{prefix:?}: {text}");
                assert!(!masked.contains(&encode::base64(KEY.as_bytes())[4..20]), "{masked}");
            }
        }
        check(&["p@ss w/rd:secret"], "q=p%40ss%20w%2Frd%3Asecret&x=1", "q=[redacted]&x=1");
        check(&[KEY], "k=sk%2Dtest%2D0123456789abcdef", "k=[redacted]");
        check(&[KEY], "k=sk%2dtest%2d0123456789abcdef", "k=[redacted]");
    }

    #[test]
    fn keys_are_masked_hex_encoded_form_encoded_and_json_escaped() {
        check(&[KEY], &format!("id={}.", hex(KEY)), "id=[redacted].");
        check(&[KEY], &format!("ID={}.", hex(KEY).to_uppercase()), "ID=[redacted].");
        // A query string as an HTML form (or Python's quote_plus) writes it.
        check(&["p@ss w/rd secret"], "q=p%40ss+w%2Frd+secret&x=1", "q=[redacted]&x=1");
        check(&["p@ss w/rd secret"], "q=p%40ss+w%2frd+secret&x=1", "q=[redacted]&x=1");
        // A reply that quotes the secret inside a JSON text.
        check(&["pa\"ss\\wörd"], r#"{"x": "pa\"ss\\wörd"}"#, r#"{"x": "[redacted]"}"#);
        check(&["pa\"ss\\wörd"], r#"{"x": "pa\"ss\\w\u00f6rd"}"#, r#"{"x": "[redacted]"}"#);
    }

    #[test]
    fn overlapping_secrets_are_masked_whole() {
        // One secret starts the other, ends it, sits inside it, or overlaps its end.
        check(&["abcdef", "abcdefgh"], "x abcdefgh y", "x [redacted] y");
        check(&["abcdefgh", "cdefgh"], "x abcdefgh y", "x [redacted] y");
        check(&["zzabcdefzz", "abcdef"], "-zzabcdefzz-abcdef-", "-[redacted]-[redacted]-");
        check(&["tokA-123456", "123456-suffix"], "<tokA-123456-suffix>", "<[redacted]>");
        check(&["123456-suffix", "tokA-123456"], "<tokA-123456-suffix>", "<[redacted]>");
        // Adjacent occurrences become one mask: lengths are never shown.
        check(&["abcdef"], "abcdefabcdef", "[redacted]");
        // A secret that is part of the mask does not garble it.
        check(&["redacted"], "[redacted] redacted", "[redacted] redacted");
        check(&["ümlaut-ö"], "é ümlaut-ö é", "é [redacted] é");
    }

    #[test]
    fn url_credentials_are_masked_without_being_known() {
        let r = Redactor::new();
        assert_eq!(
            r.redact(
                "POST http://user:hunter2@10.0.0.1:8080/v1 failed; see https://example.com/a@b"
            ),
            "POST http://[redacted]@10.0.0.1:8080/v1 failed; see https://example.com/a@b"
        );
        let once = r.redact("https://tok@host/x").into_owned();
        assert_eq!(r.redact(&once), once, "idempotent");
        assert_eq!(r.redact("no urls here"), "no urls here");
    }

    #[test]
    fn values_a_contract_marks_secret_are_masked_in_values() {
        let r = Redactor::new();
        let schema = json!({"type": "object", "properties": {
            "token": {"type": "string", "x-secret": true},
            "nested": {"type": "object", "properties": {"pin": {"x-secret": true}}},
            "list": {"type": "array", "items": {"type": "string", "x-secret": true}},
            "refd": {"$ref": "#/$defs/secret"},
            "text": {"type": "string"}},
            "$defs": {"secret": {"allOf": [{"x-secret": true}]}}});
        let input = json!({"token": "tok-abcdef123", "nested": {"pin": 98765432},
                           "list": ["first-secret"], "refd": "behind-a-ref", "text": "short"});
        r.add_marked(Some(&schema), &input).unwrap();
        let out = r.redact_value(json!({"echo": "tok-abcdef123 and 98765432 and first-secret",
                                        "tok-abcdef123": 1, "text": "short",
                                        "hex": hex("behind-a-ref")}));
        assert_eq!(
            out,
            json!({"echo": "[redacted] and [redacted] and [redacted]",
                               "[redacted]": 1, "text": "short", "hex": "[redacted]"})
        );
    }

    /// `value` with every string equal to `from` replaced by `to`.
    fn replaced(value: &Value, from: &str, to: &Value) -> Value {
        match value {
            Value::String(s) if s == from => to.clone(),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| replaced(v, from, to)).collect())
            }
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), replaced(v, from, to))).collect())
            }
            other => other.clone(),
        }
    }

    /// The two readings of a schema's references can no longer disagree: the walk follows
    /// a reference exactly where the schema's graph (the compiler's reading) says it leads,
    /// in every form, and masks whatever a reference the graph refuses applies to.
    #[test]
    fn the_walk_follows_every_reference_the_graph_resolves_and_masks_what_it_refuses() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("p");
        let dir = root.join("contracts/a");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(root.join("common")).unwrap();
        std::fs::write(
            root.join("common/defs.json"),
            r#"{"$defs": {"pin": {"type": "string", "x-secret": true}, "open": {"type": "string"}}}"#,
        )
        .unwrap();
        // A file outside the project that marks nothing: the walk must not read it.
        std::fs::write(outer.path().join("outside.json"), r#"{"type": "string"}"#).unwrap();
        let marked = json!({"type": "string", "x-secret": true});
        // Every reference form the graph resolves, each once to a marked target and (for
        // pointers, in the schema and in a file) once to an unmarked one.
        let resolved = [
            (
                json!({
                    "$defs": {
                        "p": marked, "open": {"type": "string"},
                        "a": {"$anchor": "tok", "type": "string", "x-secret": true},
                        "d": {"$dynamicAnchor": "node", "type": "string", "x-secret": true},
                        "inner": {"$id": "https://example.com/inner/",
                                  "$defs": {"leaf": {"$id": "leaf.json", "type": "string", "x-secret": true}},
                                  "properties": {"rel": {"$ref": "leaf.json"}}}},
                    "properties": {
                        "pointer": {"$ref": "#/$defs/p"},
                        "anchor": {"$ref": "#tok"},
                        "dynamic": {"$dynamicRef": "#node"},
                        "embedded": {"$ref": "https://example.com/inner/"},
                        "file": {"$ref": "../../common/defs.json#/$defs/pin"},
                        "open": {"$ref": "#/$defs/open"},
                        "open_file": {"$ref": "../../common/defs.json#/$defs/open"}}}),
                json!({"pointer": "via-pointer", "anchor": "via-anchor", "dynamic": "via-dynamic-ref",
                       "embedded": {"rel": "via-id-relative"}, "file": "via-project-file",
                       "open": "unmarked-target", "open_file": "unmarked-file-target"}),
                &[
                    "via-pointer",
                    "via-anchor",
                    "via-dynamic-ref",
                    "via-id-relative",
                    "via-project-file",
                ][..],
                &["unmarked-target", "unmarked-file-target"][..],
            ),
            (
                json!({"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveAnchor": true,
                       "properties": {"v": marked, "kids": {"items": {"$recursiveRef": "#"}}}}),
                json!({"v": "via-recursive-top", "kids": [{"v": "via-recursive-kid"}]}),
                &["via-recursive-top", "via-recursive-kid"][..],
                &[][..],
            ),
            (
                // Drafts 4 to 7 ignore an `$id` beside a `$ref`: the reference resolves
                // against the enclosing base (a walk that honoured the `$id` found nothing
                // there and let the value through).
                json!({"$schema": "http://json-schema.org/draft-07/schema#",
                       "definitions": {"s": marked},
                       "properties": {"beside": {"$id": "http://example.com/elsewhere.json",
                                                 "$ref": "#/definitions/s"}}}),
                json!({"beside": "via-draft7-ref-beside-id"}),
                &["via-draft7-ref-beside-id"][..],
                &[][..],
            ),
        ];
        let files = ProjectFiles::new(&root);
        let base = folder_uri(&dir);
        for (schema, instance, secrets, open) in resolved {
            let graph = Graph::build(&schema, &Origin::new(&base, &files));
            assert_eq!(graph.unresolved().count(), 0, "{schema}");
            // The validator applies every target: each value, made a number, fails it.
            let validator = crate::schema::compile(&schema, &dir, &root).unwrap();
            assert!(validator.accepts(&instance).unwrap(), "{schema}");
            for value in secrets.iter().chain(open) {
                assert!(
                    !validator.accepts(&replaced(&instance, value, &json!(5))).unwrap(),
                    "{value}"
                );
            }
            // The walk masks exactly what the targets mark.
            let r = Redactor::new();
            r.add_marked_at(Some(&schema), &instance, &dir, &root).unwrap();
            let text = r.redact(&instance.to_string()).into_owned();
            for secret in secrets {
                assert!(!text.contains(secret), "`{secret}` leaked: {text}");
            }
            for value in open {
                assert!(text.contains(value), "`{value}` is not marked: {text}");
            }
        }
        // References the graph refuses: the validator cannot apply the schema, and the walk
        // cannot see what their targets mark, so whatever they apply to is masked.
        let refused = json!({"properties": {
            "outside": {"$ref": "../../../outside.json"},
            "missing": {"$ref": "../../common/missing.json"},
            "nowhere": {"$ref": "#/$defs/none"},
            "no_anchor": {"$ref": "#nope"},
            "network": {"$ref": "https://example.org/schema.json"},
            "inside": {"items": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/none"}]}},
            "plain": {"type": "string"}}});
        let graph = Graph::build(&refused, &Origin::new(&base, &files));
        let reasons: Vec<&str> = graph.unresolved().map(|(_, _, reason)| reason).collect();
        assert_eq!(reasons.len(), 6, "{reasons:?}");
        assert!(reasons.iter().any(|r| r.contains("outside the project")), "{reasons:?}");
        let findings = crate::schema::compile(&refused, &dir, &root).map(|_| ()).unwrap_err();
        let pointers: Vec<&str> = findings.iter().map(|f| f.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            ["/properties/missing/$ref", "/properties/network/$ref", "/properties/outside/$ref"],
            "{findings:?}"
        );
        let instance = json!({"outside": "refused-outside", "missing": "refused-missing",
                              "nowhere": {"deep": ["refused-nowhere"]}, "no_anchor": "refused-anchor",
                              "network": "refused-network", "inside": ["refused-item"],
                              "plain": "plain-text"});
        let r = Redactor::new();
        r.add_marked_at(Some(&refused), &instance, &dir, &root).unwrap();
        let text = r.redact(&instance.to_string()).into_owned();
        for value in [
            "refused-outside",
            "refused-missing",
            "refused-nowhere",
            "refused-anchor",
            "refused-network",
            "refused-item",
        ] {
            assert!(!text.contains(value), "`{value}` leaked: {text}");
        }
        assert!(text.contains("plain-text"), "{text}");
        // Without a project folder, a reference to a file is refused the same way.
        let r = Redactor::new();
        let schema = json!({"properties": {"pin": {"$ref": "../../common/defs.json#/$defs/open"}}});
        r.add_marked(Some(&schema), &json!({"pin": "no-folder-known"})).unwrap();
        assert_eq!(r.redact("no-folder-known"), MASK);
    }

    #[test]
    fn short_values_are_not_secrets() {
        let r = Redactor::new();
        r.add("abc");
        assert_eq!(r.redact("abc"), "abc");
        assert_eq!(mask_secret(&format!("x{KEY}x"), KEY), "x[redacted]x");
    }

    #[test]
    fn the_automaton_is_built_once_per_change_not_per_text() {
        let r = Redactor::new();
        let builds = || r.state.read().unwrap().builds;
        assert_eq!(r.redact(KEY), KEY);
        assert_eq!(builds(), 0, "no secrets, no automaton");
        r.add(KEY);
        for _ in 0..100 {
            assert_eq!(r.redact(KEY), MASK);
        }
        assert_eq!(builds(), 1);
        r.add(KEY);
        r.add_marked(Some(&json!({"x-secret": true})), &json!(KEY)).unwrap();
        assert_eq!(r.redact(KEY), MASK);
        assert_eq!(builds(), 1, "nothing new, nothing rebuilt");
        r.add("another-secret");
        assert_eq!(r.redact("another-secret"), MASK);
        assert_eq!(builds(), 2);
    }

    #[test]
    fn learning_secrets_one_exchange_at_a_time_is_not_quadratic() {
        // Each exchange teaches two secrets, then its record is masked: the automata are
        // not rebuilt whole each time. Counted in needles built, which does not depend on
        // the machine's load.
        let built = |n: usize| {
            let r = Redactor::new();
            for i in 0..n {
                r.add(&format!("secret-{i:08}-a"));
                r.add(&format!("secret-{i:08}-b"));
                assert_eq!(r.redact(&format!("x secret-{i:08}-b")), "x [redacted]");
            }
            let state = r.state.read().unwrap();
            assert!(state.levels.len() <= 1 + state.needles.len().ilog2() as usize);
            state.built
        };
        let (small, large) = (built(100), built(400));
        let ratio = large as f64 / small as f64;
        assert!(
            ratio < 6.0,
            "100 exchanges built {small} needles, 400 built {large} ({ratio:.1}x)"
        );
    }

    #[test]
    fn past_the_cap_every_later_exchange_is_refused_and_nothing_known_is_lost() {
        let r = Redactor::new();
        let schema = json!({"items": {"x-secret": true}});
        let values: Vec<String> = (0..=MAX_MARKED).map(|i| format!("value-{i:06}")).collect();
        let e = r.add_marked(Some(&schema), &json!(values)).unwrap_err();
        assert_eq!(e.code(), crate::Code::SecretLimitExceeded);
        assert!(e.to_string().contains("more than 10000 distinct values"), "{e}");
        assert!(!e.to_string().contains("value-0"), "the message names no value: {e}");
        // Refused from now on, whatever the schema: no later exchange may start.
        for schema in [None, Some(&json!({}))] {
            let again = r.add_marked(schema, &json!("nothing-marked")).unwrap_err();
            assert_eq!(again.code(), crate::Code::SecretLimitExceeded);
        }
        // What it learned before the cap is still masked, and keys are still added.
        assert_eq!(r.redact("value-000000 value-009999"), "[redacted] [redacted]");
        r.add(KEY);
        assert_eq!(r.redact(KEY), MASK);
        // The bytes cap holds the same way.
        let r = Redactor::new();
        let big = "x".repeat(MAX_MARKED_BYTES / 4);
        let e = r.add_marked(Some(&json!({"x-secret": true})), &json!(big)).unwrap_err();
        assert_eq!(e.code(), crate::Code::SecretLimitExceeded);
        let e = r.add_marked(None, &json!(null)).unwrap_err();
        assert_eq!(e.code(), crate::Code::SecretLimitExceeded, "every call after a refusal: {e}");
    }

    #[test]
    fn the_debug_form_shows_no_secret() {
        let r = Redactor::new();
        r.add(KEY);
        assert!(!format!("{r:?}").contains(KEY));
    }

    /// `f(4n)` does about four times the work of `f(n)`, never sixteen: the work counted is
    /// the bytes automata are built from, the bytes each automaton scans, and every
    /// allocation.
    fn assert_linear(what: &str, n: usize, f: impl Fn(usize)) {
        crate::work::assert_linear(what, n, |n| crate::work::work_of(|| f(n)));
    }

    #[test]
    fn masking_is_linear_in_the_number_of_secrets() {
        // Every secret learned, then a text that holds each of them once, masked.
        assert_linear("secrets", 500, |n| {
            let r = Redactor::new();
            let secrets: Vec<String> = (0..n).map(|i| format!("secret-{i:08}-value")).collect();
            let schema = json!({"items": {"x-secret": true}});
            r.add_marked(Some(&schema), &json!(secrets)).unwrap();
            let text = secrets.join(" and ");
            let masked = r.redact(&text);
            assert_eq!(masked.matches(MASK).count(), n);
        });
    }

    #[test]
    fn masking_is_linear_in_the_length_of_the_text() {
        let r = Redactor::new();
        for i in 0..1_000 {
            r.add(&format!("secret-{i:08}-value"));
        }
        let _ = r.redact("");
        assert_linear("text", 200_000, |n| {
            let mut text = String::with_capacity(n + 64);
            let mut i = 0;
            while text.len() < n {
                text.push_str(&format!("plain words here secret-{:08}-value ", i % 1_000));
                i += 1;
            }
            assert!(r.redact(&text).contains(MASK));
        });
    }
}
