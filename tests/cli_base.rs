//! The base is the anchor (SPEC §24), through the binary: a pull request's registry history
//! checked against its base branch with `validate --base` and `registry verify --base` — a
//! hand-typed promotion, a label moved by hand, a rewritten history, rewritten cassette
//! answers, unsigned events — while the gate's settings and signers come from the base.

use std::path::{Path, PathBuf};
use std::process::Command;

use pactum::registry::{Action, Event, Registry, State, lifecycle};
use serde_json::{Value, json};

use crate::common::{self, Out};

/// A git repository holding `examples/eval-classify` with `[gate] eval = true`, committed
/// on `main` (the base); the tests change it as a pull request would.
pub(crate) struct Repo {
    dir: tempfile::TempDir,
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.email=ci@example.com",
            "-c",
            "user.name=ci",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Repo {
    pub(crate) fn new() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        common::copy_tree(&common::repo().join("examples/eval-classify"), dir.path());
        let _ = std::fs::remove_dir_all(dir.path().join(".pactum"));
        let repo = Repo { dir };
        repo.edit_text("pactum.toml", |t| {
            t.replace("[gate]\nprovider = \"ci\"", "[gate]\nprovider = \"ci\"\neval = true")
        });
        git(repo.root(), &["init", "-q", "-b", "main"]);
        repo.commit("base");
        git(repo.root(), &["checkout", "-q", "-b", "pr"]);
        repo
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub(crate) fn commit(&self, message: &str) {
        git(self.root(), &["add", "-A"]);
        git(self.root(), &["commit", "-q", "--allow-empty", "-m", message]);
    }

    pub(crate) fn edit_text(&self, rel: &str, f: impl FnOnce(&str) -> String) {
        let text = std::fs::read_to_string(self.path(rel)).unwrap();
        std::fs::write(self.path(rel), f(&text)).unwrap();
    }

    pub(crate) fn pactum(&self, args: &[&str]) -> Out {
        let mut cmd = common::pactum_in(self.root());
        cmd.args(args).env("PACTUM_ACTOR", "dev@example.com");
        Out::of(&mut cmd)
    }

    /// `validate --base main --format json`: its exit status and findings of `code`.
    fn findings(&self, code: &str) -> (i32, Vec<Value>) {
        let out = self.pactum(&["validate", "--base", "main", "--format", "json"]);
        let doc = out.json();
        let found = doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["code"] == code)
            .cloned()
            .collect();
        (out.code, found)
    }

    fn registry(&self) -> Registry {
        Registry::load(&self.path("registry.json")).unwrap()
    }

    /// Edits registry.json by hand as an attacker would: `f` changes it, and the history is
    /// re-chained with SHA-256 so that every plain check passes.
    pub(crate) fn forge(&self, f: impl FnOnce(&mut Registry)) {
        let mut r = self.registry();
        f(&mut r);
        let history = r.history.as_mut().unwrap();
        let events: Vec<Event> = std::mem::take(history);
        for e in events {
            lifecycle::chain(history, e);
        }
        std::fs::write(self.path("registry.json"), r.to_json()).unwrap();
    }
}

/// A promote event for `version`, with `evidence`, and the entry set active: what a
/// hand-typed promotion writes.
pub(crate) fn hand_promote(r: &mut Registry, version: &str, evidence: Option<Value>) {
    let entry = r.entries.iter_mut().find(|e| e.version.to_string() == version).unwrap();
    entry.state = pactum::registry::State::Active;
    entry.activated_at = Some("2026-11-30T10:00:00Z".into());
    let event = Event {
        at: "2026-11-30T10:00:00Z".into(),
        action: Action::Promote,
        actor: Some("dev@example.com".into()),
        id: entry.id.clone(),
        version: version.into(),
        sha256: entry.sha256.clone(),
        eval: evidence,
        ..Event::default()
    };
    r.history.as_mut().unwrap().push(event);
}

/// Evidence claiming 16 of 16 for the candidate, as a forger would type it.
fn made_up_evidence(cassette_sha: &str) -> Value {
    json!({"provider": "replay", "cassette": "evals/classify/cassette.json", "cassette_sha256": cassette_sha,
           "suites": [{"eval_id": "EVAL-CLASSIFY-001", "file": "evals/classify/EVAL-CLASSIFY-001.json",
                       "dataset": "evals/classify/cases.jsonl", "dataset_sha256": "0".repeat(64),
                       "baseline": {"version": "1.0.0", "cases": 16, "passed": 16, "pass_rate": 1.0},
                       "candidate": {"version": "1.1.0", "cases": 16, "passed": 16, "pass_rate": 1.0},
                       "regressions": 0, "improvements": 0, "p_value": 1.0}]})
}

fn sha_of(path: &Path) -> String {
    common::sha256_hex(&std::fs::read(path).unwrap())
}

