//! Whole programs: every Node process and worker thread a command starts is debugged, by
//! `debug-script` (a spawn of node with piped stdio, vitest's thread and fork pools, a child
//! that detaches) and in sessions (a stop in a child, two children stopped at once). Forks,
//! workers, `node --test`, jest and the launchers are in defects.rs and launchers.rs; Python's
//! children in python.rs.

use serde_json::{json, Value};

use crate::need::npm_packages;
use crate::{assert_no_debuggee, fixture, node, ok, run_script, tag, tool, values, Server};

/// A child whose stdout and stderr are piped into its parent: its inspector's lines never
/// reach the parent, and its hits come through the channel all the same.
#[test]
fn a_spawned_node_child_with_piped_output_is_followed() {
    let tag = tag();
    let result = run_script(json!({"command": node(&tag, "children/spawn_node.js", ""),
        "breakpoint": {"file": fixture("children/spawn_node.js"), "line": 7},
        "expression": "word"}));
    let s = ok(&result);
    assert_eq!(values(s), [json!("pong")], "{s}");
    assert_eq!(s["output"]["stdout"], "child wrote pong\n", "{s}");
    // Every hit in one process: `processes` says which, the hit carries no pid.
    assert_eq!(s["processes"][1]["hits"], 1, "{s}");
    assert!(s["results"][0].get("pid").is_none(), "{s}");
    assert_no_debuggee(&tag);
}

/// vitest transforms each file while it loads (one line moves down); its thread pool runs the
/// test files in worker threads, its fork pool in child processes.
#[test]
fn vitest_thread_and_fork_pools() {
    npm_packages();
    for pool in ["threads", "forks"] {
        let tag = tag();
        let result = run_script(json!({"command": format!("npx vitest run --pool {pool}"),
            "cwd": fixture("vitest"), "env": {"DMCP_TAG": tag},
            "breakpoint": {"file": "calc.js", "line": 4}, "expression": "twice",
            "timeout": 60000}));
        let s = ok(&result);
        let mut hits = values(s);
        hits.sort_by_key(|v| v.as_i64());
        assert_eq!(hits, [json!(4), json!(10)], "{pool}: {s}");
        assert_eq!(s["breakpoint"]["resolvedLine"], 4, "{s}");
        let results = s["results"].as_array().unwrap();
        match pool {
            "threads" => {
                assert!(results.iter().all(|r| r["thread"].is_string()), "{s}");
                assert_ne!(results[0]["thread"], results[1]["thread"], "{s}");
            }
            _ => assert_ne!(results[0]["pid"], results[1]["pid"], "{s}"),
        }
        assert_eq!(s["exitCode"], 0, "{s}");
        assert_no_debuggee(&tag);
    }
}

/// A grandchild that leaves the process group and outlives the program is killed with it.
#[test]
fn a_detached_child_is_not_left_running() {
    let tag = tag();
    let result = run_script(json!({"command": node(&tag, "children/detached.js", ""),
        "breakpoint": {"file": fixture("children/detached.js"), "line": 9},
        "expression": "child.pid"}));
    let s = ok(&result);
    let daemon = values(s)[0].as_u64().unwrap();
    // Killed with the run; its pid may take a moment to be reaped.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{daemon}")).exists() {
        assert!(std::time::Instant::now() < deadline, "the daemon {daemon} is left: {s}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_no_debuggee(&tag);
}

/// A session follows the program's processes: a breakpoint in a forked child stops there, the
/// stop says which process, `debug-sessions` and `debug-threads` list the processes, and
/// inspection acts on the stopped one; the parent's own breakpoint stops after.
#[test]
fn a_session_stops_in_a_child_process_then_in_the_parent() {
    let mut server = Server::initialized();
    let tag = tag();
    let file = fixture("children/fork.js");
    let breakpoints = json!([{"file": file, "line": 6}, {"file": file, "line": 12}]);
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "children/fork.js", ""),
        "breakpoints": breakpoints}),
    );
    assert_eq!(
        (&state["state"], &state["location"]["line"]),
        (&json!("paused"), &json!(6)),
        "{state}"
    );
    let child = state["process"]["pid"].as_u64().unwrap();
    assert!(state["process"]["command"].as_str().unwrap().ends_with("fork.js child"), "{state}");
    let argv = tool(&mut server, "debug-evaluate", json!({"expression": "process.argv[2]"}));
    assert_eq!(argv["value"], "child", "{argv}");
    let sessions = tool(&mut server, "debug-sessions", json!({}));
    let processes = sessions["sessions"][0]["processes"].as_array().unwrap().clone();
    assert_eq!(processes.len(), 2, "{sessions}");
    assert_eq!(processes[1]["pid"], child, "{sessions}");
    assert_eq!(processes[1]["parent"], processes[0]["pid"], "{sessions}");
    let threads = tool(&mut server, "debug-threads", json!({}));
    let ids: Vec<&Value> =
        threads["threads"].as_array().unwrap().iter().map(|t| &t["id"]).collect();
    assert_eq!(ids, [&json!("main"), &json!(child.to_string())], "{threads}");

    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(
        (&state["state"], &state["location"]["line"]),
        (&json!("paused"), &json!(12)),
        "{state}"
    );
    assert_eq!(state["process"]["thread"], "main", "{state}");
    let doubled = tool(&mut server, "debug-evaluate", json!({"expression": "message.value * 2"}));
    assert_eq!(doubled["value"], 42, "{doubled}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!(state["stdout"], "from child 42\nchild exited 0\n", "{state}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// Two children stop at once: one stop is shown, the other held (still paused); selecting the
/// other shows it, and continuing shows the one held.
#[test]
fn two_children_stopped_at_once_are_shown_in_turn() {
    let mut server = Server::initialized();
    let tag = tag();
    let file = fixture("children/two.js");
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "children/two.js", ""),
        "breakpoints": [{"file": file, "line": 7}]}),
    );
    assert_eq!(
        (&state["state"], &state["location"]["line"]),
        (&json!("paused"), &json!(7)),
        "{state}"
    );
    let first = state["process"]["pid"].clone();
    // The other child stops too, and is held.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let other = loop {
        let threads = tool(&mut server, "debug-threads", json!({}));
        let held =
            threads["threads"].as_array().unwrap().iter().find(|t| {
                t["name"].as_str().unwrap().ends_with(", paused") && t["current"] == false
            });
        if let Some(held) = held {
            break held["id"].as_str().unwrap().to_string();
        }
        assert!(std::time::Instant::now() < deadline, "the second child never stopped: {threads}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let state = tool(&mut server, "debug-threads", json!({"select": other}));
    assert_eq!(state["process"]["pid"].to_string(), other, "{state}");
    let square = tool(&mut server, "debug-evaluate", json!({"expression": "square"}));
    let second = square["value"].clone();
    // Going on shows the first child's stop again, still paused where it was.
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["process"]["pid"], first, "{state}");
    assert_eq!(state["location"]["line"], 7, "{state}");
    let square = tool(&mut server, "debug-evaluate", json!({"expression": "square"}));
    let mut squares = [second.as_i64().unwrap(), square["value"].as_i64().unwrap()];
    squares.sort_unstable();
    assert_eq!(squares, [4, 9]);
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}
