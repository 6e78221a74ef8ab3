//! How each version behaves in production (SPEC §26): `pactum stats` folds the exchange
//! records of ledgers into one row per group — a contract's version, label, provider or
//! model — in one streaming pass (each ledger read and verified as `ledger verify` reads
//! it). Memory is bounded by the number of groups: latencies go into a fixed histogram per
//! group (log-linear buckets, 1/16 of a power of two wide: a percentile is reported within
//! about 4% of the exact one), never into a list of every value.
//!
//! Per group: `calls` (first attempts of the contract's own exchanges), the share whose
//! output validated at once (`verdict: ok`), the re-asks per call (`repair_attempt` > 0:
//! semantic retries and re-asks), the semantic-check rejections, p50/p95 latency, prompt
//! and completion tokens, and the cost when `[prices]` prices every model that answered.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::config::Config;
use crate::error::Result;
use crate::id::{Pin, Requirement};
use crate::ledger::Location;

/// What rows are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    Version,
    Label,
    Provider,
    Model,
}

impl By {
    pub fn parse(text: &str) -> Option<By> {
        match text {
            "version" => Some(By::Version),
            "label" => Some(By::Label),
            "provider" => Some(By::Provider),
            "model" => Some(By::Model),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            By::Version => "version",
            By::Label => "label",
            By::Provider => "provider",
            By::Model => "model",
        }
    }
}

/// Which records count.
#[derive(Clone, Debug)]
pub struct Options {
    /// Only this contract (and the versions its requirement matches).
    pub contract: Option<Pin>,
    pub by: By,
    pub since: Option<jiff::Timestamp>,
}

/// Latencies of one group: counts per log-linear bucket.
#[derive(Clone, Debug, Default)]
struct Histogram {
    buckets: BTreeMap<u32, u64>,
    count: u64,
}

const SUB: u32 = 16;

impl Histogram {
    fn bucket(ms: u64) -> u32 {
        if ms < u64::from(SUB) {
            return ms as u32;
        }
        let power = 63 - ms.leading_zeros();
        let shift = power - 4;
        let sub = ((ms >> shift) as u32) & (SUB - 1);
        power * SUB + sub
    }

    /// The smallest value of a bucket and the width of it.
    fn value_of(bucket: u32) -> f64 {
        if bucket < SUB {
            return f64::from(bucket);
        }
        let power = bucket / SUB;
        let sub = bucket % SUB;
        let base = 1u64 << power;
        let width = base / u64::from(SUB);
        // The middle of the bucket.
        (base + u64::from(sub) * width) as f64 + width as f64 / 2.0
    }

    fn add(&mut self, ms: u64) {
        *self.buckets.entry(Histogram::bucket(ms)).or_default() += 1;
        self.count += 1;
    }

    fn percentile(&self, p: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((p * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (bucket, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return Some(Histogram::value_of(*bucket));
            }
        }
        None
    }
}

/// One group's totals as they are folded.
#[derive(Clone, Debug, Default)]
struct Tally {
    calls: u64,
    validated: u64,
    reasks: u64,
    rejected: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    latency: Histogram,
    /// Tokens by the model that answered (priced at the end).
    by_model: BTreeMap<String, crate::gateway::Usage>,
    /// Label weights the records carry (label groups).
    weight: Option<u64>,
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub contract: String,
    pub group: String,
    pub calls: u64,
    pub validated_at_once: f64,
    pub repair_rate: f64,
    pub semantic_rejections: u64,
    pub latency_ms: Latency,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// `None` when a model that answered has no price.
    pub cost: Option<f64>,
    /// The weight of a label's target, for label groups that carry one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Latency {
    pub p50: Option<f64>,
    pub p95: Option<f64>,
}

/// The report: its rows, and what was read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    pub by: &'static str,
    pub records: u64,
    pub exchanges: u64,
    pub rows: Vec<Row>,
}

fn text<'v>(record: &'v Value, key: &str) -> Option<&'v str> {
    record.get(key).and_then(Value::as_str)
}

fn version_matches(requirement: &Requirement, version: &str) -> bool {
    let Some(v) = crate::id::parse_version(version) else { return false };
    match requirement {
        Requirement::Latest | Requirement::Label(_) => true,
        Requirement::Exact(e) => *e == v,
        Requirement::Range(r) => r.matches(&v),
    }
}

