//! Lifecycle operations on a registry in memory (SPEC §7, §17): add, promote, deprecate,
//! remove, discard, adopt. Each legal transition appends one hash-chained event to
//! `history`, stamped with its time and actor; an illegal one returns
//! `registry_transition_invalid` (or a more specific code) and changes nothing.
//! [`store::update`](super::store::update) wraps them in a locked, atomic read-modify-write.
//!
//! ```text
//! add ──► draft ──promote──► active ──deprecate──► deprecated ──remove──► removed
//!           │   (promote freezes the file's hash)
//!           └──discard──► (entry dropped)
//! ```
//!
//! A draft is a working copy: editing its file is not an error and writes no history;
//! `promote` records the file's hash at that moment in the entry and the event, and from
//! then on the file never changes.

use std::path::{Path, PathBuf};

use semver::Version;
use serde_json::Value;

use crate::compat::{Bump, Origin, Origins, declared_bump, diff_contracts_at, required_bump};
use crate::contract::Contract;
use crate::digest::ZERO_HASH;
use crate::document;
use crate::error::{DocKind, Error, Result};
use crate::pack::PromptPack;
use crate::registry::baseline::{self, Baseline};
use crate::registry::{Action, Entry, EntryKind, Event, Registry, State, check_relative};
use crate::resolve::{ResolveOptions, resolve};
use crate::schema::graph::{self, ProjectFiles};

/// The current time as the registry writes it: RFC 3339, UTC, whole seconds.
pub fn now() -> String {
    now_to(jiff::Unit::Second)
}

/// The current time, RFC 3339, UTC, rounded to `unit` (the ledger writes milliseconds).
pub fn now_to(unit: jiff::Unit) -> String {
    let now = jiff::Timestamp::now();
    now.round(unit).unwrap_or(now).to_string()
}

/// When and by whom a change is made; every history event records both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// RFC 3339, UTC, whole seconds.
    pub at: String,
    /// `PACTUM_ACTOR`, else git's `user.email`, else the OS user name (the binary decides).
    pub actor: String,
}

impl Stamp {
    pub fn new(at: impl Into<String>, actor: impl Into<String>) -> Stamp {
        Stamp { at: at.into(), actor: actor.into() }
    }

    /// Now, by `actor`.
    pub fn now(actor: impl Into<String>) -> Stamp {
        Stamp::new(now(), actor)
    }
}

/// Appends `event` to `history`, numbered and chained after the last event.
pub fn chain(history: &mut Vec<Event>, mut event: Event) -> Event {
    event.seq = history.len() as u64 + 1;
    event.prev = history.last().map(|e| e.hash.clone()).unwrap_or_else(|| ZERO_HASH.to_string());
    event.hash = event.compute_hash();
    history.push(event.clone());
    event
}

/// Signs the promote and label events from `start` on with `sign` (an SSHSIG of each
/// event's [`Event::signed_message`], SPEC §24), re-chaining them in order: each event's
/// `prev` is the (signed) event before it, and its hash covers its signature.
pub fn sign_since(
    registry: &mut Registry,
    start: usize,
    sign: &dyn Fn(&str) -> Result<String>,
) -> Result<()> {
    let Some(history) = registry.history.as_mut() else { return Ok(()) };
    for i in start..history.len() {
        let prev = if i == 0 { ZERO_HASH.to_string() } else { history[i - 1].hash.clone() };
        let event = &mut history[i];
        event.prev = prev;
        if event.action.is_signed() {
            event.signature = Some(sign(&event.signed_message())?);
        }
        event.hash = event.compute_hash();
    }
    Ok(())
}

fn append_event(history: &mut Vec<Event>, stamp: &Stamp, action: Action, entry: &Entry) -> Event {
    chain(history, event_for(stamp, action, entry))
}

/// The event `action` on `entry` records (not yet chained).
fn event_for(stamp: &Stamp, action: Action, entry: &Entry) -> Event {
    let mut event = Event {
        at: stamp.at.clone(),
        action,
        actor: Some(stamp.actor.clone()),
        id: entry.id.clone(),
        version: entry.version.to_string(),
        sha256: entry.sha256.clone(),
        ..Event::default()
    };
    match action {
        Action::Add | Action::Update => event.path = Some(entry.path.clone()),
        Action::Deprecate => {
            event.successor = entry.successor_version.as_ref().map(ToString::to_string)
        }
        Action::Adopt => {
            event.path = Some(entry.path.clone());
            event.state = Some(entry.state);
            event.successor = entry.successor_version.as_ref().map(ToString::to_string);
            event.refs = entry.refs.clone();
            event.times = Some(Box::new(crate::registry::EventTimes::of(entry)));
        }
        Action::Promote => event.refs = entry.refs.clone(),
        Action::Remove | Action::Discard | Action::Merge | Action::Labeled | Action::Unlabeled => {}
    }
    event
}

/// A registry with entries but no history (hand-written, or from before histories) gets
/// one `adopt` event per entry, recording it as it stands, so the history can be replayed
/// from then on (SPEC §17). Returns how many entries were adopted; 0 when the registry
/// already has a history or no entries.
pub fn adopt(registry: &mut Registry, stamp: &Stamp) -> usize {
    if registry.history.as_ref().is_some_and(|h| !h.is_empty()) || registry.entries.is_empty() {
        return 0;
    }
    registry.edit(|entries, history| {
        for entry in entries.iter() {
            append_event(history, stamp, Action::Adopt, entry);
        }
        entries.len()
    })
}

/// What `add` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Added {
    /// A new draft entry.
    New(Entry),
    /// A draft's file changed and its hash was refreshed.
    Updated(Entry),
    /// Already registered with this content: nothing changed.
    Unchanged(Entry),
}

impl Added {
    pub fn entry(&self) -> &Entry {
        match self {
            Added::New(e) | Added::Updated(e) | Added::Unchanged(e) => e,
        }
    }
}

