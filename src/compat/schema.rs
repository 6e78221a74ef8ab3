//! Semantic diff of two JSON Schema documents (draft 2020-12, with the draft-7 tuple
//! `items` and the `OpenAPI` `nullable` understood too).
//!
//! The walk compares the two documents keyword by keyword, recursing into subschemas.
//! A missing subschema slot is the `true` schema, so `items` appearing is compared as
//! `{}` → the new schema and every keyword inside gets its own precise change.
//!
//! References are compared by what they resolve to, never by their text: each document's
//! resolved graph ([`crate::schema::graph`], the same reading of `$ref`, `$anchor`,
//! `$dynamicRef`/`$dynamicAnchor`, `$recursiveRef`, embedded `$id`s and schema files that
//! the validator and the cost measure use) gives every reference's target, and the two
//! targets are compared as schemas. Changes found behind a reference are reported where
//! the target is: a definition of the schema (`/input_schema/$defs/address/...`) or a
//! referenced file (`common/address.json#/properties/zip`). Each pair of targets is
//! compared once: that both bounds the work on schemas that reuse definitions and stops
//! recursive definitions from looping. A reference that resolves on neither side or on
//! one side only, a dynamic reference whose possible targets differ in number, and a
//! `$ref` with validation keywords beside it compared against an inline schema are
//! unclassified (major): what cannot be proven compatible needs a major bump (SPEC §18).
//! Keywords compared as values (`not`, `if`/`then`/`else`, `dependentSchemas`, ...) are
//! equal only when their references lead to schemas that are the same in turn
//! ([`Differ::same`]).
//!
//! Limits: the walk stops at [`MAX_DEPTH`] nested subschemas (reference hops included).
//! What lies beyond is never assumed compatible: a difference there, or a reference that
//! could lead to one, is an unclassified change (a major bump). Values parsed by
//! `serde_json` are at most 128 levels deep; deeper values built in memory are still
//! compared with `serde_json`'s own (recursive) equality at the cut-off.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};

use super::number::{self, Limit, Num};
use super::{Change, ChangeKind, Origins, all_keys, child, object, show};
use crate::schema::graph::{Graph, NodeId, REFERENCE_KEYWORDS, Reference, Targets};

/// Schema nesting (including `$ref` hops) compared keyword by keyword; deeper subschemas
/// that differ are reported as one unclassified change.
const MAX_DEPTH: usize = 64;

/// The schema that accepts everything; what an absent subschema means.
static TRUE: Value = Value::Bool(true);

/// Keywords with no effect on validation.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "examples",
    "$comment",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Known keywords whose changes are not analysed: any difference needs a major bump.
const UNCLASSIFIED: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$vocabulary",
];

/// Keywords compared by a dedicated rule in [`Differ::keywords`] (or, for the reference
/// keywords, by what they resolve to in [`Differ::schema`]).
const HANDLED: &[&str] = &[
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "$defs",
    "definitions",
    "type",
    "nullable",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "unevaluatedProperties",
    "patternProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "uniqueItems",
    "multipleOf",
    "anyOf",
    "oneOf",
    "allOf",
];

/// Lower bounds (raising one tightens) with the value their absence means.
const LOWER_BOUNDS: &[(&str, Limit)] = &[
    ("minimum", Limit::Below),
    ("exclusiveMinimum", Limit::Below),
    ("minLength", Limit::At(Num::Int(0))),
    ("minItems", Limit::At(Num::Int(0))),
    ("minProperties", Limit::At(Num::Int(0))),
    ("minContains", Limit::At(Num::Int(1))),
];

/// Upper bounds (lowering one tightens); absent means no bound.
const UPPER_BOUNDS: &[&str] =
    &["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"];

/// Constraints compared as opaque values: added or changed is major, removed is minor.
const OPAQUE_CONSTRAINTS: &[&str] =
    &["pattern", "format", "contentEncoding", "contentMediaType", "contentSchema"];

/// Subschema slots where absence means the `true` schema.
const SLOTS: &[&str] = &["propertyNames", "additionalItems", "unevaluatedItems"];

/// Diffs two schema documents rooted at `base`; an absent document is the `true` schema.
/// Each is resolved from its own origin (its folder and the files it may read).
pub(super) fn diff_document(
    old: Option<&Value>,
    new: Option<&Value>,
    base: &str,
    origins: &Origins<'_>,
    out: &mut Vec<Change>,
) {
    let old_root = old.unwrap_or(&TRUE);
    let new_root = new.unwrap_or(&TRUE);
    // Equal texts whose references are all fragments (`#...`: inside the document) mean
    // the same; no graph is needed for the common case of an unchanged schema.
    if old_root == new_root && !contains_ref_beyond_fragment(old_root) {
        return;
    }
    let old_graph = Graph::build(old_root, &origins.old);
    let new_graph = Graph::build(new_root, &origins.new);
    // Equal texts mean equal schemas only when their meaning is all in the text.
    if old_root == new_root && !old_graph.reaches_out() && !new_graph.reaches_out() {
        return;
    }
    let budget = 4 * (old_graph.len() + new_graph.len()) + 64;
    let mut differ = Differ {
        old: &old_graph,
        new: &new_graph,
        base,
        seen: HashSet::new(),
        reached: HashSet::new(),
        same: Same { memo: HashMap::new(), log: Vec::new(), budget },
        out,
    };
    let loc = Loc { old: base.to_owned(), new: base.to_owned() };
    differ.schema(old_root, new_root, &loc, 0);
    differ.unreached_definitions(old_root, new_root);
}

