//! The work-order executor: runs an exchange work order (one contract, with supervisor
//! repair of invalid output) or a kernel work order (the orchestration loop, then Phase E)
//! and returns a [`RunResult`] — it never returns an error: every failure is in the result.
//!
//! Modules: [`call`] (one contract call through the gateway), [`budget`], [`roles`],
//! [`plan`], [`tools`], [`calculator`], [`memory`], [`supervisor`], [`kernel`];
//! [`files`] writes the files a provider returns; [`preflight`] finds what a run would
//! refuse before any call, without running (`pactum submit`).

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
pub mod judge;
pub mod kernel;
pub mod memory;
pub mod plan;
pub mod preflight;
pub mod roles;
pub mod supervisor;
pub mod toolbox;
pub mod tools;

use budget::Budget;
use call::{Caller, error_entries, error_json};
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
    /// The main failure's code and message (failed runs only, SPEC §12).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The exchange's contract, `ID@VERSION`; the pin as written (`ID@^1`) when it
    /// resolved to no version.
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
    /// The last exchange record the run wrote (`seq`, `hash`): a head to publish (SPEC §24).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordRef>,
}

/// A ledger record, by its place and hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecordRef {
    pub seq: u64,
    pub hash: String,
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
            code: None,
            message: None,
            contract: None,
            extraction: None,
            repair_attempts: 0,
            files: Vec::new(),
            cycles: None,
            ttl_remaining: None,
            supervisor_actions: Vec::new(),
            record: None,
        }
    }
}

/// Runs work orders of one project through one provider.
pub struct Runner<'a> {
    pub project: &'a Project,
    pub providers: crate::gateway::select::ProviderSet,
    /// Exchange records go here.
    pub ledger: Option<&'a Ledger>,
    /// Kernel cycle records go here (the ledger, or a separate `--log` file).
    pub cycle_log: Option<&'a Ledger>,
    pub allow_draft: bool,
}

/// The `repair_unavailable` warning for a work order that asks for repair attempts
/// (`constraints.max_repair_attempts > 0`, set by the work order itself) in a project
/// where the repair contract it would use resolves to no usable version (`pactum init
/// --kernel` installs it): the run would silently make no repair at all.
pub fn repair_unavailable(registry: &crate::registry::Registry, wo: &WorkOrder) -> Option<Warning> {
    if !wo.constraints.repair_asked {
        return None;
    }
    let id = Role::RepairJson.contract_id();
    let usable = crate::resolve::resolve(
        registry,
        crate::registry::EntryKind::Contract,
        id,
        &crate::id::Requirement::Latest,
        crate::resolve::ResolveOptions::default(),
    )
    .is_ok();
    (!usable).then(|| Warning {
        code: crate::Code::RepairUnavailable,
        message: format!(
            "{} asks for up to {} repair attempts, but the project has no usable {id} (the repair contract), so an invalid output is not repaired; install the kernel contracts (`pactum init --kernel`) or drop constraints.max_repair_attempts",
            wo.id, wo.constraints.max_repair_attempts
        ),
    })
}

