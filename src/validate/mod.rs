//! `pactum validate` (SPEC §5): every finding about a folder of contracts, packs and work
//! orders, never stopping at the first.
//!
//! The run has three stages:
//! 1. **discover** ([`discover`]): the files to check, found by walking PATH (or, at a
//!    project root, its `contracts/`, `prompt_packs/` and `work_orders/` plus every file
//!    the registry names), while registry.json loads on a thread of its own;
//! 2. **per file, in parallel** ([`file`]): each file is read once, hashed, parsed and
//!    checked against its schema (checks 1–3); the walked files start as soon as the
//!    walk ends, while the registry finishes loading and runs its own audit;
//! 3. **across files** (one module per rule family): the registry ([`registry`], checks 4
//!    and 7), pack bindings and template variables ([`binding`], checks 5 and 6),
//!    compatibility of consecutive versions ([`compat`], check 8), contract examples run
//!    offline ([`examples`], check 9), work-order pins ([`work_orders`], check 10), and
//!    eval suites with their datasets ([`evals`], SPEC §19).
//!
//! Finally every finding with a JSON pointer gets its `line:column` and source line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::config::Config;
use crate::diagnostic::{Diagnostic, Report};
use crate::error::{Error, Result};
use crate::registry::{self, Registry};
use crate::source::{self, Syntax};

pub mod binding;
pub mod compat;
pub mod context;
pub mod discover;
pub mod evals;
pub mod examples;
pub mod file;
pub mod filter;
pub mod generated;
pub mod paths;
pub mod registry_rules;
pub mod semantic;
pub mod subjects;
pub mod tools;
pub mod work_orders;

pub use file::{Analyzed, FileKind};
pub use subjects::Subjects;

/// How to validate.
#[derive(Clone, Debug)]
pub struct ValidateOptions {
    /// registry.json to use instead of walking up from PATH (`--registry`).
    pub registry: Option<PathBuf>,
    /// The current time (deprecation periods); injectable for tests.
    pub now: jiff::Timestamp,
    /// Worker threads for the per-file stage (0 = one per core).
    pub jobs: usize,
    /// Where report paths are named from when PATH is not in a git work tree (the binary
    /// passes the current folder). Report paths are relative to the repository, so that
    /// GitHub, SARIF and JUnit consumers find the files: the top level of the git work tree
    /// holding PATH, else this folder, else the registry's folder (see [`names_root`]).
    pub names_from: Option<PathBuf>,
    /// The registry to check the tree against instead of the file's (with `registry`):
    /// the registry as it would be after a change, so the gate of `registry promote` sees
    /// what `validate` will see once the version is active (SPEC §20).
    pub registry_override: Option<std::sync::Arc<Registry>>,
    /// Which codes are reported (`--select`, `--ignore`); pactum.toml's `[lint]` adds to it.
    pub filter: filter::CodeFilter,
    /// `--no-tools`: the tool servers of pactum.toml are not started to list their tools,
    /// and names only a server could offer are not reported (SPEC §23).
    pub no_tools: bool,
    /// The environment a stdio tool server is started with (the binary passes
    /// [`crate::config::tool_env`]).
    pub tool_env: Vec<(String, String)>,
    /// Whether the environment confirms committed settings (`PACTUM_TRUST_CONFIG=1`,
    /// `--trust-config`): without it, every pactum.toml setting that would act is a
    /// `config_unconfirmed` warning (SPEC §24).
    pub trust: crate::authority::Trust,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions {
            registry: None,
            now: jiff::Timestamp::now(),
            jobs: 0,
            names_from: None,
            registry_override: None,
            filter: filter::CodeFilter::default(),
            no_tools: false,
            tool_env: Vec::new(),
            trust: crate::authority::Trust::none(),
        }
    }
}

/// Progress of the per-file stage; the binary draws it, the library only reports it.
pub trait Progress: Sync {
    fn start(&self, total: usize);
    fn advance(&self);
    fn finish(&self);
}

/// Progress that goes nowhere.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: usize) {}
    fn advance(&self) {}
    fn finish(&self) {}
}

/// Everything the cross-file rules look at.
pub struct Context {
    /// Folder that file names are relative to (the registry's folder when there is one).
    pub base: PathBuf,
    /// The paths being validated (canonical): files or folders.
    pub paths: Vec<PathBuf>,
    /// The files the run reports on ([`subjects`]): every file, or the named ones with the
    /// rest of the project as context.
    pub subjects: Subjects,
    pub registry: Option<Registry>,
    /// registry.json's name relative to `base`.
    pub registry_name: String,
    pub config: Config,
    pub files: Vec<Analyzed>,
    /// Canonical path → index into `files`.
    by_path: PathIndex,
    pub now: jiff::Timestamp,
    /// Threads a rule may use (at least 1): `--jobs`, else one per core.
    pub jobs: usize,
    /// In a run on named files, the files of registry entries that are not among `files`,
    /// by entry index: analyzed when a rule first needs one ([`Context::entry_file`]).
    lazy: Vec<OnceLock<Box<Analyzed>>>,
}

