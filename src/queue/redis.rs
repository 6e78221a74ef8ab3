//! The queue on Redis Streams: `redis://[:PASSWORD@]HOST[:PORT][/DB]` URLs
//! ([`RedisUrl`], whose password is a [`Secret`] that no message shows), one connection
//! ([`Connection`]: RESP2 over a `TcpStream`, each reply within one budget of bytes,
//! [`resp::Bounds`], and of time, [`Timeouts::read`] for the whole reply however the server
//! spreads it over reads), and [`RedisQueue`], the [`Queue`] over a stream, its
//! consumer group, `NAME:results`, `NAME:dead`, `NAME:done` (work-order id → result),
//! `NAME:attempts` (work-order id → attempts that took its lease and have not finished) and
//! `NAME:lease:ID` keys.
//!
//! Hand-written rather than the `redis` crate: a dozen commands, no async runtime, and the
//! compile time CI pays for every dependency (ARCHITECTURE.md).

use std::io::{BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::authority::Permit;
use crate::error::{QueueFailure, Result};
use crate::gateway::Secret;
use crate::queue::resp::{self, Bounds, ReadError, Reply};
use crate::queue::{Completed, Dead, Delivery, Finished, Job, Lease, Leased, Queue, error};

/// Where a Redis server is, and who named it (a connection is opened only to a server a
/// [`Permit`] names: the `--queue` flag, SPEC §24).
#[derive(Clone, Debug)]
pub struct RedisUrl {
    pub host: String,
    pub port: u16,
    pub db: u32,
    pub username: Option<String>,
    pub password: Option<Secret>,
    named_by: Permit<()>,
}

impl RedisUrl {
    /// Parses `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]` (port 6379, database 0 by
    /// default; user and password percent-decoded). The error never holds the password.
    pub fn parse(permit: &Permit<String>) -> std::result::Result<RedisUrl, String> {
        let url = permit.get().as_str();
        let named_by = permit.normalised(());
        let shown = crate::redact::shown_url(url);
        let bad = |why: &str| {
            format!(
                "`{shown}` is not a Redis URL: {why}; write redis://HOST[:PORT][/DB] (a password goes in PACTUM_QUEUE_PASSWORD, or before the host followed by `@`)"
            )
        };
        let rest =
            url.strip_prefix("redis://").ok_or_else(|| bad("it does not start with redis://"))?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (credentials, address) = match authority.rsplit_once('@') {
            Some((c, a)) => (Some(c), a),
            None => (None, authority),
        };
        let (username, password) = match credentials {
            None => (None, None),
            Some(c) => {
                let (user, pass) = c.split_once(':').unwrap_or(("", c));
                let user = percent_decode(user).ok_or_else(|| bad("a bad %-escape in the user"))?;
                let pass =
                    percent_decode(pass).ok_or_else(|| bad("a bad %-escape in the password"))?;
                ((!user.is_empty()).then_some(user), (!pass.is_empty()).then(|| Secret::new(pass)))
            }
        };
        let (host, port) = match address.strip_prefix('[') {
            Some(v6) => {
                let (host, after) = v6.split_once(']').ok_or_else(|| bad("an unclosed `[`"))?;
                (host, after.strip_prefix(':'))
            }
            None => match address.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (address, None),
            },
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            Some(p) => p.parse().map_err(|_| bad("the port is not a number from 1 to 65535"))?,
            None => 6379,
        };
        let db = match path.trim_end_matches('/') {
            "" => 0,
            d => d.parse().map_err(|_| bad("the database is not a number"))?,
        };
        Ok(RedisUrl { host: host.to_string(), port, db, username, password, named_by })
    }

    /// The URL as messages show it: no user, no password.
    pub fn shown(&self) -> String {
        let host =
            if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        format!("redis://{host}:{}/{}", self.port, self.db)
    }
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// How long a connection waits.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    pub connect: Duration,
    /// For one command: sending it and reading its whole reply, every read of it together
    /// (a server that trickles its reply a byte at a time does not extend it). A blocking
    /// read adds its own wait.
    pub read: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts { connect: Duration::from_secs(5), read: Duration::from_secs(10) }
    }
}

