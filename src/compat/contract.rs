//! The contract-level half of the diff: top-level keys, `boundary`, `required_context`,
//! and the hand-off of each embedded schema to [`super::schema`].

use serde_json::{Map, Value};

use super::number::{self, Num};
use super::{Change, ChangeKind, Origins, changed, child, object, schema, show};

/// Adds every difference between two contract documents to `out` (unsorted). The
/// embedded schemas are always compared, also when their text is equal: what their
/// references lead to may not be.
pub(super) fn diff(old: &Value, new: &Value, origins: &Origins<'_>, out: &mut Vec<Change>) {
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else {
        if old != new {
            let detail = "a contract must be a JSON object; compared as a whole".to_owned();
            out.push(Change::new(String::new(), ChangeKind::Unclassified, detail));
        }
        return;
    };
    for (key, old_value, new_value) in changed(old, new) {
        let pointer = child("", key);
        let change = format!("`{key}` {} → {}", show(old_value), show(new_value));
        let simple = |kind: ChangeKind| Change::new(pointer.clone(), kind, change.clone());
        match key.as_str() {
            "version" => {}
            "$schema" => out.push(simple(ChangeKind::EditorSchemaChanged)),
            "contract_id" => out.push(simple(ChangeKind::IdentityChanged)),
            "prompt_pack_id" | "prompt_pack_version" => {
                out.push(simple(ChangeKind::PackBindingChanged));
            }
            "examples" => {
                let detail = "offline `examples` changed".to_owned();
                out.push(Change::new(pointer, ChangeKind::ExamplesChanged, detail));
            }
            "agent_class" => out.push(simple(ChangeKind::AgentClassChanged)),
            "tier" => out.push(simple(ChangeKind::TierChanged)),
            "extraction" => {
                let detail = "`extraction` policy changed".to_owned();
                out.push(Change::new(pointer, ChangeKind::ExtractionChanged, detail));
            }
            "semantic_check" => {
                let detail = "`semantic_check` changed (judge, criteria or on_fail)".to_owned();
                out.push(Change::new(pointer, ChangeKind::SemanticCheckChanged, detail));
            }
            "metadata" => metadata(old_value, new_value, out),
            "boundary" => boundary(old_value, new_value, out),
            "required_context" => required_context(old_value, new_value, out),
            "input_schema" => {}
            "output_schema" => {
                if old_value.is_some() != new_value.is_some() {
                    let detail = if new_value.is_some() {
                        "`output_schema` added: a text contract became a JSON contract"
                    } else {
                        "`output_schema` removed: a JSON contract became a text contract"
                    };
                    out.push(Change::new(pointer, ChangeKind::OutputModeChanged, detail.into()));
                }
            }
            _ => out.push(simple(ChangeKind::ExtensionChanged)),
        }
    }
    schema::diff_document(
        old.get("input_schema"),
        new.get("input_schema"),
        "/input_schema",
        origins,
        out,
    );
    let (old_out, new_out) = (old.get("output_schema"), new.get("output_schema"));
    if old_out.is_some() == new_out.is_some() {
        schema::diff_document(old_out, new_out, "/output_schema", origins, out);
    }
    let (old_so, new_so) = (structured(old), structured(new));
    let boundaries_are_objects =
        [old, new].iter().all(|c| c.get("boundary").is_none_or(Value::is_object));
    if boundaries_are_objects {
        schema::diff_document(old_so, new_so, "/boundary/structured_output", origins, out);
    }
}

fn metadata(old: Option<&Value>, new: Option<&Value>, out: &mut Vec<Change>) {
    let (Some(old), Some(new)) = (object(old), object(new)) else {
        let detail = "`metadata` changed".to_owned();
        out.push(Change::new("/metadata".to_owned(), ChangeKind::MetadataChanged, detail));
        return;
    };
    for (key, _, _) in changed(old, new) {
        let detail = format!("metadata `{key}` changed");
        let pointer = child("/metadata", key);
        out.push(Change::new(pointer, ChangeKind::MetadataChanged, detail));
    }
}

