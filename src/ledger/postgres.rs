//! The ledger in PostgreSQL (SPEC §27): the same chain as the JSONL file, one row per
//! record, for a fleet of workers that append to one ledger at once.
//!
//! A row holds a record's `seq`, its `hash` and its `line`: the very bytes the JSONL file
//! would hold (`ledger::line`'s one form, without the newline). Nothing else describes a
//! record: the writer makes the line with `line::encode` and every reader hands the line to
//! the same checks as a file's line (`line::decode`, the chain walk in `ledger.rs`), so a
//! ledger copied out of the table (`pactum ledger copy`) is byte for byte the file the same
//! appends would have written, and verifies as one.
//!
//! **Architecture invariant:** an append is one transaction that locks the table against
//! other writers (`LOCK TABLE … IN EXCLUSIVE MODE`: readers go on), reads the head (the row
//! of the highest `seq`, its line decoded and its hash checked against its content, as a
//! file's last line is), and inserts the next record; `seq` is the primary key and `hash`
//! unique, so even a writer that skipped the lock could not fork the chain. A writer killed
//! in the middle of an append leaves nothing: the server rolls its transaction back.
//!
//! The connection goes through the one door for connections ([`crate::authority::connect`],
//! to an address of the host a [`Permit`] names); `tokio-postgres` speaks the protocol over
//! that socket (`Config::connect_raw`), driven by a current-thread runtime that lives in
//! the [`Database`] value (no thread of its own). Every exchange with the server is bounded
//! by one deadline; a connection that fails is dropped and opened again by the next
//! operation, which waits for the server up to that deadline (a database restarted under
//! a running worker). When a commit was sent and its answer lost, the append looks the
//! record up by its hash after reconnecting: a record is reported written exactly when it
//! is in the table.

use std::future::Future;
use std::net::ToSocketAddrs;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::authority::Permit;
use crate::digest::ZERO_HASH;
use crate::error::{Error, Result};

use super::line;

/// The table a ledger URL names when it names none (`?table=NAME`).
pub const DEFAULT_TABLE: &str = "pactum_ledger";

/// The deadline of one operation on the database (an append, a page of a read), waiting
/// for a server that restarts included, unless the URL says `?connect_timeout=SECONDS`.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Rows read at once by the readers (a page of the walk, oldest or newest first): memory is
/// bounded by this many records, however long the ledger.
const PAGE: i64 = 500;

/// A `postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?table=NAME]` URL, parsed. The password (from
/// the URL or `PGPASSWORD`, which the binary reads) is never shown: [`Url::shown`] is the
/// URL without it.
#[derive(Clone)]
pub struct Url {
    permit: Permit<String>,
    user: String,
    password: Option<crate::gateway::Secret>,
    host: String,
    port: u16,
    dbname: String,
    table: String,
    /// How long one operation waits for the server (`?connect_timeout=SECONDS`).
    timeout: Duration,
    shown: String,
}

