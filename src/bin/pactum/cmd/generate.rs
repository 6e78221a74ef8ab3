//! `pactum generate python|typescript --out PATH`: typed clients of the project's contracts
//! (SPEC §25) — Pydantic v2 models and a typed function per contract, or TypeScript
//! declarations — deterministic, with a fingerprint `validate` checks when pactum.toml's
//! `[generate]` names the file.

use std::path::PathBuf;

use pactum::generate;
use serde_json::json;

use crate::output::{self, Common, OK};

#[derive(clap::Args)]
pub struct Args {
    /// What to write: python (Pydantic v2 models and typed functions) or typescript
    /// (declarations).
    #[arg(value_parser = ["python", "typescript"])]
    language: String,
    /// The file to write (a folder's missing parents are made); `-` for stdout.
    #[arg(long, value_name = "PATH")]
    out: PathBuf,
    /// Generate for drafts too (each id's highest version, draft or active).
    #[arg(long)]
    allow_draft: bool,
    #[command(flatten)]
    common: Common,
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let result = (|| {
        let project = args.common.project()?;
        let entries = generate::chosen(&project.registry, args.allow_draft);
        let contracts =
            entries.iter().map(|e| project.load_contract(e)).collect::<pactum::Result<Vec<_>>>()?;
        let refs: Vec<&pactum::contract::Contract> = contracts.iter().map(|c| c.as_ref()).collect();
        let text = match args.language.as_str() {
            "python" => generate::python(&refs),
            _ => generate::typescript(&refs),
        };
        if args.out.as_os_str() != "-" {
            if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
                pactum::confine::create_folders(dir)?;
            }
            pactum::confine::write_atomic(&args.out, text.as_bytes())?;
        }
        Ok::<_, pactum::Error>((text, refs.len(), generate::fingerprint(&refs), project))
    })();
    match result {
        Ok((text, n, fingerprint, project)) => {
            if args.out.as_os_str() == "-" {
                output::print_exact(&text);
            } else if json {
                output::print_json(
                    &json!({"ok": true, "file": args.out, "contracts": n, "fingerprint": fingerprint}),
                );
            } else {
                output::print_text(&format!("wrote {} ({n} contracts)\n", args.out.display()));
                let setting = match args.language.as_str() {
                    "python" => &project.config.generate.python,
                    _ => &project.config.generate.typescript,
                };
                if setting.is_none() {
                    crate::cmd::eval::note_line(&format!(
                        "add `[generate] {} = \"PATH\"` to pactum.toml and `pactum validate` warns when the file no longer matches the contracts (generated_stale)",
                        args.language
                    ));
                }
            }
            OK
        }
        Err(e) => output::fail(&e, json),
    }
}
