//! The ledger (SPEC §10): an append-only, hash-chained JSONL file. Every exchange (and
//! every repair attempt, and every kernel cycle) appends one record.
//!
//! Each record carries `seq`, `at`, `kind` and `prev` (the previous record's `hash`, 64
//! zeros for the first) and `hash` = SHA-256 of the record's canonical JSON without
//! `hash` — the same rule as the registry history. [`verify`] names the first line that was
//! edited, removed or reordered.
//!
//! Three rules, each in one place:
//!
//! - **One door** ([`Location`]): every open of a ledger file, by the writer and by every
//!   reader, goes through `Location::open`; the project's own ledger stays inside the
//!   project and never passes a symlink.
//! - **One form** (`line`): a line is the canonical JSON of its record and at most
//!   [`MAX_LINE_BYTES`] long with its newline. The writer makes every line with
//!   `line::encode` (cutting the largest fields of a record that would not fit, with a `cut`
//!   marker) and every reader reads one back with `line::decode`, which refuses anything
//!   else: another serialisation of a record, JSON that is no record, a line past the
//!   budget. Such a line is `ledger_corrupt`; a well-formed record that does not fit the
//!   chain (its hash, `prev` or `seq`) is `ledger_broken`.
//! - **Bounded reads** (`backwards`): the writer finds the head of the chain by reading the
//!   file backwards in blocks, never more than about twice [`MAX_LINE_BYTES`] of it, and so
//!   never the whole of a last line past the budget; [`query`] reads the same way.
//!
//! **Architecture invariant:** a record is serialized first and written with one
//! `write_all` of the whole line under an exclusive file lock, after re-reading the last
//! line under that lock; so concurrent writers (threads or processes) extend one chain.
//! An append is all or nothing (SPEC §18): a write that fails (a full disk) is cut back to
//! the length the file had, and a last line that is not a record of the chain — left
//! without its newline by a crash, past the budget, not in the one form, or whose hash does
//! not match its content — is found before the next append (`ledger_corrupt` or
//! `ledger_broken`, naming the line), so nothing is ever chained onto it.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::digest::ZERO_HASH;
use crate::error::{Error, Result};
use crate::redact::Redactor;

mod backwards;
pub mod checkpoint;
pub mod copy;
mod line;
mod location;
pub mod postgres;
pub mod query;

pub use line::{CUT, MAX_LINE_BYTES};
pub use location::{Location, PROJECT_LEDGER};

#[cfg(test)]
pub(crate) use line::chain;
use location::Access;

#[cfg(test)]
pub(crate) use line::chain as test_chain;

/// What a record is about (its `kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One call of a contract (SPEC §10).
    Exchange,
    /// One kernel cycle (SPEC §8.6).
    Cycle,
    /// A work order's start or end.
    WorkOrder,
    /// An evaluation's summary (`eval_completed`, SPEC §19).
    Eval,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Exchange => "exchange",
            Kind::Cycle => "cycle",
            Kind::WorkOrder => "work_order",
            Kind::Eval => "eval",
        }
    }
}

/// When an appended record reaches the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Synced before [`Ledger::append`] returns (the library's default).
    #[default]
    EachRecord,
    /// Group commit: records are written whole (all or nothing, as always) and synced
    /// together at [`Ledger::commit`], or when the ledger is dropped. A process that dies
    /// loses nothing (the lines are in the operating system's cache); a machine that loses
    /// power may lose the records since the last commit, never more, and never a link of the
    /// chain before them. `pactum worker` commits when each work order ends, before its
    /// entry is acknowledged (one sync per work order, not three); `pactum run` once per
    /// batch, before it prints;
    /// `pactum eval` once per run, with its `eval_completed` record (not one per case).
    Grouped,
}

/// Something that sees each record once it is written: the telemetry exporter
/// (`crate::telemetry`), which turns records into spans.
pub trait Observer: Send + Sync + std::fmt::Debug {
    /// Whether the observer takes what callers attach besides the record (the prompt an
    /// exchange sent): only then is it gathered.
    fn wants_attachments(&self) -> bool {
        false
    }

    /// `record` as written (masked, cut to the line budget); `attached`: values the caller
    /// attached for observers, masked by the same redactor and never written.
    fn appended(&self, record: &Value, attached: &Map<String, Value>);
}

/// Where an open ledger writes: its file, or its database (SPEC §27).
#[derive(Debug)]
enum Sink {
    File(Mutex<File>),
    Database(Box<Mutex<postgres::Database>>),
}

/// An open ledger: a file, or a table in PostgreSQL.
#[derive(Debug)]
pub struct Ledger {
    location: Location,
    sink: Sink,
    durability: Durability,
    /// Records written but not yet synced (under [`Durability::Grouped`]).
    unsynced: AtomicBool,
    /// Masks secrets in every record before it is hashed and written.
    redactor: Arc<Redactor>,
    /// The project root as paths begin with it (given and real, each with a final `/`),
    /// taken out of every string of a record ([`Ledger::naming_from`]).
    roots: Vec<String>,
    /// Fields every record carries ([`Ledger::stamping`]).
    stamp: Map<String, Value>,
    /// Told of every record written ([`Ledger::observed_by`]).
    observers: Vec<Arc<dyn Observer>>,
}

