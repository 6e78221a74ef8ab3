//! Context assembly (SPEC §16): before a contract is rendered, what its `required_context`
//! declares and the work order's `assembled_context` does not already give is read from
//! the project — `file_refs` from files under the root, `framework_refs` from
//! `frameworks/ID.{md,json,yaml,yml}`, `ledger_queries` from the ledger the run writes to
//! (through [`crate::ledger::query`], the reader `pactum ledger query` uses too).
//!
//! The work order wins entry by entry: a `files[PATH]`, `frameworks[ID]` or
//! `ledger[EVENT_TYPE]` it gives is used as given. Fail-closed: a missing file or framework
//! is `required_context_missing` and no call is made; a path outside the root or through a
//! symlink leading out is `path_escape`; a file over the size limit is `file_too_large`.
//! `constraints.context_budget` is met by cutting, in this order, files, then ledger
//! history (oldest entries first), then frameworks; what was cut is one
//! `context_truncated` warning.
//!
//! [`check_refs`] is the part `pactum validate` runs: everything [`assemble`] would refuse
//! except the ledger, which belongs to a run.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::confine::{Refusal, Root};
use crate::contract::{Contract, LedgerQuery};
use crate::error::{Code, Error, Result};
use crate::ledger::query::{self, Filter};
use crate::resolve::Warning;

/// The extensions a framework file may have, in the order they are looked for.
pub const FRAMEWORK_EXTENSIONS: [&str; 4] = ["md", "json", "yaml", "yml"];

/// Where assembly reads from.
#[derive(Clone, Debug)]
pub struct Sources<'a> {
    /// The project root: file refs and `frameworks/` are under it.
    pub root: &'a Path,
    /// The ledger the run writes to (`None`: no history, every query is empty).
    pub ledger: Option<&'a crate::ledger::Location>,
    /// The instant `recency` counts back from.
    pub now: jiff::Timestamp,
}

/// What the work order asked for around the contract's declaration.
#[derive(Clone, Copy, Debug, Default)]
pub struct Request<'a> {
    /// The work order's own `assembled_context`.
    pub given: Option<&'a Value>,
    /// The work order's `session_id` (for `recency: session`).
    pub session_id: Option<&'a str>,
    /// `constraints.context_budget`.
    pub budget: Option<u64>,
}

impl<'a> Request<'a> {
    /// What `wo` gives and asks for.
    pub fn of(wo: &'a crate::work_order::WorkOrder) -> Request<'a> {
        Request {
            given: wo.assembled_context.as_ref(),
            session_id: wo.session_id.as_deref(),
            budget: wo.constraints.context_budget,
        }
    }
}

/// The context a template sees, and what was cut to fit the budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Assembled {
    /// `{"files": {..}, "frameworks": {..}, "ledger": {..}}` plus anything else the work
    /// order gave; `None` when there is nothing.
    pub context: Option<Value>,
    /// The `context_truncated` warning, when the budget cut something.
    pub truncated: Option<Warning>,
}

/// The framework file for `id`: the first of `frameworks/ID.{md,json,yaml,yml}` that
/// exists, confined to the root.
pub fn framework_path(root: &Root, id: &str) -> Result<Option<PathBuf>> {
    for ext in FRAMEWORK_EXTENSIONS {
        let rel = PathBuf::from("frameworks").join(format!("{id}.{ext}"));
        match root.file(&rel) {
            Ok(real) => return Ok(Some(real)),
            Err(Refusal::Missing) => continue,
            Err(r) => return Err(r.into_error(&rel)),
        }
    }
    Ok(None)
}

/// The real path of a `file_refs` entry (`None`: it does not exist).
fn file_path(root: &Root, rel: &str) -> Result<Option<PathBuf>> {
    crate::confine::check_relative(rel)
        .map_err(|reason| Error::PathEscape { path: rel.to_string(), reason })?;
    match root.file(Path::new(rel)) {
        Ok(real) => Ok(Some(real)),
        Err(Refusal::Missing) => Ok(None),
        Err(r) => Err(r.into_error(Path::new(rel))),
    }
}

