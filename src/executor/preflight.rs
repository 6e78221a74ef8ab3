//! What `run` refuses before any call, found without running (SPEC §24: `pactum submit`
//! refuses what `run` would refuse, so a work order a worker could only fail never enters
//! the queue). Not a second set of rules: each check is the library step a run takes before
//! its first call —
//! - every pin resolves to a contract and its pack ([`Project::resolve`], as the caller
//!   resolves each call's pin), drafts only with `allow_draft`;
//! - an exchange's input fits its contract's `input_schema` ([`Project::validators`], then
//!   [`exchange::check_input`]: the step before the call);
//! - the context the contract requires exists in the project ([`context::check_refs`]: what
//!   assembling it would refuse before reading the ledger);
//! - the pack compiles ([`CompiledPack::compile`], as it is before rendering);
//! - a kernel work order's `contracts` name kernel roles ([`RolePins::from_map`]) and every
//!   role's contract resolves, pinned or the latest shipped one ([`RolePins::pin`]);
//! - a kernel work order's `tools` allow-list names tools the run has, when pactum.toml
//!   configures no tool server (the run's [`Toolbox`], which a kernel run asks first);
//! - the provider the work order names is configured in pactum.toml or built in, and an
//!   offline one builds — its fixtures or cassette exist inside the project and load
//!   ([`select::check_choice`], selecting it as the run does).
//!
//! Not checked, because the machine that runs the work order decides it: the provider's
//! keys and host, the tool servers, the ledger, the token budget against the rendered
//! prompt (which needs the assembled context, ledger queries included).

use std::sync::Arc;

use serde_json::Value;

use crate::context;
use crate::error::Error;
use crate::exchange;
use crate::executor::memory::Memory;
use crate::executor::roles::{Role, RolePins};
use crate::executor::toolbox::Toolbox;
use crate::gateway::select;
use crate::id::Pin;
use crate::mcp::Servers;
use crate::project::Project;
use crate::render::CompiledPack;
use crate::resolve::ResolveOptions;
use crate::work_order::{Task, WorkOrder};

/// Every reason `run` would refuse `wo` before calling a model (empty: none of these).
pub fn check(project: &Project, wo: &WorkOrder, options: ResolveOptions) -> Vec<Error> {
    let mut errors = task(project, wo, options);
    if let Err(e) = select::check_choice(&project.config, &project.root, &wo.provider, wo.dir()) {
        errors.push(e);
    }
    errors
}

fn task(project: &Project, wo: &WorkOrder, options: ResolveOptions) -> Vec<Error> {
    match &wo.task {
        Task::Exchange { contract, input } => {
            exchange_call(project, wo, contract, input, options).err().into_iter().collect()
        }
        Task::Kernel { contracts, .. } => {
            let pins = match RolePins::from_map(contracts) {
                Ok(pins) => pins,
                Err(e) => return vec![e],
            };
            // Each contract once, in role order (roles may share one).
            let mut seen: Vec<Pin> = Vec::new();
            let mut errors = Vec::new();
            // With no server configured, the run's tools are known here: the toolbox a
            // kernel run builds first refuses an allow-list naming others.
            if project.config.tools.is_empty() && wo.tools.is_some() {
                let toolbox = Toolbox::new(
                    Arc::new(Memory::new()),
                    &[],
                    Servers::default(),
                    wo.tools.clone(),
                );
                if let Err(e) = toolbox.registry() {
                    errors.push(e);
                }
            }
            for role in Role::ALL {
                let pin = pins.pin(role);
                if seen.contains(&pin) {
                    continue;
                }
                if let Err(e) = project.resolve(&pin, options) {
                    errors.push(e);
                }
                seen.push(pin);
            }
            errors
        }
    }
}

/// The steps of an exchange's call before the provider is called, in the caller's order.
fn exchange_call(
    project: &Project,
    wo: &WorkOrder,
    pin: &Pin,
    input: &Value,
    options: ResolveOptions,
) -> Result<(), Error> {
    let resolved = project.resolve(pin, options)?;
    let validators = project.validators(&resolved.contract)?;
    exchange::check_input(&resolved.contract, &validators, input)?;
    context::check_refs(&project.root, &resolved.contract, wo.assembled_context.as_ref())?;
    CompiledPack::compile(&resolved.pack)?;
    Ok(())
}
