//! Choosing the provider for a run (SPEC §13).
//!
//! Precedence, first match wins: `--provider NAME`, the work order's `provider` (a name;
//! a `cassette` without a name, replayed; its scripted `fixtures`: a work order that names
//! offline fixtures stays offline),
//! the `PACTUM_PROVIDER` environment variable, `defaults.provider` in pactum.toml. A name is a
//! `[providers.NAME]` entry of pactum.toml or a built-in kind (`openai`, `anthropic`,
//! `scripted`, `replay`, `dry-run`). When nothing names a provider the run is **offline**:
//! the scripted fixtures the work order names, else `dry-run`, and [`Selected::offline`]
//! says so, so the caller can tell the user nobody asked a model.
//!
//! Settings: the environment overrides the file (`OPENAI_BASE_URL`, `OPENAI_API_KEY`,
//! `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`, `PACTUM_MODEL`); a work order's
//! `provider.model` overrides both. An API key from the environment goes only where the
//! environment confirms (see [`route_key`]): pactum.toml may come from a pull request.
//! `system_messages = false` on a `[providers.NAME]` entry
//! marks a model without a system role: its prompts arrive as one joined user message.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::authority::{Permit, Trust};
use crate::config::{Config, ProviderSettings};
use crate::confine::Root;
use crate::error::{Error, ProviderFailure, Result};
use crate::gateway::anthropic::{AnthropicConfig, AnthropicProvider};
use crate::gateway::dry_run::DryRunProvider;
use crate::gateway::http::RetryPolicy;
use crate::gateway::openai::{OpenAiConfig, OpenAiProvider};
use crate::gateway::replay::{Mode, ReplayProvider};
use crate::gateway::scripted::ScriptedProvider;
use crate::gateway::{KINDS, PromptRequest, Provider, ProviderResponse};
use crate::work_order::ProviderChoice;

/// Where the choice comes from.
#[derive(Clone, Copy, Debug)]
pub struct Choice<'a> {
    /// `--provider` on the command line.
    pub cli: Option<&'a str>,
    /// The work order's `provider`.
    pub work_order: &'a ProviderChoice,
    /// The work order's folder (its relative paths resolve against it).
    pub work_order_dir: &'a Path,
}

/// The provider a run uses.
#[derive(Clone)]
pub struct Selected {
    pub provider: Arc<dyn Provider>,
    /// Set when the run is offline because nothing named a provider: why, and what answers.
    pub offline: Option<String>,
    /// True when the command line, the work order (a provider name, or offline fixtures) or
    /// the environment chose the provider: a contract's `boundary.provider_id` then does not
    /// override it.
    pub explicit: bool,
    /// What the user should know about the choice (an API key withheld, and why).
    pub notices: Vec<String>,
}

impl std::fmt::Debug for Selected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selected")
            .field("provider", &self.provider.name())
            .field("offline", &self.offline)
            .finish()
    }
}

fn not_configured(provider: &str, message: String) -> Error {
    Error::provider(provider, ProviderFailure::NotConfigured, message)
}

