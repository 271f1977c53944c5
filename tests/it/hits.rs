//! A breakpoint's `hitCount` through each protocol (Node over CDP, Python over DAP, the JVM
//! over JDWP): the hits before it pass without a stop, it stops at that hit and each after.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::need::{need, python, Tool};
use crate::{assert_no_debuggee, fixture, node, root, tag, tool, Server};

/// Launches `command` with a breakpoint at `file`:`line` from hit `count` on; checks that the
/// first stop is that hit (`expression` reads `first` there), the next stop the hit after it
/// (`second`), and that the list counts every hit; then lets the program end.
fn stops_from_hit(command: &str, file: &str, line: u64, count: u64, reads: [(&str, i64); 2]) {
    let mut server = Server::initialized();
    let breakpoints = json!([{"file": file, "line": line, "hitCount": count}]);
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(
        (&state["reason"], &state["hitBreakpoints"]),
        (&json!("breakpoint"), &json!(["1"])),
        "{state}"
    );
    let value = |server: &mut Server, expression: &str| -> Value {
        tool(server, "debug-evaluate", json!({"expression": expression}))["value"].clone()
    };
    assert_eq!(value(&mut server, reads[0].0), reads[0].1, "{command}: {state}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["reason"], "breakpoint", "{state}");
    assert_eq!(value(&mut server, reads[1].0), reads[1].1, "{command}");
    let list = tool(&mut server, "debug-breakpoint", json!({}));
    let listed = &list["breakpoints"][0];
    assert_eq!(
        (&listed["hits"], &listed["hitCount"]),
        (&json!(count + 1), &json!(count)),
        "{list}"
    );
    tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!((&state["state"], &state["exitCode"]), (&json!("exited"), &json!(0)), "{state}");
}

#[test]
fn a_hit_count_stops_at_that_hit_in_every_protocol() {
    let tag = tag();
    // Line 5 adds each of three items: the third hit sees the first two added.
    let js = fixture("loop.js");
    stops_from_hit(&node(&tag, "loop.js", ""), &js, 5, 2, [("total", 10), ("total", 25)]);
    let py = fixture("py/loop.py");
    let command = format!("DMCP_TAG={tag} {} {py}", python());
    stops_from_hit(&command, &py, 5, 2, [("total", 10), ("total", 25)]);
    assert_no_debuggee(&tag);
    if !need(Tool::Java) {
        return;
    }
    let out = root().join("target/java/hits");
    let source = fixture("java/bench/Loop.java");
    crate::java::javac(&[PathBuf::from(&source)], "", &out);
    let command = format!("java -cp {} Loop 1000", out.display());
    stops_from_hit(&command, &source, 4, 500, [("i", 499), ("i", 500)]);
}

/// A watchpoint takes no `hitCount`; a count below 1 is refused.
#[test]
fn a_hit_count_is_checked() {
    let mut server = Server::initialized();
    let tag = tag();
    let command = node(&tag, "loop.js", "");
    let js = fixture("loop.js");
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": command,
        "breakpoints": [{"file": js, "line": 5}]}),
    );
    assert_eq!(state["reason"], "breakpoint", "{state}");
    let error = tool(&mut server, "debug-breakpoint", json!({"data": "total", "hitCount": 2}));
    assert_eq!(
        (&error["code"], &error["field"]),
        (&json!("invalid_arguments"), &json!("hitCount")),
        "{error}"
    );
    let error =
        tool(&mut server, "debug-breakpoint", json!({"file": js, "line": 5, "hitCount": 0}));
    assert_eq!(error["code"], "invalid_arguments", "{error}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}
