//! The reports `pactum eval` keeps (SPEC §26): every run writes its JSON report (the
//! document of `--format json`) to `.pactum/evals/<RUN>.json`, atomically, for `pactum
//! view` to list and show. `RUN` is the run's UTC time and the process id
//! (`20261202T130619.663Z-4242`), so names sort by time. `.pactum/` is git-ignored by
//! `pactum init`: the reports stay on the machine that ran them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::confine::Root;
use crate::error::{Error, Result};

/// The folder, relative to the project root.
pub const FOLDER: &str = ".pactum/evals";

/// The largest kept report read back (a report of a big suite with its outputs).
pub const MAX_REPORT_BYTES: u64 = 32 * 1024 * 1024;

/// A run's name from its time (`at`, RFC 3339) and the process id. The seconds always carry
/// three digits of fraction (`…19.900Z`, never `…19.9Z`), so names sort as their times do:
/// the time `at` gives drops trailing zeros, and `19.9Z` sorted after `19.95Z`.
pub fn run_name(at: &str, pid: u32) -> String {
    let stamp: String = at.chars().filter(|c| !matches!(c, '-' | ':')).collect();
    let stamp = stamp.strip_suffix('Z').unwrap_or(&stamp);
    let (whole, fraction) = stamp.split_once('.').unwrap_or((stamp, ""));
    let fraction: String = fraction.chars().chain(std::iter::repeat('0')).take(3).collect();
    format!("{whole}.{fraction}Z-{pid}")
}

/// Whether `name` can name a kept report: letters, digits, `.`, `-`, `_`, not starting
/// with a dot (no separator, no `..`).
pub fn is_run_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// Writes `report` as `.pactum/evals/<name>.json` under `root` (folders created, never
/// through a link), atomically; returns the path written.
pub fn keep(root: &Path, name: &str, report: &Value) -> Result<PathBuf> {
    if !is_run_name(name) {
        return Err(Error::Usage { message: format!("`{name}` cannot name a kept eval report") });
    }
    let root = Root::new(root);
    root.writable_folder(Path::new(FOLDER), true)?;
    let target = root.writable(&Path::new(FOLDER).join(format!("{name}.json")), false)?;
    let mut text = serde_json::to_string_pretty(report).unwrap_or_default();
    text.push('\n');
    crate::confine::write_atomic(&target, text.as_bytes())?;
    Ok(target)
}

/// The names of the kept reports, newest first (none when the folder does not exist).
pub fn list(root: &Path) -> Vec<String> {
    let Ok(folder) = Root::new(root).folder(Path::new(FOLDER)) else { return Vec::new() };
    let mut names: Vec<String> = crate::confine::walk(&folder)
        .min_depth(1)
        .max_depth(1)
        .into_iter()
        .filter_map(std::result::Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json").map(str::to_string))
        .filter(|name| is_run_name(name))
        .collect();
    names.sort_unstable_by(|a, b| b.cmp(a));
    names
}

/// The kept report `name`; `Ok(None)` when there is none by that name.
pub fn load(root: &Path, name: &str) -> Result<Option<Value>> {
    if !is_run_name(name) {
        return Ok(None);
    }
    let rel = Path::new(FOLDER).join(format!("{name}.json"));
    let Ok(path) = Root::new(root).file(&rel) else { return Ok(None) };
    let bytes = crate::document::read_limited(&path, MAX_REPORT_BYTES)?;
    serde_json::from_slice(&bytes).map(Some).map_err(|e| Error::Io {
        path: rel,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
    })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_time_and_never_leave_the_folder() {
        assert_eq!(run_name("2026-12-02T13:06:19.663Z", 42), "20261202T130619.663Z-42");
        // Names sort as their times, whatever digits the time was written with.
        let names = ["2026-12-02T13:06:19Z", "2026-12-02T13:06:19.9Z", "2026-12-02T13:06:19.95Z"]
            .map(|at| run_name(at, 7));
        assert_eq!(names[0], "20261202T130619.000Z-7");
        assert!(names[0] < names[1] && names[1] < names[2], "{names:?}");
        assert!(is_run_name("20261202T130619.663Z-42"));
        for bad in ["", "../x", "a/b", ".hidden", "a\\b", "x y"] {
            assert!(!is_run_name(bad), "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        keep(dir.path(), "20260101T000000.000Z-1", &serde_json::json!({"ok": true})).unwrap();
        keep(dir.path(), "20260102T000000.000Z-1", &serde_json::json!({"ok": false})).unwrap();
        assert!(keep(dir.path(), "../escape", &serde_json::json!({})).is_err());
        assert_eq!(list(dir.path()), ["20260102T000000.000Z-1", "20260101T000000.000Z-1"]);
        let got = load(dir.path(), "20260101T000000.000Z-1").unwrap().unwrap();
        assert_eq!(got["ok"], true);
        assert!(load(dir.path(), "../../etc/passwd").unwrap().is_none());
        assert!(load(dir.path(), "missing").unwrap().is_none());
    }
}
