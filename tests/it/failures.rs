//! `debug-script` with `failures: true` and `probes` on JavaScript: each test runner's failing
//! test, an uncaught error, what is no failure (an error the program catches, one a library
//! catches on purpose inside a test), and several probes in one run. Python's are in python.rs.

use serde_json::{json, Value};

use crate::need::npm_packages;
use crate::{assert_no_debuggee, fixture, ok, run_script, tag};

/// The failures of `command` run in fixtures/js-failing.
fn failures(command: &str, tag: &str) -> Value {
    let result = run_script(json!({"command": command, "cwd": fixture("js-failing"),
        "env": {"DMCP_TAG": tag}, "failures": true, "timeout": 60000}));
    let s = ok(&result);
    assert_ne!(s["exitCode"], 0, "{command}: {s}");
    assert!(s.get("breakpoint").is_none(), "{s}");
    assert!(s.get("moreFailures").is_none(), "{s}");
    s["failures"].clone()
}

/// The one frame every runner's failing assertion shows: the test's own line, where `got`
/// (when the test names it) holds the wrong total.
fn check_assertion(failure: &Value, file: &str, line: u64, kind: &str) {
    assert_eq!(failure["kind"], "test", "{failure}");
    assert!(failure["type"].as_str().unwrap().contains(kind), "{failure}");
    assert!(failure["message"].as_str().unwrap().contains("5.4"), "{failure}");
    assert!(failure["process"].is_u64(), "{failure}");
    let frame = &failure["frames"][0];
    assert_eq!(frame["file"], fixture(&format!("js-failing/{file}")), "{failure}");
    assert_eq!(frame["line"], line, "{failure}");
    assert_eq!(frame["locals"]["items"], "Array(1) [Object]", "{failure}");
}

/// A failure the runner was told of (`done(error)`, a rejection), not thrown: found where the
/// runner marks the test failed; its frames come from the error's stack, without locals.
fn check_done(failure: &Value, file: &str, line: u64, test: &str) {
    assert_eq!(
        (&failure["kind"], &failure["type"]),
        (&json!("test"), &json!("Error")),
        "{failure}"
    );
    assert_eq!((&failure["message"], &failure["test"]), (&json!("no total in time"), &json!(test)));
    let frame = &failure["frames"][0];
    assert_eq!(frame["file"], fixture(&format!("js-failing/{file}")), "{failure}");
    assert_eq!((&frame["line"], &frame["locals"]), (&json!(line), &json!({})), "{failure}");
}

#[test]
fn each_runners_failing_test_with_its_locals() {
    npm_packages();
    let tag = tag();

    // jest: the assertion, through babel-jest's map; `expect(...).toThrow()` is no failure.
    let found = failures("npx jest cart.test.js", &tag);
    assert_eq!(found.as_array().unwrap().len(), 2, "{found}");
    check_assertion(&found[0], "cart.test.js", 7, "AssertionError");
    assert_eq!(found[0]["test"], "totals without discount", "{found}");
    assert_eq!(found[0]["frames"][0]["locals"]["got"], "5.4", "{found}");
    check_done(&found[1], "cart.test.js", 15, "reports through done");

    // node:test: the assertion, and a TypeError a subtest's code under test throws; each
    // names its test (a subtest after its parent). The SyntaxError a passing test's code
    // catches itself is none.
    let found = failures("node --test cart.node.js", &tag);
    assert_eq!(found.as_array().unwrap().len(), 3, "{found}");
    check_assertion(&found[0], "cart.node.js", 9, "AssertionError");
    assert_eq!(found[0]["message"], "Expected values to be strictly equal:\n\n5.4 !== 6");
    assert_eq!(found[0]["test"], "totals without discount", "{found}");
    assert_eq!(
        (&found[1]["type"], &found[1]["frames"][0]["line"]),
        (&json!("TypeError"), &json!(4))
    );
    assert_eq!(found[1]["test"], "cart > takes no items", "{found}");
    check_done(&found[2], "cart.node.js", 21, "reports through done");

    // mocha: the assertion, and a TypeError thrown in the code under test (its frame first).
    let found = failures("npx mocha cart.spec.js", &tag);
    assert_eq!(found.as_array().unwrap().len(), 3, "{found}");
    check_assertion(&found[0], "cart.spec.js", 8, "AssertionError");
    assert_eq!(found[0]["test"], "cart totals without discount", "{found}");
    let thrown = &found[1];
    assert_eq!(thrown["test"], "cart takes no items", "{thrown}");
    assert_eq!(
        (&thrown["type"], &thrown["message"]),
        (&json!("TypeError"), &json!("items is not iterable"))
    );
    let frames = thrown["frames"].as_array().unwrap();
    assert_eq!(
        (&frames[0]["function"], &frames[0]["line"]),
        (&json!("total"), &json!(4)),
        "{thrown}"
    );
    assert_eq!(frames[0]["locals"]["items"], "null", "{thrown}");
    assert_eq!(
        (&frames[1]["file"], &frames[1]["line"]),
        (&json!(fixture("js-failing/cart.spec.js")), &json!(12))
    );
    check_done(&found[2], "cart.spec.js", 15, "cart reports through done");

    // vitest: in its worker, through Vite's transform.
    let found = failures("npx vitest run cart.vitest", &tag);
    assert_eq!(found.as_array().unwrap().len(), 2, "{found}");
    check_assertion(&found[0], "cart.vitest.test.mjs", 10, "AssertionError");
    assert_eq!(found[0]["test"], "totals without discount", "{found}");
    assert!(found[0]["frames"][0]["locals"].get("__vite_ssr_import_0__").is_none(), "{found}");
    check_done(&found[1], "cart.vitest.test.mjs", 14, "reports through done");
    assert_no_debuggee(&tag);
}