impl Ledger {
    /// Opens (creating) a ledger for appending.
    pub fn open(location: &Location) -> Result<Ledger> {
        let sink = match location.connect() {
            Some(db) => Sink::Database(Box::new(Mutex::new(db?))),
            None => Sink::File(Mutex::new(location.open(Access::Append)?)),
        };
        Ok(Ledger {
            location: location.clone(),
            sink,
            durability: Durability::EachRecord,
            unsynced: AtomicBool::new(false),
            redactor: Arc::new(Redactor::new()),
            roots: Vec::new(),
            stamp: Map::new(),
            observers: Vec::new(),
        })
    }

    /// Adds `key: value` to every record appended from now on (a worker's `worker_id`,
    /// SPEC §22), unless the record sets the key itself.
    #[must_use]
    pub fn stamping(mut self, key: &str, value: Value) -> Ledger {
        self.stamp.insert(key.to_string(), value);
        self
    }

    /// Tells `observer` of every record written from now on.
    #[must_use]
    pub fn observed_by(mut self, observer: Arc<dyn Observer>) -> Ledger {
        self.observers.push(observer);
        self
    }

    /// Whether an observer takes attachments ([`Ledger::append_attached`]).
    pub fn wants_attachments(&self) -> bool {
        self.observers.iter().any(|o| o.wants_attachments())
    }

    /// Syncs records as `durability` says from now on.
    #[must_use]
    pub fn with_durability(mut self, durability: Durability) -> Ledger {
        self.durability = durability;
        self
    }

    /// Syncs every record written so far to disk (the group commit of
    /// [`Durability::Grouped`]; nothing to do when each record was synced).
    /// A database ledger commits each record in its own transaction: nothing to do.
    pub fn commit(&self) -> Result<()> {
        if !self.unsynced.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let Sink::File(file) = &self.sink else { return Ok(()) };
        let file = file.lock().unwrap_or_else(|p| p.into_inner());
        file.sync_data().map_err(|e| {
            self.unsynced.store(true, Ordering::Release);
            Error::io(self.path(), e)
        })
    }

    /// Names the files of the project at `root` relative to it in the messages pactum writes
    /// into records from now on (an error's message quoting a fixture's absolute path, say;
    /// after masking, and never in inputs, replies or outputs): a ledger is read in other
    /// checkouts and on other machines, where the absolute path means nothing and tells
    /// whose machine and folder it was.
    pub fn naming_from(mut self, root: &std::path::Path) -> Ledger {
        let real = crate::confine::real_or_given(root);
        for path in [root, real.as_path()] {
            let text = format!("{}/", path.display().to_string().trim_end_matches('/'));
            if text.len() > 1 && !self.roots.contains(&text) {
                self.roots.push(text);
            }
        }
        // The longest first: a real path that extends the given one is taken out whole.
        self.roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
        self
    }

    /// Masks secrets with `redactor` (shared with the rest of the process) from now on.
    #[must_use]
    pub fn redacting(mut self, redactor: Arc<Redactor>) -> Ledger {
        self.redactor = redactor;
        self
    }

    /// The path, as messages name it.
    pub fn path(&self) -> &Path {
        self.location.path()
    }

    /// Where the ledger is (for the readers of the same file).
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The redactor this ledger masks records with.
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// Appends one record (an object; `seq`, `at`, `kind`, `prev`, `hash` and, when fields
    /// had to be cut to fit [`MAX_LINE_BYTES`], `cut` are set here) and returns it as written
    /// (secrets masked, fields cut).
    pub fn append(&self, kind: Kind, fields: Map<String, Value>) -> Result<Value> {
        self.append_attached(kind, fields, Map::new)
    }

    /// [`Ledger::append`], telling the observers, with what `attach` gives (masked; built
    /// only when an observer takes attachments) beside the record. Observers are told while
    /// the ledger is still locked, so they see records in the file's order (two work orders
    /// appending at once included): what they make of the records is what a reader of the
    /// file later makes of them.
    pub fn append_attached(
        &self,
        kind: Kind,
        fields: Map<String, Value>,
        attach: impl FnOnce() -> Map<String, Value>,
    ) -> Result<Value> {
        if self.observers.is_empty() {
            return self.write(kind, fields, |_| {});
        }
        let attached = if self.wants_attachments() {
            match self.redactor.redact_value(Value::Object(attach())) {
                Value::Object(map) => map,
                _ => Map::new(),
            }
        } else {
            Map::new()
        };
        self.write(kind, fields, |record| {
            for observer in &self.observers {
                observer.appended(record, &attached);
            }
        })
    }