/// Registers `file` (a contract or pack inside the registry's folder) as a draft. Adding a
/// registered draft again changes nothing unless its file moved (drafts are working
/// copies: their content is free until `promote`). The file must fit its schema.
pub fn add(registry: &mut Registry, file: &Path, stamp: &Stamp) -> Result<Added> {
    adopt(registry, stamp);
    let root =
        crate::confine::real_path(&registry.root).map_err(|e| Error::io(&registry.root, e))?;
    let real = crate::confine::real_path(file).map_err(|e| Error::io(file, e))?;
    let rel = real.strip_prefix(&root).map_err(|_| Error::PathEscape {
        path: file.display().to_string(),
        reason: format!("is outside the project root {}", root.display()),
    })?;
    let rel = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    check_relative(&rel).map_err(|reason| Error::PathEscape { path: rel.clone(), reason })?;
    let doc = document::load(&real, None)?;
    let (kind, id, version) = identify(&doc)?;
    if let Some(existing) = registry.get(kind, &id, &version).cloned() {
        // Another file claiming a registered version: refused, unless it is a draft's file
        // that moved (the old one is gone), which the entry follows.
        let moved_draft = existing.state == State::Draft
            && crate::confine::entry_at(&root.join(&existing.path)).is_none();
        if existing.path != rel && !moved_draft {
            return Err(Error::ClaimedTwice {
                id,
                version: version.to_string(),
                state: existing.state.as_str().to_string(),
                registered: existing.path.clone(),
                other: rel,
            });
        }
        let same = existing.sha256 == doc.sha256 && existing.path == rel;
        return match existing.state {
            _ if same => Ok(Added::Unchanged(existing)),
            State::Draft if existing.path == rel => Ok(Added::Unchanged(existing)),
            State::Draft => Ok(Added::Updated(registry.edit(|entries, history| {
                let entry = entries.iter_mut().find(|e| **e == existing).map(|e| {
                    e.sha256 = doc.sha256.clone();
                    e.path = rel.clone();
                    e.clone()
                });
                let entry = entry.unwrap_or(existing);
                append_event(history, stamp, Action::Update, &entry);
                entry
            }))),
            state => Err(Error::EntryImmutable {
                id,
                version: version.to_string(),
                state: state.as_str().to_string(),
            }),
        };
    }
    let entry = Entry {
        kind,
        id,
        version,
        path: rel,
        sha256: doc.sha256,
        state: State::Draft,
        registered_at: stamp.at.clone(),
        activated_at: None,
        deprecated_at: None,
        successor_version: None,
        removed_at: None,
        refs: None,
    };
    registry.edit(|entries, history| {
        entries.push(entry.clone());
        append_event(history, stamp, Action::Add, &entry);
    });
    Ok(Added::New(entry))
}

/// The kind, id and version a governed file declares, after checking its schema.
fn identify(doc: &document::Document) -> Result<(EntryKind, String, Version)> {
    if doc.value.get("contract_id").is_some() {
        let c = Contract::from_document(doc)?;
        Ok((EntryKind::Contract, c.id, c.version))
    } else if doc.value.get("prompt_pack_id").is_some() {
        let p = PromptPack::from_document(doc)?;
        Ok((EntryKind::PromptPack, p.id, p.version))
    } else {
        Err(Error::SchemaInvalid {
            doc: DocKind::Contract,
            path: doc.path.clone(),
            findings: vec![crate::error::Finding::new(
                "",
                "not a contract (no contract_id) or prompt pack (no prompt_pack_id)",
            )],
        })
    }
}

fn entry_of(registry: &Registry, kind: EntryKind, id: &str, version: &Version) -> Result<Entry> {
    if registry.versions(kind, id).next().is_none() {
        return Err(Error::NotFound {
            kind: kind.doc_kind(),
            id: id.to_string(),
            suggestions: crate::id::suggest(id, registry.ids(kind)),
        });
    }
    registry.get(kind, id, version).cloned().ok_or_else(|| Error::VersionNotFound {
        kind: kind.doc_kind(),
        id: id.to_string(),
        requirement: format!("={version}"),
        available: registry.versions(kind, id).map(|e| e.version.to_string()).collect(),
    })
}

/// Applies a lifecycle change to `entry` in the registry and records its history event;
/// returns the changed entry.
fn transit(
    registry: &mut Registry,
    entry: &Entry,
    action: Action,
    stamp: &Stamp,
    change: impl FnOnce(&mut Entry),
) -> Entry {
    transit_with(registry, entry, action, stamp, None, change)
}

/// [`transit`], the event carrying the eval gate's `evidence` when there is one.
fn transit_with(
    registry: &mut Registry,
    entry: &Entry,
    action: Action,
    stamp: &Stamp,
    evidence: Option<serde_json::Value>,
    change: impl FnOnce(&mut Entry),
) -> Entry {
    registry.edit(|entries, history| {
        let found = entries
            .iter_mut()
            .find(|e| e.kind == entry.kind && e.id == entry.id && e.version == entry.version);
        let changed = match found {
            Some(e) => {
                change(e);
                e.clone()
            }
            None => entry.clone(),
        };
        let mut event = event_for(stamp, action, &changed);
        event.eval = evidence;
        chain(history, event);
        changed
    })
}

fn transition(entry: &Entry, action: &str, reason: impl Into<String>) -> Error {
    Error::TransitionInvalid {
        id: entry.id.clone(),
        version: entry.version.to_string(),
        action: action.to_string(),
        reason: reason.into(),
    }
}

/// The entry `action` applies to, which must be in state `from`; otherwise
/// `transition_invalid` with `why(entry)` as the reason.
fn entry_in(
    registry: &Registry,
    (kind, id, version): (EntryKind, &str, &Version),
    action: &str,
    from: State,
    why: impl FnOnce(&Entry) -> String,
) -> Result<Entry> {
    let entry = entry_of(registry, kind, id, version)?;
    if entry.state != from {
        return Err(transition(&entry, action, why(&entry)));
    }
    Ok(entry)
}

/// What `promote` checked.
#[derive(Clone, Debug)]
pub struct Promoted {
    pub entry: Entry,
    /// The active version compared against, if any.
    pub compared_with: Option<Version>,
    pub required: Bump,
    pub declared: Bump,
}

/// Loads a draft's file as it is now (a working copy: no hash to check), requiring that it
/// fits its schema and still declares the entry's id and version.
fn load_draft(registry: &Registry, entry: &Entry) -> Result<document::Document> {
    let path = registry.file_of(entry)?;
    let doc = document::load(&path, Some(entry.kind.doc_kind()))?;
    let (_, id, version) = identify(&doc)?;
    if id != entry.id || version != entry.version {
        return Err(Error::IdMismatch {
            path: entry.path.clone().into(),
            expected: entry.key(),
            found: format!("{id}@{version}"),
        });
    }
    Ok(doc)
}

