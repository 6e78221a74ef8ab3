//! `pactum worker`, `submit` and `results` against a real Redis (SPEC §22,
//! `support/redis.rs`): the round trip, two workers sharing a batch, a worker killed with
//! SIGKILL while it holds entries, an id resubmitted after it completed, dead letters,
//! SIGTERM draining, the queue's password kept out of everything printed, a worker's
//! spans (`--otlp`) naming it, and (without Redis) a queue that trickles its replies.
//!
//! Work orders run on the scripted provider (the shipped classify contract); a fixture's
//! `delay_ms` makes the "model" slow where a test needs a worker to hold entries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::common::{self, Out};
use crate::otlp::Collector;
use crate::redis::RedisServer;

const STREAM: &str = "pactum";
const GROUP: &str = "pactum-workers";

/// A project with the shipped contracts and `n` classify work orders `WO-Q-000`... whose
/// scripted reply arrives after `delay_ms`.
pub(crate) fn project(n: usize, delay_ms: u64) -> (TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::copy_shipped(root);
    std::fs::create_dir_all(root.join("work_orders")).unwrap();
    std::fs::create_dir_all(root.join("fixtures")).unwrap();
    let reply = json!({"responses": [{
        "contract_id": "PRC-CLASSIFY-001",
        "expect_prompt": ["I was charged twice"],
        "delay_ms": delay_ms,
        "text": "{\"label\": \"billing\", \"confidence\": 0.9, \"reasons\": [\"a double charge\"]}",
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }]});
    std::fs::write(root.join("fixtures/q.json"), reply.to_string()).unwrap();
    let paths = (0..n)
        .map(|i| {
            let path = root.join(format!("work_orders/WO-Q-{i:03}.json"));
            let wo = json!({
                "work_order_id": format!("WO-Q-{i:03}"),
                "kind": "exchange",
                "contract": "PRC-CLASSIFY-001@^1",
                "input": {"user_input": format!("I was charged twice (case {i})"), "history": [], "mode": "careful"},
                "provider": {"fixtures": "../fixtures/q.json"},
            });
            std::fs::write(&path, serde_json::to_string_pretty(&wo).unwrap()).unwrap();
            path
        })
        .collect();
    (dir, paths)
}

pub(crate) fn submit(root: &Path, url: &str, work_orders: &[PathBuf]) -> Out {
    let mut cmd = common::pactum_in(root);
    cmd.arg("submit").args(work_orders).args(["--queue", url]);
    Out::of(&mut cmd)
}

/// A worker running in the background, its output going to files in the project.
pub(crate) struct Worker {
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

impl Worker {
    pub(crate) fn start(root: &Path, url: &str, name: &str, extra: &[&str]) -> Worker {
        Worker::start_on(root, url, name, &format!("{name}.jsonl"), &[], extra)
    }

    /// A worker writing to `ledger` (a file or a postgres:// URL), with `env` set.
    pub(crate) fn start_on(
        root: &Path,
        url: &str,
        name: &str,
        ledger: &str,
        env: &[(&str, &str)],
        extra: &[&str],
    ) -> Worker {
        let (out, err) = (root.join(format!("{name}.out")), root.join(format!("{name}.err")));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pactum"));
        cmd.current_dir(root).env("NO_COLOR", "1");
        for var in common::PROVIDER_VARS {
            cmd.env_remove(var);
        }
        cmd.envs(env.iter().copied());
        cmd.args(["worker", "--queue", url, "--worker-id", name, "--ledger", ledger])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap());
        Worker { child: cmd.spawn().unwrap(), out, err }
    }

    /// Whether it has said it is serving (on stderr).
    pub(crate) fn started(&self) -> bool {
        std::fs::read_to_string(&self.err).is_ok_and(|e| e.contains("stop with SIGTERM"))
    }

    pub(crate) fn signal(&self, signal: libc::c_int) {
        let pid = libc::pid_t::try_from(self.child.id()).unwrap();
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    }

