//! Verification is a replay (SPEC §17): the history is folded into the state it implies
//! for every id@version (registered, path, hash frozen at promote, state, successor, and
//! the times of its transitions), and that state is compared with the entries (the files a
//! contract's schemas reference, frozen at promote, included) by one function,
//! [`differences`]. A hand edit of registry.json (a new hash for an active file, a state
//! flipped to `active`, a `deprecated_at` moved to stretch a migration period, an entry
//! added or deleted) passes the hash chain, because it does not touch the history, but
//! not the replay: `registry_history_mismatch`, naming the entry, the field and the event.
//!
//! The fold is tolerant of what the merge driver produces: two branches that made the same
//! change (both promoted one draft, say) leave both events in the merged history, so an
//! event that moves an entry to a state it already reached is a no-op when its content
//! agrees. A registry with entries but no history cannot be checked at all:
//! `registry_history_missing` (a warning; `pactum registry adopt` records the entries).

use std::collections::BTreeMap;

use semver::Version;

use crate::diagnostic::Diagnostic;
use crate::error::{Code, Error};
use crate::id::parse_version;
use crate::registry::{Action, Entry, EntryKind, Event, Registry, State};

/// The identity of a registry entry: kind, id, version.
pub type Key = (EntryKind, String, Version);

/// What the history says about one id@version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Implied {
    /// `None` when no event recorded it (histories written before §17).
    pub path: Option<String>,
    /// The hash registered (draft) or frozen at promote.
    pub sha256: String,
    pub state: State,
    /// `None` when unknown (a deprecate event written before §17); `Some(None)` when the
    /// entry has no successor.
    pub successor: Option<Option<String>>,
    /// The files its schemas referenced, frozen at promote (or recorded by adopt).
    pub refs: Option<BTreeMap<String, String>>,
    /// The times of the events that made its transitions.
    pub times: Times,
    /// Sequence number and index in `history` of the last event about it.
    pub seq: u64,
    pub index: usize,
    pub action: Action,
}

/// When the history says an entry was registered, promoted, deprecated and removed: for
/// each, the `at` of every event that made that transition (more than one when both sides
/// of a merge made it; the merged entry keeps one side's time), or `None` when the history
/// cannot know (an entry adopted before `adopt` events recorded its times). An entry's
/// timestamp must be one of them, or absent when there is none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Times {
    pub registered: Option<Vec<String>>,
    pub activated: Option<Vec<String>>,
    pub deprecated: Option<Vec<String>>,
    pub removed: Option<Vec<String>>,
}

impl Times {
    /// A version the history registers itself: its registration time is the event's, and
    /// it has no other transition yet.
    fn registered(at: &str) -> Times {
        Times {
            registered: Some(vec![at.to_string()]),
            activated: Some(Vec::new()),
            deprecated: Some(Vec::new()),
            removed: Some(Vec::new()),
        }
    }

    /// An entry adopted with these times.
    fn adopted(times: &crate::registry::EventTimes) -> Times {
        let known = |at: &Option<String>| Some(at.iter().cloned().collect());
        Times {
            registered: Some(vec![times.registered_at.clone()]),
            activated: known(&times.activated_at),
            deprecated: known(&times.deprecated_at),
            removed: known(&times.removed_at),
        }
    }

    /// The times of the transition `action` makes.
    fn of(&mut self, action: Action) -> Option<&mut Option<Vec<String>>> {
        match action {
            Action::Promote => Some(&mut self.activated),
            Action::Deprecate => Some(&mut self.deprecated),
            Action::Remove => Some(&mut self.removed),
            _ => None,
        }
    }

    /// `action` moved the entry at `at`: this is now the time of that transition.
    fn transition(&mut self, action: Action, at: &str) {
        if let Some(times) = self.of(action) {
            *times = Some(vec![at.to_string()]);
        }
    }

    /// `action` was made again (the other side of a merge made it too): its time is one
    /// the entry may keep. A transition whose time the history does not know stays unknown.
    fn again(&mut self, action: Action, at: &str) {
        if let Some(Some(times)) = self.of(action)
            && !times.iter().any(|t| t == at)
        {
            times.push(at.to_string());
        }
    }
}

