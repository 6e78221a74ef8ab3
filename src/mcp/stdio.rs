//! The stdio transport: the server is a child process; each message is one line of JSON
//! on its standard input or output (MCP "stdio").
//!
//! - A reader thread reads the child's output line by line, each line capped at
//!   [`super::MAX_MESSAGE_BYTES`], and hands them over through a channel of a few slots
//!   (a server that floods waits; pactum's memory does not grow); every request waits on
//!   that channel only until its deadline.
//! - A second thread drains the child's error stream into a ring of its last
//!   [`STDERR_KEPT`] bytes, quoted (shortened) in a failure's message and nowhere else.
//! - The child starts with exactly the environment it is given (the binary passes
//!   [`crate::config::TOOL_SERVER_ENV`]): it never inherits API keys.
//! - A writer thread owns the child's input; every message written (a request, a
//!   notification, an answer to the server's `ping`) waits for it only until the request's
//!   deadline, so a server that stops reading its input cannot block the run. After a
//!   write that did not finish in time, the transport takes no more messages.
//! - Every wait of a request, for a line or for a write, is bounded by the one deadline
//!   ([`super::time_left`]): a server that keeps talking without answering is cut at it.
//! - The child leads a process group of its own; dropping the transport closes its input,
//!   gives it a moment to exit, then kills the whole group (a grandchild it started too)
//!   and reaps the child: no zombie and no process left behind, whatever happened before (a
//!   timeout, a bad message, a panic unwinding through the run).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio as Pipe};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Incoming, MAX_MESSAGE_BYTES, Transport, time_left};

/// How much of the server's error stream is kept.
pub const STDERR_KEPT: usize = 4096;
/// How long a server may take to exit after its input closes before it is killed.
const GRACE: Duration = Duration::from_millis(300);

/// A line from the server, or why reading stopped.
type Line = std::result::Result<Vec<u8>, String>;

/// A running stdio server.
pub struct Stdio {
    child: Child,
    input: Option<Writer>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<Vec<u8>>>,
    program: String,
}

impl Stdio {
    /// Starts `command` in `dir` with exactly `env`.
    pub fn spawn(
        command: &crate::authority::Permit<Vec<String>>,
        dir: &Path,
        env: &[(String, String)],
    ) -> std::result::Result<Stdio, String> {
        let program = command.get().first().ok_or("the command is empty")?;
        let mut cmd = crate::authority::command(command).ok_or("the command is empty")?;
        cmd.current_dir(dir)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Pipe::piped())
            .stdout(Pipe::piped())
            .stderr(Pipe::piped());
        // A group of its own, so that dropping the transport stops what the server started.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "`{}` could not be started ({e}); check `command` in pactum.toml",
                super::short(program)
            )
        })?;
        let streams = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (Some(stdin), Some(stdout), Some(stderr)) = streams else {
            stop(&mut child);
            return Err("its standard streams could not be opened".into());
        };
        let (tx, lines) = sync_channel(4);
        let reader = std::thread::Builder::new()
            .name("mcp-stdout".into())
            .spawn(move || read_lines(stdout, &tx))
            .map_err(|e| format!("a reader thread could not be started ({e})"));
        let input = reader.and_then(|_| Writer::spawn(stdin));
        let input = match input {
            Ok(input) => input,
            Err(why) => {
                stop(&mut child);
                return Err(why);
            }
        };
        let kept = Arc::new(Mutex::new(Vec::new()));
        let ring = kept.clone();
        let _ = std::thread::Builder::new()
            .name("mcp-stderr".into())
            .spawn(move || drain(stderr, &ring));
        Ok(Stdio { child, input: Some(input), lines, stderr: kept, program: program.clone() })
    }

    /// Writes one message, waiting at most until `deadline` for the child to take it.
    fn send(&mut self, message: &Value, deadline: Instant) -> std::result::Result<(), String> {
        let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
        line.push(b'\n');
        let input = self.input.as_mut().ok_or("its input is closed")?;
        match input.write(line, deadline) {
            Ok(()) => Ok(()),
            Err(why) => Err(format!("{why}; {}", self.exit_status())),
        }
    }

    /// "it exited with …" when the child is gone, else "it is still running".
    fn exit_status(&mut self) -> String {
        match self.child.try_wait() {
            Ok(Some(status)) => format!("`{}` exited ({status})", super::short(&self.program)),
            _ => "it is still running".into(),
        }
    }
}

