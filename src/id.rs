//! Identifiers and pins: `PRC-CLASSIFY-001`, `PRM-CLASSIFY-001`, `WO-DEMO-1`, and
//! `ID@REQUIREMENT` pins such as `PRC-CLASSIFY-001@^1.2` or `PRC-CLASSIFY-001@1.2.0`.
//!
//! A bare full version is an exact pin (`1.2.0` means `=1.2.0`), unlike Cargo's caret
//! default: a pin is a pin (SPEC §4). A bare partial version is pinned too: `1.2` means
//! `=1.2` (any 1.2.x). Operators (`^`, `~`, `>=`, `<`, `*`, commas) make a range.

use std::fmt;

use semver::{Version, VersionReq};

use crate::error::{DocKind, Error, Result};

fn is_upper_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_uppercase())
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn matches_prefixed(id: &str, prefix: &str) -> bool {
    let Some(rest) = id.strip_prefix(prefix) else { return false };
    match rest.split_once('-') {
        Some((word, num)) => is_upper_word(word) && is_digits(num),
        None => false,
    }
}

/// The contract id rule in words, for messages (`^PRC-[A-Z]+-[0-9]+$`): one word, so
/// `PRC-MY-TOOL-001` and `PRC-B2-001` are not ids.
pub const CONTRACT_ID_RULE: &str = "a contract id is `PRC-`, one word of capital letters A-Z \
     (no digits, no second `-`), `-` and a number, e.g. PRC-SUMMARIZE-001";

/// Both id rules in words, for messages about a pin that may name either.
const ANY_ID_RULE: &str = "a contract id is `PRC-`, one word of capital letters A-Z (no \
     digits, no second `-`), `-` and a number (PRC-CLASSIFY-001); a prompt pack id the same \
     with `PRM-` (PRM-CLASSIFY-001)";

/// `^PRC-[A-Z]+-[0-9]+$`
pub fn is_contract_id(id: &str) -> bool {
    matches_prefixed(id, "PRC-")
}

/// `^PRM-[A-Z]+-[0-9]+$`
pub fn is_pack_id(id: &str) -> bool {
    matches_prefixed(id, "PRM-")
}

/// `^WO-[A-Z0-9-]+$`
pub fn is_work_order_id(id: &str) -> bool {
    id.strip_prefix("WO-").is_some_and(|rest| {
        !rest.is_empty()
            && rest.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-')
    })
}

/// Which kind of document an id names, from its prefix.
pub fn kind_of_id(id: &str) -> Option<DocKind> {
    if is_contract_id(id) {
        Some(DocKind::Contract)
    } else if is_pack_id(id) {
        Some(DocKind::PromptPack)
    } else {
        None
    }
}

/// `^\d+\.\d+\.\d+$` and a valid semver version (no pre-release or build metadata).
pub fn parse_version(text: &str) -> Option<Version> {
    let mut parts = text.split('.');
    let ok = parts.by_ref().take(3).all(is_digits) && parts.next().is_none();
    if !ok || text.split('.').count() != 3 {
        return None;
    }
    Version::parse(text).ok()
}

/// Which versions of an id a pin accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// No requirement: the highest active version.
    Latest,
    /// Exactly this version.
    Exact(Version),
    /// The highest version matching a range.
    Range(VersionReq),
    /// The version a label names in the registry (`@production`, SPEC §20).
    Label(String),
}

impl Requirement {
    /// Parses a requirement string (see the module docs for the rules).
    pub fn parse(text: &str) -> std::result::Result<Requirement, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Requirement::Latest);
        }
        if let Some(v) = parse_version(text) {
            return Ok(Requirement::Exact(v));
        }
        if let Some(v) = text.strip_prefix('=').and_then(|t| parse_version(t.trim())) {
            return Ok(Requirement::Exact(v));
        }
        if crate::registry::is_label(text) {
            return Ok(Requirement::Label(text.to_string()));
        }
        let starts_bare = text.as_bytes().first().is_some_and(u8::is_ascii_digit);
        let req_text = if starts_bare { format!("={text}") } else { text.to_string() };
        VersionReq::parse(&req_text).map(Requirement::Range).map_err(|e| e.to_string())
    }

    /// Whether `version` fits. A label fits nothing by itself: what it names is in the
    /// registry ([`crate::resolve::resolve`] reads it there).
    pub fn matches(&self, version: &Version) -> bool {
        match self {
            Requirement::Latest => true,
            Requirement::Exact(v) => v == version,
            Requirement::Range(req) => req.matches(version),
            Requirement::Label(_) => false,
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requirement::Latest => f.write_str("*"),
            Requirement::Exact(v) => write!(f, "={v}"),
            Requirement::Range(r) => write!(f, "{r}"),
            Requirement::Label(name) => f.write_str(name),
        }
    }
}

/// An id plus a requirement: `PRC-CLASSIFY-001@^1.2`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub id: String,
    pub requirement: Requirement,
}

