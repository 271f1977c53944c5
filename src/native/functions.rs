//! The functions a compiled program's source file defines, found in its text (for `calls`):
//! each one's name, the type it belongs to, the line its name is on (a breakpoint there stops
//! after the function's prologue, its arguments in place) and its parameters' names (a
//! debugger lists a function's locals with its arguments). Not a parser: a tokenizer that
//! knows comments, strings and preprocessor lines, and the shapes definitions take in C and
//! C++ (`T name(…) {`, `T Class::name(…) const {`, a method in a class body), Rust and Zig
//! (`fn name(…) … {`, in an `impl` or `trait` block) and Go (`func name(…) … {`,
//! `func (r *T) name(…) … {`). Declarations without a body are left out.

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Defined {
    pub(crate) name: String,
    /// The type it is a method of (`impl Cart`, `func (c *Cart)`, `class Cart`, `Cart::`).
    pub(crate) owner: Option<String>,
    /// 1-based.
    pub(crate) line: u32,
    pub(crate) params: Vec<String>,
    /// Where its body's `{` is: line and column, 1-based (a debugger that stops there has
    /// not run the function's prologue yet).
    pub(crate) brace: (u32, u32),
}

impl Defined {
    /// Whether `asked` names it: `total`, or with its type: `Cart.total`, `Cart::total`,
    /// `(*Cart).Total`, `main.(*Cart).Total`, `shop::Cart::total`.
    pub(crate) fn is(&self, asked: &str) -> bool {
        let (owner, name) = split_name(asked);
        name == self.name && owner.is_none_or(|o| self.owner.as_deref() == Some(o))
    }
}

/// `(owner, name)` of a function's name as a person or a debugger writes it.
pub(crate) fn split_name(name: &str) -> (Option<&str>, &str) {
    fn cut(s: &str) -> Option<(&str, &str)> {
        match (s.rfind("::"), s.rfind('.')) {
            (Some(c), Some(d)) if d > c => Some((&s[..d], &s[d + 1..])),
            (Some(c), _) => Some((&s[..c], &s[c + 2..])),
            (None, Some(d)) => Some((&s[..d], &s[d + 1..])),
            (None, None) => None,
        }
    }
    match cut(name) {
        Some((head, base)) => {
            let owner = cut(head).map_or(head, |(_, last)| last);
            let owner = owner.trim_matches(|c| matches!(c, '(' | ')' | '*' | '&'));
            ((!owner.is_empty()).then_some(owner), base)
        }
        None => (None, name),
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Lang {
    C,
    Rust,
    Zig,
    Go,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Word,
    Punct,
    Literal,
}

#[derive(Debug)]
struct Token<'a> {
    kind: Kind,
    text: &'a str,
    line: u32,
    /// 1-based, in bytes.
    column: u32,
}

/// What a `{` opened: a type's body (its functions are its methods), a function's body, or
/// anything else (a namespace, an initializer).
#[derive(Debug, Clone, PartialEq)]
enum Block {
    Owner(String),
    Body,
    Other,
}

/// The functions `source` defines; `path` says the language (`.go`, `.rs`, `.zig`; anything
/// else is C or C++).
pub(crate) fn defined(source: &str, path: &std::path::Path) -> Vec<Defined> {
    let lang = match path.extension().and_then(|e| e.to_str()) {
        Some("go") => Lang::Go,
        Some("rs") => Lang::Rust,
        Some("zig") => Lang::Zig,
        _ => Lang::C,
    };
    let tokens = tokens(source, lang);
    let mut found = Vec::new();
    let mut blocks: Vec<Block> = Vec::new();
    // What the next `{` opens, when a definition or a type said so.
    let mut opens: Option<Block> = None;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        match (t.kind, t.text) {
            (Kind::Punct, "{") => {
                blocks.push(opens.take().unwrap_or(Block::Other));
                i += 1;
                continue;
            }
            (Kind::Punct, "}") => {
                blocks.pop();
                i += 1;
                continue;
            }
            (Kind::Punct, ";") => opens = None,
            _ => {}
        }
        let owner = blocks.iter().rev().find_map(|b| match b {
            Block::Owner(o) => Some(o.clone()),
            _ => None,
        });
        let in_body = blocks.contains(&Block::Body);
        let next = match lang {
            Lang::Rust | Lang::Zig => rust_item(&tokens, i, lang, owner, &mut found, &mut opens),
            Lang::Go => go_func(&tokens, i, &mut found, &mut opens),
            Lang::C if !in_body => c_item(&tokens, i, owner, &mut found, &mut opens),
            Lang::C => None,
        };
        i = next.unwrap_or(i + 1);
    }
    found
}

