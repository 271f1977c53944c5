//! `debug-script`'s `failures` for JavaScript (Node, Deno, pages). Each target pauses on every
//! exception (`Debugger.setPauseOnExceptions` `all`); at each such pause the run asks
//! [`record`] whether it is a failure of the program's, reads what the record needs from the
//! paused target, and resumes.
//!
//! A failure is an exception with at least one frame of the program's own code (not
//! `node_modules`, not Node's internals) that is uncaught, or an assertion error (node:assert,
//! chai, jest's and vitest's `expect`), or one thrown by own code that a test runner called
//! directly (jest, vitest, mocha, node:test), which the runner then catches as the test's
//! failure. An exception own code catches inside a library call (`expect(f).toThrow()`) is
//! none: a library frame stands between it and the runner.
//!
//! A test fails without an exception in own code too: supertest's `expect(304)` hands its error
//! to `done`, a library's promise rejects. Each runner records every failure at one place of
//! its own ([`FailSite`]): a breakpoint there reads the test and the error (frames from the
//! error's stack, without locals). Where a runner reports failures, an exception that is not
//! uncaught is held until the runner reports it (then it comes with its locals): own code that
//! throws and catches inside itself, under a test, fails nothing.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use crate::cdp::unhandled::{self, passes_on, Catchers};
use crate::cdp::urls::is_own;
use crate::cdp::{preview, Origin};
use crate::debugger::limits::FAILURE_FRAMES;
use crate::debugger::script::{failure_record, Locals};

/// The test runners' own code, which calls a test's function and catches what it throws.
const RUNNERS: &[&str] = &[
    "/node_modules/jest-circus/",
    "/node_modules/jest-jasmine2/",
    "/node_modules/@vitest/runner/",
    "/node_modules/vitest/",
    "/node_modules/mocha/",
    "node:internal/test_runner/",
    "ext:cli/40_test.js",
];

/// The running test's name, where the runner keeps it where code can read it (jest's and
/// vitest's `expect` state).
/// (Jest's own modules hold a `Symbol` binding of their own, which an evaluation in their frame
/// sees: the global's is taken.)
const TEST_NAME: &str = "(() => { try { const S = globalThis['jest-symbol-do-not-touch'] || globalThis.Symbol; \
    const s = globalThis[S.for('$$jest-matchers-object')]; \
    const n = s && s.state && s.state.currentTestName; return typeof n === 'string' ? n : undefined; } \
    catch (_) { return undefined; } })()";

/// The name of the test a runner holds, called with it as `this`: mocha's `Runnable` (its full
/// title), node:test's `Test` (its name after its parents', without the root's). A runner's
/// frame below a test holds it as its own `this`; the runners' fail sites, as an argument.
const TEST_OF: &str = "(function () { try { const t = this; \
    if (t === null || typeof t !== 'object') return undefined; \
    if (typeof t.fullTitle === 'function' && typeof t.title === 'string') return t.fullTitle(); \
    if (typeof t.name === 'string' && 'parent' in t) { const names = []; \
      for (let n = t; n && n.parent; n = n.parent) names.unshift(n.name); \
      return names.length > 0 ? names.join(' > ') : undefined; } \
    } catch (_) {} return undefined; })";

/// Runner frames asked for the test's name, at most.
const NAME_FRAMES: usize = 3;

/// A test runner's function that marks a test failed, whatever failed it.
pub(crate) struct FailSite {
    /// A part of the runner's script URLs (a bundle's chunks are named by hash).
    url: &'static str,
    /// How the line before the place starts (indentation aside), as the runner writes it.
    definition: &'static str,
    /// Evaluated in the function's frame: the JSON of `{test, type, message, stack}`, or
    /// undefined when this call is no failure of its own.
    read: &'static str,
}

/// The error an expression's `e` holds, as the JSON the run reads (part of each `read`).
const ERROR_JSON: &str = "JSON.stringify({test: name, \
    type: e !== null && typeof e === 'object' && e.name !== undefined ? String(e.name) : typeof e, \
    message: e !== null && typeof e === 'object' && e.message !== undefined ? String(e.message) : String(e), \
    stack: e !== null && typeof e === 'object' && typeof e.stack === 'string' ? e.stack : ''})";

