//! `pactum registry add|promote|deprecate|remove|verify|log`: the governed lifecycle of
//! contract and pack versions, written atomically under a lock.

use std::path::PathBuf;

use pactum::error::{Error, Result};
use pactum::id::{Pin, Requirement, parse_version};
use pactum::registry::lifecycle::{self, Added};
use pactum::registry::{self, Entry, EntryKind, Registry, store};
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
    /// Register contract or pack files as drafts (or refresh a draft's hash).
    Add {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// draft → active, after the compatibility check against the previous active version.
    Promote { pin: String },
    /// active → deprecated, naming a higher active successor.
    Deprecate {
        pin: String,
        #[arg(long, value_name = "VERSION")]
        successor: String,
    },
    /// deprecated → removed.
    Remove { pin: String },
    /// Check hashes, paths and the history chain.
    Verify,
    /// Print the history, optionally for one id.
    Log { id: Option<String> },
}

fn registry_path(common: &Common, create: bool) -> Result<PathBuf> {
    if let Some(root) = &common.root {
        let path = root.join(registry::FILE_NAME);
        if path.is_file() || create {
            return Ok(path);
        }
    }
    let start = match &common.root {
        Some(root) => root.clone(),
        None => std::env::current_dir().map_err(|e| Error::io(".", e))?,
    };
    registry::find_upwards(&start).ok_or_else(|| Error::Io {
        path: start.join(registry::FILE_NAME),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no registry.json here or above; pass --root DIR to create one there",
        ),
    })
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
    let at = lifecycle::now();
    match &args.action {
        Action::Add { files } => {
            let path = registry_path(&args.common, true)?;
            let added = store::update(&path, |reg| {
                files.iter().map(|f| lifecycle::add(reg, f, &at)).collect::<Result<Vec<_>>>()
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
        Action::Promote { pin } => {
            let (kind, id, version) = exact(pin)?;
            let path = registry_path(&args.common, false)?;
            let p = store::update(&path, |reg| lifecycle::promote(reg, kind, &id, &version, &at))?;
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
            Ok((value, text, OK))
        }
        Action::Deprecate { pin, successor } => {
            let (kind, id, version) = exact(pin)?;
            let successor = parse_version(successor).ok_or_else(|| Error::PinInvalid {
                pin: successor.clone(),
                reason: "--successor needs a version like 1.3.0".into(),
            })?;
            let path = registry_path(&args.common, false)?;
            let e = store::update(&path, |reg| {
                lifecycle::deprecate(reg, kind, &id, &version, &successor, &at)
            })?;
            let mut value = entry_json(&e);
            value["ok"] = json!(true);
            value["action"] = json!("deprecate");
            value["successor_version"] = json!(successor.to_string());
            Ok((value, format!("deprecated {} (successor {successor})\n", e.key()), OK))
        }
        Action::Remove { pin } => {
            let (kind, id, version) = exact(pin)?;
            let path = registry_path(&args.common, false)?;
            let e = store::update(&path, |reg| lifecycle::remove(reg, kind, &id, &version, &at))?;
            let mut value = entry_json(&e);
            value["ok"] = json!(true);
            value["action"] = json!("remove");
            Ok((value, format!("removed {}\n", e.key()), OK))
        }
        Action::Verify => {
            let path = registry_path(&args.common, false)?;
            let reg = Registry::load(&path)?;
            let findings = lifecycle::verify(&reg);
            let name = output::shown(&reg.root, &path);
            let errors: Vec<Value> = findings
                .iter()
                .map(|d| json!({"code": d.code, "pointer": d.pointer, "message": d.message}))
                .collect();
            let ok = findings.iter().all(|d| !d.is_error());
            let history = reg.history.as_ref().map_or(0, Vec::len);
            let mut text = String::new();
            for d in &findings {
                text.push_str(&format!(
                    "{}[{}]: {}: {}\n",
                    d.severity.as_str(),
                    d.code,
                    d.pointer
                        .as_deref()
                        .map(|p| format!("{name}#{p}"))
                        .unwrap_or_else(|| name.clone()),
                    d.message
                ));
            }
            text.push_str(&format!(
                "{}: {} entries, {history} history events: {}\n",
                name,
                reg.entries.len(),
                if ok { "ok" } else { "FAILED" }
            ));
            let mut value = json!({"ok": ok, "entries": reg.entries.len(), "history": history, "errors": errors});
            if let Some(first) = findings.iter().find(|d| d.is_error()) {
                value["code"] = json!(first.code);
                value["message"] = json!(first.message);
            }
            Ok((value, text, if ok { OK } else { FAILED }))
        }
        Action::Log { id } => {
            let path = registry_path(&args.common, false)?;
            let reg = Registry::load(&path)?;
            let events: Vec<&registry::Event> = reg
                .history
                .iter()
                .flatten()
                .filter(|e| id.as_ref().is_none_or(|id| &e.id == id))
                .collect();
            let mut text = String::new();
            for e in &events {
                text.push_str(&format!(
                    "{:>4}  {}  {:<9} {}@{}  {}\n",
                    e.seq,
                    e.at,
                    e.action.as_str(),
                    e.id,
                    e.version,
                    &e.sha256.get(..12).unwrap_or(&e.sha256)
                ));
            }
            if events.is_empty() {
                text.push_str("no history events\n");
            }
            Ok((json!({"ok": true, "events": events}), text, OK))
        }
    }
}
