//! Tools the kernel can call (SPEC §8.4): each has a name, a description, an input and an
//! output JSON Schema, and an invoke function. Arguments are validated against the input
//! schema before the call (`tool_input_invalid`), an unknown or disallowed name is
//! `tool_not_found`, and an error from the tool (or output that breaks its own output
//! schema) is `tool_failed`.
//!
//! Built in: `echo`, `calculator`, and the memory tools `memory_write`, `memory_read`,
//! `memory_search`. A work order's `tools` list restricts what a run may use.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::schema::Validator;
use serde_json::{Value, json};

use crate::error::{Error, Finding, Result};
use crate::executor::calculator;
use crate::executor::memory::Memory;

/// One tool.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn input_schema(&self) -> Value;
    fn output_schema(&self) -> Value;
    /// Runs the tool on arguments that already fit its input schema.
    fn invoke(&self, arguments: &Value) -> std::result::Result<Value, String>;
}

/// A tool made of a name, a description, two schemas and a closure — the quickest way to
/// give a kernel run a tool of your own ([`crate::executor::Runner::run_with_tools`]).
///
/// ```
/// use pactum::executor::tools::{FnTool, Tool};
/// use serde_json::json;
///
/// let words = FnTool::new(
///     "word_count",
///     "Counts the words of a text.",
///     json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}),
///     json!({"type": "object", "required": ["words"]}),
///     |args| Ok(json!({"words": args["text"].as_str().unwrap_or("").split_whitespace().count()})),
/// );
/// assert_eq!(words.invoke(&json!({"text": "to be or not"})).unwrap(), json!({"words": 4}));
/// ```
pub struct FnTool<F> {
    name: String,
    description: String,
    input_schema: Value,
    output_schema: Value,
    invoke: F,
}

impl<F> FnTool<F>
where
    F: Fn(&Value) -> std::result::Result<Value, String> + Send + Sync,
{
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        output_schema: Value,
        invoke: F,
    ) -> FnTool<F> {
        FnTool {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema,
            invoke,
        }
    }
}

impl<F> Tool for FnTool<F>
where
    F: Fn(&Value) -> std::result::Result<Value, String> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        self.input_schema.clone()
    }
    fn output_schema(&self) -> Value {
        self.output_schema.clone()
    }
    fn invoke(&self, arguments: &Value) -> std::result::Result<Value, String> {
        (self.invoke)(arguments)
    }
}

struct Registered {
    tool: Arc<dyn Tool>,
    input: Arc<Validator>,
    output: Arc<Validator>,
    /// Where the tool comes from ("the built-in tools", "tool server `crm`"), for a clash.
    owner: String,
}

/// The names of the built-in tools.
pub const BUILTIN_NAMES: &[&str] =
    &["calculator", "echo", "memory_read", "memory_search", "memory_write"];

const BUILTIN_OWNER: &str = "the built-in tools";

/// The tools of progressive disclosure (SPEC §15), which a section's `tools` may name: no
/// other tool may take their names either.
pub const DISCLOSURE_NAMES: &[&str] = &[crate::render::OPEN_SECTIONS, crate::render::READ_FILE];

/// Who holds a name no added tool may take (case-insensitively), if anyone does.
pub fn reserved_by(name: &str) -> Option<&'static str> {
    if BUILTIN_NAMES.iter().any(|b| b.eq_ignore_ascii_case(name)) {
        Some(BUILTIN_OWNER)
    } else if DISCLOSURE_NAMES.iter().any(|b| b.eq_ignore_ascii_case(name)) {
        Some("pactum's disclosure tools")
    } else {
        None
    }
}

/// The tools a run may call, with their compiled schemas.
pub struct ToolRegistry {
    tools: BTreeMap<String, Registered>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    pub fn empty() -> ToolRegistry {
        ToolRegistry { tools: BTreeMap::new() }
    }

