//! Hot reload latency: in a project of 1,000 contracts and 1,000 packs, how long after a
//! change (a new contract version written and registered) the reloading handle serves it,
//! debounce included.
//!
//! Run: `cargo bench --bench reload`. Prints the median, 90th percentile and maximum of
//! 30 changes.
#![allow(clippy::disallowed_methods)] // tests, benches and examples build their trees directly

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pactum::registry::{EntryKind, Registry, lifecycle, store};
use pactum::watch::RegistryHandle;
use serde_json::json;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CONTRACTS: usize = 1000;
const CHANGES: usize = 30;
const DEBOUNCE: Duration = Duration::from_millis(50);
const AT_TIME: &str = "2026-01-01T00:00:00Z";

fn at() -> pactum::registry::lifecycle::Stamp {
    pactum::registry::lifecycle::Stamp::new(AT_TIME, "bench")
}

fn write(path: &Path, value: &serde_json::Value) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, serde_json::to_vec_pretty(value).expect("json")).expect("write");
}

fn contract(i: usize, version: &str) -> serde_json::Value {
    json!({"contract_id": format!("PRC-GEN-{i:05}"), "version": version, "prompt_pack_id": format!("PRM-GEN-{i:05}"),
           "boundary": {"max_tokens": 512, "temperature": 0},
           "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
           "output_schema": {"type": "object", "required": ["summary"], "properties": {"summary": {"type": "string"}}}})
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let mut registry = Registry::empty(&root.join("registry.json"));
    for i in 0..CONTRACTS {
        let pack = root.join(format!("prompt_packs/gen{i:05}/1.0.0.json"));
        let file = root.join(format!("contracts/gen{i:05}/1.0.0.json"));
        write(
            &pack,
            &json!({"prompt_pack_id": format!("PRM-GEN-{i:05}"), "version": "1.0.0", "template": "{{ text }}"}),
        );
        write(&file, &contract(i, "1.0.0"));
        lifecycle::add(&mut registry, &pack, &at()).expect("add pack");
        lifecycle::add(&mut registry, &file, &at()).expect("add contract");
        let v = semver::Version::new(1, 0, 0);
        lifecycle::promote(
            &mut registry,
            EntryKind::PromptPack,
            &format!("PRM-GEN-{i:05}"),
            &v,
            &at(),
        )
        .expect("promote");
        lifecycle::promote(
            &mut registry,
            EntryKind::Contract,
            &format!("PRC-GEN-{i:05}"),
            &v,
            &at(),
        )
        .expect("promote");
    }
    store::write_atomic(&root.join("registry.json"), registry.to_json().as_bytes())
        .expect("registry");

    let opened = Instant::now();
    let handle = Arc::new(RegistryHandle::open(&root.join("registry.json")).expect("open"));
    let open_time = opened.elapsed();
    let started = Instant::now();
    let reload = handle.reload();
    let reload_time = started.elapsed();
    assert!(matches!(reload, pactum::watch::Reload::Swapped(_)));
    let _watch = handle.watch(DEBOUNCE, |_| {}).expect("watch");
    std::thread::sleep(Duration::from_millis(300));

    // From the moment registry.json is replaced (the change) to the handle serving it.
    let mut latencies = Vec::with_capacity(CHANGES);
    // How long the writer took to write the file and register it (not part of the latency).
    let mut writes = Vec::with_capacity(CHANGES);
    for n in 0..CHANGES {
        let i = n * (CONTRACTS / CHANGES);
        let before = handle.snapshot().generation;
        let t0 = Instant::now();
        let file = root.join(format!("contracts/gen{i:05}/1.1.0.json"));
        write(&file, &contract(i, "1.1.0"));
        store::update(&root.join("registry.json"), |r| {
            lifecycle::add(r, &file, &at())?;
            lifecycle::promote(
                r,
                EntryKind::Contract,
                &format!("PRC-GEN-{i:05}"),
                &semver::Version::new(1, 1, 0),
                &at(),
            )
        })
        .expect("register");
        let registered = Instant::now();
        writes.push(registered - t0);
        loop {
            let snapshot = handle.snapshot();
            if snapshot.generation > before
                && snapshot
                    .project
                    .registry
                    .get(
                        EntryKind::Contract,
                        &format!("PRC-GEN-{i:05}"),
                        &semver::Version::new(1, 1, 0),
                    )
                    .is_some()
            {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "change {n} never became visible");
            std::thread::sleep(Duration::from_millis(1));
        }
        latencies.push(registered.elapsed());
        std::thread::sleep(DEBOUNCE * 3);
    }
    latencies.sort();
    writes.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "hot reload, {CONTRACTS} contracts + {CONTRACTS} packs, debounce {} ms, {CHANGES} changes:",
        DEBOUNCE.as_millis()
    );
    println!(
        "  registry write -> served: median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        ms(latencies[CHANGES / 2]),
        ms(latencies[CHANGES * 9 / 10]),
        ms(latencies[CHANGES - 1])
    );
    println!(
        "  (writing the file and registering it took median {:.1} ms)",
        ms(writes[CHANGES / 2])
    );
    println!(
        "  first open {:.1} ms; one reload (unchanged files reused) {:.1} ms",
        ms(open_time),
        ms(reload_time)
    );
}