/// Where the two schemas being compared sit: in the contract (`/input_schema/...`) or in
/// a referenced file (`common/address.json#/...`).
struct Loc {
    old: String,
    new: String,
}

impl Loc {
    fn child(&self, token: &str) -> Loc {
        Loc { old: child(&self.old, token), new: child(&self.new, token) }
    }

    /// The pointer to report `token` at: in the new document if it has it there,
    /// otherwise (a removal) in the old one.
    fn at(&self, token: &str, in_new: bool) -> String {
        child(if in_new { &self.new } else { &self.old }, token)
    }
}

/// Which of the two documents a reference resolves in.
#[derive(Clone, Copy)]
enum Side {
    Old,
    New,
}

/// A schema object; `None` stands for `true` (an empty object).
type Obj<'a> = Option<&'a Map<String, Value>>;

fn get<'a>(schema: Obj<'a>, key: &str) -> Option<&'a Value> {
    schema.and_then(|map| map.get(key))
}

fn is_annotation_only(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::Object(map) => map.keys().all(|key| ANNOTATIONS.contains(&key.as_str())),
        _ => false,
    }
}

/// The memo of [`Differ::same`]: pairs of subschemas proven (or assumed, while being
/// compared) the same, and the budget of pair comparisons left.
struct Same {
    memo: HashMap<(NodeId, NodeId), bool>,
    /// Pairs in the order they entered `memo`, to take back assumptions that failed.
    log: Vec<(NodeId, NodeId)>,
    budget: usize,
}

struct Differ<'a, 'o> {
    old: &'a Graph<'a>,
    new: &'a Graph<'a>,
    base: &'a str,
    /// Reference target pairs already compared (or being compared).
    seen: HashSet<(String, String)>,
    /// Root definitions (`/input_schema/$defs/x`) some reference reached, on either side.
    reached: HashSet<String>,
    same: Same,
    out: &'o mut Vec<Change>,
}

