//! Unit tests for the compatibility diff: one table of contract pairs driven through
//! [`check`], then the version arithmetic, `$ref` cycles and size limits.

use semver::Version;
use serde_json::{Value, json};

use super::{Bump, ChangeKind, declared_bump, diff_contracts, diff_schemas, required_bump};
use ChangeKind as K;

/// A minimal valid contract with `overrides` merged over its top-level keys; a `null`
/// override removes the key.
fn contract(overrides: Value) -> Value {
    let mut base = json!({
        "contract_id": "PRC-TEST-001",
        "version": "1.0.0",
        "prompt_pack_id": "PRM-TEST-001",
        "boundary": {"max_tokens": 256, "temperature": 0},
    });
    if let (Some(map), Value::Object(overrides)) = (base.as_object_mut(), overrides) {
        for (key, value) in overrides {
            if value.is_null() {
                map.remove(&key);
            } else {
                map.insert(key, value);
            }
        }
    }
    base
}

/// A contract whose `input_schema` is `schema`.
fn input(schema: Value) -> Value {
    contract(json!({ "input_schema": schema }))
}

/// An object schema with one property `a`.
fn prop(schema: Value) -> Value {
    input(json!({"type": "object", "properties": {"a": schema}}))
}

/// Diffs `old` → `new` and checks the exact `(pointer, kind)` list and the required bump,
/// plus the invariants every diff must keep.
fn check(name: &str, old: &Value, new: &Value, expect: &[(&str, ChangeKind)], bump: Bump) {
    let changes = diff_contracts(old, new);
    let got: Vec<(&str, ChangeKind)> =
        changes.iter().map(|change| (change.pointer.as_str(), change.kind)).collect();
    assert_eq!(got, expect, "case `{name}`: {changes:#?}");
    assert_eq!(required_bump(&changes), bump, "case `{name}`: required bump");
    for change in &changes {
        assert_eq!(change.bump, change.kind.bump(), "case `{name}`: {change:?}");
        assert!(!change.detail.is_empty(), "case `{name}`: empty detail");
    }
    assert_eq!(diff_contracts(old, new), changes, "case `{name}`: not deterministic");
    // Without the versions' folders, a reference to another file cannot be resolved, so
    // not even a document that names one equals itself: only unclassified changes then.
    let itself = diff_contracts(new, new);
    if new.to_string().contains(".json") {
        assert!(itself.iter().all(|c| c.kind == K::Unclassified), "case `{name}`: {itself:#?}");
    } else {
        assert!(itself.is_empty(), "case `{name}`: new differs from itself: {itself:#?}");
    }
}

/// `(name, old contract, new contract, expected (pointer, kind) list, required bump)`.
type Case = (&'static str, Value, Value, Vec<(&'static str, ChangeKind)>, Bump);

