//! `registry.json` (SPEC §3.3): the governed index of every contract and pack version.
//!
//! [`Registry`] is the validated, indexed form: entries by `(kind, id)` sorted by version,
//! so resolution is a lookup, not a directory scan. Loading checks the file against
//! `registry.schema.json`; [`Registry::audit`] reports duplicate entries, paths that leave
//! the root and a history that does not hash-chain. Writes (the lifecycle commands) live
//! in [`lifecycle`] and [`store`].

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use semver::Version;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::digest::ZERO_HASH;
use crate::document;
use crate::error::{Code, DocKind, Error, Finding, Result};
use crate::id::parse_version;
use crate::schema;

pub mod base;
pub mod baseline;
pub mod gate;
pub mod label;
pub mod lifecycle;
pub mod list;
pub mod merge;
pub mod replay;
pub mod sign;
pub mod store;
mod strict;

/// The file name pactum looks for when walking up from a folder.
pub const FILE_NAME: &str = "registry.json";

/// Contract or prompt pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    Contract,
    PromptPack,
}

impl EntryKind {
    pub fn doc_kind(self) -> DocKind {
        match self {
            EntryKind::Contract => DocKind::Contract,
            EntryKind::PromptPack => DocKind::PromptPack,
        }
    }

    pub fn noun(self) -> &'static str {
        self.doc_kind().noun()
    }

    /// The kind an id names, from its prefix.
    pub fn of_id(id: &str) -> Option<EntryKind> {
        match crate::id::kind_of_id(id) {
            Some(DocKind::Contract) => Some(EntryKind::Contract),
            Some(DocKind::PromptPack) => Some(EntryKind::PromptPack),
            _ => None,
        }
    }
}

/// Lifecycle state: draft → active → deprecated → removed (ordered that way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Draft,
    Active,
    Deprecated,
    Removed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Draft => "draft",
            State::Active => "active",
            State::Deprecated => "deprecated",
            State::Removed => "removed",
        }
    }
}

/// One registered version of a contract or pack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    pub id: String,
    pub version: Version,
    /// Relative to the registry's folder, `/`-separated.
    pub path: String,
    pub sha256: String,
    pub state: State,
    pub registered_at: String,
    pub activated_at: Option<String>,
    pub deprecated_at: Option<String>,
    pub successor_version: Option<Version>,
    pub removed_at: Option<String>,
    /// The files a contract's schemas referenced (transitively) when it was promoted: path
    /// relative to the registry's folder → SHA-256. The entry's hash covers them (SPEC
    /// §18, "immutability covers meaning"). `None` for drafts, packs, contracts that
    /// reference no file, and entries promoted before pactum recorded them.
    pub refs: Option<BTreeMap<String, String>>,
}

impl Entry {
    pub fn key(&self) -> String {
        format!("{}@{}", self.id, self.version)
    }
}

/// A lifecycle action recorded in the history.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    #[default]
    Add,
    Update,
    Promote,
    Deprecate,
    Remove,
    /// A draft's entry dropped (`registry discard`).
    Discard,
    /// An entry that predates the history, recorded as it stood (`registry adopt`).
    Adopt,
    /// A label moved to a version (`registry label ID LABEL VERSION`, `promote --label`);
    /// `label` names it, `previous` the version it left, if any.
    Labeled,
    /// A label deleted (`registry label ID LABEL --delete`); `version` is the one it left.
    Unlabeled,
    /// Two branches' histories joined by the merge driver; names both heads.
    Merge,
}

impl Action {
    /// Whether `[gate] signers` asks for this event's signature: the events that change
    /// which version a pin runs (a promotion, a label's move or deletion, a deprecation, a
    /// removal). Adding, updating or discarding a draft, adopting and merging change none.
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            Action::Promote
                | Action::Labeled
                | Action::Unlabeled
                | Action::Deprecate
                | Action::Remove
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Add => "add",
            Action::Update => "update",
            Action::Promote => "promote",
            Action::Deprecate => "deprecate",
            Action::Remove => "remove",
            Action::Discard => "discard",
            Action::Adopt => "adopt",
            Action::Labeled => "labeled",
            Action::Unlabeled => "unlabeled",
            Action::Merge => "merge",
        }
    }
}

/// One hash-chained history event. `hash` is the SHA-256 of the event's canonical JSON
/// without `hash`; `prev` is the previous event's `hash` (64 zeros for the first).
///
/// Beyond SPEC §3.3's fields, events written since §17 carry `actor` (who), `path` (add,
/// update, adopt), `state` (adopt), `successor` (deprecate, adopt), `heads` (merge) and
/// `refs` (promote, adopt: the files a contract's schemas reference), so the history alone
/// implies every entry ([`replay`]). Absent fields are left out of the
/// JSON and of the hash, so older histories verify unchanged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub seq: u64,
    pub at: String,
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// Empty for a merge event.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successor: Option<String>,
    /// A merge event's two parents: our head hash, then theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heads: Option<Vec<String>>,
    /// The files the promoted contract's schemas reference, with their SHA-256 (promote,
    /// adopt); see [`Entry::refs`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refs: Option<BTreeMap<String, String>>,
    /// The label a `labeled` / `unlabeled` event moves (SPEC §20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The version a `labeled` event moved the label from, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// An adopted entry's timestamps as they stood (`adopt`): they predate the history,
    /// so the event records them for the replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<Box<EventTimes>>,
    /// The evidence of the eval gate a `promote` event passed (`registry promote --eval`):
    /// the provider and, per suite, its id, the dataset's SHA-256, the pass rates of the
    /// candidate and the baseline and the McNemar p-value ([`crate::eval::gate::evidence`]).
    /// An object; hashed as canonical JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval: Option<serde_json::Value>,
    /// A weighted `labeled` event's targets as it leaves them (version → percent; SPEC
    /// §26): absent for a move to one version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<BTreeMap<String, u32>>,
    /// An SSHSIG signature (armored) of [`Event::signed_message`], by the key of whoever
    /// promoted or labelled, when the project's `[gate] signers` asks for signed events
    /// ([`sign`]). Hashed with the event, so the chain covers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    pub prev: String,
    pub hash: String,
}

/// The timestamps of an entry, as an `adopt` event records them ([`Event::times`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventTimes {
    pub registered_at: String,
    #[serde(
        default,
        deserialize_with = "strict::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub activated_at: Option<String>,
    #[serde(
        default,
        deserialize_with = "strict::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub deprecated_at: Option<String>,
    #[serde(
        default,
        deserialize_with = "strict::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub removed_at: Option<String>,
}

impl EventTimes {
    /// The timestamps of `entry`.
    pub fn of(entry: &Entry) -> EventTimes {
        EventTimes {
            registered_at: entry.registered_at.clone(),
            activated_at: entry.activated_at.clone(),
            deprecated_at: entry.deprecated_at.clone(),
            removed_at: entry.removed_at.clone(),
        }
    }

