//! Fuzzes registry loading: `registry.json` text through parsing, the schema, the index
//! and the hash-chained history (`verify_history`, `audit`), as `Registry::load` reads it.
//! None may panic.
// libFuzzer supplies `main`; without it (no `libfuzzer` feature) `main` replays files.
#![cfg_attr(feature = "libfuzzer", no_main)]
// The fuzz_target! macro's debug mode writes a file itself (RUST_LIBFUZZER_DEBUG_PATH).
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pactum::registry::{Registry, verify_history};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(registry) =
        Registry::from_text(Path::new("/fuzz/registry.json"), text.to_string(), String::new())
    else {
        return;
    };
    let _ = registry.check_integrity();
    if let Some(history) = &registry.history {
        let _ = verify_history(history);
    }
    let _ = registry.audit();
    let _ = registry.duplicates();
    let _ = registry.to_json();
});

#[cfg(not(feature = "libfuzzer"))]
fn main() -> std::process::ExitCode {
    pactum_fuzz::replay()
}
