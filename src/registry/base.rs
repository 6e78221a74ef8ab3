//! The base is the anchor (SPEC §24): what a change did to the registry's history, checked
//! against a base revision (`validate --base REF`, `registry verify --base REF`).
//!
//! - The history at the base must be a prefix of today's: no event of it changed, dropped
//!   or reordered (`registry_history_rewritten`, naming the first event that differs).
//! - Every event after it is re-derived ([`review`]): a `promote` (or an `adopt` that makes
//!   an entry active) must be one the gate would have allowed — the version validates
//!   without errors, its bump is big enough, and under the base's `[gate] eval = true` its
//!   evidence recomputes; a `labeled` event names an existing target and repeats its
//!   sha256; every event's actor and time are well formed. A failure is
//!   `registry_event_unverified`.
//! - With the base's `[gate] signers`, promote and label events must carry a signature that
//!   verifies against a principal of the base's allowed-signers file
//!   (`registry_event_unsigned`).
//!
//! What decides the gate (`[gate]`, the allowed signers) is read from the base, never from
//! the change under review. The checks that need the rest of pactum (validation, an eval
//! replayed from its cassette) are handed in by the caller ([`Checks`]).

use std::path::Path;

use semver::Version;

use super::{Action, EntryKind, Event, Registry, State};
use crate::config::{Config, GateSettings};
use crate::diagnostic::Diagnostic;
use crate::error::{Code, Error, Result};

/// The base revision's side of the review.
#[derive(Debug)]
pub struct Base {
    /// The revision as given (`origin/main`).
    pub rev: String,
    /// The commit it names.
    pub commit: String,
    /// The base's registry.json (`None`: the base had none, every event is new).
    pub registry: Option<Registry>,
    /// The base's `pactum.toml` (defaults when it had none): its `[gate]` decides.
    pub config: Config,
    /// The base's allowed-signers file, when its `[gate] signers` names one.
    pub signers: Option<Vec<u8>>,
}

fn usage(message: String) -> Error {
    Error::Usage { message }
}

impl Base {
    /// Reads the base `rev` of the project whose registry.json is `registry_path`, from
    /// git: its registry.json, its pactum.toml's settings and the allowed-signers file
    /// those name. A revision git does not know is a `usage_error`.
    pub fn read(registry_path: &Path, rev: &str) -> Result<Base> {
        let dir =
            registry_path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let commit = crate::git::commit_of(dir, rev).ok_or_else(|| {
            usage(format!(
                "--base `{}` is not a commit of the git repository the project is in; give a branch, tag or SHA it has (fetch the base branch first in CI: `git fetch origin main`)",
                crate::terminal::escape_line(rev)
            ))
        })?;
        let name = registry_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| super::FILE_NAME.into());
        let registry = match crate::git::file_at(dir, &commit, &name) {
            // No registry at this path in the base: a project that starts in this change,
            // or one the change moved. A moved project would be read as a base with no
            // history and the default gate, so one elsewhere in the base is refused.
            None => {
                let elsewhere = crate::git::files_named(dir, &commit, &name).unwrap_or_default();
                if let Some(other) = elsewhere.first() {
                    let (rev, other) =
                        (crate::terminal::escape_line(rev), crate::terminal::escape_line(other));
                    return Err(usage(format!(
                        "{rev} has no {name} at this project's path, but has {other}: the project moved in this change, and its base review would see no history and no gate; run --base from the path the project has at {rev} (or land the move first)",
                    )));
                }
                None
            }
            Some(bytes) => {
                let text = String::from_utf8(bytes)
                    .map_err(|_| usage(format!("{name} at {rev} is not UTF-8")))?;
                let sha = crate::digest::sha256_hex(text.as_bytes());
                Some(Registry::from_text(registry_path, text, sha)?)
            }
        };
        let config = match crate::git::file_at(dir, &commit, crate::config::FILE_NAME) {
            None => Config::default(),
            Some(bytes) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let shown = format!("{}@{rev}", crate::config::FILE_NAME);
                Config::parse(&text, Path::new(&shown))?
            }
        };
        let signers = match &config.gate.signers {
            None => None,
            Some(rel) => Some(crate::git::file_at(dir, &commit, rel).ok_or_else(|| {
                usage(format!(
                    "the base's [gate] signers names {rel}, which {rev} does not have; commit the allowed-signers file with the setting"
                ))
            })?),
        };
        Ok(Base { rev: rev.to_string(), commit, registry, config, signers })
    }

    /// The base's `[gate]`.
    pub fn gate(&self) -> &GateSettings {
        &self.config.gate
    }
}

