//! The HTTP client the OTLP exporter sends with: pactum's ureq agent (no second HTTP stack,
//! no async runtime: the batch processor's own thread blocks on it), which also counts what
//! was delivered so a run can say when its collector did not take its spans.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

/// How long one export request may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The most of a collector's answer that is read (it is only ever a short status).
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// What the collector took and refused.
#[derive(Debug, Default)]
pub struct Delivery {
    /// Export requests the collector accepted (2xx).
    pub accepted: AtomicU64,
    /// Export requests that failed: no connection, a timeout, a status not 2xx.
    pub failed: AtomicU64,
    /// The first failure, as a message shows it (the URL without credentials or query).
    pub first_failure: Mutex<Option<String>>,
}

impl Delivery {
    fn fail(&self, message: String) {
        self.failed.fetch_add(1, Ordering::AcqRel);
        let mut first = self.first_failure.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(message);
    }
}

/// Sends export requests with ureq.
#[derive(Debug)]
pub struct Client {
    agent: ureq::Agent,
    /// The collector as messages show it.
    shown: String,
    pub delivery: std::sync::Arc<Delivery>,
}

impl Client {
    pub fn new(shown: String) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(TIMEOUT))
            .max_redirects(0)
            .user_agent(concat!("pactum/", env!("CARGO_PKG_VERSION")))
            .build();
        Client { agent: ureq::Agent::new_with_config(config), shown, delivery: Default::default() }
    }

    fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, String> {
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, body.to_vec());
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
        if !parts.status.is_success() {
            return Err(format!(
                "the collector at {} refused the spans: HTTP {}",
                self.shown, parts.status
            ));
        }
        Ok(Response::from_parts(parts, Bytes::from(bytes)))
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        // Runs on the batch processor's thread (or `export`'s), which waits for it anyway.
        match self.send(request) {
            Ok(response) => {
                self.delivery.accepted.fetch_add(1, Ordering::AcqRel);
                Ok(response)
            }
            Err(message) => {
                self.delivery.fail(message.clone());
                Err(message.into())
            }
        }
    }
}
