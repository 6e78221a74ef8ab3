//! Renders a validation [`Report`] in the five output formats of `pactum validate --format`.
//!
//! Every renderer is a pure function from a report to the complete output text: it never
//! prints, never reads the environment and never fails. The returned string always ends in
//! a newline, so the binary writes it to stdout as it is (`print!`, not `println!`).
//!
//! | format   | function   | for                                                        |
//! |----------|------------|------------------------------------------------------------|
//! | `text`   | [`text`]   | people: compiler-style diagnostics with source snippets     |
//! | `json`   | [`json`]   | scripts: one pretty-printed JSON document (a stable shape); [`json_line`] for streams |
//! | `sarif`  | [`sarif`]  | GitHub code scanning and other SARIF 2.1.0 consumers       |
//! | `junit`  | [`junit`]  | CI test reporters (Jenkins, GitLab, GitHub test reporters) |
//! | `github` | [`github`] | GitHub Actions workflow-command annotations                |
//!
//! Paths are printed as the report holds them: relative to the repository (git's top
//! level, else the folder `pactum validate` ran in; see [`crate::validate::names_root`]),
//! with `/` separators, so tools that match paths against a repository (SARIF, JUnit,
//! GitHub annotations) find the files wherever the project sits in it. The human formats
//! (`text`, `github`) escape text from files through [`crate::terminal`]; the machine
//! formats carry it byte for byte.

mod github;
mod json;
pub(crate) mod junit;
mod sarif;
mod text;

use std::fmt;
use std::str::FromStr;

use crate::diagnostic::Report;

pub use github::github;
pub use json::{JSON_VERSION, json, json_line};
pub use junit::junit;
pub use sarif::{INFORMATION_URI, sarif};
pub use text::text;

/// An output format of `pactum validate`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    #[default]
    Text,
    Json,
    Sarif,
    Junit,
    Github,
}

impl Format {
    /// Every format, in the order the help text lists them.
    pub const ALL: &'static [Format] =
        &[Format::Text, Format::Json, Format::Sarif, Format::Junit, Format::Github];

    /// The name used on the command line (`--format NAME`).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Sarif => "sarif",
            Format::Junit => "junit",
            Format::Github => "github",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an unknown format name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownFormat(pub String);

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
        write!(f, "unknown format `{}`; expected one of {}", self.0, names.join(", "))
    }
}

impl std::error::Error for UnknownFormat {}

impl FromStr for Format {
    type Err = UnknownFormat;

    /// Parses the exact lowercase name returned by [`Format::as_str`].
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .iter()
            .copied()
            .find(|format| format.as_str() == name)
            .ok_or_else(|| UnknownFormat(name.to_string()))
    }
}

/// Settings that some formats use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderOptions {
    /// Use ANSI colors in `text` output (the binary decides from the terminal and
    /// `NO_COLOR`/`--color`). Other formats never contain ANSI escapes.
    pub color: bool,
    /// The version SARIF output gives as `tool.driver.version`.
    pub tool_version: &'static str,
    /// `text` output without its notes and summary line (`-q`): the findings only.
    pub quiet: bool,
}

impl Default for RenderOptions {
    /// No color, and this crate's version.
    fn default() -> Self {
        RenderOptions { color: false, tool_version: env!("CARGO_PKG_VERSION"), quiet: false }
    }
}

/// Renders `report` in `format`.
pub fn render(report: &Report, format: Format, options: &RenderOptions) -> String {
    match format {
        Format::Text => text(report, options.color, options.quiet),
        Format::Json => json(report),
        Format::Sarif => sarif(report, options.tool_version),
        Format::Junit => junit(report),
        Format::Github => github(report),
    }
}

/// `1 file`, `2 files`: a count with its noun in the right number.
fn count(n: usize, singular: &str, plural: &str) -> String {
    if n == 1 { format!("{n} {singular}") } else { format!("{n} {plural}") }
}

/// The last line of the human-oriented formats: `checked 20 files: 1 error, 2 warnings`.
fn summary_line(report: &Report) -> String {
    format!(
        "checked {}: {}, {}",
        count(report.files.len(), "file", "files"),
        count(report.errors(), "error", "errors"),
        count(report.warnings(), "warning", "warnings"),
    )
}

/// Shared sample reports for the renderers' tests.
#[cfg(test)]
mod fixtures {
    use crate::diagnostic::{Diagnostic, Report};
    use crate::error::{Code, Severity};

