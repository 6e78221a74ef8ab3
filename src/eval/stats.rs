//! The statistics of an evaluation: the exact McNemar test over paired cases, and
//! percentiles of latencies.
//!
//! Two versions answer the same cases, so their results are paired: what tells a real
//! regression from noise is only the discordant pairs — `b` cases that pass on the baseline
//! and fail on the candidate, `c` the other way round. Under "no difference" each
//! discordant pair goes either way with probability ½, so `min(b, c)` follows a binomial
//! distribution Bin(b + c, ½); the exact two-sided p-value is twice its lower tail (at most
//! 1). The tail is summed term by term, in time linear in `min(b, c)`: the binomial
//! coefficients are built one from the other (`C(n, i) = C(n, i - 1) · (n - i + 1) / i`) as
//! floats scaled by a power of two kept apart, so that neither they overflow nor 2^-n
//! underflows before the end. Each term rounds twice and each sum once, so the p-value is
//! within a relative error of [`MAX_RELATIVE_ERROR_PER_PAIR`] times `min(b, c) + 1` of the
//! exact binomial tail (1.7e-11 at 50,000 pairs either way; the tests compare it with exact
//! integer sums), down to p-values of 2^-1022, below which floats lose precision.

/// The relative error of [`mcnemar_exact`] per term of its sum (three roundings of 2^-53).
pub const MAX_RELATIVE_ERROR_PER_PAIR: f64 = 3.0 * f64::EPSILON / 2.0;

/// The exact two-sided McNemar p-value for `b` and `c` discordant pairs (1 when there are
/// none), within the relative error the module documentation states.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    // The scale moves by 2^512.
    const STEP: i64 = 512;
    let large = 2f64.powi(STEP as i32);
    let n = b + c;
    let k = b.min(c);
    if n == 0 {
        return 1.0;
    }
    // P(X <= k) for X ~ Bin(n, 1/2) is 2^-n · Σ C(n, i) for i in 0..=k; `term` is C(n, i)
    // and `sum` the partial sum, both times 2^-scale (exact: a power of two).
    let (mut term, mut sum, mut scale) = (1.0f64, 1.0f64, 0i64);
    for i in 1..=k {
        crate::work::count(1);
        term *= (n - i + 1) as f64 / i as f64;
        sum += term;
        if sum > large {
            term /= large;
            sum /= large;
            scale += STEP;
        }
    }
    // 2 · sum · 2^(scale - n), multiplied in exact powers of two (at most 2^-512 each).
    let mut p = 2.0 * sum;
    let mut exponent = scale - n as i64;
    while exponent < 0 && p > 0.0 {
        let step = exponent.max(-STEP);
        p *= 2f64.powi(step as i32);
        exponent -= step;
    }
    p.min(1.0)
}

