//! Work orders (`WO-*`, SPEC §3.4): JSON or YAML files that pin contract versions.
//!
//! An `exchange` work order runs one contract on one input; a `kernel` work order runs the
//! orchestration loop on a natural-language request (see [`crate::executor`]). This module
//! parses and validates them; executing them is the executor's job.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::document::{self, Document};
use crate::error::{DocKind, Error, Finding, Result};
use crate::id::Pin;
use crate::judge::{RawSemanticCheck, SemanticCheck};
use crate::schema;

/// Default LLM cycles a kernel run may spend.
pub const DEFAULT_TTL: u32 = 10;
/// Default supervisor repair attempts per invalid output.
pub const DEFAULT_MAX_REPAIR_ATTEMPTS: u32 = 2;

/// Limits of a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Constraints {
    pub token_budget: Option<u64>,
    pub ttl: u32,
    pub max_repair_attempts: u32,
    /// Whether the work order set `max_repair_attempts` itself (a default asks for nothing
    /// a project may lack; `repair_unavailable` warns only about what was asked for).
    pub repair_asked: bool,
    pub timeout_s: Option<f64>,
    /// Tokens the assembled context may take (SPEC §16); cut in priority order beyond it.
    pub context_budget: Option<u64>,
    /// Tool calls one exchange may make (SPEC §15); overrides the contract's.
    pub max_disclosures: Option<u32>,
}

impl Default for Constraints {
    fn default() -> Self {
        Constraints {
            token_budget: None,
            ttl: DEFAULT_TTL,
            max_repair_attempts: DEFAULT_MAX_REPAIR_ATTEMPTS,
            repair_asked: false,
            timeout_s: None,
            context_budget: None,
            max_disclosures: None,
        }
    }
}

/// Which provider a work order asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProviderChoice {
    /// A provider name (configured in pactum.toml, or built-in); `None` leaves it to the
    /// configuration.
    pub name: Option<String>,
    /// Scripted fixtures (relative to the work order), used when the run is offline.
    pub fixtures: Option<String>,
    /// A replay cassette (relative to the work order).
    pub cassette: Option<String>,
    pub model: Option<String>,
}

/// What a work order asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Task {
    Exchange {
        contract: Pin,
        input: Value,
    },
    Kernel {
        request: String,
        /// Role name → pin (roles not listed use their latest active contract).
        contracts: BTreeMap<String, Pin>,
    },
}

/// A validated work order.
#[derive(Clone, Debug)]
pub struct WorkOrder {
    pub id: String,
    pub task: Task,
    pub constraints: Constraints,
    pub session_id: Option<String>,
    /// What a pin on a weighted label is routed by (SPEC §26): the same key, the same
    /// version. Default: the work order's id.
    pub route_key: Option<String>,
    pub agent_id: Option<String>,
    pub agent_class: Option<String>,
    pub tier: Option<String>,
    pub assembled_context: Option<Value>,
    pub provider: ProviderChoice,
    pub output_dir: Option<String>,
    /// Semantic validation of the run's output (SPEC §19): of an exchange's output (it
    /// replaces its contract's), of a kernel run's synthesized answer.
    pub semantic_check: Option<SemanticCheck>,
    pub metadata: Value,
    pub path: PathBuf,
    /// The tools the run may use, kernel steps and sections alike; `None` = every tool of
    /// the run's registry (SPEC §23).
    pub tools: Option<Vec<String>>,
}

impl WorkOrder {
    /// The routing point of this work order: its `route_key`, else its id.
    pub fn route(&self) -> u64 {
        crate::registry::label::route_point(self.route_key.as_deref().unwrap_or(&self.id))
    }

