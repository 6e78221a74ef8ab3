//! `pactum new contract ID`: a contract and its pack, with `$schema` for editors,
//! registered as drafts, that pass `pactum validate` as they are. The texts are
//! placeholders for the author to replace. `pactum new version ID@VERSION`: the next version
//! of a contract (and with `--pack` of its pack), copied from the highest existing one and
//! registered as a draft (SPEC §17).
//!
//! Every `$schema` written here is relative to the file's own folder and points at the
//! project's `schemas/` folder, which is filled from the embedded schemas when missing, so
//! editors resolve it offline.
//!
//! The files are written exclusively, through the confinement rule, under the registry
//! lock (SPEC §18): of two `new contract` runs with one id, one succeeds and the other
//! changes nothing and leaves no file behind.

use std::path::{Path, PathBuf};

use semver::Version;
use serde_json::{Value, json};

use crate::compat::{Bump, declared_bump};
use crate::confine::Root;
use crate::error::{DocKind, Error, Result};
use crate::id::{Pin, Requirement};
use crate::registry::lifecycle::Stamp;
use crate::registry::{self, Entry, EntryKind, Registry, lifecycle, store};
use crate::source::{self, Syntax};

/// The files `new contract` wrote, relative to the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scaffolded {
    pub contract: String,
    pub pack: String,
    pub pack_id: String,
}

/// A contract in the order people read it (a JSON map would sort the keys).
#[derive(serde::Serialize)]
struct ContractFile {
    #[serde(rename = "$schema")]
    schema: String,
    contract_id: String,
    version: &'static str,
    prompt_pack_id: String,
    prompt_pack_version: &'static str,
    boundary: Value,
    input_schema: Value,
    output_schema: Value,
    examples: Value,
    metadata: Value,
}

/// A pack in the order people read it.
#[derive(serde::Serialize)]
struct PackFile {
    #[serde(rename = "$schema")]
    schema: String,
    prompt_pack_id: String,
    version: &'static str,
    description: String,
    sections: ScaffoldSections,
}

/// The form of the pack `new contract` writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PackForm {
    /// The object of canonical sections (role, task, output_format).
    #[default]
    Canonical,
    /// An array of keyed sections (SPEC §14), with a summarized reference section.
    Tree,
}

#[derive(serde::Serialize)]
#[serde(untagged)]
enum ScaffoldSections {
    Object(PackSections),
    Tree(Vec<TreeSection>),
}

/// One section of a scaffolded tree, in the order people read it.
#[derive(serde::Serialize)]
struct TreeSection {
    key: &'static str,
    title: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    visibility: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'static str>,
    template: &'static str,
}

#[derive(serde::Serialize)]
struct PackSections {
    role: &'static str,
    task: &'static str,
    output_format: &'static str,
}

/// Creates `rel` under `root` exclusively: through the one confinement rule (no folder on
/// the way is a symlink, nothing is written outside the project), and never over an
/// existing file or a dangling link (`create_new`). Returns the file's path.
pub(crate) fn write_new(root: &Root, rel: &str, text: &str) -> Result<PathBuf> {
    let path = root.writable(Path::new(rel), true)?;
    crate::confine::create_new(&path, text.as_bytes()).map_err(|e| match e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists => {
            Error::io(rel, std::io::Error::new(source.kind(), "already exists; pactum never writes over a file (pick another id or version, or move the file away)"))
        }
        Error::Io { source, .. } => Error::io(rel, source),
        other => other,
    })?;
    Ok(path)
}

/// The `$schema` value for a file at `rel` (relative to the root, `/`-separated): the
/// embedded schema `name` in the root's `schemas/` folder, relative to the file's folder.
pub fn schema_ref(rel: &str, name: &str) -> String {
    let depth = rel.split('/').count().saturating_sub(1);
    format!("{}schemas/{name}", "../".repeat(depth))
}

/// Writes `contracts/<name>/1.0.0.json` and `prompt_packs/<name>/1.0.0.json` under `root`
/// and registers both as drafts in `root/registry.json` (created when missing). The
/// embedded schemas are written to `root/schemas/` when they are not there yet.
pub fn new_contract(root: &Path, id: &str, stamp: &Stamp) -> Result<Scaffolded> {
    new_contract_in_form(root, id, stamp, PackForm::Canonical)
}

