//! The ledger in PostgreSQL (SPEC §27) against a real server (`support/postgres.rs`, and
//! Redis for the workers): a run's records written to the database and read back by
//! `ledger verify`, `head`, `query` and `export`'s reader; `ledger copy` into a file and
//! back (byte for byte, a prefix continued, anything else refused); an edited row found;
//! four writers at once, in one process and as four workers, giving one chain with every
//! record; a worker killed with SIGKILL inside its append's transaction; the server stopped
//! and started under a running worker. The password (PGPASSWORD) appears nowhere in what
//! pactum prints or writes.
//!
//! Each ledger is read back independently too: copied out to a JSONL file by `ledger copy`
//! and checked with `common::check_ledger_chain_independently`, which recomputes every hash
//! without pactum's code.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::cli_worker::{self, Worker};
use crate::common::{self, Out};
use crate::postgres::{PASSWORD, Postgres};
use crate::redis::RedisServer;

const NEEDS: &str =
    "needs PostgreSQL (Debian package postgresql) and redis-server; .ci/run installs them";

/// The binary in `root` with the database's password in PGPASSWORD.
fn pactum(root: &Path, args: &[&str]) -> Out {
    let mut cmd = common::pactum_in(root);
    cmd.env("PGPASSWORD", PASSWORD).args(args);
    Out::of(&mut cmd)
}

/// The records of the ledger at `url`, read out through `ledger copy` into a file whose
/// chain is then checked without pactum.
fn records_of(root: &Path, url: &str) -> Vec<Value> {
    let file = root.join(format!("out-{}.jsonl", rand_suffix()));
    pactum(root, &["ledger", "copy", url, &file.to_string_lossy()]).status(0);
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    if !text.is_empty() {
        common::check_ledger_chain_independently(&file);
    }
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

fn events<'a>(records: &'a [Value], event: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["event"] == event).collect()
}

fn assert_no_password(what: &str, text: &str) {
    assert!(!text.contains(PASSWORD), "{what} shows the database password:\n{text}");
}