impl Pin {
    /// Parses `ID`, `ID@REQ`. The id must be a contract or pack id.
    pub fn parse(text: &str) -> Result<Pin> {
        let invalid = |reason: String| Error::PinInvalid { pin: text.to_string(), reason };
        let (id, req) = match text.split_once('@') {
            Some((id, req)) => (id.trim(), req),
            None => (text.trim(), ""),
        };
        if kind_of_id(id).is_none() && !text.contains('@') {
            return Err(Error::IdInvalid { id: id.to_string(), rule: ANY_ID_RULE.into() });
        }
        if kind_of_id(id).is_none() {
            return Err(invalid(format!("`{id}` is not an id: {ANY_ID_RULE}")));
        }
        if text.contains('@') && req.trim().is_empty() {
            return Err(invalid("nothing after `@`; write ID, ID@1.2.0 or ID@^1.2".into()));
        }
        let requirement = Requirement::parse(req).map_err(|e| {
            invalid(format!(
                "`{req}` is not a version, range or label ({e}); write 1.2.0, ^1.2, >=1.0, <2.0 or a label such as production"
            ))
        })?;
        Ok(Pin { id: id.to_string(), requirement })
    }

    pub fn kind(&self) -> DocKind {
        kind_of_id(&self.id).unwrap_or(DocKind::Contract)
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.requirement {
            Requirement::Latest => f.write_str(&self.id),
            req => write!(f, "{}@{req}", self.id),
        }
    }
}

/// Edit distance, for "did you mean" suggestions.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Up to three known ids closest to `id` (distance at most a third of its length).
pub fn suggest<'a>(id: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    nearest(&id.to_ascii_uppercase(), known).into_iter().map(str::to_string).collect()
}

/// Up to three of `known` closest to `name`, closest first: "did you mean" candidates
/// (distance at most a third of its length, at least 2; within twice the best distance).
pub fn nearest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let limit = (name.len() / 3).max(2);
    let mut scored: Vec<(usize, &str)> =
        known.into_iter().map(|k| (levenshtein(name, k), k)).filter(|(d, _)| *d <= limit).collect();
    scored.sort();
    scored.dedup();
    // Only the close calls: within twice the best distance.
    let cutoff = scored.first().map(|(d, _)| (*d).max(1) * 2).unwrap_or(0);
    scored.into_iter().filter(|(d, _)| *d <= cutoff).take(3).map(|(_, k)| k).collect()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn the_rules_in_words_read_as_one_line() {
        for rule in [CONTRACT_ID_RULE, ANY_ID_RULE] {
            assert!(!rule.contains("  ") && !rule.contains('\n'), "{rule:?}");
        }
        assert!(!is_contract_id("PRC-B2-001") && !is_contract_id("PRC-MY-TOOL-001"));
    }

    #[test]
    fn ids() {
        assert!(is_contract_id("PRC-CLASSIFY-001"));
        assert!(!is_contract_id("PRC-CLASSIFY"));
        assert!(!is_contract_id("PRC-Classify-001"));
        assert!(!is_contract_id("PRC-CLASSIFY-001x"));
        assert!(!is_contract_id("PRC-A-B-001"));
        assert!(is_pack_id("PRM-CLASSIFY-001"));
        assert!(is_work_order_id("WO-DEMO-SUM-1"));
        assert!(!is_work_order_id("WO-"));
        assert!(!is_work_order_id("WO-demo"));
    }

    #[test]
    fn versions_are_strict() {
        assert!(parse_version("1.2.3").is_some());
        for bad in ["1.2", "v1.2.3", "01.2.3", "1.2.3-rc.1", "1.2.3+b", "1.2.3.4", ""] {
            assert!(parse_version(bad).is_none(), "{bad}");
        }
    }

    fn req(text: &str) -> Requirement {
        Requirement::parse(text).unwrap()
    }

    #[test]
    fn requirements() {
        let v = |s: &str| Version::parse(s).unwrap();
        assert_eq!(req(""), Requirement::Latest);
        assert_eq!(req("1.2.0"), Requirement::Exact(v("1.2.0")));
        assert_eq!(req("=1.2.0"), Requirement::Exact(v("1.2.0")));
        assert!(req("1.2").matches(&v("1.2.9")));
        assert!(!req("1.2").matches(&v("1.3.0")));
        assert!(req("^1.2").matches(&v("1.9.0")));
        assert!(!req("^1.2").matches(&v("2.0.0")));
        assert!(req("~1.2").matches(&v("1.2.5")));
        assert!(!req("~1.2").matches(&v("1.3.0")));
        assert!(req(">=1.0, <2.0").matches(&v("1.5.0")));
        let e = Requirement::parse("^x").unwrap_err();
        assert!(e.contains("unexpected character 'x' while parsing major version number"), "{e}");
    }

    #[test]
    fn pins() {
        let p = Pin::parse("PRC-CLASSIFY-001@^1.2").unwrap();
        assert_eq!(p.id, "PRC-CLASSIFY-001");
        assert_eq!(p.to_string(), "PRC-CLASSIFY-001@^1.2");
        assert_eq!(Pin::parse("PRC-CLASSIFY-001").unwrap().requirement, Requirement::Latest);
        assert_eq!(Pin::parse("PRM-CLASSIFY-001@1.0.0").unwrap().kind(), DocKind::PromptPack);
        for bad in ["classify", "PRC-CLASSIFY-001@", "PRC-CLASSIFY-001@^x"] {
            let e = Pin::parse(bad).unwrap_err();
            assert_eq!(e.code(), crate::Code::PinInvalid, "{bad}");
        }
    }

    #[test]
    fn suggestions() {
        let known = ["PRC-CLASSIFY-001", "PRC-PLAN-001", "PRC-SYNTH-001"];
        assert_eq!(suggest("PRC-CLASIFY-001", known), vec!["PRC-CLASSIFY-001"]);
        assert_eq!(suggest("prc-plan-001", known), vec!["PRC-PLAN-001"]);
        assert!(suggest("PRC-TOTALLY-DIFFERENT-999", known).is_empty());
    }
}
