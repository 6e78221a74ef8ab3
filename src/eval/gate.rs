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

/// [`evidence`], binding the cassette the gate's replay provider answered from (`path`,
/// relative to the project root, and the SHA-256 of its bytes after the run): rewritten
/// recordings no longer match the event (SPEC §24).
pub fn evidence_with_cassette(
    outcomes: &[SuiteOutcome],
    provider: &str,
    cassette: Option<(&str, String)>,
) -> Value {
    let mut e = evidence(outcomes, provider);
    if let Some((path, sha256)) = cassette {
        e["cassette"] = json!(path);
        e["cassette_sha256"] = json!(sha256);
    }
    e
}

/// The replay provider of `config`'s gate (`[gate] provider`, else the default provider)
/// and its cassette, when it is one: what the gate's evidence can be recomputed from.
pub fn gate_cassette(config: &crate::config::Config) -> Option<(String, String)> {
    let name = config.gate.provider.as_ref().or(config.defaults.provider.as_ref())?;
    let settings = config.providers.get(name).filter(|p| p.kind == "replay")?;
    Some((name.clone(), settings.cassette.clone()?))
}

/// Re-derives the eval evidence of a `promote` event offline (SPEC §24, `--base`): the
/// base's gate (`base`: the base revision's pactum.toml) must evaluate with a replay
/// provider; the event's cassette and dataset hashes must be the tree's; every suite of the
/// id, replayed from that cassette (never a live call) on the candidate and the baseline
/// the evidence names, must give the same cases, passes, pass rates, regressions and
/// p-value, and pass the gate. `Ok` says what matched.
pub fn recompute(
    project: &crate::project::Project,
    base: &crate::config::Config,
    base_cassette: Option<&[u8]>,
    event: &crate::registry::Event,
) -> std::result::Result<String, String> {
    let Some(recorded) = &event.eval else {
        return Err(
            "the event carries no eval evidence, and the base's [gate] eval = true requires it"
                .into(),
        );
    };
    let Some((provider, cassette)) = gate_cassette(base) else {
        return Err("the base's [gate] provider is not a replay provider with a cassette, so the evidence cannot be recomputed offline".into());
    };
    if recorded.get("cassette").and_then(Value::as_str) != Some(cassette.as_str()) {
        return Err(format!(
            "the evidence names no cassette or another one than the gate's {cassette}"
        ));
    }
    let root = &project.root;
    let path = crate::confine::Root::new(root)
        .content(Path::new(&cassette))
        .map_err(|r| r.into_error(Path::new(&cassette)).to_string())?;
    let doc = crate::document::load(&path, None).map_err(|e| e.to_string())?;
    let sha = doc.sha256.clone();
    // A recording the base holds is what a model answered then: it is never rewritten,
    // only added to (a rewritten answer would make any candidate pass).
    if let Some(bytes) = base_cassette {
        let then: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("the base's cassette {cassette} does not read: {e}"))?;
        let keyed = |v: &Value| -> std::collections::HashMap<String, Value> {
            v["entries"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| Some((e["key"].as_str()?.to_string(), e.clone())))
                .collect()
        };
        let now = keyed(&doc.value);
        for (key, entry) in keyed(&then) {
            if now.get(&key) != Some(&entry) {
                return Err(format!(
                    "the recording {key} of the base's cassette {cassette} is rewritten or gone: recordings are only ever added"
                ));
            }
        }
    }
    if recorded.get("cassette_sha256").and_then(Value::as_str) != Some(sha.as_str()) {
        return Err(format!(
            "the cassette {cassette} has SHA-256 {}, not the {} the evidence was measured on",
            &sha[..12],
            recorded
                .get("cassette_sha256")
                .and_then(Value::as_str)
                .map_or("(none)", |s| &s[..s.len().min(12)])
        ));
    }
    // The base's provider, answering only from the recordings.
    let mut config = base.clone();
    config.env = project.config.env.clone();
    if let Some(p) = config.providers.get_mut(&provider) {
        p.mode = Some("replay".into());
    }
    let choice = crate::gateway::select::Choice {
        cli: Some(&provider),
        work_order: &crate::work_order::ProviderChoice::default(),
        work_order_dir: root,
    };
    let providers = crate::gateway::select::ProviderSet::new(&config, root, choice)
        .map_err(|e| e.to_string())?;
    let candidate = crate::id::parse_version(&event.version).ok_or("the event names no version")?;
    let id = &event.id;
    let suites = suites_of(root, id).map_err(|e| e.to_string())?;
    if suites.is_empty() {
        return Err(format!("no eval suite under evals/ evaluates {id} in this tree"));
    }
    let named_baseline =
        recorded["suites"][0]["baseline"]["version"].as_str().and_then(crate::id::parse_version);
    let evaluator = super::Evaluator {
        project,
        providers: &providers,
        ledger: None,
        options: super::Options { jobs: 1, repeat: None, filter: None },
    };
    let outcomes = run(
        &evaluator,
        &suites,
        id,
        &candidate,
        named_baseline.as_ref(),
        &crate::validate::NoProgress,
    )
    .map_err(|e| e.to_string())?;
    let now = evidence(&outcomes, providers.selected().provider.name());
    if now["suites"] != recorded["suites"] {
        let said = |e: &Value| -> String {
            e["suites"]
                .as_array()
                .map(|s| {
                    s.iter()
                        .map(|s| {
                            format!(
                                "{}: {}/{}",
                                s["eval_id"].as_str().unwrap_or("?"),
                                s["candidate"]["passed"],
                                s["candidate"]["cases"]
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        return Err(format!(
            "replayed from {cassette}, the suites give {} (p = {}), the evidence says {} (p = {})",
            said(&now),
            now["suites"][0]["p_value"],
            said(recorded),
            recorded["suites"][0]["p_value"]
        ));
    }
    verdict(&format!("{id}@{candidate}"), &outcomes).map_err(|e| e.to_string())?;
    let cases: u64 = outcomes.iter().filter_map(|o| o.candidate()).map(|v| v.cases).sum();
    Ok(format!(
        "eval evidence recomputed from {cassette}: {} suite(s), {cases} case(s)",
        outcomes.len()
    ))
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
