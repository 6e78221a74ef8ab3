//! What every command shares: the project root, JSON output, error printing and exit
//! codes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use pactum::redact::Redactor;

use pactum::project::Project;
use pactum::terminal::escape;
use pactum::{Code, Error};
use serde_json::{Value, json};

/// Exit status: success.
pub const OK: u8 = 0;
/// Exit status: findings, a failed run or invalid data.
pub const FAILED: u8 = 1;
/// Exit status: usage, I/O or internal error.
pub const USAGE: u8 = 2;

/// `--format text|json` for commands that have no other formats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    #[default]
    Text,
    Json,
}

/// The `--root`, `--format` and `--json` options most commands take.
#[derive(Clone, Debug, clap::Args)]
pub struct Common {
    /// Project root (the folder of registry.json); default: the nearest one above the
    /// current folder (above the work order, for `run`).
    #[arg(long, value_name = "DIR", global = true)]
    pub root: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text, global = true)]
    pub format: Format,
    /// Same as --format json.
    #[arg(long, global = true)]
    pub json: bool,
}

impl Common {
    pub fn json(&self) -> bool {
        self.json || self.format == Format::Json
    }

    /// Opens the project at --root, or the one found above the current folder; the
    /// environment overrides pactum.toml.
    pub fn project(&self) -> Result<Project, Error> {
        let project = match &self.root {
            Some(root) => {
                let registry = root.join(pactum::registry::FILE_NAME);
                if pactum::confine::entry_at(&registry).is_none() {
                    return Err(Error::Io {
                        path: registry,
                        source: std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            "no registry.json in --root; create one with `pactum new contract ID`",
                        ),
                    });
                }
                Project::open(&registry)?
            }
            None => {
                let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
                return discover_project(&cwd);
            }
        };
        with_env(project)
    }
}

/// The project of `registry` (a registry.json), with the environment applied.
pub fn open_project(registry: &Path) -> Result<Project, Error> {
    with_env(Project::open(registry)?)
}

/// The project above `start`, with the environment applied (every command finds its
/// project through this or [`open_project`], so none misses the config's secrets).
pub fn discover_project(start: &Path) -> Result<Project, Error> {
    with_env(Project::discover(start)?)
}

/// `project` with the environment's overrides, its secrets taught to the redactor.
fn with_env(mut project: Project) -> Result<Project, Error> {
    project.config.apply_env(&env_lookup);
    learn_config_secrets(&project.config);
    Ok(project)
}

/// Who makes a registry change (SPEC §17): `PACTUM_ACTOR`, else git's `user.email` as
/// seen from `dir`, else the OS user name, else `unknown`.
#[allow(clippy::disallowed_methods)]
pub fn actor(dir: &Path) -> String {
    let set = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
    set(env_lookup("PACTUM_ACTOR"))
        .or_else(|| set(pactum::git::config_get(dir, "user.email")))
        .or_else(|| set(env_lookup("USER")))
        .or_else(|| set(env_lookup("USERNAME")))
        .unwrap_or_else(|| "unknown".to_string())
}

/// The stamp of a registry change made now from `dir`.
pub fn stamp(dir: &Path) -> pactum::registry::lifecycle::Stamp {
    pactum::registry::lifecycle::Stamp::now(actor(dir))
}

/// The project root for commands that create files: --root, else the folder of the
/// registry.json found by walking up (relative to the current folder when inside it),
/// else the current folder.
pub fn root_or_here(root: Option<&Path>) -> PathBuf {
    match root {
        Some(r) => r.to_path_buf(),
        None => match pactum::registry::find_upwards(Path::new(".")) {
            Some(reg) => {
                let dir = reg.parent().map(Path::to_path_buf).unwrap_or_else(|| ".".into());
                let rel = PathBuf::from(relative(&format!("{}/", dir.display())));
                if rel.as_os_str().is_empty() { ".".into() } else { rel }
            }
            None => ".".into(),
        },
    }
}

