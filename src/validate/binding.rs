//! Pack bindings and template variables (SPEC §5 checks 5 and 6): every contract's pack
//! exists and is valid (`prompt_pack_not_found`, `prompt_pack_invalid`), every variable its
//! templates read is declared in `input_schema.properties` (`template_variable_undeclared`),
//! and declared inputs no template reads are warned about (`template_input_unused`).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::diagnostic::Diagnostic;
use crate::error::{Code, Error};
use crate::id::Requirement;
use crate::pack::PromptPack;
use crate::registry::{EntryKind, State};
use crate::render::CompiledPack;
use crate::resolve::{ResolveOptions, resolve};
use crate::schema::join_pointer;
use crate::validate::file::ContractFacts;
use crate::validate::{Analyzed, Context, FileKind};

/// The variables each template of a pack reads, by template pointer.
type Variables = [(String, BTreeSet<String>)];

/// The pack a contract binds to, as far as validation can tell.
enum Bound<'a> {
    /// A valid pack: its key, its templates' variables (borrowed from the analyzed pack
    /// file, or owned when the pack was loaded from elsewhere), where it is, and its file's
    /// name (the findings on the contract are about it too).
    Valid { key: String, variables: Cow<'a, Variables>, pack: Source<'a>, file: String },
    /// Resolved, but the pack itself is invalid (reported on the contract); with the
    /// variables of its readable templates, which the contract's inputs are still checked
    /// against (every finding in one run), and its file's name.
    Invalid(String, String, Option<&'a Variables>, String),
    /// Not found (already reported).
    Missing,
}

/// Where a bound pack's model is.
enum Source<'a> {
    /// An analyzed file (one of the files being validated, or a registry entry's file
    /// analyzed as context).
    File(&'a Analyzed),
    /// Loaded from outside the validated folder.
    Loaded(Box<PromptPack>),
}

/// Packs of the validated files by id, with their versions (for trees without a registry).
fn packs_by_id(ctx: &Context) -> HashMap<&str, Vec<(semver::Version, usize)>> {
    let mut map: HashMap<&str, Vec<(semver::Version, usize)>> = HashMap::new();
    for (i, p) in ctx.files.iter().enumerate() {
        if p.kind != Some(FileKind::Pack) {
            continue;
        }
        if let Some((id, v)) = p.declared_id()
            && let Some(v) = crate::id::parse_version(v)
        {
            map.entry(id).or_default().push((v, i));
        }
    }
    map
}

/// A contract's compiled pack and the pack file's name, for the examples check.
pub type ForExamples = HashMap<usize, (Arc<CompiledPack>, String)>;

/// Checks every contract's binding; returns, for each contract that has examples and a
/// valid pack, the compiled pack (by the contract file's index) for the examples check.
pub fn check(ctx: &Context, out: &mut Vec<Diagnostic>) -> ForExamples {
    let in_tree = if ctx.registry.is_none() { packs_by_id(ctx) } else { HashMap::new() };
    let mut for_examples = HashMap::new();
    for (i, f) in ctx.files.iter().enumerate() {
        let Some(contract) = f.contract.as_ref().or(f.invalid_contract.as_ref()) else { continue };
        let bound = match &ctx.registry {
            Some(_) => bound_via_registry(ctx, f, contract, out),
            None => bound_in_tree(ctx, &in_tree, f, contract, out),
        };
        match bound {
            Bound::Valid { key, variables, pack, file } => {
                let analyzed = matches!(pack, Source::File(_));
                check_variables(f, contract, (&key, &file, analyzed), &variables, out);
                if !contract.has_examples {
                    continue;
                }
                let pack = match pack {
                    Source::File(analyzed) => analyzed.full_pack(),
                    Source::Loaded(p) => Some(*p),
                };
                if let Some(compiled) = pack.and_then(|p| CompiledPack::compile(&p).ok()) {
                    for_examples.insert(i, (Arc::new(compiled), file));
                }
            }
            Bound::Invalid(key, why, variables, file) => {
                out.push(
                    Diagnostic::new(
                        Code::PromptPackInvalid,
                        format!("bound pack {key} is invalid: {why}"),
                    )
                    .file(f.rel.clone())
                    .about(file.clone())
                    .pointer("/prompt_pack_id")
                    .help("fix the pack (see its own findings) or bind another version"),
                );
                // Readable variables come from an analyzed pack file.
                if let Some(variables) = variables {
                    check_variables(f, contract, (&key, &file, true), variables, out);
                }
            }
            Bound::Missing => {}
        }
    }
    for_examples
}

fn pack_pointer(contract: &ContractFacts) -> &'static str {
    if contract.prompt_pack_version == Requirement::Latest {
        "/prompt_pack_id"
    } else {
        "/prompt_pack_version"
    }
}