    /// Writes one record; `written` sees it before the lock is released.
    fn write(
        &self,
        kind: Kind,
        mut fields: Map<String, Value>,
        written: impl FnOnce(&Value),
    ) -> Result<Value> {
        for (key, value) in &self.stamp {
            fields.entry(key.clone()).or_insert_with(|| value.clone());
        }
        let file = match &self.sink {
            Sink::File(file) => file,
            Sink::Database(db) => {
                // One transaction per record, the head read under the table's lock; the
                // observers are told in this process's order of commits.
                let mut db = db.lock().unwrap_or_else(|p| p.into_inner());
                let record =
                    db.append(&mut |seq, prev| self.make(kind, fields.clone(), seq, prev))?;
                written(&record);
                return Ok(record);
            }
        };
        let file = file.lock().unwrap_or_else(|p| p.into_inner());
        file.lock().map_err(|e| Error::io(self.path(), e))?;
        let result = (|| {
            let (seq, prev) = last_link(&file, self.path())?;
            let (record, line) = self.make(kind, fields, seq, prev)?;
            let before = file.metadata().map_err(|e| Error::io(self.path(), e))?.len();
            let written = (&*file).write_all(line.as_bytes()).and_then(|()| (&*file).flush());
            let written = match self.durability {
                Durability::EachRecord => written.and_then(|()| file.sync_data()),
                Durability::Grouped => {
                    written.map(|()| self.unsynced.store(true, Ordering::Release))
                }
            };
            if let Err(e) = written {
                // All or nothing: cut a partial line back off (best effort; if even that
                // fails, the next append finds the torn line and refuses).
                let _ = file.set_len(before);
                let _ = file.sync_data();
                return Err(Error::io(self.path(), e));
            }
            Ok(record)
        })();
        if let Ok(record) = &result {
            written(record);
        }
        let _ = file.unlock();
        result
    }

    /// The `seq` and `hash` of the last record (0 and zeros for an empty ledger).
    pub fn head(&self) -> Result<(u64, String)> {
        match &self.sink {
            Sink::File(file) => {
                let file = file.lock().unwrap_or_else(|p| p.into_inner());
                last_link(&file, self.path())
            }
            Sink::Database(db) => db.lock().unwrap_or_else(|p| p.into_inner()).head(),
        }
    }

    /// Appends whole lines made and verified elsewhere (`copy`: `(seq, hash, line)` each,
    /// the line without its newline), after checking, under the writers' lock, that the
    /// ledger still ends at `expected` (`seq`, hash); all or nothing.
    fn append_lines(&self, expected: (u64, &str), lines: &[(u64, String, String)]) -> Result<()> {
        let file = match &self.sink {
            Sink::File(file) => file,
            Sink::Database(db) => {
                return db.lock().unwrap_or_else(|p| p.into_inner()).insert_lines(expected, lines);
            }
        };
        let file = file.lock().unwrap_or_else(|p| p.into_inner());
        file.lock().map_err(|e| Error::io(self.path(), e))?;
        let result = (|| {
            let (seq, hash) = last_link(&file, self.path())?;
            if (seq, hash.as_str()) != expected {
                return Err(Error::Usage {
                    message: format!(
                        "{} changed while it was copied into (its head is now record {seq}); copy again",
                        self.path().display()
                    ),
                });
            }
            let mut text = String::new();
            for (_, _, line) in lines {
                text.push_str(line);
                text.push('\n');
            }
            let before = file.metadata().map_err(|e| Error::io(self.path(), e))?.len();
            let written = (&*file)
                .write_all(text.as_bytes())
                .and_then(|()| (&*file).flush())
                .and_then(|()| file.sync_data());
            if let Err(e) = written {
                let _ = file.set_len(before);
                let _ = file.sync_data();
                return Err(Error::io(self.path(), e));
            }
            Ok(())
        })();
        let _ = file.unlock();
        result
    }

    /// The record that follows the head `seq`/`prev`, and its line (`line::encode`: the one
    /// form, for a file and a database alike).
    fn make(
        &self,
        kind: Kind,
        mut fields: Map<String, Value>,
        seq: u64,
        prev: String,
    ) -> Result<(Value, String)> {
        fields.insert("seq".into(), Value::from(seq + 1));
        fields.insert("at".into(), Value::String(now()));
        fields.insert("kind".into(), Value::String(kind.as_str().to_string()));
        fields.insert("prev".into(), Value::String(prev));
        // Secrets never reach the ledger: masked before the record is cut and hashed
        // (a cut field's SHA-256 is of the masked text).
        let Value::Object(mut masked) = self.redactor.redact_value(Value::Object(fields)) else {
            return Err(Error::Internal { message: "a masked record is no object".into() });
        };
        // Then pactum's own messages name project files relative to the project (what the
        // user and the model said is kept as they said it).
        if !self.roots.is_empty() {
            unroot_messages(&mut masked, &self.roots);
        }
        Ok(line::encode(masked))
    }
}

