//! A tiny HTTP/1.1 mock server for the provider tests, on 127.0.0.1 with std only.
//!
//! [`MockServer::start`] takes the replies to give, one per connection in the order the
//! connections arrive; each connection is served on its own thread, so a delayed reply does
//! not hold up the next attempt. Every request is recorded (method, path, headers, body)
//! before its reply is given. When the replies run out the server answers 500 with
//! `mock: no reply left`. Request bodies are read by `Content-Length` (chunked bodies are not
//! supported); `Expect: 100-continue` is answered; every reply says `Connection: close`.
//! Sockets have read and write timeouts so a test can never hang on the server, and the
//! listener thread stops when the [`MockServer`] is dropped. [`RefusedPort`] is a port
//! where connections are refused, held so that no other test's server can take it.
//!
//! Include it with `#[path = "support/mock_http.rs"] mod mock_http;`.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

const SOCKET_TIMEOUT: Duration = Duration::from_secs(5);

/// One reply the server gives.
#[derive(Clone, Debug)]
pub struct MockReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Waited after reading the request, before answering.
    pub delay: Duration,
    /// Close the connection after reading the request, without answering.
    pub close: bool,
}

impl MockReply {
    /// A reply with a JSON body.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        MockReply::text(status, &body.to_string()).header("content-type", "application/json")
    }

    /// A reply with a plain body and no content type.
    pub fn text(status: u16, body: &str) -> Self {
        MockReply {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            delay: Duration::ZERO,
            close: false,
        }
    }

    /// Reads the request, then closes the connection without a word.
    pub fn close() -> Self {
        MockReply { close: true, ..MockReply::text(200, "") }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A request as the server received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// A running mock server; stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
}

impl MockServer {
    /// Starts a server on 127.0.0.1 with a free port that gives `replies` in order.
    pub fn start(replies: Vec<MockReply>) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let (recorded, stopping) = (Arc::clone(&requests), Arc::clone(&stop));
        thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let reply = replies
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or_else(|| MockReply::text(500, "mock: no reply left"));
                let recorded = Arc::clone(&recorded);
                thread::spawn(move || serve(stream, reply, &recorded));
            }
        });
        MockServer { addr, requests, stop }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// How many requests were received.
    pub fn hits(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

/// A port on 127.0.0.1 that refuses connections, held for as long as this value lives.
///
/// The port is bound by a socket that never listens: connecting to it is refused, and
/// because the socket does not allow address reuse, no other socket (a [`MockServer`] of a
/// test running in parallel included) can bind the port until this value is dropped. A port
/// that was bound and released instead could be handed to another test's server.
pub struct RefusedPort {
    /// Closed on drop, which releases the port.
    _fd: std::os::fd::OwnedFd,
    addr: SocketAddr,
}

impl RefusedPort {
    pub fn new() -> RefusedPort {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: plain socket calls on a descriptor this function owns; every pointer is
        // to a local of the size passed with it.
        unsafe {
            let raw = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            assert!(raw >= 0, "socket: {}", std::io::Error::last_os_error());
            let fd = std::os::fd::OwnedFd::from_raw_fd(raw);
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let bound = libc::bind(fd.as_raw_fd(), (&raw const addr).cast(), len);
            assert_eq!(bound, 0, "bind 127.0.0.1:0: {}", std::io::Error::last_os_error());
            let mut len = len;
            let named = libc::getsockname(fd.as_raw_fd(), (&raw mut addr).cast(), &mut len);
            assert_eq!(named, 0, "getsockname: {}", std::io::Error::last_os_error());
            let port = u16::from_be(addr.sin_port);
            RefusedPort { _fd: fd, addr: SocketAddr::from(([127, 0, 0, 1], port)) }
        }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

fn serve(stream: TcpStream, reply: MockReply, recorded: &Mutex<Vec<Recorded>>) {
    let _ = stream.set_read_timeout(Some(SOCKET_TIMEOUT));
    let _ = stream.set_write_timeout(Some(SOCKET_TIMEOUT));
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    let Some(request) = read_request(&mut reader, &mut writer) else { return };
    recorded.lock().unwrap().push(request);
    if !reply.delay.is_zero() {
        thread::sleep(reply.delay);
    }
    if reply.close {
        return;
    }
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\nconnection: close\r\n\r\n", reply.body.len()));
    let _ = writer.write_all(head.as_bytes());
    let _ = writer.write_all(reply.body.as_bytes());
    let _ = writer.flush();
    let _ = writer.shutdown(std::net::Shutdown::Write);
}

fn read_request(reader: &mut BufReader<TcpStream>, writer: &mut TcpStream) -> Option<Recorded> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    let get = |name: &str| {
        headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone())
    };
    if get("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").ok()?;
    }
    let length: usize = get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let body = String::from_utf8_lossy(&body).into_owned();
    Some(Recorded { method, path, headers, body })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Mock",
    }
}
