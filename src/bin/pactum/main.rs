//! The `pactum` command-line tool: thin commands over the library.
//!
//! Each command is a module with an `Args` struct (clap) and an `exec` function. The
//! binary owns stdout, stderr, the environment and exit codes: 0 success, 1 findings / a
//! failed run / invalid data, 2 usage, I/O or internal errors.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod output;

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
    /// Register, promote, deprecate and remove versions; verify and log the registry.
    Registry(cmd::registry::Args),
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
    let status = match cli.command {
        Command::Validate(args) => cmd::validate::exec(args),
        Command::Resolve(args) => cmd::resolve::exec(args),
        Command::Registry(args) => cmd::registry::exec(args),
    };
    ExitCode::from(status)
}