const FAIL_SITES: &[FailSite] = &[
    // jest-circus's event handler, `case 'test_fn_failure': {` (an error, or a reason given to
    // `done`); the test's name is its describe blocks' and its own, as jest writes it.
    FailSite {
        url: "/node_modules/jest-circus/build/eventHandler.js",
        definition: "case 'test_fn_failure': {",
        read: "(() => { try { const e = event.error; const names = []; \
            for (let n = event.test; n && n.parent; n = n.parent) names.unshift(n.name); \
            const name = names.length > 0 ? names.join(' ') : undefined; \
            return JSON_ERROR; } catch (_) { return undefined; } })()",
    },
    // vitest's `failTask(result, err, diffOptions)`: its `PendingError` is a skip.
    FailSite {
        url: "/node_modules/@vitest/runner/dist/",
        definition: "function failTask(",
        read: "(() => { try { const e = Array.isArray(err) ? err[0] : err; \
            if (e !== null && typeof e === 'object' && e.constructor && \
                e.constructor.name === 'PendingError') return undefined; \
            const name = TEST_NAME; return JSON_ERROR; } catch (_) { return undefined; } })()",
    },
    // `Runner.prototype.fail = function (test, err, force)`: a pending test's is ignored.
    FailSite {
        url: "/node_modules/mocha/lib/runner.js",
        definition: "Runner.prototype.fail = function",
        read: "(() => { try { if (typeof test.isPending === 'function' && test.isPending() && \
            force !== true) return undefined; const e = err; const name = TEST_OF.call(test); \
            return JSON_ERROR; } catch (_) { return undefined; } })()",
    },
    // `Test#fail(err)`: the first failure counts; the error is wrapped (`cause`); a parent
    // failed by its subtests, or a test cancelled by its parent, fails because of another.
    FailSite {
        url: "node:internal/test_runner/test",
        definition: "  fail(err) {",
        read: "(function () { try { if (this.error !== null) return undefined; let e = err; \
            if (e !== null && typeof e === 'object' && e.code === 'ERR_TEST_FAILURE') { \
              if (e.failureType === 'subtestsFailed' || e.failureType === 'cancelledByParent') \
                return undefined; \
              if (e.cause !== undefined) e = e.cause; } \
            const name = TEST_OF.call(this); \
            return JSON_ERROR; } catch (_) { return undefined; } }).call(this)",
    },
];

impl FailSite {
    /// The site in the script at `url`, if it is a runner's.
    pub(crate) fn of(url: &str) -> Option<&'static FailSite> {
        FAIL_SITES.iter().find(|site| url.contains(site.url))
    }

    /// The 0-based line of the place (the line after its definition) in the script's `source`.
    pub(crate) fn body_line(&self, source: &str) -> Option<usize> {
        let starts = |line: &str| line.trim_start().starts_with(self.definition.trim_start());
        source.lines().position(starts).map(|line| line + 1)
    }

    /// What the runner reports at this place, read in the paused `params`' top frame: the
    /// failure's record (see [`Seen::reported`]), or `None` when this call is no failure.
    pub(crate) fn report(
        &self,
        params: &Value,
        seen: &mut Seen,
        read: &mut dyn FnMut(&str, Value) -> Option<Value>,
    ) -> Option<Value> {
        let frame = params.pointer("/callFrames/0/callFrameId")?;
        let report = frame_text(frame, &self.read(), read)?;
        seen.reported(&serde_json::from_str(&report).ok()?)
    }

    /// The expression to evaluate in the place's frame.
    fn read(&self) -> String {
        let read = self.read.replace("JSON_ERROR", ERROR_JSON);
        read.replace("TEST_NAME", TEST_NAME).replace("TEST_OF", TEST_OF)
    }
}

