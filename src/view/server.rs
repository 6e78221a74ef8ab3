//! The viewer's HTTP/1.1 server: `GET` only, one request per connection, bounded. A
//! request head (request line and headers) larger than [`MAX_HEAD_BYTES`] is refused with
//! 431, one that does not arrive within [`READ_TIMEOUT`] is dropped (408 when anything
//! came), another method than `GET` is 405, a `Host` that is not the loopback address the
//! server listens on is 421 (a page of another site cannot read the viewer by pointing a
//! name at 127.0.0.1), and every answer carries a strict Content-Security-Policy (no
//! script, nothing fetched from elsewhere), `nosniff`, and `Connection: close`.
//! Connections are answered on their own threads, at most [`MAX_CONNECTIONS`] at once (the
//! others get 503).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::{Response, View, respond};

/// The most bytes of a request's head.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;
/// How long a client may take to send its request.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long writing an answer may take.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections answered at once.
pub const MAX_CONNECTIONS: usize = 16;

/// The headers of every answer.
pub const CSP: &str = "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// What the head of a request asks for, or the status refusing it.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    /// A `GET` of this path (the target without its query).
    Get(String),
    Refused(u16, &'static str),
}

/// Parses a request head (the bytes before the blank line); `hosts` are the `Host` values
/// accepted.
pub fn parse(head: &[u8], hosts: &[String]) -> Request {
    let Ok(head) = std::str::from_utf8(head) else {
        return Request::Refused(400, "the request is not UTF-8");
    };
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or("");
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Request::Refused(400, "the request line is not METHOD TARGET HTTP/1.x");
    };
    if !matches!(version, "HTTP/1.0" | "HTTP/1.1") {
        return Request::Refused(400, "only HTTP/1.0 and HTTP/1.1 are spoken");
    }
    let mut host = None;
    for header in lines {
        let Some((name, value)) = header.split_once(':') else {
            return Request::Refused(400, "a header line has no colon");
        };
        if name.eq_ignore_ascii_case("host") {
            host = Some(value.trim());
        }
    }
    if method != "GET" {
        return Request::Refused(405, "the viewer is read-only: GET only");
    }
    if !host.is_some_and(|h| hosts.iter().any(|ok| ok.eq_ignore_ascii_case(h))) {
        return Request::Refused(421, "the Host header does not name this server");
    }
    if !target.starts_with('/') {
        return Request::Refused(400, "the target is not a path");
    }
    let path = target.split(['?', '#']).next().unwrap_or("/");
    Request::Get(path.to_string())
}

/// Reads a request head from `stream`: `Ok(bytes)` up to the blank line, `Err(status)`
/// when it is too large (431) or does not complete in time (408; 0 when nothing came).
fn read_head(stream: &mut TcpStream) -> Result<Vec<u8>, u16> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => return Err(if head.is_empty() { 0 } else { 400 }),
            Ok(n) => n,
            Err(_) => return Err(if head.is_empty() { 0 } else { 408 }),
        };
        head.extend_from_slice(&buf[..n]);
        let end = head.windows(4).position(|w| w == b"\r\n\r\n");
        if end.unwrap_or(head.len()) > MAX_HEAD_BYTES {
            return Err(431);
        }
        if let Some(end) = end {
            head.truncate(end);
            return Ok(head);
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

/// Writes `response` with the viewer's headers.
fn write_response(stream: &mut TcpStream, response: &Response) {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nContent-Security-Policy: {CSP}\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\nCache-Control: no-store\r\nConnection: close\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len()
    );
    if response.status == 405 {
        head.push_str("Allow: GET\r\n");
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(response.body.as_bytes());
    let _ = stream.flush();
}

/// Answers one connection.
fn answer(mut stream: TcpStream, view: &View, hosts: &[String]) {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let response = match read_head(&mut stream) {
        Err(0) => return,
        Err(status) => Response::status(status, reason(status)),
        Ok(head) => match parse(&head, hosts) {
            Request::Get(path) => respond(view, &path),
            Request::Refused(status, why) => Response::status(status, why),
        },
    };
    write_response(&mut stream, &response);
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// The `Host` values a server on `listener` accepts: its address, and `localhost` with its
/// port.
pub fn hosts_of(listener: &TcpListener) -> std::io::Result<Vec<String>> {
    let addr = listener.local_addr()?;
    Ok(vec![addr.to_string(), format!("localhost:{}", addr.port())])
}

/// Serves `view` on `listener` until the process ends.
pub fn serve(listener: TcpListener, view: View) -> std::io::Result<()> {
    let hosts = Arc::new(hosts_of(&listener)?);
    let view = Arc::new(view);
    let busy = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            busy.fetch_sub(1, Ordering::SeqCst);
            let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
            write_response(&mut stream, &Response::status(503, "busy"));
            continue;
        }
        let (view, hosts, busy) = (Arc::clone(&view), Arc::clone(&hosts), Arc::clone(&busy));
        std::thread::spawn(move || {
            answer(stream, &view, &hosts);
            busy.fetch_sub(1, Ordering::SeqCst);
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_parsed_strictly() {
        let hosts = vec!["127.0.0.1:8000".to_string(), "localhost:8000".to_string()];
        let get = |head: &str| parse(head.as_bytes(), &hosts);
        assert_eq!(
            get("GET /evals?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8000"),
            Request::Get("/evals".into())
        );
        assert_eq!(get("GET / HTTP/1.1\r\nhost: LOCALHOST:8000"), Request::Get("/".into()));
        let status = |head: &str| match get(head) {
            Request::Refused(s, _) => s,
            Request::Get(p) => panic!("accepted {p}"),
        };
        assert_eq!(status("POST / HTTP/1.1\r\nHost: 127.0.0.1:8000"), 405);
        assert_eq!(status("GET / HTTP/1.1\r\nHost: evil.example:8000"), 421);
        assert_eq!(status("GET / HTTP/1.1"), 421);
        assert_eq!(status("GET / HTTP/2\r\nHost: 127.0.0.1:8000"), 400);
        assert_eq!(status("GET  / HTTP/1.1\r\nHost: 127.0.0.1:8000"), 400);
        assert_eq!(status("GET http://x/ HTTP/1.1\r\nHost: 127.0.0.1:8000"), 400);
        assert_eq!(status("GET / HTTP/1.1\r\nnocolon"), 400);
    }
}
