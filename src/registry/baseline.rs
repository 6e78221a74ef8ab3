//! The version a new version's compatibility is measured against (SPEC §7): the highest
//! lower version that was **ever** promoted — active, deprecated or removed. A version that
//! left the active set still defined what `^1` callers were promised, so deprecating it,
//! then removing it, cannot clear the way for a breaking "patch": `registry promote` takes
//! its baseline from [`of`]; `validate`'s compatibility check compares consecutive
//! versions with removed ones kept in the line, and reads those through [`load`].
//!
//! A baseline is compared only as it was frozen: its file with the hash its entry (and the
//! history) recorded, and the files its schemas referenced unchanged. A removed version may
//! have lost its file; then it cannot be compared, and only a major version may follow it
//! ([`Baseline::Lost`]).

use std::path::{Path, PathBuf};

use semver::Version;
use serde_json::Value;

use crate::document;
use crate::error::{Error, Result};
use crate::registry::{Entry, EntryKind, Registry, State};

/// Whether a version counts as a baseline for the versions above it: it was promoted at
/// some point (drafts never were).
pub fn counts(entry: &Entry) -> bool {
    entry.state != State::Draft
}

/// The baseline of `id@version`: the highest lower version that was ever promoted.
pub fn of<'r>(
    registry: &'r Registry,
    kind: EntryKind,
    id: &str,
    version: &Version,
) -> Option<&'r Entry> {
    registry.versions(kind, id).filter(|e| counts(e) && &e.version < version).last()
}

/// A baseline's document, or why it cannot be compared.
#[derive(Debug)]
pub enum Baseline {
    /// The frozen document and its folder (where its schemas' references start).
    Frozen { value: Value, dir: PathBuf },
    /// A removed version whose file is gone, or no longer what was frozen: nothing can be
    /// proven compatible with it, so the version after it must be major.
    Lost { reason: String },
}

impl Baseline {
    /// The change a refusal (or a finding) lists for the lost baseline `id@version`.
    pub fn lost_change(id: &str, version: &Version, reason: &str) -> String {
        format!(
            "{id}@{version} is removed and {reason}: it cannot be compared, so only a major version may follow it (major)"
        )
    }
}

/// Loads `entry` as a baseline. An active or deprecated version must be intact (its file
/// with the frozen hash, its referenced files unchanged): anything else is the error that
/// says so (`contract_hash_mismatch`, `registry_file_missing`, ...), as for any governed
/// file. A removed version that is not intact is [`Baseline::Lost`].
pub fn load(registry: &Registry, entry: &Entry) -> Result<Baseline> {
    match frozen(registry, entry) {
        Ok((value, dir)) => Ok(Baseline::Frozen { value, dir }),
        Err(e) if entry.state == State::Removed => Ok(Baseline::Lost { reason: lost(&e) }),
        Err(e) => Err(e),
    }
}

/// Why a removed version's file cannot be used, in a few words.
pub(crate) fn lost(e: &Error) -> String {
    match e {
        Error::RegistryFileMissing { .. } => "its file is gone".to_string(),
        Error::HashMismatch { .. } => "its file is no longer the one frozen at promote".to_string(),
        Error::ReferenceChanged { path, .. } => {
            format!("a file its schemas reference ({}) changed since promote", path.display())
        }
        other => format!("its file cannot be read ({other})"),
    }
}

/// The entry's document as frozen: the file's hash is the entry's, and every referenced
/// file's hash is the one recorded at promote.
fn frozen(registry: &Registry, entry: &Entry) -> Result<(Value, PathBuf)> {
    let path = registry.file_of(entry)?;
    let doc = document::load(&path, Some(entry.kind.doc_kind()))?;
    if doc.sha256 != entry.sha256 {
        return Err(Error::HashMismatch {
            path: entry.path.clone().into(),
            id: entry.id.clone(),
            version: entry.version.to_string(),
            expected: entry.sha256.clone(),
            actual: doc.sha256,
        });
    }
    if let Some((_, e)) = registry.changed_refs_whatever_state(entry).into_iter().next() {
        return Err(e);
    }
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((doc.value, dir))
}
