//! `debug-script` for Python programs through real debugpy.
//!
//! The interpreter comes from `need::python`: `DEBUG_MCP_TEST_PYTHON` (.ci/run sets it), else
//! `target/venv`, made with debugpy, pytest and pytest-xdist on first use.

use std::sync::mpsc;

use serde_json::{json, Value};

use crate::{
    assert_no_debuggee, err, fixture, free_port, local, ok, plain_results, root, run_script, tag,
    tool, values, Program, Server, DEADLINE,
};

pub use crate::need::python;

/// pytest through the test venv's console script, quiet, without its cache, on `args`.
pub fn pytest(tag: &str, args: &str) -> String {
    let pytest = std::path::Path::new(&python()).with_file_name("pytest");
    format!("DMCP_TAG={tag} {} -q -p no:cacheprovider {args}", pytest.display())
}

pub fn py(name: &str) -> String {
    fixture(&format!("py/{name}"))
}

/// pyenv's CPython 3.7 and later on this machine (CI has none), with their `3.N` versions.
pub fn pyenv_pythons() -> Vec<(std::path::PathBuf, String)> {
    let versions =
        std::fs::read_dir("/root/.pyenv/versions").map(|d| d.flatten().collect::<Vec<_>>());
    let mut interpreters: Vec<std::path::PathBuf> = versions
        .unwrap_or_default()
        .into_iter()
        .map(|e| e.path().join("bin/python3"))
        .filter(|p| p.exists())
        .collect();
    interpreters.sort();
    let mut found = Vec::new();
    for python in interpreters {
        let version = std::process::Command::new(&python)
            .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
            .output()
            .unwrap();
        let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
        let minor: u32 = version.strip_prefix("3.").and_then(|m| m.parse().ok()).unwrap_or(0);
        if minor >= 7 {
            found.push((python, version));
        }
    }
    found
}

fn script(name: &str, args: &str, line: u64, expression: &str) -> Value {
    run_script(json!({
        "command": format!("DMCP_TAG={} {} '{}' {args}", tag(), python(), py(name)),
        "breakpoint": {"file": py(name), "line": line},
        "expression": expression,
    }))
}

#[test]
fn hits_in_order_with_exit_and_output() {
    let result = script("loop.py", "", 5, "total");
    let s = ok(&result);
    assert_eq!(
        plain_results(s),
        json!([{"type": "int", "value": 0}, {"type": "int", "value": 10}, {"type": "int", "value": 25}])
    );
    assert_eq!(s["breakpoint"], json!({"file": py("loop.py"), "line": 5, "resolvedLine": 5}));
    assert_eq!(s["exitCode"], 0);
    assert_eq!(s["output"], json!({"stdout": "total 35.0\n", "stderr": "", "truncated": false}));
}

#[test]
fn python_values_by_type() {
    let cases: &[(&str, Value)] = &[
        ("number", json!({"type": "int", "value": 42})),
        ("text", json!({"type": "str", "value": "hello"})),
        ("nothing", json!({"type": "NoneType", "value": null})),
        ("nan", json!({"type": "float", "value": "nan"})),
        ("mapping", json!({"type": "dict", "value": {"a": [1, 2], "b": null}})),
        ("point", json!({"type": "Point", "value": "Point(x=1, y=2)"})),
        ("pair", json!({"type": "tuple", "value": [1, "two"]})),
        ("unique", json!({"type": "set", "value": "{3}"})),
        ("loop", json!({"type": "list", "value": "[[...]]"})),
        ("{'k': number, 'f': 1.5}", json!({"type": "dict", "value": {"k": 42, "f": 1.5}})),
        ("nope", json!({"type": "error", "value": "NameError: name 'nope' is not defined"})),
        ("1/0", json!({"type": "error", "value": "ZeroDivisionError: division by zero"})),
        ("'x' * 100000", json!({"type": "str", "value": null})),
    ];
    // One program, stopped once: every value through the same probe debug-script uses
    // (debug-evaluate), instead of a debugpy launch per value.
    let mut server = Server::initialized();
    let tag = tag();
    let breakpoints = json!({"breakpoints": [{"file": py("values.py"), "line": 23}]});
    let state = launch(&mut server, &tag, "values.py", "", breakpoints);
    assert_eq!(state["state"], "paused", "{state}");
    for (expression, expected) in cases {
        let got = tool(&mut server, "debug-evaluate", json!({"expression": expression}));
        if expected["value"].is_null() && expected["type"] == "str" {
            // Large values are cut and say so.
            let value = got["value"].as_str().unwrap();
            assert!(
                value.ends_with("… [truncated: 100002 chars]"),
                "{}",
                &value[value.len() - 40..]
            );
        } else {
            assert_eq!(&got, expected, "expression: {expression}");
        }
    }
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
    // And once through debug-script itself, where a cut value marks the answer.
    let result = server.debug_script(json!({
        "command": format!("DMCP_TAG={tag} {} {}", python(), py("values.py")),
        "breakpoint": {"file": py("values.py"), "line": 23},
        "expression": "'x' * 100000",
    }));
    let got = &ok(&result)["results"][0];
    assert_eq!(got["type"], "str");
    assert_eq!(ok(&result)["valuesTruncated"], true, "{got}");
    assert_no_debuggee(&tag);
}

#[test]
fn many_hits_caps_and_conditions() {
    let result = script("count.py", "2000", 7, "i");
    let got = values(ok(&result));
    assert_eq!(got.len(), 2000);
    assert!(got.iter().enumerate().all(|(i, v)| *v == json!(i)), "hits out of order");
    assert_eq!(ok(&result)["output"]["stdout"], "sum 2664667000\n");

    let result = run_script(json!({
        "command": format!("DMCP_TAG={} {} {} 500", tag(), python(), py("count.py")),
        "breakpoint": {"file": py("count.py"), "line": 7, "condition": "i % 100 == 0"},
        "expression": "i", "maxHits": 3,
    }));
    let s = ok(&result);
    assert_eq!(values(s), [json!(0), json!(100), json!(200)]);
    assert_eq!(s["hitsCapped"], true);
    assert_eq!(s["output"]["stdout"], "sum 41541750\n", "the program runs to its end");
}

