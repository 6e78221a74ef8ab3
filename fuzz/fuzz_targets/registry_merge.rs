//! Fuzzes the registry merge driver (`registry::merge::merge`, what `pactum registry merge`
//! runs for git). A base registry with drafts of two contracts and their packs, three
//! versions each, is made once with `pactum new contract` / `new version`; the input drives
//! two independent sequences of lifecycle commands (promote, discard, deprecate, remove,
//! by different actors at different times) on copies of it, as two branches would. The
//! merge of the two must never panic, must fail only with `registry_merge_conflict` (both
//! sides are valid registries), must agree with the merge the other way round, and a clean
//! merge must load again with an intact history that replays to its entries.
// libFuzzer supplies `main`; without it (no `libfuzzer` feature) `main` replays files.
#![cfg_attr(feature = "libfuzzer", no_main)]
// The fuzz_target! macro's debug mode writes a file itself (RUST_LIBFUZZER_DEBUG_PATH).
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pactum::Code;
use pactum::registry::lifecycle::{self, Stamp};
use pactum::registry::merge::merge;
use pactum::registry::{EntryKind, Registry, replay};

/// The scratch project (made once per fuzzing process) and its registry text.
fn base() -> &'static (PathBuf, String) {
    static BASE: OnceLock<(PathBuf, String)> = OnceLock::new();
    BASE.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("pactum-fuzz-merge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let stamp = Stamp::new("2026-01-01T00:00:00Z", "base@example.com");
        for id in ["PRC-ALPHA-001", "PRC-BETA-001"] {
            pactum::scaffold::new_contract(&root, id, &stamp).unwrap();
            for v in ["1.1.0", "2.0.0"] {
                pactum::scaffold::new_version(&root, &format!("{id}@{v}"), true, &stamp).unwrap();
            }
        }
        let text = std::fs::read_to_string(root.join("registry.json")).unwrap();
        (root, text)
    })
}

fn load(path: &Path, text: &str) -> Registry {
    Registry::from_text(path, text.to_string(), String::new()).unwrap()
}

/// Applies the commands `ops` encodes (three bytes each: command, entry, other entry) to
/// the base registry; refused commands change nothing, as in the CLI.
fn branch(ops: &[u8], actor: &str) -> String {
    let (root, text) = base();
    let mut registry = load(&root.join("registry.json"), text);
    for (n, op) in ops.chunks_exact(3).enumerate() {
        let pick = |b: u8| {
            let e = &registry.entries[usize::from(b) % registry.entries.len()];
            (e.kind, e.id.clone(), e.version.clone())
        };
        let (kind, id, version) = pick(op[1]);
        let (_, _, other) = pick(op[2]);
        let stamp = Stamp::new(format!("2026-02-{:02}T00:00:00Z", 1 + n % 28), actor);
        let _ = match op[0] % 4 {
            0 => lifecycle::promote(&mut registry, kind, &id, &version, &stamp).map(|_| ()),
            1 => lifecycle::discard(&mut registry, kind, &id, &version, &stamp).map(|_| ()),
            2 => {
                lifecycle::deprecate(&mut registry, kind, &id, &version, &other, &stamp).map(|_| ())
            }
            _ => lifecycle::remove(&mut registry, kind, &id, &version, &stamp).map(|_| ()),
        };
    }
    registry.to_json()
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0xff).unwrap_or(data.len());
    let (ours_ops, theirs_ops) = (&data[..split], data.get(split + 1..).unwrap_or_default());
    let (root, base_text) = base();
    let ours = branch(ours_ops, "ours@example.com");
    let theirs = branch(theirs_ops, "theirs@example.com");
    let path = root.join("registry.json");
    let stamp = Stamp::new("2026-03-01T00:00:00Z", "merger@example.com");
    let paths = [path.as_path(), path.as_path(), path.as_path()];

    let merged = merge(paths, [base_text, &ours, &theirs], &stamp);
    let mirrored = merge(paths, [base_text, &theirs, &ours], &stamp);

    match &merged {
        Ok(m) => {
            let text = m.registry.to_json();
            let again = load(&path, &text);
            again.check_integrity().expect("a clean merge has an intact history");
            let errors: Vec<_> =
                replay::check(&again).into_iter().filter(|d| d.is_error()).collect();
            assert!(errors.is_empty(), "the merged history does not replay: {errors:?}");
            let kinds = [EntryKind::Contract, EntryKind::PromptPack];
            assert!(again.entries.iter().all(|e| kinds.contains(&e.kind)));
        }
        Err(e) => assert_eq!(e.code(), Code::RegistryMergeConflict, "{e}"),
    }
    assert_eq!(merged.is_ok(), mirrored.is_ok(), "the merge depends on the side: {merged:?}");
});

#[cfg(not(feature = "libfuzzer"))]
fn main() -> std::process::ExitCode {
    pactum_fuzz::replay()
}
