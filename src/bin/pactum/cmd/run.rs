//! `pactum run WO...`: runs work orders (exchange or kernel) and prints their results —
//! for people (`Answer:`, `Confidence:`, ...) or, with `--json`, the whole result.

use std::io::Write;
use std::path::{Path, PathBuf};

use pactum::error::Error;
use pactum::executor::{RunResult, Runner};
use pactum::gateway::select::{Choice, ProviderSet};
use pactum::ledger::{Durability, Ledger, Location};
use pactum::project::Project;
use pactum::synthesis::print_final_answer;
use pactum::terminal::{escape_block, escape_line};
use pactum::work_order::WorkOrder;
use serde_json::{Value, json};

use crate::output::{self, Common, FAILED, OK, USAGE};

#[derive(clap::Args)]
pub struct Args {
    /// Work order files (JSON or YAML).
    #[arg(required = true, value_name = "WO")]
    work_orders: Vec<PathBuf>,
    /// Work orders run at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    jobs: usize,
    #[command(flatten)]
    with: RunWith,
    #[command(flatten)]
    common: Common,
}

/// How work orders run, for `run` and `worker` alike: the provider, where the records go,
/// whether drafts resolve.
#[derive(clap::Args)]
pub struct RunWith {
    /// Provider for every work order: a name from pactum.toml or openai, anthropic, scripted, replay, dry-run.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Ledger: a file, or postgres://USER@HOST:PORT/DB (one ledger for a fleet; the password
    /// in PGPASSWORD). Default: pactum.toml's [ledger] url once confirmed, else
    /// .pactum/ledger.jsonl under the project root.
    #[arg(long, value_name = "FILE|URL")]
    pub ledger: Option<PathBuf>,
    /// Kernel cycle log (default: the ledger).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Let drafts resolve.
    #[arg(long)]
    pub allow_draft: bool,
    #[command(flatten)]
    pub telemetry: crate::telemetry::OtlpArgs,
}

impl RunWith {
    /// The run's ledger and cycle log, each passed through `stamp` (a worker stamps its id
    /// on every record).
    pub fn ledgers(
        &self,
        project: &Project,
        stamp: impl Fn(Ledger) -> Ledger,
    ) -> Result<(Ledger, Option<Ledger>), Error> {
        let (ledger, log) = open_ledgers(project, self.ledger.as_deref(), self.log.as_deref())?;
        Ok((stamp(ledger), log.map(stamp)))
    }

    /// The session that runs work orders of `project` into `ledger` and `log`.
    pub fn session<'a>(
        &'a self,
        project: &'a Project,
        ledger: &'a Ledger,
        log: Option<&'a Ledger>,
    ) -> Session<'a> {
        Session {
            project,
            ledger,
            log,
            provider: self.provider.as_deref(),
            allow_draft: self.allow_draft,
        }
    }
}

