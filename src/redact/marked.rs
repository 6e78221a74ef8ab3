//! Finding the values a schema marks `"x-secret": true` in an instance, the way a validator
//! applies the schema to it (SPEC §18).
//!
//! The walk follows every keyword that applies a subschema to the instance or to a part of
//! it: `$ref`, `$dynamicRef` and `$recursiveRef` (JSON pointers, `$anchor`s,
//! `$dynamicAnchor`s and nested `$id`s of the schema document; with [`SchemaFiles`], also
//! the schema files it references, read by the same confined retriever that compiles it),
//! `allOf`, `anyOf`, `oneOf`, `not`, `if`, `then`, `else`, `dependentSchemas` (and
//! `dependencies`), `properties`, `patternProperties`, `additionalProperties`,
//! `propertyNames`, `items`, `prefixItems`, `additionalItems`, `contains`,
//! `unevaluatedProperties` and `unevaluatedItems`.
//!
//! It errs on the side of masking: every branch is followed whether or not the instance
//! satisfies it (a value one `anyOf` branch marks is masked even when another branch is
//! the one that validates), `$ref` siblings apply in every draft, `unevaluated*` applies to
//! everything its own schema object does not name, and a `patternProperties` pattern the
//! `regex` engine cannot compile matches every name.
//!
//! **Bounded:** each (subschema, instance node) pair is visited at most once, so a `$ref`
//! cycle ends and a chain of `anyOf`s that would expand exponentially is walked in at most
//! (schema nodes × instance nodes) steps; subschemas that neither mark nor refer are never
//! entered; the total work is capped at [`MAX_WALK`] steps and [`MAX_FILES`] files, and a
//! walk past a cap reports itself incomplete rather than miss a value silently.

use std::collections::{HashMap, HashSet};

use jsonschema::Uri;
use serde_json::{Map, Value};

/// The most steps one walk takes: (subschema, instance node) visits, instance members
/// looked at, names matched against patterns.
pub const MAX_WALK: usize = 2_000_000;
/// The most schema files one walk reads through `$ref`s.
pub const MAX_FILES: usize = 64;
/// Deeper subschemas are not indexed (the schema cost check refuses them anyway).
const MAX_DEPTH: usize = 512;
/// The largest regex a `patternProperties` pattern may compile to.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// The base URI of a schema that has no file of its own (the one `jsonschema` uses).
const DEFAULT_BASE: &str = "json-schema:///";

/// Where a schema's references to other files are read: the URI relative references
/// resolve against (the folder of the contract that holds the schema) and the retriever
/// that serves them (`schema::RootRetriever`: confined to the project).
pub struct SchemaFiles<'a> {
    base_uri: String,
    retriever: &'a dyn jsonschema::Retrieve,
}

impl<'a> SchemaFiles<'a> {
    /// `base_uri` as `crate::schema::base_uri` gives it for the contract's folder.
    pub fn new(base_uri: impl Into<String>, retriever: &'a dyn jsonschema::Retrieve) -> Self {
        SchemaFiles { base_uri: base_uri.into(), retriever }
    }
}

/// What a walk found.
#[derive(Debug, Default)]
pub(super) struct Marked<'i> {
    /// Instance values a subschema marks (every string inside one is secret).
    pub values: Vec<&'i Value>,
    /// Property names a `propertyNames` subschema marks.
    pub names: Vec<&'i str>,
    /// Why the walk stopped before it saw everything, if it did.
    pub incomplete: Option<Incomplete>,
}

/// Which cap a walk reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Incomplete {
    Steps,
    Files,
}

/// Every value `schema` marks secret in `instance`.
pub(super) fn marked<'i>(
    schema: &Value,
    instance: &'i Value,
    files: Option<&SchemaFiles<'_>>,
) -> Marked<'i> {
    marked_within(schema, instance, files, MAX_WALK)
}