#[test]
fn a_hand_typed_promotion_passes_every_plain_check_and_fails_against_the_base() {
    let repo = Repo::new();
    // The gate refuses the candidate (62.5%, p = 0.03).
    repo.pactum(&["registry", "promote", "PRC-CLASSIFY-001@1.1.0"]).status(1);
    let cassette = sha_of(&repo.path("evals/classify/cassette.json"));
    repo.forge(|r| hand_promote(r, "1.1.0", Some(made_up_evidence(&cassette))));
    repo.commit("promote 1.1.0");
    // Every plain check passes: the premise of the attack.
    repo.pactum(&["registry", "verify"]).status(0);
    repo.pactum(&["validate"]).status(0);
    let resolved = repo.pactum(&["resolve", "PRC-CLASSIFY-001@^1", "--json"]);
    assert_eq!(resolved.json()["version"], "1.1.0");
    // Against the base, the event is re-derived and refused.
    let (status, found) = repo.findings("registry_event_unverified");
    assert_eq!(status, 1);
    assert_eq!(found.len(), 1, "{found:#?}");
    let message = found[0]["message"].as_str().unwrap();
    assert!(message.contains("registry event 8 (promote PRC-CLASSIFY-001@1.1.0)"), "{message}");
    assert!(message.contains("evidence does not hold"), "{message}");
    assert_eq!(found[0]["file"], "registry.json");
    assert_eq!(found[0]["pointer"], "/history/7");
    // The text report lists the new event on one line, with its status.
    let out = repo.pactum(&["validate", "--base", "main"]);
    out.status(1);
    assert!(
        out.stdout.contains("note: governance since main (")
            && out.stdout.contains("1 new registry event(s), 1 not verified"),
        "{out}"
    );
    assert!(
        out.stdout.contains(
            "note: #8 promote PRC-CLASSIFY-001@1.1.0 by dev@example.com: registry_event_unverified:"
        ),
        "{out}"
    );
    // `registry verify --base` says the same.
    let out = repo.pactum(&["registry", "verify", "--base", "main", "--json"]);
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["code"], "registry_event_unverified", "{doc:#}");
    assert_eq!(doc["governance"]["events"][0]["verified"], false, "{doc:#}");
    // Without any evidence, and with the pull request turning the gate off: the base's
    // gate decides.
    git(repo.root(), &["reset", "-q", "--hard", "main"]);
    repo.forge(|r| hand_promote(r, "1.1.0", None));
    repo.edit_text("pactum.toml", |t| t.replace("eval = true", "eval = false"));
    let (_, found) = repo.findings("registry_event_unverified");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0]["message"].as_str().unwrap().contains("carries no eval evidence"),
        "{found:#?}"
    );
}

#[test]
fn a_real_promotion_with_recorded_evidence_is_verified() {
    let repo = Repo::new();
    // A patch version of the active contract (same content), recorded in the cassette from
    // the stand-in model, then promoted through the gate.
    let contract = std::fs::read_to_string(repo.path("contracts/classify/1.0.0.json")).unwrap();
    std::fs::write(
        repo.path("contracts/classify/1.0.1.json"),
        contract.replace("\"version\": \"1.0.0\"", "\"version\": \"1.0.1\""),
    )
    .unwrap();
    repo.edit_text("stand-in/model.json", |t| {
        let mut doc: Value = serde_json::from_str(t).unwrap();
        let copies: Vec<Value> = doc["responses"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["contract_version"] == "1.0.0")
            .map(|r| {
                let mut r = r.clone();
                r["contract_version"] = json!("1.0.1");
                r
            })
            .collect();
        doc["responses"].as_array_mut().unwrap().extend(copies);
        doc.to_string()
    });
    repo.pactum(&["registry", "add", "contracts/classify/1.0.1.json"]).status(0);
    repo.pactum(&["eval", "--contract", "PRC-CLASSIFY-001@1.0.1", "--allow-draft", "--record"])
        .status(0);
    let out = repo.pactum(&["registry", "promote", "PRC-CLASSIFY-001@1.0.1"]);
    out.status(0);
    repo.commit("promote 1.0.1");
    let evidence = &repo.registry().history.unwrap().last().unwrap().eval.clone().unwrap();
    assert_eq!(evidence["cassette"], "evals/classify/cassette.json", "{evidence:#}");
    assert_eq!(evidence["cassette_sha256"], sha_of(&repo.path("evals/classify/cassette.json")));
    let out = repo.pactum(&["validate", "--base", "main"]);
    out.status(0);
    assert!(out.stdout.contains("2 new registry event(s), 0 not verified"), "{out}");
    assert!(
        out.stdout.contains("promote PRC-CLASSIFY-001@1.0.1 by dev@example.com: verified (validates; compatible bump; eval evidence recomputed from evals/classify/cassette.json: 1 suite(s), 16 case(s))"),
        "{out}"
    );
    // The SARIF report carries the same lines for a reader of code scanning.
    let out = repo.pactum(&["validate", "--base", "main", "--format", "sarif"]);
    out.status(0);
    assert!(
        out.stdout.contains("promote PRC-CLASSIFY-001@1.0.1 by dev@example.com: verified"),
        "{out}"
    );
    // The same promotion with its numbers made better by hand (the dataset and cassette
    // hashes left true): the recomputation gives other numbers, so the event is refused.
    repo.forge(|r| {
        let event = r.history.as_mut().unwrap().last_mut().unwrap();
        let suite = &mut event.eval.as_mut().unwrap()["suites"][0];
        assert_eq!(suite["candidate"]["cases"], 16, "{suite:#}");
        suite["candidate"]["passed"] = json!(16);
        suite["candidate"]["pass_rate"] = json!(1.0);
        suite["improvements"] = json!(3);
    });
    let (status, found) = repo.findings("registry_event_unverified");
    assert_eq!(status, 1);
    assert_eq!(found.len(), 1, "{found:#?}");
    let message = found[0]["message"].as_str().unwrap();
    assert!(message.contains("promote PRC-CLASSIFY-001@1.0.1"), "{message}");
    assert!(message.contains("evidence does not hold"), "{message}");
    // The promotion as it was, and one recording added to its cassette afterwards: the
    // evidence names the cassette it was measured on, by its hash.
    git(repo.root(), &["reset", "-q", "--hard", "HEAD"]);
    repo.edit_text("evals/classify/cassette.json", |t| {
        let mut doc: Value = serde_json::from_str(t).unwrap();
        let entries = doc["entries"].as_array_mut().unwrap();
        let mut extra = entries[0].clone();
        extra["key"] = json!("f".repeat(64));
        entries.push(extra);
        serde_json::to_string_pretty(&doc).unwrap()
    });
    let (status, found) = repo.findings("registry_event_unverified");
    assert_eq!(status, 1);
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.contains("not the") && message.contains("the evidence was measured on"),
        "{message}"
    );
}

