//! Eval suites (SPEC §19): `validate` checks what `pactum eval` would refuse or trip on,
//! so a green CI means the suites run.
//! - the suite fits `eval_suite.schema.json` and its assertions compile
//!   (`eval_suite_invalid`, at the pointer's line);
//! - its contract pin resolves (drafts count: a suite may measure a version before it is
//!   promoted), with resolution's own codes;
//! - every line of its dataset is a case (`eval_dataset_invalid`, at the line) whose
//!   `input` fits the contract's `input_schema` (`input_schema_invalid`, at the line);
//! - every assertion's `pointer` exists in the contract's `output_schema`, and every
//!   `judge` assertion's contract resolves and answers like a judge
//!   (`eval_suite_invalid`, in the suite or at the dataset line).
//!
//! The suites are those under `evals/` when PATH is the project root, or under PATH when it
//! is a folder, or PATH itself when it is a suite file. In a run on named paths
//! ([`super::subjects`]) every suite of the project is looked at, and checked when it, its
//! dataset, its contract or a judge it names is a named file: its findings are about the
//! files they rest on (a dataset line that does not fit is about the line's file, the
//! suite and the contract).

use std::collections::HashMap;
use std::path::Path;

use crate::schema::Validator;
use serde_json::Value;

use crate::contract::Contract;
use crate::diagnostic::Diagnostic;
use crate::error::{Code, Error};
use crate::eval::assert::Assertion;
use crate::eval::dataset::Dataset;
use crate::eval::suite::{self, Suite};
use crate::registry::{EntryKind, Registry};
use crate::resolve::{ResolveOptions, resolve};
use crate::source::{self, Syntax};
use crate::validate::{Analyzed, Context, relative_name};

const SUITE_HELP: &str = "make the suite fit schemas/eval_suite.schema.json (add \"$schema\" to let your editor check it)";

/// Checks the suites PATH holds; adds each suite file to `files`.
pub fn check(ctx: &Context, files: &mut Vec<String>, out: &mut Vec<Diagnostic>) {
    let mut suites = if ctx.subjects.is_all() { Vec::new() } else { suite::in_project(&ctx.base) };
    for target in &ctx.paths {
        if target == &ctx.base {
            suites.extend(suite::in_project(&ctx.base));
        } else if crate::confine::is_dir(target) {
            suites.extend(suite::files_under(target));
        } else if target.file_name().is_some_and(|n| suite::is_suite_name(&n.to_string_lossy())) {
            suites.push(target.clone());
        }
    }
    let mut judges = Judges::default();
    let judge_named = !ctx.subjects.is_all() && dataset_judges_named(ctx);
    let mut seen = std::collections::HashSet::new();
    // The files listed so far, for linear de-duplication (built at the first suite).
    let mut listed: Option<std::collections::HashSet<String>> = None;
    for path in suites {
        let rel = relative_name(&ctx.base, &crate::confine::real_or_given(&path));
        if !seen.insert(rel.clone()) {
            continue;
        }
        let checked = check_suite(ctx, (&path, &rel), judge_named, &mut judges, out);
        let listed = listed.get_or_insert_with(|| files.iter().cloned().collect());
        for name in checked.into_iter().filter(|name| ctx.is_subject(name)) {
            if listed.insert(name.clone()) {
                files.push(name);
            }
        }
    }
}

/// Findings of one suite file, placed on its lines.
struct SuiteFile<'a> {
    rel: &'a str,
    text: String,
    syntax: Syntax,
    found: Vec<Diagnostic>,
}

impl SuiteFile<'_> {
    fn push(&mut self, code: Code, pointer: &str, message: String, help: &str) {
        self.push_about(code, pointer, message, help, &[]);
    }

    /// A finding that also rests on other files (the contract, a judge).
    fn push_about(
        &mut self,
        code: Code,
        pointer: &str,
        message: String,
        help: &str,
        about: &[Option<&str>],
    ) {
        let mut d =
            Diagnostic::new(code, message).file(self.rel.to_string()).pointer(pointer).help(help);
        for file in about.iter().flatten() {
            d = d.about(*file);
        }
        self.found.push(d);
    }

    /// Every finding with its line and column (one pass over the text).
    fn placed(self) -> Vec<Diagnostic> {
        let pointers: Vec<&str> =
            self.found.iter().map(|d| d.pointer.as_deref().unwrap_or("")).collect();
        let spans = source::locate_best_many(&self.text, self.syntax, &pointers);
        let offsets: Vec<usize> = spans.iter().map(|s| s.start).collect();
        let index = source::LineIndex::new(&self.text);
        let at = index.place_offsets(&self.text, &offsets);
        self.found
            .into_iter()
            .zip(at)
            .map(|(d, at)| {
                let mut d = d.at(at.line, at.column);
                d.excerpt = Some(at.excerpt);
                d
            })
            .collect()
    }
}

