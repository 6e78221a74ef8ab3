//! Fuzzes document loading: JSON and YAML parsing (with their budgets), and the contract,
//! pack, work-order and registry loaders on whatever parses. None may panic.
// libFuzzer supplies `main`; without it (no `libfuzzer` feature) `main` replays files.
#![cfg_attr(feature = "libfuzzer", no_main)]
// The fuzz_target! macro's debug mode writes a file itself (RUST_LIBFUZZER_DEBUG_PATH).
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pactum::document::{Syntax, parse};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for syntax in [Syntax::Json, Syntax::Yaml] {
        let Ok(value) = parse(text, syntax, Path::new("fuzz"), None) else { continue };
        let _ =
            pactum::contract::Contract::from_value(value.clone(), "fuzz", Path::new("fuzz.json"));
        let _ = pactum::pack::PromptPack::from_value(&value, "fuzz", Path::new("fuzz.json"));
        let _ = pactum::work_order::WorkOrder::from_value(&value, Path::new("fuzz.json"));
        let _ = pactum::registry::Registry::from_text(
            Path::new("/fuzz/registry.json"),
            value.to_string(),
            String::new(),
        );
        let _ = pactum::source::locate_best(text, syntax, "/boundary/temperature");
    }
});

#[cfg(not(feature = "libfuzzer"))]
fn main() -> std::process::ExitCode {
    pactum_fuzz::replay()
}