/// draft → active, after the compatibility check against the highest active version
/// below it. A contract's pack must already be active. The entry and the event record the
/// file's hash at this moment: the version is frozen from now on.
pub fn promote(
    registry: &mut Registry,
    kind: EntryKind,
    id: &str,
    version: &Version,
    stamp: &Stamp,
) -> Result<Promoted> {
    promote_with_evidence(registry, kind, id, version, stamp, None)
}

/// [`promote`], with the evidence of the eval gate the version passed recorded in the
/// `promote` event (an object: [`crate::eval::gate::evidence`]), hashed into the history
/// like every other field.
pub fn promote_with_evidence(
    registry: &mut Registry,
    kind: EntryKind,
    id: &str,
    version: &Version,
    stamp: &Stamp,
    evidence: Option<serde_json::Value>,
) -> Result<Promoted> {
    adopt(registry, stamp);
    let entry = entry_in(registry, (kind, id, version), "promote", State::Draft, |entry| {
        format!("it is {}, and only drafts are promoted", entry.state.as_str())
    })?;
    let doc = load_draft(registry, &entry)?;
    let frozen = doc.sha256.clone();
    let dir = doc.path.parent().map(Path::to_path_buf).unwrap_or_default();
    let value = doc.value;
    let files = ProjectFiles::new(&registry.root);
    // The files its schemas reference are frozen with it (SPEC §18: immutability covers
    // meaning); a reference that leads nowhere would let a later file give it one.
    let refs = match kind {
        EntryKind::Contract => graph::referenced_files(&value, &dir, &files, &doc.path)?,
        EntryKind::PromptPack => Default::default(),
    };
    // The highest lower version ever promoted, removed ones included (SPEC §7).
    let previous = baseline::of(registry, kind, id, &entry.version).cloned();
    let (mut required, mut declared) = (Bump::None, Bump::None);
    if kind == EntryKind::Contract {
        let contract = Contract::from_value(value.clone(), &frozen, Path::new(&entry.path))?;
        let pack = |allow_draft| {
            resolve(
                registry,
                EntryKind::PromptPack,
                &contract.prompt_pack_id,
                &contract.prompt_pack_version,
                ResolveOptions { allow_draft, route: None },
            )
        };
        if let Err(e) = pack(false) {
            let fix = match pack(true) {
                Ok(draft) => format!(
                    "promote the pack first: `pactum registry promote {}`",
                    draft.entry.key()
                ),
                Err(_) => format!(
                    "register and promote a version of {} that matches",
                    contract.prompt_pack_id
                ),
            };
            return Err(transition(
                &entry,
                "promote",
                format!("its pack does not resolve to an active version ({e}); {fix}"),
            ));
        }
        if let Some(prev) = &previous {
            declared = declared_bump(&prev.version, &entry.version);
            let changes = match baseline::load(registry, prev)? {
                Baseline::Frozen { value: old, dir: old_dir } => {
                    let old_base = graph::folder_uri(&old_dir);
                    let new_base = graph::folder_uri(&dir);
                    let origins = Origins {
                        old: Origin::new(&old_base, &files),
                        new: Origin::new(&new_base, &files),
                    };
                    let changes = diff_contracts_at(&old, &value, &origins);
                    required = required_bump(&changes);
                    crate::compat::beyond(&changes, declared)
                }
                Baseline::Lost { reason } => {
                    required = Bump::Major;
                    vec![Baseline::lost_change(id, &prev.version, &reason)]
                }
            };
            if declared < required {
                return Err(Error::IncompatibleBump {
                    id: id.to_string(),
                    from: prev.version.to_string(),
                    to: entry.version.to_string(),
                    declared: declared.as_str().to_string(),
                    required: required.as_str().to_string(),
                    changes,
                });
            }
        }
    }
    let entry = transit_with(registry, &entry, Action::Promote, stamp, evidence, |e| {
        e.state = State::Active;
        e.sha256 = frozen;
        e.activated_at = Some(stamp.at.clone());
        e.refs = (!refs.is_empty()).then_some(refs);
    });
    let compared_with =
        if kind == EntryKind::Contract { previous.map(|p| p.version) } else { None };
    Ok(Promoted { entry, compared_with, required, declared })
}

/// The registry as it would be once `id@version` (a draft) is promoted — its file's hash
/// frozen, the `promote` event appended — without any of promote's checks: what the gate
/// validates the project against ([`crate::registry::gate`]).
pub fn assume_promoted(
    registry: &Registry,
    kind: EntryKind,
    id: &str,
    version: &Version,
    stamp: &Stamp,
) -> Result<Registry> {
    let mut view = registry.clone();
    adopt(&mut view, stamp);
    let entry = entry_in(&view, (kind, id, version), "promote", State::Draft, |entry| {
        format!("it is {}, and only drafts are promoted", entry.state.as_str())
    })?;
    let doc = load_draft(&view, &entry)?;
    let dir = doc.path.parent().map(Path::to_path_buf).unwrap_or_default();
    let refs = match kind {
        EntryKind::Contract => {
            let files = ProjectFiles::new(&view.root);
            graph::referenced_files(&doc.value, &dir, &files, &doc.path).unwrap_or_default()
        }
        EntryKind::PromptPack => Default::default(),
    };
    transit(&mut view, &entry, Action::Promote, stamp, |e| {
        e.state = State::Active;
        e.sha256 = doc.sha256.clone();
        e.activated_at = Some(stamp.at.clone());
        e.refs = (!refs.is_empty()).then_some(refs);
    });
    Ok(view)
}