#[test]
fn table() {
    let object_ab = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let cases: Vec<Case> = vec![
        // --- contract level ---
        ("identical", contract(json!({})), contract(json!({})), vec![], Bump::None),
        (
            "version alone",
            contract(json!({})),
            contract(json!({"version": "9.0.0"})),
            vec![],
            Bump::None,
        ),
        (
            "editor $schema",
            contract(json!({"$schema": "a.json"})),
            contract(json!({"$schema": "b.json"})),
            vec![("/$schema", K::EditorSchemaChanged)],
            Bump::None,
        ),
        (
            "metadata entry",
            contract(json!({"metadata": {"owner": "a", "team": "x"}})),
            contract(json!({"metadata": {"owner": "b", "team": "x"}})),
            vec![("/metadata/owner", K::MetadataChanged)],
            Bump::Patch,
        ),
        (
            "offline examples",
            contract(json!({"examples": []})),
            contract(json!({"examples": [{"input": {}, "response": "{}", "expect": "ok"}]})),
            vec![("/examples", K::ExamplesChanged)],
            Bump::Patch,
        ),
        (
            "pack binding",
            contract(json!({"prompt_pack_version": "^1"})),
            contract(json!({"prompt_pack_version": "^2", "prompt_pack_id": "PRM-OTHER-001"})),
            vec![
                ("/prompt_pack_id", K::PackBindingChanged),
                ("/prompt_pack_version", K::PackBindingChanged),
            ],
            Bump::Patch,
        ),
        (
            "unknown top-level key",
            contract(json!({})),
            contract(json!({"x_team": "search"})),
            vec![("/x_team", K::ExtensionChanged)],
            Bump::Patch,
        ),
        (
            "contract id",
            contract(json!({})),
            contract(json!({"contract_id": "PRC-OTHER-001"})),
            vec![("/contract_id", K::IdentityChanged)],
            Bump::Major,
        ),
        (
            "agent class and tier",
            contract(json!({"agent_class": "ADMIN", "tier": "ho1"})),
            contract(json!({"agent_class": "RESIDENT", "tier": "ho2"})),
            vec![("/agent_class", K::AgentClassChanged), ("/tier", K::TierChanged)],
            Bump::Major,
        ),
        (
            "extraction policy",
            contract(json!({"extraction": {"repair": false}})),
            contract(json!({"extraction": {"repair": true}})),
            vec![("/extraction", K::ExtractionChanged)],
            Bump::Minor,
        ),
        (
            "semantic check",
            contract(json!({})),
            contract(json!({"semantic_check": {"judge": "PRC-JUDGE-001@^1", "criteria": "c"}})),
            vec![("/semantic_check", K::SemanticCheckChanged)],
            Bump::Minor,
        ),
        // --- boundary ---
        (
            "more max_tokens",
            contract(json!({})),
            contract(json!({"boundary": {"max_tokens": 512, "temperature": 0}})),
            vec![("/boundary/max_tokens", K::BoundaryRelaxed)],
            Bump::Minor,
        ),
        (
            "fewer max_tokens",
            contract(json!({})),
            contract(json!({"boundary": {"max_tokens": 128, "temperature": 0}})),
            vec![("/boundary/max_tokens", K::BoundaryTightened)],
            Bump::Major,
        ),
        (
            "temperature",
            contract(json!({})),
            contract(json!({"boundary": {"max_tokens": 256, "temperature": 0.7}})),
            vec![("/boundary/temperature", K::TemperatureChanged)],
            Bump::Minor,
        ),
        (
            "provider added",
            contract(json!({})),
            contract(
                json!({"boundary": {"max_tokens": 256, "temperature": 0, "provider_id": "openai"}}),
            ),
            vec![("/boundary/provider_id", K::ProviderChanged)],
            Bump::Major,
        ),
        (
            "provider removed",
            contract(
                json!({"boundary": {"max_tokens": 256, "temperature": 0, "provider_id": "openai"}}),
            ),
            contract(json!({})),
            vec![("/boundary/provider_id", K::ProviderRemoved)],
            Bump::Minor,
        ),
        (
            "unknown boundary key",
            contract(json!({})),
            contract(json!({"boundary": {"max_tokens": 256, "temperature": 0, "top_p": 1}})),
            vec![("/boundary/top_p", K::BoundaryChanged)],
            Bump::Major,
        ),
        (
            "structured output is a schema",
            contract(json!({"boundary":
                {"max_tokens": 256, "temperature": 0, "structured_output": object_ab}})),
            contract(json!({"boundary": {"max_tokens": 256, "temperature": 0, "structured_output":
                {"type": "object",
                    "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}}})),
            vec![("/boundary/structured_output/properties/b", K::AddedOptional)],
            Bump::Minor,
        ),
        // --- required context ---
        (
            "ledger query added",
            contract(json!({"required_context":
                {"ledger_queries": [{"event_type": "A", "max_entries": 5}]}})),
            contract(json!({"required_context": {"ledger_queries":
                [{"event_type": "A", "max_entries": 5}, {"event_type": "B", "max_entries": 1}]}})),
            vec![("/required_context/ledger_queries/1", K::ContextAdded)],
            Bump::Major,
        ),
        (
            "framework ref removed, file ref added",
            contract(json!({"required_context": {"framework_refs": ["FMWK-1", "FMWK-2"]}})),
            contract(json!({"required_context":
                {"framework_refs": ["FMWK-2"], "file_refs": ["docs/x.md"]}})),
            vec![
                ("/required_context/file_refs/0", K::ContextAdded),
                ("/required_context/framework_refs/0", K::ContextRemoved),
            ],
            Bump::Major,
        ),
        (
            "required context dropped",
            contract(json!({"required_context": {"file_refs": ["docs/x.md"]}})),
            contract(json!({})),
            vec![("/required_context/file_refs/0", K::ContextRemoved)],
            Bump::Minor,
        ),
        // --- schemas: patch ---
        (
            "annotations only",
            prop(json!({"type": "string", "description": "old", "default": "x"})),
            prop(json!({"type": "string", "description": "new", "title": "A", "examples": ["y"]})),
            vec![
                ("/input_schema/properties/a/default", K::AnnotationChanged),
                ("/input_schema/properties/a/description", K::AnnotationChanged),
                ("/input_schema/properties/a/examples", K::AnnotationChanged),
                ("/input_schema/properties/a/title", K::AnnotationChanged),
            ],
            Bump::Patch,
        ),
        (
            "enum reordered",
            prop(json!({"enum": ["a", "b"]})),
            prop(json!({"enum": ["b", "a"]})),
            vec![],
            Bump::None,
        ),
        (
            "const written as enum",
            prop(json!({"const": "a"})),
            prop(json!({"enum": ["a"]})),
            vec![],
            Bump::None,
        ),
        // --- schemas: properties and required ---
        (
            "optional property added",
            input(object_ab.clone()),
            input(json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {}}})),
            vec![("/input_schema/properties/b", K::AddedOptional)],
            Bump::Minor,
        ),
        (
            "optional property added to a closed object",
            input(json!({"type": "object", "additionalProperties": false, "properties": {}})),
            input(
                json!({"type": "object", "additionalProperties": false, "properties": {"b": {}}}),
            ),
            vec![("/input_schema/properties/b", K::AddedOptional)],
            Bump::Minor,
        ),
        (
            "required property added",
            input(object_ab.clone()),
            input(json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {}},
                "required": ["b"]})),
            vec![("/input_schema/properties/b", K::AddedRequired)],
            Bump::Major,
        ),
        (
            "property removed",
            input(json!({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["b"]})),
            input(json!({"type": "object", "properties": {"a": {}}})),
            vec![("/input_schema/properties/b", K::Removed)],
            Bump::Major,
        ),
        (
            "existing property becomes required",
            input(object_ab.clone()),
            input(json!({"type": "object", "properties": {"a": {"type": "string"}},
                "required": ["a"]})),
            vec![("/input_schema/required", K::RequiredAdded)],
            Bump::Major,
        ),
        (
            "required entry removed",
            input(json!({"type": "object", "properties": {"a": {}}, "required": ["a"]})),
            input(json!({"type": "object", "properties": {"a": {}}})),
            vec![("/input_schema/required", K::RequiredRemoved)],
            Bump::Minor,
        ),
        (
            "nested required property added",
            prop(json!({"type": "object", "properties": {"x": {}}})),
            prop(json!({"type": "object", "properties": {"x": {}, "y": {}}, "required": ["y"]})),
            vec![("/input_schema/properties/a/properties/y", K::AddedRequired)],
            Bump::Major,
        ),
        (
            "property now forbidden",
            input(json!({"properties": {}})),
            input(json!({"properties": {"b": false}})),
            vec![("/input_schema/properties/b", K::ConstraintAdded)],
            Bump::Major,
        ),
        // --- schemas: type and nullability ---
        (
            "retyped",
            prop(json!({"type": "string"})),
            prop(json!({"type": "integer"})),
            vec![("/input_schema/properties/a/type", K::Retyped)],
            Bump::Major,
        ),
        (
            "type widened to nullable",
            prop(json!({"type": "string"})),
            prop(json!({"type": ["string", "null"]})),
            vec![("/input_schema/properties/a/type", K::TypeWidened)],
            Bump::Minor,
        ),
        (
            "type narrowed from nullable",
            prop(json!({"type": ["null", "string"]})),
            prop(json!({"type": "string"})),
            vec![("/input_schema/properties/a/type", K::Retyped)],
            Bump::Major,
        ),
        (
            "integer widened to number",
            prop(json!({"type": "integer"})),
            prop(json!({"type": "number"})),
            vec![("/input_schema/properties/a/type", K::TypeWidened)],
            Bump::Minor,
        ),
        (
            "type restriction removed",
            prop(json!({"type": "string"})),
            prop(json!({})),
            vec![("/input_schema/properties/a/type", K::TypeWidened)],
            Bump::Minor,
        ),
        (
            "openapi nullable",
            prop(json!({"type": "string"})),
            prop(json!({"type": "string", "nullable": true})),
            vec![("/input_schema/properties/a/nullable", K::TypeWidened)],
            Bump::Minor,
        ),
        (
            "openapi nullable dropped",
            prop(json!({"type": "string", "nullable": true})),
            prop(json!({"type": "string", "nullable": false})),
            vec![("/input_schema/properties/a/nullable", K::Retyped)],
            Bump::Major,
        ),
        // --- schemas: enum and const ---
        (
            "enum widened",
            prop(json!({"enum": ["fast", "slow"]})),
            prop(json!({"enum": ["fast", "slow", "auto"]})),
            vec![("/input_schema/properties/a/enum", K::EnumWidened)],
            Bump::Minor,
        ),
        (
            "enum narrowed",
            prop(json!({"enum": ["fast", "slow"]})),
            prop(json!({"enum": ["fast"]})),
            vec![("/input_schema/properties/a/enum", K::EnumNarrowed)],
            Bump::Major,
        ),
        (
            "enum swapped a value",
            prop(json!({"enum": ["fast", "slow"]})),
            prop(json!({"enum": ["fast", "auto"]})),
            vec![("/input_schema/properties/a/enum", K::EnumNarrowed)],
            Bump::Major,
        ),
        (
            "const widened to enum",
            prop(json!({"const": "fast"})),
            prop(json!({"enum": ["fast", "slow"]})),
            vec![("/input_schema/properties/a/enum", K::EnumWidened)],
            Bump::Minor,
        ),
        (
            "enum removed",
            prop(json!({"enum": [1, 2]})),
            prop(json!({})),
            vec![("/input_schema/properties/a/enum", K::EnumWidened)],
            Bump::Minor,
        ),
        (
            "const added",
            prop(json!({})),
            prop(json!({"const": 1})),
            vec![("/input_schema/properties/a/const", K::EnumNarrowed)],
            Bump::Major,
        ),
        // --- schemas: bounds and constraints ---
        (
            "string bounds relaxed",
            prop(json!({"minLength": 3, "maxLength": 10})),
            prop(json!({"minLength": 1, "maxLength": 20})),
            vec![
                ("/input_schema/properties/a/maxLength", K::BoundRelaxed),
                ("/input_schema/properties/a/minLength", K::BoundRelaxed),
            ],
            Bump::Minor,
        ),
        (
            "string bounds tightened",
            prop(json!({"minLength": 1, "maxLength": 20})),
            prop(json!({"minLength": 3, "maxLength": 10})),
            vec![
                ("/input_schema/properties/a/maxLength", K::BoundTightened),
                ("/input_schema/properties/a/minLength", K::BoundTightened),
            ],
            Bump::Major,
        ),
        (
            "minimum removed, maximum added",
            prop(json!({"minimum": 0})),
            prop(json!({"maximum": 100})),
            vec![
                ("/input_schema/properties/a/maximum", K::BoundTightened),
                ("/input_schema/properties/a/minimum", K::BoundRelaxed),
            ],
            Bump::Major,
        ),
        (
            "minLength 0 added is no bound",
            prop(json!({"type": "string"})),
            prop(json!({"type": "string", "minLength": 0, "maximum": 5.0})),
            vec![("/input_schema/properties/a/maximum", K::BoundTightened)],
            Bump::Major,
        ),
        (
            "draft-4 boolean exclusiveMinimum",
            prop(json!({"minimum": 0})),
            prop(json!({"minimum": 0, "exclusiveMinimum": true})),
            vec![("/input_schema/properties/a/exclusiveMinimum", K::Unclassified)],
            Bump::Major,
        ),
        (
            "multipleOf relaxed",
            prop(json!({"multipleOf": 10})),
            prop(json!({"multipleOf": 5})),
            vec![("/input_schema/properties/a/multipleOf", K::BoundRelaxed)],
            Bump::Minor,
        ),
        (
            "multipleOf tightened",
            prop(json!({"multipleOf": 5})),
            prop(json!({"multipleOf": 10})),
            vec![("/input_schema/properties/a/multipleOf", K::BoundTightened)],
            Bump::Major,
        ),
        (
            "pattern removed",
            prop(json!({"type": "string", "pattern": "^[a-z]+$"})),
            prop(json!({"type": "string"})),
            vec![("/input_schema/properties/a/pattern", K::ConstraintRemoved)],
            Bump::Minor,
        ),
        (
            "pattern changed",
            prop(json!({"pattern": "^[a-z]+$"})),
            prop(json!({"pattern": "^[a-z0-9]+$"})),
            vec![("/input_schema/properties/a/pattern", K::ConstraintChanged)],
            Bump::Major,
        ),
        (
            "format added",
            prop(json!({"type": "string"})),
            prop(json!({"type": "string", "format": "email"})),
            vec![("/input_schema/properties/a/format", K::ConstraintAdded)],
            Bump::Major,
        ),
        // --- schemas: additionalProperties ---
        (
            "additionalProperties opened",
            input(json!({"type": "object", "additionalProperties": false})),
            input(json!({"type": "object"})),
            vec![("/input_schema/additionalProperties", K::AdditionalPropertiesOpened)],
            Bump::Minor,
        ),
        (
            "additionalProperties closed",
            input(json!({"type": "object"})),
            input(json!({"type": "object", "additionalProperties": false})),
            vec![("/input_schema/additionalProperties", K::AdditionalPropertiesClosed)],
            Bump::Major,
        ),
        (
            "additionalProperties true is absent",
            input(json!({"type": "object", "additionalProperties": true})),
            input(json!({"type": "object", "additionalProperties": {"description": "any"}})),
            vec![],
            Bump::None,
        ),
        (
            "additionalProperties schema retyped",
            input(json!({"additionalProperties": {"type": "string"}})),
            input(json!({"additionalProperties": {"type": "integer"}})),
            vec![("/input_schema/additionalProperties/type", K::Retyped)],
            Bump::Major,
        ),
        (
            "additionalProperties schema added",
            input(json!({"type": "object"})),
            input(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            vec![("/input_schema/additionalProperties/type", K::Retyped)],
            Bump::Major,
        ),
        (
            "additionalProperties closed to schema",
            input(json!({"additionalProperties": false})),
            input(json!({"additionalProperties": {"type": "string"}})),
            vec![("/input_schema/additionalProperties", K::AdditionalPropertiesOpened)],
            Bump::Minor,
        ),
        // --- schemas: arrays ---
        (
            "items retyped",
            prop(json!({"type": "array", "items": {"type": "string"}})),
            prop(json!({"type": "array", "items": {"type": "number"}})),
            vec![("/input_schema/properties/a/items/type", K::Retyped)],
            Bump::Major,
        ),
        (
            "items constrained where absent",
            prop(json!({"type": "array"})),
            prop(json!({"type": "array", "items": {"type": "string"}})),
            vec![("/input_schema/properties/a/items/type", K::Retyped)],
            Bump::Major,
        ),
        (
            "array sizes and uniqueness",
            prop(json!({"type": "array", "minItems": 2, "maxItems": 5})),
            prop(json!({"type": "array", "minItems": 1, "maxItems": 3, "uniqueItems": true})),
            vec![
                ("/input_schema/properties/a/maxItems", K::BoundTightened),
                ("/input_schema/properties/a/minItems", K::BoundRelaxed),
                ("/input_schema/properties/a/uniqueItems", K::ConstraintAdded),
            ],
            Bump::Major,
        ),
        (
            "uniqueItems dropped",
            prop(json!({"type": "array", "uniqueItems": true})),
            prop(json!({"type": "array"})),
            vec![("/input_schema/properties/a/uniqueItems", K::ConstraintRemoved)],
            Bump::Minor,
        ),
        (
            "prefixItems position changed and added",
            prop(json!({"prefixItems": [{"type": "string"}]})),
            prop(json!({"prefixItems": [{"type": ["string", "null"]}, {"type": "integer"}]})),
            vec![
                ("/input_schema/properties/a/prefixItems/0/type", K::TypeWidened),
                ("/input_schema/properties/a/prefixItems/1/type", K::Retyped),
            ],
            Bump::Major,
        ),
        (
            "closed tuple extended",
            prop(json!({"prefixItems": [{"type": "string"}], "items": false})),
            prop(json!({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})),
            vec![("/input_schema/properties/a/prefixItems/1", K::ConstraintRemoved)],
            Bump::Minor,
        ),
        (
            "draft-7 tuple items",
            prop(json!({"items": [{"type": "string"}, {"type": "integer"}]})),
            prop(json!({"items": [{"type": "string"}, {"type": "string"}]})),
            vec![("/input_schema/properties/a/items/1/type", K::Retyped)],
            Bump::Major,
        ),
        (
            "contains added",
            prop(json!({"type": "array"})),
            prop(json!({"type": "array", "contains": {"const": 1}})),
            vec![("/input_schema/properties/a/contains", K::ConstraintAdded)],
            Bump::Major,
        ),
        // --- schemas: combinators ---
        (
            "anyOf branch added",
            prop(json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})),
            prop(json!({"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})),
            vec![("/input_schema/properties/a/anyOf/2", K::BranchAdded)],
            Bump::Minor,
        ),
        (
            "oneOf branch removed",
            prop(json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})),
            prop(json!({"oneOf": [{"type": "integer"}]})),
            vec![("/input_schema/properties/a/oneOf/0", K::BranchRemoved)],
            Bump::Major,
        ),
        (
            "anyOf branch modified in place",
            prop(json!({"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]})),
            prop(json!({"anyOf": [{"type": "string", "maxLength": 9}, {"type": "null"}]})),
            vec![("/input_schema/properties/a/anyOf/0/maxLength", K::BoundRelaxed)],
            Bump::Minor,
        ),
        (
            "anyOf added",
            prop(json!({})),
            prop(json!({"anyOf": [{"type": "string"}]})),
            vec![("/input_schema/properties/a/anyOf", K::ConstraintAdded)],
            Bump::Major,
        ),
        (
            "allOf branch added",
            input(json!({"type": "object", "allOf": []})),
            input(json!({"type": "object", "allOf": [{"required": ["a"]}]})),
            vec![("/input_schema/allOf/0/required", K::RequiredAdded)],
            Bump::Major,
        ),
        (
            "not changed",
            prop(json!({"not": {"type": "null"}})),
            prop(json!({"not": {"type": "string"}})),
            vec![("/input_schema/properties/a/not", K::Unclassified)],
            Bump::Major,
        ),
        (
            "unknown keyword",
            prop(json!({"x-widget": "text"})),
            prop(json!({"x-widget": "area"})),
            vec![("/input_schema/properties/a/x-widget", K::UnknownKeywordChanged)],
            Bump::Major,
        ),
        (
            "schema becomes false",
            prop(json!({"type": "string"})),
            prop(json!(false)),
            vec![("/input_schema/properties/a", K::ConstraintAdded)],
            Bump::Major,
        ),
        // --- schemas: $ref ---
        (
            "change inside a referenced def",
            input(json!({"properties":
                {"home": {"$ref": "#/$defs/addr"}, "work": {"$ref": "#/$defs/addr"}},
                "$defs": {"addr": {"properties": {"zip": {"type": "string"}}}}})),
            input(json!({"properties":
                {"home": {"$ref": "#/$defs/addr"}, "work": {"$ref": "#/$defs/addr"}},
                "$defs": {"addr": {"properties": {"zip": {"type": "integer"}}}}})),
            vec![("/input_schema/$defs/addr/properties/zip/type", K::Retyped)],
            Bump::Major,
        ),
        (
            "draft-7 definitions with escaped names",
            input(json!({"properties": {"a": {"$ref": "#/definitions/a~1b%20c"}},
                "definitions": {"a/b c": {"enum": [1]}}})),
            input(json!({"properties": {"a": {"$ref": "#/definitions/a~1b%20c"}},
                "definitions": {"a/b c": {"enum": [1, 2]}}})),
            vec![("/input_schema/definitions/a~1b c/enum", K::EnumWidened)],
            Bump::Minor,
        ),
        (
            "inline schema moved behind a ref",
            input(json!({"properties": {"a": {"type": "string"}}})),
            input(json!({"properties": {"a": {"$ref": "#/$defs/text"}},
                "$defs": {"text": {"type": "string"}}})),
            vec![],
            Bump::None,
        ),
        (
            "ref retargeted",
            input(json!({"properties": {"a": {"$ref": "#/$defs/x"}},
                "$defs": {"x": {"type": "string"}, "y": {"type": ["string", "null"]}}})),
            input(json!({"properties": {"a": {"$ref": "#/$defs/y"}},
                "$defs": {"x": {"type": "string"}, "y": {"type": ["string", "null"]}}})),
            vec![("/input_schema/$defs/y/type", K::TypeWidened)],
            Bump::Minor,
        ),
        (
            "unresolvable ref changed",
            prop(json!({"$ref": "other.json#/a"})),
            prop(json!({"$ref": "other.json#/b"})),
            vec![("/input_schema/properties/a/$ref", K::Unclassified)],
            Bump::Major,
        ),
        (
            "unreferenced def changed",
            input(json!({"type": "object", "$defs": {"unused": {"type": "string"}}})),
            input(json!({"type": "object", "$defs": {"unused": {"type": "integer"}}})),
            vec![("/input_schema/$defs/unused", K::DefinitionsChanged)],
            Bump::Patch,
        ),
        // --- whole schemas ---
        (
            "output schema follows the same rules",
            contract(json!({"output_schema":
                {"type": "object", "properties": {"label": {}, "score": {}}}})),
            contract(json!({"output_schema": {"type": "object", "properties": {"label": {}}}})),
            vec![("/output_schema/properties/score", K::Removed)],
            Bump::Major,
        ),
        (
            "output schema added",
            contract(json!({})),
            contract(json!({"output_schema": {"type": "object"}})),
            vec![("/output_schema", K::OutputModeChanged)],
            Bump::Major,
        ),
        (
            "input schema added",
            contract(json!({})),
            contract(json!({"input_schema": {"type": "object"}})),
            vec![("/input_schema/type", K::Retyped)],
            Bump::Major,
        ),
        (
            "mixed changes sorted by pointer",
            contract(json!({"metadata": {"v": 1}, "input_schema": object_ab.clone()})),
            contract(json!({"metadata": {"v": 2}, "input_schema": {"type": "object",
                "properties": {"a": {"type": "string", "description": "A"}, "b": {}}}})),
            vec![
                ("/input_schema/properties/a/description", K::AnnotationChanged),
                ("/input_schema/properties/b", K::AddedOptional),
                ("/metadata/v", K::MetadataChanged),
            ],
            Bump::Minor,
        ),
    ];
    assert!(cases.len() >= 30);
    for (name, old, new, expect, bump) in &cases {
        check(name, old, new, expect, *bump);
    }
}

#[test]
fn declared_bump_follows_the_first_differing_number() {
    let v = |text: &str| Version::parse(text).unwrap();
    let from = v("1.2.3");
    assert_eq!(declared_bump(&from, &v("2.0.0")), Bump::Major);
    assert_eq!(declared_bump(&from, &v("2.5.9")), Bump::Major);
    assert_eq!(declared_bump(&from, &v("1.3.0")), Bump::Minor);
    assert_eq!(declared_bump(&from, &v("1.4.7")), Bump::Minor);
    assert_eq!(declared_bump(&from, &v("1.2.4")), Bump::Patch);
    assert_eq!(declared_bump(&from, &v("1.2.3")), Bump::None);
    assert_eq!(declared_bump(&from, &v("1.2.3+build.7")), Bump::None);
    assert_eq!(declared_bump(&v("1.2.3-rc.1"), &v("1.2.3")), Bump::None);
    assert_eq!(declared_bump(&v("0.1.0"), &v("0.2.0")), Bump::Minor);
    // Downgrades grant no room for change.
    assert_eq!(declared_bump(&from, &v("1.2.2")), Bump::None);
    assert_eq!(declared_bump(&from, &v("0.9.0")), Bump::None);
}

#[test]
fn required_bump_is_the_largest_over_changes() {
    assert_eq!(required_bump(&[]), Bump::None);
    let old = input(json!({"properties": {"a": {"description": "x"}, "b": {}}}));
    let new = input(json!({"properties": {"a": {"description": "y"}, "c": {}}}));
    let changes = diff_contracts(&old, &new);
    let kinds: Vec<ChangeKind> = changes.iter().map(|change| change.kind).collect();
    assert_eq!(kinds, [K::AnnotationChanged, K::Removed, K::AddedOptional]);
    assert_eq!(required_bump(&changes), Bump::Major);
    assert_eq!(required_bump(&changes[..1]), Bump::Patch);
    assert_eq!(required_bump(&changes[2..]), Bump::Minor);
    assert!(Bump::None < Bump::Patch && Bump::Patch < Bump::Minor && Bump::Minor < Bump::Major);
}

#[test]
fn recursive_definitions_terminate_and_report_once() {
    let tree = |label: &str| {
        json!({
            "$ref": "#/$defs/node",
            "$defs": {"node": {
                "type": "object",
                "properties": {
                    "label": {"type": label},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                    "parent": {"$ref": "#"},
                },
            }},
        })
    };
    let changes = diff_schemas(&tree("string"), &tree("integer"), "/output_schema");
    let got: Vec<(&str, ChangeKind)> =
        changes.iter().map(|change| (change.pointer.as_str(), change.kind)).collect();
    assert_eq!(got, [("/output_schema/$defs/node/properties/label/type", K::Retyped)]);

    // Mutual recursion, one side inlined one level deep.
    let old = json!({"$defs": {"a": {"properties": {"b": {"$ref": "#/$defs/b"}}},
                               "b": {"properties": {"a": {"$ref": "#/$defs/a"}}}},
                     "$ref": "#/$defs/a"});
    let new = json!({"$defs": {"a": {"properties": {"b": {"$ref": "#/$defs/b"}}},
                               "b": {"properties": {"a": {"$ref": "#/$defs/a"}, "z": {}}}},
                     "properties": {"b": {"$ref": "#/$defs/b"}}});
    let changes = diff_schemas(&old, &new, "");
    assert!(changes.iter().all(|change| change.kind == K::AddedOptional), "{changes:#?}");
    assert!(changes.iter().any(|change| change.pointer == "/$defs/b/properties/z"));

    // A self-referencing root with nothing else.
    let selfish = json!({"$ref": "#"});
    assert!(diff_schemas(&selfish, &json!({"$ref": "#", "title": "t"}), "").len() == 1);
}

/// `depth` levels of `{"type": "object", "properties": {"a": ...}}` around `leaf`.
fn nested(depth: usize, leaf: Value) -> Value {
    let mut schema = leaf;
    for _ in 0..depth {
        // Built by hand: `json!` would serialize `schema` recursively on every level.
        let mut properties = serde_json::Map::new();
        properties.insert("a".to_owned(), schema);
        let mut object = serde_json::Map::new();
        object.insert("type".to_owned(), json!("object"));
        object.insert("properties".to_owned(), Value::Object(properties));
        schema = Value::Object(object);
    }
    schema
}

#[test]
fn deep_nesting_is_bounded() {
    // Shallow enough: the exact change is found.
    let changes = diff_schemas(&nested(30, json!({})), &nested(30, json!({"type": "string"})), "");
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].kind, K::Retyped);
    assert_eq!(changes[0].pointer.matches("/properties/a").count(), 30);

    // Far past the limit: one conservative change, no stack overflow.
    let changes =
        diff_schemas(&nested(400, json!({})), &nested(400, json!({"type": "string"})), "");
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].kind, K::Unclassified);
    assert!(diff_schemas(&nested(400, json!({})), &nested(400, json!({})), "").is_empty());
}

