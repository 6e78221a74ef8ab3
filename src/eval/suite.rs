//! Eval suites (`evals/**/EVAL-*.json|yaml`, SPEC §19): the loader and the project's list.
//!
//! The raw file is checked against `eval_suite.schema.json` and read into a [`Suite`]:
//! the contract pin parsed, every assertion compiled ([`Assertion::from_value`]), the
//! thresholds with their defaults (every case must pass unless the suite says otherwise).
//! Findings carry their JSON pointer; `validate` places them on lines.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Finding, Result};
use crate::eval::assert::Assertion;
use crate::id::Pin;

/// The folder suites live in, below the project root.
pub const FOLDER: &str = "evals";

/// What a suite requires of the version under test.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Thresholds {
    /// The least share of cases that pass (default 1: all).
    pub pass_rate: f64,
    /// The least share of runs whose output fits `output_schema`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_valid_rate: Option<f64>,
}

/// A loaded eval suite.
#[derive(Debug)]
pub struct Suite {
    pub eval_id: String,
    /// The file, relative to the project root.
    pub rel: String,
    pub path: PathBuf,
    pub contract: Pin,
    /// The dataset, relative to the project root, as the suite names it.
    pub dataset: String,
    pub assertions: Vec<Assertion>,
    pub thresholds: Thresholds,
    pub repeat: u32,
    pub token_budget: Option<u64>,
}

impl Suite {
    /// Reads and checks the suite at `path` inside the project `root`.
    pub fn load(root: &Path, path: &Path) -> Result<Suite> {
        let doc = crate::document::load(path, None)?;
        Suite::from_value(&doc.value, path, root)
    }

    /// Checks a parsed suite; every problem is a finding at its pointer
    /// (`eval_suite_invalid`).
    pub fn from_value(value: &Value, path: &Path, root: &Path) -> Result<Suite> {
        match Suite::read(value, path, root) {
            (Some(suite), found) if found.is_empty() => Ok(suite),
            (_, findings) => Err(Error::EvalSuiteInvalid { path: path.to_path_buf(), findings }),
        }
    }

    /// Reads a parsed suite as far as it goes: the suite (its assertions that compiled)
    /// when it fits its schema and its pin parses, and every finding — so `validate` checks
    /// the parts that are sound beside the findings of the others.
    pub fn read(value: &Value, path: &Path, root: &Path) -> (Option<Suite>, Vec<Finding>) {
        let mut findings = crate::schema::check_eval_suite(value);
        if !findings.is_empty() {
            return (None, findings);
        }
        let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
        let contract = match Pin::parse(text("contract")) {
            Ok(pin) => Some(pin),
            Err(e) => {
                findings.push(Finding::new("/contract", e.to_string()));
                None
            }
        };
        let dataset = text("dataset").to_string();
        if let Err(reason) = crate::confine::check_relative(&dataset) {
            findings.push(Finding::new(
                "/dataset",
                format!("{reason} (the dataset is named relative to the project root)"),
            ));
        }
        let dir = path.parent().unwrap_or(root);
        let mut assertions = Vec::new();
        let listed = value.get("assertions").and_then(Value::as_array);
        for (i, a) in listed.into_iter().flatten().enumerate() {
            match Assertion::from_value(a, &format!("/assertions/{i}"), dir, root) {
                Ok(a) => assertions.push(a),
                Err(found) => findings.extend(found),
            }
        }
        let Some(contract) = contract else { return (None, findings) };
        let thresholds = value.get("thresholds");
        let rate = |key: &str| thresholds.and_then(|t| t.get(key)).and_then(Value::as_f64);
        let rel = crate::validate::relative_name(
            &crate::confine::real_or_given(root),
            &crate::confine::real_or_given(path),
        );
        let suite = Suite {
            eval_id: text("eval_id").to_string(),
            rel,
            path: path.to_path_buf(),
            contract,
            dataset,
            assertions,
            thresholds: Thresholds {
                pass_rate: rate("pass_rate").unwrap_or(1.0),
                schema_valid_rate: rate("schema_valid_rate"),
            },
            repeat: value.get("repeat").and_then(Value::as_u64).map_or(1, |n| n as u32),
            token_budget: value.get("token_budget").and_then(Value::as_u64),
        };
        (Some(suite), findings)
    }
}

/// Whether a file name is a suite's: `EVAL-*.json`, `.yaml` or `.yml`.
pub fn is_suite_name(name: &str) -> bool {
    name.starts_with("EVAL-")
        && [".json", ".yaml", ".yml"].iter().any(|ext| name.to_ascii_lowercase().ends_with(ext))
}

/// The suite files below `dir` (walked through the confinement rule, hidden folders
/// skipped, symlinks not followed), sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    if !crate::confine::is_dir(dir) {
        return Vec::new();
    }
    let mut out: Vec<PathBuf> = crate::confine::walk(dir)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(std::result::Result::ok)
        .filter(|e| e.file_type().is_file() && is_suite_name(&e.file_name().to_string_lossy()))
        .map(|e| e.path().to_path_buf())
        .collect();
    out.sort();
    out
}

/// The project's suite files (`evals/**`).
pub fn in_project(root: &Path) -> Vec<PathBuf> {
    files_under(&root.join(FOLDER))
}

/// The suite a command-line argument names: a file, or the `eval_id` of one of the
/// project's suites.
pub fn find(root: &Path, name: &str) -> Result<Suite> {
    let as_path = Path::new(name);
    // An id has no folder and no extension.
    if name.contains(['/', '\\', '.']) {
        let real = crate::confine::Root::new(root)
            .file(&std::path::absolute(as_path).unwrap_or_else(|_| as_path.to_path_buf()))
            .map_err(|r| r.into_error(as_path))?;
        return Suite::load(root, &real);
    }
    let mut ids = Vec::new();
    for path in in_project(root) {
        let doc = crate::document::load(&path, None)?;
        let id = doc.value.get("eval_id").and_then(Value::as_str).unwrap_or_default().to_string();
        if id == name {
            return Suite::from_value(&doc.value, &path, root);
        }
        ids.push(id);
    }
    let close: Vec<&String> = ids.iter().filter(|i| crate::id::levenshtein(i, name) <= 2).collect();
    let hint = match close.as_slice() {
        [one] => format!("did you mean {one}?"),
        _ if ids.is_empty() => format!(
            "the project has no suites under {FOLDER}/ (`pactum new eval PRC-...` scaffolds one)"
        ),
        _ => format!("suites: {}", ids.join(", ")),
    };
    Err(Error::Io {
        path: PathBuf::from(name),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no eval suite file or eval_id `{name}`; {hint}"),
        ),
    })
}