/// Drops a draft's entry (history event `discard`). Only drafts can be discarded: anything
/// that was ever active stays in the registry for the record. Returns the dropped entry;
/// deleting its file is the caller's choice (`--delete`).
pub fn discard(
    registry: &mut Registry,
    kind: EntryKind,
    id: &str,
    version: &Version,
    stamp: &Stamp,
) -> Result<Entry> {
    adopt(registry, stamp);
    let entry = entry_in(registry, (kind, id, version), "discard", State::Draft, |entry| {
        let fix = match entry.state {
            State::Active => format!(
                "deprecate it instead (`pactum registry deprecate {} --successor VERSION`)",
                entry.key()
            ),
            State::Deprecated => {
                format!("remove it instead (`pactum registry remove {}`)", entry.key())
            }
            State::Draft | State::Removed => "it stays in the registry for the record".to_string(),
        };
        format!("it is {}, and only drafts are discarded; {fix}", entry.state.as_str())
    })?;
    if kind == EntryKind::PromptPack
        && let Some(user) = registry.entries.iter().find(|c| {
            c.kind == EntryKind::Contract
                && c.state != State::Removed
                && binds(registry, c, &entry, true)
        })
    {
        return Err(transition(
            &entry,
            "discard",
            format!("{} binds to it; discard or change that contract first", user.key()),
        ));
    }
    registry.drop_entry(&entry, |history| {
        append_event(history, stamp, Action::Discard, &entry);
    });
    Ok(entry)
}

/// Checks that the file of `entry`, a draft just discarded from `registry`, is one the
/// entry owns and may be deleted: never `registry.json`, `pactum.toml`, a path with a hidden
/// component anywhere (`.git/hooks/x.json`, `contracts/.secret/a.json`), or
/// a file another entry names, however spelled or linked. [`delete_discarded`] deletes it.
pub fn check_deletable(registry: &Registry, entry: &Entry) -> Result<()> {
    let refuse = |reason: String| Error::PathEscape { path: entry.path.clone(), reason };
    // No `..`, and no hidden component anywhere (`.git/hooks/x.json`): the entry-path rule.
    check_relative(&entry.path).map_err(refuse)?;
    let root = crate::confine::Root::new(&registry.root);
    let name = Path::new(&entry.path).file_name().and_then(|n| n.to_str()).unwrap_or("");
    if [crate::config::FILE_NAME, "registry.json"].contains(&name) {
        return Err(refuse(format!(
            "`{name}` is not a contract or pack file the draft owns; nothing was deleted (remove the file by hand if you meant to)"
        )));
    }
    // The file as written and as resolved: neither may be another entry's file.
    let lexical = root.real().join(&entry.path);
    let own = |p: &Path| -> Vec<PathBuf> {
        let mut out = vec![normalize(p)];
        if let Ok(real) = root.locate(p) {
            out.push(real);
        }
        out
    };
    let mine = own(&lexical);
    let registry_file =
        own(&root.real().join(registry.path.file_name().unwrap_or("registry.json".as_ref())));
    if mine.iter().any(|p| registry_file.contains(p)) {
        return Err(refuse("is registry.json itself; nothing was deleted".to_string()));
    }
    for other in &registry.entries {
        let theirs = own(&root.real().join(&other.path));
        if mine.first().is_some_and(|m| theirs.contains(m)) {
            return Err(refuse(format!(
                "is also the file of {}; nothing was deleted",
                other.key()
            )));
        }
    }
    Ok(())
}

/// Deletes the file of a discarded draft (checked by [`check_deletable`]): a link, not its
/// target. `Ok(false)` when the file is already gone.
pub fn delete_discarded(registry_root: &Path, entry: &Entry) -> Result<bool> {
    crate::confine::Root::new(registry_root).remove(Path::new(&entry.path))
}

/// `path` with `.` dropped and `..` applied lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// True when contract entry `c` binds to pack entry `pack` (its `prompt_pack_version`
/// resolves to it, with or without drafts).
fn binds(registry: &Registry, c: &Entry, pack: &Entry, allow_draft: bool) -> bool {
    let Ok(path) = registry.file_of(c) else { return false };
    let Ok(doc) = document::load(&path, Some(DocKind::Contract)) else { return false };
    let Ok(contract) = Contract::from_document(&doc) else { return false };
    contract.prompt_pack_id == pack.id
        && resolve(
            registry,
            EntryKind::PromptPack,
            &pack.id,
            &contract.prompt_pack_version,
            ResolveOptions { allow_draft, route: None },
        )
        .is_ok_and(|r| r.entry.version == pack.version)
}

/// active → deprecated, naming an existing, higher, active successor.
pub fn deprecate(
    registry: &mut Registry,
    kind: EntryKind,
    id: &str,
    version: &Version,
    successor: &Version,
    stamp: &Stamp,
) -> Result<Entry> {
    adopt(registry, stamp);
    let entry = entry_in(registry, (kind, id, version), "deprecate", State::Active, |entry| {
        format!("it is {}, and only active versions are deprecated", entry.state.as_str())
    })?;
    let refused = |reason: String| Error::SuccessorMissing {
        id: id.to_string(),
        version: version.to_string(),
        successor: successor.to_string(),
        reason,
        deprecated: false,
    };
    if successor <= version {
        return Err(refused(format!("is not higher than {version}; name a higher version")));
    }
    match registry.get(kind, id, successor) {
        Some(s) if s.state == State::Active => {}
        Some(s) => {
            let fix = match s.state {
                State::Draft => format!("promote it first (`pactum registry promote {}`)", s.key()),
                _ => "name an active version".to_string(),
            };
            return Err(refused(format!("is {}; {fix}", s.state.as_str())));
        }
        None => {
            return Err(refused(
                "is not registered; add and promote it first (`pactum registry add FILE`, \
                 then `pactum registry promote`)"
                    .into(),
            ));
        }
    }
    Ok(transit(registry, &entry, Action::Deprecate, stamp, |e| {
        e.state = State::Deprecated;
        e.deprecated_at = Some(stamp.at.clone());
        e.successor_version = Some(successor.clone());
    }))
}

/// deprecated → removed. Only deprecated versions can be removed.
pub fn remove(
    registry: &mut Registry,
    kind: EntryKind,
    id: &str,
    version: &Version,
    stamp: &Stamp,
) -> Result<Entry> {
    adopt(registry, stamp);
    let entry = entry_in(registry, (kind, id, version), "remove", State::Deprecated, |entry| {
        match entry.state {
            State::Active => format!(
                "it is active; deprecate it first (`pactum registry deprecate {} --successor VERSION`)",
                entry.key()
            ),
            State::Draft => format!(
                "it is a draft, and only deprecated versions are removed; drop a draft with \
                 `pactum registry discard {}`",
                entry.key()
            ),
            State::Deprecated | State::Removed => format!("it is already {}", entry.state.as_str()),
        }
    })?;
    if let Some(reason) = removal_blocker(registry, &entry) {
        return Err(transition(&entry, "remove", reason));
    }
    Ok(transit(registry, &entry, Action::Remove, stamp, |e| {
        e.state = State::Removed;
        e.removed_at = Some(stamp.at.clone());
    }))
}

