//! The one form of a ledger line (SPEC §10, §18): a record as canonical JSON
//! ([`crate::digest::canonical_json`]: keys sorted and unique, no white space, serde_json's
//! minimal string escapes), one object per line, at most [`MAX_LINE_BYTES`] with its newline.
//!
//! [`encode`] is the only way a line is made and [`decode`] the only way one is read back
//! (by the writer's look at the last line, by `verify` and by `query`), so the budget and
//! the form are one rule for writer and readers alike. A line decodes only when its bytes
//! *are* the canonical serialisation of the record they hold: a record with its keys
//! reordered, a space added, a character escaped that needs no escape or a key given twice
//! is another serialisation of (perhaps) the same content, and is refused.
//!
//! # Cutting a record to the budget
//!
//! A record whose line would pass the budget (a model's reply of 80 MB) is cut before it is
//! hashed: its largest fields, one at a time, are replaced by a string holding a prefix of
//! their text, until the line fits. The text of a string is the string; of any other value,
//! its canonical JSON. The record then carries `cut`, an object with one entry per cut
//! field: `{"bytes": N, "sha256": H, "kept_bytes": K, "type": T}` — the length and SHA-256
//! of the field's whole text (secrets already masked: the ledger masks before it cuts),
//! the length of the prefix kept, and the JSON type the field had. The ledger's own fields
//! (`seq`, `at`, `kind`, `prev`) are never cut. A record with so many fields that even empty ones
//! would not fit has all its fields but those gathered into one object, `fields`, cut the
//! same way.

use std::ops::Range;

use serde_json::{Map, Value, json};

use crate::digest::{ZERO_HASH, canonical_json, is_sha256_hex, sha256_hex, sha256_hex_of};

/// The longest ledger line, its newline included. The writer never writes a longer one
/// (it cuts fields to fit); the readers refuse a longer one (`ledger_corrupt`) after
/// reading at most this many bytes of it. A model's reply is the one field that grows
/// this large; 8 MiB keeps a reply of a few million tokens whole and bounds what every
/// append reads back (the last line) and every reader holds in memory.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The field naming what was cut from a record to fit the budget.
pub const CUT: &str = "cut";

/// The field gathering every other field of a record that cannot fit field by field.
const GATHERED: &str = "fields";

/// Fields the ledger sets itself (short, never cut).
const OWN: [&str; 4] = ["seq", "at", "kind", "prev"];

/// What `"hash":"…"` and the newline add to the canonical JSON of a record without `hash`:
/// a comma, `"hash":"`, 64 hex digits, a quote, and the line feed.
const HASH_AND_NEWLINE: usize = 1 + 8 + 64 + 1 + 1;

/// A decoded line: the record (an object) and its chain fields.
#[derive(Clone, Debug)]
pub(crate) struct Record {
    pub value: Value,
    pub seq: u64,
    pub prev: String,
    pub hash: String,
    /// Where the `"hash":"…"` member (and the comma joining it) is in the line.
    hash_member: Range<usize>,
}

impl Record {
    /// The SHA-256 of the record's canonical JSON without `hash` — what `hash` must be —
    /// from `line`, the bytes this record was decoded from (canonical, so the record without
    /// `hash` is the line without that member).
    pub fn content_hash(&self, line: &[u8]) -> String {
        let Range { start, end } = self.hash_member.clone();
        crate::work::count(line.len());
        sha256_hex_of(&[&line[..start], &line[end..]])
    }
}

/// The line `record` is written as, and the record as written. `record` holds `seq`, `at`,
/// `kind`, `prev` and the content; a `hash` or `cut` in it is dropped (both are the
/// ledger's). Fields are cut until the line fits [`MAX_LINE_BYTES`]; `hash` is the SHA-256
/// of the record's canonical JSON without it.
pub(crate) fn encode(mut record: Map<String, Value>) -> (Value, String) {
    record.remove("hash");
    record.remove(CUT);
    fit(&mut record, MAX_LINE_BYTES - HASH_AND_NEWLINE);
    // Serialized once, with a stand-in hash of the same length written over at the end.
    record.insert("hash".into(), Value::String(ZERO_HASH.into()));
    let (mut line, member) = canonical_object(&record);
    let hash = sha256_hex_of(&[&line.as_bytes()[..member.start], &line.as_bytes()[member.end..]]);
    let digits = line[member.clone()].find(ZERO_HASH).map(|at| member.start + at);
    if let Some(at) = digits {
        line.replace_range(at..at + hash.len(), &hash);
    }
    record.insert("hash".into(), Value::String(hash));
    line.push('\n');
    (Value::Object(record), line)
}

