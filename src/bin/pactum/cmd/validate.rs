//! `pactum validate [PATH...]`: every finding about contracts, packs, work orders and the
//! registry, as text, JSON, SARIF, JUnit or GitHub annotations; many paths (each checked
//! in its project; a monorepo root finds the projects below it), codes selected or ignored,
//! a baseline of accepted findings, the report to a file.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use pactum::report::{self, Format, RenderOptions};
use pactum::validate::filter::{self, Baseline, CodeFilter};
use pactum::validate::paths::validate_paths;
use pactum::validate::{NoProgress, Progress, ValidateOptions};

use crate::output::{self, FAILED, OK};

/// Files above which a progress bar is drawn (on a terminal only).
const PROGRESS_THRESHOLD: usize = 200;

#[derive(clap::Args)]
pub struct Args {
    /// Project roots, folders of contracts, or files (default: --root, else the current
    /// folder). A folder with no registry.json above it is searched for the projects below
    /// it (a monorepo root); a path in no project is a finding (`no_project`).
    paths: Vec<PathBuf>,
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
    /// Do not start the tool servers of pactum.toml to list their tools: tools only a
    /// server could offer are not checked (`tool_unknown`); for offline or untrusted CI.
    #[arg(long)]
    no_tools: bool,
    /// Write the report to FILE (any format); the text summary goes to stderr. Never over
    /// registry.json, pactum.toml, a governed document or anything in .git/ or .pactum/.
    #[arg(long, value_name = "FILE")]
    output_file: Option<PathBuf>,
    /// Exit 0 even when there are findings (errors of pactum itself still exit 2).
    #[arg(long)]
    exit_zero: bool,
    /// Report only these codes (comma-separated or repeated); pactum.toml: [lint] select.
    #[arg(long, value_name = "CODES")]
    select: Vec<String>,
    /// Never report these codes (comma-separated or repeated); pactum.toml: [lint] ignore.
    #[arg(long, value_name = "CODES")]
    ignore: Vec<String>,
    /// Report only findings that are not in this baseline file.
    #[arg(long, value_name = "FILE", conflicts_with = "write_baseline")]
    baseline: Option<PathBuf>,
    /// Record today's findings in FILE as the baseline (and exit 0).
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// Print only the findings (no notes, no summary).
    #[arg(short, long)]
    quiet: bool,
    /// Check the registry's governance against this git revision (a pull request's base:
    /// origin/main, a SHA): its history must be a prefix of today's, every event after it
    /// is re-derived (a promotion the gate allows, eval evidence that recomputes from its
    /// cassette, a label repeating its target's hash, signatures of the base's allowed
    /// signers), and the base's [gate] settings decide. Each new event is listed.
    #[arg(long, value_name = "REF")]
    base: Option<String>,
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
    let paths: Vec<PathBuf> = if args.paths.is_empty() {
        vec![args.root.clone().unwrap_or_else(|| PathBuf::from("."))]
    } else {
        args.paths.clone()
    };
    let fail = |e: &pactum::Error| {
        if format == Format::Json {
            output::print_json(&output::error_json(e));
        } else {
            output::eprint_error(e);
        }
        output::USAGE
    };
    if args.watch {
        if paths.len() > 1 {
            return fail(&pactum::Error::Usage {
                message:
                    "--watch takes one path; watch each folder with its own `pactum watch PATH`"
                        .into(),
            });
        }
        return crate::cmd::watch::watch(&paths[0], args.strict, format);
    }
    let registry = args
        .registry
        .clone()
        .or_else(|| args.root.as_ref().map(|r| r.join(pactum::registry::FILE_NAME)));
    let filter = match code_filter(&args) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let options = ValidateOptions {
        registry,
        jobs: args.jobs,
        names_from: std::env::current_dir().ok(),
        filter,
        no_tools: args.no_tools,
        tool_env: pactum::config::tool_env(&output::env_lookup),
        trust: {
            let mut env = pactum::config::Config::default();
            env.apply_env(&output::env_lookup);
            pactum::authority::Trust::of(&env)
        },
        ..Default::default()
    };
    let path = paths[0].clone();
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
    let mut report = match validate_paths(&paths, &options, progress) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    if let Some(rev) = &args.base
        && let Err(e) = governance(&path, options.registry.as_deref(), rev, &mut report)
    {
        return fail(&e);
    }
    if args.strict {
        report.make_strict();
    }
    if let Some(problem) = merge_driver_notice(&path) {
        report.notes.push(problem);
    }
    if let Some(file) = &args.write_baseline {
        let baseline = Baseline::of(&report);
        if let Err(e) = write_file(file, baseline.to_json().as_bytes()) {
            return fail(&e);
        }
        eprintln!(
            "wrote {} finding(s) to the baseline {}; `pactum validate --baseline {}` reports only new ones",
            baseline.findings.len(),
            file.display(),
            file.display()
        );
        return OK;
    }
    if let Some(file) = &args.baseline {
        let read = pactum::document::read_limited(file, pactum::document::MAX_FILE_BYTES)
            .and_then(|bytes| pactum::document::utf8(bytes, file, None))
            .and_then(|text| Baseline::parse(&text, file));
        match read {
            Ok(baseline) => {
                let known = baseline.filter(&mut report);
                if known > 0 {
                    report.notes.push(format!(
                        "{known} finding(s) in the baseline {} not shown",
                        file.display()
                    ));
                }
            }
            Err(e) => return fail(&e),
        }
    }
    let render = RenderOptions { quiet: args.quiet, ..RenderOptions::default() };
    match &args.output_file {
        Some(file) => {
            let text = report::render(&report, format, &render);
            if let Err(e) = write_file(file, text.as_bytes()) {
                return fail(&e);
            }
            if !args.quiet {
                let summary = report::render(
                    &report,
                    Format::Text,
                    &RenderOptions { color: true, quiet: false, ..render },
                );
                let last = summary.lines().last().unwrap_or_default();
                let mut err = anstream::stderr().lock();
                let _ = writeln!(err, "{last} (report written to {})", file.display());
            }
        }
        None => write_report(&report, format, args.quiet),
    }
    if report.errors() > 0 && !args.exit_zero { FAILED } else { OK }
}

