//! JSON Schema: the embedded document schemas, checks of user-written schemas, and
//! compiled validators for exchanges.
//!
//! The authoritative schemas in `schemas/` are compiled into the binary, so pactum works
//! from any folder. Schemas inside contracts (`input_schema`, `output_schema`,
//! `boundary.structured_output`) are checked cheaply in `validate` (meta-schema, local
//! `$ref` targets, regex syntax) and compiled once per contract for exchanges.
//!
//! **Security invariant:** no `$ref` reaches the network or a file outside the project
//! root, and nothing is compiled that was not measured. Every reference is resolved once,
//! in the schema's [`graph::Graph`] (files read through the confinement rule); the cost
//! measure ([`cost`]) runs on that graph and refuses a schema whose references expand
//! beyond [`cost::MAX_EXPANSION`] subschemas (`schema_limit_exceeded`) or whose cost it
//! cannot bound (`schema_too_costly`); the compiler is then served only the documents the
//! graph read. Regexes use the linear-time `regex` engine.
//!
//! **Bounded validation:** an instance is validated only through [`Validator`], which
//! weighs it against the schema's [`cost::Profile`] in one linear pass and refuses it
//! (`validation_too_costly`) when the product of the value and the schema would cost more
//! than [`VALIDATION_BUDGET`]; error collection is bounded by [`FINDINGS_BUDGET`] and
//! [`MAX_FINDINGS`]. `clippy.toml` forbids `jsonschema`'s own validation and compilation
//! methods outside this file.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, LazyLock};

use jsonschema::{PatternOptions, Retrieve, Uri};
use serde_json::Value;

use crate::error::{DocKind, Finding};

/// The embedded text of each authoritative schema, by file name.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("prompt_contract.schema.json", include_str!("../schemas/prompt_contract.schema.json")),
    ("prompt_pack.schema.json", include_str!("../schemas/prompt_pack.schema.json")),
    ("registry.schema.json", include_str!("../schemas/registry.schema.json")),
    ("work_order.schema.json", include_str!("../schemas/work_order.schema.json")),
    ("final_answer.schema.json", include_str!("../schemas/final_answer.schema.json")),
    ("ledger_entry.schema.json", include_str!("../schemas/ledger_entry.schema.json")),
    ("eval_suite.schema.json", include_str!("../schemas/eval_suite.schema.json")),
    ("queue_entry.schema.json", include_str!("../schemas/queue_entry.schema.json")),
    ("queue_result.schema.json", include_str!("../schemas/queue_result.schema.json")),
];

/// The embedded schema text with this file name.
pub fn embedded(name: &str) -> Option<&'static str> {
    EMBEDDED.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// The largest regex a schema may compile (bytes of compiled program).
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Messages longer than this are cut (schema errors can quote whole instances).
const MAX_MESSAGE: usize = 300;

/// The most cost units one validation may spend (see [`Validator`]): one to two seconds
/// of validation on the build machine for the costliest shapes (BENCHMARKS.md), and
/// several times what a 16 MiB reply costs against a typical output schema.
pub const VALIDATION_BUDGET: u64 = 100_000_000;
/// Up to this cost, every error of a failing instance is collected (the collector keeps
/// them all in memory before pactum sees the first); above it, one finding says the value
/// does not fit.
pub const FINDINGS_BUDGET: u64 = 250_000;
/// The most findings one validation reports; one more finding counts the rest.
pub const MAX_FINDINGS: usize = 100;

/// A compiled schema with its measured cost profile: the one way pactum validates an
/// instance (`clippy.toml` forbids `jsonschema`'s own validation methods elsewhere).
///
/// Every check first measures the instance in one linear, depth-bounded pass: each node
/// weighs 1 (plus one per 64 bytes of a string or key) times what the schema may evaluate
/// on a node at its depth ([`cost::Profile`]). A value whose cost is above
/// [`VALIDATION_BUDGET`], or that nests deeper than [`cost::MAX_INSTANCE_DEPTH`], is
/// refused ([`TooCostly`], `validation_too_costly`) before the validator sees it. Error
/// collection is bounded too ([`FINDINGS_BUDGET`], [`MAX_FINDINGS`]).
pub struct Validator {
    compiled: jsonschema::Validator,
    profile: cost::Profile,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator").field("profile", &self.profile).finish_non_exhaustive()
    }
}

/// Why a value was not validated: checking it would cost more than pactum spends on one
/// validation (`validation_too_costly`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooCostly {
    /// Instance nodes (values and keys) counted.
    pub nodes: u64,
    /// The measured cost, or `None` when the value nests too deep to measure.
    pub cost: Option<u64>,
    /// What was left of the budget.
    pub left: Option<u64>,
}

impl std::fmt::Display for TooCostly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(cost) = self.cost else {
            return write!(
                f,
                "the value nests deeper than {} levels; pactum does not validate it",
                cost::MAX_INSTANCE_DEPTH
            );
        };
        let budget = match self.left {
            Some(left) if left < VALIDATION_BUDGET => format!(
                "more than the {left} left of the {VALIDATION_BUDGET} pactum spends on validations that share a budget (the candidates of one reply, the examples of one file)"
            ),
            _ => format!("more than the {VALIDATION_BUDGET} pactum spends on one validation"),
        };
        write!(
            f,
            "validating this value ({} nodes) against its schema would take about {cost} steps, {budget}: the schema evaluates many subschemas on each part of the value (`anyOf`/`oneOf` branches, `$ref`s, recursion); send a smaller value, or simplify the schema",
            self.nodes
        )
    }
}

#[allow(clippy::disallowed_methods)] // the one door: validation is measured first
impl Validator {
    fn new(compiled: jsonschema::Validator, profile: cost::Profile) -> Validator {
        Validator { compiled, profile }
    }

    /// Measures `instance` and charges its cost to `budget`, or says why it is not
    /// validated (the budget is then left as it was).
    fn charge(&self, instance: &Value, budget: &Budget) -> Result<u64, TooCostly> {
        let (nodes, cost) = measure(&self.profile, instance)?;
        let left = budget.left.get();
        if cost > left {
            return Err(TooCostly { nodes, cost: Some(cost), left: Some(left) });
        }
        budget.left.set(left - cost);
        Ok(cost)
    }

    /// What validating `instance` costs (see [`Validator`]), or why it is not validated.
    pub fn cost(&self, instance: &Value) -> Result<u64, TooCostly> {
        self.charge(instance, &Budget::new())
    }

