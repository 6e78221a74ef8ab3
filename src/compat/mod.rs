//! Compatibility diff between two versions of a prompt contract (SPEC §7).
//!
//! Semantic versioning applied to prompt I/O, in the spirit of a schema registry's
//! compatibility checks:
//!
//! - **Patch** may change metadata, annotations (`title`, `description`, `examples`,
//!   `$comment`, `default`, ...), the offline `examples` and the pack binding.
//! - **Minor** may also add optional properties, add enum values, widen types and relax
//!   constraints (wider bounds, removed `pattern`, opened `additionalProperties`, fewer
//!   `required` names, more `max_tokens`, less required context).
//! - **Major** is needed for anything else: a new required field, a removed or retyped
//!   property, a narrowed enum, a tightened constraint, and any change this module cannot
//!   classify precisely.
//!
//! The same rules apply to `input_schema`, `output_schema` and
//! `boundary.structured_output`. The diff is *semantic*: a rewrite that validates exactly
//! the same values (reordered `enum`, an inline schema moved behind a `$ref`, `const`
//! written as a one-value `enum`) produces no change. References are compared by what
//! they resolve to — a JSON pointer, an anchor, a dynamic anchor, an embedded `$id`, a
//! schema file of the project — never by their text, and a reference that cannot be
//! resolved is a major change (SPEC §18).
//!
//! Decisions beyond SPEC §7:
//!
//! - Annotations are `title`, `description`, `examples`, `$comment`, `default`,
//!   `deprecated`, `readOnly`, `writeOnly`: changing them is a patch. The top-level
//!   `$schema` is an editor hint and needs no bump at all.
//! - `boundary.temperature` changes are minor; `provider_id` added or changed is major,
//!   removed is minor. `output_schema` appearing or disappearing is major (the contract
//!   switches between text and JSON); a missing `input_schema` or `structured_output` is
//!   the schema `true`, so adding one reports what it now constrains.
//! - `required_context` entries are matched by equality: a modified ledger query is one
//!   removal plus one addition, hence major.
//! - Adding a `oneOf` branch is minor like an `anyOf` branch, as schema registries treat
//!   sum-type extension, although it can make a value match two branches.
//! - Unknown keywords (including `x-` extensions), `not`, `if`/`then`/`else`,
//!   `dependent*`, `$id`, `$anchor`, `$dynamicAnchor`, nested `$schema`,
//!   `patternProperties` entries added or removed, and `format`/`pattern` changes are
//!   major; so are `not`, `if`/`then`/`else` and `dependent*` whose text is unchanged but
//!   whose references now lead to schemas that differ.
//!
//! Every [`ChangeKind`] has exactly one [`Bump`] ([`ChangeKind::bump`]); the bump a new
//! version needs is the largest one over its changes ([`required_bump`]), and the bump it
//! declares comes from the two version numbers ([`declared_bump`]).
//!
//! This module is pure apart from the files its [`Origins`] read (through
//! [`crate::schema::graph::Files`], confined to the project): it works on
//! `serde_json::Value`s in memory, never panics, and is bounded (schemas are compared to a
//! fixed depth, each pair of reference targets at most once).
//!
//! ```
//! use pactum::compat::{Bump, ChangeKind, diff_contracts, required_bump};
//! use serde_json::json;
//!
//! let old = json!({"contract_id": "PRC-CLASSIFY-001", "version": "1.0.0",
//!     "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}});
//! let new = json!({"contract_id": "PRC-CLASSIFY-001", "version": "1.1.0",
//!     "input_schema": {"type": "object", "properties": {"text": {"type": "string"},
//!         "lang": {"type": "string"}}}});
//!
//! let changes = diff_contracts(&old, &new);
//! assert_eq!(changes.len(), 1);
//! assert_eq!(changes[0].pointer, "/input_schema/properties/lang");
//! assert_eq!(changes[0].kind, ChangeKind::AddedOptional);
//! assert_eq!(required_bump(&changes), Bump::Minor);
//! ```

