//! `calls`: every call of the functions asked for, in the order they started, with its
//! arguments and its return value or exception, as a call tree (`depth`, `parent`); Python
//! (`sys.monitoring` or `sys.settrace`), Node and TypeScript through a loader.

use std::process::Command;

use serde_json::{json, Value};

use crate::need::{need, npm_packages, python, Tool};
use crate::{assert_no_debuggee, fixture, ok, root, tag, Server};

/// The calls of an answer as `(function, depth, parent, end)`, `end` the return value's preview
/// or `threw TYPE`.
fn tree(s: &Value) -> Vec<(String, u64, Option<u64>, String)> {
    let calls = s["calls"].as_array().unwrap_or_else(|| panic!("no calls: {s}"));
    calls
        .iter()
        .map(|c| {
            let end = match (&c["return"], &c["threw"]) {
                (Value::String(value), _) => value.clone(),
                (_, Value::Object(threw)) => format!("threw {}", threw["type"].as_str().unwrap()),
                _ if c["returned"] == true => "returned".into(),
                _ => "running".into(),
            };
            let function = c["function"].as_str().unwrap().to_string();
            (function, c["depth"].as_u64().unwrap(), c["parent"].as_u64(), end)
        })
        .collect()
}

fn call(
    function: &str,
    depth: u64,
    parent: Option<u64>,
    end: &str,
) -> (String, u64, Option<u64>, String) {
    (function.into(), depth, parent, end.into())
}

/// fixtures/calls/shop.py's calls.
fn shop_tree() -> Vec<(String, u64, Option<u64>, String)> {
    vec![
        call("Cart.__init__", 0, None, "None"),
        call("Cart.total", 0, None, "11"),
        call("price", 1, Some(2), "6"),
        call("price", 1, Some(2), "5"),
        call("price", 0, None, "threw ValueError"),
        call("squares", 0, None, "'done'"),
        call("main", 0, None, "42"),
        call("fetch", 1, Some(7), "42"),
    ]
}

/// Every Python function of a file: methods by their qualified names, a generator from its
/// first `next` to its `return`, coroutines to what they returned, a throw; the numbers run
/// in the order the calls started.
#[test]
fn python_calls_as_a_tree() {
    let tag = tag();
    let file = fixture("calls/shop.py");
    let command = format!("DMCP_TAG={tag} {} '{file}'", python());
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": command, "calls": [{"file": file}]}));
    let s = ok(&result);
    assert_eq!(tree(s), shop_tree(), "{s}");
    let numbers: Vec<u64> =
        s["calls"].as_array().unwrap().iter().map(|c| c["call"].as_u64().unwrap()).collect();
    assert_eq!(numbers, (1..=8).collect::<Vec<_>>());
    let price = &s["calls"][2];
    assert_eq!(price["args"], json!({"item": "{'unit': 2, 'qty': 3}"}), "{s}");
    assert_eq!((&price["file"], &price["line"]), (&json!(file), &json!(11)), "{s}");
    assert_eq!(
        s["calls"][4]["threw"],
        json!({"type": "ValueError", "message": "negative quantity"})
    );

    // One function, capped: the rest counted.
    let result = server.debug_script(
        json!({"command": command, "calls": [{"file": file, "function": "price"}], "maxHits": 2}),
    );
    let s = ok(&result);
    assert_eq!(tree(s).len(), 2, "{s}");
    assert_eq!(s["callsOmitted"], json!({"price": 1}), "{s}");
    assert_no_debuggee(&tag);
}

