//! `pactum.toml` (SPEC §13): optional project settings and named providers.
//!
//! ```toml
//! [project]
//! deprecation_days = 30          # migration period of deprecated versions
//!
//! [defaults]
//! provider = "local"             # a name below, or a built-in: openai, anthropic, dry-run, scripted, replay
//! timeout_s = 60
//!
//! [providers.local]
//! kind = "openai"                # openai | anthropic | scripted | replay | dry-run
//! base_url = "http://localhost:11434/v1"
//! model = "llama3.1"
//! api_key_env = "OPENAI_API_KEY" # the variable holding the key (never the key itself; `*_API_KEY` only)
//! system_messages = true         # false: the model has no system role; one joined message
//!
//! [retry]
//! attempts = 3
//! base_delay_ms = 500
//! max_delay_ms = 8000
//!
//! [prices."gpt-4o-mini"]         # per model, for the cost `pactum eval` reports
//! prompt_per_mtok = 0.15         # per million prompt tokens
//! completion_per_mtok = 0.60     # per million completion tokens
//!
//! [gate]
//! eval = true                    # `registry promote` runs the id's eval suites (as --eval)
//! provider = "ci"                # the provider `promote --eval` evaluates with
//!
//! [tools.crm]                    # an MCP tool server (SPEC §23): its tools join the run's
//! command = ["python3", "tools/crm.py"]   # stdio: a command run in the project root
//! # url = "http://127.0.0.1:8931/mcp"     # or streamable HTTP
//! allow = ["lookup_order"]       # only these of its tools (all when absent)
//! timeout_s = 30                 # per call
//! prefix = "crm_"                 # run names: crm_lookup_order (none when absent)
//! rename = { lookup_order = "find_order" }   # run names for some tools, instead of prefix
//! ```
//!
//! The library never reads the environment: the binary passes a lookup function to
//! [`Config::apply_env`], and environment variables override the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::authority::Permit;
use crate::error::{Error, Located, Result};

/// The largest `pactum.toml` pactum reads.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

mod check;
pub use check::{is_key_variable, is_loopback_url, key_may_go_to};

/// The config file's name, next to registry.json.
pub const FILE_NAME: &str = "pactum.toml";

/// Project settings.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectSettings {
    /// Days a deprecated version stays loadable before `validate` warns
    /// `deprecation_period_over`.
    pub deprecation_days: u32,
}

impl Default for ProjectSettings {
    fn default() -> Self {
        ProjectSettings { deprecation_days: 30 }
    }
}

/// Defaults for runs.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Defaults {
    /// The provider used when neither `--provider` nor the work order names one.
    pub provider: Option<String>,
    /// Per-request timeout in seconds (work orders override with `constraints.timeout_s`).
    pub timeout_s: Option<f64>,
    /// Model for providers that do not name one.
    pub model: Option<String>,
}

/// One named provider.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderSettings {
    /// `openai`, `anthropic`, `scripted`, `replay` or `dry-run`.
    pub kind: String,
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// The environment variable that holds the API key.
    pub api_key_env: Option<String>,
    /// Scripted fixtures file (relative to the project root).
    pub fixtures: Option<String>,
    /// Replay cassette file (relative to the project root).
    pub cassette: Option<String>,
    /// `replay` (default) or `record`.
    pub mode: Option<String>,
    /// For `record`: the provider name whose answers are recorded.
    pub record_with: Option<String>,
    /// Send `max_completion_tokens` instead of `max_tokens` (newer OpenAI models).
    pub max_completion_tokens: Option<bool>,
    /// `false` for a model whose chat template has no system role: system sections are
    /// joined into the user message (default `true`).
    pub system_messages: Option<bool>,
}

/// Which findings `validate` reports (SPEC §21): `[lint]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LintSettings {
    /// Only these codes (all when absent).
    pub select: Option<Vec<String>>,
    /// Never these codes.
    pub ignore: Vec<String>,
    /// Path glob (relative to the project root) → codes not reported under it.
    #[serde(rename = "per-path-ignores")]
    pub per_path_ignores: BTreeMap<String, Vec<String>>,
}

