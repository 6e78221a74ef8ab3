//! Registry checks (SPEC §5 checks 4 and 7, §17, §18): the registry's own integrity
//! (including the replay of its history against the entries), every contract and pack file
//! registered with a matching SHA-256 (drafts excepted: they are working copies) and
//! id/version, the files active contracts' schemas reference unchanged since promote,
//! successors of deprecated entries, and migration periods that are over.

use std::collections::HashMap;
use std::ffi::OsStr;

use crate::diagnostic::Diagnostic;
use crate::error::{Code, Error};
use crate::registry::{Entry, EntryKind, State};
use crate::resolve::{ResolveOptions, resolve};
use crate::validate::{Context, FileKind};

/// `audit` is what [`crate::registry::Registry::audit`] found (it runs beside the per-file
/// stage).
pub fn check(ctx: &Context, audit: Vec<Diagnostic>, out: &mut Vec<Diagnostic>) {
    let Some(registry) = &ctx.registry else { return };
    for d in audit {
        out.push(d.file(ctx.registry_name.clone()));
    }
    // Each entry's real path (its bytes: canonical paths) → the entries naming it, in the
    // registry's order. Looked up by each file's own real path: a file and a symlink to it
    // both find their entries.
    let mut by_file: HashMap<&OsStr, Vec<usize>, foldhash::fast::RandomState> = HashMap::default();
    for i in 0..registry.entries.len() {
        if let Some(path) = registry.path_at(i) {
            by_file.entry(path.as_os_str()).or_default().push(i);
        }
    }
    let root = crate::confine::real_or_given(&ctx.base);
    for f in &ctx.files {
        let Some(kind @ (FileKind::Contract | FileKind::Pack)) = f.kind else { continue };
        if !f.parsed || !f.abs.starts_with(&root) {
            continue;
        }
        let Some(entries) = by_file.get(f.abs.as_os_str()) else {
            let what = f.declared_id().map(|(id, v)| format!(" ({id}@{v})")).unwrap_or_default();
            out.push(
                Diagnostic::new(
                    Code::ContractUnregistered,
                    format!("{}{what} is not in {}", f.rel, ctx.registry_name),
                )
                .file(f.rel.clone())
                .help(format!("register it with `pactum registry add {}`", f.rel)),
            );
            continue;
        };
        for &entry in entries {
            check_entry_file(f, kind, &registry.entries[entry], registry, out);
        }
    }
    changed_references(ctx, out);
    deprecation_periods(ctx, out);
}

/// Files an active or deprecated contract's schemas referenced when it was promoted that
/// changed since (SPEC §18: immutability covers meaning), reported at the changed file.
fn changed_references(ctx: &Context, out: &mut Vec<Diagnostic>) {
    let Some(registry) = &ctx.registry else { return };
    for entry in registry.entries.iter().filter(|e| e.refs.is_some()) {
        let own = registry.file_of(entry).ok().map(|p| super::relative_name(&ctx.base, &p));
        // A run on named files looks only at the entries a named file is, or is a
        // reference of.
        if !ctx.subjects.is_all()
            && !own.as_deref().is_some_and(|f| ctx.is_subject(f))
            && !entry.refs.iter().flatten().any(|(rel, _)| ctx.is_subject(rel))
        {
            continue;
        }
        for (rel, e) in registry.changed_refs(entry) {
            let d = Diagnostic::from_error(&e).file(rel.clone());
            let d = match &own {
                Some(own) => d.about(own.clone()),
                None => d,
            };
            out.push(d.help(format!(
                "{} is {}: the files its schemas reference never change; restore {rel} (`git checkout -- {rel}`), and put a changed schema in a new file referenced by a new version",
                entry.key(),
                entry.state.as_str()
            )));
        }
    }
}

