//! The streamable HTTP transport: every message is a `POST` to the server's one endpoint
//! with `Accept: application/json, text/event-stream`; a request is answered with one JSON
//! body or with a server-sent event stream whose `data:` lines carry the response (and,
//! before it, notifications and requests of the server's). A session the server opens
//! (`Mcp-Session-Id` on the `initialize` answer) is sent back on every later message and
//! closed with a `DELETE` when the transport is dropped.
//!
//! The agent follows no redirect (a `3xx` is a failure: the configured URL is the only
//! host pactum talks to) and uses no proxy; each request is bounded by the server's
//! timeout as a whole, each message by [`super::MAX_MESSAGE_BYTES`]. No header carries a
//! secret: pactum sends none to a tool server.

use std::io::BufReader;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Incoming, MAX_MESSAGE_BYTES, Transport, is_response_to, time_left};

/// The most bytes one event stream may carry in all.
const MAX_STREAM_BYTES: u64 = 4 * MAX_MESSAGE_BYTES as u64;
/// The longest wait for the closing `DELETE`.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection to a streamable HTTP server.
pub struct Http {
    agent: crate::authority::Outbound,
    url: String,
    session: Option<String>,
    protocol_version: Option<String>,
}

impl Http {
    /// A transport for `url` (`http://` or `https://`); nothing is sent yet.
    pub fn new(permit: &crate::authority::Permit<String>) -> std::result::Result<Http, String> {
        let url = permit.get().as_str();
        let lower = url.trim().to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(format!("`{}` is not an http:// or https:// URL", shown(url)));
        }
        Ok(Http {
            agent: crate::gateway::http::outbound(permit, Duration::from_secs(10))?,
            url: url.trim().to_string(),
            session: None,
            protocol_version: None,
        })
    }

    /// POSTs one message; the response, ready to read.
    fn post(
        &mut self,
        message: &Value,
        deadline: Instant,
    ) -> std::result::Result<ureq::http::Response<ureq::Body>, String> {
        let left = time_left(deadline)?;
        let mut request = self
            .agent
            .post(&self.url)?
            .content_type("application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(session) = &self.session {
            request = request.header("Mcp-Session-Id", session.as_str());
        }
        if let Some(version) = &self.protocol_version {
            request = request.header("MCP-Protocol-Version", version.as_str());
        }
        let payload = serde_json::to_string(message).map_err(|e| e.to_string())?;
        let response = request
            .config()
            .timeout_global(Some(left))
            .build()
            .send(payload)
            .map_err(|e| self.transport_failure(&e))?;
        if let Some(session) =
            response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok())
        {
            // Visible ASCII only (the specification's rule); anything else is not kept.
            if !session.is_empty() && session.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
                self.session = Some(session.to_string());
            }
        }
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let what = if (300..400).contains(&status) {
                " (a redirect: pactum follows none; configure the final URL)"
            } else {
                ""
            };
            return Err(format!("POST {} answered HTTP {status}{what}", shown(&self.url)));
        }
        Ok(response)
    }

    fn transport_failure(&self, e: &ureq::Error) -> String {
        match e {
            ureq::Error::Timeout(_) => super::NO_ANSWER_IN_TIME.into(),
            other => format!("POST {} failed: {other}", shown(&self.url)),
        }
    }
}

