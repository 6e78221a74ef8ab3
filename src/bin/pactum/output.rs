//! What every command shares: the project root, JSON output, error printing and exit
//! codes.

use std::io::Write;
use std::path::{Path, PathBuf};

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
    /// Project root (the folder of registry.json); default: found by walking up from the current folder.
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
                if !registry.is_file() {
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
                Project::discover(&cwd)?
            }
        };
        let mut project = project;
        project.config.apply_env(&env_lookup);
        Ok(project)
    }
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

/// The environment, for the library's config overrides.
#[allow(clippy::disallowed_methods)]
pub fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The exit status an error maps to.
pub fn status_of(error: &Error) -> u8 {
    match error.code() {
        Code::IoError | Code::PinInvalid => USAGE,
        _ => FAILED,
    }
}

/// Prints text meant for people on stdout, through the one escaping rule for text from
/// files and models (`pactum::terminal`): no control characters, no workflow commands.
pub fn print_text(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(escape(text).as_bytes());
    let _ = out.flush();
}

/// Writes a machine-readable document (JSON, SARIF, JUnit) to stdout byte for byte: no
/// escaping and no stripping, whatever stdout is.
pub fn print_exact(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Prints one JSON document on stdout.
pub fn print_json(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, value);
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
    let message = relative(&error.to_string());
    let _ = writeln!(err, "{style}error[{}]{style:#}: {}", error.code(), escape(&message));
    if error.findings().len() > 1 || origin.is_some() {
        for f in error.findings() {
            let line = format!("{}{}", located(origin, &f.pointer), f.message);
            let _ = writeln!(err, "  - {}", escape(&line));
        }
    }
    if let Some(o) = origin {
        let path = relative(&o.path.display().to_string());
        let _ = writeln!(err, "  = help: fix the values at these places in {}", escape(&path));
    }
}

/// `text` with the current folder's absolute path taken off every path in it: messages
/// name files as the user typed them, relative to where the command runs (the library's
/// errors carry absolute paths, which library users need).
pub fn relative(text: &str) -> String {
    static PREFIX: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let prefix = PREFIX.get_or_init(|| {
        let cwd = std::env::current_dir().ok()?;
        let real = cwd.canonicalize().unwrap_or(cwd);
        Some(format!("{}/", real.display()))
    });
    match prefix {
        Some(p) if p.len() > 1 => text.replace(p.as_str(), ""),
        _ => text.to_string(),
    }
}

/// `file:line:column: /pointer: ` for a finding (the pointer alone without an origin).
pub fn located(origin: Option<&Origin>, pointer: &str) -> String {
    match origin {
        Some(o) => {
            let pointer = format!("{}{pointer}", o.prefix);
            format!("{}: {}: ", o.locate(&pointer), shown_pointer(&pointer))
        }
        None => format!("{}: ", shown_pointer(pointer)),
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

    /// `file:line:column` of the value at `pointer`, or of its nearest existing ancestor.
    pub fn locate(&self, pointer: &str) -> String {
        let syntax = match pactum::document::syntax_for(&self.path) {
            pactum::document::Syntax::Yaml => pactum::source::Syntax::Yaml,
            pactum::document::Syntax::Json => pactum::source::Syntax::Json,
        };
        let span = pactum::source::locate_best(&self.text, syntax, pointer);
        let (line, column) = pactum::source::line_col(&self.text, span.start);
        relative(&format!("{}:{line}:{column}", self.path.display()))
    }
}

/// `warning[code]: message` on stderr.
pub fn eprint_warning(code: Code, message: &str) {
    let mut err = anstream::stderr().lock();
    let style = anstyle::Style::new().bold().fg_color(Some(anstyle::AnsiColor::Yellow.into()));
    let _ = writeln!(err, "{style}warning[{code}]{style:#}: {}", escape(message));
}

/// A path shown relative to the project root.
pub fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace('\\', "/")
}
