//! The one error type of the library and the stable codes it shares with diagnostics.
//!
//! Every failure pactum can report has a [`Code`]: a snake_case string that is part of the
//! interface (SPEC §11). Codes are append-only and never renamed. [`Error::code`] is an
//! exhaustive match, so a new variant cannot compile without choosing its code, and every
//! code has a section in `docs/error-codes.md` and a reproducer in `tests/error_codes.rs`
//! (both checked by a test).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

macro_rules! codes {
    ($( $variant:ident = $text:literal, $sev:ident, $summary:literal; )*) => {
        /// A stable, documented failure code (SPEC §11).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum Code { $( $variant, )* }

        impl Code {
            /// Every code, in documentation order.
            pub const ALL: &'static [Code] = &[ $( Code::$variant, )* ];

            /// The snake_case string that is the code's public name.
            pub fn as_str(self) -> &'static str {
                match self { $( Code::$variant => $text, )* }
            }

            /// The severity a finding with this code has unless a rule says otherwise.
            pub fn default_severity(self) -> Severity {
                match self { $( Code::$variant => Severity::$sev, )* }
            }

            /// One line saying what the code means (used for SARIF rules and docs).
            pub fn summary(self) -> &'static str {
                match self { $( Code::$variant => $summary, )* }
            }

            /// Looks a code up by its public name.
            pub fn from_name(name: &str) -> Option<Code> {
                match name { $( $text => Some(Code::$variant), )* _ => None }
            }
        }
    };
}

impl Code {
    /// The codes of the base review (`--base`, SPEC §24): what a reviewer checks the change
    /// against. No file of the change under review silences them — not a baseline, nor a
    /// file's `x-pactum-ignore`, nor `[lint]` — and a baseline never records them.
    pub fn is_governance(self) -> bool {
        matches!(
            self,
            Code::RegistryHistoryRewritten
                | Code::RegistryEventUnverified
                | Code::RegistryEventUnsigned
                | Code::LedgerRewritten
        )
    }
}

