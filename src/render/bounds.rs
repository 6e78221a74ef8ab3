//! Bounded template values (SPEC §18): no value a pack template builds may grow past
//! [`MAX_VALUE_BYTES`], [`MAX_VALUE_ITEMS`] or [`MAX_VALUE_DEPTH`], and one render may not
//! build more than [`MAX_BUILT_BYTES`] in all; past a limit the render stops with
//! `template_limit_exceeded`.
//!
//! Fuel bounds how many instructions a template runs, not what one instruction costs:
//! `{% set x = x ~ x %}` thirty times, `"a" * 100000000`, `x | indent(10**8)` or a list
//! nested in itself grow to gigabytes well within the fuel. So:
//!
//! Nor does fuel bound what one instruction *does*: `'zz' in big`, `a == b`, `big[-1]`,
//! `x | sort` or `x | join` each cost one instruction and run natively in time linear in
//! (or, sorting, `n log n` of) their operands, so a loop over a 1 MB input did hundreds of
//! gigabytes of work within the fuel. Every such operation is charged to the render's fuel
//! in proportion to the size of what it touches ([`WORK_PER_FUEL`], [`ITEM_WORK`]) before
//! it runs, by a walk that stops as soon as the fuel is spent.
//!
//! - before compiling, a template whose expressions nest deeper than
//!   [`MAX_EXPRESSION_DEPTH`] is refused by one pass over its tokens ([`nesting`]): the
//!   parser, the code generator and the rewrite below recurse;
//! - then each template is parsed and **rewritten**: every `~`, `+` and `*`
//!   becomes a call of a checking function (`__pactum_concat(a, b)`), and every list, map
//!   and tuple literal and every function call is wrapped in `__pactum_value(...)`, which
//!   measures the value (iteratively, stopping at the limits) and charges it to the render;
//!   the operands of comparisons and `in`, of indexes and slices, and the arguments of
//!   calls are wrapped in charging calls (`__pactum_deep(a) == __pactum_deep(b)`), and
//!   every printed value in `__pactum_emit(...)` (a missing one fails in pactum's check);
//!   line numbers are kept, so errors still point at the author's line;
//! - the prompt environment starts from minijinja's **empty** environment ([`environment`]):
//!   every filter ([`FILTERS`]), test ([`TESTS`]) and function ([`FUNCTIONS`]) a pack
//!   template can call is a wrapper that charges its arguments, checks the arguments of
//!   the filters whose output can outgrow their input (`indent`, `replace`, `join`,
//!   `format`, `batch`, `slice`, `tojson`, `pprint`), runs the original, and measures its
//!   result; a callable left out of the lists does not exist;
//! - constructs whose output is **captured** instead of written to the capped prompt —
//!   macros, call blocks, `{% set %}` and `{% filter %}` blocks, recursive loops —
//!   and `include`/`import`/`extends`/`block` are refused when the pack is compiled
//!   (`prompt_pack_invalid`): a prompt pack needs none of them, and captured text is
//!   not bounded by the prompt's output cap.
//!
//! The original operations and filters run in a second, pristine environment configured
//! like the prompt environment, so their semantics are minijinja's own.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::LazyLock;

use minijinja::machinery::ast::{BinOpKind, CallArg, CompareOpKind, Expr, Stmt, UnaryOpKind};
use minijinja::value::{Rest, Value, ValueKind, ValueOrKwargs};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Expression, State, UndefinedBehavior};

/// The largest value (string, or a structure as printed) a template may build.
pub const MAX_VALUE_BYTES: usize = super::MAX_OUTPUT_BYTES;
/// The most items a sequence or map a template builds may hold.
pub const MAX_VALUE_ITEMS: usize = 100_000;
/// The deepest nesting of a value a template builds.
pub const MAX_VALUE_DEPTH: usize = 64;
/// What one render may build in all (every checked value counted).
pub const MAX_BUILT_BYTES: u64 = 64 * 1024 * 1024;

/// Error details that start with this are limits (`template_limit_exceeded`).
const LIMIT: &str = "value limit: ";

/// Whether a minijinja error detail is one of these limits.
pub fn is_limit(detail: &str) -> bool {
    detail.starts_with(LIMIT)
}

fn limit(message: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, format!("{LIMIT}{message}"))
}

thread_local! {
    /// Bytes built by the render running on this thread.
    static BUILT: Cell<u64> = const { Cell::new(0) };
    /// The render's fuel left when the running template started.
    static FUEL_LEFT: Cell<u64> = const { Cell::new(0) };
    /// Units of native work the running template has done (see [`WORK_PER_FUEL`]).
    static WORK: Cell<u64> = const { Cell::new(0) };
    /// The engine fuel the running template had consumed when a check of this module
    /// failed (the error then ends the template).
    static FAILED_AT: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Units of native work (a byte of a string, or an item: see [`ITEM_WORK`]) one fuel
/// instruction pays for. Filters, tests and operators run natively, outside minijinja's
/// instruction count, in time linear in (or, for sorting, `n log n` of) their operands:
/// each is charged to the render's fuel in proportion to the size of what it touches,
/// so a template's native work is bounded by its fuel like its instructions are.
pub const WORK_PER_FUEL: u64 = 128;
/// Units of native work of one item of a sequence or map, or of one scalar.
pub const ITEM_WORK: u64 = 16;

/// Starts the accounting of one template of a render that has `fuel_left` and has built
/// `built` bytes so far (its budget's counts: renders run on the calling thread, one
/// template at a time).
pub fn start(fuel_left: u64, built: u64) {
    BUILT.with(|b| b.set(built));
    FUEL_LEFT.with(|f| f.set(fuel_left));
    WORK.with(|w| w.set(0));
    FAILED_AT.with(|f| f.set(None));
}

/// What the template started by [`start`] spent besides its instructions.
#[derive(Clone, Copy, Debug)]
pub struct Spent {
    /// Bytes built by the render so far, this template included.
    pub built: u64,
    /// Fuel its native work costs.
    pub work_fuel: u64,
    /// The engine fuel it had consumed when one of this module's checks failed.
    pub failed_at: Option<u64>,
}

/// What the running template spent (read once it has ended).
pub fn spent() -> Spent {
    Spent {
        built: BUILT.with(Cell::get),
        work_fuel: WORK.with(Cell::get).div_ceil(WORK_PER_FUEL),
        failed_at: FAILED_AT.with(Cell::get),
    }
}

/// Detail of the error of a render whose fuel native work has spent.
const OUT_OF_FUEL: &str = "the render ran out of fuel";

/// Charges `units` of native work; past the render's fuel (instructions and native work
/// together) the template stops.
fn spend(state: &State, units: u64) -> Result<(), Error> {
    crate::work::count(units as usize);
    let work = WORK.with(|w| {
        let total = w.get().saturating_add(units);
        w.set(total);
        total
    });
    let engine = state.fuel_levels().map_or(0, |(consumed, _)| consumed);
    if engine.saturating_add(work.div_ceil(WORK_PER_FUEL)) > FUEL_LEFT.with(Cell::get) {
        return Err(limit(format!(
            "{OUT_OF_FUEL}: filters, tests and operators cost fuel in proportion to the size of the values they work on; avoid repeating them on large values in loops"
        )));
    }
    Ok(())
}

/// How far [`charge`] looks into a value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Every item, at every depth: what comparing, searching, sorting, joining or
    /// printing a value touches.
    Deep,
    /// The text of a string, one item for anything else: what `length`, `first`,
    /// `default`, indexing and the type tests touch.
    Shallow,
}

