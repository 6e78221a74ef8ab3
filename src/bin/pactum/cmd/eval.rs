//! `pactum eval [SUITE_OR_ID...]`: runs eval suites on a contract version (and, with
//! `--against`, on a second one side by side) and reports pass rates, failures, tokens,
//! latency, cost and the comparison, as text, JSON, JUnit, Markdown or HTML (SPEC §19,
//! §26); each run keeps its JSON report under `.pactum/evals/`.

use std::io::IsTerminal;
use std::path::PathBuf;

use pactum::error::{Error, ProviderFailure};
use pactum::eval::{self, Evaluator, Options, Plan, Suite, Version, report};
use pactum::gateway::select::{Choice, ProviderSet};
use pactum::id::Pin;
use pactum::ledger::{Durability, Ledger};
use pactum::project::Project;
use pactum::validate::{NoProgress, Progress};
use pactum::work_order::ProviderChoice;

use crate::output::{self, FAILED, OK};

/// What `eval` does besides running suites.
#[derive(clap::Subcommand)]
enum Action {
    /// Make a dataset from recorded exchanges (`pactum eval dataset --from-ledger --contract PIN --out cases.jsonl`).
    Dataset(crate::cmd::dataset::Args),
}

/// How `eval` reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum EvalFormat {
    #[default]
    Text,
    Json,
    Junit,
    Markdown,
    /// The comparison as one self-contained HTML page (a CI artifact).
    Html,
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// Suite files or eval ids (default: every suite under evals/, or those of --contract's id).
    #[arg(value_name = "SUITE_OR_ID")]
    suites: Vec<String>,
    /// Run the suites on this version instead of the suite's pin (ID@VERSION, a range or a label).
    #[arg(long, value_name = "PIN")]
    contract: Option<String>,
    /// Also run the same cases on this version, the baseline, and compare (regressions, improvements, exact McNemar p-value).
    #[arg(long, value_name = "PIN")]
    against: Option<String>,
    /// Provider: a name from pactum.toml or openai, anthropic, scripted, replay, dry-run.
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Record: the replay provider calls its record_with provider and stores every exchange in its cassette.
    #[arg(long, conflicts_with = "replay")]
    record: bool,
    /// Replay only: answers come from the replay provider's cassette, never from a live call (a miss is replay_miss).
    #[arg(long)]
    replay: bool,
    /// Runs of each case (nondeterministic models); a case passes when every run passes.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: Option<u32>,
    /// Cases run at once (default: what suits the provider; 4 for HTTP, 1 for scripted replies).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    jobs: Option<u64>,
    /// Only the cases tagged TAG.
    #[arg(long, value_name = "TAG")]
    filter: Option<String>,
    /// Let the version under test be a draft (evaluate before promoting).
    #[arg(long)]
    allow_draft: bool,
    /// Project root (the folder of registry.json); default: found by walking up from the current folder.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = EvalFormat::Text)]
    format: EvalFormat,
    /// Same as --format json.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    telemetry: crate::telemetry::OtlpArgs,
    /// Spread the cases over `pactum worker`s on this queue (redis://[:PASSWORD@]HOST[:PORT][/DB]):
    /// each case is one entry, its runs the worker's result; the report is the local run's.
    #[arg(long, value_name = "URL", conflicts_with = "record")]
    queue: Option<String>,
    /// With --queue: the stream the workers read (results from NAME:results).
    #[arg(long, value_name = "NAME", default_value = "pactum", requires = "queue")]
    stream: String,
    /// With --queue: the most time one queue command and its whole reply may take.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = super::queue::parse_duration, requires = "queue")]
    queue_timeout: std::time::Duration,
}

/// The progress bar on stderr (drawn only on a terminal).
struct Bar(indicatif::ProgressBar);

impl Progress for Bar {
    fn start(&self, total: usize) {
        self.0.set_position(0);
        self.0.set_length(total as u64);
    }
    fn advance(&self) {
        self.0.inc(1);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

impl Bar {
    /// A bar drawn on stderr when it is a terminal (hidden otherwise).
    fn on_stderr() -> Option<Bar> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = Bar(indicatif::ProgressBar::hidden());
        bar.0.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        bar.0.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} evaluating {pos}/{len} cases {wide_bar}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(bar)
    }
}

