//! Step 2: embedded JSON, found by bracket matching in one left-to-right pass.
//!
//! Every `{` (or `[` when an array is wanted) starts a *candidate*: a scan that begins
//! outside any string, ignores brackets inside JSON strings (with `\` escapes) and ends at
//! the bracket that brings its depth back to zero. Only the candidate's own bracket kind
//! is counted: in valid JSON the other kind is balanced inside, so the match is the same.
//!
//! Scanning from every candidate separately is quadratic (`{{{{…`). Instead this module
//! runs all scans at once. A scan's string state (outside, inside, just after a `\`
//! inside) depends only on the bytes it has read, and two scans in the same state at the
//! same byte see identical events from then on. So the live scans fall into at most three
//! *classes*, one per state. Bytes move whole classes between states; when two classes
//! land in the same state they merge for good. Inside a class every scan shares a counter
//! `level` (opens minus closes seen by the class), and a scan is stored under the *key*
//! `level - depth`, the level at which it closes: a close lowers `level` and completes
//! exactly the scans whose key equals the new level, which are always the top bucket.
//!
//! A class is a deque of buckets (key, linked list of candidates) sorted by key. Opening
//! pushes a new top bucket and closing pops one, both O(1). A merge rebases the class with
//! the smaller maximum depth into the other and interleaves only the buckets whose depths
//! overlap, which costs at most that smaller maximum depth; since a class's depth is
//! bounded by the bytes read since it was created and at most three classes are alive at
//! any byte, all merges together cost O(n).
//!
//! A candidate that ever nests [`MAX_DEPTH`] + 1 levels deep cannot parse (`serde_json`
//! stops at that depth), so its bucket is dropped from the bottom of the deque at once.
//! That keeps every class at most `MAX_DEPTH` buckets deep and the memory proportional to
//! the live, still parseable candidates, even for a megabyte of `[[[[…`.
//!
//! Candidates whose next non-whitespace byte cannot continue JSON (`{x}`, `{{`, `[see`)
//! are never tried, so they are not tracked (they still count as brackets for the
//! others). Bytes that cannot change any state are skipped with a vectorised search.

use std::collections::VecDeque;

use super::MAX_DEPTH;
use super::scan::{find_any, find_byte, skip_json_ws};

/// The outcome of the pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Candidates {
    /// Start and end (inclusive, the matching bracket) of every matched candidate that
    /// stayed within the depth limit, by start.
    pub matched: Vec<(usize, usize)>,
    /// How many candidates were tracked, matched or not.
    pub total: usize,
}

/// All candidates of `bytes[from..]`, with their matches.
pub(super) fn candidates(bytes: &[u8], from: usize, want_array: bool) -> Candidates {
    candidates_within(bytes, from, want_array, MAX_DEPTH)
}

/// [`candidates`] with a configurable depth limit, so tests can reach it cheaply.
fn candidates_within(bytes: &[u8], from: usize, want_array: bool, max_depth: usize) -> Candidates {
    let (open, close) = if want_array { (b'[', b']') } else { (b'{', b'}') };
    let max_depth = isize::try_from(max_depth).unwrap_or(isize::MAX);
    let mut pass = Pass { max_depth, free: NIL, ..Pass::default() };
    let mut pos = from;
    while let Some(rest) = bytes.get(pos..) {
        let idle = pass.classes.iter().all(Option::is_none);
        let skip = if idle {
            // No live scan: only an opening bracket can matter.
            find_byte(open, rest)
        } else if pass.classes[ESCAPED].is_some() {
            // The byte after a backslash always matters.
            Some(0)
        } else {
            find_any([b'"', b'\\', open, close], rest)
        };
        let Some(skip) = skip else { break };
        pos += skip;
        let byte = bytes.get(pos).copied();
        let starts = byte == Some(open) && starts_json(bytes, pos + 1, want_array);
        match byte {
            _ if starts => pass.open_candidate(pos),
            // An idle pass has nothing to update.
            _ if idle => {}
            Some(b'"') => pass.quote(),
            Some(b'\\') => pass.classes.swap(INSIDE, ESCAPED),
            Some(b) if b == open => pass.open_bracket(),
            Some(b) if b == close => pass.close_bracket(pos),
            _ => pass.settle_escape(),
        }
        pos += 1;
    }
    pass.matched.sort_unstable();
    Candidates { matched: pass.matched, total: pass.total }
}

/// Whether the first non-whitespace byte at or after `from` can follow the opening
/// bracket of a JSON object (`want_array == false`) or array.
fn starts_json(bytes: &[u8], from: usize, want_array: bool) -> bool {
    let next = bytes.get(skip_json_ws(bytes, from)).copied();
    match next {
        Some(b'"') => true,
        Some(b'}') => !want_array,
        Some(b'{' | b'[' | b']' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => want_array,
        _ => false,
    }
}

/// Index of the class outside strings.
const OUTSIDE: usize = 0;
/// Index of the class inside a string.
const INSIDE: usize = 1;
/// Index of the class inside a string, just after a backslash.
const ESCAPED: usize = 2;
/// End of a candidate list.
const NIL: usize = usize::MAX;

/// Candidates that close at the same level, as a linked list of nodes.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    key: isize,
    head: usize,
    tail: usize,
}

