//! One module per command.

pub mod dataset;
pub mod diff;
pub mod eval;
pub mod explain;
pub mod extract;
pub mod generate;
pub mod init;
pub mod ledger;
pub mod new;
pub mod queue;
pub mod registry;
pub mod render;
pub mod resolve;
pub mod results;
pub mod run;
pub mod schemas;
pub mod stats;
pub mod submit;
pub mod tools;
pub mod validate;
pub mod view;
pub mod watch;
pub mod worker;
