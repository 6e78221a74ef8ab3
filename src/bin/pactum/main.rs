//! The `pactum` command-line tool: thin commands over the library.
//!
//! Each command is a module with an `Args` struct (clap) and an `exec` function. The
//! binary owns stdout, stderr, the environment and exit codes: 0 success, 1 findings / a
//! failed run / invalid data, 2 usage, I/O or internal errors (a panic anywhere is
//! `internal_error`, exit 2).

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod cmd;
mod output;
mod signal;
mod telemetry;

/// pactum allocates many small values (parsed JSON, template values, diagnostics);
/// mimalloc makes `validate` over large trees and every exchange markedly cheaper.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Governed prompt contracts: versioned, validated and auditable LLM exchanges.
#[derive(Parser)]
#[command(name = "pactum", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// When to use colors: auto (a terminal without NO_COLOR), always, never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"])]
    color: String,
    /// Let pactum.toml's settings that start programs ([tools] command), contact hosts
    /// ([tools] url, [telemetry] otlp_endpoint, a provider's base_url) or send content
    /// ([telemetry] content) act, as PACTUM_TRUST_CONFIG=1 does. Without it they do not: a
    /// pull request can change pactum.toml.
    #[arg(long, global = true)]
    trust_config: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Start a project: registry, folders, schemas, git settings (and kernel contracts).
    Init(cmd::init::Args),
    /// Check contracts, packs, work orders and the registry; report every finding.
    Validate(cmd::validate::Args),
    /// Resolve ID[@REQUIREMENT] to one registered contract and its pack.
    Resolve(cmd::resolve::Args),
    /// Render a contract's prompt pack with an input (after validating the input).
    Render(cmd::render::Args),
    /// Extract JSON from a raw model response on stdin, optionally validating it.
    Extract(cmd::extract::Args),
    /// Run work orders (exchange or kernel) through a provider.
    Run(cmd::run::Args),
    /// Take work orders from a Redis Stream and run each as `run` does, many workers side by side.
    Worker(cmd::worker::Args),
    /// Check work orders as `run` does before any call and put them on a Redis Stream for workers.
    ///
    /// When any work order is refused (it does not load, a pin does not resolve, its input
    /// does not fit the contract's input_schema, ...), each refused file is named with its
    /// codes and nothing of the batch is submitted. An id that already has a result is
    /// `already done`, not submitted again. Exit status: 0 when submitted, 1 when refused or
    /// when the queue failed, 2 for a file that cannot be read.
    Submit(cmd::submit::Args),
    /// Print the results workers wrote (--follow: as they come).
    ///
    /// Exit status: 0 when every result shown succeeded, 1 when any of them failed (with
    /// --follow: any shown until it stopped) or the queue could not be read.
    Results(cmd::results::Args),
    /// Register, promote, deprecate and remove versions; verify and log the registry.
    Registry(cmd::registry::Args),
    /// Show every change between two contract versions and the bump it needs.
    Diff(cmd::diff::Args),
    /// Run eval suites on a contract version (and compare it with another): pass rates,
    /// regressions, an exact McNemar test, as text, JSON, JUnit, Markdown or one HTML page.
    Eval(cmd::eval::Args),
    /// Verify a ledger's hash chain.
    Ledger(cmd::ledger::Args),
    /// How each version, label, provider or model of a contract behaves in production,
    /// from the ledger: calls, validated at once, re-asks, latency, tokens, cost.
    Stats(cmd::stats::Args),
    /// A read-only web UI on 127.0.0.1: registry and history, eval runs and their
    /// comparison, runs from the ledger, stats as charts.
    View(cmd::view::Args),
    /// Lock the tools of pactum.toml's MCP servers into pactum.tools.lock (which validate
    /// reads instead of starting them), or list what the lock records.
    Tools(cmd::tools::Args),
    /// Re-validate on every change (debounced) and print fresh diagnostics.
    Watch(cmd::watch::Args),
    /// Write typed clients of the project's contracts: Pydantic v2 models and a typed
    /// function per contract (python), or TypeScript declarations (typescript).
    Generate(cmd::generate::Args),
    /// Scaffold a contract and its pack, or the next version of one, registered as drafts; or an eval suite from a contract's examples.
    New(cmd::new::Args),
    /// List, print or write the JSON Schemas embedded in pactum.
    Schemas(cmd::schemas::Args),
    /// Explain an error code: what it means and how to fix it (`--list`: every code).
    Explain(cmd::explain::Args),
    /// Print a shell completion script: bash, zsh, fish, powershell or elvish.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff); `pactum man | man -l -` shows it.
    Man,
}