#[test]
fn exit_mid_run_modules_and_stacks() {
    let result = script("exit_mid.py", "", 7, "i");
    let s = ok(&result);
    assert_eq!(values(s), [json!(0), json!(1), json!(2)]);
    assert_eq!(s["exitCode"], 3);

    // `python -m pkg`, from the package's parent directory.
    let mut server = Server::start_in(&root().join("fixtures/py"), &[]);
    server.request("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}));
    let module_tag = tag();
    let result = server.debug_script(json!({
        "command": format!("DMCP_TAG={module_tag} {} -m pkg", python()),
        "breakpoint": {"file": "pkg/__main__.py", "line": 4}, "expression": "word"}));
    assert_eq!(values(ok(&result)), [json!("a"), json!("bb")]);
    assert_no_debuggee(&module_tag);

    let result = run_script(json!({
        "command": format!("DMCP_TAG={} {} {}", tag(), python(), py("values.py")),
        "breakpoint": {"file": py("values.py"), "line": 23}, "expression": "number", "includeStack": true}));
    let s = ok(&result);
    assert_eq!(s["results"][0]["type"], "int");
    assert_eq!(
        s["results"][0]["stack"][0],
        json!({"function": "inspect", "file": py("values.py"), "line": 23})
    );
    assert_eq!(s["results"][0]["stack"][1]["function"], "<module>");
}

#[test]
fn failures_say_what_to_do() {
    let result = script("syntax_error.py", "", 3, "1");
    let e = err(&result);
    assert_eq!(e["error"], "Process exited before breakpoint was hit");
    assert_eq!(e["exitCode"], 1);
    assert!(e["output"]["stderr"].as_str().unwrap().contains("SyntaxError"), "{e}");

    let result = script("loop.py", "", 99, "1");
    assert_eq!(err(&result)["code"], "line_out_of_range");

    // An interpreter that ignores our PYTHONPATH behind a wrapper (isolated mode, so it also
    // sees no site-packages): debug-script needs no debugpy, but no Python process of it
    // starts the probes, and the hint says so; a session needs debugpy, and says so.
    let dir = std::env::temp_dir().join(format!("dmcp-nodebugpy-{}", tag()));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("python3");
    std::fs::write(&fake, "#!/bin/sh\nexec python3 -I -S \"$@\"\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let result = run_script(json!({
        "command": format!("{} {}", fake.display(), py("loop.py")),
        "breakpoint": {"file": py("loop.py"), "line": 5}, "expression": "1"}));
    let e = err(&result);
    assert_eq!(e["code"], "exited", "{e}");
    // (Here python3 may be pyenv's shim: a shell script, said undebugged in the hint.)
    let hint = e["hint"].as_str().unwrap();
    assert!(
        hint.contains("could not be followed")
            || hint.starts_with("no Python process of the program started with the probes"),
        "{e}"
    );
    assert!(e.get("processes").is_none(), "{e}");
    let mut server = Server::initialized();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": format!("{} {}", fake.display(), py("loop.py")),
        "breakpoints": [{"file": py("loop.py"), "line": 5}]}),
    );
    // debug-mcp's own debugger never started: the program ran to its end, and the failure
    // says why and what to do.
    assert_eq!(state["code"], "adapter_failed", "{state}");
    let error = state["error"].as_str().unwrap();
    assert!(error.contains("did not load debug-mcp's sitecustomize.py"), "{state}");
    assert!(error.ends_with("It said: total 35.0"), "{state}");
    // Asked for, debugpy is missing there, and the failure says how to install it.
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": format!("{} {}", fake.display(), py("loop.py")), "language": "debugpy",
        "breakpoints": [{"file": py("loop.py"), "line": 5}]}),
    );
    assert_eq!(state["code"], "no_debugpy", "{state}");
    assert_eq!(state["error"], format!("debugpy is not installed for {}: run `{} -m pip install debugpy` (or set DEBUG_MCP_DEBUGPY_PYTHON to an interpreter that has it)", fake.display(), fake.display()));
    drop(server);
    // DEBUG_MCP_DEBUGPY_PYTHON runs the adapter under an interpreter that has debugpy; the
    // program still runs under the one the command names (here the machine's python3, not
    // the venv's).
    let mut server = Server::start_with(&[("DEBUG_MCP_DEBUGPY_PYTHON", &python())]);
    server.request("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}));
    let tag = tag();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": format!("DMCP_TAG={tag} python3 {}", py("loop.py")),
        "breakpoints": [{"file": py("loop.py"), "line": 5}]}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    let prefix =
        tool(&mut server, "debug-evaluate", json!({"expression": "__import__('sys').prefix"}));
    let venv = std::path::Path::new(&python()).parent().unwrap().parent().unwrap().to_path_buf();
    assert!(prefix["value"].is_string() && prefix["value"] != venv.to_str().unwrap(), "{prefix}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn timeouts_kill_the_program_and_the_adapter() {
    let hang = std::env::temp_dir().join(format!("dmcp-hang-{}.py", tag()));
    std::fs::write(
        &hang,
        "import time\nticks = 0\nwhile True:\n    ticks += 1\n    time.sleep(0.01)\n",
    )
    .unwrap();
    let tag = tag();
    let result = run_script(json!({
        "command": format!("DMCP_TAG={tag} {} {}", python(), hang.display()),
        "breakpoint": {"file": hang.display().to_string(), "line": 4}, "expression": "ticks", "timeout": 3000}));
    let s = ok(&result);
    assert_eq!(s["timedOut"], true);
    assert!(!values(s).is_empty());
    assert_no_debuggee(&tag);
    std::fs::remove_file(&hang).unwrap();
}

#[test]
fn the_language_can_be_named() {
    let result = run_script(json!({
        "command": format!("DMCP_TAG={} {} {}", tag(), python(), py("loop.py")),
        "breakpoint": {"file": py("loop.py"), "line": 5}, "expression": "total", "language": "python"}));
    assert_eq!(values(ok(&result)), [json!(0), json!(10), json!(25)]);
    let mut server = Server::initialized();
    let bad = server
        .debug_script(json!({"command": "x", "breakpoint": {"file": py("loop.py"), "line": 5},
        "expression": "1", "language": "ruby"}));
    assert_eq!(
        err(&bad)["error"],
        "invalid argument `language`: expected one of node, python, c, cpp, rust, zig, go, \
         lldb, gdb, or an adapter of debug-mcp.json, got \"ruby\""
    );

    // An interpreter whose name does not say Python: `language` says it for a session too.
    // (Beside the real one, so that a venv's interpreter still finds its venv.)
    let alias = std::path::Path::new(&python()).with_file_name(format!("interpreter-{}", tag()));
    std::os::unix::fs::symlink(python(), &alias).unwrap();
    let tag = crate::tag();
    let state = server.call(
        "debug-launch",
        json!({"command": format!("DMCP_TAG={tag} {} {}", alias.display(), py("loop.py")),
               "language": "python", "breakpoints": [{"file": py("loop.py"), "line": 5}]}),
    )["structuredContent"]
        .clone();
    std::fs::remove_file(&alias).unwrap();
    assert_eq!(
        (state["state"].as_str(), state["reason"].as_str()),
        (Some("paused"), Some("breakpoint")),
        "{state}"
    );
    let id = state["sessionId"].clone();
    server.call("debug-stop", json!({"sessionId": id}));
    assert_no_debuggee(&tag);
    let bad = server.call("debug-launch", json!({"command": "x", "language": "ruby"}));
    assert_eq!(bad["structuredContent"]["field"], "language", "{bad}");
}

#[test]
fn generators_async_recursion_floods_and_children() {
    assert_eq!(
        values(ok(&script("generators.py", "", 5, "value"))),
        [json!(0), json!(1), json!(4), json!(9)]
    );
    assert_eq!(values(ok(&script("async_fn.py", "", 9, "i"))), [json!(1), json!(2), json!(3)]);
    let result = script("recursion.py", "", 3, "n");
    assert_eq!(values(ok(&result)), [json!(5), json!(4), json!(3), json!(2), json!(1)]);
    assert_eq!(ok(&result)["output"]["stdout"], "120\n");
    // A blank line: debugpy places the breakpoint on the line with code before it, even
    // inside the function above; the answer says so.
    let result = script("recursion.py", "", 7, "n");
    assert_eq!(ok(&result)["breakpoint"]["resolvedLine"], 5);
    assert_eq!(values(ok(&result)), [json!(5), json!(4), json!(3), json!(2)]);
    let note = result["content"][0]["text"].as_str().unwrap();
    assert!(note.contains("requested at line 7 but Python placed it at line 5"), "{note}");

    let result = script("flood.py", "", 7, "i");
    let s = ok(&result);
    assert_eq!(values(s).len(), 200);
    assert!(values(s).iter().enumerate().all(|(i, v)| *v == json!(i)));
    assert_eq!(s["output"]["truncated"], true);
    assert!(s["output"]["stdout"].as_str().unwrap().ends_with(" 199\nflood done\n"));
    assert!(s["output"]["stderr"].as_str().unwrap().ends_with("err 199\n"));

    // The child runs undebugged (subProcess: false) and does not hang waiting for a debugger.
    let result = script("spawns.py", "", 8, "out");
    assert_eq!(values(ok(&result)), [json!("child ran")]);
}