/// Folds the exchange records of `ledgers` into rows (see the module docs); prices come
/// from `config`'s `[prices]`.
pub fn fold(ledgers: &[Location], options: &Options, config: &Config) -> Result<Stats> {
    let mut groups: BTreeMap<(String, String), Tally> = BTreeMap::new();
    let (mut records, mut exchanges) = (0u64, 0u64);
    for location in ledgers {
        crate::ledger::for_each_record(location, |record| {
            records += 1;
            if text(record, "event") != Some("exchange")
                || text(record, "verdict") == Some("tool_calls")
                || record.get("role").is_some()
            {
                return Ok(());
            }
            let contract = text(record, "contract_id").unwrap_or("");
            let version = text(record, "contract_version").unwrap_or("");
            if let Some(pin) = &options.contract
                && (pin.id != contract || !version_matches(&pin.requirement, version))
            {
                return Ok(());
            }
            if let Some(since) = options.since {
                let at = text(record, "at").and_then(|t| t.parse::<jiff::Timestamp>().ok());
                if at.is_none_or(|at| at < since) {
                    return Ok(());
                }
            }
            exchanges += 1;
            let model = text(record, "response_model").or(text(record, "model")).unwrap_or("");
            let group = match options.by {
                By::Version => version.to_string(),
                By::Label => text(record, "label").unwrap_or("(no label)").to_string(),
                By::Provider => text(record, "provider").unwrap_or("").to_string(),
                By::Model => {
                    if model.is_empty() {
                        "(no model)".to_string()
                    } else {
                        model.to_string()
                    }
                }
            };
            let tally = groups.entry((contract.to_string(), group)).or_default();
            let attempt = record.get("repair_attempt").and_then(Value::as_u64).unwrap_or(0);
            if attempt == 0 {
                tally.calls += 1;
                if text(record, "verdict") == Some("ok") {
                    tally.validated += 1;
                }
            } else {
                tally.reasks += 1;
            }
            let rejected = text(record, "verdict") == Some("semantic_rejected")
                || record.get("warnings").and_then(Value::as_array).is_some_and(|w| {
                    w.iter()
                        .any(|w| w.get("code").and_then(Value::as_str) == Some("semantic_rejected"))
                });
            if rejected {
                tally.rejected += 1;
            }
            let usage = record.get("usage");
            let tokens =
                |k: &str| usage.and_then(|u| u.get(k)).and_then(Value::as_u64).unwrap_or(0);
            let used = crate::gateway::Usage {
                prompt_tokens: tokens("prompt_tokens"),
                completion_tokens: tokens("completion_tokens"),
            };
            tally.prompt_tokens = tally.prompt_tokens.saturating_add(used.prompt_tokens);
            tally.completion_tokens =
                tally.completion_tokens.saturating_add(used.completion_tokens);
            let priced = tally.by_model.entry(model.to_string()).or_default();
            *priced = priced.plus(used);
            if let Some(ms) = record.get("latency_ms").and_then(Value::as_u64) {
                tally.latency.add(ms);
            }
            if let Some(w) = record.get("label_weight").and_then(Value::as_u64) {
                tally.weight = Some(w);
            }
            Ok(())
        })?;
    }
    let rows = groups
        .into_iter()
        .map(|((contract, group), t)| {
            let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
            let cost = t.by_model.iter().try_fold(0.0, |sum, (model, usage)| {
                if usage.total() == 0 {
                    return Some(sum);
                }
                config.price_of(model).map(|p| sum + p.cost(*usage))
            });
            Row {
                contract,
                group,
                calls: t.calls,
                validated_at_once: ratio(t.validated, t.calls),
                repair_rate: ratio(t.reasks, t.calls),
                semantic_rejections: t.rejected,
                latency_ms: Latency {
                    p50: t.latency.percentile(0.5),
                    p95: t.latency.percentile(0.95),
                },
                prompt_tokens: t.prompt_tokens,
                completion_tokens: t.completion_tokens,
                cost,
                weight: t.weight,
            }
        })
        .collect();
    Ok(Stats { by: options.by.as_str(), records, exchanges, rows })
}