#[test]
fn a_change_behind_a_deep_ref_chain_is_never_a_patch() {
    // d0 → d1 → … → d99: the last definition changes, 100 `$ref` hops down (issue 11).
    let chain = |leaf: &str| {
        let mut defs = serde_json::Map::new();
        for i in 0..100 {
            let next = if i == 99 {
                json!({"type": leaf})
            } else {
                json!({"$ref": format!("#/$defs/d{}", i + 1)})
            };
            defs.insert(format!("d{i}"), next);
        }
        json!({"$ref": "#/$defs/d0", "$defs": defs})
    };
    let changes = diff_schemas(&chain("string"), &chain("integer"), "/output_schema");
    assert!(
        changes.iter().any(|c| c.kind == K::Unclassified && c.bump == Bump::Major),
        "the change must not pass as a patch: {changes:#?}"
    );
    // Identical documents are equal; but when something else changed, an identical chain
    // that deep is not proven equal (the walk did not see its end): pactum says so.
    assert!(diff_schemas(&chain("string"), &chain("string"), "").is_empty());
    let mut titled = chain("string");
    titled["title"] = json!("t");
    let changes = diff_schemas(&chain("string"), &titled, "/output_schema");
    assert!(changes.iter().any(|c| c.kind == K::Unclassified), "{changes:#?}");
}

