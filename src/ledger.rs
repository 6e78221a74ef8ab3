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
//! line under that lock; so concurrent writers (threads or processes) extend one chain.
//! An append is all or nothing (SPEC §18): a write that fails (a full disk) is cut back to
//! the length the file had, and a last line left without its newline by a crash is found
//! before the next append (`ledger_corrupt`, naming the line), so nothing is ever joined
//! to it. [`verify`] also refuses a record with a duplicate key, whose content two JSON
//! parsers would read differently.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::digest::{ZERO_HASH, chain_hash, is_sha256_hex};
use crate::error::{Error, Result};
use crate::redact::Redactor;

pub mod query;

/// An open ledger file.
#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    file: Mutex<File>,
    /// Masks secrets in every record before it is hashed and written.
    redactor: Arc<Redactor>,
}

/// The largest record line [`verify`] reads (a raw response is in it).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

impl Ledger {
    /// Opens (creating) a ledger for appending.
    pub fn open(path: &Path) -> Result<Ledger> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::confine::create_folders(dir)?;
        }
        let file = crate::confine::open_for_update(path, true)?;
        Ok(Ledger {
            path: path.to_path_buf(),
            file: Mutex::new(file),
            redactor: Arc::new(Redactor::new()),
        })
    }

    /// Masks secrets with `redactor` (shared with the rest of the process) from now on.
    #[must_use]
    pub fn redacting(mut self, redactor: Arc<Redactor>) -> Ledger {
        self.redactor = redactor;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The redactor this ledger masks records with.
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// Appends one record (an object; `seq`, `at`, `prev` and `hash` are set here) and
    /// returns it as written (secrets masked).
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
            // Secrets never reach the ledger: masked before the record is hashed.
            let mut record = self.redactor.redact_value(Value::Object(fields));
            let hash = chain_hash(&record);
            if let Value::Object(map) = &mut record {
                map.insert("hash".into(), Value::String(hash));
            }
            let mut line = crate::digest::canonical_json(&record);
            line.push('\n');
            let before = file.metadata().map_err(|e| Error::io(&self.path, e))?.len();
            let written = (&*file)
                .write_all(line.as_bytes())
                .and_then(|()| (&*file).flush())
                .and_then(|()| file.sync_data());
            if let Err(e) = written {
                // All or nothing: cut a partial line back off (best effort; if even that
                // fails, the next append finds the torn line and refuses).
                let _ = file.set_len(before);
                let _ = file.sync_data();
                return Err(Error::io(&self.path, e));
            }
            Ok(record)
        })();
        let _ = file.unlock();
        result
    }
}

impl Ledger {
    /// The `seq` and `hash` of the last record (0 and zeros for an empty ledger).
    pub fn head(&self) -> Result<(u64, String)> {
        let file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        last_link(&file, &self.path)
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
    let Some(body) = tail.strip_suffix(b"\n") else {
        return Err(Error::LedgerCorrupt {
            path: path.to_path_buf(),
            line: count_lines(f, path)?,
            reason: "it has no newline".into(),
        });
    };
    let last = body.rsplit(|b| *b == b'\n').next().unwrap_or(body);
    let record: Value = serde_json::from_slice(last).map_err(|e| Error::LedgerCorrupt {
        path: path.to_path_buf(),
        line: count_lines(f, path).unwrap_or(0),
        reason: format!("it is not a JSON record: {e}"),
    })?;
    let seq = record.get("seq").and_then(Value::as_u64).unwrap_or(0);
    let hash = record.get("hash").and_then(Value::as_str).unwrap_or(ZERO_HASH).to_string();
    let _ = f.seek(SeekFrom::End(0));
    Ok((seq, hash))
}

/// The number of lines in the file, a last line without newline included (only on the
/// error path: it reads the whole file).
fn count_lines(mut f: &File, path: &Path) -> Result<usize> {
    f.seek(SeekFrom::Start(0)).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::new(f);
    let mut lines = 0usize;
    let mut last = b'\n';
    loop {
        let buf = reader.fill_buf().map_err(|e| Error::io(path, e))?;
        if buf.is_empty() {
            break;
        }
        lines += memchr::memchr_iter(b'\n', buf).count();
        last = buf[buf.len() - 1];
        let n = buf.len();
        reader.consume(n);
    }
    Ok(lines + usize::from(last != b'\n'))
}

/// Parses one record, refusing duplicate keys at any depth: with duplicates, the record a
/// hash covers and the record another reader sees could differ.
fn parse_strict(bytes: &[u8]) -> std::result::Result<Value, String> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = StrictValue.deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// A JSON value deserializer that fails on a duplicate object key.
struct StrictValue;

impl<'de> serde::de::DeserializeSeed<'de> for StrictValue {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for StrictValue {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(StrictValue)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format!("duplicate key `{key}`")));
            }
            let value = map.next_value_seed(StrictValue)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
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
    let file = crate::confine::open_file(path)?;
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
            return Err(Error::LedgerCorrupt {
                path: path.to_path_buf(),
                line: line_no,
                reason: "it has no newline".into(),
            });
        }
        let record: Value = parse_strict(&buf).map_err(|e| {
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
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
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
        match verify(&path).unwrap_err() {
            Error::LedgerCorrupt { line, .. } => assert_eq!(line, 2),
            other => panic!("{other:?}"),
        }
        write(&path, &edited);
        assert_eq!(verify(&path).unwrap_err().code(), Code::LedgerBroken);
    }

    #[test]
    fn a_torn_last_line_is_found_before_the_next_append() {
        let (_dir, path) = ledger_with(3);
        let original = std::fs::read(&path).unwrap();
        let torn = [original.as_slice(), b"{\"seq\":4,\"ki"].concat();
        std::fs::write(&path, &torn).unwrap();
        let e = Ledger::open(&path).unwrap().append("exchange", Map::new()).unwrap_err();
        assert_eq!(e.code(), Code::LedgerCorrupt);
        assert!(e.to_string().contains(":4:"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), torn, "nothing was appended");
        // Deleting the torn line repairs it; the chain goes on.
        std::fs::write(&path, &original).unwrap();
        Ledger::open(&path).unwrap().append("exchange", Map::new()).unwrap();
        assert_eq!(verify(&path).unwrap().records, 4);
    }

    #[test]
    fn duplicate_keys_do_not_verify() {
        let (_dir, path) = ledger_with(2);
        let lines = lines(&path);
        // The hash covers the record with the last `i`; a reader keeping the first sees 7.
        let forged = lines[1].replacen("{", "{\"i\":7,", 1);
        assert!(serde_json::from_str::<Value>(&forged).is_ok());
        write(&path, &[lines[0].clone(), forged]);
        let e = verify(&path).unwrap_err();
        assert_eq!(e.code(), Code::LedgerBroken);
        assert!(e.to_string().contains("duplicate key"), "{e}");
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
