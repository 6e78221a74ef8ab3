//! Kernel roles (SPEC §8.2): each step of the loop is one role, served by one contract.
//! A work order may pin a role's contract version in its `contracts` map; a role it does
//! not pin uses the latest active version of the role's shipped contract.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::id::{Pin, Requirement};

/// A role in the kernel loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    TaskProfile,
    TaskProfileUpdate,
    Plan,
    ReasoningStep,
    SemanticValidation,
    Convergence,
    Subplan,
    Refinement,
    RepairJson,
    RepairToolCall,
    RepairPlan,
    RepairMissingTool,
    Synthesis,
}

impl Role {
    pub const ALL: [Role; 13] = [
        Role::TaskProfile,
        Role::TaskProfileUpdate,
        Role::Plan,
        Role::ReasoningStep,
        Role::SemanticValidation,
        Role::Convergence,
        Role::Subplan,
        Role::Refinement,
        Role::RepairJson,
        Role::RepairToolCall,
        Role::RepairPlan,
        Role::RepairMissingTool,
        Role::Synthesis,
    ];

    /// The role's name in a work order's `contracts` map.
    pub fn name(self) -> &'static str {
        match self {
            Role::TaskProfile => "task_profile",
            Role::TaskProfileUpdate => "task_profile_update",
            Role::Plan => "plan",
            Role::ReasoningStep => "reasoning_step",
            Role::SemanticValidation => "semantic_validation",
            Role::Convergence => "convergence",
            Role::Subplan => "subplan",
            Role::Refinement => "refinement",
            Role::RepairJson => "repair_json",
            Role::RepairToolCall => "repair_tool_call",
            Role::RepairPlan => "repair_plan",
            Role::RepairMissingTool => "repair_missing_tool",
            Role::Synthesis => "synthesis",
        }
    }

    pub fn from_name(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The shipped contract that serves the role.
    pub fn contract_id(self) -> &'static str {
        match self {
            Role::TaskProfile => "PRC-PROFILE-001",
            Role::TaskProfileUpdate => "PRC-PROFILEUPDATE-001",
            Role::Plan => "PRC-PLAN-001",
            Role::ReasoningStep => "PRC-REASON-001",
            Role::SemanticValidation => "PRC-SEMANTIC-001",
            Role::Convergence => "PRC-CONVERGE-001",
            Role::Subplan => "PRC-SUBPLAN-001",
            Role::Refinement => "PRC-REFINE-001",
            Role::RepairJson => "PRC-REPAIRJSON-001",
            Role::RepairToolCall => "PRC-REPAIRTOOL-001",
            Role::RepairPlan => "PRC-REPAIRPLAN-001",
            Role::RepairMissingTool => "PRC-MISSINGTOOL-001",
            Role::Synthesis => "PRC-SYNTH-001",
        }
    }

    /// Whether the role's output is JSON (and its contract must have an `output_schema`).
    pub fn produces_json(self) -> bool {
        matches!(
            self,
            Role::Plan
                | Role::Subplan
                | Role::Refinement
                | Role::Convergence
                | Role::RepairJson
                | Role::Synthesis
        )
    }
}

/// The contract pin of every role for one run.
#[derive(Clone, Debug, Default)]
pub struct RolePins {
    pins: BTreeMap<Role, Pin>,
}

impl RolePins {
    /// From a work order's `contracts` map. A pin must name a contract id; it may be any
    /// contract (a team can swap in its own planner).
    pub fn from_map(map: &BTreeMap<String, Pin>) -> Result<RolePins> {
        let mut pins = BTreeMap::new();
        for (name, pin) in map {
            let role = Role::from_name(name).ok_or_else(|| Error::PinInvalid {
                pin: pin.to_string(),
                reason: format!("`{name}` is not a kernel role"),
            })?;
            pins.insert(role, pin.clone());
        }
        Ok(RolePins { pins })
    }

    /// The pin for a role: the work order's, else the latest active shipped contract.
    pub fn pin(&self, role: Role) -> Pin {
        self.pins.get(&role).cloned().unwrap_or_else(|| Pin {
            id: role.contract_id().to_string(),
            requirement: Requirement::Latest,
        })
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_defaults_apply() {
        for role in Role::ALL {
            assert_eq!(Role::from_name(role.name()), Some(role));
            assert!(crate::id::is_contract_id(role.contract_id()), "{}", role.contract_id());
        }
        let mut map = BTreeMap::new();
        map.insert("plan".to_string(), Pin::parse("PRC-PLAN-001@1.0.0").unwrap());
        let pins = RolePins::from_map(&map).unwrap();
        assert_eq!(pins.pin(Role::Plan).to_string(), "PRC-PLAN-001@=1.0.0");
        assert_eq!(pins.pin(Role::Synthesis).to_string(), "PRC-SYNTH-001");
    }
}
