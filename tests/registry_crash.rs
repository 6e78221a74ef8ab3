//! Crash safety and concurrency of registry writes (SPEC §7: "a crash leaves either the old
//! or the new registry, and two concurrent writers lose nothing").
//!
//! - `killed_writers_leave_the_old_or_the_new_registry`: a registry of 300 generated
//!   contracts; 60 times, `pactum registry add` or `promote` is started and SIGKILLed, either
//!   after a random delay or right when its temporary file appears (to land inside the
//!   write). Each time registry.json must open (schema + history chain), be byte-identical
//!   to the state before or contain exactly the new change, and the next writer must succeed
//!   and leave no `.registry.json.tmp-*` behind. Counts are printed
//!   (`cargo test --test suite registry_crash -- --nocapture`).
//! - `stale_temp_files_are_never_read_and_the_next_writer_removes_them`.
//! - `concurrent_writers_lose_nothing`: rounds of four processes writing at once.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::sha256_hex;
use pactum::registry::{Action, EntryKind, Registry, State, lifecycle, store};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_pactum");
const TS_TIME: &str = "2026-01-01T00:00:00Z";

fn ts() -> pactum::registry::lifecycle::Stamp {
    pactum::registry::lifecycle::Stamp::new(TS_TIME, "tester@example.com")
}
const PACK: &str = "PRM-GEN-001";
const BASE_CONTRACTS: usize = 300;
const ITERATIONS: u64 = 60;

/// A tiny reproducible PRNG.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        // Spread small seeds; never zero.
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

fn contract(id: &str) -> Value {
    json!({
        "contract_id": id,
        "version": "1.0.0",
        "prompt_pack_id": PACK,
        "boundary": {"max_tokens": 64, "temperature": 0},
        "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}
    })
}

/// Writes `contracts/<folder>/<id>.json` and returns its path relative to `root`.
fn write_contract(root: &Path, folder: &str, id: &str) -> String {
    let rel = format!("contracts/{folder}/{id}.json");
    write_json(&root.join(&rel), &contract(id));
    rel
}

fn write_pack(root: &Path) -> String {
    let rel = "prompt_packs/gen/1.0.0.json".to_string();
    write_json(
        &root.join(&rel),
        &json!({"prompt_pack_id": PACK, "version": "1.0.0", "template": "{{ x }}"}),
    );
    rel
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".registry.json.tmp-"))
        .map(|e| e.path())
        .collect()
}

fn pactum(root: &Path, args: &[&str]) -> Output {
    Command::new(BIN).args(args).current_dir(root).output().expect("pactum runs")
}