/// Every field in which `entry` differs from what the history says about it (`said`), with
/// the reason: registry.json's field name, then the message. The one comparison behind
/// `registry verify`, `validate` and the runtime ([`Replayed::accounts_for`]).
pub fn differences(entry: &Entry, said: &Implied) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let event = format!("event #{} ({})", said.seq, said.action.as_str());
    if entry.state != said.state {
        out.push((
            "state",
            format!(
                "the entry says {}, but the history leaves it {} ({event})",
                entry.state.as_str(),
                said.state.as_str()
            ),
        ));
    }
    if entry.sha256 != said.sha256 {
        let how = if said.state == State::Draft { "registered" } else { "frozen at promote" };
        out.push((
            "sha256",
            format!(
                "the entry's sha256 is {}, but the hash {how} is {} ({event})",
                short(&entry.sha256),
                short(&said.sha256)
            ),
        ));
    }
    if entry.refs != said.refs {
        out.push((
            "refs",
            format!(
                "the entry's referenced files are {}, but the history froze {} ({event})",
                show_refs(entry.refs.as_ref()),
                show_refs(said.refs.as_ref())
            ),
        ));
    }
    if let Some(path) = &said.path
        && path != &entry.path
    {
        out.push((
            "path",
            format!(
                "the entry's path is {}, but the history registered {path} ({event})",
                entry.path
            ),
        ));
    }
    if let Some(successor) = &said.successor {
        let actual = entry.successor_version.as_ref().map(ToString::to_string);
        if &actual != successor {
            out.push((
                "successor_version",
                format!(
                    "the entry's successor is {}, but the history says {} ({event})",
                    actual.as_deref().unwrap_or("(none)"),
                    successor.as_deref().unwrap_or("(none)")
                ),
            ));
        }
    }
    let times = [
        ("registered_at", Some(entry.registered_at.as_str()), &said.times.registered, "add"),
        ("activated_at", entry.activated_at.as_deref(), &said.times.activated, "promote"),
        ("deprecated_at", entry.deprecated_at.as_deref(), &said.times.deprecated, "deprecate"),
        ("removed_at", entry.removed_at.as_deref(), &said.times.removed, "remove"),
    ];
    for (field, actual, recorded, action) in times {
        let Some(recorded) = recorded else { continue };
        let agrees = match actual {
            Some(at) => recorded.iter().any(|t| t == at),
            None => recorded.is_empty(),
        };
        if !agrees {
            let history = match recorded.as_slice() {
                [] => format!("no `{action}` event happened to it"),
                times => format!("its `{action}` event happened at {}", times.join(" or ")),
            };
            out.push((
                field,
                format!(
                    "the entry's `{field}` is {}, but {history} ({event})",
                    actual.unwrap_or("absent")
                ),
            ));
        }
    }
    out
}

/// A problem found while folding: an event that contradicts the state before it.
#[derive(Debug)]
pub struct EventProblem {
    /// Index of the event in `history`.
    pub index: usize,
    pub error: Error,
}

/// The key an event is about, if it names one.
pub fn key_of(event: &Event) -> Option<Key> {
    let kind = EntryKind::of_id(&event.id)?;
    Some((kind, event.id.clone(), parse_version(&event.version)?))
}

/// Folds the history into the state it implies. Events that contradict the state before
/// them are returned as problems and otherwise skipped.
pub fn fold(history: &[Event]) -> (BTreeMap<Key, Implied>, Vec<EventProblem>) {
    let mut state: BTreeMap<Key, Implied> = BTreeMap::new();
    let mut problems = Vec::new();
    for (index, event) in history.iter().enumerate() {
        // Merges join histories; label moves are folded by [`fold_labels`].
        if matches!(event.action, Action::Merge | Action::Labeled | Action::Unlabeled) {
            continue;
        }
        let Some(key) = key_of(event) else {
            problems.push(EventProblem {
                index,
                error: mismatch(event, "names no contract or pack version".to_string()),
            });
            continue;
        };
        if let Err(reason) = apply(&mut state, key, event, index) {
            problems.push(EventProblem { index, error: mismatch(event, reason) });
        }
    }
    (state, problems)
}