use std::collections::BTreeSet;
use std::fmt;
use std::sync::OnceLock;

use semver::Version;
use serde::Serialize;
use serde_json::{Map, Value};

pub use crate::schema::graph::Origin;

mod contract;
mod number;
mod schema;
#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests;

/// How much a version number must move to allow a change, from none to major.
///
/// Ordered: `None < Patch < Minor < Major`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bump {
    /// No version change needed.
    None,
    /// `x.y.Z`: metadata, annotations, fixtures, pack binding.
    Patch,
    /// `x.Y.0`: backward-compatible additions and relaxations.
    Minor,
    /// `X.0.0`: anything else.
    Major,
}

impl Bump {
    /// The stable lowercase name: `none`, `patch`, `minor`, `major`.
    pub fn as_str(self) -> &'static str {
        match self {
            Bump::None => "none",
            Bump::Patch => "patch",
            Bump::Minor => "minor",
            Bump::Major => "major",
        }
    }
}

impl fmt::Display for Bump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What changed between two versions of a contract. Each kind needs one fixed [`Bump`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeKind {
    // --- none ---
    /// The top-level `$schema` (an editor hint) changed.
    EditorSchemaChanged,

    // --- patch ---
    /// A schema annotation changed: `title`, `description`, `examples`, `$comment`,
    /// `default`, `deprecated`, `readOnly`, `writeOnly`.
    AnnotationChanged,
    /// A root `$defs`/`definitions` entry that no `$ref` reaches changed.
    DefinitionsChanged,
    /// A `metadata` entry changed.
    MetadataChanged,
    /// The contract's offline `examples` (fixtures) changed.
    ExamplesChanged,
    /// `prompt_pack_id` or `prompt_pack_version` changed.
    PackBindingChanged,
    /// An unknown top-level key (forward-compatible extension) changed.
    ExtensionChanged,

    // --- minor ---
    /// A property was added and is not required.
    AddedOptional,
    /// `type` accepts more types (or `nullable` became true).
    TypeWidened,
    /// `enum`/`const` accepts more values.
    EnumWidened,
    /// A numeric bound moved outward (`minimum` down, `maxLength` up, ...).
    BoundRelaxed,
    /// A name left `required`.
    RequiredRemoved,
    /// `additionalProperties` (or `unevaluatedProperties`) now allows more.
    AdditionalPropertiesOpened,
    /// A constraint was removed (`pattern`, `format`, `uniqueItems`, `contains`, ...).
    ConstraintRemoved,
    /// An `anyOf`/`oneOf` branch was added.
    BranchAdded,
    /// `boundary.max_tokens` went up.
    BoundaryRelaxed,
    /// `boundary.temperature` changed.
    TemperatureChanged,
    /// `boundary.provider_id` was removed (any provider may serve the contract).
    ProviderRemoved,
    /// A `required_context` entry was removed: callers assemble less.
    ContextRemoved,
    /// The `extraction` policy changed.
    ExtractionChanged,
    /// The `semantic_check` (its judge, criteria or `on_fail`) was added, changed or
    /// removed: which outputs stand changes, not their shape.
    SemanticCheckChanged,

    // --- major ---
    /// A property was added and is required.
    AddedRequired,
    /// A property was removed.
    Removed,
    /// `type` changed to something that does not accept every old type.
    Retyped,
    /// `enum`/`const` no longer accepts some old value (or now restricts values).
    EnumNarrowed,
    /// A numeric bound moved inward (`minimum` up, `maxLength` down, ...).
    BoundTightened,
    /// A name joined `required`.
    RequiredAdded,
    /// `additionalProperties` (or `unevaluatedProperties`) now allows less.
    AdditionalPropertiesClosed,
    /// A constraint was added (`pattern`, `format`, `uniqueItems`, `anyOf`, ...).
    ConstraintAdded,
    /// A constraint changed in a way that is not a pure relaxation (`pattern`, `format`).
    ConstraintChanged,
    /// An `anyOf`/`oneOf` branch was removed.
    BranchRemoved,
    /// `boundary.max_tokens` went down.
    BoundaryTightened,
    /// Any other `boundary` change.
    BoundaryChanged,
    /// `boundary.provider_id` was added or changed.
    ProviderChanged,
    /// A `required_context` entry was added: callers must assemble more.
    ContextAdded,
    /// `agent_class` changed.
    AgentClassChanged,
    /// `tier` changed.
    TierChanged,
    /// `output_schema` appeared or disappeared: the contract switched between text and JSON.
    OutputModeChanged,
    /// `contract_id` changed: the two documents are different contracts.
    IdentityChanged,
    /// A known keyword changed in a way this module cannot classify precisely.
    Unclassified,
    /// A schema keyword this module does not know changed.
    UnknownKeywordChanged,
}

impl ChangeKind {
    /// The stable `snake_case` name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::EditorSchemaChanged => "editor_schema_changed",
            ChangeKind::AnnotationChanged => "annotation_changed",
            ChangeKind::DefinitionsChanged => "definitions_changed",
            ChangeKind::MetadataChanged => "metadata_changed",
            ChangeKind::ExamplesChanged => "examples_changed",
            ChangeKind::PackBindingChanged => "pack_binding_changed",
            ChangeKind::ExtensionChanged => "extension_changed",
            ChangeKind::AddedOptional => "added_optional",
            ChangeKind::TypeWidened => "type_widened",
            ChangeKind::EnumWidened => "enum_widened",
            ChangeKind::BoundRelaxed => "bound_relaxed",
            ChangeKind::RequiredRemoved => "required_removed",
            ChangeKind::AdditionalPropertiesOpened => "additional_properties_opened",
            ChangeKind::ConstraintRemoved => "constraint_removed",
            ChangeKind::BranchAdded => "branch_added",
            ChangeKind::BoundaryRelaxed => "boundary_relaxed",
            ChangeKind::TemperatureChanged => "temperature_changed",
            ChangeKind::ProviderRemoved => "provider_removed",
            ChangeKind::ContextRemoved => "context_removed",
            ChangeKind::ExtractionChanged => "extraction_changed",
            ChangeKind::SemanticCheckChanged => "semantic_check_changed",
            ChangeKind::AddedRequired => "added_required",
            ChangeKind::Removed => "removed",
            ChangeKind::Retyped => "retyped",
            ChangeKind::EnumNarrowed => "enum_narrowed",
            ChangeKind::BoundTightened => "bound_tightened",
            ChangeKind::RequiredAdded => "required_added",
            ChangeKind::AdditionalPropertiesClosed => "additional_properties_closed",
            ChangeKind::ConstraintAdded => "constraint_added",
            ChangeKind::ConstraintChanged => "constraint_changed",
            ChangeKind::BranchRemoved => "branch_removed",
            ChangeKind::BoundaryTightened => "boundary_tightened",
            ChangeKind::BoundaryChanged => "boundary_changed",
            ChangeKind::ProviderChanged => "provider_changed",
            ChangeKind::ContextAdded => "context_added",
            ChangeKind::AgentClassChanged => "agent_class_changed",
            ChangeKind::TierChanged => "tier_changed",
            ChangeKind::OutputModeChanged => "output_mode_changed",
            ChangeKind::IdentityChanged => "identity_changed",
            ChangeKind::Unclassified => "unclassified",
            ChangeKind::UnknownKeywordChanged => "unknown_keyword_changed",
        }
    }

    /// The smallest version bump that allows this kind of change.
    pub fn bump(self) -> Bump {
        match self {
            ChangeKind::EditorSchemaChanged => Bump::None,
            ChangeKind::AnnotationChanged
            | ChangeKind::DefinitionsChanged
            | ChangeKind::MetadataChanged
            | ChangeKind::ExamplesChanged
            | ChangeKind::PackBindingChanged
            | ChangeKind::ExtensionChanged => Bump::Patch,
            ChangeKind::AddedOptional
            | ChangeKind::TypeWidened
            | ChangeKind::EnumWidened
            | ChangeKind::BoundRelaxed
            | ChangeKind::RequiredRemoved
            | ChangeKind::AdditionalPropertiesOpened
            | ChangeKind::ConstraintRemoved
            | ChangeKind::BranchAdded
            | ChangeKind::BoundaryRelaxed
            | ChangeKind::TemperatureChanged
            | ChangeKind::ProviderRemoved
            | ChangeKind::ContextRemoved
            | ChangeKind::ExtractionChanged
            | ChangeKind::SemanticCheckChanged => Bump::Minor,
            ChangeKind::AddedRequired
            | ChangeKind::Removed
            | ChangeKind::Retyped
            | ChangeKind::EnumNarrowed
            | ChangeKind::BoundTightened
            | ChangeKind::RequiredAdded
            | ChangeKind::AdditionalPropertiesClosed
            | ChangeKind::ConstraintAdded
            | ChangeKind::ConstraintChanged
            | ChangeKind::BranchRemoved
            | ChangeKind::BoundaryTightened
            | ChangeKind::BoundaryChanged
            | ChangeKind::ProviderChanged
            | ChangeKind::ContextAdded
            | ChangeKind::AgentClassChanged
            | ChangeKind::TierChanged
            | ChangeKind::OutputModeChanged
            | ChangeKind::IdentityChanged
            | ChangeKind::Unclassified
            | ChangeKind::UnknownKeywordChanged => Bump::Major,
        }
    }
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One difference between two contract versions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// RFC 6901 pointer into the new contract, or into the old one when the thing was
    /// removed. A change inside a `$ref`erenced definition points at the definition.
    pub pointer: String,
    /// What changed.
    pub kind: ChangeKind,
    /// The smallest bump allowing this change; always `kind.bump()`.
    pub bump: Bump,
    /// A human sentence naming the thing and the values involved.
    pub detail: String,
}

