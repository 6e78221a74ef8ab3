//! Watching and hot reload (SPEC §7): `pactum watch PATH` re-validates on every change,
//! debounced, including editors' rename-saves; the library's `RegistryHandle` keeps serving
//! the last good snapshot while the tree is invalid and swaps when it is valid again.
//!
//! Timeouts are generous (reports within 15 s, polls up to 10 s) so a loaded machine does
//! not make these flaky; on an idle one each change is seen in well under a second.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use pactum::id::Pin;
use pactum::registry::{EntryKind, lifecycle, store};
use pactum::resolve::ResolveOptions;
use pactum::watch::{RegistryHandle, Reload};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_pactum");
const REPORT_TIMEOUT: Duration = Duration::from_secs(15);
const CONTRACT: &str = "contracts/notes/1.0.0.json";

// ---------------------------------------------------------------------------------------
// `pactum watch`
// ---------------------------------------------------------------------------------------

enum Line {
    Out(String),
    Err(String),
}

/// One validation report printed by `pactum watch`.
#[derive(Debug)]
struct Report {
    /// The `--- PATHS changed: re-validating ---` line, absent for the first report.
    header: Option<String>,
    body: String,
}

/// A running `pactum watch`, killed on drop.
struct Watcher {
    child: Child,
    lines: Receiver<Line>,
    header: Option<String>,
    body: String,
    stderr: String,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pump(stream: impl Read + Send + 'static, tx: mpsc::Sender<Line>, wrap: fn(String) -> Line) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if tx.send(wrap(line)).is_err() {
                break;
            }
        }
    });
}

impl Watcher {
    /// Starts `pactum watch DIR` and waits for its first report and for the watch to be
    /// set up ("watching ..." on stderr comes after the first report).
    fn start(dir: &Path) -> (Watcher, Report) {
        let mut child = Command::new(BIN)
            .arg("watch")
            .arg(dir)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pactum watch starts");
        let (tx, rx) = mpsc::channel();
        pump(child.stdout.take().unwrap(), tx.clone(), Line::Out);
        pump(child.stderr.take().unwrap(), tx, Line::Err);
        let mut w =
            Watcher { child, lines: rx, header: None, body: String::new(), stderr: String::new() };
        let first = w.next_report().expect("a first report");
        let deadline = Instant::now() + REPORT_TIMEOUT;
        while !w.stderr.contains("watching") {
            match w.read_line(deadline) {
                Some(Line::Out(l)) => panic!("unexpected output before the watch started: {l}"),
                Some(Line::Err(l)) => w.stderr.push_str(&format!("{l}\n")),
                None => panic!("`pactum watch` never said it was watching: {}", w.stderr),
            }
        }
        (w, first)
    }

    fn read_line(&mut self, deadline: Instant) -> Option<Line> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.lines.recv_timeout(left).ok()
    }

    /// The next complete report (up to its `checked N files: ...` line).
    fn next_report(&mut self) -> Option<Report> {
        self.report_before(Instant::now() + REPORT_TIMEOUT)
    }

    /// The next complete report if it is finished before `deadline`.
    fn report_before(&mut self, deadline: Instant) -> Option<Report> {
        loop {
            match self.read_line(deadline)? {
                Line::Err(l) => self.stderr.push_str(&format!("{l}\n")),
                Line::Out(l) if l.starts_with("--- ") && l.contains("re-validating") => {
                    self.header = Some(l);
                    self.body.clear();
                }
                Line::Out(l) => {
                    let done = l.starts_with("checked ");
                    self.body.push_str(&l);
                    self.body.push('\n');
                    if done {
                        return Some(Report {
                            header: self.header.take(),
                            body: std::mem::take(&mut self.body),
                        });
                    }
                }
            }
        }
    }

    /// Reads reports until one satisfies `pred` (within the timeout).
    fn report_where(&mut self, what: &str, pred: impl Fn(&Report) -> bool) -> Report {
        let deadline = Instant::now() + REPORT_TIMEOUT;
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            match self.next_report() {
                Some(r) if pred(&r) => return r,
                Some(r) => seen.push(r),
                None => break,
            }
        }
        panic!("no report {what} within {REPORT_TIMEOUT:?}; saw {seen:#?}\nstderr: {}", self.stderr)
    }
}

fn is_clean(r: &Report) -> bool {
    r.body.contains("0 errors") && !r.body.contains("error[")
}

fn has_parse_error(r: &Report) -> bool {
    r.body.contains("error[contract_parse_error]") && r.body.contains(CONTRACT)
}