/// The texts `new contract` writes for the author to replace: one list, which `validate`
/// looks for (`scaffold_placeholder`, an error once the version is active, so a promotion
/// refuses a file that still holds one). Each is wrapped in parentheses and says what goes
/// there; none is text a finished prompt would hold.
pub mod placeholder {
    pub const ROLE: &str = "(the role the model plays)";
    pub const TASK: &str = "(what to do with the input)\n\n{{ input }}";
    pub const OUTPUT_FORMAT: &str =
        "(the exact output shape, e.g. a JSON object with a `result` string)";
    pub const REFERENCE_SUMMARY: &str = "(one line saying what the reference holds)";
    pub const REFERENCE: &str =
        "(the long reference text; the model reads it through `read_file` when it needs it)";
    pub const PURPOSE: &str = "(one sentence: what this exchange is for)";

    /// Every placeholder, as it is looked for: the task's without the variable after it
    /// (each begins with `(`, which [`in_text`] relies on).
    pub const ALL: [&str; 6] =
        [ROLE, "(what to do with the input)", OUTPUT_FORMAT, REFERENCE_SUMMARY, REFERENCE, PURPOSE];

    /// The first placeholder `text` holds.
    pub fn in_text(text: &str) -> Option<&'static str> {
        // Each begins with `(`: most strings have none, and are passed over in one scan.
        if !text.contains('(') {
            return None;
        }
        ALL.into_iter().find(|p| text.contains(p))
    }
}

/// [`new_contract`] with the pack in the given form.
pub fn new_contract_in_form(
    root: &Path,
    id: &str,
    stamp: &Stamp,
    form: PackForm,
) -> Result<Scaffolded> {
    if !crate::id::is_contract_id(id) {
        return Err(Error::IdInvalid {
            id: id.to_string(),
            rule: crate::id::CONTRACT_ID_RULE.into(),
        });
    }
    let (word, number) = id.trim_start_matches("PRC-").split_once('-').unwrap_or(("", ""));
    let pack_id = format!("PRM-{word}-{number}");
    let name = word.to_ascii_lowercase();
    let registry_path = root.join(registry::FILE_NAME);
    let confined = Root::new(root);
    // Every folder `new contract` may pick is one level deep, so the `$schema` paths are
    // the same for all of them.
    let pack = PackFile {
        schema: schema_ref(&format!("prompt_packs/{name}/1.0.0.json"), "prompt_pack.schema.json"),
        prompt_pack_id: pack_id.clone(),
        version: "1.0.0",
        description: format!("Prompt text of {id}."),
        sections: match form {
            PackForm::Canonical => ScaffoldSections::Object(PackSections {
                role: placeholder::ROLE,
                task: placeholder::TASK,
                output_format: placeholder::OUTPUT_FORMAT,
            }),
            PackForm::Tree => ScaffoldSections::Tree(scaffold_tree()),
        },
    };
    let contract = ContractFile {
        schema: schema_ref(&format!("contracts/{name}/1.0.0.json"), "prompt_contract.schema.json"),
        contract_id: id.to_string(),
        version: "1.0.0",
        prompt_pack_id: pack_id.clone(),
        prompt_pack_version: "1.0.0",
        boundary: json!({"max_tokens": 512, "temperature": 0}),
        input_schema: json!({
            "type": "object",
            "required": ["input"],
            "additionalProperties": false,
            "properties": {"input": {"type": "string", "minLength": 1, "description": "The text the prompt works on."}}
        }),
        output_schema: json!({"type": "object", "required": ["result"], "properties": {"result": {"type": "string"}}}),
        examples: json!([
            {"name": "a fenced reply", "input": {"input": "example"}, "response": "```json\n{\"result\": \"example\"}\n```", "expect": "ok"}
        ]),
        metadata: json!({"description": placeholder::PURPOSE}),
    };
    // Everything under the registry lock: a second `new contract` of the same id waits,
    // then finds the first one's entries and changes nothing.
    let created: std::cell::RefCell<Vec<PathBuf>> = std::cell::RefCell::default();
    let registered = store::update(&registry_path, |reg| {
        for (kind, i) in [(EntryKind::Contract, id), (EntryKind::PromptPack, pack_id.as_str())] {
            if let Some(existing) = reg.versions(kind, i).last() {
                return Err(Error::DuplicateEntry {
                    id: i.to_string(),
                    version: existing.version.to_string(),
                });
            }
        }
        // `contracts/plan/` for PRC-PLAN-001; when that folder is taken (by PRC-PLAN-001, for
        // PRC-PLAN-002), `contracts/plan-002/`.
        let folders = [name.clone(), format!("{name}-{number}")];
        let free = |folder: &String| {
            crate::confine::target_of(&root.join("contracts").join(folder).join("1.0.0.json"))
                .is_none()
                && crate::confine::target_of(
                    &root.join("prompt_packs").join(folder).join("1.0.0.json"),
                )
                .is_none()
        };
        let name = folders.iter().find(|f| free(f)).unwrap_or(&folders[1]);
        let contract_rel = format!("contracts/{name}/1.0.0.json");
        let pack_rel = format!("prompt_packs/{name}/1.0.0.json");
        let pack_path = write_new(&confined, &pack_rel, &pretty(&pack))?;
        created.borrow_mut().push(pack_path.clone());
        let contract_path = write_new(&confined, &contract_rel, &pretty(&contract))?;
        created.borrow_mut().push(contract_path.clone());
        lifecycle::add(reg, &pack_path, stamp)?;
        lifecycle::add(reg, &contract_path, stamp)?;
        Ok((contract_rel, pack_rel))
    });
    let (contract_rel, pack_rel) = match registered {
        Ok(rels) => rels,
        Err(e) => {
            // Only the files this call created (exclusively) are removed: nothing is
            // orphaned, nothing someone else wrote is touched.
            for path in created.borrow().iter() {
                crate::confine::remove_created(path);
            }
            return Err(e);
        }
    };
    crate::init::write_schemas(root, "schemas", false)?;
    Ok(Scaffolded { contract: contract_rel, pack: pack_rel, pack_id })
}