/// Reads one line back (its bytes without the newline). `Err` says why it is not a record
/// in the one form: over the budget, not JSON, not an object with `seq` (a whole number from
/// 1), `at` (an RFC 3339 instant), `kind` (a string), `prev` and `hash` (SHA-256 hex), or
/// not byte for byte the canonical JSON of what it holds.
pub(crate) fn decode(line: &[u8]) -> Result<Record, String> {
    if line.len() >= MAX_LINE_BYTES {
        return Err(too_long());
    }
    crate::work::count(line.len());
    let value: Value = serde_json::from_slice(line).map_err(|e| format!("it is not JSON: {e}"))?;
    let Value::Object(map) = &value else {
        return Err("it is not a JSON object".into());
    };
    let text = |key: &str| map.get(key).and_then(Value::as_str);
    let missing = |what: &str| format!("it is not a ledger record: {what}");
    let seq = map
        .get("seq")
        .and_then(Value::as_u64)
        .filter(|s| *s >= 1)
        .ok_or_else(|| missing("`seq` is missing or not a whole number from 1"))?;
    let at = text("at").filter(|a| a.parse::<jiff::Timestamp>().is_ok());
    at.ok_or_else(|| missing("`at` is missing or not an RFC 3339 time"))?;
    text("kind").ok_or_else(|| missing("`kind` is missing or not a string"))?;
    let sha = |key: &str| text(key).filter(|h| is_sha256_hex(h)).map(str::to_string);
    let prev = sha("prev").ok_or_else(|| missing("`prev` is missing or not a SHA-256"))?;
    let hash = sha("hash").ok_or_else(|| missing("`hash` is missing or not a SHA-256"))?;
    let (canonical, hash_member) = canonical_object(map);
    if canonical.as_bytes() != line {
        let at = canonical.bytes().zip(line).take_while(|(a, b)| a == *b).count() + 1;
        return Err(format!(
            "it is not the canonical JSON of its record (keys sorted and given once, no white space, no escape a character does not need): it differs from it at byte {at}"
        ));
    }
    Ok(Record { value, seq, prev, hash, hash_member })
}

/// The reason of a line over the budget.
pub(crate) fn too_long() -> String {
    format!("it is longer than {MAX_LINE_BYTES} bytes, the most a ledger line may hold")
}

/// [`canonical_json`] of an object, and the byte range of its `"hash":"…"` member with the
/// comma that joins it to a neighbour (empty when it has none).
fn canonical_object(map: &Map<String, Value>) -> (String, Range<usize>) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let mut out = String::from("{");
    let mut member = 0..0;
    for (i, key) in keys.iter().enumerate() {
        // The comma before a member goes with it; the first member takes the one after it.
        let start = out.len();
        if i > 0 {
            out.push(',');
        }
        out.push_str(&canonical_json(&Value::String((*key).clone())));
        out.push(':');
        if let Some(value) = map.get(*key) {
            out.push_str(&canonical_json(value));
        }
        if key.as_str() == "hash" {
            let comma_after = usize::from(i == 0 && keys.len() > 1);
            member = start..out.len() + comma_after;
        }
    }
    out.push('}');
    (out, member)
}

