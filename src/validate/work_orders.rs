//! Work orders (SPEC §5 check 10, §17): `validate` checks what `run` would refuse before
//! any call, so a green CI means the work orders run.
//! - every pin resolves (`contract_not_found`, `contract_version_not_found`,
//!   `contract_not_active`); pins of deprecated versions warn (`contract_deprecated`);
//! - an exchange's `input` fits the pinned contract's `input_schema`
//!   (`input_schema_invalid`, at the work order's line and column);
//! - the contract's `required_context` file and framework references that its
//!   `assembled_context` does not give exist inside the root (`required_context_missing`,
//!   `path_escape`: what `run` would refuse, [`crate::context::check_refs`]);
//! - a kernel work order's role contracts resolve, pinned or not (the kernel falls back to
//!   the latest active shipped role contract);
//! - the scripted fixture file it names loads (the same loader `run` uses).

use std::collections::HashMap;
use std::path::Path;

use crate::schema::Validator;

use crate::confine::Root;
use crate::diagnostic::Diagnostic;
use crate::error::Code;
use crate::executor::roles::{Role, RolePins};
use crate::registry::EntryKind;
use crate::resolve::{ResolveOptions, resolve};
use crate::validate::{Analyzed, Context};
use crate::work_order::{Task, WorkOrder};

pub fn check(ctx: &Context, notes: &mut Vec<String>, out: &mut Vec<Diagnostic>) {
    let orders: Vec<_> =
        ctx.files.iter().filter_map(|f| f.work_order.as_ref().map(|w| (f, w))).collect();
    for (f, wo) in &orders {
        fixtures(ctx, f, wo, out);
        output_folder(ctx, f, wo, out);
    }
    let Some(registry) = &ctx.registry else {
        if !orders.is_empty() {
            notes.push("work-order pins not checked: no registry".to_string());
        }
        return;
    };
    for (f, wo) in &orders {
        if let Some(w) = crate::executor::repair_unavailable(registry, wo) {
            out.push(
                Diagnostic::new(w.code, w.message)
                    .file(f.rel.clone())
                    .pointer("/constraints/max_repair_attempts")
                    .help("`pactum init --kernel` installs the repair contract; or remove max_repair_attempts"),
            );
        }
    }
    // Input validators compiled once per contract file.
    let mut validators: HashMap<String, Option<Validator>> = HashMap::new();
    for (f, wo) in orders {
        for (pointer, pin) in wo.pins() {
            match resolve(registry, EntryKind::Contract, &pin.id, &pin.requirement, ResolveOptions::default()) {
                Ok(r) => {
                    for w in r.warnings {
                        out.push(
                            Diagnostic::new(w.code, format!("{} pins {pin}: {}", wo.id, w.message))
                                .file(f.rel.clone())
                                .pointer(pointer.clone())
                                .help("move the pin to the successor version"),
                        );
                    }
                }
                Err(e) => out.push(
                    Diagnostic::new(e.code(), format!("{} pins {pin}: {e}", wo.id))
                        .file(f.rel.clone())
                        .pointer(pointer.clone())
                        .help("pin a registered, active version; `pactum registry list` shows what there is"),
                ),
            }
        }
        match &wo.task {
            Task::Exchange { contract: pin, input } => {
                let Ok(r) = resolve(
                    registry,
                    EntryKind::Contract,
                    &pin.id,
                    &pin.requirement,
                    ResolveOptions::default(),
                ) else {
                    continue;
                };
                let Some(file) = ctx.entry_file(r.entry) else { continue };
                let Some(contract) = file.full_contract() else { continue };
                let contract_file = file.rel.as_str();
                let validator = validators.entry(contract.sha256.clone()).or_insert_with(|| {
                    contract
                        .input_schema
                        .as_ref()
                        .and_then(|s| crate::schema::compile(s, contract.dir(), &ctx.base).ok())
                });
                let findings = match validator.as_ref().map(|v| v.check(input)) {
                    None => Vec::new(),
                    Some(Ok(findings)) => findings,
                    Some(Err(too)) => {
                        out.push(
                            Diagnostic::new(
                                Code::ValidationTooCostly,
                                format!("{}: the input of {}: {too}", wo.id, contract.key()),
                            )
                            .file(f.rel.clone())
                            .about(contract_file)
                            .pointer("/input")
                            .help("`pactum run` would refuse this work order before calling a model: send a smaller input, or simplify the contract's input_schema"),
                        );
                        Vec::new()
                    }
                };
                for finding in findings {
                    out.push(
                            Diagnostic::new(
                                Code::InputSchemaInvalid,
                                format!(
                                    "{}: input{} does not fit {}'s input_schema: {}",
                                    wo.id,
                                    finding.pointer,
                                    contract.key(),
                                    finding.message
                                ),
                            )
                            .file(f.rel.clone())
                            .about(contract_file)
                            .pointer(format!("/input{}", finding.pointer))
                            .help(format!(
                                "`pactum run` would refuse this work order before calling a model: fix the input, or check `pactum resolve {pin}` for the contract it pins"
                            )),
                        );
                }
                // What `run` would refuse before reading the ledger (SPEC §16).
                if let Err(e) =
                    crate::context::check_refs(&ctx.base, &contract, wo.assembled_context.as_ref())
                {
                    out.push(
                        Diagnostic::new(e.code(), format!("{}: {e}", wo.id))
                            .file(f.rel.clone())
                            .about(contract_file)
                            .pointer(if wo.assembled_context.is_some() { "/assembled_context" } else { "/contract" })
                            .help("add the file under the project root (or frameworks/ID.md), or give it in the work order's `assembled_context` (`files`, `frameworks`)"),
                    );
                }
            }
            Task::Kernel { contracts, .. } => {
                let Ok(pins) = RolePins::from_map(contracts) else { continue };
                for role in Role::ALL {
                    if contracts.contains_key(role.name()) {
                        continue; // checked above, at its own pointer
                    }
                    let pin = pins.pin(role);
                    if let Err(e) = resolve(
                        registry,
                        EntryKind::Contract,
                        &pin.id,
                        &pin.requirement,
                        ResolveOptions::default(),
                    ) {
                        out.push(
                            Diagnostic::new(
                                e.code(),
                                format!(
                                    "{}: the kernel role `{}` uses {} (the latest active version), which does not resolve: {e}",
                                    wo.id,
                                    role.name(),
                                    pin.id
                                ),
                            )
                            .file(f.rel.clone())
                            .pointer("/kind")
                            .help(format!(
                                "register the kernel role contracts with `pactum init --kernel`, or pin the role to a contract of yours in `contracts` (\"{}\": \"PRC-...\")",
                                role.name()
                            )),
                        );
                    }
                }
            }
        }
    }
}

