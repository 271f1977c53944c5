//! The session tools through the real binary and real node: launch, continue, step, pause,
//! stack, evaluate, sessions, stop, and the states and failures between them.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{
    assert_no_debuggee, eventually, fixture, free_port, launch, node, processes_with_tag, root,
    tag, tool, Program, Server,
};

fn ts_file(name: &str) -> String {
    root().join("fixtures/ts").join(name).display().to_string()
}

#[test]
fn a_session_from_breakpoint_to_exit() {
    let mut server = Server::initialized();
    let tag = tag();
    let command = format!("DMCP_TAG={tag} node {}", ts_file("dist/app.js"));
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": command,
        "breakpoints": [{"file": ts_file("src/pricing.ts"), "line": 17}]}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["reason"], "breakpoint");
    assert_eq!(state["hitBreakpoints"], json!(["1"]));
    let id = state["sessionId"].as_str().unwrap().to_string();
    // Source-mapped: the location and the source are the TypeScript's.
    assert_eq!(state["location"]["file"], ts_file("src/pricing.ts"));
    assert_eq!(state["location"]["line"], 17);
    assert_eq!(state["location"]["function"], "lineTotal");
    assert_eq!(state["location"]["generated"]["file"], ts_file("dist/pricing.js"));
    let current: Vec<&Value> =
        state["source"].as_array().unwrap().iter().filter(|l| l["current"] == true).collect();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["line"], 17);
    assert!(current[0]["text"].as_str().unwrap().contains("const net"), "{state}");
    let locals = state["locals"].as_array().unwrap();
    assert!(locals.contains(&json!({"name": "gross", "type": "number", "value": 10})), "{state}");
    assert!(
        locals.contains(&json!({"name": "net", "type": "undefined", "value": null})),
        "{state}"
    );

    let value = tool(&mut server, "debug-evaluate", json!({"expression": "item"}));
    assert_eq!(value, json!({"type": "object", "value": {"name": "pen", "price": 10, "qty": 1}}));
    let value = tool(&mut server, "debug-evaluate", json!({"sessionId": id, "expression": "nope"}));
    assert_eq!(value, json!({"type": "error", "value": "ReferenceError: nope is not defined"}));

    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!((state["state"].as_str(), state["reason"].as_str()), (Some("paused"), Some("step")));
    assert_eq!(state["location"]["line"], 18);
    assert!(state["locals"]
        .as_array()
        .unwrap()
        .contains(&json!({"name": "net", "type": "number", "value": 9})));

    let stack = tool(&mut server, "debug-stack", json!({"maxFrames": 2}));
    let frames = stack["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 2);
    assert_eq!(
        (&frames[0]["index"], &frames[0]["function"], &frames[0]["line"]),
        (&json!(0), &json!("lineTotal"), &json!(18))
    );
    assert_eq!(
        (&frames[1]["file"], &frames[1]["line"]),
        (&json!(ts_file("src/app.ts")), &json!(22))
    );
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "total", "frame": 1}));
    assert_eq!(value, json!({"type": "number", "value": 0}));

    let scripts = tool(&mut server, "debug-source", json!({}));
    let app = scripts["scripts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["file"] == ts_file("dist/app.js"))
        .unwrap()
        .clone();
    assert_eq!(app["sourceMap"], "app.js.map");
    assert_eq!(app["originalSources"], json!([ts_file("src/app.ts")]));
    assert!(scripts["scripts"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| !s["url"].as_str().unwrap().starts_with("node:")));
    let source = tool(
        &mut server,
        "debug-source",
        json!({"file": ts_file("src/pricing.ts"), "line": 17, "context": 1}),
    );
    assert_eq!(
        source["lines"],
        json!([
        {"line": 16, "text": "  const gross: number = item.price * item.qty;"},
        {"line": 17, "text": "  const net: number = gross * (1 - discount.rate);", "current": true},
        {"line": 18, "text": "  return Math.round(net * 100) / 100;"}])
    );
    assert_eq!(source["totalLines"], 19);
    // A generated line shows the original source around it.
    let source = tool(
        &mut server,
        "debug-source",
        json!({"file": ts_file("dist/pricing.js"), "line": 8, "context": 0}),
    );
    assert_eq!(source["file"], ts_file("src/pricing.ts"));
    assert_eq!(
        source["lines"],
        json!([{"line": 17, "text": "  const net: number = gross * (1 - discount.rate);", "current": true}])
    );
    assert_eq!(source["mappedFrom"], json!({"file": ts_file("dist/pricing.js"), "line": 8}));
    let error =
        tool(&mut server, "debug-source", json!({"file": ts_file("src/pricing.ts"), "line": 90}));
    assert_eq!(error["code"], "line_out_of_range");

    let sessions = tool(&mut server, "debug-sessions", json!({}));
    assert_eq!(sessions["sessions"][0]["sessionId"], id);
    assert_eq!(sessions["sessions"][0]["state"], "paused");

    for expected in [15, 10] {
        let state = tool(&mut server, "debug-continue", json!({}));
        assert_eq!(state["reason"], "breakpoint");
        assert!(state["locals"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "gross", "type": "number", "value": expected})));
    }
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited");
    assert_eq!(state["exitCode"], 0);
    assert_eq!(state["stdout"], "order A-1: 31.5\n");
    assert_no_debuggee(&tag);

    // An ended session keeps its final state readable and says what to do.
    let error = server.call("debug-stack", json!({}));
    assert_eq!(error["isError"], true);
    assert!(error["structuredContent"]["error"]
        .as_str()
        .unwrap()
        .starts_with(&format!("session {id} has ended: the program exited (exit code 0)")));
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited");
    let stopped = tool(&mut server, "debug-stop", json!({"sessionId": id}));
    assert_eq!(stopped, json!({"sessionId": id, "stopped": true, "lastState": "exited"}));
    let error = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(error["code"], "no_session");
}

