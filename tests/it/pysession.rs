//! Python sessions through debug-mcp's own debugger (no debugpy): stepping through generators,
//! coroutines and comprehensions on every CPython the machine has, a local set in an optimized
//! frame, `multiprocessing` workers of every start method, and a fresh virtualenv with nothing
//! installed.

use serde_json::{json, Value};

use crate::python::{py, pyenv_pythons, python};
use crate::{assert_no_debuggee, local, tag, tool, Server};

/// Where a stop is: its function and line.
fn at(state: &Value) -> (String, u64) {
    let location = &state["location"];
    (
        location["function"].as_str().unwrap_or_default().into(),
        location["line"].as_u64().unwrap_or(0),
    )
}

/// Launches `python` on `stepping.py` stopped at `line`, takes `steps`, and answers where each
/// stop was (the breakpoint's first).
fn steps(
    server: &mut Server,
    python: &str,
    tag: &str,
    line: u64,
    steps: &[&str],
) -> Vec<(String, u64)> {
    let file = py("stepping.py");
    let state = tool(
        server,
        "debug-launch",
        json!({"command": format!("DMCP_TAG={tag} {python} {file}"),
               "breakpoints": [{"file": file, "line": line}]}),
    );
    assert_eq!(state["reason"], "breakpoint", "{python}: {state}");
    let mut stops = vec![at(&state)];
    for step in steps {
        let state = tool(server, "debug-continue", json!({"step": step}));
        // (A step that arrives at the breakpoint's line says `breakpoint`.)
        assert_eq!(state["state"], "paused", "{python}: {step}: {state}");
        stops.push(at(&state));
    }
    tool(server, "debug-stop", json!({}));
    stops
}

fn stops(expected: &[(&str, u64)]) -> Vec<(String, u64)> {
    expected.iter().map(|(f, l)| (f.to_string(), *l)).collect()
}

/// The same stops on every CPython from 3.7 (`sys.settrace`) to 3.13 (`sys.monitoring`): a step
/// over a `yield` or an `await` stays with its frame; a step out of a generator, or over a
/// coroutine's `return`, stops back at the caller's line; a comprehension is a frame of its own
/// before 3.12 only (PEP 709). A local of a coroutine's frame is set, pause stops a busy loop,
/// an uncaught exception stops where it was raised.
#[test]
fn python_sessions_step_alike_on_every_version() {
    let venv = std::process::Command::new(python())
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .unwrap();
    let venv = String::from_utf8_lossy(&venv.stdout).trim().to_string();
    let mut interpreters = vec![(std::path::PathBuf::from(python()), venv)];
    interpreters.extend(pyenv_pythons());
    let mut server = Server::initialized();
    for (python, version) in &interpreters {
        let python = python.display().to_string();
        let tag = tag();
        let generator = steps(&mut server, &python, &tag, 7, &["over", "over", "out", "over"]);
        let expected = [("numbers", 7), ("numbers", 6), ("numbers", 7), ("main", 18), ("main", 19)];
        assert_eq!(generator, stops(&expected), "{version}");
        let coroutine = steps(&mut server, &python, &tag, 12, &["over", "over", "over"]);
        assert_eq!(
            coroutine,
            stops(&[("fetch", 12), ("fetch", 13), ("main", 21), ("main", 22)]),
            "{version}"
        );
        let into = steps(&mut server, &python, &tag, 17, &["over", "over", "into", "into"]);
        let expected = [("main", 17), ("main", 18), ("main", 19), ("main", 18), ("numbers", 6)];
        assert_eq!(into, stops(&expected), "{version}");
        let comprehension = steps(&mut server, &python, &tag, 20, &["into"]);
        let minor: u32 = version.strip_prefix("3.").and_then(|m| m.parse().ok()).unwrap_or(0);
        let expected = match minor {
            12.. => ("main".to_string(), 21),
            _ => ("<listcomp>".to_string(), 20),
        };
        assert_eq!(comprehension[1], expected, "{version}");

        // A coroutine's local, in its optimized frame: the program sees the new value.
        let file = py("stepping.py");
        let state = tool(
            &mut server,
            "debug-launch",
            json!({"command": format!("DMCP_TAG={tag} {python} {file}"),
                   "breakpoints": [{"file": file, "line": 13}]}),
        );
        assert_eq!(local(&state, "n")["value"], 10, "{version}: {state}");
        let set = tool(&mut server, "debug-evaluate", json!({"set": "n", "expression": "41"}));
        assert_eq!(set["value"], 41, "{version}: {set}");
        let state = tool(&mut server, "debug-continue", json!({}));
        assert_eq!(state["stdout"], "10 [0, 1, 4] 42\n", "{version}: {state}");
        tool(&mut server, "debug-stop", json!({}));

        // Pause in a busy loop; an uncaught exception where it was raised.
        let state = tool(
            &mut server,
            "debug-launch",
            json!({"command": format!("DMCP_TAG={tag} {python} {} 100000000", py("count.py")),
                   "timeout": 300}),
        );
        assert_eq!(state["state"], "running", "{version}: {state}");
        let state = tool(&mut server, "debug-continue", json!({"pause": true}));
        assert_eq!(
            (&state["reason"], &state["location"]["file"]),
            (&json!("pause"), &json!(py("count.py"))),
            "{version}: {state}"
        );
        tool(&mut server, "debug-stop", json!({}));
        let state = tool(
            &mut server,
            "debug-launch",
            json!({"command": format!("DMCP_TAG={tag} {python} {}", py("throws.py")),
                   "pauseOnExceptions": "uncaught"}),
        );
        assert_eq!(
            (at(&state), &state["exception"]["uncaught"]),
            (("main".into(), 15), &json!(true)),
            "{version}: {state}"
        );
        let state = tool(&mut server, "debug-continue", json!({}));
        assert_eq!(state["exitCode"], 1, "{version}: {state}");
        tool(&mut server, "debug-stop", json!({}));
        assert_no_debuggee(&tag);
    }
}

