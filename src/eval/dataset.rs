//! Datasets: JSON Lines files of cases, read one line at a time (SPEC §19).
//!
//! A dataset is untrusted input (SPEC §18): it is opened through the confinement rule (no
//! FIFO, no device, nothing outside the project), read in blocks, and never held whole —
//! a line longer than [`MAX_LINE_BYTES`] is refused after reading at most that much of it
//! (the rest is skipped without being kept), and JSON nests at most 128 levels (serde's
//! limit). Each line is a case (`eval_suite.schema.json`'s `$defs/case`) whose assertions
//! are compiled with the same bounds as a suite's. Blank lines are skipped. The file's
//! SHA-256 is computed on the way, over every byte, so an evaluation records which
//! dataset it measured without reading it twice.
//!
//! Memory: one line, the ids seen so far (ids must be unique), the hasher.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::eval::assert::Assertion;

/// The longest line a dataset may have, newline included.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// One case of a dataset.
#[derive(Debug)]
pub struct Case {
    /// 1-based line number in the dataset.
    pub line: usize,
    pub id: String,
    /// The contract's input (`{}` when the line gives none).
    pub input: Value,
    /// The case's own assertions.
    pub expect: Vec<Assertion>,
    pub tags: Vec<String>,
    /// The line as the dataset holds it (what an eval-case entry carries to a worker).
    pub text: String,
}

/// A dataset being read.
pub struct Dataset {
    /// As messages name it.
    shown: PathBuf,
    reader: BufReader<std::fs::File>,
    hasher: Sha256,
    line: usize,
    ids: HashSet<String>,
    /// Folder and root that a `schema` assertion's references resolve against.
    dir: PathBuf,
    root: PathBuf,
    buffer: Vec<u8>,
}

impl std::fmt::Debug for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dataset").field("path", &self.shown).field("line", &self.line).finish()
    }
}

impl Dataset {
    /// Opens the dataset `rel` (relative to the project `root`) through the confinement
    /// rule. `shown` is how messages name it.
    pub fn open(root: &Path, rel: &str) -> Result<Dataset> {
        let shown = PathBuf::from(rel);
        if let Err(reason) = crate::confine::check_relative(rel) {
            return Err(Error::PathEscape { path: rel.to_string(), reason });
        }
        let real = crate::confine::Root::new(root)
            .file(Path::new(rel))
            .map_err(|r| r.into_error(&shown))?;
        let file = crate::confine::open_file(&real)?;
        Ok(Dataset {
            dir: real.parent().map(Path::to_path_buf).unwrap_or_else(|| root.to_path_buf()),
            root: root.to_path_buf(),
            shown,
            reader: BufReader::with_capacity(64 * 1024, file),
            hasher: Sha256::new(),
            line: 0,
            ids: HashSet::new(),
            buffer: Vec::new(),
        })
    }

    /// The case `text` at line `line` of the dataset `rel` (which must exist: a `schema`
    /// assertion's references resolve from its folder), checked as the dataset's own line
    /// would be: a case a worker runs for `pactum eval --queue` (SPEC §27).
    pub fn one(root: &Path, rel: &str, line: usize, text: &str) -> Result<Case> {
        let mut dataset = Dataset::open(root, rel)?;
        if text.len() > MAX_LINE_BYTES {
            dataset.line = line;
            return Err(dataset.invalid(format!(
                "the line is longer than {MAX_LINE_BYTES} bytes, the most a case may take"
            )));
        }
        dataset.line = line;
        dataset.buffer = text.as_bytes().to_vec();
        dataset.case()
    }

