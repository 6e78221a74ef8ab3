//! `pactum registry add|promote|deprecate|remove|discard|adopt|verify|log|list|merge`: the
//! governed lifecycle of contract and pack versions, written atomically under a lock, and
//! the registry's git merge driver.

use std::path::{Path, PathBuf};

use pactum::error::{Error, Result};
use pactum::id::{Pin, Requirement, parse_version};
use pactum::registry::lifecycle::{self, Added};
use pactum::registry::{self, Entry, EntryKind, Registry, store};
use pactum::terminal::OneLine;
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
    /// Register contract or pack files as drafts (a draft's later edits need no re-adding).
    Add {
        /// Contract or pack files inside the project.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// draft → active, after the compatibility check against the previous active version;
    /// freezes the file's hash.
    Promote {
        /// ID@VERSION, e.g. PRC-SUMMARIZE-001@1.1.0.
        pin: String,
        /// Move this label to the version once it is promoted (e.g. production).
        #[arg(long, value_name = "LABEL")]
        label: Option<String>,
        /// The eval gate: run the contract's eval suites on this version and on the current
        /// active one, refuse a regression (eval_regression), and record the evidence in the
        /// promote event ([gate] eval = true in pactum.toml asks for it on every promotion).
        #[arg(long)]
        eval: bool,
        /// Sign the event with this SSH key (a private key, or a public key an ssh-agent
        /// holds; default: git's user.signingkey), as pactum.toml's [gate] signers asks.
        #[arg(long, value_name = "FILE")]
        sign_key: Option<PathBuf>,
    },
    /// Move a label to a version (`pactum registry label PRC-X-001 production 1.2.0`), or
    /// delete it; pins may name labels (PRC-X-001@production). Moving it back is a rollback.
    Label {
        /// The contract or pack id.
        id: String,
        /// The label: lowercase letters, digits and `-` (production, staging, canary).
        label: String,
        /// The active (or deprecated, within its migration period) version it names.
        #[arg(
            value_name = "VERSION",
            required_unless_present = "delete",
            conflicts_with = "delete"
        )]
        target: Option<String>,
        /// Delete the label instead.
        #[arg(long)]
        delete: bool,
        /// A canary: give VERSION this share (0 to 100 percent) of the label's routed pins,
        /// the label's other targets sharing the rest; 0 takes it out again (a rollback),
        /// 100 makes it the label's one target. A pin on a weighted label picks its target
        /// by a stable hash of the routing key (a work order's route_key, else its id).
        #[arg(long, value_name = "PERCENT", conflicts_with = "delete", value_parser = clap::value_parser!(u32).range(0..=100))]
        weight: Option<u32>,
        /// Sign the event with this SSH key (default: git's user.signingkey), as
        /// pactum.toml's [gate] signers asks.
        #[arg(long, value_name = "FILE")]
        sign_key: Option<PathBuf>,
    },
    /// active → deprecated, naming a higher active successor.
    Deprecate {
        /// ID@VERSION of the active version to deprecate.
        pin: String,
        /// The higher, active version that replaces it.
        #[arg(long, value_name = "VERSION")]
        successor: String,
        /// Sign the event with this SSH key (default: git's user.signingkey), as
        /// pactum.toml's [gate] signers asks.
        #[arg(long, value_name = "FILE")]
        sign_key: Option<PathBuf>,
    },
    /// deprecated → removed. Work orders that still pin it are listed; one whose only
    /// match it is refuses the removal unless --force.
    Remove {
        /// ID@VERSION of a deprecated version.
        pin: String,
        /// Remove it even when a work order's pin would then resolve to nothing.
        #[arg(long)]
        force: bool,
        /// Sign the event with this SSH key (default: git's user.signingkey), as
        /// pactum.toml's [gate] signers asks.
        #[arg(long, value_name = "FILE")]
        sign_key: Option<PathBuf>,
    },
    /// Drop a draft's entry (a draft registered by mistake); only drafts.
    Discard {
        /// ID@VERSION of a draft.
        pin: String,
        /// Also delete the draft's file.
        #[arg(long)]
        delete: bool,
    },
    /// Record the entries of a registry without history as they stand (`adopt` events).
    Adopt,
    /// Check hashes, paths, the history chain and the entries against the history's replay.
    Verify {
        /// Treat warnings (such as registry_history_missing) as errors.
        #[arg(long)]
        strict: bool,
        /// Also check the history against this git revision (a pull request's base): it
        /// must be a prefix of today's, and every event after it is re-derived as
        /// `validate --base` does; each new event is listed.
        #[arg(long, value_name = "REF")]
        base: Option<String>,
    },
    /// Print the history, optionally for one id.
    Log {
        /// Only events about this contract or pack id.
        id: Option<String>,
    },
    /// Every id, its versions and states, the latest active one and who pins each version.
    List {
        /// Only this contract or pack id.
        id: Option<String>,
    },
    /// git merge driver for registry.json (`pactum init` registers it): merges BASE, OURS
    /// and THEIRS into OURS; exit 0 when merged, 1 on a conflict.
    Merge {
        /// The common ancestor's version (git's %O).
        base: PathBuf,
        /// Our version, overwritten with the result (git's %A).
        ours: PathBuf,
        /// Their version (git's %B).
        theirs: PathBuf,
    },
}