#[test]
fn rewritten_answers_in_the_cassette_never_count_as_evidence() {
    let repo = Repo::new();
    // The candidate's recorded wrong answers replaced by right ones: the gate now passes
    // it, with evidence honestly measured on the rewritten cassette.
    repo.edit_text("evals/classify/cassette.json", |t| {
        let mut doc: Value = serde_json::from_str(t).unwrap();
        for e in doc["entries"].as_array_mut().unwrap() {
            if e["contract_version"] == "1.1.0" {
                let body = e["body"].as_str().unwrap().to_string();
                // Every answer of the candidate becomes the label its case expects.
                e["body"] = json!(body.replace("\"other\"", "\"billing\""));
            }
        }
        serde_json::to_string_pretty(&doc).unwrap()
    });
    let cassette = sha_of(&repo.path("evals/classify/cassette.json"));
    repo.forge(|r| hand_promote(r, "1.1.0", Some(made_up_evidence(&cassette))));
    let (status, found) = repo.findings("registry_event_unverified");
    assert_eq!(status, 1);
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .contains("of the base's cassette evals/classify/cassette.json is rewritten or gone"),
        "{found:#?}"
    );
}

#[test]
fn a_rewritten_history_and_a_hand_moved_label_are_named() {
    let repo = Repo::new();
    // An agreed event edited (its actor), the chain recomputed: plain verify passes.
    repo.forge(|r| r.history.as_mut().unwrap()[2].actor = Some("someone-else@example.com".into()));
    repo.pactum(&["registry", "verify"]).status(0);
    let (status, found) = repo.findings("registry_history_rewritten");
    assert_eq!(status, 1);
    assert!(found[0]["message"].as_str().unwrap().contains("event 3"), "{found:#?}");
    let out = repo.pactum(&["registry", "verify", "--base", "main"]);
    out.status(1);
    assert!(out.stdout.contains("registry_history_rewritten"), "{out}");
    // A labeled event typed by hand with another version's hash.
    git(repo.root(), &["checkout", "-q", "--", "registry.json"]);
    let draft_sha = repo
        .registry()
        .entries
        .iter()
        .find(|e| e.version.to_string() == "1.1.0")
        .unwrap()
        .sha256
        .clone();
    repo.forge(|r| {
        r.labels.entry("PRC-CLASSIFY-001".into()).or_default().insert(
            "production".into(),
            pactum::registry::label::Targets::one(semver::Version::new(1, 0, 0)),
        );
        r.history.as_mut().unwrap().push(Event {
            at: "2026-11-30T10:00:00Z".into(),
            action: Action::Labeled,
            actor: Some("dev@example.com".into()),
            id: "PRC-CLASSIFY-001".into(),
            version: "1.0.0".into(),
            sha256: draft_sha,
            label: Some("production".into()),
            ..Event::default()
        });
    });
    repo.pactum(&["registry", "verify"]).status(0);
    let (_, found) = repo.findings("registry_event_unverified");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0]["message"].as_str().unwrap().contains("repeats its target's hash"),
        "{found:#?}"
    );
    // A revision git does not know is a usage error, not a pass.
    let out = repo.pactum(&["validate", "--base", "no-such-branch"]);
    out.status(2);
    assert!(out.stderr.contains("is not a commit"), "{out}");
}

/// A new ed25519 key in `dir` and its allowed-signers line for `principal`.
pub(crate) fn ssh_key(dir: &Path, name: &str, principal: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", principal, "-f"])
        .arg(&path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "ssh-keygen is needed");
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    (path, format!("{principal} {}", public.trim()))
}

