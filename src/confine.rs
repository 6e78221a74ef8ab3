//! Confinement: the one rule for every path pactum reads or writes on behalf of
//! a project.
//!
//! Contracts, packs, registries, work orders and configs may come from an untrusted pull
//! request, and the paths inside them (a registry entry's `path`, a work order's
//! `output_dir`, a provider's reply file, a symlink committed in place of a folder) must
//! not lead pactum outside the project. Every caller goes through [`Root`]:
//!
//! - [`Root::file`] (read): the path, with every symlink on the way resolved, stays inside
//!   the root and is a regular file. A FIFO, socket or device is refused before it is
//!   opened, so a named pipe called `x.json` cannot hang a command.
//! - [`Root::folder`] (walk): the folder's real path stays inside the root.
//! - [`Root::writable`] (write): no component below the root is a symlink (pactum never
//!   writes through a link, even one that stays inside), missing folders are created one
//!   at a time after the check of their parent, and an existing target is a regular file.
//! - [`Root::own_file`] (pactum's own files read back, the ledger): the same rule as a
//!   write, nothing created; opened with [`open_file_unlinked`].
//!
//! Paths may be relative to the root or absolute under it; `..` is resolved lexically and
//! refused when it would climb above the root. Refusals are [`Error::PathEscape`]
//! (`path_escape`); special files are `io_error`. [`open_file`] is the one way pactum
//! opens a file for reading: it refuses special files without blocking on them.
//!
//! The checks run on the tree as it is when pactum looks at it: they stop hostile files,
//! not a concurrent local process racing pactum (that process could write anywhere
//! itself).
//!
//! This is the one module allowed to call `std::fs` (clippy's `disallowed-methods`, in
//! `clippy.toml`, refuses it everywhere else in the library): a new feature cannot reach a
//! file without going through these functions.
#![allow(clippy::disallowed_methods)]

use std::ffi::OsString;
use std::fs::{File, Metadata, OpenOptions};
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Why a path is refused, before it is turned into an [`Error`] for a caller.
#[derive(Debug)]
pub enum Refusal {
    /// The path leaves the root (`..`, absolute, a symlink leading out, a link written through).
    Escape(String),
    /// The path (or a folder on the way) does not exist.
    Missing,
    /// Not a regular file (a folder, FIFO, socket or device).
    Special(String),
    /// The file system said no.
    Io(std::io::Error),
}

impl Refusal {
    /// The error for `shown` (the path as the user wrote it).
    pub fn into_error(self, shown: &Path) -> Error {
        match self {
            Refusal::Escape(reason) => {
                Error::PathEscape { path: shown.display().to_string(), reason }
            }
            Refusal::Missing => Error::io(
                shown,
                std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory"),
            ),
            Refusal::Special(what) => special_error(shown, &what),
            Refusal::Io(e) => Error::io(shown, e),
        }
    }
}

fn special_error(path: &Path, what: &str) -> Error {
    Error::io(
        path,
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is {what}, not a regular file; pactum reads only regular files"),
        ),
    )
}

/// What a non-regular file is, in words (`None` for a regular file).
pub fn special_kind(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_block_device() || t.is_char_device() {
            return Some("a device");
        }
    }
    if t.is_symlink() {
        return Some("a symlink");
    }
    Some("a special file")
}

/// Opens a file for reading. Anything but a regular file is refused before it is opened
/// (and, on Unix, the open itself never blocks and is checked again on the handle).
pub fn open_file(path: &Path) -> Result<File> {
    open_file_with_metadata(path).map(|(file, _)| file)
}

/// [`open_file`], with the open file's metadata (one `fstat` for both uses).
pub fn open_file_with_metadata(path: &Path) -> Result<(File, Metadata)> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if let Some(what) = special_kind(&meta) {
        return Err(special_error(path, what));
    }
    open_known_file(path)
}

/// [`open_file_with_metadata`] for a path already known to name a regular file (a walk's
/// entry that was no symlink): the check before opening is skipped, the one on the handle
/// is not, so a file swapped for something else in between is still refused.
pub fn open_known_file(path: &Path) -> Result<(File, Metadata)> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if let Some(what) = special_kind(&meta) {
        return Err(special_error(path, what));
    }
    Ok((file, meta))
}

/// Opens (creating) a file for appending or locking, never through a symlink: on Unix the
/// last component is opened with `O_NOFOLLOW`, so a link planted there is refused.
pub fn open_for_update(path: &Path, append: bool) -> Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).read(true);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(false);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(|e| {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            Refusal::Escape(link_reason()).into_error(path)
        } else {
            Error::io(path, e)
        }
    })?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if let Some(what) = special_kind(&meta) {
        return Err(special_error(path, what));
    }
    Ok(file)
}

