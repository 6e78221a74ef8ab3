//! Watching a project and hot reload (SPEC §7).
//!
//! [`RegistryHandle`] serves an immutable [`Snapshot`] — the registry plus every active and
//! deprecated contract and pack, loaded and checked — and swaps in a new one atomically
//! (`arc-swap`) only when the new state is complete and valid. While the tree is invalid or
//! half-written (a file saved before its registry entry, a hash that does not match yet)
//! readers keep getting the last good snapshot. Unchanged files are not parsed again: a
//! reload re-reads and re-hashes every entry's file and reuses the previous snapshot's
//! parsed contract when the hash is the same.
//!
//! [`watch_tree`] watches a folder recursively through `notify` with debouncing
//! (`notify-debouncer-full`, which also stitches the rename pairs of editors that save by
//! writing a temporary file and renaming it over the original), ignores pactum's own
//! writes (`.pactum/`, registry temp and lock files) and editor droppings, and calls back
//! once per settled batch of changes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use notify_debouncer_full::DebounceEventResult;
use notify_debouncer_full::notify::RecursiveMode;

use crate::config::Config;
use crate::diagnostic::Diagnostic;
use crate::document;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::registry::{EntryKind, Registry, State};

/// One consistent state of a project.
pub struct Snapshot {
    pub project: Project,
    /// Counts successful loads, starting at 1.
    pub generation: u64,
    /// The stamp and verified hash of every entry file, so the next reload can skip
    /// files that did not change (like git's index).
    stamps: HashMap<PathBuf, (Stamp, String)>,
    /// registry.json's stamp: when it did not change, the next reload reuses the parsed
    /// registry.
    registry_stamp: Option<Stamp>,
}

/// What identifies a file's content cheaply: size, modification time (nanoseconds on
/// Linux) and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = crate::confine::target_of(path)?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stamp { len: meta.len(), modified: meta.modified().ok(), inode })
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("generation", &self.generation).finish_non_exhaustive()
    }
}

/// Loads a snapshot, reusing what `previous` already parsed. `Err` lists every problem
/// that makes the state unservable.
pub fn load_snapshot(
    registry_path: &Path,
    previous: Option<&Snapshot>,
    generation: u64,
) -> std::result::Result<Snapshot, Vec<Diagnostic>> {
    let registry_stamp = stamp(registry_path);
    let registry = match previous {
        Some(p) if registry_stamp.is_some() && p.registry_stamp == registry_stamp => {
            p.project.registry.clone()
        }
        _ => Registry::open(registry_path).map_err(|e| vec![Diagnostic::from_error(&e)])?,
    };
    let config = Config::load(&registry.root).map_err(|e| vec![Diagnostic::from_error(&e)])?;
    let project = Project::new(registry, config);
    if let Some(prev) = previous {
        project.reuse_cache_of(&prev.project);
    }
    let mut problems = Vec::new();
    let mut stamps = HashMap::new();
    for entry in &project.registry.entries {
        if !matches!(entry.state, State::Active | State::Deprecated) {
            continue;
        }
        // Re-hash files that may have changed: the registry may be unchanged while a
        // file changed. A file whose stamp matches the previous snapshot's, verified
        // against the same hash, is not read again.
        let checked = project.registry.file_of(entry).and_then(|path| {
            let before = stamp(&path);
            let unchanged = previous
                .and_then(|p| p.stamps.get(&path))
                .is_some_and(|(s, sha)| Some(*s) == before && *sha == entry.sha256);
            if unchanged {
                if let Some(s) = before {
                    stamps.insert(path, (s, entry.sha256.clone()));
                }
                return match entry.kind {
                    EntryKind::Contract => project.load_contract(entry).map(|_| ()),
                    EntryKind::PromptPack => project.load_pack(entry).map(|_| ()),
                };
            }
            let bytes = document::read_limited(&path, document::MAX_FILE_BYTES)?;
            let sha = crate::digest::sha256_hex(&bytes);
            if sha != entry.sha256 {
                return Err(Error::HashMismatch {
                    path: PathBuf::from(&entry.path),
                    id: entry.id.clone(),
                    version: entry.version.to_string(),
                    expected: entry.sha256.clone(),
                    actual: sha,
                });
            }
            if let Some(s) = before {
                stamps.insert(path, (s, sha));
            }
            match entry.kind {
                EntryKind::Contract => project.load_contract(entry).map(|_| ()),
                EntryKind::PromptPack => project.load_pack(entry).map(|_| ()),
            }
        });
        if let Err(e) = checked {
            problems.push(Diagnostic::from_error(&e).file(entry.path.clone()));
        }
    }
    if problems.is_empty() {
        Ok(Snapshot { project, generation, stamps, registry_stamp })
    } else {
        Err(problems)
    }
}

