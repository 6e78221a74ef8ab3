//! The resolved graph of a user schema: every subschema, every reference and where it
//! leads. This is pactum's one reading of JSON Schema references, shared by the cost
//! measure ([`super::cost`]), the compiler ([`super::compile`]), the compatibility diff
//! ([`crate::compat`]), the files an active contract's hash covers ([`referenced_files`])
//! and the secret masker's walk ([`crate::redact::Redactor::add_marked_in`]), so that none
//! of them can follow a reference another one skips.
//!
//! A reference is resolved the way the validator (`jsonschema`, through its `referencing`
//! crate) resolves it: against the base URI in force where it is written (the contract's
//! folder, changed by every embedded `$id`), with the same URI arithmetic
//! ([`jsonschema::uri::resolve_against`]) and the same draft rules for identifiers. Its
//! fragment is a JSON pointer from the resource it names (`#/$defs/a`, `other.json#/x`),
//! an anchor (`#name`: `$anchor`, `$dynamicAnchor`, or `$id: "#name"` in drafts 4–7), or
//! empty (the resource itself). `$dynamicRef` and a reference to a `$dynamicAnchor` may
//! land, at evaluation time, on any `$dynamicAnchor` of that name in the dynamic scope:
//! the graph lists every such schema as a possible target (the static one first);
//! `$recursiveRef` likewise with `$recursiveAnchor`. A URI no resource of the graph has is
//! read as a file when it is a `file:` URI, through [`Files`] (inside the project only,
//! by the confinement rule); anything else is unresolved.
//!
//! The graph is built in time and memory linear in the schema and the files it reads:
//! each subschema is registered once (by its address in the document that holds it),
//! each reference resolved once. What it reads is bounded: at most [`MAX_FILES`] files and
//! [`MAX_FILE_BYTES`] bytes of them together; past that the graph is
//! [`Graph::overflow`]n and nothing built on it may trust it.
//!
//! Where it differs from one draft's letter: subschemas are looked for under the
//! keywords of every draft at once (`items` as a list, `additionalItems`,
//! `dependencies`, `definitions` and `$defs` everywhere), a superset of any one draft.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use jsonschema::Draft;
use serde_json::{Map, Value};

/// The most files one schema may read through references.
pub const MAX_FILES: usize = 64;
/// The most bytes the files one schema references may hold together.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

use super::files::NO_FILES;
pub use super::files::{Files, NoFiles, ProjectFiles, ReadError, SchemaFile};

/// The base URI of a schema whose folder is unknown ([`Origin::detached`]).
const DETACHED_BASE: &str = "json-schema:///";

/// A subschema's number in its graph.
pub type NodeId = usize;

/// Where a reference leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Targets {
    /// The schemas it may lead to: one for a static reference; for a dynamic one, its
    /// static target first, then every other schema the dynamic scope may pick.
    Resolved(Vec<NodeId>),
    /// It leads nowhere the graph can see, and why.
    Unresolved(String),
}

/// One reference keyword (`$ref`, `$dynamicRef`, `$recursiveRef`) of a subschema.
#[derive(Clone, Debug)]
pub struct Reference {
    pub keyword: &'static str,
    /// The reference as written.
    pub text: String,
    pub targets: Targets,
}

/// The reference keywords, in the order a subschema's references are listed.
pub const REFERENCE_KEYWORDS: [&str; 3] = ["$ref", "$dynamicRef", "$recursiveRef"];

/// Where a schema's relative references start from, and the files they may read.
#[derive(Clone, Copy)]
pub struct Origin<'f> {
    base: &'f str,
    files: &'f dyn Files,
}

/// The base URI of a folder (its symlinks resolved), for [`Origin::new`].
pub fn folder_uri(dir: &Path) -> String {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let real = crate::confine::real_path(dir)
        .unwrap_or_else(|_| std::path::absolute(dir).unwrap_or_default());
    real_folder_uri(&real)
}

/// [`folder_uri`] of a folder whose path is already canonical (no file system call).
pub fn real_folder_uri(real: &Path) -> String {
    format!("file://{}/", super::encode_path(real))
}