#[test]
#[ignore = "needs PostgreSQL (Debian package postgresql); .ci/run installs it"]
fn a_run_writes_its_records_to_the_database_and_every_reader_reads_them_there() {
    let pg = Postgres::start();
    let dir = crate::cli_otel::demo();
    let root = dir.path();
    let url = pg.url(None);
    let run = pactum(root, &["run", crate::cli_otel::CLASSIFY, "--ledger", &url, "--json"]);
    run.status(0);
    assert_no_password("run", &run.to_string());
    let head = &run.json()["ledger"];
    // Named without its password, and the user masked as every URL's credentials are.
    let masked = url.replace("//pactum@", "//[redacted]@");
    assert_eq!(head["file"], masked.as_str(), "{head}");
    let seq = head["seq"].as_u64().unwrap();
    assert!(seq >= 3, "started, an exchange, completed: {head}");
    assert!(!root.join(".pactum/ledger.jsonl").exists(), "nothing went to the project's file");
    // The table holds exactly the lines the file would: one canonical record per row.
    let lines = pg.lines("pactum_ledger");
    assert_eq!(lines.len() as u64, seq);
    let again = pactum(root, &["run", crate::cli_otel::CLASSIFY, "--ledger", &url, "--json"]);
    let head2 = again.json()["ledger"].clone();
    assert!(head2["seq"].as_u64().unwrap() > seq, "the second run continues the chain");

    let verify = pactum(root, &["ledger", "verify", &url, "--json"]);
    verify.status(0);
    let v = verify.json();
    assert_eq!(
        (v["records"].clone(), v["last_hash"].clone()),
        (head2["seq"].clone(), head2["hash"].clone())
    );
    let expect =
        pactum(root, &["ledger", "verify", &url, "--expect-head", head["hash"].as_str().unwrap()]);
    expect.status(0);
    assert!(expect.stdout.contains("were appended since"), "{expect}");
    let headed = pactum(root, &["ledger", "head", &url]);
    headed.status(0);
    assert_eq!(
        headed.stdout.trim(),
        format!("{} {}", head2["seq"], head2["hash"].as_str().unwrap())
    );
    let q = pactum(
        root,
        &["ledger", "query", "--ledger", &url, "--event", "work_order_completed", "--json"],
    );
    q.status(0);
    let found = q.json()["records"].as_array().unwrap().clone();
    assert_eq!(found.len(), 2, "newest first, both runs: {found:?}");
    assert!(found[0]["seq"].as_u64() > found[1]["seq"].as_u64());

    // Out to a file and back: the same bytes, the same head.
    let file = root.join("copy.jsonl");
    let out = pactum(root, &["ledger", "copy", &url, &file.to_string_lossy(), "--json"]);
    out.status(0);
    assert_eq!(out.json()["copied"], head2["seq"]);
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        pg.lines("pactum_ledger").iter().map(|l| format!("{l}\n")).collect::<String>()
    );
    assert_eq!(
        common::check_ledger_chain_independently(&file) as u64,
        head2["seq"].as_u64().unwrap()
    );
    let back = pg.url(Some("restored"));
    pactum(root, &["ledger", "copy", &file.to_string_lossy(), &back]).status(0);
    assert_eq!(pg.lines("restored"), pg.lines("pactum_ledger"));
    // Copying again copies nothing; a longer file continues the prefix.
    let none = pactum(root, &["ledger", "copy", &file.to_string_lossy(), &back, "--json"]);
    assert_eq!(none.json()["copied"], 0, "{none}");
    pactum(root, &["run", crate::cli_otel::CLASSIFY, "--ledger", &file.to_string_lossy()])
        .status(0);
    let more = pactum(root, &["ledger", "copy", &file.to_string_lossy(), &back, "--json"]);
    more.status(0);
    assert!(more.json()["copied"].as_u64().unwrap() >= 3, "{more}");
    let file_lines: Vec<String> =
        std::fs::read_to_string(&file).unwrap().lines().map(str::to_string).collect();
    assert_eq!(pg.lines("restored"), file_lines);
    // A target that is no prefix of the source is refused, and nothing is written to it:
    // one holding more records than the source, and one whose records differ.
    let other = root.join("other.jsonl");
    pactum(root, &["run", crate::cli_otel::CLASSIFY, "--ledger", &other.to_string_lossy()])
        .status(0);
    let before = pg.lines("pactum_ledger");
    let longer = pactum(root, &["ledger", "copy", &other.to_string_lossy(), &url, "--json"]);
    assert_eq!(
        (longer.code, longer.json()["code"].clone()),
        (1, json!("ledger_rewritten")),
        "{longer}"
    );
    assert_eq!(pg.lines("pactum_ledger"), before);
    let diverged = pg.url(Some("diverged"));
    pactum(root, &["ledger", "copy", &other.to_string_lossy(), &diverged]).status(0);
    let theirs = pg.lines("diverged");
    let differs = pactum(root, &["ledger", "copy", &file.to_string_lossy(), &diverged, "--json"]);
    assert_eq!(differs.json()["code"], "ledger_rewritten", "{differs}");
    assert!(differs.json()["message"].as_str().unwrap().contains("not a prefix"), "{differs}");
    assert_eq!(pg.lines("diverged"), theirs);

    // An edited row is found, named by its record; nothing is chained onto an edited head.
    pg.sql("UPDATE pactum_ledger SET line = replace(line, '\"event\":\"exchange\"', '\"event\":\"exchangE\"') WHERE seq = 2");
    let broken = pactum(root, &["ledger", "verify", &url, "--json"]);
    assert_eq!(
        (broken.code, broken.json()["code"].clone()),
        (1, json!("ledger_broken")),
        "{broken}"
    );
    assert!(
        broken.json()["message"].as_str().unwrap().contains(":2: record 2 was edited"),
        "{broken}"
    );
    let last: i64 = pg.sql("SELECT max(seq) FROM pactum_ledger").parse().unwrap();
    pg.sql(&format!("UPDATE pactum_ledger SET line = replace(line, '\"seq\":{last}', '\"seq\":{last} ') WHERE seq = {last}"));
    let refused = pactum(root, &["run", crate::cli_otel::CLASSIFY, "--ledger", &url, "--json"]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(refused.stdout.contains("ledger_corrupt"), "{refused}");
    assert_eq!(pg.sql("SELECT max(seq) FROM pactum_ledger"), last.to_string(), "nothing appended");
    for out in [&verify, &expect, &headed, &q, &out, &more, &refused, &broken, &differs] {
        assert_no_password("ledger", &out.to_string());
    }
}

