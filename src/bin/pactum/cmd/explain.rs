//! `pactum explain CODE`: what an error code means and how to fix it, from
//! `docs/error-codes.md` (embedded), like `rustc --explain`.

use pactum::Code;
use serde_json::json;

use crate::output::{self, Format, OK};

/// The error-code documentation, embedded so `explain` works anywhere.
const DOCS: &str = include_str!("../../../../docs/error-codes.md");

#[derive(clap::Args)]
pub struct Args {
    /// An error code, e.g. registry_history_mismatch (as printed in `error[CODE]`).
    #[arg(required_unless_present = "list")]
    code: Option<String>,
    /// List every code with its severity and what it means.
    #[arg(long, conflicts_with = "code")]
    list: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Same as --format json.
    #[arg(long)]
    json: bool,
}

/// The section of the docs for `code`: from its `## ` heading to the next one.
pub fn section(code: &str) -> Option<&'static str> {
    let mut start = None;
    let mut offset = 0;
    for line in DOCS.split_inclusive('\n') {
        if let Some(heading) = line.strip_prefix("## ") {
            if start.is_some() {
                return start.map(|s| DOCS[s..offset].trim_end());
            }
            if heading.trim().trim_matches('`') == code {
                start = Some(offset);
            }
        }
        offset += line.len();
    }
    start.map(|s| DOCS[s..].trim_end())
}

pub fn exec(args: Args) -> u8 {
    let json = args.json || args.format == Format::Json;
    if args.list {
        if json {
            let codes: Vec<_> = Code::ALL
                .iter()
                .map(|c| json!({"code": c.as_str(), "severity": c.default_severity().as_str(), "summary": c.summary()}))
                .collect();
            output::print_json(&json!({"ok": true, "codes": codes}));
        } else {
            let width = Code::ALL.iter().map(|c| c.as_str().len()).max().unwrap_or(0);
            let mut text = String::new();
            for c in Code::ALL {
                text.push_str(&format!(
                    "{:<width$}  {:<7}  {}\n",
                    c.as_str(),
                    c.default_severity().as_str(),
                    c.summary()
                ));
            }
            output::print_text(&text);
        }
        return OK;
    }
    let code = args.code.as_deref().unwrap_or_default();
    let code = code.trim().trim_start_matches("error[").trim_end_matches(']');
    // Codes are snake_case; `TOOL_NAME_TAKEN` or `Tool-Name-Taken` as typed mean the same.
    let typed = code.to_ascii_lowercase().replace('-', "_");
    let code = typed.as_str();
    let Some(known) = Code::from_name(code) else {
        let close: Vec<&str> = Code::ALL
            .iter()
            .map(|c| c.as_str())
            .filter(|c| pactum::id::levenshtein(code, c) <= 3 || c.contains(code))
            .collect();
        let hint = if close.is_empty() {
            "`pactum explain --list` lists every code".to_string()
        } else {
            format!("did you mean {}?", close.join(", "))
        };
        // A name that is no code is a mistake on the command line, reported as every
        // other one is (a documented code, exit 2).
        let message = format!("`{code}` is not a pactum error code; {hint}");
        return output::fail(&pactum::Error::Usage { message }, json);
    };
    let text = section(known.as_str()).unwrap_or(known.summary());
    if json {
        output::print_json(&json!({
            "ok": true, "code": known.as_str(), "severity": known.default_severity().as_str(),
            "summary": known.summary(), "documentation": text,
        }));
    } else {
        output::print_text(&format!("{text}\n"));
    }
    OK
}