/// A tracked candidate: its start and the next node in its bucket.
#[derive(Debug, Clone, Copy)]
struct Node {
    start: usize,
    next: usize,
}

/// Scans in the same string state; never empty (an emptied class is dropped).
#[derive(Debug, Default)]
struct Class {
    level: isize,
    /// Sorted by `key`, ascending; every key is below `level` and above
    /// `level - max_depth - 1`.
    buckets: VecDeque<Bucket>,
}

impl Class {
    /// Depth of the deepest scan.
    fn max_depth(&self) -> isize {
        self.buckets.front().map_or(0, |b| self.level - b.key)
    }
}

#[derive(Debug, Default)]
struct Pass {
    max_depth: isize,
    classes: [Option<Class>; 3],
    /// Node storage; freed nodes are chained from `free`.
    nodes: Vec<Node>,
    free: usize,
    matched: Vec<(usize, usize)>,
    total: usize,
    scratch: Vec<Bucket>,
    /// Emptied bucket deques, kept for their allocation.
    spare: Vec<VecDeque<Bucket>>,
}

impl Pass {
    /// An opening bracket that starts a tracked candidate.
    #[inline]
    fn open_candidate(&mut self, pos: usize) {
        self.open_bracket();
        self.total += 1;
        let node = self.alloc(pos);
        if self.classes[OUTSIDE].is_none() {
            let buckets = self.spare.pop().unwrap_or_default();
            self.classes[OUTSIDE] = Some(Class { level: 1, buckets });
        }
        let Some(class) = &mut self.classes[OUTSIDE] else { return };
        // Every existing key is below the level before this bracket, so this one is the
        // largest and goes on top.
        class.buckets.push_back(Bucket { key: class.level - 1, head: node, tail: node });
    }

