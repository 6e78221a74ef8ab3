//! The cost of a user schema (SPEC §18: bounded cost): how many subschemas one evaluation
//! may visit once every reference is followed, measured on the schema's resolved graph
//! ([`super::graph`]): `$ref` by pointer, anchor (`$anchor`) or URI, `$dynamicRef` and
//! `$recursiveRef` (every schema the dynamic scope may pick counts), references resolved
//! against embedded `$id`s, and schema files inside the project.
//!
//! A 200-byte schema whose definitions each refer twice to the next expands to 2^n
//! subschemas, and a validator evaluates them all, in exponential time and memory. The
//! expansion is computed here without expanding: each subschema's size is computed once
//! and reused (memoised per node of the graph, so the measure is linear in the graph), a
//! reference back to a subschema that is being sized (a recursive schema, such as a tree)
//! counts once — its cost grows with the instance, not with the schema — and the sum
//! stops at [`MAX_EXPANSION`].
//!
//! Two refusals, two codes:
//! - `schema_limit_exceeded`: the measure bounded the cost, and it is above
//!   [`MAX_EXPANSION`];
//! - `schema_too_costly`: the measure cannot bound it — subschemas and references nest
//!   deeper than [`MAX_NESTING`] (the measure and the validator both recurse along them),
//!   or the schema reads more files than the graph reads for one schema
//!   ([`super::graph::MAX_FILES`], [`super::graph::MAX_FILE_BYTES`]).

use std::path::Path;

use serde_json::Value;

use super::graph::{
    Graph, NodeId, Origin, ProjectFiles, Slot, Targets, folder_uri, for_each_subschema,
};
use crate::error::{Code, Error, Finding};

/// The most subschemas one evaluation of a contract's schema may visit, references expanded.
pub const MAX_EXPANSION: u64 = 1_000_000;
/// The longest chain of nested subschemas and reference hops followed.
pub const MAX_NESTING: usize = 512;

/// Why a schema is refused before anything compiles it.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// The measured expansion is above [`MAX_EXPANSION`] (`schema_limit_exceeded`).
    TooLarge(Finding),
    /// The measure cannot bound the cost (`schema_too_costly`).
    Unbounded(Finding),
}

impl Refusal {
    pub fn code(&self) -> Code {
        match self {
            Refusal::TooLarge(_) => Code::SchemaLimitExceeded,
            Refusal::Unbounded(_) => Code::SchemaTooCostly,
        }
    }

    pub fn finding(&self) -> &Finding {
        match self {
            Refusal::TooLarge(f) | Refusal::Unbounded(f) => f,
        }
    }

    /// The error for the file at `path` that holds the schema.
    pub fn into_error(self, path: &Path) -> Error {
        let path = path.to_path_buf();
        match self {
            Refusal::TooLarge(f) => Error::SchemaLimit { path, findings: vec![f] },
            Refusal::Unbounded(f) => Error::SchemaTooCostly { path, findings: vec![f] },
        }
    }

