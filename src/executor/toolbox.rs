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
    // Every collision that is left is reported, not only the first.
    let mut taken: Vec<Error> = Vec::new();
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
        let unknown = spec
            .rename
            .iter()
            .flat_map(|r| r.keys())
            .find(|o| !tools.iter().any(|t| &t.name == *o));
        if let Some(old) = unknown {
            return Err(Error::ToolUnknown {
                tool: old.clone(),
                named_by: format!("the `rename` table of tool server `{}`", spec.name),
                known: tools.iter().map(|t| t.name.clone()).collect(),
            });
        }
        for listed in tools {
            if spec.allow.as_ref().is_some_and(|a| !a.contains(&listed.name)) {
                continue;
            }
            let name = spec.run_name(&listed.name);
            if !crate::mcp::is_tool_name(&name) {
                return Err(Error::ToolServerFailed {
                    server: spec.name.clone(),
                    message: format!(
                        "its tool `{}` would be called `{}` (its `prefix` or `rename` in pactum.toml), which is not 1 to 128 of the characters A-Z, a-z, 0-9, `_`, `-` and `.`",
                        listed.name,
                        crate::mcp::short(&name)
                    ),
                });
            }
            let tool = McpTool { server: server.clone(), listed, name };
            if let Err(e) = r.register_new(Arc::new(tool), &format!("tool server `{}`", spec.name))
            {
                taken.push(e);
            }
        }
    }
    combined(taken).map_or(Ok(()), Err)
}

/// The collisions of a run as one `tool_name_taken` (the first, the others in `also`).
pub fn combined(taken: Vec<Error>) -> Option<Error> {
    let mut taken = taken.into_iter();
    let mut first = taken.next()?;
    for e in taken {
        if let (
            Error::ToolNameTaken { also, .. },
            Error::ToolNameTaken { tool, first, second, .. },
        ) = (&mut first, &e)
        {
            also.push(format!("`{tool}` (by {first} and by {second})"));
        } else {
            return Some(e);
        }
    }
    Some(first)
}

