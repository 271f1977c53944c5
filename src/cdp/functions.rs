//! The functions a JavaScript script defines, found in its text (for `calls`): each one's name,
//! its parameters' names, where its parameter list opens (V8's `functionLocation` for its
//! frames) and where its body starts (from there `Debugger.getPossibleBreakpoints` with
//! `restrictToFunction` gives its first statement and its returns). Not a parser: a tokenizer
//! that knows strings, templates, comments and regular expressions, and the shapes functions
//! take: `function f(…) {`, `async function* g(…) {`, a method `m(…) {` (also `async`,
//! `static`, `get`, `set`, `*`), and arrows `(…) => …` and `x => …` named by what they are
//! assigned to (`const f = (…) => {`, `f: function (…) {`). The same tokens give the `try`
//! blocks that catch (`cdp::unhandled`).

/// A position in the script: line and UTF-16 column, 0-based, as CDP counts them.
pub(crate) type Position = (u32, u32);

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Function {
    pub(crate) name: String,
    /// Parameter names; a destructured one is left out (its place is `None`).
    pub(crate) params: Vec<Option<String>>,
    /// Where the parameter list opens (`(`, or an arrow's one parameter).
    pub(crate) open: Position,
    /// The first position inside the body (after `{`, or an arrow's expression).
    pub(crate) body: Position,
    /// `async`: its calls return a promise at their first `await`.
    pub(crate) is_async: bool,
    /// `function*`: its calls run from its first `next()` and leave at each `yield`.
    pub(crate) is_generator: bool,
    /// Where it ends: its body's closing brace, or (an arrow's expression) the bracket that
    /// closes around it, or else its line's end.
    pub(crate) extent: Position,
    /// A body in braces: where its own code starts (after its directives, `'use strict'`)
    /// and ends, where its closing brace is, and its own `return`s (not those of functions
    /// inside it).
    pub(crate) block: Option<Block>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Block {
    pub(crate) code: Position,
    /// Where its code's last token ends (its opening brace's, for an empty body).
    pub(crate) last: Position,
    pub(crate) close: Position,
    pub(crate) returns: Vec<Return>,
}

/// A `return` of a function's own: where its keyword ends, and whether it returns nothing
/// (`return;`, `return }`, or a line end: then ASI ends it there).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Return {
    pub(crate) after: Position,
    pub(crate) bare: Bare,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Bare {
    /// `return X`.
    No,
    /// `return;` or `return }`.
    Ended,
    /// `return` at the end of a line (or of the script).
    AtLineEnd,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Word,
    Punct,
    /// A string, template or regular expression: a value.
    Literal,
}

#[derive(Debug)]
struct Token<'a> {
    kind: Kind,
    text: &'a str,
    at: Position,
}

const NOT_METHODS: &[&str] = &[
    "if",
    "for",
    "while",
    "switch",
    "catch",
    "with",
    "function",
    "return",
    "typeof",
    "new",
    "delete",
    "void",
    "await",
    "yield",
    "instanceof",
    "do",
    "else",
    "super",
    "import",
];

