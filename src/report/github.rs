//! GitHub Actions workflow commands: one annotation per finding.
//!
//! ```text
//! ::error file=contracts/classify/1.0.0.json,line=7,col=20,title=contract_schema_invalid::/boundary/temperature: 3 is greater than the maximum of 2%0Ahelp: set boundary.temperature to a number between 0 and 2
//! ::warning title=config_invalid::unknown setting `colour`
//! note: no registry.json found above contracts/: registry checks skipped
//! checked 20 files: 1 error, 1 warning
//! ```
//!
//! The command is `error`, `warning` or `notice` by severity. Properties come in the order
//! `file`, `line`, `col`, `title` (the code), each only when the finding has it; `col`
//! only together with `line`. The help follows the message on its own line.
//!
//! Escaping follows the Actions toolkit (`@actions/core`, `command.ts`): in the message `%`,
//! CR and LF become `%25`, `%0D` and `%0A`; in property values also `:` and `,` become
//! `%3A` and `%2C`. Before that, text goes through [`crate::terminal`]'s escaping (the
//! one rule of every human-facing printer): other control characters are shown as
//! `\u{1b}`, because the log viewer would interpret escape sequences, and a CRLF counts as
//! one line break. The report's notes and the summary are plain lines that start with
//! `note:` or `checked`; a note is escaped onto one line, so neither can become a command.

use super::summary_line;
use crate::diagnostic::{Diagnostic, Report};
use crate::error::Severity;
use crate::terminal::{escape, escape_line};

/// Renders `report` as workflow-command annotations, then the notes and the summary.
pub fn github(report: &Report) -> String {
    let mut lines: Vec<String> = report.diagnostics.iter().map(annotation).collect();
    for note in &report.notes {
        lines.push(format!("note: {}", escape_line(note)));
    }
    lines.push(summary_line(report));
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

fn annotation(d: &Diagnostic) -> String {
    let command = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "notice",
    };
    let mut properties = Vec::new();
    if let Some(file) = &d.file {
        properties.push(("file", file.clone()));
    }
    if let Some(line) = d.line {
        properties.push(("line", line.to_string()));
        if let Some(column) = d.column {
            properties.push(("col", column.to_string()));
        }
    }
    properties.push(("title", d.code.to_string()));
    let properties: Vec<String> =
        properties.iter().map(|(key, value)| format!("{key}={}", escape_property(value))).collect();
    let message = match &d.help {
        Some(help) => format!("{}\nhelp: {help}", d.message),
        None => d.message.clone(),
    };
    format!("::{command} {}::{}", properties.join(","), escape_data(&message))
}