/// The messages pactum wrote into `record` (its `message`, and each `message` of its
/// `errors` and `warnings`) with the `roots` prefixes taken out. Nothing else is touched:
/// inputs, replies and outputs are what the user and the model said.
fn unroot_messages(record: &mut Map<String, Value>, roots: &[String]) {
    let unroot = |v: &mut Value| {
        if let Value::String(s) = v
            && roots.iter().any(|r| s.contains(r.as_str()))
        {
            *s = roots.iter().fold(std::mem::take(s), |s, r| s.replace(r.as_str(), ""));
        }
    };
    if let Some(m) = record.get_mut("message") {
        unroot(m);
    }
    for list in ["errors", "warnings"] {
        if let Some(Value::Array(items)) = record.get_mut(list) {
            for item in items {
                if let Some(m) = item.get_mut("message") {
                    unroot(m);
                }
            }
        }
    }
}

/// The time a record is written: RFC 3339, UTC, to the millisecond (a span exported from
/// the record starts `latency_ms` before it, SPEC §22).
pub fn now() -> String {
    crate::registry::lifecycle::now_to(jiff::Unit::Millisecond)
}

impl Drop for Ledger {
    /// A grouped ledger syncs what it wrote when it goes out of scope, on an error path too.
    fn drop(&mut self) {
        let _ = self.commit();
    }
}

/// The `seq` and `hash` of the last record (0 and zeros for an empty file). The last line is
/// found reading backwards (a line past [`MAX_LINE_BYTES`] is refused, not read whole) and
/// must be a record in the one form whose hash matches its content: nothing is chained onto
/// anything else.
fn last_link(file: &File, path: &Path) -> Result<(u64, String)> {
    let mut back = backwards::Backwards::new(file, path)?;
    let Some(last) = back.next_line()? else {
        return Ok((0, ZERO_HASH.to_string()));
    };
    let record = line::decode(&last).map_err(|reason| Error::LedgerCorrupt {
        path: path.to_path_buf(),
        line: back.line_handed_out().unwrap_or(0),
        reason,
        torn: false,
    })?;
    if record.content_hash(&last) != record.hash {
        return Err(Error::LedgerBroken {
            path: path.to_path_buf(),
            line: back.line_handed_out()?,
            reason: format!(
                "record {} was edited: its hash does not match its content, and nothing is chained onto it",
                record.seq
            ),
        });
    }
    Ok((record.seq, record.hash))
}

/// What [`verify`] found in a sound ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub records: u64,
    pub last_hash: String,
    /// The line of the record whose hash was expected (`expect_head`).
    pub head_line: Option<u64>,
}

/// Checks every line: a record in the one form (`ledger_corrupt` otherwise), `seq` counting
/// up from 1, `prev` equal to the previous record's hash, and `hash` matching the record
/// (`ledger_broken` otherwise). The first bad line is named by its number (1-based): an
/// edited record fails its own hash; a removed or reordered one breaks the `prev` or `seq`
/// of the line after it. With `expect_head` (a head published earlier, SPEC §24), the record
/// with that hash must be in the ledger: a ledger rewritten end to end and re-chained, or
/// cut, no longer holds it (`ledger_rewritten`).
/// Reads one line at a time, none past [`MAX_LINE_BYTES`].
pub fn verify(location: &Location, expect_head: Option<&str>) -> Result<Verified> {
    let heads: Vec<&str> = expect_head.into_iter().collect();
    walk(location, &heads, |_| Ok(()))
}

/// [`verify`], with every head in `heads` (published earlier: checkpoints) required to be
/// in the ledger (`ledger_rewritten` naming the first that is not).
pub fn verify_heads(location: &Location, heads: &[&str]) -> Result<Verified> {
    walk(location, heads, |_| Ok(()))
}

/// Hands each record of the ledger at `location` to `each`, oldest first, checking the chain
/// as [`verify`] does (a bad line stops the walk with its error); the number of records.
pub fn for_each_record(
    location: &Location,
    mut each: impl FnMut(&Value) -> Result<()>,
) -> Result<u64> {
    walk(location, &[], |record| each(record)).map(|v| v.records)
}

fn walk(
    location: &Location,
    heads: &[&str],
    mut each: impl FnMut(&Value) -> Result<()>,
) -> Result<Verified> {
    walk_lines(location, heads, |record, _| each(&record.value))
}

