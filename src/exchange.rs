//! Dual validation of one exchange (SPEC §6), as pure steps over values in memory.
//!
//! Before the call: [`check_input`] (the input fits `input_schema`, every failing pointer
//! reported as `input_schema_invalid`), then context assembly ([`crate::context`]: what
//! `required_context` declares), then rendering
//! ([`crate::render`]). After the call: [`check_output`] extracts JSON from the reply
//! ([`crate::extract`]) and validates it against `output_schema`. The executor does the
//! I/O around these steps; contract examples (validate check 9) run the same steps
//! offline through [`run_example`].

use serde_json::Value;

use crate::contract::{Contract, Example};
use crate::error::Code;
use crate::error::{Error, Finding, Result};
use crate::extract::{self, ExtractOptions, Extracted, Guide};
use crate::gateway::{FinishReason, ResponseBody};
use crate::project::Validators;
use crate::render::CompiledPack;
use crate::resolve::Warning;
use crate::schema::Budget;

/// The validated output of one exchange: the extracted, schema-valid value with its
/// provenance (JSON contracts), or the reply's text (text contracts).
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    Json(Extracted),
    Text(String),
}

impl Output {
    /// The extracted value (`None` for a text contract).
    pub fn value(&self) -> Option<&Value> {
        match self {
            Output::Json(x) => Some(&x.value),
            Output::Text(_) => None,
        }
    }

    /// The value, or the text as a JSON string.
    pub fn into_value(self) -> Value {
        match self {
            Output::Json(x) => x.value,
            Output::Text(t) => Value::String(t),
        }
    }

    /// How the value was found (JSON contracts).
    pub fn extraction(&self) -> Option<&Extracted> {
        match self {
            Output::Json(x) => Some(x),
            Output::Text(_) => None,
        }
    }
}

/// Checks the input against the contract's `input_schema`, reporting every failing pointer
/// (`validation_too_costly` when checking it would cost more than one validation's
/// budget: [`crate::schema::Validator`]).
pub fn check_input(contract: &Contract, validators: &Validators, input: &Value) -> Result<()> {
    check_input_within(contract, validators, input, &Budget::new())
}

fn check_input_within(
    contract: &Contract,
    validators: &Validators,
    input: &Value,
    budget: &Budget,
) -> Result<()> {
    let Some(validator) = &validators.input else { return Ok(()) };
    let findings =
        validator.check_within(input, budget).map_err(|too| Error::ValidationTooCostly {
            what: format!("the input of {}", contract.key()),
            detail: too.to_string(),
        })?;
    if findings.is_empty() {
        Ok(())
    } else {
        Err(Error::InputSchemaInvalid { contract: contract.key(), findings })
    }
}

/// The extraction options a contract asks for.
pub fn extract_options(contract: &Contract) -> ExtractOptions {
    ExtractOptions {
        want_array: contract.wants_array(),
        repair: contract.repair,
        coerce: contract.coerce,
    }
}

/// Extracts and validates the reply. An extraction failure is
/// `output_json_extraction_failed` (or `output_truncated` when the provider said it cut
/// the reply off); a value that fails the schema — scalars and `null` included — is
/// `output_schema_invalid` with every failing pointer. The candidates the schema weighs
/// share one validation budget, the check of the chosen value has its own
/// (`validation_too_costly`).
pub fn check_output(
    contract: &Contract,
    validators: &Validators,
    body: &ResponseBody,
    finish: Option<&FinishReason>,
) -> Result<Output> {
    check_output_within(contract, validators, body, finish, (&Budget::new(), &Budget::new()))
}

/// [`check_output`] charging the candidates to `guide` and the chosen value to `check`.
fn check_output_within(
    contract: &Contract,
    validators: &Validators,
    body: &ResponseBody,
    finish: Option<&FinishReason>,
    (guide_budget, check): (&Budget, &Budget),
) -> Result<Output> {
    let truncated = finish == Some(&FinishReason::Length);
    let Some(validator) = &validators.output else {
        // A text contract: its output is the text, not JSON-validated.
        let text = match body {
            ResponseBody::Text(t) => t.clone(),
            ResponseBody::Envelope(v) => match v.get("text").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => {
                    return Err(Error::ExtractionFailed {
                        methods_tried: vec!["envelope".into()],
                        detail: "the envelope has no string `text`".into(),
                    });
                }
            },
        };
        return Ok(Output::Text(text));
    };
    let options = extract_options(contract);
    // The output schema chooses between candidates (SPEC §6.3), within one validation
    // budget over every candidate it weighs; a candidate past it is not accepted (the
    // check of the chosen value says why).
    let accepts = |value: &Value| validator.accepts_within(value, guide_budget).unwrap_or(false);
    let schema = contract.output_schema.as_ref().unwrap_or(&Value::Bool(true));
    let guide = Guide { schema, accepts: &accepts };
    let extracted = match body {
        ResponseBody::Text(t) => extract::extract_guided(t, &options, Some(&guide)),
        ResponseBody::Envelope(v) => extract::extract_envelope_guided(v, &options, Some(&guide)),
    };
    let extracted = extracted.map_err(|failure| {
        let methods_tried: Vec<String> =
            failure.methods_tried.iter().map(|m| m.to_string()).collect();
        if truncated {
            Error::OutputTruncated { methods_tried }
        } else {
            Error::ExtractionFailed { methods_tried, detail: failure.detail.clone() }
        }
    })?;
    let findings: Vec<Finding> =
        validator.check_within(&extracted.value, check).map_err(|too| {
            Error::ValidationTooCostly {
                what: format!("the output of {}", contract.key()),
                detail: too.to_string(),
            }
        })?;
    if findings.is_empty() {
        return Ok(Output::Json(extracted));
    }
    Err(Error::OutputSchemaInvalid { contract: contract.key(), value: extracted.value, findings })
}

