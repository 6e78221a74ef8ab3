//! The worker loop (SPEC §22) over any [`Queue`]: `concurrency` threads, each with its own
//! connection, take one entry at a time — an orphan another worker held past `claim_idle`
//! first, else a new one — and a heartbeat thread keeps the leases of running work orders.
//!
//! For each entry, in order: an entry that is no work order goes to the dead letters; an id
//! that already has a result is acknowledged, not run; an id another attempt holds (runs
//! now) is left pending — it comes back after `claim_idle`, by then done, and is neither
//! counted nor dead-lettered while its id runs; taking the id's lease counts an attempt,
//! and when `max_deliveries` attempts before it ran and did not finish
//! ([`crate::queue::attempts_exhausted`]) the entry goes to the dead letters instead;
//! otherwise the work order runs (the caller's `run`, which writes the ledger), and the
//! result is written, the entry acknowledged and the lease dropped in one atomic step that
//! writes nothing when the id already has a result. `stop` ends the taking of entries;
//! running work orders finish first.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::error::Result;
use crate::queue::{
    Completed, Dead, Delivery, Finished, Job, Lease, Leased, Queue, attempts_exhausted,
};

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Names this worker: its consumer name in the group, `worker_id` in results and ledger.
    pub worker_id: String,
    /// Work orders run at once.
    pub concurrency: usize,
    /// An entry held this long by a worker that stopped renewing it is claimed by another;
    /// also the lease's lifetime (renewed at a third of it).
    pub claim_idle: Duration,
    /// A work order is dead-lettered when this many attempts of it ran (took its lease) and
    /// none finished (`--max-deliveries`; re-claims that found it running are not counted).
    pub max_deliveries: u64,
}

/// What one run produced: whether it succeeded, and its `run --json` result.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub ok: bool,
    pub result: Value,
}

/// What the worker did, for the caller to show.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Connected, the consumer group ready: entries are taken from now on.
    Serving,
    /// A work order ran and its result was written.
    Completed { work_order_id: String, ok: bool, result: String },
    /// A work order ran, but another attempt had written its result first (a worker that
    /// lost its lease): this result was dropped.
    Superseded { work_order_id: String },
    /// An id that already has a result was delivered again: acknowledged, not run.
    Duplicate { work_order_id: String, entry: String },
    /// Another attempt holds the id: the entry was left pending.
    Busy { work_order_id: String, entry: String },
    /// An entry went to the dead letters.
    DeadLettered { entry: String, reason: String },
    /// A running work order's lease expired and was taken (this worker stalled).
    LeaseLost { work_order_id: String },
}

/// Counts of what happened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub completed: u64,
    pub duplicates: u64,
    pub dead_lettered: u64,
}