/// Every function `source` defines, in the order they appear.
pub(crate) fn functions(source: &str) -> Vec<Function> {
    let tokens = tokenize(source);
    let partner = partners(&tokens);
    let text = |i: usize| tokens.get(i).map_or("", |t| t.text);
    let is =
        |i: usize, s: &str| tokens.get(i).is_some_and(|t| t.text == s && t.kind != Kind::Literal);
    let word = |i: usize| tokens.get(i).is_some_and(|t| t.kind == Kind::Word);
    // The name an anonymous function is given by what it is assigned to: `x = `, `x: `.
    let assigned = |mut i: usize| -> Option<String> {
        if i > 0 && is(i - 1, "async") {
            i -= 1;
        }
        (i >= 2 && (is(i - 1, "=") || is(i - 1, ":")) && word(i - 2))
            .then(|| text(i - 2).to_string())
    };
    let body_after = |close: usize| -> Option<(Position, usize)> {
        let next = tokens.get(close + 1)?;
        match next.text {
            "{" if next.kind == Kind::Punct => Some(((next.at.0, next.at.1 + 1), close + 1)),
            "=>" => {
                let after = tokens.get(close + 2)?;
                match after.text == "{" && after.kind == Kind::Punct {
                    true => Some(((after.at.0, after.at.1 + 1), close + 2)),
                    false => Some((after.at, close + 2)),
                }
            }
            _ => None,
        }
    };
    // Class bodies, `(open brace, close brace, name)`: their methods are named `Class.method`.
    let classes: Vec<(usize, usize, &str)> = (0..tokens.len())
        .filter(|&i| is(i, "class") && word(i + 1))
        .filter_map(|i| {
            let brace = (i + 2..tokens.len().min(i + 64)).find(|&j| is(j, "{"))?;
            Some((brace, partner[brace], text(i + 1)))
        })
        .collect();
    let class_of = |i: usize| {
        classes
            .iter()
            .filter(|(open, close, _)| *open < i && i < *close)
            .max_by_key(|(open, ..)| *open)
            .map(|c| c.2)
    };
    let mut found = Vec::new();
    // Where each found function's body starts: its `{`, or an arrow's expression.
    let mut braces = Vec::new();
    // The parameter lists `function` already took.
    let mut taken = Vec::new();
    for i in 0..tokens.len() {
        let token = &tokens[i];
        if token.kind == Kind::Literal {
            continue;
        }
        // `function name(`, `function* name(`, `function (`.
        if token.text == "function" && token.kind == Kind::Word {
            let mut j = i + 1;
            if is(j, "*") {
                j += 1;
            }
            let name = match word(j) {
                true => {
                    j += 1;
                    Some(text(j - 1).to_string())
                }
                false => None,
            };
            if !is(j, "(") || partner[j] == usize::MAX {
                continue;
            }
            let name = name.or_else(|| assigned(i)).unwrap_or_else(|| "(anonymous)".into());
            taken.push(j);
            if let Some((body, brace)) = body_after(partner[j]).filter(|(_, b)| is(*b, "{")) {
                let is_async = i > 0 && is(i - 1, "async");
                found.push(Function {
                    name,
                    params: params(&tokens, j, partner[j]),
                    open: tokens[j].at,
                    body,
                    is_async,
                    is_generator: is(i + 1, "*"),
                    extent: (0, 0),
                    block: None,
                });
                braces.push(brace);
            }
            continue;
        }
        if token.text == "(" && partner[i] != usize::MAX && !taken.contains(&i) {
            let close = partner[i];
            let Some((body, brace)) = body_after(close) else { continue };
            let (name, is_async, is_generator) = if is(close + 1, "=>") {
                let name = assigned(i).unwrap_or_else(|| "(anonymous)".into());
                (name, i > 0 && is(i - 1, "async"), false)
            } else {
                // A method: `name(…) {` (or a computed name, `[Symbol.iterator](…) {`) where a
                // member can start.
                let key = match i > 0 && is(i - 1, "]") && partner[i - 1] != usize::MAX {
                    true => partner[i - 1],
                    false => i.wrapping_sub(1),
                };
                let computed = key + 1 != i;
                let named = i > 0 && word(i - 1) && !NOT_METHODS.contains(&text(i - 1));
                if !(named || computed) || !is(brace, "{") {
                    continue;
                }
                let before = key.checked_sub(1).map_or("{", text);
                let member_start = key < 1
                    || matches!(
                        before,
                        "{" | "}" | ";" | "," | "*" | "async" | "static" | "get" | "set"
                    );
                if !member_start || is(key.wrapping_sub(1), ".") {
                    continue;
                }
                let own = match computed {
                    true => tokens[key..i].iter().map(|t| t.text).collect::<String>(),
                    false => text(i - 1).to_string(),
                };
                let name = match class_of(i) {
                    Some(class) => format!("{class}.{own}"),
                    None => own,
                };
                let is_async = is(key.wrapping_sub(1), "async")
                    || is(key.wrapping_sub(1), "*") && is(key.wrapping_sub(2), "async");
                (name, is_async, is(key.wrapping_sub(1), "*"))
            };
            found.push(Function {
                name,
                params: params(&tokens, i, close),
                open: token.at,
                body,
                is_async,
                is_generator,
                extent: (0, 0),
                block: None,
            });
            braces.push(brace);
            continue;
        }
        // `x => …`: one parameter, no parentheses.
        if token.kind == Kind::Word && is(i + 1, "=>") && !NOT_METHODS.contains(&token.text) {
            if i > 0 && is(i - 1, ".") {
                continue;
            }
            let Some(after) = tokens.get(i + 2) else { continue };
            let body = match after.text == "{" && after.kind == Kind::Punct {
                true => (after.at.0, after.at.1 + 1),
                false => after.at,
            };
            let name = assigned(i).unwrap_or_else(|| "(anonymous)".into());
            let is_async = i > 0 && is(i - 1, "async");
            found.push(Function {
                name,
                params: vec![Some(token.text.to_string())],
                open: token.at,
                body,
                is_async,
                is_generator: false,
                extent: (0, 0),
                block: None,
            });
            braces.push(i + 2);
        }
    }
    blocks(&tokens, &partner, &mut found, &braces);
    found
}

