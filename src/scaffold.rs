//! `pactum new contract ID`: a contract and its pack, with `$schema` for editors,
//! registered as drafts, that pass `pactum validate` as they are. The texts are
//! placeholders for the author to replace.
//!
//! The files are written exclusively, through the confinement rule, under the registry
//! lock (SPEC §18): of two `new contract` runs with one id, one succeeds and the other
//! changes nothing and leaves no file behind.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::confine::Root;
use crate::error::{Error, Result};
use crate::registry::{self, EntryKind, lifecycle, store};

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
    schema: &'static str,
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
    schema: &'static str,
    prompt_pack_id: String,
    version: &'static str,
    description: String,
    sections: PackSections,
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
fn write_new(root: &Root, rel: &str, value: &impl serde::Serialize) -> Result<PathBuf> {
    let path = root.writable(Path::new(rel), true)?;
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).open(&path).map_err(|e| {
            let e = if e.kind() == std::io::ErrorKind::AlreadyExists {
                std::io::Error::new(e.kind(), "already exists; pick another id")
            } else {
                e
            };
            Error::io(rel, e)
        })?;
    let written = std::io::Write::write_all(&mut file, text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io(rel, e));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&path);
        return Err(e);
    }
    Ok(path)
}

/// Writes `contracts/<name>/1.0.0.json` and `prompt_packs/<name>/1.0.0.json` under `root`
/// and registers both as drafts in `root/registry.json` (created when missing).
pub fn new_contract(root: &Path, id: &str, at: &str) -> Result<Scaffolded> {
    if !crate::id::is_contract_id(id) {
        return Err(Error::PinInvalid {
            pin: id.to_string(),
            reason: "a contract id looks like PRC-NAME-001".into(),
        });
    }
    let (word, number) = id.trim_start_matches("PRC-").split_once('-').unwrap_or(("", ""));
    let pack_id = format!("PRM-{word}-{number}");
    let name = word.to_ascii_lowercase();
    let registry_path = root.join(registry::FILE_NAME);
    let confined = Root::new(root);
    let pack = PackFile {
        schema: "../../schemas/prompt_pack.schema.json",
        prompt_pack_id: pack_id.clone(),
        version: "1.0.0",
        description: format!("Prompt text of {id}."),
        sections: PackSections {
            role: "(the role the model plays)",
            task: "(what to do with the input)\n\n{{ input }}",
            output_format: "(the exact output shape, e.g. a JSON object with a `result` string)",
        },
    };
    let contract = ContractFile {
        schema: "../../schemas/prompt_contract.schema.json",
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
        metadata: json!({"description": "(one sentence: what this exchange is for)"}),
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
            !root.join("contracts").join(folder).join("1.0.0.json").exists()
                && !root.join("prompt_packs").join(folder).join("1.0.0.json").exists()
        };
        let name = folders.iter().find(|f| free(f)).unwrap_or(&folders[1]);
        let contract_rel = format!("contracts/{name}/1.0.0.json");
        let pack_rel = format!("prompt_packs/{name}/1.0.0.json");
        let pack_path = write_new(&confined, &pack_rel, &pack)?;
        created.borrow_mut().push(pack_path.clone());
        let contract_path = write_new(&confined, &contract_rel, &contract)?;
        created.borrow_mut().push(contract_path.clone());
        lifecycle::add(reg, &pack_path, at)?;
        lifecycle::add(reg, &contract_path, at)?;
        Ok((contract_rel, pack_rel))
    });
    let (contract_rel, pack_rel) = match registered {
        Ok(rels) => rels,
        Err(e) => {
            // Only the files this call created (exclusively) are removed: nothing is
            // orphaned, nothing someone else wrote is touched.
            for path in created.borrow().iter() {
                let _ = std::fs::remove_file(path);
            }
            return Err(e);
        }
    };
    Ok(Scaffolded { contract: contract_rel, pack: pack_rel, pack_id })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::{NoProgress, ValidateOptions, validate};

    #[test]
    fn scaffold_registers_drafts_that_validate_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let s = new_contract(dir.path(), "PRC-SUMMARIZE-001", "2026-01-01T00:00:00Z").unwrap();
        assert_eq!(s.pack_id, "PRM-SUMMARIZE-001");
        let report = validate(dir.path(), &ValidateOptions::default(), &NoProgress).unwrap();
        assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
        assert_eq!(report.files.len(), 3);
        let reg = registry::Registry::open(&dir.path().join("registry.json")).unwrap();
        assert!(reg.entries.iter().all(|e| e.state == registry::State::Draft));
        // A second contract of the same name goes to its own folder.
        let second = new_contract(dir.path(), "PRC-SUMMARIZE-002", "2026-01-01T00:00:00Z").unwrap();
        assert_eq!(second.contract, "contracts/summarize-002/1.0.0.json");
        assert_eq!(second.pack, "prompt_packs/summarize-002/1.0.0.json");
        let report = validate(dir.path(), &ValidateOptions::default(), &NoProgress).unwrap();
        assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
        let e = new_contract(dir.path(), "PRC-SUMMARIZE-001", "2026-01-01T00:00:00Z").unwrap_err();
        assert_eq!(e.code(), crate::Code::RegistryDuplicateEntry);
        assert_eq!(
            new_contract(dir.path(), "summarize", "x").unwrap_err().code(),
            crate::Code::PinInvalid
        );
    }
}
