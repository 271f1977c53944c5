//! JVM sessions through JDWP (`debug-launch` and attach): breakpoints with conditions and
//! logpoints, steps, locals and fields set, watchpoints, a server stopped once per request, a
//! JVM the program starts followed, an attached JVM let go; and Maven's forked test JVM.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use crate::java::{compiled, orders, script};
use crate::need::{need, Tool};
use crate::{fixture, ok, root, tool, Server};

/// A session on the compiled fixture: `java -cp CLASSES {args}` launched with `more` of
/// `debug-launch`'s arguments, and its first answer; `None` without a JDK (the test is
/// skipped).
fn session(args: &str, more: Value) -> Option<(Server, Value)> {
    if !need(Tool::Java) {
        return None;
    }
    let classes = compiled(false);
    let mut server = Server::initialized();
    let mut arguments = json!({"command": format!("java -cp {classes} {args}"),
                               "cwd": fixture("java/orders")});
    for (key, value) in more.as_object().unwrap() {
        arguments[key] = value.clone();
    }
    let state = tool(&mut server, "debug-launch", arguments);
    Some((server, state))
}

/// A session on the JVM: a breakpoint with a condition and a logpoint, values, a member by
/// path, a local set and seen by the program, steps over, into and out, an uncaught
/// exception's stop, and the program's end with its output.
#[test]
fn a_session_stops_steps_sets_and_stops_at_an_uncaught_exception() {
    let Some((mut server, state)) = session(
        "app.Main fail",
        json!({"breakpoints": [{"file": orders("Orders.java"), "line": 32, "logMessage": "total is {total}"},
                               {"file": orders("Main.java"), "line": 7, "condition": "total > 30"}],
               "pauseOnExceptions": "uncaught"}),
    ) else {
        return;
    };
    assert_eq!(
        (&state["state"], &state["reason"]),
        (&json!("paused"), &json!("breakpoint")),
        "{state}"
    );
    assert_eq!(
        (&state["location"]["function"], &state["location"]["line"]),
        (&json!("Main.main"), &json!(7)),
        "{state}"
    );
    assert_eq!(state["hitBreakpoints"], json!(["2"]), "{state}");
    let total = state["locals"].as_array().unwrap().iter().find(|l| l["name"] == "total").unwrap();
    assert_eq!(total["value"], 35.0, "{state}");

    let value = tool(
        &mut server,
        "debug-evaluate",
        json!({"expression": "order.items.get(2).qty() * 2 + \" pads\""}),
    );
    assert_eq!(value, json!({"type": "String", "value": "8 pads"}));
    let item = tool(&mut server, "debug-variables", json!({"path": "order.items"}));
    assert_eq!(item["variables"][1]["value"], "{name: \"ink\", price: 5.0, qty: 3}", "{item}");
    let set =
        tool(&mut server, "debug-evaluate", json!({"set": "total", "expression": "total + 64.5"}));
    assert_eq!((&set["type"], &set["value"]), (&json!("double"), &json!(99.5)), "{set}");

    let over = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!((&over["reason"], &over["location"]["line"]), (&json!("step"), &json!(8)), "{over}");
    let into = tool(&mut server, "debug-continue", json!({"step": "into"}));
    assert_eq!(into["location"]["function"], "Orders.counts", "{into}");
    let out = tool(&mut server, "debug-continue", json!({"step": "out"}));
    assert_eq!(
        (&out["location"]["function"], &out["location"]["line"]),
        (&json!("Main.main"), &json!(8)),
        "{out}"
    );

    let thrown = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(thrown["reason"], "exception", "{thrown}");
    assert_eq!(
        (
            &thrown["exception"]["class"],
            &thrown["exception"]["message"],
            &thrown["exception"]["uncaught"]
        ),
        (&json!("java.lang.IllegalStateException"), &json!("no stock for A-1"), &json!(true)),
        "{thrown}"
    );
    assert_eq!(thrown["location"]["line"], 11, "{thrown}");
    let ended = tool(&mut server, "debug-continue", json!({}));
    assert_eq!((&ended["state"], &ended["exitCode"]), (&json!("exited"), &json!(1)), "{ended}");
    assert!(
        ended["stdout"].as_str().unwrap().starts_with("total 99.5\n"),
        "the program saw the value set: {ended}"
    );
    let output = tool(&mut server, "debug-output", json!({}));
    let logged: Vec<&Value> =
        output["console"].as_array().unwrap().iter().map(|c| &c["text"]).collect();
    assert_eq!(logged, ["total is 0.0", "total is 10.0", "total is 25.0"], "{output}");
}

