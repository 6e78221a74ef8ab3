//! Typed clients (SPEC §25): `pactum generate python` writes Pydantic v2 models of each
//! contract's input and output and a typed function per contract; `pactum generate
//! typescript` the same types as TypeScript declarations. Pure: contracts in, text out.
//!
//! One contract per id is generated: its highest active version (drafts too with
//! `allow_draft`), named from the id (`PRC-CLASSIFY-001` → `Classify001Input`,
//! `Classify001Output`, `classify_001(client, input)`), called as `ID@^MAJOR` (versions of
//! one major share their shape: SPEC §7). The output is deterministic and its header holds
//! a fingerprint of the contracts it came from (their ids, versions and SHA-256), which
//! `validate` compares with the project's (`generated_stale`).
//!
//! JSON Schema → types, the subset contracts use: `type` (one, or a list with `null`),
//! `enum`/`const` (literals), `properties`/`required` (a model or an interface per object,
//! nested ones named after their parent and property), `items`, `additionalProperties`
//! (a map), `anyOf`/`oneOf` (unions), `$ref` to `#/$defs/NAME` or `#/definitions/NAME` (a
//! type per definition); anything else is `Any` / `unknown`. Input models forbid extra
//! fields when the schema does (`additionalProperties: false`), so a type checker rejects a
//! misspelt field before the code runs.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::contract::Contract;

/// The fingerprint of a set of contracts: SHA-256 over their `ID@VERSION SHA256` lines, in
/// id order.
pub fn fingerprint(contracts: &[&Contract]) -> String {
    fingerprint_of_versions(
        contracts.iter().map(|c| (c.id.as_str(), &c.version, c.sha256.as_str())),
    )
}

/// [`fingerprint`] of `(id, version, sha256)` triples (a registry's entries: nothing read).
pub fn fingerprint_of_versions<'a>(
    versions: impl Iterator<Item = (&'a str, &'a semver::Version, &'a str)>,
) -> String {
    let mut lines: Vec<String> =
        versions.map(|(id, version, sha)| format!("{id}@{version} {sha}\n")).collect();
    lines.sort();
    crate::digest::sha256_hex(lines.concat().as_bytes())
}

/// The registry entries typed clients are generated for: per contract id, its highest
/// active version (its highest version, drafts included, with `allow_draft`).
pub fn chosen(
    registry: &crate::registry::Registry,
    allow_draft: bool,
) -> Vec<&crate::registry::Entry> {
    use crate::registry::{EntryKind, State};
    registry
        .ids(EntryKind::Contract)
        .into_iter()
        .filter_map(|id| {
            registry
                .versions(EntryKind::Contract, id)
                .filter(|e| e.state == State::Active || (allow_draft && e.state == State::Draft))
                .max_by(|a, b| a.version.cmp(&b.version))
        })
        .collect()
}

/// The line of a generated file that carries its fingerprint, and how to find it.
pub const FINGERPRINT_MARK: &str = "pactum-fingerprint: ";

/// The fingerprint a generated file's header holds, if it is one.
pub fn fingerprint_of(text: &str) -> Option<&str> {
    text.lines().take(5).find_map(|l| l.split_once(FINGERPRINT_MARK).map(|(_, f)| f.trim()))
}

