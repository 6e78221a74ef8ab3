//! A synchronous client for tools from Model Context Protocol servers (SPEC §23).
//!
//! Only the part of MCP pactum needs: JSON-RPC 2.0 messages; the `initialize` handshake
//! (protocol revision [`PROTOCOL_VERSION`], [`ACCEPTED_VERSIONS`] accepted back) followed
//! by `notifications/initialized`; `tools/list` with `nextCursor` pagination; `tools/call`
//! (a result's `structuredContent`, else its `content` text items: the JSON object they
//! hold, or `{"text": ...}`; `isError`). Two
//! transports: [`stdio`] (a child process, one JSON message per line) and [`http`]
//! (streamable HTTP: a `POST` answered with JSON or an SSE stream).
//!
//! Written in pactum rather than taken from `rmcp`: pactum is synchronous (ureq, threads),
//! and the official SDK would bring an async runtime and a second HTTP stack.
//!
//! A server is untrusted (SPEC §18): every message is capped at [`MAX_MESSAGE_BYTES`],
//! every request at the server's timeout, a tool's output at [`MAX_OUTPUT_BYTES`], a
//! listing at [`MAX_TOOLS`] tools; a stdio server gets only the environment variables
//! [`crate::config::TOOL_SERVER_ENV`] names, and is killed and reaped when its [`Server`]
//! is dropped (the run ends), whatever happened before.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::authority::{Permit, Trust, Unconfirmed};
use crate::config::ToolServerSettings;
use crate::error::{Error, Result};

pub mod http;
pub mod lock;
pub mod stdio;

/// The protocol revision pactum asks for.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// The revisions pactum accepts in a server's `initialize` answer: `initialize`,
/// `tools/list` and `tools/call` have the same shape in all three (servers on the npm SDK
/// 1.0.x answer `2024-11-05`).
pub const ACCEPTED_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];
/// The largest message read from a server, in bytes (a longer line or body is a failure).
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// The largest tool output (as JSON) handed to the run, in bytes.
pub const MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// The most tools one server may list.
pub const MAX_TOOLS: usize = 256;
/// The most pages one listing may take.
const MAX_PAGES: usize = 64;
/// The most bytes of tool definitions (names, descriptions, schemas, as JSON) one server's
/// listing may hold: they go into prompts, so a listing of 256 tools of 4 MiB each is
/// refused, not carried.
pub const MAX_LISTING_BYTES: usize = 1024 * 1024;
/// How long one request may take unless `timeout_s` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the cancellation of a timed-out request may take to send.
const CANCEL_WAIT: Duration = Duration::from_secs(1);
/// The failure of a request whose deadline passed.
pub const NO_ANSWER_IN_TIME: &str =
    "no answer in time (raise `timeout_s` in pactum.toml if the tool is slow)";

/// What is left of a request's time, or its failure once nothing is: every wait of a
/// transport (a line, a write, an HTTP exchange, the next event) asks this first, so no
/// stream of messages, however steady, keeps a request past its deadline.
pub fn time_left(deadline: Instant) -> std::result::Result<Duration, String> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() { Err(NO_ANSWER_IN_TIME.into()) } else { Ok(left) }
}

/// How to reach a server. Both carry a [`Permit`]: a server of `pactum.toml` is started or
/// contacted only once the environment confirmed it ([`ServerSpec::from_config`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Endpoint {
    /// A program and its arguments, run in `dir` with exactly `env`.
    Stdio { command: Permit<Vec<String>>, dir: PathBuf, env: Vec<(String, String)> },
    /// A streamable HTTP endpoint.
    Http { url: Permit<String> },
}

/// One configured server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    /// Its name in `pactum.toml` (`[tools.NAME]`).
    pub name: String,
    pub endpoint: Endpoint,
    /// The tools of its the project uses (`None`: all it lists).
    pub allow: Option<Vec<String>>,
    /// How long one request may take.
    pub timeout: Duration,
    /// Put before its tools' names in a run (`prefix` in pactum.toml).
    pub prefix: Option<String>,
    /// Run names for some of its tools (`rename` in pactum.toml), instead of `prefix`.
    pub rename: Option<std::collections::BTreeMap<String, String>>,
}