    /// The fix, for a finding's help line.
    pub fn help(&self) -> &'static str {
        match self {
            Refusal::TooLarge(_) => {
                "keep `$ref` expansion small: each definition referred to once per level"
            }
            Refusal::Unbounded(_) => {
                "flatten the chain of definitions, and keep referenced schema files few and small"
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Memo {
    Unvisited,
    Sizing,
    Sized(u64),
}

struct Sizer<'g, 's> {
    graph: &'g Graph<'s>,
    memo: Vec<Memo>,
    too_deep: bool,
}

impl Sizer<'_, '_> {
    /// The size of one subschema: itself, the subschemas it evaluates, and what its
    /// references lead to.
    fn size(&mut self, value: &Value, depth: usize) -> u64 {
        crate::work::count(1);
        if depth > MAX_NESTING {
            self.too_deep = true;
            return MAX_EXPANSION + 1;
        }
        let Value::Object(map) = value else { return 1 };
        let node = self.graph.node_of(value);
        if let Some(node) = node {
            match self.memo[node] {
                Memo::Sized(size) => return size,
                // A reference back into a subschema being sized: a recursive schema.
                Memo::Sizing => return 1,
                Memo::Unvisited => self.memo[node] = Memo::Sizing,
            }
        }
        let mut size: u64 = 1;
        let mut children = Vec::new();
        for_each_subschema(map, false, &mut |_, _, child| children.push(child));
        for child in children {
            size = size.saturating_add(self.size(child, depth + 1));
            if size > MAX_EXPANSION {
                break;
            }
        }
        if let Some(node) = node {
            let graph = self.graph;
            'references: for reference in graph.references(node) {
                // Unresolved references fail compilation; they cost nothing here.
                let Targets::Resolved(targets) = &reference.targets else { continue };
                for &target in targets {
                    size = size.saturating_add(self.size(graph.value(target), depth + 1));
                    if size > MAX_EXPANSION {
                        break 'references;
                    }
                }
            }
            self.memo[node] = Memo::Sized(size);
        }
        size
    }
}

/// How many subschemas one evaluation of the graph's schema may visit, references
/// expanded (capped just above [`MAX_EXPANSION`]); `None` when the nesting is deeper than
/// [`MAX_NESTING`].
pub fn expansion(graph: &Graph<'_>, schema: &Value) -> Option<u64> {
    let mut sizer = Sizer { graph, memo: vec![Memo::Unvisited; graph.len()], too_deep: false };
    let size = sizer.size(schema, 0);
    (!sizer.too_deep).then_some(size)
}

/// The refusal at `at` when the schema of `graph` (`schema` is its root) would cost more
/// than pactum evaluates, or cannot be measured.
pub fn check_graph(graph: &Graph<'_>, schema: &Value, at: &str) -> Option<Refusal> {
    if let Some(overflow) = graph.overflow() {
        return Some(Refusal::Unbounded(Finding::new(
            at,
            format!(
                "the cost of this schema cannot be measured: {overflow}; pactum does not evaluate it"
            ),
        )));
    }
    match expansion(graph, schema) {
        Some(size) if size <= MAX_EXPANSION => None,
        Some(_) => Some(Refusal::TooLarge(Finding::new(
            at,
            format!(
                "this schema expands to more than {MAX_EXPANSION} subschemas once its `$ref`s are followed (definitions that refer to each other several times multiply); evaluating it would take exponential time and memory: refer to each definition once per level, or merge the definitions"
            ),
        ))),
        None => Some(Refusal::Unbounded(Finding::new(
            at,
            format!(
                "the cost of this schema cannot be bounded: subschemas and references nest deeper than {MAX_NESTING} levels; flatten the chain of definitions"
            ),
        ))),
    }
}

/// [`check_graph`] for a schema in folder `base_dir`, reading referenced files inside
/// `root`.
pub fn check(schema: &Value, at: &str, base_dir: &Path, root: &Path) -> Option<Refusal> {
    let files = ProjectFiles::new(root);
    let base = folder_uri(base_dir);
    let graph = Graph::build(schema, &Origin::new(&base, &files));
    check_graph(&graph, schema, at)
}

/// The deepest instance node the validation cost is measured for (the root is depth 0).
/// Deeper values are refused before validation: `serde_json` and the extractor stop at 128
/// levels, so no parsed value is deeper.
pub const MAX_INSTANCE_DEPTH: usize = 128;

/// The longest cycle of levels [`Profile::of`] looks for (a schema that alternates between
/// object and array levels repeats every two).
const MAX_PERIOD: usize = 4;

/// What evaluating a schema costs per instance node, by the node's depth: the measure
/// behind [`super::Validator`]'s budget (`validation_too_costly`).
///
/// One evaluation of the schema on an instance visits (subschema, instance node) pairs.
/// For each depth `d`, `evaluations[d]` bounds how many subschemas may be evaluated on
/// *one* node at depth `d`: it counts every path of the resolved graph that crosses
/// exactly `d` keywords that apply to children (`items`, `properties`, `contains`, ...),
/// each in-place keyword (`anyOf`, `allOf`, `$ref`, ...) once per branch, each subschema
/// weighted by the lists and literals it checks (`required`, `dependentRequired`, the
/// values of `enum` and `const`: a comparison stops where the literal ends). A recursive
/// schema has paths at every depth, possibly more at each level (`anyOf` of two branches
/// that both recurse into `items` doubles per level): the table shows it. `uniqueItems`,
/// which hashes the whole array below it, is charged to every node under the one it
/// evaluates (`walks`, cumulative by depth). When the schema uses
/// `unevaluatedProperties` or `unevaluatedItems`, the validator may evaluate in-place
/// subschemas again to learn what they evaluated, so every in-place hop counts twice.
///
/// Computed level by level over the graph (linear in the graph per level), up to
/// [`MAX_INSTANCE_DEPTH`], stopping at the first level no path reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    evaluations: Vec<u64>,
    /// Cumulative subtree walks at depths ≤ d; beyond the table, its last value.
    walks: Vec<u64>,
}

/// The subschemas a node evaluates on the same instance node, and on its children: each
/// group of child subschemas applies at most one of its members to one child
/// (`properties` by name, `prefixItems` and a list `items` by position), every other
/// child subschema is a group of its own.
struct Edges {
    in_place: Vec<Vec<NodeId>>,
    children: Vec<Vec<Vec<NodeId>>>,
    base: Vec<u64>,
    walk: Vec<u64>,
}

fn is_in_place(keyword: &str) -> bool {
    matches!(
        keyword,
        "allOf"
            | "anyOf"
            | "oneOf"
            | "not"
            | "if"
            | "then"
            | "else"
            | "dependentSchemas"
            | "dependencies"
    )
}

/// The nodes of a literal value in a schema (no recursion).
fn literal_size(value: &Value) -> u64 {
    let mut size = 0u64;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        size += 1;
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                size += map.len() as u64;
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    size
}

fn list_len(map: &serde_json::Map<String, Value>, key: &str) -> u64 {
    map.get(key).and_then(Value::as_array).map_or(0, |a| a.len() as u64)
}

/// The edges of every subschema the root reaches, found by walking the values from the
/// root (a reference target is looked up once), so the work is linear in the graph.
fn edges(graph: &Graph<'_>, schema: &Value) -> (Edges, bool) {
    let n = graph.len();
    let mut e = Edges {
        in_place: vec![Vec::new(); n],
        children: vec![Vec::new(); n],
        base: vec![1; n],
        walk: vec![0; n],
    };
    let mut unevaluated = false;
    let mut seen = vec![false; n];
    let mut stack: Vec<&Value> = vec![schema];
    while let Some(value) = stack.pop() {
        let Some(node) = graph.node_of(value) else { continue };
        if std::mem::replace(&mut seen[node], true) {
            continue;
        }
        let Value::Object(map) = value else { continue };
        let mut in_place = Vec::new();
        let mut children: Vec<Vec<NodeId>> = Vec::new();
        let mut by_name_or_position: Vec<(&str, Vec<NodeId>)> = Vec::new();
        for_each_subschema(map, false, &mut |keyword, slot, child| {
            let Some(id) = graph.node_of(child) else { return };
            stack.push(child);
            if is_in_place(keyword) {
                in_place.push(id);
            } else if matches!(
                (keyword, slot),
                ("properties" | "prefixItems" | "items", Slot::Named(_) | Slot::Item(_))
            ) {
                match by_name_or_position.iter_mut().find(|(k, _)| *k == keyword) {
                    Some((_, group)) => group.push(id),
                    None => by_name_or_position.push((keyword, vec![id])),
                }
            } else {
                children.push(vec![id]);
            }
        });
        children.extend(by_name_or_position.into_iter().map(|(_, group)| group));
        for reference in graph.references(node) {
            if let Targets::Resolved(targets) = &reference.targets {
                for &target in targets {
                    in_place.push(target);
                    if !seen[target] {
                        stack.push(graph.value(target));
                    }
                }
            }
        }
        unevaluated |=
            map.contains_key("unevaluatedProperties") || map.contains_key("unevaluatedItems");
        let dependent: u64 = map
            .get("dependentRequired")
            .and_then(Value::as_object)
            .map_or(0, |m| m.values().map(|v| v.as_array().map_or(0, |a| a.len() as u64)).sum());
        // Comparing a value with `enum` or `const` stops where the schema's literal ends:
        // its cost is the literal's size, whatever the value's.
        let literals =
            map.get("enum").map_or(0, literal_size) + map.get("const").map_or(0, literal_size);
        e.base[node] = 1 + list_len(map, "required") + literals + dependent;
        e.walk[node] = u64::from(map.get("uniqueItems") == Some(&Value::Bool(true)));
        e.in_place[node] = in_place;
        e.children[node] = children;
    }
    (e, unevaluated)
}

/// The nodes in an order where every in-place target comes before the node that applies
/// it (a cycle of in-place references is cut where it closes).
fn in_place_order(edges: &Edges) -> Vec<NodeId> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let n = edges.in_place.len();
    let mut mark = vec![Mark::New; n];
    let mut order = Vec::with_capacity(n);
    for start in 0..n {
        if mark[start] != Mark::New {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        mark[start] = Mark::Open;
        while let Some((node, next)) = stack.last_mut() {
            let node = *node;
            if let Some(&target) = edges.in_place[node].get(*next) {
                *next += 1;
                if mark[target] == Mark::New {
                    mark[target] = Mark::Open;
                    stack.push((target, 0));
                }
            } else {
                mark[node] = Mark::Done;
                order.push(node);
                stack.pop();
            }
        }
    }
    order
}

impl Profile {
    /// The profile of the graph's schema (`schema` is its root).
    pub fn of(graph: &Graph<'_>, schema: &Value) -> Profile {
        Profile::level_by_level(graph, schema, true).0
    }