#[test]
fn large_schemas_with_shared_definitions_stay_linear() {
    // 2,000 properties, each a chain of references through 20 shared definitions: without
    // per-pair memoisation this would walk 2,000 × 20 definitions.
    let build = |leaf: &str| {
        let mut defs = serde_json::Map::new();
        for i in 0..20 {
            let next = if i == 19 {
                json!({"type": leaf})
            } else {
                json!({"properties": {"x": {"$ref": format!("#/$defs/d{}", i + 1)},
                                      "y": {"$ref": format!("#/$defs/d{}", i + 1)}}})
            };
            defs.insert(format!("d{i}"), next);
        }
        let props: serde_json::Map<String, Value> =
            (0..2_000).map(|i| (format!("p{i}"), json!({"$ref": "#/$defs/d0"}))).collect();
        json!({"type": "object", "properties": props, "$defs": defs})
    };
    let changes = diff_schemas(&build("string"), &build("integer"), "/input_schema");
    let got: Vec<(&str, ChangeKind)> =
        changes.iter().map(|change| (change.pointer.as_str(), change.kind)).collect();
    assert_eq!(got, [("/input_schema/$defs/d19/type", K::Retyped)]);
}

#[test]
fn malformed_input_never_panics() {
    let odd = [
        json!(null),
        json!(1),
        json!("text"),
        json!([1, 2]),
        json!({}),
        json!({"boundary": 3, "required_context": [], "metadata": "m"}),
        json!({"required_context": {"ledger_queries": 1, "other": 2}}),
        json!({"input_schema": 5}),
        json!({"input_schema": {"type": 5, "enum": 3, "properties": [], "required": "a",
            "items": 3, "prefixItems": {}, "anyOf": {}, "allOf": 1, "minimum": "x",
            "patternProperties": 1, "additionalProperties": 7, "multipleOf": -1,
            "uniqueItems": "yes", "nullable": 1, "$ref": 4}}),
        json!({"input_schema": {"$ref": "#/%zz"}}),
        json!({"input_schema": {"$ref": "#/%C3"}}),
        json!({"input_schema": {"$ref": "#anchor", "type": "string"}}),
        json!({"input_schema": {"$ref": "#/$defs/missing"}}),
        json!({"input_schema": {"items": [true, false], "additionalItems": false}}),
        json!({"output_schema": false, "boundary": {"structured_output": true}}),
    ];
    for old in &odd {
        for new in &odd {
            let changes = diff_contracts(old, new);
            if old == new {
                assert!(changes.is_empty(), "{old} vs itself: {changes:?}");
            }
        }
    }
}

