//! Promotion is the gate (SPEC §20): `registry promote` refuses a version that `validate`
//! would report an error for once it is active — in the contract, the pack it binds, their
//! examples, every work order that would resolve to it, and the eval suites of its id with
//! their datasets (for a pack: the contracts that bind it) — listing those findings (the refusal's code is the first finding's, SPEC §12;
//! every finding is in `errors`). The compatibility check and the eval gate come after it.
//!
//! The project is validated against the registry as it would be after the promotion
//! ([`lifecycle::assume_promoted`]: the file's hash frozen, the event appended), so a work
//! order whose range would move to the new version is checked against it, and nothing the
//! gate passes is refused by the next `validate`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use semver::Version;

use crate::diagnostic::Diagnostic;
use crate::error::{Error, Result};
use crate::registry::lifecycle::{self, Stamp};
use crate::registry::{EntryKind, Registry, State};
use crate::resolve::{ResolveOptions, resolve};
use crate::validate::{NoProgress, ValidateOptions};

/// The findings that keep `kind id@version` from being promoted; empty when it may be.
pub fn check(
    registry: &Registry,
    kind: EntryKind,
    id: &str,
    version: &Version,
    stamp: &Stamp,
) -> Result<Vec<Diagnostic>> {
    let view = lifecycle::assume_promoted(registry, kind, id, version, stamp)?;
    let root = crate::confine::real_or_given(&registry.root);
    let options = ValidateOptions {
        registry: Some(registry.path.clone()),
        registry_override: Some(Arc::new(view.clone())),
        names_from: Some(root.clone()),
        ..ValidateOptions::default()
    };
    let report = crate::validate::validate(&root, &options, &NoProgress)?;
    // The compatibility check comes after the gate, with its own code
    // (`incompatible_version_bump`); validate's copy of it is left to it.
    Ok(findings_in(&report, &view, kind, id, version, false))
}

/// The errors of `report` (a `validate` of the project with `names_from` its root) in the
/// files a promotion of `kind id@version` concerns, as the gate sees them in `registry`
/// (the registry with the version active): what `promote` would refuse it for. With
/// `compat`, the version's `incompatible_version_bump` findings too (`--base` re-derives
/// the compatibility check from them; `promote` makes its own).
pub fn findings_in(
    report: &crate::diagnostic::Report,
    registry: &Registry,
    kind: EntryKind,
    id: &str,
    version: &Version,
    compat: bool,
) -> Vec<Diagnostic> {
    let root = crate::confine::real_or_given(&registry.root);
    let concerned = concerned_files(registry, &root, kind, id, version);
    // Report paths are relative to the repository's top level; the files above relative to
    // the project root.
    let names = crate::validate::names_root(&root, Some(&root), &root);
    let prefix = root.strip_prefix(&names).map(Path::to_path_buf).unwrap_or_default();
    let shown: Vec<String> = concerned
        .iter()
        .map(|rel| crate::validate::relative_name(&names, &names.join(&prefix).join(rel)))
        .collect();
    report
        .diagnostics
        .iter()
        .filter(|d| {
            d.is_error()
                && (compat || d.code != crate::error::Code::IncompatibleVersionBump)
                && d.file.as_ref().is_some_and(|f| shown.contains(f))
        })
        .cloned()
        .collect()
}

/// The files whose findings block the promotion, relative to the project root.
fn concerned_files(
    view: &Registry,
    root: &Path,
    kind: EntryKind,
    id: &str,
    version: &Version,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Some(entry) = view.get(kind, id, version) else { return out };
    out.push(PathBuf::from(&entry.path));
    let active = ResolveOptions::default();
    match kind {
        EntryKind::Contract => {
            // Its pack, as the active contract will bind it.
            if let Ok(contract) = load_contract(view, entry)
                && let Ok(pack) = resolve(
                    view,
                    EntryKind::PromptPack,
                    &contract.prompt_pack_id,
                    &contract.prompt_pack_version,
                    active,
                )
            {
                out.push(PathBuf::from(&pack.entry.path));
            }
            // Every work order a pin of which would resolve to it.
            for (path, wo) in crate::work_order::in_project(root) {
                let resolves_here = wo.pins().iter().any(|(_, pin)| {
                    pin.id == id
                        && resolve(view, kind, &pin.id, &pin.requirement, active)
                            .is_ok_and(|r| r.entry.version == *version)
                });
                if resolves_here {
                    out.push(path);
                }
            }
            // Its eval suites and their datasets (their shape; SPEC §20).
            for path in crate::eval::suite::in_project(root) {
                let Ok(doc) = crate::document::load(&path, None) else { continue };
                let text = |key: &str| doc.value.get(key).and_then(serde_json::Value::as_str);
                if text("contract")
                    .and_then(|c| crate::id::Pin::parse(c).ok())
                    .is_some_and(|pin| pin.id == id)
                {
                    if let Some(dataset) = text("dataset") {
                        out.push(root.join(dataset));
                    }
                    out.push(path);
                }
            }
        }
        EntryKind::PromptPack => {
            // The contracts that bind it (drafts on their way too).
            for c in view.entries.iter().filter(|e| {
                e.kind == EntryKind::Contract && matches!(e.state, State::Active | State::Draft)
            }) {
                let Ok(contract) = load_contract(view, c) else { continue };
                let options = ResolveOptions { allow_draft: c.state == State::Draft, route: None };
                if contract.prompt_pack_id == id
                    && resolve(view, kind, id, &contract.prompt_pack_version, options)
                        .is_ok_and(|r| r.entry.version == *version)
                {
                    out.push(PathBuf::from(&c.path));
                }
            }
        }
    }
    out
}

fn load_contract(
    registry: &Registry,
    entry: &crate::registry::Entry,
) -> Result<crate::contract::Contract> {
    let path = registry.file_of(entry)?;
    let doc = crate::document::load(&path, Some(crate::error::DocKind::Contract))?;
    crate::contract::Contract::from_document(&doc)
}

/// The refusal for `findings` (not empty).
pub fn refusal(subject: String, findings: Vec<Diagnostic>) -> Error {
    Error::PromotionRefused { subject, findings }
}
