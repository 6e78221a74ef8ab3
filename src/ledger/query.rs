//! Reading the ledger newest first (SPEC §10, §16): the one reader behind
//! `required_context.ledger_queries` ([`crate::context`]) and `pactum ledger query`.
//!
//! The file is read backwards in blocks from its end, one line at a time (`backwards`), so
//! a query for the last 20 records of a ledger with a million costs a few blocks, not the
//! file: memory is bounded by twice the longest line a ledger may hold
//! ([`super::MAX_LINE_BYTES`]), and the read stops as soon as `limit` records matched or a
//! record is older than `since` (records are appended in time order). A line that is not a
//! record in the one form (a last line cut off by a crash, a line past the budget, JSON
//! that is no record or not canonical) is `ledger_corrupt`, named by its line number. The
//! chain itself (hashes, `prev`, `seq`) is `pactum ledger verify`'s to check. A ledger in
//! PostgreSQL is read the same way, its rows newest first a page at a time
//! (`super::postgres`), a bad line named by its record's `seq`.

use serde_json::Value;

use super::backwards::Backwards;
use super::line;
use super::location::{Access, Location};
use crate::error::{Error, Result};

/// Which records a query wants. Every field set must match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// The record's `event` (records written before events existed count as their `kind`).
    pub event: Option<String>,
    /// The record's `tier`, where the record has one (a record without a tier matches).
    pub tier: Option<String>,
    /// The record's `session_id`, exactly.
    pub session: Option<String>,
    /// Only records at or after this instant.
    pub since: Option<jiff::Timestamp>,
    /// At most this many records.
    pub limit: Option<usize>,
}

/// What a query found: the records newest first, and how much it read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Found {
    pub records: Vec<Value>,
    /// Lines looked at (newest first) before the query stopped.
    pub lines_read: u64,
    /// Bytes read from the file.
    pub bytes_read: u64,
}

/// The record's event type: `event`, else its `kind`.
pub fn event_of(record: &Value) -> Option<&str> {
    record.get("event").or_else(|| record.get("kind")).and_then(Value::as_str)
}

impl Filter {
    /// Whether `record` passes every condition but `since` and `limit`.
    pub fn matches(&self, record: &Value) -> bool {
        let field = |name: &str| record.get(name).and_then(Value::as_str);
        self.event.as_deref().is_none_or(|e| event_of(record) == Some(e))
            && self.tier.as_deref().is_none_or(|t| field("tier").is_none_or(|have| have == t))
            && self.session.as_deref().is_none_or(|s| field("session_id") == Some(s))
    }
}

/// Parses a duration of `recency` / `--since`: `30s`, `30m`, `24h`, `7d` (a positive
/// whole number and one unit). `None` when it does not parse.
pub fn parse_age(text: &str) -> Option<jiff::SignedDuration> {
    let unit = text.chars().last()?;
    let digits = &text[..text.len() - unit.len_utf8()];
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: i64 = digits.parse().ok()?;
    let seconds = match unit {
        's' => n,
        'm' => n.checked_mul(60)?,
        'h' => n.checked_mul(3600)?,
        'd' => n.checked_mul(86_400)?,
        _ => return None,
    };
    Some(jiff::SignedDuration::from_secs(seconds))
}

/// The records of the ledger at `location` that pass `filter`, newest first. A missing
/// ledger has no records. Every line read must be a record in the one form
/// (`ledger::line`): anything else is `ledger_corrupt`, named by its line.
pub fn query(location: &Location, filter: &Filter) -> Result<Found> {
    let mut found = Found::default();
    if filter.limit == Some(0) {
        return Ok(found);
    }
    let path = location.path();
    if let Some(db) = location.connect() {
        // A database's rows newest first, a page at a time, each line in the one form.
        let mut line_no = 0usize;
        db?.rows(true, &mut |seq, text| {
            line_no += 1;
            found.lines_read += 1;
            found.bytes_read += text.len() as u64 + 1;
            let record = line::decode(text.as_bytes()).map_err(|reason| Error::LedgerCorrupt {
                path: path.to_path_buf(),
                line: usize::try_from(seq).unwrap_or(line_no),
                reason,
                torn: false,
            })?;
            Ok(visit(record.value, filter, &mut found))
        })?;
        return Ok(found);
    }
    let file = match location.open(Access::Read) {
        Ok(f) => f,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(found);
        }
        Err(e) => return Err(e),
    };
    let mut back = Backwards::new(&file, path)?;
    let done = loop {
        let Some(line) = back.next_line()? else { break Ok(()) };
        found.lines_read += 1;
        let record = line::decode(&line).map_err(|reason| Error::LedgerCorrupt {
            path: path.to_path_buf(),
            line: back.line_handed_out().unwrap_or(0),
            reason,
            torn: false,
        })?;
        if visit(record.value, filter, &mut found) {
            break Ok(());
        }
    };
    found.bytes_read = back.bytes_read;
    done.map(|()| found)
}