/// The key promote, label, deprecate and remove events are signed with: `--sign-key`, else git's
/// `user.signingkey` when pactum.toml's `[gate] signers` asks for signed events; `None` when
/// neither asks. Asked for without a key, a usage error naming both ways.
fn signer(
    registry: &std::path::Path,
    flag: Option<&std::path::Path>,
) -> Result<Option<registry::sign::SigningKey>> {
    if let Some(file) = flag {
        return Ok(Some(registry::sign::SigningKey::File(file.to_path_buf())));
    }
    let root = registry
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let config = pactum::config::Config::load(root)?;
    if config.gate.signers.is_none() {
        return Ok(None);
    }
    match pactum::git::config_get(root, "user.signingkey") {
        Some(key) => Ok(Some(registry::sign::SigningKey::parse(&key))),
        None => Err(pactum::Error::Usage {
            message: "pactum.toml's [gate] signers asks for signed promote, label, deprecate and remove events, and no key is given: pass --sign-key FILE, or set git's user.signingkey (`git config user.signingkey ~/.ssh/id_ed25519.pub`)".into(),
        }),
    }
}

/// Signs the events from `start` on with `signer`, when there is one.
fn sign_new(
    reg: &mut Registry,
    start: usize,
    signer: Option<&registry::sign::SigningKey>,
) -> Result<()> {
    match signer {
        Some(key) => lifecycle::sign_since(reg, start, &|m| registry::sign::sign(key, m)),
        None => Ok(()),
    }
}

/// `registry verify --base REF`: the governance since REF, re-derived with a validate of
/// the project's tree for the gate's findings.
fn review_since(path: &std::path::Path, rev: &str) -> Result<pactum::governance::Review> {
    let project = output::open_project(path)?;
    let root = pactum::confine::real_or_given(&project.root);
    let options = pactum::validate::ValidateOptions {
        registry: Some(path.to_path_buf()),
        names_from: Some(root.clone()),
        ..Default::default()
    };
    let report = pactum::validate::validate(&root, &options, &pactum::validate::NoProgress)?;
    pactum::governance::review(&project, rev, &report, jiff::Timestamp::now())
}

fn registry_path(common: &Common, create: bool) -> Result<PathBuf> {
    if let Some(root) = &common.root {
        // `--root` names the project's folder: its registry.json, never one further up
        // (a registry found above a mistyped --root is another project's).
        let path = root.join(registry::FILE_NAME);
        if pactum::confine::entry_at(&path).is_some() {
            return Ok(path);
        }
        if !pactum::confine::is_dir(root) {
            return Err(Error::not_found(
                root,
                "--root is not a folder; pass the folder that holds the project's registry.json",
            ));
        }
        if create {
            return Ok(path);
        }
        return Err(Error::not_found(
            path,
            "no registry.json in --root (the folder that holds the project's registry.json); \
             create one with `pactum new contract ID`",
        ));
    }
    let start = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    registry::find_upwards(&start).ok_or_else(|| {
        Error::not_found(
            start.join(registry::FILE_NAME),
            if create {
                "no registry.json here or in any folder above; run inside a project, or pass \
                 --root DIR to start a registry in DIR"
            } else {
                "no registry.json here or in any folder above; run inside a project, or pass \
                 --root DIR (the folder that holds its registry.json)"
            },
        )
    })
}