/// Picks and builds the provider for a run (see the module docs).
pub fn select(config: &Config, root: &Path, choice: Choice<'_>) -> Result<Selected> {
    // A contract's provider_id overrides only what pactum.toml (or nothing) chose: the
    // command line, the work order (its provider, or its offline fixtures: such a run stays
    // offline, SPEC §18) and the environment are explicit.
    let explicit = choice.cli.is_some()
        || choice.work_order.name.is_some()
        || choice.work_order.fixtures.is_some()
        || choice.work_order.cassette.is_some()
        || config.env.provider.is_some();
    // Offline fixtures the work order names keep it offline: only the command line or the
    // work order itself can send it to a model (SPEC §18).
    let fallback = || match &choice.work_order.fixtures {
        Some(_) => None,
        None => config.env.provider.clone().or_else(|| config.defaults.provider.clone()),
    };
    let named =
        choice.cli.map(str::to_string).or_else(|| named_by(choice.work_order)).or_else(fallback);
    match named {
        Some(name) => {
            let mut notices = Vec::new();
            let provider = build(config, root, &name, choice, 0, &mut notices)?;
            Ok(Selected { provider, offline: None, explicit, notices })
        }
        None => match &choice.work_order.fixtures {
            Some(fixtures) => {
                let (path, provider) = load_fixtures(root, choice.work_order_dir, fixtures)?;
                let provider = Arc::new(provider);
                Ok(Selected {
                    provider,
                    offline: Some(format!(
                        "no provider configured: running offline on the scripted fixtures {} (not a model)",
                        path.display()
                    )),
                    explicit,
                    notices: Vec::new(),
                })
            }
            None => Ok(Selected {
                provider: Arc::new(DryRunProvider),
                offline: Some(
                    "no provider configured: running offline with the dry-run provider (minimal schema-valid answers, not a model)"
                        .to_string(),
                ),
                explicit,
                notices: Vec::new(),
            }),
        },
    }
}

/// The providers of one work order: the selected one, plus the named providers contracts
/// pin with `boundary.provider_id` (built on first use). A pin applies unless the run named
/// its provider explicitly (`--provider`, the work order's `provider`).
///
/// Cloning is cheap and the clones share what they built (a client builds its providers
/// once and hands each call a clone).
#[derive(Clone)]
pub struct ProviderSet {
    selected: Selected,
    shared: Arc<Shared>,
}

/// What the clones of one provider set share.
struct Shared {
    config: Config,
    root: std::path::PathBuf,
    work_order: ProviderChoice,
    work_order_dir: std::path::PathBuf,
    named: std::sync::Mutex<std::collections::HashMap<String, Arc<dyn Provider>>>,
}

impl std::fmt::Debug for ProviderSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSet").field("selected", &self.selected).finish_non_exhaustive()
    }
}

impl ProviderSet {
    /// Selects the work order's provider (see [`select`]).
    pub fn new(config: &Config, root: &Path, choice: Choice<'_>) -> Result<ProviderSet> {
        Ok(ProviderSet {
            selected: select(config, root, choice)?,
            shared: Arc::new(Shared {
                config: config.clone(),
                root: root.to_path_buf(),
                work_order: choice.work_order.clone(),
                work_order_dir: choice.work_order_dir.to_path_buf(),
                named: std::sync::Mutex::default(),
            }),
        })
    }

    /// One provider for everything (tests, library users with their own provider).
    pub fn single(provider: Arc<dyn Provider>) -> ProviderSet {
        ProviderSet {
            selected: Selected { provider, offline: None, explicit: true, notices: Vec::new() },
            shared: Arc::new(Shared {
                config: Config::default(),
                root: std::path::PathBuf::from("."),
                work_order: ProviderChoice::default(),
                work_order_dir: std::path::PathBuf::from("."),
                named: std::sync::Mutex::default(),
            }),
        }
    }

    pub fn selected(&self) -> &Selected {
        &self.selected
    }

    /// The provider a contract is called through.
    pub fn for_contract(&self, provider_id: Option<&str>) -> Result<Arc<dyn Provider>> {
        let Some(id) = provider_id.filter(|_| !self.selected.explicit) else {
            return Ok(Arc::clone(&self.selected.provider));
        };
        if self.selected.provider.name() == id {
            return Ok(Arc::clone(&self.selected.provider));
        }
        let shared = &self.shared;
        let mut named = shared.named.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = named.get(id) {
            return Ok(Arc::clone(p));
        }
        if !shared.config.providers.contains_key(id) {
            return Err(not_configured(
                id,
                format!(
                    "the contract's boundary.provider_id names `{id}`; configure [providers.{id}] in pactum.toml"
                ),
            ));
        }
        let choice = Choice {
            cli: None,
            work_order: &shared.work_order,
            work_order_dir: &shared.work_order_dir,
        };
        // A refusal tells why a key was withheld; the notices of a lazily built provider
        // have no one to go to.
        let provider = build(&shared.config, &shared.root, id, choice, 0, &mut Vec::new())?;
        named.insert(id.to_string(), Arc::clone(&provider));
        Ok(provider)
    }
}