/// The bar, or nothing drawn.
fn progress_of(bar: &Option<Bar>) -> &dyn Progress {
    match bar {
        Some(bar) => bar,
        None => &NoProgress,
    }
}

/// The provider's notes (offline, replay mode) on stderr.
fn print_notes(providers: &ProviderSet) {
    let selected = providers.selected();
    for note in selected.offline.iter().chain(&selected.notices) {
        note_line(note);
    }
}

pub fn note_line(note: &str) {
    let mut err = anstream::stderr().lock();
    let style = anstyle::Style::new().bold().fg_color(Some(anstyle::AnsiColor::Cyan.into()));
    let _ = std::io::Write::write_fmt(
        &mut err,
        format_args!("{style}note{style:#}: {}\n", output::shown_line(note)),
    );
}

/// What the eval gate of a promotion measured: the evidence for the promote event, and
/// the lines the command prints.
pub struct Gated {
    pub evidence: serde_json::Value,
    pub text: String,
}

/// The eval gate of `registry promote ID@VERSION --eval` (`asked`) or `[gate] eval = true`:
/// every suite of `id` on the candidate and the current active version, through `[gate]
/// provider` (else the project's default provider), each exchange and one
/// `eval_completed` record in the ledger. `Err(eval_regression)` refuses the promotion.
/// `None` when the gate is only configured and no suite evaluates `id` (a note says so);
/// asked for with `--eval`, no suite is an error.
pub fn promotion_gate(
    project: &Project,
    id: &str,
    candidate: &semver::Version,
    asked: bool,
) -> Result<Option<Gated>, Error> {
    let root = project.root.clone();
    let suites = eval::gate::suites_of(&root, id)?;
    if suites.is_empty() {
        let what = format!("no eval suite under evals/ evaluates {id}");
        if !asked {
            note_line(&format!(
                "{what}; [gate] eval = true has nothing to run, so {id}@{candidate} is promoted without evaluation"
            ));
            return Ok(None);
        }
        return Err(Error::Io {
            path: root.join(eval::suite::FOLDER),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "{what}, so --eval has nothing to measure; scaffold one with `pactum new eval {id}`"
                ),
            ),
        });
    }
    let baseline = eval::gate::baseline_of(&project.registry, id, candidate);
    let choice = Choice {
        cli: project.config.gate.provider.as_deref(),
        work_order: &ProviderChoice::default(),
        work_order_dir: &root,
    };
    let providers = ProviderSet::new(&project.config, &root, choice)?;
    print_notes(&providers);
    let selected = providers.selected();
    if selected.provider.name() == "dry-run" {
        return Err(Error::provider(
            "dry-run",
            pactum::error::ProviderFailure::NotConfigured,
            format!(
                "the eval gate of {id}@{candidate} has no model to evaluate with: {NO_MODEL}; or set [gate] provider"
            ),
        ));
    }
    // The gate's cases are spans too when the environment or pactum.toml names a collector.
    let exporter = crate::telemetry::OtlpArgs::default().start(&project.config, None)?;
    let ledger = exporter.attach(
        Ledger::open(&crate::cmd::ledger::project_ledger(&root, &project.config)?)?
            .naming_from(&root)
            .redacting(output::redactor().clone())
            .with_durability(Durability::Grouped),
    );
    let evaluator = Evaluator {
        project,
        providers: &providers,
        ledger: Some(&ledger),
        options: Options { jobs: selected.provider.default_jobs(), repeat: None, filter: None },
        run: Some(eval::Run::start()),
    };
    let bar = Bar::on_stderr();
    let outcomes =
        eval::gate::run(&evaluator, &suites, id, candidate, baseline.as_ref(), progress_of(&bar))?;
    let cassette = project
        .config
        .gate
        .provider
        .as_ref()
        .or(project.config.env.provider.as_ref())
        .or(project.config.defaults.provider.as_ref())
        .and_then(|name| project.config.providers.get(name))
        .filter(|p| p.kind == "replay")
        .and_then(|p| p.cassette.clone());
    evaluator.record(&outcomes, selected.provider.name(), cassette.as_deref())?;
    eval::gate::verdict(&format!("{id}@{candidate}"), &outcomes)?;
    // The cassette the evidence was measured on, as it is after the run: `--base`
    // recomputes the evidence from it, and rewritten recordings no longer match.
    let bound = match &cassette {
        Some(rel) => {
            let path = pactum::confine::Root::new(&root)
                .content(std::path::Path::new(rel))
                .map_err(|r| r.into_error(std::path::Path::new(rel)))?;
            Some((rel.as_str(), pactum::document::load(&path, None)?.sha256))
        }
        None => None,
    };
    Ok(Some(Gated {
        evidence: eval::gate::evidence_with_cassette(&outcomes, selected.provider.name(), bound),
        text: eval::gate::summary_lines(&outcomes),
    }))
}

