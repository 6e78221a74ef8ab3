//! Section trees (SPEC §14): the canonical object form is shorthand for a tree and renders
//! byte for byte as before. Every shipped pack, rendered with each of its contract's example
//! inputs, with and without a system message, is pinned by one snapshot taken before trees
//! existed (later versions of the shipped packs, such as the kernel's 2.0.0 packs, added
//! entries to it; none changed).

use std::path::{Path, PathBuf};

use pactum::pack::PromptPack;
use pactum::render::render;
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(json_files(&path));
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn shipped_packs_render_as_before() {
    let packs: Vec<PromptPack> = json_files(&repo().join("prompt_packs"))
        .iter()
        .map(|p| PromptPack::from_value(&read(p), "x", p).unwrap())
        .collect();
    let mut out = String::new();
    let mut rendered = 0;
    for path in json_files(&repo().join("contracts")) {
        let contract = read(&path);
        let pack_id = contract["prompt_pack_id"].as_str().unwrap();
        let wanted = contract["prompt_pack_version"].as_str().unwrap_or_default();
        let wanted = pactum::id::Requirement::parse(wanted).unwrap();
        // The pack the contract resolves to: its id, the highest version its pin allows.
        let pack = packs
            .iter()
            .filter(|p| p.id == pack_id && wanted.matches(&p.version))
            .max_by_key(|p| p.version.clone());
        let Some(pack) = pack else { continue };
        // Packs in tree form came after the snapshot; tests/cli_disclosure.rs pins them.
        if matches!(pack.body, pactum::pack::PackBody::Tree(_)) {
            continue;
        }
        for example in contract["examples"].as_array().into_iter().flatten() {
            for system in [true, false] {
                let messages = render(pack, &example["input"], system).unwrap();
                out.push_str(&format!(
                    "=== {} {} system={system}\n",
                    pack.key(),
                    example["name"].as_str().unwrap_or("?")
                ));
                for m in messages {
                    out.push_str(&format!("--- {:?}\n{}\n", m.role, m.content));
                }
                rendered += 1;
            }
        }
    }
    assert!(rendered >= 20, "only {rendered} renders: the shipped packs moved?");
    insta::assert_snapshot!("shipped_packs", out);
}
