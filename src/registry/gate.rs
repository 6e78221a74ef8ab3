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

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::error::Code;

    fn stamp() -> Stamp {
        Stamp::new("2026-01-01T00:00:00Z", "tester@example.com")
    }

    /// A project holding the drafts `new contract` makes for PRC-A-001 and PRC-B-001 (and
    /// their packs PRM-A-001 and PRM-B-001, drafts too).
    fn drafts() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for id in ["PRC-A-001", "PRC-B-001"] {
            let s = crate::scaffold::new_contract(dir.path(), id, &stamp()).unwrap();
            crate::scaffold::tests::write_placeholders(dir.path(), &s);
        }
        dir
    }

    /// [`drafts`], the packs promoted: each contract is the next to promote.
    fn project() -> tempfile::TempDir {
        let dir = drafts();
        crate::registry::store::update(&dir.path().join("registry.json"), |r| {
            for pack in ["PRM-A-001", "PRM-B-001"] {
                lifecycle::promote(
                    r,
                    EntryKind::PromptPack,
                    pack,
                    &"1.0.0".parse().unwrap(),
                    &stamp(),
                )?;
            }
            Ok(())
        })
        .unwrap();
        dir
    }

    fn write(dir: &Path, rel: &str, value: &Value) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    }

    fn edit(dir: &Path, rel: &str, f: impl FnOnce(&mut Value)) {
        let path = dir.join(rel);
        let mut value: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        f(&mut value);
        write(dir, rel, &value);
    }

    /// The (file, code) of each finding that keeps `kind id@1.0.0` from being promoted.
    fn blocking(dir: &Path, kind: EntryKind, id: &str) -> Vec<(String, Code)> {
        let registry = Registry::open(&dir.join("registry.json")).unwrap();
        let version: Version = "1.0.0".parse().unwrap();
        let found = check(&registry, kind, id, &version, &stamp()).unwrap();
        found.into_iter().map(|d| (d.file.unwrap_or_default(), d.code)).collect()
    }

    fn files(found: &[(String, Code)]) -> Vec<&str> {
        let mut files: Vec<&str> = found.iter().map(|(f, _)| f.as_str()).collect();
        files.dedup();
        files
    }

    #[test]
    fn a_version_whose_files_validate_may_be_promoted() {
        let dir = drafts();
        assert_eq!(blocking(dir.path(), EntryKind::PromptPack, "PRM-A-001"), []);
        let dir = project();
        assert_eq!(blocking(dir.path(), EntryKind::Contract, "PRC-A-001"), []);
    }

    #[test]
    fn a_contract_whose_pack_is_a_draft_or_broken_is_not_promoted() {
        // Active, the contract would bind a pack no active contract may bind.
        let dir = drafts();
        let found = blocking(dir.path(), EntryKind::Contract, "PRC-A-001");
        assert_eq!(found, [("contracts/a/1.0.0.json".to_string(), Code::PromptPackNotFound)]);
        // The active pack edited (frozen, and its document broken): the pack's findings
        // block the contract, and not the other contract.
        let dir = project();
        edit(dir.path(), "prompt_packs/a/1.0.0.json", |p| {
            p.as_object_mut().unwrap().remove("sections");
        });
        let found = blocking(dir.path(), EntryKind::Contract, "PRC-A-001");
        let both = ["contracts/a/1.0.0.json", "prompt_packs/a/1.0.0.json"];
        assert_eq!(files(&found), both, "{found:?}");
        assert!(found.contains(&(both[1].into(), Code::ContractHashMismatch)), "{found:?}");
        assert_eq!(blocking(dir.path(), EntryKind::Contract, "PRC-B-001"), []);
    }

    #[test]
    fn a_pack_is_blocked_by_the_contracts_on_their_way_to_bind_it() {
        let dir = drafts();
        // The contract still loads, but its example's input no longer fits input_schema.
        edit(dir.path(), "contracts/a/1.0.0.json", |c| {
            c["examples"][0]["input"]["input"] = json!("")
        });
        let found = blocking(dir.path(), EntryKind::PromptPack, "PRM-A-001");
        assert_eq!(files(&found), ["contracts/a/1.0.0.json"], "{found:?}");
        assert_eq!(blocking(dir.path(), EntryKind::PromptPack, "PRM-B-001"), []);
    }

    #[test]
    fn a_work_order_that_would_resolve_to_the_version_blocks_it() {
        let dir = project();
        // Its input misses what the contract's input_schema requires.
        let wo = |contract: &str| {
            json!({"work_order_id": "WO-A-001", "kind": "exchange", "contract": contract,
                   "input": {"text": "no `input` here"}})
        };
        write(dir.path(), "work_orders/a.json", &wo("PRC-A-001@^1"));
        let found = blocking(dir.path(), EntryKind::Contract, "PRC-A-001");
        assert_eq!(files(&found), ["work_orders/a.json"], "{found:?}");
        // Pinned to another version, or to another contract: not this promotion's concern.
        write(dir.path(), "work_orders/a.json", &wo("PRC-A-001@^2"));
        assert_eq!(blocking(dir.path(), EntryKind::Contract, "PRC-A-001"), []);
        write(dir.path(), "work_orders/a.json", &wo("PRC-B-001@^1"));
        assert_eq!(blocking(dir.path(), EntryKind::Contract, "PRC-A-001"), []);
    }

    #[test]
    fn an_eval_suite_of_the_contract_and_its_dataset_block_it() {
        let dir = project();
        let suite = json!({"eval_id": "EVAL-A-001", "contract": "PRC-A-001@^1",
            "dataset": "evals/a/cases.jsonl",
            "assertions": [{"kind": "one_of", "pointer": "/result", "values": ["x"]}]});
        write(dir.path(), "evals/a/EVAL-A-001.json", &suite);
        // A dataset line whose input does not fit the contract's input_schema.
        let line = "{\"id\": \"c1\", \"input\": {\"wrong\": 1}}\n";
        std::fs::write(dir.path().join("evals/a/cases.jsonl"), line).unwrap();
        let found = blocking(dir.path(), EntryKind::Contract, "PRC-A-001");
        assert!(!found.is_empty(), "the suite's dataset blocks the promotion");
        assert!(found.iter().all(|(f, _)| f.starts_with("evals/a/")), "{found:?}");
        assert_eq!(blocking(dir.path(), EntryKind::Contract, "PRC-B-001"), []);
    }

    #[test]
    fn the_refusal_carries_every_finding_under_the_first_ones_code() {
        let dir = drafts();
        let registry = Registry::open(&dir.path().join("registry.json")).unwrap();
        let findings =
            check(&registry, EntryKind::Contract, "PRC-A-001", &"1.0.0".parse().unwrap(), &stamp())
                .unwrap();
        let first = findings[0].code;
        let e = refusal("PRC-A-001@1.0.0".into(), findings);
        assert_eq!(e.code(), first);
        assert!(e.to_string().contains("PRC-A-001@1.0.0"), "{e}");
    }
}
