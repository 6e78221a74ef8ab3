//! Confinement (SPEC §18): the one rule for every path pactum reads or writes on behalf of
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

use std::ffi::OsString;
use std::fs::{File, Metadata, OpenOptions};
use std::path::{Component, Path, PathBuf};

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

    /// `path` relative to the root when it is under it (for messages).
    pub fn shown(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.real)
            .or_else(|_| path.strip_prefix(&self.given))
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

#[cfg(test)]
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
        for bad in ["", "/etc/passwd", "../x.json", "contracts/../../x", "C:\\x", "a\\..\\..\\b"] {
            assert!(check_relative(bad).is_err(), "{bad}");
        }
    }
}