/// The same functions in a module the program imports: before 3.12 compiled with the calls in
/// (the program runs untraced: `sys.gettrace()` is None in it, 3.8+), the same tree; a traced
/// function's uncaught exception reads as it does without debug-mcp.
#[test]
fn python_calls_in_an_imported_module() {
    let tag = tag();
    let dir = fixture("calls");
    let import = |module: &str, then: &str| {
        format!(
            "DMCP_TAG={tag} {} -c 'import sys; sys.path.insert(0, \"{dir}\"); import {module}; {then}'",
            python()
        )
    };
    let mut server = Server::initialized();
    // (3.7 has no audit hooks: it is traced.)
    let command = import("shop", "print(sys.gettrace() is None or sys.version_info < (3, 8))");
    let result = server
        .debug_script(json!({"command": command, "calls": [{"file": fixture("calls/shop.py")}]}));
    let s = ok(&result);
    assert_eq!(tree(s), shop_tree(), "{s}");
    assert!(s["output"]["stdout"].as_str().unwrap().ends_with("True\n"), "{s}");

    // Through debug-mcp's runner (`-E` skips our sitecustomize.py), the same.
    let command = format!("DMCP_TAG={tag} {} -E '{}'", python(), fixture("calls/buy.py"));
    let result = server
        .debug_script(json!({"command": command, "calls": [{"file": fixture("calls/shop.py")}]}));
    let s = ok(&result);
    assert_eq!(tree(s), shop_tree(), "{s}");

    let command = import("raises", "");
    let alone = Command::new("sh").args(["-c", &command]).output().unwrap();
    let file = fixture("calls/raises.py");
    let result = server.debug_script(json!({"command": command, "calls": [{"file": file}]}));
    let s = ok(&result);
    assert_eq!(s["output"]["stderr"], String::from_utf8_lossy(&alone.stderr).as_ref(), "{s}");
    assert_eq!(
        tree(s),
        vec![
            call("checked", 0, None, "threw ValueError"),
            call("check", 1, Some(1), "{'qty': 1}"),
            call("check", 1, Some(1), "threw ValueError"),
        ],
        "{s}"
    );
    assert_no_debuggee(&tag);
}

/// The main script's own functions traced: it runs untraced (`sys.gettrace()` is None, 3.8+),
/// and its uncaught exception reads as without debug-mcp, with its exit status; past the cap,
/// the calls are counted.
#[test]
fn python_calls_in_the_main_script() {
    let mut server = Server::initialized();
    let file = fixture("calls/untraced.py");
    let command = format!("{} '{file}'", python());
    let result = server.debug_script(json!({"command": command, "calls": [{"file": file}]}));
    let s = ok(&result);
    assert_eq!(tree(s), vec![call("double", 0, None, "42")], "{s}");
    assert_eq!(s["output"]["stdout"], "42 True\n", "{s}");

    let file = fixture("calls/raises.py");
    let command = format!("{} '{file}'", python());
    let alone = Command::new("sh").args(["-c", &command]).output().unwrap();
    let result = server.debug_script(json!({"command": command, "calls": [{"file": file}]}));
    let s = ok(&result);
    assert_eq!(s["output"]["stderr"], String::from_utf8_lossy(&alone.stderr).as_ref(), "{s}");
    assert_eq!(s["exitCode"], 1, "{s}");
    assert_eq!(tree(s).len(), 3, "{s}");

    // Past the cap, each call counted once, though a call recorded ended after a report.
    let file = fixture("calls/late.py");
    let command = format!("{} '{file}'", python());
    let result = server.debug_script(json!({"command": command, "calls": [{"file": file}]}));
    let s = ok(&result);
    assert_eq!((tree(s).len(), &s["callsOmitted"]), (200, &json!({"inner": 101})), "{s}");
    assert_eq!(tree(s)[0], call("outer", 0, None, "'done'"), "{s}");
    let file = fixture("calls/work.py");
    let command = format!("{} '{file}'", python());
    let result =
        server.debug_script(json!({"command": command, "calls": [{"file": file}], "maxHits": 3}));
    let s = ok(&result);
    let omitted = &s["callsOmitted"];
    assert_eq!((tree(s).len(), omitted), (3, &json!({"line_total": 4998, "parse": 4999})), "{s}");
}

/// The process the run starts reports on a connection it inherits, its children on the
/// socket: each one's calls are said, with its pid.
#[test]
fn python_calls_of_a_process_and_its_child() {
    let mut server = Server::initialized();
    let file = fixture("calls/children.py");
    let command = format!("{} '{file}'", python());
    let result = server.debug_script(json!({"command": command, "calls": [{"file": file}]}));
    let s = ok(&result);
    assert_eq!(s["output"]["stdout"], "top False\n['child'] True\n", "{s}");
    let returns: Vec<(&Value, &Value)> =
        s["calls"].as_array().unwrap().iter().map(|c| (&c["return"], &c["process"])).collect();
    let processes = s["processes"].as_array().unwrap();
    let (top, child) = (&processes[0]["pid"], &processes[1]["pid"]);
    assert_eq!(returns, vec![(&json!("2"), top), (&json!("3"), child)], "{s}");
    assert_eq!(&processes[1]["parent"], top, "{s}");
}

