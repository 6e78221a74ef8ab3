//! The cost profiles ([`super::cost::Profile`]) of pactum's own schemas, stored so that a
//! command does not build their reference graphs and measure them at every start. Written by
//! `PACTUM_BLESS=1 cargo test --lib stored_profiles` (src/schema.rs), which recomputes them
//! from `schemas/` and fails when this file differs. Do not edit by hand.

/// (file name, `$defs` item or "" for the whole schema, evaluations by depth, cumulative
/// walks by depth).
#[rustfmt::skip]
pub const STORED: &[(&str, &str, &[u64], &[u64])] = &[
    ("prompt_contract.schema.json", "",
        &[5, 7, 6, 5, 6],
        &[0, 0, 0, 0, 0]),
    ("prompt_pack.schema.json", "",
        &[11, 8, 10, 8, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8],
        &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    ("registry.schema.json", "",
        &[4, 4, 14, 15, 3],
        &[0, 0, 0, 0, 0]),
    ("work_order.schema.json", "",
        &[14, 11, 16],
        &[0, 1, 1]),
    ("final_answer.schema.json", "",
        &[3, 2, 1, 1],
        &[0, 0, 0, 0]),
    ("ledger_entry.schema.json", "",
        &[47, 18, 11, 11],
        &[0, 0, 0, 0]),
    ("eval_suite.schema.json", "",
        &[4, 3, 31, 31],
        &[0, 0, 0, 0]),
    ("queue_entry.schema.json", "",
        &[6, 2],
        &[0, 0]),
    ("queue_result.schema.json", "",
        &[6, 5],
        &[0, 0]),
    ("registry.schema.json", "contract_entry",
        &[10, 9, 3],
        &[0, 0, 0]),
    ("registry.schema.json", "pack_entry",
        &[10, 8],
        &[0, 0]),
    ("registry.schema.json", "event",
        &[14, 15, 3],
        &[0, 0, 0]),
    ("eval_suite.schema.json", "case",
        &[3, 2, 31, 31],
        &[0, 0, 0, 0]),
    ("eval_suite.schema.json", "assertion",
        &[31, 31],
        &[0, 0]),
];
