//! Where the schema files a reference names are read from ([`Files`]): the project's
//! files, through the confinement rule and remembered ([`ProjectFiles`]), or none
//! ([`NoFiles`]). The resolved graph ([`super::graph`]) is their one reader.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// A schema file a reference read, as [`Files`] returns it.
#[derive(Clone, Debug)]
pub struct SchemaFile {
    pub value: Arc<Value>,
    /// Lowercase hex SHA-256 of the file's exact bytes.
    pub sha256: String,
    /// The path relative to the project root, `/`-separated.
    pub rel: String,
    pub size: u64,
}

/// Why a file could not be read.
#[derive(Clone, Debug)]
pub enum ReadError {
    /// Larger than the limit asked for.
    TooLarge { size: u64 },
    /// Outside the project, missing, not a regular file, not a schema document.
    Refused(String),
}

/// Where the files a schema references are read from. Implementations decide which files
/// exist at all; the library's is [`ProjectFiles`] (confined to a project root).
pub trait Files: Sync {
    /// The schema file at `path` (absolute, as its `file:` URI says), at most `limit` bytes.
    fn read(&self, path: &Path, limit: u64) -> Result<SchemaFile, ReadError>;
}

/// No file can be read: every reference to another file is unresolved.
pub struct NoFiles;

impl Files for NoFiles {
    fn read(&self, path: &Path, _: u64) -> Result<SchemaFile, ReadError> {
        Err(ReadError::Refused(format!(
            "`{}`: the folder this schema belongs to is not known here, so files it references cannot be read",
            path.display()
        )))
    }
}

pub(super) static NO_FILES: NoFiles = NoFiles;

/// The files inside one project root, read through the confinement rule for content
/// ([`crate::confine::Root::content`]: inside the root, nothing hidden) and remembered, so that schemas of one contract (or two
/// versions compared) read a shared file once.
pub struct ProjectFiles {
    root: crate::confine::Root,
    read: Mutex<HashMap<PathBuf, Result<SchemaFile, ReadError>>>,
}

impl ProjectFiles {
    pub fn new(root: &Path) -> ProjectFiles {
        ProjectFiles { root: crate::confine::Root::new(root), read: Mutex::default() }
    }

    fn load(&self, path: &Path) -> Result<SchemaFile, ReadError> {
        // `content`: a schema file is project content like any other a document names, so
        // hidden paths (`.git/`, `.pactum/`, dot-files) are refused as they are for context.
        let real = self.root.content(path).map_err(|refusal| {
            ReadError::Refused(match refusal {
                crate::confine::Refusal::Escape(reason) => format!(
                    "`{}` {reason}: references reach only files inside the project",
                    path.display()
                ),
                other => other.into_error(path).to_string(),
            })
        })?;
        let bytes =
            crate::document::read_limited(&real, crate::document::MAX_FILE_BYTES).map_err(|e| {
                match e {
                    crate::error::Error::FileTooLarge { size, .. } => ReadError::TooLarge { size },
                    e => ReadError::Refused(e.to_string()),
                }
            })?;
        let size = bytes.len() as u64;
        let sha256 = crate::digest::sha256_hex(&bytes);
        let text = crate::document::utf8(bytes, &real, None)
            .map_err(|e| ReadError::Refused(e.to_string()))?;
        let syntax = crate::document::syntax_for(&real);
        let value = crate::document::parse(&text, syntax, &real, None)
            .map_err(|e| ReadError::Refused(e.to_string()))?;
        let rel = real
            .strip_prefix(self.root.real())
            .unwrap_or(&real)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        Ok(SchemaFile { value: Arc::new(value), sha256, rel, size })
    }
}

impl Files for ProjectFiles {
    fn read(&self, path: &Path, limit: u64) -> Result<SchemaFile, ReadError> {
        let mut read = self.read.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let file = read.entry(path.to_path_buf()).or_insert_with(|| self.load(path)).clone();
        match file {
            Ok(file) if file.size > limit => Err(ReadError::TooLarge { size: file.size }),
            other => other,
        }
    }
}
