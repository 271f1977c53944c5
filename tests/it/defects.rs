//! Regression tests for defects found on real third-party code (one test per defect, on a
//! fixture that reproduces it): duplicate CDP breakpoints from a tsc build, floats that lost
//! digits, programs with children and workers, `node --test`, tsx files loaded before their
//! breakpoint, sources that exist only in a map, console scripts, and processes left behind.

use serde_json::{json, Value};

use crate::python::python;
use crate::{
    assert_no_debuggee, err, fixture, launch, node, ok, processes_with_tag, root, run_script, tag,
    tool, values, Server,
};

fn paused_at(state: &Value, file: &str, line: u64) {
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["location"]["file"], fixture(file), "{state}");
    assert_eq!(state["location"]["line"], line, "{state}");
}

fn local<'a>(state: &'a Value, name: &str) -> &'a Value {
    let locals = state["locals"].as_array().unwrap();
    locals.iter().find(|l| l["name"] == name).unwrap_or_else(|| panic!("no local {name}: {state}"))
}

/// A tsc build whose entry (`dist/main.js`) is not the first file of `dist/`: the entry was
/// read twice, and V8 refused the second breakpoint ("Breakpoint at specified location
/// already exists").
#[test]
fn a_tsc_entry_that_is_not_first_in_its_folder() {
    let tag = tag();
    let command = format!("DMCP_TAG={tag} node {}", fixture("tsc-project/dist/main.js"));
    let file = fixture("tsc-project/src/main.ts");
    let result = run_script(json!({"command": command, "breakpoint": {"file": file, "line": 15},
        "expression": "line.sku"}));
    let s = ok(&result);
    assert_eq!(values(s), [json!("a"), json!("b")]);
    assert_eq!(s["breakpoint"]["resolvedLine"], 15);
    assert_eq!(s["breakpoint"]["generated"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s["output"]["stdout"], "total $22.49\n");

    let mut server = Server::initialized();
    let state = launch(&mut server, &command, &file, 15);
    paused_at(&state, "tsc-project/src/main.ts", 15);
    assert_eq!(local(&state, "sum")["value"], 0);
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// `13 * 0.9` is 11.700000000000001; every answer said 11.7.
#[test]
fn floats_keep_every_digit_in_node() {
    let result = run_script(json!({"command": node(&tag(), "floats.js", ""),
        "breakpoint": {"file": fixture("floats.js"), "line": 6}, "expression": "[a, pair]"}));
    assert_eq!(
        values(ok(&result)),
        [json!([11.700000000000001, {"a": 11.700000000000001, "b": 0.30000000000000004}])]
    );

    let mut server = Server::initialized();
    let tag = tag();
    let state = launch(&mut server, &node(&tag, "floats.js", ""), &fixture("floats.js"), 7);
    assert_eq!(local(&state, "a")["value"], json!(11.700000000000001));
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "a"}));
    assert_eq!(value, json!({"type": "number", "value": 11.700000000000001}));
    let pair = tool(&mut server, "debug-variables", json!({"path": "pair"}));
    let b = pair["variables"].as_array().unwrap().iter().find(|v| v["name"] == "b").unwrap();
    assert_eq!(b["value"], json!(0.30000000000000004));
    let output = tool(&mut server, "debug-output", json!({}));
    assert_eq!(output["console"][0]["text"], "a 11.700000000000001 false", "{output}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn floats_keep_every_digit_in_python() {
    let file = fixture("py/floats.py");
    let command = format!("DMCP_TAG={} {} {file}", tag(), python());
    let result = run_script(json!({"command": command, "breakpoint": {"file": file, "line": 6},
        "expression": "[a, pair]"}));
    assert_eq!(
        values(ok(&result)),
        [json!([11.700000000000001, {"a": 11.700000000000001, "b": 0.30000000000000004}])]
    );

    let mut server = Server::initialized();
    let tag = tag();
    let command = format!("DMCP_TAG={tag} {} {file}", python());
    let state = launch(&mut server, &command, &file, 7);
    assert_eq!(local(&state, "a")["value"], json!(11.700000000000001), "{state}");
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "a"}));
    assert_eq!(value, json!({"type": "float", "value": 11.700000000000001}));
    let pair = tool(&mut server, "debug-variables", json!({"path": "pair"}));
    let b = pair["variables"].as_array().unwrap().iter().find(|v| v["name"] == "'b'").unwrap();
    assert_eq!(b["value"], json!(0.30000000000000004), "{pair}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// A fork inherited `--inspect-wait` through `execArgv` and waited for a debugger for ever;
/// a worker did the same. Later both ran undebugged. Now both are debugged: hits in the child
/// and in the worker say where they ran, and the program finishes.
#[test]
fn forks_and_workers_are_debugged_and_finish() {
    let result = run_script(json!({"command": node(&tag(), "children/fork.js", ""),
        "breakpoint": {"file": fixture("children/fork.js"), "line": 6},
        "expression": "process.argv[2]"}));
    let s = ok(&result);
    assert_eq!(values(s), [json!("child")]);
    assert_eq!(s["exitCode"], 0);
    assert_eq!(s["output"]["stdout"], "from child 42\nchild exited 0\n");
    let processes = s["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 2, "{s}");
    let (parent, child) = (&processes[0], &processes[1]);
    assert_eq!(child["parent"], parent["pid"], "{s}");
    assert_eq!((parent["hits"].as_u64(), child["hits"].as_u64()), (Some(0), Some(1)));
    let command = child["command"].as_str().unwrap();
    assert!(command.ends_with("fixtures/children/fork.js child"), "{command}");
    assert!(!command.contains("--inspect"), "{command}");
    assert!(s["results"][0].get("pid").is_none(), "{s}");
    assert!(s.get("undebugged").is_none(), "{s}");

    // The parent's line sees what the child sent.
    let result = run_script(json!({"command": node(&tag(), "children/fork.js", ""),
        "breakpoint": {"file": fixture("children/fork.js"), "line": 12},
        "expression": "message.value"}));
    assert_eq!(values(ok(&result)), [json!(21)]);

    // A worker thread: its line, and the parent's.
    for (line, expression, value, thread) in
        [(13, "answer", 41, Some("[worker 1]")), (7, "value", 41, None)]
    {
        let result = run_script(json!({"command": node(&tag(), "children/worker.js", ""),
            "breakpoint": {"file": fixture("children/worker.js"), "line": line},
            "expression": expression}));
        let s = ok(&result);
        assert_eq!(values(s), [json!(value)], "{s}");
        assert_eq!(s["output"]["stdout"], "from worker 42\nworker exited 0\n");
        // One place: said once, in `processes`, not on each hit.
        assert!(s["results"][0].get("thread").is_none(), "{s}");
        assert_eq!(s["processes"][0]["hitThread"].as_str(), thread, "{s}");
        assert_eq!(s["processes"][0]["threads"], json!(["[worker 1]"]), "{s}");
    }

    // The same in a session: a breakpoint in the worker stops there, and the stop says where.
    let mut server = Server::initialized();
    let tag = tag();
    let state = launch(
        &mut server,
        &node(&tag, "children/worker.js", ""),
        &fixture("children/worker.js"),
        13,
    );
    paused_at(&state, "children/worker.js", 13);
    assert_eq!(state["process"]["worker"], "[worker 1]", "{state}");
    let answer = tool(&mut server, "debug-evaluate", json!({"expression": "answer"}));
    assert_eq!(answer["value"], 41, "{answer}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!(state["stdout"], "from worker 42\nworker exited 0\n", "{state}");
    assert!(state.get("undebugged").is_none(), "{state}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// `node --test dir/`: debug-mcp took the first test file's inspector for the program's, took
/// that child's exit for the end and killed the rest (1 hit of 3, output cut, no note). Later
/// the files ran undebugged. Now every test file's process is followed: 3 hits, each from its
/// own process, also with an inspector flag of the user's (which the runner would hand to every
/// test file's process, all on one port).
#[test]
fn node_test_hits_the_code_under_test_in_every_file() {
    for flag in ["", "--inspect-wait=0 "] {
        let tag = tag();
        let command = format!("DMCP_TAG={tag} node {flag}--test {}", fixture("node-test"));
        let result = run_script(json!({"command": command,
            "breakpoint": {"file": fixture("node-test/square.js"), "line": 4},
            "expression": "n"}));
        let s = ok(&result);
        let mut hits = values(s);
        hits.sort_by_key(|v| v.as_i64());
        assert_eq!(hits, [json!(1), json!(2), json!(3)], "{s}");
        assert_eq!(s["exitCode"], 0);
        let stdout = s["output"]["stdout"].as_str().unwrap();
        assert!(stdout.contains("# tests 3\n") && stdout.contains("# pass 3\n"), "{stdout}");
        assert!(
            !stdout.contains("Debugger"),
            "the inspector's lines are not the program's: {stdout}"
        );
        let mut files: Vec<&str> = s["processes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["command"].as_str().unwrap().rsplit('/').next().unwrap())
            .collect();
        files.sort_unstable();
        assert_eq!(files, ["t1.test.js", "t2.test.js", "t3.test.js"], "{s}");
        let pids: Vec<&Value> =
            s["results"].as_array().unwrap().iter().map(|r| &r["pid"]).collect();
        assert!(pids[0] != pids[1] && pids[1] != pids[2] && pids[0] != pids[2], "{s}");
        assert_no_debuggee(&tag);
    }
}

/// A breakpoint set mid-session in a file tsx had already compiled never bound.
#[test]
fn breakpoints_set_mid_session_bind_in_files_tsx_already_loaded() {
    // tsx is installed in fixtures/, where node looks for it.
    crate::need::npm_packages();
    let mut server = Server::initialized_in(&root().join("fixtures"));
    let tag = tag();
    let command = format!(
        "DMCP_TAG={tag} node --import tsx {} 400",
        root().join("fixtures/tsx-app/src/main.ts").display()
    );
    let state = launch(&mut server, &command, &fixture("tsx-app/src/main.ts"), 9);
    paused_at(&state, "tsx-app/src/main.ts", 9);
    let set = tool(
        &mut server,
        "debug-breakpoint",
        json!({"file": fixture("tsx-app/src/describe.ts"), "line": 8}),
    );
    assert_eq!(set["verified"], true, "{set}");
    assert_eq!(set["resolved"][0]["line"], 8, "{set}");
    let state = tool(&mut server, "debug-continue", json!({}));
    paused_at(&state, "tsx-app/src/describe.ts", 8);
    assert_eq!(state["hitBreakpoints"], json!(["2"]));
    assert_eq!(local(&state, "n")["value"], 1);
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// A library that ships its build and map but not its sources (`marked`): the source is in
/// the map's `sourcesContent` only. Breakpoints, stops and debug-source answered
/// `file_not_found` or showed no lines.
#[test]
fn sources_only_in_sources_content() {
    let tag = tag();
    let command = format!("DMCP_TAG={tag} node {}", fixture("mapped-lib/main.js"));
    let file = fixture("mapped-lib/src/index.ts");
    assert!(!std::path::Path::new(&file).exists());
    let result = run_script(json!({"command": command, "breakpoint": {"file": file, "line": 4},
        "expression": "name"}));
    assert_eq!(values(ok(&result)), [json!("ada"), json!("bob")]);

    let mut server = Server::initialized();
    let state = launch(&mut server, &command, &file, 5);
    paused_at(&state, "mapped-lib/src/index.ts", 5);
    let current: Vec<&Value> =
        state["source"].as_array().unwrap().iter().filter(|l| l["current"] == true).collect();
    assert_eq!(current[0]["text"], "  return message;", "{state}");
    let source = tool(&mut server, "debug-source", json!({"file": file, "line": 4, "context": 0}));
    assert_eq!(
        source["lines"],
        json!([{"line": 4, "text": "  const message: string = `hello ${name}`;", "current": true}])
    );
    assert_eq!(source["totalLines"], 6);
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);

    let missing = run_script(json!({"command": command,
        "breakpoint": {"file": fixture("mapped-lib/src/other.ts"), "line": 1}, "expression": "1"}));
    assert_eq!(err(&missing)["code"], "file_not_found");
}

/// A console script (`venv/bin/pytest`) was taken for Node; a `.py` breakpoint means Python;
/// an adapter that fails says why in its own words.
#[test]
fn console_scripts_and_py_breakpoints_are_python() {
    let pytest = std::path::Path::new(&python()).with_file_name("pytest");
    if !pytest.exists() {
        let installed = std::process::Command::new(python())
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "pytest"])
            .status()
            .unwrap();
        assert!(installed.success(), "pip install pytest failed");
    }
    let tag = tag();
    let file = fixture("py/test_sample.py");
    let command = format!("DMCP_TAG={tag} {} -q -p no:cacheprovider {file}", pytest.display());
    let result = run_script(json!({"command": command, "breakpoint": {"file": file, "line": 5},
            "expression": "total"}));
    let s = ok(&result);
    assert_eq!(values(s), [json!(5), json!(10.5)]);
    assert_eq!(s["exitCode"], 0);
    assert!(s["output"]["stdout"].as_str().unwrap().contains("1 passed"), "{s}");

    // A `.py` breakpoint with a command that is no Python at all: a Python answer (it ran
    // no Python), not "no Node inspector".
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": fixture("bin/not-an-adapter"),
        "breakpoint": {"file": file, "line": 5}, "expression": "total"}));
    let hint = err(&result)["hint"].as_str().unwrap_or_default().to_string();
    assert!(hint.starts_with("no Python process of the program started"), "{result}");

    let adapter = fixture("bin/not-an-adapter");
    let mut server = Server::start_with(&[("DEBUG_MCP_DEBUGPY_PYTHON", &adapter)]);
    server.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "it", "version": "0"}}),
    );
    // A session's adapter that fails says why in its own words (debug-script needs none,
    // and neither do sessions unless debugpy is asked for).
    let command = format!("{} {}", python(), fixture("py/loop.py"));
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": command, "language": "debugpy",
               "breakpoints": [{"file": fixture("py/loop.py"), "line": 5}]}),
    );
    assert_eq!(state["code"], "adapter_failed", "{state}");
    // It was given the adapter behind our guard on its ports, from our helper directory.
    let error = state["error"].as_str().unwrap();
    let (said, script) = error.split_once("cannot run ").unwrap();
    assert_eq!(
        said,
        format!(
            "debugpy's adapter (`{adapter} -m debugpy.adapter`) ended (exit code 3) before the \
             program could start: not-an-adapter: "
        ),
        "{state}"
    );
    assert!(
        script.ends_with("/debug_mcp_adapter.py\nnot-an-adapter: this is not a debug adapter"),
        "{state}"
    );
}