    /// The SHA-256 of the whole file (the rest is read, not parsed).
    pub fn sha256(mut self) -> Result<String> {
        loop {
            let available = self.reader.fill_buf().map_err(|e| Error::io(&self.shown, e))?;
            if available.is_empty() {
                break;
            }
            let n = available.len();
            self.hasher.update(available);
            self.reader.consume(n);
        }
        Ok(self.hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }

    fn invalid(&self, message: String) -> Error {
        Error::EvalDatasetInvalid { path: self.shown.clone(), line: self.line, message }
    }

    /// Reads the next line into the buffer (hashing it); `None` at the end, `Some(false)`
    /// for a line past [`MAX_LINE_BYTES`] (not kept).
    fn read_line(&mut self) -> Result<Option<bool>> {
        self.buffer.clear();
        let mut fits = true;
        let mut any = false;
        loop {
            let available = self.reader.fill_buf().map_err(|e| Error::io(&self.shown, e))?;
            if available.is_empty() {
                return Ok(any.then_some(fits));
            }
            any = true;
            let (chunk, ends) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..=i], true),
                None => (available, false),
            };
            self.hasher.update(chunk);
            // The bytes searched, hashed and kept: the cost test's work (`crate::work`).
            crate::work::count(chunk.len());
            if fits && self.buffer.len() + chunk.len() <= MAX_LINE_BYTES {
                self.buffer.extend_from_slice(chunk);
            } else {
                fits = false;
                self.buffer.clear();
            }
            let n = chunk.len();
            self.reader.consume(n);
            if ends {
                return Ok(Some(fits));
            }
        }
    }

    /// The case on the current line.
    fn case(&mut self) -> Result<Case> {
        let text = std::str::from_utf8(&self.buffer)
            .map_err(|e| self.invalid(format!("not UTF-8 (byte {})", e.valid_up_to() + 1)))?;
        // serde_json counts lines within this one line; the file's line is in `invalid`.
        crate::work::count(text.len());
        let value: Value = serde_json::from_str(text).map_err(|e| {
            self.invalid(format!(
                "not a JSON value: {} at column {}; each line holds one case as JSON",
                crate::document::json_message(&e),
                e.column()
            ))
        })?;
        let found = crate::schema::check_eval_case(&value);
        if let Some(f) = found.first() {
            let more = if found.len() > 1 {
                format!(" (and {} more)", found.len() - 1)
            } else {
                String::new()
            };
            return Err(self.invalid(format!(
                "not a case: {}: {}{more}; a case is {{\"id\", \"input\", \"expect\"?, \"tags\"?}}",
                crate::validate::pointer_label(&f.pointer),
                f.message
            )));
        }
        let id = value["id"].as_str().unwrap_or_default().to_string();
        if !self.ids.insert(id.clone()) {
            return Err(self.invalid(format!(
                "case id `{id}` is used by an earlier line; ids must be unique"
            )));
        }
        let mut expect = Vec::new();
        for (i, a) in
            value.get("expect").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            let assertion = Assertion::from_value(
                a,
                &format!("/expect/{i}"),
                &self.dir,
                &self.root,
            )
            .map_err(|found| {
                let list: Vec<String> = found
                    .iter()
                    .map(|f| {
                        format!("{}: {}", crate::validate::pointer_label(&f.pointer), f.message)
                    })
                    .collect();
                self.invalid(list.join("; "))
            })?;
            expect.push(assertion);
        }
        let tags = value
            .get("tags")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        let input =
            value.get("input").cloned().unwrap_or_else(|| Value::Object(Default::default()));
        let text = text.trim_end_matches(['\n', '\r']).to_string();
        Ok(Case { line: self.line, id, input, expect, tags, text })
    }
}

impl Iterator for Dataset {
    type Item = Result<Case>;

