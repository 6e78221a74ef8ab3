//! Rendering a prompt pack into chat messages (SPEC §3.2).
//!
//! Templates use Jinja syntax through minijinja, configured for prompts:
//! - **strict**: printing or iterating a variable with no value is an error
//!   (`template_variable_missing`), never an empty string. Truthiness tests
//!   (`{% if history %}`), `is defined` and `| default(..)` work on absent optional inputs;
//! - **verbatim**: values are inserted as they are and never expanded again (a value
//!   containing `{{ x }}` stays literal); no HTML escaping; strings print as-is, every
//!   other value prints as compact JSON;
//! - **bounded**: execution has fuel, recursion is limited, output is capped, every value
//!   a template builds is bounded in size, and the native work of filters, tests and
//!   operators is charged to the fuel by the size of their operands ([`bounds`]), so a
//!   hostile template stops with `template_limit_exceeded`; a template that fails still
//!   pays for what it ran; constructs that capture output outside the cap (macros, set and
//!   filter blocks, recursive loops, includes) and expressions nested deeper than
//!   [`bounds::MAX_EXPRESSION_DEPTH`] are refused.
//!
//! A pass-through pack (`template`) renders to one user message. A structured pack puts
//! role, constraints and output format in the system message and required inputs, context,
//! task and expected outputs in the user message, in that order, each under a numbered
//! heading (`## 1. Task`). For a provider without system messages both are joined into one
//! user message, numbered continuously.
//!
//! Packs are compiled once ([`CompiledPack`]) and rendered many times.

use std::collections::BTreeSet;
use std::io::Write;

use minijinja::value::Value as JinjaValue;
use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::gateway::Message;
use crate::pack::{MessageKind, PackBody, PromptPack, Section, Visibility};

pub mod bounds;

/// Instructions one render may execute before it is stopped: the whole pack (every
/// section, `enabled` expression, summary and context file) shares them.
pub const FUEL: u64 = 200_000;
/// What the renders of one file's examples may execute together (`validate`).
pub const FILE_FUEL: u64 = 4 * FUEL;
/// Nesting of macros, includes and loops.
pub const RECURSION_LIMIT: usize = 64;
/// The largest prompt one render may produce (every section's text together).
pub const MAX_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// The one budget of a render (SPEC §18 "one budget per operation"): fuel, text produced
/// and bytes of values built, shared by every template the render runs — the whole section
/// tree, its `enabled` expressions, summaries and context files — and, when a caller passes
/// one budget to several renders, by all of them (a contract's examples in `validate`).
/// Each template still runs under the engine's own fuel, so a budget is overrun by at most
/// one template's [`FUEL`]. Native work (filters, tests, comparisons on large values) is
/// charged to the same fuel ([`bounds::WORK_PER_FUEL`]), and a template that fails is
/// charged too: what it had consumed when pactum's own check failed, or a whole [`FUEL`]
/// when it ran out or the engine failed without saying how far it got.
#[derive(Debug)]
pub struct RenderBudget {
    fuel: std::cell::Cell<u64>,
    output: std::cell::Cell<usize>,
    built: std::cell::Cell<u64>,
}

impl Default for RenderBudget {
    /// The budget of one render.
    fn default() -> Self {
        RenderBudget::with_fuel(FUEL, MAX_OUTPUT_BYTES)
    }
}

impl RenderBudget {
    /// A budget of `fuel` instructions and `output` bytes of text (and the built-bytes
    /// limit of one render).
    pub fn with_fuel(fuel: u64, output: usize) -> Self {
        RenderBudget {
            fuel: std::cell::Cell::new(fuel),
            output: std::cell::Cell::new(output),
            built: std::cell::Cell::new(0),
        }
    }

    /// The budget of every example render of one file.
    pub fn for_file() -> Self {
        RenderBudget::with_fuel(FILE_FUEL, 4 * MAX_OUTPUT_BYTES)
    }
}

/// What one section's body holds once compiled.
enum Part {
    /// A template, by its name in the environment.
    Template(String),
    /// Literal text (lists the pack spells out).
    Literal(String),
}

/// One section compiled for rendering.
struct Node {
    /// The dotted key path from the root (`reference.api`).
    key: String,
    title: String,
    /// `None` when a tree section has an empty template.
    body: Option<Part>,
    system: bool,
    /// The `{% if EXPR %}` template deciding whether the section renders.
    enabled: Option<String>,
    /// `Some` when the section is summarized (SPEC §15).
    summary: Option<Part>,
    tools: Vec<String>,
    /// The section or one of its descendants declares tools: opening it goes through
    /// `open_sections`, not a file.
    brings_tools: bool,
    children: Vec<Node>,
}

/// How a model returns the files a pack's `expected_outputs` lists, written by the engine
/// under the list (SPEC §8.5: the executor reads exactly this shape, `executor::files`).
pub const FILE_RESULT_FORMAT: &str = "Give the files as one JSON object: {\"files\": {\"PATH\": \"CONTENT\", ...}, \"response\": \"TEXT\"}, one entry per path above (its whole content as a string); `response` is optional text for the reader.";

/// The tool a model calls to open summarized sections that bring tools (SPEC §15).
pub const OPEN_SECTIONS: &str = "open_sections";
/// The tool a model calls to read a summarized section's file (SPEC §15).
pub const READ_FILE: &str = "read_file";

/// A markdown file holding a summarized section's full content, under the exchange's
/// context folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextFile {
    /// Relative to the context folder's parent: `context/KEY.md`.
    pub path: String,
    pub content: String,
}

/// A rendered prompt: its messages, the tools offered to the model (disclosure tools first,
/// then the tools of open sections, each once), and the files summarized sections point to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    pub messages: Vec<Message>,
    pub tools: Vec<String>,
    pub files: Vec<ContextFile>,
}

/// A pack compiled for rendering.
pub struct CompiledPack {
    env: Environment<'static>,
    key: String,
    roots: Vec<Node>,
    /// Every template by its pointer in the pack and its name in the environment.
    templates: Vec<(String, String)>,
    passthrough: bool,
}

impl std::fmt::Debug for CompiledPack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledPack").field("key", &self.key).finish_non_exhaustive()
    }
}

/// A fresh environment for one pack: a copy of one configured once (installing the
/// bounded operators and filters costs more than copying them).
fn environment() -> Environment<'static> {
    static BASE: std::sync::LazyLock<Environment<'static>> =
        std::sync::LazyLock::new(configured_environment);
    BASE.clone()
}

fn configured_environment() -> Environment<'static> {
    let mut env = bounds::environment();
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(RECURSION_LIMIT);
    // minijinja's debug mode defaults to the build profile; pinned off so that errors, their
    // messages and rendering cost are the same in debug and release builds (names of missing
    // variables come from the template source pactum keeps, see `undefined_name`).
    env.set_debug(false);
    env.set_formatter(|out, state, value| {
        let printed = print(out, value);
        if printed.is_err() {
            // The template ends here: its render charges the fuel consumed so far.
            bounds::failed(state);
        }
        printed
    });
    env
}

/// Prints a value: a string as it is, anything else as compact JSON. A missing value never
/// gets here (every printed expression goes through `__pactum_emit`, which refuses it): an
/// undefined value is the empty result of `x if c` without `else`, and prints nothing.
fn print(
    out: &mut minijinja::Output<'_>,
    value: &JinjaValue,
) -> std::result::Result<(), minijinja::Error> {
    if value.is_undefined() {
        return Ok(());
    }
    let mut write = |text: &str| {
        out.write_str(text)
            .map_err(|_| minijinja::Error::new(ErrorKind::WriteFailure, "write failed"))
    };
    if let Some(s) = value.as_str() {
        write(s)
    } else {
        let json = serde_json::to_string(value).map_err(|e| {
            minijinja::Error::new(ErrorKind::BadSerialization, "value cannot be printed")
                .with_source(e)
        })?;
        write(&json)
    }
}