/// The registry `registry add FILE...` writes: `--root`'s, else the one above the files
/// (so the command a finding suggests works from the repository root as well as from the
/// project folder), else the one above the current folder.
fn add_registry_path(common: &Common, files: &[PathBuf]) -> Result<PathBuf> {
    if common.root.is_some() {
        return registry_path(common, true);
    }
    let mut found = files.iter().filter_map(|f| {
        let dir = f.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        registry::find_upwards(dir)
    });
    match found.next() {
        Some(first) => match found.find(|other| other != &first) {
            Some(other) => Err(Error::Usage {
                message: format!(
                    "the files belong to two projects ({} and {}); add each project's files with its own `pactum registry add`",
                    first.display(),
                    other.display()
                ),
            }),
            None => Ok(first),
        },
        None => registry_path(common, true),
    }
}

/// The eval gate of a promotion (SPEC §19, §20), when `--eval` or `[gate] eval = true`
/// asks for it: after the validate gate and the compatibility check (on a copy of the
/// registry, so a bump that would be refused costs no model call), the contract's suites
/// run on the candidate and the current active version. Packs have no suites: `--eval` on
/// a pack is refused, and the configured gate leaves them alone.
fn eval_gate(
    args: &Args,
    path: &Path,
    (kind, id, version): (EntryKind, &str, &semver::Version),
    asked: bool,
    stamp: &lifecycle::Stamp,
) -> Result<Option<crate::cmd::eval::Gated>> {
    let root = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    if kind == EntryKind::PromptPack {
        if asked {
            return Err(Error::PinInvalid {
                pin: format!("{id}@{version}"),
                reason: "--eval evaluates contracts, and a pack has no eval suites: promote the pack, then promote the contracts that bind it with --eval".into(),
            });
        }
        return Ok(None);
    }
    let configured = pactum::config::Config::load(&root)?.gate.eval;
    if !asked && !configured {
        // A suite that evaluates the contract and is not run is said, with how to run it:
        // the promotion carries no evidence about behaviour.
        let suites = pactum::eval::gate::suites_of(&root, id).unwrap_or_default();
        if !suites.is_empty() {
            let names: Vec<&str> = suites.iter().map(|s| s.eval_id.as_str()).collect();
            crate::cmd::eval::note_line(&format!(
                "{} evaluate{} {id} and {} not run: this promotion carries no evidence about behaviour; evaluate first with `pactum eval --contract {id}@{version} --allow-draft`, or promote with --eval (or set [gate] eval = true in pactum.toml)",
                names.join(", "),
                if names.len() == 1 { "s" } else { "" },
                if names.len() == 1 { "was" } else { "were" },
            ));
        }
        return Ok(None);
    }
    lifecycle::promote(&mut Registry::open(path)?, kind, id, version, stamp)?;
    let project = args.common.project()?;
    crate::cmd::eval::promotion_gate(&project, id, version, asked)
}

/// An exact `ID@VERSION` pin.
fn exact(pin: &str) -> Result<(EntryKind, String, semver::Version)> {
    let parsed = Pin::parse(pin)?;
    let Requirement::Exact(version) = parsed.requirement else {
        return Err(Error::PinInvalid {
            pin: pin.to_string(),
            reason: "needs an exact version: ID@1.2.0".into(),
        });
    };
    let kind = EntryKind::of_id(&parsed.id).unwrap_or(EntryKind::Contract);
    Ok((kind, parsed.id, version))
}