impl Runner<'_> {
    /// Runs one work order. Never fails: errors are in the result.
    pub fn run(&self, wo: &WorkOrder) -> RunResult {
        self.run_with_tools(wo, &[])
    }

    /// Runs one work order; a kernel run may call `tools` next to the built-ins (`echo`,
    /// `calculator`, the memory tools), subject to the work order's `tools` allow-list. A
    /// tool whose name is taken, or whose schemas do not compile, fails the run before any
    /// call (`tool_failed`); Phase E still answers. See [`tools::FnTool`] for a tool made
    /// of a closure.
    pub fn run_with_tools(&self, wo: &WorkOrder, tools: &[Arc<dyn tools::Tool>]) -> RunResult {
        let budget = Budget::new(wo.constraints.token_budget);
        // The run's one tool registry (SPEC §23): its servers stop when it is dropped, at
        // the end of this function.
        let config = &self.project.config;
        let toolbox = Arc::new(toolbox::Toolbox::new(
            Arc::new(memory::Memory::new()),
            tools,
            crate::mcp::ServerSpec::from_config(
                &config.tools,
                &self.project.root,
                &config.env.tool_env,
                crate::authority::Trust::of(config),
            )
            .with_lock(&self.project.root),
            wo.tools.clone(),
        ));
        // The run is bracketed in the ledger (SPEC §10): `work_order_started` before any
        // call, `work_order_completed` or `work_order_failed` after the last. A ledger that
        // cannot take the first record stops the run before any model is called. Every
        // later record of the run names the start record (`work_order_started`), so each
        // says whose it is on its own, whatever file it is in and whatever runs beside it.
        let (started, blocked) = match record_event(self.ledger, "work_order_started", wo, |_| {}) {
            Ok(hash) => (hash, None),
            Err(e) => (None, Some(e)),
        };
        let caller =
            Caller::new(self.project, &self.providers, self.ledger, wo, &budget, self.allow_draft)
                .with_tools(toolbox.clone())
                .with_start_record(started.clone());
        let mut result = RunResult::new(wo, self.providers.selected().provider.as_ref());
        result.warnings.extend(repair_unavailable(&self.project.registry, wo));
        match &wo.task {
            Task::Exchange { contract, input } => match blocked {
                None => self.exchange(&caller, wo, contract, input, &mut result),
                Some(e) => result.errors.extend(error_entries(&e)),
            },
            Task::Kernel { request, contracts } => {
                self.kernel(&caller, wo, request, contracts, (&toolbox, blocked), &mut result)
            }
        }
        result.usage = caller.usage();
        result.record = caller.last_record().map(|(seq, hash)| RecordRef { seq, hash });
        if !result.ok {
            let main = result.errors.iter().find(|e| e.get("code").is_some());
            let code = main.and_then(|e| e.get("code")).and_then(Value::as_str);
            result.code = Some(code.unwrap_or(result.status.as_str()).to_string());
            let message = main.and_then(|e| {
                let message = e.get("message")?.as_str()?;
                Some(match e.get("pointer").and_then(Value::as_str) {
                    Some("") => format!("(root): {message}"),
                    Some(pointer) => format!("{pointer}: {message}"),
                    None => message.to_string(),
                })
            });
            result.message = Some(
                message.unwrap_or_else(|| format!("the run ended with status {}", result.status)),
            );
        }
        let mut warnings = caller.warnings();
        warnings.append(&mut result.warnings);
        result.warnings = warnings;
        let event = if result.ok { "work_order_completed" } else { "work_order_failed" };
        let ended = record_event(self.ledger, event, wo, |f| {
            caller.name_start_record(f);
            f.insert("status".into(), json!(result.status));
            for (key, value) in [("code", &result.code), ("message", &result.message)] {
                if let Some(v) = value {
                    f.insert(key.into(), json!(v));
                }
            }
            if !result.errors.is_empty() {
                f.insert("errors".into(), json!(result.errors));
            }
            if !result.warnings.is_empty() {
                f.insert("warnings".into(), json!(result.warnings));
            }
            f.insert("usage".into(), json!(result.usage));
        });
        if let Err(e) = ended {
            result.errors.extend(error_entries(&e));
            if result.ok {
                // A run whose outcome is not in the ledger is not a completed run.
                result.ok = false;
                result.status = "failed".into();
                result.code = Some(e.code().as_str().to_string());
                result.message = Some(e.to_string());
            }
        }
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
                // The headline names the contract whatever failed: the version the pin
                // resolves to (an input refused before the call), else the pin itself.
                result.contract = Some(
                    caller
                        .resolve(pin)
                        .map(|r| r.contract.key())
                        .unwrap_or_else(|_| pin.to_string()),
                );
                result.errors.extend(error_entries(&e));
                return;
            }
        };
        result.contract = Some(first.resolved.contract.key());
        result.provider = first.provider.clone();
        let outcome: Result<(Value, Option<Extracted>), Error> = match &first.output {
            Ok(out) => Ok((out.clone().into_value(), out.extraction().cloned())),
            // The model's reply was tool calls, not an answer: nothing to repair (SPEC §15).
            Err(e) if e.code() == crate::Code::DisclosureLimitExceeded => Err(clone_error(e)),
            Err(e) => match self.repair_exchange(caller, wo, &first, e, result) {
                Some(Ok(value)) => Ok((value, None)),
                Some(Err(unrecoverable)) => Err(unrecoverable),
                None => Err(clone_error(e)),
            },
        };
        // Semantic validation (SPEC §19), once the output passed the syntactic checks: the
        // work order's check, else the contract's.
        let check = wo.semantic_check.as_ref().or(first.resolved.contract.semantic_check.as_ref());
        let (outcome, reply) = match (outcome, check) {
            (Ok((value, extraction)), Some(check)) => {
                let previous = match &first.output {
                    Ok(_) => first.raw_text(),
                    // A repaired output: the repair's value is what the model is shown.
                    Err(_) => value.to_string(),
                };
                match self.semantic_check(caller, check, &first, input, (value, previous), result) {
                    Ok(checked) => {
                        let extraction = match &checked.reply {
                            Some(x) => x.output.as_ref().ok().and_then(|o| o.extraction().cloned()),
                            None => extraction,
                        };
                        (Ok((checked.output, extraction)), checked.reply)
                    }
                    Err(errors) => {
                        result.errors.extend(errors);
                        return;
                    }
                }
            }
            (outcome, _) => (outcome, None),
        };
        // The reply that stands carries the files (a re-asked one, when the first was
        // rejected).
        let answered = reply.as_ref().unwrap_or(&first);
        match outcome {
            Ok((value, extraction)) => {
                result.ok = true;
                result.status = "completed".into();
                result.output = Some(value);
                result.extraction = extraction;
                let handled = files::handle(
                    &self.project.root,
                    wo,
                    &answered.resolved.pack,
                    &answered.response.body,
                );
                result.files = handled.written;
                result.warnings.extend(handled.warnings);
                if !handled.errors.is_empty() {
                    result.ok = false;
                    result.status = "failed".into();
                    result.errors.extend(handled.errors);
                }
            }
            Err(e) => result.errors.extend(error_entries(&e)),
        }
    }

    /// The semantic check of an exchange's output (SPEC §19): re-asks of `on_fail: retry`
    /// go to the version that answered first, on the same input, and share
    /// `max_repair_attempts` with the supervisor's repairs. `Err`: the run's errors.
    fn semantic_check(
        &self,
        caller: &Caller<'_>,
        check: &crate::judge::SemanticCheck,
        first: &call::Exchanged,
        input: &Value,
        answer: (Value, String),
        result: &mut RunResult,
    ) -> Result<judge::Checked, Vec<Value>> {
        let pin = exact(&first.resolved.contract);
        let left = caller
            .work_order
            .constraints
            .max_repair_attempts
            .saturating_sub(result.repair_attempts);
        let used = result.repair_attempts;
        let checked = judge::enforce(caller, check, input, answer, left, &mut |attempt, reask| {
            caller.call_again(&pin, input, used + attempt, None, reask)
        });
        let retries = match &checked {
            Ok(c) => c.retries,
            Err(r) => r.retries,
        };
        result.repair_attempts += retries;
        match checked {
            Ok(checked) => {
                result.warnings.extend(checked.warning.clone());
                Ok(checked)
            }
            Err(refused) => Err(refused.errors),
        }
    }

    /// Supervisor repair of an invalid exchange output through the repair-JSON contract,
    /// when one is registered and the work order allows attempts. `None`: no repair tried.
    fn repair_exchange(
        &self,
        caller: &Caller<'_>,
        wo: &WorkOrder,
        first: &call::Exchanged,
        error: &Error,
        result: &mut RunResult,
    ) -> Option<Result<Value, Error>> {
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
        if wo.constraints.max_repair_attempts == 0 || !registered {
            return None;
        }
        let target = caller.target(&first.resolved).ok()?;
        let problem = first.malformed_json(&target);
        let mut attempts = 0;
        let mut actions = Vec::new();
        let repaired = supervisor::repair(
            &problem,
            &first.raw_text(),
            supervisor::error_messages(error),
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
                    .map(|o| o.clone().into_value())
                    .map_err(supervisor::error_messages)
            },
            &mut actions,
        );
        result.repair_attempts = attempts;
        result.supervisor_actions = actions;
        Some(repaired)
    }

    fn kernel(
        &self,
        caller: &Caller<'_>,
        wo: &WorkOrder,
        request: &str,
        contracts: &std::collections::BTreeMap<String, Pin>,
        (toolbox, blocked): (&toolbox::Toolbox, Option<Error>),
        result: &mut RunResult,
    ) {
        let started = crate::registry::lifecycle::now();
        // A run the ledger refused calls no model, not even for Phase E.
        let refused = blocked.as_ref().map(|e| format!("run_not_recorded: {} ({e})", e.code()));
        let setup = RolePins::from_map(contracts).and_then(|pins| {
            if let Some(e) = blocked {
                return Err(e);
            }
            // A kernel's plan sees every tool: the servers start here (those the
            // environment confirmed: the others are a warning, their tools unknown).
            Ok((pins, toolbox.registry()?))
        });
        result.warnings.extend(toolbox.withheld().iter().map(|w| Warning {
            code: crate::Code::ConfigUnconfirmed,
            message: format!("tool server `{}` did not start: {}", w.name, w.message()),
        }));
        let empty = tools::ToolRegistry::empty();
        // A kernel that cannot start (a tool server that failed, an unknown tool) ran
        // nothing: Phase E answers with why, and asks no model to sum up a run that
        // never was.
        let not_started =
            setup.as_ref().err().map(|e| format!("the run could not start: {}: {e}", e.code()));
        let (pins, registry, setup_error) = match setup {
            Ok((pins, registry)) => (pins, registry, None),
            Err(e) => (RolePins::default(), &empty, Some(e)),
        };
        let k = kernel::Kernel {
            caller,
            tools: registry,
            pins: &pins,
            log: self.cycle_log,
            max_repairs: wo.constraints.max_repair_attempts,
            request,
        };
        let (mut st, stop) = match setup_error {
            None => k.run(wo.constraints.ttl),
            // A work order the kernel cannot start (an unknown tool in `tools`, a ledger
            // that refused the start record) fails; Phase E still answers.
            Some(e) => {
                let stop = kernel::Stop::Halted(e);
                let st = kernel::State {
                    ttl: wo.constraints.ttl,
                    errors: stop.errors(0),
                    ..Default::default()
                };
                (st, stop)
            }
        };
        // A cycle log that could not take a record stops the run, and no model is called
        // after it, not even for Phase E.
        let refused = refused.or(not_started).or_else(|| {
            st.log_broken.then(|| match &stop {
                kernel::Stop::Halted(e) => format!("cycle_not_recorded: {} ({e})", e.code()),
                _ => "cycle_not_recorded".to_string(),
            })
        });
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
        // The Phase E record says why the loop stopped (the cycle that failed logged its own
        // error; the stop itself is logged here) and whether the answer is degraded.
        let mut phase_e =
            kernel::PhaseECall { errors: stop.errors(st.cycles), ..Default::default() };
        // The model's answer, kept for the semantic check: the synthesis input, the exact
        // version that answered, its own check, its output and raw reply.
        let mut answered = None;
        let mut answer = match &refused {
            Some(reason) => {
                synthesis::degraded(&input, reason, &input.missing_optional(), ttl_exhausted)
            }
            None => synthesis::synthesize(&input, ttl_exhausted, &mut |value| {
                let x = caller
                    .call(&pins.pin(Role::Synthesis), value, None, 0, Some(Role::Synthesis.name()))
                    .inspect_err(|e| phase_e.errors.push(error_json(e)))?;
                phase_e.llm_output = json!(x.raw_text());
                phase_e.usage = x.response.usage;
                phase_e.latency_ms = x.response.latency.as_millis() as u64;
                let output = x
                    .output
                    .as_ref()
                    .map(|out| out.clone().into_value())
                    .map_err(clone_error)
                    .inspect_err(|e| phase_e.errors.push(error_json(e)))?;
                answered = Some(Answered {
                    input: value.clone(),
                    pin: exact(&x.resolved.contract),
                    check: x.resolved.contract.semantic_check.clone(),
                    output: output.clone(),
                    raw: x.raw_text(),
                });
                Ok(output)
            }),
        };
        // Semantic validation of the answer (SPEC §19): the work order's check, else the
        // synthesis contract's, on the model's answer (a degraded answer pactum built
        // itself is not judged). Re-asks repeat the synthesis call.
        let mut semantic_errors = Vec::new();
        if let Some(a) = answered.filter(|a| FinalAnswer::from_value(&a.output).is_ok())
            && let Some(check) = wo.semantic_check.as_ref().or(a.check.as_ref())
        {
            let checked = judge::enforce(
                caller,
                check,
                &a.input,
                (a.output, a.raw),
                wo.constraints.max_repair_attempts,
                &mut |attempt, reask| {
                    caller.call_again(
                        &a.pin,
                        &a.input,
                        attempt,
                        Some(Role::Synthesis.name()),
                        reask,
                    )
                },
            );
            match checked {
                Ok(checked) => {
                    st.warnings.extend(checked.warning);
                    st.semantic_retries = checked.retries;
                    if let Some(x) = checked.reply {
                        phase_e.llm_output = json!(x.raw_text());
                        phase_e.usage = x.response.usage;
                        phase_e.latency_ms = x.response.latency.as_millis() as u64;
                        let output = checked.output;
                        answer = synthesis::synthesize(&input, ttl_exhausted, &mut |_| {
                            Ok(output.clone())
                        });
                    }
                }
                Err(refused) => {
                    st.semantic_retries = refused.retries;
                    phase_e.errors.extend(refused.errors.iter().cloned());
                    semantic_errors = refused.errors;
                }
            }
        }
        if answer.is_degraded() {
            phase_e.degraded_reason = answer.metadata.get("reason").cloned();
        }
        // The Phase E record goes to a log that took every cycle before it; a log that
        // cannot take it fails the run (never a silent loss).
        let unlogged = if st.log_broken { None } else { k.log_phase_e(&mut st, phase_e).err() };
        if let Some(e) = &unlogged {
            st.errors.push(error_json(e));
        }
        result.errors.append(&mut st.errors);
        let rejected = !semantic_errors.is_empty();
        // A rejected answer comes first: it is why the run failed.
        result.errors.splice(0..0, semantic_errors);
        result.status = if unlogged.is_some() || rejected { "failed" } else { status }.to_string();
        result.ok = status == "converged" && unlogged.is_none() && !rejected;
        result.cycles = Some(st.cycles);
        result.ttl_remaining = Some(st.ttl);
        result.supervisor_actions = std::mem::take(&mut st.supervisor_actions);
        result.files = std::mem::take(&mut st.files);
        result.warnings.append(&mut st.warnings);
        result.repair_attempts = result.supervisor_actions.len() as u32 + st.semantic_retries;
        result.final_answer = Some(answer);
    }
}

