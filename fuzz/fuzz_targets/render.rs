//! Fuzzes template compilation and rendering with fuel: any template text must compile or
//! fail with a code, and rendering must stop (fuel, recursion, output cap) without panicking.
// libFuzzer supplies `main`; without it (no `libfuzzer` feature) `main` replays files.
#![cfg_attr(feature = "libfuzzer", no_main)]
// The fuzz_target! macro's debug mode writes a file itself (RUST_LIBFUZZER_DEBUG_PATH).
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pactum::pack::PromptPack;
use pactum::render::CompiledPack;

fuzz_target!(|data: &[u8]| {
    let Ok(template) = std::str::from_utf8(data) else { return };
    let value = serde_json::json!({"prompt_pack_id": "PRM-FUZZ-001", "version": "1.0.0", "template": template});
    let Ok(pack) = PromptPack::from_value(&value, "fuzz", Path::new("fuzz.json")) else { return };
    let Ok(compiled) = CompiledPack::compile(&pack) else { return };
    let input = serde_json::json!({"x": "{{ x }}", "items": [1, "two", {"three": 3}], "n": 7});
    let _ = compiled.variables();
    let _ = compiled.render(&input, true);
    let _ = compiled.render(&input, false);
});

#[cfg(not(feature = "libfuzzer"))]
fn main() -> std::process::ExitCode {
    pactum_fuzz::replay()
}