#[test]
fn variables_paths_and_setting_them() {
    let mut server = Server::initialized();
    let tag = tag();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "closure.js", ""),
        "breakpoints": [{"file": fixture("closure.js"), "line": 6}]}),
    );
    assert_eq!(state["reason"], "breakpoint", "{state}");
    let local = tool(&mut server, "debug-variables", json!({}));
    assert_eq!(local["scope"], "local");
    assert!(local["variables"].is_array());
    let all = tool(&mut server, "debug-variables", json!({"scope": "all"}));
    assert!(
        all["variables"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["scope"] == "closure" && v["name"] == "count"),
        "{all}"
    );
    let closure = tool(&mut server, "debug-variables", json!({"scope": "closure"}));
    let vars = &closure["variables"];
    assert!(
        vars.as_array()
            .unwrap()
            .contains(&json!({"name": "count", "type": "number", "value": 5, "expandable": false, "scope": "closure"})),
        "{closure}"
    );
    assert!(
        vars.as_array()
            .unwrap()
            .contains(&json!({"name": "step", "type": "number", "value": 5, "expandable": false, "scope": "closure"})),
        "{closure}"
    );

    let set = tool(
        &mut server,
        "debug-evaluate",
        json!({"set": "count", "expression": "100", "scope": "closure"}),
    );
    assert_eq!(
        set,
        json!({"sessionId": state["sessionId"], "name": "count", "type": "number", "value": 100})
    );
    let error = tool(&mut server, "debug-evaluate", json!({"set": "nosuch", "expression": "1"}));
    assert_eq!(error["code"], "no_variable", "{error}");
    // The program sees the change: the second call returns 105, not 10.
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["reason"], "breakpoint");
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "count"}));
    assert_eq!(value, json!({"type": "number", "value": 105}));
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);

    // Paths open what the compact view cuts.
    let tag = crate::tag();
    tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "loop.js", ""),
        "breakpoints": [{"file": fixture("loop.js"), "line": 5}]}),
    );
    let items = tool(&mut server, "debug-variables", json!({"path": "items", "maxItems": 2}));
    let vars = items["variables"].as_array().unwrap();
    assert_eq!(
        vars[0],
        json!({"name": "0", "type": "object", "value": "{price: 10, qty: 1}", "expandable": true})
    );
    assert_eq!(vars[2]["type"], "truncated", "{items}");
    let item = tool(&mut server, "debug-variables", json!({"path": "items[1]"}));
    assert_eq!(
        item["variables"],
        json!([
        {"name": "price", "type": "number", "value": 5, "expandable": false},
        {"name": "qty", "type": "number", "value": 3, "expandable": false}])
    );
    let error = tool(&mut server, "debug-variables", json!({"path": "nope.x"}));
    assert_eq!(error["code"], "invalid_path");
    let set = tool(&mut server, "debug-breakpoint", json!({"exceptions": "all"}));
    assert_eq!(set["pauseOnExceptions"], "all");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn breakpoints_logpoints_and_output() {
    let mut server = Server::initialized();
    let tag = tag();
    let command = node(&tag, "count.js", "20");
    let state = tool(&mut server, "debug-launch", json!({"command": command, "stopOnEntry": true}));
    assert_eq!(state["reason"], "entry", "{state}");
    // A logpoint (never stops) and a conditional breakpoint.
    let logpoint = tool(
        &mut server,
        "debug-breakpoint",
        json!({"file": fixture("count.js"), "line": 6,
        "logMessage": "i={i} square={square}"}),
    );
    assert_eq!(logpoint["breakpointId"], "1");
    assert_eq!(logpoint["verified"], true, "{logpoint}");
    assert_eq!(
        logpoint["resolved"],
        json!([{"file": fixture("count.js"), "line": 6, "column": 3}])
    );
    let conditional = tool(
        &mut server,
        "debug-breakpoint",
        json!({"file": fixture("count.js"), "line": 6,
        "condition": "i === 12"}),
    );
    assert_eq!(conditional["breakpointId"], "2");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(
        (state["reason"].as_str(), state["hitBreakpoints"].clone()),
        (Some("breakpoint"), json!(["2"])),
        "{state}"
    );
    let output = tool(&mut server, "debug-output", json!({}));
    let logs: Vec<&str> =
        output["console"].as_array().unwrap().iter().map(|c| c["text"].as_str().unwrap()).collect();
    assert_eq!(logs.len(), 13, "{output}");
    assert_eq!(logs[0], "i=0 square=0");
    assert_eq!(logs[12], "i=12 square=144");
    assert_eq!(output["console"][0]["type"], "logpoint");
    assert_eq!(output["console"][0]["breakpointId"], "1");
    let cursor = output["cursor"].as_str().unwrap().to_string();

    let list = tool(&mut server, "debug-breakpoint", json!({}));
    let list = list["breakpoints"].as_array().unwrap().clone();
    assert_eq!(
        (&list[0]["hits"], &list[0]["logMessage"]),
        (&json!(13), &json!("i={i} square={square}"))
    );
    assert_eq!((&list[1]["hits"], &list[1]["condition"]), (&json!(1), &json!("i === 12")));

    let removed = tool(&mut server, "debug-breakpoint", json!({"remove": "2"}));
    assert_eq!(removed["removed"], "2");
    let error = tool(&mut server, "debug-breakpoint", json!({"remove": "2"}));
    assert_eq!(error["code"], "no_breakpoint");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(
        (state["state"].as_str(), state["exitCode"].as_u64()),
        (Some("exited"), Some(0)),
        "{state}"
    );
    // Only what came after the cursor: the last 7 logpoint messages and the program's output.
    let output = tool(&mut server, "debug-output", json!({"since": cursor}));
    let logs: Vec<&str> =
        output["console"].as_array().unwrap().iter().map(|c| c["text"].as_str().unwrap()).collect();
    assert_eq!(logs.len(), 8, "{output}");
    assert_eq!(logs[0], "i=13 square=169");
    assert_eq!(output["stdout"], "sum 2470\n");
    assert_eq!(output["truncated"], false);
    let error = tool(&mut server, "debug-output", json!({"since": "x"}));
    assert_eq!(error["code"], "invalid_arguments");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn breakpoints_that_have_not_bound_say_why() {
    let mut server = Server::initialized();
    let tag = tag();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "hang.js", ""), "timeout": 100}),
    );
    assert_eq!(state["state"], "running");
    let bp = tool(&mut server, "debug-breakpoint", json!({"file": fixture("loop.js"), "line": 5}));
    assert_eq!(bp["verified"], false);
    assert_eq!(bp["resolved"], json!([]));
    assert!(
        bp["reason"].as_str().unwrap().starts_with("not bound yet; it binds when its script loads"),
        "{bp}"
    );
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn timeouts_return_running_and_pause_stops_anywhere() {
    let mut server = Server::initialized();
    let tag = tag();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "hang.js", ""), "timeout": 300}),
    );
    assert_eq!(state["state"], "running", "{state}");
    // Not "still running when the timeout passed": a launch or attach without breakpoints
    // asked for no timeout.
    assert_eq!(
        state["message"],
        "the program is running: nothing stopped it while this call waited. Call \
         debug-continue with `pause: true` to stop it, debug-continue to wait for the next \
         stop, or debug-output to read what it printed"
    );
    let error = server.call("debug-continue", json!({"step": "over"}));
    assert_eq!(error["structuredContent"]["code"], "running");
    let value =
        tool(&mut server, "debug-evaluate", json!({"expression": "typeof globalThis.lastTick"}));
    assert_eq!(value, json!({"type": "string", "value": "number"}));
    let state = tool(&mut server, "debug-continue", json!({"pause": true}));
    assert_eq!(
        (state["state"].as_str(), state["reason"].as_str()),
        (Some("paused"), Some("pause")),
        "{state}"
    );
    let state = tool(&mut server, "debug-continue", json!({"timeout": 200}));
    assert_eq!(state["state"], "running");
    let stopped = tool(&mut server, "debug-stop", json!({}));
    assert_eq!(stopped["stopped"], true);
    assert_no_debuggee(&tag);
}

