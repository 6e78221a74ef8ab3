//! `pactum ledger verify [FILE] [--expect-head HASH]`: checks the hash chain and names the
//! first edited, removed or reordered line; with `--expect-head`, also that the record a
//! previous run ended at is still there (a cut tail would remove it).
//! `pactum ledger query [--event E] [--session S] [--tier T] [--since 24h] [--limit N]`:
//! the matching records newest first, read backwards through the one reader
//! `required_context.ledger_queries` use ([`pactum::ledger::query`]).
//! `pactum ledger export --otlp URL [FILE]`: sends a verified ledger's records as
//! OpenTelemetry spans, the spans its run would have sent with `--otlp` (SPEC §22).
//! `pactum ledger copy FROM TO`: a ledger moved between a JSONL file and PostgreSQL,
//! verified on the way (SPEC §27). Every FILE may be a `postgres://USER@HOST:PORT/DB` URL,
//! and the project's ledger is `[ledger] url` once the environment confirms it.

use std::path::{Path, PathBuf};

use pactum::ledger::Location;
use pactum::terminal::escape_line;
use serde_json::{Value, json};

use crate::output::{self, Common, FAILED, OK};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Verify a ledger file's hash chain.
    Verify {
        /// The ledger (default: the project's .pactum/ledger.jsonl).
        file: Option<PathBuf>,
        /// A record hash the ledger must still contain (the head printed by an earlier
        /// verify); records cut from the end are then detected.
        #[arg(long, value_name = "HASH")]
        expect_head: Option<String>,
    },
    /// Print the head of a verified ledger (its last record's seq and hash): publish it
    /// where a writer of the ledger cannot reach (a CI log, a release note), and check later
    /// with `ledger verify --expect-head HASH` that the ledger still holds it.
    Head {
        /// The ledger (default: the project's .pactum/ledger.jsonl).
        file: Option<PathBuf>,
    },
    /// Append the verified head of the project's ledger, signed with a key of pactum.toml's
    /// [gate] signers, to .pactum/checkpoints.jsonl; `ledger verify` checks every checkpoint.
    Checkpoint {
        /// The SSH key to sign with (default: git's user.signingkey).
        #[arg(long, value_name = "FILE")]
        sign_key: Option<PathBuf>,
    },
    /// Send a ledger's exchanges, tool calls and work orders as OpenTelemetry spans to a
    /// collector (OTLP/HTTP); the ledger is verified first.
    Export {
        /// The ledger (default: the project's .pactum/ledger.jsonl).
        file: Option<PathBuf>,
        /// The collector: its base URL (http://localhost:4318) or its /v1/traces URL.
        #[arg(long, value_name = "URL", required = true)]
        otlp: String,
        /// Put reply text and tool arguments and results (as the ledger holds them, masked)
        /// on the spans; prompts are not in a ledger, only their hashes.
        #[arg(long)]
        otlp_content: bool,
    },
    /// Copy a ledger into another, verifying it on the way: a JSONL file into PostgreSQL
    /// (postgres://USER@HOST:PORT/DB, the password in PGPASSWORD) or back. The target must be
    /// empty or hold a prefix of the source (then only the records after it are copied).
    Copy {
        /// The ledger to copy: a file or postgres://…
        from: PathBuf,
        /// Where to copy it: a file (created) or postgres://… (its table made).
        to: PathBuf,
    },
    /// Show ledger records, newest first (the reader behind required_context.ledger_queries).
    Query {
        /// The ledger (default: the project's .pactum/ledger.jsonl).
        #[arg(long, value_name = "FILE")]
        ledger: Option<PathBuf>,
        /// Only records of this event: exchange, work_order_started, work_order_completed,
        /// work_order_failed, cycle.
        #[arg(long, value_name = "EVENT")]
        event: Option<String>,
        /// Only records of this session_id.
        #[arg(long, value_name = "SESSION")]
        session: Option<String>,
        /// Only records of this tier (records without a tier match too): hot, ho2, ho1.
        #[arg(long, value_name = "TIER")]
        tier: Option<String>,
        /// Only records from this far back: 30m, 24h, 7d.
        #[arg(long, value_name = "AGE", value_parser = parse_since)]
        since: Option<jiff::SignedDuration>,
        /// At most this many records.
        #[arg(long, value_name = "N", default_value_t = 20)]
        limit: usize,
    },
}

fn parse_since(text: &str) -> std::result::Result<jiff::SignedDuration, String> {
    pactum::ledger::query::parse_age(text)
        .ok_or_else(|| format!("`{text}` is not a number and one of s, m, h, d (30m, 24h, 7d)"))
}

