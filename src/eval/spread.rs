//! A suite's cases spread over `pactum worker`s (SPEC §27): `pactum eval --queue URL`.
//!
//! The unit of work is what one of [`Evaluator::suite`]'s local threads does with one case:
//! the case on every version of the plan, `repeat` times each. The coordinator reads the
//! dataset as a local run does, and puts each case on the work stream as an **eval-case
//! entry** ([`CaseOrder`]: the suite's file and its SHA-256, the exact versions, `repeat`,
//! the provider, and the case's own dataset line); a worker runs it with [`Evaluator::case`]
//! — the same `sample` a local run calls, through its own ledger — and writes the case's
//! runs as its result ([`report`]). The coordinator folds the runs into the versions'
//! totals with the local run's own `collect` and `finish`, in the dataset's order, so the
//! report, its numbers and the gate evidence are the local run's: one description of an
//! evaluation, whatever ran its cases. An entry is an id like any other on the queue (one
//! result per id, claimed from a dead worker after `--claim-idle`), so a worker killed in
//! the middle of a suite changes nothing in the report.
//!
//! A suite with a `token_budget` is evaluated locally only: its budget is charged case after
//! case in one process, which workers cannot share (`--queue` refuses it).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{CaseRuns, Checked, Evaluator, Failure, Plan, Runner, Sample, SuiteOutcome, Tally};
use crate::error::{Code, Error, Result};
use crate::executor::budget::Budget;
use crate::gateway::Usage;
use crate::id::Pin;
use crate::validate::Progress;

/// What travels in an eval-case entry (`eval_case`, `schemas/queue_entry.schema.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseOrder {
    /// The entry's id (`work_order_id` on the queue).
    pub id: String,
    /// The suite's file, relative to the project root in the worker's checkout.
    pub suite: String,
    /// The SHA-256 of the suite's file: a worker whose checkout holds another suite refuses.
    pub suite_sha256: String,
    /// The versions, in the plan's order (the baseline first), as exact pins.
    pub versions: Vec<VersionOrder>,
    pub repeat: u32,
    /// The provider the coordinator chose (a name from pactum.toml, or a kind).
    pub provider: Option<String>,
    /// Answers only from the replay cassette (`eval --replay`).
    pub replay_only: bool,
    /// The case's place among the cases run (the report's order).
    pub index: usize,
    /// Its line in the dataset, and the line itself.
    pub line: usize,
    pub case: String,
    /// The evaluation run the case belongs to (`eval_run`): the worker's exchange records
    /// name it, so their spans join the run's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_run: Option<String>,
}

/// One version of an order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionOrder {
    pub pin: String,
    pub allow_draft: bool,
}

/// A sample as it travels back: every field `collect` reads.
#[derive(Serialize, Deserialize)]
struct WireSample {
    ok: bool,
    not_run: bool,
    schema_valid: bool,
    #[serde(default)]
    output: Option<Value>,
    #[serde(default)]
    error: Option<(String, String)>,
    assertions: Vec<(String, bool, Option<String>)>,
    /// Nanoseconds: the latency the local run would have added, exactly.
    latency_ns: Option<u64>,
    usage: Usage,
    judge_usage: Usage,
    priced: Vec<(Option<String>, Usage)>,
    failures: Vec<String>,
}

impl From<&Sample> for WireSample {
    fn from(s: &Sample) -> WireSample {
        WireSample {
            ok: s.ok,
            not_run: s.not_run,
            schema_valid: s.schema_valid,
            output: s.output.clone(),
            error: s.error.as_ref().map(|f| (f.code.as_str().to_string(), f.message.clone())),
            assertions: s
                .assertions
                .iter()
                .map(|a| (a.kind.to_string(), a.ok, a.message.clone()))
                .collect(),
            latency_ns: s.latency.map(|l| u64::try_from(l.as_nanos()).unwrap_or(u64::MAX)),
            usage: s.usage,
            judge_usage: s.judge_usage,
            priced: s.priced.clone(),
            failures: s.failures.clone(),
        }
    }
}