/// At `fn NAME(…) … {` (Rust, Zig), or a Rust `impl …`/`trait NAME` block: where to go on.
fn rust_item(
    tokens: &[Token],
    i: usize,
    lang: Lang,
    owner: Option<String>,
    found: &mut Vec<Defined>,
    opens: &mut Option<Block>,
) -> Option<usize> {
    let word = |k: usize| tokens.get(k).filter(|t| t.kind == Kind::Word).map(|t| t.text);
    match tokens[i].text {
        "impl" if lang == Lang::Rust => {
            // `impl<T> Trait for Type<T> where … {`: the type is the last path before `{`
            // (after `for` when there is one), at the top level of `<…>`.
            let end = find_at_depth(tokens, i + 1, &["{", ";"])?;
            let mut depth = 0i32;
            let mut owner = None;
            for t in &tokens[i + 1..end] {
                match t.text {
                    "<" => depth += 1,
                    ">" => depth -= 1,
                    "where" if depth == 0 => break,
                    "for" if depth == 0 => owner = None,
                    w if depth == 0 && t.kind == Kind::Word && w != "dyn" && w != "mut" => {
                        owner = Some(w.to_string())
                    }
                    _ => {}
                }
            }
            *opens = owner.map(Block::Owner);
            Some(end)
        }
        "trait" if lang == Lang::Rust => {
            *opens = word(i + 1).map(|name| Block::Owner(name.into()));
            Some(i + 2)
        }
        // Zig's `const Cart = struct {`.
        "struct" | "union" | "enum" if lang == Lang::Zig => {
            let named = i >= 2 && tokens[i - 1].text == "=" && tokens[i - 2].kind == Kind::Word;
            if named && tokens.get(i + 1).is_some_and(|t| t.text == "{") {
                *opens = Some(Block::Owner(tokens[i - 2].text.into()));
            }
            Some(i + 1)
        }
        "fn" => {
            let name = word(i + 1)?;
            let mut open = i + 2;
            if tokens.get(open).is_some_and(|t| t.text == "<") {
                open = skip_angles(tokens, open)?;
            }
            if tokens.get(open)?.text != "(" {
                return None;
            }
            let close = matching(tokens, open)?;
            let end = find_at_depth(tokens, close + 1, &["{", ";"])?;
            if tokens[end].text == "{" {
                let params = split_params(&tokens[open + 1..close])
                    .iter()
                    .filter_map(|p| typed_param_name(p))
                    .collect();
                let line = tokens[i + 1].line;
                let brace = (tokens[end].line, tokens[end].column);
                found.push(Defined { name: name.into(), owner, line, params, brace });
                *opens = Some(Block::Body);
            }
            Some(end)
        }
        _ => None,
    }
}

/// At Go's `func NAME(…) … {` or `func (r *T) NAME(…) … {`: where to go on.
fn go_func(
    tokens: &[Token],
    i: usize,
    found: &mut Vec<Defined>,
    opens: &mut Option<Block>,
) -> Option<usize> {
    if tokens[i].text != "func" || tokens[i].kind != Kind::Word {
        return None;
    }
    let mut at = i + 1;
    let mut params = Vec::new();
    let mut owner = None;
    if tokens.get(at)?.text == "(" {
        // A receiver, or a function literal's parameters (then no name follows).
        let close = matching(tokens, at)?;
        let named = tokens.get(close + 1).is_some_and(|t| t.kind == Kind::Word)
            && tokens.get(close + 2).is_some_and(|t| t.text == "(" || t.text == "[");
        if !named {
            return None;
        }
        let receiver = &tokens[at + 1..close];
        params.extend(go_names(&split_params(receiver)));
        let mut types = receiver.iter().filter(|t| t.kind == Kind::Word);
        owner = types.next_back().map(|t| t.text.to_string());
        if receiver.iter().any(|t| t.text == "[") {
            // `(l *List[T])`: the type is before `[`.
            let before = receiver.iter().position(|t| t.text == "[")?;
            owner = receiver[..before]
                .iter()
                .rev()
                .find(|t| t.kind == Kind::Word)
                .map(|t| t.text.into());
        }
        at = close + 1;
    }
    let name = tokens.get(at).filter(|t| t.kind == Kind::Word)?;
    let mut open = at + 1;
    if tokens.get(open)?.text == "[" {
        open = matching(tokens, open)? + 1;
    }
    if tokens.get(open)?.text != "(" {
        return None;
    }
    let close = matching(tokens, open)?;
    params.extend(go_names(&split_params(&tokens[open + 1..close])));
    // The body's `{` is on the line the results end on; a declaration (assembly) has none.
    let end = find_at_depth(tokens, close + 1, &["{", ";", "func"])?;
    let line_ends = tokens[end].line != tokens[end - 1].line;
    if tokens[end].text == "{" && !line_ends {
        let brace = (tokens[end].line, tokens[end].column);
        found.push(Defined { name: name.text.into(), owner, line: name.line, params, brace });
        *opens = Some(Block::Body);
        return Some(end);
    }
    Some(close + 1)
}

