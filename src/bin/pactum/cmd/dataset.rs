//! `pactum eval dataset --from-ledger [FILE...] --contract PIN --out PATH.jsonl`: recorded
//! exchanges of one contract as eval cases (SPEC §26), filtered by age and verdict, sampled
//! reproducibly; inputs with masked values are skipped and counted.

use std::path::PathBuf;

use pactum::eval::from_ledger::{self, Options, Verdict};
use serde_json::json;

use crate::output::{self, OK};

#[derive(clap::Args)]
pub struct Args {
    /// Read recorded exchanges from ledgers (the files given, else the project's).
    #[arg(long, required = true)]
    from_ledger: bool,
    /// Ledgers: files, or postgres://USER@HOST:PORT/DB (default: the project's ledger).
    files: Vec<PathBuf>,
    /// The contract whose exchanges become cases (ID, or ID@REQUIREMENT for some versions).
    #[arg(long, value_name = "PIN")]
    contract: String,
    /// Only records from this far back: 30m, 24h, 7d.
    #[arg(long, value_name = "AGE")]
    since: Option<String>,
    /// Only exchanges whose verdict was: ok (valid at once), invalid, repaired (valid after a re-ask).
    #[arg(long = "where", value_name = "verdict=V", value_parser = parse_where)]
    verdict: Option<String>,
    /// At most N cases, drawn at random from those that qualify (reproducible with --seed).
    #[arg(long, value_name = "N")]
    sample: Option<usize>,
    /// The seed of --sample.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
    /// Leave the recorded output out (no `expect`): cases to judge by the suite's assertions only.
    #[arg(long)]
    no_expected: bool,
    /// The JSON Lines file to write (a suite's `dataset`).
    #[arg(long, value_name = "PATH")]
    out: PathBuf,
    /// Print the outcome as one JSON document.
    #[arg(long)]
    json: bool,
    /// Project root (the folder of registry.json); default: the nearest one above.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
}

fn parse_where(text: &str) -> Result<String, String> {
    match text.strip_prefix("verdict=") {
        Some(v) if Verdict::parse(v).is_some() => Ok(v.to_string()),
        _ => Err(format!("`{text}` is not verdict=ok, verdict=invalid or verdict=repaired")),
    }
}

pub fn exec(args: Args) -> u8 {
    let json = args.json;
    let result = (|| {
        let options = Options {
            contract: pactum::id::Pin::parse(&args.contract)?,
            since: crate::cmd::stats::since(args.since.as_deref())?,
            verdict: args.verdict.as_deref().and_then(Verdict::parse),
            sample: args.sample,
            seed: args.seed,
            expected: !args.no_expected,
        };
        let built = from_ledger::build(
            &crate::cmd::stats::ledgers(&args.files, args.root.as_deref())?,
            &options,
        )?;
        if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
            pactum::confine::create_folders(dir)?;
        }
        pactum::confine::write_atomic(&args.out, from_ledger::jsonl(&built.cases).as_bytes())?;
        Ok::<_, pactum::Error>(built)
    })();
    match result {
        Ok(b) => {
            if json {
                output::print_json(&json!({
                    "ok": true, "file": args.out, "cases": b.cases.len(), "exchanges": b.exchanges,
                    "qualified": b.qualified, "masked": b.masked, "without_input": b.without_input,
                }));
            } else {
                output::print_text(&format!(
                    "wrote {} case(s) to {} from {} exchange(s) of {} ({} qualified; {} skipped: their input holds a masked value; {} recorded without an input)\n",
                    b.cases.len(),
                    args.out.display(),
                    b.exchanges,
                    args.contract,
                    b.qualified,
                    b.masked,
                    b.without_input
                ));
            }
            OK
        }
        Err(e) => output::fail(&e, json),
    }
}
