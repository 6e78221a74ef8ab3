//! `pactum resolve ID[@REQ]`: which registered contract and pack a pin means.

use pactum::id::Pin;
use pactum::resolve::ResolveOptions;
use serde_json::json;

use crate::output::{self, Common, OK};

#[derive(clap::Args)]
pub struct Args {
    /// A contract id with an optional requirement: PRC-CLASSIFY-001, PRC-CLASSIFY-001@^1.2, PRC-CLASSIFY-001@1.2.0.
    pin: String,
    /// Let drafts resolve.
    #[arg(long)]
    allow_draft: bool,
    #[command(flatten)]
    common: Common,
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let result = Pin::parse(&args.pin).and_then(|pin| {
        let project = args.common.project()?;
        let resolved = project
            .resolve(&pin, ResolveOptions { allow_draft: args.allow_draft })
            .map_err(pactum::Error::with_allow_draft_hint)?;
        Ok((project, resolved))
    });
    let (project, r) = match result {
        Ok(x) => x,
        Err(e) => return output::fail(&e, json),
    };
    if json {
        output::print_json(&json!({
            "ok": true,
            "contract_id": r.contract_entry.id,
            "version": r.contract_entry.version.to_string(),
            "state": r.contract_entry.state.as_str(),
            "path": r.contract_entry.path,
            "sha256": r.contract.sha256,
            "prompt_pack": {
                "prompt_pack_id": r.pack_entry.id,
                "version": r.pack_entry.version.to_string(),
                "path": r.pack_entry.path,
                "sha256": r.pack.sha256,
            },
            "warnings": r.warnings,
        }));
    } else {
        let _ = &project;
        output::print_text(&format!(
            "{} ({})\n  path:   {}\n  sha256: {}\n  pack:   {} ({}) {}\n",
            r.contract_entry.key(),
            r.contract_entry.state.as_str(),
            pactum::terminal::OneLine(&r.contract_entry.path),
            r.contract.sha256,
            r.pack_entry.key(),
            r.pack_entry.state.as_str(),
            pactum::terminal::OneLine(&r.pack_entry.path)
        ));
        for w in &r.warnings {
            output::eprint_warning(w.code, &w.message);
        }
    }
    OK
}