/// The events of `today` after the base's last one; `registry_history_rewritten` when the
/// base's history is not a prefix of today's.
pub fn new_events<'t>(base: &Base, today: &'t Registry) -> Result<&'t [Event]> {
    let empty = Vec::new();
    let theirs = base.registry.as_ref().and_then(|r| r.history.as_ref()).unwrap_or(&empty);
    let ours = today.history.as_deref().unwrap_or(&[]);
    for (i, then) in theirs.iter().enumerate() {
        match ours.get(i) {
            None => {
                return Err(Error::HistoryRewritten {
                    seq: then.seq,
                    reason: format!(
                        "{} has {} events and this tree {}: event {} ({} {}) of {} was dropped",
                        base.rev,
                        theirs.len(),
                        ours.len(),
                        then.seq,
                        then.action.as_str(),
                        then.subject(),
                        base.rev
                    ),
                });
            }
            Some(now) if now != then => {
                return Err(Error::HistoryRewritten {
                    seq: then.seq,
                    reason: format!(
                        "event {} ({} {} at {}) of {} is not event {} here ({} {}); the history {} agreed on is changed, reordered or cut: restore it and add new events after it",
                        then.seq,
                        then.action.as_str(),
                        then.subject(),
                        then.at,
                        base.rev,
                        now.seq,
                        now.action.as_str(),
                        now.subject(),
                        base.rev
                    ),
                });
            }
            Some(_) => {}
        }
    }
    Ok(&ours[theirs.len().min(ours.len())..])
}

/// What the review of one new event found.
#[derive(Clone, Debug, PartialEq)]
pub struct EventReview {
    pub seq: u64,
    pub action: Action,
    /// `ID@VERSION` (a label event: `ID@VERSION` with the label).
    pub subject: String,
    pub actor: String,
    /// `Ok(what was checked)`, or the failure's code and reason.
    pub status: std::result::Result<String, (Code, String)>,
}

impl EventReview {
    /// The one line a reviewer reads.
    pub fn line(&self) -> String {
        let status = match &self.status {
            Ok(checked) => format!("verified ({checked})"),
            Err((code, reason)) => format!("{code}: {reason}"),
        };
        format!(
            "#{} {} {} by {}: {status}",
            self.seq,
            self.action.as_str(),
            crate::terminal::escape_line(&self.subject),
            crate::terminal::escape_line(&self.actor),
        )
    }

    /// The finding for a failed review (`None` when verified).
    pub fn finding(&self, registry_name: &str) -> Option<Diagnostic> {
        let (code, reason) = self.status.as_ref().err()?;
        let error = match code {
            Code::RegistryEventUnsigned => Error::EventUnsigned {
                seq: self.seq,
                action: self.action.as_str().into(),
                pin: self.subject.clone(),
                reason: reason.clone(),
            },
            _ => Error::EventUnverified {
                seq: self.seq,
                action: self.action.as_str().into(),
                pin: self.subject.clone(),
                reason: reason.clone(),
            },
        };
        let help = match code {
            Code::RegistryEventUnsigned => {
                "sign promote, label, deprecate and remove events with a key of an allowed signer (`pactum registry promote ID@VERSION --sign-key FILE`, or git's user.signingkey); the allowed signers are the base's"
            }
            _ => {
                "registry events are made by `pactum registry ...`, which checks what this check re-derives; drop the event (restore registry.json from the base) and make the change with the command"
            }
        };
        Some(
            Diagnostic::new(*code, error.to_string())
                .file(registry_name.to_string())
                .pointer(format!("/history/{}", self.seq - 1))
                .help(help),
        )
    }
}