/// A server of `pactum.toml` that does not start: the environment did not confirm it.
#[derive(Clone, Debug, PartialEq)]
pub struct Withheld {
    /// Its name (`[tools.NAME]`).
    pub name: String,
    pub why: Unconfirmed,
    /// What it would have done: "starts the program `python3`", "contacts http://…".
    pub what: String,
}

impl Withheld {
    pub fn message(&self) -> String {
        self.why.message(&self.what)
    }
}

/// The servers of a config, in name order.
#[derive(Clone, Debug, PartialEq)]
pub struct Servers {
    /// Those that may start: stdio ones run in the project root with the given environment.
    pub started: Vec<ServerSpec>,
    /// Those the environment did not confirm (SPEC §24): never started.
    pub withheld: Vec<Withheld>,
    /// The committed tool lock, which what a started server lists must match
    /// (`tools_lock_stale`); `Err` when the lock does not read.
    pub lock: std::result::Result<Option<lock::Lock>, String>,
}

impl Default for Servers {
    fn default() -> Self {
        Servers { started: Vec::new(), withheld: Vec::new(), lock: Ok(None) }
    }
}

impl Servers {
    /// These servers, held to the tool lock of `root` (when there is one).
    pub fn with_lock(mut self, root: &std::path::Path) -> Servers {
        if !self.started.is_empty() {
            self.lock = lock::Lock::load(root).map_err(|e| e.to_string());
        }
        self
    }
}

impl ServerSpec {
    /// The servers of a config, in name order; stdio ones run in `root` with `env`. A
    /// server's `command` or `url` comes from a repository file, so it acts only when
    /// `trust` confirms committed settings ([`crate::authority`]); the others are
    /// [`Servers::withheld`].
    pub fn from_config(
        servers: &std::collections::BTreeMap<String, ToolServerSettings>,
        root: &std::path::Path,
        env: &[(String, String)],
        trust: Trust,
    ) -> Servers {
        let mut out = Servers::default();
        for (name, s) in servers {
            let file = crate::config::FILE_NAME;
            let endpoint = match (&s.command, &s.url) {
                (Some(command), None) if !command.is_empty() => {
                    match trust.confirm(command.clone(), file, &format!("tools.{name}.command")) {
                        Ok(command) => {
                            Endpoint::Stdio { command, dir: root.to_path_buf(), env: env.to_vec() }
                        }
                        Err(why) => {
                            let what = format!("starts the program `{}`", short(&command[0]));
                            out.withheld.push(Withheld { name: name.clone(), why, what });
                            continue;
                        }
                    }
                }
                (None, Some(url)) => {
                    match trust.confirm(url.clone(), file, &format!("tools.{name}.url")) {
                        Ok(url) => Endpoint::Http { url },
                        Err(why) => {
                            let what = format!("contacts {}", crate::redact::shown_url(url));
                            out.withheld.push(Withheld { name: name.clone(), why, what });
                            continue;
                        }
                    }
                }
                // Refused by the config check; never started.
                _ => continue,
            };
            let timeout = s
                .timeout_s
                .filter(|t| t.is_finite() && *t > 0.0)
                .and_then(|t| Duration::try_from_secs_f64(t).ok())
                .unwrap_or(DEFAULT_TIMEOUT);
            out.started.push(ServerSpec {
                name: name.clone(),
                endpoint,
                allow: s.allow.clone(),
                timeout,
                prefix: s.prefix.clone(),
                rename: s.rename.clone(),
            });
        }
        out
    }

    /// The name a run knows its tool `listed` by.
    pub fn run_name(&self, listed: &str) -> String {
        crate::config::run_name(self.prefix.as_deref(), self.rename.as_ref(), listed)
    }

    fn failed(&self, message: impl Into<String>) -> Error {
        Error::ToolServerFailed { server: self.name.clone(), message: message.into() }
    }
}

/// A tool as a server lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct ListedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// `outputSchema`, when the server declares one.
    pub output_schema: Option<Value>,
}

/// One way of exchanging JSON-RPC messages with a server.
pub trait Transport: Send {
    /// Sends a request and returns the response with its `id`, waiting at most until
    /// `deadline`. Messages that are not that response are skipped (requests from the
    /// server are answered through `reply`).
    fn request(
        &mut self,
        message: &Value,
        id: u64,
        deadline: Instant,
    ) -> std::result::Result<Value, String>;
    /// Sends a notification (no answer expected).
    fn notify(&mut self, message: &Value, deadline: Instant) -> std::result::Result<(), String>;
    /// What the server said on its error stream lately, for a failure's message.
    fn diagnostics(&self) -> String {
        String::new()
    }
    /// Told the revision `initialize` settled on (HTTP sends it on every later request).
    fn set_protocol_version(&mut self, _version: &str) {}
}

