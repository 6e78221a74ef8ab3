//! SARIF 2.1.0 output that GitHub code scanning accepts.
//!
//! One run whose `tool.driver` (name `pactum`) has one rule per distinct code in the
//! report, sorted in code order: `id` is the code, `name` its PascalCase form, the short
//! and full descriptions are [`Code::summary`], and the default level is the code's
//! default severity. Each finding becomes one result with `ruleId`, `ruleIndex`, `level`
//! (`error`, `warning` or `note`), `message.text` (the message, then `help: ...` on its own
//! line) and exactly one location.
//!
//! Choices this module makes, each for a documented GitHub requirement:
//!
//! - Locations are the report's paths, which are relative to the repository (see
//!   [`crate::validate::names_root`]), percent-encoded where a URI needs it, with
//!   `uriBaseId` `%SRCROOT%`; GitHub reads relative URIs as relative to the repository
//!   root. A file outside the repository has an absolute path and becomes a `file:///`
//!   URI without a base. `region` holds `startLine`, `startColumn`, `endLine` and (when the source line
//!   is known) `endColumn` = the end of that line; it is left out when the finding has no
//!   line, and the result then points at the whole file. Columns count Unicode code points
//!   (`columnKind` `unicodeCodePoints`), as diagnostics do.
//! - GitHub shows a result only with a location, so a project-level finding (no file)
//!   points at the shallowest `registry.json` the report checked, or at `registry.json` in
//!   the root when it checked none, and carries `"projectLevel": true` in its properties.
//! - `partialFingerprints` carries pactum's own fingerprint under its own key,
//!   `pactumFingerprint/v1`: `HASH:N`, a 64-bit FNV-1a hash of code, path and JSON pointer
//!   (the message when there is no pointer), and N counting equal hashes in report order.
//!   It does not depend on line numbers, so it survives edits that move a value to another
//!   line. `primaryLocationLineHash` is left to GitHub's upload step, which computes it
//!   from the source line and warns when a file already carries a different value.
//! - Each rule's `help` is the code's section of `docs/error-codes.md` (what it means, what
//!   reports it, an example and the fix), embedded at build time, as `text` and as
//!   `markdown` (which GitHub shows on the alert).
//! - `tool.driver.informationUri` is the project's home, the `repository` of Cargo.toml;
//!   it is left out while the manifest names none, rather than pointing at an invented
//!   address.
//! - GitHub rejects runs with more than 25,000 results. Past that the most severe 25,000
//!   are kept (in report order) and `run.properties.omittedResults` counts the rest.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::diagnostic::{Diagnostic, Report};
use crate::error::{Code, Severity};

/// Where SARIF consumers send people for more about the tool (`tool.driver.informationUri`):
/// the `repository` of Cargo.toml, empty (and then left out) when it names none.
pub const INFORMATION_URI: &str = env!("CARGO_PKG_REPOSITORY");

/// The key of pactum's own fingerprint in `partialFingerprints`.
const FINGERPRINT_KEY: &str = "pactumFingerprint/v1";

/// `docs/error-codes.md`, the source of every rule's help.
const ERROR_CODES_DOC: &str = include_str!("../../docs/error-codes.md");

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const SRCROOT: &str = "%SRCROOT%";
/// GitHub's hard limit on results per run.
const MAX_RESULTS: usize = 25_000;

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    tool: Tool<'a>,
    /// The run's notes (registry checks skipped, findings baselined) as notifications, so a
    /// consumer sees why a run has few results (SPEC §21: never a silent pass).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    invocations: Vec<Invocation>,
    original_uri_base_ids: BTreeMap<&'static str, BaseId>,
    column_kind: &'static str,
    results: Vec<SarifResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    properties: Option<RunProperties>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation {
    execution_successful: bool,
    tool_execution_notifications: Vec<Notification>,
}

#[derive(Serialize)]
struct Notification {
    level: &'static str,
    message: Text,
}

#[derive(Serialize)]
struct Tool<'a> {
    driver: Driver<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver<'a> {
    name: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    version: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    information_uri: &'static str,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: &'static str,
    name: String,
    short_description: Text,
    full_description: Text,
    default_configuration: Configuration,
    help: Help,
}

/// A rule's help: plain text, and the same as Markdown for viewers that render it.
#[derive(Serialize)]
struct Help {
    text: String,
    markdown: String,
}

/// A SARIF `message` or `multiformatMessageString` with plain text only.
#[derive(Serialize)]
struct Text {
    text: String,
}