    /// Whether `instance` fits the schema (no errors collected), within one
    /// [`VALIDATION_BUDGET`].
    pub fn accepts(&self, instance: &Value) -> Result<bool, TooCostly> {
        self.accepts_within(instance, &Budget::new())
    }

    /// [`Validator::accepts`], charged to a budget several checks share.
    pub fn accepts_within(&self, instance: &Value, budget: &Budget) -> Result<bool, TooCostly> {
        let cost = self.charge(instance, budget)?;
        Ok(self.is_valid(instance, cost))
    }

    /// Whether `instance` fits, once charged `cost`. The validator's own steps cannot be
    /// counted (it allocates nothing while it validates), so the cost tests count its work
    /// as the measure priced it, here where it runs (`crate::work`).
    fn is_valid(&self, instance: &Value, cost: u64) -> bool {
        crate::work::count(cost as usize);
        self.compiled.is_valid(instance)
    }

    /// Every way `instance` fails the schema (empty when it fits), within one
    /// [`VALIDATION_BUDGET`]: pointers to the failing values, at most [`MAX_FINDINGS`] (and
    /// one that counts the rest). A missing required property is reported at the
    /// property's own pointer (under its parent), an unexpected property at that
    /// property. A value too large to collect every error of ([`FINDINGS_BUDGET`]) has
    /// one finding at its root.
    pub fn check(&self, instance: &Value) -> Result<Vec<Finding>, TooCostly> {
        self.check_within(instance, &Budget::new())
    }

    /// [`Validator::check`], charged to a budget several checks share.
    pub fn check_within(
        &self,
        instance: &Value,
        budget: &Budget,
    ) -> Result<Vec<Finding>, TooCostly> {
        let cost = self.charge(instance, budget)?;
        // Most instances are valid, and a yes/no check stops early and collects nothing.
        if self.is_valid(instance, cost) {
            return Ok(Vec::new());
        }
        if cost > FINDINGS_BUDGET {
            return Ok(vec![Finding::new(
                "",
                format!(
                    "the value does not fit the schema; it is too large for pactum to list every place it fails (a cost of {cost} steps, above {FINDINGS_BUDGET}): validate a smaller part of it to see where"
                ),
            )]);
        }
        Ok(findings(&self.compiled, instance))
    }
}

/// What validations that belong together may still spend ([`VALIDATION_BUDGET`] in all):
/// the candidates an extraction weighs for one reply, the examples of one contract file.
/// Each check is charged before it runs.
#[derive(Debug)]
pub struct Budget {
    left: std::cell::Cell<u64>,
}

impl Budget {
    pub fn new() -> Budget {
        Budget { left: std::cell::Cell::new(VALIDATION_BUDGET) }
    }
}

impl Default for Budget {
    fn default() -> Budget {
        Budget::new()
    }
}

/// One pass over `instance` (no recursion, at most [`cost::MAX_INSTANCE_DEPTH`] deep):
/// its node count and its validation cost under `profile`.
fn measure(profile: &cost::Profile, instance: &Value) -> Result<(u64, u64), TooCostly> {
    let weight = |len: usize| 1 + (len / 64) as u64;
    let (mut nodes, mut total) = (0u64, 0u64);
    let mut stack = vec![(instance, 0usize)];
    while let Some((value, depth)) = stack.pop() {
        // One step per node: the cost tests' work (`crate::work`).
        crate::work::count(1);
        if depth > cost::MAX_INSTANCE_DEPTH {
            return Err(TooCostly { nodes, cost: None, left: None });
        }
        let own = match value {
            Value::String(s) => weight(s.len()),
            _ => 1,
        };
        nodes += 1;
        total = total.saturating_add(own.saturating_mul(profile.weight(depth)));
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|item| (item, depth + 1))),
            Value::Object(map) => {
                let below = profile.weight(depth + 1);
                for (key, item) in map {
                    nodes += 1;
                    total = total.saturating_add(weight(key.len()).saturating_mul(below));
                    stack.push((item, depth + 1));
                }
            }
            _ => {}
        }
    }
    Ok((nodes, total))
}

fn compile_embedded(name: &str) -> Validator {
    compile_trusted(name, "")
}

/// One of pactum's own schemas as it is measured: the embedded document, or (`def` not
/// empty) the same document with its root replaced by a reference to `$defs/{def}`, so
/// every `$ref` inside still resolves.
fn trusted_schema(name: &str, def: &str) -> Value {
    let text = embedded(name).unwrap_or("true");
    let mut schema: Value = serde_json::from_str(text).unwrap_or(Value::Bool(true));
    if let (false, Value::Object(root)) = (def.is_empty(), &mut schema) {
        root.retain(|k, _| matches!(k.as_str(), "$schema" | "$id" | "$defs"));
        root.insert("$ref".into(), Value::String(format!("#/$defs/{def}")));
    }
    schema
}

/// The cost profile of a trusted schema: the one stored for it in [`profiles`] (computed
/// from the same embedded text; a test recomputes every one), else measured now.
fn trusted_profile(name: &str, def: &str) -> cost::Profile {
    match profiles::STORED.iter().find(|(n, d, ..)| *n == name && *d == def) {
        Some((.., evaluations, walks)) => cost::Profile::from_table(evaluations, walks),
        None => {
            let schema = trusted_schema(name, def);
            cost::Profile::of(&graph::Graph::build(&schema, &graph::Origin::detached()), &schema)
        }
    }
}

/// Compiles one of pactum's own schemas (formats checked), measured like a user schema.
/// They are tested to compile; `true` accepts all as a last resort.
#[allow(clippy::disallowed_methods)] // the one door: the compiled schema is measured
fn compile_trusted(name: &str, def: &str) -> Validator {
    let profile = trusted_profile(name, def);
    let compiled = build_trusted(name, def)
        .or_else(|| jsonschema::validator_for(&Value::Bool(true)).ok())
        .unwrap_or_else(unreachable_validator);
    Validator::new(compiled, profile)
}

/// Compiles one of pactum's own schemas (or one `$defs` item of it) without checking it
/// against the 2020-12 meta-schema at every start: building that meta-schema's validator
/// was a third of a short command's instructions, and a command that reads only pactum's
/// own documents never needs it. The embedded schemas are checked against it once, by the
/// tests (`embedded_schemas_are_valid_2020_12_schemas`). The document is the one resource
/// of a registry of its own, under its `$id`, and what is compiled is a reference to it,
/// which jsonschema checks against draft 4's small meta-schema; the referenced document
/// keeps its own dialect (2020-12), as any referenced resource does.
#[allow(clippy::disallowed_methods)] // the one door: compile_trusted measures it
fn build_trusted(name: &str, def: &str) -> Option<jsonschema::Validator> {
    let document: Value = serde_json::from_str(embedded(name)?).ok()?;
    let id = document.get("$id")?.as_str()?.to_string();
    let registry = jsonschema::Registry::new()
        .add(&id, jsonschema::Draft::Draft202012.create_resource(document))
        .ok()?
        .prepare()
        .ok()?;
    let target = if def.is_empty() { id } else { format!("{id}#/$defs/{def}") };
    let reference = serde_json::json!({ "$ref": target });
    options().with_draft(jsonschema::Draft::Draft4).with_registry(&registry).build(&reference).ok()
}