/// Go's parameter names: `a, b int, s string` names three; `int, string` none.
fn go_names(params: &[&[Token]]) -> Vec<String> {
    let named = params.iter().any(|p| p.len() >= 2 && p[0].kind == Kind::Word);
    if !named {
        return Vec::new();
    }
    let first = params.iter().filter_map(|p| p.first()).filter(|t| t.kind == Kind::Word);
    first.map(|t| t.text.to_string()).filter(|n| n != "_").collect()
}

const C_NOT_FUNCTIONS: &[&str] = &[
    "if",
    "for",
    "while",
    "switch",
    "return",
    "sizeof",
    "catch",
    "do",
    "else",
    "case",
    "alignof",
    "decltype",
    "typeof",
    "__attribute__",
    "defined",
    "static_assert",
    "_Static_assert",
    "new",
    "delete",
    "throw",
    "operator",
    "alignas",
    "__declspec",
    "asm",
    "__asm__",
];

const C_QUALIFIERS: &[&str] = &["const", "volatile", "noexcept", "override", "final", "throw"];

/// At C's or C++'s `T NAME(…) … {`, `T Owner::NAME(…) {`, or `class|struct NAME … {`: where to
/// go on.
fn c_item(
    tokens: &[Token],
    i: usize,
    owner: Option<String>,
    found: &mut Vec<Defined>,
    opens: &mut Option<Block>,
) -> Option<usize> {
    let t = &tokens[i];
    if t.kind != Kind::Word {
        return None;
    }
    if matches!(t.text, "class" | "struct" | "union") {
        let name = tokens.get(i + 1).filter(|n| n.kind == Kind::Word)?;
        let end = find_at_depth(tokens, i + 2, &["{", ";", "("])?;
        if tokens[end].text == "{" {
            *opens = Some(Block::Owner(name.text.into()));
            return Some(end);
        }
        return None;
    }
    if C_NOT_FUNCTIONS.contains(&t.text) || tokens.get(i + 1)?.text != "(" {
        return None;
    }
    // A call in an initializer (`int x = f(1);`) or a macro's use is not preceded by a type.
    let before = i.checked_sub(1).map(|b| &tokens[b]);
    let qualified = before.is_some_and(|b| b.text == "::");
    // A constructor in its class's body follows `public:` or a `;`.
    let constructor = owner.as_deref() == Some(t.text);
    let typed = constructor
        || before.is_some_and(|b| {
            (b.kind == Kind::Word && !matches!(b.text, "return" | "else" | "case"))
                || matches!(b.text, "*" | "&" | "&&" | ">" | "::")
        });
    if !typed {
        return None;
    }
    let open = i + 1;
    let close = matching(tokens, open)?;
    // After `)`: qualifiers, `-> T`, a constructor's `: member(…), …`, then `{`.
    let mut at = close + 1;
    loop {
        let next = tokens.get(at)?;
        match next.text {
            "{" => break,
            ":" | "->" => at = find_at_depth(tokens, at + 1, &["{", ";"])?,
            "&" | "&&" => at += 1,
            q if C_QUALIFIERS.contains(&q) => {
                at += 1;
                if tokens.get(at).is_some_and(|t| t.text == "(") {
                    at = matching(tokens, at)? + 1;
                }
            }
            _ => return Some(close + 1),
        }
    }
    let owner = match qualified {
        true => {
            tokens.get(i.checked_sub(2)?).filter(|o| o.kind == Kind::Word).map(|o| o.text.into())
        }
        false => owner,
    };
    let params =
        split_params(&tokens[open + 1..close]).iter().filter_map(|p| c_param_name(p)).collect();
    let brace = (tokens[at].line, tokens[at].column);
    found.push(Defined { name: t.text.into(), owner, line: t.line, params, brace });
    *opens = Some(Block::Body);
    Some(at)
}