/// Opens an existing file for reading, never through a symlink: on Unix the last component
/// is opened with `O_NOFOLLOW` (a link planted there is refused), and anything but a
/// regular file is refused on the handle. For pactum's own files read back (the ledger),
/// after [`Root::own_file`] checked the folders on the way.
pub fn open_file_unlinked(path: &Path) -> Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(|e| {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            Refusal::Escape(link_reason()).into_error(path)
        } else {
            Error::io(path, e)
        }
    })?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if let Some(what) = special_kind(&meta) {
        return Err(special_error(path, what));
    }
    Ok(file)
}

/// Creates `dir` and the folders above it, for a file the user named on the command line
/// (`--ledger FILE`, `--log FILE`): the user chose the place, so no root confines it.
pub fn create_folders(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

fn link_reason() -> String {
    "is a symlink; pactum does not read or write its own files through links (replace the link with a file)".to_string()
}

// --- Paths (resolution, not content) --------------------------------------------------

/// The real path of `path`, every symlink resolved: where a root, a document or a folder
/// lives. Never a read of what a file holds.
pub fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    path.canonicalize()
}

/// [`real_path`], or `path` as given when it cannot be resolved (it does not exist yet).
pub fn real_or_given(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// What is at `path`, without following a last symlink (`None`: nothing).
pub fn entry_at(path: &Path) -> Option<Metadata> {
    std::fs::symlink_metadata(path).ok()
}

/// [`target_of`] as a result naming `path` when there is nothing.
pub fn metadata(path: &Path) -> Result<Metadata> {
    std::fs::metadata(path).map_err(|e| Error::io(path, e))
}

/// What `path` leads to, following symlinks (`None`: nothing, or a dangling link).
pub fn target_of(path: &Path) -> Option<Metadata> {
    std::fs::metadata(path).ok()
}

/// Creates `path` exclusively and writes `bytes` durably: never over an existing file or
/// a dangling link (`create_new`); a failed write removes what it created. Callers check
/// `path` first ([`Root::writable`]). An existing file is an `io_error` of kind
/// `AlreadyExists`.
pub fn create_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if let Err(e) = written {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(Error::io(path, e));
    }
    Ok(())
}