    /// [`Profile::of`], and how many levels were computed over the graph; `shortcut:
    /// false` computes every level (the tests compare).
    fn level_by_level(graph: &Graph<'_>, schema: &Value, shortcut: bool) -> (Profile, usize) {
        let Some(root) = graph.node_of(schema) else {
            return (Profile { evaluations: vec![1], walks: vec![0] }, 0);
        };
        let (edges, unevaluated) = edges(graph, schema);
        let hop: u64 = if unevaluated { 2 } else { 1 };
        // Only what the root reaches is ever evaluated.
        let mut reachable = vec![false; graph.len()];
        let mut stack = vec![root];
        reachable[root] = true;
        while let Some(node) = stack.pop() {
            for &next in edges.in_place[node].iter().chain(edges.children[node].iter().flatten()) {
                if !reachable[next] {
                    reachable[next] = true;
                    stack.push(next);
                }
            }
        }
        let order: Vec<NodeId> =
            in_place_order(&edges).into_iter().filter(|&node| reachable[node]).collect();
        let n = graph.len();
        let mut profile = Profile { evaluations: Vec::new(), walks: Vec::new() };
        // The root's walks at each level (the table keeps their running sum).
        let mut root_walks: Vec<u64> = Vec::new();
        // The last levels computed, newest last: the one above the next level, and the ones
        // it may repeat.
        let mut recent: std::collections::VecDeque<(Vec<u64>, Vec<u64>)> =
            std::collections::VecDeque::with_capacity(MAX_PERIOD + 1);
        let mut computed = 0;
        for depth in 0..=MAX_INSTANCE_DEPTH {
            computed = depth + 1;
            let below = recent.back();
            let (mut next_evals, mut next_walks) = (vec![0u64; n], vec![0u64; n]);
            let mut reached = false;
            // Targets come first in `order`, so their values at this level are final; a
            // cut cycle reads a target not yet computed at this level (zero): the
            // validator stops such a cycle too.
            let mut done = vec![false; n];
            for &node in &order {
                let (mut e, mut w) =
                    if depth == 0 { (edges.base[node], edges.walk[node]) } else { (0, 0) };
                for &t in &edges.in_place[node] {
                    if done[t] {
                        e = e.saturating_add(next_evals[t].saturating_mul(hop));
                        w = w.saturating_add(next_walks[t].saturating_mul(hop));
                    }
                }
                if let Some((below_evals, below_walks)) = below {
                    for group in &edges.children[node] {
                        let most = |of: &[u64]| group.iter().map(|&c| of[c]).max().unwrap_or(0);
                        e = e.saturating_add(most(below_evals));
                        w = w.saturating_add(most(below_walks));
                    }
                }
                reached |= e > 0 || w > 0;
                next_evals[node] = e;
                next_walks[node] = w;
                done[node] = true;
            }
            if !reached {
                break;
            }
            profile.push(next_evals[root], next_walks[root]);
            root_walks.push(next_walks[root]);
            // Every level below the first is the same function of the level above it, so
            // once a level equals one `period` levels up, the levels repeat with that
            // period to the end: a recursive schema (a tree of sections, a nested message)
            // settles within a few levels, and the rest of the table is copied from the
            // levels it repeats instead of walking the graph again.
            let period = recent
                .iter()
                .rev()
                .position(|(e, w)| *e == next_evals && *w == next_walks)
                .map(|back| back + 1);
            if let (true, Some(period)) = (shortcut, period) {
                for level in depth + 1..=MAX_INSTANCE_DEPTH {
                    let repeated = level - period;
                    profile.push(profile.evaluations[repeated], root_walks[repeated]);
                    root_walks.push(root_walks[repeated]);
                }
                break;
            }
            if recent.len() == MAX_PERIOD {
                recent.pop_front();
            }
            recent.push_back((next_evals, next_walks));
        }
        (profile, computed)
    }

