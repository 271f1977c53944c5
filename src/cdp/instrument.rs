//! `calls` compiled into a script: its traced functions' text gets a call to the probe at its
//! start and at each way out, and the script is replaced (`Debugger.setScriptSource`) before
//! any of its code has run, so a call costs two reports and no pause. A function
//!
//! ```js
//! function total(a, b) { if (!a) return; return a + b; }
//! ```
//!
//! becomes, on the same lines (stack traces keep their line numbers),
//!
//! ```js
//! function total(a, b) {const __dmc__=B.e(3,[a,b]);try{ if (!a) return __dmc__.v=void 0; return __dmc__.v=( a + b); ;__dmc__.v=void 0}finally{__dmc__.f()}}
//! ```
//!
//! and an arrow's expression `x => x * 2` becomes `x => B.e(4,[x]).v=x * 2`. Unless the run pauses
//! at exceptions anyway (`failures`), a `catch` tells the probe the exception that leaves a
//! call and throws it on (no pause at every exception of the program). A closing brace on a
//! line of its own stays alone on it (the end goes after the body's last token): V8 matches
//! the old text to the new line by line first, so the function ends where it ended, which an
//! ES module needs (its top level must not change, and a function whose end moved is new to
//! it), and a script paused where its frame cannot start again; there a function whose end
//! would move (a one-line function) is left out (`Compiled::left`). With `failures`
//! only `finally` is added: V8 still predicts an exception's catcher as before (a failure's
//! `uncaught` stays true), and a call left by an exception is told by its missing `v`. The
//! ends of `return` expressions are V8's own return positions
//! (`Debugger.getPossibleBreakpoints`), not guessed from the text.

use super::functions::{Bare, Function, Position};

/// The local that holds a traced call (its name only has to differ from the program's), and
/// the exception leaving it.
const CALL: &str = "__dmc__";
const CAUGHT: &str = "__dmx__";

/// A traced function to compile: its index among the run's traced functions, what the text
/// says of it, and V8's return positions in it (in order).
pub(crate) struct Traced<'a> {
    pub(crate) index: usize,
    pub(crate) function: &'a Function,
    pub(crate) returns: Vec<Position>,
}

/// A script compiled with its calls: its new text, where each traced function is in it, and
/// the traced functions left out (positions in `traced`).
pub(crate) struct Compiled {
    pub(crate) source: String,
    pub(crate) functions: Vec<Placed>,
    pub(crate) left: Vec<usize>,
}

/// A traced function in the compiled text: where its parameters open (V8's
/// `functionLocation` for its frames), where it spans, and where the functions inside it
/// span (a frame there is theirs, not its).
pub(crate) struct Placed {
    pub(crate) index: usize,
    pub(crate) open: Position,
    pub(crate) span: (Position, Position),
    pub(crate) inner: Vec<(Position, Position)>,
}

/// One insertion: where, what, and its order among those at the same place (ends of inner
/// code before ends of outer code, then beginnings, outer first).
struct Insert {
    at: Position,
    order: (u8, i64, u8),
    text: String,
}

