//! Assertions (SPEC §19): what an eval suite, or one of its cases, checks of an output.
//!
//! Every kind but `judge` is pure: a JSON value in, a verdict out. Each assertion looks at
//! the value its `pointer` names in the output (the whole output when it names none); a
//! missing value fails every kind. Regexes use the linear-time `regex` engine with a size
//! limit, and an assertion's `schema` is measured and compiled like a contract's, so a
//! hostile dataset line costs what its length allows, never more (SPEC §18).

use std::path::Path;

use crate::schema::Validator;
use serde_json::Value;

use crate::error::Finding;
use crate::id::Pin;
use crate::judge::JudgeSpec;

/// The largest regex an assertion may compile (bytes of compiled program).
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Values quoted in failure messages are cut to this many characters.
const QUOTE_CHARS: usize = 80;

/// The kinds of assertion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Equals,
    NotEquals,
    Contains,
    NotContains,
    Matches,
    OneOf,
    Between,
    Schema,
    Length,
    Judge,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Equals => "equals",
            Kind::NotEquals => "not_equals",
            Kind::Contains => "contains",
            Kind::NotContains => "not_contains",
            Kind::Matches => "matches",
            Kind::OneOf => "one_of",
            Kind::Between => "between",
            Kind::Schema => "schema",
            Kind::Length => "length",
            Kind::Judge => "judge",
        }
    }

    /// The kind named `name` (a result read back from a worker).
    pub(crate) fn named(name: &str) -> Option<Kind> {
        Kind::from_name(name)
    }

    fn from_name(name: &str) -> Option<Kind> {
        [
            Kind::Equals,
            Kind::NotEquals,
            Kind::Contains,
            Kind::NotContains,
            Kind::Matches,
            Kind::OneOf,
            Kind::Between,
            Kind::Schema,
            Kind::Length,
            Kind::Judge,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
    }
}

/// What an assertion compares with.
enum Check {
    Equals(Value),
    NotEquals(Value),
    Contains(Value),
    NotContains(Value),
    Matches(regex::Regex),
    OneOf(Vec<Value>),
    Between(Option<f64>, Option<f64>),
    Schema(Box<Validator>),
    Length(Option<f64>, Option<f64>),
    Judge(JudgeSpec),
}

/// One assertion, ready to check.
pub struct Assertion {
    pub kind: Kind,
    /// Into the output; empty for the whole output.
    pub pointer: String,
    /// Where the assertion is written (`/assertions/2`, `/expect/0`).
    pub at: String,
    /// The files a `schema` assertion's schema read (its `$ref`s, transitively), relative
    /// to the project root: part of what the assertion means, as the suite's own file is.
    pub reads: Vec<String>,
    check: Check,
}

impl std::fmt::Debug for Assertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assertion")
            .field("kind", &self.kind)
            .field("pointer", &self.pointer)
            .finish_non_exhaustive()
    }
}

/// The outcome of a pure check, or the judge a `judge` assertion needs.
pub enum Verdict<'a> {
    Pass,
    Fail(String),
    /// Ask this judge about this value.
    Judge(&'a JudgeSpec, &'a Value),
}