/// Looks at one record; `true` when the query is done.
fn visit(record: Value, filter: &Filter, found: &mut Found) -> bool {
    if let Some(since) = filter.since {
        // `at` is an RFC 3339 instant in every record that decodes.
        let at = record.get("at").and_then(Value::as_str).and_then(|a| a.parse().ok());
        if at.is_none_or(|at: jiff::Timestamp| at < since) {
            return true;
        }
    }
    if filter.matches(&record) {
        found.records.push(record);
        if filter.limit.is_some_and(|l| found.records.len() >= l) {
            return true;
        }
    }
    false
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;
    use serde_json::json;
    use std::path::{Path, PathBuf};

    fn ledger(records: &[Value]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        std::fs::write(&path, line::chain(records)).unwrap();
        (dir, path)
    }

    fn run(path: &Path, filter: &Filter) -> Result<Found> {
        query(&Location::chosen(path), filter)
    }

    fn record(event: &str, at: &str, extra: Value) -> Value {
        let mut r = json!({"at": at, "kind": "exchange", "event": event});
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    }

    #[test]
    fn newest_first_with_limit_event_tier_and_session() {
        let records: Vec<Value> = (1..=10)
            .map(|i| {
                let event = if i % 2 == 0 { "exchange" } else { "work_order_started" };
                let mut extra = json!({"tier": if i == 8 { "hot" } else { "ho1" }});
                if i >= 6 {
                    extra["session_id"] = json!("s1");
                }
                record(event, &format!("2026-01-01T00:00:{i:02}Z"), extra)
            })
            .collect();
        let (_d, path) = ledger(&records);
        let seqs = |f: &Filter| -> Vec<u64> {
            run(&path, f).unwrap().records.iter().map(|r| r["seq"].as_u64().unwrap()).collect()
        };
        let mut f = Filter { event: Some("exchange".into()), limit: Some(3), ..Default::default() };
        assert_eq!(seqs(&f), vec![10, 8, 6]);
        f.tier = Some("ho1".into());
        assert_eq!(seqs(&f), vec![10, 6, 4]);
        f.session = Some("s1".into());
        assert_eq!(seqs(&f), vec![10, 6]);
        let since =
            Filter { since: Some("2026-01-01T00:00:08Z".parse().unwrap()), ..Default::default() };
        assert_eq!(seqs(&since), vec![10, 9, 8]);
        let old = json!({"at": "2026-01-01T00:00:00Z", "kind": "cycle"});
        let (_d2, p2) = ledger(&[old]);
        let f = Filter { event: Some("cycle".into()), ..Default::default() };
        assert_eq!(run(&p2, &f).unwrap().records.len(), 1, "kind stands in for event");
    }

    #[test]
    fn reads_only_the_tail_of_a_long_ledger() {
        let records: Vec<Value> =
            (1..=4_000).map(|_| record("exchange", "2026-01-01T00:00:00Z", json!({}))).collect();
        let (_d, path) = ledger(&records);
        let size = std::fs::metadata(&path).unwrap().len();
        let found = run(&path, &Filter { limit: Some(20), ..Default::default() }).unwrap();
        assert_eq!(found.records.len(), 20);
        assert_eq!(found.records[0]["seq"], 4_000);
        let block = super::super::backwards::BLOCK as u64;
        assert!(found.bytes_read <= block && found.bytes_read < size / 10, "{found:?}");
        assert_eq!(found.lines_read, 20);
        // Lines that straddle block boundaries are put together again.
        let all = run(&path, &Filter::default()).unwrap();
        assert_eq!(all.records.len(), 4_000);
        assert!(all.records.iter().rev().enumerate().all(|(i, r)| r["seq"] == i as u64 + 1));
    }

    #[test]
    fn bad_ledgers_are_named_by_line() {
        let good = record("exchange", "2026-01-01T00:00:00Z", json!({}));
        let text = line::chain(&[good.clone(), good.clone(), good.clone()]);
        let lines: Vec<&str> = text.lines().collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.jsonl");
        let reordered = lines[1].replacen("{", "{\"seq\":2,", 1).replacen(",\"seq\":2", "", 1);
        for bad in ["{not json", r#"{"seq":2}"#, reordered.as_str(), ""] {
            std::fs::write(&path, format!("{}\n{bad}\n{}\n", lines[0], lines[2])).unwrap();
            let e = run(&path, &Filter::default()).unwrap_err();
            assert_eq!(e.code(), Code::LedgerCorrupt, "{bad}");
            assert!(e.to_string().contains(":2:"), "{e}");
        }
        std::fs::write(&path, format!("{}\n{{\"seq\":2", lines[0])).unwrap();
        let e = run(&path, &Filter::default()).unwrap_err();
        assert_eq!(e.code(), Code::LedgerCorrupt);
        assert!(e.to_string().contains(":2:") && e.to_string().contains("cut off"), "{e}");
        // A line past the budget, read no further than the budget.
        let mut big = format!("{}\n", lines[0]).into_bytes();
        big.resize(big.len() + 3 * super::super::MAX_LINE_BYTES, b'x');
        big.extend_from_slice(format!("\n{}\n", lines[2]).as_bytes());
        std::fs::write(&path, big).unwrap();
        let e = run(&path, &Filter::default()).unwrap_err();
        assert!(e.to_string().contains(":2:") && e.to_string().contains("longer than"), "{e}");
        let missing = dir.path().join("none.jsonl");
        assert!(run(&missing, &Filter::default()).unwrap().records.is_empty());
        std::fs::write(&path, "").unwrap();
        assert!(run(&path, &Filter::default()).unwrap().records.is_empty());
    }

    #[test]
    fn ages_parse() {
        assert_eq!(parse_age("30m").unwrap().as_secs(), 1800);
        assert_eq!(parse_age("7d").unwrap().as_secs(), 604_800);
        for bad in ["", "h", "0h", "1w", "1.5h", "-1h", "session", "01h"] {
            assert!(parse_age(bad).is_none(), "{bad}");
        }
    }
}
