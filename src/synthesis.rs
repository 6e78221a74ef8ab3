//! Phase E, the final-answer synthesis (SPEC §9): after every kernel run — converged, TTL
//! spent, zero passes, an unrecoverable error, the provider down, state missing — it turns
//! what the run knows into a [`FinalAnswer`]. **It never fails.**
//!
//! With every required input present it asks the synthesis contract (through the `call`
//! closure the executor passes). When a required input is missing, or the call fails, or
//! its output is not a valid FinalAnswer, it builds a *degraded* answer itself: the text
//! explains what happened and what is known, and `metadata` carries `missing_fields`,
//! `degraded: true`, `reason` and the raw artifacts that were present under their own
//! names. When only optional inputs are missing (a run that stopped early) the model still
//! sums up what is there, and pactum makes that answer a degraded one: the text gains how far
//! the run got and what is not available, `used_step_ids` keeps only steps that completed,
//! and the same metadata marks it. `ttl_exhausted` is set when the TTL ran out.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::terminal::{escape_block, escape_line};

/// What Phase E is given. Everything is optional here so that missing state can be
/// detected and reported instead of crashing; [`PhaseEInput::missing_required`] says which
/// required fields are absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseEInput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_start_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convergence_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_passes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_refinements: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_remaining: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_state: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_results: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convergence_assessment: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_passes: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic_validation: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_profile: Option<Value>,
}

/// The artifacts a degraded answer carries in its metadata, in order.
const ARTIFACTS: [&str; 6] = [
    "plan_state",
    "execution_results",
    "convergence_assessment",
    "execution_passes",
    "semantic_validation",
    "task_profile",
];

impl PhaseEInput {
    /// Required fields that are absent (a blank request counts as absent).
    pub fn missing_required(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.request.as_deref().is_none_or(|r| r.trim().is_empty()) {
            out.push("request");
        }
        let checks: [(&'static str, bool); 6] = [
            ("correlation_id", self.correlation_id.is_none()),
            ("execution_start_timestamp", self.execution_start_timestamp.is_none()),
            ("convergence_status", self.convergence_status.is_none()),
            ("total_passes", self.total_passes.is_none()),
            ("total_refinements", self.total_refinements.is_none()),
            ("ttl_remaining", self.ttl_remaining.is_none()),
        ];
        out.extend(checks.into_iter().filter(|(_, missing)| *missing).map(|(name, _)| name));
        out
    }

    /// Optional artifacts that are absent (or null).
    pub fn missing_optional(&self) -> Vec<&'static str> {
        ARTIFACTS
            .into_iter()
            .filter(|name| self.artifact(name).is_none_or(Value::is_null))
            .collect()
    }

