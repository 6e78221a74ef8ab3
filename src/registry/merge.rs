//! `pactum registry merge BASE OURS THEIRS`: registry.json's git merge driver (SPEC §17).
//!
//! Entries are merged by kind + id + version, three ways: a side that left an entry as the
//! base had it takes the other side's version; both sides making the same change (adding
//! the same file, promoting the same draft, at different times) agree. The history after
//! the two sides' common prefix is replayed: our events as they are, then theirs,
//! re-numbered and re-chained, then a `merge` event naming both heads. The same id@version
//! with different content on both sides, or state changes that contradict (two
//! successors, a draft discarded here and promoted there), is a conflict: the result is an
//! error naming every such entry, and nothing is written. So is a side whose history does
//! not extend the base's (a rewritten history).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::{Error, Result};
use crate::registry::lifecycle::{Stamp, chain};
use crate::registry::replay::{self, Key};
use crate::registry::{Action, Entry, Event, Registry, State, verify_history};

/// The outcome of a clean merge.
#[derive(Clone, Debug)]
pub struct Merged {
    /// The merged registry (entries, history, kept top-level keys).
    pub registry: Registry,
    /// Events each side added after the common prefix.
    pub ours_events: usize,
    pub theirs_events: usize,
}

/// Parses one side; an empty text (git's base for files added on both sides) is an empty
/// registry.
fn side(path: &Path, text: &str) -> Result<Registry> {
    if text.trim().is_empty() {
        return Ok(Registry::empty(path));
    }
    let registry =
        Registry::from_text(path, text.to_string(), crate::digest::sha256_hex(text.as_bytes()))?;
    registry.check_integrity()?;
    Ok(registry)
}

/// A side must verify as far as a merge can tell without the files: every entry's path
/// stays inside the project, and the history replays to the entries. A side that does not
/// is refused (the merge would carry its hand edit into the result unnoticed).
fn verified(name: &str, registry: &Registry) -> Result<()> {
    for e in &registry.entries {
        if let Err(reason) = crate::registry::check_relative(&e.path) {
            return Err(conflict(
                format!("{name}'s {}", e.key()),
                format!(
                    "its path `{}` is refused: {reason}; fix that side's registry.json (`pactum registry verify`) and merge again",
                    e.path
                ),
            ));
        }
    }
    if let Some(d) = replay::check(registry).into_iter().find(|d| d.is_error()) {
        return Err(conflict(
            name.to_string(),
            format!(
                "it does not verify ({}: {}); fix that side's registry.json (`pactum registry verify`) and merge again",
                d.code, d.message
            ),
        ));
    }
    Ok(())
}

/// Labels merged three ways (SPEC §20): a side that left a label as the base had it takes
/// the other side's move; both moving it to the same version agree; one label moved to two
/// versions is a conflict.
fn merge_labels(
    base: &Registry,
    ours: &Registry,
    theirs: &Registry,
) -> Result<crate::registry::Labels> {
    let at =
        |r: &Registry, id: &str, label: &str| r.labels.get(id).and_then(|l| l.get(label)).cloned();
    let mut names: BTreeSet<(String, String)> = BTreeSet::new();
    for r in [base, ours, theirs] {
        for (id, labels) in &r.labels {
            names.extend(labels.keys().map(|l| (id.clone(), l.clone())));
        }
    }
    let mut out = crate::registry::Labels::new();
    let mut conflicts = Vec::new();
    for (id, label) in names {
        let (b, o, t) = (at(base, &id, &label), at(ours, &id, &label), at(theirs, &id, &label));
        let merged = if o == t || t == b {
            o
        } else if o == b {
            t
        } else {
            let show = |v: &Option<crate::registry::label::Targets>| {
                v.as_ref().map_or("(deleted)".to_string(), ToString::to_string)
            };
            conflicts.push(format!(
                "label `{label}` of {id} moved to {} here and to {} there",
                show(&o),
                show(&t)
            ));
            continue;
        };
        if let Some(v) = merged {
            out.entry(id).or_default().insert(label, v);
        }
    }
    if conflicts.is_empty() {
        Ok(out)
    } else {
        Err(conflict(
            "labels".into(),
            format!(
                "{}; move the label once after the merge (`pactum registry label ID LABEL VERSION`)",
                conflicts.join("; ")
            ),
        ))
    }
}

