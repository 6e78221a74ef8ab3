//! Opt-in schema-aligned coercion (`"extraction": {"coerce": true}`): small, reported
//! changes that make a parsed value fit the output schema the way the model evidently
//! meant it. Only what the schema proves is coerced: a value is changed only where the
//! schema names exactly one type for it that the value does not have (or an enum it
//! misses only by case), and the caller keeps the result only when the whole schema then
//! accepts it.
//!
//! | value | schema wants | becomes | kind |
//! | --- | --- | --- | --- |
//! | `"42"`, `" -1.5 "`, `"4.0"` (integer) | `number` / `integer` (not `string`) | `42`, `-1.5`, `4` | `coerced_number` |
//! | `"true"`, `"False"`, `"yes"`, `"no"`, `"y"`, `"n"`, `"on"`, `"off"`, `"1"`, `"0"` | `boolean` (not `string`) | `true`, `false` | `coerced_boolean` |
//! | `"x"`, `{...}` (not `null`) | `array` (not the value's type) | `["x"]`, `[{...}]` | `wrapped_in_array` |
//! | `"HIGH"` | `enum: ["high", "low"]` | `"high"` | `enum_case` |
//!
//! The schema is followed through `properties`, `items`, `additionalProperties`, local
//! `$ref`s (`#/$defs/…`, `#/definitions/…`, at most 16 in a row), a one-schema `allOf`, and
//! an `anyOf` / `oneOf` whose branches other than `{"type": "null"}` are exactly one (as
//! generated for an optional field); values under other combinations are left alone. Each
//! coercion is returned with the JSON pointer of the value. Recursion follows the value,
//! which the parsers bound at 128 levels.

use serde_json::{Map, Number, Value};

use super::RepairKind;

/// The coerced value and its coercions, or `None` when nothing was coerced.
pub(super) fn coerce(value: &Value, schema: &Value) -> Option<(Value, Vec<(RepairKind, String)>)> {
    let mut walk = Walk { root: schema, done: vec![], pointer: String::new() };
    let coerced = walk.value(value, schema);
    (!walk.done.is_empty()).then_some((coerced, walk.done))
}

/// Whether the schema's `type` names `name` (`type` absent: no).
fn wants(schema: &Value, name: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == name,
        Some(Value::Array(types)) => types.iter().any(|t| t == name),
        _ => false,
    }
}

/// Whether the schema's `type` already admits the value's JSON type (an integer is a
/// number too).
fn admits(schema: &Value, value: &Value) -> bool {
    match value {
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            wants(schema, "integer") || wants(schema, "number")
        }
        _ => wants(schema, json_type(value)),
    }
}

/// One walk over a value and its schema.
struct Walk<'s> {
    /// The whole schema, which local references point into.
    root: &'s Value,
    done: Vec<(RepairKind, String)>,
    pointer: String,
}

impl<'s> Walk<'s> {
    /// The schema that `schema` stands for: local references followed, a one-schema
    /// `allOf` and an optional field's `anyOf` / `oneOf` unwrapped. `None` when that is
    /// not one schema (a choice the schema does not settle, a reference that leads
    /// nowhere or round in circles).
    fn settle(&self, mut schema: &'s Value) -> Option<&'s Value> {
        for _ in 0..16 {
            if let Some(Value::String(target)) = schema.get("$ref") {
                let pointer = target.strip_prefix('#')?;
                let pointer = pointer.replace("%24", "$");
                schema = self.root.pointer(&pointer)?;
                continue;
            }
            if let Some(Value::Array(all)) = schema.get("allOf")
                && let [only] = all.as_slice()
                && schema.get("type").is_none()
            {
                schema = only;
                continue;
            }
            let branches = schema.get("anyOf").or_else(|| schema.get("oneOf"));
            if let Some(Value::Array(branches)) = branches
                && schema.get("type").is_none()
            {
                let mut others = branches.iter().filter(|b| {
                    let null = b.get("type").is_some_and(|t| t == "null");
                    !(null && b.as_object().is_some_and(|o| o.len() == 1))
                });
                let (Some(only), None) = (others.next(), others.next()) else { return None };
                schema = only;
                continue;
            }
            return Some(schema);
        }
        None
    }

    /// Walks into `value` at `key` (an object key or an array index) under `schema`.
    fn child(&mut self, value: &Value, schema: &'s Value, key: &str) -> Value {
        let len = self.pointer.len();
        self.pointer.push('/');
        self.pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
        let coerced = self.value(value, schema);
        self.pointer.truncate(len);
        coerced
    }

    fn value(&mut self, value: &Value, schema: &'s Value) -> Value {
        // `null` stays `null`: an optional field's branch is not a reason to invent one.
        if value.is_null() {
            return value.clone();
        }
        let Some(schema) = self.settle(schema).filter(|s| s.is_object()) else {
            return value.clone();
        };
        // A single value where an array is wanted.
        if wants(schema, "array") && !value.is_array() && !admits(schema, value) {
            self.done.push((RepairKind::WrappedInArray, self.pointer.clone()));
            let items = schema.get("items").unwrap_or(&Value::Bool(true));
            let item = self.child(value, items, "0");
            return Value::Array(vec![item]);
        }
        match value {
            Value::String(text) => {
                let coerced = scalar(text, schema);
                match coerced {
                    Some((kind, value)) => {
                        self.done.push((kind, self.pointer.clone()));
                        value
                    }
                    None => value.clone(),
                }
            }
            Value::Array(items) => {
                let item_schema = schema.get("items").unwrap_or(&Value::Bool(true));
                let out = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.child(item, item_schema, &i.to_string()))
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
                        Some(s) => self.child(item, s, key),
                        None => item.clone(),
                    };
                    out.insert(key.clone(), coerced);
                }
                Value::Object(out)
            }
            _ => value.clone(),
        }
    }
}

