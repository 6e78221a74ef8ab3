//! The replay driver of the fuzz targets, for builds without libFuzzer.
//!
//! With the `libfuzzer` feature (the default, what `cargo fuzz` builds) libFuzzer's runtime
//! supplies `main` and drives each target. Without it, each target's `main` is [`replay`]:
//! the target runs once on every file named on the command line, through the same entry
//! points libFuzzer calls (`LLVMFuzzerInitialize`, then `LLVMFuzzerTestOneInput`), so a
//! panic aborts exactly as it would under the fuzzer. CI builds the targets this way (it
//! compiles and links every target without compiling libFuzzer's C++) and replays the
//! shipped documents through them; a saved crash reproduces with
//! `cargo run -p pactum-fuzz --no-default-features --bin TARGET -- crash-file`.

use std::process::ExitCode;

unsafe extern "C" {
    // Defined by `libfuzzer_sys::fuzz_target!` in the target's own crate (the C ABI
    // libFuzzer and every compatible driver call).
    fn LLVMFuzzerInitialize(argc: *const isize, argv: *const *const *const u8) -> isize;
    fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32;
}

/// Runs the target on each file named on the command line; exit 2 when a file cannot be
/// read or none is named.
#[allow(clippy::disallowed_methods)] // reads the inputs it is asked to replay
pub fn replay() -> ExitCode {
    let paths: Vec<_> = std::env::args_os().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: TARGET FILE... (runs the fuzz target once on each file)");
        return ExitCode::from(2);
    }
    // SAFETY: libFuzzer passes argc/argv here; the target's initializer ignores them.
    unsafe { LLVMFuzzerInitialize(std::ptr::null(), std::ptr::null()) };
    for path in &paths {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => {
                eprintln!("{}: {e}", path.to_string_lossy());
                return ExitCode::from(2);
            }
        };
        // SAFETY: a live buffer's pointer and length; the target only reads it.
        unsafe { LLVMFuzzerTestOneInput(bytes.as_ptr(), bytes.len()) };
    }
    println!("replayed {} input(s)", paths.len());
    ExitCode::SUCCESS
}
