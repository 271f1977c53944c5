//! Whole programs: every Node process and worker thread a command starts is debugged
//! (`debug-script`): a spawn of node with piped stdio, vitest's thread and fork pools, a child
//! that detaches. Forks, workers, `node --test`, jest and the launchers are in defects.rs and
//! launchers.rs; Python's children in python.rs.

use serde_json::json;

use crate::{assert_no_debuggee, fixture, node, ok, run_script, tag, values};

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
    assert_eq!(s["results"][0]["pid"], s["processes"][1]["pid"], "{s}");
    assert_no_debuggee(&tag);
}

/// vitest transforms each file while it loads (one line moves down); its thread pool runs the
/// test files in worker threads, its fork pool in child processes.
#[test]
fn vitest_thread_and_fork_pools() {
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
    assert!(!std::path::Path::new(&format!("/proc/{daemon}")).exists(), "{s}");
    assert_no_debuggee(&tag);
}