    /// Canonical JSON: keys in code-point order, absent ones left out.
    fn canonical(&self) -> String {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let fields = [
            ("activated_at", self.activated_at.as_deref()),
            ("deprecated_at", self.deprecated_at.as_deref()),
            ("registered_at", Some(self.registered_at.as_str())),
            ("removed_at", self.removed_at.as_deref()),
        ];
        let pairs: Vec<String> = fields
            .into_iter()
            .filter_map(|(key, value)| value.map(|v| format!("\"{key}\":{}", quote(v))))
            .collect();
        format!("{{{}}}", pairs.join(","))
    }
}

impl Event {
    /// The hash this event must carry: SHA-256 of its canonical JSON without `hash` (keys
    /// in code-point order, absent fields left out), written directly rather than through
    /// a JSON value (40,000 events verify in milliseconds).
    pub fn compute_hash(&self) -> String {
        self.hash_with(self.signature.as_deref())
    }

    /// What a signature of this event signs: the hash of the event without its
    /// `signature` (and without `hash`), so the signed event's own hash covers both.
    pub fn signed_message(&self) -> String {
        self.hash_with(None)
    }

    fn hash_with(&self, signature: Option<&str>) -> String {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let mut out = String::with_capacity(400);
        let mut field = |key: &str, value: String| {
            out.push(if out.is_empty() { '{' } else { ',' });
            out.push('"');
            out.push_str(key);
            out.push_str("\":");
            out.push_str(&value);
        };
        // Keys in code-point order.
        field("action", quote(self.action.as_str()));
        if let Some(actor) = &self.actor {
            field("actor", quote(actor));
        }
        field("at", quote(&self.at));
        if let Some(eval) = &self.eval {
            field("eval", crate::digest::canonical_json(eval));
        }
        if let Some(heads) = &self.heads {
            let list: Vec<String> = heads.iter().map(|h| quote(h)).collect();
            field("heads", format!("[{}]", list.join(",")));
        }
        if !self.id.is_empty() {
            field("id", quote(&self.id));
        }
        if let Some(label) = &self.label {
            field("label", quote(label));
        }
        if let Some(path) = &self.path {
            field("path", quote(path));
        }
        field("prev", quote(&self.prev));
        if let Some(previous) = &self.previous {
            field("previous", quote(previous));
        }
        if let Some(refs) = &self.refs {
            // A `BTreeMap` iterates in code-point order: canonical JSON's key order.
            let pairs: Vec<String> =
                refs.iter().map(|(path, sha)| format!("{}:{}", quote(path), quote(sha))).collect();
            field("refs", format!("{{{}}}", pairs.join(",")));
        }
        field("seq", self.seq.to_string());
        if !self.sha256.is_empty() {
            field("sha256", quote(&self.sha256));
        }
        if let Some(signature) = signature {
            field("signature", quote(signature));
        }
        if let Some(state) = self.state {
            field("state", quote(state.as_str()));
        }
        if let Some(successor) = &self.successor {
            field("successor", quote(successor));
        }
        if let Some(times) = &self.times {
            field("times", times.canonical());
        }
        if !self.version.is_empty() {
            field("version", quote(&self.version));
        }
        if let Some(weights) = &self.weights {
            let pairs: Vec<String> =
                weights.iter().map(|(v, w)| format!("{}:{w}", quote(v))).collect();
            field("weights", format!("{{{}}}", pairs.join(",")));
        }
        out.push('}');
        crate::digest::sha256_hex(out.as_bytes())
    }

    /// `ID@VERSION`, or `merge` for a merge event.
    pub fn subject(&self) -> String {
        if self.id.is_empty() {
            self.action.as_str().to_string()
        } else {
            format!("{}@{}", self.id, self.version)
        }
    }
}

/// Checks a history chain exactly as SPEC §3.3 defines it.
pub fn verify_history(history: &[Event]) -> Result<()> {
    let mut prev = ZERO_HASH.to_string();
    for (i, event) in history.iter().enumerate() {
        let expected_seq = i as u64 + 1;
        if event.seq != expected_seq {
            return Err(Error::HistoryBroken {
                seq: event.seq,
                reason: format!("expected seq {expected_seq}; events were removed or reordered"),
            });
        }
        if event.prev != prev {
            return Err(Error::HistoryBroken {
                seq: event.seq,
                reason: "`prev` is not the previous event's hash; an event was removed, edited or reordered".into(),
            });
        }
        let hash = event.compute_hash();
        if event.hash != hash {
            return Err(Error::HistoryBroken {
                seq: event.seq,
                reason: format!("`hash` should be {hash}; the event was edited"),
            });
        }
        prev = event.hash.clone();
    }
    Ok(())
}

/// The validated registry with its index.
#[derive(Clone, Debug)]
pub struct Registry {
    /// Path of registry.json.
    pub path: PathBuf,
    /// The folder entry paths are relative to.
    pub root: PathBuf,
    /// The file's text (for diagnostics with line numbers).
    pub text: String,
    pub sha256: String,
    pub entries: Vec<Entry>,
    /// `None` when the file has no `history` (allowed for hand-written registries).
    pub history: Option<Vec<Event>>,
    /// Labels (SPEC §20): id → label → the version it names (`PRC-X-001@production`).
    pub labels: Labels,
    /// Top-level keys pactum does not use (`$schema`, `x-*`), kept on every rewrite.
    pub extra: serde_json::Map<String, Value>,
    /// Per kind (`kind_slot`): id → its entries' indexes, lowest version first. Looked up
    /// by `&str`, so a lookup allocates nothing.
    index: [HashMap<String, Vec<usize>>; 2],
    /// Each entry's position in its list (`contracts` or `prompt_packs`), for pointers.
    positions: Vec<usize>,
    /// Entries per kind: contracts, prompt packs.
    counts: [usize; 2],
    /// The root with symlinks resolved, computed once.
    real_root: std::sync::OnceLock<PathBuf>,
    /// Each entry's resolved file, computed once (validation asks several times).
    files: Vec<std::sync::OnceLock<std::result::Result<PathBuf, PathProblem>>>,
    /// The history folded once, for the runtime's check of what it resolves
    /// ([`Registry::accounts_for`]).
    replayed: std::sync::OnceLock<replay::Replayed>,
}

impl Registry {
    /// An empty registry for `path` (nothing is written).
    pub fn empty(path: &Path) -> Registry {
        let root = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        Registry {
            path: path.to_path_buf(),
            root,
            text: String::new(),
            sha256: String::new(),
            entries: Vec::new(),
            history: Some(Vec::new()),
            labels: Labels::new(),
            extra: serde_json::Map::new(),
            index: [HashMap::new(), HashMap::new()],
            positions: Vec::new(),
            counts: [0, 0],
            real_root: std::sync::OnceLock::new(),
            files: Vec::new(),
            replayed: std::sync::OnceLock::new(),
        }
    }

    /// The version a hint suggests for a change of `id`: a patch above its highest
    /// version (the bump the change needs is what `diff` and `promote` check).
    pub fn next_version(&self, kind: EntryKind, id: &str) -> String {
        self.versions(kind, id).map(|e| &e.version).max().map_or_else(
            || "1.0.0".to_string(),
            |v| format!("{}.{}.{}", v.major, v.minor, v.patch + 1),
        )
    }

