//! Reading and parsing the files pactum governs: size-limited reads, JSON or YAML by
//! extension, UTF-8 checked, parse errors with line and column.
//!
//! Every governed file is read once: the same bytes are hashed (for the registry) and
//! parsed (for the model). YAML goes through serde-saphyr (pure Rust, panic-free) with its
//! resource budget and YAML 1.2 booleans (`yes` stays a string).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::digest::sha256_hex;
use crate::error::{DocKind, Error, Result};
pub use crate::source::Syntax;

/// The largest contract, pack or work order pactum reads.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// The largest registry.json pactum reads (tens of thousands of entries with history).
pub const MAX_REGISTRY_BYTES: u64 = 256 * 1024 * 1024;

/// A governed file: its exact text, the SHA-256 of its bytes, and its parsed value.
#[derive(Clone, Debug)]
pub struct Document {
    pub path: PathBuf,
    pub text: String,
    pub sha256: String,
    pub syntax: Syntax,
    pub value: Value,
}

/// JSON unless the extension says YAML.
pub fn syntax_for(path: &Path) -> Syntax {
    match path.extension().and_then(|e| e.to_str()) {
        Some(ext) if ext.eq_ignore_ascii_case("yaml") || ext.eq_ignore_ascii_case("yml") => {
            Syntax::Yaml
        }
        _ => Syntax::Json,
    }
}

/// Reads a file, refusing anything larger than `limit` bytes without reading it all, and
/// anything that is not a regular file (a FIFO, device or folder) without opening it.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>> {
    read_opened(path, crate::confine::open_file_with_metadata(path)?, limit)
}

/// [`read_limited`] for a path already known to name a regular file
/// ([`crate::confine::open_known_file`]).
pub fn read_known_limited(path: &Path, limit: u64) -> Result<Vec<u8>> {
    read_opened(path, crate::confine::open_known_file(path)?, limit)
}

fn read_opened(
    path: &Path,
    (file, meta): (std::fs::File, std::fs::Metadata),
    limit: u64,
) -> Result<Vec<u8>> {
    let size = meta.len();
    if size > limit {
        return Err(Error::FileTooLarge { path: path.to_path_buf(), size, limit });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(Error::FileTooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// Bytes as UTF-8 text, or a parse error pointing at the first bad byte.
pub fn utf8(bytes: Vec<u8>, path: &Path, doc: Option<DocKind>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&e.as_bytes()[..at]).into_owned();
        let (line, column) = crate::source::line_col(&text, text.len());
        Error::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message: "file is not valid UTF-8".into(),
            doc,
        }
    })
}

/// Parses JSON or YAML text into a JSON value.
pub fn parse(text: &str, syntax: Syntax, path: &Path, doc: Option<DocKind>) -> Result<Value> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    match syntax {
        Syntax::Json => parse_json(body, path, doc),
        Syntax::Yaml => {
            let options = serde_saphyr::options! {
                strict_booleans: true,
                with_snippet: false,
            };
            serde_saphyr::from_str_with_options::<Value>(body, options).map_err(|e| {
                let (line, column) = e
                    .location()
                    .map(|l| (l.line() as usize, l.column() as usize))
                    .unwrap_or((1, 1));
                Error::Parse {
                    path: path.to_path_buf(),
                    line: line.max(1),
                    column: column.max(1),
                    message: yaml_message(&e),
                    doc,
                }
            })
        }
    }
}

/// Parses JSON text (a leading byte-order mark skipped) into any type that may borrow from
/// it; a syntax error, or a shape the type does not take, is a `Parse` error at its line
/// and column.
pub fn parse_json<'a, T: serde::Deserialize<'a>>(
    text: &'a str,
    path: &Path,
    doc: Option<DocKind>,
) -> Result<T> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(body).map_err(|e| {
        let column = column_in_chars(body, e.line(), e.column());
        Error::Parse {
            path: path.to_path_buf(),
            line: e.line().max(1),
            column,
            message: json_message(&e),
            doc,
        }
    })
}

/// serde_json's message without the location it appends.
pub(crate) fn json_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    // serde_json appends " at line L column C"; the location is reported separately.
    match full.rfind(" at line ") {
        Some(i) => full[..i].to_string(),
        None => full,
    }
}