/// A failure a runner reported at its [`FailSite`] (`report`: what its `read` answered): its
/// key, and its record from the error's stack.
fn reported(report: &Value) -> (String, Value) {
    let class = report["type"].as_str().unwrap_or("Error");
    let message = crate::process::strip_ansi(report["message"].as_str().unwrap_or_default());
    let message = message.trim_end();
    let frames = stack_frames(report["stack"].as_str().unwrap_or_default());
    let own: Vec<&Value> =
        frames.iter().filter(|f| is_own(f["file"].as_str().unwrap_or_default())).collect();
    let at = own.first().map(|f| format!("{}:{}", f["file"].as_str().unwrap_or(""), f["line"]));
    let key = failure_key(message, &at.unwrap_or_default());
    let listed = own.into_iter().take(FAILURE_FRAMES).cloned().collect();
    let mut record = failure_record("test", class, message, listed, frames.len());
    if let Some(test) = report["test"].as_str() {
        record["test"] = test.into();
    }
    (key, record)
}

/// The string `expression` evaluates to in the paused frame `frame` (a `callFrameId`).
fn frame_text(
    frame: &Value,
    expression: &str,
    read: &mut dyn FnMut(&str, Value) -> Option<Value>,
) -> Option<String> {
    let params = json!({"callFrameId": frame, "expression": expression,
                        "returnByValue": true, "silent": true});
    let answer = read("Debugger.evaluateOnCallFrame", params)?;
    answer.pointer("/result/value")?.as_str().map(String::from)
}

/// What makes two records one failure: the message and the first own frame's place (not the
/// class: jest's assertion error is `JestAssertionError` to the debugger, `Error` by its name).
fn failure_key(message: &str, at: &str) -> String {
    format!("{message}\n{at}")
}

/// An error's `stack` as frames `{function, file, line, locals: {}}` (V8's `    at f (file:1:2)`
/// and `    at file:1:2` lines; a `file://` URL as its path).
fn stack_frames(stack: &str) -> Vec<Value> {
    let frame = |line: &str| {
        let at = line.trim_start().strip_prefix("at ")?;
        let (function, place) = match at.strip_suffix(')').and_then(|a| a.rsplit_once(" (")) {
            Some((function, place)) => (function.trim_start_matches("async "), place),
            None => ("(anonymous)", at),
        };
        let (rest, _column) = place.rsplit_once(':')?;
        let (file, line) = rest.rsplit_once(':')?;
        let line = line.parse::<u64>().ok()?;
        let file = file.strip_prefix("file://").unwrap_or(file);
        Some(json!({"function": function, "file": file, "line": line, "locals": {}}))
    };
    stack.lines().filter_map(frame).collect()
}

/// The failures of one run: each recorded once (a rethrow pauses again), and the exceptions
/// held until a runner reports them.
#[derive(Default)]
pub(crate) struct Seen {
    keys: HashSet<String>,
    held: HashMap<String, Value>,
    /// Thrown by own code while a module loaded (the loader's promise caught it), by the
    /// exception's description: recorded when Node throws it again as uncaught.
    loading: HashMap<String, (String, Value)>,
    /// `userUnhandled`: an exception that leaves own code into a library that catches it is
    /// a failure too; the `try` blocks read to tell.
    pub(crate) user_unhandled: Option<Catchers>,
    /// Those recorded so, by key: a runner that then fails a test for one makes it that test's
    /// (the record's `same` says which to replace).
    unhandled: HashMap<String, Value>,
}

impl Seen {
    pub(crate) fn new(user_unhandled: bool) -> Seen {
        Seen { user_unhandled: user_unhandled.then(Catchers::default), ..Seen::default() }
    }

    /// An exception's record (from [`record`]): the failure now when it is uncaught or no
    /// runner reports failures where it was thrown (`runner_reports` false); else held until
    /// the runner reports it.
    pub(crate) fn thrown(
        &mut self,
        (key, record): (String, Value),
        runner_reports: bool,
    ) -> Option<Value> {
        if record["kind"] == "userUnhandled" {
            let mut record = record;
            record["same"] = key.clone().into();
            self.unhandled.insert(key, record.clone());
            return Some(record);
        }
        if record["kind"] != "test" || !runner_reports {
            return Some(record);
        }
        self.held.insert(key, record);
        None
    }

    /// A runner's report: the exception held for it (with its locals), or recorded as
    /// `userUnhandled` (now the test's, in its place), else its own record from the error's
    /// stack; `None` when it was recorded already.
    pub(crate) fn reported(&mut self, report: &Value) -> Option<Value> {
        let (key, record) = reported(report);
        if let Some(held) = self.held.remove(&key) {
            return Some(held);
        }
        if let Some(mut unhandled) = self.unhandled.remove(&key) {
            unhandled["kind"] = "test".into();
            if let Some(test) = record.get("test") {
                unhandled["test"] = test.clone();
            }
            return Some(unhandled);
        }
        self.keys.insert(key).then_some(record)
    }
}

