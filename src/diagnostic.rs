//! Validator findings: plain, serializable records that share their codes with [`Error`].
//!
//! The validator returns every finding it has (it never stops at the first); the binary
//! renders them as text, JSON, SARIF, JUnit or GitHub annotations (see [`crate::report`]).
//!
//! [`Error`]: crate::Error

use crate::error::{Code, Error, Severity};

/// One finding about one file (or about the project as a whole when `file` is `None`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// Path relative to the folder being validated, with `/` separators.
    pub file: Option<String>,
    /// RFC 6901 JSON pointer into the file, when the finding is about one value.
    pub pointer: Option<String>,
    /// 1-based line of the pointed-at value (or of the parse error).
    pub line: Option<usize>,
    /// 1-based column, counted in characters.
    pub column: Option<usize>,
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
    /// A window of the source line that `line` points at, for compiler-style text output
    /// (never the whole of a long line).
    #[serde(skip)]
    pub excerpt: Option<crate::source::Excerpt>,
    /// The other files the finding rests on, named like `file`: a template variable the
    /// contract does not declare is reported on the contract and is also about the pack
    /// that uses it. `validate FILE` reports a finding when its file or one of these is a
    /// named file (SPEC §24). Not part of any report format.
    #[serde(skip)]
    pub about: Vec<String>,
}

impl Diagnostic {
    /// A finding with the code's default severity.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: code.default_severity(),
            file: None,
            pointer: None,
            line: None,
            column: None,
            message: message.into(),
            help: None,
            excerpt: None,
            about: Vec::new(),
        }
    }

    /// A finding made from a library error (its code and message).
    pub fn from_error(error: &Error) -> Self {
        Diagnostic::new(error.code(), error.to_string())
    }

    pub fn file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    pub fn pointer(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }

    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    /// One more file the finding is about (see [`Diagnostic::about`]).
    pub fn about(mut self, file: impl Into<String>) -> Self {
        let file = file.into();
        if self.file.as_ref() != Some(&file) && !self.about.contains(&file) {
            self.about.push(file);
        }
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The outcome of validating a folder: what was checked and what was found.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Report {
    /// Every file that was checked (relative, `/`-separated), in sorted order.
    pub files: Vec<String>,
    /// Findings sorted by file, line, column, code.
    pub diagnostics: Vec<Diagnostic>,
    /// Remarks that are not findings (e.g. "no registry.json found: registry checks skipped").
    pub notes: Vec<String>,
}

impl Report {
    pub fn errors(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Error).count()
    }

    pub fn warnings(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Warning).count()
    }

    /// Turns every warning into an error (`--strict`).
    pub fn make_strict(&mut self) {
        for d in &mut self.diagnostics {
            if d.severity == Severity::Warning {
                d.severity = Severity::Error;
            }
        }
    }

    /// Sorts findings into their stable output order.
    pub fn sort(&mut self) {
        self.files.sort();
        self.files.dedup();
        self.diagnostics.sort_by(|a, b| {
            (&a.file, a.line, a.column, a.code, &a.pointer, &a.message)
                .cmp(&(&b.file, b.line, b.column, b.code, &b.pointer, &b.message))
        });
        self.diagnostics.dedup();
    }
}
