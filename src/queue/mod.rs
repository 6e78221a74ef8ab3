//! Work orders on a queue (SPEC §22): what a queue must do for `pactum worker`, `submit`
//! and `results` ([`Queue`]), what travels on it ([`Job`], [`Delivery`], [`Completed`]), and
//! the worker loop over any queue ([`worker::serve`]). Redis Streams ([`redis`]) is the one
//! implementation, spoken through a small RESP2 client of pactum's own ([`resp`]).
//!
//! The guarantees live in the loop and the queue together: an entry is acknowledged only
//! once its result is written (in one atomic step with the acknowledgement), a work-order
//! id has at most one result however often it is delivered, an entry a dead worker held is
//! claimed by another after the claim idle time, and a work order whose attempts keep dying
//! goes to the dead-letter stream. What counts is attempts that ran ([`Leased`],
//! [`attempts_exhausted`]), never Redis's delivery count: an entry re-claimed while another
//! attempt holds its id is not a failed attempt.

use std::time::Duration;

use serde_json::Value;

use crate::error::{Error, QueueFailure, Result};

pub mod redis;
pub mod resp;
pub mod worker;

/// One work order on the queue (`schemas/queue_entry.schema.json`): its id, its file's path
/// relative to the project root when it has one (so the paths it names resolve as they
/// would for `pactum run`), and its content as submitted (the worker runs what was
/// validated, not whatever the file holds later).
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub work_order_id: String,
    /// `None`: an entry another client wrote without a `path` ([`Job::file`]).
    pub path: Option<String>,
    /// The work order, or for an [`EntryKind::EvalCase`] the case order
    /// ([`crate::eval::spread::CaseOrder`]).
    pub work_order: Value,
    pub kind: EntryKind,
}

/// What an entry asks a worker to run: the field that holds it names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EntryKind {
    /// A work order, in the `work_order` field: run as `pactum run` runs it.
    #[default]
    WorkOrder,
    /// One case of an eval suite, in the `eval_case` field (`pactum eval --queue`, SPEC §27):
    /// run on every version of the evaluation, its runs the result.
    EvalCase,
}

impl EntryKind {
    /// The entry field holding the content.
    pub fn field(self) -> &'static str {
        match self {
            EntryKind::WorkOrder => "work_order",
            EntryKind::EvalCase => "eval_case",
        }
    }

    /// The content's own id field (which must be the entry's `work_order_id`).
    fn id_field(self) -> &'static str {
        match self {
            EntryKind::WorkOrder => "work_order_id",
            EntryKind::EvalCase => "id",
        }
    }
}

/// The most bytes a work order may take on the queue (a work order file's own limit).
pub const MAX_JOB_BYTES: usize = crate::document::MAX_FILE_BYTES as usize;

impl Job {
    /// The entry's fields.
    pub fn to_fields(&self) -> Vec<(String, String)> {
        let mut fields = vec![("work_order_id".into(), self.work_order_id.clone())];
        if let Some(path) = &self.path {
            fields.push(("path".into(), path.clone()));
        }
        fields.push((self.kind.field().into(), self.work_order.to_string()));
        fields
    }

    /// What the work order goes by, relative to the project root: its `path`, else its id
    /// (a name in the root itself, so that the relative paths it names resolve from there).
    pub fn file(&self) -> &str {
        self.path.as_deref().unwrap_or(&self.work_order_id)
    }