    /// `echo`, `calculator` and the memory tools over `memory`.
    pub fn builtin(memory: Arc<Memory>) -> ToolRegistry {
        let mut r = ToolRegistry::empty();
        let tools: [Arc<dyn Tool>; 5] = [
            Arc::new(Echo),
            Arc::new(Calculator),
            Arc::new(MemoryWrite(memory.clone())),
            Arc::new(MemoryRead(memory.clone())),
            Arc::new(MemorySearch(memory)),
        ];
        // The built-ins' schemas never change: compiled once per process (SPEC §28), each
        // registry gets the same validators over its own memory.
        static COMPILED: std::sync::OnceLock<Vec<(Arc<Validator>, Arc<Validator>)>> =
            std::sync::OnceLock::new();
        let compiled = COMPILED.get_or_init(|| {
            tools
                .iter()
                .filter_map(|t| {
                    let input = crate::schema::compile_detached(&t.input_schema()).ok()?;
                    let output = crate::schema::compile_detached(&t.output_schema()).ok()?;
                    Some((Arc::new(input), Arc::new(output)))
                })
                .collect()
        });
        // Built-in schemas are tested to compile.
        for (tool, (input, output)) in tools.into_iter().zip(compiled) {
            r.tools.insert(
                tool.name().to_string(),
                Registered {
                    tool,
                    input: input.clone(),
                    output: output.clone(),
                    owner: BUILTIN_OWNER.to_string(),
                },
            );
        }
        r
    }

    /// Adds a tool; its schemas must compile.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<()> {
        self.register_as(tool, "the caller's tools")
    }

    fn register_as(&mut self, tool: Arc<dyn Tool>, owner: &str) -> Result<()> {
        let compile = |schema: Value, which: &str| {
            crate::schema::compile_detached(&schema).map_err(|findings| Error::ToolFailed {
                tool: tool.name().to_string(),
                message: format!(
                    "its {which} schema does not compile: {}",
                    findings.iter().map(|f| f.message.as_str()).collect::<Vec<_>>().join("; ")
                ),
            })
        };
        let input = Arc::new(compile(tool.input_schema(), "input")?);
        let output = Arc::new(compile(tool.output_schema(), "output")?);
        self.tools.insert(
            tool.name().to_string(),
            Registered { tool, input, output, owner: owner.to_string() },
        );
        Ok(())
    }

    /// Adds a tool from `owner` ("tool server `crm`"); a name already registered (a
    /// built-in's, another server's) is refused: `tool_name_taken`.
    pub fn register_new(&mut self, tool: Arc<dyn Tool>, owner: &str) -> Result<()> {
        // Names that differ only in case are one name: a model (or a person) cannot tell
        // `Memory_Write` from `memory_write`.
        let taken = self
            .tools
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(tool.name()))
            .map(|(_, t)| t.owner.clone())
            .or_else(|| reserved_by(tool.name()).map(str::to_string));
        if let Some(taken) = taken {
            return Err(Error::ToolNameTaken {
                tool: tool.name().to_string(),
                first: taken,
                second: owner.to_string(),
                also: Vec::new(),
            });
        }
        self.register_as(tool, owner)
    }

    /// Keeps only the tools named in `allow`; names it does not have are ignored.
    pub fn retain(&mut self, allow: &[String]) {
        self.tools.retain(|name, _| allow.contains(name));
    }

    /// Keeps only the tools in `allow`; a name that is not registered is an error.
    pub fn restrict(mut self, allow: &[String]) -> Result<ToolRegistry> {
        for name in allow {
            if !self.tools.contains_key(name) {
                return Err(Error::ToolNotFound { tool: name.clone(), available: self.names() });
            }
        }
        self.tools.retain(|name, _| allow.contains(name));
        Ok(self)
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The input schema of a tool.
    pub fn input_schema(&self, name: &str) -> Option<Value> {
        self.tools.get(name).map(|r| r.tool.input_schema())
    }

    /// Name, description and input schema of every tool (what a plan prompt shows).
    pub fn describe(&self) -> Value {
        Value::Array(
            self.tools
                .values()
                .map(|r| json!({"name": r.tool.name(), "description": r.tool.description(), "input_schema": r.tool.input_schema()}))
                .collect(),
        )
    }

    /// Checks a call without running it.
    pub fn check(&self, name: &str, arguments: &Value) -> Result<()> {
        let Some(r) = self.tools.get(name) else {
            return Err(Error::ToolNotFound { tool: name.to_string(), available: self.names() });
        };
        let findings: Vec<Finding> =
            r.input.check(arguments).map_err(|too| Error::ValidationTooCostly {
                what: format!("the arguments of tool `{name}`"),
                detail: too.to_string(),
            })?;
        if findings.is_empty() {
            Ok(())
        } else {
            Err(Error::ToolInputInvalid { tool: name.to_string(), findings })
        }
    }

    /// Validates the arguments, runs the tool and validates its output.
    pub fn call(&self, name: &str, arguments: &Value) -> Result<Value> {
        self.check(name, arguments)?;
        let Some(r) = self.tools.get(name) else {
            return Err(Error::ToolNotFound { tool: name.to_string(), available: self.names() });
        };
        let output = r
            .tool
            .invoke(arguments)
            .map_err(|message| Error::ToolFailed { tool: name.to_string(), message })?;
        let findings = r.output.check(&output).map_err(|too| Error::ValidationTooCostly {
            what: format!("the output of tool `{name}`"),
            detail: too.to_string(),
        })?;
        if let Some(f) = findings.first() {
            return Err(Error::ToolFailed {
                tool: name.to_string(),
                message: format!(
                    "its output does not fit its output schema at {}: {}",
                    f.pointer, f.message
                ),
            });
        }
        Ok(output)
    }
}

