//! The work-order executor: runs an exchange work order (one contract, with supervisor
//! repair of invalid output) or a kernel work order (the orchestration loop, then Phase E)
//! and returns a [`RunResult`] — it never returns an error: every failure is in the result.
//!
//! Modules: [`call`] (one contract call through the gateway), [`budget`], [`roles`],
//! [`plan`], [`tools`], [`calculator`], [`memory`], [`supervisor`], [`kernel`];
//! [`files`] writes the files a provider returns.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::Error;
use crate::extract::Extracted;
use crate::gateway::{Provider, Usage};
use crate::id::Pin;
use crate::ledger::Ledger;
use crate::project::Project;
use crate::resolve::Warning;
use crate::synthesis::{self, FinalAnswer, PhaseEInput};
use crate::work_order::{Task, WorkOrder};

pub mod budget;
pub mod calculator;
pub mod call;
pub mod files;
pub mod kernel;
pub mod memory;
pub mod plan;
pub mod roles;
pub mod supervisor;
pub mod tools;

use budget::Budget;
use call::{Caller, error_json};
use roles::{Role, RolePins};

/// What a run produced (SPEC §12 `run` shape, plus provenance).
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub ok: bool,
    pub work_order_id: String,
    pub kind: &'static str,
    /// exchange: `completed` | `failed`; kernel: `converged` | `ttl_expired` |
    /// `budget_exceeded` | `unrecoverable` | `failed`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_answer: Option<FinalAnswer>,
    pub usage: Usage,
    pub errors: Vec<Value>,
    pub warnings: Vec<Warning>,
    pub provider: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extraction: Option<Extracted>,
    pub repair_attempts: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_remaining: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supervisor_actions: Vec<supervisor::Action>,
}

impl RunResult {
    fn new(wo: &WorkOrder, provider: &dyn Provider) -> RunResult {
        RunResult {
            ok: false,
            work_order_id: wo.id.clone(),
            kind: if wo.is_kernel() { "kernel" } else { "exchange" },
            status: "failed".into(),
            output: None,
            final_answer: None,
            usage: Usage::default(),
            errors: Vec::new(),
            warnings: Vec::new(),
            provider: provider.name().to_string(),
            contract: None,
            extraction: None,
            repair_attempts: 0,
            files: Vec::new(),
            cycles: None,
            ttl_remaining: None,
            supervisor_actions: Vec::new(),
        }
    }

    /// The code of the first error (the run's main failure).
    pub fn code(&self) -> Option<&str> {
        self.errors.iter().find_map(|e| e.get("code").and_then(Value::as_str))
    }
}

/// Runs work orders of one project through one provider.
pub struct Runner<'a> {
    pub project: &'a Project,
    pub provider: Arc<dyn Provider>,
    /// Exchange records go here.
    pub ledger: Option<&'a Ledger>,
    /// Kernel cycle records go here (the ledger, or a separate `--log` file).
    pub cycle_log: Option<&'a Ledger>,
    pub allow_draft: bool,
}