/// The connection's socket under the current command's deadline: every read and write
/// waits at most until it, and none starts after it (the one budget of time per reply,
/// SPEC §24).
struct Deadlined {
    stream: TcpStream,
    deadline: Instant,
}

impl Deadlined {
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

impl Write for Deadlined {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.stream.set_write_timeout(Some(left))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

/// One connection to a Redis server.
pub struct Connection {
    url: RedisUrl,
    timeouts: Timeouts,
    bounds: Bounds,
    /// Reads through the buffer, writes to the socket beneath it (`get_mut`).
    stream: BufReader<Deadlined>,
    /// The time the current command has in all.
    budget: Duration,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Connection({})", self.url.shown())
    }
}

impl Connection {
    /// Connects, logs in (`AUTH`) and selects the database.
    pub fn open(url: &RedisUrl, timeouts: Timeouts) -> Result<Connection> {
        let shown = url.shown();
        let unavailable = |why: String| error(&shown, QueueFailure::Unavailable, why);
        let addresses: Vec<_> = (url.host.as_str(), url.port)
            .to_socket_addrs()
            .map_err(|e| unavailable(format!("cannot resolve the host: {e}")))?
            .collect();
        let mut last = None;
        let mut stream = None;
        for address in addresses {
            match crate::authority::connect(&url.named_by, &address, timeouts.connect) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = stream.ok_or_else(|| {
            unavailable(format!(
                "cannot connect: {}; start Redis there, or point --queue at one that runs",
                last.map_or("no address".to_string(), |e| e.to_string())
            ))
        })?;
        stream
            .set_nodelay(true)
            .map_err(|e| unavailable(format!("cannot set the connection up: {e}")))?;
        let stream = Deadlined { stream, deadline: Instant::now() + timeouts.read };
        let mut connection = Connection {
            url: url.clone(),
            timeouts,
            bounds: Bounds::default(),
            stream: BufReader::with_capacity(64 * 1024, stream),
            budget: timeouts.read,
        };
        if let Some(password) = &url.password {
            let reply = match &url.username {
                Some(user) => connection
                    .send(&[b"AUTH", user.as_bytes(), password.expose().as_bytes()], timeouts.read),
                None => connection.send(&[b"AUTH", password.expose().as_bytes()], timeouts.read),
            }?;
            if let Reply::Error(e) = reply {
                // The server's words, scrubbed all the same: a password never reaches a message.
                return Err(unavailable(format!(
                    "the login was refused ({}); check the password in --queue",
                    password.scrub(&e)
                )));
            }
        }
        if url.db != 0 {
            connection.command(&[b"SELECT", url.db.to_string().as_bytes()])?;
        }
        Ok(connection)
    }

    /// The server's URL as messages show it.
    pub fn shown(&self) -> String {
        self.url.shown()
    }

    /// Sends a command and reads its reply, both within [`Timeouts::read`]; an error reply
    /// is `queue_protocol_error` (`queue_unavailable` for a login the server asks for, or
    /// a reply not complete in time).
    pub fn command(&mut self, args: &[&[u8]]) -> Result<Reply> {
        self.command_within(args, self.timeouts.read)
    }

    fn command_within(&mut self, args: &[&[u8]], budget: Duration) -> Result<Reply> {
        match self.send(args, budget)? {
            Reply::Error(e) => {
                let failure = if e.starts_with("NOAUTH") || e.starts_with("WRONGPASS") {
                    QueueFailure::Unavailable
                } else {
                    QueueFailure::Protocol
                };
                let name = String::from_utf8_lossy(args.first().copied().unwrap_or_default());
                Err(error(&self.shown(), failure, format!("{name} failed: {}", self.scrub(&e))))
            }
            reply => Ok(reply),
        }
    }

    /// A command that may block on the server for up to `wait` (`BLOCK`): its reply has
    /// `wait` more time.
    pub fn blocking(&mut self, args: &[&[u8]], wait: Duration) -> Result<Reply> {
        self.command_within(args, self.timeouts.read.saturating_add(wait))
    }

    /// Sends a command and reads its reply, all of it before one deadline `budget` from now.
    fn send(&mut self, args: &[&[u8]], budget: Duration) -> Result<Reply> {
        self.budget = budget;
        self.stream.get_mut().deadline = Instant::now() + budget;
        let bytes = resp::encode(args);
        self.stream.get_mut().write_all(&bytes).map_err(|e| self.io_failed(&e))?;
        resp::read(&mut self.stream, self.bounds).map_err(|e| match e {
            ReadError::Io(e) => self.io_failed(&e),
            ReadError::Protocol(m) => error(&self.shown(), QueueFailure::Protocol, m),
        })
    }

    fn io_failed(&self, e: &std::io::Error) -> crate::Error {
        let what = match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => format!(
                "no complete answer within {:?} (the time one command and its whole reply may take)",
                self.budget
            ),
            _ => format!("the connection failed: {e}"),
        };
        error(&self.shown(), QueueFailure::Unavailable, what)
    }

