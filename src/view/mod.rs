//! `pactum view` (SPEC §26): a read-only web UI over a project — the registry and each
//! version's history as a timeline, the eval runs `pactum eval` kept under
//! `.pactum/evals/` with the comparison of two versions, the runs of the ledger (work order
//! → exchanges → tool calls, with timings) and the stats as charts.
//!
//! Pages are rendered on the server from what is on disk at each request ([`respond`]);
//! no page has a script, the one style sheet is embedded ([`html::STYLE`]), and every text
//! from a file, a model or the ledger is escaped ([`html::escape`]). [`server`] is the
//! small HTTP/1.1 server that answers `GET`s with these pages.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;

use crate::config::Config;
use crate::eval::kept;
use crate::ledger::Location;
use crate::registry::{EntryKind, Registry};

pub mod html;
pub mod server;

use html::{Styled, escape, json_block, page};

/// The most runs the runs page lists (the newest).
pub const MAX_RUNS_LISTED: usize = 200;
/// The most eval runs the eval runs page lists (the newest).
pub const MAX_EVALS_LISTED: usize = 200;
/// The most records one run's page shows.
pub const MAX_RUN_RECORDS: usize = 2_000;

/// What the viewer shows: the project and its ledgers.
#[derive(Debug)]
pub struct View {
    pub root: PathBuf,
    pub ledgers: Vec<Location>,
    pub config: Config,
}

/// One answer: a status, a content type and a body.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Response {
    fn html(title: &str, body: &str) -> Response {
        Response {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: page(title, body, Styled::Served),
        }
    }

    fn status(status: u16, message: &str) -> Response {
        Response {
            status,
            content_type: "text/html; charset=utf-8",
            body: page(
                message,
                &format!("<h1>{status}</h1><p>{}</p>", escape(message)),
                Styled::Served,
            ),
        }
    }

    /// 404, naming what was not found.
    pub fn not_found(what: &str) -> Response {
        Response::status(404, &format!("not found: {what}"))
    }

    fn failed(error: &crate::Error) -> Response {
        Response::status(500, &format!("{}: {error}", error.code().as_str()))
    }
}

/// The page at `path` (the request target without its query).
pub fn respond(view: &View, path: &str) -> Response {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let result = match parts.as_slice() {
        [""] => Ok(index()),
        ["assets", "style.css"] => {
            return Response {
                status: 200,
                content_type: "text/css; charset=utf-8",
                body: html::STYLE.to_string(),
            };
        }
        ["registry"] => registry(view),
        ["history", id] => history(view, id, None),
        ["history", id, version] => history(view, id, Some(version)),
        ["evals"] => Ok(evals(view)),
        ["evals", name] => eval_run(view, name),
        ["runs"] => runs(view),
        ["runs", seq] => run(view, seq),
        ["stats"] => stats(view),
        _ => Ok(Response::not_found(path)),
    };
    result.unwrap_or_else(|e| Response::failed(&e))
}

fn index() -> Response {
    Response::html(
        "pactum view",
        "<h1>pactum view</h1><ul>\
         <li><a href=\"/registry\">Registry</a>: contracts, packs, versions, labels and each version's history</li>\
         <li><a href=\"/evals\">Eval runs</a>: the reports <code>pactum eval</code> kept, and the comparison of two versions</li>\
         <li><a href=\"/runs\">Runs</a>: work orders from the ledger, their exchanges and tool calls</li>\
         <li><a href=\"/stats\">Stats</a>: how each version behaves in production</li></ul>",
    )
}

fn load_registry(view: &View) -> crate::Result<Registry> {
    Registry::load(&view.root.join("registry.json"))
}

