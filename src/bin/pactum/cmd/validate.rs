//! `pactum validate [PATH]`: every finding about contracts, packs, work orders and the
//! registry, as text, JSON, SARIF, JUnit or GitHub annotations.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use pactum::report::{self, Format, RenderOptions};
use pactum::validate::{NoProgress, Progress, ValidateOptions, validate};

use crate::output::{self, FAILED, OK};

/// Files above which a progress bar is drawn (on a terminal only).
const PROGRESS_THRESHOLD: usize = 200;

#[derive(clap::Args)]
pub struct Args {
    /// A project root, a folder of contracts, or one file (default: --root, else the current
    /// folder).
    path: Option<PathBuf>,
    /// Project root (the folder of registry.json); PATH defaults to it.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Output format: text, json, sarif, junit or github.
    #[arg(long, default_value = "text", value_parser = parse_format)]
    format: Format,
    /// Same as --format json.
    #[arg(long)]
    json: bool,
    /// Treat warnings as errors.
    #[arg(long)]
    strict: bool,
    /// registry.json to use instead of the one found by walking up from PATH.
    #[arg(long, value_name = "FILE")]
    registry: Option<PathBuf>,
    /// Keep running: re-validate on every change (with --format json, one JSON document per
    /// line; except for text, the change notices go to stderr).
    #[arg(long)]
    watch: bool,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    jobs: usize,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse().map_err(|e: report::UnknownFormat| e.to_string())
}

/// A progress bar on stderr.
struct Bar(indicatif::ProgressBar);

impl Progress for Bar {
    fn start(&self, total: usize) {
        self.0.set_length(total as u64);
    }
    fn advance(&self) {
        output::inject_panic("validate-worker");
        self.0.inc(1);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

pub fn exec(args: Args) -> u8 {
    let format = if args.json { Format::Json } else { args.format };
    let path =
        args.path.clone().or_else(|| args.root.clone()).unwrap_or_else(|| PathBuf::from("."));
    if args.watch {
        return crate::cmd::watch::watch(&path, args.strict, format);
    }
    let registry = args
        .registry
        .clone()
        .or_else(|| args.root.as_ref().map(|r| r.join(pactum::registry::FILE_NAME)));
    let options = ValidateOptions {
        registry,
        jobs: args.jobs,
        names_from: std::env::current_dir().ok(),
        ..Default::default()
    };
    let bar = Bar(indicatif::ProgressBar::hidden());
    let use_bar = std::io::stderr().is_terminal() && count_hint(&path) > PROGRESS_THRESHOLD;
    if use_bar {
        bar.0.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        bar.0.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} validating {pos}/{len} files {wide_bar}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
    }
    // The bar (hidden unless drawn) is always the progress in debug builds, so the panic
    // test hook reaches the workers.
    let progress: &dyn Progress =
        if use_bar || cfg!(debug_assertions) { &bar } else { &NoProgress };
    let mut report = match validate(&path, &options, progress) {
        Ok(r) => r,
        Err(e) => {
            if format == Format::Json {
                output::print_json(&output::error_json(&e));
            } else {
                output::eprint_error(&e);
            }
            return output::USAGE;
        }
    };
    if args.strict {
        report.make_strict();
    }
    write_report(&report, format);
    if report.errors() > 0 { FAILED } else { OK }
}

/// Writes a rendered report to stdout: text through `anstream` (which keeps the colors
/// only on a terminal without `NO_COLOR`; the renderer has already escaped what came from
/// files), every other format byte for byte, whatever stdout is.
pub fn write_report(report: &pactum::Report, format: Format) {
    if format == Format::Text {
        let text =
            report::render(report, format, &RenderOptions { color: true, ..Default::default() });
        let mut out = anstream::stdout().lock();
        let _ = out.write_all(output::redacted(&text).as_bytes());
        let _ = out.flush();
    } else {
        output::print_exact(&report::render(report, format, &RenderOptions::default()));
    }
}

/// A cheap guess at the number of files, to decide whether a bar is worth drawing.
fn count_hint(path: &std::path::Path) -> usize {
    if pactum::confine::is_file(path) {
        return 1;
    }
    pactum::confine::walk(path).max_depth(6).into_iter().take(PROGRESS_THRESHOLD + 1).count()
}