/// What still depends on `entry`, so that removing it would strand it (`None`: nothing):
/// a label that names it, a version deprecated with it as successor, a contract that binds
/// it (a pack). `registry remove` refuses on it, and `--base` holds a hand-typed `remove`
/// event to it (SPEC §24).
pub fn removal_blocker(registry: &Registry, entry: &Entry) -> Option<String> {
    let (kind, id, version) = (entry.kind, entry.id.as_str(), &entry.version);
    if let Some(label) = labels_on(registry, id, version).into_iter().next() {
        return Some(format!(
            "the label `{label}` names it; move the label first (`pactum registry label {id} {label} VERSION`)"
        ));
    }
    if let Some(dependent) = registry
        .versions(kind, id)
        .find(|e| e.state == State::Deprecated && e.successor_version.as_ref() == Some(version))
    {
        return Some(format!(
            "{} is deprecated with it as successor; remove {} first",
            dependent.key(),
            dependent.key()
        ));
    }
    if kind == EntryKind::PromptPack
        && let Some(c) = registry.entries.iter().find(|c| {
            c.kind == EntryKind::Contract
                && matches!(c.state, State::Active | State::Deprecated)
                && binds(registry, c, entry, false)
        })
    {
        return Some(format!(
            "{} still binds to it; move the contract to another pack version first",
            c.key()
        ));
    }
    None
}

/// A work order pinning a version that is being removed, and where its pin goes after.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PinAfterRemoval {
    pub work_order: String,
    /// The version its pin resolves to once the version is gone; `None`: nothing.
    pub after: Option<String>,
}

/// The work orders whose pins resolve to `id@version` now, and what they resolve to once
/// it is removed (SPEC §20: `registry remove` warns; a pin left with nothing refuses).
pub fn pins_after_removal(
    registry: &Registry,
    kind: EntryKind,
    id: &str,
    version: &Version,
    work_orders: &[(std::path::PathBuf, crate::work_order::WorkOrder)],
) -> Vec<PinAfterRemoval> {
    let mut without = registry.clone();
    without.edit(|entries, _| {
        for e in
            entries.iter_mut().filter(|e| e.kind == kind && e.id == id && e.version == *version)
        {
            e.state = State::Removed;
        }
    });
    let mut out = Vec::new();
    for (_, wo) in work_orders {
        for (_, pin) in wo.pins() {
            if pin.id != id {
                continue;
            }
            let now = resolve(registry, kind, &pin.id, &pin.requirement, ResolveOptions::default());
            if !now.is_ok_and(|r| r.entry.version == *version) {
                continue;
            }
            let after =
                resolve(&without, kind, &pin.id, &pin.requirement, ResolveOptions::default())
                    .ok()
                    .map(|r| r.entry.version.to_string());
            let row = PinAfterRemoval { work_order: wo.id.clone(), after };
            if !out.contains(&row) {
                out.push(row);
            }
        }
    }
    out
}

/// The labels that name `id@version`.
pub fn labels_on(registry: &Registry, id: &str, version: &Version) -> Vec<String> {
    registry
        .labels
        .get(id)
        .map(|names| {
            names.iter().filter(|(_, t)| t.contains(version)).map(|(n, _)| n.clone()).collect()
        })
        .unwrap_or_default()
}

/// A label move: where it was, where it is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LabelMove {
    pub id: String,
    pub label: String,
    /// The version it named before, if any.
    pub previous: Option<String>,
    /// The version it names now (`None`: deleted).
    pub version: Option<String>,
}

/// Moves `label` of `id` to `version` (`Some`) or deletes it (`None`), with a `labeled` /
/// `unlabeled` history event (SPEC §20). The target must be active, or deprecated within
/// its migration period (`deprecated_until`: the latest `deprecated_at` still inside it,
/// `None` for no limit). Moving a label back is a rollback: no new version, no bump.
pub fn label(
    registry: &mut Registry,
    id: &str,
    label: &str,
    version: Option<&Version>,
    deprecated_since: Option<&str>,
    stamp: &Stamp,
) -> Result<LabelMove> {
    label_weighted(registry, id, label, version.map(|v| (v, None)), deprecated_since, stamp)
}