impl Transport for Http {
    fn request(
        &mut self,
        message: &Value,
        id: u64,
        deadline: Instant,
    ) -> std::result::Result<Value, String> {
        let mut response = self.post(message, deadline)?;
        let sse = response.body().mime_type() == Some("text/event-stream");
        if !sse {
            let bytes = response
                .body_mut()
                .with_config()
                .limit(MAX_MESSAGE_BYTES as u64)
                .read_to_vec()
                .map_err(|e| or_timeout(format!("reading the answer failed: {e}"), deadline))?;
            let answer: Value = serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "the answer is not JSON ({e}): {}",
                    super::short(&String::from_utf8_lossy(&bytes))
                )
            })?;
            return if is_response_to(&answer, id) {
                Ok(answer)
            } else {
                Err(format!("the answer is not the response to request {id}"))
            };
        }
        let reader = response.into_body().into_with_config().limit(MAX_STREAM_BYTES).reader();
        let mut reader = BufReader::new(reader);
        let mut data: Vec<u8> = Vec::new();
        loop {
            time_left(deadline)?;
            let line = super::stdio::read_line(&mut reader, MAX_MESSAGE_BYTES).map_err(|m| {
                or_timeout(m.replace("reading its output", "reading the event stream"), deadline)
            })?;
            let Some(line) = line else {
                return Err(format!("the event stream ended before the response to request {id}"));
            };
            if line.is_empty() {
                // An event ends: its data is one message.
                if data.is_empty() {
                    continue;
                }
                let event = std::mem::take(&mut data);
                match super::incoming(&event, id, "an event's data")? {
                    Incoming::Response(answer) => return Ok(answer),
                    // Answered on a request of its own; its answer is not awaited.
                    Incoming::Owed(reply) => {
                        if let Ok(r) = self.post(&reply, deadline) {
                            drop(r);
                        }
                    }
                    Incoming::Skip => {}
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix(b"data:") {
                let rest = rest.strip_prefix(b" ").unwrap_or(rest);
                if data.len() + rest.len() + 1 > MAX_MESSAGE_BYTES {
                    return Err(format!("an event is over {MAX_MESSAGE_BYTES} bytes"));
                }
                if !data.is_empty() {
                    data.push(b'\n');
                }
                data.extend_from_slice(rest);
            }
            // `event:`, `id:`, `retry:` and comments carry nothing pactum uses.
        }
    }

    fn notify(&mut self, message: &Value, deadline: Instant) -> std::result::Result<(), String> {
        self.post(message, deadline).map(drop)
    }

    fn set_protocol_version(&mut self, version: &str) {
        self.protocol_version = Some(version.to_string());
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        // Ends the session the server opened, if any (best effort: a server may refuse).
        let Some(session) = self.session.take() else { return };
        let Ok(request) = self.agent.delete(&self.url) else { return };
        let _ = request
            .header("Mcp-Session-Id", session.as_str())
            .config()
            .timeout_global(Some(CLOSE_TIMEOUT))
            .build()
            .call();
    }
}

/// A URL as messages show it (`redact::shown_url`), cut to a message's length.
fn shown(url: &str) -> String {
    super::short(&crate::redact::shown_url(url))
}