fn check_entry_file(
    f: &super::Analyzed,
    kind: FileKind,
    entry: &Entry,
    registry: &crate::registry::Registry,
    out: &mut Vec<Diagnostic>,
) {
    let expected_kind = match entry.kind {
        EntryKind::Contract => FileKind::Contract,
        EntryKind::PromptPack => FileKind::Pack,
    };
    if expected_kind != kind {
        out.push(
            Diagnostic::new(
                Code::ContractIdMismatch,
                format!(
                    "registry entry {} ({}) points at a {} file",
                    entry.key(),
                    entry.kind.noun(),
                    kind.doc_kind().noun()
                ),
            )
            .file(f.rel.clone())
            .help("point the entry at the right file"),
        );
        return;
    }
    // A draft is a working copy (SPEC §17): its content is checked as usual, its hash is
    // frozen only by `promote`.
    if let Some(sha) = &f.sha256
        && sha != &entry.sha256
        && entry.state != State::Draft
    {
        let e = Error::HashMismatch {
            path: f.rel.clone().into(),
            id: entry.id.clone(),
            version: entry.version.to_string(),
            expected: entry.sha256.clone(),
            actual: sha.clone(),
        };
        out.push(Diagnostic::from_error(&e).file(f.rel.clone()).help(format!(
            "{} is {}: its file never changes; restore it (`git checkout -- {}`) and put the change in a new version (`pactum new version {}@{}`)",
            entry.key(),
            entry.state.as_str(),
            f.rel,
            entry.id,
            registry.next_version(entry.kind, &entry.id)
        )));
    }
    if let Some((id, version)) = f.declared_id() {
        let id_key = if kind == FileKind::Contract { "/contract_id" } else { "/prompt_pack_id" };
        let problem = if id != entry.id {
            Some(id_key)
        } else if version != entry.version.to_string() {
            Some("/version")
        } else {
            None
        };
        if let Some(pointer) = problem {
            let e = Error::IdMismatch {
                path: f.rel.clone().into(),
                expected: entry.key(),
                found: format!("{id}@{version}"),
            };
            out.push(Diagnostic::from_error(&e).file(f.rel.clone()).pointer(pointer).help(
                format!(
                    "make the file say {} or register it under its own id and version",
                    entry.key()
                ),
            ));
        }
    }
}

/// Deprecated versions past their migration period, with the work orders still pinning them.
fn deprecation_periods(ctx: &Context, out: &mut Vec<Diagnostic>) {
    let Some(registry) = &ctx.registry else { return };
    let days = i64::from(ctx.config.project.deprecation_days);
    for entry in registry.entries.iter().filter(|e| e.state == State::Deprecated) {
        let Some(since) =
            entry.deprecated_at.as_deref().and_then(|d| d.parse::<jiff::Timestamp>().ok())
        else {
            continue;
        };
        let Ok(end) = since.checked_add(jiff::SignedDuration::from_hours(days * 24)) else {
            continue;
        };
        if ctx.now <= end {
            continue;
        }
        let pinning: Vec<String> = ctx
            .analyzed()
            .filter_map(|f| f.work_order.as_ref().map(|w| (f, w)))
            .filter(|(_, w)| {
                w.pins().iter().any(|(_, pin)| {
                    resolve(
                        registry,
                        entry.kind,
                        &pin.id,
                        &pin.requirement,
                        ResolveOptions::default(),
                    )
                    .is_ok_and(|r| r.entry == entry)
                })
            })
            .map(|(f, _)| f.rel.clone())
            .collect();
        let still = if pinning.is_empty() {
            String::new()
        } else {
            format!("; work orders still pinning it: {}", pinning.join(", "))
        };
        let mut d = Diagnostic::new(
            Code::DeprecationPeriodOver,
            format!(
                "{} has been deprecated since {since}, more than {days} days{still}",
                entry.key()
            ),
        );
        // About the work orders it names too.
        d.about = pinning;
        out.push(d.file(ctx.registry_name.clone()).pointer(registry.pointer_of(entry)).help(
            format!(
                "move the work orders to the successor, then `pactum registry remove {}`",
                entry.key()
            ),
        ));
    }
}
