//! `pactum submit WO... --queue URL`: validates each work order as `pactum run` would load
//! it, then enqueues them all (SPEC §22); one that does not load stops the command before
//! anything is enqueued, so garbage never enters the queue.

use std::path::{Path, PathBuf};

use pactum::Error;
use pactum::confine::Root;
use pactum::project::Project;
use pactum::queue::{Job, Queue};
use pactum::terminal::escape_line;
use pactum::work_order::WorkOrder;
use serde_json::json;

use super::queue::QueueArgs;
use crate::output::{self, Common, OK};

#[derive(clap::Args)]
pub struct Args {
    /// Work order files (JSON or YAML) inside the project.
    #[arg(required = true, value_name = "WO")]
    work_orders: Vec<PathBuf>,
    #[command(flatten)]
    queue: QueueArgs,
    #[command(flatten)]
    common: Common,
}

/// The job for one work order file: loaded and validated, its path relative to the root
/// (a file outside the project is `path_escape`: workers resolve it in their own checkout).
fn job(project: &Project, path: &Path) -> Result<Job, Error> {
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
    Ok(Job { work_order_id: wo.id, path: rel, work_order: doc.value })
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
            Project::discover(first.unwrap_or(Path::new(".")))
        }
    };
    let project = match project {
        Ok(p) => p,
        Err(e) => return output::fail(&e, json),
    };
    let mut jobs = Vec::new();
    for path in &args.work_orders {
        match job(&project, path) {
            Ok(j) => jobs.push(j),
            Err(e) => {
                if !json {
                    eprintln!(
                        "{}: nothing was submitted",
                        escape_line(&output::relative(&path.display().to_string()))
                    );
                }
                return output::fail(&e, json);
            }
        }
    }
    let mut queue = match args.queue.open(&url) {
        Ok(q) => q,
        Err(e) => return output::fail(&e, json),
    };
    let mut submitted = Vec::new();
    for job in &jobs {
        match queue.submit(job) {
            Ok(entry) => {
                if !json {
                    println!(
                        "{} submitted as {} ({})",
                        escape_line(&job.work_order_id),
                        escape_line(&entry),
                        escape_line(&job.path)
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
        output::print_json(
            &json!({"ok": true, "stream": args.queue.stream, "submitted": submitted}),
        );
    }
    OK
}
