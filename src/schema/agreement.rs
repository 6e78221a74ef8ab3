//! The document schemas in `schemas/` and the loaders' serde types describe the same shapes.
//!
//! Loaders check a document against its schema, then deserialize it into a private raw
//! type. For that to be sound the two must agree, object by object:
//! - the properties a schema declares are exactly the fields the raw type reads (apart from
//!   a short, named list the types deliberately ignore, such as `$schema`);
//! - a property is required by the schema exactly when the raw type cannot do without it
//!   (checked by removing each property from a full document: both reject, or both accept);
//! - every full document the schema accepts deserializes.
//!
//! Value constraints (patterns, ranges, enums) are the schema's alone: the loader runs it
//! first, so the types need not repeat them.

use std::cell::Cell;
use std::collections::BTreeSet;

use serde::de::{self, DeserializeOwned, Visitor};
use serde_json::{Value, json};

use super::check_document;
use crate::contract::{RawBoundary, RawContract, RawExample, RawExtraction};
use crate::error::DocKind;
use crate::judge::RawSemanticCheck;
use crate::pack::{RawPack, Sections};
use crate::registry::{Event, RawEntry, Registry};
use crate::work_order::{RawConstraints, RawWorkOrder};

/// A deserializer that only records the field names a struct asks for.
struct FieldNames(Cell<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for &FieldNames {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(fields);
        Err(de::Error::custom("fields recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The field names of a `#[derive(Deserialize)]` struct.
fn fields_of<T: DeserializeOwned>() -> BTreeSet<&'static str> {
    let names = FieldNames(Cell::new(&[]));
    let _ = T::deserialize(&names);
    let fields: BTreeSet<&str> = names.0.get().iter().copied().collect();
    assert!(!fields.is_empty(), "{} is not a struct", std::any::type_name::<T>());
    fields
}

fn parses<T: DeserializeOwned>(value: &Value) -> bool {
    serde_json::from_value::<T>(value.clone()).is_ok()
}

/// One object shape: where it sits in a full document, the schema node that describes it,
/// and the raw type that reads it.
struct Shape {
    name: &'static str,
    kind: DocKind,
    /// A document with every property of this object present and valid.
    full: Value,
    /// JSON pointer of the object inside `full`.
    at: &'static str,
    /// JSON pointer of its schema node inside the document schema.
    schema_at: &'static str,
    fields: BTreeSet<&'static str>,
    parse: fn(&Value) -> bool,
    /// Properties the schema declares and the type deliberately does not read.
    ignored: &'static [&'static str],
    /// Fields the type reads that this node does not declare, because the type also
    /// serves a sibling node.
    also_read: &'static [&'static str],
    /// Properties the schema requires that the type takes as optional because one type
    /// serves several schema nodes (checked elsewhere, named here).
    required_by_schema_only: &'static [&'static str],
    /// Properties of which the schema wants exactly one (`oneOf`): the fixture holds one,
    /// the type reads each as optional, and the loader picks the one present.
    exactly_one_of: &'static [&'static str],
}

fn full_contract() -> Value {
    json!({
        "$schema": "../../schemas/prompt_contract.schema.json",
        "x-pactum-ignore": ["template_input_unused"],
        "contract_id": "PRC-FULL-001",
        "version": "1.2.3",
        "prompt_pack_id": "PRM-FULL-001",
        "prompt_pack_version": "^1",
        "boundary": {
            "max_tokens": 100,
            "temperature": 0.5,
            "provider_id": "local",
            "structured_output": {"type": "object"},
            "max_disclosures": 2,
        },
        "agent_class": "KERNEL.semantic",
        "tier": "ho1",
        "required_context": {
            "ledger_queries": [
                {"event_type": "x", "tier": "hot", "max_entries": 3, "recency": "session"}
            ],
            "framework_refs": ["FMWK-A-1"],
            "file_refs": ["notes.md"],
        },
        "input_schema": {"type": "object"},
        "output_schema": {"type": "object"},
        "extraction": {"repair": true, "coerce": true},
        "semantic_check": {"judge": "PRC-JUDGE-001@^1", "criteria": "c", "on_fail": "retry"},
        "examples": [{
            "name": "one",
            "input": {},
            "response": "{}",
            "finish_reason": "stop",
            "expect": "ok",
        }],
        "metadata": {"owner": "team"},
    })
}

fn full_pack() -> Value {
    json!({
        "$schema": "../../schemas/prompt_pack.schema.json",
        "x-pactum-ignore": ["template_input_unused"],
        "prompt_pack_id": "PRM-FULL-001",
        "version": "1.0.0",
        "description": "d",
        "sections": {
            "role": "r",
            "required_inputs": {"x": "the x"},
            "context": "c",
            "task": "t {{ x }}",
            "constraints": "k",
            "expected_outputs": ["out.md"],
            "output_format": "f",
        },
        "metadata": {"owner": "team"},
    })
}