/// A breakpoint in a `multiprocessing` worker stops in each worker, whatever the start method
/// (fork: the forked child connects anew; spawn and forkserver: new interpreters); each stop
/// names its process, never the parent.
#[test]
fn python_sessions_stop_in_multiprocessing_workers() {
    let mut server = Server::initialized();
    let file = py("children/pool.py");
    for method in ["fork", "spawn", "forkserver"] {
        let tag = tag();
        let mut state = tool(
            &mut server,
            "debug-launch",
            json!({"command": format!("DMCP_TAG={tag} {} {file} {method}", python()),
                   "breakpoints": [{"file": file, "line": 9}], "timeout": 20000}),
        );
        let mut squared = Vec::new();
        while state["state"] == "paused" {
            assert_eq!(state["location"]["function"], "square", "{method}: {state}");
            // A child's thread is `pid/id`.
            let thread = state["process"]["thread"].as_str().unwrap();
            assert_eq!(thread, format!("{}/1", state["process"]["pid"]), "{method}: {state}");
            squared.push(local(&state, "result")["value"].as_i64().unwrap());
            state = tool(&mut server, "debug-continue", json!({"timeout": 20000}));
        }
        squared.sort();
        assert_eq!(squared, [1, 4, 9], "{method}: {state}");
        assert_eq!(state["stdout"], "[1, 4, 9]\n", "{method}: {state}");
        tool(&mut server, "debug-stop", json!({}));
        assert_no_debuggee(&tag);
    }
}

/// A virtualenv made with nothing in it (no pip, no debugpy) is debugged end to end.
#[test]
fn a_fresh_virtualenv_with_nothing_installed_is_debugged() {
    let tag = tag();
    let venv = std::env::temp_dir().join(format!("dmcp-fresh-venv-{tag}"));
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .expect("python3 is needed");
    assert!(made.success(), "python3 -m venv --without-pip failed");
    let venv_python = venv.join("bin/python").display().to_string();
    let has_debugpy = std::process::Command::new(&venv_python)
        .args(["-c", "import debugpy"])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!has_debugpy.success(), "the fresh venv has debugpy");
    let mut server = Server::initialized();
    let file = py("loop.py");
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": format!("DMCP_TAG={tag} {venv_python} {file}"),
               "breakpoints": [{"file": file, "line": 5, "condition": "item['qty'] == 3"}]}),
    );
    assert_eq!(state["reason"], "breakpoint", "{state}");
    let prefix =
        tool(&mut server, "debug-evaluate", json!({"expression": "__import__('sys').prefix"}));
    assert_eq!(prefix["value"], venv.display().to_string(), "{prefix}");
    let item = tool(&mut server, "debug-evaluate", json!({"expression": "item"}));
    assert_eq!(item, json!({"type": "dict", "value": {"price": 5, "qty": 3}}));
    // A condition that does not compile is said at once (it could never stop).
    let broken = tool(
        &mut server,
        "debug-breakpoint",
        json!({"file": file, "line": 6, "condition": "total >"}),
    );
    assert_eq!(broken["verified"], false, "{broken}");
    assert!(broken["reason"].as_str().unwrap().contains("SyntaxError"), "{broken}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(local(&state, "total")["value"], 25, "{state}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(
        (&state["state"], &state["stdout"]),
        (&json!("exited"), &json!("total 35.0\n")),
        "{state}"
    );
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
    std::fs::remove_dir_all(&venv).unwrap();
}
