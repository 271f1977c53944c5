//! Answers an agent can act on at a stop: what is in scope at the line, values as short
//! previews, the noise of module wrappers and adapters left out.

use serde_json::{json, Value};

use crate::python::python;
use crate::{assert_no_debuggee, fixture, node, tag, tool, Server};

fn names(state: &Value) -> Vec<&str> {
    let locals = state["locals"].as_array().unwrap_or_else(|| panic!("no locals in {state}"));
    locals.iter().map(|l| l["name"].as_str().unwrap()).collect()
}

fn value<'a>(state: &'a Value, name: &str) -> &'a Value {
    let locals = state["locals"].as_array().unwrap();
    let local = locals.iter().find(|l| l["name"] == name);
    &local.unwrap_or_else(|| panic!("no local {name} in {state}"))["value"]
}

#[test]
fn node_locals_hold_the_block_scopes_innermost_first_as_previews() {
    let mut server = Server::initialized();
    let tag = tag();
    let breakpoints = json!([{"file": fixture("scopes.js"), "line": 9},
                             {"file": fixture("scopes.js"), "line": 16}]);
    let command = node(&tag, "scopes.js", "");
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "paused", "{state}");
    // The loop body's `line`, the loop's `item`, then the function's own.
    assert_eq!(names(&state), ["line", "item", "items", "order", "sum"], "{state}");
    assert_eq!(value(&state, "item"), "{name: 'pen', price: 10, qty: 1}");
    assert_eq!(value(&state, "items"), "Array(2) [Object, Object]");
    assert_eq!(value(&state, "order"), "Order {id: 7, lines: Array(0)}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(value(&state, "item"), "{name: 'ink', price: 3, qty: 2}", "{state}");
    // At the module's top level: functions by name, never their source, and no CommonJS
    // wrapper parameters.
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["location"]["line"], 16, "{state}");
    let names = names(&state);
    for hidden in ["exports", "require", "module", "__filename", "__dirname"] {
        assert!(!names.contains(&hidden), "{hidden} in {names:?}");
    }
    assert_eq!(value(&state, "double"), "[Function: double]");
    assert_eq!(value(&state, "total"), "[Function: total]");
    assert_eq!(value(&state, "Order"), "[class Order]");
    assert_eq!(value(&state, "tags"), "Map(2) {'a' => 1, 'b' => 2}");
    // Asked for, the wrapper's names are there.
    let all = tool(&mut server, "debug-variables", json!({}));
    let listed: Vec<&str> =
        all["variables"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert!(listed.contains(&"require"), "{all}");
    // Console messages use the same previews.
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    let output = tool(&mut server, "debug-output", json!({}));
    let console = &output["console"][0]["text"];
    assert_eq!(console, "total 16 Map(2) {'a' => 1, 'b' => 2} [Function: total]", "{output}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn python_locals_list_what_debugpy_groups_in_its_place() {
    let mut server = Server::initialized();
    let tag = tag();
    let file = fixture("py/groups.py");
    let command = format!("DMCP_TAG={tag} {} {file}", python());
    let breakpoints = json!([{"file": file, "line": 8}]);
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "paused", "{state}");
    let mut names = names(&state);
    names.sort();
    assert_eq!(names, ["Loader", "loader", "stream"], "{state}");
    assert_eq!(value(&state, "Loader"), "<class '__main__.Loader'>");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}
