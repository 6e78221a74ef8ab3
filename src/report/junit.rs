//! JUnit XML for CI test reporters (Jenkins, GitLab, the GitHub test-reporter actions).
//!
//! Every checked file is one test case named by its path, so passing files show up as
//! passed tests:
//!
//! ```xml
//! <?xml version="1.0" encoding="UTF-8"?>
//! <testsuites name="pactum validate" tests="2" failures="1" errors="0">
//!   <testsuite name="pactum validate" tests="2" failures="1" errors="0" skipped="0" time="0">
//!     <properties>
//!       <property name="note" value="no registry.json found ..."/>
//!     </properties>
//!     <testcase name="contracts/a.json" classname="pactum.validate" time="0"/>
//!     <testcase name="contracts/b.json" classname="pactum.validate" time="0">
//!       <failure type="contract_schema_invalid" message="...">contracts/b.json:7:20 /boundary/temperature — ... — ...</failure>
//!       <system-out>warning[template_input_unused]: ...</system-out>
//!     </testcase>
//!   </testsuite>
//! </testsuites>
//! ```
//!
//! - All errors of one file go into a single `<failure>`, because many readers take only
//!   one failure per test case. Its body has one line per error
//!   (`file:line:col pointer — message — help`, absent parts left out), its `type` lists
//!   the distinct codes (comma-separated) and its `message` is the first error's message,
//!   with `(and N more)` when there are several.
//! - Warnings and note-level findings do not fail a test: they go to the test case's
//!   `<system-out>`, one line each, prefixed with `warning[code]:` or `note[code]:`.
//! - Findings without a file belong to a test case named `project`; files that have
//!   findings but are missing from the checked list get a test case of their own.
//! - The report's notes are the suite's properties named `note`, in report order.
//! - Only attributes both schemas that CI readers validate with define are used: Jenkins'
//!   `junit-10.xsd` (xUnit plugin) and Maven Surefire's test-report schema. Neither has a
//!   `file` attribute on `<testcase>`, so the file is the test case's name: a path relative
//!   to the repository (see [`crate::validate::names_root`]). Inside the suite, properties
//!   come first, then the test cases, each with its `<failure>` before its `<system-out>`,
//!   the order Surefire's schema requires; the `<testsuite>` element on its own is a valid
//!   Surefire report.
//! - `failures` counts failed test cases; `errors` and `skipped` are always 0 and `time`
//!   is 0 (the report carries no timings).
//!
//! Text is escaped for XML (`&`, `<`, `>`, and in attributes also quotes and line breaks as
//! character references). Characters XML 1.0 cannot carry at all (control characters other
//! than tab, line feed and carriage return, and U+FFFE/U+FFFF) become U+FFFD.

use std::collections::HashMap;

use crate::diagnostic::{Diagnostic, Report};
use crate::error::Severity;

const SUITE: &str = "pactum validate";
const CLASSNAME: &str = "pactum.validate";
/// The test case of findings that have no file.
const PROJECT: &str = "project";

/// One test case: a file (or the project) and its findings.
struct Case<'a> {
    name: &'a str,
    is_file: bool,
    errors: Vec<&'a Diagnostic>,
    others: Vec<&'a Diagnostic>,
}

/// Renders `report` as a JUnit XML document with one test suite.
pub fn junit(report: &Report) -> String {
    let cases = cases(report);
    let tests = cases.len();
    let failures = cases.iter().filter(|case| !case.errors.is_empty()).count();

    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"{SUITE}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">\n"
    ));
    out.push_str(&format!(
        "  <testsuite name=\"{SUITE}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" \
         skipped=\"0\" time=\"0\">\n"
    ));
    if !report.notes.is_empty() {
        out.push_str("    <properties>\n");
        for note in &report.notes {
            out.push_str(&format!(
                "      <property name=\"note\" value=\"{}\"/>\n",
                attribute(note)
            ));
        }
        out.push_str("    </properties>\n");
    }
    for case in &cases {
        write_case(&mut out, case);
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// The checked files in report order, then files only findings mention, then `project`.
fn cases(report: &Report) -> Vec<Case<'_>> {
    let mut cases = Cases::default();
    for file in &report.files {
        cases.index_of(file, true);
    }
    for d in &report.diagnostics {
        let i = match &d.file {
            Some(file) => cases.index_of(file, true),
            None => cases.index_of(PROJECT, false),
        };
        let case = &mut cases.list[i];
        if d.severity == Severity::Error {
            case.errors.push(d);
        } else {
            case.others.push(d);
        }
    }
    let mut list = cases.list;
    // `project` goes last even when a finding without a file came before others.
    if let Some(at) = list.iter().position(|case| !case.is_file) {
        let project = list.remove(at);
        list.push(project);
    }
    list
}

