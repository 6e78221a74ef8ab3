//! Opt-in schema-aligned coercion (`"extraction": {"coerce": true}`): small, reported
//! changes that make a parsed value fit the output schema the way the model evidently
//! meant it.
//!
//! | value | schema wants | becomes | kind |
//! | --- | --- | --- | --- |
//! | `"42"`, `" -1.5 "` | `number` / `integer` (not `string`) | `42`, `-1.5` | `coerced_number` |
//! | `"true"`, `"False"` | `boolean` (not `string`) | `true`, `false` | `coerced_boolean` |
//! | `"x"`, `{...}` | `array` (not the value's type) | `["x"]`, `[{...}]` | `wrapped_in_array` |
//! | `"HIGH"` | `enum: ["high", "low"]` | `"high"` | `enum_case` |
//!
//! The schema is followed through `properties`, `items` and `additionalProperties`
//! (object schemas only; `$ref`, `anyOf` and the like are not followed, so values under
//! them are left alone). Each coercion is returned with the JSON pointer of the value.
//! Recursion follows the value, which the parsers bound at 128 levels.

use serde_json::{Map, Number, Value};

use super::RepairKind;

/// The coerced value and its coercions, or `None` when nothing was coerced.
pub(super) fn coerce(value: &Value, schema: &Value) -> Option<(Value, Vec<(RepairKind, String)>)> {
    let mut done = vec![];
    let mut pointer = String::new();
    let coerced = walk(value, schema, &mut pointer, &mut done);
    (!done.is_empty()).then_some((coerced, done))
}

/// Whether the schema's `type` names `name` (`type` absent: no).
fn wants(schema: &Value, name: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == name,
        Some(Value::Array(types)) => types.iter().any(|t| t == name),
        _ => false,
    }
}

fn walk(
    value: &Value,
    schema: &Value,
    pointer: &mut String,
    done: &mut Vec<(RepairKind, String)>,
) -> Value {
    if !schema.is_object() {
        return value.clone();
    }
    // A single value where an array is wanted.
    if wants(schema, "array") && !value.is_array() && !wants(schema, json_type(value)) {
        done.push((RepairKind::WrappedInArray, pointer.clone()));
        let items = schema.get("items").unwrap_or(&Value::Bool(true));
        let len = pointer.len();
        pointer.push_str("/0");
        let item = walk(value, items, pointer, done);
        pointer.truncate(len);
        return Value::Array(vec![item]);
    }
    match value {
        Value::String(text) => scalar(text, schema, pointer, done).unwrap_or_else(|| value.clone()),
        Value::Array(items) => {
            let item_schema = schema.get("items").unwrap_or(&Value::Bool(true));
            let out = items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let len = pointer.len();
                    pointer.push_str(&format!("/{i}"));
                    let coerced = walk(item, item_schema, pointer, done);
                    pointer.truncate(len);
                    coerced
                })
                .collect();
            Value::Array(out)
        }
        Value::Object(map) => {
            let properties = schema.get("properties");
            let additional = schema.get("additionalProperties");
            let mut out = Map::new();
            for (key, item) in map {
                let item_schema = properties.and_then(|p| p.get(key)).or(additional);
                let coerced = match item_schema {
                    Some(s) => {
                        let len = pointer.len();
                        pointer.push('/');
                        pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                        let coerced = walk(item, s, pointer, done);
                        pointer.truncate(len);
                        coerced
                    }
                    None => item.clone(),
                };
                out.insert(key.clone(), coerced);
            }
            Value::Object(out)
        }
        _ => value.clone(),
    }
}