/// Removes a file this process created exclusively ([`create_new`]) when the operation it
/// belonged to failed: nothing is orphaned, nothing another writer made is touched.
pub fn remove_created(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// A walk of `dir` that never follows a link below it (a link is reported as itself, for
/// the caller to resolve through [`Root`]), in file-name order: the one way pactum walks a
/// folder.
pub fn walk(dir: &Path) -> walkdir::WalkDir {
    walkdir::WalkDir::new(dir).follow_links(false).sort_by_file_name()
}

/// Whether `path` leads to a regular file (following symlinks).
pub fn is_file(path: &Path) -> bool {
    target_of(path).is_some_and(|m| m.is_file())
}

/// Whether `path` leads to a file someone may execute (following symlinks).
pub fn is_executable(path: &Path) -> bool {
    target_of(path).is_some_and(|m| {
        #[cfg(unix)]
        let runnable = std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0;
        #[cfg(not(unix))]
        let runnable = true;
        m.is_file() && runnable
    })
}

/// Whether `path` leads to a folder (following symlinks).
pub fn is_dir(path: &Path) -> bool {
    target_of(path).is_some_and(|m| m.is_dir())
}

/// Syntactic checks of a relative path written in a file: not empty, not absolute, no `..`.
pub fn check_relative(path: &str) -> std::result::Result<(), String> {
    if path.is_empty() {
        return Err("path is empty".into());
    }
    let p = Path::new(path);
    if p.is_absolute()
        || path.starts_with('/')
        || path.starts_with('\\')
        || path.get(1..2) == Some(":")
    {
        return Err("absolute paths are not allowed; use a path relative to registry.json".into());
    }
    if p.components().any(|c| matches!(c, Component::ParentDir))
        || path.split(['/', '\\']).any(|s| s == "..")
    {
        return Err("`..` is not allowed: the path would leave the project root".into());
    }
    Ok(())
}

/// A folder that reads and writes must stay inside.
#[derive(Clone, Debug)]
pub struct Root {
    /// The folder as given (made absolute), for recognising paths built from it.
    given: PathBuf,
    /// The folder with symlinks resolved.
    real: PathBuf,
}

impl Root {
    /// The root at `dir` (which should exist; a missing one confines to its own path).
    pub fn new(dir: &Path) -> Root {
        let given = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let real = dir.canonicalize().unwrap_or_else(|_| given.clone());
        Root { given, real }
    }

    /// The boundary for paths a document names relative to itself (a work order's
    /// fixtures, cassette, output folder): the project root when the document lies inside
    /// the project, else the document's own folder — a work order given on the command
    /// line from elsewhere reaches only what is beside it.
    pub fn for_document(project_root: &Path, document_dir: &Path) -> Root {
        let project = Root::new(project_root);
        let dir = if document_dir.as_os_str().is_empty() { Path::new(".") } else { document_dir };
        match dir.canonicalize() {
            Ok(real) if !real.starts_with(&project.real) => Root::canonical(&real),
            _ => project,
        }
    }

    /// `rel` (as written in a document) joined to the document's folder with symlinks
    /// resolved, ready for [`Root::file`] or [`Root::writable`].
    pub fn beside(document_dir: &Path, rel: impl AsRef<Path>) -> PathBuf {
        let dir = if document_dir.as_os_str().is_empty() { Path::new(".") } else { document_dir };
        dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()).join(rel)
    }

    /// A root whose path is already canonical (saves a `realpath`).
    pub fn canonical(real: &Path) -> Root {
        Root { given: real.to_path_buf(), real: real.to_path_buf() }
    }

    /// The root with symlinks resolved.
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// The components of `path` below the root, with `.` dropped and `..` applied
    /// lexically; an absolute path must start with the root.
    fn parts(&self, path: &Path) -> std::result::Result<Vec<OsString>, Refusal> {
        let rel = if path.is_absolute() {
            match path.strip_prefix(&self.real).or_else(|_| path.strip_prefix(&self.given)) {
                Ok(rel) => rel,
                Err(_) => {
                    return Err(Refusal::Escape(format!(
                        "is outside the project root {}",
                        self.real.display()
                    )));
                }
            }
        } else {
            path
        };
        let mut parts: Vec<OsString> = Vec::new();
        for component in rel.components() {
            match component {
                Component::Normal(part) => parts.push(part.to_os_string()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(Refusal::Escape(
                            "`..` leads above the project root".to_string(),
                        ));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(Refusal::Escape(
                        "absolute paths are not allowed here; use a path relative to the project"
                            .to_string(),
                    ));
                }
            }
        }
        Ok(parts)
    }

    fn escape_to(&self, real: &Path) -> Refusal {
        Refusal::Escape(format!(
            "resolves to {} through a symlink, outside the project root {}",
            real.display(),
            self.real.display()
        ))
    }

    /// The real path of `path` (any kind of file), every symlink on the way resolved and
    /// required to stay inside the root.
    pub fn locate(&self, path: &Path) -> std::result::Result<PathBuf, Refusal> {
        self.resolve(path).map(|(real, _)| real)
    }

    /// Follows `path` below the root, resolving symlinks; the real path must stay inside.
    fn resolve(&self, path: &Path) -> std::result::Result<(PathBuf, Metadata), Refusal> {
        let parts = self.parts(path)?;
        let mut current = self.real.clone();
        // The last component's metadata, when it was not reached through a link.
        let mut last = None;
        for (i, part) in parts.iter().enumerate() {
            current.push(part);
            let meta = match std::fs::symlink_metadata(&current) {
                Ok(meta) => meta,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Refusal::Missing),
                Err(e) => return Err(Refusal::Io(e)),
            };
            last = None;
            if meta.file_type().is_symlink() {
                current = match current.canonicalize() {
                    Ok(real) => real,
                    // A dangling link, or a loop.
                    Err(_) => return Err(Refusal::Missing),
                };
                if !current.starts_with(&self.real) {
                    return Err(self.escape_to(&current));
                }
            } else if i + 1 < parts.len() && !meta.is_dir() {
                return Err(Refusal::Missing);
            } else {
                last = Some(meta);
            }
        }
        let meta = match last {
            Some(meta) => meta,
            None => std::fs::metadata(&current).map_err(Refusal::Io)?,
        };
        Ok((current, meta))
    }

    /// For reading: the real path of an existing regular file inside the root.
    pub fn file(&self, path: &Path) -> std::result::Result<PathBuf, Refusal> {
        let (real, meta) = self.resolve(path)?;
        match special_kind(&meta) {
            None => Ok(real),
            Some(what) => Err(Refusal::Special(what.to_string())),
        }
    }

    /// For reading project content a document references (`file_refs`, frameworks): a
    /// regular file inside the root whose path — as written and as resolved through links
    /// — has no hidden component, so `.git/config`, `.pactum/ledger.jsonl`, `.env` and the
    /// like never reach a prompt.
    pub fn content(&self, path: &Path) -> std::result::Result<PathBuf, Refusal> {
        let hidden = |parts: &[OsString]| hidden_part(parts);
        self.visible(path)?;
        let real = self.file(path)?;
        match real.strip_prefix(&self.real) {
            Ok(rel) => {
                let parts: Vec<OsString> = rel.iter().map(|p| p.to_os_string()).collect();
                hidden(&parts).map_or(Ok(real), Err)
            }
            Err(_) => Err(self.escape_to(&real)),
        }
    }

    /// Refuses `path` (as written, relative to the root) when a component of it is hidden:
    /// `.git/`, `.pactum/`, `.ci/`, dot-files. What a project file names for pactum to read
    /// or write (context, fixtures, cassettes) is the project's own content, never those.
    pub fn visible(&self, path: &Path) -> std::result::Result<(), Refusal> {
        hidden_part(&self.parts(path)?).map_or(Ok(()), Err)
    }

    /// For walking: the real path of an existing folder inside the root.
    pub fn folder(&self, path: &Path) -> std::result::Result<PathBuf, Refusal> {
        let (real, meta) = self.resolve(path)?;
        if meta.is_dir() { Ok(real) } else { Err(Refusal::Missing) }
    }

    /// [`Root::file`] as an [`Error`] naming `path`.
    pub fn read_path(&self, path: &Path) -> Result<PathBuf> {
        self.file(path).map_err(|r| r.into_error(&self.shown(path)))
    }

    /// For writing: the path to write `path` at. Every folder on the way must be a real
    /// folder (never a symlink); missing ones are created one at a time when `create` is
    /// set. An existing target must be a regular file, not a link.
    pub fn writable(&self, path: &Path, create: bool) -> Result<PathBuf> {
        let shown = self.shown(path);
        let parts = self.parts(path).map_err(|r| r.into_error(&shown))?;
        let Some((name, folders)) = parts.split_last() else {
            return Err(Refusal::Escape("names the project root itself, not a file".into())
                .into_error(&shown));
        };
        let mut current = self.walk_folders(folders, create, &shown)?;
        current.push(name);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                Err(Refusal::Escape(link_reason()).into_error(&shown))
            }
            Ok(meta) => match special_kind(&meta) {
                None => Ok(current),
                Some(what) => Err(special_error(&shown, what)),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(current),
            Err(e) => Err(Error::io(&current, e)),
        }
    }

    /// For pactum's own files read back (the ledger): like [`Root::writable`] without
    /// creating anything — no folder below the root on the way is a symlink (not even one
    /// that stays inside), and the file, when it exists, is a regular file and no link.
    /// A missing folder or file is `io_error` (not found). Open the path with
    /// [`open_file_unlinked`].
    pub fn own_file(&self, path: &Path) -> Result<PathBuf> {
        self.writable(path, false)
    }

    /// For writing into: the folder `path`, every folder on the way (itself included) a
    /// real folder, never a symlink; missing ones are created when `create` is set.
    pub fn writable_folder(&self, path: &Path, create: bool) -> Result<PathBuf> {
        let shown = self.shown(path);
        let parts = self.parts(path).map_err(|r| r.into_error(&shown))?;
        self.walk_folders(&parts, create, &shown)
    }

    /// The real folder below the root at `folders`, checked (and created) one at a time.
    fn walk_folders(&self, folders: &[OsString], create: bool, shown: &Path) -> Result<PathBuf> {
        let mut current = self.real.clone();
        for part in folders {
            current.push(part);
            match std::fs::symlink_metadata(&current) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(Refusal::Escape(format!(
                        "passes through the symlink {}; pactum does not write through links",
                        self.shown(&current).display()
                    ))
                    .into_error(shown));
                }
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(Error::io(
                        &current,
                        std::io::Error::new(
                            std::io::ErrorKind::NotADirectory,
                            "is a file where a folder is needed",
                        ),
                    ));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                    match std::fs::create_dir(&current) {
                        Ok(()) => {}
                        // Another writer made it meanwhile: check it on the next pass.
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                            let meta = std::fs::symlink_metadata(&current)
                                .map_err(|e| Error::io(&current, e))?;
                            if !meta.is_dir() {
                                return Err(Refusal::Escape(link_reason()).into_error(shown));
                            }
                        }
                        Err(e) => return Err(Error::io(&current, e)),
                    }
                }
                Err(e) => return Err(Error::io(&current, e)),
            }
        }
        Ok(current)
    }

    /// Deletes the file at `path` as written: when it is a symlink, the link goes and its
    /// target stays (SPEC §18 "one door": deletion removes a link, never its target). No
    /// folder on the way may be a link and `..` may not climb out; a folder or special
    /// file is refused. `Ok(false)` when nothing is there.
    pub fn remove(&self, path: &Path) -> Result<bool> {
        let shown = self.shown(path);
        let parts = self.parts(path).map_err(|r| r.into_error(&shown))?;
        let Some((name, folders)) = parts.split_last() else {
            return Err(Refusal::Escape("names the project root itself, not a file".into())
                .into_error(&shown));
        };
        let mut target = match self.walk_folders(folders, false, &shown) {
            Ok(dir) => dir,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        target.push(name);
        match std::fs::symlink_metadata(&target) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::io(&target, e)),
            Ok(meta) if meta.file_type().is_symlink() || meta.is_file() => {}
            Ok(meta) => {
                return Err(special_error(&shown, special_kind(&meta).unwrap_or("not a file")));
            }
        }
        match std::fs::remove_file(&target) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(&target, e)),
        }
    }

    /// `path` relative to the root when it is under it (for messages).
    pub fn shown(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.real)
            .or_else(|_| path.strip_prefix(&self.given))
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

