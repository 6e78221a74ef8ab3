//! `pactum results --queue URL [--follow]`: the results workers wrote to `NAME:results`
//! (SPEC §22), oldest first; `--follow` waits for more until SIGTERM or Ctrl-C.

use std::time::Duration;

use pactum::queue::{Completed, Queue};
use pactum::terminal::escape_line;
use serde_json::{Value, json};

use super::queue::QueueArgs;
use crate::output::{self, Common, OK};
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

fn line(c: &Completed) -> String {
    let status = c.result.get("status").and_then(Value::as_str).unwrap_or("failed");
    let ok = c.result.get("ok") == Some(&json!(true));
    let mut line = format!(
        "{} {} ({status}) by {}",
        c.work_order_id,
        if ok { "ok" } else { "failed" },
        c.worker_id
    );
    if let Some(code) = c.result.get("code").and_then(Value::as_str).filter(|_| !ok) {
        line.push_str(&format!(": {code}"));
    }
    line
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
    let mut all = Vec::new();
    loop {
        let page = match queue.results(&after, None) {
            Ok(p) => p,
            Err(e) => return output::fail(&e, json),
        };
        let Some(last) = page.last() else { break };
        after = last.id.clone();
        for c in &page {
            if args.follow {
                emit(c, json);
            } else if json {
                all.push(doc(c));
            } else {
                output::print_text(&format!("{}\n", escape_line(&line(c))));
            }
        }
    }
    if json && !args.follow {
        output::print_json(&json!({"ok": true, "results": all}));
        return OK;
    }
    if let Some(stop) = stop {
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            match queue.results(&after, Some(Duration::from_millis(500))) {
                Ok(page) => {
                    for c in &page {
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
    OK
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