/// Turns a minijinja error into pactum's error for a template. `env` holds the template
/// sources the error's span points into.
fn template_error(env: &Environment<'_>, template: &str, e: &minijinja::Error) -> Error {
    let line = e.line();
    let detail = e.detail().unwrap_or_default().to_string();
    match e.kind() {
        ErrorKind::UndefinedError => {
            let name = undefined_name(env, e).unwrap_or_else(|| "a variable".to_string());
            Error::TemplateVariableMissing { template: template.to_string(), name, line }
        }
        ErrorKind::OutOfFuel => Error::TemplateLimit {
            template: template.to_string(),
            message: format!("ran out of fuel after {FUEL} instructions; simplify its loops"),
        },
        ErrorKind::WriteFailure => Error::TemplateLimit {
            template: template.to_string(),
            message: format!("output is larger than {MAX_OUTPUT_BYTES} bytes"),
        },
        ErrorKind::InvalidOperation if detail.contains("recursion") => {
            Error::TemplateLimit { template: template.to_string(), message: detail }
        }
        ErrorKind::InvalidOperation if bounds::is_limit(&detail) => {
            let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
            Error::TemplateLimit {
                template: template.to_string(),
                message: format!("{detail}{at}"),
            }
        }
        _ => {
            let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
            let what = if detail.is_empty() {
                e.kind().to_string()
            } else {
                format!("{}: {detail}", e.kind())
            };
            Error::TemplateRender { template: template.to_string(), message: format!("{what}{at}") }
        }
    }
}

/// The variable name an undefined-value error is about: the expression at the error's span
/// in the source of the template it names. Read from the environment, not from the error's
/// debug info, which minijinja keeps only in debug mode.
fn undefined_name(env: &Environment<'_>, e: &minijinja::Error) -> Option<String> {
    let template = env.get_template(e.name()?).ok()?;
    let source = template.source();
    let range = e.range()?;
    let text = source.get(range)?;
    // An operand of a check pactum wrapped around an operator (`__pactum_concat(x , y)`).
    let detail = e.detail().unwrap_or_default();
    let text = match detail.strip_prefix(bounds::UNDEFINED).and_then(|i| i.parse().ok()) {
        Some(index) => bounds::operand(text.trim_start(), index)?,
        None => text,
    };
    // The expression of an `if` (an `enabled` expression is one), not its keyword.
    let mut text = text.trim();
    for keyword in ["if ", "elif ", "not "] {
        if let Some(rest) = text.strip_prefix(keyword) {
            text = rest.trim_start();
        }
    }
    // An operand pactum wrapped in a check (`__pactum_deep(x) == y`).
    while let Some(rest) = text.strip_prefix("__pactum_") {
        text = rest.split_once('(').map_or("", |(_, inner)| inner).trim_start();
    }
    let name: String =
        text.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.').collect();
    (!name.is_empty()).then_some(name)
}

/// Adds templates to a pack's environment, recording their pointers.
struct Builder<'p> {
    env: Environment<'static>,
    key: String,
    pack: &'p PromptPack,
    templates: Vec<(String, String)>,
}

impl Builder<'_> {
    fn invalid(&self, pointer: &str, message: String) -> Error {
        Error::SchemaInvalid {
            doc: crate::error::DocKind::PromptPack,
            path: self.pack.path.clone(),
            findings: vec![crate::error::Finding::new(pointer, message)],
        }
    }

    fn add(&mut self, pointer: &str, source: &str) -> Result<String> {
        self.add_named(format!("{}{pointer}", self.key), pointer, source)
    }

    /// [`Builder::add`] for a part of a tree section: its name (shown in messages) says
    /// which section by its key path, not only by its index.
    fn add_section_part(&mut self, pointer: &str, key: &str, source: &str) -> Result<String> {
        let part = pointer.rsplit('/').next().unwrap_or_default();
        self.add_named(format!("{}, section {key}, {part}", self.key), pointer, source)
    }

    fn add_named(&mut self, name: String, pointer: &str, source: &str) -> Result<String> {
        let source = bounds::prepare(source, &name).map_err(|refused| {
            self.invalid(pointer, format!("{} (template line {})", refused.message, refused.line))
        })?;
        self.env.add_template_owned(name.clone(), source).map_err(|e| {
            self.invalid(
                pointer,
                format!(
                    "template does not compile: {}{}",
                    e.detail().unwrap_or("syntax error"),
                    e.line().map(|l| format!(" (template line {l})")).unwrap_or_default()
                ),
            )
        })?;
        self.templates.push((pointer.to_string(), name.clone()));
        Ok(name)
    }

    /// A canonical section (SPEC §3.2) as a root of the tree.
    fn canonical(&mut self, key: &str, title: &str, system: bool, body: Part) -> Node {
        Node {
            key: key.to_string(),
            title: title.to_string(),
            body: Some(body),
            system,
            enabled: None,
            summary: None,
            tools: Vec::new(),
            brings_tools: false,
            children: Vec::new(),
        }
    }

    fn tree(&mut self, sections: &[Section], at: &str, parent: &str) -> Result<Vec<Node>> {
        let mut out = Vec::with_capacity(sections.len());
        for (i, s) in sections.iter().enumerate() {
            let here = format!("{at}/{i}");
            let key = if parent.is_empty() { s.key.clone() } else { format!("{parent}.{}", s.key) };
            let enabled = match &s.enabled {
                Some(expr) => {
                    if expr.contains("{{") || expr.contains("{%") || expr.contains("{#") {
                        return Err(self.invalid(
                            &format!("{here}/enabled"),
                            "`enabled` is an expression (`mode == 'careful'`), not a template; drop the `{{ }}`".into(),
                        ));
                    }
                    Some(self.add_section_part(
                        &format!("{here}/enabled"),
                        &key,
                        &format!("{{% if {expr} %}}1{{% endif %}}"),
                    )?)
                }
                None => None,
            };
            let body = if s.template.is_empty() {
                None
            } else {
                Some(Part::Template(self.add_section_part(
                    &format!("{here}/template"),
                    &key,
                    &s.template,
                )?))
            };
            let summary = match (s.visibility, &s.summary) {
                (Visibility::Summary, Some(text)) => Some(Part::Template(self.add_section_part(
                    &format!("{here}/summary"),
                    &key,
                    text,
                )?)),
                (Visibility::Summary, None) => {
                    return Err(self.invalid(
                        &here,
                        "a summarized section needs a `summary`; add one or make it `full`".into(),
                    ));
                }
                (Visibility::Full, _) => None,
            };
            let children = self.tree(&s.children, &format!("{here}/children"), &key)?;
            let brings_tools = !s.tools.is_empty() || children.iter().any(|c| c.brings_tools);
            out.push(Node {
                key,
                title: s.title.clone(),
                body,
                system: s.message == MessageKind::System,
                enabled,
                summary,
                tools: s.tools.clone(),
                brings_tools,
                children,
            });
        }
        Ok(out)
    }
}

/// Numbers and text gathered while rendering.
struct Walk<'a> {
    ctx: &'a JinjaValue,
    budget: &'a RenderBudget,
    open: &'a BTreeSet<String>,
    tools: Vec<String>,
    files: Vec<ContextFile>,
}

impl CompiledPack {
    /// Compiles every template of a pack. A syntax error is `prompt_pack_invalid`.
    pub fn compile(pack: &PromptPack) -> Result<CompiledPack> {
        let mut b = Builder { env: environment(), key: pack.key(), pack, templates: Vec::new() };
        let mut roots = Vec::new();
        let passthrough = match &pack.body {
            PackBody::Template(t) => {
                let name = b.add("/template", t)?;
                roots.push(b.canonical("task", "Task", false, Part::Template(name)));
                true
            }
            PackBody::Sections(s) => {
                // The object form is the array of its canonical sections, in this order.
                let optional = [
                    ("role", "Role", true, &s.role),
                    ("constraints", "Constraints", true, &s.constraints),
                    ("output_format", "Output Format", true, &s.output_format),
                ];
                for (key, title, system, text) in optional {
                    if let Some(t) = text {
                        let name = b.add(&format!("/sections/{key}"), t)?;
                        roots.push(b.canonical(key, title, system, Part::Template(name)));
                    }
                }
                if !s.required_inputs.is_empty() {
                    let list: Vec<String> = s
                        .required_inputs
                        .iter()
                        .map(|(name, d)| format!("- **{name}**: {d}"))
                        .collect();
                    let part = Part::Literal(list.join("\n"));
                    roots.push(b.canonical("required_inputs", "Required Inputs", false, part));
                }
                if let Some(t) = &s.context {
                    let name = b.add("/sections/context", t)?;
                    roots.push(b.canonical("context", "Context", false, Part::Template(name)));
                }
                let name = b.add("/sections/task", &s.task)?;
                roots.push(b.canonical("task", "Task", false, Part::Template(name)));
                if !s.expected_outputs.is_empty() {
                    let list: Vec<String> =
                        s.expected_outputs.iter().map(|p| format!("- `{p}`")).collect();
                    // The engine's own instruction: how a file result is read (SPEC §8.5).
                    let part =
                        Part::Literal(format!("{}\n\n{FILE_RESULT_FORMAT}", list.join("\n")));
                    roots.push(b.canonical("expected_outputs", "Expected Outputs", false, part));
                }
                false
            }
            PackBody::Tree(tree) => {
                roots = b.tree(tree, "/sections", "")?;
                false
            }
        };
        Ok(CompiledPack { env: b.env, key: b.key, roots, templates: b.templates, passthrough })
    }