/// `production: 1.1.0 -> 1.2.0` for a label move.
fn label_text(m: &lifecycle::LabelMove) -> String {
    match (&m.previous, &m.version) {
        (Some(p), Some(v)) if p == v => {
            format!("label {} of {} already names {v}\n", m.label, m.id)
        }
        (Some(p), Some(v)) => format!("label {} of {}: {p} -> {v}\n", m.label, m.id),
        (None, Some(v)) => format!("label {} of {}: {v}\n", m.label, m.id),
        (Some(p), None) => format!("label {} of {} deleted (it named {p})\n", m.label, m.id),
        (None, None) => String::new(),
    }
}

/// clap makes VERSION required unless --delete; this is the error if it ever is not.
fn unreachable_usage() -> Result<Option<semver::Version>> {
    Err(Error::PinInvalid { pin: String::new(), reason: "give a VERSION, or --delete".into() })
}

fn entry_json(e: &Entry) -> Value {
    json!({
        "kind": e.kind, "id": e.id, "version": e.version.to_string(), "state": e.state.as_str(),
        "path": e.path, "sha256": e.sha256,
    })
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    match run(&args) {
        Ok((value, text, status)) => {
            if json {
                output::print_json(&value);
            } else {
                output::print_text(&text);
            }
            status
        }
        Err(e) => output::fail(&e, json),
    }
}