    #[inline]
    fn alloc(&mut self, start: usize) -> usize {
        let node = Node { start, next: NIL };
        match self.nodes.get_mut(self.free) {
            Some(slot) => {
                let index = self.free;
                self.free = slot.next;
                *slot = node;
                index
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        }
    }

    /// A `"`: outside ↔ inside, and escaped scans stay inside.
    #[inline]
    fn quote(&mut self) {
        self.classes.swap(OUTSIDE, INSIDE);
        if let Some(escaped) = self.classes[ESCAPED].take() {
            let inside = self.classes[INSIDE].take();
            self.classes[INSIDE] = self.merge(inside, Some(escaped));
        }
    }

    /// An opening bracket: one level deeper for the scans outside strings.
    #[inline]
    fn open_bracket(&mut self) {
        self.settle_escape();
        let Some(class) = &mut self.classes[OUTSIDE] else { return };
        class.level += 1;
        // A scan now deeper than the limit can no longer parse.
        if let Some(&deepest) = class.buckets.front()
            && class.level - deepest.key > self.max_depth
        {
            class.buckets.pop_front();
            release(&mut self.nodes, &mut self.free, deepest, None);
            if class.buckets.is_empty() {
                self.retire_outside();
            }
        }
    }

    /// A closing bracket at `pos`: completes the scans outside strings that it returns
    /// to depth zero.
    #[inline]
    fn close_bracket(&mut self, pos: usize) {
        self.settle_escape();
        let Some(class) = &mut self.classes[OUTSIDE] else { return };
        class.level -= 1;
        if let Some(&top) = class.buckets.back()
            && top.key == class.level
        {
            class.buckets.pop_back();
            release(&mut self.nodes, &mut self.free, top, Some((&mut self.matched, pos)));
            if class.buckets.is_empty() {
                self.retire_outside();
            }
        }
    }

    /// Drops the (empty) class outside strings, keeping its deque for reuse.
    fn retire_outside(&mut self) {
        if let Some(class) = self.classes[OUTSIDE].take() {
            self.recycle(class.buckets);
        }
    }

    fn recycle(&mut self, mut buckets: VecDeque<Bucket>) {
        if self.spare.len() < 4 {
            buckets.clear();
            self.spare.push(buckets);
        }
    }

    /// Any byte other than `"` or `\` ends an escape: the escaped scans rejoin the
    /// scans inside strings.
    #[inline]
    fn settle_escape(&mut self) {
        if let Some(escaped) = self.classes[ESCAPED].take() {
            let inside = self.classes[INSIDE].take();
            self.classes[INSIDE] = self.merge(inside, Some(escaped));
        }
    }

    /// Merges two classes that reached the same state at the same byte.
    fn merge(&mut self, a: Option<Class>, b: Option<Class>) -> Option<Class> {
        let (mut keep, other) = match (a, b) {
            (Some(a), Some(b)) if a.max_depth() >= b.max_depth() => (a, b),
            (Some(a), Some(b)) => (b, a),
            (a, b) => return a.or(b),
        };
        // Rebase `other` so each scan keeps its depth relative to `keep.level`.
        let shift = keep.level - other.level;
        let lowest = other.buckets.front().map_or(isize::MAX, |b| b.key + shift);
        let cut = keep.buckets.partition_point(|b| b.key < lowest);
        self.scratch.clear();
        self.scratch.extend(keep.buckets.drain(cut..));
        let mut mine = self.scratch.iter().copied().peekable();
        let mut theirs =
            other.buckets.iter().map(|b| Bucket { key: b.key + shift, ..*b }).peekable();
        loop {
            let bucket = match (mine.peek().copied(), theirs.peek().copied()) {
                (Some(m), Some(t)) if m.key == t.key => {
                    mine.next();
                    theirs.next();
                    if let Some(node) = self.nodes.get_mut(m.tail) {
                        node.next = t.head;
                    }
                    Bucket { key: m.key, head: m.head, tail: t.tail }
                }
                (Some(m), Some(t)) if m.key < t.key => {
                    mine.next();
                    m
                }
                (_, Some(t)) => {
                    theirs.next();
                    t
                }
                (Some(m), None) => {
                    mine.next();
                    m
                }
                (None, None) => break,
            };
            keep.buckets.push_back(bucket);
        }
        self.recycle(other.buckets);
        Some(keep)
    }
}

/// Returns the nodes of `bucket` to the free list, recording each candidate as matched
/// at `end` when given.
fn release(
    nodes: &mut [Node],
    free: &mut usize,
    bucket: Bucket,
    mut matched: Option<(&mut Vec<(usize, usize)>, usize)>,
) {
    let mut at = bucket.head;
    while let Some(node) = nodes.get_mut(at) {
        if let Some((matched, end)) = matched.as_mut() {
            matched.push((node.start, *end));
        }
        if at == bucket.tail {
            node.next = *free;
            *free = bucket.head;
            return;
        }
        at = node.next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reference: one independent scan per candidate.
    fn naive(bytes: &[u8], want_array: bool, max_depth: usize) -> Candidates {
        let (open, close) = if want_array { (b'[', b']') } else { (b'{', b'}') };
        let mut found = Candidates::default();
        for (start, _) in bytes.iter().enumerate().filter(|&(_, &b)| b == open) {
            if !starts_json(bytes, start + 1, want_array) {
                continue;
            }
            found.total += 1;
            let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0, false, false);
            for (pos, &b) in bytes.iter().enumerate().skip(start) {
                if in_string {
                    match (escaped, b) {
                        (true, _) => escaped = false,
                        (false, b'\\') => escaped = true,
                        (false, b'"') => in_string = false,
                        _ => {}
                    }
                } else if b == b'"' {
                    in_string = true;
                } else if b == open {
                    depth += 1;
                    deepest = deepest.max(depth);
                } else if b == close {
                    depth -= 1;
                    if depth == 0 {
                        if deepest <= max_depth {
                            found.matched.push((start, pos));
                        }
                        break;
                    }
                }
            }
        }
        found
    }

    fn matched(text: &str, want_array: bool) -> Vec<(usize, usize)> {
        candidates(text.as_bytes(), 0, want_array).matched
    }

    #[test]
    fn matches_brackets_outside_strings() {
        assert_eq!(matched(r#"{"a":{"b":"}"}}"#, false), [(0, 14), (5, 13)]);
        assert_eq!(matched(r#"x {"a":"\"{"} y"#, false), [(2, 12)]);
        assert_eq!(matched(r#"{x} {"a":1"#, false), []);
        assert_eq!(matched(r#"[1, [2], "]"]"#, true), [(0, 12), (4, 6)]);
        assert_eq!(candidates(b"{{{{", 0, false), Candidates::default());
    }

    #[test]
    fn candidates_deeper_than_the_limit_are_dropped() {
        let depth = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let found = candidates(depth(MAX_DEPTH).as_bytes(), 0, true);
        assert_eq!((found.total, found.matched.len()), (MAX_DEPTH, MAX_DEPTH));
        let found = candidates(depth(MAX_DEPTH + 2).as_bytes(), 0, true);
        assert_eq!(
            (found.total, found.matched.first()),
            (MAX_DEPTH + 2, Some(&(2, 2 * MAX_DEPTH + 2)))
        );
    }

    #[test]
    fn hostile_inputs_stay_linear() {
        let text = "{\"a\":".repeat(200_000);
        let found = candidates(text.as_bytes(), 0, false);
        assert_eq!((found.total, found.matched.len()), (200_000, 0));
        let text = format!("{}{}", "{\"a\\\"{\"".repeat(100_000), "}".repeat(10));
        assert_eq!(candidates(text.as_bytes(), 0, false).total, 200_000);
        // The last `[` has nothing after it, so it is not a candidate.
        let text = "[".repeat(1 << 20);
        assert_eq!(candidates(text.as_bytes(), 0, true).total, (1 << 20) - 1);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn one_pass_equals_naive(
            text in "[{}\\[\\]\"\\\\a ]{0,48}",
            want_array: bool,
            max_depth in 1usize..5,
        ) {
            let bytes = text.as_bytes();
            prop_assert_eq!(
                candidates_within(bytes, 0, want_array, max_depth),
                naive(bytes, want_array, max_depth)
            );
        }
    }
}