// --- Atomic replacement (registry.json, scaffolds, output files) ------------------------

fn temp_prefix(target: &Path) -> String {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!(".{name}.tmp-")
}

/// Replaces `target` with `contents` atomically and durably. A `target` that is a symlink
/// is refused (`path_escape`: the link would be replaced, or followed by a later reader);
/// an existing file's permissions are kept.
pub fn write_atomic(target: &Path, contents: &[u8]) -> Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let existing = existing_file(target)?.map(|meta| meta.permissions());
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
        if let Some(permissions) = existing {
            file.set_permissions(permissions).map_err(|e| Error::io(&temp, e))?;
        }
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

/// The metadata of `target` when it exists; a symlink there (dangling or not) is refused.
pub fn existing_file(target: &Path) -> Result<Option<std::fs::Metadata>> {
    match std::fs::symlink_metadata(target) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::PathEscape {
            path: target.display().to_string(),
            reason: "is a symlink; pactum does not replace or write through links (replace the link with a file)".into(),
        }),
        Ok(meta) => Ok(Some(meta)),
        Err(_) => Ok(None),
    }
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

/// A file of pactum's own outside any project (in the system's temporary folder), removed
/// when dropped: what a program pactum runs reads from a file (`ssh-keygen -Y verify`'s
/// signature and allowed-signers file). Created exclusively, readable by its owner only.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    pub fn new(contents: &[u8]) -> Result<Scratch> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "pactum-{}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            jiff::Timestamp::now().as_nanosecond()
        ));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path).map_err(|e| Error::io(&path, e))?;
        let scratch = Scratch { path };
        file.write_all(contents).map_err(|e| Error::io(&scratch.path, e))?;
        Ok(scratch)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Where pactum keeps the proof of the output folders it made, below the project root:
