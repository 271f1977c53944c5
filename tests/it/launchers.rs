//! Commands that start with a launcher: `npm test` and `npm run` (a package.json script),
//! `npx` and `node_modules/.bin` (a package's bin with a node `#!` line) and `env`. debug-mcp
//! takes the launcher off and starts the node program itself where it can; a script that needs
//! a shell runs through one, and every Node process it starts is followed.

use serde_json::{json, Value};

use crate::need::npm_packages;
use crate::{assert_no_debuggee, err, fixture, ok, run_script, tag, values};

/// `debug-script` in fixtures/launchers, with `command` and a breakpoint at `file:line`.
fn script(command: &str, tag: &str, file: &str, line: u64, expression: &str) -> Value {
    run_script(json!({"command": command, "cwd": fixture("launchers"),
        "env": {"DMCP_TAG": tag}, "breakpoint": {"file": file, "line": line},
        "expression": expression}))
}

#[test]
fn package_scripts_npx_bins_and_env_run_under_the_debugger() {
    let tag = tag();
    let result = script("npm test", &tag, "check.js", 4, "n");
    let s = ok(&result);
    assert_eq!(values(s), [json!(1), json!(2), json!(3)], "{s}");
    assert_eq!(s["output"]["stdout"], "none 6\n");

    // A script that runs a package's bin, with its own assignment.
    let result = script("npm run greet", &tag, "node_modules/.bin/greet", 5, "i");
    let s = ok(&result);
    assert_eq!(values(s), [json!(0), json!(1), json!(2)], "{s}");
    assert_eq!(s["output"]["stdout"], "hey 0\nhey 1\nhey 2\n");

    let result = script("npx greet --times 2", &tag, "node_modules/.bin/greet", 5, "i");
    assert_eq!(values(ok(&result)), [json!(0), json!(1)]);
    let result =
        script("./node_modules/.bin/greet --times 1", &tag, "node_modules/.bin/greet", 5, "i");
    assert_eq!(values(ok(&result)), [json!(0)]);

    // `env` with a directory and a variable, from anywhere.
    let command = format!("env -C {} GREETING=hi node check.js", fixture("launchers"));
    let result = run_script(json!({"command": command, "env": {"DMCP_TAG": tag},
        "breakpoint": {"file": fixture("launchers/check.js"), "line": 4}, "expression": "total"}));
    assert_eq!(ok(&result)["output"]["stdout"], "hi 6\n");
    assert_no_debuggee(&tag);
}