/// Charges the native work of an operation over `values` before it runs: a walk over
/// each value, charged as it goes, so the walk itself stops when the fuel is spent.
fn charge(state: &State, values: &[&Value], reach: Reach) -> Result<(), Error> {
    charge_times(state, values, reach, 1)
}

/// [`charge`], each unit counted `times`.
fn charge_times(state: &State, values: &[&Value], reach: Reach, times: u64) -> Result<(), Error> {
    const CHUNK: u64 = 1 << 14;
    let mut units = 0u64;
    let mut stack: Vec<Value> = values.iter().map(|v| (*v).clone()).collect();
    while let Some(v) = stack.pop() {
        units += ITEM_WORK;
        match v.kind() {
            ValueKind::String => units += v.as_str().map_or(0, str::len) as u64,
            ValueKind::Bytes => units += v.as_bytes().map_or(0, <[u8]>::len) as u64,
            ValueKind::Seq | ValueKind::Iterable if reach == Reach::Deep => {
                // Sequences reach this check built (literals, calls and filter results are
                // materialized by `checked`); a lazy input iterable is walked, not consumed.
                if let Ok(iter) = v.try_iter() {
                    for item in iter {
                        units += ITEM_WORK;
                        if units >= CHUNK {
                            spend(state, std::mem::take(&mut units).saturating_mul(times))?;
                        }
                        stack.push(item);
                    }
                }
            }
            ValueKind::Map if reach == Reach::Deep => {
                if let Ok(iter) = v.try_iter() {
                    for key in iter {
                        units += ITEM_WORK;
                        if units >= CHUNK {
                            spend(state, std::mem::take(&mut units).saturating_mul(times))?;
                        }
                        let item = v.get_item(&key).unwrap_or_default();
                        stack.push(key);
                        stack.push(item);
                    }
                }
            }
            _ => {}
        }
        if units >= CHUNK {
            spend(state, std::mem::take(&mut units).saturating_mul(times))?;
        }
    }
    spend(state, units.saturating_mul(times))
}

/// Runs one check of this module, noting the engine fuel consumed when it fails (the
/// template ends with the error, and the render charges what it consumed).
fn hooked<T>(state: &State, f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    let result = f();
    if result.is_err() {
        let consumed = state.fuel_levels().map_or(0, |(consumed, _)| consumed);
        FAILED_AT.with(|at| at.set(Some(consumed)));
    }
    result
}

/// Notes that a template failed in pactum's own code at this fuel level (the formatter).
pub fn failed(state: &State) {
    let consumed = state.fuel_levels().map_or(0, |(consumed, _)| consumed);
    FAILED_AT.with(|at| at.set(Some(consumed)));
}

fn charge_built(bytes: usize) -> Result<(), Error> {
    let total = BUILT.with(|b| {
        let total = b.get().saturating_add(bytes as u64);
        b.set(total);
        total
    });
    if total > MAX_BUILT_BYTES {
        return Err(limit(format!(
            "the template built more than {MAX_BUILT_BYTES} bytes of values in one render; simplify what it computes"
        )));
    }
    Ok(())
}

/// The size of a value as printed, its items and its depth (stopping past the limits).
#[derive(Clone, Copy, Debug, Default)]
struct Size {
    bytes: usize,
    items: usize,
    depth: usize,
}

impl Size {
    fn over(&self) -> Option<String> {
        if self.bytes > MAX_VALUE_BYTES {
            Some(format!("a value would be larger than {MAX_VALUE_BYTES} bytes"))
        } else if self.items > MAX_VALUE_ITEMS {
            Some(format!("a value would hold more than {MAX_VALUE_ITEMS} items"))
        } else if self.depth > MAX_VALUE_DEPTH {
            Some(format!("a value would nest deeper than {MAX_VALUE_DEPTH} levels"))
        } else {
            None
        }
    }
}

/// Measures iteratively (shared and nested values cannot overflow the stack), stopping as
/// soon as a limit is passed.
fn measure(value: &Value) -> Size {
    let mut size = Size::default();
    let mut stack: Vec<(Value, usize)> = vec![(value.clone(), 0)];
    while let Some((v, depth)) = stack.pop() {
        size.depth = size.depth.max(depth);
        if size.over().is_some() {
            break;
        }
        match v.kind() {
            ValueKind::String => size.bytes += v.as_str().map_or(0, str::len) + 2,
            ValueKind::Bytes => size.bytes += v.as_bytes().map_or(0, <[u8]>::len) * 4 + 2,
            ValueKind::Number => size.bytes += 24,
            ValueKind::Seq | ValueKind::Iterable => {
                size.bytes += 2;
                if let Ok(iter) = v.try_iter() {
                    for item in iter {
                        size.items += 1;
                        size.bytes += 2;
                        if size.items > MAX_VALUE_ITEMS {
                            break;
                        }
                        stack.push((item, depth + 1));
                    }
                }
            }
            ValueKind::Map => {
                size.bytes += 2;
                if let Ok(iter) = v.try_iter() {
                    for key in iter {
                        size.items += 1;
                        size.bytes += 4;
                        if size.items > MAX_VALUE_ITEMS {
                            break;
                        }
                        let item = v.get_item(&key).unwrap_or_default();
                        stack.push((key, depth + 1));
                        stack.push((item, depth + 1));
                    }
                }
            }
            _ => size.bytes += 8,
        }
    }
    size
}

/// A lazily computed sequence (a chain of `+`, a `range`, a generator) is materialised, up
/// to the item limit, so it is measured once and never consumed by the measuring.
fn materialized(value: Value) -> Result<Value, Error> {
    if value.kind() != ValueKind::Iterable {
        return Ok(value);
    }
    let mut items = Vec::new();
    for item in value.try_iter()? {
        if items.len() >= MAX_VALUE_ITEMS {
            return Err(limit(format!("a sequence would hold more than {MAX_VALUE_ITEMS} items")));
        }
        items.push(item);
    }
    Ok(Value::from(items))
}

/// Checks a built value and charges it to the render.
fn checked(value: Value) -> Result<Value, Error> {
    let value = materialized(value)?;
    let size = measure(&value);
    if let Some(problem) = size.over() {
        return Err(limit(problem));
    }
    charge_built(size.bytes)?;
    Ok(value)
}

/// The environment the original operations and filters run in.
static PRISTINE: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env
});

