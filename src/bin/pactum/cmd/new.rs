//! `pactum new contract ID`: scaffold a contract and its pack, registered as drafts.

use pactum::scaffold::new_contract;
use serde_json::json;

use crate::output::{self, Common, OK};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Subcommand)]
enum What {
    /// A contract (PRC-NAME-001) and its pack (PRM-NAME-001), version 1.0.0, as drafts.
    Contract { id: String },
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let What::Contract { id } = &args.what;
    let root = match &args.common.root {
        Some(r) => r.clone(),
        None => match pactum::registry::find_upwards(std::path::Path::new(".")) {
            Some(reg) => reg.parent().map(|p| p.to_path_buf()).unwrap_or_else(|| ".".into()),
            None => ".".into(),
        },
    };
    match new_contract(&root, id, &pactum::registry::lifecycle::now()) {
        Ok(s) => {
            if json {
                output::print_json(
                    &json!({"ok": true, "contract": s.contract, "prompt_pack": s.pack, "prompt_pack_id": s.pack_id, "state": "draft"}),
                );
            } else {
                output::print_text(&format!(
                    "created {} and {} (registered as drafts)\n\
                     next: edit them, `pactum validate`, then `pactum registry promote {}@1.0.0` and `pactum registry promote {id}@1.0.0`\n",
                    s.contract, s.pack, s.pack_id
                ));
            }
            OK
        }
        Err(e) => output::fail(&e, json),
    }
}