/// The sections of a scaffolded tree pack: the canonical three, and a summarized reference
/// the model reads only when it needs it (SPEC §14, §15).
fn scaffold_tree() -> Vec<TreeSection> {
    let section = |key, title, message, template| TreeSection {
        key,
        title,
        message,
        visibility: None,
        summary: None,
        template,
    };
    vec![
        section("role", "Role", Some("system"), placeholder::ROLE),
        section("output_format", "Output Format", Some("system"), placeholder::OUTPUT_FORMAT),
        section("task", "Task", None, placeholder::TASK),
        TreeSection {
            key: "reference",
            title: "Reference",
            message: None,
            visibility: Some("summary"),
            summary: Some(placeholder::REFERENCE_SUMMARY),
            template: placeholder::REFERENCE,
        },
    ]
}

/// What `new version` wrote, relative to the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewVersion {
    pub id: String,
    pub version: Version,
    pub path: String,
    /// The version it was copied from.
    pub from: Version,
    /// With `--pack`: the pack id, its new version and file.
    pub pack: Option<(String, Version, String)>,
}

/// `pactum new version ID@VERSION [--pack]`: copies the highest existing version of the
/// contract (or pack) to `VERSION` in the same folder, sets `version` (and, with
/// `with_pack`, copies the contract's pack to a new version too and pins the new contract
/// to it), and registers the new files as drafts. `VERSION` must be higher than every
/// existing version. Nothing is written when any step is refused.
pub fn new_version(root: &Path, pin: &str, with_pack: bool, stamp: &Stamp) -> Result<NewVersion> {
    let parsed = Pin::parse(pin)?;
    let Requirement::Exact(version) = parsed.requirement else {
        return Err(Error::PinInvalid {
            pin: pin.to_string(),
            reason: "new version needs an exact version: ID@1.1.0".into(),
        });
    };
    let kind = EntryKind::of_id(&parsed.id).unwrap_or(EntryKind::Contract);
    if with_pack && kind == EntryKind::PromptPack {
        return Err(Error::PinInvalid {
            pin: pin.to_string(),
            reason: "--pack copies a contract's pack; for a pack alone, drop --pack".into(),
        });
    }
    let registry_path = root.join(registry::FILE_NAME);
    let reg = Registry::open(&registry_path)?;
    let source = next_source(&reg, kind, &parsed.id, &version)?;
    let mut planned = vec![copy_plan(&reg, &source, &version)?];
    let mut pack = None;
    if with_pack {
        let contract: Value = serde_json::from_str(&planned[0].text).map_err(|e| Error::Parse {
            path: root.join(&source.path),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
            doc: Some(DocKind::Contract),
        })?;
        let pack_id = contract.get("prompt_pack_id").and_then(Value::as_str).unwrap_or_default();
        let highest =
            reg.versions(EntryKind::PromptPack, pack_id).last().cloned().ok_or_else(|| {
                Error::NotFound {
                    kind: DocKind::PromptPack,
                    id: pack_id.to_string(),
                    suggestions: crate::id::suggest(pack_id, reg.ids(EntryKind::PromptPack)),
                }
            })?;
        let pack_version = pack_version_for(&source.version, &version, &highest.version);
        let pack_source = next_source(&reg, EntryKind::PromptPack, pack_id, &pack_version)?;
        planned.push(copy_plan(&reg, &pack_source, &pack_version)?);
        planned[0].text = set_string(
            &planned[0].text,
            Syntax::Json,
            "/prompt_pack_version",
            &pack_version.to_string(),
            Some("/prompt_pack_id"),
        );
        pack = Some((pack_id.to_string(), pack_version, planned[1].rel.clone()));
    }
    // Write every file (never over an existing one), then register them in one update.
    let confined = Root::new(root);
    let mut written = Vec::new();
    let result = (|| {
        for plan in &planned {
            written.push(write_new(&confined, &plan.rel, &plan.text)?);
        }
        store::update(&registry_path, |r| {
            // Packs first: a contract may bind the new pack.
            for path in written.iter().rev() {
                lifecycle::add(r, path, stamp)?;
            }
            Ok(())
        })
    })();
    if let Err(e) = result {
        for path in &written {
            crate::confine::remove_created(path);
        }
        return Err(e);
    }
    Ok(NewVersion {
        id: parsed.id,
        version,
        path: planned[0].rel.clone(),
        from: source.version,
        pack,
    })
}

