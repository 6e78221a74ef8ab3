//! Finding the values a schema marks `"x-secret": true` in an instance, the way a validator
//! applies the schema to it (SPEC §18).
//!
//! The walk follows every keyword that applies a subschema to the instance or to a part of
//! it: the reference keywords (`$ref`, `$dynamicRef`, `$recursiveRef`), `allOf`, `anyOf`,
//! `oneOf`, `not`, `if`, `then`, `else`, `dependentSchemas` (and `dependencies`),
//! `properties`, `patternProperties`, `additionalProperties`, `propertyNames`, `items`,
//! `prefixItems`, `additionalItems`, `contains`, `unevaluatedProperties` and
//! `unevaluatedItems`.
//!
//! **References only through the graph:** where a reference leads is read from the
//! schema's resolved graph ([`crate::schema::graph::Graph`]), the one reading of references
//! the cost measure, the compiler, the compatibility diff and the registry share (JSON
//! pointers, anchors, `$dynamicRef`s with every anchor the dynamic scope may pick,
//! `$recursiveRef`s, embedded `$id`s, files inside the project). This module resolves
//! nothing itself, so it cannot follow a reference the validator does not, nor skip one it
//! does.
//!
//! It errs on the side of masking: every branch is followed whether or not the instance
//! satisfies it (a value one `anyOf` branch marks is masked even when another branch is
//! the one that validates), `$ref` siblings apply in every draft, `unevaluated*` applies to
//! everything its own schema object does not name, and a `patternProperties` pattern the
//! `regex` engine cannot compile matches every name.
//!
//! **A reference the graph leaves unresolved is a mark:** a pointer or anchor that names
//! nothing, a file outside the project, missing or past the graph's caps, a URI that is
//! not a file. The walk cannot see what such a target marks, so it masks the whole instance
//! node the reference applies to, as if that subschema said `"x-secret": true`. A schema
//! with such a reference never compiles (`contract_schema_invalid`, `schema_too_costly`),
//! so no exchange runs with it; the mark keeps its input out of the error that says so.
//!
//! **Bounded:** each (subschema, instance node) pair is visited at most once, so a `$ref`
//! cycle ends and a chain of `anyOf`s that would expand exponentially is walked in at most
//! (schema nodes × instance nodes) steps; subschemas that neither mark nor refer are never
//! entered; the total work is capped at [`MAX_WALK`] steps, and a walk past the cap reports
//! itself incomplete rather than miss a value silently. The files the graph reads are
//! bounded by the graph ([`crate::schema::graph::MAX_FILES`]).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::schema::graph::{Graph, REFERENCE_KEYWORDS, Targets, for_each_subschema};

/// The most steps one walk takes: (subschema, instance node) visits, instance members
/// looked at, names matched against patterns.
pub const MAX_WALK: usize = 2_000_000;
/// The largest regex a `patternProperties` pattern may compile to.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// What a walk found.
#[derive(Debug, Default)]
pub(super) struct Marked<'i> {
    /// Instance values a subschema marks (every string inside one is secret).
    pub values: Vec<&'i Value>,
    /// Property names a `propertyNames` subschema marks.
    pub names: Vec<&'i str>,
    /// Whether the walk stopped at [`MAX_WALK`] before it saw everything.
    pub incomplete: bool,
}

/// Every value the schema of `graph` marks secret in `instance`.
pub(super) fn marked<'i>(graph: &Graph<'_>, instance: &'i Value) -> Marked<'i> {
    marked_within(graph, instance, MAX_WALK)
}

/// [`marked`], in at most `limit` steps.
fn marked_within<'i>(graph: &Graph<'_>, instance: &'i Value, limit: usize) -> Marked<'i> {
    let mut walk = Walk {
        graph,
        seen: HashSet::new(),
        steps: 0,
        limit,
        regexes: HashMap::new(),
        live: HashMap::new(),
        leads: HashMap::new(),
        todo: Vec::new(),
        out: Marked::default(),
    };
    if let Some(root) = graph.root() {
        walk.push(graph.value(root), Inst::Value(instance));
    }
    if walk.run().is_err() {
        walk.out.incomplete = true;
    }
    walk.out
}

fn addr(v: &Value) -> usize {
    std::ptr::from_ref(v) as usize
}

