//! The supervisor (SPEC §8.3): when the model's output is invalid — malformed JSON, a
//! plan failing its schema, a tool call failing the tool's schema, an unknown tool — it
//! calls the matching repair contract with the bad output and the errors, at most
//! `max_repair_attempts` times. Repairs may fix structure only: what counts as repaired is
//! decided by the caller's `accept` check (the original schema, the tool's schema, a
//! registered tool), never by the repair contract. After the last failed attempt:
//! `supervisor_unrecoverable`.

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::executor::call::Exchanged;
use crate::executor::roles::Role;

/// What went wrong with the model's output.
#[derive(Clone, Debug)]
pub enum Problem {
    /// No JSON could be extracted, or a JSON role's output failed its schema.
    MalformedJson { contract_id: String, output_schema: Value },
    /// A plan (or refinement, or subplan) failed the plan schema.
    InvalidPlan { request: String, plan_schema: Value, tools: Value },
    /// A tool call's arguments fail the tool's input schema.
    InvalidToolCall { tool: String, tool_schema: Value, step: Value },
    /// A step names a tool that is not available.
    UnknownTool { tool: String, available_tools: Value, step: Value, request: String },
}

impl Problem {
    /// The role whose contract repairs this problem.
    pub fn role(&self) -> Role {
        match self {
            Problem::MalformedJson { .. } => Role::RepairJson,
            Problem::InvalidPlan { .. } => Role::RepairPlan,
            Problem::InvalidToolCall { .. } => Role::RepairToolCall,
            Problem::UnknownTool { .. } => Role::RepairMissingTool,
        }
    }

    fn describe(&self) -> String {
        match self {
            Problem::MalformedJson { contract_id, .. } => format!("the output of {contract_id}"),
            Problem::InvalidPlan { .. } => "the plan".to_string(),
            Problem::InvalidToolCall { tool, .. } => format!("the call of tool `{tool}`"),
            Problem::UnknownTool { tool, .. } => format!("the step naming unknown tool `{tool}`"),
        }
    }

    /// The repair contract's input.
    fn input(&self, bad_output: &str, errors: &[String], attempt: u32) -> Value {
        let mut v = match self {
            Problem::MalformedJson { contract_id, output_schema } => {
                json!({"contract_id": contract_id, "output_schema": output_schema})
            }
            Problem::InvalidPlan { request, plan_schema, tools } => {
                json!({"request": request, "plan_schema": plan_schema, "tools": tools})
            }
            Problem::InvalidToolCall { tool, tool_schema, step } => {
                json!({"tool": tool, "tool_schema": tool_schema, "step": step})
            }
            Problem::UnknownTool { tool, available_tools, step, request } => {
                json!({"tool": tool, "available_tools": available_tools, "step": step, "request": request})
            }
        };
        v["bad_output"] = json!(bad_output);
        v["errors"] = json!(errors);
        v["attempt"] = json!(attempt);
        v
    }
}

/// One repair attempt, for the cycle log and the run result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Action {
    pub role: &'static str,
    pub attempt: u32,
    /// `repaired` or `rejected`.
    pub outcome: &'static str,
    pub errors: Vec<String>,
}

/// Repairs `bad_output` for `problem`. `cycle` makes one LLM call of a role's contract
/// (the kernel counts it against the TTL); `accept` decides whether a reply is repaired,
/// returning the repaired value or the errors to send into the next attempt. Infrastructure
/// failures of `cycle` (TTL, budget, provider) end the repair with that error.
pub fn repair(
    problem: &Problem,
    bad_output: &str,
    errors: Vec<String>,
    max_attempts: u32,
    cycle: &mut dyn FnMut(Role, &Value, u32) -> Result<Exchanged>,
    accept: &dyn Fn(&Exchanged) -> std::result::Result<Value, Vec<String>>,
    actions: &mut Vec<Action>,
) -> Result<Value> {
    let role = problem.role();
    let mut bad = bad_output.to_string();
    let mut errors = errors;
    for attempt in 1..=max_attempts {
        let reply = cycle(role, &problem.input(&bad, &errors, attempt), attempt)?;
        match accept(&reply) {
            Ok(value) => {
                actions.push(Action {
                    role: role.name(),
                    attempt,
                    outcome: "repaired",
                    errors: Vec::new(),
                });
                return Ok(value);
            }
            Err(new_errors) => {
                actions.push(Action {
                    role: role.name(),
                    attempt,
                    outcome: "rejected",
                    errors: new_errors.clone(),
                });
                bad = reply.raw_text();
                errors = new_errors;
            }
        }
    }
    Err(Error::SupervisorUnrecoverable {
        what: problem.describe(),
        attempts: max_attempts,
        last_error: errors.first().cloned().unwrap_or_else(|| "no repair attempts allowed".into()),
    })
}

/// The messages of an output failure, for the repair contract.
pub fn error_messages(error: &Error) -> Vec<String> {
    if error.findings().is_empty() {
        vec![error.to_string()]
    } else {
        error
            .findings()
            .iter()
            .map(|f| {
                format!(
                    "{}: {}",
                    if f.pointer.is_empty() { "(root)" } else { &f.pointer },
                    f.message
                )
            })
            .collect()
    }
}
