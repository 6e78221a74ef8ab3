//! JSON numbers compared exactly, as the validator compares them: integers as integers
//! (`9007199254740993` is not `9007199254740992`, although both are the same `f64`),
//! floats as the `f64` they are, an integer and a float by their mathematical values
//! (`1` is `1.0`; `2^53 + 1` is not `2^53` written as a float). Every place the diff
//! compares numbers — bounds, `multipleOf`, `enum`/`const` values, `boundary.max_tokens`
//! — goes through [`Num`] or [`key`], so none can round through `f64` again.
//!
//! serde_json is built without `arbitrary_precision` (Cargo.toml): a decimal is parsed to
//! the nearest `f64` (`float_roundtrip`), and that `f64` is what the validator checks
//! instances against, so two decimals that parse to the same `f64` constrain the same
//! instances and are rightly the same bound here.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Number, Value};

/// A JSON number as the parser holds it: an integer (any `u64` or `i64`) or a finite float.
#[derive(Clone, Copy, Debug)]
pub(super) enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    /// The number a JSON value is; `None` for anything else (and a float that is not
    /// finite, which JSON cannot write).
    pub(super) fn of(value: &Value) -> Option<Num> {
        match value {
            Value::Number(n) => Num::of_number(n),
            _ => None,
        }
    }

    fn of_number(n: &Number) -> Option<Num> {
        if let Some(u) = n.as_u64() {
            Some(Num::Int(i128::from(u)))
        } else if let Some(i) = n.as_i64() {
            Some(Num::Int(i128::from(i)))
        } else {
            n.as_f64().filter(|f| f.is_finite()).map(Num::Float)
        }
    }

    /// Whether every multiple of `self` is a multiple of `step` (both above zero): whether
    /// `self / step` is an integer, decided exactly. Each number is `odd · 2^exponent`
    /// exactly (an `f64` is a binary fraction), so the quotient is an integer exactly when
    /// the odd part of `step` divides that of `self` and `self`'s exponent is not smaller.
    /// `None` when either is not above zero.
    pub(super) fn is_multiple_of(self, step: Num) -> Option<bool> {
        let (a, p) = self.binary()?;
        let (b, q) = step.binary()?;
        Some(p >= q && a % b == 0)
    }

    /// `odd · 2^exponent`, for a number above zero.
    fn binary(self) -> Option<(i128, i32)> {
        let (mantissa, exponent) = match self {
            Num::Int(i) if i > 0 => (i, 0),
            Num::Float(f) if f > 0.0 && f.is_finite() => {
                let bits = f.to_bits();
                let fraction = i128::from(bits & ((1 << 52) - 1));
                // The biased exponent is 11 bits: it always fits an `i32`.
                let biased = i32::try_from((bits >> 52) & 0x7ff).unwrap_or(0);
                if biased == 0 { (fraction, -1074) } else { (fraction | (1 << 52), biased - 1075) }
            }
            _ => return None,
        };
        let zeros = mantissa.trailing_zeros();
        // `zeros` is below 128.
        Some((mantissa >> zeros, exponent + i32::try_from(zeros).unwrap_or(0)))
    }
}

/// An integer against a finite float, exactly.
fn cmp_int_float(i: i128, f: f64) -> Ordering {
    // 2^127: every float at or past it lies beyond every `i128`.
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    if f.is_nan() {
        return Ordering::Equal;
    }
    if f >= LIMIT {
        return Ordering::Less;
    }
    if f < -LIMIT {
        return Ordering::Greater;
    }
    let whole = f.trunc();
    // In range and integral: the conversion is exact.
    #[allow(clippy::cast_possible_truncation)]
    let t = whole as i128;
    match i.cmp(&t) {
        Ordering::Equal => 0.0_f64.partial_cmp(&(f - whole)).unwrap_or(Ordering::Equal),
        other => other,
    }
}

impl Ord for Num {
    fn cmp(&self, other: &Num) -> Ordering {
        match (*self, *other) {
            (Num::Int(a), Num::Int(b)) => a.cmp(&b),
            // `-0.0` and `0.0` are the same number; JSON has no NaN.
            (Num::Float(a), Num::Float(b)) => {
                if a == b {
                    Ordering::Equal
                } else {
                    a.total_cmp(&b)
                }
            }
            (Num::Int(a), Num::Float(b)) => cmp_int_float(a, b),
            (Num::Float(a), Num::Int(b)) => cmp_int_float(b, a).reverse(),
        }
    }
}

