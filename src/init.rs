//! `pactum init [DIR] [--kernel]` (SPEC §17): a project a team can adopt in its own
//! repository. It creates `registry.json`, `contracts/`, `prompt_packs/`, `work_orders/`,
//! `schemas/` (the embedded schemas, so `$schema` resolves offline in any editor),
//! `.gitignore` and `.gitattributes`, and inside a git work tree registers the registry
//! merge driver in that repository's config. With `--kernel` it also copies the kernel
//! role contracts and packs (SPEC §8.2) and registers them active, so kernel work orders
//! run in the new project.
//!
//! It never replaces a file: what exists is kept (and reported), lines missing from
//! `.gitignore`/`.gitattributes` are appended, and running it twice is harmless. Every
//! write goes through the confinement rule (SPEC §18): nothing is written through a
//! symlink or outside the folder.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::confine::Root;
use crate::error::{Error, Result};
use crate::registry::lifecycle::{self, Stamp};
use crate::registry::{self, Registry, State, store};

/// The kernel role contracts and packs as shipped, by path relative to a project root: each
/// role's 1.0.0 contract and pack, and (all roles but synthesis) the 1.1.0 contract and 2.0.0
/// pack that take the run limits; then the judge (`PRC-JUDGE-001`) that eval suites' `judge`
/// assertions and semantic checks call. `init` registers packs first, lower versions first.
pub const KERNEL_FILES: &[(&str, &str)] = &[
    ("contracts/converge/1.0.0.json", include_str!("../contracts/converge/1.0.0.json")),
    ("prompt_packs/converge/1.0.0.json", include_str!("../prompt_packs/converge/1.0.0.json")),
    ("contracts/converge/1.1.0.json", include_str!("../contracts/converge/1.1.0.json")),
    ("prompt_packs/converge/2.0.0.json", include_str!("../prompt_packs/converge/2.0.0.json")),
    ("contracts/missingtool/1.0.0.json", include_str!("../contracts/missingtool/1.0.0.json")),
    ("prompt_packs/missingtool/1.0.0.json", include_str!("../prompt_packs/missingtool/1.0.0.json")),
    ("contracts/missingtool/1.1.0.json", include_str!("../contracts/missingtool/1.1.0.json")),
    ("prompt_packs/missingtool/2.0.0.json", include_str!("../prompt_packs/missingtool/2.0.0.json")),
    ("contracts/plan/1.0.0.json", include_str!("../contracts/plan/1.0.0.json")),
    ("prompt_packs/plan/1.0.0.json", include_str!("../prompt_packs/plan/1.0.0.json")),
    ("contracts/plan/1.1.0.json", include_str!("../contracts/plan/1.1.0.json")),
    ("prompt_packs/plan/2.0.0.json", include_str!("../prompt_packs/plan/2.0.0.json")),
    ("contracts/profile/1.0.0.json", include_str!("../contracts/profile/1.0.0.json")),
    ("prompt_packs/profile/1.0.0.json", include_str!("../prompt_packs/profile/1.0.0.json")),
    ("contracts/profile/1.1.0.json", include_str!("../contracts/profile/1.1.0.json")),
    ("prompt_packs/profile/2.0.0.json", include_str!("../prompt_packs/profile/2.0.0.json")),
    ("contracts/profileupdate/1.0.0.json", include_str!("../contracts/profileupdate/1.0.0.json")),
    (
        "prompt_packs/profileupdate/1.0.0.json",
        include_str!("../prompt_packs/profileupdate/1.0.0.json"),
    ),
    ("contracts/profileupdate/1.1.0.json", include_str!("../contracts/profileupdate/1.1.0.json")),
    (
        "prompt_packs/profileupdate/2.0.0.json",
        include_str!("../prompt_packs/profileupdate/2.0.0.json"),
    ),
    ("contracts/reason/1.0.0.json", include_str!("../contracts/reason/1.0.0.json")),
    ("prompt_packs/reason/1.0.0.json", include_str!("../prompt_packs/reason/1.0.0.json")),
    ("contracts/reason/1.1.0.json", include_str!("../contracts/reason/1.1.0.json")),
    ("prompt_packs/reason/2.0.0.json", include_str!("../prompt_packs/reason/2.0.0.json")),
    ("contracts/refine/1.0.0.json", include_str!("../contracts/refine/1.0.0.json")),
    ("prompt_packs/refine/1.0.0.json", include_str!("../prompt_packs/refine/1.0.0.json")),
    ("contracts/refine/1.1.0.json", include_str!("../contracts/refine/1.1.0.json")),
    ("prompt_packs/refine/2.0.0.json", include_str!("../prompt_packs/refine/2.0.0.json")),
    ("contracts/repairjson/1.0.0.json", include_str!("../contracts/repairjson/1.0.0.json")),
    ("prompt_packs/repairjson/1.0.0.json", include_str!("../prompt_packs/repairjson/1.0.0.json")),
    ("contracts/repairjson/1.1.0.json", include_str!("../contracts/repairjson/1.1.0.json")),
    ("prompt_packs/repairjson/2.0.0.json", include_str!("../prompt_packs/repairjson/2.0.0.json")),
    ("contracts/repairplan/1.0.0.json", include_str!("../contracts/repairplan/1.0.0.json")),
    ("prompt_packs/repairplan/1.0.0.json", include_str!("../prompt_packs/repairplan/1.0.0.json")),
    ("contracts/repairplan/1.1.0.json", include_str!("../contracts/repairplan/1.1.0.json")),
    ("prompt_packs/repairplan/2.0.0.json", include_str!("../prompt_packs/repairplan/2.0.0.json")),
    ("contracts/repairtool/1.0.0.json", include_str!("../contracts/repairtool/1.0.0.json")),
    ("prompt_packs/repairtool/1.0.0.json", include_str!("../prompt_packs/repairtool/1.0.0.json")),
    ("contracts/repairtool/1.1.0.json", include_str!("../contracts/repairtool/1.1.0.json")),
    ("prompt_packs/repairtool/2.0.0.json", include_str!("../prompt_packs/repairtool/2.0.0.json")),
    ("contracts/semantic/1.0.0.json", include_str!("../contracts/semantic/1.0.0.json")),
    ("prompt_packs/semantic/1.0.0.json", include_str!("../prompt_packs/semantic/1.0.0.json")),
    ("contracts/semantic/1.1.0.json", include_str!("../contracts/semantic/1.1.0.json")),
    ("prompt_packs/semantic/2.0.0.json", include_str!("../prompt_packs/semantic/2.0.0.json")),
    ("contracts/subplan/1.0.0.json", include_str!("../contracts/subplan/1.0.0.json")),
    ("prompt_packs/subplan/1.0.0.json", include_str!("../prompt_packs/subplan/1.0.0.json")),
    ("contracts/subplan/1.1.0.json", include_str!("../contracts/subplan/1.1.0.json")),
    ("prompt_packs/subplan/2.0.0.json", include_str!("../prompt_packs/subplan/2.0.0.json")),
    ("contracts/synth/1.0.0.json", include_str!("../contracts/synth/1.0.0.json")),
    ("prompt_packs/synth/1.0.0.json", include_str!("../prompt_packs/synth/1.0.0.json")),
    ("contracts/judge/1.0.0.json", include_str!("../contracts/judge/1.0.0.json")),
    ("prompt_packs/judge/1.0.0.json", include_str!("../prompt_packs/judge/1.0.0.json")),
];