impl Change {
    fn new(pointer: String, kind: ChangeKind, detail: String) -> Self {
        Change { pointer, kind, bump: kind.bump(), detail }
    }
}

/// Where each of the two versions' schemas resolve references to other files: each
/// version's folder and the files it may read ([`Origin`]).
#[derive(Clone, Copy)]
pub struct Origins<'f> {
    pub old: Origin<'f>,
    pub new: Origin<'f>,
}

impl Origins<'static> {
    /// Versions whose folders are unknown: references inside each schema resolve,
    /// references to other files do not (and so need a major bump).
    pub fn detached() -> Origins<'static> {
        Origins { old: Origin::detached(), new: Origin::detached() }
    }
}

/// Every difference between two versions of a contract, sorted by pointer, then kind.
///
/// Both arguments are whole contract documents. `version` itself is not compared (see
/// [`declared_bump`]); anything that is not a JSON object is compared as a whole. The
/// versions' folders are not known here: a schema that references another file is
/// compared with [`diff_contracts_at`], or its references count as unresolved (major).
#[must_use]
pub fn diff_contracts(old: &Value, new: &Value) -> Vec<Change> {
    diff_contracts_at(old, new, &Origins::detached())
}

/// [`diff_contracts`] for two versions whose schemas resolve references from `origins`
/// (their folders, and the project's files).
#[must_use]
pub fn diff_contracts_at(old: &Value, new: &Value, origins: &Origins<'_>) -> Vec<Change> {
    let mut changes = Vec::new();
    contract::diff(old, new, origins, &mut changes);
    finish(changes)
}

