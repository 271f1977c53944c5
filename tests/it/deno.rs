//! Deno through its inspector (CDP): `deno run` and `deno test` on TypeScript whose lines move
//! when Deno compiles it, debug-script and a session. Deno comes from `fixtures/package.json`
//! (npm's `deno` package).

use serde_json::{json, Value};

use crate::need::npm_packages;
use crate::{assert_no_debuggee, fixture, local, ok, tag, tool, values, Server};

pub fn deno(tag: &str, args: &str) -> String {
    format!("DMCP_TAG={tag} '{}' {args}", fixture("node_modules/.bin/deno"))
}

#[test]
fn deno_run_values_through_typescript_maps() {
    npm_packages();
    let tag = tag();
    let mut server = Server::initialized();
    let command = deno(&tag, &format!("run '{}'", fixture("deno/orders.ts")));
    let result = server.debug_script(json!({"command": command,
        "breakpoint": {"file": fixture("deno/orders.ts"), "line": 14}, "expression": "total"}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!(9.5), json!(16.2), json!(5)], "{s}");
    assert_eq!(s["results"][0]["type"], "number", "{s}");
    assert_eq!(s["breakpoint"]["resolvedLine"], 14, "{s}");
    assert_eq!(s["breakpoint"]["generated"][0]["line"], 5, "the JavaScript Deno runs: {s}");
    assert_eq!(s["exitCode"], 0, "{s}");
    assert_eq!(s["output"]["stdout"], "sum 30.7 after 3 orders\n", "{s}");
    assert_eq!(s["output"]["stderr"], "", "Deno's inspector lines are not the program's: {s}");
    assert_no_debuggee(&tag);

    // In an imported module, with a condition.
    let result = server.debug_script(json!({"command": command,
        "breakpoint": {"file": fixture("deno/pricing.ts"), "line": 6, "condition": "rate > 0"},
        "expression": "({customer, rate})"}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!({"customer": "bob", "rate": 0.2})], "{s}");
    assert_no_debuggee(&tag);
}

#[test]
fn deno_test_runs_under_the_debugger() {
    npm_packages();
    let tag = tag();
    let mut server = Server::initialized();
    let command = deno(&tag, &format!("test '{}'", fixture("deno/pricing_test.ts")));
    let result = server.debug_script(json!({"command": command,
        "breakpoint": {"file": fixture("deno/pricing.ts"), "line": 7}, "expression": "price"}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!(16), json!(10)], "{s}");
    assert_eq!(s["exitCode"], 0, "{s}");
    assert!(s["output"]["stdout"].as_str().unwrap().contains("2 passed"), "{s}");
    assert_no_debuggee(&tag);
}

#[test]
fn a_deno_session_from_breakpoint_to_exit() {
    npm_packages();
    let tag = tag();
    let mut server = Server::initialized();
    let command = deno(&tag, &format!("run '{}'", fixture("deno/orders.ts")));
    let file = fixture("deno/orders.ts");
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": command,
        "breakpoints": [{"file": file, "line": 13}]}),
    );
    assert_eq!(
        (&state["state"], &state["reason"]),
        (&json!("paused"), &json!("breakpoint")),
        "{state}"
    );
    assert_eq!(state["location"]["file"], file, "{state}");
    assert_eq!(state["location"]["line"], 13, "{state}");
    assert_eq!(state["location"]["function"], "add", "{state}");
    assert_eq!(
        local(&state, "order")["value"],
        json!("{id: 1, total: 9.5, customer: 'ada'}"),
        "{state}"
    );

    let value = tool(&mut server, "debug-evaluate", json!({"expression": "order.total * 2"}));
    assert_eq!(value, json!({"type": "number", "value": 19}));
    let members = tool(&mut server, "debug-variables", json!({"path": "order"}));
    let names: Vec<&Value> =
        members["variables"].as_array().unwrap().iter().map(|v| &v["name"]).collect();
    assert_eq!(names, vec!["id", "total", "customer"], "{members}");

    let state = tool(&mut server, "debug-continue", json!({"step": "into"}));
    assert_eq!(state["location"]["function"], "discount", "{state}");
    assert_eq!(state["location"]["file"], fixture("deno/pricing.ts"), "{state}");
    assert_eq!(state["location"]["line"], 5, "{state}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(state["location"]["line"], 6, "{state}");
    let set = tool(&mut server, "debug-evaluate", json!({"set": "rate", "expression": "0.5"}));
    assert_eq!(set["value"], 0.5, "{set}");
    let state = tool(&mut server, "debug-continue", json!({"step": "out"}));
    assert_eq!(state["location"]["function"], "add", "{state}");
    let stack = tool(&mut server, "debug-stack", json!({}));
    let functions: Vec<&Value> =
        stack["frames"].as_array().unwrap().iter().map(|f| &f["function"]).collect();
    assert_eq!(functions[0], "add", "{stack}");
    assert_eq!(stack["frames"][1]["line"], 24, "the loop in orders.ts: {stack}");

    tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!(state["exitCode"], 0, "{state}");
    let output = tool(&mut server, "debug-output", json!({}));
    assert_eq!(output["stdout"], "sum 25.95 after 3 orders\n", "{output}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn a_deno_program_that_cannot_load_says_why() {
    npm_packages();
    let tag = tag();
    let mut server = Server::initialized();
    let dir = std::env::temp_dir().join(format!("dmcp-deno-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.ts");
    std::fs::write(&bad, "const x: number = ;\n").unwrap();
    let command = deno(&tag, &format!("run '{}'", bad.display()));
    let result = server.call(
        "debug-script",
        json!({"command": command,
        "breakpoint": {"file": bad, "line": 1}, "expression": "x"}),
    );
    let s = &result["structuredContent"];
    assert_eq!(s["code"], "exited", "{s}");
    assert!(s["output"]["stderr"].as_str().unwrap().contains("SyntaxError"), "{s}");
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": deno(&tag, "run missing.ts"),
        "cwd": dir}),
    );
    // Deno may fail to load before the session exists (an `exited` error) or just after its
    // start (a session that has exited): either way its words are in the answer.
    let stderr = match state["code"].as_str() {
        Some(code) => {
            assert_eq!(code, "exited", "{state}");
            &state["output"]["stderr"]
        }
        None => {
            assert_eq!(state["state"], "exited", "{state}");
            &state["stderr"]
        }
    };
    assert!(stderr.as_str().unwrap().contains("Module not found"), "{state}");
    assert_no_debuggee(&tag);
    let _ = std::fs::remove_dir_all(dir);
}

