//! The ledger (SPEC §10): an append-only, hash-chained JSONL file. Every exchange (and
//! every repair attempt, and every kernel cycle) appends one record.
//!
//! Each record carries `seq`, `at`, `kind` and `prev` (the previous record's `hash`, 64
//! zeros for the first) and `hash` = SHA-256 of the record's canonical JSON without
//! `hash` — the same rule as the registry history. [`verify`] names the first line that was
//! edited, removed or reordered.
//!
//! **Architecture invariant:** a record is serialized first and written with one
//! `write_all` of the whole line under an exclusive file lock, after re-reading the last
//! line under that lock; so concurrent writers (threads or processes) extend one chain and
//! a crash can at worst leave a final line without its newline, which [`verify`] reports.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::digest::{ZERO_HASH, chain_hash, is_sha256_hex};
use crate::error::{Error, Result};

/// An open ledger file.
#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    file: Mutex<File>,
}

/// The largest record line [`verify`] reads (a raw response is in it).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

impl Ledger {
    /// Opens (creating) a ledger for appending.
    pub fn open(path: &Path) -> Result<Ledger> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(Ledger { path: path.to_path_buf(), file: Mutex::new(file) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record (an object; `seq`, `at`, `prev` and `hash` are set here) and
    /// returns it as written.
    pub fn append(&self, kind: &str, mut fields: Map<String, Value>) -> Result<Value> {
        let file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.lock().map_err(|e| Error::io(&self.path, e))?;
        let result = (|| {
            let (seq, prev) = last_link(&file, &self.path)?;
            fields.insert("seq".into(), Value::from(seq + 1));
            fields.insert("at".into(), Value::String(crate::registry::lifecycle::now()));
            fields.insert("kind".into(), Value::String(kind.to_string()));
            fields.insert("prev".into(), Value::String(prev));
            fields.remove("hash");
            let mut record = Value::Object(fields);
            let hash = chain_hash(&record);
            if let Value::Object(map) = &mut record {
                map.insert("hash".into(), Value::String(hash));
            }
            let mut line = crate::digest::canonical_json(&record);
            line.push('\n');
            (&*file).write_all(line.as_bytes()).map_err(|e| Error::io(&self.path, e))?;
            (&*file).flush().map_err(|e| Error::io(&self.path, e))?;
            file.sync_data().map_err(|e| Error::io(&self.path, e))?;
            Ok(record)
        })();
        let _ = file.unlock();
        result
    }
}

/// The `seq` and `hash` of the last complete record (0 and zeros for an empty file).
fn last_link(file: &File, path: &Path) -> Result<(u64, String)> {
    let mut f = file;
    let len = f.seek(SeekFrom::End(0)).map_err(|e| Error::io(path, e))?;
    if len == 0 {
        return Ok((0, ZERO_HASH.to_string()));
    }
    // Read backwards in chunks until the start of the last line.
    let mut tail = Vec::new();
    let mut pos = len;
    let chunk = 64 * 1024;
    loop {
        let start = pos.saturating_sub(chunk);
        let mut buf = vec![0u8; (pos - start) as usize];
        f.seek(SeekFrom::Start(start)).map_err(|e| Error::io(path, e))?;
        f.read_exact(&mut buf).map_err(|e| Error::io(path, e))?;
        buf.extend_from_slice(&tail);
        tail = buf;
        pos = start;
        let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
        if body.contains(&b'\n') || pos == 0 {
            break;
        }
    }
    let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
    let last = body.rsplit(|b| *b == b'\n').next().unwrap_or(body);
    let record: Value = serde_json::from_slice(last).map_err(|e| Error::LedgerBroken {
        path: path.to_path_buf(),
        line: 0,
        reason: format!(
            "the last record is not JSON ({e}); run `pactum ledger verify` before appending"
        ),
    })?;
    let seq = record.get("seq").and_then(Value::as_u64).unwrap_or(0);
    let hash = record.get("hash").and_then(Value::as_str).unwrap_or(ZERO_HASH).to_string();
    let _ = f.seek(SeekFrom::End(0));
    Ok((seq, hash))
}

/// What [`verify`] found in a sound ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub records: u64,
    pub last_hash: String,
}

/// Checks every line: valid JSON, `seq` counting up from 1, `prev` equal to the previous
/// record's hash, and `hash` matching the record. The first break is named by its line
/// number (1-based): an edited record fails its own hash; a removed or reordered one
/// breaks the `prev` or `seq` of the line after it.
pub fn verify(path: &Path) -> Result<Verified> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::new(file);
    let mut prev = ZERO_HASH.to_string();
    let mut expected_seq = 1u64;
    let mut line_no = 0usize;
    let mut buf = Vec::new();
    let broken = |line: usize, reason: String| Error::LedgerBroken {
        path: path.to_path_buf(),
        line,
        reason,
    };
    loop {
        buf.clear();
        let n = reader
            .by_ref()
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if buf.len() > MAX_LINE_BYTES {
            return Err(broken(line_no, format!("line is longer than {MAX_LINE_BYTES} bytes")));
        }
        if buf.last() != Some(&b'\n') {
            return Err(broken(
                line_no,
                "the last line is incomplete (no newline): a write was cut off".into(),
            ));
        }
        let record: Value = serde_json::from_slice(&buf).map_err(|e| {
            broken(line_no, format!("not a JSON record ({e}); the line was edited or corrupted"))
        })?;
        let seq = record.get("seq").and_then(Value::as_u64);
        let hash = record.get("hash").and_then(Value::as_str).filter(|h| is_sha256_hex(h));
        let (Some(seq), Some(hash)) = (seq, hash) else {
            return Err(broken(line_no, "record lacks `seq` or a valid `hash`".into()));
        };
        if chain_hash(&record) != hash {
            return Err(broken(
                line_no,
                format!("record {seq} was edited: its hash does not match its content"),
            ));
        }
        if record.get("prev").and_then(Value::as_str) != Some(prev.as_str()) {
            return Err(broken(
                line_no,
                format!(
                    "record {seq} does not follow the record before it: a record was removed or reordered"
                ),
            ));
        }
        if seq != expected_seq {
            return Err(broken(
                line_no,
                format!(
                    "expected record {expected_seq} here, found {seq}: records were removed or reordered"
                ),
            ));
        }
        prev = hash.to_string();
        expected_seq += 1;
    }
    Ok(Verified { records: expected_seq - 1, last_hash: prev })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;
    use serde_json::json;