/// The original operations and filters, compiled once in the pristine environment.
static ORIGINALS: LazyLock<HashMap<String, Expression<'static, 'static>>> = LazyLock::new(|| {
    let mut all = HashMap::new();
    let sources = ["a ~ b".to_string(), "a + b".to_string(), "a * b".to_string()]
        .into_iter()
        .chain([false, true].into_iter().flat_map(|keywords| {
            let filters = FILTERS.iter().map(move |name| filter_expression(name, keywords));
            let tests = TESTS.iter().map(move |name| test_expression(name, keywords));
            let functions = FUNCTIONS.iter().map(move |name| function_expression(name, keywords));
            filters.chain(tests).chain(functions)
        }));
    for source in sources {
        if let Ok(compiled) = PRISTINE.compile_expression_owned(source.clone()) {
            all.insert(source, compiled);
        }
    }
    all
});

/// The call of a filter, with keyword arguments or without (`**` of an empty map would
/// pass the map as a positional argument).
fn filter_expression(name: &str, keywords: bool) -> String {
    if keywords { format!("a | {name}(*b, **k)") } else { format!("a | {name}(*b)") }
}

/// Evaluates a call `expression` (over `a`, the positional arguments `b` and the keyword
/// arguments `k`) in the pristine environment, with `args`: the input, then the
/// arguments as the wrapper received them (keyword arguments last).
fn original_call(
    expression: impl Fn(bool) -> String,
    input: Value,
    args: &[Value],
) -> Result<Value, Error> {
    let (positional, keywords) = match args.split_last() {
        Some((last, rest)) if last.is_kwargs() => (rest, Some(last.clone())),
        _ => (args, None),
    };
    let expression = expression(keywords.is_some());
    let context = minijinja::context! {
        a => input, b => Value::from(positional.to_vec()), k => keywords.unwrap_or_default()
    };
    eval_original(&expression, context)
}

/// Evaluates `expression` (over `a`, `b`) in the pristine environment.
fn original(expression: &str, a: &Value, b: &Value) -> Result<Value, Error> {
    eval_original(expression, minijinja::context! { a => a.clone(), b => b.clone() })
}

fn eval_original(expression: &str, context: Value) -> Result<Value, Error> {
    match ORIGINALS.get(expression) {
        Some(compiled) => compiled.eval(context),
        None => PRISTINE.compile_expression(expression)?.eval(context),
    }
}

fn product_limit(size: Size, times: Option<usize>, what: &str) -> Result<(), Error> {
    let n = times.unwrap_or(0);
    if size.bytes.saturating_mul(n) > MAX_VALUE_BYTES
        || size.items.saturating_mul(n) > MAX_VALUE_ITEMS
    {
        return Err(limit(format!(
            "`{what}` would build a value larger than {MAX_VALUE_BYTES} bytes or {MAX_VALUE_ITEMS} items"
        )));
    }
    Ok(())
}

/// An undefined operand is the template's error, named by its position (the caller
/// finds the operand's text in the rewritten call).
fn defined(a: &Value, b: &Value) -> Result<(), Error> {
    for (i, v) in [a, b].into_iter().enumerate() {
        if v.is_undefined() {
            return Err(Error::new(ErrorKind::UndefinedError, format!("{UNDEFINED}{i}")));
        }
    }
    Ok(())
}

/// Detail of an undefined operand of a checked operator: this, then its index.
pub const UNDEFINED: &str = "undefined operand ";

fn op_concat(state: &State, a: Value, b: Value) -> Result<Value, Error> {
    hooked(state, || concat(state, a, b))
}

fn concat(state: &State, a: Value, b: Value) -> Result<Value, Error> {
    defined(&a, &b)?;
    charge(state, &[&a, &b], Reach::Deep)?;
    let (x, y) = (measure(&a), measure(&b));
    if x.bytes.saturating_add(y.bytes) > MAX_VALUE_BYTES {
        return Err(limit(format!("`~` would build a string larger than {MAX_VALUE_BYTES} bytes")));
    }
    checked(original("a ~ b", &a, &b)?)
}

fn op_add(state: &State, a: Value, b: Value) -> Result<Value, Error> {
    hooked(state, || add(state, a, b))
}

fn add(state: &State, a: Value, b: Value) -> Result<Value, Error> {
    defined(&a, &b)?;
    charge(state, &[&a, &b], Reach::Deep)?;
    if a.kind() != ValueKind::Number || b.kind() != ValueKind::Number {
        let (x, y) = (measure(&a), measure(&b));
        if x.bytes.saturating_add(y.bytes) > MAX_VALUE_BYTES
            || x.items.saturating_add(y.items) > MAX_VALUE_ITEMS
        {
            return Err(limit(format!(
                "`+` would build a value larger than {MAX_VALUE_BYTES} bytes or {MAX_VALUE_ITEMS} items"
            )));
        }
        return checked(original("a + b", &a, &b)?);
    }
    original("a + b", &a, &b)
}

fn op_mul(state: &State, a: Value, b: Value) -> Result<Value, Error> {
    hooked(state, || mul(state, a, b))
}

fn mul(state: &State, a: Value, b: Value) -> Result<Value, Error> {
    defined(&a, &b)?;
    charge(state, &[&a, &b], Reach::Deep)?;
    match (a.kind(), b.kind()) {
        (ValueKind::Number, ValueKind::Number) => original("a * b", &a, &b),
        (ValueKind::Number, _) => {
            product_limit(measure(&b), a.as_usize(), "*")?;
            checked(original("a * b", &a, &b)?)
        }
        _ => {
            product_limit(measure(&a), b.as_usize(), "*")?;
            checked(original("a * b", &a, &b)?)
        }
    }
}

fn value(state: &State, v: Value) -> Result<Value, Error> {
    hooked(state, || checked(v))
}

/// An operand of a comparison or `in`, or an argument of a call: charged in full (the
/// native comparison, search or call touches all of it) and returned unchanged.
fn operand_deep(state: &State, v: Value) -> Result<Value, Error> {
    hooked(state, || charge(state, &[&v], Reach::Deep))?;
    Ok(v)
}

/// A printed or iterated value: a missing one is the template's error (named by the caller
/// from the call's text).
fn emit(state: &State, v: Value) -> Result<Value, Error> {
    hooked(state, || {
        if v.is_undefined() {
            return Err(Error::new(ErrorKind::UndefinedError, format!("{UNDEFINED}0")));
        }
        Ok(v)
    })
}

/// The container of `in`: a map is searched by key (charged by its key, the other
/// operand), anything else in full.
fn container(state: &State, v: Value) -> Result<Value, Error> {
    let reach = if v.kind() == ValueKind::Map { Reach::Shallow } else { Reach::Deep };
    hooked(state, || charge(state, &[&v], reach))?;
    Ok(v)
}

/// The value or key of an index or slice: a string is walked by character, anything
/// else is looked up directly.
fn operand_shallow(state: &State, v: Value) -> Result<Value, Error> {
    hooked(state, || charge(state, &[&v], Reach::Shallow))?;
    Ok(v)
}