    /// Two files, one error with a source snippet, one warning, one project-level error
    /// and a note.
    pub fn representative() -> Report {
        Report {
            files: vec!["contracts/classify/1.0.0.json".into(), "packs/classify/1.0.0.yaml".into()],
            diagnostics: vec![
                Diagnostic {
                    excerpt: Some(crate::source::Excerpt::whole("    \"temperature\": 3,")),
                    ..Diagnostic::new(
                        Code::ContractSchemaInvalid,
                        "/boundary/temperature: 3 is greater than the maximum of 2",
                    )
                    .file("contracts/classify/1.0.0.json")
                    .pointer("/boundary/temperature")
                    .at(7, 20)
                    .help("set boundary.temperature to a number between 0 and 2")
                },
                Diagnostic::new(
                    Code::TemplateInputUnused,
                    "input_schema declares `locale` but the template never uses it",
                )
                .file("packs/classify/1.0.0.yaml")
                .pointer("/input_schema/properties/locale")
                .at(12, 5),
                Diagnostic::new(Code::RegistryHistoryBroken, "history entry 3 does not hash-chain")
                    .help("restore registry.json from version control"),
            ],
            notes: vec!["no registry.json found above contracts/: registry checks skipped".into()],
        }
    }

    /// One file with a warning only.
    pub fn warnings_only() -> Report {
        Report {
            files: vec!["contracts/a.json".into()],
            diagnostics: vec![
                Diagnostic::new(Code::ContractDeprecated, "PRC-A-001@1.0.0 is deprecated")
                    .file("contracts/a.json"),
            ],
            notes: vec![],
        }
    }

    /// Strings that break naive renderers, in every field a renderer prints.
    pub const HOSTILE: &str = "a \"quoted\" 'x' <tag> & ]]> 50% :: a,b\r\nnext\u{1b}[31m\u{0}";

    pub fn hostile() -> Report {
        Report {
            files: vec!["odd dir/a&b<c>.json".into()],
            diagnostics: vec![
                Diagnostic::new(Code::ContractParseError, HOSTILE)
                    .file("odd dir/a&b<c>.json")
                    .pointer("/a~1b/\"c\"")
                    .at(1, 1)
                    .help(HOSTILE),
                Diagnostic::new(Code::ConfigInvalid, HOSTILE).severity(Severity::Warning),
            ],
            notes: vec![HOSTILE.into()],
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn format_names_round_trip() {
        for &format in Format::ALL {
            assert_eq!(format.as_str().parse::<Format>(), Ok(format));
            assert_eq!(format.to_string(), format.as_str());
        }
        let err = "xml".parse::<Format>().unwrap_err();
        assert_eq!(err, UnknownFormat("xml".into()));
        assert_eq!(
            err.to_string(),
            "unknown format `xml`; expected one of text, json, sarif, junit, github"
        );
        assert!("JSON".parse::<Format>().is_err());
        assert_eq!(Format::default(), Format::Text);
    }

    #[test]
    fn summary_counts_are_singular_or_plural() {
        let mut report = fixtures::representative();
        assert_eq!(summary_line(&report), "checked 2 files: 2 errors, 1 warning");
        report.files.truncate(1);
        report.diagnostics.truncate(1);
        assert_eq!(summary_line(&report), "checked 1 file: 1 error, 0 warnings");
        assert_eq!(summary_line(&Report::default()), "checked 0 files: 0 errors, 0 warnings");
    }

    #[test]
    fn render_dispatches_to_each_format() {
        let report = fixtures::representative();
        let options = RenderOptions { color: false, tool_version: "9.9.9", quiet: false };
        assert_eq!(render(&report, Format::Text, &options), text(&report, false, false));
        assert_eq!(render(&report, Format::Json, &options), json(&report));
        assert_eq!(render(&report, Format::Sarif, &options), sarif(&report, "9.9.9"));
        assert_eq!(render(&report, Format::Junit, &options), junit(&report));
        assert_eq!(render(&report, Format::Github, &options), github(&report));
        let colored = RenderOptions { color: true, ..options };
        assert_eq!(render(&report, Format::Text, &colored), text(&report, true, false));
    }

    #[test]
    fn every_format_ends_in_a_newline_and_only_text_can_have_color() {
        let options = RenderOptions { color: true, ..RenderOptions::default() };
        for report in [Report::default(), fixtures::representative(), fixtures::hostile()] {
            for &format in Format::ALL {
                let out = render(&report, format, &options);
                assert!(out.ends_with('\n'), "{format}: {out:?}");
                if format != Format::Text {
                    assert!(!out.contains('\u{1b}'), "{format} has an escape byte: {out:?}");
                }
            }
        }
    }

    #[test]
    fn default_options_carry_the_crate_version() {
        let options = RenderOptions::default();
        assert!(!options.color);
        assert_eq!(options.tool_version, env!("CARGO_PKG_VERSION"));
    }
}
