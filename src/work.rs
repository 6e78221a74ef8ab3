//! Counting work, for the tests of a cost claim (a cost linear in the input, a cost that
//! does not grow with it). Nothing here exists outside the crate's own unit tests.
//!
//! A cost test never times its work: on a loaded machine one run is slowed and the other
//! is not, so a timing can fail a linear cost and pass a quadratic one. A cost test counts
//! instead, and the counts are the same on every run and every machine:
//!
//! - **steps**: the code under test calls [`count`] with the units its cost claim is about
//!   (bytes scanned, items or nodes visited, terms summed, comparisons made), in the loop
//!   that does the work; outside `cfg(test)` the call compiles to nothing;
//! - **allocations** and **allocated bytes**: the unit tests' global allocator
//!   ([`Counting`], the system allocator underneath) counts what the measured thread
//!   allocates, the dependencies' code included.
//!
//! Only the thread inside [`counted`] is counted, so tests running beside it add nothing.
//! [`assert_linear`] compares the work for N and for 4N: a linear cost does about 4 times
//! the work, a quadratic one about 16, and every count has to stay within 6 times.

#[cfg(test)]
use std::alloc::{GlobalAlloc, Layout, System};
#[cfg(test)]
use std::cell::Cell;

#[cfg(test)]
thread_local! {
    /// Whether this thread is inside [`counted`].
    static ON: Cell<bool> = const { Cell::new(false) };
    static STEPS: Cell<u64> = const { Cell::new(0) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static ALLOCATED: Cell<u64> = const { Cell::new(0) };
    /// Bytes this thread allocated inside [`counted`] and has not freed yet (less what it
    /// freed of earlier allocations), and the most of them at once.
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

/// Counts `units` of work done by this thread (unit tests only: elsewhere nothing).
#[inline(always)]
pub(crate) fn count(units: usize) {
    #[cfg(test)]
    if ON.with(Cell::get) {
        STEPS.with(|s| s.set(s.get().saturating_add(units as u64)));
    }
    #[cfg(not(test))]
    let _ = units;
}

/// The work one run of a measured closure did.
#[cfg(test)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Work {
    /// Units counted with [`count`].
    pub steps: u64,
    /// Allocations and reallocations.
    pub allocations: u64,
    /// Bytes allocated (a reallocation counts its new size).
    pub bytes: u64,
    /// The most bytes allocated inside the measured closure that were live at once: what a
    /// streaming pass holds, whatever it allocated and freed along the way.
    pub peak: u64,
}

#[cfg(test)]
impl Work {
    fn parts(self) -> [(&'static str, u64); 3] {
        [("steps", self.steps), ("allocations", self.allocations), ("allocated bytes", self.bytes)]
    }
}

/// Runs `f` on this thread and returns what it returned with the work it did. Not nested.
#[cfg(test)]
pub(crate) fn counted<R>(f: impl FnOnce() -> R) -> (R, Work) {
    assert!(!ON.with(Cell::get), "counted() is not nested");
    STEPS.with(|c| c.set(0));
    ALLOCATIONS.with(|c| c.set(0));
    ALLOCATED.with(|c| c.set(0));
    LIVE.with(|c| c.set(0));
    PEAK.with(|c| c.set(0));
    ON.with(|on| on.set(true));
    let result = f();
    ON.with(|on| on.set(false));
    let work = Work {
        steps: STEPS.with(Cell::get),
        allocations: ALLOCATIONS.with(Cell::get),
        bytes: ALLOCATED.with(Cell::get),
        peak: PEAK.with(Cell::get).max(0) as u64,
    };
    (result, work)
}

/// The work `f` does, what it returns dropped outside the count.
#[cfg(test)]
pub(crate) fn work_of<R>(f: impl FnOnce() -> R) -> Work {
    counted(f).1
}

/// How much more work 4N may take than N: linear is 4 (less with a fixed part), N log N
/// about 5 at the sizes the tests use, quadratic 16.
#[cfg(test)]
const MAX_RATIO: u64 = 6;

/// Asserts that the work `work(size)` reports grows linearly: every count of `work(4n)`
/// within [`MAX_RATIO`] times the same count of `work(n)` (plus 16, for a fixed part that
/// happens once at the larger size, such as one more doubling of a table), and `work(n)`
/// counting something. `work(n)` runs once before, so that what a first call initialises
/// (a compiled pattern, a table) is not counted.
#[cfg(test)]
#[track_caller]
pub(crate) fn assert_linear(what: &str, n: usize, mut work: impl FnMut(usize) -> Work) {
    work(n);
    check_linear(what, n, work(n), work(4 * n));
}

/// [`assert_linear`]'s check, on the work already counted for N (`small`) and for 4N
/// (`large`), for a test that measures N and 4N once for several claims.
#[cfg(test)]
#[track_caller]
pub(crate) fn check_linear(what: &str, n: usize, small: Work, large: Work) {
    assert!(small != Work::default(), "{what}: nothing was counted for N = {n}");
    for ((name, at_n), (_, at_four_n)) in small.parts().into_iter().zip(large.parts()) {
        assert!(
            at_four_n <= MAX_RATIO * at_n + 16,
            "{what}: 4× the input ({}) did {at_four_n} {name}, more than {MAX_RATIO}× the {at_n} of N = {n} (N: {small:?}; 4N: {large:?})",
            4 * n
        );
    }
}

/// Asserts that what `work(size)` holds at once does not grow with the input: the peak of
/// live bytes for 4N within `slack` bytes of the peak for N (a buffer that happens to grow
/// once more, a group's table), and the peak for N counting something.
#[cfg(test)]
#[track_caller]
pub(crate) fn assert_bounded(
    what: &str,
    n: usize,
    slack: u64,
    mut work: impl FnMut(usize) -> Work,
) {
    work(n);
    check_bounded(what, n, slack, work(n), work(4 * n));
}

/// [`assert_bounded`]'s check, on the work already counted for N and for 4N.
#[cfg(test)]
#[track_caller]
pub(crate) fn check_bounded(what: &str, n: usize, slack: u64, small: Work, large: Work) {
    assert!(small.peak > 0, "{what}: nothing was live for N = {n}");
    assert!(
        large.peak <= small.peak + slack,
        "{what}: 4× the input ({}) held {} bytes at once, more than the {} of N = {n} and {slack} more (N: {small:?}; 4N: {large:?})",
        4 * n,
        large.peak,
        small.peak
    );
}

/// Runs `f` on a thread of its own and asserts that it returns within `within`: for the
/// few costs no count can see (a regex engine's steps), where the cost that is refused is
/// exponential and `within` is hundreds of times what the accepted cost takes on a loaded
/// machine. A thread still running at the deadline is left behind (the test has failed).
#[cfg(test)]
#[track_caller]
pub(crate) fn assert_finishes<R: Send + 'static>(
    what: &str,
    within: std::time::Duration,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || send.send(f()));
    match receive.recv_timeout(within) {
        Ok(result) => result,
        Err(e) => panic!("{what}: not finished within {within:?} ({e})"),
    }
}

