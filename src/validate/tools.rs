//! Every tool a pack's sections or a work order's `tools` name exists (SPEC §23):
//! `tool_unknown` when no built-in tool and no configured tool server offers it.
//!
//! The servers of `pactum.toml` are started only to list their tools, and only when some
//! name is not a built-in's; a server that cannot start is a `tool_server_failed` finding
//! on `pactum.toml` (never a silent pass), and the names only a server could offer are then
//! left unreported. With `--no-tools` no server starts: a name in some server's `allow`
//! list counts as offered, and when a server has no `allow` list, names that are not
//! built-ins are not reported at all (offline CI keeps working).

use crate::diagnostic::Diagnostic;
use crate::error::{Code, Error};
use crate::executor::tools::BUILTIN_NAMES;
use crate::mcp::ServerSpec;

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
    let offered = if !beyond || ctx.config.tools.is_empty() {
        Offered::Known(builtin)
    } else if options.no_tools {
        let mut known = builtin;
        let mut open = false;
        for server in ctx.config.tools.values() {
            match &server.allow {
                Some(allow) => known.extend(allow.iter().cloned()),
                None => open = true,
            }
        }
        if open { Offered::AtLeast(known) } else { Offered::Known(known) }
    } else {
        let specs = ServerSpec::from_config(&ctx.config.tools, &ctx.base, &options.tool_env);
        match listed(&specs) {
            Ok(mut names) => {
                names.extend(builtin);
                Offered::Known(names)
            }
            Err(e) => {
                let help = match e.code() {
                    Code::ToolServerFailed => {
                        "the tools a pack or work order names are checked against the servers' listings: run the server's command by hand to see why it fails, or skip the check with `pactum validate --no-tools`"
                    }
                    Code::ToolNameTaken => {
                        "list only the tools the project uses in the server's `allow` list, or rename the tool in the server"
                    }
                    _ => {
                        "correct the name in the server's `allow` list (the message lists the tools it offers)"
                    }
                };
                out.push(
                    Diagnostic::new(e.code(), e.to_string())
                        .file(crate::config::FILE_NAME)
                        .help(help),
                );
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

/// The names of every tool the servers offer (their `allow` lists applied), each server
/// started and stopped again.
fn listed(specs: &[ServerSpec]) -> Result<Vec<String>, Error> {
    let listings = crate::executor::toolbox::start_all(specs)?;
    let mut names: Vec<String> = Vec::new();
    let mut owners: Vec<String> = Vec::new();
    for (server, tools) in listings {
        let allow = server.spec().allow.as_ref();
        if let Some(allow) = allow {
            for name in allow {
                if !tools.iter().any(|t| &t.name == name) {
                    return Err(Error::ToolUnknown {
                        tool: name.clone(),
                        named_by: format!("the `allow` list of tool server `{}`", server.name()),
                        known: tools.iter().map(|t| t.name.clone()).collect(),
                    });
                }
            }
        }
        for name in
            tools.into_iter().map(|t| t.name).filter(|n| allow.is_none_or(|a| a.contains(n)))
        {
            let owner = format!("tool server `{}`", server.name());
            // Case-insensitively, as `ToolRegistry::register_new` compares.
            let first = if BUILTIN_NAMES.iter().any(|b| b.eq_ignore_ascii_case(&name)) {
                Some("the built-in tools".to_string())
            } else {
                names.iter().position(|n| n.eq_ignore_ascii_case(&name)).map(|i| owners[i].clone())
            };
            if let Some(first) = first {
                return Err(Error::ToolNameTaken { tool: name, first, second: owner });
            }
            names.push(name);
            owners.push(owner);
        }
    }
    Ok(names)
}
