//! `pactum validate PATH...` (SPEC §21): many paths, each checked in the project that holds
//! it; a folder with no registry.json above it is searched for the projects below it (a
//! monorepo root). A path in no project whose documents can still be checked on their own
//! is checked without registry rules, with a note saying so (SPEC §5); a path with neither a
//! project nor a document is a finding, `no_project` — never a silent pass. When nothing at
//! all could be checked the run is `no_project` (exit 2).
//!
//! The paths of one project go through one [`super::validate_many`] (so a file is checked
//! with the rest of its project as context, SPEC §24, and the project is read once however
//! many of its files are named); the reports are merged, a finding two projects' runs
//! share listed once.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::diagnostic::{Diagnostic, Report};
use crate::error::{Code, Error, Result};
use crate::registry;

use super::{Progress, ValidateOptions, relative_name, validate, validate_many};

/// Folders a search for projects below a path never enters.
fn skipped(name: &str) -> bool {
    name.starts_with('.') || name == "target" || name == "node_modules"
}

/// The registry.json files below `dir` (not `dir`'s own), in path order.
pub fn projects_below(dir: &Path) -> Vec<PathBuf> {
    crate::confine::walk(dir)
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0 || !(e.file_type().is_dir() && skipped(&e.file_name().to_string_lossy()))
        })
        .flatten()
        .filter(|e| {
            e.depth() > 0 && e.file_type().is_file() && e.file_name() == registry::FILE_NAME
        })
        .map(walkdir::DirEntry::into_path)
        .collect()
}

/// Checks every path (see the module docs). `names_root` is the folder report paths are
/// relative to (the git work tree's top, else the current folder).
pub fn validate_paths(
    paths: &[PathBuf],
    options: &ValidateOptions,
    progress: &dyn Progress,
) -> Result<Report> {
    let mut merged = Report::default();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut seen_files: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut outside: Vec<&Path> = Vec::new();
    let mut checked_any = false;
    // Linear in the files and findings of every report (a project of 20,000 files is one
    // report; a list scan per file made merging it quadratic).
    let mut add = |report: Report, merged: &mut Report| {
        for file in report.files {
            if seen_files.insert(file.clone()) {
                merged.files.push(file);
            }
        }
        for d in report.diagnostics {
            let key = format!("{}|{:?}|{:?}|{}|{:?}", d.code, d.file, d.pointer, d.message, d.line);
            if seen.insert(key) {
                merged.diagnostics.push(d);
            }
        }
        for note in report.notes {
            if !merged.notes.contains(&note) {
                merged.notes.push(note);
            }
        }
    };
    let mut escapes: Vec<Diagnostic> = Vec::new();
    // The paths inside projects, by project (registry.json), in the order first named.
    let mut in_projects: Vec<(PathBuf, Vec<PathBuf>)> = Vec::new();
    // A changed pactum.toml changes how its whole project is checked (the `[lint]` rules,
    // the providers work orders name): it stands for its project's folder.
    let paths: Vec<PathBuf> = paths
        .iter()
        .map(|path| match path.parent() {
            Some(parent) if path.file_name() == Some(crate::config::FILE_NAME.as_ref()) => {
                if parent.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    parent.to_path_buf()
                }
            }
            _ => path.clone(),
        })
        .collect();
    for path in &paths {
        // A path inside a project that leads out of it through a link (a committed
        // `work_orders/x.json -> /proc/self/environ`, named by a CI step that validates the
        // changed files) is refused by name, never read.
        if let Some(absolute) = written_absolute(path)
            && let Some(root) = lexical_project(&absolute)
            && let Err(crate::confine::Refusal::Escape(reason)) =
                crate::confine::Root::new(&root).locate(&absolute)
        {
            escapes.push(
                Diagnostic::from_error(&Error::PathEscape {
                    path: path.display().to_string(),
                    reason,
                })
                .file(path.display().to_string())
                .help("replace the symlink with the file itself, inside the project"),
            );
            checked_any = true;
            continue;
        }
        crate::confine::metadata(path)?;
        let project = match &options.registry {
            Some(r) => Some(crate::confine::real_or_given(r)),
            None => registry::find_upwards(path),
        };
        if let Some(project) = project {
            match in_projects.iter_mut().find(|(p, _)| *p == project) {
                Some((_, paths)) => paths.push(path.clone()),
                None => in_projects.push((project, vec![path.clone()])),
            }
            checked_any = true;
            continue;
        }
        let below = if crate::confine::is_dir(path) { projects_below(path) } else { Vec::new() };
        if below.is_empty() {
            // Documents outside any project are checked on their own (with the note that
            // registry checks were skipped); a path with none is in no project at all.
            let base = if crate::confine::is_dir(path) {
                path.clone()
            } else {
                path.parent().map(Path::to_path_buf).unwrap_or_default()
            };
            if !super::discover::files(path, &base, None).iter().any(governed) {
                outside.push(path);
            } else {
                add(validate(path, options, progress)?, &mut merged);
                checked_any = true;
            }
            continue;
        }
        for registry_path in below {
            let project = registry_path.parent().unwrap_or(path).to_path_buf();
            let mut one = options.clone();
            one.registry = Some(registry_path);
            add(validate(&project, &one, progress)?, &mut merged);
            checked_any = true;
        }
    }
    for (_, paths) in &in_projects {
        let mut report = validate_many(paths, options, progress)?;
        // A folder below the project's root with no document in it (a mistyped but
        // existing folder) checks nothing of its own: said, never a quiet green.
        // (What it checked is in the report: no second walk of the folder.)
        for path in paths.iter().filter(|p| {
            crate::confine::is_dir(p)
                && crate::confine::entry_at(&p.join(registry::FILE_NAME)).is_none()
        }) {
            let real = crate::confine::real_or_given(path);
            let root = super::names_root(&real, options.names_from.as_deref(), &real);
            let name = relative_name(&root, &real);
            let holds = |f: &String| {
                f.strip_prefix(name.as_str()).is_some_and(|rest| rest.starts_with('/'))
            };
            if !report.files.iter().any(holds) {
                let names = options.names_from.clone().unwrap_or_else(|| PathBuf::from("."));
                report.notes.push(format!(
                    "{} holds no JSON or YAML document: nothing of it was checked",
                    shown(&names, path)
                ));
            }
        }
        add(report, &mut merged);
    }
    let names = options.names_from.clone().unwrap_or_else(|| PathBuf::from("."));
    let names = super::names_root(&names, options.names_from.as_deref(), &names);
    if !checked_any {
        let shown: Vec<String> = outside.iter().map(|p| shown(&names, p)).collect();
        return Err(Error::NoProject { paths: shown });
    }
    for path in outside {
        let name = shown(&names, path);
        merged.diagnostics.push(
            Diagnostic::new(
                Code::NoProject,
                format!("{name} is in no project: no registry.json above it or below it, so nothing here was checked"),
            )
            .file(name)
            .help("validate it from inside its project, or make one with `pactum init`"),
        );
    }
    merged.diagnostics.extend(escapes);
    merged.files.sort();
    merged.sort();
    Ok(merged)
}