/// The work order's `assembled_context.ledger` as a map from event type: an object as
/// given, or the older array form keyed by each entry's `event_type`.
fn given_ledger(given: Option<&Value>) -> Map<String, Value> {
    match given.and_then(|g| g.get("ledger")) {
        Some(Value::Object(m)) => m.clone(),
        Some(Value::Array(entries)) => entries
            .iter()
            .filter_map(|e| Some((e.get("event_type")?.as_str()?.to_string(), e.clone())))
            .collect(),
        _ => Map::new(),
    }
}

fn has(given: Option<&Value>, section: &str, key: &str) -> bool {
    given.and_then(|g| g.get(section)).and_then(|m| m.get(key)).is_some()
}

/// The references the work order does not give that do not exist under the root, as
/// `required_context_missing`; a reference leaving the root is `path_escape`. What `run`
/// would refuse before reading the ledger.
pub fn check_refs(root: &Path, contract: &Contract, given: Option<&Value>) -> Result<()> {
    let root = Root::new(root);
    let mut missing = Vec::new();
    for rel in &contract.required_context.file_refs {
        if !has(given, "files", rel) && file_path(&root, rel)?.is_none() {
            missing.push(format!("file:{rel} (no such file under the project root)"));
        }
    }
    for id in &contract.required_context.framework_refs {
        if !has(given, "frameworks", id) && framework_path(&root, id)?.is_none() {
            missing.push(format!(
                "framework:{id} (none of frameworks/{id}.{{{}}})",
                FRAMEWORK_EXTENSIONS.join(",")
            ));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::RequiredContextMissing { contract: contract.key(), missing })
    }
}

/// Reads a referenced file as text, bounded by the document size limit.
fn read_text(real: &Path, shown: &str) -> Result<String> {
    let bytes = crate::document::read_limited(real, crate::document::MAX_FILE_BYTES).map_err(
        |e| match e {
            Error::FileTooLarge { size, limit, .. } => {
                Error::FileTooLarge { path: PathBuf::from(shown), size, limit }
            }
            other => other,
        },
    )?;
    String::from_utf8(bytes).map_err(|_| {
        Error::io(
            shown,
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "is not UTF-8 text; context files are read as text",
            ),
        )
    })
}