/// one record per folder (`<sha256 of the folder's path>.json`: the folder, and every file
/// pactum wrote into it with its SHA-256). It lies in `.pactum/`, which `pactum init`
/// tells git to ignore and which a model never writes (SPEC §24: the proof that pactum
/// made a folder is never a file a pull request can commit; a record git tracks counts
/// for nothing).
pub const OUTPUT_RECORDS: &str = ".pactum/outputs";

/// The project's governed folders: an output folder is never one of them, nor inside one
/// (but for `work_orders/`, whose `out/` is where output folders go by default).
pub const GOVERNED_FOLDERS: &[&str] =
    &["contracts", "prompt_packs", "work_orders", "schemas", "evals", "frameworks"];

/// What git tracks, as the caller learned it from git (`crate::git::tracked`): the files
/// at or below each path asked about, or `None` when the answer is unknown (no work tree).
/// The confinement module asks no program itself; the output area cannot be opened
/// without an answer.
pub type Tracked<'a> = &'a dyn Fn(&[&Path]) -> Option<Vec<PathBuf>>;

/// A folder pactum owns for files a model supplies: never the root or
/// above it, never a hidden folder (`.git/`, `.pactum/`, `.ci/`, ...) or inside one, never
/// a governed folder, never a folder pactum did not create (no record of it under
/// [`OUTPUT_RECORDS`], or one git tracks), and never one that holds a file git tracks.
/// Inside it, a model's path may not be hidden, climb out, pass a link, or land in an
/// exchange's context folder, and an existing file is replaced only when its bytes are
/// what pactum wrote there (never a file with an execute bit). [`OutputArea::write_reply`]
/// is the only way a model's file reaches the disk.
#[derive(Clone, Debug)]
pub struct OutputArea {
    root: Root,
    /// The folder's real path.
    dir: PathBuf,
    /// The folder's record (see [`OUTPUT_RECORDS`]).
    record: PathBuf,
    /// The folder's path below the root, as the record names it.
    name: String,
}

/// The record of one output folder: the files pactum wrote there, by path, with their
/// SHA-256.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct OutputRecord {
    dir: String,
    files: std::collections::BTreeMap<String, String>,
}

