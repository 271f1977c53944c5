//! Go under Delve as `go test` and the runtime make it: a test that waits forever is a hang
//! (the test binary has `go test`'s own `-test.timeout`), the runtime's deadlock is a failure
//! with every goroutine, a method call in a probe says what works instead, and a suite runs
//! whole past `maxHits`.

use serde_json::{json, Value};

use crate::need::{need, Tool};
use crate::{fixture, ok, Server};

fn waits() -> String {
    fixture("native/go-waits")
}

/// A test stuck in `wg.Wait()` with nothing else running: `go test` would wait for its
/// 10-minute timeout (the runtime cannot call it a deadlock while that timer runs), so the run
/// answers where it hangs, `wait group`; it was the runtime's deadlock crash (exit code 2).
#[test]
fn a_test_that_waits_forever_is_a_hang_in_a_wait_group() {
    if !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": "go test -run TestGather .",
        "cwd": waits(), "hang": 2000, "timeout": 120000}));
    let s = ok(&result);
    let threads = s["hang"]["threads"].as_array().unwrap_or_else(|| panic!("no hang: {s}"));
    assert_eq!(threads.len(), 1, "{s}");
    assert_eq!(threads[0]["state"], "wait group", "{s}");
    assert_eq!(threads[0]["frames"][0]["function"], "example.com/waits.Gather", "{s}");
    assert_eq!(threads[0]["frames"][1]["function"], "example.com/waits.TestGather", "{s}");
    assert_eq!(s["output"]["stderr"], "", "{s}");
}

/// `fatal error: all goroutines are asleep - deadlock!` is raised by the scheduler, in no
/// goroutine of the program's: still a failure, with every goroutine's frames and locals.
#[test]
fn the_runtimes_deadlock_is_a_failure_with_every_goroutine() {
    if !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": "go run ./deadlock", "cwd": waits(),
        "failures": true, "timeout": 120000}));
    let s = ok(&result);
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{s}");
    let failure = &failures[0];
    assert_eq!(
        (&failure["type"], &failure["message"]),
        (&json!("fatal error"), &json!("all goroutines are asleep - deadlock!")),
        "{s}"
    );
    let main = &failure["threads"][0];
    assert_eq!(main["state"], "wait group", "{s}");
    assert_eq!(main["frames"][0]["function"], "main.main", "{s}");
    assert_eq!(main["frames"][0]["line"], 18, "{s}");
    assert_eq!(main["frames"][0]["locals"]["orders"], "[]int len: 2, cap: 2, [4,5]", "{s}");
}

/// Delve calls no method in an expression: the probe's value says so and what to read
/// instead (it said only "Unable to evaluate expression").
#[test]
fn a_method_call_in_a_probe_says_what_works_instead() {
    if !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": "go test -run TestFill .",
        "cwd": waits(), "breakpoint": {"file": "waits.go", "line": 35},
        "expression": "c.Len()", "timeout": 120000}));
    let s = ok(&result);
    let first = &s["results"][0];
    assert_eq!(first["type"], "error", "{s}");
    let said = first["value"].as_str().unwrap();
    assert!(said.contains("no function or method call") && said.contains("len(c.items)"), "{s}");
}

/// Past `maxHits`, `go test ./...` still runs every package (each package's hits not taken):
/// their results and failures are in the answer (later packages were left out, "Not run").
#[test]
fn a_suite_runs_whole_past_max_hits() {
    if !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": "go test ./...",
        "cwd": fixture("native/go-suite"), "maxHits": 1, "timeout": 120000,
        "probes": [{"file": "calc.go", "line": 11, "expression": "sum"},
                   {"file": "text/text.go", "line": 6, "expression": "name"}]}));
    let s = ok(&result);
    let commands: Vec<&Value> =
        s["processes"].as_array().unwrap().iter().map(|p| &p["command"]).collect();
    assert_eq!(commands, [&json!("go test ."), &json!("go test ./text")], "{s}");
    assert_eq!(s["results"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s["hitsCapped"], true, "{s}");
    assert!(s["output"]["stdout"].as_str().unwrap().contains("TestGreet"), "{s}");
    assert_eq!(s["exitCode"], 1, "{s}");
}