/// `failures` and `probes` on Deno: a failing `deno test` (Deno's runner catches what the test
/// throws), and two lines in one run.
#[test]
fn deno_test_failures_and_probes() {
    npm_packages();
    let tag = tag();
    let mut server = Server::initialized();
    let command = deno(&tag, &format!("test '{}'", fixture("deno/failing_test.ts")));
    let result = server.debug_script(json!({"command": command, "failures": true}));
    let s = ok(&result);
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{s}");
    let failure = &failures[0];
    assert_eq!((&failure["kind"], &failure["type"]), (&json!("test"), &json!("Error")), "{s}");
    assert_eq!(failure["message"], "expected 16, got 20", "{s}");
    let frame = &failure["frames"][0];
    assert_eq!(
        (&frame["file"], &frame["line"]),
        (&json!(fixture("deno/failing_test.ts")), &json!(6))
    );
    assert_eq!(frame["locals"]["price"], "20", "{s}");

    let command = deno(&tag, &format!("run '{}'", fixture("deno/orders.ts")));
    let pricing = fixture("deno/pricing.ts");
    let result = server.debug_script(json!({"command": command,
        "probes": [{"file": pricing, "line": 6, "expression": "rate"}, {"file": pricing, "line": 7}]}));
    let s = ok(&result);
    let order: Vec<&Value> = s["results"].as_array().unwrap().iter().map(|r| &r["probe"]).collect();
    assert!(order.len() >= 2 && order.len() % 2 == 0, "{s}");
    assert!(order.chunks(2).all(|pair| pair == [&json!(0), &json!(1)]), "{s}");
    assert!(s["results"][0]["type"] == "number", "{s}");
    assert!(s["results"][1]["locals"]["price"].is_string(), "{s}");
    assert_no_debuggee(&tag);
}

/// `calls` in Deno: a TypeScript module's function, in its own file and lines, with what it
/// was given and returned (the same breakpoints as Node's, through Deno's map).
#[test]
fn deno_calls_through_typescript() {
    npm_packages();
    let tag = tag();
    let mut server = Server::initialized();
    let command = deno(&tag, &format!("run '{}'", fixture("deno/orders.ts")));
    let file = fixture("deno/pricing.ts");
    let result = server.debug_script(json!({"command": command, "calls": [{"file": file}]}));
    let s = ok(&result);
    let calls: Vec<(&Value, &Value, &Value)> = s["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (&c["function"], &c["args"]["customer"], &c["return"]))
        .collect();
    assert_eq!(
        calls,
        vec![
            (&json!("discount"), &json!("\"ada\""), &json!("9.5")),
            (&json!("discount"), &json!("\"bob\""), &json!("16.2")),
            (&json!("discount"), &json!("\"cy\""), &json!("5")),
        ],
        "{s}"
    );
    assert_eq!((&s["calls"][0]["file"], &s["calls"][0]["line"]), (&json!(file), &json!(4)), "{s}");
    assert_eq!(s["output"]["stdout"], "sum 30.7 after 3 orders\n", "{s}");
    assert_no_debuggee(&tag);
}