#[test]
fn an_uncaught_error_and_one_the_program_catches() {
    let tag = tag();
    let found = failures("node main.js", &tag);
    // JSON.parse's SyntaxError is caught by the program: no failure.
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    let failure = &found[0];
    assert_eq!(failure["kind"], "uncaught", "{failure}");
    assert_eq!(failure["type"], "TypeError", "{failure}");
    assert_eq!(failure["message"], "Cannot read properties of null (reading 'length')");
    let frame = &failure["frames"][0];
    assert_eq!((&frame["function"], &frame["line"]), (&json!("main"), &json!(13)), "{failure}");
    assert_eq!(frame["locals"], json!({"data": "null", "n": "3"}), "{failure}");
    assert!(failure.get("test").is_none(), "{failure}");
    assert_no_debuggee(&tag);
}

/// `probes` on JavaScript: several lines in one run, results in execution order with their
/// probe's index (locals where a probe has no expression), through jest's transform too.
#[test]
fn javascript_probes_answer_in_execution_order() {
    npm_packages();
    let tag = tag();
    let probes = |command: &str, probes: Value| {
        let result = run_script(json!({"command": command, "cwd": fixture("js-failing"),
            "env": {"DMCP_TAG": tag}, "probes": probes, "timeout": 60000}));
        ok(&result).clone()
    };
    let s = probes(
        "npx mocha cart.spec.js",
        json!([{"file": "cart.js", "line": 4}, {"file": "cart.js", "line": 5, "expression": "sum"},
               {"file": "cart.spec.js", "line": 8, "expression": "items.length"}]),
    );
    let results = s["results"].as_array().unwrap();
    let order: Vec<&Value> = results.iter().map(|r| &r["probe"]).collect();
    // The first test: its line 8, then cart.js's lines 4 and 5; the second: line 4 only (it
    // throws there).
    assert_eq!(order, [&json!(2), &json!(0), &json!(1), &json!(0)], "{s}");
    assert_eq!(results[0]["value"], 1, "{s}");
    assert_eq!(results[1]["locals"]["items"], "Array(1) [Object]", "{s}");
    assert_eq!(results[2]["value"], 6, "{s}");
    assert_eq!(results[3]["locals"]["items"], "null", "{s}");
    assert_eq!(s["probes"][2]["resolvedLine"], 8, "{s}");

    // jest transforms the test file while loading it: each probe lands through its map.
    let s = probes(
        "npx jest cart.test.js",
        json!([{"file": "cart.test.js", "line": 7, "expression": "got"},
               {"file": "cart.js", "line": 5, "expression": "sum"}]),
    );
    let results = s["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{s}");
    assert_eq!((&results[0]["probe"], &results[0]["value"]), (&json!(1), &json!(6)), "{s}");
    assert_eq!((&results[1]["probe"], &results[1]["value"]), (&json!(0), &json!(5.4)), "{s}");
    assert_eq!(s["probes"][0]["resolvedLine"], 7, "{s}");
    assert_no_debuggee(&tag);
}

/// An error thrown while an ES module loads (its own body, or a function it calls) is caught
/// by Node's loader and thrown on: a failure, with its frames and locals, for `node app.mjs`,
/// `tsx` and `node --import tsx` alike (each answered `failures: []`); an error the module's
/// body catches itself is none.
#[test]
fn errors_thrown_while_a_module_loads() {
    let tag = tag();
    let dir = fixture("esm-fail");
    let run = |command: &str| {
        let result = run_script(json!({"command": command, "cwd": dir,
            "env": {"DMCP_TAG": tag}, "failures": true, "timeout": 60000}));
        let s = ok(&result).clone();
        assert_eq!(s["exitCode"], 1, "{command}: {s}");
        assert_eq!(s["failures"].as_array().unwrap().len(), 1, "{command}: {s}");
        s["failures"][0].clone()
    };
    let failure = run("node app.mjs");
    assert_eq!((&failure["kind"], &failure["type"]), (&json!("uncaught"), &json!("TypeError")));
    let frames: Vec<(&Value, &Value)> = failure["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (&f["function"], &f["line"]))
        .collect();
    assert_eq!(frames, [(&json!("count"), &json!(4)), (&json!("(anonymous)"), &json!(11))]);
    assert_eq!(failure["frames"][0]["locals"]["text"], "\"{\\\"item\\\": []}\"", "{failure}");

    npm_packages();
    for command in ["npx tsx main.ts", "node --import tsx main.ts"] {
        let failure = run(command);
        assert_eq!(failure["message"], "no rate for EUR", "{command}: {failure}");
        let top = &failure["frames"][0];
        assert_eq!((&top["function"], &top["line"]), (&json!("total"), &json!(7)), "{failure}");
        assert_eq!(top["locals"]["currency"], "\"EUR\"", "{failure}");
    }
    assert_no_debuggee(&tag);
}
