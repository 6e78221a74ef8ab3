//! The HTTP client the OTLP exporter sends with: pactum's ureq agent (no second HTTP stack,
//! no async runtime: the sending thread blocks on it). It follows no redirect, reads at most
//! [`MAX_ANSWER_BYTES`] of an answer, and gives each batch [`TIMEOUT`] in all, however
//! many times the exporter retries it; it keeps the last failure so a run can say why its
//! collector did not take its spans.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

/// How long one batch may take to send, its retries and connections included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The most of a collector's answer that is read (it is only ever a short status).
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// What the client saw, shared with whoever sends batches through it.
#[derive(Debug)]
pub struct Seen {
    /// Export requests the collector accepted (2xx).
    pub accepted: AtomicU64,
    /// When the batch being sent runs out of time.
    deadline: Mutex<Instant>,
    /// Why the last request failed, as a message shows it (the URL without credentials or
    /// query).
    last_failure: Mutex<Option<String>>,
}

impl Seen {
    /// A new batch: [`TIMEOUT`] from now, no failure yet.
    pub fn start_batch(&self) {
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now() + TIMEOUT;
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Why the batch's last request failed.
    pub fn last_failure(&self) -> Option<String> {
        self.last_failure.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn failed(&self, message: String) {
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(message);
    }

    fn time_left(&self) -> Duration {
        let deadline = *self.deadline.lock().unwrap_or_else(|p| p.into_inner());
        deadline.saturating_duration_since(Instant::now())
    }
}

/// Sends export requests with ureq.
#[derive(Debug)]
pub struct Client {
    agent: ureq::Agent,
    /// The collector as messages show it.
    shown: String,
    pub seen: Arc<Seen>,
}

impl Client {
    pub fn new(shown: String) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(TIMEOUT))
            .max_redirects(0)
            .user_agent(concat!("pactum/", env!("CARGO_PKG_VERSION")))
            .build();
        let seen = Seen {
            accepted: AtomicU64::new(0),
            deadline: Mutex::new(Instant::now() + TIMEOUT),
            last_failure: Mutex::new(None),
        };
        Client { agent: ureq::Agent::new_with_config(config), shown, seen: Arc::new(seen) }
    }

    /// The collector's answer whatever its status (the exporter decides what to retry: a
    /// 503 or 429 is, a 400 is not); `Err` when there is none within the batch's time.
    fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, String> {
        let left = self.seen.time_left();
        if left.is_zero() {
            return Err(format!(
                "the collector at {} did not take the spans within {} s",
                self.shown,
                TIMEOUT.as_secs()
            ));
        }
        let (parts, body) = request.into_parts();
        let request = self
            .agent
            .configure_request(Request::from_parts(parts, body.to_vec()))
            .timeout_global(Some(left))
            .build();
        let response = self
            .agent
            .run(request)
            .map_err(|e| format!("the collector at {} did not answer: {e}", self.shown))?;
        let (parts, mut body) = response.into_parts();
        let bytes = body
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_vec()
            .map_err(|e| format!("the collector at {} answered unreadably: {e}", self.shown))?;
        if parts.status.is_success() {
            self.seen.accepted.fetch_add(1, Ordering::AcqRel);
        } else {
            let redirect = if parts.status.is_redirection() {
                " (a redirect: pactum follows none; give the collector's final URL)"
            } else {
                ""
            };
            self.seen.failed(format!(
                "the collector at {} refused the spans: HTTP {}{redirect}",
                self.shown, parts.status
            ));
        }
        Ok(Response::from_parts(parts, Bytes::from(bytes)))
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        // Runs on the thread sending the batch, which waits for it anyway.
        self.send(request).map_err(|message| {
            self.seen.failed(message.clone());
            message.into()
        })
    }
}
