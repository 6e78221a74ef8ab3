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
