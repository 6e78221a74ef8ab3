//! Prompt packs (`PRM-*`, SPEC §3.2): versioned prompt text, JSON or YAML.
//!
//! A pack is either one `template` (pass-through mode: the whole prompt is one user
//! message) or structured `sections` that rendering arranges into a system and a user
//! message under numbered headings (see [`crate::render`]). `sections` is the object of the
//! canonical sections or an ordered tree of keyed [`Section`]s (SPEC §14); the loader checks
//! what the schema cannot say (unique sibling keys, one message per subtree, bounded size).

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

/// Which chat message a section renders into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    System,
    User,
}

/// Whether a section shows its content or its summary (SPEC §15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visibility {
    Full,
    Summary,
}

/// One section of a tree pack (SPEC §14).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// Unique among its siblings.
    pub key: String,
    pub title: String,
    /// Jinja; empty when the children carry the content.
    pub template: String,
    pub message: MessageKind,
    /// A Jinja expression over the inputs; false leaves the subtree out.
    pub enabled: Option<String>,
    pub visibility: Visibility,
    /// Required when `visibility` is summary (the loader checks it).
    pub summary: Option<String>,
    /// Tools this section brings while it is open.
    pub tools: Vec<String>,
    pub children: Vec<Section>,
}

/// The deepest a section tree may nest.
pub const MAX_SECTION_DEPTH: usize = 8;
/// The most sections one tree may hold.
pub const MAX_SECTIONS: usize = 512;

/// What a pack holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackBody {
    Template(String),
    Sections(Sections),
    /// `sections` as an ordered tree.
    Tree(Vec<Section>),
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
            PackBody::Tree(tree) => {
                let mut out = Vec::new();
                walk_templates(tree, "/sections", &mut out);
                out
            }
        }
    }

    /// Files the answer must produce (structured packs only).
    pub fn expected_outputs(&self) -> &[String] {
        match &self.body {
            PackBody::Sections(s) => &s.expected_outputs,
            PackBody::Template(_) | PackBody::Tree(_) => &[],
        }
    }

    pub fn from_document(doc: &Document) -> Result<PromptPack> {
        PromptPack::from_value(&doc.value, &doc.sha256, &doc.path)
    }

    /// Converts a parsed value, checking it against `prompt_pack.schema.json` first.
    pub fn from_value(value: &Value, sha256: &str, path: &Path) -> Result<PromptPack> {
        match PromptPack::read(value, sha256, path) {
            (Some(pack), findings) if findings.is_empty() => Ok(pack),
            (_, findings) => Err(Error::SchemaInvalid {
                doc: DocKind::PromptPack,
                path: path.to_path_buf(),
                findings,
            }),
        }
    }

    /// Reads a pack as far as it can, with every finding at once: the schema's, and the
    /// tree's own (duplicate keys, messages, bounds) for whatever parts of the tree are
    /// readable, so `validate` shows every mistake in one run rather than in layers. The
    /// pack is `None` only when no body can be read; with findings it is for checks that
    /// still make sense on the readable parts (template syntax, variables), never for use.
    pub fn read(value: &Value, sha256: &str, path: &Path) -> (Option<PromptPack>, Vec<Finding>) {
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
        let text = |name: &str| value.get(name).and_then(Value::as_str);
        let id = text("prompt_pack_id").unwrap_or_default().to_string();
        let version = text("version").and_then(parse_version);
        if version.is_none() && !findings.iter().any(|f| f.pointer == "/version") {
            findings.push(Finding::new("/version", "not a version"));
        }
        let body = if let Some(tree) = value.get("sections").and_then(Value::as_array) {
            let mut walk = TreeWalk { count: 0, paths: std::collections::HashSet::new() };
            let mut tree = parse_tree(tree, "/sections", "", 1, None, &mut walk, &mut findings);
            if !findings.is_empty() {
                // What the schema already reported is not reported again by the checks
                // that run on the readable parts: a summarized section without a summary
                // is read as a full one.
                let mut stack: Vec<&mut Section> = tree.iter_mut().collect();
                while let Some(section) = stack.pop() {
                    if section.visibility == Visibility::Summary && section.summary.is_none() {
                        section.visibility = Visibility::Full;
                    }
                    stack.extend(section.children.iter_mut());
                }
            }
            Some(PackBody::Tree(tree))
        } else {
            // The flat forms: as the pack's serde type reads them (the type
            // `schema::agreement` keeps in step with the schema).
            RawPack::deserialize(value).ok().and_then(|raw| match (raw.template, raw.sections) {
                (Some(t), None) => Some(PackBody::Template(t)),
                (None, Some(s)) => Some(PackBody::Sections(s)),
                _ => None,
            })
        };
        let pack = body.map(|body| PromptPack {
            id,
            version: version.unwrap_or_else(|| semver::Version::new(0, 0, 0)),
            description: text("description").map(str::to_string),
            body,
            sha256: sha256.to_string(),
            path: path.to_path_buf(),
        });
        (pack, findings)
    }
}

/// Every template text of a tree (templates, summaries, `enabled` expressions) with its
/// pointer.
fn walk_templates<'a>(tree: &'a [Section], at: &str, out: &mut Vec<(String, &'a str)>) {
    for (i, s) in tree.iter().enumerate() {
        let here = format!("{at}/{i}");
        if let Some(e) = &s.enabled {
            out.push((format!("{here}/enabled"), e.as_str()));
        }
        out.push((format!("{here}/template"), s.template.as_str()));
        if let Some(summary) = &s.summary {
            out.push((format!("{here}/summary"), summary.as_str()));
        }
        walk_templates(&s.children, &format!("{here}/children"), out);
    }
}