fn open_project(args: &Args) -> Result<Project, Error> {
    if args.common.root.is_some() {
        return args.common.project();
    }
    let first =
        args.work_orders.first().map(|p| p.parent().unwrap_or(Path::new(".")).to_path_buf());
    let start = match first {
        Some(dir) if dir.as_os_str().is_empty() => PathBuf::from("."),
        Some(dir) => dir,
        None => PathBuf::from("."),
    };
    output::discover_project(&start)
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let project = match open_project(&args) {
        Ok(p) => p,
        Err(e) => return output::fail(&e, json),
    };
    let exporter = match args.with.telemetry.start(&project.config, None) {
        Ok(exporter) => exporter,
        Err(e) => return output::fail(&e, json),
    };
    let (ledger, log) = match args.with.ledgers(&project, |l| exporter.attach(l)) {
        Ok(ledgers) => ledgers,
        Err(e) => return output::fail(&e, json),
    };
    let session = args.with.session(&project, &ledger, log.as_ref());
    let jobs = args.jobs.max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<(usize, Result<RunResult, Error>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..jobs.min(args.work_orders.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut local = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(path) = args.work_orders.get(i) else { break };
                        output::inject_panic("run-worker");
                        let shown = output::shown(&project.root, path);
                        local.push((i, session.run_unsynced(&shown, WorkOrder::load(path))));
                    }
                    local
                })
            })
            .collect();
        handles.into_iter().flat_map(output::join_or_propagate).collect()
    });
    results.sort_by_key(|(i, _)| *i);
    // Nothing is printed before the batch's records are on disk.
    if let Err(e) = session.commit() {
        return output::fail(&e, json);
    }
    exporter.finish();
    let mut status = OK;
    let mut docs = Vec::new();
    for (i, result) in &results {
        let path = args.work_orders[*i].display().to_string();
        match result {
            Ok(r) => {
                if !r.ok {
                    status = status.max(FAILED);
                }
                if json {
                    docs.push(result_json(result, &path));
                } else {
                    print_human(r, &args.work_orders[*i]);
                }
            }
            Err(e) => {
                status = status.max(output::status_of(e));
                if json {
                    docs.push(result_json(result, &path));
                } else {
                    eprintln!("{}:", escape_line(&output::relative(&path)));
                    output::eprint_error(e);
                }
            }
        }
    }
    if json {
        let mut doc = batch(status == OK, docs);
        doc["ledger"] = head_json(&project.root, &ledger);
        output::print_json(&doc);
    } else if results.len() > 1 {
        let failed = results.iter().filter(|(_, r)| !matches!(r, Ok(r) if r.ok)).count();
        println!("{} work order(s): {} ok, {failed} failed", results.len(), results.len() - failed);
    }
    if status == USAGE { USAGE } else { status }
}

/// The run's ledger (`--ledger FILE`, else the project's own, which stays inside the
/// project: a committed `.pactum` that is a symlink is refused) and its cycle log
/// (`--log FILE`), both masking secrets with the process's redactor, and both grouped:
/// [`Session::run`] commits them when each work order ends.
pub fn open_ledgers(
    project: &Project,
    ledger: Option<&Path>,
    log: Option<&Path>,
) -> Result<(Ledger, Option<Ledger>), Error> {
    let location = match ledger {
        Some(given) => crate::cmd::ledger::given_ledger(given)?,
        None => crate::cmd::ledger::project_ledger(&project.root, &project.config)?,
    };
    let open = |location: &Location| -> Result<Ledger, Error> {
        Ok(Ledger::open(location)?
            .naming_from(&project.root)
            .redacting(output::redactor().clone())
            .with_durability(Durability::Grouped))
    };
    let ledger = open(&location)?;
    let log =
        log.map(|p| crate::cmd::ledger::given_ledger(p).and_then(|l| open(&l))).transpose()?;
    Ok((ledger, log))
}

/// One work order's entry in `run --json`'s `results` (SPEC §12): the run's result, or the
/// failure that kept it from running with the work order's file (`path`).
pub fn result_json(result: &Result<RunResult, Error>, path: &str) -> Value {
    match result {
        Ok(r) => serde_json::to_value(r).unwrap_or(Value::Null),
        Err(e) => {
            let mut v = output::error_json(e);
            v["work_order"] = json!(path);
            v
        }
    }
}

/// What runs work orders the way `pactum run` does: one project, its ledger and cycle log,
/// the `--provider` override and `--allow-draft`. `pactum worker` runs every work order it
/// takes from the queue through the same [`Session::run`].
pub struct Session<'a> {
    pub project: &'a Project,
    pub ledger: &'a Ledger,
    pub log: Option<&'a Ledger>,
    pub provider: Option<&'a str>,
    pub allow_draft: bool,
}

