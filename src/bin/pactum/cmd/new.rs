//! `pactum new contract ID` (a contract and its pack, registered as drafts) and
//! `pactum new version ID@VERSION [--pack]` (the next version of a contract, copied from
//! the highest existing one and registered as a draft), and `pactum new eval PRC-...` (an
//! eval suite and dataset from the contract's examples).

use pactum::scaffold::{PackForm, new_contract_in_form, new_version};
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
    Contract {
        /// The new contract's id: `PRC-`, one capital-letter word, `-`, a number (PRC-SUMMARIZE-001).
        id: String,
        /// Write the pack as a section tree (keyed, numbered sections with a summarized
        /// reference section the model opens on demand) instead of the canonical object.
        #[arg(long)]
        tree: bool,
    },
    /// An eval suite (evals/NAME/EVAL-NAME-001.json) and its dataset, from the contract's examples.
    Eval {
        /// The contract: PRC-NAME-001, or a pin (PRC-NAME-001@1.1.0); drafts count.
        pin: String,
    },
    /// The next version of a contract or pack, copied from its highest version, as a draft.
    Version {
        /// ID@VERSION, higher than every existing version (e.g. PRC-SUMMARIZE-001@1.1.0).
        pin: String,
        /// Also copy the contract's pack to a new version and pin the new contract to it.
        #[arg(long)]
        pack: bool,
    },
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let root = output::root_or_here(args.common.root.as_deref());
    let stamp = output::stamp(&root);
    match &args.what {
        What::Contract { id, tree } => match new_contract_in_form(
            &root,
            id,
            &stamp,
            if *tree { PackForm::Tree } else { PackForm::Canonical },
        ) {
            Ok(s) => {
                if json {
                    output::print_json(
                        &json!({"ok": true, "contract": s.contract, "prompt_pack": s.pack, "prompt_pack_id": s.pack_id, "state": "draft"}),
                    );
                } else {
                    output::print_text(&format!(
                        "created {} and {} (registered as drafts)\n\
                         next: edit them (replace every text in parentheses), `pactum validate`, then `pactum registry promote {}@1.0.0` and `pactum registry promote {id}@1.0.0`\n",
                        s.contract, s.pack, s.pack_id
                    ));
                }
                OK
            }
            Err(e) => output::fail(&e, json),
        },
        What::Eval { pin } => {
            let made =
                args.common.project().and_then(|p| pactum::eval::scaffold::new_eval(&p, pin));
            match made {
                Ok(s) => {
                    if json {
                        output::print_json(
                            &json!({"ok": true, "eval_id": s.eval_id, "suite": s.suite, "dataset": s.dataset, "cases": s.cases}),
                        );
                    } else {
                        output::print_text(&format!(
                            "created {} and {} ({} case{} from the contract's examples)\n\
                             next: edit the cases and assertions, `pactum validate`, then `pactum eval {}`\n",
                            s.suite,
                            s.dataset,
                            s.cases,
                            if s.cases == 1 { "" } else { "s" },
                            s.eval_id
                        ));
                    }
                    OK
                }
                Err(e) => output::fail(&e, json),
            }
        }
        What::Version { pin, pack } => match new_version(&root, pin, *pack, &stamp) {
            Ok(v) => {
                if json {
                    let pack_json = v.pack.as_ref().map(|(id, version, path)| {
                        json!({"prompt_pack_id": id, "version": version.to_string(), "path": path})
                    });
                    output::print_json(&json!({
                        "ok": true, "id": v.id, "version": v.version.to_string(), "path": v.path,
                        "copied_from": v.from.to_string(), "state": "draft", "prompt_pack": pack_json,
                    }));
                } else {
                    let mut text = format!(
                        "created {} ({}@{}, copied from {}; registered as a draft)\n",
                        v.path, v.id, v.version, v.from
                    );
                    let mut promote = String::new();
                    if let Some((id, version, path)) = &v.pack {
                        text.push_str(&format!(
                            "created {path} ({id}@{version}; registered as a draft)\n"
                        ));
                        promote = format!("`pactum registry promote {id}@{version}`, then ");
                    }
                    // `diff` compares contracts; a pack's changes show in the contracts
                    // that bind it, which `validate` checks.
                    let check = if v.id.starts_with("PRM-") {
                        "`pactum validate` to check it and the contracts that bind it".to_string()
                    } else {
                        format!(
                            "`pactum diff {}@{} {}@{}` to see the bump it needs",
                            v.id, v.from, v.id, v.version
                        )
                    };
                    text.push_str(&format!(
                        "next: edit it, {check}, then {promote}`pactum registry promote {}@{}`\n",
                        v.id, v.version
                    ));
                    output::print_text(&text);
                }
                OK
            }
            Err(e) => output::fail(&e, json),
        },
    }
}