/// The answer pactum gives a request from the server: `ping` is answered, anything else
/// is "method not found" (pactum offers no sampling, roots or elicitation).
pub fn reply_to_server_request(message: &Value) -> Option<Value> {
    let id = message.get("id")?;
    let method = message.get("method")?.as_str()?;
    Some(if method == "ping" {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})
    })
}

/// A message read while a transport awaits the response to one request.
pub enum Incoming {
    /// The response awaited.
    Response(Value),
    /// A request of the server's own, with the reply it is owed.
    Owed(Value),
    /// A notification or a stray response: skipped.
    Skip,
}

/// Sorts one message (`bytes`, one line or one event's data) read while awaiting the
/// response to request `id`; `Err` names `what` carried bytes that are not JSON.
pub fn incoming(bytes: &[u8], id: u64, what: &str) -> std::result::Result<Incoming, String> {
    let Ok(message) = serde_json::from_slice::<Value>(bytes) else {
        return Err(format!("{what} is not JSON: {}", short(&String::from_utf8_lossy(bytes))));
    };
    if is_response_to(&message, id) {
        return Ok(Incoming::Response(message));
    }
    Ok(reply_to_server_request(&message).map_or(Incoming::Skip, Incoming::Owed))
}

/// Whether a message is the response to request `id`.
pub fn is_response_to(message: &Value, id: u64) -> bool {
    message.get("method").is_none()
        && message.get("id").and_then(Value::as_u64) == Some(id)
        && (message.get("result").is_some() || message.get("error").is_some())
}

struct Connection {
    transport: Box<dyn Transport>,
    next_id: u64,
}

/// A started, initialized server. Dropping it stops the server.
pub struct Server {
    spec: ServerSpec,
    connection: Mutex<Connection>,
    /// The server's own name and version, from `initialize`.
    pub info: String,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("name", &self.spec.name).finish_non_exhaustive()
    }
}

impl Server {
    /// Starts (or connects to) the server and runs the `initialize` handshake.
    pub fn start(spec: &ServerSpec) -> Result<Server> {
        let deadline = Instant::now() + spec.timeout;
        let transport: Box<dyn Transport> = match &spec.endpoint {
            Endpoint::Stdio { command, dir, env } => {
                Box::new(stdio::Stdio::spawn(command, dir, env).map_err(|m| spec.failed(m))?)
            }
            Endpoint::Http { url } => Box::new(http::Http::new(url).map_err(|m| spec.failed(m))?),
        };
        let mut connection = Connection { transport, next_id: 1 };
        let init = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "pactum", "version": env!("CARGO_PKG_VERSION")},
        });
        let result = request(&mut connection, "initialize", init, deadline)
            .map_err(|m| spec.failed(format!("initialize: {m}")))?;
        let version = result.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
        if !ACCEPTED_VERSIONS.contains(&version) {
            return Err(spec.failed(format!(
                "it speaks MCP revision `{}`; pactum speaks {}",
                crate::terminal::escape_line(version),
                ACCEPTED_VERSIONS.join(", ")
            )));
        }
        connection.transport.set_protocol_version(version);
        let info = result
            .get("serverInfo")
            .map(|i| {
                format!(
                    "{} {}",
                    i.get("name").and_then(Value::as_str).unwrap_or("?"),
                    i.get("version").and_then(Value::as_str).unwrap_or("")
                )
            })
            .unwrap_or_default();
        connection
            .transport
            .notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), deadline)
            .map_err(|m| spec.failed(format!("notifications/initialized: {m}")))?;
        Ok(Server { spec: spec.clone(), connection: Mutex::new(connection), info })
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every tool the server lists (all pages), at most [`MAX_TOOLS`].
    pub fn list_tools(&self) -> Result<Vec<ListedTool>> {
        let deadline = Instant::now() + self.spec.timeout;
        let mut connection = self.lock();
        let mut tools = Vec::new();
        let mut listed_bytes = 0usize;
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let result = request(&mut connection, "tools/list", params, deadline)
                .map_err(|m| self.spec.failed(format!("tools/list: {m}")))?;
            let page = result
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| self.spec.failed("tools/list: the answer has no `tools` list"))?;
            for t in page {
                if tools.len() == MAX_TOOLS {
                    return Err(self.spec.failed(format!(
                        "it lists more than {MAX_TOOLS} tools; pactum takes at most {MAX_TOOLS} from one server"
                    )));
                }
                listed_bytes += serde_json::to_vec(t).map_or(usize::MAX, |v| v.len());
                if listed_bytes > MAX_LISTING_BYTES {
                    return Err(self.spec.failed(format!(
                        "its tool definitions take more than {MAX_LISTING_BYTES} bytes; pactum takes at most {MAX_LISTING_BYTES} bytes of them from one server"
                    )));
                }
                tools.push(listed(t).map_err(|m| self.spec.failed(format!("tools/list: {m}")))?);
            }
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => cursor = Some(next.to_string()),
                _ => return Ok(tools),
            }
        }
        Err(self.spec.failed(format!("tools/list went on for more than {MAX_PAGES} pages")))
    }

    /// Calls a tool. `Err` is the message of a failed call: the server's own error
    /// (`isError`), a JSON-RPC error, a timeout, an output over [`MAX_OUTPUT_BYTES`].
    pub fn call_tool(&self, tool: &str, arguments: &Value) -> std::result::Result<Value, String> {
        let deadline = Instant::now() + self.spec.timeout;
        let mut connection = self.lock();
        let result = request(
            &mut connection,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            deadline,
        )
        .map_err(|m| format!("server `{}`: {m}", self.spec.name))?;
        let output = tool_output(&result)?;
        let size = serde_json::to_vec(&output).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > MAX_OUTPUT_BYTES {
            return Err(format!(
                "its output is {size} bytes; pactum takes at most {MAX_OUTPUT_BYTES} bytes from a tool"
            ));
        }
        Ok(output)
    }
}

