//! The HTTP transport the real providers share: one JSON `POST` with retries (SPEC §8.5).
//!
//! [`HttpClient::post_json`] sends a JSON body and returns the parsed JSON answer with the
//! number of attempts made and the total latency ([`HttpReply`]). Around that one call it:
//!
//! - retries connection failures, timeouts, `429 Too Many Requests` and `5xx` answers, at most
//!   [`RetryPolicy::max_attempts`] attempts in all, waiting between attempts with exponential
//!   backoff and full jitter (a random wait between zero and `base_delay * 2^(retry - 1)`,
//!   capped at `max_delay`);
//! - honours a `Retry-After` header (delta-seconds or an IMF-fixdate HTTP-date, and OpenAI's
//!   `retry-after-ms`) instead of the backoff, capped at [`RetryPolicy::max_retry_after`];
//! - never retries any other `4xx`, and never follows redirects (a `3xx` is reported, so a
//!   misconfigured base URL cannot forward an API key header to another host);
//! - turns every failure into [`Error::Provider`] with a [`ProviderFailure`] and a message that
//!   says what happened, the status, the attempts made and how to fix it, with a short excerpt
//!   of the server's error body.
//!
//! | what happened | failure |
//! | --- | --- |
//! | other `4xx`, a `3xx`, or `5xx` on the last attempt | `Status` (`provider_error`) |
//! | `429` on the last attempt | `RateLimited` |
//! | no complete answer in time | `Timeout` |
//! | refused, DNS failure, connect timeout, connection dropped, TLS failure | `Unreachable` |
//! | a `2xx` whose body is not JSON, or an answer that is not HTTP | `InvalidResponse` |
//! | a URL that is not `http(s)`, a header value that cannot be sent | `NotConfigured` |
//!
//! **Secrets:** the API key travels only in the headers given to `post_json`, which are never
//! formatted. Every message is passed through [`Secret::scrub`] before it leaves this module,
//! and a server's body is scrubbed before it is cut to an excerpt, so a truncated copy of the
//! key cannot survive either.
//!
//! No proxy is used: the agent is built with `proxy(None)`, overriding ureq's default of
//! taking one from `HTTPS_PROXY`/`ALL_PROXY`, so what the client does depends only on the
//! settings it is given.

use std::hash::{BuildHasher, RandomState};
use std::io;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::error::{Error, ProviderFailure, Result};
use crate::gateway::{FinishReason, ProviderResponse, ResponseBody, Secret, Usage};

/// How long connecting (DNS, TCP and TLS) may take before the attempt counts as failed.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest successful answer read, in bytes.
const MAX_BODY: u64 = 16 * 1024 * 1024;
/// The largest error body read for the excerpt, in bytes.
const MAX_ERROR_BODY: u64 = 64 * 1024;
/// The longest excerpt of a server's body quoted in a message, in characters.
const EXCERPT_CHARS: usize = 300;

/// When and how often a failed call is tried again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first one included (0 counts as 1).
    pub max_attempts: u32,
    /// The backoff before the first retry; it doubles with each further retry.
    pub base_delay: Duration,
    /// The longest backoff between two attempts.
    pub max_delay: Duration,
    /// The longest wait a server's `Retry-After` can ask for; longer requests are cut to this.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// 3 attempts, 500 ms base delay, 8 s maximum delay, `Retry-After` honoured up to 30 s.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The full-jitter backoff before retry number `retry` (1 for the first retry), using
    /// `random` as the source of randomness.
    fn backoff(&self, retry: u32, random: u64) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        let ceiling = self.base_delay.saturating_mul(factor).min(self.max_delay);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(random % nanos.saturating_add(1))
    }
}

/// A successful answer: a `2xx` status with a JSON body.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpReply {
    pub status: u16,
    pub body: Value,
    /// Attempts made, the successful one included.
    pub attempts: u32,
    /// Time from the first attempt to the answer, waits between attempts included.
    pub latency: Duration,
}