/// [`label`], with a weight (SPEC §26): `Some((version, Some(w)))` gives `version` `w`
/// percent of the label's traffic, the other targets sharing the rest (0 drops it: a
/// rollback; 100 makes it the one target); `Some((version, None))` moves the label to
/// `version` alone; `None` deletes the label. Each change is a `labeled` / `unlabeled`
/// history event; a weighted one records the targets it leaves (`weights`).
pub fn label_weighted(
    registry: &mut Registry,
    id: &str,
    label: &str,
    target: Option<(&Version, Option<u32>)>,
    deprecated_since: Option<&str>,
    stamp: &Stamp,
) -> Result<LabelMove> {
    use crate::registry::label::Targets;
    let kind = EntryKind::of_id(id).ok_or_else(|| Error::IdInvalid {
        id: id.to_string(),
        rule: "a label belongs to a contract (PRC-...) or prompt pack (PRM-...) id".into(),
    })?;
    if !crate::registry::is_label(label) {
        return Err(Error::PinInvalid {
            pin: format!("{id}@{label}"),
            reason: format!(
                "`{label}` is not a label name: lowercase letters, digits and `-`, starting with a letter (production, staging, canary-2)"
            ),
        });
    }
    adopt(registry, stamp);
    let current: Option<Targets> = registry.labels.get(id).and_then(|n| n.get(label)).cloned();
    let refuse = |reason: String| Error::TransitionInvalid {
        id: id.to_string(),
        version: label.to_string(),
        action: "label".to_string(),
        reason,
    };
    let shown = |t: &Option<Targets>| t.as_ref().map(Targets::describe);
    let Some((version, weight)) = target else {
        let Some(old) = current else {
            return Err(refuse(format!("{id} has no label `{label}`")));
        };
        // The event names the label's (first) target, with its hash.
        let first = old.versions().next().cloned().expect("a label has a target");
        let entry = entry_of(registry, kind, id, &first)?;
        registry.edit(|_, history| {
            let event = Event {
                at: stamp.at.clone(),
                action: Action::Unlabeled,
                actor: Some(stamp.actor.clone()),
                id: id.to_string(),
                version: first.to_string(),
                sha256: entry.sha256.clone(),
                label: Some(label.to_string()),
                weights: old.is_weighted().then(|| old.event_weights()),
                ..Event::default()
            };
            chain(history, event)
        });
        if let Some(names) = registry.labels.get_mut(id) {
            names.remove(label);
            if names.is_empty() {
                registry.labels.remove(id);
            }
        }
        return Ok(LabelMove {
            id: id.to_string(),
            label: label.to_string(),
            previous: Some(old.describe()),
            version: None,
        });
    };
    let entry = entry_of(registry, kind, id, version)?;
    let dropping = weight == Some(0);
    match entry.state {
        // A rollback takes a target out whatever state it is in now.
        _ if dropping => {}
        State::Active => {}
        State::Deprecated => {
            if let (Some(since), Some(at)) = (deprecated_since, entry.deprecated_at.as_deref())
                && at < since
            {
                return Err(refuse(format!(
                    "{} is deprecated and past its migration period; label an active version",
                    entry.key()
                )));
            }
        }
        other => {
            return Err(refuse(format!(
                "{} is {}; a label names an active version (or a deprecated one within its migration period){}",
                entry.key(),
                other.as_str(),
                if other == State::Draft {
                    format!(": promote it first (`pactum registry promote {}`)", entry.key())
                } else {
                    String::new()
                }
            )));
        }
    }
    let next = match (weight, &current) {
        (None, _) | (Some(100), _) => Targets::one(version.clone()),
        (Some(_), None) => {
            return Err(refuse(format!(
                "{id} has no label `{label}` yet to share with {version}: point it at a version first (`pactum registry label {id} {label} VERSION`), then give {version} a weight"
            )));
        }
        (Some(w), Some(cur)) => match cur.with_weight(version, w) {
            Some(t) => t,
            None => {
                return Err(refuse(format!(
                    "that would leave `{label}` with no target; delete it instead (`pactum registry label {id} {label} --delete`)"
                )));
            }
        },
    };
    if current.as_ref() == Some(&next) {
        return Ok(LabelMove {
            id: id.to_string(),
            label: label.to_string(),
            previous: shown(&current),
            version: Some(next.describe()),
        });
    }
    // The event names the version the command set, with its hash; a weighted result also
    // records every target's weight.
    let (named, named_sha) = match next.single() {
        Some(only) if only != version => {
            let e = entry_of(registry, kind, id, only)?;
            (only.clone(), e.sha256.clone())
        }
        _ => (version.clone(), entry.sha256.clone()),
    };
    registry.edit(|_, history| {
        let event = Event {
            at: stamp.at.clone(),
            action: Action::Labeled,
            actor: Some(stamp.actor.clone()),
            id: id.to_string(),
            version: named.to_string(),
            sha256: named_sha,
            label: Some(label.to_string()),
            previous: current.as_ref().and_then(Targets::single).map(ToString::to_string),
            weights: next.is_weighted().then(|| next.event_weights()),
            ..Event::default()
        };
        chain(history, event)
    });
    registry.labels.entry(id.to_string()).or_default().insert(label.to_string(), next.clone());
    Ok(LabelMove {
        id: id.to_string(),
        label: label.to_string(),
        previous: shown(&current),
        version: Some(next.describe()),
    })
}

