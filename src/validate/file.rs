//! The per-file checks of `validate` (checks 1–3), run in parallel: read once, hash,
//! parse (`contract_parse_error` with line and column), check against the document's
//! schema (`contract_schema_invalid`, `prompt_pack_invalid`, `work_order_invalid`, each
//! finding at its pointer), check the schemas a contract embeds, and compile pack
//! templates.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::contract::{Contract, RequiredContext};
use crate::diagnostic::Diagnostic;
use crate::document::{self, MAX_FILE_BYTES, Syntax};
use crate::error::{Code, DocKind, Error};
use crate::id::Requirement;
use crate::pack::PromptPack;
use crate::render::{CompiledPack, declared_inputs};
use crate::schema;
use crate::validate::discover::Candidate;
use crate::validate::relative_name;
use crate::work_order::WorkOrder;

/// What kind of governed file a path holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    Contract,
    Pack,
    WorkOrder,
}

impl FileKind {
    pub fn doc_kind(self) -> DocKind {
        match self {
            FileKind::Contract => DocKind::Contract,
            FileKind::Pack => DocKind::PromptPack,
            FileKind::WorkOrder => DocKind::WorkOrder,
        }
    }

    /// The kind a parsed document's keys say it is.
    pub fn from_value(value: &Value) -> Option<FileKind> {
        if value.get("contract_id").is_some() {
            Some(FileKind::Contract)
        } else if value.get("prompt_pack_id").is_some() {
            Some(FileKind::Pack)
        } else if value.get("work_order_id").is_some() {
            Some(FileKind::WorkOrder)
        } else {
            None
        }
    }
}

/// What the cross-file rules need of a contract that passed its own checks. The whole
/// [`Contract`] (schemas, examples, metadata: several kilobytes parsed) is not kept for
/// every file; [`Analyzed::full_contract`] rebuilds it from the kept text for the few rules
/// that need it (contract examples, work-order pins).
#[derive(Clone, Debug)]
pub struct ContractFacts {
    pub id: String,
    pub version: semver::Version,
    pub prompt_pack_id: String,
    pub prompt_pack_version: Requirement,
    /// The inputs `input_schema.properties` declares (see [`declared_inputs`]).
    pub declared_inputs: Option<BTreeSet<String>>,
    /// Where a finding about an undeclared template variable points.
    pub inputs_at: &'static str,
    pub has_examples: bool,
    pub required_context: RequiredContext,
    /// The judge of the contract's `semantic_check`, if it has one.
    pub semantic_judge: Option<crate::id::Pin>,
}

impl ContractFacts {
    fn of(c: &Contract) -> ContractFacts {
        ContractFacts {
            id: c.id.clone(),
            version: c.version.clone(),
            prompt_pack_id: c.prompt_pack_id.clone(),
            prompt_pack_version: c.prompt_pack_version.clone(),
            declared_inputs: declared_inputs(c.input_schema.as_ref()),
            inputs_at: match &c.input_schema {
                Some(s) if s.get("properties").is_some() => "/input_schema/properties",
                Some(_) => "/input_schema",
                None => "/contract_id",
            },
            has_examples: !c.examples.is_empty(),
            required_context: c.required_context.clone(),
            semantic_judge: c.semantic_check.as_ref().map(|s| s.judge.contract.clone()),
        }
    }

    /// The facts the binding checks need, read leniently from a contract with schema
    /// findings, so its pack's variables are still checked against its inputs in the same
    /// run. Never used for examples (`has_examples` is false) or any other rule.
    fn read(value: &Value) -> Option<ContractFacts> {
        let text = |key: &str| value.get(key).and_then(Value::as_str);
        let prompt_pack_version = match text("prompt_pack_version") {
            None => Requirement::Latest,
            Some(t) => Requirement::parse(t).ok()?,
        };
        let input_schema = value.get("input_schema");
        Some(ContractFacts {
            id: text("contract_id")?.to_string(),
            version: crate::id::parse_version(text("version")?)?,
            prompt_pack_id: text("prompt_pack_id")?.to_string(),
            prompt_pack_version,
            declared_inputs: declared_inputs(input_schema),
            inputs_at: match input_schema {
                Some(s) if s.get("properties").is_some() => "/input_schema/properties",
                Some(_) => "/input_schema",
                None => "/contract_id",
            },
            has_examples: false,
            required_context: RequiredContext::default(),
            semantic_judge: None,
        })
    }

    /// `ID@VERSION`.
    pub fn key(&self) -> String {
        format!("{}@{}", self.id, self.version)
    }
}

