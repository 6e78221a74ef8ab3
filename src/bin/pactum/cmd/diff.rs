//! `pactum diff ID@A ID@B`: every change between two versions of a contract, with the
//! minimum semver bump it needs. Exits 1 when B's declared bump is smaller than that.

use pactum::compat::{Origin, Origins, declared_bump, diff_contracts_at, required_bump};
use pactum::error::{Error, Result};
use pactum::id::{Pin, Requirement};
use pactum::registry::EntryKind;
use serde_json::json;

use crate::output::{self, Common, FAILED, OK};

#[derive(clap::Args)]
pub struct Args {
    /// The older version: PRC-NAME-001@1.0.0.
    from: String,
    /// The newer version of the same contract: PRC-NAME-001@1.1.0, or just 1.1.0.
    to: String,
    #[command(flatten)]
    common: Common,
}

fn exact(text: &str, default_id: Option<&str>) -> Result<(String, semver::Version)> {
    let text = match (text.contains('@'), default_id) {
        (false, Some(id)) if pactum::id::parse_version(text).is_some() => format!("{id}@{text}"),
        _ => text.to_string(),
    };
    let pin = Pin::parse(&text)?;
    match pin.requirement {
        Requirement::Exact(v) => Ok((pin.id, v)),
        _ => Err(Error::PinInvalid {
            pin: text,
            reason: "diff needs exact versions: ID@1.2.0".into(),
        }),
    }
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let result = (|| {
        let (id_a, va) = exact(&args.from, None)?;
        let (id_b, vb) = exact(&args.to, Some(&id_a))?;
        if id_a != id_b {
            return Err(Error::PinInvalid {
                pin: args.to.clone(),
                reason: format!(
                    "diff compares two versions of one contract, but FROM is {id_a} and TO is {id_b}; \
                     write `pactum diff {id_a}@{va} {id_a}@VERSION`"
                ),
            });
        }
        if EntryKind::of_id(&id_a) != Some(EntryKind::Contract) {
            return Err(Error::PinInvalid {
                pin: args.from.clone(),
                reason: "diff compares contract versions (PRC-...); a pack's changes show in the contracts that bind it".into(),
            });
        }
        let project = args.common.project()?;
        let load =
            |id: &str, v: &semver::Version| -> Result<std::sync::Arc<pactum::contract::Contract>> {
                let kind = EntryKind::Contract;
                if project.registry.versions(kind, id).next().is_none() {
                    return Err(Error::NotFound {
                        kind: kind.doc_kind(),
                        id: id.to_string(),
                        suggestions: pactum::id::suggest(id, project.contract_ids()),
                    });
                }
                let entry =
                    project.registry.get(kind, id, v).ok_or_else(|| Error::VersionNotFound {
                        kind: kind.doc_kind(),
                        id: id.to_string(),
                        requirement: format!("={v}"),
                        available: project
                            .registry
                            .versions(kind, id)
                            .map(|e| e.version.to_string())
                            .collect(),
                    })?;
                project.load_contract(entry)
            };
        let a = load(&id_a, &va)?;
        let b = load(&id_b, &vb)?;
        // Each version's schemas resolve references from its own folder.
        let files = pactum::schema::graph::ProjectFiles::new(&project.root);
        let (base_a, base_b) = (
            pactum::schema::graph::folder_uri(a.dir()),
            pactum::schema::graph::folder_uri(b.dir()),
        );
        let origins =
            Origins { old: Origin::new(&base_a, &files), new: Origin::new(&base_b, &files) };
        Ok::<_, Error>((
            format!("{id_a}@{va}"),
            format!("{id_b}@{vb}"),
            va,
            vb,
            diff_contracts_at(&a.raw, &b.raw, &origins),
        ))
    })();
    let (from, to, va, vb, changes) = match result {
        Ok(x) => x,
        Err(e) => return output::fail(&e, json),
    };
    let required = required_bump(&changes);
    let declared = declared_bump(&va, &vb);
    let compatible = declared >= required;
    let too_small = (!compatible).then(|| Error::IncompatibleBump {
        id: from.split('@').next().unwrap_or(&from).to_string(),
        from: va.to_string(),
        to: vb.to_string(),
        declared: declared.as_str().into(),
        required: required.as_str().into(),
        changes: changes
            .iter()
            .filter(|c| c.bump > declared)
            .map(|c| format!("{} {}", c.pointer, c.kind.as_str()))
            .collect(),
    });
    if json {
        let mut doc = json!({
            "ok": compatible, "from": from, "to": to, "required_bump": required, "declared_bump": declared,
            "compatible": compatible,
            "changes": changes.iter().map(|c| json!({"pointer": c.pointer, "kind": c.kind, "bump": c.bump, "detail": c.detail})).collect::<Vec<_>>(),
        });
        if let Some(e) = &too_small {
            doc["code"] = json!(e.code());
            doc["message"] = json!(e.to_string());
            doc["errors"] = json!([{"code": e.code(), "message": e.to_string()}]);
        }
        output::print_json(&doc);
    } else {
        let mut text = format!(
            "{from} -> {to}: {} change(s); needs a {} bump, declared {}\n",
            changes.len(),
            required.as_str(),
            declared.as_str()
        );
        for c in &changes {
            text.push_str(&format!(
                "  {:<6} {:<28} {}  ({})\n",
                c.bump.as_str(),
                c.kind.as_str(),
                pactum::terminal::escape_line(&c.pointer),
                pactum::terminal::escape_line(&c.detail)
            ));
        }
        output::print_text(&text);
        if let Some(e) = &too_small {
            output::eprint_error(e);
        }
    }
    if compatible { OK } else { FAILED }
}
