//! Progressive disclosure (SPEC §15): a step of the exchange, between rendering and the
//! output check.
//!
//! A pack whose tree has summarized sections renders their summaries and offers the model
//! tools to see the rest: `open_sections` (sections that bring tools: the prompt is
//! rendered again with them in full, and their tools are offered too) and `read_file` (the
//! other summarized sections, whose full text is a markdown file under the exchange's
//! context folder, `context/KEY.md`). [`Disclosure`] holds the state of one exchange: the
//! sections opened so far, the current rendering, and the number of tool calls answered,
//! bounded by `max_disclosures` (`disclosure_limit_exceeded` past it; the calls past it are
//! refused, and still listed in the exchange's ledger record). A call naming an
//! unknown key, a file outside the context folder or a tool not offered is answered with a
//! tool error the model sees; it never ends the exchange. Every tool call also counts
//! toward the bound, so the loop is finite whatever the model does.
//!
//! Providers only carry the tools and the calls in their wire format; the loop itself is
//! here and in the caller ([`crate::executor::call`]).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::executor::tools::ToolRegistry;
use crate::gateway::{Message, ToolCall, ToolResult, ToolSpec};
use crate::render::{CompiledPack, OPEN_SECTIONS, READ_FILE, Rendered};

/// Disclosures (tool calls) one exchange may make when neither the contract's boundary nor
/// the work order's constraints say otherwise.
pub const DEFAULT_MAX_DISCLOSURES: u32 = 4;

/// The longest `reason` kept in a ledger record.
const MAX_REASON_CHARS: usize = 500;

/// The definition of `open_sections` offered to the model.
pub fn open_sections_spec() -> ToolSpec {
    ToolSpec {
        name: OPEN_SECTIONS.to_string(),
        description: "Show summarized sections of this prompt in full. Pass the dotted keys \
                      the prompt names and why you need them."
            .to_string(),
        input_schema: json!({
            "type": "object",
            "required": ["section_keys", "reason"],
            "additionalProperties": false,
            "properties": {
                "section_keys": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "reason": {"type": "string"}
            }
        }),
    }
}

/// The definition of `read_file` offered to the model.
pub fn read_file_spec() -> ToolSpec {
    ToolSpec {
        name: READ_FILE.to_string(),
        description: "Read the full content of a summarized section: the file the prompt \
                      names, such as /context/reference.md."
            .to_string(),
        input_schema: json!({
            "type": "object",
            "required": ["path"],
            "additionalProperties": false,
            "properties": {"path": {"type": "string"}}
        }),
    }
}

/// The definitions of the tools a rendering offers: the disclosure tools, then section
/// tools as `tools` describes them (a tool it does not know is left out).
pub fn specs(offered: &[String], tools: &ToolRegistry) -> Vec<ToolSpec> {
    let described = tools.describe();
    offered
        .iter()
        .filter_map(|name| match name.as_str() {
            OPEN_SECTIONS => Some(open_sections_spec()),
            READ_FILE => Some(read_file_spec()),
            other => described.as_array()?.iter().find(|t| t["name"] == other).map(|t| ToolSpec {
                name: other.to_string(),
                description: t["description"].as_str().unwrap_or_default().to_string(),
                input_schema: t["input_schema"].clone(),
            }),
        })
        .collect()
}

/// What one tool call did, for the ledger: answered, or refused past `max_disclosures`.
#[derive(Clone, Debug, PartialEq)]
pub struct Disclosed {
    pub call: ToolCall,
    /// Keys opened (open_sections) or the file read (read_file).
    pub opened: Vec<String>,
    pub reason: Option<String>,
    pub result: ToolResult,
    /// The call came past `max_disclosures`: it was not run, and the exchange ends.
    pub refused: bool,
    /// When the call was answered (RFC 3339, to the millisecond) and how long it took: the
    /// tool's span (SPEC §22).
    pub at: String,
    pub latency_ms: u64,
}

impl Disclosed {
    /// The record's JSON: tool, arguments, keys opened, reason, and whether it failed; a
    /// refused call also says why (`"refused": "disclosure_limit_exceeded"`).
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "id": self.call.id,
            "tool": self.call.name,
            "arguments": self.call.arguments,
            "opened": self.opened,
            "reason": self.reason,
            "is_error": self.result.is_error,
            "result": self.result.content,
            "at": self.at,
            "latency_ms": self.latency_ms,
        });
        if self.refused {
            v["refused"] = json!(crate::error::Code::DisclosureLimitExceeded.as_str());
        }
        v
    }
}

/// The tool calls of one reply as [`Disclosure::answer`] handled them.
#[derive(Debug)]
pub struct Answered {
    /// Every call of the reply, in its order: answered, or refused past the bound.
    pub calls: Vec<Disclosed>,
    /// Set when the exchange ends here — `disclosure_limit_exceeded` when a call came past
    /// `max_disclosures`, or the prompt failed to render with the sections opened — and
    /// its ledger record lists every call of the reply, the refused ones too.
    pub stop: Option<Error>,
}

/// The disclosure state of one exchange.
pub struct Disclosure<'a> {
    pack: &'a CompiledPack,
    variables: &'a Value,
    system_messages: bool,
    tools: &'a ToolRegistry,
    open: BTreeSet<String>,
    rendered: Rendered,
    used: u32,
    max: u32,
}