/// A string coerced to what `schema` wants, if it wants something else.
fn scalar(
    text: &str,
    schema: &Value,
    pointer: &str,
    done: &mut Vec<(RepairKind, String)>,
) -> Option<Value> {
    if let Some(Value::Array(members)) = schema.get("enum")
        && !members.iter().any(|m| m.as_str() == Some(text))
    {
        let matched: Vec<&Value> = members
            .iter()
            .filter(|m| m.as_str().is_some_and(|m| m.trim().eq_ignore_ascii_case(text.trim())))
            .collect();
        // Only an unambiguous match: `"a"` against `["A", "a "]` stays as it is.
        if let [only] = matched.as_slice() {
            done.push((RepairKind::EnumCase, pointer.to_owned()));
            return Some((*only).clone());
        }
    }
    if wants(schema, "string") {
        return None;
    }
    let trimmed = text.trim();
    if wants(schema, "integer") || wants(schema, "number") {
        let number = trimmed
            .parse::<Number>()
            .ok()
            .filter(|n| wants(schema, "number") || n.is_i64() || n.is_u64());
        if let Some(number) = number {
            done.push((RepairKind::CoercedNumber, pointer.to_owned()));
            return Some(Value::Number(number));
        }
    }
    if wants(schema, "boolean") {
        let boolean = match trimmed.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        };
        if let Some(boolean) = boolean {
            done.push((RepairKind::CoercedBoolean, pointer.to_owned()));
            return Some(Value::Bool(boolean));
        }
    }
    None
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use serde_json::json;

    /// Coerces `value` towards `schema`; renders the result and the coercions.
    fn check(value: Value, schema: Value, want: &str) {
        let got = match coerce(&value, &schema) {
            Some((value, done)) => {
                let done: Vec<String> = done.iter().map(|(k, p)| format!("{k}@{p}")).collect();
                format!("{value} {}", done.join(" "))
            }
            None => "unchanged".to_owned(),
        };
        assert_eq!(got, want, "{value} against {schema}");
    }

    #[test]
    fn strings_to_numbers_and_booleans() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
            "s": {"type": "string"}, "either": {"type": ["string", "number"]}}});
        check(
            json!({"n": "42", "x": " -1.5 ", "b": "True", "s": "7", "either": "8"}),
            schema.clone(),
            r#"{"b":true,"either":"8","n":42,"s":"7","x":-1.5} coerced_boolean@/b coerced_number@/n coerced_number@/x"#,
        );
        check(json!({"n": "4.5"}), schema.clone(), "unchanged");
        check(json!({"n": "four"}), schema.clone(), "unchanged");
        check(json!({"b": "yes"}), schema.clone(), "unchanged");
        check(json!({"n": 42}), schema, "unchanged");
    }

    #[test]
    fn single_values_to_arrays() {
        let schema = json!({"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "integer"}},
            "any": {"type": ["array", "string"]}}});
        check(
            json!({"tags": "3"}),
            schema.clone(),
            r#"{"tags":[3]} wrapped_in_array@/tags coerced_number@/tags/0"#,
        );
        check(json!({"tags": [1], "any": "x"}), schema.clone(), "unchanged");
        check(json!({"a": 1}), json!({"type": "array"}), r#"[{"a":1}] wrapped_in_array@"#);
    }

    #[test]
    fn enums_case_insensitively() {
        let schema = json!({"type": "array", "items": {"enum": ["High", "low"]}});
        check(
            json!(["HIGH", "low", "Low ", "mid"]),
            schema,
            r#"["High","low","low","mid"] enum_case@/0 enum_case@/2"#,
        );
        check(json!("a"), json!({"enum": ["A", "a "]}), "unchanged");
    }

    #[test]
    fn pointers_are_escaped_and_unknown_keywords_ignored() {
        let schema = json!({"properties": {"a/b": {"type": "integer"}}, "additionalProperties": {"type": "boolean"}});
        check(
            json!({"a/b": "1", "c": "false"}),
            schema,
            r#"{"a/b":1,"c":false} coerced_number@/a~1b coerced_boolean@/c"#,
        );
        check(
            json!({"a": "1"}),
            json!({"anyOf": [{"properties": {"a": {"type": "integer"}}}]}),
            "unchanged",
        );
        check(json!("1"), json!(true), "unchanged");
    }
}
