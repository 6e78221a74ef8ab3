//! The dry-run provider: answers with the smallest response that fits the contract's
//! `output_schema`, made from the schema itself. Offline; for trying a work order's wiring
//! before any model is configured.
//!
//! The instance is built by walking the schema: `const` and the first `enum` value win;
//! objects get their `required` properties; arrays get `minItems` items; strings are
//! `minLength` long (or a sample of their `format`); numbers sit at their lower bound,
//! rounded to `multipleOf`; `$ref` (local), `allOf`, `anyOf`/`oneOf` (first branch) are
//! followed. A text contract gets a one-line placeholder naming the contract.

use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::error::Result;
use crate::gateway::{
    FinishReason, PromptRequest, Provider, ProviderResponse, ResponseBody, Usage,
};

/// Answers every request with a minimal schema-valid response.
#[derive(Debug, Default)]
pub struct DryRunProvider;

impl Provider for DryRunProvider {
    fn name(&self) -> &str {
        "dry-run"
    }

    fn default_jobs(&self) -> usize {
        std::thread::available_parallelism().map(usize::from).unwrap_or(1)
    }

    fn is_offline(&self) -> bool {
        true
    }

    fn complete(&self, request: &PromptRequest) -> Result<ProviderResponse> {
        let started = Instant::now();
        let text = match &request.output_schema {
            Some(schema) => minimal_instance(schema).to_string(),
            None => format!(
                "[dry-run] {}@{} would be sent {} message(s) here.",
                request.contract_id,
                request.contract_version,
                request.messages.len()
            ),
        };
        let prompt_chars: usize = request.messages.iter().map(|m| m.content.len()).sum();
        Ok(ProviderResponse {
            usage: Some(Usage {
                prompt_tokens: (prompt_chars as u64).div_ceil(4),
                completion_tokens: (text.len() as u64).div_ceil(4),
            }),
            body: ResponseBody::Text(text),
            finish_reason: Some(FinishReason::Stop),
            latency: started.elapsed(),
            latency_recorded: false,
            model: Some("dry-run".into()),
            attempts: 1,
            tool_calls: Vec::new(),
        })
    }
}

/// The smallest instance of `schema` pactum can make (see the module docs).
pub fn minimal_instance(schema: &Value) -> Value {
    build(schema, schema, 0)
}

const MAX_DEPTH: usize = 32;

fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let fragment = reference.strip_prefix('#')?;
    if fragment.is_empty() { Some(root) } else { root.pointer(fragment) }
}

fn build(schema: &Value, root: &Value, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    let Some(obj) = schema.as_object() else { return Value::Null };
    if let Some(c) = obj.get("const") {
        return c.clone();
    }
    if let Some(first) = obj.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(target) = obj.get("$ref").and_then(Value::as_str).and_then(|r| resolve_ref(root, r))
    {
        return build(target, root, depth + 1);
    }
    if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
        let mut merged = Map::new();
        for part in all {
            if let Value::Object(m) = build(part, root, depth + 1) {
                merged.extend(m);
            }
        }
        let own = build_typed(obj, root, depth);
        if let Value::Object(m) = own {
            merged.extend(m);
        }
        return Value::Object(merged);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(first) = obj.get(key).and_then(Value::as_array).and_then(|b| b.first()) {
            return build(first, root, depth + 1);
        }
    }
    build_typed(obj, root, depth)
}

fn first_type(obj: &Map<String, Value>) -> Option<&str> {
    match obj.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(ts) => {
            ts.iter().filter_map(Value::as_str).find(|t| *t != "null").or(Some("null"))
        }
        _ => None,
    }
}