    fn scrub(&self, text: &str) -> String {
        match &self.url.password {
            Some(p) => p.scrub(text),
            None => text.to_string(),
        }
    }
}

/// What a reply should have been, for a `queue_protocol_error`.
fn shape(queue: &str, command: &str, reply: &Reply) -> crate::Error {
    let mut seen = format!("{reply:?}");
    if seen.len() > 200 {
        let mut cut = 200;
        while !seen.is_char_boundary(cut) {
            cut -= 1;
        }
        seen.truncate(cut);
        seen.push('…');
    }
    error(queue, QueueFailure::Protocol, format!("{command} answered an unexpected reply: {seen}"))
}

/// `[id, [field, value, ...]]` → (id, fields); `None` for a deleted entry.
fn entry(reply: &Reply) -> Option<(String, Vec<(String, String)>)> {
    let [id, fields] = reply.items() else { return None };
    let id = id.text()?;
    let flat: Vec<String> = fields.items().iter().filter_map(Reply::text).collect();
    if !flat.len().is_multiple_of(2) || flat.len() != fields.items().len() {
        return None;
    }
    let fields = flat.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
    Some((id, fields))
}

/// Takes an id's lease, counts the attempt and marks the entry as freshly held, all or
/// nothing: an attempt is counted exactly when it holds the lease (a re-claim that finds the
/// id leased counts nothing). KEYS: lease key, attempts hash, work stream. ARGV: token, ttl
/// (ms), work-order id, group, consumer, entry. Returns the attempt's number, 0 when busy.
const LEASE: &str = "if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then \
       return 0 \
     end \
     redis.call('XCLAIM', KEYS[3], ARGV[4], ARGV[5], '0', ARGV[6], 'JUSTID') \
     return redis.call('HINCRBY', KEYS[2], ARGV[3], 1)";

/// Checked against the lease's token so an attempt whose lease expired and was taken never
/// extends or drops another's.
const RENEW: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";

/// Drops the lease only when it is still this attempt's.
const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     return redis.call('DEL', KEYS[1]) else return 0 end";

/// KEYS: done hash, results stream, work stream, lease key, attempts hash. ARGV: work-order
/// id, group, entry, token, result fields...
const FINISH: &str = "local done = redis.call('HGET', KEYS[1], ARGV[1]) \
     local wrote = 0 \
     if not done then \
       done = redis.call('XADD', KEYS[2], '*', unpack(ARGV, 5)) \
       redis.call('HSET', KEYS[1], ARGV[1], done) \
       wrote = 1 \
     end \
     redis.call('XACK', KEYS[3], ARGV[2], ARGV[3]) \
     if redis.call('GET', KEYS[4]) == ARGV[4] then redis.call('DEL', KEYS[4]) end \
     redis.call('HDEL', KEYS[5], ARGV[1]) \
     return {wrote, done}";

/// KEYS: dead stream, work stream, lease key, attempts hash. ARGV: group, entry, token,
/// work-order id (both empty for an entry that is no work order: no lease, no count),
/// fields... The lease and the count go only with an exhausted work order's dead letter.
const DEAD_LETTER: &str = "redis.call('XADD', KEYS[1], '*', unpack(ARGV, 5)) \
     if ARGV[4] ~= '' then \
       if redis.call('GET', KEYS[3]) == ARGV[3] then redis.call('DEL', KEYS[3]) end \
       redis.call('HDEL', KEYS[4], ARGV[4]) \
     end \
     return redis.call('XACK', KEYS[2], ARGV[1], ARGV[2])";

/// A work stream `NAME` with its consumer group on one connection.
#[derive(Debug)]
pub struct RedisQueue {
    connection: Connection,
    stream: String,
    group: String,
    /// Where the last XAUTOCLAIM scan stopped (`0-0`: from the start).
    cursor: String,
}

impl RedisQueue {
    pub fn open(url: &RedisUrl, stream: &str, group: &str) -> Result<RedisQueue> {
        RedisQueue::open_within(url, stream, group, Timeouts::default())
    }

