//! Evaluation (SPEC §19): evidence about behaviour. Schemas govern the form of a change;
//! an eval suite measures whether a version still answers well.
//!
//! A suite ([`suite`]) names a contract pin, a JSON Lines dataset ([`dataset`]) and
//! assertions ([`assert`]); each case runs through pactum's own exchange
//! ([`Caller::call`]: input validated, context assembled, output extracted and checked,
//! every call in the ledger and charged to the run's budget), and passes when its output
//! was extracted, fits `output_schema` and holds every assertion — `judge` assertions ask a
//! governed judge contract ([`judge::ask`], the call a `semantic_check` makes too). Against a
//! second version, the same cases run side by side and the exact McNemar test ([`stats`])
//! tells a real regression from noise.
//! Reports are text, JSON, JUnit and Markdown ([`report`]).
//!
//! **Memory is bounded by `jobs`, not by the dataset:** one thread reads the dataset a
//! line at a time into a channel that holds `jobs` cases; `jobs` workers take cases from
//! it; what is kept of a finished case is its verdicts (and its outputs only where they
//! explain something: a failure, or a case the two versions disagree on), never its
//! input.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::error::{Code, Error, Result};
use crate::executor::budget::Budget;
use crate::executor::call::Caller;
use crate::executor::judge;
use crate::gateway::Usage;
use crate::gateway::select::ProviderSet;
use crate::id::{Pin, Requirement};
use crate::ledger::Ledger;
use crate::project::Project;
use crate::resolve::ResolveOptions;
use crate::validate::Progress;
use crate::work_order::{Constraints, ProviderChoice, Task, WorkOrder};

pub mod assert;
pub mod dataset;
pub mod from_ledger;
pub mod gate;
pub mod kept;
pub mod report;
pub mod scaffold;
pub mod spread;
pub mod stats;
pub mod suite;

pub use suite::Suite;

use assert::Verdict;
use dataset::{Case, Dataset};

/// A regression is significant below this p-value.
pub const SIGNIFICANCE: f64 = 0.05;

/// How to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Cases run at once (at least 1).
    pub jobs: usize,
    /// Runs of each case, instead of the suite's `repeat`.
    pub repeat: Option<u32>,
    /// Only cases with this tag.
    pub filter: Option<String>,
}

/// One version to evaluate.
#[derive(Clone, Debug)]
pub struct Version {
    pub pin: Pin,
    /// Whether the pin may resolve to a draft (a candidate not yet promoted).
    pub allow_draft: bool,
}

/// The versions a suite runs on: the one under test, and the baseline it is compared with.
#[derive(Clone, Debug)]
pub struct Plan {
    pub candidate: Version,
    pub baseline: Option<Version>,
}

/// A failure as reports show it: `{code, message}`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Failure {
    pub code: Code,
    pub message: String,
}

impl Failure {
    fn of(e: &Error) -> Failure {
        Failure { code: e.code(), message: e.to_string() }
    }
}

/// One assertion's verdict on one case.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Checked {
    pub kind: &'static str,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One case on one version.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CaseResult {
    pub case_id: String,
    pub line: usize,
    pub ok: bool,
    /// Runs of the case (`repeat`), and how many passed; a case passes when all did.
    pub samples: u32,
    pub passed_samples: u32,
    /// The case's input, kept with its output (for `pactum view` and `--format html`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// The output (kept for failures and for cases the versions disagree on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Why the exchange gave no output to check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Failure>,
    pub assertions: Vec<Checked>,
    /// True when the case could not run at all (its input, the provider, the budget):
    /// such a case measures nothing about the model.
    #[serde(skip)]
    pub not_run: bool,
}

/// Latency percentiles, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p95: f64,
}

/// One version's results on one suite.
#[derive(Clone, Debug)]
pub struct VersionOutcome {
    pub contract: String,
    pub version: String,
    /// `candidate` or `baseline`.
    pub role: &'static str,
    pub cases: u64,
    pub passed: u64,
    pub runs: u64,
    pub schema_valid: u64,
    /// Failed assertions by kind, and exchanges that gave no output by code.
    pub failures: BTreeMap<String, u64>,
    pub usage: Usage,
    pub judge_usage: Usage,
    pub latency_ms: Latency,
    /// What the calls cost (judge calls included), when every model that answered has a
    /// price.
    pub cost: Option<f64>,
    /// Models that answered without a price in `pactum.toml`.
    pub unpriced: Vec<String>,
    pub results: Vec<CaseResult>,
}

impl VersionOutcome {
    pub fn pass_rate(&self) -> f64 {
        ratio(self.passed, self.cases)
    }

    pub fn schema_valid_rate(&self) -> f64 {
        ratio(self.schema_valid, self.runs)
    }