/// Whether a schema object marks the instance itself.
fn marks(map: &Map<String, Value>) -> bool {
    map.get("x-secret") == Some(&Value::Bool(true))
}

/// Whether a schema object has a reference keyword the graph resolves (a string).
fn refers(map: &Map<String, Value>) -> bool {
    REFERENCE_KEYWORDS.iter().any(|k| map.get(*k).is_some_and(Value::is_string))
}

/// Where the references of one subschema lead, as the graph resolved them.
#[derive(Clone)]
struct Leads<'g> {
    targets: Vec<&'g Value>,
    /// Some reference leads nowhere the graph can see: the subschema counts as a mark.
    nowhere: bool,
}

/// An instance node: a value, or a property name (what `propertyNames` applies to).
#[derive(Clone, Copy)]
enum Inst<'i> {
    Value(&'i Value),
    Name(&'i str),
}

impl Inst<'_> {
    fn key(self) -> (usize, bool) {
        match self {
            Inst::Value(v) => (addr(v), false),
            Inst::Name(s) => (s.as_ptr() as usize, true),
        }
    }
}

/// The walk hit [`MAX_WALK`].
struct OutOfSteps;

struct Walk<'g, 'i> {
    graph: &'g Graph<'g>,
    /// (subschema, instance node) pairs already visited.
    seen: HashSet<(usize, usize, bool)>,
    steps: usize,
    limit: usize,
    regexes: HashMap<&'g str, Option<regex::Regex>>,
    /// Whether a subschema (by address) has a mark or a reference anywhere it applies.
    live: HashMap<usize, bool>,
    /// Where each subschema's references lead (by the subschema's address).
    leads: HashMap<usize, Leads<'g>>,
    todo: Vec<(&'g Value, Inst<'i>)>,
    out: Marked<'i>,
}

impl<'g, 'i> Walk<'g, 'i> {
    fn tick(&mut self, n: usize) -> Result<(), OutOfSteps> {
        crate::work::count(n);
        self.steps = self.steps.saturating_add(n);
        if self.steps > self.limit { Err(OutOfSteps) } else { Ok(()) }
    }

    /// Whether the walk has anything to find in `schema`: a mark or a reference in it or in
    /// a subschema it applies (definitions aside: only a reference reaches them). Computed
    /// once per subschema, without recursion, so the total is linear in the schema.
    fn live(&mut self, schema: &'g Value) -> bool {
        if !schema.is_object() {
            return false;
        }
        if let Some(&live) = self.live.get(&addr(schema)) {
            return live;
        }
        let memo = &mut self.live;
        let mut stack = vec![(schema, false)];
        while let Some((value, children_done)) = stack.pop() {
            crate::work::count(1);
            let Value::Object(map) = value else { continue };
            if memo.contains_key(&addr(value)) {
                continue;
            }
            if children_done {
                let mut live = marks(map) || refers(map);
                for_each_subschema(map, false, &mut |_, _, child| {
                    live |= memo.get(&addr(child)).copied().unwrap_or(false);
                });
                memo.insert(addr(value), live);
            } else {
                stack.push((value, true));
                for_each_subschema(map, false, &mut |_, _, child| {
                    if child.is_object() && !memo.contains_key(&addr(child)) {
                        stack.push((child, false));
                    }
                });
            }
        }
        self.live.get(&addr(schema)).copied().unwrap_or(true)
    }

    fn push(&mut self, schema: &'g Value, inst: Inst<'i>) {
        if self.live(schema) {
            self.todo.push((schema, inst));
        }
    }