/// `--trust-config` was given: it confirms committed settings as `PACTUM_TRUST_CONFIG=1`
/// does.
static TRUST_CONFIG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records `--trust-config`.
pub fn set_trust_config(on: bool) {
    TRUST_CONFIG.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The environment, for the library's config overrides (`--trust-config` reads as
/// `PACTUM_TRUST_CONFIG=1`).
#[allow(clippy::disallowed_methods)]
pub fn env_lookup(name: &str) -> Option<String> {
    if name == "PACTUM_TRUST_CONFIG" && TRUST_CONFIG.load(std::sync::atomic::Ordering::Relaxed) {
        return Some("1".to_string());
    }
    std::env::var(name).ok()
}

/// The `PATH` git runs programs with (the merge driver's notices).
#[allow(clippy::disallowed_methods)]
pub fn path_var() -> Option<std::ffi::OsString> {
    std::env::var_os("PATH")
}

/// The exit status an error maps to.
pub fn status_of(error: &Error) -> u8 {
    match error.code() {
        Code::IoError | Code::PinInvalid | Code::UsageError | Code::InternalError => USAGE,
        _ => FAILED,
    }
}

/// Prints text meant for people on stdout, secrets masked, through the one escaping rule for
/// text from files and models (`pactum::terminal`): no control characters, no workflow
/// commands.
pub fn print_text(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(escape(&redacted(text)).as_bytes());
    let _ = out.flush();
}

/// Writes a machine-readable document (JSON, SARIF, JUnit) to stdout byte for byte (secrets
/// masked): no escaping and no stripping, whatever stdout is.
pub fn print_exact(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(redacted(text).as_bytes());
    let _ = out.flush();
}

/// What the last panic said and where, kept by the hook [`catch_panics`] installs.
static PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Replaces the default panic message with a record for [`report_panic`].
pub fn catch_panics() {
    std::panic::set_hook(Box::new(|info| {
        let message = pactum::validate::panic_message(info.payload());
        let at =
            info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        let mut slot = PANIC.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(format!("{message}{at}"));
    }));
}

/// Reports a caught panic as `internal_error` (JSON on stdout when the command line asked
/// for JSON, text on stderr otherwise) and returns exit status 2.
pub fn report_panic() -> u8 {
    let message = PANIC
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_else(|| "a panic without a message".to_string());
    let error = Error::Internal { message };
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json" || a == "--format=json")
        || args.windows(2).any(|w| w[0] == "--format" && w[1] == "json");
    fail(&error, json).max(USAGE)
}

/// Carries a worker thread's panic to the top of the binary, where it becomes
/// `internal_error` (a panicked worker is never joined as an empty success).
pub fn join_or_propagate<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    match handle.join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Test hook, in debug builds only: `PACTUM_INJECT_PANIC=<place>` panics at that place
/// (`main`, `validate-worker`, `run-worker`), so the tests can prove that a panic anywhere
/// ends in `internal_error` and exit 2. Release builds compile it to nothing.
pub fn inject_panic(place: &str) {
    #[cfg(debug_assertions)]
    if env_lookup("PACTUM_INJECT_PANIC").as_deref() == Some(place) {
        panic!("injected panic at {place} (PACTUM_INJECT_PANIC)");
    }
    #[cfg(not(debug_assertions))]
    let _ = place;
}

/// The process's one secret masker (SPEC §18): API keys and tokens from the environment,
/// URL credentials, and every value a contract marks `x-secret` once a command has seen
/// it. Everything the binary prints, and every ledger it writes, goes through it.
pub fn redactor() -> &'static Arc<Redactor> {
    static REDACTOR: OnceLock<Arc<Redactor>> = OnceLock::new();
    REDACTOR.get_or_init(|| {
        let redactor = Redactor::new();
        #[allow(clippy::disallowed_methods)]
        for (name, value) in std::env::vars() {
            if name.ends_with("_API_KEY") || name.ends_with("_TOKEN") || name.ends_with("_SECRET") {
                redactor.add(&value);
            }
            // A provider's base URL (or any URL the environment gives) may carry a key in
            // its user-info or query (`?api-key=...`): masked like a key.
            if name.ends_with("_URL") || name.ends_with("_ENDPOINT") {
                for secret in pactum::redact::url_secrets(&value) {
                    redactor.add(&secret);
                }
            }
        }
        Arc::new(redactor)
    })
}

/// Teaches the redactor the secrets a project's configuration holds once the
/// environment is applied: the keys its providers name, and a key in a provider's base URL
/// (`?api-key=...`), wherever the URL came from, masked like a key.
pub fn learn_config_secrets(config: &pactum::config::Config) {
    for key in config.env.named_keys.values() {
        redactor().add(key.expose());
    }
    for url in config.providers.values().filter_map(|p| p.base_url.as_deref()) {
        for secret in pactum::redact::url_secrets(url) {
            redactor().add(&secret);
        }
    }
}

/// `text` with every secret masked.
pub fn redacted(text: &str) -> String {
    redactor().redact(text).into_owned()
}

/// Prints one JSON document on stdout, secrets masked.
pub fn print_json(value: &Value) {
    let value = redactor().redact_value(value.clone());
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, &value);
    let _ = writeln!(out);
}

/// The JSON shape of a failure: `{"ok": false, "code", "message", "errors"}`.
pub fn error_json(error: &Error) -> Value {
    let errors = pactum::executor::call::error_entries(error);
    let mut errors = errors;
    for e in &mut errors {
        if let Some(m) = e.get("message").and_then(Value::as_str) {
            e["message"] = json!(relative(m));
        }
    }
    json!({"ok": false, "code": error.code(), "message": relative(&error.to_string()), "errors": errors})
}

/// Reports an error on stderr (text) or stdout (JSON) and returns its exit status.
pub fn fail(error: &Error, json: bool) -> u8 {
    if json {
        print_json(&error_json(error));
    } else {
        eprint_error(error);
    }
    status_of(error)
}

/// `error[code]: message` on stderr, with one line per finding; the findings of a file that
/// does not fit its schema get their `file:line:column`.
pub fn eprint_error(error: &Error) {
    let origin = match error {
        Error::SchemaInvalid { path, .. } | Error::SchemaFileInvalid { path, .. } => {
            Origin::read(path, "")
        }
        _ => None,
    };
    eprint_error_in(error, origin.as_ref());
}

