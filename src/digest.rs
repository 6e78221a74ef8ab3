//! SHA-256 digests and canonical JSON, the two primitives behind every hash pactum writes.
//!
//! Registry entries hash a file's exact bytes; registry history events and ledger records
//! hash their canonical JSON form: keys sorted by code point, no insignificant whitespace,
//! serde_json's string escaping. Anyone can re-verify a chain with a few lines of code in
//! any language (`json.dumps(v, sort_keys=True, separators=(",", ":"))` in Python gives
//! the same bytes for the ASCII data pactum writes).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The hash that starts every chain: 64 zeros.
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex SHA-256 of `parts` one after the other (without joining them first).
pub fn sha256_hex_of(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    out
}

/// True when `s` looks like a lowercase hex SHA-256.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Canonical JSON: object keys sorted, no whitespace. Independent of serde_json's map
/// ordering features, so a dependency enabling `preserve_order` cannot change a hash.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_scalar(&Value::String(key.clone()), out);
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut String) {
    // Serializing a scalar cannot fail.
    out.push_str(&serde_json::to_string(value).unwrap_or_default());
}

/// The chain hash of a record: SHA-256 of its canonical JSON without the `hash` field.
pub fn chain_hash(record: &Value) -> String {
    match record {
        Value::Object(map) if map.contains_key("hash") => {
            let mut copy = map.clone();
            copy.remove("hash");
            sha256_hex(canonical_json(&Value::Object(copy)).as_bytes())
        }
        other => sha256_hex(canonical_json(other).as_bytes()),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sha256_of_known_inputs() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(is_sha256_hex(&sha256_hex(b"x")));
        assert_eq!(sha256_hex_of(&[b"a", b"", b"bc"]), sha256_hex(b"abc"));
        assert!(!is_sha256_hex("ABC"));
    }

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace() {
        let v = json!({"b": 1, "a": {"d": [1, "x\n"], "c": null}, "é": true});
        assert_eq!(canonical_json(&v), r#"{"a":{"c":null,"d":[1,"x\n"]},"b":1,"é":true}"#);
    }

    #[test]
    fn chain_hash_matches_an_independent_implementation() {
        // Computed outside pactum with Python's
        // hashlib.sha256(json.dumps(record, sort_keys=True, separators=(",", ":")).encode()).
        let record = json!({"seq": 1, "prev": ZERO_HASH, "kind": "exchange",
                            "at": "2026-01-01T00:00:00Z", "verdict": "ok", "errors": [],
                            "usage": {"prompt_tokens": 12, "completion_tokens": 3},
                            "raw_response": "{\"label\": \"x\"}\n", "hash": "not hashed"});
        assert_eq!(
            chain_hash(&record),
            "0855c21a2556475242e528ea86dabb038c53d26b321beecc8361d9ac806a1edb"
        );
    }

    #[test]
    fn chain_hash_ignores_the_hash_field() {
        let a = json!({"seq": 1, "prev": ZERO_HASH});
        let mut b = a.clone();
        b["hash"] = json!("whatever");
        assert_eq!(chain_hash(&a), chain_hash(&b));
        assert_ne!(chain_hash(&a), chain_hash(&json!({"seq": 2, "prev": ZERO_HASH})));
    }
}