/// A traced file is compiled with the calls in: that code is kept for the next run of the
/// same source and plan through the server (the program then loads nothing to compile it),
/// never for a source changed since or another plan.
#[test]
fn python_rewrites_are_kept_for_the_next_run() {
    /// Removed when the test ends, passed or not.
    struct Dir(std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let dir = Dir(std::env::temp_dir().join(format!("dmcp-rewrite-{}", tag())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let file = dir.0.join("double.py");
    let write = |factor: u32| {
        let source = format!(
            "import sys\n\ndef double(x):\n    return x * {factor}\n\n\
             print(double(21), 'debug_mcp_syntax' in sys.modules)\n"
        );
        std::fs::write(&file, source).unwrap();
    };
    let file = file.display().to_string();
    let command = format!("{} '{file}'", python());
    let mut server = Server::initialized();
    let mut run = |function: Option<&str>| {
        let traced = match function {
            Some(function) => json!({"file": file, "function": function}),
            None => json!({"file": file}),
        };
        let result = server.debug_script(json!({"command": command, "calls": [traced]}));
        let s = ok(&result);
        (tree(s), s["output"]["stdout"].as_str().unwrap().trim_end().to_string())
    };
    write(2);
    assert_eq!(run(None), (vec![call("double", 0, None, "42")], "42 True".into()));
    assert_eq!(run(None), (vec![call("double", 0, None, "42")], "42 False".into()));
    write(3);
    assert_eq!(run(None), (vec![call("double", 0, None, "63")], "63 True".into()));
    assert_eq!(run(Some("nothing")), (vec![], "63 True".into()));
    assert_eq!(run(Some("double")), (vec![call("double", 0, None, "63")], "63 True".into()));
}

/// Lambdas, as the main script and imported (before 3.12: traced, and compiled with the calls
/// in): the same calls, an exception that leaves a lambda told where it was caught or passed.
#[test]
fn python_lambdas_run_and_imported() {
    let tag = tag();
    let dir = fixture("calls");
    let file = fixture("calls/lambdas.py");
    let mut server = Server::initialized();
    let expected = vec![
        call("by_price", 0, None, "[{'price': 1}, {'price': 2}]"),
        call("by_price.<locals>.<lambda>", 1, Some(1), "2"),
        call("by_price.<locals>.<lambda>", 1, Some(1), "1"),
        call("safe", 0, None, "None"),
        call("safe.<locals>.<lambda>", 1, Some(4), "threw ZeroDivisionError"),
        call("unsafe", 0, None, "threw KeyError"),
        call("unsafe.<locals>.<lambda>", 1, Some(6), "threw KeyError"),
    ];
    for command in [
        format!("DMCP_TAG={tag} {} '{file}'", python()),
        format!(
            "DMCP_TAG={tag} {} -c 'import sys; sys.path.insert(0, \"{dir}\"); import lambdas'",
            python()
        ),
    ] {
        let result = server.debug_script(json!({"command": command, "calls": [{"file": file}]}));
        let s = ok(&result);
        assert_eq!(tree(s), expected, "{command}: {s}");
    }
    assert_no_debuggee(&tag);
}

/// pytest with two xdist workers: each worker's calls, said with its process.
#[test]
fn python_calls_in_every_process() {
    let tag = tag();
    let dir = fixture("py/failing");
    let command = format!("DMCP_TAG={tag} {} -m pytest -q -p no:cacheprovider -n 2", python());
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": command, "cwd": dir,
        "calls": [{"file": fixture("py/failing/prices.py"), "function": "total"}]}));
    let s = ok(&result);
    let mut returns: Vec<&str> =
        s["calls"].as_array().unwrap().iter().map(|c| c["return"].as_str().unwrap()).collect();
    returns.sort();
    // The planted bug: 16.2 where the test expects 18.0.
    assert_eq!(returns, ["16.2", "8.0"], "{s}");
    let processes: Vec<&Value> =
        s["calls"].as_array().unwrap().iter().map(|c| &c["process"]).collect();
    assert!(processes.iter().all(|p| p.is_u64()) && processes[0] != processes[1], "{s}");
    assert_no_debuggee(&tag);
}

