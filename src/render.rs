//! Rendering a prompt pack into chat messages (SPEC §3.2).
//!
//! Templates use Jinja syntax through minijinja, configured for prompts:
//! - **strict**: printing or iterating a variable with no value is an error
//!   (`template_variable_missing`), never an empty string. Truthiness tests
//!   (`{% if history %}`), `is defined` and `| default(..)` work on absent optional inputs;
//! - **verbatim**: values are inserted as they are and never expanded again (a value
//!   containing `{{ x }}` stays literal); no HTML escaping; strings print as-is, every
//!   other value prints as compact JSON;
//! - **bounded**: execution has fuel, recursion is limited, output is capped, and every
//!   value a template builds is bounded in size ([`bounds`]), so a hostile template stops
//!   with `template_limit_exceeded`; constructs that capture output outside the cap
//!   (macros, set and filter blocks, recursive loops, includes) are refused.
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
use crate::pack::{PackBody, PromptPack};

pub mod bounds;

/// Instructions a render may execute before it is stopped.
pub const FUEL: u64 = 200_000;
/// Nesting of macros, includes and loops.
pub const RECURSION_LIMIT: usize = 64;
/// The largest prompt one template may produce.
pub const MAX_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// The slots of a structured pack, in rendering order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Role,
    Constraints,
    OutputFormat,
    RequiredInputs,
    Context,
    Task,
    ExpectedOutputs,
}

impl Slot {
    fn title(self) -> &'static str {
        match self {
            Slot::Role => "Role",
            Slot::Constraints => "Constraints",
            Slot::OutputFormat => "Output Format",
            Slot::RequiredInputs => "Required Inputs",
            Slot::Context => "Context",
            Slot::Task => "Task",
            Slot::ExpectedOutputs => "Expected Outputs",
        }
    }

    fn is_system(self) -> bool {
        matches!(self, Slot::Role | Slot::Constraints | Slot::OutputFormat)
    }
}

/// What one slot holds once compiled.
enum Part {
    /// A template, by its name in the environment.
    Template(String),
    /// Literal text (lists the pack spells out).
    Literal(String),
}

/// A pack compiled for rendering.
pub struct CompiledPack {
    env: Environment<'static>,
    key: String,
    parts: Vec<(Slot, Part)>,
    passthrough: bool,
}

impl std::fmt::Debug for CompiledPack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledPack").field("key", &self.key).finish_non_exhaustive()
    }
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(RECURSION_LIMIT);
    // minijinja's debug mode defaults to the build profile; pinned off so that errors, their
    // messages and rendering cost are the same in debug and release builds (names of missing
    // variables come from the template source pactum keeps, see `undefined_name`).
    env.set_debug(false);
    bounds::install(&mut env);
    env.set_formatter(|out, _state, value| {
        if value.is_undefined() {
            return Err(minijinja::Error::new(
                ErrorKind::UndefinedError,
                "undefined value printed",
            ));
        }
        if let Some(s) = value.as_str() {
            out.write_str(s)
                .map_err(|_| minijinja::Error::new(ErrorKind::WriteFailure, "write failed"))
        } else {
            let json = serde_json::to_string(value).map_err(|e| {
                minijinja::Error::new(ErrorKind::BadSerialization, "value cannot be printed")
                    .with_source(e)
            })?;
            out.write_str(&json)
                .map_err(|_| minijinja::Error::new(ErrorKind::WriteFailure, "write failed"))
        }
    });
    env
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
    let name: String =
        text.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.').collect();
    (!name.is_empty()).then_some(name)
}