impl<'a> Disclosure<'a> {
    /// Renders the pack with every summarized section closed.
    pub fn new(
        pack: &'a CompiledPack,
        variables: &'a Value,
        system_messages: bool,
        tools: &'a ToolRegistry,
        max: u32,
    ) -> Result<Disclosure<'a>> {
        let open = BTreeSet::new();
        let rendered = pack.render_open(variables, system_messages, &open)?;
        Ok(Disclosure { pack, variables, system_messages, tools, open, rendered, used: 0, max })
    }

    /// The context files of the current rendering (`context/KEY.md`, for `read_file`).
    pub fn files(&self) -> &[crate::render::ContextFile] {
        &self.rendered.files
    }

    /// The messages of the current rendering.
    pub fn messages(&self) -> &[Message] {
        &self.rendered.messages
    }

    /// The tools the current rendering offers.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        specs(&self.rendered.tools, self.tools)
    }

    /// Sections opened so far.
    pub fn opened(&self) -> &BTreeSet<String> {
        &self.open
    }

    /// Answers the model's tool calls; renders again when sections were opened. A call
    /// past `max_disclosures` is refused, not run (and so is every call after it): the
    /// exchange ends with `disclosure_limit_exceeded`, every call of the reply listed.
    pub fn answer(&mut self, calls: &[ToolCall]) -> Answered {
        let mut out = Vec::with_capacity(calls.len());
        let mut reopen = false;
        let mut limit = None;
        for call in calls {
            self.used = self.used.saturating_add(1);
            if self.used > self.max || limit.is_some() {
                limit.get_or_insert(Error::DisclosureLimitExceeded {
                    max: self.max,
                    tool: call.name.clone(),
                });
                let content = format!(
                    "refused: this exchange allows {} tool call(s) (max_disclosures); the call was not run",
                    self.max
                );
                out.push(Disclosed {
                    call: call.clone(),
                    opened: vec![],
                    reason: None,
                    result: ToolResult { id: call.id.clone(), content, is_error: true },
                    refused: true,
                    at: crate::ledger::now(),
                    latency_ms: 0,
                });
                continue;
            }
            let started = std::time::Instant::now();
            let offered = self.rendered.tools.contains(&call.name);
            let (content, is_error, opened, reason) = if !offered {
                let list = self.rendered.tools.join(", ");
                (
                    format!("tool `{}` is not offered here; offered: {list}", call.name),
                    true,
                    vec![],
                    None,
                )
            } else if call.name == OPEN_SECTIONS {
                let (content, is_error, opened, reason) = self.open_sections(&call.arguments);
                reopen |= !is_error;
                (content, is_error, opened, reason)
            } else if call.name == READ_FILE {
                self.read_file(&call.arguments)
            } else {
                match self.tools.call(&call.name, &call.arguments) {
                    Ok(v) => (v.to_string(), false, vec![], None),
                    Err(e) => (e.to_string(), true, vec![], None),
                }
            };
            out.push(Disclosed {
                call: call.clone(),
                opened,
                reason,
                result: ToolResult { id: call.id.clone(), content, is_error },
                refused: false,
                at: crate::ledger::now(),
                latency_ms: started.elapsed().as_millis() as u64,
            });
        }
        if reopen && limit.is_none() {
            match self.pack.render_open(self.variables, self.system_messages, &self.open) {
                Ok(rendered) => self.rendered = rendered,
                Err(e) => limit = Some(e),
            }
        }
        Answered { calls: out, stop: limit }
    }

    fn open_sections(&mut self, args: &Value) -> (String, bool, Vec<String>, Option<String>) {
        let reason = args
            .get("reason")
            .and_then(Value::as_str)
            .map(|r| r.chars().take(MAX_REASON_CHARS).collect::<String>());
        let Some(keys) = args.get("section_keys").and_then(Value::as_array) else {
            return (
                "`section_keys` must be an array of the dotted keys the prompt names".into(),
                true,
                vec![],
                reason,
            );
        };
        let keys: Vec<&str> = keys.iter().filter_map(Value::as_str).take(64).collect();
        let unknown: Vec<&str> =
            keys.iter().copied().filter(|k| self.pack.section_path(k).is_none()).collect();
        if keys.is_empty() || !unknown.is_empty() {
            let named: Vec<String> = unknown.iter().map(|k| format!("\"{k}\"")).collect();
            return (
                format!(
                    "no section has the key {}; use a key the prompt names in its [This section is summarized ...] lines",
                    if named.is_empty() { "given".to_string() } else { named.join(", ") }
                ),
                true,
                vec![],
                reason,
            );
        }
        let opened: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        self.open.extend(opened.iter().cloned());
        (
            format!("Opened {}; the prompt now shows them in full.", opened.join(", ")),
            false,
            opened,
            reason,
        )
    }

    fn read_file(&self, args: &Value) -> (String, bool, Vec<String>, Option<String>) {
        let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
        let wanted = path.trim_start_matches('/');
        match self.rendered.files.iter().find(|f| f.path == wanted) {
            Some(file) => (file.content.clone(), false, vec![format!("/{}", file.path)], None),
            None => {
                let list: Vec<String> =
                    self.rendered.files.iter().map(|f| format!("/{}", f.path)).collect();
                (
                    format!(
                        "cannot read `{path}`: only the context files this prompt names can be read ({})",
                        list.join(", ")
                    ),
                    true,
                    vec![],
                    None,
                )
            }
        }
    }
}