#[test]
fn names_are_stable_and_match_serde() {
    let kinds = [
        K::EditorSchemaChanged,
        K::AnnotationChanged,
        K::DefinitionsChanged,
        K::MetadataChanged,
        K::ExamplesChanged,
        K::PackBindingChanged,
        K::ExtensionChanged,
        K::AddedOptional,
        K::TypeWidened,
        K::EnumWidened,
        K::BoundRelaxed,
        K::RequiredRemoved,
        K::AdditionalPropertiesOpened,
        K::ConstraintRemoved,
        K::BranchAdded,
        K::BoundaryRelaxed,
        K::TemperatureChanged,
        K::ProviderRemoved,
        K::ContextRemoved,
        K::ExtractionChanged,
        K::AddedRequired,
        K::Removed,
        K::Retyped,
        K::EnumNarrowed,
        K::BoundTightened,
        K::RequiredAdded,
        K::AdditionalPropertiesClosed,
        K::ConstraintAdded,
        K::ConstraintChanged,
        K::BranchRemoved,
        K::BoundaryTightened,
        K::BoundaryChanged,
        K::ProviderChanged,
        K::ContextAdded,
        K::AgentClassChanged,
        K::TierChanged,
        K::OutputModeChanged,
        K::IdentityChanged,
        K::Unclassified,
        K::UnknownKeywordChanged,
    ];
    for kind in kinds {
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
        assert_eq!(kind.to_string(), kind.as_str());
    }
    for bump in [Bump::None, Bump::Patch, Bump::Minor, Bump::Major] {
        assert_eq!(serde_json::to_value(bump).unwrap(), json!(bump.as_str()));
    }
    let change = diff_contracts(&prop(json!({"type": "string"})), &prop(json!({})));
    assert_eq!(
        serde_json::to_value(&change).unwrap(),
        json!([{
            "pointer": "/input_schema/properties/a/type",
            "kind": "type_widened",
            "bump": "minor",
            "detail": "`type` \"string\" → absent",
        }])
    );
}

