//! Contract examples run offline (SPEC §5 check 9): wired in with the exchange pipeline.

use crate::diagnostic::Diagnostic;
use crate::validate::Context;

pub fn check(_ctx: &Context, _out: &mut Vec<Diagnostic>) {}