/// Each function with a body in braces (`braces[n]`: the token its body starts at): where its
/// own code starts, its closing brace, and its own `return`s (each belongs to the innermost
/// body around it).
fn blocks(tokens: &[Token], partner: &[usize], found: &mut [Function], braces: &[usize]) {
    let is =
        |i: usize, s: &str| tokens.get(i).is_some_and(|t| t.text == s && t.kind == Kind::Punct);
    let end = |t: &Token| (t.at.0, t.at.1 + t.text.encode_utf16().count() as u32);
    let bodies: Vec<(usize, usize, usize)> = (braces.iter().enumerate())
        .filter(|&(_, &b)| is(b, "{") && partner[b] != usize::MAX)
        .map(|(n, &b)| (n, b, partner[b]))
        .collect();
    let body_of: std::collections::HashMap<usize, usize> =
        bodies.iter().map(|&(n, b, _)| (b, n)).collect();
    let around = enclosing(tokens, partner);
    for (n, &start) in braces.iter().enumerate() {
        let around = around[start];
        found[n].extent = match around {
            _ if is(start, "{") && partner[start] != usize::MAX => tokens[partner[start]].at,
            Some(o) => tokens[partner[o]].at,
            None => (tokens[start].at.0, u32::MAX),
        };
        // esbuild's `keepNames` (tsx, vite, vitest): `__name(l => …, "lineTotal")`.
        if let Some(o) = around.filter(|&o| o > 0 && found[n].name == "(anonymous)") {
            let close = partner[o];
            let named = tokens[o - 1].text == "__name"
                && tokens[close - 1].kind == Kind::Literal
                && tokens[close - 1].text.starts_with(['"', '\''])
                && is(close - 2, ",");
            if named {
                let literal = tokens[close - 1].text;
                found[n].name = literal[1..literal.len().saturating_sub(1).max(1)].to_string();
            }
        }
    }
    for &(n, brace, close) in &bodies {
        // Directives: a string alone as a statement.
        let mut code = brace;
        while tokens[code + 1].kind == Kind::Literal
            && tokens[code + 1].text.starts_with(['"', '\''])
            && (is(code + 2, ";")
                || is(code + 2, "}")
                || tokens[code + 2].at.0 > tokens[code + 1].at.0)
        {
            code += if is(code + 2, ";") { 2 } else { 1 };
        }
        let block = Block {
            code: end(&tokens[code]),
            last: end(&tokens[close - 1]),
            close: tokens[close].at,
            returns: Vec::new(),
        };
        found[n].block = Some(block);
    }
    for (k, token) in tokens.iter().enumerate() {
        if token.kind != Kind::Word || token.text != "return" || k == 0 {
            continue;
        }
        // A property (`x.return`, `{ return: 1 }`) or a method named so (`return() {`).
        let method = is(k + 1, "(") && is(partner[k + 1].wrapping_add(1), "{");
        if is(k - 1, ".") || is(k + 1, ":") || method {
            continue;
        }
        // The innermost body around it.
        let mut o = around[k];
        let n = loop {
            match o {
                None => break None,
                Some(o) if body_of.contains_key(&o) => break body_of.get(&o),
                Some(inner) => o = around[inner],
            }
        };
        let Some(&n) = n else { continue };
        let bare = match tokens.get(k + 1) {
            Some(next) if is(k + 1, ";") || is(k + 1, "}") => {
                if next.at.0 == token.at.0 {
                    Bare::Ended
                } else {
                    Bare::AtLineEnd
                }
            }
            Some(next) if next.at.0 == token.at.0 => Bare::No,
            _ => Bare::AtLineEnd,
        };
        if let Some(block) = found[n].block.as_mut() {
            block.returns.push(Return { after: end(token), bare });
        }
    }
}

