//! pactum: governed prompt contracts.
//!
//! Prompt contracts (`PRC-*`) and prompt packs (`PRM-*`) are versioned JSON (or YAML) files
//! in a repository; `registry.json` governs them. pactum resolves an id plus a semver
//! requirement to one contract, validates the input against its `input_schema` before any
//! LLM call, extracts JSON from the model's reply and validates it against `output_schema`
//! afterwards, and records every exchange in a hash-chained ledger.
//!
//! # File overview
//!
//! | on disk | read by | validated type |
//! |---|---|---|
//! | `registry.json` | [`registry::Registry::load`] | [`registry::Registry`] |
//! | `contracts/**/*.json` | [`project::Project::load_contract`] | [`contract::Contract`] |
//! | `prompt_packs/**/*.{json,yaml}` | [`project::Project::load_pack`] | [`pack::PromptPack`] |
//! | `work_orders/*.{json,yaml}` | [`work_order::WorkOrder::load`] | [`work_order::WorkOrder`] |
//! | `pactum.toml` | [`config::Config::load`] | [`config::Config`] |
//! | `.pactum/ledger.jsonl` | [`ledger::Ledger::open`], [`ledger::verify`], [`ledger::query::query`] (all through [`ledger::Location`]) | one record per line (`schemas/ledger_entry.schema.json`) |
//! | entries on the queue's Redis streams (`NAME`, `NAME:results`) | [`queue::Job::from_fields`], [`queue::Completed::from_fields`] | [`queue::Job`], [`queue::Completed`] (`schemas/queue_entry.schema.json`, `schemas/queue_result.schema.json`) |
//! | `schemas/*.schema.json` | embedded at build time ([`schema::EMBEDDED`]) | — |
//!
//! # Example
//!
//! ```
//! use pactum::id::{Pin, Requirement};
//!
//! let pin = Pin::parse("PRC-CLASSIFY-001@^1.2").unwrap();
//! assert_eq!(pin.id, "PRC-CLASSIFY-001");
//! assert!(matches!(pin.requirement, Requirement::Range(_)));
//! // A bare version is an exact pin, unlike Cargo's caret default.
//! assert!(matches!(Pin::parse("PRC-CLASSIFY-001@1.2.0").unwrap().requirement, Requirement::Exact(_)));
//! ```

#![deny(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

pub use client::{Call, Client};

pub mod authority;
pub mod client;
pub mod compat;
pub mod config;
pub mod confine;
pub mod context;
pub mod contract;
pub mod diagnostic;
pub mod digest;
pub mod disclosure;
pub mod document;
pub mod error;
pub mod eval;
pub mod exchange;
pub mod executor;
pub mod extract;
pub mod gateway;
pub mod generate;
pub mod git;
pub mod governance;
pub mod id;
pub mod init;
pub mod judge;
pub mod ledger;
pub mod mcp;
pub mod pack;
pub mod project;
pub mod queue;
pub mod redact;
pub mod registry;
pub mod render;
pub mod report;
pub mod resolve;
pub mod scaffold;
pub mod schema;
pub mod source;
pub mod stats;
pub mod synthesis;
pub mod telemetry;
pub mod terminal;
pub mod validate;
pub mod view;
pub mod watch;
mod work;
pub mod work_order;

pub use diagnostic::{Diagnostic, Report};
pub use error::{Code, Error, Result, Severity};

/// The README's Rust examples, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