/// `set` on a field of an object and on an array's element, as Java assigns them: the
/// program sees the new values (an argument changed to `fail` makes it throw); a final field
/// is refused as javac refuses it.
#[test]
fn a_session_sets_fields_and_elements_the_program_sees() {
    let Some((mut server, state)) =
        session("app.Main ok", json!({"breakpoints": [{"file": orders("Main.java"), "line": 8}]}))
    else {
        return;
    };
    assert_eq!(state["location"]["line"], 8, "{state}");
    let set = |server: &mut Server, target: &str, value: &str| {
        tool(server, "debug-evaluate", json!({"set": target, "expression": value}))
    };
    let status = set(&mut server, "order.status", "Orders.Status.PAID");
    assert_eq!((&status["type"], &status["value"]), (&json!("Orders.Status"), &json!("PAID")));
    let argument = set(&mut server, "args[0]", "\"fa\" + \"il\"");
    assert_eq!(argument["value"], "fail", "{argument}");
    let refused =
        server.call("debug-evaluate", json!({"set": "order.id", "expression": "\"B-2\""}));
    let refused = &refused["structuredContent"];
    assert_eq!(refused["code"], "invalid_expression", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("final variable id"), "{refused}");
    let seen = tool(
        &mut server,
        "debug-evaluate",
        json!({"expression": "order.status + \" \" + args[0]"}),
    );
    assert_eq!(seen["value"], "PAID fail", "{seen}");
    let ended = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(ended["exitCode"], 1, "{ended}");
    assert!(ended["stderr"].as_str().unwrap().contains("no stock for A-1"), "{ended}");
}

/// Watchpoints on fields: a write to one object's field stops once it is written (old and
/// new values), in whichever method writes it; a static field's too; a local is refused
/// (JDWP watches fields only), and removing a watchpoint lets the program run on.
#[test]
fn watchpoints_stop_where_a_field_is_written() {
    let Some((mut server, state)) = session(
        "app.Account",
        json!({"breakpoints": [{"file": orders("Account.java"), "line": 24}]}),
    ) else {
        return;
    };
    assert_eq!(state["location"]["line"], 24, "{state}");
    let refused = server.call("debug-breakpoint", json!({"data": "account", "access": "write"}));
    let refused = &refused["structuredContent"];
    assert!(refused["error"].as_str().unwrap().contains("fields only"), "{refused}");
    let watch = tool(
        &mut server,
        "debug-breakpoint",
        json!({"data": "account.balance", "access": "write"}),
    );
    assert_eq!(watch["value"], json!({"type": "long", "value": 0}), "{watch}");
    let mut seen = Vec::new();
    for _ in 0..2 {
        let stop = tool(&mut server, "debug-continue", json!({}));
        assert_eq!(stop["reason"], "watchpoint", "{stop}");
        let change = &stop["watchpoints"][0];
        seen.push((
            stop["location"]["function"].clone(),
            change["old"]["value"].clone(),
            change["new"]["value"].clone(),
        ));
    }
    assert_eq!(
        seen,
        [
            (json!("Account.deposit"), json!(0), json!(100)),
            (json!("Account.charge"), json!(100), json!(70))
        ]
    );
    tool(&mut server, "debug-breakpoint", json!({"remove": watch["breakpointId"]}));
    let opened =
        tool(&mut server, "debug-breakpoint", json!({"data": "Account.opened", "access": "write"}));
    assert_eq!(opened["value"]["value"], 1, "{opened}");
    let stop = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(stop["location"]["function"], "Account.<init>", "{stop}");
    assert_eq!(stop["watchpoints"][0]["new"]["value"], 2, "{stop}");
    let ended = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(ended["stdout"], "balance 75, opened 2, seen 70\n", "{ended}");
}