/// Checks one suite; returns the files it checked (the suite, and its dataset when read).
/// In a run on named paths, a suite none of whose files is named is not checked.
fn check_suite(
    ctx: &Context,
    (path, rel): (&Path, &str),
    judge_named: bool,
    judges: &mut Judges,
    out: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let mut checked = vec![rel.to_string()];
    let named = ctx.is_subject(rel);
    let doc = match crate::document::load(path, None) {
        Ok(doc) => doc,
        Err(e) => {
            let mut d = Diagnostic::new(Code::EvalSuiteInvalid, e.to_string())
                .file(rel.to_string())
                .help(SUITE_HELP);
            if let Error::Parse { line, column, message, .. } = &e {
                d.message = message.clone();
                d = d.at(*line, *column);
            }
            out.push(d);
            return checked;
        }
    };
    let syntax = match crate::document::syntax_for(path) {
        crate::document::Syntax::Yaml => Syntax::Yaml,
        crate::document::Syntax::Json => Syntax::Json,
    };
    let mut file = SuiteFile { rel, text: doc.text.clone(), syntax, found: Vec::new() };
    let (suite, found) = Suite::read(&doc.value, path, &ctx.base);
    for f in found {
        file.push(
            Code::EvalSuiteInvalid,
            &f.pointer,
            format!("{}: {}", super::pointer_label(&f.pointer), f.message),
            SUITE_HELP,
        );
    }
    let Some(suite) = suite else {
        out.extend(file.placed());
        return checked;
    };
    let Some(registry) = &ctx.registry else {
        out.extend(file.placed());
        return checked;
    };
    let pin = &suite.contract;
    let dataset_rel =
        relative_name(&ctx.base, &crate::confine::real_or_given(&ctx.base.join(&suite.dataset)));
    let resolved = resolve(
        registry,
        EntryKind::Contract,
        &pin.id,
        &pin.requirement,
        ResolveOptions { allow_draft: true, route: None },
    );
    let contract_file = resolved.as_ref().ok().and_then(|r| ctx.entry_file(r.entry));
    let contract_rel = contract_file.map(|f| f.rel.as_str());
    let judge_files: Vec<String> = suite
        .assertions
        .iter()
        .filter_map(Assertion::judge)
        .filter_map(|spec| judges.file(ctx, registry, &spec.contract))
        .collect();
    // A suite that rests on no named file has no finding to report in this run.
    if !named
        && !ctx.is_subject(&dataset_rel)
        && !contract_rel.is_some_and(|c| ctx.is_subject(c))
        && !judge_files.iter().any(|j| ctx.is_subject(j))
        && !judge_named
    {
        return Vec::new();
    }
    let contract = match resolved {
        Ok(_) => contract_file.and_then(Analyzed::full_contract),
        Err(e) => {
            file.push(
                e.code(),
                "/contract",
                format!("{} evaluates {pin}: {e}", suite.eval_id),
                "pin a registered version; `pactum registry list` shows what there is",
            );
            None
        }
    };
    for a in &suite.assertions {
        for (pointer, message, about) in
            assertion_problems(ctx, registry, (contract.as_ref(), contract_rel), a, judges)
        {
            file.push_about(
                Code::EvalSuiteInvalid,
                &pointer,
                message,
                SUITE_HELP,
                &[about.as_deref()],
            );
        }
    }
    let dataset = match Dataset::open(&ctx.base, &suite.dataset) {
        Ok(d) => Some(d),
        Err(e) => {
            file.push(
                if e.code() == Code::PathEscape { e.code() } else { Code::EvalDatasetInvalid },
                "/dataset",
                // An I/O error names the path itself; the message names it once.
                match &e {
                    Error::Io { source, .. } => {
                        format!("{}'s dataset {}: {source}", suite.eval_id, suite.dataset)
                    }
                    other => format!("{}'s dataset {}: {other}", suite.eval_id, suite.dataset),
                },
                "name a JSON Lines file inside the project, relative to the project root",
            );
            None
        }
    };
    out.extend(file.placed());
    if let Some(dataset) = dataset {
        checked.push(dataset_rel.clone());
        let about = About { suite: rel, dataset: &dataset_rel, contract: contract_rel };
        check_dataset(ctx, registry, (contract.as_ref(), &about), dataset, judges, out);
    }
    checked
}

