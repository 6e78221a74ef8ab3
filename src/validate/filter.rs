//! Which findings a run reports (SPEC §21): `--select` / `--ignore` codes (and `[lint]` in
//! pactum.toml, with per-path overrides), a file's own `"x-pactum-ignore": [codes]` (a
//! suppression that suppresses nothing is itself a warning), and baselines — today's
//! findings recorded by code, file and a fingerprint that survives line moves, so only new
//! ones are reported.
//!
//! The filter runs on a finished [`Report`]; it never changes what was checked.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::diagnostic::{Diagnostic, Report};
use crate::error::{Code, Error, Result, Severity};

/// Codes a run reports: every code, or only `select`; never `ignore`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeFilter {
    pub select: Option<BTreeSet<Code>>,
    pub ignore: BTreeSet<Code>,
    /// Path globs (relative to the report's paths) and the codes ignored under them.
    pub per_path: Vec<(String, BTreeSet<Code>)>,
}

/// Parses code names (`template_input_unused`), refusing unknown ones with the closest.
pub fn codes(names: &[String], what: &str) -> Result<BTreeSet<Code>> {
    let mut out = BTreeSet::new();
    for name in names.iter().flat_map(|n| n.split(',')).map(str::trim).filter(|n| !n.is_empty()) {
        let Some(code) = Code::from_name(name) else {
            let all: Vec<String> = Code::ALL.iter().map(|c| c.as_str().to_string()).collect();
            let close = crate::id::suggest(name, all.iter().map(String::as_str));
            return Err(Error::Usage {
                message: format!(
                    "{what}: `{name}` is not a code{}; `pactum explain --list` lists them",
                    if close.is_empty() {
                        String::new()
                    } else {
                        format!(" (did you mean {}?)", close.join(", "))
                    }
                ),
            });
        };
        out.insert(code);
    }
    Ok(out)
}

impl CodeFilter {
    /// Whether a finding with `code` in `file` is reported.
    fn keeps(&self, code: Code, file: Option<&str>) -> bool {
        if self.select.as_ref().is_some_and(|s| !s.contains(&code)) || self.ignore.contains(&code) {
            return false;
        }
        let Some(file) = file else { return true };
        !self.per_path.iter().any(|(glob, codes)| codes.contains(&code) && glob_matches(glob, file))
    }
}

/// `*` matches within one path segment, `**` any number of segments, `?` one character.
pub fn glob_matches(glob: &str, path: &str) -> bool {
    fn go(g: &[u8], p: &[u8]) -> bool {
        match g {
            [] => p.is_empty(),
            [b'*', b'*', rest @ ..] => {
                let rest = rest.strip_prefix(b"/").unwrap_or(rest);
                (0..=p.len())
                    .any(|i| (i == 0 || p[i - 1] == b'/' || rest.is_empty()) && go(rest, &p[i..]))
            }
            [b'*', rest @ ..] => {
                (0..=p.len()).take_while(|&i| i == 0 || p[i - 1] != b'/').any(|i| go(rest, &p[i..]))
            }
            [b'?', rest @ ..] => p.first().is_some_and(|&c| c != b'/') && go(rest, &p[1..]),
            [c, rest @ ..] => p.first() == Some(c) && go(rest, &p[1..]),
        }
    }
    // A glob without a slash names a file or folder anywhere (ruff's and git's rule).
    let glob = if glob.contains('/') { glob.to_string() } else { format!("**/{glob}") };
    let glob = glob.strip_suffix('/').map(|g| format!("{g}/**")).unwrap_or(glob);
    go(glob.as_bytes(), path.as_bytes()) || go(format!("{glob}/**").as_bytes(), path.as_bytes())
}

/// A file's `x-pactum-ignore` codes, and where the key is (for the unused-suppression
/// warning).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Suppression {
    pub codes: Vec<String>,
}

/// Applies `filter` and the files' suppressions (`suppressions`: report path → codes) to
/// `report`: filtered findings go; a suppressed code that matched nothing in its file is a
/// warning (`suppression_unused`); an unknown code in a suppression is a warning too.
pub fn apply(
    diagnostics: &mut Vec<Diagnostic>,
    filter: &CodeFilter,
    suppressions: &BTreeMap<String, Suppression>,
) {
    let mut used: BTreeSet<(String, String)> = BTreeSet::new();
    diagnostics.retain(|d| {
        if d.code.is_governance() {
            return true;
        }
        if let Some(file) = &d.file
            && let Some(s) = suppressions.get(file)
            && s.codes.iter().any(|c| c == d.code.as_str())
        {
            used.insert((file.clone(), d.code.as_str().to_string()));
            return false;
        }
        filter.keeps(d.code, d.file.as_deref())
    });
    for (file, s) in suppressions {
        for code in &s.codes {
            if used.contains(&(file.clone(), code.clone())) {
                continue;
            }
            let (message, help) = match Code::from_name(code) {
                None => (
                    format!("`x-pactum-ignore` names `{code}`, which is not a code"),
                    "fix the code's name (`pactum explain --list` lists them) or drop it",
                ),
                Some(_) => (
                    format!(
                        "`x-pactum-ignore` suppresses `{code}`, but the file has no such finding"
                    ),
                    "drop it from x-pactum-ignore: a suppression that suppresses nothing hides the next real finding",
                ),
            };
            let d = Diagnostic::new(Code::SuppressionUnused, message)
                .file(file.clone())
                .pointer("/x-pactum-ignore")
                .help(help);
            if filter.keeps(d.code, d.file.as_deref()) {
                diagnostics.push(d);
            }
        }
    }
}