/// Every difference between two standalone JSON Schema documents, with pointers prefixed
/// by `base_pointer` (e.g. `"/input_schema"`, or `""` for a schema file of its own).
///
/// References inside each document resolve there (`#/$defs/x`, `#anchor`, an embedded
/// `$id`, a `$dynamicRef`); references to other files do not (see [`diff_contracts_at`]).
#[must_use]
pub fn diff_schemas(old: &Value, new: &Value, base_pointer: &str) -> Vec<Change> {
    let mut changes = Vec::new();
    schema::diff_document(Some(old), Some(new), base_pointer, &Origins::detached(), &mut changes);
    finish(changes)
}

/// The bump a set of changes needs: the largest over them, [`Bump::None`] when empty.
#[must_use]
pub fn required_bump(changes: &[Change]) -> Bump {
    changes.iter().map(|change| change.bump).max().unwrap_or(Bump::None)
}

/// The changes a `declared` bump is too small for, as `pointer kind (bump)` lines.
pub fn beyond(changes: &[Change], declared: Bump) -> Vec<String> {
    changes
        .iter()
        .filter(|c| c.bump > declared)
        .map(|c| format!("{} {} ({})", c.pointer, c.kind.as_str(), c.bump.as_str()))
        .collect()
}

/// The bump that going from version `from` to version `to` declares.
///
/// The first of major, minor and patch that differs decides: `1.2.3 → 2.0.0` is
/// [`Bump::Major`], `→ 1.3.0` [`Bump::Minor`], `→ 1.2.4` [`Bump::Patch`]. Pre-release and
/// build metadata are ignored, so equal triples give [`Bump::None`]. `0.x` versions get no
/// special treatment. A downgrade (`to < from`) declares [`Bump::None`]: it grants no room
/// for change, so any real change fails the check; whether a downgrade is allowed at all
/// is the registry's decision.
#[must_use]
pub fn declared_bump(from: &Version, to: &Version) -> Bump {
    let from_triple = (from.major, from.minor, from.patch);
    let to_triple = (to.major, to.minor, to.patch);
    if to_triple <= from_triple {
        Bump::None
    } else if to.major != from.major {
        Bump::Major
    } else if to.minor != from.minor {
        Bump::Minor
    } else {
        Bump::Patch
    }
}

