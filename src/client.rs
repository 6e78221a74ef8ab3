//! The front door for applications (SPEC §25): one [`Client`] per project, whose methods
//! read like the README — open the project, call a contract, run a work order.
//!
//! ```
//! let client = pactum::Client::builder(".")
//!     .provider("dry-run")
//!     .no_ledger()
//!     .build()?;
//! let call = client.call("PRC-CLASSIFY-001@^1", &serde_json::json!({"user_input": "I was charged twice."}))?;
//! assert_eq!(call.contract_id, "PRC-CLASSIFY-001");
//! assert!(call.output["label"].is_string());
//! # Ok::<(), pactum::Error>(())
//! ```
//!
//! A call is an exchange work order built in memory and run by the same [`Runner`] `pactum
//! run` uses: resolve, validate the input (no call when it does not fit), assemble the
//! context, render, call, extract, validate the output, repair, record. The client keeps
//! what it compiled across calls — the project's contracts, validators and compiled packs
//! (cached by file hash), the providers (built once, their HTTP agents reused), the ledger
//! and its secret masker — and is `Send + Sync`: threads share one client. Records are
//! group-committed: synced once when each call ends, before it returns.
//!
//! [`Client::open`] takes its settings from the process environment exactly as `pactum run`
//! does (`OPENAI_API_KEY`, `PACTUM_PROVIDER`, `PACTUM_TRUST_CONFIG`, ...): reading it is the
//! facade's job, and [`Environment::process`] is the one place the library does. A caller
//! that wants no environment gives its own ([`ClientBuilder::environment`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::error::{Code, Error, Result};
use crate::executor::{RunResult, Runner};
use crate::gateway::select::{Choice, ProviderSet};
use crate::gateway::{Provider, Usage};
use crate::ledger::{Durability, Ledger, Location};
use crate::project::Project;
use crate::redact::Redactor;
use crate::resolve::Warning;
use crate::work_order::{ProviderChoice, WorkOrder};

/// The environment a client reads its settings from.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    vars: Vec<(String, String)>,
}

impl Environment {
    /// The process's environment, as `pactum run` reads it.
    #[allow(clippy::disallowed_methods)] // the one door: the facade reads the environment
    pub fn process() -> Environment {
        Environment { vars: std::env::vars().collect() }
    }

    /// Exactly these variables.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Environment {
        Environment { vars: pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect() }
    }

    /// One variable's value.
    pub fn get(&self, name: &str) -> Option<String> {
        self.vars.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    /// The values that are secrets (`*_API_KEY`, `*_TOKEN`, `*_SECRET`), masked everywhere.
    fn secrets(&self) -> impl Iterator<Item = &str> {
        self.vars
            .iter()
            .filter(|(k, v)| {
                !v.is_empty()
                    && (k.ends_with("_API_KEY") || k.ends_with("_TOKEN") || k.ends_with("_SECRET"))
            })
            .map(|(_, v)| v.as_str())
    }
}

/// Where a client's exchanges are recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LedgerChoice {
    /// The project's `.pactum/ledger.jsonl` (the default).
    Project,
    /// A file of the caller's choosing.
    Path(PathBuf),
    /// Nowhere.
    None,
}

/// The provider a client calls.
#[derive(Clone)]
enum ProviderPick {
    /// As `pactum run` chooses (the environment, then pactum.toml; offline when nothing is
    /// configured).
    Chosen,
    /// A name: a `[providers.NAME]` of pactum.toml or a built-in kind.
    Named(String),
    /// A provider the caller built.
    Given(Arc<dyn Provider>),
}

/// Builds a [`Client`].
pub struct ClientBuilder {
    root: PathBuf,
    provider: ProviderPick,
    ledger: LedgerChoice,
    allow_draft: bool,
    env: Option<Environment>,
}

impl ClientBuilder {
    /// Calls go through the provider named `name` (`openai`, `dry-run`, a `[providers.NAME]`
    /// of pactum.toml), as `pactum run --provider NAME`.
    #[must_use]
    pub fn provider(mut self, name: impl Into<String>) -> Self {
        self.provider = ProviderPick::Named(name.into());
        self
    }

    /// Calls go through `provider` (one the caller built: a test double, a custom gateway).
    #[must_use]
    pub fn with_provider(mut self, provider: Arc<dyn Provider>) -> Self {
        self.provider = ProviderPick::Given(provider);
        self
    }