/// `source` with the calls of `traced` compiled in, reporting to `helper` (the probe's
/// binding); none when V8's return positions do not match the text's returns, or none is
/// left to compile. `keep_ends`: every function's end must stay where it was (an ES module,
/// a classic script whose top level cannot start again); those whose end would move are left
/// out. `catch`: the exception leaving a call is caught (told to the probe) and thrown on;
/// else only `finally` is added (the run pauses at exceptions: V8 predicts their catchers as
/// before).
pub(crate) fn compile(
    source: &str,
    traced: &[Traced],
    all: &[Function],
    helper: &str,
    keep_ends: bool,
    catch: bool,
) -> Option<Compiled> {
    let mut inserts = Vec::new();
    let mut left = Vec::new();
    let mut compiled = Vec::new();
    for (n, t) in traced.iter().enumerate() {
        let f = t.function;
        // Where its end goes: after its code's last token, when its brace has a line of its
        // own (an arrow's expression keeps its end).
        let end = f.block.as_ref().map(|b| match b.last.0 < b.close.0 && b.last > b.code {
            true => (b.last, true),
            false => (b.close, false),
        });
        if keep_ends && end.is_some_and(|(_, alone)| !alone) {
            left.push(n);
            continue;
        }
        compiled.push(t);
        let params: Vec<&str> = f.params.iter().flatten().map(String::as_str).collect();
        let enter = format!("const {CALL}={helper}.e({},[{}]);try{{", t.index, params.join(","));
        let rank = i64::from(f.body.0) << 32 | i64::from(f.body.1);
        let closing =
            |at: Position, sub: u8, text: String| Insert { at, order: (0, -rank, sub), text };
        let opening = |at: Position, text: String| Insert { at, order: (1, rank, 0), text };
        let leave = match catch {
            true => format!(
                "}}catch({CAUGHT}){{{CALL}.x({CAUGHT});throw {CAUGHT}}}finally{{{CALL}.f()}}"
            ),
            false => format!("}}finally{{{CALL}.f()}}"),
        };
        let Some(block) = &f.block else {
            // An arrow's expression `E` becomes `B.e(3,[x]).v=E`: the call starts before `E`
            // runs (an assignment's target first), ends when it is set, and the arrow's end
            // stays (an exception leaving it is seen from the stack, by the probe).
            let params = params.join(",");
            inserts.push(opening(f.body, format!("{helper}.e({},[{params}]).v=", t.index)));
            continue;
        };
        inserts.push(opening(block.code, enter));
        let mut v8 = t.returns.iter().copied().peekable();
        for r in &block.returns {
            // V8's position of this `return`'s end: the first after its keyword.
            while v8.next_if(|&p| p <= r.after).is_some() {}
            let end = v8.next();
            let set = match r.bare {
                Bare::Ended => format!(" {CALL}.v=void 0"),
                Bare::AtLineEnd => format!(" {CALL}.v=void 0;"),
                Bare::No => {
                    inserts.push(closing(end_of(source, end?), 0, ")".into()));
                    format!(" {CALL}.v=(")
                }
            };
            inserts.push(opening(r.after, set));
        }
        let (end, _) = end?;
        inserts.push(closing(end, 1, format!(";{CALL}.v=void 0{leave}")));
    }
    if compiled.is_empty() {
        return None;
    }
    inserts.sort_by_key(|i| (i.at, i.order));
    let source = apply(source, &inserts)?;
    let moved = |p: Position| moved(&inserts, p);
    let functions = compiled
        .iter()
        .map(|t| {
            let f = t.function;
            let to = f.extent;
            let inner = all
                .iter()
                .filter(|g| g.open > f.body && g.open < to)
                .map(|g| (moved(g.open), moved(g.extent)))
                .collect();
            Placed { index: t.index, open: moved(f.open), span: (moved(f.open), moved(to)), inner }
        })
        .collect();
    Some(Compiled { source, functions, left })
}

/// Where to close an expression V8 says ends at `at`: before the `;` that ends its
/// statement, when V8's position is after it.
fn end_of(source: &str, at: Position) -> Position {
    let Some(line) = source.lines().nth(at.0 as usize) else { return at };
    let before: Vec<u16> = line.encode_utf16().take(at.1 as usize).collect();
    match before.last() {
        Some(&c) if c == u16::from(b';') => (at.0, at.1 - 1),
        _ => at,
    }
}

/// Where a position of the text is after the insertions (they go before what is at their
/// place).
fn moved(inserts: &[Insert], p: Position) -> Position {
    let shift: usize = inserts
        .iter()
        .filter(|i| i.at.0 == p.0 && i.at.1 <= p.1)
        .map(|i| i.text.encode_utf16().count())
        .sum();
    (p.0, p.1.saturating_add(shift as u32))
}

