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

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // a test is the application that names its collector
pub(super) mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::{Map, json};

    use super::*;
    use crate::redact::Redactor;
    use crate::telemetry::spans::Traces;

    /// A collector on 127.0.0.1: it reads every export request whole and answers each with
    /// `status`, or never (`None`: it holds the connection open). It counts the requests and
    /// the bytes of their bodies.
    pub(crate) struct Collector {
        pub url: String,
        requests: Arc<AtomicUsize>,
        bytes: Arc<AtomicUsize>,
    }

    impl Collector {
        pub(crate) fn start(status: Option<u16>) -> Collector {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
            let requests = Arc::new(AtomicUsize::new(0));
            let bytes = Arc::new(AtomicUsize::new(0));
            let (r, b) = (Arc::clone(&requests), Arc::clone(&bytes));
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let (r, b) = (Arc::clone(&r), Arc::clone(&b));
                    std::thread::spawn(move || {
                        let mut reader = BufReader::new(stream.try_clone().unwrap());
                        let mut stream = stream;
                        loop {
                            let mut length = 0usize;
                            loop {
                                let mut line = String::new();
                                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                                    return;
                                }
                                let lower = line.to_ascii_lowercase();
                                if let Some(v) = lower.strip_prefix("content-length:") {
                                    length = v.trim().parse().unwrap_or(0);
                                }
                                if line == "\r\n" {
                                    break;
                                }
                            }
                            let mut body = vec![0; length];
                            if reader.read_exact(&mut body).is_err() {
                                return;
                            }
                            r.fetch_add(1, Ordering::SeqCst);
                            b.fetch_add(length, Ordering::SeqCst);
                            let Some(status) = status else {
                                std::thread::sleep(Duration::from_secs(3600));
                                return;
                            };
                            let answer =
                                format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\n\r\n");
                            if stream.write_all(answer.as_bytes()).is_err() {
                                return;
                            }
                        }
                    });
                }
            });
            Collector { url, requests, bytes }
        }

        pub(crate) fn requests(&self) -> usize {
            self.requests.load(Ordering::SeqCst)
        }

        pub(crate) fn bytes(&self) -> usize {
            self.bytes.load(Ordering::SeqCst)
        }
    }

    /// `n` spans of exchange records, and the resource they go under.
    fn spans(n: usize) -> (Vec<SpanData>, Resource) {
        let mut traces = Traces::new(Arc::new(Redactor::new()));
        let spans = (0..n)
            .flat_map(|i| {
                let hash = format!("{i:064x}");
                let record = json!({"kind": "exchange", "hash": hash, "model": "m"});
                traces.spans(&record, &Map::new(), false)
            })
            .collect();
        (spans, traces.resource(None))
    }

    fn sink(collector: &Collector) -> Sink {
        let settings = crate::telemetry::Settings::new(crate::authority::Permit::application(
            collector.url.clone(),
        ));
        Sink::new(&settings, "the test collector", &spans(0).1).unwrap()
    }

    #[test]
    fn a_batch_the_collector_takes_is_one_request_and_counted() {
        let collector = Collector::start(Some(200));
        let sink = sink(&collector);
        assert_eq!(sink.send(spans(3).0), Ok(()));
        assert_eq!((sink.requests(), collector.requests()), (1, 1));
        assert!(collector.bytes() > 0);
    }

    #[test]
    fn a_refused_batch_says_who_refused_it_and_how() {
        let collector = Collector::start(Some(400));
        let sink = sink(&collector);
        let why = sink.send(spans(1).0).unwrap_err();
        assert_eq!(
            why,
            "the collector at the test collector refused the spans: HTTP 400 Bad Request"
        );
        assert_eq!(sink.requests(), 0, "nothing was accepted");
        let collector = Collector::start(Some(302));
        let why = sink_send_one(&collector);
        assert!(why.contains("HTTP 302") && why.contains("pactum follows none"), "{why}");
    }

    fn sink_send_one(collector: &Collector) -> String {
        sink(collector).send(spans(1).0).unwrap_err()
    }

    #[test]
    fn spans_past_the_queue_are_dropped_and_counted_never_waited_for() {
        let collector = Collector::start(Some(200));
        // One batch of everything: the thread waits for it to fill (or for the delay), so
        // all of one push lands in the queue or is dropped, under one lock.
        let queue = Queue::start(sink(&collector), MAX_QUEUED + 1).unwrap();
        queue.push(spans(MAX_QUEUED + 7).0);
        let counts = queue.finish(Duration::from_secs(60));
        assert_eq!(
            (counts.spans, counts.delivered, counts.dropped, counts.failed, counts.unsent),
            (MAX_QUEUED as u64 + 7, MAX_QUEUED as u64, 7, 0, 0),
            "{counts:?}"
        );
        assert_eq!(collector.requests(), 1);
        // Once closed, nothing more is taken: what comes is dropped and counted.
        queue.push(spans(2).0);
        assert_eq!(queue.finish(Duration::from_secs(1)).dropped, 9);
    }

    #[test]
    fn batches_hold_at_most_the_batch_size() {
        let collector = Collector::start(Some(200));
        let queue = Queue::start(sink(&collector), 10).unwrap();
        queue.push(spans(25).0);
        let counts = queue.finish(Duration::from_secs(60));
        assert_eq!((counts.spans, counts.delivered), (25, 25), "{counts:?}");
        assert_eq!((queue.requests(), collector.requests()), (3, 3), "10 + 10 + 5");
    }

    #[test]
    fn finish_waits_at_most_its_wait_and_counts_what_did_not_go_as_unsent() {
        // A collector that never answers: the batch on its way and what waits are unsent
        // once `finish` stops waiting, long before the batch's own 10 s are up.
        let collector = Collector::start(None);
        let queue = Queue::start(sink(&collector), 2).unwrap();
        queue.push(spans(5).0);
        // The counts decide, not a clock: a `finish` that waited for the request's own
        // timeout would count the batch on its way as failed, not unsent.
        let counts = queue.finish(Duration::from_millis(200));
        assert_eq!((counts.spans, counts.unsent, counts.delivered, counts.failed), (5, 5, 0, 0));
    }

    #[test]
    fn a_collector_failing_while_the_run_waits_fails_the_rest_without_sending_it() {
        let collector = Collector::start(Some(400));
        let queue = Queue::start(sink(&collector), 4).unwrap();
        queue.push(spans(12).0);
        let counts = queue.finish(Duration::from_secs(60));
        assert_eq!((counts.spans, counts.failed, counts.delivered), (12, 12, 0), "{counts:?}");
        let why = counts.first_failure.unwrap();
        assert!(why.contains("refused the spans: HTTP 400"), "{why}");
        // Every span counted once: made = delivered + failed + dropped + unsent.
        assert_eq!(counts.dropped + counts.unsent, 0);
    }
}
