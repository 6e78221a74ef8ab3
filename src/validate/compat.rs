//! Compatibility of consecutive versions (SPEC §5 check 8, §7): each version of a contract
//! must declare at least the semver bump its changes need over the previous version
//! (`incompatible_version_bump`). Drafts are included so the author hears about it before
//! promoting. Removed versions are not checked themselves but stay baselines for the
//! versions above them ([`crate::registry::baseline`]), read only as they were frozen: a
//! removed version whose file is gone or changed lets only a major version follow it.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

use crate::compat::{Bump, Origin, Origins, declared_bump, diff_contracts_at, required_bump};
use crate::diagnostic::Diagnostic;
use crate::error::{DocKind, Error};
use crate::registry::baseline::{self, Baseline};
use crate::registry::{EntryKind, State};
use crate::schema::graph::{ProjectFiles, real_folder_uri};
use crate::validate::Context;

/// One version of a contract with its document, the base URI of its folder (where its
/// schemas' references start) and the file to report on.
struct Version<'a> {
    version: semver::Version,
    value: Document<'a>,
    base: String,
    /// The file reported on (`None`: a baseline only).
    file: Option<&'a str>,
    /// The version's file, when it has one (a finding on the next version is about it).
    rel: Option<&'a str>,
}

/// A version's whole document: the text of an analyzed file (the per-file stage keeps no
/// parsed copy; it is parsed again only for ids with several versions), or a document
/// loaded from outside the validated folder.
enum Document<'a> {
    Text(&'a super::Analyzed),
    Loaded(Value),
    /// A removed version that cannot be compared, and why.
    Lost(String),
}

impl Document<'_> {
    fn value(&self) -> Option<Cow<'_, Value>> {
        match self {
            Document::Loaded(value) => Some(Cow::Borrowed(value)),
            Document::Lost(_) => None,
            Document::Text(f) => {
                let text = f.text.as_deref()?;
                crate::document::parse(text, f.syntax, &f.abs, Some(DocKind::Contract))
                    .ok()
                    .map(Cow::Owned)
            }
        }
    }
}

/// Ids with this many versions or more have their pairs checked on several threads.
const PARALLEL_FROM: usize = 64;

pub fn check(ctx: &Context, out: &mut Vec<Diagnostic>) {
    for (id, mut versions) in versions_by_id(ctx) {
        if versions.len() < 2 {
            continue;
        }
        versions.sort_by(|a, b| a.version.cmp(&b.version));
        if !ctx.subjects.is_all() {
            // A run on named files: only the pairs a named version is in.
            // The first free major of the whole line (the run holds only some versions).
            let highest = ctx
                .registry
                .as_ref()
                .and_then(|r| r.versions(EntryKind::Contract, id).map(|e| e.version.major).max());
            let free = semver::Version::new(highest.map_or(1, |m| m + 1), 0, 0);
            for run in around_subjects(ctx, &versions) {
                check_pairs(ctx, id, &versions[run], &free, out);
            }
            continue;
        }
        // The first major version no version of the id has taken (for a lost baseline's hint).
        let free = versions.last().map_or(1, |v| v.version.major + 1);
        let free = semver::Version::new(free, 0, 0);
        let pairs = versions.len() - 1;
        let chunks = if versions.len() >= PARALLEL_FROM { ctx.jobs.max(1) } else { 1 };
        if chunks == 1 {
            check_pairs(ctx, id, &versions, &free, out);
            continue;
        }
        // Consecutive runs of pairs, one per thread; neighbouring runs share the version
        // between them (parsed once by each).
        let size = pairs.div_ceil(chunks);
        let starts: Vec<usize> = (0..pairs).step_by(size).collect();
        let found = super::side_by_side(&starts, |&start| {
            let end = (start + size).min(pairs);
            let mut found = Vec::new();
            check_pairs(ctx, id, &versions[start..=end], &free, &mut found);
            found
        });
        out.extend(found.into_iter().flatten());
    }
}

/// The runs of consecutive versions that hold every pair with a named version in it (each
/// named version with its neighbours), as ranges into `versions`.
fn around_subjects(ctx: &Context, versions: &[Version<'_>]) -> Vec<std::ops::Range<usize>> {
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        if !v.rel.is_some_and(|rel| ctx.is_subject(rel)) {
            continue;
        }
        let run = i.saturating_sub(1)..(i + 2).min(versions.len());
        match runs.last_mut() {
            Some(last) if last.end > run.start => last.end = last.end.max(run.end),
            _ => runs.push(run),
        }
    }
    runs
}

