//! Datasets from production (SPEC §26): `pactum eval dataset --from-ledger` turns recorded
//! exchanges of one contract into eval cases — the recorded input, the recorded output as
//! the case's `expect` (unless asked not to), the record's `seq` and `hash` as provenance —
//! filtered by age and verdict and sampled reproducibly. One pass over each ledger (read and
//! verified as `ledger verify` reads it); memory holds at most the sample.
//!
//! A recorded input that holds a masked value (`[redacted]`: a secret or an `x-secret`
//! value the ledger replaced) is no input the contract was called with: such records are
//! skipped and counted, never turned into a case.

use serde_json::{Value, json};

use crate::error::Result;
use crate::id::{Pin, Requirement};
use crate::ledger::Location;

/// Which recorded exchanges become cases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Answered validly at once (`verdict: ok`, no re-ask).
    Ok,
    /// Failed: no valid output (extraction, `output_schema`, a judge's rejection, ...).
    Invalid,
    /// Valid after a re-ask (`repair_attempt` > 0).
    Repaired,
}

impl Verdict {
    pub fn parse(text: &str) -> Option<Verdict> {
        match text {
            "ok" => Some(Verdict::Ok),
            "invalid" => Some(Verdict::Invalid),
            "repaired" => Some(Verdict::Repaired),
            _ => None,
        }
    }

    fn holds(&self, record: &Value) -> bool {
        let ok = record.get("verdict").and_then(Value::as_str) == Some("ok");
        let attempt = record.get("repair_attempt").and_then(Value::as_u64).unwrap_or(0);
        match self {
            Verdict::Ok => ok && attempt == 0,
            Verdict::Repaired => ok && attempt > 0,
            Verdict::Invalid => !ok,
        }
    }
}

/// What to take.
#[derive(Clone, Debug)]
pub struct Options {
    /// The contract (its id, and the versions the requirement matches; a label or no
    /// requirement matches every version).
    pub contract: Pin,
    /// Only records at or after this time.
    pub since: Option<jiff::Timestamp>,
    pub verdict: Option<Verdict>,
    /// At most this many cases, chosen at random (reproducibly, by `seed`) from those that
    /// qualify.
    pub sample: Option<usize>,
    pub seed: u64,
    /// The recorded output as the case's `expect` (an `equals` at the root), for records
    /// that have one.
    pub expected: bool,
}

/// What was built, and what was left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Built {
    /// The cases, in ledger order.
    pub cases: Vec<Value>,
    /// Exchange records of the contract read (every version, every verdict).
    pub exchanges: u64,
    /// Those that qualified (version, age, verdict) and had an input.
    pub qualified: u64,
    /// Qualified records whose input holds a masked value: skipped.
    pub masked: u64,
    /// Qualified records without an input (recorded with `[ledger] inputs = false`, or
    /// before inputs were recorded): skipped.
    pub without_input: u64,
}

/// A small, seeded generator (splitmix64): the same seed draws the same sample.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn holds_mask(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains(crate::redact::MASK),
        Value::Array(items) => items.iter().any(holds_mask),
        Value::Object(map) => {
            map.iter().any(|(k, v)| k.contains(crate::redact::MASK) || holds_mask(v))
        }
        _ => false,
    }
}

fn version_matches(requirement: &Requirement, version: &str) -> bool {
    let Some(v) = crate::id::parse_version(version) else { return false };
    match requirement {
        Requirement::Latest | Requirement::Label(_) => true,
        Requirement::Exact(e) => *e == v,
        Requirement::Range(r) => r.matches(&v),
    }
}

/// The cases of the exchanges recorded in `ledgers` (see the module docs).
pub fn build(ledgers: &[Location], options: &Options) -> Result<Built> {
    let mut built = Built::default();
    let mut draw = Draw(options.seed);
    // Reservoir sampling (Algorithm R): each qualifying record is kept with the same
    // chance, in one pass, holding at most `sample` cases.
    let mut reservoir: Vec<(u64, Value)> = Vec::new();
    let mut order = 0u64;
    for location in ledgers {
        crate::ledger::for_each_record(location, |record| {
            if record.get("event").and_then(Value::as_str) != Some("exchange")
                || record.get("verdict").and_then(Value::as_str) == Some("tool_calls")
                || record.get("contract_id").and_then(Value::as_str)
                    != Some(options.contract.id.as_str())
                || record.get("role").is_some()
            {
                return Ok(());
            }
            built.exchanges += 1;
            let version = record.get("contract_version").and_then(Value::as_str).unwrap_or("");
            if !version_matches(&options.contract.requirement, version) {
                return Ok(());
            }
            if let Some(since) = options.since {
                let at = record
                    .get("at")
                    .and_then(Value::as_str)
                    .and_then(|t| t.parse::<jiff::Timestamp>().ok());
                if at.is_none_or(|at| at < since) {
                    return Ok(());
                }
            }
            if options.verdict.as_ref().is_some_and(|v| !v.holds(record)) {
                return Ok(());
            }
            let Some(input) = record.get("input") else {
                built.without_input += 1;
                return Ok(());
            };
            built.qualified += 1;
            if holds_mask(input) {
                built.masked += 1;
                return Ok(());
            }
            let seq = record.get("seq").and_then(Value::as_u64).unwrap_or(0);
            let hash = record.get("hash").and_then(Value::as_str).unwrap_or("");
            let mut case = json!({
                "id": format!("ledger-{seq}-{}", &hash[..hash.len().min(12)]),
                "input": input,
                "tags": ["from-ledger"],
                "provenance": {"ledger_seq": seq, "ledger_hash": hash, "contract_version": version,
                               "verdict": record.get("verdict").cloned().unwrap_or(Value::Null)},
            });
            if let Some(at) = record.get("at") {
                case["provenance"]["at"] = at.clone();
            }
            if options.expected
                && record.get("verdict").and_then(Value::as_str) == Some("ok")
                && let Some(output) = record.get("output")
            {
                case["expect"] = json!([{"kind": "equals", "pointer": "", "value": output}]);
            }
            order += 1;
            match options.sample {
                None => reservoir.push((order, case)),
                Some(n) if reservoir.len() < n => reservoir.push((order, case)),
                Some(n) => {
                    let j = draw.below(order) as usize;
                    if j < n {
                        reservoir[j] = (order, case);
                    }
                }
            }
            Ok(())
        })?;
    }
    reservoir.sort_by_key(|(order, _)| *order);
    built.cases = reservoir.into_iter().map(|(_, c)| c).collect();
    Ok(built)
}