#[test]
fn with_signers_only_events_an_allowed_signer_signed_are_verified() {
    let keys = tempfile::tempdir().unwrap();
    let (alice, alice_line) = ssh_key(keys.path(), "alice", "alice@example.com");
    let (mallory, mallory_line) = ssh_key(keys.path(), "mallory", "mallory@example.com");
    let repo = Repo::new();
    // The base requires signed events and allows alice.
    git(repo.root(), &["checkout", "-q", "main"]);
    std::fs::create_dir_all(repo.path(".pactum-signers")).unwrap();
    std::fs::write(repo.path(".pactum-signers/allowed_signers"), format!("{alice_line}\n"))
        .unwrap();
    repo.edit_text("pactum.toml", |t| {
        t.replace("eval = true", "eval = false\nsigners = \".pactum-signers/allowed_signers\"")
    });
    repo.commit("signers");
    git(repo.root(), &["checkout", "-q", "-B", "pr"]);
    // An unsigned label move (typed by hand, or made without a key): refused.
    repo.forge(|r| {
        let sha =
            r.entries.iter().find(|e| e.version.to_string() == "1.0.0").unwrap().sha256.clone();
        r.labels.entry("PRC-CLASSIFY-001".into()).or_default().insert(
            "production".into(),
            pactum::registry::label::Targets::one(semver::Version::new(1, 0, 0)),
        );
        r.history.as_mut().unwrap().push(Event {
            at: "2026-11-30T10:00:00Z".into(),
            action: Action::Labeled,
            actor: Some("dev@example.com".into()),
            id: "PRC-CLASSIFY-001".into(),
            version: "1.0.0".into(),
            sha256: sha,
            label: Some("production".into()),
            ..Event::default()
        });
    });
    let (_, found) = repo.findings("registry_event_unsigned");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0]["message"].as_str().unwrap().contains("has no signature"), "{found:#?}");
    git(repo.root(), &["checkout", "-q", "--", "registry.json"]);
    // Without a key, the command refuses to write an unsigned event.
    let out = repo.pactum(&["registry", "label", "PRC-CLASSIFY-001", "production", "1.0.0"]);
    out.status(2);
    assert!(out.stderr.contains("--sign-key"), "{out}");
    // Signed by alice: verified, naming her.
    let alice_key = alice.to_str().unwrap();
    repo.pactum(&[
        "registry",
        "label",
        "PRC-CLASSIFY-001",
        "production",
        "1.0.0",
        "--sign-key",
        alice_key,
    ])
    .status(0);
    let out = repo.pactum(&["validate", "--base", "main"]);
    out.status(0);
    assert!(out.stdout.contains("verified (signed by alice@example.com;"), "{out}");
    // Signed by mallory, who also adds herself to the pull request's allowed signers: the
    // base's list decides.
    git(repo.root(), &["checkout", "-q", "--", "registry.json"]);
    std::fs::write(
        repo.path(".pactum-signers/allowed_signers"),
        format!("{alice_line}\n{mallory_line}\n"),
    )
    .unwrap();
    let mallory_key = mallory.to_str().unwrap();
    repo.pactum(&[
        "registry",
        "label",
        "PRC-CLASSIFY-001",
        "production",
        "1.0.0",
        "--sign-key",
        mallory_key,
    ])
    .status(0);
    let (_, found) = repo.findings("registry_event_unsigned");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0]["message"].as_str().unwrap().contains("not in the allowed signers"),
        "{found:#?}"
    );
    // Alice's signature moved onto another event (the chain recomputed): it no longer
    // verifies.
    git(repo.root(), &["checkout", "-q", "--", ".pactum-signers/allowed_signers", "registry.json"]);
    repo.pactum(&[
        "registry",
        "label",
        "PRC-CLASSIFY-001",
        "production",
        "1.0.0",
        "--sign-key",
        alice_key,
    ])
    .status(0);
    repo.forge(|r| {
        let last = r.history.as_mut().unwrap().last_mut().unwrap();
        last.label = Some("staging".into());
        let moved = r.labels.get_mut("PRC-CLASSIFY-001").unwrap().remove("production").unwrap();
        r.labels.get_mut("PRC-CLASSIFY-001").unwrap().insert("staging".into(), moved);
    });
    let (_, found) = repo.findings("registry_event_unsigned");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0]["message"].as_str().unwrap().contains("does not verify"), "{found:#?}");
}