/// The run warning for an output whose extraction had to guess (SPEC §6.3): the reply has
/// two plausible readings and pactum took one (lenient mode only; strict mode refuses).
pub fn ambiguity_warning(contract: &Contract, extracted: &Extracted) -> Option<Warning> {
    if !extracted.ambiguous {
        return None;
    }
    let guesses: Vec<String> = extracted
        .repairs
        .iter()
        .filter(|r| r.kind.is_guess())
        .map(|r| format!("{} at bytes {}..{}", r.kind, r.span.0, r.span.1))
        .collect();
    let why = if guesses.is_empty() {
        "another JSON value follows the chosen one".to_string()
    } else {
        guesses.join(", ")
    };
    Some(Warning {
        code: Code::OutputExtractionAmbiguous,
        message: format!(
            "{}: the reply has two plausible readings ({why}); the {} value from bytes {}..{} \
             was used. Ask the model for exactly one JSON value, or drop `extraction.repair` \
             to refuse such replies",
            contract.key(),
            extracted.method,
            extracted.span.0,
            extracted.span.1
        ),
    })
}

/// Runs one contract example offline: input, rendering (within `budget`, which the
/// examples of one file share) and the output steps on the example's recorded response
/// (within `validation`, which they share too). Returns the outcome: `"ok"` or the error
/// code.
pub fn run_example(
    contract: &Contract,
    validators: &Validators,
    pack: &CompiledPack,
    example: &Example,
    (budget, validation): (&crate::render::RenderBudget, &Budget),
) -> (String, Option<Error>) {
    let outcome = (|| {
        check_input_within(contract, validators, &example.input, validation)?;
        pack.render_within(&example.input, true, &Default::default(), budget)?;
        let body = match &example.response {
            Value::String(s) => ResponseBody::Text(s.clone()),
            other => ResponseBody::Envelope(other.clone()),
        };
        let finish = example.finish_reason.as_deref().map(FinishReason::from_api);
        check_output_within(contract, validators, &body, finish.as_ref(), (validation, validation))
            .map(|_| ())
    })();
    match outcome {
        Ok(()) => ("ok".to_string(), None),
        Err(e) => (e.code().to_string(), Some(e)),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;
    use serde_json::json;
    use std::path::Path;

    fn contract(output_schema: Option<Value>) -> (Contract, Validators) {
        let mut v = json!({
            "contract_id": "PRC-T-001", "version": "1.0.0", "prompt_pack_id": "PRM-T-001",
            "boundary": {"max_tokens": 10, "temperature": 0},
            "input_schema": {"type": "object", "required": ["q"], "properties": {"q": {"type": "string", "maxLength": 5}, "n": {"type": "integer"}}},
            "required_context": {"framework_refs": ["FMWK-011"], "ledger_queries": [{"event_type": "LLM_CALL", "tier": "ho1", "max_entries": 3, "recency": "1h"}]}
        });
        if let Some(s) = output_schema {
            v["output_schema"] = s;
        }
        let c = Contract::from_value(v, "x", Path::new("c.json")).unwrap();
        let root = std::env::temp_dir();
        let compile = |s: &Option<Value>| {
            s.as_ref().map(|s| crate::schema::compile(s, &root, &root).unwrap())
        };
        let validators =
            Validators { input: compile(&c.input_schema), output: compile(&c.output_schema) };
        (c, validators)
    }

    #[test]
    fn input_errors_report_every_pointer() {
        let (c, v) = contract(None);
        let e = check_input(&c, &v, &json!({"q": "toolong", "n": "x"})).unwrap_err();
        assert_eq!(e.code(), Code::InputSchemaInvalid);
        let pointers: Vec<_> = e.findings().iter().map(|f| f.pointer.as_str()).collect();
        assert_eq!(pointers.len(), 2, "{pointers:?}");
        assert!(pointers.contains(&"/q") && pointers.contains(&"/n"));
        assert!(check_input(&c, &v, &json!({"q": "ok"})).is_ok());
    }

    #[test]
    fn costly_outputs_are_refused_before_validation() {
        // 300 branches applied to every item: within the schema's own bound; 250,000 items
        // of a 2.6 MB reply: seconds in release, minutes in debug, unbounded.
        let branches: Vec<Value> =
            (0..300).map(|i| json!({"type": "object", "required": [format!("k{i}")]})).collect();
        let (c, v) = contract(Some(json!({"type": "array", "items": {"anyOf": branches}})));
        let ok = serde_json::to_string(&vec![json!({"k299": 1}); 100]).unwrap();
        assert!(check_output(&c, &v, &ResponseBody::Text(ok), None).is_ok());
        let reply = serde_json::to_string(&vec![json!({"k299": 1}); 250_000]).unwrap();
        let (e, work) = crate::work::counted(|| {
            check_output(&c, &v, &ResponseBody::Text(reply), None).unwrap_err()
        });
        assert_eq!(e.code(), Code::ValidationTooCostly);
        assert!(e.to_string().starts_with("the output of PRC-T-001@1.0.0: validating"), "{e}");
        // The work counted: extracting the reply (its bytes read a few times) and the
        // measure's walk; a validator run would add its price, above the whole budget.
        assert!(work.steps < crate::schema::VALIDATION_BUDGET / 4, "{work:?}");
    }

    #[test]
    fn output_steps() {
        let schema = json!({"type": "object", "required": ["label"], "properties": {"label": {"enum": ["a", "b"]}}});
        let (c, v) = contract(Some(schema));
        let out = check_output(
            &c,
            &v,
            &ResponseBody::Text("Here:\n```json\n{\"label\": \"a\"}\n```".into()),
            None,
        )
        .unwrap();
        assert_eq!(out.value(), Some(&json!({"label": "a"})));
        let e = check_output(&c, &v, &ResponseBody::Text("{\"label\": \"z\"}".into()), None)
            .unwrap_err();
        assert_eq!(e.code(), Code::OutputSchemaInvalid);
        let e = check_output(&c, &v, &ResponseBody::Text("null".into()), None).unwrap_err();
        assert_eq!(
            e.code(),
            Code::OutputSchemaInvalid,
            "a null that fails the schema is a schema failure"
        );
        let e = check_output(&c, &v, &ResponseBody::Text("no json here".into()), None).unwrap_err();
        assert_eq!(e.code(), Code::OutputJsonExtractionFailed);
        let e = check_output(
            &c,
            &v,
            &ResponseBody::Text("{\"label\": \"a".into()),
            Some(&FinishReason::Length),
        )
        .unwrap_err();
        assert_eq!(e.code(), Code::OutputTruncated);
        let out = check_output(
            &c,
            &v,
            &ResponseBody::Envelope(json!({"text": "{\"label\": \"b\"}"})),
            None,
        )
        .unwrap();
        assert!(out.extraction().unwrap().envelope);
        let e = check_output(&c, &v, &ResponseBody::Envelope(json!({"content": "x"})), None)
            .unwrap_err();
        assert_eq!(e.code(), Code::OutputJsonExtractionFailed);
    }

    #[test]
    fn the_schema_chooses_and_the_contract_opts_in_to_coercion() {
        let schema =
            json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
        let (mut c, v) = contract(Some(schema));
        let reply = |t: &str| ResponseBody::Text(t.into());
        // The echoed input fails the schema; the answer after it is chosen.
        let out = check_output(&c, &v, &reply("in: {\"q\": 1} out: {\"n\": 2}"), None).unwrap();
        let found = out.extraction().unwrap();
        assert_eq!((found.value.clone(), found.candidates.len()), (json!({"n": 2}), 1));
        // A string where the schema wants an integer: a schema failure, unless coerced.
        let e = check_output(&c, &v, &reply("{\"n\": \"3\"}"), None).unwrap_err();
        assert_eq!(e.code(), Code::OutputSchemaInvalid);
        c.coerce = true;
        let out = check_output(&c, &v, &reply("{\"n\": \"3\"}"), None).unwrap();
        assert_eq!(out.value(), Some(&json!({"n": 3})));
        assert!(ambiguity_warning(&c, out.extraction().unwrap()).is_none());
    }

    #[test]
    fn ambiguous_extractions_warn_when_repair_is_on() {
        let (mut c, v) = contract(Some(json!({"type": "object"})));
        let reply = ResponseBody::Text("{\"a\": 1} {\"a\": 2}".into());
        let e = check_output(&c, &v, &reply, None).unwrap_err();
        assert_eq!(e.code(), Code::OutputJsonExtractionFailed, "strict mode refuses");
        c.repair = true;
        let out = check_output(&c, &v, &reply, None).unwrap();
        let warning = ambiguity_warning(&c, out.extraction().unwrap()).unwrap();
        assert_eq!(warning.code, Code::OutputExtractionAmbiguous);
        assert!(
            warning.message.starts_with("PRC-T-001@1.0.0: the reply has two"),
            "{}",
            warning.message
        );
    }

    #[test]
    fn text_contracts_pass_text_through() {
        let (c, v) = contract(None);
        let out = check_output(&c, &v, &ResponseBody::Text("free text {".into()), None).unwrap();
        assert_eq!(out, Output::Text("free text {".into()));
    }
}