/// Canonical paths → indexes, keyed by the path's bytes with a fast hasher: every key and
/// every lookup is a canonical path (no `.`, `..`, `//` or trailing `/`), for which equal
/// bytes and equal paths are the same thing, and hashing the bytes skips the
/// component-by-component hashing of `Path` (measurable at 20,000 files).
type PathIndex = HashMap<std::ffi::OsString, usize, foldhash::fast::RandomState>;

impl Context {
    /// The index in `files` of the file at a canonical path.
    pub fn index_of(&self, path: &Path) -> Option<usize> {
        self.by_path.get(path.as_os_str()).copied()
    }

    /// The analyzed file at a canonical path.
    pub fn file_at(&self, path: &Path) -> Option<&Analyzed> {
        self.index_of(path).map(|i| &self.files[i])
    }

    /// The analyzed file of a registry entry: one of `files`, or, in a run on named files,
    /// the entry's file analyzed now (once) as context. The one way a rule reaches a file
    /// it needs besides the one it checks, so a file named alone is checked against the
    /// same files as in the whole project's run (SPEC §24). `None` when the entry's file
    /// cannot be resolved (reported by the registry's own checks).
    pub fn entry_file(&self, entry: &registry::Entry) -> Option<&Analyzed> {
        let registry = self.registry.as_ref()?;
        let path = registry.file_of(entry).ok()?;
        if let Some(f) = self.file_at(&path) {
            return Some(f);
        }
        let slot = self.lazy.get(registry.index_of(entry)?)?;
        let analyzed = slot.get_or_init(|| {
            let candidate = discover::Candidate {
                dir_kind: discover::kind_from_folder(registry.real_root(), &path),
                path: path.clone(),
                escape: None,
                canonical: true,
                unreadable: None,
                regular: false,
            };
            Box::new(file::analyze(&candidate, &self.base))
        });
        Some(analyzed)
    }

    /// Every analyzed file: `files`, then the entry files analyzed on demand so far.
    pub fn analyzed(&self) -> impl Iterator<Item = &Analyzed> {
        self.files.iter().chain(self.lazy.iter().filter_map(|slot| slot.get().map(|b| &**b)))
    }

    /// Whether findings about the file named `rel` are reported.
    pub fn is_subject(&self, rel: &str) -> bool {
        self.subjects.contains(rel)
    }
}

/// Validates PATH (a project root, a folder, or one file). `Err` only when PATH itself
/// cannot be read; every problem inside is a finding in the report.
pub fn validate(path: &Path, options: &ValidateOptions, progress: &dyn Progress) -> Result<Report> {
    validate_many(std::slice::from_ref(&path.to_path_buf()), options, progress)
}