/// The built-in filters (minijinja 3 with pactum's features), all wrapped.
const FILTERS: &[&str] = &[
    "safe",
    "escape",
    "e",
    "lower",
    "upper",
    "title",
    "capitalize",
    "replace",
    "length",
    "count",
    "dictsort",
    "items",
    "reverse",
    "trim",
    "join",
    "split",
    "lines",
    "default",
    "d",
    "round",
    "abs",
    "int",
    "float",
    "attr",
    "first",
    "last",
    "min",
    "max",
    "sort",
    "list",
    "string",
    "bool",
    "batch",
    "slice",
    "sum",
    "indent",
    "select",
    "reject",
    "selectattr",
    "rejectattr",
    "map",
    "groupby",
    "unique",
    "chain",
    "zip",
    "pprint",
    "format",
    "tojson",
];

fn usize_arg(args: &[Value], index: usize, kwarg: &str) -> Option<usize> {
    let positional = args.get(index).filter(|v| !v.is_kwargs());
    positional
        .cloned()
        .or_else(|| args.last().filter(|v| v.is_kwargs()).and_then(|k| k.get_attr(kwarg).ok()))
        .filter(|v| !v.is_undefined() && !v.is_none())
        .and_then(|v| {
            v.as_usize().or_else(|| v.as_i64().map(|n| if n < 0 { 0 } else { usize::MAX }))
        })
}

fn str_arg(args: &[Value], index: usize) -> Option<String> {
    args.get(index)
        .filter(|v| !v.is_kwargs())
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
}

/// Refuses the calls of filters whose output can outgrow their input, before they run.
fn precheck(name: &str, args: &[Value]) -> Result<(), Error> {
    let Some(input) = args.first() else { return Ok(()) };
    let size = measure(input);
    let bytes = size.bytes;
    let too_big = |bound: usize| -> Result<(), Error> {
        if bound > MAX_VALUE_BYTES {
            Err(limit(format!("`{name}` would build a value larger than {MAX_VALUE_BYTES} bytes")))
        } else {
            Ok(())
        }
    };
    match name {
        "indent" => {
            let width = usize_arg(args, 1, "width").unwrap_or(4);
            let lines = input.as_str().map_or(1, |s| s.matches('\n').count() + 1);
            too_big(bytes.saturating_add(lines.saturating_mul(width)))
        }
        "replace" => {
            let text = input.as_str().map(str::to_string).unwrap_or_else(|| input.to_string());
            let from = str_arg(args, 1).unwrap_or_default();
            let to = str_arg(args, 2).unwrap_or_default();
            let count = if from.is_empty() {
                text.chars().count() + 1
            } else {
                text.matches(from.as_str()).count()
            };
            too_big(text.len().saturating_add(count.saturating_mul(to.len())))
        }
        "join" => {
            let sep = str_arg(args, 1).unwrap_or_default();
            too_big(bytes.saturating_add(size.items.saturating_mul(sep.len())))
        }
        "format" => {
            let fmt = input.as_str().unwrap_or_default();
            let widths: usize = fmt
                .split(|c: char| !c.is_ascii_digit())
                .filter(|d| !d.is_empty())
                .map(|d| d.parse::<usize>().unwrap_or(usize::MAX))
                .fold(0, usize::saturating_add);
            let starred: usize = if fmt.contains('*') {
                args.iter().filter_map(Value::as_usize).fold(0, usize::saturating_add)
            } else {
                0
            };
            let args_bytes: usize =
                args[1..].iter().map(|a| measure(a).bytes).fold(0, usize::saturating_add);
            too_big(
                fmt.len().saturating_add(widths).saturating_add(starred).saturating_add(args_bytes),
            )
        }
        "batch" | "slice" => match usize_arg(args, 1, "count") {
            Some(n) if n > MAX_VALUE_ITEMS => {
                Err(limit(format!("`{name}` count {n} is more than {MAX_VALUE_ITEMS} items")))
            }
            _ => Ok(()),
        },
        "tojson" | "pprint" => {
            let indent =
                if name == "pprint" { 2 } else { usize_arg(args, 1, "indent").unwrap_or(0) };
            let lines = size.items.saturating_add(2);
            too_big(bytes.saturating_add(
                lines.saturating_mul(indent.saturating_mul(size.depth.saturating_add(1))),
            ))
        }
        _ => Ok(()),
    }
}

/// The filters whose work is constant or linear in the text of a string argument (never
/// in the items of a sequence or map): charged [`Reach::Shallow`]. Every other filter,
/// one added later included, is charged [`Reach::Deep`], and `sort`, `dictsort`,
/// `groupby` and `unique` (which sort or compare items) `log2(items)` times over.
const SHALLOW_FILTERS: &[&str] = &[
    "length", "count", "first", "last", "default", "d", "bool", "abs", "round", "int", "float",
    "attr", "safe",
];
const SORTING_FILTERS: &[&str] = &["sort", "dictsort", "groupby", "unique"];
/// The tests whose work is constant or linear in the text of a string argument.
const SHALLOW_TESTS: &[&str] = &[
    "undefined",
    "defined",
    "none",
    "safe",
    "escaped",
    "boolean",
    "odd",
    "even",
    "divisibleby",
    "number",
    "integer",
    "int",
    "float",
    "string",
    "sequence",
    "iterable",
    "mapping",
    "startingwith",
    "endingwith",
    "lower",
    "upper",
    "sameas",
    "true",
    "false",
    "filter",
    "test",
];

/// Charges a filter's or test's native work on its arguments before it runs.
fn charge_call(state: &State, name: &str, shallow: &[&str], args: &[Value]) -> Result<(), Error> {
    let values: Vec<&Value> = args.iter().collect();
    if shallow.contains(&name) {
        return charge(state, &values, Reach::Shallow);
    }
    let mut times = 1;
    if SORTING_FILTERS.contains(&name) {
        // Each item takes part in about log2(items) comparisons of a sort.
        let items = args.first().and_then(Value::len).unwrap_or(0) as u64;
        times = u64::from(u64::BITS - items.leading_zeros()).max(1);
    }
    charge_times(state, &values, Reach::Deep, times)
}

fn filter(state: &State, name: &'static str, args: &[Value]) -> Result<Value, Error> {
    charge_call(state, name, SHALLOW_FILTERS, args)?;
    precheck(name, args)?;
    let input = args.first().cloned().unwrap_or_default();
    checked(original_call(
        |k| filter_expression(name, k),
        input,
        args.get(1..).unwrap_or_default(),
    )?)
}

/// The built-in tests (minijinja 3 with pactum's features), all wrapped.
pub const TESTS: &[&str] = &[
    "undefined",
    "defined",
    "none",
    "safe",
    "escaped",
    "boolean",
    "odd",
    "even",
    "divisibleby",
    "number",
    "integer",
    "int",
    "float",
    "string",
    "sequence",
    "iterable",
    "mapping",
    "startingwith",
    "endingwith",
    "lower",
    "upper",
    "sameas",
    "eq",
    "equalto",
    "==",
    "ne",
    "!=",
    "lt",
    "lessthan",
    "<",
    "le",
    "<=",
    "gt",
    "greaterthan",
    ">",
    "ge",
    ">=",
    "in",
    "true",
    "false",
    "filter",
    "test",
];

fn test_expression(name: &str, keywords: bool) -> String {
    if keywords { format!("a is {name}(*b, **k)") } else { format!("a is {name}(*b)") }
}