fn registry(view: &View) -> crate::Result<Response> {
    let reg = load_registry(view)?;
    let mut body = String::from("<h1>Registry</h1>");
    for (kind, title) in
        [(EntryKind::Contract, "Contracts"), (EntryKind::PromptPack, "Prompt packs")]
    {
        let _ = write!(
            body,
            "<h2>{title}</h2><table class=\"registry\"><thead><tr><th>id</th><th>versions</th><th>labels</th></tr></thead><tbody>"
        );
        for id in reg.ids(kind) {
            let versions: Vec<String> = reg
                .versions(kind, id)
                .map(|e| {
                    format!(
                        "<a class=\"version\" href=\"/history/{id}/{v}\">{v}</a> <span class=\"muted\">{}</span>",
                        e.state.as_str(),
                        id = escape(id),
                        v = escape(&e.version.to_string())
                    )
                })
                .collect();
            let labels: Vec<String> = reg
                .labels
                .get(id)
                .into_iter()
                .flatten()
                .map(|(label, targets)| {
                    let to: Vec<String> = targets
                        .weights()
                        .iter()
                        .map(|(v, w)| {
                            if targets.is_weighted() {
                                format!("{} ({w}%)", escape(&v.to_string()))
                            } else {
                                escape(&v.to_string())
                            }
                        })
                        .collect();
                    format!("<b>{}</b> → {}", escape(label), to.join(", "))
                })
                .collect();
            let _ = write!(
                body,
                "<tr><td><a href=\"/history/{id}\">{id}</a></td><td>{}</td><td>{}</td></tr>",
                versions.join("<br>"),
                labels.join("<br>"),
                id = escape(id)
            );
        }
        body.push_str("</tbody></table>");
    }
    Ok(Response::html("Registry", &body))
}

/// The history of `id` (one version's events with `version`) as a timeline.
fn history(view: &View, id: &str, version: Option<&str>) -> crate::Result<Response> {
    let reg = load_registry(view)?;
    let events: Vec<&crate::registry::Event> = reg
        .history
        .iter()
        .flatten()
        .filter(|e| e.id == id)
        .filter(|e| {
            version.is_none_or(|v| {
                e.version == v
                    || e.previous.as_deref() == Some(v)
                    || e.weights.as_ref().is_some_and(|w| w.contains_key(v))
            })
        })
        .collect();
    let known =
        reg.ids(EntryKind::Contract).contains(&id) || reg.ids(EntryKind::PromptPack).contains(&id);
    if events.is_empty() && !known {
        return Ok(Response::not_found(id));
    }
    let title = match version {
        Some(v) => format!("{id}@{v}"),
        None => id.to_string(),
    };
    let mut body = format!("<h1>History of {}</h1>", escape(&title));
    if version.is_some() {
        let _ = write!(body, "<p><a href=\"/history/{0}\">all versions of {0}</a></p>", escape(id));
    }
    body.push_str("<ol class=\"timeline\">");
    for e in &events {
        let mut what = format!("<b>{}</b> {}", escape(e.action.as_str()), escape(&e.subject()));
        if let Some(label) = &e.label {
            let _ = write!(what, " label <b>{}</b>", escape(label));
        }
        if let Some(previous) = &e.previous {
            let _ = write!(what, " (from {})", escape(previous));
        }
        if let Some(weights) = &e.weights {
            let shown: Vec<String> =
                weights.iter().map(|(v, w)| format!("{} {w}%", escape(v))).collect();
            let _ = write!(what, " weights {}", shown.join(", "));
        }
        if let Some(successor) = &e.successor {
            let _ = write!(what, " → {}", escape(successor));
        }
        let _ = write!(
            body,
            "<li class=\"event\"><span class=\"muted\">#{} · {}{}</span><br>{what}",
            e.seq,
            escape(&e.at),
            e.actor.as_deref().map(|a| format!(" · {}", escape(a))).unwrap_or_default()
        );
        if let Some(eval) = &e.eval {
            let _ = write!(
                body,
                "<details><summary>eval evidence</summary>{}</details>",
                json_block(eval)
            );
        }
        body.push_str("</li>");
    }
    body.push_str("</ol>");
    if events.is_empty() {
        body.push_str("<p class=\"muted\">no history events</p>");
    }
    Ok(Response::html(&title, &body))
}