/// HTTP retry settings.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrySettings {
    pub attempts: u32,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
    pub max_retry_after_s: u64,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings { attempts: 3, base_delay_ms: 500, max_delay_ms: 8000, max_retry_after_s: 30 }
    }
}

/// What one model costs, per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Price {
    pub prompt_per_mtok: f64,
    pub completion_per_mtok: f64,
}

impl Price {
    /// The cost of `usage` at this price.
    pub fn cost(&self, usage: crate::gateway::Usage) -> f64 {
        (usage.prompt_tokens as f64 * self.prompt_per_mtok
            + usage.completion_tokens as f64 * self.completion_per_mtok)
            / 1_000_000.0
    }
}

/// What `registry promote` requires besides validation (SPEC §20).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GateSettings {
    /// Run the eval suites of the promoted id (as `promote --eval`).
    pub eval: bool,
    /// The provider the gate evaluates with (default: the project's default provider).
    pub provider: Option<String>,
    /// An allowed-signers file (git's SSH format, relative to the project root): promote
    /// and label events are signed, and `--base` accepts only events signed by a principal
    /// the base's file lists (SPEC §24).
    pub signers: Option<String>,
}

/// One MCP tool server (SPEC §23): `[tools.NAME]`, with exactly one of `command` and `url`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolServerSettings {
    /// The program and its arguments (stdio transport), run in the project root.
    pub command: Option<Vec<String>>,
    /// The endpoint (streamable HTTP transport).
    pub url: Option<String>,
    /// The server's tools the project uses (all when absent).
    pub allow: Option<Vec<String>>,
    /// Seconds one request to the server may take (default 30).
    pub timeout_s: Option<f64>,
    /// Put before each of the server's tool names in a run (`prefix = "fs_"`: its
    /// `read_file` is `fs_read_file`), so its names need not collide with a built-in's.
    pub prefix: Option<String>,
    /// Names for some of the server's tools in a run (its own name = the run's), instead of
    /// `prefix`.
    pub rename: Option<std::collections::BTreeMap<String, String>>,
}

impl ToolServerSettings {
    /// The name a run knows the server's tool `listed` by: its `rename`, else `prefix` +
    /// the name (`allow` and the tool lock keep the server's own names).
    pub fn run_name(&self, listed: &str) -> String {
        run_name(self.prefix.as_deref(), self.rename.as_ref(), listed)
    }
}

/// The name a run knows a server's tool `listed` by, given the server's `prefix` and
/// `rename` ([`ToolServerSettings::run_name`]).
pub fn run_name(
    prefix: Option<&str>,
    rename: Option<&std::collections::BTreeMap<String, String>>,
    listed: &str,
) -> String {
    match rename.and_then(|r| r.get(listed)) {
        Some(new) => new.clone(),
        None => format!("{}{listed}", prefix.unwrap_or("")),
    }
}

/// Typed clients kept in the repository (SPEC §25): `[generate]`, the files `pactum generate`
/// writes, which `validate` checks are fresh (`generated_stale`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GenerateSettings {
    /// The Python module of `pactum generate python`, relative to the project root.
    pub python: Option<String>,
    /// The declarations of `pactum generate typescript`.
    pub typescript: Option<String>,
}

/// What the ledger keeps and where it is (SPEC §26, §27): `[ledger]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LedgerSettings {
    /// Exchange records carry their input (masked like everything the ledger holds), so
    /// recorded exchanges can become eval cases (`pactum eval dataset --from-ledger`);
    /// `false` leaves inputs out.
    pub inputs: bool,
    /// A ledger in PostgreSQL (`postgres://USER@HOST:PORT/DB`) instead of
    /// `.pactum/ledger.jsonl`; it contacts that host, so it acts only once the environment
    /// confirms committed settings (SPEC §24).
    pub url: Option<String>,
}

