//! Whether an exception leaves the program's own code into a library that catches it (what
//! editors call user-unhandled): `pauseOnExceptions: userUnhandled` in a session, and the
//! `userUnhandled` failures of `debug-script`. A web framework catches a handler's error and
//! answers 500, so such an error is never uncaught.
//!
//! V8 pauses where a value is thrown and says only whether something will catch it
//! (`data.uncaught`), not what. The catcher is read from the stack at the throw: the first frame,
//! from the top (then on through the frames that awaited them), that stands inside a `try`
//! block with a `catch`, found in its script's source. The exception is user-unhandled when
//! that frame is a library's and an own frame stands above it. With no such frame, V8 knows a
//! catcher the stack does not show (a promise's handler): user-unhandled when a library's frame
//! called (or awaited) the last own one.

use std::collections::HashMap;

use serde_json::Value;

use crate::cdp::functions::{try_blocks, Position};
use crate::cdp::scripts::awaiting_frame;
use crate::cdp::urls::is_own;
use crate::cdp::Origin;

/// The `Debugger.setPauseOnExceptions` state for a session's `pauseOnExceptions`: V8 pauses at
/// every throw for `userUnhandled`, and the session goes on past those that are not.
pub(crate) fn v8_state(state: &str) -> &str {
    match state {
        "userUnhandled" => "all",
        other => other,
    }
}

/// The frames of the throw's stack: the paused ones, then those that awaited them (V8's
/// `asyncStackTrace` chain, shaped like paused ones, without `functionLocation`).
pub(crate) fn stack(params: &Value) -> Vec<Value> {
    let mut stack: Vec<Value> = params["callFrames"].as_array().cloned().unwrap_or_default();
    let mut link = params.get("asyncStackTrace");
    while let Some(trace) = link {
        stack.extend(trace["callFrames"].as_array().into_iter().flatten().map(awaiting_frame));
        link = trace.get("parent");
    }
    stack
}

/// A CDP location's 0-based line and column.
fn place(location: &Value) -> Option<Position> {
    let number = |field: &str| location[field].as_u64().and_then(|n| u32::try_from(n).ok());
    Some((number("lineNumber")?, number("columnNumber").unwrap_or(0)))
}

/// The `try … catch` blocks of the scripts read, by thread (each numbers its scripts) and
/// script id.
#[derive(Default)]
pub(crate) struct Catchers {
    scripts: HashMap<(Origin, String), Option<Blocks>>,
}

impl Catchers {
    /// Whether the exception thrown at a pause of the thread `at` (not uncaught: V8 saw a
    /// catcher) leaves own code into a library's: `stack` is the pause's [`stack`], `files` its
    /// paused frames' files (as
    /// `is_own` reads them; an awaiting frame's is its URL); `source` reads a script's text.
    /// An assertion that expects the throw (`expect(f).toThrow()`, `assert.throws`) is no
    /// library catching it.
    pub(crate) fn leaves_own_code(
        &mut self,
        at: &Origin,
        stack: &[Value],
        files: &[String],
        source: &mut dyn FnMut(&str) -> Option<String>,
    ) -> bool {
        let file = |i: usize| match files.get(i) {
            Some(file) => file.as_str(),
            None => stack[i]["url"].as_str().unwrap_or_default(),
        };
        let own = |i: usize| is_own(file(i));
        let Some(last_own) = (0..stack.len()).rposition(own) else { return false };
        let catcher = stack.iter().position(|frame| {
            let script = frame.pointer("/location/scriptId").and_then(Value::as_str);
            let (Some(script), Some(stands)) = (script, place(&frame["location"])) else {
                return false;
            };
            let blocks = self
                .scripts
                .entry((at.clone(), script.to_string()))
                .or_insert_with(|| source(script).map(|text| Blocks::of(&text)));
            blocks.as_ref().is_some_and(|b| b.catches(stands, place(&frame["functionLocation"])))
        });
        let catcher = match catcher {
            Some(i) if own(i) || !(0..i).any(own) => return false,
            Some(i) => i,
            None => match (last_own + 1..stack.len()).find(|&i| !passes_on(file(i))) {
                Some(i) => i,
                None => return false,
            },
        };
        !ASSERTIONS.iter().any(|a| file(catcher).contains(a))
    }
}

/// Frames that only pass a call on (node:test calls a test through `AsyncResource`'s
/// `runInAsyncScope`): who called own code is the first frame beyond them.
const PASS_THROUGH: &[&str] = &["node:async_hooks"];

/// Whether a frame of `file` only passes a call on (see [`PASS_THROUGH`]).
pub(crate) fn passes_on(file: &str) -> bool {
    PASS_THROUGH.iter().any(|p| file.starts_with(p))
}

/// Assertions that call a function to see it throw, and catch what it throws.
const ASSERTIONS: &[&str] = &[
    "/node_modules/expect/",
    "/node_modules/@vitest/expect/",
    "/node_modules/chai/",
    "node:assert",
];

/// A script's `try` blocks that have a `catch`.
struct Blocks(Vec<(Position, Position)>);

impl Blocks {
    fn of(text: &str) -> Blocks {
        Blocks(try_blocks(text))
    }

    /// Whether a frame standing at `at` is inside a `try` block of its own function (one that
    /// began after the function did; the function's start unknown: any).
    fn catches(&self, at: Position, function: Option<Position>) -> bool {
        let from = function.unwrap_or((0, 0));
        self.0.iter().any(|&(start, end)| start >= from && start < at && at < end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inside(text: &str, marker: &str) -> bool {
        let at = text.find(marker).unwrap();
        let line = text[..at].matches('\n').count() as u32;
        let column = (at - text[..at].rfind('\n').map_or(0, |n| n + 1)) as u32;
        Blocks::of(text).catches((line, column), None)
    }

    #[test]
    fn a_throw_in_a_try_with_a_catch_is_caught_there() {
        let text = "function f() {\n  try {\n    g(); // HERE\n  } catch (e) {}\n}\n";
        assert!(inside(text, "g();"));
        let finally = "function f() {\n  try {\n    g();\n  } finally {}\n}\n";
        assert!(!inside(finally, "g();"));
        let in_catch = "try { a() } catch (e) { b() }";
        assert!(!inside(in_catch, "b()"));
        assert!(inside(in_catch, "a()"));
    }

    #[test]
    fn braces_in_strings_comments_templates_and_regexes_are_not_counted() {
        let text = "try { const s = '}'; // }\n /* } */ const r = /[}/]}/g; \
                    const t = `}${ {a: 1}.a }}`; x() } catch {}";
        assert!(inside(text, "x()"));
        let division = "const a = b / c; try { y() } catch (e) {} z()";
        assert!(inside(division, "y()"));
        assert!(!inside(division, "z()"));
    }

    #[test]
    fn a_try_around_the_function_is_not_its_own() {
        let text = "try {\n  app.get('/', (req, res) => {\n    boom();\n  });\n} catch (e) {}\n";
        let blocks = Blocks::of(text);
        let at = (2, 4);
        assert!(blocks.catches(at, None));
        assert!(!blocks.catches(at, Some((1, 14))));
    }
}