impl Root {
    /// The record file of the output folder whose path below the root is `name`.
    fn output_record(&self, name: &str) -> PathBuf {
        let key = crate::digest::sha256_hex(name.as_bytes());
        self.real.join(OUTPUT_RECORDS).join(format!("{}.json", &key[..32]))
    }

    /// The record of the output folder `name`, when pactum made it (a record that does not
    /// parse, or names another folder, is none).
    fn read_output_record(&self, name: &str) -> Option<OutputRecord> {
        let path = self.own_file(&self.output_record(name)).ok()?;
        let bytes = crate::document::read_limited(&path, crate::document::MAX_FILE_BYTES).ok()?;
        let record: OutputRecord = serde_json::from_slice(&bytes).ok()?;
        (record.dir == name).then_some(record)
    }

    /// Why `dir` may not be an output folder, judged from its path and what is on disk now
    /// (`validate` reports it; [`Root::output_area`] refuses it, and also asks git).
    /// `None`: it may be.
    pub fn output_dir_problem(&self, dir: &Path) -> Option<String> {
        let parts = match self.parts(dir) {
            Ok(parts) => parts,
            Err(Refusal::Escape(reason)) => return Some(reason),
            Err(_) => return Some("is not a usable path".to_string()),
        };
        let Some(first) = parts.first() else {
            return Some(
                "is the project root itself; model-supplied files go only into a folder of their own (the default is out/<work order id> next to the work order)".to_string(),
            );
        };
        if let Some(hidden) = parts.iter().find(|p| p.to_string_lossy().starts_with('.')) {
            return Some(format!(
                "is or lies inside the hidden folder `{}` (.git/, .pactum/, .ci/, ... are never written by a model)",
                hidden.to_string_lossy()
            ));
        }
        let first = first.to_string_lossy();
        if GOVERNED_FOLDERS.contains(&first.as_ref())
            && (parts.len() == 1 || first != "work_orders")
        {
            return Some(format!(
                "is or lies inside the governed folder `{first}/`, whose files the registry and validate govern"
            ));
        }
        let mut current = self.real.clone();
        current.extend(&parts);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.is_dir() => match self.read_output_record(&folder_name(&parts)) {
                Some(_) => None,
                None => Some(format!(
                    "already exists and was not made by pactum (there is no record of it in {OUTPUT_RECORDS}/; a file inside the folder proves nothing); pactum writes model-supplied files only into a folder it created: choose a new output_dir, or remove the folder"
                )),
            },
            // Missing (made on first use), or not a folder (refused when written).
            _ => None,
        }
    }

    /// The output folder at `dir`, created (with its record) when missing; refused with
    /// `output_dir_protected` for the reasons of [`Root::output_dir_problem`], when git
    /// tracks the folder's record or any file in the folder, or when git's answer is
    /// unknown inside a work tree; `path_escape` when it climbs out or passes a link.
    pub fn output_area(&self, dir: &Path, tracked: Tracked<'_>) -> Result<OutputArea> {
        let shown = self.shown(dir);
        let parts = self.parts(dir).map_err(|r| r.into_error(&shown))?;
        let protected = |reason: String| Error::OutputDirProtected {
            path: shown.display().to_string(),
            reason,
        };
        if let Some(reason) = self.output_dir_problem(dir) {
            return Err(protected(reason));
        }
        let name = folder_name(&parts);
        let record = self.output_record(&name);
        let mut current = self.real.clone();
        current.extend(&parts);
        let existed = std::fs::symlink_metadata(&current).is_ok_and(|m| m.is_dir());
        // What git tracks there is not pactum's to replace, and a record git tracks came
        // with the change under review, not from pactum.
        match tracked(&[&current, &record]) {
            Some(files) if !files.is_empty() => {
                let named: Vec<String> =
                    files.iter().take(3).map(|f| self.shown(f).display().to_string()).collect();
                return Err(protected(format!(
                    "holds what git tracks ({}): a model's files never replace committed ones, and a committed record of the folder proves nothing; choose a new output_dir",
                    named.join(", ")
                )));
            }
            Some(_) => {}
            None if inside_work_tree(&self.real) => {
                return Err(protected(
                    "is in a git work tree, but git could not say which files it tracks there (is git installed and allowed to read this repository?)".into(),
                ));
            }
            None => {}
        }
        let real = self.writable_folder(dir, true)?;
        if !existed {
            let made = OutputRecord { dir: name.clone(), files: Default::default() };
            self.write_output_record(&record, &made)?;
        }
        Ok(OutputArea { root: self.clone(), dir: real, record, name })
    }

    fn write_output_record(&self, path: &Path, record: &OutputRecord) -> Result<()> {
        let target = self.writable(path, true)?;
        let mut text = serde_json::to_string_pretty(record)
            .map_err(|e| Error::Internal { message: format!("an output record: {e}") })?;
        text.push('\n');
        write_atomic(&target, text.as_bytes())
    }
}

