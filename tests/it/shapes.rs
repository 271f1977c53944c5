//! Answers have the same shape for every runtime: the same scenario, run on Node and on Python,
//! gives the same fields in every answer (an agent never needs to know which debugger is
//! underneath to read one).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::python::python;
use crate::{assert_no_debuggee, fixture, tag, tool, Server};

/// Every field path in a value: `a`, `a.b`, `list.[].c` (an array's first element stands for
/// all of it).
fn shape(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                let path = format!("{prefix}{key}");
                shape(value, &format!("{path}."), out);
                out.insert(path);
            }
        }
        Value::Array(items) => {
            if let Some(first) = items.first() {
                shape(first, &format!("{prefix}[]."), out);
            }
        }
        _ => {}
    }
}

/// The answers of one scenario on `loop.js` or `loop.py` (the same program: line 5 runs three
/// times), by step name.
fn scenario(command: &str, file: &str) -> Vec<(&'static str, Value)> {
    let mut server = Server::initialized();
    let mut answers = Vec::new();
    let breakpoints = json!([{"file": file, "line": 5}]);
    let mut call = |step: &'static str, name: &str, arguments: Value| {
        let answer = tool(&mut server, name, arguments);
        answers.push((step, answer.clone()));
        answer
    };
    let state =
        call("launch", "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "paused", "{state}");
    call("stack", "debug-stack", json!({}));
    call("variables", "debug-variables", json!({}));
    call("variables of a path", "debug-variables", json!({"path": "items"}));
    call("evaluate", "debug-evaluate", json!({"expression": "total"}));
    call("breakpoints", "debug-breakpoint", json!({}));
    call("sessions", "debug-sessions", json!({}));
    call("step", "debug-continue", json!({"step": "over"}));
    call("remove", "debug-breakpoint", json!({"remove": "1"}));
    call("exited", "debug-continue", json!({}));
    call("output", "debug-output", json!({}));
    call("stop", "debug-stop", json!({}));
    answers
}

#[test]
fn node_and_python_answers_have_the_same_shape() {
    let node_tag = tag();
    let node =
        scenario(&format!("DMCP_TAG={node_tag} node {}", fixture("loop.js")), &fixture("loop.js"));
    let py_tag = tag();
    let python = scenario(
        &format!("DMCP_TAG={py_tag} {} {}", python(), fixture("py/loop.py")),
        &fixture("py/loop.py"),
    );
    assert_no_debuggee(&node_tag);
    assert_no_debuggee(&py_tag);
    for ((step, node), (_, python)) in node.iter().zip(&python) {
        let (mut a, mut b) = (BTreeSet::new(), BTreeSet::new());
        shape(node, "", &mut a);
        shape(python, "", &mut b);
        if *step == "output" {
            // Node reports console.log calls as console entries too; Python's print is stdout
            // only, so its console list is empty (README, debug-output).
            a.retain(|path| !path.starts_with("console.[]."));
        }
        if *step == "exited" {
            // Present only when the program ran other processes (README): under load the
            // debugpy-launched program was seen, now and then, with a child of its own.
            for set in [&mut a, &mut b] {
                set.retain(|path| path != "message" && !path.starts_with("undebugged"));
            }
        }
        let node_only: Vec<&String> = a.difference(&b).collect();
        let python_only: Vec<&String> = b.difference(&a).collect();
        assert!(
            node_only.is_empty() && python_only.is_empty(),
            "{step}: only Node has {node_only:?}, only Python has {python_only:?}\nNode: \
             {node}\nPython: {python}"
        );
    }
}