/// The unit tests' global allocator: the system's, counting what a thread inside
/// [`counted`] allocates.
#[cfg(test)]
pub(crate) struct Counting;

#[cfg(test)]
impl Counting {
    #[inline]
    fn note(size: usize, freed: usize) {
        // `try_with`: a thread being torn down has no counters left, and is not measured.
        if ON.try_with(Cell::get).unwrap_or(false) {
            let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
            let _ = ALLOCATED.try_with(|c| c.set(c.get().saturating_add(size as u64)));
            Self::live(size as i64 - freed as i64);
        }
    }

    #[inline]
    fn live(change: i64) {
        let _ = LIVE.try_with(|live| {
            live.set(live.get().saturating_add(change));
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
        });
    }
}

// SAFETY: every call is passed on unchanged to the system allocator; the counters are
// thread-local cells with constant initialisers, which neither allocate nor lock.
#[cfg(test)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::note(layout.size(), 0);
        // SAFETY: the caller's obligations are passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::note(layout.size(), 0);
        // SAFETY: the caller's obligations are passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ON.try_with(Cell::get).unwrap_or(false) {
            Self::live(-(layout.size() as i64));
        }
        // SAFETY: the caller's obligations are passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::note(new_size, layout.size());
        // SAFETY: the caller's obligations are passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_allocations_of_this_thread_only_are_counted() {
        let work = work_of(|| {
            count(3);
            count(4);
            let v: Vec<u8> = Vec::with_capacity(100);
            // Another thread's work is not this one's.
            std::thread::scope(|s| {
                s.spawn(|| {
                    count(1000);
                    drop(vec![0u8; 1000]);
                });
            });
            v
        });
        assert_eq!(work.steps, 7);
        assert!(work.allocations >= 1 && work.bytes >= 100, "{work:?}");
        assert!(work.bytes < 1000, "the other thread's 1000 bytes are not counted: {work:?}");
        // Outside `counted`, nothing is counted.
        count(5);
        assert_eq!(work_of(|| ()), Work::default());
    }

    #[test]
    fn the_peak_is_what_was_live_at_once_and_a_growing_hold_fails_the_bound() {
        // A streaming pass: one buffer at a time.
        let stream = |n: usize| {
            work_of(|| {
                for _ in 0..n {
                    drop(std::hint::black_box(vec![0u8; 1000]));
                }
            })
        };
        let w = stream(100);
        assert!(w.peak >= 1000 && w.peak < 2000, "{w:?}");
        assert!(w.bytes >= 100_000, "{w:?}");
        assert_bounded("streaming", 100, 1024, stream);
        // Keeping everything it read is not bounded.
        let keep = |n: usize| work_of(|| (0..n).map(|_| vec![0u8; 1000]).collect::<Vec<_>>());
        let message = panic_of(|| assert_bounded("keeping", 100, 1024, keep));
        assert!(message.contains("keeping: 4× the input (400) held"), "{message}");
    }

    /// The message `f` panics with.
    fn panic_of(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        *std::panic::catch_unwind(f).unwrap_err().downcast::<String>().unwrap()
    }

    #[test]
    fn a_quadratic_cost_fails_and_a_linear_one_passes() {
        assert_linear("linear", 1_000, |n| work_of(|| count(3 * n + 50)));
        assert_linear("n log n", 1_000, |n| work_of(|| count(n * n.ilog2() as usize)));
        let message = panic_of(|| {
            assert_linear("quadratic", 1_000, |n| work_of(|| count(n * n / 100 + n)));
        });
        assert!(
            message.starts_with("quadratic: 4× the input (4000) did 164000 steps"),
            "{message}"
        );
        // Quadratic in the bytes allocated only, too.
        let message = panic_of(|| {
            assert_linear("copies", 200, |n| {
                work_of(|| {
                    count(n);
                    for i in 0..n {
                        std::hint::black_box(vec![0u8; i + 1]);
                    }
                })
            });
        });
        assert!(message.contains("allocated bytes, more than 6×"), "{message}");
        // A measure that counts nothing is no measure.
        let message = panic_of(|| assert_linear("empty", 10, |_| Work::default()));
        assert_eq!(message, "empty: nothing was counted for N = 10");
    }

    #[test]
    fn a_closure_past_its_deadline_fails_the_test() {
        let quick = assert_finishes("quick", std::time::Duration::from_secs(60), || 7);
        assert_eq!(quick, 7);
        let message = panic_of(|| {
            assert_finishes("slow", std::time::Duration::from_millis(1), || {
                std::thread::sleep(std::time::Duration::from_secs(5));
            });
        });
        assert!(message.starts_with("slow: not finished within 1ms"), "{message}");
    }
}
