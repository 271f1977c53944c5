//! `debug-script` through the real binary against real node.

use std::net::TcpListener;
use std::path::Path;

use serde_json::{json, Value};

use crate::{
    assert_no_debuggee, err, fixture, free_port, node, ok, plain_results, run_script, tag, values,
    Server,
};

fn script(fixture_name: &str, args: &str, line: u64, expression: &str) -> Value {
    run_script(json!({
        "command": node(&tag(), fixture_name, args),
        "breakpoint": {"file": fixture(fixture_name), "line": line},
        "expression": expression,
    }))
}

#[test]
fn reports_each_hit_in_order_with_exit_and_output() {
    let result = script("loop.js", "", 5, "total");
    let s = ok(&result);
    assert_eq!(
        plain_results(s),
        json!([{"type": "number", "value": 0}, {"type": "number", "value": 10}, {"type": "number", "value": 25}])
    );
    assert_eq!(s["breakpoint"], json!({"file": fixture("loop.js"), "line": 5, "resolvedLine": 5}));
    assert_eq!(s["exitCode"], 0);
    assert_eq!(s["timedOut"], false);
    assert_eq!(s["hitsCapped"], false);
    assert_eq!(s["output"], json!({"stdout": "total 35\n", "stderr": "", "truncated": false}));
}

#[test]
fn values_of_every_type() {
    let cases: &[(&str, Value)] = &[
        ("num", json!({"type": "number", "value": 42})),
        ("str", json!({"type": "string", "value": "hello"})),
        ("bool", json!({"type": "boolean", "value": true})),
        ("nul", json!({"type": "object", "value": null})),
        ("undef", json!({"type": "undefined", "value": null})),
        ("big", json!({"type": "bigint", "value": "10n"})),
        ("sym", json!({"type": "symbol", "value": "Symbol(s)"})),
        ("fn", json!({"type": "function", "value": "[Function: add]"})),
        ("Point", json!({"type": "function", "value": "[class Point]"})),
        ("point", json!({"type": "object", "value": {"x": 1}})),
        ("circular", json!({"type": "object", "value": {"name": "loop", "self": "[Circular]"}})),
        ("nan", json!({"type": "number", "value": "NaN"})),
        ("inf", json!({"type": "number", "value": "-Infinity"})),
        ("negZero", json!({"type": "number", "value": "-0"})),
        ("map", json!({"type": "object", "value": "Map(2) {\"a\" => 1, \"b\" => \"2n\"}"})),
        ("set", json!({"type": "object", "value": "Set(2) {1, \"two\"}"})),
        ("date", json!({"type": "object", "value": "2024-01-02T03:04:05.000Z"})),
        (
            "nested",
            json!({"type": "object", "value": {"list": [1, {"deep": "3n"}], "f": "[Function: add]"}}),
        ),
        ("err", json!({"type": "object", "value": "TypeError: bad thing"})),
        ("re", json!({"type": "object", "value": "/ab+c/gi"})),
        ("typed", json!({"type": "object", "value": [1, 2, 3]})),
        ("lone", json!({"type": "string", "value": "a\u{FFFD}b"})),
        ("num + 1", json!({"type": "number", "value": 43})),
        ("nope", json!({"type": "error", "value": "ReferenceError: nope is not defined"})),
        ("(() => { throw 5 })()", json!({"type": "error", "value": "Uncaught 5"})),
        (
            "null.x",
            json!({"type": "error", "value": "TypeError: Cannot read properties of null (reading 'x')"}),
        ),
    ];
    // One run evaluates them all: an array of the per-case results would hide the types, so use
    // one call per case but on the same server to keep it quick.
    let mut server = Server::initialized();
    for (expression, expected) in cases {
        let tag = tag();
        let result = server.debug_script(json!({
            "command": node(&tag, "values.js", ""),
            "breakpoint": {"file": fixture("values.js"), "line": 28},
            "expression": expression,
        }));
        assert_eq!(plain_results(ok(&result)), json!([expected]), "expression: {expression}");
        assert_no_debuggee(&tag);
    }
}