    /// `ID@VERSION`.
    pub fn key(&self) -> String {
        format!("{}@{}", self.contract, self.version)
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 / whole as f64 }
}

/// The candidate against the baseline, case by case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    pub pass_rate_delta: f64,
    /// Cases that pass on the baseline and fail on the candidate.
    pub regressions: Vec<String>,
    pub improvements: Vec<String>,
    /// The exact McNemar p-value over the discordant cases.
    pub p_value: f64,
    /// More regressions than improvements, with `p_value` below [`SIGNIFICANCE`].
    pub significant_regression: bool,
}

/// One suite's evaluation.
#[derive(Clone, Debug)]
pub struct SuiteOutcome {
    pub eval_id: String,
    /// The suite file, relative to the project root.
    pub file: String,
    pub dataset: String,
    pub dataset_sha256: String,
    pub thresholds: suite::Thresholds,
    pub repeat: u32,
    pub filter: Option<String>,
    /// The baseline first (when there is one), then the candidate.
    pub versions: Vec<VersionOutcome>,
    pub comparison: Option<Comparison>,
}

impl SuiteOutcome {
    /// The version under test.
    pub fn candidate(&self) -> Option<&VersionOutcome> {
        self.versions.iter().find(|v| v.role == "candidate")
    }

    /// What keeps this evaluation from passing: cases that could not run (their code),
    /// then the candidate's thresholds, then a significant regression (`eval_regression`).
    pub fn problems(&self) -> Vec<Failure> {
        let mut out = Vec::new();
        for v in &self.versions {
            let not_run: Vec<&CaseResult> = v.results.iter().filter(|r| r.not_run).collect();
            if let Some(first) = not_run.first().and_then(|r| r.error.as_ref()) {
                out.push(Failure {
                    code: first.code,
                    message: format!(
                        "{} on {}: {} case(s) could not run, so they measure nothing; the first ({}): {}",
                        self.eval_id,
                        v.key(),
                        not_run.len(),
                        not_run[0].case_id,
                        first.message
                    ),
                });
            }
        }
        if let Some(c) = self.candidate() {
            let regression = |message: String| Failure { code: Code::EvalRegression, message };
            if c.pass_rate() < self.thresholds.pass_rate {
                out.push(regression(format!(
                    "{} on {}: {} of {} cases pass ({}), below the suite's threshold {}",
                    self.eval_id,
                    c.key(),
                    c.passed,
                    c.cases,
                    percent(c.pass_rate()),
                    percent(self.thresholds.pass_rate)
                )));
            }
            if let Some(min) = self.thresholds.schema_valid_rate
                && c.schema_valid_rate() < min
            {
                out.push(regression(format!(
                    "{} on {}: {} of the outputs fit output_schema, below the suite's threshold {}",
                    self.eval_id,
                    c.key(),
                    percent(c.schema_valid_rate()),
                    percent(min)
                )));
            }
        }
        if let Some(cmp) = self.comparison.as_ref().filter(|c| c.significant_regression) {
            out.push(Failure {
                code: Code::EvalRegression,
                message: format!(
                    "{}: {} regressed against {} on {} case(s) ({}) and improved on {}; exact McNemar p = {:.4} < {SIGNIFICANCE}",
                    self.eval_id,
                    cmp.candidate,
                    cmp.baseline,
                    cmp.regressions.len(),
                    list_ids(&cmp.regressions),
                    cmp.improvements.len(),
                    cmp.p_value
                ),
            });
        }
        out
    }
}

/// `0.7` as `70.0%`.
pub fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

/// The first ids of a list, for a message.
fn list_ids(ids: &[String]) -> String {
    let mut shown: Vec<&str> = ids.iter().take(5).map(String::as_str).collect();
    if ids.len() > 5 {
        shown.push("…");
    }
    shown.join(", ")
}

/// Evaluates suites of one project through one set of providers.
pub struct Evaluator<'a> {
    pub project: &'a Project,
    pub providers: &'a ProviderSet,
    /// Every exchange (cases and judges) is recorded here.
    pub ledger: Option<&'a Ledger>,
    pub options: Options,
    /// The run the cases' exchanges name (`eval_run`), when it goes to a ledger.
    pub run: Option<Run>,
}

/// One evaluation run as the ledger tells it (SPEC §22): the id its cases' exchange records
/// and its `eval_completed` record name (`eval_run`, a SHA-256 in hex, which span ids are
/// taken from), so that its spans are one trace, the cases' chats under the `eval` span;
/// and when it started, which that span starts at.
#[derive(Clone, Debug)]
pub struct Run {
    pub id: String,
    pub started_at: String,
}

