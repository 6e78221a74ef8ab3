//! One exchange's overhead, end to end, for a typical contract: validate the input against
//! `input_schema`, render the pack, extract JSON from a fenced reply, validate it against
//! `output_schema`. Validators and the pack are compiled once, as the executor does.
//!
//! Run: `cargo bench --bench exchange`. The bench uses mimalloc, like the `pactum` binary. The comparable Python pipeline (jsonschema compiled
//! once, Jinja2 strict, fence/brace/direct extraction) is measured by the peer script
//! described in BENCHMARKS.md.
#![allow(clippy::disallowed_methods)] // tests, benches and examples build their trees directly

use std::path::Path;

use pactum::contract::Contract;
use pactum::exchange::{check_input, check_output};
use pactum::gateway::ResponseBody;
use pactum::pack::PromptPack;
use pactum::project::Validators;
use pactum::render::CompiledPack;
use serde_json::{Value, json};

/// The allocator the `pactum` binary uses (see ARCHITECTURE.md); BENCHMARKS.md also
/// gives the figure with the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

struct Fixture {
    contract: Contract,
    validators: Validators,
    pack: CompiledPack,
    input: Value,
    reply: ResponseBody,
}

fn fixture() -> Fixture {
    let contract = Contract::from_value(
        json!({
            "contract_id": "PRC-TRIAGE-001", "version": "1.0.0", "prompt_pack_id": "PRM-TRIAGE-001",
            "boundary": {"max_tokens": 256, "temperature": 0},
            "input_schema": {"type": "object", "required": ["message"], "properties": {
                "message": {"type": "string", "maxLength": 4000},
                "earlier": {"type": "array", "items": {"type": "string"}},
                "effort": {"type": "string", "enum": ["quick", "thorough"]}}},
            "output_schema": {"type": "object", "required": ["queue", "score"], "properties": {
                "queue": {"type": "string", "enum": ["x", "y", "z"]},
                "score": {"type": "number", "minimum": 0, "maximum": 1},
                "why": {"type": "array", "items": {"type": "string"}}}}
        }),
        "bench",
        Path::new("bench.json"),
    )
    .expect("bench contract");
    let root = std::env::temp_dir();
    let compile = |s: &Option<Value>| {
        s.as_ref().map(|s| pactum::schema::compile(s, &root, &root).expect("schema"))
    };
    let validators = Validators {
        input: compile(&contract.input_schema),
        output: compile(&contract.output_schema),
    };
    let pack = PromptPack::from_value(
        &json!({"prompt_pack_id": "PRM-TRIAGE-001", "version": "1.0.0",
                "template": "## 1. Task\nRoute this message: {{ message }} (effort {{ effort }}); earlier turns: {{ earlier }}\n## 2. Output\nA JSON object with queue and score."}),
        "bench",
        Path::new("pack.json"),
    )
    .expect("bench pack");
    let pack = CompiledPack::compile(&pack).expect("compiled pack");
    let input = json!({"message": "My card was billed two times for the same month, what should I do?",
                       "earlier": ["hi there", "it is about a payment"], "effort": "thorough"});
    let reply = ResponseBody::Text(
        "Here is the routing.\n```json\n{\"queue\": \"y\", \"score\": 0.87, \"why\": [\"double payment\", \"calm tone\"]}\n```\nAnything else?".into(),
    );
    Fixture { contract, validators, pack, input, reply }
}

/// Input validation + render + extraction + output validation.
#[divan::bench]
fn exchange_overhead(bencher: divan::Bencher) {
    let f = fixture();
    bencher.bench(|| {
        check_input(&f.contract, &f.validators, divan::black_box(&f.input)).expect("input");
        let messages = f.pack.render(divan::black_box(&f.input), true).expect("render");
        let out = check_output(&f.contract, &f.validators, divan::black_box(&f.reply), None)
            .expect("output");
        (messages, out)
    });
}

#[divan::bench]
fn input_validation(bencher: divan::Bencher) {
    let f = fixture();
    bencher.bench(|| {
        check_input(&f.contract, &f.validators, divan::black_box(&f.input)).expect("input")
    });
}

#[divan::bench]
fn render(bencher: divan::Bencher) {
    let f = fixture();
    bencher.bench(|| f.pack.render(divan::black_box(&f.input), true).expect("render"));
}

#[divan::bench]
fn extract_and_validate_output(bencher: divan::Bencher) {
    let f = fixture();
    bencher.bench(|| {
        check_output(&f.contract, &f.validators, divan::black_box(&f.reply), None).expect("output")
    });
}

/// The same inputs through a pack in the canonical object form (SPEC §3.2): the form whose
/// cost the section-tree rendering must keep (BENCHMARKS.md).
fn canonical_pack() -> CompiledPack {
    let pack = PromptPack::from_value(
        &json!({"prompt_pack_id": "PRM-TRIAGE-001", "version": "1.0.0", "sections": {
            "role": "You route support messages.",
            "constraints": "Pick exactly one queue.",
            "output_format": "A JSON object with queue and score.",
            "required_inputs": {"message": "the message", "earlier": "earlier turns"},
            "context": "{% for e in earlier %}- {{ e }}\n{% endfor %}",
            "task": "Route this message: {{ message }} (effort {{ effort }})"}}),
        "bench",
        Path::new("pack.json"),
    )
    .expect("canonical pack");
    CompiledPack::compile(&pack).expect("compiled canonical pack")
}

#[divan::bench]
fn render_canonical(bencher: divan::Bencher) {
    let f = fixture();
    let pack = canonical_pack();
    bencher.bench(|| pack.render(divan::black_box(&f.input), true).expect("render"));
}

/// A tree pack of the same size as [`canonical_pack`], with a condition, nesting and a
/// summarized section (SPEC §14, §15).
fn tree_pack() -> CompiledPack {
    let pack = PromptPack::from_value(
        &json!({"prompt_pack_id": "PRM-TRIAGE-001", "version": "1.0.0", "sections": [
            {"key": "role", "title": "Role", "message": "system", "template": "You route support messages."},
            {"key": "rules", "title": "Constraints", "message": "system", "template": "Pick exactly one queue.",
             "children": [{"key": "format", "title": "Output Format", "template": "A JSON object with queue and score."}]},
            {"key": "context", "title": "Context", "template": "{% for e in earlier %}- {{ e }}\n{% endfor %}"},
            {"key": "task", "title": "Task", "template": "Route this message: {{ message }} (effort {{ effort }})"},
            {"key": "careful", "title": "Careful", "enabled": "effort == 'thorough'", "template": "Weigh every queue."},
            {"key": "queues", "title": "Queues", "visibility": "summary", "summary": "What each queue handles.",
             "template": "x: billing; y: payments; z: other."}]}),
        "bench",
        Path::new("pack.json"),
    )
    .expect("tree pack");
    CompiledPack::compile(&pack).expect("compiled tree pack")
}

#[divan::bench]
fn render_tree(bencher: divan::Bencher) {
    let f = fixture();
    let pack = tree_pack();
    let closed = std::collections::BTreeSet::new();
    bencher.bench(|| pack.render_open(divan::black_box(&f.input), true, &closed).expect("render"));
}
