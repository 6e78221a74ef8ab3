//! Test support: the one check that a cost grows linearly with its input.
//!
//! A cost test times its work for N and for 4N and asks for a ratio well below 16 (what a
//! quadratic cost gives; a linear one gives about 4). On a loaded machine one measurement
//! can be slowed by other processes or by tests running beside it, so a ratio over the
//! bound is measured again: a linear cost passes on a fresh measurement, a quadratic one
//! fails every time.

/// How many times a ratio over the bound is measured before the test fails.
const ATTEMPTS: usize = 4;

/// Asserts that `measure` (which returns the seconds the work took for N and for 4N) grows
/// linearly: 4N within 8 times N, on one of [`ATTEMPTS`] measurements.
pub fn assert_linear(what: &str, mut measure: impl FnMut() -> (f64, f64)) {
    let mut seen = Vec::with_capacity(ATTEMPTS);
    for _ in 0..ATTEMPTS {
        let (n, four_n) = measure();
        let ratio = four_n / n.max(1e-6);
        if ratio < 8.0 {
            return;
        }
        seen.push(format!("{n:.4}s → {four_n:.4}s ({ratio:.1}×)"));
    }
    panic!("{what}: 4× the input took more than 8× the time on every attempt: {}", seen.join(", "));
}
