//! Contract examples run offline (SPEC §5 check 9): each example's input, rendering and
//! recorded response go through the same dual-validation steps as a live exchange, and the
//! outcome must be the one the example expects (`ok` or an error code); otherwise
//! `example_failed`.

use crate::diagnostic::Diagnostic;
use crate::error::Code;
use crate::exchange::run_example;
use crate::project::Validators;
use crate::validate::Context;

/// `packs`: each contract's compiled pack and the pack file's name (an example that fails
/// is about both files).
pub fn check(ctx: &Context, packs: &super::binding::ForExamples, out: &mut Vec<Diagnostic>) {
    for (i, f) in ctx.files.iter().enumerate() {
        if !f.contract.as_ref().is_some_and(|c| c.has_examples) {
            continue;
        }
        let Some((pack, pack_file)) = packs.get(&i) else { continue };
        let Some(contract) = f.full_contract() else { continue };
        let compile = |schema: &Option<serde_json::Value>| match schema {
            None => Ok(None),
            Some(s) => crate::schema::compile(s, contract.dir(), &ctx.base).map(Some),
        };
        // Schemas that do not compile are reported by the per-file checks.
        let (Ok(input), Ok(output)) =
            (compile(&contract.input_schema), compile(&contract.output_schema))
        else {
            continue;
        };
        let validators = Validators { input, output };
        // One budget for every example of the file: many examples cannot multiply it.
        let budget = crate::render::RenderBudget::for_file();
        let validation = crate::schema::Budget::new();
        for (n, example) in contract.examples.iter().enumerate() {
            let (outcome, error) =
                run_example(&contract, &validators, pack, example, (&budget, &validation));
            if outcome == example.expect {
                continue;
            }
            let name = example.name.as_deref().map(|n| format!(" `{n}`")).unwrap_or_default();
            let why = error.map(|e| format!(": {e}")).unwrap_or_default();
            out.push(
                Diagnostic::new(
                    Code::ExampleFailed,
                    format!("example {n}{name} expects `{}` but gives `{outcome}`{why}", example.expect),
                )
                .file(f.rel.clone())
                .about(pack_file.clone())
                .pointer(format!("/examples/{n}"))
                .help("fix the contract or the example; examples are offline fixtures that must keep passing"),
            );
        }
    }
}