fn function_expression(name: &str, keywords: bool) -> String {
    if keywords { format!("{name}(*b, **k)") } else { format!("{name}(*b)") }
}

fn test(state: &State, name: &'static str, args: &[Value]) -> Result<bool, Error> {
    charge_call(state, name, SHALLOW_TESTS, args)?;
    let input = args.first().cloned().unwrap_or_default();
    Ok(original_call(|k| test_expression(name, k), input, args.get(1..).unwrap_or_default())?
        .is_true())
}

/// The global functions a pack template may call (minijinja's `debug`, which prints the
/// whole context, is left out), all wrapped: their arguments are charged where they are
/// called (see the rewrite), their results measured.
pub const FUNCTIONS: &[&str] = &["range", "dict", "namespace"];

fn function(state: &State, name: &'static str, args: &[Value]) -> Result<Value, Error> {
    let values: Vec<&Value> = args.iter().collect();
    charge(state, &values, Reach::Deep)?;
    checked(original_call(|k| function_expression(name, k), Value::UNDEFINED, args)?)
}

/// The variables a template reads, without the checking functions the rewrite added.
pub fn user_variables(names: impl IntoIterator<Item = String>) -> impl Iterator<Item = String> {
    names.into_iter().filter(|n| !n.starts_with("__pactum_"))
}

/// The prompt environment: minijinja's empty environment (no filter, test or global of
/// its own) with every filter, test and function installed through the wrappers that
/// charge their work, plus the checking functions of the rewrite. Nothing else installs
/// callables: a filter, test or function missing from [`FILTERS`], [`TESTS`] or
/// [`FUNCTIONS`] does not exist in a pack template.
pub fn environment() -> Environment<'static> {
    let mut env = Environment::empty();
    env.add_function("__pactum_concat", op_concat);
    env.add_function("__pactum_add", op_add);
    env.add_function("__pactum_mul", op_mul);
    env.add_function("__pactum_value", value);
    env.add_function("__pactum_deep", operand_deep);
    env.add_function("__pactum_emit", emit);
    env.add_function("__pactum_container", container);
    env.add_function("__pactum_shallow", operand_shallow);
    for &name in FILTERS {
        env.add_filter(name, move |state: &State, args: Rest<ValueOrKwargs>| {
            let args: Vec<Value> = args.0.into_iter().map(ValueOrKwargs::into_value).collect();
            hooked(state, || filter(state, name, &args))
        });
    }
    for &name in TESTS {
        env.add_test(name, move |state: &State, args: Rest<ValueOrKwargs>| {
            let args: Vec<Value> = args.0.into_iter().map(ValueOrKwargs::into_value).collect();
            hooked(state, || test(state, name, &args))
        });
    }
    for &name in FUNCTIONS {
        env.add_function(name, move |state: &State, args: Rest<ValueOrKwargs>| {
            let args: Vec<Value> = args.0.into_iter().map(ValueOrKwargs::into_value).collect();
            hooked(state, || function(state, name, &args))
        });
    }
    env
}

/// One edit of the template source.
struct Wrap {
    start: usize,
    end: usize,
    open: &'static str,
    close: &'static str,
    /// An operator to replace by `,` (offset, length).
    op: Option<usize>,
}

/// Why a template cannot be accepted: the line and what is wrong.
#[derive(Debug)]
pub struct Refused {
    pub line: usize,
    pub message: String,
}

struct Rewriter<'s> {
    source: &'s str,
    wraps: Vec<Wrap>,
    refused: Option<Refused>,
}