/// Validates PATHS, files or folders of one project (the first one's, or `--registry`'s).
/// At the project's root, or when a path is registry.json itself, the whole project is
/// checked; otherwise the named paths are the run's [`subjects`] and the rest of the
/// project is their context. Without a project, the first path's documents are checked on
/// their own.
pub fn validate_many(
    paths: &[PathBuf],
    options: &ValidateOptions,
    progress: &dyn Progress,
) -> Result<Report> {
    let Some(first) = paths.first() else {
        return Err(Error::Internal { message: "validate was given no path".into() });
    };
    let meta = crate::confine::metadata(first)?;
    let mut named = Vec::with_capacity(paths.len());
    for p in paths {
        named.push(crate::confine::real_path(p).map_err(|e| Error::io(p, e))?);
    }
    let path = named[0].clone();
    let mut subjects = Subjects::all();
    let mut report = Report::default();
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    // Findings about registry.json or pactum.toml when they cannot be read: whatever the
    // subjects, the run says why its context is missing (never a quiet pass).
    let mut broken_context: Vec<Diagnostic> = Vec::new();

    let registry_path = match &options.registry {
        Some(p) => Some(crate::confine::real_path(p).map_err(|e| Error::io(p, e))?),
        None => registry::find_upwards(&path),
    };
    let mut registry_text = None;
    let (registry, base, files, audit, registry_read) = match &registry_path {
        Some(rp) => {
            let base = rp.parent().map(Path::to_path_buf).unwrap_or_else(|| path.clone());
            let whole = named.iter().any(|p| p == &base || p == rp);
            let checked = if whole {
                check_project(
                    &base,
                    rp,
                    &base,
                    options.jobs,
                    progress,
                    options.registry_override.as_deref(),
                )
            } else {
                subjects = Subjects::named(named.iter().map(|p| relative_name(&base, p)).collect());
                check_subjects(
                    &named,
                    rp,
                    &base,
                    options.jobs,
                    progress,
                    options.registry_override.as_deref(),
                )
            };
            let checked = match checked {
                Ok(checked) => checked,
                Err(e) => {
                    progress.finish();
                    return Err(e);
                }
            };
            let registry = match checked.registry {
                Ok(r) => Some(r),
                Err(e) => {
                    // Keep the text so the findings can show their lines.
                    // Only a confined, regular registry.json (never a FIFO or a link
                    // leading out, whose lines would be shown).
                    registry_text = registry::confined(rp)
                        .and_then(|()| {
                            crate::document::read_limited(rp, crate::document::MAX_REGISTRY_BYTES)
                        })
                        .ok()
                        .and_then(|b| String::from_utf8(b).ok());
                    broken_context.extend(registry_load_diagnostics(&e, rp, &base));
                    None
                }
            };
            let read = registry.is_some() || registry_text.is_some();
            if !read {
                // The bar counted registry.json, which could not even be read.
                progress.start(checked.files.len());
            }
            (registry, base, checked.files, checked.audit, read)
        }
        None => {
            report.notes.push(format!(
                "no {} found in {} or any parent folder: registry checks skipped",
                registry::FILE_NAME,
                path.display()
            ));
            let dir = if meta.is_dir() {
                path.clone()
            } else {
                path.parent().unwrap_or(&path).to_path_buf()
            };
            // Name files relative to `names_from` (the binary passes the current folder)
            // when PATH is inside it, so paths match the repository (GitHub, SARIF).
            let names_from =
                options.names_from.as_ref().and_then(|c| crate::confine::real_path(c).ok());
            let base = match names_from {
                Some(from) if dir.starts_with(&from) => from,
                _ => dir,
            };
            let candidates = discover::files(&path, &base, None);
            progress.start(candidates.len());
            let analyzed = analyze_all(&candidates, &base, options.jobs, progress, "", || ());
            let (files, ()) = analyzed.inspect_err(|_| progress.finish())?;
            (None, base, files, Vec::new(), false)
        }
    };
    progress.finish();
    let registry_name = registry_path
        .as_deref()
        .map(|p| relative_name(&base, p))
        .unwrap_or_else(|| registry::FILE_NAME.to_string());
    let config = match Config::load(&base) {
        Ok(c) => c,
        Err(e) => {
            broken_context.extend(config_diagnostics(&e));
            Config::default()
        }
    };
    if !options.trust.is_confirmed() {
        diagnostics.extend(config.acting.iter().map(unconfirmed));
    }
    let mut by_path = PathIndex::with_capacity_and_hasher(files.len(), Default::default());
    for (i, f) in files.iter().enumerate() {
        by_path.insert(f.abs.clone().into_os_string(), i);
    }
    let jobs = threads(options.jobs);
    let lazy = match &registry {
        Some(r) if !subjects.is_all() => (0..r.entries.len()).map(|_| OnceLock::new()).collect(),
        _ => Vec::new(),
    };
    let ctx = Context {
        base,
        paths: named,
        subjects,
        registry,
        registry_name,
        config,
        files,
        by_path,
        now: options.now,
        jobs,
        lazy,
    };

    for f in ctx.files.iter().filter(|f| ctx.is_subject(&f.rel)) {
        report.files.push(f.rel.clone());
        diagnostics.extend(f.diagnostics.iter().cloned());
    }
    if registry_read && ctx.subjects.is_all() {
        report.files.push(ctx.registry_name.clone());
    }
    // The registry's rules read no other rule's result: they run beside the others.
    let (registry_findings, other_findings) = std::thread::scope(|scope| {
        let registry_rules = scope.spawn(|| {
            let mut out = Vec::new();
            registry_rules::check(&ctx, audit, &mut out);
            out
        });
        let mut out = Vec::new();
        let bound_packs = binding::check(&ctx, &mut out);
        compat::check(&ctx, &mut out);
        examples::check(&ctx, &bound_packs, &mut out);
        work_orders::check(&ctx, &mut report.notes, &mut out);
        tools::check(&ctx, options, &mut out);
        context::check(&ctx, &mut out);
        evals::check(&ctx, &mut report.files, &mut out);
        semantic::check(&ctx, &mut out);
        generated::check(&ctx, &mut out);
        let registry_rules =
            registry_rules.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (registry_rules, out)
    });
    diagnostics.extend(registry_findings);
    diagnostics.extend(other_findings);
    frozen(&ctx, &mut diagnostics);
    // What the run reports: the command line's and [lint]'s codes, each file's own
    // `x-pactum-ignore`.
    match filter::with_config(&options.filter, &ctx.config.lint) {
        Ok(codes) => {
            let suppressions = ctx
                .analyzed()
                .filter_map(|f| {
                    let codes = f.suppress.clone()?;
                    Some((f.rel.clone(), filter::Suppression { codes }))
                })
                .collect();
            filter::apply(&mut diagnostics, &codes, &suppressions);
        }
        Err(e) => diagnostics.push(
            Diagnostic::new(crate::Code::ConfigInvalid, e.to_string())
                .file(crate::config::FILE_NAME)
                .help("fix the code names in [lint] (`pactum explain --list` lists them)"),
        ),
    }

    // A run on named files reports the findings about them, whichever file each is on.
    diagnostics.retain(|d| ctx.subjects.reports(d));
    diagnostics.extend(broken_context);
    place(&ctx, registry_text.as_deref(), &mut diagnostics);
    report.diagnostics = diagnostics;
    let root = names_root(&path, options.names_from.as_deref(), &ctx.base);
    rename(&mut report, &ctx.base, &root);
    // Freeing every analyzed file and the registry costs more than anything after this
    // point: it happens on a thread of its own (inline if none can be started).
    let _ = std::thread::Builder::new().name("validate-drop".into()).spawn(move || drop(ctx));
    report.sort();
    Ok(report)
}

