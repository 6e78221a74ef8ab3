//! `pactum new eval PRC-...`: an eval suite and its dataset, scaffolded from the contract's
//! `examples` (SPEC §19), that `pactum validate` accepts as they are.
//!
//! Each example becomes a case (its input); an example that expects `ok` also gives the
//! case `equals` assertions on the fields of its reply whose schema is an enum, a boolean
//! or a constant (a label, a decision: what a regression changes), never on free text or
//! numbers. A contract without examples gets one case with the smallest input its
//! `input_schema` accepts, to be edited. The suite pins the contract's major version
//! (`PRC-X@^1`) and requires every case to pass. Files are written exclusively through the
//! confinement rule: nothing is overwritten.

use serde_json::{Value, json};

use crate::confine::Root;
use crate::error::{Error, Result};
use crate::id::Pin;
use crate::project::Project;
use crate::resolve::ResolveOptions;

/// What `new eval` wrote, relative to the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scaffolded {
    pub eval_id: String,
    pub suite: String,
    pub dataset: String,
    pub cases: usize,
}

/// A suite in the order people read it.
#[derive(serde::Serialize)]
struct SuiteFile {
    #[serde(rename = "$schema")]
    schema: String,
    eval_id: String,
    description: String,
    contract: String,
    dataset: String,
    assertions: Vec<Value>,
    thresholds: Value,
}

/// A dataset line in the order people read it.
#[derive(serde::Serialize)]
struct CaseLine<'a> {
    id: String,
    input: &'a Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    expect: Vec<Value>,
}

/// Scaffolds the suite of the contract `pin` resolves to (drafts allowed: a suite is often
/// written before the first promotion).
pub fn new_eval(project: &Project, pin: &str) -> Result<Scaffolded> {
    let pin = Pin::parse(pin)?;
    let resolved = project.resolve(&pin, ResolveOptions { allow_draft: true, route: None })?;
    let contract = &resolved.contract;
    let (word, _) = contract.id.trim_start_matches("PRC-").split_once('-').unwrap_or(("", ""));
    let folder = format!("{}/{}", super::suite::FOLDER, word.to_ascii_lowercase());
    let root = &project.root;
    let taken = |id: &str| {
        super::suite::in_project(root).iter().any(|p| {
            crate::document::load(p, None)
                .is_ok_and(|d| d.value.get("eval_id").and_then(Value::as_str) == Some(id))
        })
    };
    let eval_id = (1..1000)
        .map(|n| format!("EVAL-{word}-{n:03}"))
        .find(|id| !taken(id))
        .ok_or_else(|| Error::IdInvalid {
            id: format!("EVAL-{word}"),
            rule: "no free number below 1000".into(),
        })?;
    let number = eval_id.rsplit('-').next().unwrap_or("001");
    let dataset = if number == "001" {
        format!("{folder}/cases.jsonl")
    } else {
        format!("{folder}/cases-{number}.jsonl")
    };
    let suite_rel = format!("{folder}/{eval_id}.json");
    let mut lines = String::new();
    let mut cases = 0;
    for (i, example) in contract.examples.iter().enumerate() {
        let id = example
            .name
            .as_deref()
            .map(slug)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| format!("example-{}", i + 1));
        let expect = if example.expect == "ok" {
            expectations(contract, &example.response)
        } else {
            Vec::new()
        };
        let case = CaseLine { id, input: &example.input, expect };
        lines.push_str(&serde_json::to_string(&case).unwrap_or_default());
        lines.push('\n');
        cases += 1;
    }
    if cases == 0 {
        let input = contract
            .input_schema
            .as_ref()
            .map_or_else(|| json!({}), crate::gateway::dry_run::minimal_instance);
        let case = CaseLine { id: "case-1".into(), input: &input, expect: Vec::new() };
        lines.push_str(&serde_json::to_string(&case).unwrap_or_default());
        lines.push('\n');
        cases = 1;
    }
    let suite = SuiteFile {
        schema: crate::scaffold::schema_ref(&suite_rel, "eval_suite.schema.json"),
        eval_id: eval_id.clone(),
        description: format!("What {} must keep answering well.", contract.id),
        contract: format!("{}@^{}", contract.id, contract.version.major),
        dataset: dataset.clone(),
        assertions: Vec::new(),
        thresholds: json!({"pass_rate": 1.0}),
    };
    let mut text = serde_json::to_string_pretty(&suite).unwrap_or_default();
    text.push('\n');
    let confined = Root::new(root);
    let dataset_path = crate::scaffold::write_new(&confined, &dataset, &lines)?;
    if let Err(e) = crate::scaffold::write_new(&confined, &suite_rel, &text) {
        crate::confine::remove_created(&dataset_path);
        return Err(e);
    }
    crate::init::write_schemas(root, "schemas", false)?;
    Ok(Scaffolded { eval_id, suite: suite_rel, dataset, cases })
}

/// `equals` assertions on the enum, boolean and constant fields of an example's reply.
fn expectations(contract: &crate::contract::Contract, response: &Value) -> Vec<Value> {
    let text = match response {
        Value::String(s) => s.clone(),
        other => other
            .get("text")
            .and_then(Value::as_str)
            .map_or_else(|| other.to_string(), str::to_string),
    };
    let Some(schema) = &contract.output_schema else { return Vec::new() };
    let Ok(found) = crate::extract::extract(&text, &crate::extract::ExtractOptions::default())
    else {
        return Vec::new();
    };
    let Some(fields) = found.value.as_object() else { return Vec::new() };
    fields
        .iter()
        .filter(|(key, _)| {
            let property = schema.pointer(&format!("/properties/{}", key.replace('~', "~0").replace('/', "~1")));
            property.is_some_and(|p| {
                p.get("enum").is_some() || p.get("const").is_some() || p.get("type") == Some(&json!("boolean"))
            })
        })
        .map(|(key, value)| {
            json!({"kind": "equals", "pointer": crate::schema::join_pointer("", key), "value": value})
        })
        .collect()
}

/// `a fenced reply` → `a-fenced-reply`.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').chars().take(64).collect()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn slugs_are_lowercase_words_joined_by_dashes() {
        assert_eq!(
            slug("a fenced reply with prose around it"),
            "a-fenced-reply-with-prose-around-it"
        );
        assert_eq!(slug("  Refund: 2 items! "), "refund-2-items");
        assert_eq!(slug("!!!"), "");
    }
}