#[test]
fn with_signers_deprecate_and_remove_are_signed_events_too() {
    // A variant of the label case: the events that retire a version change what a pin
    // runs as much as a promotion does.
    let keys = tempfile::tempdir().unwrap();
    let (alice, alice_line) = ssh_key(keys.path(), "alice", "alice@example.com");
    let repo = Repo::new();
    git(repo.root(), &["checkout", "-q", "main"]);
    std::fs::write(repo.path("allowed_signers"), format!("{alice_line}\n")).unwrap();
    repo.edit_text("pactum.toml", |t| {
        t.replace("eval = true", "eval = false\nsigners = \"allowed_signers\"")
    });
    repo.commit("signers");
    git(repo.root(), &["checkout", "-q", "-B", "pr"]);
    let key = alice.to_str().unwrap();
    repo.pactum(&["registry", "promote", "PRC-CLASSIFY-001@1.1.0", "--sign-key", key]).status(0);
    // Without a key, deprecate refuses to write an unsigned event.
    let deprecate = ["registry", "deprecate", "PRC-CLASSIFY-001@1.0.0", "--successor", "1.1.0"];
    let out = repo.pactum(&deprecate);
    out.status(2);
    assert!(out.stderr.contains("--sign-key"), "{out}");
    let signed: Vec<&str> = deprecate.iter().copied().chain(["--sign-key", key]).collect();
    repo.pactum(&signed).status(0);
    let out = repo.pactum(&["validate", "--base", "main"]);
    out.status(0);
    let verified = out.stdout.lines().filter(|l| l.contains("verified (signed by alice")).count();
    assert_eq!(verified, 2, "the promote and the deprecation: {out}");
    // A removal typed by hand, unsigned: refused.
    repo.forge(|r| {
        let entry = r.entries.iter_mut().find(|e| e.version.to_string() == "1.0.0").unwrap();
        entry.state = pactum::registry::State::Removed;
        let event = Event {
            at: "2026-11-30T10:00:00Z".into(),
            action: Action::Remove,
            actor: Some("dev@example.com".into()),
            id: entry.id.clone(),
            version: "1.0.0".into(),
            sha256: entry.sha256.clone(),
            ..Event::default()
        };
        r.history.as_mut().unwrap().push(event);
    });
    let (code, found) = repo.findings("registry_event_unsigned");
    assert_eq!(code, 1);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0]["message"].as_str().unwrap().contains("remove"), "{found:#?}");
}

// --- ledger anchors -------------------------------------------------------------------

/// A copy of the shipped demo project (offline work orders) at `dir`.
fn demo_project() -> tempfile::TempDir {
    crate::cli_otel::demo()
}

/// Rewrites the project's ledger end to end with records of its own and re-chains it, as
/// someone who can write the file could: every plain check passes afterwards.
pub(crate) fn rewrite_ledger(root: &Path) {
    use pactum::ledger::{Kind, Ledger, Location};
    let path = root.join(".pactum/ledger.jsonl");
    std::fs::remove_file(&path).unwrap();
    let ledger = Ledger::open(&Location::chosen(&path)).unwrap();
    for i in 0..3 {
        let fields = json!({"event": "exchange", "work_order_id": "WO-DEMO-SUM-001", "verdict": "ok", "n": i});
        ledger.append(Kind::Exchange, fields.as_object().unwrap().clone()).unwrap();
    }
}

#[test]
fn a_ledger_rewritten_end_to_end_is_caught_against_a_published_head() {
    let dir = demo_project();
    let run = |args: &[&str]| {
        let mut cmd = common::pactum_in(dir.path());
        cmd.args(args);
        Out::of(&mut cmd)
    };
    // The run publishes the head it wrote; `ledger head` gives the same.
    let out = run(&["run", crate::cli_otel::CLASSIFY, "--json"]);
    out.status(0);
    let published = out.json()["ledger"].clone();
    let hash = published["hash"].as_str().unwrap().to_string();
    assert_eq!(published["file"], ".pactum/ledger.jsonl", "{published:#}");
    let head = run(&["ledger", "head", "--json"]).json();
    assert_eq!(
        (head["seq"].clone(), head["hash"].as_str()),
        (published["seq"].clone(), Some(hash.as_str()))
    );
    // Rewritten and re-chained: the chain is intact, the published head is gone.
    rewrite_ledger(dir.path());
    run(&["ledger", "verify"]).status(0);
    let out = run(&["ledger", "verify", "--expect-head", &hash, "--json"]);
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["code"], "ledger_rewritten", "{doc:#}");
    assert!(doc["message"].as_str().unwrap().contains(&hash), "{doc:#}");
}

#[test]
fn signed_checkpoints_hold_the_ledger_to_its_heads() {
    let keys = tempfile::tempdir().unwrap();
    let (alice, alice_line) = ssh_key(keys.path(), "alice", "alice@example.com");
    let (mallory, _) = ssh_key(keys.path(), "mallory", "mallory@example.com");
    let dir = demo_project();
    std::fs::write(dir.path().join("allowed_signers"), format!("{alice_line}\n")).unwrap();
    std::fs::write(dir.path().join("pactum.toml"), "[gate]\nsigners = \"allowed_signers\"\n")
        .unwrap();
    let run = |args: &[&str]| {
        let mut cmd = common::pactum_in(dir.path());
        cmd.args(args);
        Out::of(&mut cmd)
    };
    run(&["run", crate::cli_otel::CLASSIFY]).status(0);
    let out = run(&["ledger", "checkpoint", "--sign-key", alice.to_str().unwrap()]);
    out.status(0);
    assert!(out.stdout.contains("into .pactum/checkpoints.jsonl"), "{out}");
    run(&["run", crate::cli_otel::CLASSIFY]).status(0);
    run(&["ledger", "verify"]).status(0);
    // Rewritten: plain verify now fails, against the signed checkpoint.
    let checkpoints =
        std::fs::read_to_string(dir.path().join(".pactum/checkpoints.jsonl")).unwrap();
    rewrite_ledger(dir.path());
    let out = run(&["ledger", "verify", "--json"]);
    out.status(1);
    assert_eq!(out.json()["code"], "ledger_rewritten", "{out}");
    // A checkpoint of the new head signed by a key that is not allowed: refused too.
    std::fs::write(dir.path().join(".pactum/checkpoints.jsonl"), "").unwrap();
    run(&["ledger", "checkpoint", "--sign-key", mallory.to_str().unwrap()]).status(0);
    let out = run(&["ledger", "verify", "--json"]);
    out.status(1);
    let doc = out.json();
    assert_eq!(doc["code"], "ledger_rewritten", "{doc:#}");
    assert!(doc["message"].as_str().unwrap().contains("does not verify"), "{doc:#}");
    assert!(!checkpoints.is_empty());
}