/// A failed read's message: the timeout once the deadline passed (the agent's own timer
/// ended the read), else `message`.
fn or_timeout(message: String, deadline: Instant) -> String {
    time_left(deadline).err().unwrap_or(message)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests play the application: their URLs are permits
mod tests {
    use super::*;
    use crate::authority::Permit;

    fn url(text: &str) -> Permit<String> {
        Permit::application(text.to_string())
    }

    #[test]
    fn only_http_urls_are_taken() {
        assert!(Http::new(&url("http://127.0.0.1:1/mcp")).is_ok());
        let e = Http::new(&url("file:///etc/passwd")).err().unwrap();
        assert!(e.contains("not an http"), "{e}");
    }

    #[test]
    fn event_streams_carry_the_response_after_other_messages() {
        // A server on a loopback port answering one SSE stream (notification, then the
        // response split over two data lines).
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            use std::io::Write;
            let (mut s, _) = listener.accept().unwrap();
            read_request(&mut s);
            let body = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":5,\"result\":{\"ok\":true}}\n\n";
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: abc\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            s.write_all(head.as_bytes()).unwrap();
            s.write_all(body.as_bytes()).unwrap();
        });
        let mut http = Http::new(&url(&format!("http://127.0.0.1:{port}/mcp"))).unwrap();
        let answer = http
            .request(
                &serde_json::json!({"jsonrpc": "2.0", "id": 5, "method": "x"}),
                5,
                Instant::now() + Duration::from_secs(10),
            )
            .unwrap();
        assert_eq!(answer["result"]["ok"], true);
        assert_eq!(http.session.as_deref(), Some("abc"));
        http.session = None; // no server left to close it on
        server.join().unwrap();
    }

    /// Reads one whole HTTP request (head, then `Content-Length` bytes of body): a server
    /// that answers and closes with part of the request unread makes the kernel reset the
    /// connection, and the client may see the reset before the answer.
    fn read_request(s: &mut std::net::TcpStream) {
        use std::io::Read;
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        let head_end = loop {
            if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        };
        let head = String::from_utf8_lossy(&seen[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while seen.len() < head_end + length {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    }

    /// A loopback server answering one request with what `answer` writes (until a write
    /// fails: the client went away); its URL.
    fn serve(answer: fn(&mut std::net::TcpStream)) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            read_request(&mut s);
            answer(&mut s);
        });
        format!("http://127.0.0.1:{port}/mcp")
    }

    /// One request to `url` with a deadline one second away: its failure and how long it took.
    fn fails(address: &str) -> (String, Duration) {
        let mut http = Http::new(&url(address)).unwrap();
        let started = Instant::now();
        let message = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let e = http.request(&message, 1, started + Duration::from_secs(1)).unwrap_err();
        http.session = None;
        (e, started.elapsed())
    }

    fn write_forever(s: &mut std::net::TcpStream, head: &str, chunk: &[u8], pause: Duration) {
        use std::io::Write;
        if s.write_all(head.as_bytes()).is_err() {
            return;
        }
        while s.write_all(chunk).and_then(|()| s.flush()).is_ok() {
            std::thread::sleep(pause);
        }
    }

    #[test]
    fn a_response_that_never_ends_fails_at_the_deadline_however_it_trickles() {
        let answers: [fn(&mut std::net::TcpStream); 4] = [
            // An event stream of notifications without end, never the response.
            |s| {
                let note = b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n";
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
                write_forever(s, head, note, Duration::from_millis(1));
            },
            // One byte every 100 ms of an event's data.
            |s| {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: ";
                write_forever(s, head, b" ", Duration::from_millis(100));
            },
            // A JSON body trickling one byte every 100 ms under a huge Content-Length.
            |s| {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n";
                write_forever(s, head, b" ", Duration::from_millis(100));
            },
            // Chunked encoding without a last chunk.
            |s| {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
                write_forever(s, head, b"1\r\n \r\n", Duration::from_millis(100));
            },
        ];
        for (i, answer) in answers.into_iter().enumerate() {
            let (e, took) = fails(&serve(answer));
            assert!(e.contains("in time"), "answer {i}: {e}");
            assert!(took < Duration::from_secs(3), "answer {i}: {took:?}");
        }
    }

    #[test]
    fn huge_bodies_redirects_and_odd_session_ids_are_refused() {
        // 10 GB announced and sent as fast as it goes: refused at the message cap.
        let (e, took) = fails(&serve(|s| {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n";
            write_forever(s, head, &[b' '; 65536], Duration::ZERO);
        }));
        assert!(!e.contains("in time"), "{e}");
        assert!(took < Duration::from_secs(3), "{took:?}");
        // A redirect to another host is not followed.
        let (e, _) = fails(&serve(|s| {
            use std::io::Write;
            let _ = s.write_all(b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://example.com/mcp\r\nContent-Length: 0\r\n\r\n");
        }));
        assert!(e.contains("HTTP 307") && e.contains("follows none"), "{e}");
        // A 1 MB session id: the answer is refused, nothing is kept.
        let (e, _) = fails(&serve(|s| {
            use std::io::Write;
            let head = format!(
                "HTTP/1.1 200 OK\r\nMcp-Session-Id: {}\r\nContent-Length: 0\r\n\r\n",
                "s".repeat(1 << 20)
            );
            let _ = s.write_all(head.as_bytes());
        }));
        assert!(!e.is_empty());
    }

    #[test]
    fn credentials_in_the_url_are_never_shown() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        for url in [
            format!("http://user:hunter2secret@127.0.0.1:{port}/mcp?token=hunter2secret"),
            "http://user:hunter2secret@no-such-host.invalid/mcp".to_string(),
        ] {
            let (e, _) = fails(&url);
            assert!(!e.contains("hunter2secret"), "{e}");
        }
        let (e, _) = fails(
            &serve(|s| {
                use std::io::Write;
                let _ = s.write_all(b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n");
            })
            .replace("http://", "http://user:hunter2secret@"),
        );
        assert!(!e.contains("hunter2secret") && e.contains("HTTP 500"), "{e}");
    }
}
