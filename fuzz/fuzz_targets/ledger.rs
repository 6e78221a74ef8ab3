//! Fuzzes ledger reading: `verify` over arbitrary bytes (torn lines, duplicate keys, deep
//! nesting, huge numbers), then an append after whatever it found. None may panic; an
//! append to a ledger that does not end in a newline must fail without writing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pactum::ledger::{Ledger, verify};

fuzz_target!(|data: &[u8]| {
    // One scratch file per fuzzing process, rewritten for every input.
    let dir = std::env::temp_dir().join(format!("pactum-fuzz-ledger-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("ledger.jsonl");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let _ = verify(&path);
    let Ok(ledger) = Ledger::open(&path) else { return };
    let appended = ledger.append("exchange", serde_json::Map::new());
    let after = std::fs::read(&path).unwrap_or_default();
    let torn = !data.is_empty() && !data.ends_with(b"\n");
    if torn {
        assert!(appended.is_err(), "an append joined a torn line");
        assert_eq!(after, data, "a refused append changed the ledger");
    }
    if appended.is_ok() {
        assert!(after.starts_with(data) && after.ends_with(b"\n"));
    }
});
