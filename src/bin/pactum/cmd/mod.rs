//! One module per command.

pub mod diff;
pub mod extract;
pub mod ledger;
pub mod new;
pub mod registry;
pub mod render;
pub mod resolve;
pub mod run;
pub mod validate;
pub mod watch;
