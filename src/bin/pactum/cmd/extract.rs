//! `pactum extract [--contract ID[@REQ] | --schema FILE] [--envelope] [--repair] [--coerce]
//! < response`: the JSON pactum finds in a raw model response, with its provenance (method,
//! span, repairs, ambiguity, the candidates passed over), optionally validated against a
//! contract's `output_schema` or a schema file, which then also chooses between candidates.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use pactum::error::{Error, Result};
use pactum::extract::{ExtractOptions, Extracted, Guide, extract_envelope_guided, extract_guided};
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
    Schema(pactum::schema::Validator),
}

impl Against {
    fn validator(&self) -> Option<&pactum::schema::Validator> {
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
    #[arg(long, value_name = "ID[@REQ]", conflicts_with = "schema", group = "against")]
    contract: Option<String>,
    /// Validate against a JSON Schema file.
    #[arg(long, value_name = "FILE", group = "against")]
    schema: Option<PathBuf>,
    /// The response is an envelope object with a string `text`.
    #[arg(long)]
    envelope: bool,
    /// Try lenient repairs when strict extraction fails.
    #[arg(long)]
    repair: bool,
    /// Coerce the value towards the schema (strings to numbers or booleans, a single value
    /// to a one-item array, enum case); needs --contract or --schema.
    #[arg(long, requires = "against")]
    coerce: bool,
    /// Let drafts resolve.
    #[arg(long)]
    allow_draft: bool,
    #[command(flatten)]
    common: Common,
}

fn extracted_json(x: &Extracted) -> Value {
    json!({"ok": true, "method": x.method, "envelope": x.envelope, "span": [x.span.0, x.span.1],
           "value": x.value, "repairs": x.repairs, "ambiguous": x.ambiguous,
           "candidates": x.candidates})
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let mut raw = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut raw) {
        return output::fail(&Error::io("<stdin>", e), json);
    }
    // The schema's folder and the root its `$ref`s stay in, for finding `x-secret` values.
    type Setup = (ExtractOptions, Against, String, Option<Value>, Option<(PathBuf, PathBuf)>);
    let setup = (|| -> Result<Setup> {
        let mut options =
            ExtractOptions { want_array: false, repair: args.repair, coerce: args.coerce };
        if let Some(pin) = &args.contract {
            let project = args.common.project()?;
            let resolved = project
                .resolve(
                    &Pin::parse(pin)?,
                    ResolveOptions { allow_draft: args.allow_draft, route: None },
                )
                .map_err(pactum::Error::with_allow_draft_hint)?;
            options = pactum::exchange::extract_options(&resolved.contract);
            options.repair |= args.repair;
            options.coerce |= args.coerce;
            let validators = project.validators(&resolved.contract)?;
            let schema = resolved.contract.output_schema.clone();
            let dirs = Some((resolved.contract.dir().to_path_buf(), project.root.clone()));
            return Ok((
                options,
                Against::Contract(validators),
                resolved.contract.key(),
                schema,
                dirs,
            ));
        }
        if let Some(path) = &args.schema {
            let doc = pactum::document::load(path, None)?;
            options.want_array = doc.value.get("type").is_some_and(|t| t == "array");
            let dir = path.parent().unwrap_or(std::path::Path::new("."));
            let files = pactum::schema::graph::ProjectFiles::new(dir);
            let base = pactum::schema::graph::folder_uri(dir);
            let origin = pactum::schema::graph::Origin::new(&base, &files);
            let graph = pactum::schema::graph::Graph::build(&doc.value, &origin);
            if let Some(refusal) = pactum::schema::cost::check_graph(&graph, &doc.value, "") {
                return Err(refusal.into_error(path));
            }
            let validator = pactum::schema::compile_graph(&graph, &doc.value)
                .map_err(|findings| Error::SchemaFileInvalid { path: path.clone(), findings })?;
            let against = path.display().to_string();
            let dirs = Some((dir.to_path_buf(), dir.to_path_buf()));
            return Ok((options, Against::Schema(validator), against, Some(doc.value), dirs));
        }
        Ok((options, Against::Nothing, String::new(), None, None))
    })();
    let (options, against_validator, against, against_schema, dirs) = match setup {
        Ok(x) => x,
        Err(e) => return output::fail(&e, json),
    };
    // The schema chooses between candidates (and is what coercion aims at).
    let schema_doc = against_schema;
    // Within one validation budget over every candidate weighed (the check of the chosen
    // value has its own, and says why a value is too costly).
    let guide_budget = pactum::schema::Budget::new();
    let accepts = |value: &Value| {
        against_validator
            .validator()
            .is_none_or(|v| v.accepts_within(value, &guide_budget).unwrap_or(false))
    };
    let guide = schema_doc.as_ref().map(|schema| Guide { schema, accepts: &accepts });
    let result = if args.envelope {
        match serde_json::from_str::<Value>(&raw) {
            Ok(v) => extract_envelope_guided(&v, &options, guide.as_ref()),
            Err(e) => Err(pactum::extract::ExtractFailure {
                methods_tried: vec!["envelope"],
                detail: format!("--envelope needs a JSON object on stdin: {e}"),
            }),
        }
    } else {
        extract_guided(&raw, &options, guide.as_ref())
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
    // Values the schema marks `x-secret` are masked in what is printed (SPEC §18).
    if let (Some(schema), Some((dir, root))) = (&schema_doc, &dirs)
        && let Err(e) = output::redactor().add_marked_at(Some(schema), &extracted.value, dir, root)
    {
        return output::fail(&e, json);
    }
    if let Some(validator) = against_validator.validator() {
        let findings = match validator.check(&extracted.value) {
            Ok(findings) => findings,
            Err(too) => {
                let e = Error::ValidationTooCostly {
                    what: format!("the value extracted for {against}"),
                    detail: too.to_string(),
                };
                return output::fail(&e, json);
            }
        };
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
        let pretty = serde_json::to_string_pretty(&extracted.value).unwrap_or_default();
        output::print_text(&format!("{pretty}\n"));
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