impl WireSample {
    fn into_sample(self) -> std::result::Result<Sample, String> {
        let error = match self.error {
            None => None,
            Some((code, message)) => Some(Failure {
                code: Code::from_name(&code).ok_or_else(|| format!("unknown code `{code}`"))?,
                message,
            }),
        };
        let assertions = self
            .assertions
            .into_iter()
            .map(|(kind, ok, message)| {
                let kind = super::assert::Kind::named(&kind)
                    .ok_or_else(|| format!("unknown assertion kind `{kind}`"))?
                    .as_str();
                Ok(Checked { kind, ok, message })
            })
            .collect::<std::result::Result<Vec<_>, String>>()?;
        Ok(Sample {
            ok: self.ok,
            not_run: self.not_run,
            schema_valid: self.schema_valid,
            output: self.output,
            error,
            assertions,
            latency: self.latency_ns.map(Duration::from_nanos),
            usage: self.usage,
            judge_usage: self.judge_usage,
            priced: self.priced,
            failures: self.failures,
        })
    }
}

/// A case's runs as a worker's result: `{"ok": true, "eval_case": ID, "index", "case_id",
/// "line", "versions": [[sample...]...]}`; `ok` is whether the case ran on the worker (its
/// verdicts are in the samples), not whether it passed.
fn report(order: &CaseOrder, runs: &CaseRuns) -> Value {
    let versions: Vec<Vec<WireSample>> =
        runs.versions.iter().map(|v| v.iter().map(WireSample::from).collect()).collect();
    json!({
        "ok": true, "eval_case": order.id, "index": runs.index, "case_id": runs.id,
        "line": runs.line, "input": runs.input, "versions": versions,
    })
}

/// A worker's result read back into a case's runs.
fn runs_of(result: &Value, versions: usize) -> std::result::Result<CaseRuns, String> {
    if result["ok"] != json!(true) {
        return Err(format!(
            "{}: {}",
            result["code"].as_str().unwrap_or("failed"),
            result["message"].as_str().unwrap_or("the worker could not run the case")
        ));
    }
    let field = |name: &str| result.get(name).ok_or_else(|| format!("no `{name}`"));
    let index = field("index")?.as_u64().ok_or("`index` is no number")? as usize;
    let line = field("line")?.as_u64().ok_or("`line` is no number")? as usize;
    let id = field("case_id")?.as_str().ok_or("`case_id` is no string")?.to_string();
    let wire: Vec<Vec<WireSample>> =
        serde_json::from_value(field("versions")?.clone()).map_err(|e| e.to_string())?;
    if wire.len() != versions {
        return Err(format!("{} versions, not {versions}", wire.len()));
    }
    let versions = wire
        .into_iter()
        .map(|v| v.into_iter().map(WireSample::into_sample).collect())
        .collect::<std::result::Result<Vec<Vec<Sample>>, String>>()?;
    Ok(CaseRuns { index, id, line, input: result.get("input").cloned(), versions })
}

/// Where the coordinator puts case orders and finds their results (the queue: `pactum
/// eval --queue`; any other transport in tests).
pub trait Spread {
    /// Enqueues one case order.
    fn submit(&mut self, order: &CaseOrder) -> Result<()>;
    /// Results that arrived since the last call (waiting a while when there are none):
    /// `(id, result)` pairs, of any id (the caller picks its own).
    fn results(&mut self) -> Result<Vec<(String, Value)>>;
}

/// The index an order's id ends with (for messages).
fn index_of(id: &str) -> &str {
    id.rsplit('-').next().unwrap_or(id)
}

/// How the coordinator names its orders: `{run}-{eval_id}-{index}`.
pub fn order_id(run: &str, eval_id: &str, index: usize) -> String {
    format!("{run}-{eval_id}-{index:06}")
}