/// Sorts changes into their stable order and drops exact duplicates.
fn finish(mut changes: Vec<Change>) -> Vec<Change> {
    changes.sort_by(|a, b| (&a.pointer, a.kind, &a.detail).cmp(&(&b.pointer, b.kind, &b.detail)));
    changes.dedup();
    changes
}

/// `pointer` extended by one reference token, escaped per RFC 6901.
fn child(pointer: &str, token: &str) -> String {
    let mut out = String::with_capacity(pointer.len() + token.len() + 1);
    out.push_str(pointer);
    out.push('/');
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

/// A compact rendering of a JSON value for change details, cut to a readable length.
fn show(value: Option<&Value>) -> String {
    const LIMIT: usize = 80;
    let Some(value) = value else { return "absent".to_owned() };
    let text = value.to_string();
    let mut short: String = text.chars().take(LIMIT).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// Every key of either object, in order, once.
fn all_keys<'v>(old: &'v Map<String, Value>, new: &'v Map<String, Value>) -> BTreeSet<&'v String> {
    old.keys().chain(new.keys()).collect()
}

/// The keys whose values differ between two objects, in order, with the old and new value
/// (`None` where the key is absent). Numbers differ by value, not by spelling
/// ([`number::same_value`]: `0` is `0.0`).
fn changed<'v>(
    old: &'v Map<String, Value>,
    new: &'v Map<String, Value>,
) -> impl Iterator<Item = (&'v String, Option<&'v Value>, Option<&'v Value>)> {
    all_keys(old, new).into_iter().map(|key| (key, old.get(key), new.get(key))).filter(
        |(_, old, new)| match (old, new) {
            (Some(old), Some(new)) => !number::same_value(old, new),
            _ => old != new,
        },
    )
}

/// An optional JSON object: absent reads as empty, anything but an object as `None`.
fn object(value: Option<&Value>) -> Option<&Map<String, Value>> {
    static EMPTY: OnceLock<Map<String, Value>> = OnceLock::new();
    match value {
        None => Some(EMPTY.get_or_init(Map::new)),
        Some(Value::Object(map)) => Some(map),
        Some(_) => None,
    }
}