fn key(e: &Entry) -> Key {
    (e.kind, e.id.clone(), e.version.clone())
}

fn conflict(subject: String, reason: String) -> Error {
    Error::MergeConflict { subject, reason }
}

/// Merges three texts of registry.json (base, ours, theirs). `paths` name them in errors.
pub fn merge(paths: [&Path; 3], texts: [&str; 3], stamp: &Stamp) -> Result<Merged> {
    let base = side(paths[0], texts[0])?;
    let ours = side(paths[1], texts[1])?;
    let theirs = side(paths[2], texts[2])?;
    for (name, registry) in [("our side", &ours), ("their side", &theirs)] {
        verified(name, registry)?;
    }
    let history = merge_history(&base, &ours, &theirs, stamp)?;
    let entries = merge_entries(&base, &ours, &theirs)?;
    let labels = merge_labels(&base, &ours, &theirs)?;

    let mut merged = Registry::empty(paths[1]);
    merged.extra = ours.extra.clone();
    for (k, v) in &theirs.extra {
        merged.extra.entry(k.clone()).or_insert_with(|| v.clone());
    }
    merged.edit(|list, events| {
        list.extend(entries);
        events.extend(history.events);
    });
    merged.labels = labels;
    if replay::check(&ours).iter().all(|d| !d.is_error())
        && replay::check(&theirs).iter().all(|d| !d.is_error())
        && let Some(d) = replay::check(&merged).into_iter().find(|d| d.is_error())
    {
        return Err(conflict(
            "the merged history".into(),
            format!("it does not replay to the merged entries ({})", d.message),
        ));
    }
    Ok(Merged { registry: merged, ours_events: history.ours, theirs_events: history.theirs })
}

struct History {
    events: Vec<Event>,
    ours: usize,
    theirs: usize,
}

fn merge_history(
    base: &Registry,
    ours: &Registry,
    theirs: &Registry,
    stamp: &Stamp,
) -> Result<History> {
    let hb = base.history.as_deref().unwrap_or(&[]);
    let ho = ours.history.as_deref().unwrap_or(&[]);
    let ht = theirs.history.as_deref().unwrap_or(&[]);
    for (name, h) in [("ours", ho), ("theirs", ht)] {
        verify_history(h)?;
        if let Some(i) = (0..hb.len()).find(|&i| h.get(i).map(|e| &e.hash) != Some(&hb[i].hash)) {
            return Err(conflict(
                format!("history event #{}", i + 1),
                format!(
                    "the histories are unrelated: {name} does not continue the common ancestor's history \
                     (its event #{} differs or is missing), so one side rewrote it; restore that side's \
                     registry.json from the branch it came from",
                    i + 1
                ),
            ));
        }
    }
    let prefix = ho.iter().zip(ht).take_while(|(a, b)| a.hash == b.hash).count();
    let mut events = ho.to_vec();
    let (ours_new, theirs_new) = (ho.len() - prefix, ht.len() - prefix);
    for e in &ht[prefix..] {
        chain(&mut events, e.clone());
    }
    if ours_new > 0 && theirs_new > 0 {
        let heads = vec![
            ho.last().map(|e| e.hash.clone()).unwrap_or_default(),
            ht.last().map(|e| e.hash.clone()).unwrap_or_default(),
        ];
        chain(
            &mut events,
            Event {
                at: stamp.at.clone(),
                action: Action::Merge,
                actor: Some(stamp.actor.clone()),
                heads: Some(heads),
                ..Event::default()
            },
        );
    }
    Ok(History { events, ours: ours_new, theirs: theirs_new })
}

