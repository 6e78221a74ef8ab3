//! `pactum submit WO... --queue URL`: refuses what `pactum run` would refuse, then enqueues
//! (SPEC §22, §24). Each work order is loaded and validated as `run` loads it, and checked
//! as a run checks it before any call (`pactum::executor::preflight`: its pins resolve, its
//! input fits its contract's `input_schema`, ...). The batch is one decision: when any file
//! is refused, each refused file is named with its codes and nothing of the batch is
//! enqueued (exit 1), so garbage never enters the queue and a fixed batch is submitted
//! whole. An id that already has a result is `already done`, not enqueued again.

use std::path::{Path, PathBuf};

use pactum::Error;
use pactum::confine::Root;
use pactum::executor::preflight;
use pactum::project::Project;
use pactum::queue::{Job, Queue};
use pactum::resolve::ResolveOptions;
use pactum::terminal::escape_line;
use pactum::work_order::WorkOrder;
use serde_json::json;

use super::queue::QueueArgs;
use crate::output::{self, Common, FAILED, OK};

#[derive(clap::Args)]
pub struct Args {
    /// Work order files (JSON or YAML) inside the project.
    #[arg(required = true, value_name = "WO")]
    work_orders: Vec<PathBuf>,
    #[command(flatten)]
    queue: QueueArgs,
    /// Let pins resolve to drafts (start the workers with --allow-draft too).
    #[arg(long)]
    allow_draft: bool,
    #[command(flatten)]
    common: Common,
}

/// The job for one work order file, or every reason `run` would refuse it: loaded and
/// validated, its path relative to the root (a file outside the project is `path_escape`:
/// workers resolve it in their own checkout), then checked as a run checks it before any
/// call.
fn job(project: &Project, path: &Path, options: ResolveOptions) -> Result<Job, Vec<Error>> {
    let (job, wo) = load(project, path).map_err(|e| vec![e])?;
    let refused = preflight::check(project, &wo, options);
    if refused.is_empty() { Ok(job) } else { Err(refused) }
}

fn load(project: &Project, path: &Path) -> Result<(Job, WorkOrder), Error> {
    let root = Root::new(&project.root);
    let absolute = std::path::absolute(path).map_err(|e| Error::io(path, e))?;
    let real = root.file(&absolute).map_err(|r| r.into_error(path))?;
    let rel = real.strip_prefix(root.real()).map_err(|_| Error::PathEscape {
        path: path.display().to_string(),
        reason: "is outside the project; workers find work orders in their own checkout".into(),
    })?;
    let rel = rel.to_string_lossy().replace('\\', "/");
    let doc = pactum::document::load(path, Some(pactum::error::DocKind::WorkOrder))?;
    let wo = WorkOrder::from_document(&doc)?;
    Ok((
        Job {
            work_order_id: wo.id.clone(),
            path: Some(rel),
            work_order: doc.value,
            kind: pactum::queue::EntryKind::WorkOrder,
        },
        wo,
    ))
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let url = match args.queue.url() {
        Ok(u) => u,
        Err(e) => return output::fail(&e, json),
    };
    let project = match &args.common.root {
        Some(_) => args.common.project(),
        None => {
            let first = args.work_orders[0].parent().filter(|p| !p.as_os_str().is_empty());
            output::discover_project(first.unwrap_or(Path::new(".")))
        }
    };
    let project = match project {
        Ok(p) => p,
        Err(e) => return output::fail(&e, json),
    };
    let options = ResolveOptions { allow_draft: args.allow_draft, route: None };
    let mut jobs = Vec::new();
    let mut refused = Vec::new();
    for path in &args.work_orders {
        match job(&project, path, options) {
            Ok(j) => jobs.push(j),
            Err(errors) => refused.push((output::relative(&path.display().to_string()), errors)),
        }
    }
    if !refused.is_empty() {
        return refuse(&refused, args.work_orders.len(), json);
    }
    let mut queue = match args.queue.open(&url) {
        Ok(q) => q,
        Err(e) => return output::fail(&e, json),
    };
    let (mut submitted, mut done) = (Vec::new(), Vec::new());
    for job in &jobs {
        // An id with a result would only be acknowledged by a worker: say so instead.
        let result = match queue.completed(&job.work_order_id) {
            Ok(r) => r,
            Err(e) => return output::fail(&e, json),
        };
        if let Some(result) = result {
            if !json {
                println!(
                    "{} already done (result {}); not submitted ({})",
                    escape_line(&job.work_order_id),
                    escape_line(&result),
                    escape_line(job.file())
                );
            }
            done.push(
                json!({"work_order_id": job.work_order_id, "result": result, "path": job.path}),
            );
            continue;
        }
        match queue.submit(job) {
            Ok(entry) => {
                if !json {
                    println!(
                        "{} submitted as {} ({})",
                        escape_line(&job.work_order_id),
                        escape_line(&entry),
                        escape_line(job.file())
                    );
                }
                submitted.push(
                    json!({"work_order_id": job.work_order_id, "entry": entry, "path": job.path}),
                );
            }
            Err(e) => return output::fail(&e, json),
        }
    }
    if json {
        output::print_json(&json!({
            "ok": true,
            "stream": args.queue.stream,
            "submitted": submitted,
            "already_done": done,
        }));
    }
    OK
}

/// Names each refused file with its failures; nothing was enqueued. The exit status is the
/// worst of theirs (1 for what `run` would refuse, 2 for a file that cannot be read).
fn refuse(refused: &[(String, Vec<Error>)], total: usize, json: bool) -> u8 {
    let status = refused
        .iter()
        .flat_map(|(_, errors)| errors.iter().map(output::status_of))
        .max()
        .unwrap_or(FAILED);
    let summary = format!(
        "{} of {total} work order(s) refused (what `pactum run` would refuse): nothing was submitted",
        refused.len()
    );
    if json {
        let mut errors = Vec::new();
        for (file, errs) in refused {
            for e in errs {
                for mut entry in
                    output::error_json(e)["errors"].as_array().cloned().unwrap_or_default()
                {
                    entry["file"] = json!(file);
                    errors.push(entry);
                }
            }
        }
        let (file, first) = (&refused[0].0, &refused[0].1[0]);
        output::print_json(&json!({
            "ok": false,
            "code": first.code(),
            "message": format!("{file}: {}", output::relative(&first.to_string())),
            "errors": errors,
            "refused": refused.iter().map(|(f, _)| f.as_str()).collect::<Vec<&str>>(),
        }));
    } else {
        for (file, errors) in refused {
            eprintln!("{}: refused", escape_line(file));
            for e in errors {
                output::eprint_error(e);
            }
        }
        eprintln!("{}", output::shown_line(&summary));
    }
    status
}
