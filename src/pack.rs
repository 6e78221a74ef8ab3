//! Prompt packs (`PRM-*`, SPEC §3.2): versioned prompt text, JSON or YAML.
//!
//! A pack is either one `template` (pass-through mode: the whole prompt is one user
//! message) or structured `sections` that rendering arranges into a system and a user
//! message under numbered headings (see [`crate::render`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use semver::Version;
use serde::Deserialize;
use serde_json::Value;

use crate::document::Document;
use crate::error::{DocKind, Error, Finding, Result};
use crate::id::parse_version;
use crate::schema;

/// The structured sections of a pack. Every text is a template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Sections {
    #[serde(default)]
    pub role: Option<String>,
    /// Input name → description, rendered as a bulleted list.
    #[serde(default)]
    pub required_inputs: BTreeMap<String, String>,
    #[serde(default)]
    pub context: Option<String>,
    /// The one required section.
    pub task: String,
    #[serde(default)]
    pub constraints: Option<String>,
    /// Files the answer must produce, relative to the work order's output folder.
    #[serde(default)]
    pub expected_outputs: Vec<String>,
    #[serde(default)]
    pub output_format: Option<String>,
}

/// What a pack holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackBody {
    Template(String),
    Sections(Sections),
}

/// A validated prompt pack.
#[derive(Clone, Debug)]
pub struct PromptPack {
    pub id: String,
    pub version: Version,
    pub description: Option<String>,
    pub body: PackBody,
    pub sha256: String,
    pub path: PathBuf,
}

impl PromptPack {
    pub fn key(&self) -> String {
        format!("{}@{}", self.id, self.version)
    }

    /// Every template text in the pack with the pointer it sits at.
    pub fn templates(&self) -> Vec<(String, &str)> {
        match &self.body {
            PackBody::Template(t) => vec![("/template".to_string(), t.as_str())],
            PackBody::Sections(s) => {
                let optional = [
                    ("role", &s.role),
                    ("context", &s.context),
                    ("constraints", &s.constraints),
                    ("output_format", &s.output_format),
                ];
                let mut out: Vec<(String, &str)> = optional
                    .into_iter()
                    .filter_map(|(name, text)| {
                        text.as_deref().map(|t| (format!("/sections/{name}"), t))
                    })
                    .collect();
                out.push(("/sections/task".to_string(), s.task.as_str()));
                out
            }
        }
    }

    /// Files the answer must produce (structured packs only).
    pub fn expected_outputs(&self) -> &[String] {
        match &self.body {
            PackBody::Sections(s) => &s.expected_outputs,
            PackBody::Template(_) => &[],
        }
    }

    pub fn from_document(doc: &Document) -> Result<PromptPack> {
        PromptPack::from_value(&doc.value, &doc.sha256, &doc.path)
    }

    /// Converts a parsed value, checking it against `prompt_pack.schema.json` first.
    pub fn from_value(value: &Value, sha256: &str, path: &Path) -> Result<PromptPack> {
        let invalid = |findings: Vec<Finding>| Error::SchemaInvalid {
            doc: DocKind::PromptPack,
            path: path.to_path_buf(),
            findings,
        };
        let mut findings = schema::check_document(DocKind::PromptPack, value);
        if findings.iter().any(|f| f.pointer.is_empty() && f.message.contains("oneOf")) {
            // The oneOf message quotes the whole pack; say what it means instead.
            findings.retain(|f| !(f.pointer.is_empty() && f.message.contains("oneOf")));
        }
        let has_template = value.get("template").is_some();
        let has_sections = value.get("sections").is_some();
        if has_template == has_sections {
            findings.push(Finding::new(
                "",
                if has_template {
                    "a pack has either `template` or `sections`, not both"
                } else {
                    "a pack needs `template` (one prompt) or `sections` (structured prompt)"
                },
            ));
        }
        if !findings.is_empty() {
            return Err(invalid(findings));
        }
        let raw = RawPack::deserialize(value)
            .map_err(|e| invalid(vec![Finding::new("", e.to_string())]))?;
        let version = parse_version(&raw.version)
            .ok_or_else(|| invalid(vec![Finding::new("/version", "not a version")]))?;
        let body = match (raw.template, raw.sections) {
            (Some(t), None) => PackBody::Template(t),
            (None, Some(s)) => PackBody::Sections(s),
            _ => {
                return Err(invalid(vec![Finding::new(
                    "",
                    "needs exactly one of `template` and `sections`",
                )]));
            }
        };
        Ok(PromptPack {
            id: raw.prompt_pack_id,
            version,
            description: raw.description,
            body,
            sha256: sha256.to_string(),
            path: path.to_path_buf(),
        })
    }
}

#[derive(Deserialize)]
pub(crate) struct RawPack {
    prompt_pack_id: String,
    version: String,
    description: Option<String>,
    template: Option<String>,
    sections: Option<Sections>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;
    use serde_json::json;

    #[test]
    fn template_and_sections_packs_load() {
        let p = PromptPack::from_value(
            &json!({"prompt_pack_id": "PRM-A-001", "version": "1.0.0", "template": "Hi {{ name }}"}),
            "x",
            Path::new("p.json"),
        )
        .unwrap();
        assert_eq!(p.templates(), vec![("/template".to_string(), "Hi {{ name }}")]);
        let p = PromptPack::from_value(
            &json!({"prompt_pack_id": "PRM-A-001", "version": "1.0.0",
                    "sections": {"role": "You classify.", "task": "Classify {{ x }}", "expected_outputs": ["a.md"]}}),
            "x",
            Path::new("p.json"),
        )
        .unwrap();
        assert_eq!(p.expected_outputs(), ["a.md"]);
        assert_eq!(p.templates().len(), 2);
    }

    #[test]
    fn a_pack_needs_exactly_one_body() {
        for v in [
            json!({"prompt_pack_id": "PRM-A-001", "version": "1.0.0"}),
            json!({"prompt_pack_id": "PRM-A-001", "version": "1.0.0", "template": "x", "sections": {"task": "y"}}),
        ] {
            let e = PromptPack::from_value(&v, "x", Path::new("p.json")).unwrap_err();
            assert_eq!(e.code(), Code::PromptPackInvalid);
            assert!(e.findings().iter().any(|f| f.message.contains("template")), "{e}");
        }
        let e = PromptPack::from_value(
            &json!({"prompt_pack_id": "PRM-A-001", "version": "1.0.0", "sections": {"task": "y", "persona": "z"}}),
            "x",
            Path::new("p.json"),
        )
        .unwrap_err();
        assert!(e.findings().iter().any(|f| f.pointer == "/sections/persona"), "{e}");
    }
}