impl Evaluator<'_> {
    /// [`Evaluator::suite`], each case run by a worker through `spread`: the cases are put on
    /// it as they are read, and their runs folded in as their results arrive (in the
    /// dataset's order in the report, as locally). `run` names this evaluation's orders
    /// (unique per run: an id with a result is never run again); `provider` and
    /// `replay_only` go to the workers with each order.
    pub fn suite_spread(
        &self,
        suite: &super::Suite,
        plan: &Plan,
        progress: &dyn Progress,
        spread: &mut dyn Spread,
        run: &str,
        provider: (Option<&str>, bool),
    ) -> Result<SuiteOutcome> {
        if suite.token_budget.is_some() {
            return Err(Error::Usage {
                message: format!(
                    "{} sets a token_budget, charged case after case in one process, which workers cannot share; evaluate it without --queue",
                    suite.eval_id
                ),
            });
        }
        let versions = self.versions(plan)?;
        let suite_sha256 = sha256_of(&self.project.root, &suite.rel)?;
        let orders: Vec<VersionOrder> = versions
            .iter()
            .map(|(pin, allow_draft, _)| VersionOrder {
                pin: pin.to_string(),
                allow_draft: *allow_draft,
            })
            .collect();
        let repeat = self.options.repeat.unwrap_or(suite.repeat).max(1);
        progress.start(super::count_lines(&self.project.root, &suite.dataset));
        let mut dataset = super::dataset::Dataset::open(&self.project.root, &suite.dataset)?;
        let mut waiting: BTreeMap<String, usize> = BTreeMap::new();
        let mut index = 0;
        for case in &mut dataset {
            let case = case?;
            if self.options.filter.as_ref().is_some_and(|tag| !case.tags.contains(tag)) {
                continue;
            }
            let order = CaseOrder {
                id: order_id(run, &suite.eval_id, index),
                suite: suite.rel.clone(),
                suite_sha256: suite_sha256.clone(),
                versions: orders.clone(),
                repeat,
                provider: provider.0.map(str::to_string),
                replay_only: provider.1,
                index,
                line: case.line,
                case: case.text,
                eval_run: self.run.as_ref().map(|r| r.id.clone()),
            };
            spread.submit(&order)?;
            waiting.insert(order.id, index);
            index += 1;
        }
        let dataset_sha256 = dataset.sha256()?;
        let mut tallies: Vec<Tally> = versions.iter().map(|_| Tally::default()).collect();
        while !waiting.is_empty() {
            for (id, result) in spread.results()? {
                if waiting.remove(&id).is_none() {
                    continue;
                }
                if result["ok"] != json!(true) {
                    // The case did not run on a worker (its suite differs there, or it went
                    // to the dead letters): the evaluation measures nothing without it.
                    return Err(Error::Usage {
                        message: format!(
                            "case {} of {} could not run on a worker: {}: {}; fix it and evaluate again",
                            index_of(&id),
                            suite.eval_id,
                            result["code"].as_str().unwrap_or("failed"),
                            result["message"].as_str().unwrap_or("no reason given")
                        ),
                    });
                }
                let runs = runs_of(&result, versions.len()).map_err(|why| Error::Usage {
                    message: format!(
                        "the result of {id} on the queue is not a case's runs ({why}); check that every worker runs this version of pactum on this checkout"
                    ),
                })?;
                super::collect(&mut tallies, runs);
                progress.advance();
            }
        }
        progress.finish();
        Ok(self.outcome(suite, &versions, tallies, dataset_sha256, repeat))
    }

    /// One case order, as a worker runs it: the suite from the worker's checkout (refused
    /// when its SHA-256 is not the order's), the case parsed from the order's line, run on
    /// every version `repeat` times through this evaluator's providers and ledger. The
    /// result is the case's runs ([`report`]).
    pub fn case(&self, order: &CaseOrder) -> Result<Value> {
        let root = &self.project.root;
        let have = sha256_of(root, &order.suite)?;
        if have != order.suite_sha256 {
            return Err(Error::Usage {
                message: format!(
                    "{} in this checkout is not the suite the evaluation was started with (SHA-256 {have}, not {}); run the workers on the same commit",
                    order.suite, order.suite_sha256
                ),
            });
        }
        let path = crate::confine::Root::new(root)
            .file(std::path::Path::new(&order.suite))
            .map_err(|r| r.into_error(std::path::Path::new(&order.suite)))?;
        let suite = super::Suite::load(root, &path)?;
        let case = super::dataset::Dataset::one(root, &suite.dataset, order.line, &order.case)?;
        let pins = order
            .versions
            .iter()
            .map(|v| Ok((Pin::parse(&v.pin)?, v.allow_draft)))
            .collect::<Result<Vec<(Pin, bool)>>>()?;
        let work_order = super::work_order_of(&suite);
        let budgets: Vec<Budget> = pins.iter().map(|_| Budget::new(None)).collect();
        let runners: Vec<Runner<'_>> = pins
            .iter()
            .zip(&budgets)
            .map(|((pin, allow_draft), budget)| Runner {
                pin: pin.clone(),
                caller: crate::executor::call::Caller::new(
                    self.project,
                    self.providers,
                    self.ledger,
                    &work_order,
                    budget,
                    *allow_draft,
                )
                .with_eval_run(order.eval_run.clone()),
            })
            .collect();
        let versions = runners
            .iter()
            .map(|r| (0..order.repeat.max(1)).map(|_| super::sample(r, &suite, &case)).collect())
            .collect();
        let runs = CaseRuns {
            index: order.index,
            id: case.id,
            line: case.line,
            input: Some(case.input),
            versions,
        };
        Ok(report(order, &runs))
    }
}