/// The setting names a failure message tells the user to check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SettingNames {
    /// Where the base URL comes from, e.g. `OPENAI_BASE_URL`.
    pub base_url: &'static str,
    /// Where the API key comes from, e.g. `OPENAI_API_KEY`.
    pub api_key: &'static str,
}

/// A blocking HTTP client for one provider, with its timeouts and retry policy.
#[derive(Clone, Debug)]
pub struct HttpClient {
    /// Bound to the origin of the provider's base URL (`None`: that is no http(s) URL with
    /// a host, which every request then reports).
    agent: Option<crate::authority::Outbound>,
    provider: String,
    timeout: Duration,
    retry: RetryPolicy,
    settings: SettingNames,
    /// Why an API key that exists was not sent (SPEC §18: configuration is not authority),
    /// told when the server refuses the request.
    key_withheld: Option<String>,
}

/// The agent pactum sends requests with to a server it was told of (a provider, an MCP
/// server), bound to that server's origin (`authority::Outbound`): every status handed back
/// as an answer, no redirect followed, no proxy taken from the environment, pactum's user
/// agent; `connect` bounds connecting.
pub fn outbound(
    url: &crate::authority::Permit<String>,
    connect: Duration,
) -> std::result::Result<crate::authority::Outbound, String> {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(connect))
        .proxy(None)
        .user_agent(concat!("pactum/", env!("CARGO_PKG_VERSION")));
    crate::authority::Outbound::new(url, config)
}

impl HttpClient {
    /// A client for the provider named `provider` (the name errors carry) at `base_url`,
    /// the only origin it sends to.
    ///
    /// `connect_timeout` bounds connecting; `timeout` bounds each attempt as a whole unless a
    /// call passes its own.
    pub fn new(
        provider: impl Into<String>,
        base_url: &crate::authority::Permit<String>,
        connect_timeout: Duration,
        timeout: Duration,
        retry: RetryPolicy,
        settings: SettingNames,
    ) -> Self {
        HttpClient {
            agent: outbound(base_url, connect_timeout).ok(),
            provider: provider.into(),
            timeout,
            retry,
            settings,
            key_withheld: None,
        }
    }

    /// Tells refusals (401, 403) that a key was withheld, and why.
    #[must_use]
    pub fn with_key_withheld(mut self, why: Option<String>) -> Self {
        self.key_withheld = why;
        self
    }