    fn artifact(&self, name: &str) -> Option<&Value> {
        match name {
            "plan_state" => self.plan_state.as_ref(),
            "execution_results" => self.execution_results.as_ref(),
            "convergence_assessment" => self.convergence_assessment.as_ref(),
            "execution_passes" => self.execution_passes.as_ref(),
            "semantic_validation" => self.semantic_validation.as_ref(),
            "task_profile" => self.task_profile.as_ref(),
            _ => None,
        }
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The answer every kernel run ends with. Exactly these fields (SPEC §9).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalAnswer {
    pub answer_text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_step_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_exhausted: Option<bool>,
    pub metadata: Map<String, Value>,
}

impl FinalAnswer {
    /// A FinalAnswer from model output: it must fit `final_answer.schema.json`.
    pub fn from_value(value: &Value) -> std::result::Result<FinalAnswer, String> {
        let findings = crate::schema::check_final_answer(value);
        if let Some(f) = findings.first() {
            let at = if f.pointer.is_empty() { "(root)" } else { f.pointer.as_str() };
            return Err(format!("{at}: {}", f.message));
        }
        serde_json::from_value(value.clone()).map_err(|e| e.to_string())
    }

    pub fn is_degraded(&self) -> bool {
        self.metadata.get("degraded").and_then(Value::as_bool) == Some(true)
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Runs Phase E. `call` invokes the synthesis contract with the Phase E input (as JSON) and
/// returns its validated output; any error it returns leads to a degraded answer.
pub fn synthesize(
    input: &PhaseEInput,
    ttl_exhausted: bool,
    call: &mut dyn FnMut(&Value) -> Result<Value>,
) -> FinalAnswer {
    let required = input.missing_required();
    if !required.is_empty() {
        let mut missing: Vec<&str> = required.clone();
        missing.extend(input.missing_optional());
        let reason = format!("incomplete_state: required input missing ({})", required.join(", "));
        return degraded(input, &reason, &missing, ttl_exhausted);
    }
    let optional = input.missing_optional();
    let answer = match call(&input.to_value()) {
        Err(e) => {
            return degraded(
                input,
                &failure_reason("synthesis_failed", &e),
                &optional,
                ttl_exhausted,
            );
        }
        Ok(value) => match FinalAnswer::from_value(&value) {
            Ok(a) => a,
            Err(why) => {
                return degraded(
                    input,
                    &format!("synthesis_output_invalid: {why}"),
                    &optional,
                    ttl_exhausted,
                );
            }
        },
    };
    let mut answer = answer;
    if ttl_exhausted {
        answer.ttl_exhausted = Some(true);
    }
    if !optional.is_empty() {
        // The model summed up part of a run: pactum states the early exit in the text and
        // keeps only the step ids that really completed (a model can claim steps that never
        // ran).
        answer.answer_text = format!(
            "{} (Based on part of the run: {} Not available: {}.)",
            answer.answer_text.trim_end(),
            progress(input, ttl_exhausted),
            optional.join(", ")
        );
        if let Some(ids) = &mut answer.used_step_ids {
            let completed = completed_steps(input);
            ids.retain(|id| completed.contains(id));
            if ids.is_empty() {
                answer.used_step_ids = None;
            }
        }
        mark_degraded(&mut answer.metadata, input, "incomplete_state", &optional);
    }
    answer
}

/// How far the run got, in one or two sentences.
fn progress(input: &PhaseEInput, ttl_exhausted: bool) -> String {
    let passes = input.total_passes.unwrap_or(0);
    let refinements = input.total_refinements.unwrap_or(0);
    let status = input.convergence_status.as_deref().unwrap_or("unknown");
    let mut text = format!(
        "{passes} pass{} ran with {refinements} refinement{}; convergence status: {status}.",
        if passes == 1 { "" } else { "es" },
        if refinements == 1 { "" } else { "s" }
    );
    if passes == 0 {
        text.push_str(" No execution pass took place.");
    }
    if ttl_exhausted {
        text.push_str(" The run hit its time limit (TTL) before the plan converged.");
    }
    text
}

/// The plan's steps, each with its id and status.
fn steps(input: &PhaseEInput) -> &[Value] {
    input
        .plan_state
        .as_ref()
        .and_then(|p| p.get("steps"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn step_id(step: &Value) -> &str {
    step.get("step_id").and_then(Value::as_str).unwrap_or("?")
}

/// The ids of the plan's completed steps.
fn completed_steps(input: &PhaseEInput) -> Vec<String> {
    steps(input)
        .iter()
        .filter(|s| s.get("status").and_then(Value::as_str) == Some("complete"))
        .map(|s| step_id(s).to_string())
        .collect()
}

fn failure_reason(prefix: &str, e: &Error) -> String {
    format!("{prefix}: {} ({e})", e.code())
}

fn mark_degraded(
    metadata: &mut Map<String, Value>,
    input: &PhaseEInput,
    reason: &str,
    missing: &[&str],
) {
    metadata.insert("missing_fields".into(), json!(missing));
    metadata.insert("degraded".into(), Value::Bool(true));
    metadata.insert("reason".into(), Value::String(reason.to_string()));
    for name in ARTIFACTS {
        if let Some(v) = input.artifact(name).filter(|v| !v.is_null()) {
            metadata.insert(name.to_string(), v.clone());
        }
    }
}

/// The answer Phase E builds itself when it cannot (or may not) ask the model.
pub fn degraded(
    input: &PhaseEInput,
    reason: &str,
    missing: &[&str],
    ttl_exhausted: bool,
) -> FinalAnswer {
    let mut parts = Vec::new();
    parts.push(format!("No synthesized answer is available ({reason})."));
    if let Some(request) = input.request.as_deref().filter(|r| !r.trim().is_empty()) {
        parts.push(format!("Request: \"{}\".", request.trim()));
    }
    parts.push(progress(input, ttl_exhausted));
    let used = completed_steps(input);
    let steps = steps(input);
    if !steps.is_empty() {
        let mut done = Vec::new();
        let mut failed = Vec::new();
        for s in steps {
            let id = step_id(s);
            match s.get("status").and_then(Value::as_str) {
                Some("complete") => {
                    let result = s.get("result").map(short).unwrap_or_default();
                    done.push(format!(
                        "{id} ({}) gave {result}",
                        s.get("description").and_then(Value::as_str).unwrap_or("")
                    ));
                }
                Some("failed") => failed.push(format!(
                    "{id} ({})",
                    s.get("error").and_then(Value::as_str).unwrap_or("no error recorded")
                )),
                _ => {}
            }
        }
        if !done.is_empty() {
            parts.push(format!("Completed steps: {}.", done.join("; ")));
        }
        if !failed.is_empty() {
            parts.push(format!("Failed steps: {}.", failed.join("; ")));
        }
        if done.is_empty() && failed.is_empty() {
            parts.push(format!("A plan with {} step(s) existed but none finished.", steps.len()));
        }
    }
    if !missing.is_empty() {
        parts.push(format!("Not available: {}.", missing.join(", ")));
    }
    let mut metadata = Map::new();
    mark_degraded(&mut metadata, input, reason, missing);
    FinalAnswer {
        answer_text: parts.join(" "),
        confidence: None,
        used_step_ids: (!used.is_empty()).then_some(used),
        notes: Some("degraded answer built by pactum without the synthesis contract".to_string()),
        ttl_exhausted: ttl_exhausted.then_some(true),
        metadata,
    }
}

/// Compact JSON, cut to a readable length.
fn short(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.chars().count() > 120 {
        format!("{}…", text.chars().take(120).collect::<String>())
    } else {
        text
    }
}

/// The Phase E answer for people (SPEC §9).
pub fn print_final_answer(out: &mut impl std::io::Write, answer: Option<&FinalAnswer>) {
    let Some(a) = answer else {
        let _ = writeln!(out, "No final answer available");
        return;
    };
    let _ = writeln!(out, "Answer: {}", escape_block(&a.answer_text, "  "));
    if let Some(c) = a.confidence {
        let _ = writeln!(out, "Confidence: {c}");
    }
    if a.ttl_exhausted == Some(true) {
        let _ = writeln!(out, "⚠ Time limit reached: the run used its whole TTL before converging");
    }
    if let Some(n) = a.notes.as_deref().filter(|n| !n.is_empty()) {
        let _ = writeln!(out, "Note: {}", escape_line(n));
    }
    if !a.metadata.is_empty() {
        let summary: Vec<String> = a
            .metadata
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                Value::Bool(_) | Value::Number(_) | Value::Null => format!("{k}={v}"),
                Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
                    format!("{k}={v}")
                }
                Value::Array(items) => format!("{k}=({} items)", items.len()),
                Value::Object(map) => format!("{k}=({} fields)", map.len()),
            })
            .collect();
        let _ = writeln!(out, "Metadata: {}", escape_line(&summary.join(", ")));
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    fn shown(answer: Option<&FinalAnswer>) -> String {
        let mut out = Vec::new();
        print_final_answer(&mut out, answer);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_missing_final_answer_is_said_so() {
        assert_eq!(shown(None), "No final answer available\n");
    }

    #[test]
    fn a_final_answer_prints_every_part_people_read() {
        let answer = FinalAnswer::from_value(&json!({
            "answer_text": "The sum is 15.",
            "confidence": 0.5,
            "notes": "Stopped early.",
            "ttl_exhausted": true,
            "metadata": {"degraded": true, "missing_fields": ["plan_state"], "plan": {"a": 1}},
        }))
        .unwrap();
        let text = shown(Some(&answer));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Answer: The sum is 15.");
        assert_eq!(lines[1], "Confidence: 0.5");
        assert!(lines[2].contains("Time limit reached"), "{text}");
        assert_eq!(lines[3], "Note: Stopped early.");
        assert_eq!(
            lines[4],
            "Metadata: degraded=true, missing_fields=[\"plan_state\"], plan=(1 fields)"
        );
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn a_hostile_answer_cannot_command_the_runner_or_the_terminal() {
        let answer = FinalAnswer::from_value(&json!({
            "answer_text": "fine\n::error file=x::forged\n\u{1b}[2J",
            "notes": "##[add-mask]x",
            "metadata": {"k\n::warning::": "v"},
        }))
        .unwrap();
        let text = shown(Some(&answer));
        assert_eq!(
            text,
            "Answer: fine\n  \\u{3a}:error file=x::forged\n  \\u{1b}[2J\nNote: ##\\u{5b}add-mask]x\n\
             Metadata: k\\n::warning::=v\n"
        );
    }

    #[test]
    fn optional_parts_are_left_out_when_absent() {
        let answer =
            FinalAnswer::from_value(&json!({"answer_text": "Done.", "metadata": {}})).unwrap();
        assert_eq!(shown(Some(&answer)), "Answer: Done.\n");
    }

    fn complete() -> PhaseEInput {
        PhaseEInput {
            request: Some("calculate the sum of 5 and 10".into()),
            correlation_id: Some("c-1".into()),
            execution_start_timestamp: Some("2026-01-01T00:00:00Z".into()),
            convergence_status: Some("converged".into()),
            total_passes: Some(1),
            total_refinements: Some(0),
            ttl_remaining: Some(6),
            plan_state: Some(
                json!({"goal": "sum", "steps": [{"step_id": "s1", "description": "add", "status": "complete", "result": {"result": 15}}]}),
            ),
            execution_results: Some(json!({"s1": {"result": 15}})),
            convergence_assessment: Some(json!({"converged": true})),
            execution_passes: Some(json!([{"pass": 1}])),
            semantic_validation: Some(json!("fine")),
            task_profile: Some(json!("arithmetic")),
        }
    }

    fn answer(v: Value) -> impl FnMut(&Value) -> Result<Value> {
        move |_| Ok(v.clone())
    }

    #[test]
    fn complete_state_uses_the_model_answer() {
        let a = synthesize(
            &complete(),
            false,
            &mut answer(json!({"answer_text": "15", "confidence": 0.9, "metadata": {}})),
        );
        assert_eq!(a.answer_text, "15");
        assert!(!a.is_degraded());
        assert_eq!(a.ttl_exhausted, None);
    }

    #[test]
    fn ttl_expiry_is_flagged() {
        let mut input = complete();
        input.convergence_status = Some("ttl_expired".into());
        input.ttl_remaining = Some(0);
        let a = synthesize(
            &input,
            true,
            &mut answer(json!({"answer_text": "partial", "metadata": {}})),
        );
        assert_eq!(a.ttl_exhausted, Some(true));
    }

    #[test]
    fn missing_optional_fields_mark_the_answer_degraded() {
        let mut input = complete();
        input.execution_results = None;
        input.task_profile = None;
        let a = synthesize(
            &input,
            false,
            &mut answer(json!({"answer_text": "15", "metadata": {"x": 1}})),
        );
        assert!(a.is_degraded());
        assert_eq!(a.metadata["missing_fields"], json!(["execution_results", "task_profile"]));
        assert_eq!(a.metadata["x"], 1);
        assert!(a.metadata.contains_key("plan_state"));
    }

    #[test]
    fn zero_passes_and_missing_required_inputs_degrade_without_a_call() {
        let input = PhaseEInput {
            request: Some("do x".into()),
            total_passes: Some(0),
            ..Default::default()
        };
        let mut called = false;
        let a = synthesize(&input, false, &mut |_| {
            called = true;
            Ok(json!({}))
        });
        assert!(!called);
        assert!(a.is_degraded());
        assert!(a.answer_text.contains("No execution pass took place"), "{}", a.answer_text);
        assert!(a.metadata["reason"].as_str().unwrap().starts_with("incomplete_state"));
        assert!(FinalAnswer::from_value(&a.to_value()).is_ok());
    }

    #[test]
    fn failing_or_invalid_synthesis_degrades() {
        let a = synthesize(&complete(), false, &mut |_| {
            Err(Error::provider("x", crate::error::ProviderFailure::Unreachable, "down"))
        });
        assert!(a.is_degraded());
        assert!(a.metadata["reason"].as_str().unwrap().contains("provider_unreachable"));
        assert!(a.answer_text.contains("s1 (add) gave {\"result\":15}"), "{}", a.answer_text);
        assert_eq!(a.used_step_ids, Some(vec!["s1".to_string()]));
        for bad in [
            json!({"answer_text": "", "metadata": {}}),
            json!({"answer_text": "x"}),
            json!({"answer_text": "x", "metadata": {}, "extra": 1}),
            json!("just text"),
        ] {
            let a = synthesize(&complete(), false, &mut answer(bad.clone()));
            assert!(a.is_degraded(), "{bad}");
            assert!(a.metadata["reason"].as_str().unwrap().starts_with("synthesis_output_invalid"));
            assert!(FinalAnswer::from_value(&a.to_value()).is_ok());
        }
    }
}
