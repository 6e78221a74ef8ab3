//! Judge contracts (SPEC §19): a `judge` assertion, and a contract's `semantic_check`, ask
//! a governed contract whether an output is good. The judge is called through pactum's
//! own exchange ([`Caller::call`]: its input validated, its output extracted and checked,
//! the call in the ledger and charged to the budget) with `{input, output, criteria,
//! expected?}`, and answers `{"pass": bool, "score"?: number, "reason": string}`. Nothing
//! here holds prompt text: the judge's prompt is its pack's (`PRM-JUDGE-001` ships one).

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::executor::call::{Caller, Exchanged};
use crate::gateway::Usage;
use crate::id::Pin;

/// What a judge decided.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Verdict {
    pub pass: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    pub reason: String,
}

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

/// Asks the judge `pin` about `output` (the answer to `input`) by `criteria`.
pub fn ask(
    caller: &Caller<'_>,
    pin: &Pin,
    input: &Value,
    output: &Value,
    criteria: &str,
    expected: Option<&Value>,
) -> Judged {
    let mut question = json!({"input": input, "output": output, "criteria": criteria});
    if let Some(expected) = expected {
        question["expected"] = expected.clone();
    }
    match caller.call(pin, &question, None, 0, Some("judge")) {
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

/// The verdict in a judge's output, when it has the judge's shape.
pub fn verdict_of(value: &Value) -> Option<Verdict> {
    Some(Verdict {
        pass: value.get("pass")?.as_bool()?,
        score: value.get("score").and_then(Value::as_f64),
        reason: value.get("reason")?.as_str()?.to_string(),
    })
}

/// Why a contract's `output_schema` is not a judge's (`None` when it is): it must be an
/// object that requires a boolean `pass` and a string `reason`.
pub fn shape_problem(output_schema: Option<&Value>) -> Option<String> {
    const SHAPE: &str = "a judge's output_schema requires \"pass\" (boolean) and \"reason\" (string), and may have \"score\" (number)";
    let Some(schema) = output_schema else {
        return Some(format!("it has no output_schema; {SHAPE}"));
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let type_of =
        |name: &str| schema.pointer(&format!("/properties/{name}/type")).and_then(Value::as_str);
    let mut missing = Vec::new();
    for (name, ty) in [("pass", "boolean"), ("reason", "string")] {
        if !required.contains(&name) || type_of(name) != Some(ty) {
            missing.push(format!("`{name}` ({ty})"));
        }
    }
    if let Some(score) = type_of("score")
        && !matches!(score, "number" | "integer")
    {
        missing.push("`score` as a number".to_string());
    }
    (!missing.is_empty())
        .then(|| format!("its output_schema lacks {}; {SHAPE}", missing.join(" and ")))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn the_judge_shape_is_checked_on_the_schema() {
        let good = json!({"type": "object", "required": ["pass", "reason"], "properties": {
            "pass": {"type": "boolean"}, "score": {"type": "number"}, "reason": {"type": "string"}}});
        assert_eq!(shape_problem(Some(&good)), None);
        let loose = json!({"type": "object", "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}}});
        let problem = shape_problem(Some(&loose)).unwrap();
        assert!(problem.contains("`pass` (boolean) and `reason` (string)"), "{problem}");
        let label = json!({"type": "object", "required": ["label"], "properties": {"label": {"type": "string"}}});
        assert!(shape_problem(Some(&label)).is_some());
        assert!(shape_problem(None).unwrap().contains("no output_schema"));
    }

    #[test]
    fn a_verdict_needs_pass_and_reason() {
        assert_eq!(
            verdict_of(&json!({"pass": false, "score": 0.2, "reason": "wrong queue"})),
            Some(Verdict { pass: false, score: Some(0.2), reason: "wrong queue".into() })
        );
        assert_eq!(verdict_of(&json!({"pass": "yes", "reason": "x"})), None);
        assert_eq!(verdict_of(&json!({"pass": true})), None);
    }
}