    /// Reads an entry's fields back. The queue is not trusted: a path must stay inside the
    /// project (relative, no `..`), the content must be a JSON object of bounded size whose
    /// id is the entry's. `Err`: why the entry is no job (it goes to the dead letters).
    pub fn from_fields(fields: &[(String, String)]) -> std::result::Result<Job, String> {
        let find = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let field =
            |name: &str| find(name).ok_or_else(|| format!("the entry has no `{name}` field"));
        let kind = match (find("work_order"), find("eval_case")) {
            (None, Some(_)) => EntryKind::EvalCase,
            (Some(_), Some(_)) => {
                return Err(
                    "the entry has both `work_order` and `eval_case`: one entry, one task".into()
                );
            }
            _ => EntryKind::WorkOrder,
        };
        let (id, text) = (field("work_order_id")?, field(kind.field())?);
        let path = find("path");
        for (what, rel) in [("path", path), ("work_order_id", path.is_none().then_some(id))] {
            if let Some(rel) = rel {
                crate::confine::check_relative(rel).map_err(|e| format!("{what} `{rel}`: {e}"))?;
            }
        }
        if text.len() > MAX_JOB_BYTES {
            return Err(format!(
                "the work order is {} bytes, more than the {MAX_JOB_BYTES}-byte limit",
                text.len()
            ));
        }
        let work_order: Value =
            serde_json::from_str(text).map_err(|e| format!("the work order is not JSON: {e}"))?;
        let own_id = work_order.get(kind.id_field()).and_then(Value::as_str);
        if own_id != Some(id) {
            return Err(format!(
                "the entry says work order `{id}` but its content is {}",
                own_id
                    .map_or(format!("no {}", kind.field().replace('_', " ")), |o| format!("`{o}`"))
            ));
        }
        Ok(Job { work_order_id: id.to_string(), path: path.map(str::to_string), work_order, kind })
    }
}

/// A stream entry as it was read: its id and its fields.
pub type Entry = (String, Vec<(String, String)>);

/// An entry handed to one worker.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// The stream entry's id.
    pub entry: String,
    pub fields: Vec<(String, String)>,
    /// How many times the queue has delivered the entry, this time included. Shown in a
    /// dead letter, never judged: it counts every re-claim, also those that found the id
    /// held by a running attempt ([`Leased::Busy`]).
    pub deliveries: u64,
}

/// What taking the lease of a delivery's id found ([`Queue::lease`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leased {
    /// This attempt holds the id. `attempt` counts the attempts that took the id's lease
    /// since it was submitted (or last dead-lettered), this one included: each of the
    /// earlier ones ran and did not finish (one that finished wrote the id's result, and an
    /// id with a result is never leased again).
    Taken { attempt: u64 },
    /// Another attempt holds the id (it runs now): not an attempt, and not counted.
    Busy,
}

/// The dead-letter rule: the attempt numbered `attempt` ([`Leased::Taken`]) does not run
/// when `max_attempts` attempts before it already ran and did not finish (a work order
/// that kills or stalls every worker that runs it).
pub fn attempts_exhausted(attempt: u64, max_attempts: u64) -> bool {
    attempt.saturating_sub(1) >= max_attempts
}

/// Why an entry goes to the dead letters ([`Queue::dead_letter`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dead<'a> {
    /// The entry is no work order ([`Job::from_fields`]'s reason).
    NotAJob(String),
    /// `attempts` attempts of the id ran and none finished, `max` of them allowed; `lease`
    /// is the lease the attempt that found this took (dropped with the dead letter, and the
    /// id's count with it: a work order submitted again starts afresh).
    Exhausted { lease: &'a Lease, attempts: u64, max: u64 },
}

impl Dead<'_> {
    /// The reason a dead letter carries.
    pub fn reason(&self) -> String {
        match self {
            Dead::NotAJob(why) => format!("not a work order: {why}"),
            Dead::Exhausted { attempts, max, .. } => format!(
                "{attempts} attempt(s) ran and none finished, the most --max-deliveries {max} allows: a worker died or stalled on it each time"
            ),
        }
    }

    /// The attempts that ran (0 for an entry that is no work order).
    pub fn attempts(&self) -> u64 {
        match self {
            Dead::NotAJob(_) => 0,
            Dead::Exhausted { attempts, .. } => *attempts,
        }
    }
}

/// A result on the results stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Completed {
    /// The results stream entry's id.
    pub id: String,
    pub work_order_id: String,
    pub worker_id: String,
    /// The work order's entry on the work stream.
    pub entry: String,
    /// One `run --json` result (SPEC §12).
    pub result: Value,
}

impl Completed {
    /// The fields of the result entry (`schemas/queue_result.schema.json`) of a run of
    /// `work_order_id` by `worker_id`, taken from `entry` on the work stream.
    pub fn fields(
        work_order_id: &str,
        worker_id: &str,
        entry: &str,
        ok: bool,
        result: &Value,
    ) -> Vec<(String, String)> {
        vec![
            ("work_order_id".to_string(), work_order_id.to_string()),
            ("worker_id".to_string(), worker_id.to_string()),
            ("entry".to_string(), entry.to_string()),
            ("ok".to_string(), ok.to_string()),
            ("result".to_string(), result.to_string()),
        ]
    }