/// A C parameter's name: `int n`, `const char *s`, `int a[]`, `int (*f)(int)`; `void` and an
/// unnamed `int` have none.
fn c_param_name(param: &[Token]) -> Option<String> {
    let param = match param.iter().position(|t| t.text == "=") {
        Some(default) => &param[..default],
        None => param,
    };
    if let Some(at) = param.iter().position(|t| t.text == "(") {
        // A function pointer: its name is inside the first parentheses.
        let inside = param[at + 1..].iter().take_while(|t| t.text != ")");
        return inside.filter(|t| t.kind == Kind::Word).last().map(|t| t.text.into());
    }
    let end = param.iter().position(|t| t.text == "[").unwrap_or(param.len());
    let words: Vec<&Token> = param[..end].iter().filter(|t| t.kind == Kind::Word).collect();
    let last = words.last()?;
    let types = [
        "void", "int", "char", "short", "long", "float", "double", "unsigned", "signed", "bool",
        "_Bool", "size_t", "const", "auto",
    ];
    (words.len() >= 2 && !types.contains(&last.text)).then(|| last.text.to_string())
}

/// A Rust or Zig parameter's name: `x: T`, `mut x: T`, `self`, `&mut self`, `comptime T: type`;
/// a pattern (`(a, b): (i32, i32)`) has none.
fn typed_param_name(param: &[Token]) -> Option<String> {
    if param.iter().any(|t| t.text == "self") && !param.iter().any(|t| t.text == ":") {
        return Some("self".into());
    }
    let colon = param.iter().position(|t| t.text == ":")?;
    let pattern: Vec<&Token> = param[..colon]
        .iter()
        .filter(|t| !matches!(t.text, "mut" | "ref" | "&" | "comptime" | "noalias"))
        .collect();
    match pattern.as_slice() {
        [one] if one.kind == Kind::Word && one.text != "_" => Some(one.text.into()),
        _ => None,
    }
}

