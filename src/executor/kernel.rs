//! The kernel loop (SPEC §8.1). Per pass: A task profile → B plan (refinement after the
//! first pass) → C the plan's steps, in order → semantic validation → D convergence. More
//! passes until converged, the TTL or the budget is spent, or an error cannot be recovered;
//! the executor then runs Phase E ([`crate::synthesis`]), always.
//!
//! This module only wires: prompts live in packs, tools in [`super::tools`], memory in
//! [`super::memory`], repairs in [`super::supervisor`], the final answer in
//! [`crate::synthesis`].
//!
//! **Architecture invariant:** the TTL drops by one after every LLM cycle (repairs
//! included) and nothing calls a model once it is zero; steps run strictly in plan order
//! and their statuses move only `pending → running → complete | failed`.

use serde_json::{Map, Value, json};

use crate::error::{Code, Error};
use crate::executor::call::{Caller, Exchanged, Target, error_json};
use crate::executor::plan::{Plan, Status, Step};
use crate::executor::roles::{Role, RolePins};
use crate::executor::supervisor::{self, Action, Problem};
use crate::executor::tools::ToolRegistry;
use crate::extract::{ExtractOptions, extract};
use crate::ledger::Ledger;

/// Why the loop stopped.
#[derive(Debug)]
pub enum Stop {
    Converged,
    TtlExpired,
    /// Budget spent, provider down, an unrecoverable output, or any other failure.
    Halted(Error),
}

impl Stop {
    /// The `convergence_status` Phase E and the run result report.
    pub fn status(&self) -> &'static str {
        match self {
            Stop::Converged => "converged",
            Stop::TtlExpired => "ttl_expired",
            Stop::Halted(e) => match e.code() {
                Code::BudgetExceeded => "budget_exceeded",
                Code::SupervisorUnrecoverable => "unrecoverable",
                _ => "failed",
            },
        }
    }

    /// Why the loop stopped, as error entries: none when it converged.
    pub fn errors(&self, cycles: u32) -> Vec<Value> {
        match self {
            Stop::Converged => Vec::new(),
            Stop::TtlExpired => vec![error_json(&Error::TtlExpired { cycles })],
            Stop::Halted(e) => vec![error_json(e)],
        }
    }
}

/// Everything the loop knows when it stops.
#[derive(Debug, Default)]
pub struct State {
    pub ttl: u32,
    pub cycles: u32,
    pub passes: u32,
    pub refinements: u32,
    pub plan: Option<Plan>,
    pub task_profile: Option<Value>,
    pub semantic_validation: Option<Value>,
    pub convergence: Option<Value>,
    pub execution_passes: Vec<Value>,
    pub errors: Vec<Value>,
    pub supervisor_actions: Vec<Action>,
    /// Tool calls not yet logged with a cycle.
    pub pending_tool_calls: Vec<Value>,
    /// Cycle records written (numbers them).
    pub records: u32,
    /// Set when a cycle record could not be written: the loop stopped there, and nothing
    /// more is called (no cycle goes unrecorded).
    pub log_broken: bool,
    /// Files provider results wrote under the output folder (SPEC §8.5).
    pub files: Vec<String>,
    /// `expected_output_missing` warnings of those results (and `semantic_rejected` of an
    /// answer kept by `on_fail: accept`).
    pub warnings: Vec<crate::resolve::Warning>,
    /// Re-asks the semantic check of the final answer made.
    pub semantic_retries: u32,
}

/// What the Phase E call did, for its cycle record.
#[derive(Debug, Default)]
pub struct PhaseECall {
    pub llm_output: Value,
    /// Why the loop stopped (see [`Stop::errors`]).
    pub errors: Vec<Value>,
    /// Set when Phase E built a degraded answer: the answer's `metadata.reason`.
    pub degraded_reason: Option<Value>,
    pub usage: Option<crate::gateway::Usage>,
    pub latency_ms: u64,
}

/// One kernel run.
pub struct Kernel<'a> {
    pub caller: &'a Caller<'a>,
    pub tools: &'a ToolRegistry,
    pub pins: &'a RolePins,
    /// Where cycle records go (the ledger, or `--log FILE`).
    pub log: Option<&'a Ledger>,
    pub max_repairs: u32,
    pub request: &'a str,
}

type Flow<T> = Result<T, Stop>;

