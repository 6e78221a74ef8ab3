//! `validate --base REF` and `registry verify --base REF` (SPEC §24): the governance change
//! of a pull request, re-derived against its base. [`crate::registry::base`] holds the
//! rules; this module hands them what they need from the layers above the registry — the
//! gate's findings in a `validate` report of the tree under review, and the eval evidence
//! recomputed offline from the recorded cassette — and turns the outcome into findings and
//! the lines a reviewer reads.

use crate::diagnostic::{Diagnostic, Report};
use crate::error::Result;
use crate::project::Project;
use crate::registry::base::{self, Base, Checks, EventReview};

/// What `--base` found.
#[derive(Debug)]
pub struct Review {
    /// The base as given, and the commit it names.
    pub rev: String,
    pub commit: String,
    /// Each event after the base, re-derived.
    pub events: Vec<EventReview>,
    /// `registry_history_rewritten`, when the base's history is not a prefix of today's.
    pub rewritten: Option<crate::Error>,
}

impl Review {
    /// The findings: the rewrite, then every event that is not verified.
    pub fn findings(&self, registry_name: &str) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        if let Some(e) = &self.rewritten {
            out.push(
                Diagnostic::from_error(e)
                    .file(registry_name.to_string())
                    .pointer("/history")
                    .help("the history the base agreed on never changes: restore registry.json's history from the base (`git show BASE:registry.json`) and make the change again with `pactum registry ...`"),
            );
        }
        out.extend(self.events.iter().filter_map(|e| e.finding(registry_name)));
        out
    }

    /// The lines a reviewer reads: a heading, then one line per new event.
    pub fn lines(&self) -> Vec<String> {
        let short = &self.commit[..self.commit.len().min(12)];
        let rev = crate::terminal::escape_line(&self.rev);
        let mut out = vec![match (&self.rewritten, self.events.len()) {
            (Some(_), _) => format!(
                "governance since {rev} ({short}): the base's registry history is rewritten; no event after it is verified"
            ),
            (None, 0) => format!("governance since {rev} ({short}): no new registry event"),
            (None, n) => {
                let failed = self.events.iter().filter(|e| e.status.is_err()).count();
                format!(
                    "governance since {rev} ({short}): {n} new registry event(s), {failed} not verified"
                )
            }
        }];
        out.extend(self.events.iter().map(EventReview::line));
        out
    }

    /// The review as JSON (`"governance"` of `--format json`).
    pub fn json(&self) -> serde_json::Value {
        let events: Vec<serde_json::Value> = self
            .events
            .iter()
            .map(|e| {
                let mut v = serde_json::json!({
                    "seq": e.seq, "action": e.action.as_str(), "subject": e.subject,
                    "actor": e.actor, "verified": e.status.is_ok(),
                });
                match &e.status {
                    Ok(checked) => v["checked"] = checked.clone().into(),
                    Err((code, reason)) => {
                        v["code"] = code.as_str().into();
                        v["reason"] = reason.clone().into();
                    }
                }
                v
            })
            .collect();
        serde_json::json!({
            "base": self.rev, "commit": self.commit,
            "rewritten": self.rewritten.as_ref().map(|e| e.to_string()),
            "events": events,
        })
    }

    /// The review's findings and lines added to a validate report (findings sorted in).
    pub fn add_to(&self, report: &mut Report, registry_name: &str) {
        report.diagnostics.extend(self.findings(registry_name));
        report.notes.extend(self.lines());
        report.sort();
    }
}

/// Reviews the registry history of `project` after `rev`, with `report` (a `validate` of
/// the project's tree, named from its git top level) for the gate's findings. `Err` when
/// the base cannot be read (not a commit, a base registry that does not load).
pub fn review(
    project: &Project,
    rev: &str,
    report: &Report,
    now: jiff::Timestamp,
) -> Result<Review> {
    let base = Base::read(&project.registry.path, rev)?;
    let registry = &project.registry;
    let gate = |kind, id: &str, version: &semver::Version| {
        crate::registry::gate::findings_in(report, registry, kind, id, version, true)
    };
    let dir = project.root.clone();
    let base_tree = crate::eval::gate::BaseTree {
        file: &|rel: &str| crate::git::file_at(&dir, &base.commit, rel),
        files_under: &|folder: &str| crate::git::files_under(&dir, &base.commit, folder),
    };
    let recompute = |event: &crate::registry::Event| {
        crate::eval::gate::recompute(project, &base.config, &base_tree, event)
    };
    let checks = Checks { now, gate_findings: &gate, recompute: &recompute };
    let (events, rewritten) = match base::review(&base, registry, &checks) {
        Ok(events) => (events, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    Ok(Review { rev: base.rev.clone(), commit: base.commit.clone(), events, rewritten })
}
