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
