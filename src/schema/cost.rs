//! The cost of a user schema (SPEC §18: bounded cost): how many subschemas one evaluation
//! may visit once every `$ref` is followed.
//!
//! A 200-byte schema whose definitions each refer twice to the next expands to 2^n
//! subschemas, and a validator evaluates them all, in exponential time and memory. The
//! expansion is computed here without expanding: each `$ref` target's size is computed
//! once and reused (a DAG walk), a `$ref` back to a definition that is being sized (a
//! recursive schema, such as a tree) counts once — its cost grows with the instance, not
//! with the schema — and the sum stops at [`MAX_EXPANSION`]. Local references (`#`,
//! `#/pointer`) are followed, and so are references to other schema files inside the
//! project (through the confinement rule), which are sized the same way.
//!
//! Not followed: anchors (`#name`), `$dynamicRef`, and references resolved against a
//! nested `$id`; each counts as one subschema.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde_json::Value;

use crate::error::Finding;

/// The most subschemas one evaluation of a contract's schema may visit, `$ref`s expanded.
pub const MAX_EXPANSION: u64 = 1_000_000;
/// The longest chain of nested subschemas and `$ref` hops followed.
pub const MAX_NESTING: usize = 512;
/// The most schema files one schema may pull in through `$ref`.
const MAX_FILES: usize = 64;

/// Where a subschema lives: a file (`None` = the schema itself) and a JSON pointer.
type Place = (Option<PathBuf>, String);

/// How a keyword holds subschemas.
enum Holds {
    /// One subschema (or, for `items` in old drafts, a list).
    One,
    /// A list of subschemas.
    List,
    /// A map of named subschemas.
    Map,
}

fn holds(keyword: &str) -> Option<Holds> {
    Some(match keyword {
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
        | "unevaluatedProperties" => Holds::One,
        "allOf" | "anyOf" | "oneOf" | "prefixItems" => Holds::List,
        "properties" | "patternProperties" | "dependentSchemas" | "dependencies" => Holds::Map,
        _ => return None,
    })
}

/// A document a `$ref` points into: the schema itself (borrowed) or a loaded file.
enum Doc<'a> {
    Root(&'a Value),
    File(Rc<Value>),
}

impl Doc<'_> {
    fn get(&self) -> &Value {
        match self {
            Doc::Root(v) => v,
            Doc::File(v) => v,
        }
    }
}

struct Sizer<'a> {
    root_schema: &'a Value,
    base_dir: PathBuf,
    root: &'a Path,
    /// The project root, resolved only when a `$ref` leads to another file.
    confined: Option<crate::confine::Root>,
    files: HashMap<PathBuf, Option<Rc<Value>>>,
    /// Sized targets; `None` while being sized (a cycle).
    sizes: HashMap<Place, Option<u64>>,
    too_deep: bool,
}

impl<'a> Sizer<'a> {
    fn document(&mut self, file: &Option<PathBuf>) -> Option<Doc<'a>> {
        match file {
            None => Some(Doc::Root(self.root_schema)),
            Some(path) => {
                if !self.files.contains_key(path) {
                    if self.files.len() >= MAX_FILES {
                        return None;
                    }
                    let root = self.root;
                    let loaded = self
                        .confined
                        .get_or_insert_with(|| crate::confine::Root::new(root))
                        .read_path(path)
                        .and_then(|real| crate::document::load(&real, None))
                        .ok()
                        .map(|d| Rc::new(d.value));
                    self.files.insert(path.clone(), loaded);
                }
                self.files.get(path).cloned().flatten().map(Doc::File)
            }
        }
    }

    /// The size of the subschema at `place` (memoised).
    fn target(&mut self, place: Place, depth: usize) -> u64 {
        match self.sizes.get(&place) {
            Some(Some(size)) => return *size,
            // A reference back into a definition being sized: a recursive schema.
            Some(None) => return 1,
            None => {}
        }
        let Some(doc) = self.document(&place.0) else { return 1 };
        let Some(node) = doc.get().pointer(&place.1) else { return 1 };
        self.sizes.insert(place.clone(), None);
        let dir = place.0.as_deref().and_then(Path::parent).map(Path::to_path_buf);
        let size = self.node(node, &place.0, dir.as_deref(), depth + 1);
        self.sizes.insert(place, Some(size));
        size
    }

    /// The size of one subschema: itself, its subschemas, and what its `$ref` expands to.
    fn node(
        &mut self,
        node: &Value,
        file: &Option<PathBuf>,
        dir: Option<&Path>,
        depth: usize,
    ) -> u64 {
        if depth > MAX_NESTING {
            self.too_deep = true;
            return MAX_EXPANSION + 1;
        }
        let Value::Object(map) = node else { return 1 };
        let mut size: u64 = 1;
        for (key, value) in map {
            let add = if key == "$ref" {
                match value.as_str().and_then(|r| self.place_of(r, file, dir)) {
                    Some(place) => self.target(place, depth),
                    None => 1,
                }
            } else {
                match (holds(key), value) {
                    (Some(Holds::One), Value::Array(items))
                    | (Some(Holds::List), Value::Array(items)) => {
                        self.all(items.iter(), file, dir, depth)
                    }
                    (Some(Holds::One), _) => self.node(value, file, dir, depth + 1),
                    (Some(Holds::Map), Value::Object(named)) => {
                        self.all(named.values(), file, dir, depth)
                    }
                    _ => 0,
                }
            };
            size = size.saturating_add(add);
            if size > MAX_EXPANSION {
                break;
            }
        }
        size
    }

    fn all<'v>(
        &mut self,
        items: impl Iterator<Item = &'v Value>,
        file: &Option<PathBuf>,
        dir: Option<&Path>,
        depth: usize,
    ) -> u64 {
        let mut size: u64 = 0;
        for item in items {
            size = size.saturating_add(self.node(item, file, dir, depth + 1));
            if size > MAX_EXPANSION {
                break;
            }
        }
        size
    }

    /// The place a `$ref` points at, when it is followed.
    fn place_of(
        &self,
        reference: &str,
        file: &Option<PathBuf>,
        dir: Option<&Path>,
    ) -> Option<Place> {
        let (path, fragment) = match reference.split_once('#') {
            Some((path, fragment)) => (path, fragment),
            None => (reference, ""),
        };
        let pointer = super::percent_decode(fragment);
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return None; // an anchor
        }
        if path.is_empty() {
            return Some((file.clone(), pointer));
        }
        if path.contains(':') {
            return None; // a URI pactum does not follow (refused elsewhere)
        }
        let base = dir.map(Path::to_path_buf).unwrap_or_else(|| self.base_dir.clone());
        Some((Some(base.join(super::percent_decode(path))), pointer))
    }
}

