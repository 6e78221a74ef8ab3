//! A real PostgreSQL for the database ledger's tests (SPEC §27): the server from the
//! distribution's package (`initdb`, `postgres`, `psql` of the newest
//! `/usr/lib/postgresql/*/bin`, or of `PATH`), a cluster made in a temporary folder and
//! served on a free loopback port, stopped when the value is dropped. The server refuses
//! to run as root: as root, the cluster is made and served by `nobody` (`setpriv`). Logins
//! over TCP need a password (SCRAM), which tests pass in `PGPASSWORD`, so every test also
//! walks the password's path. A missing server fails the test, saying how to install it
//! (these tests are ignored in a plain `cargo test`; `.ci/run` installs the package and
//! runs them with `--include-ignored`).

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The password of the tests' database user.
pub const PASSWORD: &str = "pg-test-Secret-7f3a";
/// The tests' database user and database.
pub const USER: &str = "pactum";

/// A running PostgreSQL cluster.
pub struct Postgres {
    bin: PathBuf,
    /// Holds the cluster (`data/`) and its socket; removed on drop.
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
    as_nobody: bool,
    fsync: bool,
}

/// The folder of the server's programs: the newest Debian `postgresql-N`, else `PATH`'s.
fn bin_dir() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((n, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .find(|d| d.join("postgres").is_file() && d.join("initdb").is_file());
    on_path.unwrap_or_else(|| {
        panic!(
            "these tests need PostgreSQL's server (SPEC §27: the database ledger is tested against \
             a real PostgreSQL), and neither /usr/lib/postgresql/*/bin nor PATH has `postgres` \
             and `initdb`; install it: `apt-get install -y postgresql` (Debian/Ubuntu)"
        )
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl Postgres {
    /// A cluster for tests (fsync off: the tests count records, not disks).
    pub fn start() -> Postgres {
        Postgres::launch(false)
    }

    /// A cluster that syncs every commit, as a production server does (the benchmark).
    pub fn durable() -> Postgres {
        Postgres::launch(true)
    }

    fn launch(fsync: bool) -> Postgres {
        let bin = bin_dir();
        let dir = tempfile::tempdir().unwrap();
        let as_nobody = is_root();
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        if as_nobody {
            for path in [dir.path(), pwfile.as_path()] {
                let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
                // SAFETY: chown(2) on a path this test just made; 65534 is nobody/nogroup.
                assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0, "chown {path:?}");
            }
        }
        let mut pg = Postgres { bin, dir, port: 0, child: None, as_nobody, fsync };
        let data = pg.data();
        let out = pg
            .as_server(&pg.bin.join("initdb"))
            .args(["-D", &data.to_string_lossy(), "-U", USER, "-E", "UTF8", "--locale=C"])
            .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb failed:\n{}", String::from_utf8_lossy(&out.stderr));
        for _ in 0..5 {
            pg.port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            pg.spawn();
            if pg.wait_ready(Duration::from_secs(30)) {
                let created = pg.psql_in("postgres", &format!("CREATE DATABASE {USER}"));
                assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
                return pg;
            }
            pg.kill_server();
        }
        panic!("postgres did not start on a free loopback port in five attempts");
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A command running `program` as the cluster's owner.
    fn as_server(&self, program: &Path) -> Command {
        let mut cmd = if self.as_nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        cmd.env("LC_ALL", "C").current_dir(self.dir.path());
        cmd
    }

    fn spawn(&mut self) {
        let socket_dir = self.dir.path().to_string_lossy().into_owned();
        let log = std::fs::File::create(self.dir.path().join("server.log")).unwrap();
        let mut cmd = self.as_server(&self.bin.join("postgres"));
        cmd.args(["-D", &self.data().to_string_lossy(), "-p", &self.port.to_string()])
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                &format!("unix_socket_directories={socket_dir}"),
            ])
            .args(["-c", &format!("fsync={}", if self.fsync { "on" } else { "off" })])
            .args(["-c", "max_connections=50", "-c", "shared_buffers=16MB"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        self.child = Some(cmd.spawn().unwrap());
    }

    fn wait_ready(&mut self, within: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < within {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(_)) = child.try_wait()
            {
                return false;
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    fn kill_server(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server (a fast shutdown: connections are cut, transactions rolled back).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = libc::pid_t::try_from(child.id()).unwrap();
            // SAFETY: kill(2) on the pid of a child this value started and has not reaped.
            unsafe { libc::kill(pid, libc::SIGINT) };
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(60) {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the stopped server again on the same port and cluster.
    pub fn restart(&mut self) {
        self.spawn();
        assert!(self.wait_ready(Duration::from_secs(60)), "postgres did not start again");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://pactum@127.0.0.1:PORT/pactum` (the password goes in PGPASSWORD), with
    /// `?table=NAME` when `table` is given.
    pub fn url(&self, table: Option<&str>) -> String {
        let base = format!("postgres://{USER}@127.0.0.1:{}/{USER}", self.port);
        match table {
            Some(t) => format!("{base}?table={t}"),
            None => base,
        }
    }

    /// The same URL with the password in it.
    pub fn url_with_password(&self) -> String {
        format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{USER}", self.port)
    }

    fn psql_command(&self, db: &str) -> Command {
        let mut cmd = Command::new(self.bin.join("psql"));
        cmd.args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", USER, "-d", db])
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .env("PGPASSWORD", PASSWORD)
            .env("LC_ALL", "C");
        cmd
    }

    fn psql_in(&self, db: &str, sql: &str) -> Output {
        self.psql_command(db).args(["-c", sql]).output().unwrap()
    }

    /// Runs `sql` in the tests' database; its output (unaligned, tuples only), trimmed.
    pub fn sql(&self, sql: &str) -> String {
        let out = self.psql_in(USER, sql);
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// A `psql` session kept open: statements are written to it as the test goes.
    pub fn session(&self) -> Session {
        let child = self
            .psql_command(USER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Session { child }
    }

    /// The lines of a ledger table, oldest first.
    pub fn lines(&self, table: &str) -> Vec<String> {
        let text = self.sql(&format!("SELECT line FROM {table} ORDER BY seq"));
        text.lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
    }

    /// Waits until `check` holds (true) or `within` passes (false).
    pub fn wait_for(&self, within: Duration, mut check: impl FnMut(&Postgres) -> bool) -> bool {
        let started = Instant::now();
        while started.elapsed() < within {
            if check(self) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        check(self)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An open `psql` session.
pub struct Session {
    child: Child,
}

impl Session {
    /// Sends statements (they run in order as psql reads them).
    pub fn send(&mut self, sql: &str) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(sql.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Ends the session (after what was sent has run).
    pub fn finish(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