/// Node: a class's methods, a callback, a throw, a generator, and async functions with what
/// they resolved to; no pause is left behind.
#[test]
fn node_calls_as_a_tree() {
    let tag = tag();
    let file = fixture("calls/shop.js");
    let command = format!("DMCP_TAG={tag} node '{file}'");
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": command, "calls": [{"file": file}]}));
    let s = ok(&result);
    let calls = tree(s);
    assert_eq!(
        calls[..10],
        vec![
            call("main", 0, None, "undefined"),
            call("Cart.constructor", 1, Some(1), "undefined"),
            call("Cart.total", 1, Some(1), "11"),
            call("(anonymous)", 2, Some(3), "6"),
            call("price", 3, Some(4), "6"),
            call("(anonymous)", 2, Some(3), "11"),
            call("price", 3, Some(6), "5"),
            call("price", 1, Some(1), "threw RangeError"),
            call("squares", 1, Some(1), "\"done\""),
            call("fetchTwice", 1, Some(1), "{\"doubled\":42}"),
        ],
        "{s}"
    );
    assert_eq!(s["calls"][4]["args"], json!({"item": "{\"unit\":2,\"qty\":3}"}), "{s}");
    assert_eq!(s["output"]["stdout"], "11\n[ 0, 1, 4 ]\n{ doubled: 42 }\n", "{s}");

    // Past the cap every call is still counted (at its start: the returns' pauses are gone).
    let work = fixture("calls/work.js");
    let result = server.debug_script(json!({"command": format!("DMCP_TAG={tag} node '{work}'"),
        "calls": [{"file": work}], "maxHits": 4}));
    let s = ok(&result);
    assert_eq!(tree(s).len(), 4, "{s}");
    let omitted: u64 =
        s["callsOmitted"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(omitted, 1500 - 4, "{s}");
    assert_eq!(s["output"]["stdout"], "500\n", "{s}");
    assert_no_debuggee(&tag);
}

/// Node and Deno: a traced file's functions are compiled with their calls (no pause per call):
/// a CommonJS script whole, an ES module's functions whose end stays (a one-line function keeps
/// its breakpoints, and the tree runs across both); an error's stack keeps the file's lines
/// and columns.
#[test]
fn node_calls_compiled_into_the_script() {
    let lib = fixture("calls/esm/lib.mjs");
    let main = fixture("calls/esm/main.mjs");
    let alone = Command::new("node").arg(&main).output().unwrap();
    let expected = vec![
        call("add", 0, None, "3"),
        call("twice", 0, None, "10"),
        call("add", 1, Some(2), "10"),
        call("later", 0, None, "14"),
        call("double", 1, Some(4), "14"),
        call("twice", 2, Some(5), "14"),
        call("add", 3, Some(6), "14"),
        call("check", 0, None, "threw RangeError"),
    ];
    let deno = fixture("node_modules/.bin/deno");
    let mut runs = vec![vec!["node".to_string(), main.clone()]];
    if std::path::Path::new(&deno).exists() {
        runs.push(vec![deno, "run".into(), main.clone()]);
    }
    for command in runs {
        let output = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
            .args(["run", "--calls", &lib, "--"])
            .args(&command)
            .env("DEBUG_MCP_LOG", "debug")
            .current_dir(root())
            .output()
            .unwrap();
        let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
        crate::schema::check("debug-script", &printed);
        assert_eq!(tree(&printed), expected, "{command:?}: {printed}");
        assert_eq!(
            printed["output"]["stdout"].as_str().unwrap().as_bytes(),
            alone.stdout,
            "{printed}"
        );
        let log = String::from_utf8_lossy(&output.stderr);
        assert!(
            log.contains("calls compiled into") && log.contains("4 functions, 1 left"),
            "{log}"
        );
    }

    // A probe in a compiled function still reports (V8 dropped it there: it is placed again).
    let shop = fixture("calls/shop.js");
    let probe = format!("{shop}:11=item.qty");
    let output = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
        .args(["run", "--calls", &shop, "--probe", &probe, "--", "node", &shop])
        .env("DEBUG_MCP_LOG", "debug")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("calls compiled into") && log.contains("8 functions, 0 left"), "{log}");
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let values: Vec<&Value> =
        printed["results"].as_array().unwrap().iter().map(|r| &r["value"]).collect();
    assert_eq!(values, [&json!(3), &json!(1)], "{printed}");
    assert_eq!(tree(&printed).len(), 11, "{printed}");
}