#[test]
fn eval_json_publishes_the_head_it_wrote() {
    let repo = Repo::new();
    let out = repo.pactum(&["eval", "--replay", "--json"]);
    out.status(0);
    let doc = out.json();
    let hash = doc["ledger"]["hash"].as_str().unwrap().to_string();
    let head = repo.pactum(&["ledger", "head"]);
    assert!(head.stdout.contains(&hash), "{head}");
}

/// A baseline is a file of the change under review: it never silences the base review,
/// and writing one never records the review's findings.
#[test]
fn a_committed_baseline_never_silences_an_unverified_event() {
    let repo = Repo::new();
    repo.forge(|r| hand_promote(r, "1.1.0", None));
    let out =
        repo.pactum(&["validate", "--base", "main", "--write-baseline", "pactum-baseline.json"]);
    out.status(0);
    let written = std::fs::read_to_string(repo.path("pactum-baseline.json")).unwrap();
    assert!(!written.contains("registry_event_unverified"), "{written}");
    // Even a baseline typed by hand to hold the finding's fingerprint absorbs nothing.
    let (_, found) = repo.findings("registry_event_unverified");
    let forged = json!({"version": 1, "findings": [{"code": "registry_event_unverified", "file": "registry.json",
        "fingerprint": pactum::validate::filter::fingerprint(&pactum::diagnostic::Diagnostic::new(
            pactum::Code::RegistryEventUnverified, found[0]["message"].as_str().unwrap().to_string())
            .file("registry.json").pointer(found[0]["pointer"].as_str().unwrap()))}]});
    std::fs::write(repo.path("forged-baseline.json"), forged.to_string()).unwrap();
    repo.commit("baselines");
    for baseline in ["pactum-baseline.json", "forged-baseline.json"] {
        let out = repo.pactum(&[
            "validate",
            "--base",
            "main",
            "--baseline",
            baseline,
            "--format",
            "json",
        ]);
        out.status(1);
        let doc = out.json();
        let codes: Vec<&str> = doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["code"].as_str())
            .collect();
        assert!(codes.contains(&"registry_event_unverified"), "{baseline}: {doc:#}");
    }
}