    /// [`RedisQueue::open`] with other [`Timeouts`] than the default (5 s to connect, 10 s
    /// per command and its whole reply).
    pub fn open_within(
        url: &RedisUrl,
        stream: &str,
        group: &str,
        timeouts: Timeouts,
    ) -> Result<RedisQueue> {
        Ok(RedisQueue {
            connection: Connection::open(url, timeouts)?,
            stream: stream.to_string(),
            group: group.to_string(),
            cursor: "0-0".to_string(),
        })
    }

    fn key(&self, suffix: &str) -> String {
        format!("{}:{suffix}", self.stream)
    }

    fn lease_key(&self, work_order_id: &str) -> String {
        self.key(&format!("lease:{work_order_id}"))
    }

    fn shape(&self, command: &str, reply: &Reply) -> crate::Error {
        shape(&self.connection.shown(), command, reply)
    }

    /// Marks an entry as freshly held by `consumer` (idle time 0) without counting a
    /// delivery: what keeps a running entry from being claimed as orphaned.
    fn touch(&mut self, consumer: &str, entry: &str) -> Result<()> {
        let (stream, group) = (self.stream.clone(), self.group.clone());
        self.connection
            .command(&[
                b"XCLAIM",
                stream.as_bytes(),
                group.as_bytes(),
                consumer.as_bytes(),
                b"0",
                entry.as_bytes(),
                b"JUSTID",
            ])
            .map(drop)
    }

    fn deliveries(&mut self, entry: &str) -> Result<u64> {
        let (stream, group) = (self.stream.clone(), self.group.clone());
        let reply = self.connection.command(&[
            b"XPENDING",
            stream.as_bytes(),
            group.as_bytes(),
            entry.as_bytes(),
            entry.as_bytes(),
            b"1",
        ])?;
        match reply.items().first().map(Reply::items) {
            Some([_, _, _, Reply::Integer(n)]) => Ok(u64::try_from(*n).unwrap_or(0)),
            _ => Err(self.shape("XPENDING", &reply)),
        }
    }