/// [`walk`], handing each record with its line (the bytes without the newline).
fn walk_lines(
    location: &Location,
    heads: &[&str],
    mut each: impl FnMut(&line::Record, &[u8]) -> Result<()>,
) -> Result<Verified> {
    let path = location.path();
    let mut chain = Chain::new(path, heads);
    if let Some(db) = location.connect() {
        // A database's rows, oldest first: each row's line checked as a file's line is,
        // its position in the walk named as the line number.
        let mut line_no = 0usize;
        db?.rows(false, &mut |_, line| {
            line_no += 1;
            let record = chain.link(line_no, line.as_bytes())?;
            each(&record, line.as_bytes())?;
            chain.advance(record);
            Ok(false)
        })?;
        return chain.end();
    }
    let file = location.open(Access::Read)?;
    let mut reader = BufReader::with_capacity(backwards::BLOCK, file);
    let mut line_no = 0usize;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .by_ref()
            .take(MAX_LINE_BYTES as u64)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        crate::work::count(n);
        line_no += 1;
        if buf.pop() != Some(b'\n') {
            return Err(if buf.len() + 1 >= MAX_LINE_BYTES {
                chain.corrupt(line_no, line::too_long(), false)
            } else {
                chain.corrupt(line_no, "it has no newline".into(), true)
            });
        }
        let record = chain.link(line_no, &buf)?;
        each(&record, &buf)?;
        chain.advance(record);
    }
    chain.end()
}

/// The checks of a walk over a ledger's lines, oldest first, whatever holds them (a file, a
/// table): each line a record in the one form, its hash its content's, its `prev` the hash
/// before it, its `seq` the next; and at the end, every published head seen.
struct Chain<'a> {
    path: &'a Path,
    heads: &'a [&'a str],
    found: Vec<bool>,
    prev: String,
    expected_seq: u64,
    head_line: Option<u64>,
}

impl<'a> Chain<'a> {
    fn new(path: &'a Path, heads: &'a [&'a str]) -> Chain<'a> {
        Chain {
            path,
            heads,
            found: vec![false; heads.len()],
            prev: ZERO_HASH.to_string(),
            expected_seq: 1,
            head_line: None,
        }
    }

    fn corrupt(&self, line: usize, reason: String, torn: bool) -> Error {
        Error::LedgerCorrupt { path: self.path.to_path_buf(), line, reason, torn }
    }

    fn broken(&self, line: usize, reason: String) -> Error {
        Error::LedgerBroken { path: self.path.to_path_buf(), line, reason }
    }

    /// Line `line_no` (its bytes without the newline) checked as the next link.
    fn link(&mut self, line_no: usize, buf: &[u8]) -> Result<line::Record> {
        let record = line::decode(buf).map_err(|reason| self.corrupt(line_no, reason, false))?;
        let seq = record.seq;
        if record.content_hash(buf) != record.hash {
            return Err(self.broken(
                line_no,
                format!("record {seq} was edited: its hash does not match its content"),
            ));
        }
        if record.prev != self.prev {
            return Err(self.broken(
                line_no,
                format!(
                    "record {seq} does not follow the record before it: a record was removed or reordered"
                ),
            ));
        }
        if seq != self.expected_seq {
            return Err(self.broken(
                line_no,
                format!(
                    "expected record {} here, found {seq}: records were removed or reordered",
                    self.expected_seq
                ),
            ));
        }
        for (i, head) in self.heads.iter().enumerate() {
            if *head == record.hash.as_str() {
                self.found[i] = true;
                if i == 0 {
                    self.head_line = Some(line_no as u64);
                }
            }
        }
        Ok(record)
    }

    fn advance(&mut self, record: line::Record) {
        self.prev = record.hash;
        self.expected_seq += 1;
    }

    fn end(self) -> Result<Verified> {
        let records = self.expected_seq - 1;
        let missing = self.heads.iter().zip(&self.found).find(|(_, found)| !**found);
        if let Some(head) = missing.map(|(h, _)| *h) {
            return Err(Error::LedgerRewritten {
                message: format!(
                    "{}: the published head {head} is not in the ledger (it ends at record {records} with hash {}): the ledger was rewritten and re-chained, cut from the end, or this is another ledger; compare it with a copy you trust, and keep publishing heads (`pactum ledger head`)",
                    self.path.display(),
                    self.prev
                ),
            });
        }
        Ok(Verified { records, last_hash: self.prev, head_line: self.head_line })
    }
}

/// A ledger file of `n` exchange records made by `record(i)`, appended and chained as a run
/// appends them (grouped commits), for the cost tests of the commands that read ledgers.
#[cfg(test)]
pub(crate) fn generated(
    n: usize,
    record: impl Fn(usize) -> Value,
) -> (tempfile::TempDir, Location) {
    let dir = tempfile::tempdir().unwrap();
    let location = Location::chosen(&dir.path().join("ledger.jsonl"));
    let ledger = Ledger::open(&location).unwrap().with_durability(Durability::Grouped);
    for i in 0..n {
        let Value::Object(fields) = record(i) else { panic!("a record is an object") };
        ledger.append(Kind::Exchange, fields).unwrap();
    }
    ledger.commit().unwrap();
    (dir, location)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;
    use crate::work::{Work, work_of};
    use serde_json::json;
    use std::path::PathBuf;

    fn fields(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn at(path: &Path) -> Location {
        Location::chosen(path)
    }

    fn ledger_with(n: usize) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        let ledger = Ledger::open(&at(&path)).unwrap();
        for i in 0..n {
            ledger.append(Kind::Exchange, fields(json!({"i": i, "text": "multi\nline"}))).unwrap();
        }
        (dir, path)
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path).unwrap().lines().map(str::to_string).collect()
    }

    #[test]
    fn the_root_leaves_pactums_messages_only_and_only_after_masking() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("app");
        std::fs::create_dir(&root).unwrap();
        let shown = root.display().to_string();
        // A secret that holds the root's path: masked whole, never shortened first.
        let secret = format!("https://hooks.example.com{shown}/T0SECRETVALUE123456");
        let redactor = Arc::new(Redactor::new());
        redactor.add(&secret);
        let path = dir.path().join("ledger.jsonl");
        let ledger = Ledger::open(&at(&path)).unwrap().naming_from(&root).redacting(redactor);
        let said = format!("see {shown}/notes.md");
        ledger
            .append(
                Kind::Exchange,
                fields(json!({"input": {"hook": secret, "text": said},
                    "message": format!("cannot read {shown}/gone.json"),
                    "errors": [{"message": format!("{shown}/gone.json: missing")}]})),
            )
            .unwrap();
        let text = &lines(&path)[0];
        let record: Value = serde_json::from_str(text).unwrap();
        assert!(!text.contains("T0SECRETVALUE123456"), "{text}");
        assert_eq!(record["message"], "cannot read gone.json");
        assert_eq!(record["errors"][0]["message"], "gone.json: missing");
        assert_eq!(record["input"]["text"], json!(said), "what was said is kept");
        check(&path).unwrap();
    }

