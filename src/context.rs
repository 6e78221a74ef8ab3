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
        match root.content(&rel) {
            Ok(real) => return Ok(Some(real)),
            Err(Refusal::Missing) => continue,
            Err(r) => return Err(r.into_error(&rel)),
        }
    }
    Ok(None)
}

/// The real path of a `file_refs` entry (`None`: it does not exist): project content
/// only ([`Root::content`]: never `.git/`, `.pactum/` or another hidden path).
fn file_path(root: &Root, rel: &str) -> Result<Option<PathBuf>> {
    crate::confine::check_relative(rel)
        .map_err(|reason| Error::PathEscape { path: rel.to_string(), reason })?;
    match root.content(Path::new(rel)) {
        Ok(real) => Ok(Some(real)),
        Err(Refusal::Missing) => Ok(None),
        Err(r) => Err(r.into_error(Path::new(rel))),
    }
}

/// The most text one context assembly reads from the project (file and framework texts
/// together, each reference counted): one budget for the whole assembly, however the
/// references are spelled.
pub const MAX_CONTEXT_BYTES: u64 = 16 * 1024 * 1024;

/// Texts read for one assembly: each real file read once, whatever its spellings, and the
/// total held to [`MAX_CONTEXT_BYTES`].
#[derive(Default)]
struct Reads {
    by_real: std::collections::HashMap<PathBuf, String>,
    total: u64,
}