/// Like [`eprint_error`]; with the file the checked value came from, every finding also
/// gets its `file:line:column`.
pub fn eprint_error_in(error: &Error, origin: Option<&Origin>) {
    let mut err = anstream::stderr().lock();
    let style = anstyle::Style::new().bold().fg_color(Some(anstyle::AnsiColor::Red.into()));
    let _ = writeln!(
        err,
        "{style}error[{}]{style:#}: {}",
        error.code(),
        shown_line(&error.to_string())
    );
    if error.findings().len() > 1 || origin.is_some() {
        let pointers: Vec<&str> = error.findings().iter().map(|f| f.pointer.as_str()).collect();
        for (f, at) in error.findings().iter().zip(located_all(origin, &pointers)) {
            let line = format!("{at}{}", f.message);
            let _ = writeln!(err, "  - {}", shown_line(&line));
        }
    }
    if let Some(o) = origin {
        let path = relative(&o.path.display().to_string());
        let _ = writeln!(
            err,
            "  = help: fix the values at these places in {}",
            pactum::terminal::OneLine(&path)
        );
    }
}

/// A message as people see it on a terminal, on one line: paths under the current folder
/// relative, secrets masked, control characters and workflow commands escaped, and a line
/// feed shown as `\n` (`terminal::OneLine`'s rule), so a value from a file or a model
/// cannot print a line of its own. (There is no multi-line form for messages: a block of
/// text goes through `terminal::escape_block`, under a label.)
pub fn shown_line(text: &str) -> String {
    pactum::terminal::escape_line(&redacted(&relative(text))).into_owned()
}

/// `text` with the current folder's absolute path taken off every path in it: messages
/// name files as the user typed them, relative to where the command runs (the library's
/// errors carry absolute paths, which library users need).
pub fn relative(text: &str) -> String {
    static PREFIX: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let prefix = PREFIX.get_or_init(|| {
        let cwd = std::env::current_dir().ok()?;
        let real = pactum::confine::real_or_given(&cwd);
        Some(format!("{}/", real.display()))
    });
    match prefix {
        Some(p) if p.len() > 1 => text.replace(p.as_str(), ""),
        _ => text.to_string(),
    }
}

/// `file:line:column: /pointer: ` for each finding's pointer (the pointer alone without an
/// origin), all placed in one pass over the file.
pub fn located_all(origin: Option<&Origin>, pointers: &[&str]) -> Vec<String> {
    match origin {
        Some(o) => {
            let full: Vec<String> = pointers.iter().map(|p| format!("{}{p}", o.prefix)).collect();
            let refs: Vec<&str> = full.iter().map(String::as_str).collect();
            o.locate_all(&refs)
                .into_iter()
                .zip(&full)
                .map(|(at, pointer)| format!("{at}: {}: ", shown_pointer(pointer)))
                .collect()
        }
        None => pointers.iter().map(|p| format!("{}: ", shown_pointer(p))).collect(),
    }
}

fn shown_pointer(pointer: &str) -> &str {
    if pointer.is_empty() { "(root)" } else { pointer }
}

/// The file a checked value was read from, and the pointer of that value in it (e.g. an
/// exchange's input is `/task/input` of its work order).
pub struct Origin {
    pub path: PathBuf,
    pub prefix: String,
    text: String,
}

impl Origin {
    /// `None` when the file cannot be read again (the findings then go without a line).
    pub fn read(path: &Path, prefix: &str) -> Option<Origin> {
        let bytes = pactum::document::read_limited(path, pactum::document::MAX_FILE_BYTES).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        Some(Origin { path: path.to_path_buf(), prefix: prefix.to_string(), text })
    }

    /// `file:line:column` of the value at each pointer, or of its nearest existing
    /// ancestor: one pass over the text for all of them.
    pub fn locate_all(&self, pointers: &[&str]) -> Vec<String> {
        let syntax = match pactum::document::syntax_for(&self.path) {
            pactum::document::Syntax::Yaml => pactum::source::Syntax::Yaml,
            pactum::document::Syntax::Json => pactum::source::Syntax::Json,
        };
        let spans = pactum::source::locate_best_many(&self.text, syntax, pointers);
        let offsets: Vec<usize> = spans.iter().map(|s| s.start).collect();
        let index = pactum::source::LineIndex::new(&self.text);
        let path = relative(&self.path.display().to_string());
        index
            .place_offsets(&self.text, &offsets)
            .into_iter()
            .map(|at| format!("{path}:{}:{}", at.line, at.column))
            .collect()
    }
}

/// `warning[code]: message` on stderr.
pub fn eprint_warning(code: Code, message: &str) {
    let mut err = anstream::stderr().lock();
    let style = anstyle::Style::new().bold().fg_color(Some(anstyle::AnsiColor::Yellow.into()));
    let _ = writeln!(err, "{style}warning[{code}]{style:#}: {}", shown_line(message));
}

/// A path shown relative to the project root.
pub fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace('\\', "/")
}