/// Findings on what cannot change (SPEC §20). A finding about a file's content (not the
/// registry's integrity: hashes, ids, paths, history) in a removed version is not reported
/// — nothing can or need be done about it. In an active or deprecated version, such a
/// finding's fix is an edit of a frozen file: its help names the fix that is possible, a
/// new version. A warning in a frozen file the project has superseded (deprecated or
/// removed, or active below a higher active version) is a note, so `--strict` does not
/// fail forever on what no one may edit.
fn frozen(ctx: &Context, diagnostics: &mut Vec<Diagnostic>) {
    use crate::registry::State;
    let Some(registry) = &ctx.registry else { return };
    use crate::error::Code;
    let integrity = |code: Code| {
        code.as_str().starts_with("registry_")
            || matches!(
                code,
                Code::ContractHashMismatch
                    | Code::ContractIdMismatch
                    | Code::PathEscape
                    | Code::ContractUnregistered
                    | Code::IoError
            )
    };
    let mut by_file: HashMap<String, &crate::registry::Entry> = HashMap::new();
    for e in &registry.entries {
        if e.state != State::Draft {
            by_file.insert(relative_name(&ctx.base, &ctx.base.join(&e.path)), e);
        }
    }
    if by_file.is_empty() {
        return;
    }
    let superseded = |e: &crate::registry::Entry| {
        e.state != State::Active
            || registry
                .versions(e.kind, &e.id)
                .any(|other| other.state == State::Active && other.version > e.version)
    };
    diagnostics.retain_mut(|d| {
        let Some(entry) = d.file.as_ref().and_then(|f| by_file.get(f)) else { return true };
        if integrity(d.code) {
            return true;
        }
        if entry.state == State::Removed {
            return false;
        }
        let next = registry.next_version(entry.kind, &entry.id);
        let fix = format!(
            "{} is {} and its file never changes: make the fix in a new version (`pactum new version {}@{next}`)",
            entry.key(),
            entry.state.as_str(),
            entry.id
        );
        d.help = Some(match d.help.take() {
            Some(h) => format!("{h}; {fix}"),
            None => fix,
        });
        if d.code == Code::ScaffoldPlaceholder && entry.state == State::Active {
            // Frozen with text its author was to replace, and resolvable: an exact pin (a
            // contract's pack, a work order) still reaches an active version a higher one
            // superseded, so every active version says it.
            d.severity = crate::error::Severity::Error;
        } else if d.severity == crate::error::Severity::Warning && superseded(entry) {
            d.severity = crate::error::Severity::Note;
        }
        true
    });
}

/// The folder report paths are relative to: the top level of the git work tree that holds
/// PATH (the nearest folder above it with a `.git` folder or file), else `names_from`,
/// else `base` (the registry's folder).
pub fn names_root(path: &Path, names_from: Option<&Path>, base: &Path) -> PathBuf {
    let start = if crate::confine::is_dir(path) { path } else { path.parent().unwrap_or(path) };
    if let Some(top) =
        start.ancestors().find(|dir| crate::confine::target_of(&dir.join(".git")).is_some())
    {
        return top.to_path_buf();
    }
    names_from
        .and_then(|from| crate::confine::real_path(from).ok())
        .unwrap_or_else(|| base.to_path_buf())
}

/// Renames every file in `report` from relative-to-`base` to relative-to-`root` (absolute
/// when outside `root`), and every path its messages and hints name (SPEC §21: one path
/// base for the report, its messages and its hints).
fn rename(report: &mut Report, base: &Path, root: &Path) {
    if base == root {
        return;
    }
    // Names below `base` get base's own name in front; others (absolute) are named again.
    let prefix = base.starts_with(root).then(|| relative_name(root, base));
    let renamed = |name: &str| match &prefix {
        Some(prefix) if !name.starts_with('/') => match (prefix.is_empty(), name.is_empty()) {
            (true, _) => name.to_string(),
            (false, true) => prefix.clone(),
            (false, false) => format!("{prefix}/{name}"),
        },
        _ => relative_name(root, &base.join(name)),
    };
    for file in &mut report.files {
        *file = renamed(file);
    }
    let mut paths = ProjectPaths { base, known: HashMap::new() };
    for d in &mut report.diagnostics {
        // Messages and hints name files as the report does, so a suggested `git checkout --
        // FILE` runs from where the report's paths start.
        d.message = paths.rename_in(&d.message, &renamed);
        d.help = d.help.as_deref().map(|help| paths.rename_in(help, &renamed));
        for file in d.file.iter_mut().chain(d.about.iter_mut()) {
            *file = renamed(file);
        }
    }
}

/// Which words of a message are paths into the project: a run of path characters, not
/// absolute, without `..`, whose first component exists in `base` (a file or folder of the
/// project: `contracts/a.json`, `schemas/prompt_contract.schema.json`, `registry.json`;
/// not `1.0.0/sections/task` or `e.g.`). Each first component is looked up once.
struct ProjectPaths<'a> {
    base: &'a Path,
    known: HashMap<String, bool>,
}