impl std::fmt::Debug for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Whether `text` is a database ledger URL (`postgres://` or `postgresql://`) rather than a
/// file.
pub fn is_url(text: &str) -> bool {
    let lower = text.trim_start().get(..13).unwrap_or(text).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

impl Url {
    /// Parses the URL a permit names; `password` (the binary's `PGPASSWORD`) is used when the
    /// URL has none. `usage_error` names what is wrong, without the password.
    pub fn parse(url: &Permit<String>, password: Option<crate::gateway::Secret>) -> Result<Url> {
        let text = url.get().trim();
        let bad = |why: &str| Error::Usage {
            message: format!(
                "`{}` is not a PostgreSQL ledger URL: {why}; write postgres://USER@HOST:PORT/DB (the password in PGPASSWORD)",
                crate::redact::shown_url(text)
            ),
        };
        let rest = ["postgres://", "postgresql://"]
            .iter()
            .find_map(|scheme| {
                text.get(..scheme.len())
                    .filter(|s| s.eq_ignore_ascii_case(scheme))
                    .map(|_| &text[scheme.len()..])
            })
            .ok_or_else(|| bad("it does not start with postgres://"))?;
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (authority, dbname) =
            rest.split_once('/').ok_or_else(|| bad("it names no database"))?;
        let (userinfo, hostport) =
            authority.rsplit_once('@').ok_or_else(|| bad("it names no user (USER@HOST)"))?;
        let (user, url_password) = match userinfo.split_once(':') {
            Some((u, p)) => (u, Some(p)),
            None => (userinfo, None),
        };
        let user = decode(user).ok_or_else(|| bad("its user is not valid percent-encoding"))?;
        let url_password = url_password
            .map(|p| decode(p).ok_or_else(|| bad("its password is not valid percent-encoding")))
            .transpose()?;
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || hostport.starts_with('[') => {
                (h, p.parse::<u16>().map_err(|_| bad("its port is not a number"))?)
            }
            _ => (hostport, 5432),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let dbname =
            decode(dbname).ok_or_else(|| bad("its database is not valid percent-encoding"))?;
        if user.is_empty() || host.is_empty() || dbname.is_empty() {
            return Err(bad("a user, a host and a database are all needed"));
        }
        let mut table = DEFAULT_TABLE.to_string();
        let mut timeout = TIMEOUT;
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("table", name)) if is_identifier(name) => table = name.to_string(),
                Some(("table", _)) => {
                    return Err(bad(
                        "`table` must be a plain name (lower-case letters, digits and _, not starting with a digit)",
                    ));
                }
                Some(("connect_timeout", secs)) => {
                    timeout = secs
                        .parse::<u64>()
                        .ok()
                        .filter(|s| (1..=3600).contains(s))
                        .map(Duration::from_secs)
                        .ok_or_else(|| {
                            bad("`connect_timeout` must be whole seconds from 1 to 3600")
                        })?;
                }
                _ => {
                    return Err(bad(
                        "the options it takes are ?table=NAME and connect_timeout=SECONDS",
                    ));
                }
            }
        }
        let shown = format!(
            "postgres://{user}@{}:{port}/{dbname}{}",
            if host.contains(':') { format!("[{host}]") } else { host.clone() },
            if table == DEFAULT_TABLE { String::new() } else { format!("?table={table}") }
        );
        let password = url_password.map(crate::gateway::Secret::new).or(password);
        Ok(Url { permit: url.clone(), user, password, host, port, dbname, table, timeout, shown })
    }

    /// The URL as messages show it: no password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The password, for the process's redactor (it must never be printed).
    pub fn password(&self) -> Option<&str> {
        self.password.as_ref().map(|p| p.expose())
    }

    /// The table the records are in.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// How long one operation waits for the server, reconnecting included.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// `%XX` decoded (a URL's user, password and database).
fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn is_identifier(name: &str) -> bool {
    name.len() <= 63
        && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Why an exchange with the server failed: the connection (worth waiting for the server
/// again), or the server refused a statement (not).
enum Failure {
    Connection(String),
    Refused(String),
}

impl Failure {
    fn of(e: &tokio_postgres::Error) -> Failure {
        match e.as_db_error() {
            // Class 08 (connection exception) and 57 (operator intervention: the server
            // shutting down) are the connection's; anything else is the statement's.
            Some(db) if !matches!(&db.code().code()[..2], "08" | "57") => {
                Failure::Refused(format!("{} ({})", db.message(), db.code().code()))
            }
            Some(db) => Failure::Connection(db.message().to_string()),
            None => Failure::Connection(e.to_string()),
        }
    }

    fn message(&self) -> &str {
        match self {
            Failure::Connection(m) | Failure::Refused(m) => m,
        }
    }
}

/// An open connection to a ledger's database, reopened when it fails.
pub(crate) struct Database {
    url: Url,
    runtime: tokio::runtime::Runtime,
    client: Option<Arc<tokio_postgres::Client>>,
    /// The deadline of one operation (an append, a page of a read), reconnecting included.
    timeout: Duration,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("url", &self.url).finish_non_exhaustive()
    }
}

/// The row of the head, as the writer and the readers see it: its line.
struct Row {
    seq: i64,
    line: String,
}

impl Database {
    /// Connects to the database `url` names and makes the ledger's table when it has none
    /// (an empty ledger). Fails with `ledger_unavailable` when the server cannot be reached in
    /// `timeout`, refuses the login, or refuses to make the table.
    pub fn open(url: &Url, timeout: Duration) -> Result<Database> {
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
                Error::Internal { message: format!("no runtime for the database: {e}") }
            })?;
        let mut db = Database { url: url.clone(), runtime, client: None, timeout };
        let table = db.url.table.clone();
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {table} (seq bigint PRIMARY KEY, hash char(64) NOT NULL UNIQUE, line text NOT NULL)"
        );
        db.run(|client| {
            let create = create.clone();
            async move {
                // Two first writers at once: the loser of the race waits for the winner's
                // commit, then sees the catalog's unique violation, or the table's row type
                // or the table already there (PostgreSQL raises any of the three); the table
                // exists either way.
                use tokio_postgres::error::SqlState;
                let raced = [
                    SqlState::UNIQUE_VIOLATION,
                    SqlState::DUPLICATE_OBJECT,
                    SqlState::DUPLICATE_TABLE,
                ];
                match client.batch_execute(&create).await {
                    Err(e) if e.code().is_some_and(|c| raced.contains(c)) => Ok(()),
                    other => other,
                }
            }
        })?;
        // A table of that name made by someone else is not a ledger: its columns are checked
        // once here, so no read later meets a value of another type.
        let name = db.url.table.clone();
        let columns = db.run(|client| {
            let name = name.clone();
            async move {
                let q = "SELECT column_name::text, data_type::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position";
                let rows = client.query(q, &[&name]).await?;
                rows.iter()
                    .map(|r| Ok((r.try_get::<_, String>(0)?, r.try_get::<_, String>(1)?)))
                    .collect::<std::result::Result<Vec<(String, String)>, tokio_postgres::Error>>()
            }
        })?;
        let expected = [("seq", "bigint"), ("hash", "character"), ("line", "text")];
        let fits = columns.len() == expected.len()
            && columns.iter().zip(expected).all(|((n, t), (en, et))| n == en && t == et);
        if !fits {
            let have: Vec<String> = columns.iter().map(|(n, t)| format!("{n} {t}")).collect();
            return Err(db.unavailable(&format!(
                "the table {name} is not a pactum ledger (its columns are {}, a ledger's are seq bigint, hash character(64), line text); name another with ?table=NAME",
                if have.is_empty() { "not visible".to_string() } else { have.join(", ") }
            )));
        }
        Ok(db)
    }

    fn unavailable(&self, message: &str) -> Error {
        Error::LedgerUnavailable {
            ledger: self.url.shown.clone(),
            message: self
                .url
                .password()
                .map_or_else(|| message.to_string(), |p| crate::redact::mask_secret(message, p)),
        }
    }

    /// A connection, opened when there is none (waiting for the server until `deadline`).
    fn client(&mut self, deadline: Instant) -> Result<Arc<tokio_postgres::Client>> {
        if let Some(client) = self.client.as_ref().filter(|c| !c.is_closed()) {
            return Ok(Arc::clone(client));
        }
        self.client = None;
        let mut last;
        let mut wait = Duration::from_millis(50);
        loop {
            match self.connect(deadline) {
                Ok(client) => {
                    let client = Arc::new(client);
                    self.client = Some(Arc::clone(&client));
                    return Ok(client);
                }
                Err(Failure::Refused(m)) => return Err(self.unavailable(&m)),
                Err(Failure::Connection(m)) => last = m,
            }
            let now = Instant::now();
            if now + wait >= deadline {
                return Err(self.unavailable(&format!(
                    "could not connect within {:?} ({last}); check that the server runs and listens there",
                    self.timeout
                )));
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_secs(1));
        }
    }

    /// One attempt at a connection: a socket through the door for connections, then the
    /// protocol's start-up and login over it.
    fn connect(&self, deadline: Instant) -> std::result::Result<tokio_postgres::Client, Failure> {
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        let addresses = (self.url.host.as_str(), self.url.port)
            .to_socket_addrs()
            .map_err(|e| Failure::Connection(format!("{}: {e}", self.url.host)))?;
        let mut last = Failure::Connection(format!("{} has no address", self.url.host));
        for address in addresses {
            let stream = match crate::authority::connect(&self.url.permit, &address, left) {
                Ok(s) => s,
                Err(e) => {
                    last = Failure::Connection(format!("{address}: {e}"));
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let mut config = tokio_postgres::Config::new();
            config.user(&self.url.user).dbname(&self.url.dbname).application_name("pactum");
            if let Some(p) = &self.url.password {
                config.password(p.expose());
            }
            let connected = self.runtime.block_on(async {
                stream.set_nonblocking(true).map_err(|e| Failure::Connection(e.to_string()))?;
                let stream = tokio::net::TcpStream::from_std(stream)
                    .map_err(|e| Failure::Connection(e.to_string()))?;
                let login = config.connect_raw(stream, tokio_postgres::NoTls);
                match tokio::time::timeout(left, login).await {
                    Err(_) => Err(Failure::Connection("the login did not finish in time".into())),
                    Ok(Err(e)) => Err(match Failure::of(&e) {
                        // A refused login (a wrong password, an unknown database) is the
                        // server's answer: not worth waiting for.
                        Failure::Connection(m) if e.as_db_error().is_some() => Failure::Refused(m),
                        f => f,
                    }),
                    Ok(Ok(pair)) => Ok(pair),
                }
            });
            match connected {
                Ok((client, connection)) => {
                    // The connection's own task runs while the runtime runs (every
                    // operation is a `block_on` on it).
                    self.runtime.spawn(connection);
                    return Ok(client);
                }
                Err(f @ Failure::Refused(_)) => return Err(f),
                Err(f) => last = f,
            }
        }
        Err(last)
    }

    /// Runs `op` on a connection within one deadline, reconnecting (once the server answers
    /// again) after a failure of the connection; a statement the server refused fails at once.
    fn run<T, F, Fut>(&mut self, op: F) -> Result<T>
    where
        F: Fn(Arc<tokio_postgres::Client>) -> Fut,
        Fut: Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    {
        let deadline = Instant::now() + self.timeout;
        loop {
            let client = self.client(deadline)?;
            let left = deadline.saturating_duration_since(Instant::now());
            let done =
                self.runtime.block_on(async { tokio::time::timeout(left, op(client)).await });
            let failure = match done {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) => Failure::of(&e),
                Err(_) => Failure::Connection("the server did not answer in time".into()),
            };
            self.client = None;
            match failure {
                Failure::Refused(m) => return Err(self.unavailable(&m)),
                Failure::Connection(m) if Instant::now() >= deadline => {
                    return Err(self.unavailable(&format!(
                        "{m}; the server did not answer within {:?}",
                        self.timeout
                    )));
                }
                Failure::Connection(_) => continue,
            }
        }
    }

    /// Appends one record: in one transaction, the table locked against other writers, the
    /// head read and checked (`decode` and its content hash, as a file's last line), then
    /// `make(seq, prev)` (the next `seq` and the head's hash) builds the record and its line,
    /// which is inserted. `written` sees the record after the commit. A failure of the
    /// connection before the commit went out is retried within the deadline; after it, the
    /// record is looked up by its hash (it was written exactly when it is there).
    pub fn append(
        &mut self,
        make: &mut dyn FnMut(u64, String) -> Result<(Value, String)>,
    ) -> Result<Value> {
        let deadline = Instant::now() + self.timeout;
        let table = self.url.table.clone();
        let shown = self.url.shown.clone();
        loop {
            let client = self.client(deadline)?;
            let left = deadline.saturating_duration_since(Instant::now());
            let mut made: Option<(Value, String)> = None;
            let mut commit_sent = false;
            let transaction = async {
                client.batch_execute("BEGIN").await.map_err(Step::Sql)?;
                client
                    .batch_execute(&format!("LOCK TABLE {table} IN EXCLUSIVE MODE"))
                    .await
                    .map_err(Step::Sql)?;
                let head = client
                    .query_opt(
                        &format!("SELECT seq, line FROM {table} ORDER BY seq DESC LIMIT 1"),
                        &[],
                    )
                    .await
                    .map_err(Step::Sql)?
                    .map(|r| {
                        Ok::<_, tokio_postgres::Error>(Row {
                            seq: r.try_get(0)?,
                            line: r.try_get(1)?,
                        })
                    })
                    .transpose()
                    .map_err(Step::Sql)?;
                let (seq, prev) = match head {
                    None => (0, ZERO_HASH.to_string()),
                    Some(row) => head_link(&shown, &row).map_err(Step::Chain)?,
                };
                let (record, line) = make(seq, prev).map_err(Step::Chain)?;
                let hash = record["hash"].as_str().unwrap_or_default().to_string();
                let next = i64::try_from(seq + 1).unwrap_or(i64::MAX);
                let text = line.strip_suffix('\n').unwrap_or(&line).to_string();
                made = Some((record, hash.clone()));
                client
                    .execute(
                        &format!("INSERT INTO {table} (seq, hash, line) VALUES ($1, $2, $3)"),
                        &[&next, &hash, &text],
                    )
                    .await
                    .map_err(Step::Sql)?;
                commit_sent = true;
                client.batch_execute("COMMIT").await.map_err(Step::Sql)
            };
            // The timer is made inside the runtime (it needs the runtime's clock).
            let outcome =
                self.runtime.block_on(async { tokio::time::timeout(left, transaction).await });
            let failure = match outcome {
                Ok(Ok(())) => {
                    let (record, _) = made.unwrap_or((Value::Null, String::new()));
                    return Ok(record);
                }
                Ok(Err(Step::Chain(e))) => {
                    self.rollback(&client);
                    return Err(e);
                }
                Ok(Err(Step::Sql(e))) => Failure::of(&e),
                Err(_) => Failure::Connection("the server did not answer in time".into()),
            };
            if let Failure::Refused(m) = &failure {
                self.rollback(&client);
                if !commit_sent {
                    return Err(self.unavailable(m));
                }
            }
            // The connection is suspect: a new one for whatever comes next (the server rolls
            // back a transaction whose connection went away).
            self.client = None;
            drop(client);
            if commit_sent && let Some((record, hash)) = made {
                // The commit went out and its answer did not come back: the record was
                // written exactly when it is in the table.
                let found = self.run(|client| {
                    let (table, hash) = (table.clone(), hash.clone());
                    async move {
                        let q = format!("SELECT count(*) FROM {table} WHERE hash = $1");
                        client.query_one(&q, &[&hash]).await?.try_get::<_, i64>(0)
                    }
                });
                return match found {
                    Ok(1) => Ok(record),
                    Ok(_) => Err(self.unavailable(&format!(
                        "{}; the record was not written",
                        failure.message()
                    ))),
                    Err(e) => Err(e),
                };
            }
            if Instant::now() >= deadline {
                return Err(self.unavailable(&format!(
                    "{}; the server did not take the record within {:?} (nothing was written)",
                    failure.message(),
                    self.timeout
                )));
            }
        }
    }

    /// Ends a transaction that failed on a connection that still works.
    fn rollback(&self, client: &tokio_postgres::Client) {
        let _ = self.runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), client.batch_execute("ROLLBACK")).await
        });
    }

    /// The `seq` and `hash` of the head (0 and zeros for an empty ledger), checked as the
    /// writer checks it.
    pub fn head(&mut self) -> Result<(u64, String)> {
        let table = self.url.table.clone();
        let head = self.run(|client| {
            let q = format!("SELECT seq, line FROM {table} ORDER BY seq DESC LIMIT 1");
            async move { client.query_opt(&q, &[]).await }
        })?;
        match head {
            None => Ok((0, ZERO_HASH.to_string())),
            Some(r) => {
                let row =
                    Row { seq: r.try_get(0).unwrap_or(0), line: r.try_get(1).unwrap_or_default() };
                head_link(&self.url.shown, &row)
            }
        }
    }

    /// Hands every row's `seq` and line to `each`, oldest first (`newest_first`: newest
    /// first), a page at a time; `each` returns `true` to stop.
    pub fn rows(
        &mut self,
        newest_first: bool,
        each: &mut dyn FnMut(i64, &str) -> Result<bool>,
    ) -> Result<()> {
        let table = self.url.table.clone();
        let mut after: Option<i64> = None;
        loop {
            let query = match (newest_first, after.is_some()) {
                (false, false) => {
                    format!("SELECT seq, line FROM {table} ORDER BY seq LIMIT {PAGE}")
                }
                (false, true) => {
                    format!(
                        "SELECT seq, line FROM {table} WHERE seq > $1 ORDER BY seq LIMIT {PAGE}"
                    )
                }
                (true, false) => {
                    format!("SELECT seq, line FROM {table} ORDER BY seq DESC LIMIT {PAGE}")
                }
                (true, true) => format!(
                    "SELECT seq, line FROM {table} WHERE seq < $1 ORDER BY seq DESC LIMIT {PAGE}"
                ),
            };
            let page = self.run(|client| {
                let query = query.clone();
                async move {
                    match after {
                        Some(seq) => client.query(&query, &[&seq]).await,
                        None => client.query(&query, &[]).await,
                    }
                }
            })?;
            let full = page.len() as i64 == PAGE;
            for row in &page {
                let (Ok(seq), Ok(line)) = (row.try_get::<_, i64>(0), row.try_get::<_, &str>(1))
                else {
                    return Err(self.unavailable("a row is not (seq bigint, line text)"));
                };
                after = Some(seq);
                if each(seq, line)? {
                    return Ok(());
                }
            }
            if !full {
                return Ok(());
            }
        }
    }

    /// Inserts whole lines as they are (`pactum ledger copy`: records already made and
    /// verified), in one transaction under the writers' lock, after checking that the
    /// table still ends at `expected_head` (`seq`, hash): nobody appended meanwhile.
    pub fn insert_lines(
        &mut self,
        expected_head: (u64, &str),
        lines: &[(u64, String, String)],
    ) -> Result<()> {
        let table = self.url.table.clone();
        let shown = self.url.shown.clone();
        let (head_seq, head_hash) = (expected_head.0, expected_head.1.to_string());
        // A retry after a lost commit finds the head moved and says so: never a record twice.
        let done = self.run(|client| {
            let (table, shown, head_hash) = (table.clone(), shown.clone(), head_hash.clone());
            let lines = lines.to_vec();
            async move {
                client.batch_execute("BEGIN").await?;
                client.batch_execute(&format!("LOCK TABLE {table} IN EXCLUSIVE MODE")).await?;
                let head = client
                    .query_opt(&format!("SELECT seq, hash FROM {table} ORDER BY seq DESC LIMIT 1"), &[])
                    .await?
                    .map(|r| Ok::<_, tokio_postgres::Error>((r.try_get::<_, i64>(0)?, r.try_get::<_, String>(1)?)))
                    .transpose()?;
                let now = head.map_or((0, ZERO_HASH.to_string()), |(s, h)| (s as u64, h));
                if now != (head_seq, head_hash) {
                    client.batch_execute("ROLLBACK").await?;
                    return Ok(Some(format!(
                        "{shown} changed while it was copied into (its head is now record {}); copy again",
                        now.0
                    )));
                }
                let insert = client
                    .prepare(&format!("INSERT INTO {table} (seq, hash, line) VALUES ($1, $2, $3)"))
                    .await?;
                for (seq, hash, line) in &lines {
                    let seq = *seq as i64;
                    client.execute(&insert, &[&seq, hash, line]).await?;
                }
                client.batch_execute("COMMIT").await?;
                Ok(None)
            }
        })?;
        match done {
            None => Ok(()),
            Some(message) => Err(self.unavailable(&message)),
        }
    }
}