/// `source` with `inserts` (sorted) made; none when one is not in it.
fn apply(source: &str, inserts: &[Insert]) -> Option<String> {
    let mut out = String::with_capacity(source.len() + inserts.len() * 24);
    let mut done = 0;
    let mut line_start = 0;
    let mut line = 0;
    for insert in inserts {
        while line < insert.at.0 {
            line_start = source[line_start..].find('\n').map(|n| line_start + n + 1)?;
            line += 1;
        }
        let mut at = line_start;
        let mut units = 0;
        for c in source[line_start..].chars() {
            if units >= insert.at.1 || c == '\n' {
                break;
            }
            units += c.len_utf16() as u32;
            at += c.len_utf8();
        }
        if units != insert.at.1 && insert.at.1 != u32::MAX {
            return None;
        }
        out.push_str(&source[done..at]);
        out.push_str(&insert.text);
        done = at;
    }
    out.push_str(&source[done..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cdp::functions::functions;

    /// Compiles every function of `source`, with V8's return positions given.
    fn compiled(source: &str, returns: &[&[Position]]) -> String {
        let all = functions(source);
        let traced: Vec<Traced> = (all.iter().enumerate())
            .map(|(index, function)| Traced { index, function, returns: returns[index].to_vec() })
            .collect();
        compile(source, &traced, &all, "B", false, false).unwrap().source
    }

    #[test]
    fn returns_and_ends() {
        let source = "function f(a, b) {\n  if (!a) return;\n  return a +\n    b;\n}\n";
        assert_eq!(
            compiled(source, &[&[(1, 17), (3, 6)]]),
            "function f(a, b) {const __dmc__=B.e(0,[a,b]);try{\n  if (!a) return __dmc__.v=void 0;\n  return __dmc__.v=( a +\n    b);;__dmc__.v=void 0}finally{__dmc__.f()}\n}\n"
        );
    }

    #[test]
    fn arrows_directives_and_bare_returns() {
        let source = "const g = (x) => ({x});\nfunction h() { 'use strict'; if (x) return\n y() }";
        assert_eq!(
            compiled(source, &[&[(0, 22)], &[]]),
            "const g = (x) => B.e(0,[x]).v=({x});\nfunction h() { 'use strict';const __dmc__=B.e(1,[]);try{ if (x) return __dmc__.v=void 0;\n y() ;__dmc__.v=void 0}finally{__dmc__.f()}}"
        );
    }

    #[test]
    fn an_arrow_inside_a_return() {
        let source = "function f() { return (y) => y * 2; }";
        assert_eq!(
            compiled(source, &[&[(0, 35)], &[(0, 34)]]),
            "function f() {const __dmc__=B.e(0,[]);try{ return __dmc__.v=( (y) => B.e(1,[y]).v=y * 2); ;__dmc__.v=void 0}finally{__dmc__.f()}}"
        );
    }

    #[test]
    fn a_module_keeps_its_functions_ends() {
        // The one-line function's end would move: it is left out (the arrow's stays).
        let source = "export const g = (x) => x;\nexport function h() { return 1; }\nexport function k(a) {\n  return a;\n}\n";
        let all = functions(source);
        let returns = [vec![(0, 25)], vec![(1, 32)], vec![(3, 11)]];
        let traced: Vec<Traced> = (all.iter().enumerate())
            .map(|(index, function)| Traced { index, function, returns: returns[index].clone() })
            .collect();
        let compiled = compile(source, &traced, &all, "B", true, true).unwrap();
        assert_eq!(compiled.left, [1]);
        assert_eq!(
            compiled.source,
            "export const g = (x) => B.e(0,[x]).v=x;\nexport function h() { return 1; }\nexport function k(a) {const __dmc__=B.e(2,[a]);try{\n  return __dmc__.v=( a);;__dmc__.v=void 0}catch(__dmx__){__dmc__.x(__dmx__);throw __dmx__}finally{__dmc__.f()}\n}\n"
        );
    }

    #[test]
    fn a_return_without_its_end_is_not_compiled() {
        let source = "function f() { return 1; }";
        let all = functions(source);
        let traced = [Traced { index: 0, function: &all[0], returns: Vec::new() }];
        assert!(compile(source, &traced, &all, "B", false, false).is_none());
    }
}