/// `PRC-CLASSIFY-001` → `Classify001`.
fn type_stem(id: &str) -> String {
    id.split('-')
        .skip(1)
        .map(|part| {
            let lower = part.to_ascii_lowercase();
            let mut c = lower.chars();
            match c.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// `PRC-CLASSIFY-001` → `classify_001`.
fn function_name(id: &str) -> String {
    id.split('-').skip(1).map(str::to_ascii_lowercase).collect::<Vec<_>>().join("_")
}

/// A property name → a Python identifier (and whether it needed changing).
fn python_field(name: &str) -> (String, bool) {
    const KEYWORDS: &[&str] = &[
        "False",
        "None",
        "True",
        "and",
        "as",
        "assert",
        "async",
        "await",
        "break",
        "class",
        "continue",
        "def",
        "del",
        "elif",
        "else",
        "except",
        "finally",
        "for",
        "from",
        "global",
        "if",
        "import",
        "in",
        "is",
        "lambda",
        "nonlocal",
        "not",
        "or",
        "pass",
        "raise",
        "return",
        "try",
        "while",
        "with",
        "yield",
        "model_config",
        "model_fields",
    ];
    let mut out: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if KEYWORDS.contains(&out.as_str()) || out.starts_with("model_") {
        out.push('_');
    }
    let changed = out != name;
    (out, changed)
}

fn py_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// One doc line (the first line of a description), safe inside a docstring or comment.
fn doc_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .replace("\"\"\"", "'''")
        .replace("*/", "* /")
        .trim()
        .to_string()
}

/// Types collected for one contract, in the order they must be declared (dependencies
/// first).
struct Types {
    /// (name, JSON pointer of the schema, schema)
    models: Vec<(String, Value)>,
    defs: BTreeMap<String, Value>,
    named_defs: BTreeMap<String, String>,
}

impl Types {
    fn new(root: &Value, stem: &str) -> Types {
        let mut defs = BTreeMap::new();
        for key in ["$defs", "definitions"] {
            if let Some(map) = root.get(key).and_then(Value::as_object) {
                for (name, schema) in map {
                    defs.insert(format!("#/{key}/{name}"), schema.clone());
                }
            }
        }
        let named_defs = defs
            .keys()
            .map(|k| {
                (
                    k.clone(),
                    format!(
                        "{stem}{}",
                        type_stem(&format!("X-{}", k.rsplit('/').next().unwrap_or(k)))
                    ),
                )
            })
            .collect();
        Types { models: Vec::new(), defs, named_defs }
    }
}

/// Which language a type is written in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lang {
    Python,
    TypeScript,
}

/// The type of `schema` (its models declared into `types` under names from `name`).
fn type_of(schema: &Value, name: &str, types: &mut Types, lang: Lang, depth: usize) -> String {
    let any = if lang == Lang::Python { "Any" } else { "unknown" };
    if depth > 32 {
        return any.into();
    }
    let Some(obj) = schema.as_object() else {
        return any.into();
    };
    if let Some(target) = obj.get("$ref").and_then(Value::as_str) {
        if let (Some(named), Some(def)) =
            (types.named_defs.get(target).cloned(), types.defs.get(target).cloned())
        {
            if !types.models.iter().any(|(n, _)| *n == named) && is_model(&def) {
                // Declared once: placed before its first user.
                types.models.push((named.clone(), Value::Null));
                let index = types.models.len() - 1;
                types.models[index].1 = def.clone();
                return named;
            }
            if is_model(&def) {
                return named;
            }
            return type_of(&def, &named, types, lang, depth + 1);
        }
        return any.into();
    }
    if let Some(value) = obj.get("const") {
        return literal(std::slice::from_ref(value), lang).unwrap_or_else(|| any.into());
    }
    if let Some(values) = obj.get("enum").and_then(Value::as_array) {
        return literal(values, lang).unwrap_or_else(|| any.into());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = obj.get(key).and_then(Value::as_array) {
            let parts: Vec<String> = options
                .iter()
                .enumerate()
                .map(|(i, o)| type_of(o, &format!("{name}{}", i + 1), types, lang, depth + 1))
                .collect();
            return union(parts, lang);
        }
    }
    let kinds: Vec<&str> = match obj.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if obj.contains_key("properties") => vec!["object"],
        _ => vec![],
    };
    if kinds.is_empty() {
        return any.into();
    }
    let parts: Vec<String> = kinds
        .iter()
        .map(|kind| match (*kind, lang) {
            ("string", Lang::Python) => "str".into(),
            ("string", Lang::TypeScript) => "string".into(),
            ("integer", Lang::Python) => "int".into(),
            ("number", Lang::Python) => "float".into(),
            ("integer" | "number", Lang::TypeScript) => "number".into(),
            ("boolean", Lang::Python) => "bool".into(),
            ("boolean", Lang::TypeScript) => "boolean".into(),
            ("null", Lang::Python) => "None".into(),
            ("null", Lang::TypeScript) => "null".into(),
            ("array", _) => {
                let item = obj
                    .get("items")
                    .map(|i| type_of(i, &format!("{name}Item"), types, lang, depth + 1))
                    .unwrap_or_else(|| any.to_string());
                if lang == Lang::Python {
                    format!("List[{item}]")
                } else {
                    format!("Array<{item}>")
                }
            }
            ("object", _) if obj.get("properties").and_then(Value::as_object).is_some() => {
                types.models.push((name.to_string(), schema.clone()));
                name.to_string()
            }
            ("object", _) => {
                let value = match obj.get("additionalProperties") {
                    Some(v @ Value::Object(_)) => {
                        type_of(v, &format!("{name}Value"), types, lang, depth + 1)
                    }
                    _ => any.to_string(),
                };
                if lang == Lang::Python {
                    format!("Dict[str, {value}]")
                } else {
                    format!("Record<string, {value}>")
                }
            }
            _ => any.to_string(),
        })
        .collect();
    union(parts, lang)
}

