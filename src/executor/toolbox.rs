//! One tool registry per run (SPEC §8.4, §15, §23): the built-ins over the run's one
//! memory, the library caller's tools ([`super::Runner::run_with_tools`]) and the tools of
//! the MCP servers `pactum.toml` configures, under the work order's `tools` allow-list.
//! Kernel steps, sections' `tools` and disclosure all answer through it, so a memory write
//! in a kernel step is what a section's `memory_read` sees.
//!
//! Servers start lazily: only when the run needs a tool that no built-in or library tool
//! provides (a kernel run describes every tool to its plan, so it starts them at once; an
//! exchange only when its pack names such a tool). They stop when the toolbox is dropped,
//! at the end of the run.

use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};
use crate::executor::memory::Memory;
use crate::executor::tools::{Tool, ToolRegistry};
use crate::mcp::{ListedTool, Server, ServerSpec, Servers, Withheld};

/// The tools of one run.
pub struct Toolbox {
    /// Built-ins and library tools, the allow-list applied (names it lists that only a
    /// server can offer are left for `full`).
    local: std::result::Result<ToolRegistry, Error>,
    /// Everything, servers included; built on first need.
    full: OnceLock<std::result::Result<ToolRegistry, Error>>,
    memory: Arc<Memory>,
    extra: Vec<Arc<dyn Tool>>,
    servers: Vec<ServerSpec>,
    /// Servers of pactum.toml the environment did not confirm (SPEC §24): never started.
    withheld: Vec<Withheld>,
    /// The committed tool lock what the servers list must match.
    lock: std::result::Result<Option<crate::mcp::lock::Lock>, String>,
    allowed: Option<Vec<String>>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox").field("servers", &self.servers.len()).finish_non_exhaustive()
    }
}

impl Default for Toolbox {
    /// The built-ins over a memory of their own; no server, no allow-list.
    fn default() -> Self {
        Toolbox::new(Arc::new(Memory::new()), &[], Servers::default(), None)
    }
}

impl Toolbox {
    pub fn new(
        memory: Arc<Memory>,
        extra: &[Arc<dyn Tool>],
        servers: Servers,
        allowed: Option<Vec<String>>,
    ) -> Toolbox {
        let Servers { started: servers, withheld, lock } = servers;
        let local = local(&memory, extra).map(|mut r| {
            if let Some(allow) = &allowed {
                r.retain(allow);
            }
            r
        });
        Toolbox {
            local,
            full: OnceLock::new(),
            memory,
            extra: extra.to_vec(),
            servers,
            withheld,
            lock,
            allowed,
        }
    }

    /// The servers that did not start because the environment did not confirm them.
    pub fn withheld(&self) -> &[Withheld] {
        &self.withheld
    }

    /// `config_unconfirmed` naming the withheld servers, for a tool that is nowhere else
    /// (`why` names it); `None` when no server was withheld.
    fn withheld_error(&self, why: &str) -> Option<Error> {
        let first = self.withheld.first()?;
        let names: Vec<String> = self.withheld.iter().map(|w| format!("`{}`", w.name)).collect();
        Some(Error::ConfigUnconfirmed {
            message: format!(
                "{why}, and tool server {} of pactum.toml did not start: {}",
                names.join(", "),
                first.message()
            ),
        })
    }

    /// The run's memory.
    pub fn memory(&self) -> &Arc<Memory> {
        &self.memory
    }

    /// Every tool of the run, starting the configured servers if they are not yet.
    pub fn registry(&self) -> Result<&ToolRegistry> {
        if self.servers.is_empty() && self.allowed.is_none() {
            return self.local.as_ref().map_err(again);
        }
        self.full
            .get_or_init(|| {
                let mut r = local(&self.memory, &self.extra)?;
                let listings = start_all(&self.servers)?;
                self.check_lock(&listings)?;
                add_listed(&mut r, listings)?;
                match &self.allowed {
                    Some(allow) => r.restrict(allow).map_err(|e| match &e {
                        Error::ToolNotFound { tool, .. } => self
                            .withheld_error(&format!("the work order allows tool `{tool}`, which no built-in or started server offers"))
                            .unwrap_or(e),
                        _ => e,
                    }),
                    None => Ok(r),
                }
            })
            .as_ref()
            .map_err(again)
    }