fn boundary(old: Option<&Value>, new: Option<&Value>, out: &mut Vec<Change>) {
    let (Some(old), Some(new)) = (object(old), object(new)) else {
        let detail = "`boundary` is not an object on one side".to_owned();
        out.push(Change::new("/boundary".to_owned(), ChangeKind::BoundaryChanged, detail));
        return;
    };
    for (key, old_value, new_value) in changed(old, new) {
        let pointer = child("/boundary", key);
        let change = format!("`boundary.{key}` {} → {}", show(old_value), show(new_value));
        let kind = match key.as_str() {
            "max_tokens" => {
                let tokens = |value: Option<&Value>| value.and_then(Num::of);
                match (tokens(old_value), tokens(new_value)) {
                    (Some(old), Some(new)) if new > old => ChangeKind::BoundaryRelaxed,
                    (Some(old), Some(new)) if new < old => ChangeKind::BoundaryTightened,
                    (Some(_), Some(_)) => continue,
                    _ => ChangeKind::BoundaryChanged,
                }
            }
            "temperature" => ChangeKind::TemperatureChanged,
            "provider_id" if new_value.is_none() => ChangeKind::ProviderRemoved,
            "provider_id" => ChangeKind::ProviderChanged,
            // Compared with the other schemas, also when its text is equal.
            "structured_output" => continue,
            _ => ChangeKind::BoundaryChanged,
        };
        out.push(Change::new(pointer, kind, change));
    }
}

/// The context lists: an entry added means callers must assemble more.
const CONTEXT_LISTS: &[&str] = &["ledger_queries", "framework_refs", "file_refs"];

fn required_context(old: Option<&Value>, new: Option<&Value>, out: &mut Vec<Change>) {
    const BASE: &str = "/required_context";
    let (Some(old), Some(new)) = (object(old), object(new)) else {
        let detail = "`required_context` is not an object on one side; not compared".to_owned();
        out.push(Change::new(BASE.to_owned(), ChangeKind::Unclassified, detail));
        return;
    };
    for (key, old_value, new_value) in changed(old, new) {
        let pointer = child(BASE, key);
        if !CONTEXT_LISTS.contains(&key.as_str()) {
            let detail = format!("unknown `required_context.{key}` changed; treated as breaking");
            out.push(Change::new(pointer, ChangeKind::Unclassified, detail));
            continue;
        }
        let (Some(old_list), Some(new_list)) = (list(old_value), list(new_value)) else {
            let detail = format!("`required_context.{key}` is not an array on one side");
            out.push(Change::new(pointer, ChangeKind::Unclassified, detail));
            continue;
        };
        // Pair equal entries; what is left over was added or removed.
        let mut old_free: Vec<usize> = (0..old_list.len()).collect();
        for (j, entry) in new_list.iter().enumerate() {
            let same = |i: usize| old_list.get(i).is_some_and(|old| number::same_value(old, entry));
            if let Some(at) = old_free.iter().position(|&i| same(i)) {
                old_free.remove(at);
            } else {
                let detail = format!(
                    "`{key}` entry {} added: callers must assemble more context",
                    show(Some(entry))
                );
                let at = child(&pointer, &j.to_string());
                out.push(Change::new(at, ChangeKind::ContextAdded, detail));
            }
        }
        for i in old_free {
            let detail = format!("`{key}` entry {} removed", show(old_list.get(i)));
            let at = child(&pointer, &i.to_string());
            out.push(Change::new(at, ChangeKind::ContextRemoved, detail));
        }
    }
}

/// `boundary.structured_output`, if the contract has one.
fn structured(contract: &Map<String, Value>) -> Option<&Value> {
    contract.get("boundary").and_then(|b| b.get("structured_output"))
}

/// An optional array; absent is empty, anything else is `None`.
fn list(value: Option<&Value>) -> Option<&[Value]> {
    match value {
        None => Some(&[]),
        Some(Value::Array(items)) => Some(items),
        Some(_) => None,
    }
}