impl Rewriter<'_> {
    fn refuse(&mut self, line: u16, what: &str) {
        if self.refused.is_none() {
            self.refused = Some(Refused {
                line: usize::from(line),
                message: format!(
                    "{what} is not allowed in a pack template: its output is captured outside the prompt's size limit; write the text inline"
                ),
            });
        }
    }

    fn stmts(&mut self, stmts: &[Stmt<'_>]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, stmt: &Stmt<'_>) {
        match stmt {
            Stmt::Template(t) => self.stmts(&t.children),
            Stmt::EmitExpr(e) => {
                // A printed value goes through `__pactum_emit`, so a missing one fails in
                // pactum's check (which notes the fuel consumed), not in the engine. An
                // `x if c` without `else` prints nothing when `c` is false: only `x` is
                // checked.
                match &e.expr {
                    Expr::IfExpr(i) if i.false_expr.is_none() => {
                        self.wrap_operand(&i.true_expr, "__pactum_emit(", ")");
                    }
                    other => self.wrap_operand(other, "__pactum_emit(", ")"),
                }
                self.expr(&e.expr);
            }
            Stmt::EmitRaw(_) => {}
            Stmt::ForLoop(f) => {
                if f.recursive {
                    self.refuse(f.span().start_line, "a recursive loop");
                }
                // A missing sequence fails in pactum's check, like a missing printed value.
                self.wrap_operand(&f.iter, "__pactum_emit(", ")");
                self.expr(&f.iter);
                if let Some(e) = &f.filter_expr {
                    self.expr(e);
                }
                self.stmts(&f.body);
                self.stmts(&f.else_body);
            }
            Stmt::IfCond(i) => {
                self.expr(&i.expr);
                self.stmts(&i.true_body);
                self.stmts(&i.false_body);
            }
            Stmt::WithBlock(w) => {
                for (_, value) in &w.assignments {
                    self.expr(value);
                }
                self.stmts(&w.body);
            }
            Stmt::Set(s) => self.expr(&s.expr),
            Stmt::SetBlock(s) => self.refuse(s.span().start_line, "`{% set %}…{% endset %}`"),
            Stmt::AutoEscape(a) => {
                self.expr(&a.enabled);
                self.stmts(&a.body);
            }
            Stmt::FilterBlock(f) => self.refuse(f.span().start_line, "`{% filter %}`"),
            Stmt::Block(b) => self.refuse(b.span().start_line, "`{% block %}`"),
            Stmt::Import(i) => self.refuse(i.span().start_line, "`{% import %}`"),
            Stmt::FromImport(i) => self.refuse(i.span().start_line, "`{% from … import %}`"),
            Stmt::Extends(e) => self.refuse(e.span().start_line, "`{% extends %}`"),
            Stmt::Include(i) => self.refuse(i.span().start_line, "`{% include %}`"),
            Stmt::Macro(m) => self.refuse(m.span().start_line, "`{% macro %}`"),
            Stmt::CallBlock(c) => self.refuse(c.span().start_line, "`{% call %}`"),
            Stmt::Do(d) => {
                self.expr(&d.call.expr);
                self.charged_args(&d.call.args);
            }
        }
    }

    /// The arguments of a call (an expression or `{% do %}`): what a callable does with
    /// them (`loop.changed(x)` compares them) is charged where it is called.
    fn charged_args(&mut self, args: &[CallArg<'_>]) {
        for arg in args {
            let (CallArg::Pos(e)
            | CallArg::Kwarg(_, e)
            | CallArg::PosSplat(e)
            | CallArg::KwargSplat(e)) = arg;
            self.wrap_operand(e, "__pactum_deep(", ")");
        }
        self.args(args);
    }

    fn args(&mut self, args: &[CallArg<'_>]) {
        for arg in args {
            match arg {
                CallArg::Pos(e)
                | CallArg::Kwarg(_, e)
                | CallArg::PosSplat(e)
                | CallArg::KwargSplat(e) => self.expr(e),
            }
        }
    }

    /// Wraps an operand: its whole text (a filter's or test's span starts at its name, a
    /// postfix expression's at its operator).
    fn wrap_operand(&mut self, e: &Expr<'_>, open: &'static str, close: &'static str) {
        let (start, end) = balanced(self.source, extent(e));
        self.wraps.push(Wrap { start, end, open, close, op: None });
    }

    fn wrap(&mut self, span: minijinja::machinery::Span, open: &'static str, close: &'static str) {
        self.wraps.push(Wrap {
            start: span.start_offset as usize,
            end: span.end_offset as usize,
            open,
            close,
            op: None,
        });
    }

    fn expr(&mut self, expr: &Expr<'_>) {
        match expr {
            Expr::Var(_) | Expr::Const(_) => {}
            Expr::Slice(s) => {
                self.wrap_operand(&s.expr, "__pactum_deep(", ")");
                self.expr(&s.expr);
                for e in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                    self.expr(e);
                }
            }
            Expr::UnaryOp(u) => {
                // Constant time (truthiness, a number's sign); named so a new kind does
                // not compile unbounded.
                match u.op {
                    UnaryOpKind::Not | UnaryOpKind::Neg => {}
                }
                self.expr(&u.expr);
            }
            Expr::BinOp(b) => {
                match b.op {
                    BinOpKind::Eq
                    | BinOpKind::Ne
                    | BinOpKind::Lt
                    | BinOpKind::Lte
                    | BinOpKind::Gt
                    | BinOpKind::Gte => {
                        self.wrap_operand(&b.left, "__pactum_deep(", ")");
                        self.wrap_operand(&b.right, "__pactum_deep(", ")");
                    }
                    BinOpKind::In => {
                        self.wrap_operand(&b.left, "__pactum_deep(", ")");
                        self.wrap_operand(&b.right, "__pactum_container(", ")");
                    }
                    // Rewritten into checked calls below.
                    BinOpKind::Concat | BinOpKind::Add | BinOpKind::Mul => {}
                    // Constant time: truthiness, and arithmetic minijinja does on numbers
                    // only. Every kind is named, so a new one does not compile unbounded.
                    BinOpKind::ScAnd
                    | BinOpKind::ScOr
                    | BinOpKind::Sub
                    | BinOpKind::Div
                    | BinOpKind::FloorDiv
                    | BinOpKind::Rem
                    | BinOpKind::Pow => {}
                }
                let function = match b.op {
                    BinOpKind::Concat => Some(("__pactum_concat(", b'~')),
                    BinOpKind::Add => Some(("__pactum_add(", b'+')),
                    BinOpKind::Mul => Some(("__pactum_mul(", b'*')),
                    _ => None,
                };
                if let Some((open, op)) = function {
                    match self.operator(b.left.span().end_offset as usize, op) {
                        Some(at) => {
                            let span = b.span();
                            self.wraps.push(Wrap {
                                start: span.start_offset as usize,
                                end: span.end_offset as usize,
                                open,
                                close: ")",
                                op: Some(at),
                            });
                        }
                        None => self.refuse(b.span().start_line, "an operator pactum cannot bound"),
                    }
                }
                self.expr(&b.left);
                self.expr(&b.right);
            }
            Expr::Compare(c) => {
                // A chain (`a < b < c`): every operand is compared (or searched) in full.
                self.wrap_operand(&c.expr, "__pactum_deep(", ")");
                self.expr(&c.expr);
                for op in &c.ops {
                    let open = match op.op {
                        CompareOpKind::In | CompareOpKind::NotIn => "__pactum_container(",
                        CompareOpKind::Eq
                        | CompareOpKind::Ne
                        | CompareOpKind::Lt
                        | CompareOpKind::Lte
                        | CompareOpKind::Gt
                        | CompareOpKind::Gte => "__pactum_deep(",
                    };
                    self.wrap_operand(&op.expr, open, ")");
                    self.expr(&op.expr);
                }
            }
            Expr::IfExpr(i) => {
                self.expr(&i.test_expr);
                self.expr(&i.true_expr);
                if let Some(e) = &i.false_expr {
                    self.expr(e);
                }
            }
            Expr::Filter(f) => {
                if let Some(e) = &f.expr {
                    self.expr(e);
                }
                self.args(&f.args);
            }
            Expr::Test(t) => {
                self.expr(&t.expr);
                self.args(&t.args);
            }
            Expr::GetAttr(g) => self.expr(&g.expr),
            Expr::GetItem(g) => {
                self.wrap_operand(&g.expr, "__pactum_shallow(", ")");
                self.wrap_operand(&g.subscript_expr, "__pactum_shallow(", ")");
                self.expr(&g.expr);
                self.expr(&g.subscript_expr);
            }
            Expr::Call(c) => {
                self.wrap_operand(expr, "__pactum_value(", ")");
                self.expr(&c.expr);
                self.charged_args(&c.args);
            }
            Expr::List(l) => {
                self.wrap(l.span(), "__pactum_value(", ")");
                for e in &l.items {
                    self.expr(e);
                }
            }
            Expr::Tuple(t) => {
                self.wrap(t.span(), "__pactum_value((", "))");
                for e in &t.items {
                    self.expr(e);
                }
            }
            Expr::Map(m) => {
                self.wrap(m.span(), "__pactum_value(", ")");
                for e in m.keys.iter().chain(&m.values) {
                    self.expr(e);
                }
            }
        }
    }

    /// The offset of the operator after the left operand (past closing parentheses and
    /// whitespace).
    fn operator(&self, from: usize, op: u8) -> Option<usize> {
        let bytes = self.source.as_bytes();
        let mut i = from;
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b')') {
            i += 1;
        }
        let is_op = bytes.get(i) == Some(&op) && !(op == b'*' && bytes.get(i + 1) == Some(&b'*'));
        is_op.then_some(i)
    }
}

/// The deepest an expression of a pack template may nest: brackets, operator chains and
/// prefix operators together (see [`nesting`]).
pub const MAX_EXPRESSION_DEPTH: usize = 100;