/// What a promotion is compared with is the gate's to say, not the evidence's: the base's
/// suites (a threshold lowered in the same change counts for nothing) and the baseline the
/// gate picks (evidence that leaves it out, or names the candidate itself, is refused).
#[test]
fn evidence_that_picks_its_own_baseline_or_suite_is_refused() {
    let repo = Repo::new();
    let cassette = sha_of(&repo.path("evals/classify/cassette.json"));
    let unverified = |repo: &Repo| {
        let (status, found) = repo.findings("registry_event_unverified");
        assert_eq!(status, 1, "{found:#?}");
        found[0]["message"].as_str().unwrap().to_string()
    };
    // No baseline, and the candidate as its own baseline.
    for baseline in [None, Some("1.1.0")] {
        git(repo.root(), &["reset", "-q", "--hard", "main"]);
        let mut evidence = made_up_evidence(&cassette);
        match baseline {
            None => {
                let suite = evidence["suites"][0].as_object_mut().unwrap();
                for key in ["baseline", "regressions", "improvements", "p_value"] {
                    suite.remove(key);
                }
            }
            Some(v) => evidence["suites"][0]["baseline"]["version"] = json!(v),
        }
        repo.forge(|r| hand_promote(r, "1.1.0", Some(evidence)));
        let message = unverified(&repo);
        assert!(
            message.contains(&format!(
                "the evidence compares 1.1.0 with {}, but the gate compares it with 1.0.0",
                baseline.unwrap_or("none")
            )),
            "{message}"
        );
    }
    // The suite's threshold lowered in the same change.
    git(repo.root(), &["reset", "-q", "--hard", "main"]);
    repo.edit_text("evals/classify/EVAL-CLASSIFY-001.json", |t| t.replace("0.9", "0.6"));
    repo.forge(|r| hand_promote(r, "1.1.0", Some(made_up_evidence(&cassette))));
    let message = unverified(&repo);
    assert!(
        message.contains(
            "evals/classify/EVAL-CLASSIFY-001.json, which suite EVAL-CLASSIFY-001 reads, is not the base's"
        ),
        "{message}"
    );
    // A file the suite's schema assertion refers to, or a case's own `expect` does, loosened
    // in the same change: the suite and the dataset are the base's bytes, what they mean is not.
    git(repo.root(), &["checkout", "-q", "main"]);
    std::fs::write(repo.path("evals/classify/confidence.schema.json"), r#"{"minimum": 0.5}"#)
        .unwrap();
    std::fs::write(repo.path("evals/classify/label.schema.json"), r#"{"type": "string"}"#).unwrap();
    repo.edit_text("evals/classify/EVAL-CLASSIFY-001.json", |t| {
        t.replace(
            "\"assertions\": [",
            "\"assertions\": [\n    {\"kind\": \"schema\", \"pointer\": \"/confidence\", \"schema\": {\"$ref\": \"confidence.schema.json\"}},",
        )
    });
    repo.edit_text("evals/classify/cases.jsonl", |t| {
        let (first, rest) = t.split_once('\n').unwrap();
        let mut case: Value = serde_json::from_str(first).unwrap();
        case["expect"] = json!([{"kind": "schema", "pointer": "/label", "schema": {"$ref": "label.schema.json"}}]);
        format!("{case}\n{rest}")
    });
    repo.commit("a suite whose assertions refer to files");
    for file in ["confidence.schema.json", "label.schema.json"] {
        git(repo.root(), &["checkout", "-q", "-B", "pr", "main"]);
        git(repo.root(), &["reset", "-q", "--hard", "main"]);
        std::fs::write(repo.path(&format!("evals/classify/{file}")), "true").unwrap();
        repo.forge(|r| hand_promote(r, "1.1.0", Some(made_up_evidence(&cassette))));
        let message = unverified(&repo);
        assert!(
            message.contains(&format!(
                "evals/classify/{file}, which suite EVAL-CLASSIFY-001 reads, is not the base's"
            )),
            "{file}: {message}"
        );
    }
}

/// A suite the base holds, deleted in the pull request that promotes: the promotion's
/// evidence is real (`promote --eval` ran the suites left), but it leaves out one the base
/// asks the candidate to pass.
#[test]
fn a_promotion_that_deletes_one_of_the_bases_suites_is_refused() {
    // The suite's own name, and one git lists quoted unless asked not to (a non-ASCII byte).
    for name in ["EVAL-CLASSIFY-001.json", "EVAL-CLASSIFY-001-\u{fc}.json"] {
        let rel = format!("evals/classify/{name}");
        let repo = Repo::new();
        // The base: a second suite, on the cases the candidate passes.
        git(repo.root(), &["checkout", "-q", "main"]);
        let cases = std::fs::read_to_string(repo.path("evals/classify/cases.jsonl")).unwrap();
        let easy: Vec<&str> = cases
            .lines()
            .filter(|l| ["double-charge", "\"other\""].iter().any(|w| l.contains(w)))
            .collect();
        assert!(!easy.is_empty());
        std::fs::write(repo.path("evals/classify/easy.jsonl"), easy.join("\n") + "\n").unwrap();
        let suite =
            std::fs::read_to_string(repo.path("evals/classify/EVAL-CLASSIFY-001.json")).unwrap();
        let easy_suite = suite
            .replace("EVAL-CLASSIFY-001", "EVAL-CLASSIFY-002")
            .replace("evals/classify/cases.jsonl", "evals/classify/easy.jsonl");
        std::fs::write(repo.path("evals/classify/EVAL-CLASSIFY-002.json"), easy_suite).unwrap();
        std::fs::rename(repo.path("evals/classify/EVAL-CLASSIFY-001.json"), repo.path(&rel))
            .unwrap();
        repo.commit("a second suite");
        git(repo.root(), &["checkout", "-q", "-B", "pr"]);
        // The pull request deletes the suite the candidate fails, and promotes with the gate.
        std::fs::remove_file(repo.path(&rel)).unwrap();
        let out = repo.pactum(&["registry", "promote", "PRC-CLASSIFY-001@1.1.0", "--eval"]);
        out.status(0);
        let (status, found) = repo.findings("registry_event_unverified");
        assert_eq!(status, 1, "{name}: {found:#?}");
        assert_eq!(found.len(), 1, "{found:#?}");
        let message = found[0]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!(
                "the base's suite {rel} evaluates PRC-CLASSIFY-001 and is not in this change's tree"
            )),
            "{message}"
        );
        // With the suite restored the same promotion is what it was: refused by the gate.
        git(repo.root(), &["checkout", "-q", "main", "--", &rel]);
        let (status, found) = repo.findings("registry_event_unverified");
        assert_eq!(status, 1, "{found:#?}");
        assert!(!found[0]["message"].as_str().unwrap().contains("is not in this change's tree"));
    }
}