#[test]
fn large_values_are_truncated_and_say_so() {
    let result = script("values.js", "", 28, "long");
    let s = ok(&result);
    let value = s["results"][0]["value"].as_str().unwrap();
    assert!(value.starts_with("xxxx"));
    assert!(value.ends_with("… [truncated: 100000 chars]"), "{}", &value[value.len() - 40..]);
    assert!(value.len() < 70_000);
    assert_eq!(s["valuesTruncated"], true);
    let text: Vec<&str> =
        result["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect();
    assert!(text.iter().any(|t| t.contains("Some values were truncated")), "{text:?}");

    let result = script("values.js", "", 28, "bigArray");
    let array = ok(&result)["results"][0]["value"].as_array().unwrap().clone();
    assert_eq!(array[0], 0);
    let last = array.last().unwrap().as_str().unwrap();
    assert!(last.starts_with("… [truncated: ") && last.ends_with(" more items]"), "{last}");
}

#[test]
fn es_modules_async_functions_and_closures() {
    assert_eq!(values(ok(&script("esm.mjs", "", 4, "result"))), [json!(4), json!(9), json!(16)]);
    assert_eq!(
        values(ok(&script("async.js", "", 7, "id * 10"))),
        [json!(10), json!(20), json!(30)]
    );
    assert_eq!(
        values(ok(&script("closure.js", "", 6, "[count, step]"))),
        [json!([5, 5]), json!([10, 5])]
    );
}

#[test]
fn moved_breakpoints_report_where_they_landed() {
    let result = script("moved.js", "", 4, "doubled");
    let s = ok(&result);
    assert_eq!(s["breakpoint"]["line"], 4);
    assert_eq!(s["breakpoint"]["resolvedLine"], 7);
    assert_eq!(values(s), [json!(40)]);
    let note = result["content"][0]["text"].as_str().unwrap();
    assert!(note.contains("requested at line 4 but V8 placed it at line 7"), "{note}");
}

#[test]
fn process_exit_mid_run_keeps_the_hits_and_the_code() {
    let s = script("exit_mid.js", "", 4, "i").get("structuredContent").unwrap().clone();
    assert_eq!(values(&s), [json!(0), json!(1), json!(2)]);
    assert_eq!(s["exitCode"], 3);
    assert_eq!(s["output"]["stdout"], "i 0\ni 1\ni 2\n");
}

#[test]
fn uncaught_exceptions_keep_the_hits_and_show_stderr() {
    let result = script("throws.js", "", 4, "n");
    let s = ok(&result);
    assert_eq!(values(s), [json!(1), json!(2)]);
    assert_eq!(s["exitCode"], 1);
    let stderr = s["output"]["stderr"].as_str().unwrap();
    assert!(stderr.contains("RangeError: n too big: 3"), "{stderr}");
    assert!(
        !stderr.contains("Debugger") && !stderr.contains("Waiting for the debugger"),
        "{stderr}"
    );
}

#[test]
fn two_thousand_hits_and_max_hits() {
    let result = script("count.js", "2000", 6, "i");
    let s = ok(&result);
    let got = values(s);
    assert_eq!(got.len(), 2000);
    assert!(got.iter().enumerate().all(|(i, v)| *v == json!(i)), "hits out of order");
    assert_eq!(s["hitsCapped"], false);
    assert_eq!(s["output"]["stdout"], "sum 2664667000\n");

    let tag = tag();
    let result = run_script(json!({
        "command": node(&tag, "count.js", "5000"),
        "breakpoint": {"file": fixture("count.js"), "line": 6},
        "expression": "i", "maxHits": 100,
    }));
    let s = ok(&result);
    assert_eq!(values(s).len(), 100);
    assert_eq!(s["hitsCapped"], true);
    assert_eq!(s["exitCode"], 0);
    assert_eq!(s["output"]["stdout"], "sum 41654167500\n", "the program runs to its end");
}

#[test]
fn conditions_filter_hits() {
    let result = run_script(json!({
        "command": node(&tag(), "count.js", "100"),
        "breakpoint": {"file": fixture("count.js"), "line": 6, "condition": "i % 25 === 0"},
        "expression": "square",
    }));
    assert_eq!(values(ok(&result)), [json!(0), json!(625), json!(2500), json!(5625)]);
}

#[test]
fn include_stack_gives_frames() {
    let result = run_script(json!({
        "command": node(&tag(), "throws.js", ""),
        "breakpoint": {"file": fixture("throws.js"), "line": 4},
        "expression": "n", "includeStack": true,
    }));
    let s = ok(&result);
    assert_eq!(values(s), [json!(1), json!(2)]);
    let top = &s["results"][0]["stack"][0];
    assert_eq!(top, &json!({"function": "check", "file": fixture("throws.js"), "line": 4}));
    // Native frames (Array.prototype.forEach) are not JavaScript frames; the next is the module.
    assert_eq!(
        s["results"][0]["stack"][1],
        json!({"function": "(anonymous)", "file": fixture("throws.js"), "line": 6})
    );
}

#[test]
fn noisy_output_loses_no_hit_and_keeps_tails() {
    let s = script("noisy.js", "", 5, "i").get("structuredContent").unwrap().clone();
    assert_eq!(values(&s).len(), 200);
    assert_eq!(s["output"]["truncated"], true);
    let stdout = s["output"]["stdout"].as_str().unwrap();
    assert!(stdout.ends_with(" 199\nnoisy done\n"), "{}", &stdout[stdout.len() - 30..]);
    assert!(stdout.len() <= 32 * 1024);
    assert!(s["output"]["stderr"].as_str().unwrap().ends_with("err 199\n"));
}

#[test]
fn debugger_statements_do_not_stop_the_run() {
    assert_eq!(values(ok(&script("debugger_stmt.js", "", 5, "twice"))), [json!(0), json!(2)]);
}

#[test]
fn timeout_after_hits_returns_them_and_kills() {
    let tag = tag();
    let result = run_script(json!({
        "command": node(&tag, "hang.js", ""),
        "breakpoint": {"file": fixture("hang.js"), "line": 5},
        "expression": "ticks", "timeout": 500,
    }));
    let s = ok(&result);
    assert_eq!(s["timedOut"], true);
    let got = values(s);
    assert!(!got.is_empty());
    assert!(got.iter().enumerate().all(|(i, v)| *v == json!(i + 1)));
    assert!(s.get("exitCode").is_none());
    assert_eq!(s["signal"], 9);
}

#[test]
fn timeout_without_hits_is_the_classic_error() {
    let result = script_with_timeout("never_called.js", 7, 800, "node");
    let e = err(&result);
    assert_eq!(e["error"], "Timeout waiting for breakpoint after 800ms");
    assert_eq!(e["code"], "timeout");
}

fn script_with_timeout(fixture_name: &str, line: u64, timeout: u64, runner: &str) -> Value {
    let tag = tag();
    let command = if runner == "node" {
        // Keep node alive past the end so the timeout, not the exit, ends the run.
        format!("DMCP_TAG={tag} node -e 'setTimeout(()=>{{}}, 60000)'")
    } else {
        format!("DMCP_TAG={tag} {runner}")
    };
    run_script(
        json!({"command": command, "breakpoint": {"file": fixture(fixture_name), "line": line},
               "expression": "1", "timeout": timeout}),
    )
}

#[test]
fn exited_before_hit_shows_why() {
    let result = script("syntax_error.js", "", 3, "1");
    let e = err(&result);
    assert_eq!(e["error"], "Process exited before breakpoint was hit");
    assert_eq!(e["code"], "exited");
    assert_eq!(e["exitCode"], 1);
    assert!(e["output"]["stderr"].as_str().unwrap().contains("SyntaxError"));
    let texts: String =
        result["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect();
    assert!(texts.contains("SyntaxError"), "stderr must reach agents that read only content");

    let result = run_script(json!({
        "command": node(&tag(), "count.js", "10"),
        "breakpoint": {"file": fixture("count.js"), "line": 6, "condition": "i < 0"}, "expression": "1",
    }));
    let e = err(&result);
    assert_eq!(e["error"], "Process exited before breakpoint was hit");
    assert_eq!(e["exitCode"], 0);
    assert_eq!(e["resolvedLine"], 6);
    assert_eq!(e["hint"], "the breakpoint was set at line 6; either that line never ran or `i < 0` was never truthy there");

    let result = run_script(json!({
        "command": node(&tag(), "never_called.js", ""),
        "breakpoint": {"file": fixture("loop.js"), "line": 5}, "expression": "1",
    }));
    let e = err(&result);
    assert!(
        e["hint"]
            .as_str()
            .unwrap()
            .starts_with("the breakpoint never bound: the program loaded no script from"),
        "{e}"
    );
}

#[test]
fn commands_that_never_open_an_inspector() {
    // Any command may start node; one that never does says so.
    let result = script_with_timeout("loop.js", 5, 800, "sleep 30");
    let e = err(&result);
    assert_eq!(e["error"], "Timeout waiting for breakpoint after 800ms");
    let hint = e["hint"].as_str().unwrap();
    assert!(
        hint.starts_with("the command started no node process that debug-mcp could follow"),
        "{hint}"
    );

    let result = script_with_timeout("loop.js", 5, 5000, "true");
    let e = err(&result);
    assert_eq!(e["code"], "exited");
    assert_eq!(e["exitCode"], 0);
    let hint = e["hint"].as_str().unwrap();
    assert!(hint.starts_with("the command started no node process"), "{hint}");

    // A shell that runs node: followed through the bootloader.
    let tag = tag();
    let command = format!("DMCP_TAG={tag} sh -c 'node \"{}\"'", fixture("loop.js"));
    let result = run_script(json!({"command": command,
        "breakpoint": {"file": fixture("loop.js"), "line": 5}, "expression": "total"}));
    let s = ok(&result);
    assert_eq!(values(s), [json!(0), json!(10), json!(25)]);
    assert!(s["processes"][0]["command"].as_str().unwrap().ends_with("fixtures/loop.js"), "{s}");

    let result = script_with_timeout("loop.js", 5, 5000, "no-such-command-here x");
    assert_eq!(err(&result)["code"], "command_not_found");
    assert_eq!(err(&result)["error"], "command not found: no-such-command-here (is it installed and on PATH? PATH is the server's)");
}

#[test]
fn port_in_use_is_named() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let tag = tag();
    let result = run_script(json!({
        "command": format!("DMCP_TAG={tag} node --inspect-brk={port} '{}'", fixture("loop.js")),
        "breakpoint": {"file": fixture("loop.js"), "line": 5}, "expression": "1",
    }));
    let e = err(&result);
    assert_eq!(e["code"], "port_in_use");
    let message = e["error"].as_str().unwrap();
    assert!(message.contains(&format!("127.0.0.1:{port} is already in use")), "{message}");
    assert!(message.contains("drop the --inspect-brk flag"), "{message}");
}

#[test]
fn explicit_inspector_ports_work() {
    let port = free_port();
    for flag in [
        format!("--inspect-brk={port}"),
        format!("--inspect-brk=127.0.0.1:{port}"),
        format!("--inspect={port}"),
    ] {
        let result = run_script(json!({
            "command": format!("DMCP_TAG={} node {flag} '{}'", tag(), fixture("loop.js")),
            "breakpoint": {"file": fixture("loop.js"), "line": 5}, "expression": "total",
        }));
        assert_eq!(values(ok(&result)), [json!(0), json!(10), json!(25)], "{flag}");
    }
    let result = run_script(json!({
        "command": format!("node --inspect-brk=0.0.0.0:{port} '{}'", fixture("loop.js")),
        "breakpoint": {"file": fixture("loop.js"), "line": 5}, "expression": "1",
    }));
    assert_eq!(err(&result)["code"], "invalid_command");
}

#[test]
fn paths_with_odd_characters_and_symlinks() {
    let dir = fixture("odd path #1 %é");
    let file = format!("{dir}/app.js");
    let result = run_script(json!({
        "command": format!("DMCP_TAG={} node '{file}'", tag()),
        "breakpoint": {"file": file, "line": 3}, "expression": "where",
    }));
    assert_eq!(values(ok(&result)), [json!("odd")]);

    // A breakpoint given through a symlink binds to the real file Node loads, and relative
    // paths resolve against the server's working directory (the repository root here).
    let link_dir = std::env::temp_dir().join(format!("dmcp-link-{}", tag()));
    std::fs::create_dir_all(&link_dir).unwrap();
    let link = link_dir.join("linked.js");
    std::os::unix::fs::symlink(Path::new(&fixture("loop.js")), &link).unwrap();
    let result = run_script(json!({
        "command": format!("DMCP_TAG={} node fixtures/loop.js", tag()),
        "breakpoint": {"file": link.display().to_string(), "line": 5}, "expression": "total",
    }));
    assert_eq!(values(ok(&result)), [json!(0), json!(10), json!(25)]);
    let result = run_script(json!({
        "command": format!("DMCP_TAG={} node '{}'", tag(), link.display()),
        "breakpoint": {"file": "fixtures/loop.js", "line": 5}, "expression": "total",
    }));
    assert_eq!(values(ok(&result)), [json!(0), json!(10), json!(25)]);
    std::fs::remove_dir_all(&link_dir).unwrap();
}

#[test]
fn environment_assignments_and_node_options() {
    let tag = tag();
    let mut server = Server::start_with(&[("NODE_OPTIONS", "--inspect=9 --no-warnings")]);
    server.request("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}));
    let result = server.debug_script(json!({
        "command": format!("DMCP_TAG={tag} GREETING='hi there' node {}", fixture("env.js")),
        "breakpoint": {"file": fixture("env.js"), "line": 3}, "expression": "[greeting, process.env.NODE_OPTIONS]",
    }));
    // The program sees the user's options, without the inspector's, and the bootloader that
    // follows its child processes.
    let seen = values(ok(&result));
    assert_eq!(seen[0][0], "hi there");
    let options = seen[0][1].as_str().unwrap();
    // Its inspector's address is said on its stderr alone (where we read it), never listed.
    assert!(
        options.starts_with("--inspect-publish-uid=stderr --no-warnings --require "),
        "{options}"
    );
    assert!(options.ends_with("boot.js\""), "{options}");
    assert!(!options.contains("--inspect=") && !options.contains("--inspect "), "{options}");
    assert_no_debuggee(&tag);
}

#[test]
fn children_of_the_debuggee_are_not_left_behind() {
    // spawns.js starts `sleep 300` and ends; its whole process group goes with it.
    let tag = tag();
    let result = run_script(json!({
        "command": node(&tag, "spawns.js", ""),
        "breakpoint": {"file": fixture("spawns.js"), "line": 6}, "expression": "typeof pid",
    }));
    assert_eq!(values(ok(&result)), [json!("number")]);
    assert_no_debuggee(&tag);
}

#[test]
fn bad_input_names_the_problem() {
    let loop_js = fixture("loop.js");
    let cases: &[(Value, &str, &str)] = &[
        (json!({}), "invalid_arguments", "invalid argument `command`: required: the program to run (or `url`, a web page to debug)"),
        (json!({"command": "node x.js", "expression": "1"}), "invalid_arguments", "invalid argument `breakpoint`: required: where to break (with `expression`), or `probes`, or `calls`, or `failures: true`, or `hang` (where a program that does not end hangs)"),
        (json!({"command": 5, "breakpoint": {"file": loop_js, "line": 1}, "expression": "1"}), "invalid_arguments", "invalid argument `command`: expected a string, got a number"),
        (json!({"command": "node a.js", "breakpoint": {"file": loop_js, "line": 0}, "expression": "1"}), "invalid_arguments", "invalid argument `breakpoint.line`: expected an integer from 1 to 4294967295, got 0"),
        (json!({"command": "node a.js", "breakpoint": {"file": loop_js, "line": "5"}, "expression": "1"}), "invalid_arguments", "invalid argument `breakpoint.line`: expected an integer from 1 to 4294967295, got a string"),
        (json!({"command": "node a.js", "breakpoint": {"line": 5}, "expression": "1"}), "invalid_arguments", "invalid argument `breakpoint.file`: required"),
        (json!({"command": "node a.js", "breakpoint": {"file": loop_js, "line": 5}}), "invalid_arguments", "invalid argument `expression`: required"),
        (json!({"command": "node a.js", "breakpoint": {"file": loop_js, "line": 5}, "expression": "1", "timeout": 600001}), "invalid_arguments", "invalid argument `timeout`: expected an integer from 1 to 600000, got 600001"),
        (json!({"command": "node a.js", "breakpoint": {"file": loop_js, "line": 5}, "expression": "1", "maxHits": 0}), "invalid_arguments", "invalid argument `maxHits`: expected an integer from 1 to 1000000, got 0"),
        (json!({"command": "node a.js", "breakpoint": {"file": loop_js, "line": 5}, "expression": "1", "includeStack": "yes"}), "invalid_arguments", "invalid argument `includeStack`: expected true or false, got a string"),
        (json!({"command": "node a.js", "breakpoint": {"file": loop_js, "line": 5}, "expression": "1", "expresion": "2"}), "invalid_arguments", "invalid argument `expresion`: unknown argument; expected one of: breakpoint, browser, calls, command, cwd, env, expression, failures, hang, includeStack, language, maxFailures, maxHits, probes, stdin, timeout, until, url, userUnhandled, webRoot"),
        (json!({"command": "node a.js | cat", "breakpoint": {"file": loop_js, "line": 5}, "expression": "1"}), "invalid_arguments", "invalid argument `command`: `|` needs a shell, and the command runs without one: write the words out literally, or quote the character ('|') if it is part of an argument"),
        (json!({"command": "node a.js", "breakpoint": {"file": "fixtures/missing.js", "line": 5}, "expression": "1"}), "file_not_found", ""),
        (json!({"command": "node a.js", "breakpoint": {"file": loop_js, "line": 8}, "expression": "1"}), "line_out_of_range", &format!("line 8 is past the end of {loop_js} (7 lines)")),
        (json!({"command": format!("node {loop_js}"), "breakpoint": {"file": loop_js, "line": 5}, "expression": "total +"}), "invalid_expression", "`expression` is not a valid JavaScript expression: SyntaxError: Unexpected token ')'"),
        (json!({"command": format!("node {loop_js}"), "breakpoint": {"file": loop_js, "line": 5, "condition": "if"}, "expression": "1"}), "invalid_expression", "`breakpoint.condition` is not a valid JavaScript expression: SyntaxError: Unexpected token 'if'"),
    ];
    let mut server = Server::initialized();
    for (arguments, code, message) in cases {
        let started = std::time::Instant::now();
        let result = server.debug_script(arguments.clone());
        let e = err(&result);
        assert_eq!(e["code"], *code, "{arguments}: {e}");
        if !message.is_empty() {
            assert_eq!(e["error"], *message, "{arguments}");
        }
        assert!(
            started.elapsed().as_secs() < 10,
            "bad input must fail at once, not at the timeout"
        );
    }
    let missing = err(&server.debug_script(json!({"command": "node a.js", "breakpoint": {"file": "fixtures/missing.js", "line": 5}, "expression": "1"})))["error"].clone();
    assert!(
        missing
            .as_str()
            .unwrap()
            .starts_with(&format!("breakpoint file {} not found", fixture("missing.js"))),
        "{missing}"
    );
}

#[test]
fn huge_answers_stay_under_the_message_limit() {
    // 3,000 hits of a 200,000-character string: ~600 MB of raw values.
    let mut server = Server::initialized();
    let tag = tag();
    let id = server.start_request(
        "tools/call",
        json!({"name": "debug-script", "arguments": {
        "command": node(&tag, "count.js", "3000"),
        "breakpoint": {"file": fixture("count.js"), "line": 6},
        "expression": "String(i).padEnd(200000, '.')"}}),
    );
    let line_len = {
        let response = server.response(&json!(id));
        let text = response.to_string();
        let s = ok(&response["result"]);
        let results = s["results"].as_array().unwrap();
        assert_eq!(results.len(), 3000);
        assert!(results[0]["value"].as_str().unwrap().starts_with("0....."));
        assert!(results[0]["value"].as_str().unwrap().ends_with("… [truncated: 200000 chars]"));
        assert_eq!(
            plain_results(s)[2999],
            json!({"type": "string", "value": "[omitted: the values so far exceed the 3 MiB answer budget]"})
        );
        assert_eq!(s["valuesTruncated"], true);
        text.len()
    };
    assert!(line_len < 10 * 1024 * 1024, "message of {line_len} bytes");
    assert_no_debuggee(&tag);
}

#[test]
fn older_node_without_inspect_wait_falls_back_to_inspect_brk() {
    // A `node` first on PATH that refuses --inspect-wait the way Node before 20.15 does, and
    // otherwise runs the real node.
    let dir = std::env::temp_dir().join(format!("dmcp-old-node-{}", tag()));
    std::fs::create_dir_all(&dir).unwrap();
    let real = String::from_utf8(
        std::process::Command::new("sh").args(["-c", "command -v node"]).output().unwrap().stdout,
    )
    .unwrap();
    let fake = dir.join("node");
    std::fs::write(&fake, format!(
        "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in --inspect-wait*) echo \"$0: bad option: $a\" >&2; exit 9;; esac; done\nexec {} \"$@\"\n",
        real.trim()
    )).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());
    let mut server = Server::start_with(&[("PATH", &path)]);
    let tag = tag();
    let result = server.debug_script(json!({
        "command": node(&tag, "loop.js", ""),
        "breakpoint": {"file": fixture("loop.js"), "line": 5}, "expression": "total"}));
    assert_eq!(values(ok(&result)), [json!(0), json!(10), json!(25)]);
    assert_no_debuggee(&tag);
    std::fs::remove_dir_all(&dir).unwrap();
}