impl ProjectPaths<'_> {
    fn names_project_file(&mut self, word: &str) -> bool {
        if word.starts_with('/') || word.split('/').any(|c| c == "..") {
            return false;
        }
        let first = word.split('/').next().unwrap_or(word);
        // A bare word is a path only when it names a file (`registry.json`), not a word.
        if first.is_empty() || (!word.contains('/') && !first.contains('.')) {
            return false;
        }
        let base = self.base;
        *self
            .known
            .entry(first.to_string())
            .or_insert_with(|| crate::confine::target_of(&base.join(first)).is_some())
    }

    /// `text` with every project path renamed by `renamed`; one pass.
    fn rename_in(&mut self, text: &str, renamed: &impl Fn(&str) -> String) -> String {
        rename_words(text, |word| self.names_project_file(word).then(|| renamed(word)))
    }
}

/// `text` with every path-like word (a run of letters, digits and `/_-.`, less a full stop
/// that ends a sentence) that `rename` renames replaced; one pass.
fn rename_words(text: &str, mut rename: impl FnMut(&str) -> Option<String>) -> String {
    let part = |c: char| c.is_alphanumeric() || matches!(c, '/' | '_' | '-' | '.');
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if !part(c) {
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(at, c)) = chars.peek() {
            if !part(c) {
                break;
            }
            end = at + c.len_utf8();
            chars.next();
        }
        let word = text[start..end].trim_end_matches('.');
        if let Some(new) = rename(word) {
            out.push_str(&text[rest..start]);
            out.push_str(&new);
            rest = start + word.len();
        }
    }
    out.push_str(&text[rest..]);
    out
}

/// Findings for a registry.json that does not load: its parse error, or one finding per
/// schema violation. The other checks still run without it.
fn registry_load_diagnostics(e: &Error, registry_path: &Path, root: &Path) -> Vec<Diagnostic> {
    let name = relative_name(root, registry_path);
    let help = "registry.json must be JSON that fits schemas/registry.schema.json; registry checks were skipped";
    match e {
        Error::Parse { line, column, message, .. } => {
            vec![
                Diagnostic::new(crate::Code::RegistryInvalid, message.clone())
                    .file(name)
                    .at(*line, *column)
                    .help(help),
            ]
        }
        Error::SchemaInvalid { findings, .. } => findings
            .iter()
            .map(|f| {
                Diagnostic::new(
                    crate::Code::RegistryInvalid,
                    format!("{}: {}", pointer_label(&f.pointer), f.message),
                )
                .file(name.clone())
                .pointer(f.pointer.clone())
                .help(help)
            })
            .collect(),
        other => vec![
            Diagnostic::new(crate::Code::RegistryInvalid, other.to_string()).file(name).help(help),
        ],
    }
}

/// A committed setting that would act, which a run ignores or refuses without the
/// environment's confirmation (SPEC §24).
fn unconfirmed(setting: &crate::error::Located) -> Diagnostic {
    let d = Diagnostic::new(
        crate::Code::ConfigUnconfirmed,
        format!(
            "{}; a run does not let it act unless the environment confirms committed settings",
            setting.message
        ),
    )
    .file(crate::config::FILE_NAME)
    .help(crate::authority::HOW_TO_CONFIRM);
    if setting.line > 0 { d.at(setting.line, setting.column) } else { d }
}

/// One finding per problem of a `pactum.toml` that does not load, each at its line and
/// column.
fn config_diagnostics(e: &Error) -> Vec<Diagnostic> {
    let help = match e.code() {
        crate::Code::ConfigInsecure => {
            "API keys go only over https:// (or http:// to this machine), and only from variables named *_API_KEY"
        }
        _ => "fix pactum.toml or remove the offending setting; see the README for the settings",
    };
    match e {
        Error::Config { problems, .. } | Error::ConfigInsecure { problems, .. }
            if !problems.is_empty() =>
        {
            problems
                .iter()
                .map(|p| {
                    let d = Diagnostic::new(e.code(), p.message.clone())
                        .file(crate::config::FILE_NAME)
                        .help(help);
                    if p.line > 0 { d.at(p.line, p.column) } else { d }
                })
                .collect()
        }
        _ => vec![Diagnostic::from_error(e).file(crate::config::FILE_NAME).help(help)],
    }
}

/// `(root)` for the empty pointer.
pub fn pointer_label(pointer: &str) -> &str {
    if pointer.is_empty() { "(root)" } else { pointer }
}

/// `path` relative to `base`, `/`-separated; the absolute path (with one leading `/`)
/// when it is outside `base`.
pub fn relative_name(base: &Path, path: &Path) -> String {
    match path.strip_prefix(base) {
        // Already `/`-separated with nothing to normalize (the usual case): as it is.
        Ok(rel)
            if std::path::MAIN_SEPARATOR == '/'
                && rel
                    .to_str()
                    .is_some_and(|s| s.split('/').all(|p| !p.is_empty() && p != ".")) =>
        {
            rel.to_string_lossy().into_owned()
        }
        Ok(rel) => {
            let parts: Vec<String> =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            parts.join("/")
        }
        Err(_) => path.to_string_lossy().replace('\\', "/"),
    }
}