fn is_runner(file: &str) -> bool {
    RUNNERS.iter().any(|runner| file.contains(runner))
}

/// The failure this exception pause of the thread `at` may be, with its key, or `None` when it
/// is none. `frames`
/// are the pause's frames as `{function, file, line}` (source-mapped), in the order of
/// `params.callFrames`; `runner_reports`: a test runner reports failures where it was thrown;
/// `read` asks the paused target a request and waits for its answer.
pub(crate) fn record(
    at: &Origin,
    params: &Value,
    frames: &[Value],
    runner_reports: bool,
    seen: &mut Seen,
    read: &mut dyn FnMut(&str, Value) -> Option<Value>,
) -> Option<(String, Value)> {
    if !matches!(params["reason"].as_str(), Some("exception" | "promiseRejection")) {
        return None;
    }
    let file = |i: usize| frames.get(i).and_then(|f| f["file"].as_str()).unwrap_or_default();
    let own: Vec<usize> = (0..frames.len()).filter(|&i| is_own(file(i))).collect();
    let data = &params["data"];
    let (class, description) = exception(data);
    let uncaught = data["uncaught"] == true;
    // An error that left a module's body while it loaded, thrown on by the loader (its
    // `ModuleJob.run` rejects the import with it: frames of Node's only): its record from
    // where it began. One the module's own code caught goes no further.
    if own.is_empty() {
        if let Some((key, record)) = seen.loading.remove(&description) {
            seen.keys.insert(key.clone());
            return Some((key, record));
        }
    }
    let first = *own.first()?;
    // mocha's `this.skip()` throws a `Pending` to end the test: skipped, not failed.
    if class == "Pending" && file(0).contains("/node_modules/mocha/") {
        return None;
    }
    let assertion = class.contains("Assert") || description.starts_with("AssertionError");
    // Own code that a runner called, with no library between: the runner gets the exception.
    let outermost = (first..frames.len()).take_while(|&i| is_own(file(i))).last().unwrap_or(first);
    let caller = (outermost + 1..frames.len()).find(|&i| !passes_on(file(i)));
    // Past an `await` no caller is on the stack: a runner's, where one reports failures.
    let runner_caught = caller.map_or(runner_reports, |i| is_runner(file(i)));
    // A module's body (an ES module's, or CommonJS that an ES module or tsx loads): the
    // loader's promise catches what it throws (V8 cannot tell that from a `catch` of the
    // module's own): held until the loader throws it on.
    let loading = caller.is_some_and(|i| file(i).starts_with("node:internal/modules/"));
    let mut left_own = false;
    if let (false, Some(catchers)) =
        (uncaught || assertion || runner_caught || loading, seen.user_unhandled.as_mut())
    {
        let files: Vec<String> = (0..frames.len()).map(|i| file(i).to_string()).collect();
        let mut source = |script: &str| {
            let answer = read("Debugger.getScriptSource", json!({"scriptId": script}))?;
            answer["scriptSource"].as_str().map(String::from)
        };
        left_own = catchers.leaves_own_code(at, &unhandled::stack(params), &files, &mut source);
    }
    if !(uncaught || assertion || runner_caught || loading || left_own) {
        return None;
    }
    let message = message(&description, class);
    let key = failure_key(&message, &format!("{}:{}", file(first), frames[first]["line"]));
    if !seen.keys.insert(key.clone()) {
        return None;
    }
    let call_frames = params["callFrames"].as_array().cloned().unwrap_or_default();
    let listed: Vec<Value> = own
        .iter()
        .take(FAILURE_FRAMES)
        .map(|&i| {
            let mut frame = frames[i].clone();
            frame["locals"] = call_frames.get(i).map_or(json!({}), |f| locals(f, read));
            frame
        })
        .collect();
    let kind = match (uncaught || loading, left_own) {
        (true, _) => "uncaught",
        (false, true) => "userUnhandled",
        (false, false) => "test",
    };
    let mut record = failure_record(kind, class, &message, listed, frames.len());
    if loading && !(uncaught || assertion || runner_caught) {
        seen.keys.remove(&key);
        seen.loading.insert(description, (key, record));
        return None;
    }
    // jest's and vitest's name is global (read in the top frame); mocha's and node:test's is
    // the `this` of a runner's frame below the test.
    let runners = (outermost + 1..frames.len()).filter(|&i| is_runner(file(i)));
    let runner_name = format!("{TEST_OF}.call(this)");
    let asked = std::iter::once((0, TEST_NAME))
        .chain(runners.take(NAME_FRAMES).map(|i| (i, runner_name.as_str())));
    let mut names = asked.filter_map(|(i, expression)| {
        frame_text(&call_frames.get(i)?["callFrameId"], expression, read)
    });
    if let Some(name) = names.next() {
        record["test"] = name.into();
    }
    Some((key, record))
}

