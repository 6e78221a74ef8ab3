//! Sending spans, and counting what arrived: [`Sink`] sends one batch (the OTLP exporter,
//! its retries within [`client::TIMEOUT`]); a run hands spans to a [`Queue`], whose thread
//! sends them in batches off the run's path; `ledger export` sends its batches itself, one
//! after the other, and stops at the first that fails.
//!
//! The queue holds at most [`MAX_QUEUED`] spans: past that a span is dropped, never waited
//! for (a slow collector never slows a run). Every span is counted once — delivered, failed,
//! dropped or still unsent when [`Queue::finish`] stopped waiting — so a run says exactly how
//! many of its spans did not arrive and why. `finish` waits at most [`client::TIMEOUT`] in
//! all, whatever the collector does: that is the longest a collector can hold a run's exit.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use super::client::{self, Client, Seen};
use crate::error::{Error, Result};

/// Spans queued for the sending thread at most.
pub const MAX_QUEUED: usize = 2048;

/// How long spans wait for a batch to fill before they are sent anyway.
const DELAY: Duration = Duration::from_millis(500);

/// What happened to the spans made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Spans made.
    pub spans: u64,
    /// Spans the collector accepted.
    pub delivered: u64,
    /// Spans of batches the collector did not take.
    pub failed: u64,
    /// Spans dropped because the queue was full.
    pub dropped: u64,
    /// Spans still queued or on their way when the run stopped waiting for them.
    pub unsent: u64,
    /// Why the first failed batch failed.
    pub first_failure: Option<String>,
}

/// The OTLP exporter, sending batches through [`Client`].
#[derive(Debug)]
pub struct Sink {
    exporter: opentelemetry_otlp::SpanExporter,
    seen: Arc<Seen>,
}

impl Sink {
    /// An exporter to `settings.endpoint` (`shown` as messages name it) with its headers,
    /// its spans under `resource`.
    pub fn new(settings: &super::Settings, shown: &str, resource: &Resource) -> Result<Sink> {
        let endpoint = settings.endpoint.get().as_str();
        let client = Client::new(&settings.endpoint, shown.to_string(), settings.headers.clone())
            .map_err(|why| Error::Usage {
            message: format!("cannot export spans to {shown}: {why}"),
        })?;
        let seen = client.seen.clone();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(client::TIMEOUT)
            .build()
            .map_err(|e| Error::Usage {
                message: format!("cannot export spans to {shown}: {e}"),
            })?;
        exporter.set_resource(resource);
        Ok(Sink { exporter, seen })
    }

    /// The resource of the spans sent from now on.
    pub fn set_resource(&mut self, resource: &Resource) {
        self.exporter.set_resource(resource);
    }

    /// Export requests the collector accepted.
    pub fn requests(&self) -> u64 {
        self.seen.accepted.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Sends one batch, retries included, within [`client::TIMEOUT`]; `Err` says why the
    /// collector did not take it.
    pub fn send(&self, batch: Vec<SpanData>) -> std::result::Result<(), String> {
        self.seen.start_batch();
        block_on(self.exporter.export(batch))
            .map_err(|e| self.seen.last_failure().unwrap_or_else(|| e.to_string()))
    }
}

/// Runs `future` to its end on this thread (the exporter's future only waits on the
/// blocking client, so it is ready at its first poll; a pending one parks the thread until
/// it is woken).
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// Spans waiting for the sending thread.
#[derive(Debug)]
pub struct Queue {
    shared: Arc<Shared>,
    batch: usize,
    seen: Arc<Seen>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    waiting: VecDeque<SpanData>,
    /// Spans of the batch being sent.
    sending: usize,
    /// No more spans are taken; the thread sends what waits, then stops.
    closing: bool,
    stopped: bool,
    counts: Counts,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Queue {
    /// A queue whose thread sends batches of at most `batch` spans through `sink`.
    pub fn start(sink: Sink, batch: usize) -> Result<Queue> {
        let shared = Arc::new(Shared { state: Mutex::default(), changed: Condvar::new() });
        let sending = Arc::clone(&shared);
        let seen = Arc::clone(&sink.seen);
        std::thread::Builder::new()
            .name("pactum-otlp".into())
            .spawn(move || send_batches(&sending, &sink, batch))
            .map_err(|e| Error::Internal {
                message: format!("cannot start the span exporter: {e}"),
            })?;
        Ok(Queue { shared, batch, seen })
    }

    /// Export requests the collector accepted.
    pub fn requests(&self) -> u64 {
        self.seen.accepted.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Queues `spans`; those that do not fit are dropped (and counted).
    pub fn push(&self, spans: Vec<SpanData>) {
        let mut state = self.shared.lock();
        for span in spans {
            state.counts.spans += 1;
            if state.closing || state.waiting.len() >= MAX_QUEUED {
                state.counts.dropped += 1;
            } else {
                state.waiting.push_back(span);
            }
        }
        if state.waiting.len() >= self.batch {
            self.shared.changed.notify_all();
        }
    }

    /// Sends what waits and stops, waiting at most `wait`; what happened to every span.
    pub fn finish(&self, wait: Duration) -> Counts {
        let deadline = Instant::now() + wait;
        let mut state = self.shared.lock();
        state.closing = true;
        self.shared.changed.notify_all();
        while !state.stopped {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                // Out of time: what waits is not sent (the thread stops after the batch
                // on its way, which may yet arrive: it is counted as not known to).
                state.counts.unsent += (state.waiting.len() + state.sending) as u64;
                state.waiting.clear();
                state.sending = 0;
                state.stopped = true;
                break;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .map_or_else(|p| p.into_inner().0, |(s, _)| s);
        }
        state.counts.clone()
    }
}

impl Drop for Queue {
    /// A queue dropped unfinished lets its thread send what waits and stop, unwaited for.
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.changed.notify_all();
    }
}

/// The sending thread: a batch once `batch` spans wait, or [`DELAY`] after the last one was
/// sent, or at once when closing; until closed and empty.
fn send_batches(shared: &Shared, sink: &Sink, batch: usize) {
    let mut last = Instant::now();
    loop {
        let spans: Vec<SpanData> = {
            let mut state = shared.lock();
            loop {
                if state.stopped {
                    return;
                }
                let due = state.closing || last.elapsed() >= DELAY;
                if state.waiting.len() >= batch || (due && !state.waiting.is_empty()) {
                    break;
                }
                if state.closing {
                    state.stopped = true;
                    shared.changed.notify_all();
                    return;
                }
                if last.elapsed() >= DELAY {
                    last = Instant::now();
                }
                let left = DELAY.saturating_sub(last.elapsed()).max(Duration::from_millis(1));
                state = shared
                    .changed
                    .wait_timeout(state, left)
                    .map_or_else(|p| p.into_inner().0, |(s, _)| s);
            }
            let n = batch.min(state.waiting.len());
            state.sending = n;
            state.waiting.drain(..n).collect()
        };
        let n = spans.len() as u64;
        last = Instant::now();
        let sent = sink.send(spans);
        let mut state = shared.lock();
        if state.stopped {
            // `finish` gave up on this batch and counted it.
            return;
        }
        state.sending = 0;
        match sent {
            Ok(()) => state.counts.delivered += n,
            Err(why) => {
                state.counts.failed += n;
                state.counts.first_failure.get_or_insert(why);
                if state.closing {
                    // The collector failed while the run waits for it: the rest would fail
                    // as slowly, so they are not sent.
                    let rest = state.waiting.len() as u64;
                    state.counts.failed += rest;
                    state.waiting.clear();
                }
            }
        }
        shared.changed.notify_all();
    }
}