codes! {
    // Files and documents.
    ContractParseError = "contract_parse_error", Error, "a contract, pack or work order file is not valid JSON or YAML";
    ContractSchemaInvalid = "contract_schema_invalid", Error, "a contract does not fit prompt_contract.schema.json, or an embedded schema is not a valid JSON Schema";
    PromptPackInvalid = "prompt_pack_invalid", Error, "a prompt pack does not fit prompt_pack.schema.json or its template does not compile";
    WorkOrderInvalid = "work_order_invalid", Error, "a work order does not fit work_order.schema.json";
    RegistryInvalid = "registry_invalid", Error, "registry.json does not parse or does not fit registry.schema.json";
    ConfigInvalid = "config_invalid", Error, "pactum.toml does not parse or has an unknown or mistyped setting";
    FileTooLarge = "file_too_large", Error, "a file is larger than pactum accepts";
    PathEscape = "path_escape", Error, "a path leaves the project root (.., absolute path or symlink)";
    OutputDirProtected = "output_dir_protected", Error, "a work order's output folder would be the project root, a hidden or governed folder, or a folder pactum did not create";
    SuppressionUnused = "suppression_unused", Warning, "a file's x-pactum-ignore names a code the file has no finding for (or no code at all)";
    NoProject = "no_project", Error, "a path given to validate is in no project: no registry.json above it or below it";
    IoError = "io_error", Error, "a file could not be read or written";
    InputParseError = "input_parse_error", Error, "the input given on the command line is not valid JSON or YAML";
    PinInvalid = "pin_invalid", Error, "an id or an ID@REQUIREMENT pin is malformed";
    UsageError = "usage_error", Error, "the command line has an unknown, missing or malformed argument";
    ConfigInsecure = "config_insecure", Error, "pactum.toml would send an API key over plain http to a remote host, or read a variable that is not an API key";
    ConfigUnconfirmed = "config_unconfirmed", Warning, "a committed setting would start a program, contact a host or send a credential or content, and the environment does not confirm it, so it does not act (a run that needs it stops)";
    SchemaLimitExceeded = "schema_limit_exceeded", Error, "a JSON Schema in a contract would cost too much to evaluate ($ref expansion)";
    SchemaTooCostly = "schema_too_costly", Error, "the cost of a JSON Schema in a contract cannot be bounded (references nested too deep, too many or too large referenced files)";
    ValidationTooCostly = "validation_too_costly", Error, "validating a value against its JSON Schema would cost more than pactum spends on one validation (a large value, a schema that evaluates many subschemas on each part)";
    // Registry and resolution.
    ContractNotFound = "contract_not_found", Error, "no registry entry has this contract id";
    ContractVersionNotFound = "contract_version_not_found", Error, "no usable version of the contract matches the requirement";
    ContractNotActive = "contract_not_active", Error, "the requested version is a draft and drafts are not allowed here";
    ContractDeprecated = "contract_deprecated", Warning, "the resolved version is deprecated; a successor exists";
    ContractHashMismatch = "contract_hash_mismatch", Error, "a file's SHA-256 differs from the one in registry.json";
    ContractIdMismatch = "contract_id_mismatch", Error, "a file's own id or version differs from its registry entry";
    ContractUnregistered = "contract_unregistered", Error, "a contract or pack file has no registry entry";
    PromptPackNotFound = "prompt_pack_not_found", Error, "the prompt pack a contract binds to is not registered or no version matches";
    RegistryFileMissing = "registry_file_missing", Error, "a registry entry points at a file that does not exist";
    RegistryDuplicateEntry = "registry_duplicate_entry", Error, "two registry entries have the same id and version";
    RegistryHistoryBroken = "registry_history_broken", Error, "the registry history does not hash-chain";
    RegistryTransitionInvalid = "registry_transition_invalid", Error, "a lifecycle command is not allowed from the entry's current state";
    RegistryEntryImmutable = "registry_entry_immutable", Error, "an active, deprecated or removed entry cannot be re-registered with different content";
    SuccessorMissing = "successor_missing", Error, "a deprecated entry does not name an existing, higher successor";
    DeprecationPeriodOver = "deprecation_period_over", Warning, "a deprecated version is past its migration period";
    IncompatibleVersionBump = "incompatible_version_bump", Error, "a version bump is smaller than the changes between versions require";
    RegistryHistoryMismatch = "registry_history_mismatch", Error, "a registry entry differs from the state its history implies (a hand edit)";
    RegistryHistoryMissing = "registry_history_missing", Warning, "registry.json has entries but no history to check them against";
    RegistryMergeConflict = "registry_merge_conflict", Error, "two branches changed registry.json in ways that cannot both hold";
    RegistryHistoryRewritten = "registry_history_rewritten", Error, "the registry history of the base revision (--base) is not a prefix of today's: an event of it was changed, dropped or reordered";
    RegistryEventUnverified = "registry_event_unverified", Error, "a registry event after the base revision is not one the command that writes it would have made (a promotion the gate refuses, evidence that does not recompute, a label without its target's hash)";
    RegistryEventUnsigned = "registry_event_unsigned", Error, "the base's [gate] signers require signed promote and label events, and an event after the base has no signature that verifies against an allowed signer";
    ScaffoldPlaceholder = "scaffold_placeholder", Warning, "a contract or pack still holds a placeholder `pactum new contract` wrote for its author to replace (an error once the version is active: promotion refuses it)";
    GeneratedStale = "generated_stale", Warning, "a typed client `pactum generate` wrote (pactum.toml [generate]) no longer matches the contracts it was generated from";
    // Templates.
    TemplateVariableMissing = "template_variable_missing", Error, "a template uses a variable that has no value";
    TemplateVariableUndeclared = "template_variable_undeclared", Error, "a template uses a variable that input_schema does not declare";
    TemplateInputUnused = "template_input_unused", Warning, "input_schema declares a property the template never uses";
    TemplateRenderFailed = "template_render_failed", Error, "a template failed while rendering";
    TemplateLimitExceeded = "template_limit_exceeded", Error, "a template ran out of fuel, recursed too deep or produced too much text";
    SectionNotFound = "section_not_found", Error, "a section key names no section of the pack's tree";
    // One exchange.
    InputSchemaInvalid = "input_schema_invalid", Error, "the input does not fit the contract's input_schema";
    RequiredContextMissing = "required_context_missing", Error, "context the contract requires is neither in the work order's assembled_context nor in the project";
    ContextTruncated = "context_truncated", Warning, "the assembled context was cut to fit constraints.context_budget";
    OutputJsonExtractionFailed = "output_json_extraction_failed", Error, "no JSON value could be extracted from the response";
    OutputSchemaInvalid = "output_schema_invalid", Error, "the extracted output does not fit the contract's output_schema";
    OutputTruncated = "output_truncated", Error, "the provider cut the response off (finish reason length) and no JSON could be extracted";
    OutputExtractionAmbiguous = "output_extraction_ambiguous", Warning, "lenient extraction had to pick one of two plausible readings of the reply";
    ExampleFailed = "example_failed", Error, "a contract example does not give the outcome it expects";
    RepairUnavailable = "repair_unavailable", Warning, "a work order asks for repair attempts but the project has no repair contract, so none will be made";
    ExpectedOutputMissing = "expected_output_missing", Warning, "a file listed in the pack's expected_outputs was not produced";
    BudgetExceeded = "budget_exceeded", Error, "the work order's token budget cannot pay for the next call";
    DisclosureLimitExceeded = "disclosure_limit_exceeded", Error, "the model kept calling tools (open_sections, read_file, section tools) past max_disclosures";
    SecretLimitExceeded = "secret_limit_exceeded", Error, "a run met more values marked x-secret than pactum masks, or finding them cost too much; no exchange starts after it";
    // Providers.
    ProviderError = "provider_error", Error, "the provider answered with an error status";
    ProviderTimeout = "provider_timeout", Error, "the provider did not answer in time";
    ProviderUnreachable = "provider_unreachable", Error, "the provider could not be connected to";
    ProviderRateLimited = "provider_rate_limited", Error, "the provider kept answering 429 Too Many Requests";
    ProviderResponseInvalid = "provider_response_invalid", Error, "the provider's answer is not the JSON its API promises";
    ProviderNotConfigured = "provider_not_configured", Error, "the provider lacks a setting it needs (model, API key, fixtures)";
    ReplayMiss = "replay_miss", Error, "the replay cassette has no recording for this exchange";
    ScriptExhausted = "script_exhausted", Error, "the scripted provider has no response left for this exchange";
    ScriptPromptMismatch = "script_prompt_mismatch", Error, "the prompt lacks text the scripted response for it expects (`expect_prompt`)";
    // Kernel.
    ToolNotFound = "tool_not_found", Error, "a plan step names a tool that is not registered or not allowed";
    ToolInputInvalid = "tool_input_invalid", Error, "a tool call's arguments do not fit the tool's input_schema";
    ToolFailed = "tool_failed", Error, "a tool returned an error";
    ToolNameTaken = "tool_name_taken", Error, "two tool servers, or a server and a built-in or library tool, offer a tool of the same name";
    ToolUnknown = "tool_unknown", Error, "a pack, work order or tool server's allow list names a tool that no built-in and no configured server offers";
    ToolServerFailed = "tool_server_failed", Error, "a tool server from pactum.toml could not be started, did not speak MCP, or stopped answering";
    ToolsLockStale = "tools_lock_stale", Error, "pactum.tools.lock does not match the tool servers: a server lists other tools than the lock records, or the lock is missing or names other servers (`pactum tools lock` writes it again)";
    SupervisorUnrecoverable = "supervisor_unrecoverable", Error, "the supervisor could not repair the model's output";
    TtlExpired = "ttl_expired", Error, "the kernel spent its TTL before converging";
    // Ledger.
    LedgerBroken = "ledger_broken", Error, "a ledger record was edited, removed or reordered";
    LedgerCorrupt = "ledger_corrupt", Error, "a ledger line is not a record in the one form pactum writes (cut off by an interrupted write, over the line budget, not canonical JSON, not a record); nothing is appended after such a last line";
    LedgerRewritten = "ledger_rewritten", Error, "the ledger no longer holds a record whose hash was published (--expect-head, a checkpoint): it was rewritten and re-chained";
    LedgerUnavailable = "ledger_unavailable", Error, "a ledger in PostgreSQL could not be reached, refused the login, did not answer in time, or refused a statement (nothing was written that was not reported written)";
    // Evaluation.
    EvalSuiteInvalid = "eval_suite_invalid", Error, "an eval suite does not fit eval_suite.schema.json, or an assertion in it cannot be checked (a pointer output_schema does not have, a regex that does not compile, a judge without the judge's output shape)";
    EvalDatasetInvalid = "eval_dataset_invalid", Error, "a line of an eval dataset is not a case (id, input, expect, tags), is too long or too deep, or repeats an id; or the dataset cannot be read";
    EvalRegression = "eval_regression", Error, "an evaluated version falls below its suite's thresholds, or answers significantly worse than the version it is compared with (exact McNemar p < 0.05)";
    SemanticRejected = "semantic_rejected", Error, "the judge of a semantic_check rejected an exchange's output (on_fail escalate, or retry with the attempts spent); with on_fail accept, a warning";
    // Queue (SPEC §22).
    QueueUnavailable = "queue_unavailable", Error, "the work-order queue (Redis) could not be reached, refused the login, or did not answer in time";
    QueueProtocolError = "queue_protocol_error", Error, "the queue answered something pactum did not ask for: a reply that is not RESP, too large, of the wrong shape, or a Redis error";
    // Telemetry (SPEC §22).
    OtlpExportFailed = "otlp_export_failed", Error, "`ledger export --otlp`: the OpenTelemetry collector could not be reached, or refused the spans (a run's own export only warns)";
    // Internal.
    InternalError = "internal_error", Error, "pactum hit a bug (a panic); nothing it reported in this run can be trusted as a success";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// What kind of governed document a failure is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DocKind {
    Contract,
    PromptPack,
    WorkOrder,
    Registry,
}

