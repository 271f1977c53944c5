//! `userUnhandled`: where an exception leaves the program's own code into a library that catches
//! it (a web framework answering 500), in sessions (`pauseOnExceptions`) and as failures
//! (`debug-script`'s `userUnhandled`), for JavaScript and Python. The fixtures' framework
//! (`fixtures/web-500/node_modules/miniweb`, `fixtures/py/web500/site-packages/miniweb.py`)
//! catches every handler's error, raised at once or after an `await`, and its own.

use serde_json::{json, Value};

use crate::python::{py, pyenv_pythons, pytest, python};
use crate::{assert_no_debuggee, node, tag, tool, Server};

/// Where a stop is, and what its exception says: `(function, line, class, userUnhandled)`.
fn stop(state: &Value) -> (String, u64, String, bool) {
    (
        state["location"]["function"].as_str().unwrap_or_default().into(),
        state["location"]["line"].as_u64().unwrap_or(0),
        state["exception"]["class"].as_str().unwrap_or_default().into(),
        state["exception"]["userUnhandled"] == true && state["exception"]["uncaught"] == false,
    )
}

/// The stops a session makes with `pauseOnExceptions` `state`, and its end.
fn stops(
    server: &mut Server,
    command: &str,
    state: &str,
) -> (Vec<(String, u64, String, bool)>, Value) {
    let mut answer = tool(
        server,
        "debug-launch",
        json!({"command": command, "pauseOnExceptions": state, "timeout": 20000}),
    );
    let mut stops = Vec::new();
    while answer["state"] == "paused" && stops.len() < 10 {
        stops.push(stop(&answer));
        answer = tool(server, "debug-continue", json!({"timeout": 20000}));
    }
    tool(server, "debug-stop", json!({}));
    (stops, answer)
}

fn at(function: &str, line: u64, class: &str) -> (String, u64, String, bool) {
    (function.into(), line, class.into(), true)
}

const ANSWERED: &str = "/orders 1 200\n/safe 0 200\n/orders 2 500\n/async 3 500\n";

#[test]
fn user_unhandled_stops_where_a_handlers_error_leaves_own_code() {
    let mut server = Server::initialized();
    let tag = tag();
    let command = node(&tag, "web-500/app.js", "");
    // The framework catches everything: `uncaught` never stops.
    let (none, end) = stops(&mut server, &command, "uncaught");
    assert_eq!((none.len(), &end["stdout"]), (0, &json!(ANSWERED)), "{end}");
    // Not the framework's own error, nor the one /safe catches; the one thrown after an
    // `await` too (its catcher is in the frames that await it).
    let (found, end) = stops(&mut server, &command, "userUnhandled");
    assert_eq!(found, [at("total", 8, "TypeError"), at("(anonymous)", 26, "RangeError")]);
    assert_eq!((&end["exitCode"], &end["stdout"]), (&json!(0), &json!(ANSWERED)), "{end}");
    assert_no_debuggee(&tag);

    let mut pythons = vec![(python(), "default".to_string())];
    pythons.extend(pyenv_pythons().into_iter().map(|(p, v)| (p.display().to_string(), v)));
    for (python, version) in pythons {
        let command = format!("DMCP_TAG={tag} {python} {}", py("web500/app.py"));
        let (none, end) = stops(&mut server, &command, "uncaught");
        assert_eq!((none.len(), &end["stdout"]), (0, &json!(ANSWERED)), "{version}: {end}");
        let (found, end) = stops(&mut server, &command, "userUnhandled");
        // Shown from where it was raised: `total`, whose caller `orders` it left into the
        // framework.
        let expected = [at("total", 16, "TypeError"), at("late", 36, "LookupError")];
        assert_eq!(found, expected, "{version}");
        assert_eq!(end["stdout"], ANSWERED, "{version}: {end}");
        assert_no_debuggee(&tag);
    }
}

/// `(kind, type, own functions)` of each failure.
fn failures(answer: &Value) -> Vec<(String, String, Vec<String>)> {
    let failures = answer["failures"].as_array().cloned().unwrap_or_default();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    failures
        .iter()
        .map(|f| {
            let frames = f["frames"].as_array().cloned().unwrap_or_default();
            (
                text(&f["kind"]),
                text(&f["type"]),
                frames.iter().map(|x| text(&x["function"])).collect(),
            )
        })
        .collect()
}

fn failure(kind: &str, class: &str, functions: &[&str]) -> (String, String, Vec<String>) {
    (kind.into(), class.into(), functions.iter().map(|f| f.to_string()).collect())
}

