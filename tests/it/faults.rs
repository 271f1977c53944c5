//! Faults said as they are: a program a signal stopped has not ended (it runs out its timeout,
//! and the answer says which signal stopped it), and a debug adapter killed under a session is
//! named as what ended, with what became of the program.

use std::time::Duration;

use serde_json::{json, Value};

use crate::need::{need, python, Tool};
use crate::{assert_no_debuggee, fixture, node, ok, tag, tool, Server};

/// A program that stops itself with SIGSTOP: it had not ended (it was taken for ended at once
/// and killed two seconds later, "the program failed (killed by signal 9)"); it runs to its
/// timeout, and the answer names the signal. Node and Python alike.
#[test]
fn a_program_stopped_by_a_signal_has_not_ended() {
    let tag = tag();
    let py = format!("DMCP_TAG={tag} {} {}", python(), fixture("py/stops_itself.py"));
    // The line that adds up, and the line after the stop.
    for (command, file, line, after) in [
        (node(&tag, "stops_itself.js", ""), fixture("stops_itself.js"), 5, 9),
        (py, fixture("py/stops_itself.py"), 8, 11),
    ] {
        let mut server = Server::initialized();
        let result = server.debug_script(json!({"command": command, "timeout": 1500,
            "breakpoint": {"file": file, "line": line}, "expression": "total"}));
        let s = ok(&result);
        assert_eq!(s["results"].as_array().unwrap().len(), 3, "{s}");
        assert_eq!(s["timedOut"], true, "{s}");
        let pid = &s["processes"][0]["pid"];
        assert_eq!(s["stopped"], json!([{"pid": pid, "signal": "SIGSTOP"}]), "{s}");
        assert_eq!(s["output"]["stdout"], "stopping 3\n", "{s}");
        let notes: Vec<&str> = result["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["text"].as_str())
            .collect();
        let said = format!("Stopped by a signal, not ended: pid {pid} by SIGSTOP");
        assert!(notes.iter().any(|n| n.starts_with(&said)), "{notes:?}");

        // A line after the stop never runs: the hint says why.
        let result = server.call(
            "debug-script",
            json!({"command": command, "timeout": 1000,
            "breakpoint": {"file": file, "line": after}, "expression": "1"}),
        );
        let e = &result["structuredContent"];
        assert_eq!(e["code"], "timeout", "{e}");
        let hint = e["hint"].as_str().unwrap();
        assert!(hint.contains("was stopped by SIGSTOP before the line ran"), "{hint}");
        assert_no_debuggee(&tag);
    }
}

/// The pids of `server`'s descendants whose command line holds `text`.
fn descendants_running(server: &Server, text: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let mut frontier = vec![server.pid()];
    while let Some(pid) = frontier.pop() {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten();
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()) {
                let command = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
                if String::from_utf8_lossy(&command).replace('\0', " ").contains(text) {
                    found.push(child);
                }
                frontier.push(child);
            }
        }
    }
    found
}

/// A debug adapter killed under a session: the next call says the debugger ended (its name,
/// pid and signal) and that the program, still running, was killed; it answered `exited` with
/// nothing else, as if the program had ended.
#[test]
fn an_adapter_killed_under_a_session_is_said_to_have_ended() {
    let tag = tag();
    let mut cases = vec![(
        format!("DMCP_TAG={tag} {} {}", python(), fixture("py/loop.py")),
        fixture("py/loop.py"),
        5,
        "debug_mcp_adapter.py",
        "debugpy",
    )];
    if need(Tool::Lldb) {
        let program = crate::native::c_loop();
        cases.push((
            format!("DMCP_TAG={tag} {program} 3"),
            fixture("native/c/loop.c"),
            15,
            "lldb-dap",
            "lldb-dap",
        ));
    }
    for (command, file, line, adapter_command, adapter) in cases {
        let mut server = Server::initialized();
        // debug-mcp's own Python debugger is the program: debugpy's adapter is asked for.
        let language = if adapter == "debugpy" { "debugpy" } else { "c" };
        let state = tool(
            &mut server,
            "debug-launch",
            json!({"command": command, "breakpoints": [{"file": file, "line": line}],
                   "language": language}),
        );
        assert_eq!(state["state"], "paused", "{state}");
        let pid = state["process"]["pid"].clone();
        let adapters = descendants_running(&server, adapter_command);
        assert_eq!(adapters.len(), 1, "{adapter_command}: {adapters:?}");
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &adapters[0].to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        crate::eventually(Duration::from_secs(5), "the session notices", || {
            tool(&mut server, "debug-sessions", json!({}))["sessions"][0]["state"] == "exited"
        });
        let state = tool(&mut server, "debug-continue", json!({"timeout": 2000}));
        assert_eq!(state["state"], "exited", "{state}");
        let ended = &state["debuggerEnded"];
        let expected: Value = json!({"adapter": adapter, "pid": adapters[0], "signal": "SIGKILL"});
        assert_eq!(ended["adapter"], expected["adapter"], "{state}");
        assert_eq!(ended["pid"], expected["pid"], "{state}");
        assert_eq!(ended["signal"], expected["signal"], "{state}");
        // debugpy's program may end with its adapter, or run on (then it is killed).
        let fate = ended["program"].as_str().unwrap();
        let ran_on = format!("the program (pid {pid}) still ran, and debug-mcp killed it");
        assert!(fate == ran_on || fate == format!("the program (pid {pid}) had ended"), "{fate}");
        let message = state["message"].as_str().unwrap();
        let said = format!(
            "the debugger ended under the program: {adapter} (pid {}) killed by signal 9",
            adapters[0]
        );
        assert!(message.starts_with(&said), "{message}");
        tool(&mut server, "debug-stop", json!({}));
        assert_no_debuggee(&tag);
    }
}