impl<'f> Origin<'f> {
    /// A schema based at `base` (a folder's URI from [`folder_uri`]) reading `files`.
    pub fn new(base: &'f str, files: &'f dyn Files) -> Origin<'f> {
        Origin { base, files }
    }

    /// A schema whose folder is unknown: local references resolve, references to other
    /// files do not.
    pub fn detached() -> Origin<'static> {
        Origin { base: DETACHED_BASE, files: &NO_FILES }
    }

    pub fn base(&self) -> &str {
        self.base
    }
}

/// A document of the graph: the schema itself (borrowed) or a file it references.
enum Handle<'s> {
    Root(&'s Value),
    File(Arc<Value>),
}

impl Handle<'_> {
    fn get(&self) -> &Value {
        match self {
            Handle::Root(value) => value,
            Handle::File(value) => value,
        }
    }
}

struct Document {
    /// `None` for the schema itself.
    file: Option<SchemaFile>,
}

struct Node {
    doc: usize,
    /// Where it is: its pointer is the parent's followed by `suffix` (the document's root
    /// has neither). Stored as a suffix, not a whole pointer, so that the graph's memory
    /// stays linear in the schema however deep it nests.
    parent: Option<NodeId>,
    suffix: Box<str>,
    /// Index into [`Graph::uris`]: the base URI in force inside this subschema.
    base: usize,
    draft: Draft,
    refs: Vec<Reference>,
}

/// The resolved graph of one schema (see the module documentation).
pub struct Graph<'s> {
    root: &'s Value,
    base: String,
    docs: Vec<Document>,
    nodes: Vec<Node>,
    /// A subschema's address in its document → its node.
    by_address: HashMap<usize, NodeId>,
    uris: Vec<String>,
    uri_ids: HashMap<String, usize>,
    /// Resource URI (no fragment) → the subschema it names.
    resources: HashMap<usize, NodeId>,
    /// (resource URI, anchor name) → the subschema and whether the anchor is dynamic.
    anchors: HashMap<(usize, String), (NodeId, bool)>,
    /// Every `$dynamicAnchor` by name, in the order met.
    dynamic: HashMap<String, Vec<NodeId>>,
    /// Every resource with `"$recursiveAnchor": true`, in the order met.
    recursive: Vec<NodeId>,
    file_bytes: u64,
    /// Set when a reference needed a resource outside the schema's own document.
    reaches_out: bool,
    overflow: Option<String>,
}

fn address(value: &Value) -> usize {
    std::ptr::from_ref(value) as usize
}

fn is_schema(value: &Value) -> bool {
    matches!(value, Value::Object(_) | Value::Bool(_))
}

/// How a keyword holds subschemas.
enum Holds {
    One,
    List,
    Map,
}

fn holds(keyword: &str, value: &Value) -> Option<Holds> {
    Some(match keyword {
        "additionalProperties"
        | "contains"
        | "contentSchema"
        | "else"
        | "if"
        | "not"
        | "propertyNames"
        | "then"
        | "unevaluatedItems"
        | "unevaluatedProperties"
        | "additionalItems" => Holds::One,
        "items" if value.is_array() => Holds::List,
        "items" => Holds::One,
        "allOf" | "anyOf" | "oneOf" | "prefixItems" => Holds::List,
        "$defs" | "definitions" | "dependentSchemas" | "patternProperties" | "properties"
        | "dependencies" => Holds::Map,
        _ => return None,
    })
}

/// A subschema's place under its parent: the keyword, then an index or a name.
#[derive(Clone, Copy, Debug)]
pub enum Slot<'v> {
    One,
    Item(usize),
    Named(&'v str),
}