    /// The provider name errors carry.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// POSTs `body` as JSON to `url` with `headers`, retrying as [`RetryPolicy`] says.
    ///
    /// `timeout` bounds each attempt (default: the client's timeout). `secret` is scrubbed
    /// from every message. A `2xx` whose body is not JSON is
    /// [`ProviderFailure::InvalidResponse`] and is not retried.
    pub fn post_json(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &Value,
        timeout: Option<Duration>,
        secret: Option<&Secret>,
    ) -> Result<HttpReply> {
        let timeout = timeout.unwrap_or(self.timeout);
        if !is_http_url(url) {
            return Err(self.error(&self.bad_url(), url, (0, Duration::ZERO), timeout, secret));
        }
        let payload = body.to_string();
        let max_attempts = self.retry.max_attempts.max(1);
        let started = Instant::now();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let failure = match self.attempt(url, headers, &payload, timeout, secret) {
                Ok((status, body)) => {
                    return Ok(HttpReply { status, body, attempts, latency: started.elapsed() });
                }
                Err(failure) => failure,
            };
            if !failure.retryable || attempts >= max_attempts {
                let spent = (attempts, started.elapsed());
                return Err(self.error(&failure, url, spent, timeout, secret));
            }
            let wait = match failure.retry_after {
                Some(asked) => asked.min(self.retry.max_retry_after),
                None => self.retry.backoff(attempts, jitter()),
            };
            thread::sleep(wait);
        }
    }

    /// One request and its answer, or why it failed.
    fn attempt(
        &self,
        url: &str,
        headers: &[(&str, String)],
        payload: &str,
        timeout: Duration,
        secret: Option<&Secret>,
    ) -> Result<(u16, Value), Failure> {
        let agent = self.agent.as_ref().ok_or_else(|| self.bad_url())?;
        let mut request = agent
            .post(url)
            .map_err(|why| Failure::new(ProviderFailure::NotConfigured, why))?
            .content_type("application/json");
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        let mut response = request
            .config()
            .timeout_global(Some(timeout))
            .build()
            .send(payload)
            .map_err(|e| self.transport_failure(e))?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            let bytes = response
                .body_mut()
                .with_config()
                .limit(MAX_BODY)
                .read_to_vec()
                .map_err(|e| self.transport_failure(e))?;
            return serde_json::from_slice(&bytes).map(|body| (status, body)).map_err(|e| {
                Failure::new(
                    ProviderFailure::InvalidResponse,
                    format!("the body is not JSON ({e})"),
                )
                .status(status)
                .body(&String::from_utf8_lossy(&bytes), secret)
            });
        }
        let retry_after = retry_after(response.headers(), SystemTime::now());
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_ERROR_BODY)
            .lossy_utf8(true)
            .read_to_string()
            .unwrap_or_default();
        let (kind, retryable) = match status {
            429 => (ProviderFailure::RateLimited, true),
            500..=599 => (ProviderFailure::Status, true),
            _ => (ProviderFailure::Status, false),
        };
        let mut failure = Failure::new(kind, String::new()).status(status).body(&body, secret);
        failure.retryable = retryable;
        failure.retry_after = retry_after;
        Err(failure)
    }

    /// Classifies an error ureq returned while sending or reading.
    fn transport_failure(&self, error: ureq::Error) -> Failure {
        use ProviderFailure::{InvalidResponse, NotConfigured, Timeout, Unreachable};
        match error {
            ureq::Error::Timeout(ureq::Timeout::Resolve | ureq::Timeout::Connect) => {
                Failure::new(Unreachable, "connecting timed out".into()).retryable()
            }
            ureq::Error::Timeout(_) => Failure::new(Timeout, "timed out".into()).retryable(),
            ureq::Error::HostNotFound => {
                Failure::new(Unreachable, "the host name does not resolve".into()).retryable()
            }
            ureq::Error::ConnectionFailed => {
                Failure::new(Unreachable, "the connection failed".into()).retryable()
            }
            ureq::Error::Io(e) => io_failure(&e),
            ureq::Error::BadUri(_) | ureq::Error::RequireHttpsOnly(_) => self.bad_url(),
            ureq::Error::Http(_) => Failure::new(
                NotConfigured,
                format!(
                    "a request header is not valid; check {} for stray characters such as \
                     newlines",
                    self.settings.api_key
                ),
            ),
            ureq::Error::Protocol(e) => {
                Failure::new(InvalidResponse, format!("the answer is not valid HTTP ({e})"))
            }
            ureq::Error::LargeResponseHeader(..) | ureq::Error::BodyExceedsLimit(_) => {
                Failure::new(InvalidResponse, "the answer is too large".into())
            }
            other => Failure::new(Unreachable, other.to_string()),
        }
    }

    fn bad_url(&self) -> Failure {
        Failure::new(
            ProviderFailure::NotConfigured,
            format!("it is not a valid http or https URL; check {}", self.settings.base_url),
        )
    }

    /// The error for a failure after `attempts` attempts that took `elapsed`, its message
    /// scrubbed of `secret`.
    fn error(
        &self,
        failure: &Failure,
        url: &str,
        (attempts, elapsed): (u32, Duration),
        timeout: Duration,
        secret: Option<&Secret>,
    ) -> Error {
        Error::Provider {
            provider: self.provider.clone(),
            failure: failure.kind,
            status: failure.status,
            message: scrub(secret, &self.message(failure, url, attempts, timeout)),
            attempts,
            elapsed,
        }
    }

    /// The message for a failure after `attempts` attempts, ending with how to fix it.
    fn message(&self, failure: &Failure, url: &str, attempts: u32, timeout: Duration) -> String {
        let tries = match attempts {
            1 => "1 attempt".to_string(),
            n => format!("{n} attempts"),
        };
        let base_url = &self.settings.base_url;
        let said = if failure.body.is_empty() {
            String::new()
        } else {
            format!(": server said: {}", failure.body)
        };
        let status = failure.status.map(status_text).unwrap_or_default();
        match failure.kind {
            ProviderFailure::RateLimited => format!(
                "POST {url} answered {status} after {tries}{said}; wait and \
                 retry, lower the request rate, or raise your rate limit with the provider"
            ),
            ProviderFailure::Status => {
                let fix = match failure.status {
                    Some(401 | 403) => match &self.key_withheld {
                        Some(why) => why.clone(),
                        None => format!("check {}", self.settings.api_key),
                    },
                    Some(404) => format!("check {base_url} and the model name"),
                    Some(300..=399) => format!("check {base_url}: redirects are not followed"),
                    Some(500..=599) => {
                        format!("the server is failing; try again later or check {base_url}")
                    }
                    _ => "check the model name and the contract's boundary settings".to_string(),
                };
                format!("POST {url} answered {status} after {tries}{said}; {fix}")
            }
            ProviderFailure::Timeout => format!(
                "POST {url} did not answer within {} ({tries}); raise constraints.timeout_s \
                 or the provider's timeout, or check {base_url}",
                seconds(timeout)
            ),
            ProviderFailure::Unreachable => format!(
                "cannot reach {url}: {} ({tries}); check {base_url} and that the server is \
                 running",
                failure.detail
            ),
            ProviderFailure::InvalidResponse => format!(
                "POST {url} answered {status} but {} ({tries}){said}; check that {base_url} \
                 points at the provider's API",
                failure.detail
            ),
            ProviderFailure::NotConfigured
            | ProviderFailure::ReplayMiss
            | ProviderFailure::ScriptExhausted
            | ProviderFailure::ScriptPromptMismatch => {
                format!("cannot send a request to `{url}`: {}", failure.detail)
            }
        }
    }
}