#[test]
fn stop_on_entry_debugger_statements_and_exceptions() {
    let mut server = Server::initialized();
    let tag = tag();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "debugger_stmt.js", ""), "stopOnEntry": true}),
    );
    assert_eq!(
        (state["reason"].as_str(), state["location"]["line"].as_u64()),
        (Some("entry"), Some(2)),
        "{state}"
    );
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(
        (state["reason"].as_str(), state["location"]["line"].as_u64()),
        (Some("debugger"), Some(3)),
        "{state}"
    );
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);

    let tag = crate::tag();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "throws.js", ""), "pauseOnExceptions": "uncaught"}),
    );
    assert_eq!(state["reason"], "exception", "{state}");
    assert_eq!(state["exception"]["class"], "RangeError");
    assert_eq!(state["exception"]["message"], "RangeError: n too big: 3");
    assert_eq!(state["exception"]["uncaught"], true);
    assert!(state["exception"]["stack"].as_str().unwrap().starts_with("at check ("), "{state}");
    assert_eq!(state["location"]["line"], 3);
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!((state["state"].as_str(), state["exitCode"].as_u64()), (Some("exited"), Some(1)));
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn several_sessions_need_ids_and_server_exit_ends_them() {
    let mut server = Server::initialized();
    let (a, b) = (tag(), tag());
    let first = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&a, "loop.js", ""),
        "breakpoints": [{"file": fixture("loop.js"), "line": 5}]}),
    );
    let second = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&b, "hang.js", ""), "timeout": 100}),
    );
    assert_ne!(first["sessionId"], second["sessionId"]);
    let error = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(error["code"], "no_session");
    assert!(error["error"].as_str().unwrap().starts_with("2 sessions are open"), "{error}");
    let value = tool(
        &mut server,
        "debug-evaluate",
        json!({"sessionId": first["sessionId"], "expression": "total"}),
    );
    assert_eq!(value, json!({"type": "number", "value": 0}));
    let error = tool(&mut server, "debug-stack", json!({"sessionId": "s999"}));
    assert!(
        error["error"].as_str().unwrap().starts_with("no session s999: open sessions are"),
        "{error}"
    );
    assert_eq!(
        tool(&mut server, "debug-sessions", json!({}))["sessions"].as_array().unwrap().len(),
        2
    );
    let (status, took) = server.close();
    assert_eq!(status.code(), Some(0));
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
    assert_no_debuggee(&a);
    assert_no_debuggee(&b);
}

