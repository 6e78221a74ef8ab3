//! `semantic_check`s (SPEC §19): in every contract and work order that names one, the
//! judge pin resolves and its contract answers like a judge (`{pass, score?, reason}`) —
//! the check eval suites' `judge` assertions get ([`super::evals::Judges`]), reported as
//! the file's own kind of finding (`contract_schema_invalid`, `work_order_invalid`) at
//! `/semantic_check/judge`. What `semantic_check` itself may hold (an unknown `on_fail`)
//! is the document schema's finding, from the per-file stage.

use crate::diagnostic::Diagnostic;
use crate::error::Code;
use crate::validate::Context;
use crate::validate::evals::Judges;

const AT: &str = "/semantic_check/judge";
const HELP: &str = "name a registered judge contract whose output_schema requires pass (boolean) and reason (string), e.g. PRC-JUDGE-001@^1 (`pactum init --kernel` installs it)";

pub fn check(ctx: &Context, out: &mut Vec<Diagnostic>) {
    let Some(registry) = &ctx.registry else { return };
    let mut judges = Judges::default();
    for f in &ctx.files {
        let (code, owner, pin) = match (&f.contract, &f.work_order) {
            (Some(c), _) => match &c.semantic_judge {
                Some(pin) => (Code::ContractSchemaInvalid, c.key(), pin),
                None => continue,
            },
            (None, Some(wo)) => match &wo.semantic_check {
                Some(check) => (Code::WorkOrderInvalid, wo.id.clone(), &check.judge.contract),
                None => continue,
            },
            (None, None) => continue,
        };
        if let Some(problem) = judges.problem(ctx, registry, pin) {
            let d = Diagnostic::new(code, format!("{owner}: semantic_check: {problem}"))
                .file(f.rel.clone());
            out.push(
                match judges.file(ctx, registry, pin) {
                    Some(judge) => d.about(judge),
                    None => d,
                }
                .pointer(AT)
                .help(HELP),
            );
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use std::path::Path;

    use serde_json::{Value, json};

    use crate::registry::lifecycle::Stamp;
    use crate::validate::{NoProgress, ValidateOptions, validate};

    use super::*;

    /// A project with the kernel contracts (the judge PRC-JUDGE-001 among them, active) and
    /// the drafts of PRC-A-001.
    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let stamp = Stamp::new("2026-01-01T00:00:00Z", "tester@example.com");
        crate::init::init(dir.path(), true, &stamp).unwrap();
        let s = crate::scaffold::new_contract(dir.path(), "PRC-A-001", &stamp).unwrap();
        crate::scaffold::tests::write_placeholders(dir.path(), &s);
        dir
    }

    fn edit(dir: &Path, rel: &str, f: impl FnOnce(&mut Value)) {
        let path = dir.join(rel);
        let mut value: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        f(&mut value);
        std::fs::write(path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    }

    /// The findings at `/semantic_check/judge`: (file, code, message).
    fn judged(dir: &Path) -> Vec<(String, Code, String)> {
        let report = validate(dir, &ValidateOptions::default(), &NoProgress).unwrap();
        report
            .diagnostics
            .into_iter()
            .filter(|d| d.pointer.as_deref() == Some(AT))
            .map(|d| (d.file.unwrap_or_default(), d.code, d.message))
            .collect()
    }

    fn check_with(judge: &str) -> Value {
        json!({"judge": judge, "criteria": "The result answers the input."})
    }

    #[test]
    fn a_registered_judge_passes() {
        let dir = project();
        edit(dir.path(), "contracts/a/1.0.0.json", |c| {
            c["semantic_check"] = check_with("PRC-JUDGE-001@^1")
        });
        assert_eq!(judged(dir.path()), []);
    }

    #[test]
    fn a_contracts_judge_that_does_not_resolve_is_a_finding_of_the_contract() {
        let dir = project();
        edit(dir.path(), "contracts/a/1.0.0.json", |c| {
            c["semantic_check"] = check_with("PRC-NOPE-001@^1")
        });
        let found = judged(dir.path());
        assert_eq!(found.len(), 1, "{found:?}");
        let (file, code, message) = &found[0];
        assert_eq!((file.as_str(), *code), ("contracts/a/1.0.0.json", Code::ContractSchemaInvalid));
        assert!(
            message.starts_with(
                "PRC-A-001@1.0.0: semantic_check: the judge PRC-NOPE-001@^1 does not resolve"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_work_orders_judge_that_cannot_judge_is_a_finding_of_the_work_order() {
        let dir = project();
        // A registered contract whose output has no `pass` and `reason`: no judge.
        let wo = json!({"work_order_id": "WO-A-001", "kind": "exchange", "contract": "PRC-CONVERGE-001@^1",
            "input": {}, "semantic_check": check_with("PRC-CONVERGE-001@^1")});
        std::fs::write(dir.path().join("work_orders/a.json"), wo.to_string()).unwrap();
        let found: Vec<_> =
            judged(dir.path()).into_iter().filter(|f| f.0 == "work_orders/a.json").collect();
        assert_eq!(found.len(), 1, "{found:?}");
        let (_, code, message) = &found[0];
        assert_eq!(*code, Code::WorkOrderInvalid);
        assert!(
            message.starts_with("WO-A-001: semantic_check: PRC-CONVERGE-001@1.1.0 cannot judge: "),
            "{message}"
        );
    }

    #[test]
    fn one_judge_named_by_two_files_is_a_finding_in_each() {
        let dir = project();
        edit(dir.path(), "contracts/a/1.0.0.json", |c| {
            c["semantic_check"] = check_with("PRC-NOPE-001@^1")
        });
        let wo = json!({"work_order_id": "WO-A-001", "kind": "exchange", "contract": "PRC-A-001@1.0.0",
            "input": {"input": "x"}, "semantic_check": check_with("PRC-NOPE-001@^1")});
        std::fs::write(dir.path().join("work_orders/a.json"), wo.to_string()).unwrap();
        let mut files: Vec<String> = judged(dir.path()).into_iter().map(|f| f.0).collect();
        files.sort();
        assert_eq!(files, ["contracts/a/1.0.0.json", "work_orders/a.json"]);
    }
}