    /// Records every exchange in the ledger at `path` (default: the project's own).
    #[must_use]
    pub fn ledger(mut self, path: impl Into<PathBuf>) -> Self {
        self.ledger = LedgerChoice::Path(path.into());
        self
    }

    /// Records nothing.
    #[must_use]
    pub fn no_ledger(mut self) -> Self {
        self.ledger = LedgerChoice::None;
        self
    }

    /// Where exchanges are recorded.
    #[must_use]
    pub fn ledger_choice(mut self, choice: LedgerChoice) -> Self {
        self.ledger = choice;
        self
    }

    /// Lets drafts resolve (`--allow-draft`).
    #[must_use]
    pub fn allow_draft(mut self, allow: bool) -> Self {
        self.allow_draft = allow;
        self
    }

    /// Reads settings from `env` instead of the process environment.
    #[must_use]
    pub fn environment(mut self, env: Environment) -> Self {
        self.env = Some(env);
        self
    }

    /// Opens the project (the folder of registry.json at or above the root) and builds
    /// the providers and the ledger.
    pub fn build(self) -> Result<Client> {
        let env = self.env.unwrap_or_else(Environment::process);
        let registry = crate::registry::find_upwards(&self.root).ok_or_else(|| {
            Error::not_found(
                self.root.display().to_string(),
                "no registry.json here or in any parent folder; open a project (`pactum init` makes one)",
            )
        })?;
        let mut project = Project::open(&registry)?;
        project.config.apply_env(&|name| env.get(name));
        let redactor = Arc::new(Redactor::new());
        for secret in env.secrets() {
            redactor.add(secret);
        }
        for key in project.config.env.named_keys.values() {
            redactor.add(key.expose());
        }
        // Credentials in the URLs of the environment and of pactum.toml's providers, as the
        // binary learns them.
        let urls = env
            .vars
            .iter()
            .filter(|(k, _)| k.ends_with("_URL") || k.ends_with("_ENDPOINT"))
            .map(|(_, v)| v.as_str())
            .chain(project.config.providers.values().filter_map(|p| p.base_url.as_deref()));
        for url in urls {
            for secret in crate::redact::url_secrets(url) {
                redactor.add(&secret);
            }
        }
        let root = project.root.clone();
        let providers = match &self.provider {
            ProviderPick::Given(p) => ProviderSet::single(p.clone()),
            pick => {
                let cli = match pick {
                    ProviderPick::Named(name) => Some(name.as_str()),
                    _ => None,
                };
                let none = ProviderChoice::default();
                let choice = Choice { cli, work_order: &none, work_order_dir: &root };
                ProviderSet::new(&project.config, &root, choice)?
            }
        };
        let ledger = match &self.ledger {
            LedgerChoice::None => None,
            choice => {
                let location = match choice {
                    LedgerChoice::Path(p) => Location::chosen(p),
                    _ => Location::project(&root),
                };
                Some(
                    Ledger::open(&location)?
                        .naming_from(&root)
                        .redacting(redactor.clone())
                        .with_durability(Durability::Grouped),
                )
            }
        };
        Ok(Client {
            project: Arc::new(project),
            providers,
            ledger,
            allow_draft: self.allow_draft,
            calls: AtomicU64::new(0),
            redactor,
        })
    }
}

/// One call's outcome: the validated output and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The output, validated against the contract's `output_schema` (a string for a text
    /// contract).
    pub output: Value,
    pub contract_id: String,
    pub version: String,
    pub usage: Usage,
    pub warnings: Vec<Warning>,
    /// The exchange's ledger record, when the client records.
    pub ledger_seq: Option<u64>,
    pub ledger_hash: Option<String>,
    /// The provider that answered.
    pub provider: String,
}

/// A project's contracts, callable from an application. See the module docs.
pub struct Client {
    project: Arc<Project>,
    providers: ProviderSet,
    ledger: Option<Ledger>,
    allow_draft: bool,
    calls: AtomicU64,
    redactor: Arc<Redactor>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("root", &self.project.root).finish_non_exhaustive()
    }
}

impl Client {
    /// The project at or above `root`, with providers chosen as `pactum run` chooses them
    /// (the process environment first, then pactum.toml) and the project's ledger.
    pub fn open(root: impl AsRef<Path>) -> Result<Client> {
        Client::builder(root).build()
    }