/// An exception pause's `data`: its class (a bundle's may carry a leading underscore, vitest's
/// `_AssertionError`: dropped) and its description (a thrown value that is no object: its JSON).
pub(crate) fn exception(data: &Value) -> (&str, String) {
    let class = data["className"].as_str().unwrap_or_else(|| data["type"].as_str().unwrap_or(""));
    let description = data["description"]
        .as_str()
        .map(String::from)
        .or_else(|| data.get("value").map(|v| v.to_string()))
        .unwrap_or_default();
    (class.trim_start_matches('_'), description)
}

/// An exception's message: its description up to its stack, without the class name in
/// front or terminal colours (jest colours its assertion messages).
pub(crate) fn message(description: &str, class: &str) -> String {
    let text = description.split("\n    at ").next().unwrap_or(description);
    // The class, or the `name` it gives itself (jest's assertion errors say `Error`).
    // Node's own errors add their code: `AssertionError [ERR_ASSERTION]: …`.
    let named = text.split_once(": ").filter(|(name, _)| {
        let name = name.split_once(" [").map_or(*name, |(name, code)| match code.ends_with(']') {
            true => name,
            false => "",
        });
        name == class || (name.ends_with("Error") && name.chars().all(|c| c.is_alphanumeric()))
    });
    let text = named.map_or(text, |(_, rest)| rest);
    let text = crate::process::strip_ansi(text);
    text.trim_end().to_string()
}

/// A paused frame's locals (its local and block scopes) as `{name: preview}`.
pub(crate) fn locals(frame: &Value, read: &mut dyn FnMut(&str, Value) -> Option<Value>) -> Value {
    let mut shown = Locals::default();
    let scopes = frame["scopeChain"].as_array().into_iter().flatten();
    for scope in scopes.filter(|s| matches!(s["type"].as_str(), Some("local" | "block" | "catch")))
    {
        let Some(id) = scope.pointer("/object/objectId").and_then(Value::as_str) else { continue };
        let params = json!({"objectId": id, "ownProperties": true, "generatePreview": true});
        let Some(answer) = read("Runtime.getProperties", params) else { continue };
        for property in answer["result"].as_array().into_iter().flatten() {
            let name = property["name"].as_str().unwrap_or_default();
            // A CommonJS module's wrapper arguments are the same in every module, and Vite's
            // (vitest's) import bindings are modules.
            let wrapper =
                matches!(name, "exports" | "require" | "module" | "__filename" | "__dirname")
                    || name.starts_with("__vite_ssr_");
            if !wrapper && property["value"]["type"] != "function" {
                shown.add(name, &preview_text(&property["value"]));
            }
        }
    }
    shown.into_json()
}

/// A value as one short line: a string quoted, anything else as the debugger shows it.
pub(crate) fn preview_text(remote: &Value) -> String {
    match preview::compact(remote) {
        (kind, Value::Null) if kind == "undefined" => kind,
        (_, Value::String(s)) if remote["type"] == "string" => Value::String(s).to_string(),
        (_, Value::String(s)) => s,
        (_, other) => other.to_string(),
    }
}