/// TypeScript through vitest's transform: the library function's calls, in its own file and
/// lines.
#[test]
fn typescript_calls_through_vitest() {
    npm_packages();
    let dir = fixture("ts-loaders");
    let vitest = fixture("node_modules/.bin/vitest");
    let file = fixture("ts-loaders/src/price.ts");
    let mut server = Server::initialized();
    let result = server
        .debug_script(json!({"command": format!("'{vitest}' run src/price.vitest.test.ts"),
        "cwd": dir, "calls": [{"file": file}], "timeout": 60000}));
    let s = ok(&result);
    assert_eq!(tree(s), vec![call("total", 0, None, "5.5")], "{s}");
    assert_eq!((&s["calls"][0]["file"], &s["calls"][0]["line"]), (&json!(file), &json!(7)), "{s}");
    assert_eq!(s["calls"][0]["args"]["discount"], "0.5", "{s}");
}

/// TypeScript through every loader that compiles it while loading (jiti keeps the file's lines
/// and no map): the library function's one call, in its own file and line, compiled in.
#[test]
fn typescript_calls_through_every_loader() {
    npm_packages();
    let dir = fixture("ts-loaders");
    let file = fixture("ts-loaders/src/price.ts");
    let mut server = Server::initialized_in(std::path::Path::new(&dir));
    for command in [
        "npx tsx src/main.ts",
        "npx jiti src/main.ts",
        "npx ts-node src/main.ts",
        "node -r esbuild-register src/main.ts",
        "npx vite-node src/main.ts",
        "npx jest src/price.jest.ts",
    ] {
        let result = server
            .debug_script(json!({"command": command, "calls": [{"file": file}], "timeout": 60000}));
        let s = ok(&result);
        assert_eq!(tree(s), vec![call("total", 0, None, "5.5")], "{command}: {s}");
        assert_eq!(s["calls"][0]["line"], 7, "{command}: {s}");
    }
}

/// An arrow esbuild compiles for tsx (`__name(l => …, "lineTotal")`) is found by its name.
#[test]
fn typescript_arrows_by_name() {
    npm_packages();
    let lib = fixture("calls/ts-esm/lib.ts");
    let command =
        format!("'{}' '{}'", fixture("node_modules/.bin/tsx"), fixture("calls/ts-esm/main.ts"));
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": command,
        "calls": [{"file": lib, "function": "lineTotal"}], "timeout": 60000}));
    let s = ok(&result);
    assert_eq!(
        tree(s),
        vec![call("lineTotal", 0, None, "3"), call("lineTotal", 0, None, "4")],
        "{s}"
    );
    assert_eq!(s["calls"][0]["line"], 3, "{s}");
}

/// The command line's `--calls FILE:FUNCTION`.
#[test]
fn the_cli_traces_calls() {
    let file = fixture("calls/shop.py");
    let output = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
        .args(["run", "--calls", &format!("{file}:price"), "--", &python(), &file])
        .current_dir(root())
        .output()
        .unwrap();
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    crate::schema::check("debug-script", &printed);
    assert_eq!(tree(&printed).len(), 3, "{printed}");
}