impl Assertion {
    /// Reads an assertion found at `at` (a JSON pointer, for findings). It is checked
    /// against `eval_suite.schema.json`'s assertion first; a `schema` assertion's schema
    /// resolves its references against `dir`, inside `root`.
    pub fn from_value(
        value: &Value,
        at: &str,
        dir: &Path,
        root: &Path,
    ) -> Result<Assertion, Vec<Finding>> {
        let found = crate::schema::check_eval_assertion(value);
        if !found.is_empty() {
            return Err(found
                .into_iter()
                .map(|f| Finding::new(format!("{at}{}", f.pointer), f.message))
                .collect());
        }
        let field = |name: &str| value.get(name);
        let text = |name: &str| field(name).and_then(Value::as_str).unwrap_or_default();
        let number = |name: &str| field(name).and_then(Value::as_f64);
        let at_field = |name: &str| crate::schema::join_pointer(at, name);
        let kind = Kind::from_name(text("kind"))
            .ok_or_else(|| vec![Finding::new(at_field("kind"), "unknown assertion kind")])?;
        let value_of = || field("value").cloned().unwrap_or(Value::Null);
        let mut reads = Vec::new();
        let check = match kind {
            Kind::Equals => Check::Equals(value_of()),
            Kind::NotEquals => Check::NotEquals(value_of()),
            Kind::Contains => Check::Contains(value_of()),
            Kind::NotContains => Check::NotContains(value_of()),
            Kind::Matches => Check::Matches(compile_regex(text("pattern")).map_err(|e| {
                vec![Finding::new(at_field("pattern"), format!("the regex does not compile: {e}"))]
            })?),
            Kind::OneOf => {
                Check::OneOf(field("values").and_then(Value::as_array).cloned().unwrap_or_default())
            }
            Kind::Between | Kind::Length => {
                let (min, max) = (number("min"), number("max"));
                if let (Some(lo), Some(hi)) = (min, max)
                    && lo > hi
                {
                    return Err(vec![Finding::new(
                        at_field("min"),
                        format!("min {lo} is above max {hi}: no value can pass"),
                    )]);
                }
                if kind == Kind::Between {
                    Check::Between(min, max)
                } else {
                    Check::Length(min, max)
                }
            }
            Kind::Schema => {
                let schema = field("schema").cloned().unwrap_or(Value::Bool(true));
                let files = crate::schema::graph::ProjectFiles::new(root);
                let base = crate::schema::graph::folder_uri(dir);
                let graph = crate::schema::graph::Graph::build(
                    &schema,
                    &crate::schema::graph::Origin::new(&base, &files),
                );
                reads = graph.files().into_keys().collect();
                let validator = crate::schema::compile_graph(&graph, &schema).map_err(|found| {
                    found
                        .into_iter()
                        .map(|f| {
                            Finding::new(format!("{}{}", at_field("schema"), f.pointer), f.message)
                        })
                        .collect::<Vec<_>>()
                })?;
                Check::Schema(Box::new(validator))
            }
            Kind::Judge => {
                let contract = Pin::parse(text("contract"))
                    .map_err(|e| vec![Finding::new(at_field("contract"), e.to_string())])?;
                Check::Judge(JudgeSpec {
                    contract,
                    criteria: text("criteria").to_string(),
                    expected: field("expected").cloned(),
                })
            }
        };
        Ok(Assertion {
            kind,
            pointer: text("pointer").to_string(),
            at: at.to_string(),
            reads,
            check,
        })
    }

    /// The judge this assertion asks, for a `judge` assertion.
    pub fn judge(&self) -> Option<&JudgeSpec> {
        match &self.check {
            Check::Judge(spec) => Some(spec),
            _ => None,
        }
    }

    /// Checks `output`.
    pub fn check<'a>(&'a self, output: &'a Value) -> Verdict<'a> {
        let Some(target) = output.pointer(&self.pointer) else {
            return Verdict::Fail(format!("{}: no value there", self.place()));
        };
        let fail = |what: String| Verdict::Fail(format!("{}: {what}", self.place()));
        match &self.check {
            Check::Equals(expected) => {
                if same(target, expected) {
                    Verdict::Pass
                } else {
                    fail(format!("{} is not {}", quote(target), quote(expected)))
                }
            }
            Check::NotEquals(unwanted) => {
                if same(target, unwanted) {
                    fail(format!("is {}", quote(unwanted)))
                } else {
                    Verdict::Pass
                }
            }
            Check::Contains(part) => match contains(target, part) {
                Some(true) => Verdict::Pass,
                Some(false) => fail(format!("{} does not contain {}", quote(target), quote(part))),
                None => fail(format!("{} is not a string, array or object", quote(target))),
            },
            Check::NotContains(part) => match contains(target, part) {
                Some(false) => Verdict::Pass,
                Some(true) => fail(format!("{} contains {}", quote(target), quote(part))),
                None => fail(format!("{} is not a string, array or object", quote(target))),
            },
            Check::Matches(re) => match target.as_str() {
                Some(s) if re.is_match(s) => Verdict::Pass,
                Some(_) => fail(format!("{} does not match /{}/", quote(target), re.as_str())),
                None => fail(format!("{} is not a string", quote(target))),
            },
            Check::OneOf(values) => {
                if values.iter().any(|v| same(target, v)) {
                    Verdict::Pass
                } else {
                    let list: Vec<String> = values.iter().take(8).map(quote).collect();
                    let more = if values.len() > 8 { ", …" } else { "" };
                    fail(format!("{} is not one of {}{more}", quote(target), list.join(", ")))
                }
            }
            Check::Between(min, max) => match target.as_f64() {
                Some(x) => match bounds(x, *min, *max) {
                    None => Verdict::Pass,
                    Some(why) => fail(format!("{x} is {why}")),
                },
                None => fail(format!("{} is not a number", quote(target))),
            },
            Check::Length(min, max) => {
                let length = match target {
                    Value::String(s) => s.chars().count(),
                    Value::Array(a) => a.len(),
                    Value::Object(o) => o.len(),
                    _ => return fail(format!("{} has no length", quote(target))),
                };
                match bounds(length as f64, *min, *max) {
                    None => Verdict::Pass,
                    Some(why) => fail(format!("length {length} is {why}")),
                }
            }
            Check::Schema(validator) => {
                let found = match validator.check(target) {
                    Ok(found) => found,
                    Err(too) => return fail(format!("is not checked against the schema: {too}")),
                };
                match found.first() {
                    None => Verdict::Pass,
                    Some(f) => fail(format!(
                        "does not fit the schema: {}: {}",
                        crate::validate::pointer_label(&f.pointer),
                        f.message
                    )),
                }
            }
            Check::Judge(spec) => Verdict::Judge(spec, target),
        }
    }

