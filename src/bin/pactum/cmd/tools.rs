//! `pactum tools lock [--check]`: starts the tool servers of `pactum.toml`, lists their tools
//! and writes `pactum.tools.lock` (SPEC §24), which `validate` reads instead of starting a
//! program; `pactum tools list`: what the lock records.

use pactum::authority::Trust;
use pactum::mcp::lock::{self, Lock};
use serde_json::json;

use crate::output::{self, Common, FAILED, OK};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Start every tool server pactum.toml configures (running its `command`, or contacting
    /// its `url`), list its tools and write pactum.tools.lock. This command is the
    /// confirmation that the servers may start: run it only in a checkout you trust, then
    /// review and commit the lock. `validate` checks tool names against the lock without
    /// starting anything, and `run` refuses a server whose tools differ from it.
    Lock {
        /// Write nothing: exit 1 when the lock is missing or differs from what the servers
        /// list now (tools_lock_stale).
        #[arg(long)]
        check: bool,
    },
    /// Print the servers and tools the committed lock records (starts nothing).
    List,
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let project = match args.common.project() {
        Ok(p) => p,
        Err(e) => return output::fail(&e, json),
    };
    let config = &project.config;
    match args.action {
        Action::List => {
            let lock = match Lock::load(&project.root) {
                Ok(Some(lock)) => lock,
                Ok(None) => {
                    let e = pactum::Error::ToolsLockStale {
                        message: format!(
                            "there is no {}; write it with `pactum tools lock`",
                            lock::FILE_NAME
                        ),
                    };
                    return output::fail(&e, json);
                }
                Err(e) => return output::fail(&e, json),
            };
            if json {
                let mut doc = serde_json::to_value(&lock).unwrap_or_default();
                doc["ok"] = json!(true);
                output::print_json(&doc);
            } else {
                let mut text = String::new();
                for (name, server) in &lock.servers {
                    let names: Vec<&str> = server.tools.iter().map(|t| t.name.as_str()).collect();
                    text.push_str(&format!("{name}: {}\n", names.join(", ")));
                }
                output::print_text(&text);
            }
            OK
        }
        Action::Lock { check } => {
            // Running this command is the confirmation (its help says so).
            let servers = pactum::mcp::ServerSpec::from_config(
                &config.tools,
                &project.root,
                &config.env.tool_env,
                Trust::confirmed(),
            );
            let listings = match pactum::executor::toolbox::start_all(&servers.started) {
                Ok(l) => l,
                Err(e) => return output::fail(&e, json),
            };
            let lock = Lock::of(listings.iter().filter_map(|(server, tools)| {
                let settings = config.tools.get(server.name())?;
                Some((server.name(), settings, tools.as_slice()))
            }));
            drop(listings);
            if check {
                let stale = match Lock::load(&project.root) {
                    Ok(Some(committed)) if committed == lock => None,
                    Ok(Some(committed)) => Some(
                        lock.servers
                            .keys()
                            .chain(committed.servers.keys())
                            .find_map(|name| {
                                let now = lock.servers.get(name).map(|s| &s.tools);
                                (now != committed.servers.get(name).map(|s| &s.tools)).then(|| {
                                    format!("{} does not record what tool server `{name}` lists now; write it again with `pactum tools lock`", lock::FILE_NAME)
                                })
                            })
                            .unwrap_or_else(|| format!("{} records the servers' settings otherwise; write it again with `pactum tools lock`", lock::FILE_NAME)),
                    ),
                    Ok(None) => Some(format!("there is no {}; write it with `pactum tools lock`", lock::FILE_NAME)),
                    Err(e) => Some(e.to_string()),
                };
                if let Some(message) = stale {
                    let e = pactum::Error::ToolsLockStale { message };
                    output::fail(&e, json);
                    return FAILED;
                }
            } else if let Err(e) = lock.write(&project.root) {
                return output::fail(&e, json);
            }
            let tools: usize = lock.servers.values().map(|s| s.tools.len()).sum();
            if json {
                output::print_json(&json!({
                    "ok": true,
                    "file": lock::FILE_NAME,
                    "servers": lock.servers.len(),
                    "tools": tools,
                    "written": !check,
                }));
            } else {
                let verb = if check { "matches" } else { "written:" };
                output::print_text(&format!(
                    "{} {verb} {} servers, {tools} tools\n",
                    lock::FILE_NAME,
                    lock.servers.len()
                ));
            }
            OK
        }
    }
}