/// Runs the worker until `stop` is set (or a queue fails: the error, after running work
/// orders finish). `connect` opens one queue connection per thread.
pub fn serve<Q: Queue>(
    connect: &(dyn Fn() -> Result<Q> + Sync),
    options: &Options,
    stop: &AtomicBool,
    run: &(dyn Fn(&Job) -> Outcome + Sync),
    events: &(dyn Fn(Event) + Sync),
) -> Result<Summary> {
    connect()?.prepare()?;
    events(Event::Serving);
    let shared = Shared {
        options,
        stop,
        failed: AtomicBool::new(false),
        held: Mutex::new(Vec::new()),
        attempts: AtomicU64::new(0),
        completed: AtomicU64::new(0),
        duplicates: AtomicU64::new(0),
        dead: AtomicU64::new(0),
        run,
        events,
    };
    let workers_done = AtomicBool::new(false);
    let (results, heartbeat) = std::thread::scope(|s| {
        let heartbeat = s.spawn(|| {
            let beating = shared.heartbeat(connect, &workers_done);
            if beating.is_err() {
                shared.failed.store(true, Ordering::SeqCst);
            }
            beating
        });
        let workers: Vec<_> =
            (0..options.concurrency.max(1)).map(|_| s.spawn(|| shared.work(connect))).collect();
        let results: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        workers_done.store(true, Ordering::SeqCst);
        (results, heartbeat.join())
    });
    let mut first_error = None;
    for result in results {
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => first_error = first_error.or(Some(e)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
    match heartbeat {
        Ok(Ok(())) => {}
        Ok(Err(e)) => first_error = first_error.or(Some(e)),
        Err(panic) => std::panic::resume_unwind(panic),
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(Summary {
            completed: shared.completed.into_inner(),
            duplicates: shared.duplicates.into_inner(),
            dead_lettered: shared.dead.into_inner(),
        }),
    }
}

struct Shared<'a> {
    options: &'a Options,
    stop: &'a AtomicBool,
    /// A thread's queue failed: the others stop taking entries too.
    failed: AtomicBool,
    /// Leases of the work orders running now.
    held: Mutex<Vec<Lease>>,
    attempts: AtomicU64,
    completed: AtomicU64,
    duplicates: AtomicU64,
    dead: AtomicU64,
    run: &'a (dyn Fn(&Job) -> Outcome + Sync),
    events: &'a (dyn Fn(Event) + Sync),
}

impl Shared<'_> {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.failed.load(Ordering::SeqCst)
    }

    /// How long one read waits for a new entry: short enough to notice `stop` and to scan
    /// for orphans several times per `claim_idle`.
    fn wait(&self) -> Duration {
        (self.options.claim_idle / 4).clamp(Duration::from_millis(20), Duration::from_millis(500))
    }

    fn work<Q: Queue>(&self, connect: &(dyn Fn() -> Result<Q> + Sync)) -> Result<()> {
        let result = (|| {
            let mut queue = connect()?;
            while !self.stopping() {
                let id = &self.options.worker_id;
                if let Some(delivery) = queue.next(id, self.options.claim_idle, self.wait())? {
                    self.handle(&mut queue, delivery)?;
                }
            }
            Ok(())
        })();
        if result.is_err() {
            self.failed.store(true, Ordering::SeqCst);
        }
        result
    }

    fn handle<Q: Queue>(&self, queue: &mut Q, delivery: Delivery) -> Result<()> {
        let options = self.options;
        let dead = |queue: &mut Q, why: Dead<'_>| {
            queue.dead_letter(&delivery, &why)?;
            self.dead.fetch_add(1, Ordering::SeqCst);
            let reason = why.reason();
            (self.events)(Event::DeadLettered { entry: delivery.entry.clone(), reason });
            Ok(())
        };
        let job = match Job::from_fields(&delivery.fields) {
            Ok(job) => job,
            Err(why) => return dead(queue, Dead::NotAJob(why)),
        };
        let work_order_id = job.work_order_id.clone();
        if queue.completed(&work_order_id)?.is_some() {
            queue.acknowledge(&delivery.entry)?;
            self.duplicates.fetch_add(1, Ordering::SeqCst);
            (self.events)(Event::Duplicate { work_order_id, entry: delivery.entry.clone() });
            return Ok(());
        }
        let attempt = self.attempts.fetch_add(1, Ordering::SeqCst);
        let lease = Lease {
            entry: delivery.entry.clone(),
            work_order_id: work_order_id.clone(),
            token: format!("{}/{attempt}", options.worker_id),
        };
        let attempt = match queue.lease(&options.worker_id, &lease, options.claim_idle)? {
            Leased::Taken { attempt } => attempt,
            Leased::Busy => {
                // Running elsewhere: the entry stays pending and comes back after
                // `claim_idle`, by then done. Not an attempt: it is never counted, nor
                // dead-lettered while its id is running.
                (self.events)(Event::Busy { work_order_id, entry: delivery.entry.clone() });
                return Ok(());
            }
        };
        if attempts_exhausted(attempt, options.max_deliveries) {
            let (attempts, max) = (attempt - 1, options.max_deliveries);
            return dead(queue, Dead::Exhausted { lease: &lease, attempts, max });
        }
        self.held.lock().unwrap_or_else(|p| p.into_inner()).push(lease.clone());
        let outcome = {
            // The lease is dropped from the heartbeat's list however `run` ends.
            let _release = Release { held: &self.held, token: &lease.token };
            (self.run)(&job)
        };
        let fields = Completed::fields(
            &work_order_id,
            &options.worker_id,
            &delivery.entry,
            outcome.ok,
            &outcome.result,
        );
        match queue.finish(&lease, &fields)? {
            Finished::Written(result) => {
                self.completed.fetch_add(1, Ordering::SeqCst);
                (self.events)(Event::Completed { work_order_id, ok: outcome.ok, result });
            }
            Finished::AlreadyDone(_) => (self.events)(Event::Superseded { work_order_id }),
        }
        Ok(())
    }

    /// Renews the leases of running work orders at a third of their lifetime, until the
    /// workers are done.
    fn heartbeat<Q: Queue>(
        &self,
        connect: &(dyn Fn() -> Result<Q> + Sync),
        workers_done: &AtomicBool,
    ) -> Result<()> {
        let mut queue = connect()?;
        let every = (self.options.claim_idle / 3).max(Duration::from_millis(10));
        let tick = every.min(Duration::from_millis(50));
        let mut since = Duration::ZERO;
        while !workers_done.load(Ordering::SeqCst) {
            std::thread::sleep(tick);
            since += tick;
            if since < every {
                continue;
            }
            since = Duration::ZERO;
            let held = self.held.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if held.is_empty() {
                continue;
            }
            let lost = queue.renew(&self.options.worker_id, &held, self.options.claim_idle)?;
            for lease in lost {
                (self.events)(Event::LeaseLost { work_order_id: lease.work_order_id });
            }
        }
        Ok(())
    }
}