/// What an append's transaction stopped on.
enum Step {
    Sql(tokio_postgres::Error),
    Chain(Error),
}

/// The `seq` and hash of the head row: a record in the one form whose hash matches its
/// content and whose `seq` is its row's (nothing is chained onto anything else).
fn head_link(shown: &str, row: &Row) -> Result<(u64, String)> {
    let path = std::path::PathBuf::from(shown);
    let line_no = usize::try_from(row.seq).unwrap_or(0);
    let record = line::decode(row.line.as_bytes()).map_err(|reason| Error::LedgerCorrupt {
        path: path.clone(),
        line: line_no,
        reason,
        torn: false,
    })?;
    if record.content_hash(row.line.as_bytes()) != record.hash || record.seq as i64 != row.seq {
        return Err(Error::LedgerBroken {
            path,
            line: line_no,
            reason: format!(
                "record {} was edited: its hash does not match its content, and nothing is chained onto it",
                record.seq
            ),
        });
    }
    Ok((record.seq, record.hash))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests play the application: their URLs are permits
mod tests {
    use super::*;

    fn parse(text: &str, pw: Option<&str>) -> Result<Url> {
        Url::parse(&Permit::application(text.to_string()), pw.map(crate::gateway::Secret::new))
    }

    #[test]
    fn urls_parse_and_show_no_password() {
        let u = parse("postgres://fleet:s%40cret@db.internal:5433/audit", None).unwrap();
        assert_eq!((u.user.as_str(), u.host.as_str(), u.port), ("fleet", "db.internal", 5433));
        assert_eq!((u.dbname.as_str(), u.table()), ("audit", DEFAULT_TABLE));
        assert_eq!(u.password(), Some("s@cret"));
        assert_eq!(u.shown(), "postgres://fleet@db.internal:5433/audit");
        assert!(!format!("{u:?}").contains("cret"));
        let u = parse("postgresql://a@127.0.0.1/b?table=eval_2", Some("env")).unwrap();
        assert_eq!((u.port, u.table(), u.password()), (5432, "eval_2", Some("env")));
        assert_eq!(u.shown(), "postgres://a@127.0.0.1:5432/b?table=eval_2");
        let u = parse("postgres://a:url@[::1]:7/b", Some("env")).unwrap();
        assert_eq!((u.host.as_str(), u.port, u.password()), ("::1", 7, Some("url")));
        for bad in [
            "postgres://host:5432/db",
            "postgres://u@h:5432",
            "postgres://u@h:x/db",
            "postgres://u@h/db?table=Drop;",
            "postgres://u@h/db?sslmode=require",
            "postgres://u:p%zz@h/db",
            "redis://u@h/db",
        ] {
            let e = parse(bad, None).unwrap_err();
            assert_eq!(e.code(), crate::Code::UsageError, "{bad}");
            assert!(!e.to_string().contains("p%zz"), "{e}");
        }
        assert!(is_url("postgres://x") && is_url("PostgreSQL://x") && !is_url("ledger.jsonl"));
    }
}
