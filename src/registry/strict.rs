//! The fast path of reading registry.json: an entry or history event is read straight into
//! its type and accepted when it passes checks that are at least as strict as its part of
//! `registry.schema.json` (so whatever this accepts, the schema accepts). Anything else
//! (an unusual timestamp, an escaped id, a duplicate key, a merge event) takes the slow
//! path: a JSON value checked against the schema, which also gives the findings.
//!
//! On a registry of 20,000 entries and 40,000 events, `pactum registry verify` spends
//! 0.41–0.45 s of CPU instead of 0.53–0.66 s (BENCHMARKS.md); `tests` checks the "at least
//! as strict" promise against the schema.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

use crate::registry::{Action, EntryKind, Event, RawEntry, State};

/// `Some` for a present value; unlike a plain `Option`, `null` is refused (the schema
/// refuses it too).
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A registry entry of `kind`, if `raw` passes the strict checks.
pub(crate) fn entry(raw: &str, kind: EntryKind) -> Option<RawEntry> {
    let e: RawEntry = serde_json::from_str(raw).ok()?;
    let id_ok = match kind {
        EntryKind::Contract => {
            e.prompt_pack_id.is_none() && e.contract_id.as_deref().is_some_and(|i| id(i, "PRC"))
        }
        EntryKind::PromptPack => {
            e.contract_id.is_none() && e.prompt_pack_id.as_deref().is_some_and(|i| id(i, "PRM"))
        }
    };
    let times = [&e.activated_at, &e.deprecated_at, &e.removed_at];
    // Only contract entries record referenced files (the schema has no `refs` for packs).
    let refs_ok = match (&e.refs, kind) {
        (None, _) => true,
        (Some(refs), EntryKind::Contract) => self::refs(refs),
        (Some(_), EntryKind::PromptPack) => false,
    };
    let ok = id_ok
        && refs_ok
        && version(&e.version)
        && !e.path.is_empty()
        && sha256(&e.sha256)
        && timestamp(&e.registered_at)
        && times.iter().all(|t| t.as_deref().is_none_or(timestamp))
        && e.successor_version.as_deref().is_none_or(version);
    ok.then_some(e)
}

/// One history event as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryEvent {
    seq: u64,
    at: String,
    action: Action,
    #[serde(default, deserialize_with = "present")]
    actor: Option<String>,
    #[serde(default, deserialize_with = "present")]
    id: Option<String>,
    #[serde(default, deserialize_with = "present")]
    version: Option<String>,
    #[serde(default, deserialize_with = "present")]
    path: Option<String>,
    #[serde(default, deserialize_with = "present")]
    sha256: Option<String>,
    #[serde(default, deserialize_with = "present")]
    state: Option<State>,
    #[serde(default, deserialize_with = "present")]
    successor: Option<String>,
    #[serde(default, deserialize_with = "present")]
    heads: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    refs: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "present")]
    label: Option<String>,
    #[serde(default, deserialize_with = "present")]
    previous: Option<String>,
    #[serde(default, deserialize_with = "present")]
    times: Option<super::EventTimes>,
    #[serde(default, deserialize_with = "present")]
    eval: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "present")]
    weights: Option<BTreeMap<String, u32>>,
    #[serde(default, deserialize_with = "present")]
    signature: Option<String>,
    prev: String,
    hash: String,
}

/// A history event, if `raw` passes the strict checks. An event without an id, version or
/// SHA-256 (a merge, a promotion) reads as empty strings in [`Event`], so those keys must
/// be present and non-empty here, or absent.
pub(crate) fn event(raw: &str) -> Option<Event> {
    let e: HistoryEvent = serde_json::from_str(raw).ok()?;
    let ok = e.seq >= 1
        && timestamp(&e.at)
        && e.id.as_deref().is_none_or(|i| id(i, "PRC") || id(i, "PRM"))
        && e.version.as_deref().is_none_or(version)
        && e.path.as_deref().is_none_or(|p| !p.is_empty())
        && e.sha256.as_deref().is_none_or(sha256)
        && e.successor.as_deref().is_none_or(version)
        && e.heads.as_ref().is_none_or(|h| h.len() == 2 && h.iter().all(|x| sha256(x)))
        && e.refs.as_ref().is_none_or(refs)
        && e.label.as_deref().is_none_or(super::is_label)
        && e.previous.as_deref().is_none_or(version)
        && e.times.as_ref().is_none_or(|t| {
            timestamp(&t.registered_at)
                && [&t.activated_at, &t.deprecated_at, &t.removed_at]
                    .into_iter()
                    .all(|at| at.as_deref().is_none_or(timestamp))
        })
        && e.eval.as_ref().is_none_or(serde_json::Value::is_object)
        && e.signature.as_deref().is_none_or(|s| !s.is_empty())
        && e.weights
            .as_ref()
            .is_none_or(|w| !w.is_empty() && w.iter().all(|(v, p)| version(v) && *p <= 100))
        && sha256(&e.prev)
        && sha256(&e.hash);
    if !ok {
        return None;
    }
    Some(Event {
        seq: e.seq,
        at: e.at,
        action: e.action,
        actor: e.actor,
        id: e.id.unwrap_or_default(),
        version: e.version.unwrap_or_default(),
        path: e.path,
        sha256: e.sha256.unwrap_or_default(),
        state: e.state,
        successor: e.successor,
        heads: e.heads,
        refs: e.refs,
        label: e.label,
        previous: e.previous,
        times: e.times.map(Box::new),
        eval: e.eval,
        weights: e.weights,
        signature: e.signature,
        prev: e.prev,
        hash: e.hash,
    })
}