/// The kept eval runs, newest first.
fn evals(view: &View) -> Response {
    let mut names = kept::list(&view.root);
    names.truncate(MAX_EVALS_LISTED);
    let mut body = String::from(
        "<h1>Eval runs</h1><table class=\"evals\"><thead><tr><th>run</th><th>suites</th><th>versions</th><th>p-value</th><th>verdict</th></tr></thead><tbody>",
    );
    for name in &names {
        let Ok(Some(report)) = kept::load(&view.root, name) else {
            let _ = write!(
                body,
                "<tr><td>{}</td><td colspan=\"4\" class=\"muted\">unreadable</td></tr>",
                escape(name)
            );
            continue;
        };
        let suites: Vec<&Value> = report["suites"].as_array().into_iter().flatten().collect();
        let mut ids: Vec<&str> = suites.iter().filter_map(|s| s["eval_id"].as_str()).collect();
        ids.dedup();
        let versions: Vec<String> = suites
            .iter()
            .map(|s| {
                format!(
                    "{} {} {}/{}",
                    s["version"].as_str().unwrap_or(""),
                    s["role"].as_str().unwrap_or(""),
                    s["passed"],
                    s["cases"]
                )
            })
            .collect();
        let _ = write!(
            body,
            "<tr><td><a class=\"run\" href=\"/evals/{n}\">{n}</a></td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            escape(&ids.join(", ")),
            escape(&versions.join(" · ")),
            report["comparison"]["p_value"]
                .as_f64()
                .map_or_else(|| "–".into(), |p| format!("{p:.4}")),
            html::verdict(report["ok"] == true),
            n = escape(name),
        );
    }
    body.push_str("</tbody></table>");
    if names.is_empty() {
        let _ = write!(
            body,
            "<p class=\"muted\">no eval runs yet: each <code>pactum eval</code> keeps its report in {}</p>",
            kept::FOLDER
        );
    }
    Response::html("Eval runs", &body)
}

fn eval_run(view: &View, name: &str) -> crate::Result<Response> {
    let Some(report) = kept::load(&view.root, name)? else {
        return Ok(Response::not_found(name));
    };
    let body = format!(
        "<h1>Eval run {}</h1><p><a href=\"/evals\">all eval runs</a></p>{}",
        escape(name),
        html::comparison(&report)
    );
    Ok(Response::html(name, &body))
}

fn text<'v>(record: &'v Value, key: &str) -> &'v str {
    record.get(key).and_then(Value::as_str).unwrap_or("")
}

/// One run's summary on the runs page.
struct RunRow {
    seq: u64,
    id: String,
    at: String,
    exchanges: u64,
    tool_calls: u64,
    latency_ms: u64,
    ended: String,
}