    /// The top-level variables the templates read that they do not set themselves.
    pub fn variables(&self) -> BTreeSet<String> {
        self.variables_by_template().into_iter().flat_map(|(_, names)| names).collect()
    }

    /// The variables each template reads, by the template's pointer in the pack (`enabled`
    /// expressions and summaries included).
    pub fn variables_by_template(&self) -> Vec<(String, BTreeSet<String>)> {
        self.templates
            .iter()
            .filter_map(|(pointer, name)| {
                self.env.get_template(name).ok().map(|t| {
                    (
                        pointer.clone(),
                        bounds::user_variables(t.undeclared_variables(false)).collect(),
                    )
                })
            })
            .collect()
    }

    /// The tools sections declare, with the pointer of each (for `validate`).
    pub fn declared_tools(&self) -> Vec<(String, String)> {
        fn walk(nodes: &[Node], out: &mut Vec<(String, String)>) {
            for n in nodes {
                out.extend(n.tools.iter().map(|t| (n.key.clone(), t.clone())));
                walk(&n.children, out);
            }
        }
        let mut out = Vec::new();
        walk(&self.roots, &mut out);
        out
    }

    /// The names of every tool a section declares, each once.
    pub fn declared_tool_names(&self) -> impl Iterator<Item = &str> {
        let mut names: Vec<&str> = Vec::new();
        let mut stack: Vec<&Node> = self.roots.iter().collect();
        while let Some(n) = stack.pop() {
            for t in &n.tools {
                if !names.contains(&t.as_str()) {
                    names.push(t);
                }
            }
            stack.extend(&n.children);
        }
        names.into_iter()
    }

    /// Every section's dotted key, depth first.
    pub fn section_keys(&self) -> Vec<String> {
        fn walk(nodes: &[Node], out: &mut Vec<String>) {
            for n in nodes {
                out.push(n.key.clone());
                walk(&n.children, out);
            }
        }
        let mut out = Vec::new();
        if !self.passthrough {
            walk(&self.roots, &mut out);
        }
        out
    }

    /// Checks that every key names a section (`section_not_found` otherwise).
    pub fn check_keys<'k>(&self, keys: impl IntoIterator<Item = &'k String>) -> Result<()> {
        for key in keys {
            if self.passthrough || self.section_path(key).is_none() {
                return Err(Error::SectionNotFound {
                    pack: self.key.clone(),
                    key: key.clone(),
                    available: self.section_keys(),
                });
            }
        }
        Ok(())
    }

    /// The dotted keys of `key` and its ancestors, root first; `None` when no section has
    /// that key.
    pub fn section_path(&self, key: &str) -> Option<Vec<String>> {
        fn find(nodes: &[Node], key: &str, path: &mut Vec<String>) -> bool {
            for n in nodes {
                if key == n.key || key.starts_with(&format!("{}.", n.key)) {
                    path.push(n.key.clone());
                    if key == n.key || find(&n.children, key, path) {
                        return true;
                    }
                    path.pop();
                }
            }
            false
        }
        let mut path = Vec::new();
        find(&self.roots, key, &mut path).then_some(path)
    }

    fn render_part(&self, name: &str, ctx: &JinjaValue, budget: &RenderBudget) -> Result<String> {
        let template =
            self.env.get_template(name).map_err(|e| template_error(&self.env, name, &e))?;
        let over = |message: String| Error::TemplateLimit { template: self.key.clone(), message };
        if budget.fuel.get() == 0 {
            return Err(over(format!(
                "the render ran out of fuel ({FUEL} instructions for the whole pack: every section, enabled expression and summary together); simplify its loops and conditions"
            )));
        }
        bounds::start(budget.fuel.get(), budget.built.get());
        let mut out = Capped { buf: Vec::with_capacity(512), limit: budget.output.get() };
        let rendered = template.render_captured_to(ctx.clone(), &mut out);
        let spent = bounds::spent();
        budget.built.set(spent.built);
        // The instructions the template ran, whether it succeeded or failed: when it ends
        // in an error of pactum's own checks, what it had consumed then; when it ran out
        // of engine fuel or the engine failed elsewhere, the whole fuel of a template (the
        // engine does not say how much it had run).
        let consumed = match &rendered {
            Ok(captured) => captured.state().fuel_levels().map_or(0, |(consumed, _)| consumed),
            Err(e) if e.kind() == ErrorKind::OutOfFuel => FUEL,
            Err(_) => spent.failed_at.unwrap_or(FUEL),
        };
        budget.fuel.set(budget.fuel.get().saturating_sub(consumed.saturating_add(spent.work_fuel)));
        budget.output.set(budget.output.get().saturating_sub(out.buf.len()));
        rendered.map_err(|e| template_error(&self.env, name, &e))?;
        String::from_utf8(out.buf).map_err(|_| Error::TemplateRender {
            template: name.to_string(),
            message: "rendered text is not UTF-8".into(),
        })
    }

    fn text(&self, part: &Part, ctx: &JinjaValue, budget: &RenderBudget) -> Result<String> {
        match part {
            Part::Template(name) => self.render_part(name, ctx, budget),
            Part::Literal(text) => Ok(text.clone()),
        }
    }

    fn is_enabled(&self, node: &Node, ctx: &JinjaValue, budget: &RenderBudget) -> Result<bool> {
        match &node.enabled {
            Some(name) => Ok(self.render_part(name, ctx, budget)? == "1"),
            None => Ok(true),
        }
    }

    /// Renders the enabled sections of one level, numbered densely from 1 under `prefix`.
    fn level(
        &self,
        nodes: &[&Node],
        prefix: &str,
        depth: usize,
        w: &mut Walk<'_>,
    ) -> Result<Vec<String>> {
        let mut blocks = Vec::with_capacity(nodes.len());
        let mut n = 0;
        for node in nodes {
            if !self.is_enabled(node, w.ctx, w.budget)? {
                continue;
            }
            n += 1;
            let number = format!("{prefix}{n}.");
            let mut block = format!("{} {number} {}", "#".repeat(depth + 2), node.title);
            match &node.summary {
                Some(summary) if !is_open(w.open, &node.key) => {
                    block.push('\n');
                    block.push_str(self.text(summary, w.ctx, w.budget)?.trim_end());
                    let key = &node.key;
                    if node.brings_tools {
                        block.push_str(&format!("\n\n[This section is summarized. To view full content, call `{OPEN_SECTIONS}` with key \"{key}\".]"));
                        push_once(&mut w.tools, OPEN_SECTIONS);
                    } else {
                        block.push_str(&format!("\n\n[This section is summarized. Full content is available at `/context/{key}.md`.]"));
                        push_once(&mut w.tools, READ_FILE);
                        let content = self.file(node, w)?;
                        w.files.push(ContextFile { path: format!("context/{key}.md"), content });
                    }
                }
                _ => {
                    if let Some(body) = &node.body {
                        block.push('\n');
                        block.push_str(self.text(body, w.ctx, w.budget)?.trim_end());
                    }
                    for tool in &node.tools {
                        push_once(&mut w.tools, tool);
                    }
                    let children: Vec<&Node> = node.children.iter().collect();
                    for child in self.level(&children, &number, depth + 1, w)? {
                        block.push_str("\n\n");
                        block.push_str(&child);
                    }
                }
            }
            blocks.push(block);
        }
        Ok(blocks)
    }

    /// A summarized section's whole subtree, headings relative to it, every descendant in
    /// full.
    fn file(&self, node: &Node, w: &mut Walk<'_>) -> Result<String> {
        let everything = all_keys(&node.children);
        let mut inner = Walk {
            ctx: w.ctx,
            budget: w.budget,
            open: &everything,
            tools: Vec::new(),
            files: Vec::new(),
        };
        let mut out = format!("# {}", node.title);
        if let Some(body) = &node.body {
            out.push('\n');
            out.push_str(self.text(body, w.ctx, w.budget)?.trim_end());
        }
        let children: Vec<&Node> = node.children.iter().collect();
        for child in self.level(&children, "", 0, &mut inner)? {
            out.push_str("\n\n");
            out.push_str(&child);
        }
        out.push('\n');
        Ok(out)
    }

    /// Renders the pack with `variables` (a JSON object). `system_messages` says whether
    /// the provider takes a separate system message.
    pub fn render(&self, variables: &Value, system_messages: bool) -> Result<Vec<Message>> {
        Ok(self.render_open(variables, system_messages, &BTreeSet::new())?.messages)
    }

    /// Renders the pack with the summarized sections whose dotted keys are in `open` shown
    /// in full (SPEC §15); reports the tools offered and the files summaries point to.
    pub fn render_open(
        &self,
        variables: &Value,
        system_messages: bool,
        open: &BTreeSet<String>,
    ) -> Result<Rendered> {
        self.render_within(variables, system_messages, open, &RenderBudget::default())
    }

    /// [`CompiledPack::render_open`] within a `budget` the caller may share between
    /// renders (a contract's examples).
    pub fn render_within(
        &self,
        variables: &Value,
        system_messages: bool,
        open: &BTreeSet<String>,
        budget: &RenderBudget,
    ) -> Result<Rendered> {
        let ctx = to_jinja(variables, 0);
        if self.passthrough {
            let text = match self.roots.first().and_then(|n| n.body.as_ref()) {
                Some(part) => self.text(part, &ctx, budget)?,
                None => String::new(),
            };
            return Ok(Rendered { messages: vec![Message::user(text)], ..Rendered::default() });
        }
        let mut w = Walk { ctx: &ctx, budget, open, tools: Vec::new(), files: Vec::new() };
        let system: Vec<&Node> = self.roots.iter().filter(|n| n.system).collect();
        let user: Vec<&Node> = self.roots.iter().filter(|n| !n.system).collect();
        let messages = if system_messages {
            let system = self.level(&system, "", 0, &mut w)?;
            let user = self.level(&user, "", 0, &mut w)?;
            let mut messages = Vec::with_capacity(2);
            if !system.is_empty() {
                messages.push(Message::system(system.join("\n\n")));
            }
            messages.push(Message::user(user.join("\n\n")));
            messages
        } else {
            let mut all = system;
            all.extend(user);
            vec![Message::user(self.level(&all, "", 0, &mut w)?.join("\n\n"))]
        };
        Ok(Rendered { messages, tools: w.tools, files: w.files })
    }

    pub fn key(&self) -> &str {
        &self.key
    }
}

