//! Fuzzes ledger reading: `verify` and `query` over arbitrary bytes (torn lines, duplicate
//! keys, other serialisations, deep nesting, huge numbers), then an append after whatever
//! they found. None may panic; an append to a ledger whose last line is not a record of the
//! chain must fail without writing, and one that succeeds leaves a ledger that verifies
//! whenever the ledger verified before it.
// libFuzzer supplies `main`; without it (no `libfuzzer` feature) `main` replays files.
#![cfg_attr(feature = "libfuzzer", no_main)]
// The fuzz_target! macro's debug mode writes a file itself (RUST_LIBFUZZER_DEBUG_PATH).
#![allow(clippy::disallowed_methods)]

use libfuzzer_sys::fuzz_target;
use pactum::ledger::{Kind, Ledger, Location, query, verify};

fuzz_target!(|data: &[u8]| {
    // One scratch file per fuzzing process, rewritten for every input.
    let dir = std::env::temp_dir().join(format!("pactum-fuzz-ledger-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("ledger.jsonl");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let location = Location::chosen(&path);
    let verified = verify(&location, None).is_ok();
    let _ = query::query(&location, &query::Filter::default());
    let Ok(ledger) = Ledger::open(&location) else { return };
    let appended = ledger.append(Kind::Exchange, serde_json::Map::new());
    let after = std::fs::read(&path).unwrap_or_default();
    let torn = !data.is_empty() && !data.ends_with(b"\n");
    if torn {
        assert!(appended.is_err(), "an append joined a torn line");
    }
    if appended.is_err() {
        assert_eq!(after, data, "a refused append changed the ledger");
    } else {
        assert!(after.starts_with(data) && after.ends_with(b"\n"));
        if verified {
            assert!(verify(&location, None).is_ok(), "an append broke a sound ledger");
        }
    }
});

#[cfg(not(feature = "libfuzzer"))]
fn main() -> std::process::ExitCode {
    pactum_fuzz::replay()
}
