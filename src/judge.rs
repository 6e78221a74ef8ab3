//! Judge contracts (SPEC §19), as data: what a judge is asked ([`JudgeSpec`]), the
//! `semantic_check` a contract or work order names ([`SemanticCheck`]), and what a judge
//! answers ([`Verdict`], `{"pass": bool, "score"?: number, "reason": string}`).
//!
//! Pure: a `judge` assertion of an eval suite and a `semantic_check` both hold a
//! [`JudgeSpec`]; asking the judge through pactum's own exchange is
//! [`crate::executor::judge::ask`], the one call both use. Nothing here holds prompt text:
//! the judge's prompt is its pack's (`PRM-JUDGE-001` ships one).

use serde::Deserialize;
use serde_json::Value;

use crate::error::Finding;
use crate::id::Pin;

/// What a judge is asked to decide: the judge contract's pin, the criteria, and a
/// reference answer when there is one.
#[derive(Clone, Debug, PartialEq)]
pub struct JudgeSpec {
    pub contract: Pin,
    pub criteria: String,
    pub expected: Option<Value>,
}

/// What an exchange does when the judge of its `semantic_check` rejects the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFail {
    /// Ask the model again with the judge's reason (counted in `max_repair_attempts`);
    /// `semantic_rejected` when the attempts are spent.
    Retry,
    /// Fail with `semantic_rejected`.
    Escalate,
    /// Keep the output, with a `semantic_rejected` warning carrying the reason.
    Accept,
}

impl OnFail {
    pub fn as_str(self) -> &'static str {
        match self {
            OnFail::Retry => "retry",
            OnFail::Escalate => "escalate",
            OnFail::Accept => "accept",
        }
    }

    fn from_name(name: &str) -> Option<OnFail> {
        [OnFail::Retry, OnFail::Escalate, OnFail::Accept].into_iter().find(|k| k.as_str() == name)
    }
}

/// Semantic validation of an exchange (SPEC §19): after the output passed extraction and
/// `output_schema`, the judge decides, and `on_fail` says what a rejection does.
#[derive(Clone, Debug, PartialEq)]
pub struct SemanticCheck {
    /// The judge and the criteria (never a reference answer: an exchange has none).
    pub judge: JudgeSpec,
    pub on_fail: OnFail,
}

/// The raw shape of `semantic_check` in a contract or a work order (checked against the
/// document's schema before it is read).
#[derive(Debug, Deserialize)]
pub(crate) struct RawSemanticCheck {
    judge: String,
    criteria: String,
    on_fail: Option<String>,
}

impl SemanticCheck {
    /// Reads a `semantic_check` found at `at` (a JSON pointer, for findings). `on_fail`
    /// defaults to `escalate`: a rejection never passes unless the author said so.
    pub(crate) fn from_raw(raw: RawSemanticCheck, at: &str) -> Result<SemanticCheck, Finding> {
        let contract = Pin::parse(&raw.judge)
            .map_err(|e| Finding::new(format!("{at}/judge"), e.to_string()))?;
        let on_fail = match raw.on_fail.as_deref() {
            None => OnFail::Escalate,
            Some(name) => OnFail::from_name(name).ok_or_else(|| {
                Finding::new(
                    format!("{at}/on_fail"),
                    format!("`{name}` is not retry, escalate or accept"),
                )
            })?,
        };
        Ok(SemanticCheck {
            judge: JudgeSpec { contract, criteria: raw.criteria, expected: None },
            on_fail,
        })
    }
}

/// What a judge decided.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Verdict {
    pub pass: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    pub reason: String,
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
mod tests {
    use super::*;
    use serde_json::json;

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

    fn check(value: Value) -> Result<SemanticCheck, Finding> {
        let raw: RawSemanticCheck = serde_json::from_value(value).unwrap();
        SemanticCheck::from_raw(raw, "/semantic_check")
    }

    #[test]
    fn a_semantic_check_reads_its_judge_criteria_and_on_fail() {
        let c =
            check(json!({"judge": "PRC-JUDGE-001@^1", "criteria": "polite", "on_fail": "retry"}))
                .unwrap();
        assert_eq!(c.judge.contract.to_string(), "PRC-JUDGE-001@^1");
        assert_eq!((c.judge.criteria.as_str(), c.on_fail), ("polite", OnFail::Retry));
        assert_eq!(c.judge.expected, None);
        // Without on_fail a rejection fails the exchange: nothing passes silently.
        let c = check(json!({"judge": "PRC-JUDGE-001", "criteria": "polite"})).unwrap();
        assert_eq!(c.on_fail, OnFail::Escalate);
        let bad = check(json!({"judge": "PRC-JUDGE-001", "criteria": "x", "on_fail": "ignore"}))
            .unwrap_err();
        assert_eq!(bad.pointer, "/semantic_check/on_fail");
        let bad = check(json!({"judge": "judge", "criteria": "x"})).unwrap_err();
        assert_eq!(bad.pointer, "/semantic_check/judge");
    }
}