/// The ledger a command reads: the one given on the command line (the user's choice: a
/// file wherever it is, or `postgres://…`), else the project's: `[ledger] url` in
/// pactum.toml when the environment confirms committed settings, or `.pactum/ledger.jsonl`
/// under --root or the registry's folder (inside the project, through no symlink).
fn location(file: Option<&Path>, common: &Common) -> pactum::Result<Location> {
    let root = output::root_or_here(common.root.as_deref());
    match file {
        Some(given) => given_ledger(given),
        None => {
            let mut config = pactum::config::Config::load(&root)?;
            config.apply_env(&output::env_lookup);
            project_ledger(&root, &config)
        }
    }
}

/// A ledger named on the command line (`--ledger`, `ledger verify FILE`): a PostgreSQL URL
/// (a flag: the operator named the host; the password from the URL or PGPASSWORD, added to
/// the process's redactor) or a file.
pub fn given_ledger(given: &Path) -> pactum::Result<Location> {
    let text = given.to_string_lossy();
    if !pactum::ledger::postgres::is_url(&text) {
        return Ok(Location::chosen(given));
    }
    #[allow(clippy::disallowed_methods)] // --ledger: the operator named the database
    let permit = pactum::authority::Permit::flag(text.into_owned());
    database(&permit)
}

/// `location` when there is a ledger to read there: a missing file is named as the user
/// knows it (`named`: given on the command line; else the project's, which its first run
/// writes), never as a folder of it that happens to be missing.
pub fn existing(location: Location, named: bool) -> pactum::Result<Location> {
    if location.database_url().is_some() || pactum::confine::entry_at(location.path()).is_some() {
        return Ok(location);
    }
    let shown = output::shown(&std::env::current_dir().unwrap_or_default(), location.path());
    let reason = if named {
        "no such ledger file"
    } else {
        "no ledger yet: a project's ledger is written by its first `pactum run`"
    };
    Err(pactum::Error::not_found(shown, reason))
}

fn database(permit: &pactum::authority::Permit<String>) -> pactum::Result<Location> {
    let password = output::env_lookup("PGPASSWORD")
        .filter(|p| !p.is_empty())
        .map(pactum::gateway::Secret::new);
    let url = pactum::ledger::postgres::Url::parse(permit, password)?;
    if let Some(p) = url.password() {
        output::redactor().add(p);
    }
    Ok(Location::database(url))
}

/// The project's ledger: `[ledger] url` once the environment confirms committed settings
/// (refused otherwise: a pull request could point the ledger at any host), else
/// `.pactum/ledger.jsonl`.
pub fn project_ledger(root: &Path, config: &pactum::config::Config) -> pactum::Result<Location> {
    let Some(url) = &config.ledger.url else { return Ok(Location::project(root)) };
    let shown = pactum::redact::shown_url(url);
    let permit = pactum::authority::Trust::of(config)
        .confirm(url.clone(), "pactum.toml", "ledger.url")
        .map_err(|u| u.into_error(&format!("writes the ledger to {shown}")))?;
    database(&permit)
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let (file, expect_head) = match &args.action {
        Action::Verify { file, expect_head } => (file, expect_head),
        Action::Head { file } => {
            return match location(file.as_deref(), &args.common) {
                Ok(at) => head(&at, json),
                Err(e) => output::fail(&e, json),
            };
        }
        Action::Copy { from, to } => return copy(from, to, json),
        Action::Checkpoint { sign_key } => {
            return checkpoint(&args.common, sign_key.as_deref(), json);
        }
        Action::Export { file, otlp, otlp_content } => {
            return match location(file.as_deref(), &args.common) {
                Ok(at) => export(&at, otlp, *otlp_content, json),
                Err(e) => output::fail(&e, json),
            };
        }
        Action::Query { ledger, event, session, tier, since, limit } => {
            let filter = pactum::ledger::query::Filter {
                event: event.clone(),
                tier: tier.clone(),
                session: session.clone(),
                since: since.map(|age| {
                    jiff::Timestamp::now().checked_sub(age).unwrap_or(jiff::Timestamp::MIN)
                }),
                limit: Some(*limit),
            };
            return match location(ledger.as_deref(), &args.common) {
                Ok(at) => query(&at, &filter, json),
                Err(e) => output::fail(&e, json),
            };
        }
    };
    let location = match location(file.as_deref(), &args.common) {
        Ok(at) => at,
        Err(e) => return output::fail(&e, json),
    };
    let location = match existing(location, file.is_some()) {
        Ok(at) => at,
        Err(e) => return output::fail(&e, json),
    };
    let shown = output::shown(&std::env::current_dir().unwrap_or_default(), location.path());
    // The project's ledger is held to its signed checkpoints too.
    let checkpoints = match file {
        Some(_) => Ok(Vec::new()),
        None => published_heads(&args.common),
    };
    let verified = checkpoints.and_then(|published| {
        let mut heads: Vec<&str> = expect_head.as_deref().into_iter().collect();
        heads.extend(published.iter().map(String::as_str));
        pactum::ledger::verify_heads(&location, &heads)
    });
    match verified {
        Ok(v) => {
            if json {
                output::print_json(&json!({
                    "ok": true, "file": shown, "records": v.records, "last_hash": v.last_hash,
                    "expected_head_line": v.head_line,
                }));
            } else {
                let mut text = format!(
                    "{}: {} records, chain intact (last hash {})\n",
                    escape_line(&shown),
                    v.records,
                    v.last_hash
                );
                if let Some(line) = v.head_line {
                    text.push_str(&format!(
                        "the expected head is record {line}; {} records were appended since\n",
                        v.records - line
                    ));
                }
                output::print_text(&text);
            }
            OK
        }
        Err(e) => {
            let status = output::fail(&e, json);
            if status == output::USAGE { status } else { FAILED }
        }
    }
}