/// Lines `init` makes sure `.gitignore` has: the lock, the run state, and the folders work
/// orders write their results to (`out/` beside each work order, by default).
pub const GITIGNORE_LINES: &[&str] = &[".*.lock", ".pactum/", "work_orders/**/out/"];

/// What `init` did to one path.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Step {
    Created {
        path: String,
    },
    /// Already there; left as it was (`note` says what differs, if anything).
    Kept {
        path: String,
        note: String,
    },
    /// Lines appended to an existing file.
    Appended {
        path: String,
        lines: Vec<String>,
    },
    /// An entry registered (and promoted).
    Registered {
        entry: String,
        state: String,
    },
    /// The merge driver registered in the repository's git config.
    MergeDriver {
        repository: String,
        registered: bool,
    },
}

/// The outcome of `init`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Initialized {
    pub root: PathBuf,
    pub steps: Vec<Step>,
    /// The git work tree the project is in, if any.
    pub git: Option<PathBuf>,
}

/// Initializes the project at `dir` (created when missing). See the module docs.
pub fn init(dir: &Path, kernel: bool, stamp: &Stamp) -> Result<Initialized> {
    if crate::confine::entry_at(dir).is_some() && !crate::confine::is_dir(dir) {
        return Err(Error::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "is a file; `pactum init DIR` makes a project in a folder (a new one, or an existing one)",
            ),
        });
    }
    crate::confine::create_folders(dir)?;
    let root = crate::confine::real_path(dir).map_err(|e| Error::io(dir, e))?;
    let confined = Root::canonical(&root);
    let mut steps = Vec::new();
    steps.push(init_registry(&root)?);
    for folder in ["contracts", "prompt_packs", "work_orders"] {
        let existed = confined.writable_folder(Path::new(folder), false).is_ok();
        confined.writable_folder(Path::new(folder), true)?;
        steps.push(if existed {
            Step::Kept { path: format!("{folder}/"), note: String::new() }
        } else {
            Step::Created { path: format!("{folder}/") }
        });
    }
    steps.extend(write_schemas(&root, "schemas", false)?);
    steps.push(ensure_lines(&confined, ".gitignore", GITIGNORE_LINES)?);
    let attribute = format!("{} merge={}", registry::FILE_NAME, crate::git::MERGE_DRIVER);
    steps.push(ensure_lines(&confined, ".gitattributes", &[attribute.as_str()])?);
    let git = crate::git::toplevel(&root);
    if let Some(top) = &git {
        let registered = crate::git::register_merge_driver(&root)?;
        steps.push(Step::MergeDriver { repository: top.display().to_string(), registered });
    }
    if kernel {
        steps.extend(install_kernel(&root, stamp)?);
    }
    Ok(Initialized { root, steps, git })
}