impl Session<'_> {
    /// Runs one work order (`loaded`: the file read and validated, or why it was not);
    /// `shown` names its file, relative to the project root. Its records are on disk
    /// before it returns (the ledgers are grouped: one sync per work order, not one per
    /// record), so a result printed or acknowledged always has its records behind it.
    pub fn run(&self, shown: &str, loaded: Result<WorkOrder, Error>) -> Result<RunResult, Error> {
        let result = self.run_unsynced(shown, loaded);
        self.commit()?;
        result
    }

    /// Syncs what the work orders run so far wrote (both ledgers).
    pub fn commit(&self) -> Result<(), Error> {
        self.ledger.commit()?;
        if let Some(log) = self.log {
            log.commit()?;
        }
        Ok(())
    }

    /// Runs one work order without syncing its records: for a batch that prints nothing
    /// before it calls [`Session::commit`] once (`pactum run`: one sync for the batch, so a
    /// printed result still has its records behind it).
    pub fn run_unsynced(
        &self,
        shown: &str,
        loaded: Result<WorkOrder, Error>,
    ) -> Result<RunResult, Error> {
        // A work order that cannot run at all is in the ledger too (SPEC §10).
        let unrun = |wo: Option<&WorkOrder>, e: Error| {
            let _ = pactum::executor::record_unrun(self.ledger, shown, wo, &e);
            e
        };
        let wo = loaded.map_err(|e| unrun(None, e))?;
        let choice =
            Choice { cli: self.provider, work_order: &wo.provider, work_order_dir: wo.dir() };
        let providers = ProviderSet::new(&self.project.config, &self.project.root, choice)
            .map_err(|e| unrun(Some(&wo), e))?;
        let selected = providers.selected();
        for note in selected.offline.iter().chain(&selected.notices) {
            let mut err = anstream::stderr().lock();
            let style =
                anstyle::Style::new().bold().fg_color(Some(anstyle::AnsiColor::Cyan.into()));
            let _ = writeln!(
                err,
                "{style}note{style:#}: {}",
                output::shown_line(&format!("{}: {note}", wo.id))
            );
        }
        let runner = Runner {
            project: self.project,
            providers,
            ledger: Some(self.ledger),
            cycle_log: Some(self.log.unwrap_or(self.ledger)),
            allow_draft: self.allow_draft,
        };
        let mut result = runner.run(&wo);
        // `run` has --allow-draft: a draft that did not resolve says so.
        for e in &mut result.errors {
            if e.get("code").and_then(Value::as_str) == Some("contract_not_active")
                && let Some(message) = e.get("message").and_then(Value::as_str)
            {
                let message = format!("{message} or allow drafts (--allow-draft)");
                e["message"] = Value::String(message);
            }
        }
        Ok(result)
    }
}

/// The result for people; `path` is the work order's file. Secrets are masked.
fn print_human(r: &RunResult, path: &Path) {
    let mut buffer = Vec::new();
    print_result(&mut buffer, r);
    let mut out = anstream::stdout().lock();
    let _ = out.write_all(output::redacted(&String::from_utf8_lossy(&buffer)).as_bytes());
    drop(out);
    print_problems(r, path);
}

