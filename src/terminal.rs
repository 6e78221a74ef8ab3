//! Text that came from a file or a model, made safe to show on a terminal or in a CI log.
//!
//! Contracts, packs, work orders, registries and model replies may come from an untrusted
//! pull request (SPEC §18), and pactum's human-facing output is read by two interpreters
//! besides people: the terminal, which acts on escape sequences, and the GitHub Actions
//! runner, which acts on *workflow commands* in a step's output. The runner reads a line
//! as a command when, after leading white space, it starts with `::` (`::error::`,
//! `::add-mask::`, `::stop-commands::`), and also when it contains the legacy `##[` prefix
//! anywhere (`##[error]`, `##[set-output ...]`). [`escape`] is the one rule every
//! human-facing printer applies to such text (the `text` and `github` reports, and every
//! command's text output); machine formats (JSON, SARIF, JUnit) carry exact bytes instead.
//!
//! What [`escape`] changes, and nothing else:
//!
//! | found | shown as |
//! |---|---|
//! | a control character other than line feed and tab (C0, DEL, C1), e.g. ESC | `\u{1b}` |
//! | carriage return (a CRLF becomes a plain line feed) | `\r` |
//! | bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069) | `\u{202e}` |
//! | line and paragraph separators (U+2028, U+2029) | `\u{2028}` |
//! | `::` starting a line (after white space) | `\u{3a}:` |
//! | `##[` anywhere | `##\u{5b}` |
//!
//! ```
//! use pactum::terminal::{escape, escape_line};
//!
//! assert_eq!(escape("plain text\nstays"), "plain text\nstays");
//! assert_eq!(escape("red\u{1b}[31m"), "red\\u{1b}[31m");
//! assert_eq!(escape("ok\n  ::error::forged"), "ok\n  \\u{3a}:error::forged");
//! assert_eq!(escape("x ##[error]y"), "x ##\\u{5b}error]y");
//! assert_eq!(escape_line("two\nlines"), "two\\nlines");
//! assert_eq!(pactum::terminal::escape_block("a\nWO-X ok", "  "), "a\n  WO-X ok");
//! ```

use std::borrow::Cow;

/// `text` with control characters escaped and workflow commands defused; line feeds and
/// tabs are kept (a CRLF becomes a line feed). Text that needs no change is borrowed.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_with(text, false)
}

/// Like [`escape`], for a block of text printed under a label (a model's answer): every
/// line after the first is indented by `indent`, so no line of it can pass for a line of
/// pactum's own output, whatever it says.
pub fn escape_block(text: &str, indent: &str) -> String {
    let escaped = escape(text);
    let mut out = String::with_capacity(escaped.len() + 16);
    for (i, line) in escaped.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
            out.push_str(indent);
        }
        out.push_str(line);
    }
    out
}

/// Like [`escape`], for text that must stay on one line: a line feed is shown as `\n`.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape_with(text, true)
}

/// A value printed on one line of text output (a file name, a message, a history event's
/// actor): formatted, it is [`escape_line`]'s form of the value, so no line feed or
/// control character in it can start a line of its own (SPEC §18, §24). The one way a
/// printer lays a value from a file or a model into a line:
///
/// ```
/// use pactum::terminal::OneLine;
///
/// let actor = "mallory\n   9  2026-01-01  promote  PRC-X@9.9.9";
/// let line = format!("{:>4}  {}", 3, OneLine(actor));
/// assert_eq!(line.lines().count(), 1);
/// assert!(line.ends_with("mallory\\n   9  2026-01-01  promote  PRC-X@9.9.9"));
/// assert_eq!(format!("[{:<9}]", OneLine("a\u{1b}")), "[a\\u{1b}  ]");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct OneLine<'a>(pub &'a str);