    /// Sends SIGTERM and waits for the exit (at most `within`).
    pub(crate) fn terminate(mut self, within: Duration) -> Out {
        self.signal(libc::SIGTERM);
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Out {
                    code: status.code().unwrap_or(-1),
                    stdout: std::fs::read_to_string(&self.out).unwrap(),
                    stderr: std::fs::read_to_string(&self.err).unwrap(),
                };
            }
            if started.elapsed() > within {
                let _ = self.child.kill();
                panic!(
                    "the worker did not exit within {within:?} of SIGTERM:\n{}",
                    std::fs::read_to_string(&self.err).unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// `pactum results --json`'s results.
pub(crate) fn results(root: &Path, url: &str) -> Vec<Value> {
    let mut cmd = common::pactum_in(root);
    cmd.args(["results", "--json", "--queue", url]);
    let out = Out::of(&mut cmd);
    out.status(0);
    out.json()["results"].as_array().unwrap().clone()
}

/// How many results each work-order id has.
pub(crate) fn per_id(results: &[Value]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for r in results {
        *counts.entry(r["work_order_id"].as_str().unwrap().to_string()).or_default() += 1;
    }
    counts
}

/// A worker's ledger records, its hash chain checked. The file must exist: a worker opens
/// (creates) its ledger when it starts, so a missing one means it never got that far, and
/// "nothing in it" would pass for nothing.
fn ledger(root: &Path, name: &str) -> Vec<Value> {
    let path = root.join(format!("{name}.jsonl"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; the worker never opened its ledger", path.display()));
    if text.is_empty() {
        return Vec::new();
    }
    common::check_ledger_chain_independently(&path);
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The complete records of a ledger a worker is writing now (a line being written is left
/// out).
fn ledger_so_far(root: &Path, name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(root.join(format!("{name}.jsonl"))).unwrap_or_default();
    text.split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events<'a>(records: &'a [Value], event: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["event"] == event).collect()
}

pub(crate) fn ids(wos: &[PathBuf]) -> Vec<String> {
    wos.iter().map(|p| p.file_stem().unwrap().to_string_lossy().into_owned()).collect()
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn submit_worker_results_round_trip_with_run_json_results_and_worker_ids() {
    let redis = RedisServer::start();
    let (dir, wos) = project(3, 0);
    let root = dir.path();
    let submitted = submit(root, &redis.url(), &wos);
    submitted.status(0);
    assert_eq!(submitted.stdout.matches(" submitted as ").count(), 3, "{submitted}");

    let collector = Collector::start();
    let otlp = collector.url();
    let worker = Worker::start(root, &redis.url(), "w1", &["--claim-idle", "1s", "--otlp", &otlp]);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 3));
    // The worker's spans go out in batches while it serves, before it stops.
    let spans = collector.wait_for(6);
    let out = worker.terminate(Duration::from_secs(20));
    out.status(0);
    assert!(out.stdout.contains("worker w1: 3 completed"), "{out}");
    // One trace per work order (its root and its exchange), each span naming the worker.
    let traces: std::collections::BTreeSet<&str> =
        spans.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!((spans.len(), traces.len()), (6, 3), "{spans:#?}");
    for span in &spans {
        assert_eq!(span.attr("pactum.worker.id"), "w1");
        assert_eq!(span.resource["service.instance.id"], "w1");
    }

    let got = results(root, &redis.url());
    assert_eq!(per_id(&got).keys().cloned().collect::<Vec<_>>(), ids(&wos));
    // Each result is what `pactum run --json` gives for the work order, keys and values
    // alike (but the time it took).
    let mut run = common::pactum_in(root);
    run.args(["run", "--json", "--ledger", "run.jsonl"]).arg(&wos[0]);
    let ran = common::single_result(Out::of(&mut run).json());
    let first = got.iter().find(|r| r["work_order_id"] == "WO-Q-000").unwrap();
    assert_eq!(first["worker_id"], "w1");
    assert_eq!(first["result"]["ok"], true, "{first:#}");
    assert_eq!(first["result"]["status"], "completed");
    assert_eq!(first["result"]["output"]["label"], "billing");
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&first["result"]), keys(&ran));
    assert_eq!(first["result"]["output"], ran["output"]);
    assert_eq!(first["result"]["usage"], ran["usage"]);

    // Every record of the worker's ledger carries its id; each work order ran once.
    let records = ledger(root, "w1");
    assert!(records.iter().all(|r| r["worker_id"] == "w1"), "{records:#?}");
    assert_eq!(events(&records, "work_order_completed").len(), 3);
    assert_eq!(events(&records, "exchange").len(), 3);
    // Everything was acknowledged.
    assert_eq!(redis.pending(STREAM, GROUP), 0);
    // The entries on both streams are what the published schemas describe.
    assert_fit_the_published_schemas(&redis);

    // `results` for people: one line per result.
    let mut text = common::pactum_in(root);
    text.args(["results", "--queue", &redis.url()]);
    let shown = Out::of(&mut text);
    assert!(shown.stdout.contains("WO-Q-001 ok (completed) by w1"), "{shown}");
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn two_workers_share_a_batch_and_every_id_completes_exactly_once() {
    let redis = RedisServer::start();
    let (dir, wos) = project(16, 40);
    let root = dir.path();
    let args = ["--concurrency", "2", "--claim-idle", "2s"];
    let a = Worker::start(root, &redis.url(), "wa", &args);
    let b = Worker::start(root, &redis.url(), "wb", &args);
    // Both workers are up before any work arrives.
    assert!(redis.wait_for(Duration::from_secs(30), |_| a.started() && b.started()));
    submit(root, &redis.url(), &wos).status(0);

    assert!(redis.wait_for(Duration::from_secs(90), |r| r.xlen("pactum:results") == 16));
    a.terminate(Duration::from_secs(20)).status(0);
    b.terminate(Duration::from_secs(20)).status(0);

    let got = results(root, &redis.url());
    let counts = per_id(&got);
    assert_eq!(counts.keys().cloned().collect::<Vec<_>>(), ids(&wos));
    assert!(counts.values().all(|&n| n == 1), "one result per id: {counts:?}");
    let by = |w: &str| got.iter().filter(|r| r["worker_id"] == w).count();
    assert!(
        by("wa") > 0 && by("wb") > 0,
        "both workers took work: wa {}, wb {}",
        by("wa"),
        by("wb")
    );
    // Across both ledgers, every work order started and completed once: no model was called
    // twice for one id.
    let (la, lb) = (ledger(root, "wa"), ledger(root, "wb"));
    let started: Vec<&Value> = events(&la, "work_order_started")
        .into_iter()
        .chain(events(&lb, "work_order_started"))
        .collect();
    assert_eq!(started.len(), 16);
    assert_eq!(events(&la, "exchange").len() + events(&lb, "exchange").len(), 16);
    assert_eq!(redis.pending(STREAM, GROUP), 0);
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn a_worker_killed_while_holding_entries_loses_nothing() {
    let redis = RedisServer::start();
    let (dir, wos) = project(4, 2500);
    let root = dir.path();
    submit(root, &redis.url(), &wos).status(0);
    let args = ["--concurrency", "2", "--claim-idle", "1s"];
    let doomed = Worker::start(root, &redis.url(), "doomed", &args);
    // It holds two entries and has called the (slow) model for both.
    let holding = redis.wait_for(Duration::from_secs(30), |_| {
        events(&ledger_so_far(root, "doomed"), "work_order_started").len() == 2
    });
    assert!(holding, "the first worker started two work orders");
    assert_eq!(redis.pending(STREAM, GROUP), 2);
    let held: Vec<String> = events(&ledger_so_far(root, "doomed"), "work_order_started")
        .iter()
        .map(|r| r["work_order_id"].as_str().unwrap().to_string())
        .collect();
    doomed.kill();
    let killed = Instant::now();

    let heir = Worker::start(root, &redis.url(), "heir", &args);
    assert!(redis.wait_for(Duration::from_secs(90), |r| r.xlen("pactum:results") == 4));
    let recovered = killed.elapsed();
    heir.terminate(Duration::from_secs(20)).status(0);

    let got = results(root, &redis.url());
    let counts = per_id(&got);
    assert_eq!(counts.keys().cloned().collect::<Vec<_>>(), ids(&wos));
    assert!(counts.values().all(|&n| n == 1), "one result per id: {counts:?}");
    for id in &held {
        let r = got.iter().find(|r| r["work_order_id"] == *id).unwrap();
        assert_eq!(r["worker_id"], "heir", "{id}, orphaned by the kill, completed by the heir");
        assert_eq!(r["result"]["ok"], true);
    }
    assert!(events(&ledger(root, "doomed"), "work_order_completed").is_empty());
    assert_eq!(events(&ledger(root, "heir"), "work_order_completed").len(), 4);
    assert_eq!(redis.pending(STREAM, GROUP), 0);
    // Bounded by --claim-idle: the orphans wait about 1 s before they are claimed, then
    // run (2.5 s each, two at a time beside the two never-taken ones).
    assert!(recovered < Duration::from_secs(60), "{recovered:?}");
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn a_completed_id_resubmitted_is_acknowledged_not_run_again() {
    let redis = RedisServer::start();
    let (dir, wos) = project(1, 0);
    let root = dir.path();
    let worker = Worker::start(root, &redis.url(), "w1", &["--claim-idle", "1s"]);
    submit(root, &redis.url(), &wos).status(0);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 1));

    // `submit` would say `already done`; another client (or a submit racing the worker)
    // puts the same entry on the stream again.
    let (_, fields) = redis.entries(STREAM).remove(0);
    let mut xadd = vec!["XADD", STREAM, "*"];
    for (k, v) in &fields {
        xadd.extend([k.as_str(), v.as_str()]);
    }
    redis.command(&xadd);
    // The second entry is delivered and acknowledged.
    assert!(redis.wait_for(Duration::from_secs(30), |r| {
        let groups = r.command(&["XINFO", "GROUPS", STREAM]);
        let group = groups.items()[0].items();
        let field = |name: &str| {
            let i = group.iter().position(|f| f.text().as_deref() == Some(name)).unwrap();
            group[i + 1].clone()
        };
        field("pending") == pactum::queue::resp::Reply::Integer(0)
            && field("entries-read") == pactum::queue::resp::Reply::Integer(2)
    }));
    let out = worker.terminate(Duration::from_secs(20));
    out.status(0);
    assert!(out.stdout.contains("1 completed, 1 duplicate(s) acknowledged"), "{out}");
    assert!(out.stderr.contains("WO-Q-000: already has a result"), "{out}");
    assert_eq!(results(root, &redis.url()).len(), 1, "no second result");
    let records = ledger(root, "w1");
    assert_eq!(events(&records, "work_order_started").len(), 1, "not run again");
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn work_orders_whose_attempts_died_or_entries_that_are_no_work_orders_go_to_the_dead_letters() {
    let redis = RedisServer::start();
    let (dir, wos) = project(2, 3000);
    let root = dir.path();
    // WO-Q-000's one allowed attempt: a worker takes it, calls the (slow) model and is
    // killed.
    submit(root, &redis.url(), &wos[..1]).status(0);
    let doomed = Worker::start(root, &redis.url(), "doomed", &["--claim-idle", "500ms"]);
    assert!(redis.wait_for(Duration::from_secs(30), |_| {
        !events(&ledger_so_far(root, "doomed"), "work_order_started").is_empty()
    }));
    doomed.kill();
    // WO-Q-001 is taken by a consumer that dies before any attempt (it never leases the
    // id): a delivery, not an attempt.
    submit(root, &redis.url(), &wos[1..]).status(0);
    let taken = redis.command(&[
        "XREADGROUP",
        "GROUP",
        GROUP,
        "ghost",
        "COUNT",
        "1",
        "STREAMS",
        STREAM,
        ">",
    ]);
    assert!(
        taken.items()[0].items()[1].items()[0].items()[1]
            .items()
            .iter()
            .any(|f| { f.text().as_deref() == Some("WO-Q-001") })
    );
    // Something that is no work order, put on the stream behind pactum's back.
    redis.command(&[
        "XADD",
        STREAM,
        "*",
        "work_order_id",
        "WO-X",
        "path",
        "../../etc/passwd",
        "work_order",
        "{}",
    ]);

    let worker = Worker::start(
        root,
        &redis.url(),
        "w1",
        &["--claim-idle", "300ms", "--max-deliveries", "1"],
    );
    assert!(redis.wait_for(Duration::from_secs(60), |r| {
        r.xlen("pactum:dead") == 2 && r.xlen("pactum:results") == 1
    }));
    let out = worker.terminate(Duration::from_secs(20));
    out.status(0);
    assert!(
        out.stdout.contains("1 completed, 0 duplicate(s) acknowledged, 2 dead-lettered"),
        "{out}"
    );

    let dead = redis.entries("pactum:dead");
    assert_eq!(dead.len(), 2, "{dead:?}");
    let orphan = dead.iter().find(|(_, f)| f["work_order_id"] == "WO-Q-000").unwrap();
    assert_eq!(orphan.1["attempts"], "1", "{orphan:?}");
    assert!(
        orphan.1["reason"].contains("1 attempt(s) ran and none finished")
            && orphan.1["reason"].contains("--max-deliveries 1"),
        "{orphan:?}"
    );
    assert!(orphan.1["work_order"].contains("WO-Q-000"), "the entry is kept whole");
    let garbage = dead.iter().find(|(_, f)| f["work_order_id"] == "WO-X").unwrap();
    assert!(
        garbage.1["reason"].contains("not a work order") && garbage.1["reason"].contains("`..`"),
        "{garbage:?}"
    );
    assert_eq!(garbage.1["attempts"], "0");
    // The ghost's delivery was no attempt: WO-Q-001 ran once, by w1, and completed.
    let got = results(root, &redis.url());
    assert_eq!(per_id(&got).into_iter().collect::<Vec<_>>(), [("WO-Q-001".to_string(), 1)]);
    assert_eq!(got[0]["worker_id"], "w1");
    assert_eq!(redis.pending(STREAM, GROUP), 0);
    let started = ledger(root, "w1");
    let started = events(&started, "work_order_started");
    assert_eq!(started.len(), 1, "WO-Q-000 did not run again: {started:?}");
    assert_eq!(started[0]["work_order_id"], "WO-Q-001");
    // Neither the lease nor the count of the dead-lettered id is left behind.
    assert!(redis.command(&["HGETALL", "pactum:attempts"]).items().is_empty());
    assert!(redis.command(&["KEYS", "pactum:lease:*"]).items().is_empty());
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn workers_with_different_claim_idle_one_killed_complete_every_work_order_once_dead_letter_none() {
    // Issue 38: an eager worker (claim-idle 2 s) re-claims the entries a slower one (9 s,
    // renewing every 3 s) holds while they run, and finds them busy each time; after the
    // slower one is killed, its entries stay leased for seconds more and are re-claimed
    // again and again. Redis counts every re-claim as a delivery; only attempts that ran
    // count against --max-deliveries 2.
    let redis = RedisServer::start();
    let (dir, wos) = project(6, 3000);
    let root = dir.path();
    let max = ["--max-deliveries", "2"];
    let slow_args = [&max[..], &["--concurrency", "2", "--claim-idle", "9s"]].concat();
    let slow = Worker::start(root, &redis.url(), "slow", &slow_args);
    assert!(redis.wait_for(Duration::from_secs(30), |_| slow.started()));
    submit(root, &redis.url(), &wos).status(0);
    assert!(redis.wait_for(Duration::from_secs(30), |_| {
        events(&ledger_so_far(root, "slow"), "work_order_started").len() == 2
    }));
    // Threads to spare: after taking the four entries left, the eager worker scans for
    // orphans.
    let eager_args = [&max[..], &["--concurrency", "5", "--claim-idle", "2s"]].concat();
    let eager = Worker::start(root, &redis.url(), "eager", &eager_args);
    // The eager worker has found an entry of the slower one busy: kill the slower one while
    // it holds entries.
    assert!(redis.wait_for(Duration::from_secs(30), |_| {
        std::fs::read_to_string(&eager.err).is_ok_and(|e| e.contains("running elsewhere"))
    }));
    slow.kill();
    let records = ledger_so_far(root, "slow");
    let finished: Vec<&Value> = events(&records, "work_order_completed");
    let held: Vec<String> = events(&records, "work_order_started")
        .iter()
        .map(|r| r["work_order_id"].as_str().unwrap().to_string())
        .filter(|id| !finished.iter().any(|f| f["work_order_id"] == *id))
        .collect();
    assert!(!held.is_empty(), "the slower worker was killed while it held entries");

    // Every entry ends somewhere: a result, or (what must not happen) a dead letter.
    assert!(redis.wait_for(Duration::from_secs(120), |r| {
        r.xlen("pactum:results") + r.xlen("pactum:dead") == 6
    }));
    let out = eager.terminate(Duration::from_secs(20));
    out.status(0);
    assert_eq!(redis.xlen("pactum:dead"), 0, "{:?}\n{out}", redis.entries("pactum:dead"));
    // The orphans were found busy (their leases outlived the kill) before the eager worker
    // took them: each time a delivery for Redis, never an attempt.
    assert!(
        held.iter().any(|id| out.stderr.contains(&format!("{id}: running elsewhere"))),
        "{held:?}\n{out}"
    );
    let got = results(root, &redis.url());
    let counts = per_id(&got);
    assert_eq!(counts.keys().cloned().collect::<Vec<_>>(), ids(&wos));
    assert!(counts.values().all(|&n| n == 1), "one result per id: {counts:?}");
    assert!(got.iter().all(|r| r["result"]["ok"] == true), "{got:#?}");
    for id in &held {
        let r = got.iter().find(|r| r["work_order_id"] == *id).unwrap();
        assert_eq!(r["worker_id"], "eager", "{id}, orphaned by the kill, completed by the heir");
    }
    // Completed exactly once across both ledgers.
    let eager_records = ledger(root, "eager");
    let mut completed: Vec<String> = events(&records, "work_order_completed")
        .into_iter()
        .chain(events(&eager_records, "work_order_completed"))
        .map(|r| r["work_order_id"].as_str().unwrap().to_string())
        .collect();
    completed.sort();
    assert_eq!(completed, ids(&wos));
    assert_eq!(redis.pending(STREAM, GROUP), 0);
    assert!(redis.command(&["HGETALL", "pactum:attempts"]).items().is_empty());
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn sigterm_finishes_the_running_work_order_takes_no_more_and_exits_0() {
    let redis = RedisServer::start();
    let (dir, wos) = project(2, 1500);
    let root = dir.path();
    submit(root, &redis.url(), &wos).status(0);
    let worker = Worker::start(root, &redis.url(), "w1", &["--claim-idle", "5s"]);
    assert!(redis.wait_for(Duration::from_secs(30), |_| {
        !events(&ledger_so_far(root, "w1"), "work_order_started").is_empty()
    }));
    let out = worker.terminate(Duration::from_secs(30));
    out.status(0);
    assert!(out.stdout.contains("worker w1: 1 completed"), "{out}");
    let got = results(root, &redis.url());
    assert_eq!(got.len(), 1, "the running work order finished");
    assert_eq!(got[0]["result"]["ok"], true);
    assert_eq!(redis.pending(STREAM, GROUP), 0, "and was acknowledged");
    // The second was never taken: the next worker finds it.
    let next = Worker::start(root, &redis.url(), "w2", &["--claim-idle", "5s"]);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 2));
    next.terminate(Duration::from_secs(20)).status(0);
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn the_queue_password_never_appears_in_output_ledgers_or_errors() {
    const PASSWORD: &str = "q-s3cret-Pa55word";
    let redis = RedisServer::with_password(PASSWORD);
    let url = redis.url();
    assert!(url.contains(PASSWORD));
    let (dir, wos) = project(1, 0);
    let root = dir.path();
    let mut printed = String::new();
    let submitted = submit(root, &url, &wos);
    submitted.status(0);
    printed.push_str(&submitted.to_string());
    let worker = Worker::start(root, &url, "w1", &["--claim-idle", "1s"]);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 1));
    let out = worker.terminate(Duration::from_secs(20));
    out.status(0);
    printed.push_str(&out.to_string());
    assert!(
        out.stderr.contains("redis://127.0.0.1:"),
        "the queue is named, without its password: {out}"
    );
    let mut read = common::pactum_in(root);
    read.args(["results", "--queue", &url]);
    printed.push_str(&Out::of(&mut read).status(0).to_string());

    // A wrong password, a password in PACTUM_QUEUE_PASSWORD, and a URL that does not parse.
    let wrong = format!("redis://:wrong-{PASSWORD}@127.0.0.1:{}/0", redis.port());
    for json in [false, true] {
        let mut cmd = common::pactum_in(root);
        cmd.args(["results", "--queue", &wrong]);
        if json {
            cmd.arg("--json");
        }
        let out = Out::of(&mut cmd);
        assert_eq!(out.code, 1, "{out}");
        assert!(format!("{out}").contains("queue_unavailable"), "{out}");
        assert!(out.to_string().contains("the login was refused"), "{out}");
        printed.push_str(&out.to_string());
    }
    let mut env = common::pactum_in(root);
    env.args(["results", "--queue", &format!("redis://127.0.0.1:{}/0", redis.port())])
        .env("PACTUM_QUEUE_PASSWORD", PASSWORD);
    printed.push_str(&Out::of(&mut env).status(0).to_string());
    let mut bad = common::pactum_in(root);
    bad.args(["results", "--queue", &format!("redis://:{PASSWORD}@127.0.0.1:port/0")]);
    let bad = Out::of(&mut bad);
    assert!(bad.stderr.contains("usage_error") && bad.stderr.contains("port"), "{bad}");
    printed.push_str(&bad.to_string());

    assert!(!printed.contains(PASSWORD), "the password was printed:\n{printed}");
    let ledger_text = std::fs::read_to_string(root.join("w1.jsonl")).unwrap();
    assert!(!ledger_text.contains(PASSWORD));
    let results_text = format!("{:?}", redis.entries("pactum:results"));
    assert!(!results_text.contains(PASSWORD));
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn the_readme_many_workers_section_runs_as_written() {
    let blocks = crate::readme_tour::sh_blocks("Many workers");
    assert_eq!(blocks.len(), 1, "one ```sh block");
    // The block as written, on a free port instead of 6379 and with the binary the tests
    // built instead of `cargo build`'s.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let bin = env!("CARGO_BIN_EXE_pactum");
    let script = blocks[0]
        .replace("6379", &port.to_string())
        .replace("cargo build -q\n", "")
        .replace("target/debug/pactum", bin);
    assert!(!script.contains("cargo"), "{script}");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::copy_shipped(root);
    for folder in ["work_orders", "fixtures", "frameworks", "docs"] {
        common::copy_tree(&common::repo().join(folder), &root.join(folder));
    }
    let out = crate::readme_tour::bash(root, &script);
    out.status(0);
    // Every demo work order, exactly once, all by the worker that survived.
    let lines: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("WO-DEMO-")).collect();
    let mut shown: Vec<String> = lines
        .iter()
        .filter(|l| l.contains(") by "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    shown.sort();
    assert_eq!(
        shown,
        ["WO-DEMO-CLASSIFY-001", "WO-DEMO-REFUND-001", "WO-DEMO-RUNBOOK-001", "WO-DEMO-SUM-001"],
        "{out}"
    );
    assert!(
        lines
            .iter()
            .filter(|l| l.contains(") by "))
            .all(|l| l.ends_with(" by b") && l.contains(" ok (")),
        "{out}"
    );
    assert!(out.stdout.contains("worker b: 4 completed"), "{out}");
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn a_duplicate_of_a_running_id_waits_and_is_acknowledged_not_run_twice() {
    let redis = RedisServer::start();
    let (dir, wos) = project(1, 2000);
    let root = dir.path();
    // The same work order twice: both entries are taken at once by two threads.
    submit(root, &redis.url(), &wos).status(0);
    submit(root, &redis.url(), &wos).status(0);
    // The duplicate is redelivered every 300 ms while the first runs for 2 s: past
    // --max-deliveries 2, but never dead-lettered while its id runs.
    let worker = Worker::start(
        root,
        &redis.url(),
        "w1",
        &["--concurrency", "2", "--claim-idle", "300ms", "--max-deliveries", "2"],
    );
    assert!(redis.wait_for(Duration::from_secs(60), |r| {
        r.xlen("pactum:results") == 1 && r.pending(STREAM, GROUP) == 0
    }));
    let out = worker.terminate(Duration::from_secs(20));
    out.status(0);
    assert!(
        out.stdout.contains("1 completed, 1 duplicate(s) acknowledged, 0 dead-lettered"),
        "{out}"
    );
    assert!(out.stderr.contains("WO-Q-000: running elsewhere"), "{out}");
    let records = ledger(root, "w1");
    assert_eq!(events(&records, "work_order_started").len(), 1, "the model was called once");
    assert_eq!(events(&records, "exchange").len(), 1);
    assert_eq!(redis.xlen("pactum:dead"), 0);
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn results_follow_prints_each_result_as_it_is_written_until_sigterm() {
    let redis = RedisServer::start();
    let (dir, wos) = project(2, 0);
    let root = dir.path();
    let out_path = root.join("follow.out");
    let mut follow = Command::new(env!("CARGO_BIN_EXE_pactum"));
    follow
        .current_dir(root)
        .args(["results", "--follow", "--json", "--queue", &redis.url()])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(Stdio::null());
    let follower = Worker {
        child: follow.spawn().unwrap(),
        out: out_path.clone(),
        err: root.join("follow.err"),
    };
    std::fs::write(&follower.err, "").unwrap();
    // Nothing yet: the follower waits in XREAD; then a worker writes two results, which the
    // follower prints as they come.
    assert!(redis.wait_for(Duration::from_secs(30), |r| {
        r.command(&["CLIENT", "LIST"]).text().is_some_and(|l| l.contains("cmd=xread"))
    }));
    submit(root, &redis.url(), &wos).status(0);
    let worker = Worker::start(root, &redis.url(), "w1", &["--claim-idle", "1s"]);
    let printed = |n: usize| std::fs::read_to_string(&out_path).unwrap().lines().count() == n;
    assert!(redis.wait_for(Duration::from_secs(60), |_| printed(2)), "two lines followed");
    worker.terminate(Duration::from_secs(20)).status(0);
    let out = follower.terminate(Duration::from_secs(10));
    out.status(0);
    let docs: Vec<Value> = out.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let ids: Vec<&str> = docs.iter().map(|d| d["work_order_id"].as_str().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(sorted, ["WO-Q-000", "WO-Q-001"], "{out}");
    assert!(docs.iter().all(|d| d["worker_id"] == "w1" && d["result"]["ok"] == true), "{out}");
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn a_workers_spans_are_the_spans_its_ledger_exports() {
    let redis = RedisServer::start();
    let (dir, wos) = project(3, 0);
    let root = dir.path();
    submit(root, &redis.url(), &wos).status(0);
    let live = Collector::start();
    let worker =
        Worker::start(root, &redis.url(), "w1", &["--claim-idle", "1s", "--otlp", &live.url()]);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 3));
    worker.terminate(Duration::from_secs(20)).status(0);
    let later = Collector::start();
    let mut cmd = common::pactum_in(root);
    cmd.args(["ledger", "export", "--otlp", &later.url(), "w1.jsonl"]);
    Out::of(&mut cmd).status(0);
    let sorted = |mut spans: Vec<crate::otlp::Span>| {
        spans.sort_by(|a, b| (&a.trace_id, &a.span_id).cmp(&(&b.trace_id, &b.span_id)));
        spans
    };
    let (live, exported) = (sorted(live.spans()), sorted(later.spans()));
    assert_eq!(live.len(), 6, "{live:#?}");
    // The same spans, under the same resource: the worker's id is each record's.
    assert_eq!(live, exported);
    assert!(exported.iter().all(|s| s.resource["service.instance.id"] == "w1"));
}

/// A "queue" on 127.0.0.1 that answers every connection with the start of a reply, then
/// one more byte every 100 ms for as long as the connection stays open.
fn trickling_queue() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}/0", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = stream.write_all(b"+");
                while stream.write_all(b"x").is_ok() {
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
    });
    url
}

#[test]
fn a_queue_that_trickles_its_replies_holds_submit_worker_and_results_no_longer_than_one_deadline() {
    // Issue 44: each byte comes well within the time a reply has, so a limit per socket
    // read never fires; the one deadline per reply (--queue-timeout) does.
    let url = trickling_queue();
    let (dir, wos) = project(1, 0);
    let root = dir.path();
    let wo = wos[0].to_str().unwrap();
    let commands: [&[&str]; 3] =
        [&["submit", wo], &["worker", "--worker-id", "w1", "--ledger", "w1.jsonl"], &["results"]];
    let children: Vec<(String, Child)> = commands
        .iter()
        .map(|args| {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_pactum"));
            cmd.current_dir(root)
                .args(*args)
                .args(["--json", "--queue", &url, "--queue-timeout", "1s"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            (args[0].to_string(), cmd.spawn().unwrap())
        })
        .collect();
    // Generous: on a loaded machine a 1 s deadline still ends each well before this.
    let started = Instant::now();
    for (name, mut child) in children {
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("`pactum {name}` still waits for the trickled reply after 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = Out::from(child.wait_with_output().unwrap());
        assert_eq!(out.code, 1, "{name}: {out}");
        let doc = out.json();
        assert_eq!(doc["code"], "queue_unavailable", "{name}: {out}");
        assert!(
            doc["message"].as_str().unwrap().contains("no complete answer within 1s"),
            "{name}: {out}"
        );
    }
}

/// Beside the good work orders of `project`, three that `run` would refuse before any call:
/// a mistyped contract id, an input that does not fit the contract's `input_schema`, and a
/// file that is no work order. Their paths, in that order.
fn refusable(root: &Path) -> [PathBuf; 3] {
    let mut wo = json!({
        "work_order_id": "WO-R-001",
        "kind": "exchange",
        "contract": "PRC-CLASIFY-001@^1",
        "input": {"user_input": "I was charged twice"},
        "provider": {"fixtures": "../fixtures/q.json"},
    });
    let mistyped = root.join("work_orders/mistyped.json");
    std::fs::write(&mistyped, wo.to_string()).unwrap();
    wo["work_order_id"] = json!("WO-R-002");
    wo["contract"] = json!("PRC-CLASSIFY-001@^1");
    wo["input"] = json!({"user_input": "", "mode": "sloppy"});
    let misfit = root.join("work_orders/misfit.json");
    std::fs::write(&misfit, wo.to_string()).unwrap();
    let garbage = root.join("work_orders/garbage.json");
    std::fs::write(&garbage, r#"{"work_order_id": "WO-R-003", "kind": "sometimes"}"#).unwrap();
    [mistyped, misfit, garbage]
}

/// Checks a refusal of the batch `good` + `refusable`: exit 1, each refused file named
/// with its code, in text and in JSON.
fn assert_refused(root: &Path, url: &str, batch: &[PathBuf]) {
    let out = submit(root, url, batch);
    assert_eq!(out.code, 1, "{out}");
    assert!(!out.stdout.contains("submitted as"), "{out}");
    for (file, code) in [
        ("work_orders/mistyped.json: refused", "error[contract_not_found]"),
        ("work_orders/misfit.json: refused", "error[input_schema_invalid]"),
        ("work_orders/garbage.json: refused", "error[work_order_invalid]"),
    ] {
        let at = out.stderr.find(file).unwrap_or_else(|| panic!("{file}: {out}"));
        assert!(out.stderr[at..].contains(code), "{code} after {file}: {out}");
    }
    assert!(out.stderr.contains("/user_input: \"\" is shorter") && out.stderr.contains("/mode: "));
    assert!(out.stderr.contains("3 of 4 work order(s) refused"), "{out}");
    assert!(out.stderr.contains("nothing was submitted"), "{out}");

    let mut cmd = common::pactum_in(root);
    cmd.arg("submit").args(batch).args(["--json", "--queue", url]);
    let out = Out::of(&mut cmd);
    assert_eq!(out.code, 1, "{out}");
    let doc = out.json();
    assert_eq!(
        (doc["ok"].clone(), doc["code"].clone()),
        (json!(false), json!("contract_not_found"))
    );
    assert_eq!(
        doc["refused"],
        json!(["work_orders/mistyped.json", "work_orders/misfit.json", "work_orders/garbage.json"])
    );
    let codes: Vec<(&str, &str)> = doc["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["file"].as_str().unwrap(), e["code"].as_str().unwrap()))
        .collect();
    assert!(codes.contains(&("work_orders/misfit.json", "input_schema_invalid")), "{doc:#}");
    assert!(codes.contains(&("work_orders/garbage.json", "work_order_invalid")), "{doc:#}");
}

#[test]
fn submit_refuses_what_run_would_refuse_before_it_connects_to_the_queue() {
    // Nothing listens at the queue: a refusal that came after connecting would be
    // queue_unavailable.
    let (dir, wos) = project(1, 0);
    let root = dir.path();
    let batch: Vec<PathBuf> = wos.iter().cloned().chain(refusable(root)).collect();
    assert_refused(root, "redis://127.0.0.1:1/0", &batch);
    // What submit refuses, run refuses too, with the same codes.
    let mut run = common::pactum_in(root);
    run.args(["run", "--json", "--ledger", "run.jsonl"]).args(&batch[1..]);
    let ran = Out::of(&mut run);
    let ran = ran.json();
    let codes: Vec<&str> =
        ran["results"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["contract_not_found", "input_schema_invalid", "work_order_invalid"]);
    // A kernel work order: its roles' contracts are what it pins.
    let kernel = root.join("work_orders/kernel.json");
    let mut wo = json!({"work_order_id": "WO-K-001", "kind": "kernel", "request": "Add 2 and 3.",
                        "contracts": {"plan": "PRC-PLAN-009@^1"}});
    std::fs::write(&kernel, wo.to_string()).unwrap();
    let out = submit(root, "redis://127.0.0.1:1/0", std::slice::from_ref(&kernel));
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("error[contract_not_found]: contract PRC-PLAN-009"), "{out}");
    wo["contracts"] = json!({"plan": "PRC-PLAN-001@^1"});
    std::fs::write(&kernel, wo.to_string()).unwrap();
    let out = submit(root, "redis://127.0.0.1:1/0", &[kernel]);
    assert!(out.stderr.contains("queue_unavailable"), "checked, then sent: {out}");
}

#[test]
fn submit_refuses_an_unknown_provider_and_fixtures_that_do_not_load_as_run_does() {
    let (dir, wos) = project(1, 0);
    let root = dir.path();
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&wos[0]).unwrap()).unwrap();
    let mut unknown = good.clone();
    unknown["work_order_id"] = json!("WO-P-001");
    unknown["provider"] = json!({"name": "opnai"});
    let unknown_path = root.join("work_orders/unknown.json");
    std::fs::write(&unknown_path, unknown.to_string()).unwrap();
    let mut broken = good.clone();
    broken["work_order_id"] = json!("WO-P-002");
    broken["provider"] = json!({"fixtures": "../fixtures/broken.json"});
    std::fs::write(root.join("fixtures/broken.json"), "{\"responses\": [").unwrap();
    let broken_path = root.join("work_orders/broken.json");
    std::fs::write(&broken_path, broken.to_string()).unwrap();
    let mut missing = good.clone();
    missing["work_order_id"] = json!("WO-P-003");
    missing["provider"] = json!({"fixtures": "../fixtures/absent.json"});
    let missing_path = root.join("work_orders/missing.json");
    std::fs::write(&missing_path, missing.to_string()).unwrap();
    let write = |name: &str, wo: serde_json::Value| {
        let path = root.join(format!("work_orders/{name}.json"));
        std::fs::write(&path, wo.to_string()).unwrap();
        path
    };
    let with_provider = |id: &str, provider: serde_json::Value| {
        let mut wo = missing.clone();
        wo["work_order_id"] = json!(id);
        wo["provider"] = provider;
        wo
    };
    let replay_bare = write("replay-bare", with_provider("WO-P-004", json!({"name": "replay"})));
    let replay_missing = write(
        "replay-missing",
        with_provider("WO-P-005", json!({"name": "replay", "cassette": "../nope/cassette.json"})),
    );
    let scripted_bare =
        write("scripted-bare", with_provider("WO-P-006", json!({"name": "scripted"})));
    // A cassette without a provider name is replayed (never the dry-run stand-in).
    let replay_unnamed = write(
        "replay-unnamed",
        with_provider("WO-P-008", json!({"cassette": "../nope/cassette.json"})),
    );
    let tools = write(
        "tools",
        json!({"work_order_id": "WO-P-007", "kind": "kernel", "request": "Add 2 and 3.",
               "tools": ["calculator", "no_such_tool"],
               "provider": {"fixtures": "../fixtures/q.json"}}),
    );
    let batch = [
        unknown_path,
        broken_path,
        missing_path,
        replay_bare,
        replay_missing,
        scripted_bare,
        tools,
        replay_unnamed,
    ];
    let out = submit(root, "redis://127.0.0.1:1/0", &batch);
    assert_eq!(out.code, 1, "{out}");
    assert!(!out.stderr.contains("queue_unavailable"), "refused before connecting: {out}");
    assert!(
        out.stderr.contains("work_orders/unknown.json: refused")
            && out.stderr.contains("error[provider_not_configured]")
            && out.stderr.contains("unknown provider `opnai`"),
        "{out}"
    );
    assert!(out.stderr.contains("work_orders/broken.json: refused"), "{out}");
    for name in
        ["missing", "replay-bare", "replay-missing", "scripted-bare", "tools", "replay-unnamed"]
    {
        assert!(out.stderr.contains(&format!("work_orders/{name}.json: refused")), "{out}");
    }
    assert!(out.stderr.contains("error[tool_not_found]"), "{out}");
    // run refuses each of them with the same codes.
    let mut run = common::pactum_in(root);
    run.args(["run", "--json", "--ledger", "run.jsonl"]).args(&batch);
    let ran = Out::of(&mut run).json();
    let run_codes: Vec<String> = ran["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(run_codes.len(), batch.len(), "{ran:#}");
    assert_eq!(run_codes[0], "provider_not_configured", "{ran:#}");
    for code in &run_codes {
        assert!(
            out.stderr.contains(&format!("error[{code}]")),
            "submit and run agree: {code} {out}"
        );
    }
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn submit_enqueues_nothing_of_a_refused_batch_and_says_already_done_for_an_id_with_a_result() {
    let redis = RedisServer::start();
    let (dir, wos) = project(1, 0);
    let root = dir.path();
    let batch: Vec<PathBuf> = wos.iter().cloned().chain(refusable(root)).collect();
    assert_refused(root, &redis.url(), &batch);
    assert_eq!(redis.xlen(STREAM), 0, "nothing of the refused batch was enqueued");

    // The good one alone runs; submitted again, it is already done and not enqueued.
    submit(root, &redis.url(), &wos).status(0);
    let worker = Worker::start(root, &redis.url(), "w1", &["--claim-idle", "1s"]);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 1));
    worker.terminate(Duration::from_secs(20)).status(0);
    let result = redis.entries("pactum:results")[0].0.clone();
    let again = submit(root, &redis.url(), &wos);
    again.status(0);
    assert!(
        again.stdout.contains(&format!("WO-Q-000 already done (result {result}); not submitted")),
        "{again}"
    );
    assert!(!again.stdout.contains("submitted as"), "{again}");
    let mut cmd = common::pactum_in(root);
    cmd.arg("submit").args(&wos).args(["--json", "--queue", &redis.url()]);
    let doc = Out::of(&mut cmd).status(0).json();
    assert_eq!(doc["submitted"], json!([]));
    assert_eq!(doc["already_done"][0]["work_order_id"], "WO-Q-000");
    assert_eq!(doc["already_done"][0]["result"], result.as_str());
    assert_eq!(redis.xlen(STREAM), 1, "only the first submission is on the stream");
}

/// Every entry of the work stream and the results stream fits its schema in `schemas/`,
/// and each result's `result` is JSON.
fn assert_fit_the_published_schemas(redis: &RedisServer) {
    let json = |fields: &BTreeMap<String, String>| {
        Value::Object(fields.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
    };
    let (work, done) = (redis.entries(STREAM), redis.entries("pactum:results"));
    assert!(!work.is_empty() && !done.is_empty());
    for (id, fields) in &work {
        let findings = pactum::schema::check_queue_entry(&json(fields));
        assert_eq!(findings, vec![], "{id}: {fields:?}");
    }
    for (id, fields) in &done {
        let findings = pactum::schema::check_queue_result(&json(fields));
        assert_eq!(findings, vec![], "{id}: {fields:?}");
        let result: Value = serde_json::from_str(&fields["result"]).unwrap();
        assert_eq!(result["ok"].to_string(), fields["ok"], "{id}");
        assert_eq!(result["work_order_id"].as_str(), Some(fields["work_order_id"].as_str()));
    }
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn an_entry_a_plain_redis_client_writes_without_a_path_runs_as_the_readme_says() {
    // Issue 43: another service submits with its own client — the README's "Queue entries
    // and results" block, redis-cli, no `path` — and reads the result back.
    let blocks = crate::readme_tour::sh_blocks("Queue entries and results");
    assert_eq!(blocks.len(), 1, "one ```sh block");
    let redis = RedisServer::start();
    let script = blocks[0].replace("6379", &redis.port().to_string());
    let (submit_line, read) = script.split_once('\n').unwrap();
    assert!(submit_line.starts_with("redis-cli") && !submit_line.contains("path"), "{script}");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::copy_shipped(root);
    common::copy_tree(&common::repo().join("fixtures"), &root.join("fixtures"));
    let worker = Worker::start(root, &redis.url(), "w1", &["--claim-idle", "1s"]);
    assert!(redis.wait_for(Duration::from_secs(30), |_| worker.started()));

    crate::readme_tour::bash(root, submit_line).status(0);
    assert_fit_the_published_schemas_so_far(&redis);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 1));
    let out = worker.terminate(Duration::from_secs(20));
    out.status(0);
    assert_eq!(redis.xlen("pactum:dead"), 0, "{out}");
    // Its fixtures were found from the project root, with no file of its own.
    let got = results(root, &redis.url());
    assert_eq!(got[0]["work_order_id"], "WO-MINE-001");
    assert_eq!(got[0]["result"]["ok"], true, "{:#}", got[0]);
    assert_eq!(got[0]["result"]["output"]["label"], "billing");
    assert_fit_the_published_schemas(&redis);
    let records = ledger(root, "w1");
    assert_eq!(events(&records, "work_order_completed")[0]["work_order_id"], "WO-MINE-001");

    // The rest of the block reads it back (its wait for a worker is not needed here).
    let read = crate::readme_tour::bash(root, &read.replace("sleep 2\n", ""));
    read.status(0);
    let result_id = redis.entries("pactum:results")[0].0.clone();
    assert_eq!(read.stdout.lines().next(), Some(result_id.as_str()), "{read}");
    assert!(read.stdout.contains("WO-MINE-001") && read.stdout.contains("billing"), "{read}");
}

/// The work stream's entries fit `queue_entry.schema.json` (before any result exists).
fn assert_fit_the_published_schemas_so_far(redis: &RedisServer) {
    for (id, fields) in redis.entries(STREAM) {
        let doc = Value::Object(fields.iter().map(|(k, v)| (k.clone(), json!(v))).collect());
        assert_eq!(pactum::schema::check_queue_entry(&doc), vec![], "{id}: {fields:?}");
    }
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn results_exits_1_when_a_result_shown_failed_and_names_the_failure_once() {
    // Issue 43 item 11.
    let redis = RedisServer::start();
    let (dir, wos) = project(1, 0);
    let root = dir.path();
    submit(root, &redis.url(), &wos).status(0);
    // A work order `submit` would refuse, put on the stream by another client: it runs,
    // and fails.
    let bad = json!({"work_order_id": "WO-R-001", "kind": "exchange",
                     "contract": "PRC-CLASIFY-001@^1", "input": {"user_input": "hi"}});
    redis.command(&[
        "XADD",
        STREAM,
        "*",
        "work_order_id",
        "WO-R-001",
        "work_order",
        &bad.to_string(),
    ]);
    let worker = Worker::start(root, &redis.url(), "w1", &["--claim-idle", "1s"]);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 2));
    worker.terminate(Duration::from_secs(20)).status(0);

    let mut text = common::pactum_in(root);
    text.args(["results", "--queue", &redis.url()]);
    let out = Out::of(&mut text);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stdout.contains("WO-Q-000 ok (completed) by w1\n"), "{out}");
    assert!(out.stdout.contains("WO-R-001 failed by w1: contract_not_found\n"), "{out}");
    assert!(!out.stdout.contains("failed (failed)"), "{out}");

    let mut cmd = common::pactum_in(root);
    cmd.args(["results", "--json", "--queue", &redis.url()]);
    let out = Out::of(&mut cmd);
    assert_eq!(out.code, 1, "{out}");
    let doc = out.json();
    assert_eq!(
        (doc["ok"].clone(), doc["code"].clone()),
        (json!(false), json!("contract_not_found"))
    );
    assert!(doc["message"].as_str().unwrap().starts_with("WO-R-001: "), "{doc:#}");
    assert_eq!(doc["errors"][0]["code"], "contract_not_found");
    assert_eq!(doc["results"].as_array().unwrap().len(), 2);

    // --follow, stopped after both were shown: 1 as well.
    let out_path = root.join("follow.out");
    let mut follow = Command::new(env!("CARGO_BIN_EXE_pactum"));
    follow
        .current_dir(root)
        .args(["results", "--follow", "--queue", &redis.url()])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(Stdio::null());
    let err = root.join("follow.err");
    std::fs::write(&err, "").unwrap();
    let follower = Worker { child: follow.spawn().unwrap(), out: out_path.clone(), err };
    let printed = || std::fs::read_to_string(&out_path).unwrap().lines().count() == 2;
    assert!(redis.wait_for(Duration::from_secs(30), |_| printed()));
    let out = follower.terminate(Duration::from_secs(10));
    assert_eq!(out.code, 1, "{out}");
}
