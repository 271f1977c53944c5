//! Where a program hangs: a `debug-script` run that reaches its `timeout`, or `hang` (a quiet
//! stretch), answers where every thread was before the program is killed, in every runtime.

use std::process::Command;

use serde_json::{json, Value};

use crate::need::{need, python, Tool};
use crate::{assert_no_debuggee, fixture, node, ok, root, tag, Server};

/// The thread of `hang` whose top own frame is in `function`.
fn thread_in<'a>(s: &'a Value, function: &str) -> &'a Value {
    let threads = s["hang"]["threads"].as_array().unwrap_or_else(|| panic!("no hang: {s}"));
    threads
        .iter()
        .find(|t| t["frames"][0]["function"].as_str().is_some_and(|f| f.ends_with(function)))
        .unwrap_or_else(|| panic!("no thread in {function}: {s}"))
}

/// A deadlock of two Python threads shows both at their `with` lines, waiting on a lock, and
/// the main thread joining; a busy loop that prints nothing is taken for hung by `hang`.
#[test]
fn python_deadlock_and_busy_loop() {
    let tag = tag();
    let mut server = Server::initialized();
    let file = fixture("hangs/deadlock.py");
    let command = format!("DMCP_TAG={tag} {} '{file}'", python());
    let result = server.debug_script(json!({"command": command, "timeout": 1500}));
    let s = ok(&result);
    assert_eq!(s["timedOut"], true, "{s}");
    let after = s["hang"]["after"].as_u64().unwrap();
    assert!((1500..2500).contains(&after), "{s}");
    for (function, line) in [("one", 10), ("two", 16)] {
        let thread = thread_in(s, function);
        assert_eq!(thread["thread"], function, "{s}");
        assert_eq!(thread["state"], "lock", "{s}");
        assert_eq!(thread["frames"][0]["line"], line, "{s}");
        assert_eq!(thread["frames"][0]["file"], file.as_str(), "{s}");
    }
    let main = thread_in(s, "<module>");
    assert_eq!((&main["thread"], &main["state"]), (&json!("MainThread"), &json!("join")), "{s}");
    assert_eq!(main["frames"][0]["line"], 22, "{s}");

    let file = fixture("hangs/busy.py");
    let command = format!("DMCP_TAG={tag} {} '{file}'", python());
    let result = server.debug_script(json!({"command": command, "hang": 400, "timeout": 20000}));
    let s = ok(&result);
    assert_eq!(s["timedOut"], true, "{s}");
    assert!(s["hang"]["after"].as_u64().unwrap() < 5000, "ended by `hang`, not its timeout: {s}");
    let spin = thread_in(s, "spin");
    assert_eq!(spin["state"], "running", "{s}");
    let total = spin["frames"][0]["locals"]["total"].as_str().unwrap_or_default();
    assert!(total.parse::<u64>().is_ok(), "{s}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default().to_string()
        + &result["content"].to_string();
    assert!(text.contains("taken for hung"), "{text}");
    assert_no_debuggee(&tag);
}

/// Node: a busy loop paused where it spins, with its locals; a process idle in its event loop
/// says so, and what keeps it alive; one in a synchronous child process is blocked.
#[test]
fn node_busy_and_idle() {
    let tag = tag();
    let mut server = Server::initialized();
    let command = node(&tag, "hangs/busy.js", "");
    let result = server.debug_script(json!({"command": command, "hang": 300}));
    let s = ok(&result);
    let spin = thread_in(s, "spin");
    assert_eq!(spin["state"], "running", "{s}");
    let total = spin["frames"][0]["locals"]["total"].as_str().unwrap_or_default();
    assert!(total.parse::<u64>().is_ok(), "{s}");
    assert_eq!(spin["frames"][1]["line"], 9, "{s}");

    let command = node(&tag, "hangs/idle.js", "");
    let result = server.debug_script(json!({"command": command, "timeout": 1500}));
    let s = ok(&result);
    let thread = &s["hang"]["threads"][0];
    assert_eq!(thread["state"], "idle", "{s}");
    assert_eq!(thread["frames"], json!([]), "{s}");
    let waiting: Vec<&str> =
        thread["waiting"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(waiting.contains(&"TCPServerWrap") && waiting.contains(&"Timeout"), "{s}");

    // In a synchronous native call, no JavaScript answers: blocked, not idle.
    let command = node(&tag, "hangs/blocked.js", "");
    let result = server.debug_script(json!({"command": command, "timeout": 1000}));
    let s = ok(&result);
    assert_eq!(s["hang"]["threads"][0]["state"], "blocked", "{s}");

    // Deno the same way.
    crate::need::npm_packages();
    let deno = fixture("node_modules/.bin/deno");
    let command = format!("DMCP_TAG={tag} '{deno}' run '{}'", fixture("hangs/busy.js"));
    // (Deno's own start, before the script is read, took over 300 ms once in a loaded CI run.)
    let result = server.debug_script(json!({"command": command, "hang": 1000}));
    let spin = thread_in(ok(&result), "spin");
    let line = spin["frames"][0]["line"].as_u64().unwrap();
    assert!((4..=6).contains(&line), "in the loop: {result}");
    assert_no_debuggee(&tag);
}

/// Node: an idle process's async functions waiting at an `await` (found by a heap snapshot
/// taken ahead of the hang), each with its line and locals; by the timeout and by `hang`, short
/// ones too (at `hang: 2000` and `timeout: 2000` the look ahead came too late for a snapshot).
#[test]
fn node_pending_awaits() {
    let tag = tag();
    let mut server = Server::initialized();
    let command = node(&tag, "hangs/awaits.js", "");
    for ends in [
        json!({"timeout": 5000}),
        json!({"hang": 5000, "timeout": 20000}),
        json!({"hang": 2000, "timeout": 20000}),
        json!({"timeout": 2000}),
    ] {
        let mut args = json!({"command": command});
        args.as_object_mut().unwrap().extend(ends.as_object().unwrap().clone());
        let result = server.debug_script(args);
        let s = ok(&result);
        let thread = &s["hang"]["threads"][0];
        assert_eq!(thread["state"], "idle", "{s}");
        let awaiting = thread["awaiting"].as_array().unwrap_or_else(|| panic!("no awaiting: {s}"));
        let at = |function: &str| {
            let found = awaiting.iter().find(|a| a["function"] == function);
            found.unwrap_or_else(|| panic!("{function} awaits: {s}"))
        };
        assert_eq!((&at("ask")["line"], &at("handle")["line"]), (&json!(11), &json!(16)), "{s}");
        // Innermost first: `ask` waits on the socket, `handle` on `ask`.
        assert_eq!((&awaiting[0]["function"], awaiting.len()), (&json!("ask"), 2), "{s}");
        assert_eq!(at("ask")["locals"]["question"], "\"order 7\"", "{s}");
        assert_eq!(at("handle")["locals"]["id"], "7", "{s}");
        assert_eq!(at("handle")["locals"]["answer"], "undefined", "{s}");
        assert!(at("ask")["file"].as_str().unwrap().ends_with("hangs/awaits.js"), "{s}");
    }
    assert_no_debuggee(&tag);
}

/// C (lldb-dap): each of the two threads waits on a lock at its line, main joins.
#[test]
fn c_deadlock() {
    if !need(Tool::Lldb) {
        return;
    }
    // glibc has had the pthread functions in libc since 2.34: no `-pthread`.
    let program = crate::native::build("gcc", "hangs/deadlock.c", "deadlock");
    let mut server = Server::initialized();
    // Long enough for lldb-dap to start on a loaded machine (1.5 s failed once with 4 test threads).
    let result = server.debug_script(json!({"command": program, "timeout": 3000}));
    let s = ok(&result);
    for (function, line, state) in [("one", 6, "lock"), ("two", 7, "lock"), ("main", 12, "join")] {
        let thread = thread_in(s, function);
        assert_eq!(thread["state"], state, "{s}");
        assert_eq!(thread["frames"][0]["line"], line, "{s}");
    }
    assert_eq!(s["signal"], 9, "{s}");
}

/// Threads waiting at the same place are one record that counts the others (five workers on
/// one event): the answer says each place once.
#[test]
fn threads_at_one_place_are_said_once() {
    let mut server = Server::initialized();
    let file = fixture("hangs/workers.py");
    let command = format!("{} '{file}'", python());
    let result = server.debug_script(json!({"command": command, "hang": 1000, "timeout": 20000}));
    let s = ok(&result);
    let threads = s["hang"]["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2, "{s}");
    let worker = thread_in(s, "work");
    assert_eq!(worker["sameStack"], 4, "{s}");
    // The locals are the listed thread's own.
    let n = worker["thread"].as_str().unwrap().strip_prefix("worker-").unwrap();
    assert_eq!(worker["frames"][0]["locals"]["n"], n, "{s}");
    assert_eq!(thread_in(s, "<module>").get("sameStack"), None, "{s}");
}

/// Go (Delve): only the goroutines in the program's own code, each with what it waits on, in a
/// program linked to libc (where Delve would read libc's separate debug information first).
#[test]
fn go_goroutines_and_what_they_wait_on() {
    if !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let dir = fixture("hangs/go");
    let result = server
        .debug_script(json!({"command": "go run .", "cwd": dir, "hang": 2000, "timeout": 120000}));
    let s = ok(&result);
    for (function, state) in
        [("main.main", "channel receive"), ("main.worker", "lock"), ("main.main.func1", "sleep")]
    {
        assert_eq!(thread_in(s, function)["state"], state, "{s}");
    }
    assert_eq!(s["hang"]["threads"].as_array().unwrap().len(), 3, "{s}");
    let main = thread_in(s, "main.main");
    assert_eq!(main["frames"][0]["locals"]["jobs"], "chan int 0/0", "{s}");
    // Delve reads a config of ours (XDG_CONFIG_HOME); the program has the environment it
    // would have had: none, as the server has none.
    assert_eq!(s["output"]["stdout"], "config home \"\", 4\n", "{s}");
}

/// The command line prints it, and a `failures` run that hangs has it too.
#[test]
fn the_cli_and_failures_runs_say_where() {
    let tag = tag();
    let file = fixture("hangs/deadlock.py");
    let env = format!("DMCP_TAG={tag}");
    let python = python();
    let output = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
        .args(["run", "--timeout", "1000", "--", &env, &python, &file])
        .current_dir(root())
        .output()
        .unwrap();
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    crate::schema::check("debug-script", &printed);
    assert_eq!(thread_in(&printed, "one")["state"], "lock", "{printed}");

    let mut server = Server::initialized();
    let command = format!("{env} {python} '{file}'");
    let result =
        server.debug_script(json!({"command": command, "failures": true, "timeout": 1000}));
    let s = ok(&result);
    assert_eq!(thread_in(s, "two")["state"], "lock", "{s}");
    assert_no_debuggee(&tag);
}

/// A loop that never ends inside an installed package: the thread is shown where it spins,
/// the package's frames (marked `library`) above the program's own, with their locals. It
/// showed only the program's frame, the spinning function among `framesOmitted`.
#[test]
fn a_thread_spinning_in_a_library_is_shown_where_it_spins() {
    let tag = tag();
    let mut server = Server::initialized();
    let result = server.debug_script(
        json!({"command": node(&tag, "hangs/spins/main.js", ""), "hang": 1000, "timeout": 20000}),
    );
    let s = ok(&result);
    let thread = &s["hang"]["threads"][0];
    assert_eq!(thread["state"], "running", "{s}");
    let frames: Vec<(&Value, &Value, &Value)> = thread["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (&f["function"], &f["line"], &f["library"]))
        .collect();
    // Interrupted anywhere in its loop (lines 5 to 8).
    let spinning = frames[0].1.as_u64().unwrap_or(0);
    assert!((5..=8).contains(&spinning), "{s}");
    let spun = json!(spinning);
    assert_eq!(
        frames,
        [
            (&json!("compareParts"), &spun, &json!(true)),
            (&json!("exports.compare"), &json!(15), &json!(true)),
            (&json!("newest"), &json!(5), &Value::Null),
            (&json!("(anonymous)"), &json!(9), &Value::Null)
        ],
        "{s}"
    );
    assert_eq!(thread["frames"][0]["locals"]["a"], "Array(3) ['1', 'rc', '2']", "{s}");
    assert_no_debuggee(&tag);
}