#[test]
fn launch_failures_are_clear() {
    let mut server = Server::initialized();
    let error = tool(&mut server, "debug-launch", json!({"command": "no-such-program-x"}));
    assert_eq!(error["code"], "command_not_found");
    let error = tool(
        &mut server,
        "debug-launch",
        json!({"command": "node x.js", "breakpoints": [{"file": fixture("loop.js"), "line": 99}]}),
    );
    assert_eq!(error["code"], "line_out_of_range");
    let error = tool(
        &mut server,
        "debug-launch",
        json!({"command": "node x.js", "breakpoints": [{"line": 3}]}),
    );
    assert_eq!(error["error"], "invalid argument `breakpoints[0].file`: required");
    let error = tool(
        &mut server,
        "debug-launch",
        json!({"command": "node x.js", "pauseOnExceptions": "some"}),
    );
    assert_eq!(
        error["error"],
        "invalid argument `pauseOnExceptions`: expected one of none, uncaught, userUnhandled, all, got \"some\""
    );
    let error = tool(&mut server, "debug-continue", json!({"step": "sideways"}));
    assert_eq!(error["code"], "invalid_arguments");
    // The program ends before any stop: the launch says so with the exit code.
    let tag = tag();
    let state =
        tool(&mut server, "debug-launch", json!({"command": node(&tag, "syntax_error.js", "")}));
    assert_eq!(
        (state["state"].as_str(), state["exitCode"].as_u64()),
        (Some("exited"), Some(1)),
        "{state}"
    );
    assert!(state["stderr"].as_str().unwrap().contains("SyntaxError"));
    assert_no_debuggee(&tag);
}

#[test]
fn cancelling_a_waiting_call_leaves_the_session_usable() {
    let mut server = Server::initialized();
    let tag = tag();
    let launched = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "hang.js", ""), "timeout": 100}),
    );
    assert_eq!(launched["state"], "running", "{launched}");
    let waiting = server.start_request(
        "tools/call",
        json!({"name": "debug-continue", "arguments": {"timeout": 60000}}),
    );
    eventually(Duration::from_secs(5), "the debuggee runs", || {
        !processes_with_tag(&tag).is_empty()
    });
    server.notify("notifications/cancelled", json!({"requestId": waiting}));
    // The cancelled call gets no answer; the session still answers.
    let state = tool(&mut server, "debug-sessions", json!({}));
    assert_eq!(state["sessions"][0]["state"], "running");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// Starts `node [flags] fixtures/hang.js` outside the server, as a program to attach to.
fn running_program(tag: &str, flags: &[&str]) -> (Program, Option<String>) {
    let mut command = std::process::Command::new("node");
    command.args(flags).arg(fixture("hang.js")).env("DMCP_TAG", tag);
    if flags.is_empty() {
        let program = Program::spawn(command.stdout(std::process::Stdio::null()));
        return (program, None);
    }
    let (program, url) = running(&mut command);
    (program, Some(url))
}

/// Starts a node `command` that opens its inspector, and the inspector's URL from its stderr.
pub fn running(command: &mut std::process::Command) -> (Program, String) {
    use std::io::BufRead;
    let mut program = Program::spawn(
        command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()),
    );
    let stderr = program.0.stderr.take().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stderr).read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("Debugger listening on ").map(String::from);
    (program, url.unwrap_or_else(|| panic!("no inspector URL in {line:?}")))
}

#[test]
fn attach_by_url_and_port_never_kills_the_program() {
    let mut server = Server::initialized();
    let tag = tag();
    let (mut program, url) = running_program(&tag, &["--inspect=127.0.0.1:0"]);
    let child = &mut program.0;
    let url = url.unwrap();
    let state = tool(&mut server, "debug-launch", json!({"url": url}));
    assert_eq!(state["state"], "running", "{state}");
    assert_eq!(state["attached"]["url"], url.as_str());
    let state = tool(&mut server, "debug-continue", json!({"pause": true}));
    assert_eq!(state["state"], "paused", "{state}");
    // A pause lands wherever the program is, now and then in Node's own code: evaluate at a
    // line of the program's.
    let set = json!({"file": fixture("hang.js"), "line": 4});
    tool(&mut server, "debug-breakpoint", set);
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["location"]["line"], 4, "{state}");
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "process.pid"}));
    assert_eq!(value, json!({"type": "number", "value": child.id()}));
    let stopped = tool(&mut server, "debug-stop", json!({}));
    assert_eq!(stopped["stopped"], true);
    // Detached, not killed; and it runs on (not left paused).
    std::thread::sleep(Duration::from_millis(100));
    assert!(child.try_wait().unwrap().is_none(), "attach must never kill the target");

    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap().parse::<u64>().unwrap();
    let state = tool(&mut server, "debug-launch", json!({"port": port}));
    assert_eq!(state["state"], "running", "{state}");
    tool(&mut server, "debug-stop", json!({}));
    assert!(child.try_wait().unwrap().is_none());
    drop(program);
    assert_no_debuggee(&tag);
}

