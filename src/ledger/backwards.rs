//! Reading a ledger from its end, one line at a time (the writer's look at the last record,
//! and [`super::query`]).
//!
//! Blocks are read backwards from the end; a line longer than one block is read in blocks
//! that double, so a line costs time linear in its length. No line is held past
//! [`MAX_LINE_BYTES`]: a line that long is refused (`ledger_corrupt`) after that many bytes,
//! whatever its length, and memory stays under twice the budget. Line numbers (counted
//! from the start) are worked out only for an error, by counting the file's newlines.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use super::line::{MAX_LINE_BYTES, too_long};
use crate::error::{Error, Result};

/// The bytes read per step backwards (the first step of a longer line).
pub(crate) const BLOCK: usize = 64 * 1024;

/// A ledger file read from its end.
pub(crate) struct Backwards<'a> {
    file: &'a File,
    path: &'a Path,
    /// The bytes at `pos..` not handed out yet, the newline after them taken off.
    buf: Vec<u8>,
    pos: u64,
    /// Bytes at the end of `buf` known to hold no newline.
    clean: usize,
    /// Whether the end of the file was checked for its newline.
    started: bool,
    /// Lines handed out.
    pub lines: u64,
    /// Bytes read from the file.
    pub bytes_read: u64,
}

impl<'a> Backwards<'a> {
    pub fn new(file: &'a File, path: &'a Path) -> Result<Backwards<'a>> {
        let pos = file.metadata().map_err(|e| Error::io(path, e))?.len();
        Ok(Backwards {
            file,
            path,
            buf: Vec::new(),
            pos,
            clean: 0,
            started: false,
            lines: 0,
            bytes_read: 0,
        })
    }

    /// The next line towards the start of the file, without its newline; `None` at the
    /// start. A file that does not end with a newline has a torn last line, and a line past
    /// the budget is refused: both `ledger_corrupt`.
    pub fn next_line(&mut self) -> Result<Option<Vec<u8>>> {
        if !self.started {
            self.started = true;
            if self.pos == 0 {
                return Ok(None);
            }
            self.read_before(BLOCK)?;
            if self.buf.pop() != Some(b'\n') {
                return Err(Error::LedgerCorrupt {
                    path: self.path.to_path_buf(),
                    line: self.count()?,
                    reason: "it has no newline".into(),
                    torn: true,
                });
            }
        } else if self.pos == 0 && self.buf.is_empty() && self.clean == usize::MAX {
            return Ok(None);
        }
        loop {
            let end = self.buf.len() - self.clean.min(self.buf.len());
            if let Some(i) = memchr::memrchr(b'\n', &self.buf[..end]) {
                if self.buf.len() - (i + 1) >= MAX_LINE_BYTES {
                    return Err(self.too_long()?);
                }
                let line = self.buf.split_off(i + 1);
                self.buf.truncate(i);
                self.clean = 0;
                self.lines += 1;
                return Ok(Some(line));
            }
            self.clean = self.buf.len();
            if self.buf.len() >= MAX_LINE_BYTES {
                return Err(self.too_long()?);
            }
            if self.pos == 0 {
                // The first line of the file; nothing comes after it.
                self.clean = usize::MAX;
                self.lines += 1;
                return Ok(Some(std::mem::take(&mut self.buf)));
            }
            self.read_before(BLOCK.max(self.buf.len()))?;
        }
    }

    /// The number (from 1 at the start of the file) of the line last handed out.
    pub fn line_handed_out(&self) -> Result<usize> {
        Ok((self.count()? + 1).saturating_sub(self.lines as usize))
    }

    /// `ledger_corrupt` for the line being read, past the budget.
    fn too_long(&self) -> Result<Error> {
        Ok(Error::LedgerCorrupt {
            path: self.path.to_path_buf(),
            line: self.count()?.saturating_sub(self.lines as usize),
            reason: too_long(),
            torn: false,
        })
    }

    /// Puts the `want` bytes before `pos` (fewer at the start) in front of `buf`.
    fn read_before(&mut self, want: usize) -> Result<()> {
        let start = self.pos.saturating_sub(want as u64);
        let n = (self.pos - start) as usize;
        let mut bytes = vec![0u8; n + self.buf.len()];
        let mut f = self.file;
        f.seek(SeekFrom::Start(start)).map_err(|e| Error::io(self.path, e))?;
        f.read_exact(&mut bytes[..n]).map_err(|e| Error::io(self.path, e))?;
        bytes[n..].copy_from_slice(&self.buf);
        // Bytes read and copied: the cost tests' work (`crate::work`).
        crate::work::count(bytes.len());
        self.buf = bytes;
        self.pos = start;
        self.bytes_read += n as u64;
        Ok(())
    }

    fn count(&self) -> Result<usize> {
        count_lines(self.file, self.path)
    }
}