/// Drops a lease from the heartbeat's list when the run ends (a panic included).
struct Release<'a> {
    held: &'a Mutex<Vec<Lease>>,
    token: &'a str,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.held.lock().unwrap_or_else(|p| p.into_inner()).retain(|l| l.token != self.token);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, VecDeque};
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::error::{Code, Error, QueueFailure};
    use crate::queue::Completed;

    /// What the in-memory queue holds and saw, shared by its connections.
    #[derive(Default)]
    struct State {
        /// Deliveries still to hand out, in order.
        deliveries: VecDeque<Delivery>,
        /// Results by work-order id (the result entry's id).
        results: BTreeMap<String, String>,
        /// Leases by work-order id: the token of the attempt holding it.
        leases: BTreeMap<String, String>,
        /// Attempts that took each id's lease (what the queue counts; dropped with a dead
        /// letter).
        attempts: BTreeMap<String, u64>,
        acknowledged: Vec<String>,
        dead: Vec<(String, String)>,
        written: Vec<Vec<(String, String)>>,
        renewals: u64,
        /// `renew` says these leases were lost.
        lose_on_renew: bool,
        /// `next` fails once the deliveries are out.
        fail_when_empty: bool,
        /// Handing out this entry, the queue finds every lease expired (the attempts
        /// holding them are gone).
        expire_at: Option<String>,
    }

    /// A queue in memory: `next` hands out the scripted deliveries, then sets `stop`.
    #[derive(Clone)]
    struct Memory {
        state: Arc<Mutex<State>>,
        stop: Arc<AtomicBool>,
    }

    impl Memory {
        fn state(&self) -> std::sync::MutexGuard<'_, State> {
            self.state.lock().unwrap()
        }
    }

    impl Queue for Memory {
        fn prepare(&mut self) -> Result<()> {
            Ok(())
        }
        fn submit(&mut self, _: &Job) -> Result<String> {
            unreachable!("workers do not submit")
        }
        fn next(&mut self, _: &str, _: Duration, _: Duration) -> Result<Option<Delivery>> {
            let mut state = self.state();
            let next = state.deliveries.pop_front();
            if next.as_ref().is_some_and(|d| state.expire_at.as_ref() == Some(&d.entry)) {
                state.leases.clear();
            }
            if next.is_none() {
                if state.fail_when_empty {
                    return Err(Error::Queue {
                        queue: "memory".into(),
                        failure: QueueFailure::Protocol,
                        message: "the connection broke".into(),
                    });
                }
                self.stop.store(true, Ordering::SeqCst);
            }
            Ok(next)
        }
        fn completed(&mut self, work_order_id: &str) -> Result<Option<String>> {
            Ok(self.state().results.get(work_order_id).cloned())
        }
        fn lease(&mut self, _: &str, lease: &Lease, _: Duration) -> Result<Leased> {
            let mut state = self.state();
            if state.leases.contains_key(&lease.work_order_id) {
                return Ok(Leased::Busy);
            }
            state.leases.insert(lease.work_order_id.clone(), lease.token.clone());
            let attempt = state.attempts.entry(lease.work_order_id.clone()).or_default();
            *attempt += 1;
            Ok(Leased::Taken { attempt: *attempt })
        }
        fn renew(&mut self, _: &str, leases: &[Lease], _: Duration) -> Result<Vec<Lease>> {
            let mut state = self.state();
            state.renewals += 1;
            Ok(if state.lose_on_renew { leases.to_vec() } else { vec![] })
        }
        fn release(&mut self, lease: &Lease) -> Result<()> {
            let mut state = self.state();
            if state.leases.get(&lease.work_order_id) == Some(&lease.token) {
                state.leases.remove(&lease.work_order_id);
            }
            Ok(())
        }
        fn finish(&mut self, lease: &Lease, fields: &[(String, String)]) -> Result<Finished> {
            let mut state = self.state();
            state.acknowledged.push(lease.entry.clone());
            state.leases.remove(&lease.work_order_id);
            if let Some(id) = state.results.get(&lease.work_order_id) {
                return Ok(Finished::AlreadyDone(id.clone()));
            }
            let id = format!("r{}", state.results.len() + 1);
            state.results.insert(lease.work_order_id.clone(), id.clone());
            state.written.push(fields.to_vec());
            Ok(Finished::Written(id))
        }
        fn acknowledge(&mut self, entry: &str) -> Result<()> {
            self.state().acknowledged.push(entry.to_string());
            Ok(())
        }
        fn dead_letter(&mut self, delivery: &Delivery, why: &Dead<'_>) -> Result<()> {
            let mut state = self.state();
            if let Dead::Exhausted { lease, .. } = why {
                state.leases.remove(&lease.work_order_id);
                state.attempts.remove(&lease.work_order_id);
            }
            state.dead.push((delivery.entry.clone(), why.reason()));
            state.acknowledged.push(delivery.entry.clone());
            Ok(())
        }
        fn results(&mut self, _: &str, _: Option<Duration>) -> Result<Vec<Completed>> {
            unreachable!("workers do not read results")
        }
    }

    fn delivery(entry: &str, id: &str, deliveries: u64) -> Delivery {
        let job = Job {
            work_order_id: id.into(),
            path: Some("work_orders/wo.json".into()),
            work_order: json!({"work_order_id": id}),
            kind: crate::queue::EntryKind::WorkOrder,
        };
        Delivery { entry: entry.into(), fields: job.to_fields(), deliveries }
    }

    fn options(max_deliveries: u64) -> Options {
        Options {
            worker_id: "w1".into(),
            concurrency: 1,
            claim_idle: Duration::from_secs(60),
            max_deliveries,
        }
    }

    /// What serving the queue did: the summary (or error), the ids run, and the events.
    struct Served {
        summary: Result<Summary>,
        ran: Vec<String>,
        events: Vec<Event>,
        queue: Memory,
    }

    fn serve_with(
        state: State,
        options: &Options,
        run: impl Fn(&Job, &Memory) -> Outcome + Sync,
    ) -> Served {
        let queue = Memory { state: Arc::new(Mutex::new(state)), stop: Arc::default() };
        let (ran, events) = (Mutex::new(Vec::new()), Mutex::new(Vec::new()));
        let summary = serve(
            &|| Ok(queue.clone()),
            options,
            &queue.stop.clone(),
            &|job: &Job| {
                ran.lock().unwrap().push(job.work_order_id.clone());
                run(job, &queue)
            },
            &|event| events.lock().unwrap().push(event),
        );
        Served {
            summary,
            ran: ran.into_inner().unwrap(),
            events: events.into_inner().unwrap(),
            queue,
        }
    }

    fn ok(_: &Job, _: &Memory) -> Outcome {
        Outcome { ok: true, result: json!({"ok": true}) }
    }

    #[test]
    fn a_work_order_runs_and_its_result_entry_and_lease_go_in_one_step() {
        let state = State { deliveries: [delivery("1-0", "WO-A", 1)].into(), ..State::default() };
        let served = serve_with(state, &options(3), |_, _| Outcome {
            ok: false,
            result: json!({"ok": false}),
        });
        assert_eq!(
            served.summary.unwrap(),
            Summary { completed: 1, duplicates: 0, dead_lettered: 0 }
        );
        assert_eq!(served.ran, ["WO-A"]);
        let state = served.queue.state();
        let fields: BTreeMap<&str, &str> =
            state.written[0].iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            fields,
            BTreeMap::from([
                ("entry", "1-0"),
                ("ok", "false"),
                ("result", "{\"ok\":false}"),
                ("work_order_id", "WO-A"),
                ("worker_id", "w1")
            ])
        );
        assert_eq!(state.acknowledged, ["1-0"]);
        assert!(state.leases.is_empty(), "the lease is dropped with the result");
        assert_eq!(
            served.events,
            [
                Event::Serving,
                Event::Completed { work_order_id: "WO-A".into(), ok: false, result: "r1".into() }
            ]
        );
    }

    #[test]
    fn an_entry_that_is_no_work_order_goes_to_the_dead_letters_unrun() {
        let mut bad = delivery("1-0", "WO-A", 1);
        bad.fields.retain(|(k, _)| k != "work_order");
        let mut escaping = delivery("2-0", "WO-B", 1);
        escaping.fields[1].1 = "../../etc/passwd".into();
        let state = State { deliveries: [bad, escaping].into(), ..State::default() };
        let served = serve_with(state, &options(3), ok);
        assert_eq!(served.summary.unwrap().dead_lettered, 2);
        assert!(served.ran.is_empty());
        let dead = &served.queue.state().dead;
        assert_eq!(
            dead[0],
            (
                "1-0".to_string(),
                "not a work order: the entry has no `work_order` field".to_string()
            )
        );
        assert!(dead[1].1.starts_with("not a work order: path `../../etc/passwd`: "), "{dead:?}");
    }

    #[test]
    fn an_id_that_has_a_result_is_acknowledged_and_not_run_again() {
        let state = State {
            deliveries: [delivery("2-0", "WO-A", 1)].into(),
            results: BTreeMap::from([("WO-A".to_string(), "r0".to_string())]),
            ..State::default()
        };
        let served = serve_with(state, &options(3), ok);
        assert_eq!(
            served.summary.unwrap(),
            Summary { completed: 0, duplicates: 1, dead_lettered: 0 }
        );
        assert!(served.ran.is_empty());
        assert_eq!(served.queue.state().acknowledged, ["2-0"]);
        assert!(
            served
                .events
                .contains(&Event::Duplicate { work_order_id: "WO-A".into(), entry: "2-0".into() })
        );
    }

    #[test]
    fn an_id_another_attempt_holds_is_left_pending_however_often_it_came() {
        // Held elsewhere and delivered far past the limit: neither run, acknowledged nor
        // dead-lettered; it comes back once the other attempt is done.
        let state = State {
            deliveries: [delivery("1-0", "WO-A", 99)].into(),
            leases: BTreeMap::from([("WO-A".to_string(), "w2/0".to_string())]),
            ..State::default()
        };
        let served = serve_with(state, &options(3), ok);
        assert_eq!(served.summary.unwrap(), Summary::default());
        assert!(served.ran.is_empty());
        let state = served.queue.state();
        assert!(state.acknowledged.is_empty() && state.dead.is_empty());
        assert_eq!(state.leases["WO-A"], "w2/0", "the other attempt's lease is untouched");
        assert!(
            served
                .events
                .contains(&Event::Busy { work_order_id: "WO-A".into(), entry: "1-0".into() })
        );
    }

    #[test]
    fn an_id_whose_attempts_all_ran_out_goes_to_the_dead_letters_unrun() {
        // WO-A's earlier attempts (two) took its lease and never finished: the third runs.
        // WO-B's three did: the fourth does not, and its lease and count are dropped. How
        // often the queue delivered either entry is not what counts.
        let state = State {
            deliveries: [delivery("1-0", "WO-A", 50), delivery("2-0", "WO-B", 4)].into(),
            attempts: BTreeMap::from([("WO-A".to_string(), 2), ("WO-B".to_string(), 3)]),
            ..State::default()
        };
        let served = serve_with(state, &options(3), ok);
        assert_eq!(
            served.summary.unwrap(),
            Summary { completed: 1, duplicates: 0, dead_lettered: 1 }
        );
        assert_eq!(served.ran, ["WO-A"]);
        let state = served.queue.state();
        assert_eq!(
            state.dead,
            [(
                "2-0".to_string(),
                "3 attempt(s) ran and none finished, the most --max-deliveries 3 allows: a worker died or stalled on it each time"
                    .to_string()
            )]
        );
        assert!(state.leases.is_empty(), "the dead-lettered id's lease is released");
        assert!(!state.attempts.contains_key("WO-B"), "and its count with it");
    }

    #[test]
    fn re_deliveries_that_found_the_id_busy_are_no_attempts() {
        // Delivered again and again while another attempt ran it: each time Busy, never
        // counted; once that attempt is gone, the next delivery is attempt 1 and runs.
        let mut deliveries: VecDeque<Delivery> =
            (1..=5).map(|n| delivery(&format!("{n}-0"), "WO-A", n)).collect();
        deliveries.push_back(delivery("6-0", "WO-A", 6));
        let state = State {
            deliveries,
            leases: BTreeMap::from([("WO-A".to_string(), "w2/0".to_string())]),
            expire_at: Some("6-0".into()),
            ..State::default()
        };
        let served = serve_with(state, &options(1), |job, queue| {
            assert_eq!(queue.state().attempts[&job.work_order_id], 1, "the first attempt");
            ok(job, queue)
        });
        assert_eq!(
            served.summary.unwrap(),
            Summary { completed: 1, duplicates: 0, dead_lettered: 0 }
        );
        assert_eq!(served.ran, ["WO-A"]);
        let busy = served.events.iter().filter(|e| matches!(e, Event::Busy { .. })).count();
        assert_eq!(busy, 5);
        assert!(served.queue.state().dead.is_empty());
    }

    #[test]
    fn a_result_another_attempt_wrote_first_supersedes_this_one() {
        let state = State { deliveries: [delivery("1-0", "WO-A", 1)].into(), ..State::default() };
        // While this attempt runs, another (that took the lease over) finishes first.
        let served = serve_with(state, &options(3), |_, queue| {
            queue.state().results.insert("WO-A".into(), "r9".into());
            Outcome { ok: true, result: json!({}) }
        });
        assert_eq!(served.summary.unwrap().completed, 0);
        let state = served.queue.state();
        assert!(state.written.is_empty(), "nothing written over the first result");
        assert_eq!(state.acknowledged, ["1-0"]);
        assert!(served.events.contains(&Event::Superseded { work_order_id: "WO-A".into() }));
    }

    #[test]
    fn running_work_orders_keep_their_leases_and_a_lost_one_is_reported() {
        let state = State {
            deliveries: [delivery("1-0", "WO-A", 1)].into(),
            lose_on_renew: true,
            ..State::default()
        };
        let quick = Options { claim_idle: Duration::from_millis(30), ..options(3) };
        // The run lasts until the heartbeat has renewed its lease (a minute at most).
        let served = serve_with(state, &quick, |job, queue| {
            for _ in 0..6000 {
                if queue.state().renewals > 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            ok(job, queue)
        });
        assert!(served.queue.state().renewals > 0, "the heartbeat renewed the running lease");
        assert!(served.events.contains(&Event::LeaseLost { work_order_id: "WO-A".into() }));
        assert_eq!(served.summary.unwrap().completed, 1);
    }

    #[test]
    fn a_failing_queue_ends_serving_with_its_error() {
        let state = State {
            deliveries: [delivery("1-0", "WO-A", 1)].into(),
            fail_when_empty: true,
            ..State::default()
        };
        let served = serve_with(state, &Options { concurrency: 3, ..options(3) }, ok);
        let e = served.summary.unwrap_err();
        assert_eq!(e.code(), Code::QueueProtocolError, "{e}");
        assert!(e.to_string().contains("the connection broke"), "{e}");
        assert_eq!(served.ran, ["WO-A"], "what was taken ran to its end");
    }
}