fn retry_policy(config: &Config) -> RetryPolicy {
    RetryPolicy {
        max_attempts: config.retry.attempts.max(1),
        base_delay: Duration::from_millis(config.retry.base_delay_ms),
        max_delay: Duration::from_millis(config.retry.max_delay_ms),
        max_retry_after: Duration::from_secs(config.retry.max_retry_after_s),
    }
}

fn timeout(config: &Config, default: Duration) -> Duration {
    config
        .defaults
        .timeout_s
        .filter(|t| t.is_finite() && *t > 0.0)
        .and_then(|t| Duration::try_from_secs_f64(t).ok())
        .unwrap_or(default)
}

/// `path` when it stays inside `boundary` (a missing file is left to the loader, which
/// says it is not configured); `path_escape` or `io_error` otherwise.
fn confined_read(boundary: &Root, path: std::path::PathBuf) -> Result<std::path::PathBuf> {
    match boundary.content(&path) {
        Ok(real) => Ok(real),
        Err(crate::confine::Refusal::Missing) => Ok(path),
        Err(refusal) => Err(refusal.into_error(&path)),
    }
}

/// The model a provider with `settings` asks: the work order's, else `PACTUM_MODEL`, else
/// the provider's own, else the project's default (empty when none names one).
fn model_of(config: &Config, settings: &ProviderSettings, choice: Choice<'_>) -> String {
    choice
        .work_order
        .model
        .clone()
        .or_else(|| config.env.model.clone())
        .or_else(|| settings.model.clone())
        .or_else(|| config.defaults.model.clone())
        .unwrap_or_default()
}

/// `path` when it may be written inside `boundary`. With `create`, missing folders on the
/// way are made (a cassette being recorded); without, a missing folder is left to the
/// provider, which says the cassette does not exist.
fn confined_write(
    boundary: &Root,
    path: std::path::PathBuf,
    create: bool,
) -> Result<std::path::PathBuf> {
    boundary.visible(&path).map_err(|r| r.into_error(&path))?;
    match boundary.writable(&path, create) {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(path),
        other => other,
    }
}

/// Where one provider's requests go and the API key they may carry (SPEC §18, §24).
struct KeyRoute {
    url: Permit<String>,
    key: Option<crate::gateway::Secret>,
    /// Why an existing key is not sent, if it is not.
    withheld: Option<String>,
}

/// The names of one kind's settings in the environment.
struct KindVars {
    base_url: &'static str,
    api_key: &'static str,
    default_url: &'static str,
}

