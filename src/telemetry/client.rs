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

/// Sends export requests with ureq, to the one origin of its endpoint.
#[derive(Debug)]
pub struct Client {
    agent: crate::authority::Outbound,
    /// The only headers a request carries beside its content type: the OTLP exporter adds
    /// whatever `OTEL_EXPORTER_OTLP_HEADERS` holds to every request by itself, and they go
    /// only where [`super::Settings::choose`] let them.
    headers: super::Headers,
    /// The collector as messages show it.
    shown: String,
    pub seen: Arc<Seen>,
}

impl Client {
    pub fn new(
        endpoint: &crate::authority::Permit<String>,
        shown: String,
        headers: super::Headers,
    ) -> Result<Client, String> {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(TIMEOUT))
            .proxy(None)
            .user_agent(concat!("pactum/", env!("CARGO_PKG_VERSION")));
        let seen = Seen {
            accepted: AtomicU64::new(0),
            deadline: Mutex::new(Instant::now() + TIMEOUT),
            last_failure: Mutex::new(None),
        };
        let agent = crate::authority::Outbound::new(endpoint, config)?;
        Ok(Client { agent, headers, shown, seen: Arc::new(seen) })
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
        let (mut parts, body) = request.into_parts();
        // What the exporter put there from the environment is dropped: the content type
        // and encoding stay, the headers the settings allow are added.
        let kept: Vec<_> = ["content-type", "content-encoding"]
            .into_iter()
            .filter_map(|name| Some((name, parts.headers.get(name)?.clone())))
            .collect();
        parts.headers.clear();
        for (name, value) in kept {
            parts.headers.insert(name, value);
        }
        for (name, value) in self.headers.pairs() {
            let name = http::HeaderName::from_bytes(name.as_bytes());
            let value = http::HeaderValue::from_str(value);
            if let (Ok(name), Ok(mut value)) = (name, value) {
                value.set_sensitive(true);
                parts.headers.append(name, value);
            }
        }
        let response = self
            .agent
            .run(Request::from_parts(parts, body.to_vec()), left)
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
            let content_type = parts.headers.get("content-type").and_then(|v| v.to_str().ok());
            let said =
                self.said(content_type, &bytes).map_or_else(String::new, |s| format!(": {s}"));
            self.seen.failed(format!(
                "the collector at {} refused the spans: HTTP {}{redirect}{said}",
                self.shown, parts.status
            ));
        }
        Ok(Response::from_parts(parts, Bytes::from(bytes)))
    }
}

impl Client {
    /// What a collector said when it refused: the `message` of an OTLP error body (a
    /// protobuf `google.rpc.Status`), of a JSON body (`message`, `detail`, `error`), else its
    /// text; one short line, the request's header values masked. `None` for an empty body.
    fn said(&self, content_type: Option<&str>, body: &[u8]) -> Option<String> {
        let text = if content_type.is_some_and(|t| t.contains("protobuf")) {
            status_message(body)?
        } else {
            String::from_utf8_lossy(body).into_owned()
        };
        // Masked whole before it is cut to a line (a token across the cut is still found);
        // an answer that still holds a header's value with its white space taken out (a
        // token split across lines) is left out altogether.
        let mut text = text;
        for (_, value) in self.headers.pairs() {
            text = crate::redact::mask_secret(&text, value);
        }
        let squeeze = |t: &str| -> String { t.chars().filter(|c| !c.is_whitespace()).collect() };
        let squeezed = squeeze(&text);
        let quoted = self.headers.pairs().iter().any(|(_, value)| {
            // The value, and its token without a scheme (`Bearer TOKEN`).
            let token = value.rsplit([' ', '=']).next().unwrap_or(value);
            [squeeze(value), squeeze(token)]
                .iter()
                .any(|v| v.len() >= 8 && squeezed.contains(v.as_str()))
        });
        if quoted {
            return Some("(its answer is left out: it quotes a header of the request)".into());
        }
        let line = crate::gateway::http::excerpt(&text, None);
        let line = crate::terminal::escape_line(&line).into_owned();
        (!line.is_empty()).then_some(line)
    }
}

/// The `message` (field 2) of a protobuf `google.rpc.Status`.
fn status_message(mut body: &[u8]) -> Option<String> {
    fn varint(bytes: &mut &[u8]) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = bytes.split_first()?;
            *bytes = rest;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    while !body.is_empty() {
        let key = varint(&mut body)?;
        match key & 7 {
            0 => {
                varint(&mut body)?;
            }
            2 => {
                let len = usize::try_from(varint(&mut body)?).ok()?;
                let (field, rest) = body.split_at_checked(len)?;
                body = rest;
                if key >> 3 == 2 {
                    return Some(String::from_utf8_lossy(field).into_owned());
                }
            }
            // Fixed-width fields do not occur in a Status; anything else is no Status.
            _ => return None,
        }
    }
    None
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