#[test]
fn user_unhandled_failures_are_the_errors_a_library_caught() {
    let mut server = Server::initialized();
    let tag = tag();
    let command = node(&tag, "web-500/app.js", "");
    let script = |server: &mut Server, command: &str, more: Value| {
        let mut args = json!({"command": command, "failures": true, "timeout": 30000});
        args.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
        tool(server, "debug-script", args)
    };
    // Without it, nothing failed: the framework answered 500 (and its own error, thrown and
    // caught after an `await` of the program's, is no test's failure).
    let answer = script(&mut server, &command, json!({}));
    assert_eq!(failures(&answer), [], "{answer}");
    let answer = script(&mut server, &command, json!({"userUnhandled": true}));
    assert_eq!(
        failures(&answer),
        [
            failure("userUnhandled", "TypeError", &["total", "(anonymous)", "main"]),
            failure("userUnhandled", "RangeError", &["(anonymous)"]),
        ],
        "{answer}"
    );
    assert_eq!(answer["failures"][0]["frames"][0]["locals"]["order"], "{id: 2, items: null}");

    let command = format!("DMCP_TAG={tag} {} {}", python(), py("web500/app.py"));
    let answer = script(&mut server, &command, json!({}));
    assert_eq!(failures(&answer), [], "{answer}");
    let answer = script(&mut server, &command, json!({"userUnhandled": true}));
    let expected = [
        failure("userUnhandled", "TypeError", &["total", "orders"]),
        failure("userUnhandled", "LookupError", &["late"]),
    ];
    assert_eq!(failures(&answer), expected, "{answer}");
    assert_eq!(answer["failures"][0]["frames"][0]["locals"]["order"], "{'id': 2, 'items': None}");

    // A test runner catches a test's error as its failure, once, and one it expects is none
    // (`assertRaises(E, f)` calls `f` from unittest's code); an exception that goes on to the
    // top of the program is uncaught, once.
    let suite = pytest(&tag, &py("unhandled/test_runner.py"));
    let answer = script(&mut server, &suite, json!({"userUnhandled": true}));
    let expected = [
        failure("test", "AssertionError", &["test_fails"]),
        failure("test", "ValueError", &["parse", "test_error"]),
    ];
    assert_eq!(failures(&answer), expected, "{answer}");
    let main = format!("DMCP_TAG={tag} {} {}", python(), py("unhandled/main_async.py"));
    let answer = script(&mut server, &main, json!({"userUnhandled": true}));
    assert_eq!(failures(&answer), [failure("uncaught", "KeyError", &["main", "<module>"])]);

    let error =
        tool(&mut server, "debug-script", json!({"command": command, "userUnhandled": true}));
    assert_eq!(error["error"], "invalid argument `userUnhandled`: only with `failures: true`");
    let c = json!({"command": "./a.out", "language": "c", "failures": true, "userUnhandled": true});
    let error = tool(&mut server, "debug-script", c);
    assert!(error["error"]
        .as_str()
        .unwrap()
        .starts_with("invalid argument `userUnhandled`: a compiled"));
    assert_no_debuggee(&tag);
}

/// Under a test runner, `userUnhandled` changes nothing of what the runners report: an error
/// a test expects (`expect(f).toThrow()`) is none, and one the runner fails a test for after
/// a library caught it (vitest's `done` error, recorded as it left own code) is that test's.
#[test]
fn user_unhandled_under_test_runners_leaves_their_failures_as_they_are() {
    crate::need::npm_packages();
    let mut server = Server::initialized();
    let tag = tag();
    for command in
        ["npx jest cart.test.js", "npx mocha cart.spec.js", "npx vitest run cart.vitest.test.mjs"]
    {
        let run = |server: &mut Server, user_unhandled: bool| {
            let answer = tool(
                server,
                "debug-script",
                json!({"command": command, "cwd": crate::fixture("js-failing"),
                       "env": {"DMCP_TAG": tag}, "failures": true,
                       "userUnhandled": user_unhandled, "timeout": 60000}),
            );
            let failures = answer["failures"].as_array().cloned().unwrap_or_default();
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            let shown: Vec<(String, String, String)> = failures
                .iter()
                .map(|f| (text(&f["kind"]), text(&f["type"]), text(&f["test"])))
                .collect();
            (shown, answer)
        };
        let (plain, _) = run(&mut server, false);
        let (with, answer) = run(&mut server, true);
        assert!(!plain.is_empty(), "{command}");
        assert_eq!(with, plain, "{command}: {answer}");
    }
    assert_no_debuggee(&tag);
}
