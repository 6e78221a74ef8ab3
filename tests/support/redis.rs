//! A real Redis for the queue tests (SPEC §22): `redis-server` from the distribution's
//! package, started on a free loopback port with nothing saved to disk, and killed when the
//! value is dropped. A missing `redis-server` fails the test, saying how to install it (these
//! tests are ignored in a plain `cargo test`, which must pass on a machine without Redis;
//! `.ci/run` installs the package and runs them with `--include-ignored`).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pactum::queue::redis::{Connection, RedisUrl, Timeouts};
use pactum::queue::resp::Reply;

/// A running `redis-server`.
pub struct RedisServer {
    child: Child,
    port: u16,
    password: Option<String>,
}

impl RedisServer {
    pub fn start() -> RedisServer {
        RedisServer::launch(None)
    }

    /// A server that asks for `password` (`requirepass`).
    pub fn with_password(password: &str) -> RedisServer {
        RedisServer::launch(Some(password))
    }

    fn launch(password: Option<&str>) -> RedisServer {
        // redis-server has no `--port 0`: take a free port from the kernel, release it, and
        // start the server on it (another process could take it in between: retried).
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut cmd = Command::new("redis-server");
            cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
                .args(["--appendonly", "no", "--protected-mode", "yes", "--loglevel", "warning"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Some(p) = password {
                cmd.args(["--requirepass", p]);
            }
            let child = match cmd.spawn() {
                Ok(child) => child,
                Err(e) => panic!(
                    "these tests need `redis-server` (SPEC §22: the queue tests run against a \
                     real Redis), which does not start ({e}); install it: \
                     `apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis`"
                ),
            };
            let mut server = RedisServer { child, port, password: password.map(str::to_string) };
            if server.wait_ready(Duration::from_secs(10)) {
                return server;
            }
            let _ = server.child.kill();
            let _ = server.child.wait();
        }
        panic!("redis-server did not start on a free loopback port in five attempts");
    }

    /// Waits until the server answers PING (or NOAUTH, which also means it is up).
    fn wait_ready(&mut self, within: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < within {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false; // exited: the port was taken
            }
            if let Ok(stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
                let mut writer = stream.try_clone().unwrap();
                let mut line = String::new();
                if writer.write_all(b"PING\r\n").is_ok()
                    && BufReader::new(stream).read_line(&mut line).is_ok()
                    && (line.starts_with("+PONG") || line.starts_with("-NOAUTH"))
                {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT/0` (with the password, when the server has one).
    pub fn url(&self) -> String {
        match &self.password {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}/0", self.port),
            None => format!("redis://127.0.0.1:{}/0", self.port),
        }
    }

    /// A connection for the test's own questions.
    pub fn connect(&self) -> Connection {
        Connection::open(
            &RedisUrl::parse(&pactum::authority::Permit::application(self.url())).unwrap(),
            Timeouts::default(),
        )
        .unwrap()
    }

    /// Runs one command (arguments as text).
    pub fn command(&self, args: &[&str]) -> Reply {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.connect().command(&bytes).unwrap()
    }

    /// The length of a stream.
    pub fn xlen(&self, stream: &str) -> i64 {
        match self.command(&["XLEN", stream]) {
            Reply::Integer(n) => n,
            other => panic!("XLEN {stream}: {other:?}"),
        }
    }

    /// Every entry of a stream: (id, fields as a map).
    pub fn entries(
        &self,
        stream: &str,
    ) -> Vec<(String, std::collections::BTreeMap<String, String>)> {
        let reply = self.command(&["XRANGE", stream, "-", "+"]);
        reply
            .items()
            .iter()
            .map(|e| {
                let id = e.items()[0].text().unwrap();
                let flat: Vec<String> =
                    e.items()[1].items().iter().map(|f| f.text().unwrap()).collect();
                (id, flat.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect())
            })
            .collect()
    }

    /// Entries of the group's pending list (delivered, not acknowledged).
    pub fn pending(&self, stream: &str, group: &str) -> i64 {
        match self.command(&["XPENDING", stream, group]).items().first() {
            Some(Reply::Integer(n)) => *n,
            other => panic!("XPENDING: {other:?}"),
        }
    }

    /// Waits until `check` holds (true) or `within` passes (false).
    pub fn wait_for(&self, within: Duration, mut check: impl FnMut(&RedisServer) -> bool) -> bool {
        let started = Instant::now();
        while started.elapsed() < within {
            if check(self) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        check(self)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