/// A tool of an MCP server.
struct McpTool {
    server: Arc<Server>,
    listed: ListedTool,
    /// The name the run knows it by (its server's `prefix` or `rename` applied).
    name: String,
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
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
        Error::ToolNameTaken { tool, first, second, also } => Error::ToolNameTaken {
            tool: tool.clone(),
            first: first.clone(),
            second: second.clone(),
            also: also.clone(),
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

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::authority::Permit;
    use crate::error::Code;
    use crate::executor::tools::FnTool;
    use crate::mcp::Endpoint;

    fn servers(started: Vec<ServerSpec>) -> Servers {
        Servers { started, ..Servers::default() }
    }

    fn names(r: Result<&ToolRegistry>) -> Vec<String> {
        r.unwrap().names()
    }

    fn allow(names: &[&str]) -> Option<Vec<String>> {
        Some(names.iter().map(|n| n.to_string()).collect())
    }

    fn library_tool(name: &str) -> Arc<dyn Tool> {
        Arc::new(FnTool::new(name, "A tool.", json!({"type": "object"}), json!(true), |_| {
            Ok(json!({}))
        }))
    }

    /// The test MCP server (tests/fixtures/mcp/server.py, Python's standard library only;
    /// it lists `lookup_order`, and `extra` more), run in `dir`, under `allow`.
    fn orders(dir: &Path, extra: &[&str], allow: Option<Vec<String>>) -> ServerSpec {
        std::fs::create_dir_all(dir.join("tools")).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/server.py");
        let mut command = vec!["python3".to_string(), script.display().to_string()];
        command.extend(extra.iter().map(|a| a.to_string()));
        ServerSpec {
            name: "orders".into(),
            endpoint: Endpoint::Stdio {
                command: Permit::application(command),
                dir: dir.to_path_buf(),
                env: vec![],
            },
            allow,
            timeout: Duration::from_secs(30),
            prefix: None,
            rename: None,
        }
    }

    /// A server whose program does not exist: starting it fails.
    fn missing() -> ServerSpec {
        ServerSpec {
            name: "gone".into(),
            endpoint: Endpoint::Stdio {
                command: Permit::application(vec!["/nonexistent/pactum-test-server".into()]),
                dir: std::env::temp_dir(),
                env: vec![],
            },
            allow: None,
            timeout: Duration::from_secs(30),
            prefix: None,
            rename: None,
        }
    }

    #[test]
    fn the_work_orders_allow_list_keeps_only_the_tools_it_names() {
        let memory = Arc::new(Memory::new());
        let everything =
            Toolbox::new(memory.clone(), &[library_tool("words")], Servers::default(), None);
        assert_eq!(
            names(everything.registry()),
            ["calculator", "echo", "memory_read", "memory_search", "memory_write", "words"]
        );
        let some = Toolbox::new(
            memory,
            &[library_tool("words")],
            Servers::default(),
            allow(&["words", "calculator"]),
        );
        assert_eq!(names(some.registry()), ["calculator", "words"]);
        assert_eq!(names(some.registry_for(["calculator"].into_iter())), ["calculator", "words"]);
    }

    #[test]
    fn an_allowed_name_nobody_offers_fails_the_run_every_time_it_is_asked() {
        let toolbox = Toolbox::new(
            Arc::new(Memory::new()),
            &[],
            Servers::default(),
            allow(&["calculator", "no_such"]),
        );
        for _ in 0..2 {
            let e = toolbox.registry().unwrap_err();
            assert_eq!(e.code(), Code::ToolNotFound, "{e}");
            assert!(e.to_string().contains("no_such"), "{e}");
        }
    }

    #[test]
    fn a_library_tool_cannot_take_a_builtins_name_in_any_case() {
        let toolbox = Toolbox::new(
            Arc::new(Memory::new()),
            &[library_tool("Calculator")],
            Servers::default(),
            None,
        );
        for _ in 0..2 {
            let e = toolbox.registry().unwrap_err();
            let Error::ToolNameTaken { tool, first, second, .. } = &e else { panic!("{e}") };
            assert_eq!((tool.as_str(), first.as_str()), ("Calculator", "the built-in tools"));
            assert_eq!(second, "the library caller's tools");
        }
    }

    #[test]
    fn a_server_starts_only_when_a_wanted_tool_is_no_local_one() {
        let toolbox = Toolbox::new(
            Arc::new(Memory::new()),
            &[library_tool("words")],
            servers(vec![missing()]),
            None,
        );
        // Built-ins and library tools: the server is never started (it could not be).
        let local = names(toolbox.registry_for(["calculator", "words"].into_iter()));
        assert!(
            local.contains(&"words".to_string()) && !local.contains(&"lookup_order".to_string())
        );
        // A name only a server can offer starts them, and the one that cannot start fails
        // the run (again when asked again).
        for _ in 0..2 {
            let e = toolbox.registry_for(["calculator", "lookup_order"].into_iter()).unwrap_err();
            assert_eq!(e.code(), Code::ToolServerFailed, "{e}");
            assert!(e.to_string().contains("`gone`"), "{e}");
        }
    }

    #[test]
    fn a_servers_tools_come_under_its_own_allow_list_and_the_work_orders() {
        let dir = tempfile::tempdir().unwrap();
        let toolbox = |server: ServerSpec, allowed: Option<Vec<String>>| {
            Toolbox::new(Arc::new(Memory::new()), &[], servers(vec![server]), allowed)
        };
        let all = toolbox(orders(dir.path(), &["--extra", "refund"], None), None);
        let listed = names(all.registry());
        assert!(
            listed.contains(&"lookup_order".into()) && listed.contains(&"refund".into()),
            "{listed:?}"
        );
        // The server's `allow` list: only the tools it names, every one of which it must offer.
        let allowed =
            toolbox(orders(dir.path(), &["--extra", "refund"], allow(&["lookup_order"])), None);
        let listed = names(allowed.registry());
        assert!(
            listed.contains(&"lookup_order".into()) && !listed.contains(&"refund".into()),
            "{listed:?}"
        );
        let unknown = toolbox(orders(dir.path(), &[], allow(&["lookup_order", "refund"])), None);
        let e = unknown.registry().unwrap_err();
        let Error::ToolUnknown { tool, named_by, known } = &e else { panic!("{e}") };
        assert_eq!(
            (tool.as_str(), named_by.as_str()),
            ("refund", "the `allow` list of tool server `orders`")
        );
        assert_eq!(known, &["lookup_order"]);
        // The work order's allow-list applies to the servers' tools too: nothing it does not
        // name reaches the run.
        let restricted = toolbox(orders(dir.path(), &[], None), allow(&["calculator"]));
        assert_eq!(names(restricted.registry()), ["calculator"]);
        // A server's tool with a built-in's name (in another case) is refused.
        let clash = toolbox(orders(dir.path(), &["--extra", "Memory_Write"], None), None);
        let e = clash.registry().unwrap_err();
        let Error::ToolNameTaken { tool, first, second, .. } = &e else { panic!("{e}") };
        assert_eq!((tool.as_str(), first.as_str()), ("Memory_Write", "the built-in tools"));
        assert_eq!(second, "tool server `orders`");
    }
}