fn ms(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.0} ms"))
}

fn money(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("${v:.4}"))
}

/// The rows for people: one line each.
pub fn text_report(stats: &Stats) -> String {
    let mut out = String::new();
    for r in &stats.rows {
        out.push_str(&format!(
            "{} {} {}: {} calls, {} validated at once, {:.2} re-asks per call, {} semantic rejection(s), p50 {} p95 {}, tokens {} + {}, cost {}\n",
            crate::terminal::escape_line(&r.contract),
            stats.by,
            crate::terminal::escape_line(&r.group),
            r.calls,
            crate::eval::percent(r.validated_at_once),
            r.repair_rate,
            r.semantic_rejections,
            ms(r.latency_ms.p50),
            ms(r.latency_ms.p95),
            r.prompt_tokens,
            r.completion_tokens,
            money(r.cost),
        ));
    }
    out.push_str(&format!("{} exchange(s) in {} record(s)\n", stats.exchanges, stats.records));
    out
}

/// The rows as a Markdown table (a pull request comment, a report).
pub fn markdown(stats: &Stats) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = format!(
        "| contract | {} | calls | validated at once | re-asks per call | semantic rejections | p50 | p95 | tokens | cost |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        stats.by
    );
    for r in &stats.rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.2} | {} | {} | {} | {} | {} |\n",
            cell(&r.contract),
            cell(&r.group),
            r.calls,
            crate::eval::percent(r.validated_at_once),
            r.repair_rate,
            r.semantic_rejections,
            ms(r.latency_ms.p50),
            ms(r.latency_ms.p95),
            r.prompt_tokens + r.completion_tokens,
            money(r.cost),
        ));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ledger::{Kind, Ledger};
    use serde_json::json;

    #[test]
    fn percentiles_are_within_a_bucket_of_the_exact_ones() {
        let mut h = Histogram::default();
        let values: Vec<u64> = (1..=10_000).map(|i| (i * 37) % 5000 + 1).collect();
        for v in &values {
            h.add(*v);
        }
        let mut sorted = values.clone();
        sorted.sort();
        for p in [0.5, 0.95, 0.99] {
            let exact = sorted[((p * sorted.len() as f64).ceil() as usize) - 1] as f64;
            let got = h.percentile(p).unwrap();
            assert!((got - exact).abs() / exact < 0.05, "p{p}: {got} against {exact}");
        }
        // Small values are exact.
        let mut small = Histogram::default();
        for v in [3, 3, 7] {
            small.add(v);
        }
        assert_eq!(small.percentile(0.5), Some(3.0));
    }

    #[test]
    fn rows_per_version_with_rates_tokens_and_costs() {
        let dir = tempfile::tempdir().unwrap();
        let location = Location::chosen(&dir.path().join("l.jsonl"));
        let ledger = Ledger::open(&location).unwrap();
        let record = |version: &str, verdict: &str, attempt: u64, ms: u64| {
            json!({"event": "exchange", "contract_id": "PRC-X-001", "contract_version": version, "verdict": verdict,
                   "repair_attempt": attempt, "latency_ms": ms, "provider": "openai", "model": "gpt-4o-mini",
                   "usage": {"prompt_tokens": 100, "completion_tokens": 10}})
        };
        for r in [
            record("1.0.0", "ok", 0, 100),
            record("1.0.0", "output_schema_invalid", 0, 200),
            record("1.0.0", "ok", 1, 300),
            record("1.1.0", "ok", 0, 50),
            json!({"event": "exchange", "contract_id": "PRC-REPAIRJSON-001", "role": "repair", "verdict": "ok"}),
            json!({"event": "work_order_completed"}),
        ] {
            ledger.append(Kind::Exchange, r.as_object().unwrap().clone()).unwrap();
        }
        let mut config = Config::default();
        config.prices.insert(
            "gpt-4o-mini".into(),
            crate::config::Price { prompt_per_mtok: 1.0, completion_per_mtok: 10.0 },
        );
        let options = Options {
            contract: Some(Pin::parse("PRC-X-001").unwrap()),
            by: By::Version,
            since: None,
        };
        let stats = fold(&[location], &options, &config).unwrap();
        assert_eq!((stats.records, stats.exchanges), (6, 4));
        let v1 = &stats.rows[0];
        assert_eq!((v1.group.as_str(), v1.calls), ("1.0.0", 2));
        assert_eq!(v1.validated_at_once, 0.5);
        assert_eq!(v1.repair_rate, 0.5);
        assert_eq!((v1.prompt_tokens, v1.completion_tokens), (300, 30));
        assert!((v1.cost.unwrap() - (300.0 + 300.0) / 1e6).abs() < 1e-12, "{:?}", v1.cost);
        assert_eq!(stats.rows[1].group, "1.1.0");
        assert_eq!(stats.rows[1].validated_at_once, 1.0);
        assert!(
            markdown(&stats).contains("| PRC-X-001 | 1.0.0 | 2 | 50.0% |"),
            "{}",
            markdown(&stats)
        );
    }

    /// A production-like record: three versions, two providers, a verdict mix, latencies.
    pub(crate) fn production(i: usize) -> serde_json::Value {
        let version = ["1.0.0", "1.1.0", "1.2.0"][i % 3];
        let verdict = if i.is_multiple_of(7) { "output_schema_invalid" } else { "ok" };
        let provider = ["openai", "anthropic"][i % 2];
        json!({"event": "exchange", "at": "2026-12-01T10:00:00Z", "contract_id": "PRC-X-001",
               "contract_version": version, "verdict": verdict, "repair_attempt": i % 5 / 4,
               "latency_ms": 40 + (i * 7919) % 3000, "provider": provider,
               "model": "gpt-4o-mini", "label": "production",
               "input": {"user_input": format!("message {i}")}, "output": {"label": "billing"},
               "usage": {"prompt_tokens": 100 + i % 50, "completion_tokens": 10}})
    }

    /// Issue 41: stats and a sampled dataset over a generated ledger of 100,000 records
    /// cost work linear in the records and hold memory bounded by their groups or their
    /// sample (one streaming pass each), counted, not timed. The two share the generated
    /// ledgers (25,000 and 100,000 records) and each measures them once.
    #[test]
    fn stats_and_a_dataset_over_100k_records_are_linear_and_bounded() {
        let ledgers: Vec<(usize, (tempfile::TempDir, Location))> = [25_000, 100_000]
            .into_iter()
            .map(|n| (n, crate::ledger::generated(n, production)))
            .collect();
        let options = Options { contract: None, by: By::Version, since: None };
        let config = Config::default();
        let stats_of = |(n, (_, location)): &(usize, (tempfile::TempDir, Location))| {
            let (stats, work) = crate::work::counted(|| {
                fold(std::slice::from_ref(location), &options, &config).unwrap()
            });
            assert_eq!((stats.records, stats.rows.len()), (*n as u64, 3));
            work
        };
        let dataset_of = |(n, (_, location)): &(usize, (tempfile::TempDir, Location))| {
            let options = crate::eval::from_ledger::Options {
                contract: Pin::parse("PRC-X-001").unwrap(),
                since: None,
                verdict: None,
                sample: Some(50),
                seed: 7,
                expected: true,
            };
            let (built, work) = crate::work::counted(|| {
                crate::eval::from_ledger::build(std::slice::from_ref(location), &options).unwrap()
            });
            assert_eq!((built.exchanges, built.cases.len()), (*n as u64, 50));
            work
        };
        // Each measured once after a first run (whatever a first call initialises).
        let (small, large) = (&ledgers[0], &ledgers[1]);
        stats_of(small);
        let (at_n, at_4n) = (stats_of(small), stats_of(large));
        crate::work::check_linear("stats", 25_000, at_n, at_4n);
        crate::work::check_bounded("stats", 25_000, 64 * 1024, at_n, at_4n);
        dataset_of(small);
        let (at_n, at_4n) = (dataset_of(small), dataset_of(large));
        crate::work::check_linear("eval dataset --from-ledger", 25_000, at_n, at_4n);
        crate::work::check_bounded("eval dataset --from-ledger", 25_000, 64 * 1024, at_n, at_4n);
    }
}