#[test]
#[ignore = "needs PostgreSQL (Debian package postgresql); .ci/run installs it"]
fn the_password_stays_out_of_output_and_a_committed_url_acts_only_when_confirmed() {
    let pg = Postgres::start();
    let dir = crate::cli_otel::demo();
    let root = dir.path();
    // The password in the URL: masked in what is printed, and in the records.
    let with = pg.url_with_password();
    let mut cmd = common::pactum_in(root);
    let run = Out::of(cmd.args(["run", crate::cli_otel::CLASSIFY, "--ledger", &with, "--json"]));
    run.status(0);
    assert_no_password("run", &run.to_string());
    assert_no_password("the table", &pg.lines("pactum_ledger").join("\n"));
    // A wrong password: refused at once, named without it.
    let mut cmd = common::pactum_in(root);
    cmd.env("PGPASSWORD", "not-the-Password-42");
    let wrong = Out::of(cmd.args(["ledger", "verify", &pg.url(None), "--json"]));
    assert_eq!(
        (wrong.code, wrong.json()["code"].clone()),
        (1, json!("ledger_unavailable")),
        "{wrong}"
    );
    assert!(!wrong.to_string().contains("not-the-Password-42"), "{wrong}");

    // A table of that name that is no ledger is refused, not read.
    pg.sql("CREATE TABLE notes (seq integer, note text)");
    let other = pactum(root, &["ledger", "verify", &pg.url(Some("notes")), "--json"]);
    assert_eq!(other.json()["code"], "ledger_unavailable", "{other}");
    assert!(other.stdout.contains("is not a pactum ledger"), "{other}");

    // `[ledger] url` in pactum.toml: refused until the environment confirms it.
    let toml = std::fs::read_to_string(root.join("pactum.toml")).unwrap_or_default();
    std::fs::write(
        root.join("pactum.toml"),
        format!("{toml}\n[ledger]\nurl = \"{}\"\n", pg.url(Some("committed"))),
    )
    .unwrap();
    let unconfirmed = pactum(root, &["run", crate::cli_otel::CLASSIFY, "--json"]);
    assert_eq!(unconfirmed.code, 1, "{unconfirmed}");
    assert!(
        unconfirmed.stdout.contains("config_unconfirmed")
            && unconfirmed.stdout.contains("ledger.url"),
        "{unconfirmed}"
    );
    assert_eq!(
        pg.sql("SELECT count(*) FROM pg_tables WHERE tablename = 'committed'"),
        "0",
        "never contacted"
    );
    let mut cmd = common::pactum_in(root);
    cmd.env("PGPASSWORD", PASSWORD).env("PACTUM_TRUST_CONFIG", "1");
    Out::of(cmd.args(["run", crate::cli_otel::CLASSIFY])).status(0);
    let mut cmd = common::pactum_in(root);
    cmd.env("PGPASSWORD", PASSWORD).env("PACTUM_TRUST_CONFIG", "1");
    let verified = Out::of(cmd.args(["ledger", "verify", "--json"]));
    verified.status(0);
    assert!(verified.json()["records"].as_u64().unwrap() >= 3, "{verified}");
    // A password committed in the URL is refused outright.
    std::fs::write(root.join("pactum.toml"), format!("{toml}\n[ledger]\nurl = \"{with}\"\n"))
        .unwrap();
    let insecure = pactum(root, &["validate", "--json"]);
    assert!(insecure.stdout.contains("config_insecure"), "{insecure}");
    assert_no_password("validate", &insecure.to_string());
}

