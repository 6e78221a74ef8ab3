//! `uniqueItems`, checked by pactum: the one keyword of JSON Schema whose check pactum
//! supplies itself (`with_keyword` overrides the jsonschema crate's own, at every build of
//! [`super::Validator`]).
//!
//! The crate's check hashes an item's array elements one after another with neither their
//! count nor their nesting, so `[1, 2]`, `[[1], [2]]` and `[[1, 2]]` hash alike whatever
//! the hasher's seed. An array of such distinct items (2^k of them from k leaves, each
//! wrapped or not) lands in one bucket and costs quadratic time: seconds to minutes for a
//! reply of a few MiB that the validation budget, which charges `uniqueItems` linearly,
//! lets through. Here every item is written once in an injective encoding (a tag per
//! kind, lengths before contents, object keys sorted, numbers by value) and the encodings
//! go into a `HashSet` with std's randomly keyed SipHash: linear in the array's size
//! whatever it holds, and equal exactly when JSON Schema calls two values equal.

use std::collections::HashMap;

use jsonschema::paths::Location;
use jsonschema::{Keyword, ValidationError};
use serde_json::{Map, Value};

/// The factory `with_keyword("uniqueItems", ...)` takes.
pub(super) fn factory<'a>(
    _parent: &'a Map<String, Value>,
    value: &'a Value,
    _path: Location,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
    match value {
        Value::Bool(on) => Ok(Box::new(UniqueItems { on: *on })),
        other => Err(ValidationError::custom(format!(
            "`uniqueItems` must be true or false, not {other}"
        ))),
    }
}

struct UniqueItems {
    on: bool,
}

impl<'i> Keyword<'i> for UniqueItems {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match self.duplicate(instance) {
            None => Ok(()),
            Some((first, second)) => Err(ValidationError::custom(format!(
                "items {first} and {second} are equal, but the array's items must be unique (uniqueItems)"
            ))),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.duplicate(instance).is_none()
    }
}

impl UniqueItems {
    /// The indexes of the first two equal items, if any.
    fn duplicate(&self, instance: &Value) -> Option<(usize, usize)> {
        let Value::Array(items) = instance else { return None };
        if !self.on {
            return None;
        }
        first_duplicate(items)
    }
}

/// The indexes of the first item equal (by JSON Schema's equality) to an earlier one, with
/// that earlier one's. Linear in the items' total size.
pub(super) fn first_duplicate(items: &[Value]) -> Option<(usize, usize)> {
    let mut seen: HashMap<Encoding, usize> = HashMap::with_capacity(items.len());
    let mut buffer = Encoding(Vec::new());
    for (index, item) in items.iter().enumerate() {
        buffer.0.clear();
        encode(item, &mut buffer.0);
        if let Some(&earlier) = seen.get(&buffer) {
            return Some((earlier, index));
        }
        seen.insert(std::mem::take(&mut buffer), index);
    }
    None
}

/// An item's encoding, as a key of the table. Each comparison of two keys (what a table
/// whose keys collide does for every pair) is counted as work, for the cost test below
/// (`crate::work`).
#[derive(Default)]
struct Encoding(Vec<u8>);

impl PartialEq for Encoding {
    fn eq(&self, other: &Self) -> bool {
        crate::work::count(1);
        self.0 == other.0
    }
}

impl Eq for Encoding {}

impl std::hash::Hash for Encoding {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

/// Writes `value` so that two values have the same bytes exactly when they are equal in
/// JSON Schema's sense: `1` and `1.0` alike, `0` and `-0.0` alike, object keys in any order.
fn encode(value: &Value, out: &mut Vec<u8>) {
    crate::work::count(1);
    match value {
        Value::Null => out.push(b'n'),
        Value::Bool(false) => out.push(b'f'),
        Value::Bool(true) => out.push(b't'),
        Value::Number(number) => encode_number(number, out),
        Value::String(text) => encode_text(text, out),
        Value::Array(items) => {
            out.push(b'a');
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                encode(item, out);
            }
        }
        Value::Object(map) => {
            out.push(b'o');
            out.extend_from_slice(&(map.len() as u64).to_le_bytes());
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (key, item) in entries {
                encode_text(key, out);
                encode(item, out);
            }
        }
    }
}