    /// Reads a results entry back; `None` for an entry pactum did not write.
    pub fn from_fields(id: &str, fields: &[(String, String)]) -> Option<Completed> {
        let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        Some(Completed {
            id: id.to_string(),
            work_order_id: field("work_order_id")?,
            worker_id: field("worker_id")?,
            entry: field("entry")?,
            result: serde_json::from_str(&field("result")?).ok()?,
        })
    }
}

/// What [`Queue::finish`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finished {
    /// The result was written (its id on the results stream) and the entry acknowledged.
    Written(String),
    /// The id already had a result (this one was dropped); the entry was acknowledged.
    AlreadyDone(String),
}

/// A running work order's hold on its id: renewed while it runs, so no other worker runs
/// the same id and its entry is not claimed as orphaned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub entry: String,
    pub work_order_id: String,
    /// Unique to this attempt (worker id and a counter).
    pub token: String,
}

/// What `pactum worker`, `submit` and `results` need from a queue. Each value is one
/// connection, used by one thread.
pub trait Queue: Send {
    /// Makes sure the consumer group exists (it starts at the stream's first entry, so work
    /// submitted before any worker ran is consumed).
    fn prepare(&mut self) -> Result<()>;
    /// Enqueues a job; returns the entry's id.
    fn submit(&mut self, job: &Job) -> Result<String>;
    /// The next entry for `consumer`: first one another consumer has held longer than
    /// `claim_idle` (its worker died), else a new one, waiting up to `wait` for it.
    fn next(
        &mut self,
        consumer: &str,
        claim_idle: Duration,
        wait: Duration,
    ) -> Result<Option<Delivery>>;
    /// The id of the result `work_order_id` already has, if any.
    fn completed(&mut self, work_order_id: &str) -> Result<Option<String>>;
    /// In one atomic step: takes the lease of a delivery's id for `ttl`, counts the attempt
    /// and marks the entry as freshly held by `consumer`; [`Leased::Busy`] (nothing counted)
    /// when another attempt holds it.
    fn lease(&mut self, consumer: &str, lease: &Lease, ttl: Duration) -> Result<Leased>;
    /// Extends held leases by `ttl` and marks their entries as freshly held by `consumer`;
    /// returns the leases that were lost (expired and taken by another).
    fn renew(&mut self, consumer: &str, leases: &[Lease], ttl: Duration) -> Result<Vec<Lease>>;
    /// Drops a lease this attempt holds (a lease another attempt took stays).
    fn release(&mut self, lease: &Lease) -> Result<()>;
    /// In one atomic step: writes the result unless the id has one, acknowledges the entry,
    /// drops the lease and the id's attempt count.
    fn finish(&mut self, lease: &Lease, fields: &[(String, String)]) -> Result<Finished>;
    /// Acknowledges an entry whose id already has a result.
    fn acknowledge(&mut self, entry: &str) -> Result<()>;
    /// In one atomic step: copies the entry to the dead-letter stream with `why`'s reason
    /// and attempts, acknowledges it, and for [`Dead::Exhausted`] drops the lease and the
    /// id's attempt count.
    fn dead_letter(&mut self, delivery: &Delivery, why: &Dead<'_>) -> Result<()>;
    /// Results after `after` (`0` for all), waiting up to `wait` when there are none
    /// (`None`: no waiting).
    fn results(&mut self, after: &str, wait: Option<Duration>) -> Result<Vec<Completed>>;
    /// Dead letters after `after` (`0` for all), oldest first, without waiting: each its
    /// entry id on `NAME:dead` and its fields (the entry's own, `entry`, `reason`,
    /// `attempts`, `deliveries`). A queue that keeps none has none.
    fn dead_letters(&mut self, after: &str) -> Result<Vec<Entry>> {
        let _ = after;
        Ok(Vec::new())
    }
}

/// Parses a duration: `500ms`, `2s`, `1m`, `1h` (a whole number and its unit).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad = || {
        format!("`{text}` is not a duration; write a whole number and a unit: 500ms, 2s, 1m, 1h")
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    let duration = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        _ => return Err(bad()),
    };
    if duration.is_zero() {
        return Err(format!("`{text}` is no time at all; give a duration above zero"));
    }
    Ok(duration)
}

