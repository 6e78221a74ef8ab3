//! An OpenTelemetry collector for the tests: OTLP over HTTP on 127.0.0.1, each request's
//! body decoded as an `ExportTraceServiceRequest` with OpenTelemetry's own protobuf
//! definitions (`opentelemetry-proto`, `prost`): what a real collector would read, not what
//! pactum meant to send. A body that does not decode fails the test that reads the spans.
//!
//! Answers 200 with an empty `ExportTraceServiceResponse`, the status it was started with
//! ([`Collector::refusing`]), or as a hostile collector would ([`Answer`],
//! [`Collector::answering`]): never, late, endlessly, with a redirect, a reset or garbage.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;
use serde_json::{Value, json};

/// One span as the collector decoded it.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    /// `SPAN_KIND_*` as a number (1 internal, 3 client).
    pub kind: i32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: BTreeMap<String, Value>,
    /// 0 unset, 1 ok, 2 error.
    pub status_code: i32,
    pub status_message: String,
    /// The resource's attributes (`service.name`, ...).
    pub resource: BTreeMap<String, Value>,
    pub scope: String,
    /// The span's size in the request, in bytes (its protobuf encoding).
    pub size: usize,
}

impl Span {
    pub fn attr(&self, key: &str) -> &Value {
        self.attributes.get(key).unwrap_or(&Value::Null)
    }

    pub fn text(&self, key: &str) -> &str {
        self.attr(key).as_str().unwrap_or("")
    }
}

/// A request as received: its path, headers (names in lowercase), content type and raw body,
/// and the status it was answered with (0: none).
#[derive(Clone, Debug)]
pub struct Request {
    pub answered: u16,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// How a collector answers each export request it read.
#[derive(Clone, Debug)]
pub enum Answer {
    /// This status, with an empty body.
    Status(u16),
    /// Nothing, ever: the connection stays open until the collector is dropped.
    Silent,
    /// 200, after this long.
    After(Duration),
    /// 200 with a body announced as 1 GiB that never ends.
    Endless,
    /// A redirect (307) to this URL.
    Redirect(String),
    /// The connection reset, the request unread.
    Reset,
    /// Bytes that are no HTTP, then the connection closed.
    Garbage,
    /// 503 for the first `n` requests, then 200.
    FirstUnavailable(usize),
}

pub struct Collector {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    connections: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Collector {
    /// A collector that takes every export.
    pub fn start() -> Collector {
        Collector::answering(Answer::Status(200))
    }

    /// A collector that answers every export with `status`.
    pub fn refusing(status: u16) -> Collector {
        Collector::answering(Answer::Status(status))
    }

    /// A collector on 127.0.0.1 answering as `answer` says.
    pub fn answering(answer: Answer) -> Collector {
        Collector::on("127.0.0.1:0", answer)
    }