#[test]
#[ignore = "needs PostgreSQL (Debian package postgresql); .ci/run installs it"]
fn four_writers_in_one_process_append_one_chain_with_every_record() {
    let pg = Postgres::start();
    let url = pactum::ledger::postgres::Url::parse(
        &pactum::authority::Permit::application(pg.url(Some("threads"))),
        Some(pactum::gateway::Secret::new(PASSWORD)),
    )
    .unwrap();
    let at = pactum::ledger::Location::database(url);
    std::thread::scope(|s| {
        for writer in 0..4 {
            let at = at.clone();
            s.spawn(move || {
                // Each thread its own connection: four writers racing for the head.
                let ledger = pactum::ledger::Ledger::open(&at).unwrap();
                for i in 0..50 {
                    let mut fields = Map::new();
                    fields.insert("writer".into(), json!(writer));
                    fields.insert("i".into(), json!(i));
                    ledger.append(pactum::ledger::Kind::Exchange, fields).unwrap();
                }
            });
        }
    });
    let v = pactum::ledger::verify(&at, None).unwrap();
    assert_eq!(v.records, 200);
    let mut seen = std::collections::BTreeSet::new();
    pactum::ledger::for_each_record(&at, |r| {
        assert!(seen.insert((r["writer"].as_u64().unwrap(), r["i"].as_u64().unwrap())), "{r}");
        Ok(())
    })
    .unwrap();
    assert_eq!(seen.len(), 200, "every record of every writer, once");
}

#[test]
#[ignore = "needs PostgreSQL (Debian package postgresql) and redis-server; .ci/run installs them"]
fn four_workers_append_to_one_database_ledger_one_chain_every_record() {
    let _ = NEEDS;
    let (pg, redis) = (Postgres::start(), RedisServer::start());
    let (dir, wos) = cli_worker::project(12, 150);
    let root = dir.path();
    cli_worker::submit(root, &redis.url(), &wos).status(0);
    let url = pg.url(None);
    let env = [("PGPASSWORD", PASSWORD)];
    let workers: Vec<Worker> = (0..4)
        .map(|i| {
            Worker::start_on(
                root,
                &redis.url(),
                &format!("w{i}"),
                &url,
                &env,
                &["--concurrency", "2"],
            )
        })
        .collect();
    assert!(redis.wait_for(Duration::from_secs(120), |r| r.xlen("pactum:results") == 12));
    for w in workers {
        let out = w.terminate(Duration::from_secs(30));
        out.status(0);
        assert_no_password("a worker", &out.to_string());
    }
    let got = cli_worker::results(root, &redis.url());
    assert!(got.iter().all(|r| r["result"]["ok"] == true), "{got:?}");
    let records = records_of(root, &url);
    let completed = events(&records, "work_order_completed");
    let mut ids: Vec<String> =
        completed.iter().map(|r| r["work_order_id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    assert_eq!(ids, cli_worker::ids(&wos), "every work order completed once, in one chain");
    assert_eq!(events(&records, "exchange").len(), 12);
    assert_eq!(events(&records, "work_order_started").len(), 12);
    let writers: std::collections::BTreeSet<&str> =
        records.iter().filter_map(|r| r["worker_id"].as_str()).collect();
    assert!(writers.len() >= 2, "the workers shared the chain: {writers:?}");
    // Each result's head is a record of the one chain.
    let verify = pactum(root, &["ledger", "verify", &url, "--json"]);
    verify.status(0);
    assert_eq!(verify.json()["records"], records.len());
}

#[test]
#[ignore = "needs PostgreSQL (Debian package postgresql) and redis-server; .ci/run installs them"]
fn a_worker_killed_with_sigkill_inside_its_append_leaves_a_chain_that_verifies() {
    let (pg, redis) = (Postgres::start(), RedisServer::start());
    let (dir, wos) = cli_worker::project(1, 0);
    let root = dir.path();
    let url = pg.url(None);
    // A first record, so the table exists and the chain has a head to keep.
    let mut first = Map::new();
    first.insert("event".into(), json!("note"));
    let at = pactum::ledger::Location::database(
        pactum::ledger::postgres::Url::parse(
            &pactum::authority::Permit::application(url.clone()),
            Some(pactum::gateway::Secret::new(PASSWORD)),
        )
        .unwrap(),
    );
    pactum::ledger::Ledger::open(&at)
        .unwrap()
        .append(pactum::ledger::Kind::Exchange, first)
        .unwrap();
    let before = pg.lines("pactum_ledger");
    // Another writer holds the writers' lock: the worker's append waits inside its
    // transaction (begun, the lock asked for), and is killed there.
    let mut holder = pg.session();
    holder.send("BEGIN; LOCK TABLE pactum_ledger IN EXCLUSIVE MODE; SELECT 'locked';");
    cli_worker::submit(root, &redis.url(), &wos).status(0);
    let env = [("PGPASSWORD", PASSWORD)];
    let doomed =
        Worker::start_on(root, &redis.url(), "doomed", &url, &env, &["--claim-idle", "1s"]);
    let waiting = pg.wait_for(Duration::from_secs(60), |pg| {
        pg.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pactum' AND wait_event_type = 'Lock' AND state = 'active'") == "1"
    });
    assert!(waiting, "the worker's append waits for the lock inside its transaction");
    assert_eq!(
        pg.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pactum' AND xact_start IS NOT NULL"),
        "1"
    );
    doomed.kill();
    // The lock released, the server finds the connection gone and rolls the killed
    // transaction back.
    holder.send("COMMIT;");
    holder.finish();
    assert!(pg.wait_for(Duration::from_secs(30), |pg| {
        pg.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pactum'") == "0"
    }));
    assert_eq!(pg.lines("pactum_ledger"), before, "the killed append left nothing");
    let verify = pactum(root, &["ledger", "verify", &url, "--json"]);
    verify.status(0);
    // The work order is claimed by another worker and completes on the same chain.
    let heir = Worker::start_on(root, &redis.url(), "heir", &url, &env, &["--claim-idle", "1s"]);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 1));
    heir.terminate(Duration::from_secs(30)).status(0);
    let records = records_of(root, &url);
    assert_eq!(records[0]["event"], "note");
    assert!(records.iter().all(|r| r.get("worker_id").is_none_or(|w| w == "heir")), "{records:?}");
    assert_eq!(events(&records, "work_order_completed").len(), 1);
}