/// A string coerced to what `schema` wants, if it wants something else.
fn scalar(text: &str, schema: &Value) -> Option<(RepairKind, Value)> {
    if let Some(Value::Array(members)) = schema.get("enum")
        && !members.iter().any(|m| m.as_str() == Some(text))
    {
        let matched: Vec<&Value> = members
            .iter()
            .filter(|m| m.as_str().is_some_and(|m| m.trim().eq_ignore_ascii_case(text.trim())))
            .collect();
        // Only an unambiguous match: `"a"` against `["A", "a "]` stays as it is.
        if let [only] = matched.as_slice() {
            return Some((RepairKind::EnumCase, (*only).clone()));
        }
    }
    if wants(schema, "string") {
        return None;
    }
    let trimmed = text.trim();
    if wants(schema, "integer") || wants(schema, "number") {
        let number = trimmed.parse::<Number>().ok().and_then(|n| {
            if wants(schema, "number") || n.is_i64() || n.is_u64() {
                return Some(n);
            }
            // `"4.0"` where an integer is wanted: the integer, when nothing is lost.
            let float = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)?;
            #[allow(clippy::cast_possible_truncation)] // whole and within i64 (checked)
            Some(Number::from(float as i64))
        });
        if let Some(number) = number {
            return Some((RepairKind::CoercedNumber, Value::Number(number)));
        }
    }
    if wants(schema, "boolean") {
        let boolean = match trimmed.to_ascii_lowercase().as_str() {
            "true" | "yes" | "y" | "on" | "1" => Some(true),
            "false" | "no" | "n" | "off" | "0" => Some(false),
            _ => None,
        };
        if let Some(boolean) = boolean {
            return Some((RepairKind::CoercedBoolean, Value::Bool(boolean)));
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
        check(json!({"b": "maybe"}), schema.clone(), "unchanged");
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
    fn references_and_optional_fields_are_followed() {
        // As pydantic writes them: models and enums under `$defs`, optional fields as
        // `anyOf` with `null`, a field with a default as a one-schema `allOf`.
        let schema = json!({
            "$defs": {
                "Level": {"enum": ["low", "high"], "type": "string"},
                "Item": {"type": "object", "properties": {
                    "qty": {"type": "integer"},
                    "ok": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
                    "level": {"allOf": [{"$ref": "#/$defs/Level"}]}}}},
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}}});
        check(
            json!({"items": [{"qty": "2", "ok": "yes", "level": "HIGH"}, {"qty": "4.0", "ok": null}]}),
            schema.clone(),
            r#"{"items":[{"level":"high","ok":true,"qty":2},{"ok":null,"qty":4}]} enum_case@/items/0/level coerced_boolean@/items/0/ok coerced_number@/items/0/qty coerced_number@/items/1/qty"#,
        );
        // A single object where the list is wanted, its fields coerced too.
        check(
            json!({"items": {"qty": "1"}}),
            schema,
            r#"{"items":[{"qty":1}]} wrapped_in_array@/items coerced_number@/items/0/qty"#,
        );
        // A choice the schema does not settle, and references that lead nowhere or round
        // in circles, leave the value alone.
        let either = json!({"anyOf": [{"type": "integer"}, {"type": "boolean"}]});
        check(json!("1"), either, "unchanged");
        check(json!("1"), json!({"$ref": "#/nowhere"}), "unchanged");
        check(
            json!("1"),
            json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
            "unchanged",
        );
    }

    #[test]
    fn only_what_the_schema_proves() {
        // `null` is not wrapped; an integer is a number; a fraction is no integer.
        let list = json!({"type": ["array", "number"], "items": {"type": "integer"}});
        check(json!(null), json!({"type": "array"}), "unchanged");
        check(json!(5), list, "unchanged");
        check(json!("4.5"), json!({"type": "integer"}), "unchanged");
        check(json!("4.0"), json!({"type": "integer"}), "4 coerced_number@");
        for (text, want) in [("yes", true), ("No", false), ("y", true), ("off", false), ("1", true)]
        {
            check(json!(text), json!({"type": "boolean"}), &format!("{want} coerced_boolean@"));
        }
        check(json!("yes"), json!({"type": ["boolean", "string"]}), "unchanged");
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
            json!({"anyOf": [{"properties": {"a": {"type": "integer"}}}, {"required": ["b"]}]}),
            "unchanged",
        );
        check(json!("1"), json!(true), "unchanged");
    }
}
