//! Files a provider returns (SPEC §8.5): when a pack lists `expected_outputs`, an envelope
//! may carry `{"files": {path: content | null}}` (`null`: the provider wrote the file
//! itself). Contents are written under the work order's output folder — paths relative,
//! never escaping it or the project, never through a symlink (`path_escape`) — and every
//! expected file must exist afterwards, else a warning `expected_output_missing`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::confine::Root;
use crate::error::{Code, Error};
use crate::executor::call::error_json;
use crate::gateway::ResponseBody;
use crate::pack::PromptPack;
use crate::registry::check_relative;
use crate::resolve::Warning;
use crate::work_order::WorkOrder;

/// What happened to the files of one reply.
#[derive(Debug, Default)]
pub struct Handled {
    /// Files written, relative to the output folder.
    pub written: Vec<String>,
    pub warnings: Vec<Warning>,
    pub errors: Vec<Value>,
}

/// The work order's output folder: `output_dir` (relative to the work order), else
/// `out/<work_order_id>` next to it.
pub fn output_dir(wo: &WorkOrder) -> PathBuf {
    match &wo.output_dir {
        Some(d) => wo.dir().join(d),
        None => wo.dir().join("out").join(&wo.id),
    }
}

/// The work order's folder with symlinks resolved (the current folder for a bare name).
fn real_dir(wo: &WorkOrder) -> PathBuf {
    let dir = wo.dir();
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

/// Writes the files of a reply under the output folder. Each target goes through the one
/// confinement rule ([`Root::writable`]): inside the project (or, for a work order from
/// outside it, inside the work order's folder), never through a symlink, and no folder is
/// created before the folder above it was checked; `..` in `output_dir` that climbs out,
/// and a symlinked output folder, are `path_escape`.
pub fn handle(root: &Path, wo: &WorkOrder, pack: &PromptPack, body: &ResponseBody) -> Handled {
    let mut out = Handled::default();
    let files = match body {
        ResponseBody::Envelope(v) => v.get("files").and_then(Value::as_object),
        ResponseBody::Text(_) => None,
    };
    let expected = pack.expected_outputs();
    if files.is_none() && expected.is_empty() {
        return out;
    }
    let boundary = Root::for_document(root, wo.dir());
    let base = real_dir(wo);
    let dir = match &wo.output_dir {
        Some(d) => base.join(d),
        None => base.join("out").join(&wo.id),
    };
    for (path, content) in files.into_iter().flatten() {
        if let Err(reason) = check_relative(path) {
            out.errors.push(error_json(&Error::PathEscape { path: path.clone(), reason }));
            continue;
        }
        let Some(text) = content.as_str() else { continue };
        let written = boundary
            .writable(&dir.join(path), true)
            .and_then(|target| crate::registry::store::write_atomic(&target, text.as_bytes()));
        match written {
            Ok(()) => out.written.push(path.clone()),
            Err(e) => out.errors.push(error_json(&e)),
        }
    }
    for path in expected {
        if check_relative(path).is_err() || !dir.join(path).is_file() {
            out.warnings.push(Warning {
                code: Code::ExpectedOutputMissing,
                message: format!(
                    "expected output `{path}` was not produced under {}",
                    output_dir(wo).display()
                ),
            });
        }
    }
    out
}