fn launch(server: &mut Server, tag: &str, file: &str, args: &str, extra: Value) -> Value {
    let mut arguments =
        json!({"command": format!("DMCP_TAG={tag} {} '{}' {args}", python(), py(file))});
    arguments.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    tool(server, "debug-launch", arguments)
}

#[test]
fn a_python_session_from_breakpoint_to_exit() {
    let mut server = Server::initialized();
    let tag = tag();
    let state = launch(
        &mut server,
        &tag,
        "loop.py",
        "",
        json!({"breakpoints": [{"file": py("loop.py"), "line": 5}]}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["reason"], "breakpoint");
    assert_eq!(state["hitBreakpoints"], json!(["1"]));
    assert_eq!(state["location"]["file"], py("loop.py"));
    assert_eq!(state["location"]["line"], 5);
    assert_eq!(state["location"]["function"], "<module>");
    assert_eq!(local(&state, "total"), &json!({"name": "total", "type": "int", "value": 0}));
    let current: Vec<&Value> =
        state["source"].as_array().unwrap().iter().filter(|l| l["current"] == true).collect();
    assert_eq!(current.len(), 1);
    assert!(current[0]["text"].as_str().unwrap().contains("total +="), "{state}");
    let id = state["sessionId"].as_str().unwrap().to_string();

    let value = tool(&mut server, "debug-evaluate", json!({"expression": "item"}));
    assert_eq!(value, json!({"type": "dict", "value": {"price": 10, "qty": 1}}));
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "nope"}));
    assert_eq!(value["type"], "error");
    assert!(value["value"].as_str().unwrap().contains("NameError"), "{value}");
    let items = tool(&mut server, "debug-variables", json!({"path": "items"}));
    let names: Vec<&Value> =
        items["variables"].as_array().unwrap().iter().map(|v| &v["name"]).collect();
    assert!(names.starts_with(&[&json!("0"), &json!("1"), &json!("2")]), "{items}");
    let price = tool(&mut server, "debug-variables", json!({"path": "items[1]"}));
    assert!(price["variables"].as_array().unwrap().iter().any(|v| v["value"] == 5), "{price}");

    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!((state["state"].as_str(), state["reason"].as_str()), (Some("paused"), Some("step")));
    assert_eq!(local(&state, "total")["value"], 10);
    let stack = tool(&mut server, "debug-stack", json!({}));
    assert_eq!(stack["totalFrames"], 1, "runpy's frames are not the program's: {stack}");
    assert_eq!(stack["frames"][0]["file"], py("loop.py"));

    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["reason"], "breakpoint");
    assert_eq!(local(&state, "item")["value"], "{'price': 5, 'qty': 3}");
    let set = tool(&mut server, "debug-evaluate", json!({"set": "total", "expression": "1000"}));
    assert_eq!(set, json!({"sessionId": id, "name": "total", "type": "int", "value": 1000}));
    // debugpy keeps the old value without a word when the new one fails: we say so.
    let bad = tool(&mut server, "debug-evaluate", json!({"set": "total", "expression": "nope"}));
    assert_eq!(bad["code"], "invalid_expression", "{bad}");
    assert!(bad["error"].as_str().unwrap().contains("NameError"), "{bad}");
    let bad = tool(&mut server, "debug-evaluate", json!({"set": "total", "expression": "1 +"}));
    assert!(bad["error"].as_str().unwrap().contains("SyntaxError"), "{bad}");
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "total"}));
    assert_eq!(value, json!({"type": "int", "value": 1000}));
    let closure = tool(&mut server, "debug-variables", json!({"scope": "closure"}));
    assert_eq!(closure["code"], "invalid_arguments", "{closure}");
    let scripts = tool(&mut server, "debug-source", json!({}));
    assert_eq!(scripts["scripts"], json!([{"file": py("loop.py"), "url": py("loop.py")}]));
    let all = tool(&mut server, "debug-source", json!({"includeInternal": true}));
    assert!(all["scripts"].as_array().unwrap().len() > 10, "{all}");
    let logpoint = tool(
        &mut server,
        "debug-breakpoint",
        json!({"file": py("loop.py"), "line": 6, "logMessage": "total={total}"}),
    );
    assert_eq!(
        (logpoint["breakpointId"].as_str(), logpoint["verified"].as_bool()),
        (Some("2"), Some(true))
    );
    let removed = tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    assert_eq!(removed["removed"], "1");
    let listed = tool(&mut server, "debug-breakpoint", json!({}));
    assert_eq!(listed["breakpoints"].as_array().unwrap().len(), 1);

    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!(state["exitCode"], 0);
    assert_eq!(state["stdout"], "total 1025.0\n");
    assert_no_debuggee(&tag);
    let output = tool(&mut server, "debug-output", json!({}));
    assert_eq!(
        output["console"],
        json!([{"type": "logpoint", "breakpointId": "2", "text": "total=1025.0"}])
    );
    let stopped = tool(&mut server, "debug-stop", json!({"sessionId": id}));
    assert_eq!(stopped, json!({"sessionId": id, "stopped": true, "lastState": "exited"}));
}

#[test]
fn python_sessions_step_into_pause_and_stop() {
    let mut server = Server::initialized();
    let tag = crate::tag();
    let state = launch(
        &mut server,
        &tag,
        "recursion.py",
        "",
        json!({"breakpoints": [{"file": py("recursion.py"), "line": 8}]}),
    );
    assert_eq!(state["location"]["line"], 8, "{state}");
    let state = tool(&mut server, "debug-continue", json!({"step": "into"}));
    assert_eq!(state["location"]["function"], "factorial", "{state}");
    assert_eq!(local(&state, "n")["value"], 5);
    let state = tool(&mut server, "debug-continue", json!({"step": "out"}));
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["location"]["function"], "<module>");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(
        (state["state"].as_str(), state["stdout"].as_str()),
        (Some("exited"), Some("120\n"))
    );
    assert_no_debuggee(&tag);

    // A long loop: the call comes back `running`, pause stops it anywhere. Two seconds, so
    // that even on a loaded machine the program is past its start-up (runpy, pathlib) and in
    // the loop when paused.
    let tag = crate::tag();
    let state = launch(&mut server, &tag, "count.py", "100000000", json!({"timeout": 2000}));
    assert_eq!(state["state"], "running", "{state}");
    let id = state["sessionId"].clone();
    let state = tool(&mut server, "debug-continue", json!({"pause": true, "sessionId": id}));
    assert_eq!(
        (state["state"].as_str(), state["reason"].as_str()),
        (Some("paused"), Some("pause"))
    );
    assert_eq!(state["location"]["file"], py("count.py"));
    let value =
        tool(&mut server, "debug-evaluate", json!({"sessionId": id, "expression": "i >= 0"}));
    assert_eq!(value, json!({"type": "bool", "value": true}));
    let stopped = tool(&mut server, "debug-stop", json!({"sessionId": id}));
    assert_eq!(stopped["lastState"], "paused");
    assert_no_debuggee(&tag);

    // A program that exits by itself mid-loop, and one that does not compile.
    let tag = crate::tag();
    let state = launch(&mut server, &tag, "exit_mid.py", "", json!({}));
    assert_eq!(
        (state["state"].as_str(), state["exitCode"].as_i64()),
        (Some("exited"), Some(3)),
        "{state}"
    );
    assert_eq!(state["stdout"], "i 0\ni 1\ni 2\n");
    assert_no_debuggee(&tag);
    let tag = crate::tag();
    let state = launch(&mut server, &tag, "syntax_error.py", "", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_ne!(state["exitCode"], 0);
    assert!(state["stderr"].as_str().unwrap().contains("SyntaxError"), "{state}");
    assert_no_debuggee(&tag);

    // Server exit ends a live Python session and leaves nothing behind.
    let tag = crate::tag();
    let state = launch(&mut server, &tag, "count.py", "100000000", json!({"timeout": 100}));
    assert_eq!(state["state"], "running", "{state}");
    server.close();
    assert_no_debuggee(&tag);
}