impl Run {
    /// A run starting now, its id unique to this process and instant.
    pub fn start() -> Run {
        let started_at = crate::ledger::now();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = format!("eval:{}:{nanos}:{started_at}", std::process::id());
        Run { id: crate::digest::sha256_hex(seed.as_bytes()), started_at }
    }
}

/// What one version needs while a suite runs.
struct Runner<'c> {
    pin: Pin,
    caller: Caller<'c>,
}

/// One run of one case on one version.
#[derive(Default)]
struct Sample {
    ok: bool,
    not_run: bool,
    schema_valid: bool,
    output: Option<Value>,
    error: Option<Failure>,
    assertions: Vec<Checked>,
    latency: Option<Duration>,
    usage: Usage,
    judge_usage: Usage,
    /// Usage by the model that answered, for the cost.
    priced: Vec<(Option<String>, Usage)>,
    failures: Vec<String>,
}

/// A case's runs on every version, in the plan's order.
struct CaseRuns {
    index: usize,
    id: String,
    line: usize,
    /// The case's input (`None` from a worker that did not send it back).
    input: Option<Value>,
    versions: Vec<Vec<Sample>>,
}

/// A version's running totals.
#[derive(Default)]
struct Tally {
    cases: u64,
    passed: u64,
    runs: u64,
    schema_valid: u64,
    failures: BTreeMap<String, u64>,
    usage: Usage,
    judge_usage: Usage,
    latencies: Vec<f64>,
    /// Usage by the model that answered (the cost is priced once per model at the end).
    by_model: BTreeMap<String, Usage>,
    results: Vec<(usize, CaseResult)>,
}