/// An empty registry.json with `$schema`, unless one exists (which must load, and is left
/// byte for byte as it is).
fn init_registry(root: &Path) -> Result<Step> {
    let path = root.join(registry::FILE_NAME);
    if crate::confine::entry_at(&path).is_some() {
        Registry::open(&path)?;
        return Ok(Step::Kept { path: registry::FILE_NAME.into(), note: String::new() });
    }
    let created = store::update(&path, |reg| {
        let fresh = reg.text.is_empty() && reg.entries.is_empty();
        if fresh {
            reg.extra.insert(
                "$schema".into(),
                serde_json::Value::String("schemas/registry.schema.json".into()),
            );
        }
        Ok(fresh)
    })?;
    Ok(if created {
        Step::Created { path: registry::FILE_NAME.into() }
    } else {
        Step::Kept { path: registry::FILE_NAME.into(), note: String::new() }
    })
}

/// Writes the embedded schemas into `root/folder` (`folder` may be empty), never through a
/// symlink. With `refresh`, a schema that differs from the embedded one is replaced
/// (atomically); without, it is kept and reported. Steps name files relative to `root`.
pub fn write_schemas(root: &Path, folder: &str, refresh: bool) -> Result<Vec<Step>> {
    let confined = Root::new(root);
    let mut steps = Vec::new();
    for (name, text) in crate::schema::EMBEDDED {
        let rel = Path::new(folder).join(name);
        let path = confined.writable(&rel, true)?;
        let path_name = rel.to_string_lossy().into_owned();
        match read_existing(&path)? {
            Some(existing) if existing == text.as_bytes() => {
                steps.push(Step::Kept { path: path_name, note: String::new() })
            }
            Some(_) if !refresh => steps.push(Step::Kept {
                path: path_name,
                note: "differs from this pactum's; refresh with `pactum schemas --write schemas`"
                    .into(),
            }),
            Some(_) => {
                store::write_atomic(&path, text.as_bytes())?;
                steps.push(Step::Appended { path: path_name, lines: vec!["(refreshed)".into()] });
            }
            None => {
                match create_new(&path, text.as_bytes()) {
                    Ok(()) => steps.push(Step::Created { path: path_name }),
                    // Another pactum (a concurrent `new contract`) wrote it meanwhile.
                    Err(Error::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::AlreadyExists =>
                    {
                        steps.push(Step::Kept { path: path_name, note: String::new() })
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(steps)
}

/// The bytes of the regular file at `path`, `None` when there is none.
fn read_existing(path: &Path) -> Result<Option<Vec<u8>>> {
    match crate::document::read_limited(path, crate::document::MAX_FILE_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Creates `path`, failing if it exists (never replaces a file).
pub(crate) fn create_new(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::confine::create_new(path, bytes)
}

/// Makes sure the root's file `name` has each of `lines`, creating it or appending what is
/// missing.
fn ensure_lines(root: &Root, name: &str, lines: &[&str]) -> Result<Step> {
    let path = &root.writable(Path::new(name), false)?;
    let existing = read_existing(path)?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let Some(text) = existing else {
        let mut body = lines.join("\n");
        body.push('\n');
        create_new(path, body.as_bytes())?;
        return Ok(Step::Created { path: name.into() });
    };
    let have: Vec<&str> = text.lines().map(str::trim).collect();
    let missing: Vec<String> =
        lines.iter().filter(|l| !have.contains(l)).map(|l| (*l).to_string()).collect();
    if missing.is_empty() {
        return Ok(Step::Kept { path: name.into(), note: String::new() });
    }
    let mut add = String::new();
    if !text.is_empty() && !text.ends_with('\n') {
        add.push('\n');
    }
    for l in &missing {
        add.push_str(l);
        add.push('\n');
    }
    let mut file = crate::confine::open_for_update(path, true)?;
    file.write_all(add.as_bytes()).map_err(|e| Error::io(path, e))?;
    Ok(Step::Appended { path: name.into(), lines: missing })
}

/// Copies the kernel role contracts and packs and registers them active (packs first).
/// A file that exists with other content is kept and not registered.
fn install_kernel(root: &Path, stamp: &Stamp) -> Result<Vec<Step>> {
    let confined = Root::canonical(root);
    let mut steps = Vec::new();
    let mut to_register = Vec::new();
    for (rel, text) in KERNEL_FILES {
        let path = confined.writable(Path::new(rel), true)?;
        match read_existing(&path)? {
            Some(existing) if existing == text.as_bytes() => {
                steps.push(Step::Kept { path: (*rel).into(), note: String::new() });
                to_register.push(path);
            }
            Some(_) => steps.push(Step::Kept {
                path: (*rel).into(),
                note: "differs from the shipped kernel contract; not registered".into(),
            }),
            None => {
                create_new(&path, text.as_bytes())?;
                steps.push(Step::Created { path: (*rel).into() });
                to_register.push(path);
            }
        }
    }
    // Packs before contracts: a contract is promoted only once its pack is active.
    to_register.sort_by_key(|p| !p.starts_with(root.join("prompt_packs")));
    let registry_path = root.join(registry::FILE_NAME);
    let registered = store::update(&registry_path, |reg: &mut Registry| {
        let mut done = Vec::new();
        for path in &to_register {
            let added = lifecycle::add(reg, path, stamp)?;
            let entry = added.entry().clone();
            if entry.state == State::Draft {
                let kind = entry.kind;
                let promoted = lifecycle::promote(reg, kind, &entry.id, &entry.version, stamp)?;
                done.push(Step::Registered { entry: promoted.entry.key(), state: "active".into() });
            }
        }
        Ok(done)
    })?;
    steps.extend(registered);
    Ok(steps)
}