/// The cases as a JSON Lines dataset (one case a line, a newline at the end).
pub fn jsonl(cases: &[Value]) -> String {
    let mut out = String::new();
    for case in cases {
        out.push_str(&case.to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::ledger::{Kind, Ledger};

    fn ledger_of(records: &[Value]) -> (tempfile::TempDir, Location) {
        let dir = tempfile::tempdir().unwrap();
        let location = Location::chosen(&dir.path().join("ledger.jsonl"));
        let ledger = Ledger::open(&location).unwrap();
        for r in records {
            ledger.append(Kind::Exchange, r.as_object().unwrap().clone()).unwrap();
        }
        (dir, location)
    }

    fn exchange(version: &str, verdict: &str, input: Value) -> Value {
        json!({"event": "exchange", "contract_id": "PRC-X-001", "contract_version": version, "verdict": verdict,
               "repair_attempt": 0, "input": input, "output": {"label": "billing"}})
    }

    fn options(pin: &str) -> Options {
        Options {
            contract: Pin::parse(pin).unwrap(),
            since: None,
            verdict: None,
            sample: None,
            seed: 7,
            expected: true,
        }
    }

    #[test]
    fn recorded_exchanges_become_cases_with_their_provenance() {
        let (_dir, at) = ledger_of(&[
            exchange("1.0.0", "ok", json!({"q": "a"})),
            exchange("2.0.0", "ok", json!({"q": "b"})),
            exchange("1.1.0", "output_schema_invalid", json!({"q": "c"})),
            json!({"event": "exchange", "contract_id": "PRC-Y-001", "contract_version": "1.0.0", "verdict": "ok", "input": {}}),
            exchange("1.0.0", "ok", json!({"token": "[redacted]"})),
        ]);
        let built = build(std::slice::from_ref(&at), &options("PRC-X-001@^1")).unwrap();
        assert_eq!((built.exchanges, built.qualified, built.masked), (4, 3, 1));
        assert_eq!(built.cases.len(), 2);
        let first = &built.cases[0];
        assert_eq!(first["input"], json!({"q": "a"}));
        assert_eq!(
            first["expect"][0],
            json!({"kind": "equals", "pointer": "", "value": {"label": "billing"}})
        );
        assert_eq!(first["provenance"]["ledger_seq"], 1);
        assert!(built.cases[1].get("expect").is_none(), "an invalid output is no expectation");
        // Every case fits the dataset's case shape.
        for case in &built.cases {
            assert!(crate::schema::check_eval_case(case).is_empty(), "{case}");
        }
        let mut invalid = options("PRC-X-001");
        invalid.verdict = Some(Verdict::Invalid);
        let built = build(&[at], &invalid).unwrap();
        assert_eq!(built.cases.len(), 1);
        assert_eq!(built.cases[0]["input"], json!({"q": "c"}));
    }

    #[test]
    fn a_sample_is_reproducible_and_uniform_enough() {
        let records: Vec<Value> =
            (0..200).map(|i| exchange("1.0.0", "ok", json!({"n": i}))).collect();
        let (_dir, at) = ledger_of(&records);
        let mut o = options("PRC-X-001");
        o.sample = Some(20);
        let a = build(std::slice::from_ref(&at), &o).unwrap();
        let b = build(std::slice::from_ref(&at), &o).unwrap();
        assert_eq!(a.cases, b.cases, "the same seed, the same sample");
        assert_eq!(a.cases.len(), 20);
        o.seed = 8;
        assert_ne!(build(std::slice::from_ref(&at), &o).unwrap().cases, a.cases);
        // Records from both halves of the ledger are drawn.
        let ns: Vec<u64> = a.cases.iter().map(|c| c["input"]["n"].as_u64().unwrap()).collect();
        assert!(ns.iter().any(|n| *n < 100) && ns.iter().any(|n| *n >= 100), "{ns:?}");
        let mut sorted = ns.clone();
        sorted.sort();
        assert_eq!(ns, sorted, "cases keep the ledger's order");
    }
}
