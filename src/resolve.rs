//! Resolution (SPEC §4): an id plus a requirement to exactly one registry entry.
//!
//! Pure and indexed: it reads the [`Registry`]'s in-memory index and never touches the
//! file system. Loading the resolved file (hash, id/version and schema checks) is
//! [`crate::project::Project`]'s job.
//!
//! - unknown id → `contract_not_found` with "did you mean";
//! - no requirement → the highest active version;
//! - exact pin → that version; deprecated resolves with a `contract_deprecated` warning
//!   naming the successor; removed or absent → `contract_version_not_found` listing the
//!   available versions; draft → `contract_not_active` unless drafts are allowed;
//! - range → the highest matching active version, else the highest matching deprecated
//!   one with the warning, else `contract_version_not_found` (also when only drafts match;
//!   the message lists them as drafts);
//! - no requirement and only drafts → `contract_not_active`, like an exact pin of a draft;
//!   only deprecated versions → the highest of them with the warning, as for a range.
//!
//! With `allow_draft`, drafts count as active (so a range or "latest" can pick the draft
//! you are working on).

use crate::error::{Code, Error, Result};
use crate::id::Requirement;
use crate::registry::{Entry, EntryKind, Registry, State};

/// How resolution treats drafts, and the routing key a weighted label picks by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResolveOptions {
    pub allow_draft: bool,
    /// [`crate::registry::label::route_point`] of the routing key (a work order's
    /// `route_key`, else its id): a pin on a weighted label chooses its target by it. `None`
    /// takes the heaviest target.
    pub route: Option<u64>,
}

/// A warning that does not stop resolution (`contract_deprecated`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    pub code: Code,
    pub message: String,
}

/// The entry a requirement resolved to, with any warnings.
#[derive(Clone, Debug)]
pub struct Resolution<'r> {
    pub entry: &'r Entry,
    pub warnings: Vec<Warning>,
    /// The label the pin went through, and the weight of the target it chose when the
    /// label is weighted.
    pub label: Option<(String, Option<u32>)>,
}

fn usable(entry: &Entry, options: ResolveOptions) -> bool {
    entry.state == State::Active || (options.allow_draft && entry.state == State::Draft)
}

/// The deprecation warning for an entry.
pub fn deprecation_warning(entry: &Entry) -> Warning {
    let since = entry.deprecated_at.as_deref().map(|d| format!(" since {d}")).unwrap_or_default();
    let successor = match &entry.successor_version {
        Some(s) => format!(
            "; its successor is {s}: pin {}@{s} after checking the changes (`pactum diff {} {}@{s}`)",
            entry.id,
            entry.key(),
            entry.id
        ),
        None => "; it names no successor".to_string(),
    };
    Warning {
        code: Code::ContractDeprecated,
        message: format!("{} {} is deprecated{since}{successor}", entry.kind.noun(), entry.key()),
    }
}