/// Refuses a template whose expressions nest deeper than [`MAX_EXPRESSION_DEPTH`], before
/// anything recursive (minijinja's parser and code generator, the rewrite, dropping the
/// syntax tree) sees it: 100,000 nested parentheses, `not not not …` or a chain of
/// thousands of filters or operators would overflow the stack.
///
/// One pass over the tokens, no recursion. Within each bracket (and at the top of each
/// `{{ }}` or `{% %}`) it counts the operator, postfix and prefix tokens since the last
/// separator (`,`, `:`, `=`): each can add a level to the syntax tree (left-deep chains
/// such as `a ~ b ~ c` and `x | f | g` included). The sum of those counts over the open
/// brackets, plus the number of open brackets, bounds the depth of the tree.
pub fn nesting(source: &str) -> Result<(), Refused> {
    use minijinja::machinery::{Token, tokenize};
    let mut levels: Vec<usize> = vec![0];
    let mut sum = 0usize;
    for token in tokenize(source, false, Default::default()) {
        // A template that does not tokenize is left to the compiler's syntax error.
        let Ok((token, span)) = token else { return Ok(()) };
        // One step per token and per byte of it: the cost test's work (`crate::work`).
        crate::work::count(1 + span.end_offset.saturating_sub(span.start_offset) as usize);
        match token {
            Token::VariableStart | Token::VariableEnd | Token::BlockStart | Token::BlockEnd => {
                levels.clear();
                levels.push(0);
                sum = 0;
            }
            Token::TemplateData(_)
            | Token::Str(_)
            | Token::String(_)
            | Token::Int(_)
            | Token::Int128(_)
            | Token::Float(_) => {}
            Token::Ident(word) => {
                if matches!(word, "not" | "and" | "or" | "is" | "in" | "if" | "else") {
                    *levels.last_mut().unwrap_or(&mut 0) += 1;
                    sum += 1;
                }
            }
            Token::Comma | Token::Colon | Token::Assign => {
                if let Some(top) = levels.last_mut() {
                    sum -= *top;
                    *top = 0;
                }
            }
            Token::ParenOpen | Token::BracketOpen | Token::BraceOpen => {
                // The bracket is a call, an index or a literal of the level it opens in.
                if let Some(top) = levels.last_mut() {
                    *top += 1;
                }
                sum += 1;
                levels.push(0);
            }
            Token::ParenClose | Token::BracketClose | Token::BraceClose => {
                if levels.len() > 1 {
                    sum -= levels.pop().unwrap_or(0);
                }
            }
            _ => {
                if let Some(top) = levels.last_mut() {
                    *top += 1;
                }
                sum += 1;
            }
        }
        let depth = sum + levels.len();
        if depth > MAX_EXPRESSION_DEPTH {
            return Err(Refused {
                line: usize::from(span.start_line),
                message: format!(
                    "an expression nests deeper than {MAX_EXPRESSION_DEPTH} levels (brackets, operators and filters chained together); split it with `{{% set %}}`"
                ),
            });
        }
    }
    Ok(())
}

/// The source offsets of an expression's whole text, its leftmost operand included
/// (recursion bounded by [`MAX_EXPRESSION_DEPTH`]).
fn extent(e: &Expr<'_>) -> (usize, usize) {
    let span = e.span();
    let (start, end) = (span.start_offset as usize, span.end_offset as usize);
    // minijinja starts the span of a comparison (and of the `not` of `a not in b`) at the
    // token before it: their text starts with their left operand.
    let from_left = match e {
        Expr::BinOp(b) => (!matches!(
            b.op,
            BinOpKind::ScAnd
                | BinOpKind::ScOr
                | BinOpKind::Add
                | BinOpKind::Sub
                | BinOpKind::Mul
                | BinOpKind::Div
                | BinOpKind::FloorDiv
                | BinOpKind::Rem
                | BinOpKind::Pow
                | BinOpKind::Concat
        ))
        .then_some(&b.left),
        Expr::Compare(c) => Some(&c.expr),
        Expr::UnaryOp(u) => match &u.expr {
            Expr::BinOp(b)
                if matches!(u.op, UnaryOpKind::Not)
                    && matches!(b.op, BinOpKind::In)
                    && b.span().start_offset == u.span().start_offset =>
            {
                Some(&u.expr)
            }
            _ => None,
        },
        _ => None,
    };
    if let Some(left) = from_left {
        let (s, e) = extent(left);
        return (s, end.max(e));
    }
    let inner = match e {
        Expr::Filter(f) => f.expr.as_ref(),
        Expr::Test(t) => Some(&t.expr),
        Expr::GetAttr(g) => Some(&g.expr),
        Expr::GetItem(g) => Some(&g.expr),
        Expr::Slice(s) => Some(&s.expr),
        Expr::Call(c) => Some(&c.expr),
        Expr::BinOp(b) => Some(&b.left),
        Expr::Compare(c) => Some(&c.expr),
        Expr::IfExpr(i) => Some(&i.true_expr),
        _ => None,
    };
    match inner {
        Some(inner) => {
            let (s, e) = extent(inner);
            (start.min(s), end.max(e))
        }
        None => (start, end),
    }
}

/// Widens `(start, end)` over the parentheses its text closes or opens without matching:
/// a syntax tree's spans leave out grouping parentheses (`(a ~ b) | upper` spans from `a`).
fn balanced(source: &str, (mut start, mut end): (usize, usize)) -> (usize, usize) {
    let bytes = source.as_bytes();
    let end_at = end.min(bytes.len());
    let (mut open, mut unopened) = (0usize, 0usize);
    let mut quote: Option<u8> = None;
    let mut i = start.min(end_at);
    while i < end_at {
        let c = bytes[i];
        match quote {
            Some(_) if c == b'\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                b'\'' | b'"' => quote = Some(c),
                b'(' | b'[' | b'{' => open += 1,
                b')' | b']' | b'}' if open == 0 => unopened += 1,
                b')' | b']' | b'}' => open -= 1,
                _ => {}
            },
        }
        i += 1;
    }
    while unopened > 0 {
        let mut j = start;
        while j > 0 && bytes[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
        if j == 0 || bytes[j - 1] != b'(' {
            break;
        }
        start = j - 1;
        unopened -= 1;
    }
    while open > 0 {
        let mut j = end;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if bytes.get(j) != Some(&b')') {
            break;
        }
        end = j + 1;
        open -= 1;
    }
    (start, end)
}

