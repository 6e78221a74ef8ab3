//! HTML for `pactum view` and `pactum eval --format html`: the page frame, the one style
//! sheet (embedded), and the comparison of an eval report. Every text that comes from a
//! file, a model or a ledger goes through [`escape`] (or [`json_block`]), so it is shown as
//! text, never parsed as markup; no page carries a script.

use std::fmt::Write as _;

use serde_json::Value;

/// The style sheet, embedded in the binary.
pub const STYLE: &str = include_str!("style.css");

/// `text` with `&`, `<`, `>`, `"` and `'` escaped: safe between tags and inside a quoted
/// attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A value as a `<pre>` block: a string as itself, anything else as pretty JSON; escaped.
pub fn json_block(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    format!("<pre>{}</pre>", escape(&text))
}

/// Where a page's style comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Styled {
    /// `/assets/style.css` of the viewer, with its navigation bar.
    Served,
    /// Inline, for one self-contained file.
    Inline,
}

/// A whole page: `title` (text, escaped here) and `body` (HTML built by this module).
pub fn page(title: &str, body: &str, styled: Styled) -> String {
    let (style, nav) = match styled {
        Styled::Served => (
            "<link rel=\"stylesheet\" href=\"/assets/style.css\">".to_string(),
            "<header><strong><a href=\"/\">pactum view</a></strong><a href=\"/registry\">Registry</a><a href=\"/evals\">Eval runs</a><a href=\"/runs\">Runs</a><a href=\"/stats\">Stats</a></header>",
        ),
        Styled::Inline => (format!("<style>{STYLE}</style>"), ""),
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title>{style}</head>\n<body>{nav}<main>\n{body}</main></body></html>\n",
        escape(title)
    )
}

/// A pass / fail badge.
pub fn verdict(ok: bool) -> &'static str {
    if ok {
        "<span class=\"badge pass\">pass</span>"
    } else {
        "<span class=\"badge fail\">fail</span>"
    }
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "–".into(), |r| format!("{:.1}%", r * 100.0))
}

/// The suites of an eval report (`pactum eval --format json`), in order, each with its
/// versions (the baseline first, as the report lists them).
fn suites(report: &Value) -> Vec<(String, Vec<&Value>)> {
    let mut out: Vec<(String, Vec<&Value>)> = Vec::new();
    for entry in report["suites"].as_array().into_iter().flatten() {
        let key = format!("{}\u{0}{}", entry["eval_id"].as_str().unwrap_or(""), entry["file"]);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, versions)) => versions.push(entry),
            None => out.push((key, vec![entry])),
        }
    }
    out
}

/// How a case's row sorts: regressions, improvements, other failures, then passes.
fn rank(kind: &str) -> u8 {
    match kind {
        "regression" => 0,
        "improvement" => 1,
        "failed" => 2,
        _ => 3,
    }
}

/// Why a result failed: its error and failed assertions, one per line.
fn reasons(result: &Value) -> String {
    let mut lines = Vec::new();
    if let Some(e) = result.get("error").filter(|e| e.is_object()) {
        lines.push(format!(
            "{}: {}",
            e["code"].as_str().unwrap_or(""),
            e["message"].as_str().unwrap_or("")
        ));
    }
    for a in result["assertions"].as_array().into_iter().flatten() {
        if a["ok"] == false {
            lines.push(a["message"].as_str().unwrap_or(a["kind"].as_str().unwrap_or("")).into());
        }
    }
    lines.join("\n")
}

/// One version's result cell: the verdict, the output (when the report kept it) and why
/// it failed.
fn result_cell(result: Option<&Value>) -> String {
    let Some(r) = result else { return "<td class=\"muted\">not run</td>".into() };
    let mut cell = String::from("<td>");
    cell.push_str(verdict(r["ok"] == true));
    match r.get("output") {
        Some(output) => cell.push_str(&json_block(output)),
        None => cell.push_str("<div class=\"muted\">output not kept (both versions agree)</div>"),
    }
    let why = reasons(r);
    if !why.is_empty() {
        let _ = write!(cell, "<pre class=\"muted\">{}</pre>", escape(&why));
    }
    cell.push_str("</td>");
    cell
}