fn is_model(schema: &Value) -> bool {
    schema.get("properties").and_then(Value::as_object).is_some()
}

fn literal(values: &[Value], lang: Lang) -> Option<String> {
    let parts: Option<Vec<String>> = values
        .iter()
        .map(|v| match v {
            Value::String(s) => Some(py_string(s)),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) if lang == Lang::Python => {
                Some(if *b { "True" } else { "False" }.into())
            }
            Value::Bool(b) => Some(b.to_string()),
            Value::Null if lang == Lang::Python => Some("None".into()),
            Value::Null => Some("null".into()),
            _ => None,
        })
        .collect();
    let parts = parts?;
    Some(match lang {
        Lang::Python => format!("Literal[{}]", parts.join(", ")),
        Lang::TypeScript => parts.join(" | "),
    })
}

fn union(mut parts: Vec<String>, lang: Lang) -> String {
    parts.dedup();
    if parts.len() == 1 {
        return parts.remove(0);
    }
    match lang {
        Lang::Python => format!("Union[{}]", parts.join(", ")),
        Lang::TypeScript => parts.join(" | "),
    }
}

/// The declarations of `schema`'s models (the root one named `name`), dependencies first.
fn models(
    schema: &Value,
    name: &str,
    stem: &str,
    lang: Lang,
    strict: bool,
    out: &mut String,
) -> String {
    let mut types = Types::new(schema, stem);
    let root = type_of(schema, name, &mut types, lang, 0);
    let mut declared: Vec<String> = Vec::new();
    // Each model's fields may add models: declare until none is left, deepest last found
    // first (a model only names models declared above it, or itself).
    let mut blocks: Vec<String> = Vec::new();
    let mut i = 0;
    while i < types.models.len() {
        let (model, schema) = types.models[i].clone();
        i += 1;
        if declared.contains(&model) {
            continue;
        }
        declared.push(model.clone());
        blocks.push(model_block(&model, &schema, &mut types, lang, strict));
    }
    for block in blocks.iter().rev() {
        out.push_str(block);
    }
    root
}

fn model_block(name: &str, schema: &Value, types: &mut Types, lang: Lang, strict: bool) -> String {
    let mut out = String::new();
    let properties =
        schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    let description = schema.get("description").and_then(Value::as_str).map(doc_line);
    match lang {
        Lang::Python => {
            let _ = writeln!(out, "\n\nclass {name}(BaseModel):");
            if let Some(d) = &description {
                let _ = writeln!(out, "    \"\"\"{d}\"\"\"\n");
            }
            let extra = if strict && closed { "forbid" } else { "ignore" };
            let _ = writeln!(
                out,
                "    model_config = ConfigDict(extra=\"{extra}\", populate_by_name=True)"
            );
            for (field, prop) in &properties {
                let ty = type_of(
                    prop,
                    &format!("{name}{}", type_stem(&format!("X-{field}"))),
                    types,
                    lang,
                    1,
                );
                let (ident, renamed) = python_field(field);
                let optional = !required.contains(&field.as_str());
                let ty = if optional && ty != "Any" { format!("Optional[{ty}]") } else { ty };
                let mut args = Vec::new();
                if optional {
                    args.push("default=None".to_string());
                }
                if renamed {
                    args.push(format!("alias={}", py_string(field)));
                }
                if let Some(d) = prop.get("description").and_then(Value::as_str) {
                    args.push(format!("description={}", py_string(&doc_line(d))));
                }
                if args.is_empty() {
                    let _ = writeln!(out, "    {ident}: {ty}");
                } else {
                    let _ = writeln!(out, "    {ident}: {ty} = Field({})", args.join(", "));
                }
            }
            if properties.is_empty() {
                let _ = writeln!(out, "    pass");
            }
        }
        Lang::TypeScript => {
            if let Some(d) = &description {
                let _ = writeln!(out, "\n/** {d} */");
            } else {
                out.push('\n');
            }
            let _ = writeln!(out, "export interface {name} {{");
            for (field, prop) in &properties {
                let ty = type_of(
                    prop,
                    &format!("{name}{}", type_stem(&format!("X-{field}"))),
                    types,
                    lang,
                    1,
                );
                let optional = if required.contains(&field.as_str()) { "" } else { "?" };
                if let Some(d) = prop.get("description").and_then(Value::as_str) {
                    let _ = writeln!(out, "  /** {} */", doc_line(d));
                }
                let _ = writeln!(out, "  {}{optional}: {ty};", py_string(field));
            }
            if !closed
                && schema.get("additionalProperties").is_none_or(|v| v != &Value::Bool(false))
                && !strict
            {
                let _ = writeln!(out, "  [key: string]: unknown;");
            }
            let _ = writeln!(out, "}}");
        }
    }
    out
}