#[test]
#[ignore = "needs PostgreSQL (Debian package postgresql) and redis-server; .ci/run installs them"]
fn the_database_stopped_and_started_under_a_running_worker_loses_no_record_it_reported_written() {
    let (mut pg, redis) = (Postgres::start(), RedisServer::start());
    let (dir, wos) = cli_worker::project(8, 400);
    let root = dir.path();
    let url = pg.url(None);
    cli_worker::submit(root, &redis.url(), &wos).status(0);
    let env = [("PGPASSWORD", PASSWORD)];
    let worker = Worker::start_on(root, &redis.url(), "w", &url, &env, &[]);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") >= 2));
    pg.stop();
    let stopped = Instant::now();
    // Down for a while: the worker's appends wait for the server (or fail their work
    // order cleanly), they do not write half a record.
    std::thread::sleep(Duration::from_secs(2));
    pg.restart();
    assert!(stopped.elapsed() < Duration::from_secs(25), "the server was back within the deadline");
    assert!(redis.wait_for(Duration::from_secs(120), |r| r.xlen("pactum:results") == 8));
    worker.terminate(Duration::from_secs(30)).status(0);
    let got = cli_worker::results(root, &redis.url());
    assert_eq!(cli_worker::per_id(&got).len(), 8, "every work order has a result");
    let records = records_of(root, &url);
    // Down for less than an operation's deadline (30 s): the appends waited for the server,
    // and every work order completed; each one reported written is in the chain, once.
    for r in &got {
        let id = r["work_order_id"].as_str().unwrap();
        assert_eq!(r["result"]["ok"], true, "{r}");
        let done = events(&records, "work_order_completed");
        assert_eq!(
            done.iter().filter(|c| c["work_order_id"] == id).count(),
            1,
            "{id}: {records:?}"
        );
    }
    pactum(root, &["ledger", "verify", &url]).status(0);
}