/// `tokens` split at its top-level commas (not those in `()`, `[]`, `{}` or `<>`).
fn split_params<'t, 'a>(tokens: &'t [Token<'a>]) -> Vec<&'t [Token<'a>]> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (k, t) in tokens.iter().enumerate() {
        match t.text {
            "(" | "[" | "{" | "<" => depth += 1,
            ")" | "]" | "}" | ">" => depth -= 1,
            "," if depth == 0 => {
                parts.push(&tokens[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    if start < tokens.len() {
        parts.push(&tokens[start..]);
    }
    parts
}

/// The index of the bracket closing the one at `open`.
fn matching(tokens: &[Token], open: usize) -> Option<usize> {
    let (opening, closing) = match tokens[open].text {
        "(" => ("(", ")"),
        "[" => ("[", "]"),
        "{" => ("{", "}"),
        _ => return None,
    };
    let mut depth = 0;
    for (k, t) in tokens.iter().enumerate().skip(open) {
        if t.kind != Kind::Punct {
            continue;
        }
        if t.text == opening {
            depth += 1;
        } else if t.text == closing {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// Past Rust's `<…>` at `open` (`->` and `>>` as tokens of their own are counted right).
fn skip_angles(tokens: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (k, t) in tokens.iter().enumerate().skip(open) {
        match t.text {
            "<" => depth += 1,
            ">" => {
                depth -= 1;
                if depth == 0 {
                    return Some(k + 1);
                }
            }
            "{" | ";" => return None,
            _ => {}
        }
    }
    None
}

/// The first of `stops` from `from` on outside `()` and `[]`.
fn find_at_depth(tokens: &[Token], from: usize, stops: &[&str]) -> Option<usize> {
    let mut depth = 0i32;
    for (k, t) in tokens.iter().enumerate().skip(from) {
        if t.kind != Kind::Punct && !(t.kind == Kind::Word && stops.contains(&t.text)) {
            continue;
        }
        match t.text {
            s if depth == 0 && stops.contains(&s) => return Some(k),
            "(" | "[" => depth += 1,
            ")" | "]" => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Words, punctuation (`::` and `->` whole) and literals of `source`, with comments, string
/// and character contents and preprocessor lines left out.
fn tokens(source: &str, lang: Lang) -> Vec<Token<'_>> {
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    let mut line = 1u32;
    let mut i = 0;
    let mut line_start = true;
    let column = |at: usize| (at - source[..at].rfind('\n').map_or(0, |n| n + 1) + 1) as u32;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        match c {
            b'\n' => {
                line += 1;
                line_start = true;
                i += 1;
                continue;
            }
            c if c.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            b'#' if lang == Lang::C && line_start => {
                // A preprocessor line, with its continuations.
                while i < bytes.len() && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
                        line += 1;
                        i += 1;
                    }
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    line += u32::from(bytes[i] == b'\n');
                    i += 1;
                }
                i += 2;
                continue;
            }
            b'\\' if lang == Lang::Zig && bytes.get(i + 1) == Some(&b'\\') => {
                // A multiline string's line.
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                out.push(Token { kind: Kind::Literal, text: "\"\"", line, column: column(start) });
                continue;
            }
            b'r' if lang == Lang::Rust
                && matches!(bytes.get(i + 1), Some(b'"' | b'#'))
                && raw_string_end(bytes, i + 1).is_some() =>
            {
                let end = raw_string_end(bytes, i + 1).unwrap_or(bytes.len());
                line += bytes[i..end].iter().filter(|&&b| b == b'\n').count() as u32;
                i = end;
                out.push(Token { kind: Kind::Literal, text: "\"\"", line, column: column(start) });
            }
            b'"' | b'`' => {
                let quote = c;
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    if bytes[i] == b'\\' && quote == b'"' {
                        i += 1;
                    }
                    line += u32::from(bytes.get(i) == Some(&b'\n'));
                    i += 1;
                }
                i += 1;
                out.push(Token { kind: Kind::Literal, text: "\"\"", line, column: column(start) });
            }
            b'\'' => {
                // A character literal; in Rust `'a` may be a lifetime or a label.
                let close = bytes[i + 1..].iter().take(12).position(|&b| b == b'\'' || b == b'\n');
                let escaped = bytes.get(i + 1) == Some(&b'\\');
                match close {
                    Some(at) if bytes[i + 1 + at] == b'\'' && (escaped || at <= 4) => {
                        i += at + 2;
                        out.push(Token {
                            kind: Kind::Literal,
                            text: "''",
                            line,
                            column: column(start),
                        });
                    }
                    _ => i = past(bytes, i + 1, |b| b.is_ascii_alphanumeric() || b == b'_'),
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                i = past(bytes, i, |b| b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80);
                let text = &source[start..i];
                out.push(Token { kind: Kind::Word, text, line, column: column(start) });
            }
            c if c.is_ascii_digit() => {
                i = past(bytes, i, |b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_');
                let text = &source[start..i];
                out.push(Token { kind: Kind::Literal, text, line, column: column(start) });
            }
            _ => {
                let two = source.get(i..i + 2);
                let len = match two {
                    Some("::" | "->") => 2,
                    _ => 1,
                };
                i += len;
                // Not a character boundary only inside text we skip; punctuation is ASCII.
                if let Some(text) = source.get(start..i) {
                    out.push(Token { kind: Kind::Punct, text, line, column: column(start) });
                }
            }
        }
        line_start = false;
    }
    out
}

/// Where the run of bytes from `i` that `keep` holds for ends.
fn past(bytes: &[u8], i: usize, keep: impl Fn(u8) -> bool) -> usize {
    i + bytes[i..].iter().take_while(|&&b| keep(b)).count()
}

/// Where a Rust raw string (`r"…"`, `r#"…"#`) whose `#`s or quote start at `at` ends.
fn raw_string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let hashes = bytes[at..].iter().take_while(|&&b| b == b'#').count();
    if bytes.get(at + hashes) != Some(&b'"') {
        return None;
    }
    let body = at + hashes + 1;
    let closing: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
    let found = bytes[body..].windows(closing.len()).position(|w| w == closing.as_slice())?;
    Some(body + found + closing.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn shapes(source: &str, file: &str) -> Vec<(String, Option<String>, u32, Vec<String>)> {
        let found = defined(source, Path::new(file));
        found.into_iter().map(|d| (d.name, d.owner, d.line, d.params)).collect()
    }

    fn f(
        name: &str,
        owner: Option<&str>,
        line: u32,
        params: &[&str],
    ) -> (String, Option<String>, u32, Vec<String>) {
        (name.into(), owner.map(String::from), line, params.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn c_and_cpp() {
        let source = r#"#include <stdio.h>
#define MAX(a, b) ((a) > (b) ? (a) : (b))
static int helper(int x);
int square(int n) { return n * n; }
/* int commented(int a) { } */
const char *name_of(const char *s, int (*pick)(int), int items[])
{
    if (s) { return s; }
    char *t = strdup("fn x() {");
    return t;
}
class Cart : public Base {
  public:
    Cart(int n) : n_(n), m_(helper(n)) {}
    int total(int extra) const noexcept { return n_ + extra; }
    virtual void clear() = 0;
};
double Cart::price(double unit, int = 2) { return unit; }
int main(void) { return square(2); }
"#;
        assert_eq!(
            shapes(source, "x.cpp"),
            vec![
                f("square", None, 4, &["n"]),
                f("name_of", None, 6, &["s", "pick", "items"]),
                f("Cart", Some("Cart"), 14, &["n"]),
                f("total", Some("Cart"), 15, &["extra"]),
                f("price", Some("Cart"), 18, &["unit"]),
                f("main", None, 19, &[]),
            ]
        );
        let found = defined(source, Path::new("x.cpp"));
        // `int square(int n) { …`: its body opens at column 19 of line 4; `{` on a line of its
        // own, at column 1.
        assert_eq!((found[0].brace, found[1].brace), ((4, 19), (7, 1)));
    }

    #[test]
    fn rust_and_zig() {
        let source = r##"use std::fmt;
/// fn documented() {}
pub fn parse<'a, T: Into<String>>(text: &'a str, mut n: usize, (a, b): (u8, u8)) -> Result<Vec<u8>, String> {
    let s = r#"fn not_this() {"#;
    let c = '{';
    fn inner(x: i32) -> i32 { x }
    Ok(vec![])
}
impl<T> fmt::Display for Wrapper<T> where T: Clone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { Ok(()) }
}
impl Cart {
    pub fn total(&mut self, extra: u32) -> u32 { 0 }
}
trait Priced {
    fn price(&self) -> u32;
    fn doubled(&self) -> u32 { self.price() * 2 }
}
"##;
        assert_eq!(
            shapes(source, "lib.rs"),
            vec![
                f("parse", None, 3, &["text", "n"]),
                f("inner", None, 6, &["x"]),
                f("fmt", Some("Wrapper"), 10, &["self", "f"]),
                f("total", Some("Cart"), 13, &["self", "extra"]),
                f("doubled", Some("Priced"), 17, &["self"]),
            ]
        );
        let zig = "const std = @import(\"std\");\nconst Cart = struct {\n    items: u32,\n    pub fn total(self: Cart, comptime T: type) u32 {\n        return self.items;\n    }\n};\nfn square(n: i64) i64 {\n    return n * n;\n}\n";
        assert_eq!(
            shapes(zig, "main.zig"),
            vec![f("total", Some("Cart"), 4, &["self", "T"]), f("square", None, 8, &["n"])]
        );
    }

    #[test]
    fn go() {
        let source = "package main\n\nfunc square(n int) int {\n\treturn n * n\n}\n\nfunc (c *Cart) Total(a, b int, rest ...string) (int, error) {\n\tf := func(x int) int { return x }\n\treturn f(a), nil\n}\n\nfunc Map[T any](xs []T, fn func(T) T) []T {\n\treturn xs\n}\n\nfunc (l *List[T]) Len() int { return 0 }\n\nfunc unnamed(int, string) {}\n\nfunc asm(x int) int\n";
        assert_eq!(
            shapes(source, "main.go"),
            vec![
                f("square", None, 3, &["n"]),
                f("Total", Some("Cart"), 7, &["c", "a", "b", "rest"]),
                f("Map", None, 12, &["xs", "fn"]),
                f("Len", Some("List"), 16, &["l"]),
                f("unnamed", None, 18, &[]),
            ]
        );
    }

    #[test]
    fn names_as_asked() {
        let total = Defined {
            name: "Total".into(),
            owner: Some("Cart".into()),
            line: 1,
            params: vec![],
            brace: (1, 1),
        };
        for asked in
            ["Total", "Cart.Total", "(*Cart).Total", "main.(*Cart).Total", "shop::Cart::Total"]
        {
            assert!(total.is(asked), "{asked}");
        }
        assert!(!total.is("Order.Total"));
        assert!(!total.is("total"));
        assert_eq!(split_name("shop::Cart::total"), (Some("Cart"), "total"));
        assert_eq!(split_name("square"), (None, "square"));
    }
}
