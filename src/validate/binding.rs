//! Pack bindings and template variables (SPEC §5 checks 5 and 6): every contract's pack
//! exists and is valid (`prompt_pack_not_found`, `prompt_pack_invalid`), every variable its
//! templates read is declared in `input_schema.properties` (`template_variable_undeclared`),
//! and declared inputs no template reads are warned about (`template_input_unused`).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::contract::Contract;
use crate::diagnostic::Diagnostic;
use crate::error::{Code, Error};
use crate::id::Requirement;
use crate::registry::{EntryKind, State};
use crate::render::{CompiledPack, declared_inputs};
use crate::resolve::{ResolveOptions, resolve};
use crate::schema::join_pointer;
use crate::validate::{Analyzed, Context, FileKind};

/// The pack a contract binds to, as far as validation can tell.
enum Bound {
    /// The compiled pack and its key.
    Compiled(String, Arc<CompiledPack>),
    /// Resolved, but the pack itself is invalid (reported on the contract).
    Invalid(String, String),
    /// Not found (already reported).
    Missing,
}

/// Checks every contract's binding; returns the compiled pack of each contract that has a
/// valid one, by the contract file's index (for the examples check).
pub fn check(ctx: &Context, out: &mut Vec<Diagnostic>) -> HashMap<usize, Arc<CompiledPack>> {
    let mut bound_packs = HashMap::new();
    for (i, f) in ctx.files.iter().enumerate() {
        let Some(contract) = &f.contract else { continue };
        let bound = match &ctx.registry {
            Some(_) => bound_via_registry(ctx, f, contract, out),
            None => bound_in_tree(ctx, f, contract, out),
        };
        match bound {
            Bound::Compiled(key, pack) => {
                check_variables(f, contract, &key, &pack.variables_by_template(), out);
                bound_packs.insert(i, pack);
            }
            Bound::Invalid(key, why) => out.push(
                Diagnostic::new(
                    Code::PromptPackInvalid,
                    format!("bound pack {key} is invalid: {why}"),
                )
                .file(f.rel.clone())
                .pointer("/prompt_pack_id")
                .help("fix the pack (see its own findings) or bind another version"),
            ),
            Bound::Missing => {}
        }
    }
    bound_packs
}

fn pack_pointer(contract: &Contract) -> &'static str {
    if contract.prompt_pack_version == Requirement::Latest {
        "/prompt_pack_id"
    } else {
        "/prompt_pack_version"
    }
}

fn bound_via_registry(
    ctx: &Context,
    f: &Analyzed,
    contract: &Contract,
    out: &mut Vec<Diagnostic>,
) -> Bound {
    let Some(registry) = &ctx.registry else { return Bound::Missing };
    let draft = registry
        .versions(EntryKind::Contract, &contract.id)
        .any(|e| e.version == contract.version && e.state == State::Draft);
    let resolution = resolve(
        registry,
        EntryKind::PromptPack,
        &contract.prompt_pack_id,
        &contract.prompt_pack_version,
        ResolveOptions { allow_draft: draft },
    );
    let resolution = match resolution {
        Ok(r) => r,
        Err(e) => {
            let pointer = match e {
                Error::NotFound { .. } => "/prompt_pack_id",
                _ => pack_pointer(contract),
            };
            let help = match e.code() {
                Code::ContractNotActive => {
                    "promote the pack first (`pactum registry promote ID@VERSION`)".to_string()
                }
                _ => format!("register the pack (`pactum registry add FILE`) or fix {pointer}"),
            };
            out.push(
                Diagnostic::new(Code::PromptPackNotFound, e.to_string())
                    .file(f.rel.clone())
                    .pointer(pointer)
                    .help(help),
            );
            return Bound::Missing;
        }
    };
    for w in &resolution.warnings {
        out.push(
            Diagnostic::new(w.code, w.message.clone())
                .file(f.rel.clone())
                .pointer(pack_pointer(contract))
                .help("bind the pack's successor"),
        );
    }
    let entry = resolution.entry;
    let key = entry.key();
    let Ok(path) = registry.file_of(entry) else { return Bound::Missing };
    if let Some(pack_file) = ctx.file_at(&path) {
        return match &pack_file.compiled {
            Some(pack) => Bound::Compiled(key, pack.clone()),
            None => Bound::Invalid(key, format!("see the findings in {}", pack_file.rel)),
        };
    }
    // The pack is outside the folder being validated: load it now.
    let loaded = crate::document::load(&path, Some(crate::error::DocKind::PromptPack))
        .and_then(|doc| crate::pack::PromptPack::from_document(&doc))
        .and_then(|pack| CompiledPack::compile(&pack));
    match loaded {
        Ok(compiled) => Bound::Compiled(key, Arc::new(compiled)),
        Err(e) => Bound::Invalid(key, e.to_string()),
    }
}

fn bound_in_tree(
    ctx: &Context,
    f: &Analyzed,
    contract: &Contract,
    out: &mut Vec<Diagnostic>,
) -> Bound {
    let best = ctx
        .files
        .iter()
        .filter(|p| p.kind == Some(FileKind::Pack))
        .filter_map(|p| p.declared_id().map(|(id, v)| (p, id, v)))
        .filter(|(_, id, _)| *id == contract.prompt_pack_id)
        .filter_map(|(p, _, v)| crate::id::parse_version(v).map(|v| (p, v)))
        .filter(|(_, v)| contract.prompt_pack_version.matches(v))
        .max_by(|a, b| a.1.cmp(&b.1));
    match best {
        Some((p, v)) => {
            let key = format!("{}@{v}", contract.prompt_pack_id);
            match &p.compiled {
                Some(pack) => Bound::Compiled(key, pack.clone()),
                None => Bound::Invalid(key, format!("see the findings in {}", p.rel)),
            }
        }
        None => {
            out.push(
                Diagnostic::new(
                    Code::PromptPackNotFound,
                    format!(
                        "no pack {} matching `{}` in the folder being validated",
                        contract.prompt_pack_id, contract.prompt_pack_version
                    ),
                )
                .file(f.rel.clone())
                .pointer(pack_pointer(contract))
                .help(
                    "add the pack file, or validate from the project root so the registry is used",
                ),
            );
            Bound::Missing
        }
    }
}

fn check_variables(
    f: &Analyzed,
    contract: &Contract,
    key: &str,
    vars: &[(String, BTreeSet<String>)],
    out: &mut Vec<Diagnostic>,
) {
    let Some(declared) = declared_inputs(contract.input_schema.as_ref()) else { return };
    let anchor = match &contract.input_schema {
        Some(s) if s.get("properties").is_some() => "/input_schema/properties",
        Some(_) => "/input_schema",
        None => "/contract_id",
    };
    let mut used = BTreeSet::new();
    for (template, names) in vars {
        for name in names {
            used.insert(name.clone());
            if !declared.contains(name) {
                out.push(
                    Diagnostic::new(
                        Code::TemplateVariableUndeclared,
                        format!("template {key}{template} uses `{name}`, which input_schema does not declare"),
                    )
                    .file(f.rel.clone())
                    .pointer(anchor)
                    .help(format!("add `{name}` to input_schema.properties (with its type), or remove it from the template")),
                );
            }
        }
    }
    for name in declared.difference(&used) {
        out.push(
            Diagnostic::new(
                Code::TemplateInputUnused,
                format!("input `{name}` is declared but no template of {key} uses it"),
            )
            .file(f.rel.clone())
            .pointer(join_pointer("/input_schema/properties", name))
            .help("use it in the pack, or drop it from input_schema"),
        );
    }
}
