//! The typed clients pactum.toml's `[generate]` names are fresh (SPEC §25): each file's
//! fingerprint is the one of the contracts `pactum generate` would write now
//! (`generated_stale` otherwise, a warning: the code still runs, against types that no
//! longer say what the contracts do). Only the registry's entries are read, never a file
//! of a contract.

use crate::diagnostic::Diagnostic;
use crate::error::Code;
use crate::generate;

use super::Context;

pub fn check(ctx: &Context, out: &mut Vec<Diagnostic>) {
    let Some(registry) = &ctx.registry else { return };
    let settings = &ctx.config.generate;
    let wanted: Vec<(&str, &str)> =
        [("python", settings.python.as_deref()), ("typescript", settings.typescript.as_deref())]
            .into_iter()
            .filter_map(|(lang, path)| Some((lang, path?)))
            .collect();
    if wanted.is_empty() {
        return;
    }
    let now = generate::fingerprint_of_versions(
        generate::chosen(registry, false)
            .into_iter()
            .map(|e| (e.id.as_str(), &e.version, e.sha256.as_str())),
    );
    for (lang, rel) in wanted {
        let fix = format!("run `pactum generate {lang} --out {rel}` and commit the file");
        let path = std::path::Path::new(rel);
        let text = crate::confine::Root::new(&ctx.base)
            .file(path)
            .map_err(|r| r.into_error(path).to_string())
            .and_then(|real| {
                crate::document::read_limited(&real, crate::document::MAX_FILE_BYTES)
                    .map_err(|e| e.to_string())
            });
        let message = match text {
            Err(why) => {
                format!("{rel}, the typed client [generate] {lang} names, cannot be read: {why}")
            }
            Ok(bytes) => match generate::fingerprint_of(&String::from_utf8_lossy(&bytes)) {
                Some(f) if f == now => continue,
                Some(_) => format!(
                    "{rel} was generated from other contracts than the project's active ones: its types no longer say what the contracts take and give"
                ),
                None => format!(
                    "{rel} holds no pactum fingerprint: it is not a file `pactum generate {lang}` wrote"
                ),
            },
        };
        out.push(Diagnostic::new(Code::GeneratedStale, message).file(rel.to_string()).help(fix));
    }
}
