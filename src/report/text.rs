//! Compiler-style text output for people, laid out like rustc's diagnostics.
//!
//! ```text
//! error[contract_schema_invalid]: /boundary/temperature: 3 is greater than the maximum of 2
//!  --> contracts/classify/1.0.0.json:7:20
//!   |
//! 7 |     "temperature": 3,
//!   |                    ^
//!   = help: set boundary.temperature to a number between 0 and 2
//!
//! note: no registry.json found above contracts/: registry checks skipped
//! checked 20 files: 1 error, 0 warnings
//! ```
//!
//! The gutter is as wide as the line number, as in rustc. The caret sits under the
//! finding's column, counted in characters; a tab in the source line is shown as four
//! spaces. A finding without a file has only its header (and help); one without a line
//! has a `--> file` line and no snippet. Messages, paths, help and notes are each one line
//! ([`crate::terminal::OneLine`]: a line feed shows as `\n`, so a file named
//! `a\nerror[x]: y.json` cannot print a finding of its own), and source lines go through
//! [`crate::terminal`]'s escaping (control characters shown as `\u{1b}`, workflow commands
//! defused), so a hostile file can neither drive the terminal nor command a CI runner; the
//! caret still sits under the right character of an escaped source line. ANSI styles
//! appear only when color is asked for.

use anstyle::{AnsiColor, Style};

use super::summary_line;
use crate::diagnostic::{Diagnostic, Report};
use crate::error::Severity;
use crate::terminal::{OneLine, escape_char};

const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
const NOTE: Style = AnsiColor::Green.on_default().bold();
const GUTTER: Style = AnsiColor::BrightBlue.on_default().bold();
const EMPHASIS: Style = Style::new().bold();

/// How many columns a tab in a source line takes.
const TAB_WIDTH: usize = 4;

