//! `pactum init [DIR] [--kernel]`: start a project (SPEC §17). Idempotent; never replaces a
//! file.

use std::path::PathBuf;

use pactum::init::{Step, init};
use serde_json::json;

use crate::output::{self, Format, OK};

#[derive(clap::Args)]
pub struct Args {
    /// The project folder (created when missing; default: the current folder).
    dir: Option<PathBuf>,
    /// Also copy the kernel role contracts and packs, registered active, so kernel work
    /// orders run in the new project.
    #[arg(long)]
    kernel: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Same as --format json.
    #[arg(long)]
    json: bool,
}

/// Appends one formatted line to a `String`.
macro_rules! line {
    ($text:expr, $($arg:tt)*) => {{
        $text.push_str(&format!($($arg)*));
        $text.push('\n');
    }};
}

pub fn exec(args: Args) -> u8 {
    let json = args.json || args.format == Format::Json;
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let stamp = output::stamp(&dir);
    let done = match init(&dir, args.kernel, &stamp) {
        Ok(done) => done,
        Err(e) => return output::fail(&e, json),
    };
    let notice =
        pactum::git::merge_driver_problem(&done.root, crate::output::path_var().as_deref());
    if json {
        output::print_json(&json!({
            "ok": true, "root": done.root, "git": done.git, "steps": done.steps,
            "notices": notice.iter().collect::<Vec<_>>(),
        }));
        return OK;
    }
    let mut text = String::new();
    let mut registered = 0;
    for step in &done.steps {
        match step {
            Step::Created { path } => line!(text, "created   {path}"),
            Step::Kept { path, note } if !note.is_empty() => {
                line!(text, "kept      {path} ({note})")
            }
            Step::Kept { .. } => {}
            Step::Appended { path, lines } => {
                line!(text, "updated   {path} (added {})", lines.join(", "))
            }
            Step::Registered { .. } => registered += 1,
            Step::MergeDriver { repository, registered: true } => {
                line!(
                    text,
                    "git       registered the registry.json merge driver in {repository}/.git/config"
                )
            }
            Step::MergeDriver { .. } => {}
        }
    }
    if registered > 0 {
        line!(text, "registered {registered} kernel contracts and packs (active)");
    }
    let kept = done
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Kept { note, .. } if note.is_empty()))
        .count();
    if kept > 0 {
        line!(text, "{kept} files and folders already there were kept as they are");
    }
    if let Some(problem) = &notice {
        line!(text, "notice: {problem}");
    }
    if done.git.is_none() {
        line!(
            text,
            "not in a git work tree: run `pactum init` again after `git init` to register the merge driver"
        );
    }
    line!(
        text,
        "{}: ready. next: `pactum new contract PRC-NAME-001`, then `pactum validate`",
        done.root.display()
    );
    output::print_text(&text);
    OK
}