/// The `p`-th percentile (0–100) of `sorted` by the nearest-rank method; 0 for none.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.max(1e-300)
    }

    #[test]
    fn mcnemar_matches_the_binomial_tail_by_hand() {
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        // 2 * (1/2)^5
        assert_eq!(mcnemar_exact(0, 5), 0.0625);
        assert!(close(mcnemar_exact(5, 0), 0.0625));
        // 2 * (1/2)^6: six regressions and no improvement is significant.
        assert_eq!(mcnemar_exact(6, 0), 0.03125);
        // 2 * (C(10,0) + C(10,1)) / 2^10
        assert!(close(mcnemar_exact(1, 9), 22.0 / 1024.0));
        // 2 * (1 + 12 + 66) / 4096
        assert!(close(mcnemar_exact(10, 2), 158.0 / 4096.0));
        // Balanced: the tail passes 1/2, capped at 1.
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(1, 0), 1.0);
    }

    /// An unsigned integer of any size, as little-endian 32-bit limbs: the exact sums the
    /// p-values are checked against.
    #[derive(Clone)]
    struct Big(Vec<u32>);

    impl Big {
        fn times(&mut self, factor: u32) {
            let mut carry = 0u64;
            for limb in &mut self.0 {
                let v = u64::from(*limb) * u64::from(factor) + carry;
                *limb = v as u32;
                carry = v >> 32;
            }
            if carry > 0 {
                self.0.push(carry as u32);
            }
        }

        /// Divides by `divisor`, which must divide it exactly.
        fn divide_exactly(&mut self, divisor: u32) {
            let mut rest = 0u64;
            for limb in self.0.iter_mut().rev() {
                let v = (rest << 32) | u64::from(*limb);
                *limb = (v / u64::from(divisor)) as u32;
                rest = v % u64::from(divisor);
            }
            assert_eq!(rest, 0);
            while self.0.last() == Some(&0) {
                self.0.pop();
            }
        }

        fn add(&mut self, other: &Big) {
            if self.0.len() < other.0.len() {
                self.0.resize(other.0.len(), 0);
            }
            let mut carry = 0u64;
            for (i, limb) in self.0.iter_mut().enumerate() {
                let v = u64::from(*limb) + u64::from(other.0.get(i).copied().unwrap_or(0)) + carry;
                *limb = v as u32;
                carry = v >> 32;
            }
            if carry > 0 {
                self.0.push(carry as u32);
            }
        }

        /// `self · 2^exponent` as a float: its top three limbs (at least 65 significant
        /// bits, more than a float's 53) rounded once, the rest dropped.
        fn times_two_to(&self, exponent: i64) -> f64 {
            let top = self.0.iter().rev().take(3).fold(0u128, |acc, &l| acc << 32 | u128::from(l));
            let mut value = top as f64;
            let mut e = 32 * self.0.len().saturating_sub(3) as i64 + exponent;
            while e != 0 {
                let step = e.clamp(-512, 512);
                value *= 2f64.powi(step as i32);
                e -= step;
            }
            value
        }
    }

    /// The two-sided p-value from exact integers: 2 · Σ C(n, i) for i in 0..=min(b, c),
    /// over 2^n, capped at 1.
    fn exact(b: u64, c: u64) -> f64 {
        let (n, k) = (b + c, b.min(c));
        let mut term = Big(vec![1]);
        let mut sum = Big(vec![1]);
        for i in 1..=k {
            term.times(u32::try_from(n - i + 1).unwrap());
            term.divide_exactly(u32::try_from(i).unwrap());
            sum.add(&term);
        }
        sum.times_two_to(1 - n as i64).min(1.0)
    }

    #[test]
    fn the_exact_sums_of_the_check_are_right() {
        // C(10, 0..=2) = 1 + 10 + 45 over 2^10, doubled; C(64, 32) alone is 1.83e18.
        assert_eq!(exact(2, 8), 2.0 * 56.0 / 1024.0);
        assert_eq!(exact(3, 3), 1.0);
        let mut c = Big(vec![1]);
        for i in 1..=32 {
            c.times(64 - i + 1);
            c.divide_exactly(i);
        }
        assert_eq!(c.times_two_to(0), 1_832_624_140_942_590_534_u64 as f64);
    }

    #[test]
    fn mcnemar_is_within_its_stated_error_of_the_exact_tail() {
        // Small counts, where 2^-n is a normal float, up to far past where it underflows
        // (2^-1075): 40,000 pairs split 20,500 / 19,500 (z ≈ 5, p ≈ 5.9e-7), an even split,
        // and 100,000 pairs split 49,000 / 51,000 (p ≈ 2.6e-10). The errors seen are a few
        // units in the last place (3e-15 at 100,000 pairs), far inside the bound.
        let cases =
            [(0, 5), (1, 9), (10, 2), (480, 520), (481, 521), (700, 1_300), (20_500, 19_500)];
        let large = [(20_000, 20_000), (49_000, 51_000)];
        for (b, c) in cases.into_iter().chain(large) {
            let (got, want) = (mcnemar_exact(b, c), exact(b, c));
            let bound = MAX_RELATIVE_ERROR_PER_PAIR * (b.min(c) + 1) as f64;
            assert!(
                (got - want).abs() <= bound * want,
                "({b}, {c}): {got:e}, exactly {want:e}: relative error {:e} over {bound:e}",
                (got - want).abs() / want
            );
        }
        // 5.875981550362565e-7, from Python's exact integers (`math.comb`, `Fraction`).
        assert!((5.8759e-7..5.8760e-7).contains(&mcnemar_exact(20_500, 19_500)));
        // Below what a float holds: 0.
        assert_eq!(mcnemar_exact(0, 100_000), 0.0);
    }

    #[test]
    fn mcnemar_is_linear_in_the_discordant_pairs() {
        // The work counted: the terms summed (one per pair of the smaller side).
        let (_, work) = crate::work::counted(|| mcnemar_exact(50_000, 50_000));
        assert_eq!(work.steps, 50_000);
        crate::work::assert_linear("McNemar pairs", 50_000, |n| {
            crate::work::work_of(|| mcnemar_exact(n as u64, n as u64))
        });
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 10.0);
        assert_eq!(percentile(&v, 95.0), 19.0);
        assert_eq!(percentile(&v, 100.0), 20.0);
        assert_eq!(percentile(&[7.0], 95.0), 7.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }
}
