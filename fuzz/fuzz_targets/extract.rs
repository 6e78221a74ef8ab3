//! Fuzzes JSON extraction (strict and lenient, object and array candidates, envelopes):
//! it must never panic, and every span it reports must slice the text on character
//! boundaries.
// libFuzzer supplies `main`; without it (no `libfuzzer` feature) `main` replays files.
#![cfg_attr(feature = "libfuzzer", no_main)]
// The fuzz_target! macro's debug mode writes a file itself (RUST_LIBFUZZER_DEBUG_PATH).
#![allow(clippy::disallowed_methods)]

use libfuzzer_sys::fuzz_target;
use pactum::extract::{ExtractOptions, extract, extract_envelope};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for want_array in [false, true] {
        for repair in [false, true] {
            let options = ExtractOptions { want_array, repair, coerce: false };
            if let Ok(found) = extract(text, &options) {
                assert!(text.get(found.span.0..found.span.1).is_some(), "span off a char boundary");
            }
        }
    }
    let envelope = serde_json::json!({ "text": text });
    let _ = extract_envelope(&envelope, &ExtractOptions::default());
});

#[cfg(not(feature = "libfuzzer"))]
fn main() -> std::process::ExitCode {
    pactum_fuzz::replay()
}