/// One analyzed file.
#[derive(Debug)]
pub struct Analyzed {
    /// Relative to the validation base, `/`-separated.
    pub rel: String,
    /// Canonical absolute path.
    pub abs: PathBuf,
    pub kind: Option<FileKind>,
    pub text: Option<String>,
    pub syntax: Syntax,
    pub sha256: Option<String>,
    /// Whether the file parsed.
    pub parsed: bool,
    /// The id and version the file declares (even when it fails its schema).
    pub declared: Option<(String, String)>,
    /// A contract that passed its own checks.
    pub contract: Option<Box<ContractFacts>>,
    /// The variables each template of a valid pack reads, by template pointer (`Some`
    /// exactly for a valid pack). Neither the pack nor its compiled templates are kept;
    /// [`Analyzed::full_pack`] rebuilds the pack when a contract example needs it.
    pub pack_variables: Option<Vec<(String, BTreeSet<String>)>>,
    /// The same for a pack with findings, from the parts that could be read: the contracts
    /// bound to it are still checked against them.
    pub invalid_pack_variables: Option<Vec<(String, BTreeSet<String>)>>,
    /// What the binding checks need of a contract with schema findings (see
    /// [`ContractFacts::read`]); `contract` stays `None` for every other rule.
    pub invalid_contract: Option<Box<ContractFacts>>,
    pub work_order: Option<Box<WorkOrder>>,
    /// Every tool a pack's sections name: (pointer, section key, tool), checked across
    /// files against the built-ins and the configured servers ([`super::tools`]).
    pub section_tools: Vec<(String, String, String)>,
    pub diagnostics: Vec<Diagnostic>,
    /// The codes the file's own `x-pactum-ignore` suppresses, if it has one.
    pub suppress: Option<Vec<String>>,
}

impl Analyzed {
    fn new(rel: String, abs: PathBuf, syntax: Syntax) -> Self {
        Analyzed {
            rel,
            abs,
            kind: None,
            text: None,
            syntax,
            sha256: None,
            parsed: false,
            declared: None,
            contract: None,
            pack_variables: None,
            invalid_pack_variables: None,
            invalid_contract: None,
            work_order: None,
            section_tools: Vec::new(),
            diagnostics: Vec::new(),
            suppress: None,
        }
    }

    /// The id and version the file itself declares (even when it fails its schema).
    pub fn declared_id(&self) -> Option<(&str, &str)> {
        self.declared.as_ref().map(|(id, v)| (id.as_str(), v.as_str()))
    }

    /// The whole contract of a file that passed its contract checks, parsed again from its
    /// text.
    pub fn full_contract(&self) -> Option<Contract> {
        self.contract.as_ref()?;
        let value = self.reparse(DocKind::Contract)?;
        Contract::from_value(value, self.sha256.as_deref()?, &self.abs).ok()
    }

    /// The whole pack of a file that passed its pack checks, parsed again from its text.
    pub fn full_pack(&self) -> Option<PromptPack> {
        self.pack_variables.as_ref()?;
        let value = self.reparse(DocKind::PromptPack)?;
        PromptPack::from_value(&value, self.sha256.as_deref()?, &self.abs).ok()
    }

    /// The file's document, parsed again from the kept text.
    pub fn reparse(&self, doc: DocKind) -> Option<Value> {
        document::parse(self.text.as_deref()?, self.syntax, &self.abs, Some(doc)).ok()
    }

    fn push(&mut self, d: Diagnostic) {
        let d = d.file(self.rel.clone());
        self.diagnostics.push(d);
    }
}

// One analyzed file per file of the tree stays in memory until the end of the run: what
// only some files have is boxed, so 20,000 files take a few MB, not 30 (BENCHMARKS.md).
const _: () = assert!(std::mem::size_of::<Analyzed>() <= 320);

/// Reads and checks one file on its own.
pub fn analyze(candidate: &Candidate, base: &Path) -> Analyzed {
    analyze_read(candidate, base, None)
}