impl Default for LedgerSettings {
    fn default() -> Self {
        LedgerSettings { inputs: true, url: None }
    }
}

/// Where spans go (SPEC §22): `[telemetry]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// The OpenTelemetry collector (OTLP/HTTP): its base URL or its `/v1/traces` URL.
    pub otlp_endpoint: Option<String>,
    /// Prompt and reply text (masked) on the spans, as `--otlp-content`.
    pub content: bool,
}

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub project: ProjectSettings,
    pub defaults: Defaults,
    pub providers: BTreeMap<String, ProviderSettings>,
    pub retry: RetrySettings,
    /// Prices per model name, for the cost of an evaluation.
    pub prices: BTreeMap<String, Price>,
    pub gate: GateSettings,
    pub lint: LintSettings,
    /// MCP tool servers by name (SPEC §23).
    pub tools: BTreeMap<String, ToolServerSettings>,
    pub telemetry: TelemetrySettings,
    pub generate: GenerateSettings,
    pub ledger: LedgerSettings,
    /// Values taken from the environment (see [`Config::apply_env`]); never from the file.
    #[serde(skip)]
    pub env: EnvSettings,
    /// Where the file was read from, if anywhere.
    #[serde(skip)]
    pub path: Option<PathBuf>,
    /// The settings of the file that would act on the world (start a program, contact a
    /// host, send content) once the environment confirms them, with their positions
    /// (SPEC §24: `validate` notes them as `config_unconfirmed`).
    #[serde(skip)]
    pub acting: Vec<Located>,
}

/// Settings that come from environment variables.
#[derive(Clone, Default, PartialEq)]
pub struct EnvSettings {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// `OPENAI_BASE_URL`: the environment chose it, so requests may go there.
    pub openai_base_url: Option<Permit<String>>,
    pub openai_api_key: Option<crate::gateway::Secret>,
    /// `ANTHROPIC_BASE_URL`.
    pub anthropic_base_url: Option<Permit<String>>,
    pub anthropic_api_key: Option<crate::gateway::Secret>,
    /// `PACTUM_TRUST_CONFIG` (`1`, `true`, `yes`) or `--trust-config`: the settings of
    /// pactum.toml that start programs, contact hosts or send credentials and content act
    /// (SPEC §24, [`crate::authority::Trust`]); by default they do not.
    pub trust_config: bool,
    /// Every other variable a provider's `api_key_env` names.
    pub named_keys: BTreeMap<String, crate::gateway::Secret>,
    /// The only variables a stdio tool server is started with ([`TOOL_SERVER_ENV`]): a
    /// server never inherits the API keys of the environment.
    pub tool_env: Vec<(String, String)>,
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub otlp_endpoint: Option<Permit<String>>,
    /// `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else `OTEL_EXPORTER_OTLP_HEADERS`: the
    /// collector's headers (`key=value,...`), sent only to an endpoint the environment or
    /// a flag named.
    pub otlp_headers: Option<crate::gateway::Secret>,
}

/// The values of [`TOOL_SERVER_ENV`] through `lookup` (the binary passes `std::env::var`).
pub fn tool_env(lookup: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    TOOL_SERVER_ENV
        .iter()
        .filter_map(|name| Some((name.to_string(), lookup(name).filter(|v| !v.is_empty())?)))
        .collect()
}

/// The environment variables a stdio tool server gets (when set): what a program needs to
/// find its interpreter and libraries, and nothing that could hold a secret.
pub const TOOL_SERVER_ENV: &[&str] =
    &["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT"];