fn full_work_order() -> Value {
    json!({
        "$schema": "../schemas/work_order.schema.json",
        "x-pactum-ignore": ["contract_deprecated"],
        "work_order_id": "WO-FULL-001",
        "kind": "exchange",
        "contract": "PRC-FULL-001@^1",
        "input": {"x": 1},
        "request": "r",
        "contracts": {"plan": "PRC-PLAN-001@^1"},
        "tools": ["echo"],
        "constraints": {"token_budget": 10, "ttl": 2, "max_repair_attempts": 1, "timeout_s": 3, "context_budget": 100, "max_disclosures": 2},
        "session_id": "s", "route_key": "customer-42",
        "agent_id": "a",
        "agent_class": "ADMIN",
        "tier": "ho1",
        "assembled_context": {"ledger": [], "frameworks": {}, "files": {}},
        "provider": {"name": "scripted", "fixtures": "f.json"},
        "output_dir": "out",
        "semantic_check": {"judge": "PRC-JUDGE-001@^1", "criteria": "c", "on_fail": "accept"},
        "metadata": {},
    })
}

fn full_registry() -> Value {
    let sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    let at = "2026-01-01T00:00:00Z";
    json!({
        "$schema": "./schemas/registry.schema.json",
        "$comment": "kept on every rewrite",
        "registry_version": 1,
        "contracts": [{
            "contract_id": "PRC-FULL-001", "version": "1.0.0", "path": "contracts/f/1.0.0.json",
            "sha256": sha, "state": "removed", "registered_at": at, "activated_at": at,
            "deprecated_at": at, "successor_version": "2.0.0", "removed_at": at,
            "refs": {"schemas/common/address.json": sha},
        }],
        "prompt_packs": [{
            "prompt_pack_id": "PRM-FULL-001", "version": "1.0.0",
            "path": "prompt_packs/f/1.0.0.json", "sha256": sha, "state": "removed",
            "registered_at": at, "activated_at": at, "deprecated_at": at,
            "successor_version": "2.0.0", "removed_at": at,
        }],
        "history": [{
            "seq": 1, "at": at, "action": "adopt", "actor": "a@example.com", "id": "PRC-FULL-001",
            "version": "1.0.0", "path": "contracts/f/1.0.0.json", "sha256": sha, "state": "removed",
            "successor": "2.0.0", "heads": [sha, sha], "refs": {"schemas/common/address.json": sha},
            "label": "production", "previous": "0.9.0",
            "times": {"registered_at": at, "activated_at": at, "deprecated_at": at, "removed_at": at},
            "eval": {"provider": "replay", "suites": [{"eval_id": "EVAL-FULL-001", "dataset_sha256": sha}]},
            "weights": {"1.0.0": 90, "1.1.0": 10},
            "signature": "-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----",
            "prev": "0".repeat(64), "hash": sha,
        }],
        "labels": {"PRC-FULL-001": {"production": "1.0.0"}},
    })
}