/// The options every validator pactum builds starts from: formats asserted, patterns on
/// the linear-time engine within a size limit, and `uniqueItems` checked by pactum
/// ([`unique`]: the crate's own check is quadratic on items built to collide).
#[allow(clippy::disallowed_methods)] // the one door: only the builds below start here
fn options() -> jsonschema::ValidationOptions<'static> {
    jsonschema::options()
        .with_pattern_options(PatternOptions::regex().size_limit(REGEX_SIZE_LIMIT))
        .with_keyword("uniqueItems", unique::factory)
        .should_validate_formats(true)
}

#[allow(clippy::disallowed_methods)] // the one door: `true` costs nothing
fn unreachable_validator() -> jsonschema::Validator {
    // `true` always compiles; this keeps the library free of `expect`.
    match jsonschema::validator_for(&Value::Bool(true)) {
        Ok(v) => v,
        Err(_) => std::process::abort(),
    }
}

static CONTRACT: LazyLock<Validator> =
    LazyLock::new(|| compile_embedded("prompt_contract.schema.json"));
static PACK: LazyLock<Validator> = LazyLock::new(|| compile_embedded("prompt_pack.schema.json"));
static REGISTRY: LazyLock<Validator> = LazyLock::new(|| compile_embedded("registry.schema.json"));
static WORK_ORDER: LazyLock<Validator> =
    LazyLock::new(|| compile_embedded("work_order.schema.json"));
static FINAL_ANSWER: LazyLock<Validator> =
    LazyLock::new(|| compile_embedded("final_answer.schema.json"));
static LEDGER_ENTRY: LazyLock<Validator> =
    LazyLock::new(|| compile_embedded("ledger_entry.schema.json"));
static QUEUE_ENTRY: LazyLock<Validator> =
    LazyLock::new(|| compile_embedded("queue_entry.schema.json"));
static QUEUE_RESULT: LazyLock<Validator> =
    LazyLock::new(|| compile_embedded("queue_result.schema.json"));

/// A governed document checked against one of pactum's own schemas: a document too large
/// to validate is one finding at its root.
fn check_governed(validator: &Validator, value: &Value) -> Vec<Finding> {
    validator.check(value).unwrap_or_else(|too| vec![Finding::new("", too.to_string())])
}

/// Checks a governed document against its authoritative schema; every finding.
pub fn check_document(kind: DocKind, value: &Value) -> Vec<Finding> {
    let validator: &Validator = match kind {
        DocKind::Contract => &CONTRACT,
        DocKind::PromptPack => &PACK,
        DocKind::Registry => &REGISTRY,
        DocKind::WorkOrder => &WORK_ORDER,
    };
    check_governed(validator, value)
}

/// One item of registry.json, checked on its own ([`check_registry_part`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegistryPart {
    ContractEntry,
    PackEntry,
    Event,
}

/// A validator for one `$defs` item of `registry.schema.json`: the same document with its
/// root replaced by a reference to the item, so every `$ref` inside still resolves.
fn compile_registry_part(def: &str) -> Validator {
    compile_part("registry.schema.json", def)
}

/// A validator for one `$defs` item of an embedded schema (see [`compile_registry_part`]).
fn compile_part(name: &str, def: &str) -> Validator {
    compile_trusted(name, def)
}

static CONTRACT_ENTRY: LazyLock<Validator> =
    LazyLock::new(|| compile_registry_part("contract_entry"));
static PACK_ENTRY: LazyLock<Validator> = LazyLock::new(|| compile_registry_part("pack_entry"));
static EVENT: LazyLock<Validator> = LazyLock::new(|| compile_registry_part("event"));

/// Checks one entry or history event of registry.json against its part of the schema;
/// findings carry their pointer inside the whole file (`at` is the item's own pointer).
/// Together with [`check_document`] on the top level with its lists emptied, this finds
/// exactly what checking the whole document finds.
pub fn check_registry_part(part: RegistryPart, value: &Value, at: &str) -> Vec<Finding> {
    let validator: &Validator = match part {
        RegistryPart::ContractEntry => &CONTRACT_ENTRY,
        RegistryPart::PackEntry => &PACK_ENTRY,
        RegistryPart::Event => &EVENT,
    };
    let mut out = check_governed(validator, value);
    for f in &mut out {
        f.pointer.insert_str(0, at);
    }
    out
}

static EVAL_SUITE: LazyLock<Validator> =
    LazyLock::new(|| compile_embedded("eval_suite.schema.json"));
static EVAL_CASE: LazyLock<Validator> =
    LazyLock::new(|| compile_part("eval_suite.schema.json", "case"));
static EVAL_ASSERTION: LazyLock<Validator> =
    LazyLock::new(|| compile_part("eval_suite.schema.json", "assertion"));

/// Checks an eval suite against `eval_suite.schema.json`.
pub fn check_eval_suite(value: &Value) -> Vec<Finding> {
    check_governed(&EVAL_SUITE, value)
}

/// Checks one dataset line (a case) against `eval_suite.schema.json`'s `$defs/case`.
pub fn check_eval_case(value: &Value) -> Vec<Finding> {
    check_governed(&EVAL_CASE, value)
}

/// Checks one assertion against `eval_suite.schema.json`'s `$defs/assertion`.
pub fn check_eval_assertion(value: &Value) -> Vec<Finding> {
    check_governed(&EVAL_ASSERTION, value)
}

/// Checks a Phase E answer against `final_answer.schema.json`.
pub fn check_final_answer(value: &Value) -> Vec<Finding> {
    check_governed(&FINAL_ANSWER, value)
}

/// Checks a ledger record against `ledger_entry.schema.json`.
pub fn check_ledger_entry(value: &Value) -> Vec<Finding> {
    check_governed(&LEDGER_ENTRY, value)
}

/// Checks a work stream entry's fields (as [`crate::queue::fields_json`] gives them)
/// against `queue_entry.schema.json`.
pub fn check_queue_entry(value: &Value) -> Vec<Finding> {
    check_governed(&QUEUE_ENTRY, value)
}