impl CompiledPack {
    /// Compiles every template of a pack. A syntax error is `prompt_pack_invalid`.
    pub fn compile(pack: &PromptPack) -> Result<CompiledPack> {
        let mut env = environment();
        let key = pack.key();
        let mut parts = Vec::new();
        let mut literals = Vec::new();
        let mut add = |slot: Slot, pointer: &str, source: &str| -> Result<()> {
            let name = format!("{key}{pointer}");
            let source =
                bounds::prepare(source, &name).map_err(|refused| Error::SchemaInvalid {
                    doc: crate::error::DocKind::PromptPack,
                    path: pack.path.clone(),
                    findings: vec![crate::error::Finding::new(
                        pointer,
                        format!("{} (template line {})", refused.message, refused.line),
                    )],
                })?;
            env.add_template_owned(name.clone(), source).map_err(|e| Error::SchemaInvalid {
                doc: crate::error::DocKind::PromptPack,
                path: pack.path.clone(),
                findings: vec![crate::error::Finding::new(
                    pointer,
                    format!(
                        "template does not compile: {}{}",
                        e.detail().unwrap_or("syntax error"),
                        e.line().map(|l| format!(" (template line {l})")).unwrap_or_default()
                    ),
                )],
            })?;
            parts.push((slot, Part::Template(name)));
            Ok(())
        };
        let passthrough = match &pack.body {
            PackBody::Template(t) => {
                add(Slot::Task, "/template", t)?;
                true
            }
            PackBody::Sections(s) => {
                if let Some(t) = &s.role {
                    add(Slot::Role, "/sections/role", t)?;
                }
                if let Some(t) = &s.constraints {
                    add(Slot::Constraints, "/sections/constraints", t)?;
                }
                if let Some(t) = &s.output_format {
                    add(Slot::OutputFormat, "/sections/output_format", t)?;
                }
                if !s.required_inputs.is_empty() {
                    let list: Vec<String> = s
                        .required_inputs
                        .iter()
                        .map(|(name, d)| format!("- **{name}**: {d}"))
                        .collect();
                    literals.push((Slot::RequiredInputs, Part::Literal(list.join("\n"))));
                }
                if let Some(t) = &s.context {
                    add(Slot::Context, "/sections/context", t)?;
                }
                add(Slot::Task, "/sections/task", &s.task)?;
                if !s.expected_outputs.is_empty() {
                    let list: Vec<String> =
                        s.expected_outputs.iter().map(|p| format!("- `{p}`")).collect();
                    literals.push((Slot::ExpectedOutputs, Part::Literal(list.join("\n"))));
                }
                false
            }
        };
        parts.extend(literals);
        // Fixed order regardless of how the pack lists its sections.
        let order = [
            Slot::Role,
            Slot::Constraints,
            Slot::OutputFormat,
            Slot::RequiredInputs,
            Slot::Context,
            Slot::Task,
            Slot::ExpectedOutputs,
        ];
        parts.sort_by_key(|(slot, _)| order.iter().position(|s| s == slot));
        Ok(CompiledPack { env, key, parts, passthrough })
    }

    /// The top-level variables the templates read that they do not set themselves.
    pub fn variables(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for (_, part) in &self.parts {
            if let Part::Template(name) = part
                && let Ok(t) = self.env.get_template(name)
            {
                out.extend(bounds::user_variables(t.undeclared_variables(false)));
            }
        }
        out
    }

    /// The variables each template reads, by the template's pointer in the pack.
    pub fn variables_by_template(&self) -> Vec<(String, BTreeSet<String>)> {
        let prefix_len = self.key.len();
        self.parts
            .iter()
            .filter_map(|(_, part)| match part {
                Part::Template(name) => self.env.get_template(name).ok().map(|t| {
                    let pointer = name.get(prefix_len..).unwrap_or(name).to_string();
                    (pointer, bounds::user_variables(t.undeclared_variables(false)).collect())
                }),
                Part::Literal(_) => None,
            })
            .collect()
    }

    fn render_part(&self, name: &str, ctx: &JinjaValue) -> Result<String> {
        let template =
            self.env.get_template(name).map_err(|e| template_error(&self.env, name, &e))?;
        bounds::begin_render();
        let mut out = Capped { buf: Vec::with_capacity(512) };
        template
            .render_captured_to(ctx.clone(), &mut out)
            .map_err(|e| template_error(&self.env, name, &e))?;
        String::from_utf8(out.buf).map_err(|_| Error::TemplateRender {
            template: name.to_string(),
            message: "rendered text is not UTF-8".into(),
        })
    }

    /// Renders the pack with `variables` (a JSON object). `system_messages` says whether
    /// the provider takes a separate system message.
    pub fn render(&self, variables: &Value, system_messages: bool) -> Result<Vec<Message>> {
        let ctx = to_jinja(variables, 0);
        if self.passthrough {
            let text = match self.parts.first() {
                Some((_, Part::Template(name))) => self.render_part(name, &ctx)?,
                _ => String::new(),
            };
            return Ok(vec![Message::user(text)]);
        }
        let mut system = Vec::new();
        let mut user = Vec::new();
        for (slot, part) in &self.parts {
            let body = match part {
                Part::Template(name) => self.render_part(name, &ctx)?,
                Part::Literal(text) => text.clone(),
            };
            if slot.is_system() { system.push((*slot, body)) } else { user.push((*slot, body)) }
        }
        let section = |n: usize, slot: Slot, body: &str| {
            format!("## {n}. {}\n{}", slot.title(), body.trim_end())
        };
        let join = |sections: &[(Slot, String)], first: usize| -> String {
            sections
                .iter()
                .enumerate()
                .map(|(i, (slot, body))| section(first + i, *slot, body))
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        if system_messages {
            let mut messages = Vec::with_capacity(2);
            if !system.is_empty() {
                messages.push(Message::system(join(&system, 1)));
            }
            messages.push(Message::user(join(&user, 1)));
            Ok(messages)
        } else {
            let mut all = system;
            all.extend(user);
            Ok(vec![Message::user(join(&all, 1))])
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }
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

/// A writer that refuses to grow past [`MAX_OUTPUT_BYTES`].
struct Capped {
    buf: Vec<u8>,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > MAX_OUTPUT_BYTES {
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
        ] {
            assert_eq!(render_text(template, vars.clone()).unwrap(), expected, "{template}");
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
            "## 1. Required Inputs\n- **text**: the text\n\n## 2. Context\nCtx\n\n## 3. Task\nClassify hi\n\n## 4. Expected Outputs\n- `out/a.md`"
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
}