/// Resolves `id` + `requirement` to one entry (see the module docs for the rules).
pub fn resolve<'r>(
    registry: &'r Registry,
    kind: EntryKind,
    id: &str,
    requirement: &Requirement,
    options: ResolveOptions,
) -> Result<Resolution<'r>> {
    let all: Vec<&Entry> = registry.versions(kind, id).collect();
    if all.is_empty() {
        let known = registry.ids(kind);
        return Err(Error::NotFound {
            kind: kind.doc_kind(),
            id: id.to_string(),
            suggestions: crate::id::suggest(id, known),
        });
    }
    // A label names one version (a weighted one: the one the routing key picks): from here
    // on it is an exact pin of that version.
    let labeled;
    let mut through = None;
    let requirement = match requirement {
        Requirement::Label(name) => {
            let Some(targets) = registry.labels.get(id).and_then(|l| l.get(name)) else {
                let labels: Vec<String> = registry
                    .labels
                    .get(id)
                    .map(|l| l.iter().map(|(n, v)| format!("{n} ({v})")).collect())
                    .unwrap_or_default();
                return Err(Error::VersionNotFound {
                    kind: kind.doc_kind(),
                    id: id.to_string(),
                    requirement: format!("label {name}"),
                    available: if labels.is_empty() {
                        vec![format!(
                            "none labelled yet (`pactum registry label {id} {name} VERSION` sets the label)"
                        )]
                    } else {
                        labels
                    },
                });
            };
            let (version, weight) = match options.route {
                Some(point) => targets.pick_point(point),
                None => targets.heaviest(),
            };
            through = Some((name.clone(), targets.is_weighted().then_some(weight)));
            labeled = Requirement::Exact(version.clone());
            &labeled
        }
        other => other,
    };
    let live: Vec<&Entry> = all.iter().copied().filter(|e| e.state != State::Removed).collect();
    let not_found = || Error::VersionNotFound {
        kind: kind.doc_kind(),
        id: id.to_string(),
        requirement: requirement.to_string(),
        available: live
            .iter()
            .map(|e| match e.state {
                State::Active => e.version.to_string(),
                other => format!("{} ({})", e.version, other.as_str()),
            })
            .collect(),
    };
    let not_active = |e: &Entry| Error::NotActive {
        kind: kind.doc_kind(),
        id: id.to_string(),
        version: e.version.to_string(),
        drafts_flag: false,
    };
    let matching: Vec<&Entry> =
        live.iter().copied().filter(|e| requirement.matches(&e.version)).collect();
    // Versions are sorted ascending, so the last match is the highest.
    if let Some(best) = matching.iter().rev().find(|e| usable(e, options)) {
        return Ok(Resolution { entry: best, warnings: Vec::new(), label: through });
    }
    if let Some(best) = matching.iter().rev().find(|e| e.state == State::Deprecated) {
        return Ok(Resolution {
            entry: best,
            warnings: vec![deprecation_warning(best)],
            label: through,
        });
    }
    // A draft is named as such for an exact pin or a bare id; a range that only drafts
    // match is "no usable version" (SPEC §4), whose message lists the drafts.
    match matching.iter().rev().find(|e| e.state == State::Draft) {
        Some(draft) if !matches!(requirement, Requirement::Range(_)) => Err(not_active(draft)),
        _ => Err(not_found()),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use std::path::Path;

    const SHA: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn registry(entries: &[(&str, &str, &str)]) -> Registry {
        let list: Vec<Value> = entries
            .iter()
            .map(|(id, v, state)| {
                let mut e = json!({"contract_id": id, "version": v, "path": "c.json", "sha256": SHA,
                                   "state": state, "registered_at": "2026-01-01T00:00:00Z"});
                if *state == "deprecated" {
                    e["successor_version"] = json!("2.0.0");
                    e["deprecated_at"] = json!("2026-02-01T00:00:00Z");
                }
                e
            })
            .collect();
        Registry::from_text(
            Path::new("/x/registry.json"),
            json!({"registry_version": 1, "contracts": list, "prompt_packs": []}).to_string(),
            String::new(),
        )
        .unwrap()
    }

    fn check(reg: &Registry, pin: &str, allow_draft: bool, expect: Result<&str, Code>) {
        let pin = crate::id::Pin::parse(pin).unwrap();
        let got = resolve(
            reg,
            EntryKind::Contract,
            &pin.id,
            &pin.requirement,
            ResolveOptions { allow_draft, route: None },
        );
        match (got, expect) {
            (Ok(r), Ok(v)) => assert_eq!(r.entry.version.to_string(), v, "{pin}"),
            (Err(e), Err(code)) => assert_eq!(e.code(), code, "{pin}: {e}"),
            (got, expect) => {
                panic!("{pin}: got {:?}, expected {expect:?}", got.map(|r| r.entry.key()))
            }
        }
    }

    #[test]
    fn resolution_table() {
        let reg = registry(&[
            ("PRC-A-001", "1.0.0", "deprecated"),
            ("PRC-A-001", "1.1.0", "active"),
            ("PRC-A-001", "1.2.0", "active"),
            ("PRC-A-001", "1.3.0", "draft"),
            ("PRC-A-001", "0.9.0", "removed"),
            ("PRC-A-001", "2.0.0", "active"),
            ("PRC-B-001", "1.0.0", "deprecated"),
            ("PRC-C-001", "1.0.0", "draft"),
        ]);
        use Code::*;
        let cases: &[(&str, bool, Result<&str, Code>)] = &[
            ("PRC-A-001", false, Ok("2.0.0")),
            ("PRC-A-001@^1", false, Ok("1.2.0")),
            ("PRC-A-001@^1", true, Ok("1.3.0")),
            ("PRC-A-001@~1.1", false, Ok("1.1.0")),
            ("PRC-A-001@>=1.0, <1.2", false, Ok("1.1.0")),
            ("PRC-A-001@1.1.0", false, Ok("1.1.0")),
            ("PRC-A-001@=1.1.0", false, Ok("1.1.0")),
            ("PRC-A-001@1.0.0", false, Ok("1.0.0")),
            ("PRC-A-001@1.1", false, Ok("1.1.0")),
            ("PRC-A-001@1.3.0", false, Err(ContractNotActive)),
            ("PRC-A-001@1.3.0", true, Ok("1.3.0")),
            ("PRC-A-001@0.9.0", false, Err(ContractVersionNotFound)),
            ("PRC-A-001@5.0.0", false, Err(ContractVersionNotFound)),
            ("PRC-A-001@^3", false, Err(ContractVersionNotFound)),
            ("PRC-A-001@~1.0", false, Ok("1.0.0")),
            ("PRC-B-001", false, Ok("1.0.0")),
            ("PRC-C-001", false, Err(ContractNotActive)),
            ("PRC-C-001", true, Ok("1.0.0")),
            ("PRC-C-001@^1", false, Err(ContractVersionNotFound)),
            ("PRC-C-001@^1", true, Ok("1.0.0")),
            ("PRC-A-001@~1.3", false, Err(ContractVersionNotFound)),
            ("PRC-A-001@1.3", false, Err(ContractVersionNotFound)),
            ("PRC-Z-001", false, Err(ContractNotFound)),
        ];
        for (pin, allow, expect) in cases {
            check(&reg, pin, *allow, *expect);
        }
    }

    #[test]
    fn deprecated_resolution_warns_with_the_successor() {
        let reg =
            registry(&[("PRC-A-001", "1.0.0", "deprecated"), ("PRC-A-001", "2.0.0", "active")]);
        let r = resolve(
            &reg,
            EntryKind::Contract,
            "PRC-A-001",
            &Requirement::parse("1.0.0").unwrap(),
            ResolveOptions::default(),
        )
        .unwrap();
        assert_eq!(r.warnings.len(), 1);
        assert_eq!(r.warnings[0].code, Code::ContractDeprecated);
        assert!(r.warnings[0].message.contains("successor is 2.0.0"), "{:?}", r.warnings);
    }

    #[test]
    fn errors_list_versions_and_suggest_ids() {
        let reg = registry(&[
            ("PRC-CLASSIFY-001", "1.0.0", "active"),
            ("PRC-CLASSIFY-001", "1.1.0", "draft"),
        ]);
        let e = resolve(
            &reg,
            EntryKind::Contract,
            "PRC-CLASIFY-001",
            &Requirement::Latest,
            ResolveOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("did you mean PRC-CLASSIFY-001?"), "{e}");
        let e = resolve(
            &reg,
            EntryKind::Contract,
            "PRC-CLASSIFY-001",
            &Requirement::parse("^2").unwrap(),
            ResolveOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("available versions: 1.0.0, 1.1.0 (draft)"), "{e}");
    }
}