/// A registry that reloads on change and always serves its last good snapshot.
pub struct RegistryHandle {
    path: PathBuf,
    current: ArcSwap<Snapshot>,
    generation: AtomicU64,
    reload_lock: std::sync::Mutex<()>,
}

impl std::fmt::Debug for RegistryHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryHandle").field("path", &self.path).finish_non_exhaustive()
    }
}

/// What a reload did.
#[derive(Debug)]
pub enum Reload {
    /// A new snapshot is served.
    Swapped(u64),
    /// The new state is invalid; the previous snapshot is still served.
    Kept(Vec<Diagnostic>),
}

impl RegistryHandle {
    /// Opens the project at `registry_path`; the first state must be valid.
    pub fn open(registry_path: &Path) -> Result<RegistryHandle> {
        let snapshot = load_snapshot(registry_path, None, 1).map_err(|problems| {
            let message = problems.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; ");
            Error::SchemaInvalid {
                doc: crate::error::DocKind::Registry,
                path: registry_path.to_path_buf(),
                findings: vec![crate::error::Finding::new("", message)],
            }
        })?;
        Ok(RegistryHandle {
            path: registry_path.to_path_buf(),
            current: ArcSwap::from_pointee(snapshot),
            generation: AtomicU64::new(1),
            reload_lock: std::sync::Mutex::new(()),
        })
    }

    /// The snapshot being served (cheap: an atomic load).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Builds a new snapshot and swaps it in when it is valid.
    pub fn reload(&self) -> Reload {
        let _one_at_a_time = self.reload_lock.lock().unwrap_or_else(|p| p.into_inner());
        let previous = self.current.load_full();
        let generation = self.generation.load(Ordering::Acquire) + 1;
        match load_snapshot(&self.path, Some(&previous), generation) {
            Ok(snapshot) => {
                self.generation.store(generation, Ordering::Release);
                self.current.store(Arc::new(snapshot));
                Reload::Swapped(generation)
            }
            Err(problems) => Reload::Kept(problems),
        }
    }

    /// Reloads on every change under the project root until the returned [`Watch`] is
    /// dropped; `on_reload` hears about each outcome.
    pub fn watch(
        self: &Arc<Self>,
        debounce: Duration,
        on_reload: impl Fn(&Reload) + Send + 'static,
    ) -> Result<Watch> {
        let root = self.path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let handle = Arc::clone(self);
        watch_tree(&root, debounce, move |_paths| {
            let outcome = handle.reload();
            on_reload(&outcome);
        })
    }
}

/// A running watch; dropping it stops watching.
pub struct Watch {
    debouncer: Option<
        notify_debouncer_full::Debouncer<
            notify_debouncer_full::notify::RecommendedWatcher,
            notify_debouncer_full::RecommendedCache,
        >,
    >,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(d) = self.debouncer.take() {
            d.stop_nonblocking();
        }
    }
}

