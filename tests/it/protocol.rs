//! The MCP server core through the real binary: handshake, errors, and behaviour while a long
//! tool call runs (ping, cancellation, progress, concurrency, shutdown).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{
    assert_no_debuggee, eventually, fixture, node, ok, processes_with_tag, tag, values, Server,
};

#[test]
fn handshake_negotiates_versions() {
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let mut server = Server::start();
        let response = server.request("initialize", json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}));
        let result = &response["result"];
        assert_eq!(result["protocolVersion"], answered);
        assert_eq!(result["serverInfo"]["name"], "debug-mcp");
        assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
        assert!(result["serverInfo"]["title"].is_string());
        assert_eq!(
            result["capabilities"],
            json!({"tools": {"listChanged": false}, "logging": {},
                   "resources": {"subscribe": true, "listChanged": true},
                   "prompts": {"listChanged": false}})
        );
        assert!(result["instructions"].as_str().unwrap().contains("debug-script"));
    }
}

#[test]
fn tools_list_declares_every_tool() {
    let mut server = Server::initialized();
    let tools = server.request("tools/list", json!({}))["result"]["tools"].clone();
    let tools = tools.as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "debug-script",
            "debug-launch",
            "debug-restart",
            "debug-sessions",
            "debug-stop",
            "debug-continue",
            "debug-watch",
            "debug-breakpoint",
            "debug-stack",
            "debug-variables",
            "debug-evaluate",
            "debug-output",
            "debug-source",
        ]
    );
    for tool in tools {
        assert!(tool["title"].is_string() && tool["description"].is_string(), "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
        assert!(tool["annotations"]["readOnlyHint"].is_boolean(), "{tool}");
    }
    let script = &tools[0];
    // `command` or `url`; `breakpoint` and `expression`, or `probes`, or `failures`: the call
    // says which is missing.
    assert_eq!(script["inputSchema"]["required"], json!([]));
}

/// Each tool accepts exactly the fields its inputSchema declares, at the top level and in
/// `breakpoint`/`breakpoints[i]`: a declared field is never refused as unknown, and a field
/// some other tool declares is refused where this one does not. (Values are `null`: every
/// call fails on its type, so nothing runs.)
/// What the README says `tools/list` costs: the names, descriptions and input schemas a client
/// puts before the model at most 10 KB (compact JSON), the whole answer (output schemas too) at
/// most 20 KB. (The README said "under 9 KB" of a 19.5 KB answer.)
#[test]
fn tools_list_costs_what_the_readme_says() {
    let mut server = Server::initialized();
    let answer = server.request("tools/list", json!({}))["result"].clone();
    let facing: usize = answer["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!({"name": t["name"], "description": t["description"],
                        "inputSchema": t["inputSchema"]})
            .to_string()
            .len()
        })
        .sum();
    assert!(facing <= 10 * 1024, "{facing} bytes of names, descriptions and input schemas");
    let whole = answer.to_string().len();
    assert!(whole <= 20 * 1024, "the whole tools/list answer is {whole} bytes");
    let readme = std::fs::read_to_string(crate::root().join("README.md")).unwrap();
    assert!(readme.contains("names, descriptions and input schemas, 10 KB"), "README's figure");
}