pub fn exec(args: Args) -> u8 {
    if let Some(Action::Dataset(dataset)) = args.action {
        return crate::cmd::dataset::exec(dataset);
    }
    let format = if args.json { EvalFormat::Json } else { args.format };
    let json = format == EvalFormat::Json;
    match run(&args) {
        Ok((outcomes, head, no_model)) => {
            // Scores of the dry-run stand-in measure no model: said in every format, and
            // the evaluation fails, so no CI step reads them as a pass.
            let no_model = no_model.then(|| {
                Error::provider(
                    "dry-run",
                    pactum::error::ProviderFailure::NotConfigured,
                    NO_MODEL.to_string(),
                )
            });
            // The head the run wrote, published (SPEC §24); the same document is kept
            // under .pactum/evals/ for `pactum view` (SPEC §26).
            let mut doc = report::json(&outcomes);
            doc["ledger"] = head;
            if let Some(e) = &no_model {
                doc["ok"] = serde_json::json!(false);
                doc["evidence"] = serde_json::json!(false);
                doc["code"] = serde_json::json!(e.code().as_str());
                doc["message"] = serde_json::json!(e.to_string());
            }
            let doc = output::redactor().redact_value(doc);
            keep_report(args.root.as_deref(), &doc);
            match format {
                EvalFormat::Json => output::print_json(&doc),
                EvalFormat::Html => output::print_exact(&pactum::view::html::report_file(&doc)),
                EvalFormat::Junit => output::print_exact(&report::junit(&outcomes)),
                EvalFormat::Markdown => {
                    let mut md = report::markdown(&outcomes);
                    if no_model.is_some() {
                        md = md.replacen("### ✅ pactum eval", "### ❌ pactum eval", 1);
                        md.push_str(&format!(
                            "
> **No model:** {NO_MODEL}
"
                        ));
                    }
                    output::print_exact(&md);
                }
                EvalFormat::Text => {
                    let mut text = report::text(&outcomes);
                    if no_model.is_some() {
                        text = text.replace(&format!("{OK_LINE}\n"), "");
                        text.push_str("no model: these numbers are no evidence\n");
                    }
                    output::print_text(&text);
                    for p in outcomes.iter().flat_map(|o| o.problems()) {
                        let mut err = anstream::stderr().lock();
                        let style = anstyle::Style::new()
                            .bold()
                            .fg_color(Some(anstyle::AnsiColor::Red.into()));
                        let _ = std::io::Write::write_fmt(
                            &mut err,
                            format_args!(
                                "{style}error[{}]{style:#}: {}\n",
                                p.code,
                                output::shown_line(&p.message)
                            ),
                        );
                    }
                }
            }
            if let Some(e) = &no_model {
                if format != EvalFormat::Json {
                    eprintln!("error[{}]: {}", e.code(), output::shown_line(&e.to_string()));
                }
                return FAILED;
            }
            if outcomes.iter().all(|o| o.problems().is_empty()) { OK } else { FAILED }
        }
        Err(e) => output::fail(&e, json),
    }
}

/// Keeps the run's report under `.pactum/evals/` (a note when it cannot: the run's
/// verdict does not depend on it).
fn keep_report(root: Option<&std::path::Path>, doc: &serde_json::Value) {
    let root = output::root_or_here(root);
    let name = eval::kept::run_name(&pactum::ledger::now(), std::process::id());
    if let Err(e) = eval::kept::keep(&root, &name, doc) {
        note_line(&format!("the report was not kept under {}: {e}", eval::kept::FOLDER));
    }
}