/// The work orders of the ledgers (the newest [`MAX_RUNS_LISTED`]), in one pass.
fn runs(view: &View) -> crate::Result<Response> {
    let mut rows: VecDeque<RunRow> = VecDeque::new();
    let mut open: std::collections::HashMap<String, RunRow> = Default::default();
    for location in &view.ledgers {
        crate::ledger::for_each_record(location, |r| {
            let id = text(r, "work_order_id");
            if id.is_empty() {
                return Ok(());
            }
            match (text(r, "kind"), text(r, "event")) {
                ("work_order", "work_order_started") => {
                    open.insert(
                        id.to_string(),
                        RunRow {
                            seq: r["seq"].as_u64().unwrap_or(0),
                            id: id.to_string(),
                            at: text(r, "at").to_string(),
                            exchanges: 0,
                            tool_calls: 0,
                            latency_ms: 0,
                            ended: String::new(),
                        },
                    );
                }
                ("work_order", event) => {
                    if let Some(mut row) = open.remove(id) {
                        row.ended = event.trim_start_matches("work_order_").to_string();
                        rows.push_back(row);
                        if rows.len() > MAX_RUNS_LISTED {
                            rows.pop_front();
                        }
                    }
                }
                (kind, _) => {
                    if let Some(row) = open.get_mut(id) {
                        if kind == "exchange" {
                            row.exchanges += 1;
                            row.latency_ms += r["latency_ms"].as_u64().unwrap_or(0);
                        }
                        row.tool_calls += r["tool_calls"].as_array().map_or(0, |t| t.len() as u64);
                    }
                }
            }
            Ok(())
        })?;
    }
    rows.extend(open.into_values().map(|mut r| {
        r.ended = "unfinished".into();
        r
    }));
    let mut rows: Vec<RunRow> = rows.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.seq));
    rows.truncate(MAX_RUNS_LISTED);
    let mut body = String::from(
        "<h1>Runs</h1><table class=\"runs\"><thead><tr><th>work order</th><th>started</th><th class=\"num\">exchanges</th><th class=\"num\">tool calls</th><th class=\"num\">model time</th><th>end</th></tr></thead><tbody>",
    );
    for r in &rows {
        let _ = write!(
            body,
            "<tr><td><a class=\"run\" href=\"/runs/{}\">{}</a></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} ms</td><td>{}</td></tr>",
            r.seq,
            escape(&r.id),
            escape(&r.at),
            r.exchanges,
            r.tool_calls,
            r.latency_ms,
            escape(&r.ended)
        );
    }
    body.push_str("</tbody></table>");
    if rows.is_empty() {
        body.push_str("<p class=\"muted\">no work orders in the ledger</p>");
    }
    Ok(Response::html("Runs", &body))
}

/// The run whose `work_order_started` record has sequence number `seq`: its exchanges and
/// the tool calls of its cycles, in order, with timings.
fn run(view: &View, seq: &str) -> crate::Result<Response> {
    let Ok(start) = seq.parse::<u64>() else { return Ok(Response::not_found(seq)) };
    let mut id: Option<String> = None;
    let mut records: Vec<Value> = Vec::new();
    let mut done = false;
    for location in &view.ledgers {
        crate::ledger::for_each_record(location, |r| {
            if done {
                return Ok(());
            }
            let this = text(r, "work_order_id");
            match &id {
                None if r["seq"].as_u64() == Some(start)
                    && text(r, "event") == "work_order_started" =>
                {
                    id = Some(this.to_string());
                    records.push(r.clone());
                }
                Some(run) if run == this => {
                    if records.len() < MAX_RUN_RECORDS {
                        records.push(r.clone());
                    }
                    done = text(r, "kind") == "work_order";
                }
                _ => {}
            }
            Ok(())
        })?;
        if id.is_some() {
            break;
        }
    }
    let Some(id) = id else { return Ok(Response::not_found(seq)) };
    let mut body = format!(
        "<h1>Run of {}</h1><p><a href=\"/runs\">all runs</a></p><table class=\"run\"><thead><tr><th class=\"num\">seq</th><th>at</th><th>what</th><th>verdict</th><th class=\"num\">latency</th><th>details</th></tr></thead><tbody>",
        escape(&id)
    );
    for r in &records {
        let kind = text(r, "kind");
        let what = match kind {
            "exchange" => format!(
                "exchange {}@{}{}",
                text(r, "contract_id"),
                text(r, "contract_version"),
                if text(r, "role").is_empty() {
                    String::new()
                } else {
                    format!(" ({})", text(r, "role"))
                }
            ),
            "cycle" => format!("cycle {} {}", text(r, "phase"), text(r, "role")),
            _ => text(r, "event").to_string(),
        };
        let mut details = String::new();
        if kind == "exchange" {
            for key in ["input", "output"] {
                if let Some(v) = r.get(key).filter(|v| !v.is_null()) {
                    let _ = write!(
                        details,
                        "<details><summary>{key}</summary>{}</details>",
                        json_block(v)
                    );
                }
            }
            if let Some(usage) = r.get("usage").filter(|v| v.is_object()) {
                let _ = write!(
                    details,
                    "<span class=\"muted\">tokens {} + {} · attempts {}</span>",
                    usage["prompt_tokens"], usage["completion_tokens"], r["attempts"]
                );
            }
        }
        for call in r["tool_calls"].as_array().into_iter().flatten() {
            let _ = write!(
                details,
                "<div class=\"tool-call\">tool <b>{}</b> · {} ms<details><summary>arguments and output</summary>{}{}</details></div>",
                escape(text(call, "tool")),
                call["latency_ms"].as_u64().unwrap_or(0),
                json_block(&call["arguments"]),
                json_block(&call["output"])
            );
        }
        let _ = write!(
            body,
            "<tr class=\"{}\"><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{details}</td></tr>",
            escape(kind),
            r["seq"],
            escape(text(r, "at")),
            escape(&what),
            escape(text(r, "verdict")),
            r["latency_ms"].as_u64().map(|ms| format!("{ms} ms")).unwrap_or_default(),
        );
    }
    body.push_str("</tbody></table>");
    Ok(Response::html(&format!("Run of {id}"), &body))
}