// --- Every reference form is compared by what it resolves to (issue 22) ------------------

/// `input_schema` = `{"properties": {"text": reference}, "$defs": defs}`: `defs` holds
/// what the reference leads to.
fn referencing(reference: Value, defs: Value) -> Value {
    input(json!({"type": "object", "properties": {"text": reference}, "$defs": defs}))
}

/// The changes between two versions, with the kinds only.
fn kinds(old: &Value, new: &Value) -> Vec<(String, ChangeKind)> {
    diff_contracts(old, new).into_iter().map(|c| (c.pointer, c.kind)).collect()
}

/// One reference form: the same reference, its target tightened (major) or only
/// re-described (patch). `wrap` builds `(reference, defs)` around a target schema.
fn check_form(name: &str, wrap: impl Fn(Value) -> (Value, Value), at: &str) {
    let target = json!({"type": "string"});
    let tightened = json!({"type": "string", "maxLength": 10});
    let described = json!({"type": "string", "description": "the text to classify"});
    let version = |t: Value| {
        let (reference, defs) = wrap(t);
        referencing(reference, defs)
    };
    let (old, major, patch) = (version(target), version(tightened), version(described));
    let changes = diff_contracts(&old, &major);
    assert_eq!(
        kinds(&old, &major),
        [(format!("{at}/maxLength"), K::BoundTightened)],
        "{name}: a tightened target is major"
    );
    assert_eq!(required_bump(&changes), Bump::Major, "{name}");
    let changes = diff_contracts(&old, &patch);
    assert_eq!(
        kinds(&old, &patch),
        [(format!("{at}/description"), K::AnnotationChanged)],
        "{name}: a re-described target is a patch"
    );
    assert_eq!(required_bump(&changes), Bump::Patch, "{name}");
    assert!(diff_contracts(&old, &old).is_empty(), "{name}");
}