/// How a JSON API is named in messages: the settings to check, what its answer is called
/// (`"a chat completion"`) and what the base URL should point at (`"an OpenAI-compatible
/// API"`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ApiKind {
    pub settings: SettingNames,
    pub answer: &'static str,
    pub api: &'static str,
}

/// One JSON endpoint of a real provider: the client, the URL, the key, and the error and
/// response plumbing every such provider shares. Debug output never shows the key.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    client: HttpClient,
    url: String,
    key: Option<Secret>,
    kind: ApiKind,
    key_withheld: Option<String>,
}

impl Endpoint {
    /// The endpoint `path` below `base_url`, for the provider named `provider`.
    pub fn new(
        provider: &str,
        base_url: &crate::authority::Permit<String>,
        path: &str,
        key: Option<&Secret>,
        timeout: Duration,
        retry: &RetryPolicy,
        kind: ApiKind,
    ) -> Self {
        let client = HttpClient::new(
            provider,
            base_url,
            DEFAULT_CONNECT_TIMEOUT,
            timeout,
            retry.clone(),
            kind.settings,
        );
        Endpoint {
            client,
            url: join_url(base_url.get(), path),
            key: key.filter(|key| !key.expose().is_empty()).cloned(),
            kind,
            key_withheld: None,
        }
    }

    /// The API key, when one is configured and not empty.
    pub fn key(&self) -> Option<&Secret> {
        self.key.as_ref()
    }

    /// Marks the key as withheld (`why`, told on a refusal), see [`HttpClient::with_key_withheld`].
    #[must_use]
    pub fn with_key_withheld(mut self, why: Option<String>) -> Self {
        self.key_withheld = why.clone();
        self.client = self.client.with_key_withheld(why);
        self
    }