/// The merged entries: ours in our order, then theirs that we do not have.
fn merge_entries(base: &Registry, ours: &Registry, theirs: &Registry) -> Result<Vec<Entry>> {
    let b: BTreeMap<Key, &Entry> = base.entries.iter().map(|e| (key(e), e)).collect();
    let o: BTreeMap<Key, &Entry> = ours.entries.iter().map(|e| (key(e), e)).collect();
    let t: BTreeMap<Key, &Entry> = theirs.entries.iter().map(|e| (key(e), e)).collect();
    let mut order: Vec<Key> = ours.entries.iter().map(key).collect();
    let mut seen: BTreeSet<Key> = order.iter().cloned().collect();
    order.extend(theirs.entries.iter().map(key).filter(|k| seen.insert(k.clone())));
    order.extend(base.entries.iter().map(key).filter(|k| seen.insert(k.clone())));

    let mut out = Vec::new();
    let mut conflicts = Vec::new();
    for k in &order {
        let (eb, eo, et) = (b.get(k).copied(), o.get(k).copied(), t.get(k).copied());
        let pick = if eo == et || et == eb {
            Ok(eo)
        } else if eo == eb {
            Ok(et)
        } else {
            both_changed(eo, et).map(Some)
        };
        match pick {
            Ok(Some(e)) => out.push(e.clone()),
            Ok(None) => {}
            Err(reason) => conflicts.push((format!("{}@{}", k.1, k.2), reason)),
        }
    }
    match conflicts.len() {
        0 => Ok(out),
        1 => {
            let (name, reason) = conflicts.remove(0);
            Err(conflict(name, reason))
        }
        n => {
            let names: Vec<&str> = conflicts.iter().map(|(name, _)| name.as_str()).collect();
            let reasons: Vec<String> =
                conflicts.iter().map(|(name, reason)| format!("{name}: {reason}")).collect();
            Err(conflict(format!("{n} entries ({})", names.join(", ")), reasons.join("; ")))
        }
    }
}

fn describe(e: &Entry) -> String {
    format!("{} with sha256 {}", e.state.as_str(), e.sha256.get(..12).unwrap_or(&e.sha256))
}

/// Both sides changed one entry. They agree when the file and its hash are the same and
/// one state is the other's successor (or equal) with no contradicting successor: the
/// further state wins (its timestamps with it).
fn both_changed<'a>(
    o: Option<&'a Entry>,
    t: Option<&'a Entry>,
) -> std::result::Result<&'a Entry, String> {
    match (o, t) {
        (Some(o), Some(t)) => {
            if o.sha256 != t.sha256 || o.path != t.path {
                return Err(format!(
                    "both sides changed it with different content (ours: {} at {}; theirs: {} at {}); \
                     keep one and register the other as a new version (`pactum new version`)",
                    describe(o),
                    o.path,
                    describe(t),
                    t.path
                ));
            }
            let successors_agree = match (o.state, t.state) {
                (State::Deprecated | State::Removed, State::Deprecated | State::Removed) => {
                    o.successor_version == t.successor_version
                }
                _ => true,
            };
            if !successors_agree {
                return Err(format!(
                    "deprecated on both sides with different successors (ours {}, theirs {}); \
                     agree on one and run `pactum registry deprecate` again after the merge",
                    o.successor_version.as_ref().map(ToString::to_string).unwrap_or_default(),
                    t.successor_version.as_ref().map(ToString::to_string).unwrap_or_default()
                ));
            }
            Ok(if t.state > o.state { t } else { o })
        }
        (Some(e), None) | (None, Some(e)) => Err(format!(
            "one side dropped it (discard) while the other changed it (now {}); \
             decide which holds and make that change again after the merge",
            e.state.as_str()
        )),
        (None, None) => Err("dropped on both sides differently".into()),
    }
}
