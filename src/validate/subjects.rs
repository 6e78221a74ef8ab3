//! A path is checked with its context (SPEC §24): `pactum validate FILE|FOLDER` inside a
//! project reports every finding about the named files — the *subjects* — including those
//! that need another file of the project (a pack's variables against the contract that
//! binds it, a work order's input against its contract, a contract's examples through its
//! pack, a dataset against its suite's contract), and nothing about the other files, which
//! are *context*: read, never reported on.
//!
//! The rules are the same as for the whole project; what differs is which files they see
//! and which findings are kept:
//! - **what the subjects need** (their pack, their pinned contract, the neighbours of a
//!   version) is a registry entry's file, analyzed on demand through
//!   [`super::Context::entry_file`], the one way a rule reaches another file;
//! - **what needs the subjects** (the contracts binding a pack, the work orders and suites
//!   pinning a contract, other versions of it) names a subject's id: every document of the
//!   project is read, and the ones whose bytes mention a subject's id (or an escape that
//!   could spell one in disguise: `\u`, `\x`, a YAML line continuation) are analyzed as
//!   context, the others only read ([`Interest`]);
//! - a finding is kept when its file or one of the files it is [about] is a subject.
//!
//! So `validate FILE` fails exactly when the whole project's run has a finding about FILE,
//! for the cost of reading the project's documents and analyzing the few that touch FILE.
//!
//! [about]: crate::diagnostic::Diagnostic::about

use std::path::Path;

use crate::diagnostic::Diagnostic;

/// The files a run reports on: the whole project, or the named paths (files, or folders
/// standing for every file below them), by name relative to the run's base.
#[derive(Clone, Debug, Default)]
pub struct Subjects {
    /// `None`: every file is a subject.
    names: Option<Vec<String>>,
}

impl Subjects {
    /// Every file of the project.
    pub fn all() -> Subjects {
        Subjects { names: None }
    }

    /// The named paths (relative to the base, `/`-separated, as [`super::relative_name`]).
    pub fn named(names: Vec<String>) -> Subjects {
        Subjects { names: Some(names) }
    }

    pub fn is_all(&self) -> bool {
        self.names.is_none()
    }

    /// Whether the file named `rel` is a subject: a named file, or below a named folder.
    pub fn contains(&self, rel: &str) -> bool {
        let Some(names) = &self.names else { return true };
        names.iter().any(|name| {
            name.is_empty()
                || rel == name
                || (rel.len() > name.len()
                    && rel.starts_with(name.as_str())
                    && rel.as_bytes()[name.len()] == b'/')
        })
    }

    /// Whether a finding is reported: its file or a file it is about is a subject (a
    /// finding about the project as a whole, with no file, always is).
    pub fn reports(&self, d: &Diagnostic) -> bool {
        match &d.file {
            None => true,
            Some(file) => self.contains(file) || d.about.iter().any(|f| self.contains(f)),
        }
    }
}

/// What makes a context file worth analyzing: its bytes mention one of the subjects' ids
/// (ASCII case ignored), or hold an escape that could spell one in disguise.
pub struct Interest {
    matcher: Option<aho_corasick::AhoCorasick>,
}

/// Escapes under which a JSON or YAML string's text differs from its bytes in a way that
/// could hide an id: `\uXXXX` (JSON, YAML), `\UXXXXXXXX` and `\xXX` (YAML), and a YAML
/// double-quoted line continuation (a backslash before a line break joins the lines).
/// `\n`, `\t`, `\"`, `\\` and `\/` cannot stand for a character of an id.
const DISGUISES: [&str; 4] = ["\\u", "\\x", "\\\n", "\\\r"];

impl Interest {
    /// Interest in `words` (ids, file names); none when there are no words.
    pub fn new(words: &[String]) -> Interest {
        let words: Vec<&str> = words.iter().map(String::as_str).filter(|w| !w.is_empty()).collect();
        if words.is_empty() {
            return Interest { matcher: None };
        }
        let patterns = words.iter().copied().chain(DISGUISES);
        let matcher =
            aho_corasick::AhoCorasick::builder().ascii_case_insensitive(true).build(patterns).ok();
        Interest { matcher }
    }

    /// Whether a file with these bytes may need a subject.
    pub fn mentioned(&self, bytes: &[u8]) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.is_match(bytes))
    }
}

/// The words a subject file brings to the [`Interest`]: the id it declares; for a file of
/// no governed kind (a fixture, a schema), its file name, which a document naming it holds.
pub fn words_of(file: &super::Analyzed, out: &mut Vec<String>) {
    if let Some((id, _)) = file.declared_id() {
        out.push(id.to_string());
    }
    if file.kind.is_none()
        && let Some(name) = Path::new(&file.rel).file_name()
    {
        out.push(name.to_string_lossy().into_owned());
    }
}

/// Whether a named file is a JSON Lines dataset (checked through the suites that name it,
/// never as a document of its own).
pub fn is_dataset_name(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn named_files_and_folders_are_subjects_and_nothing_else_is() {
        let s = Subjects::named(vec!["prompt_packs/a/1.0.0.json".into(), "work_orders".into()]);
        assert!(s.contains("prompt_packs/a/1.0.0.json"));
        assert!(s.contains("work_orders/x.json"));
        assert!(s.contains("work_orders"));
        assert!(!s.contains("work_orders_old/x.json"));
        assert!(!s.contains("prompt_packs/a/1.0.0.json.bak"));
        assert!(!s.contains("contracts/a/1.0.0.json"));
        assert!(Subjects::all().contains("anything"));
        assert!(Subjects::named(vec![String::new()]).contains("anything"));
    }

    #[test]
    fn a_finding_is_reported_when_its_file_or_a_file_it_is_about_is_named() {
        let s = Subjects::named(vec!["prompt_packs/a/1.0.0.json".into()]);
        let d = Diagnostic::new(Code::TemplateVariableUndeclared, "x").file("contracts/a.json");
        assert!(!s.reports(&d));
        assert!(s.reports(&d.clone().about("prompt_packs/a/1.0.0.json")));
        assert!(s.reports(&Diagnostic::new(Code::IoError, "no file")));
    }

    #[test]
    fn interest_finds_ids_in_any_case_and_escapes_that_could_hide_one() {
        let i = Interest::new(&["PRM-A-001".into()]);
        assert!(i.mentioned(br#"{"prompt_pack_id": "PRM-A-001"}"#));
        assert!(i.mentioned(br#"{"prompt_pack_id": "prm-a-001"}"#));
        assert!(i.mentioned(br#"{"prompt_pack_id": "PRM\u002dA-001"}"#));
        assert!(i.mentioned(b"prompt_pack_id: \"PRM-\\\n  A-001\""));
        assert!(!i.mentioned(br#"{"prompt_pack_id": "PRM-B-001", "t": "a\nb \"q\""}"#));
        assert!(!Interest::new(&[]).mentioned(b"\\u0041 anything"));
    }
}