fn run(args: &Args) -> Result<(Value, String, u8)> {
    let stamp = || -> Result<lifecycle::Stamp> {
        let path = registry_path(&args.common, true)?;
        Ok(output::stamp(path.parent().unwrap_or(Path::new("."))))
    };
    match &args.action {
        Action::Add { files } => {
            let path = add_registry_path(&args.common, files)?;
            let stamp = output::stamp(path.parent().unwrap_or(Path::new(".")));
            let added = store::update(&path, |reg| {
                files.iter().map(|f| lifecycle::add(reg, f, &stamp)).collect::<Result<Vec<_>>>()
            })?;
            let mut text = String::new();
            let mut entries = Vec::new();
            for a in &added {
                let (word, result) = match a {
                    Added::New(_) => ("registered", "new"),
                    Added::Updated(_) => ("refreshed", "updated"),
                    Added::Unchanged(_) => ("unchanged", "unchanged"),
                };
                let e = a.entry();
                text.push_str(&format!(
                    "{word} {} ({}) {} sha256 {}\n",
                    e.key(),
                    e.state.as_str(),
                    e.path,
                    e.sha256
                ));
                let mut v = entry_json(e);
                v["result"] = json!(result);
                entries.push(v);
            }
            Ok((json!({"ok": true, "action": "add", "entries": entries}), text, OK))
        }
        Action::Promote { pin, label, eval, sign_key } => {
            let (kind, id, version) = exact(pin)?;
            let path = registry_path(&args.common, false)?;
            let stamp = stamp()?;
            // The gate (SPEC §20): what `validate` would report once it is active.
            let findings =
                registry::gate::check(&Registry::open(&path)?, kind, &id, &version, &stamp)?;
            if !findings.is_empty() {
                return Err(registry::gate::refusal(format!("{id}@{version}"), findings));
            }
            let gated = eval_gate(args, &path, (kind, &id, &version), *eval, &stamp)?;
            let evidence = gated.as_ref().map(|g| g.evidence.clone());
            let mut moved = None;
            let signer = signer(&path, sign_key.as_deref())?;
            let p = store::update(&path, |reg| {
                let start = reg.history.as_ref().map_or(0, Vec::len);
                let p = lifecycle::promote_with_evidence(
                    reg,
                    kind,
                    &id,
                    &version,
                    &stamp,
                    evidence.clone(),
                )?;
                if let Some(label) = label {
                    moved = Some(lifecycle::label(reg, &id, label, Some(&version), None, &stamp)?);
                }
                sign_new(reg, start, signer.as_ref())?;
                Ok(p)
            })?;
            let against = p.compared_with.as_ref().map(ToString::to_string);
            let text = format!(
                "promoted {} to active{}\n",
                p.entry.key(),
                against
                    .as_ref()
                    .map(|v| format!(
                        " (changes since {v} need a {} bump; declared {})",
                        p.required.as_str(),
                        p.declared.as_str()
                    ))
                    .unwrap_or_default()
            );
            let mut value = entry_json(&p.entry);
            value["ok"] = json!(true);
            value["action"] = json!("promote");
            value["compared_with"] = json!(against);
            value["required_bump"] = json!(p.required);
            value["declared_bump"] = json!(p.declared);
            let mut text = text;
            if let Some(g) = gated {
                text = format!("{}{text}", g.text);
                value["eval"] = g.evidence;
            }
            if let Some(m) = &moved {
                text.push_str(&label_text(m));
                value["label"] = json!(m);
            }
            Ok((value, text, OK))
        }
        Action::Label { id, label, target, delete, weight, sign_key } => {
            let signer = signer(&registry_path(&args.common, false)?, sign_key.as_deref())?;
            let version = match (target, delete) {
                (_, true) => None,
                (Some(v), false) => Some(parse_version(v).ok_or_else(|| Error::PinInvalid {
                    pin: format!("{id}@{v}"),
                    reason: "a label names an exact version like 1.2.0".into(),
                })?),
                (None, false) => unreachable_usage()?,
            };
            let path = registry_path(&args.common, false)?;
            let stamp = stamp()?;
            let root = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            let days = pactum::config::Config::load(&root)?.project.deprecation_days;
            let since = jiff::Timestamp::now()
                .checked_sub(jiff::SignedDuration::from_hours(24 * i64::from(days)))
                .map(|t| t.to_string())
                .ok();
            let m = store::update(&path, |reg| {
                let start = reg.history.as_ref().map_or(0, Vec::len);
                let target = version.as_ref().map(|v| (v, *weight));
                let m =
                    lifecycle::label_weighted(reg, id, label, target, since.as_deref(), &stamp)?;
                sign_new(reg, start, signer.as_ref())?;
                Ok(m)
            })?;
            let mut value = json!({"ok": true, "action": "label"});
            value["label"] = json!(m);
            Ok((value, label_text(&m), OK))
        }
        Action::Deprecate { pin, successor, sign_key } => {
            let (kind, id, version) = exact(pin)?;
            let successor = parse_version(successor).ok_or_else(|| Error::PinInvalid {
                pin: successor.clone(),
                reason: "--successor needs a version like 1.3.0".into(),
            })?;
            let path = registry_path(&args.common, false)?;
            let signer = signer(&path, sign_key.as_deref())?;
            let stamp = stamp()?;
            let e = store::update(&path, |reg| {
                let start = reg.history.as_ref().map_or(0, Vec::len);
                let e = lifecycle::deprecate(reg, kind, &id, &version, &successor, &stamp)?;
                sign_new(reg, start, signer.as_ref())?;
                Ok(e)
            })?;
            let mut value = entry_json(&e);
            value["ok"] = json!(true);
            value["action"] = json!("deprecate");
            value["successor_version"] = json!(successor.to_string());
            Ok((value, format!("deprecated {} (successor {successor})\n", e.key()), OK))
        }
        Action::Remove { pin, force, sign_key } => {
            let (kind, id, version) = exact(pin)?;
            let path = registry_path(&args.common, false)?;
            let signer = signer(&path, sign_key.as_deref())?;
            let stamp = stamp()?;
            let mut pins = Vec::new();
            let e = store::update(&path, |reg| {
                let start = reg.history.as_ref().map_or(0, Vec::len);
                let orders = pactum::work_order::in_project(&reg.root);
                pins = lifecycle::pins_after_removal(reg, kind, &id, &version, &orders);
                // The registry's own rules first; a refusal below writes nothing either.
                let removed = lifecycle::remove(reg, kind, &id, &version, &stamp)?;
                let stranded: Vec<&str> = pins
                    .iter()
                    .filter(|p| p.after.is_none())
                    .map(|p| p.work_order.as_str())
                    .collect();
                if !stranded.is_empty() && !force {
                    return Err(Error::TransitionInvalid {
                        id: id.clone(),
                        version: version.to_string(),
                        action: "remove".into(),
                        reason: format!(
                            "{} {} it and would resolve to nothing; move the pins to another version first, or pass --force",
                            stranded.join(", "),
                            if stranded.len() == 1 { "pins" } else { "pin" }
                        ),
                    });
                }
                sign_new(reg, start, signer.as_ref())?;
                Ok(removed)
            })?;
            let mut value = entry_json(&e);
            value["ok"] = json!(true);
            value["action"] = json!("remove");
            value["pinned_by"] = json!(pins);
            let mut text = format!("removed {}\n", e.key());
            for p in &pins {
                text.push_str(&match &p.after {
                    Some(v) => format!("  {} pins it: now resolves to {v}\n", p.work_order),
                    None => {
                        format!("  {} pins it: now resolves to nothing (--force)\n", p.work_order)
                    }
                });
            }
            Ok((value, text, OK))
        }
        Action::Discard { pin, delete } => {
            let (kind, id, version) = exact(pin)?;
            let path = registry_path(&args.common, false)?;
            let stamp = stamp()?;
            let mut root = None;
            let e = store::update(&path, |reg| {
                let e = lifecycle::discard(reg, kind, &id, &version, &stamp)?;
                // Under the lock, against the registry without the entry: only a file the
                // draft owns may go; otherwise nothing changes.
                if *delete {
                    lifecycle::check_deletable(reg, &e)?;
                }
                root = Some(reg.root.clone());
                Ok(e)
            })?;
            let deleted = match (delete, root) {
                (true, Some(root)) => lifecycle::delete_discarded(&root, &e)?,
                _ => false,
            };
            let mut value = entry_json(&e);
            value["ok"] = json!(true);
            value["action"] = json!("discard");
            value["deleted"] = json!(deleted);
            let text = if deleted {
                format!("discarded {} and deleted {}\n", e.key(), e.path)
            } else {
                format!(
                    "discarded {} (its file {} is still there; `--delete` also deletes it)\n",
                    e.key(),
                    e.path
                )
            };
            Ok((value, text, OK))
        }
        Action::Adopt => {
            let path = registry_path(&args.common, false)?;
            let stamp = stamp()?;
            let n = store::update(&path, |reg| Ok(lifecycle::adopt(reg, &stamp)))?;
            let text = if n == 0 {
                "nothing to adopt: the registry already has a history (or no entries)\n".to_string()
            } else {
                format!("adopted {n} entries: the history now starts with them as they stand\n")
            };
            Ok((json!({"ok": true, "action": "adopt", "adopted": n}), text, OK))
        }
        Action::List { id } => list(args, id.as_deref()),
        Action::Merge { base, ours, theirs } => merge(base, ours, theirs),
        Action::Verify { strict, base } => {
            let path = registry_path(&args.common, false)?;
            let reg = Registry::load(&path)?;
            let mut findings = lifecycle::verify(&reg);
            let name = output::shown(&std::env::current_dir().unwrap_or_default(), &path);
            let review = match base {
                Some(rev) => Some(review_since(&path, rev)?),
                None => None,
            };
            if let Some(review) = &review {
                findings.extend(review.findings(""));
            }
            let errors: Vec<Value> = findings
                .iter()
                .map(|d| json!({"code": d.code, "pointer": d.pointer, "message": d.message}))
                .collect();
            let ok = findings
                .iter()
                .all(|d| !(d.is_error() || (*strict && d.severity == pactum::Severity::Warning)));
            let history = reg.history.as_ref().map_or(0, Vec::len);
            let mut text = String::new();
            // Every finding inside registry.json placed in one pass over its text.
            let pointers: Vec<&str> =
                findings.iter().filter_map(|d| d.pointer.as_deref()).collect();
            let spans = pactum::source::locate_best_many(
                &reg.text,
                pactum::source::Syntax::Json,
                &pointers,
            );
            let offsets: Vec<usize> = spans.iter().map(|s| s.start).collect();
            let index = pactum::source::LineIndex::new(&reg.text);
            let mut placed = index.place_offsets(&reg.text, &offsets).into_iter();
            for d in &findings {
                // `registry.json:LINE:COLUMN: /pointer` for findings inside registry.json.
                let at =
                    match (d.pointer.as_deref(), d.pointer.as_ref().and_then(|_| placed.next())) {
                        (Some(p), Some(at)) => {
                            let (line, column) = (at.line, at.column);
                            if p.is_empty() {
                                format!("{name}:{line}:{column}")
                            } else {
                                format!("{name}:{line}:{column}: {p}")
                            }
                        }
                        _ => name.clone(),
                    };
                text.push_str(&format!(
                    "{}[{}]: {}: {}\n",
                    d.severity.as_str(),
                    d.code,
                    OneLine(&at),
                    OneLine(&d.message)
                ));
                if let Some(help) = &d.help {
                    text.push_str(&format!("  = help: {}\n", OneLine(help)));
                }
            }
            for line in review.iter().flat_map(|r| r.lines()) {
                text.push_str(&format!("{line}\n"));
            }
            text.push_str(&format!(
                "{}: {} entries, {history} history events: {}\n",
                name,
                reg.entries.len(),
                if ok { "ok" } else { "FAILED" }
            ));
            let mut value = json!({"ok": ok, "entries": reg.entries.len(), "history": history, "errors": errors});
            if let Some(review) = &review {
                value["governance"] = review.json();
            }
            if let Some(first) =
                findings.iter().find(|d| d.is_error()).or(findings.first().filter(|_| !ok))
            {
                value["code"] = json!(first.code);
                value["message"] = json!(first.message);
            }
            Ok((value, text, if ok { OK } else { FAILED }))
        }
        Action::Log { id } => {
            let path = registry_path(&args.common, false)?;
            let reg = Registry::load(&path)?;
            if let Some(id) = id {
                known_id(&reg, id)?;
            }
            let events: Vec<&registry::Event> = reg
                .history
                .iter()
                .flatten()
                .filter(|e| id.as_ref().is_none_or(|id| &e.id == id))
                .collect();
            let mut text = String::new();
            for e in &events {
                let line = format!(
                    "{:>4}  {}  {:<9} {:<28} {:<12}  {}{}",
                    e.seq,
                    OneLine(&e.at),
                    e.action.as_str(),
                    OneLine(&e.subject()),
                    OneLine(e.sha256.get(..12).unwrap_or(&e.sha256)),
                    OneLine(e.actor.as_deref().unwrap_or("")),
                    OneLine(&log_detail(e))
                );
                text.push_str(line.trim_end());
                text.push('\n');
            }
            if events.is_empty() {
                text.push_str("no history events\n");
            }
            Ok((json!({"ok": true, "events": events}), text, OK))
        }
    }
}

