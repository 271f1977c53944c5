//! Java expressions read: tokens (literals with Java's suffixes, operators), then a
//! precedence-climbing parser into [`Expr`]: names, `this`, fields, indexes, calls, unary and
//! binary operators, `instanceof`, casts (a parenthesised type before an operand) and `?:`.
//! What they mean in a stopped frame is `eval.rs`'s.

use super::wire::{tag, Id, Value};

/// A value while evaluating: the VM's, a string made here (a literal, a concatenation), or a
/// class named for its statics.
#[derive(Debug, Clone)]
pub(super) enum V {
    Vm(Value),
    Str(String),
    Class(Id),
}

#[derive(Debug, Clone)]
pub(super) enum Expr {
    Literal(V),
    Name(String),
    This,
    Field(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    Call(Option<Box<Expr>>, String, Vec<Expr>),
    Unary(&'static str, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Conditional(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(String, Box<Expr>),
    InstanceOf(Box<Expr>, String),
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Int(i64, bool),
    Float(f64, bool),
    Str(String),
    Char(u16),
    /// `@N`, an object by its id; `@@N`, a class: what a watchpoint reads anywhere.
    Held(Id, bool),
    Op(&'static str),
}

const OPERATORS: &[&str] = &[
    ">>>", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "!",
    "~", "&", "|", "^", "?", ":", "(", ")", "[", "]", ".", ",",
];

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            tokens.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            let hex = c == '0' && matches!(chars.get(i + 1), Some('x' | 'X'));
            if hex {
                i += 2;
            }
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '.'
                    || chars[i] == '_'
                    || ((chars[i] == '-' || chars[i] == '+')
                        && !hex
                        && matches!(chars[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().filter(|c| **c != '_').collect();
            tokens.push(number(&word).ok_or_else(|| format!("not a number: {word}"))?);
        } else if c == '@' {
            let class = chars.get(i + 1) == Some(&'@');
            let start = i + 1 + class as usize;
            i = start;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let digits: String = chars[start..i].iter().collect();
            let id = digits.parse().map_err(|_| "unexpected `@`".to_string())?;
            tokens.push(Token::Held(id, class));
        } else if c == '"' || c == '\'' {
            let mut text = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err("an unclosed quote".into()),
                    Some(&q) if q == c => break,
                    Some('\\') => {
                        i += 1;
                        text.push(match chars.get(i) {
                            Some('n') => '\n',
                            Some('t') => '\t',
                            Some('r') => '\r',
                            Some('0') => '\0',
                            Some(&other) => other,
                            None => return Err("an unclosed quote".into()),
                        });
                    }
                    Some(&other) => text.push(other),
                }
                i += 1;
            }
            i += 1;
            match c {
                '"' => tokens.push(Token::Str(text)),
                _ => {
                    let units: Vec<u16> = text.encode_utf16().collect();
                    match units.as_slice() {
                        [unit] => tokens.push(Token::Char(*unit)),
                        _ => return Err(format!("not a character: '{text}'")),
                    }
                }
            }
        } else {
            let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
            let Some(op) = OPERATORS.iter().find(|op| rest.starts_with(**op)) else {
                return Err(format!("unexpected `{c}`"));
            };
            tokens.push(Token::Op(op));
            i += op.len();
        }
    }
    Ok(tokens)
}

fn number(word: &str) -> Option<Token> {
    let lower = word.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        let (digits, long) = match hex.strip_suffix('l') {
            Some(d) => (d, true),
            None => (hex, false),
        };
        return u64::from_str_radix(digits, 16).ok().map(|n| Token::Int(n as i64, long));
    }
    if let Some(digits) = lower.strip_suffix('l') {
        return digits.parse().ok().map(|n| Token::Int(n, true));
    }
    if let Some(digits) = lower.strip_suffix('f') {
        return digits.parse().ok().map(|n| Token::Float(n, true));
    }
    let digits = lower.strip_suffix('d').unwrap_or(&lower);
    if digits.contains(['.', 'e']) || lower.ends_with('d') {
        return digits.parse().ok().map(|n| Token::Float(n, false));
    }
    digits.parse().ok().map(|n| Token::Int(n, false))
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

pub(super) const PRIMITIVES: &[&str] =
    &["int", "long", "double", "float", "short", "byte", "char", "boolean"];

/// Binary operators by precedence, loosest first.
const LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">=", "instanceof"],
    &["<<", ">>", ">>>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Token::Op(o)) if *o == op)
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        match self.is_op(op) {
            true => {
                self.at += 1;
                Ok(())
            }
            false => Err(format!("`{op}` expected")),
        }
    }

    fn ident(&mut self) -> Result<String, String> {
        match self.peek().cloned() {
            Some(Token::Ident(name)) => {
                self.at += 1;
                Ok(name)
            }
            _ => Err("a name expected".into()),
        }
    }

    fn expression(&mut self) -> Result<Expr, String> {
        let condition = self.binary(0)?;
        if !self.is_op("?") {
            return Ok(condition);
        }
        self.at += 1;
        let then = self.expression()?;
        self.expect(":")?;
        let otherwise = self.expression()?;
        Ok(Expr::Conditional(Box::new(condition), Box::new(then), Box::new(otherwise)))
    }

    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Some(Token::Op(op)) if LEVELS[level].contains(op) => *op,
                Some(Token::Ident(word))
                    if word == "instanceof" && LEVELS[level].contains(&"instanceof") =>
                {
                    "instanceof"
                }
                _ => return Ok(left),
            };
            self.at += 1;
            if op == "instanceof" {
                left = Expr::InstanceOf(Box::new(left), self.type_name()?);
                continue;
            }
            let right = self.binary(level + 1)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
    }

    fn type_name(&mut self) -> Result<String, String> {
        let mut name = self.ident()?;
        while self.is_op(".") {
            self.at += 1;
            name.push('.');
            name.push_str(&self.ident()?);
        }
        while self.is_op("[") && self.tokens.get(self.at + 1) == Some(&Token::Op("]")) {
            self.at += 2;
            name.push_str("[]");
        }
        Ok(name)
    }

    /// `(Type) expr`: a parenthesised type name followed by what can start an operand.
    fn cast(&mut self) -> Option<String> {
        let start = self.at;
        self.at += 1;
        let name = self.type_name().ok();
        let closes = self.is_op(")");
        let operand = matches!(
            self.tokens.get(self.at + 1),
            Some(
                Token::Ident(_)
                    | Token::Int(..)
                    | Token::Float(..)
                    | Token::Str(_)
                    | Token::Char(_)
            ) | Some(Token::Op("(" | "!" | "~"))
        );
        let is_type = name.as_deref().is_some_and(|n| {
            PRIMITIVES.contains(&n.trim_end_matches("[]"))
                || n.rsplit('.').next().is_some_and(|s| s.starts_with(char::is_uppercase))
        });
        let primitive = name.as_deref().is_some_and(|n| PRIMITIVES.contains(&n));
        let signed = matches!(self.tokens.get(self.at + 1), Some(Token::Op("-" | "+")));
        if closes && is_type && (operand || (primitive && signed)) {
            self.at += 1;
            return name;
        }
        self.at = start;
        None
    }

    fn unary(&mut self) -> Result<Expr, String> {
        for op in ["-", "+", "!", "~"] {
            if self.is_op(op) {
                self.at += 1;
                return Ok(Expr::Unary(op, Box::new(self.unary()?)));
            }
        }
        if self.is_op("(") {
            if let Some(to) = self.cast() {
                return Ok(Expr::Cast(to, Box::new(self.unary()?)));
            }
        }
        self.postfix()
    }

    fn arguments(&mut self) -> Result<Vec<Expr>, String> {
        self.expect("(")?;
        let mut arguments = Vec::new();
        while !self.is_op(")") {
            arguments.push(self.expression()?);
            if !self.is_op(")") {
                self.expect(",")?;
            }
        }
        self.at += 1;
        Ok(arguments)
    }

    fn postfix(&mut self) -> Result<Expr, String> {
        let mut expr = self.primary()?;
        loop {
            if self.is_op(".") {
                self.at += 1;
                let name = self.ident()?;
                expr = match self.is_op("(") {
                    true => Expr::Call(Some(Box::new(expr)), name, self.arguments()?),
                    false => Expr::Field(Box::new(expr), name),
                };
            } else if self.is_op("[") {
                self.at += 1;
                let index = self.expression()?;
                self.expect("]")?;
                expr = Expr::Index(Box::new(expr), Box::new(index));
            } else {
                return Ok(expr);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        let token = self.peek().cloned().ok_or("an operand expected")?;
        self.at += 1;
        Ok(match token {
            Token::Int(n, true) => Expr::Literal(V::Vm(Value::Long(n))),
            Token::Int(n, false) => match i32::try_from(n) {
                Ok(n) => Expr::Literal(V::Vm(Value::Int(n))),
                // 0xFFFFFFFF is an int in Java.
                Err(_) if n <= u32::MAX as i64 => Expr::Literal(V::Vm(Value::Int(n as u32 as i32))),
                Err(_) => return Err(format!("integer number too large: {n}")),
            },
            Token::Float(f, true) => Expr::Literal(V::Vm(Value::Float(f as f32))),
            Token::Float(f, false) => Expr::Literal(V::Vm(Value::Double(f))),
            Token::Str(text) => Expr::Literal(V::Str(text)),
            Token::Char(c) => Expr::Literal(V::Vm(Value::Char(c))),
            Token::Held(id, true) => Expr::Literal(V::Class(id)),
            Token::Held(id, false) => Expr::Literal(V::Vm(Value::Object(tag::OBJECT, id))),
            Token::Op("(") => {
                let inner = self.expression()?;
                self.expect(")")?;
                inner
            }
            Token::Ident(word) => match word.as_str() {
                "true" => Expr::Literal(V::Vm(Value::Boolean(true))),
                "false" => Expr::Literal(V::Vm(Value::Boolean(false))),
                "null" => Expr::Literal(V::Vm(Value::Object(tag::OBJECT, 0))),
                "this" => Expr::This,
                "new" => {
                    return Err("`new` is not evaluated here: call a method that makes it".into())
                }
                _ if self.is_op("(") => Expr::Call(None, word, self.arguments()?),
                _ => Expr::Name(word),
            },
            Token::Op(op) => return Err(format!("unexpected `{op}`")),
        })
    }
}

pub(super) fn parse(text: &str) -> Result<Expr, String> {
    let mut parser = Parser { tokens: tokenize(text)?, at: 0 };
    let expr = parser.expression()?;
    match parser.peek() {
        None => Ok(expr),
        Some(token) => Err(format!("unexpected {token:?} after the expression")),
    }
}

/// Checks an expression's syntax before the program runs: `Err` says what is wrong.
pub(crate) fn check(text: &str) -> Result<(), String> {
    parse(text).map(drop)
}

/// An evaluation's failure: a compile-time error, or an exception the evaluation threw.
/// A name written with dots (`java.util.List`), when the expression is only that.
pub(super) fn dotted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(name) => Some(name.clone()),
        Expr::Field(base, name) => Some(format!("{}.{name}", dotted(base)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_parse_as_java_reads_them() {
        let parsed = |text: &str| format!("{:?}", parse(text).unwrap());
        assert!(parsed("a + b * c").starts_with("Binary(\"+\", Name(\"a\"), Binary(\"*\""));
        assert!(parsed("(int) x / 2").starts_with("Binary(\"/\", Cast(\"int\""));
        assert!(parsed("(a) - b").starts_with("Binary(\"-\", Name(\"a\")"));
        assert!(parsed("o instanceof java.util.List && o != null")
            .starts_with("Binary(\"&&\", InstanceOf"));
        assert!(
            parsed("items.get(0).price[i].length").contains("Call(Some(Name(\"items\")), \"get\"")
        );
        assert!(parsed("x > 0 ? \"pos\" : 'n'").starts_with("Conditional"));
        assert!(parse("a +").is_err());
        assert!(parse("a b").is_err());
        assert!(parse("\"open").is_err());
        assert_eq!(
            tokenize("0x1F 10L 2.5f 1e3 1_000").unwrap(),
            [
                Token::Int(31, false),
                Token::Int(10, true),
                Token::Float(2.5, true),
                Token::Float(1000.0, false),
                Token::Int(1000, false)
            ]
        );
    }
}