/// The binding of an analyzed pack file.
fn bound_file(file: &Analyzed, key: String) -> Bound<'_> {
    match &file.pack_variables {
        Some(variables) => Bound::Valid {
            key,
            variables: Cow::Borrowed(variables),
            pack: Source::File(file),
            file: file.rel.clone(),
        },
        None => Bound::Invalid(
            key,
            format!("see the findings in {}", file.rel),
            file.invalid_pack_variables.as_deref(),
            file.rel.clone(),
        ),
    }
}

fn bound_via_registry<'a>(
    ctx: &'a Context,
    f: &Analyzed,
    contract: &ContractFacts,
    out: &mut Vec<Diagnostic>,
) -> Bound<'a> {
    let Some(registry) = &ctx.registry else { return Bound::Missing };
    let draft = registry
        .entries_at(EntryKind::Contract, &contract.id, &contract.version)
        .any(|e| e.state == State::Draft);
    let resolution = resolve(
        registry,
        EntryKind::PromptPack,
        &contract.prompt_pack_id,
        &contract.prompt_pack_version,
        ResolveOptions { allow_draft: draft, route: None },
    );
    let resolution = match resolution {
        Ok(r) => r,
        Err(e) => {
            let pointer = match e {
                Error::NotFound { .. } => "/prompt_pack_id",
                _ => pack_pointer(contract),
            };
            let help = match &e {
                Error::NotActive { id, version, .. } => {
                    format!("promote the pack first (`pactum registry promote {id}@{version}`)")
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
    if let Some(file) = ctx.entry_file(entry) {
        return bound_file(file, key);
    }
    let Ok(path) = registry.file_of(entry) else { return Bound::Missing };
    let file = super::relative_name(&ctx.base, &path);
    // The pack is not among the analyzed files: load it now.
    let loaded = crate::document::load(&path, Some(crate::error::DocKind::PromptPack))
        .and_then(|doc| PromptPack::from_document(&doc))
        .and_then(|pack| CompiledPack::compile(&pack).map(|c| (c.variables_by_template(), pack)));
    match loaded {
        Ok((variables, pack)) => Bound::Valid {
            key,
            variables: Cow::Owned(variables),
            pack: Source::Loaded(Box::new(pack)),
            file,
        },
        Err(e) => Bound::Invalid(key, e.to_string(), None, file),
    }
}

fn bound_in_tree<'a>(
    ctx: &'a Context,
    packs: &HashMap<&str, Vec<(semver::Version, usize)>>,
    f: &Analyzed,
    contract: &ContractFacts,
    out: &mut Vec<Diagnostic>,
) -> Bound<'a> {
    let best = packs
        .get(contract.prompt_pack_id.as_str())
        .into_iter()
        .flatten()
        .filter(|(v, _)| contract.prompt_pack_version.matches(v))
        .max_by(|a, b| a.0.cmp(&b.0));
    match best {
        Some((v, index)) => {
            bound_file(&ctx.files[*index], format!("{}@{v}", contract.prompt_pack_id))
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

/// The variables a contract's pack reads against the inputs it declares. An undeclared one
/// is reported where it is used — the template in the pack file, when the pack is one of the
/// analyzed files (else on the contract's inputs) — with the declared names it is close to.
fn check_variables(
    f: &Analyzed,
    contract: &ContractFacts,
    (key, pack_file, pack_analyzed): (&str, &str, bool),
    vars: &[(String, BTreeSet<String>)],
    out: &mut Vec<Diagnostic>,
) {
    let Some(declared) = &contract.declared_inputs else { return };
    let mut used = BTreeSet::new();
    for (template, names) in vars {
        for name in names {
            used.insert(name.clone());
            // Templates see the assembled context without declaring it (SPEC §16).
            if declared.contains(name) || name == "assembled_context" {
                continue;
            }
            let close = crate::id::nearest(name, declared.iter().map(String::as_str));
            let mean = match close.as_slice() {
                [] => String::new(),
                [one] => format!("; did you mean `{one}`?"),
                many => format!("; did you mean one of `{}`?", many.join("`, `")),
            };
            let fix = match close.first() {
                Some(one) => format!("write `{one}` in the template, or add `{name}` to"),
                None => format!("add `{name}` (with its type) to"),
            };
            let d = Diagnostic::new(
                Code::TemplateVariableUndeclared,
                format!(
                    "template {key}{template} uses `{name}`, which the input_schema of {} does not declare{mean}",
                    f.rel
                ),
            )
            .help(format!(
                "{fix} the input_schema.properties of {}, or remove it from the template",
                f.rel
            ));
            out.push(if pack_analyzed {
                d.file(pack_file).about(f.rel.clone()).pointer(template.clone())
            } else {
                d.file(f.rel.clone()).about(pack_file).pointer(contract.inputs_at)
            });
        }
    }
    for name in declared.difference(&used) {
        out.push(
            Diagnostic::new(
                Code::TemplateInputUnused,
                format!("input `{name}` is declared but no template of {key} uses it"),
            )
            .file(f.rel.clone())
            .about(pack_file)
            .pointer(join_pointer("/input_schema/properties", name))
            .help("use it in the pack, or drop it from input_schema"),
        );
    }
}