/// What `registry log` adds to an event's line: which label moved and from where (with
/// a canary's weights), and a deprecation's successor.
fn log_detail(e: &registry::Event) -> String {
    use registry::Action as A;
    match (e.action, &e.label) {
        (A::Labeled, Some(label)) => {
            let mut detail = format!("  label {label}");
            if let Some(previous) = &e.previous {
                detail.push_str(&format!(" (was {previous})"));
            }
            if let Some(weights) = &e.weights {
                let all: Vec<String> = weights.iter().map(|(v, w)| format!("{v} {w}%")).collect();
                detail.push_str(&format!(": {}", all.join(", ")));
            }
            detail
        }
        (A::Unlabeled, Some(label)) => format!("  label {label} deleted"),
        (A::Deprecate, _) => {
            e.successor.as_ref().map_or(String::new(), |s| format!("  successor {s}"))
        }
        _ => String::new(),
    }
}

/// Refuses an id `list` or `log` is asked about that is no id (`pin_invalid`, with the
/// rule) or that the registry has never had (`contract_not_found`, with the closest ids).
fn known_id(reg: &Registry, id: &str) -> Result<()> {
    let Some(kind) = EntryKind::of_id(id) else {
        pactum::id::Pin::parse(id)?;
        return Err(Error::Usage {
            message: format!("`{id}`: name the id alone (such as PRC-NAME-001), without a version"),
        });
    };
    let in_history = reg.history.iter().flatten().any(|e| e.id == id);
    if reg.versions(kind, id).next().is_none() && !in_history {
        return Err(Error::NotFound {
            kind: kind.doc_kind(),
            id: id.to_string(),
            suggestions: pactum::id::suggest(id, reg.ids(kind)),
        });
    }
    Ok(())
}