/// Cuts the largest fields of `record` until its canonical JSON is at most `budget` bytes.
fn fit(record: &mut Map<String, Value>, budget: usize) {
    let member = |key: &str, value: &Value| json_len(key) + 1 + canonical_len(value);
    let sizes: Vec<(String, usize)> =
        record.iter().map(|(k, v)| (k.clone(), member(k, v))).collect();
    // `{` `}` and the commas between members.
    let frame = 2 + record.len().saturating_sub(1);
    if frame + sizes.iter().map(|(_, n)| n).sum::<usize>() <= budget {
        return;
    }
    let own: usize = sizes.iter().filter(|(k, _)| OWN.contains(&k.as_str())).map(|(_, n)| n).sum();
    let mut cuttable: Vec<(String, usize)> =
        sizes.into_iter().filter(|(k, _)| !OWN.contains(&k.as_str())).collect();
    // Every cuttable field cut to an empty string, with its entry in `cut`: when even that
    // does not fit, the fields are gathered into one and that one is cut.
    let smallest: usize = cuttable.iter().map(|(k, _)| 2 * json_len(k) + 4 + ENTRY).sum();
    if frame + own + smallest + json_len(CUT) + 4 > budget {
        let gathered: Map<String, Value> =
            cuttable.iter().filter_map(|(k, _)| record.remove_entry(k)).collect();
        let gathered = Value::Object(gathered);
        let size = member(GATHERED, &gathered);
        record.insert(GATHERED.into(), gathered);
        cuttable = vec![(GATHERED.to_string(), size)];
    }
    cuttable.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut total =
        2 + record.len().saturating_sub(1) + own + cuttable.iter().map(|(_, n)| n).sum::<usize>();
    let mut cut = Map::new();
    for (key, size) in cuttable {
        let Some(value) = record.remove(&key) else { continue };
        let (text, kind) = match value {
            Value::String(s) => (s, "string"),
            other => (canonical_json(&other), type_name(&other)),
        };
        let entry = json!({"bytes": text.len(), "sha256": sha256_hex(text.as_bytes()),
                           "kept_bytes": 0, "type": kind});
        let marker_before = marker_len(&cut);
        cut.insert(key.clone(), entry);
        total = total - size + json_len(&key) + 1 + 2 - marker_before + marker_len(&cut);
        if total > budget {
            record.insert(key, Value::String(String::new()));
            continue;
        }
        // `kept_bytes` grows from one digit to at most twenty.
        let room = (budget - total).saturating_sub(19);
        let kept = prefix_within(&text, room);
        if let Some(entry) = cut.get_mut(&key) {
            entry["kept_bytes"] = json!(kept.len());
        }
        record.insert(key, Value::String(kept.to_string()));
        break;
    }
    record.insert(CUT.into(), Value::Object(cut));
}

/// The most an entry of `cut` takes besides its key: the longest numbers and a type name.
const ENTRY: usize = r#"{"bytes":18446744073709551615,"kept_bytes":18446744073709551615,"sha256":"","type":"boolean"},"#.len() + 64;

/// The bytes `"cut":{...}` and its comma add to a record.
fn marker_len(cut: &Map<String, Value>) -> usize {
    if cut.is_empty() {
        return 0;
    }
    let body: usize = cut.iter().map(|(k, v)| json_len(k) + 1 + canonical_len(v)).sum();
    1 + json_len(CUT) + 1 + 2 + body + (cut.len() - 1)
}

/// The length of [`canonical_json`] of `value`, without building it.
fn canonical_len(value: &Value) -> usize {
    match value {
        Value::String(s) => json_len(s),
        Value::Array(items) => {
            2 + items.iter().map(canonical_len).sum::<usize>() + items.len().saturating_sub(1)
        }
        Value::Object(map) => {
            2 + map.iter().map(|(k, v)| json_len(k) + 1 + canonical_len(v)).sum::<usize>()
                + map.len().saturating_sub(1)
        }
        scalar => canonical_json(scalar).len(),
    }
}

/// The length of `text` as a JSON string, quotes included.
fn json_len(text: &str) -> usize {
    2 + text.bytes().map(escaped_len).sum::<usize>()
}

/// The bytes serde_json writes for the byte `b` of a string: two for `"`, `\` and the
/// control characters with a short escape, six (`\u00XX`) for the other control
/// characters, one for any other byte (each byte of a multi-byte character is written as
/// it is).
fn escaped_len(b: u8) -> usize {
    match b {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
        0..0x20 => 6,
        _ => 1,
    }
}