/// Whether a changed path is worth a reload: a governed file (JSON, YAML, TOML), not
/// pactum's own writes, not editor temp files, not build output.
pub fn is_relevant(path: &Path) -> bool {
    let skip_dir = path.components().any(|c| {
        let s = c.as_os_str().to_string_lossy();
        s == ".pactum" || s == ".git" || s == "target" || s == "node_modules"
    });
    if skip_dir {
        return false;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let governed = matches!(
        path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref(),
        Some("json" | "yaml" | "yml" | "toml")
    );
    governed
        && !(name.starts_with(".registry.json.tmp-")
            || name == crate::registry::store::LOCK_FILE
            || name.ends_with('~')
            || name.ends_with(".swp")
            || name.ends_with(".swx")
            || name.ends_with(".tmp")
            || name.starts_with(".#")
            || name == "4913")
}

/// Watches `root` recursively and calls `on_change` with the relevant changed paths of each
/// debounced batch.
pub fn watch_tree(
    root: &Path,
    debounce: Duration,
    on_change: impl Fn(Vec<PathBuf>) + Send + 'static,
) -> Result<Watch> {
    let handler = move |result: DebounceEventResult| {
        let Ok(events) = result else { return };
        let mut paths: Vec<PathBuf> = events
            .iter()
            .filter(|e| {
                !e.kind.is_access()
                    || matches!(
                        e.kind,
                        notify_debouncer_full::notify::EventKind::Access(
                            notify_debouncer_full::notify::event::AccessKind::Close(
                                notify_debouncer_full::notify::event::AccessMode::Write
                            )
                        )
                    )
            })
            .flat_map(|e| e.paths.iter().cloned())
            .filter(|p| is_relevant(p))
            .collect();
        paths.sort();
        paths.dedup();
        if !paths.is_empty() {
            on_change(paths);
        }
    };
    // Links are never followed: a committed `docs -> /usr` (or `-> /`) would otherwise
    // make the watch walk and watch whatever it points at (SPEC §18).
    let config = notify_debouncer_full::notify::Config::default().with_follow_symlinks(false);
    let mut debouncer =
        notify_debouncer_full::new_debouncer_opt::<
            _,
            notify_debouncer_full::notify::RecommendedWatcher,
            notify_debouncer_full::RecommendedCache,
        >(debounce, None, handler, notify_debouncer_full::RecommendedCache::new(), config)
        .map_err(|e| Error::io(root, std::io::Error::other(e.to_string())))?;
    debouncer
        .watch(root, RecursiveMode::Recursive)
        .map_err(|e| Error::io(root, std::io::Error::other(e.to_string())))?;
    Ok(Watch { debouncer: Some(debouncer) })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    fn stamp() -> crate::registry::lifecycle::Stamp {
        crate::registry::lifecycle::Stamp::new(TS, "tester")
    }
    use super::*;
    use crate::registry::{lifecycle, store};
    use std::time::Instant;

    const TS: &str = "2026-01-01T00:00:00Z";

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            &root.join("prompt_packs/a/1.0.0.json"),
            r#"{"prompt_pack_id": "PRM-A-001", "version": "1.0.0", "template": "{{ x }}"}"#,
        );
        write(
            &root.join("contracts/a/1.0.0.json"),
            r#"{"contract_id": "PRC-A-001", "version": "1.0.0", "prompt_pack_id": "PRM-A-001", "boundary": {"max_tokens": 5, "temperature": 0}, "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}}"#,
        );
        let reg = root.join("registry.json");
        store::update(&reg, |r| {
            lifecycle::add(r, &root.join("prompt_packs/a/1.0.0.json"), &stamp())?;
            lifecycle::add(r, &root.join("contracts/a/1.0.0.json"), &stamp())?;
            lifecycle::promote(
                r,
                EntryKind::PromptPack,
                "PRM-A-001",
                &semver::Version::new(1, 0, 0),
                &stamp(),
            )?;
            lifecycle::promote(
                r,
                EntryKind::Contract,
                "PRC-A-001",
                &semver::Version::new(1, 0, 0),
                &stamp(),
            )
        })
        .unwrap();
        dir
    }

    fn add_version(root: &Path, version: &str) {
        let file = root.join(format!("contracts/a/{version}.json"));
        write(
            &file,
            &format!(
                r#"{{"contract_id": "PRC-A-001", "version": "{version}", "prompt_pack_id": "PRM-A-001", "boundary": {{"max_tokens": 5, "temperature": 0}}, "input_schema": {{"type": "object", "properties": {{"x": {{"type": "string"}}}}}}}}"#
            ),
        );
        store::update(&root.join("registry.json"), |r| {
            lifecycle::add(r, &file, &stamp())?;
            lifecycle::promote(
                r,
                EntryKind::Contract,
                "PRC-A-001",
                &semver::Version::parse(version).unwrap(),
                &stamp(),
            )
        })
        .unwrap();
    }

    #[test]
    fn reload_swaps_valid_states_and_keeps_serving_through_invalid_ones() {
        let dir = project();
        let root = dir.path();
        let handle = RegistryHandle::open(&root.join("registry.json")).unwrap();
        assert_eq!(handle.snapshot().generation, 1);
        add_version(root, "1.1.0");
        assert!(matches!(handle.reload(), Reload::Swapped(2)));
        assert!(
            handle
                .snapshot()
                .project
                .registry
                .get(EntryKind::Contract, "PRC-A-001", &semver::Version::new(1, 1, 0))
                .is_some()
        );
        // Half-written: the active file changes but the registry does not (yet).
        std::fs::write(root.join("contracts/a/1.1.0.json"), "{\"contract_id\": ").unwrap();
        let before = handle.snapshot();
        match handle.reload() {
            Reload::Kept(problems) => assert!(!problems.is_empty()),
            Reload::Swapped(_) => panic!("an invalid state was served"),
        }
        assert!(Arc::ptr_eq(&before, &handle.snapshot()));
        // A registry that does not parse is also kept out.
        let good = std::fs::read(root.join("registry.json")).unwrap();
        std::fs::write(root.join("registry.json"), "{").unwrap();
        assert!(matches!(handle.reload(), Reload::Kept(_)));
        std::fs::write(root.join("registry.json"), good).unwrap();
        std::fs::remove_file(root.join("contracts/a/1.1.0.json")).unwrap();
        assert!(
            matches!(handle.reload(), Reload::Kept(_)),
            "a missing file keeps the old snapshot"
        );
    }

    #[test]
    fn watching_picks_up_changes_and_rename_saves() {
        let dir = project();
        let root = dir.path().to_path_buf();
        let handle = Arc::new(RegistryHandle::open(&root.join("registry.json")).unwrap());
        let _watch = handle.watch(Duration::from_millis(50), |_| {}).unwrap();
        // Waits for the state, not for a number of reloads: writing a contract file and
        // then the registry can give one reload or two, depending on how the events fall
        // into debounce ticks.
        let wait_for_versions = |count: usize| {
            let start = Instant::now();
            loop {
                let snap = handle.snapshot();
                if snap.project.registry.versions(EntryKind::Contract, "PRC-A-001").count() == count
                {
                    return snap.generation;
                }
                assert!(start.elapsed() < Duration::from_secs(10), "no reload to {count} seen");
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        add_version(&root, "1.1.0");
        let first = wait_for_versions(2);
        assert!(first >= 2, "{first}");
        // registry.json is replaced editor-style (temp file, then a rename over it).
        add_version(&root, "1.2.0");
        let second = wait_for_versions(3);
        assert!(second > first, "{second} after {first}");
    }

    #[test]
    fn own_writes_and_editor_files_are_ignored() {
        assert!(!is_relevant(Path::new("/p/.pactum/ledger.jsonl")));
        assert!(!is_relevant(Path::new("/p/.registry.json.tmp-1-2")));
        assert!(!is_relevant(Path::new("/p/contracts/.a.json.swp")));
        assert!(!is_relevant(Path::new("/p/contracts/a.json~")));
        assert!(is_relevant(Path::new("/p/contracts/a/1.0.0.json")));
        assert!(is_relevant(Path::new("/p/registry.json")));
        assert!(!is_relevant(Path::new("/p/notes.txt")));
        assert!(is_relevant(Path::new("/p/pactum.toml")));
    }
}