    /// Whether the history accounts for `entry` as it stands — its state, hash, path and
    /// referenced files are what the replay of the events gives (SPEC §20: the runtime
    /// trusts only what the history accounts for) — and, for `label`, for the label naming
    /// it. The same differences `registry verify` reports, as `registry_history_mismatch`.
    /// The history is folded once per registry; a registry without a history cannot be
    /// checked (`validate` warns `registry_history_missing`) and is taken as it is.
    pub fn accounts_for(&self, entry: &Entry, label: Option<&str>) -> Result<()> {
        let Some(history) = self.history.as_deref().filter(|h| !h.is_empty()) else {
            return Ok(());
        };
        let replayed = self.replayed.get_or_init(|| replay::Replayed::of(history));
        replayed.accounts_for(entry, label)
    }

    /// Reads and checks registry.json against its schema. Duplicates and the history chain
    /// are checked by [`Registry::open`] and reported in full by [`Registry::audit`].
    pub fn load(path: &Path) -> Result<Registry> {
        confined(path)?;
        let bytes = document::read_limited(path, document::MAX_REGISTRY_BYTES)?;
        let sha256 = crate::digest::sha256_hex(&bytes);
        let text = document::utf8(bytes, path, Some(DocKind::Registry))?;
        Registry::from_text(path, text, sha256).map_err(conflict_markers)
    }

    /// Like [`Registry::load`], but a registry with duplicate entries or a broken history
    /// is an error: nothing resolves from a registry that cannot be trusted.
    pub fn open(path: &Path) -> Result<Registry> {
        let registry = Registry::load(path)?;
        registry.check_integrity()?;
        Ok(registry)
    }

    /// The first duplicate entry or history break, if any.
    pub fn check_integrity(&self) -> Result<()> {
        if let Some((a, _)) = self.duplicates().into_iter().next() {
            let e = &self.entries[a];
            return Err(Error::DuplicateEntry { id: e.id.clone(), version: e.version.to_string() });
        }
        if let Some(history) = &self.history {
            verify_history(history)?;
        }
        Ok(())
    }

    /// Builds the registry from the text of registry.json (`sha256` is the text's hash).
    ///
    /// The text is never parsed into one whole JSON value (for 20,000 entries and 40,000
    /// history events that value is several times the text): the top level is read with
    /// each list left unparsed, then every entry and event is parsed, checked against its
    /// part of `registry.schema.json` and converted on its own, so the transient memory is
    /// one item's.
    pub fn from_text(path: &Path, text: String, sha256: String) -> Result<Registry> {
        let (entries, history, labels, extra) = read_text(path, &text)?;
        let mut registry = Registry::empty(path);
        registry.text = text;
        registry.sha256 = sha256;
        registry.entries = entries;
        registry.history = history;
        registry.labels = labels;
        registry.extra = extra;
        registry.reindex();
        Ok(registry)
    }

    fn reindex(&mut self) {
        self.index.iter_mut().for_each(HashMap::clear);
        self.files = (0..self.entries.len()).map(|_| std::sync::OnceLock::new()).collect();
        self.positions.clear();
        self.counts = [0, 0];
        for e in &self.entries {
            let count = &mut self.counts[kind_slot(e.kind)];
            self.positions.push(*count);
            *count += 1;
        }
        for (i, e) in self.entries.iter().enumerate() {
            self.index[kind_slot(e.kind)].entry(e.id.clone()).or_default().push(i);
        }
        let entries = &self.entries;
        for list in self.index.iter_mut().flat_map(HashMap::values_mut) {
            list.sort_by(|&a, &b| entries[a].version.cmp(&entries[b].version));
        }
    }

    /// Every version of an id, lowest first.
    pub fn versions(&self, kind: EntryKind, id: &str) -> impl Iterator<Item = &Entry> {
        self.index[kind_slot(kind)].get(id).into_iter().flatten().map(|&i| &self.entries[i])
    }

    /// The entry for an exact id + version (the first registered, if there are duplicates),
    /// found by binary search: O(log n) in the versions of the id.
    pub fn get(&self, kind: EntryKind, id: &str, version: &Version) -> Option<&Entry> {
        self.same_version(kind, id, version).first().map(|&i| &self.entries[i])
    }

    /// Every entry with this kind, id and version (several only for duplicates), found by
    /// binary search.
    pub fn entries_at(
        &self,
        kind: EntryKind,
        id: &str,
        version: &Version,
    ) -> impl Iterator<Item = &Entry> {
        self.same_version(kind, id, version).iter().map(|&i| &self.entries[i])
    }

    /// Indexes of the entries with this kind, id and version (several only for
    /// duplicates), lowest index first.
    fn same_version(&self, kind: EntryKind, id: &str, version: &Version) -> &[usize] {
        let Some(list) = self.index[kind_slot(kind)].get(id) else { return &[] };
        let start = list.partition_point(|&i| &self.entries[i].version < version);
        let len = list[start..].partition_point(|&i| &self.entries[i].version == version);
        &list[start..start + len]
    }

    /// Every registered id of a kind (sorted).
    pub fn ids(&self, kind: EntryKind) -> Vec<&str> {
        let mut ids: Vec<&str> = self.index[kind_slot(kind)].keys().map(String::as_str).collect();
        ids.sort();
        ids
    }

    /// Index pairs of entries with the same kind, id and version.
    pub fn duplicates(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for list in self.index.iter().flat_map(HashMap::values) {
            for w in list.windows(2) {
                if self.entries[w[0]].version == self.entries[w[1]].version {
                    out.push((w[0], w[1]));
                }
            }
        }
        out.sort();
        out
    }

    /// The JSON pointer of the entry at `index` in [`Registry::entries`].
    pub fn pointer_at(&self, index: usize) -> String {
        let kind = self.entries.get(index).map_or(EntryKind::Contract, |e| e.kind);
        let position = self.positions.get(index).copied().unwrap_or(0);
        format!("/{}/{position}", raw_list_name(kind))
    }

    /// The JSON pointer of an entry inside registry.json (the first equal entry), found
    /// through the index.
    pub fn pointer_of(&self, entry: &Entry) -> String {
        self.pointer_at(self.index_of(entry).unwrap_or(0))
    }

    /// The position of an entry in [`Registry::entries`] (the first equal one).
    pub fn index_of(&self, entry: &Entry) -> Option<usize> {
        // Binary search by version: O(log n) in the versions of the id, so that asking for
        // every entry's file stays linear overall.
        self.same_version(entry.kind, &entry.id, &entry.version)
            .iter()
            .copied()
            .find(|&i| &self.entries[i] == entry)
    }

    /// The registry's folder with symlinks resolved.
    pub fn real_root(&self) -> &Path {
        self.real_root.get_or_init(|| crate::confine::real_or_given(&self.root))
    }

    /// The absolute path of an entry's file, checked to stay inside the root (no `..`, no
    /// absolute path, no symlink leading outside) and to exist.
    pub fn file_of(&self, entry: &Entry) -> Result<PathBuf> {
        let resolved = match self.index_of(entry).and_then(|i| self.files.get(i)) {
            Some(cell) => cell.get_or_init(|| resolve_under(self.real_root(), &entry.path)).clone(),
            None => resolve_under(self.real_root(), &entry.path),
        };
        resolved.map_err(|e| match e {
            PathProblem::Escape(reason) => Error::PathEscape { path: entry.path.clone(), reason },
            PathProblem::Missing => Error::RegistryFileMissing {
                id: entry.id.clone(),
                version: entry.version.to_string(),
                path: entry.path.clone(),
            },
        })
    }

