//! Fuzzes section trees (SPEC §14, §15): any JSON document given as a pack's `sections`
//! array must load or fail with a code, and a tree that loads must render with every
//! combination of opened sections, and answer any tool call, without panicking.
// libFuzzer supplies `main`; without it (no `libfuzzer` feature) `main` replays files.
#![cfg_attr(feature = "libfuzzer", no_main)]
// The fuzz_target! macro's debug mode writes a file itself (RUST_LIBFUZZER_DEBUG_PATH).
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pactum::disclosure::Disclosure;
use pactum::executor::tools::ToolRegistry;
use pactum::gateway::ToolCall;
use pactum::pack::PromptPack;
use pactum::render::CompiledPack;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(sections) = serde_json::from_str::<serde_json::Value>(text) else { return };
    let value = serde_json::json!({"prompt_pack_id": "PRM-FUZZ-001", "version": "1.0.0", "sections": sections});
    let Ok(pack) = PromptPack::from_value(&value, "fuzz", Path::new("fuzz.json")) else { return };
    let Ok(compiled) = CompiledPack::compile(&pack) else { return };
    let input = serde_json::json!({"mode": "careful", "x": "{{ x }}", "items": [1, "two"]});
    let _ = compiled.variables_by_template();
    let keys = compiled.section_keys();
    let _ = compiled.render(&input, false);
    let all: BTreeSet<String> = keys.iter().cloned().collect();
    let _ = compiled.render_open(&input, true, &all);
    let tools = ToolRegistry::builtin(Default::default());
    let Ok(mut disclosure) = Disclosure::new(&compiled, &input, true, &tools, 3) else { return };
    let calls: Vec<ToolCall> = keys
        .iter()
        .take(3)
        .enumerate()
        .map(|(i, k)| ToolCall {
            id: format!("c{i}"),
            name: if i % 2 == 0 { "open_sections" } else { "read_file" }.to_string(),
            arguments: serde_json::json!({"section_keys": [k], "reason": "fuzz", "path": format!("/context/{k}.md")}),
        })
        .collect();
    let _ = disclosure.answer(&calls);
    let _ = disclosure.messages();
});

#[cfg(not(feature = "libfuzzer"))]
fn main() -> std::process::ExitCode {
    pactum_fuzz::replay()
}