/// The base URL a provider uses (environment, then pactum.toml, then the default) and the
/// key it may send there. pactum.toml and the work orders can come from a pull request, so
/// neither decides on its own where requests go (SPEC §24): a base URL from pactum.toml is
/// used only when the environment confirms committed settings (`PACTUM_TRUST_CONFIG=1`,
/// `--trust-config`), else the provider is refused (`config_unconfirmed`), naming the fix.
/// A key from the environment goes only where the environment confirms: a base URL from
/// the environment, the kind's public default for the kind's own key variable, or a
/// confirmed pactum.toml. Elsewhere the key is withheld (not sent; a refusal says why). A
/// key that would go over plain http to another host is `config_insecure`.
fn route_key(
    provider: &str,
    vars: &KindVars,
    from_env: Option<&Permit<String>>,
    from_file: Option<&str>,
    key: Option<crate::gateway::Secret>,
    key_var: Option<&str>,
    trust: Trust,
) -> Result<KeyRoute> {
    let url = match (from_env, from_file) {
        (Some(env), _) => env.clone(),
        (None, Some(file)) => trust
            .confirm(
                file.to_string(),
                crate::config::FILE_NAME,
                &format!("providers.{provider}.base_url"),
            )
            .map_err(|why| {
                let shown = crate::redact::shown_url(file);
                why.into_error(&format!(
                    "sends provider `{provider}`'s requests to {shown} (or set {}={shown})",
                    vars.base_url
                ))
            })?,
        (None, None) => Permit::pactum(vars.default_url.to_string()),
    };
    let Some(key) = key else { return Ok(KeyRoute { url, key: None, withheld: None }) };
    let var = key_var.unwrap_or(vars.api_key);
    let confirmed =
        from_env.is_some() || trust.is_confirmed() || (from_file.is_none() && var == vars.api_key);
    if !confirmed {
        let shown = crate::redact::shown_url(url.get());
        return Ok(KeyRoute {
            url,
            key: None,
            withheld: Some(format!(
                "the API key in {var} was not sent: pactum.toml's api_key_env names {var} for provider `{provider}` ({shown}), which a pull request can change, and the environment does not confirm it; where you trust this pactum.toml, set {}={shown} or PACTUM_TRUST_CONFIG=1",
                vars.base_url
            )),
        });
    }
    if !crate::config::key_may_go_to(url.get()) {
        let (path, setting) = if from_env.is_some() {
            (vars.base_url.to_string(), vars.base_url.to_string())
        } else {
            (crate::config::FILE_NAME.to_string(), format!("providers.{provider}.base_url"))
        };
        return Err(Error::ConfigInsecure {
            path: path.into(),
            problems: vec![crate::error::Located {
                line: 0,
                column: 0,
                key: setting,
                message: format!(
                    "provider `{provider}` would send its API key to `{}` without https; use an https:// URL, or http:// only to this machine (localhost, 127.0.0.1, [::1])",
                    crate::redact::shown_url(url.get())
                ),
            }],
        });
    }
    Ok(KeyRoute { url, key: Some(key), withheld: None })
}

/// What `run` would refuse about `choice` before building its provider, found on the
/// repository alone (for `submit`'s preflight): a provider name that is neither configured
/// nor built in; an offline provider (scripted, dry-run, a replay that does not record)
/// that does not build — no fixtures or cassette, one that does not load or is outside the
/// project — built here as the run builds it; offline fixtures of an unnamed provider that
/// do not load. A provider that calls a model is not built: its keys and host are the
/// running machine's business.
pub fn check_choice(
    config: &Config,
    root: &Path,
    choice: &ProviderChoice,
    dir: &Path,
) -> Result<()> {
    match (named_by(choice), &choice.fixtures) {
        (Some(name), _) => {
            let settings = settings_of(config, &name)?;
            let offline = match settings.kind.as_str() {
                "scripted" | "dry-run" => true,
                "replay" => settings.mode.as_deref() != Some("record"),
                _ => false,
            };
            if offline {
                let choice = Choice { cli: None, work_order: choice, work_order_dir: dir };
                build(config, root, &name, choice, 0, &mut Vec::new())?;
            }
        }
        (None, Some(fixtures)) => {
            load_fixtures(root, dir, fixtures)?;
        }
        (None, None) => {}
    }
    Ok(())
}

/// The provider a work order names: its `name`, else `replay` when it names a cassette (a
/// cassette is replayed, never ignored).
fn named_by(choice: &ProviderChoice) -> Option<String> {
    choice.name.clone().or_else(|| choice.cassette.as_ref().map(|_| "replay".to_string()))
}

/// A provider name's settings: its `[providers.NAME]` entry, or a built-in kind's defaults.
fn settings_of(config: &Config, name: &str) -> Result<ProviderSettings> {
    match config.providers.get(name) {
        Some(s) => Ok(s.clone()),
        None if KINDS.contains(&name) => {
            Ok(ProviderSettings { kind: name.to_string(), ..Default::default() })
        }
        None => Err(not_configured(
            name,
            format!(
                "unknown provider `{name}`; configure [providers.{name}] in pactum.toml or use one of {}",
                KINDS.join(", ")
            ),
        )),
    }
}

