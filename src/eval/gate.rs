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
/// The base's tree, as [`recompute`] reads it: a file's bytes, and the files below a
/// folder (paths relative to the project; `None` when they cannot be read).
pub struct BaseTree<'a> {
    pub file: &'a dyn Fn(&str) -> Option<Vec<u8>>,
    pub files_under: &'a dyn Fn(&str) -> Option<Vec<String>>,
}

impl BaseTree<'_> {
    /// The base's suites that evaluate `id`: their paths, relative to the project.
    fn suites_of(&self, id: &str) -> std::result::Result<Vec<String>, String> {
        let listing = (self.files_under)(super::suite::FOLDER)
            .ok_or("the base's evals/ folder cannot be listed")?;
        let mut out = Vec::new();
        for rel in listing {
            let hidden = rel.split('/').skip(1).any(|part| part.starts_with('.'));
            let name = rel.rsplit('/').next().unwrap_or_default();
            if hidden || !super::suite::is_suite_name(name) {
                continue;
            }
            let path = Path::new(&rel);
            let value = (self.file)(&rel).and_then(|bytes| String::from_utf8(bytes).ok()).and_then(
                |text| {
                    let syntax = crate::document::syntax_for(path);
                    crate::document::parse(&text, syntax, path, None).ok()
                },
            );
            let names = value.as_ref().and_then(|v| v.get("contract")).and_then(Value::as_str);
            if names.and_then(|pin| Pin::parse(pin).ok()).is_some_and(|p| p.id == id) {
                out.push(rel);
            }
        }
        Ok(out)
    }
}

/// Every file a suite's verdicts rest on, relative to the project root: the suite, its
/// dataset, and the files the schemas of its assertions and of its cases' `expect`
/// assertions read.
fn reads_of(root: &Path, suite: &super::suite::Suite) -> std::result::Result<Vec<String>, String> {
    let mut reads = vec![suite.rel.clone(), suite.dataset.clone()];
    reads.extend(suite.assertions.iter().flat_map(|a| a.reads.iter().cloned()));
    let dataset = super::dataset::Dataset::open(root, &suite.dataset).map_err(|e| e.to_string())?;
    for case in dataset {
        let case = case.map_err(|e| e.to_string())?;
        reads.extend(case.expect.iter().flat_map(|a| a.reads.iter().cloned()));
    }
    reads.sort();
    reads.dedup();
    Ok(reads)
}