/// `GET /price?qty=N` from the server fixture on `port`, on a thread of its own: its answer.
fn price(port: u16, qty: u32) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
        write!(stream, "GET /price?qty={qty} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    })
}

/// A server that handles requests on a pool of threads: a breakpoint in its handler stops
/// once per request, each in the thread that took it, and the session's threads are the
/// program's (not the JVM's own).
#[test]
fn a_servers_breakpoint_stops_once_per_request() {
    let Some((mut server, state)) = session(
        "app.Server",
        json!({"breakpoints": [{"file": orders("Server.java"), "line": 14}], "timeout": 3000}),
    ) else {
        return;
    };
    assert_eq!(state["state"], "running", "{state}");
    let mut port = 0u16;
    crate::eventually(std::time::Duration::from_secs(20), "the server listens", || {
        let output = tool(&mut server, "debug-output", json!({}));
        let text = output["stdout"].as_str().unwrap_or_default().to_string();
        port = text.trim().strip_prefix("listening on ").and_then(|p| p.parse().ok()).unwrap_or(0);
        port != 0
    });
    let ask = |qty: u32| price(port, qty);
    let (first, second) = (ask(2), ask(4));
    let mut seen = Vec::new();
    for _ in 0..2 {
        let stop = tool(&mut server, "debug-continue", json!({"timeout": 20000}));
        assert_eq!(
            (&stop["reason"], &stop["location"]["line"]),
            (&json!("breakpoint"), &json!(14)),
            "{stop}"
        );
        let qty = tool(&mut server, "debug-evaluate", json!({"expression": "qty"}));
        seen.push(qty["value"].as_u64().unwrap());
        let stack = tool(&mut server, "debug-stack", json!({}));
        let threads: Vec<String> = stack["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        assert!(threads.iter().any(|t| t.starts_with("pool-")), "{stack}");
        assert!(!threads.iter().any(|t| t == "Reference Handler" || t == "Finalizer"), "{stack}");
    }
    seen.sort_unstable();
    assert_eq!(seen, [2, 4]);
    let running = tool(&mut server, "debug-continue", json!({"timeout": 500}));
    assert_eq!(running["state"], "running", "{running}");
    assert!(first.join().unwrap().ends_with("total 5.0\n"));
    assert!(second.join().unwrap().ends_with("total 10.0\n"));
    let stopped = tool(&mut server, "debug-stop", json!({}));
    assert_eq!(stopped["stopped"], true, "{stopped}");
}

/// `mvn test`: Maven's own JVM and surefire's forked one both connect; the failing test and
/// the exception of the test's thread are the fork's, with the test's name and locals, and
/// nothing of Maven's own (its exceptions are a build tool's, its frames not the program's).
#[test]
fn maven_tests_fail_in_surefires_fork() {
    if !need(Tool::Maven) {
        return;
    }
    // A copy of the project: Maven writes its `target/` beside the pom.
    let project = root().join(format!("target/java/maven-{}", crate::tag()));
    let fixture_dir = PathBuf::from(fixture("java/orders"));
    for name in ["pom.xml", "maven-settings.xml"] {
        std::fs::create_dir_all(&project).unwrap();
        std::fs::copy(fixture_dir.join(name), project.join(name)).unwrap();
    }
    let copied = Command::new("cp").arg("-r").arg(fixture_dir.join("src")).arg(&project).status();
    assert!(copied.unwrap().success());
    let mut server = Server::initialized();
    let result = server.debug_script(json!({
        "command": "mvn -q -s maven-settings.xml test", "cwd": project.display().to_string(),
        "failures": true, "timeout": 300000}));
    let s = ok(&result);
    let failures = s["failures"].as_array().unwrap();
    let named: Vec<(&Value, &Value)> = failures.iter().map(|f| (&f["kind"], &f["test"])).collect();
    assert_eq!(
        named,
        [
            (&json!("test"), &json!("OrdersTest.totalsAnOrder")),
            (&json!("uncaught"), &json!("OrdersTest.reportsInABackgroundThread"))
        ],
        "{s}"
    );
    assert_eq!(failures[0]["frames"][0]["locals"]["total"], "25.0", "{s}");
    assert_eq!(s["processes"].as_array().unwrap().len(), 2, "Maven's JVM and the fork: {s}");
    assert_eq!(s["exitCode"], 1, "{s}");
    let _ = std::fs::remove_dir_all(&project);
}

/// A JVM that starts another (surefire's fork, Gradle's test workers): the child is debugged
/// in the same session. Its breakpoint stops there, the stop says which process, its threads
/// are listed as `pid/id`, both JVMs are the session's processes (the child's parent named),
/// and the program runs to its end.
#[test]
fn a_session_follows_a_jvm_the_program_starts() {
    let Some((mut server, state)) =
        session("app.Fork", json!({"breakpoints": [{"file": orders("Orders.java"), "line": 32}]}))
    else {
        return;
    };
    assert_eq!(
        (&state["reason"], &state["location"]["function"], &state["location"]["line"]),
        (&json!("breakpoint"), &json!("Orders.total"), &json!(32)),
        "{state}"
    );
    let child = state["process"]["pid"].as_u64().unwrap();
    assert!(state["process"]["command"].as_str().unwrap().ends_with("app.Main"), "{state}");
    let thread = state["process"]["thread"].as_str().unwrap().to_string();
    assert!(thread.starts_with(&format!("{child}/")), "{state}");
    let item =
        tool(&mut server, "debug-evaluate", json!({"expression": "item.name() + item.qty()"}));
    assert_eq!(item["value"], "pen1", "{item}");
    let sessions = tool(&mut server, "debug-sessions", json!({}));
    let processes = sessions["sessions"][0]["processes"].as_array().unwrap().clone();
    assert_eq!(processes.len(), 2, "{sessions}");
    assert_eq!(processes[1]["pid"], child, "{sessions}");
    assert_eq!(processes[1]["parent"], processes[0]["pid"], "{sessions}");
    assert!(processes[0]["command"].as_str().unwrap().ends_with("app.Fork"), "{sessions}");
    let threads = tool(&mut server, "debug-threads", json!({}));
    let ids: Vec<&str> =
        threads["threads"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&thread.as_str()), "{threads}");
    assert!(ids.iter().any(|id| !id.contains('/')), "the first JVM's threads too: {threads}");
    let current = threads["threads"].as_array().unwrap().iter().find(|t| t["current"] == true);
    assert_eq!(current.unwrap()["id"], thread, "{threads}");

    let mut hits = 1;
    let ended = loop {
        let state = tool(&mut server, "debug-continue", json!({}));
        if state["state"] != "paused" {
            break state;
        }
        assert_eq!(state["process"]["pid"], child, "{state}");
        hits += 1;
    };
    assert_eq!(hits, 3, "one stop per item");
    assert_eq!((&ended["state"], &ended["exitCode"]), (&json!("exited"), &json!(0)), "{ended}");
    let stdout = ended["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("total 35.0\n") && stdout.ends_with("child ended 0\n"), "{ended}");
}

/// Attaching by port to a JVM whose agent listens (`server=y,suspend=n`): a breakpoint in the
/// running server's handler stops a request; debug-stop lets go of the JVM, which answers the
/// next request by itself, and is not ended.
#[test]
fn attach_by_port_stops_a_running_server_and_lets_it_go() {
    if !need(Tool::Java) {
        return;
    }
    let classes = compiled(false);
    let agent_port = crate::free_port();
    let mut program = Command::new("java")
        .arg(format!(
            "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:{agent_port}"
        ))
        .args(["-cp", &classes, "app.Server"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    {
        use std::io::BufRead;
        let mut out = std::io::BufReader::new(program.stdout.as_mut().unwrap());
        // "Listening for transport dt_socket…", then the server's own line.
        while !line.starts_with("listening on ") {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "the server ended");
        }
    }
    let port: u16 = line.trim().strip_prefix("listening on ").unwrap().parse().unwrap();
    let ask = move |qty: u32| price(port, qty);
    let mut server = Server::initialized();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"port": agent_port, "language": "java", "cwd": fixture("java/orders"),
               "breakpoints": [{"file": orders("Server.java"), "line": 14}], "timeout": 1000}),
    );
    assert_eq!(state["state"], "running", "{state}");
    let first = ask(3);
    let stop = tool(&mut server, "debug-continue", json!({"timeout": 20000}));
    assert_eq!(
        (&stop["reason"], &stop["location"]["line"]),
        (&json!("breakpoint"), &json!(14)),
        "{stop}"
    );
    assert_eq!(stop["location"]["file"], orders("Server.java"), "{stop}");
    assert!(stop.get("process").is_none(), "an attached JVM's process is not known: {stop}");
    let qty = tool(&mut server, "debug-evaluate", json!({"expression": "qty * 10"}));
    assert_eq!(qty["value"], 30, "{qty}");
    let stopped = tool(&mut server, "debug-stop", json!({}));
    assert_eq!(stopped["stopped"], true, "{stopped}");
    assert!(first.join().unwrap().ends_with("total 7.5\n"));
    // Let go: the next request is answered without a stop.
    assert!(ask(4).join().unwrap().ends_with("total 10.0\n"));
    assert!(program.try_wait().unwrap().is_none(), "the attached JVM runs on");
    let _ = program.kill();
    let _ = program.wait();
}

