//! `pactum results --queue URL [--follow]`: the results workers wrote to `NAME:results`
//! (SPEC §22), oldest first; `--follow` waits for more until SIGTERM or Ctrl-C. Exit 1 when
//! any result shown failed, as `run` exits for a failed work order.

use std::time::Duration;

use pactum::queue::{Completed, Queue};
use pactum::terminal::escape_line;
use serde_json::{Value, json};

use super::queue::QueueArgs;
use crate::output::{self, Common, FAILED, OK};
use crate::signal;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    queue: QueueArgs,
    /// Keep printing results as workers write them (with --json: one JSON document per line).
    #[arg(long)]
    follow: bool,
    #[command(flatten)]
    common: Common,
}

fn doc(c: &Completed) -> Value {
    json!({"work_order_id": c.work_order_id, "worker_id": c.worker_id, "entry": c.entry, "id": c.id, "result": c.result})
}

/// Whether a result is a success (its own `ok`).
fn succeeded(c: &Completed) -> bool {
    c.result.get("ok") == Some(&json!(true))
}

/// `WO-1 ok (completed) by w1`, `WO-2 failed by w1: contract_not_found`: the status in
/// parentheses only when it says more than the mark (`failed (unrecoverable)`).
fn line(c: &Completed) -> String {
    let ok = succeeded(c);
    let mark = if ok { "ok" } else { "failed" };
    let status = c.result.get("status").and_then(Value::as_str).unwrap_or(mark);
    let status = if status == mark { String::new() } else { format!(" ({status})") };
    let mut line = format!("{} {mark}{status} by {}", c.work_order_id, c.worker_id);
    if let Some(code) = c.result.get("code").and_then(Value::as_str).filter(|_| !ok) {
        line.push_str(&format!(": {code}"));
    }
    line
}

/// `results --json`: `{"ok", "results"}`, and when a result failed, the `code` and `message`
/// of the first failed one and every failure in `errors` (SPEC §12, as `run --json`).
fn document(results: Vec<Value>, shown: &[Completed]) -> Value {
    let failed: Vec<&Completed> = shown.iter().filter(|c| !succeeded(c)).collect();
    let mut doc = json!({"ok": failed.is_empty()});
    if let Some(first) = failed.first() {
        let errors = |c: &Completed| c.result["errors"].as_array().cloned().unwrap_or_default();
        let code = first
            .result
            .get("code")
            .cloned()
            .or_else(|| errors(first).first().map(|e| e["code"].clone()));
        let message =
            first.result.get("message").and_then(Value::as_str).unwrap_or("the run failed");
        doc["code"] = code.unwrap_or(json!("work_order_failed"));
        doc["message"] = json!(format!("{}: {message}", first.work_order_id));
        doc["errors"] = Value::Array(failed.iter().flat_map(|c| errors(c)).collect());
    }
    doc["results"] = Value::Array(results);
    doc
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let stop = args.follow.then(signal::stop_flag);
    let url = match args.queue.url() {
        Ok(u) => u,
        Err(e) => return output::fail(&e, json),
    };
    let mut queue = match args.queue.open(&url) {
        Ok(q) => q,
        Err(e) => return output::fail(&e, json),
    };
    let mut after = "0".to_string();
    let (mut all, mut shown) = (Vec::new(), Vec::new());
    let mut any_failed = false;
    loop {
        let page = match queue.results(&after, None) {
            Ok(p) => p,
            Err(e) => return output::fail(&e, json),
        };
        let Some(last) = page.last() else { break };
        after = last.id.clone();
        for c in page {
            any_failed |= !succeeded(&c);
            if args.follow {
                emit(&c, json);
            } else if json {
                all.push(doc(&c));
                shown.push(c);
            } else {
                output::print_text(&format!("{}\n", escape_line(&line(&c))));
            }
        }
    }
    let status = |failed: bool| if failed { FAILED } else { OK };
    if json && !args.follow {
        output::print_json(&document(all, &shown));
        return status(any_failed);
    }
    if let Some(stop) = stop {
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            match queue.results(&after, Some(Duration::from_millis(500))) {
                Ok(page) => {
                    for c in &page {
                        any_failed |= !succeeded(c);
                        emit(c, json);
                    }
                    if let Some(last) = page.last() {
                        after = last.id.clone();
                    }
                }
                Err(e) => return output::fail(&e, json),
            }
        }
    }
    status(any_failed)
}

/// One result as it arrives: a line for people, or one compact JSON document per line.
fn emit(c: &Completed, json: bool) {
    if json {
        let value = output::redactor().redact_value(doc(c));
        println!("{}", serde_json::to_string(&value).unwrap_or_default());
    } else {
        output::print_text(&format!("{}\n", escape_line(&line(c))));
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();
}