impl Text {
    fn new(text: impl Into<String>) -> Self {
        Text { text: text.into() }
    }
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct BaseId {
    description: Text,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RunProperties {
    omitted_results: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: &'static str,
    rule_index: usize,
    level: &'static str,
    message: Text,
    locations: [Location; 1],
    partial_fingerprints: BTreeMap<&'static str, String>,
    #[serde(skip_serializing_if = "ResultProperties::is_empty")]
    properties: ResultProperties,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    physical_location: PhysicalLocation,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_base_id: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_column: Option<usize>,
    end_line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_column: Option<usize>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultProperties {
    #[serde(skip_serializing_if = "Option::is_none")]
    pointer: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    project_level: bool,
}

impl ResultProperties {
    fn is_empty(&self) -> bool {
        self.pointer.is_none() && !self.project_level
    }
}

/// Renders `report` as a SARIF 2.1.0 log (pretty-printed JSON and a newline) whose tool
/// version is `tool_version` (left out when empty).
pub fn sarif(report: &Report, tool_version: &str) -> String {
    let mut kept: Vec<&Diagnostic> = report.diagnostics.iter().collect();
    let omitted = kept.len().saturating_sub(MAX_RESULTS);
    if omitted > 0 {
        let mut by_severity: Vec<usize> = (0..kept.len()).collect();
        by_severity.sort_by_key(|&i| std::cmp::Reverse(kept[i].severity));
        by_severity.truncate(MAX_RESULTS);
        by_severity.sort_unstable();
        kept = by_severity.into_iter().map(|i| kept[i]).collect();
    }

    let mut codes: Vec<Code> = kept.iter().map(|d| d.code).collect();
    codes.sort_unstable();
    codes.dedup();
    let rule_index: HashMap<Code, usize> = codes.iter().enumerate().map(|(i, &c)| (c, i)).collect();

    let anchor = project_anchor(report);
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let results = kept
        .iter()
        .map(|d| {
            let file = d.file.as_deref().filter(|f| !f.is_empty()).unwrap_or(anchor);
            let hash = fnv1a(&[d.code.as_str(), file, d.pointer.as_deref().unwrap_or(&d.message)]);
            let occurrence = seen.entry(hash).or_insert(0);
            *occurrence += 1;
            SarifResult {
                rule_id: d.code.as_str(),
                rule_index: rule_index.get(&d.code).copied().unwrap_or_default(),
                level: d.severity.as_str(),
                message: Text::new(message_text(d)),
                locations: [Location {
                    physical_location: PhysicalLocation {
                        artifact_location: artifact_location(file),
                        region: region(d),
                    },
                }],
                partial_fingerprints: BTreeMap::from([(
                    FINGERPRINT_KEY,
                    format!("{hash:016x}:{occurrence}"),
                )]),
                properties: ResultProperties {
                    pointer: d.pointer.clone(),
                    project_level: d.file.is_none(),
                },
            }
        })
        .collect();

    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: [Run {
            tool: Tool {
                driver: Driver {
                    name: "pactum",
                    version: tool_version,
                    information_uri: INFORMATION_URI,
                    rules: codes.iter().map(|&code| rule(code)).collect(),
                },
            },
            invocations: if report.notes.is_empty() {
                Vec::new()
            } else {
                vec![Invocation {
                    execution_successful: true,
                    tool_execution_notifications: report
                        .notes
                        .iter()
                        .map(|n| Notification { level: "note", message: Text::new(n.clone()) })
                        .collect(),
                }]
            },
            original_uri_base_ids: BTreeMap::from([(
                SRCROOT,
                BaseId {
                    description: Text::new(
                        "The repository root (git's top level, else the folder pactum validate \
                         ran in); relative result paths are relative to it.",
                    ),
                },
            )]),
            column_kind: "unicodeCodePoints",
            results,
            properties: (omitted > 0).then_some(RunProperties { omitted_results: omitted }),
        }],
    };
    // Serializing these structs cannot fail: every key is a string, every value plain data.
    let mut out = serde_json::to_string_pretty(&log).unwrap_or_default();
    out.push('\n');
    out
}

fn rule(code: Code) -> Rule {
    let level = match code.default_severity() {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    };
    Rule {
        id: code.as_str(),
        name: pascal_case(code.as_str()),
        short_description: Text::new(code.summary()),
        full_description: Text::new(format!("{}.", code.summary())),
        default_configuration: Configuration { level },
        help: help(code),
    }
}

/// The code's section of `docs/error-codes.md` (without its heading), as Markdown and as
/// text (the same without emphasis markers). A code without a section (which a test
/// forbids) falls back to its summary.
fn help(code: Code) -> Help {
    let markdown =
        doc_section(code).map(str::to_string).unwrap_or_else(|| format!("{}.", code.summary()));
    Help { text: markdown.replace("**", ""), markdown }
}

/// The body of the section `## <code>` of `docs/error-codes.md`, trimmed.
fn doc_section(code: Code) -> Option<&'static str> {
    let heading = format!("\n## {}\n", code.as_str());
    let start = ERROR_CODES_DOC.find(&heading)? + heading.len();
    let rest = &ERROR_CODES_DOC[start..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    Some(rest[..end].trim()).filter(|body| !body.is_empty())
}

/// A relative path under `%SRCROOT%`, or an absolute one as a `file://` URI.
fn artifact_location(file: &str) -> ArtifactLocation {
    if file.starts_with('/') {
        ArtifactLocation { uri: format!("file://{}", encode_uri_path(file)), uri_base_id: None }
    } else {
        ArtifactLocation { uri: encode_uri_path(file), uri_base_id: Some(SRCROOT) }
    }
}

/// The message, then the help on its own line. GitHub needs non-empty text, so an empty
/// message falls back to the code's summary.
fn message_text(d: &Diagnostic) -> String {
    let message = if d.message.trim().is_empty() { d.code.summary() } else { d.message.as_str() };
    match &d.help {
        Some(help) => format!("{message}\nhelp: {help}"),
        None => message.to_string(),
    }
}

/// GitHub code scanning needs a start line for every result: a finding about a whole
/// file (or the project) points at line 1.
fn region(d: &Diagnostic) -> Option<Region> {
    let line = d.line.unwrap_or(1).max(1);
    let start_column = d.column.map(|c| c.max(1));
    let end_column = d.excerpt.as_ref().map(|excerpt| {
        let end = excerpt.line_chars + 1;
        end.max(start_column.unwrap_or(1) + 1)
    });
    Some(Region { start_line: line, start_column, end_line: line, end_column })
}

/// Where project-level findings point: the shallowest checked `registry.json`, else the
/// root's `registry.json`.
fn project_anchor(report: &Report) -> &str {
    report
        .files
        .iter()
        .filter(|f| f.rsplit('/').next() == Some("registry.json"))
        .min_by_key(|f| f.matches('/').count())
        .map_or("registry.json", String::as_str)
}

/// `contract_schema_invalid` → `ContractSchemaInvalid`.
fn pascal_case(snake: &str) -> String {
    snake
        .split('_')
        .flat_map(|word| {
            let mut chars = word.chars();
            chars.next().map(|first| first.to_ascii_uppercase()).into_iter().chain(chars)
        })
        .collect()
}

/// Percent-encodes a relative `/`-separated path into a URI reference: unreserved
/// characters, sub-delimiters, `@` and `/` stay, everything else (`%`, `:`, `#`, `?`,
/// spaces, non-ASCII) becomes `%XX` per UTF-8 byte.
fn encode_uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        let keep = byte.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=@/".contains(&byte);
        if keep {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// 64-bit FNV-1a over the parts, each followed by a 0xFF byte (which UTF-8 never
/// contains) so that `("ab", "c")` and `("a", "bc")` differ. Stable across Rust versions
/// and platforms, unlike `std`'s `DefaultHasher`.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0xFF]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::report::fixtures;

    fn parse(report: &Report) -> Value {
        serde_json::from_str(&sarif(report, "0.1.0")).expect("valid JSON")
    }

    fn results(doc: &Value) -> &Vec<Value> {
        doc["runs"][0]["results"].as_array().unwrap()
    }

    /// The SARIF 2.1.0 structure this renderer relies on, written from the OASIS spec
    /// (sarifLog §3.13, run §3.14, tool §3.18, toolComponent §3.19, reportingDescriptor
    /// §3.49, result §3.27, location §3.28, physicalLocation §3.29, artifactLocation §3.4,
    /// region §3.30, message §3.11): required properties, enums, minimums, and no unknown
    /// properties where the spec closes an object.
    fn sarif_schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "required": ["version", "runs"],
            "additionalProperties": false,
            "properties": {
                "$schema": {"type": "string", "format": "uri"},
                "version": {"const": "2.1.0"},
                "runs": {"type": "array", "items": {"$ref": "#/$defs/run"}}
            },
            "$defs": {
                "text": {
                    "type": "object",
                    "required": ["text"],
                    "additionalProperties": false,
                    "properties": {"text": {"type": "string", "minLength": 1}}
                },
                "level": {"enum": ["none", "note", "warning", "error"]},
                "run": {
                    "type": "object",
                    "required": ["tool"],
                    "additionalProperties": false,
                    "properties": {
                        "tool": {"$ref": "#/$defs/tool"},
                        "originalUriBaseIds": {
                            "type": "object",
                            "additionalProperties": {"$ref": "#/$defs/artifactLocation"}
                        },
                        "columnKind": {"enum": ["utf16CodeUnits", "unicodeCodePoints"]},
                        "results": {"type": "array", "items": {"$ref": "#/$defs/result"}},
                        "invocations": {
                            "type": "array",
                            "items": {"$ref": "#/$defs/invocation"}
                        },
                        "properties": {"type": "object"}
                    }
                },
                "invocation": {
                    "type": "object",
                    "required": ["executionSuccessful"],
                    "additionalProperties": false,
                    "properties": {
                        "executionSuccessful": {"type": "boolean"},
                        "toolExecutionNotifications": {
                            "type": "array",
                            "items": {"$ref": "#/$defs/notification"}
                        }
                    }
                },
                "notification": {
                    "type": "object",
                    "required": ["message"],
                    "additionalProperties": false,
                    "properties": {
                        "message": {"$ref": "#/$defs/text"},
                        "level": {"$ref": "#/$defs/level"}
                    }
                },
                "tool": {
                    "type": "object",
                    "required": ["driver"],
                    "additionalProperties": false,
                    "properties": {"driver": {"$ref": "#/$defs/toolComponent"}}
                },
                "toolComponent": {
                    "type": "object",
                    "required": ["name"],
                    "additionalProperties": false,
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "version": {"type": "string"},
                        "informationUri": {"type": "string", "format": "uri"},
                        "rules": {
                            "type": "array",
                            "items": {"$ref": "#/$defs/reportingDescriptor"}
                        }
                    }
                },
                "reportingDescriptor": {
                    "type": "object",
                    "required": ["id"],
                    "additionalProperties": false,
                    "properties": {
                        "id": {"type": "string", "minLength": 1},
                        "name": {"type": "string"},
                        "shortDescription": {"$ref": "#/$defs/text"},
                        "fullDescription": {"$ref": "#/$defs/text"},
                        "help": {
                            "type": "object",
                            "required": ["text"],
                            "additionalProperties": false,
                            "properties": {
                                "text": {"type": "string", "minLength": 1},
                                "markdown": {"type": "string", "minLength": 1}
                            }
                        },
                        "defaultConfiguration": {
                            "type": "object",
                            "additionalProperties": false,
                            "properties": {"level": {"$ref": "#/$defs/level"}}
                        }
                    }
                },
                "result": {
                    "type": "object",
                    "required": ["message"],
                    "additionalProperties": false,
                    "properties": {
                        "ruleId": {"type": "string"},
                        "ruleIndex": {"type": "integer", "minimum": -1},
                        "level": {"$ref": "#/$defs/level"},
                        "message": {"$ref": "#/$defs/text"},
                        "locations": {"type": "array", "items": {"$ref": "#/$defs/location"}},
                        "partialFingerprints": {
                            "type": "object",
                            "additionalProperties": {"type": "string"}
                        },
                        "properties": {"type": "object"}
                    }
                },
                "location": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {"physicalLocation": {"$ref": "#/$defs/physicalLocation"}}
                },
                "physicalLocation": {
                    "type": "object",
                    "additionalProperties": false,
                    "anyOf": [{"required": ["artifactLocation"]}, {"required": ["address"]}],
                    "properties": {
                        "artifactLocation": {"$ref": "#/$defs/artifactLocation"},
                        "region": {"$ref": "#/$defs/region"}
                    }
                },
                "artifactLocation": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "uri": {"type": "string", "format": "uri-reference"},
                        "uriBaseId": {"type": "string"},
                        "description": {"$ref": "#/$defs/text"}
                    }
                },
                "region": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "startLine": {"type": "integer", "minimum": 1},
                        "startColumn": {"type": "integer", "minimum": 1},
                        "endLine": {"type": "integer", "minimum": 1},
                        "endColumn": {"type": "integer", "minimum": 1}
                    }
                }
            }
        })
    }

    fn assert_valid(doc: &Value) {
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&sarif_schema())
            .expect("the test schema compiles");
        let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
    }

    /// Every requirement GitHub's "SARIF support for code scanning" page lists, checked
    /// on one document.
    fn assert_github_requirements(doc: &Value) {
        assert_eq!(doc["$schema"], SCHEMA);
        assert_eq!(doc["version"], "2.1.0");
        let runs = doc["runs"].as_array().unwrap();
        assert!(!runs.is_empty() && runs.len() <= 20, "1 to 20 runs");
        let run = &runs[0];
        let driver = &run["tool"]["driver"];
        assert_eq!(driver["name"], "pactum");
        let rules = driver["rules"].as_array().expect("rules[] is required");
        assert!(rules.len() <= 25_000);
        let mut ids = Vec::new();
        for rule in rules {
            let id = rule["id"].as_str().unwrap();
            assert!(!id.is_empty());
            ids.push(id);
            let name = rule["name"].as_str().unwrap();
            assert!(!name.is_empty() && name.chars().count() <= 255);
            for key in ["shortDescription", "fullDescription"] {
                let text = rule[key]["text"].as_str().unwrap();
                assert!(!text.is_empty() && text.chars().count() <= 1024, "{key}: {text}");
            }
            assert!(!rule["help"]["text"].as_str().unwrap().is_empty());
            let level = rule["defaultConfiguration"]["level"].as_str().unwrap();
            assert!(["note", "warning", "error"].contains(&level));
        }
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "rule ids are unique");

        let results = run["results"].as_array().expect("results[] is required");
        assert!(results.len() <= 25_000);
        for result in results {
            let rule_id = result["ruleId"].as_str().unwrap();
            let index = result["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[index]["id"], rule_id, "ruleIndex points at the ruleId's rule");
            assert!(["note", "warning", "error"].contains(&result["level"].as_str().unwrap()));
            assert!(!result["message"]["text"].as_str().unwrap().is_empty());
            let locations = result["locations"].as_array().unwrap();
            assert_eq!(locations.len(), 1, "one location, at most 10 (1,000 hard limit)");
            let physical = &locations[0]["physicalLocation"];
            let uri = physical["artifactLocation"]["uri"].as_str().unwrap();
            assert!(!uri.is_empty() && !uri.starts_with('/') && !uri.contains("://"), "{uri}");
            assert!(!uri.contains('\\'), "{uri}");
            assert_eq!(physical["artifactLocation"]["uriBaseId"], SRCROOT);
            if let Some(region) = physical.get("region") {
                assert!(region["startLine"].as_u64().unwrap() >= 1);
                assert_eq!(region["endLine"], region["startLine"]);
            }
            // GitHub computes primaryLocationLineHash itself and warns about a different
            // value already in the file: pactum's fingerprint has a key of its own.
            let fingerprints = result["partialFingerprints"].as_object().unwrap();
            assert!(!fingerprints.contains_key("primaryLocationLineHash"));
            assert!(!fingerprints[FINGERPRINT_KEY].as_str().unwrap().is_empty());
        }
    }

    #[test]
    fn representative_report() {
        let mut out = sarif(&fixtures::representative(), "0.1.0");
        // The help of each rule is its docs section (checked in `rule_help_is_the_docs_section`).
        for code in
            [Code::ContractSchemaInvalid, Code::RegistryHistoryBroken, Code::TemplateInputUnused]
        {
            let help = help(code);
            for (text, shown) in [(help.text, "[text]"), (help.markdown, "[markdown]")] {
                let quoted = serde_json::to_string(&text).unwrap();
                assert!(out.contains(&quoted), "{code:?}");
                out = out.replace(&quoted, &format!("\"{shown} of {}\"", code.as_str()));
            }
        }
        insta::assert_snapshot!(out, @r#"
        {
          "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
          "version": "2.1.0",
          "runs": [
            {
              "tool": {
                "driver": {
                  "name": "pactum",
                  "version": "0.1.0",
                  "rules": [
                    {
                      "id": "contract_schema_invalid",
                      "name": "ContractSchemaInvalid",
                      "shortDescription": {
                        "text": "a contract does not fit prompt_contract.schema.json, or an embedded schema is not a valid JSON Schema"
                      },
                      "fullDescription": {
                        "text": "a contract does not fit prompt_contract.schema.json, or an embedded schema is not a valid JSON Schema."
                      },
                      "defaultConfiguration": {
                        "level": "error"
                      },
                      "help": {
                        "text": "[text] of contract_schema_invalid",
                        "markdown": "[markdown] of contract_schema_invalid"
                      }
                    },
                    {
                      "id": "registry_history_broken",
                      "name": "RegistryHistoryBroken",
                      "shortDescription": {
                        "text": "the registry history does not hash-chain"
                      },
                      "fullDescription": {
                        "text": "the registry history does not hash-chain."
                      },
                      "defaultConfiguration": {
                        "level": "error"
                      },
                      "help": {
                        "text": "[text] of registry_history_broken",
                        "markdown": "[markdown] of registry_history_broken"
                      }
                    },
                    {
                      "id": "template_input_unused",
                      "name": "TemplateInputUnused",
                      "shortDescription": {
                        "text": "input_schema declares a property the template never uses"
                      },
                      "fullDescription": {
                        "text": "input_schema declares a property the template never uses."
                      },
                      "defaultConfiguration": {
                        "level": "warning"
                      },
                      "help": {
                        "text": "[text] of template_input_unused",
                        "markdown": "[markdown] of template_input_unused"
                      }
                    }
                  ]
                }
              },
              "invocations": [
                {
                  "executionSuccessful": true,
                  "toolExecutionNotifications": [
                    {
                      "level": "note",
                      "message": {
                        "text": "no registry.json found above contracts/: registry checks skipped"
                      }
                    }
                  ]
                }
              ],
              "originalUriBaseIds": {
                "%SRCROOT%": {
                  "description": {
                    "text": "The repository root (git's top level, else the folder pactum validate ran in); relative result paths are relative to it."
                  }
                }
              },
              "columnKind": "unicodeCodePoints",
              "results": [
                {
                  "ruleId": "contract_schema_invalid",
                  "ruleIndex": 0,
                  "level": "error",
                  "message": {
                    "text": "/boundary/temperature: 3 is greater than the maximum of 2\nhelp: set boundary.temperature to a number between 0 and 2"
                  },
                  "locations": [
                    {
                      "physicalLocation": {
                        "artifactLocation": {
                          "uri": "contracts/classify/1.0.0.json",
                          "uriBaseId": "%SRCROOT%"
                        },
                        "region": {
                          "startLine": 7,
                          "startColumn": 20,
                          "endLine": 7,
                          "endColumn": 22
                        }
                      }
                    }
                  ],
                  "partialFingerprints": {
                    "pactumFingerprint/v1": "7fc5ae006600f87c:1"
                  },
                  "properties": {
                    "pointer": "/boundary/temperature"
                  }
                },
                {
                  "ruleId": "template_input_unused",
                  "ruleIndex": 2,
                  "level": "warning",
                  "message": {
                    "text": "input_schema declares `locale` but the template never uses it"
                  },
                  "locations": [
                    {
                      "physicalLocation": {
                        "artifactLocation": {
                          "uri": "packs/classify/1.0.0.yaml",
                          "uriBaseId": "%SRCROOT%"
                        },
                        "region": {
                          "startLine": 12,
                          "startColumn": 5,
                          "endLine": 12
                        }
                      }
                    }
                  ],
                  "partialFingerprints": {
                    "pactumFingerprint/v1": "e704e8c5448536da:1"
                  },
                  "properties": {
                    "pointer": "/input_schema/properties/locale"
                  }
                },
                {
                  "ruleId": "registry_history_broken",
                  "ruleIndex": 1,
                  "level": "error",
                  "message": {
                    "text": "history entry 3 does not hash-chain\nhelp: restore registry.json from version control"
                  },
                  "locations": [
                    {
                      "physicalLocation": {
                        "artifactLocation": {
                          "uri": "registry.json",
                          "uriBaseId": "%SRCROOT%"
                        },
                        "region": {
                          "startLine": 1,
                          "endLine": 1
                        }
                      }
                    }
                  ],
                  "partialFingerprints": {
                    "pactumFingerprint/v1": "38e37f22c6aae51c:1"
                  },
                  "properties": {
                    "projectLevel": true
                  }
                }
              ]
            }
          ]
        }
        "#);
    }

    #[test]
    fn documents_pass_the_schema_and_github_checks() {
        let mut many = fixtures::representative();
        for code in Code::ALL {
            many.diagnostics.push(Diagnostic::new(*code, code.summary()).file("x/y.json").at(1, 1));
        }
        for report in [
            Report::default(),
            fixtures::representative(),
            fixtures::warnings_only(),
            fixtures::hostile(),
            many,
        ] {
            let doc = parse(&report);
            assert_valid(&doc);
            assert_github_requirements(&doc);
            assert_eq!(results(&doc).len(), report.diagnostics.len());
        }
    }

    #[test]
    fn the_test_schema_rejects_broken_documents() {
        let validator =
            jsonschema::options().should_validate_formats(true).build(&sarif_schema()).unwrap();
        let good = parse(&fixtures::representative());
        assert!(validator.is_valid(&good));
        let breakages: [fn(&mut Value); 6] = [
            |doc| doc["version"] = json!("2.0.0"),
            |doc| doc["runs"][0]["results"][0]["level"] = json!("fatal"),
            |doc| doc["runs"][0]["results"][0]["message"] = json!({}),
            |doc| {
                doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
                    json!(0)
            },
            |doc| {
                doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
                    ["uri"] = json!("a b.json")
            },
            |doc| {
                doc["runs"][0]["tool"]["driver"]["rules"][0]["shortDescription"]["txt"] = json!("x")
            },
        ];
        for (i, breakage) in breakages.iter().enumerate() {
            let mut doc = good.clone();
            breakage(&mut doc);
            assert!(!validator.is_valid(&doc), "breakage {i} went unnoticed");
        }
    }

    #[test]
    fn rule_help_is_the_docs_section() {
        for &code in Code::ALL {
            let section = doc_section(code).unwrap_or_else(|| panic!("{code:?} has no section"));
            let help = help(code);
            assert_eq!(help.markdown, section);
            assert!(section.starts_with("**Severity:**"), "{code:?}: {section}");
            assert!(section.contains("**Fix:**"), "{code:?}: {section}");
            assert!(!section.contains("\n## "), "{code:?} runs into the next section");
            assert!(help.text.contains("Fix:") && !help.text.contains("**"), "{code:?}");
        }
        // A code's section is found by its exact heading, not by a prefix of another.
        assert!(doc_section(Code::ContractDeprecated).unwrap().contains("deprecated"));
    }

    #[test]
    fn information_uri_is_the_manifest_repository_or_absent() {
        let doc = parse(&Report::default());
        let driver = &doc["runs"][0]["tool"]["driver"];
        assert_eq!(INFORMATION_URI, env!("CARGO_PKG_REPOSITORY"));
        match driver.get("informationUri") {
            Some(uri) => assert_eq!(uri, INFORMATION_URI),
            None => assert!(INFORMATION_URI.is_empty()),
        }
        assert!(!doc.to_string().contains("pactum.dev"), "no invented address");
    }

    #[test]
    fn files_outside_the_repository_are_file_uris() {
        let d = Diagnostic::new(Code::IoError, "x").file("/tmp/elsewhere/a b.json").at(2, 1);
        let doc = parse(&Report { diagnostics: vec![d], ..Report::default() });
        let location = &results(&doc)[0]["locations"][0]["physicalLocation"]["artifactLocation"];
        assert_eq!(location, &json!({"uri": "file:///tmp/elsewhere/a%20b.json"}));
        assert_valid(&doc);
    }

    #[test]
    fn empty_report_has_empty_rules_and_results() {
        let doc = parse(&Report::default());
        assert_eq!(doc["runs"][0]["tool"]["driver"]["rules"], json!([]));
        assert_eq!(doc["runs"][0]["results"], json!([]));
        assert!(doc["runs"][0].get("properties").is_none());
    }

    #[test]
    fn empty_tool_version_is_left_out() {
        let doc: Value = serde_json::from_str(&sarif(&Report::default(), "")).unwrap();
        assert!(doc["runs"][0]["tool"]["driver"].get("version").is_none());
    }

    #[test]
    fn one_rule_per_code_and_indexes_match() {
        let mut report = fixtures::representative();
        report.diagnostics.push(report.diagnostics[0].clone().at(9, 1));
        let doc = parse(&report);
        let rules = doc["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
        let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            ["contract_schema_invalid", "registry_history_broken", "template_input_unused"]
        );
        let indexes: Vec<u64> =
            results(&doc).iter().map(|r| r["ruleIndex"].as_u64().unwrap()).collect();
        assert_eq!(indexes, [0, 2, 1, 0]);
    }

    #[test]
    fn result_level_follows_the_finding_not_the_rule() {
        let mut report = fixtures::warnings_only();
        report.make_strict();
        let doc = parse(&report);
        assert_eq!(results(&doc)[0]["level"], "error");
        assert_eq!(
            doc["runs"][0]["tool"]["driver"]["rules"][0]["defaultConfiguration"]["level"],
            "warning"
        );
        let note =
            Diagnostic::new(Code::ContractDeprecated, "n").file("a").severity(Severity::Note);
        let doc = parse(&Report { diagnostics: vec![note], ..Report::default() });
        assert_eq!(results(&doc)[0]["level"], "note");
    }

    #[test]
    fn fingerprints_are_stable_and_distinct() {
        let report = fixtures::representative();
        let hashes = |report: &Report| -> Vec<String> {
            results(&parse(report))
                .iter()
                .map(|r| r["partialFingerprints"][FINGERPRINT_KEY].as_str().unwrap().to_string())
                .collect()
        };
        let first = hashes(&report);
        assert_eq!(first, hashes(&report));
        // A known value: the format and the hash must not drift between releases.
        assert_eq!(
            first[0],
            format!(
                "{:016x}:1",
                fnv1a(&[
                    "contract_schema_invalid",
                    "contracts/classify/1.0.0.json",
                    "/boundary/temperature"
                ])
            )
        );
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(&["a"]), fnv1a(&["a"]));
        assert_ne!(fnv1a(&["ab", "c"]), fnv1a(&["a", "bc"]));
        // Moving the value to another line keeps the fingerprint.
        let mut moved = report.clone();
        moved.diagnostics[0].line = Some(40);
        assert_eq!(hashes(&moved)[0], first[0]);
        // Equal code, file and pointer: counted apart.
        let mut twice = report.clone();
        twice.diagnostics.insert(1, twice.diagnostics[0].clone());
        let h = hashes(&twice);
        assert_eq!(h[0].rsplit_once(':').unwrap().1, "1");
        assert_eq!(h[1].rsplit_once(':').unwrap().1, "2");
        assert_eq!(h[0].split_once(':').unwrap().0, h[1].split_once(':').unwrap().0);
        let mut all = h.clone();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), h.len());
    }

    #[test]
    fn findings_without_line_or_file() {
        let report = Report {
            files: vec!["contracts/registry.json".into(), "registry.json".into(), "a.json".into()],
            diagnostics: vec![
                Diagnostic::new(Code::FileTooLarge, "too big").file("a.json"),
                Diagnostic::new(Code::RegistryHistoryBroken, "broken"),
            ],
            notes: vec![],
        };
        let doc = parse(&report);
        let location = |i: usize| results(&doc)[i]["locations"][0]["physicalLocation"].clone();
        assert_eq!(
            location(0),
            json!({"artifactLocation": {"uri": "a.json", "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 1, "endLine": 1}})
        );
        assert_eq!(location(1)["artifactLocation"]["uri"], "registry.json");
        assert_eq!(location(1)["region"]["startLine"], 1);
        assert_eq!(results(&doc)[1]["properties"], json!({"projectLevel": true}));

        let nested = Report {
            files: vec!["a/b/registry.json".into(), "a/registry.json".into()],
            diagnostics: vec![Diagnostic::new(Code::RegistryHistoryBroken, "broken")],
            notes: vec![],
        };
        let doc = parse(&nested);
        assert_eq!(
            results(&doc)[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "a/registry.json"
        );
    }

    #[test]
    fn unicode_columns_and_region_end() {
        let d = Diagnostic {
            excerpt: Some(crate::source::Excerpt::whole("  \"名前\": 5,\r\n")),
            ..Diagnostic::new(Code::ContractSchemaInvalid, "x")
        }
        .file("c.json")
        .at(2, 9);
        let doc = parse(&Report { diagnostics: vec![d], ..Report::default() });
        assert_eq!(doc["runs"][0]["columnKind"], "unicodeCodePoints");
        assert_eq!(
            results(&doc)[0]["locations"][0]["physicalLocation"]["region"],
            json!({"startLine": 2, "startColumn": 9, "endLine": 2, "endColumn": 11})
        );
    }

    #[test]
    fn hostile_strings_survive_and_paths_are_encoded() {
        let doc = parse(&fixtures::hostile());
        let result = &results(&doc)[0];
        assert_eq!(
            result["message"]["text"],
            format!("{}\nhelp: {}", fixtures::HOSTILE, fixtures::HOSTILE)
        );
        assert_eq!(
            result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "odd%20dir/a&b%3Cc%3E.json"
        );
        assert_eq!(encode_uri_path("a/ü %#?:.json"), "a/%C3%BC%20%25%23%3F%3A.json");
        assert_eq!(encode_uri_path("contracts/x-1_0.0~a.json"), "contracts/x-1_0.0~a.json");
    }

    #[test]
    fn empty_message_falls_back_to_the_summary() {
        let d = Diagnostic::new(Code::IoError, " ").file("a");
        let doc = parse(&Report { diagnostics: vec![d], ..Report::default() });
        assert_eq!(results(&doc)[0]["message"]["text"], Code::IoError.summary());
    }

    #[test]
    fn pascal_case_names() {
        assert_eq!(pascal_case("contract_schema_invalid"), "ContractSchemaInvalid");
        assert_eq!(pascal_case("io_error"), "IoError");
        assert_eq!(pascal_case("x"), "X");
        for code in Code::ALL {
            let name = pascal_case(code.as_str());
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric()), "{name}");
            assert!(name.chars().next().unwrap().is_ascii_uppercase());
        }
    }

    #[test]
    fn more_results_than_github_accepts_keeps_the_most_severe() {
        let warning = Diagnostic::new(Code::TemplateInputUnused, "w").file("a.json");
        let error = Diagnostic::new(Code::ContractSchemaInvalid, "e").file("a.json");
        let mut diagnostics = vec![warning; MAX_RESULTS];
        diagnostics.push(error.clone());
        diagnostics.push(error);
        let doc = parse(&Report { diagnostics, ..Report::default() });
        let results = results(&doc);
        assert_eq!(results.len(), MAX_RESULTS);
        assert_eq!(doc["runs"][0]["properties"], json!({"omittedResults": 2}));
        assert_eq!(results.iter().filter(|r| r["level"] == "error").count(), 2);
        assert_eq!(results.last().unwrap()["level"], "error", "report order is kept");
    }
}