/// A synthesis call that answered, for the semantic check of the final answer.
struct Answered {
    input: Value,
    pin: Pin,
    check: Option<crate::judge::SemanticCheck>,
    output: Value,
    raw: String,
}

/// The exact pin of a contract's version.
fn exact(contract: &crate::contract::Contract) -> Pin {
    Pin {
        id: contract.id.clone(),
        requirement: crate::id::Requirement::Exact(contract.version.clone()),
    }
}

/// Appends a `work_order` record with `event` for `wo` (its id, kind, session, agent and
/// tier), plus what `fill` adds; the record's hash (none without a ledger).
fn record_event(
    ledger: Option<&Ledger>,
    event: &str,
    wo: &WorkOrder,
    fill: impl FnOnce(&mut serde_json::Map<String, Value>),
) -> Result<Option<String>, Error> {
    let Some(ledger) = ledger else { return Ok(None) };
    let mut fields = serde_json::Map::new();
    fields.insert("event".into(), json!(event));
    fields.insert("work_order_id".into(), json!(wo.id));
    fields.insert(
        "work_order_kind".into(),
        json!(if wo.is_kernel() { "kernel" } else { "exchange" }),
    );
    call::who(&mut fields, wo, None);
    fill(&mut fields);
    let record = ledger.append(crate::ledger::Kind::WorkOrder, fields)?;
    Ok(record.get("hash").and_then(Value::as_str).map(str::to_string))
}