impl Transport for Stdio {
    fn request(
        &mut self,
        message: &Value,
        id: u64,
        deadline: Instant,
    ) -> std::result::Result<Value, String> {
        self.send(message, deadline)?;
        loop {
            // Checked before every line, not only when none comes: a server talking without
            // end is cut at the deadline too.
            let left = time_left(deadline)?;
            let line = match self.lines.recv_timeout(left) {
                Ok(Ok(line)) => line,
                Ok(Err(why)) => return Err(why),
                Err(RecvTimeoutError::Timeout) => return Err(super::NO_ANSWER_IN_TIME.into()),
                Err(RecvTimeoutError::Disconnected) => {
                    // The reader ended: give the child a moment to be reaped for its status.
                    std::thread::sleep(Duration::from_millis(20));
                    return Err(format!(
                        "its output ended before it answered; {}",
                        self.exit_status()
                    ));
                }
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match super::incoming(&line, id, "a line it wrote")? {
                Incoming::Response(answer) => return Ok(answer),
                Incoming::Owed(reply) => self.send(&reply, deadline)?,
                Incoming::Skip => {}
            }
            // Notifications (logging, progress) and stray responses are skipped.
        }
    }

    fn notify(&mut self, message: &Value, deadline: Instant) -> std::result::Result<(), String> {
        self.send(message, deadline)
    }

    fn diagnostics(&self) -> String {
        let kept = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let text = String::from_utf8_lossy(&kept);
        let text = text.trim();
        // The end of the stream says most: its last lines.
        let tail: String = {
            let chars: Vec<char> = text.chars().collect();
            chars[chars.len().saturating_sub(300)..].iter().collect()
        };
        super::short(&tail)
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        // Closing its input is how a stdio server is asked to stop (MCP lifecycle).
        drop(self.input.take());
        let until = Instant::now() + GRACE;
        while Instant::now() < until && !exited(&mut self.child) {
            std::thread::sleep(Duration::from_millis(10));
        }
        stop(&mut self.child);
    }
}

/// Kills the child's process group and the child, and reaps it.
fn stop(child: &mut Child) {
    // The child is not reaped yet, so its id (its group's) is no one else's.
    kill_group(child);
    let _ = child.kill();
    let _ = child.wait();
}

/// Whether the child has exited, without reaping it (its process id stays its own).
#[cfg(unix)]
fn exited(child: &mut Child) -> bool {
    let pid: libc::id_t = child.id();
    // SAFETY: `info` is a zeroed siginfo_t the call fills; WNOWAIT leaves the child
    // waitable, WNOHANG makes the call return at once.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
    };
    r != 0 || info.si_signo == libc::SIGCHLD
}

#[cfg(not(unix))]
fn exited(child: &mut Child) -> bool {
    matches!(child.try_wait(), Ok(Some(_)))
}

/// Kills the child's process group: the child and whatever it started and left in it.
#[cfg(unix)]
fn kill_group(child: &Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: a plain system call; the group is the child's own (`process_group(0)`).
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
}

#[cfg(not(unix))]
fn kill_group(_child: &Child) {}

/// The writer thread of a child's input: one message at a time, each acknowledged.
struct Writer {
    lines: SyncSender<Vec<u8>>,
    written: Receiver<std::io::Result<()>>,
    /// A write did not finish in time: the child's input is in an unknown state.
    stuck: bool,
}