pub fn recompute(
    project: &crate::project::Project,
    base: &crate::config::Config,
    base_tree: &BaseTree<'_>,
    event: &crate::registry::Event,
) -> std::result::Result<String, String> {
    let base_file = base_tree.file;
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
    let base_cassette = base_file(&cassette);
    let base_cassette = base_cassette.as_deref();
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
    // Every suite the base holds for the contract is run: one deleted or moved in this
    // change would leave out what the base asks the candidate to pass.
    for rel in base_tree.suites_of(id)? {
        if !suites.iter().any(|s| s.rel == rel) {
            return Err(format!(
                "the base's suite {rel} evaluates {id} and is not in this change's tree: a promotion is verified against every suite the base holds; restore it, or land its removal first, then promote"
            ));
        }
    }
    // What the gate compares with is not the evidence's to say: the suites (thresholds,
    // assertions, dataset) are the base's, and the baseline is the version the gate picks
    // (the highest active one below the candidate), never one the evidence names or
    // leaves out.
    for suite in &suites {
        for rel in &reads_of(root, suite)? {
            let today =
                crate::confine::Root::new(root).content(Path::new(rel)).ok().and_then(|p| {
                    let mut bytes = Vec::new();
                    let mut file = crate::confine::open_file(&p).ok()?;
                    std::io::Read::read_to_end(&mut file, &mut bytes).ok().map(|_| bytes)
                });
            if today.is_none() || base_file(rel) != today {
                return Err(format!(
                    "{rel}, which suite {} reads, is not the base's (added or changed in this change): a promotion is verified against the suites the base holds; land the suite's change first, then promote",
                    suite.eval_id
                ));
            }
        }
    }
    let named_baseline =
        recorded["suites"][0]["baseline"]["version"].as_str().and_then(crate::id::parse_version);
    let expected = baseline_of(&project.registry, id, &candidate);
    if named_baseline != expected {
        let shown = |v: &Option<Semver>| v.as_ref().map_or("none".to_string(), ToString::to_string);
        return Err(format!(
            "the evidence compares {candidate} with {}, but the gate compares it with {} (the highest active version below it)",
            shown(&named_baseline),
            shown(&expected)
        ));
    }
    let evaluator = super::Evaluator {
        project,
        providers: &providers,
        ledger: None,
        options: super::Options { jobs: 1, repeat: None, filter: None },
        run: None,
    };
    let outcomes =
        run(&evaluator, &suites, id, &candidate, expected.as_ref(), &crate::validate::NoProgress)
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::{CaseResult, Comparison, Failure, Latency, VersionOutcome, suite};
    use super::*;
    use crate::error::Code;
    use crate::gateway::Usage;

    const SHA: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn registry(entries: &[(&str, &str)]) -> Registry {
        let list: Vec<Value> = entries
            .iter()
            .map(|(version, state)| {
                let mut e = json!({"contract_id": "PRC-A-001", "version": version, "path": "c.json",
                                   "sha256": SHA, "state": state, "registered_at": "2026-01-01T00:00:00Z"});
                if *state == "deprecated" {
                    e["successor_version"] = json!("9.0.0");
                    e["deprecated_at"] = json!("2026-02-01T00:00:00Z");
                }
                e
            })
            .collect();
        let doc = json!({"registry_version": 1, "contracts": list, "prompt_packs": []});
        Registry::from_text(Path::new("/x/registry.json"), doc.to_string(), String::new()).unwrap()
    }

    fn version(role: &'static str, version: &str, cases: u64, passed: u64) -> VersionOutcome {
        VersionOutcome {
            contract: "PRC-A-001".into(),
            version: version.into(),
            role,
            cases,
            passed,
            runs: cases,
            schema_valid: cases,
            failures: BTreeMap::new(),
            usage: Usage::default(),
            judge_usage: Usage::default(),
            latency_ms: Latency::default(),
            cost: None,
            unpriced: vec![],
            results: Vec::<CaseResult>::new(),
        }
    }

    fn outcome(eval_id: &str, pass_rate: f64, versions: Vec<VersionOutcome>) -> SuiteOutcome {
        let comparison = (versions.len() == 2).then(|| Comparison {
            baseline: "PRC-A-001@1.0.0".into(),
            candidate: "PRC-A-001@1.1.0".into(),
            pass_rate_delta: -0.75,
            regressions: (0..6).map(|i| format!("c{i}")).collect(),
            improvements: vec![],
            p_value: 0.03125,
            significant_regression: true,
        });
        SuiteOutcome {
            eval_id: eval_id.into(),
            file: "evals/a.json".into(),
            dataset: "evals/a.jsonl".into(),
            dataset_sha256: SHA.into(),
            thresholds: suite::Thresholds { pass_rate, schema_valid_rate: None },
            repeat: 1,
            filter: None,
            versions,
            comparison,
        }
    }

    #[test]
    fn the_baseline_is_the_highest_active_version_below_the_candidate() {
        let reg = registry(&[
            ("1.0.0", "active"),
            ("1.2.0", "active"),
            ("1.3.0", "draft"),
            ("1.1.0", "deprecated"),
            ("2.0.0", "active"),
        ]);
        let baseline = |v: &str| baseline_of(&reg, "PRC-A-001", &v.parse().unwrap());
        assert_eq!(baseline("1.5.0"), Some("1.2.0".parse().unwrap()), "not the draft 1.3.0");
        assert_eq!(baseline("1.2.0"), Some("1.0.0".parse().unwrap()), "below, not equal");
        assert_eq!(baseline("1.1.5"), Some("1.0.0".parse().unwrap()), "not the deprecated 1.1.0");
        assert_eq!(baseline("1.0.0"), None, "a first version has none");
        assert_eq!(baseline_of(&reg, "PRC-B-001", &"3.0.0".parse().unwrap()), None);
    }

    #[test]
    fn the_verdict_names_every_reason_and_the_code_of_those_that_are_no_regression() {
        let passing = outcome("EVAL-A-001", 0.5, vec![version("candidate", "1.1.0", 8, 8)]);
        assert!(verdict("PRC-A-001@1.1.0", std::slice::from_ref(&passing)).is_ok());
        let mut failing = outcome(
            "EVAL-B-001",
            0.9,
            vec![version("baseline", "1.0.0", 8, 8), version("candidate", "1.1.0", 8, 2)],
        );
        failing.versions[0].results.push(CaseResult {
            case_id: "c9".into(),
            line: 9,
            ok: false,
            samples: 1,
            passed_samples: 0,
            input: None,
            output: None,
            error: Some(Failure { code: Code::ReplayMiss, message: "no recording".into() }),
            assertions: vec![],
            not_run: true,
        });
        let e = verdict("PRC-A-001@1.1.0", &[passing, failing]).unwrap_err();
        assert_eq!(e.code(), Code::EvalRegression);
        let Error::EvalRegression { subject, reasons } = e else { unreachable!() };
        assert_eq!(subject, "the eval gate refuses PRC-A-001@1.1.0");
        assert_eq!(reasons.len(), 3, "{reasons:#?}");
        assert!(
            reasons[0].ends_with("; the first (c9): no recording [replay_miss]"),
            "{}",
            reasons[0]
        );
        assert!(
            reasons[1].contains("2 of 8 cases pass (25.0%), below the suite's threshold 90.0%")
        );
        assert!(!reasons[1].contains("[eval_regression]"), "{}", reasons[1]);
        assert!(reasons[2].contains("exact McNemar p = 0.0312 < 0.05"), "{}", reasons[2]);
    }

    #[test]
    fn the_evidence_records_each_suite_its_dataset_and_both_versions() {
        let compared = outcome(
            "EVAL-A-001",
            0.9,
            vec![version("baseline", "1.0.0", 8, 8), version("candidate", "1.1.0", 8, 2)],
        );
        let alone = outcome("EVAL-B-001", 0.5, vec![version("candidate", "1.1.0", 4, 3)]);
        let e = evidence(&[compared, alone], "ci");
        assert_eq!(e["provider"], "ci");
        let a = &e["suites"][0];
        assert_eq!(
            (&a["eval_id"], &a["dataset"], &a["dataset_sha256"]),
            (&json!("EVAL-A-001"), &json!("evals/a.jsonl"), &json!(SHA))
        );
        assert_eq!(
            a["baseline"],
            json!({"version": "1.0.0", "cases": 8, "passed": 8, "pass_rate": 1.0})
        );
        assert_eq!(
            a["candidate"],
            json!({"version": "1.1.0", "cases": 8, "passed": 2, "pass_rate": 0.25})
        );
        assert_eq!(
            (&a["regressions"], &a["improvements"], &a["p_value"]),
            (&json!(6), &json!(0), &json!(0.03125))
        );
        let b = e["suites"][1].as_object().unwrap();
        assert!(!b.contains_key("baseline") && !b.contains_key("p_value"), "{b:?}");
        assert_eq!(b["candidate"]["pass_rate"], 0.75);
    }

    #[test]
    fn the_summary_shows_the_candidate_first_and_the_comparison() {
        let compared = outcome(
            "EVAL-A-001",
            0.9,
            vec![version("baseline", "1.0.0", 8, 8), version("candidate", "1.1.0", 8, 5)],
        );
        let alone = outcome("EVAL-B-001", 0.5, vec![version("candidate", "1.1.0", 4, 3)]);
        assert_eq!(
            summary_lines(&[compared, alone]),
            "eval gate: EVAL-A-001: 1.1.0 passes 5/8 (62.5%), 1.0.0 passes 8/8 (100.0%); 6 regression(s), 0 improvement(s), McNemar p = 0.0312\n\
             eval gate: EVAL-B-001: 1.1.0 passes 3/4 (75.0%)\n"
        );
    }
}