fn open_project(root: Option<&PathBuf>) -> Result<Project, Error> {
    let common = output::Common { root: root.cloned(), format: output::Format::Text, json: false };
    common.project()
}

fn pin(text: &str) -> Result<Pin, Error> {
    Pin::parse(text)
}

/// What an evaluation on the dry-run stand-in says instead of a verdict.
const NO_MODEL: &str = "every case was answered by the dry-run stand-in (a minimal answer that fits output_schema), not a model, so these scores are no evidence and no threshold counts as met; configure a provider ([defaults] provider in pactum.toml), pass --provider NAME, or replay recorded answers with --replay";
/// The text report's verdict when every suite passes.
const OK_LINE: &str = "ok: every suite meets its thresholds";

fn run(args: &Args) -> Result<(Vec<eval::SuiteOutcome>, serde_json::Value, bool), Error> {
    let mut project = open_project(args.root.as_ref())?;
    let root = project.root.clone();
    let contract = args.contract.as_deref().map(pin).transpose()?;
    let against = args.against.as_deref().map(pin).transpose()?;
    if let (Some(c), Some(a)) = (&contract, &against)
        && c.id != a.id
    {
        return Err(Error::PinInvalid {
            pin: a.to_string(),
            reason: format!(
                "--against compares versions of one contract, and --contract names {}",
                c.id
            ),
        });
    }
    let suites = suites(args, &root, contract.as_ref())?;
    let provider_name = mode_override(args, &mut project)?;
    let choice = Choice {
        cli: args.provider.as_deref(),
        work_order: &ProviderChoice::default(),
        work_order_dir: &root,
    };
    let providers = ProviderSet::new(&project.config, &root, choice)?;
    let selected = providers.selected();
    print_notes(&providers);
    let jobs = args.jobs.map_or_else(|| selected.provider.default_jobs(), |j| j as usize);
    let exporter = args.telemetry.start(&project.config, None)?;
    let ledger = exporter.attach(
        Ledger::open(&crate::cmd::ledger::project_ledger(&root, &project.config)?)?
            .naming_from(&root)
            .redacting(output::redactor().clone())
            .with_durability(Durability::Grouped),
    );
    let evaluator = Evaluator {
        project: &project,
        providers: &providers,
        ledger: Some(&ledger),
        options: Options { jobs, repeat: args.repeat, filter: args.filter.clone() },
        run: Some(eval::Run::start()),
    };
    let bar = Bar::on_stderr();
    let progress = progress_of(&bar);
    // With --queue, the cases go to the workers (each its own entry) and come back as their
    // runs; the run's name keeps its entries apart from every other evaluation's.
    let mut spread = match &args.queue {
        Some(queue) => {
            let queue = super::queue::QueueArgs {
                queue: queue.clone(),
                stream: args.stream.clone(),
                group: "pactum-workers".into(),
                queue_timeout: args.queue_timeout,
            };
            let url = queue.url()?;
            let wait = std::time::Duration::from_millis(500);
            Some(eval::spread::OnQueue::new(queue.open(&url)?, wait)?)
        }
        None => None,
    };
    let run_id = {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("eval-{}-{nanos:x}", std::process::id())
    };
    let mut outcomes = Vec::new();
    for suite in &suites {
        let candidate = Version {
            pin: contract.clone().unwrap_or_else(|| suite.contract.clone()),
            allow_draft: args.allow_draft,
        };
        if candidate.pin.id != suite.contract.id {
            return Err(Error::PinInvalid {
                pin: candidate.pin.to_string(),
                reason: format!(
                    "{} evaluates {}, not {}",
                    suite.eval_id, suite.contract.id, candidate.pin.id
                ),
            });
        }
        let baseline = against.clone().map(|pin| Version { pin, allow_draft: false });
        if let Some(b) = &baseline
            && b.pin.id != suite.contract.id
        {
            return Err(Error::PinInvalid {
                pin: b.pin.to_string(),
                reason: format!(
                    "{} evaluates {}, not {}",
                    suite.eval_id, suite.contract.id, b.pin.id
                ),
            });
        }
        let plan = Plan { candidate, baseline };
        let outcome = match spread.as_mut() {
            Some(spread) => evaluator.suite_spread(
                suite,
                &plan,
                progress,
                spread,
                &run_id,
                (provider_name.as_deref(), args.replay),
            ),
            None => evaluator.suite(suite, &plan, progress),
        }
        .map_err(|e| if args.allow_draft { e } else { e.with_allow_draft_hint() })?;
        outcomes.push(outcome);
    }
    let cassette = provider_name
        .as_ref()
        .and_then(|name| project.config.providers.get(name))
        .filter(|p| p.kind == "replay")
        .and_then(|p| p.cassette.clone());
    evaluator.record(&outcomes, selected.provider.name(), cassette.as_deref())?;
    exporter.finish();
    let no_model = selected.provider.name() == "dry-run";
    Ok((outcomes, crate::cmd::run::head_json(&root, &ledger), no_model))
}