/// A `node --inspect-brk` program attached to with a breakpoint at hang.js:5: the program,
/// and the attach's answer, which is the stop there.
fn attached_with_a_breakpoint(server: &mut Server, tag: &str) -> (Program, Value) {
    let (program, url) = running_program(tag, &["--inspect-brk=127.0.0.1:0"]);
    let breakpoints = json!([{"file": fixture("hang.js"), "line": 5}]);
    let state = tool(server, "debug-launch", json!({"url": url, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "paused", "{state}");
    (program, state)
}

#[test]
fn attach_with_breakpoints_answers_with_the_first_stop() {
    let mut server = Server::initialized();
    let tag = tag();
    let (program, state) = attached_with_a_breakpoint(&mut server, &tag);
    assert_eq!(state["hitBreakpoints"], json!(["1"]), "{state}");
    assert_eq!(state["location"]["line"], 5);
    tool(&mut server, "debug-stop", json!({}));
    drop(program);
    assert_no_debuggee(&tag);
}

#[test]
fn an_attached_program_that_ends_answers_the_same_exited_shape() {
    let mut server = Server::initialized();
    let tag = tag();
    let (program, _) = attached_with_a_breakpoint(&mut server, &tag);
    // The program ends itself; the request that ends it may go unanswered.
    let _ = tool(&mut server, "debug-evaluate", json!({"expression": "process.exit(3)"}));
    let state = tool(&mut server, "debug-continue", json!({"timeout": 10000}));
    assert_eq!(state["state"], "exited", "{state}");
    // As a launched or an attached Python program's: output fields (empty: its output is its
    // own) and a message that says what cannot be known.
    assert_eq!((&state["stdout"], &state["stderr"]), (&json!(""), &json!("")), "{state}");
    assert!(state["message"].as_str().unwrap().contains("attached"), "{state}");
    assert!(state.get("exitCode").is_none() && state.get("signal").is_none(), "{state}");
    tool(&mut server, "debug-stop", json!({}));
    drop(program);
    assert_no_debuggee(&tag);
}

#[test]
fn attach_by_pid_opens_the_inspector() {
    // SIGUSR1 makes Node listen on 127.0.0.1:9229, a fixed port: when anything else on the
    // machine holds it, this cannot be tested here.
    if let Err(e) = std::net::TcpListener::bind("127.0.0.1:9229") {
        eprintln!("skipped attach_by_pid_opens_the_inspector: 127.0.0.1:9229 is taken ({e})");
        return;
    }
    let mut server = Server::initialized();
    let tag = tag();
    let (mut program, _) = running_program(&tag, &[]);
    let child = &mut program.0;
    // Give node a moment to install its SIGUSR1 handler: wait until it runs the program.
    eventually(Duration::from_secs(10), "node starts", || {
        std::fs::read_to_string(format!("/proc/{}/status", child.id()))
            .is_ok_and(|s| s.contains("Threads:\t") && !s.contains("Threads:\t1\n"))
    });
    std::thread::sleep(Duration::from_millis(300));
    let state = tool(&mut server, "debug-launch", json!({"pid": child.id()}));
    assert_eq!(state["state"], "running", "{state}");
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "process.pid"}));
    assert_eq!(value["value"], child.id());
    tool(&mut server, "debug-stop", json!({}));
    assert!(child.try_wait().unwrap().is_none());
    drop(program);
    assert_no_debuggee(&tag);
}

#[test]
fn attach_refuses_other_hosts_and_explains_misses() {
    let mut server = Server::initialized();
    let error = tool(&mut server, "debug-launch", json!({"url": "ws://10.1.2.3:9229/abc"}));
    assert_eq!(error["code"], "host_not_allowed");
    assert!(error["error"].as_str().unwrap().contains("DEBUG_MCP_ALLOWED_HOSTS"));
    let error = tool(&mut server, "debug-launch", json!({"port": 9, "host": "example.com"}));
    assert_eq!(error["code"], "host_not_allowed");
    let error = tool(&mut server, "debug-launch", json!({"url": "ws://127.0.0.1:1/x", "port": 3}));
    assert_eq!(
        error["error"],
        "invalid argument `url`: give exactly one of `url`, `port` or `pid`"
    );
    let free = free_port();
    let error = tool(&mut server, "debug-launch", json!({"port": free}));
    assert_eq!(error["code"], "no_inspector", "{error}");
}