#[test]
fn a_json_pointer_reference_is_compared_by_its_target() {
    check_form(
        "pointer",
        |t| (json!({"$ref": "#/$defs/text"}), json!({"text": t})),
        "/input_schema/$defs/text",
    );
}

#[test]
fn an_anchor_reference_is_compared_by_its_target() {
    // The reported attack: `"$ref": "#text"` to a definition with `"$anchor": "text"`;
    // tightening the definition was classed a patch.
    check_form(
        "anchor",
        |mut t| {
            t["$anchor"] = json!("text");
            (json!({"$ref": "#text"}), json!({"named": t}))
        },
        "/input_schema/$defs/named",
    );
}

#[test]
fn a_dynamic_reference_is_compared_by_every_target_it_may_pick() {
    check_form(
        "dynamic",
        |mut t| {
            t["$dynamicAnchor"] = json!("text");
            (json!({"$dynamicRef": "#text"}), json!({"dyn": t}))
        },
        "/input_schema/$defs/dyn",
    );
    // Two dynamic anchors of that name: either may be picked, both are compared.
    let two = |limit: u64| {
        referencing(
            json!({"$dynamicRef": "#text"}),
            json!({"a": {"$dynamicAnchor": "text", "type": "string"},
                   "b": {"$dynamicAnchor": "text", "type": "string", "maxLength": limit}}),
        )
    };
    assert_eq!(
        kinds(&two(10), &two(5)),
        [("/input_schema/$defs/b/maxLength".into(), K::BoundTightened)]
    );
    // One more place the scope may pick: not provably the same.
    let mut three = two(10);
    three["input_schema"]["$defs"]["c"] = json!({"$dynamicAnchor": "text"});
    assert!(kinds(&two(10), &three).iter().any(|(_, k)| *k == K::Unclassified));
}

#[test]
fn an_id_relative_reference_is_compared_by_its_target() {
    check_form(
        "$id",
        |mut t| {
            t["$id"] = json!("text.json");
            (json!({"$ref": "text.json"}), json!({"embedded": t}))
        },
        "/input_schema/$defs/embedded",
    );
    // Resolved against an embedded resource's own base, not the document's.
    let nested = |limit: u64| {
        referencing(
            json!({"$ref": "https://example.com/a/b.json#x"}),
            json!({"b": {"$id": "https://example.com/a/b.json",
                         "$defs": {"x": {"$anchor": "x", "type": "string", "maxLength": limit}}}}),
        )
    };
    assert_eq!(
        kinds(&nested(10), &nested(5)),
        [("/input_schema/$defs/b/$defs/x/maxLength".into(), K::BoundTightened)]
    );
}

#[test]
fn a_reference_that_resolves_nowhere_is_never_assumed_equal() {
    // The same text on both sides, but no target: not provably compatible.
    let unresolved = |title: &str| {
        let mut contract = referencing(json!({"$ref": "#nowhere"}), json!({}));
        contract["input_schema"]["title"] = json!(title);
        contract
    };
    let changes = diff_contracts(&unresolved("a"), &unresolved("b"));
    assert!(
        changes.iter().any(|c| c.kind == K::Unclassified && c.bump == Bump::Major),
        "{changes:#?}"
    );
    // A value compared as a whole (`not`) whose reference target changed is not equal.
    let negated = |limit: u64| {
        input(json!({"not": {"$ref": "#n"}, "$defs": {"n": {"$anchor": "n", "maxLength": limit}}}))
    };
    let changes = diff_contracts(&negated(10), &negated(5));
    assert!(
        changes.iter().any(|c| c.pointer == "/input_schema/not" && c.kind == K::Unclassified),
        "{changes:#?}"
    );
}

#[test]
fn a_file_reference_is_compared_by_the_file_it_resolves_to() {
    use crate::compat::{Origin, Origins, diff_contracts_at};
    use crate::schema::graph::{ProjectFiles, folder_uri};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("contracts/t")).unwrap();
    std::fs::create_dir_all(root.join("common")).unwrap();
    let write = |name: &str, schema: Value| {
        std::fs::write(root.join("common").join(name), schema.to_string()).unwrap();
    };
    write("text.json", json!({"type": "string"}));
    write("text-tight.json", json!({"type": "string", "maxLength": 10}));
    write("text-described.json", json!({"type": "string", "description": "the text"}));
    let files = ProjectFiles::new(root);
    let base = folder_uri(&root.join("contracts/t"));
    let origins = Origins { old: Origin::new(&base, &files), new: Origin::new(&base, &files) };
    let version =
        |file: &str| referencing(json!({"$ref": format!("../../common/{file}")}), json!({}));
    let diff = |old: &str, new: &str| -> Vec<(String, ChangeKind)> {
        diff_contracts_at(&version(old), &version(new), &origins)
            .into_iter()
            .map(|c| (c.pointer, c.kind))
            .collect()
    };
    assert_eq!(diff("text.json", "text.json"), []);
    assert_eq!(
        diff("text.json", "text-tight.json"),
        [("common/text-tight.json#/maxLength".into(), K::BoundTightened)]
    );
    assert_eq!(
        diff("text.json", "text-described.json"),
        [("common/text-described.json#/description".into(), K::AnnotationChanged)]
    );
    // A file outside the project, or missing, resolves nowhere: major.
    let missing = diff("text.json", "gone.json");
    assert!(
        missing.iter().all(|(_, k)| *k == K::Unclassified) && !missing.is_empty(),
        "{missing:?}"
    );
    // Without the folders (`diff_contracts`), a file reference is not provably anything.
    let detached = diff_contracts(&version("text.json"), &version("text.json"));
    assert!(detached.iter().any(|c| c.kind == K::Unclassified), "{detached:#?}");
    // The same file text behind a reference that moved is still the same schema.
    std::fs::create_dir_all(root.join("contracts/t2")).unwrap();
    let moved = Origin::new(&base, &files);
    let other = folder_uri(&root.join("contracts/t2"));
    let origins = Origins { old: moved, new: Origin::new(&other, &files) };
    assert!(diff_contracts_at(&version("text.json"), &version("text.json"), &origins).is_empty());
}

