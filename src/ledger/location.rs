//! Where a ledger is, and the one way pactum opens one (SPEC §18).
//!
//! Every ledger open — the writer ([`super::Ledger::open`]), [`super::verify`] and
//! [`super::query::query`], for every command — takes a [`Location`] and goes through
//! [`Location::open`]; a `Location` is made in one of two ways:
//!
//! - [`Location::project`] / [`Location::inside`]: the project's own ledger
//!   (`.pactum/ledger.jsonl`), or a ledger path a project file names. It stays inside the
//!   project root and never passes a symlink, for writing and for reading alike
//!   ([`crate::confine::Root::writable`], [`crate::confine::Root::own_file`]): a committed
//!   `.pactum` that links elsewhere is `path_escape` for `run`, `render --work-order`,
//!   `ledger query` and `ledger verify`.
//! - [`Location::chosen`]: a file the user named on the command line (`--ledger FILE`,
//!   `--log FILE`, `ledger verify FILE`). The user chose it, so it may be anywhere; a
//!   writer still never writes through a symlink in its last component, and a reader
//!   still refuses FIFOs and devices.
//! - [`Location::database`]: a ledger in PostgreSQL (`--ledger postgres://…`, or `[ledger]
//!   url` once the environment confirms committed settings; SPEC §27). The writer and every
//!   reader take it through the same functions as a file; the rows hold the file's lines
//!   (`super::postgres`).

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::confine::{self, Root};
use crate::error::Result;

/// The project's ledger, relative to the project root.
pub const PROJECT_LEDGER: &str = ".pactum/ledger.jsonl";

/// A ledger path and the rule it is opened under.
#[derive(Clone, Debug)]
pub struct Location {
    /// The root a project ledger stays inside; `None` for a file the user chose.
    root: Option<Root>,
    /// Relative to `root` (or absolute under it) when confined; as given otherwise.
    given: PathBuf,
    /// The path for messages (`root` joined to `given` when confined; the URL without its
    /// password for a database).
    path: PathBuf,
    /// The database a ledger in PostgreSQL is in (`None` for a file).
    database: Option<super::postgres::Url>,
}

/// What a ledger is opened for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reading and appending (created when missing, with its folders).
    Append,
    /// Reading only.
    Read,
}

impl Location {
    /// The project's own ledger, `.pactum/ledger.jsonl` under `root`.
    pub fn project(root: &Path) -> Location {
        Location::inside(root, Path::new(PROJECT_LEDGER))
    }

    /// A ledger at `path` (relative to `root`, as a project file names it) that must stay
    /// inside `root` and pass no symlink.
    pub fn inside(root: &Path, path: &Path) -> Location {
        let shown = if root == Path::new(".") { path.to_path_buf() } else { root.join(path) };
        Location {
            root: Some(Root::new(root)),
            given: path.to_path_buf(),
            path: shown,
            database: None,
        }
    }

    /// A ledger file the user named on the command line, wherever it is.
    pub fn chosen(path: &Path) -> Location {
        Location { root: None, given: path.to_path_buf(), path: path.to_path_buf(), database: None }
    }

    /// A ledger in the PostgreSQL database `url` names (SPEC §27).
    pub fn database(url: super::postgres::Url) -> Location {
        let shown = PathBuf::from(url.shown());
        Location { root: None, given: shown.clone(), path: shown, database: Some(url) }
    }

    /// The database, for a ledger in PostgreSQL.
    pub fn database_url(&self) -> Option<&super::postgres::Url> {
        self.database.as_ref()
    }

    /// Opens a connection to the database of a ledger in PostgreSQL (`None` for a file).
    pub(crate) fn connect(&self) -> Option<Result<super::postgres::Database>> {
        self.database.as_ref().map(|url| super::postgres::Database::open(url, url.timeout()))
    }

    /// The path, as messages name it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the ledger: the one place a ledger file is opened.
    pub(crate) fn open(&self, access: Access) -> Result<File> {
        if self.database.is_some() {
            return Err(crate::Error::Internal {
                message: format!("{} is a database, opened as a file", self.path.display()),
            });
        }
        match (&self.root, access) {
            (Some(root), Access::Append) => {
                let real = root.writable(&self.given, true)?;
                confine::open_for_update(&real, true)
            }
            (Some(root), Access::Read) => confine::open_file_unlinked(&root.own_file(&self.given)?),
            (None, Access::Append) => {
                if let Some(dir) = self.given.parent().filter(|d| !d.as_os_str().is_empty()) {
                    confine::create_folders(dir)?;
                }
                confine::open_for_update(&self.given, true)
            }
            (None, Access::Read) => confine::open_file(&self.given),
        }
    }
}

#[cfg(all(test, unix))]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;

    #[test]
    fn a_project_ledger_never_passes_a_link_a_chosen_one_may_be_anywhere() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("root");
        let elsewhere = outer.path().join("elsewhere");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("ledger.jsonl"), "").unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join(".pactum")).unwrap();
        let project = Location::project(&root);
        for access in [Access::Append, Access::Read] {
            let e = project.open(access).unwrap_err();
            assert_eq!(e.code(), Code::PathEscape, "{access:?}: {e}");
        }
        // A link to a file inside the project is refused too: pactum's own files are read
        // and written only where they are.
        std::fs::remove_file(root.join(".pactum")).unwrap();
        std::fs::create_dir(root.join(".pactum")).unwrap();
        std::fs::write(root.join("other.jsonl"), "").unwrap();
        std::os::unix::fs::symlink(root.join("other.jsonl"), root.join(".pactum/ledger.jsonl"))
            .unwrap();
        for access in [Access::Append, Access::Read] {
            assert_eq!(project.open(access).unwrap_err().code(), Code::PathEscape);
        }
        let chosen = Location::chosen(&root.join(".pactum/ledger.jsonl"));
        assert!(chosen.open(Access::Read).is_ok(), "the user chose the file");
        let e = chosen.open(Access::Append).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::PathEscape, "but no write goes through a link: {e}");
        assert!(e.to_string().contains("is a symlink"), "{e}");
        assert!(Location::chosen(&elsewhere.join("new/l.jsonl")).open(Access::Append).is_ok());
        let e = Location::inside(&root, Path::new("../elsewhere/ledger.jsonl"))
            .open(Access::Read)
            .unwrap_err();
        assert_eq!(e.code(), Code::PathEscape);
    }
}