#[test]
fn tools_accept_exactly_the_fields_their_schema_declares() {
    let mut server = Server::initialized();
    let tools = server.request("tools/list", json!({}))["result"]["tools"].clone();
    let tools = tools.as_array().unwrap();
    let fields = |schema: &Value| -> Vec<String> {
        schema["properties"].as_object().map_or(Vec::new(), |p| p.keys().cloned().collect())
    };
    // Each place that takes an object of fields: (its schema, how to wrap a test object). A
    // nested object is checked after the top-level fields a tool reads first, so those get
    // plain values where the tool declares them.
    type Wrap = Box<dyn Fn(Value) -> Value>;
    let mut places: Vec<(String, Value, Wrap)> = Vec::new();
    for tool in tools {
        let name = tool["name"].as_str().unwrap().to_string();
        let schema = tool["inputSchema"].clone();
        let mut base = json!({});
        for (field, value) in [("command", "node x.js"), ("expression", "1")] {
            if schema.pointer(&format!("/properties/{field}")).is_some() {
                base[field] = value.into();
            }
        }
        if let Some(entry) = schema.pointer("/properties/breakpoint").cloned() {
            let base = base.clone();
            let wrap = move |o| {
                let mut arguments = base.clone();
                arguments["breakpoint"] = o;
                arguments
            };
            places.push((name.clone(), entry, Box::new(wrap)));
        }
        if let Some(entry) = schema.pointer("/properties/breakpoints/items").cloned() {
            let wrap = move |o| {
                let mut arguments = base.clone();
                arguments["breakpoints"] = json!([o]);
                arguments
            };
            places.push((name.clone(), entry, Box::new(wrap)));
        }
        places.push((name, schema, Box::new(|o| o)));
    }
    let everywhere: std::collections::BTreeSet<String> =
        places.iter().flat_map(|(_, schema, _)| fields(schema)).collect();
    for (name, schema, wrap) in &places {
        let declared = fields(schema);
        for field in &everywhere {
            let result = server.call(name, wrap(json!({field.as_str(): null})));
            let error = result["structuredContent"]["error"].as_str().unwrap_or_default();
            let refused = error.contains("unknown argument");
            let is_declared = declared.contains(field);
            assert_eq!(
                refused,
                !is_declared,
                "{name}: field `{field}` is {} but the call answered {result}",
                if is_declared { "declared" } else { "not declared" }
            );
        }
    }
}