/// Opening a section opens its ancestors too.
fn is_open(open: &BTreeSet<String>, key: &str) -> bool {
    open.iter().any(|k| {
        k == key || (k.len() > key.len() && k.starts_with(key) && k.as_bytes()[key.len()] == b'.')
    })
}

fn push_once(tools: &mut Vec<String>, name: &str) {
    if !tools.iter().any(|t| t == name) {
        tools.push(name.to_string());
    }
}

fn all_keys(nodes: &[Node]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for n in nodes {
        out.insert(n.key.clone());
        out.extend(all_keys(&n.children));
    }
    out
}

/// Nesting of input values rendering converts (deeper values print as `none`; parsed
/// JSON never nests deeper than 128).
const MAX_VALUE_DEPTH: usize = 128;

/// A JSON value as a template value. Direct conversion: about twice as fast as going
/// through serde, and rendering runs on every exchange.
fn to_jinja(value: &Value, depth: usize) -> JinjaValue {
    match value {
        Value::Null => JinjaValue::from(()),
        Value::Bool(b) => JinjaValue::from(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => JinjaValue::from(i),
            (None, Some(u)) => JinjaValue::from(u),
            _ => JinjaValue::from(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => JinjaValue::from(s.as_str()),
        _ if depth >= MAX_VALUE_DEPTH => JinjaValue::from(()),
        Value::Array(items) => items.iter().map(|v| to_jinja(v, depth + 1)).collect(),
        Value::Object(map) => JinjaValue::from_object(
            map.iter()
                .map(|(k, v)| (k.clone(), to_jinja(v, depth + 1)))
                .collect::<std::collections::BTreeMap<String, JinjaValue>>(),
        ),
    }
}

/// A writer that refuses to grow past what the render's budget has left.
struct Capped {
    buf: Vec<u8>,
    limit: usize,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > self.limit {
            return Err(std::io::Error::other("prompt too large"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Compiles and renders a pack once (for the CLI; executors keep a [`CompiledPack`]).
pub fn render(pack: &PromptPack, variables: &Value, system_messages: bool) -> Result<Vec<Message>> {
    CompiledPack::compile(pack)?.render(variables, system_messages)
}

/// The properties an input schema declares at its top level (`None` when it cannot say,
/// e.g. a bare `$ref` or `true`).
pub fn declared_inputs(input_schema: Option<&Value>) -> Option<BTreeSet<String>> {
    let schema = input_schema?;
    let props = schema.get("properties").and_then(Value::as_object);
    match props {
        Some(map) => Some(map.keys().cloned().collect()),
        None if schema.get("$ref").is_some() || schema.get("allOf").is_some() => None,
        None => Some(BTreeSet::new()),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;
    use crate::gateway::Role;
    use serde_json::json;
    use std::path::Path;

    fn pack(value: Value) -> PromptPack {
        let mut v = json!({"prompt_pack_id": "PRM-T-001", "version": "1.0.0"});
        for (k, x) in value.as_object().unwrap() {
            v[k] = x.clone();
        }
        PromptPack::from_value(&v, "x", Path::new("p.json")).unwrap()
    }

    fn render_text(template: &str, vars: Value) -> Result<String> {
        let p = pack(json!({"template": template}));
        render(&p, &vars, true).map(|m| m[0].content.clone())
    }

    #[test]
    fn passthrough_renders_one_user_message() {
        let m = render(&pack(json!({"template": "Hi {{ name }}!"})), &json!({"name": "Ada"}), true)
            .unwrap();
        assert_eq!(m, vec![Message::user("Hi Ada!")]);
    }

    #[test]
    fn values_are_verbatim_never_expanded_or_escaped() {
        assert_eq!(
            render_text("{{ x }}", json!({"x": "{{ y }} <b>&</b>"})).unwrap(),
            "{{ y }} <b>&</b>"
        );
        assert_eq!(
            render_text("{{ x }}", json!({"x": {"a": [1, true, null]}})).unwrap(),
            r#"{"a":[1,true,null]}"#
        );
        assert_eq!(
            render_text("{{ n }} {{ f }} {{ b }}", json!({"n": 3, "f": 0.5, "b": false})).unwrap(),
            "3 0.5 false"
        );
        assert_eq!(render_text("{{ item.field }}", json!({"item": {"field": "v"}})).unwrap(), "v");
        assert_eq!(
            render_text(
                "{% for h in history %}- {{ h }}\n{% endfor %}",
                json!({"history": ["a", "b"]})
            )
            .unwrap(),
            "- a\n- b\n"
        );
    }

    #[test]
    fn missing_values_are_errors_with_the_name() {
        let e = render_text("Hello {{ name }}", json!({})).unwrap_err();
        assert_eq!(e.code(), Code::TemplateVariableMissing);
        assert!(e.to_string().contains("`name`"), "{e}");
        let e = render_text("{{ item.missing }}", json!({"item": {}})).unwrap_err();
        assert_eq!(e.code(), Code::TemplateVariableMissing);
        assert!(e.to_string().contains("`item.missing`"), "{e}");
        let e = render_text("{% for x in xs %}{{ x }}{% endfor %}", json!({})).unwrap_err();
        assert_eq!(e.code(), Code::TemplateVariableMissing);
        assert!(e.to_string().contains("`xs`"), "{e}");
        assert!(!e.to_string().contains("a variable"), "{e}");
        // On a later line of a multi-line template, with the line.
        let e = render_text("A\nB {{ a }}\nC {{ later }}", json!({"a": 1})).unwrap_err();
        assert!(e.to_string().contains("`later`"), "{e}");
        assert!(e.to_string().contains("line 3"), "{e}");
        // Optional inputs can be tested and defaulted.
        assert_eq!(render_text("{% if h %}H{% endif %}x", json!({})).unwrap(), "x");
        assert_eq!(render_text("{{ h | default('none') }}", json!({})).unwrap(), "none");
    }

    #[test]
    fn hostile_templates_stop_with_a_limit_code() {
        let e = render_text(
            "{% for a in range(10000) %}{% for b in range(10000) %}{{ b }}{% endfor %}{% endfor %}",
            json!({}),
        )
        .unwrap_err();
        assert_eq!(e.code(), Code::TemplateLimitExceeded, "{e}");
        // Macros capture their output outside the cap: refused when the pack compiles.
        let e = render_text("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", json!({}))
            .unwrap_err();
        assert_eq!(e.code(), Code::PromptPackInvalid, "{e}");
        // Values built within the fuel are bounded too (issue 11).
        for hostile in [
            "{% set n = namespace(x='ab') %}{% for i in range(40) %}{% set n.x = n.x ~ n.x %}{% endfor %}{{ n.x|length }}",
            "{% set a = 'x' * 1000000 %}{% set b = a ~ a %}{% set c = b ~ b %}{% set d = c ~ c %}{{ d|length }}",
            "{{ 'line\n' * 1000 | indent(100000000) }}",
            "{{ 'abc' | replace('', 'x' * 3000000) }}",
            "{% set n = namespace(l=[1]) %}{% for i in range(40) %}{% set n.l = n.l + n.l %}{% endfor %}{{ n.l|length }}",
            "{% set n = namespace(l=[1]) %}{% for i in range(200) %}{% set n.l = [n.l] %}{% endfor %}{{ n.l }}",
            "{% set n = namespace(l=[1]) %}{% for i in range(40) %}{% set n.l = [n.l, n.l] %}{% endfor %}{{ n.l|length }}",
            "{% set n = namespace(x='a') %}{% for i in range(40) %}{% set n.x = n.x|replace('a', 'aa') %}{% endfor %}{{ n.x|length }}",
            "{{ range(100000) | join('x' * 100000) }}",
            "{{ '%100000000s' | format('a') }}",
            "{{ [1] | batch(100000000, 0) | list }}",
        ] {
            let e = render_text(hostile, json!({})).unwrap_err();
            assert_eq!(e.code(), Code::TemplateLimitExceeded, "{hostile}: {e}");
        }
        let e = render_text("{{ 'x' * 50000000 }}", json!({})).unwrap_err();
        assert_eq!(e.code(), Code::TemplateLimitExceeded, "{e}");
    }

    /// A pack of `n` sections (nested 4 wide, so the tree stays within its depth limit),
    /// each with `template` and, when given, `enabled`.
    fn wide_tree(n: usize, template: &str, enabled: Option<&str>) -> PromptPack {
        let sections: Vec<Value> = (0..n)
            .map(|i| {
                let mut s =
                    json!({"key": format!("s{i}"), "title": format!("S{i}"), "template": template});
                if let Some(e) = enabled {
                    s["enabled"] = json!(e);
                }
                s
            })
            .collect();
        let v = json!({"prompt_pack_id": "PRM-T-001", "version": "1.0.0", "sections": sections});
        PromptPack::from_value(&v, "x", Path::new("p.json")).unwrap()
    }

    #[test]
    fn one_budget_covers_the_whole_tree_and_every_example() {
        // Each section stays within the fuel of one template; together they would build a
        // prompt of hundreds of megabytes and run hundreds of times the fuel.
        let heavy = "{% for i in range(30000) %}xxxxxxxxxx{% endfor %}";
        let single = CompiledPack::compile(&wide_tree(1, heavy, None)).unwrap();
        assert!(single.render(&json!({}), true).is_ok(), "one such section fits");
        let pack = CompiledPack::compile(&wide_tree(300, heavy, None)).unwrap();
        let (e, work) = crate::work::counted(|| pack.render(&json!({}), true).unwrap_err());
        assert_eq!(e.code(), Code::TemplateLimitExceeded, "{e}");
        // The render stopped part of the way: each section builds 300 KB, and all 300 of
        // them would allocate their 90 MB and more.
        assert!(work.bytes < 64 << 20, "{work:?}");
        // The same with `enabled` expressions that burn fuel and render nothing.
        let burn = "(range(30000) | select('odd') | list | length) > 0";
        let pack = CompiledPack::compile(&wide_tree(300, "x", Some(burn))).unwrap();
        let one = CompiledPack::compile(&wide_tree(1, "x", Some(burn))).unwrap();
        let spent = |p: &CompiledPack| {
            let budget = RenderBudget::default();
            let r = p.render_within(&json!({}), true, &BTreeSet::new(), &budget);
            (r.map_err(|e| e.code()), budget.built.get())
        };
        // Filters run natively, outside the fuel: what they build is what the budget counts.
        let (ok, built) = spent(&one);
        assert!(ok.is_ok() && built > 0, "one enabled expression renders within the budget");
        assert!(built * 300 > bounds::MAX_BUILT_BYTES, "{built}");
        assert_eq!(
            spent(&pack).0,
            Err(Code::TemplateLimitExceeded),
            "300 of them share one budget"
        );
        // Renders that share a budget (a file's examples) stop together.
        let ok = CompiledPack::compile(&wide_tree(1, heavy, None)).unwrap();
        let budget = RenderBudget::for_file();
        let results: Vec<bool> = (0..20)
            .map(|_| ok.render_within(&json!({}), true, &BTreeSet::new(), &budget).is_ok())
            .collect();
        assert!(results[0], "one render fits");
        assert!(!results[19], "twenty do not: {results:?}");
    }

    #[test]
    fn bounded_operators_and_filters_keep_their_meaning() {
        let vars = json!({"items": ["b", "a"], "name": "Ada", "n": 4, "data": {"k": [1, 2]},
                          "text": "one\ntwo"});
        for (template, expected) in [
            ("{{ items | join(', ') }}", "b, a"),
            ("{{ name ~ '!' }} {{ (n + 1) * 2 }} {{ n / 2 }}", "Ada! 10 2.0"),
            ("{{ [1, 2] + [3] }} {{ 'ab' * 2 }} {{ (1, 2) }}", "[1,2,3] abab [1,2]"),
            ("{{ data | tojson }}", "{\"k\": [1, 2]}"),
            ("{% for x in items | sort %}{{ loop.index }}{{ x }}{% endfor %}", "1a2b"),
            ("{{ text | indent(2) }}", "one\n  two"),
            ("{{ missing | default('d') }} {{ {'a': n}['a'] }}", "d 4"),
            (
                "{% set ns = namespace(s='') %}{% for x in items %}{% set ns.s = ns.s ~ x %}{% endfor %}{{ ns.s }}",
                "ba",
            ),
            ("{{ range(3) | list }} {{ dict(a=1).a }}", "[0,1,2] 1"),
            // Keyword arguments reach the wrapped filters, tests and functions.
            ("{{ data | tojson(indent=1) }}", "{\n \"k\": [\n  1,\n  2\n ]\n}"),
            ("{{ text | indent(width=1) }} {{ namespace(a=2).a }}", "one\n two 2"),
            ("{{ items | selectattr('x', 'defined') | list }}", "[]"),
            // Charged operands keep their meaning.
            (
                "{{ name == 'Ada' }} {{ 'd' in name }} {{ 'x' not in items }} {{ n < 5 <= 5 }}",
                "true true true true",
            ),
            ("{{ name[0] }}{{ name[1:] }} {{ data['k'][1] }} {{ (name|upper)[-1] }}", "Ada 2 A"),
            ("{{ '!' if n > 9 }}|{{ name if n }}", "|Ada"),
            (
                "{{ missing is defined }} {{ missing is undefined }} {{ name is defined }} {{ missing is none }}",
                "false true true false",
            ),
            (
                "{% for x in items %}{{ loop.cycle('-', '+') }}{{ loop.changed(x) }}{% endfor %}",
                "-true+true",
            ),
            (
                "{{ items is sameas(items) }} {{ name is startingwith('A') }} {{ n is divisibleby(2) }}",
                "true true true",
            ),
        ] {
            let rendered =
                render_text(template, vars.clone()).unwrap_or_else(|e| panic!("{template}: {e}"));
            assert_eq!(rendered, expected, "{template}");
        }
        let e = render_text("{{ 'x' ~ missing }}", json!({})).unwrap_err();
        assert_eq!(e.code(), Code::TemplateVariableMissing, "{e}");
        let e = render_text("{{ missing ~ 'x' }}", json!({})).unwrap_err();
        assert!(e.to_string().contains("`missing`"), "the variable is named: {e}");
        let compiled = CompiledPack::compile(&pack(
            json!({"template": "{{ a ~ b }}{{ [c] }}{{ f | upper }}"}),
        ))
        .unwrap();
        let names: Vec<String> = compiled.variables().into_iter().collect();
        assert_eq!(names, ["a", "b", "c", "f"]);
    }

    /// Asserts that `f(4n)` does about four times the work of `f(n)`, never sixteen: the
    /// work counted is what the code under test counts (tokens scanned, native work
    /// charged) and every allocation.
    fn assert_linear(what: &str, f: impl Fn(usize), n: usize) {
        crate::work::assert_linear(what, n, |n| crate::work::work_of(|| f(n)));
    }

    #[test]
    fn deeply_nested_expressions_are_refused_before_they_are_parsed() {
        // In a spawned thread (2 MiB of stack) of a debug build: without the pre-scan each
        // of these overflows the stack of the parser, the code generator, the rewrite or
        // the drop of the syntax tree, or is refused by the parser with another message.
        const N: usize = 100_000;
        let hostile = [
            format!("{}x", "not ".repeat(N)),
            format!("{}x{}", "(".repeat(N), ")".repeat(N)),
            format!("{}1", "- ".repeat(N)),
            format!("x{}", " | upper".repeat(N)),
            format!("x{}", " ~ x".repeat(N)),
            format!("x{}", ".a".repeat(N)),
            format!("x{}", "[0]".repeat(N)),
            format!("{}{}", "[".repeat(N), "]".repeat(N)),
            format!("{}x{}", "f(".repeat(N), ")".repeat(N)),
        ];
        for expr in hostile {
            for source in [format!("{{{{ {expr} }}}}"), format!("{{% if {expr} %}}y{{% endif %}}")]
            {
                let head: String = source.chars().take(24).collect();
                let e = std::thread::spawn(move || {
                    CompiledPack::compile(&pack(json!({"template": source}))).map(|_| ())
                })
                .join()
                .expect("no stack overflow")
                .unwrap_err();
                assert_eq!(e.code(), Code::PromptPackInvalid, "{head}: {e}");
                assert!(e.to_string().contains("nests deeper than"), "{head}: {e}");
            }
            // As an `enabled` expression too.
            let e = std::thread::spawn(move || {
                CompiledPack::compile(&wide_tree(1, "x", Some(&expr))).map(|_| ())
            })
            .join()
            .expect("no stack overflow")
            .unwrap_err();
            assert!(e.to_string().contains("nests deeper than"), "{e}");
        }
        // Ordinary templates, long ones included, are not refused: nesting resets at each
        // separator and each tag; text outside tags is never counted.
        let list: Vec<String> = (0..5000).map(|i| format!("a.b{i} ~ '(' ~ c[{i}]")).collect();
        let conditions: Vec<String> = (0..30).map(|i| format!("mode == 'm{i}'")).collect();
        for ok in [
            format!("{}text{}", "(".repeat(N), ")".repeat(N)),
            format!("{{{{ [{}] | length }}}}", list.join(", ")),
            format!("{{% if {} %}}y{{% endif %}}", conditions.join(" or ")),
            "{% raw %}{{ ((((((((((((((((((((((((((((((((((((x)))))))))))))))))))))))))))))))))))) }}{% endraw %}".repeat(100),
        ] {
            CompiledPack::compile(&pack(json!({"template": ok}))).unwrap();
        }
    }

    #[test]
    fn the_nesting_scan_is_linear() {
        let scan = |n: usize| {
            let source = "{{ ((a ~ b) | upper)[0] if not x else y }} (text) ".repeat(n);
            bounds::nesting(&source).unwrap();
        };
        assert_linear("nesting scan", scan, 2_000);
    }

    /// The fuel one render of `template` with `vars` takes from a fresh budget, and its
    /// result's code.
    fn fuel_spent(template: &str, vars: &Value) -> (u64, std::result::Result<(), Code>) {
        let compiled = CompiledPack::compile(&pack(json!({"template": template}))).unwrap();
        let budget = RenderBudget::default();
        let r = compiled.render_within(vars, true, &BTreeSet::new(), &budget);
        (FUEL - budget.fuel.get(), r.map(|_| ()).map_err(|e| e.code()))
    }

    #[test]
    fn native_work_on_large_values_is_charged_to_the_render_fuel() {
        // Each of these runs a few thousand instructions, but each instruction works
        // natively on a 256 KiB value: uncharged, a loop of them ran for minutes (a 1 MiB
        // string searched 1,000 times took 10 s in a debug build, indexed 1,000 times 58
        // s). Charged to the fuel in proportion to the size of the operands, the render
        // stops with a limit after a bounded amount of work.
        let big = "x".repeat(1 << 18);
        let list: Vec<String> = (0..(1 << 14)).map(|i| format!("item {i}")).collect();
        let vars = json!({"big": big, "list": list, "other": list, "k": "x"});
        let hostile = [
            "{% if 'zz' in big %}{% endif %}",
            "{% if 'zz' not in big %}{% endif %}",
            "{% if list == other %}{% endif %}",
            "{% if list != other %}{% endif %}",
            "{% if list < other %}{% endif %}",
            "{% if 'zz' in list %}{% endif %}",
            "{% if list == other == list %}{% endif %}",
            "{% if big|length > 3 %}{% endif %}",
            "{% if big[-1] %}{% endif %}",
            "{% if big[1:2] %}{% endif %}",
            "{% if (list|sort)[0] %}{% endif %}",
            "{% if list|unique|list %}{% endif %}",
            "{% if list|reverse|first %}{% endif %}",
            "{% if list|join(',') %}{% endif %}",
            "{% if big|replace('y', 'z') %}{% endif %}",
            "{% if list|map('upper')|first %}{% endif %}",
            "{% if list|select('eq', 'a')|list %}{% endif %}",
            "{% if list|tojson %}{% endif %}",
            "{% if big|upper %}{% endif %}",
            "{% if (big ~ '')|length %}{% endif %}",
            "{% if list is in([list]) %}{% endif %}",
            "{% if list is eq(other) %}{% endif %}",
            "{% if big is startingwith(big) %}{% endif %}",
            "{% if loop.changed(big) %}{% endif %}",
            "{% do loop.changed(big) %}",
            "{% if dict(a=big) %}{% endif %}",
        ];
        for body in hostile {
            let template = format!("{{% for i in range(200) %}}{body}{{% endfor %}}");
            let compiled = CompiledPack::compile(&pack(json!({"template": template}))).unwrap();
            // An eighth of a render's fuel: a quicker test, the same charge. The loop's
            // own instructions (a few thousand) fit in it many times over: only the
            // charged work can exhaust it.
            let budget = RenderBudget::with_fuel(FUEL / 8, MAX_OUTPUT_BYTES);
            let (r, work) = crate::work::counted(|| {
                compiled.render_within(&vars, true, &BTreeSet::new(), &budget).map(|_| ())
            });
            assert_eq!(r.map_err(|e| e.code()), Err(Code::TemplateLimitExceeded), "{body}");
            // Uncharged, the 200 iterations ran to the end and the render succeeded; charged,
            // it stops once the native work (counted as it is charged) has spent the fuel.
            assert!(work.steps > 0, "{body}: the native work is charged");
            // (Plus the charge that went past it: at most one operand, 256 KiB, and a chunk.)
            let most = (FUEL / 8) * bounds::WORK_PER_FUEL + 2 * (1 << 18);
            assert!(work.steps <= most, "{body}: {work:?}");
        }
        // Once, the same work fits the budget and costs fuel in proportion to the operand.
        let cost = |n: usize, body: &str| {
            let vars = json!({"big": "x".repeat(n), "list": vec!["ab"; n / 4], "k": "x"});
            let (spent, r) = fuel_spent(body, &vars);
            assert_eq!(r, Ok(()), "{body}");
            spent
        };
        for body in [
            "{% if 'zz' in big %}{% endif %}",
            "{% if list == list %}{% endif %}",
            "{{ list | sort | length }}",
            "{{ big[3] }}",
        ] {
            let (small, large) = (cost(1 << 14, body), cost(1 << 16, body));
            let work = (1 << 16) - (1 << 14);
            assert!(
                large - small >= work / bounds::WORK_PER_FUEL / 2,
                "{body}: {small} then {large} fuel"
            );
        }
        // Cheap operations on small values stay cheap: a comparison of short strings,
        // a map looked up by key.
        let (spent, r) = fuel_spent(
            "{% for k in keys %}{% if k in map and map[k] == 'v' %}{% endif %}{% endfor %}",
            &json!({"keys": (0..2000).map(|i| format!("k{i}")).collect::<Vec<_>>(),
                    "map": (0..2000).map(|i| (format!("k{i}"), json!("v"))).collect::<serde_json::Map<_, _>>()}),
        );
        assert_eq!(r, Ok(()));
        assert!(spent < FUEL / 2, "{spent}");
    }

    #[test]
    fn native_work_costs_linear_time() {
        let template = "{% if 'zz' in big %}{% endif %}{{ list | join(',') | length }}{{ big[n] }}{% if list == list %}{% endif %}";
        let compiled = CompiledPack::compile(&pack(json!({"template": template}))).unwrap();
        let render = |n: usize| {
            let vars = json!({"big": "ab".repeat(n), "list": vec!["ab"; n / 8], "n": n});
            compiled.render(&vars, true).unwrap();
        };
        assert_linear("native work", render, 12_000);
    }

    #[test]
    fn failing_templates_charge_the_fuel_they_consumed() {
        // Renders sharing a budget (the examples of one file): each burns most of a
        // template's fuel, then fails. Uncharged, every one of them ran for free.
        let burn = "{% for i in range(30000) %}{% endfor %}";
        let budget = RenderBudget::for_file();
        let codes: Vec<Code> = (0..40)
            .map(|_| {
                let template = format!("{burn}{{{{ missing }}}}");
                let compiled = CompiledPack::compile(&pack(json!({"template": template}))).unwrap();
                compiled
                    .render_within(&json!({}), true, &BTreeSet::new(), &budget)
                    .unwrap_err()
                    .code()
            })
            .collect();
        assert_eq!(codes[0], Code::TemplateVariableMissing);
        assert_eq!(codes[39], Code::TemplateLimitExceeded, "{codes:?}");
        // Failing in pactum's checks (printing a missing value) charges what was consumed,
        // not more: many cheap failures do not exhaust a file's budget.
        let budget = RenderBudget::for_file();
        let compiled = CompiledPack::compile(&pack(json!({"template": "{{ missing }}"}))).unwrap();
        for _ in 0..200 {
            let e =
                compiled.render_within(&json!({}), true, &BTreeSet::new(), &budget).unwrap_err();
            assert_eq!(e.code(), Code::TemplateVariableMissing);
        }
        // Iterating a missing value fails in pactum's check too: cheap.
        let (spent, r) = fuel_spent("{% for x in missing %}{% endfor %}", &json!({}));
        assert_eq!(r, Err(Code::TemplateVariableMissing));
        assert!(spent < 100, "{spent}");
        // Running out of engine fuel, or an error the engine raises without saying how far
        // it got, charges a whole template's fuel.
        for template in [
            "{% for a in range(100000) %}{% for b in range(100) %}{% endfor %}{% endfor %}",
            "{{ missing.x }}",
        ] {
            let (spent, r) = fuel_spent(template, &json!({}));
            assert!(
                matches!(r, Err(Code::TemplateLimitExceeded | Code::TemplateVariableMissing)),
                "{template}: {r:?}"
            );
            assert_eq!(spent, FUEL, "{template}");
        }
        // Native work before a failure is charged too.
        let (spent, r) = fuel_spent(
            "{% if 'zz' in big %}{% endif %}{{ missing }}",
            &json!({"big": "x".repeat(1 << 20)}),
        );
        assert_eq!(r, Err(Code::TemplateVariableMissing));
        assert!(spent >= (1 << 20) / bounds::WORK_PER_FUEL, "{spent}");
    }

    #[test]
    fn syntax_errors_are_pack_errors() {
        let p = pack(json!({"template": "{% if %}"}));
        let e = CompiledPack::compile(&p).unwrap_err();
        assert_eq!(e.code(), Code::PromptPackInvalid);
    }

    #[test]
    fn structured_packs_split_system_and_user_in_fixed_order() {
        let p = pack(json!({"sections": {
            "task": "Classify {{ text }}",
            "output_format": "JSON",
            "role": "You are a classifier.",
            "context": "Ctx",
            "constraints": "Be brief.",
            "required_inputs": {"text": "the text"},
            "expected_outputs": ["out/a.md"]
        }}));
        let m = render(&p, &json!({"text": "hi"}), true).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].role, Role::System);
        assert_eq!(
            m[0].content,
            "## 1. Role\nYou are a classifier.\n\n## 2. Constraints\nBe brief.\n\n## 3. Output Format\nJSON"
        );
        assert_eq!(
            m[1].content,
            format!(
                "## 1. Required Inputs\n- **text**: the text\n\n## 2. Context\nCtx\n\n## 3. Task\nClassify hi\n\n## 4. Expected Outputs\n- `out/a.md`\n\n{FILE_RESULT_FORMAT}"
            )
        );
        let joined = render(&p, &json!({"text": "hi"}), false).unwrap();
        assert_eq!(joined.len(), 1);
        assert!(joined[0].content.starts_with("## 1. Role"));
        assert!(joined[0].content.contains("## 6. Task\nClassify hi"));
        let only_task =
            render(&pack(json!({"sections": {"task": "T"}})), &json!({}), true).unwrap();
        assert_eq!(only_task, vec![Message::user("## 1. Task\nT")]);
    }

    #[test]
    fn variables_lists_what_templates_read() {
        let p = pack(
            json!({"sections": {"task": "{{ a }} {% for x in xs %}{{ x.y }}{% endfor %}", "role": "{{ b }}"}}),
        );
        let vars = CompiledPack::compile(&p).unwrap().variables();
        assert_eq!(vars.into_iter().collect::<Vec<_>>(), ["a", "b", "xs"]);
        assert_eq!(
            declared_inputs(Some(&json!({"properties": {"a": {}}})))
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            ["a"]
        );
        assert!(declared_inputs(Some(&json!({"$ref": "#/x"}))).is_none());
    }

    fn tree(sections: Value) -> PromptPack {
        pack(json!({ "sections": sections }))
    }

    fn tree_error(sections: Value) -> Error {
        let mut v = json!({"prompt_pack_id": "PRM-T-001", "version": "1.0.0"});
        v["sections"] = sections;
        match PromptPack::from_value(&v, "x", Path::new("p.json")) {
            Ok(p) => CompiledPack::compile(&p).unwrap_err(),
            Err(e) => e,
        }
    }

    #[test]
    fn a_missing_variable_in_a_section_is_named_with_the_sections_key() {
        let p = tree(json!([
            {"key": "intro", "title": "Intro", "template": "Hi."},
            {"key": "task", "title": "Task", "template": "x", "children": [
                {"key": "careful", "title": "Careful", "template": "y", "enabled": "mode == 'careful'"},
                {"key": "terse", "title": "Terse", "template": "Style: {{ style }}"}
            ]}
        ]));
        let compiled = CompiledPack::compile(&p).unwrap();
        let message = compiled.render(&json!({}), true).unwrap_err().to_string();
        assert!(
            message.contains("section task.careful, enabled") && message.contains("uses `mode`"),
            "{message}"
        );
        let message = compiled.render(&json!({"mode": "fast"}), true).unwrap_err().to_string();
        assert!(
            message.contains("section task.terse, template") && message.contains("uses `style`"),
            "{message}"
        );
    }

    #[test]
    fn trees_number_densely_per_message_and_level() {
        let p = tree(json!([
            {"key": "role", "title": "Role", "template": "You help.", "message": "system"},
            {"key": "intro", "title": "Intro", "template": "Hi {{ name }}."},
            {"key": "careful", "title": "Careful", "template": "Slowly.", "enabled": "mode == 'careful'"},
            {"key": "ref", "title": "Reference", "template": "", "children": [
                {"key": "a", "title": "A", "template": "Alpha", "enabled": "mode != 'fast'"},
                {"key": "b", "title": "B", "template": "Beta", "children": [
                    {"key": "c", "title": "C", "template": "Gamma"}
                ]}
            ]}
        ]));
        let fast = render(&p, &json!({"name": "Ada", "mode": "fast"}), true).unwrap();
        assert_eq!(fast[0], Message::system("## 1. Role\nYou help."));
        assert_eq!(
            fast[1].content,
            "## 1. Intro\nHi Ada.\n\n## 2. Reference\n\n### 2.1. B\nBeta\n\n#### 2.1.1. C\nGamma"
        );
        let careful = render(&p, &json!({"name": "Ada", "mode": "careful"}), true).unwrap();
        assert_eq!(
            careful[1].content,
            "## 1. Intro\nHi Ada.\n\n## 2. Careful\nSlowly.\n\n## 3. Reference\n\n### 3.1. A\nAlpha\n\n### 3.2. B\nBeta\n\n#### 3.2.1. C\nGamma"
        );
        // Without system messages: one message, system sections first, numbered on.
        let joined = render(&p, &json!({"name": "Ada", "mode": "fast"}), false).unwrap();
        assert_eq!(joined.len(), 1);
        assert!(
            joined[0].content.starts_with("## 1. Role\nYou help.\n\n## 2. Intro"),
            "{}",
            joined[0].content
        );
        assert!(joined[0].content.contains("#### 3.1.1. C"), "{}", joined[0].content);
        // The canonical form as an explicit tree renders the same text.
        let canonical =
            pack(json!({"sections": {"role": "R {{ x }}", "task": "T", "context": "C"}}));
        let explicit = tree(json!([
            {"key": "role", "title": "Role", "template": "R {{ x }}", "message": "system"},
            {"key": "context", "title": "Context", "template": "C"},
            {"key": "task", "title": "Task", "template": "T"}
        ]));
        for system in [true, false] {
            assert_eq!(
                render(&canonical, &json!({"x": 1}), system).unwrap(),
                render(&explicit, &json!({"x": 1}), system).unwrap()
            );
        }
    }

    #[test]
    fn summarized_sections_point_to_a_file_or_to_open_sections() {
        let p = tree(json!([
            {"key": "task", "title": "Task", "template": "Answer {{ q }}."},
            {"key": "reference", "title": "Reference", "template": "Overview.",
             "visibility": "summary", "summary": "API docs for {{ q }}.", "children": [
                {"key": "api", "title": "API", "template": "GET /x"}
            ]},
            {"key": "math", "title": "Math", "template": "Use the calculator.",
             "visibility": "summary", "summary": "Arithmetic help.", "tools": ["calculator"]}
        ]));
        let c = CompiledPack::compile(&p).unwrap();
        let r = c.render_open(&json!({"q": "pets"}), true, &BTreeSet::new()).unwrap();
        assert_eq!(
            r.messages[0].content,
            "## 1. Task\nAnswer pets.\n\n## 2. Reference\nAPI docs for pets.\n\n[This section is summarized. Full content is available at `/context/reference.md`.]\n\n## 3. Math\nArithmetic help.\n\n[This section is summarized. To view full content, call `open_sections` with key \"math\".]"
        );
        assert_eq!(r.tools, ["read_file", "open_sections"]);
        assert_eq!(
            r.files,
            vec![ContextFile {
                path: "context/reference.md".into(),
                content: "# Reference\nOverview.\n\n## 1. API\nGET /x\n".into()
            }]
        );
        let open: BTreeSet<String> = ["math".to_string()].into();
        let r = c.render_open(&json!({"q": "pets"}), true, &open).unwrap();
        assert!(
            r.messages[0].content.ends_with("## 3. Math\nUse the calculator."),
            "{}",
            r.messages[0].content
        );
        assert_eq!(r.tools, ["read_file", "calculator"]);
        // Opening a child opens its ancestors.
        let open: BTreeSet<String> = ["reference.api".to_string()].into();
        let r = c.render_open(&json!({"q": "pets"}), true, &open).unwrap();
        assert!(
            r.messages[0].content.contains("## 2. Reference\nOverview.\n\n### 2.1. API\nGET /x")
        );
        assert_eq!(c.section_path("reference.api").unwrap(), ["reference", "reference.api"]);
        assert!(c.section_path("reference.nope").is_none());
        assert!(c.section_path("ref").is_none());
        assert_eq!(c.declared_tools(), [("math".to_string(), "calculator".to_string())]);
        let vars: Vec<(String, Vec<String>)> = c
            .variables_by_template()
            .into_iter()
            .map(|(p, v)| (p, v.into_iter().collect::<Vec<String>>()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        assert_eq!(
            vars,
            [
                ("/sections/0/template".to_string(), vec!["q".to_string()]),
                ("/sections/1/summary".to_string(), vec!["q".to_string()])
            ]
        );
    }

    #[test]
    fn an_enabled_expression_over_an_absent_variable_names_the_variable() {
        // Seed defect (issue 27): the message named `if`, the template's own wrapper.
        let p = tree(json!([{"key": "task", "title": "Task", "template": "Hi"},
                            {"key": "x", "title": "X", "enabled": "severity == 'sev1'", "template": "urgent"}]));
        let text = render(&p, &json!({}), true).unwrap_err().to_string();
        assert!(text.contains("section x, enabled` uses `severity`"), "{text}");
        assert!(!text.contains("`if`"), "{text}");
    }

    #[test]
    fn bad_trees_are_pack_errors_at_their_pointer() {
        let cases = [
            (
                json!([{"key": "a", "title": "A"}, {"key": "a", "title": "B"}]),
                "/sections/1/key",
                "twice",
            ),
            (json!([{"key": "Bad Key", "title": "A"}]), "/sections/0/key", ""),
            (
                json!([{"key": "a", "title": "A", "visibility": "summary"}]),
                "/sections/0/summary",
                "required",
            ),
            (
                json!([{"key": "a", "title": "A", "enabled": "mode =="}]),
                "/sections/0/enabled",
                "compile",
            ),
            (
                json!([{"key": "a", "title": "A", "enabled": "{{ x }}"}]),
                "/sections/0/enabled",
                "expression",
            ),
            (
                json!([{"key": "a", "title": "A", "message": "system", "children": [
                {"key": "b", "title": "B", "message": "user"}]}]),
                "/sections/0/children/0/message",
                "parent",
            ),
            (json!([]), "/sections", ""),
        ];
        for (sections, pointer, words) in cases {
            let e = tree_error(sections.clone());
            assert_eq!(e.code(), Code::PromptPackInvalid, "{sections}: {e}");
            assert!(
                e.findings().iter().any(|f| f.pointer == pointer && f.message.contains(words)),
                "{sections}: {:?}",
                e.findings()
            );
        }
        // Nested past the bound: refused, not recursed into.
        let mut deep = json!({"key": "leaf", "title": "Leaf"});
        for _ in 0..30 {
            deep = json!({"key": "n", "title": "N", "children": [deep]});
        }
        let e = tree_error(json!([deep]));
        assert_eq!(e.code(), Code::PromptPackInvalid);
        assert!(
            e.findings().iter().any(|f| f.message.contains("deeper than")),
            "{:?}",
            e.findings()
        );
        // Too many sections.
        let many: Vec<Value> =
            (0..600).map(|i| json!({"key": format!("s{i}"), "title": "S"})).collect();
        let e = tree_error(Value::Array(many));
        assert!(e.findings().iter().any(|f| f.message.contains("at most")), "{:?}", e.findings());
    }
}
