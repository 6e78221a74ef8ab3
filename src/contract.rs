//! Prompt contracts (`PRC-*`, SPEC §3.1): the validated [`Contract`] type and its loader.
//!
//! Loading is two-step, like ripgrep's arguments: the raw file shape (a private serde
//! struct) is checked against `prompt_contract.schema.json` first, then turned into the
//! validated type the rest of the code sees.

use std::path::{Path, PathBuf};

use semver::Version;
use serde::Deserialize;
use serde_json::Value;

use crate::document::Document;
use crate::error::{DocKind, Error, Finding, Result};
use crate::gateway::Boundary;
use crate::id::{Requirement, parse_version};
use crate::judge::{RawSemanticCheck, SemanticCheck};
use crate::schema;

/// A ledger query the work order must have assembled before the contract fires.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct LedgerQuery {
    pub event_type: String,
    pub tier: String,
    pub max_entries: u64,
    pub recency: String,
}

/// Context that must be assembled before the contract fires (SPEC §6.1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(default)]
pub struct RequiredContext {
    pub ledger_queries: Vec<LedgerQuery>,
    pub framework_refs: Vec<String>,
    pub file_refs: Vec<String>,
}

impl RequiredContext {
    pub fn is_empty(&self) -> bool {
        self.ledger_queries.is_empty()
            && self.framework_refs.is_empty()
            && self.file_refs.is_empty()
    }
}

/// An offline fixture: an input, a model response, and the outcome it must give.
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    pub name: Option<String>,
    pub input: Value,
    /// Raw text, or an envelope object.
    pub response: Value,
    pub finish_reason: Option<String>,
    /// `ok` or the error code the exchange must fail with.
    pub expect: String,
}

/// A validated prompt contract.
#[derive(Clone, Debug)]
pub struct Contract {
    pub id: String,
    pub version: Version,
    pub prompt_pack_id: String,
    /// `Latest` when the contract does not say (= latest active pack).
    pub prompt_pack_version: Requirement,
    pub boundary: Boundary,
    /// `boundary.max_disclosures`: tool calls one exchange may make (SPEC §15).
    pub max_disclosures: Option<u32>,
    pub agent_class: Option<String>,
    pub tier: Option<String>,
    pub required_context: RequiredContext,
    pub input_schema: Option<Value>,
    /// `None` for a text contract.
    pub output_schema: Option<Value>,
    /// Lenient JSON repair after strict extraction fails (`extraction.repair`).
    pub repair: bool,
    /// Schema-aligned coercion of the extracted value (`extraction.coerce`).
    pub coerce: bool,
    /// Semantic validation of every exchange of the contract (SPEC §19); a work order's
    /// own `semantic_check` replaces it.
    pub semantic_check: Option<SemanticCheck>,
    pub examples: Vec<Example>,
    pub metadata: Value,
    /// The whole document as written (for the compatibility diff).
    pub raw: Value,
    /// SHA-256 of the file's exact bytes.
    pub sha256: String,
    pub path: PathBuf,
}

impl Contract {
    /// `PRC-CLASSIFY-001@1.0.0`
    pub fn key(&self) -> String {
        format!("{}@{}", self.id, self.version)
    }

    /// True when the output is JSON-validated.
    pub fn produces_json(&self) -> bool {
        self.output_schema.is_some()
    }

    /// True when the output schema's top-level type is `array` (embedded extraction then
    /// looks for `[` candidates).
    pub fn wants_array(&self) -> bool {
        self.output_schema.as_ref().and_then(|s| s.get("type")).is_some_and(|t| t == "array")
    }

    /// The folder relative `$ref`s in the contract's schemas resolve against.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// Loads a contract from a parsed document: schema check, then conversion.
    pub fn from_document(doc: &Document) -> Result<Contract> {
        Contract::from_value(doc.value.clone(), &doc.sha256, &doc.path)
    }

