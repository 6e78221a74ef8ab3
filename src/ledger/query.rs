//! Reading the ledger newest first (SPEC §10, §16): the one reader behind
//! `required_context.ledger_queries` ([`crate::context`]) and `pactum ledger query`.
//!
//! The file is read backwards in fixed blocks from its end, one line at a time, so a query
//! for the last 20 records of a ledger with a million costs a few blocks, not the file:
//! memory is bounded by one block plus the longest line ([`super::MAX_LINE_BYTES`]), and
//! the read stops as soon as `limit` records matched or a record is older than `since`
//! (records are appended in time order). A line that is not a JSON record is
//! `ledger_broken` (or `ledger_corrupt` for a last line cut off by a crash), named by its
//! line number.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};

/// The bytes read per step backwards.
const BLOCK: usize = 64 * 1024;

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

/// The records of the ledger at `path` that pass `filter`, newest first. A missing ledger
/// has no records.
pub fn query(path: &Path, filter: &Filter) -> Result<Found> {
    let mut found = Found::default();
    if filter.limit == Some(0) {
        return Ok(found);
    }
    let mut file = match crate::confine::open_file(path) {
        Ok(f) => f,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(found);
        }
        Err(e) => return Err(e),
    };
    let len = file.seek(SeekFrom::End(0)).map_err(|e| Error::io(path, e))?;
    let mut pos = len;
    // The bytes after `pos` not yet split into lines (the start of the oldest line seen).
    let mut carry: Vec<u8> = Vec::new();
    let mut first = true;
    let mut block = vec![0u8; BLOCK];
    loop {
        let start = pos.saturating_sub(BLOCK as u64);
        let n = (pos - start) as usize;
        file.seek(SeekFrom::Start(start)).map_err(|e| Error::io(path, e))?;
        file.read_exact(&mut block[..n]).map_err(|e| Error::io(path, e))?;
        found.bytes_read += n as u64;
        pos = start;
        let mut chunk = Vec::with_capacity(n + carry.len());
        chunk.extend_from_slice(&block[..n]);
        chunk.append(&mut carry);
        if first {
            first = false;
            match chunk.last() {
                None => return Ok(found),
                Some(b'\n') => {
                    chunk.pop();
                }
                Some(_) => {
                    return Err(Error::LedgerCorrupt {
                        path: path.to_path_buf(),
                        line: line_count(path)?,
                        reason: "it has no newline".into(),
                    });
                }
            }
        }
        // Every complete line in `chunk` (the first may continue in the block before).
        let mut end = chunk.len();
        while let Some(nl) = memchr::memrchr(b'\n', &chunk[..end]) {
            if visit(path, &chunk[nl + 1..end], filter, &mut found)? {
                return Ok(found);
            }
            end = nl;
        }
        chunk.truncate(end);
        if pos == 0 {
            if !chunk.is_empty() {
                visit(path, &chunk, filter, &mut found)?;
            }
            return Ok(found);
        }
        if chunk.len() > super::MAX_LINE_BYTES {
            return Err(broken(path, &found, "a line is longer than pactum reads".into()));
        }
        carry = chunk;
    }
}

