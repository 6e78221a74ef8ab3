//! Which files `validate` checks.
//!
//! - PATH is a file: that file.
//! - PATH is a project root (the registry's folder) with any of `contracts/`,
//!   `prompt_packs/`, `work_orders/`: those folders, plus every file a registry entry
//!   names (so an entry is checked wherever its file lives).
//! - Otherwise: every `.json`, `.yaml` and `.yml` file under PATH.
//!
//! Walks skip hidden entries, `target/` and `node_modules/`, shared schemas (`schemas/`
//! folders and `*.schema.json`) and `registry.json`; symlinks are not followed into
//! folders, and a symlinked file that leads outside the root is reported as `path_escape`,
//! as is a conventional folder that is a symlink leading out (SPEC §18). A folder the walk
//! cannot read is reported (`io_error`), never skipped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::registry::{self, Registry};
use crate::validate::file::FileKind;

/// A file to check.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub path: PathBuf,
    /// The kind its folder implies (`contracts/` → contract, ...).
    pub dir_kind: Option<FileKind>,
    /// Set when the path is a symlink that leads outside the root.
    pub escape: Option<String>,
    /// True when `path` is known to be canonical (walked under the canonical base, not a
    /// symlink), so it need not be resolved again.
    pub canonical: bool,
    /// Set when the walk could not read this entry (a folder without permission): it is
    /// reported, never skipped silently.
    pub unreadable: Option<String>,
    /// True when the walk saw a regular file, reached through no symlink (so it need not
    /// be checked before it is opened, nor resolved again for a registry entry).
    pub regular: bool,
}

/// The conventional folders of a project and the kind of file each holds.
pub const FOLDERS: &[(&str, FileKind)] = &[
    ("contracts", FileKind::Contract),
    ("prompt_packs", FileKind::Pack),
    ("work_orders", FileKind::WorkOrder),
];

/// Whether a file of this name is one `validate` checks: `.json`, `.yaml` or `.yml` (any
/// case), but not registry.json nor a shared `*.schema.json`.
pub(crate) fn is_document(name: &std::ffi::OsStr) -> bool {
    let name = name.as_encoded_bytes();
    if name == registry::FILE_NAME.as_bytes() || name.ends_with(b".schema.json") {
        return false;
    }
    let extension = match name.iter().rposition(|&b| b == b'.') {
        // A leading dot starts a hidden name, not an extension (as `Path::extension`).
        Some(dot) if dot > 0 => &name[dot + 1..],
        _ => return false,
    };
    ["json", "yaml", "yml"].iter().any(|e| extension.eq_ignore_ascii_case(e.as_bytes()))
}

fn skipped_dir(name: &str) -> bool {
    name.starts_with('.') || name == "target" || name == "node_modules" || name == "schemas"
}

/// The kind implied by the first conventional folder on `path` below `base`.
pub fn kind_from_folder(base: &Path, path: &Path) -> Option<FileKind> {
    let rel = path.strip_prefix(base).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    FOLDERS.iter().find(|(name, _)| *name == first).map(|(_, kind)| *kind)
}

/// Walks `dir`. `kind`: the kind every file found has, when `dir` is a conventional folder
/// (else it is worked out per file).
fn walk(dir: &Path, base: &Path, root: &Path, kind: Option<FileKind>, out: &mut Vec<Candidate>) {
    let kind_of = |path: &Path| kind.or_else(|| kind_from_folder(base, path));
    let walker = crate::confine::walk(dir).into_iter().filter_entry(|e| {
        e.depth() == 0 || !(e.file_type().is_dir() && skipped_dir(&e.file_name().to_string_lossy()))
    });
    // A start folder that is itself a symlink (inside the root: checked by the caller)
    // gives paths that are not the files' real paths.
    let mut through_link = false;
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let path = e.path().unwrap_or(dir).to_path_buf();
                let reason = e.io_error().map_or_else(|| e.to_string(), ToString::to_string);
                out.push(Candidate {
                    dir_kind: kind_of(&path),
                    path,
                    escape: None,
                    canonical: false,
                    unreadable: Some(reason),
                    regular: false,
                });
                continue;
            }
        };
        let path = entry.path();
        if entry.depth() == 0 {
            through_link = entry.path_is_symlink();
        }
        // A link to a folder below the start is never followed; one that leads out of the
        // project (or into a hidden folder such as .git) would hide files from the check,
        // so it is a finding rather than a silent skip.
        if entry.depth() > 0
            && entry.path_is_symlink()
            && crate::confine::is_dir(path)
            && let Some(reason) = folder_link_escape(path, root)
        {
            out.push(Candidate {
                dir_kind: kind_of(path),
                path: path.to_path_buf(),
                escape: Some(reason),
                canonical: false,
                unreadable: None,
                regular: false,
            });
            continue;
        }
        if entry.file_type().is_dir() || !is_document(entry.file_name()) {
            continue;
        }
        if entry.file_name().as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let escape = if entry.path_is_symlink() {
            match crate::confine::real_path(path) {
                Ok(real) if real.starts_with(root) => {
                    if !crate::confine::is_file(&real) {
                        continue;
                    }
                    None
                }
                Ok(real) => {
                    Some(format!("symlink leads to {}, outside the project root", real.display()))
                }
                Err(_) => Some("dangling symlink".to_string()),
            }
        } else {
            None
        };
        let canonical = !entry.path_is_symlink() && !through_link;
        out.push(Candidate {
            path: path.to_path_buf(),
            dir_kind: kind_of(path),
            escape,
            canonical,
            unreadable: None,
            regular: canonical && entry.file_type().is_file(),
        });
    }
}