/// C under lldb-dap (and gdb, with the venv's GDB 18): a one-line function's arguments read
/// after its prologue, a structure passed and returned, recursion, a void function (it
/// `returned`), and callbacks from libc's `qsort` (a frame not traced between them and their
/// caller); a function that is not in the file is an error that lists those that are.
#[test]
fn c_calls_under_lldb_and_gdb() {
    if !need(Tool::Lldb) {
        return;
    }
    let program = crate::native::build("gcc", "calls/shop.c", "calls-shop");
    let file = fixture("calls/shop.c");
    let mut server = Server::initialized();
    let expected = |main_returns: &str| {
        vec![
            call("main", 0, None, main_returns),
            call("moved", 1, Some(1), "point {x: 4, y: 5}"),
            call("square", 1, Some(1), "16"),
            call("report", 1, Some(1), "returned"),
            call("fact", 1, Some(1), "6"),
            call("fact", 2, Some(5), "2"),
            call("fact", 3, Some(6), "1"),
            call("report", 1, Some(1), "returned"),
            call("smallest", 1, Some(1), "1"),
        ]
    };
    let result = server.debug_script(json!({"command": program, "calls": [{"file": file}]}));
    let s = ok(&result);
    let calls = tree(s);
    assert_eq!(calls[..9], expected("0"), "{s}");
    assert_eq!(s["calls"][2]["args"], json!({"n": "4"}), "{s}");
    assert_eq!(s["calls"][1]["args"], json!({"by": "3", "p": "point {x: 1, y: 2}"}), "{s}");
    // qsort's calls of `compare`, under `smallest`, then the last report.
    let compares = &calls[9..calls.len() - 1];
    assert!(!compares.is_empty(), "{s}");
    assert!(compares.iter().all(|c| c.0 == "compare" && c.1 == 2 && c.2 == Some(9)), "{s}");
    assert_eq!(calls.last().unwrap(), &call("report", 1, Some(1), "returned"), "{s}");

    let result = server.call(
        "debug-script",
        json!({"command": program, "calls": [{"file": file, "function": "price"}]}),
    );
    let e = crate::err(&result);
    assert_eq!(e["code"], "invalid_arguments", "{e}");
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("defines no function `price`; it defines square, moved"),
        "{e}"
    );

    // Beside a probe, and beside the breakpoint, in the same file: one set of breakpoints.
    let fact = json!([{"file": file, "function": "fact"}]);
    let facts = vec![
        call("fact", 0, None, "6"),
        call("fact", 1, Some(1), "2"),
        call("fact", 2, Some(2), "1"),
    ];
    let probe = json!([{"file": file, "line": 18, "expression": "n"}]);
    let result = server.debug_script(json!({"command": program, "calls": fact, "probes": probe}));
    let s = ok(&result);
    assert_eq!(tree(s), facts, "{s}");
    assert_eq!(s["results"], json!([{"probe": 0, "type": "int", "value": 1}]), "{s}");
    let result = server.debug_script(json!({"command": program, "calls": fact,
        "breakpoint": {"file": file, "line": 18}, "expression": "n"}));
    let s = ok(&result);
    assert_eq!(tree(s), facts, "{s}");
    assert_eq!(s["results"], json!([{"type": "int", "value": 1}]), "{s}");

    // gdb steps out of every function but `main`, its outermost frame.
    let gdb = crate::need::gdb_bin();
    let path = format!("{}:{}", gdb.display(), std::env::var("PATH").unwrap_or_default());
    let mut server = Server::initialized_with(&root(), &[("PATH", &path)]);
    let result = server
        .debug_script(json!({"command": program, "language": "gdb", "calls": [{"file": file}]}));
    let s = ok(&result);
    let mut expected = expected("running");
    expected[1].3 = "struct point {x: 4, y: 5}".into();
    assert_eq!(tree(s)[..9], expected, "{s}");
}

/// Go under Delve: a method and recursion as a tree, with their arguments; Delve's DAP reports
/// no return value (each call says it `returned`).
#[test]
fn go_calls_under_delve() {
    if !need(Tool::Delve) {
        return;
    }
    let dir = fixture("calls/go");
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": "go run .", "cwd": dir,
        "calls": [{"file": fixture("calls/go/main.go")}], "timeout": 120000}));
    let s = ok(&result);
    assert_eq!(
        tree(s),
        vec![
            call("main.main", 0, None, "returned"),
            call("main.(*Cart).Total", 1, Some(1), "returned"),
            call("main.square", 2, Some(2), "returned"),
            call("main.square", 2, Some(2), "returned"),
            call("main.fact", 1, Some(1), "returned"),
            call("main.fact", 2, Some(5), "returned"),
            call("main.fact", 3, Some(6), "returned"),
        ],
        "{s}"
    );
    assert_eq!(s["calls"][1]["args"]["extra"], "3", "{s}");
    assert_eq!(s["calls"][6]["args"], json!({"n": "1"}), "{s}");
}