/// What the history says about one label: the version it names and the event that moved
/// it there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImpliedLabel {
    pub targets: crate::registry::label::Targets,
    pub seq: u64,
    pub index: usize,
}

/// Folds the label events of the history (SPEC §20): (id, label) → where the last move
/// left it. A move that names a `previous` the label was not at, or a deletion of a label
/// that names another version, contradicts the history before it (merged histories in which
/// both sides made the same move replay: the same move twice is a no-op).
pub fn fold_labels(
    history: &[Event],
) -> (BTreeMap<(String, String), ImpliedLabel>, Vec<EventProblem>) {
    let mut labels: BTreeMap<(String, String), ImpliedLabel> = BTreeMap::new();
    let mut problems = Vec::new();
    for (index, event) in history.iter().enumerate() {
        if !matches!(event.action, Action::Labeled | Action::Unlabeled) {
            continue;
        }
        let (Some(label), Some(version)) = (&event.label, parse_version(&event.version)) else {
            problems.push(EventProblem {
                index,
                error: mismatch(event, "names no label or no version".to_string()),
            });
            continue;
        };
        let key = (event.id.clone(), label.clone());
        let current = labels.get(&key).map(|l| l.targets.clone());
        // A weighted event leaves the label at its `weights`; a move, at its version.
        let next = match &event.weights {
            Some(w) => match crate::registry::label::Targets::from_event(w) {
                Some(t) => t,
                None => {
                    problems.push(EventProblem {
                        index,
                        error: mismatch(
                            event,
                            "weighs its targets to other than 100 percent".to_string(),
                        ),
                    });
                    continue;
                }
            },
            None => crate::registry::label::Targets::one(version.clone()),
        };
        let current_single = current.as_ref().and_then(|t| t.single().cloned());
        match event.action {
            Action::Labeled => {
                let previous = event.previous.as_deref().and_then(parse_version);
                // A weighted change reweighs what is there; a move names where it was.
                let consistent = event.weights.is_some()
                    || current.as_ref() == Some(&next)
                    || current_single == previous;
                if !consistent {
                    problems.push(EventProblem {
                        index,
                        error: mismatch(
                            event,
                            format!(
                                "moves `{label}` from {}, but the history left it at {}",
                                event.previous.as_deref().unwrap_or("nowhere"),
                                current.map_or("nowhere".to_string(), |t| t.describe())
                            ),
                        ),
                    });
                    continue;
                }
                labels.insert(key, ImpliedLabel { targets: next, seq: event.seq, index });
            }
            _ => match current {
                Some(t) if t.contains(&version) => {
                    labels.remove(&key);
                }
                None => {}
                Some(v) => problems.push(EventProblem {
                    index,
                    error: mismatch(
                        event,
                        format!("deletes `{label}` from {version}, but the history left it at {v}"),
                    ),
                }),
            },
        }
    }
    (labels, problems)
}