/// Why a link to a folder met in a walk is refused: it leads out of the project, or into a
/// hidden folder of it; `None` for a link to an ordinary folder inside (walked there).
fn folder_link_escape(path: &Path, root: &Path) -> Option<String> {
    match crate::confine::real_path(path) {
        Ok(real) if real.starts_with(root) => {
            let hidden =
                real.strip_prefix(root).ok()?.iter().any(|c| c.to_string_lossy().starts_with('.'));
            hidden.then(|| format!("is a link to the hidden folder {}", real.display()))
        }
        Ok(real) => Some(format!(
            "is a link to the folder {}, outside the project root; pactum does not follow it",
            real.display()
        )),
        Err(_) => None,
    }
}

/// The files to check for PATH (see the module docs).
pub fn files(path: &Path, base: &Path, registry: Option<&Registry>) -> Vec<Candidate> {
    let mut out = walk_path(path, base, registry.is_some());
    if let Some(registry) = registry {
        let known = vec![false; registry.entries.len()];
        let extra = registry_files(&out, path, base, registry, &known);
        out.extend(extra);
    }
    out
}

/// Whether PATH is a project root with conventional folders (then only those are walked,
/// and the registry's files are added by [`registry_files`]).
fn at_project_root(path: &Path, base: &Path, has_registry: bool) -> bool {
    let root = crate::confine::real_or_given(base);
    has_registry
        && path == root
        && FOLDERS.iter().any(|(n, _)| crate::confine::is_dir(&path.join(n)))
}

/// The walked part of [`files`]: runs before (or while) the registry loads.
pub fn walk_path(path: &Path, base: &Path, has_registry: bool) -> Vec<Candidate> {
    let root = crate::confine::real_or_given(base);
    let mut out = Vec::new();
    if crate::confine::is_file(path) {
        out.push(Candidate {
            path: path.to_path_buf(),
            dir_kind: kind_from_folder(base, path),
            escape: None,
            canonical: false,
            unreadable: None,
            regular: false,
        });
        return out;
    }
    if at_project_root(path, base, has_registry) {
        let confined = crate::confine::Root::canonical(&root);
        let mut folders = Vec::new();
        for (folder, kind) in FOLDERS
            .iter()
            .map(|(n, kind)| (path.join(n), *kind))
            .filter(|(p, _)| crate::confine::is_dir(p))
        {
            // walkdir always follows the folder it starts at: a conventional folder that
            // is a symlink leading out of the project is reported, never walked.
            if let Err(crate::confine::Refusal::Escape(reason)) = confined.folder(&folder) {
                out.push(Candidate {
                    dir_kind: None,
                    path: folder,
                    escape: Some(reason),
                    canonical: false,
                    unreadable: None,
                    regular: false,
                });
                continue;
            }
            folders.push((folder, kind));
        }
        // The folders are walked side by side (a walk mostly waits on the file system),
        // and their files listed in the folders' order.
        let walked = super::side_by_side(&folders, |(folder, kind)| {
            let mut found = Vec::new();
            walk(folder, base, &root, Some(*kind), &mut found);
            found
        });
        out.extend(walked.into_iter().flatten());
    } else {
        walk(path, base, &root, None, &mut out);
    }
    out
}

/// At a project root: every file a registry entry names that the walk did not find.
/// `known[i]` says entry `i`'s file is a walked one ([`Registry::known_files`]): those
/// need no look.
pub fn registry_files(
    walked: &[Candidate],
    path: &Path,
    base: &Path,
    registry: &Registry,
    known: &[bool],
) -> Vec<Candidate> {
    let mut out = Vec::new();
    let unknown: Vec<usize> =
        (0..registry.entries.len()).filter(|&i| !known.get(i).copied().unwrap_or(false)).collect();
    if unknown.is_empty() || !at_project_root(path, base, true) {
        return out;
    }
    let root = registry.real_root().to_path_buf();
    // Canonical paths only, so equal bytes are equal paths.
    let mut seen: HashSet<std::ffi::OsString, foldhash::fast::RandomState> = walked
        .iter()
        .filter_map(|c| {
            if c.canonical { Some(c.path.clone()) } else { crate::confine::real_path(&c.path).ok() }
        })
        .map(PathBuf::into_os_string)
        .collect();
    for i in unknown {
        if let Some(real) = registry.path_at(i)
            && seen.insert(real.as_os_str().to_os_string())
        {
            out.push(Candidate {
                dir_kind: kind_from_folder(&root, real),
                path: real.to_path_buf(),
                escape: None,
                canonical: true,
                unreadable: None,
                regular: false,
            });
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn documents_are_json_and_yaml_files_but_not_the_registry_nor_shared_schemas() {
        let is = |name: &str| is_document(std::ffi::OsStr::new(name));
        for yes in ["a.json", "a.yaml", "a.yml", "A.JSON", "b.Yml", "x.y.json"] {
            assert!(is(yes), "{yes}");
        }
        for no in ["registry.json", "a.schema.json", ".json", "a.", "a", "a.jsonl", "a.txt", "json"]
        {
            assert!(!is(no), "{no}");
        }
    }
}