impl Kernel<'_> {
    /// Runs passes until the loop stops; returns the state and why it stopped.
    pub fn run(&self, ttl: u32) -> (State, Stop) {
        let mut st = State { ttl, ..State::default() };
        let stop = loop {
            match self.pass(&mut st) {
                Ok(true) => break Stop::Converged,
                Ok(false) => {}
                Err(stop) => break stop,
            }
        };
        st.errors.extend(stop.errors(st.cycles));
        (st, stop)
    }

    /// One pass; `Ok(true)` when it converged.
    fn pass(&self, st: &mut State) -> Flow<bool> {
        self.live(st)?;
        st.passes += 1;
        let first = st.passes == 1;
        // A: task profile.
        let (role, input) = if first {
            (Role::TaskProfile, json!({"request": self.request}))
        } else {
            (
                Role::TaskProfileUpdate,
                json!({"request": self.request, "task_profile": st.task_profile, "convergence_assessment": st.convergence}),
            )
        };
        let profile = self.cycle(st, "A", role, &input, None, 0)?;
        st.task_profile = Some(text_of(&profile));
        // B: plan, or refinement of the previous plan.
        let (role, input) = if first {
            (
                Role::Plan,
                json!({"request": self.request, "task_profile": st.task_profile, "tools": self.tools.describe()}),
            )
        } else {
            (
                Role::Refinement,
                json!({"request": self.request, "previous_plan": st.plan.as_ref().map(Plan::to_value),
                       "execution_results": st.plan.as_ref().map(Plan::results),
                       "convergence_assessment": st.convergence, "tools": self.tools.describe()}),
            )
        };
        let mut plan = self.ask_plan(st, role, &input)?;
        if !first {
            st.refinements += 1;
        }
        if let Some(previous) = &st.plan {
            plan.carry_over(previous);
        }
        st.plan = Some(plan);
        // C: steps, strictly in order.
        let mut ran = Vec::new();
        while let Some(i) = st.plan.as_ref().and_then(Plan::next_pending) {
            self.live(st)?;
            // The plan shows the step running while it runs (the cycle log sees it).
            let Some(mut step) = st.plan.as_mut().map(|p| {
                let _ = p.steps[i].start();
                p.steps[i].clone()
            }) else {
                break;
            };
            let outcome = self.run_step(st, &mut step, true);
            ran.push(step.step_id.clone());
            if let Err(stop) = &outcome
                && step.status == Status::Running
            {
                let _ = step.fail(format!("the loop stopped during this step ({})", stop.status()));
            }
            if let Some(plan) = st.plan.as_mut() {
                plan.steps[i] = step;
            }
            outcome?;
        }
        let plan_state = st.plan.as_ref().map(Plan::to_value);
        let results = st.plan.as_ref().map(Plan::results);
        // Semantic validation, then D: convergence.
        let input = json!({"request": self.request, "plan_state": plan_state, "execution_results": results});
        let semantic = self.cycle(st, "C", Role::SemanticValidation, &input, None, 0)?;
        st.semantic_validation = Some(text_of(&semantic));
        let input = json!({"request": self.request, "plan_state": plan_state, "execution_results": results,
                           "semantic_validation": st.semantic_validation});
        let assessment = self.ask_json(st, "D", Role::Convergence, &input)?;
        let converged = assessment.get("converged").and_then(Value::as_bool) == Some(true);
        st.convergence = Some(assessment);
        let failed = st
            .plan
            .as_ref()
            .map_or(0, |p| p.steps.iter().filter(|s| s.status == Status::Failed).count());
        st.execution_passes.push(json!({"pass": st.passes, "steps_run": ran, "failed_steps": failed, "converged": converged}));
        Ok(converged)
    }

    /// Stops the loop when the TTL is spent.
    fn live(&self, st: &State) -> Flow<()> {
        if st.ttl == 0 { Err(Stop::TtlExpired) } else { Ok(()) }
    }

    /// One LLM cycle: the call, the TTL, the cycle record.
    fn cycle(
        &self,
        st: &mut State,
        phase: &str,
        role: Role,
        input: &Value,
        target: Option<&Target>,
        repair: u32,
    ) -> Flow<Exchanged> {
        self.live(st)?;
        let input = self.with_limits(st, role, input);
        let result =
            self.caller.call(&self.pins.pin(role), &input, target, repair, Some(role.name()));
        let reached_model = match &result {
            Ok(_) => true,
            Err(e) => {
                (e.code().as_str().starts_with("provider_")
                    && e.code() != Code::ProviderNotConfigured)
                    || matches!(
                        e.code(),
                        Code::ReplayMiss | Code::ScriptExhausted | Code::ScriptPromptMismatch
                    )
            }
        };
        if reached_model {
            st.ttl -= 1;
            st.cycles += 1;
        }
        if let Err(e) = self.log_cycle(st, phase, role, &result, repair) {
            // A cycle the log cannot take stops the run (SPEC §8.6: every cycle is logged).
            if let Err(call) = &result {
                st.errors.push(error_json(call));
            }
            st.log_broken = true;
            return Err(Stop::Halted(e));
        }
        // Files a provider result carries are written as in an exchange (SPEC §8.5).
        if let Ok(x) = &result {
            let c = self.caller;
            let handled = super::files::handle(
                &c.project.root,
                c.work_order,
                &x.resolved.pack,
                &x.response.body,
            );
            st.files.extend(handled.written);
            for w in handled.warnings {
                if !st.warnings.contains(&w) {
                    st.warnings.push(w);
                }
            }
            st.errors.extend(handled.errors);
        }
        // Output failures stay in the exchange for the supervisor; anything else stops.
        result.map_err(Stop::Halted)
    }

    /// `input` plus the run's limits — `ttl_remaining` (LLM cycles left, this one included)
    /// and `budget_remaining` (tokens left; only when the work order sets `token_budget`) —
    /// each given only to a role contract whose `input_schema` declares it. The shipped
    /// role contracts declare both from 1.1.0 and their packs show them to the model; a
    /// contract from before (or a user's own role contract) that does not declare them is
    /// called exactly as before, since it may refuse unknown inputs.
    fn with_limits(&self, st: &State, role: Role, input: &Value) -> Value {
        let Value::Object(fields) = input else { return input.clone() };
        let Ok(resolved) = self.caller.resolve(&self.pins.pin(role)) else {
            return input.clone();
        };
        let declared = |key: &str| {
            let properties =
                resolved.contract.input_schema.as_ref().and_then(|s| s.get("properties"));
            properties.and_then(|p| p.get(key)).is_some()
        };
        let mut fields = fields.clone();
        if declared("ttl_remaining") {
            fields.insert("ttl_remaining".into(), json!(st.ttl));
        }
        if let Some(left) = self.caller.budget.remaining()
            && declared("budget_remaining")
        {
            fields.insert("budget_remaining".into(), json!(left));
        }
        Value::Object(fields)
    }

    /// A JSON role's output, repaired by the supervisor when it is malformed or off-schema.
    fn ask_json(&self, st: &mut State, phase: &str, role: Role, input: &Value) -> Flow<Value> {
        let first = self.cycle(st, phase, role, input, None, 0)?;
        let target = self.caller.target(&first.resolved).map_err(Stop::Halted)?;
        match first.json() {
            Ok(value) => Ok(value),
            Err(errors) => {
                let problem = first.malformed_json(&target);
                self.repair(st, phase, &problem, (&first.raw_text(), errors), &target, &|x| {
                    x.json()
                })
            }
        }
    }

    /// A plan (or refinement): repaired as JSON when malformed, as a plan when off-schema.
    fn ask_plan(&self, st: &mut State, role: Role, input: &Value) -> Flow<Plan> {
        let first = self.cycle(st, "B", role, input, None, 0)?;
        let target = self.caller.target(&first.resolved).map_err(Stop::Halted)?;
        let accept = |x: &Exchanged| -> Result<Value, Vec<String>> {
            let value = x.json()?;
            Plan::from_model(&value).map(|_| value).map_err(|e| vec![e])
        };
        let value = match accept(&first) {
            Ok(v) => v,
            Err(errors) => {
                let malformed =
                    matches!(&first.output, Err(e) if e.code() != Code::OutputSchemaInvalid);
                let problem = if malformed {
                    first.malformed_json(&target)
                } else {
                    Problem::InvalidPlan {
                        request: self.request.to_string(),
                        plan_schema: target.output_schema(),
                        tools: self.tools.describe(),
                    }
                };
                self.repair(st, "B", &problem, (&first.raw_text(), errors), &target, &accept)?
            }
        };
        Plan::from_model(&value).map_err(|e| {
            Stop::Halted(Error::SupervisorUnrecoverable {
                what: "the plan".into(),
                attempts: 0,
                last_error: e,
            })
        })
    }

    fn repair(
        &self,
        st: &mut State,
        phase: &str,
        problem: &Problem,
        (bad, errors): (&str, Vec<String>),
        target: &Target,
        accept: &dyn Fn(&Exchanged) -> Result<Value, Vec<String>>,
    ) -> Flow<Value> {
        let mut actions = Vec::new();
        let result = {
            let mut cycle = |role: Role, input: &Value, attempt: u32| {
                self.cycle(st, phase, role, input, Some(target), attempt).map_err(|stop| match stop
                {
                    Stop::Halted(e) => e,
                    Stop::TtlExpired => Error::TtlExpired { cycles: 0 },
                    Stop::Converged => Error::TtlExpired { cycles: 0 },
                })
            };
            supervisor::repair(
                problem,
                bad,
                errors,
                self.max_repairs,
                &mut cycle,
                accept,
                &mut actions,
            )
        };
        st.supervisor_actions.extend(actions);
        result.map_err(|e| {
            if e.code() == Code::TtlExpired { Stop::TtlExpired } else { Stop::Halted(e) }
        })
    }

    /// Runs one step (and, at the top level, its substeps when it asks to be decomposed).
    fn run_step(&self, st: &mut State, step: &mut Step, top: bool) -> Flow<()> {
        if step.status != Status::Running {
            step.start().map_err(|t| Stop::Halted(bad_transition(&t)))?;
        }
        if step.decompose && top {
            let input = json!({"request": self.request, "goal": self.goal(st), "step": {"step_id": step.step_id, "description": step.description}});
            let value = self.ask_json(st, "C", Role::Subplan, &input)?;
            let sub = Plan::from_model(&json!({"goal": step.description, "steps": value.get("steps").cloned().unwrap_or(json!([]))}))
                .map_err(|e| Stop::Halted(Error::SupervisorUnrecoverable { what: "the subplan".into(), attempts: 0, last_error: e }))?;
            step.substeps = sub.steps;
            for i in 0..step.substeps.len() {
                let mut sub = step.substeps[i].clone();
                let outcome = self.run_step(st, &mut sub, false);
                step.substeps[i] = sub;
                outcome?;
            }
            let failed: Vec<&str> = step
                .substeps
                .iter()
                .filter(|s| s.status == Status::Failed)
                .map(|s| s.step_id.as_str())
                .collect();
            let done = if failed.is_empty() {
                step.complete(json!({"substeps": step.substeps.len()}))
            } else {
                step.fail(format!("substeps failed: {}", failed.join(", ")))
            };
            return done.map_err(|t| Stop::Halted(bad_transition(&t)));
        }
        match step.tool.clone() {
            Some(tool) => self.run_tool(st, step, tool),
            None => {
                let input = json!({"request": self.request, "goal": self.goal(st),
                                   "step": {"step_id": step.step_id, "description": step.description},
                                   "previous_results": st.plan.as_ref().map(Plan::results)});
                let x = self.cycle(st, "C", Role::ReasoningStep, &input, None, 0)?;
                step.complete(text_of(&x)).map_err(|t| Stop::Halted(bad_transition(&t)))
            }
        }
    }

    fn goal(&self, st: &State) -> String {
        st.plan.as_ref().map(|p| p.goal.clone()).unwrap_or_default()
    }

    /// A tool step: unknown tools and invalid arguments go to the supervisor; a failing
    /// tool fails the step and the loop goes on.
    fn run_tool(&self, st: &mut State, step: &mut Step, tool: String) -> Flow<()> {
        let mut tool = tool;
        let mut args = step.arguments.clone().unwrap_or_else(|| json!({}));
        let step_value = || json!({"step_id": step.step_id, "description": step.description, "tool": tool, "arguments": args});
        if !self.tools.contains(&tool) {
            let problem = Problem::UnknownTool {
                tool: tool.clone(),
                available_tools: self.tools.describe(),
                step: step_value(),
                request: self.request.to_string(),
            };
            let errors = vec![
                Error::ToolNotFound { tool: tool.clone(), available: self.tools.names() }
                    .to_string(),
            ];
            let tools = self.tools;
            let accept = |x: &Exchanged| -> Result<Value, Vec<String>> {
                let v = json_in(&x.raw_text())?;
                match v.get("tool").and_then(Value::as_str) {
                    Some(t) if !tools.contains(t) => {
                        Err(vec![format!("tool `{t}` is not available either")])
                    }
                    Some(t) => tools
                        .check(t, v.get("arguments").unwrap_or(&json!({})))
                        .map(|_| v.clone())
                        .map_err(|e| vec![e.to_string()]),
                    None => Ok(v),
                }
            };
            let target = self.role_target(Role::RepairMissingTool)?;
            let repaired = self.repair(
                st,
                "C",
                &problem,
                (&step_value().to_string(), errors),
                &target,
                &accept,
            )?;
            match repaired.get("tool").and_then(Value::as_str) {
                Some(t) => {
                    tool = t.to_string();
                    args = repaired.get("arguments").cloned().unwrap_or_else(|| json!({}));
                    step.tool = Some(tool.clone());
                    step.arguments = Some(args.clone());
                }
                None => {
                    // The repaired step needs no tool: it becomes a reasoning step.
                    step.tool = None;
                    step.arguments = None;
                    let input = json!({"request": self.request, "goal": self.goal(st),
                                       "step": {"step_id": step.step_id, "description": step.description},
                                       "previous_results": st.plan.as_ref().map(Plan::results)});
                    let x = self.cycle(st, "C", Role::ReasoningStep, &input, None, 0)?;
                    return step
                        .complete(text_of(&x))
                        .map_err(|t| Stop::Halted(bad_transition(&t)));
                }
            }
        }
        if let Err(e) = self.tools.check(&tool, &args) {
            let problem = Problem::InvalidToolCall {
                tool: tool.clone(),
                tool_schema: self.tools.input_schema(&tool).unwrap_or(Value::Null),
                step: json!({"step_id": step.step_id, "description": step.description}),
            };
            let tools = self.tools;
            let name = tool.clone();
            let accept = |x: &Exchanged| -> Result<Value, Vec<String>> {
                let v = json_in(&x.raw_text())?;
                let args = v.get("arguments").cloned().unwrap_or(v);
                tools.check(&name, &args).map(|_| args).map_err(|e| supervisor::error_messages(&e))
            };
            let target = self.role_target(Role::RepairToolCall)?;
            args = self.repair(
                st,
                "C",
                &problem,
                (&args.to_string(), supervisor::error_messages(&e)),
                &target,
                &accept,
            )?;
            step.arguments = Some(args.clone());
        }
        let started = std::time::Instant::now();
        let result = self.tools.call(&tool, &args);
        // When it ended and how long it took: the tool's span (SPEC §22).
        let mut call = json!({
            "step_id": step.step_id,
            "tool": tool,
            "arguments": args,
            "at": crate::ledger::now(),
            "latency_ms": started.elapsed().as_millis() as u64,
        });
        let done = match result {
            Ok(out) => {
                call["output"] = out.clone();
                step.complete(out)
            }
            Err(e) => {
                call["error"] = error_json(&e);
                st.errors.push(error_json(&e));
                step.fail(e.to_string())
            }
        };
        st.pending_tool_calls.push(call);
        done.map_err(|t| Stop::Halted(bad_transition(&t)))
    }

    /// The target for repairs whose result the caller checks itself (tool calls, missing
    /// tools): the repair role's own contract, a text contract.
    fn role_target(&self, role: Role) -> Flow<Target> {
        let resolved = self.caller.resolve(&self.pins.pin(role)).map_err(Stop::Halted)?;
        self.caller.target(&resolved).map_err(Stop::Halted)
    }

    /// Writes the cycle record of one call; `Err` when the log cannot take it.
    fn log_cycle(
        &self,
        st: &mut State,
        phase: &str,
        role: Role,
        result: &Result<Exchanged, Error>,
        repair: u32,
    ) -> Result<(), Error> {
        let Some(log) = self.log else {
            st.pending_tool_calls.clear();
            return Ok(());
        };
        let mut f = Map::new();
        st.records += 1;
        f.insert("step_number".into(), json!(st.records));
        f.insert("phase".into(), json!(phase));
        f.insert("role".into(), json!(role.name()));
        f.insert("plan_state".into(), json!(st.plan.as_ref().map(Plan::to_value)));
        let (llm_output, errors, contract, usage, latency) = match result {
            Ok(x) => (
                json!(x.raw_text()),
                x.output.as_ref().err().map(|e| vec![error_json(e)]).unwrap_or_default(),
                (
                    x.resolved.contract.id.clone(),
                    x.resolved.contract.version.to_string(),
                    x.resolved.contract.sha256.clone(),
                ),
                json!(x.response.usage),
                x.response.latency.as_millis() as u64,
            ),
            Err(e) => {
                let pin = self.pins.pin(role);
                let c = self.caller.resolve(&pin).ok().map(|r| {
                    (
                        r.contract.id.clone(),
                        r.contract.version.to_string(),
                        r.contract.sha256.clone(),
                    )
                });
                (
                    Value::Null,
                    vec![error_json(e)],
                    c.unwrap_or((pin.id.clone(), String::new(), crate::digest::ZERO_HASH.into())),
                    Value::Null,
                    0,
                )
            }
        };
        f.insert("llm_output".into(), llm_output);
        let actions: Vec<Value> =
            if repair > 0 { vec![json!({"role": role.name(), "attempt": repair})] } else { vec![] };
        f.insert("supervisor_actions".into(), json!(actions));
        f.insert("tool_calls".into(), Value::Array(std::mem::take(&mut st.pending_tool_calls)));
        f.insert("ttl_remaining".into(), json!(st.ttl));
        f.insert("errors".into(), json!(errors));
        f.insert("timestamp".into(), json!(crate::registry::lifecycle::now()));
        f.insert("work_order_id".into(), json!(self.caller.work_order.id));
        // A cycle log of its own still says whose cycles it holds (SPEC §22).
        self.caller.name_start_record(&mut f);
        f.insert("contract_id".into(), json!(contract.0));
        f.insert("version".into(), json!(contract.1));
        f.insert("sha256".into(), json!(contract.2));
        f.insert("usage".into(), usage);
        f.insert("latency_ms".into(), json!(latency));
        log.append(crate::ledger::Kind::Cycle, f).map(drop)
    }

    /// Logs the Phase E call as the last cycle record (it flushes pending tool calls);
    /// `Err` when the log cannot take it.
    pub fn log_phase_e(&self, st: &mut State, call: PhaseECall) -> Result<(), Error> {
        let Some(log) = self.log else { return Ok(()) };
        let pin = self.pins.pin(Role::Synthesis);
        let c = self.caller.resolve(&pin).ok();
        let mut f = Map::new();
        st.records += 1;
        f.insert("step_number".into(), json!(st.records));
        f.insert("phase".into(), json!("E"));
        f.insert("role".into(), json!(Role::Synthesis.name()));
        f.insert("plan_state".into(), json!(st.plan.as_ref().map(Plan::to_value)));
        f.insert("llm_output".into(), call.llm_output);
        f.insert("supervisor_actions".into(), json!([]));
        f.insert("tool_calls".into(), Value::Array(std::mem::take(&mut st.pending_tool_calls)));
        f.insert("ttl_remaining".into(), json!(st.ttl));
        f.insert("errors".into(), json!(call.errors));
        if let Some(reason) = call.degraded_reason {
            f.insert("degraded".into(), json!(true));
            f.insert("degraded_reason".into(), reason);
        }
        f.insert("timestamp".into(), json!(crate::registry::lifecycle::now()));
        f.insert("work_order_id".into(), json!(self.caller.work_order.id));
        // A cycle log of its own still says whose cycles it holds (SPEC §22).
        self.caller.name_start_record(&mut f);
        f.insert("contract_id".into(), json!(pin.id));
        f.insert(
            "version".into(),
            json!(c.as_ref().map(|r| r.contract.version.to_string()).unwrap_or_default()),
        );
        f.insert(
            "sha256".into(),
            json!(
                c.as_ref()
                    .map(|r| r.contract.sha256.clone())
                    .unwrap_or_else(|| crate::digest::ZERO_HASH.into())
            ),
        );
        f.insert("usage".into(), json!(call.usage));
        f.insert("latency_ms".into(), json!(call.latency_ms));
        log.append(crate::ledger::Kind::Cycle, f).map(drop)
    }
}

fn text_of(x: &Exchanged) -> Value {
    match &x.output {
        Ok(out) => out.clone().into_value(),
        Err(_) => Value::String(x.raw_text()),
    }
}

/// The first JSON object in a reply's text.
fn json_in(text: &str) -> Result<Value, Vec<String>> {
    match extract(text, &ExtractOptions::default()) {
        Ok(x) if x.value.is_object() => Ok(x.value),
        Ok(_) => Err(vec!["the reply holds JSON, but not an object".into()]),
        Err(e) => Err(vec![e.to_string()]),
    }
}

fn bad_transition(t: &crate::executor::plan::BadTransition) -> Error {
    Error::SupervisorUnrecoverable {
        what: format!("step {}", t.step_id),
        attempts: 0,
        last_error: format!("illegal status change {:?} -> {:?}", t.from, t.to),
    }
}
