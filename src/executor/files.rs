//! Files a provider returns (SPEC §8.5): when a pack lists `expected_outputs`, a result
//! may carry `{"files": {path: content | null}, "response"?: text}` (`null`: the provider
//! wrote the file itself) — as an envelope, or as a text reply (openai, anthropic,
//! scripted) whose JSON, found by strict extraction, is an object with a `files` key
//! ([`file_result`]). Such a result is never sent to JSON repair: its `response` is the
//! exchange's text output. Contents are written only into the work order's output area
//! ([`crate::confine::OutputArea`], the one door for model-supplied files) — paths
//! relative, not hidden, never escaping it, never through a symlink (`path_escape`) — and
//! every expected file, and every `null` entry, must exist afterwards, else a warning
//! `expected_output_missing`. Exchange and kernel runs both go through [`handle`].

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::confine::{OutputArea, Root};
use crate::error::Code;
use crate::executor::call::error_json;
use crate::gateway::ResponseBody;
use crate::pack::PromptPack;
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

/// A provider result that carries files (SPEC §8.5).
#[derive(Clone, Debug, PartialEq)]
pub struct FileResult {
    /// Path → content (`null`: the provider wrote it itself).
    pub files: serde_json::Map<String, Value>,
    /// The result's `response` text, if any: the exchange's text output.
    pub response: Option<String>,
}

/// The file result in `body`, when `pack` lists `expected_outputs` and the body is one: an
/// envelope with a `files` object, or a text whose strictly extracted JSON is an object
/// with a `files` object.
pub fn file_result(pack: &PromptPack, body: &ResponseBody) -> Option<FileResult> {
    if pack.expected_outputs().is_empty() {
        return None;
    }
    let value = match body {
        ResponseBody::Envelope(v) => v.clone(),
        ResponseBody::Text(t) => {
            crate::extract::extract(t, &crate::extract::ExtractOptions::default()).ok()?.value
        }
    };
    let files = value.get("files")?.as_object()?.clone();
    let response = value.get("response").and_then(Value::as_str).map(str::to_string);
    Some(FileResult { files, response })
}

/// The work order's output folder: `output_dir` (relative to the work order), else
/// `out/<work_order_id>` next to it.
pub fn output_dir(wo: &WorkOrder) -> PathBuf {
    output_dir_at(wo.dir(), wo)
}

/// The output folder of `wo` as a path under `base` (its folder, real or as given).
pub fn output_dir_at(base: &Path, wo: &WorkOrder) -> PathBuf {
    match &wo.output_dir {
        Some(d) => base.join(d),
        None => base.join("out").join(&wo.id),
    }
}

/// The work order's output area (SPEC §18 "one door", §24): its output folder inside the
/// project (or, for a work order from outside it, inside the work order's folder), checked
/// (against what git tracks too) and created with its record by [`Root::output_area`].
pub fn output_area(root: &Path, wo: &WorkOrder) -> crate::error::Result<OutputArea> {
    let boundary = Root::for_document(root, wo.dir());
    let tracked = |paths: &[&Path]| crate::git::tracked(boundary.real(), paths);
    boundary.output_area(&output_dir_at(&real_dir(wo), wo), &tracked)
}

/// The context folder of one exchange (SPEC §15): `<output folder>/<CONTRACT>@<VERSION>/`,
/// which holds the `context/KEY.md` files its summarized sections point to. Each file is
/// written into the output area as pactum's own file; `read_file` serves the same text,
/// so the folder is the record of what the model could read.
pub fn write_context(
    root: &Path,
    wo: &WorkOrder,
    exchange: &str,
    files: &[crate::render::ContextFile],
) -> crate::error::Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let area = output_area(root, wo)?;
    for file in files {
        area.write_own(&format!("{exchange}/{}", file.path), file.content.as_bytes())?;
    }
    Ok(())
}

/// The work order's folder with symlinks resolved (the current folder for a bare name).
fn real_dir(wo: &WorkOrder) -> PathBuf {
    Root::beside(wo.dir(), "")
}

/// Writes the files of a reply into the work order's output area — only when the pack
/// lists `expected_outputs` (SPEC §8.5): a reply cannot make pactum write anything else.
/// Each path goes through [`OutputArea::write_reply`] (relative, not hidden, not into a
/// context folder, never through a link); an output folder that is the root, a hidden or
/// governed folder, or one pactum did not make is `output_dir_protected`.
pub fn handle(root: &Path, wo: &WorkOrder, pack: &PromptPack, body: &ResponseBody) -> Handled {
    let mut out = Handled::default();
    let expected = pack.expected_outputs();
    if expected.is_empty() {
        return out;
    }
    let result = file_result(pack, body);
    let files = result.as_ref().map(|r| &r.files);
    let area = match output_area(root, wo) {
        Ok(area) => area,
        Err(e) => {
            out.errors.push(error_json(&e));
            return out;
        }
    };
    for (path, content) in files.into_iter().flatten() {
        let text = match content {
            Value::String(text) => text,
            // The provider says it wrote the file itself: it must be there.
            Value::Null => {
                if !area.has_file(path) && !expected.contains(path) {
                    out.warnings.push(missing(wo, path, "the provider said it wrote it itself"));
                }
                continue;
            }
            other => {
                let kind = match other {
                    Value::Bool(_) => "a boolean",
                    Value::Number(_) => "a number",
                    Value::Array(_) => "an array",
                    _ => "an object",
                };
                out.errors.push(json!({"code": Code::ProviderResponseInvalid, "message": format!(
                    "files[{path}] is {kind}, not a string or null: a provider's file result maps paths to their text"
                )}));
                continue;
            }
        };
        match area.write_reply(path, text.as_bytes()) {
            Ok(()) => out.written.push(path.clone()),
            Err(e) => out.errors.push(error_json(&e)),
        }
    }
    for path in expected {
        if !area.has_file(path) {
            out.warnings.push(missing(wo, path, ""));
        }
    }
    out
}

/// The `expected_output_missing` warning for `path` (`why`: an extra clause).
fn missing(wo: &WorkOrder, path: &str, why: &str) -> Warning {
    let why = if why.is_empty() { String::new() } else { format!(" ({why})") };
    Warning {
        code: Code::ExpectedOutputMissing,
        message: format!(
            "expected output `{path}` was not produced under {}{why}",
            output_dir(wo).display()
        ),
    }
}