/// The number of lines in the file, a last line without newline included (only on error
/// paths: it reads the whole file, a block at a time).
pub(crate) fn count_lines(mut f: &File, path: &Path) -> Result<usize> {
    f.seek(SeekFrom::Start(0)).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::with_capacity(BLOCK, f);
    let mut lines = 0usize;
    let mut last = b'\n';
    loop {
        let buf = reader.fill_buf().map_err(|e| Error::io(path, e))?;
        if buf.is_empty() {
            break;
        }
        lines += memchr::memchr_iter(b'\n', buf).count();
        crate::work::count(buf.len());
        last = buf[buf.len() - 1];
        let n = buf.len();
        reader.consume(n);
    }
    Ok(lines + usize::from(last != b'\n'))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    /// The lines of a file holding `bytes`, newest first, and the bytes read.
    fn lines_of(bytes: &[u8]) -> (Result<Vec<Vec<u8>>>, u64) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        std::fs::write(&path, bytes).unwrap();
        let file = File::open(&path).unwrap();
        let mut back = Backwards::new(&file, &path).unwrap();
        let mut out = Vec::new();
        let result = loop {
            match back.next_line() {
                Ok(Some(line)) => out.push(line),
                Ok(None) => break Ok(out),
                Err(e) => break Err(e),
            }
        };
        (result, back.bytes_read)
    }

    /// The line named by the `ledger_corrupt` error reading `bytes`, and whether it is torn.
    fn refused(bytes: &[u8]) -> (usize, bool, u64) {
        match lines_of(bytes) {
            (Err(Error::LedgerCorrupt { line, torn, .. }), read) => (line, torn, read),
            (Err(other), _) => panic!("{other:?}"),
            (Ok(lines), _) => panic!("{} lines read", lines.len()),
        }
    }

    #[test]
    fn lines_come_newest_first_across_blocks() {
        let long = "x".repeat(BLOCK * 3 + 7);
        let text = format!("a\n\n{long}\nb\n");
        let got = lines_of(text.as_bytes()).0.unwrap();
        assert!(got == [b"b".to_vec(), long.into_bytes(), vec![], b"a".to_vec()]);
        assert!(lines_of(b"").0.unwrap().is_empty());
        assert_eq!(lines_of(b"\n").0.unwrap(), [Vec::<u8>::new()]);
    }

    #[test]
    fn a_torn_end_and_a_line_over_the_budget_are_named() {
        assert_eq!(refused(b"a\nb\nc").0, 3);
        assert!(refused(b"a\nb\nc").1, "torn");
        // A line one byte over the budget (its newline included), first or in the middle.
        let mut text = b"a\n".to_vec();
        text.resize(2 + MAX_LINE_BYTES, b'x');
        text.extend_from_slice(b"\nb\n");
        assert_eq!(refused(&text).0, 2);
        assert_eq!(refused(&text[2..]).0, 1);
        // A line exactly at the budget, its newline included, is read.
        let mut text = b"a\n".to_vec();
        text.resize(2 + MAX_LINE_BYTES - 1, b'x');
        text.push(b'\n');
        assert_eq!(lines_of(&text).0.unwrap().len(), 2);
        // A line many times the budget is refused after reading at most about twice it.
        let mut text = b"a\n".to_vec();
        text.resize(6 * MAX_LINE_BYTES, b'x');
        text.push(b'\n');
        let (line, torn, read) = refused(&text);
        assert_eq!((line, torn), (2, false));
        assert!(read <= 2 * MAX_LINE_BYTES as u64, "{read} bytes read");
    }
}