struct Echo;

impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Returns its text unchanged."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["text"], "additionalProperties": false, "properties": {"text": {"type": "string"}}})
    }
    fn output_schema(&self) -> Value {
        json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}})
    }
    fn invoke(&self, arguments: &Value) -> std::result::Result<Value, String> {
        Ok(json!({"text": arguments.get("text").cloned().unwrap_or(Value::Null)}))
    }
}

struct Calculator;

impl Tool for Calculator {
    fn name(&self) -> &str {
        "calculator"
    }
    fn description(&self) -> &str {
        "Evaluates an arithmetic expression with + - * / % ^ and parentheses."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["expression"], "additionalProperties": false,
               "properties": {"expression": {"type": "string", "minLength": 1, "maxLength": calculator::MAX_LEN}}})
    }
    fn output_schema(&self) -> Value {
        json!({"type": "object", "required": ["result"], "properties": {"result": {"type": "number"}}})
    }
    fn invoke(&self, arguments: &Value) -> std::result::Result<Value, String> {
        let expr = arguments.get("expression").and_then(Value::as_str).unwrap_or_default();
        let v = calculator::evaluate(expr)?;
        // Whole results print as integers: 5 + 10 is 15, not 15.0.
        if v.fract() == 0.0 && v.abs() < 9.0e15 {
            Ok(json!({"result": v as i64}))
        } else {
            Ok(json!({"result": v}))
        }
    }
}

struct MemoryWrite(Arc<Memory>);

impl Tool for MemoryWrite {
    fn name(&self) -> &str {
        "memory_write"
    }
    fn description(&self) -> &str {
        "Stores a value under a key in the run's memory."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["key", "value"], "additionalProperties": false,
               "properties": {"key": {"type": "string", "minLength": 1}, "value": {}}})
    }
    fn output_schema(&self) -> Value {
        json!({"type": "object", "required": ["written"], "properties": {"written": {"type": "boolean"}, "replaced": {"type": "boolean"}}})
    }
    fn invoke(&self, arguments: &Value) -> std::result::Result<Value, String> {
        let key = arguments.get("key").and_then(Value::as_str).unwrap_or_default();
        let value = arguments.get("value").cloned().unwrap_or(Value::Null);
        let replaced = self.0.write(key, value).is_some();
        Ok(json!({"written": true, "replaced": replaced}))
    }
}

struct MemoryRead(Arc<Memory>);

impl Tool for MemoryRead {
    fn name(&self) -> &str {
        "memory_read"
    }
    fn description(&self) -> &str {
        "Reads the value under a key; a missing key gives found: false."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["key"], "additionalProperties": false, "properties": {"key": {"type": "string"}}})
    }
    fn output_schema(&self) -> Value {
        json!({"type": "object", "required": ["found"], "properties": {"found": {"type": "boolean"}, "value": {}}})
    }
    fn invoke(&self, arguments: &Value) -> std::result::Result<Value, String> {
        let key = arguments.get("key").and_then(Value::as_str).unwrap_or_default();
        Ok(match self.0.read(key) {
            Some(value) => json!({"found": true, "value": value}),
            None => json!({"found": false}),
        })
    }
}

struct MemorySearch(Arc<Memory>);