/// Every problem `registry verify` reports: the registry's own audit (duplicates, history
/// chain, paths, successors) plus each entry's file hash and declared id/version.
pub fn verify(registry: &Registry) -> Vec<crate::diagnostic::Diagnostic> {
    use crate::diagnostic::Diagnostic;
    let mut out = registry.audit();
    for entry in &registry.entries {
        if entry.state == State::Removed {
            continue;
        }
        let pointer = registry.pointer_of(entry);
        let Ok(path) = registry.file_of(entry) else { continue };
        match document::load(&path, Some(entry.kind.doc_kind())) {
            Err(e) => out.push(Diagnostic::from_error(&e).pointer(format!("{pointer}/path"))),
            // A draft is a working copy: its content is free until promote.
            Ok(doc) if doc.sha256 != entry.sha256 && entry.state != State::Draft => {
                let e = Error::HashMismatch {
                    path: entry.path.clone().into(),
                    id: entry.id.clone(),
                    version: entry.version.to_string(),
                    expected: entry.sha256.clone(),
                    actual: doc.sha256,
                };
                out.push(Diagnostic::from_error(&e).pointer(format!("{pointer}/sha256")));
            }
            Ok(doc) => {
                for (rel, e) in registry.changed_refs(entry) {
                    let at = crate::schema::join_pointer(&format!("{pointer}/refs"), &rel);
                    out.push(Diagnostic::from_error(&e).pointer(at).help(format!(
                        "{} is {}: the files its schemas reference never change; restore {rel} (`git checkout -- {rel}`), and put a changed schema in a new file referenced by a new version",
                        entry.key(),
                        entry.state.as_str()
                    )));
                }
                let id_key = match entry.kind {
                    EntryKind::Contract => "contract_id",
                    EntryKind::PromptPack => "prompt_pack_id",
                };
                let id = doc.value.get(id_key).and_then(Value::as_str).unwrap_or("?");
                let version = doc.value.get("version").and_then(Value::as_str).unwrap_or("?");
                if id != entry.id || version != entry.version.to_string() {
                    let e = Error::IdMismatch {
                        path: entry.path.clone().into(),
                        expected: entry.key(),
                        found: format!("{id}@{version}"),
                    };
                    out.push(Diagnostic::from_error(&e).pointer(pointer));
                }
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;
    use crate::registry::verify_history;
    use serde_json::json;

    struct Tree {
        dir: tempfile::TempDir,
        registry: Registry,
    }

    impl Tree {
        fn new() -> Tree {
            let dir = tempfile::tempdir().unwrap();
            let registry = Registry::empty(&dir.path().join("registry.json"));
            Tree { dir, registry }
        }

        fn write(&self, rel: &str, value: Value) -> std::path::PathBuf {
            let path = self.dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
            path
        }

        fn contract(&self, version: &str, extra: Value) -> std::path::PathBuf {
            let mut c = json!({"contract_id": "PRC-A-001", "version": version, "prompt_pack_id": "PRM-A-001",
                               "boundary": {"max_tokens": 10, "temperature": 0},
                               "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}});
            for (k, v) in extra.as_object().unwrap() {
                c[k] = v.clone();
            }
            self.write(&format!("contracts/a/{version}.json"), c)
        }

        fn pack(&self) -> std::path::PathBuf {
            self.write(
                "prompt_packs/a/1.0.0.json",
                json!({"prompt_pack_id": "PRM-A-001", "version": "1.0.0", "template": "{{ x }}"}),
            )
        }
    }

    fn ts() -> Stamp {
        Stamp::new("2026-01-01T00:00:00Z", "tester@example.com")
    }

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn full_lifecycle_appends_a_verifiable_chain() {
        let mut t = Tree::new();
        let pack = t.pack();
        let c1 = t.contract("1.0.0", json!({}));
        let c2 = t.contract("1.1.0", json!({"input_schema": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}}}}));
        assert!(matches!(add(&mut t.registry, &pack, &ts()).unwrap(), Added::New(_)));
        add(&mut t.registry, &c1, &ts()).unwrap();
        add(&mut t.registry, &c2, &ts()).unwrap();
        // A contract cannot go active before its pack.
        let e = promote(&mut t.registry, EntryKind::Contract, "PRC-A-001", &v("1.0.0"), &ts())
            .unwrap_err();
        assert_eq!(e.code(), Code::RegistryTransitionInvalid);
        promote(&mut t.registry, EntryKind::PromptPack, "PRM-A-001", &v("1.0.0"), &ts()).unwrap();
        promote(&mut t.registry, EntryKind::Contract, "PRC-A-001", &v("1.0.0"), &ts()).unwrap();
        let p =
            promote(&mut t.registry, EntryKind::Contract, "PRC-A-001", &v("1.1.0"), &ts()).unwrap();
        assert_eq!((p.required, p.declared), (Bump::Minor, Bump::Minor));
        deprecate(
            &mut t.registry,
            EntryKind::Contract,
            "PRC-A-001",
            &v("1.0.0"),
            &v("1.1.0"),
            &ts(),
        )
        .unwrap();
        remove(&mut t.registry, EntryKind::Contract, "PRC-A-001", &v("1.0.0"), &ts()).unwrap();
        let history = t.registry.history.clone().unwrap();
        assert_eq!(history.len(), 8);
        verify_history(&history).unwrap();
        let actions: Vec<_> = history.iter().map(|e| e.action.as_str()).collect();
        assert_eq!(
            actions,
            ["add", "add", "add", "promote", "promote", "promote", "deprecate", "remove"]
        );
    }

    #[test]
    fn illegal_transitions_are_refused() {
        let mut t = Tree::new();
        let pack = t.pack();
        add(&mut t.registry, &pack, &ts()).unwrap();
        let one = v("1.0.0");
        let refused = |r: Result<Entry>| r.unwrap_err().code();
        assert_eq!(
            refused(remove(&mut t.registry, EntryKind::PromptPack, "PRM-A-001", &one, &ts())),
            Code::RegistryTransitionInvalid
        );
        assert_eq!(
            refused(deprecate(
                &mut t.registry,
                EntryKind::PromptPack,
                "PRM-A-001",
                &one,
                &v("2.0.0"),
                &ts()
            )),
            Code::RegistryTransitionInvalid
        );
        promote(&mut t.registry, EntryKind::PromptPack, "PRM-A-001", &one, &ts()).unwrap();
        let e =
            promote(&mut t.registry, EntryKind::PromptPack, "PRM-A-001", &one, &ts()).unwrap_err();
        assert_eq!(e.code(), Code::RegistryTransitionInvalid);
        assert_eq!(
            refused(deprecate(
                &mut t.registry,
                EntryKind::PromptPack,
                "PRM-A-001",
                &one,
                &v("2.0.0"),
                &ts()
            )),
            Code::SuccessorMissing
        );
        assert_eq!(
            refused(deprecate(
                &mut t.registry,
                EntryKind::PromptPack,
                "PRM-A-001",
                &one,
                &v("0.9.0"),
                &ts()
            )),
            Code::SuccessorMissing
        );
        let e =
            promote(&mut t.registry, EntryKind::PromptPack, "PRM-B-001", &one, &ts()).unwrap_err();
        assert_eq!(e.code(), Code::PromptPackNotFound);
        // Re-adding changed content of an active entry is refused.
        std::fs::write(
            &pack,
            r#"{"prompt_pack_id": "PRM-A-001", "version": "1.0.0", "template": "changed {{ x }}"}"#,
        )
        .unwrap();
        assert_eq!(
            add(&mut t.registry, &pack, &ts()).unwrap_err().code(),
            Code::RegistryEntryImmutable
        );
    }

    #[test]
    fn a_version_a_label_names_is_not_removed_until_the_label_moves() {
        let mut t = Tree::new();
        let pack = t.pack();
        add(&mut t.registry, &pack, &ts()).unwrap();
        promote(&mut t.registry, EntryKind::PromptPack, "PRM-A-001", &v("1.0.0"), &ts()).unwrap();
        for version in ["1.0.0", "2.0.0"] {
            let c = t.contract(version, json!({}));
            add(&mut t.registry, &c, &ts()).unwrap();
            promote(&mut t.registry, EntryKind::Contract, "PRC-A-001", &v(version), &ts()).unwrap();
        }
        label(&mut t.registry, "PRC-A-001", "production", Some(&v("1.0.0")), None, &ts()).unwrap();
        let (one, two) = (v("1.0.0"), v("2.0.0"));
        deprecate(&mut t.registry, EntryKind::Contract, "PRC-A-001", &one, &two, &ts()).unwrap();
        let before = t.registry.clone();
        let e = remove(&mut t.registry, EntryKind::Contract, "PRC-A-001", &one, &ts()).unwrap_err();
        assert_eq!(e.code(), Code::RegistryTransitionInvalid);
        assert!(e.to_string().contains("the label `production` names it"), "{e}");
        assert_eq!(t.registry.entries, before.entries, "nothing changed");
        assert_eq!(t.registry.history, before.history, "no event was appended");
        // Once the label moves on, the version goes.
        label(&mut t.registry, "PRC-A-001", "production", Some(&two), None, &ts()).unwrap();
        let removed = remove(&mut t.registry, EntryKind::Contract, "PRC-A-001", &one, &ts());
        assert_eq!(removed.unwrap().state, State::Removed);
    }

    #[test]
    fn drafts_are_working_copies_until_promote_freezes_the_hash() {
        let mut t = Tree::new();
        let pack = t.pack();
        add(&mut t.registry, &pack, &ts()).unwrap();
        let registered = t.registry.entries[0].sha256.clone();
        std::fs::write(
            &pack,
            r#"{"prompt_pack_id": "PRM-A-001", "version": "1.0.0", "template": "v2 {{ x }}"}"#,
        )
        .unwrap();
        // An edited draft: not an error, no history event, nothing to re-add.
        assert!(verify(&t.registry).is_empty(), "{:?}", verify(&t.registry));
        assert!(matches!(add(&mut t.registry, &pack, &ts()).unwrap(), Added::Unchanged(_)));
        assert_eq!(t.registry.history.as_ref().unwrap().len(), 1);
        let edited = crate::digest::sha256_hex(&std::fs::read(&pack).unwrap());
        assert_ne!(edited, registered);
        // Promote freezes the file's hash at that moment, in the entry and in the event.
        let p = promote(&mut t.registry, EntryKind::PromptPack, "PRM-A-001", &v("1.0.0"), &ts())
            .unwrap();
        assert_eq!(p.entry.sha256, edited);
        let last = t.registry.history.as_ref().unwrap().last().unwrap().clone();
        assert_eq!((last.action, last.sha256.as_str()), (Action::Promote, edited.as_str()));
        assert_eq!(last.actor.as_deref(), Some("tester@example.com"));
        assert!(verify(&t.registry).is_empty(), "{:?}", verify(&t.registry));
        // From then on the file never changes.
        std::fs::write(
            &pack,
            r#"{"prompt_pack_id": "PRM-A-001", "version": "1.0.0", "template": "v3"}"#,
        )
        .unwrap();
        let codes: Vec<Code> = verify(&t.registry).iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::ContractHashMismatch]);
    }

    #[test]
    fn only_drafts_are_discarded_and_a_discard_replays() {
        let mut t = Tree::new();
        let pack = t.pack();
        let c1 = t.contract("1.0.0", json!({}));
        add(&mut t.registry, &pack, &ts()).unwrap();
        add(&mut t.registry, &c1, &ts()).unwrap();
        // The contract binds the draft pack: the pack cannot go first.
        let e = discard(&mut t.registry, EntryKind::PromptPack, "PRM-A-001", &v("1.0.0"), &ts())
            .unwrap_err();
        assert_eq!(e.code(), Code::RegistryTransitionInvalid);
        assert!(e.to_string().contains("PRC-A-001@1.0.0 binds to it"), "{e}");
        let dropped =
            discard(&mut t.registry, EntryKind::Contract, "PRC-A-001", &v("1.0.0"), &ts()).unwrap();
        assert_eq!(dropped.key(), "PRC-A-001@1.0.0");
        assert!(t.registry.get(EntryKind::Contract, "PRC-A-001", &v("1.0.0")).is_none());
        assert_eq!(t.registry.history.as_ref().unwrap().last().unwrap().action, Action::Discard);
        assert!(verify(&t.registry).is_empty(), "{:?}", verify(&t.registry));
        promote(&mut t.registry, EntryKind::PromptPack, "PRM-A-001", &v("1.0.0"), &ts()).unwrap();
        let e = discard(&mut t.registry, EntryKind::PromptPack, "PRM-A-001", &v("1.0.0"), &ts())
            .unwrap_err();
        assert_eq!(e.code(), Code::RegistryTransitionInvalid);
        assert!(e.to_string().contains("pactum registry deprecate PRM-A-001@1.0.0"), "{e}");
    }

    #[test]
    fn a_registry_without_history_is_adopted_before_its_first_change() {
        let mut t = Tree::new();
        let pack = t.pack();
        add(&mut t.registry, &pack, &ts()).unwrap();
        // Make it a hand-written registry: entries, no history.
        t.registry.history = None;
        let codes: Vec<Code> = verify(&t.registry).iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::RegistryHistoryMissing]);
        let c1 = t.contract("1.0.0", json!({}));
        add(&mut t.registry, &c1, &ts()).unwrap();
        let actions: Vec<Action> =
            t.registry.history.as_ref().unwrap().iter().map(|e| e.action).collect();
        assert_eq!(actions, [Action::Adopt, Action::Add]);
        assert!(verify(&t.registry).is_empty(), "{:?}", verify(&t.registry));
        assert_eq!(
            adopt(&mut t.registry, &ts()),
            0,
            "a registry with history is not adopted again"
        );
    }

    #[test]
    fn promote_rejects_a_bump_too_small() {
        let mut t = Tree::new();
        let pack = t.pack();
        add(&mut t.registry, &pack, &ts()).unwrap();
        promote(&mut t.registry, EntryKind::PromptPack, "PRM-A-001", &v("1.0.0"), &ts()).unwrap();
        let c1 = t.contract("1.0.0", json!({}));
        let c2 = t.contract("1.0.1", json!({"input_schema": {"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}}}}));
        add(&mut t.registry, &c1, &ts()).unwrap();
        add(&mut t.registry, &c2, &ts()).unwrap();
        promote(&mut t.registry, EntryKind::Contract, "PRC-A-001", &v("1.0.0"), &ts()).unwrap();
        let before = t.registry.to_json();
        let e = promote(&mut t.registry, EntryKind::Contract, "PRC-A-001", &v("1.0.1"), &ts())
            .unwrap_err();
        assert_eq!(e.code(), Code::IncompatibleVersionBump);
        assert!(e.to_string().contains("required_added"), "{e}");
        assert_eq!(t.registry.to_json(), before);
    }

    #[test]
    fn files_outside_the_root_cannot_be_added() {
        let mut t = Tree::new();
        let outside = tempfile::tempdir().unwrap();
        let file = outside.path().join("c.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(add(&mut t.registry, &file, &ts()).unwrap_err().code(), Code::PathEscape);
    }
}