    /// The next case, or the problem of the next line that is not one (reading goes on
    /// after it); blank lines are skipped.
    fn next(&mut self) -> Option<Result<Case>> {
        loop {
            let fits = match self.read_line() {
                Ok(None) => return None,
                Ok(Some(fits)) => fits,
                Err(e) => return Some(Err(e)),
            };
            self.line += 1;
            if !fits {
                return Some(Err(self.invalid(format!(
                    "the line is longer than {MAX_LINE_BYTES} bytes, the most a case may take"
                ))));
            }
            if self.buffer.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(self.case());
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;

    fn dataset(text: &[u8]) -> (tempfile::TempDir, Dataset) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cases.jsonl"), text).unwrap();
        let d = Dataset::open(dir.path(), "cases.jsonl").unwrap();
        (dir, d)
    }

    #[test]
    fn cases_come_one_line_at_a_time_with_their_line_numbers() {
        let text = b"{\"id\": \"a\", \"input\": {\"x\": 1}, \"tags\": [\"smoke\"]}\n\n{\"id\": \"b\", \"expect\": [{\"kind\": \"equals\", \"pointer\": \"/l\", \"value\": 1}]}";
        let (_dir, d) = dataset(text);
        let cases: Vec<Case> = d.map(Result::unwrap).collect();
        assert_eq!(cases.len(), 2);
        assert_eq!((cases[0].line, cases[0].id.as_str()), (1, "a"));
        assert_eq!(cases[0].tags, ["smoke"]);
        assert_eq!((cases[1].line, cases[1].id.as_str()), (3, "b"));
        assert_eq!(cases[1].input, serde_json::json!({}));
        assert_eq!(cases[1].expect.len(), 1);
    }

    #[test]
    fn bad_lines_are_named_and_reading_goes_on() {
        let mut text = Vec::new();
        text.extend_from_slice(b"{\"id\": \"a\"}\n");
        text.extend_from_slice(b"not json\n");
        text.extend_from_slice(b"{\"id\": \"a\"}\n");
        text.extend_from_slice(b"{\"input\": {}}\n");
        text.extend_from_slice(
            format!("{{\"id\": \"big\", \"input\": \"{}\"}}\n", "x".repeat(MAX_LINE_BYTES))
                .as_bytes(),
        );
        text.extend_from_slice(format!("{}1{}\n", "[".repeat(200), "]".repeat(200)).as_bytes());
        text.extend_from_slice(
            b"{\"id\": \"r\", \"expect\": [{\"kind\": \"matches\", \"pattern\": \"(\"}]}\n",
        );
        text.extend_from_slice(b"{\"id\": \"z\"}\n");
        let (_dir, d) = dataset(&text);
        let results: Vec<Result<Case>> = d.collect();
        let lines: Vec<String> = results
            .iter()
            .map(|r| match r {
                Ok(c) => format!("ok {}", c.line),
                Err(e) => {
                    assert_eq!(e.code(), Code::EvalDatasetInvalid);
                    e.to_string()
                }
            })
            .collect();
        assert_eq!(lines[0], "ok 1");
        assert!(lines[1].starts_with("cases.jsonl:2: not a JSON value"), "{}", lines[1]);
        assert!(!lines[1].contains("line 1"), "the file's line only: {}", lines[1]);
        assert!(lines[2].contains(":3: case id `a` is used by an earlier line"), "{}", lines[2]);
        assert!(lines[3].contains(":4: not a case: /id:"), "{}", lines[3]);
        assert!(lines[4].contains(":5: the line is longer than"), "{}", lines[4]);
        assert!(
            lines[5].contains(":6: not a JSON value") && lines[5].contains("recursion"),
            "{}",
            lines[5]
        );
        assert!(
            lines[6].contains(":7: /expect/0/pattern: the regex does not compile"),
            "{}",
            lines[6]
        );
        assert_eq!(lines[7], "ok 8");
    }

    #[test]
    fn the_hash_covers_every_byte_even_unread_ones() {
        let text = b"{\"id\": \"a\"}\n{\"id\": \"b\"}\n";
        let (_dir, mut d) = dataset(text);
        assert!(d.next().unwrap().is_ok());
        let sha = d.sha256().unwrap();
        assert_eq!(sha, crate::digest::sha256_hex(text));
    }

    #[test]
    fn a_dataset_outside_the_project_or_a_fifo_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = Dataset::open(dir.path(), "../cases.jsonl").unwrap_err();
        assert_eq!(e.code(), Code::PathEscape);
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo.jsonl");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let e = Dataset::open(dir.path(), "fifo.jsonl").unwrap_err();
            assert_ne!(e.code(), Code::EvalDatasetInvalid, "{e}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_dataset_linked_to_a_file_outside_the_project_is_refused_unread() {
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("cases.jsonl");
        std::fs::write(&target, "{\"id\": \"c1\", \"input\": {}}\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("cases.jsonl")).unwrap();
        let Err(e) = Dataset::open(dir.path(), "cases.jsonl") else {
            panic!("the link was followed")
        };
        assert_eq!(e.code(), Code::PathEscape, "{e}");
        // A link inside the project to a file inside it reads.
        std::fs::write(dir.path().join("real.jsonl"), "{\"id\": \"c1\", \"input\": {}}\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.jsonl"), dir.path().join("in.jsonl"))
            .unwrap();
        let mut d = Dataset::open(dir.path(), "in.jsonl").unwrap();
        assert!(d.next().unwrap().is_ok());
    }

    #[test]
    fn reading_is_linear_in_the_lines() {
        let make = |n: usize| {
            let mut text = String::new();
            for i in 0..n {
                text.push_str(&format!("{{\"id\": \"c{i}\", \"input\": {{\"user_input\": \"message {i}\"}}, \"tags\": [\"t\"]}}\n"));
            }
            text
        };
        // The work counted: the bytes read (searched, hashed, kept) and parsed, and every
        // allocation.
        crate::work::assert_linear("dataset lines", 2_500, |n| {
            let text = make(n);
            let (_dir, d) = dataset(text.as_bytes());
            crate::work::work_of(|| assert!(d.map(Result::unwrap).count() > 0))
        });
    }
}