/// The message a panic carried, for an `internal_error`.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// Runs `work` on every item, each on a scoped thread of its own, and returns the results
/// in the items' order; a panic in one is resumed on this thread (never a result silently
/// left out).
fn side_by_side<I: Sync, T: Send>(items: &[I], work: impl Fn(&I) -> T + Sync) -> Vec<T> {
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items.iter().map(|item| scope.spawn(move || work(item))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    })
}

/// The threads `--jobs` asks for: 0 means one per core.
fn threads(jobs: usize) -> usize {
    match jobs {
        0 => std::thread::available_parallelism().map(usize::from).unwrap_or(1),
        n => n,
    }
}

/// What the per-file stage of a project with a registry.json gives.
struct Checked {
    /// The registry as loaded (its text dropped), or why it did not load.
    registry: Result<Registry>,
    /// Every walked file, then every file only the registry names.
    files: Vec<Analyzed>,
    /// The registry's own findings ([`Registry::audit`]).
    audit: Vec<Diagnostic>,
}

/// The per-file stage at a project with a registry.json, overlapped with the registry's
/// own work: the registry loads on one thread while this one walks PATH; the walked files
/// are analyzed as soon as the walk ends, while this thread waits for the registry and
/// runs its audit; files only the registry names (outside the walked folders) come last.
fn check_project(
    path: &Path,
    registry_path: &Path,
    base: &Path,
    jobs: usize,
    progress: &dyn Progress,
    registry_override: Option<&Registry>,
) -> Result<Checked> {
    std::thread::scope(|scope| {
        let loading = scope.spawn(|| match registry_override {
            Some(registry) => Ok(registry.clone()),
            None => Registry::load(registry_path),
        });
        let walked = discover::walk_path(path, base, true);
        // registry.json counts among the files checked, so the bar's total matches the
        // summary's from the start.
        progress.start(walked.len() + 1);
        let beside = "loading and auditing registry.json";
        let (mut files, loaded) = analyze_all(&walked, base, jobs, progress, beside, || {
            let mut registry = loading.join().map_err(|panic| Error::Internal {
                message: format!("the registry loader panicked: {}", panic_message(&*panic)),
            })?;
            progress.advance();
            let Ok(r) = &mut registry else { return Ok((registry, Vec::new(), Vec::new())) };
            // The registry's text (22 MB for 20,000 entries) is not kept while every file
            // is checked: `place` reads it again when a finding is in registry.json.
            r.text = String::new();
            // An entry whose file the walk saw as a regular file needs no resolving of
            // its own.
            let known =
                r.known_files(walked.iter().filter(|c| c.regular).map(|c| c.path.as_path()));
            let extra = discover::registry_files(&walked, path, base, r, &known);
            let audit = r.audit();
            Ok((registry, audit, extra))
        })?;
        // A panic is never a finding that can be skipped: the whole run is an internal
        // error.
        let (registry, audit, extra) = loaded?;
        if !extra.is_empty() {
            progress.start(walked.len() + 1 + extra.len());
            let (more, ()) = analyze_all(&extra, base, jobs, progress, "", || ())?;
            files.extend(more);
        }
        Ok(Checked { registry, files, audit })
    })
}

/// The per-file stage of a run on named paths ([`subjects`]): the named files are analyzed;
/// every other document of the project (its conventional folders and the files its
/// registry names) is read, and analyzed as context when it mentions a named file's id
/// (the registry's own audit, about registry.json alone, is not run).
fn check_subjects(
    paths: &[PathBuf],
    registry_path: &Path,
    base: &Path,
    jobs: usize,
    progress: &dyn Progress,
    registry_override: Option<&Registry>,
) -> Result<Checked> {
    type Seen = std::collections::HashSet<std::ffi::OsString, foldhash::fast::RandomState>;
    let real = |c: &discover::Candidate| {
        if c.canonical { c.path.clone() } else { crate::confine::real_or_given(&c.path) }
    };
    std::thread::scope(|scope| {
        let loading = scope.spawn(|| match registry_override {
            Some(registry) => Ok(registry.clone()),
            None => Registry::load(registry_path),
        });
        let mut seen = Seen::default();
        let mut named = Vec::new();
        for path in paths {
            for c in discover::walk_path(path, base, true) {
                if seen.insert(real(&c).into_os_string()) {
                    named.push(c);
                }
            }
        }
        let mut context: Vec<discover::Candidate> = discover::walk_path(base, base, true)
            .into_iter()
            .filter(|c| !seen.contains(real(c).as_os_str()))
            .collect();
        // A dataset named alone is checked through the suites that name it.
        named.retain(|c| !subjects::is_dataset_name(&c.path));
        progress.start(named.len() + context.len() + 1);
        let beside = "loading registry.json";
        let (mut files, loaded) = analyze_all(&named, base, jobs, progress, beside, || {
            let mut registry = loading.join().map_err(|panic| Error::Internal {
                message: format!("the registry loader panicked: {}", panic_message(&*panic)),
            })?;
            progress.advance();
            let Ok(r) = &mut registry else { return Ok((registry, Vec::new())) };
            r.text = String::new();
            let walked: Vec<discover::Candidate> = named.iter().chain(&context).cloned().collect();
            let known =
                r.known_files(walked.iter().filter(|c| c.regular).map(|c| c.path.as_path()));
            let extra = discover::registry_files(&walked, base, base, r, &known);
            Ok((registry, extra))
        })?;
        let (registry, extra) = loaded?;
        context.extend(extra);
        // What a file that needs a subject would mention: the subjects' ids (declared, or
        // registered for their paths), the names of subjects of no governed kind.
        let mut words = Vec::new();
        for f in &files {
            subjects::words_of(f, &mut words);
        }
        if let Ok(r) = &registry {
            for (i, entry) in r.entries.iter().enumerate() {
                if r.path_at(i).is_some_and(|p| seen.contains(p.as_os_str())) {
                    words.push(entry.id.clone());
                }
            }
        }
        let interest = subjects::Interest::new(&words);
        let found = scan_all(&context, base, jobs, progress, &interest)?;
        files.extend(found);
        Ok(Checked { registry, files, audit: Vec::new() })
    })
}