/// [`analyze`], with the file's bytes when they were read already (a context file that
/// the scan for a named file's ids read first).
pub fn analyze_read(candidate: &Candidate, base: &Path, bytes: Option<Vec<u8>>) -> Analyzed {
    // Walked paths under the canonical base are canonical already, symlinks aside.
    let abs = if candidate.canonical {
        candidate.path.clone()
    } else {
        crate::confine::real_or_given(&candidate.path)
    };
    let rel = relative_name(base, &candidate.path);
    let syntax = document::syntax_for(&candidate.path);
    let mut a = Analyzed::new(rel, abs, syntax);
    a.kind = candidate.dir_kind;
    if let Some(reason) = &candidate.escape {
        let e = Error::PathEscape { path: a.rel.clone(), reason: reason.clone() };
        a.push(
            Diagnostic::from_error(&e)
                .help("replace the symlink with the file itself, inside the project"),
        );
        return a;
    }
    if let Some(reason) = &candidate.unreadable {
        let e = Error::io(&a.rel, std::io::Error::other(reason.clone()));
        a.push(Diagnostic::from_error(&e).help(
            "make the folder readable (its files are not checked while it is not), or remove it",
        ));
        return a;
    }
    let read =
        if candidate.regular { document::read_known_limited } else { document::read_limited };
    let bytes = match bytes.map_or_else(|| read(&candidate.path, MAX_FILE_BYTES), Ok) {
        Ok(b) => b,
        Err(e) => {
            let (message, help) = match &e {
                Error::FileTooLarge { size, limit, .. } => (
                    format!("{}: file is {size} bytes, more than the {limit}-byte limit", a.rel),
                    "split the file; contracts and packs are expected to be small",
                ),
                other => (other.to_string(), "check the file's permissions"),
            };
            a.push(Diagnostic::new(e.code(), message).help(help));
            return a;
        }
    };
    a.sha256 = Some(crate::digest::sha256_hex(&bytes));
    let doc_kind = a.kind.map(FileKind::doc_kind);
    let text = match document::utf8(bytes, &candidate.path, doc_kind) {
        Ok(t) => t,
        Err(e) => {
            a.push(parse_diagnostic(&e));
            return a;
        }
    };
    let value = match document::parse(&text, syntax, &candidate.path, doc_kind) {
        Ok(v) => v,
        Err(e) => {
            a.text = Some(text);
            a.push(parse_diagnostic(&e));
            return a;
        }
    };
    a.text = Some(text);
    if a.kind.is_none() {
        a.kind = FileKind::from_value(&value);
    }
    a.suppress = value
        .get("x-pactum-ignore")
        .and_then(Value::as_array)
        .map(|codes| codes.iter().filter_map(Value::as_str).map(str::to_string).collect());
    a.parsed = true;
    let id_key = match a.kind {
        Some(FileKind::Contract) => Some("contract_id"),
        Some(FileKind::Pack) => Some("prompt_pack_id"),
        _ => None,
    };
    if let Some(key) = id_key
        && let (Some(id), Some(version)) =
            (value.get(key).and_then(Value::as_str), value.get("version").and_then(Value::as_str))
    {
        a.declared = Some((id.to_string(), version.to_string()));
    }
    if matches!(a.kind, Some(FileKind::Contract | FileKind::Pack)) {
        check_placeholders(&mut a, &value);
    }
    match a.kind {
        Some(FileKind::Contract) => check_contract(&mut a, value, base),
        Some(FileKind::Pack) => check_pack(&mut a, &value),
        Some(FileKind::WorkOrder) => check_work_order(&mut a, &value),
        None => {}
    }
    a
}