/// Test cases in order of first mention, found by name.
#[derive(Default)]
struct Cases<'a> {
    list: Vec<Case<'a>>,
    by_name: HashMap<&'a str, usize>,
}

impl<'a> Cases<'a> {
    fn index_of(&mut self, name: &'a str, is_file: bool) -> usize {
        *self.by_name.entry(name).or_insert_with(|| {
            self.list.push(Case { name, is_file, errors: Vec::new(), others: Vec::new() });
            self.list.len() - 1
        })
    }
}

fn write_case(out: &mut String, case: &Case<'_>) {
    let open = format!(
        "    <testcase name=\"{}\" classname=\"{CLASSNAME}\" time=\"0\"",
        attribute(case.name)
    );
    if case.errors.is_empty() && case.others.is_empty() {
        out.push_str(&open);
        out.push_str("/>\n");
        return;
    }
    out.push_str(&open);
    out.push_str(">\n");
    if let Some(first) = case.errors.first() {
        let mut codes: Vec<&str> = Vec::new();
        for d in &case.errors {
            if !codes.contains(&d.code.as_str()) {
                codes.push(d.code.as_str());
            }
        }
        let message = match case.errors.len() {
            1 => first.message.clone(),
            n => format!("{} (and {} more)", first.message, n - 1),
        };
        let body: Vec<String> = case.errors.iter().map(|d| finding_line(d)).collect();
        out.push_str(&format!(
            "      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
            attribute(&codes.join(", ")),
            attribute(&message),
            text(&body.join("\n")),
        ));
    }
    if !case.others.is_empty() {
        let lines: Vec<String> = case
            .others
            .iter()
            .map(|d| format!("{}[{}]: {}", d.severity.as_str(), d.code, finding_line(d)))
            .collect();
        out.push_str(&format!("      <system-out>{}</system-out>\n", text(&lines.join("\n"))));
    }
    out.push_str("    </testcase>\n");
}

/// `file:line:col pointer — message — help`, leaving out what the finding lacks.
fn finding_line(d: &Diagnostic) -> String {
    let mut head = String::new();
    if let Some(file) = &d.file {
        head.push_str(file);
        if let Some(line) = d.line {
            head.push_str(&format!(":{line}"));
            if let Some(column) = d.column {
                head.push_str(&format!(":{column}"));
            }
        }
    }
    if let Some(pointer) = &d.pointer {
        if !head.is_empty() {
            head.push(' ');
        }
        head.push_str(pointer);
    }
    let mut parts = Vec::new();
    if !head.is_empty() {
        parts.push(head);
    }
    parts.push(d.message.clone());
    if let Some(help) = &d.help {
        parts.push(help.clone());
    }
    parts.join(" — ")
}

/// Whether XML 1.0 can carry `c` at all (its `Char` production; Rust strings hold no
/// surrogates).
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
}

/// Escapes element content.
pub(crate) fn text(s: &str) -> String {
    escape(s, false)
}

/// Escapes an attribute value (to be put between double quotes).
pub(crate) fn attribute(s: &str) -> String {
    escape(s, true)
}