/// mimalloc commits its arenas eagerly by default, which costs peak RSS when `validate`
/// checks 20,000 files; committing on demand keeps the peak near what is live. Freed pages
/// go back to the system 10 ms after they are freed (mimalloc's own delay, set here so the
/// choice is written down): giving them back at once made every file's memory fault in
/// again (a third of validate's time in the kernel zeroing pages), and a longer delay
/// holds 15–30 MB more at the peak (BENCHMARKS.md, issue 40).
fn tune_allocator() {
    // Option indices of mimalloc's `mi_option_t` in its v3 header, the one built (the
    // same in v2): the assertion fails the build if the crate ever builds another layout.
    const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    const _: () = assert!(libmimalloc_sys::_mi_option_last == 47, "mimalloc's v3 options");
    // SAFETY: setting an option is a plain store mimalloc reads on its next decision; it is
    // done before any other thread exists.
    unsafe {
        libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set(PURGE_DELAY, 10);
    }
    // No transparent huge pages for this process: 2 MiB pages where mimalloc's arenas ask
    // for them were 8-14 MiB of `validate`'s peak on 10k + 10k files, for no time saved
    // (BENCHMARKS.md, issue 40). mimalloc's own `allow_thp` is read once, before `main`;
    // the process's setting is what it sets, and is set here.
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes an integer and changes only this process's setting.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn main() -> ExitCode {
    tune_allocator();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() && wants_json(std::env::args_os().skip(1)) => {
            // A script that asked for JSON gets JSON, even about the command line itself.
            output::print_json(&usage_error_json(&e, std::env::args_os().nth(1)));
            return ExitCode::from(output::USAGE);
        }
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // A panic is never a success (SPEC §18): wherever it happens (a worker thread
    // included, whose panic is carried here), the command ends with `internal_error` and
    // exit status 2.
    output::catch_panics();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| exec(cli))) {
        Ok(status) => ExitCode::from(status),
        Err(_) => ExitCode::from(output::report_panic()),
    }
}

fn exec(cli: Cli) -> u8 {
    output::inject_panic("main");
    output::set_trust_config(cli.trust_config);
    match cli.color.as_str() {
        "always" => anstream::ColorChoice::Always.write_global(),
        "never" => anstream::ColorChoice::Never.write_global(),
        _ => {}
    }
    match cli.command {
        Command::Init(args) => cmd::init::exec(args),
        Command::Validate(args) => cmd::validate::exec(args),
        Command::Resolve(args) => cmd::resolve::exec(args),
        Command::Render(args) => cmd::render::exec(args),
        Command::Extract(args) => cmd::extract::exec(args),
        Command::Run(args) => cmd::run::exec(args),
        Command::Worker(args) => cmd::worker::exec(args),
        Command::Submit(args) => cmd::submit::exec(args),
        Command::Results(args) => cmd::results::exec(args),
        Command::Registry(args) => cmd::registry::exec(args),
        Command::Diff(args) => cmd::diff::exec(args),
        Command::Eval(args) => cmd::eval::exec(args),
        Command::Ledger(args) => cmd::ledger::exec(args),
        Command::Stats(args) => cmd::stats::exec(args),
        Command::View(args) => cmd::view::exec(args),
        Command::Tools(args) => cmd::tools::exec(args),
        Command::Watch(args) => cmd::watch::exec(args),
        Command::New(args) => cmd::new::exec(args),
        Command::Generate(args) => cmd::generate::exec(args),
        Command::Schemas(args) => cmd::schemas::exec(args),
        Command::Explain(args) => cmd::explain::exec(args),
        Command::Completions { shell } => {
            let mut command = Cli::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut command, "pactum", &mut out);
            output::print_exact(&String::from_utf8_lossy(&out));
            output::OK
        }
        Command::Man => {
            let mut out = Vec::new();
            match clap_mangen::Man::new(Cli::command()).render(&mut out) {
                Ok(()) => {
                    output::print_exact(&String::from_utf8_lossy(&out));
                    output::OK
                }
                Err(e) => output::fail(&pactum::Error::io("stdout", e), false),
            }
        }
    }
}

/// Whether the command line asks for JSON output (`--json`, `--format json`,
/// `--format=json`) before any `--`.
fn wants_json(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    let mut previous_was_format = false;
    for arg in args {
        let arg = arg.to_string_lossy();
        if arg == "--" {
            return false;
        }
        if arg == "--json" || arg == "--format=json" || (previous_was_format && arg == "json") {
            return true;
        }
        previous_was_format = arg == "--format";
    }
    false
}

/// `{"ok": false, "code": "usage_error", "message"}` for an argument error: clap's message
/// (its first paragraph, which names what is wrong, e.g. the missing `<WO>...`, and its
/// tips) on one line, and the help of the (sub)command its usage line names.
fn usage_error_json(e: &clap::Error, command: Option<std::ffi::OsString>) -> serde_json::Value {
    let rendered = e.to_string();
    let mut said = Vec::new();
    let mut usage = None;
    for paragraph in rendered.split("\n\n") {
        let paragraph = paragraph.trim();
        if let Some(line) = paragraph.strip_prefix("Usage: ") {
            usage.get_or_insert(line);
        } else if !paragraph.is_empty() && !paragraph.starts_with("For more information") {
            let words: Vec<&str> = paragraph.lines().map(str::trim).collect();
            said.push(words.join(" "));
        }
    }
    let message = said.join("; ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    // `pactum registry promote [OPTIONS] <PIN>` → `pactum registry promote`.
    let from_usage = usage.map(|line| {
        let path: Vec<&str> =
            line.split_whitespace().take_while(|w| !w.starts_with(['<', '[', '-'])).collect();
        path.join(" ")
    });
    let help = match from_usage.filter(|p| p.starts_with("pactum")) {
        Some(path) => format!("{path} --help"),
        None => match command
            .map(|c| c.to_string_lossy().into_owned())
            .filter(|c| Cli::command().find_subcommand(c).is_some())
        {
            Some(c) => format!("pactum {c} --help"),
            None => "pactum --help".to_string(),
        },
    };
    serde_json::json!({
        "ok": false,
        "code": pactum::Code::UsageError,
        "message": format!("{message}; run `{help}` for the usage"),
    })
}
