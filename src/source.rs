//! TEMPORARY scaffolding until the real pointer-to-span module lands (do not ship).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax { Json, Yaml }
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span { pub start: usize, pub end: usize }
pub fn locate_best(_text: &str, _syntax: Syntax, _pointer: &str) -> Span { Span { start: 0, end: 0 } }
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}
pub fn line_text(text: &str, line: usize) -> &str { text.lines().nth(line.saturating_sub(1)).unwrap_or("") }
pub struct LineIndex;
impl LineIndex { pub fn new(_t: &str) -> Self { LineIndex } pub fn line_col(&self, t: &str, o: usize) -> (usize, usize) { line_col(t, o) } }