#[test]
fn resources_and_subscriptions_follow_sessions() {
    let mut server = Server::initialized();
    let listed = server.request("resources/list", json!({}))["result"].clone();
    assert_eq!(listed["resources"].as_array().unwrap().len(), 1);
    assert_eq!(listed["resources"][0]["uri"], "debug://sessions");
    let templates = server.request("resources/templates/list", json!({}))["result"].clone();
    assert_eq!(templates["resourceTemplates"][0]["uriTemplate"], "debug://sessions/{id}");
    let subscribed = server.request("resources/subscribe", json!({"uri": "debug://sessions/s1"}));
    assert_eq!(subscribed["result"], json!({}));

    let tag = tag();
    tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "loop.js", ""),
        "breakpoints": [{"file": fixture("loop.js"), "line": 5}]}),
    );
    let updates = server
        .notifications
        .iter()
        .filter(|n| {
            n["method"] == "notifications/resources/updated"
                && n["params"]["uri"] == "debug://sessions/s1"
        })
        .count();
    assert!(updates >= 1, "{:?}", server.notifications);
    assert!(server
        .notifications
        .iter()
        .any(|n| n["method"] == "notifications/resources/list_changed"));

    let read =
        server.request("resources/read", json!({"uri": "debug://sessions/s1"}))["result"].clone();
    let content: Value =
        serde_json::from_str(read["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(read["contents"][0]["mimeType"], "application/json");
    assert_eq!(content["state"], "paused");
    assert_eq!(content["location"]["line"], 5);
    assert_eq!(content["breakpoints"][0]["breakpointId"], "1");
    let all =
        server.request("resources/read", json!({"uri": "debug://sessions"}))["result"].clone();
    assert!(all["contents"][0]["text"].as_str().unwrap().contains("\"sessionId\":\"s1\""));
    assert_eq!(
        server.request("resources/list", json!({}))["result"]["resources"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let missing = server.request("resources/read", json!({"uri": "debug://sessions/s9"}));
    assert_eq!(missing["error"]["code"], -32002);

    server.notifications.clear();
    tool(&mut server, "debug-continue", json!({}));
    assert!(server.notifications.iter().any(|n| n["params"]["uri"] == "debug://sessions/s1"));
    server.request("resources/unsubscribe", json!({"uri": "debug://sessions/s1"}));
    server.notifications.clear();
    tool(&mut server, "debug-continue", json!({}));
    assert!(!server.notifications.iter().any(|n| n["params"]["uri"] == "debug://sessions/s1"));
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn prompts_tell_agents_which_tools_to_call() {
    let mut server = Server::initialized();
    let prompts = server.request("prompts/list", json!({}))["result"]["prompts"].clone();
    let names: Vec<&str> =
        prompts.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["analyze-crash", "investigate-condition"]);
    let got = server.request(
        "prompts/get",
        json!({"name": "investigate-condition",
        "arguments": {"sessionId": "s1", "expression": "total > 20"}}),
    )["result"]
        .clone();
    let text = got["messages"][0]["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("session s1")
            && text.contains("`total > 20`")
            && text.contains("debug-breakpoint"),
        "{text}"
    );
    let missing = server.request("prompts/get", json!({"name": "analyze-crash", "arguments": {}}));
    assert_eq!(missing["error"]["code"], -32602);
    assert_eq!(missing["error"]["message"], "the prompt needs the argument `sessionId`");
    let unknown = server.request("prompts/get", json!({"name": "nope"}));
    assert_eq!(unknown["error"]["code"], -32602);
}

#[test]
fn ten_sessions_at_once_and_no_more() {
    let mut server = Server::initialized();
    let tags: Vec<String> = (0..10).map(|_| tag()).collect();
    for tag in &tags {
        let state = tool(
            &mut server,
            "debug-launch",
            json!({"command": node(tag, "hang.js", ""), "timeout": 50}),
        );
        assert_eq!(state["state"], "running", "{state}");
    }
    let extra = tag();
    let error = tool(&mut server, "debug-launch", json!({"command": node(&extra, "hang.js", "")}));
    assert_eq!(error["code"], "too_many_sessions");
    assert_eq!(
        error["error"],
        "10 sessions of this client are open (the most at once): end one with debug-stop"
    );
    assert_eq!(
        tool(&mut server, "debug-sessions", json!({}))["sessions"].as_array().unwrap().len(),
        10
    );
    for i in 1..=10 {
        let value = tool(
            &mut server,
            "debug-evaluate",
            json!({"sessionId": format!("s{i}"), "expression": "typeof setInterval"}),
        );
        assert_eq!(value["value"], "function");
    }
    let (status, _) = server.close();
    assert_eq!(status.code(), Some(0));
    for tag in tags.iter().chain([&extra]) {
        assert_no_debuggee(tag);
    }
}

#[test]
fn limits_are_configurable_and_idle_sessions_end() {
    let mut server = Server::start_with(&[
        ("DEBUG_MCP_MAX_SESSIONS", "1"),
        ("DEBUG_MCP_SESSION_IDLE_MS", "400"),
    ]);
    server.request("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}));
    let tag = tag();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "hang.js", ""), "timeout": 50}),
    );
    assert_eq!(state["state"], "running");
    let error =
        tool(&mut server, "debug-launch", json!({"command": node(&crate::tag(), "hang.js", "")}));
    assert_eq!(error["code"], "too_many_sessions");
    // No call for 400 ms: the program is killed, the session says why.
    eventually(Duration::from_secs(10), "the idle session ends", || {
        processes_with_tag(&tag).is_empty()
    });
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert!(state["message"]
        .as_str()
        .unwrap()
        .starts_with("ended by debug-mcp: no call came for the idle limit"));
}