/// `--base REF`: the registry's governance since REF, re-derived, added to `report` (its
/// findings, and a note per new event).
fn governance(
    path: &std::path::Path,
    registry: Option<&std::path::Path>,
    rev: &str,
    report: &mut pactum::Report,
) -> pactum::Result<()> {
    let start = if pactum::confine::is_dir(path) { path } else { path.parent().unwrap_or(path) };
    let start = if start.as_os_str().is_empty() { std::path::Path::new(".") } else { start };
    let registry_path = match registry {
        Some(r) => r.to_path_buf(),
        None => pactum::registry::find_upwards(start).ok_or_else(|| pactum::Error::Usage {
            message: format!(
                "--base checks a registry's history, and {} is in no project (no registry.json above it)",
                path.display()
            ),
        })?,
    };
    let project = crate::output::open_project(&registry_path)?;
    let review = pactum::governance::review(&project, rev, report, jiff::Timestamp::now())?;
    let cwd = std::env::current_dir().unwrap_or_default();
    let root = pactum::confine::real_or_given(&pactum::validate::names_root(
        path,
        Some(&cwd),
        &project.root,
    ));
    let real = pactum::confine::real_or_given(&project.registry.path);
    let name = pactum::validate::relative_name(&root, &real);
    review.add_to(report, &name);
    Ok(())
}

/// The codes the command line selects and ignores.
fn code_filter(args: &Args) -> pactum::Result<CodeFilter> {
    let select =
        if args.select.is_empty() { None } else { Some(filter::codes(&args.select, "--select")?) };
    Ok(CodeFilter {
        select,
        ignore: filter::codes(&args.ignore, "--ignore")?,
        per_path: Vec::new(),
    })
}

/// Writes a file the user named on the command line (a report, a baseline), atomically,
/// never over what the project governs (see [`report_target_problem`]).
fn write_file(path: &std::path::Path, bytes: &[u8]) -> pactum::Result<()> {
    if let Some(problem) = report_target_problem(path) {
        return Err(pactum::Error::Usage {
            message: format!(
                "{} {problem}; write the report to a file of its own, such as reports/validate.sarif",
                path.display()
            ),
        });
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        pactum::confine::create_folders(dir)?;
    }
    pactum::confine::write_atomic(path, bytes)
}

/// Why `path` may not receive a report or a baseline: a folder, a file the project
/// governs by name (registry.json, its lock, pactum.toml), anything in `.git/` or
/// `.pactum/` (history, ledger), or an existing contract, pack, work order or eval suite.
/// `None`: it may.
fn report_target_problem(path: &std::path::Path) -> Option<String> {
    if pactum::confine::is_dir(path) {
        return Some("is a folder".to_string());
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if [pactum::registry::FILE_NAME, ".registry.lock", pactum::config::FILE_NAME]
        .contains(&name.as_str())
    {
        return Some(format!("is the project's {name}"));
    }
    let written = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let real = pactum::confine::real_or_given(&written);
    for candidate in [&written, &real] {
        if let Some(hidden) = candidate.components().find_map(|c| {
            let part = c.as_os_str().to_string_lossy();
            [".git", ".pactum"].contains(&part.as_ref()).then(|| part.into_owned())
        }) {
            return Some(format!("lies in {hidden}/, which pactum and git keep"));
        }
    }
    if pactum::confine::is_file(path)
        && let Ok(doc) = pactum::document::load(path, None)
        && (pactum::validate::file::FileKind::from_value(&doc.value).is_some()
            || doc.value.get("eval_id").is_some())
    {
        return Some("is a governed document".to_string());
    }
    None
}

/// Writes a rendered report to stdout: text through `anstream` (which keeps the colors
/// only on a terminal without `NO_COLOR`; the renderer has already escaped what came from
/// files), every other format byte for byte, whatever stdout is.
pub fn write_report(report: &pactum::Report, format: Format, quiet: bool) {
    if format == Format::Text {
        let text = report::render(
            report,
            format,
            &RenderOptions { color: true, quiet, ..Default::default() },
        );
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

/// A note when the project's `.gitattributes` names the registry merge driver but git
/// cannot run it (see [`pactum::git::merge_driver_problem`]).
fn merge_driver_notice(path: &std::path::Path) -> Option<String> {
    let start = if pactum::confine::is_dir(path) { path } else { path.parent()? };
    let start = if start.as_os_str().is_empty() { std::path::Path::new(".") } else { start };
    let registry = pactum::registry::find_upwards(start)?;
    let project = registry.parent()?;
    let attributes = project.join(".gitattributes");
    let text = pactum::document::read_limited(&attributes, 1 << 20).ok()?;
    let named = String::from_utf8_lossy(&text)
        .lines()
        .any(|l| l.split_whitespace().any(|w| w == format!("merge={}", pactum::git::MERGE_DRIVER)));
    if !named {
        return None;
    }
    pactum::git::merge_driver_problem(project, crate::output::path_var().as_deref())
}