impl Reads {
    fn text(&mut self, real: PathBuf, shown: &str) -> Result<String> {
        let text = match self.by_real.get(&real) {
            Some(text) => text.clone(),
            None => {
                let text = read_text(&real, shown)?;
                self.by_real.insert(real, text.clone());
                text
            }
        };
        self.total += text.len() as u64;
        if self.total > MAX_CONTEXT_BYTES {
            return Err(Error::FileTooLarge {
                path: PathBuf::from(format!("required_context (up to {shown})")),
                size: self.total,
                limit: MAX_CONTEXT_BYTES,
            });
        }
        Ok(text)
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
    let mut reads = Reads::default();
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
        files.insert(rel.clone(), Value::String(reads.text(real, rel)?));
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
        frameworks.insert(id.clone(), Value::String(reads.text(real, &shown)?));
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

/// Bytes `text` takes as a JSON string, quotes included (what `serde_json` writes).
fn json_len(text: &str) -> u64 {
    2 + text.chars().map(|c| escaped_len(c) as u64).sum::<u64>()
}

/// Bytes one character takes inside a JSON string as `serde_json` writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// Cuts `context` until it fits `budget` tokens: file texts (last first), then ledger
/// entries (oldest first, across event types), then framework texts (last first). The
/// cuts made, `None` when it already fit. Linear: the context is serialized once and every
/// cut updates its length arithmetically.
fn fit(context: &mut Value, budget: u64) -> Option<Vec<String>> {
    let mut len = context.to_string().len() as u64;
    let before = len.div_ceil(4);
    if before <= budget {
        return None;
    }
    // `tokens(context) <= budget` exactly when the serialized length is at most this.
    let limit = budget.saturating_mul(4);
    let mut cuts = vec![format!("it took {before} tokens")];
    cut_texts(context, "files", limit, &mut len, &mut cuts);
    if len > limit {
        drop_oldest(context, limit, &mut len, &mut cuts);
    }
    cut_texts(context, "frameworks", limit, &mut len, &mut cuts);
    if len > limit {
        cuts.push(format!("{} tokens remain (what the work order gave besides files, frameworks and ledger is never cut)", len.div_ceil(4)));
    }
    Some(cuts)
}

/// Drops ledger entries, the oldest of all event types first (each list is oldest first:
/// a merge of their fronts), until the context fits.
fn drop_oldest(context: &mut Value, limit: u64, len: &mut u64, cuts: &mut Vec<String>) {
    use std::cmp::Reverse;
    let Some(ledger) = context.get_mut("ledger").and_then(Value::as_object_mut) else { return };
    let lists: Vec<(String, Vec<(String, u64)>)> = ledger
        .iter()
        .filter_map(|(k, v)| {
            let entries = v.as_array()?;
            let sized = entries
                .iter()
                .map(|e| {
                    let at = e.get("at").and_then(Value::as_str).unwrap_or("").to_string();
                    (at, e.to_string().len() as u64)
                })
                .collect();
            Some((k.clone(), sized))
        })
        .collect();
    let mut heap: std::collections::BinaryHeap<Reverse<(&str, usize, usize)>> = lists
        .iter()
        .enumerate()
        .filter_map(|(i, (_, l))| l.first().map(|(at, _)| Reverse((at.as_str(), i, 0))))
        .collect();
    let mut dropped = vec![0usize; lists.len()];
    while *len > limit {
        let Some(Reverse((_, i, at))) = heap.pop() else { break };
        crate::work::count(1);
        let list = &lists[i].1;
        // The entry, and the comma before the next one if any remains.
        *len -= list[at].1 + u64::from(at + 1 < list.len());
        dropped[i] += 1;
        if let Some((next_at, _)) = list.get(at + 1) {
            heap.push(Reverse((next_at.as_str(), i, at + 1)));
        }
    }
    let mut report: Vec<(&str, usize)> = Vec::new();
    for (i, (key, _)) in lists.iter().enumerate() {
        if dropped[i] == 0 {
            continue;
        }
        if let Some(entries) = ledger.get_mut(key).and_then(Value::as_array_mut) {
            entries.drain(..dropped[i]);
        }
        report.push((key, dropped[i]));
    }
    report.sort();
    for (key, n) in report {
        cuts.push(format!("ledger[{key}]: the {n} oldest entries dropped"));
    }
}

/// Shortens the texts of `context[section]`, last key first, until the context fits.
fn cut_texts(
    context: &mut Value,
    section: &str,
    limit: u64,
    len: &mut u64,
    cuts: &mut Vec<String>,
) {
    let Some(map) = context.get_mut(section).and_then(Value::as_object_mut) else { return };
    for (key, value) in map.iter_mut().rev() {
        if *len <= limit {
            return;
        }
        let Some(text) = value.as_str() else { continue };
        let was = json_len(text);
        // What the text may take serialized, its quotes included.
        let allowed = was.saturating_sub(*len - limit).max(2);
        let mut taken = 2u64;
        let mut keep = 0usize;
        for (i, c) in text.char_indices() {
            let next = taken + escaped_len(c) as u64;
            if next > allowed {
                break;
            }
            taken = next;
            keep = i + c.len_utf8();
        }
        let before = text.len();
        *value = Value::String(text[..keep].to_string());
        *len -= was - taken;
        cuts.push(format!("{section}[{key}] cut from {before} to {keep} bytes"));
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
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
        // Relative and without `..`, even where the path would stay inside the root: an
        // absolute path holds on one machine only.
        let inside = dir.path().join("docs/policy.md").display().to_string();
        for bad in ["../outside.md", "/etc/passwd", inside.as_str(), "docs/../docs/policy.md"] {
            let c = contract(json!({"file_refs": [bad]}));
            let e = assemble(&c, Request::default(), &sources).unwrap_err();
            assert_eq!(e.code(), Code::PathEscape, "{bad}");
            let v = check_refs(dir.path(), &c, None).unwrap_err();
            assert_eq!(
                (v.code(), v.to_string()),
                (e.code(), e.to_string()),
                "validate refuses {bad} too"
            );
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
    fn hidden_paths_never_reach_the_context_however_spelled() {
        let dir = tree();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "[http] extraheader = AUTH").unwrap();
        std::fs::write(dir.path().join(".env"), "KEY=1").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join(".git/config"), dir.path().join("docs/cfg.md"))
            .unwrap();
        let sources = Sources { root: dir.path(), ledger: None, now: now() };
        let mut bad =
            vec![".git/config", "./.git/config", "docs/../.git/config", ".env", "docs/./../.env"];
        if cfg!(unix) {
            bad.push("docs/cfg.md");
        }
        for rel in bad {
            let c = contract(json!({"file_refs": [rel]}));
            let e = assemble(&c, Request::default(), &sources).unwrap_err();
            assert_eq!(e.code(), Code::PathEscape, "{rel}: {e}");
            assert!(!e.to_string().contains("AUTH"), "{e}");
            let v = check_refs(dir.path(), &c, None).unwrap_err();
            assert_eq!(
                (v.code(), v.to_string()),
                (e.code(), e.to_string()),
                "validate refuses {rel} too"
            );
        }
    }

    #[test]
    fn one_file_named_many_ways_is_read_once_within_one_budget() {
        let dir = tree();
        std::fs::write(dir.path().join("docs/big.md"), "x".repeat(1024 * 1024)).unwrap();
        let sources = Sources { root: dir.path(), ledger: None, now: now() };
        // A few spellings fit (each counted once per reference) ...
        let few: Vec<String> = (0..4).map(|i| format!("docs/{}big.md", "./".repeat(i))).collect();
        let c = contract(json!({"file_refs": few}));
        let ctx = assemble(&c, Request::default(), &sources).unwrap().context.unwrap();
        assert_eq!(ctx["files"].as_object().unwrap().len(), 4);
        // ... 301 do not: the assembly's budget refuses them, long before 301 MB are read.
        let many: Vec<String> =
            (0..301).map(|i| format!("docs/{}big.md", "./".repeat(i))).collect();
        let c = contract(json!({"file_refs": many}));
        let e = assemble(&c, Request::default(), &sources).unwrap_err();
        assert_eq!(e.code(), Code::FileTooLarge, "{e}");
    }

    /// The work counted: the entries dropped and every allocation (each serialisation to
    /// measure a length is one, as long as what it serialises).
    #[test]
    fn cutting_to_the_budget_is_linear_in_the_entries() {
        crate::work::assert_linear("context entries", 2_000, |n| {
            let entries: Vec<Value> = (0..n)
                .map(|i| json!({"at": format!("2026-01-01T00:{:02}:{:02}Z", i / 60 % 60, i % 60), "output": "y\n".repeat(8)}))
                .collect();
            let mut ctx = json!({"ledger": {"a": entries.clone(), "b": entries}, "files": {"f": "z".repeat(n)}});
            let (cuts, work) = crate::work::counted(|| fit(&mut ctx, 10).unwrap());
            assert!(tokens(&ctx) <= 10 || cuts.last().unwrap().contains("remain"), "{cuts:?}");
            work
        });
    }

    #[test]
    fn the_cut_length_is_the_serialized_length() {
        // Escapes, multi-byte characters and control characters cost what serde_json writes.
        for text in ["plain", "quote \" and \\ slash", "tab\tnew\nline", "é😀 ok", "\u{1}\u{1f}x"]
        {
            assert_eq!(
                json_len(text),
                serde_json::to_string(text).unwrap().len() as u64,
                "{text:?}"
            );
        }
        for budget in [1, 3, 5, 8, 13] {
            let mut ctx = json!({"files": {"a": "é😀\"x\n".repeat(20), "b": "\u{2}".repeat(30)},
                                 "ledger": {"e": [{"at": "1"}, {"at": "2"}]}, "frameworks": {"f": "abc"}});
            fit(&mut ctx, budget);
            let exact = tokens(&ctx);
            assert!(
                exact <= budget || ctx["files"]["a"] == "" && ctx["frameworks"]["f"] == "",
                "{budget}: {ctx}"
            );
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