    /// The folder relative paths in the work order resolve against.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    pub fn is_kernel(&self) -> bool {
        matches!(self.task, Task::Kernel { .. })
    }

    /// Reads and validates a work order file.
    pub fn load(path: &Path) -> Result<WorkOrder> {
        let doc = document::load(path, Some(DocKind::WorkOrder))?;
        WorkOrder::from_document(&doc)
    }

    pub fn from_document(doc: &Document) -> Result<WorkOrder> {
        WorkOrder::from_value(&doc.value, &doc.path)
    }

    /// Every pin in the work order with the pointer it sits at.
    pub fn pins(&self) -> Vec<(String, &Pin)> {
        match &self.task {
            Task::Exchange { contract, .. } => vec![("/contract".to_string(), contract)],
            Task::Kernel { contracts, .. } => contracts
                .iter()
                .map(|(role, pin)| (schema::join_pointer("/contracts", role), pin))
                .collect(),
        }
    }

    /// Converts a parsed value, checking it against `work_order.schema.json` first. Every
    /// malformed pin is reported, each at its pointer.
    pub fn from_value(value: &Value, path: &Path) -> Result<WorkOrder> {
        let invalid = |findings: Vec<Finding>| Error::SchemaInvalid {
            doc: DocKind::WorkOrder,
            path: path.to_path_buf(),
            findings,
        };
        let findings = schema::check_document(DocKind::WorkOrder, value);
        if !findings.is_empty() {
            return Err(invalid(findings));
        }
        let raw = RawWorkOrder::deserialize(value)
            .map_err(|e| invalid(vec![Finding::new("", e.to_string())]))?;
        let mut bad = Vec::new();
        let mut pin = |pointer: String, text: &str| match Pin::parse(text) {
            Ok(p) => Some(p),
            Err(e) => {
                bad.push(Finding::new(pointer, e.to_string()));
                None
            }
        };
        let task = match raw.kind.as_str() {
            "exchange" => {
                let contract = pin("/contract".into(), raw.contract.as_deref().unwrap_or_default());
                let input = raw.input.unwrap_or(Value::Object(Default::default()));
                contract.map(|contract| Task::Exchange { contract, input })
            }
            _ => {
                let mut contracts = BTreeMap::new();
                for (role, text) in &raw.contracts {
                    if let Some(p) = pin(schema::join_pointer("/contracts", role), text) {
                        contracts.insert(role.clone(), p);
                    }
                }
                Some(Task::Kernel { request: raw.request.unwrap_or_default(), contracts })
            }
        };
        let semantic_check = raw.semantic_check.and_then(|check| {
            SemanticCheck::from_raw(check, "/semantic_check").map_err(|f| bad.push(f)).ok()
        });
        let Some(task) = task.filter(|_| bad.is_empty()) else {
            return Err(invalid(bad));
        };
        let provider = match raw.provider {
            None => ProviderChoice::default(),
            Some(RawProvider::Name(name)) => {
                ProviderChoice { name: Some(name), ..Default::default() }
            }
            Some(RawProvider::Object { name, fixtures, cassette, model }) => {
                ProviderChoice { name, fixtures, cassette, model }
            }
        };
        let c = raw.constraints.unwrap_or_default();
        Ok(WorkOrder {
            id: raw.work_order_id,
            task,
            constraints: Constraints {
                token_budget: c.token_budget,
                ttl: c.ttl.unwrap_or(DEFAULT_TTL),
                max_repair_attempts: c.max_repair_attempts.unwrap_or(DEFAULT_MAX_REPAIR_ATTEMPTS),
                repair_asked: c.max_repair_attempts.is_some_and(|n| n > 0),
                timeout_s: c.timeout_s,
                context_budget: c.context_budget,
                max_disclosures: c.max_disclosures,
            },
            session_id: raw.session_id,
            route_key: raw.route_key,
            agent_id: raw.agent_id,
            agent_class: raw.agent_class,
            tier: raw.tier,
            assembled_context: raw.assembled_context,
            provider,
            output_dir: raw.output_dir,
            semantic_check,
            metadata: raw.metadata.unwrap_or_else(|| Value::Object(Default::default())),
            path: path.to_path_buf(),
            tools: raw.tools,
        })
    }
}

