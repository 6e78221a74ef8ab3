//! `pactum stats [FILE...]`: how each version (label, provider, model) of a contract
//! behaves in production, from the ledger (SPEC §26): calls, the share validated at once,
//! re-asks, semantic rejections, p50/p95 latency, tokens and cost; one streaming pass.

use std::path::PathBuf;

use pactum::ledger::Location;
use pactum::stats::{self, By, Options};

use crate::output::{self, OK};

#[derive(clap::Args)]
pub struct Args {
    /// Ledgers: files, or postgres://USER@HOST:PORT/DB (default: the project's ledger).
    files: Vec<PathBuf>,
    /// Only this contract (ID, or ID@REQUIREMENT for some of its versions).
    #[arg(long, value_name = "PIN")]
    contract: Option<String>,
    /// Rows by: version, label, provider or model.
    #[arg(long, default_value = "version", value_parser = ["version", "label", "provider", "model"])]
    by: String,
    /// Only records from this far back: 30m, 24h, 7d.
    #[arg(long, value_name = "AGE")]
    since: Option<String>,
    /// text, json or markdown.
    #[arg(long, default_value = "text", value_parser = ["text", "json", "markdown"])]
    format: String,
    /// Same as --format json.
    #[arg(long)]
    json: bool,
    /// Project root (the folder of registry.json); default: the nearest one above.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
}

/// The ledgers a reading command reads: those named (files, or `postgres://…` URLs),
/// else the project's own (`[ledger] url` once confirmed, or `.pactum/ledger.jsonl`).
pub fn ledgers(files: &[PathBuf], root: Option<&std::path::Path>) -> pactum::Result<Vec<Location>> {
    if files.is_empty() {
        let root = output::root_or_here(root);
        let mut config = pactum::config::Config::load(&root)?;
        config.apply_env(&output::env_lookup);
        let at = crate::cmd::ledger::project_ledger(&root, &config)?;
        Ok(vec![crate::cmd::ledger::existing(at, false)?])
    } else {
        let given = files.iter().map(|f| crate::cmd::ledger::given_ledger(f));
        given.map(|at| crate::cmd::ledger::existing(at?, true)).collect()
    }
}

/// `--since AGE` as the time it names.
pub fn since(age: Option<&str>) -> pactum::Result<Option<jiff::Timestamp>> {
    let Some(age) = age else { return Ok(None) };
    let d = pactum::ledger::query::parse_age(age).ok_or_else(|| pactum::Error::Usage {
        message: format!("--since `{age}` is not a number and one of s, m, h, d (30m, 24h, 7d)"),
    })?;
    Ok(Some(jiff::Timestamp::now().checked_sub(d).unwrap_or(jiff::Timestamp::MIN)))
}

pub fn exec(args: Args) -> u8 {
    let json = args.json || args.format == "json";
    let result = (|| {
        let contract = args.contract.as_deref().map(pactum::id::Pin::parse).transpose()?;
        let options = Options {
            contract,
            by: By::parse(&args.by).unwrap_or(By::Version),
            since: since(args.since.as_deref())?,
        };
        let root = output::root_or_here(args.root.as_deref());
        let config = pactum::config::Config::load(&root).unwrap_or_default();
        stats::fold(&ledgers(&args.files, args.root.as_deref())?, &options, &config)
    })();
    match result {
        Ok(s) => {
            if json {
                let mut doc = serde_json::to_value(&s).unwrap_or_default();
                doc["ok"] = serde_json::json!(true);
                output::print_json(&doc);
            } else if args.format == "markdown" {
                output::print_exact(&stats::markdown(&s));
            } else {
                output::print_text(&stats::text_report(&s));
            }
            OK
        }
        Err(e) => output::fail(&e, json),
    }
}
