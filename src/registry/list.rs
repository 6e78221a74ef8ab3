//! `pactum registry list [ID]` (SPEC §17): every id, its versions and states, the latest
//! active version, the work orders that pin each contract version and the contracts that
//! bind each pack version. Pure over the registry, the work orders and the contracts the
//! caller loaded.

use std::collections::BTreeMap;

use semver::Version;
use serde::Serialize;

use crate::contract::Contract;
use crate::id::Requirement;
use crate::registry::{Entry, EntryKind, Registry, State};
use crate::resolve::{ResolveOptions, resolve};
use crate::work_order::WorkOrder;

/// One version of an id.
#[derive(Clone, Debug, Serialize)]
pub struct VersionRow {
    pub version: String,
    pub state: State,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub successor_version: Option<String>,
    /// Work orders whose pins resolve to this version (contracts only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pinned_by: Vec<String>,
    /// Contract versions that bind this version (packs only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bound_by: Vec<String>,
    /// The labels that name this version (SPEC §20).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

/// One id with all its versions, lowest first.
#[derive(Clone, Debug, Serialize)]
pub struct IdRow {
    pub kind: EntryKind,
    pub id: String,
    pub latest_active: Option<String>,
    /// Its labels: name → version.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    pub versions: Vec<VersionRow>,
}

/// What a listing needs of a contract version: the pack it binds, and nothing else of the
/// contract (a listing of a large registry keeps one of these per version, never the
/// contracts with their schemas).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The contract version's entry key (`ID@VERSION`).
    pub key: String,
    /// A draft's binding resolves among drafts too.
    pub draft: bool,
    pub pack_id: String,
    pub pack_version: Requirement,
}

impl Binding {
    pub fn of(entry: &Entry, contract: &Contract) -> Binding {
        Binding {
            key: entry.key(),
            draft: entry.state == State::Draft,
            pack_id: contract.prompt_pack_id.clone(),
            pack_version: contract.prompt_pack_version.clone(),
        }
    }
}

/// Builds the listing. `work_orders` are named as the caller wants them shown (their id);
/// `bindings` are the contract versions' pack bindings. With `only`, just that id (which
/// the caller has checked exists).
pub fn list(
    registry: &Registry,
    work_orders: &[WorkOrder],
    bindings: &[Binding],
    only: Option<&str>,
) -> Vec<IdRow> {
    let mut pinned: BTreeMap<(String, Version), Vec<String>> = BTreeMap::new();
    for wo in work_orders {
        for (_, pin) in wo.pins() {
            let kind = EntryKind::of_id(&pin.id).unwrap_or(EntryKind::Contract);
            // As a run resolves it; an exact pin of a draft (a run with --allow-draft) too.
            let at = |allow_draft| {
                resolve(
                    registry,
                    kind,
                    &pin.id,
                    &pin.requirement,
                    ResolveOptions { allow_draft, route: None },
                )
            };
            let resolved = at(false).or_else(|e| match pin.requirement {
                Requirement::Exact(_) => at(true),
                _ => Err(e),
            });
            if let Ok(r) = resolved {
                let list = pinned.entry((r.entry.id.clone(), r.entry.version.clone())).or_default();
                if !list.contains(&wo.id) {
                    list.push(wo.id.clone());
                }
            }
        }
    }
    let mut bound: BTreeMap<(String, Version), Vec<String>> = BTreeMap::new();
    for b in bindings {
        let options = ResolveOptions { allow_draft: b.draft, route: None };
        if let Ok(r) =
            resolve(registry, EntryKind::PromptPack, &b.pack_id, &b.pack_version, options)
        {
            bound
                .entry((r.entry.id.clone(), r.entry.version.clone()))
                .or_default()
                .push(b.key.clone());
        }
    }
    let mut rows = Vec::new();
    for kind in [EntryKind::Contract, EntryKind::PromptPack] {
        for id in registry.ids(kind) {
            if only.is_some_and(|o| o != id) {
                continue;
            }
            let versions: Vec<VersionRow> = registry
                .versions(kind, id)
                .map(|e| {
                    let key = (e.id.clone(), e.version.clone());
                    VersionRow {
                        version: e.version.to_string(),
                        state: e.state,
                        path: e.path.clone(),
                        successor_version: e.successor_version.as_ref().map(ToString::to_string),
                        pinned_by: pinned.get(&key).cloned().unwrap_or_default(),
                        bound_by: bound.get(&key).cloned().unwrap_or_default(),
                        labels: crate::registry::lifecycle::labels_on(registry, &e.id, &e.version),
                    }
                })
                .collect();
            let latest_active = registry
                .versions(kind, id)
                .filter(|e| e.state == State::Active)
                .last()
                .map(|e| e.version.to_string());
            let labels = registry
                .labels
                .get(id)
                .map(|l| l.iter().map(|(n, v)| (n.clone(), v.to_string())).collect())
                .unwrap_or_default();
            rows.push(IdRow { kind, id: id.to_string(), latest_active, labels, versions });
        }
    }
    rows
}
