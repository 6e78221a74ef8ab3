//! The reports of an evaluation (SPEC §19): JSON (the interface), text for people, JUnit
//! for CI test reporters and Markdown for a pull request comment. Pure: outcomes in,
//! strings out; the binary prints them.
//!
//! Text from files and models (case ids, messages quoting outputs) is made safe for where
//! it goes: one line each, control characters escaped, in text (the binary also escapes
//! the whole text); XML-escaped in JUnit (only what Jenkins' `junit-10.xsd` and Surefire's
//! schema both define); Markdown punctuation and line breaks escaped in Markdown, so a
//! model's answer cannot close a table, mention someone or start a block of its own.

use serde_json::{Value, json};

use crate::eval::{Comparison, Failure, SuiteOutcome, VersionOutcome, percent, stats};

/// The JSON document of `pactum eval --format json`: `{"ok", "suites": [one entry per
/// suite and version], "comparison"?}`, with `code`, `message` and `errors` when not ok.
pub fn json(outcomes: &[SuiteOutcome]) -> Value {
    let problems: Vec<Failure> = outcomes.iter().flat_map(SuiteOutcome::problems).collect();
    let mut doc = json!({"ok": problems.is_empty()});
    if let Some(first) = problems.first() {
        doc["code"] = json!(first.code);
        doc["message"] = json!(first.message);
        doc["errors"] = json!(problems);
    }
    let suites: Vec<Value> =
        outcomes.iter().flat_map(|o| o.versions.iter().map(move |v| version_json(o, v))).collect();
    doc["suites"] = Value::Array(suites);
    if let Some(c) = comparison(outcomes) {
        doc["comparison"] = json!(c);
    }
    doc
}

fn version_json(o: &SuiteOutcome, v: &VersionOutcome) -> Value {
    let mut entry = json!({
        "eval_id": o.eval_id,
        "file": o.file,
        "dataset": o.dataset,
        "dataset_sha256": o.dataset_sha256,
        "contract": v.contract,
        "version": v.version,
        "role": v.role,
        "cases": v.cases,
        "passed": v.passed,
        "pass_rate": v.pass_rate(),
        "runs": v.runs,
        "schema_valid_rate": v.schema_valid_rate(),
        "failures": v.failures,
        "usage": v.usage,
        "judge_usage": v.judge_usage,
        "latency_ms": v.latency_ms,
        "thresholds": o.thresholds,
        "results": v.results,
    });
    if let Some(cost) = v.cost {
        entry["cost"] = json!(cost);
    }
    if !v.unpriced.is_empty() {
        entry["unpriced_models"] = json!(v.unpriced);
    }
    if let Some(filter) = &o.filter {
        entry["filter"] = json!(filter);
    }
    if v.role == "candidate"
        && let Some(c) = &o.comparison
    {
        entry["comparison"] = json!(c);
    }
    entry
}

/// The run's comparison: the one suite's, or, over several suites, every case pooled
/// (ids prefixed with their suite's `eval_id`) and tested once.
pub fn comparison(outcomes: &[SuiteOutcome]) -> Option<Comparison> {
    let compared: Vec<(&SuiteOutcome, &Comparison)> =
        outcomes.iter().filter_map(|o| o.comparison.as_ref().map(|c| (o, c))).collect();
    match compared.as_slice() {
        [] => None,
        [(_, one)] => Some((*one).clone()),
        many => {
            let prefixed = |o: &SuiteOutcome, ids: &[String]| -> Vec<String> {
                ids.iter().map(|id| format!("{}:{id}", o.eval_id)).collect()
            };
            let regressions: Vec<String> =
                many.iter().flat_map(|(o, c)| prefixed(o, &c.regressions)).collect();
            let improvements: Vec<String> =
                many.iter().flat_map(|(o, c)| prefixed(o, &c.improvements)).collect();
            let (mut passed, mut cases) = ([0u64; 2], [0u64; 2]);
            for (o, _) in many {
                for (i, v) in o.versions.iter().enumerate().take(2) {
                    passed[i] += v.passed;
                    cases[i] += v.cases;
                }
            }
            let rate =
                |i: usize| if cases[i] == 0 { 0.0 } else { passed[i] as f64 / cases[i] as f64 };
            let p_value = stats::mcnemar_exact(regressions.len() as u64, improvements.len() as u64);
            let names = |pick: fn(&Comparison) -> &String| {
                let mut list: Vec<&str> = many.iter().map(|(_, c)| pick(c).as_str()).collect();
                list.dedup();
                list.join(", ")
            };
            Some(Comparison {
                baseline: names(|c| &c.baseline),
                candidate: names(|c| &c.candidate),
                pass_rate_delta: rate(1) - rate(0),
                significant_regression: regressions.len() > improvements.len()
                    && p_value < super::SIGNIFICANCE,
                regressions,
                improvements,
                p_value,
            })
        }
    }
}