/// Checks a results stream entry's fields against `queue_result.schema.json`.
pub fn check_queue_result(value: &Value) -> Vec<Finding> {
    check_governed(&QUEUE_RESULT, value)
}

/// Every way `instance` fails `validator` (at most [`MAX_FINDINGS`], and one finding that
/// counts the rest). Only [`Validator::check`] calls it, under [`FINDINGS_BUDGET`].
#[allow(clippy::disallowed_methods)] // the one door: called under FINDINGS_BUDGET
fn findings(validator: &jsonschema::Validator, instance: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut more = 0usize;
    for error in validator.iter_errors(instance) {
        // One step per error collected: the cost tests' work (`crate::work`).
        crate::work::count(1);
        if out.len() >= MAX_FINDINGS {
            more += 1;
            continue;
        }
        let base = error.instance_path().as_str().to_string();
        // Quote small values ("3 is greater than the maximum of 2"); mask big ones, which
        // would bury the message (and could carry data that belongs in no log).
        let small = match error.instance().as_ref() {
            serde_json::Value::Object(m) => m.is_empty(),
            serde_json::Value::Array(a) => a.is_empty(),
            serde_json::Value::String(s) => s.len() <= 60,
            _ => true,
        };
        let message =
            if small { shorten(&error.to_string()) } else { shorten(&error.masked().to_string()) };
        match error.kind() {
            jsonschema::error::ValidationErrorKind::Required { property } => {
                let name =
                    property.as_str().map(str::to_string).unwrap_or_else(|| property.to_string());
                out.push(Finding::new(join_pointer(&base, &name), message));
            }
            jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                for name in unexpected {
                    out.push(Finding::new(
                        join_pointer(&base, name),
                        format!("unknown property `{name}` is not allowed here"),
                    ));
                }
            }
            _ => out.push(Finding::new(base, message)),
        }
    }
    if out.len() > MAX_FINDINGS {
        more += out.len() - MAX_FINDINGS;
        out.truncate(MAX_FINDINGS);
    }
    if more > 0 {
        out.push(Finding::new("", format!("and {more} more places where the value does not fit")));
    }
    out
}

/// Appends one unescaped token to a JSON pointer.
pub fn join_pointer(base: &str, token: &str) -> String {
    let mut pointer = String::with_capacity(base.len() + token.len() + 1);
    pointer.push_str(base);
    push_token(&mut pointer, token);
    pointer
}

/// Appends `/token` to a JSON pointer, escaped (`~` → `~0`, `/` → `~1`).
fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for (i, part) in token.split('/').enumerate() {
        if i > 0 {
            pointer.push_str("~1");
        }
        for (j, piece) in part.split('~').enumerate() {
            if j > 0 {
                pointer.push_str("~0");
            }
            pointer.push_str(piece);
        }
    }
}

fn shorten(message: &str) -> String {
    if message.len() <= MAX_MESSAGE {
        return message.to_string();
    }
    let mut end = MAX_MESSAGE;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end])
}

/// Cheap checks of a user-written schema embedded at `at` (e.g. `/input_schema`): it fits
/// its draft's meta-schema, every reference resolves (a pointer, an anchor, an embedded
/// `$id`, a file inside the project: `base_dir` must stay inside `root`), regexes compile
/// with the linear-time engine. A full compilation happens only when the schema
/// references other files.
pub fn check_user_schema(schema: &Value, at: &str, base_dir: &Path, root: &Path) -> Vec<Finding> {
    let files = graph::ProjectFiles::new(root);
    let base = graph::folder_uri(base_dir);
    let graph = graph::Graph::build(schema, &graph::Origin::new(&base, &files));
    check_user_schema_in(&graph, schema, at)
}

/// [`check_user_schema`] on the schema's graph, already built (and measured: the cost
/// check comes first).
#[allow(clippy::disallowed_methods)] // the one door: a schema against its fixed meta-schema
pub fn check_user_schema_in(graph: &graph::Graph<'_>, schema: &Value, at: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    match jsonschema::meta::validator_for(schema) {
        // Most schemas are valid; a yes/no check is much cheaper than collecting errors.
        Ok(meta) if meta.is_valid(schema) => {}
        Ok(meta) => {
            for error in meta.iter_errors(schema) {
                let pointer = format!("{at}{}", error.instance_path().as_str());
                out.push(Finding::new(
                    pointer,
                    format!("not a valid JSON Schema: {}", shorten(&error.to_string())),
                ));
            }
        }
        Err(error) => out.push(Finding::new(
            format!("{at}/$schema"),
            format!(
                "unsupported `$schema`: {}; use draft 2020-12, 2019-09, 7, 6 or 4",
                shorten(&error.to_string())
            ),
        )),
    }
    if !out.is_empty() {
        return out;
    }
    for (node, reference, reason) in graph.unresolved() {
        let pointer = match graph.location(node) {
            (None, pointer) => join_pointer(&format!("{at}{pointer}"), reference.keyword),
            // Inside a referenced file: reported at the contract's schema.
            (Some(file), pointer) => {
                out.push(Finding::new(
                    at,
                    format!(
                        "`{}` {} in {file}#{pointer} does not resolve: {reason}",
                        reference.keyword,
                        shorten(&reference.text)
                    ),
                ));
                continue;
            }
        };
        let message = if reference.text.starts_with('#') && !reference.text.starts_with("#/") {
            format!(
                "`{}` target `{}` does not exist in this schema ({reason})",
                reference.keyword, reference.text
            )
        } else if reference.text.starts_with('#') {
            format!("`$ref` target `{}` does not exist in this schema", reference.text)
        } else {
            format!("`{}` does not resolve: {reason}", reference.keyword)
        };
        out.push(Finding::new(pointer, message));
    }
    walk_schema(schema, at, &mut |pointer, key, value| match key {
        "pattern" => {
            if let Some(re) = value.as_str()
                && let Err(e) = check_regex(re)
            {
                out.push(Finding::new(pointer, e));
            }
        }
        "patternProperties" => {
            if let Some(map) = value.as_object() {
                for re in map.keys() {
                    if let Err(e) = check_regex(re) {
                        out.push(Finding::new(join_pointer(pointer, re), e));
                    }
                }
            }
        }
        _ => {}
    });
    if out.is_empty()
        && graph.reaches_out()
        && let Err(e) = compile_graph(graph, schema)
    {
        out.extend(e.into_iter().map(|f| Finding::new(format!("{at}{}", f.pointer), f.message)));
    }
    out
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).and_then(|b| hex_val(*b)),
                bytes.get(i + 2).and_then(|b| hex_val(*b)),
            )
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn check_regex(re: &str) -> Result<(), String> {
    regex::RegexBuilder::new(re).size_limit(REGEX_SIZE_LIMIT).build().map(|_| ()).map_err(|e| {
        format!(
            "regex `{}` does not compile with pactum's linear-time engine: {}",
            shorten(re),
            first_line(&e.to_string())
        )
    })
}