    /// A profile from its table, as [`Profile::table`] gives it (the stored profiles of
    /// pactum's own schemas: `src/schema/profiles.rs`).
    pub fn from_table(evaluations: &[u64], walks: &[u64]) -> Profile {
        Profile { evaluations: evaluations.to_vec(), walks: walks.to_vec() }
    }

    /// The table behind [`Profile::weight`]: evaluations by depth, cumulative walks.
    pub fn table(&self) -> (&[u64], &[u64]) {
        (&self.evaluations, &self.walks)
    }

    /// Appends the next level: its evaluations, and its walks added to the running sum.
    fn push(&mut self, evaluations: u64, walks: u64) {
        let walked = self.walks.last().copied().unwrap_or(0).saturating_add(walks);
        self.evaluations.push(evaluations);
        self.walks.push(walked);
    }

    /// The cost weight of one instance node at `depth`: the node itself, the subschemas
    /// that may be evaluated on it, and the walks over it of keywords above it.
    pub fn weight(&self, depth: usize) -> u64 {
        let evaluations = self.evaluations.get(depth).copied().unwrap_or(0);
        let walks = self.walks.get(depth).or(self.walks.last()).copied().unwrap_or(0);
        1u64.saturating_add(evaluations).saturating_add(walks)
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

    /// The same doubling chain, written through anchors (issue 22).
    fn anchored(levels: usize) -> Value {
        let mut defs = serde_json::Map::new();
        for i in 0..levels {
            let next = format!("#a{}", i + 1);
            defs.insert(
                format!("d{i}"),
                json!({"$anchor": format!("a{i}"), "anyOf": [{"$ref": next}, {"$ref": next}]}),
            );
        }
        defs.insert(
            format!("d{levels}"),
            json!({"$anchor": format!("a{levels}"), "type": "string"}),
        );
        json!({"$defs": defs, "$ref": "#a0"})
    }

    fn size(schema: &Value) -> Option<u64> {
        expansion(&Graph::build(schema, &Origin::detached()), schema)
    }

    fn refused(schema: &Value) -> Option<Refusal> {
        check_graph(&Graph::build(schema, &Origin::detached()), schema, "/output_schema")
    }

    #[test]
    fn doubling_definitions_are_measured_without_expanding_them() {
        let small = size(&doubling(5)).unwrap();
        assert!((60..200).contains(&small), "{small}");
        let huge = doubling(40);
        assert!(serde_json::to_string(&huge).unwrap().len() < 4000);
        assert!(size(&huge).unwrap() > MAX_EXPANSION);
        let refusal = refused(&huge).unwrap();
        assert_eq!(refusal.code(), Code::SchemaLimitExceeded);
        assert_eq!(refusal.finding().pointer, "/output_schema");
    }

    #[test]
    fn every_reference_form_counts_its_targets() {
        // Anchors, a `$dynamicRef`, a reference resolved against an embedded `$id`: each
        // doubling chain is as costly as the pointer one.
        assert_eq!(size(&anchored(5)), size(&doubling(5)));
        assert_eq!(refused(&anchored(40)).unwrap().code(), Code::SchemaLimitExceeded);
        let mut dynamic = anchored(40);
        for def in dynamic["$defs"].as_object_mut().unwrap().values_mut() {
            let name = def["$anchor"].take();
            def.as_object_mut().unwrap().remove("$anchor");
            def["$dynamicAnchor"] = name;
            if let Some(branches) = def.get_mut("anyOf").and_then(Value::as_array_mut) {
                for branch in branches {
                    let target = branch["$ref"].take();
                    *branch = json!({"$dynamicRef": target});
                }
            }
        }
        dynamic["$dynamicRef"] = dynamic["$ref"].take();
        dynamic.as_object_mut().unwrap().remove("$ref");
        assert_eq!(refused(&dynamic).unwrap().code(), Code::SchemaLimitExceeded);
        let mut embedded = serde_json::Map::new();
        for i in 0..40 {
            let next = format!("d{}.json", i + 1);
            embedded.insert(
                format!("d{i}"),
                json!({"$id": format!("d{i}.json"), "anyOf": [{"$ref": next}, {"$ref": next}]}),
            );
        }
        embedded.insert("d40".into(), json!({"$id": "d40.json", "type": "string"}));
        let ids =
            json!({"$id": "https://example.com/root.json", "$defs": embedded, "$ref": "d0.json"});
        assert_eq!(refused(&ids).unwrap().code(), Code::SchemaLimitExceeded);
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
        assert!(refused(&shared).is_none());
    }

    #[test]
    fn endless_chains_are_refused_not_overflowed() {
        let mut defs = serde_json::Map::new();
        for i in 0..5_000 {
            defs.insert(format!("d{i}"), json!({"$ref": format!("#/$defs/d{}", i + 1)}));
        }
        let chain = json!({"$defs": defs, "$ref": "#/$defs/d0"});
        assert_eq!(size(&chain), None);
        assert_eq!(refused(&chain).unwrap().code(), Code::SchemaTooCostly);
    }

    /// `n` anchored definitions in blocks of four doubling chains, each block reached
    /// from a property: the measure's work grows with `n`, its result stays far below the
    /// limit.
    fn blocks(n: usize) -> Value {
        let mut defs = serde_json::Map::new();
        let mut properties = serde_json::Map::new();
        for i in 0..n {
            let def = if i % 4 == 3 {
                json!({"$anchor": format!("a{i}"), "type": "string"})
            } else {
                let next = format!("#a{}", i + 1);
                json!({"$anchor": format!("a{i}"), "anyOf": [{"$ref": next}, {"$ref": next}]})
            };
            defs.insert(format!("d{i}"), def);
            if i % 4 == 0 {
                properties.insert(format!("p{i}"), json!({"$ref": format!("#a{i}")}));
            }
        }
        json!({"type": "object", "properties": properties, "$defs": defs})
    }

    #[test]
    fn a_settled_profile_is_the_profile_of_every_level() {
        let tree = json!({"$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "$ref": "#/$defs/node"});
        // Object and array levels alternating, a branch that doubles per level, a walk
        // below `uniqueItems`, a chain that ends: settled or not, the same table.
        let alternating = json!({"$defs": {"o": {"properties": {"a": {"$ref": "#/$defs/a"}}},
            "a": {"uniqueItems": true, "items": {"$ref": "#/$defs/o"}}}, "$ref": "#/$defs/o"});
        let branching = json!({"$defs": {"n": {"anyOf": [{"items": {"$ref": "#/$defs/n"}},
            {"items": {"$ref": "#/$defs/n"}}]}}, "$ref": "#/$defs/n"});
        let mut schemas = vec![tree, alternating, branching, doubling(5), anchored(3)];
        schemas.extend(
            crate::schema::EMBEDDED
                .iter()
                .map(|(_, text)| serde_json::from_str::<Value>(text).unwrap()),
        );
        for schema in &schemas {
            let graph = Graph::build(schema, &Origin::detached());
            let (full, all) = Profile::level_by_level(&graph, schema, false);
            let (settled, computed) = Profile::level_by_level(&graph, schema, true);
            assert_eq!(settled, full, "{schema}");
            assert!(computed <= all);
        }
        // The recursive ones that repeat (not the doubling one) are computed for a few
        // levels, not for every one: a tree, alternating levels, the prompt pack's sections.
        let pack =
            serde_json::from_str(crate::schema::embedded("prompt_pack.schema.json").unwrap());
        for schema in [&schemas[0], &schemas[1], &pack.unwrap()] {
            let graph = Graph::build(schema, &Origin::detached());
            let (profile, computed) = Profile::level_by_level(&graph, schema, true);
            assert_eq!(profile.evaluations.len(), MAX_INSTANCE_DEPTH + 1, "{schema}");
            assert!(computed < 10, "{computed} levels for {schema}");
        }
    }

    /// The work counted: the subschemas the graph's walk visits, the references it
    /// resolves, the sizes the measure asks for (memoised: without the memo a doubling
    /// chain asks for 2^k), and every allocation.
    #[test]
    fn the_measure_is_linear_in_the_schema() {
        crate::work::assert_linear("the schema measure", 1_500, |n| {
            let schema = blocks(n);
            crate::work::work_of(|| {
                let graph = Graph::build(&schema, &Origin::detached());
                assert!(check_graph(&graph, &schema, "").is_none());
                graph
            })
        });
    }
}
