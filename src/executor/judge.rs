//! Asking a judge contract (SPEC §19), for an eval suite's `judge` assertion and for an
//! exchange's `semantic_check` alike: [`ask`] is the one call both make. The judge is
//! called through pactum's own exchange ([`Caller::call`]: its input validated, its output
//! extracted and checked, the call in the ledger with role `judge` and charged to the
//! budget) with `{input, output, criteria, expected?}`, and answers
//! `{"pass": bool, "score"?: number, "reason": string}` ([`crate::judge::Verdict`]).
//!
//! [`enforce`] is the semantic check of one output: the judge decides; a rejection is kept
//! with a warning (`accept`), fails the exchange (`escalate`), or re-asks the model with
//! the verdict (`retry`, [`Caller::call_again`]) until it passes or the attempts the caller
//! grants are spent. A judge that gives no verdict (its call failed, or its output is not
//! a verdict) fails the check with its own error, named as the judge's: never a pass.

use serde_json::{Value, json};

use crate::error::{Code, Error, Result};
use crate::executor::call::{Caller, Exchanged, Reask, error_entries};
use crate::gateway::Usage;
use crate::judge::{JudgeSpec, OnFail, SemanticCheck, Verdict, verdict_of};
use crate::resolve::Warning;

/// A judge's answer and what asking cost.
#[derive(Debug)]
pub struct Judged {
    /// The verdict, or why the judge gave none (its call failed, or its output was not a
    /// verdict).
    pub verdict: Result<Verdict>,
    pub usage: Usage,
    /// The model that answered, when known.
    pub model: Option<String>,
    /// `ID@VERSION` of the judge that answered, when it resolved.
    pub judge: Option<String>,
}

/// Asks the judge `spec` names about `output` (the answer to `input`) by its criteria.
pub fn ask(caller: &Caller<'_>, spec: &JudgeSpec, input: &Value, output: &Value) -> Judged {
    let mut question = json!({"input": input, "output": output, "criteria": spec.criteria});
    if let Some(expected) = &spec.expected {
        question["expected"] = expected.clone();
    }
    match caller.call(&spec.contract, &question, None, 0, Some("judge")) {
        Ok(x) => judged(x),
        Err(e) => Judged { verdict: Err(e), usage: Usage::default(), model: None, judge: None },
    }
}

fn judged(x: Exchanged) -> Judged {
    let usage = x.response.usage.unwrap_or_default();
    let model = x.response.model.clone();
    let judge = Some(x.resolved.contract.key());
    let verdict = x.output.and_then(|out| {
        let value = out.into_value();
        verdict_of(&value).ok_or_else(|| Error::OutputSchemaInvalid {
            contract: judge.clone().unwrap_or_default(),
            value,
            findings: vec![crate::error::Finding::new(
                "",
                "a judge answers {\"pass\": true|false, \"score\"?: number, \"reason\": string}",
            )],
        })
    });
    Judged { verdict, usage, model, judge }
}

/// How a semantic check ended when the output stands.
#[derive(Debug)]
pub struct Checked {
    /// The output that stands: the first one, or the reply to the last re-ask.
    pub output: Value,
    /// The reply to the last re-ask, when one replaced the first output.
    pub reply: Option<Exchanged>,
    /// `semantic_rejected`, when `on_fail: accept` kept a rejected output.
    pub warning: Option<Warning>,
    /// Re-asks made.
    pub retries: u32,
}

/// A semantic check that did not let the output stand: the run's error entries (SPEC §12
/// `errors`) and the re-asks made.
#[derive(Debug)]
pub struct Refused {
    pub errors: Vec<Value>,
    pub retries: u32,
}

/// Runs `check` on `output`, the answer to `input` whose raw reply was `previous`.
/// `retries` is how many re-asks `on_fail: retry` may make (what is left of
/// `max_repair_attempts`); `reask` makes one ([`Caller::call_again`] on the same contract
/// version and input), given the attempt number and what to append.
pub fn enforce(
    caller: &Caller<'_>,
    check: &SemanticCheck,
    input: &Value,
    (output, previous): (Value, String),
    retries: u32,
    reask: &mut dyn FnMut(u32, &Reask) -> Result<Exchanged>,
) -> std::result::Result<Checked, Refused> {
    let spec = &check.judge;
    let (mut previous, mut reply, mut made) = (previous, None, 0);
    // What to judge next: an output that fits the contract, or why the last re-asked
    // reply did not (extraction or output_schema), which is re-asked about in turn.
    let mut next: std::result::Result<Value, Error> = Ok(output);
    loop {
        let (feedback, failure) = match next {
            Ok(output) => {
                let judged = ask(caller, spec, input, &output);
                let judge = judged.judge.unwrap_or_else(|| spec.contract.to_string());
                let verdict = match judged.verdict {
                    Ok(v) => v,
                    Err(e) => {
                        return Err(Refused { errors: judge_failed(&judge, &e), retries: made });
                    }
                };
                if verdict.pass {
                    return Ok(Checked { output, reply, warning: None, retries: made });
                }
                let rejected = Error::SemanticRejected {
                    judge: judge.clone(),
                    criteria: spec.criteria.clone(),
                    reason: verdict.reason.clone(),
                    retries: made,
                };
                match check.on_fail {
                    OnFail::Accept => {
                        let warning =
                            Warning { code: Code::SemanticRejected, message: rejected.to_string() };
                        return Ok(Checked {
                            output,
                            reply,
                            warning: Some(warning),
                            retries: made,
                        });
                    }
                    OnFail::Escalate => {
                        return Err(Refused { errors: error_entries(&rejected), retries: made });
                    }
                    OnFail::Retry => {}
                }
                let feedback = json!({"semantic_check": {
                    "judge": judge, "criteria": spec.criteria, "verdict": verdict,
                    "attempt": made + 1, "max_attempts": retries,
                }});
                (feedback, rejected)
            }
            // A re-asked reply that does not fit the contract: its errors are what the next
            // re-ask tells the model, as a supervisor repair would.
            Err(e) => {
                let feedback = json!({"output_errors": {
                    "code": e.code(), "errors": error_entries(&e),
                    "attempt": made + 1, "max_attempts": retries,
                }});
                (feedback, e)
            }
        };
        if made >= retries {
            return Err(Refused { errors: error_entries(&failure), retries: made });
        }
        made += 1;
        let x = reask(made, &Reask { previous, feedback })
            .map_err(|e| Refused { errors: error_entries(&e), retries: made })?;
        // A re-asked reply is checked like the first: extraction and output_schema, then
        // the judge again.
        previous = x.raw_text();
        next = match &x.output {
            Ok(out) => Ok(out.clone().into_value()),
            Err(e) => Err(super::clone_error(e)),
        };
        if next.is_ok() {
            reply = Some(x);
        }
    }
}

/// The error entries of a judge that gave no verdict: its own codes, each message saying
/// it was the judge's.
fn judge_failed(judge: &str, e: &Error) -> Vec<Value> {
    let mut entries = error_entries(e);
    for entry in &mut entries {
        if let Some(message) = entry.get("message").and_then(Value::as_str) {
            entry["message"] =
                json!(format!("the semantic check's judge {judge} gave no verdict: {message}"));
        }
    }
    entries
}