#[derive(Deserialize)]
pub(crate) struct RawWorkOrder {
    work_order_id: String,
    kind: String,
    contract: Option<String>,
    input: Option<Value>,
    request: Option<String>,
    #[serde(default)]
    contracts: BTreeMap<String, String>,
    tools: Option<Vec<String>>,
    constraints: Option<RawConstraints>,
    session_id: Option<String>,
    route_key: Option<String>,
    agent_id: Option<String>,
    agent_class: Option<String>,
    tier: Option<String>,
    assembled_context: Option<Value>,
    provider: Option<RawProvider>,
    output_dir: Option<String>,
    semantic_check: Option<RawSemanticCheck>,
    metadata: Option<Value>,
}

#[derive(Deserialize, Default)]
pub(crate) struct RawConstraints {
    token_budget: Option<u64>,
    ttl: Option<u32>,
    max_repair_attempts: Option<u32>,
    timeout_s: Option<f64>,
    context_budget: Option<u64>,
    max_disclosures: Option<u32>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawProvider {
    Name(String),
    Object {
        name: Option<String>,
        fixtures: Option<String>,
        cassette: Option<String>,
        model: Option<String>,
    },
}

/// The work orders of the project at `root` (its `work_orders/` folder, walked through the
/// confinement rule), with their paths relative to the root; files that do not load are
/// left out (`validate` reports them).
pub fn in_project(root: &Path) -> Vec<(std::path::PathBuf, WorkOrder)> {
    let dir = root.join("work_orders");
    if !crate::confine::is_dir(&dir) {
        return Vec::new();
    }
    crate::validate::discover::walk_path(&dir, root, false)
        .into_iter()
        .filter(|c| c.escape.is_none())
        .filter_map(|c| {
            let wo = WorkOrder::load(&c.path).ok()?;
            let rel = c.path.strip_prefix(root).ok()?.to_path_buf();
            Some((rel, wo))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;
    use serde_json::json;

    fn load(v: Value) -> Result<WorkOrder> {
        WorkOrder::from_value(&v, Path::new("wo.json"))
    }

    #[test]
    fn exchange_and_kernel_work_orders() {
        let wo = load(
            json!({"work_order_id": "WO-1", "kind": "exchange", "contract": "PRC-CLASSIFY-001@^1",
                             "input": {"user_input": "hi"}, "constraints": {"token_budget": 1000}}),
        )
        .unwrap();
        assert_eq!(wo.constraints.ttl, DEFAULT_TTL);
        assert_eq!(wo.constraints.token_budget, Some(1000));
        assert_eq!(wo.pins()[0].1.to_string(), "PRC-CLASSIFY-001@^1");
        let wo = load(json!({"work_order_id": "WO-K", "kind": "kernel", "request": "sum 5 and 10",
                             "contracts": {"plan": "PRC-PLAN-001@1.0.0"}, "tools": ["calculator"],
                             "provider": {"fixtures": "f.json"}}))
        .unwrap();
        assert!(wo.is_kernel());
        assert_eq!(wo.provider.fixtures.as_deref(), Some("f.json"));
        assert_eq!(wo.pins()[0].0, "/contracts/plan");
    }

    #[test]
    fn invalid_work_orders_report_every_problem() {
        let e = load(json!({"work_order_id": "WO-1", "kind": "exchange"})).unwrap_err();
        assert_eq!(e.code(), Code::WorkOrderInvalid);
        let e = load(json!({"work_order_id": "wo-1", "kind": "kernel", "request": "x", "contracts": {"planner": "PRC-PLAN-001"},
                            "constraint": {}}))
        .unwrap_err();
        let pointers: Vec<_> = e.findings().iter().map(|f| f.pointer.as_str()).collect();
        assert!(pointers.contains(&"/work_order_id"), "{pointers:?}");
        assert!(pointers.contains(&"/constraint"), "{pointers:?}");
        let e = load(json!({"work_order_id": "WO-1", "kind": "exchange", "contract": "PRC-A-001@^zz", "input": {}})).unwrap_err();
        assert_eq!(e.findings()[0].pointer, "/contract");
    }
}