fn list(args: &Args, only: Option<&str>) -> Result<(Value, String, u8)> {
    let path = registry_path(&args.common, false)?;
    let mut reg = Registry::open(&path)?;
    // A listing places no finding on registry.json's lines: its text is not kept.
    reg.text = String::new();
    if let Some(id) = only {
        known_id(&reg, id)?;
    }
    let work_orders: Vec<_> =
        pactum::work_order::in_project(&reg.root).into_iter().map(|(_, wo)| wo).collect();
    // Each contract version is read for its pack binding alone: the document and the
    // contract are dropped before the next one is read.
    let mut bindings = Vec::new();
    for e in reg
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::Contract && e.state != registry::State::Removed)
    {
        if let Ok(file) = reg.file_of(e)
            && let Ok(doc) = pactum::document::load(&file, Some(pactum::error::DocKind::Contract))
            && let Ok(c) = pactum::contract::Contract::from_document(&doc)
        {
            bindings.push(registry::list::Binding::of(e, &c));
        }
    }
    let rows = registry::list::list(&reg, &work_orders, &bindings, only);
    // The rows own what they show: the registry (its text, entries and history) is given
    // back before the report is built, so the two are never held at once.
    drop((reg, bindings));
    let work_orders = work_orders.len();
    let mut text = String::new();
    for row in &rows {
        let latest = row
            .latest_active
            .as_deref()
            .map(|v| format!("latest active {v}"))
            .unwrap_or_else(|| "no active version".into());
        let labels = if row.labels.is_empty() {
            String::new()
        } else {
            let all: Vec<String> = row.labels.iter().map(|(n, v)| format!("{n} -> {v}")).collect();
            format!("; labels: {}", all.join(", "))
        };
        text.push_str(&format!(
            "{} ({})\n",
            OneLine(&row.id),
            OneLine(&format!("{latest}{labels}"))
        ));
        for v in &row.versions {
            let mut line = format!("  {:<10} {:<10}", v.version, v.state.as_str());
            if let Some(s) = &v.successor_version {
                line.push_str(&format!(" -> {s}"));
            }
            line.push_str(&format!("  {}", OneLine(&v.path)));
            if !v.labels.is_empty() {
                line.push_str(&format!("  [{}]", OneLine(&v.labels.join(", "))));
            }
            if !v.pinned_by.is_empty() {
                line.push_str(&format!("  pinned by {}", OneLine(&v.pinned_by.join(", "))));
            }
            if !v.bound_by.is_empty() {
                line.push_str(&format!("  bound by {}", OneLine(&v.bound_by.join(", "))));
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
    }
    if rows.is_empty() {
        text.push_str(
            "no contracts or packs registered; start with `pactum new contract PRC-NAME-001`\n",
        );
    }
    Ok((json!({"ok": true, "ids": rows, "work_orders": work_orders}), text, OK))
}

/// The merge driver: reads the three versions, writes the merge to OURS (atomically) or
/// nothing on a conflict.
fn merge(base: &Path, ours: &Path, theirs: &Path) -> Result<(Value, String, u8)> {
    let read = |p: &Path| -> Result<String> {
        let bytes = pactum::document::read_limited(p, pactum::document::MAX_REGISTRY_BYTES)?;
        pactum::document::utf8(bytes, p, Some(pactum::error::DocKind::Registry))
    };
    let texts = [read(base)?, read(ours)?, read(theirs)?];
    let stamp = output::stamp(Path::new("."));
    let merged =
        registry::merge::merge([base, ours, theirs], [&texts[0], &texts[1], &texts[2]], &stamp)?;
    store::write_atomic(ours, merged.registry.to_json().as_bytes())?;
    let text = format!(
        "registry.json merged: {} entries; {} of our events and {} of theirs replayed\n",
        merged.registry.entries.len(),
        merged.ours_events,
        merged.theirs_events
    );
    Ok((
        json!({"ok": true, "action": "merge", "entries": merged.registry.entries.len(),
               "ours_events": merged.ours_events, "theirs_events": merged.theirs_events}),
        text,
        OK,
    ))
}
