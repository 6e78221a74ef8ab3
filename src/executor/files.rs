//! Files a provider returns (SPEC §8.5): when a pack lists `expected_outputs`, an envelope
//! may carry `{"files": {path: content | null}}` (`null`: the provider wrote the file
//! itself). Contents are written under the work order's output folder — paths relative,
//! never escaping it (`path_escape`) — and every expected file must exist afterwards, else
//! a warning `expected_output_missing`.

use std::path::PathBuf;

use serde_json::Value;

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

/// Refuses a target whose real folder (symlinks resolved) is outside the output folder,
/// or which is itself a symlink.
fn inside(dir: &std::path::Path, target: &std::path::Path, shown: &str) -> Result<(), Error> {
    let escape = |reason: String| Error::PathEscape { path: shown.to_string(), reason };
    let real_dir = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    let parent = target.parent().unwrap_or(dir);
    let real_parent = parent.canonicalize().map_err(|e| Error::io(parent, e))?;
    if !real_parent.starts_with(&real_dir) {
        return Err(escape(format!(
            "leads through a symlink to {}, outside the output folder",
            real_parent.display()
        )));
    }
    if std::fs::symlink_metadata(target).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(escape("is a symlink; pactum does not write through links".into()));
    }
    Ok(())
}

pub fn handle(wo: &WorkOrder, pack: &PromptPack, body: &ResponseBody) -> Handled {
    let mut out = Handled::default();
    let files = match body {
        ResponseBody::Envelope(v) => v.get("files").and_then(Value::as_object),
        ResponseBody::Text(_) => None,
    };
    let expected = pack.expected_outputs();
    if files.is_none() && expected.is_empty() {
        return out;
    }
    let dir = output_dir(wo);
    if files.is_some_and(|f| !f.is_empty())
        && let Err(e) = std::fs::create_dir_all(&dir)
    {
        out.errors.push(error_json(&Error::io(&dir, e)));
        return out;
    }
    for (path, content) in files.into_iter().flatten() {
        if let Err(reason) = check_relative(path) {
            out.errors.push(error_json(&Error::PathEscape { path: path.clone(), reason }));
            continue;
        }
        let Some(text) = content.as_str() else { continue };
        let target = dir.join(path);
        let written = target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(|e| Error::io(&target, e))
            .and_then(|_| inside(&dir, &target, path))
            .and_then(|_| crate::registry::store::write_atomic(&target, text.as_bytes()));
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
                    dir.display()
                ),
            });
        }
    }
    out
}