/// The server's children that are zombies (their `/proc/PID/stat`): orphans it adopted and did
/// not reap. The server reaps them when it kills a run and on a timer (every second), so they
/// are waited for a moment before they count.
fn zombie_children(server: u32) -> Vec<String> {
    let zombies = || {
        let mut zombies = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{server}/task")).unwrap().flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for pid in children.split_whitespace() {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                if stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')) {
                    zombies.push(stat);
                }
            }
        }
        zombies
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    loop {
        let left = zombies();
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A daemon the program starts (`detached: true`, `unref()`) left the process group and
/// outlived the run.
#[test]
fn detached_children_are_killed_with_the_run() {
    let mut server = Server::initialized();
    let tag = tag();
    let result = server.debug_script(json!({"command": node(&tag, "children/detached.js", ""),
        "breakpoint": {"file": fixture("children/detached.js"), "line": 10},
        "expression": "child.pid"}));
    let daemon = values(ok(&result))[0].as_u64().unwrap();
    assert!(daemon > 0);
    assert_no_debuggee(&tag);
    assert!(!std::path::Path::new(&format!("/proc/{daemon}")).exists(), "daemon {daemon} left");
    assert_eq!(zombie_children(server.pid()), Vec::<String>::new());

    // In a session too, when it stops.
    let tag = crate::tag();
    let state = launch(
        &mut server,
        &node(&tag, "children/detached.js", ""),
        &fixture("children/detached.js"),
        10,
    );
    paused_at(&state, "children/detached.js", 10);
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!(processes_with_tag(&tag), Vec::<u32>::new(), "the daemon outlived the program");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
    assert_eq!(zombie_children(server.pid()), Vec::<String>::new());
}