#[test]
fn python_exceptions_conditions_scopes_and_lines_without_code() {
    let mut server = Server::initialized();
    let tag = crate::tag();
    // `all`: every exception the program raises, not the ones Python raises and catches
    // for itself on the way in.
    let state = launch(&mut server, &tag, "throws.py", "", json!({"pauseOnExceptions": "all"}));
    assert_eq!(state["reason"], "exception", "{state}");
    assert_eq!(state["location"]["file"], py("throws.py"));
    assert_eq!(state["location"]["line"], 4);
    assert_eq!(state["exception"]["class"], "ValueError");
    assert_eq!(state["exception"]["uncaught"], false);
    let id = state["sessionId"].clone();
    // Each exception where it is raised, once: not again in each frame it unwinds through
    // (line 12 for the ValueError, line 18 for the RuntimeError); the uncaught one once more
    // as uncaught.
    let mut stops = Vec::new();
    for _ in 0..3 {
        let state = tool(&mut server, "debug-continue", json!({"sessionId": id}));
        stops.push(json!([
            state["location"]["line"],
            state["exception"]["message"],
            state["exception"]["uncaught"]
        ]));
    }
    assert_eq!(
        stops,
        [
            json!([6, "not a number: 'x'", false]),
            json!([15, "giving up", false]),
            json!([15, "giving up", true])
        ]
    );
    tool(&mut server, "debug-stop", json!({"sessionId": id}));
    assert_no_debuggee(&tag);

    let tag = crate::tag();
    let state =
        launch(&mut server, &tag, "throws.py", "", json!({"pauseOnExceptions": "uncaught"}));
    assert_eq!(state["reason"], "exception", "{state}");
    assert_eq!(
        (state["location"]["function"].as_str(), state["location"]["line"].as_u64()),
        (Some("main"), Some(15))
    );
    assert_eq!(state["exception"]["class"], "RuntimeError");
    assert_eq!(state["exception"]["message"], "giving up");
    let id = state["sessionId"].clone();
    let state = tool(&mut server, "debug-continue", json!({"sessionId": id}));
    assert_eq!((state["state"].as_str(), state["exitCode"].as_i64()), (Some("exited"), Some(1)));
    assert_no_debuggee(&tag);

    let tag = crate::tag();
    let state = launch(&mut server, &tag, "loop.py", "", json!({"stopOnEntry": true}));
    assert_eq!(
        (state["reason"].as_str(), state["location"]["line"].as_u64()),
        (Some("entry"), Some(2)),
        "{state}"
    );
    let id = state["sessionId"].clone();
    let set = |server: &mut Server, line: u64, extra: Value| {
        let mut arguments = json!({"sessionId": id, "file": py("loop.py"), "line": line});
        arguments.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        tool(server, "debug-breakpoint", arguments)
    };
    let conditional = set(&mut server, 5, json!({"condition": "item['qty'] == 3"}));
    assert_eq!(conditional["verified"], true, "{conditional}");
    // A comment: debugpy would take it and never stop there.
    let comment = set(&mut server, 1, json!({}));
    assert_eq!(comment["verified"], false, "{comment}");
    assert!(comment["reason"].as_str().unwrap().contains("holds no code"), "{comment}");
    let again = set(&mut server, 5, json!({}));
    assert_eq!(again["code"], "duplicate_breakpoint", "{again}");
    let state = tool(&mut server, "debug-continue", json!({"sessionId": id}));
    assert_eq!(state["hitBreakpoints"], json!(["1"]), "{state}");
    assert_eq!(local(&state, "item")["value"], "{'price': 5, 'qty': 3}");
    let globals = tool(&mut server, "debug-variables", json!({"sessionId": id, "scope": "global"}));
    assert!(
        globals["variables"].as_array().unwrap().iter().any(|v| v["name"] == "items"),
        "{globals}"
    );
    tool(&mut server, "debug-stop", json!({"sessionId": id}));
    assert_no_debuggee(&tag);

    // A launch that fails after debugpy has started the program leaves nothing behind.
    let tag = crate::tag();
    let bp = json!({"file": py("loop.py"), "line": 5});
    let failed = launch(&mut server, &tag, "loop.py", "", json!({"breakpoints": [bp, bp]}));
    assert_eq!(failed["code"], "duplicate_breakpoint", "{failed}");
    assert_no_debuggee(&tag);

    // debug-script says so at once, without running the program to its end.
    let result = script("loop.py", "", 1, "total");
    assert_eq!(err(&result)["code"], "no_code_at_line", "{result}");
}

#[test]
fn python_sessions_run_modules_and_programs_with_children() {
    // `python -m pkg`: the runpy frames of a module run are trimmed too.
    let mut server = Server::initialized_in(&root().join("fixtures/py"));
    let tag = crate::tag();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": format!("DMCP_TAG={tag} {} -m pkg", python()),
               "breakpoints": [{"file": "pkg/__main__.py", "line": 4}]}),
    );
    assert_eq!(state["reason"], "breakpoint", "{state}");
    assert_eq!(state["location"]["file"], py("pkg/__main__.py"));
    assert_eq!(local(&state, "word")["value"], "a");
    let stack = tool(&mut server, "debug-stack", json!({}));
    assert_eq!(stack["totalFrames"], 1, "{stack}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(local(&state, "word")["value"], "bb");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(
        (state["state"].as_str(), state["stdout"].as_str()),
        (Some("exited"), Some("[1, 2]\n"))
    );
    assert_no_debuggee(&tag);
    let id = state["sessionId"].clone();
    tool(&mut server, "debug-stop", json!({"sessionId": id}));

    // A child Python process runs undebugged and the session goes on past it.
    let tag = crate::tag();
    let state = launch(
        &mut server,
        &tag,
        "spawns.py",
        "",
        json!({"breakpoints": [{"file": py("spawns.py"), "line": 8}]}),
    );
    assert_eq!(state["reason"], "breakpoint", "{state}");
    assert_eq!(local(&state, "out")["value"], "child ran");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!((state["state"].as_str(), state["exitCode"].as_i64()), (Some("exited"), Some(0)));
    assert_no_debuggee(&tag);
}

