//! One module per command.

pub mod registry;
pub mod resolve;
pub mod validate;