    /// A collector listening on `addr` (`[::1]:0` for IPv6).
    pub fn on(addr: &str, answer: Answer) -> Collector {
        let listener = TcpListener::bind(addr).unwrap_or_else(|e| panic!("bind {addr}: {e}"));
        let addr = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (recorded, stopping) = (Arc::clone(&requests), Arc::clone(&stop));
        let counted = Arc::clone(&connections);
        thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                counted.fetch_add(1, Ordering::SeqCst);
                let (recorded, stopping) = (Arc::clone(&recorded), Arc::clone(&stopping));
                let answer = answer.clone();
                thread::spawn(move || serve(stream, &answer, &recorded, &stopping));
            }
        });
        Collector { addr, requests, connections, stop }
    }

    /// `http://127.0.0.1:PORT` (`http://[::1]:PORT`), the base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Connections accepted so far (a reset request is never read, so never recorded).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Every span received so far and accepted (answered 2xx), decoded.
    pub fn spans(&self) -> Vec<Span> {
        let accepted = self.requests().into_iter().filter(|r| (200..300).contains(&r.answered));
        accepted.flat_map(|r| decode(&r.body)).collect()
    }

    /// The spans once `n` have arrived (a worker's batches go out on a timer), at most 20 s.
    pub fn wait_for(&self, n: usize) -> Vec<Span> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let spans = self.spans();
            if spans.len() >= n || Instant::now() > deadline {
                return spans;
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

/// The spans of one export request's body; panics when it is not an OTLP trace request.
pub fn decode(body: &[u8]) -> Vec<Span> {
    let request =
        ExportTraceServiceRequest::decode(body).expect("an OTLP ExportTraceServiceRequest");
    let mut out = Vec::new();
    for rs in request.resource_spans {
        let resource = rs.resource.map(|r| attributes(&r.attributes)).unwrap_or_default();
        for ss in rs.scope_spans {
            let scope = ss.scope.map(|s| s.name).unwrap_or_default();
            for s in ss.spans {
                let size = s.encoded_len();
                let status = s.status.unwrap_or_default();
                out.push(Span {
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent_span_id: hex(&s.parent_span_id),
                    name: s.name,
                    kind: s.kind,
                    start_ns: s.start_time_unix_nano,
                    end_ns: s.end_time_unix_nano,
                    attributes: attributes(&s.attributes),
                    status_code: status.code,
                    status_message: status.message,
                    resource: resource.clone(),
                    scope: scope.clone(),
                    size,
                });
            }
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attributes(kvs: &[KeyValue]) -> BTreeMap<String, Value> {
    kvs.iter().map(|kv| (kv.key.clone(), kv.value.as_ref().map_or(Value::Null, any))).collect()
}

fn any(v: &AnyValue) -> Value {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => json!(s),
        Some(any_value::Value::BoolValue(b)) => json!(b),
        Some(any_value::Value::IntValue(i)) => json!(i),
        Some(any_value::Value::DoubleValue(d)) => json!(d),
        Some(any_value::Value::ArrayValue(a)) => Value::Array(a.values.iter().map(any).collect()),
        Some(any_value::Value::KvlistValue(l)) => {
            Value::Object(attributes(&l.values).into_iter().collect())
        }
        Some(any_value::Value::BytesValue(b)) => json!(hex(b)),
        _ => Value::Null,
    }
}

fn serve(stream: TcpStream, answer: &Answer, recorded: &Mutex<Vec<Request>>, stop: &AtomicBool) {
    if let Answer::Reset = answer {
        // Closing a socket whose received bytes were never read resets the connection.
        thread::sleep(Duration::from_millis(50));
        return;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(&stream);
    // Keep-alive: serve requests on this connection until it closes.
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let (mut length, mut content_type, mut headers) = (0usize, String::new(), Vec::new());
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_string());
                match name.as_str() {
                    "content-length" => length = value.parse().unwrap_or(0),
                    "content-type" => content_type = value.clone(),
                    _ => {}
                }
                headers.push((name, value));
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let status_of = {
            let mut requests = recorded.lock().unwrap();
            let status = match answer {
                Answer::Status(code) => *code,
                Answer::FirstUnavailable(first) if requests.len() < *first => 503,
                Answer::FirstUnavailable(_) | Answer::After(_) => 200,
                Answer::Redirect(_) => 307,
                // No answer a client could finish reading.
                Answer::Silent | Answer::Endless | Answer::Reset | Answer::Garbage => 0,
            };
            requests.push(Request { answered: status, path, headers, content_type, body });
            status
        };
        let status = |status: u16| {
            format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
                if status == 200 { "OK" } else { "Refused" }
            )
        };
        let answer = match answer {
            Answer::Status(_) | Answer::FirstUnavailable(_) => status(status_of),
            Answer::After(delay) => {
                thread::sleep(*delay);
                status(200)
            }
            Answer::Silent => {
                while !stop.load(Ordering::SeqCst) {
                    thread::sleep(Duration::from_millis(50));
                }
                return;
            }
            Answer::Endless => {
                let _ = (&stream).write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 1073741824\r\n\r\n",
                );
                let zeros = [0u8; 64 * 1024];
                while !stop.load(Ordering::SeqCst) && (&stream).write_all(&zeros).is_ok() {}
                return;
            }
            Answer::Redirect(to) => format!(
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: {to}\r\ncontent-length: 0\r\n\r\n"
            ),
            Answer::Garbage => {
                let _ = (&stream).write_all(b"\x00\xffSSH-2.0-nothing like HTTP\r\n\r\n");
                return;
            }
            Answer::Reset => unreachable!("answered above"),
        };
        if (&stream).write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}
