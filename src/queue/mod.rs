//! Work orders on a queue (SPEC §22): what a queue must do for `pactum worker`, `submit`
//! and `results` ([`Queue`]), what travels on it ([`Job`], [`Delivery`], [`Completed`]), and
//! the worker loop over any queue ([`worker::serve`]). Redis Streams ([`redis`]) is the one
//! implementation, spoken through a small RESP2 client of pactum's own ([`resp`]).
//!
//! The guarantees live in the loop and the queue together: an entry is acknowledged only
//! once its result is written (in one atomic step with the acknowledgement), a work-order
//! id has at most one result however often it is delivered, an entry a dead worker held is
//! claimed by another after the claim idle time, and an entry delivered too often goes to
//! the dead-letter stream.

use std::time::Duration;

use serde_json::Value;

use crate::error::{Error, QueueFailure, Result};

pub mod redis;
pub mod resp;
pub mod worker;

/// One work order on the queue: its id, its file's path relative to the project root (so
/// the paths it names resolve as they would for `pactum run`), and its content as submitted
/// (the worker runs what was validated, not whatever the file holds later).
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub work_order_id: String,
    pub path: String,
    pub work_order: Value,
}

/// The most bytes a work order may take on the queue (a work order file's own limit).
pub const MAX_JOB_BYTES: usize = crate::document::MAX_FILE_BYTES as usize;

impl Job {
    /// The entry's fields.
    pub fn to_fields(&self) -> Vec<(String, String)> {
        vec![
            ("work_order_id".into(), self.work_order_id.clone()),
            ("path".into(), self.path.clone()),
            ("work_order".into(), self.work_order.to_string()),
        ]
    }

    /// Reads an entry's fields back. The queue is not trusted: the path must stay inside the
    /// project (relative, no `..`), the content must be a JSON object of bounded size whose
    /// id is the entry's. `Err`: why the entry is no job (it goes to the dead letters).
    pub fn from_fields(fields: &[(String, String)]) -> std::result::Result<Job, String> {
        let field = |name: &str| {
            fields
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .ok_or_else(|| format!("the entry has no `{name}` field"))
        };
        let (id, path, text) = (field("work_order_id")?, field("path")?, field("work_order")?);
        crate::confine::check_relative(path).map_err(|e| format!("path `{path}`: {e}"))?;
        if text.len() > MAX_JOB_BYTES {
            return Err(format!(
                "the work order is {} bytes, more than the {MAX_JOB_BYTES}-byte limit",
                text.len()
            ));
        }
        let work_order: Value =
            serde_json::from_str(text).map_err(|e| format!("the work order is not JSON: {e}"))?;
        let own_id = work_order.get("work_order_id").and_then(Value::as_str);
        if own_id != Some(id) {
            return Err(format!(
                "the entry says work order `{id}` but its content is {}",
                own_id.map_or("no work order".to_string(), |o| format!("`{o}`"))
            ));
        }
        Ok(Job { work_order_id: id.to_string(), path: path.to_string(), work_order })
    }
}

/// An entry handed to one worker.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// The stream entry's id.
    pub entry: String,
    pub fields: Vec<(String, String)>,
    /// How many times the entry has been delivered, this time included.
    pub deliveries: u64,
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
    /// Takes the lease of a delivery's id for `ttl` and marks the entry as freshly held by
    /// `consumer`; false when another attempt holds it.
    fn lease(&mut self, consumer: &str, lease: &Lease, ttl: Duration) -> Result<bool>;
    /// Extends held leases by `ttl` and marks their entries as freshly held by `consumer`;
    /// returns the leases that were lost (expired and taken by another).
    fn renew(&mut self, consumer: &str, leases: &[Lease], ttl: Duration) -> Result<Vec<Lease>>;
    /// Drops a lease this attempt holds (a lease another attempt took stays).
    fn release(&mut self, lease: &Lease) -> Result<()>;
    /// In one atomic step: writes the result unless the id has one, acknowledges the entry
    /// and drops the lease.
    fn finish(&mut self, lease: &Lease, fields: &[(String, String)]) -> Result<Finished>;
    /// Acknowledges an entry whose id already has a result.
    fn acknowledge(&mut self, entry: &str) -> Result<()>;
    /// In one atomic step: copies the entry to the dead-letter stream with `reason` and
    /// acknowledges it.
    fn dead_letter(&mut self, delivery: &Delivery, reason: &str) -> Result<()>;
    /// Results after `after` (`0` for all), waiting up to `wait` when there are none
    /// (`None`: no waiting).
    fn results(&mut self, after: &str, wait: Option<Duration>) -> Result<Vec<Completed>>;
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
        for bad in ["", "2", "s", "1.5s", "-1s", "2 s", "2sec", "0s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
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
        let job = Job {
            work_order_id: "WO-A-001".into(),
            path: "work_orders/a.json".into(),
            work_order: json!({"work_order_id": "WO-A-001", "kind": "exchange"}),
        };
        assert_eq!(Job::from_fields(&job.to_fields()), Ok(job));
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
        ] {
            let got = Job::from_fields(&f);
            assert!(got.as_ref().is_err_and(|e| e.contains(why)), "{why}: {got:?}");
        }
        let huge =
            format!(r#"{{"work_order_id": "WO-A-001", "x": "{}"}}"#, "a".repeat(MAX_JOB_BYTES));
        assert!(
            Job::from_fields(&fields("WO-A-001", "a.json", &huge)).unwrap_err().contains("limit")
        );
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
