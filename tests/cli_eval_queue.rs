//! `pactum eval --queue` (SPEC §27) against a real Redis: the shipped example
//! (`examples/eval-classify`, offline replay of its cassette) evaluated by two workers gives
//! the report a local run gives, byte for byte in JSON but for the ledger's head; a worker
//! killed with SIGKILL while it holds a case changes nothing in the report (the case is
//! claimed by the other worker after `--claim-idle`). Every case's exchanges are in the
//! ledgers of the workers that ran them.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli_worker::Worker;
use crate::common::{self, Out};
use crate::redis::RedisServer;

/// A copy of the shipped eval example.
fn example() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_tree(&common::repo().join("examples/eval-classify"), dir.path());
    dir
}

/// `eval --json` (its ledger's head taken out: each run writes its own).
fn report(out: &Out) -> Value {
    let mut doc = out.json();
    doc.as_object_mut().unwrap().remove("ledger");
    doc
}

/// `pactum eval --json ARGS` started in the background, its output to files.
fn eval_in_background(root: &Path, args: &[&str]) -> (Child, std::path::PathBuf) {
    let out = root.join("eval.out");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pactum"));
    cmd.current_dir(root).env("NO_COLOR", "1");
    for var in common::PROVIDER_VARS {
        cmd.env_remove(var);
    }
    cmd.args(["eval", "--json"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(root.join("eval.err")).unwrap());
    (cmd.spawn().unwrap(), out)
}

/// Waits for the background eval (at most `within`: a hang fails the test).
fn finish(mut child: Child, out: &Path, within: Duration) -> Out {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let stderr =
                std::fs::read_to_string(out.with_file_name("eval.err")).unwrap_or_default();
            return Out {
                code: status.code().unwrap_or(-1),
                stdout: std::fs::read_to_string(out).unwrap(),
                stderr,
            };
        }
        if started.elapsed() > within {
            let _ = child.kill();
            panic!("eval --queue did not finish within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The exchange records of a worker's ledger.
fn exchanges(root: &Path, name: &str) -> usize {
    let text = std::fs::read_to_string(root.join(format!("{name}.jsonl"))).unwrap_or_default();
    if !text.is_empty() {
        common::check_ledger_chain_independently(&root.join(format!("{name}.jsonl")));
    }
    text.lines().filter(|l| serde_json::from_str::<Value>(l).unwrap()["kind"] == "exchange").count()
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn eval_on_two_workers_reports_what_the_local_run_reports() {
    let redis = RedisServer::start();
    let dir = example();
    let root = dir.path();
    let mut cmd = common::pactum_in(root);
    let local = Out::of(cmd.args(["eval", "--json"]));
    local.status(0);
    assert_eq!(local.json()["suites"][0]["cases"], 16, "{local}");

    let workers: Vec<Worker> =
        ["a", "b"].iter().map(|n| Worker::start(root, &redis.url(), n, &[])).collect();
    let mut cmd = common::pactum_in(root);
    let spread = Out::of(cmd.args(["eval", "--json", "--queue", &redis.url()]));
    spread.status(0);
    assert_eq!(report(&spread), report(&local), "the same report, number for number");
    // The text report too (what a person reads), and every case ran on a worker.
    let mut cmd = common::pactum_in(root);
    let text = Out::of(cmd.args(["eval", "--queue", &redis.url()]));
    let mut cmd = common::pactum_in(root);
    assert_eq!(text.stdout, Out::of(cmd.args(["eval"])).stdout);
    // The README's comparison: the candidate against the baseline, answers from the
    // cassette only; the same regressions, p-value and Markdown (and the same exit 1).
    let compare = [
        "eval",
        "--contract",
        "PRC-CLASSIFY-001@1.1.0",
        "--against",
        "PRC-CLASSIFY-001@1.0.0",
        "--allow-draft",
        "--replay",
        "--format",
        "markdown",
    ];
    let mut cmd = common::pactum_in(root);
    let here = Out::of(cmd.args(compare));
    here.status(1);
    let mut cmd = common::pactum_in(root);
    let there = Out::of(cmd.args(compare).args(["--queue", &redis.url()]));
    there.status(1);
    assert_eq!(there.stdout, here.stdout);
    for w in workers {
        w.terminate(Duration::from_secs(30)).status(0);
    }
    // Two spread runs of 16 cases, and the comparison's 16 on each of two versions.
    assert_eq!(exchanges(root, "a") + exchanges(root, "b"), 2 * 16 + 2 * 16);
    // The coordinator's ledger holds each evaluation's record, the evidence of a spread run
    // the local run's.
    let mut cmd = common::pactum_in(root);
    let q = Out::of(cmd.args(["ledger", "query", "--event", "eval_completed", "--json"]));
    let records = q.json()["records"].as_array().unwrap().clone();
    assert_eq!(records.len(), 6, "three local runs and three spread ones: {q}");
    // Newest first: the comparison spread and local, then the plain text and JSON runs.
    let evidence = |r: &Value| r["suites"].clone();
    assert_eq!(evidence(&records[0]), evidence(&records[1]));
    assert!(records[2..].iter().all(|r| evidence(r) == evidence(&records[2])), "{records:?}");
    // Each worker's exchange names the spread run it belongs to (its spans join that run's
    // trace): the runs the coordinator recorded, each its own.
    let runs: Vec<&str> = records.iter().map(|r| r["eval_run"].as_str().unwrap()).collect();
    let mut distinct = runs.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 6, "{runs:?}");
    let mut named = std::collections::BTreeSet::new();
    for name in ["a", "b"] {
        let text = std::fs::read_to_string(root.join(format!("{name}.jsonl"))).unwrap();
        for line in text.lines() {
            let r: Value = serde_json::from_str(line).unwrap();
            if r["kind"] == "exchange" {
                let run = r["eval_run"].as_str().unwrap_or_default().to_string();
                assert!(runs.contains(&run.as_str()), "{r}");
                named.insert(run);
            }
        }
    }
    assert_eq!(named.len(), 3, "the three spread runs: {named:?}");
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn a_worker_killed_holding_a_case_changes_nothing_in_the_report() {
    let redis = RedisServer::start();
    let dir = example();
    let root = dir.path();
    let mut cmd = common::pactum_in(root);
    let local = Out::of(cmd.args(["eval", "--json"]));
    local.status(0);
    // The doomed worker's ledger is locked by the test, as another writer would hold it: the
    // worker takes a case and waits inside its first append, holding the case's entry.
    let held = std::fs::File::create(root.join("doomed.jsonl")).unwrap();
    held.lock().unwrap();
    let doomed = Worker::start(root, &redis.url(), "doomed", &["--claim-idle", "1s"]);
    let (eval, out) = eval_in_background(root, &["--queue", &redis.url()]);
    let holding = redis.wait_for(Duration::from_secs(60), |r| {
        r.xlen("pactum") == 16 && r.pending("pactum", "pactum-workers") == 1
    });
    assert!(holding, "the doomed worker holds one case");
    doomed.kill();
    held.unlock().unwrap();
    drop(held);
    assert_eq!(redis.xlen("pactum:results"), 0, "nothing finished before the kill");
    let heir = Worker::start(root, &redis.url(), "heir", &["--claim-idle", "1s"]);
    let spread = finish(eval, &out, Duration::from_secs(120));
    spread.status(0);
    heir.terminate(Duration::from_secs(30)).status(0);
    assert_eq!(report(&spread), report(&local), "the kill changes nothing in the report");
    assert_eq!(exchanges(root, "doomed"), 0, "the killed attempt wrote nothing");
    assert_eq!(exchanges(root, "heir"), 16, "the heir ran every case, the orphan too");
    assert_eq!(redis.xlen("pactum:results"), 16, "one result per case");
}

#[test]
#[ignore = "needs PostgreSQL (Debian package postgresql) and redis-server, and root (setpriv); .ci/run installs them"]
fn the_readme_fleet_section_runs_as_written() {
    let blocks =
        crate::readme_tour::sh_blocks("One ledger for a fleet, and evals across the workers");
    assert_eq!(blocks.len(), 1, "one ```sh block");
    // As written, on free ports instead of 6379 and 5433, with the binary the tests built.
    let free = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (redis_port, pg_port) = (free(), free());
    let script = blocks[0]
        .replace(
            "cargo build -q && P=$PWD/target/debug/pactum",
            &format!("P={}", env!("CARGO_BIN_EXE_pactum")),
        )
        .replace("6379", &redis_port.to_string())
        .replace("5433", &pg_port.to_string());
    assert!(!script.contains("cargo"), "{script}");
    let dir = tempfile::tempdir().unwrap();
    let example = dir.path().join("examples/eval-classify");
    common::copy_tree(&common::repo().join("examples/eval-classify"), &example);
    let out = crate::readme_tour::bash(dir.path(), &script);
    out.status(0);
    let mut cmd = common::pactum_in(&example);
    let local = Out::of(cmd.args(["eval"]));
    assert!(out.stdout.contains(&local.stdout), "the local report:\n{}\n{out}", local.stdout);
    assert!(out.stdout.contains(": 16 records, chain intact"), "{out}");
    assert!(out.stdout.contains("16 copied, 0 already there"), "{out}");
    assert_eq!(common::check_ledger_chain_independently(&example.join("fleet.jsonl")), 16);
}

#[test]
#[ignore = "needs redis-server (Debian package redis-server; .ci/run installs it)"]
fn a_worker_on_another_version_of_the_suite_refuses_its_cases_and_the_eval_says_so() {
    let redis = RedisServer::start();
    let (here, there) = (example(), example());
    // The worker's checkout holds another suite (its threshold changed).
    let suite = there.path().join("evals/classify/EVAL-CLASSIFY-001.json");
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(&suite, text.replace("\"pass_rate\": 0.9", "\"pass_rate\": 0.5")).unwrap();
    let worker = Worker::start(there.path(), &redis.url(), "elsewhere", &[]);
    let (eval, out) = eval_in_background(here.path(), &["--queue", &redis.url()]);
    let refused = finish(eval, &out, Duration::from_secs(120));
    worker.terminate(Duration::from_secs(30)).status(0);
    assert_eq!(refused.code, 2, "{refused}");
    let message = refused.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains("could not run on a worker"), "{message}");
    assert!(message.contains("is not the suite the evaluation was started with"), "{message}");
    assert_eq!(exchanges(there.path(), "elsewhere"), 0, "no case ran on the other suite");
}