    /// Converts a parsed value, checking it against `prompt_contract.schema.json` first.
    pub fn from_value(value: Value, sha256: &str, path: &Path) -> Result<Contract> {
        let findings = schema::check_document(DocKind::Contract, &value);
        if !findings.is_empty() {
            return Err(Error::SchemaInvalid {
                doc: DocKind::Contract,
                path: path.to_path_buf(),
                findings,
            });
        }
        let raw: RawContract =
            RawContract::deserialize(&value).map_err(|e| Error::SchemaInvalid {
                doc: DocKind::Contract,
                path: path.to_path_buf(),
                findings: vec![Finding::new("", e.to_string())],
            })?;
        let invalid = |pointer: &str, message: String| Error::SchemaInvalid {
            doc: DocKind::Contract,
            path: path.to_path_buf(),
            findings: vec![Finding::new(pointer, message)],
        };
        let version = parse_version(&raw.version)
            .ok_or_else(|| invalid("/version", format!("`{}` is not a version", raw.version)))?;
        let prompt_pack_version = match &raw.prompt_pack_version {
            None => Requirement::Latest,
            Some(text) => Requirement::parse(text).map_err(|e| {
                invalid("/prompt_pack_version", format!("`{text}` is not a version or range: {e}"))
            })?,
        };
        let semantic_check = match raw.semantic_check {
            None => None,
            Some(check) => {
                Some(SemanticCheck::from_raw(check, "/semantic_check").map_err(|f| {
                    Error::SchemaInvalid {
                        doc: DocKind::Contract,
                        path: path.to_path_buf(),
                        findings: vec![f],
                    }
                })?)
            }
        };
        let examples = raw
            .examples
            .into_iter()
            .map(|e| Example {
                name: e.name,
                input: e.input,
                response: e.response,
                finish_reason: e.finish_reason,
                expect: e.expect.unwrap_or_else(|| "ok".to_string()),
            })
            .collect();
        Ok(Contract {
            id: raw.contract_id,
            version,
            prompt_pack_id: raw.prompt_pack_id,
            prompt_pack_version,
            boundary: Boundary {
                max_tokens: raw.boundary.max_tokens,
                temperature: raw.boundary.temperature,
                provider_id: raw.boundary.provider_id,
                structured_output: raw.boundary.structured_output,
            },
            max_disclosures: raw.boundary.max_disclosures,
            agent_class: raw.agent_class,
            tier: raw.tier,
            required_context: raw.required_context.unwrap_or_default(),
            input_schema: raw.input_schema,
            output_schema: raw.output_schema,
            repair: raw.extraction.as_ref().is_some_and(|e| e.repair),
            coerce: raw.extraction.as_ref().is_some_and(|e| e.coerce),
            semantic_check,
            examples,
            metadata: raw.metadata.unwrap_or_else(|| Value::Object(Default::default())),
            raw: value,
            sha256: sha256.to_string(),
            path: path.to_path_buf(),
        })
    }

    /// The embedded schemas with their pointers: `input_schema`, `output_schema`,
    /// `boundary.structured_output`.
    pub fn embedded_schemas(value: &Value) -> Vec<(&'static str, &Value)> {
        let mut out = Vec::new();
        if let Some(s) = value.get("input_schema") {
            out.push(("/input_schema", s));
        }
        if let Some(s) = value.get("output_schema") {
            out.push(("/output_schema", s));
        }
        if let Some(s) = value.get("boundary").and_then(|b| b.get("structured_output")) {
            out.push(("/boundary/structured_output", s));
        }
        out
    }
}

#[derive(Deserialize)]
pub(crate) struct RawContract {
    contract_id: String,
    version: String,
    prompt_pack_id: String,
    prompt_pack_version: Option<String>,
    boundary: RawBoundary,
    agent_class: Option<String>,
    tier: Option<String>,
    required_context: Option<RequiredContext>,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    extraction: Option<RawExtraction>,
    semantic_check: Option<RawSemanticCheck>,
    #[serde(default)]
    examples: Vec<RawExample>,
    metadata: Option<Value>,
}

#[derive(Deserialize)]
pub(crate) struct RawBoundary {
    max_tokens: u32,
    temperature: f64,
    provider_id: Option<String>,
    structured_output: Option<Value>,
    #[serde(default)]
    max_disclosures: Option<u32>,
}

#[derive(Deserialize)]
pub(crate) struct RawExtraction {
    #[serde(default)]
    repair: bool,
    #[serde(default)]
    coerce: bool,
}

#[derive(Deserialize)]
pub(crate) struct RawExample {
    name: Option<String>,
    input: Value,
    response: Value,
    finish_reason: Option<String>,
    expect: Option<String>,
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;
    use serde_json::json;

    fn minimal() -> Value {
        json!({
            "contract_id": "PRC-CLASSIFY-001", "version": "1.2.0", "prompt_pack_id": "PRM-CLASSIFY-001",
            "boundary": {"max_tokens": 256, "temperature": 0}
        })
    }

    #[test]
    fn minimal_contract_loads_as_a_text_contract() {
        let c = Contract::from_value(minimal(), "ab", Path::new("c.json")).unwrap();
        assert_eq!(c.key(), "PRC-CLASSIFY-001@1.2.0");
        assert_eq!(c.prompt_pack_version, Requirement::Latest);
        assert!(!c.produces_json());
        assert!(!c.repair);
        assert!(!c.coerce);
    }

    #[test]
    fn full_contract_loads() {
        let mut v = minimal();
        v["prompt_pack_version"] = json!("^1");
        v["output_schema"] = json!({"type": "array"});
        v["extraction"] = json!({"repair": true, "coerce": true});
        v["examples"] = json!([{"input": {}, "response": "[]"}]);
        v["x-future-field"] = json!(1);
        let c = Contract::from_value(v, "ab", Path::new("c.json")).unwrap();
        assert!(c.wants_array());
        assert!(c.repair && c.coerce);
        assert_eq!(c.examples[0].expect, "ok");
    }

    #[test]
    fn unknown_boundary_keys_and_bad_values_are_schema_errors() {
        let mut v = minimal();
        v["boundary"]["top_p"] = json!(0.9);
        v["boundary"]["max_tokens"] = json!(0);
        let e = Contract::from_value(v, "ab", Path::new("c.json")).unwrap_err();
        assert_eq!(e.code(), Code::ContractSchemaInvalid);
        let pointers: Vec<_> = e.findings().iter().map(|f| f.pointer.clone()).collect();
        assert!(pointers.contains(&"/boundary/top_p".to_string()), "{pointers:?}");
        assert!(pointers.contains(&"/boundary/max_tokens".to_string()), "{pointers:?}");
    }
}