/// Where a script's first statement that runs is (past directives, imports and the function
/// declarations that are hoisted): a breakpoint there pauses before any of its code has run.
/// None when it has none (a script of declarations only).
pub(crate) fn first_statement(source: &str) -> Option<Position> {
    let tokens = tokenize(source);
    let partner = partners(&tokens);
    let is =
        |i: usize, s: &str| tokens.get(i).is_some_and(|t| t.text == s && t.kind != Kind::Literal);
    let string = |i: usize| {
        tokens.get(i).is_some_and(|t| t.kind == Kind::Literal && t.text.starts_with(['"', '\'']))
    };
    let after_group = |i: usize| match is(i, "(") || is(i, "{") {
        true => partner.get(i).copied().filter(|&p| p != usize::MAX).map(|p| p + 1),
        false => Some(i),
    };
    let mut i = 0;
    while i < tokens.len() {
        // An empty statement, or a directive (a string alone).
        let directive = string(i)
            && (is(i + 1, ";") || tokens.get(i + 1).is_none_or(|t| t.at.0 > tokens[i].at.0));
        if is(i, ";") || directive {
            i += 1;
        } else if is(i, "import") && !is(i + 1, "(") && !is(i + 1, ".") {
            // To its module's name: `import x, { y } from "m"`, `import "m"`.
            i = (i + 1..tokens.len()).find(|&j| string(j))? + 1;
        } else if is(i, "export") && (is(i + 1, "{") || is(i + 1, "*")) {
            // `export { a as b }`, `export { a } from "m"`, `export * as m from "m"`.
            i = after_group(i + 1)?;
            if is(i, "*") || is(i, "from") {
                i = (i..tokens.len()).find(|&j| string(j))? + 1;
            }
        } else if is(i, "export") || is(i, "default") || (is(i, "async") && is(i + 1, "function")) {
            i += 1;
        } else if is(i, "class") {
            // V8 takes a class for its constructor: a breakpoint there would wait for it.
            let brace = (i + 1..tokens.len()).find(|&j| is(j, "{"))?;
            i = after_group(brace)?;
        } else if is(i, "function") {
            let mut j = i + 1;
            if is(j, "*") {
                j += 1;
            }
            if !is(j, "(") {
                j += 1;
            }
            i = after_group(after_group(j)?)?;
        } else {
            return Some(tokens[i].at);
        }
    }
    None
}

/// The `try { … }` blocks of `source` that have a `catch` (for `userUnhandled`: which frame
/// catches a throw), each from its `{` to its `}`.
pub(crate) fn try_blocks(source: &str) -> Vec<(Position, Position)> {
    let tokens = tokenize(source);
    let partner = partners(&tokens);
    let is = |i: usize, kind: Kind, text: &str| {
        tokens.get(i).is_some_and(|t| t.kind == kind && t.text == text)
    };
    (0..tokens.len())
        .filter(|&i| is(i, Kind::Word, "try") && is(i + 1, Kind::Punct, "{"))
        .filter_map(|i| {
            let close = *partner.get(i + 1).filter(|&&c| c != usize::MAX)?;
            is(close + 1, Kind::Word, "catch").then(|| (tokens[i + 1].at, tokens[close].at))
        })
        .collect()
}