/// The text of operand `index` in a checked call (`__pactum_concat(x , y)`), for naming
/// an undefined variable.
pub fn operand(call: &str, index: usize) -> Option<&str> {
    let open = call.find('(')?;
    let inner = &call[open + 1..];
    let (mut depth, mut start, mut found) = (0i32, 0usize, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => {
                return (found == index).then(|| inner[start..i].trim());
            }
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                if found == index {
                    return Some(inner[start..i].trim());
                }
                found += 1;
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// The template source rewritten with the checks (see the module docs), or why it is
/// refused. A template that does not parse is returned unchanged: compiling it reports
/// the syntax error as usual.
pub fn prepare(source: &str, name: &str) -> Result<String, Refused> {
    nesting(source)?;
    let Ok(ast) = minijinja::machinery::parse(source, name, Default::default()) else {
        return Ok(source.to_string());
    };
    let mut rewriter = Rewriter { source, wraps: Vec::new(), refused: None };
    rewriter.stmt(&ast);
    if let Some(refused) = rewriter.refused {
        return Err(refused);
    }
    if rewriter.wraps.is_empty() {
        return Ok(source.to_string());
    }
    // Events in source order: at one offset, closers (inner first), then operators, then
    // openers (outer first).
    let mut events: Vec<(usize, u8, usize, &str, usize)> = Vec::new();
    for w in &rewriter.wraps {
        let len = w.end.saturating_sub(w.start);
        events.push((w.start, 2, usize::MAX - len, w.open, 0));
        events.push((w.end, 0, len, w.close, 0));
        if let Some(at) = w.op {
            events.push((at, 1, 0, ",", 1));
        }
    }
    events.sort_by_key(|&(at, kind, order, _, _)| (at, kind, order));
    let mut out = String::with_capacity(source.len() + events.len() * 16);
    let mut cursor = 0;
    for (at, _, _, text, skip) in events {
        let at = at.min(source.len());
        if at > cursor {
            out.push_str(source.get(cursor..at).unwrap_or_default());
            cursor = at;
        }
        out.push_str(text);
        cursor = cursor.max(at + skip);
    }
    out.push_str(source.get(cursor..).unwrap_or_default());
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    fn rewritten(source: &str) -> String {
        prepare(source, "t").unwrap()
    }

    #[test]
    fn operators_literals_and_calls_are_wrapped_on_their_own_lines() {
        let e = |inner: &str| format!("{{{{ __pactum_emit({inner}) }}}}");
        assert_eq!(rewritten("{{ a ~ b }}"), e("__pactum_concat(a , b)"));
        assert_eq!(rewritten("{{ a ~ b ~ c }}"), e("__pactum_concat(__pactum_concat(a , b) , c)"));
        assert_eq!(rewritten("{{ (a ~ b)|upper }}"), e("(__pactum_concat(a , b))|upper"));
        assert_eq!(rewritten("{{ (x) * 3 + 1 }}"), e("__pactum_add(__pactum_mul((x) , 3) , 1)"));
        assert_eq!(rewritten("{{ 2 ** 3 }}"), e("2 ** 3"));
        assert_eq!(rewritten("{% set l = [a, b] %}"), "{% set l = __pactum_value([a, b]) %}");
        assert_eq!(rewritten("{{ range(3) }}"), e("__pactum_value(range(__pactum_deep(3)))"));
        assert_eq!(
            rewritten("{{ loop.cycle(a) }}"),
            e("__pactum_value(loop.cycle(__pactum_deep(a)))")
        );
        assert_eq!(
            rewritten("line 1\n{% for x in xs %}\n{{ x ~ '!' }}\n{% endfor %}"),
            "line 1\n{% for x in __pactum_emit(xs) %}\n{{ __pactum_emit(__pactum_concat(x , '!')) }}\n{% endfor %}"
        );
        assert_eq!(rewritten("plain {{ x }} text"), "plain {{ __pactum_emit(x) }} text");
        assert_eq!(rewritten("plain text"), "plain text");
        // Operands of comparisons, `in`, indexes, slices and call arguments are charged.
        assert_eq!(
            rewritten("{% if a == b and x|f in y and a < b <= c %}{% endif %}"),
            "{% if __pactum_deep(a) == __pactum_deep(b) and __pactum_deep(x|f) in __pactum_container(y) and __pactum_deep(a) < __pactum_deep(b) <= __pactum_deep(c) %}{% endif %}"
        );
        assert_eq!(
            rewritten("{{ (s|upper)[1:] ~ m[k] }}"),
            e(
                "__pactum_concat((__pactum_deep(s|upper))[1:] , __pactum_shallow(m)[__pactum_shallow(k)])"
            )
        );
        // Spans leave out grouping parentheses and start comparisons early: the wraps
        // still enclose exactly their operand.
        assert_eq!(
            rewritten("{{ ((a)|f) == b }}"),
            e("(__pactum_deep((a)|f)) == __pactum_deep(b)")
        );
        assert_eq!(
            rewritten("{{ x and a not in (b) }}"),
            e("x and __pactum_deep(a) not in (__pactum_container(b))")
        );
        assert_eq!(
            rewritten("{{ not (a in b) }}"),
            e("not (__pactum_deep(a) in __pactum_container(b))")
        );
        assert_eq!(rewritten("{{ 'a)' ~ x }}"), e("__pactum_concat('a)' , x)"));
        // `x if c` without `else` prints nothing when `c` is false: only `x` is checked.
        assert_eq!(rewritten("{{ x if c }}"), "{{ __pactum_emit(x) if c }}");
        assert_eq!(
            rewritten("{{ '!' if n > 9 }}"),
            "{{ __pactum_emit('!') if __pactum_deep(n) > __pactum_deep(9) }}"
        );
    }

    #[test]
    fn every_callable_of_the_prompt_environment_is_charged() {
        let big = "x".repeat(1 << 16);
        let least = (1 << 16) / WORK_PER_FUEL;
        let env = environment();
        let pristine = |expression: &str, name: &str| {
            PRISTINE
                .compile_expression(expression)
                .unwrap()
                .eval(minijinja::context! { n => name })
                .unwrap()
                .is_true()
        };
        let charged = |template: String| {
            start(u64::MAX / 2, 0);
            let _ = env.render_str(&template, minijinja::context! { big => big.clone() });
            spent().work_fuel
        };
        // The lists are minijinja's callables, and each one, whatever its arguments, is
        // charged for the size of its input before it runs.
        for &name in FILTERS {
            assert!(pristine("n is filter", name), "`{name}` is not a minijinja filter");
            let spent = charged(format!("{{% if big | {name} %}}{{% endif %}}"));
            assert!(spent >= least, "filter `{name}`: {spent}");
        }
        for &name in TESTS {
            assert!(pristine("n is test", name), "`{name}` is not a minijinja test");
            // `==`, `<`, …: only `select` and its kind can name them (and are charged).
            let template = if name.chars().all(|c| c.is_ascii_alphabetic()) {
                format!("{{% if big is {name} %}}{{% endif %}}")
            } else {
                format!("{{% if [big] | select('{name}', big) | first %}}{{% endif %}}")
            };
            let spent = charged(template);
            assert!(spent >= least, "test `{name}`: {spent}");
        }
        for &name in FUNCTIONS {
            let spent = charged(format!("{{% if {name}(big) %}}{{% endif %}}"));
            assert!(spent >= least, "function `{name}`: {spent}");
        }
        // The environment starts empty: a callable minijinja has but the lists leave out
        // does not exist in a pack template, so none can run uncharged.
        for template in ["{{ debug() }}", "{{ x | nosuchfilter }}", "{{ x is nosuchtest }}"] {
            let e = env.render_str(template, minijinja::context! { x => 1 }).unwrap_err();
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::UnknownFunction | ErrorKind::UnknownFilter | ErrorKind::UnknownTest
                ),
                "{template}: {e}"
            );
        }
    }

    #[test]
    fn capturing_constructs_are_refused_with_their_line() {
        for source in [
            "{% macro m() %}x{% endmacro %}",
            "a\n{% set x %}y{% endset %}",
            "{% filter upper %}x{% endfilter %}",
            "{% for x in xs recursive %}{{ loop(x.c) }}{% endfor %}",
            "{% include 'other' %}",
        ] {
            let refused = prepare(source, "t").unwrap_err();
            assert!(refused.message.contains("not allowed"), "{source}: {refused:?}");
        }
        assert_eq!(prepare("a\n{% set x %}y{% endset %}", "t").unwrap_err().line, 2);
    }
}