fn print_result(mut out: &mut Vec<u8>, r: &RunResult) {
    let bold = anstyle::Style::new().bold();
    let (color, mark) =
        if r.ok { (anstyle::AnsiColor::Green, "ok") } else { (anstyle::AnsiColor::Red, "failed") };
    let status_style = anstyle::Style::new().bold().fg_color(Some(color.into()));
    let _ = writeln!(
        out,
        "{bold}{}{bold:#} ({}) {status_style}{mark}{status_style:#}: {}",
        escape_line(&r.work_order_id),
        r.kind,
        // The status once: `failed` is already the mark (`unrecoverable` is more).
        escape_line(&format!(
            "{}{} via {}",
            if r.status == mark { "" } else { r.status.as_str() },
            r.contract.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default(),
            r.provider
        ))
        .trim_start(),
    );
    if r.kind == "kernel" {
        print_final_answer(&mut out, r.final_answer.as_ref());
    } else if let Some(o) = &r.output {
        // Its lines indented under the label: a value from a model cannot print a line of
        // its own.
        let text = match o {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        let _ = writeln!(out, "Output: {}", escape_block(&text, "  "));
        if let Some(x) = &r.extraction {
            let _ = writeln!(
                out,
                "Extracted: {} (bytes {}..{})",
                x.method.as_str(),
                x.span.0,
                x.span.1
            );
        }
    }
    if r.repair_attempts > 0 {
        let _ = writeln!(out, "Repair attempts: {}", r.repair_attempts);
    }
    let _ = writeln!(
        out,
        "Usage: {} prompt + {} completion tokens",
        r.usage.prompt_tokens, r.usage.completion_tokens
    );
}

fn print_problems(r: &RunResult, path: &Path) {
    for w in &r.warnings {
        output::eprint_warning(w.code, &escape_line(&w.message));
    }
    // An exchange's input is the work order's `/input`: its findings point there.
    let input_origin =
        || (r.kind == "exchange").then(|| output::Origin::read(path, "/input")).flatten();
    let in_input =
        |e: &Value| e.get("code").and_then(Value::as_str) == Some("input_schema_invalid");
    let origin = r
        .errors
        .iter()
        .any(|e| in_input(e) && e.get("pointer").is_some())
        .then(input_origin)
        .flatten();
    // Every finding placed in one pass over the work order.
    let pointers: Vec<&str> =
        r.errors.iter().map(|e| e.get("pointer").and_then(Value::as_str).unwrap_or("")).collect();
    let placed = output::located_all(origin.as_ref(), &pointers);
    let mut err = anstream::stderr().lock();
    let style = anstyle::Style::new().bold().fg_color(Some(anstyle::AnsiColor::Red.into()));
    for (e, placed) in r.errors.iter().zip(placed) {
        let code = e.get("code").and_then(Value::as_str).unwrap_or("error");
        let message = e.get("message").and_then(Value::as_str).unwrap_or("");
        let at = match e.get("pointer").and_then(Value::as_str) {
            Some(_) if in_input(e) => placed,
            Some(pointer) => output::located_all(None, &[pointer]).remove(0),
            None => String::new(),
        };
        let _ = writeln!(
            err,
            "{style}error[{}]{style:#}: {}",
            escape_line(code),
            output::shown_line(&format!("{at}{message}"))
        );
    }
    if let Some(o) = &origin {
        let _ = writeln!(
            err,
            "  = help: fix `input` in {} so it fits the contract's input_schema",
            escape_line(&o.path.display().to_string())
        );
    }
}

/// The head a command wrote (SPEC §24: heads are published where a writer of the ledger
/// cannot reach them): `{"file", "seq", "hash"}`, for `ledger verify --expect-head HASH`
/// later; null when the ledger cannot say.
pub fn head_json(root: &Path, ledger: &Ledger) -> Value {
    match ledger.head() {
        Ok((seq, hash)) => {
            json!({"file": output::shown(root, ledger.path()), "seq": seq, "hash": hash})
        }
        Err(_) => Value::Null,
    }
}

/// `run --json`'s one shape, for one work order or many: `{"ok", "results": [...]}` with one
/// SPEC §12 run result per work order, in the order given; when not ok, also the `code` and
/// `message` of the first failed work order and every failure in `errors`.
fn batch(ok: bool, results: Vec<Value>) -> Value {
    let mut doc = json!({"ok": ok});
    if !ok {
        let failed: Vec<&Value> = results.iter().filter(|r| r["ok"] != json!(true)).collect();
        if let Some(first) = failed.first() {
            let code = first
                .get("code")
                .cloned()
                .or_else(|| first["errors"].get(0).map(|e| e["code"].clone()));
            let message = first
                .get("message")
                .cloned()
                .or_else(|| first["errors"].get(0).map(|e| e["message"].clone()));
            doc["code"] = code.unwrap_or(Value::Null);
            doc["message"] = message.unwrap_or(Value::Null);
        }
        let errors: Vec<Value> = failed
            .iter()
            .flat_map(|r| r["errors"].as_array().cloned().unwrap_or_default())
            .collect();
        doc["errors"] = Value::Array(errors);
    }
    doc["results"] = Value::Array(results);
    doc
}
