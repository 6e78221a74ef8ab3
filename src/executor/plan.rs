//! The plan: pure data (`{goal, steps: [{step_id, description, status, tool?, arguments?}]}`,
//! SPEC §8.1). The model proposes it; the kernel owns its statuses, which only move
//! `pending → running → complete | failed`, one step at a time, in the plan's order.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A step's status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    #[default]
    Pending,
    Running,
    Complete,
    Failed,
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub step_id: String,
    pub description: String,
    #[serde(default)]
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// Ask the subplan role to break this step into substeps.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub decompose: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub substeps: Vec<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An illegal status change (a kernel bug, never model input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadTransition {
    pub step_id: String,
    pub from: Status,
    pub to: Status,
}

impl Step {
    fn transition(&mut self, to: Status) -> Result<(), BadTransition> {
        let ok = matches!(
            (self.status, to),
            (Status::Pending, Status::Running)
                | (Status::Running, Status::Complete)
                | (Status::Running, Status::Failed)
        );
        if ok {
            self.status = to;
            Ok(())
        } else {
            Err(BadTransition { step_id: self.step_id.clone(), from: self.status, to })
        }
    }

    pub fn start(&mut self) -> Result<(), BadTransition> {
        self.transition(Status::Running)
    }

    pub fn complete(&mut self, result: Value) -> Result<(), BadTransition> {
        self.transition(Status::Complete)?;
        self.result = Some(result);
        self.error = None;
        Ok(())
    }

    pub fn fail(&mut self, error: String) -> Result<(), BadTransition> {
        self.transition(Status::Failed)?;
        self.error = Some(error);
        Ok(())
    }

    pub fn is_finished(&self) -> bool {
        matches!(self.status, Status::Complete | Status::Failed)
    }
}

/// A plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub goal: String,
    pub steps: Vec<Step>,
}

impl Plan {
    /// A plan from model output that already fit the plan schema. Every status is reset to
    /// `pending`: statuses are the kernel's, not the model's.
    pub fn from_model(value: &Value) -> Result<Plan, String> {
        let mut plan: Plan = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
        for step in &mut plan.steps {
            step.reset();
        }
        let mut seen = std::collections::HashSet::new();
        for step in &plan.steps {
            if !seen.insert(step.step_id.as_str()) {
                return Err(format!("step_id `{}` appears twice", step.step_id));
            }
        }
        Ok(plan)
    }

    /// Carries finished work over from the previous pass: a step with the same id, tool
    /// and arguments that completed keeps its status and result.
    pub fn carry_over(&mut self, previous: &Plan) {
        for step in &mut self.steps {
            if let Some(old) = previous.steps.iter().find(|o| o.step_id == step.step_id)
                && old.status == Status::Complete
                && old.tool == step.tool
                && old.arguments == step.arguments
            {
                step.status = Status::Complete;
                step.result = old.result.clone();
                step.substeps = old.substeps.clone();
            }
        }
    }

    /// The first step not finished yet, in plan order.
    pub fn next_pending(&self) -> Option<usize> {
        self.steps.iter().position(|s| s.status == Status::Pending)
    }

    pub fn is_done(&self) -> bool {
        self.steps.iter().all(Step::is_finished)
    }

    /// Results of finished steps by id.
    pub fn results(&self) -> Value {
        let mut map = serde_json::Map::new();
        for s in &self.steps {
            if s.is_finished() {
                map.insert(
                    s.step_id.clone(),
                    serde_json::json!({"status": s.status, "result": s.result, "error": s.error}),
                );
            }
        }
        Value::Object(map)
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Step {
    fn reset(&mut self) {
        self.status = Status::Pending;
        self.result = None;
        self.error = None;
        for s in &mut self.substeps {
            s.reset();
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use serde_json::json;

    fn plan() -> Plan {
        Plan::from_model(&json!({"goal": "g", "steps": [
            {"step_id": "s1", "description": "a", "status": "complete", "tool": "calculator", "arguments": {"expression": "1+1"}},
            {"step_id": "s2", "description": "b", "status": "pending"}]}))
        .unwrap()
    }

    #[test]
    fn model_statuses_are_reset_and_ids_unique() {
        let p = plan();
        assert!(p.steps.iter().all(|s| s.status == Status::Pending));
        assert_eq!(p.next_pending(), Some(0));
        let e = Plan::from_model(
            &json!({"goal": "g", "steps": [{"step_id": "a", "description": ""}, {"step_id": "a", "description": ""}]}),
        );
        assert!(e.unwrap_err().contains("twice"));
    }

    #[test]
    fn transitions_are_strict() {
        let mut p = plan();
        let s = &mut p.steps[0];
        let refused = |from, to| Err(BadTransition { step_id: "s1".into(), from, to });
        assert_eq!(s.complete(json!(1)), refused(Status::Pending, Status::Complete));
        s.start().unwrap();
        assert_eq!(s.start(), refused(Status::Running, Status::Running));
        s.complete(json!({"result": 2})).unwrap();
        assert_eq!(s.fail("x".into()), refused(Status::Complete, Status::Failed));
        assert_eq!(p.next_pending(), Some(1));
        p.steps[1].start().unwrap();
        p.steps[1].fail("boom".into()).unwrap();
        assert!(p.is_done());
        assert_eq!(p.results()["s2"]["error"], "boom");
    }

    #[test]
    fn refinement_keeps_finished_identical_steps() {
        let mut old = plan();
        old.steps[0].start().unwrap();
        old.steps[0].complete(json!({"result": 2})).unwrap();
        let mut new = plan();
        new.carry_over(&old);
        assert_eq!(new.steps[0].status, Status::Complete);
        assert_eq!(new.steps[1].status, Status::Pending);
    }
}
