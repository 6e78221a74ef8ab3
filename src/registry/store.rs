//! Crash-safe, concurrent writes of registry.json (SPEC §7).
//!
//! **Architecture invariant:** registry.json is only ever replaced whole. A write goes to a
//! temporary file in the same folder, is fsynced, renamed over the old file, and the folder
//! is fsynced; a crash leaves the old or the new file, never a torn one. Read-modify-write
//! runs under an exclusive advisory lock on `.registry.lock` (not on registry.json, whose
//! inode the rename replaces), so two concurrent writers lose nothing. Temporary files a
//! killed writer left behind are named `.registry.json.tmp-*` and are removed by the next
//! writer while it holds the lock; readers never look at them.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
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

fn temp_prefix(target: &Path) -> String {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!(".{name}.tmp-")
}

/// Replaces `target` with `contents` atomically and durably.
pub fn write_atomic(target: &Path, contents: &[u8]) -> Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let temp = dir.join(format!(
        "{}{}-{}",
        temp_prefix(target),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| Error::io(&temp, e))?;
        file.write_all(contents).map_err(|e| Error::io(&temp, e))?;
        file.sync_all().map_err(|e| Error::io(&temp, e))?;
        drop(file);
        std::fs::rename(&temp, target).map_err(|e| Error::io(target, e))?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io(dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Removes temporary files a killed writer left next to `target`. Call with the lock held.
pub fn remove_stale_temps(target: &Path) -> usize {
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let prefix = temp_prefix(target);
    let Ok(read) = std::fs::read_dir(dir) else { return 0 };
    let mut removed = 0;
    for entry in read.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix)
            && std::fs::remove_file(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Read-modify-write of registry.json under the lock: loads the current file (or an empty
/// registry when it does not exist yet), applies `change`, and writes the result only when
/// `change` succeeds. A refused change leaves the file untouched.
pub fn update<T>(path: &Path, change: impl FnOnce(&mut Registry) -> Result<T>) -> Result<T> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let _lock = Lock::acquire(dir)?;
    remove_stale_temps(path);
    let mut registry = if path.exists() { Registry::open(path)? } else { Registry::empty(path) };
    let out = change(&mut registry)?;
    write_atomic(path, registry.to_json().as_bytes())?;
    Ok(out)
}

#[cfg(test)]
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
        assert!(e.is_err());
        assert_eq!(std::fs::read(&target).unwrap(), before);
    }

    #[test]
    fn lock_excludes_a_second_holder() {
        let dir = tempfile::tempdir().unwrap();
        let lock = Lock::acquire(dir.path()).unwrap();
        let other = File::options().write(true).open(lock.path()).unwrap();
        assert!(other.try_lock().is_err());
        drop(lock);
        assert!(other.try_lock().is_ok());
    }
}
