//! The `calculator` tool's engine: real arithmetic on expressions with precedence and
//! parentheses.
//!
//! Grammar (iterative over operators, recursive only through parentheses, with a depth
//! limit):
//!
//! ```text
//! expr   := term (("+" | "-") term)*
//! term   := power (("*" | "/" | "%") power)*
//! power  := unary ("^" power)?            right-associative
//! unary  := ("-" | "+") unary | atom
//! atom   := number | "(" expr ")"
//! number := digits ["." digits] [("e" | "E") ["+" | "-"] digits]
//! ```
//!
//! Division or remainder by zero, a non-finite result and bad syntax are errors that say
//! where.

/// Nesting of parentheses and unary signs the parser accepts.
pub const MAX_DEPTH: usize = 64;
/// The longest expression accepted.
pub const MAX_LEN: usize = 4096;

/// Evaluates an arithmetic expression.
pub fn evaluate(expression: &str) -> Result<f64, String> {
    if expression.len() > MAX_LEN {
        return Err(format!("expression is longer than {MAX_LEN} characters"));
    }
    let mut p = Parser { bytes: expression.as_bytes(), pos: 0 };
    p.skip_ws();
    if p.pos == p.bytes.len() {
        return Err("empty expression".into());
    }
    let value = p.expr(0)?;
    p.skip_ws();
    if p.pos != p.bytes.len() {
        return Err(format!("unexpected `{}` at position {}", p.rest_char(), p.pos + 1));
    }
    if value.is_finite() { Ok(value) } else { Err("the result is not a finite number".into()) }
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.pos).copied()
    }

    fn rest_char(&self) -> char {
        std::str::from_utf8(&self.bytes[self.pos..])
            .ok()
            .and_then(|s| s.chars().next())
            .unwrap_or('?')
    }

    fn expr(&mut self, depth: usize) -> Result<f64, String> {
        let mut value = self.term(depth)?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let rhs = self.term(depth)?;
            value = if op == b'+' { value + rhs } else { value - rhs };
        }
        Ok(value)
    }

    fn term(&mut self, depth: usize) -> Result<f64, String> {
        let mut value = self.power(depth)?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            let at = self.pos + 1;
            self.pos += 1;
            let rhs = self.power(depth)?;
            value = match op {
                b'*' => value * rhs,
                _ if rhs == 0.0 => {
                    return Err(format!("division by zero at position {at}"));
                }
                b'/' => value / rhs,
                _ => value % rhs,
            };
        }
        Ok(value)
    }

    fn power(&mut self, depth: usize) -> Result<f64, String> {
        let base = self.unary(depth)?;
        if self.peek() == Some(b'^') {
            self.pos += 1;
            if depth >= MAX_DEPTH {
                return Err("expression is nested too deeply".into());
            }
            let exponent = self.power(depth + 1)?;
            return Ok(base.powf(exponent));
        }
        Ok(base)
    }

    fn unary(&mut self, depth: usize) -> Result<f64, String> {
        if depth >= MAX_DEPTH {
            return Err("expression is nested too deeply".into());
        }
        match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                Ok(-self.unary(depth + 1)?)
            }
            Some(b'+') => {
                self.pos += 1;
                self.unary(depth + 1)
            }
            _ => self.atom(depth),
        }
    }

    fn atom(&mut self, depth: usize) -> Result<f64, String> {
        match self.peek() {
            Some(b'(') => {
                let open = self.pos + 1;
                self.pos += 1;
                let value = self.expr(depth + 1)?;
                if self.peek() != Some(b')') {
                    return Err(format!("missing `)` for the `(` at position {open}"));
                }
                self.pos += 1;
                Ok(value)
            }
            Some(b) if b.is_ascii_digit() || b == b'.' => self.number(),
            Some(_) => Err(format!(
                "expected a number or `(` at position {}, found `{}`",
                self.pos + 1,
                self.rest_char()
            )),
            None => Err("the expression ends too early".into()),
        }
    }

    fn number(&mut self) -> Result<f64, String> {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let s = p.pos;
            while p.pos < p.bytes.len() && p.bytes[p.pos].is_ascii_digit() {
                p.pos += 1;
            }
            p.pos - s
        };
        let mut n = digits(self);
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            n += digits(self);
        }
        if n == 0 {
            return Err(format!("malformed number at position {}", start + 1));
        }
        if matches!(self.bytes.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.bytes.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(format!("malformed exponent at position {}", self.pos + 1));
            }
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos])
            .map_err(|_| "bad number".to_string())?;
        text.parse::<f64>()
            .map_err(|_| format!("malformed number `{text}` at position {}", start + 1))
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    fn check(expr: &str, expect: Result<f64, &str>) {
        match (evaluate(expr), expect) {
            (Ok(v), Ok(e)) => assert!((v - e).abs() < 1e-9, "{expr} = {v}, expected {e}"),
            (Err(m), Err(e)) => assert!(m.contains(e), "{expr}: `{m}` should mention `{e}`"),
            (got, expect) => panic!("{expr}: got {got:?}, expected {expect:?}"),
        }
    }

    #[test]
    fn arithmetic() {
        check("5 + 10", Ok(15.0));
        check("2 + 3 * 4", Ok(14.0));
        check("(2 + 3) * 4", Ok(20.0));
        check("10 - 4 - 3", Ok(3.0));
        check("2 ^ 3 ^ 2", Ok(512.0));
        check("-2 ^ 2", Ok(4.0));
        check("7 % 4", Ok(3.0));
        check("1.5e2 / 3", Ok(50.0));
        check(" -(-3) ", Ok(3.0));
        check("8 / 4 / 2", Ok(1.0));
        check(".5 + .5", Ok(1.0));
    }

    #[test]
    fn errors() {
        check("1 / 0", Err("division by zero at position 3"));
        check("1 % (2 - 2)", Err("division by zero"));
        check("", Err("empty"));
        check("1 +", Err("ends too early"));
        check("(1 + 2", Err("missing `)`"));
        check("1 + x", Err("position 5"));
        check("1 2", Err("unexpected `2`"));
        check("1e", Err("malformed exponent"));
        check("10 ^ 400", Err("not a finite number"));
        check(&"(".repeat(1_000), Err("nested too deeply"));
        check(&"-".repeat(1_000), Err("nested too deeply"));
        check(&"1+".repeat(5_000), Err("longer than"));
    }
}