/// A work order's scripted fixtures (relative to its folder `dir`), read inside the project.
fn load_fixtures(
    root: &Path,
    dir: &Path,
    fixtures: &str,
) -> Result<(std::path::PathBuf, ScriptedProvider)> {
    let path = confined_read(&Root::for_document(root, dir), Root::beside(dir, fixtures))?;
    let provider = ScriptedProvider::load(&path, root)?;
    Ok((path, provider))
}

fn build(
    config: &Config,
    root: &Path,
    name: &str,
    choice: Choice<'_>,
    depth: u8,
    notices: &mut Vec<String>,
) -> Result<Arc<dyn Provider>> {
    if depth > 2 {
        return Err(not_configured(name, "record_with points back at a replay provider".into()));
    }
    let settings = settings_of(config, name)?;
    let kind = settings.kind.as_str();
    let model = model_of(config, &settings, choice);
    let key_from = |fallback: &Option<crate::gateway::Secret>| match &settings.api_key_env {
        Some(var) => config.env.named_keys.get(var).cloned(),
        None => fallback.clone(),
    };
    let provider: Arc<dyn Provider> = match kind {
        "openai" => {
            let route = route_key(
                name,
                &KindVars {
                    base_url: "OPENAI_BASE_URL",
                    api_key: "OPENAI_API_KEY",
                    default_url: crate::gateway::openai::DEFAULT_BASE_URL,
                },
                config.env.openai_base_url.as_ref(),
                settings.base_url.as_deref(),
                key_from(&config.env.openai_api_key),
                settings.api_key_env.as_deref(),
                Trust::of(config),
            )?;
            notices.extend(route.withheld.clone());
            Arc::new(OpenAiProvider::new(OpenAiConfig {
                name: name.to_string(),
                base_url: route.url,
                api_key: route.key,
                key_withheld: route.withheld,
                model,
                timeout: timeout(config, crate::gateway::openai::DEFAULT_TIMEOUT),
                retry: retry_policy(config),
                max_completion_tokens: settings.max_completion_tokens.unwrap_or(false),
            }))
        }
        "anthropic" => {
            let route = route_key(
                name,
                &KindVars {
                    base_url: "ANTHROPIC_BASE_URL",
                    api_key: "ANTHROPIC_API_KEY",
                    default_url: crate::gateway::anthropic::DEFAULT_BASE_URL,
                },
                config.env.anthropic_base_url.as_ref(),
                settings.base_url.as_deref(),
                key_from(&config.env.anthropic_api_key),
                settings.api_key_env.as_deref(),
                Trust::of(config),
            )?;
            notices.extend(route.withheld.clone());
            Arc::new(AnthropicProvider::new(AnthropicConfig {
                name: name.to_string(),
                base_url: route.url,
                api_key: route.key,
                key_withheld: route.withheld,
                model,
                timeout: timeout(config, crate::gateway::anthropic::DEFAULT_TIMEOUT),
                retry: retry_policy(config),
                api_version: crate::gateway::anthropic::DEFAULT_API_VERSION.to_string(),
            }))
        }
        "scripted" => {
            let path = match (&choice.work_order.fixtures, &settings.fixtures) {
                (Some(f), _) => confined_read(
                    &Root::for_document(root, choice.work_order_dir),
                    Root::beside(choice.work_order_dir, f),
                )?,
                (None, Some(f)) => confined_read(&Root::new(root), root.join(f))?,
                (None, None) => {
                    return Err(not_configured(
                        name,
                        "the scripted provider needs fixtures: the work order's provider.fixtures or fixtures in pactum.toml".into(),
                    ));
                }
            };
            Arc::new(ScriptedProvider::load(&path, root)?)
        }
        "replay" => {
            let mode = match settings.mode.as_deref() {
                None | Some("replay") => Mode::Replay,
                Some("record") => Mode::Record,
                Some(other) => {
                    return Err(not_configured(
                        name,
                        format!("mode `{other}` is neither replay nor record"),
                    ));
                }
            };
            // A cassette may not exist yet (record mode): checked as a file to write, its
            // folder created when recording.
            let record = mode == Mode::Record;
            let path = match (&choice.work_order.cassette, &settings.cassette) {
                (Some(c), _) => confined_write(
                    &Root::for_document(root, choice.work_order_dir),
                    Root::beside(choice.work_order_dir, c),
                    record,
                )?,
                (None, Some(c)) => confined_write(&Root::new(root), root.join(c), record)?,
                (None, None) => {
                    return Err(not_configured(
                        name,
                        "the replay provider needs a cassette: the work order's provider.cassette or cassette in pactum.toml".into(),
                    ));
                }
            };
            let inner = match (&mode, &settings.record_with) {
                (Mode::Record, Some(with)) => {
                    Some(build(config, root, with, choice, depth + 1, notices)?)
                }
                (Mode::Record, None) => {
                    return Err(not_configured(
                        name,
                        "record mode needs record_with = \"PROVIDER\"".into(),
                    ));
                }
                (Mode::Replay, _) => None,
            };
            // Recordings are keyed on the model: this provider's, else the model of the
            // provider it records with (the same whether recording or replaying).
            let recorded_with = settings
                .record_with
                .as_deref()
                .map(|with| config.providers.get(with).cloned().unwrap_or_default())
                .map(|with| model_of(config, &with, choice));
            let model = Some(model).filter(|m| !m.is_empty()).or(recorded_with);
            Arc::new(ReplayProvider::open(&path, mode, inner)?.with_model(model))
        }
        _ => Arc::new(DryRunProvider),
    };
    Ok(match settings.system_messages {
        Some(false) => Arc::new(WithoutSystemMessages(provider)),
        _ => provider,
    })
}