#[test]
fn async_callers_appear_in_the_stack() {
    let mut server = Server::initialized();
    let tag = tag();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "async.js", ""),
        "breakpoints": [{"file": fixture("async.js"), "line": 7}]}),
    );
    assert_eq!(state["reason"], "breakpoint", "{state}");
    let stack = tool(&mut server, "debug-stack", json!({}));
    let frames = stack["frames"].as_array().unwrap();
    assert_eq!((&frames[0]["function"], &frames[0]["line"]), (&json!("fetchAll"), &json!(7)));
    // After `await sleep(1)`, the only synchronous frame is fetchAll; its caller is async.
    assert_eq!(
        frames[1],
        json!({"function": "(anonymous)", "file": fixture("async.js"), "line": 11,
        "column": 1, "index": 1, "async": "await"})
    );
    let without = tool(&mut server, "debug-stack", json!({"includeAsync": false}));
    assert!(without["frames"].as_array().unwrap().iter().all(|f| f.get("async").is_none()));
    tool(&mut server, "debug-stop", json!({}));

    // A handler a router called synchronously (express's shape), after its `await`: the first
    // caller marks where it continues (`await`); the callers after it called it synchronously
    // and are not marked (they were all `await`); `totalFrames` counts every frame (it said 1).
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "async_handler.js", ""),
        "breakpoints": [{"file": fixture("async_handler.js"), "line": 7}]}),
    );
    assert_eq!(state["reason"], "breakpoint", "{state}");
    let stack = tool(&mut server, "debug-stack", json!({}));
    let frames: Vec<(&Value, &Value, Option<&Value>)> = stack["frames"]
        .as_array()
        .unwrap()
        .iter()
        .take(4)
        .map(|f| (&f["function"], &f["line"], f.get("async")))
        .collect();
    assert_eq!(
        frames,
        [
            (&json!("handler"), &json!(7), None),
            (&json!("dispatch"), &json!(12), Some(&json!("await"))),
            (&json!("route"), &json!(16), None),
            (&json!("(anonymous)"), &json!(19), None)
        ],
        "{stack}"
    );
    // Node's own loader frames follow the program's.
    let listed = stack["frames"].as_array().unwrap().len();
    assert_eq!(stack["totalFrames"], listed, "{stack}");
    let two = tool(&mut server, "debug-stack", json!({"maxFrames": 2}));
    assert_eq!(two["frames"].as_array().unwrap().len(), 2, "{two}");
    assert_eq!(two["totalFrames"], listed, "{two}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn step_into_and_out_of_a_call() {
    let mut server = Server::initialized();
    let tag = tag();
    let command = format!("DMCP_TAG={tag} node {}", ts_file("dist/app.js"));
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": command,
        "breakpoints": [{"file": ts_file("src/app.ts"), "line": 22}]}),
    );
    assert_eq!(state["location"]["line"], 22, "{state}");
    let state = tool(&mut server, "debug-continue", json!({"step": "into"}));
    assert_eq!(
        (state["reason"].as_str(), state["location"]["function"].as_str()),
        (Some("step"), Some("lineTotal")),
        "{state}"
    );
    assert_eq!(state["location"]["file"], ts_file("src/pricing.ts"));
    assert_eq!(state["location"]["line"], 16);
    // Out of lineTotal: back in the caller, at its next statement (the call on line 22 is done).
    let state = tool(&mut server, "debug-continue", json!({"step": "out"}));
    assert_eq!(state["location"]["file"], ts_file("src/app.ts"), "{state}");
    assert_eq!(state["location"]["line"], 23);
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// The pipe inodes (`pipe:[N]`) among a process's descriptors.
fn pipes_of(pid: u32) -> std::collections::BTreeSet<String> {
    let mut pipes = std::collections::BTreeSet::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().flatten() {
        if let Ok(target) = std::fs::read_link(fd.path()) {
            let target = target.display().to_string();
            if target.starts_with("pipe:") {
                pipes.insert(target);
            }
        }
    }
    pipes
}

