//! The statistics of an evaluation: the exact McNemar test over paired cases, and
//! percentiles of latencies.
//!
//! Two versions answer the same cases, so their results are paired: what tells a real
//! regression from noise is only the discordant pairs — `b` cases that pass on the baseline
//! and fail on the candidate, `c` the other way round. Under "no difference" each
//! discordant pair goes either way with probability ½, so `min(b, c)` follows a binomial
//! distribution Bin(b + c, ½); the exact two-sided p-value is twice its lower tail (at most
//! 1). It is summed term by term (in log space past 1,000 discordant pairs, where 2^-n
//! leaves the floats), so it stays exact to floating point for any number of cases, in
//! time linear in `min(b, c)`.

/// The exact two-sided McNemar p-value for `b` and `c` discordant pairs (1 when there are
/// none).
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    let k = b.min(c);
    if n == 0 {
        return 1.0;
    }
    // P(X = i) for X ~ Bin(n, 1/2), from i = 0 up: 2^-n, then each term times
    // (n - i + 1) / i. While 2^-n is a normal float, directly (exact for the first terms);
    // beyond, in log space, summed with log-sum-exp.
    let tail = if n <= 1000 {
        let mut term = 0.5f64.powi(n as i32);
        let mut sum = term;
        for i in 1..=k {
            term *= (n - i + 1) as f64 / i as f64;
            sum += term;
        }
        sum
    } else {
        let mut log_term = -(n as f64) * std::f64::consts::LN_2;
        let mut log_terms = Vec::with_capacity(k as usize + 1);
        log_terms.push(log_term);
        for i in 1..=k {
            log_term += ((n - i + 1) as f64).ln() - (i as f64).ln();
            log_terms.push(log_term);
        }
        let max = log_terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (max + log_terms.iter().map(|t| (t - max).exp()).sum::<f64>().ln()).exp()
    };
    (2.0 * tail).min(1.0)
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

    #[test]
    fn mcnemar_stays_exact_for_large_counts() {
        // Far past where 2^-n underflows: 40,000 discordant pairs split 20,500 / 19,500
        // (z ≈ 5, p ≈ 5.7e-7), and an even split near 1.
        let p = mcnemar_exact(20_500, 19_500);
        assert!(p > 1e-7 && p < 1e-6, "{p}");
        let even = mcnemar_exact(20_000, 20_000);
        assert!(even > 0.99, "{even}");
        assert!(mcnemar_exact(0, 100_000) < 1e-300 || mcnemar_exact(0, 100_000) == 0.0);
        // Both ways of summing agree where they meet.
        let direct = mcnemar_exact(480, 520);
        let logged = mcnemar_exact(481, 521);
        assert!(
            direct > 0.2 && logged > 0.2 && (direct - logged).abs() < 0.01,
            "{direct} {logged}"
        );
    }

    #[test]
    fn mcnemar_is_linear_in_the_discordant_pairs() {
        let time = |n: u64| {
            let started = std::time::Instant::now();
            for _ in 0..8 {
                std::hint::black_box(mcnemar_exact(n, n));
            }
            started.elapsed()
        };
        let median = |n: u64| {
            let mut t: Vec<_> = (0..3).map(|_| time(n)).collect();
            t.sort();
            t[1]
        };
        crate::linear::assert_linear("McNemar pairs", || {
            (median(50_000).as_secs_f64(), median(200_000).as_secs_f64())
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