    /// Records the files a walk found as regular files (real paths, reached through no
    /// symlink): an entry naming one of them needs no resolving of its own, which for a
    /// large registry saves a file system lookup per path component per entry. Returns,
    /// for each entry, whether its file is one of them.
    pub fn known_files<'p>(&self, walked: impl Iterator<Item = &'p Path>) -> Vec<bool> {
        let root = self.real_root();
        // Keyed by the path below the root as the walk wrote it: an entry that spells its
        // path another way (`./a`, `a//b`) is resolved the long way instead.
        let walked: std::collections::HashSet<&std::ffi::OsStr, foldhash::fast::RandomState> =
            walked.filter_map(|p| p.strip_prefix(root).ok()).map(Path::as_os_str).collect();
        let mut known = vec![false; self.entries.len()];
        if walked.is_empty() {
            return known;
        }
        for ((entry, cell), known) in self.entries.iter().zip(&self.files).zip(&mut known) {
            if walked.contains(std::ffi::OsStr::new(&entry.path))
                && check_relative(&entry.path).is_ok()
            {
                let _ = cell.set(Ok(root.join(&entry.path)));
                *known = true;
            }
        }
        known
    }

    /// The real path of the file of the entry at `index` in [`Registry::entries`], when it
    /// stays inside the root and exists ([`Registry::file_of`] says why not).
    pub fn path_at(&self, index: usize) -> Option<&Path> {
        let entry = self.entries.get(index)?;
        let cell = self.files.get(index)?;
        cell.get_or_init(|| resolve_under(self.real_root(), &entry.path)).as_deref().ok()
    }

    /// The files `entry`'s schemas referenced when it was promoted ([`Entry::refs`]) that
    /// changed since: each with its recorded path and the error (`contract_hash_mismatch`
    /// naming the file when its bytes differ or it is gone; `path_escape` or `io_error`
    /// when it cannot be read). Drafts and removed entries have nothing to check.
    pub fn changed_refs(&self, entry: &Entry) -> Vec<(String, Error)> {
        if matches!(entry.state, State::Draft | State::Removed) {
            return Vec::new();
        }
        self.changed_refs_whatever_state(entry)
    }

    /// [`Registry::changed_refs`] for an entry in any state: a removed version read as a
    /// compatibility baseline ([`baseline`]) must still be what was frozen.
    pub fn changed_refs_whatever_state(&self, entry: &Entry) -> Vec<(String, Error)> {
        let Some(refs) = &entry.refs else { return Vec::new() };
        let mut out = Vec::new();
        for (rel, expected) in refs {
            let changed = |actual: Option<String>| Error::ReferenceChanged {
                path: PathBuf::from(rel),
                id: entry.id.clone(),
                version: entry.version.to_string(),
                expected: expected.clone(),
                actual,
            };
            let actual = match resolve_reference(self.real_root(), rel) {
                Ok(path) => match document::read_limited(&path, document::MAX_FILE_BYTES) {
                    Ok(bytes) => crate::digest::sha256_hex(&bytes),
                    Err(e) => {
                        out.push((rel.clone(), e));
                        continue;
                    }
                },
                Err(PathProblem::Missing) => {
                    out.push((rel.clone(), changed(None)));
                    continue;
                }
                Err(PathProblem::Escape(reason)) => {
                    out.push((rel.clone(), Error::PathEscape { path: rel.clone(), reason }));
                    continue;
                }
            };
            if &actual != expected {
                out.push((rel.clone(), changed(Some(actual))));
            }
        }
        out
    }

    /// Every problem with the registry itself: duplicates, history breaks, entry paths
    /// that escape the root or point nowhere, deprecated entries without a valid successor.
    /// Diagnostics carry pointers into registry.json; the caller adds file and position.
    pub fn audit(&self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for (a, b) in self.duplicates() {
            let e = &self.entries[b];
            out.push(
                Diagnostic::new(
                    Code::RegistryDuplicateEntry,
                    format!("{} is registered twice (also at {})", e.key(), self.pointer_at(a)),
                )
                .pointer(self.pointer_at(b))
                .help("remove one of the two entries"),
            );
        }
        let chain = self.history.as_deref().map_or(Ok(()), verify_history);
        if let (Some(history), Err(e)) = (&self.history, &chain) {
            let seq = match e {
                Error::HistoryBroken { seq, .. } => *seq,
                _ => 0,
            };
            let index = history.iter().position(|ev| ev.seq == seq).unwrap_or(0);
            out.push(
                Diagnostic::from_error(e)
                    .pointer(format!("/history/{index}"))
                    .help("restore registry.json from version control; history is append-only"),
            );
        }
        for (index, entry) in self.entries.iter().enumerate() {
            let pointer = self.pointer_at(index);
            // A removed version's file may be deleted; nothing resolves to it any more.
            let file = if entry.state == State::Removed {
                Ok(PathBuf::new())
            } else {
                self.file_of(entry)
            };
            match file {
                Ok(_) => {}
                Err(e @ Error::PathEscape { .. }) => out.push(
                    Diagnostic::from_error(&e)
                        .pointer(format!("{pointer}/path"))
                        .help("use a path relative to registry.json that stays inside its folder"),
                ),
                Err(e) => out.push(
                    Diagnostic::from_error(&e)
                        .pointer(format!("{pointer}/path"))
                        .help("restore the file, or fix the entry's path"),
                ),
            }
            if entry.state == State::Deprecated
                && let Some(d) = self.successor_problem(entry)
            {
                out.push(d.pointer(format!("{pointer}/successor_version")));
            }
        }
        // Only a history that chains can be replayed against the entries.
        if chain.is_ok() {
            out.extend(replay::check(self));
        }
        out
    }

    fn successor_problem(&self, entry: &Entry) -> Option<Diagnostic> {
        let reason = match &entry.successor_version {
            None => "is not named: successor_version is missing".to_string(),
            Some(s) if s <= &entry.version => format!("is not higher than {}", entry.version),
            Some(s) => match self.get(entry.kind, &entry.id, s) {
                None => "is not registered".to_string(),
                Some(e) if e.state == State::Removed => "is removed".to_string(),
                Some(_) => return None,
            },
        };
        let successor = entry
            .successor_version
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_else(|| "(none)".into());
        let e = Error::SuccessorMissing {
            id: entry.id.clone(),
            version: entry.version.to_string(),
            successor: successor.clone(),
            reason,
            deprecated: true,
        };
        Some(Diagnostic::from_error(&e).help(format!(
            "set successor_version to a registered, higher version of {} (e.g. with `pactum registry deprecate {} --successor VERSION`)",
            entry.id,
            entry.key()
        )))
    }

    /// The registry as pretty JSON, fields in their documented order.
    pub fn to_json(&self) -> String {
        let mut contracts = Vec::new();
        let mut packs = Vec::new();
        for e in &self.entries {
            let raw = RawEntry::from_entry(e);
            match e.kind {
                EntryKind::Contract => contracts.push(raw),
                EntryKind::PromptPack => packs.push(raw),
            }
        }
        let schema = self.extra.get("$schema");
        let mut extra = self.extra.clone();
        extra.remove("$schema");
        let raw = RawRegistryOut {
            schema,
            registry_version: 1,
            contracts,
            prompt_packs: packs,
            labels: self
                .labels
                .iter()
                .filter(|(_, names)| !names.is_empty())
                .map(|(id, names)| {
                    (id.as_str(), names.iter().map(|(n, t)| (n.as_str(), t.to_json())).collect())
                })
                .collect(),
            history: self.history.as_deref().unwrap_or(&[]),
            extra,
        };
        let mut text = serde_json::to_string_pretty(&raw).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Mutable access for the lifecycle commands; re-indexes afterwards.
    /// Lifecycle changes may append entries and change states, never ids or versions of
    /// existing entries; so only appended entries are indexed (no full re-index per change).
    pub(crate) fn edit<T>(&mut self, f: impl FnOnce(&mut Vec<Entry>, &mut Vec<Event>) -> T) -> T {
        let before = self.entries.len();
        // The history changes: its fold is made again when next asked for.
        self.replayed = std::sync::OnceLock::new();
        let mut history = self.history.take().unwrap_or_default();
        let out = f(&mut self.entries, &mut history);
        self.history = Some(history);
        for i in before..self.entries.len() {
            let (kind, id, version) =
                (self.entries[i].kind, self.entries[i].id.clone(), self.entries[i].version.clone());
            let count = &mut self.counts[kind_slot(kind)];
            self.positions.push(*count);
            *count += 1;
            self.files.push(std::sync::OnceLock::new());
            let entries = &self.entries;
            let list = self.index[kind_slot(kind)].entry(id).or_default();
            let at = list.partition_point(|&j| entries[j].version <= version);
            list.insert(at, i);
        }
        out
    }
}