/// The filter `[lint]` in pactum.toml asks for, merged with the command line's (`cli`:
/// its `select` wins; ignores add up).
pub fn with_config(cli: &CodeFilter, lint: &crate::config::LintSettings) -> Result<CodeFilter> {
    let mut out = cli.clone();
    if out.select.is_none()
        && let Some(select) = &lint.select
    {
        out.select = Some(codes(select, "[lint] select")?);
    }
    out.ignore.extend(codes(&lint.ignore, "[lint] ignore")?);
    for (glob, names) in &lint.per_path_ignores {
        out.per_path.push((glob.clone(), codes(names, "[lint] per-path-ignores")?));
    }
    Ok(out)
}

// --- Baselines ---------------------------------------------------------------------------

/// A baseline file: the findings a project had when it adopted pactum (or last accepted
/// them), each by code, file and fingerprint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    pub version: u32,
    pub findings: Vec<Baselined>,
}

/// One finding of a baseline.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Baselined {
    pub code: String,
    pub file: String,
    /// What the finding is about, without its line: see [`fingerprint`].
    pub fingerprint: String,
}

/// A fingerprint that survives line moves: the code, the file, the pointer and the
/// message with its numbers taken out (line numbers and counts in messages move too).
pub fn fingerprint(d: &Diagnostic) -> String {
    let message: String = d.message.chars().filter(|c| !c.is_ascii_digit()).collect();
    let text = format!(
        "{}\u{0}{}\u{0}{}\u{0}{message}",
        d.code,
        d.file.as_deref().unwrap_or(""),
        d.pointer.as_deref().unwrap_or("")
    );
    crate::digest::sha256_hex(text.as_bytes())[..16].to_string()
}

impl Baseline {
    /// Today's findings (warnings and errors) as a baseline.
    pub fn of(report: &Report) -> Baseline {
        let mut findings: Vec<Baselined> = report
            .diagnostics
            .iter()
            .filter(|d| d.severity >= Severity::Warning && !d.code.is_governance())
            .map(|d| Baselined {
                code: d.code.as_str().to_string(),
                file: d.file.clone().unwrap_or_default(),
                fingerprint: fingerprint(d),
            })
            .collect();
        findings.sort();
        Baseline { version: 1, findings }
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Parses a baseline; a syntax or shape error is placed as every parse error is (line,
    /// 1-based column in characters), its message saying what the file should be.
    pub fn parse(text: &str, path: &std::path::Path) -> Result<Baseline> {
        crate::document::parse_json(text, path, None).map_err(|e| match e {
            Error::Parse { path, line, column, message, doc } => Error::Parse {
                path,
                line,
                column,
                message: format!(
                    "not a pactum baseline ({message}); write one with `pactum validate --write-baseline FILE`"
                ),
                doc,
            },
            other => other,
        })
    }

    /// Drops the findings the baseline has (each baselined finding absorbs one finding with
    /// its fingerprint); returns how many were dropped.
    pub fn filter(&self, report: &mut Report) -> usize {
        let mut left: BTreeMap<&str, usize> = BTreeMap::new();
        for f in &self.findings {
            *left.entry(f.fingerprint.as_str()).or_default() += 1;
        }
        let before = report.diagnostics.len();
        report.diagnostics.retain(|d| {
            // A baseline is a file of the change under review: it never silences what the
            // change is reviewed against.
            if d.code.is_governance() {
                return true;
            }
            let print = fingerprint(d);
            match left.get_mut(print.as_str()) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            }
        });
        before - report.diagnostics.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_baseline_is_placed_at_a_1_based_column_once() {
        let path = std::path::Path::new("base.json");
        for text in ["", "{\"version\": 1, \"findings\": ["] {
            match Baseline::parse(text, path) {
                Err(Error::Parse { line, column, message, .. }) => {
                    assert!(line >= 1 && column >= 1, "{line}:{column}");
                    assert!(message.starts_with("not a pactum baseline ("), "{message}");
                    assert!(!message.contains(" at line "), "{message}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn globs_match_segments_and_anywhere_names() {
        for (glob, path, yes) in [
            ("contracts/legacy/**", "contracts/legacy/a/1.0.0.json", true),
            ("contracts/legacy/", "contracts/legacy/a/1.0.0.json", true),
            ("contracts/*/1.0.0.json", "contracts/a/1.0.0.json", true),
            ("contracts/*/1.0.0.json", "contracts/a/b/1.0.0.json", false),
            ("legacy", "prompts/contracts/legacy/x.json", true),
            ("*.yaml", "work_orders/wo.yaml", true),
            ("*.yaml", "work_orders/wo.json", false),
            ("contracts/?/x.json", "contracts/ab/x.json", false),
        ] {
            assert_eq!(glob_matches(glob, path), yes, "{glob} {path}");
        }
    }

    #[test]
    fn fingerprints_survive_line_moves_but_not_other_findings() {
        let d = |line, message: &str| {
            Diagnostic::new(Code::TemplateInputUnused, message)
                .file("c.json")
                .pointer("/a")
                .at(line, 3)
        };
        assert_eq!(
            fingerprint(&d(3, "input `a` unused (2 templates)")),
            fingerprint(&d(90, "input `a` unused (3 templates)"))
        );
        assert_ne!(fingerprint(&d(3, "input `a` unused")), fingerprint(&d(3, "input `b` unused")));
        let mut report =
            Report { diagnostics: vec![d(3, "x"), d(4, "x"), d(5, "y")], ..Report::default() };
        let base = Baseline {
            version: 1,
            findings: Baseline::of(&Report { diagnostics: vec![d(9, "x")], ..Report::default() })
                .findings,
        };
        assert_eq!(base.filter(&mut report), 1, "one baselined finding absorbs one finding");
        assert_eq!(report.diagnostics.len(), 2);
    }
}
