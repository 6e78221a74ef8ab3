//! The integration suite, one test binary (each file below was a binary of its own;
//! linking the crate once instead of 28 times is most of what a test build costs).
//! `cargo test --test suite MODULE::` runs one file's tests.
#![allow(clippy::disallowed_methods)] // tests, benches and examples build their trees directly

#[path = "support/common.rs"]
mod common;
#[path = "fixtures/exchange/harness.rs"]
mod exchange_harness;
#[path = "fixtures/kernel/harness.rs"]
mod kernel_harness;
#[path = "support/mock_http.rs"]
mod mock_http;
#[path = "support/otlp.rs"]
mod otlp;
#[path = "support/postgres.rs"]
mod postgres;
#[path = "support/redis.rs"]
mod redis;
#[path = "support/scorecard.rs"]
mod scorecard;

mod cli_authority;
mod cli_base;
mod cli_ci_output;
mod cli_context;
mod cli_disclosure;
mod cli_eval;
mod cli_eval_queue;
mod cli_exchange;
mod cli_exchange_http;
mod cli_exchange_ledger;
mod cli_file_results;
mod cli_hints;
mod cli_in_ci;
mod cli_ledger;
mod cli_ledger_postgres;
mod cli_mcp;
mod cli_one_line;
mod cli_otel;
mod cli_otel_attacks;
mod cli_otel_phoenix;
mod cli_production;
mod cli_project;
mod cli_registry;
mod cli_resolve;
mod cli_schema_refs;
mod cli_semantic;
mod cli_validate;
mod cli_validate_context;
mod cli_view;
mod cli_watch;
mod cli_worker;
mod error_codes;
mod extract_peer;
mod extract_scorecard;
mod invariants;
mod kernel;
mod kernel_cli;
mod kernel_limits;
mod kernel_phase_e;
mod library_client;
mod library_exchange;
mod providers_http;
mod readme_eval;
mod readme_tour;
mod registry_crash;
mod render_trees;
mod trust_boundaries;