/// `python -m debugpy --listen` on a free port, running `listening.py`; its stdout lines
/// arrive on the returned channel.
fn listening_program(tag: &str, flags: &[&str]) -> (Program, u16, mpsc::Receiver<String>) {
    listening_program_in(&root().join("fixtures/py"), tag, flags)
}

/// `listening.py` run from `dir` (a copy elsewhere: as a container sees its files).
fn listening_program_in(
    dir: &std::path::Path,
    tag: &str,
    flags: &[&str],
) -> (Program, u16, mpsc::Receiver<String>) {
    use std::io::BufRead;
    let port = free_port();
    let mut program = Program::spawn(
        std::process::Command::new(python())
            .args(["-m", "debugpy", "--listen", &format!("127.0.0.1:{port}")])
            .args(flags)
            // Relative, in its own directory: the way people start programs.
            .arg("listening.py")
            .current_dir(dir)
            .env("DMCP_TAG", tag)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null()),
    );
    let stdout = program.0.stdout.take().unwrap();
    let (lines_tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    if flags.is_empty() {
        // debugpy listens before it runs the program.
        assert_eq!(lines.recv_timeout(DEADLINE).unwrap(), "ready");
    }
    (program, port, lines)
}

/// The next `tick N` line's N, skipping what was printed before.
fn next_tick(lines: &mpsc::Receiver<String>) -> u64 {
    while lines.try_recv().is_ok() {}
    let line = lines.recv_timeout(DEADLINE).expect("the program goes on printing");
    line.strip_prefix("tick ").unwrap().parse().unwrap()
}

#[test]
fn attach_to_debugpy_listen_and_detach() {
    let mut server = Server::initialized();
    let tag = tag();
    let (mut program, port, lines) = listening_program(&tag, &[]);
    let file = py("listening.py");

    // What listens on the port is found out: debugpy, not Node's inspector.
    let state = tool(&mut server, "debug-launch", json!({"port": port}));
    assert_eq!(state["state"], "running", "{state}");
    assert_eq!(state["attached"]["url"], format!("tcp://127.0.0.1:{port}"));
    let sessions = tool(&mut server, "debug-sessions", json!({}));
    assert_eq!(sessions["sessions"][0]["language"], "python", "{sessions}");
    let bp = tool(&mut server, "debug-breakpoint", json!({"file": file, "line": 6}));
    assert_eq!(bp["verified"], true, "{bp}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["reason"], "breakpoint", "{state}");
    assert_eq!(state["location"]["function"], "tick");
    assert_eq!(state["location"]["line"], 6);
    let n = local(&state, "n")["value"].as_u64().unwrap();
    // Values go through the probe, which attaching put into the program.
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "[n, n * 2]"}));
    assert_eq!(value, json!({"type": "list", "value": [n, n * 2]}));
    let value =
        tool(&mut server, "debug-evaluate", json!({"expression": "__import__('os').getpid()"}));
    assert_eq!(value["value"], program.0.id());
    let set = tool(&mut server, "debug-evaluate", json!({"set": "n", "expression": "1000000"}));
    assert_eq!(set["value"], 1000000, "{set}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(state["location"]["line"], 7, "{state}");
    assert_eq!(local(&state, "label")["value"], "tick 1000000");
    let output = tool(&mut server, "debug-output", json!({}));
    assert!(output["stdout"].as_str().unwrap().contains("tick "), "{output}");
    let scripts = tool(&mut server, "debug-source", json!({}));
    assert_eq!(scripts["scripts"], json!([{"file": file, "url": file}]), "{scripts}");

    // Stopped while paused at a breakpoint: detached, never killed, and it runs on.
    let stopped = tool(&mut server, "debug-stop", json!({}));
    assert_eq!(stopped["stopped"], true);
    assert!(next_tick(&lines) > 0);
    assert!(next_tick(&lines) > 0);
    assert!(program.0.try_wait().unwrap().is_none(), "attach must never kill the target");

    // Again, saying the language; a logpoint, then pause anywhere. One client at a time.
    let state = tool(&mut server, "debug-launch", json!({"port": port, "language": "python"}));
    assert_eq!(state["state"], "running", "{state}");
    let error = tool(&mut server, "debug-launch", json!({"port": port}));
    assert_eq!(error["code"], "attach_failed", "{error}");
    assert!(error["error"].as_str().unwrap().contains("Another client is attached"), "{error}");
    tool(&mut server, "debug-breakpoint", json!({"file": file, "line": 7, "logMessage": "at {n}"}));
    let state = tool(&mut server, "debug-continue", json!({"timeout": 300}));
    assert_eq!(state["state"], "running", "{state}");
    let output = tool(&mut server, "debug-output", json!({}));
    let console = output["console"].as_array().unwrap();
    assert!(
        console
            .iter()
            .any(|c| c["breakpointId"] == "1" && c["text"].as_str().unwrap().starts_with("at ")),
        "{output}"
    );
    let state = tool(&mut server, "debug-continue", json!({"pause": true}));
    assert_eq!(state["state"], "paused", "{state}");
    tool(&mut server, "debug-stop", json!({}));
    assert!(next_tick(&lines) > 0);
    assert!(program.0.try_wait().unwrap().is_none());

    // Python programs are attached to by port only; a port without debugpy says so.
    let error =
        tool(&mut server, "debug-launch", json!({"pid": program.0.id(), "language": "python"}));
    assert_eq!(error["field"], "port", "{error}");
    assert!(error["error"].as_str().unwrap().contains("python -m debugpy --listen"));
    let error = tool(&mut server, "debug-launch", json!({"port": port, "host": "example.com"}));
    assert_eq!(error["code"], "host_not_allowed", "{error}");
    let free = free_port();
    let error = tool(&mut server, "debug-launch", json!({"port": free, "language": "python"}));
    assert_eq!(error["code"], "no_inspector", "{error}");
    assert!(error["error"].as_str().unwrap().contains("python -m debugpy --listen"), "{error}");
    drop(program);
    assert_no_debuggee(&tag);
}

#[test]
fn attach_with_breakpoints_to_a_program_waiting_for_its_client() {
    attach_waiting(&root().join("fixtures/py"), json!({}));
}

/// The program runs from a copy of its files elsewhere, as a container sees `/app`; attached
/// to with `pathMappings`, breakpoints given in the local tree stop there and every location is
/// a local path. A launch, and runtimes that cannot map paths yet, refuse the field.
#[test]
fn attach_with_path_mappings_to_a_program_run_elsewhere() {
    let app = std::env::temp_dir().join(format!("dmcp-remote-{}", tag())).join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::copy(py("listening.py"), app.join("listening.py")).unwrap();
    let remote = app.canonicalize().unwrap().display().to_string();
    attach_waiting(&app, json!({"pathMappings": [{"remote": remote, "local": "fixtures/py"}]}));
    let mut server = Server::initialized();
    let refused = tool(
        &mut server,
        "debug-launch",
        json!({"command": "node fixtures/loop.js", "pathMappings": [{"remote": "/app", "local": "."}]}),
    );
    assert_eq!(refused["field"], "pathMappings", "{refused}");
    std::fs::remove_dir_all(app.parent().unwrap()).unwrap();
}