/// An entry's fields as the JSON object its schema describes (`queue_entry.schema.json`,
/// `queue_result.schema.json`): each name with its value (the last one, when a name
/// repeats).
pub fn fields_json(fields: &[(String, String)]) -> Value {
    Value::Object(fields.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
}

/// A queue failure of kind `failure` about the queue named `queue`.
pub fn error(queue: &str, failure: QueueFailure, message: impl Into<String>) -> Error {
    Error::Queue { queue: queue.to_string(), failure, message: message.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_take_the_units_people_write() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "2", "s", "1.5s", "-1s", "2 s", "2sec"] {
            let why = format!(
                "`{bad}` is not a duration; write a whole number and a unit: 500ms, 2s, 1m, 1h"
            );
            assert_eq!(parse_duration(bad), Err(why), "{bad}");
        }
        assert_eq!(
            parse_duration("0s"),
            Err("`0s` is no time at all; give a duration above zero".into())
        );
    }

    fn fields(id: &str, path: &str, wo: &str) -> Vec<(String, String)> {
        vec![
            ("work_order_id".into(), id.into()),
            ("path".into(), path.into()),
            ("work_order".into(), wo.into()),
        ]
    }

    #[test]
    fn a_job_round_trips_through_its_fields() {
        let mut job = Job {
            work_order_id: "WO-A-001".into(),
            path: Some("work_orders/a.json".into()),
            work_order: json!({"work_order_id": "WO-A-001", "kind": "exchange"}),
            kind: EntryKind::WorkOrder,
        };
        assert_eq!(Job::from_fields(&job.to_fields()), Ok(job.clone()));
        assert_eq!(job.file(), "work_orders/a.json");
        job.path = None;
        assert_eq!(job.to_fields().len(), 2, "no `path` field");
        assert_eq!(Job::from_fields(&job.to_fields()), Ok(job.clone()));
        assert_eq!(job.file(), "WO-A-001", "named by its id, in the project root");
        // An eval case travels in `eval_case`, its own `id` the entry's.
        let case = Job {
            work_order_id: "r-EVAL-1-000000".into(),
            path: None,
            work_order: json!({"id": "r-EVAL-1-000000", "suite": "evals/s.json"}),
            kind: EntryKind::EvalCase,
        };
        let fields = case.to_fields();
        assert!(fields.iter().any(|(k, _)| k == "eval_case"), "{fields:?}");
        assert_eq!(Job::from_fields(&fields), Ok(case.clone()));
        let mut both = fields.clone();
        both.push(("work_order".into(), "{}".into()));
        assert!(Job::from_fields(&both).unwrap_err().contains("both"));
        let mut other = case.clone();
        other.work_order["id"] = json!("r-EVAL-1-000001");
        assert!(Job::from_fields(&other.to_fields()).is_err(), "another case's order");
    }

    #[test]
    fn the_fields_pactum_writes_fit_the_schemas_it_publishes() {
        let job = |path: Option<&str>| Job {
            work_order_id: "WO-A-001".into(),
            path: path.map(str::to_string),
            work_order: json!({"work_order_id": "WO-A-001", "kind": "exchange"}),
            kind: EntryKind::WorkOrder,
        };
        for path in [Some("work_orders/a.json"), None] {
            let fields = fields_json(&job(path).to_fields());
            assert_eq!(crate::schema::check_queue_entry(&fields), vec![], "{fields}");
        }
        let case = Job {
            work_order_id: "r-EVAL-1-000000".into(),
            path: None,
            work_order: json!({"id": "r-EVAL-1-000000"}),
            kind: EntryKind::EvalCase,
        };
        let fields = fields_json(&case.to_fields());
        assert_eq!(crate::schema::check_queue_entry(&fields), vec![], "{fields}");
        let mut neither = fields.clone();
        neither.as_object_mut().unwrap().remove("eval_case");
        assert!(!crate::schema::check_queue_entry(&neither).is_empty(), "{neither}");
        let result = json!({"ok": false, "work_order_id": "WO-A-001", "code": "x"});
        for ok in [true, false] {
            let fields = Completed::fields("WO-A-001", "w1", "1-0", ok, &result);
            let doc = fields_json(&fields);
            assert_eq!(crate::schema::check_queue_result(&doc), vec![], "{doc}");
            let read = Completed::from_fields("2-0", &fields).unwrap();
            assert_eq!((read.worker_id.as_str(), read.entry.as_str()), ("w1", "1-0"));
            assert_eq!(read.result, result);
        }
        // The schemas say no to what the readers refuse.
        let findings = |doc: Value| {
            let f = crate::schema::check_queue_entry(&doc);
            f.iter().map(|f| format!("{} {}", f.pointer, f.message)).collect::<Vec<_>>().join("; ")
        };
        assert!(findings(json!({"work_order": "{}"})).contains("work_order_id"));
        let neither = findings(json!({"work_order_id": "WO-A-001"}));
        assert!(neither.contains("oneOf"), "neither a work order nor an eval case: {neither}");
        assert!(
            findings(json!({"work_order_id": "WO-A-001", "work_order": "{}", "path": ""}))
                .contains("/path")
        );
        assert!(
            findings(json!({"work_order_id": 1, "work_order": "{}"})).contains("/work_order_id")
        );
        let wrong = json!({"work_order_id": "WO-A-001", "worker_id": "w1", "entry": "one",
                           "ok": "yes", "result": "{}"});
        let f = crate::schema::check_queue_result(&wrong);
        let pointers: Vec<&str> = f.iter().map(|f| f.pointer.as_str()).collect();
        assert!(pointers.contains(&"/entry") && pointers.contains(&"/ok"), "{f:?}");
        let missing = crate::schema::check_queue_result(&json!({"work_order_id": "WO-A-001"}));
        assert!(!missing.is_empty());
    }

    #[test]
    fn an_entry_from_the_queue_is_checked_before_it_is_a_job() {
        let wo = r#"{"work_order_id": "WO-A-001"}"#;
        for (f, why) in [
            (fields("WO-A-001", "../x.json", wo), "`..`"),
            (fields("WO-A-001", "/etc/x.json", wo), "absolute"),
            (fields("WO-A-001", "a.json", "{"), "not JSON"),
            (fields("WO-B-001", "a.json", wo), "its content is `WO-A-001`"),
            (fields("WO-A-001", "a.json", "[]"), "no work order"),
            (vec![("path".into(), "a.json".into())], "no `work_order_id`"),
            (vec![("work_order_id".into(), "WO-A-001".into())], "no `work_order`"),
            (
                vec![("work_order_id".into(), "../x".into()), ("work_order".into(), wo.into())],
                "work_order_id `../x`",
            ),
        ] {
            let got = Job::from_fields(&f);
            assert!(got.as_ref().is_err_and(|e| e.contains(why)), "{why}: {got:?}");
        }
        let huge =
            format!(r#"{{"work_order_id": "WO-A-001", "x": "{}"}}"#, "a".repeat(MAX_JOB_BYTES));
        assert!(
            Job::from_fields(&fields("WO-A-001", "a.json", &huge)).unwrap_err().contains("limit")
        );
        // No `path`: a job all the same (issue 43), named by its id.
        let unpathed =
            vec![("work_order_id".into(), "WO-A-001".into()), ("work_order".into(), wo.into())];
        assert_eq!(Job::from_fields(&unpathed).map(|j| j.path), Ok(None));
    }

    #[test]
    fn a_results_entry_pactum_did_not_write_is_none() {
        let mut f = vec![
            ("work_order_id".into(), "WO-A-001".into()),
            ("worker_id".into(), "w1".into()),
            ("entry".into(), "1-0".into()),
            ("result".into(), r#"{"ok": true}"#.into()),
        ];
        let c = Completed::from_fields("2-0", &f).unwrap();
        assert_eq!((c.worker_id.as_str(), c.result["ok"].clone()), ("w1", json!(true)));
        f[3].1 = "not json".into();
        assert_eq!(Completed::from_fields("2-0", &f), None);
    }
}

/// The dead-letter count (issue 38): a model of the queue's counting — an attempt is counted
/// when it takes its id's lease, as `RedisQueue`'s lease script does — driven through the
/// real worker loop. Kept apart from `worker.rs`'s own tests.
#[cfg(test)]
mod attempt_counting {
    use std::collections::{HashMap, HashSet, VecDeque};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use serde_json::json;

    use super::worker::{self, Event, Options, Outcome};
    use super::*;

    #[test]
    fn a_work_order_is_dead_lettered_only_after_max_attempts_ran() {
        // (attempt taking the lease, --max-deliveries) → refused
        for (attempt, max, refused) in [
            (1, 1, false),
            (2, 1, true),
            (1, 5, false),
            (5, 5, false),
            (6, 5, true),
            (1, 0, true),
            (u64::MAX, u64::MAX, false),
        ] {
            assert_eq!(attempts_exhausted(attempt, max), refused, "attempt {attempt}, max {max}");
        }
    }

    /// One step of what happens on the queue while the worker serves.
    enum Step {
        /// The queue hands the worker this entry (`deliveries`: Redis's count).
        Deliver { entry: &'static str, id: &'static str, deliveries: u64 },
        /// The lease of an attempt that died expires.
        LeaseExpires,
    }

    #[derive(Default)]
    struct Model {
        script: VecDeque<Step>,
        /// Work-order id → the token of the attempt holding its lease.
        leases: HashMap<String, String>,
        /// Work-order id → attempts that took its lease.
        attempts: HashMap<String, u64>,
        done: HashSet<String>,
        dead: Vec<(String, String, u64)>,
    }

    /// The model behind one connection; the loop stops when the script is played.
    struct Fake {
        model: Arc<Mutex<Model>>,
        stop: Arc<AtomicBool>,
    }

    impl Fake {
        fn model(&self) -> std::sync::MutexGuard<'_, Model> {
            self.model.lock().unwrap()
        }
    }

    fn job_fields(id: &str) -> Vec<(String, String)> {
        let wo = json!({"work_order_id": id, "kind": "exchange"});
        vec![
            ("work_order_id".into(), id.into()),
            ("path".into(), format!("work_orders/{id}.json")),
            ("work_order".into(), wo.to_string()),
        ]
    }

    impl Queue for Fake {
        fn prepare(&mut self) -> Result<()> {
            Ok(())
        }
        fn submit(&mut self, job: &Job) -> Result<String> {
            Ok(job.work_order_id.clone())
        }
        fn next(&mut self, _: &str, _: Duration, _: Duration) -> Result<Option<Delivery>> {
            let mut model = self.model();
            while let Some(step) = model.script.pop_front() {
                match step {
                    Step::LeaseExpires => model.leases.clear(),
                    Step::Deliver { entry, id, deliveries } => {
                        let (entry, fields) = (entry.to_string(), job_fields(id));
                        return Ok(Some(Delivery { entry, fields, deliveries }));
                    }
                }
            }
            self.stop.store(true, Ordering::SeqCst);
            Ok(None)
        }
        fn completed(&mut self, id: &str) -> Result<Option<String>> {
            Ok(self.model().done.contains(id).then(|| "1-0".to_string()))
        }
        fn lease(&mut self, _: &str, lease: &Lease, _: Duration) -> Result<Leased> {
            let mut model = self.model();
            if model.leases.contains_key(&lease.work_order_id) {
                return Ok(Leased::Busy);
            }
            model.leases.insert(lease.work_order_id.clone(), lease.token.clone());
            let count = model.attempts.entry(lease.work_order_id.clone()).or_default();
            *count += 1;
            Ok(Leased::Taken { attempt: *count })
        }
        fn renew(&mut self, _: &str, _: &[Lease], _: Duration) -> Result<Vec<Lease>> {
            Ok(Vec::new())
        }
        fn release(&mut self, lease: &Lease) -> Result<()> {
            let mut model = self.model();
            if model.leases.get(&lease.work_order_id) == Some(&lease.token) {
                model.leases.remove(&lease.work_order_id);
            }
            Ok(())
        }
        fn finish(&mut self, lease: &Lease, _: &[(String, String)]) -> Result<Finished> {
            self.release(lease)?;
            let mut model = self.model();
            model.attempts.remove(&lease.work_order_id);
            model.done.insert(lease.work_order_id.clone());
            Ok(Finished::Written("1-0".into()))
        }
        fn acknowledge(&mut self, _: &str) -> Result<()> {
            Ok(())
        }
        fn dead_letter(&mut self, delivery: &Delivery, why: &Dead<'_>) -> Result<()> {
            if let Dead::Exhausted { lease, .. } = why {
                self.release(lease)?;
                self.model().attempts.remove(&lease.work_order_id);
            }
            self.model().dead.push((delivery.entry.clone(), why.reason(), why.attempts()));
            Ok(())
        }
        fn results(&mut self, _: &str, _: Option<Duration>) -> Result<Vec<Completed>> {
            Ok(Vec::new())
        }
    }

    /// What serving `script` did: the ids run, the Busy events, and the model afterwards.
    fn serve(model: Model, max_deliveries: u64) -> (Vec<String>, usize, Model) {
        let model = Arc::new(Mutex::new(model));
        let stop = Arc::new(AtomicBool::new(false));
        let connect = || Ok(Fake { model: model.clone(), stop: stop.clone() });
        let options = Options {
            worker_id: "w".into(),
            concurrency: 1,
            claim_idle: Duration::from_secs(60),
            max_deliveries,
        };
        let ran = Mutex::new(Vec::new());
        let run = |job: &Job| {
            ran.lock().unwrap().push(job.work_order_id.clone());
            Outcome { ok: true, result: json!({"ok": true}) }
        };
        let busy = Mutex::new(0);
        let events = |e: Event| {
            if matches!(e, Event::Busy { .. }) {
                *busy.lock().unwrap() += 1;
            }
        };
        worker::serve(&connect, &options, &stop, &run, &events).unwrap();
        let busy = busy.into_inner().unwrap();
        let model = std::mem::take(&mut *model.lock().unwrap());
        (ran.into_inner().unwrap(), busy, model)
    }

    /// An id whose attempt died while holding its lease, re-claimed 40 times meanwhile
    /// (Redis counts 41 deliveries), then claimed once its lease expired.
    fn reclaimed_while_busy() -> Model {
        let mut script: VecDeque<Step> = (2..=41)
            .map(|deliveries| Step::Deliver { entry: "1-0", id: "WO-A-001", deliveries })
            .collect();
        script.push_back(Step::LeaseExpires);
        script.push_back(Step::Deliver { entry: "1-0", id: "WO-A-001", deliveries: 42 });
        Model {
            script,
            leases: HashMap::from([("WO-A-001".into(), "dead/0".into())]),
            attempts: HashMap::from([("WO-A-001".into(), 1)]),
            ..Model::default()
        }
    }

    #[test]
    fn re_claims_that_find_the_id_busy_are_not_attempts() {
        let (ran, busy, model) = serve(reclaimed_while_busy(), 2);
        assert_eq!((ran, busy), (vec!["WO-A-001".to_string()], 40), "the second attempt runs");
        assert!(model.dead.is_empty(), "{:?}", model.dead);
        assert!(model.done.contains("WO-A-001"));
        assert!(model.attempts.is_empty() && model.leases.is_empty(), "finished: nothing held");
    }

    #[test]
    fn an_attempt_past_max_deliveries_is_dead_lettered_without_running() {
        // --max-deliveries 1: the attempt that died was the one allowed.
        let (ran, busy, model) = serve(reclaimed_while_busy(), 1);
        assert_eq!((ran.len(), busy), (0, 40));
        assert_eq!(model.dead.len(), 1, "{:?}", model.dead);
        let (entry, reason, attempts) = &model.dead[0];
        assert_eq!((entry.as_str(), *attempts), ("1-0", 1));
        assert!(reason.contains("1 attempt(s) ran") && reason.contains("--max-deliveries 1"));
        // The dead letter dropped the lease and the count: submitted again, it starts afresh.
        assert!(model.attempts.is_empty() && model.leases.is_empty());
    }

    #[test]
    fn redis_delivery_count_is_never_judged() {
        let script =
            VecDeque::from([Step::Deliver { entry: "1-0", id: "WO-B-001", deliveries: 1000 }]);
        let (ran, busy, model) = serve(Model { script, ..Model::default() }, 1);
        assert_eq!((ran, busy), (vec!["WO-B-001".to_string()], 0));
        assert!(model.dead.is_empty());
    }
}