/// A folder's path below the root, `/`-separated, as its record names it.
fn folder_name(parts: &[OsString]) -> String {
    parts.iter().map(|p| p.to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

/// Whether `dir` looks like it lies in a git work tree: a `.git` file (a linked work tree
/// or submodule) or a `.git` folder with a `HEAD` at it or above.
fn inside_work_tree(dir: &Path) -> bool {
    dir.ancestors().any(|d| {
        let git = d.join(".git");
        std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_file())
            || std::fs::symlink_metadata(git.join("HEAD")).is_ok()
    })
}

impl OutputArea {
    /// The folder's real path.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Why a model may not write `rel` here: not relative, climbing out, hidden, or inside
    /// an exchange's context folder (`PRC-...@VERSION/context/`).
    pub fn reply_path_problem(rel: &str) -> Option<String> {
        if let Err(reason) = check_relative(rel) {
            return Some(reason);
        }
        let parts: Vec<&str> =
            rel.split(['/', '\\']).filter(|p| !p.is_empty() && *p != ".").collect();
        if parts.is_empty() {
            return Some("names the output folder itself, not a file".to_string());
        }
        if let Some(hidden) = parts.iter().find(|p| p.starts_with('.')) {
            return Some(format!("`{hidden}` is hidden; a model's files are never dot-files"));
        }
        if parts.len() > 1 && is_exchange_folder(parts[0]) {
            return Some(format!(
                "lies in `{}`, the folder pactum keeps the exchange's context files in",
                parts[0]
            ));
        }
        None
    }

    /// Writes a file a model supplied (atomically), refused with `path_escape` for the
    /// reasons of [`OutputArea::reply_path_problem`] or a link on the way, and with
    /// `output_dir_protected` when a file is there that pactum did not write (see
    /// [`OutputArea::write`]).
    pub fn write_reply(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        if let Some(reason) = Self::reply_path_problem(rel) {
            return Err(Error::PathEscape { path: rel.to_string(), reason });
        }
        self.write(rel, bytes)
    }

    /// Writes a file pactum itself made (an exchange's context files).
    pub fn write_own(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        check_relative(rel)
            .map_err(|reason| Error::PathEscape { path: rel.to_string(), reason })?;
        self.write(rel, bytes)
    }

    /// Writes `rel`, recording its SHA-256. A file already there is replaced only when it
    /// is one pactum wrote here and its bytes are still what pactum wrote, and never when
    /// it has an execute bit (SPEC §24).
    fn write(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        let target = self.root.writable(&self.dir.join(rel), true)?;
        let key = self.key(&target);
        let mut record = self
            .root
            .read_output_record(&self.name)
            .unwrap_or_else(|| OutputRecord { dir: self.name.clone(), files: Default::default() });
        if let Some(meta) = existing_file(&target)? {
            let refuse = |reason: String| Error::OutputDirProtected {
                path: self.root.shown(&target).display().to_string(),
                reason,
            };
            #[cfg(unix)]
            if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0 {
                return Err(refuse(
                    "has an execute bit; a model's reply never replaces a program".into(),
                ));
            }
            #[cfg(not(unix))]
            let _ = meta;
            let now = crate::document::read_limited(&target, crate::document::MAX_FILE_BYTES)
                .map(|b| crate::digest::sha256_hex(&b))
                .ok();
            if now.is_none() || record.files.get(&key) != now.as_ref() {
                return Err(refuse(format!(
                    "is not a file pactum wrote in this output folder (or it changed since): a model's reply replaces only what pactum wrote there; its record is in {OUTPUT_RECORDS}/"
                )));
            }
        }
        write_atomic(&target, bytes)?;
        record.files.insert(key, crate::digest::sha256_hex(bytes));
        self.root.write_output_record(&self.record, &record)
    }

    /// The record's key of a file in the folder: its path below the folder.
    fn key(&self, target: &Path) -> String {
        let rel = target.strip_prefix(&self.dir).unwrap_or(target);
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// True when `rel` names a regular file inside the folder (a link is followed only
    /// while it stays inside the project).
    pub fn has_file(&self, rel: &str) -> bool {
        check_relative(rel).is_ok() && self.root.file(&self.dir.join(rel)).is_ok()
    }
}

/// Refuses a relative path (as a registry entry names its file) with a hidden component
/// anywhere in it — `.git/hooks/x.json`, `contracts/.secret/a.json`, `.env` — for a caller
/// that has no [`Root`] at hand: the rule of [`Root::visible`], with its reason.
pub fn check_visible(path: &str) -> std::result::Result<(), String> {
    let parts: Vec<OsString> = Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_os_string()),
            _ => None,
        })
        .collect();
    match hidden_part(&parts) {
        Some(Refusal::Escape(reason)) => Err(reason),
        _ => Ok(()),
    }
}

