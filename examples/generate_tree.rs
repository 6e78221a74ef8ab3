//! Generates a project of N contracts and N packs, registered and promoted through the
//! library (so registry.json has real hashes and a hash-chained history), for measuring
//! `pactum validate` and hot reload at scale.
//!
//! ```text
//! cargo run --release --example generate_tree -- /tmp/tree 10000
//! ```

use std::path::Path;

use pactum::registry::{EntryKind, Registry, lifecycle};
use serde_json::json;

fn write(path: &Path, value: &serde_json::Value) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create folder");
    }
    std::fs::write(path, serde_json::to_vec_pretty(value).expect("json")).expect("write file");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let root = args.next().unwrap_or_else(|| "/tmp/pactum-tree".to_string());
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let root = Path::new(&root);
    if root.exists() {
        std::fs::remove_dir_all(root).expect("clear the target folder");
    }
    let stamp = lifecycle::Stamp::new("2026-01-01T00:00:00Z", "generator");
    let at = &stamp;
    let mut registry = Registry::empty(&root.join("registry.json"));
    for i in 0..n {
        let pack = root.join(format!("prompt_packs/gen{i:05}/1.0.0.json"));
        let contract = root.join(format!("contracts/gen{i:05}/1.0.0.json"));
        write(
            &pack,
            &json!({"$schema": "../../schemas/prompt_pack.schema.json", "prompt_pack_id": format!("PRM-GEN-{i:05}"), "version": "1.0.0",
                    "sections": {"role": "(role)", "task": "Summarize {{ text }} for {{ audience }}.", "output_format": "JSON"}}),
        );
        write(
            &contract,
            &json!({"$schema": "../../schemas/prompt_contract.schema.json", "contract_id": format!("PRC-GEN-{i:05}"), "version": "1.0.0",
                    "prompt_pack_id": format!("PRM-GEN-{i:05}"), "prompt_pack_version": "^1",
                    "boundary": {"max_tokens": 512, "temperature": 0},
                    "input_schema": {"type": "object", "required": ["text"], "properties": {
                        "text": {"type": "string", "maxLength": 20000}, "audience": {"type": "string", "enum": ["expert", "novice"]}}},
                    "output_schema": {"type": "object", "required": ["summary", "score"], "properties": {
                        "summary": {"type": "string"}, "score": {"type": "number", "minimum": 0, "maximum": 1}}}}),
        );
        lifecycle::add(&mut registry, &pack, at).expect("add pack");
        lifecycle::add(&mut registry, &contract, at).expect("add contract");
        let v = semver::Version::new(1, 0, 0);
        lifecycle::promote(
            &mut registry,
            EntryKind::PromptPack,
            &format!("PRM-GEN-{i:05}"),
            &v,
            at,
        )
        .expect("promote pack");
        lifecycle::promote(&mut registry, EntryKind::Contract, &format!("PRC-GEN-{i:05}"), &v, at)
            .expect("promote contract");
    }
    pactum::registry::store::write_atomic(
        &root.join("registry.json"),
        registry.to_json().as_bytes(),
    )
    .expect("write registry");
    println!("{} contracts and {} packs in {}", n, n, root.display());
}