/// For each token, the innermost bracket around it that closes (none at the top level).
fn enclosing(tokens: &[Token], partner: &[usize]) -> Vec<Option<usize>> {
    let mut open: Vec<usize> = Vec::new();
    let mut around = Vec::with_capacity(tokens.len());
    for (i, token) in tokens.iter().enumerate() {
        around.push(open.iter().rev().copied().find(|&o| partner[o] != usize::MAX));
        match (token.kind, token.text) {
            (Kind::Punct, "(" | "[" | "{") => open.push(i),
            (Kind::Punct, ")" | "]" | "}") => drop(open.pop()),
            _ => {}
        }
    }
    around
}

/// The index of each bracket's partner (`usize::MAX`: none).
fn partners(tokens: &[Token]) -> Vec<usize> {
    let mut partner = vec![usize::MAX; tokens.len()];
    let mut open = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        match (token.kind, token.text) {
            (Kind::Punct, "(" | "[" | "{") => open.push(i),
            (Kind::Punct, ")" | "]" | "}") => {
                if let Some(o) = open.pop() {
                    partner[o] = i;
                    partner[i] = o;
                }
            }
            _ => {}
        }
    }
    partner
}

/// The parameter names between the brackets at `open` and `close`.
fn params(tokens: &[Token], open: usize, close: usize) -> Vec<Option<String>> {
    let mut names = Vec::new();
    let mut depth = 0;
    let mut start = true;
    for token in &tokens[open + 1..close] {
        if token.kind == Kind::Punct {
            match token.text {
                "(" | "[" | "{" => {
                    if depth == 0 && start {
                        names.push(None);
                        start = false;
                    }
                    depth += 1;
                }
                ")" | "]" | "}" => depth -= 1,
                "," if depth == 0 => start = true,
                _ => {}
            }
            continue;
        }
        if depth == 0 && start && token.kind == Kind::Word {
            names.push(Some(token.text.to_string()));
            start = false;
        }
    }
    names
}

/// Words, punctuation (`=>` and `...` as one), and literals as single tokens; comments and
/// white space left out.
fn tokenize(source: &str) -> Vec<Token<'_>> {
    let bytes = source.as_bytes();
    let mut tokens: Vec<Token> = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 0u32, 0u32);
    // Open template literals' `${` depths: a `}` at that depth resumes the template.
    let mut templates: Vec<u32> = Vec::new();
    let mut braces: u32 = 0;
    // Advances over `source[i..to]`, counting lines and UTF-16 columns.
    let advance = |i: &mut usize, to: usize, line: &mut u32, col: &mut u32| {
        for c in source[*i..to].chars() {
            if c == '\n' {
                *line += 1;
                *col = 0;
            } else {
                *col += c.len_utf16() as u32;
            }
        }
        *i = to;
    };
    while i < bytes.len() {
        let c = bytes[i];
        let at = (line, col);
        let start = i;
        let end = match c {
            b' ' | b'\t' | b'\n' | b'\r' => i + 1,
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                source[i..].find('\n').map_or(bytes.len(), |n| i + n)
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                source[i + 2..].find("*/").map_or(bytes.len(), |n| i + n + 4)
            }
            b'\'' | b'"' => quoted(bytes, i, c),
            b'`' => template(bytes, i + 1, &mut templates, braces),
            b'}' if templates.last() == Some(&braces) => {
                templates.pop();
                template(bytes, i + 1, &mut templates, braces)
            }
            b'/' if regex_allowed(tokens.last()) => regex(bytes, i),
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 => {
                let mut j = i;
                while j < bytes.len()
                    && (bytes[j].is_ascii_alphanumeric()
                        || matches!(bytes[j], b'_' | b'$')
                        || bytes[j] >= 0x80)
                {
                    j += 1;
                }
                j
            }
            b'=' if bytes.get(i + 1) == Some(&b'>') => i + 2,
            b'.' if bytes.get(i + 1) == Some(&b'.') && bytes.get(i + 2) == Some(&b'.') => i + 3,
            _ => i + 1,
        };
        let end = end.max(i + 1).min(bytes.len());
        // Never split a character.
        let end = (end..=bytes.len()).find(|&e| source.is_char_boundary(e)).unwrap_or(bytes.len());
        let kind = match c {
            b' ' | b'\t' | b'\n' | b'\r' => None,
            b'/' if matches!(bytes.get(i + 1), Some(b'/' | b'*')) => None,
            b'\'' | b'"' | b'`' => Some(Kind::Literal),
            b'}' if end > i + 1 => Some(Kind::Literal),
            b'/' if end > i + 1 => Some(Kind::Literal),
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 => {
                Some(Kind::Word)
            }
            _ => Some(Kind::Punct),
        };
        match (kind, c) {
            (Some(Kind::Punct), b'{') => braces += 1,
            (Some(Kind::Punct), b'}') => braces = braces.saturating_sub(1),
            // A template's `${` opens a brace its `}` closes.
            (Some(Kind::Literal), b'`' | b'}') if source[start..end].ends_with("${") => {}
            _ => {}
        }
        if let Some(kind) = kind {
            tokens.push(Token { kind, text: &source[start..end], at });
        }
        advance(&mut i, end, &mut line, &mut col);
    }
    tokens
}

