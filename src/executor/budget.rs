//! A work order's token budget (SPEC §8.5): provider-reported usage is charged; a call
//! whose estimated prompt plus `max_tokens` cannot fit is refused before it is made
//! (`budget_exceeded`).

use std::sync::Mutex;

use crate::error::{Error, Result};

/// Tokens a run may still spend. Unlimited when the work order sets no `token_budget`.
#[derive(Debug)]
pub struct Budget {
    limit: Option<u64>,
    used: Mutex<u64>,
}

impl Budget {
    pub fn new(limit: Option<u64>) -> Budget {
        Budget { limit, used: Mutex::new(0) }
    }

    fn used_guard(&self) -> std::sync::MutexGuard<'_, u64> {
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn used(&self) -> u64 {
        *self.used_guard()
    }

    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// Tokens left (`None` = unlimited).
    pub fn remaining(&self) -> Option<u64> {
        self.limit.map(|l| l.saturating_sub(self.used()))
    }

    /// Refuses a call that could need more than what is left.
    pub fn check(&self, prompt_estimate: u64, max_tokens: u64) -> Result<()> {
        let needed = prompt_estimate.saturating_add(max_tokens);
        match self.remaining() {
            Some(remaining) if needed > remaining => {
                Err(Error::BudgetExceeded { needed, remaining })
            }
            _ => Ok(()),
        }
    }

    /// Charges what a call used.
    pub fn charge(&self, tokens: u64) {
        let mut used = self.used_guard();
        *used = used.saturating_add(tokens);
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn budget_refuses_calls_that_cannot_fit() {
        let b = Budget::new(Some(100));
        assert!(b.check(40, 60).is_ok());
        assert_eq!(b.check(41, 60).unwrap_err().code(), crate::Code::BudgetExceeded);
        b.charge(70);
        assert_eq!(b.remaining(), Some(30));
        let e = b.check(10, 30).unwrap_err();
        assert_eq!(e.code(), crate::Code::BudgetExceeded);
        assert!(e.to_string().contains("needs up to 40 tokens but 30 remain"), "{e}");
        // Usage near 2^64 saturates instead of wrapping: the budget stays spent.
        b.charge(u64::MAX);
        b.charge(5);
        assert_eq!(b.remaining(), Some(0));
        assert_eq!(b.check(u64::MAX, u64::MAX).unwrap_err().code(), crate::Code::BudgetExceeded);
        let unlimited = Budget::new(None);
        unlimited.charge(1_000_000);
        assert!(unlimited.check(u64::MAX / 4, 10).is_ok());
    }
}