/// Escapes a command's message: `%`, CR and LF.
fn escape_data(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in escape(value).chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes a property value: as the message, plus `:` and `,`.
fn escape_property(value: &str) -> String {
    escape_data(value).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::error::Code;
    use crate::report::fixtures;

    /// Undoes the runner's escapes, as `ActionCommand` does when it reads a command.
    fn unescape(value: &str) -> String {
        value
            .replace("%0D", "\r")
            .replace("%0A", "\n")
            .replace("%3A", ":")
            .replace("%2C", ",")
            .replace("%25", "%")
    }

    /// Splits a command line the way the runner does: `::name key=value,...::message`.
    fn parse(line: &str) -> (String, Vec<(String, String)>, String) {
        let rest = line.strip_prefix("::").expect("a command");
        let (head, message) = rest.split_once("::").expect("a message separator");
        let (name, properties) = head.split_once(' ').unwrap_or((head, ""));
        let properties = properties
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (key, value) = p.split_once('=').expect("key=value");
                (key.to_string(), unescape(value))
            })
            .collect();
        (name.to_string(), properties, unescape(message))
    }

    #[test]
    fn representative_report() {
        insta::assert_snapshot!(github(&fixtures::representative()), @r"
        ::error file=contracts/classify/1.0.0.json,line=7,col=20,title=contract_schema_invalid::/boundary/temperature: 3 is greater than the maximum of 2%0Ahelp: set boundary.temperature to a number between 0 and 2
        ::warning file=packs/classify/1.0.0.yaml,line=12,col=5,title=template_input_unused::input_schema declares `locale` but the template never uses it
        ::error title=registry_history_broken::history entry 3 does not hash-chain%0Ahelp: restore registry.json from version control
        note: no registry.json found above contracts/: registry checks skipped
        checked 2 files: 2 errors, 1 warning
        ");
    }

    #[test]
    fn empty_report_is_only_the_summary() {
        assert_eq!(github(&Report::default()), "checked 0 files: 0 errors, 0 warnings\n");
    }

    #[test]
    fn warnings_only_and_notes_by_severity() {
        assert_eq!(
            github(&fixtures::warnings_only()),
            "::warning file=contracts/a.json,title=contract_deprecated::PRC-A-001@1.0.0 is deprecated\n\
             checked 1 file: 0 errors, 1 warning\n"
        );
        let note = Diagnostic::new(Code::ContractDeprecated, "old").severity(Severity::Note);
        assert!(
            github(&Report { diagnostics: vec![note], ..Report::default() })
                .starts_with("::notice title=contract_deprecated::old\n")
        );
    }

    #[test]
    fn column_only_with_a_line() {
        let d = Diagnostic { column: Some(4), ..Diagnostic::new(Code::IoError, "x").file("a") };
        assert_eq!(annotation(&d), "::error file=a,title=io_error::x");
        let d = Diagnostic { line: Some(4), ..Diagnostic::new(Code::IoError, "x").file("a") };
        assert_eq!(annotation(&d), "::error file=a,line=4,title=io_error::x");
    }

    #[test]
    fn escapes_follow_the_toolkit() {
        assert_eq!(escape_data("50% a:b,c\nd"), "50%25 a:b,c%0Ad");
        assert_eq!(escape_property("50% a:b,c\nd"), "50%25 a%3Ab%2Cc%0Ad");
        // A CRLF is one line break; a lone CR is shown, never sent raw.
        assert_eq!(escape_data("a\r\nb"), "a%0Ab");
        assert_eq!(escape_data("%0A"), "%250A");
        assert_eq!(escape_data("tab\there\u{1b}[31m\u{0}"), "tab\there\\u{1b}[31m\\u{0}");
        assert_eq!(escape_data("a\rb"), "a\\rb");
    }

    #[test]
    fn hostile_strings_stay_on_one_line_and_read_back() {
        let report = fixtures::hostile();
        let out = github(&report);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert!(!out.contains('\u{1b}') && !out.contains('\r') && !out.contains('\0'));
        let carried = crate::terminal::escape(fixtures::HOSTILE).into_owned();
        assert!(carried.contains("\\u{1b}[31m\\u{0}") && !carried.contains('\r'), "{carried}");

        let (name, properties, message) = parse(lines[0]);
        assert_eq!(name, "error");
        assert_eq!(
            properties,
            [
                ("file".to_string(), "odd dir/a&b<c>.json".to_string()),
                ("line".to_string(), "1".to_string()),
                ("col".to_string(), "1".to_string()),
                ("title".to_string(), "contract_parse_error".to_string()),
            ]
        );
        assert_eq!(message, format!("{carried}\nhelp: {carried}"));

        let (name, properties, message) = parse(lines[1]);
        assert_eq!(name, "warning");
        assert_eq!(properties, [("title".to_string(), "config_invalid".to_string())]);
        assert_eq!(message, carried);

        assert!(lines[2].starts_with("note: a \"quoted\""), "{}", lines[2]);
        assert_eq!(lines[3], "checked 1 file: 1 error, 1 warning");
    }

    #[test]
    fn property_values_with_separators_read_back() {
        let d = Diagnostic::new(Code::ContractParseError, "m").file("a,b:c%.json").at(3, 2);
        let (_, properties, _) = parse(&annotation(&d));
        assert_eq!(properties[0], ("file".to_string(), "a,b:c%.json".to_string()));
        assert_eq!(properties.len(), 4);
    }
}