impl<'a> Differ<'a, '_> {
    fn push(&mut self, pointer: String, kind: ChangeKind, detail: String) {
        self.out.push(Change::new(pointer, kind, detail));
    }

    fn graph(&self, side: Side) -> &'a Graph<'a> {
        match side {
            Side::Old => self.old,
            Side::New => self.new,
        }
    }

    fn schema(&mut self, old: &'a Value, new: &'a Value, loc: &Loc, depth: usize) {
        crate::work::count(1);
        if depth > MAX_DEPTH {
            // Nothing beyond the cut-off is assumed compatible (SPEC §18): equal subtrees
            // pass only when no reference in them could lead to a change further down.
            if old != new || contains_ref(old) || contains_ref(new) {
                self.push(
                    loc.new.clone(),
                    ChangeKind::Unclassified,
                    format!(
                        "schemas nested deeper than {MAX_DEPTH} levels (counting `$ref` hops) {}; pactum cannot prove them compatible: release a major version, or flatten the `$ref` chain",
                        if old != new { "differ" } else { "continue through `$ref`" }
                    ),
                );
            }
            return;
        }
        let flipped = match (old, new) {
            (Value::Bool(false), Value::Bool(false)) => return,
            (_, Value::Bool(false)) => {
                Some((ChangeKind::ConstraintAdded, "schema is now `false`: it rejects every value"))
            }
            (Value::Bool(false), _) => {
                Some((ChangeKind::ConstraintRemoved, "schema was `false`: it now accepts values"))
            }
            _ => None,
        };
        if let Some((kind, detail)) = flipped {
            self.push(loc.new.clone(), kind, detail.to_owned());
            return;
        }
        let (Some(o), Some(n)) = (as_schema(old), as_schema(new)) else {
            if old != new {
                let detail = format!("not a schema: {} → {}", show(Some(old)), show(Some(new)));
                self.push(loc.new.clone(), ChangeKind::Unclassified, detail);
            }
            return;
        };
        let (old_refs, new_refs) = (self.old.references_of(old), self.new.references_of(new));
        match (old_refs.is_empty(), new_refs.is_empty()) {
            (true, true) => self.keywords(o, n, loc, depth),
            (false, false) => {
                self.keywords(o, n, loc, depth);
                self.both_refs(old_refs, new_refs, loc, depth);
            }
            (false, true) => match pure_target(o, old_refs) {
                Some(target) => {
                    let (value, pointer) = self.target(Side::Old, target);
                    self.visit(value, new, &Loc { old: pointer, new: loc.new.clone() }, depth);
                }
                None => self.ref_mismatch(loc),
            },
            (true, false) => match pure_target(n, new_refs) {
                Some(target) => {
                    let (value, pointer) = self.target(Side::New, target);
                    self.visit(old, value, &Loc { old: loc.old.clone(), new: pointer }, depth);
                }
                None => self.ref_mismatch(loc),
            },
        }
    }

    /// A reference target: its schema and where to report it. Marks the root definition
    /// it lies in as reached.
    fn target(&mut self, side: Side, node: NodeId) -> (&'a Value, String) {
        let graph = self.graph(side);
        let pointer = match graph.location(node) {
            (None, pointer) => {
                if let Some(definition) = definition_of(&pointer) {
                    self.reached.insert(format!("{}{definition}", self.base));
                }
                format!("{}{pointer}", self.base)
            }
            (Some(file), pointer) => format!("{file}#{pointer}"),
        };
        (graph.value(node), pointer)
    }

    /// Compares two resolved reference targets, once per pair of locations.
    fn visit(&mut self, old: &'a Value, new: &'a Value, loc: &Loc, depth: usize) {
        if self.seen.insert((loc.old.clone(), loc.new.clone())) {
            self.schema(old, new, loc, depth + 1);
        }
    }

    /// One side is an inline schema, the other a reference that does not resolve to one
    /// schema or that has validation keywords beside it.
    fn ref_mismatch(&mut self, loc: &Loc) {
        let detail = "one side is a reference that does not resolve to one schema or has \
                      validation keywords beside it, the other an inline schema; not compared"
            .to_owned();
        self.push(loc.new.clone(), ChangeKind::Unclassified, detail);
    }

    /// Both sides make references: each pair is compared by what it resolves to.
    fn both_refs(&mut self, old: &'a [Reference], new: &'a [Reference], loc: &Loc, depth: usize) {
        let pointer = loc.at(new.first().map_or("$ref", |r| r.keyword), true);
        if old.len() != new.len() {
            let detail = format!(
                "references {} → {}: not the same number of reference keywords; not compared",
                list_refs(old),
                list_refs(new)
            );
            return self.push(pointer, ChangeKind::Unclassified, detail);
        }
        for (o, n) in old.iter().zip(new) {
            let pointer = loc.at(n.keyword, true);
            match (&o.targets, &n.targets) {
                (Targets::Resolved(a), Targets::Resolved(b)) if a.len() == b.len() => {
                    for (&x, &y) in a.iter().zip(b) {
                        let (old_value, old_at) = self.target(Side::Old, x);
                        let (new_value, new_at) = self.target(Side::New, y);
                        self.visit(old_value, new_value, &Loc { old: old_at, new: new_at }, depth);
                    }
                }
                (Targets::Resolved(a), Targets::Resolved(b)) => {
                    let detail = format!(
                        "`{}` {} may lead to {} schemas, `{}` {} to {}: the dynamic scope picks among them; not compared",
                        o.keyword,
                        show(Some(&Value::String(o.text.clone()))),
                        a.len(),
                        n.keyword,
                        show(Some(&Value::String(n.text.clone()))),
                        b.len()
                    );
                    self.push(pointer, ChangeKind::Unclassified, detail);
                }
                (Targets::Unresolved(why), _) | (_, Targets::Unresolved(why)) => {
                    let detail = format!(
                        "`{}` {} → {} cannot be resolved on both sides ({why}); pactum cannot prove it compatible",
                        n.keyword,
                        show(Some(&Value::String(o.text.clone()))),
                        show(Some(&Value::String(n.text.clone())))
                    );
                    self.push(pointer, ChangeKind::Unclassified, detail);
                }
            }
        }
    }

    /// Whether two values are the same once every reference in them is followed: equal
    /// JSON, whose references lead to subschemas that are the same in turn. Two graphs are
    /// compared as a bisimulation: a pair being compared is assumed the same (so cycles
    /// end), and assumptions a failure depended on are taken back. Bounded by the budget
    /// of pair comparisons: past it nothing more is proven the same.
    fn same(&mut self, old: &'a Value, new: &'a Value, depth: usize) -> bool {
        crate::work::count(1);
        if depth > MAX_DEPTH {
            return old == new && !contains_ref(old) && !contains_ref(new);
        }
        match (old, new) {
            (Value::Object(a), Value::Object(b)) => {
                if a.len() != b.len() {
                    return false;
                }
                let (old_refs, new_refs) =
                    (self.old.references_of(old), self.new.references_of(new));
                if old_refs.len() != new_refs.len() {
                    return false;
                }
                for (o, n) in old_refs.iter().zip(new_refs) {
                    let (Targets::Resolved(x), Targets::Resolved(y)) = (&o.targets, &n.targets)
                    else {
                        return false;
                    };
                    if o.keyword != n.keyword || x.len() != y.len() {
                        return false;
                    }
                    for (&x, &y) in x.iter().zip(y) {
                        if !self.same_nodes(x, y, depth) {
                            return false;
                        }
                    }
                }
                let references = !old_refs.is_empty();
                a.iter().all(|(key, value)| {
                    b.get(key).is_some_and(|other| {
                        (references && REFERENCE_KEYWORDS.contains(&key.as_str()))
                            || self.same(value, other, depth + 1)
                    })
                })
            }
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| self.same(x, y, depth + 1))
            }
            _ => number::same_value(old, new),
        }
    }

    fn same_nodes(&mut self, x: NodeId, y: NodeId, depth: usize) -> bool {
        if let Some(&known) = self.same.memo.get(&(x, y)) {
            return known;
        }
        if self.same.budget == 0 {
            return false;
        }
        self.same.budget -= 1;
        let start = self.same.log.len();
        self.same.memo.insert((x, y), true);
        self.same.log.push((x, y));
        let (old, new) = (self.old.value(x), self.new.value(y));
        let result = self.same(old, new, depth + 1);
        if !result {
            // What was assumed while comparing this pair may have rested on it.
            for pair in self.same.log.drain(start..) {
                if self.same.memo.get(&pair) == Some(&true) {
                    self.same.memo.remove(&pair);
                }
            }
            self.same.memo.insert((x, y), false);
        }
        result
    }

    /// Whether a keyword compared as a value (absent on a side = absent) is the same.
    fn same_keyword(&mut self, old: Option<&'a Value>, new: Option<&'a Value>) -> bool {
        match (old, new) {
            (None, None) => true,
            (Some(old), Some(new)) => self.same(old, new, 0),
            _ => false,
        }
    }

    fn keywords(&mut self, o: Obj<'a>, n: Obj<'a>, loc: &Loc, depth: usize) {
        self.types(o, n, loc);
        self.flag(o, n, loc, "nullable", (ChangeKind::TypeWidened, ChangeKind::Retyped));
        self.allowed_values(o, n, loc);
        self.properties(o, n, loc, depth);
        for key in ["additionalProperties", "unevaluatedProperties"] {
            self.additional(key, get(o, key), get(n, key), loc, depth);
        }
        self.pattern_properties(o, n, loc, depth);
        self.items(o, n, loc, depth);
        for key in SLOTS {
            self.slot(key, get(o, key), get(n, key), loc, depth);
        }
        self.contains(o, n, loc, depth);
        for (key, absent) in LOWER_BOUNDS {
            self.bound(key, *absent, true, o, n, loc);
        }
        for key in UPPER_BOUNDS {
            self.bound(key, Limit::Above, false, o, n, loc);
        }
        let constraint = (ChangeKind::ConstraintAdded, ChangeKind::ConstraintRemoved);
        self.flag(o, n, loc, "uniqueItems", constraint);
        self.multiple_of(o, n, loc);
        for key in OPAQUE_CONSTRAINTS {
            self.opaque(key, get(o, key), get(n, key), loc);
        }
        self.branches(o, n, loc, depth);

        let keys: BTreeSet<&String> = o.into_iter().chain(n).flat_map(Map::keys).collect();
        for key in keys {
            let (old, new) = (get(o, key), get(n, key));
            if is_handled(key) || self.same_keyword(old, new) {
                continue;
            }
            let in_new = new.is_some();
            let (kind, detail) = if ANNOTATIONS.contains(&key.as_str()) {
                (ChangeKind::AnnotationChanged, format!("annotation `{key}` changed"))
            } else if UNCLASSIFIED.contains(&key.as_str()) {
                let detail = format!(
                    "`{key}` changed ({} → {}); its effect is not analysed: major",
                    show(old),
                    show(new)
                );
                (ChangeKind::Unclassified, detail)
            } else {
                let detail = format!(
                    "unknown schema keyword `{key}` changed ({} → {}); treated as breaking",
                    show(old),
                    show(new)
                );
                (ChangeKind::UnknownKeywordChanged, detail)
            };
            self.push(loc.at(key, in_new), kind, detail);
        }
    }

    fn types(&mut self, o: Obj<'a>, n: Obj<'a>, loc: &Loc) {
        let (old, new) = (get(o, "type"), get(n, "type"));
        if old == new {
            return;
        }
        let pointer = loc.at("type", new.is_some());
        let change = format!("`type` {} → {}", show(old), show(new));
        let (Ok(old_set), Ok(new_set)) = (type_set(old), type_set(new)) else {
            return self.push(pointer, ChangeKind::Unclassified, format!("{change}: malformed"));
        };
        let kind = match (old_set, new_set) {
            (_, None) => ChangeKind::TypeWidened,
            (None, Some(_)) => ChangeKind::Retyped,
            (Some(old_set), Some(new_set)) => {
                let covered = old_set.iter().all(|ty| {
                    new_set.contains(ty) || (*ty == "integer" && new_set.contains("number"))
                });
                if !covered {
                    ChangeKind::Retyped
                } else if old_set == new_set {
                    return;
                } else {
                    ChangeKind::TypeWidened
                }
            }
        };
        self.push(pointer, kind, change);
    }

    /// A boolean keyword that is `false` when absent (`nullable`, `uniqueItems`): turning it
    /// on is `on`, turning it off is `off`; a value that is not a boolean is unclassified.
    fn flag(
        &mut self,
        o: Obj<'a>,
        n: Obj<'a>,
        loc: &Loc,
        keyword: &str,
        (on, off): (ChangeKind, ChangeKind),
    ) {
        let (old, new) = (get(o, keyword), get(n, keyword));
        if old == new {
            return;
        }
        let pointer = loc.at(keyword, new.is_some());
        let change = format!("`{keyword}` {} → {}", show(old), show(new));
        let flag = |value: Option<&Value>| value.map_or(Some(false), Value::as_bool);
        let kind = match (flag(old), flag(new)) {
            (Some(false), Some(true)) => on,
            (Some(true), Some(false)) => off,
            (Some(_), Some(_)) => return,
            _ => ChangeKind::Unclassified,
        };
        self.push(pointer, kind, change);
    }

    /// `enum` and `const` together: the set of values a schema allows.
    fn allowed_values(&mut self, o: Obj<'a>, n: Obj<'a>, loc: &Loc) {
        if get(o, "enum") == get(n, "enum") && get(o, "const") == get(n, "const") {
            return;
        }
        let key = ["enum", "const"].into_iter().find(|key| get(n, key).is_some());
        let pointer = match key {
            Some(key) => loc.at(key, true),
            None => loc.at(if get(o, "enum").is_some() { "enum" } else { "const" }, false),
        };
        let (Ok(old), Ok(new)) = (allowed(o), allowed(n)) else {
            let detail = "`enum` is not an array".to_owned();
            return self.push(pointer, ChangeKind::Unclassified, detail);
        };
        let (kind, detail) = match (old, new) {
            (None, None) => return,
            (None, Some(new)) => {
                (ChangeKind::EnumNarrowed, format!("values now restricted to {}", list(&new)))
            }
            (Some(old), None) => {
                (ChangeKind::EnumWidened, format!("values no longer restricted to {}", list(&old)))
            }
            (Some(old), Some(new)) => {
                // Values compared as the validator compares them (`1` is `1.0`), by key:
                // linear in the number of values.
                let keys = |values: &[&Value]| -> HashSet<String> {
                    values.iter().map(|value| number::key(value)).collect()
                };
                let (old_keys, new_keys) = (keys(&old), keys(&new));
                let removed: Vec<&Value> = old
                    .iter()
                    .copied()
                    .filter(|value| !new_keys.contains(&number::key(value)))
                    .collect();
                let added: Vec<&Value> = new
                    .iter()
                    .copied()
                    .filter(|value| !old_keys.contains(&number::key(value)))
                    .collect();
                match (removed.is_empty(), added.is_empty()) {
                    (true, true) => return,
                    (true, false) => {
                        (ChangeKind::EnumWidened, format!("values added: {}", list(&added)))
                    }
                    (false, true) => {
                        (ChangeKind::EnumNarrowed, format!("values removed: {}", list(&removed)))
                    }
                    (false, false) => (
                        ChangeKind::EnumNarrowed,
                        format!("values removed: {}; added: {}", list(&removed), list(&added)),
                    ),
                }
            }
        };
        self.push(pointer, kind, detail);
    }

    fn properties(&mut self, o: Obj<'a>, n: Obj<'a>, loc: &Loc, depth: usize) {
        let (old_props, new_props) = (get(o, "properties"), get(n, "properties"));
        let (old_req, new_req) = (get(o, "required"), get(n, "required"));
        let (Some(old_props), Some(new_props), Ok(old_req), Ok(new_req)) =
            (object(old_props), object(new_props), names(old_req), names(new_req))
        else {
            for key in ["properties", "required"] {
                if get(o, key) != get(n, key) {
                    let detail = format!("`{key}` is malformed on one side; not compared");
                    self.push(loc.at(key, get(n, key).is_some()), ChangeKind::Unclassified, detail);
                }
            }
            return;
        };

        // Names whose property appeared or vanished are reported once, as that.
        let mut settled: BTreeSet<&str> = BTreeSet::new();
        let props = loc.child("properties");
        for key in all_keys(old_props, new_props) {
            match (old_props.get(key), new_props.get(key)) {
                (Some(old), Some(new)) => self.schema(old, new, &props.child(key), depth + 1),
                (None, Some(new)) => {
                    settled.insert(key);
                    let (kind, detail) = if *new == Value::Bool(false) {
                        (ChangeKind::ConstraintAdded, format!("property `{key}` is now forbidden"))
                    } else if new_req.contains(key.as_str()) {
                        (ChangeKind::AddedRequired, format!("required property `{key}` added"))
                    } else {
                        (ChangeKind::AddedOptional, format!("optional property `{key}` added"))
                    };
                    self.push(props.at(key, true), kind, detail);
                }
                (Some(_), None) => {
                    settled.insert(key);
                    let detail = format!("property `{key}` removed");
                    self.push(props.at(key, false), ChangeKind::Removed, detail);
                }
                (None, None) => {}
            }
        }

        let in_new = get(n, "required").is_some();
        for name in new_req.difference(&old_req) {
            if !settled.contains(name) {
                let detail = format!("`{name}` is now required");
                self.push(loc.at("required", true), ChangeKind::RequiredAdded, detail);
            }
        }
        for name in old_req.difference(&new_req) {
            if !settled.contains(name) {
                let detail = format!("`{name}` is no longer required");
                self.push(loc.at("required", in_new), ChangeKind::RequiredRemoved, detail);
            }
        }
    }

    /// `additionalProperties` / `unevaluatedProperties`: open, closed, or a schema.
    fn additional(
        &mut self,
        key: &str,
        old: Option<&'a Value>,
        new: Option<&'a Value>,
        loc: &Loc,
        depth: usize,
    ) {
        if old == new && !old.is_some_and(Value::is_object) {
            return;
        }
        let pointer = loc.at(key, new.is_some());
        let change = format!("`{key}` {} → {}", show(old), show(new));
        match (Extra::of(old), Extra::of(new)) {
            (Extra::Open, Extra::Open) | (Extra::Closed, Extra::Closed) => {}
            (Extra::Open | Extra::Schema(_), Extra::Closed) => {
                self.push(pointer, ChangeKind::AdditionalPropertiesClosed, change);
            }
            (Extra::Closed | Extra::Schema(_), Extra::Open) | (Extra::Closed, Extra::Schema(_)) => {
                self.push(pointer, ChangeKind::AdditionalPropertiesOpened, change);
            }
            (Extra::Open, Extra::Schema(new)) => {
                self.schema(&TRUE, new, &loc.child(key), depth + 1);
            }
            (Extra::Schema(old), Extra::Schema(new)) => {
                self.schema(old, new, &loc.child(key), depth + 1);
            }
        }
    }

    fn pattern_properties(&mut self, o: Obj<'a>, n: Obj<'a>, loc: &Loc, depth: usize) {
        let (old, new) = (get(o, "patternProperties"), get(n, "patternProperties"));
        if old == new && old.is_none() {
            return;
        }
        let (Some(old_map), Some(new_map)) = (object(old), object(new)) else {
            let detail = "`patternProperties` is malformed on one side; not compared".to_owned();
            let pointer = loc.at("patternProperties", new.is_some());
            return self.push(pointer, ChangeKind::Unclassified, detail);
        };
        let here = loc.child("patternProperties");
        for key in all_keys(old_map, new_map) {
            match (old_map.get(key), new_map.get(key)) {
                (Some(old), Some(new)) => self.schema(old, new, &here.child(key), depth + 1),
                (None, Some(_)) | (Some(_), None) => {
                    let in_new = new_map.contains_key(key);
                    let verb = if in_new { "added" } else { "removed" };
                    let detail = format!(
                        "pattern property `{key}` {verb}; its effect depends on \
                         `additionalProperties`, so it needs a major bump"
                    );
                    self.push(here.at(key, in_new), ChangeKind::Unclassified, detail);
                }
                (None, None) => {}
            }
        }
    }

    /// `items` (a schema, or the draft-7 tuple array) and `prefixItems`.
    fn items(&mut self, o: Obj<'a>, n: Obj<'a>, loc: &Loc, depth: usize) {
        let (old, new) = (get(o, "items"), get(n, "items"));
        match (old, new) {
            (Some(Value::Array(_)), None | Some(Value::Array(_)))
            | (None, Some(Value::Array(_))) => {
                self.tuple("items", "additionalItems", o, n, loc, depth);
            }
            (Some(Value::Array(_)), Some(_)) | (Some(_), Some(Value::Array(_))) => {
                let detail = "`items` switched between tuple and list form".to_owned();
                self.push(loc.at("items", true), ChangeKind::Unclassified, detail);
            }
            _ => self.slot("items", old, new, loc, depth),
        }
        self.tuple("prefixItems", "items", o, n, loc, depth);
    }

    /// Positional schemas under `key`; a position one side lacks is governed there by
    /// its `rest` keyword (`true` when absent).
    fn tuple(&mut self, key: &str, rest: &str, o: Obj<'a>, n: Obj<'a>, loc: &Loc, depth: usize) {
        let (old, new) = (get(o, key), get(n, key));
        if old.is_none() && new.is_none() {
            return;
        }
        let (Ok(old), Ok(new)) = (array(old), array(new)) else {
            let detail = format!("`{key}` is malformed on one side; not compared");
            return self.push(loc.at(key, new.is_some()), ChangeKind::Unclassified, detail);
        };
        let here = loc.child(key);
        for index in 0..old.len().max(new.len()) {
            let token = index.to_string();
            let (old_item, old_ptr) = match old.get(index) {
                Some(item) => (item, child(&here.old, &token)),
                None => (get(o, rest).unwrap_or(&TRUE), loc.at(rest, false)),
            };
            let (new_item, new_ptr) = match new.get(index) {
                Some(item) => (item, child(&here.new, &token)),
                None => (get(n, rest).unwrap_or(&TRUE), loc.at(rest, true)),
            };
            self.schema(old_item, new_item, &Loc { old: old_ptr, new: new_ptr }, depth + 1);
        }
    }

    /// A subschema slot where absence means `true`.
    fn slot(
        &mut self,
        key: &str,
        old: Option<&'a Value>,
        new: Option<&'a Value>,
        loc: &Loc,
        depth: usize,
    ) {
        if old.is_none() && new.is_none() {
            return;
        }
        let (old, new) = (old.unwrap_or(&TRUE), new.unwrap_or(&TRUE));
        self.schema(old, new, &loc.child(key), depth + 1);
    }

    /// `contains`, where absence means no requirement at all (unlike `{}`).
    fn contains(&mut self, o: Obj<'a>, n: Obj<'a>, loc: &Loc, depth: usize) {
        match (get(o, "contains"), get(n, "contains")) {
            (None, None) => {}
            (Some(old), Some(new)) => self.schema(old, new, &loc.child("contains"), depth + 1),
            (None, Some(_)) => {
                let detail = "`contains` added: arrays must now hold a matching item".to_owned();
                self.push(loc.at("contains", true), ChangeKind::ConstraintAdded, detail);
            }
            (Some(_), None) => {
                let detail = "`contains` removed".to_owned();
                self.push(loc.at("contains", false), ChangeKind::ConstraintRemoved, detail);
            }
        }
    }

    /// A numeric bound, compared exactly ([`Num`]): `maximum: 9007199254740992` below
    /// `9007199254740993` is a tightening although both are the same `f64`.
    fn bound(&mut self, key: &str, absent: Limit, lower: bool, o: Obj<'a>, n: Obj<'a>, loc: &Loc) {
        let (old, new) = (get(o, key), get(n, key));
        if old == new {
            return;
        }
        let pointer = loc.at(key, new.is_some());
        let change = format!("`{key}` {} → {}", show(old), show(new));
        let number =
            |value: Option<&Value>| value.map_or(Some(absent), |v| Num::of(v).map(Limit::At));
        let (Some(old), Some(new)) = (number(old), number(new)) else {
            return self.push(pointer, ChangeKind::Unclassified, format!("{change}: not a number"));
        };
        let kind = if old == new {
            return;
        } else if (new > old) == lower {
            ChangeKind::BoundTightened
        } else {
            ChangeKind::BoundRelaxed
        };
        self.push(pointer, kind, change);
    }

    fn multiple_of(&mut self, o: Obj<'a>, n: Obj<'a>, loc: &Loc) {
        let (old, new) = (get(o, "multipleOf"), get(n, "multipleOf"));
        if old == new {
            return;
        }
        let pointer = loc.at("multipleOf", new.is_some());
        let change = format!("`multipleOf` {} → {}", show(old), show(new));
        let kind = match (old.map(Num::of), new.map(Num::of)) {
            (None, Some(_)) => ChangeKind::ConstraintAdded,
            (Some(_), None) => ChangeKind::ConstraintRemoved,
            (Some(Some(old)), Some(Some(new))) => match old.is_multiple_of(new) {
                _ if old == new => return,
                // Every multiple of the old step is a multiple of the new one.
                Some(true) => ChangeKind::BoundRelaxed,
                Some(false) => ChangeKind::BoundTightened,
                None => ChangeKind::Unclassified,
            },
            _ => ChangeKind::Unclassified,
        };
        self.push(pointer, kind, change);
    }

    /// `pattern`, `format` and friends: compared as opaque values.
    fn opaque(&mut self, key: &str, old: Option<&Value>, new: Option<&Value>, loc: &Loc) {
        let (kind, verb) = match (old, new) {
            (None, None) => return,
            (Some(old), Some(new)) if old == new => return,
            (None, Some(_)) => (ChangeKind::ConstraintAdded, "added"),
            (Some(_), None) => (ChangeKind::ConstraintRemoved, "removed"),
            (Some(_), Some(_)) => (ChangeKind::ConstraintChanged, "changed"),
        };
        let detail = format!("`{key}` {verb}: {} → {}", show(old), show(new));
        self.push(loc.at(key, new.is_some()), kind, detail);
    }

    /// `anyOf`, `oneOf` and `allOf`. Equal branches are paired first (and still compared,
    /// for what their `$ref`s reach), then the rest in order; extra branches are additions
    /// or removals.
    fn branches(&mut self, o: Obj<'a>, n: Obj<'a>, loc: &Loc, depth: usize) {
        for key in ["anyOf", "oneOf", "allOf"] {
            let (old, new) = (get(o, key), get(n, key));
            let all_of = key == "allOf";
            match (old, new) {
                (None, None) => continue,
                (None, Some(_)) if !all_of => {
                    let detail = format!("`{key}` added");
                    self.push(loc.at(key, true), ChangeKind::ConstraintAdded, detail);
                    continue;
                }
                (Some(_), None) if !all_of => {
                    let detail = format!("`{key}` removed");
                    self.push(loc.at(key, false), ChangeKind::ConstraintRemoved, detail);
                    continue;
                }
                _ => {}
            }
            let (Ok(old), Ok(new)) = (array(old), array(new)) else {
                let detail = format!("`{key}` is malformed on one side; not compared");
                self.push(loc.at(key, new.is_some()), ChangeKind::Unclassified, detail);
                continue;
            };
            let here = loc.child(key);
            let (pairs, old_rest, new_rest) = pair_branches(old, new);
            for ((i, old_branch), (j, new_branch)) in pairs {
                let pair = Loc {
                    old: child(&here.old, &i.to_string()),
                    new: child(&here.new, &j.to_string()),
                };
                self.schema(old_branch, new_branch, &pair, depth + 1);
            }
            for (j, branch) in new_rest {
                let pointer = child(&here.new, &j.to_string());
                if all_of {
                    let pair = Loc { old: here.old.clone(), new: pointer };
                    self.schema(&TRUE, branch, &pair, depth + 1);
                } else {
                    let detail = format!("`{key}` branch {} added", show(Some(branch)));
                    self.push(pointer, ChangeKind::BranchAdded, detail);
                }
            }
            for (i, branch) in old_rest {
                let pointer = child(&here.old, &i.to_string());
                if all_of {
                    let pair = Loc { old: pointer, new: here.new.clone() };
                    self.schema(branch, &TRUE, &pair, depth + 1);
                } else {
                    let detail = format!("`{key}` branch {} removed", show(Some(branch)));
                    self.push(pointer, ChangeKind::BranchRemoved, detail);
                }
            }
        }
    }

    /// Root definitions that changed although no `$ref` reached them: harmless, but the
    /// document did change.
    fn unreached_definitions(&mut self, old_root: &'a Value, new_root: &'a Value) {
        for key in ["$defs", "definitions"] {
            let old = old_root.get(key).and_then(Value::as_object);
            let new = new_root.get(key).and_then(Value::as_object);
            let names: BTreeSet<&String> = old.into_iter().chain(new).flat_map(Map::keys).collect();
            for name in names {
                let (old_def, new_def) =
                    (old.and_then(|m| m.get(name)), new.and_then(|m| m.get(name)));
                if old_def == new_def {
                    continue;
                }
                let pointer = child(&child(self.base, key), name);
                if !self.reached.contains(&pointer) {
                    let detail = format!("definition `{name}` changed; no `$ref` reaches it");
                    self.push(pointer, ChangeKind::DefinitionsChanged, detail);
                }
            }
        }
    }
}