    /// `kind /pointer` (or `kind (output)`), how a failure names its assertion.
    pub(crate) fn place(&self) -> String {
        if self.pointer.is_empty() {
            format!("{} (output)", self.kind.as_str())
        } else {
            format!("{} {}", self.kind.as_str(), self.pointer)
        }
    }
}

/// Compiles an assertion's regex with the linear-time engine and a size limit.
pub fn compile_regex(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            let last = e.to_string().lines().last().unwrap_or_default().trim().to_string();
            last.strip_prefix("error: ").map(str::to_string).unwrap_or(last)
        })
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let whole = |n: &serde_json::Number| {
                n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))
            };
            match (whole(x), whole(y)) {
                (Some(a), Some(b)) => a == b,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Whether `target` contains `part`: a substring, an array element, an object key.
fn contains(target: &Value, part: &Value) -> Option<bool> {
    match target {
        Value::String(s) => Some(part.as_str().is_some_and(|p| s.contains(p))),
        Value::Array(items) => Some(items.iter().any(|item| same(item, part))),
        Value::Object(map) => Some(part.as_str().is_some_and(|k| map.contains_key(k))),
        _ => None,
    }
}

/// Why `x` is outside `[min, max]`, if it is.
fn bounds(x: f64, min: Option<f64>, max: Option<f64>) -> Option<String> {
    match (min, max) {
        (Some(lo), _) if x < lo => Some(format!("below the minimum {lo}")),
        (_, Some(hi)) if x > hi => Some(format!("above the maximum {hi}")),
        _ => None,
    }
}

/// A value as compact JSON, cut to [`QUOTE_CHARS`] characters.
fn quote(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use serde_json::json;

    fn assertion(v: Value) -> Assertion {
        let dir = std::env::temp_dir();
        Assertion::from_value(&v, "/assertions/0", &dir, &dir).unwrap()
    }

    /// `Ok(())` when the assertion passes on `output`, else its message.
    fn check(v: Value, output: Value) -> Result<(), String> {
        match assertion(v).check(&output) {
            Verdict::Pass => Ok(()),
            Verdict::Fail(m) => Err(m),
            Verdict::Judge(..) => Err("judge".into()),
        }
    }

    #[test]
    fn every_pure_kind_passes_and_fails() {
        let out =
            json!({"label": "billing", "confidence": 0.92, "reasons": ["double charge"], "n": 1});
        let cases = [
            (json!({"kind": "equals", "pointer": "/label", "value": "billing"}), true),
            (json!({"kind": "equals", "pointer": "/n", "value": 1.0}), true),
            (json!({"kind": "equals", "pointer": "/label", "value": "other"}), false),
            (json!({"kind": "not_equals", "pointer": "/label", "value": "other"}), true),
            (json!({"kind": "not_equals", "pointer": "/label", "value": "billing"}), false),
            (json!({"kind": "contains", "pointer": "/reasons", "value": "double charge"}), true),
            (json!({"kind": "contains", "pointer": "/label", "value": "bill"}), true),
            (json!({"kind": "contains", "value": "label"}), true),
            (json!({"kind": "not_contains", "pointer": "/label", "value": "tech"}), true),
            (
                json!({"kind": "not_contains", "pointer": "/reasons", "value": "double charge"}),
                false,
            ),
            (json!({"kind": "matches", "pointer": "/label", "pattern": "^bill"}), true),
            (json!({"kind": "matches", "pointer": "/label", "pattern": "^tech"}), false),
            (
                json!({"kind": "one_of", "pointer": "/label", "values": ["billing", "account"]}),
                true,
            ),
            (json!({"kind": "one_of", "pointer": "/label", "values": ["other"]}), false),
            (json!({"kind": "between", "pointer": "/confidence", "min": 0.5, "max": 1}), true),
            (json!({"kind": "between", "pointer": "/confidence", "min": 0.95}), false),
            (json!({"kind": "length", "pointer": "/reasons", "min": 1, "max": 3}), true),
            (json!({"kind": "length", "pointer": "/label", "max": 3}), false),
            (
                json!({"kind": "schema", "pointer": "/reasons", "schema": {"type": "array", "maxItems": 1}}),
                true,
            ),
            (json!({"kind": "schema", "schema": {"required": ["missing"]}}), false),
            (json!({"kind": "equals", "pointer": "/absent", "value": 1}), false),
        ];
        for (a, passes) in cases {
            let result = check(a.clone(), out.clone());
            assert_eq!(result.is_ok(), passes, "{a} gave {result:?}");
        }
    }

    #[test]
    fn failures_say_what_was_found() {
        let out = json!({"label": "technical"});
        let m =
            check(json!({"kind": "equals", "pointer": "/label", "value": "billing"}), out.clone());
        assert_eq!(m.unwrap_err(), "equals /label: \"technical\" is not \"billing\"");
        let m = check(json!({"kind": "equals", "pointer": "/x", "value": 1}), out.clone());
        assert_eq!(m.unwrap_err(), "equals /x: no value there");
        let m = check(json!({"kind": "length", "max": 0}), out);
        assert_eq!(m.unwrap_err(), "length (output): length 1 is above the maximum 0");
    }

    #[test]
    fn judge_assertions_name_their_judge() {
        let a =
            assertion(json!({"kind": "judge", "contract": "PRC-JUDGE-001@^1", "pointer": "/label",
                                 "criteria": "names the right queue", "expected": "billing"}));
        let out = json!({"label": "billing"});
        match a.check(&out) {
            Verdict::Judge(spec, value) => {
                assert_eq!(spec.contract.to_string(), "PRC-JUDGE-001@^1");
                assert_eq!(value, &json!("billing"));
                assert_eq!(spec.expected, Some(json!("billing")));
            }
            _ => panic!("a judge assertion asks its judge"),
        }
    }

    #[test]
    fn malformed_assertions_are_findings_at_their_pointer() {
        let dir = std::env::temp_dir();
        let bad = |v: Value| Assertion::from_value(&v, "/assertions/2", &dir, &dir).unwrap_err();
        let f = bad(json!({"kind": "equals", "pointer": "/label"}));
        assert_eq!(f[0].pointer, "/assertions/2/value", "{f:?}");
        let f = bad(json!({"kind": "matches", "pattern": "(unclosed"}));
        assert_eq!(f[0].pointer, "/assertions/2/pattern", "{f:?}");
        let f = bad(json!({"kind": "matches", "pattern": "(a)\\1"}));
        assert!(f[0].message.contains("does not compile"), "back-references are refused: {f:?}");
        let f = bad(json!({"kind": "between", "min": 2, "max": 1}));
        assert_eq!(f[0].pointer, "/assertions/2/min", "{f:?}");
        let f = bad(json!({"kind": "shouts"}));
        assert_eq!(f[0].pointer, "/assertions/2/kind", "{f:?}");
        let f = bad(json!({"kind": "judge", "criteria": "x"}));
        assert_eq!(f[0].pointer, "/assertions/2/contract", "{f:?}");
    }

    /// `(a+)+$` on "aaaa…!" takes time exponential in the `a`s in a backtracking engine:
    /// 2^100,000 steps here, where the linear-time engine takes milliseconds. The engine's
    /// steps cannot be counted from outside, so the test has a deadline, 60 s: hundreds of
    /// times what the check takes on a loaded machine, and never met by a backtracking one.
    #[test]
    fn a_catastrophic_regex_runs_in_linear_time() {
        let a = assertion(json!({"kind": "matches", "pattern": "(a+)+$"}));
        let subject = json!(format!("{}!", "a".repeat(100_000)));
        let failed = crate::work::assert_finishes(
            "(a+)+$ on 100,000 a's",
            std::time::Duration::from_secs(60),
            move || matches!(a.check(&subject), Verdict::Fail(_)),
        );
        assert!(failed, "no match: the subject ends with `!`");
    }
}