/// Appends per second to PostgreSQL with 1, 2 and 4 writers (each its own connection)
/// against the JSONL file with the same writers, measured side by side in one run; every
/// record of every configuration is then verified in one chain (BENCHMARKS.md, "The
/// ledger in PostgreSQL"). Both sides sync each record (`Durability::EachRecord`; the
/// server with `fsync=on`). `PACTUM_BENCH_APPENDS` sets the appends per configuration
/// (200 by default, which keeps it a test; BENCHMARKS.md's numbers are of 2000):
/// `cargo test --test suite -- --include-ignored --nocapture appends_per_second`.
#[test]
#[ignore = "needs PostgreSQL (Debian package postgresql); .ci/run installs it"]
fn appends_per_second_to_the_database_and_the_file_with_1_2_and_4_writers() {
    use pactum::ledger::{Durability, Kind, Ledger, Location};
    let total: usize =
        std::env::var("PACTUM_BENCH_APPENDS").ok().and_then(|n| n.parse().ok()).unwrap_or(200);
    let pg = Postgres::durable();
    let dir = tempfile::tempdir().unwrap();
    let measure = |at: &Location, writers: usize| -> f64 {
        let started = Instant::now();
        std::thread::scope(|s| {
            for w in 0..writers {
                s.spawn(move || {
                    let ledger = Ledger::open(at).unwrap().with_durability(Durability::EachRecord);
                    for i in 0..total / writers {
                        let mut fields = Map::new();
                        fields.insert("writer".into(), json!(w));
                        fields.insert("i".into(), json!(i));
                        fields.insert("raw_response".into(), json!("x".repeat(400)));
                        ledger.append(Kind::Exchange, fields).unwrap();
                    }
                });
            }
        });
        let v = pactum::ledger::verify(at, None).unwrap();
        assert_eq!(v.records as usize, total / writers * writers, "every record, one chain");
        (total / writers * writers) as f64 / started.elapsed().as_secs_f64()
    };
    let mut rows = Vec::new();
    for writers in [1, 2, 4] {
        let file = Location::chosen(&dir.path().join(format!("w{writers}.jsonl")));
        let url = pactum::ledger::postgres::Url::parse(
            &pactum::authority::Permit::application(pg.url(Some(&format!("bench_w{writers}")))),
            Some(pactum::gateway::Secret::new(PASSWORD)),
        )
        .unwrap();
        let db = Location::database(url);
        let (f, d) = (measure(&file, writers), measure(&db, writers));
        rows.push((writers, f, d));
    }
    println!("writers | JSONL appends/s | PostgreSQL appends/s | PostgreSQL / JSONL");
    for (writers, f, d) in rows {
        println!("{writers} | {f:.0} | {d:.0} | {:.2}", d / f);
    }
}

#[test]
#[ignore = "needs PostgreSQL (Debian package postgresql) and redis-server; .ci/run installs them"]
fn a_database_gone_past_the_deadline_fails_the_work_order_cleanly_and_the_worker_goes_on() {
    let (mut pg, redis) = (Postgres::start(), RedisServer::start());
    let (dir, wos) = cli_worker::project(4, 300);
    let root = dir.path();
    let url = pg.url(None);
    // Each operation waits at most 2 s for the server.
    let short = format!("{url}?connect_timeout=2");
    let env = [("PGPASSWORD", PASSWORD)];
    let worker = Worker::start_on(root, &redis.url(), "w", &short, &env, &[]);
    cli_worker::submit(root, &redis.url(), &wos[..1]).status(0);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 1));
    pg.stop();
    cli_worker::submit(root, &redis.url(), &wos[1..2]).status(0);
    // The work order cannot write its first record: it fails, with the ledger's code.
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 2));
    pg.restart();
    cli_worker::submit(root, &redis.url(), &wos[2..]).status(0);
    assert!(redis.wait_for(Duration::from_secs(60), |r| r.xlen("pactum:results") == 4));
    worker.terminate(Duration::from_secs(30)).status(0);
    // `results` exits 1: one of them failed.
    let shown = pactum(root, &["results", "--json", "--queue", &redis.url()]);
    shown.status(1);
    let got = shown.json()["results"].as_array().unwrap().clone();
    let failed: Vec<&Value> = got.iter().filter(|r| r["result"]["ok"] != true).collect();
    assert_eq!(failed.len(), 1, "{got:?}");
    assert_eq!(failed[0]["work_order_id"], "WO-Q-001");
    assert_eq!(failed[0]["result"]["code"], "ledger_unavailable", "{}", failed[0]);
    let records = records_of(root, &url);
    let done: Vec<&str> = events(&records, "work_order_completed")
        .iter()
        .map(|r| r["work_order_id"].as_str().unwrap())
        .collect();
    assert_eq!(done, ["WO-Q-000", "WO-Q-002", "WO-Q-003"], "the worker went on after it");
    assert!(records.iter().all(|r| r["work_order_id"] != "WO-Q-001"), "nothing of the failed one");
}