/// The heads of the project's checkpoints, each signature verified against pactum.toml's
/// `[gate] signers` (none without checkpoints; a checkpoint with no signers to check it
/// against is refused).
fn published_heads(common: &crate::output::Common) -> pactum::Result<Vec<String>> {
    let root = output::root_or_here(common.root.as_deref());
    let checkpoints = pactum::ledger::checkpoint::read(&root)?;
    if checkpoints.is_empty() {
        return Ok(Vec::new());
    }
    let allowed = allowed_signers(&root)?;
    pactum::ledger::checkpoint::verified_heads(&checkpoints, &allowed)
}

/// The allowed-signers file pactum.toml's `[gate] signers` names, read.
fn allowed_signers(root: &Path) -> pactum::Result<Vec<u8>> {
    let config = pactum::config::Config::load(root)?;
    let Some(rel) = config.gate.signers else {
        return Err(pactum::Error::Usage {
            message: format!(
                "{} holds signed checkpoints, and pactum.toml names no [gate] signers to check them against; set [gate] signers = \"PATH\" (git's allowed_signers format)",
                pactum::ledger::checkpoint::FILE
            ),
        });
    };
    let path = pactum::confine::Root::new(root)
        .file(Path::new(&rel))
        .map_err(|r| r.into_error(Path::new(&rel)))?;
    pactum::document::read_limited(&path, pactum::document::MAX_FILE_BYTES)
}

/// `pactum ledger copy FROM TO`.
fn copy(from: &Path, to: &Path, json: bool) -> u8 {
    let cwd = std::env::current_dir().unwrap_or_default();
    let copied = given_ledger(from).and_then(|source| {
        let target = given_ledger(to)?;
        if source.database_url().is_none() && pactum::confine::entry_at(source.path()).is_none() {
            let shown = output::shown(&cwd, source.path());
            return Err(pactum::Error::not_found(shown, "no such ledger file"));
        }
        let c = pactum::ledger::copy::copy(&source, &target)?;
        Ok((c, output::shown(&cwd, source.path()), output::shown(&cwd, target.path())))
    });
    match copied {
        Ok((c, from, to)) => {
            if json {
                output::print_json(&json!({
                    "ok": true, "from": from, "to": to, "records": c.records,
                    "copied": c.records - c.already, "last_hash": c.last_hash,
                }));
            } else {
                output::print_text(&format!(
                    "{} -> {}: {} records, chain intact (last hash {}); {} copied, {} already there\n",
                    escape_line(&from),
                    escape_line(&to),
                    c.records,
                    c.last_hash,
                    c.records - c.already,
                    c.already
                ));
            }
            OK
        }
        Err(e) => {
            let status = output::fail(&e, json);
            if status == output::USAGE { status } else { FAILED }
        }
    }
}

/// `pactum ledger head`: the verified head.
fn head(location: &Location, json: bool) -> u8 {
    let shown = output::shown(&std::env::current_dir().unwrap_or_default(), location.path());
    match pactum::ledger::verify(location, None) {
        Ok(v) => {
            if json {
                output::print_json(
                    &json!({"ok": true, "file": shown, "seq": v.records, "hash": v.last_hash}),
                );
            } else {
                output::print_text(&format!("{} {}\n", v.records, v.last_hash));
            }
            OK
        }
        Err(e) => {
            let status = output::fail(&e, json);
            if status == output::USAGE { status } else { FAILED }
        }
    }
}