/// Reads every context file on a pool of scoped threads and analyzes the ones the
/// interest finds mentioned (the others are dropped once read).
fn scan_all(
    candidates: &[discover::Candidate],
    base: &Path,
    jobs: usize,
    progress: &dyn Progress,
    interest: &subjects::Interest,
) -> Result<Vec<Analyzed>> {
    let (found, ()) = analyze_all_with(
        candidates,
        jobs,
        progress,
        "",
        || (),
        |c| {
            if c.escape.is_some() || c.unreadable.is_some() {
                return None;
            }
            let read = if c.regular {
                crate::document::read_known_limited
            } else {
                crate::document::read_limited
            };
            let bytes = read(&c.path, crate::document::MAX_FILE_BYTES).ok()?;
            interest.mentioned(&bytes).then(|| file::analyze_read(c, base, Some(bytes)))
        },
    )?;
    Ok(found)
}

/// Runs the per-file stage on a pool of scoped threads pulling from a shared index, and
/// `beside` on this thread meanwhile (`what` names it in an error). A worker or `beside`
/// that panics makes the whole stage an `internal_error`: files are never silently missing
/// from the report, and no panic escapes to the library's caller.
fn analyze_all<T>(
    candidates: &[discover::Candidate],
    base: &Path,
    jobs: usize,
    progress: &dyn Progress,
    what: &str,
    beside: impl FnOnce() -> T,
) -> Result<(Vec<Analyzed>, T)> {
    analyze_all_with(candidates, jobs, progress, what, beside, |c| Some(file::analyze(c, base)))
}

/// [`analyze_all`] with the work on each candidate given (`None`: nothing kept for it).
fn analyze_all_with<T>(
    candidates: &[discover::Candidate],
    jobs: usize,
    progress: &dyn Progress,
    what: &str,
    beside: impl FnOnce() -> T,
    work: impl Fn(&discover::Candidate) -> Option<Analyzed> + Sync,
) -> Result<(Vec<Analyzed>, T)> {
    let workers = threads(jobs).min(candidates.len().max(1));
    let next = AtomicUsize::new(0);
    let (results, beside) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut local = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(candidate) = candidates.get(i) else { break };
                        if let Some(analyzed) = work(candidate) {
                            local.push((i, analyzed));
                        }
                        progress.advance();
                    }
                    local
                })
            })
            .collect();
        let beside =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(beside)).map_err(|panic| {
                Error::Internal {
                    message: format!("validate panicked {what}: {}", panic_message(&*panic)),
                }
            });
        // Every handle is joined (an unjoined panicked thread would panic the scope); the
        // first panic is the error.
        let mut all = Ok(Vec::with_capacity(candidates.len()));
        for handle in handles {
            match (handle.join(), &mut all) {
                (Ok(local), Ok(all)) => all.extend(local),
                (Err(panic), Ok(_)) => {
                    all = Err(Error::Internal {
                        message: format!("a validate worker panicked: {}", panic_message(&*panic)),
                    });
                }
                (_, Err(_)) => {}
            }
        }
        (all, beside)
    });
    let mut results: Vec<(usize, Analyzed)> = results?;
    results.sort_by_key(|(i, _)| *i);
    Ok((results.into_iter().map(|(_, a)| a).collect(), beside?))
}