impl DocKind {
    pub fn noun(self) -> &'static str {
        match self {
            DocKind::Contract => "contract",
            DocKind::PromptPack => "prompt pack",
            DocKind::WorkOrder => "work order",
            DocKind::Registry => "registry",
        }
    }
}

/// One failing location inside a document: a JSON pointer and what is wrong there.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Finding {
    pub pointer: String,
    pub message: String,
}

impl Finding {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Finding { pointer: pointer.into(), message: message.into() }
    }
}

/// One problem at a line and column of a text file (`pactum.toml`); line 0 when the
/// setting came from somewhere without lines (an environment variable).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Located {
    pub line: usize,
    pub column: usize,
    /// The dotted key the problem is about (`providers.local.base_url`), if any.
    pub key: String,
    pub message: String,
}

fn list_located(path: &std::path::Path, problems: &[Located]) -> String {
    let all: Vec<String> = problems
        .iter()
        .map(|p| match p.line {
            0 => format!("{}: {}", path.display(), p.message),
            line => format!("{}:{line}:{}: {}", path.display(), p.column, p.message),
        })
        .collect();
    if all.is_empty() { format!("{}: invalid", path.display()) } else { all.join("; ") }
}

/// `text` cut to its first `chars` characters, with `…` when it was longer.
fn shortened(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

fn list_findings(findings: &[Finding]) -> String {
    let shown: Vec<String> = findings
        .iter()
        .take(8)
        .map(|f| {
            let at = if f.pointer.is_empty() { "(root)" } else { f.pointer.as_str() };
            format!("{at}: {}", f.message)
        })
        .collect();
    let mut s = shown.join("; ");
    if findings.len() > 8 {
        s.push_str(&format!("; and {} more", findings.len() - 8));
    }
    s
}

/// How to give a template variable its value: an input, except for the context pactum
/// assembles itself (it never comes from the input, whose schema would refuse it).
fn missing_fix(name: &str) -> &'static str {
    if name == "assembled_context" || name.starts_with("assembled_context.") {
        "it is the context the contract's required_context assembles: render a work order (`pactum render --work-order WO`) so pactum assembles it, or give it in the work order's assembled_context"
    } else {
        "pass it in the input"
    }
}

fn list_diagnostics(findings: &[crate::diagnostic::Diagnostic]) -> String {
    let shown: Vec<String> = findings
        .iter()
        .take(8)
        .map(|d| {
            let at = match (&d.file, d.line) {
                (Some(f), Some(l)) => format!("{f}:{l}: "),
                (Some(f), None) => format!("{f}: "),
                _ => String::new(),
            };
            format!("{at}[{}] {}", d.code, d.message)
        })
        .collect();
    let mut s = shown.join("; ");
    if findings.len() > 8 {
        s.push_str(&format!("; and {} more", findings.len() - 8));
    }
    s
}

fn did_you_mean(suggestions: &[String]) -> String {
    match suggestions {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        many => format!("; did you mean one of {}?", many.join(", ")),
    }
}