/// Calls `visit` with every subschema `map` holds (keyword, slot, value). Definitions
/// (`$defs`, `definitions`) only when `definitions` is true: they are not evaluated.
pub fn for_each_subschema<'v>(
    map: &'v Map<String, Value>,
    definitions: bool,
    visit: &mut dyn FnMut(&'v str, Slot<'v>, &'v Value),
) {
    for (key, value) in map {
        if !definitions && matches!(key.as_str(), "$defs" | "definitions") {
            continue;
        }
        match (holds(key, value), value) {
            (Some(Holds::One), v) if is_schema(v) => visit(key, Slot::One, v),
            (Some(Holds::List), Value::Array(items)) => {
                for (i, item) in items.iter().enumerate().filter(|(_, v)| is_schema(v)) {
                    visit(key, Slot::Item(i), item);
                }
            }
            (Some(Holds::Map), Value::Object(named)) => {
                for (name, item) in named.iter().filter(|(_, v)| is_schema(v)) {
                    visit(key, Slot::Named(name), item);
                }
            }
            _ => {}
        }
    }
}

/// `pointer` with `/token` appended, escaped (`~` → `~0`, `/` → `~1`).
fn push_token(pointer: &mut String, token: &str) {
    super::push_token(pointer, token);
}

/// The pointer suffix from a subschema to the child in `slot` under `key`.
fn child_suffix(key: &str, slot: Slot<'_>) -> String {
    let mut pointer = String::with_capacity(key.len() + 8);
    push_token(&mut pointer, key);
    match slot {
        Slot::One => {}
        Slot::Item(i) => {
            use std::fmt::Write;
            let _ = write!(pointer, "/{i}");
        }
        Slot::Named(name) => push_token(&mut pointer, name),
    }
    pointer
}

/// A JSON pointer token unescaped (`~1` → `/`, `~0` → `~`).
fn unescape(token: &str) -> std::borrow::Cow<'_, str> {
    if token.contains('~') {
        std::borrow::Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        std::borrow::Cow::Borrowed(token)
    }
}

/// An array index as JSON pointers write it (no sign, no leading zero).
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// `reference` resolved against `base`, without a fragment.
fn join(base: &str, reference: &str) -> Result<String, String> {
    let base = jsonschema::Uri::parse(base).map_err(|e| format!("base URI `{base}`: {e}"))?;
    let joined = jsonschema::uri::resolve_against(&base, reference)
        .map_err(|e| format!("`{reference}` is not a URI reference: {e}"))?;
    let text = joined.as_str();
    Ok(text.split_once('#').map_or(text, |(uri, _)| uri).to_string())
}

/// The path a `file:` URI names, if it is one.
pub(crate) fn file_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    Some(PathBuf::from(super::percent_decode(rest)))
}