    fn write(path: &Path, lines: &[String]) {
        std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    }

    fn check(path: &Path) -> Result<Verified> {
        verify(&at(path), None)
    }

    fn failing_line(path: &Path, code: Code) -> usize {
        match check(path).unwrap_err() {
            Error::LedgerBroken { line, .. } if code == Code::LedgerBroken => line,
            Error::LedgerCorrupt { line, .. } if code == Code::LedgerCorrupt => line,
            other => panic!("{other:?}"),
        }
    }

    fn append_one(path: &Path) -> Result<Value> {
        Ledger::open(&at(path))?.append(Kind::Exchange, Map::new())
    }

    #[test]
    fn appends_chain_and_verify() {
        let (_dir, path) = ledger_with(5);
        let v = check(&path).unwrap();
        assert_eq!(v.records, 5);
        // Reopening continues the chain.
        Ledger::open(&at(&path)).unwrap().append(Kind::Cycle, Map::new()).unwrap();
        assert_eq!(check(&path).unwrap().records, 6);
        let third = lines(&path)[2].clone();
        let hash = serde_json::from_str::<Value>(&third).unwrap()["hash"].clone();
        let v = verify(&at(&path), hash.as_str()).unwrap();
        assert_eq!(v.head_line, Some(3));
        let e = verify(&at(&path), Some(ZERO_HASH)).unwrap_err();
        assert_eq!(e.code(), Code::LedgerRewritten);
        assert!(e.to_string().contains("cut from the end"), "{e}");
    }

    #[test]
    fn edits_removals_and_reorders_are_named_by_line() {
        let (_dir, path) = ledger_with(5);
        let original = lines(&path);
        let mut edited = original.clone();
        edited[2] = edited[2].replace("\"i\":2", "\"i\":9");
        write(&path, &edited);
        assert_eq!(failing_line(&path, Code::LedgerBroken), 3);
        let mut removed = original.clone();
        removed.remove(1);
        write(&path, &removed);
        assert_eq!(failing_line(&path, Code::LedgerBroken), 2);
        let mut reordered = original.clone();
        reordered.swap(3, 4);
        write(&path, &reordered);
        assert_eq!(failing_line(&path, Code::LedgerBroken), 4);
        let mut truncated = original.clone();
        truncated.truncate(3);
        write(&path, &truncated);
        assert!(check(&path).is_ok(), "dropping the tail keeps a valid prefix");
        std::fs::write(&path, format!("{}\n{}", original[0], &original[1][..10])).unwrap();
        assert_eq!(failing_line(&path, Code::LedgerCorrupt), 2);
    }

    #[test]
    fn a_record_of_another_ledger_in_its_place_breaks_the_prev_chain() {
        let (_dir, path) = ledger_with(3);
        let other_dir = tempfile::tempdir().unwrap();
        let other = other_dir.path().join("other.jsonl");
        let ledger = Ledger::open(&at(&other)).unwrap();
        for i in 0..3 {
            ledger.append(Kind::Exchange, fields(json!({"other": i}))).unwrap();
        }
        let (ours, theirs) = (lines(&path), lines(&other));
        // The spliced record has the right `seq` and a hash that matches its own content:
        // only its `prev` (the hash of the record before it in its own ledger) tells.
        write(&path, &[ours[0].clone(), theirs[1].clone(), ours[2].clone()]);
        assert_eq!(failing_line(&path, Code::LedgerBroken), 2);
        let e = check(&path).unwrap_err();
        assert!(e.to_string().contains("does not follow the record before it"), "{e}");
    }