/// The SHA-256 of a project file (a suite).
fn sha256_of(root: &std::path::Path, rel: &str) -> Result<String> {
    let path = crate::confine::Root::new(root)
        .file(std::path::Path::new(rel))
        .map_err(|r| r.into_error(std::path::Path::new(rel)))?;
    let bytes = crate::document::read_limited(&path, crate::document::MAX_FILE_BYTES)?;
    Ok(crate::digest::sha256_hex(&bytes))
}

/// [`Spread`] over a work-order queue: orders go on the work stream as eval-case entries,
/// results are read from the results stream after where it ended when the evaluation began.
pub struct OnQueue<Q: crate::queue::Queue> {
    queue: Q,
    after: String,
    /// The last dead letter seen: a case sent there (its attempts kept killing workers)
    /// ends the evaluation with its reason instead of a wait for a result that never comes.
    dead_after: String,
    wait: Duration,
}

impl<Q: crate::queue::Queue> OnQueue<Q> {
    /// Results are read from after the newest one there now.
    pub fn new(mut queue: Q, wait: Duration) -> Result<OnQueue<Q>> {
        let mut after = "0".to_string();
        loop {
            let page = queue.results(&after, None)?;
            match page.last() {
                Some(last) => after = last.id.clone(),
                None => break,
            }
        }
        let mut dead_after = "0".to_string();
        loop {
            let page = queue.dead_letters(&dead_after)?;
            match page.last() {
                Some((id, _)) => dead_after = id.clone(),
                None => break,
            }
        }
        Ok(OnQueue { queue, after, dead_after, wait })
    }
}

impl<Q: crate::queue::Queue> Spread for OnQueue<Q> {
    fn submit(&mut self, order: &CaseOrder) -> Result<()> {
        let job = crate::queue::Job {
            work_order_id: order.id.clone(),
            path: None,
            work_order: serde_json::to_value(order).unwrap_or(Value::Null),
            kind: crate::queue::EntryKind::EvalCase,
        };
        self.queue.submit(&job).map(|_| ())
    }

    fn results(&mut self) -> Result<Vec<(String, Value)>> {
        let got = self.queue.results(&self.after, Some(self.wait))?;
        if let Some(last) = got.last() {
            self.after = last.id.clone();
        }
        let mut out: Vec<(String, Value)> =
            got.into_iter().map(|c| (c.work_order_id, c.result)).collect();
        let dead = self.queue.dead_letters(&self.dead_after)?;
        if let Some((last, _)) = dead.last() {
            self.dead_after = last.clone();
        }
        for (_, fields) in dead {
            let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
            if let Some(id) = field("work_order_id") {
                let reason = field("reason").unwrap_or_default();
                out.push((id, json!({"ok": false, "code": "dead_lettered", "message": reason})));
            }
        }
        Ok(out)
    }
}