/// `userUnhandled`: an exception that leaves the program's own code into a library that
/// catches it (a pool's task catches what the submitted code throws) is a failure of its own
/// kind with the own frames and their locals, and a session stops there; one the program
/// catches itself is neither; without `userUnhandled`, nothing.
#[test]
fn user_unhandled_is_an_exception_a_library_caught_from_own_code() {
    let command = |classes: &str| format!("java -cp {classes} app.Handled");
    let Some(result) = script(Tool::Java, |classes| {
        json!({"command": command(classes), "cwd": fixture("java/orders"), "failures": true,
               "userUnhandled": true})
    }) else {
        return;
    };
    let s = ok(&result);
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{s}");
    let failure = &failures[0];
    assert_eq!(
        (&failure["kind"], &failure["type"], &failure["message"]),
        (
            &json!("userUnhandled"),
            &json!("java.lang.NumberFormatException"),
            &json!("For input string: \"x1\"")
        ),
        "{s}"
    );
    let frame = &failure["frames"][0];
    assert_eq!(
        (&frame["function"], &frame["line"]),
        (&json!("Handled.quantity"), &json!(12)),
        "{s}"
    );
    assert_eq!(frame["locals"]["text"], "\"x1\"", "{s}");
    assert!(s["output"]["stdout"].as_str().unwrap().contains("failed: For input string"), "{s}");

    let Some(result) = script(
        Tool::Java,
        |classes| json!({"command": command(classes), "cwd": fixture("java/orders"), "failures": true}),
    ) else {
        return;
    };
    assert_eq!(ok(&result)["failures"], json!([]), "{result}");

    let classes = compiled(false);
    let mut server = Server::initialized();
    let stop = tool(
        &mut server,
        "debug-launch",
        json!({"command": command(&classes), "cwd": fixture("java/orders"),
               "pauseOnExceptions": "userUnhandled"}),
    );
    assert_eq!(stop["reason"], "exception", "{stop}");
    assert_eq!(
        (
            &stop["exception"]["class"],
            &stop["exception"]["userUnhandled"],
            &stop["exception"]["uncaught"]
        ),
        (&json!("java.lang.NumberFormatException"), &json!(true), &json!(false)),
        "{stop}"
    );
    assert!(
        stop["exception"]["stack"].as_str().unwrap().starts_with("at Handled.quantity"),
        "{stop}"
    );
    let ended = tool(&mut server, "debug-continue", json!({}));
    assert_eq!((&ended["state"], &ended["exitCode"]), (&json!("exited"), &json!(0)), "{ended}");
}