/// Checks each consecutive pair of `versions` (sorted), parsing each version once and
/// holding at most two parsed at a time. Schema files the versions reference are read
/// once for the whole line.
fn check_pairs(
    ctx: &Context,
    id: &str,
    versions: &[Version<'_>],
    free: &semver::Version,
    out: &mut Vec<Diagnostic>,
) {
    let Some(first) = versions.first() else { return };
    let files = ProjectFiles::new(&ctx.base);
    let mut previous = first.value.value();
    for pair in versions.windows(2) {
        let (old, new) = (&pair[0], &pair[1]);
        let current = new.value.value();
        if let (Some(file), Document::Lost(reason)) = (new.file, &old.value) {
            lost_finding(id, (old, new), file, (reason, free), out);
        } else if let (Some(file), Some(old_value), Some(new_value)) =
            (new.file, &previous, &current)
        {
            let origins = Origins {
                old: Origin::new(&old.base, &files),
                new: Origin::new(&new.base, &files),
            };
            bump_finding(id, (old, new), file, (old_value, new_value), &origins, out);
            if let (Some(last), Some(old_file)) = (out.last_mut(), old.rel)
                && last.file.as_deref() == Some(file)
            {
                last.about.push(old_file.to_string());
            }
        }
        previous = current;
    }
}

fn bump_finding(
    id: &str,
    (old, new): (&Version<'_>, &Version<'_>),
    file: &str,
    (old_value, new_value): (&Value, &Value),
    origins: &Origins<'_>,
    out: &mut Vec<Diagnostic>,
) {
    let changes = diff_contracts_at(old_value, new_value, origins);
    let required = required_bump(&changes);
    let declared = declared_bump(&old.version, &new.version);
    if declared >= required {
        return;
    }
    let needing = crate::compat::beyond(&changes, declared);
    let e = Error::IncompatibleBump {
        id: id.to_string(),
        from: old.version.to_string(),
        to: new.version.to_string(),
        declared: declared.as_str().to_string(),
        required: required.as_str().to_string(),
        changes: needing,
    };
    out.push(Diagnostic::from_error(&e).file(file).pointer("/version").help(format!(
        "`pactum diff {id}@{} {id}@{}` lists the changes",
        old.version, new.version
    )));
}

/// A removed baseline that cannot be compared: only a major version may follow it.
fn lost_finding(
    id: &str,
    (old, new): (&Version<'_>, &Version<'_>),
    file: &str,
    (reason, free): (&str, &semver::Version),
    out: &mut Vec<Diagnostic>,
) {
    let declared = declared_bump(&old.version, &new.version);
    if declared >= Bump::Major {
        return;
    }
    let e = Error::IncompatibleBump {
        id: id.to_string(),
        from: old.version.to_string(),
        to: new.version.to_string(),
        declared: declared.as_str().to_string(),
        required: Bump::Major.as_str().to_string(),
        changes: vec![Baseline::lost_change(id, &old.version, reason)],
    };
    out.push(Diagnostic::from_error(&e).file(file).pointer("/version").help(format!(
        "release this change as {id}@{free} (`pactum new version {id}@{free}`), or restore the file of {id}@{} as it was frozen",
        old.version
    )));
}

/// Every version of every contract that is checked or is a baseline: from the registry
/// when there is one (files outside the validated folder are loaded; removed versions only
/// as they were frozen, [`baseline::load`]), else from the files being validated.
fn versions_by_id(ctx: &Context) -> BTreeMap<&str, Vec<Version<'_>>> {
    let mut out: BTreeMap<&str, Vec<Version<'_>>> = BTreeMap::new();
    match &ctx.registry {
        Some(registry) => {
            // Only ids with two versions or more have a bump to check.
            let several = registry.ids(EntryKind::Contract).into_iter().filter_map(|id| {
                let all = || registry.versions(EntryKind::Contract, id);
                all().nth(1)?;
                // A run on named files reads only named versions and their neighbours.
                let all: Vec<&crate::registry::Entry> = all().collect();
                if ctx.subjects.is_all() {
                    return Some(all);
                }
                let named: Vec<bool> = all
                    .iter()
                    .map(|e| {
                        registry
                            .file_of(e)
                            .is_ok_and(|p| ctx.is_subject(&super::relative_name(&ctx.base, &p)))
                    })
                    .collect();
                let near = |i: usize| {
                    named[i.saturating_sub(1)..(i + 2).min(all.len())].iter().any(|&n| n)
                };
                Some((0..all.len()).filter(|&i| near(i)).map(|i| all[i]).collect())
            });
            for entry in several.flatten() {
                if entry.state == State::Removed {
                    // A baseline only, never checked itself (its file is not reported on).
                    let (value, base) = match baseline::load(registry, entry) {
                        Ok(Baseline::Frozen { value, dir }) => {
                            (Document::Loaded(value), real_folder_uri(&dir))
                        }
                        Ok(Baseline::Lost { reason }) => (Document::Lost(reason), String::new()),
                        Err(e) => (Document::Lost(baseline::lost(&e)), String::new()),
                    };
                    out.entry(entry.id.as_str()).or_default().push(Version {
                        version: entry.version.clone(),
                        value,
                        base,
                        file: None,
                        rel: None,
                    });
                    continue;
                }
                let Ok(path) = registry.file_of(entry) else { continue };
                let (value, file) = match ctx.entry_file(entry) {
                    Some(f) => match &f.contract {
                        Some(_) => (Document::Text(f), Some(f.rel.as_str())),
                        None => continue,
                    },
                    None => match crate::document::load(&path, Some(DocKind::Contract)) {
                        Ok(doc) => (Document::Loaded(doc.value), None),
                        Err(_) => continue,
                    },
                };
                let base = real_folder_uri(path.parent().unwrap_or(&ctx.base));
                out.entry(entry.id.as_str()).or_default().push(Version {
                    version: entry.version.clone(),
                    value,
                    base,
                    file,
                    rel: file,
                });
            }
        }
        None => {
            for f in &ctx.files {
                if let Some(c) = &f.contract {
                    out.entry(c.id.as_str()).or_default().push(Version {
                        version: c.version.clone(),
                        value: Document::Text(f),
                        base: real_folder_uri(f.abs.parent().unwrap_or(&ctx.base)),
                        file: Some(f.rel.as_str()),
                        rel: Some(f.rel.as_str()),
                    });
                }
            }
        }
    }
    out
}