fn first_line(s: &str) -> String {
    s.lines().last().unwrap_or(s).trim().to_string()
}

/// Visits every keyword of a schema (iteratively, any depth, depth first) with its
/// pointer. One pointer buffer serves the whole walk: a segment is added on the way down
/// and cut on the way back, so nothing is allocated per keyword.
fn walk_schema(schema: &Value, at: &str, visit: &mut dyn FnMut(&str, &str, &Value)) {
    enum Children<'a> {
        Keys(serde_json::map::Iter<'a>),
        Items(std::iter::Enumerate<std::slice::Iter<'a, Value>>),
    }
    fn children(node: &Value) -> Option<Children<'_>> {
        match node {
            Value::Object(map) => Some(Children::Keys(map.iter())),
            Value::Array(items) => Some(Children::Items(items.iter().enumerate())),
            _ => None,
        }
    }
    let mut pointer = at.to_string();
    // Each open container with the length of its own pointer.
    let mut stack: Vec<(usize, Children)> =
        children(schema).map(|c| (pointer.len(), c)).into_iter().collect();
    while let Some((len, open)) = stack.last_mut() {
        pointer.truncate(*len);
        let child = match open {
            Children::Keys(keys) => keys.next().map(|(key, value)| {
                push_token(&mut pointer, key);
                visit(&pointer, key, value);
                value
            }),
            Children::Items(items) => items.next().map(|(i, value)| {
                use std::fmt::Write;
                let _ = write!(pointer, "/{i}");
                value
            }),
        };
        match child {
            Some(value) => {
                if let Some(c) = children(value) {
                    stack.push((pointer.len(), c));
                }
            }
            None => {
                stack.pop();
            }
        }
    }
}

/// Compiles a user schema for validating instances: its draft from `$schema` (2020-12 by
/// default), formats asserted, linear-time regexes, relative `$ref`s resolved against
/// `base_dir` and served only from inside `root`. The schema's resolved graph is built
/// first ([`graph::Graph`]) and measured ([`cost`]); the compiler is then given only the
/// files the graph read, so what is measured is what is compiled.
pub fn compile(schema: &Value, base_dir: &Path, root: &Path) -> Result<Validator, Vec<Finding>> {
    let files = graph::ProjectFiles::new(root);
    let base = graph::folder_uri(base_dir);
    let graph = graph::Graph::build(schema, &graph::Origin::new(&base, &files));
    compile_graph(&graph, schema)
}

/// Compiles the schema of `graph` (`schema` is its root), refusing it first when its cost
/// is too high or cannot be measured (SPEC §18); callers that report `schema_limit_exceeded`
/// or `schema_too_costly` check [`cost::check_graph`] first. References to files reach
/// only the documents the graph read.
#[allow(clippy::disallowed_methods)] // the one door: compiled after it is measured
pub fn compile_graph(graph: &graph::Graph<'_>, schema: &Value) -> Result<Validator, Vec<Finding>> {
    if let Some(refusal) = cost::check_graph(graph, schema, "") {
        return Err(vec![refusal.finding().clone()]);
    }
    // A reference to another document that the graph could not read is refused with the
    // graph's reason (outside the project, missing, not a schema), not the compiler's.
    let outward: Vec<Finding> = graph
        .unresolved()
        .filter(|(_, reference, _)| !reference.text.starts_with('#'))
        .map(|(node, reference, reason)| {
            let at = match graph.location(node) {
                (None, pointer) => join_pointer(&pointer, reference.keyword),
                (Some(_), _) => String::new(),
            };
            Finding::new(at, format!("`{}` does not resolve: {reason}", reference.keyword))
        })
        .collect();
    if !outward.is_empty() {
        return Err(outward);
    }
    let mut options = options();
    if schema.get("$schema").is_none() {
        options = options.with_draft(jsonschema::Draft::Draft202012);
    }
    let documents: HashMap<String, Arc<Value>> =
        graph.documents().map(|(uri, value)| (uri.to_string(), value.clone())).collect();
    let profile = cost::Profile::of(graph, schema);
    options
        .with_base_uri(graph.base().to_string())
        .with_retriever(GraphRetriever { documents })
        .build(schema)
        .map_err(|e| {
            vec![Finding::new(
                e.instance_path().as_str().to_string(),
                format!("schema does not compile: {}", shorten(&e.to_string())),
            )]
        })
        .map(|compiled| Validator::new(compiled, profile))
}

/// Compiles a schema that has no folder (a tool's): references reach only inside it.
pub fn compile_detached(schema: &Value) -> Result<Validator, Vec<Finding>> {
    compile_graph(&graph::Graph::build(schema, &graph::Origin::detached()), schema)
}

fn encode_path(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.starts_with('/') { out } else { format!("/{out}") }
}

/// Serves the compiler the schema files a graph read, and nothing else: no network, no
/// file the cost measure did not see.
struct GraphRetriever {
    documents: HashMap<String, Arc<Value>>,
}

impl Retrieve for GraphRetriever {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let text = uri.as_str();
        let text = text.split_once('#').map_or(text, |(uri, _)| uri);
        match self.documents.get(text) {
            Some(value) => Ok(Value::clone(value)),
            None if text.starts_with("file://") => Err(format!(
                "`{text}` was not read: pactum follows only references to files inside the project"
            )
            .into()),
            None => Err(format!(
                "refusing to fetch `{text}`: pactum only follows local references inside the project"
            )
            .into()),
        }
    }
}