/// A `refs` map: non-empty paths, each to a SHA-256.
fn refs(refs: &BTreeMap<String, String>) -> bool {
    refs.iter().all(|(path, sha)| !path.is_empty() && sha256(sha))
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `^PRC-[A-Z]+-[0-9]+$` (or `PRM`).
fn id(s: &str, prefix: &str) -> bool {
    let Some(rest) = s.strip_prefix(prefix).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    match rest.split_once('-') {
        Some((letters, number)) => {
            !letters.is_empty() && letters.bytes().all(|b| b.is_ascii_uppercase()) && digits(number)
        }
        None => false,
    }
}

/// `^\d+\.\d+\.\d+$`, with ASCII digits only (narrower than the schema's `\d`).
fn version(s: &str) -> bool {
    let mut parts = s.split('.');
    (0..3).all(|_| parts.next().is_some_and(digits)) && parts.next().is_none()
}

/// `^[0-9a-f]{64}$`.
fn sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// RFC 3339 `date-time` in the one shape pactum writes: `YYYY-MM-DDTHH:MM:SS`, an optional
/// fraction of 1–9 digits, and `Z`; a real calendar date, no leap second.
fn timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(rest) = s.get(19..).and_then(|r| r.strip_suffix('Z')) else { return false };
    let fraction_ok =
        rest.is_empty() || rest.strip_prefix('.').is_some_and(|f| f.len() <= 9 && digits(f));
    let shape = b.len() >= 20
        && [4, 7].iter().all(|&i| b[i] == b'-')
        && b[10] == b'T'
        && [13, 16].iter().all(|&i| b[i] == b':');
    if !(shape && fraction_ok) {
        return false;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i16> {
        let part = s.get(range)?;
        if digits(part) { part.parse().ok() } else { None }
    };
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) =
        (number(0..4), number(5..7), number(8..10), number(11..13), number(14..16), number(17..19))
    else {
        return false;
    };
    year >= 1
        && hour <= 23
        && minute <= 59
        && second <= 59
        && (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && jiff::civil::Date::new(year, month as i8, day as i8).is_ok()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::schema::{RegistryPart, check_registry_part};
    use serde_json::{Value, json};

    const SHA: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn schema_accepts(part: RegistryPart, value: &Value) -> bool {
        check_registry_part(part, value, "").is_empty()
    }

    /// Every variant of a field the fast path accepts, the schema accepts; and the usual
    /// shapes take the fast path.
    #[test]
    fn whatever_the_fast_path_accepts_the_schema_accepts() {
        let good = json!({"contract_id": "PRC-A-001", "version": "1.2.3", "path": "contracts/a.json",
                          "sha256": SHA, "state": "deprecated", "registered_at": "2026-01-01T00:00:00Z",
                          "activated_at": "2026-01-02T00:00:00.5Z", "deprecated_at": "2028-02-29T23:59:59Z",
                          "successor_version": "2.0.0", "removed_at": "2026-03-01T00:00:00.123456789Z",
                          "refs": {"common/address.json": SHA, "common/zip.json": SHA}});
        assert!(entry(&good.to_string(), EntryKind::Contract).is_some());
        assert!(schema_accepts(RegistryPart::ContractEntry, &good));
        let variants: Vec<(&str, Value)> = vec![
            ("contract_id", json!("PRC-a-001")),
            ("contract_id", json!("PRM-A-001")),
            ("contract_id", json!("PRC-A-")),
            ("contract_id", json!(null)),
            ("prompt_pack_id", json!("PRM-A-001")),
            ("version", json!("1.2")),
            ("version", json!("1.2.3.4")),
            ("version", json!("1.2.x")),
            ("version", json!("١.2.3")),
            ("path", json!("")),
            ("sha256", json!(SHA.to_uppercase())),
            ("sha256", json!(&SHA[1..])),
            ("state", json!("gone")),
            ("registered_at", json!("2026-01-01")),
            ("registered_at", json!("2026-02-30T00:00:00Z")),
            ("registered_at", json!("2025-02-29T00:00:00Z")),
            ("registered_at", json!("2026-01-01T24:00:00Z")),
            ("registered_at", json!("2026-01-01T23:60:00Z")),
            ("registered_at", json!("2026-01-01T23:59:60Z")),
            ("registered_at", json!("2026-13-01T00:00:00Z")),
            ("registered_at", json!("2026-00-01T00:00:00Z")),
            ("registered_at", json!("2026-01-01T00:00:00+01:00")),
            ("registered_at", json!("2026-01-01t00:00:00z")),
            ("registered_at", json!("2026-01-01T00:00:00.Z")),
            ("registered_at", json!("2026-01-01T00:00:00.1234567890Z")),
            ("registered_at", json!("+2026-01-01T00:00:00Z")),
            ("activated_at", json!(null)),
            ("successor_version", json!(null)),
            ("refs", json!(null)),
            ("refs", json!([])),
            ("refs", json!({"": SHA})),
            ("refs", json!({"a.json": "x"})),
            ("refs", json!({"a.json": SHA.to_uppercase()})),
            ("refs", json!({"a.json": 1})),
            ("refs", json!({})),
            ("bogus", json!(1)),
        ];
        for (key, value) in variants {
            let mut doc = good.clone();
            doc[key] = value.clone();
            let fast = entry(&doc.to_string(), EntryKind::Contract).is_some();
            let schema = schema_accepts(RegistryPart::ContractEntry, &doc);
            assert!(
                !fast || schema,
                "{key} = {value}: the fast path accepts what the schema refuses"
            );
        }
        // A pack entry under the wrong list, and a missing required key.
        let mut pack = good.clone();
        pack.as_object_mut().unwrap().remove("contract_id");
        pack["prompt_pack_id"] = json!("PRM-A-001");
        // A pack records no referenced files: the schema refuses `refs` there, so must the
        // fast path.
        assert!(entry(&pack.to_string(), EntryKind::PromptPack).is_none());
        assert!(!schema_accepts(RegistryPart::PackEntry, &pack));
        pack.as_object_mut().unwrap().remove("refs");
        assert!(entry(&pack.to_string(), EntryKind::PromptPack).is_some());
        assert!(entry(&pack.to_string(), EntryKind::Contract).is_none());
        let mut missing = good.clone();
        missing.as_object_mut().unwrap().remove("sha256");
        assert!(entry(&missing.to_string(), EntryKind::Contract).is_none());
    }

    #[test]
    fn events_take_the_fast_path_only_when_the_schema_would_accept_them() {
        let good = json!({"seq": 1, "at": "2026-01-01T00:00:00Z", "action": "add", "actor": "me",
                          "id": "PRM-A-001", "version": "1.0.0", "path": "p.json", "sha256": SHA,
                          "state": "active", "successor": "2.0.0", "heads": [SHA, SHA],
                          "refs": {"common/address.json": SHA},
                          "times": {"registered_at": "2026-01-01T00:00:00Z", "removed_at": "2026-01-02T00:00:00.5Z"},
                          "prev": SHA, "hash": SHA});
        assert!(event(&good.to_string()).is_some());
        assert!(schema_accepts(RegistryPart::Event, &good));
        let promote = json!({"seq": 2, "at": "2026-01-01T00:00:00Z", "action": "promote",
                             "id": "PRC-A-001", "version": "1.0.0", "prev": SHA, "hash": SHA});
        let e = event(&promote.to_string()).unwrap();
        assert_eq!((e.sha256.as_str(), e.path.as_deref()), ("", None));
        let variants: Vec<(&str, Value)> = vec![
            ("seq", json!(0)),
            ("seq", json!(-1)),
            ("seq", json!(1.5)),
            ("action", json!("rename")),
            ("actor", json!(null)),
            ("actor", json!(3)),
            ("id", json!("")),
            ("id", json!("PRX-A-001")),
            ("version", json!("")),
            ("path", json!("")),
            ("sha256", json!("")),
            ("state", json!(null)),
            ("successor", json!("v2")),
            ("heads", json!([SHA])),
            ("heads", json!([SHA, SHA, SHA])),
            ("heads", json!([SHA, "x"])),
            ("refs", json!(null)),
            ("refs", json!({"": SHA})),
            ("refs", json!({"a.json": "x"})),
            ("refs", json!("a.json")),
            ("prev", json!("0")),
            ("hash", json!(null)),
            ("at", json!("yesterday")),
            ("extra", json!(true)),
            ("times", json!(null)),
            ("times", json!({})),
            ("times", json!({"registered_at": "yesterday"})),
            ("times", json!({"registered_at": "2026-01-01T00:00:00Z", "activated_at": "soon"})),
            ("times", json!({"registered_at": "2026-01-01T00:00:00Z", "deprecated_at": null})),
            (
                "times",
                json!({"registered_at": "2026-01-01T00:00:00Z", "other_at": "2026-01-01T00:00:00Z"}),
            ),
        ];
        for (key, value) in variants {
            let mut doc = good.clone();
            doc[key] = value.clone();
            let fast = event(&doc.to_string()).is_some();
            let schema = schema_accepts(RegistryPart::Event, &doc);
            assert!(
                !fast || schema,
                "{key} = {value}: the fast path accepts what the schema refuses"
            );
        }
    }
}