/// The entry a new `version` of `id` is copied from: the highest existing version whose
/// file is still there. Refuses a version that is not higher than every existing one.
fn next_source(reg: &Registry, kind: EntryKind, id: &str, version: &Version) -> Result<Entry> {
    let versions: Vec<&Entry> = reg.versions(kind, id).collect();
    let Some(highest) = versions.last() else {
        return Err(Error::NotFound {
            kind: kind.doc_kind(),
            id: id.to_string(),
            suggestions: crate::id::suggest(id, reg.ids(kind)),
        });
    };
    if version <= &highest.version {
        let reason = match reg.get(kind, id, version) {
            Some(taken) => format!("it is already registered ({})", taken.state.as_str()),
            None => {
                format!("it is not higher than {}, the highest existing version", highest.version)
            }
        };
        let v = &highest.version;
        return Err(Error::TransitionInvalid {
            id: id.to_string(),
            version: version.to_string(),
            action: "create".into(),
            reason: format!(
                "{reason}; use a higher version: {}.{}.{} (patch), {}.{}.0 (minor) or {}.0.0 (major)",
                v.major,
                v.minor,
                v.patch + 1,
                v.major,
                v.minor + 1,
                v.major + 1
            ),
        });
    }
    // A missing file (a removed version) falls back to the next lower one; a path that
    // escapes the root is refused, never skipped.
    for entry in versions.iter().rev() {
        match reg.file_of(entry) {
            Ok(_) => return Ok((*entry).clone()),
            Err(e @ Error::PathEscape { .. }) => return Err(e),
            Err(_) => {}
        }
    }
    Err(Error::RegistryFileMissing {
        id: id.to_string(),
        version: highest.version.to_string(),
        path: highest.path.clone(),
    })
}

/// The new pack version for a contract going from `from` to `to`: the contract's version
/// when it is higher than the pack's highest, else the pack's highest bumped at the same
/// level as the contract.
fn pack_version_for(from: &Version, to: &Version, pack_highest: &Version) -> Version {
    if to > pack_highest {
        return to.clone();
    }
    let p = pack_highest;
    match declared_bump(from, to) {
        Bump::Major => Version::new(p.major + 1, 0, 0),
        Bump::Minor => Version::new(p.major, p.minor + 1, 0),
        Bump::Patch | Bump::None => Version::new(p.major, p.minor, p.patch + 1),
    }
}

/// A file to write: its path relative to the root and its text.
struct CopyPlan {
    rel: String,
    text: String,
}

/// The copy of `source` as `version`: same folder, named `VERSION.ext`, with `version` set
/// and `$schema` (when present) pointing at the schemas folder from the new file's folder.
fn copy_plan(reg: &Registry, source: &Entry, version: &Version) -> Result<CopyPlan> {
    let path = reg.file_of(source)?;
    let text = crate::document::utf8(
        crate::document::read_limited(&path, crate::document::MAX_FILE_BYTES)?,
        &path,
        Some(source.kind.doc_kind()),
    )?;
    let syntax = match crate::document::syntax_for(&path) {
        crate::document::Syntax::Yaml => Syntax::Yaml,
        crate::document::Syntax::Json => Syntax::Json,
    };
    let ext = Path::new(&source.path).extension().and_then(|e| e.to_str()).unwrap_or("json");
    let rel = match source.path.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/{version}.{ext}"),
        None => format!("{version}.{ext}"),
    };
    let mut text = set_string(&text, syntax, "/version", &version.to_string(), None);
    if source::locate(&text, syntax, "/$schema").is_some() {
        let name = match source.kind {
            EntryKind::Contract => "prompt_contract.schema.json",
            EntryKind::PromptPack => "prompt_pack.schema.json",
        };
        text = set_string(&text, syntax, "/$schema", &schema_ref(&rel, name), None);
    }
    Ok(CopyPlan { rel, text })
}