/// The YAML parser's first line, without the location it appends (reported separately)
/// and without advice about its own settings, which a user cannot change.
fn yaml_message(e: &serde_saphyr::Error) -> String {
    let text = e.without_snippet().to_string();
    let mut message = text.lines().next().unwrap_or("invalid YAML").to_string();
    if let Some(at) = message.rfind(" at line ") {
        message.truncate(at);
    }
    message.replace(
        ", set DuplicateKeyPolicy in Options if acceptable",
        "; a key may appear only once in a mapping",
    )
}

/// serde_json reports byte columns; diagnostics count characters.
fn column_in_chars(text: &str, line: usize, byte_column: usize) -> usize {
    let Some(line_text) = text.split('\n').nth(line.saturating_sub(1)) else { return 1 };
    let mut end = byte_column.min(line_text.len());
    while end > 0 && !line_text.is_char_boundary(end) {
        end -= 1;
    }
    line_text[..end].chars().count().max(1)
}

/// Reads, hashes and parses one governed file.
pub fn load(path: &Path, doc: Option<DocKind>) -> Result<Document> {
    let limit = if doc == Some(DocKind::Registry) { MAX_REGISTRY_BYTES } else { MAX_FILE_BYTES };
    let bytes = read_limited(path, limit)?;
    let sha256 = sha256_hex(&bytes);
    let text = utf8(bytes, path, doc)?;
    let syntax = syntax_for(path);
    let value = parse(&text, syntax, path, doc)?;
    Ok(Document { path: path.to_path_buf(), text, sha256, syntax, value })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use crate::Code;

    fn parse_err(text: &str, syntax: Syntax) -> (usize, usize, String) {
        match parse(text, syntax, Path::new("f"), Some(DocKind::Contract)) {
            Err(Error::Parse { line, column, message, .. }) => (line, column, message),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn json_errors_have_line_and_char_column() {
        let (line, column, message) = parse_err("{\n  \"é\": 1,\n}", Syntax::Json);
        assert_eq!((line, column), (3, 1));
        assert!(message.contains("trailing comma"), "{message}");
        let (line, column, _) = parse_err("{\"é\": tru}", Syntax::Json);
        assert_eq!(line, 1);
        assert!(column <= 10, "{column}");
    }

    #[test]
    fn yaml_messages_say_what_is_wrong_without_the_parser_s_settings_or_location() {
        let (line, column, message) = parse_err("a: 1\na: 2\n", Syntax::Yaml);
        assert_eq!((line, column), (2, 1));
        assert!(message.starts_with("duplicate mapping key: a"), "{message}");
        assert!(message.contains("only once"), "{message}");
        assert!(!message.contains("DuplicateKeyPolicy") && !message.contains(" at line "));
    }

    #[test]
    fn yaml_parses_with_yaml_12_booleans() {
        let v =
            parse("a: yes\nb: true\nc: [1, 2]\n", Syntax::Yaml, Path::new("f.yaml"), None).unwrap();
        assert_eq!(v, serde_json::json!({"a": "yes", "b": true, "c": [1, 2]}));
        let (line, _, _) = parse_err("a: [1, 2\nb: 3\n", Syntax::Yaml);
        assert!(line >= 1);
    }

    #[test]
    fn bom_is_ignored() {
        let v = parse("\u{feff}{\"a\":1}", Syntax::Json, Path::new("f"), None).unwrap();
        assert_eq!(v["a"], 1);
    }

    #[test]
    fn deep_nesting_fails_fast_with_a_code() {
        let deep = "[".repeat(100_000);
        let e = parse(&deep, Syntax::Json, Path::new("f"), Some(DocKind::Contract)).unwrap_err();
        assert_eq!(e.code(), Code::ContractParseError);
        let deep_yaml = "[".repeat(100_000);
        let e =
            parse(&deep_yaml, Syntax::Yaml, Path::new("f"), Some(DocKind::Contract)).unwrap_err();
        assert_eq!(e.code(), Code::ContractParseError);
    }

    #[test]
    fn size_limit_is_enforced_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, vec![b' '; 100]).unwrap();
        let e = read_limited(&path, 10).unwrap_err();
        assert_eq!(e.code(), Code::FileTooLarge);
        assert!(read_limited(&path, 100).is_ok());
    }

    #[test]
    fn invalid_utf8_is_a_parse_error() {
        let e = utf8(vec![b'{', b'\n', 0xff], Path::new("f"), Some(DocKind::Contract)).unwrap_err();
        match e {
            Error::Parse { line, .. } => assert_eq!(line, 2),
            other => panic!("{other:?}"),
        }
    }
}