    #[test]
    fn a_torn_last_line_is_found_before_the_next_append() {
        let (_dir, path) = ledger_with(3);
        let original = std::fs::read(&path).unwrap();
        let torn = [original.as_slice(), b"{\"seq\":4,\"ki"].concat();
        std::fs::write(&path, &torn).unwrap();
        let e = append_one(&path).unwrap_err();
        assert_eq!(e.code(), Code::LedgerCorrupt);
        assert!(e.to_string().contains(":4:") && e.to_string().contains("cut off"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), torn, "nothing was appended");
        // Deleting the torn line repairs it; the chain goes on.
        std::fs::write(&path, &original).unwrap();
        append_one(&path).unwrap();
        assert_eq!(check(&path).unwrap().records, 4);
    }

    #[test]
    fn another_serialisation_of_a_record_neither_verifies_nor_takes_an_append() {
        let (_dir, path) = ledger_with(2);
        let original = lines(&path);
        let last = &original[1];
        let record: Value = serde_json::from_str(last).unwrap();
        let reordered = {
            // `seq` moved to the front: the same content, keys out of order.
            let seq = format!(",\"seq\":{}", record["seq"]);
            last.replacen(&seq, "", 1).replacen("{", &format!("{{{},", &seq[1..]), 1)
        };
        let spaced = last.replacen(",", ", ", 1);
        let escaped = last.replacen("\"kind\":\"exchange\"", "\"kind\":\"e\\u0078change\"", 1);
        let duplicated = last.replacen("{", "{\"i\":7,", 1);
        for forged in [reordered, spaced, escaped, duplicated] {
            let same: Value = serde_json::from_str(&forged).unwrap();
            // The same content under the same hash (a duplicate key: the last one counts).
            assert_eq!(crate::digest::chain_hash(&same), record["hash"], "{forged}");
            write(&path, &[original[0].clone(), forged.clone()]);
            assert_eq!(failing_line(&path, Code::LedgerCorrupt), 2, "{forged}");
            let e = check(&path).unwrap_err();
            assert!(e.to_string().contains("not the canonical JSON"), "{e}");
            let before = std::fs::read(&path).unwrap();
            let e = append_one(&path).unwrap_err();
            assert_eq!((e.code(), std::fs::read(&path).unwrap()), (Code::LedgerCorrupt, before));
        }
    }

    #[test]
    fn a_last_line_that_is_no_record_of_the_chain_is_not_chained_onto() {
        let (_dir, path) = ledger_with(1);
        let first = lines(&path)[0].clone();
        for last in [
            r#"{"a":1}"#.to_string(),
            r#"{"at":"2026-01-01T00:00:00Z","hash":5,"kind":"exchange","prev":"x","seq":2}"#.into(),
            "[]".into(),
            String::new(),
        ] {
            write(&path, &[first.clone(), last.clone()]);
            let e = append_one(&path).unwrap_err();
            assert_eq!(e.code(), Code::LedgerCorrupt, "{last}: {e}");
            assert!(e.to_string().contains(":2:"), "{e}");
        }
        // A record in the one form whose hash does not match its content: an edit.
        let edited = first.replace("\"i\":0", "\"i\":1");
        write(&path, &[edited]);
        let e = append_one(&path).unwrap_err();
        assert_eq!(e.code(), Code::LedgerBroken, "{e}");
        assert!(e.to_string().contains(":1: record 1 was edited"), "{e}");
    }

    #[test]
    fn a_record_over_the_budget_is_cut_and_the_chain_goes_on() {
        let (_dir, path) = ledger_with(1);
        let ledger = Ledger::open(&at(&path)).unwrap();
        let reply = "r".repeat(MAX_LINE_BYTES + 4096);
        let content = fields(json!({"raw_response": reply, "verdict": "ok"}));
        let written = ledger.append(Kind::Exchange, content).unwrap();
        let cut = &written["cut"]["raw_response"];
        assert_eq!(cut["bytes"], reply.len());
        assert_eq!(cut["sha256"], crate::digest::sha256_hex(reply.as_bytes()));
        assert_eq!(cut["type"], "string");
        let kept = written["raw_response"].as_str().unwrap();
        assert!(reply.starts_with(kept), "a prefix is kept");
        assert_eq!(cut["kept_bytes"], kept.len());
        assert_eq!(written["verdict"], "ok");
        let text = std::fs::read_to_string(&path).unwrap();
        let longest = text.lines().map(str::len).max().unwrap() + 1;
        assert!(longest <= MAX_LINE_BYTES, "{longest}");
        assert!(longest > MAX_LINE_BYTES - 40, "the budget is used, not wasted");
        // The next append chains onto the cut record (it reads it back whole).
        let next = ledger.append(Kind::Exchange, Map::new()).unwrap();
        assert_eq!(next["prev"], written["hash"]);
        assert_eq!(check(&path).unwrap().records, 3);
    }