    /// Why an existing key was not given to this endpoint, if it was not.
    pub fn key_withheld(&self) -> Option<&str> {
        self.key_withheld.as_deref()
    }

    /// POSTs `body` with `headers` (see [`HttpClient::post_json`]).
    pub fn post(
        &self,
        headers: &[(&str, String)],
        body: &Value,
        timeout: Option<Duration>,
    ) -> Result<HttpReply> {
        self.client.post_json(&self.url, headers, body, timeout, self.key())
    }

    /// A provider error that did not come from the transport, scrubbed of the key.
    pub fn error(&self, failure: ProviderFailure, message: &str) -> Error {
        provider_error(self.client.provider(), failure, self.key(), message)
    }

    /// An answer that is not the API's answer: `what` says how.
    pub fn invalid(&self, what: &str) -> Error {
        let ApiKind { settings, answer, api } = self.kind;
        let message = format!(
            "the answer from {} is not {answer}: {what}; check that {} points at {api}",
            self.url, settings.base_url
        );
        self.error(ProviderFailure::InvalidResponse, &message)
    }

    /// An answer without the `field` the API promises: the server's own error when the body
    /// carries one, otherwise that the field is missing.
    pub fn missing(&self, body: &Value, field: &str) -> Error {
        match body.get("error") {
            Some(_) => self.invalid(&format!(
                "it carries an error instead of {field}: {}",
                excerpt(&body.to_string(), self.key())
            )),
            None => self.invalid(&format!("it has no `{field}`")),
        }
    }

    /// The provider's response: the body and the model the reply names, scrubbed of the key.
    pub fn response(
        &self,
        reply: &HttpReply,
        body: ResponseBody,
        finish_reason: Option<FinishReason>,
        usage: Option<Usage>,
    ) -> ProviderResponse {
        let secret = self.key();
        let body = match body {
            ResponseBody::Text(text) => ResponseBody::Text(scrub(secret, &text)),
            ResponseBody::Envelope(value) => ResponseBody::Envelope(scrub_value(secret, value)),
        };
        ProviderResponse {
            body,
            finish_reason,
            usage,
            latency: reply.latency,
            latency_recorded: false,
            model: reply.body.get("model").and_then(Value::as_str).map(|m| scrub(secret, m)),
            attempts: reply.attempts,
            tool_calls: Vec::new(),
        }
    }
}

/// `value` with `secret` replaced in every string, keys included.
fn scrub_value(secret: Option<&Secret>, value: Value) -> Value {
    let Some(secret) = secret else { return value };
    match value {
        Value::String(text) => Value::String(secret.scrub(&text)),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| scrub_value(Some(secret), v)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (secret.scrub(&k), scrub_value(Some(secret), v)))
                .collect(),
        ),
        other => other,
    }
}

/// Why one attempt failed, before it becomes an [`Error`].
#[derive(Debug)]
struct Failure {
    kind: ProviderFailure,
    status: Option<u16>,
    retryable: bool,
    retry_after: Option<Duration>,
    /// What went wrong, in words (may hold text from ureq; scrubbed with the message).
    detail: String,
    /// An excerpt of the server's body, scrubbed of the secret.
    body: String,
}

impl Failure {
    fn new(kind: ProviderFailure, detail: String) -> Self {
        Failure {
            kind,
            status: None,
            retryable: false,
            retry_after: None,
            detail,
            body: String::new(),
        }
    }

    fn status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    fn body(mut self, body: &str, secret: Option<&Secret>) -> Self {
        self.body = excerpt(body, secret);
        self
    }

    fn retryable(mut self) -> Self {
        self.retryable = true;
        self
    }
}

/// Whether `url` parses as an absolute `http` or `https` URL with a host.
fn is_http_url(url: &str) -> bool {
    let Ok(uri) = url.parse::<ureq::http::Uri>() else {
        return false;
    };
    matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some_and(|h| !h.is_empty())
}