impl Registry {
    /// Drops one entry and records its event; re-indexes (a rare, whole-registry change).
    pub(crate) fn drop_entry(&mut self, entry: &Entry, record: impl FnOnce(&mut Vec<Event>)) {
        if let Some(i) = self.index_of(entry) {
            self.entries.remove(i);
        }
        let mut history = self.history.take().unwrap_or_default();
        record(&mut history);
        self.history = Some(history);
        self.reindex();
    }
}

/// A registry.json that does not parse because a merge left git's conflict markers in it
/// says so, at the first marker, with the way out.
fn conflict_markers(e: Error) -> Error {
    let Error::Parse { path, doc, .. } = &e else { return e };
    let Some(text) = crate::document::read_limited(path, crate::document::MAX_REGISTRY_BYTES)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
    else {
        return e;
    };
    let Some(line) = text.lines().position(|l| l.starts_with("<<<<<<< ")) else { return e };
    Error::Parse {
        path: path.clone(),
        line: line + 1,
        column: 1,
        message: "registry.json has unresolved git conflict markers: keep one side \
                  (`git checkout --ours registry.json` or `--theirs`), redo the other side's \
                  change with `pactum` commands, and register the merge driver with `pactum init` \
                  so registry.json merges by itself next time"
            .into(),
        doc: *doc,
    }
}

fn kind_slot(kind: EntryKind) -> usize {
    match kind {
        EntryKind::Contract => 0,
        EntryKind::PromptPack => 1,
    }
}

fn raw_list_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Contract => "contracts",
        EntryKind::PromptPack => "prompt_packs",
    }
}

/// Why a relative path cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathProblem {
    Escape(String),
    Missing,
}

/// The checks of an entry's path (and of a referenced file's): not empty, not absolute,
/// no `..` ([`crate::confine::check_relative`]), and no hidden component anywhere
/// ([`crate::confine::check_visible`]): a governed file never lives in `.git/`, `.pactum/`
/// or any dot-folder, and is never a dot-file — so `registry add` cannot register one and
/// `registry discard --delete` cannot delete one.
pub fn check_relative(path: &str) -> std::result::Result<(), String> {
    crate::confine::check_relative(path)?;
    crate::confine::check_visible(path)
}

/// Joins a relative path to `root`, requiring that the real (symlink-resolved) path exists
/// and stays inside the real root.
pub fn resolve_inside(root: &Path, path: &str) -> std::result::Result<PathBuf, PathProblem> {
    let real_root = crate::confine::real_or_given(root);
    resolve_under(&real_root, path)
}

/// [`resolve_inside`] for a root whose symlinks are already resolved, through the one
/// confinement rule ([`crate::confine::Root::locate`]).
fn resolve_under(real_root: &Path, path: &str) -> std::result::Result<PathBuf, PathProblem> {
    check_relative(path).map_err(PathProblem::Escape)?;
    locate_under(real_root, path)
}

/// A file a contract's schemas referenced at promote ([`Entry::refs`]), resolved as
/// [`resolve_under`] but without the entry-path rule on hidden components: the schema
/// graph reads references through [`crate::confine::Root::file`], and `refs` records what
/// it read.
fn resolve_reference(real_root: &Path, path: &str) -> std::result::Result<PathBuf, PathProblem> {
    crate::confine::check_relative(path).map_err(PathProblem::Escape)?;
    locate_under(real_root, path)
}

fn locate_under(real_root: &Path, path: &str) -> std::result::Result<PathBuf, PathProblem> {
    use crate::confine::{Refusal, Root};
    match Root::canonical(real_root).locate(Path::new(path)) {
        Ok(real) => Ok(real),
        Err(Refusal::Escape(reason)) => Err(PathProblem::Escape(reason)),
        // A folder, FIFO or device is refused when it is opened (`io_error`).
        // The path's own parts (no `.`, no empty ones): the same real path as `locate`'s.
        Err(Refusal::Special(_)) => {
            Ok(real_root.join(Path::new(path).components().collect::<PathBuf>()))
        }
        Err(Refusal::Missing | Refusal::Io(_)) => Err(PathProblem::Missing),
    }
}

/// Refuses a registry.json (or its lock) that is a symlink leading out of its folder, or
/// not a regular file (SPEC §18).
pub fn confined(path: &Path) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(Path::new).unwrap_or(path);
    crate::confine::Root::new(dir).file(name).map(|_| ()).map_err(|r| r.into_error(path))
}

/// Walks up from `start` (a file or folder) to the nearest folder holding registry.json.
pub fn find_upwards(start: &Path) -> Option<PathBuf> {
    // Absolute even when `start` does not exist (a mistyped folder): walking up a relative
    // path would end at `registry.json` with an empty parent, a project root of "".
    let start = crate::confine::real_or_given(start);
    let start = if start.is_relative() { std::path::absolute(&start).ok()? } else { start };
    let mut dir =
        if crate::confine::is_file(&start) { start.parent()?.to_path_buf() } else { start };
    loop {
        let candidate = dir.join(FILE_NAME);
        // Anything named registry.json counts (a FIFO or a link is then refused by name
        // when it is loaded, rather than silently skipped for one further up).
        if crate::confine::entry_at(&candidate).is_some() {
            return Some(candidate);
        }
        dir = dir.parent()?.to_path_buf();
    }
}