impl std::fmt::Debug for EnvSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvSettings")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("openai_base_url", &self.openai_base_url)
            .field("openai_api_key", &self.openai_api_key)
            .field("anthropic_base_url", &self.anthropic_base_url)
            .field("anthropic_api_key", &self.anthropic_api_key)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Reads `root/pactum.toml` when it exists; the defaults otherwise. A `pactum.toml`
    /// that is a symlink leading out of the project, or not a regular file, is refused.
    pub fn load(root: &Path) -> Result<Config> {
        let path = root.join(FILE_NAME);
        if crate::confine::entry_at(&path).is_none() {
            return Ok(Config::default());
        }
        let shown = PathBuf::from(FILE_NAME);
        let real = crate::confine::Root::new(root)
            .file(Path::new(FILE_NAME))
            .map_err(|r| r.into_error(&shown))?;
        let bytes = crate::document::read_limited(&real, MAX_CONFIG_BYTES)?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let valid = e.utf8_error().valid_up_to();
            let (line, column) =
                crate::source::line_col(&String::from_utf8_lossy(&e.as_bytes()[..valid]), valid);
            Error::Config {
                path: shown.clone(),
                problems: vec![Located {
                    line,
                    column,
                    key: String::new(),
                    message: "not valid UTF-8".into(),
                }],
            }
        })?;
        let mut config = Config::parse(&text, &shown)?;
        config.path = Some(path);
        Ok(config)
    }

    /// Parses config text. Every problem is reported, each with its line and column
    /// (`config_invalid`); settings that could leak a secret are `config_insecure`.
    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        let problems = check::check(text);
        if !problems.is_empty() {
            return Err(Error::Config { path: path.to_path_buf(), problems });
        }
        let config: Config = toml::from_str(text).map_err(|e| {
            let (line, column) =
                e.span().map(|s| crate::source::line_col(text, s.start)).unwrap_or((1, 1));
            Error::Config {
                path: path.to_path_buf(),
                problems: vec![Located {
                    line,
                    column,
                    key: String::new(),
                    message: e.message().to_string(),
                }],
            }
        })?;
        let insecure = check::insecure(text);
        if !insecure.is_empty() {
            return Err(Error::ConfigInsecure { path: path.to_path_buf(), problems: insecure });
        }
        let mut config = config;
        config.acting = check::acting(text);
        Ok(config)
    }

    /// The price of `model`: its own entry, else the longest priced name the model's name
    /// starts with (`gpt-4o-mini` prices `gpt-4o-mini-2024-07-18`).
    pub fn price_of(&self, model: &str) -> Option<&Price> {
        self.prices.get(model).or_else(|| {
            self.prices
                .iter()
                .filter(|(name, _)| model.starts_with(name.as_str()))
                .max_by_key(|(name, _)| name.len())
                .map(|(_, price)| price)
        })
    }

    /// Applies environment overrides through `lookup` (the binary passes `std::env::var`).
    ///
    /// This is the one place the library is handed the environment, so its values become
    /// [`Permit`]s here: the operator chose them, no repository file did.
    #[allow(clippy::disallowed_methods)] // Permit::environment: these values are the environment's
    pub fn apply_env(&mut self, lookup: &dyn Fn(&str) -> Option<String>) {
        let get = |name: &str| lookup(name).filter(|v| !v.is_empty());
        self.env.provider = get("PACTUM_PROVIDER");
        self.env.model = get("PACTUM_MODEL");
        self.env.openai_base_url = get("OPENAI_BASE_URL").map(Permit::environment);
        self.env.openai_api_key = get("OPENAI_API_KEY").map(crate::gateway::Secret::new);
        self.env.anthropic_base_url = get("ANTHROPIC_BASE_URL").map(Permit::environment);
        self.env.anthropic_api_key = get("ANTHROPIC_API_KEY").map(crate::gateway::Secret::new);
        self.env.trust_config = self.env.trust_config
            || get("PACTUM_TRUST_CONFIG")
                .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"));
        self.env.tool_env = tool_env(lookup);
        self.env.otlp_endpoint = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| get("OTEL_EXPORTER_OTLP_ENDPOINT"))
            .map(Permit::environment);
        self.env.otlp_headers = get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|| get("OTEL_EXPORTER_OTLP_HEADERS"))
            .map(crate::gateway::Secret::new);
        for p in self.providers.values() {
            if let Some(var) = &p.api_key_env
                && is_key_variable(var)
                && let Some(value) = get(var)
            {
                self.env.named_keys.insert(var.clone(), crate::gateway::Secret::new(value));
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_config() {
        let c = Config::parse(
            r#"
[project]
deprecation_days = 14
[defaults]
provider = "local"
[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
model = "llama3.1"
api_key_env = "LOCAL_API_KEY"
"#,
            Path::new("pactum.toml"),
        )
        .unwrap();
        assert_eq!(c.project.deprecation_days, 14);
        assert_eq!(c.providers["local"].model.as_deref(), Some("llama3.1"));
        assert_eq!(c.retry.attempts, 3);
    }

    #[test]
    fn prices_and_the_gate() {
        let c = Config::parse(
            "[prices.\"gpt-4o-mini\"]\nprompt_per_mtok = 0.15\ncompletion_per_mtok = 0.6\n[prices.gpt-4o]\nprompt_per_mtok = 2.5\ncompletion_per_mtok = 10\n[gate]\neval = true\nprovider = \"ci\"\n",
            Path::new("pactum.toml"),
        )
        .unwrap();
        assert!(c.gate.eval);
        assert_eq!(c.gate.provider.as_deref(), Some("ci"));
        let usage = crate::gateway::Usage { prompt_tokens: 1_000_000, completion_tokens: 500_000 };
        assert_eq!(c.price_of("gpt-4o-mini").unwrap().cost(usage), 0.45);
        // A dated model takes the longest priced name it starts with.
        assert_eq!(c.price_of("gpt-4o-mini-2024-07-18").unwrap().prompt_per_mtok, 0.15);
        assert_eq!(c.price_of("gpt-4o-2024-08-06").unwrap().prompt_per_mtok, 2.5);
        assert!(c.price_of("claude").is_none());
    }

    #[test]
    fn unknown_keys_and_kinds_are_config_errors_with_positions() {
        let e = Config::parse(
            "[project]\ndeprecation_dayz = 3\n[retry]\nattempts = 99\n",
            Path::new("pactum.toml"),
        )
        .unwrap_err();
        assert_eq!(e.code(), crate::Code::ConfigInvalid);
        let text = e.to_string();
        assert!(text.contains("pactum.toml:2:1: unknown setting `project.deprecation_dayz`; did you mean `deprecation_days`?"), "{text}");
        assert!(text.contains("pactum.toml:4:12: `retry.attempts` = 99 is out of range"), "{text}");
        let e =
            Config::parse("[providers.x]\nkind = \"gpt\"\n", Path::new("pactum.toml")).unwrap_err();
        assert!(e.to_string().contains("is not one of openai"), "{e}");
        let e = Config::parse(
            "[providers.x]\nkind = \"openai\"\napi_key_env = \"GITHUB_TOKEN\"\n",
            Path::new("pactum.toml"),
        )
        .unwrap_err();
        assert_eq!(e.code(), crate::Code::ConfigInsecure);
    }

    #[test]
    fn environment_overrides_and_keys_stay_secret() {
        let mut c = Config::parse(
            "[providers.x]\nkind = \"openai\"\napi_key_env = \"X_API_KEY\"\n",
            Path::new("p"),
        )
        .unwrap();
        c.apply_env(&|name| match name {
            "PACTUM_MODEL" => Some("m".into()),
            "OPENAI_API_KEY" => Some("sk-very-secret".into()),
            "X_API_KEY" => Some("sk-other-secret".into()),
            _ => None,
        });
        assert_eq!(c.env.model.as_deref(), Some("m"));
        assert_eq!(c.env.named_keys["X_API_KEY"].expose(), "sk-other-secret");
        let debug = format!("{c:?}");
        assert!(!debug.contains("sk-very-secret") && !debug.contains("sk-other-secret"), "{debug}");
    }
}