fn io_failure(error: &io::Error) -> Failure {
    use io::ErrorKind as K;
    let (kind, detail) = match error.kind() {
        K::TimedOut => (ProviderFailure::Timeout, "timed out".to_string()),
        K::ConnectionRefused => (ProviderFailure::Unreachable, "connection refused".to_string()),
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => (
            ProviderFailure::Unreachable,
            "the connection closed before a complete answer".to_string(),
        ),
        _ => (ProviderFailure::Unreachable, error.to_string()),
    };
    Failure::new(kind, detail).retryable()
}

/// The wait a `Retry-After` (or `retry-after-ms`) header asks for.
fn retry_after(headers: &ureq::http::HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms.min(1e12) / 1000.0));
    }
    header("retry-after").and_then(|v| parse_retry_after(v, now))
}

/// Parses a `Retry-After` value: delta-seconds, or an IMF-fixdate such as
/// `Sun, 06 Nov 1994 08:49:37 GMT` (a date in the past means no wait).
fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parses an IMF-fixdate (RFC 9110 §5.6.7), the only HTTP-date form servers may send.
fn parse_http_date(value: &str) -> Option<SystemTime> {
    let (_weekday, rest) = value.split_once(", ")?;
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| m == month)? as i64 + 1;
    let day: i64 = day.parse().ok()?;
    let year: i64 = year.parse().ok()?;
    let clock: Vec<i64> = time.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let [hour, minute, second] = clock.as_slice() else {
        return None;
    };
    let valid = (1..=31).contains(&day)
        && (0..=9999).contains(&year)
        && (0..24).contains(hour)
        && (0..60).contains(minute)
        && (0..=60).contains(second);
    if !valid {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap_or(0)))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1..=12).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    // Count from 1 March so the leap day is the last day of the (shifted) year.
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let shifted_month = (month + 9) % 12;
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// A random number for jitter, from the standard library's randomly keyed hasher.
fn jitter() -> u64 {
    RandomState::new().hash_one(Instant::now())
}

/// A short, single-line excerpt of a server's body, scrubbed of `secret` before it is cut.
/// For a JSON error body (`{"error": {"message": ...}}`, `{"error": "..."}`, a
/// `detail` or a `message`), just the error message.
pub(crate) fn excerpt(body: &str, secret: Option<&Secret>) -> String {
    let message = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let error = v.get("error").or(v.get("detail")).or(v.get("message"))?;
        let text = error.get("message").unwrap_or(error);
        text.as_str().map(str::to_string)
    });
    let text = scrub(secret, &message.unwrap_or_else(|| body.to_string()));
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

/// `base` and `path` joined with exactly one `/` between them, before the base's query
/// (`https://h/v1?api-version=1` and `chat/completions` make
/// `https://h/v1/chat/completions?api-version=1`); a fragment, never sent, is left out.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    let base = base.split_once('#').map_or(base, |(base, _)| base);
    let (base, query) = base.split_once('?').map_or((base, None), |(b, q)| (b, Some(q)));
    let joined = format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'));
    match query {
        Some(query) => format!("{joined}?{query}"),
        None => joined,
    }
}

/// A provider error that did not come from the transport (a missing setting, an answer of
/// the wrong shape), with `secret` scrubbed from its message.
pub(crate) fn provider_error(
    provider: &str,
    failure: ProviderFailure,
    secret: Option<&Secret>,
    message: &str,
) -> Error {
    Error::provider(provider, failure, scrub(secret, message))
}

/// `text` with `secret` replaced, when there is a secret.
pub(crate) fn scrub(secret: Option<&Secret>, text: &str) -> String {
    match secret {
        Some(secret) => secret.scrub(text),
        None => text.to_string(),
    }
}

fn status_text(status: u16) -> String {
    let reason = ureq::http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason());
    match reason {
        Some(reason) => format!("HTTP {status} {reason}"),
        None => format!("HTTP {status}"),
    }
}

fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = at(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let check = |value: &str, want: Option<u64>| {
            assert_eq!(parse_retry_after(value, now), want.map(Duration::from_secs), "{value}");
        };
        check("0", Some(0));
        check(" 120 ", Some(120));
        check("Sun, 06 Nov 1994 08:49:37 GMT", Some(0));
        check("Sun, 06 Nov 1994 08:50:07 GMT", Some(30));
        check("Mon, 07 Nov 1994 08:49:37 GMT", Some(86_400));
        check("Sat, 05 Nov 1994 08:49:37 GMT", Some(0));
        check("Thu, 01 Jan 1970 00:00:00 GMT", Some(0));
        check("-5", None);
        check("soon", None);
        check("Sun, 06 Foo 1994 08:49:37 GMT", None);
        check("Sun, 06 Nov 1994 25:49:37 GMT", None);
        check("Sun, 06 Nov 1994 08:49:37 UTC", None);
        check("Sun, 06 Nov 1994 08:49 GMT", None);
        check("", None);
    }

    #[test]
    fn days_from_civil_matches_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2024, 2, 29), 19_782);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
    }

    #[test]
    fn backoff_is_full_jitter_under_a_doubling_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.backoff(1, 0), Duration::ZERO);
        for random in [1, 12_345, u64::MAX / 3, u64::MAX] {
            assert!(policy.backoff(1, random) <= Duration::from_millis(500));
            assert!(policy.backoff(2, random) <= Duration::from_secs(1));
            assert!(policy.backoff(30, random) <= Duration::from_secs(8));
        }
        let ceiling = Duration::from_millis(500).as_nanos() as u64;
        assert_eq!(policy.backoff(1, ceiling), Duration::from_millis(500));
        let none = RetryPolicy { base_delay: Duration::ZERO, ..RetryPolicy::default() };
        assert_eq!(none.backoff(3, u64::MAX), Duration::ZERO);
    }

    #[test]
    fn excerpts_prefer_the_error_message_and_stay_short() {
        assert_eq!(excerpt(r#"{"error":{"message":"bad  model\nname"}}"#, None), "bad model name");
        assert_eq!(excerpt(r#"{"error":"nope"}"#, None), "nope");
        assert_eq!(excerpt("plain\ttext", None), "plain text");
        let long = "é".repeat(400);
        let cut = excerpt(&long, None);
        assert!(cut.ends_with("...") && cut.chars().count() == EXCERPT_CHARS + 3);
        // The secret goes before the cut, so no prefix of it survives.
        let key = Secret::new("sk-0123456789abcdef");
        let body = format!("{}sk-0123456789abcdef", "x".repeat(EXCERPT_CHARS - 5));
        let cut = excerpt(&body, Some(&key));
        assert!(!cut.contains("sk-01") && cut.contains("[red"), "{cut}");
    }

    #[test]
    fn urls_join_with_one_slash() {
        assert_eq!(join_url("http://h/v1", "chat"), "http://h/v1/chat");
        assert_eq!(join_url("http://h/v1/", "/chat"), "http://h/v1/chat");
        assert_eq!(join_url("http://h//", "v1/messages"), "http://h/v1/messages");
        assert_eq!(
            join_url("http://h/v1/?api-key=k&api-version=1#frag", "chat/completions"),
            "http://h/v1/chat/completions?api-key=k&api-version=1"
        );
        assert_eq!(join_url("http://h/v1#frag", "chat"), "http://h/v1/chat");
    }

    #[test]
    fn only_absolute_http_urls_are_sent() {
        assert!(is_http_url("http://127.0.0.1:8080/v1/chat/completions"));
        assert!(is_http_url("https://api.openai.com/v1/chat/completions"));
        for bad in ["not a url/chat", "/v1/messages", "ftp://host/x", "localhost:11434/v1", ""] {
            assert!(!is_http_url(bad), "{bad}");
        }
    }

    #[test]
    fn status_text_names_the_reason() {
        assert_eq!(status_text(429), "HTTP 429 Too Many Requests");
        assert_eq!(status_text(599), "HTTP 599");
    }
}
