//! Byte-level helpers shared by the extraction steps: fast searches for ASCII delimiters
//! and the small predicates (JSON whitespace, line starts) the steps agree on.
//!
//! The searches use `memchr` (SIMD, chosen at run time), which keeps the steps that walk
//! large prose looking for a backtick or a brace at several GB/s.

/// Position of the first byte in `hay` that equals one of `needles`.
///
/// `N` is small (one to three delimiters in practice); every needle must be ASCII so that
/// a hit is always on a UTF-8 character boundary. The bytes looked at are counted as work
/// (`crate::work`: the cost tests of extraction).
#[inline]
pub(super) fn find_any<const N: usize>(needles: [u8; N], hay: &[u8]) -> Option<usize> {
    let found = search(needles, hay);
    crate::work::count(found.map_or(hay.len(), |at| at + 1));
    found
}

#[inline]
fn search<const N: usize>(needles: [u8; N], hay: &[u8]) -> Option<usize> {
    // Delimiters are often dense (JSON, hostile input): look at the first bytes one by one
    // before paying for a SIMD search.
    if let Some(found) = hay.iter().take(16).position(|b| needles.contains(b)) {
        return Some(found);
    }
    let skip = hay.len().min(16);
    let rest = hay.get(skip..).unwrap_or_default();
    let found = match needles.as_slice() {
        [a] => memchr::memchr(*a, rest),
        [a, b] => memchr::memchr2(*a, *b, rest),
        [a, b, c] => memchr::memchr3(*a, *b, *c, rest),
        _ => rest.iter().position(|b| needles.contains(b)),
    };
    found.map(|at| at + skip)
}

/// Position of the first `needle` in `hay`.
#[inline]
pub(super) fn find_byte(needle: u8, hay: &[u8]) -> Option<usize> {
    find_any([needle], hay)
}

/// The four whitespace bytes JSON allows between tokens.
#[inline]
pub(super) fn is_json_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// First position at or after `from` that is not JSON whitespace (or `bytes.len()`).
#[inline]
pub(super) fn skip_json_ws(bytes: &[u8], from: usize) -> usize {
    let rest = bytes.get(from..).unwrap_or_default();
    from + rest.iter().take_while(|&&b| is_json_ws(b)).count()
}

/// Whether only spaces and tabs stand between the start of the line holding `at` (or
/// `floor`, the start of the text being scanned) and `at`.
pub(super) fn at_line_start(bytes: &[u8], floor: usize, at: usize) -> bool {
    let before = bytes.get(floor..at).unwrap_or_default();
    before.iter().rev().find(|&&b| b != b' ' && b != b'\t').is_none_or(|&b| b == b'\n')
}

/// Whether only spaces, tabs and a carriage return follow `from` up to the end of its
/// line (or of the text).
pub(super) fn rest_of_line_blank(bytes: &[u8], from: usize) -> bool {
    let after = bytes.get(from..).unwrap_or_default();
    after.iter().find(|&&b| !matches!(b, b' ' | b'\t' | b'\r')).is_none_or(|&b| b == b'\n')
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    #[test]
    fn finds_first_needle_in_blocks_and_tail() {
        let mut hay = vec![b'a'; 100];
        assert_eq!(find_byte(b'{', &hay), None);
        hay[99] = b'{';
        assert_eq!(find_byte(b'{', &hay), Some(99));
        hay[40] = b'`';
        assert_eq!(find_any([b'{', b'`'], &hay), Some(40));
        hay[3] = b'{';
        assert_eq!(find_any([b'{', b'`'], &hay), Some(3));
        assert_eq!(find_byte(b'x', b""), None);
    }

    #[test]
    fn line_predicates() {
        let text = b"ab\n  ```x\n```  \r\nz";
        assert!(!at_line_start(text, 0, 1));
        assert!(at_line_start(text, 0, 5));
        assert!(at_line_start(text, 0, 0));
        assert!(at_line_start(text, 4, 5));
        assert!(!rest_of_line_blank(text, 8));
        assert!(rest_of_line_blank(text, 13));
        assert!(rest_of_line_blank(text, text.len()));
        assert_eq!(skip_json_ws(b"  \n x", 0), 4);
        assert_eq!(skip_json_ws(b"x", 5), 5);
    }
}