    fn fields(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn ledger_with(n: usize) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        let ledger = Ledger::open(&path).unwrap();
        for i in 0..n {
            ledger.append("exchange", fields(json!({"i": i, "text": "multi\nline"}))).unwrap();
        }
        (dir, path)
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path).unwrap().lines().map(str::to_string).collect()
    }

    fn write(path: &Path, lines: &[String]) {
        std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    }

    fn broken_line(path: &Path) -> usize {
        match verify(path).unwrap_err() {
            Error::LedgerBroken { line, .. } => line,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn appends_chain_and_verify() {
        let (_dir, path) = ledger_with(5);
        let v = verify(&path).unwrap();
        assert_eq!(v.records, 5);
        // Reopening continues the chain.
        Ledger::open(&path).unwrap().append("cycle", Map::new()).unwrap();
        assert_eq!(verify(&path).unwrap().records, 6);
    }

    #[test]
    fn edits_removals_and_reorders_are_named_by_line() {
        let (_dir, path) = ledger_with(5);
        let original = lines(&path);
        let mut edited = original.clone();
        edited[2] = edited[2].replace("\"i\":2", "\"i\":9");
        write(&path, &edited);
        assert_eq!(broken_line(&path), 3);
        let mut removed = original.clone();
        removed.remove(1);
        write(&path, &removed);
        assert_eq!(broken_line(&path), 2);
        let mut reordered = original.clone();
        reordered.swap(3, 4);
        write(&path, &reordered);
        assert_eq!(broken_line(&path), 4);
        let mut truncated = original.clone();
        truncated.truncate(3);
        write(&path, &truncated);
        assert!(verify(&path).is_ok(), "dropping the tail keeps a valid prefix");
        std::fs::write(&path, format!("{}\n{}", original[0], &original[1][..10])).unwrap();
        assert_eq!(broken_line(&path), 2);
        assert_eq!(verify(&path).unwrap_err().code(), Code::LedgerBroken);
    }

    #[test]
    fn concurrent_appends_keep_one_chain() {
        let (_dir, path) = ledger_with(0);
        let ledger = Ledger::open(&path).unwrap();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..25 {
                        ledger.append("exchange", fields(json!({"i": i}))).unwrap();
                    }
                });
            }
        });
        assert_eq!(verify(&path).unwrap().records, 100);
        // A second handle (another writer) continues the same chain.
        Ledger::open(&path).unwrap().append("exchange", Map::new()).unwrap();
        assert_eq!(verify(&path).unwrap().records, 101);
    }
}