/// The stats of the ledgers by version, as charts and a table.
fn stats(view: &View) -> crate::Result<Response> {
    let options =
        crate::stats::Options { contract: None, by: crate::stats::By::Version, since: None };
    let s = crate::stats::fold(&view.ledgers, &options, &view.config)?;
    let name = |r: &crate::stats::Row| format!("{}@{}", r.contract, r.group);
    let mut body = format!(
        "<h1>Stats</h1><p class=\"muted\">{} records, {} exchanges, by version</p>",
        s.records, s.exchanges
    );
    if s.rows.is_empty() {
        body.push_str("<p class=\"muted\">no exchanges in the ledger</p>");
        return Ok(Response::html("Stats", &body));
    }
    let bars = |f: &dyn Fn(&crate::stats::Row) -> f64| -> Vec<(String, f64)> {
        s.rows.iter().map(|r| (name(r), f(r))).collect()
    };
    body.push_str(&html::bar_chart("calls", &bars(&|r| r.calls as f64), |v| format!("{v:.0}")));
    body.push_str(&html::bar_chart(
        "validated at once",
        &bars(&|r| r.validated_at_once * 100.0),
        |v| format!("{v:.1}%"),
    ));
    body.push_str(&html::bar_chart(
        "p95 latency",
        &bars(&|r| r.latency_ms.p95.unwrap_or(0.0)),
        |v| format!("{v:.0} ms"),
    ));
    body.push_str(
        "<table class=\"stats\"><thead><tr><th>version</th><th class=\"num\">calls</th><th class=\"num\">validated at once</th><th class=\"num\">re-asks per call</th><th class=\"num\">semantic rejections</th><th class=\"num\">p50</th><th class=\"num\">p95</th><th class=\"num\">tokens</th><th class=\"num\">cost</th></tr></thead><tbody>",
    );
    let ms = |v: Option<f64>| v.map_or_else(|| "–".into(), |v| format!("{v:.0} ms"));
    for r in &s.rows {
        let _ = write!(
            body,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1}%</td><td class=\"num\">{:.2}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} + {}</td><td class=\"num\">{}</td></tr>",
            escape(&name(r)),
            r.calls,
            r.validated_at_once * 100.0,
            r.repair_rate,
            r.semantic_rejections,
            ms(r.latency_ms.p50),
            ms(r.latency_ms.p95),
            r.prompt_tokens,
            r.completion_tokens,
            r.cost.map_or_else(|| "–".into(), |c| format!("${c:.4}"))
        );
    }
    body.push_str("</tbody></table>");
    Ok(Response::html("Stats", &body))
}