/// The comparison of an eval report as HTML: per suite, the versions' numbers, the
/// McNemar p-value and one row per case (input, each version's verdict and output),
/// regressions first, then improvements, other failures and passes.
pub fn comparison(report: &Value) -> String {
    let mut out = String::new();
    if report["ok"] == false {
        let _ = write!(
            out,
            "<p><span class=\"badge fail\">{}</span> {}</p>",
            escape(report["code"].as_str().unwrap_or("failed")),
            escape(report["message"].as_str().unwrap_or(""))
        );
    } else {
        out.push_str(
            "<p><span class=\"badge pass\">ok</span> every suite meets its thresholds</p>",
        );
    }
    for (_, versions) in suites(report) {
        let last = versions[versions.len() - 1];
        let _ = write!(
            out,
            "<h2>{} · {} · <span class=\"muted\">{}</span></h2>\n<div class=\"summary\">",
            escape(last["eval_id"].as_str().unwrap_or("")),
            escape(last["contract"].as_str().unwrap_or("")),
            escape(last["dataset"].as_str().unwrap_or(""))
        );
        for v in &versions {
            let _ = write!(
                out,
                "<div>{} <span class=\"muted\">{}</span><b>{}/{} passed ({})</b>schema valid {} · p50 {} ms · p95 {} ms</div>",
                escape(v["version"].as_str().unwrap_or("")),
                escape(v["role"].as_str().unwrap_or("")),
                v["passed"],
                v["cases"],
                percent(v["pass_rate"].as_f64()),
                percent(v["schema_valid_rate"].as_f64()),
                v["latency_ms"]["p50"],
                v["latency_ms"]["p95"],
            );
        }
        let compared = last.get("comparison").filter(|c| c.is_object());
        if let Some(c) = compared {
            let _ = write!(
                out,
                "<div>regressions <b class=\"regressions\">{}</b></div><div>improvements <b>{}</b></div><div>exact McNemar p<b class=\"p-value\">{:.4}</b>{}</div>",
                c["regressions"].as_array().map_or(0, Vec::len),
                c["improvements"].as_array().map_or(0, Vec::len),
                c["p_value"].as_f64().unwrap_or(1.0),
                if c["significant_regression"] == true {
                    "<span class=\"badge fail\">significant regression</span>"
                } else {
                    "not significant"
                }
            );
        }
        out.push_str("</div>\n");
        out.push_str(&case_table(&versions, compared));
    }
    out
}

/// The table of cases of one suite: one row per case, the versions side by side.
fn case_table(versions: &[&Value], compared: Option<&Value>) -> String {
    let results: Vec<Vec<&Value>> =
        versions.iter().map(|v| v["results"].as_array().into_iter().flatten().collect()).collect();
    let listed = |key: &str, id: &str| {
        compared.is_some_and(|c| {
            c[key].as_array().into_iter().flatten().any(|x| x.as_str() == Some(id))
        })
    };
    let ids: Vec<&str> =
        results.last().into_iter().flatten().filter_map(|r| r["case_id"].as_str()).collect();
    let mut rows: Vec<(u8, usize, String)> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let per: Vec<Option<&Value>> = results
            .iter()
            .map(|rs| rs.iter().copied().find(|r| r["case_id"].as_str() == Some(id)))
            .collect();
        let kind = if listed("regressions", id) {
            "regression"
        } else if listed("improvements", id) {
            "improvement"
        } else if per.iter().flatten().any(|r| r["ok"] != true) {
            "failed"
        } else {
            "passed"
        };
        let input = per.iter().flatten().find_map(|r| r.get("input"));
        let mut row = format!(
            "<tr class=\"case {kind}\" data-kind=\"{kind}\"><td><b>{}</b><div class=\"muted\">{kind} · line {}</div></td><td>{}</td>",
            escape(id),
            per.iter().flatten().next().map_or(Value::Null, |r| r["line"].clone()),
            input.map_or_else(|| "<span class=\"muted\">not kept</span>".into(), json_block),
        );
        for r in &per {
            row.push_str(&result_cell(*r));
        }
        row.push_str("</tr>\n");
        rows.push((rank(kind), i, row));
    }
    rows.sort_by_key(|(rank, i, _)| (*rank, *i));
    let mut out = String::from("<table class=\"cases\"><thead><tr><th>case</th><th>input</th>");
    for v in versions {
        let _ = write!(
            out,
            "<th>{} <span class=\"muted\">{}</span></th>",
            escape(v["version"].as_str().unwrap_or("")),
            escape(v["role"].as_str().unwrap_or(""))
        );
    }
    out.push_str("</tr></thead><tbody>\n");
    for (_, _, row) in rows {
        out.push_str(&row);
    }
    out.push_str("</tbody></table>\n");
    out
}