fn build_typed(obj: &Map<String, Value>, root: &Value, depth: usize) -> Value {
    let ty = first_type(obj).or_else(|| {
        if obj.contains_key("properties") || obj.contains_key("required") {
            Some("object")
        } else if obj.contains_key("items") {
            Some("array")
        } else {
            None
        }
    });
    match ty {
        Some("object") => {
            let mut out = Map::new();
            let props = obj.get("properties").and_then(Value::as_object);
            for name in obj
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let sub = props.and_then(|p| p.get(name)).cloned().unwrap_or(json!({}));
                out.insert(name.to_string(), build(&sub, root, depth + 1));
            }
            Value::Object(out)
        }
        Some("array") => {
            let n = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0).min(64) as usize;
            let item = obj.get("items").cloned().unwrap_or(json!({}));
            Value::Array((0..n).map(|_| build(&item, root, depth + 1)).collect())
        }
        Some("string") => {
            let sample = match obj.get("format").and_then(Value::as_str) {
                Some("date-time") => Some("2026-01-01T00:00:00Z"),
                Some("date") => Some("2026-01-01"),
                Some("time") => Some("00:00:00Z"),
                Some("email") => Some("dry-run@example.com"),
                Some("uri") | Some("url") => Some("https://example.com/"),
                Some("uuid") => Some("00000000-0000-4000-8000-000000000000"),
                _ => None,
            };
            if let Some(s) = sample {
                return json!(s);
            }
            let n = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0).min(4096) as usize;
            let n = if n == 0 { 1 } else { n };
            Value::String("x".repeat(n))
        }
        Some("integer") | Some("number") => number(obj, ty == Some("integer")),
        Some("boolean") => Value::Bool(false),
        Some("null") => Value::Null,
        _ => json!({}),
    }
}

fn number(obj: &Map<String, Value>, integer: bool) -> Value {
    let min = obj.get("minimum").and_then(Value::as_f64);
    let exclusive = obj.get("exclusiveMinimum").and_then(Value::as_f64);
    let max = obj.get("maximum").and_then(Value::as_f64);
    let mut n = match (min, exclusive) {
        (Some(m), _) => m,
        (None, Some(e)) => {
            if integer {
                e.floor() + 1.0
            } else {
                e + 1.0
            }
        }
        (None, None) => max.map_or(0.0, |m| m.min(0.0)),
    };
    if let Some(step) = obj.get("multipleOf").and_then(Value::as_f64).filter(|s| *s > 0.0) {
        n = (n / step).ceil() * step;
    }
    if integer {
        n = n.ceil();
        json!(n as i64)
    } else if n.fract() == 0.0 && n.abs() < 1e15 {
        json!(n as i64)
    } else {
        json!(n)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    fn check(schema: Value) {
        let instance = minimal_instance(&schema);
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(v.is_valid(&instance), "{instance} does not fit {schema}");
    }

    #[test]
    fn minimal_instances_fit_their_schemas() {
        check(json!({"type": "object", "required": ["label", "confidence"], "properties": {
            "label": {"type": "string", "enum": ["a", "b"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "reasons": {"type": "array", "items": {"type": "string"}}}}));
        check(
            json!({"type": "array", "minItems": 2, "items": {"type": "integer", "minimum": 3, "multipleOf": 2}}),
        );
        check(json!({"type": "string", "minLength": 5}));
        check(json!({"type": "string", "format": "date-time"}));
        check(
            json!({"$defs": {"s": {"type": "object", "required": ["id"], "properties": {"id": {"const": 7}}}}, "$ref": "#/$defs/s"}),
        );
        check(json!({"anyOf": [{"type": "null"}, {"type": "string"}]}));
        check(json!({"allOf": [{"type": "object", "required": ["a"]}, {"required": ["b"]}]}));
        check(json!({"type": ["null", "integer"], "exclusiveMinimum": 0}));
        check(
            json!({"type": "object", "required": ["answer_text", "metadata"], "additionalProperties": false,
                     "properties": {"answer_text": {"type": "string", "minLength": 1}, "metadata": {"type": "object"}}}),
        );
    }

    #[test]
    fn self_referencing_schemas_terminate() {
        let schema =
            json!({"type": "object", "required": ["next"], "properties": {"next": {"$ref": "#"}}});
        // No finite instance exists: the chain of `next` objects stops at the depth limit.
        let instance = minimal_instance(&schema);
        let (mut node, mut levels) = (&instance, 0);
        while let Some(next) = node.get("next") {
            node = next;
            levels += 1;
        }
        assert!(node.is_null(), "{instance}");
        assert!((2..=MAX_DEPTH).contains(&levels), "{levels} levels");
    }
}