    /// Where the references of `schema` lead, from its node in the graph. A subschema the
    /// graph does not know (it registers every one the walk can reach, so this is a
    /// defence, not a case) leads nowhere it can see.
    fn leads(&mut self, schema: &'g Value, map: &Map<String, Value>) -> Leads<'g> {
        if !refers(map) {
            return Leads { targets: Vec::new(), nowhere: false };
        }
        if let Some(found) = self.leads.get(&addr(schema)) {
            return found.clone();
        }
        let graph = self.graph;
        let found = match graph.node_of(schema) {
            None => Leads { targets: Vec::new(), nowhere: true },
            Some(node) => {
                let mut leads = Leads { targets: Vec::new(), nowhere: false };
                for reference in graph.references(node) {
                    match &reference.targets {
                        Targets::Resolved(all) => {
                            leads.targets.extend(all.iter().map(|&t| graph.value(t)));
                        }
                        Targets::Unresolved(_) => leads.nowhere = true,
                    }
                }
                leads
            }
        };
        self.leads.insert(addr(schema), found.clone());
        found
    }

    fn run(&mut self) -> Result<(), OutOfSteps> {
        while let Some((schema, inst)) = self.todo.pop() {
            let (at, name) = inst.key();
            if !self.seen.insert((addr(schema), at, name)) {
                continue;
            }
            self.tick(1)?;
            let Value::Object(map) = schema else { continue };
            let leads = self.leads(schema, map);
            if marks(map) || leads.nowhere {
                // Everything inside is secret: nothing below can add to it.
                match inst {
                    Inst::Value(v) => self.out.values.push(v),
                    Inst::Name(s) => self.out.names.push(s),
                }
                continue;
            }
            for target in leads.targets {
                self.push(target, inst);
            }
            self.in_place(map, inst);
            match inst {
                Inst::Value(Value::Object(fields)) => self.object(map, inst, fields)?,
                Inst::Value(Value::Array(items)) => self.array(map, items)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Keywords other than references that apply subschemas to the instance itself.
    fn in_place(&mut self, map: &'g Map<String, Value>, inst: Inst<'i>) {
        for keyword in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(list)) = map.get(keyword) {
                for sub in list {
                    self.push(sub, inst);
                }
            }
        }
        for keyword in ["not", "if", "then", "else"] {
            if let Some(sub) = map.get(keyword) {
                self.push(sub, inst);
            }
        }
    }

    fn object(
        &mut self,
        map: &'g Map<String, Value>,
        object: Inst<'i>,
        fields: &'i Map<String, Value>,
    ) -> Result<(), OutOfSteps> {
        let properties = map.get("properties").and_then(Value::as_object);
        let patterns: Vec<(&'g str, &'g Value)> = map
            .get("patternProperties")
            .and_then(Value::as_object)
            .map(|p| p.iter().map(|(k, v)| (k.as_str(), v)).collect())
            .unwrap_or_default();
        let patterns_live = patterns.iter().any(|(_, s)| self.live(s));
        let additional = self.live_keyword(map, "additionalProperties");
        let unevaluated = self.live_keyword(map, "unevaluatedProperties");
        let names = self.live_keyword(map, "propertyNames");
        let dependent: Vec<&'g Map<String, Value>> = ["dependentSchemas", "dependencies"]
            .iter()
            .filter_map(|k| map.get(*k).and_then(Value::as_object))
            .collect();
        let rest_live = additional.is_some() || unevaluated.is_some();
        if !patterns_live && !rest_live && names.is_none() {
            // Only named members matter: look up the smaller side in the larger.
            if let Some(properties) = properties {
                if properties.len() <= fields.len() {
                    for (name, sub) in properties {
                        self.tick(1)?;
                        if let Some(value) = fields.get(name) {
                            self.push(sub, Inst::Value(value));
                        }
                    }
                } else {
                    for (name, value) in fields {
                        self.tick(1)?;
                        if let Some(sub) = properties.get(name) {
                            self.push(sub, Inst::Value(value));
                        }
                    }
                }
            }
            for schemas in dependent {
                for (name, sub) in schemas {
                    self.tick(1)?;
                    if fields.contains_key(name) && sub.is_object() {
                        // `dependentSchemas` applies to the object itself.
                        self.push(sub, object);
                    }
                }
            }
            return Ok(());
        }
        for (name, value) in fields {
            self.tick(1)?;
            let mut named = false;
            if let Some(sub) = properties.and_then(|p| p.get(name)) {
                self.push(sub, Inst::Value(value));
                named = true;
            }
            for &(pattern, sub) in &patterns {
                self.tick(1 + name.len() / 64)?;
                match self.regex(pattern)?.map(|re| re.is_match(name)) {
                    Some(false) => {}
                    Some(true) => {
                        self.push(sub, Inst::Value(value));
                        named = true;
                    }
                    // A pattern pactum cannot compile matches every name, and leaves it
                    // to `additionalProperties` too.
                    None => self.push(sub, Inst::Value(value)),
                }
            }
            if !named {
                for sub in [additional, unevaluated].into_iter().flatten() {
                    self.push(sub, Inst::Value(value));
                }
            }
            if let Some(sub) = names {
                self.push(sub, Inst::Name(name));
            }
        }
        for schemas in dependent {
            for (name, sub) in schemas {
                self.tick(1)?;
                if fields.contains_key(name) && sub.is_object() {
                    self.push(sub, object);
                }
            }
        }
        Ok(())
    }

    /// The subschema `keyword` holds, if the walk has anything to find in it.
    fn live_keyword(&mut self, map: &'g Map<String, Value>, keyword: &str) -> Option<&'g Value> {
        map.get(keyword).filter(|s| self.live(s))
    }

    fn array(&mut self, map: &'g Map<String, Value>, items: &'i [Value]) -> Result<(), OutOfSteps> {
        let tuple: &'g [Value] =
            map.get("prefixItems").and_then(Value::as_array).map_or(&[], Vec::as_slice);
        let (items_all, items_tuple): (Option<&'g Value>, &'g [Value]) = match map.get("items") {
            Some(Value::Array(list)) => (None, list.as_slice()),
            Some(sub) if self.live(sub) => (Some(sub), &[]),
            _ => (None, &[]),
        };
        let additional = self.live_keyword(map, "additionalItems");
        let every: Vec<&'g Value> = ["contains", "unevaluatedItems"]
            .iter()
            .filter_map(|k| map.get(*k))
            .filter(|&s| self.live(s))
            .chain(items_all)
            .collect();
        let tuple_live = tuple.iter().chain(items_tuple).any(|s| self.live(s));
        if every.is_empty() && additional.is_none() && !tuple_live {
            return Ok(());
        }
        // Only `additionalItems` is live: it applies after the tuple.
        let start = if tuple_live || !every.is_empty() { 0 } else { items_tuple.len() };
        for (i, value) in items.iter().enumerate().skip(start) {
            self.tick(1)?;
            for sub in [tuple.get(i), items_tuple.get(i)].into_iter().flatten() {
                self.push(sub, Inst::Value(value));
            }
            if let Some(sub) = additional.filter(|_| i >= items_tuple.len()) {
                self.push(sub, Inst::Value(value));
            }
            for &sub in &every {
                self.push(sub, Inst::Value(value));
            }
        }
        Ok(())
    }

    /// The compiled pattern, `None` when the linear-time engine cannot compile it.
    fn regex(&mut self, pattern: &'g str) -> Result<Option<&regex::Regex>, OutOfSteps> {
        if !self.regexes.contains_key(pattern) {
            self.tick(pattern.len())?;
            let re = regex::RegexBuilder::new(pattern).size_limit(REGEX_SIZE_LIMIT).build().ok();
            self.regexes.insert(pattern, re);
        }
        Ok(self.regexes.get(pattern).and_then(Option::as_ref))
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::schema::graph::Origin;
    use serde_json::json;

    /// Every string (and number) `schema` marks in `instance`, sorted.
    fn found(schema: &Value, instance: &Value, limit: usize) -> (Vec<String>, bool) {
        let graph = Graph::build(schema, &Origin::detached());
        let m = marked_within(&graph, instance, limit);
        let mut out: Vec<String> = m.names.iter().map(|s| s.to_string()).collect();
        let mut stack = m.values;
        while let Some(v) = stack.pop() {
            match v {
                Value::String(s) => out.push(s.clone()),
                Value::Number(n) => out.push(n.to_string()),
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.values()),
                Value::Null | Value::Bool(_) => {}
            }
        }
        out.sort();
        out.dedup();
        (out, m.incomplete)
    }

    fn check(schema: Value, instance: Value, expect: &[&str]) {
        assert_eq!(found(&schema, &instance, MAX_WALK), (expect_owned(expect), false), "{schema}");
    }

    fn expect_owned(expect: &[&str]) -> Vec<String> {
        expect.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn marks_are_found_wherever_the_schema_applies_them() {
        let s = json!({"type": "string", "x-secret": true});
        // Plain properties; a marked object's every string and number.
        check(json!({"properties": {"a": s, "b": {}}}), json!({"a": "A", "b": "B"}), &["A"]);
        check(
            json!({"properties": {"o": {"x-secret": true}}}),
            json!({"o": {"u": "U", "n": [1234567, "V", null]}}),
            &["1234567", "U", "V"],
        );
        // Local references: pointers (escaped), `definitions`, anchors, the root.
        check(
            json!({"properties": {"a": {"$ref": "#/$defs/s"}, "b": {"$ref": "#/definitions/a~1b%20c"}},
                   "$defs": {"s": s}, "definitions": {"a/b c": s}}),
            json!({"a": "A", "b": "B"}),
            &["A", "B"],
        );
        check(
            json!({"properties": {"a": {"$ref": "#tok"}}, "$defs": {"t": {"$anchor": "tok", "x-secret": true}}}),
            json!({"a": "A"}),
            &["A"],
        );
        check(
            json!({"properties": {"v": s, "next": {"$ref": "#"}}}),
            json!({"v": "A", "next": {"v": "B", "next": {"v": "C"}}}),
            &["A", "B", "C"],
        );
        // Nested resources: `$id`s, references relative to them, anchors inside them.
        check(
            json!({"$id": "https://example.com/root.json",
                   "properties": {"a": {"$ref": "item.json#/properties/t"}, "b": {"$ref": "item.json#it"},
                                  "c": {"$ref": "https://example.com/item.json"}},
                   "$defs": {"item": {"$id": "item.json", "properties": {"t": s, "u": s},
                                      "$defs": {"x": {"$anchor": "it", "x-secret": true}}}}}),
            json!({"a": "A", "b": "B", "c": {"u": "C"}}),
            &["A", "B", "C"],
        );
        check(
            json!({"$ref": "inner.json",
                   "$defs": {"inner": {"$id": "inner.json", "$defs": {"s": s},
                                       "properties": {"a": {"$ref": "#/$defs/s"}}}}}),
            json!({"a": "A"}),
            &["A"],
        );
        // Combinators and conditionals: every branch, whether it validates or not.
        check(
            json!({"allOf": [{"properties": {"a": s}}],
                   "anyOf": [{"properties": {"b": s}}, {"properties": {"b": {"type": "integer"}}}],
                   "oneOf": [{"properties": {"c": s}}], "not": {"properties": {"g": s}},
                   "if": {"properties": {"d": s}}, "then": {"properties": {"e": s}},
                   "else": {"properties": {"f": s}}}),
            json!({"a": "A", "b": "B", "c": "C", "d": "D", "e": "E", "f": "F", "g": "G", "h": "H"}),
            &["A", "B", "C", "D", "E", "F", "G"],
        );
        // Arrays: `prefixItems`, `items` (both forms), `additionalItems`, `contains`,
        // `unevaluatedItems`; nested arrays of objects.
        check(
            json!({"prefixItems": [s], "items": {"properties": {"k": s}}}),
            json!(["P", {"k": "K"}, {"k": "L"}]),
            &["K", "L", "P"],
        );
        check(
            json!({"items": [{}, s], "additionalItems": {"properties": {"k": s}}}),
            json!(["a", "B", {"k": "C"}]),
            &["B", "C"],
        );
        check(
            json!({"contains": {"properties": {"k": s}}}),
            json!([{"k": "A"}, {"j": "B"}]),
            &["A"],
        );
        check(json!({"unevaluatedItems": s}), json!(["A", "B"]), &["A", "B"]);
        check(
            json!({"properties": {"rows": {"items": {"items": {"$ref": "#/$defs/row"}}}},
                   "$defs": {"row": {"properties": {"pin": s}}}}),
            json!({"rows": [[{"pin": "P1"}], [{"pin": "P2"}, {"pin": "P3"}]]}),
            &["P1", "P2", "P3"],
        );
        // Objects: `patternProperties`, `additionalProperties`, `unevaluatedProperties`,
        // `propertyNames`, `dependentSchemas` and `dependencies`.
        check(
            json!({"properties": {"a": {}}, "patternProperties": {"^tok_": s},
                   "additionalProperties": {"properties": {"k": s}}}),
            json!({"a": "A", "tok_1": "T", "tok_2": "U", "other": {"k": "K"}}),
            &["K", "T", "U"],
        );
        check(
            json!({"properties": {"a": {}}, "unevaluatedProperties": s}),
            json!({"a": "A", "b": "B"}),
            &["B"],
        );
        check(json!({"propertyNames": {"x-secret": true}}), json!({"NameA": 1}), &["NameA"]);
        check(
            json!({"dependentSchemas": {"mode": {"properties": {"key": s}}},
                   "dependencies": {"kind": {"properties": {"pin": s}}, "list": ["a"]}}),
            json!({"mode": "x", "key": "K", "pin": "P"}),
            &["K"],
        );
        // A pattern the linear-time engine cannot compile matches every name, and leaves
        // it to `additionalProperties` as well.
        check(
            json!({"patternProperties": {"(?<=x)y": {"properties": {"p": s}}},
                   "additionalProperties": {"properties": {"q": s}}}),
            json!({"a": {"p": "P", "q": "Q"}}),
            &["P", "Q"],
        );
        // A recursive structure through `$dynamicRef`.
        check(
            json!({"$dynamicAnchor": "node", "properties": {"v": s, "kids": {"items": {"$dynamicRef": "#node"}}}}),
            json!({"v": "A", "kids": [{"v": "B", "kids": [{"v": "C"}]}]}),
            &["A", "B", "C"],
        );
        // Draft 4 names resources with `id`; later drafts do not.
        check(
            json!({"$schema": "http://json-schema.org/draft-04/schema#",
                   "properties": {"a": {"$ref": "t.json"}}, "definitions": {"t": {"id": "t.json", "x-secret": true}}}),
            json!({"a": "A"}),
            &["A"],
        );
        check(
            json!({"properties": {"a": {"$ref": "#/$defs/t"}},
                   "$defs": {"t": {"id": "elsewhere.json", "properties": {"b": {"$ref": "#/$defs/s"}}}, "s": s}}),
            json!({"a": {"b": "B"}}),
            &["B"],
        );
    }

    #[test]
    fn odd_schemas_never_panic_and_unresolved_references_mask_what_they_apply_to() {
        let instance = json!([1234567, {"a": [2345678, {"b": "secret-c"}]}]);
        let everything = expect_owned(&["1234567", "2345678", "secret-c"]);
        for (schema, masks) in [
            (json!(true), false),
            (json!(false), false),
            (json!(3), false),
            // Not references at all (the graph reads only strings), and no mark.
            (
                json!({"properties": 3, "items": "x", "$ref": 5, "allOf": {}, "x-secret": "yes"}),
                false,
            ),
            (json!({"patternProperties": {"[": {"x-secret": true}}}), false),
            // References the graph leaves unresolved: whatever they apply to is masked.
            (json!({"$ref": "#/nope"}), true),
            (json!({"$ref": "other.json#/x"}), true),
            (json!({"$ref": "#missing"}), true),
            (json!({"$ref": "::not a uri::"}), true),
            (json!({"$ref": "https://example.com/schema.json"}), true),
            (json!({"$dynamicRef": "#x", "$id": "%%%"}), true),
            (json!({"items": {"$ref": "#/nope"}}), true),
        ] {
            let (got, incomplete) = found(&schema, &instance, MAX_WALK);
            assert!(!incomplete, "{schema}");
            let expect = if masks { everything.clone() } else { Vec::new() };
            assert_eq!(got, expect, "{schema}");
        }
        // Only the node the unresolved reference applies to: its siblings keep their own
        // reading, and a property name under one is masked as a name.
        check(
            json!({"properties": {"a": {"$ref": "#/$defs/gone"}, "b": {"type": "string"}},
                   "propertyNames": {"anyOf": [{"$ref": "#nope"}]}}),
            json!({"a": {"k": "under-the-ref"}, "b": "beside-it"}),
            &["a", "b", "under-the-ref"],
        );
    }

    #[test]
    fn cycles_and_exponential_chains_are_walked_once() {
        let s = json!({"x-secret": true});
        // A `$ref` cycle.
        check(
            json!({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"},
                   "b": {"$ref": "#/$defs/a", "properties": {"s": s}}}}),
            json!({"s": "S"}),
            &["S"],
        );
        // Sixty levels of `anyOf`, each referring twice to the next: 2^60 paths.
        let mut defs = Map::new();
        for i in 0..60 {
            let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
            defs.insert(format!("d{i}"), json!({"anyOf": [next, {"allOf": [next]}]}));
        }
        defs.insert("d60".into(), json!({"properties": {"s": s}}));
        let schema = json!({"items": {"$ref": "#/$defs/d0"}, "$defs": defs});
        let instance = json!([{"s": "A"}, {"s": "B"}]);
        let (result, work) = crate::work::counted(|| found(&schema, &instance, MAX_WALK));
        assert_eq!(result, (expect_owned(&["A", "B"]), false));
        // Each of the 120 subschemas once per item, not once per path.
        assert!(work.steps < 2_000, "{work:?}");
    }

    #[test]
    fn a_walk_past_its_cap_says_so() {
        let schema = json!({"items": {"properties": {"s": {"x-secret": true}}}});
        let instance: Value = (0..100).map(|i| json!({"s": format!("S{i}")})).collect();
        let (got, incomplete) = found(&schema, &instance, 1_000);
        assert_eq!((got.len(), incomplete), (100, false));
        let (got, incomplete) = found(&schema, &instance, 100);
        assert!(got.len() < 100);
        assert!(incomplete);
    }

    #[test]
    fn unmarked_subschemas_are_never_entered() {
        // A large instance under a schema that marks one field: the walk looks at that
        // field only, not at the thousands of items beside it.
        let schema = json!({"properties": {"key": {"x-secret": true},
                                           "rows": {"items": {"properties": {"v": {}}}}}});
        let rows: Vec<Value> = (0..10_000).map(|i| json!({"v": i})).collect();
        let instance = json!({"key": "K", "rows": rows});
        assert_eq!(found(&schema, &instance, 10), (expect_owned(&["K"]), false));
    }

    #[test]
    fn the_walk_is_linear_in_the_schema() {
        // A chain of `properties` `depth` deep, marked only at its end: every level asks
        // whether the rest of the chain has anything to find, which is answered once per
        // subschema (asked afresh, it would cost the square of the depth).
        fn chain(depth: usize) -> (Value, Value) {
            let mut schema = json!({"properties": {"s": {"x-secret": true}}});
            let mut instance = json!({"s": "the-secret"});
            // Moved in, not through `json!` (which would copy the chain at every level).
            for i in 0..depth {
                let mut properties = Map::new();
                properties.insert("n".into(), schema);
                properties.insert("v".into(), json!({"type": "string"}));
                let mut level = Map::new();
                level.insert("properties".into(), Value::Object(properties));
                level.insert("allOf".into(), json!([{"properties": {"w": {"minLength": i}}}]));
                schema = Value::Object(level);
                let mut fields = Map::new();
                fields.insert("n".into(), instance);
                fields.insert("v".into(), json!("plain"));
                fields.insert("w".into(), json!("plain"));
                instance = Value::Object(fields);
            }
            (schema, instance)
        }
        // The work counted: the walk's steps, the subschemas asked whether they are live,
        // and every allocation.
        let work = |depth: usize| {
            let (schema, instance) = chain(depth);
            let graph = Graph::build(&schema, &Origin::detached());
            let (m, work) = crate::work::counted(|| marked(&graph, &instance));
            assert_eq!((m.values.len(), m.incomplete), (1, false));
            work
        };
        // Deep values are dropped recursively: a thread with room for them.
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || crate::work::assert_linear("deep marked values", 1_000, work))
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn the_walk_is_linear_in_the_instance() {
        let schema = json!({"items": {"$ref": "#/$defs/row"},
                            "$defs": {"row": {"allOf": [{"properties": {"pin": {"x-secret": true}}}],
                                              "properties": {"tags": {"items": {"$ref": "#/$defs/row"}}}}}});
        let instance = |n: usize| -> Value {
            (0..n).map(|i| json!({"pin": format!("pin-{i}"), "tags": [{"pin": i}]})).collect()
        };
        let graph = Graph::build(&schema, &Origin::detached());
        crate::work::assert_linear("marked items", 2_000, |n| {
            let instance = instance(n);
            let (m, work) = crate::work::counted(|| marked(&graph, &instance));
            assert_eq!(m.values.len(), 2 * n);
            work
        });
    }
}
