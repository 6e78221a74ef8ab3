//! RESP2, the Redis wire protocol: commands encoded as arrays of bulk strings, replies
//! decoded from any `BufRead` within [`Bounds`] (SPEC §18: a reply's cost is bounded, however
//! hostile the server). Pure: no sockets here, so every case is a unit test on bytes.

use std::io::BufRead;

/// One reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Simple(String),
    /// `-ERR ...`: an error the server reports (a reply, not a broken connection).
    Error(String),
    /// `:42`
    Integer(i64),
    /// `$n` bytes, or `$-1` (nil).
    Bulk(Option<Vec<u8>>),
    /// `*n` replies, or `*-1` (nil).
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply as text (a simple or bulk string), if it is one.
    pub fn text(&self) -> Option<String> {
        match self {
            Reply::Simple(s) => Some(s.clone()),
            Reply::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }

    /// The items of an array (nil and non-arrays: none).
    pub fn items(&self) -> &[Reply] {
        match self {
            Reply::Array(Some(items)) => items,
            _ => &[],
        }
    }

    pub fn is_nil(&self) -> bool {
        matches!(self, Reply::Bulk(None) | Reply::Array(None))
    }
}

/// What one reply may cost: its total bytes, its items and its nesting.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Bytes of all bulk strings and headers of one reply together.
    pub max_bytes: usize,
    /// Replies (items at every level) in one reply.
    pub max_items: usize,
    /// Arrays within arrays.
    pub max_depth: usize,
}

impl Default for Bounds {
    /// 64 MiB, a million items, 16 levels: a page of results (each at most a ledger line's
    /// budget, 8 MiB) fits; a server that sends more is refused, not buffered.
    fn default() -> Self {
        Bounds { max_bytes: 64 << 20, max_items: 1 << 20, max_depth: 16 }
    }
}

/// Why a reply could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The connection failed or timed out.
    Io(std::io::Error),
    /// Bytes that are not RESP2, or a reply past its bounds.
    Protocol(String),
}

/// A command as RESP2: an array of bulk strings.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads one reply.
pub fn read(input: &mut impl BufRead, bounds: Bounds) -> Result<Reply, ReadError> {
    let mut budget = Budget { bytes: bounds.max_bytes, items: bounds.max_items };
    read_at(input, &bounds, &mut budget, 0)
}

struct Budget {
    bytes: usize,
    items: usize,
}

impl Budget {
    fn spend(&mut self, bytes: usize) -> Result<(), ReadError> {
        self.bytes = self.bytes.checked_sub(bytes).ok_or_else(|| too_large("bytes"))?;
        Ok(())
    }

    fn count(&mut self, items: usize) -> Result<(), ReadError> {
        self.items = self.items.checked_sub(items).ok_or_else(|| too_large("items"))?;
        Ok(())
    }
}

fn too_large(what: &str) -> ReadError {
    ReadError::Protocol(format!("the reply has more {what} than pactum reads from a queue"))
}

fn read_at(
    input: &mut impl BufRead,
    bounds: &Bounds,
    budget: &mut Budget,
    depth: usize,
) -> Result<Reply, ReadError> {
    budget.count(1)?;
    let line = read_line(input, budget)?;
    let (kind, rest) = match line.split_first() {
        Some((kind, rest)) => (*kind, rest),
        None => return Err(ReadError::Protocol("an empty reply line".into())),
    };
    let text = || String::from_utf8_lossy(rest).into_owned();
    match kind {
        b'+' => Ok(Reply::Simple(text())),
        b'-' => Ok(Reply::Error(text())),
        b':' => number(rest).map(Reply::Integer),
        b'$' => {
            let len = number(rest)?;
            if len == -1 {
                return Ok(Reply::Bulk(None));
            }
            let len = usize::try_from(len)
                .map_err(|_| ReadError::Protocol(format!("a bulk string of length {len}")))?;
            budget.spend(len.saturating_add(2))?;
            let mut data = vec![0; len + 2];
            input.read_exact(&mut data).map_err(ReadError::Io)?;
            crate::work::count(data.len());
            if !data.ends_with(b"\r\n") {
                return Err(ReadError::Protocol("a bulk string not ended by CRLF".into()));
            }
            data.truncate(len);
            Ok(Reply::Bulk(Some(data)))
        }
        b'*' => {
            let len = number(rest)?;
            if len == -1 {
                return Ok(Reply::Array(None));
            }
            let len = usize::try_from(len)
                .map_err(|_| ReadError::Protocol(format!("an array of length {len}")))?;
            if depth >= bounds.max_depth {
                return Err(too_large("nesting"));
            }
            // The length is a claim: items are counted as they arrive, and the vector
            // grows with them rather than with the claim.
            if len > budget.items {
                return Err(too_large("items"));
            }
            let mut items = Vec::with_capacity(len.min(1024));
            for _ in 0..len {
                items.push(read_at(input, bounds, budget, depth + 1)?);
            }
            Ok(Reply::Array(Some(items)))
        }
        other => Err(ReadError::Protocol(format!(
            "a reply starting with byte {other:#04x}, which is not RESP2"
        ))),
    }
}