/// How a schema treats properties (or items) no other keyword covers.
enum Extra<'a> {
    Open,
    Closed,
    Schema(&'a Value),
}

impl<'a> Extra<'a> {
    fn of(value: Option<&'a Value>) -> Extra<'a> {
        match value {
            None => Extra::Open,
            Some(Value::Bool(false)) => Extra::Closed,
            Some(value) if is_annotation_only(value) => Extra::Open,
            Some(value) => Extra::Schema(value),
        }
    }
}

/// A schema as an object (`true` as `None`); `None` for values that are not schemas.
fn as_schema(value: &Value) -> Option<Obj<'_>> {
    match value {
        Value::Object(map) => Some(Some(map)),
        Value::Bool(true) => Some(None),
        _ => None,
    }
}

/// Whether a dedicated rule in [`Differ::keywords`] compares `key`.
fn is_handled(key: &str) -> bool {
    HANDLED.contains(&key)
        || LOWER_BOUNDS.iter().any(|(bound, _)| *bound == key)
        || UPPER_BOUNDS.contains(&key)
        || OPAQUE_CONSTRAINTS.contains(&key)
        || SLOTS.contains(&key)
}

/// Whether a reference keyword appears anywhere in `value` (iteratively).
fn contains_ref(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if REFERENCE_KEYWORDS.iter().any(|k| map.contains_key(*k)) {
                    return true;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// Whether a reference keyword anywhere in `value` holds something else than a fragment
/// (`#...`), i.e. may name another document (iteratively).
fn contains_ref_beyond_fragment(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                let beyond = REFERENCE_KEYWORDS.iter().any(|k| {
                    map.get(*k).is_some_and(|r| !r.as_str().is_some_and(|r| r.starts_with('#')))
                });
                if beyond {
                    return true;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// The one schema a reference with nothing beside it but annotations and definitions
/// leads to, if it is that.
fn pure_target(schema: Obj<'_>, references: &[Reference]) -> Option<NodeId> {
    let pure = schema.into_iter().flatten().all(|(key, _)| {
        REFERENCE_KEYWORDS.contains(&key.as_str())
            || matches!(key.as_str(), "$defs" | "definitions")
            || ANNOTATIONS.contains(&key.as_str())
    });
    match references {
        [only] if pure => match &only.targets {
            Targets::Resolved(targets) if targets.len() == 1 => Some(targets[0]),
            _ => None,
        },
        _ => None,
    }
}

/// References as written, for a change's detail.
fn list_refs(references: &[Reference]) -> String {
    let all: Vec<String> = references
        .iter()
        .map(|r| format!("{} {}", r.keyword, show(Some(&Value::String(r.text.clone())))))
        .collect();
    if all.is_empty() { "none".to_owned() } else { all.join(", ") }
}

/// The `type` keyword as a set of names; `Ok(None)` when absent, `Err` when malformed.
fn type_set(value: Option<&Value>) -> Result<Option<BTreeSet<&str>>, ()> {
    match value {
        None => Ok(None),
        Some(Value::String(name)) => Ok(Some(BTreeSet::from([name.as_str()]))),
        Some(Value::Array(names)) => {
            names.iter().map(|name| name.as_str().ok_or(())).collect::<Result<_, _>>().map(Some)
        }
        Some(_) => Err(()),
    }
}

/// The values `enum` and `const` allow together; `Ok(None)` when unrestricted.
fn allowed(schema: Obj<'_>) -> Result<Option<Vec<&Value>>, ()> {
    let listed = match get(schema, "enum") {
        None => None,
        Some(Value::Array(values)) => Some(values.iter().collect::<Vec<_>>()),
        Some(_) => return Err(()),
    };
    Ok(match (listed, get(schema, "const")) {
        (None, None) => None,
        (Some(listed), None) => Some(listed),
        (None, Some(only)) => Some(vec![only]),
        (Some(listed), Some(only)) => {
            Some(listed.into_iter().filter(|v| number::same_value(v, only)).collect())
        }
    })
}

fn list(values: &[&Value]) -> String {
    let shown: Vec<String> = values.iter().map(|value| show(Some(value))).collect();
    shown.join(", ")
}

fn array(value: Option<&Value>) -> Result<&[Value], ()> {
    match value {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(()),
    }
}

fn names(value: Option<&Value>) -> Result<BTreeSet<&str>, ()> {
    match value {
        None => Ok(BTreeSet::new()),
        Some(Value::Array(items)) => items.iter().map(|item| item.as_str().ok_or(())).collect(),
        Some(_) => Err(()),
    }
}

/// A branch and its index in its array.
type Branch<'a> = (usize, &'a Value);

/// Pairs equal branches first, then the remaining ones in order. Returns the pairs
/// `(old, new)` and the unpaired old and new branches.
fn pair_branches<'a>(
    old: &'a [Value],
    new: &'a [Value],
) -> (Vec<(Branch<'a>, Branch<'a>)>, Vec<Branch<'a>>, Vec<Branch<'a>>) {
    let mut old_free: Vec<Branch<'a>> = old.iter().enumerate().collect();
    let mut new_free = Vec::new();
    let mut pairs = Vec::new();
    for (j, branch) in new.iter().enumerate() {
        match old_free.iter().position(|(_, free)| *free == branch) {
            Some(at) => pairs.push((old_free.remove(at), (j, branch))),
            None => new_free.push((j, branch)),
        }
    }
    let matched = old_free.len().min(new_free.len());
    pairs.extend(old_free.drain(..matched).zip(new_free.drain(..matched)));
    (pairs, old_free, new_free)
}

/// The root definition a pointer lies in: `/$defs/a/properties/b` → `/$defs/a`.
fn definition_of(pointer: &str) -> Option<&str> {
    let rest = pointer.strip_prefix("/$defs/").or_else(|| pointer.strip_prefix("/definitions/"))?;
    let name_len = rest.find('/').unwrap_or(rest.len());
    pointer.get(..pointer.len() - rest.len() + name_len)
}