/// The top-level keys the loader reads; `registry_version` is checked by the schema and
/// everything else is kept as it is.
pub(crate) const READ_KEYS: [&str; 3] = ["contracts", "prompt_packs", "history"];
const KNOWN_KEYS: &[&str] = &["registry_version", "contracts", "prompt_packs", "labels", "history"];

/// Labels: id → label → where it points (SPEC §20, §26).
pub type Labels = BTreeMap<String, BTreeMap<String, label::Targets>>;

/// Whether `name` may be a label: lowercase letters, digits and `-`, starting with a
/// letter, at most 64 characters — never a version or a range.
pub fn is_label(name: &str) -> bool {
    name.len() <= 64
        && name.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// What registry.json holds: its entries, history and unknown top-level keys. The top
/// level is checked against the schema with its lists emptied, then each item against its
/// own part of the schema (findings keep their full pointers), and only then converted.
type Parts = (Vec<Entry>, Option<Vec<Event>>, Labels, serde_json::Map<String, Value>);

fn read_text(path: &Path, text: &str) -> Result<Parts> {
    let invalid = |findings: Vec<Finding>| Error::SchemaInvalid {
        doc: DocKind::Registry,
        path: path.to_path_buf(),
        findings,
    };
    let top: std::collections::BTreeMap<String, &serde_json::value::RawValue> =
        match document::parse_json(text, path, Some(DocKind::Registry)) {
            Ok(top) => top,
            Err(Error::Parse { .. }) => {
                // Valid JSON that is not an object, or not JSON at all: the whole value (if
                // any) says which.
                let value =
                    document::parse(text, document::Syntax::Json, path, Some(DocKind::Registry))?;
                return Err(invalid(schema::check_document(DocKind::Registry, &value)));
            }
            Err(e) => return Err(e),
        };
    let mut shallow = serde_json::Map::new();
    let mut lists: [Option<Vec<&serde_json::value::RawValue>>; 3] = [None, None, None];
    for (key, raw) in &top {
        let list = READ_KEYS.iter().position(|k| k == key);
        let items = list.and_then(|_| {
            serde_json::from_str::<Vec<&serde_json::value::RawValue>>(raw.get()).ok()
        });
        let value = match (&items, list) {
            (Some(_), Some(_)) => Value::Array(Vec::new()),
            _ => parse_item(raw, &format!("/{key}"), path)?,
        };
        if let (Some(items), Some(i)) = (items, list) {
            lists[i] = Some(items);
        }
        shallow.insert(key.clone(), value);
    }
    let shallow = Value::Object(shallow);
    let mut findings = schema::check_document(DocKind::Registry, &shallow);
    let [contracts, packs, events] = lists;
    let mut entries = Vec::with_capacity(
        contracts.as_ref().map_or(0, Vec::len) + packs.as_ref().map_or(0, Vec::len),
    );
    for (kind, list) in [(EntryKind::Contract, contracts), (EntryKind::PromptPack, packs)] {
        let name = raw_list_name(kind);
        for (i, raw) in list.unwrap_or_default().into_iter().enumerate() {
            let pointer = format!("/{name}/{i}");
            if let Some(entry) = strict::entry(raw.get(), kind) {
                entries.push(entry.into_entry(kind, &pointer, path)?);
                continue;
            }
            let value = parse_item(raw, &pointer, path)?;
            let part = match kind {
                EntryKind::Contract => schema::RegistryPart::ContractEntry,
                EntryKind::PromptPack => schema::RegistryPart::PackEntry,
            };
            let item_findings = schema::check_registry_part(part, &value, &pointer);
            if !item_findings.is_empty() || !findings.is_empty() {
                findings.extend(item_findings);
                continue;
            }
            let entry = RawEntry::deserialize(value)
                .map_err(|e| invalid(vec![Finding::new(pointer.clone(), e.to_string())]))?;
            entries.push(entry.into_entry(kind, &pointer, path)?);
        }
    }
    let history = match events {
        None => None,
        Some(list) => {
            let mut history = Vec::with_capacity(list.len());
            for (i, raw) in list.into_iter().enumerate() {
                if let Some(event) = strict::event(raw.get()) {
                    history.push(event);
                    continue;
                }
                let pointer = format!("/history/{i}");
                let value = parse_item(raw, &pointer, path)?;
                let item_findings =
                    schema::check_registry_part(schema::RegistryPart::Event, &value, &pointer);
                if !item_findings.is_empty() || !findings.is_empty() {
                    findings.extend(item_findings);
                    continue;
                }
                history.push(
                    Event::deserialize(value)
                        .map_err(|e| invalid(vec![Finding::new(pointer, e.to_string())]))?,
                );
            }
            Some(history)
        }
    };
    if !findings.is_empty() {
        return Err(invalid(findings));
    }
    let Value::Object(top) = shallow else {
        return Ok((entries, history, Labels::new(), Default::default()));
    };
    // The schema checked the labels' shape: ids, label names, versions.
    let mut labels = Labels::new();
    if let Some(Value::Object(ids)) = top.get("labels") {
        for (id, names) in ids {
            let Value::Object(names) = names else { continue };
            for (name, targets) in names {
                if let Some(t) = label::Targets::from_json(targets) {
                    labels.entry(id.clone()).or_default().insert(name.clone(), t);
                }
            }
        }
    }
    let extra = top.into_iter().filter(|(k, _)| !KNOWN_KEYS.contains(&k.as_str())).collect();
    Ok((entries, history, labels, extra))
}

/// One item of registry.json (at `pointer`) as a JSON value. Its text already passed the
/// parser once; what can still fail is a value JSON allows and `serde_json` does not hold
/// (a number out of range).
fn parse_item(raw: &serde_json::value::RawValue, pointer: &str, path: &Path) -> Result<Value> {
    serde_json::from_str(raw.get()).map_err(|e| Error::SchemaInvalid {
        doc: DocKind::Registry,
        path: path.to_path_buf(),
        findings: vec![Finding::new(pointer, document::json_message(&e))],
    })
}

#[derive(Serialize)]
struct RawRegistryOut<'a> {
    #[serde(rename = "$schema", skip_serializing_if = "Option::is_none")]
    schema: Option<&'a Value>,
    registry_version: u32,
    contracts: Vec<RawEntry>,
    prompt_packs: Vec<RawEntry>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<&'a str, BTreeMap<&'a str, Value>>,
    history: &'a [Event],
    #[serde(flatten)]
    extra: serde_json::Map<String, Value>,
}