/// `n` properties, each an anchor reference into a block of definitions that refer to each
/// other through anchors; the last definition of every block has `leaf`.
fn anchored_blocks(n: usize, leaf: Value) -> Value {
    let mut defs = serde_json::Map::new();
    let mut properties = serde_json::Map::new();
    for i in 0..n {
        let def = if i % 4 == 3 {
            let mut last = leaf.clone();
            last["$anchor"] = json!(format!("a{i}"));
            last
        } else {
            let next = format!("#a{}", i + 1);
            json!({"$anchor": format!("a{i}"), "anyOf": [{"$ref": next}, {"not": {"$ref": next}}]})
        };
        defs.insert(format!("d{i}"), def);
        properties.insert(format!("p{i}"), json!({"$ref": format!("#a{}", i - i % 4)}));
    }
    input(json!({"type": "object", "properties": properties, "$defs": defs}))
}

/// The work counted: the schemas the diff compares, the values `same` compares, the graphs'
/// walks and reference resolutions, and every allocation.
#[test]
fn the_diff_of_resolved_references_is_linear_in_the_schema() {
    crate::work::assert_linear("the diff of resolved references", 300, |n| {
        let old = anchored_blocks(n, json!({"type": "string"}));
        let new = anchored_blocks(n, json!({"type": "string", "maxLength": 3}));
        let (changes, work) = crate::work::counted(|| diff_contracts(&old, &new));
        assert_eq!(required_bump(&changes), Bump::Major);
        work
    });
}

/// A property schema parsed from JSON text, as a contract file is read: big integers stay
/// integers (`u64`/`i64`), never rounded through `f64`.
fn prop_text(schema: &str) -> Value {
    prop(serde_json::from_str(schema).unwrap())
}

#[test]
fn numbers_beyond_f64_precision_are_compared_exactly() {
    // 2^53 + 1 and 2^53 are the same f64: compared as f64 every one of these tightenings
    // would read as "no change" and pass as a patch.
    let cases: &[(&str, &str, &str, ChangeKind)] = &[
        (
            "maximum",
            r#"{"maximum": 9007199254740993}"#,
            r#"{"maximum": 9007199254740992}"#,
            K::BoundTightened,
        ),
        (
            "minimum",
            r#"{"minimum": 9007199254740992}"#,
            r#"{"minimum": 9007199254740993}"#,
            K::BoundTightened,
        ),
        (
            "exclusiveMaximum",
            r#"{"exclusiveMaximum": 18446744073709551615}"#,
            r#"{"exclusiveMaximum": 18446744073709551614}"#,
            K::BoundTightened,
        ),
        (
            "exclusiveMinimum",
            r#"{"exclusiveMinimum": -9223372036854775807}"#,
            r#"{"exclusiveMinimum": -9223372036854775806}"#,
            K::BoundTightened,
        ),
        (
            "maxLength",
            r#"{"maxLength": 9007199254740993}"#,
            r#"{"maxLength": 9007199254740992}"#,
            K::BoundTightened,
        ),
        (
            "minItems",
            r#"{"minItems": 9007199254740992}"#,
            r#"{"minItems": 9007199254740993}"#,
            K::BoundTightened,
        ),
        (
            "integer against float",
            r#"{"maximum": 9007199254740993}"#,
            r#"{"maximum": 9007199254740992.0}"#,
            K::BoundTightened,
        ),
        (
            "multipleOf",
            r#"{"multipleOf": 9007199254740992}"#,
            r#"{"multipleOf": 9007199254740993}"#,
            K::BoundTightened,
        ),
        (
            "enum",
            r#"{"enum": [9007199254740992, 9007199254740993]}"#,
            r#"{"enum": [9007199254740992]}"#,
            K::EnumNarrowed,
        ),
        (
            "const",
            r#"{"const": 9007199254740993}"#,
            r#"{"const": 9007199254740992}"#,
            K::EnumNarrowed,
        ),
    ];
    for (name, old, new, kind) in cases {
        let (old, new) = (prop_text(old), prop_text(new));
        let changes = diff_contracts(&old, &new);
        assert!(
            changes.iter().any(|c| c.kind == *kind),
            "case `{name}`: expected {kind:?} in {changes:#?}"
        );
        assert_eq!(required_bump(&changes), Bump::Major, "case `{name}`: {changes:#?}");
    }
    // The same value spelled two ways is no change.
    for (old, new) in [
        (r#"{"maximum": 10}"#, r#"{"maximum": 10.0}"#),
        (r#"{"enum": [1, 2]}"#, r#"{"enum": [2.0, 1.0]}"#),
        (r#"{"const": 0}"#, r#"{"const": -0.0}"#),
        (r#"{"multipleOf": 2}"#, r#"{"multipleOf": 2.0}"#),
    ] {
        let changes = diff_contracts(&prop_text(old), &prop_text(new));
        assert!(changes.is_empty(), "{old} → {new}: {changes:#?}");
    }
    // A relaxation by one unit past 2^53 is still seen, and is minor.
    let changes = diff_contracts(
        &prop_text(r#"{"maximum": 9007199254740992}"#),
        &prop_text(r#"{"maximum": 9007199254740993}"#),
    );
    assert_eq!(required_bump(&changes), Bump::Minor, "{changes:#?}");
}

#[test]
fn max_tokens_beyond_f64_precision_is_compared_exactly() {
    let with = |tokens: &str| {
        let boundary: Value =
            serde_json::from_str(&format!(r#"{{"max_tokens": {tokens}, "temperature": 0}}"#))
                .unwrap();
        contract(json!({ "boundary": boundary }))
    };
    let changes = diff_contracts(&with("9007199254740993"), &with("9007199254740992"));
    let kinds: Vec<ChangeKind> = changes.iter().map(|c| c.kind).collect();
    assert_eq!(kinds, vec![K::BoundaryTightened], "{changes:#?}");
    assert_eq!(required_bump(&changes), Bump::Major);
    assert!(diff_contracts(&with("256"), &with("256.0")).is_empty());
}

/// The work counted: the values keyed or compared (a comparison of every pair would be
/// quadratic), the rest of the diff, and every allocation.
#[test]
fn comparing_enums_is_linear_in_their_values() {
    crate::work::assert_linear("comparing enums", 4_000, |n| {
        // Big integers, a float spelling of each and strings: every value goes through the
        // exact key.
        let values = |skip: usize| -> Vec<Value> {
            (0..n)
                .filter(|i| *i != skip)
                .map(|i| match i % 3 {
                    0 => json!(9_007_199_254_740_993_u64 + i as u64),
                    1 => json!(i as f64),
                    _ => json!(format!("v{i}")),
                })
                .collect()
        };
        let old = prop(json!({"enum": values(usize::MAX)}));
        let new = prop(json!({"enum": values(n / 2)}));
        let (changes, work) = crate::work::counted(|| diff_contracts(&old, &new));
        assert_eq!(required_bump(&changes), Bump::Major);
        work
    });
}
