//! `pactum ledger verify [FILE] [--expect-head HASH]`: checks the hash chain and names the
//! first edited, removed or reordered line; with `--expect-head`, also that the record a
//! previous run ended at is still there (a cut tail would remove it).
//! `pactum ledger query [--event E] [--session S] [--tier T] [--since 24h] [--limit N]`:
//! the matching records newest first, read backwards through the one reader
//! `required_context.ledger_queries` use ([`pactum::ledger::query`]).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use pactum::error::{Error, Result};
use serde_json::json;

use crate::output::{self, Common, FAILED, OK};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Verify a ledger file's hash chain.
    Verify {
        /// The ledger (default: the project's .pactum/ledger.jsonl).
        file: Option<PathBuf>,
        /// A record hash the ledger must still contain (the head printed by an earlier
        /// verify); records cut from the end are then detected.
        #[arg(long, value_name = "HASH")]
        expect_head: Option<String>,
    },
    /// Show ledger records, newest first (the reader behind required_context.ledger_queries).
    Query {
        /// The ledger (default: the project's .pactum/ledger.jsonl).
        #[arg(long, value_name = "FILE")]
        ledger: Option<PathBuf>,
        /// Only records of this event: exchange, work_order_started, work_order_completed,
        /// work_order_failed, cycle.
        #[arg(long, value_name = "EVENT")]
        event: Option<String>,
        /// Only records of this session_id.
        #[arg(long, value_name = "SESSION")]
        session: Option<String>,
        /// Only records of this tier (records without a tier match too): hot, ho2, ho1.
        #[arg(long, value_name = "TIER")]
        tier: Option<String>,
        /// Only records from this far back: 30m, 24h, 7d.
        #[arg(long, value_name = "AGE", value_parser = parse_since)]
        since: Option<jiff::SignedDuration>,
        /// At most this many records.
        #[arg(long, value_name = "N", default_value_t = 20)]
        limit: usize,
    },
}

fn parse_since(text: &str) -> std::result::Result<jiff::SignedDuration, String> {
    pactum::ledger::query::parse_age(text)
        .ok_or_else(|| format!("`{text}` is not a number and one of s, m, h, d (30m, 24h, 7d)"))
}

/// The project's ledger: `.pactum/ledger.jsonl` under --root or the registry's folder.
fn default_ledger(common: &Common) -> PathBuf {
    let root = output::root_or_here(common.root.as_deref());
    let ledger = Path::new(".pactum").join("ledger.jsonl");
    if root == Path::new(".") { ledger } else { root.join(ledger) }
}

/// The 1-based line of the record whose `hash` is `head`, if any.
fn line_of(path: &Path, head: &str) -> Result<Option<u64>> {
    let file = pactum::confine::open_file(path)?;
    let needle = format!("\"hash\":\"{head}\"");
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| Error::io(path, e))?;
        if line.contains(&needle) {
            return Ok(Some(i as u64 + 1));
        }
    }
    Ok(None)
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let (file, expect_head) = match &args.action {
        Action::Verify { file, expect_head } => (file, expect_head),
        Action::Query { ledger, event, session, tier, since, limit } => {
            let filter = pactum::ledger::query::Filter {
                event: event.clone(),
                tier: tier.clone(),
                session: session.clone(),
                since: since.map(|age| {
                    jiff::Timestamp::now().checked_sub(age).unwrap_or(jiff::Timestamp::MIN)
                }),
                limit: Some(*limit),
            };
            let file = ledger.clone().unwrap_or_else(|| default_ledger(&args.common));
            return query(&file, &filter, json);
        }
    };
    let file = file.clone().unwrap_or_else(|| default_ledger(&args.common));
    let shown = output::shown(&std::env::current_dir().unwrap_or_default(), &file);
    let result = pactum::ledger::verify(&file).and_then(|v| {
        let Some(head) = expect_head else { return Ok((v, None)) };
        match line_of(&file, head)? {
            Some(line) => Ok((v, Some(line))),
            None => Err(Error::LedgerBroken {
                path: file.clone(),
                line: v.records as usize,
                reason: format!(
                    "the expected head {head} is not in the ledger (it ends at record {} with hash {}): records were cut from the end, or this is another ledger",
                    v.records, v.last_hash
                ),
            }),
        }
    });
    match result {
        Ok((v, head_line)) => {
            if json {
                output::print_json(&json!({
                    "ok": true, "file": shown, "records": v.records, "last_hash": v.last_hash,
                    "expected_head_line": head_line,
                }));
            } else {
                let mut text = format!(
                    "{shown}: {} records, chain intact (last hash {})\n",
                    v.records, v.last_hash
                );
                if let Some(line) = head_line {
                    text.push_str(&format!(
                        "the expected head is record {line}; {} records were appended since\n",
                        v.records - line
                    ));
                }
                output::print_text(&text);
            }
            OK
        }
        Err(e) => {
            let status = output::fail(&e, json);
            if status == output::USAGE { status } else { FAILED }
        }
    }
}

/// `pactum ledger query`: the records newest first, one line each (or the records as JSON).
fn query(file: &Path, filter: &pactum::ledger::query::Filter, json: bool) -> u8 {
    let shown = output::shown(&std::env::current_dir().unwrap_or_default(), file);
    let found = match pactum::ledger::query::query(file, filter) {
        Ok(found) => found,
        Err(e) => {
            let status = output::fail(&e, json);
            return if status == output::USAGE { status } else { FAILED };
        }
    };
    if json {
        output::print_json(&json!({"ok": true, "file": shown, "records": found.records}));
        return OK;
    }
    let mut text = String::new();
    for r in &found.records {
        let field = |k: &str| r.get(k).and_then(serde_json::Value::as_str).unwrap_or("-");
        let contract = match (r.get("contract_id"), r.get("contract_version")) {
            (Some(id), Some(v)) => {
                format!(" {}@{}", id.as_str().unwrap_or("-"), v.as_str().unwrap_or("-"))
            }
            _ => String::new(),
        };
        let outcome = r
            .get("verdict")
            .or_else(|| r.get("code"))
            .or_else(|| r.get("status"))
            .and_then(serde_json::Value::as_str)
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        let session = r
            .get("session_id")
            .and_then(serde_json::Value::as_str)
            .map(|s| format!(" session={s}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "{} #{} {} {}{contract}{outcome}{session}\n",
            field("at"),
            r.get("seq").and_then(serde_json::Value::as_u64).unwrap_or(0),
            pactum::ledger::query::event_of(r).unwrap_or("-"),
            field("work_order_id"),
        ));
    }
    if found.records.is_empty() {
        text.push_str(&format!("{shown}: no matching records\n"));
    }
    output::print_text(&text);
    OK
}