/// `pactum eval --format html`: the comparison as one self-contained page (inline style,
/// no script, nothing fetched).
pub fn report_file(report: &Value) -> String {
    page("pactum eval", &format!("<h1>pactum eval</h1>\n{}", comparison(report)), Styled::Inline)
}

/// A horizontal bar chart as inline SVG: one bar per `(label, value)`, scaled to the
/// largest, the value printed by `shown`.
pub fn bar_chart(title: &str, bars: &[(String, f64)], shown: impl Fn(f64) -> String) -> String {
    let max = bars.iter().map(|(_, v)| *v).fold(0.0_f64, f64::max);
    let (row, label_w, bar_w) = (22.0, 220.0, 360.0);
    let height = row * bars.len() as f64 + 28.0;
    let mut svg = format!(
        "<figure><figcaption>{}</figcaption><svg role=\"img\" width=\"{}\" height=\"{height}\" viewBox=\"0 0 {} {height}\">",
        escape(title),
        label_w + bar_w + 90.0,
        label_w + bar_w + 90.0
    );
    for (i, (label, value)) in bars.iter().enumerate() {
        let y = 8.0 + row * i as f64;
        let w = if max > 0.0 { (value / max * bar_w).max(1.0) } else { 1.0 };
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{}\">{}</text><rect x=\"{label_w}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"#2f5bb7\"></rect><text x=\"{}\" y=\"{}\">{}</text>",
            y + 13.0,
            escape(label),
            row - 6.0,
            label_w + w + 6.0,
            y + 13.0,
            escape(&shown(*value))
        );
    }
    svg.push_str("</svg></figure>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn markup_from_a_model_is_text() {
        assert_eq!(
            escape("<img src=x onerror=\"a()\"> & 'b'"),
            "&lt;img src=x onerror=&quot;a()&quot;&gt; &amp; &#39;b&#39;"
        );
        let block = json_block(&json!("<script>window.pwned=1</script>"));
        assert_eq!(block, "<pre>&lt;script&gt;window.pwned=1&lt;/script&gt;</pre>");
    }

    #[test]
    fn regressions_come_first_in_the_comparison() {
        let result =
            |id: &str, ok: bool| json!({"case_id": id, "line": 1, "ok": ok, "assertions": []});
        let report = json!({"ok": false, "code": "eval_regression", "message": "m", "suites": [
            {"eval_id": "E", "file": "f", "version": "1.0.0", "role": "baseline",
             "results": [result("a", true), result("b", true), result("c", false)]},
            {"eval_id": "E", "file": "f", "version": "1.1.0", "role": "candidate",
             "results": [result("a", true), result("b", false), result("c", true)],
             "comparison": {"regressions": ["b"], "improvements": ["c"], "p_value": 1.0}},
        ]});
        let html = comparison(&report);
        let at = |kind: &str| html.find(&format!("data-kind=\"{kind}\"")).unwrap();
        assert!(at("regression") < at("improvement") && at("improvement") < at("passed"));
        assert!(html.contains("<b class=\"p-value\">1.0000</b>"), "{html}");
        assert!(!report_file(&report).contains("<script"));
    }
}
