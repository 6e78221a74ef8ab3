//! Work-order pins (SPEC §5 check 10): every pin in a work order resolves
//! (`contract_not_found`, `contract_version_not_found`, `contract_not_active`), and pins of
//! deprecated versions warn (`contract_deprecated`).

use crate::diagnostic::Diagnostic;
use crate::registry::EntryKind;
use crate::resolve::{ResolveOptions, resolve};
use crate::validate::Context;

pub fn check(ctx: &Context, notes: &mut Vec<String>, out: &mut Vec<Diagnostic>) {
    let orders: Vec<_> =
        ctx.files.iter().filter_map(|f| f.work_order.as_ref().map(|w| (f, w))).collect();
    let Some(registry) = &ctx.registry else {
        if !orders.is_empty() {
            notes.push("work-order pins not checked: no registry".to_string());
        }
        return;
    };
    for (f, wo) in orders {
        for (pointer, pin) in wo.pins() {
            match resolve(registry, EntryKind::Contract, &pin.id, &pin.requirement, ResolveOptions::default()) {
                Ok(r) => {
                    for w in r.warnings {
                        out.push(
                            Diagnostic::new(w.code, format!("{} pins {pin}: {}", wo.id, w.message))
                                .file(f.rel.clone())
                                .pointer(pointer.clone())
                                .help("move the pin to the successor version"),
                        );
                    }
                }
                Err(e) => out.push(
                    Diagnostic::new(e.code(), format!("{} pins {pin}: {e}", wo.id))
                        .file(f.rel.clone())
                        .pointer(pointer.clone())
                        .help("pin a registered, active version; `pactum resolve ID` shows what resolves"),
                ),
            }
        }
    }
}
