//! Every tool a pack's sections or a work order's `tools` name exists (SPEC §23, §24):
//! `tool_unknown` when no built-in tool and no configured tool server offers it.
//!
//! `validate` never starts a server nor opens a connection: what the servers of
//! `pactum.toml` offer is read from the committed tool lock (`pactum.tools.lock`, written by
//! `pactum tools lock`). A lock that is missing, or disagrees with pactum.toml about a
//! server, is `tools_lock_stale` (on pactum.toml), and the names only that server could
//! offer are then left unreported. With `--no-tools` the lock is not read: a name in some
//! server's `allow` list counts as offered, and when a server has no `allow` list, names
//! that are not built-ins are not reported at all.

use crate::diagnostic::Diagnostic;
use crate::error::{Code, Error};
use crate::executor::tools::{BUILTIN_NAMES, reserved_by};
use crate::mcp::lock::{self, Lock};

use super::{Context, ValidateOptions};

/// A tool named somewhere: the file, the pointer, what names it.
struct Named<'c> {
    file: &'c str,
    pointer: String,
    by: String,
    tool: &'c str,
}

/// What the names are checked against.
enum Offered {
    /// Exactly these tools exist.
    Known(Vec<String>),
    /// Beyond these, any name may be offered by a server that was not asked.
    AtLeast(Vec<String>),
}

pub fn check(ctx: &Context, options: &ValidateOptions, out: &mut Vec<Diagnostic>) {
    let mut named = Vec::new();
    for f in &ctx.files {
        for (pointer, key, tool) in &f.section_tools {
            named.push(Named {
                file: &f.rel,
                pointer: pointer.clone(),
                by: format!("section `{key}`"),
                tool,
            });
        }
        if let Some(wo) = &f.work_order {
            for (j, tool) in wo.tools.iter().flatten().enumerate() {
                named.push(Named {
                    file: &f.rel,
                    pointer: format!("/tools/{j}"),
                    by: format!("work order {}", wo.id),
                    tool,
                });
            }
        }
    }
    let builtin: Vec<String> = BUILTIN_NAMES.iter().map(|s| s.to_string()).collect();
    let beyond = named.iter().any(|n| !BUILTIN_NAMES.contains(&n.tool));
    // With servers configured, the lock is read even when only built-ins are named: a
    // collision it shows fails every run, whatever the packs name.
    let offered = if ctx.config.tools.is_empty() || (!beyond && options.no_tools) {
        Offered::Known(builtin)
    } else if options.no_tools {
        let mut known = builtin;
        let mut open = false;
        for server in ctx.config.tools.values() {
            match &server.allow {
                Some(allow) => known.extend(allow.iter().map(|a| server.run_name(a))),
                None => open = true,
            }
        }
        if open { Offered::AtLeast(known) } else { Offered::Known(known) }
    } else {
        match from_lock(ctx) {
            Ok((mut names, taken)) => {
                // Every collision that is left, each a finding of its own.
                for e in taken {
                    out.push(
                        Diagnostic::new(e.code(), e.to_string())
                            .file(crate::config::FILE_NAME)
                            .help(TAKEN_HELP),
                    );
                }
                names.extend(builtin);
                Offered::Known(names)
            }
            // Nothing names a server's tool: the lock's state is not this check's concern.
            Err(_) if !beyond => Offered::Known(builtin),
            Err(e) => {
                let help = match e.code() {
                    Code::ToolsLockStale => {
                        "write the lock with `pactum tools lock` (it starts the servers pactum.toml configures, so run it where you trust the checkout) and commit pactum.tools.lock; or skip the check with `pactum validate --no-tools`"
                    }
                    Code::ToolNameTaken => TAKEN_HELP,
                    _ => {
                        "correct the name in the server's `allow` list (the message lists the tools it offers)"
                    }
                };
                // A lock that does not read is a finding on the lock; the rest are about
                // how pactum.toml and the lock disagree.
                let file = if e.to_string().starts_with(lock::FILE_NAME) {
                    lock::FILE_NAME
                } else {
                    crate::config::FILE_NAME
                };
                out.push(Diagnostic::new(e.code(), e.to_string()).file(file).help(help));
                Offered::AtLeast(builtin)
            }
        }
    };
    for n in named {
        let (known, exact) = match &offered {
            Offered::Known(k) => (k, true),
            Offered::AtLeast(k) => (k, false),
        };
        if !exact && !BUILTIN_NAMES.contains(&n.tool) {
            continue;
        }
        if known.iter().any(|k| k == n.tool) {
            continue;
        }
        let mut known = known.clone();
        known.sort();
        known.dedup();
        let e = Error::ToolUnknown { tool: n.tool.to_string(), named_by: n.by, known };
        out.push(
            Diagnostic::new(Code::ToolUnknown, e.to_string())
                .file(n.file.to_string())
                .pointer(n.pointer)
                .help("name a built-in tool or one a tool server in pactum.toml lists ([tools.NAME] command = [...] or url = \"...\")"),
        );
    }
}

const TAKEN_HELP: &str = "give the server a `prefix` (`prefix = \"fs_\"`) or `rename` the tool (`rename = {\"read_file\" = \"fs_read\"}`) in its [tools.NAME] table, or list only the tools the project uses in its `allow` list; then `pactum tools lock`";

/// The names of every tool the servers offer (their `allow` lists applied), as the
/// committed lock records them.
fn from_lock(ctx: &Context) -> Result<(Vec<String>, Vec<Error>), Error> {
    let Some(lock) = Lock::load(&ctx.base)? else {
        return Err(Error::ToolsLockStale {
            message: format!(
                "pactum.toml configures tool servers ({}), but there is no {}, so the tools packs and work orders name cannot be checked without starting them",
                ctx.config.tools.keys().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
                lock::FILE_NAME
            ),
        });
    };
    let disagreements = lock.disagreements(&ctx.config.tools);
    if !disagreements.is_empty() {
        return Err(Error::ToolsLockStale { message: disagreements.join("; ") });
    }
    let mut names: Vec<String> = Vec::new();
    let mut owners: Vec<String> = Vec::new();
    let mut taken: Vec<Error> = Vec::new();
    for (server, settings) in &ctx.config.tools {
        let tools = lock.names(server).unwrap_or_default();
        let allow = settings.allow.as_ref();
        if let Some(allow) = allow {
            for name in allow {
                if !tools.contains(name) {
                    return Err(Error::ToolUnknown {
                        tool: name.clone(),
                        named_by: format!("the `allow` list of tool server `{server}`"),
                        known: tools.clone(),
                    });
                }
            }
        }
        let unknown = settings.rename.iter().flat_map(|r| r.keys()).find(|o| !tools.contains(o));
        if let Some(old) = unknown {
            return Err(Error::ToolUnknown {
                tool: old.clone(),
                named_by: format!("the `rename` table of tool server `{server}`"),
                known: tools.clone(),
            });
        }
        for listed in tools.iter().filter(|n| allow.is_none_or(|a| a.contains(n))) {
            let name = settings.run_name(listed);
            let owner = format!("tool server `{server}`");
            // Case-insensitively, as `ToolRegistry::register_new` compares.
            let first = reserved_by(&name).map(str::to_string).or_else(|| {
                names.iter().position(|n| n.eq_ignore_ascii_case(&name)).map(|i| owners[i].clone())
            });
            if let Some(first) = first {
                taken.push(Error::ToolNameTaken {
                    tool: name,
                    first,
                    second: owner,
                    also: Vec::new(),
                });
                continue;
            }
            names.push(name);
            owners.push(owner);
        }
    }
    Ok((names, taken))
}