/// A `deprecate` or `remove` event appended by hand, the entry set to match.
fn hand_event(r: &mut Registry, action: Action, id: &str, version: &str, successor: Option<&str>) {
    let entry =
        r.entries.iter_mut().find(|e| e.id == id && e.version.to_string() == version).unwrap();
    entry.state = if action == Action::Remove {
        pactum::registry::State::Removed
    } else {
        pactum::registry::State::Deprecated
    };
    let sha256 = entry.sha256.clone();
    r.history.as_mut().unwrap().push(Event {
        at: "2026-11-30T10:00:00Z".into(),
        action,
        actor: Some("dev@example.com".into()),
        id: id.into(),
        version: version.into(),
        sha256,
        successor: successor.map(Into::into),
        ..Event::default()
    });
}

/// Hand-typed `deprecate` and `remove` events are held to what the commands check: an
/// active successor, and nothing left depending on a removed version.
#[test]
fn hand_typed_deprecations_and_removals_are_re_derived() {
    let repo = Repo::new();
    // 1.0.0 deprecated for the draft 1.1.0 (`registry deprecate` says successor_missing).
    repo.forge(|r| hand_event(r, Action::Deprecate, "PRC-CLASSIFY-001", "1.0.0", Some("1.1.0")));
    let (status, found) = repo.findings("registry_event_unverified");
    assert_eq!(status, 1);
    let message = found[0]["message"].as_str().unwrap();
    assert!(message.contains("its successor PRC-CLASSIFY-001@1.1.0 is draft"), "{message}");
    // The pack the active contract binds, deprecated and removed by hand.
    git(repo.root(), &["reset", "-q", "--hard", "main"]);
    repo.forge(|r| {
        hand_event(r, Action::Deprecate, "PRM-CLASSIFY-001", "1.0.0", Some("1.1.0"));
        hand_event(r, Action::Remove, "PRM-CLASSIFY-001", "1.0.0", None);
    });
    let (status, found) = repo.findings("registry_event_unverified");
    assert_eq!(status, 1);
    let messages: Vec<&str> = found.iter().map(|f| f["message"].as_str().unwrap()).collect();
    assert!(
        messages.iter().any(|m| m
            .contains("`registry remove` refuses it: PRC-CLASSIFY-001@1.0.0 still binds to it")),
        "{messages:#?}"
    );
}

/// An `adopt` typed into a history the base already had is refused whatever state it
/// records: `removed` or `draft` takes the only active version away, `active` brings one in,
/// none of them through the commands that check.
#[test]
fn a_hand_typed_adoption_into_an_existing_history_is_refused_in_any_state() {
    let repo = Repo::new();
    for state in [State::Removed, State::Draft, State::Active] {
        git(repo.root(), &["reset", "-q", "--hard", "main"]);
        repo.forge(|r| {
            let entry = r
                .entries
                .iter_mut()
                .find(|e| e.id == "PRC-CLASSIFY-001" && e.version.to_string() == "1.0.0")
                .unwrap();
            entry.state = state;
            let (path, sha256) = (entry.path.clone(), entry.sha256.clone());
            r.history.as_mut().unwrap().push(Event {
                at: "2026-11-30T10:00:00Z".into(),
                action: Action::Adopt,
                actor: Some("dev@example.com".into()),
                id: "PRC-CLASSIFY-001".into(),
                version: "1.0.0".into(),
                sha256,
                path: Some(path),
                state: Some(state),
                ..Event::default()
            });
        });
        // Every plain check passes: the forged history replays.
        assert_eq!(repo.pactum(&["registry", "verify"]).code, 0, "{state:?}");
        let (status, found) = repo.findings("registry_event_unverified");
        assert_eq!(status, 1, "{state:?}: {found:#?}");
        let message = found[0]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!(
                "it adopts PRC-CLASSIFY-001@1.0.0 as {} into a history main already had",
                state.as_str()
            )),
            "{message}"
        );
        let verify = repo.pactum(&["registry", "verify", "--base", "main"]);
        assert_eq!(verify.code, 1, "{state:?}: {verify}");
    }
}

/// A project the pull request moved has no registry at its new path in the base: its
/// review would see no history and the default gate, so it is refused, naming where the
/// base has the registry. A project that starts in the change (no registry anywhere in
/// the base) is reviewed as new.
#[test]
fn a_project_moved_in_the_change_is_refused_as_its_own_base() {
    let repo = Repo::new();
    std::fs::create_dir(repo.path("proj")).unwrap();
    let tracked = git(repo.root(), &["ls-files"]);
    let mut top: Vec<&str> = tracked.lines().map(|l| l.split('/').next().unwrap()).collect();
    top.dedup();
    for name in top {
        git(repo.root(), &["mv", name, &format!("proj/{name}")]);
    }
    repo.commit("move the project");
    let mut cmd = common::pactum_in(&repo.path("proj"));
    cmd.args(["validate", "--base", "main", "--json"]);
    let out = Out::of(&mut cmd);
    out.status(2);
    let doc = out.json();
    assert_eq!(doc["code"], "usage_error", "{doc:#}");
    let message = doc["message"].as_str().unwrap();
    assert!(
        message.contains("has no registry.json at this project's path, but has registry.json"),
        "{message}"
    );
}