    /// A builder for the project at or above `root`.
    pub fn builder(root: impl AsRef<Path>) -> ClientBuilder {
        ClientBuilder {
            root: root.as_ref().to_path_buf(),
            provider: ProviderPick::Chosen,
            ledger: LedgerChoice::Project,
            allow_draft: false,
            env: None,
        }
    }

    /// The project.
    pub fn project(&self) -> &Project {
        &self.project
    }

    /// The process's masker: the environment's secrets and every value a contract marks
    /// `x-secret` once a call saw it.
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// Why the client is offline, when it is (nothing named a provider).
    pub fn offline(&self) -> Option<&str> {
        self.providers.selected().offline.as_deref()
    }

    /// Calls the contract `pin` (`PRC-CLASSIFY-001@^1`, an exact version, a label) on
    /// `input`: one exchange, recorded. Fails with the run's main failure
    /// ([`Error::CallFailed`] carries its code and every failure) when the input does not
    /// fit, the provider fails, or no valid output came back after the repairs allowed.
    pub fn call(&self, pin: &str, input: &Value) -> Result<Call> {
        self.call_routed(pin, input, None)
    }

    /// [`Client::call`] with a routing key (a user, a tenant): a pin on a weighted label (a
    /// canary) gives the same key the same version, every call and every process. Without
    /// one, each call is routed by its own id.
    pub fn call_routed(&self, pin: &str, input: &Value, route_key: Option<&str>) -> Result<Call> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("WO-CALL-{}-{n}", std::process::id());
        let mut doc =
            json!({"work_order_id": id, "kind": "exchange", "contract": pin, "input": input});
        if let Some(key) = route_key {
            doc["route_key"] = json!(key);
        }
        let wo = WorkOrder::from_value(&doc, &self.project.root.join("work_orders/call.json"))?;
        let result = self.run(&wo);
        if !result.ok {
            return Err(failure(&result));
        }
        let (contract_id, version) = result
            .contract
            .as_deref()
            .and_then(|c| c.split_once('@'))
            .map(|(id, v)| (id.to_string(), v.to_string()))
            .unwrap_or_default();
        Ok(Call {
            output: result.output.clone().unwrap_or(Value::Null),
            contract_id,
            version,
            usage: result.usage,
            warnings: result.warnings.clone(),
            ledger_seq: result.record.as_ref().map(|r| r.seq),
            ledger_hash: result.record.as_ref().map(|r| r.hash.clone()),
            provider: result.provider.clone(),
        })
    }

    /// Runs a work order (exchange or kernel) as `pactum run` does. Never fails: errors are
    /// in the result.
    pub fn run(&self, wo: &WorkOrder) -> RunResult {
        let runner = Runner {
            project: &self.project,
            providers: self.providers.clone(),
            ledger: self.ledger.as_ref(),
            cycle_log: self.ledger.as_ref(),
            allow_draft: self.allow_draft,
        };
        let result = runner.run(wo);
        if let Some(ledger) = &self.ledger {
            let _ = ledger.commit();
        }
        result
    }

    /// Loads and runs the work order file at `path`.
    pub fn run_file(&self, path: impl AsRef<Path>) -> Result<RunResult> {
        let wo = WorkOrder::load(path.as_ref())?;
        Ok(self.run(&wo))
    }
}

/// The error of a failed run: its main code and message, every failure of it.
fn failure(result: &RunResult) -> Error {
    let code = result
        .code
        .as_deref()
        .and_then(Code::from_name)
        .or_else(|| {
            result
                .errors
                .iter()
                .find_map(|e| e.get("code").and_then(Value::as_str))
                .and_then(Code::from_name)
        })
        .unwrap_or(Code::InternalError);
    let message =
        result.message.clone().unwrap_or_else(|| format!("{} failed", result.work_order_id));
    Error::CallFailed { code, message, errors: result.errors.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn a_client_is_shared_by_threads() {
        assert_send_sync::<Client>();
        assert_send_sync::<Call>();
    }

    #[test]
    fn the_environment_given_is_the_one_read() {
        let env = Environment::from_pairs([
            ("PACTUM_PROVIDER", "dry-run"),
            ("X_API_KEY", "sk-1234567890"),
        ]);
        assert_eq!(env.get("PACTUM_PROVIDER").as_deref(), Some("dry-run"));
        assert_eq!(env.get("HOME"), None);
        assert_eq!(env.secrets().collect::<Vec<_>>(), ["sk-1234567890"]);
    }
}