/// `text` with the string at `pointer` replaced by `value` (keeping everything else byte
/// for byte); when there is none and `after` names a member, a new member is inserted
/// after it (JSON only).
fn set_string(
    text: &str,
    syntax: Syntax,
    pointer: &str,
    value: &str,
    after: Option<&str>,
) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    if let Some(span) = source::locate(text, syntax, pointer) {
        return format!("{}{quoted}{}", &text[..span.start], &text[span.end..]);
    }
    let Some(after) = after.filter(|_| syntax == Syntax::Json) else { return text.to_string() };
    let (Some(key), Some(prev)) =
        (source::locate_key(text, syntax, after), source::locate(text, syntax, after))
    else {
        return text.to_string();
    };
    let line_start = text[..key.start].rfind('\n').map_or(0, |i| i + 1);
    let indent: String =
        text[line_start..key.start].chars().take_while(|c| c.is_whitespace()).collect();
    let name = pointer.trim_start_matches('/');
    format!("{},\n{indent}\"{name}\": {quoted}{}", &text[..prev.end], &text[prev.end..])
}

/// `value` as pretty JSON with a final line break.
fn pretty(value: &impl serde::Serialize) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
pub(super) mod tests {
    use super::*;
    use crate::validate::{NoProgress, ValidateOptions, validate};

    fn stamp() -> Stamp {
        Stamp::new("2026-01-01T00:00:00Z", "tester@example.com")
    }

    /// For the library's tests: the edit `new contract` asks its author for, every
    /// placeholder of what it scaffolded written as the placeholder's words without its
    /// parentheses.
    pub(crate) fn write_placeholders(root: &Path, s: &Scaffolded) {
        for rel in [&s.contract, &s.pack] {
            let path = root.join(rel);
            let mut text = std::fs::read_to_string(&path).unwrap();
            for p in placeholder::ALL {
                text = text.replace(p, p.trim_start_matches('(').trim_end_matches(')'));
            }
            std::fs::write(&path, text).unwrap();
        }
    }

    #[test]
    fn every_placeholder_the_scaffold_writes_is_one_validate_looks_for() {
        use placeholder::*;
        for written in [ROLE, TASK, OUTPUT_FORMAT, REFERENCE_SUMMARY, REFERENCE, PURPOSE] {
            assert!(in_text(written).is_some(), "{written}");
        }
        // And a finished text, parentheses and all, is none.
        assert_eq!(in_text("Classify the ticket (billing, account or other)."), None);
        assert!(ALL.iter().all(|p| p.starts_with('(')), "in_text's first scan");
    }

    #[test]
    fn scaffold_registers_drafts_that_validate_but_for_their_placeholders() {
        let dir = tempfile::tempdir().unwrap();
        let s = new_contract(dir.path(), "PRC-SUMMARIZE-001", &stamp()).unwrap();
        assert_eq!(s.pack_id, "PRM-SUMMARIZE-001");
        let report = validate(dir.path(), &ValidateOptions::default(), &NoProgress).unwrap();
        let codes: Vec<_> = report.diagnostics.iter().map(|d| (d.code, d.severity)).collect();
        let warning = (crate::Code::ScaffoldPlaceholder, crate::error::Severity::Warning);
        assert_eq!(codes, [warning; 4], "{:?}", report.diagnostics);
        write_placeholders(dir.path(), &s);
        let report = validate(dir.path(), &ValidateOptions::default(), &NoProgress).unwrap();
        assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
        assert_eq!(report.files.len(), 3);
        let reg = registry::Registry::open(&dir.path().join("registry.json")).unwrap();
        assert!(reg.entries.iter().all(|e| e.state == registry::State::Draft));
        // A second contract of the same name goes to its own folder.
        let second = new_contract(dir.path(), "PRC-SUMMARIZE-002", &stamp()).unwrap();
        assert_eq!(second.contract, "contracts/summarize-002/1.0.0.json");
        assert_eq!(second.pack, "prompt_packs/summarize-002/1.0.0.json");
        write_placeholders(dir.path(), &second);
        let report = validate(dir.path(), &ValidateOptions::default(), &NoProgress).unwrap();
        assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
        let e = new_contract(dir.path(), "PRC-SUMMARIZE-001", &stamp()).unwrap_err();
        assert_eq!(e.code(), crate::Code::RegistryDuplicateEntry);
        assert_eq!(
            new_contract(dir.path(), "summarize", &stamp()).unwrap_err().code(),
            crate::Code::PinInvalid
        );
    }
}