/// Looks at one line; `true` when the query is done.
fn visit(path: &Path, line: &[u8], filter: &Filter, found: &mut Found) -> Result<bool> {
    found.lines_read += 1;
    let record: Value = serde_json::from_slice(line)
        .map_err(|e| broken(path, found, format!("the record is not JSON: {e}")))?;
    if !record.is_object() {
        return Err(broken(path, found, "the record is not a JSON object".into()));
    }
    if let Some(since) = filter.since {
        let at = record
            .get("at")
            .and_then(Value::as_str)
            .and_then(|a| a.parse::<jiff::Timestamp>().ok());
        match at {
            Some(at) if at < since => return Ok(true),
            Some(_) => {}
            None => return Err(broken(path, found, "the record has no RFC 3339 `at`".into())),
        }
    }
    if filter.matches(&record) {
        found.records.push(record);
        if filter.limit.is_some_and(|l| found.records.len() >= l) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `ledger_broken` at the line being looked at (counted from the end; the file is counted
/// only on this error path).
fn broken(path: &Path, found: &Found, reason: String) -> Error {
    let total = line_count(path).unwrap_or(0);
    let line = (total + 1).saturating_sub(found.lines_read as usize);
    Error::LedgerBroken { path: path.to_path_buf(), line, reason }
}

fn line_count(path: &Path) -> Result<usize> {
    let file = crate::confine::open_file(path)?;
    super::count_lines(&file, path)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;

    fn ledger(lines: &[String]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn record(seq: usize, event: &str, at: &str, extra: &str) -> String {
        format!(r#"{{"seq":{seq},"at":"{at}","kind":"exchange","event":"{event}"{extra}}}"#)
    }

    #[test]
    fn newest_first_with_limit_event_tier_and_session() {
        let lines: Vec<String> = (1..=10)
            .map(|i| {
                let event = if i % 2 == 0 { "exchange" } else { "work_order_started" };
                let tier = if i == 8 { r#","tier":"hot""# } else { r#","tier":"ho1""# };
                let session = if i >= 6 { r#","session_id":"s1""# } else { "" };
                record(i, event, &format!("2026-01-01T00:00:{i:02}Z"), &format!("{tier}{session}"))
            })
            .collect();
        let (_d, path) = ledger(&lines);
        let seqs = |f: &Filter| -> Vec<u64> {
            query(&path, f).unwrap().records.iter().map(|r| r["seq"].as_u64().unwrap()).collect()
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
        let old = r#"{"seq":1,"at":"2026-01-01T00:00:00Z","kind":"cycle"}"#.to_string();
        let (_d2, p2) = ledger(&[old]);
        let f = Filter { event: Some("cycle".into()), ..Default::default() };
        assert_eq!(query(&p2, &f).unwrap().records.len(), 1, "kind stands in for event");
    }

    #[test]
    fn reads_only_the_tail_of_a_long_ledger() {
        let lines: Vec<String> =
            (1..=20_000).map(|i| record(i, "exchange", "2026-01-01T00:00:00Z", "")).collect();
        let (_d, path) = ledger(&lines);
        let size = std::fs::metadata(&path).unwrap().len();
        let found = query(&path, &Filter { limit: Some(20), ..Default::default() }).unwrap();
        assert_eq!(found.records.len(), 20);
        assert_eq!(found.records[0]["seq"], 20_000);
        assert!(found.bytes_read <= BLOCK as u64 && found.bytes_read < size / 10, "{found:?}");
        assert_eq!(found.lines_read, 20);
        // Lines that straddle block boundaries are put together again.
        let all = query(&path, &Filter::default()).unwrap();
        assert_eq!(all.records.len(), 20_000);
        assert!(all.records.iter().rev().enumerate().all(|(i, r)| r["seq"] == i as u64 + 1));
    }

    #[test]
    fn bad_ledgers_are_named_by_line() {
        let good = record(1, "exchange", "2026-01-01T00:00:00Z", "");
        let (_d, path) = ledger(&[good.clone(), "{not json".into(), good.clone()]);
        let e = query(&path, &Filter::default()).unwrap_err();
        assert_eq!(e.code(), Code::LedgerBroken);
        assert!(e.to_string().contains(":2:"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let torn = dir.path().join("l.jsonl");
        std::fs::write(&torn, format!("{good}\n{{\"seq\":2")).unwrap();
        let e = query(&torn, &Filter::default()).unwrap_err();
        assert_eq!(e.code(), Code::LedgerCorrupt);
        assert!(e.to_string().contains(":2:"), "{e}");
        let missing = dir.path().join("none.jsonl");
        assert!(query(&missing, &Filter::default()).unwrap().records.is_empty());
        std::fs::write(&torn, "").unwrap();
        assert!(query(&torn, &Filter::default()).unwrap().records.is_empty());
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