/// The refusal for the first hidden component of `parts`, if any.
fn hidden_part(parts: &[OsString]) -> Option<Refusal> {
    parts.iter().find(|p| p.to_string_lossy().starts_with('.')).map(|p| {
        Refusal::Escape(format!(
            "reaches the hidden path `{}`; pactum reads and writes only the project's own content there, never .git/, .pactum/ or dot-files",
            p.to_string_lossy()
        ))
    })
}

/// An exchange's folder name, `<CONTRACT>@<VERSION>`.
fn is_exchange_folder(name: &str) -> bool {
    name.split_once('@').is_some_and(|(id, _)| crate::id::is_contract_id(id))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("root");
        std::fs::create_dir_all(root.join("contracts/a")).unwrap();
        std::fs::write(root.join("contracts/a/1.0.0.json"), "{}").unwrap();
        std::fs::write(outer.path().join("secret.json"), "{}").unwrap();
        std::fs::create_dir(outer.path().join("elsewhere")).unwrap();
        (outer, root)
    }

    #[test]
    fn reads_stay_inside_through_dots_and_links() {
        let (outer, root) = tree();
        let r = Root::new(&root);
        assert!(r.file(Path::new("contracts/a/1.0.0.json")).is_ok());
        assert!(r.file(&root.join("contracts/./a/../a/1.0.0.json")).is_ok());
        assert!(matches!(r.file(Path::new("../secret.json")), Err(Refusal::Escape(_))));
        assert!(matches!(r.file(&outer.path().join("secret.json")), Err(Refusal::Escape(_))));
        assert!(matches!(r.file(Path::new("contracts/none.json")), Err(Refusal::Missing)));
        assert!(matches!(r.file(Path::new("contracts")), Err(Refusal::Special(_))));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outer.path().join("elsewhere"), root.join("work_orders"))
                .unwrap();
            std::fs::write(outer.path().join("elsewhere/wo.json"), "{}").unwrap();
            assert!(matches!(r.folder(Path::new("work_orders")), Err(Refusal::Escape(_))));
            assert!(matches!(r.file(Path::new("work_orders/wo.json")), Err(Refusal::Escape(_))));
            std::os::unix::fs::symlink(root.join("contracts/a"), root.join("inside")).unwrap();
            assert!(r.file(Path::new("inside/1.0.0.json")).is_ok(), "links inside are read");
        }
    }

    #[cfg(unix)]
    #[test]
    fn writes_never_pass_a_link_and_create_nothing_outside() {
        let (outer, root) = tree();
        let r = Root::new(&root);
        std::os::unix::fs::symlink(outer.path().join("elsewhere"), root.join("out")).unwrap();
        let e = r.writable(Path::new("out/deep/x.json"), true).unwrap_err();
        assert_eq!(e.code(), Code::PathEscape);
        assert!(!outer.path().join("elsewhere/deep").exists(), "no folder made outside");
        std::os::unix::fs::symlink(outer.path().join("gone.json"), root.join("dangling.json"))
            .unwrap();
        let e = r.writable(Path::new("dangling.json"), true).unwrap_err();
        assert_eq!(e.code(), Code::PathEscape);
        let e = r.writable(Path::new("../x.json"), true).unwrap_err();
        assert_eq!(e.code(), Code::PathEscape);
        let ok = r.writable(Path::new("new/folder/x.json"), true).unwrap();
        assert!(root.join("new/folder").is_dir());
        assert_eq!(ok, r.real().join("new/folder/x.json"));
    }

    #[cfg(unix)]
    #[test]
    fn fifos_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.json");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let e = open_file(&fifo).unwrap_err();
        assert_eq!(e.code(), Code::IoError);
        assert!(e.to_string().contains("FIFO"), "{e}");
        assert!(matches!(Root::new(dir.path()).file(&fifo), Err(Refusal::Special(_))));
        let e = open_for_update(&fifo, true).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
    }

    #[test]
    fn relative_paths_must_stay_inside() {
        assert!(check_relative("contracts/a/1.0.0.json").is_ok());
        let (absolute, dots) = (
            "absolute paths are not allowed; use a path relative to registry.json",
            "`..` is not allowed: the path would leave the project root",
        );
        for (bad, why) in [
            ("", "path is empty"),
            ("/etc/passwd", absolute),
            ("../x.json", dots),
            ("contracts/../../x", dots),
            ("C:\\x", absolute),
            ("a\\..\\..\\b", dots),
        ] {
            assert_eq!(check_relative(bad), Err(why.to_string()), "{bad}");
        }
    }
}