/// The other collisions of a [`Error::ToolNameTaken`] ("`read_file` (by A and by B)").
fn also_taken(also: &[String]) -> String {
    if also.is_empty() { String::new() } else { format!("; also taken: {}", also.join(", ")) }
}

fn tool_hint(tool: &str, available: &[String]) -> String {
    if available.is_empty() {
        return "; this run allows no tools".to_string();
    }
    let close: Vec<String> =
        available.iter().filter(|a| crate::id::levenshtein(tool, a) <= 2).cloned().collect();
    format!("{}; available tools: {}", did_you_mean(&close), available.join(", "))
}

fn corrupt_line(path: &Path, line: usize, reason: &str, torn: bool) -> String {
    if torn {
        format!(
            "the last line was cut off by an interrupted write ({reason}); nothing is appended until it is repaired: run `pactum ledger verify {}` to check the records before it, then delete the incomplete line {line} (every record before it stays valid)",
            path.display()
        )
    } else {
        format!(
            "this line is not a ledger record in the one form pactum writes ({reason}); the ledger does not verify, and nothing is appended after such a last line: restore the file from a backup, or keep it as evidence and write to a new one (`pactum run WO --ledger NEW.jsonl`)"
        )
    }
}

fn versions_list(available: &[String]) -> String {
    if available.is_empty() { "none".to_string() } else { available.join(", ") }
}

/// Which way a provider call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderFailure {
    /// An HTTP error status that is not retried, or retries ran out on 5xx.
    Status,
    Timeout,
    Unreachable,
    RateLimited,
    InvalidResponse,
    NotConfigured,
    ReplayMiss,
    ScriptExhausted,
    /// A scripted response's `expect_prompt` text is not in the prompt.
    ScriptPromptMismatch,
}

/// Which way the work-order queue failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueFailure {
    /// Not reachable, the login refused, or no answer in time.
    Unavailable,
    /// A reply that is no RESP, past the size bounds, of the wrong shape, or a Redis error.
    Protocol,
}