#[test]
fn launchers_that_cannot_be_taken_off_run_through_a_shell_or_say_what_to_run() {
    let tag = tag();
    // `node check.js && node check.js`: a shell runs it, both processes are followed.
    let result = script("npm run both", &tag, "check.js", 4, "n");
    let s = ok(&result);
    assert_eq!(values(s), [1, 2, 3, 1, 2, 3].map(|n| json!(n)), "{s}");
    let processes = s["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 2, "{s}");
    assert!(processes.iter().all(|p| p["command"].as_str().unwrap().ends_with("check.js")), "{s}");
    assert_eq!(s["output"]["stdout"], "none 6\nnone 6\n");
    // What npx would fetch runs through npx itself, which says why it cannot.
    let result = script("npx --no-install left-pad", &tag, "check.js", 4, "n");
    let e = err(&result);
    assert_eq!(e["code"], "exited", "{e}");
    assert!(
        e["output"]["stderr"].as_str().unwrap().contains("could not determine executable"),
        "{e}"
    );
    let e = err(&script("npm run nope", &tag, "check.js", 4, "n")).clone();
    assert!(e["error"].as_str().unwrap().contains("no `nope` script"), "{e}");
    assert_no_debuggee(&tag);
}

/// npm as people write it: options before and after the script's name, another folder, a
/// workspace, npm's own commands; what debug-mcp does not read runs through npm itself.
#[test]
fn package_managers_as_written() {
    let tag = tag();
    let dir = fixture("launchers");
    for command in [
        format!("npm --prefix {dir} test"),
        format!("npm -C {dir} --silent run-script test"),
        format!("npm --prefix={dir} run test -- --x"),
        format!("npm --prefix {dir} -w . test"),
    ] {
        // From the server's own directory: the folder is npm's option.
        let result = run_script(json!({"command": command, "env": {"DMCP_TAG": tag},
            "breakpoint": {"file": fixture("launchers/check.js"), "line": 4}, "expression": "n"}));
        assert_eq!(values(ok(&result)), [json!(1), json!(2), json!(3)], "{command}: {result}");
        let texts = result["content"].as_array().unwrap();
        assert_eq!(texts.len(), 1, "read as a script, nothing to say: {result}");
    }
    // `npm exec` runs through npm itself: the bin it starts is followed, and a note says so.
    let result = script("npm exec greet -- --times 2", &tag, "node_modules/.bin/greet", 5, "i");
    let s = ok(&result);
    assert_eq!(values(s), [json!(0), json!(1)], "{s}");
    let npm = s["processes"][0]["command"].as_str().unwrap();
    assert!(npm.contains("npm") && npm.ends_with("exec greet -- --times 2"), "{s}");
    assert!(s.get("undebugged").is_none(), "npm's shell only started greet: {s}");
    let note = result["content"][0]["text"].as_str().unwrap();
    assert!(
        note.starts_with("Note: `npm exec greet -- --times 2` ran through npm itself"),
        "{note}"
    );
    assert_no_debuggee(&tag);
}

/// Test runners that run the tests in their own process: mocha, and jest in band (or with one
/// test file), through `npm test`, `npm run` and `npx` (installed in fixtures/ by
/// fixtures/package.json).
#[test]
fn mocha_and_jest_tests_stop_in_the_code_under_test() {
    npm_packages();
    let tag = tag();
    let runners = |command: &str| {
        run_script(json!({"command": command, "cwd": fixture("runners"),
            "env": {"DMCP_TAG": tag}, "breakpoint": {"file": "sum.js", "line": 5},
            "expression": "total", "timeout": 60000}))
    };
    for command in ["npm test", "npx mocha sum.spec.js"] {
        let result = runners(command);
        assert_eq!(values(ok(&result)), [json!(0), json!(1), json!(3)], "{command}: {result}");
    }
    // With coverage, jest instruments the file while loading it (other lines, an inline map):
    // the breakpoint moves through the map, and nothing hit at the uninstrumented line counts.
    let coverage = std::env::temp_dir().join(format!("dmcp-coverage-{tag}"));
    let with_coverage =
        format!("npx jest --coverage --coverageDirectory={} sum.test.js", coverage.display());
    for command in ["npm run jest", "npx jest sum.test.js", &with_coverage] {
        let result = runners(command);
        assert_eq!(values(ok(&result)), [json!(0), json!(4)], "{command}: {result}");
    }
    let _ = std::fs::remove_dir_all(coverage);
    assert_no_debuggee(&tag);
}

/// jest with two workers (no cache, so no timings make it run in band): each test file runs in
/// a worker process, and every hit says which.
#[test]
fn jest_workers_are_followed() {
    npm_packages();
    let tag = tag();
    let result = run_script(
        json!({"command": "npx jest --maxWorkers=2 --no-cache sum.test.js sum2.test.js",
        "cwd": fixture("runners"), "env": {"DMCP_TAG": tag},
        "breakpoint": {"file": "sum.js", "line": 5}, "expression": "total", "timeout": 60000}),
    );
    let s = ok(&result);
    let mut hits = values(s);
    hits.sort_by_key(|v| v.as_i64());
    assert_eq!(hits, [0, 0, 1, 3, 4].map(|n| json!(n)), "{s}");
    let processes = s["processes"].as_array().unwrap();
    let workers: Vec<&Value> = processes
        .iter()
        .filter(|p| p["command"].as_str().unwrap().contains("jest-worker"))
        .collect();
    assert!(workers.len() >= 2, "{s}");
    let hit_in_workers: u64 = workers.iter().map(|p| p["hits"].as_u64().unwrap()).sum();
    assert_eq!(hit_in_workers, 5, "the tests ran in the workers: {s}");
    assert_eq!(s["exitCode"], 0);
    assert_no_debuggee(&tag);
}

/// `npx tsx src/main.ts`: tsx's CLI runs the program in a child process with its loader (on
/// a worker thread of its own); the child's `process.execArgv` stays intact.
#[test]
fn npx_tsx_runs_the_typescript_in_a_followed_child() {
    npm_packages();
    let tag = tag();
    let result = run_script(json!({"command": "npx tsx tsx-app/src/main.ts 3",
        "cwd": fixture(""), "env": {"DMCP_TAG": tag},
        "breakpoint": {"file": "tsx-app/src/main.ts", "line": 9}, "expression": "i",
        "timeout": 60000}));
    let s = ok(&result);
    assert_eq!(values(s), [json!(0), json!(1), json!(2)], "{s}");
    assert_eq!(s["output"]["stdout"], "tick 0\n");
    assert_eq!(s["processes"][1]["parent"], s["processes"][0]["pid"], "{s}");
    assert_no_debuggee(&tag);
}