/// The scripted fixtures a work order names must load as `run` loads them.
fn fixtures(ctx: &Context, f: &Analyzed, wo: &WorkOrder, out: &mut Vec<Diagnostic>) {
    let Some(rel) = &wo.provider.fixtures else { return };
    let dir = f.abs.parent().unwrap_or(Path::new("."));
    let boundary = Root::for_document(&ctx.base, dir);
    let path = boundary.read_path(&Root::beside(dir, rel));
    let named = path.as_ref().ok().map(|p| super::relative_name(&ctx.base, p));
    let loaded =
        path.and_then(|path| crate::gateway::scripted::ScriptedProvider::load(&path, &ctx.base));
    if let Err(e) = loaded {
        let d = Diagnostic::new(e.code(), format!("{}: {e}", wo.id)).file(f.rel.clone());
        out.push(
            match named {
                Some(fixture) => d.about(fixture),
                None => d,
            }
                .pointer("/provider/fixtures")
                .help("fix the fixture file (`{\"responses\": [{\"text\": ...}, ...]}`, see the README's scripted provider section) or the path, relative to the work order"),
        );
    }
}

/// The work order's output folder may receive a model's files (SPEC §18 "one door"): not
/// the root, a hidden or governed folder, or a folder pactum did not make.
fn output_folder(ctx: &Context, f: &Analyzed, wo: &WorkOrder, out: &mut Vec<Diagnostic>) {
    let dir = f.abs.parent().unwrap_or(Path::new("."));
    let boundary = Root::for_document(&ctx.base, dir);
    let Some(reason) = boundary.output_dir_problem(&crate::executor::files::output_dir_at(dir, wo))
    else {
        return;
    };
    let shown = wo.output_dir.clone().unwrap_or_else(|| format!("out/{}", wo.id));
    let mut d = Diagnostic::new(
        Code::OutputDirProtected,
        format!("{}: output folder {shown} {reason}", wo.id),
    )
    .file(f.rel.clone())
    .help(
        "set output_dir to a new folder of its own, such as \"out/<work order id>\" (the default)",
    );
    if wo.output_dir.is_some() {
        d = d.pointer("/output_dir");
    }
    out.push(d);
}