/// Whether a file found outside any project is one pactum governs: in a conventional
/// folder, or a document whose keys name its kind, or a `.json`/`.yaml` file that does not
/// even parse (its error is worth showing). Other JSON and YAML (a `notes/a.json`) is not
/// a document, nor is a file of another kind (a `notes.txt`, `/etc/passwd`).
fn governed(candidate: &super::discover::Candidate) -> bool {
    candidate.dir_kind.is_some()
        || candidate.escape.is_some()
        || match crate::document::load(&candidate.path, None) {
            Ok(doc) => super::file::FileKind::from_value(&doc.value).is_some(),
            Err(_) => candidate.path.file_name().is_some_and(super::discover::is_document),
        }
}

/// The project an absolute path (from [`written_absolute`]) lies in as written: its
/// folders' own registry.json, found without resolving the path's links, if any.
fn lexical_project(absolute: &Path) -> Option<PathBuf> {
    absolute
        .ancestors()
        .skip(1)
        .find(|dir| crate::confine::entry_at(&dir.join(registry::FILE_NAME)).is_some())
        .map(Path::to_path_buf)
}

/// `path` made absolute as written, or, when it climbs with `..`, its real location: a
/// path written with `..` is taken where it leads (`p1/..` is the folder above p1, not an
/// escape from p1).
fn written_absolute(path: &Path) -> Option<PathBuf> {
    if path.components().any(|c| c == std::path::Component::ParentDir) {
        crate::confine::real_path(path).ok()
    } else {
        std::path::absolute(path).ok()
    }
}

fn shown(names: &Path, path: &Path) -> String {
    let real = crate::confine::real_or_given(path);
    let name = relative_name(names, &real);
    if name.is_empty() { ".".to_string() } else { name }
}