impl Runner<'_> {
    /// Runs one work order. Never fails: errors are in the result.
    pub fn run(&self, wo: &WorkOrder) -> RunResult {
        let budget = Budget::new(wo.constraints.token_budget);
        let caller = Caller::new(
            self.project,
            self.provider.as_ref(),
            self.ledger,
            wo,
            &budget,
            self.allow_draft,
        );
        let mut result = RunResult::new(wo, self.provider.as_ref());
        match &wo.task {
            Task::Exchange { contract, input } => {
                self.exchange(&caller, wo, contract, input, &mut result)
            }
            Task::Kernel { request, contracts, tools } => {
                self.kernel(&caller, wo, request, contracts, tools.as_deref(), &mut result)
            }
        }
        result.usage = caller.usage();
        let mut warnings = caller.warnings();
        warnings.append(&mut result.warnings);
        result.warnings = warnings;
        result
    }

    fn exchange(
        &self,
        caller: &Caller<'_>,
        wo: &WorkOrder,
        pin: &Pin,
        input: &Value,
        result: &mut RunResult,
    ) {
        let first = match caller.call(pin, input, None, 0, None) {
            Ok(x) => x,
            Err(e) => {
                result.errors.push(error_json(&e));
                return;
            }
        };
        result.contract = Some(first.resolved.contract.key());
        let mut outcome =
            first.output.as_ref().map(|o| o.clone()).map_err(supervisor::error_messages);
        let mut last_error = first.output.as_ref().err().map(error_json);
        let response = first.response.clone();
        if let (Err(errors), Ok(target)) = (&outcome, caller.target(&first.resolved)) {
            let repair_pin = Pin {
                id: Role::RepairJson.contract_id().to_string(),
                requirement: crate::id::Requirement::Latest,
            };
            let registered = self
                .project
                .registry
                .versions(crate::registry::EntryKind::Contract, &repair_pin.id)
                .next()
                .is_some();
            if wo.constraints.max_repair_attempts > 0 && registered {
                let problem = supervisor::Problem::MalformedJson {
                    contract_id: first.resolved.contract.key(),
                    output_schema: target
                        .contract
                        .output_schema
                        .clone()
                        .unwrap_or(Value::Bool(true)),
                };
                let mut attempts = 0;
                let mut actions = Vec::new();
                let repaired = supervisor::repair(
                    &problem,
                    &first.raw_text(),
                    errors.clone(),
                    wo.constraints.max_repair_attempts,
                    &mut |_, input, attempt| {
                        attempts = attempt;
                        caller.call(
                            &repair_pin,
                            input,
                            Some(&target),
                            attempt,
                            Some(Role::RepairJson.name()),
                        )
                    },
                    &|x| {
                        x.output
                            .as_ref()
                            .map(|o| json!(o.value))
                            .map_err(supervisor::error_messages)
                    },
                    &mut actions,
                );
                result.repair_attempts = attempts;
                result.supervisor_actions = actions;
                match repaired {
                    Ok(value) => {
                        outcome = Ok(crate::exchange::Output {
                            value: Some(value),
                            text: String::new(),
                            extraction: None,
                        });
                        last_error = None;
                    }
                    Err(e) => last_error = Some(error_json(&e)),
                }
            }
        }
        match outcome {
            Ok(out) => {
                result.ok = true;
                result.status = "completed".into();
                result.extraction = out.extraction.clone();
                result.output = Some(out.value.clone().unwrap_or(Value::String(out.text.clone())));
                let handled = files::handle(wo, &first.resolved.pack, &response.body);
                result.files = handled.written;
                result.warnings.extend(handled.warnings);
                if !handled.errors.is_empty() {
                    result.ok = false;
                    result.status = "failed".into();
                    result.errors.extend(handled.errors);
                }
            }
            Err(_) => {
                if let Some(e) = last_error {
                    result.errors.push(e);
                }
            }
        }
    }

    fn kernel(
        &self,
        caller: &Caller<'_>,
        wo: &WorkOrder,
        request: &str,
        contracts: &std::collections::BTreeMap<String, Pin>,
        allowed: Option<&[String]>,
        result: &mut RunResult,
    ) {
        let started = crate::registry::lifecycle::now();
        let memory = Arc::new(memory::Memory::new());
        let setup = RolePins::from_map(contracts).and_then(|pins| {
            let registry = tools::ToolRegistry::builtin(memory.clone());
            let registry = match allowed {
                Some(list) => registry.restrict(list)?,
                None => registry,
            };
            Ok((pins, registry))
        });
        let (pins, registry) = match setup {
            Ok(x) => x,
            Err(e) => {
                result.errors.push(error_json(&e));
                (RolePins::default(), tools::ToolRegistry::empty())
            }
        };
        let k = kernel::Kernel {
            caller,
            tools: &registry,
            pins: &pins,
            log: self.cycle_log,
            max_repairs: wo.constraints.max_repair_attempts,
            request,
        };
        let (mut st, stop) = if result.errors.is_empty() {
            k.run(wo.constraints.ttl)
        } else {
            let e = Error::SupervisorUnrecoverable {
                what: "the work order".into(),
                attempts: 0,
                last_error: "setup failed".into(),
            };
            (
                kernel::State { ttl: wo.constraints.ttl, ..Default::default() },
                kernel::Stop::Halted(e),
            )
        };
        let status = stop.status();
        let ttl_exhausted =
            matches!(stop, kernel::Stop::TtlExpired) || (st.ttl == 0 && status != "converged");
        let input = PhaseEInput {
            request: Some(request.to_string()),
            correlation_id: Some(format!(
                "{}-{}",
                wo.id,
                &crate::digest::sha256_hex(started.as_bytes())[..12]
            )),
            execution_start_timestamp: Some(started),
            convergence_status: Some(status.to_string()),
            total_passes: Some(u64::from(st.passes)),
            total_refinements: Some(u64::from(st.refinements)),
            ttl_remaining: Some(u64::from(st.ttl)),
            plan_state: st.plan.as_ref().map(plan::Plan::to_value),
            execution_results: st.plan.as_ref().map(plan::Plan::results),
            convergence_assessment: st.convergence.clone(),
            execution_passes: (!st.execution_passes.is_empty()).then(|| json!(st.execution_passes)),
            semantic_validation: st.semantic_validation.clone(),
            task_profile: st.task_profile.clone(),
        };
        let mut llm_output = Value::Null;
        let mut phase_e_errors = Vec::new();
        let answer = synthesis::synthesize(&input, ttl_exhausted, &mut |value| {
            let x = caller.call(
                &pins.pin(Role::Synthesis),
                value,
                None,
                0,
                Some(Role::Synthesis.name()),
            )?;
            llm_output = json!(x.raw_text());
            match x.output {
                Ok(out) => Ok(out.value.unwrap_or(Value::Null)),
                Err(e) => Err(e),
            }
        });
        if answer.is_degraded()
            && let Some(reason) = answer.metadata.get("reason")
        {
            phase_e_errors.push(json!({"degraded": reason}));
        }
        k.log_phase_e(&mut st, llm_output, phase_e_errors);
        result.errors.append(&mut st.errors);
        result.status = status.to_string();
        result.ok = status == "converged";
        result.cycles = Some(st.cycles);
        result.ttl_remaining = Some(st.ttl);
        result.supervisor_actions = std::mem::take(&mut st.supervisor_actions);
        result.final_answer = Some(answer);
    }
}
