//! `pactum worker --queue URL`: takes work orders from a Redis Stream and runs each exactly
//! as `pactum run` does (`run::Session`), writing results to `NAME:results` (SPEC §22). The
//! loop and its guarantees are the library's (`pactum::queue::worker`); this file wires the
//! project, the ledger (every record carries `worker_id`), signals and output. An eval-case
//! entry (`pactum eval --queue`, SPEC §27) runs one case of a suite on every version of its
//! evaluation (`Evaluator::case`), its runs the result.

use std::time::Duration;

use pactum::eval::spread::CaseOrder;
use pactum::gateway::select::ProviderSet;
use pactum::queue::worker::{self, Event, Options, Outcome};
use pactum::work_order::WorkOrder;
use serde_json::json;

use super::queue::{QueueArgs, parse_duration};
use super::run::{RunWith, result_json};
use crate::output::{self, Common, OK};
use crate::signal;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    queue: QueueArgs,
    /// Work orders run at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    concurrency: usize,
    /// Claim an entry another worker has held this long without renewing it (it died): 500ms, 2s, 1m.
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = parse_duration)]
    claim_idle: Duration,
    /// Send a work order to NAME:dead once this many attempts of it ran and none finished (a re-claim that finds it running elsewhere is no attempt).
    #[arg(long, value_name = "N", default_value_t = 5)]
    max_deliveries: u64,
    /// This worker's name in results and the ledger (default: pactum-PID-RANDOM).
    #[arg(long, value_name = "ID")]
    worker_id: Option<String>,
    #[command(flatten)]
    with: RunWith,
    #[command(flatten)]
    common: Common,
}

/// A worker id unique enough for a consumer group: the process id and the clock's low bits.
fn default_worker_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("pactum-{}-{:06x}", std::process::id(), nanos & 0xff_ffff)
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let stop = signal::stop_flag();
    let url = match args.queue.url() {
        Ok(u) => u,
        Err(e) => return output::fail(&e, json),
    };
    let project = match args.common.project() {
        Ok(p) => p,
        Err(e) => return output::fail(&e, json),
    };
    let worker_id = args.worker_id.clone().unwrap_or_else(default_worker_id);
    let exporter = match args.with.telemetry.start(&project.config, Some(&worker_id)) {
        Ok(exporter) => exporter,
        Err(e) => return output::fail(&e, json),
    };
    let stamp =
        |l: pactum::ledger::Ledger| exporter.attach(l.stamping("worker_id", json!(worker_id)));
    let (ledger, log) = match args.with.ledgers(&project, stamp) {
        Ok(ledgers) => ledgers,
        Err(e) => return output::fail(&e, json),
    };
    let session = args.with.session(&project, &ledger, log.as_ref());
    let options = Options {
        worker_id: worker_id.clone(),
        concurrency: args.concurrency.max(1),
        claim_idle: args.claim_idle,
        max_deliveries: args.max_deliveries,
    };
    // Eval cases (`pactum eval --queue`) run through providers made once per choice.
    type Providers = Vec<((Option<String>, bool), std::sync::Arc<ProviderSet>)>;
    let providers: std::sync::Mutex<Providers> = std::sync::Mutex::new(Vec::new());
    let eval_case = |job: &pactum::queue::Job| -> Result<serde_json::Value, pactum::Error> {
        let order: CaseOrder =
            serde_json::from_value(job.work_order.clone()).map_err(|e| pactum::Error::Usage {
                message: format!("the eval case {} is not a case order: {e}", job.work_order_id),
            })?;
        let key = (order.provider.clone(), order.replay_only);
        let set = {
            let mut made = providers.lock().unwrap_or_else(|p| p.into_inner());
            match made.iter().find(|(k, _)| *k == key) {
                Some((_, set)) => std::sync::Arc::clone(set),
                None => {
                    let set = std::sync::Arc::new(super::eval::providers_for(
                        &project,
                        order.provider.as_deref(),
                        order.replay_only,
                    )?);
                    made.push((key, std::sync::Arc::clone(&set)));
                    set
                }
            }
        };
        let evaluator = pactum::eval::Evaluator {
            project: &project,
            providers: &set,
            ledger: Some(&ledger),
            options: pactum::eval::Options { jobs: 1, repeat: None, filter: None },
            // The case names the coordinator's run (`CaseOrder::eval_run`).
            run: None,
        };
        let result = evaluator.case(&order)?;
        ledger.commit()?;
        Ok(result)
    };
    let run = |job: &pactum::queue::Job| {
        output::inject_panic("worker");
        if job.kind == pactum::queue::EntryKind::EvalCase {
            return match eval_case(job) {
                Ok(result) => Outcome { ok: true, result },
                Err(e) => {
                    let mut result = output::error_json(&e);
                    result["eval_case"] = json!(job.work_order_id);
                    Outcome { ok: false, result }
                }
            };
        }
        // Its path in the project, or for an entry without one its id in the root.
        let file = job.file();
        let loaded = WorkOrder::from_value(&job.work_order, &project.root.join(file));
        let result = session.run(file, loaded);
        Outcome { ok: matches!(&result, Ok(r) if r.ok), result: result_json(&result, file) }
    };
    let connect = || args.queue.open(&url);
    let serving = format!(
        "worker {} on {} (stream {}, group {}): {} at once; stop with SIGTERM or Ctrl-C",
        worker_id,
        url.shown(),
        args.queue.stream,
        args.queue.group,
        options.concurrency
    );
    let events = |event: Event| match event {
        Event::Serving => eprintln!("{}", output::shown_line(&serving)),
        other => show(other),
    };
    let served = worker::serve(&connect, &options, stop, &run, &events);
    exporter.finish();
    match served {
        Ok(summary) => {
            let line = format!(
                "worker {}: {} completed, {} duplicate(s) acknowledged, {} dead-lettered",
                worker_id, summary.completed, summary.duplicates, summary.dead_lettered
            );
            if json {
                output::print_json(&json!({
                    "ok": true,
                    "worker_id": worker_id,
                    "completed": summary.completed,
                    "duplicates": summary.duplicates,
                    "dead_lettered": summary.dead_lettered,
                }));
            } else {
                println!("{}", output::shown_line(&line));
            }
            OK
        }
        Err(e) => output::fail(&e, json),
    }
}

/// One line on stderr per thing the worker did.
fn show(event: Event) {
    let line = match event {
        Event::Serving => return,
        Event::Completed { work_order_id, ok, result } => {
            format!("{work_order_id}: {} (result {result})", if ok { "ok" } else { "failed" })
        }
        Event::Superseded { work_order_id } => {
            format!("{work_order_id}: another worker wrote its result first; this one is dropped")
        }
        Event::Duplicate { work_order_id, entry } => {
            format!("{work_order_id}: already has a result; entry {entry} acknowledged, not run")
        }
        Event::Busy { work_order_id, entry } => {
            format!("{work_order_id}: running elsewhere; entry {entry} left pending")
        }
        Event::DeadLettered { entry, reason } => format!("entry {entry}: dead-lettered: {reason}"),
        Event::LeaseLost { work_order_id } => format!(
            "{work_order_id}: its lease expired while it ran (this worker stalled longer than --claim-idle); another worker may run it too, and only one result is kept"
        ),
    };
    eprintln!("{}", output::shown_line(&line));
}