fn json_ok(root: &Path, args: &[&str]) -> Value {
    let out = pactum(root, args);
    let value: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "pactum {} printed no JSON ({e}): {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(out.status.code(), Some(0), "pactum {} failed: {value:#}", args.join(" "));
    assert_eq!(value["ok"], json!(true), "{value:#}");
    value
}

/// A registry with the pack active and `n` draft contracts, written through the library.
fn build(root: &Path, n: usize) -> Vec<String> {
    let pack = write_pack(root);
    let ids: Vec<String> = (1..=n).map(|i| format!("PRC-GEN-{i:04}")).collect();
    let files: Vec<PathBuf> =
        ids.iter().map(|id| root.join(write_contract(root, "gen", id))).collect();
    store::update(&root.join("registry.json"), |r| {
        lifecycle::add(r, &root.join(&pack), &ts())?;
        lifecycle::promote(r, EntryKind::PromptPack, PACK, &semver::Version::new(1, 0, 0), &ts())?;
        for f in &files {
            lifecycle::add(r, f, &ts())?;
        }
        Ok(())
    })
    .unwrap();
    ids
}

/// A registry as it was before a write, from its bytes (already opened once, or written by
/// a writer that succeeded).
fn registry_from_bytes(path: &Path, bytes: &[u8]) -> Registry {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let registry = Registry::from_text(path, text, sha256_hex(bytes)).unwrap();
    registry.check_integrity().unwrap();
    registry
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// `registry add` of a new file with this id.
    Add,
    /// `registry promote` of an existing draft.
    Promote,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timing {
    /// Kill after a fixed delay from the start.
    Blind,
    /// Kill when the writer's temporary file appears, plus 0-0.3 ms or 0-3 ms.
    AtWrite,
}

/// Checks that `after` is `before` plus exactly the one change `op` makes to `id`.
fn assert_exactly_the_new_change(
    before: &Registry,
    after: &Registry,
    op: Op,
    id: &str,
    root: &Path,
) {
    let v1 = semver::Version::new(1, 0, 0);
    let old_history = before.history.as_deref().unwrap();
    let new_history = after.history.as_deref().unwrap();
    assert_eq!(new_history.len(), old_history.len() + 1, "one event more");
    assert_eq!(&new_history[..old_history.len()], old_history, "old events unchanged");
    let last = new_history.last().unwrap();
    assert_eq!((last.id.as_str(), last.version.as_str()), (id, "1.0.0"));
    let others = |r: &Registry| -> Vec<_> {
        r.entries.iter().filter(|e| e.id != id).cloned().collect::<Vec<_>>()
    };
    assert_eq!(others(before), others(after), "other entries unchanged");
    let entry = after.get(EntryKind::Contract, id, &v1).expect("the new entry is present");
    match op {
        Op::Add => {
            assert_eq!(last.action, Action::Add);
            assert!(before.get(EntryKind::Contract, id, &v1).is_none());
            assert_eq!(entry.state, State::Draft);
            let bytes = std::fs::read(root.join(&entry.path)).unwrap();
            assert_eq!(entry.sha256, sha256_hex(&bytes), "the entry is complete");
            assert_eq!(last.sha256, entry.sha256);
        }
        Op::Promote => {
            assert_eq!(last.action, Action::Promote);
            assert_eq!(before.get(EntryKind::Contract, id, &v1).unwrap().state, State::Draft);
            assert_eq!(entry.state, State::Active);
            assert!(entry.activated_at.is_some());
        }
    }
}

#[derive(Default, Debug)]
struct Stats {
    blind: u32,
    at_write: u32,
    finished_before_kill: u32,
    old_state: u32,
    new_state: u32,
    temp_left: u32,
    adds: u32,
    promotes: u32,
}

#[test]
fn killed_writers_leave_the_old_or_the_new_registry() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let registry_path = root.join("registry.json");
    let drafts = build(root, BASE_CONTRACTS);
    let built_in = started.elapsed();
    let mut before_bytes = std::fs::read(&registry_path).unwrap();
    let opened = Registry::open(&registry_path).unwrap();
    assert_eq!(opened.entries.len(), BASE_CONTRACTS + 1);
    let mut before = Some(opened);
    let mut rec_ids = Vec::new();
    let mut stats = Stats::default();

    for i in 0..ITERATIONS {
        let mut rng = XorShift::new(i + 1);
        let op = if rng.below(3) == 0 { Op::Promote } else { Op::Add };
        let timing = if i % 2 == 0 { Timing::Blind } else { Timing::AtWrite };
        let (id, args): (String, Vec<String>) = match op {
            Op::Add => {
                let id = format!("PRC-NEW-{i:04}");
                let rel = write_contract(root, "new", &id);
                (id, vec!["registry".into(), "add".into(), rel, "--json".into()])
            }
            Op::Promote => {
                let id = drafts[i as usize].clone();
                let pin = format!("{id}@1.0.0");
                (id, vec!["registry".into(), "promote".into(), pin, "--json".into()])
            }
        };
        match op {
            Op::Add => stats.adds += 1,
            Op::Promote => stats.promotes += 1,
        }
        assert!(temp_files(root).is_empty(), "iteration {i} starts without temp files");

        let mut child = Command::new(BIN)
            .args(&args)
            .current_dir(root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        match timing {
            Timing::Blind => {
                stats.blind += 1;
                std::thread::sleep(Duration::from_micros(rng.below(15_001)));
            }
            Timing::AtWrite => {
                stats.at_write += 1;
                let deadline = Instant::now() + Duration::from_secs(10);
                while temp_files(root).is_empty()
                    && child.try_wait().unwrap().is_none()
                    && Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_micros(50));
                }
                let extra = if rng.below(2) == 0 { rng.below(300) } else { rng.below(3_000) };
                if extra > 0 {
                    std::thread::sleep(Duration::from_micros(extra));
                }
            }
        }
        let _ = child.kill(); // SIGKILL on Unix
        let status = child.wait().unwrap();
        let finished = status.success();
        if finished {
            stats.finished_before_kill += 1;
        }

        // The registry is whole: it parses, fits the schema and its history chains.
        let temp_left = !temp_files(root).is_empty();
        if temp_left {
            stats.temp_left += 1;
        }
        // Bytes identical to what the last successful writer left are the old state (the
        // next writer and the final check open them with the full schema + chain check);
        // anything else is opened now and must be exactly the new change.
        let after_bytes = std::fs::read(&registry_path).unwrap();
        if after_bytes == before_bytes {
            assert!(!finished, "iteration {i}: the writer succeeded but nothing changed");
            stats.old_state += 1;
        } else {
            let after = Registry::open(&registry_path).unwrap_or_else(|e| {
                panic!("iteration {i} ({op:?}, {timing:?}): registry.json is broken: {e}")
            });
            let previous = match before.take() {
                Some(r) => r,
                None => registry_from_bytes(&registry_path, &before_bytes),
            };
            assert_exactly_the_new_change(&previous, &after, op, &id, root);
            stats.new_state += 1;
        }

        // A stale temp file is not read: a reader sees exactly registry.json (checked for
        // the first few; `stale_temp_files_are_never_read...` covers it in detail).
        if temp_left && stats.temp_left <= 5 {
            let v = json_ok(root, &["registry", "verify", "--json"]);
            let entries = serde_json::from_slice::<Value>(&after_bytes).unwrap()["contracts"]
                .as_array()
                .unwrap()
                .len()
                + 1;
            assert_eq!(v["entries"], json!(entries));
        }

        // The next writer runs normally and cleans up.
        let rec_id = format!("PRC-REC-{i:04}");
        let rel = write_contract(root, "rec", &rec_id);
        let v = json_ok(root, &["registry", "add", &rel, "--json"]);
        assert_eq!(v["entries"][0]["result"], json!("new"));
        let leftover = temp_files(root);
        assert!(leftover.is_empty(), "iteration {i}: the next writer left {leftover:?}");
        before_bytes = std::fs::read(&registry_path).unwrap();
        // Opened lazily (it costs ~0.1 s in a debug build): only a kill that changed the
        // file needs the before-state to compare with. The next writer opens it anyway.
        before = None;
        rec_ids.push(rec_id);
    }

    // The end state opens and verifies through the binary too, and nothing was lost or
    // doubled.
    let before = Registry::open(&registry_path).unwrap();
    let v1 = semver::Version::new(1, 0, 0);
    for id in &rec_ids {
        assert!(before.get(EntryKind::Contract, id, &v1).is_some(), "{id} is missing");
    }
    let v = json_ok(root, &["registry", "verify", "--json"]);
    let expected = BASE_CONTRACTS as u64 + 1 + ITERATIONS + u64::from(stats.new_state)
        - before
            .entries
            .iter()
            .filter(|e| e.id.starts_with("PRC-GEN-") && e.state == State::Active)
            .count() as u64;
    assert_eq!(v["entries"], json!(expected), "{stats:?}");
    let history = before.history.as_deref().unwrap();
    assert_eq!(
        history.len() as u64,
        2 + BASE_CONTRACTS as u64 + ITERATIONS + u64::from(stats.new_state)
    );

    let killed = ITERATIONS as u32 - stats.finished_before_kill;
    eprintln!(
        "registry_crash: {BASE_CONTRACTS} contracts registered in {:.1}s; {ITERATIONS} iterations in {:.1}s ({} add, {} promote; {} blind 0-15 ms, {} at-write): \
         {killed} killed, {} finished first; {} left the old registry, {} the new one; \
         {} kills landed mid-write (temp file left behind)",
        built_in.as_secs_f64(),
        (started.elapsed() - built_in).as_secs_f64(),
        stats.adds,
        stats.promotes,
        stats.blind,
        stats.at_write,
        stats.finished_before_kill,
        stats.old_state,
        stats.new_state,
        stats.temp_left,
    );
    assert!(killed > 0, "no writer was ever killed: {stats:?}");
}