/// Every string of the file that still holds a placeholder `new contract` wrote
/// (`scaffold_placeholder`): a warning in a draft, an error once the version is active
/// (`super::frozen_rules`), so a promotion refuses it.
fn check_placeholders(a: &mut Analyzed, value: &Value) {
    // The path to the value being looked at, as pointer tokens: a pointer is written only
    // for a string that holds a placeholder (every file's every string is looked at).
    fn walk<'v>(v: &'v Value, path: &mut Vec<Token<'v>>, found: &mut Vec<(String, &'static str)>) {
        match v {
            Value::String(text) => {
                if let Some(placeholder) = crate::scaffold::placeholder::in_text(text) {
                    let pointer: String = path
                        .iter()
                        .map(|t| match t {
                            Token::Key(k) => format!("/{}", crate::source::escape_token(k)),
                            Token::Index(i) => format!("/{i}"),
                        })
                        .collect();
                    found.push((pointer, placeholder));
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Token::Index(i));
                    walk(item, path, found);
                    path.pop();
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    path.push(Token::Key(key));
                    walk(item, path, found);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    enum Token<'v> {
        Key(&'v str),
        Index(usize),
    }
    let mut found = Vec::new();
    walk(value, &mut Vec::new(), &mut found);
    for (pointer, placeholder) in found {
        let message = format!(
            "{} still holds the scaffold's placeholder \"{placeholder}\"",
            super::pointer_label(&pointer)
        );
        a.push(Diagnostic::new(Code::ScaffoldPlaceholder, message).pointer(pointer).help(
            "write the text the placeholder stands for: a version that holds one is not promoted",
        ));
    }
}

fn parse_diagnostic(e: &Error) -> Diagnostic {
    let mut d = Diagnostic::new(Code::ContractParseError, e.to_string())
        .help("fix the syntax at the marked position; the file must be valid JSON (or YAML for .yaml/.yml)");
    d.code = e.code();
    if let Error::Parse { line, column, message, .. } = e {
        d.message = message.clone();
        d = d.at(*line, *column);
    }
    d
}

fn schema_diagnostics(a: &mut Analyzed, e: &Error, help: &str) {
    for f in e.findings() {
        let d = Diagnostic::new(
            e.code(),
            format!("{}: {}", super::pointer_label(&f.pointer), f.message),
        )
        .pointer(f.pointer.clone())
        .help(help);
        a.push(d);
    }
}

fn check_contract(a: &mut Analyzed, value: Value, base: &Path) {
    let path = a.abs.clone();
    let dir = path.parent().unwrap_or(base).to_path_buf();
    let files = schema::graph::ProjectFiles::new(base);
    let folder = schema::graph::real_folder_uri(&dir);
    let origin = schema::graph::Origin::new(&folder, &files);
    for (pointer, embedded) in Contract::embedded_schemas(&value) {
        // One resolved graph per schema: measured first (a schema whose evaluation would
        // explode is refused before anything compiles it), then checked.
        let graph = schema::graph::Graph::build(embedded, &origin);
        if let Some(refusal) = schema::cost::check_graph(&graph, embedded, pointer) {
            let f = refusal.finding();
            a.push(
                Diagnostic::new(refusal.code(), f.message.clone())
                    .pointer(f.pointer.clone())
                    .help(refusal.help()),
            );
            continue;
        }
        for f in schema::check_user_schema_in(&graph, embedded, pointer) {
            a.push(
                Diagnostic::new(Code::ContractSchemaInvalid, format!("{}: {}", f.pointer, f.message))
                    .pointer(f.pointer)
                    .help("embedded schemas must be valid JSON Schemas (draft 2020-12 unless they declare $schema) and reference only files inside the project"),
            );
        }
    }
    let embedded_ok = a.diagnostics.is_empty();
    let lenient = ContractFacts::read(&value);
    match Contract::from_value(value, a.sha256.as_deref().unwrap_or_default(), &path) {
        // An invalid embedded schema makes the contract unusable for later rules.
        Ok(c) if embedded_ok => a.contract = Some(Box::new(ContractFacts::of(&c))),
        Ok(_) => {}
        Err(e) => {
            schema_diagnostics(
                a,
                &e,
                "make the contract fit schemas/prompt_contract.schema.json (add \"$schema\" to let your editor check it)",
            );
            // Every finding in one run: its pack's variables are still checked.
            a.invalid_contract = lenient.filter(|_| embedded_ok).map(Box::new);
        }
    }
}

fn check_pack(a: &mut Analyzed, value: &Value) {
    const HELP: &str = "make the pack fit schemas/prompt_pack.schema.json: a `template`, or `sections` with at least a `task`";
    // Every finding in one run: the schema's and the tree's together, then the checks that
    // still make sense on the readable parts (tools, template syntax, variables).
    let (pack, findings) = PromptPack::read(value, a.sha256.as_deref().unwrap_or_default(), &a.abs);
    let valid = findings.is_empty();
    if !valid {
        let e = Error::SchemaInvalid { doc: DocKind::PromptPack, path: a.abs.clone(), findings };
        schema_diagnostics(a, &e, HELP);
    }
    let Some(pack) = pack else { return };
    if let crate::pack::PackBody::Tree(tree) = &pack.body {
        check_section_tools(a, tree, "/sections");
    }
    match CompiledPack::compile(&pack) {
        Ok(compiled) if valid => a.pack_variables = Some(compiled.variables_by_template()),
        Ok(compiled) => a.invalid_pack_variables = Some(compiled.variables_by_template()),
        Err(e) => schema_diagnostics(
            a,
            &e,
            "fix the template syntax (Jinja: {{ name }}, {% for x in xs %}...{% endfor %})",
        ),
    }
}

/// Every tool a section of a tree brings, for [`super::tools`] (SPEC §14, §23).
fn check_section_tools(a: &mut Analyzed, tree: &[crate::pack::Section], at: &str) {
    let mut stack: Vec<(String, &crate::pack::Section)> =
        tree.iter().enumerate().map(|(i, s)| (format!("{at}/{i}"), s)).collect();
    while let Some((here, s)) = stack.pop() {
        for (j, tool) in s.tools.iter().enumerate() {
            a.section_tools.push((format!("{here}/tools/{j}"), s.key.clone(), tool.clone()));
        }
        stack.extend(
            s.children.iter().enumerate().map(|(i, c)| (format!("{here}/children/{i}"), c)),
        );
    }
}

fn check_work_order(a: &mut Analyzed, value: &Value) {
    match WorkOrder::from_value(value, &a.abs) {
        Ok(w) => a.work_order = Some(Box::new(w)),
        Err(e) => {
            schema_diagnostics(a, &e, "make the work order fit schemas/work_order.schema.json")
        }
    }
}