fn scaffold() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["new", "contract", "PRC-NOTES-001"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    crate::common::write_placeholders(dir.path());
    dir
}

const BROKEN: &[u8] = b"{\"contract_id\": \"PRC-NOTES-001\",\n  \"version\": ";

#[test]
fn watch_reports_a_broken_contract_and_then_the_fixed_tree() {
    let dir = scaffold();
    let root = dir.path();
    let good = std::fs::read(root.join(CONTRACT)).unwrap();
    let (mut w, first) = Watcher::start(root);
    assert!(first.header.is_none());
    assert!(is_clean(&first), "{first:?}");

    // Files that are not governed do not name themselves in a report.
    std::fs::write(root.join("notes.txt"), b"hello").unwrap();
    std::fs::write(root.join("contracts/notes/scratch.json.tmp"), b"{").unwrap();
    std::fs::write(root.join(CONTRACT), BROKEN).unwrap();
    let r = w.report_where("with contract_parse_error", has_parse_error);
    let header = r.header.clone().expect("a re-validation names what changed");
    assert!(header.contains(CONTRACT), "{header}");
    assert!(!header.contains("notes.txt") && !header.contains(".tmp"), "{header}");

    std::fs::write(root.join(CONTRACT), &good).unwrap();
    let r = w.report_where("that is clean after the fix", is_clean);
    assert!(r.header.expect("a re-validation").contains(CONTRACT));
    // The process is still running until we stop it.
    assert!(w.child.try_wait().unwrap().is_none(), "pactum watch exited by itself");
}

#[test]
fn watch_picks_up_rename_saves() {
    let dir = scaffold();
    let root = dir.path();
    let good = std::fs::read(root.join(CONTRACT)).unwrap();
    let (mut w, first) = Watcher::start(root);
    assert!(is_clean(&first), "{first:?}");

    // Editor-style save: write a temporary file next to it, rename it over the original.
    let temp = root.join("contracts/notes/1.0.0.json.tmp");
    std::fs::write(&temp, BROKEN).unwrap();
    std::fs::rename(&temp, root.join(CONTRACT)).unwrap();
    let r = w.report_where("with contract_parse_error after a rename-save", has_parse_error);
    assert!(r.header.expect("a re-validation").contains(CONTRACT));

    std::fs::write(&temp, &good).unwrap();
    std::fs::rename(&temp, root.join(CONTRACT)).unwrap();
    let r = w.report_where("that is clean after a second rename-save", is_clean);
    assert!(r.header.expect("a re-validation").contains(CONTRACT));
    assert!(!temp.exists());
}

#[test]
fn watch_debounces_a_burst_of_saves_into_a_few_re_validations() {
    let dir = scaffold();
    let root = dir.path();
    let good = std::fs::read(root.join(CONTRACT)).unwrap();
    let (mut w, _) = Watcher::start(root);

    // Twenty-one saves, ending broken: on an idle machine they take a few milliseconds, far
    // inside the debounce window (100 ms). Each change is held until it is 100 ms old and
    // released on the debouncer's next tick (every 25 ms), so a burst spread over more
    // ticks (a loaded machine) may take one re-validation per tick it spans. The bound is
    // what the burst's own duration allows, plus a tick straddled at each end and one for
    // late event delivery.
    let burst = Instant::now();
    for i in 0..20 {
        let bytes = if i % 2 == 0 { &good[..] } else { BROKEN };
        std::fs::write(root.join(CONTRACT), bytes).unwrap();
    }
    std::fs::write(root.join(CONTRACT), BROKEN).unwrap();
    let ticks = usize::try_from(burst.elapsed().as_millis() / 25).unwrap_or(usize::MAX);
    let allowed = ticks.saturating_add(3);

    // Every report the burst causes: the first within the usual timeout, the rest well
    // within two quiet seconds after it.
    let mut reports = Vec::new();
    loop {
        let wait = if reports.is_empty() { REPORT_TIMEOUT } else { Duration::from_secs(2) };
        match w.report_before(Instant::now() + wait) {
            Some(r) => reports.push(r),
            None => break,
        }
    }
    assert!(!reports.is_empty(), "the burst was not seen; stderr: {}", w.stderr);
    assert!(
        reports.len() <= allowed,
        "21 saves over {ticks} debouncer tick(s) gave {} re-validations (at most \
         {allowed}): {reports:#?}",
        reports.len()
    );
    assert!(has_parse_error(reports.last().unwrap()), "the last report shows the final state");
}