#[test]
fn errors_use_the_right_codes_and_the_server_keeps_reading() {
    let mut server = Server::start();
    let cases: &[(&[u8], Value)] = &[
        (b"{not json", json!({"code": -32700, "id": null})),
        (b"\xff\xfe", json!({"code": -32700, "id": null})),
        (b"[]", json!({"code": -32600, "id": null})),
        (br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, json!({"code": -32600, "id": null})),
        (br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, json!({"code": -32600, "id": null})),
        (br#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#, json!({"code": -32600, "id": 5})),
        (br#"{"jsonrpc":"2.0","id":6}"#, json!({"code": -32600, "id": 6})),
        (
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}}}"#,
            json!({"code": -32022, "id": 7}),
        ),
        (
            br#"{"jsonrpc":"2.0","id":8,"method":"completion/complete"}"#,
            json!({"code": -32601, "id": 8}),
        ),
        (
            br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nope"}}"#,
            json!({"code": -32602, "id": 9}),
        ),
        (
            br#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{}}"#,
            json!({"code": -32602, "id": 10}),
        ),
        (
            br#"{"jsonrpc":"2.0","id":11,"method":"logging/setLevel","params":{"level":"loud"}}"#,
            json!({"code": -32602, "id": 11}),
        ),
    ];
    for (line, expected) in cases {
        server.send_raw(line);
        let response = server.recv();
        assert_eq!(response["jsonrpc"], "2.0");
        assert_eq!(response["id"], expected["id"], "{}", String::from_utf8_lossy(line));
        assert_eq!(
            response["error"]["code"],
            expected["code"],
            "{}",
            String::from_utf8_lossy(line)
        );
        assert!(response["error"]["message"].is_string());
    }
    server.send_raw(br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"nope"}}"#);
    assert_eq!(server.recv()["error"]["message"], "Unknown tool: nope");
    // Still alive and answering, with ids echoed in their exact type.
    server.send_raw(br#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#);
    assert_eq!(server.recv(), json!({"jsonrpc": "2.0", "id": "abc", "result": {}}));
    server.send_raw(br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#);
    assert_eq!(server.recv(), json!({"jsonrpc": "2.0", "id": 0, "result": {}}));
    server.send_raw(br#"{"jsonrpc":"2.0","id":-3.5,"method":"ping"}"#);
    assert_eq!(server.recv()["id"], json!(-3.5));
    // Digit for digit, beyond what a 64-bit number holds.
    server.send_raw(br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#);
    assert_eq!(
        server.recv_line(),
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}"#
    );
}

#[test]
fn notifications_are_never_answered() {
    let mut server = Server::initialized();
    server.notify("notifications/unknown", json!({}));
    server.notify("notifications/cancelled", json!({"requestId": 99}));
    server.send_raw(br#"{"jsonrpc":"2.0","method":"ping"}"#);
    server.send_raw(b"");
    server.send_raw(b"   ");
    server.send_raw(br#"{"jsonrpc":"2.0","id":1000,"method":"ping"}"#);
    assert_eq!(server.recv()["id"], 1000, "the only answer is to the request");
}

#[test]
fn log_messages_follow_the_level_the_client_sets() {
    let mut server = Server::initialized();
    let call = |server: &mut Server| {
        let tag = tag();
        server.debug_script(json!({"command": node(&tag, "loop.js", ""),
            "breakpoint": {"file": fixture("loop.js"), "line": 5}, "expression": "total"}));
        assert_no_debuggee(&tag);
    };
    // By default only warnings and worse are sent: a clean run sends none.
    call(&mut server);
    assert_eq!(server.notifications, Vec::<Value>::new());

    assert_eq!(server.request("logging/setLevel", json!({"level": "info"}))["result"], json!({}));
    call(&mut server);
    let messages: Vec<(&str, &str)> = server
        .notifications
        .iter()
        .map(|n| {
            assert_eq!(n["method"], "notifications/message");
            assert_eq!(n["params"]["logger"], "debug-mcp");
            (n["params"]["level"].as_str().unwrap(), n["params"]["data"].as_str().unwrap())
        })
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0].0, "info");
    assert!(messages[0].1.starts_with("started node (pid "), "{messages:?}");
    assert_eq!(messages[1], ("info", "program ended (exit code 0) after 3 hit(s)"));

    server.notifications.clear();
    server.request("logging/setLevel", json!({"level": "error"}));
    call(&mut server);
    assert_eq!(server.notifications, Vec::<Value>::new());
}

#[test]
fn arguments_that_are_not_an_object_are_a_tool_error() {
    let mut server = Server::initialized();
    let response = server.request("tools/call", json!({"name": "debug-script", "arguments": [1]}));
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(
        response["result"]["structuredContent"]["error"],
        "invalid argument `arguments`: expected an object"
    );
}

/// Starts a debug-script call on hang.js (which never ends) and returns its request id.
fn start_hanging_call(server: &mut Server, tag: &str, extra: Value) -> i64 {
    let mut params = json!({"name": "debug-script", "arguments": {
        "command": node(tag, "hang.js", ""),
        "breakpoint": {"file": fixture("hang.js"), "line": 5},
        "expression": "ticks", "timeout": 60000}});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    server.start_request("tools/call", params)
}

#[test]
fn ping_is_answered_during_a_call_and_cancel_kills_the_debuggee() {
    let mut server = Server::initialized();
    let tag = tag();
    let call = start_hanging_call(&mut server, &tag, json!({}));
    eventually(Duration::from_secs(20), "the debuggee starts", || {
        !processes_with_tag(&tag).is_empty()
    });

    let started = Instant::now();
    let ping = server.start_request("ping", json!({}));
    let response = server.recv();
    assert_eq!(response, json!({"jsonrpc": "2.0", "id": ping, "result": {}}));
    assert!(started.elapsed() < Duration::from_secs(1), "ping waited for the call");

    let cancelled = Instant::now();
    server.notify("notifications/cancelled", json!({"requestId": call, "reason": "test"}));
    eventually(Duration::from_secs(1), "the debuggee is killed within a second", || {
        processes_with_tag(&tag).is_empty()
    });
    assert!(cancelled.elapsed() < Duration::from_secs(1));
    // No response for the cancelled call: the next message is the answer to a later ping.
    let ping = server.start_request("ping", json!({}));
    assert_eq!(server.recv()["id"], ping);
    assert!(server.recv_within(Duration::from_millis(300)).is_none());
    assert_no_debuggee(&tag);
}

#[test]
fn progress_reports_hits_strictly_increasing() {
    let mut server = Server::initialized();
    let tag = tag();
    let id = server.start_request(
        "tools/call",
        json!({
        "name": "debug-script",
        "_meta": {"progressToken": "p-1"},
        "arguments": {"command": node(&tag, "count.js", "3000"),
                      "breakpoint": {"file": fixture("count.js"), "line": 6}, "expression": "i"}}),
    );
    let response = server.response(&json!(id));
    assert_eq!(values(ok(&response["result"])).len(), 3000);
    let progress: Vec<&Value> =
        server.notifications.iter().filter(|n| n["method"] == "notifications/progress").collect();
    assert!(!progress.is_empty(), "no progress notification");
    let mut last = 0;
    for p in &progress {
        assert_eq!(p["params"]["progressToken"], "p-1");
        let value = p["params"]["progress"].as_u64().unwrap();
        assert!(value > last, "progress not strictly increasing: {progress:?}");
        assert!(value <= 3000);
        last = value;
    }
    assert_eq!(progress[0]["params"]["progress"], 1, "the first hit is reported at once");
    assert_no_debuggee(&tag);
}

#[test]
fn two_calls_in_flight_both_complete() {
    let mut server = Server::initialized();
    let (a, b) = (tag(), tag());
    let first = server.start_request("tools/call", json!({"name": "debug-script", "arguments": {
        "command": node(&a, "count.js", "500"), "breakpoint": {"file": fixture("count.js"), "line": 6}, "expression": "i * 2"}}));
    let second = server.start_request("tools/call", json!({"name": "debug-script", "arguments": {
        "command": node(&b, "loop.js", ""), "breakpoint": {"file": fixture("loop.js"), "line": 5}, "expression": "total"}}));
    let mut answers = std::collections::HashMap::new();
    while answers.len() < 2 {
        let message = server.recv();
        if let Some(id) = message["id"].as_i64() {
            answers.insert(id, message);
        }
    }
    let first = values(ok(&answers[&first]["result"]));
    assert_eq!(first.len(), 500);
    assert_eq!(first[499], 998);
    assert_eq!(values(ok(&answers[&second]["result"])), [json!(0), json!(10), json!(25)]);
    assert_no_debuggee(&a);
    assert_no_debuggee(&b);
}

#[test]
fn stdin_eof_during_a_call_kills_the_debuggee_and_exits_zero() {
    let mut server = Server::initialized();
    let tag = tag();
    start_hanging_call(&mut server, &tag, json!({}));
    eventually(Duration::from_secs(20), "the debuggee starts", || {
        !processes_with_tag(&tag).is_empty()
    });
    let (status, took) = server.close();
    assert_eq!(status.code(), Some(0));
    assert!(took < Duration::from_secs(1), "exit took {took:?}");
    assert_no_debuggee(&tag);
}

#[test]
fn sigterm_and_sigint_kill_debuggees_and_exit_zero() {
    for signal in ["-TERM", "-INT"] {
        let mut server = Server::initialized();
        let tag = tag();
        start_hanging_call(&mut server, &tag, json!({}));
        eventually(Duration::from_secs(20), "the debuggee starts", || {
            !processes_with_tag(&tag).is_empty()
        });
        let started = Instant::now();
        let killed = std::process::Command::new("kill")
            .args([signal, &server.pid().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = server.wait_exit();
        assert_eq!(status.code(), Some(0), "{signal}");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{signal}: exit took {:?}",
            started.elapsed()
        );
        assert_no_debuggee(&tag);
    }
}

#[test]
fn eof_with_nothing_running_exits_at_once() {
    let mut server = Server::initialized();
    let (status, took) = server.close();
    assert_eq!(status.code(), Some(0));
    assert!(took < Duration::from_secs(1));
}

#[cfg(target_os = "linux")]
#[test]
fn sigkill_of_the_server_takes_its_debuggees_along() {
    // SIGKILL cannot be caught: the kernel kills the debuggee when its parent dies.
    let mut server = Server::initialized();
    let tag = tag();
    start_hanging_call(&mut server, &tag, json!({}));
    eventually(Duration::from_secs(20), "the debuggee starts", || {
        !processes_with_tag(&tag).is_empty()
    });
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    server.wait_exit();
    assert_no_debuggee(&tag);
}

/// MCP 2026-07-28's Tasks extension: a client that declares it gets a `debug-script` call back
/// at once as a task handle, polls it with `tasks/get` to its answer, and `tasks/cancel` ends a
/// long run (its program killed); `server/discover` offers the extension; a client without it
/// gets the plain answer.
#[test]
fn long_runs_as_tasks_for_clients_that_take_them() {
    let mut server = Server::start();
    let discovered = server.request("server/discover", json!({}));
    let extensions = &discovered["result"]["capabilities"]["extensions"];
    assert_eq!(extensions["io.modelcontextprotocol/tasks"], json!({}), "{discovered}");
    let meta = |tasks: bool| {
        let mut capabilities = json!({});
        if tasks {
            capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
        }
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": capabilities})
    };
    let script = |arguments: Value, tasks: bool| json!({"name": "debug-script", "arguments": arguments, "_meta": meta(tasks)});
    let loop_js = json!({"command": format!("node {}", fixture("loop.js")),
        "breakpoint": {"file": fixture("loop.js"), "line": 5}, "expression": "total"});
    let plain = server.request("tools/call", script(loop_js.clone(), false));
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert_eq!(plain["result"]["structuredContent"]["results"].as_array().unwrap().len(), 3);

    let created = server.request("tools/call", script(loop_js, true));
    let task = &created["result"];
    assert_eq!(
        (&task["resultType"], &task["status"]),
        (&json!("task"), &json!("working")),
        "{created}"
    );
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'), "{task}");
    let id = task["taskId"].clone();
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let got = server.request("tasks/get", json!({"taskId": id, "_meta": meta(true)}));
        assert_eq!(got["result"]["resultType"], "complete", "{got}");
        if got["result"]["status"] != "working" || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(done["result"]["status"], "completed", "{done}");
    crate::check_result_shape(&done["result"]["result"]);
    crate::schema::check("debug-script", &done["result"]["result"]["structuredContent"]);
    let results = &done["result"]["result"]["structuredContent"]["results"];
    assert_eq!(
        values(&done["result"]["result"]["structuredContent"]),
        [json!(0), json!(10), json!(25)],
        "{results}"
    );

    let tag = tag();
    let long = json!({"command": format!("DMCP_TAG={tag} node {} 100000000", fixture("count.js")),
        "breakpoint": {"file": fixture("count.js"), "line": 6, "condition": "i < 0"},
        "expression": "i", "timeout": 60000});
    let created = server.request("tools/call", script(long, true));
    let id = created["result"]["taskId"].clone();
    eventually(Duration::from_secs(20), "the long program runs", || {
        !processes_with_tag(&tag).is_empty()
    });
    let cancelled = server.request("tasks/cancel", json!({"taskId": id, "_meta": meta(true)}));
    assert_eq!(cancelled["result"], json!({"resultType": "complete"}), "{cancelled}");
    eventually(Duration::from_secs(10), "the task is cancelled", || {
        server.request("tasks/get", json!({"taskId": id}))["result"]["status"] == "cancelled"
    });
    assert_no_debuggee(&tag);
    let unknown = server.request("tasks/get", json!({"taskId": "nope"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}