/// Records a work order that could not run at all — its file did not load, or no provider
/// could be set up — as a `work_order_failed` record naming the file (SPEC §10: failures
/// before resolution are in the ledger too).
pub fn record_unrun(
    ledger: &Ledger,
    file: &str,
    wo: Option<&WorkOrder>,
    error: &Error,
) -> Result<(), Error> {
    let mut fields = serde_json::Map::new();
    fields.insert("event".into(), json!("work_order_failed"));
    fields.insert("work_order_id".into(), json!(wo.map(|w| w.id.clone())));
    fields.insert("work_order_file".into(), json!(file));
    if let Some(wo) = wo {
        call::who(&mut fields, wo, None);
    }
    fields.insert("status".into(), json!("failed"));
    fields.insert("code".into(), json!(error.code()));
    fields.insert("message".into(), json!(error.to_string()));
    fields.insert("errors".into(), json!(error_entries(error)));
    ledger.append(crate::ledger::Kind::WorkOrder, fields).map(drop)
}

/// A copy of an output failure (output errors hold no I/O sources, so nothing is lost).
pub(crate) fn clone_error(e: &Error) -> Error {
    match e {
        Error::ExtractionFailed { methods_tried, detail } => {
            Error::ExtractionFailed { methods_tried: methods_tried.clone(), detail: detail.clone() }
        }
        Error::OutputTruncated { methods_tried } => {
            Error::OutputTruncated { methods_tried: methods_tried.clone() }
        }
        Error::DisclosureLimitExceeded { max, tool } => {
            Error::DisclosureLimitExceeded { max: *max, tool: tool.clone() }
        }
        Error::OutputSchemaInvalid { contract, value, findings } => Error::OutputSchemaInvalid {
            contract: contract.clone(),
            value: value.clone(),
            findings: findings.clone(),
        },
        other => Error::SupervisorUnrecoverable {
            what: "the output".into(),
            attempts: 0,
            last_error: other.to_string(),
        },
    }
}