impl PartialOrd for Num {
    fn partial_cmp(&self, other: &Num) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Num {
    fn eq(&self, other: &Num) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Num {}

/// A bound on one side: a number, or none (below or above every number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Limit {
    Below,
    At(Num),
    Above,
}

/// The value as a text that two values share exactly when JSON Schema calls them equal
/// (`enum`, `const`): numbers by their value (`1` and `1.0` alike, `2^53 + 1` apart from
/// `2^53`), object keys sorted. Sets of values compare through it in linear time.
pub(super) fn key(value: &Value) -> String {
    crate::work::count(1);
    let mut out = String::new();
    write_key(value, &mut out);
    out
}

fn write_key(value: &Value, out: &mut String) {
    // Iteratively: a value nested deeply must not exhaust the stack.
    enum Step<'v> {
        Value(&'v Value),
        Text(&'static str),
        Key(&'v str),
    }
    let mut stack = vec![Step::Value(value)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Text(text) => out.push_str(text),
            Step::Key(k) => {
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
            }
            Step::Value(Value::Null) => out.push_str("null"),
            Step::Value(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
            Step::Value(Value::String(s)) => {
                out.push_str(&serde_json::to_string(s).unwrap_or_default());
            }
            Step::Value(Value::Number(n)) => match Num::of_number(n) {
                Some(Num::Int(i)) => {
                    let _ = write!(out, "{i}");
                }
                Some(Num::Float(f)) => {
                    // An integral float an integer could equal is written as that integer.
                    let whole = f.trunc();
                    if whole == f && f.abs() < 1e38 {
                        #[allow(clippy::cast_possible_truncation)]
                        let _ = write!(out, "{}", whole as i128);
                    } else {
                        let _ = write!(out, "{f:e}");
                    }
                }
                None => {
                    let _ = write!(out, "?{n}");
                }
            },
            Step::Value(Value::Array(items)) => {
                out.push('[');
                stack.push(Step::Text("]"));
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    if i > 0 {
                        stack.push(Step::Text(","));
                    }
                }
            }
            Step::Value(Value::Object(map)) => {
                out.push('{');
                stack.push(Step::Text("}"));
                let mut keys: Vec<(&String, &Value)> = map.iter().collect();
                keys.sort_by(|a, b| a.0.cmp(b.0));
                for (i, (k, v)) in keys.into_iter().enumerate().rev() {
                    stack.push(Step::Value(v));
                    stack.push(Step::Key(k));
                    if i > 0 {
                        stack.push(Step::Text(","));
                    }
                }
            }
        }
    }
}

/// Whether two values are equal as JSON Schema's `enum` and `const` compare them.
pub(super) fn same_value(a: &Value, b: &Value) -> bool {
    crate::work::count(1);
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (Num::of_number(x), Num::of_number(y)) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn num(text: &str) -> Num {
        Num::of(&serde_json::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn integers_and_floats_compare_by_their_exact_values() {
        let cases: &[(&str, &str, Ordering)] = &[
            ("9007199254740993", "9007199254740992", Ordering::Greater),
            ("9007199254740993", "9007199254740992.0", Ordering::Greater),
            ("9007199254740992", "9007199254740992.0", Ordering::Equal),
            ("1", "1.0", Ordering::Equal),
            ("1", "1.5", Ordering::Less),
            ("-1", "-1.5", Ordering::Greater),
            ("-2", "-1.5", Ordering::Less),
            ("0", "-0.0", Ordering::Equal),
            ("0.0", "-0.0", Ordering::Equal),
            ("18446744073709551615", "18446744073709551616.0", Ordering::Less),
            ("-9223372036854775808", "-9223372036854775808.0", Ordering::Equal),
            ("18446744073709551615", "1e300", Ordering::Less),
            ("-18446744073709551615", "-1e300", Ordering::Greater),
            ("0.1", "0.2", Ordering::Less),
        ];
        for (a, b, expected) in cases {
            assert_eq!(num(a).cmp(&num(b)), *expected, "{a} vs {b}");
            assert_eq!(num(b).cmp(&num(a)), expected.reverse(), "{b} vs {a}");
        }
    }

    #[test]
    fn limits_order_around_every_number() {
        assert!(Limit::Below < Limit::At(num("-1e300")));
        assert!(Limit::At(num("1e300")) < Limit::Above);
        assert!(Limit::At(num("9007199254740992")) < Limit::At(num("9007199254740993")));
    }

    #[test]
    fn multiples_are_decided_exactly() {
        let cases: &[(&str, &str, Option<bool>)] = &[
            ("4", "2", Some(true)),
            ("2", "4", Some(false)),
            ("9007199254740993", "3", Some(true)),
            ("9007199254740993", "9007199254740992", Some(false)),
            ("6", "1.5", Some(true)),
            ("1", "0.5", Some(true)),
            ("0.5", "1", Some(false)),
            ("0.2", "0.1", Some(true)),
            ("0.3", "0.1", Some(false)),
            ("2.0", "2", Some(true)),
            ("0", "1", None),
            ("1", "-1", None),
        ];
        for (value, step, expected) in cases {
            assert_eq!(num(value).is_multiple_of(num(step)), *expected, "{value} by {step}");
        }
    }

    #[test]
    fn keys_agree_with_json_schema_equality() {
        let pairs = [
            (json!(1), json!(1.0), true),
            (json!(9007199254740993_u64), json!(9007199254740992_u64), false),
            (json!(9007199254740993_u64), json!(9007199254740992.0), false),
            (json!({"a": [1, "x"], "b": null}), json!({"b": null, "a": [1.0, "x"]}), true),
            (json!([1, 2]), json!([2, 1]), false),
            (json!("1"), json!(1), false),
            (json!(0.5), json!(0.5), true),
            (json!(-0.0), json!(0), true),
            (json!({"a": 1}), json!({"a": 1, "b": 2}), false),
        ];
        for (a, b, equal) in pairs {
            assert_eq!(same_value(&a, &b), equal, "{a} vs {b}");
            assert_eq!(key(&a) == key(&b), equal, "{a} vs {b}: {} / {}", key(&a), key(&b));
        }
    }
}