impl Writer {
    fn spawn(mut stdin: ChildStdin) -> std::result::Result<Writer, String> {
        let (lines, rx) = sync_channel::<Vec<u8>>(1);
        let (done, written) = sync_channel(1);
        std::thread::Builder::new()
            .name("mcp-stdin".into())
            .spawn(move || {
                // Ends when the transport drops its sender (the child's input closes
                // with `stdin`) or a write fails.
                for line in rx {
                    let r = stdin.write_all(&line).and_then(|()| stdin.flush());
                    let failed = r.is_err();
                    if done.send(r).is_err() || failed {
                        return;
                    }
                }
            })
            .map_err(|e| format!("a writer thread could not be started ({e})"))?;
        Ok(Writer { lines, written, stuck: false })
    }

    /// Hands `line` to the writer and waits until it is written, at most until `deadline`.
    fn write(&mut self, line: Vec<u8>, deadline: Instant) -> std::result::Result<(), String> {
        if self.stuck {
            return Err("it stopped reading its input".into());
        }
        // Every earlier line was acknowledged: the slot is free unless the thread ended.
        if self.lines.try_send(line).is_err() {
            return Err("its input is closed".into());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match self.written.recv_timeout(left) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("writing to it failed ({e})")),
            Err(RecvTimeoutError::Timeout) => {
                self.stuck = true;
                Err(format!("it did not read its input in time; {}", super::NO_ANSWER_IN_TIME))
            }
            Err(RecvTimeoutError::Disconnected) => Err("its input is closed".into()),
        }
    }
}

/// Reads lines until the stream ends, a line is over the cap, or nobody listens.
fn read_lines(stdout: impl Read, tx: &SyncSender<Line>) {
    let mut reader = BufReader::new(stdout);
    loop {
        match read_line(&mut reader, MAX_MESSAGE_BYTES) {
            Ok(Some(line)) => {
                if tx.send(Ok(line)).is_err() {
                    return;
                }
            }
            Ok(None) => return,
            Err(why) => {
                let _ = tx.send(Err(why));
                return;
            }
        }
    }
}

/// One line without its end, at most `cap` bytes; `None` at the end of the stream.
pub fn read_line(
    reader: &mut impl BufRead,
    cap: usize,
) -> std::result::Result<Option<Vec<u8>>, String> {
    let mut line = Vec::new();
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("reading its output failed ({e})")),
        };
        if buf.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        let (part, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], i + 1),
            None => (buf, buf.len()),
        };
        if line.len() + part.len() > cap {
            return Err(format!("it wrote a message over {cap} bytes; pactum reads at most {cap}"));
        }
        line.extend_from_slice(part);
        let ended = done > part.len();
        reader.consume(done);
        if ended {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(line));
        }
    }
}

/// Keeps the last [`STDERR_KEPT`] bytes of a stream.
fn drain(mut stream: impl Read, kept: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let mut k = kept.lock().unwrap_or_else(|p| p.into_inner());
                k.extend_from_slice(&buf[..n]);
                let over = k.len().saturating_sub(STDERR_KEPT);
                if over > 0 {
                    k.drain(..over);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_capped_and_split() {
        let mut r = BufReader::with_capacity(3, &b"ab\r\ncd\nlast"[..]);
        assert_eq!(read_line(&mut r, 10).unwrap().unwrap(), b"ab");
        assert_eq!(read_line(&mut r, 10).unwrap().unwrap(), b"cd");
        assert_eq!(read_line(&mut r, 10).unwrap().unwrap(), b"last");
        assert_eq!(read_line(&mut r, 10).unwrap(), None);
        let mut r = BufReader::with_capacity(4, &b"0123456789abc\n"[..]);
        assert!(read_line(&mut r, 10).unwrap_err().contains("over 10 bytes"));
    }

    #[test]
    fn the_error_stream_keeps_its_end() {
        let kept = Mutex::new(Vec::new());
        let text = "x".repeat(10_000) + "the end";
        drain(text.as_bytes(), &kept);
        let k = kept.into_inner().unwrap();
        assert_eq!(k.len(), STDERR_KEPT);
        assert!(k.ends_with(b"the end"));
    }
}