/// One CRLF-terminated header line (without the CRLF), at most 64 bytes plus the budget's.
fn read_line(input: &mut impl BufRead, budget: &mut Budget) -> Result<Vec<u8>, ReadError> {
    // Simple strings and errors are short in every reply pactum asks for; a header line is
    // at most this long, so an endless line costs no more than this.
    const MAX_LINE: usize = 64 * 1024;
    let mut line = Vec::new();
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        if available.is_empty() {
            return Err(ReadError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        let (used, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        line.extend_from_slice(&available[..used]);
        input.consume(used);
        // The bytes searched and copied: the cost test's work (`crate::work`).
        crate::work::count(used);
        if line.len() > MAX_LINE {
            return Err(ReadError::Protocol("a reply line longer than 64 KiB".into()));
        }
        if done {
            break;
        }
    }
    budget.spend(line.len())?;
    if !line.ends_with(b"\r\n") {
        return Err(ReadError::Protocol("a reply line not ended by CRLF".into()));
    }
    line.truncate(line.len() - 2);
    Ok(line)
}

fn number(text: &[u8]) -> Result<i64, ReadError> {
    std::str::from_utf8(text).ok().and_then(|t| t.parse().ok()).ok_or_else(|| {
        ReadError::Protocol(format!("`{}` is not a number", String::from_utf8_lossy(text)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Result<Reply, String> {
        decode_within(bytes, Bounds::default())
    }

    fn decode_within(bytes: &[u8], bounds: Bounds) -> Result<Reply, String> {
        read(&mut std::io::BufReader::new(bytes), bounds).map_err(|e| match e {
            ReadError::Io(e) => format!("io: {e}"),
            ReadError::Protocol(m) => format!("protocol: {m}"),
        })
    }

    fn bulk(s: &str) -> Reply {
        Reply::Bulk(Some(s.as_bytes().to_vec()))
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        assert_eq!(
            encode(&[b"SET", b"k", b"a\r\nb"]),
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n"
        );
        assert_eq!(encode(&[b"PING"]), b"*1\r\n$4\r\nPING\r\n");
    }

    #[test]
    fn every_reply_kind_decodes() {
        assert_eq!(decode(b"+OK\r\n"), Ok(Reply::Simple("OK".into())));
        assert_eq!(decode(b"-ERR no\r\n"), Ok(Reply::Error("ERR no".into())));
        assert_eq!(decode(b":-12\r\n"), Ok(Reply::Integer(-12)));
        assert_eq!(decode(b"$5\r\na\r\nbc\r\n"), Ok(bulk("a\r\nbc")));
        assert_eq!(decode(b"$0\r\n\r\n"), Ok(bulk("")));
        assert_eq!(decode(b"$-1\r\n"), Ok(Reply::Bulk(None)));
        assert_eq!(decode(b"*-1\r\n"), Ok(Reply::Array(None)));
        assert_eq!(
            decode(b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n"),
            Ok(Reply::Array(Some(vec![bulk("a"), Reply::Array(Some(vec![Reply::Integer(1)]))])))
        );
    }

    #[test]
    fn malformed_replies_are_protocol_errors() {
        for bad in [&b"?x\r\n"[..], b":x\r\n", b"$3\r\nabcd\r\n", b"+OK\n", b"$-2\r\n", b"\r\n"] {
            let got = decode(bad);
            assert!(got.as_ref().is_err_and(|e| e.starts_with("protocol")), "{bad:?}: {got:?}");
        }
        assert!(decode(b"$10\r\nabc").unwrap_err().starts_with("io"), "a cut reply");
        assert!(decode(b"").unwrap_err().starts_with("io"));
    }

    #[test]
    fn replies_past_their_bounds_are_refused_before_they_are_buffered() {
        let small = Bounds { max_bytes: 100, max_items: 10, max_depth: 3 };
        // A claimed length is not allocated: the budget refuses it first.
        assert!(decode_within(b"$1000000000\r\n", small).unwrap_err().contains("more bytes"));
        assert!(decode_within(b"*1000000000\r\n", small).unwrap_err().contains("more items"));
        assert!(
            decode_within(b"*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", small)
                .unwrap_err()
                .contains("nesting")
        );
        let many = format!("*11\r\n{}", ":1\r\n".repeat(11));
        assert!(decode_within(many.as_bytes(), small).unwrap_err().contains("more items"));
        let long_line = format!("+{}\r\n", "x".repeat(70 * 1024));
        assert!(decode(long_line.as_bytes()).unwrap_err().contains("64 KiB"));
    }

    /// The work counted: the bytes searched and copied, and every allocation.
    #[test]
    fn decoding_is_linear_in_the_reply() {
        crate::work::assert_linear("RESP decode", 20_000, |n| {
            let reply = format!("*{n}\r\n{}", "$3\r\nabc\r\n".repeat(n)).into_bytes();
            crate::work::work_of(|| decode(&reply).unwrap())
        });
    }
}