impl Evaluator<'_> {
    /// Runs `suite` on the plan's versions. `Err` when the suite cannot run at all: a pin
    /// that does not resolve, a dataset that cannot be read or has a line that is not a
    /// case (`eval_dataset_invalid`).
    pub fn suite(
        &self,
        suite: &Suite,
        plan: &Plan,
        progress: &dyn Progress,
    ) -> Result<SuiteOutcome> {
        let versions = self.versions(plan)?;
        let work_order = work_order_of(suite);
        let budgets: Vec<Budget> =
            versions.iter().map(|_| Budget::new(suite.token_budget)).collect();
        let runners: Vec<Runner<'_>> = versions
            .iter()
            .zip(&budgets)
            .map(|((pin, allow_draft, _), budget)| Runner {
                pin: pin.clone(),
                caller: Caller::new(
                    self.project,
                    self.providers,
                    self.ledger,
                    &work_order,
                    budget,
                    *allow_draft,
                )
                .with_eval_run(self.run.as_ref().map(|r| r.id.clone())),
            })
            .collect();
        let repeat = self.options.repeat.unwrap_or(suite.repeat).max(1);
        let jobs = self.options.jobs.max(1);
        progress.start(count_lines(&self.project.root, &suite.dataset));
        let mut tallies: Vec<Tally> = versions.iter().map(|_| Tally::default()).collect();
        let mut dataset = Dataset::open(&self.project.root, &suite.dataset)?;
        let read = std::thread::scope(|scope| -> Result<()> {
            let (cases_in, cases_out) = mpsc::sync_channel::<(usize, Case)>(jobs);
            // Owned by the workers only: when they are gone, the reader's send fails
            // instead of waiting for room forever.
            let cases_out = std::sync::Arc::new(Mutex::new(cases_out));
            let (done_in, done_out) = mpsc::channel::<CaseRuns>();
            for _ in 0..jobs {
                let done_in = done_in.clone();
                let cases_out = std::sync::Arc::clone(&cases_out);
                let runners = &runners;
                scope.spawn(move || {
                    loop {
                        let next = cases_out.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok((index, case)) = next else { break };
                        let versions = runners
                            .iter()
                            .map(|r| (0..repeat).map(|_| sample(r, suite, &case)).collect())
                            .collect();
                        let runs = CaseRuns {
                            index,
                            id: case.id,
                            line: case.line,
                            input: Some(case.input),
                            versions,
                        };
                        if done_in.send(runs).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(done_in);
            drop(cases_out);
            let filter = self.options.filter.clone();
            let dataset = &mut dataset;
            let reader = scope.spawn(move || -> Result<()> {
                let mut index = 0;
                for case in dataset {
                    let case = case?;
                    if filter.as_ref().is_some_and(|tag| !case.tags.contains(tag)) {
                        continue;
                    }
                    if cases_in.send((index, case)).is_err() {
                        break;
                    }
                    index += 1;
                }
                Ok(())
            });
            for runs in done_out {
                collect(&mut tallies, runs);
                progress.advance();
            }
            reader.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        progress.finish();
        read?;
        let dataset_sha256 = dataset.sha256()?;
        Ok(self.outcome(suite, &versions, tallies, dataset_sha256, repeat))
    }

    /// The plan's versions as exact pins, the baseline first, with their roles.
    fn versions(&self, plan: &Plan) -> Result<Vec<(Pin, bool, &'static str)>> {
        let mut versions = Vec::new();
        if let Some(b) = &plan.baseline {
            versions.push((self.exact(b)?, b.allow_draft, "baseline"));
        }
        versions.push((self.exact(&plan.candidate)?, plan.candidate.allow_draft, "candidate"));
        Ok(versions)
    }

    /// A suite's outcome from the versions' totals (cases run here or by workers alike).
    fn outcome(
        &self,
        suite: &Suite,
        versions: &[(Pin, bool, &'static str)],
        tallies: Vec<Tally>,
        dataset_sha256: String,
        repeat: u32,
    ) -> SuiteOutcome {
        let outcomes: Vec<VersionOutcome> = tallies
            .into_iter()
            .zip(versions)
            .map(|(t, (pin, _, role))| finish(t, pin, role, &self.project.config))
            .collect();
        let comparison = (outcomes.len() == 2).then(|| compare(&outcomes[0], &outcomes[1]));
        SuiteOutcome {
            eval_id: suite.eval_id.clone(),
            file: suite.rel.clone(),
            dataset: suite.dataset.clone(),
            dataset_sha256,
            thresholds: suite.thresholds,
            repeat,
            filter: self.options.filter.clone(),
            versions: outcomes,
            comparison,
        }
    }

    /// The version a pin resolves to, as an exact pin (both runs use fixed versions).
    fn exact(&self, version: &Version) -> Result<Pin> {
        let resolved = self.project.resolve(
            &version.pin,
            ResolveOptions { allow_draft: version.allow_draft, route: None },
        )?;
        Ok(Pin {
            id: resolved.contract.id.clone(),
            requirement: Requirement::Exact(resolved.contract.version.clone()),
        })
    }
}

/// The work order an evaluation's exchanges run under: the suite's id (the ledger's
/// `work_order_id`), no repairs (a case measures the model's answer), the suite's budget.
fn work_order_of(suite: &Suite) -> WorkOrder {
    WorkOrder {
        id: suite.eval_id.clone(),
        task: Task::Exchange { contract: suite.contract.clone(), input: json!({}) },
        constraints: Constraints {
            token_budget: suite.token_budget,
            max_repair_attempts: 0,
            ..Constraints::default()
        },
        session_id: None,
        route_key: None,
        agent_id: None,
        agent_class: None,
        tier: None,
        assembled_context: None,
        provider: ProviderChoice::default(),
        output_dir: None,
        semantic_check: None,
        metadata: json!({}),
        path: suite.path.clone(),
        tools: None,
    }
}

/// Non-blank lines of the dataset (for the progress bar; 0 when it cannot be read).
fn count_lines(root: &std::path::Path, rel: &str) -> usize {
    let Ok(real) = crate::confine::Root::new(root).file(std::path::Path::new(rel)) else {
        return 0;
    };
    let Ok(file) = crate::confine::open_file(&real) else { return 0 };
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(file);
    let (mut lines, mut blank) = (0, true);
    loop {
        let Ok(available) = reader.fill_buf() else { return lines };
        if available.is_empty() {
            return lines + usize::from(!blank);
        }
        for &b in available {
            if b == b'\n' {
                lines += usize::from(!blank);
                blank = true;
            } else if !b.is_ascii_whitespace() {
                blank = false;
            }
        }
        let n = available.len();
        reader.consume(n);
    }
}

/// One run of `case` on a version: the exchange, then every assertion on its output.
fn sample(r: &Runner<'_>, suite: &Suite, case: &Case) -> Sample {
    let mut s = Sample::default();
    let x = match r.caller.call(&r.pin, &case.input, None, 0, None) {
        Ok(x) => x,
        Err(e) => {
            // The case never got an answer to check: its input, its context, the budget or
            // the provider (a replay miss) stopped it.
            s.not_run = true;
            s.failures.push(e.code().as_str().to_string());
            s.error = Some(Failure::of(&e));
            return s;
        }
    };
    s.latency = Some(x.response.latency);
    s.usage = x.response.usage.unwrap_or_default();
    s.priced.push((x.response.model.clone(), s.usage));
    let raw = x.raw_text();
    let output = match x.output {
        Ok(out) => out.into_value(),
        Err(e) => {
            s.failures.push(e.code().as_str().to_string());
            s.error = Some(Failure::of(&e));
            s.output = Some(Value::String(raw));
            return s;
        }
    };
    s.schema_valid = true;
    for a in suite.assertions.iter().chain(&case.expect) {
        let (ok, message) = match a.check(&output) {
            Verdict::Pass => (true, None),
            Verdict::Fail(m) => (false, Some(m)),
            Verdict::Judge(spec, target) => {
                let judged = judge::ask(&r.caller, spec, &case.input, target);
                s.judge_usage = s.judge_usage.plus(judged.usage);
                s.priced.push((judged.model, judged.usage));
                match judged.verdict {
                    Ok(v) if v.pass => (true, None),
                    Ok(v) => (false, Some(format!("{}: {}", a.place(), v.reason))),
                    Err(e) => {
                        // A judge that could not be asked measures nothing either.
                        s.not_run |= !e.is_output_failure();
                        if s.not_run && s.error.is_none() {
                            s.error = Some(Failure::of(&e));
                        }
                        (false, Some(format!("{}: the judge gave no verdict: {e}", a.place())))
                    }
                }
            }
        };
        if !ok {
            s.failures.push(a.kind.as_str().to_string());
        }
        s.assertions.push(Checked { kind: a.kind.as_str(), ok, message });
    }
    s.ok = !s.not_run && s.assertions.iter().all(|a| a.ok);
    s.output = Some(output);
    s
}

/// Adds one case's runs to the versions' totals. Outputs are kept only where they explain
/// something: a failed case, or a case the versions disagree on.
fn collect(tallies: &mut [Tally], runs: CaseRuns) {
    let oks: Vec<bool> = runs.versions.iter().map(|samples| samples.iter().all(|s| s.ok)).collect();
    let disagree = oks.iter().any(|ok| *ok != oks[0]);
    for ((tally, samples), ok) in tallies.iter_mut().zip(runs.versions).zip(oks) {
        tally.cases += 1;
        tally.passed += u64::from(ok);
        let passed_samples = samples.iter().filter(|s| s.ok).count() as u32;
        let count = samples.len() as u32;
        let mut shown = None;
        for s in samples {
            tally.runs += 1;
            tally.schema_valid += u64::from(s.schema_valid);
            for f in &s.failures {
                *tally.failures.entry(f.clone()).or_default() += 1;
            }
            tally.usage = tally.usage.plus(s.usage);
            tally.judge_usage = tally.judge_usage.plus(s.judge_usage);
            if let Some(l) = s.latency {
                tally.latencies.push(l.as_secs_f64() * 1000.0);
            }
            for (model, usage) in &s.priced {
                let model = model.as_deref().unwrap_or("unknown").to_string();
                let total = tally.by_model.entry(model).or_default();
                *total = total.plus(*usage);
            }
            // The first failing run explains the case; a passing case shows its last run.
            if shown.as_ref().is_none_or(|first: &Sample| first.ok) {
                shown = Some(s);
            }
        }
        let Some(s) = shown else { continue };
        let keep_output = !ok || disagree;
        tally.results.push((
            runs.index,
            CaseResult {
                case_id: runs.id.clone(),
                line: runs.line,
                ok,
                samples: count,
                passed_samples,
                input: runs.input.clone().filter(|_| keep_output),
                output: s.output.filter(|_| keep_output),
                error: s.error,
                assertions: s.assertions,
                not_run: s.not_run,
            },
        ));
    }
}

fn finish(
    mut t: Tally,
    pin: &Pin,
    role: &'static str,
    config: &crate::config::Config,
) -> VersionOutcome {
    t.results.sort_by_key(|(i, _)| *i);
    let mut cost = 0.0;
    let mut unpriced = Vec::new();
    for (model, usage) in &t.by_model {
        match config.price_of(model) {
            Some(price) => cost += price.cost(*usage),
            None if usage.total() == 0 => {}
            None => unpriced.push(model.clone()),
        }
    }
    t.latencies.sort_by(f64::total_cmp);
    let round = |ms: f64| (ms * 1000.0).round() / 1000.0;
    VersionOutcome {
        contract: pin.id.clone(),
        version: match &pin.requirement {
            Requirement::Exact(v) => v.to_string(),
            other => other.to_string(),
        },
        role,
        cases: t.cases,
        passed: t.passed,
        runs: t.runs,
        schema_valid: t.schema_valid,
        failures: t.failures,
        usage: t.usage,
        judge_usage: t.judge_usage,
        latency_ms: Latency {
            p50: round(stats::percentile(&t.latencies, 50.0)),
            p95: round(stats::percentile(&t.latencies, 95.0)),
        },
        cost: unpriced.is_empty().then_some(cost),
        unpriced,
        results: t.results.into_iter().map(|(_, r)| r).collect(),
    }
}

/// The candidate against the baseline, paired case by case.
fn compare(baseline: &VersionOutcome, candidate: &VersionOutcome) -> Comparison {
    let mut regressions = Vec::new();
    let mut improvements = Vec::new();
    for (b, c) in baseline.results.iter().zip(&candidate.results) {
        match (b.ok, c.ok) {
            (true, false) => regressions.push(c.case_id.clone()),
            (false, true) => improvements.push(c.case_id.clone()),
            _ => {}
        }
    }
    let p_value = stats::mcnemar_exact(regressions.len() as u64, improvements.len() as u64);
    Comparison {
        baseline: baseline.key(),
        candidate: candidate.key(),
        pass_rate_delta: candidate.pass_rate() - baseline.pass_rate(),
        significant_regression: regressions.len() > improvements.len() && p_value < SIGNIFICANCE,
        regressions,
        improvements,
        p_value,
    }
}

impl Evaluator<'_> {
    /// Appends the one `eval_completed` record of the run to its ledger (none without one):
    /// the run (`eval_run`, `started_at`), each suite with its dataset's SHA-256, the
    /// versions' summaries and the comparison, the provider and the cassette; then commits
    /// the ledger (a [`Durability::Grouped`](crate::ledger::Durability) ledger syncs every
    /// record of the run here, at once).
    pub fn record(
        &self,
        outcomes: &[SuiteOutcome],
        provider: &str,
        cassette: Option<&str>,
    ) -> Result<()> {
        let Some(ledger) = self.ledger else { return Ok(()) };
        let mut fields = Map::new();
        fields.insert("event".into(), json!("eval_completed"));
        if let Some(run) = &self.run {
            fields.insert("eval_run".into(), json!(run.id));
            fields.insert("started_at".into(), json!(run.started_at));
        }
        fields.insert("suites".into(), Value::Array(outcomes.iter().map(summary).collect()));
        fields.insert("provider".into(), json!(provider));
        if let Some(c) = cassette {
            fields.insert("cassette".into(), json!(c));
        }
        fields.insert("ok".into(), json!(outcomes.iter().all(|o| o.problems().is_empty())));
        ledger.append(crate::ledger::Kind::Eval, fields)?;
        // The run's records, its cases' exchanges included, reach the disk together.
        ledger.commit()
    }
}

/// A suite's outcome without its case results: what the ledger and the gate keep.
pub fn summary(o: &SuiteOutcome) -> Value {
    let versions: Vec<Value> = o
        .versions
        .iter()
        .map(|v| {
            let mut s = json!({
                "contract_id": v.contract, "version": v.version, "role": v.role,
                "cases": v.cases, "passed": v.passed, "pass_rate": v.pass_rate(),
                "schema_valid_rate": v.schema_valid_rate(), "usage": v.usage,
            });
            if let Some(cost) = v.cost {
                s["cost"] = json!(cost);
            }
            s
        })
        .collect();
    let mut s = json!({
        "eval_id": o.eval_id, "file": o.file, "dataset": o.dataset,
        "dataset_sha256": o.dataset_sha256, "versions": versions,
    });
    if let Some(c) = &o.comparison {
        s["comparison"] = json!({
            "baseline": c.baseline, "candidate": c.candidate,
            "pass_rate_delta": c.pass_rate_delta, "regressions": c.regressions.len(),
            "improvements": c.improvements.len(), "p_value": c.p_value,
        });
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passing(kind: &'static str) -> Checked {
        Checked { kind, ok: true, message: None }
    }

    /// One run: passing or failing its one `equals` assertion, its output `output`, 10 + 2
    /// tokens and a latency of `ms`, answered by `model`.
    fn run(ok: bool, output: &str, ms: u64, model: &str) -> Sample {
        let usage = Usage { prompt_tokens: 10, completion_tokens: 2 };
        Sample {
            ok,
            schema_valid: true,
            output: Some(json!(output)),
            assertions: vec![Checked { ok, ..passing("equals") }],
            latency: Some(Duration::from_millis(ms)),
            usage,
            priced: vec![(Some(model.to_string()), usage)],
            failures: if ok { vec![] } else { vec!["equals".into()] },
            ..Sample::default()
        }
    }

    fn case(index: usize, versions: Vec<Vec<Sample>>) -> CaseRuns {
        CaseRuns { index, id: format!("c{index}"), line: index + 1, input: None, versions }
    }

    fn outcome(role: &'static str, version: &str, oks: &[bool]) -> VersionOutcome {
        let results: Vec<CaseResult> = oks
            .iter()
            .enumerate()
            .map(|(i, &ok)| CaseResult {
                case_id: format!("c{i}"),
                line: i + 1,
                ok,
                samples: 1,
                passed_samples: u32::from(ok),
                input: None,
                output: None,
                error: None,
                assertions: vec![],
                not_run: false,
            })
            .collect();
        VersionOutcome {
            contract: "PRC-A-001".into(),
            version: version.into(),
            role,
            cases: oks.len() as u64,
            passed: oks.iter().filter(|ok| **ok).count() as u64,
            runs: oks.len() as u64,
            schema_valid: oks.len() as u64,
            failures: BTreeMap::new(),
            usage: Usage::default(),
            judge_usage: Usage::default(),
            latency_ms: Latency::default(),
            cost: None,
            unpriced: vec![],
            results,
        }
    }

    fn suite_outcome(versions: Vec<VersionOutcome>) -> SuiteOutcome {
        let comparison = (versions.len() == 2).then(|| compare(&versions[0], &versions[1]));
        SuiteOutcome {
            eval_id: "EVAL-A-001".into(),
            file: "evals/a.json".into(),
            dataset: "evals/a.jsonl".into(),
            dataset_sha256: "ab".repeat(32),
            thresholds: suite::Thresholds { pass_rate: 0.75, schema_valid_rate: Some(0.9) },
            repeat: 1,
            filter: None,
            versions,
            comparison,
        }
    }

    #[test]
    fn a_case_passes_only_when_every_run_does_and_its_output_is_kept_only_to_explain() {
        let mut tallies = vec![Tally::default(), Tally::default()];
        // The baseline passes both runs, the candidate fails its second: they disagree, so
        // both outputs are kept; the candidate shows its failing run.
        let both = vec![run(true, "a", 10, "m"), run(true, "b", 20, "m")];
        collect(
            &mut tallies,
            case(1, vec![both, vec![run(true, "c", 30, "m"), run(false, "d", 40, "m")]]),
        );
        // Both pass: nothing to explain, no output kept.
        collect(
            &mut tallies,
            case(0, vec![vec![run(true, "e", 1, "m")], vec![run(true, "f", 2, "m")]]),
        );
        let [baseline, candidate] = &tallies[..] else { unreachable!() };
        assert_eq!((baseline.cases, baseline.passed, baseline.runs), (2, 2, 3));
        assert_eq!((candidate.cases, candidate.passed, candidate.runs), (2, 1, 3));
        assert_eq!(candidate.failures, BTreeMap::from([("equals".to_string(), 1)]));
        assert_eq!(candidate.usage, Usage { prompt_tokens: 30, completion_tokens: 6 });
        assert_eq!(candidate.latencies, [30.0, 40.0, 2.0]);
        let shown = |t: &Tally, i: usize| {
            let r = &t.results[i].1;
            (r.case_id.clone(), r.ok, r.passed_samples, r.samples, r.output.clone())
        };
        assert_eq!(shown(baseline, 0), ("c1".into(), true, 2, 2, Some(json!("b"))));
        assert_eq!(shown(candidate, 0), ("c1".into(), false, 1, 2, Some(json!("d"))));
        assert_eq!(shown(baseline, 1), ("c0".into(), true, 1, 1, None));
        assert_eq!(shown(candidate, 1), ("c0".into(), true, 1, 1, None));
    }

    #[test]
    fn finish_sorts_by_case_prices_each_model_and_names_the_unpriced() {
        let mut config = crate::config::Config::default();
        let price = crate::config::Price { prompt_per_mtok: 1.0, completion_per_mtok: 4.0 };
        config.prices.insert("gpt-4o-mini".into(), price);
        let pin = Pin::parse("PRC-A-001@1.2.0").unwrap();
        let tally = |models: &[&str]| {
            let mut t = vec![Tally::default()];
            for (i, model) in models.iter().enumerate().rev() {
                collect(
                    &mut t,
                    case(i, vec![vec![run(i % 2 == 0, "x", 10 * (i as u64 + 1), model)]]),
                );
            }
            t.remove(0)
        };
        // A dated name is priced by the longest price name it starts with.
        let priced =
            finish(tally(&["gpt-4o-mini-2024-07-18", "gpt-4o-mini"]), &pin, "candidate", &config);
        assert_eq!(priced.version, "1.2.0");
        assert_eq!(
            priced.results.iter().map(|r| r.case_id.as_str()).collect::<Vec<_>>(),
            ["c0", "c1"]
        );
        assert_eq!((priced.cases, priced.passed), (2, 1));
        // 20 prompt and 4 completion tokens: 20 · 1 + 4 · 4 per million.
        assert_eq!(priced.cost, Some(36.0 / 1_000_000.0));
        assert!(priced.unpriced.is_empty());
        assert_eq!((priced.latency_ms.p50, priced.latency_ms.p95), (10.0, 20.0));
        // One model without a price: no cost at all, and the model named.
        let unpriced = finish(tally(&["gpt-4o-mini", "claude-x"]), &pin, "candidate", &config);
        assert_eq!((unpriced.cost, unpriced.unpriced), (None, vec!["claude-x".to_string()]));
    }

    #[test]
    fn a_regression_is_significant_only_with_more_regressions_and_mcnemar_below_005() {
        let compared = |b: &[bool], c: &[bool]| {
            compare(&outcome("baseline", "1.0.0", b), &outcome("candidate", "1.1.0", c))
        };
        // Six regressions, no improvement: p = 2 / 2^6.
        let c = compared(&[true; 8], &[false, false, false, false, false, false, true, true]);
        assert_eq!((c.regressions.len(), c.improvements.len(), c.p_value), (6, 0, 0.03125));
        assert!(c.significant_regression);
        assert_eq!(c.regressions, ["c0", "c1", "c2", "c3", "c4", "c5"]);
        assert_eq!(
            (c.baseline.as_str(), c.candidate.as_str()),
            ("PRC-A-001@1.0.0", "PRC-A-001@1.1.0")
        );
        assert_eq!(c.pass_rate_delta, -0.75);
        // Six regressions and one improvement: p = 2 · 8 / 2^7 = 0.125, noise.
        let mut b = [true; 7];
        b[6] = false;
        let c = compared(&b, &[false, false, false, false, false, false, true]);
        assert_eq!((c.regressions.len(), c.improvements.len(), c.p_value), (6, 1, 0.125));
        assert!(!c.significant_regression);
        // Six improvements: significant, but no regression.
        let c = compared(&[false; 6], &[true; 6]);
        assert_eq!((c.improvements.len(), c.p_value), (6, 0.03125));
        assert!(!c.significant_regression);
    }

    #[test]
    fn problems_are_cases_that_did_not_run_then_thresholds_then_a_significant_regression() {
        // At the thresholds exactly: nothing.
        let mut at = outcome("candidate", "1.1.0", &[true, true, true, false]);
        at.schema_valid = 9;
        at.runs = 10;
        let none = suite_outcome(vec![at]).problems();
        assert!(none.is_empty(), "{none:?}");
        // Below both, two cases that could not run on the baseline, six regressions.
        let mut baseline = outcome("baseline", "1.0.0", &[true; 8]);
        for r in &mut baseline.results[3..5] {
            r.not_run = true;
            r.error =
                Some(Failure { code: Code::ReplayMiss, message: "no recorded answer".into() });
        }
        let mut candidate =
            outcome("candidate", "1.1.0", &[false, false, false, false, false, false, true, true]);
        candidate.schema_valid = 7;
        let problems = suite_outcome(vec![baseline, candidate]).problems();
        let codes: Vec<Code> = problems.iter().map(|p| p.code).collect();
        assert_eq!(
            codes,
            [Code::ReplayMiss, Code::EvalRegression, Code::EvalRegression, Code::EvalRegression]
        );
        assert_eq!(
            problems[0].message,
            "EVAL-A-001 on PRC-A-001@1.0.0: 2 case(s) could not run, so they measure nothing; the first (c3): no recorded answer"
        );
        assert_eq!(
            problems[1].message,
            "EVAL-A-001 on PRC-A-001@1.1.0: 2 of 8 cases pass (25.0%), below the suite's threshold 75.0%"
        );
        assert_eq!(
            problems[2].message,
            "EVAL-A-001 on PRC-A-001@1.1.0: 87.5% of the outputs fit output_schema, below the suite's threshold 90.0%"
        );
        assert_eq!(
            problems[3].message,
            "EVAL-A-001: PRC-A-001@1.1.0 regressed against PRC-A-001@1.0.0 on 6 case(s) (c0, c1, c2, c3, c4, …) and improved on 0; exact McNemar p = 0.0312 < 0.05"
        );
    }

    #[test]
    fn the_summary_keeps_no_case_and_says_what_was_compared() {
        let o = suite_outcome(vec![
            outcome("baseline", "1.0.0", &[true, true]),
            outcome("candidate", "1.1.0", &[true, false]),
        ]);
        let s = summary(&o);
        assert_eq!(s["dataset_sha256"], json!("ab".repeat(32)));
        assert_eq!(s["versions"][1]["role"], "candidate");
        assert_eq!(s["versions"][1]["pass_rate"], 0.5);
        assert_eq!(s["comparison"]["regressions"], 1);
        assert_eq!(s["comparison"]["p_value"], 1.0);
        assert!(!s.to_string().contains("c1"), "no case ids: {s}");
        assert_eq!((percent(0.625), percent(1.0)), ("62.5%".to_string(), "100.0%".to_string()));
        let ids: Vec<String> = (0..7).map(|i| format!("c{i}")).collect();
        assert_eq!(list_ids(&ids[..2]), "c0, c1");
        assert_eq!(list_ids(&ids), "c0, c1, c2, c3, c4, …");
    }
}
