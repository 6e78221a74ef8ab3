//! Secret masking (SPEC §18): the one function every text pactum writes out goes through
//! — the ledger, `--json` output, messages on stderr, error messages.
//!
//! What is masked:
//! - **known secrets**: API keys (added by the binary from the environment) and values a
//!   contract marks `"x-secret": true` in its `input_schema` or `output_schema` (added by
//!   the executor as soon as an exchange sees them), each in every encoding pactum can
//!   anticipate: as is, URL-encoded, and base64 (standard and URL-safe, at any of the
//!   three byte alignments a secret can have inside a longer encoded text);
//! - **URL credentials** anywhere in a text: `scheme://user:password@host` becomes
//!   `scheme://[redacted]@host`, whether or not pactum knew the URL.
//!
//! Values shorter than [`MIN_SECRET_LEN`] are not masked (masking `"a"` would garble every
//! text and protect nothing). Masking is idempotent and never reveals a secret's length.

use std::sync::RwLock;

use serde_json::Value;

/// What a masked secret becomes.
pub const MASK: &str = "[redacted]";
/// Shorter values are not treated as secrets.
pub const MIN_SECRET_LEN: usize = 6;

/// The texts one secret may appear as.
fn needles(secret: &str) -> Vec<String> {
    let mut out = vec![secret.to_string()];
    // URL-encoded as RFC 3986 does, and as encoders that escape every non-alphanumeric
    // byte do, with upper- or lowercase hex.
    for encoded in [percent_encode(secret, b"-_.~"), percent_encode(secret, b"")] {
        for variant in [encoded.clone(), lower_hex(&encoded)] {
            if variant != secret && !out.contains(&variant) {
                out.push(variant);
            }
        }
    }
    let bytes = secret.as_bytes();
    for offset in 0..3 {
        let mut padded = vec![0u8; offset];
        padded.extend_from_slice(bytes);
        let full = base64(&padded);
        // The characters that depend on the secret's bytes only.
        let start = (8 * offset).div_ceil(6);
        let end = (8 * (offset + bytes.len())) / 6;
        if end > start && end - start >= MIN_SECRET_LEN {
            let core = &full[start..end];
            out.push(core.to_string());
            let url_safe = core.replace('+', "-").replace('/', "_");
            if url_safe != core {
                out.push(url_safe);
            }
        }
    }
    out
}

/// `%XX` escapes in lowercase hex.
fn lower_hex(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut rest = encoded;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let escape = rest.get(i..i + 3).unwrap_or(&rest[i..]);
        out.push_str(&escape.to_ascii_lowercase());
        rest = &rest[i + escape.len()..];
    }
    out.push_str(rest);
    out
}