    fn claim_orphan(&mut self, consumer: &str, claim_idle: Duration) -> Result<Option<Delivery>> {
        let (stream, group, cursor) =
            (self.stream.clone(), self.group.clone(), self.cursor.clone());
        let idle = claim_idle.as_millis().to_string();
        let reply = self.connection.command(&[
            b"XAUTOCLAIM",
            stream.as_bytes(),
            group.as_bytes(),
            consumer.as_bytes(),
            idle.as_bytes(),
            cursor.as_bytes(),
            b"COUNT",
            b"1",
        ])?;
        let items = reply.items();
        let (Some(next), Some(claimed)) = (items.first().and_then(Reply::text), items.get(1))
        else {
            return Err(self.shape("XAUTOCLAIM", &reply));
        };
        self.cursor = next;
        let Some((entry, fields)) = claimed.items().first().and_then(entry) else {
            return Ok(None);
        };
        let deliveries = self.deliveries(&entry)?;
        Ok(Some(Delivery { entry, fields, deliveries }))
    }
}

impl Queue for RedisQueue {
    fn prepare(&mut self) -> Result<()> {
        let (stream, group) = (self.stream.clone(), self.group.clone());
        let created = self.connection.command(&[
            b"XGROUP",
            b"CREATE",
            stream.as_bytes(),
            group.as_bytes(),
            b"0",
            b"MKSTREAM",
        ]);
        match created {
            Ok(_) => Ok(()),
            Err(crate::Error::Queue { message, .. }) if message.contains("BUSYGROUP") => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn submit(&mut self, job: &Job) -> Result<String> {
        let stream = self.stream.clone();
        let fields = job.to_fields();
        let mut args: Vec<&[u8]> = vec![b"XADD", stream.as_bytes(), b"*"];
        for (k, v) in &fields {
            args.push(k.as_bytes());
            args.push(v.as_bytes());
        }
        let reply = self.connection.command(&args)?;
        reply.text().ok_or_else(|| self.shape("XADD", &reply))
    }

    fn next(
        &mut self,
        consumer: &str,
        claim_idle: Duration,
        wait: Duration,
    ) -> Result<Option<Delivery>> {
        if let Some(orphan) = self.claim_orphan(consumer, claim_idle)? {
            return Ok(Some(orphan));
        }
        let (stream, group) = (self.stream.clone(), self.group.clone());
        let block = wait.as_millis().max(1).to_string();
        let reply = self.connection.blocking(
            &[
                b"XREADGROUP",
                b"GROUP",
                group.as_bytes(),
                consumer.as_bytes(),
                b"COUNT",
                b"1",
                b"BLOCK",
                block.as_bytes(),
                b"STREAMS",
                stream.as_bytes(),
                b">",
            ],
            wait,
        )?;
        if reply.is_nil() {
            return Ok(None);
        }
        let first = reply.items().first().map(Reply::items).and_then(|s| s.get(1));
        let Some((entry, fields)) = first.and_then(|e| e.items().first()).and_then(entry) else {
            return Err(self.shape("XREADGROUP", &reply));
        };
        Ok(Some(Delivery { entry, fields, deliveries: 1 }))
    }

    fn completed(&mut self, work_order_id: &str) -> Result<Option<String>> {
        let done = self.key("done");
        let reply =
            self.connection.command(&[b"HGET", done.as_bytes(), work_order_id.as_bytes()])?;
        Ok(reply.text())
    }

    fn lease(&mut self, consumer: &str, lease: &Lease, ttl: Duration) -> Result<Leased> {
        let (key, attempts, stream, group) = (
            self.lease_key(&lease.work_order_id),
            self.key("attempts"),
            self.stream.clone(),
            self.group.clone(),
        );
        let ms = ttl.as_millis().max(1).to_string();
        // Held from now (the script also restarts the entry's idle time, so it cannot be
        // claimed as orphaned while the lease stands), and counted as one attempt.
        let reply = self.connection.command(&[
            b"EVAL",
            LEASE.as_bytes(),
            b"3",
            key.as_bytes(),
            attempts.as_bytes(),
            stream.as_bytes(),
            lease.token.as_bytes(),
            ms.as_bytes(),
            lease.work_order_id.as_bytes(),
            group.as_bytes(),
            consumer.as_bytes(),
            lease.entry.as_bytes(),
        ])?;
        match reply {
            Reply::Integer(0) => Ok(Leased::Busy),
            Reply::Integer(n) if n > 0 => Ok(Leased::Taken { attempt: n.unsigned_abs() }),
            other => Err(self.shape("EVAL (lease)", &other)),
        }
    }

    fn renew(&mut self, consumer: &str, leases: &[Lease], ttl: Duration) -> Result<Vec<Lease>> {
        let ms = ttl.as_millis().max(1).to_string();
        let mut lost = Vec::new();
        for lease in leases {
            let key = self.lease_key(&lease.work_order_id);
            let reply = self.connection.command(&[
                b"EVAL",
                RENEW.as_bytes(),
                b"1",
                key.as_bytes(),
                lease.token.as_bytes(),
                ms.as_bytes(),
            ])?;
            if reply == Reply::Integer(1) {
                self.touch(consumer, &lease.entry)?;
            } else {
                lost.push(lease.clone());
            }
        }
        Ok(lost)
    }

    fn release(&mut self, lease: &Lease) -> Result<()> {
        let key = self.lease_key(&lease.work_order_id);
        self.connection
            .command(&[b"EVAL", RELEASE.as_bytes(), b"1", key.as_bytes(), lease.token.as_bytes()])
            .map(drop)
    }

    fn finish(&mut self, lease: &Lease, fields: &[(String, String)]) -> Result<Finished> {
        let (done, results, stream, key, attempts, group) = (
            self.key("done"),
            self.key("results"),
            self.stream.clone(),
            self.lease_key(&lease.work_order_id),
            self.key("attempts"),
            self.group.clone(),
        );
        let mut args: Vec<&[u8]> = vec![
            b"EVAL",
            FINISH.as_bytes(),
            b"5",
            done.as_bytes(),
            results.as_bytes(),
            stream.as_bytes(),
            key.as_bytes(),
            attempts.as_bytes(),
            lease.work_order_id.as_bytes(),
            group.as_bytes(),
            lease.entry.as_bytes(),
            lease.token.as_bytes(),
        ];
        for (k, v) in fields {
            args.push(k.as_bytes());
            args.push(v.as_bytes());
        }
        let reply = self.connection.command(&args)?;
        match reply.items() {
            [Reply::Integer(1), id] if id.text().is_some() => {
                Ok(Finished::Written(id.text().unwrap_or_default()))
            }
            [Reply::Integer(0), id] if id.text().is_some() => {
                Ok(Finished::AlreadyDone(id.text().unwrap_or_default()))
            }
            _ => Err(self.shape("EVAL (finish)", &reply)),
        }
    }

    fn acknowledge(&mut self, entry: &str) -> Result<()> {
        let (stream, group) = (self.stream.clone(), self.group.clone());
        self.connection
            .command(&[b"XACK", stream.as_bytes(), group.as_bytes(), entry.as_bytes()])
            .map(drop)
    }

    fn dead_letter(&mut self, delivery: &Delivery, why: &Dead<'_>) -> Result<()> {
        let (dead, stream, group, attempts_key) =
            (self.key("dead"), self.stream.clone(), self.group.clone(), self.key("attempts"));
        let (lease_key, token, work_order_id) = match why {
            Dead::Exhausted { lease, .. } => (
                self.lease_key(&lease.work_order_id),
                lease.token.clone(),
                lease.work_order_id.clone(),
            ),
            Dead::NotAJob(_) => (self.key("lease:"), String::new(), String::new()),
        };
        let (reason, attempts) = (why.reason(), why.attempts().to_string());
        let deliveries = delivery.deliveries.to_string();
        let mut args: Vec<&[u8]> = vec![
            b"EVAL",
            DEAD_LETTER.as_bytes(),
            b"4",
            dead.as_bytes(),
            stream.as_bytes(),
            lease_key.as_bytes(),
            attempts_key.as_bytes(),
            group.as_bytes(),
            delivery.entry.as_bytes(),
            token.as_bytes(),
            work_order_id.as_bytes(),
            b"entry",
            delivery.entry.as_bytes(),
            b"reason",
            reason.as_bytes(),
            b"attempts",
            attempts.as_bytes(),
            b"deliveries",
            deliveries.as_bytes(),
        ];
        for (k, v) in &delivery.fields {
            args.push(k.as_bytes());
            args.push(v.as_bytes());
        }
        self.connection.command(&args).map(drop)
    }

    fn results(&mut self, after: &str, wait: Option<Duration>) -> Result<Vec<Completed>> {
        let results = self.key("results");
        let reply = match wait {
            None => {
                let start = if after == "0" { "-".to_string() } else { format!("({after}") };
                self.connection.command(&[
                    b"XRANGE",
                    results.as_bytes(),
                    start.as_bytes(),
                    b"+",
                    b"COUNT",
                    b"100",
                ])?
            }
            Some(wait) => {
                let block = wait.as_millis().max(1).to_string();
                let reply = self.connection.blocking(
                    &[
                        b"XREAD",
                        b"COUNT",
                        b"100",
                        b"BLOCK",
                        block.as_bytes(),
                        b"STREAMS",
                        results.as_bytes(),
                        after.as_bytes(),
                    ],
                    wait,
                )?;
                let entries = reply.items().first().map(Reply::items).and_then(|s| s.get(1));
                entries.cloned().unwrap_or(Reply::Array(Some(Vec::new())))
            }
        };
        Ok(reply
            .items()
            .iter()
            .filter_map(entry)
            .filter_map(|(id, fields)| Completed::from_fields(&id, &fields))
            .collect())
    }

    fn dead_letters(&mut self, after: &str) -> Result<Vec<crate::queue::Entry>> {
        let dead = self.key("dead");
        let start = if after == "0" { "-".to_string() } else { format!("({after}") };
        let reply = self.connection.command(&[
            b"XRANGE",
            dead.as_bytes(),
            start.as_bytes(),
            b"+",
            b"COUNT",
            b"100",
        ])?;
        Ok(reply.items().iter().filter_map(entry).collect())
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests play the application: their URLs are permits
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_their_defaults() {
        let u =
            RedisUrl::parse(&Permit::application("redis://127.0.0.1:6390/2".to_string())).unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.db, u.password.is_none()),
            ("127.0.0.1", 6390, 2, true)
        );
        let u = RedisUrl::parse(&Permit::application("redis://localhost".to_string())).unwrap();
        assert_eq!((u.port, u.db), (6379, 0));
        let u = RedisUrl::parse(&Permit::application("redis://:p%40ss@[::1]:7000/".to_string()))
            .unwrap();
        assert_eq!((u.host.as_str(), u.port, u.password.unwrap().expose()), ("::1", 7000, "p@ss"));
        let u =
            RedisUrl::parse(&Permit::application("redis://alice:pw@h:1/3".to_string())).unwrap();
        assert_eq!(
            (u.username.as_deref(), u.shown()),
            (Some("alice"), "redis://h:1/3".to_string())
        );
    }

    #[test]
    fn a_bad_url_says_why_and_never_shows_its_password() {
        for (url, why) in [
            ("http://h:1/0", "redis://"),
            ("redis://:hunter2pass@h:port/0", "port"),
            ("redis://:hunter2pass@h:1/x", "database"),
            ("redis://:hunter2pass@/0", "no host"),
            ("redis://:hunter2pass%zz@h/0", "%-escape"),
        ] {
            let e = RedisUrl::parse(&Permit::application(url.to_string())).unwrap_err();
            assert!(e.contains(why), "{url}: {e}");
            assert!(!e.contains("hunter2pass"), "{url}: {e}");
        }
    }

    /// A server on 127.0.0.1 that answers every connection with the start of a reply and
    /// then one more byte every `every`, `bytes` bytes in all, then closes.
    fn trickling(every: Duration, bytes: usize) -> RedisUrl {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                std::thread::spawn(move || {
                    let _ = stream.write_all(b"+");
                    for _ in 0..bytes {
                        std::thread::sleep(every);
                        if stream.write_all(b"x").is_err() {
                            return;
                        }
                    }
                });
            }
        });
        RedisUrl::parse(&Permit::application(format!("redis://127.0.0.1:{port}/0"))).unwrap()
    }

    #[test]
    fn a_reply_trickled_a_byte_at_a_time_is_cut_at_its_one_deadline() {
        // Each byte comes well within the reply's time, so a limit per socket read would
        // wait for all 400 (20 s) and then fail on the closed connection instead.
        let url = trickling(Duration::from_millis(50), 400);
        let timeouts =
            Timeouts { connect: Duration::from_secs(5), read: Duration::from_millis(300) };
        let mut connection = Connection::open(&url, timeouts).unwrap();
        for blocking in [false, true] {
            let e = if blocking {
                connection.blocking(&[b"XREAD"], Duration::from_millis(200))
            } else {
                connection.command(&[b"PING"])
            }
            .unwrap_err();
            assert_eq!(e.code(), crate::Code::QueueUnavailable, "{e}");
            let within = if blocking { "500ms" } else { "300ms" };
            assert!(e.to_string().contains(&format!("no complete answer within {within}")), "{e}");
            // The next case on a connection of its own (this one is mid-reply).
            connection = Connection::open(&url, timeouts).unwrap();
        }
    }

    #[test]
    fn an_entry_reply_becomes_fields_and_a_malformed_one_none() {
        let b = |s: &str| Reply::Bulk(Some(s.as_bytes().to_vec()));
        let good = Reply::Array(Some(vec![b("1-0"), Reply::Array(Some(vec![b("a"), b("1")]))]));
        assert_eq!(entry(&good), Some(("1-0".into(), vec![("a".into(), "1".into())])));
        let odd = Reply::Array(Some(vec![b("1-0"), Reply::Array(Some(vec![b("a")]))]));
        assert_eq!(entry(&odd), None);
        let deleted = Reply::Array(Some(vec![b("1-0"), Reply::Array(None)]));
        assert_eq!(entry(&deleted), Some(("1-0".into(), vec![])));
    }
}
