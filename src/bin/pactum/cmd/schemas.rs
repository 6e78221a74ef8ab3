//! `pactum schemas [NAME] [--write DIR]`: the JSON Schemas embedded in this pactum — list
//! them, print one, or write (refresh) them into a folder so `$schema` references resolve
//! offline.

use std::path::PathBuf;

use pactum::error::Error;
use pactum::init::{Step, write_schemas};
use serde_json::json;

use crate::output::{self, Format, OK};

#[derive(clap::Args)]
pub struct Args {
    /// Print this schema (e.g. prompt_contract.schema.json); without it, list them.
    name: Option<String>,
    /// Write every schema into DIR, replacing ones that differ (e.g. `--write schemas`).
    #[arg(long, value_name = "DIR", conflicts_with = "name")]
    write: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Same as --format json.
    #[arg(long)]
    json: bool,
}

pub fn exec(args: Args) -> u8 {
    let json = args.json || args.format == Format::Json;
    if let Some(dir) = &args.write {
        let written =
            pactum::confine::create_folders(dir).and_then(|()| write_schemas(dir, "", true));
        return match written {
            Ok(steps) => {
                if json {
                    output::print_json(&json!({"ok": true, "dir": dir, "steps": steps}));
                } else {
                    for s in &steps {
                        let (word, path) = match s {
                            Step::Created { path } => ("created", path),
                            Step::Appended { path, .. } => ("refreshed", path),
                            Step::Kept { path, .. } => ("unchanged", path),
                            _ => continue,
                        };
                        output::print_text(&format!("{word:<9} {}\n", dir.join(path).display()));
                    }
                }
                OK
            }
            Err(e) => output::fail(&e, json),
        };
    }
    let names: Vec<&str> = pactum::schema::EMBEDDED.iter().map(|(n, _)| *n).collect();
    match &args.name {
        Some(name) => match pactum::schema::embedded(name) {
            Some(text) => {
                // The embedded schema, byte for byte.
                output::print_exact(text);
                OK
            }
            None => output::fail(
                &Error::io(
                    name,
                    std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("no such embedded schema; the schemas are: {}", names.join(", ")),
                    ),
                ),
                json,
            ),
        },
        None => {
            if json {
                output::print_json(&json!({"ok": true, "schemas": names}));
            } else {
                output::print_text(&(names.join("\n") + "\n"));
            }
            OK
        }
    }
}