/// One entry as written. Unknown keys and `null`s are refused when it is read: the schema
/// refuses them too, and the fast path ([`strict::entry`]) reads entries straight into
/// this type.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEntry {
    #[serde(
        default,
        deserialize_with = "strict::present",
        skip_serializing_if = "Option::is_none"
    )]
    contract_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "strict::present",
        skip_serializing_if = "Option::is_none"
    )]
    prompt_pack_id: Option<String>,
    version: String,
    path: String,
    sha256: String,
    state: State,
    registered_at: String,
    #[serde(
        default,
        deserialize_with = "strict::present",
        skip_serializing_if = "Option::is_none"
    )]
    activated_at: Option<String>,
    #[serde(
        default,
        deserialize_with = "strict::present",
        skip_serializing_if = "Option::is_none"
    )]
    deprecated_at: Option<String>,
    #[serde(
        default,
        deserialize_with = "strict::present",
        skip_serializing_if = "Option::is_none"
    )]
    successor_version: Option<String>,
    #[serde(
        default,
        deserialize_with = "strict::present",
        skip_serializing_if = "Option::is_none"
    )]
    removed_at: Option<String>,
    #[serde(
        default,
        deserialize_with = "strict::present",
        skip_serializing_if = "Option::is_none"
    )]
    refs: Option<BTreeMap<String, String>>,
}

impl RawEntry {
    fn into_entry(self, kind: EntryKind, pointer: &str, path: &Path) -> Result<Entry> {
        let invalid = |field: &str, message: String| Error::SchemaInvalid {
            doc: DocKind::Registry,
            path: path.to_path_buf(),
            findings: vec![Finding::new(format!("{pointer}/{field}"), message)],
        };
        let id = match kind {
            EntryKind::Contract => self.contract_id,
            EntryKind::PromptPack => self.prompt_pack_id,
        }
        .ok_or_else(|| invalid("", "entry has no id".into()))?;
        let version = parse_version(&self.version)
            .ok_or_else(|| invalid("version", "not a version".into()))?;
        let successor_version = match self.successor_version {
            None => None,
            Some(s) => Some(
                parse_version(&s)
                    .ok_or_else(|| invalid("successor_version", "not a version".into()))?,
            ),
        };
        Ok(Entry {
            kind,
            id,
            version,
            path: self.path,
            sha256: self.sha256,
            state: self.state,
            registered_at: self.registered_at,
            activated_at: self.activated_at,
            deprecated_at: self.deprecated_at,
            successor_version,
            removed_at: self.removed_at,
            refs: self.refs,
        })
    }