#[test]
fn watch_re_validates_after_a_registry_write() {
    let dir = scaffold();
    let root = dir.path();
    let (mut w, _) = Watcher::start(root);
    // registry.json replaced by `pactum registry` (temp file + rename, under a lock file):
    // a fresh report naming registry.json, never the writer's temp or lock files.
    let out = Command::new(BIN)
        .args(["registry", "promote", "PRM-NOTES-001@1.0.0"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = w.report_where("after a registry write", |r| {
        r.header.as_deref().is_some_and(|h| h.contains("registry.json"))
    });
    let header = r.header.clone().unwrap();
    assert!(header.starts_with("--- registry.json"), "{header}");
    assert!(
        !header.contains(".registry.json.tmp-") && !header.contains(".registry.lock"),
        "{header}"
    );
    assert!(is_clean(&r), "{r:?}");

    // A registry.json that does not parse is reported, and so is its repair.
    let good = std::fs::read(root.join("registry.json")).unwrap();
    std::fs::write(root.join("registry.json"), b"{").unwrap();
    w.report_where("with registry_invalid", |r| r.body.contains("error[registry_invalid]"));
    std::fs::write(root.join("registry.json"), &good).unwrap();
    w.report_where("that is clean after restoring registry.json", is_clean);
}

// ---------------------------------------------------------------------------------------
// RegistryHandle (library hot reload)
// ---------------------------------------------------------------------------------------

const TS_TIME: &str = "2026-01-01T00:00:00Z";

fn ts() -> pactum::registry::lifecycle::Stamp {
    pactum::registry::lifecycle::Stamp::new(TS_TIME, "tester@example.com")
}
const ID: &str = "PRC-WATCH-001";
const PACK: &str = "PRM-WATCH-001";

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

fn contract(version: &str, extra_input: Option<&str>) -> Value {
    let mut properties = json!({"x": {"type": "string"}});
    if let Some(name) = extra_input {
        properties[name] = json!({"type": "string"});
    }
    json!({
        "contract_id": ID, "version": version, "prompt_pack_id": PACK,
        "boundary": {"max_tokens": 16, "temperature": 0},
        "input_schema": {"type": "object", "properties": properties}
    })
}

fn v(s: &str) -> semver::Version {
    semver::Version::parse(s).unwrap()
}

/// A project with the pack and contract 1.0.0 active, written through the library.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let pack = root.join("prompt_packs/watch/1.0.0.json");
    write_json(&pack, &json!({"prompt_pack_id": PACK, "version": "1.0.0", "template": "{{ x }}"}));
    let c = root.join("contracts/watch/1.0.0.json");
    write_json(&c, &contract("1.0.0", None));
    store::update(&root.join("registry.json"), |r| {
        lifecycle::add(r, &pack, &ts())?;
        lifecycle::add(r, &c, &ts())?;
        lifecycle::promote(r, EntryKind::PromptPack, PACK, &v("1.0.0"), &ts())?;
        lifecycle::promote(r, EntryKind::Contract, ID, &v("1.0.0"), &ts())
    })
    .unwrap();
    dir
}

/// Writes a new version and registers + promotes it in one locked update.
fn release(root: &Path, version: &str) {
    let file = root.join(format!("contracts/watch/{version}.json"));
    write_json(&file, &contract(version, Some("lang")));
    store::update(&root.join("registry.json"), |r| {
        lifecycle::add(r, &file, &ts())?;
        lifecycle::promote(r, EntryKind::Contract, ID, &v(version), &ts())
    })
    .unwrap();
}

fn resolves(handle: &RegistryHandle, pin: &str) -> Option<(String, String)> {
    let snapshot = handle.snapshot();
    let resolved =
        snapshot.project.resolve(&Pin::parse(pin).unwrap(), ResolveOptions::default()).ok()?;
    Some((resolved.contract.version.to_string(), resolved.contract_entry.sha256.clone()))
}

fn poll(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[derive(Debug)]
enum Outcome {
    Swapped,
    Kept(Vec<String>),
}

#[test]
fn registry_handle_swaps_valid_states_and_keeps_serving_through_invalid_ones() {
    let dir = project();
    let root = dir.path().to_path_buf();
    let handle = Arc::new(RegistryHandle::open(&root.join("registry.json")).unwrap());
    assert_eq!(handle.snapshot().generation, 1);
    assert_eq!(resolves(&handle, ID).unwrap().0, "1.0.0");
    let (tx, outcomes) = mpsc::channel();
    let _watch = handle
        .watch(Duration::from_millis(50), move |reload| {
            let outcome = match reload {
                Reload::Swapped(_) => Outcome::Swapped,
                Reload::Kept(problems) => {
                    Outcome::Kept(problems.iter().map(|d| d.code.to_string()).collect())
                }
            };
            let _ = tx.send(outcome);
        })
        .unwrap();

    // A new version and its registry entry: swapped in, and it resolves.
    release(&root, "1.1.0");
    poll("1.1.0 to be served", || {
        handle.snapshot().generation > 1
            && resolves(&handle, &format!("{ID}@1.1.0")).is_some_and(|(v, _)| v == "1.1.0")
    });
    assert_eq!(resolves(&handle, ID).unwrap().0, "1.1.0", "latest active is the new one");
    let (_, served_sha) = resolves(&handle, &format!("{ID}@1.1.0")).unwrap();

    // Invalid intermediate state: the active file edited, the registry hash not updated.
    let file = root.join("contracts/watch/1.1.0.json");
    let good = std::fs::read(&file).unwrap();
    let mut edited = contract("1.1.0", Some("lang"));
    edited["metadata"] = json!({"note": "edited without re-registering"});
    write_json(&file, &edited);
    let deadline = Instant::now() + Duration::from_secs(10);
    let kept = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match outcomes.recv_timeout(left) {
            Ok(Outcome::Kept(codes)) => break codes,
            Ok(Outcome::Swapped) => continue, // a reload of an earlier, valid state
            Err(e) => panic!("no reload rejected the invalid state: {e}"),
        }
    };
    assert!(kept.iter().any(|c| c == "contract_hash_mismatch"), "{kept:?}");
    let generation = handle.snapshot().generation;
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(handle.snapshot().generation, generation, "an invalid state was swapped in");
    // The served snapshot still resolves 1.1.0 as it was registered.
    let (version, sha) = resolves(&handle, &format!("{ID}@1.1.0")).expect("still resolves");
    assert_eq!((version.as_str(), sha.as_str()), ("1.1.0", served_sha.as_str()));
    let served = handle.snapshot();
    let c = served
        .project
        .resolve(&Pin::parse(&format!("{ID}@1.1.0")).unwrap(), ResolveOptions::default())
        .unwrap();
    assert!(c.contract.raw.get("metadata").is_none(), "the old content is served");
    match handle.reload() {
        Reload::Kept(problems) => assert!(!problems.is_empty()),
        Reload::Swapped(g) => panic!("reload swapped in an invalid state (generation {g})"),
    }
    assert_eq!(handle.snapshot().generation, generation);

    // Fixed: swapped again.
    std::fs::write(&file, &good).unwrap();
    poll("the fixed state to be swapped in", || handle.snapshot().generation > generation);
    assert_eq!(resolves(&handle, &format!("{ID}@1.1.0")).unwrap(), ("1.1.0".into(), served_sha));

    // Another release while watching.
    let before = handle.snapshot().generation;
    release(&root, "1.2.0");
    poll("1.2.0 to be served", || {
        handle.snapshot().generation > before
            && resolves(&handle, ID).is_some_and(|(v, _)| v == "1.2.0")
    });
}

#[test]
fn registry_handle_refuses_an_invalid_first_state() {
    let dir = project();
    let root = dir.path();
    std::fs::write(root.join("contracts/watch/1.0.0.json"), b"{").unwrap();
    let e = RegistryHandle::open(&root.join("registry.json")).map(|_| ()).unwrap_err();
    assert_eq!(e.code(), pactum::Code::RegistryInvalid, "{e}");
    assert!(e.to_string().contains("contracts/watch/1.0.0.json"), "names the file: {e}");
}

/// `pactum watch PATH` starts as `pactum validate PATH` would: a path in no project, or
/// one that does not exist, is a usage error that ends the command (SPEC §21, never a
/// silent pass), and more than one path for `validate --watch` is refused.
#[test]
fn watch_of_a_path_in_no_project_or_missing_exits_as_validate_does() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.json"), b"{\"hello\": 1}").unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["watch"], "no_project"),
        (&["validate", "--watch"], "no_project"),
        (&["watch", "nodir"], "io_error"),
        (&["validate", "--watch", ".", "notes.json"], "usage_error"),
    ];
    for (args, code) in cases {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("pactum {} kept watching", args.join(" "));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        assert_eq!(status.code(), Some(2), "pactum {}: {stderr}", args.join(" "));
        assert!(stderr.contains(&format!("error[{code}]")), "pactum {}: {stderr}", args.join(" "));
    }
}