fn quoted(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut j = start + 1;
    while j < bytes.len() && bytes[j] != quote && bytes[j] != b'\n' {
        j += if bytes[j] == b'\\' { 2 } else { 1 };
    }
    j + 1
}

/// A template's text from `start` to its end or to a `${` (then its depth is pushed).
fn template(bytes: &[u8], start: usize, templates: &mut Vec<u32>, braces: u32) -> usize {
    let mut j = start;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'`' => return j + 1,
            b'$' if bytes.get(j + 1) == Some(&b'{') => {
                templates.push(braces);
                return j + 2;
            }
            _ => j += 1,
        }
    }
    j
}

/// Whether a `/` after this token starts a regular expression (not a division).
fn regex_allowed(last: Option<&Token>) -> bool {
    match last {
        None => true,
        Some(t) if t.kind == Kind::Literal => false,
        Some(t) if t.kind == Kind::Word => {
            matches!(
                t.text,
                "return"
                    | "typeof"
                    | "case"
                    | "do"
                    | "else"
                    | "in"
                    | "of"
                    | "new"
                    | "delete"
                    | "void"
                    | "throw"
                    | "yield"
                    | "await"
            )
        }
        Some(t) => !matches!(t.text, ")" | "]" | "}"),
    }
}

fn regex(bytes: &[u8], start: usize) -> usize {
    let mut j = start + 1;
    let mut class = false;
    while j < bytes.len() && bytes[j] != b'\n' {
        match bytes[j] {
            b'\\' => j += 1,
            b'[' => class = true,
            b']' => class = false,
            b'/' if !class => {
                j += 1;
                while j < bytes.len() && bytes[j].is_ascii_alphabetic() {
                    j += 1;
                }
                return j;
            }
            _ => {}
        }
        j += 1;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(source: &str) -> Vec<(String, Vec<Option<String>>)> {
        functions(source).into_iter().map(|f| (f.name, f.params)).collect()
    }

    #[test]
    fn which_are_async() {
        let source = "async function a() {}\nfunction b() {}\nconst c = async (x) => x;\nconst d = async y => y;\nclass K { async e() {} async *f() {} g() {} }";
        let found: Vec<(String, bool)> =
            functions(source).into_iter().map(|f| (f.name, f.is_async)).collect();
        let expected = [
            ("a", true),
            ("b", false),
            ("c", true),
            ("d", true),
            ("K.e", true),
            ("K.f", true),
            ("K.g", false),
        ];
        assert_eq!(found, expected.map(|(n, a)| (n.to_string(), a)));
    }

    fn some(names: &[&str]) -> Vec<Option<String>> {
        names.iter().map(|n| Some(n.to_string())).collect()
    }

    #[test]
    fn the_shapes_functions_take() {
        let source = r#"
function add(a, b = 2, ...rest) { return a + b; }
async function* gen({ x }, y) { yield x; }
const double = (n) => n * 2;
const half = async n => { return n / 2; };
class Cart {
  constructor(items) { this.items = items; }
  static of(list) { return new Cart(list); }
  get size() { return this.items.length; }
  async *each() { yield 1; }
}
const api = { total: function (a) { return a; }, other(b) { if (b) { return 1; } }, *[Symbol.iterator](n) {} };
for (const x of xs) { call(x); }
if (a) { b(); }
obj.method(a) ;
const s = `a ${ (() => 1)() } b`, r = /\(x\)/g, q = "function fake(y) {";
"#;
        assert_eq!(
            names(source),
            vec![
                ("add".into(), some(&["a", "b", "rest"])),
                ("gen".into(), vec![None, Some("y".into())]),
                ("double".into(), some(&["n"])),
                ("half".into(), some(&["n"])),
                ("Cart.constructor".into(), some(&["items"])),
                ("Cart.of".into(), some(&["list"])),
                ("Cart.size".into(), vec![]),
                ("Cart.each".into(), vec![]),
                ("total".into(), some(&["a"])),
                ("other".into(), some(&["b"])),
                ("[Symbol.iterator]".into(), some(&["n"])),
                ("(anonymous)".into(), vec![]),
            ]
        );
    }

    #[test]
    fn names_esbuild_keeps() {
        let source = r#"const lineTotal=__name(l=>l.qty*l.price,"lineTotal");const f=__name(function(a){return a},"f2");"#;
        assert_eq!(
            names(source),
            [("lineTotal".into(), some(&["l"])), ("f2".into(), some(&["a"]))]
        );
    }

    #[test]
    fn the_first_statement_that_runs() {
        let at = |source: &str| first_statement(source);
        let cjs = "'use strict';\nconst a = require('a');\nfunction f() {}";
        assert_eq!(at(cjs), Some((1, 0)));
        let declarations =
            "function f() { g(); }\nasync function* h() {}\nclass K { m() {} }\nmain();";
        assert_eq!(at(declarations), Some((3, 0)));
        let esm = "import x, { y } from \"m\";\nimport \"n\";\nexport { y as z };\nexport * as w from \"w\";\nexport function f() {}\nexport const v = 1;";
        assert_eq!(at(esm), Some((5, 7)));
        assert_eq!(at("export default function () {}\nexport function g() {}"), None);
    }

    #[test]
    fn bodies_their_code_and_returns() {
        let source =
            "function f(a) {\n  'use strict';\n  if (a) return;\n  return () => { return 1; };\n}";
        let found = functions(source);
        let block = found[0].block.as_ref().unwrap();
        assert_eq!((block.code, block.last, block.close), ((1, 15), (3, 29), (4, 0)));
        let returns: Vec<(Position, Bare)> =
            block.returns.iter().map(|r| (r.after, r.bare)).collect();
        assert_eq!(returns, [((2, 15), Bare::Ended), ((3, 8), Bare::No)]);
        assert_eq!(found[1].block.as_ref().unwrap().returns.len(), 1);
    }

    #[test]
    fn where_the_list_opens_and_the_body_starts() {
        let f = &functions("x;\nfunction add(a, b) { return a + b; }")[0];
        assert_eq!((f.open, f.body), ((1, 12), (1, 20)));
        // Columns count UTF-16 units, as V8's do.
        let f = &functions("const é𝒳 = 1; const f = (a) => a;")[0];
        assert_eq!((f.name.as_str(), f.open, f.body), ("f", (0, 25), (0, 32)));
    }
}