    fn from_entry(e: &Entry) -> RawEntry {
        let (contract_id, prompt_pack_id) = match e.kind {
            EntryKind::Contract => (Some(e.id.clone()), None),
            EntryKind::PromptPack => (None, Some(e.id.clone())),
        };
        RawEntry {
            contract_id,
            prompt_pack_id,
            version: e.version.to_string(),
            path: e.path.clone(),
            sha256: e.sha256.clone(),
            state: e.state,
            registered_at: e.registered_at.clone(),
            activated_at: e.activated_at.clone(),
            deprecated_at: e.deprecated_at.clone(),
            successor_version: e.successor_version.as_ref().map(ToString::to_string),
            removed_at: e.removed_at.clone(),
            refs: e.refs.clone(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::digest::chain_hash;
    use serde_json::json;

    const SHA: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn entry(id: &str, version: &str, state: &str) -> Value {
        json!({"contract_id": id, "version": version, "path": format!("contracts/{version}.json"),
               "sha256": SHA, "state": state, "registered_at": "2026-01-01T00:00:00Z"})
    }

    fn registry(value: Value) -> Result<Registry> {
        Registry::from_text(Path::new("/nowhere/registry.json"), value.to_string(), String::new())
    }

    fn event(seq: u64, prev: &str) -> Event {
        let mut e = Event {
            seq,
            at: "2026-01-01T00:00:00Z".into(),
            action: Action::Add,
            id: "PRC-A-001".into(),
            version: "1.0.0".into(),
            sha256: SHA.into(),
            prev: prev.into(),
            hash: String::new(),
            ..Event::default()
        };
        e.hash = e.compute_hash();
        e
    }

    /// Issue 40: loading registry.json, replaying its history against the entries and
    /// resolving a pin stay linear in the versions (measured to 50,000 in BENCHMARKS.md,
    /// counted here): the work for 4N versions is about four times that for N.
    #[test]
    fn loading_replaying_and_resolving_stay_linear_in_the_versions() {
        let text = |n: usize| -> String {
            let mut entries = Vec::new();
            let mut history = Vec::new();
            for i in 0..n {
                let version = format!("1.{i}.0");
                entries.push(entry("PRC-A-001", &version, "draft"));
                let e = Event {
                    at: "2026-01-01T00:00:00Z".into(),
                    action: Action::Add,
                    actor: Some("a@example.com".into()),
                    id: "PRC-A-001".into(),
                    version,
                    path: Some(format!("contracts/1.{i}.0.json")),
                    sha256: SHA.into(),
                    ..Event::default()
                };
                lifecycle::chain(&mut history, e);
            }
            let history: Vec<Value> =
                history.iter().map(|e| serde_json::to_value(e).unwrap()).collect();
            json!({"registry_version": 1, "prompt_packs": [], "contracts": entries, "history": history})
                .to_string()
        };
        let texts: std::collections::HashMap<usize, String> =
            [500, 2000].into_iter().map(|n| (n, text(n))).collect();
        crate::work::assert_linear("load, replay and resolve of N versions", 500, |n| {
            let text = texts[&n].clone();
            let (found, work) = crate::work::counted(|| {
                let r =
                    Registry::from_text(Path::new("/nowhere/registry.json"), text, String::new())
                        .unwrap();
                let problems = replay::check(&r);
                let pin = crate::id::Requirement::parse("^1").unwrap();
                let opts = crate::resolve::ResolveOptions { allow_draft: true, route: None };
                let resolved =
                    crate::resolve::resolve(&r, EntryKind::Contract, "PRC-A-001", &pin, opts)
                        .map(|x| x.entry.version.to_string())
                        .ok();
                (problems.len(), resolved)
            });
            assert_eq!(found, (0, Some(format!("1.{}.0", n - 1))));
            work
        });
    }

    #[test]
    fn index_sorts_versions_and_finds_duplicates() {
        let r = registry(json!({"registry_version": 1, "prompt_packs": [], "contracts": [
            entry("PRC-A-001", "1.10.0", "active"), entry("PRC-A-001", "1.2.0", "active"),
            entry("PRC-A-001", "1.2.0", "draft"), entry("PRC-B-001", "1.0.0", "active")]}))
        .unwrap();
        let versions: Vec<String> =
            r.versions(EntryKind::Contract, "PRC-A-001").map(|e| e.version.to_string()).collect();
        assert_eq!(versions, ["1.2.0", "1.2.0", "1.10.0"]);
        assert_eq!(r.duplicates().len(), 1);
        assert_eq!(r.check_integrity().unwrap_err().code(), Code::RegistryDuplicateEntry);
        assert_eq!(r.ids(EntryKind::Contract), ["PRC-A-001", "PRC-B-001"]);
    }

    #[test]
    fn schema_errors_are_registry_invalid() {
        let e = registry(json!({"registry_version": 2, "contracts": [], "prompt_packs": []}))
            .unwrap_err();
        assert_eq!(e.code(), Code::RegistryInvalid);
        let e = registry(json!({"registry_version": 1, "contracts": [{"contract_id": "PRC-A-001"}], "prompt_packs": []}))
            .unwrap_err();
        assert_eq!(e.code(), Code::RegistryInvalid);
    }

    /// A number JSON allows but a JSON value cannot hold is a finding at its item.
    #[test]
    fn an_out_of_range_number_is_a_finding_at_its_item() {
        let text =
            r#"{"registry_version": 1, "contracts": [], "prompt_packs": [], "x-big": 1e999}"#;
        let e =
            Registry::from_text(Path::new("/nowhere/registry.json"), text.into(), String::new())
                .unwrap_err();
        assert_eq!(e.code(), Code::RegistryInvalid);
        assert_eq!(e.findings()[0].pointer, "/x-big", "{e}");
    }

    /// The loader checks the top level and each item apart; it must find exactly what one
    /// check of the whole document finds, at the same pointers.
    #[test]
    fn item_by_item_checks_find_what_the_whole_document_check_finds() {
        let good = entry("PRC-A-001", "1.0.0", "active");
        let mut event = serde_json::to_value(event(1, ZERO_HASH)).unwrap();
        event["seq"] = json!(0);
        event["extra"] = json!(true);
        let docs = [
            json!({"registry_version": 2, "contracts": [good.clone()], "prompt_packs": [], "x-note": 1}),
            json!({"registry_version": 1, "contracts": [{"contract_id": "PRC-A-001"}, good.clone(),
                   {"prompt_pack_id": "PRM-A-001", "version": "1", "path": "", "sha256": "x",
                    "state": "gone", "registered_at": "yesterday"}], "prompt_packs": [good.clone()]}),
            json!({"registry_version": 1, "contracts": {}, "prompt_packs": "none", "history": [event, 3]}),
            json!({"contracts": [], "surprise": [1, 2]}),
            json!([1, 2, 3]),
            json!("registry"),
        ];
        for doc in docs {
            let mut whole: Vec<(String, String)> = schema::check_document(DocKind::Registry, &doc)
                .into_iter()
                .map(|f| (f.pointer, f.message))
                .collect();
            assert!(!whole.is_empty(), "{doc}");
            let e = registry(doc.clone()).unwrap_err();
            assert_eq!(e.code(), Code::RegistryInvalid, "{doc}");
            let mut parts: Vec<(String, String)> =
                e.findings().iter().map(|f| (f.pointer.clone(), f.message.clone())).collect();
            whole.sort();
            parts.sort();
            assert_eq!(parts, whole, "{doc}");
        }
    }

    #[test]
    fn history_chain_detects_edits_removals_and_reordering() {
        let e1 = event(1, ZERO_HASH);
        let e2 = event(2, &e1.hash);
        let e3 = event(3, &e2.hash);
        assert!(verify_history(&[e1.clone(), e2.clone(), e3.clone()]).is_ok());
        let mut edited = e2.clone();
        edited.version = "9.9.9".into();
        let err = verify_history(&[e1.clone(), edited, e3.clone()]).unwrap_err();
        assert_eq!(err.code(), Code::RegistryHistoryBroken);
        assert!(err.to_string().contains("edited"), "{err}");
        let broken = |history: &[Event]| {
            let e = verify_history(history).unwrap_err();
            assert_eq!(e.code(), Code::RegistryHistoryBroken, "{e}");
            e.to_string()
        };
        assert!(broken(&[e1.clone(), e3.clone()]).contains("at event 3: expected seq 2"));
        assert!(broken(&[e2.clone(), e1.clone()]).contains("at event 2: expected seq 1"));
        let mut renumbered = e3.clone();
        renumbered.seq = 2;
        assert!(
            broken(&[e1, renumbered])
                .contains("at event 2: `prev` is not the previous event's hash")
        );
    }

    #[test]
    fn relative_paths_must_stay_inside() {
        assert!(check_relative("contracts/a/1.0.0.json").is_ok());
        let (absolute, dots) = (
            "absolute paths are not allowed; use a path relative to registry.json",
            "`..` is not allowed: the path would leave the project root",
        );
        for (bad, why) in [
            ("", "path is empty"),
            ("/etc/passwd", absolute),
            ("../x.json", dots),
            ("contracts/../../x", dots),
            ("C:\\x", absolute),
            ("a\\..\\..\\b", dots),
        ] {
            assert_eq!(check_relative(bad), Err(why.to_string()), "{bad}");
        }
        // A hidden component anywhere, not only the last one.
        for hidden in [".env", ".git/hooks/x.json", "contracts/.secret/a.json", "./.pactum/a.json"]
        {
            let refused = check_relative(hidden).expect_err(hidden);
            assert!(refused.contains("hidden"), "{hidden}: {refused}");
        }
        assert!(check_relative("./contracts/a.b/1.0.0.json").is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_leaving_the_root_are_escapes() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(outer.path().join("secret.json"), "{}").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret.json"), root.join("link.json"))
            .unwrap();
        std::fs::write(root.join("ok.json"), "{}").unwrap();
        assert!(resolve_inside(&root, "ok.json").is_ok());
        assert!(matches!(resolve_inside(&root, "link.json"), Err(PathProblem::Escape(_))));
        assert_eq!(resolve_inside(&root, "missing.json"), Err(PathProblem::Missing));
    }

    #[test]
    fn event_hash_is_the_canonical_json_hash() {
        let e = event(1, ZERO_HASH);
        let mut value = serde_json::to_value(&e).unwrap();
        value.as_object_mut().unwrap().remove("hash");
        assert_eq!(e.compute_hash(), chain_hash(&value));
        // With the referenced files a promote records (keys needing escapes included).
        let mut promote = event(2, &e.hash);
        promote.action = Action::Promote;
        promote.refs = Some(BTreeMap::from([
            ("common/b.json".to_string(), SHA.to_string()),
            ("common/a \"x\".json".to_string(), SHA.to_string()),
        ]));
        let mut value = serde_json::to_value(&promote).unwrap();
        value.as_object_mut().unwrap().remove("hash");
        assert_eq!(promote.compute_hash(), chain_hash(&value));
        assert_ne!(promote.compute_hash(), Event { refs: None, ..promote.clone() }.compute_hash());
        // The eval gate's evidence is hashed too: a pass rate edited afterwards breaks the chain.
        let evidenced = Event {
            eval: Some(serde_json::json!({"suites": [{"pass_rate": 1.0}]})),
            ..promote.clone()
        };
        let edited = Event {
            eval: Some(serde_json::json!({"suites": [{"pass_rate": 0.5}]})),
            ..promote.clone()
        };
        assert_ne!(evidenced.compute_hash(), promote.compute_hash());
        assert_ne!(evidenced.compute_hash(), edited.compute_hash());
        let mut value = serde_json::to_value(&evidenced).unwrap();
        value.as_object_mut().unwrap().remove("hash");
        assert_eq!(evidenced.compute_hash(), chain_hash(&value));
    }

    #[test]
    fn round_trips_through_to_json() {
        let r = registry(json!({"registry_version": 1, "contracts": [entry("PRC-A-001", "1.0.0", "active")],
                                "prompt_packs": [], "history": [serde_json::to_value(event(1, ZERO_HASH)).unwrap()]}))
        .unwrap();
        let text = r.to_json();
        let again = registry(serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(again.entries, r.entries);
        assert_eq!(again.history, r.history);
        assert!(text.find("registry_version").unwrap() < text.find("contracts").unwrap());
    }
}