#[test]
fn stale_temp_files_are_never_read_and_the_next_writer_removes_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    build(root, 3);
    let registry_path = root.join("registry.json");
    let good = std::fs::read(&registry_path).unwrap();
    // A torn write and a complete but different registry, as killed writers leave them.
    std::fs::write(root.join(".registry.json.tmp-999999-0"), &good[..good.len() / 2]).unwrap();
    std::fs::write(
        root.join(".registry.json.tmp-999999-1"),
        br#"{"registry_version": 1, "contracts": [], "prompt_packs": [], "history": []}"#,
    )
    .unwrap();
    let v = json_ok(root, &["registry", "verify", "--json"]);
    assert_eq!(v["entries"], json!(4));
    let v = json_ok(root, &["registry", "log", "--json"]);
    assert_eq!(v["events"].as_array().unwrap().len(), 5);
    let out = pactum(root, &["validate", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| !d["file"].as_str().unwrap_or("").contains(".registry.json.tmp-")),
        "temp files are not validated: {report:#}"
    );
    assert_eq!(std::fs::read(&registry_path).unwrap(), good);
    assert_eq!(temp_files(root).len(), 2);

    // A refused write still cleans up (it holds the lock), and so does a successful one.
    let out = pactum(root, &["registry", "promote", "PRC-GEN-0001@9.9.9", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    std::fs::write(root.join(".registry.json.tmp-999999-2"), b"{").unwrap();
    let rel = write_contract(root, "new", "PRC-NEW-0001");
    json_ok(root, &["registry", "add", &rel, "--json"]);
    assert!(temp_files(root).is_empty(), "{:?}", temp_files(root));
    Registry::open(&registry_path).unwrap();
}

/// Spawns every command at once and waits for all; each must succeed.
fn all_at_once(root: &Path, commands: &[Vec<String>]) {
    let children: Vec<_> = commands
        .iter()
        .map(|args| {
            let child = Command::new(BIN)
                .args(args)
                .current_dir(root)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (args, child)
        })
        .collect();
    for (args, child) in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "pactum {} failed under contention: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn add(root: &Path, rel: &str) -> Vec<String> {
    let root = root.to_str().unwrap().to_string();
    ["registry", "add", rel, "--root", &root, "--json"].iter().map(|s| s.to_string()).collect()
}

fn promote(id: &str) -> Vec<String> {
    ["registry", "promote", &format!("{id}@1.0.0"), "--json"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn concurrent_writers_lose_nothing() {
    const WRITERS: usize = 4;
    const ROUNDS: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut adds = 0;
    let mut promotes = 0;

    // Round 0: the registry does not exist yet; four writers race to create it.
    let pack = write_pack(root);
    let mut first = vec![add(root, &pack)];
    for k in 1..WRITERS {
        first.push(add(root, &write_contract(root, "c", &format!("PRC-FIRST-{k:04}"))));
    }
    all_at_once(root, &first);
    adds += WRITERS;
    json_ok(root, &["registry", "promote", &format!("{PACK}@1.0.0"), "--json"]);
    promotes += 1;

    // Rounds of four adds at once.
    let mut ids = Vec::new();
    for round in 0..ROUNDS {
        let mut commands = Vec::new();
        for k in 0..WRITERS {
            let id = format!("PRC-RACE-{round:02}{k:02}");
            commands.push(add(root, &write_contract(root, "race", &id)));
            ids.push(id);
        }
        all_at_once(root, &commands);
        adds += WRITERS;
    }
    // Four promotes at once, then two adds racing two promotes.
    all_at_once(root, &ids[..WRITERS].iter().map(|id| promote(id)).collect::<Vec<_>>());
    promotes += WRITERS;
    let mixed = vec![
        add(root, &write_contract(root, "mixed", "PRC-MIXED-0001")),
        promote(&ids[WRITERS]),
        add(root, &write_contract(root, "mixed", "PRC-MIXED-0002")),
        promote(&ids[WRITERS + 1]),
    ];
    all_at_once(root, &mixed);
    adds += 2;
    promotes += 2;

    let registry = Registry::open(&root.join("registry.json")).expect("opens with an intact chain");
    let v1 = semver::Version::new(1, 0, 0);
    assert_eq!(registry.entries.len(), adds, "every add is present");
    for id in ids.iter().chain(["PRC-MIXED-0001".to_string(), "PRC-MIXED-0002".to_string()].iter())
    {
        assert!(registry.get(EntryKind::Contract, id, &v1).is_some(), "{id} was lost");
    }
    for id in &ids[..WRITERS + 2] {
        assert_eq!(
            registry.get(EntryKind::Contract, id, &v1).unwrap().state,
            State::Active,
            "{id}"
        );
    }
    let history = registry.history.as_deref().unwrap();
    assert_eq!(history.len(), adds + promotes, "exactly one event per write");
    let add_events = history.iter().filter(|e| e.action == Action::Add).count();
    assert_eq!(add_events, adds);
    let mut keys: Vec<String> =
        history.iter().filter(|e| e.action == Action::Add).map(|e| e.id.clone()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), adds, "no add recorded twice");
    let v = json_ok(root, &["registry", "verify", "--json"]);
    assert_eq!(v["history"], json!(adds + promotes));
    assert!(temp_files(root).is_empty());
    eprintln!(
        "registry_crash: concurrency: {} writes by up to {WRITERS} processes at once ({ROUNDS} add rounds), none lost",
        adds + promotes
    );
}
