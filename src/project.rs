//! A project: a folder with registry.json (and optionally pactum.toml), and the loading of
//! the files its entries point at.
//!
//! Loading an entry checks, in order: the files its schemas referenced when it was
//! promoted are unchanged (`contract_hash_mismatch` naming the file), the path stays inside
//! the root (`path_escape`) and exists (`registry_file_missing`), the file's SHA-256 equals
//! the registry's (`contract_hash_mismatch`; not for drafts, which are working copies until
//! promoted),
//! the file parses and fits its schema
//! (`contract_parse_error`, `contract_schema_invalid`, `prompt_pack_invalid`), and its own
//! id/version equal the entry's (`contract_id_mismatch`). Loaded files and compiled
//! validators are cached by SHA-256, so a contract is parsed and compiled once however
//! many exchanges use it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::config::Config;
use crate::contract::Contract;
use crate::document;
use crate::error::{DocKind, Error, Result};
use crate::id::Pin;
use crate::pack::PromptPack;
use crate::registry::{self, Entry, EntryKind, Registry, State};
use crate::resolve::{ResolveOptions, Warning, resolve};
use crate::schema::graph::{self, ProjectFiles};

/// A contract resolved together with its pack.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub contract: Arc<Contract>,
    pub contract_entry: Entry,
    pub pack: Arc<PromptPack>,
    pub pack_entry: Entry,
    pub warnings: Vec<Warning>,
}

/// A contract's compiled input and output validators.
pub struct Validators {
    pub input: Option<crate::schema::Validator>,
    pub output: Option<crate::schema::Validator>,
}

/// An open project.
pub struct Project {
    pub root: PathBuf,
    pub registry: Registry,
    pub config: Config,
    contracts: Mutex<HashMap<String, Arc<Contract>>>,
    packs: Mutex<HashMap<String, Arc<PromptPack>>>,
    validators: Mutex<HashMap<String, Arc<Validators>>>,
    /// Packs compiled for rendering, by the pack's SHA-256 (SPEC §28: once per process).
    compiled: Mutex<HashMap<String, Arc<crate::render::CompiledPack>>>,
}

impl std::fmt::Debug for Project {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Project").field("root", &self.root).finish_non_exhaustive()
    }
}

impl Project {
    /// Opens the project whose registry.json is at `registry_path`.
    pub fn open(registry_path: &Path) -> Result<Project> {
        let registry = Registry::open(registry_path)?;
        let root = registry.root.clone();
        let config = Config::load(&root)?;
        Ok(Project::new(registry, config))
    }