/// The library's error. Library code returns it and never panics, prints or exits.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{path}:{line}:{column}: {message}")]
    Parse { path: PathBuf, line: usize, column: usize, message: String, doc: Option<DocKind> },

    #[error("{path}: {} does not fit its schema: {}", doc.noun(), list_findings(findings))]
    SchemaInvalid { doc: DocKind, path: PathBuf, findings: Vec<Finding> },

    /// A stand-alone schema file (`pactum extract --schema`) that is not a valid JSON Schema.
    #[error(
        "{path}: not a valid JSON Schema (draft 2020-12): {}; fix the keywords at these pointers",
        list_findings(findings)
    )]
    SchemaFileInvalid { path: PathBuf, findings: Vec<Finding> },

    /// `pactum.toml` problems, every one with its position (`path` is relative to the
    /// project root).
    #[error("{}", list_located(path, problems))]
    Config { path: PathBuf, problems: Vec<Located> },

    /// `pactum.toml` settings that could leak a secret; every one, with its position.
    #[error("{}", list_located(path, problems))]
    ConfigInsecure { path: PathBuf, problems: Vec<Located> },

    /// A committed setting that would act, not confirmed by the environment
    /// ([`crate::authority`]).
    #[error("{message}")]
    ConfigUnconfirmed { message: String },

    /// The tool lock and the servers disagree.
    #[error("{message}")]
    ToolsLockStale { message: String },

    /// The base's history is not a prefix of today's.
    #[error("registry history is rewritten at event {seq}: {reason}")]
    HistoryRewritten { seq: u64, reason: String },

    /// An event after the base that its command would not have written.
    #[error("registry event {seq} ({action} {pin}) is not verified: {reason}")]
    EventUnverified { seq: u64, action: String, pin: String, reason: String },

    /// An event after the base without a signature of an allowed signer.
    #[error("registry event {seq} ({action} {pin}) is not signed by an allowed signer: {reason}")]
    EventUnsigned { seq: u64, action: String, pin: String, reason: String },

    /// A published ledger head the ledger no longer holds.
    #[error("{message}")]
    LedgerRewritten { message: String },

    /// A call through [`crate::client::Client`] whose run failed: the run's main failure
    /// (its code, SPEC §12) and every failure of it, as the run's `errors` hold them.
    #[error("{message}")]
    CallFailed { code: Code, message: String, errors: Vec<serde_json::Value> },

    /// A user schema whose `$ref`s expand to more than pactum evaluates.
    #[error("{path}: {}", list_findings(findings))]
    SchemaLimit { path: PathBuf, findings: Vec<Finding> },

    /// A user schema whose cost pactum's measure cannot bound.
    #[error("{path}: {}", list_findings(findings))]
    SchemaTooCostly { path: PathBuf, findings: Vec<Finding> },

    /// A value (`what`: an input, an output, a tool's arguments) whose validation would
    /// cost more than the budget of one validation ([`crate::schema::VALIDATION_BUDGET`]).
    #[error("{what}: {detail}")]
    ValidationTooCostly { what: String, detail: String },

    #[error("{path}: file is {size} bytes, more than the {limit}-byte limit")]
    FileTooLarge { path: PathBuf, size: u64, limit: u64 },

    #[error("{path}: {reason}")]
    PathEscape { path: String, reason: String },

    /// A command-line argument pactum refuses (an unknown code in `--select`, say).
    #[error("{message}")]
    Usage { message: String },

    #[error("{} in no project: no registry.json above or below, so nothing was checked; run validate inside a project, or make one with `pactum init`", paths.join(", "))]
    NoProject { paths: Vec<String> },

    #[error("output folder {path} {reason}")]
    OutputDirProtected { path: String, reason: String },

    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },

    #[error("input: {message}")]
    InputParse { message: String },

    #[error("`{pin}` is not a valid pin: {reason}")]
    PinInvalid { pin: String, reason: String },

    #[error("`{id}` is not a valid id: {rule}")]
    IdInvalid { id: String, rule: String },

    #[error("{} {id} is not registered{}", kind.noun(), did_you_mean(suggestions))]
    NotFound { kind: DocKind, id: String, suggestions: Vec<String> },

    #[error("{} {id} has no usable version matching `{requirement}`; available versions: {}", kind.noun(), versions_list(available))]
    VersionNotFound { kind: DocKind, id: String, requirement: String, available: Vec<String> },

    /// `drafts_flag`: the command printing it has `--allow-draft` (see
    /// [`Error::with_allow_draft_hint`]); hints name only flags that exist where printed.
    #[error("{} {id}@{version} is a draft; promote it (`pactum registry promote {id}@{version}`){}", kind.noun(), if *drafts_flag { " or allow drafts (--allow-draft)" } else { "" })]
    NotActive { kind: DocKind, id: String, version: String, drafts_flag: bool },

    #[error(
        "{path}: SHA-256 is {actual} but registry.json says {expected} for {id}@{version}; a promoted version's file never changes: restore it, and put the change in a new version"
    )]
    HashMismatch { path: PathBuf, id: String, version: String, expected: String, actual: String },

    /// A file an active (or deprecated) contract's schemas referenced when it was promoted
    /// has other bytes now, or is gone: the contract's meaning changed.
    #[error(
        "{path}: {} but {id}@{version} was promoted with SHA-256 {expected} for this file, which its schemas reference; a promoted version's meaning never changes: restore the file, and put the change in a new file referenced by a new version",
        match actual { Some(actual) => format!("SHA-256 is {actual}"), None => "the file is gone".to_string() }
    )]
    ReferenceChanged {
        path: PathBuf,
        id: String,
        version: String,
        expected: String,
        actual: Option<String>,
    },

    #[error("{path}: file says {found} but its registry entry is {expected}")]
    IdMismatch { path: PathBuf, expected: String, found: String },

    #[error("{id}@{version}: registry entry points at {path}, which does not exist")]
    RegistryFileMissing { id: String, version: String, path: String },

    #[error("{id}@{version} is already registered")]
    DuplicateEntry { id: String, version: String },

    /// A second file claims an id and version the registry already has from another file.
    #[error(
        "{other} claims {id}@{version}, which is registered ({state}) from {registered}; one version has one file: give {other} a new version, or remove it"
    )]
    ClaimedTwice { id: String, version: String, state: String, registered: String, other: String },

    #[error("registry history is broken at event {seq}: {reason}")]
    HistoryBroken { seq: u64, reason: String },

    #[error("cannot {action} {id}@{version}: {reason}")]
    TransitionInvalid { id: String, version: String, action: String, reason: String },

    #[error(
        "{id}@{version} is {state} and its file changed; an entry never changes once active: register a new version instead"
    )]
    EntryImmutable { id: String, version: String, state: String },

    /// `deprecated`: the entry already is (a finding), not a `deprecate` being refused.
    #[error("{}{successor} {reason}", if *deprecated { format!("{id}@{version} is deprecated but its successor ") } else { format!("cannot deprecate {id}@{version}: the successor ") })]
    SuccessorMissing {
        id: String,
        version: String,
        successor: String,
        reason: String,
        deprecated: bool,
    },

    #[error("{subject}: {reason}")]
    HistoryMismatch { subject: String, reason: String },

    /// The gate of `registry promote` (SPEC §20): what `validate` would report.
    #[error("cannot promote {subject}: validate reports {} error(s) it would have once active: {}; fix them (in the draft, or in the work orders that pin it), run `pactum validate`, and promote again", findings.len(), list_diagnostics(findings))]
    PromotionRefused { subject: String, findings: Vec<crate::diagnostic::Diagnostic> },

    #[error(
        "cannot merge registry.json: {subject}: {reason}; nothing was written: resolve the conflict by hand (see `pactum explain registry_merge_conflict`)"
    )]
    MergeConflict { subject: String, reason: String },

    #[error("{id} {from} -> {to} is a {declared} bump but the changes need {required}: {}; release it as a {required} bump of {from}, or undo the changes", changes.join("; "))]
    IncompatibleBump {
        id: String,
        from: String,
        to: String,
        declared: String,
        required: String,
        changes: Vec<String>,
    },

    #[error("template `{template}` uses `{name}`, which has no value{}; {}", line.map(|l| format!(" (line {l})")).unwrap_or_default(), missing_fix(name))]
    TemplateVariableMissing { template: String, name: String, line: Option<usize> },

    #[error("template `{template}` failed: {message}")]
    TemplateRender { template: String, message: String },

    #[error("template `{template}` exceeded a limit: {message}")]
    TemplateLimit { template: String, message: String },

    #[error(
        "input does not fit {contract}'s input_schema: {}; fix the input at these pointers",
        list_findings(findings)
    )]
    InputSchemaInvalid { contract: String, findings: Vec<Finding> },

    #[error("{contract} requires context that neither the work order's assembled_context gives nor the project holds: {}; add the files under the project root (a framework as frameworks/ID.md), or give them in the work order's assembled_context", missing.join(", "))]
    RequiredContextMissing { contract: String, missing: Vec<String> },

    #[error("no JSON could be extracted from the response (tried: {}){}; make the pack ask for one JSON value, or opt the contract in to `\"extraction\": {{\"repair\": true}}`", methods_tried.join(", "), if detail.is_empty() { String::new() } else { format!("; {detail}") })]
    ExtractionFailed { methods_tried: Vec<String>, detail: String },

    #[error(
        "the provider cut the response off (finish reason `length`) before any JSON was complete; raise boundary.max_tokens"
    )]
    OutputTruncated { methods_tried: Vec<String> },

    #[error("output does not fit {contract}'s output_schema: {}", list_findings(findings))]
    OutputSchemaInvalid { contract: String, value: serde_json::Value, findings: Vec<Finding> },

    #[error(
        "token budget exceeded: this call needs up to {needed} tokens but {remaining} remain; raise the work order's constraints.token_budget or lower the contract's boundary.max_tokens"
    )]
    BudgetExceeded { needed: u64, remaining: u64 },

    #[error(
        "the model called `{tool}` after {max} disclosures, the most this exchange allows; raise the contract's boundary.max_disclosures or the work order's constraints.max_disclosures, or make the summaries say more"
    )]
    DisclosureLimitExceeded { max: u32, tool: String },

    /// The redactor cannot learn every value marked `x-secret` (SPEC §18); it refuses every
    /// later exchange of the process, so none of them is sent or recorded.
    #[error("{message}")]
    SecretLimit { message: String },

    #[error("pack {pack} has no section `{key}`; sections: {}", available.join(", "))]
    SectionNotFound { pack: String, key: String, available: Vec<String> },

    #[error("provider `{provider}`: {message}")]
    Provider {
        provider: String,
        failure: ProviderFailure,
        status: Option<u16>,
        message: String,
        /// Requests sent before giving up (0 when none was sent).
        attempts: u32,
        /// Time from the first request to giving up.
        elapsed: Duration,
    },

    #[error("tool `{tool}` is not available{}", tool_hint(tool, available))]
    ToolNotFound { tool: String, available: Vec<String> },

    #[error("arguments for tool `{tool}` do not fit its input_schema: {}", list_findings(findings))]
    ToolInputInvalid { tool: String, findings: Vec<Finding> },

    #[error("tool `{tool}` failed: {message}")]
    ToolFailed { tool: String, message: String },

    #[error(
        "tool `{tool}` is offered by {first} and by {second}{}; a tool's name must be unique in a run: give the server a `prefix` or `rename` the tool in its [tools.NAME] table of pactum.toml, or leave it out of the server's `allow` list",
        also_taken(also)
    )]
    ToolNameTaken { tool: String, first: String, second: String, also: Vec<String> },

    #[error(
        "{named_by} names tool `{tool}`, which is not among the tools offered{}",
        tool_hint(tool, known)
    )]
    ToolUnknown { tool: String, named_by: String, known: Vec<String> },

    #[error("tool server `{server}`: {message}")]
    ToolServerFailed { server: String, message: String },

    #[error("the supervisor could not repair {what} after {attempts} attempt(s): {last_error}")]
    SupervisorUnrecoverable { what: String, attempts: u32, last_error: String },

    #[error("TTL expired after {cycles} LLM cycle(s) before the plan converged")]
    TtlExpired { cycles: u32 },

    #[error(
        "{path}:{line}: {reason}; a ledger is append-only: restore the file from a backup, or keep it as evidence and write to a new one (`pactum run WO --ledger NEW.jsonl`)"
    )]
    LedgerBroken { path: PathBuf, line: usize, reason: String },

    /// A line that is not a record in the one form pactum writes (`torn`: the last line,
    /// cut off by an interrupted write).
    #[error("{path}:{line}: {}", corrupt_line(path, *line, reason, *torn))]
    LedgerCorrupt { path: PathBuf, line: usize, reason: String, torn: bool },

    /// An eval suite that does not load; every finding at its pointer.
    #[error(
        "{path}: eval suite does not fit eval_suite.schema.json: {}; fix the suite at these pointers",
        list_findings(findings)
    )]
    EvalSuiteInvalid { path: PathBuf, findings: Vec<Finding> },

    /// A line of an eval dataset that is not a case (`line` 0: the file as a whole).
    #[error("{}: {message}", if *line == 0 { path.display().to_string() } else { format!("{}:{line}", path.display()) })]
    EvalDatasetInvalid { path: PathBuf, line: usize, message: String },

    /// An evaluation that failed its suite's bar (`pactum eval`, `registry promote --eval`).
    #[error("{subject}: {}", reasons.join("; "))]
    EvalRegression { subject: String, reasons: Vec<String> },

    /// The judge of a `semantic_check` rejected an output (SPEC §19); `retries`: the
    /// re-asks made before it gave up.
    #[error(
        "the judge {judge} rejected the output by the criteria \"{}\": {reason}{}; make the contract's pack ask for what the criteria want, use a stronger model, or allow re-asks (`\"on_fail\": \"retry\"` with constraints.max_repair_attempts)",
        shortened(criteria, 120),
        if *retries == 0 { String::new() } else { format!(" (after {retries} re-ask(s))") }
    )]
    SemanticRejected { judge: String, criteria: String, reason: String, retries: u32 },

    /// A ledger in PostgreSQL (SPEC §27) could not be used. `ledger` names it without its
    /// password (`postgres://fleet@127.0.0.1:5432/audit`); the password never reaches the
    /// message.
    #[error("ledger {ledger}: {message}")]
    LedgerUnavailable { ledger: String, message: String },

    /// The work-order queue (SPEC §22) failed. `queue` names it without credentials
    /// (`redis://127.0.0.1:6379/0`); a password never reaches the message.
    #[error("queue {queue}: {message}")]
    Queue { queue: String, failure: QueueFailure, message: String },

    /// `ledger export --otlp` could not deliver every span (SPEC §22). `collector` is shown
    /// without credentials or query.
    #[error(
        "the export to {collector} stopped after {delivered} span(s) arrived: {reason}; check that an OpenTelemetry collector listens there (OTLP over HTTP, protobuf) and export again"
    )]
    OtlpExportFailed { collector: String, delivered: u64, reason: String },

    /// A bug: a panic caught at a thread or at the top of the binary.
    #[error("internal error: {message}; this is a bug in pactum, please report it")]
    Internal { message: String },
}

