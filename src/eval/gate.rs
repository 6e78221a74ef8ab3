//! The eval gate (SPEC §20): `registry promote PIN --eval`, or `[gate] eval = true` in
//! `pactum.toml`, runs every suite of the contract's id on the candidate (a draft) and on
//! the current active version side by side, refuses a candidate below a suite's threshold
//! or with a significant regression (`eval_regression`), and gives the evidence the
//! `promote` event keeps: suite ids, dataset SHA-256, pass rates and the McNemar p-value,
//! so the history says why a version was allowed.
//!
//! The binary decides when the gate runs and which provider it uses; this module decides
//! what is compared, what passes, and what is recorded.

use std::path::Path;

use semver::Version as Semver;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::id::{Pin, Requirement};
use crate::registry::{EntryKind, Registry, State};
use crate::validate::Progress;

use super::{Evaluator, Plan, Suite, SuiteOutcome, Version};

/// The suites under `evals/` that evaluate `id`, in file order. A suite that does not
/// load stops the gate (`eval_suite_invalid`): evidence is measured whole or not at all.
pub fn suites_of(root: &Path, id: &str) -> Result<Vec<Suite>> {
    let mut out = Vec::new();
    for path in super::suite::in_project(root) {
        let suite = Suite::load(root, &path)?;
        if suite.contract.id == id {
            out.push(suite);
        }
    }
    Ok(out)
}

/// The version a candidate is compared with: the highest active version of `id` below it
/// (none for a first version).
pub fn baseline_of(registry: &Registry, id: &str, candidate: &Semver) -> Option<Semver> {
    registry
        .versions(EntryKind::Contract, id)
        .filter(|e| e.state == State::Active && e.version < *candidate)
        .map(|e| e.version.clone())
        .max()
}

/// Runs each suite on `id@candidate` (a draft may be evaluated) and, when there is one,
/// side by side on `id@baseline`.
pub fn run(
    evaluator: &Evaluator<'_>,
    suites: &[Suite],
    id: &str,
    candidate: &Semver,
    baseline: Option<&Semver>,
    progress: &dyn Progress,
) -> Result<Vec<SuiteOutcome>> {
    let exact = |v: &Semver| Pin { id: id.to_string(), requirement: Requirement::Exact(v.clone()) };
    let plan = Plan {
        candidate: Version { pin: exact(candidate), allow_draft: true },
        baseline: baseline.map(|b| Version { pin: exact(b), allow_draft: false }),
    };
    suites.iter().map(|suite| evaluator.suite(suite, &plan, progress)).collect()
}

/// `Err(eval_regression)` naming every reason when an outcome did not pass: a threshold,
/// a significant regression, or cases that could not run (their code in the reason).
pub fn verdict(subject: &str, outcomes: &[SuiteOutcome]) -> Result<()> {
    let reasons: Vec<String> = outcomes
        .iter()
        .flat_map(SuiteOutcome::problems)
        .map(|p| {
            if p.code == crate::error::Code::EvalRegression {
                p.message
            } else {
                format!("{} [{}]", p.message, p.code)
            }
        })
        .collect();
    if reasons.is_empty() {
        return Ok(());
    }
    Err(Error::EvalRegression { subject: format!("the eval gate refuses {subject}"), reasons })
}

/// What the `promote` event records of a passed gate: the provider and, per suite, its
/// id, file, dataset and the dataset's SHA-256, each version's cases, passes and pass rate,
/// and the comparison's regressions, improvements and exact McNemar p-value.
pub fn evidence(outcomes: &[SuiteOutcome], provider: &str) -> Value {
    let suites: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            let mut s = json!({
                "eval_id": o.eval_id, "file": o.file, "dataset": o.dataset,
                "dataset_sha256": o.dataset_sha256,
            });
            for v in &o.versions {
                s[v.role] = json!({
                    "version": v.version, "cases": v.cases, "passed": v.passed,
                    "pass_rate": v.pass_rate(),
                });
            }
            if let Some(c) = &o.comparison {
                s["regressions"] = json!(c.regressions.len());
                s["improvements"] = json!(c.improvements.len());
                s["p_value"] = json!(c.p_value);
            }
            s
        })
        .collect();
    json!({"provider": provider, "suites": suites})
}

/// One line per suite, for the promote command's text output.
pub fn summary_lines(outcomes: &[SuiteOutcome]) -> String {
    let mut out = String::new();
    for o in outcomes {
        let rate = |v: &super::VersionOutcome| {
            format!(
                "{} passes {}/{} ({})",
                v.version,
                v.passed,
                v.cases,
                super::percent(v.pass_rate())
            )
        };
        let shown: Vec<String> = o.versions.iter().rev().map(rate).collect();
        out.push_str(&format!("eval gate: {}: {}", o.eval_id, shown.join(", ")));
        if let Some(c) = &o.comparison {
            out.push_str(&format!(
                "; {} regression(s), {} improvement(s), McNemar p = {:.4}",
                c.regressions.len(),
                c.improvements.len(),
                c.p_value
            ));
        }
        out.push('\n');
    }
    out
}