/// `pactum ledger checkpoint`: the verified head of the project's ledger, signed, kept.
fn checkpoint(common: &crate::output::Common, key: Option<&Path>, json: bool) -> u8 {
    let root = output::root_or_here(common.root.as_deref());
    let done = (|| {
        allowed_signers(&root)?;
        let key = match key {
            Some(file) => pactum::registry::sign::SigningKey::File(file.to_path_buf()),
            None => pactum::git::config_get(&root, "user.signingkey")
                .map(|k| pactum::registry::sign::SigningKey::parse(&k))
                .ok_or_else(|| pactum::Error::Usage {
                    message: "no key to sign the checkpoint with: pass --sign-key FILE, or set git's user.signingkey".into(),
                })?,
        };
        let mut config = pactum::config::Config::load(&root)?;
        config.apply_env(&output::env_lookup);
        let location = project_ledger(&root, &config)?;
        let v = pactum::ledger::verify_heads(&location, &[])?;
        let c = pactum::ledger::checkpoint::Checkpoint::sign(v.records, &v.last_hash, &key)?;
        pactum::ledger::checkpoint::append(&root, &c)?;
        Ok::<_, pactum::Error>(c)
    })();
    match done {
        Ok(c) => {
            if json {
                output::print_json(
                    &json!({"ok": true, "file": pactum::ledger::checkpoint::FILE, "seq": c.seq, "hash": c.hash}),
                );
            } else {
                output::print_text(&format!(
                    "signed the head {} (record {}) into {}\n",
                    c.hash,
                    c.seq,
                    pactum::ledger::checkpoint::FILE
                ));
            }
            OK
        }
        Err(e) => {
            let status = output::fail(&e, json);
            if status == output::USAGE { status } else { FAILED }
        }
    }
}

/// `pactum ledger export --otlp`: the spans of every record, and how many went.
fn export(location: &Location, url: &str, content: bool, json: bool) -> u8 {
    let shown = output::shown(&std::env::current_dir().unwrap_or_default(), location.path());
    let sent = pactum::telemetry::endpoint(url).and_then(|endpoint| {
        crate::telemetry::mask_collector_secrets(&endpoint);
        #[allow(clippy::disallowed_methods)] // --otlp: the operator named the collector
        let endpoint = pactum::authority::Permit::flag(endpoint);
        let settings = pactum::telemetry::Settings {
            content,
            headers: crate::telemetry::env_headers(),
            ..pactum::telemetry::Settings::new(endpoint)
        };
        pactum::telemetry::export(location, &settings, output::redactor().clone())
    });
    match sent {
        Ok(x) => {
            if json {
                output::print_json(&json!({
                    "ok": true, "file": shown, "records": x.records, "spans": x.spans,
                    "collector": x.report.collector, "requests": x.report.requests,
                }));
            } else {
                output::print_text(&format!(
                    "{}: {} records sent as {} spans to {}\n",
                    escape_line(&shown),
                    x.records,
                    x.spans,
                    escape_line(&x.report.collector)
                ));
            }
            OK
        }
        Err(e) => {
            let status = output::fail(&e, json);
            if status == output::USAGE { status } else { FAILED }
        }
    }
}

/// `pactum ledger query`: the records newest first, one line each (or the records as JSON).
/// Every value taken from a record is escaped onto its one line (`terminal::escape_line`):
/// a record cannot print a line of its own.
fn query(location: &Location, filter: &pactum::ledger::query::Filter, json: bool) -> u8 {
    let shown = output::shown(&std::env::current_dir().unwrap_or_default(), location.path());
    let found = match pactum::ledger::query::query(location, filter) {
        Ok(found) => found,
        Err(e) => {
            let status = output::fail(&e, json);
            return if status == output::USAGE { status } else { FAILED };
        }
    };
    if json {
        output::print_json(&json!({"ok": true, "file": shown, "records": found.records}));
        return OK;
    }
    let mut text = String::new();
    for r in &found.records {
        let field = |k: &str| escape_line(r.get(k).and_then(Value::as_str).unwrap_or("-"));
        let contract = match (r.get("contract_id"), r.get("contract_version")) {
            (Some(_), Some(_)) => {
                format!(" {}@{}", field("contract_id"), field("contract_version"))
            }
            _ => String::new(),
        };
        let outcome = r
            .get("verdict")
            .or_else(|| r.get("code"))
            .or_else(|| r.get("status"))
            .and_then(Value::as_str)
            .map(|v| format!(" {}", escape_line(v)))
            .unwrap_or_default();
        let session = r
            .get("session_id")
            .and_then(Value::as_str)
            .map(|s| format!(" session={}", escape_line(s)))
            .unwrap_or_default();
        text.push_str(&format!(
            "{} #{} {} {}{contract}{outcome}{session}\n",
            field("at"),
            r.get("seq").and_then(Value::as_u64).unwrap_or(0),
            escape_line(pactum::ledger::query::event_of(r).unwrap_or("-")),
            field("work_order_id"),
        ));
    }
    if found.records.is_empty() {
        text.push_str(&format!("{}: no matching records\n", escape_line(&shown)));
    }
    output::print_text(&text);
    OK
}