fn escape(s: &str, in_attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // A raw CR would be read back as LF.
            '\r' => out.push_str("&#13;"),
            '"' if in_attribute => out.push_str("&quot;"),
            '\'' if in_attribute => out.push_str("&apos;"),
            // Attribute normalization would turn raw line breaks and tabs into spaces.
            '\n' if in_attribute => out.push_str("&#10;"),
            '\t' if in_attribute => out.push_str("&#9;"),
            c if is_xml_char(c) => out.push(c),
            _ => out.push(char::REPLACEMENT_CHARACTER),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use quick_xml::Reader;
    use quick_xml::XmlVersion;
    use quick_xml::events::{BytesStart, Event};

    use super::*;
    use crate::error::Code;
    use crate::report::fixtures;

    /// One element of the parsed document, flattened.
    #[derive(Debug)]
    struct Element {
        name: String,
        depth: usize,
        attributes: HashMap<String, String>,
        text: String,
    }

    /// Parses the document with quick-xml, checking that it is well-formed (matching end
    /// tags, valid escapes) and flattening it into elements in document order.
    fn parse(xml: &str) -> Vec<Element> {
        let mut reader = Reader::from_str(xml);
        reader.config_mut().check_end_names = true;
        let mut elements: Vec<Element> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        let mut saw_declaration = false;
        let element = |start: &BytesStart<'_>, depth: usize| Element {
            name: start.name().as_ref().to_string(),
            depth,
            attributes: start
                .attributes()
                .map(|a| {
                    let a = a.expect("well-formed attribute");
                    let value = a.normalized_value(XmlVersion::Implicit1_0).expect("valid escapes");
                    (a.key.as_ref().to_string(), value.into_owned())
                })
                .collect(),
            text: String::new(),
        };
        loop {
            match reader.read_event().expect("well-formed XML") {
                Event::Decl(decl) => {
                    assert_eq!(decl.version().unwrap(), "1.0");
                    assert_eq!(decl.encoding().unwrap().unwrap(), "UTF-8");
                    saw_declaration = true;
                }
                Event::Start(start) => {
                    elements.push(element(&start, open.len()));
                    open.push(elements.len() - 1);
                }
                Event::Empty(start) => elements.push(element(&start, open.len())),
                Event::End(_) => {
                    open.pop();
                }
                Event::Text(t) => {
                    let text = t.xml10_content();
                    if let Some(&i) = open.last() {
                        elements[i].text.push_str(&text);
                    } else {
                        assert!(text.trim().is_empty(), "text outside the root: {text:?}");
                    }
                }
                Event::GeneralRef(r) => {
                    let resolved = match r.resolve_char_ref().expect("valid character reference") {
                        Some(c) => c.to_string(),
                        None => match r.as_ref() {
                            "amp" => "&".into(),
                            "lt" => "<".into(),
                            "gt" => ">".into(),
                            "quot" => "\"".into(),
                            "apos" => "'".into(),
                            other => panic!("unknown entity {other}"),
                        },
                    };
                    let &i = open.last().expect("reference inside an element");
                    elements[i].text.push_str(&resolved);
                }
                Event::Eof => break,
                other => panic!("unexpected XML event {other:?}"),
            }
        }
        assert!(saw_declaration, "XML declaration");
        assert!(open.is_empty(), "unclosed elements");
        elements
    }

    fn named<'e>(elements: &'e [Element], name: &str) -> Vec<&'e Element> {
        elements.iter().filter(|e| e.name == name).collect()
    }

    #[test]
    fn representative_report() {
        insta::assert_snapshot!(junit(&fixtures::representative()), @r#"
        <?xml version="1.0" encoding="UTF-8"?>
        <testsuites name="pactum validate" tests="3" failures="2" errors="0">
          <testsuite name="pactum validate" tests="3" failures="2" errors="0" skipped="0" time="0">
            <properties>
              <property name="note" value="no registry.json found above contracts/: registry checks skipped"/>
            </properties>
            <testcase name="contracts/classify/1.0.0.json" classname="pactum.validate" time="0">
              <failure type="contract_schema_invalid" message="/boundary/temperature: 3 is greater than the maximum of 2">contracts/classify/1.0.0.json:7:20 /boundary/temperature — /boundary/temperature: 3 is greater than the maximum of 2 — set boundary.temperature to a number between 0 and 2</failure>
            </testcase>
            <testcase name="packs/classify/1.0.0.yaml" classname="pactum.validate" time="0">
              <system-out>warning[template_input_unused]: packs/classify/1.0.0.yaml:12:5 /input_schema/properties/locale — input_schema declares `locale` but the template never uses it</system-out>
            </testcase>
            <testcase name="project" classname="pactum.validate" time="0">
              <failure type="registry_history_broken" message="history entry 3 does not hash-chain">history entry 3 does not hash-chain — restore registry.json from version control</failure>
            </testcase>
          </testsuite>
        </testsuites>
        "#);
    }

    #[test]
    fn structure_and_counts() {
        let elements = parse(&junit(&fixtures::representative()));
        let root = &elements[0];
        assert_eq!((root.name.as_str(), root.depth), ("testsuites", 0));
        assert_eq!(root.attributes["tests"], "3");
        assert_eq!(root.attributes["failures"], "2");
        assert_eq!(root.attributes["errors"], "0");
        let suites = named(&elements, "testsuite");
        assert_eq!(suites.len(), 1);
        let suite = suites[0];
        assert_eq!(suite.depth, 1);
        for (key, value) in [
            ("name", SUITE),
            ("tests", "3"),
            ("failures", "2"),
            ("errors", "0"),
            ("skipped", "0"),
            ("time", "0"),
        ] {
            assert_eq!(suite.attributes[key], value, "{key}");
        }
        let cases = named(&elements, "testcase");
        assert_eq!(cases.len(), 3);
        assert!(cases.iter().all(|c| c.depth == 2 && c.attributes["classname"] == CLASSNAME));
        let names: Vec<&str> = cases.iter().map(|c| c.attributes["name"].as_str()).collect();
        assert_eq!(
            names,
            ["contracts/classify/1.0.0.json", "packs/classify/1.0.0.yaml", "project"]
        );
        let failures = named(&elements, "failure");
        assert_eq!(failures.len(), 2);
        assert!(failures.iter().all(|f| f.depth == 3));
        assert_eq!(failures[0].attributes["type"], "contract_schema_invalid");
        let outs = named(&elements, "system-out");
        assert_eq!(outs.len(), 1);
        assert!(outs[0].text.starts_with("warning[template_input_unused]: "));
        let properties = named(&elements, "property");
        assert_eq!(properties.len(), 1);
        assert_eq!(properties[0].depth, 3);
        assert_eq!(properties[0].attributes["name"], "note");
        assert_eq!(properties[0].attributes["value"], fixtures::representative().notes[0]);
        assert!(cases.iter().all(|c| !c.attributes.contains_key("file")), "no `file` attribute");
    }

    #[test]
    fn empty_report() {
        let out = junit(&Report::default());
        assert_eq!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites name=\"pactum validate\" tests=\"0\" failures=\"0\" errors=\"0\">\n  \
             <testsuite name=\"pactum validate\" tests=\"0\" failures=\"0\" errors=\"0\" skipped=\"0\" time=\"0\">\n  \
             </testsuite>\n</testsuites>\n"
        );
        assert_eq!(named(&parse(&out), "testcase").len(), 0);
    }

    #[test]
    fn warnings_only_passes_every_test() {
        let elements = parse(&junit(&fixtures::warnings_only()));
        assert_eq!(elements[0].attributes["failures"], "0");
        assert_eq!(named(&elements, "failure").len(), 0);
        assert_eq!(named(&elements, "testcase").len(), 1);
        assert_eq!(
            named(&elements, "system-out")[0].text,
            "warning[contract_deprecated]: contracts/a.json — PRC-A-001@1.0.0 is deprecated"
        );
    }

    #[test]
    fn several_errors_share_one_failure() {
        let file = "contracts/a.json";
        let report = Report {
            files: vec![file.into(), "contracts/b.json".into()],
            diagnostics: vec![
                Diagnostic::new(Code::ContractSchemaInvalid, "first")
                    .file(file)
                    .pointer("/a")
                    .at(2, 3),
                Diagnostic::new(Code::ContractSchemaInvalid, "second").file(file).at(4, 1),
                Diagnostic::new(Code::ContractHashMismatch, "third").file(file).help("re-register"),
                Diagnostic::new(Code::ContractDeprecated, "old").file(file),
            ],
            notes: vec![],
        };
        let elements = parse(&junit(&report));
        assert_eq!(elements[0].attributes["tests"], "2");
        assert_eq!(elements[0].attributes["failures"], "1");
        let failures = named(&elements, "failure");
        assert_eq!(failures.len(), 1);
        assert_eq!(
            failures[0].attributes["type"],
            "contract_schema_invalid, contract_hash_mismatch"
        );
        assert_eq!(failures[0].attributes["message"], "first (and 2 more)");
        assert_eq!(
            failures[0].text,
            "contracts/a.json:2:3 /a — first\ncontracts/a.json:4:1 — second\ncontracts/a.json — third — re-register"
        );
        assert_eq!(
            named(&elements, "system-out")[0].text,
            "warning[contract_deprecated]: contracts/a.json — old"
        );
    }

    #[test]
    fn unlisted_files_and_project_findings_get_their_own_cases() {
        let report = Report {
            files: vec!["a.json".into()],
            diagnostics: vec![
                Diagnostic::new(Code::RegistryHistoryBroken, "broken").pointer("/history/2"),
                Diagnostic::new(Code::RegistryFileMissing, "gone").file("b.json"),
                Diagnostic::new(Code::ContractDeprecated, "old").severity(Severity::Note),
            ],
            notes: vec![],
        };
        let elements = parse(&junit(&report));
        let cases = named(&elements, "testcase");
        let names: Vec<&str> = cases.iter().map(|c| c.attributes["name"].as_str()).collect();
        assert_eq!(names, ["a.json", "b.json", "project"]);
        assert!(!cases[2].attributes.contains_key("file"));
        assert_eq!(elements[0].attributes["failures"], "2");
        let failures = named(&elements, "failure");
        assert_eq!(failures[1].text, "/history/2 — broken");
        assert_eq!(named(&elements, "system-out")[0].text, "note[contract_deprecated]: old");
    }

    #[test]
    fn hostile_strings_are_escaped_and_read_back() {
        let out = junit(&fixtures::hostile());
        assert!(!out.contains('\u{1b}') && !out.contains('\0'));
        let elements = parse(&out);
        // What XML can carry comes back exactly; the rest became U+FFFD.
        let carried = fixtures::HOSTILE.replace(['\u{1b}', '\0'], "\u{fffd}");
        let case = named(&elements, "testcase")[0];
        assert_eq!(case.attributes["name"], "odd dir/a&b<c>.json");
        let failure = named(&elements, "failure")[0];
        assert_eq!(failure.attributes["message"], carried);
        assert_eq!(
            failure.text,
            format!("odd dir/a&b<c>.json:1:1 /a~1b/\"c\" — {carried} — {carried}")
        );
        let outs = named(&elements, "system-out");
        assert_eq!(outs[0].text, format!("warning[config_invalid]: {carried}"));
        assert_eq!(named(&elements, "property")[0].attributes["value"], carried);
        assert!(out.contains("]]&gt;"));
    }

    #[test]
    fn escaping_rules() {
        assert_eq!(
            attribute("a\"b'c<d>e&f\ng\th\ri"),
            "a&quot;b&apos;c&lt;d&gt;e&amp;f&#10;g&#9;h&#13;i"
        );
        assert_eq!(text("a\"b'c<d>e&f\ng\th\ri]]>"), "a\"b'c&lt;d&gt;e&amp;f\ng\th&#13;i]]&gt;");
        assert_eq!(
            text("\u{0}\u{8}\u{b}\u{c}\u{1f}\u{7f}\u{fffe}\u{ffff}é😀"),
            "\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{7f}\u{fffd}\u{fffd}é😀"
        );
    }
}