/// Attaches (with `extra` arguments) to listening.py run from `dir` under debugpy's listener,
/// waiting for its client, with a breakpoint in the local fixture: the first answer is that
/// stop, in the local file.
fn attach_waiting(dir: &std::path::Path, extra: Value) {
    let mut server = Server::initialized();
    let tag = tag();
    let (program, port, lines) = listening_program_in(dir, &tag, &["--wait-for-client"]);
    let breakpoints = json!([{"file": py("listening.py"), "line": 11}]);
    // Nothing to wait on for the moment debugpy listens but the attempts themselves.
    let deadline = std::time::Instant::now() + DEADLINE;
    let state = loop {
        let mut arguments = json!({"port": port, "language": "python", "breakpoints": breakpoints});
        arguments.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let state = tool(&mut server, "debug-launch", arguments);
        if state["code"] != "no_inspector" || std::time::Instant::now() > deadline {
            break state;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // The answer is the first stop: before the program printed anything.
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["hitBreakpoints"], json!(["1"]), "{state}");
    assert_eq!(state["location"]["line"], 11);
    assert_eq!(state["location"]["file"], py("listening.py"), "a local path: {state}");
    assert!(lines.try_recv().is_err(), "the program waited for its client");
    tool(&mut server, "debug-stop", json!({}));
    assert_eq!(lines.recv_timeout(DEADLINE).unwrap(), "ready");
    drop(program);
    assert_no_debuggee(&tag);
}

#[test]
fn interpreters_that_skip_our_pythonpath_still_get_typed_values() {
    // -I and -E ignore PYTHONPATH (no probe to import), -S skips sitecustomize.py: the probe
    // goes into the program from the first expression that needs it.
    let tag = tag();
    for flags in ["-uI", "-S"] {
        let command = format!("DMCP_TAG={tag} {} {flags} '{}'", python(), py("loop.py"));
        let breakpoint = json!({"file": py("loop.py"), "line": 5});
        let result = run_script(json!({"command": command, "breakpoint": breakpoint,
                                       "expression": "item['qty']"}));
        assert_eq!(values(ok(&result)), [json!(1), json!(3), json!(4)], "{flags}");
        let result = run_script(json!({"command": command, "breakpoint": breakpoint,
                                       "expression": "total", "includeStack": true}));
        assert_eq!(values(ok(&result)), [json!(0), json!(10), json!(25)], "{flags}");

        let mut server = Server::initialized();
        let state = tool(
            &mut server,
            "debug-launch",
            json!({"command": command, "breakpoints": [breakpoint]}),
        );
        assert_eq!(state["state"], "paused", "{flags}: {state}");
        let value = tool(&mut server, "debug-evaluate", json!({"expression": "item"}));
        assert_eq!(value, json!({"type": "dict", "value": {"price": 10, "qty": 1}}), "{flags}");
        tool(&mut server, "debug-stop", json!({}));
    }
    assert_no_debuggee(&tag);
}

/// A line that runs only in a child: `subprocess` of python, and `multiprocessing` pools with
/// the fork and spawn start methods. Each hit names its process; the parent is listed first.
#[test]
fn child_processes_are_followed() {
    let result = script("children/run_child.py", "", 9, "shout");
    let s = ok(&result);
    assert_eq!(values(s), [json!("HELLO")], "{s}");
    assert_eq!(s["output"]["stdout"], "child said HELLO\n", "{s}");
    let processes = s["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 2, "{s}");
    assert_eq!(processes[1]["parent"], processes[0]["pid"], "{s}");
    assert!(processes[1]["command"].as_str().unwrap().ends_with("run_child.py hello"), "{s}");
    assert_eq!(processes[1]["hits"], 1, "{s}");
    assert!(s["results"][0].get("pid").is_none(), "{s}");
    assert!(s.get("undebugged").is_none(), "{s}");

    for method in ["fork", "spawn"] {
        let result = script("children/pool.py", method, 9, "result");
        let s = ok(&result);
        let mut hits = values(s);
        hits.sort_by_key(|v| v.as_i64());
        assert_eq!(hits, [json!(1), json!(4), json!(9)], "{method}: {s}");
        assert_eq!(s["output"]["stdout"], "[1, 4, 9]\n", "{method}: {s}");
        let parent = &s["processes"][0]["pid"];
        assert_eq!(s["processes"][0]["hits"], 0, "{method}: {s}");
        let workers: u64 = s["processes"].as_array().unwrap()[1..]
            .iter()
            .map(|p| p["hits"].as_u64().unwrap())
            .sum();
        assert_eq!(workers, 3, "{method}: {s}");
        // A pid on each hit only when they came from more than one worker.
        let with_hits = s["processes"].as_array().unwrap().iter().filter(|p| p["hits"] != 0);
        let several = with_hits.count() > 1;
        for hit in s["results"].as_array().unwrap() {
            assert_eq!(hit.get("pid").is_some(), several, "{s}");
            assert_ne!(&hit["pid"], parent, "{s}");
        }
    }
}

/// pytest through its console script, plain and with two pytest-xdist workers: the code under
/// test is hit in whichever process ran each test.
#[test]
fn pytest_plain_and_with_xdist_workers() {
    for workers in ["", "-n 2 "] {
        let tag = tag();
        let command = pytest(&tag, &format!("{workers}{}", py("suite")));
        let result = run_script(json!({"command": command,
            "breakpoint": {"file": py("suite/calc.py"), "line": 5}, "expression": "result",
            "timeout": 60000}));
        let s = ok(&result);
        let mut hits = values(s);
        hits.sort_by(|a, b| a.as_f64().partial_cmp(&b.as_f64()).unwrap());
        assert_eq!(hits, [json!(2.0), json!(4.0)], "{workers}: {s}");
        assert!(s["output"]["stdout"].as_str().unwrap().contains("2 passed"), "{s}");
        let processes = s["processes"].as_array().unwrap();
        if workers.is_empty() {
            assert_eq!(processes.len(), 1, "{s}");
        } else {
            // The controller and its two workers; the tests ran in the workers.
            assert_eq!(processes.len(), 3, "{s}");
            assert_eq!(processes[0]["hits"], 0, "{s}");
        }
        assert_no_debuggee(&tag);
    }
}

/// A Python session follows the program's children: a breakpoint in a `subprocess` child stops
/// there (the stop names the child), inspection acts on it, `debug-threads` and
/// `debug-sessions` list it; the parent's breakpoint stops after.
#[test]
fn a_session_stops_in_a_child_process() {
    let mut server = Server::initialized();
    let tag = tag();
    let file = py("children/run_child.py");
    let command = format!("DMCP_TAG={tag} {} {file}", python());
    let breakpoints = json!([{"file": file, "line": 9}, {"file": file, "line": 12}]);
    let state =
        tool(&mut server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}));
    assert_eq!(
        (&state["state"], &state["location"]["line"]),
        (&json!("paused"), &json!(9)),
        "{state}"
    );
    assert!(
        state["process"]["command"].as_str().unwrap().ends_with("run_child.py hello"),
        "{state}"
    );
    let child = state["process"]["pid"].clone();
    let shout = tool(&mut server, "debug-evaluate", json!({"expression": "shout"}));
    assert_eq!(shout["value"], "HELLO", "{shout}");
    let threads = tool(&mut server, "debug-threads", json!({}));
    let current: Vec<&Value> = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["current"] == true)
        .map(|t| &t["id"])
        .collect();
    assert_eq!(current, [&json!(format!("{child}/1"))], "{threads}");
    let sessions = tool(&mut server, "debug-sessions", json!({}));
    let processes = sessions["sessions"][0]["processes"].as_array().unwrap().clone();
    assert_eq!(processes.len(), 2, "{sessions}");
    assert_eq!(processes[1]["pid"], child, "{sessions}");

    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(
        (&state["state"], &state["location"]["line"]),
        (&json!("paused"), &json!(12)),
        "{state}"
    );
    assert_ne!(state["process"]["pid"], child, "{state}");
    let out = tool(&mut server, "debug-evaluate", json!({"expression": "out.stdout"}));
    assert_eq!(out["value"], "HELLO\n", "{out}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!(state["stdout"], "child said HELLO\n", "{state}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// Exception stops that help: a program ending through `SystemExit` (a console script's
/// `sys.exit(main())`, `sys.exit(3)`) is not a stop; `all` on a pytest run stops first in the
/// program's own code, its stack the program's frames first; and a breakpoint in library code
/// still stops while `all` leaves libraries out.
#[test]
fn exception_stops_are_the_programs_own() {
    let mut server = Server::initialized();
    let tag = crate::tag();
    let pytest = |pause: &str| {
        json!({"command": format!("DMCP_TAG={tag} {} -m pytest -q -p no:cacheprovider {}",
                                  python(), py("failing")),
               "cwd": py("failing"), "pauseOnExceptions": pause, "timeout": 60000})
    };
    // `uncaught`: the failing test is caught by pytest, and pytest's SystemExit(1) ends it.
    let state = tool(&mut server, "debug-launch", pytest("uncaught"));
    assert_eq!((&state["state"], &state["exitCode"]), (&json!("exited"), &json!(1)), "{state}");
    assert!(state["stdout"].as_str().unwrap().contains("1 failed, 1 passed"), "{state}");
    tool(&mut server, "debug-stop", json!({}));
    let state = launch(&mut server, &tag, "exit_mid.py", "", json!({"pauseOnExceptions": "all"}));
    assert_eq!((&state["state"], &state["exitCode"]), (&json!("exited"), &json!(3)), "{state}");
    tool(&mut server, "debug-stop", json!({}));

    // `all`: the first stop is the failing assertion, in the test, not pytest's machinery.
    let state = tool(&mut server, "debug-launch", pytest("all"));
    assert_eq!(state["reason"], "exception", "{state}");
    assert_eq!(state["exception"]["class"], "AssertionError", "{state}");
    assert_eq!(state["location"]["file"], py("failing/test_prices.py"), "{state}");
    assert_eq!(state["location"]["line"], 11, "{state}");
    let stack = state["exception"]["stack"].as_str().unwrap();
    let first = stack.lines().next().unwrap();
    assert_eq!(first, format!("at test_ten_percent ({}:11)", py("failing/test_prices.py")));
    assert!(stack.lines().count() <= 9, "{stack}");
    tool(&mut server, "debug-stop", json!({}));

    // A breakpoint in the standard library, with `all`: stops there all the same.
    let json_py = std::process::Command::new(python())
        .args(["-c", "import json; print(json.__file__)"])
        .output()
        .unwrap();
    let json_py = String::from_utf8(json_py.stdout).unwrap().trim().to_string();
    let text = std::fs::read_to_string(&json_py).unwrap();
    let line =
        text.lines().position(|l| l.contains("return _default_encoder.encode(obj)")).unwrap();
    let state = launch(
        &mut server,
        &tag,
        "uses_json.py",
        "",
        json!({"pauseOnExceptions": "all",
        "breakpoints": [{"file": json_py, "line": line + 1}]}),
    );
    assert_eq!(state["reason"], "breakpoint", "{state}");
    assert_eq!(state["location"]["function"], "dumps", "{state}");
    let answer = tool(
        &mut server,
        "debug-breakpoint",
        json!({"exceptions": "all", "includeLibraries": true}),
    );
    assert!(
        answer["message"].as_str().unwrap().contains("from the next debug-restart on"),
        "{answer}"
    );
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// debug-script's line probes on every CPython this machine has (pyenv's 3.6 to 3.13, when
/// there; 3.7 up: the fixtures use `asyncio.run`): `sys.settrace` before 3.12, `sys.monitoring` from 3.12, the same answers. An
/// interpreter that is missing is said so and passed over (CI does not install them).
#[test]
fn every_python_version_gives_the_same_answers() {
    let mut tried = Vec::new();
    for (python, version) in pyenv_pythons() {
        tried.push(version.clone());
        let tag = tag();
        let run = |file: &str, line: u64, expression: &str, flags: &str| {
            run_script(
                json!({"command": format!("DMCP_TAG={tag} {} {flags} {}", python.display(), py(file)),
                "breakpoint": {"file": py(file), "line": line}, "expression": expression}),
            )
        };
        assert_eq!(
            values(ok(&run("loop.py", 5, "total", ""))),
            [json!(0), json!(10), json!(25)],
            "{version}"
        );
        assert_eq!(
            values(ok(&run("generators.py", 5, "value", ""))),
            [json!(0), json!(1), json!(4), json!(9)],
            "{version}"
        );
        assert_eq!(
            values(ok(&run("async_fn.py", 9, "i", ""))),
            [json!(1), json!(2), json!(3)],
            "{version}"
        );
        assert_eq!(
            values(ok(&run("threads.py", 8, "n", ""))),
            [json!(1), json!(2), json!(3)],
            "{version}"
        );
        // An imported module's lines: before 3.12 most are probed by a call compiled in
        // before the line's statement, the rest traced; the answers are the same.
        let shapes = |line: u64, expression: &str| {
            let answer = run_script(json!({
                "command": format!("DMCP_TAG={tag} {} {}", python.display(), py("uses_shapes.py")),
                "breakpoint": {"file": py("shapes.py"), "line": line}, "expression": expression}));
            values(ok(&answer))
        };
        assert_eq!(shapes(7, "value"), [json!(-1), json!(0), json!(2)], "{version}");
        assert_eq!(shapes(9, "value"), [json!(0), json!(2)], "{version}");
        assert_eq!(shapes(12, "kinds"), [json!(["negative", "zero"])], "{version}");
        assert_eq!(shapes(15, "squares"), [json!([1, 0, 4])], "{version}");
        assert_eq!(shapes(21, "n"), [json!(2), json!(1)], "{version}");
        assert_eq!(shapes(22, "n"), [json!(2), json!(1)], "{version}");
        let moved = run("recursion.py", 7, "n", "");
        assert_eq!(ok(&moved)["breakpoint"]["resolvedLine"], 5, "{version}: {moved}");
        assert_eq!(
            values(ok(&run("loop.py", 5, "item['qty']", "-I"))),
            [json!(1), json!(3), json!(4)],
            "{version}"
        );
        assert_no_debuggee(&tag);
    }
    let write = |text: String| {
        use std::io::Write;
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    };
    match tried.is_empty() {
        true => write("every_python_version_gives_the_same_answers: no /root/.pyenv/versions here; only the test venv's Python was tried\n".into()),
        false => write(format!("every_python_version_gives_the_same_answers: tried Python {}\n", tried.join(", "))),
    }
}

/// `failures: true` names each failing test (pytest, xdist workers, unittest) or uncaught
/// exception, with the program's own frames and their locals; a SystemExit, an exception the
/// program or a library catches, are none; `maxFailures` caps them.
#[test]
fn failures_name_the_failing_test_with_its_locals() {
    for workers in ["", "-n 2 "] {
        let tag = tag();
        let command = pytest(&tag, &format!("{workers}{}", py("failing")));
        let s = run_script(json!({"command": command, "failures": true, "timeout": 60000}));
        let s = ok(&s);
        assert_eq!(s["exitCode"], 1, "{s}");
        let failures = s["failures"].as_array().unwrap();
        assert_eq!(failures.len(), 1, "{workers}: {s}");
        let failure = &failures[0];
        assert_eq!(failure["kind"], "test", "{failure}");
        assert_eq!(failure["type"], "AssertionError", "{failure}");
        assert!(failure["test"].as_str().unwrap().ends_with("test_prices.py::test_ten_percent"));
        assert!(failure["message"].as_str().unwrap().contains("16.2"), "{failure}");
        let frame = &failure["frames"][0];
        assert_eq!(frame["function"], "test_ten_percent", "{failure}");
        assert_eq!(frame["line"], 11, "{failure}");
        assert_eq!(frame["locals"]["order"], "[(10.0, 1), (5.0, 2)]", "{failure}");
        // pytest's assertion keeps what it compared: the wrong total is there.
        let locals = frame["locals"].as_object().unwrap();
        assert!(locals.values().any(|v| v == "16.2"), "{failure}");
        let pids: Vec<&Value> =
            s["processes"].as_array().unwrap().iter().map(|p| &p["pid"]).collect();
        assert!(pids.contains(&&failure["process"]), "{s}");
        assert!(s.get("breakpoint").is_none(), "{s}");
        assert_no_debuggee(&tag);
    }

    let tag = tag();
    let command = format!("DMCP_TAG={tag} {} {}", python(), py("unit/test_double.py"));
    let s = run_script(json!({"command": command, "failures": true}));
    let s = ok(&s);
    let failure = &s["failures"][0];
    assert_eq!(s["failures"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(failure["test"], "__main__.Double.test_bad", "{failure}");
    assert_eq!(failure["message"], "6 != 4", "{failure}");
    assert_eq!(failure["frames"][0]["locals"]["n"], "2", "{failure}");

    let command = format!("DMCP_TAG={tag} {} {}", python(), py("throws.py"));
    let s = run_script(json!({"command": command, "failures": true}));
    let s = ok(&s);
    let failures = s["failures"].as_array().unwrap();
    // The ValueErrors the program catches are none; the RuntimeError that ends it is one.
    assert_eq!(failures.len(), 1, "{s}");
    assert_eq!(failures[0]["kind"], "uncaught", "{s}");
    assert_eq!(failures[0]["type"], "RuntimeError", "{s}");
    let frames = failures[0]["frames"].as_array().unwrap();
    assert_eq!((&frames[0]["function"], &frames[0]["line"]), (&json!("main"), &json!(15)), "{s}");
    assert_eq!(frames[0]["locals"]["text"], "'x'", "{s}");

    let command = format!("DMCP_TAG={tag} {} {}", python(), py("caught.py"));
    let s = run_script(json!({"command": command, "failures": true}));
    let s = ok(&s);
    assert_eq!(s["failures"], json!([]), "{s}");
    assert_eq!(s["exitCode"], 3, "{s}");

    // Three failing tests, one recorded, the others counted.
    let files =
        [py("failing"), py("unit/test_double.py"), py("failing/test_prices.py::test_ten_percent")];
    let command = pytest(&tag, &files.join(" "));
    let s = run_script(json!({"command": command, "failures": true, "maxFailures": 1}));
    let s = ok(&s);
    assert_eq!(s["failures"].as_array().unwrap().len(), 1, "{s}");
    assert!(s["moreFailures"].as_u64().unwrap() >= 1, "{s}");
    assert_no_debuggee(&tag);
}

/// `probes`: several lines, one run, results in execution order with their probe's index; a
/// probe without an expression records the frame's locals.
#[test]
fn probes_answer_in_execution_order() {
    let tag = tag();
    let command = pytest(&tag, &py("failing"));
    let s = run_script(json!({"command": command, "probes": [
        {"file": py("failing/prices.py"), "line": 4},
        {"file": py("failing/prices.py"), "line": 5, "expression": "discounted"},
        {"file": py("failing/test_prices.py"), "line": 11, "expression": "order[0]"},
        {"file": py("failing/prices.py"), "line": 3, "expression": "discount", "condition": "discount > 0"}]}));
    let s = ok(&s);
    let order: Vec<&Value> = s["results"].as_array().unwrap().iter().map(|r| &r["probe"]).collect();
    assert_eq!(order, [&json!(0), &json!(1), &json!(2), &json!(3), &json!(0), &json!(1)], "{s}");
    let results = &s["results"];
    assert_eq!(results[0]["locals"]["subtotal"], "8.0", "{s}");
    assert_eq!(results[1]["value"], 8.0, "{s}");
    assert_eq!(results[2]["value"], json!([10.0, 1]), "{s}");
    assert_eq!(results[3]["value"], 0.1, "{s}");
    assert_eq!(results[4]["locals"]["discount"], "0.1", "{s}");
    assert_eq!(results[5]["value"], 18.0, "{s}");
    let probes = s["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 4, "{s}");
    assert_eq!(probes[2]["resolvedLine"], 11, "{s}");
    assert!(s.get("breakpoint").is_none(), "{s}");

    // What cannot be asked, said so.
    let loop_py = py("loop.py");
    let both = run_script(json!({"command": format!("python3 {loop_py}"),
        "probes": [{"file": loop_py, "line": 5}], "breakpoint": {"file": loop_py, "line": 5}}));
    assert_eq!(err(&both)["code"], "invalid_arguments", "{both}");
    let none = run_script(json!({"command": format!("python3 {loop_py}"), "probes": []}));
    assert_eq!(err(&none)["code"], "invalid_arguments", "{none}");
    assert_no_debuggee(&tag);
}

/// A passing test that calls `sys.excepthook` or `threading.excepthook` itself (a test of a
/// traceback formatter) failed nothing: only the interpreter's own calls of those hooks are
/// uncaught exceptions.
#[test]
fn tests_that_call_the_exception_hooks_themselves_are_no_failures() {
    let tag = tag();
    let s = run_script(json!({"command": pytest(&tag, &py("hooks")), "failures": true}));
    let s = ok(&s);
    assert_eq!(s["exitCode"], 0, "{s}");
    assert_eq!(s["failures"], json!([]), "{s}");
    // An exception that does reach the top of a thread (or of the program: `throws.py`,
    // above) still is one.
    let command = format!("DMCP_TAG={tag} {} {}", python(), py("hooks/thread_dies.py"));
    let s = run_script(json!({"command": command, "failures": true}));
    let s = ok(&s);
    assert_eq!(s["exitCode"], 0, "{s}");
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{s}");
    assert_eq!(
        (&failures[0]["kind"], &failures[0]["type"]),
        (&json!("uncaught"), &json!("ZeroDivisionError")),
        "{s}"
    );
    assert_eq!(failures[0]["frames"][0]["function"], "work", "{s}");
    assert_no_debuggee(&tag);
}
