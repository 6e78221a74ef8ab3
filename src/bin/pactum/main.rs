//! The `pactum` command-line tool: thin commands over the library.
//!
//! Each command is a module with an `Args` struct (clap) and an `exec` function. The
//! binary owns stdout, stderr, the environment and exit codes: 0 success, 1 findings / a
//! failed run / invalid data, 2 usage, I/O or internal errors (a panic anywhere is
//! `internal_error`, exit 2).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod output;

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
}

#[derive(Subcommand)]
enum Command {
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
    /// Register, promote, deprecate and remove versions; verify and log the registry.
    Registry(cmd::registry::Args),
    /// Show every change between two contract versions and the bump it needs.
    Diff(cmd::diff::Args),
    /// Verify a ledger's hash chain.
    Ledger(cmd::ledger::Args),
    /// Re-validate on every change (debounced) and print fresh diagnostics.
    Watch(cmd::watch::Args),
    /// Scaffold a contract and its pack, registered as drafts.
    New(cmd::new::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
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
    match cli.command {
        Command::Validate(args) => cmd::validate::exec(args),
        Command::Resolve(args) => cmd::resolve::exec(args),
        Command::Render(args) => cmd::render::exec(args),
        Command::Extract(args) => cmd::extract::exec(args),
        Command::Run(args) => cmd::run::exec(args),
        Command::Registry(args) => cmd::registry::exec(args),
        Command::Diff(args) => cmd::diff::exec(args),
        Command::Ledger(args) => cmd::ledger::exec(args),
        Command::Watch(args) => cmd::watch::exec(args),
        Command::New(args) => cmd::new::exec(args),
    }
}