    #[test]
    fn a_line_past_the_budget_is_refused_by_the_writer_and_verify() {
        let (_dir, path) = ledger_with(2);
        let before = std::fs::read(&path).unwrap();
        // A sparse line of zeros four times the budget, then a newline.
        let file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        file.set_len(before.len() as u64 + 4 * MAX_LINE_BYTES as u64).unwrap();
        (&file).write_all(b"\n").unwrap();
        let e = append_one(&path).unwrap_err();
        assert_eq!(e.code(), Code::LedgerCorrupt);
        assert!(e.to_string().contains(":3:") && e.to_string().contains("longer than"), "{e}");
        assert_eq!(failing_line(&path, Code::LedgerCorrupt), 3);
    }

    #[test]
    fn concurrent_appends_keep_one_chain() {
        let (_dir, path) = ledger_with(0);
        let ledger = Ledger::open(&at(&path)).unwrap();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..25 {
                        ledger.append(Kind::Exchange, fields(json!({"i": i}))).unwrap();
                    }
                });
            }
        });
        assert_eq!(check(&path).unwrap().records, 100);
        // A second handle (another writer) continues the same chain.
        append_one(&path).unwrap();
        assert_eq!(check(&path).unwrap().records, 101);
    }

    #[test]
    fn grouped_records_are_whole_lines_of_the_one_chain_before_their_commit() {
        let (_dir, path) = ledger_with(1);
        let grouped = Ledger::open(&at(&path)).unwrap().with_durability(Durability::Grouped);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for i in 0..10 {
                        grouped.append(Kind::Exchange, fields(json!({"i": i}))).unwrap();
                    }
                });
            }
            // A writer syncing each record (a `run` beside the eval) extends the same chain.
            s.spawn(|| {
                for _ in 0..5 {
                    append_one(&path).unwrap();
                }
            });
        });
        // Written, not yet committed: every line is a record of the chain, readable now.
        assert_eq!(check(&path).unwrap().records, 36);
        assert!(grouped.unsynced.load(Ordering::Acquire));
        grouped.commit().unwrap();
        assert!(!grouped.unsynced.load(Ordering::Acquire), "the commit synced them");
        grouped.commit().unwrap();
        let last = grouped.append(Kind::Eval, Map::new()).unwrap();
        assert_eq!(last["seq"], 37);
        drop(grouped);
        assert_eq!(check(&path).unwrap().last_hash, last["hash"].as_str().unwrap());
        // A ledger that syncs each record has nothing left to commit.
        let each = Ledger::open(&at(&path)).unwrap();
        each.append(Kind::Exchange, Map::new()).unwrap();
        assert!(!each.unsynced.load(Ordering::Acquire));
    }

    // --- Costs: the work counted (`crate::work`) is every byte read from the file (walked,
    // read backwards, copied), decoded or hashed, and every allocation. -------------------

    /// The bytes of a ledger of `records` records, the last holding a text of `last_bytes`.
    fn ledger_bytes(records: usize, last_bytes: usize) -> String {
        let mut all: Vec<Value> = (0..records)
            .map(|i| json!({"at": "2026-01-01T00:00:00Z", "i": i, "text": "some text"}))
            .collect();
        if let Some(last) = all.last_mut() {
            last["text"] = json!("t".repeat(last_bytes));
        }
        line::chain(&all)
    }

    /// The work of an append to the ledger `text` and of a verify of it (the file written
    /// afresh before each, so that each append is the first after the text).
    fn append_and_verify(dir: &Path, text: &str) -> (Work, Work) {
        let path = dir.join("ledger.jsonl");
        std::fs::write(&path, text).unwrap();
        let append = work_of(|| append_one(&path).unwrap());
        std::fs::write(&path, text).unwrap();
        let verify = work_of(|| assert!(check(&path).is_ok()));
        (append, verify)
    }

    #[test]
    fn an_append_reads_the_last_record_only_and_verify_is_linear_in_the_records() {
        let n = 400;
        let dir = tempfile::tempdir().unwrap();
        let work = |records| append_and_verify(dir.path(), &ledger_bytes(records, 10));
        // An append reads the last line only, whatever the number before it.
        let ((few, _), (many, _)) = (work(n), work(4 * n));
        assert!(few.steps > 0, "{few:?}");
        assert!(
            many.steps <= few.steps + 64 && many.bytes <= few.bytes + 1024,
            "an append after {} records did more than after {n}: {few:?} then {many:?}",
            4 * n
        );
        crate::work::assert_linear("verify of N records", n, |records| work(records).1);
    }

    #[test]
    fn append_and_verify_cost_linear_in_the_last_line() {
        let n = 256 * 1024;
        let dir = tempfile::tempdir().unwrap();
        let work = |bytes| append_and_verify(dir.path(), &ledger_bytes(3, bytes));
        crate::work::assert_linear("append after a last line of N bytes", n, |b| work(b).0);
        crate::work::assert_linear("verify of a last line of N bytes", n, |b| work(b).1);
    }
}