pub mod cost;
pub mod files;
pub mod graph;
mod profiles;
mod unique;

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // a test module: reads the schema files of the checkout
mod agreement;

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointer_tokens_are_escaped() {
        assert_eq!(join_pointer("/a", "b"), "/a/b");
        assert_eq!(join_pointer("", "x/y~z"), "/x~1y~0z");
        assert_eq!(join_pointer("/p", "~/"), "/p/~0~1");
        assert_eq!(join_pointer("/p", ""), "/p/");
    }

    #[test]
    fn the_schema_walk_names_every_keyword_at_its_pointer() {
        let schema = json!({
            "properties": {"a/b": {"pattern": "x"}, "c": {"items": [{"pattern": "y"}]}},
            "allOf": [{"$ref": "#/nowhere"}]
        });
        let mut seen = Vec::new();
        walk_schema(&schema, "/input_schema", &mut |pointer, key, _| {
            seen.push((pointer.to_string(), key.to_string()));
        });
        seen.sort();
        let expected = [
            ("/input_schema/allOf", "allOf"),
            ("/input_schema/allOf/0/$ref", "$ref"),
            ("/input_schema/properties", "properties"),
            ("/input_schema/properties/a~1b", "a/b"),
            ("/input_schema/properties/a~1b/pattern", "pattern"),
            ("/input_schema/properties/c", "c"),
            ("/input_schema/properties/c/items", "items"),
            ("/input_schema/properties/c/items/0/pattern", "pattern"),
        ];
        let expected: Vec<(String, String)> =
            expected.iter().map(|(p, k)| (p.to_string(), k.to_string())).collect();
        assert_eq!(seen, expected);
    }

    /// Every trusted schema pactum compiles: (file name, `$defs` item or "" for the
    /// whole); `every_trusted_schema_is_compiled_with_its_stored_profile` checks the list.
    const TRUSTED: &[(&str, &str)] = &[
        ("prompt_contract.schema.json", ""),
        ("prompt_pack.schema.json", ""),
        ("registry.schema.json", ""),
        ("work_order.schema.json", ""),
        ("final_answer.schema.json", ""),
        ("ledger_entry.schema.json", ""),
        ("eval_suite.schema.json", ""),
        ("queue_entry.schema.json", ""),
        ("queue_result.schema.json", ""),
        ("registry.schema.json", "contract_entry"),
        ("registry.schema.json", "pack_entry"),
        ("registry.schema.json", "event"),
        ("eval_suite.schema.json", "case"),
        ("eval_suite.schema.json", "assertion"),
    ];

    /// The stored profiles are the measured ones, for every trusted schema and nothing
    /// else. After a change to `schemas/`, `PACTUM_BLESS=1 cargo test --lib
    /// stored_profiles` writes `src/schema/profiles.rs` again.
    #[test]
    fn stored_profiles_are_the_measured_ones() {
        let measured: Vec<(&str, &str, cost::Profile)> = TRUSTED
            .iter()
            .map(|&(name, def)| {
                let schema = trusted_schema(name, def);
                let graph = graph::Graph::build(&schema, &graph::Origin::detached());
                (name, def, cost::Profile::of(&graph, &schema))
            })
            .collect();
        let stored: Vec<(&str, &str, cost::Profile)> = profiles::STORED
            .iter()
            .map(|(name, def, e, w)| (*name, *def, cost::Profile::from_table(e, w)))
            .collect();
        if stored == measured {
            return;
        }
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/schema/profiles.rs");
        if std::env::var_os("PACTUM_BLESS").is_some() {
            std::fs::write(path, profiles_source(&measured)).unwrap();
            return;
        }
        panic!(
            "{path} does not hold the cost profiles of the schemas in schemas/: run `PACTUM_BLESS=1 cargo test --lib stored_profiles` to write it again"
        );
    }

    fn profiles_source(profiles: &[(&str, &str, cost::Profile)]) -> String {
        let list = |values: &[u64]| {
            let items: Vec<String> = values.iter().map(u64::to_string).collect();
            items.join(", ")
        };
        let mut out = String::from(
            "//! The cost profiles ([`super::cost::Profile`]) of pactum's own schemas, stored so that a\n//! command does not build their reference graphs and measure them at every start. Written by\n//! `PACTUM_BLESS=1 cargo test --lib stored_profiles` (src/schema.rs), which recomputes them\n//! from `schemas/` and fails when this file differs. Do not edit by hand.\n\n/// (file name, `$defs` item or \"\" for the whole schema, evaluations by depth, cumulative\n/// walks by depth).\n#[rustfmt::skip]\npub const STORED: &[(&str, &str, &[u64], &[u64])] = &[\n",
        );
        for (name, def, profile) in profiles {
            let (evaluations, walks) = profile.table();
            out.push_str(&format!(
                "    (\"{name}\", \"{def}\",\n        &[{}],\n        &[{}]),\n",
                list(evaluations),
                list(walks)
            ));
        }
        out.push_str("];\n");
        out
    }

    #[test]
    fn every_trusted_schema_is_compiled_with_its_stored_profile() {
        // Each trusted schema has a stored profile (so no command measures one at its
        // start), and every embedded schema is one of them. A `$defs` item compiled on its
        // own (`compile_part`) belongs in TRUSTED too; one left out is measured at start.
        for (name, def) in TRUSTED {
            assert!(
                profiles::STORED.iter().any(|(n, d, ..)| n == name && d == def),
                "{name} {def}"
            );
        }
        for (name, _) in EMBEDDED {
            assert!(TRUSTED.contains(&(name, "")), "{name}");
        }
    }

    #[test]
    fn embedded_schemas_are_valid_2020_12_schemas() {
        for (name, text) in EMBEDDED {
            let schema: Value =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(jsonschema::meta::validate(&schema).is_ok(), "{name}");
            assert!(jsonschema::draft202012::new(&schema).is_ok(), "{name}");
        }
        // As `compile_trusted` builds them (no silent fall back to `true`).
        for (name, def) in TRUSTED {
            assert!(build_trusted(name, def).is_some(), "{name} {def}");
        }
    }

    #[test]
    fn document_findings_point_at_the_missing_and_unknown_properties() {
        let contract = json!({
            "contract_id": "PRC-A-001", "version": "1.0.0", "prompt_pack_id": "PRM-A-001",
            "boundary": {"max_tokens": 10, "temperature": 3, "stream": true}
        });
        let f = check_document(DocKind::Contract, &contract);
        let pointers: Vec<&str> = f.iter().map(|f| f.pointer.as_str()).collect();
        assert!(pointers.contains(&"/boundary/temperature"), "{f:?}");
        assert!(pointers.contains(&"/boundary/stream"), "{f:?}");
        let f = check_document(DocKind::Contract, &json!({"version": "1.0.0"}));
        let pointers: Vec<&str> = f.iter().map(|f| f.pointer.as_str()).collect();
        assert!(pointers.contains(&"/contract_id"), "{f:?}");
        assert!(pointers.contains(&"/boundary"), "{f:?}");
    }

    #[test]
    fn user_schema_checks() {
        let root = std::env::temp_dir();
        let check = |s: Value| check_user_schema(&s, "/input_schema", &root, &root);
        assert!(
            check(json!({"type": "object", "properties": {"a": {"type": "string"}}})).is_empty()
        );
        let f = check(json!({"type": "objekt"}));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].pointer.starts_with("/input_schema"), "{f:?}");
        let f = check(json!({"$ref": "#/$defs/missing"}));
        assert_eq!(f[0].pointer, "/input_schema/$ref");
        assert!(check(json!({"$defs": {"a": true}, "$ref": "#/$defs/a"})).is_empty());
        let f = check(json!({"$ref": "https://example.com/s.json"}));
        assert!(f[0].message.contains("network"), "{f:?}");
        let f = check(json!({"properties": {"a": {"pattern": "(?<=x)y"}}}));
        assert_eq!(f[0].pointer, "/input_schema/properties/a/pattern");
        let f = check(json!({"$schema": "https://example.com/custom-meta"}));
        assert_eq!(f[0].pointer, "/input_schema/$schema");
    }

    #[test]
    fn refs_resolve_inside_the_root_only() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("project");
        std::fs::create_dir_all(root.join("contracts")).unwrap();
        std::fs::write(root.join("common.json"), r#"{"type": "string", "minLength": 2}"#).unwrap();
        std::fs::write(outer.path().join("secret.json"), r#"{"type": "string"}"#).unwrap();
        let base = root.join("contracts");
        let v = compile(&json!({"$ref": "../common.json"}), &base, &root).unwrap();
        assert!(v.accepts(&json!("ab")).unwrap());
        assert!(!v.accepts(&json!("a")).unwrap());
        let e = compile(&json!({"$ref": "../../secret.json"}), &base, &root).unwrap_err();
        assert!(e[0].message.contains("outside the project root"), "{e:?}");
        let f = check_user_schema(
            &json!({"$ref": "../../secret.json"}),
            "/output_schema",
            &base,
            &root,
        );
        assert_eq!(f.len(), 1, "{f:?}");
    }

    #[test]
    fn refs_never_reach_hidden_files_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("contracts")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/s.json"), r#"{"type": "string"}"#).unwrap();
        std::fs::write(root.join(".env.json"), r#"{"type": "string"}"#).unwrap();
        std::fs::write(root.join("shown.json"), r#"{"type": "string"}"#).unwrap();
        let base = root.join("contracts");
        assert!(compile(&json!({"$ref": "../shown.json"}), &base, root).is_ok());
        for hidden in ["../.git/s.json", "../.env.json", "./../.git/../.env.json"] {
            let e = compile(&json!({ "$ref": hidden }), &base, root).unwrap_err();
            assert!(e[0].message.contains("hidden"), "{hidden}: {e:?}");
        }
    }

    #[test]
    fn compiled_validators_use_linear_regexes_and_assert_formats() {
        let root = std::env::temp_dir();
        let v = compile(&json!({"type": "string", "format": "date"}), &root, &root).unwrap();
        assert!(v.accepts(&json!("2024-01-31")).unwrap());
        assert!(!v.accepts(&json!("31/01/2024")).unwrap());
        let v = compile(&json!({"type": "string", "pattern": "^(a+)+$"}), &root, &root).unwrap();
        let hostile = format!("{}!", "a".repeat(10_000));
        assert!(!v.accepts(&json!(hostile)).unwrap());
    }
}

#[cfg(test)]
mod validation_cost {
    use super::*;
    use serde_json::json;

    fn detached(schema: &Value) -> Validator {
        compile_detached(schema).unwrap()
    }

    /// `n` `anyOf` branches, every one applied to every item: a few hundred subschemas,
    /// far inside the schema's own bound.
    fn branches(n: usize) -> Value {
        let branches: Vec<Value> =
            (0..n).map(|i| json!({"type": "object", "required": [format!("k{i}")]})).collect();
        json!({"type": "array", "items": {"anyOf": branches}})
    }

    /// `n` items that only the last of 300 branches accepts.
    fn items(n: usize) -> Value {
        Value::Array((0..n).map(|_| json!({"k299": 1})).collect())
    }

    /// Two branches that both recurse into the items: collecting the errors of a value
    /// nested `d` deep visits 2^d subschemas (issue: error collection itself is huge).
    fn recursive_branches() -> Value {
        json!({"$defs": {"n": {"anyOf": [
            {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/n"}},
            {"type": "array", "maxItems": 9, "items": {"$ref": "#/$defs/n"}},
            {"type": "integer"}]}}, "$ref": "#/$defs/n"})
    }

    fn nested(depth: usize) -> Value {
        (0..depth).fold(json!("x"), |inner, _| json!([inner]))
    }

    #[test]
    fn a_schema_within_its_bound_and_a_large_value_are_refused_before_validation() {
        let schema = branches(300);
        let graph = graph::Graph::build(&schema, &graph::Origin::detached());
        assert!(cost::check_graph(&graph, &schema, "").is_none(), "the schema is within bounds");
        let v = detached(&schema);
        assert_eq!(v.accepts(&items(1_000)), Ok(true));
        // ~3 MB: unbounded, `is_valid` alone takes ~2.5 s in release and minutes in debug
        // (and grows with the value and the branches: 10 MB and 1,000 branches, a minute
        // in release).
        let big = items(250_000);
        assert!(serde_json::to_string(&big).unwrap().len() > 2_500_000);
        let (too, work) = crate::work::counted(|| v.check(&big).unwrap_err());
        // The work: one walk of the measure over the value's 500,001 values, and no
        // validator run (whose work would be counted at its price, above the budget).
        assert_eq!(work.steps, 500_001, "{work:?}");
        assert_eq!(too.nodes, 750_001);
        assert!(too.cost.unwrap() > VALIDATION_BUDGET);
        assert!(too.to_string().contains("send a smaller value, or simplify the schema"), "{too}");
        assert_eq!(v.accepts(&big), Err(too));
    }

    #[test]
    fn error_collection_is_bounded() {
        let v = detached(&recursive_branches());
        let shallow = v.check(&nested(3)).unwrap();
        assert!(!shallow.is_empty() && shallow.len() <= MAX_FINDINGS + 1, "{shallow:?}");
        // Unbounded, collecting these errors takes 1.4 s (depth 16) to minutes (depth 24)
        // in release: the check answers at once, with one finding or a refusal.
        // The work counted: the measure's walk, the validator's yes/no run at its price, and
        // no error collected.
        for depth in [16, 24, 40] {
            let value = nested(depth);
            let (result, work) = crate::work::counted(|| v.check(&value));
            let walk = depth as u64 + 1;
            match result {
                Ok(findings) => {
                    assert_eq!(findings.len(), 1, "{findings:?}");
                    assert_eq!(findings[0].pointer, "");
                    assert!(findings[0].message.contains("too large for pactum to list"));
                    assert_eq!(work.steps, walk + v.cost(&value).unwrap(), "{depth}: {work:?}");
                }
                Err(too) => {
                    assert!(too.cost.unwrap() > VALIDATION_BUDGET);
                    assert_eq!(work.steps, walk, "{depth}: {work:?}");
                }
            }
        }
        // Many plain errors: the first MAX_FINDINGS, and one that counts the rest.
        let v = detached(&json!({"type": "array", "items": {"type": "integer"}}));
        let f = v.check(&Value::Array(vec![json!("a"); 500])).unwrap();
        assert_eq!(f.len(), MAX_FINDINGS + 1);
        assert_eq!(f[0].pointer, "/0");
        assert_eq!(f[MAX_FINDINGS].message, "and 400 more places where the value does not fit");
    }

    #[test]
    fn sixteen_mib_against_a_simple_schema_is_within_budget() {
        // The densest reply: numbers, two bytes each. 1 MiB of them, the cost of 16 MiB
        // is 16 times that (the measure is a sum over nodes).
        let v = detached(&json!({"type": "array", "items": {"type": "integer"}}));
        let dense = Value::Array(vec![json!(0); 1 << 19]);
        let cost = v.charge(&dense, &Budget::new()).unwrap();
        assert!(16 * cost < VALIDATION_BUDGET / 2, "{cost}");
        // A typical output schema, 1 MiB of objects that fit it (16 MiB: 16 times the cost).
        let schema = json!({"type": "object", "required": ["label", "items"], "properties": {
            "label": {"enum": ["a", "b", "c"]}, "confidence": {"type": "number", "minimum": 0},
            "items": {"type": "array", "items": {"type": "object", "required": ["title", "url"],
                "additionalProperties": false, "properties": {
                    "title": {"type": "string", "maxLength": 200},
                    "url": {"type": "string", "pattern": "^https://"},
                    "rank": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}}}});
        let item = json!({"title": "t", "url": "https://e", "rank": 1, "tags": ["a", "b"]});
        let per_item = serde_json::to_string(&item).unwrap().len() + 1;
        let reply = json!({"label": "a", "items": vec![item; (1 << 20) / per_item]});
        let v = detached(&schema);
        assert_eq!(v.accepts(&reply), Ok(true));
        let cost = v.charge(&reply, &Budget::new()).unwrap();
        assert!(16 * cost < VALIDATION_BUDGET / 2, "{cost}");
    }

    #[test]
    fn governed_documents_of_16_mib_are_within_budget() {
        // A contract at the 16 MiB file limit, nearly all of it example data: 1 MiB of it
        // costs at least a sixteenth of 16 MiB (the measure is a sum over nodes, and the
        // envelope around the rows is counted sixteen times here, once there).
        let data = Value::Array(vec![json!({"id": 1, "name": "n"}); (1 << 20) / 20]);
        let contract = json!({"contract_id": "PRC-A-001", "version": "1.0.0",
            "prompt_pack_id": "PRM-A-001", "boundary": {"max_tokens": 10, "temperature": 0},
            "examples": [{"input": {"rows": data}, "response": "{}", "expect": "ok"}]});
        let cost = CONTRACT.cost(&contract).unwrap();
        assert!(16 * cost < VALIDATION_BUDGET / 2, "{cost}");
        let wo = json!({"work_order_id": "WO-A-001", "kind": "exchange", "contract": "PRC-A-001",
            "input": {"rows": contract["examples"][0]["input"]["rows"].clone()}});
        let cost = WORK_ORDER.cost(&wo).unwrap();
        assert!(16 * cost < VALIDATION_BUDGET / 2, "{cost}");
    }

    #[test]
    fn the_profile_follows_recursion_level_by_level() {
        let profile = |schema: &Value| {
            cost::Profile::of(&graph::Graph::build(schema, &graph::Origin::detached()), schema)
        };
        // Not recursive: nothing below its deepest keyword.
        let flat = profile(&json!({"properties": {"a": {"items": {"type": "string"}}}}));
        assert_eq!((flat.weight(0), flat.weight(1), flat.weight(2), flat.weight(9)), (2, 2, 2, 1));
        // A tree: the same few subschemas at every level.
        let tree = profile(&json!({"$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "$ref": "#/$defs/node"}));
        assert_eq!(tree.weight(10), tree.weight(12));
        // Two branches recursing into the items: twice as many per level.
        let doubling = profile(&recursive_branches());
        assert!(doubling.weight(12) > 3 * doubling.weight(10), "{doubling:?}");
        // `uniqueItems` walks the whole value below it: every deeper node pays for it.
        let unique = profile(&json!({"uniqueItems": true, "items": {"uniqueItems": true}}));
        assert_eq!((unique.weight(0), unique.weight(1), unique.weight(5)), (3, 4, 3));
    }

    #[test]
    fn values_deeper_than_the_measure_are_refused() {
        let v = detached(&json!({}));
        assert_eq!(v.accepts(&nested(cost::MAX_INSTANCE_DEPTH)), Ok(true));
        let too = v.accepts(&nested(cost::MAX_INSTANCE_DEPTH + 1)).unwrap_err();
        assert_eq!(too.cost, None);
        assert!(too.to_string().contains("deeper than 128 levels"), "{too}");
    }

    #[test]
    fn a_shared_budget_caps_many_checks() {
        // Cheap to check (the validator caches recursive results), costly by the measure
        // (which does not count on the cache).
        let v = detached(&recursive_branches());
        let part = json!([nested(21), 1]);
        let budget = Budget::new();
        let mut passed = 0;
        while v.accepts_within(&part, &budget).is_ok() {
            passed += 1;
            assert!(passed < 10);
        }
        assert!(passed >= 1);
        // Each check alone is within one budget.
        assert_eq!(v.accepts(&part), Ok(false));
    }

    /// The work counted: the nodes the measure walks, the errors collected, and every
    /// allocation, the validator's own included.
    #[test]
    fn validation_is_linear_in_the_value() {
        let v = detached(&branches(300));
        crate::work::assert_linear("validation", 500, |n| {
            let value = items(n);
            crate::work::work_of(|| assert_eq!(v.accepts(&value), Ok(true)))
        });
        let v = detached(&json!({"type": "array", "items": {"type": "integer"}}));
        crate::work::assert_linear("errors collected", 500, |n| {
            let value = Value::Array(vec![json!("a"); n]);
            crate::work::work_of(|| assert_eq!(v.check(&value).unwrap().len(), MAX_FINDINGS + 1))
        });
    }
}