impl std::fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad` keeps the caller's width and alignment (`{:<28}`).
        f.pad(&escape_line(self.0))
    }
}

/// How [`escape`] shows one character that must not reach the terminal as it is (a
/// control character other than line feed and tab, a bidirectional control, a line or
/// paragraph separator), or `None` for any other character. For callers that lay text out
/// character by character, such as a source line with a caret under one column.
pub fn escape_char(c: char) -> Option<String> {
    match c {
        '\r' => Some("\\r".to_string()),
        c if is_hidden(c) => Some(format!("\\u{{{:x}}}", u32::from(c))),
        _ => None,
    }
}

/// Whether `c` is shown escaped (line feeds aside).
fn is_hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// Whether `text` needs any change: the common case, checked without allocating.
fn needs_escape(text: &str, one_line: bool) -> bool {
    if text.contains("##[") {
        return true;
    }
    let mut line_start = true;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if is_hidden(c) || (c == '\n' && one_line) {
            return true;
        }
        if line_start && rest.starts_with("::") {
            return true;
        }
        if c == '\n' {
            line_start = true;
        } else if !c.is_whitespace() {
            line_start = false;
        }
        rest = &rest[c.len_utf8()..];
    }
    false
}

fn escape_with(text: &str, one_line: bool) -> Cow<'_, str> {
    if !needs_escape(text, one_line) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut line_start = true;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let after = &rest[c.len_utf8()..];
        if line_start && rest.starts_with("::") {
            out.push_str("\\u{3a}");
            line_start = false;
        } else if rest.starts_with("##[") {
            out.push_str("##\\u{5b}");
            rest = &rest[3..];
            line_start = false;
            continue;
        } else if c == '\r' && after.starts_with('\n') && !one_line {
            // CRLF: the line feed that follows ends the line.
        } else if c == '\n' && one_line {
            // Shown as text: what follows is still on the same line.
            out.push_str("\\n");
            line_start = false;
        } else if c == '\n' {
            out.push('\n');
            line_start = true;
        } else if let Some(shown) = escape_char(c) {
            out.push_str(&shown);
        } else {
            out.push(c);
            if !c.is_whitespace() {
                line_start = false;
            }
        }
        rest = after;
    }
    Cow::Owned(out)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    fn check(input: &str, expected: &str) {
        assert_eq!(escape(input), expected, "input {input:?}");
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for text in ["", "a", "héllo wörld", "a: b", "x :: y", "# heading", "tab\there", "a\nb"] {
            assert!(matches!(escape(text), Cow::Borrowed(t) if t == text), "{text:?}");
        }
    }

    #[test]
    fn control_characters_are_shown_as_escapes() {
        check("a\u{1b}[31mred", "a\\u{1b}[31mred");
        check("nul\u{0}", "nul\\u{0}");
        check("del\u{7f}", "del\\u{7f}");
        check("c1\u{9b}31m", "c1\\u{9b}31m");
        check("bell\u{7}", "bell\\u{7}");
        check("form\u{c}feed", "form\\u{c}feed");
    }

    #[test]
    fn carriage_returns_cannot_rewrite_a_line() {
        check("shown\rhidden", "shown\\rhidden");
        check("a\r\nb", "a\nb");
        check("a\r\r\nb", "a\\r\nb");
        assert_eq!(escape_line("a\r\nb"), "a\\r\\nb");
    }

    #[test]
    fn bidi_controls_and_separators_are_escaped() {
        check("abc\u{202e}fed", "abc\\u{202e}fed");
        check("\u{2066}x\u{2069}", "\\u{2066}x\\u{2069}");
        check("a\u{2028}b\u{2029}", "a\\u{2028}b\\u{2029}");
    }

    #[test]
    fn workflow_commands_cannot_start_a_line() {
        check("::error::x", "\\u{3a}:error::x");
        check("ok\n::add-mask::secret", "ok\n\\u{3a}:add-mask::secret");
        check("ok\n \t ::warning file=a::b", "ok\n \t \\u{3a}:warning file=a::b");
        check("ok\r\n::error::x", "ok\n\\u{3a}:error::x");
        // After an escaped carriage return the runner does not see a line start, but a
        // lone CR is escaped anyway.
        check("ok\r::error::x", "ok\\r::error::x");
        // Unicode white space is trimmed by the runner too.
        check("\u{3000}::error::x", "\u{3000}\\u{3a}:error::x");
        // Not at a line start: left alone.
        check("a ::b", "a ::b");
        check("key::value", "key::value");
    }

    #[test]
    fn legacy_commands_are_defused_anywhere() {
        check("##[error]x", "##\\u{5b}error]x");
        check("text ##[set-output name=a]b", "text ##\\u{5b}set-output name=a]b");
        check("# [x] ## [y]", "# [x] ## [y]");
        check("###[x]", "###\\u{5b}x]");
    }

    #[test]
    fn escape_line_keeps_one_line() {
        assert_eq!(escape_line("a\nb\n::error::x"), "a\\nb\\n::error::x");
        assert_eq!(escape_line("::error::x"), "\\u{3a}:error::x");
        assert_eq!(escape_line("tab\tok"), "tab\tok");
    }

    /// Whatever the input, the output has no control character but line feed and tab, no
    /// line the runner reads as a command, and no `##[`.
    #[test]
    fn no_input_survives_as_a_command_or_control() {
        let pieces = ["::", "##[", "\n", "\r", "\r\n", " ", "\u{1b}", "a", "#", "[", ":", "\u{85}"];
        let mut inputs = vec![String::new()];
        for _ in 0..4 {
            inputs = inputs
                .iter()
                .flat_map(|prefix| pieces.iter().map(move |p| format!("{prefix}{p}")))
                .collect();
            for input in &inputs {
                for (out, one_line) in [(escape(input), false), (escape_line(input), true)] {
                    assert!(!out.contains("##["), "{input:?} -> {out:?}");
                    for c in out.chars() {
                        assert!(!is_hidden(c), "{input:?} -> {out:?}");
                        assert!(!(one_line && c == '\n'), "{input:?} -> {out:?}");
                    }
                    for line in out.split('\n') {
                        assert!(!line.trim_start().starts_with("::"), "{input:?} -> {out:?}");
                    }
                }
            }
        }
    }
}
