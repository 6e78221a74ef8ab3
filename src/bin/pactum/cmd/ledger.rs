//! `pactum ledger verify [FILE] [--expect-head HASH]`: checks the hash chain and names the
//! first edited, removed or reordered line; with `--expect-head`, also that the record a
//! previous run ended at is still there (a cut tail would remove it).

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
}

/// The project's ledger: `.pactum/ledger.jsonl` under --root or the registry's folder.
fn default_ledger(common: &Common) -> PathBuf {
    let root = output::root_or_here(common.root.as_deref());
    let ledger = Path::new(".pactum").join("ledger.jsonl");
    if root == Path::new(".") { ledger } else { root.join(ledger) }
}

/// The 1-based line of the record whose `hash` is `head`, if any.
fn line_of(path: &Path, head: &str) -> Result<Option<u64>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
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
    let Action::Verify { file, expect_head } = &args.action;
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