/// The pin a typed function calls: `ID@^MAJOR` (`ID@~0.MINOR` before 1.0).
fn pin_of(c: &Contract) -> String {
    if c.version.major > 0 {
        format!("{}@^{}", c.id, c.version.major)
    } else {
        format!("{}@~0.{}", c.id, c.version.minor)
    }
}

fn header(comment: &str, contracts: &[&Contract], command: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{comment} Generated by `pactum generate {command}` from {} contract(s): do not edit.",
        contracts.len()
    );
    let _ = writeln!(out, "{comment} {FINGERPRINT_MARK}{}", fingerprint(contracts));
    for c in contracts {
        let _ = writeln!(out, "{comment}   {}@{} ({})", c.id, c.version, &c.sha256[..12]);
    }
    out
}

/// The Python module for `contracts` (sorted by id by the caller).
pub fn python(contracts: &[&Contract]) -> String {
    let mut out = header("#", contracts, "python");
    out.push_str(
        "\"\"\"Typed clients of this project's contracts: a Pydantic model of each contract's input and\noutput, and a function per contract that calls it through a pactum client.\"\"\"\n\nfrom __future__ import annotations\n\nfrom typing import Any, Dict, List, Literal, Optional, Union\n\nfrom pydantic import BaseModel, ConfigDict, Field, TypeAdapter\n\nimport pactum\n",
    );
    for c in contracts {
        let stem = type_stem(&c.id);
        let _ = write!(out, "\n\n# --- {}@{} ---", c.id, c.version);
        let input = match &c.input_schema {
            Some(s) if is_model(s) => {
                models(s, &format!("{stem}Input"), &stem, Lang::Python, true, &mut out)
            }
            Some(s) => {
                let mut t = Types::new(s, &stem);
                type_of(s, &format!("{stem}Input"), &mut t, Lang::Python, 0)
            }
            None => "Dict[str, Any]".into(),
        };
        let output = match &c.output_schema {
            Some(s) if is_model(s) => {
                models(s, &format!("{stem}Output"), &stem, Lang::Python, false, &mut out)
            }
            Some(s) => {
                let mut t = Types::new(s, &stem);
                type_of(s, &format!("{stem}Output"), &mut t, Lang::Python, 0)
            }
            None => "str".into(),
        };
        let f = function_name(&c.id);
        let pin = py_string(&pin_of(c));
        let summary = c
            .metadata
            .get("description")
            .and_then(Value::as_str)
            .map(doc_line)
            .unwrap_or_else(|| format!("Calls {} (pin {}).", c.id, pin_of(c)));
        let dump = if input.starts_with("Dict") {
            "input"
        } else {
            "input.model_dump(by_alias=True, exclude_none=True)"
        };
        // A model validates itself; any other type through a TypeAdapter.
        let model = c.output_schema.as_ref().is_some_and(is_model);
        let load = |v: &str| {
            if model {
                format!("{output}.model_validate({v})")
            } else {
                format!("TypeAdapter({output}).validate_python({v})")
            }
        };
        let _ = write!(
            out,
            "\n\n\ndef {f}(client: pactum.Client, input: {input}) -> {output}:\n    \"\"\"{summary}\"\"\"\n    return {}\n\n\nasync def {f}_async(client: pactum.Client, input: {input}) -> {output}:\n    \"\"\"{summary}\"\"\"\n    return {}\n",
            load(&format!("client.call({pin}, {dump}).output")),
            load(&format!("(await client.acall({pin}, {dump})).output")),
        );
    }
    out
}