/// What the review needs from the rest of pactum.
pub struct Checks<'a> {
    pub now: jiff::Timestamp,
    /// The errors that keep `kind id@version` from being promoted in the tree under review
    /// (validation, compatibility): [`super::gate::findings_in`] of a `validate` report.
    pub gate_findings: &'a dyn Fn(EntryKind, &str, &Version) -> Vec<Diagnostic>,
    /// Recomputes the eval evidence of a promote event offline (the base's gate asked for
    /// it): `Ok(what matched)`, or why it does not.
    pub recompute: &'a dyn Fn(&Event) -> std::result::Result<String, String>,
}

/// Reviews every event of `today` after the base (see the module docs). `Err` when the
/// base's history is not a prefix of today's.
pub fn review(base: &Base, today: &Registry, checks: &Checks<'_>) -> Result<Vec<EventReview>> {
    let events = new_events(base, today)?;
    Ok(events.iter().map(|e| review_one(base, today, checks, e)).collect())
}

fn review_one(base: &Base, today: &Registry, checks: &Checks<'_>, e: &Event) -> EventReview {
    let subject = match (&e.label, e.action) {
        (Some(label), Action::Labeled | Action::Unlabeled) => {
            format!("{}@{} ({label})", e.id, e.version)
        }
        _ => e.subject(),
    };
    let status = check_event(base, today, checks, e);
    EventReview {
        seq: e.seq,
        action: e.action,
        subject,
        actor: e.actor.clone().unwrap_or_default(),
        status,
    }
}

fn unverified(reason: String) -> std::result::Result<String, (Code, String)> {
    Err((Code::RegistryEventUnverified, reason))
}