#[test]
fn a_debuggee_holds_no_descriptor_of_the_server_but_its_output() {
    let mut server = Server::initialized();
    let tag = tag();
    let state = launch(&mut server, &node(&tag, "loop.js", ""), &fixture("loop.js"), 5);
    assert_eq!(state["state"], "paused", "{state}");
    let debuggee = processes_with_tag(&tag);
    assert_eq!(debuggee.len(), 1, "{debuggee:?}");
    let shared: Vec<String> =
        pipes_of(debuggee[0]).intersection(&pipes_of(server.pid())).cloned().collect();
    // stdout and stderr; the server's wake and signal pipes stay its own.
    let fds = |pid: u32| -> Vec<(String, String)> {
        let mut fds: Vec<(String, String)> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .flatten()
            .filter_map(|fd| {
                let target = std::fs::read_link(fd.path()).ok()?.display().to_string();
                Some((fd.file_name().to_string_lossy().into_owned(), target))
            })
            .collect();
        fds.sort();
        fds
    };
    assert_eq!(
        shared.len(),
        2,
        "{shared:?}\ndebuggee {:?}\nserver {:?}",
        fds(debuggee[0]),
        fds(server.pid())
    );
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// A field is accepted only where the schema declares it: `sessionId` belongs to
/// debug-set-breakpoint's arguments, not to an entry of `breakpoints`.
#[test]
fn breakpoint_entries_take_only_their_declared_fields() {
    let mut server = Server::initialized();
    let error = tool(
        &mut server,
        "debug-launch",
        json!({"command": "node x.js",
               "breakpoints": [{"file": fixture("loop.js"), "line": 5, "sessionId": "s1"}]}),
    );
    assert_eq!(error["code"], "invalid_arguments");
    assert_eq!(error["field"], "breakpoints[0].sessionId");
}

/// The tools that do several things say which by their fields, refuse two at once, and their
/// former names (debug-step, debug-set-breakpoint, ...) still answer as they did.
#[test]
fn merged_tools_and_their_former_names() {
    let mut server = Server::initialized();
    let tag = tag();
    let file = fixture("loop.js");
    let state = launch(&mut server, &node(&tag, "loop.js", ""), &file, 5);
    assert_eq!(state["reason"], "breakpoint", "{state}");

    let listed = tool(&mut server, "debug-breakpoint", json!({}));
    assert_eq!(listed["breakpoints"].as_array().unwrap().len(), 1, "{listed}");
    let set = json!({"file": file, "line": 7, "logMessage": "total {total}"});
    let added = tool(&mut server, "debug-breakpoint", set);
    assert_eq!((&added["breakpointId"], &added["verified"]), (&json!("2"), &json!(true)));
    let removed = tool(&mut server, "debug-breakpoint", json!({"remove": "2"}));
    assert_eq!(removed["removed"], "2", "{removed}");
    let exceptions = tool(&mut server, "debug-breakpoint", json!({"exceptions": "uncaught"}));
    assert_eq!(exceptions["pauseOnExceptions"], "uncaught", "{exceptions}");
    let both = tool(&mut server, "debug-breakpoint", json!({"remove": "1", "exceptions": "all"}));
    assert_eq!(
        (&both["code"], &both["field"]),
        (&json!("invalid_arguments"), &json!("exceptions"))
    );
    let libraries = tool(&mut server, "debug-breakpoint", json!({"includeLibraries": true}));
    assert_eq!(libraries["field"], "includeLibraries", "{libraries}");

    let set = tool(&mut server, "debug-evaluate", json!({"set": "total", "expression": "100"}));
    assert_eq!((&set["name"], &set["value"]), (&json!("total"), &json!(100)), "{set}");
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "total"}));
    assert_eq!(value, json!({"type": "number", "value": 100}));
    let scope = tool(&mut server, "debug-evaluate", json!({"expression": "1", "scope": "local"}));
    assert_eq!(scope["field"], "scope", "{scope}");

    let stack = tool(&mut server, "debug-stack", json!({}));
    assert_eq!(stack["frames"][0]["line"], 5, "{stack}");
    assert!(stack.get("threads").is_none(), "one thread: {stack}");
    let scripts = tool(&mut server, "debug-source", json!({}));
    let files: Vec<&Value> =
        scripts["scripts"].as_array().unwrap().iter().map(|s| &s["file"]).collect();
    assert!(files.contains(&&json!(file)), "{scripts}");
    let lines = tool(&mut server, "debug-source", json!({"file": file, "line": 5, "context": 0}));
    assert_eq!(lines["lines"][0]["line"], 5, "{lines}");

    let two = tool(&mut server, "debug-continue", json!({"step": "over", "pause": true}));
    assert_eq!(two["code"], "invalid_arguments", "{two}");
    let stepped = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!((&stepped["reason"], &stepped["location"]["line"]), (&json!("step"), &json!(4)));

    // The former names: the same answers.
    let removed = tool(&mut server, "debug-remove-breakpoint", json!({"breakpointId": "1"}));
    assert_eq!(removed["removed"], "1", "{removed}");
    let listed = tool(&mut server, "debug-list-breakpoints", json!({}));
    assert_eq!(listed["breakpoints"], json!([]), "{listed}");
    let stepped = tool(&mut server, "debug-step", json!({"kind": "over"}));
    assert_eq!((&stepped["reason"], &stepped["location"]["line"]), (&json!("step"), &json!(5)));
    let set = tool(&mut server, "debug-set-variable", json!({"name": "total", "value": "7"}));
    assert_eq!(set["value"], 7, "{set}");
    let scripts = tool(&mut server, "debug-scripts", json!({}));
    assert!(scripts["scripts"].is_array(), "{scripts}");
    let exceptions = tool(&mut server, "debug-pause-on-exceptions", json!({"state": "none"}));
    assert_eq!(exceptions["pauseOnExceptions"], "none", "{exceptions}");
    let end = tool(&mut server, "debug-continue", json!({}));
    assert_eq!((&end["state"], &end["stdout"]), (&json!("exited"), &json!("total 32\n")), "{end}");
    tool(&mut server, "debug-stop", json!({}));

    // Attaching and launching are one tool; their fields do not mix.
    let mixed = tool(&mut server, "debug-launch", json!({"command": "node x.js", "pid": 1}));
    assert_eq!((&mixed["code"], &mixed["field"]), (&json!("invalid_arguments"), &json!("command")));
    let mixed = tool(&mut server, "debug-launch", json!({"command": "node x.js", "target": "x"}));
    assert_eq!(mixed["field"], "target", "{mixed}");
    assert_no_debuggee(&tag);
}

/// A stop that came while no call waited (the launch had answered `running`) is what the next
/// `debug-continue` answers, not passed by: Node and Python alike. Once shown, the next call
/// goes on.
#[test]
fn a_stop_no_answer_showed_is_reported_by_the_next_call() {
    let tag = tag();
    let python_file = crate::python::py("late_stop.py");
    let programs = [
        (node(&tag, "late_stop.js", ""), fixture("late_stop.js"), 3),
        (format!("DMCP_TAG={tag} {} '{python_file}'", crate::need::python()), python_file, 6),
    ];
    for (command, file, line) in programs {
        let mut server = Server::initialized();
        let state = tool(
            &mut server,
            "debug-launch",
            json!({"command": command, "timeout": 100,
                   "breakpoints": [{"file": file, "line": line}]}),
        );
        assert_eq!(state["state"], "running", "{state}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while tool(&mut server, "debug-sessions", json!({}))["sessions"][0]["state"] != "paused" {
            assert!(Instant::now() < deadline, "{command}: never paused");
            std::thread::sleep(Duration::from_millis(50));
        }
        let state = tool(&mut server, "debug-continue", json!({"timeout": 3000}));
        assert_eq!(
            (state["state"].as_str(), state["reason"].as_str(), state["location"]["line"].as_u64()),
            (Some("paused"), Some("breakpoint"), Some(line)),
            "{command}: {state}"
        );
        assert!(state["message"].as_str().unwrap().contains("before this call came"), "{state}");
        let state = tool(&mut server, "debug-continue", json!({"timeout": 10000}));
        assert_eq!(state["state"], "exited", "{command}: {state}");
        assert!(state["stdout"].as_str().unwrap().contains("answer 42"), "{state}");
    }
    assert_no_debuggee(&tag);
}