/// [`marked`], in at most `limit` steps.
fn marked_within<'i>(
    schema: &Value,
    instance: &'i Value,
    files: Option<&SchemaFiles<'_>>,
    limit: usize,
) -> Marked<'i> {
    let base = files.map_or(DEFAULT_BASE, |f| f.base_uri.as_str());
    let (loaded, files_incomplete) = match files {
        Some(files) => load(schema, files),
        None => (Vec::new(), false),
    };
    let index = Index::build(schema, base, &loaded);
    let mut walk = Walk {
        index: &index,
        seen: HashSet::new(),
        steps: 0,
        limit,
        regexes: HashMap::new(),
        targets: HashMap::new(),
        todo: Vec::new(),
        out: Marked::default(),
    };
    walk.push(schema, Inst::Value(instance), 0);
    if walk.run().is_err() {
        walk.out.incomplete = Some(Incomplete::Steps);
    } else if files_incomplete {
        walk.out.incomplete = Some(Incomplete::Files);
    }
    walk.out
}

/// Reads the files `schema` references (and the files they reference), up to
/// [`MAX_FILES`]; `true` when there were more. A file that cannot be read is left out: a
/// schema referencing it does not compile, so no exchange runs with it.
fn load(schema: &Value, files: &SchemaFiles<'_>) -> (Vec<(String, Value)>, bool) {
    let mut loaded: Vec<(String, Value)> = Vec::new();
    let mut tried: HashSet<String> = HashSet::new();
    loop {
        let missing: Vec<String> = Index::build(schema, &files.base_uri, &loaded)
            .missing
            .into_iter()
            .filter(|uri| tried.insert(uri.clone()))
            .collect();
        if missing.is_empty() {
            return (loaded, false);
        }
        for uri in missing {
            if loaded.len() >= MAX_FILES {
                return (loaded, true);
            }
            let Ok(parsed) = Uri::parse(uri.clone()) else { continue };
            if let Ok(value) = files.retriever.retrieve(&parsed) {
                loaded.push((uri, value));
            }
        }
    }
}

fn addr(v: &Value) -> usize {
    std::ptr::from_ref(v) as usize
}

/// `reference` resolved against `base`, as (document URI, fragment).
fn resolve(base: &Uri<String>, reference: &str) -> Option<(String, String)> {
    let uri = jsonschema::uri::resolve_against(&base.borrow(), reference).ok()?;
    let text = uri.as_str();
    let (doc, fragment) = text.split_once('#').unwrap_or((text, ""));
    Some((doc.to_string(), percent_decode(fragment)))
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The subschemas a schema object holds, whichever way each keyword holds them.
fn subschemas(map: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    map.iter().flat_map(|(keyword, value)| -> Box<dyn Iterator<Item = &Value> + '_> {
        match (keyword.as_str(), value) {
            (
                "items"
                | "additionalItems"
                | "additionalProperties"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "propertyNames"
                | "unevaluatedItems"
                | "unevaluatedProperties",
                Value::Object(_),
            ) => Box::new(std::iter::once(value)),
            ("items" | "allOf" | "anyOf" | "oneOf" | "prefixItems", Value::Array(list)) => {
                Box::new(list.iter())
            }
            (
                "properties" | "patternProperties" | "dependentSchemas" | "dependencies" | "$defs"
                | "definitions",
                Value::Object(named),
            ) => Box::new(named.values().filter(|v| v.is_object())),
            _ => Box::new(std::iter::empty()),
        }
    })
}

/// Where every reference of a set of schema documents leads.
struct Index<'s> {
    /// Base URIs; a subschema's base is an index into this list.
    bases: Vec<Uri<String>>,
    base_ids: HashMap<String, usize>,
    /// Each resource (a document, or a subschema with an `$id`) by its URI.
    resources: HashMap<String, &'s Value>,
    /// `$anchor`s (and `$id: "#name"` of older drafts) by (resource URI, name).
    anchors: HashMap<(String, String), &'s Value>,
    /// Every `$dynamicAnchor` (and `$recursiveAnchor` resource) by name.
    dynamic: HashMap<String, Vec<&'s Value>>,
    /// The base of every indexed subschema.
    base_of: HashMap<usize, usize>,
    /// Subschemas with neither a mark nor a reference anywhere inside: never entered.
    inert: HashSet<usize>,
    /// Documents references lead to that are not among `resources`.
    missing: Vec<String>,
    /// Whether `id` (without `$`) names resources (draft 4).
    draft4: bool,
}