impl<'s> Graph<'s> {
    /// The graph of `schema`, based at `origin`.
    pub fn build(schema: &'s Value, origin: &Origin<'_>) -> Graph<'s> {
        let mut graph = Graph {
            root: schema,
            base: origin.base.to_string(),
            docs: vec![Document { file: None }],
            nodes: Vec::new(),
            by_address: HashMap::new(),
            uris: Vec::new(),
            uri_ids: HashMap::new(),
            resources: HashMap::new(),
            anchors: HashMap::new(),
            dynamic: HashMap::new(),
            recursive: Vec::new(),
            file_bytes: 0,
            reaches_out: false,
            overflow: None,
        };
        let base = graph.uri(origin.base.to_string());
        let draft = match schema.get("$schema") {
            Some(_) => Draft::default().detect(schema),
            None => Draft::Draft202012,
        };
        let mut pending = VecDeque::new();
        if let Some(root) =
            graph.walk(0, "", (None, String::new()), base, draft, true, &mut pending)
        {
            graph.resources.entry(base).or_insert(root);
        }
        while let Some((node, keyword, text)) = pending.pop_front() {
            let targets = graph.resolve(node, keyword, &text, origin.files, &mut pending);
            graph.nodes[node].refs.push(Reference { keyword, text, targets });
        }
        graph
    }

    fn uri(&mut self, uri: String) -> usize {
        if let Some(&id) = self.uri_ids.get(&uri) {
            return id;
        }
        self.uris.push(uri.clone());
        self.uri_ids.insert(uri, self.uris.len() - 1);
        self.uris.len() - 1
    }

    fn handle(&self, doc: usize) -> Handle<'s> {
        match self.docs.get(doc).and_then(|d| d.file.as_ref()) {
            Some(file) => Handle::File(file.value.clone()),
            None => Handle::Root(self.root),
        }
    }

    /// Registers the subschema at `pointer` in document `doc` and everything below it;
    /// `index` also records the resources and anchors it declares. The subschema itself is
    /// recorded under `parent` with `suffix`. Returns its node.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &mut self,
        doc: usize,
        pointer: &str,
        (parent, suffix): (Option<NodeId>, String),
        base: usize,
        draft: Draft,
        index: bool,
        pending: &mut VecDeque<(NodeId, &'static str, String)>,
    ) -> Option<NodeId> {
        let handle = self.handle(doc);
        let start = handle.get().pointer(pointer)?;
        if !is_schema(start) {
            return None;
        }
        let mut stack = vec![(start, parent, suffix, base, draft)];
        while let Some((value, parent, suffix, base, draft)) = stack.pop() {
            crate::work::count(1);
            if self.by_address.contains_key(&address(value)) {
                continue;
            }
            let draft = draft.detect(value);
            let id = self.nodes.len();
            let base = match draft.create_resource_ref(value).id() {
                Some(declared) => match join(&self.uris[base], declared) {
                    Ok(uri) => {
                        let uri = self.uri(uri);
                        if index {
                            self.resources.entry(uri).or_insert(id);
                        }
                        uri
                    }
                    Err(_) => base,
                },
                None => base,
            };
            self.by_address.insert(address(value), id);
            let suffix = suffix.into_boxed_str();
            self.nodes.push(Node { doc, parent, suffix, base, draft, refs: Vec::new() });
            let Value::Object(map) = value else { continue };
            if index {
                self.index_anchors(id, map, base, draft);
            }
            for keyword in REFERENCE_KEYWORDS {
                if let Some(Value::String(text)) = map.get(keyword) {
                    pending.push_back((id, keyword, text.clone()));
                }
            }
            let mut children = Vec::new();
            for_each_subschema(map, true, &mut |key, slot, child| {
                children.push((child, child_suffix(key, slot)));
            });
            // Reversed, so that the walk meets them in document order.
            for (child, suffix) in children.into_iter().rev() {
                stack.push((child, Some(id), suffix, base, draft));
            }
        }
        self.by_address.get(&address(start)).copied()
    }

    fn index_anchors(&mut self, id: NodeId, map: &Map<String, Value>, base: usize, draft: Draft) {
        let text = |key: &str| map.get(key).and_then(Value::as_str);
        let mut anchor = |name: &str, dynamic: bool| {
            self.anchors.entry((base, name.to_string())).or_insert((id, dynamic));
        };
        match draft {
            Draft::Draft4 => {
                if let Some(name) = text("id").and_then(|i| i.strip_prefix('#')) {
                    anchor(name, false);
                }
            }
            Draft::Draft6 | Draft::Draft7 => {
                if let Some(name) = text("$id").and_then(|i| i.strip_prefix('#')) {
                    anchor(name, false);
                }
            }
            Draft::Draft201909 => {
                if let Some(name) = text("$anchor") {
                    anchor(name, false);
                }
                if map.get("$recursiveAnchor") == Some(&Value::Bool(true)) {
                    self.recursive.push(id);
                }
            }
            _ => {
                if let Some(name) = text("$anchor") {
                    anchor(name, false);
                }
                if let Some(name) = text("$dynamicAnchor") {
                    anchor(name, true);
                    self.dynamic.entry(name.to_string()).or_default().push(id);
                }
            }
        }
    }

    /// Where one reference of `node` leads.
    fn resolve(
        &mut self,
        node: NodeId,
        keyword: &'static str,
        text: &str,
        files: &dyn Files,
        pending: &mut VecDeque<(NodeId, &'static str, String)>,
    ) -> Targets {
        crate::work::count(1);
        if keyword == "$recursiveRef" {
            let base = self.nodes[node].base;
            let Some(&target) = self.resources.get(&base) else {
                return Targets::Unresolved(format!(
                    "`{text}`: no resource has the base URI `{}`",
                    self.uris[base]
                ));
            };
            let mut all = vec![target];
            if self.value_of(target).get("$recursiveAnchor") == Some(&Value::Bool(true)) {
                all.extend(self.recursive.iter().copied().filter(|&n| n != target));
            }
            return Targets::Resolved(all);
        }
        match self.lookup(node, text, files, pending) {
            Ok((target, Some(name))) => {
                let mut all = vec![target];
                if let Some(others) = self.dynamic.get(&name) {
                    all.extend(others.iter().copied().filter(|&n| n != target));
                }
                Targets::Resolved(all)
            }
            Ok((target, None)) => Targets::Resolved(vec![target]),
            Err(reason) => Targets::Unresolved(reason),
        }
    }

    /// The static target of a reference written in `node`, with the anchor's name when it
    /// is a dynamic anchor.
    fn lookup(
        &mut self,
        node: NodeId,
        reference: &str,
        files: &dyn Files,
        pending: &mut VecDeque<(NodeId, &'static str, String)>,
    ) -> Result<(NodeId, Option<String>), String> {
        let base = self.nodes[node].base;
        let (uri, fragment) = match reference.strip_prefix('#') {
            Some(fragment) => (base, fragment),
            None => {
                let (uri, fragment) = reference.rsplit_once('#').unwrap_or((reference, ""));
                (self.uri(join(&self.uris[base], uri)?), fragment)
            }
        };
        let resource = match self.resources.get(&uri) {
            Some(&resource) => resource,
            None => {
                self.reaches_out = true;
                self.load(uri, self.nodes[node].draft, files, pending)?
            }
        };
        if fragment.starts_with('/') {
            let pointer = super::percent_decode(fragment);
            return self
                .pointer(resource, &pointer, pending)
                .map(|target| (target, None))
                .ok_or_else(|| format!("`{reference}` points at nothing"));
        }
        if fragment.is_empty() {
            return Ok((resource, None));
        }
        match self.anchors.get(&(uri, fragment.to_string())) {
            Some(&(target, dynamic)) => Ok((target, dynamic.then(|| fragment.to_string()))),
            None => Err(format!("`{reference}`: no anchor `{fragment}` in `{}`", self.uris[uri])),
        }
    }

    /// Reads the file a `file:` URI names and registers it as a document.
    fn load(
        &mut self,
        uri: usize,
        draft: Draft,
        files: &dyn Files,
        pending: &mut VecDeque<(NodeId, &'static str, String)>,
    ) -> Result<NodeId, String> {
        let text = self.uris[uri].clone();
        let Some(path) = file_path(&text) else {
            return Err(format!(
                "`{text}` would reach the network (or another place than a file inside the project); pactum only follows references inside the project"
            ));
        };
        if self.overflow.is_some() {
            return Err("the schema references too many files".to_string());
        }
        if self.docs.len() > MAX_FILES {
            // `docs` holds the schema itself and every file read so far.
            self.overflow =
                Some(format!("it references more than {MAX_FILES} files through `$ref`s"));
            return Err("the schema references too many files".to_string());
        }
        let limit = MAX_FILE_BYTES.saturating_sub(self.file_bytes);
        let file = match files.read(&path, limit) {
            Ok(file) => file,
            Err(ReadError::TooLarge { size }) => {
                self.overflow = Some(format!(
                    "the files it references hold more than {MAX_FILE_BYTES} bytes together (`{}` alone has {size})",
                    path.display()
                ));
                return Err("the files the schema references are too large".to_string());
            }
            Err(ReadError::Refused(reason)) => return Err(reason),
        };
        self.file_bytes += file.size;
        let draft = draft.detect(&file.value);
        self.docs.push(Document { file: Some(file) });
        let doc = self.docs.len() - 1;
        let root = self
            .walk(doc, "", (None, String::new()), uri, draft, true, pending)
            .ok_or_else(|| format!("`{}` is not a schema", path.display()))?;
        self.resources.entry(uri).or_insert(root);
        Ok(root)
    }

    /// The subschema at `pointer` below `resource`, registered if the walk did not meet it
    /// (a pointer may lead anywhere, not only to a subschema keyword).
    fn pointer(
        &mut self,
        resource: NodeId,
        pointer: &str,
        pending: &mut VecDeque<(NodeId, &'static str, String)>,
    ) -> Option<NodeId> {
        let doc = self.nodes[resource].doc;
        let mut at = self.pointer_of(resource);
        let (mut known, mut below) = (resource, String::new());
        let handle = self.handle(doc);
        let mut value = handle.get().pointer(&at)?;
        for token in pointer.split('/').skip(1) {
            let name = unescape(token);
            value = match value {
                Value::Object(map) => map.get(name.as_ref())?,
                Value::Array(items) => items.get(index(&name)?)?,
                _ => return None,
            };
            at.push('/');
            at.push_str(token);
            below.push('/');
            below.push_str(token);
            if let Some(&node) = self.by_address.get(&address(value)) {
                (known, below) = (node, String::new());
            }
        }
        if below.is_empty() {
            return Some(known);
        }
        let (base, draft) = (self.nodes[known].base, self.nodes[known].draft);
        self.walk(doc, &at, (Some(known), below), base, draft, false, pending)
    }

    /// A node's JSON pointer inside its document, built from its suffixes.
    fn pointer_of(&self, node: NodeId) -> String {
        let mut suffixes = Vec::new();
        let mut at = Some(node);
        while let Some(n) = at {
            suffixes.push(&*self.nodes[n].suffix);
            at = self.nodes[n].parent;
        }
        suffixes.iter().rev().copied().collect()
    }

    fn value_of(&self, node: NodeId) -> &Value {
        let n = &self.nodes[node];
        let doc = match self.docs.get(n.doc).and_then(|d| d.file.as_ref()) {
            Some(file) => &*file.value,
            None => self.root,
        };
        doc.pointer(&self.pointer_of(node)).unwrap_or(&Value::Bool(false))
    }

    /// The subschema a node stands for.
    pub fn value(&self, node: NodeId) -> &Value {
        self.value_of(node)
    }

    /// The node of a subschema of this graph (by identity: the value must be one of the
    /// graph's own documents, as [`Graph::value`] and the schema given to
    /// [`Graph::build`] are).
    pub fn node_of(&self, value: &Value) -> Option<NodeId> {
        self.by_address.get(&address(value)).copied()
    }

    /// The root schema's node.
    pub fn root(&self) -> Option<NodeId> {
        self.node_of(self.root)
    }

    /// The references a subschema makes, in keyword order.
    pub fn references(&self, node: NodeId) -> &[Reference] {
        self.nodes.get(node).map_or(&[], |n| n.refs.as_slice())
    }

    /// The references of the subschema `value` (none when it is not one of the graph's).
    pub fn references_of(&self, value: &Value) -> &[Reference] {
        self.node_of(value).map_or(&[], |n| self.references(n))
    }

    /// Where a node is: `None` for the schema itself, else the referenced file's path
    /// relative to the project root; and the JSON pointer inside it.
    pub fn location(&self, node: NodeId) -> (Option<&str>, String) {
        let n = &self.nodes[node];
        let file = self.docs.get(n.doc).and_then(|d| d.file.as_ref()).map(|f| f.rel.as_str());
        (file, self.pointer_of(node))
    }

    /// Every subschema with a reference that leads nowhere, with the reason.
    pub fn unresolved(&self) -> impl Iterator<Item = (NodeId, &Reference, &str)> {
        self.nodes.iter().enumerate().flat_map(|(id, n)| {
            n.refs.iter().filter_map(move |r| match &r.targets {
                Targets::Unresolved(reason) => Some((id, r, reason.as_str())),
                Targets::Resolved(_) => None,
            })
        })
    }

    /// Every file the schema read (transitively), by path relative to the project root,
    /// with its SHA-256.
    pub fn files(&self) -> BTreeMap<String, String> {
        self.docs
            .iter()
            .filter_map(|d| d.file.as_ref())
            .map(|f| (f.rel.clone(), f.sha256.clone()))
            .collect()
    }

    /// Every file the schema read, by its `file:` URI, for the compiler's retriever.
    pub(crate) fn documents(&self) -> impl Iterator<Item = (&str, &Arc<Value>)> {
        self.resources.iter().filter_map(|(&uri, &node)| {
            let n = &self.nodes[node];
            let file = self.docs.get(n.doc)?.file.as_ref()?;
            (n.parent.is_none() && self.uris[uri].starts_with("file://"))
                .then_some((self.uris[uri].as_str(), &file.value))
        })
    }

    /// The base URI the schema was built at.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Whether some reference needed a resource outside the schema's own document (a
    /// file, read or not, or another URI): then the schema's meaning is not in its text.
    pub fn reaches_out(&self) -> bool {
        self.reaches_out
    }

    /// Why the graph is incomplete because the schema reads more than pactum reads for
    /// one schema (files, bytes); `None` when it is complete.
    pub fn overflow(&self) -> Option<&str> {
        self.overflow.as_deref()
    }

    /// How many subschemas the graph holds.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Every file the schemas embedded in a contract (`value`, in folder `dir`, read from
/// `path`) reference, transitively, by path relative to the project root, with its
/// SHA-256: what an active entry's hash must cover. A reference that leads nowhere is
/// `contract_schema_invalid` (a contract whose schemas cannot be resolved is not frozen:
/// a file added later would give it a meaning nothing recorded); a schema the cost
/// measure refuses is refused with its code (`schema_limit_exceeded`,
/// `schema_too_costly`).
pub fn referenced_files(
    value: &Value,
    dir: &Path,
    files: &dyn Files,
    path: &Path,
) -> crate::error::Result<BTreeMap<String, String>> {
    use crate::error::{DocKind, Error, Finding};
    let base = folder_uri(dir);
    let origin = Origin::new(&base, files);
    let mut all = BTreeMap::new();
    let mut unresolved = Vec::new();
    for (at, schema) in crate::contract::Contract::embedded_schemas(value) {
        let graph = Graph::build(schema, &origin);
        if let Some(refusal) = super::cost::check_graph(&graph, schema, at) {
            return Err(refusal.into_error(path));
        }
        for (node, reference, reason) in graph.unresolved() {
            let (file, pointer) = graph.location(node);
            let place = match file {
                None => format!("{at}{pointer}/{}", reference.keyword),
                Some(file) => format!("{at} (through {file}#{pointer}/{})", reference.keyword),
            };
            unresolved.push(Finding::new(place, format!("does not resolve: {reason}")));
        }
        all.extend(graph.files());
    }
    if !unresolved.is_empty() {
        return Err(Error::SchemaInvalid {
            doc: DocKind::Contract,
            path: path.to_path_buf(),
            findings: unresolved,
        });
    }
    Ok(all)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use serde_json::json;

    fn graph(schema: &Value) -> Graph<'_> {
        Graph::build(schema, &Origin::detached())
    }

    /// Where `node`'s first reference leads, as pointers in the schema itself.
    fn targets(g: &Graph<'_>, at: &str) -> Result<Vec<String>, String> {
        let value = g.root.pointer(at).unwrap();
        let node = g.node_of(value).unwrap();
        match &g.references(node)[0].targets {
            Targets::Resolved(all) => Ok(all.iter().map(|&t| g.location(t).1).collect()),
            Targets::Unresolved(reason) => Err(reason.clone()),
        }
    }

    #[test]
    fn every_reference_form_resolves_like_the_validator() {
        let schema = json!({
            "$defs": {
                "named": {"$anchor": "text", "type": "string"},
                "dyn": {"$dynamicAnchor": "node", "type": "object"},
                "embedded": {"$id": "http://example.com/inner.json", "$defs": {
                    "x": {"$anchor": "x", "type": "integer"}},
                    "properties": {"a": {"$ref": "#x"}, "b": {"$ref": "#/$defs/x"}}},
                "ext": {"$defs": {"more": {"$dynamicAnchor": "node"}}},
            },
            "properties": {
                "p": {"$ref": "#/$defs/named"},
                "a": {"$ref": "#text"},
                "d": {"$dynamicRef": "#node"},
                "i": {"$ref": "http://example.com/inner.json#x"},
                "j": {"$ref": "inner.json"},
                "n": {"$ref": "#nope"},
                "f": {"$ref": "../common/address.json"},
                "q": {"$ref": "#/x-extra/in%20ner"}
            },
            "x-extra": {"in ner": {"type": "integer"}}
        });
        let g = graph(&schema);
        assert_eq!(targets(&g, "/properties/p"), Ok(vec!["/$defs/named".into()]));
        assert_eq!(targets(&g, "/properties/a"), Ok(vec!["/$defs/named".into()]));
        assert_eq!(
            targets(&g, "/properties/d"),
            Ok(vec!["/$defs/dyn".into(), "/$defs/ext/$defs/more".into()])
        );
        // Inside the embedded resource, `#x` and `#/$defs/x` are relative to it.
        assert_eq!(
            targets(&g, "/$defs/embedded/properties/a"),
            Ok(vec!["/$defs/embedded/$defs/x".into()])
        );
        assert_eq!(
            targets(&g, "/$defs/embedded/properties/b"),
            Ok(vec!["/$defs/embedded/$defs/x".into()])
        );
        assert_eq!(targets(&g, "/properties/i"), Ok(vec!["/$defs/embedded/$defs/x".into()]));
        // A relative reference against the detached base is not that resource.
        assert!(
            targets(&g, "/properties/j")
                .unwrap_err()
                .contains("`json-schema:///inner.json` would reach the network")
        );
        assert!(targets(&g, "/properties/n").unwrap_err().contains("no anchor `nope`"));
        assert!(
            targets(&g, "/properties/f")
                .unwrap_err()
                .contains("`json-schema:///common/address.json` would reach the network")
        );
        // A pointer to something that is not a subschema keyword is registered all the same.
        assert_eq!(targets(&g, "/properties/q"), Ok(vec!["/x-extra/in ner".into()]));
        assert!(g.reaches_out());
    }

    #[test]
    fn files_are_read_once_confined_and_listed_with_their_hashes() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("p");
        std::fs::create_dir_all(root.join("contracts/a")).unwrap();
        std::fs::create_dir_all(root.join("common")).unwrap();
        let address = r#"{"$id": "address.json", "type": "object", "properties": {"zip": {"$ref": "zip.json"}}}"#;
        std::fs::write(root.join("common/address.json"), address).unwrap();
        std::fs::write(root.join("common/zip.json"), r#"{"type": "string", "maxLength": 5}"#)
            .unwrap();
        std::fs::write(outer.path().join("secret.json"), "{}").unwrap();
        let files = ProjectFiles::new(&root);
        let base = folder_uri(&root.join("contracts/a"));
        let origin = Origin::new(&base, &files);
        let schema = json!({"properties": {
            "home": {"$ref": "../../common/address.json"},
            "work": {"$ref": "../../common/address.json#/properties/zip"},
            "out": {"$ref": "../../../secret.json"}}});
        let g = Graph::build(&schema, &origin);
        let listed: Vec<(String, String)> = g.files().into_iter().collect();
        assert_eq!(
            listed.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
            ["common/address.json", "common/zip.json"]
        );
        assert_eq!(
            listed[1].1,
            crate::digest::sha256_hex(br#"{"type": "string", "maxLength": 5}"#)
        );
        let out = g.node_of(schema.pointer("/properties/out").unwrap()).unwrap();
        let Targets::Unresolved(reason) = &g.references(out)[0].targets else { panic!() };
        assert!(reason.contains("outside the project root"), "{reason}");
        let work = g.node_of(schema.pointer("/properties/work").unwrap()).unwrap();
        let Targets::Resolved(t) = &g.references(work)[0].targets else { panic!() };
        assert_eq!(g.location(t[0]), (Some("common/address.json"), "/properties/zip".to_string()));
        let contract = json!({"input_schema": schema});
        let err =
            referenced_files(&contract, &root.join("contracts/a"), &files, Path::new("c.json"))
                .unwrap_err();
        assert_eq!(err.code(), crate::Code::ContractSchemaInvalid);
        assert_eq!(err.findings().len(), 1, "{err:?}");
        assert_eq!(err.findings()[0].pointer, "/input_schema/properties/out/$ref");
    }
}