/// A provider configured with `system_messages = false`: for models whose chat template
/// has no system role, the executor joins the system sections into the user message
/// (SPEC §3.2).
struct WithoutSystemMessages(Arc<dyn Provider>);

impl Provider for WithoutSystemMessages {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn kind(&self) -> &str {
        self.0.kind()
    }

    fn supports_system_messages(&self) -> bool {
        false
    }

    fn default_jobs(&self) -> usize {
        self.0.default_jobs()
    }

    fn is_offline(&self) -> bool {
        self.0.is_offline()
    }

    fn model(&self) -> Option<&str> {
        self.0.model()
    }

    fn complete(&self, request: &PromptRequest) -> Result<ProviderResponse> {
        self.0.complete(request)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    fn choice<'a>(cli: Option<&'a str>, wo: &'a ProviderChoice) -> Choice<'a> {
        Choice { cli, work_order: wo, work_order_dir: Path::new(".") }
    }

    #[test]
    fn nothing_configured_is_offline_dry_run() {
        let config = Config::default();
        let wo = ProviderChoice::default();
        let s = select(&config, Path::new("."), choice(None, &wo)).unwrap();
        assert_eq!(s.provider.name(), "dry-run");
        assert!(s.offline.unwrap().contains("offline"));
    }

    #[test]
    fn precedence_is_cli_then_work_order_then_env_then_file() {
        // Every source names a different provider, so each case shows which one won.
        let mut config = Config::parse(
            "[defaults]\nprovider = \"file\"\n[providers.file]\nkind = \"openai\"\nmodel = \"m\"\n\
             [providers.wo]\nkind = \"openai\"\nmodel = \"m\"\n\
             [providers.env]\nkind = \"openai\"\nmodel = \"m\"\n",
            Path::new("p"),
        )
        .unwrap();
        config.env.provider = Some("env".into());
        let wo = ProviderChoice { name: Some("wo".into()), ..Default::default() };
        let none = ProviderChoice::default();
        let name = |config: &Config, cli, wo| {
            let s = select(config, Path::new("."), choice(cli, wo)).unwrap();
            assert!(s.offline.is_none());
            s.provider.name().to_string()
        };
        assert_eq!(name(&config, Some("anthropic"), &wo), "anthropic", "--provider first");
        assert_eq!(name(&config, None, &wo), "wo", "then the work order");
        assert_eq!(name(&config, None, &none), "env", "then PACTUM_PROVIDER");
        config.env.provider = None;
        assert_eq!(name(&config, None, &none), "file", "then pactum.toml's default");
    }

    #[test]
    fn a_key_goes_only_where_the_environment_confirms() {
        let vars = KindVars {
            base_url: "OPENAI_BASE_URL",
            api_key: "OPENAI_API_KEY",
            default_url: crate::gateway::openai::DEFAULT_BASE_URL,
        };
        let key = || Some(crate::gateway::Secret::new("sk-0123456789"));
        let trust = |t: bool| if t { Trust::confirmed() } else { Trust::none() };
        let env = |url: &str| Permit::environment(url.to_string());
        let sent =
            |env: Option<&Permit<String>>, file: Option<&str>, var: Option<&str>, t: bool| {
                route_key("p", &vars, env, file, key(), var, trust(t)).unwrap().key.is_some()
            };
        let remote = "https://collector.example/v1";
        assert!(sent(None, Some(remote), None, true), "PACTUM_TRUST_CONFIG opts in");
        assert!(sent(Some(&env(remote)), None, None, false), "a host the environment names");
        assert!(sent(None, None, None, false), "the kind's public endpoint, its own key");
        assert!(!sent(None, None, Some("SHOP_API_KEY"), false), "a key pactum.toml chose");
        let withheld =
            route_key("p", &vars, None, None, key(), Some("SHOP_API_KEY"), Trust::none()).unwrap();
        assert!(withheld.withheld.unwrap().contains("OPENAI_BASE_URL=https://api.openai.com/v1"));
        // Plain http elsewhere is refused once the key would go there.
        let e = route_key(
            "p",
            &vars,
            Some(&env("http://10.0.0.1/v1")),
            None,
            key(),
            None,
            Trust::none(),
        );
        assert_eq!(e.err().unwrap().code(), crate::Code::ConfigInsecure);
    }

    #[test]
    fn a_base_url_from_pactum_toml_acts_only_when_the_environment_confirms_it() {
        let vars = KindVars {
            base_url: "OPENAI_BASE_URL",
            api_key: "OPENAI_API_KEY",
            default_url: crate::gateway::openai::DEFAULT_BASE_URL,
        };
        for (file, key) in [
            ("https://collector.example/v1", Some(crate::gateway::Secret::new("sk-0123456789"))),
            ("http://127.0.0.1:8080/v1", None),
        ] {
            let e = route_key("p", &vars, None, Some(file), key.clone(), None, Trust::none())
                .err()
                .unwrap();
            assert_eq!(e.code(), crate::Code::ConfigUnconfirmed);
            let message = e.to_string();
            assert!(message.contains("`providers.p.base_url` in pactum.toml"), "{message}");
            assert!(message.contains("PACTUM_TRUST_CONFIG=1"), "{message}");
            let route =
                route_key("p", &vars, None, Some(file), key, None, Trust::confirmed()).unwrap();
            assert_eq!(route.url.get(), file);
            assert_eq!(route.url.source(), crate::authority::Source::ConfirmedFile);
        }
        // The environment's URL wins and is the environment's.
        let env = Permit::environment("http://127.0.0.1:9/v1".to_string());
        let route = route_key(
            "p",
            &vars,
            Some(&env),
            Some("https://x.example/v1"),
            None,
            None,
            Trust::none(),
        )
        .unwrap();
        assert_eq!(route.url, env);
    }

    #[test]
    fn unknown_names_and_missing_fixtures_are_not_configured() {
        let config = Config::default();
        let wo = ProviderChoice::default();
        let e = select(&config, Path::new("."), choice(Some("gpt"), &wo)).unwrap_err();
        assert_eq!(e.code(), crate::Code::ProviderNotConfigured);
        let e = select(&config, Path::new("."), choice(Some("scripted"), &wo)).unwrap_err();
        assert_eq!(e.code(), crate::Code::ProviderNotConfigured);
    }
}
