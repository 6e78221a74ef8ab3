//! The Rust facade's cost per call, for BENCHMARKS.md's Python comparison
//! (`benches/python_call.py` runs it beside the Python package in one run):
//! `cargo run --release --example client_call -- ROOT PROVIDER N` opens the project at ROOT
//! with PROVIDER (as `pactum run --provider` names one; `openai` takes its server from
//! OPENAI_BASE_URL), makes N calls of PRC-CLASSIFY-001@^1 with no ledger, and prints the
//! mean microseconds per call (wall and CPU of the process) as one JSON line.

use std::time::Instant;

use serde_json::json;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// CPU seconds (user + system) this process has used.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes one rusage into the zeroed value it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [root, provider, n] = args.as_slice() else {
        return Err("usage: client_call ROOT PROVIDER N".into());
    };
    let n: u32 = n.parse()?;
    let client = pactum::Client::builder(root).provider(provider.as_str()).no_ledger().build()?;
    let input = json!({"user_input": "I was charged twice for my subscription this month."});
    for _ in 0..n.min(50) {
        client.call("PRC-CLASSIFY-001@^1", &input)?;
    }
    let (started, cpu) = (Instant::now(), cpu_seconds());
    for _ in 0..n {
        client.call("PRC-CLASSIFY-001@^1", &input)?;
    }
    let wall_us = started.elapsed().as_secs_f64() * 1e6 / f64::from(n);
    let cpu_us = (cpu_seconds() - cpu) * 1e6 / f64::from(n);
    println!("{}", json!({"calls": n, "wall_us": wall_us, "cpu_us": cpu_us}));
    Ok(())
}
