//! `pactum ledger copy FROM TO` (SPEC §27): a ledger moved between a JSONL file and
//! PostgreSQL (either way, or file to file), verified on the way.
//!
//! The source is walked with `verify`'s checks, oldest first; its lines go to the target as
//! they are (the one form: a record copied is byte for byte the record written, so its
//! hash and every head published from it still hold). The target may be empty, or hold a
//! prefix of the source (an earlier copy): then only the records after it are copied. A
//! target holding anything else — a record the source does not have at its place, more
//! records than the source — is refused (`ledger_rewritten`), and nothing is written.
//! Records go over in batches, each appended under the target's writers' lock after
//! checking that the target still ends where the copy left it, so a copy that stops (a
//! broken record further on in the source, a database gone) leaves a target that is a
//! verified prefix of the source, and copying again goes on from there.

use super::{Ledger, Location, verify};
use crate::digest::ZERO_HASH;
use crate::error::{Error, Result};

/// Records per batch (one transaction in a database).
const BATCH: usize = 500;

/// What a copy did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Copied {
    /// Records the source holds (all verified).
    pub records: u64,
    /// Records the target held before (a prefix of the source).
    pub already: u64,
    /// The hash of the last record, in both.
    pub last_hash: String,
}

/// Copies the ledger at `from` into `to` (see the module's documentation).
pub fn copy(from: &Location, to: &Location) -> Result<Copied> {
    let target = match verify(to, None) {
        Ok(v) => (v.records, v.last_hash),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            (0, ZERO_HASH.to_string())
        }
        Err(e) => return Err(e),
    };
    let refused = |why: String| Error::LedgerRewritten {
        message: format!(
            "{} is not empty and not a prefix of {}: {why}; copy into an empty ledger (a new file, or another ?table=NAME)",
            to.path().display(),
            from.path().display()
        ),
    };
    let writer = Ledger::open(to)?;
    let mut head = target.clone();
    let mut batch: Vec<(u64, String, String)> = Vec::new();
    let flush = |batch: &mut Vec<(u64, String, String)>, head: &mut (u64, String)| {
        let Some(last) = batch.last() else { return Ok(()) };
        let next = (last.0, last.1.clone());
        writer.append_lines((head.0, &head.1), batch)?;
        *head = next;
        batch.clear();
        Ok::<(), Error>(())
    };
    let verified = super::walk_lines(from, &[], |record, line| {
        if record.seq == target.0 && record.hash != target.1 {
            return Err(refused(format!(
                "its record {} is not the source's record {}",
                target.0, target.0
            )));
        }
        if record.seq > target.0 {
            let text = String::from_utf8_lossy(line).into_owned();
            batch.push((record.seq, record.hash.clone(), text));
            if batch.len() == BATCH {
                flush(&mut batch, &mut head)?;
            }
        }
        Ok(())
    })?;
    if verified.records < target.0 {
        return Err(refused(format!(
            "it holds {} records, the source {}",
            target.0, verified.records
        )));
    }
    flush(&mut batch, &mut head)?;
    Ok(Copied { records: verified.records, already: target.0, last_hash: verified.last_hash })
}
