//! Crash-safe, concurrent writes of registry.json (SPEC §7).
//!
//! **Architecture invariant:** registry.json is only ever replaced whole. A write goes to a
//! temporary file in the same folder, is fsynced, renamed over the old file, and the folder
//! is fsynced; a crash leaves the old or the new file, never a torn one. Read-modify-write
//! runs under an exclusive advisory lock on `.registry.lock` (not on registry.json, whose
//! inode the rename replaces), so two concurrent writers lose nothing. Temporary files a
//! killed writer left behind are named `.registry.json.tmp-*` and are removed by the next
//! writer while it holds the lock; readers never look at them.
//!
//! **A rewrite keeps what it does not own** (SPEC §18): top-level keys pactum does not use
//! (`$schema`) are carried over, and the replacement gets the old file's permissions.
//! Neither registry.json nor `.registry.lock` is ever followed or replaced when it is a
//! symlink (`path_escape`), and a refused change writes nothing.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::registry::Registry;

/// The lock file next to registry.json.
pub const LOCK_FILE: &str = ".registry.lock";

/// An exclusive advisory lock, released on drop.
#[derive(Debug)]
pub struct Lock {
    file: File,
    path: PathBuf,
}

impl Lock {
    /// Blocks until the lock on `dir/.registry.lock` is held.
    pub fn acquire(dir: &Path) -> Result<Lock> {
        let path = dir.join(LOCK_FILE);
        let file = crate::confine::open_for_update(&path, false)?;
        file.lock().map_err(|e| Error::io(&path, e))?;
        Ok(Lock { file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

pub use crate::confine::{remove_stale_temps, write_atomic};

/// Read-modify-write of registry.json under the lock: loads the current file (or an empty
/// registry when it does not exist yet), applies `change`, and writes the result only when
/// `change` succeeds. A refused change leaves the file untouched.
pub fn update<T>(path: &Path, change: impl FnOnce(&mut Registry) -> Result<T>) -> Result<T> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // Every registry write lands in an existing project folder: a missing one is named
    // (never its lock file, which the user does not know of).
    if !crate::confine::is_dir(dir) {
        return Err(Error::not_found(
            dir,
            "no such project folder; make one with `pactum init DIR`, or pass the folder that \
             holds registry.json",
        ));
    }
    let _lock = Lock::acquire(dir)?;
    remove_stale_temps(path);
    let exists = crate::confine::existing_file(path)?.is_some();
    let mut registry = if exists { Registry::open(path)? } else { Registry::empty(path) };
    let out = change(&mut registry)?;
    // The keys pactum does not own (`$schema`, `x-*`) were read into the registry and are
    // written back by `to_json`, each once.
    write_atomic(path, registry.to_json().as_bytes())?;
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("registry.json");
        write_atomic(&target, b"one").unwrap();
        write_atomic(&target, b"two").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn stale_temps_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("registry.json");
        std::fs::write(dir.path().join(".registry.json.tmp-123-0"), b"torn").unwrap();
        std::fs::write(dir.path().join("other.json"), b"{}").unwrap();
        assert_eq!(remove_stale_temps(&target), 1);
        assert!(dir.path().join("other.json").exists());
    }

    #[test]
    fn refused_updates_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("registry.json");
        update(&target, |_| Ok(())).unwrap();
        let before = std::fs::read(&target).unwrap();
        let e = update(&target, |_| -> Result<()> {
            Err(Error::TransitionInvalid {
                id: "PRC-A-001".into(),
                version: "1.0.0".into(),
                action: "promote".into(),
                reason: "test".into(),
            })
        });
        assert_eq!(
            e.unwrap_err().code(),
            crate::Code::RegistryTransitionInvalid,
            "the closure's own error"
        );
        assert_eq!(std::fs::read(&target).unwrap(), before);
    }

    #[test]
    fn rewrites_keep_unowned_keys_and_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("registry.json");
        std::fs::write(
            &target,
            "{\"$schema\": \"schemas/registry.schema.json\", \"registry_version\": 1, \"contracts\": [], \"prompt_packs\": [], \"x-note\": \"kept\"}",
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        }
        update(&target, |_| Ok(())).unwrap();
        update(&target, |_| Ok(())).unwrap();
        let text = std::fs::read_to_string(&target).unwrap();
        assert!(
            text.starts_with("{\n  \"$schema\": \"schemas/registry.schema.json\",\n"),
            "{text}"
        );
        // Each kept key is written once, however many rewrites.
        assert_eq!(text.matches("\"$schema\"").count(), 1, "{text}");
        assert_eq!(text.matches("\"x-note\": \"kept\"").count(), 1, "{text}");
        assert!(Registry::open(&target).is_ok(), "{text}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o640);
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_registry_and_lock_are_refused_not_replaced() {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("p");
        std::fs::create_dir(&dir).unwrap();
        let real = dir.join("real.json");
        update(&real, |_| Ok(())).unwrap();
        let link = dir.join("registry.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = update(&link, |_| Ok(())).unwrap_err();
        assert_eq!(e.code(), crate::Code::PathEscape);
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        std::fs::remove_file(dir.join(LOCK_FILE)).unwrap();
        std::os::unix::fs::symlink(outer.path().join("victim"), dir.join(LOCK_FILE)).unwrap();
        let e = update(&real, |_| Ok(())).unwrap_err();
        assert_eq!(e.code(), crate::Code::PathEscape);
        assert!(!outer.path().join("victim").exists(), "the lock link was not followed");
    }

    #[test]
    fn lock_excludes_a_second_holder() {
        let dir = tempfile::tempdir().unwrap();
        let lock = Lock::acquire(dir.path()).unwrap();
        let other = File::options().write(true).open(lock.path()).unwrap();
        assert!(matches!(other.try_lock(), Err(std::fs::TryLockError::WouldBlock)));
        drop(lock);
        assert!(other.try_lock().is_ok());
    }
}