/// The longest prefix of `text`, cut at a character, whose JSON string form takes at most
/// `room` bytes besides its quotes.
fn prefix_within(text: &str, room: usize) -> &str {
    let mut used = 0;
    for (i, b) in text.bytes().enumerate() {
        used += escaped_len(b);
        if used > room {
            let mut end = i;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            return &text[..end];
        }
    }
    text
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Test support: `records` (objects with everything but `seq`, `prev` and `hash`) as the
/// lines of one chain, in order.
#[cfg(test)]
pub(crate) fn chain(records: &[Value]) -> String {
    let mut prev = crate::digest::ZERO_HASH.to_string();
    let mut out = String::new();
    for (i, r) in records.iter().enumerate() {
        let mut map = r.as_object().cloned().unwrap_or_default();
        map.insert("seq".into(), json!(i + 1));
        map.insert("prev".into(), json!(prev));
        map.entry("kind").or_insert(json!("exchange"));
        let (value, line) = encode(map);
        prev = value["hash"].as_str().unwrap_or_default().to_string();
        out.push_str(&line);
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record(content: Value) -> Map<String, Value> {
        let mut map = content.as_object().cloned().unwrap();
        map.insert("seq".into(), json!(1));
        map.insert("at".into(), json!("2026-01-01T00:00:00Z"));
        map.insert("kind".into(), json!("exchange"));
        map.insert("prev".into(), json!(crate::digest::ZERO_HASH));
        map
    }

    /// `fit` on a small budget: the record as it would be written (hash aside) and its size.
    fn fitted(content: Value, budget: usize) -> (Map<String, Value>, usize) {
        let mut map = record(content);
        fit(&mut map, budget);
        let len = canonical_json(&Value::Object(map.clone())).len();
        assert!(len <= budget, "{len} > {budget}");
        (map, len)
    }

    #[test]
    fn a_line_decodes_to_what_was_encoded_and_its_hash_recomputes() {
        let floats =
            json!([0.1, 1e300, 5e-324, -0.0, 3.0, 1.0_f64 / 3.0, 2.0_f64.sqrt(), f64::MAX]);
        let content = json!({"text": "é\n\"x\"\u{1}\u{7f}\u{2028}", "f": floats, "a": {"hash": 1}});
        let (value, line) = encode(record(content));
        assert_eq!(line, canonical_json(&value) + "\n", "one serialisation");
        let body = line.trim_end().as_bytes();
        let back = decode(body).unwrap();
        assert_eq!(back.value, value);
        assert_eq!(back.content_hash(body), back.hash);
        assert_eq!(crate::digest::chain_hash(&value), back.hash);
        // `hash` first among the keys, or the only key besides none before it.
        for keys in [json!({"zz": 1}), json!({})] {
            let mut map = keys.as_object().cloned().unwrap();
            map.insert("hash".into(), json!("x"));
            let (text, member) = canonical_object(&map);
            let without = [&text[..member.start], &text[member.end..]].concat();
            map.remove("hash");
            assert_eq!(without, canonical_json(&Value::Object(map)), "{text}");
        }
    }

    #[test]
    fn every_other_serialisation_is_refused() {
        let (_, line) = encode(record(json!({"b": "x", "a": [1, 2]})));
        let line = line.trim_end().to_string();
        let reordered = line.replacen("{\"a\":[1,2],", "{", 1).replacen("}", ",\"a\":[1,2]}", 1);
        let spaced = line.replacen(":", ": ", 1);
        let escaped = line.replacen("\"x\"", "\"\\u0078\"", 1);
        let duplicated = line.replacen("{", "{\"a\":7,", 1);
        let exponent = line.replacen("[1,", "[1e0,", 1);
        for bad in [reordered, spaced, escaped, duplicated, exponent] {
            assert_ne!(bad, line);
            assert!(serde_json::from_str::<Value>(&bad).is_ok(), "{bad}");
            let e = decode(bad.as_bytes()).unwrap_err();
            assert!(e.contains("not the canonical JSON"), "{bad}: {e}");
        }
        assert!(decode(line.as_bytes()).is_ok());
    }

    #[test]
    fn json_that_is_no_record_is_refused() {
        for (bad, says) in [
            ("{not json", "not JSON"),
            ("[1]", "not a JSON object"),
            (r#"{"a":1}"#, "`seq`"),
            (r#"{"at":"2026-01-01T00:00:00Z","kind":"x","prev":"0","seq":1}"#, "`prev`"),
            (r#"{"at":"yesterday","kind":"x","seq":1}"#, "`at`"),
            (r#"{"at":"2026-01-01T00:00:00Z","kind":1,"seq":1}"#, "`kind`"),
            (r#"{"at":"2026-01-01T00:00:00Z","kind":"x","seq":0}"#, "`seq`"),
        ] {
            let e = decode(bad.as_bytes()).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let (_, line) = encode(record(json!({})));
        let no_hash = line.trim_end().replacen("\"hash\":", "\"hush\":", 1);
        assert!(decode(no_hash.as_bytes()).unwrap_err().contains("`hash`"));
    }

    #[test]
    fn the_largest_fields_are_cut_first_and_the_marker_names_each() {
        let budget = 3000;
        let reply = "y".repeat(4000);
        let tools = json!([{"result": "z".repeat(1000)}]);
        let (map, _) =
            fitted(json!({"raw_response": reply, "tool_calls": tools, "verdict": "ok"}), budget);
        let cut = map[CUT].as_object().unwrap();
        assert_eq!(cut.keys().collect::<Vec<_>>(), ["raw_response"]);
        let kept = map["raw_response"].as_str().unwrap();
        assert!(reply.starts_with(kept) && kept.len() > 1000, "{}", kept.len());
        assert_eq!(map["tool_calls"], tools, "the next field fits whole");

        // The largest cut to nothing is not enough: the next one is cut too.
        let tools = json!([{"result": "z".repeat(3000)}]);
        let (map, _) =
            fitted(json!({"raw_response": reply, "tool_calls": tools, "verdict": "ok"}), budget);
        let cut = &map[CUT];
        assert_eq!(
            (&map["raw_response"], &cut["raw_response"]["kept_bytes"]),
            (&json!(""), &json!(0))
        );
        let text = canonical_json(&tools);
        assert_eq!(cut["tool_calls"]["bytes"], text.len());
        assert_eq!(cut["tool_calls"]["sha256"], sha256_hex(text.as_bytes()));
        assert_eq!(cut["tool_calls"]["type"], "array");
        let kept = map["tool_calls"].as_str().unwrap();
        assert!(text.starts_with(kept) && kept.len() > 1000);
        assert_eq!(cut["tool_calls"]["kept_bytes"], kept.len());
        assert_eq!(map["verdict"], "ok", "small fields are kept");
        assert_eq!(map["seq"], 1);
    }

    #[test]
    fn a_record_that_fits_is_not_touched_and_a_forged_cut_is_dropped() {
        let (value, _) = encode(record(json!({"raw_response": "x", "cut": {"raw_response": 1}})));
        assert!(value.get("cut").is_none(), "{value}");
        assert_eq!(value["raw_response"], "x");
    }

    #[test]
    fn escapes_count_toward_the_budget() {
        // Six bytes per character once escaped; a multi-byte character is never split.
        let (map, len) = fitted(json!({"raw_response": "\u{1}é".repeat(2000)}), 3000);
        let kept = map["raw_response"].as_str().unwrap();
        assert!(kept.len() > 600 && len + 40 > 3000, "{} {len}", kept.len());
    }

    #[test]
    fn a_record_with_too_many_fields_is_gathered_then_cut() {
        let many: Map<String, Value> = (0..100).map(|i| (format!("{i:0>40}"), json!(i))).collect();
        let (map, _) = fitted(Value::Object(many.clone()), 1500);
        assert_eq!(map[CUT]["fields"]["type"], "object");
        assert_eq!(map[CUT]["fields"]["bytes"], canonical_json(&Value::Object(many)).len());
        assert!(map["fields"].as_str().unwrap().starts_with("{\"0000"));
        assert_eq!((&map["seq"], &map["kind"]), (&json!(1), &json!("exchange")));
        assert_eq!(map.len(), 6, "the ledger's own fields, `fields` and `cut`");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The arithmetic of `fit`: whatever the fields, the record fits and uses the
        /// budget, and every cut field keeps a prefix of its text.
        #[test]
        fn any_fields_are_cut_to_fit(
            texts in proptest::collection::vec("[\\x00-\\x1f\"\\\\a-zé\u{2028}]{0,300}", 1..6),
            budget in 600usize..4000,
        ) {
            let mut map = record(json!({}));
            for (i, t) in texts.iter().enumerate() {
                let value = if i % 2 == 0 { json!(t) } else { json!([t, i]) };
                map.insert(format!("f{i}"), value);
            }
            let original = map.clone();
            prop_assert_eq!(canonical_len(&Value::Object(original.clone())),
                            canonical_json(&Value::Object(original.clone())).len());
            fit(&mut map, budget);
            let len = canonical_json(&Value::Object(map.clone())).len();
            prop_assert!(len <= budget, "{len} > {budget}");
            let Some(Value::Object(cut)) = map.get(CUT) else {
                prop_assert_eq!(map, original);
                return Ok(());
            };
            prop_assert!(len + 40 > budget, "{len} of {budget} used");
            for (key, entry) in cut {
                let text = match original.get(key) {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => canonical_json(other),
                    // Gathered: every field but the ledger's own.
                    None => {
                        let mut rest = original.clone();
                        rest.retain(|k, _| !OWN.contains(&k.as_str()));
                        canonical_json(&Value::Object(rest))
                    }
                };
                let kept = map[key].as_str().unwrap();
                prop_assert!(text.starts_with(kept));
                prop_assert_eq!(&entry["kept_bytes"], &json!(kept.len()));
                prop_assert_eq!(&entry["bytes"], &json!(text.len()));
                prop_assert_eq!(&entry["sha256"], &json!(sha256_hex(text.as_bytes())));
            }
        }
    }
}