    /// Opens the project found by walking up from `start` to the nearest registry.json.
    pub fn discover(start: &Path) -> Result<Project> {
        let path = registry::find_upwards(start).ok_or_else(|| Error::Io {
            path: start.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no registry.json here or in any parent folder; pass --root DIR or create one with `pactum new contract`",
            ),
        })?;
        Project::open(&path)
    }

    /// A project over an already-loaded registry and config.
    pub fn new(registry: Registry, config: Config) -> Project {
        Project {
            root: registry.root.clone(),
            registry,
            config,
            contracts: Mutex::default(),
            packs: Mutex::default(),
            validators: Mutex::default(),
            compiled: Mutex::default(),
        }
    }

    /// The pack compiled for rendering, once per file hash however many work orders,
    /// exchanges and clients render it.
    pub fn compiled_pack(&self, pack: &PromptPack) -> Result<Arc<crate::render::CompiledPack>> {
        if let Some(p) = lock(&self.compiled).get(&pack.sha256) {
            return Ok(p.clone());
        }
        let compiled = Arc::new(crate::render::CompiledPack::compile(pack)?);
        lock(&self.compiled).insert(pack.sha256.clone(), compiled.clone());
        Ok(compiled)
    }

    /// Seeds this project's caches with what `other` already loaded and compiled (keyed by
    /// file hash, so only unchanged files are reused).
    pub fn reuse_cache_of(&self, other: &Project) {
        lock(&self.contracts)
            .extend(lock(&other.contracts).iter().map(|(k, v)| (k.clone(), v.clone())));
        lock(&self.packs).extend(lock(&other.packs).iter().map(|(k, v)| (k.clone(), v.clone())));
        lock(&self.validators)
            .extend(lock(&other.validators).iter().map(|(k, v)| (k.clone(), v.clone())));
        lock(&self.compiled)
            .extend(lock(&other.compiled).iter().map(|(k, v)| (k.clone(), v.clone())));
    }

    fn load_checked(&self, entry: &Entry) -> Result<document::Document> {
        let path = self.registry.file_of(entry)?;
        let doc = document::load(&path, Some(entry.kind.doc_kind()))?;
        if doc.sha256 != entry.sha256 && entry.state != State::Draft {
            return Err(Error::HashMismatch {
                path: PathBuf::from(&entry.path),
                id: entry.id.clone(),
                version: entry.version.to_string(),
                expected: entry.sha256.clone(),
                actual: doc.sha256,
            });
        }
        Ok(doc)
    }

    fn id_mismatch(entry: &Entry, id: &str, version: &semver::Version) -> Option<Error> {
        (id != entry.id || version != &entry.version).then(|| Error::IdMismatch {
            path: PathBuf::from(&entry.path),
            expected: entry.key(),
            found: format!("{id}@{version}"),
        })
    }

    /// Loads (or returns the cached) contract of a registry entry, with every check. The
    /// files its schemas referenced when it was promoted are checked every time (they are
    /// read, not cached): a changed one is `contract_hash_mismatch` naming that file.
    pub fn load_contract(&self, entry: &Entry) -> Result<Arc<Contract>> {
        if let Some((_, e)) = self.registry.changed_refs(entry).into_iter().next() {
            return Err(e);
        }
        // A draft's file may have changed since it was registered: read it every time.
        if entry.state != State::Draft
            && let Some(c) = lock(&self.contracts).get(&entry.sha256)
            && c.id == entry.id
            && c.version == entry.version
        {
            return Ok(c.clone());
        }
        let doc = self.load_checked(entry)?;
        let contract = Contract::from_document(&doc)?;
        if let Some(e) = Project::id_mismatch(entry, &contract.id, &contract.version) {
            return Err(e);
        }
        let contract = Arc::new(contract);
        lock(&self.contracts).insert(contract.sha256.clone(), contract.clone());
        Ok(contract)
    }

    /// Loads (or returns the cached) pack of a registry entry, with every check.
    pub fn load_pack(&self, entry: &Entry) -> Result<Arc<PromptPack>> {
        if entry.state != State::Draft
            && let Some(p) = lock(&self.packs).get(&entry.sha256)
            && p.id == entry.id
            && p.version == entry.version
        {
            return Ok(p.clone());
        }
        let doc = self.load_checked(entry)?;
        let pack = PromptPack::from_document(&doc)?;
        if let Some(e) = Project::id_mismatch(entry, &pack.id, &pack.version) {
            return Err(e);
        }
        let pack = Arc::new(pack);
        lock(&self.packs).insert(doc.sha256.clone(), pack.clone());
        Ok(pack)
    }

    /// Resolves a contract pin and the pack it binds to. A draft contract may bind a draft
    /// pack; an active one needs an active (or deprecated) pack unless drafts are allowed.
    pub fn resolve(&self, pin: &Pin, options: ResolveOptions) -> Result<Resolved> {
        if pin.kind() != DocKind::Contract {
            return Err(Error::PinInvalid {
                pin: pin.to_string(),
                reason: "expected a contract id (PRC-...); packs resolve through their contract"
                    .into(),
            });
        }
        let resolution =
            resolve(&self.registry, EntryKind::Contract, &pin.id, &pin.requirement, options)?;
        let contract_entry = resolution.entry.clone();
        let label = match &pin.requirement {
            crate::id::Requirement::Label(name) => Some(name.as_str()),
            _ => None,
        };
        self.registry.accounts_for(&contract_entry, label)?;
        let mut warnings = resolution.warnings;
        let contract = self.load_contract(&contract_entry)?;
        let pack_options = ResolveOptions {
            allow_draft: options.allow_draft || contract_entry.state == State::Draft,
        };
        let pack_resolution = resolve(
            &self.registry,
            EntryKind::PromptPack,
            &contract.prompt_pack_id,
            &contract.prompt_pack_version,
            pack_options,
        )?;
        warnings.extend(pack_resolution.warnings);
        let pack_entry = pack_resolution.entry.clone();
        let pack_label = match &contract.prompt_pack_version {
            crate::id::Requirement::Label(name) => Some(name.as_str()),
            _ => None,
        };
        self.registry.accounts_for(&pack_entry, pack_label)?;
        let pack = self.load_pack(&pack_entry)?;
        Ok(Resolved { contract, contract_entry, pack, pack_entry, warnings })
    }

    /// The contract's compiled validators, compiled once per file hash. Each schema's
    /// resolved graph is built and measured first (`schema_limit_exceeded`,
    /// `schema_too_costly`, before anything compiles it); when the contract is an active
    /// entry that recorded the files its schemas reference, the files the graph read must
    /// be exactly those, byte for byte (`contract_hash_mismatch`); the compiler then sees
    /// only the documents the graph read.
    pub fn validators(&self, contract: &Contract) -> Result<Arc<Validators>> {
        if let Some(v) = lock(&self.validators).get(&contract.sha256) {
            return Ok(v.clone());
        }
        let files = ProjectFiles::new(&self.root);
        let base = graph::folder_uri(contract.dir());
        let origin = graph::Origin::new(&base, &files);
        let frozen = self
            .registry
            .get(EntryKind::Contract, &contract.id, &contract.version)
            .filter(|e| e.state != State::Draft && e.sha256 == contract.sha256);
        let compile = |schema: &Option<serde_json::Value>,
                       pointer: &str|
         -> Result<Option<crate::schema::Validator>> {
            let Some(s) = schema else { return Ok(None) };
            let graph = graph::Graph::build(s, &origin);
            if let Some(refusal) = crate::schema::cost::check_graph(&graph, s, pointer) {
                return Err(refusal.into_error(&contract.path));
            }
            if let Some(entry) = frozen
                && let Some(refs) = &entry.refs
            {
                for (rel, sha256) in graph.files() {
                    if refs.get(&rel) != Some(&sha256) {
                        return Err(Error::ReferenceChanged {
                            path: PathBuf::from(&rel),
                            id: entry.id.clone(),
                            version: entry.version.to_string(),
                            expected: refs
                                .get(&rel)
                                .cloned()
                                .unwrap_or_else(|| "(none: it was not referenced)".into()),
                            actual: Some(sha256),
                        });
                    }
                }
            }
            crate::schema::compile_graph(&graph, s).map(Some).map_err(|findings| {
                Error::SchemaInvalid {
                    doc: DocKind::Contract,
                    path: contract.path.clone(),
                    findings: findings
                        .into_iter()
                        .map(|f| {
                            crate::error::Finding::new(format!("{pointer}{}", f.pointer), f.message)
                        })
                        .collect(),
                }
            })
        };
        let validators = Arc::new(Validators {
            input: compile(&contract.input_schema, "/input_schema")?,
            output: compile(&contract.output_schema, "/output_schema")?,
        });
        lock(&self.validators).insert(contract.sha256.clone(), validators.clone());
        Ok(validators)
    }

    /// Every registered contract id.
    pub fn contract_ids(&self) -> Vec<&str> {
        self.registry.ids(EntryKind::Contract)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    fn shipped() -> Project {
        Project::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("registry.json")).unwrap()
    }

    fn pin(text: &str) -> Pin {
        Pin::parse(text).unwrap()
    }

    #[test]
    fn documents_and_validators_are_loaded_and_compiled_once_per_file_hash() {
        let project = shipped();
        let first = project.resolve(&pin("PRC-CLASSIFY-001"), ResolveOptions::default()).unwrap();
        let again =
            project.resolve(&pin("PRC-CLASSIFY-001@^1"), ResolveOptions::default()).unwrap();
        assert!(Arc::ptr_eq(&first.contract, &again.contract), "the contract is cached");
        assert!(Arc::ptr_eq(&first.pack, &again.pack), "the pack is cached");

        let v1 = project.validators(&first.contract).unwrap();
        let v2 = project.validators(&again.contract).unwrap();
        assert!(Arc::ptr_eq(&v1, &v2), "validators are compiled once");
        assert!(v1.input.is_some() && v1.output.is_some());

        let other = project.resolve(&pin("PRC-SYNTH-001"), ResolveOptions::default()).unwrap();
        let v3 = project.validators(&other.contract).unwrap();
        assert!(!Arc::ptr_eq(&v1, &v3), "another contract has its own validators");
        assert_eq!(lock(&project.validators).len(), 2);
    }
}
