//! `pactum extract [--contract ID[@REQ] | --schema FILE] [--envelope] < response`: the
//! JSON pactum finds in a raw model response, with its provenance, optionally validated
//! against a contract's `output_schema` or a schema file.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use pactum::error::{Error, Result};
use pactum::extract::{ExtractOptions, Extracted, extract, extract_envelope};
use pactum::id::Pin;
use pactum::project::Validators;
use pactum::resolve::ResolveOptions;
use serde_json::{Value, json};

use crate::output::{self, Common, FAILED, OK};

/// What the extracted value is validated against.
enum Against {
    Nothing,
    /// The contract's compiled validators (its `output_schema`, if any).
    Contract(Arc<Validators>),
    /// A `--schema` file.
    Schema(jsonschema::Validator),
}

impl Against {
    fn validator(&self) -> Option<&jsonschema::Validator> {
        match self {
            Against::Nothing => None,
            Against::Contract(v) => v.output.as_ref(),
            Against::Schema(v) => Some(v),
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// Validate against this contract's output_schema (and use its extraction policy).
    #[arg(long, value_name = "ID[@REQ]", conflicts_with = "schema")]
    contract: Option<String>,
    /// Validate against a JSON Schema file.
    #[arg(long, value_name = "FILE")]
    schema: Option<PathBuf>,
    /// The response is an envelope object with a string `text`.
    #[arg(long)]
    envelope: bool,
    /// Try lenient repairs when strict extraction fails.
    #[arg(long)]
    repair: bool,
    /// Let drafts resolve.
    #[arg(long)]
    allow_draft: bool,
    #[command(flatten)]
    common: Common,
}

fn extracted_json(x: &Extracted) -> Value {
    json!({"ok": true, "method": x.method, "envelope": x.envelope, "span": [x.span.0, x.span.1],
           "value": x.value, "repairs": x.repairs})
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let mut raw = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut raw) {
        return output::fail(&Error::io("<stdin>", e), json);
    }
    let setup = (|| -> Result<(ExtractOptions, Against, String)> {
        let mut options = ExtractOptions { want_array: false, repair: args.repair };
        if let Some(pin) = &args.contract {
            let project = args.common.project()?;
            let resolved = project
                .resolve(&Pin::parse(pin)?, ResolveOptions { allow_draft: args.allow_draft })?;
            options = pactum::exchange::extract_options(&resolved.contract);
            options.repair |= args.repair;
            let validators = project.validators(&resolved.contract)?;
            return Ok((options, Against::Contract(validators), resolved.contract.key()));
        }
        if let Some(path) = &args.schema {
            let doc = pactum::document::load(path, None)?;
            options.want_array = doc.value.get("type").is_some_and(|t| t == "array");
            let dir = path.parent().unwrap_or(std::path::Path::new("."));
            if let Some(f) = pactum::schema::cost::check(&doc.value, "", dir, dir) {
                return Err(Error::SchemaLimit { path: path.clone(), findings: vec![f] });
            }
            let validator = pactum::schema::compile(&doc.value, dir, dir)
                .map_err(|findings| Error::SchemaFileInvalid { path: path.clone(), findings })?;
            return Ok((options, Against::Schema(validator), path.display().to_string()));
        }
        Ok((options, Against::Nothing, String::new()))
    })();
    let (options, against_validator, against) = match setup {
        Ok(x) => x,
        Err(e) => return output::fail(&e, json),
    };
    let result = if args.envelope {
        match serde_json::from_str::<Value>(&raw) {
            Ok(v) => extract_envelope(&v, &options),
            Err(e) => Err(pactum::extract::ExtractFailure {
                methods_tried: vec!["envelope"],
                detail: format!("--envelope needs a JSON object on stdin: {e}"),
            }),
        }
    } else {
        extract(&raw, &options)
    };
    let extracted = match result {
        Ok(x) => x,
        Err(failure) => {
            let e = Error::ExtractionFailed {
                methods_tried: failure.methods_tried.iter().map(|m| m.to_string()).collect(),
                detail: failure.detail.clone(),
            };
            if json {
                let mut v = output::error_json(&e);
                v["methods_tried"] = json!(failure.methods_tried);
                output::print_json(&v);
            } else {
                output::eprint_error(&e);
            }
            return FAILED;
        }
    };
    if let Some(validator) = against_validator.validator() {
        let findings = pactum::schema::findings(validator, &extracted.value);
        if !findings.is_empty() {
            let e = Error::OutputSchemaInvalid {
                contract: against,
                value: extracted.value.clone(),
                findings,
            };
            if json {
                let mut v = output::error_json(&e);
                v["value"] = extracted.value.clone();
                v["method"] = json!(extracted.method);
                output::print_json(&v);
            } else {
                output::eprint_error(&e);
            }
            return FAILED;
        }
    }
    if json {
        output::print_json(&extracted_json(&extracted));
    } else {
        let text = serde_json::to_string_pretty(&extracted.value).unwrap_or_default();
        println!("{}", output::redacted(&text));
        eprintln!(
            "extracted by {} from bytes {}..{}{}{}",
            extracted.method.as_str(),
            extracted.span.0,
            extracted.span.1,
            if extracted.envelope { " of the envelope's text" } else { "" },
            if extracted.repairs.is_empty() {
                String::new()
            } else {
                format!(
                    " with repairs: {}",
                    extracted
                        .repairs
                        .iter()
                        .map(|r| r.kind.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        );
    }
    OK
}