impl Tool for MemorySearch {
    fn name(&self) -> &str {
        "memory_search"
    }
    fn description(&self) -> &str {
        "Lists the entries whose keys start with a prefix."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["prefix"], "additionalProperties": false, "properties": {"prefix": {"type": "string"}}})
    }
    fn output_schema(&self) -> Value {
        json!({"type": "object", "required": ["matches"], "properties": {"matches": {"type": "array"}}})
    }
    fn invoke(&self, arguments: &Value) -> std::result::Result<Value, String> {
        let prefix = arguments.get("prefix").and_then(Value::as_str).unwrap_or_default();
        let matches: Vec<Value> =
            self.0.search(prefix).into_iter().map(|(k, v)| json!({"key": k, "value": v})).collect();
        Ok(json!({"matches": matches}))
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;

    fn registry() -> ToolRegistry {
        ToolRegistry::builtin(Arc::new(Memory::new()))
    }

    #[test]
    fn tools_of_ones_own_sit_next_to_the_builtins_under_other_names() {
        let mut r = ToolRegistry::builtin(Arc::new(Memory::new()));
        let upper = |name: &str| -> Arc<dyn Tool> {
            Arc::new(FnTool::new(
                name,
                "Upper-cases a text.",
                json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}),
                json!({"type": "string"}),
                |args| Ok(json!(args["text"].as_str().unwrap_or("").to_uppercase())),
            ))
        };
        r.register_new(upper("upper"), "the test's tools").unwrap();
        assert_eq!(r.call("upper", &json!({"text": "ab"})).unwrap(), json!("AB"));
        let e = r.call("upper", &json!({"text": 3})).unwrap_err();
        assert_eq!(e.code(), crate::Code::ToolInputInvalid);
        let e = r.register_new(upper("echo"), "the test's tools").unwrap_err();
        assert_eq!(e.code(), crate::Code::ToolNameTaken);
        assert!(e.to_string().contains("the built-in tools and by the test's tools"), "{e}");
        let r = r.restrict(&["upper".to_string()]).unwrap();
        assert_eq!(r.names(), ["upper"]);
    }

    #[test]
    fn builtins_are_registered() {
        assert_eq!(registry().names(), BUILTIN_NAMES);
    }

    #[test]
    fn calls_validate_arguments_and_report_failures() {
        let r = registry();
        assert_eq!(
            r.call("calculator", &json!({"expression": "5 + 10"})).unwrap(),
            json!({"result": 15})
        );
        assert_eq!(
            r.call("calculator", &json!({"expression": "1 / 4"})).unwrap(),
            json!({"result": 0.25})
        );
        assert_eq!(r.call("echo", &json!({"text": "hi"})).unwrap(), json!({"text": "hi"}));
        assert_eq!(
            r.call("calculator", &json!({"expr": "1"})).unwrap_err().code(),
            Code::ToolInputInvalid
        );
        let e = r.call("calculator", &json!({"expression": "1 / 0"})).unwrap_err();
        assert_eq!(e.code(), Code::ToolFailed);
        assert!(e.to_string().contains("division by zero"), "{e}");
        let e = r.call("calculater", &json!({})).unwrap_err();
        assert_eq!(e.code(), Code::ToolNotFound);
        assert!(e.to_string().contains("calculator"), "{e}");
    }

    #[test]
    fn memory_tools_share_one_store() {
        let r = registry();
        assert_eq!(r.call("memory_read", &json!({"key": "a"})).unwrap(), json!({"found": false}));
        r.call("memory_write", &json!({"key": "notes/a", "value": 1})).unwrap();
        r.call("memory_write", &json!({"key": "notes/b", "value": 2})).unwrap();
        assert_eq!(
            r.call("memory_read", &json!({"key": "notes/a"})).unwrap(),
            json!({"found": true, "value": 1})
        );
        let found = r.call("memory_search", &json!({"prefix": "notes/"})).unwrap();
        assert_eq!(found["matches"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn work_orders_can_restrict_tools() {
        let r = registry().restrict(&["calculator".to_string()]).unwrap();
        assert_eq!(r.names(), ["calculator"]);
        assert_eq!(r.call("echo", &json!({"text": "x"})).unwrap_err().code(), Code::ToolNotFound);
        assert_eq!(
            registry().restrict(&["nope".to_string()]).unwrap_err().code(),
            Code::ToolNotFound
        );
    }
}