/// registry.json's text read again, if it is still the text that was loaded (same
/// SHA-256): findings are never placed on lines of a file that changed under them.
fn reread_registry(r: &Registry) -> Option<String> {
    let bytes = crate::document::read_limited(&r.path, crate::document::MAX_REGISTRY_BYTES).ok()?;
    if crate::digest::sha256_hex(&bytes) != r.sha256 {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// Fills in line, column and the source line of every finding that has a file and a
/// pointer (or a line already).
fn place(ctx: &Context, registry_text: Option<&str>, diagnostics: &mut [Diagnostic]) {
    // Only the files with a finding to place are looked at.
    let wanted: std::collections::HashSet<&str> = diagnostics
        .iter()
        .filter(|d| d.line.is_some() || d.pointer.is_some())
        .filter_map(|d| d.file.as_deref())
        .collect();
    if wanted.is_empty() {
        return;
    }
    let mut texts: HashMap<&str, (&str, Syntax)> = HashMap::new();
    for f in ctx.analyzed() {
        if let Some(text) = &f.text
            && wanted.contains(f.rel.as_str())
        {
            texts.insert(f.rel.as_str(), (text.as_str(), f.syntax));
        }
    }
    let reread;
    if let Some(r) = &ctx.registry {
        let has_findings =
            diagnostics.iter().any(|d| d.file.as_deref() == Some(ctx.registry_name.as_str()));
        reread = if r.text.is_empty() && has_findings { reread_registry(r) } else { None };
        let text = reread.as_deref().unwrap_or(r.text.as_str());
        texts.insert(ctx.registry_name.as_str(), (text, Syntax::Json));
    } else if let Some(text) = registry_text {
        texts.insert(ctx.registry_name.as_str(), (text, Syntax::Json));
    }
    // The findings to place, by file: each file is indexed and scanned once for all of its
    // pointers, so placing stays linear in the findings and the text.
    let mut by_file: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in diagnostics.iter().enumerate() {
        let Some(file) = d.file.as_deref() else { continue };
        if texts.contains_key(file) && (d.line.is_some() || d.pointer.is_some()) {
            by_file.entry(file).or_default().push(i);
        }
    }
    let mut placed: Vec<(usize, source::Placed)> = Vec::new();
    for (file, list) in &by_file {
        let (text, syntax) = texts[file];
        let index = source::LineIndex::new(text);
        let unplaced: Vec<usize> =
            list.iter().copied().filter(|&i| diagnostics[i].line.is_none()).collect();
        let pointers: Vec<&str> =
            unplaced.iter().map(|&i| diagnostics[i].pointer.as_deref().unwrap_or("")).collect();
        let spans = source::locate_best_many(text, syntax, &pointers);
        let offsets: Vec<usize> = spans.iter().map(|s| s.start).collect();
        placed.extend(unplaced.into_iter().zip(index.place_offsets(text, &offsets)));
        for &i in list {
            let d = &diagnostics[i];
            if let Some(line) = d.line {
                let column = d.column.unwrap_or(0);
                let excerpt = index.excerpt_at(text, line, column);
                placed.push((i, source::Placed { line, column, excerpt }));
            }
        }
    }
    for (i, at) in placed {
        let d = &mut diagnostics[i];
        if d.line.is_none() {
            d.line = Some(at.line);
            d.column = Some(at.column);
        }
        d.excerpt = Some(at.excerpt);
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn messages_name_files_from_the_report_base() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("contracts")).unwrap();
        std::fs::create_dir_all(dir.path().join("schemas")).unwrap();
        std::fs::write(dir.path().join("registry.json"), "{}").unwrap();
        let mut paths = ProjectPaths { base: dir.path(), known: HashMap::new() };
        let mut r = |t: &str| paths.rename_in(t, &|w: &str| format!("prompts/{w}"));
        assert_eq!(
            r("restore it (`git checkout -- contracts/a.json`) and see contracts/a.json."),
            "restore it (`git checkout -- prompts/contracts/a.json`) and see prompts/contracts/a.json."
        );
        assert_eq!(
            r("x/contracts/a.json contracts/a.json.bak"),
            "x/contracts/a.json prompts/contracts/a.json.bak"
        );
        assert_eq!(r("contracts/a.json:3"), "prompts/contracts/a.json:3");
        assert_eq!(
            r("fit schemas/prompt_pack.schema.json; registry.json must be JSON"),
            "fit prompts/schemas/prompt_pack.schema.json; prompts/registry.json must be JSON"
        );
        // Pointers, versions, absolute and escaping paths, plain words: untouched.
        for kept in [
            "template PRM-A-001@1.0.0/sections/task uses /input_schema/properties",
            "/etc/passwd ../contracts/a.json e.g. contracts",
            "none here",
        ] {
            assert_eq!(r(kept), kept);
        }
    }

    #[test]
    fn relative_names_are_slash_separated_and_normalized() {
        let base = Path::new("/repo/prompts");
        let name = |p: &str| relative_name(base, Path::new(p));
        assert_eq!(name("/repo/prompts/contracts/a/1.0.0.json"), "contracts/a/1.0.0.json");
        assert_eq!(name("/repo/prompts/contracts//a/./1.0.0.json"), "contracts/a/1.0.0.json");
        assert_eq!(name("/repo/prompts/contracts/a/"), "contracts/a");
        assert_eq!(name("/repo/prompts"), "");
        assert_eq!(name("/repo/prompts/../x.json"), "../x.json");
        assert_eq!(name("/elsewhere/x.json"), "/elsewhere/x.json");
    }

    #[test]
    fn registry_text_is_read_again_only_while_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(registry::FILE_NAME);
        let text = r#"{"registry_version": 1, "contracts": [], "prompt_packs": []}"#;
        std::fs::write(&path, text).unwrap();
        let mut r = Registry::load(&path).unwrap();
        r.text = String::new();
        assert_eq!(reread_registry(&r).as_deref(), Some(text));
        std::fs::write(&path, text.replace("[]}", "[], \"x-note\": 1}")).unwrap();
        assert_eq!(reread_registry(&r), None, "a changed registry.json is not used for lines");
    }
}
