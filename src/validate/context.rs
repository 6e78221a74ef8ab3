//! Context references of contracts (SPEC §16): every `file_refs` path and `framework_refs`
//! id a contract requires exists inside the project root, so a run can assemble it
//! (`required_context_missing`, `path_escape`). A malformed `recency` is refused by the
//! contract schema (`contract_schema_invalid` at its pointer).

use crate::confine::Root;
use crate::diagnostic::Diagnostic;
use crate::error::Code;
use crate::schema::join_pointer;
use crate::validate::Context;

pub fn check(ctx: &Context, out: &mut Vec<Diagnostic>) {
    let root = Root::new(&ctx.base);
    for f in &ctx.files {
        let Some(contract) = &f.contract else { continue };
        let required = &contract.required_context;
        for (i, rel) in required.file_refs.iter().enumerate() {
            let pointer = join_pointer("/required_context/file_refs", &i.to_string());
            let refusal = crate::confine::check_relative(rel)
                .map_err(|reason| (Code::PathEscape, reason))
                .and_then(|()| match root.file(std::path::Path::new(rel)) {
                    Ok(_) => Ok(()),
                    Err(crate::confine::Refusal::Missing) => Err((
                        Code::RequiredContextMissing,
                        "does not exist under the project root".to_string(),
                    )),
                    Err(r) => {
                        let e = r.into_error(std::path::Path::new(rel));
                        Err((e.code(), e.to_string()))
                    }
                });
            if let Err((code, why)) = refusal {
                out.push(
                    Diagnostic::new(code, format!("{}: file_refs `{rel}` {why}", contract.key()))
                        .file(f.rel.clone())
                        .pointer(pointer)
                        .help("add the file (a path relative to the project root, inside it), or drop it from required_context.file_refs"),
                );
            }
        }
        for (i, id) in required.framework_refs.iter().enumerate() {
            let pointer = join_pointer("/required_context/framework_refs", &i.to_string());
            let (code, why) = match crate::context::framework_path(&root, id) {
                Ok(Some(_)) => continue,
                Ok(None) => (
                    Code::RequiredContextMissing,
                    format!(
                        "has no file frameworks/{id}.{{{}}}",
                        crate::context::FRAMEWORK_EXTENSIONS.join(",")
                    ),
                ),
                Err(e) => (e.code(), e.to_string()),
            };
            out.push(
                Diagnostic::new(code, format!("{}: framework_refs `{id}` {why}", contract.key()))
                    .file(f.rel.clone())
                    .pointer(pointer)
                    .help(format!("write the framework at frameworks/{id}.md, or drop it from required_context.framework_refs")),
            );
        }
    }
}