    /// The registry for a prompt whose sections name `wanted`: without starting any server
    /// when built-ins and library tools provide them all.
    pub fn registry_for<'n>(
        &self,
        mut wanted: impl Iterator<Item = &'n str>,
    ) -> Result<&ToolRegistry> {
        let local = self.local.as_ref().map_err(again)?;
        let local_names = |name: &str| local.contains(name) || self.extra_or_builtin(name);
        let missing = wanted.find(|name| !local_names(name));
        let Some(missing) = missing else { return Ok(local) };
        if self.servers.is_empty() {
            if let Some(e) = self.withheld_error(&format!(
                "the prompt offers tool `{missing}`, which no built-in offers"
            )) {
                return Err(e);
            }
            return Ok(local);
        }
        self.registry()
    }

    /// What the started servers list is what the committed lock says (SPEC §24): what
    /// `validate` checked is what runs.
    fn check_lock(&self, listings: &[Listing]) -> Result<()> {
        let lock = match &self.lock {
            Ok(Some(lock)) => lock,
            Ok(None) => return Ok(()),
            Err(problem) => return Err(Error::ToolsLockStale { message: problem.clone() }),
        };
        for (server, tools) in listings {
            if let Some(message) = lock.differs(server.name(), tools) {
                return Err(Error::ToolsLockStale { message });
            }
        }
        Ok(())
    }

    fn extra_or_builtin(&self, name: &str) -> bool {
        // A name the allow-list removed from `local` is still not a server's.
        crate::executor::tools::BUILTIN_NAMES.contains(&name)
            || self.extra.iter().any(|t| t.name() == name)
    }
}

/// Built-ins over `memory` and the caller's tools (a taken name is `tool_name_taken`).
fn local(memory: &Arc<Memory>, extra: &[Arc<dyn Tool>]) -> Result<ToolRegistry> {
    let mut r = ToolRegistry::builtin(memory.clone());
    for tool in extra {
        r.register_new(tool.clone(), "the library caller's tools")?;
    }
    Ok(r)
}

/// A started server and the tools it lists.
pub type Listing = (Arc<Server>, Vec<ListedTool>);

/// Starts every server and lists its tools (each on a thread of its own: a slow server
/// does not delay the others' start).
pub fn start_all(specs: &[ServerSpec]) -> Result<Vec<Listing>> {
    let started: Vec<Result<(Server, Vec<ListedTool>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = specs
            .iter()
            .map(|spec| {
                scope.spawn(move || {
                    let server = Server::start(spec)?;
                    let tools = server.list_tools()?;
                    Ok((server, tools))
                })
            })
            .collect();
        handles
            .into_iter()
            .zip(specs)
            .map(|(h, spec)| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::ToolServerFailed {
                        server: spec.name.clone(),
                        message: "starting it panicked".into(),
                    })
                })
            })
            .collect()
    });
    // A failure drops the servers already started: they stop here.
    started.into_iter().map(|s| s.map(|(server, tools)| (Arc::new(server), tools))).collect()
}

/// Adds each server's tools (its `allow` list only, every name of which it must offer).
fn add_listed(r: &mut ToolRegistry, listings: Vec<Listing>) -> Result<()> {
    for (server, tools) in listings {
        let spec = server.spec();
        if let Some(allow) = &spec.allow {
            for name in allow {
                if !tools.iter().any(|t| &t.name == name) {
                    return Err(Error::ToolUnknown {
                        tool: name.clone(),
                        named_by: format!("the `allow` list of tool server `{}`", spec.name),
                        known: tools.iter().map(|t| t.name.clone()).collect(),
                    });
                }
            }
        }
        for listed in tools {
            if spec.allow.as_ref().is_some_and(|a| !a.contains(&listed.name)) {
                continue;
            }
            let tool = McpTool { server: server.clone(), listed };
            r.register_new(Arc::new(tool), &format!("tool server `{}`", spec.name))?;
        }
    }
    Ok(())
}

/// A tool of an MCP server.
struct McpTool {
    server: Arc<Server>,
    listed: ListedTool,
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.listed.name
    }
    fn description(&self) -> &str {
        &self.listed.description
    }
    fn input_schema(&self) -> serde_json::Value {
        self.listed.input_schema.clone()
    }
    fn output_schema(&self) -> serde_json::Value {
        self.listed.output_schema.clone().unwrap_or(serde_json::Value::Bool(true))
    }
    fn invoke(
        &self,
        arguments: &serde_json::Value,
    ) -> std::result::Result<serde_json::Value, String> {
        self.server.call_tool(&self.listed.name, arguments)
    }
}

/// The same failure again, for a registry that could not be built and is asked for twice.
fn again(e: &Error) -> Error {
    match e {
        Error::ToolServerFailed { server, message } => {
            Error::ToolServerFailed { server: server.clone(), message: message.clone() }
        }
        Error::ToolNameTaken { tool, first, second } => Error::ToolNameTaken {
            tool: tool.clone(),
            first: first.clone(),
            second: second.clone(),
        },
        Error::ToolUnknown { tool, named_by, known } => Error::ToolUnknown {
            tool: tool.clone(),
            named_by: named_by.clone(),
            known: known.clone(),
        },
        Error::ToolNotFound { tool, available } => {
            Error::ToolNotFound { tool: tool.clone(), available: available.clone() }
        }
        Error::ToolFailed { tool, message } => {
            Error::ToolFailed { tool: tool.clone(), message: message.clone() }
        }
        Error::ToolsLockStale { message } => Error::ToolsLockStale { message: message.clone() },
        Error::ConfigUnconfirmed { message } => {
            Error::ConfigUnconfirmed { message: message.clone() }
        }
        other => Error::ToolFailed { tool: "(setup)".into(), message: other.to_string() },
    }
}