impl Error {
    /// A provider failure with no request behind it (a missing setting, a replay miss, an
    /// exhausted script); see [`Error::with_attempts`] for one after requests.
    pub fn provider(
        provider: impl Into<String>,
        failure: ProviderFailure,
        message: impl Into<String>,
    ) -> Error {
        Error::Provider {
            provider: provider.into(),
            failure,
            status: None,
            message: message.into(),
            attempts: 0,
            elapsed: Duration::ZERO,
        }
    }

    /// For a provider failure: records the requests sent and the time spent before it.
    /// Other errors are returned as they are.
    #[must_use]
    pub fn with_attempts(mut self, sent: u32, spent: Duration) -> Error {
        if let Error::Provider { attempts, elapsed, .. } = &mut self {
            *attempts = sent;
            *elapsed = spent;
        }
        self
    }

    /// For a command that has `--allow-draft`: a draft that does not resolve says the flag
    /// would let it. Other errors are returned as they are.
    #[must_use]
    pub fn with_allow_draft_hint(mut self) -> Error {
        if let Error::NotActive { drafts_flag, .. } = &mut self {
            *drafts_flag = true;
        }
        self
    }

    /// The stable code of this error. Exhaustive: no `_` arm.
    pub fn code(&self) -> Code {
        match self {
            Error::Parse { doc, .. } => match doc {
                Some(DocKind::Registry) => Code::RegistryInvalid,
                // A work order that is no JSON is a work order that does not load, in `run`
                // and `validate` alike; its line and column are the parse error's.
                Some(DocKind::WorkOrder) => Code::WorkOrderInvalid,
                Some(DocKind::Contract | DocKind::PromptPack) | None => Code::ContractParseError,
            },
            Error::SchemaInvalid { doc, .. } => match doc {
                DocKind::Contract => Code::ContractSchemaInvalid,
                DocKind::PromptPack => Code::PromptPackInvalid,
                DocKind::WorkOrder => Code::WorkOrderInvalid,
                DocKind::Registry => Code::RegistryInvalid,
            },
            Error::SchemaFileInvalid { .. } => Code::ContractSchemaInvalid,
            Error::Config { .. } => Code::ConfigInvalid,
            Error::ConfigInsecure { .. } => Code::ConfigInsecure,
            Error::ConfigUnconfirmed { .. } => Code::ConfigUnconfirmed,
            Error::ToolsLockStale { .. } => Code::ToolsLockStale,
            Error::HistoryRewritten { .. } => Code::RegistryHistoryRewritten,
            Error::EventUnverified { .. } => Code::RegistryEventUnverified,
            Error::EventUnsigned { .. } => Code::RegistryEventUnsigned,
            Error::LedgerRewritten { .. } => Code::LedgerRewritten,
            Error::CallFailed { code, .. } => *code,
            Error::SchemaLimit { .. } => Code::SchemaLimitExceeded,
            Error::SchemaTooCostly { .. } => Code::SchemaTooCostly,
            Error::ValidationTooCostly { .. } => Code::ValidationTooCostly,
            Error::FileTooLarge { .. } => Code::FileTooLarge,
            Error::PathEscape { .. } => Code::PathEscape,
            Error::OutputDirProtected { .. } => Code::OutputDirProtected,
            Error::NoProject { .. } => Code::NoProject,
            Error::Usage { .. } => Code::UsageError,
            Error::Io { .. } => Code::IoError,
            Error::InputParse { .. } => Code::InputParseError,
            Error::PinInvalid { .. } | Error::IdInvalid { .. } => Code::PinInvalid,
            Error::NotFound { kind, .. } => match kind {
                DocKind::PromptPack => Code::PromptPackNotFound,
                DocKind::Contract | DocKind::WorkOrder | DocKind::Registry => {
                    Code::ContractNotFound
                }
            },
            Error::VersionNotFound { kind, .. } => match kind {
                DocKind::PromptPack => Code::PromptPackNotFound,
                DocKind::Contract | DocKind::WorkOrder | DocKind::Registry => {
                    Code::ContractVersionNotFound
                }
            },
            Error::NotActive { kind, .. } => match kind {
                DocKind::PromptPack => Code::PromptPackNotFound,
                DocKind::Contract | DocKind::WorkOrder | DocKind::Registry => {
                    Code::ContractNotActive
                }
            },
            Error::HashMismatch { .. } | Error::ReferenceChanged { .. } => {
                Code::ContractHashMismatch
            }
            Error::IdMismatch { .. } => Code::ContractIdMismatch,
            Error::RegistryFileMissing { .. } => Code::RegistryFileMissing,
            Error::DuplicateEntry { .. } | Error::ClaimedTwice { .. } => {
                Code::RegistryDuplicateEntry
            }
            Error::HistoryBroken { .. } => Code::RegistryHistoryBroken,
            Error::TransitionInvalid { .. } => Code::RegistryTransitionInvalid,
            Error::EntryImmutable { .. } => Code::RegistryEntryImmutable,
            Error::SuccessorMissing { .. } => Code::SuccessorMissing,
            Error::IncompatibleBump { .. } => Code::IncompatibleVersionBump,
            Error::HistoryMismatch { .. } => Code::RegistryHistoryMismatch,
            // The gate's main failure is its first finding (SPEC §12); every finding is in
            // the result's `errors`.
            Error::PromotionRefused { findings, .. } => {
                findings.first().map_or(Code::RegistryTransitionInvalid, |d| d.code)
            }
            Error::MergeConflict { .. } => Code::RegistryMergeConflict,
            Error::TemplateVariableMissing { .. } => Code::TemplateVariableMissing,
            Error::TemplateRender { .. } => Code::TemplateRenderFailed,
            Error::TemplateLimit { .. } => Code::TemplateLimitExceeded,
            Error::InputSchemaInvalid { .. } => Code::InputSchemaInvalid,
            Error::RequiredContextMissing { .. } => Code::RequiredContextMissing,
            Error::ExtractionFailed { .. } => Code::OutputJsonExtractionFailed,
            Error::OutputTruncated { .. } => Code::OutputTruncated,
            Error::OutputSchemaInvalid { .. } => Code::OutputSchemaInvalid,
            Error::BudgetExceeded { .. } => Code::BudgetExceeded,
            Error::DisclosureLimitExceeded { .. } => Code::DisclosureLimitExceeded,
            Error::SecretLimit { .. } => Code::SecretLimitExceeded,
            Error::SectionNotFound { .. } => Code::SectionNotFound,
            Error::Provider { failure, .. } => match failure {
                ProviderFailure::Status => Code::ProviderError,
                ProviderFailure::Timeout => Code::ProviderTimeout,
                ProviderFailure::Unreachable => Code::ProviderUnreachable,
                ProviderFailure::RateLimited => Code::ProviderRateLimited,
                ProviderFailure::InvalidResponse => Code::ProviderResponseInvalid,
                ProviderFailure::NotConfigured => Code::ProviderNotConfigured,
                ProviderFailure::ReplayMiss => Code::ReplayMiss,
                ProviderFailure::ScriptExhausted => Code::ScriptExhausted,
                ProviderFailure::ScriptPromptMismatch => Code::ScriptPromptMismatch,
            },
            Error::ToolNotFound { .. } => Code::ToolNotFound,
            Error::ToolInputInvalid { .. } => Code::ToolInputInvalid,
            Error::ToolFailed { .. } => Code::ToolFailed,
            Error::ToolNameTaken { .. } => Code::ToolNameTaken,
            Error::ToolUnknown { .. } => Code::ToolUnknown,
            Error::ToolServerFailed { .. } => Code::ToolServerFailed,
            Error::OtlpExportFailed { .. } => Code::OtlpExportFailed,
            Error::SupervisorUnrecoverable { .. } => Code::SupervisorUnrecoverable,
            Error::TtlExpired { .. } => Code::TtlExpired,
            Error::LedgerBroken { .. } => Code::LedgerBroken,
            Error::LedgerCorrupt { .. } => Code::LedgerCorrupt,
            Error::LedgerUnavailable { .. } => Code::LedgerUnavailable,
            Error::EvalSuiteInvalid { .. } => Code::EvalSuiteInvalid,
            Error::EvalDatasetInvalid { .. } => Code::EvalDatasetInvalid,
            Error::EvalRegression { .. } => Code::EvalRegression,
            Error::SemanticRejected { .. } => Code::SemanticRejected,
            Error::Queue { failure, .. } => match failure {
                QueueFailure::Unavailable => Code::QueueUnavailable,
                QueueFailure::Protocol => Code::QueueProtocolError,
            },
            Error::Internal { .. } => Code::InternalError,
        }
    }

