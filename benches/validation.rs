//! Bounded validation (`pactum::schema::Validator`): what a validation costs in the
//! measure's steps, how long it takes, and what the same value costs unbounded (the
//! `jsonschema` validator called directly, as pactum did before the budget).
//!
//! Run: `cargo bench --bench validation`. Prints, per shape, the value's size, its cost in
//! steps, the median time of a bounded check (3 runs) and nanoseconds per step; for values
//! over the budget, how long the refusal took and how long the unbounded validator takes.
#![allow(clippy::disallowed_methods)] // benches compare with the unbounded validator

use std::time::{Duration, Instant};

use pactum::schema::{VALIDATION_BUDGET, Validator, compile_detached};
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn median(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..3)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[1]
}

fn branches(n: usize) -> Value {
    let branches: Vec<Value> =
        (0..n).map(|i| json!({"type": "object", "required": [format!("k{i}")]})).collect();
    json!({"type": "array", "items": {"anyOf": branches}})
}

fn typical() -> Value {
    json!({"type": "object", "required": ["label", "items"], "properties": {
        "label": {"enum": ["a", "b", "c"]}, "confidence": {"type": "number", "minimum": 0},
        "items": {"type": "array", "items": {"type": "object", "required": ["title", "url"],
            "additionalProperties": false, "properties": {
                "title": {"type": "string", "maxLength": 200},
                "url": {"type": "string", "pattern": "^https://"},
                "rank": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}}}})
}

fn report(name: &str, schema: &Value, instance: &Value, unbounded: bool) {
    let v: Validator = compile_detached(schema).expect("compiles");
    let bytes = serde_json::to_string(instance).expect("serializes").len();
    match v.cost(instance) {
        Ok(cost) => {
            let t = median(|| {
                v.accepts(instance).expect("within budget");
            });
            println!(
                "{name}: {:.1} MiB, cost {cost} steps ({:.0}% of the budget), check {:?}, {:.1} ns/step",
                bytes as f64 / 1048576.0,
                100.0 * cost as f64 / VALIDATION_BUDGET as f64,
                t,
                t.as_nanos() as f64 / cost as f64
            );
        }
        Err(too) => {
            let refused = median(|| {
                v.accepts(instance).expect_err("over budget");
            });
            let raw = jsonschema::validator_for(schema).expect("compiles");
            let t = if unbounded {
                let start = Instant::now();
                let _ = raw.is_valid(instance);
                format!("{:?}", start.elapsed())
            } else {
                "not run".into()
            };
            println!(
                "{name}: {:.1} MiB, cost {:?} steps: refused in {refused:?}; unbounded is_valid {t}",
                bytes as f64 / 1048576.0,
                too.cost
            );
        }
    }
}

fn main() {
    let item = json!({"k299": 1});
    for n in [50_000, 100_000, 150_000, 250_000, 1_000_000] {
        let instance = Value::Array(vec![item.clone(); n]);
        report(&format!("anyOf of 300 branches x {n} items"), &branches(300), &instance, true);
    }
    let row = json!({"title": "t", "url": "https://e", "rank": 1, "tags": ["a", "b"]});
    let per = serde_json::to_string(&row).expect("serializes").len() + 1;
    let reply = json!({"label": "a", "items": vec![row; (16 << 20) / per]});
    report("typical output schema, 16 MiB reply", &typical(), &reply, false);
    let dense = Value::Array(vec![json!(0); 8 << 20]);
    report(
        "array of integers, 16 MiB reply",
        &json!({"type": "array", "items": {"type": "integer"}}),
        &dense,
        false,
    );
    // Error collection of a recursive schema whose two branches both recurse.
    let recursive = json!({"$defs": {"n": {"anyOf": [
        {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/n"}},
        {"type": "array", "maxItems": 9, "items": {"$ref": "#/$defs/n"}},
        {"type": "integer"}]}}, "$ref": "#/$defs/n"});
    let v = compile_detached(&recursive).expect("compiles");
    let raw = jsonschema::validator_for(&recursive).expect("compiles");
    for depth in [12, 14, 16, 18] {
        let value = (0..depth).fold(json!("x"), |inner, _| json!([inner]));
        let bounded = median(|| {
            let _ = v.check(&value);
        });
        let start = Instant::now();
        let errors = raw.iter_errors(&value).count();
        println!(
            "recursive anyOf errors, depth {depth} ({} bytes): cost {:?}, bounded check {bounded:?}; unbounded iter_errors {:?} ({errors} errors)",
            serde_json::to_string(&value).expect("serializes").len(),
            v.cost(&value).ok(),
            start.elapsed()
        );
    }
}
