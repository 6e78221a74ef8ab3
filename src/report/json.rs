//! JSON output for scripts: one pretty-printed document whose shape is interface.
//!
//! ```json
//! {
//!   "ok": false,
//!   "version": 1,
//!   "summary": { "files": 20, "errors": 1, "warnings": 0 },
//!   "diagnostics": [
//!     { "code": "contract_schema_invalid", "severity": "error",
//!       "file": "contracts/classify/1.0.0.json", "pointer": "/boundary/temperature",
//!       "line": 7, "column": 20, "message": "...", "help": "..." }
//!   ],
//!   "notes": ["no registry.json found above contracts/: registry checks skipped"]
//! }
//! ```
//!
//! `ok` is true when there is no error (warnings do not count). Every diagnostic has all
//! eight keys, `null` where a value is absent; `column` counts characters. `version` is
//! the version of this shape: adding keys keeps it, changing or removing one bumps it.
//! Keys come in the order shown (the document is built from structs, not maps).

use serde::Serialize;

use crate::diagnostic::Report;
use crate::error::{Code, Severity};

/// The version of the JSON document's shape (its `version` key).
pub const JSON_VERSION: u32 = 1;

#[derive(Serialize)]
struct Document<'a> {
    ok: bool,
    version: u32,
    summary: Summary,
    diagnostics: Vec<Entry<'a>>,
    notes: &'a [String],
}

#[derive(Serialize)]
struct Summary {
    files: usize,
    errors: usize,
    warnings: usize,
}

/// One diagnostic, spelled out here so that a new field of `Diagnostic` cannot change
/// the JSON interface by accident.
#[derive(Serialize)]
struct Entry<'a> {
    code: Code,
    severity: Severity,
    file: Option<&'a str>,
    pointer: Option<&'a str>,
    line: Option<usize>,
    column: Option<usize>,
    message: &'a str,
    help: Option<&'a str>,
}

/// Renders `report` as one pretty-printed JSON document followed by a newline.
pub fn json(report: &Report) -> String {
    // Serializing these structs cannot fail: every key is a string, every value plain data.
    let mut out = serde_json::to_string_pretty(&document(report)).unwrap_or_default();
    out.push('\n');
    out
}

/// Renders `report` as the same document on one line followed by a newline: one record of
/// a stream of reports (NDJSON, as `validate --watch --format json` writes).
pub fn json_line(report: &Report) -> String {
    let mut out = serde_json::to_string(&document(report)).unwrap_or_default();
    out.push('\n');
    out
}

fn document(report: &Report) -> Document<'_> {
    let errors = report.errors();
    Document {
        ok: errors == 0,
        version: JSON_VERSION,
        summary: Summary { files: report.files.len(), errors, warnings: report.warnings() },
        diagnostics: report
            .diagnostics
            .iter()
            .map(|d| Entry {
                code: d.code,
                severity: d.severity,
                file: d.file.as_deref(),
                pointer: d.pointer.as_deref(),
                line: d.line,
                column: d.column,
                message: &d.message,
                help: d.help.as_deref(),
            })
            .collect(),
        notes: &report.notes,
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use serde_json::{Value, json as value};

    use super::*;
    use crate::diagnostic::Diagnostic;
    use crate::report::fixtures;

    fn parse(report: &Report) -> Value {
        serde_json::from_str(&json(report)).expect("valid JSON")
    }

    #[test]
    fn one_line_form_is_the_same_document() {
        for report in [Report::default(), fixtures::representative(), fixtures::hostile()] {
            let line = json_line(&report);
            assert!(line.ends_with('\n'));
            assert_eq!(line.matches('\n').count(), 1, "{line}");
            let doc: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(doc, parse(&report));
        }
    }

    #[test]
    fn representative_report() {
        insta::assert_snapshot!(json(&fixtures::representative()), @r#"
        {
          "ok": false,
          "version": 1,
          "summary": {
            "files": 2,
            "errors": 2,
            "warnings": 1
          },
          "diagnostics": [
            {
              "code": "contract_schema_invalid",
              "severity": "error",
              "file": "contracts/classify/1.0.0.json",
              "pointer": "/boundary/temperature",
              "line": 7,
              "column": 20,
              "message": "/boundary/temperature: 3 is greater than the maximum of 2",
              "help": "set boundary.temperature to a number between 0 and 2"
            },
            {
              "code": "template_input_unused",
              "severity": "warning",
              "file": "packs/classify/1.0.0.yaml",
              "pointer": "/input_schema/properties/locale",
              "line": 12,
              "column": 5,
              "message": "input_schema declares `locale` but the template never uses it",
              "help": null
            },
            {
              "code": "registry_history_broken",
              "severity": "error",
              "file": null,
              "pointer": null,
              "line": null,
              "column": null,
              "message": "history entry 3 does not hash-chain",
              "help": "restore registry.json from version control"
            }
          ],
          "notes": [
            "no registry.json found above contracts/: registry checks skipped"
          ]
        }
        "#);
    }

    #[test]
    fn empty_report_is_ok() {
        assert_eq!(
            parse(&Report::default()),
            value!({
                "ok": true,
                "version": 1,
                "summary": {"files": 0, "errors": 0, "warnings": 0},
                "diagnostics": [],
                "notes": []
            })
        );
    }

    #[test]
    fn warnings_only_is_ok() {
        let doc = parse(&fixtures::warnings_only());
        assert_eq!(doc["ok"], true);
        assert_eq!(doc["summary"], value!({"files": 1, "errors": 0, "warnings": 1}));
        assert_eq!(doc["diagnostics"][0]["severity"], "warning");
    }

    #[test]
    fn every_diagnostic_has_exactly_the_eight_keys() {
        let doc = parse(&fixtures::representative());
        let keys = ["code", "severity", "file", "pointer", "line", "column", "message", "help"];
        for d in doc["diagnostics"].as_array().unwrap() {
            let object = d.as_object().unwrap();
            assert_eq!(object.len(), keys.len());
            for key in keys {
                assert!(object.contains_key(key), "{key} missing in {d}");
            }
        }
        let top: Vec<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
        let mut top = top;
        top.sort_unstable();
        assert_eq!(top, ["diagnostics", "notes", "ok", "summary", "version"]);
    }

    #[test]
    fn hostile_strings_round_trip_and_source_lines_stay_out() {
        let report = fixtures::hostile();
        let out = json(&report);
        assert!(!out.contains('\u{1b}'));
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["diagnostics"][0]["message"], fixtures::HOSTILE);
        assert_eq!(doc["diagnostics"][0]["help"], fixtures::HOSTILE);
        assert_eq!(doc["diagnostics"][0]["pointer"], "/a~1b/\"c\"");
        assert_eq!(doc["notes"][0], fixtures::HOSTILE);

        let d = Diagnostic {
            excerpt: Some(crate::source::Excerpt::whole("secret")),
            ..Diagnostic::new(Code::IoError, "x")
        };
        let out = json(&Report { diagnostics: vec![d], ..Report::default() });
        assert!(!out.contains("secret"));
        assert!(!out.contains("excerpt"));
    }
}