fn shapes() -> Vec<Shape> {
    vec![
        Shape {
            name: "contract",
            kind: DocKind::Contract,
            full: full_contract(),
            at: "",
            schema_at: "",
            fields: fields_of::<RawContract>(),
            parse: parses::<RawContract>,
            // Suppressions are read by validate's filter from the document itself.
            ignored: &["$schema", "x-pactum-ignore"],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
        Shape {
            name: "contract boundary",
            kind: DocKind::Contract,
            full: full_contract(),
            at: "/boundary",
            schema_at: "/properties/boundary",
            fields: fields_of::<RawBoundary>(),
            parse: parses::<RawBoundary>,
            ignored: &[],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
        Shape {
            name: "contract extraction",
            kind: DocKind::Contract,
            full: full_contract(),
            at: "/extraction",
            schema_at: "/properties/extraction",
            fields: fields_of::<RawExtraction>(),
            parse: parses::<RawExtraction>,
            ignored: &[],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
        Shape {
            name: "contract required_context",
            kind: DocKind::Contract,
            full: full_contract(),
            at: "/required_context",
            schema_at: "/properties/required_context",
            fields: fields_of::<crate::contract::RequiredContext>(),
            parse: parses::<crate::contract::RequiredContext>,
            ignored: &[],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
        Shape {
            name: "contract ledger query",
            kind: DocKind::Contract,
            full: full_contract(),
            at: "/required_context/ledger_queries/0",
            schema_at: "/properties/required_context/properties/ledger_queries/items",
            fields: fields_of::<crate::contract::LedgerQuery>(),
            parse: parses::<crate::contract::LedgerQuery>,
            ignored: &[],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
        Shape {
            name: "contract example",
            kind: DocKind::Contract,
            full: full_contract(),
            at: "/examples/0",
            schema_at: "/properties/examples/items",
            fields: fields_of::<RawExample>(),
            parse: parses::<RawExample>,
            ignored: &[],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
        Shape {
            name: "contract semantic_check",
            kind: DocKind::Contract,
            full: full_contract(),
            at: "/semantic_check",
            schema_at: "/properties/semantic_check",
            fields: fields_of::<RawSemanticCheck>(),
            parse: parses::<RawSemanticCheck>,
            ignored: &[],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
        Shape {
            name: "pack",
            kind: DocKind::PromptPack,
            full: full_pack(),
            at: "",
            schema_at: "",
            fields: fields_of::<RawPack>(),
            parse: parses::<RawPack>,
            // Pack metadata is for people and tools; rendering does not use it.
            ignored: &["$schema", "metadata", "x-pactum-ignore"],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &["template", "sections"],
        },
        Shape {
            name: "pack sections",
            kind: DocKind::PromptPack,
            full: full_pack(),
            at: "/sections",
            schema_at: "/$defs/canonical",
            fields: fields_of::<Sections>(),
            parse: parses::<Sections>,
            ignored: &[],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
        Shape {
            name: "work order",
            kind: DocKind::WorkOrder,
            full: full_work_order(),
            at: "",
            schema_at: "",
            fields: fields_of::<RawWorkOrder>(),
            parse: parses::<RawWorkOrder>,
            ignored: &["$schema", "x-pactum-ignore"],
            also_read: &[],
            // Required by `kind` (the schema's if/then): exchange needs both.
            required_by_schema_only: &["contract", "input"],
            exactly_one_of: &[],
        },
        Shape {
            name: "work order constraints",
            kind: DocKind::WorkOrder,
            full: full_work_order(),
            at: "/constraints",
            schema_at: "/properties/constraints",
            fields: fields_of::<RawConstraints>(),
            parse: parses::<RawConstraints>,
            ignored: &[],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
        Shape {
            name: "work order semantic_check",
            kind: DocKind::WorkOrder,
            full: full_work_order(),
            at: "/semantic_check",
            schema_at: "/properties/semantic_check",
            fields: fields_of::<RawSemanticCheck>(),
            parse: parses::<RawSemanticCheck>,
            ignored: &[],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
        Shape {
            name: "registry",
            kind: DocKind::Registry,
            full: full_registry(),
            at: "",
            schema_at: "",
            // The lists are read item by item; `labels`, a small map, whole.
            fields: crate::registry::READ_KEYS.into_iter().chain(["labels"]).collect(),
            parse: |v| {
                Registry::from_text(
                    std::path::Path::new("/x/registry.json"),
                    v.to_string(),
                    String::new(),
                )
                .is_ok()
            },
            // The loader reads the top level key by key (each list item on its own) after
            // checking it against the schema: `registry_version` is a schema `const`, and
            // `$schema`, `$comment` (and `x-*`) are kept as they are, not read.
            ignored: &["$schema", "$comment", "registry_version"],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
        Shape {
            name: "registry contract entry",
            kind: DocKind::Registry,
            full: full_registry(),
            at: "/contracts/0",
            schema_at: "/$defs/contract_entry",
            fields: fields_of::<RawEntry>(),
            parse: parses::<RawEntry>,
            // One entry type reads both lists; the id each list needs is the schema's check.
            ignored: &[],
            also_read: &["prompt_pack_id"],
            required_by_schema_only: &["contract_id"],
            exactly_one_of: &[],
        },
        Shape {
            name: "registry pack entry",
            kind: DocKind::Registry,
            full: full_registry(),
            at: "/prompt_packs/0",
            schema_at: "/$defs/pack_entry",
            fields: fields_of::<RawEntry>(),
            parse: parses::<RawEntry>,
            ignored: &[],
            // A pack records no referenced files; the schema refuses `refs` there.
            also_read: &["contract_id", "refs"],
            required_by_schema_only: &["prompt_pack_id"],
            exactly_one_of: &[],
        },
        Shape {
            name: "registry history event",
            kind: DocKind::Registry,
            full: full_registry(),
            at: "/history/0",
            schema_at: "/$defs/event",
            fields: fields_of::<Event>(),
            parse: parses::<Event>,
            ignored: &[],
            also_read: &[],
            // A merge event has none of these (`heads` instead); the schema requires them
            // for every other action.
            required_by_schema_only: &["id", "version", "sha256"],
            exactly_one_of: &[],
        },
        Shape {
            name: "registry adopt event times",
            kind: DocKind::Registry,
            full: full_registry(),
            at: "/history/0/times",
            schema_at: "/$defs/event/properties/times",
            fields: fields_of::<crate::registry::EventTimes>(),
            parse: parses::<crate::registry::EventTimes>,
            ignored: &[],
            also_read: &[],
            required_by_schema_only: &[],
            exactly_one_of: &[],
        },
    ]
}

fn document_schema(kind: DocKind) -> Value {
    let file = match kind {
        DocKind::Contract => "prompt_contract",
        DocKind::PromptPack => "prompt_pack",
        DocKind::WorkOrder => "work_order",
        _ => "registry",
    };
    let path = format!("{}/schemas/{file}.schema.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The properties an object schema node declares (following a local `$ref` and `allOf`).
fn properties(schema: &Value, node: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let node = match node.get("$ref").and_then(Value::as_str) {
        Some(r) => schema.pointer(r.trim_start_matches('#')).unwrap(),
        None => node,
    };
    let mut props: BTreeSet<String> = node
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let mut required: BTreeSet<String> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    for part in node.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        let (p, r) = properties(schema, part);
        props.extend(p);
        required.extend(r);
    }
    (props, required)
}

#[test]
fn the_field_name_recorder_sees_every_field() {
    assert_eq!(
        fields_of::<RawConstraints>(),
        BTreeSet::from([
            "token_budget",
            "ttl",
            "max_repair_attempts",
            "timeout_s",
            "context_budget",
            "max_disclosures"
        ])
    );
}

#[test]
fn full_documents_fit_their_schemas_and_types() {
    for shape in shapes() {
        let findings = check_document(shape.kind, &shape.full);
        assert!(
            findings.is_empty(),
            "{}: the full document breaks its schema: {findings:?}",
            shape.name
        );
        let object = shape.full.pointer(shape.at).unwrap();
        assert!((shape.parse)(object), "{}: the full object does not deserialize", shape.name);
    }
}

#[test]
fn schemas_declare_exactly_the_fields_the_types_read() {
    for shape in shapes() {
        let schema = document_schema(shape.kind);
        let (props, _) = properties(&schema, schema.pointer(shape.schema_at).unwrap());
        let declared: BTreeSet<&str> = props
            .iter()
            .map(String::as_str)
            .filter(|p| !shape.ignored.contains(p))
            .chain(shape.also_read.iter().copied())
            .collect();
        assert_eq!(declared, shape.fields, "{}: schema properties vs type fields", shape.name);
        // The full fixture exercises every declared property (one of an exclusive pair).
        let object = shape.full.pointer(shape.at).unwrap().as_object().unwrap();
        for p in props.iter().filter(|p| !shape.exactly_one_of.contains(&p.as_str())) {
            assert!(object.contains_key(p), "{}: the full fixture lacks `{p}`", shape.name);
        }
        let present = shape.exactly_one_of.iter().filter(|p| object.contains_key(**p)).count();
        assert!(shape.exactly_one_of.is_empty() || present == 1, "{}", shape.name);
    }
}

#[test]
fn a_property_is_required_by_the_schema_exactly_when_the_type_needs_it() {
    for shape in shapes() {
        let schema = document_schema(shape.kind);
        let (props, required) = properties(&schema, schema.pointer(shape.schema_at).unwrap());
        for p in props.iter().filter(|p| !shape.ignored.contains(&p.as_str())) {
            let mut doc = shape.full.clone();
            let object = doc.pointer_mut(shape.at).unwrap().as_object_mut().unwrap();
            if object.remove(p).is_none() {
                continue; // the absent half of an exclusive pair
            }
            let type_accepts = (shape.parse)(&Value::Object(object.clone()));
            let schema_accepts = check_document(shape.kind, &doc).is_empty();
            if shape.exactly_one_of.contains(&p.as_str()) {
                assert!(!schema_accepts && type_accepts, "{}: `{p}` is one of a pair", shape.name);
                continue;
            }
            if shape.required_by_schema_only.contains(&p.as_str()) {
                assert!(
                    !schema_accepts && type_accepts,
                    "{}: `{p}` is named as schema-only",
                    shape.name
                );
                continue;
            }
            assert_eq!(schema_accepts, !required.contains(p), "{}: `{p}`", shape.name);
            assert_eq!(
                type_accepts,
                schema_accepts,
                "{}: without `{p}` the schema {} it but the type {} it",
                shape.name,
                if schema_accepts { "accepts" } else { "rejects" },
                if type_accepts { "accepts" } else { "rejects" },
            );
        }
    }
}