/// How many subschemas one evaluation of `schema` may visit, `$ref`s expanded (capped just
/// above [`MAX_EXPANSION`]); `None` when the nesting is deeper than [`MAX_NESTING`].
pub fn expansion(schema: &Value, base_dir: &Path, root: &Path) -> Option<u64> {
    let mut sizer = Sizer {
        root_schema: schema,
        base_dir: base_dir.to_path_buf(),
        root,
        confined: None,
        files: HashMap::new(),
        sizes: HashMap::new(),
        too_deep: false,
    };
    let size = sizer.node(schema, &None, None, 0);
    (!sizer.too_deep).then_some(size)
}

/// A finding at `at` when `schema` would cost more than pactum evaluates.
pub fn check(schema: &Value, at: &str, base_dir: &Path, root: &Path) -> Option<Finding> {
    match expansion(schema, base_dir, root) {
        Some(size) if size <= MAX_EXPANSION => None,
        Some(_) => Some(Finding::new(
            at,
            format!(
                "this schema expands to more than {MAX_EXPANSION} subschemas once its `$ref`s are followed (definitions that refer to each other several times multiply); evaluating it would take exponential time and memory: refer to each definition once per level, or merge the definitions"
            ),
        )),
        None => Some(Finding::new(
            at,
            format!(
                "this schema nests deeper than {MAX_NESTING} levels through subschemas and `$ref`s; flatten the chain of definitions"
            ),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use serde_json::json;

    fn doubling(levels: usize) -> Value {
        let mut defs = serde_json::Map::new();
        for i in 0..levels {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(format!("d{i}"), json!({"anyOf": [{"$ref": next}, {"$ref": next}]}));
        }
        defs.insert(format!("d{levels}"), json!({"type": "string"}));
        json!({"$defs": defs, "$ref": "#/$defs/d0"})
    }

    fn size(schema: &Value) -> Option<u64> {
        expansion(schema, Path::new("."), Path::new("."))
    }

    #[test]
    fn doubling_definitions_are_measured_without_expanding_them() {
        let small = size(&doubling(5)).unwrap();
        assert!((60..200).contains(&small), "{small}");
        let huge = doubling(40);
        assert!(serde_json::to_string(&huge).unwrap().len() < 4000);
        assert!(size(&huge).unwrap() > MAX_EXPANSION);
        let finding = check(&huge, "/output_schema", Path::new("."), Path::new(".")).unwrap();
        assert_eq!(finding.pointer, "/output_schema");
    }

    #[test]
    fn recursive_and_shared_schemas_are_cheap() {
        let tree = json!({"$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "$ref": "#/$defs/node"});
        assert!(size(&tree).unwrap() < 20);
        let shared = json!({"$defs": {"address": {"type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}}}},
            "type": "object", "properties": {
                "home": {"$ref": "#/$defs/address"}, "work": {"$ref": "#/$defs/address"}}});
        assert!(size(&shared).unwrap() < 30);
        assert!(check(&shared, "", Path::new("."), Path::new(".")).is_none());
    }

    #[test]
    fn endless_chains_are_refused_not_overflowed() {
        let mut defs = serde_json::Map::new();
        for i in 0..5_000 {
            defs.insert(format!("d{i}"), json!({"$ref": format!("#/$defs/d{}", i + 1)}));
        }
        let chain = json!({"$defs": defs, "$ref": "#/$defs/d0"});
        assert_eq!(size(&chain), None);
        assert!(check(&chain, "", Path::new("."), Path::new(".")).is_some());
    }
}