/// A value from a file or a model on one line of text.
fn line(text: &str) -> String {
    crate::terminal::escape_line(text).into_owned()
}

/// `1,234`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn money(cost: Option<f64>) -> String {
    cost.map_or_else(|| "–".to_string(), |c| format!("${c:.4}"))
}

fn millis(ms: f64) -> String {
    if ms < 10.0 { format!("{ms:.1} ms") } else { format!("{ms:.0} ms") }
}

/// `+12.5 pp` / `−30.0 pp`.
fn delta(d: f64) -> String {
    let pp = d * 100.0;
    if pp < 0.0 { format!("−{:.1} pp", -pp) } else { format!("+{pp:.1} pp") }
}

fn significance(c: &Comparison) -> &'static str {
    if c.significant_regression {
        "significant regression"
    } else if c.p_value < super::SIGNIFICANCE && c.improvements.len() > c.regressions.len() {
        "significant improvement"
    } else {
        "not significant"
    }
}

/// The text report: per suite, one line per version, failures by kind, the comparison and
/// the failed cases.
pub fn text(outcomes: &[SuiteOutcome]) -> String {
    let mut out = String::new();
    for o in outcomes {
        out.push_str(&format!(
            "{} ({}, {} case{} from {}{})\n",
            line(&o.eval_id),
            line(&o.versions.last().map(|v| v.contract.clone()).unwrap_or_default()),
            o.versions.last().map_or(0, |v| v.cases),
            if o.versions.last().is_some_and(|v| v.cases == 1) { "" } else { "s" },
            line(&o.dataset),
            o.filter.as_ref().map(|f| format!(", tag {}", line(f))).unwrap_or_default(),
        ));
        for v in &o.versions {
            let below = v.role == "candidate" && v.pass_rate() < o.thresholds.pass_rate;
            out.push_str(&format!(
                "  {:<10} {}/{} passed ({}){}  schema valid {}  p50 {}  p95 {}  tokens {} + {}{}  cost {}\n",
                line(&v.version),
                v.passed,
                v.cases,
                percent(v.pass_rate()),
                if below { format!(" below {}", percent(o.thresholds.pass_rate)) } else { String::new() },
                percent(v.schema_valid_rate()),
                millis(v.latency_ms.p50),
                millis(v.latency_ms.p95),
                thousands(v.usage.prompt_tokens),
                thousands(v.usage.completion_tokens),
                if v.judge_usage.total() > 0 {
                    format!(" (judge {})", thousands(v.judge_usage.total()))
                } else {
                    String::new()
                },
                money(v.cost),
            ));
            if !v.failures.is_empty() {
                let kinds: Vec<String> =
                    v.failures.iter().map(|(k, n)| format!("{} {n}", line(k))).collect();
                out.push_str(&format!("  {:<10} failures: {}\n", "", kinds.join(", ")));
            }
        }
        if let Some(c) = &o.comparison {
            let (candidate, baseline) = versions(o);
            out.push_str(&format!(
                "  {} vs {}: pass rate {}, {} regression{}{}, {} improvement{}{}; exact McNemar p = {:.4} ({})\n",
                line(candidate),
                line(baseline),
                delta(c.pass_rate_delta),
                c.regressions.len(),
                if c.regressions.len() == 1 { "" } else { "s" },
                ids(&c.regressions),
                c.improvements.len(),
                if c.improvements.len() == 1 { "" } else { "s" },
                ids(&c.improvements),
                c.p_value,
                significance(c),
            ));
        }
        for v in &o.versions {
            for r in v.results.iter().filter(|r| !r.ok) {
                let why: Vec<String> = r
                    .error
                    .iter()
                    .map(|e| format!("{}: {}", e.code, e.message))
                    .chain(r.assertions.iter().filter_map(|a| a.message.clone()))
                    .collect();
                let samples = if r.samples > 1 {
                    format!(" ({}/{} runs passed)", r.passed_samples, r.samples)
                } else {
                    String::new()
                };
                out.push_str(&format!(
                    "  failed {} on {} (line {}){samples}: {}\n",
                    line(&r.case_id),
                    line(&v.version),
                    r.line,
                    line(&why.join("; "))
                ));
            }
        }
    }
    let problems: Vec<Failure> = outcomes.iter().flat_map(SuiteOutcome::problems).collect();
    if problems.is_empty() {
        out.push_str("ok: every suite meets its thresholds");
        if outcomes.iter().any(|o| o.comparison.is_some()) {
            out.push_str(" and shows no significant regression");
        }
        out.push('\n');
    }
    out
}