/// Assembles the context `contract` requires (SPEC §16).
pub fn assemble(
    contract: &Contract,
    request: Request<'_>,
    sources: &Sources<'_>,
) -> Result<Assembled> {
    let required = &contract.required_context;
    let given = request.given;
    if required.is_empty() && given.is_none() {
        return Ok(Assembled { context: None, truncated: None });
    }
    check_refs(sources.root, contract, given)?;
    let root = Root::new(sources.root);
    let mut ctx = match given {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let mut files = section(&ctx, "files");
    for rel in &required.file_refs {
        if files.contains_key(rel) {
            continue;
        }
        // check_refs saw it exist; a file removed since is missing now.
        let real = file_path(&root, rel)?.ok_or_else(|| Error::RequiredContextMissing {
            contract: contract.key(),
            missing: vec![format!("file:{rel}")],
        })?;
        files.insert(rel.clone(), Value::String(read_text(&real, rel)?));
    }
    let mut frameworks = section(&ctx, "frameworks");
    for id in &required.framework_refs {
        if frameworks.contains_key(id) {
            continue;
        }
        let real = framework_path(&root, id)?.ok_or_else(|| Error::RequiredContextMissing {
            contract: contract.key(),
            missing: vec![format!("framework:{id}")],
        })?;
        let shown = format!("frameworks/{id}");
        frameworks.insert(id.clone(), Value::String(read_text(&real, &shown)?));
    }
    let mut ledger = given_ledger(given);
    for q in &required.ledger_queries {
        if ledger.contains_key(&q.event_type) {
            continue;
        }
        let entries = history(contract, q, request.session_id, sources)?;
        ledger.insert(q.event_type.clone(), Value::Array(entries));
    }
    if !required.file_refs.is_empty() || ctx.contains_key("files") {
        ctx.insert("files".into(), Value::Object(files));
    }
    if !required.framework_refs.is_empty() || ctx.contains_key("frameworks") {
        ctx.insert("frameworks".into(), Value::Object(frameworks));
    }
    if !required.ledger_queries.is_empty() || ctx.contains_key("ledger") {
        ctx.insert("ledger".into(), Value::Object(ledger));
    }
    let mut context = Value::Object(ctx);
    let truncated = request
        .budget
        .and_then(|budget| fit(&mut context, budget))
        .map(|cuts| Warning {
            code: Code::ContextTruncated,
            message: format!(
                "{}: the assembled context did not fit constraints.context_budget ({} tokens): {}; raise the budget or require less context",
                contract.key(),
                request.budget.unwrap_or_default(),
                cuts.join(", ")
            ),
        });
    Ok(Assembled { context: Some(context), truncated })
}

fn section(ctx: &Map<String, Value>, name: &str) -> Map<String, Value> {
    ctx.get(name).and_then(Value::as_object).cloned().unwrap_or_default()
}

/// The filter a ledger query stands for.
pub fn filter_of(
    q: &LedgerQuery,
    session_id: Option<&str>,
    now: jiff::Timestamp,
) -> std::result::Result<Option<Filter>, String> {
    let mut filter = Filter {
        event: Some(q.event_type.clone()),
        tier: Some(q.tier.clone()),
        limit: Some(usize::try_from(q.max_entries).unwrap_or(usize::MAX)),
        ..Default::default()
    };
    if q.recency == "session" {
        // Without a session of its own, a work order has no session history.
        let Some(session) = session_id else { return Ok(None) };
        filter.session = Some(session.to_string());
    } else {
        let age = query::parse_age(&q.recency).ok_or_else(|| {
            format!("recency `{}` is not `session` or a number and one of s, m, h, d (`30m`, `24h`, `7d`)", q.recency)
        })?;
        filter.since = Some(now.checked_sub(age).unwrap_or(jiff::Timestamp::MIN));
    }
    Ok(Some(filter))
}

/// One query's entries, oldest first, each a compact summary.
fn history(
    contract: &Contract,
    q: &LedgerQuery,
    session_id: Option<&str>,
    sources: &Sources<'_>,
) -> Result<Vec<Value>> {
    let Some(path) = sources.ledger else { return Ok(Vec::new()) };
    // The contract schema already refuses a malformed recency; a contract built in memory
    // is held to the same rule here.
    let filter = filter_of(q, session_id, sources.now).map_err(|reason| Error::SchemaInvalid {
        doc: crate::error::DocKind::Contract,
        path: contract.path.clone(),
        findings: vec![crate::error::Finding::new("/required_context/ledger_queries", reason)],
    })?;
    let Some(filter) = filter else { return Ok(Vec::new()) };
    let found = query::query(path, &filter)?;
    Ok(found.records.iter().rev().map(summary).collect())
}

/// A ledger record as the model sees it: time, event, work order, contract@version,
/// verdict, and the output or the error.
pub fn summary(record: &Value) -> Value {
    let s = |k: &str| record.get(k).cloned().unwrap_or(Value::Null);
    let mut out = json!({
        "at": s("at"),
        "event": query::event_of(record),
        "work_order_id": s("work_order_id"),
    });
    if let (Some(id), Some(v)) = (
        record.get("contract_id").and_then(Value::as_str),
        record.get("contract_version").and_then(Value::as_str),
    ) {
        out["contract"] = json!(format!("{id}@{v}"));
    }
    if let Some(verdict) = record.get("verdict") {
        out["verdict"] = verdict.clone();
    }
    let error = record
        .get("errors")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
        .and_then(|e| e.get("message"))
        .cloned();
    match error {
        Some(message) => out["error"] = message,
        None => {
            if let Some(output) = record.get("output").or_else(|| record.get("raw_response")) {
                out["output"] = output.clone();
            }
        }
    }
    out
}

/// Tokens of a context, estimated as pactum estimates prompts (4 bytes a token).
pub fn tokens(context: &Value) -> u64 {
    (context.to_string().len() as u64).div_ceil(4)
}

/// Cuts `context` until it fits `budget` tokens: file texts (last first), then ledger
/// entries (oldest first, across event types), then framework texts (last first). The
/// cuts made, `None` when it already fit.
fn fit(context: &mut Value, budget: u64) -> Option<Vec<String>> {
    let before = tokens(context);
    if before <= budget {
        return None;
    }
    let mut cuts = vec![format!("it took {before} tokens")];
    cut_texts(context, "files", budget, &mut cuts);
    if tokens(context) > budget {
        let mut dropped: std::collections::BTreeMap<String, usize> = Default::default();
        while tokens(context) > budget {
            let Some(ledger) = context.get_mut("ledger").and_then(Value::as_object_mut) else {
                break;
            };
            // The event type whose oldest entry is the oldest of all.
            let oldest = ledger
                .iter()
                .filter_map(|(k, v)| {
                    let first = v.as_array()?.first()?;
                    Some((
                        first.get("at").and_then(Value::as_str).unwrap_or("").to_string(),
                        k.clone(),
                    ))
                })
                .min();
            let Some((_, key)) = oldest else { break };
            if let Some(entries) = ledger.get_mut(&key).and_then(Value::as_array_mut) {
                entries.remove(0);
            }
            *dropped.entry(key).or_default() += 1;
        }
        for (key, n) in dropped {
            cuts.push(format!("ledger[{key}]: the {n} oldest entries dropped"));
        }
    }
    cut_texts(context, "frameworks", budget, &mut cuts);
    let after = tokens(context);
    if after > budget {
        cuts.push(format!("{after} tokens remain (what the work order gave besides files, frameworks and ledger is never cut)"));
    }
    Some(cuts)
}

/// Shortens the texts of `context[section]`, last key first, until the context fits.
fn cut_texts(context: &mut Value, section: &str, budget: u64, cuts: &mut Vec<String>) {
    let keys: Vec<String> = match context.get(section).and_then(Value::as_object) {
        Some(m) => m.keys().rev().cloned().collect(),
        None => return,
    };
    for key in keys {
        let total = tokens(context);
        if total <= budget {
            return;
        }
        let excess_bytes = (total - budget).saturating_mul(4) as usize;
        let Some(text) = context[section][&key].as_str() else { continue };
        let was = text.len();
        let mut keep = was.saturating_sub(excess_bytes);
        while !text.is_char_boundary(keep) {
            keep -= 1;
        }
        // JSON escapes make the serialized text longer than the text: shrink until it fits
        // or nothing is left.
        let mut cut = text[..keep].to_string();
        context[section][&key] = Value::String(cut.clone());
        while tokens(context) > budget && !cut.is_empty() {
            let mut at = cut.len() / 2;
            while !cut.is_char_boundary(at) {
                at -= 1;
            }
            cut.truncate(at);
            context[section][&key] = Value::String(cut.clone());
        }
        cuts.push(format!("{section}[{key}] cut from {was} to {} bytes", cut.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract(required: Value) -> Contract {
        let v = json!({
            "contract_id": "PRC-T-001", "version": "1.0.0", "prompt_pack_id": "PRM-T-001",
            "boundary": {"max_tokens": 10, "temperature": 0},
            "required_context": required
        });
        Contract::from_value(v, "x", Path::new("c.json")).unwrap()
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("frameworks")).unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        std::fs::write(dir.path().join("frameworks/FMWK-STYLE.md"), "Be brief.").unwrap();
        std::fs::write(dir.path().join("docs/policy.md"), "Refunds within 30 days.").unwrap();
        dir
    }

    fn now() -> jiff::Timestamp {
        "2026-01-02T00:00:00Z".parse().unwrap()
    }

    /// Record `seq` of a test ledger (its `seq` and chain fields are set when written).
    fn record(seq: u64, at: &str, session: &str, verdict: &str) -> Value {
        json!({"at": at, "kind": "exchange", "event": "exchange", "tier": "ho1",
               "session_id": session, "work_order_id": format!("WO-{seq}"),
               "contract_id": "PRC-A-001", "contract_version": "1.0.0", "verdict": verdict,
               "raw_response": format!("answer {seq}"),
               "errors": if verdict == "ok" { json!([]) } else { json!([{"code": verdict, "message": "bad"}]) }})
    }

    #[test]
    fn files_frameworks_and_ledger_are_read_and_the_work_order_wins() {
        let dir = tree();
        let ledger = dir.path().join("ledger.jsonl");
        let lines = [
            record(1, "2026-01-01T00:00:00Z", "s1", "ok"),
            record(2, "2026-01-01T23:00:00Z", "s2", "ok"),
            record(3, "2026-01-01T23:30:00Z", "s1", "input_schema_invalid"),
            record(4, "2026-01-01T23:45:00Z", "s1", "ok"),
        ];
        std::fs::write(&ledger, crate::ledger::test_chain(&lines)).unwrap();
        let ledger = crate::ledger::Location::chosen(&ledger);
        let c = contract(json!({
            "file_refs": ["docs/policy.md"], "framework_refs": ["FMWK-STYLE"],
            "ledger_queries": [{"event_type": "exchange", "tier": "ho1", "max_entries": 2, "recency": "2h"}]
        }));
        let sources = Sources { root: dir.path(), ledger: Some(&ledger), now: now() };
        let got = assemble(&c, Request::default(), &sources).unwrap();
        let ctx = got.context.unwrap();
        assert_eq!(ctx["files"]["docs/policy.md"], "Refunds within 30 days.");
        assert_eq!(ctx["frameworks"]["FMWK-STYLE"], "Be brief.");
        let entries = ctx["ledger"]["exchange"].as_array().unwrap();
        let wos: Vec<_> = entries.iter().map(|e| e["work_order_id"].as_str().unwrap()).collect();
        assert_eq!(wos, ["WO-3", "WO-4"], "the newest two, oldest first");
        assert_eq!(entries[0]["error"], "bad");
        assert_eq!(entries[1]["output"], "answer 4");
        assert_eq!(entries[1]["contract"], "PRC-A-001@1.0.0");
        assert!(got.truncated.is_none());
        // recency: session, and the work order giving an entry of its own.
        let c = contract(json!({
            "file_refs": ["docs/policy.md"],
            "ledger_queries": [{"event_type": "exchange", "tier": "ho1", "max_entries": 5, "recency": "session"}]
        }));
        let given = json!({"files": {"docs/policy.md": "given"}});
        let request = Request { given: Some(&given), session_id: Some("s1"), budget: None };
        let ctx = assemble(&c, request, &sources).unwrap().context.unwrap();
        assert_eq!(ctx["files"]["docs/policy.md"], "given");
        let wos: Vec<_> = ctx["ledger"]["exchange"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["work_order_id"].as_str().unwrap())
            .collect();
        assert_eq!(wos, ["WO-1", "WO-3", "WO-4"]);
        let request = Request { session_id: None, ..request };
        let ctx = assemble(&c, request, &sources).unwrap().context.unwrap();
        assert_eq!(ctx["ledger"]["exchange"], json!([]), "no session, no session history");
    }

    #[test]
    fn missing_and_escaping_references_fail_closed() {
        let dir = tree();
        let sources = Sources { root: dir.path(), ledger: None, now: now() };
        let c = contract(json!({"file_refs": ["docs/none.md"], "framework_refs": ["FMWK-NONE"]}));
        let e = assemble(&c, Request::default(), &sources).unwrap_err();
        assert_eq!(e.code(), Code::RequiredContextMissing);
        assert!(
            e.to_string().contains("file:docs/none.md")
                && e.to_string().contains("framework:FMWK-NONE"),
            "{e}"
        );
        let given = json!({"files": {"docs/none.md": "x"}, "frameworks": {"FMWK-NONE": "y"}});
        let request = Request { given: Some(&given), ..Default::default() };
        assert!(assemble(&c, request, &sources).is_ok(), "given entries are not read");
        for bad in ["../outside.md", "/etc/passwd"] {
            let c = contract(json!({"file_refs": [bad]}));
            let e = assemble(&c, Request::default(), &sources).unwrap_err();
            assert_eq!(e.code(), Code::PathEscape, "{bad}");
        }
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(outside.path().join("secret.md"), "s").unwrap();
            std::os::unix::fs::symlink(
                outside.path().join("secret.md"),
                dir.path().join("docs/link.md"),
            )
            .unwrap();
            let c = contract(json!({"file_refs": ["docs/link.md"]}));
            let e = assemble(&c, Request::default(), &sources).unwrap_err();
            assert_eq!(e.code(), Code::PathEscape);
        }
    }

    #[test]
    fn the_budget_cuts_files_then_history_then_frameworks() {
        let dir = tree();
        std::fs::write(dir.path().join("docs/big.md"), "x".repeat(4000)).unwrap();
        let ledger = dir.path().join("ledger.jsonl");
        let lines: Vec<Value> =
            (1..=6).map(|i| record(i, &format!("2026-01-01T23:0{i}:00Z"), "s", "ok")).collect();
        std::fs::write(&ledger, crate::ledger::test_chain(&lines)).unwrap();
        let ledger = crate::ledger::Location::chosen(&ledger);
        let c = contract(json!({
            "file_refs": ["docs/big.md"], "framework_refs": ["FMWK-STYLE"],
            "ledger_queries": [{"event_type": "exchange", "tier": "ho1", "max_entries": 6, "recency": "1d"}]
        }));
        let sources = Sources { root: dir.path(), ledger: Some(&ledger), now: now() };
        let full = assemble(&c, Request::default(), &sources).unwrap().context.unwrap();
        let full_tokens = tokens(&full);
        // Enough for everything but most of the file.
        let budget = full_tokens - 900;
        let got =
            assemble(&c, Request { budget: Some(budget), ..Default::default() }, &sources).unwrap();
        let ctx = got.context.unwrap();
        assert!(tokens(&ctx) <= budget);
        assert!(ctx["files"]["docs/big.md"].as_str().unwrap().len() < 4000);
        assert_eq!(ctx["ledger"]["exchange"].as_array().unwrap().len(), 6, "history kept");
        assert_eq!(ctx["frameworks"]["FMWK-STYLE"], "Be brief.");
        let warning = got.truncated.unwrap();
        assert_eq!(warning.code, Code::ContextTruncated);
        assert!(
            warning.message.contains("files[docs/big.md] cut from 4000"),
            "{}",
            warning.message
        );
        // A budget below history: the file is emptied, the oldest entries go, newest kept.
        let got =
            assemble(&c, Request { budget: Some(200), ..Default::default() }, &sources).unwrap();
        let ctx = got.context.unwrap();
        assert!(tokens(&ctx) <= 200, "{}", tokens(&ctx));
        assert_eq!(ctx["files"]["docs/big.md"], "");
        let entries = ctx["ledger"]["exchange"].as_array().unwrap();
        assert!(entries.len() < 6);
        assert_eq!(entries.last().unwrap()["work_order_id"], "WO-6", "the newest entry is kept");
        assert_eq!(ctx["frameworks"]["FMWK-STYLE"], "Be brief.", "frameworks are cut last");
        let message = got.truncated.unwrap().message;
        assert!(message.contains("oldest entries dropped"), "{message}");
    }

    #[test]
    fn huge_files_are_refused_by_the_size_limit() {
        let dir = tree();
        let big = std::fs::File::create(dir.path().join("docs/huge.md")).unwrap();
        big.set_len(crate::document::MAX_FILE_BYTES + 1).unwrap();
        let c = contract(json!({"file_refs": ["docs/huge.md"]}));
        let sources = Sources { root: dir.path(), ledger: None, now: now() };
        let e = assemble(&c, Request::default(), &sources).unwrap_err();
        assert_eq!(e.code(), Code::FileTooLarge);
        assert!(e.to_string().contains("docs/huge.md"), "{e}");
    }

    #[test]
    fn older_array_form_of_the_ledger_still_counts() {
        let dir = tree();
        let c = contract(
            json!({"ledger_queries": [{"event_type": "LLM_CALL", "tier": "ho1", "max_entries": 3, "recency": "1h"}]}),
        );
        let given = json!({"ledger": [{"event_type": "LLM_CALL", "entries": ["x"]}]});
        let sources = Sources { root: dir.path(), ledger: None, now: now() };
        let request = Request { given: Some(&given), ..Default::default() };
        let ctx = assemble(&c, request, &sources).unwrap().context.unwrap();
        assert_eq!(ctx["ledger"]["LLM_CALL"]["entries"], json!(["x"]));
    }
}