fn encode_text(text: &str, out: &mut Vec<u8>) {
    out.push(b's');
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
}

/// A whole number (however written: `3`, `3.0`, `-0.0`) as its exact integer; any other
/// number as its float's bits. Every `u64`/`i64` and every whole `f64` below 2^127 in size
/// is an exact `i128`, so equal numbers meet in the same form and unequal ones never do.
fn encode_number(number: &serde_json::Number, out: &mut Vec<u8>) {
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0; // 2^127
    let whole = if let Some(n) = number.as_u64() {
        Some(i128::from(n))
    } else if let Some(n) = number.as_i64() {
        Some(i128::from(n))
    } else {
        match number.as_f64() {
            // Exact: a whole f64 this small is an integer an i128 holds.
            Some(f) if f.fract() == 0.0 && f.abs() < LIMIT => Some(f as i128),
            _ => None,
        }
    };
    match whole {
        Some(n) => {
            out.push(b'i');
            out.extend_from_slice(&n.to_le_bytes());
        }
        None => {
            out.push(b'd');
            out.extend_from_slice(&number.as_f64().unwrap_or(f64::NAN).to_bits().to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn items(value: Value) -> Vec<Value> {
        match value {
            Value::Array(items) => items,
            _ => unreachable!(),
        }
    }

    #[test]
    fn equal_values_are_found_in_every_form_json_schema_calls_equal() {
        let cases = [
            (json!([1, 2, 1.0]), Some((0, 2))),
            (json!([0, -0.0]), Some((0, 1))),
            (json!([{"a": 1, "b": [2]}, {"b": [2.0], "a": 1}]), Some((0, 1))),
            (json!([null, false, 0, "", [], {}]), None),
            (json!([[1, 2], [[1], [2]], [[1, 2]], [1, [2]], [[1], 2]]), None),
            (json!(["a", "b", "c", "b"]), Some((1, 3))),
            (json!([9007199254740993u64, 9007199254740992.0]), None),
            (json!([1e300, 1e300]), Some((0, 1))),
            (json!([0.1, 0.30000000000000004, 0.1]), Some((0, 2))),
            (json!([{"a": "b"}, {"ab": ""}, {"": "ab"}]), None),
            (json!([-1, 18446744073709551615u64, -1.0]), Some((0, 2))),
        ];
        for (value, expected) in cases {
            assert_eq!(first_duplicate(&items(value.clone())), expected, "{value}");
        }
    }

    /// The shape that defeats the jsonschema crate's own check: 2^k distinct items from k
    /// leaves, each wrapped or not, whose element sequences all hash alike there.
    fn colliding_items(k: u32, n: usize) -> Vec<Value> {
        (0..n)
            .map(|i| {
                Value::Array(
                    (0..k)
                        .map(|bit| if i >> bit & 1 == 1 { json!([1]) } else { json!(1) })
                        .collect(),
                )
            })
            .collect()
    }

    /// The work counted: the values encoded and the comparisons of two encodings (which a
    /// weak hash of colliding items makes quadratic: every pair is compared).
    #[test]
    fn items_built_to_collide_cost_linear_work() {
        crate::work::assert_linear("uniqueItems over colliding items", 4_000, |n| {
            let items = colliding_items(18, n);
            crate::work::work_of(|| assert_eq!(first_duplicate(&items), None))
        });
    }

    #[test]
    fn the_override_applies_in_every_validator_pactum_builds() {
        let schema = json!({"type": "array", "uniqueItems": true});
        let validator = crate::schema::compile_detached(&schema).unwrap();
        let value = Value::Array(colliding_items(16, 2_000));
        assert!(validator.accepts(&value).unwrap());
        let findings = validator.check(&json!([1, 2, 1.0])).unwrap();
        assert!(findings[0].message.contains("items 0 and 2 are equal"), "{findings:?}");
        let off = crate::schema::compile_detached(&json!({"uniqueItems": false})).unwrap();
        assert!(off.accepts(&json!([1, 1])).unwrap());
    }
}