fn check_event(
    base: &Base,
    today: &Registry,
    checks: &Checks<'_>,
    e: &Event,
) -> std::result::Result<String, (Code, String)> {
    match e.actor.as_deref() {
        None | Some("") => return unverified("it names no actor".into()),
        Some(a) if a.chars().any(char::is_control) || a.len() > 256 => {
            return unverified("its actor is not one line of at most 256 characters".into());
        }
        Some(_) => {}
    }
    let at: jiff::Timestamp = match e.at.parse() {
        Ok(at) => at,
        Err(_) => return unverified(format!("its time `{}` is not an RFC 3339 timestamp", e.at)),
    };
    if at > checks.now + jiff::SignedDuration::from_mins(10) {
        return unverified(format!("its time {} is in the future", e.at));
    }
    let signed = e.action.is_signed();
    let mut checked = Vec::new();
    if let Some(allowed) = &base.signers
        && signed
    {
        let Some(signature) = &e.signature else {
            return Err((
                Code::RegistryEventUnsigned,
                format!("it has no signature, and {}'s [gate] signers requires one", base.rev),
            ));
        };
        match super::sign::verify(allowed, signature, &e.signed_message()) {
            Ok(principal) => checked.push(format!("signed by {principal}")),
            Err(why) => {
                return Err((
                    Code::RegistryEventUnsigned,
                    format!("its signature does not verify: {why}"),
                ));
            }
        }
    }
    let kind = EntryKind::of_id(&e.id);
    let version = crate::id::parse_version(&e.version);
    match e.action {
        Action::Promote => {
            let (Some(kind), Some(version)) = (kind, version) else {
                return unverified("it names no registered id and version".into());
            };
            checked.extend(promotion(base, today, checks, e, kind, &version)?);
        }
        Action::Adopt => {
            // Adopting records entries that predate the history: only a history that starts
            // may adopt (`registry adopt`), never a change to one — whatever state it
            // records (an adopted `removed` or `draft` takes a version away as surely as an
            // adopted `active` brings one in).
            if base
                .registry
                .as_ref()
                .is_some_and(|r| r.history.as_ref().is_some_and(|h| !h.is_empty()))
            {
                return unverified(format!(
                    "it adopts {}@{} as {} into a history {} already had; versions change state only through `pactum registry promote`, `deprecate` and `remove`",
                    e.id,
                    e.version,
                    e.state.map_or("?", |s| s.as_str()),
                    base.rev
                ));
            }
            let (Some(kind), Some(version)) = (kind, version) else {
                return unverified("it names no registered id and version".into());
            };
            let before = base.registry.as_ref().and_then(|r| r.get(kind, &e.id, &version));
            match before {
                // An entry the base had: recorded as it stood there.
                Some(entry) if Some(entry.state) == e.state && entry.sha256 == e.sha256 => {
                    checked.push(format!("as {} has it", base.rev));
                }
                Some(entry) => {
                    return unverified(format!(
                        "it records {}@{} as {} with SHA-256 {}, but {} has it {} with {}: an adoption records an entry as it stands",
                        e.id,
                        e.version,
                        e.state.map_or("?", |s| s.as_str()),
                        short(&e.sha256),
                        base.rev,
                        entry.state.as_str(),
                        short(&entry.sha256)
                    ));
                }
                // New since the base: a usable version passes the gate as a promotion does.
                None if matches!(e.state, Some(State::Active | State::Deprecated)) => {
                    checked.extend(promotion(base, today, checks, e, kind, &version)?);
                }
                None => {}
            }
        }
        Action::Labeled => {
            let Some(version) = version else { return unverified("it names no version".into()) };
            let target = kind.and_then(|k| today.get(k, &e.id, &version));
            let Some(target) = target else {
                return unverified(format!("its target {}@{} is not registered", e.id, e.version));
            };
            if target.sha256 != e.sha256 {
                return unverified(format!(
                    "it says {}@{} has SHA-256 {}, but the entry has {}: a label event repeats its target's hash",
                    e.id,
                    e.version,
                    short(&e.sha256),
                    short(&target.sha256)
                ));
            }
            if !matches!(target.state, State::Active | State::Deprecated) {
                return unverified(format!(
                    "its target {}@{} is {}; a label names an active version",
                    e.id,
                    e.version,
                    target.state.as_str()
                ));
            }
            checked.push(format!("target {}@{} with its hash", e.id, e.version));
        }
        Action::Deprecate => {
            let (Some(kind), Some(version)) = (kind, version) else {
                return unverified("it names no registered id and version".into());
            };
            let successor = e.successor.as_deref().and_then(crate::id::parse_version);
            let Some(successor) = successor else {
                return unverified("it names no successor version".into());
            };
            if successor <= version {
                return unverified(format!(
                    "its successor {successor} is not higher than {version}"
                ));
            }
            // The successor was active when `registry deprecate` ran: today it is active,
            // or deprecated since; never a draft, missing or removed.
            match today.get(kind, &e.id, &successor) {
                Some(s) if matches!(s.state, State::Active | State::Deprecated) => {}
                Some(s) => {
                    return unverified(format!(
                        "its successor {} is {}; `registry deprecate` names an active successor",
                        s.key(),
                        s.state.as_str()
                    ));
                }
                None => {
                    return unverified(format!(
                        "its successor {}@{successor} is not registered",
                        e.id
                    ));
                }
            }
            checked.push(format!("successor {}@{successor} active", e.id));
        }
        Action::Remove => {
            let (Some(kind), Some(version)) = (kind, version) else {
                return unverified("it names no registered id and version".into());
            };
            if today.get(kind, &e.id, &version).is_none() {
                return unverified(format!("{} is not registered", e.subject()));
            }
            // As `registry remove` saw it: the version still deprecated, so that what
            // resolves to it (a contract's pack binding) still does.
            let mut before = today.clone();
            let Some(entry) = before
                .entries
                .iter_mut()
                .find(|x| x.kind == kind && x.id == e.id && x.version == version)
            else {
                return unverified(format!("{} is not registered", e.subject()));
            };
            entry.state = State::Deprecated;
            let entry = entry.clone();
            if let Some(reason) = super::lifecycle::removal_blocker(&before, &entry) {
                return unverified(format!("`registry remove` refuses it: {reason}"));
            }
            checked.push("nothing depends on it".into());
        }
        _ => checked.push("well formed".into()),
    }
    if checked.is_empty() {
        checked.push("well formed".into());
    }
    Ok(checked.join("; "))
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// A promotion re-derived: the gate's findings, then the eval evidence when the base asks.
fn promotion(
    base: &Base,
    today: &Registry,
    checks: &Checks<'_>,
    e: &Event,
    kind: EntryKind,
    version: &Version,
) -> std::result::Result<Vec<String>, (Code, String)> {
    let Some(entry) = today.get(kind, &e.id, version) else {
        return unverified(format!("{} is not registered", e.subject())).map(|_| Vec::new());
    };
    if entry.sha256 != e.sha256 {
        return unverified(format!(
            "it froze SHA-256 {}, but the entry has {}",
            short(&e.sha256),
            short(&entry.sha256)
        ))
        .map(|_| Vec::new());
    }
    let findings = (checks.gate_findings)(kind, &e.id, version);
    if let Some(first) = findings.first() {
        return Err((
            Code::RegistryEventUnverified,
            format!(
                "the gate refuses it: {} finding(s), the first {}[{}] in {}: {}",
                findings.len(),
                first.severity.as_str(),
                first.code,
                first.file.as_deref().unwrap_or("?"),
                crate::terminal::escape_line(&first.message)
            ),
        ));
    }
    let mut checked = vec!["validates".to_string(), "compatible bump".to_string()];
    if base.gate().eval && kind == EntryKind::Contract {
        match (checks.recompute)(e) {
            Ok(what) => checked.push(what),
            Err(why) => {
                return unverified(format!("its eval evidence does not hold: {why}"))
                    .map(|_| Vec::new());
            }
        }
    }
    Ok(checked)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::registry::lifecycle::{self, Stamp};

    /// A registry in `dir` with one contract and its pack, registered and promoted.
    fn registry(dir: &Path) -> Registry {
        let write = |rel: &str, doc: serde_json::Value| {
            let path = dir.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, doc.to_string()).unwrap();
            path
        };
        let pack = write(
            "prompt_packs/t/1.0.0.json",
            serde_json::json!({"prompt_pack_id": "PRM-T-001", "version": "1.0.0", "template": "{{ text }}"}),
        );
        let contract = write(
            "contracts/t/1.0.0.json",
            serde_json::json!({"contract_id": "PRC-T-001", "version": "1.0.0", "prompt_pack_id": "PRM-T-001",
                "boundary": {"max_tokens": 10, "temperature": 0},
                "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}),
        );
        let mut r = Registry::empty(&dir.join("registry.json"));
        let at = Stamp::new("2026-01-01T00:00:00Z", "alice@example.com");
        lifecycle::add(&mut r, &pack, &at).unwrap();
        lifecycle::add(&mut r, &contract, &at).unwrap();
        let v = Version::new(1, 0, 0);
        lifecycle::promote(&mut r, EntryKind::PromptPack, "PRM-T-001", &v, &at).unwrap();
        r
    }

    fn base_of(r: &Registry) -> Base {
        let text = r.to_json();
        let sha = crate::digest::sha256_hex(text.as_bytes());
        Base {
            rev: "main".into(),
            commit: "0".repeat(40),
            registry: Some(Registry::from_text(&r.path, text, sha).unwrap()),
            config: Config::default(),
            signers: None,
        }
    }

    fn no_findings(_: EntryKind, _: &str, _: &Version) -> Vec<Diagnostic> {
        Vec::new()
    }

    fn evidence_holds(_: &Event) -> std::result::Result<String, String> {
        Ok("evidence recomputed".into())
    }

    fn checks<'a>(
        gate: &'a dyn Fn(EntryKind, &str, &Version) -> Vec<Diagnostic>,
        recompute: &'a dyn Fn(&Event) -> std::result::Result<String, String>,
    ) -> Checks<'a> {
        Checks { now: "2026-06-01T00:00:00Z".parse().unwrap(), gate_findings: gate, recompute }
    }

    #[test]
    fn the_bases_history_must_be_a_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = registry(dir.path());
        let base = base_of(&r);
        assert!(new_events(&base, &r).unwrap().is_empty());
        let at = Stamp::new("2026-01-02T00:00:00Z", "bob@example.com");
        lifecycle::promote(&mut r, EntryKind::Contract, "PRC-T-001", &Version::new(1, 0, 0), &at)
            .unwrap();
        assert_eq!(new_events(&base, &r).unwrap().len(), 1);
        // An agreed event edited and the chain recomputed: rewritten, named.
        let mut edited = r.clone();
        let history = edited.history.as_mut().unwrap();
        history[1].actor = Some("mallory@example.com".into());
        let tail: Vec<Event> = std::mem::take(history);
        for e in tail {
            lifecycle::chain(history, e);
        }
        let e = new_events(&base, &edited).unwrap_err();
        assert_eq!(e.code(), Code::RegistryHistoryRewritten);
        assert!(e.to_string().contains("event 2 (add PRC-T-001@1.0.0"), "{e}");
        // Cut short: dropped.
        let mut cut = r.clone();
        cut.history.as_mut().unwrap().truncate(1);
        assert!(new_events(&base, &cut).unwrap_err().to_string().contains("was dropped"));
    }

    #[test]
    fn a_promotion_is_what_the_gate_would_allow() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = registry(dir.path());
        let base = base_of(&r);
        let at = Stamp::new("2026-01-02T00:00:00Z", "bob@example.com");
        lifecycle::promote(&mut r, EntryKind::Contract, "PRC-T-001", &Version::new(1, 0, 0), &at)
            .unwrap();
        let reviews = review(&base, &r, &checks(&no_findings, &evidence_holds)).unwrap();
        assert_eq!(reviews.len(), 1);
        assert!(reviews[0].status.is_ok(), "{reviews:?}");
        assert!(
            reviews[0]
                .line()
                .starts_with("#4 promote PRC-T-001@1.0.0 by bob@example.com: verified"),
            "{}",
            reviews[0].line()
        );
        // The gate refuses: unverified, with the first finding.
        let refuse = |_: EntryKind, _: &str, _: &Version| {
            vec![
                Diagnostic::new(Code::ExampleFailed, "an example fails")
                    .file("contracts/t/1.0.0.json"),
            ]
        };
        let reviews = review(&base, &r, &checks(&refuse, &evidence_holds)).unwrap();
        let (code, reason) = reviews[0].status.clone().unwrap_err();
        assert_eq!(code, Code::RegistryEventUnverified);
        assert!(reason.contains("error[example_failed] in contracts/t/1.0.0.json"), "{reason}");
        assert!(
            reviews[0].finding("registry.json").unwrap().pointer.as_deref() == Some("/history/3")
        );
        // The base's gate asks for evidence: it must recompute.
        let mut gated = base_of(&r);
        gated.registry = base.registry.clone();
        gated.config.gate.eval = true;
        let broken =
            |_: &Event| Err("the candidate passes 8 of 8 cases, the evidence says 5".to_string());
        let reviews = review(&gated, &r, &checks(&no_findings, &broken)).unwrap();
        assert!(
            reviews[0].status.clone().unwrap_err().1.contains("evidence does not hold"),
            "{reviews:?}"
        );
    }

    #[test]
    fn label_events_repeat_their_targets_hash_and_actors_are_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = registry(dir.path());
        let at = Stamp::new("2026-01-02T00:00:00Z", "bob@example.com");
        lifecycle::promote(&mut r, EntryKind::Contract, "PRC-T-001", &Version::new(1, 0, 0), &at)
            .unwrap();
        let base = base_of(&r);
        lifecycle::label(
            &mut r,
            "PRC-T-001",
            "production",
            Some(&Version::new(1, 0, 0)),
            None,
            &at,
        )
        .unwrap();
        let ok = review(&base, &r, &checks(&no_findings, &evidence_holds)).unwrap();
        assert!(ok[0].status.is_ok(), "{ok:?}");
        // The same event claiming another hash, re-chained: unverified.
        let mut forged = r.clone();
        let history = forged.history.as_mut().unwrap();
        let mut last = history.pop().unwrap();
        last.sha256 = "f".repeat(64);
        lifecycle::chain(history, last);
        let reviews = review(&base, &forged, &checks(&no_findings, &evidence_holds)).unwrap();
        assert!(
            reviews[0].status.clone().unwrap_err().1.contains("repeats its target's hash"),
            "{reviews:?}"
        );
        // An actor with a line feed: unverified, and the line stays one line.
        let mut forged = r.clone();
        let history = forged.history.as_mut().unwrap();
        let mut last = history.pop().unwrap();
        last.actor = Some("bob\n#9 promote PRC-X-001@9.9.9 by admin: verified".into());
        lifecycle::chain(history, last);
        let reviews = review(&base, &forged, &checks(&no_findings, &evidence_holds)).unwrap();
        assert!(reviews[0].status.is_err());
        assert!(!reviews[0].line().contains('\n'), "{}", reviews[0].line());
    }
}