    /// Every individual failure, for errors that carry several (schema findings).
    pub fn findings(&self) -> &[Finding] {
        match self {
            Error::SchemaInvalid { findings, .. }
            | Error::SchemaFileInvalid { findings, .. }
            | Error::InputSchemaInvalid { findings, .. }
            | Error::OutputSchemaInvalid { findings, .. }
            | Error::ToolInputInvalid { findings, .. }
            | Error::SchemaLimit { findings, .. }
            | Error::SchemaTooCostly { findings, .. }
            | Error::EvalSuiteInvalid { findings, .. } => findings,
            _ => &[],
        }
    }

    /// An I/O error on a path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    /// `io_error` for something that is not at `path`, saying in `reason` what was
    /// expected there and how to make it.
    pub fn not_found(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Error::io(path, std::io::Error::new(std::io::ErrorKind::NotFound, reason.into()))
    }

    /// True when a retry with repaired model output could help (SPEC §6.2: output failures
    /// are not terminal).
    pub fn is_output_failure(&self) -> bool {
        matches!(
            self.code(),
            Code::OutputJsonExtractionFailed
                | Code::OutputSchemaInvalid
                | Code::OutputTruncated
                | Code::DisclosureLimitExceeded
        )
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn code_names_are_unique_snake_case_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for &code in Code::ALL {
            let name = code.as_str();
            assert!(seen.insert(name), "duplicate code {name}");
            assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{name}");
            assert_eq!(Code::from_name(name), Some(code));
            assert!(!code.summary().is_empty());
        }
        assert_eq!(Code::from_name("no_such_code"), None);
    }

    #[test]
    fn messages_list_versions_and_suggestions() {
        let e = Error::VersionNotFound {
            kind: DocKind::Contract,
            id: "PRC-A-001".into(),
            requirement: "^3".into(),
            available: vec!["1.0.0".into(), "2.0.0".into()],
        };
        assert_eq!(e.code(), Code::ContractVersionNotFound);
        assert!(e.to_string().contains("available versions: 1.0.0, 2.0.0"));
        let e = Error::NotFound {
            kind: DocKind::Contract,
            id: "PRC-CLASIFY-001".into(),
            suggestions: vec!["PRC-CLASSIFY-001".into()],
        };
        assert!(e.to_string().ends_with("did you mean PRC-CLASSIFY-001?"));
        let e = Error::NotFound {
            kind: DocKind::PromptPack,
            id: "PRM-X-001".into(),
            suggestions: vec![],
        };
        assert_eq!(e.code(), Code::PromptPackNotFound);
    }
}
