//! SIGTERM and SIGINT as a flag: `pactum worker` and `pactum results --follow` stop taking
//! work when it is set, finish what runs, and exit 0 (SPEC §22).

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Installs the handlers (once) and returns the flag they set.
pub fn stop_flag() -> &'static AtomicBool {
    install();
    &STOP
}

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    // An atomic store is async-signal-safe; nothing else happens in the handler.
    STOP.store(true, Ordering::SeqCst);
}

#[cfg(unix)]
fn install() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: `action` is fully initialised (zeroed, then the handler and an empty mask
        // set) before `sigaction` reads it; the handler only stores to an atomic, which is
        // async-signal-safe. Without SA_RESTART a blocking read in progress returns EINTR,
        // which the queue's reads retry, so nothing else observes the signal.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            for signal in [libc::SIGTERM, libc::SIGINT] {
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    });
}

#[cfg(not(unix))]
fn install() {}