/// The candidate's and the baseline's versions (the contract is the suite's).
fn versions(o: &SuiteOutcome) -> (&str, &str) {
    let version =
        |role: &str| o.versions.iter().find(|v| v.role == role).map_or("", |v| v.version.as_str());
    (version("candidate"), version("baseline"))
}

/// ` (a, b, c)` for a non-empty list of case ids.
fn ids(list: &[String]) -> String {
    if list.is_empty() {
        return String::new();
    }
    let mut shown: Vec<String> = list.iter().take(10).map(|id| line(id)).collect();
    if list.len() > 10 {
        shown.push(format!("and {} more", list.len() - 10));
    }
    format!(" ({})", shown.join(", "))
}

/// Text from a file or a model in a Markdown table cell: one line, Markdown punctuation
/// backslash-escaped (no table break, link, emphasis, HTML or mention).
fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in crate::terminal::escape_line(text).chars() {
        if matches!(
            c,
            '\\' | '`'
                | '*'
                | '_'
                | '{'
                | '}'
                | '['
                | ']'
                | '<'
                | '>'
                | '('
                | ')'
                | '#'
                | '+'
                | '!'
                | '|'
                | '@'
                | '~'
                | '&'
                | ':'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The Markdown report: a table per suite (one row per version), the comparison, and the
/// cases that regressed or failed, folded — fit for a pull request comment.
pub fn markdown(outcomes: &[SuiteOutcome]) -> String {
    let problems: Vec<Failure> = outcomes.iter().flat_map(SuiteOutcome::problems).collect();
    let mut out = String::new();
    out.push_str(if problems.is_empty() {
        "### ✅ pactum eval\n\n"
    } else {
        "### ❌ pactum eval\n\n"
    });
    for o in outcomes {
        let contract = o.versions.last().map(|v| v.contract.as_str()).unwrap_or_default();
        out.push_str(&format!(
            "**{}** · {} · {} cases · `{}`\n\n",
            cell(&o.eval_id),
            cell(contract),
            o.versions.last().map_or(0, |v| v.cases),
            cell(&o.dataset)
        ));
        out.push_str(
            "| version | passed | pass rate | schema valid | p50 | p95 | tokens | cost |\n",
        );
        out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for v in &o.versions {
            let below = v.role == "candidate" && v.pass_rate() < o.thresholds.pass_rate;
            let role = if v.role == "baseline" { " (baseline)" } else { "" };
            out.push_str(&format!(
                "| {}{role} | {}/{} | {}{} | {} | {} | {} | {} | {} |\n",
                cell(&v.version),
                v.passed,
                v.cases,
                percent(v.pass_rate()),
                if below { " ❌" } else { "" },
                percent(v.schema_valid_rate()),
                millis(v.latency_ms.p50),
                millis(v.latency_ms.p95),
                thousands(v.usage.total() + v.judge_usage.total()),
                money(v.cost),
            ));
        }
        out.push_str(&format!("\nThreshold: pass rate ≥ {}", percent(o.thresholds.pass_rate)));
        if let Some(s) = o.thresholds.schema_valid_rate {
            out.push_str(&format!(", schema valid ≥ {}", percent(s)));
        }
        out.push_str(".\n");
        if let Some(c) = &o.comparison {
            let (candidate, baseline) = versions(o);
            out.push_str(&format!(
                "\n**{} vs {}:** pass rate {} · {} regression{} · {} improvement{} · exact McNemar p = {:.4} ({})\n",
                cell(candidate),
                cell(baseline),
                delta(c.pass_rate_delta),
                c.regressions.len(),
                if c.regressions.len() == 1 { "" } else { "s" },
                c.improvements.len(),
                if c.improvements.len() == 1 { "" } else { "s" },
                c.p_value,
                significance(c),
            ));
        }
        let failed: Vec<(&VersionOutcome, &crate::eval::CaseResult)> = o
            .versions
            .iter()
            .filter(|v| v.role == "candidate")
            .flat_map(|v| v.results.iter().filter(|r| !r.ok).map(move |r| (v, r)))
            .collect();
        if !failed.is_empty() {
            out.push_str(&format!(
                "\n<details><summary>Failed cases ({})</summary>\n\n| case | version | why |\n|---|---|---|\n",
                failed.len()
            ));
            for (v, r) in failed.iter().take(50) {
                let why: Vec<String> = r
                    .error
                    .iter()
                    .map(|e| format!("{}: {}", e.code, e.message))
                    .chain(r.assertions.iter().filter_map(|a| a.message.clone()))
                    .collect();
                out.push_str(&format!(
                    "| {} | {} | {} |\n",
                    cell(&r.case_id),
                    cell(&v.version),
                    cell(&why.join("; "))
                ));
            }
            if failed.len() > 50 {
                out.push_str(&format!("| … | | and {} more |\n", failed.len() - 50));
            }
            out.push_str("\n</details>\n");
        }
        out.push('\n');
    }
    for p in &problems {
        out.push_str(&format!("- ❌ `{}`: {}\n", p.code, cell(&p.message)));
    }
    out
}

/// JUnit XML: one test suite per eval suite and version, one test case per case, named by
/// its id and the version (`refund-01 @ PRC-TRIAGE-001@1.1.0`: a viewer that keys cases by
/// classname and name keeps the versions' runs of a case apart); a failed case has one
/// `<failure>` with every reason.
pub fn junit(outcomes: &[SuiteOutcome]) -> String {
    use crate::report::junit::{attribute, text as body};
    let entries: Vec<(&SuiteOutcome, &VersionOutcome)> =
        outcomes.iter().flat_map(|o| o.versions.iter().map(move |v| (o, v))).collect();
    let tests: u64 = entries.iter().map(|(_, v)| v.cases).sum();
    let failures: u64 = entries.iter().map(|(_, v)| v.cases - v.passed).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"pactum eval\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">\n"
    ));
    for (o, v) in entries {
        let name = attribute(&format!("{} {}", o.eval_id, v.key()));
        let time = v.latency_ms.p50 * v.cases as f64 / 1000.0;
        out.push_str(&format!(
            "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" time=\"{time:.3}\">\n",
            v.cases,
            v.cases - v.passed
        ));
        out.push_str("    <properties>\n");
        for (key, value) in [
            ("dataset", o.dataset.clone()),
            ("dataset_sha256", o.dataset_sha256.clone()),
            ("pass_rate", format!("{:.4}", v.pass_rate())),
            ("schema_valid_rate", format!("{:.4}", v.schema_valid_rate())),
        ] {
            out.push_str(&format!(
                "      <property name=\"{key}\" value=\"{}\"/>\n",
                attribute(&value)
            ));
        }
        out.push_str("    </properties>\n");
        let classname = attribute(&format!("pactum.eval.{}", o.eval_id));
        for r in &v.results {
            let case = attribute(&format!("{} @ {}", r.case_id, v.key()));
            if r.ok {
                out.push_str(&format!(
                    "    <testcase name=\"{case}\" classname=\"{classname}\" time=\"0\"/>\n"
                ));
                continue;
            }
            let reasons: Vec<String> = r
                .error
                .iter()
                .map(|e| format!("{}: {}", e.code, e.message))
                .chain(r.assertions.iter().filter_map(|a| a.message.clone()))
                .collect();
            let kinds: Vec<&str> = r
                .error
                .iter()
                .map(|e| e.code.as_str())
                .chain(r.assertions.iter().filter(|a| !a.ok).map(|a| a.kind))
                .collect();
            out.push_str(&format!(
                "    <testcase name=\"{case}\" classname=\"{classname}\" time=\"0\">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                attribute(&kinds.join(",")),
                attribute(reasons.first().map_or("failed", String::as_str)),
                body(&format!("line {}: {}", r.line, reasons.join("\n")))
            ));
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_break_the_table_or_mention_anyone() {
        assert_eq!(
            cell("a | b\n<img src=x> @team [x](y)"),
            "a \\| b\\\\n\\<img src=x\\> \\@team \\[x\\]\\(y\\)"
        );
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(delta(-0.3), "−30.0 pp");
        assert_eq!(delta(0.125), "+12.5 pp");
    }
}
