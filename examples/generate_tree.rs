//! Generates projects for measuring `pactum validate` and hot reload at scale, registered
//! and promoted through the library (so registry.json has real hashes and a hash-chained
//! history):
//!
//! - `files` (the default): N contracts and N packs, one version each;
//! - `versions`: one pack and N versions of one contract id (`PRC-GEN-00000` 1.0.0,
//!   1.1.0, ...), each a minor bump of the one before;
//! - `findings`: one contract and its pack, the contract declaring N inputs that the
//!   template never uses (N `template_input_unused` findings in one file, each with its
//!   own JSON pointer).
//!
//! ```text
//! cargo run --release --example generate_tree -- /tmp/tree 10000 [files|versions|findings]
//! ```
#![allow(clippy::disallowed_methods)] // tests, benches and examples build their trees directly

use std::path::Path;

use pactum::registry::{EntryKind, Registry, lifecycle};
use serde_json::{Value, json};

/// When and by whom the generated registry's events were made.
fn stamp() -> lifecycle::Stamp {
    lifecycle::Stamp::new("2026-01-01T00:00:00Z", "generator")
}

fn write(path: &Path, value: &Value) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create folder");
    }
    std::fs::write(path, serde_json::to_vec_pretty(value).expect("json")).expect("write file");
}

fn pack(i: usize) -> Value {
    json!({"$schema": "../../schemas/prompt_pack.schema.json", "prompt_pack_id": format!("PRM-GEN-{i:05}"), "version": "1.0.0",
           "sections": {"role": "(role)", "task": "Summarize {{ text }} for {{ audience }}.", "output_format": "JSON"}})
}

fn contract(i: usize, version: &str, extra_inputs: usize) -> Value {
    let mut properties = json!({
        "text": {"type": "string", "maxLength": 20000}, "audience": {"type": "string", "enum": ["expert", "novice"]}});
    for k in 0..extra_inputs {
        properties[format!("unused_{k:05}")] = json!({"type": "string"});
    }
    json!({"$schema": "../../schemas/prompt_contract.schema.json", "contract_id": format!("PRC-GEN-{i:05}"), "version": version,
           "prompt_pack_id": format!("PRM-GEN-{i:05}"), "prompt_pack_version": "^1",
           "boundary": {"max_tokens": 512, "temperature": 0},
           "input_schema": {"type": "object", "required": ["text"], "properties": properties},
           "output_schema": {"type": "object", "required": ["summary", "score"], "properties": {
               "summary": {"type": "string"}, "score": {"type": "number", "minimum": 0, "maximum": 1}}}})
}

/// Writes `value` to `rel` under `root`, registers it and promotes it.
fn add(registry: &mut Registry, root: &Path, rel: &str, value: &Value) {
    let path = root.join(rel);
    write(&path, value);
    lifecycle::add(registry, &path, &stamp()).expect("add");
    let (kind, id) = match value.get("contract_id") {
        Some(id) => (EntryKind::Contract, id),
        None => (EntryKind::PromptPack, &value["prompt_pack_id"]),
    };
    let version = semver::Version::parse(value["version"].as_str().expect("version")).unwrap();
    lifecycle::promote(registry, kind, id.as_str().expect("id"), &version, &stamp())
        .expect("promote");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let root = args.next().unwrap_or_else(|| "/tmp/pactum-tree".to_string());
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let mode = args.next().unwrap_or_else(|| "files".to_string());
    let root = Path::new(&root);
    if root.exists() {
        std::fs::remove_dir_all(root).expect("clear the target folder");
    }
    let mut registry = Registry::empty(&root.join("registry.json"));
    match mode.as_str() {
        "files" => {
            for i in 0..n {
                add(&mut registry, root, &format!("prompt_packs/gen{i:05}/1.0.0.json"), &pack(i));
                let c = contract(i, "1.0.0", 0);
                add(&mut registry, root, &format!("contracts/gen{i:05}/1.0.0.json"), &c);
            }
        }
        "versions" => {
            add(&mut registry, root, "prompt_packs/gen/1.0.0.json", &pack(0));
            for v in 0..n {
                let version = format!("1.{v}.0");
                let c = contract(0, &version, 0);
                add(&mut registry, root, &format!("contracts/gen/{version}.json"), &c);
            }
        }
        "findings" => {
            add(&mut registry, root, "prompt_packs/gen/1.0.0.json", &pack(0));
            add(&mut registry, root, "contracts/gen/1.0.0.json", &contract(0, "1.0.0", n));
        }
        other => panic!("unknown mode `{other}`: files, versions or findings"),
    }
    pactum::registry::store::write_atomic(
        &root.join("registry.json"),
        registry.to_json().as_bytes(),
    )
    .expect("write registry");
    println!("{mode} tree of size {n} in {}", root.display());
}