impl<'s> Index<'s> {
    fn build(root: &'s Value, base: &str, files: &'s [(String, Value)]) -> Index<'s> {
        let draft4 = root
            .get("$schema")
            .and_then(Value::as_str)
            .is_some_and(|s| s.contains("draft-04") || s.contains("draft-03"));
        let mut index = Index {
            bases: Vec::new(),
            base_ids: HashMap::new(),
            resources: HashMap::new(),
            anchors: HashMap::new(),
            dynamic: HashMap::new(),
            base_of: HashMap::new(),
            inert: HashSet::new(),
            missing: Vec::new(),
            draft4,
        };
        let mut references = Vec::new();
        let documents = std::iter::once((base, root))
            .chain(files.iter().map(|(uri, value)| (uri.as_str(), value)));
        for (uri, doc) in documents {
            let parsed =
                Uri::parse(uri.to_string()).or_else(|_| Uri::parse(DEFAULT_BASE.to_string()));
            let Ok(parsed) = parsed else { continue };
            let at = index.base(parsed);
            let key = index.bases[at].as_str().split('#').next().unwrap_or_default().to_string();
            index.resources.entry(key).or_insert(doc);
            index.scan(doc, at, 0, &mut references);
        }
        for (at, reference) in references {
            if let Some((doc, _)) = resolve(&index.bases[at], reference)
                && !index.resources.contains_key(&doc)
                && !index.missing.contains(&doc)
            {
                index.missing.push(doc);
            }
        }
        index
    }

    fn base(&mut self, uri: Uri<String>) -> usize {
        if let Some(&at) = self.base_ids.get(uri.as_str()) {
            return at;
        }
        self.base_ids.insert(uri.as_str().to_string(), self.bases.len());
        self.bases.push(uri);
        self.bases.len() - 1
    }

    /// Indexes `node` and what it holds; `true` when the walk has to enter it.
    fn scan(
        &mut self,
        node: &'s Value,
        mut base: usize,
        depth: usize,
        references: &mut Vec<(usize, &'s str)>,
    ) -> bool {
        let Value::Object(map) = node else { return false };
        if depth > MAX_DEPTH {
            return true;
        }
        let id = map.get("$id").or_else(|| map.get("id").filter(|_| self.draft4));
        if let Some(id) = id.and_then(Value::as_str) {
            if let Some(name) = id.strip_prefix('#') {
                self.anchor(base, name, node);
            } else if let Some((doc, _)) = resolve(&self.bases[base], id)
                && let Ok(uri) = Uri::parse(doc.clone())
            {
                base = self.base(uri);
                self.resources.entry(doc).or_insert(node);
            }
        }
        self.base_of.insert(addr(node), base);
        if let Some(name) = map.get("$anchor").and_then(Value::as_str) {
            self.anchor(base, name, node);
        }
        if let Some(name) = map.get("$dynamicAnchor").and_then(Value::as_str) {
            self.anchor(base, name, node);
            self.dynamic.entry(name.to_string()).or_default().push(node);
        }
        if map.get("$recursiveAnchor") == Some(&Value::Bool(true)) {
            self.dynamic.entry(String::new()).or_default().push(node);
        }
        let mut enter = map.get("x-secret") == Some(&Value::Bool(true));
        for keyword in ["$ref", "$dynamicRef", "$recursiveRef"] {
            if let Some(reference) = map.get(keyword).and_then(Value::as_str) {
                references.push((base, reference));
                enter = true;
            }
        }
        for sub in subschemas(map) {
            enter |= self.scan(sub, base, depth + 1, references);
        }
        if !enter {
            self.inert.insert(addr(node));
        }
        enter
    }

    fn anchor(&mut self, base: usize, name: &str, node: &'s Value) {
        let doc = self.bases[base].as_str().split('#').next().unwrap_or_default().to_string();
        self.anchors.entry((doc, name.to_string())).or_insert(node);
    }

    /// The subschema `reference` (from a subschema whose base is `base`) leads to.
    fn target(&self, base: usize, reference: &str) -> Option<&'s Value> {
        let (doc, fragment) = resolve(self.bases.get(base)?, reference)?;
        let resource = *self.resources.get(&doc)?;
        if fragment.is_empty() {
            Some(resource)
        } else if fragment.starts_with('/') {
            resource.pointer(&fragment)
        } else {
            self.anchors.get(&(doc, fragment)).copied()
        }
    }
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