/// The files a dataset's findings rest on.
struct About<'a> {
    suite: &'a str,
    dataset: &'a str,
    contract: Option<&'a str>,
}

/// Whether a named file could be a judge some dataset line names (datasets are read only
/// for suites that rest on a named file otherwise): a named contract that answers like a
/// judge counts, so a judge's change is checked against every case that asks it.
fn dataset_judges_named(ctx: &Context) -> bool {
    ctx.analyzed().any(|f| {
        ctx.is_subject(&f.rel)
            && f.full_contract()
                .is_some_and(|c| crate::judge::shape_problem(c.output_schema.as_ref()).is_none())
    })
}

/// Every line of the dataset: a case whose input fits the contract and whose assertions
/// can be checked.
fn check_dataset(
    ctx: &Context,
    registry: &Registry,
    (contract, about): (Option<&Contract>, &About<'_>),
    dataset: Dataset,
    judges: &mut Judges,
    out: &mut Vec<Diagnostic>,
) {
    let rel = about.dataset.to_string();
    let validator: Option<Validator> = contract.and_then(|c| {
        c.input_schema.as_ref().and_then(|s| crate::schema::compile(s, c.dir(), &ctx.base).ok())
    });
    let at_line = |code: Code, line: usize, message: String, help: &str| {
        Diagnostic::new(code, message).file(rel.clone()).about(about.suite).at(line, 1).help(help)
    };
    let with_contract = |d: Diagnostic| match about.contract {
        Some(c) => d.about(c),
        None => d,
    };
    let budget = crate::schema::Budget::new();
    for case in dataset {
        let case = match case {
            Ok(case) => case,
            Err(Error::EvalDatasetInvalid { line, message, .. }) => {
                out.push(at_line(Code::EvalDatasetInvalid, line, message, "each line of a dataset is one case: {\"id\", \"input\", \"expect\"?, \"tags\"?}"));
                continue;
            }
            Err(e) => {
                out.push(Diagnostic::from_error(&e).file(rel.clone()));
                return;
            }
        };
        // The cases of one dataset share one validation budget.
        let found = match validator.as_ref().map(|v| v.check_within(&case.input, &budget)) {
            None => Vec::new(),
            Some(Ok(found)) => found,
            Some(Err(too)) => {
                out.push(with_contract(at_line(
                    Code::ValidationTooCostly,
                    case.line,
                    format!("case `{}`: the input: {too}", case.id),
                    "`pactum eval` would not call the model for this case: send a smaller input, or simplify the contract's input_schema",
                )));
                Vec::new()
            }
        };
        for f in found {
            out.push(with_contract(at_line(
                Code::InputSchemaInvalid,
                case.line,
                format!(
                    "case `{}`: input{} does not fit {}'s input_schema: {}",
                    case.id,
                    f.pointer,
                    contract.map(Contract::key).unwrap_or_default(),
                    f.message
                ),
                "`pactum eval` would not call the model for this case: fix its input",
            )));
        }
        for a in &case.expect {
            for (_, message, judge) in
                assertion_problems(ctx, registry, (contract, about.contract), a, judges)
            {
                let d = at_line(
                    Code::EvalSuiteInvalid,
                    case.line,
                    format!("case `{}`: {message}", case.id),
                    "fix the case's assertion",
                );
                out.push(match judge {
                    Some(j) => d.about(j),
                    None => d,
                });
            }
        }
    }
}

/// What keeps an assertion from being checked on the contract's output: a pointer the
/// output schema does not have, a judge that does not resolve or does not answer like one;
/// each with the other file it rests on (the contract's, the judge's).
fn assertion_problems(
    ctx: &Context,
    registry: &Registry,
    (contract, contract_rel): (Option<&Contract>, Option<&str>),
    a: &Assertion,
    judges: &mut Judges,
) -> Vec<(String, String, Option<String>)> {
    let at = &a.at;
    let mut out = Vec::new();
    if let Some(c) = contract
        && let Some(problem) = pointer_problem(c.output_schema.as_ref(), &a.pointer)
    {
        out.push((
            format!("{at}/pointer"),
            format!("{}: {problem} ({})", super::pointer_label(&format!("{at}/pointer")), c.key()),
            contract_rel.map(str::to_string),
        ));
    }
    if let Some(spec) = a.judge()
        && let Some(problem) = judges.problem(ctx, registry, &spec.contract)
    {
        out.push((
            format!("{at}/contract"),
            format!("{}: {problem}", super::pointer_label(&format!("{at}/contract"))),
            judges.file(ctx, registry, &spec.contract),
        ));
    }
    out
}

/// Why `pointer` names nothing `output_schema` declares (`None` when it may: a schema
/// using combinators or references at some level is not second-guessed).
fn pointer_problem(output_schema: Option<&Value>, pointer: &str) -> Option<String> {
    if pointer.is_empty() {
        return None;
    }
    let Some(mut schema) = output_schema else {
        return Some(format!(
            "`{pointer}` points into the output, but the contract has no output_schema (its output is text)"
        ));
    };
    let mut walked = String::new();
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        if ["$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "if", "patternProperties"]
            .iter()
            .any(|k| schema.get(k).is_some())
        {
            return None;
        }
        let next = schema
            .get("properties")
            .and_then(|p| p.get(&token))
            .or_else(|| {
                token.parse::<usize>().ok().and(schema.get("items")).filter(|i| i.is_object())
            })
            .or_else(|| {
                token
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| schema.get("prefixItems").and_then(|p| p.get(i)))
            });
        match next {
            Some(s) => schema = s,
            None => {
                if schema.get("additionalProperties").is_some_and(Value::is_object) {
                    schema = &schema["additionalProperties"];
                } else {
                    let declared: Vec<&str> = schema
                        .get("properties")
                        .and_then(Value::as_object)
                        .map(|p| p.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    let close: Vec<&&str> = declared
                        .iter()
                        .filter(|k| crate::id::levenshtein(k, &token) <= 2)
                        .collect();
                    let hint = match close.as_slice() {
                        [one] => format!("; did you mean `{walked}/{one}`?"),
                        _ if declared.is_empty() => String::new(),
                        _ => format!("; it declares {}", declared.join(", ")),
                    };
                    return Some(format!(
                        "`{pointer}` names nothing output_schema declares: no `{token}` at `{}`{hint}",
                        if walked.is_empty() { "(root)" } else { walked.as_str() }
                    ));
                }
            }
        }
        walked.push('/');
        walked.push_str(&token);
    }
    None
}

/// Judge pins already looked at, and what was wrong with each: the one check of a judge,
/// for eval suites' `judge` assertions and for `semantic_check`s ([`super::semantic`]).
#[derive(Default)]
pub(super) struct Judges(HashMap<String, Option<String>>);

impl Judges {
    /// The file of the judge contract `pin` resolves to, if it resolves.
    pub(super) fn file(
        &self,
        ctx: &Context,
        registry: &Registry,
        pin: &crate::id::Pin,
    ) -> Option<String> {
        let r = resolve(
            registry,
            EntryKind::Contract,
            &pin.id,
            &pin.requirement,
            ResolveOptions::default(),
        )
        .ok()?;
        ctx.entry_file(r.entry).map(|f| f.rel.clone())
    }

    /// Why `pin` cannot judge: it does not resolve, or its contract does not answer
    /// `{pass, score?, reason}` (`None` when it can).
    pub(super) fn problem(
        &mut self,
        ctx: &Context,
        registry: &Registry,
        pin: &crate::id::Pin,
    ) -> Option<String> {
        self.0
            .entry(pin.to_string())
            .or_insert_with(|| {
                match resolve(
                    registry,
                    EntryKind::Contract,
                    &pin.id,
                    &pin.requirement,
                    ResolveOptions::default(),
                ) {
                    Err(e) => Some(format!("the judge {pin} does not resolve: {e}")),
                    Ok(r) => ctx.entry_file(r.entry).and_then(Analyzed::full_contract).and_then(
                        |judge| {
                            crate::judge::shape_problem(judge.output_schema.as_ref())
                                .map(|p| format!("{} cannot judge: {p}", judge.key()))
                        },
                    ),
                }
            })
            .clone()
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_are_followed_through_properties_and_items() {
        let schema = json!({"type": "object", "properties": {
            "label": {"enum": ["a"]},
            "reasons": {"type": "array", "items": {"type": "string"}},
            "meta": {"type": "object", "additionalProperties": {"type": "number"}},
            "any": {"anyOf": [{"type": "object"}]}}});
        let problem = |p: &str| pointer_problem(Some(&schema), p);
        for ok in ["", "/label", "/reasons/0", "/meta/anything", "/any/x/y"] {
            assert_eq!(problem(ok), None, "{ok}");
        }
        let typo = problem("/labl").unwrap();
        assert!(typo.contains("did you mean `/label`?"), "{typo}");
        assert!(problem("/reasons/x").is_some());
        assert!(problem("/label/deeper").is_some());
        assert!(pointer_problem(None, "/label").unwrap().contains("no output_schema"));
    }
}
