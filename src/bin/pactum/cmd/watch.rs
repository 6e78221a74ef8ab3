//! `pactum watch [PATH]` (and `validate --watch`): re-validates on every change, debounced,
//! and prints fresh diagnostics. Runs until interrupted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pactum::report::{self, Format};
use pactum::validate::paths::validate_paths;
use pactum::validate::{NoProgress, ValidateOptions};

use crate::output;

/// Debounce between a change and the re-validation.
pub const DEBOUNCE: Duration = Duration::from_millis(100);

#[derive(clap::Args)]
pub struct Args {
    /// A project root or folder (default: the current folder).
    path: Option<PathBuf>,
    /// Treat warnings as errors.
    #[arg(long)]
    strict: bool,
}

/// One validation, as `pactum validate PATH` runs and writes it (projects below a folder in
/// none, `no_project` for a path in no project), except that JSON is one compact document
/// per line (NDJSON): a stream of reports a script reads line by line. An error is printed
/// and returned: the first run stops the watch on it, later ones (a file mid-edit) keep
/// watching.
fn run_once(path: &Path, strict: bool, format: Format) -> Result<(), ()> {
    let options =
        ValidateOptions { names_from: std::env::current_dir().ok(), ..Default::default() };
    match validate_paths(&[path.to_path_buf()], &options, &NoProgress) {
        Ok(mut r) => {
            if strict {
                r.make_strict();
            }
            if format == Format::Json {
                output::print_exact(&report::json_line(&r));
            } else {
                crate::cmd::validate::write_report(&r, format, false);
            }
            Ok(())
        }
        Err(e) if format == Format::Json => {
            let mut line = serde_json::to_string(&output::error_json(&e)).unwrap_or_default();
            line.push('\n');
            output::print_exact(&line);
            Err(())
        }
        Err(e) => {
            output::eprint_error(&e);
            Err(())
        }
    }
}

/// Validates, then re-validates on every change until the process is stopped.
pub fn watch(path: &Path, strict: bool, format: Format) -> u8 {
    let root = match pactum::registry::find_upwards(path) {
        Some(reg) => reg.parent().map(Path::to_path_buf).unwrap_or_else(|| path.to_path_buf()),
        None => path.to_path_buf(),
    };
    // A path that does not exist, or is in no project, is the same usage error as for
    // `pactum validate`: never a watch that passes in silence (SPEC §21).
    if run_once(path, strict, format).is_err() {
        return output::USAGE;
    }
    let (tx, rx) = std::sync::mpsc::channel::<Vec<PathBuf>>();
    let watch = pactum::watch::watch_tree(&root, DEBOUNCE, move |paths| {
        let _ = tx.send(paths);
    });
    let _watch = match watch {
        Ok(w) => w,
        Err(e) => {
            output::eprint_error(&e);
            return output::USAGE;
        }
    };
    let root_shown = root.display().to_string();
    eprintln!("watching {} (Ctrl-C to stop)", pactum::terminal::escape_line(&root_shown));
    while let Ok(paths) = rx.recv() {
        let shown: Vec<String> = paths.iter().take(3).map(|p| output::shown(&root, p)).collect();
        let more =
            if paths.len() > 3 { format!(" and {} more", paths.len() - 3) } else { String::new() };
        // Between text reports the notice is part of what people read; with any other
        // format it goes to stderr, so stdout holds nothing but reports (NDJSON for json).
        let notice = format!("--- {} changed{more}: re-validating ---", shown.join(", "));
        let notice = format!("\n{}\n", pactum::terminal::escape_line(&notice));
        if format == Format::Text {
            output::print_exact(&notice);
        } else {
            eprint!("{notice}");
        }
        let _ = run_once(path, strict, format);
    }
    output::OK
}

pub fn exec(args: Args) -> u8 {
    let path = args.path.unwrap_or_else(|| PathBuf::from("."));
    watch(&path, args.strict, Format::Text)
}
