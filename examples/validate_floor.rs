//! The floor `pactum validate` is measured against: read, hash (SHA-256) and parse every
//! file `validate` checks, once, on one thread, and nothing else — no schema, no rule, no
//! report. Same allocator as the binary (mimalloc), same parsers (serde_json, and
//! serde-saphyr for YAML), same file selection as a project-root walk: `registry.json`
//! plus every `.json`/`.yaml`/`.yml` file under `contracts/`, `prompt_packs/` and
//! `work_orders/` (hidden entries skipped).
//!
//! ```text
//! cargo run --release --example validate_floor -- /tmp/tree10k
//! ```
//!
//! Prints the number of files, their bytes and the wall time; `benches/validate_scale.sh`
//! runs it side by side with `pactum validate`.
#![allow(clippy::disallowed_methods)] // tests, benches and examples build their trees directly

use std::path::{Path, PathBuf};
use std::time::Instant;

use sha2::{Digest, Sha256};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("registry.json")];
    for folder in ["contracts", "prompt_packs", "work_orders"] {
        let walker = walkdir::WalkDir::new(root.join(folder))
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
        for entry in walker.flatten() {
            let is_document = matches!(
                entry.path().extension().and_then(|e| e.to_str()),
                Some("json" | "yaml" | "yml")
            );
            if entry.file_type().is_file() && is_document {
                out.push(entry.into_path());
            }
        }
    }
    out
}

fn main() {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".to_string()));
    let started = Instant::now();
    let mut bytes = 0usize;
    let mut values = 0usize;
    let list = files(&root);
    for path in &list {
        let data = std::fs::read(path).expect("read");
        bytes += data.len();
        let digest = Sha256::digest(&data);
        let yaml = path.extension().is_some_and(|e| e != "json");
        let parsed = if yaml {
            let text = std::str::from_utf8(&data).expect("UTF-8");
            serde_saphyr::from_str::<serde_json::Value>(text).map(|_| ()).is_ok()
        } else {
            serde_json::from_slice::<serde_json::Value>(&data).is_ok()
        };
        values += usize::from(parsed) + usize::from(digest[0] == 0);
    }
    let elapsed = started.elapsed();
    println!(
        "{} files, {} bytes, {values} checks: {:.3} s",
        list.len(),
        bytes,
        elapsed.as_secs_f64()
    );
}