fn percent_encode(s: &str, unreserved: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || unreserved.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        let chars = chunk.len() + 1;
        for i in 0..4 {
            if i < chars {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
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
#[derive(Debug, Default)]
pub struct Redactor {
    /// Every text to mask, longest first (so a secret is masked before any part of it).
    needles: RwLock<Vec<String>>,
}

impl Redactor {
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// Masks `secret` (in every encoding) from now on.
    pub fn add(&self, secret: &str) {
        if secret.chars().count() < MIN_SECRET_LEN {
            return;
        }
        let mut all = self.needles.write().unwrap_or_else(|p| p.into_inner());
        for needle in needles(secret) {
            if !all.contains(&needle) {
                all.push(needle);
            }
        }
        all.sort_by_key(|n| std::cmp::Reverse(n.len()));
    }

    /// Adds every value of `instance` that `schema` marks `"x-secret": true` (through
    /// `properties`, `items`, `additionalProperties` and `prefixItems`).
    pub fn add_marked(&self, schema: Option<&Value>, instance: &Value) {
        if let Some(schema) = schema {
            self.walk_marked(schema, instance, 0);
        }
    }

    fn walk_marked(&self, schema: &Value, instance: &Value, depth: usize) {
        let Some(map) = schema.as_object() else { return };
        if depth > 64 {
            return;
        }
        if map.get("x-secret").and_then(Value::as_bool) == Some(true) {
            self.add_value(instance);
        }
        match instance {
            Value::Object(fields) => {
                let properties = map.get("properties").and_then(Value::as_object);
                for (name, value) in fields {
                    match properties.and_then(|p| p.get(name)) {
                        Some(sub) => self.walk_marked(sub, value, depth + 1),
                        None => {
                            if let Some(extra) = map.get("additionalProperties") {
                                self.walk_marked(extra, value, depth + 1);
                            }
                        }
                    }
                }
            }
            Value::Array(items) => {
                let prefix = map.get("prefixItems").and_then(Value::as_array);
                for (i, value) in items.iter().enumerate() {
                    if let Some(sub) = prefix.and_then(|p| p.get(i)).or_else(|| map.get("items")) {
                        self.walk_marked(sub, value, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// Adds a marked value: a string as it is, anything else as its JSON text and every
    /// string inside it.
    fn add_value(&self, value: &Value) {
        match value {
            Value::String(s) => self.add(s),
            Value::Null | Value::Bool(_) => {}
            Value::Number(n) => self.add(&n.to_string()),
            Value::Array(items) => items.iter().for_each(|v| self.add_value(v)),
            Value::Object(map) => map.values().for_each(|v| self.add_value(v)),
        }
    }

    /// `text` with every known secret and URL credential masked.
    pub fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        let mut out = mask_url_credentials(text);
        let needles = self.needles.read().unwrap_or_else(|p| p.into_inner());
        for needle in needles.iter() {
            if out.contains(needle.as_str()) {
                out = std::borrow::Cow::Owned(out.replace(needle.as_str(), MASK));
            }
        }
        out
    }

    /// A JSON value with every string (and object key) masked.
    pub fn redact_value(&self, value: Value) -> Value {
        match value {
            Value::String(s) => match self.redact(&s) {
                std::borrow::Cow::Borrowed(_) => Value::String(s),
                std::borrow::Cow::Owned(masked) => Value::String(masked),
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

    #[test]
    fn keys_are_masked_plain_url_encoded_and_base64_at_every_alignment() {
        let r = Redactor::new();
        r.add(KEY);
        assert_eq!(r.redact(&format!("key {KEY}!")), "key [redacted]!");
        let header = format!("Authorization: Bearer {KEY}");
        for prefix in ["", "x", "xy", "xyz"] {
            let encoded = base64(format!("{prefix}{header}").as_bytes());
            let masked = r.redact(&encoded);
            assert!(masked.contains(MASK), "{prefix:?}: {encoded}");
            let url_safe = encoded.replace('+', "-").replace('/', "_");
            assert!(r.redact(&url_safe).contains(MASK));
        }
        let r = Redactor::new();
        r.add("p@ss w/rd:secret");
        assert_eq!(r.redact("q=p%40ss%20w%2Frd%3Asecret&x=1"), "q=[redacted]&x=1");
        let r = Redactor::new();
        r.add(KEY);
        assert_eq!(r.redact("k=sk%2Dtest%2D0123456789abcdef"), "k=[redacted]");
        assert_eq!(r.redact("k=sk%2dtest%2d0123456789abcdef"), "k=[redacted]");
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
            "text": {"type": "string"}}});
        let input = json!({"token": "tok-abcdef123", "nested": {"pin": 98765432},
                           "list": ["first-secret"], "text": "short"});
        r.add_marked(Some(&schema), &input);
        let out = r.redact_value(json!({"echo": "tok-abcdef123 and 98765432 and first-secret",
                                        "tok-abcdef123": 1, "text": "short"}));
        assert_eq!(
            out,
            json!({"echo": "[redacted] and [redacted] and [redacted]",
                               "[redacted]": 1, "text": "short"})
        );
    }

    #[test]
    fn short_values_are_not_secrets() {
        let r = Redactor::new();
        r.add("abc");
        assert_eq!(r.redact("abc"), "abc");
        assert_eq!(mask_secret(&format!("x{KEY}x"), KEY), "x[redacted]x");
    }
}