/// One request on a connection: its result, or what went wrong.
fn request(
    connection: &mut Connection,
    method: &str,
    params: Value,
    deadline: Instant,
) -> std::result::Result<Value, String> {
    let id = connection.next_id;
    connection.next_id += 1;
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let answer = match connection.transport.request(&message, id, deadline) {
        Ok(answer) => answer,
        // A request that ran out of time is cancelled (MCP: `notifications/cancelled`; never
        // `initialize`), and its failure is the timeout alone: what the server said on its
        // error stream (a start-up banner) does not explain a slow answer.
        Err(m) if m == NO_ANSWER_IN_TIME => {
            if method != "initialize" {
                let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": id, "reason": "pactum: no answer in time"}});
                // Best effort, bounded: a server that does not read gets no more time.
                let _ = connection.transport.notify(&cancel, Instant::now() + CANCEL_WAIT);
            }
            return Err(m);
        }
        Err(m) => {
            let said = connection.transport.diagnostics();
            return Err(if said.is_empty() { m } else { format!("{m}; it said: {said}") });
        }
    };
    if let Some(error) = answer.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let text = error.get("message").and_then(Value::as_str).unwrap_or("no message");
        return Err(format!("error {code}: {}", short(text)));
    }
    Ok(answer.get("result").cloned().unwrap_or(Value::Null))
}

/// A listed tool, checked for the fields pactum uses.
fn listed(t: &Value) -> std::result::Result<ListedTool, String> {
    let name = t.get("name").and_then(Value::as_str).ok_or("a tool has no name")?;
    if !is_tool_name(name) {
        return Err(format!(
            "tool name `{}` is not 1 to 128 of the characters A-Z, a-z, 0-9, `_`, `-` and `.`",
            short(name)
        ));
    }
    let input_schema = t
        .get("inputSchema")
        .filter(|s| s.is_object())
        .cloned()
        .ok_or_else(|| format!("tool `{}` has no inputSchema object", short(name)))?;
    Ok(ListedTool {
        name: name.to_string(),
        description: t.get("description").and_then(Value::as_str).unwrap_or("").to_string(),
        input_schema,
        output_schema: t.get("outputSchema").filter(|s| s.is_object()).cloned(),
    })
}

/// Whether a server's tool name is one pactum takes: 1 to 128 ASCII letters, digits, `_`,
/// `-` and `.` (MCP's tool name rule), and not only dots: no control character, escape
/// sequence, space or look-alike letter can reach a prompt, a terminal or a provider.
pub fn is_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        && !name.bytes().all(|b| b == b'.')
}

