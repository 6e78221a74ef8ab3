//! `pactum ledger verify FILE`: checks the hash chain and names the first edited, removed
//! or reordered line.

use std::path::PathBuf;

use serde_json::json;

use crate::output::{self, FAILED, Format, OK};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Verify a ledger file's hash chain.
    Verify {
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        #[arg(long)]
        json: bool,
    },
}

pub fn exec(args: Args) -> u8 {
    let Action::Verify { file, format, json } = args.action;
    let json = json || format == Format::Json;
    match pactum::ledger::verify(&file) {
        Ok(v) => {
            if json {
                output::print_json(
                    &json!({"ok": true, "records": v.records, "last_hash": v.last_hash}),
                );
            } else {
                output::print_text(&format!(
                    "{}: {} records, chain intact (last hash {})\n",
                    file.display(),
                    v.records,
                    v.last_hash
                ));
            }
            OK
        }
        Err(e) => {
            let status = output::fail(&e, json);
            if status == output::USAGE { status } else { FAILED }
        }
    }
}
