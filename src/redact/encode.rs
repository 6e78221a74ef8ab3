//! The texts one secret may appear as (SPEC §18: "in any encoding pactum can anticipate").
//!
//! A secret is looked for as it is and as each encoder that commonly carries it writes it:
//! - **JSON string escapes** (a reply that quotes the secret inside a JSON text), as serde
//!   writes them and with every non-ASCII character as `\uXXXX`, as Python does;
//! - **URL encoding**, with the unreserved sets of RFC 3986 (`-_.~`, also Go and Python),
//!   of HTML forms (`*-._`, also Java), of JavaScript's `encodeURIComponent`
//!   (`-_.!~*'()`) and of encoders that escape every byte that is not a letter or digit;
//!   each with upper- or lowercase hex, and a space as `%20` or, in form encoding, `+`;
//! - **hex** of the UTF-8 bytes, lower- and uppercase;
//! - **base64**, standard and URL-safe, with or without padding: the characters that
//!   depend on the secret's bytes only, at each of the three byte alignments a secret can
//!   have inside a longer encoded text (so `Authorization: Bearer KEY`, base64-encoded
//!   whole, still shows the key's part), and the secret encoded alone, padded or not, to
//!   its last character.

use super::{MASK, MIN_SECRET_LEN};

/// Bytes that URL encoders leave as they are besides ASCII letters and digits.
const UNRESERVED: [&[u8]; 4] = [b"-_.~", b"*-._", b"-_.!~*'()", b""];

/// Every text `secret` may appear as, without duplicates, the secret itself first. A
/// needle that is part of [`MASK`] is left out, so masking stays idempotent.
pub(super) fn needles(secret: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(8);
    let mut push = |needle: String| {
        if needle.len() >= MIN_SECRET_LEN && !MASK.contains(&needle) && !out.contains(&needle) {
            out.push(needle);
        }
    };
    push(secret.to_string());
    push(json_escaped(secret, false));
    push(json_escaped(secret, true));
    let plus_variants: &[bool] = if secret.contains(' ') { &[false, true] } else { &[false] };
    for unreserved in UNRESERVED {
        for &plus in plus_variants {
            for lower in [false, true] {
                push(percent_encode(secret, unreserved, plus, lower));
            }
        }
    }
    push(hex(secret.as_bytes(), false));
    push(hex(secret.as_bytes(), true));
    let bytes = secret.as_bytes();
    // The secret encoded alone, to its last character and padding.
    let alone = base64(bytes);
    for full in [alone.clone(), alone.trim_end_matches('=').to_string()] {
        push(full.replace('+', "-").replace('/', "_"));
        push(full);
    }
    for offset in 0..3 {
        let mut padded = vec![0u8; offset];
        padded.extend_from_slice(bytes);
        let full = base64(&padded);
        // The characters that depend on the secret's bytes only.
        let start = (8 * offset).div_ceil(6);
        let end = (8 * (offset + bytes.len())) / 6;
        if let Some(core) = full.get(start..end) {
            push(core.to_string());
            push(core.replace('+', "-").replace('/', "_"));
        }
    }
    out
}

/// The inside of a JSON string holding `s`: serde's escapes, or with `ascii`, every
/// non-ASCII character as `\uXXXX` (UTF-16, lowercase hex).
fn json_escaped(s: &str, ascii: bool) -> String {
    let quoted = serde_json::Value::String(s.to_string()).to_string();
    let inner = quoted.get(1..quoted.len() - 1).unwrap_or_default();
    if !ascii || inner.is_ascii() {
        return inner.to_string();
    }
    let mut out = String::with_capacity(inner.len() * 2);
    for c in inner.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// `s` URL-encoded: letters, digits and `unreserved` as they are, a space as `+` when
/// `plus`, every other byte `%XX` (hex in lowercase when `lower`).
fn percent_encode(s: &str, unreserved: &[u8], plus: bool, lower: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || unreserved.contains(&b) {
            out.push(b as char);
        } else if b == b' ' && plus {
            out.push('+');
        } else if lower {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn hex(bytes: &[u8], upper: bool) -> String {
    let digits: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(digits[usize::from(b >> 4)] as char);
        out.push(digits[usize::from(b & 15)] as char);
    }
    out
}

/// Standard base64 with padding.
pub(super) fn base64(bytes: &[u8]) -> String {
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

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    fn has(secret: &str, needle: &str) {
        let all = needles(secret);
        assert!(all.iter().any(|n| n == needle), "{needle:?} not among {all:?}");
    }

    #[test]
    fn every_anticipated_encoding_is_a_needle() {
        let s = "p@ss w/rd:é*~";
        has(s, s);
        has(s, "p%40ss%20w%2Frd%3A%C3%A9%2A~"); // RFC 3986
        has(s, "p%40ss%20w%2frd%3a%c3%a9%2a~"); // lowercase hex
        has(s, "p%40ss+w%2Frd%3A%C3%A9*%7E"); // form encoding (Java, WHATWG)
        has(s, "p%40ss+w%2Frd%3A%C3%A9%2A~"); // Python quote_plus, Go QueryEscape
        has(s, "p%40ss%20w%2Frd%3A%C3%A9*~"); // encodeURIComponent
        has(s, "p%40ss%20w%2Frd%3A%C3%A9%2A%7E"); // every byte
        has(s, "7040737320772f72643ac3a92a7e"); // hex
        has(s, "7040737320772F72643AC3A92A7E");
        has(s, "p@ss w/rd:\\u00e9*~"); // JSON with ensure_ascii
        has("say \"hi\"\n", "say \\\"hi\\\"\\n"); // JSON escapes
        // base64 of the secret alone (padding is never part of a needle), standard and
        // URL-safe.
        assert_eq!(base64(b"??>??>??"), "Pz8+Pz8+Pz8=");
        has("??>??>??", "Pz8+Pz8+Pz");
        has("??>??>??", "Pz8-Pz8-Pz");
        has("??>??>??", "Pz8+Pz8+Pz8=");
        has("??>??>??", "Pz8-Pz8-Pz8");
    }

    #[test]
    fn needles_are_distinct_and_never_part_of_the_mask() {
        let all = needles("abcdef123");
        let mut sorted = all.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), all.len(), "{all:?}");
        assert_eq!(all[0], "abcdef123");
        assert!(needles("redacted").iter().all(|n| n != "redacted"));
    }
}