/// What a `tools/call` result gives the run: its `structuredContent` when present, else its
/// text items joined: the JSON object they hold, or `{"text": ...}`; `isError` makes it a
/// failure.
pub fn tool_output(result: &Value) -> std::result::Result<Value, String> {
    let text = result
        .get("content")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| match item.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        item.get("text").and_then(Value::as_str).unwrap_or("").to_string()
                    }
                    Some(other) => format!("[{} content omitted]", short(other)),
                    None => String::new(),
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(if text.is_empty() {
            "the tool reported an error".into()
        } else {
            short(&text)
        });
    }
    match result.get("structuredContent") {
        Some(v) if !v.is_null() => Ok(v.clone()),
        // Many servers return a JSON object as their one text item (the SDKs do for a dict).
        _ => match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Ok(json!({"text": text})),
        },
    }
}

/// A server-given text cut to a readable length, control characters escaped.
pub fn short(text: &str) -> String {
    const MAX: usize = 500;
    let cut: String = text.chars().take(MAX).collect();
    let more = if text.chars().nth(MAX).is_some() { "…" } else { "" };
    format!("{}{more}", crate::terminal::escape_line(&cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_become_values_or_failures() {
        let r = json!({"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "x"}]});
        assert_eq!(tool_output(&r).unwrap(), json!({"text": "a\n[image content omitted]"}));
        let r =
            json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"total": 3}});
        assert_eq!(tool_output(&r).unwrap(), json!({"total": 3}));
        let r = json!({"content": [{"type": "text", "text": "{\n  \"total\": 4\n}"}]});
        assert_eq!(tool_output(&r).unwrap(), json!({"total": 4}));
        let r = json!({"content": [{"type": "text", "text": "[1]"}]});
        assert_eq!(tool_output(&r).unwrap(), json!({"text": "[1]"}));
        let r = json!({"content": [{"type": "text", "text": "no such order"}], "isError": true});
        assert_eq!(tool_output(&r).unwrap_err(), "no such order");
    }

    #[test]
    fn server_requests_are_answered_and_responses_matched() {
        let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
        assert_eq!(reply_to_server_request(&ping).unwrap()["result"], json!({}));
        let other = json!({"jsonrpc": "2.0", "id": "x", "method": "roots/list"});
        assert_eq!(reply_to_server_request(&other).unwrap()["error"]["code"], -32601);
        assert!(
            reply_to_server_request(&json!({"jsonrpc": "2.0", "method": "notifications/x"}))
                .is_none()
        );
        assert!(is_response_to(&json!({"jsonrpc": "2.0", "id": 3, "result": {}}), 3));
        assert!(!is_response_to(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}), 3));
        assert!(!is_response_to(&json!({"jsonrpc": "2.0", "id": 4, "result": {}}), 3));
    }

    #[test]
    fn listed_tools_need_a_name_and_an_input_schema() {
        let t = listed(&json!({"name": "lookup", "inputSchema": {"type": "object"}})).unwrap();
        assert_eq!(t.name, "lookup");
        let refused = |t: Value| listed(&t).map(|t| t.name).unwrap_err();
        assert_eq!(refused(json!({"name": "x"})), "tool `x` has no inputSchema object");
        assert_eq!(
            refused(json!({"name": "x", "inputSchema": true})),
            "tool `x` has no inputSchema object"
        );
        assert_eq!(refused(json!({"inputSchema": {}})), "a tool has no name");
        assert_eq!(refused(json!({"name": 7, "inputSchema": {}})), "a tool has no name");
        for bad in
            ["", "..", "a b", "red\u{1b}[31m", "memory_write\u{200b}", "tab\t", &"x".repeat(129)]
        {
            let why = refused(json!({"name": bad, "inputSchema": {}}));
            assert!(
                why.ends_with("is not 1 to 128 of the characters A-Z, a-z, 0-9, `_`, `-` and `.`"),
                "{bad:?}: {why}"
            );
            // The name is shown escaped: no escape sequence of it reaches a terminal.
            assert!(!why.contains('\u{1b}'), "{bad:?}: {why}");
        }
        for good in ["lookup_order", "a.b-c", &"x".repeat(128)] {
            assert!(listed(&json!({"name": good, "inputSchema": {}})).is_ok(), "{good:?}");
        }
    }
}