/// Reads a tree the schema accepted, checking what the schema cannot: sibling keys are
/// unique, a child stays in its parent's message, and the tree is bounded in depth and size.
/// The longest dotted key path a section may have: it names the section's context file
/// (`context/KEY.md`), which must fit a file name.
pub const MAX_KEY_PATH_BYTES: usize = 200;

/// What the walk of a tree keeps across levels.
struct TreeWalk {
    count: usize,
    /// Every dotted key path so far: a path names one section (`open_sections`, context
    /// files), so `a.b` at the root and `b` inside `a` cannot both exist.
    paths: std::collections::HashSet<String>,
}

fn parse_tree(
    items: &[Value],
    at: &str,
    parent_path: &str,
    depth: usize,
    parent: Option<MessageKind>,
    walk: &mut TreeWalk,
    findings: &mut Vec<Finding>,
) -> Vec<Section> {
    if depth > MAX_SECTION_DEPTH {
        findings.push(Finding::new(
            at,
            format!(
                "sections nest deeper than {MAX_SECTION_DEPTH} levels; flatten the tree or move detail into summarized sections' files"
            ),
        ));
        return Vec::new();
    }
    let mut out: Vec<Section> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let here = format!("{at}/{i}");
        walk.count += 1;
        if walk.count > MAX_SECTIONS {
            findings.push(Finding::new(
                &here,
                format!("a tree holds at most {MAX_SECTIONS} sections; split the pack"),
            ));
            return out;
        }
        let text = |name: &str| item.get(name).and_then(Value::as_str).map(str::to_string);
        let key = text("key").unwrap_or_default();
        let path =
            if parent_path.is_empty() { key.clone() } else { format!("{parent_path}.{key}") };
        if out.iter().any(|s| s.key == key) {
            findings.push(Finding::new(
                format!("{here}/key"),
                format!("key `{key}` is used twice among these sibling sections; keys must be unique among siblings"),
            ));
        } else if !walk.paths.insert(path.clone()) {
            findings.push(Finding::new(
                format!("{here}/key"),
                format!("the dotted key path `{path}` already names another section (a key with a dot at a higher level); rename one of them"),
            ));
        }
        if path.len() > MAX_KEY_PATH_BYTES {
            findings.push(Finding::new(
                format!("{here}/key"),
                format!("the dotted key path of this section is {} bytes, more than {MAX_KEY_PATH_BYTES}: it names the section's context file; use shorter keys", path.len()),
            ));
        }
        let message = match item.get("message").and_then(Value::as_str) {
            Some("system") => MessageKind::System,
            Some(_) => MessageKind::User,
            None => parent.unwrap_or(MessageKind::User),
        };
        if let Some(parent) = parent
            && parent != message
        {
            findings.push(Finding::new(
                format!("{here}/message"),
                "a child section renders into its parent's message; drop `message` here or move the section to the root",
            ));
        }
        let visibility = match item.get("visibility").and_then(Value::as_str) {
            Some("summary") => Visibility::Summary,
            _ => Visibility::Full,
        };
        let children = match item.get("children").and_then(Value::as_array) {
            Some(c) => parse_tree(
                c,
                &format!("{here}/children"),
                &path,
                depth + 1,
                Some(message),
                walk,
                findings,
            ),
            None => Vec::new(),
        };
        let tools = item
            .get("tools")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        out.push(Section {
            key,
            title: text("title").unwrap_or_default(),
            template: text("template").unwrap_or_default(),
            message,
            enabled: text("enabled"),
            visibility,
            summary: text("summary"),
            tools,
            children,
        });
    }
    out
}

/// A flat pack as serde reads it; `read` takes its body from here.
#[derive(Deserialize)]
pub(crate) struct RawPack {
    #[allow(dead_code)] // read leniently by `read`; declared for `schema::agreement`
    prompt_pack_id: String,
    #[allow(dead_code)]
    version: String,
    #[allow(dead_code)]
    description: Option<String>,
    template: Option<String>,
    sections: Option<Sections>,
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn a_dotted_key_path_names_one_section_and_fits_a_file_name() {
        let load = |sections: Value| {
            let v =
                json!({"prompt_pack_id": "PRM-T-001", "version": "1.0.0", "sections": sections});
            PromptPack::from_value(&v, "x", Path::new("p.json"))
        };
        let e = load(json!([
            {"key": "a.b", "title": "T", "template": "x"},
            {"key": "a", "title": "A", "template": "", "children": [{"key": "b", "title": "B", "template": "y"}]}
        ]))
        .unwrap_err();
        assert_eq!(e.code(), Code::PromptPackInvalid);
        assert!(e.to_string().contains("`a.b` already names another section"), "{e}");
        // Eight levels of 63-character keys would make a 511-byte file name.
        let mut deep = json!({"key": "k".repeat(63), "title": "T", "template": "x"});
        for _ in 0..7 {
            deep = json!({"key": "k".repeat(63), "title": "T", "template": "", "children": [deep]});
        }
        let e = load(json!([deep])).unwrap_err();
        assert!(e.to_string().contains("more than 200"), "{e}");
        assert!(load(json!([{"key": "a", "title": "A", "template": "", "children": [{"key": "b", "title": "B", "template": "y"}]}])).is_ok());
    }

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