/// The providers a worker runs an eval case with: those the evaluation chose (`provider`,
/// and `--replay`'s answers from the cassette only), from the worker's checkout.
pub fn providers_for(
    project: &Project,
    provider: Option<&str>,
    replay_only: bool,
) -> Result<ProviderSet, Error> {
    let mut config = project.config.clone();
    if replay_only
        && let Some(settings) =
            provider.and_then(|n| config.providers.get_mut(n)).filter(|p| p.kind == "replay")
    {
        settings.mode = Some("replay".to_string());
    }
    let choice = Choice {
        cli: provider,
        work_order: &ProviderChoice::default(),
        work_order_dir: &project.root,
    };
    ProviderSet::new(&config, &project.root, choice)
}

/// The suites to run: those named, else every suite of the project (only --contract's id's
/// when it is given).
fn suites(
    args: &Args,
    root: &std::path::Path,
    contract: Option<&Pin>,
) -> Result<Vec<Suite>, Error> {
    if !args.suites.is_empty() {
        return args.suites.iter().map(|name| eval::suite::find(root, name)).collect();
    }
    let mut out = Vec::new();
    for path in eval::suite::in_project(root) {
        let suite = Suite::load(root, &path)?;
        if contract.is_none_or(|c| c.id == suite.contract.id) {
            out.push(suite);
        }
    }
    if out.is_empty() {
        let what = match contract {
            Some(c) => format!("no eval suite under evals/ evaluates {}", c.id),
            None => "no eval suite under evals/".to_string(),
        };
        return Err(Error::Io {
            path: root.join(eval::suite::FOLDER),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{what}; scaffold one with `pactum new eval PRC-...`"),
            ),
        });
    }
    Ok(out)
}

/// `--record` / `--replay`: the replay provider the run uses (named by --provider, else
/// PACTUM_PROVIDER, else pactum.toml's default) switched to that mode. Returns the
/// provider's name, when one is named.
fn mode_override(args: &Args, project: &mut Project) -> Result<Option<String>, Error> {
    let config = &mut project.config;
    let name = args
        .provider
        .clone()
        .or_else(|| config.env.provider.clone())
        .or_else(|| config.defaults.provider.clone());
    let mode = match (args.record, args.replay) {
        (true, _) => "record",
        (_, true) => "replay",
        _ => return Ok(name),
    };
    let flag = format!("--{mode}");
    let replay =
        name.as_ref().and_then(|n| config.providers.get_mut(n)).filter(|p| p.kind == "replay");
    let Some(settings) = replay else {
        let named = match &name {
            Some(n) => format!("provider `{n}` is not a replay provider"),
            None => "no provider is named".to_string(),
        };
        return Err(Error::provider(
            name.clone().unwrap_or_else(|| "replay".into()),
            ProviderFailure::NotConfigured,
            format!(
                "{flag} applies to a replay provider, and {named}; configure one in pactum.toml ([providers.ci] kind = \"replay\", cassette = \"evals/cassette.json\", record_with = \"openai\") and name it with --provider ci"
            ),
        ));
    };
    settings.mode = Some(mode.to_string());
    Ok(name)
}