/// Every difference between registry.json's labels and the history's, and every label
/// that names a version that is not active or deprecated.
fn check_labels(registry: &Registry, history: &[Event], out: &mut Vec<Diagnostic>) {
    let (implied, problems) = fold_labels(history);
    for p in problems {
        out.push(
            Diagnostic::from_error(&p.error)
                .pointer(format!("/history/{}", p.index))
                .help(HELP_EDITED),
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for (id, names) in &registry.labels {
        for (label, version) in names {
            seen.insert((id.clone(), label.clone()));
            let pointer = format!(
                "/labels/{}/{}",
                crate::source::escape_token(id),
                crate::source::escape_token(label)
            );
            let subject = format!("{id}@{label}");
            match implied.get(&(id.clone(), label.clone())) {
                Some(said) if &said.targets == version => {}
                Some(said) => out.push(
                    Diagnostic::from_error(&Error::HistoryMismatch {
                        subject,
                        reason: format!(
                            "registry.json names {version}, but the history moved it to {} (event #{})",
                            said.targets, said.seq
                        ),
                    })
                    .pointer(pointer.clone())
                    .help(HELP_EDITED),
                ),
                None => out.push(
                    Diagnostic::from_error(&Error::HistoryMismatch {
                        subject,
                        reason: format!("registry.json names {version}, but no history event moved the label"),
                    })
                    .pointer(pointer.clone())
                    .help("move labels with `pactum registry label ID LABEL VERSION`; never in registry.json by hand"),
                ),
            }
            let kind = EntryKind::of_id(id).unwrap_or(EntryKind::Contract);
            for target in version.versions() {
                match registry.get(kind, id, target) {
                    Some(e) if matches!(e.state, State::Active | State::Deprecated) => {}
                    other => out.push(
                        Diagnostic::from_error(&Error::HistoryMismatch {
                            subject: format!("{id}@{label}"),
                            reason: format!(
                                "the label names {id}@{target}, which is {}; a label names an active or deprecated version",
                                other.map_or("not registered", |e| e.state.as_str())
                            ),
                        })
                        .pointer(pointer.clone())
                        .help(format!("move the label: `pactum registry label {id} {label} VERSION`")),
                    ),
                }
            }
        }
    }
    for ((id, label), said) in &implied {
        if !seen.contains(&(id.clone(), label.clone())) {
            out.push(
                Diagnostic::from_error(&Error::HistoryMismatch {
                    subject: format!("{id}@{label}"),
                    reason: format!(
                        "history event #{} moved it to {}, but registry.json has no such label",
                        said.seq, said.targets
                    ),
                })
                .pointer(format!("/history/{}", said.index))
                .help(HELP_EDITED),
            );
        }
    }
}

/// The history folded once: what the runtime checks each entry it resolves against.
#[derive(Clone, Debug)]
pub struct Replayed {
    entries: BTreeMap<Key, Implied>,
    labels: BTreeMap<(String, String), ImpliedLabel>,
}

impl Replayed {
    pub fn of(history: &[Event]) -> Replayed {
        Replayed { entries: fold(history).0, labels: fold_labels(history).0 }
    }

    /// `registry_history_mismatch` when the entry (and `label` naming it) is not what the
    /// history gives, with `verify`'s help.
    pub fn accounts_for(&self, entry: &Entry, label: Option<&str>) -> Result<(), Error> {
        let refuse = |reason: String| Error::HistoryMismatch {
            subject: entry.key(),
            reason: format!(
                "{reason}; pactum uses only what the history accounts for: {HELP_EDITED} (`pactum registry verify` lists every difference)"
            ),
        };
        let Some(said) = self.entries.get(&key_of_entry(entry)) else {
            return Err(refuse(
                "the entry is in registry.json but no history event registers it".into(),
            ));
        };
        if let Some((_, reason)) = differences(entry, said).into_iter().next() {
            return Err(refuse(reason));
        }
        if let Some(label) = label {
            match self.labels.get(&(entry.id.clone(), label.to_string())) {
                Some(l) if l.targets.contains(&entry.version) => {}
                Some(l) => {
                    return Err(refuse(format!(
                        "the label `{label}` names {}, but the history moved it to {} (event #{})",
                        entry.version, l.targets, l.seq
                    )));
                }
                None => {
                    return Err(refuse(format!("no history event moved the label `{label}`")));
                }
            }
        }
        Ok(())
    }
}

fn mismatch(event: &Event, reason: String) -> Error {
    Error::HistoryMismatch {
        subject: format!(
            "history event #{} ({} {})",
            event.seq,
            event.action.as_str(),
            event.subject()
        ),
        reason,
    }
}

fn apply(
    state: &mut BTreeMap<Key, Implied>,
    key: Key,
    event: &Event,
    index: usize,
) -> std::result::Result<(), String> {
    let stamp = |implied: &mut Implied| {
        implied.seq = event.seq;
        implied.index = index;
        implied.action = event.action;
    };
    let fresh = |s: State, successor: Option<Option<String>>| Implied {
        path: event.path.clone(),
        sha256: event.sha256.clone(),
        state: s,
        successor,
        refs: event.refs.clone(),
        times: match (event.action, &event.times) {
            (Action::Add, _) => Times::registered(&event.at),
            // An adopted entry's times predate the history: the event records them.
            (_, Some(times)) => Times::adopted(times),
            // Adopted before adopt events recorded them: unknown.
            _ => Times::default(),
        },
        seq: event.seq,
        index,
        action: event.action,
    };
    match event.action {
        Action::Merge | Action::Labeled | Action::Unlabeled => Ok(()),
        Action::Adopt => {
            let s = event.state.unwrap_or(State::Draft);
            state.insert(key, fresh(s, Some(event.successor.clone())));
            Ok(())
        }
        Action::Add => match state.get_mut(&key) {
            None => {
                state.insert(key, fresh(State::Draft, Some(None)));
                Ok(())
            }
            // Both branches registered the same file: the merged history holds both adds.
            Some(existing)
                if existing.sha256 == event.sha256
                    && (existing.path.is_none()
                        || event.path.is_none()
                        || existing.path == event.path) =>
            {
                if let Some(times) = &mut existing.times.registered
                    && !times.contains(&event.at)
                {
                    times.push(event.at.clone());
                }
                Ok(())
            }
            Some(existing) => Err(format!(
                "registers it again with other content, but event #{} already registered it",
                existing.seq
            )),
        },
        Action::Update => match state.get_mut(&key) {
            Some(existing) if existing.state == State::Draft => {
                existing.sha256 = event.sha256.clone();
                if event.path.is_some() {
                    existing.path = event.path.clone();
                }
                stamp(existing);
                Ok(())
            }
            Some(existing) => Err(format!(
                "changes a version that is {} (only drafts change)",
                existing.state.as_str()
            )),
            None => Err("changes a version no earlier event registers".to_string()),
        },
        Action::Discard => match state.get(&key) {
            Some(existing) if existing.state == State::Draft => {
                state.remove(&key);
                Ok(())
            }
            Some(existing) => Err(format!(
                "discards a version that is {} (only drafts are discarded)",
                existing.state.as_str()
            )),
            None => Err("discards a version no earlier event registers".to_string()),
        },
        Action::Promote | Action::Deprecate | Action::Remove => {
            let target = match event.action {
                Action::Promote => State::Active,
                Action::Deprecate => State::Deprecated,
                _ => State::Removed,
            };
            let Some(existing) = state.get_mut(&key) else {
                return Err(format!(
                    "{}s a version no earlier event registers",
                    event.action.as_str()
                ));
            };
            if event.action == Action::Promote {
                if existing.state == State::Draft {
                    existing.sha256 = event.sha256.clone();
                    existing.refs = event.refs.clone();
                } else if existing.sha256 != event.sha256 {
                    return Err(format!(
                        "promotes it with hash {}, but event #{} froze {}",
                        short(&event.sha256),
                        existing.seq,
                        short(&existing.sha256)
                    ));
                } else if existing.refs != event.refs {
                    return Err(format!(
                        "promotes it with referenced files {}, but event #{} froze {}",
                        show_refs(event.refs.as_ref()),
                        existing.seq,
                        show_refs(existing.refs.as_ref())
                    ));
                }
            }
            if event.action == Action::Deprecate {
                existing.successor = event.successor.clone().map(Some);
            }
            if existing.state >= target {
                // The same transition again (both sides of a merge made it): no-op, but
                // its time is one the merged entry may have kept (that side's entry wins
                // when it went further).
                existing.times.again(event.action, &event.at);
                stamp(existing);
                return Ok(());
            }
            let before = match target {
                State::Active => State::Draft,
                State::Deprecated => State::Active,
                _ => State::Deprecated,
            };
            if existing.state != before {
                return Err(format!(
                    "{}s a version that is {} (it must be {} first)",
                    event.action.as_str(),
                    existing.state.as_str(),
                    before.as_str()
                ));
            }
            existing.state = target;
            existing.times.transition(event.action, &event.at);
            stamp(existing);
            Ok(())
        }
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Referenced files as `path (sha…)`, for messages.
fn show_refs(refs: Option<&BTreeMap<String, String>>) -> String {
    match refs {
        None => "(none)".to_string(),
        Some(refs) if refs.is_empty() => "(none)".to_string(),
        Some(refs) => {
            let all: Vec<String> =
                refs.iter().map(|(path, sha)| format!("{path} ({})", short(sha))).collect();
            all.join(", ")
        }
    }
}

fn key_of_entry(e: &Entry) -> Key {
    (e.kind, e.id.clone(), e.version.clone())
}

const HELP_EDITED: &str = "registry.json was edited by hand: restore it from version control \
     (`git checkout -- registry.json`) and make the change with a `pactum registry` command";

/// Every difference between the entries and the state the history implies, plus a
/// `registry_history_missing` warning for entries without any history. Pointers are into
/// registry.json; the caller adds the file.
pub fn check(registry: &Registry) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let history = registry.history.as_deref().unwrap_or(&[]);
    if history.is_empty() {
        if !registry.labels.is_empty() {
            out.push(
                Diagnostic::from_error(&Error::HistoryMismatch {
                    subject: "labels".to_string(),
                    reason: "registry.json has labels but no history that moved them".to_string(),
                })
                .pointer("/labels")
                .help("move labels with `pactum registry label ID LABEL VERSION`; never in registry.json by hand"),
            );
        }
        if !registry.entries.is_empty() {
            out.push(
                Diagnostic::new(
                    Code::RegistryHistoryMissing,
                    format!(
                        "{} entries but no history: they cannot be checked against the events that made them",
                        registry.entries.len()
                    ),
                )
                .pointer("")
                .help("record the entries as they stand with `pactum registry adopt`; from then on every `pactum registry` command appends to the history"),
            );
        }
        return out;
    }
    check_labels(registry, history, &mut out);
    let (implied, problems) = fold(history);
    for p in problems {
        out.push(
            Diagnostic::from_error(&p.error)
                .pointer(format!("/history/{}", p.index))
                .help(HELP_EDITED),
        );
    }
    for (index, entry) in registry.entries.iter().enumerate() {
        let pointer = registry.pointer_at(index);
        let Some(said) = implied.get(&key_of_entry(entry)) else {
            out.push(
                Diagnostic::from_error(&Error::HistoryMismatch {
                    subject: entry.key(),
                    reason: "the entry is in registry.json but no history event registers it"
                        .to_string(),
                })
                .pointer(pointer)
                .help("register files with `pactum registry add FILE`; never add entries to registry.json by hand"),
            );
            continue;
        };
        for (field, reason) in differences(entry, said) {
            out.push(
                Diagnostic::from_error(&Error::HistoryMismatch { subject: entry.key(), reason })
                    .pointer(format!("{pointer}/{field}"))
                    .help(HELP_EDITED),
            );
        }
    }
    for (key, said) in &implied {
        if registry.get(key.0, &key.1, &key.2).is_none() {
            out.push(
                Diagnostic::from_error(&Error::HistoryMismatch {
                    subject: format!("{}@{}", key.1, key.2),
                    reason: format!(
                        "history event #{} ({}) leaves it {}, but registry.json has no entry for it",
                        said.seq,
                        said.action.as_str(),
                        said.state.as_str()
                    ),
                })
                .pointer(format!("/history/{}", said.index))
                .help("restore the entry from version control; drop drafts with `pactum registry discard ID@VERSION`, never by deleting entries"),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn event(action: Action, at: &str) -> Event {
        Event {
            at: at.into(),
            action,
            id: "PRC-A-001".into(),
            version: "1.0.0".into(),
            path: matches!(action, Action::Add).then(|| "contracts/a.json".to_string()),
            sha256: SHA.into(),
            successor: matches!(action, Action::Deprecate).then(|| "2.0.0".to_string()),
            ..Event::default()
        }
    }

    fn entry(registered: &str, activated: Option<&str>, deprecated: Option<&str>) -> Entry {
        Entry {
            kind: EntryKind::Contract,
            id: "PRC-A-001".into(),
            version: Version::new(1, 0, 0),
            path: "contracts/a.json".into(),
            sha256: SHA.into(),
            state: if deprecated.is_some() { State::Deprecated } else { State::Active },
            registered_at: registered.into(),
            activated_at: activated.map(Into::into),
            deprecated_at: deprecated.map(Into::into),
            successor_version: deprecated.map(|_| Version::new(2, 0, 0)),
            removed_at: None,
            refs: None,
        }
    }

    fn fields(history: &[Event], entry: &Entry) -> Vec<&'static str> {
        let (implied, problems) = fold(history);
        assert!(problems.is_empty(), "{problems:?}");
        let key = key_of_entry(entry);
        differences(entry, &implied[&key]).into_iter().map(|(field, _)| field).collect()
    }

    #[test]
    fn timestamps_are_those_of_the_events_and_a_merge_allows_either_sides() {
        let (t0, t1, t2, t3) = (
            "2026-01-01T00:00:00Z",
            "2026-01-02T00:00:00Z",
            "2026-01-03T00:00:00Z",
            "2026-01-04T00:00:00Z",
        );
        let straight = [event(Action::Add, t0), event(Action::Promote, t1)];
        assert!(fields(&straight, &entry(t0, Some(t1), None)).is_empty());
        assert_eq!(fields(&straight, &entry(t1, Some(t1), None)), ["registered_at"]);
        assert_eq!(fields(&straight, &entry(t0, Some(t2), None)), ["activated_at"]);
        assert_eq!(fields(&straight, &entry(t0, None, None)), ["activated_at"]);
        // Both sides of a merge promoted (ours at t1, theirs at t2), theirs also
        // deprecated: the merged entry is theirs, with theirs' promote time.
        let merged = [
            event(Action::Add, t0),
            event(Action::Promote, t1),
            event(Action::Promote, t2),
            event(Action::Deprecate, t3),
        ];
        assert!(fields(&merged, &entry(t0, Some(t2), Some(t3))).is_empty());
        assert!(fields(&merged, &entry(t0, Some(t1), Some(t3))).is_empty());
        assert_eq!(fields(&merged, &entry(t0, Some(t3), Some(t3))), ["activated_at"]);
        assert_eq!(fields(&merged, &entry(t0, Some(t1), Some(t2))), ["deprecated_at"]);
        // Adopted without recorded times (older adopt events): not checked; with them: checked.
        let mut adopt = event(Action::Adopt, t3);
        adopt.state = Some(State::Active);
        adopt.path = Some("contracts/a.json".into());
        assert!(fields(std::slice::from_ref(&adopt), &entry(t0, Some(t1), None)).is_empty());
        adopt.times = Some(Box::new(crate::registry::EventTimes::of(&entry(t0, Some(t1), None))));
        assert!(fields(std::slice::from_ref(&adopt), &entry(t0, Some(t1), None)).is_empty());
        assert_eq!(
            fields(std::slice::from_ref(&adopt), &entry(t0, Some(t2), None)),
            ["activated_at"]
        );
    }

    #[test]
    fn a_second_promote_must_carry_what_the_first_froze() {
        let (t0, t1, t2) = ("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z");
        let history = |again: Event| [event(Action::Add, t0), event(Action::Promote, t1), again];
        // The same promote on both sides of a merge replays.
        assert!(fold(&history(event(Action::Promote, t2))).1.is_empty());
        // Another hash, or other referenced files, contradicts the freeze.
        let mut other_hash = event(Action::Promote, t2);
        other_hash.sha256 = "0".repeat(64);
        let mut other_refs = event(Action::Promote, t2);
        other_refs.refs = Some(BTreeMap::from([("schemas/x.json".to_string(), SHA.to_string())]));
        for (again, says) in
            [(other_hash, "promotes it with hash"), (other_refs, "referenced files")]
        {
            let (_, problems) = fold(&history(again));
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert_eq!(problems[0].index, 2);
            let message = problems[0].error.to_string();
            assert!(message.contains(says) && message.contains("event #"), "{message}");
        }
    }
}