/// The TypeScript declarations for `contracts` (sorted by id by the caller).
pub fn typescript(contracts: &[&Contract]) -> String {
    let mut out = header("//", contracts, "typescript");
    for c in contracts {
        let stem = type_stem(&c.id);
        let _ = writeln!(out, "\n// --- {}@{} ---", c.id, c.version);
        let input = match &c.input_schema {
            Some(s) if is_model(s) => {
                models(s, &format!("{stem}Input"), &stem, Lang::TypeScript, true, &mut out)
            }
            Some(s) => {
                let mut t = Types::new(s, &stem);
                type_of(s, &format!("{stem}Input"), &mut t, Lang::TypeScript, 0)
            }
            None => "Record<string, unknown>".into(),
        };
        if !input.ends_with("Input") {
            let _ = writeln!(out, "export type {stem}Input = {input};");
        }
        let output = match &c.output_schema {
            Some(s) if is_model(s) => {
                models(s, &format!("{stem}Output"), &stem, Lang::TypeScript, false, &mut out)
            }
            Some(s) => {
                let mut t = Types::new(s, &stem);
                type_of(s, &format!("{stem}Output"), &mut t, Lang::TypeScript, 0)
            }
            None => "string".into(),
        };
        if !output.ends_with("Output") {
            let _ = writeln!(out, "export type {stem}Output = {output};");
        }
        let _ = writeln!(
            out,
            "/** The pin {stem} is called with. */\nexport const {stem}Pin = {};",
            py_string(&pin_of(c))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn contract(input: Value, output: Option<Value>) -> Contract {
        let mut doc = json!({"contract_id": "PRC-CLASSIFY-001", "version": "1.2.0", "prompt_pack_id": "PRM-CLASSIFY-001",
                             "boundary": {"max_tokens": 10, "temperature": 0}, "input_schema": input});
        if let Some(o) = output {
            doc["output_schema"] = o;
        }
        Contract::from_value(doc, &"a".repeat(64), std::path::Path::new("contracts/c/1.2.0.json"))
            .unwrap()
    }

    #[test]
    fn python_models_follow_the_schemas() {
        let c = contract(
            json!({"type": "object", "required": ["user_input"], "additionalProperties": false,
                   "properties": {"user_input": {"type": "string", "description": "The message."},
                                  "history": {"type": "array", "items": {"type": "string"}},
                                  "mode": {"enum": ["fast", "careful"]},
                                  "class": {"type": ["integer", "null"]},
                                  "meta": {"type": "object", "properties": {"a": {"$ref": "#/$defs/thing"}}}},
                   "$defs": {"thing": {"type": "object", "required": ["n"], "properties": {"n": {"type": "number"}}}}}),
            Some(
                json!({"type": "object", "required": ["label"], "properties": {"label": {"type": "string", "enum": ["billing", "other"]}}}),
            ),
        );
        let text = python(&[&c]);
        assert!(text.contains("class Classify001Input(BaseModel):"), "{text}");
        assert!(text.contains("model_config = ConfigDict(extra=\"forbid\""), "{text}");
        assert!(
            text.contains("    user_input: str = Field(description=\"The message.\")"),
            "{text}"
        );
        assert!(text.contains("    history: Optional[List[str]] = Field(default=None)"), "{text}");
        assert!(
            text.contains(
                "    mode: Optional[Literal[\"fast\", \"careful\"]] = Field(default=None)"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "    class_: Optional[Union[int, None]] = Field(default=None, alias=\"class\")"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "class Classify001Thing(BaseModel):\n    model_config = ConfigDict(extra=\"ignore\""
            ),
            "{text}"
        );
        assert!(text.contains("    label: Literal[\"billing\", \"other\"]"), "{text}");
        assert!(text.contains("def classify_001(client: pactum.Client, input: Classify001Input) -> Classify001Output:"), "{text}");
        assert!(text.contains("client.call(\"PRC-CLASSIFY-001@^1\""), "{text}");
        // A model is declared before the models that name it.
        assert!(
            text.find("class Classify001Thing").unwrap()
                < text.find("class Classify001InputMeta").unwrap(),
            "{text}"
        );
        assert!(
            text.find("class Classify001InputMeta").unwrap()
                < text.find("class Classify001Input(").unwrap(),
            "{text}"
        );
        assert_eq!(fingerprint_of(&text), Some(fingerprint(&[&c]).as_str()));
        // Deterministic.
        assert_eq!(text, python(&[&c]));
    }

    #[test]
    fn typescript_declarations_and_text_contracts() {
        let c = contract(
            json!({"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}),
            None,
        );
        let text = typescript(&[&c]);
        assert!(
            text.contains(
                "export interface Classify001Input {\n  \"n\"?: number;\n  \"q\": string;\n}"
            ),
            "{text}"
        );
        assert!(text.contains("export type Classify001Output = string;"), "{text}");
        assert!(text.contains("export const Classify001Pin = \"PRC-CLASSIFY-001@^1\";"), "{text}");
        let py = python(&[&c]);
        assert!(py.contains("-> str:"), "{py}");
        assert!(py.contains("return TypeAdapter(str).validate_python(client.call("), "{py}");
    }

    #[test]
    fn fingerprints_change_with_any_contract() {
        let a = contract(json!({"type": "object"}), None);
        let mut b = contract(json!({"type": "object"}), None);
        assert_eq!(fingerprint(&[&a]), fingerprint(&[&b]));
        b.sha256 = "b".repeat(64);
        assert_ne!(fingerprint(&[&a]), fingerprint(&[&b]));
    }
}