struct Walk<'s, 'i, 'x> {
    index: &'x Index<'s>,
    /// (subschema, instance node) pairs already visited.
    seen: HashSet<(usize, usize, bool)>,
    steps: usize,
    limit: usize,
    regexes: HashMap<&'s str, Option<regex::Regex>>,
    /// Where each reference (by its keyword's value and the base) leads.
    targets: HashMap<(usize, usize), Vec<&'s Value>>,
    todo: Vec<(&'s Value, Inst<'i>, usize)>,
    out: Marked<'i>,
}

impl<'s, 'i> Walk<'s, 'i, '_> {
    fn tick(&mut self, n: usize) -> Result<(), OutOfSteps> {
        self.steps = self.steps.saturating_add(n);
        if self.steps > self.limit { Err(OutOfSteps) } else { Ok(()) }
    }

    /// Whether the walk has anything to find in `schema`.
    fn live(&self, schema: &Value) -> bool {
        schema.is_object() && !self.index.inert.contains(&addr(schema))
    }

    fn push(&mut self, schema: &'s Value, inst: Inst<'i>, base: usize) {
        if self.live(schema) {
            self.todo.push((schema, inst, base));
        }
    }

    fn run(&mut self) -> Result<(), OutOfSteps> {
        while let Some((schema, inst, base)) = self.todo.pop() {
            let (at, name) = inst.key();
            if !self.seen.insert((addr(schema), at, name)) {
                continue;
            }
            self.tick(1)?;
            let Value::Object(map) = schema else { continue };
            let base = self.index.base_of.get(&addr(schema)).copied().unwrap_or(base);
            if map.get("x-secret") == Some(&Value::Bool(true)) {
                // Everything inside is secret: nothing below can add to it.
                match inst {
                    Inst::Value(v) => self.out.values.push(v),
                    Inst::Name(s) => self.out.names.push(s),
                }
                continue;
            }
            self.in_place(map, inst, base);
            match inst {
                Inst::Value(Value::Object(fields)) => self.object(map, inst, fields, base)?,
                Inst::Value(Value::Array(items)) => self.array(map, items, base)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Keywords that apply subschemas to the instance itself.
    fn in_place(&mut self, map: &'s Map<String, Value>, inst: Inst<'i>, base: usize) {
        for keyword in ["$ref", "$dynamicRef", "$recursiveRef"] {
            if let Some(reference) = map.get(keyword) {
                for target in self.targets(keyword, reference, base) {
                    self.push(target, inst, base);
                }
            }
        }
        for keyword in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(list)) = map.get(keyword) {
                for sub in list {
                    self.push(sub, inst, base);
                }
            }
        }
        for keyword in ["not", "if", "then", "else"] {
            if let Some(sub) = map.get(keyword) {
                self.push(sub, inst, base);
            }
        }
    }

    /// Where a `$ref`-like keyword leads: its target, and for a dynamic reference every
    /// dynamic anchor of its name (whichever the evaluation path would pick).
    fn targets(&mut self, keyword: &str, reference: &'s Value, base: usize) -> Vec<&'s Value> {
        let Value::String(text) = reference else { return Vec::new() };
        let key = (addr(reference), base);
        if let Some(found) = self.targets.get(&key) {
            return found.clone();
        }
        let mut found: Vec<&'s Value> = self.index.target(base, text).into_iter().collect();
        let name = match keyword {
            "$dynamicRef" => text.rsplit_once('#').map(|(_, name)| percent_decode(name)),
            "$recursiveRef" => Some(String::new()),
            _ => None,
        };
        if let Some(dynamic) = name.and_then(|n| self.index.dynamic.get(&n)) {
            found.extend(dynamic.iter().copied());
        }
        self.targets.insert(key, found.clone());
        found
    }

    fn object(
        &mut self,
        map: &'s Map<String, Value>,
        object: Inst<'i>,
        fields: &'i Map<String, Value>,
        base: usize,
    ) -> Result<(), OutOfSteps> {
        let live = |w: &Self, keyword: &str| map.get(keyword).filter(|s| w.live(s));
        let properties = map.get("properties").and_then(Value::as_object);
        let patterns: Vec<(&'s str, &'s Value)> = map
            .get("patternProperties")
            .and_then(Value::as_object)
            .map(|p| p.iter().map(|(k, v)| (k.as_str(), v)).collect())
            .unwrap_or_default();
        let patterns_live = patterns.iter().any(|(_, s)| self.live(s));
        let additional = live(self, "additionalProperties");
        let unevaluated = live(self, "unevaluatedProperties");
        let names = live(self, "propertyNames");
        let dependent: Vec<&'s Map<String, Value>> = ["dependentSchemas", "dependencies"]
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
                            self.push(sub, Inst::Value(value), base);
                        }
                    }
                } else {
                    for (name, value) in fields {
                        self.tick(1)?;
                        if let Some(sub) = properties.get(name) {
                            self.push(sub, Inst::Value(value), base);
                        }
                    }
                }
            }
            for schemas in dependent {
                for (name, sub) in schemas {
                    self.tick(1)?;
                    if fields.contains_key(name) && sub.is_object() {
                        // `dependentSchemas` applies to the object itself.
                        self.push(sub, object, base);
                    }
                }
            }
            return Ok(());
        }
        for (name, value) in fields {
            self.tick(1)?;
            let mut named = false;
            if let Some(sub) = properties.and_then(|p| p.get(name)) {
                self.push(sub, Inst::Value(value), base);
                named = true;
            }
            for &(pattern, sub) in &patterns {
                self.tick(1 + name.len() / 64)?;
                match self.regex(pattern)?.map(|re| re.is_match(name)) {
                    Some(false) => {}
                    Some(true) => {
                        self.push(sub, Inst::Value(value), base);
                        named = true;
                    }
                    // A pattern pactum cannot compile matches every name, and leaves it
                    // to `additionalProperties` too.
                    None => self.push(sub, Inst::Value(value), base),
                }
            }
            if !named {
                for sub in [additional, unevaluated].into_iter().flatten() {
                    self.push(sub, Inst::Value(value), base);
                }
            }
            if let Some(sub) = names {
                self.push(sub, Inst::Name(name), base);
            }
        }
        for schemas in dependent {
            for (name, sub) in schemas {
                self.tick(1)?;
                if fields.contains_key(name) && sub.is_object() {
                    self.push(sub, object, base);
                }
            }
        }
        Ok(())
    }

    fn array(
        &mut self,
        map: &'s Map<String, Value>,
        items: &'i [Value],
        base: usize,
    ) -> Result<(), OutOfSteps> {
        let tuple: &'s [Value] =
            map.get("prefixItems").and_then(Value::as_array).map_or(&[], Vec::as_slice);
        let (items_all, items_tuple): (Option<&'s Value>, &'s [Value]) = match map.get("items") {
            Some(Value::Array(list)) => (None, list.as_slice()),
            Some(sub) if self.live(sub) => (Some(sub), &[]),
            _ => (None, &[]),
        };
        let additional = map.get("additionalItems").filter(|s| self.live(s));
        let every: Vec<&'s Value> = ["contains", "unevaluatedItems"]
            .iter()
            .filter_map(|k| map.get(*k))
            .filter(|s| self.live(s))
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
                self.push(sub, Inst::Value(value), base);
            }
            if let Some(sub) = additional.filter(|_| i >= items_tuple.len()) {
                self.push(sub, Inst::Value(value), base);
            }
            for &sub in &every {
                self.push(sub, Inst::Value(value), base);
            }
        }
        Ok(())
    }

    /// The compiled pattern, `None` when the linear-time engine cannot compile it.
    fn regex(&mut self, pattern: &'s str) -> Result<Option<&regex::Regex>, OutOfSteps> {
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
    use serde_json::json;

    /// Every string (and number) `schema` marks in `instance`, sorted.
    fn found(schema: &Value, instance: &Value, limit: usize) -> (Vec<String>, Option<Incomplete>) {
        let m = marked_within(schema, instance, None, limit);
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
        assert_eq!(found(&schema, &instance, MAX_WALK), (expect_owned(expect), None), "{schema}");
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
    fn odd_schemas_and_unresolvable_references_never_panic() {
        for schema in [
            json!(true),
            json!(false),
            json!(3),
            json!({"properties": 3, "items": "x", "$ref": 5, "allOf": {}, "x-secret": "yes"}),
            json!({"$ref": "#/nope"}),
            json!({"$ref": "other.json#/x"}),
            json!({"$ref": "#missing"}),
            json!({"$ref": "::not a uri::"}),
            json!({"$dynamicRef": "#x", "$id": "%%%"}),
            json!({"patternProperties": {"[": {"x-secret": true}}}),
        ] {
            let (got, incomplete) = found(&schema, &json!([1, {"a": [2, {"b": "c"}]}]), MAX_WALK);
            assert!(incomplete.is_none(), "{schema}");
            if schema.get("patternProperties").is_none() {
                assert!(got.is_empty(), "{schema}: {got:?}");
            }
        }
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
        let started = std::time::Instant::now();
        let instance = json!([{"s": "A"}, {"s": "B"}]);
        assert_eq!(found(&schema, &instance, MAX_WALK), (expect_owned(&["A", "B"]), None));
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    }

    #[test]
    fn a_walk_past_its_cap_says_so() {
        let schema = json!({"items": {"properties": {"s": {"x-secret": true}}}});
        let instance: Value = (0..100).map(|i| json!({"s": format!("S{i}")})).collect();
        let (got, incomplete) = found(&schema, &instance, 1_000);
        assert_eq!((got.len(), incomplete), (100, None));
        let (got, incomplete) = found(&schema, &instance, 100);
        assert!(got.len() < 100);
        assert_eq!(incomplete, Some(Incomplete::Steps));
    }

    #[test]
    fn unmarked_subschemas_are_never_entered() {
        // A large instance under a schema that marks one field: the walk looks at that
        // field only, not at the thousands of items beside it.
        let schema = json!({"properties": {"key": {"x-secret": true},
                                           "rows": {"items": {"properties": {"v": {}}}}}});
        let rows: Vec<Value> = (0..10_000).map(|i| json!({"v": i})).collect();
        let instance = json!({"key": "K", "rows": rows});
        assert_eq!(found(&schema, &instance, 10), (expect_owned(&["K"]), None));
    }

    #[test]
    fn the_walk_is_linear_in_the_instance() {
        let schema = json!({"items": {"$ref": "#/$defs/row"},
                            "$defs": {"row": {"allOf": [{"properties": {"pin": {"x-secret": true}}}],
                                              "properties": {"tags": {"items": {"$ref": "#/$defs/row"}}}}}});
        let instance = |n: usize| -> Value {
            (0..n).map(|i| json!({"pin": format!("pin-{i}"), "tags": [{"pin": i}]})).collect()
        };
        let time = |n: usize| {
            let instance = instance(n);
            let mut times: Vec<std::time::Duration> = (0..3)
                .map(|_| {
                    let started = std::time::Instant::now();
                    let m = marked(&schema, &instance, None);
                    assert_eq!(m.values.len(), 2 * n);
                    started.elapsed()
                })
                .collect();
            times.sort();
            times[1]
        };
        let (small, large) = (time(2_000), time(8_000));
        let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
        assert!(ratio < 8.0, "2000 items took {small:?}, 8000 took {large:?} ({ratio:.1}x)");
    }
}