/// Renders `report` as compiler-style text; with `color`, adds ANSI styles like rustc's.
pub fn text(report: &Report, color: bool, quiet: bool) -> String {
    let painter = Painter { color };
    let mut lines = Vec::new();
    for diagnostic in &report.diagnostics {
        diagnostic_lines(diagnostic, &painter, &mut lines);
        lines.push(String::new());
    }
    if quiet {
        // The findings only: no notes, no summary (and nothing at all when clean).
        lines.pop();
        let mut out = lines.join("\n");
        if !out.is_empty() {
            out.push('\n');
        }
        return out;
    }
    for note in &report.notes {
        lines.push(format!("{}: {}", painter.paint(NOTE, "note"), OneLine(note)));
    }
    lines.push(summary_line(report));
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// Applies styles only when color output is on.
struct Painter {
    color: bool,
}

impl Painter {
    fn paint(&self, style: Style, text: &str) -> String {
        if self.color {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_string()
        }
    }
}

fn diagnostic_lines(d: &Diagnostic, painter: &Painter, lines: &mut Vec<String>) {
    let (label, style) = match d.severity {
        Severity::Error => ("error", ERROR),
        Severity::Warning => ("warning", WARNING),
        Severity::Note => ("note", NOTE),
    };
    lines.push(format!(
        "{}{}",
        painter.paint(style, &format!("{label}[{}]", d.code)),
        painter.paint(EMPHASIS, &format!(": {}", OneLine(&d.message))),
    ));

    let width = d.line.map_or(1, |line| line.to_string().len());
    let margin = " ".repeat(width + 1);
    if let Some(file) = &d.file {
        let location = match (d.line, d.column) {
            (Some(line), Some(column)) => format!("{file}:{line}:{column}"),
            (Some(line), None) => format!("{file}:{line}"),
            (None, _) => file.clone(),
        };
        lines.push(format!(
            "{}{} {}",
            " ".repeat(width),
            painter.paint(GUTTER, "-->"),
            OneLine(&location)
        ));
        if let (Some(line), Some(excerpt)) = (d.line, &d.excerpt) {
            let column = d.column.unwrap_or(1).max(excerpt.first_column);
            let (mut shown, mut caret_at) =
                expand(&excerpt.text, column - excerpt.first_column + 1);
            if excerpt.cut_before {
                shown.insert(0, '…');
                caret_at += 1;
            }
            if excerpt.cut_after {
                shown.push('…');
            }
            lines.push(format!("{margin}{}", painter.paint(GUTTER, "|")));
            let number = painter.paint(GUTTER, &format!("{line} |"));
            lines.push(if shown.is_empty() { number } else { format!("{number} {shown}") });
            if d.column.is_some() {
                lines.push(format!(
                    "{margin}{} {}{}",
                    painter.paint(GUTTER, "|"),
                    " ".repeat(caret_at),
                    painter.paint(style, "^"),
                ));
            }
        }
    }
    if let Some(help) = &d.help {
        lines.push(format!(
            "{margin}{} {}: {}",
            painter.paint(GUTTER, "="),
            painter.paint(EMPHASIS, "help"),
            OneLine(help),
        ));
    }
}

/// The source line as shown (tabs expanded, hidden characters and `##[` escaped, line
/// break dropped) and the display offset of the 1-based character `column` in it. A column
/// past the end of the line lands that many places after its last character.
fn expand(source: &str, column: usize) -> (String, usize) {
    let target = column.max(1) - 1;
    let mut shown = String::new();
    let mut width = 0;
    let mut caret_at = None;
    let mut chars = 0;
    for c in source.trim_end_matches(['\n', '\r']).chars() {
        if chars == target {
            caret_at = Some(width);
        }
        chars += 1;
        let escaped = match c {
            '\t' => Some(" ".repeat(TAB_WIDTH)),
            // The legacy workflow-command prefix `##[`, anywhere in a line.
            '[' if shown.ends_with("##") => Some("\\u{5b}".to_string()),
            c => escape_char(c),
        };
        match escaped {
            Some(text) => {
                width += text.chars().count();
                shown.push_str(&text);
            }
            None => {
                shown.push(c);
                width += 1;
            }
        }
    }
    let caret_at = caret_at.unwrap_or(width + target.saturating_sub(chars));
    (shown, caret_at)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::error::Code;
    use crate::report::fixtures;

    #[test]
    fn representative_report() {
        insta::assert_snapshot!(text(&fixtures::representative(), false, false), @r#"
        error[contract_schema_invalid]: /boundary/temperature: 3 is greater than the maximum of 2
         --> contracts/classify/1.0.0.json:7:20
          |
        7 |     "temperature": 3,
          |                    ^
          = help: set boundary.temperature to a number between 0 and 2

        warning[template_input_unused]: input_schema declares `locale` but the template never uses it
          --> packs/classify/1.0.0.yaml:12:5

        error[registry_history_broken]: history entry 3 does not hash-chain
          = help: restore registry.json from version control

        note: no registry.json found above contracts/: registry checks skipped
        checked 2 files: 2 errors, 1 warning
        "#);
    }

    #[test]
    fn empty_report_is_only_the_summary() {
        assert_eq!(
            text(&Report::default(), false, false),
            "checked 0 files: 0 errors, 0 warnings\n"
        );
        assert_eq!(
            text(&Report::default(), true, false),
            "checked 0 files: 0 errors, 0 warnings\n"
        );
    }

    #[test]
    fn gutter_grows_with_the_line_number() {
        let d = Diagnostic {
            excerpt: Some(crate::source::Excerpt::whole("  x: 1")),
            ..Diagnostic::new(Code::ContractParseError, "bad")
        }
        .file("a.yaml")
        .at(1234, 3);
        let report = Report {
            files: vec!["a.yaml".into()],
            diagnostics: vec![d.help("fix it")],
            notes: vec![],
        };
        let out = text(&report, false, false);
        assert!(out.starts_with(
            "error[contract_parse_error]: bad\n    --> a.yaml:1234:3\n     |\n1234 |   x: 1\n     |   ^\n     = help: fix it\n"
        ), "{out}");
    }

    #[test]
    fn file_without_line_and_line_without_column() {
        let report = Report {
            files: vec!["a.json".into()],
            diagnostics: vec![
                Diagnostic::new(Code::FileTooLarge, "too big").file("a.json"),
                Diagnostic {
                    line: Some(3),
                    excerpt: Some(crate::source::Excerpt::whole("{")),
                    ..Diagnostic::new(Code::ContractParseError, "eof")
                }
                .file("a.json"),
            ],
            notes: vec![],
        };
        let out = text(&report, false, false);
        assert!(out.contains("error[file_too_large]: too big\n --> a.json\n\n"), "{out}");
        assert!(out.contains(" --> a.json:3\n  |\n3 | {\n\n"), "{out}");
    }

    #[test]
    fn caret_counts_characters_and_expands_tabs() {
        assert_eq!(expand("héllo wörld", 7), ("héllo wörld".into(), 6));
        assert_eq!(expand("日本語: 1", 5), ("日本語: 1".into(), 4));
        assert_eq!(expand("\tkey: 1", 2), ("    key: 1".into(), 4));
        assert_eq!(expand("a\tb", 3), ("a    b".into(), 5));
        assert_eq!(expand("abc\r\n", 4), ("abc".into(), 3));
        assert_eq!(expand("abc", 6), ("abc".into(), 5));
        assert_eq!(expand("abc", 0), ("abc".into(), 0));
        assert_eq!(expand("", 1), (String::new(), 0));
        assert_eq!(expand("a\u{1b}[0mb", 3), ("a\\u{1b}[0mb".into(), 7));
        assert_eq!(expand("##[error]x", 4), ("##\\u{5b}error]x".into(), 8));
    }

    #[test]
    fn unicode_column_in_a_full_diagnostic() {
        let d = Diagnostic {
            excerpt: Some(crate::source::Excerpt::whole("  \"名前\": 5,")),
            ..Diagnostic::new(Code::ContractSchemaInvalid, "/名前: not a string")
        }
        .file("c.json")
        .at(2, 9);
        let out = text(
            &Report { files: vec!["c.json".into()], diagnostics: vec![d], notes: vec![] },
            false,
            false,
        );
        assert!(out.contains("2 |   \"名前\": 5,\n  |         ^\n"), "{out}");
    }

    #[test]
    fn no_escape_bytes_without_color_even_from_hostile_input() {
        let out = text(&fixtures::hostile(), false, false);
        assert!(!out.contains('\u{1b}'), "{out}");
        assert!(!out.contains('\r'), "{out}");
        assert!(!out.contains('\0'), "{out}");
        // A message is one line: its line break shows as `\n`.
        assert!(
            out.contains("a \"quoted\" 'x' <tag> & ]]> 50% :: a,b\\r\\nnext\\u{1b}[31m\\u{0}"),
            "{out}"
        );
    }

    #[test]
    fn color_paints_levels_and_gutter_like_rustc() {
        let out = text(&fixtures::representative(), true, false);
        let red = ERROR.render().to_string();
        let yellow = WARNING.render().to_string();
        let blue = GUTTER.render().to_string();
        assert!(out.starts_with(&format!("{red}error[contract_schema_invalid]")), "{out:?}");
        assert!(out.contains(&format!("{yellow}warning[template_input_unused]")), "{out:?}");
        assert!(out.contains(&format!("{blue}-->")), "{out:?}");
        assert!(out.contains(&format!("{blue}7 |")), "{out:?}");
        assert!(out.contains(&format!("{red}^")), "{out:?}");
        // Stripping the styles gives back the plain output.
        let plain = strip_ansi(&out);
        assert_eq!(plain, text(&fixtures::representative(), false, false));
    }

    #[test]
    fn hostile_escape_sequences_cannot_reset_colors() {
        let out = text(&fixtures::hostile(), true, false);
        assert!(out.contains('\u{1b}'));
        assert_eq!(strip_ansi(&out), text(&fixtures::hostile(), false, false));
    }

    #[test]
    fn note_severity_and_warnings_only() {
        let d = Diagnostic::new(Code::ContractDeprecated, "old").severity(Severity::Note);
        let out =
            text(&Report { files: vec![], diagnostics: vec![d], notes: vec![] }, false, false);
        assert_eq!(
            out,
            "note[contract_deprecated]: old\n\nchecked 0 files: 0 errors, 0 warnings\n"
        );
        let out = text(&fixtures::warnings_only(), false, false);
        assert!(out.ends_with("checked 1 file: 0 errors, 1 warning\n"), "{out}");
    }

    /// Removes `ESC [ ... m` sequences.
    fn strip_ansi(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }
}