/// The request that makes a target pause on every exception.
pub(crate) fn pause_on_exceptions() -> (&'static str, Value) {
    ("Debugger.setPauseOnExceptions", json!({"state": "all"}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_code_and_runners() {
        assert!(is_own("/app/src/cart.js"));
        for file in ["", "node:internal/main", "/app/node_modules/lodash/x.js", "ext:core/01.js"] {
            assert!(!is_own(file), "{file}");
        }
        assert!(is_runner("/app/node_modules/jest-circus/build/utils.js"));
        assert!(is_runner("node:internal/test_runner/test"));
        assert!(!is_runner("/app/node_modules/expect/build/index.js"));
    }

    #[test]
    fn stacks_become_frames() {
        let stack =
            "Error: expected 304 \"Not Modified\", got 200 \"OK\"\n    at Context.<anonymous> \
            (/app/test/res.send.js:409:10)\n    at async run (file:///app/t.mjs:3:1)\n    at \
            process.processImmediate (node:internal/timers:483:21)\n    at /app/x.js:7:2";
        let frames = stack_frames(stack);
        let brief: Vec<_> =
            frames.iter().map(|f| (&f["function"], &f["file"], &f["line"])).collect();
        assert_eq!(brief.len(), 4, "{frames:?}");
        assert_eq!(
            brief[0],
            (&json!("Context.<anonymous>"), &json!("/app/test/res.send.js"), &json!(409))
        );
        assert_eq!(brief[1], (&json!("run"), &json!("/app/t.mjs"), &json!(3)));
        assert_eq!(brief[3], (&json!("(anonymous)"), &json!("/app/x.js"), &json!(7)));
        let mut seen = Seen::default();
        let report =
            json!({"test": "res x", "type": "Error", "message": "expected 304", "stack": stack});
        let record = seen.reported(&report).unwrap();
        assert_eq!(record["frames"].as_array().unwrap().len(), 3, "{record}");
        assert_eq!((&record["test"], &record["framesOmitted"]), (&json!("res x"), &json!(1)));
        assert!(seen.reported(&report).is_none(), "recorded once");

        // Held where it was thrown (with its locals) until the runner reports it.
        let key = failure_key("expected 304", "/app/test/res.send.js:409");
        let thrown = json!({"kind": "test", "frames": [{"locals": {"a": "1"}}]});
        let mut seen = Seen::default();
        assert!(seen.thrown((key.clone(), thrown.clone()), true).is_none());
        assert_eq!(seen.reported(&report), Some(thrown.clone()));
        // Where no runner reports, or uncaught: at once.
        assert_eq!(seen.thrown((key, thrown.clone()), false), Some(thrown));
    }

    #[test]
    fn fail_sites_find_their_function() {
        let site = FailSite::of("file:///app/node_modules/mocha/lib/runner.js").unwrap();
        let source = "a\nRunner.prototype.fail = function (test, err, force) {\n  force = 1;\n}";
        assert_eq!(site.body_line(source), Some(2));
        assert!(FailSite::of("node:internal/test_runner/test").is_some());
        let vitest = FailSite::of("file:///a/node_modules/@vitest/runner/dist/chunk-hooks.js");
        assert_eq!(vitest.unwrap().body_line("x\nfunction failTask(result, err) {\n\tif"), Some(2));
        let jest = FailSite::of("/a/node_modules/jest-circus/build/eventHandler.js").unwrap();
        assert_eq!(jest.body_line("switch (x) {\n    case 'test_fn_failure': {\n"), Some(2));
        assert!(FailSite::of("file:///app/runner.js").is_none());
        for site in FAIL_SITES {
            let read = site.read();
            assert!(
                !["JSON_ERROR", "TEST_NAME", "TEST_OF"].iter().any(|p| read.contains(p)),
                "{read}"
            );
        }
    }

    #[test]
    fn messages_lose_their_stack_class_and_colours() {
        let description =
            "AssertionError: \u{1b}[2mexpected\u{1b}[22m 1 to equal 2\n    at f (/a.js:1:1)";
        assert_eq!(message(description, "AssertionError"), "expected 1 to equal 2");
        assert_eq!(message("plain", "Error"), "plain");
        let node = "AssertionError [ERR_ASSERTION]: 5.4 == 6\n    at x (/a.js:1:1)";
        assert_eq!(message(node, "AssertionError"), "5.4 == 6");
        assert_eq!(message("Error: expect(received)", "JestAssertionError"), "expect(received)");
    }
}
