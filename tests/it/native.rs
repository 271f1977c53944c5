//! Compiled programs through debug adapters: C and C++ and Rust through lldb-dap, Go through
//! Delve, Ruby through a configured rdbg. The fixtures are built here, once per test run, into
//! `target/native-fixtures`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::need::{need, Tool};
use crate::{err, fixture, launch, local, ok, root, tool, values, Server};

/// Where the fixtures are built.
pub fn out_dir() -> PathBuf {
    let dir = root().join("target/native-fixtures");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn build(program: &str, source: &str, output: &str) -> String {
    let out = out_dir().join(output);
    let status = Command::new(program)
        .args(["-g", "-O0", "-o"])
        .arg(&out)
        .arg(fixture(source))
        .status()
        .unwrap_or_else(|e| panic!("{program} is needed to build {source}: {e}"));
    assert!(status.success(), "building {source}");
    out.display().to_string()
}

pub fn c_loop() -> &'static str {
    static BUILT: OnceLock<String> = OnceLock::new();
    BUILT.get_or_init(|| build("gcc", "native/c/loop.c", "loop"))
}

/// Built once for every test that runs it: two builds of one file at once would let a test
/// run a binary the other is still writing.
fn c_crash() -> &'static str {
    static BUILT: OnceLock<String> = OnceLock::new();
    BUILT.get_or_init(|| build("gcc", "native/c/crash.c", "crash"))
}

fn cpp_words() -> &'static str {
    static BUILT: OnceLock<String> = OnceLock::new();
    BUILT.get_or_init(|| build("g++", "native/cpp/words.cpp", "words"))
}

fn rust_orders() -> &'static str {
    static BUILT: OnceLock<String> = OnceLock::new();
    BUILT.get_or_init(|| {
        let target = out_dir().join("rust");
        let status = Command::new("cargo")
            .args(["build", "-q", "--target-dir"])
            .arg(&target)
            .current_dir(fixture("native/rust"))
            .env_remove("CARGO_TARGET_DIR")
            .status()
            .unwrap();
        assert!(status.success(), "building the Rust fixture");
        target.join("debug/orders").display().to_string()
    })
}

#[test]
fn c_values_at_every_hit_typed_in_c() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let file = fixture("native/c/loop.c");
    let result = server.debug_script(json!({"command": format!("{} 5", c_loop()),
        "breakpoint": {"file": file, "line": 15}, "expression": "o->total"}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!(9.5), json!(20.25), json!(5.0), json!(9.5), json!(20.25)]);
    assert_eq!(s["results"][0]["type"], "double", "{s}");
    assert_eq!(s["exitCode"], 0, "{s}");
    assert_eq!(s["output"]["stdout"], "sum 64.50 after 5 orders\n", "{s}");
    assert!(s["results"][0].get("pid").is_none(), "one process: {s}");
    assert_eq!(s["processes"][0]["hits"], 5, "{s}");

    let result = server.debug_script(json!({"command": format!("{} 2", c_loop()),
        "breakpoint": {"file": file, "line": 15}, "expression": "*o"}));
    let s = ok(&result);
    assert_eq!(
        values(s),
        vec![
            json!({"id": 1, "total": 9.5, "customer": "ada"}),
            json!({"id": 2, "total": 20.25, "customer": "bob"})
        ],
        "{s}"
    );

    let result = server.debug_script(json!({"command": format!("{} 4", c_loop()),
        "breakpoint": {"file": file, "line": 15, "condition": "o->id != 2"},
        "expression": "o->customer"}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!("ada"), json!("cy"), json!("ada")], "{s}");
    assert_eq!(s["results"][0]["type"], "const char *");

    let result = server.debug_script(json!({"command": c_loop(),
        "breakpoint": {"file": file, "line": 15}, "expression": "nope"}));
    let s = ok(&result);
    assert_eq!(s["results"][0]["type"], "error", "{s}");
    assert!(s["results"][0]["value"].as_str().unwrap().contains("nope"), "{s}");
}

#[test]
fn cpp_strings_and_rust_collections_read_whole() {
    if !need(Tool::Lldb) || !need(Tool::Cxx) {
        return;
    }
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": cpp_words(),
        "breakpoint": {"file": fixture("native/cpp/words.cpp"), "line": 9}, "expression": "w"}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!("a"), json!("b"), json!("a"), json!("c")], "{s}");
    assert!(s["results"][0]["type"].as_str().unwrap().contains("string"), "{s}");

    let file = fixture("native/rust/src/main.rs");
    let result = server.debug_script(json!({"command": rust_orders(),
        "breakpoint": {"file": file, "line": 13}, "expression": "order.items",
        "includeStack": true}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!([1, 2]), json!([1, 2]), json!([3])], "{s}");
    assert!(s["results"][0]["type"].as_str().unwrap().starts_with("alloc::vec::Vec<"), "{s}");
    let stack = &s["results"][0]["stack"];
    assert_eq!(stack[0]["function"], "orders::total", "no hash suffix: {s}");
    assert_eq!(stack[1]["function"], "orders::main", "{s}");

    let result = server.debug_script(json!({"command": rust_orders(),
        "breakpoint": {"file": file, "line": 13}, "expression": "order.customer"}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!("ada"), json!("ada"), json!("bob")], "{s}");
    assert_eq!(s["output"]["stdout"], "order 1 for ada: 35\norder 2 for bob: 7\ngrand total 42\n");
}

#[test]
fn go_run_values_and_goroutines() {
    if !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let dir = fixture("native/go");
    let file = fixture("native/go/main.go");
    let id = server.start_request("tools/call", json!({"name": "debug-script",
        "_meta": {"progressToken": "go"},
        "arguments": {"command": "go run .", "cwd": dir,
                      "breakpoint": {"file": file, "line": 16}, "expression": "o", "timeout": 120000}}));
    let result = server.response(&json!(id))["result"].clone();
    let progress: Vec<&Value> =
        server.notifications.iter().filter(|n| n["method"] == "notifications/progress").collect();
    assert_eq!(progress[0]["params"]["message"], "building the program (delve)", "{progress:?}");
    let s = ok(&result);
    assert_eq!(s["results"][0]["type"], "main.Order", "{s}");
    assert_eq!(s["results"][0]["value"]["Total"], 9.5, "{s}");
    assert_eq!(s["results"][1]["value"]["ID"], 2, "{s}");
    assert_eq!(s["exitCode"], 0, "{s}");
    assert!(s["output"]["stdout"].as_str().unwrap().ends_with("sum 29.75\n"), "{s}");

    // Two goroutines at one line: both hits, whichever comes first.
    let result = server.debug_script(json!({"command": "go run .", "cwd": dir,
        "breakpoint": {"file": file, "line": 31}, "expression": "n", "timeout": 120000}));
    let s = ok(&result);
    let mut seen: Vec<i64> = values(s).iter().map(|v| v.as_i64().unwrap()).collect();
    seen.sort();
    assert_eq!(seen, vec![0, 1], "{s}");

    // In the standard library, by its GOROOT path (Debian's is a symlink into /usr/share,
    // and the debug information keeps the link).
    let goroot = Command::new("go").args(["env", "GOROOT"]).output().unwrap().stdout;
    let print = PathBuf::from(String::from_utf8(goroot).unwrap().trim()).join("src/fmt/print.go");
    let text = std::fs::read_to_string(&print).unwrap();
    let line = text.lines().position(|l| l.starts_with("func Println(")).unwrap() + 2;
    let result = server.debug_script(json!({"command": "go run .", "cwd": dir,
        "breakpoint": {"file": print.display().to_string(), "line": line},
        "expression": "len(a)", "timeout": 120000}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!(2), json!(2)], "{s}");
}

/// A Go program built and run elsewhere (as a container builds `/app`) under a headless Delve,
/// attached to by its port with `pathMappings`, then without (the mapping guessed and said):
/// the breakpoint given in the local tree stops it, and the stop is the local file's;
/// debug-stop detaches.
#[test]
fn a_remote_delve_is_attached_with_path_mappings() {
    if !need(Tool::Delve) {
        return;
    }
    let app = std::env::temp_dir().join(format!("dmcp-remote-{}", crate::tag())).join("app");
    std::fs::create_dir_all(&app).unwrap();
    for file in ["go.mod", "main.go"] {
        std::fs::copy(fixture(&format!("native/go/{file}")), app.join(file)).unwrap();
    }
    let built = Command::new("go")
        .args(["build", "-gcflags=all=-N -l", "-o", "app", "."])
        .current_dir(&app)
        .status()
        .unwrap();
    assert!(built.success());
    let remote = app.canonicalize().unwrap().display().to_string();
    // With the mapping, then without: guessed from `dlv sources` and the breakpoint's file.
    for given in [true, false] {
        let port = crate::free_port();
        let mut delve = crate::Program::spawn(
            Command::new("dlv")
                .args(["--headless", &format!("--listen=127.0.0.1:{port}"), "--accept-multiclient"])
                .args(["--api-version=2", "exec", "./app"])
                .current_dir(&app)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null()),
        );
        let mut said = String::new();
        let stdout = delve.0.stdout.take().unwrap();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut said).unwrap();
        assert!(said.contains("listening"), "{said}");
        let mut server = Server::initialized();
        let mut call = json!({"port": port, "language": "go",
                              "breakpoints": [{"file": fixture("native/go/main.go"), "line": 16}]});
        if given {
            call["pathMappings"] = json!([{"remote": remote, "local": "fixtures/native/go"}]);
        }
        let state = tool(&mut server, "debug-launch", call);
        assert_eq!(state["location"]["function"], "main.add", "{state}");
        let file = fixture("native/go/main.go");
        stopped_in_the_local_file(&mut server, &state, &file, &remote, given, "o.Total");
        drop(delve);
    }
    std::fs::remove_dir_all(app.parent().unwrap()).unwrap();
}

/// A program run from `remote` (a copy of `file`'s folder), attached to: its first `state` is
/// paused in the local `file`, says the mapping only when it was guessed (not `given`), and
/// reads `expression` (the first order's total) there; debug-stop detaches.
fn stopped_in_the_local_file(
    server: &mut Server,
    state: &Value,
    file: &str,
    remote: &str,
    given: bool,
    expression: &str,
) {
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["location"]["file"], file, "{state}");
    let local = std::path::Path::new(file).parent().unwrap().display().to_string();
    let guessed = json!([{"remote": remote, "local": local, "guessed": true}]);
    assert_eq!(state.get("pathMappings"), (!given).then_some(&guessed), "{state}");
    let total = tool(server, "debug-evaluate", json!({"expression": expression}));
    assert_eq!(total["value"], 9.5, "{total}");
    let stopped = tool(server, "debug-stop", json!({}));
    assert_eq!(stopped["stopped"], true, "{stopped}");
}

/// A C program built and run elsewhere under `lldb-server gdbserver`, attached to by its port
/// with its executable and `pathMappings`, then without (guessed and said): the breakpoint in
/// the local source stops it there.
#[test]
fn a_gdb_remote_server_is_attached_with_path_mappings() {
    if !need(Tool::Lldb) {
        return;
    }
    let Some(lldb_server) = ["lldb-server-19", "lldb-server"]
        .into_iter()
        .find(|name| Command::new(name).arg("version").output().is_ok_and(|o| o.status.success()))
    else {
        panic!("lldb-server is part of lldb-19 and should be there with lldb-dap");
    };
    let app = std::env::temp_dir().join(format!("dmcp-remote-{}", crate::tag())).join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::copy(fixture("native/c/loop.c"), app.join("loop.c")).unwrap();
    let built = Command::new("cc")
        .args(["-g", "-O0", "-o", "loop", "loop.c"])
        .current_dir(&app)
        .status()
        .unwrap();
    assert!(built.success());
    let remote = app.canonicalize().unwrap().display().to_string();
    // With the mapping, then without: guessed from lldb's line table of the breakpoint's file.
    for given in [true, false] {
        let port = crate::free_port();
        let server_process = crate::Program::spawn(
            Command::new(lldb_server)
                .args(["gdbserver", &format!("127.0.0.1:{port}"), "./loop", "3"])
                .current_dir(&app)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        );
        let mut server = Server::initialized();
        let mut arguments = json!({"port": port, "language": "c",
            "program": app.join("loop").display().to_string(),
            "breakpoints": [{"file": fixture("native/c/loop.c"), "line": 15}]});
        if given {
            arguments["pathMappings"] = json!([{"remote": remote, "local": "fixtures/native/c"}]);
        }
        // Until the server listens.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let state = loop {
            let state = tool(&mut server, "debug-launch", arguments.clone());
            if state["state"] == "paused" || std::time::Instant::now() > deadline {
                break state;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        let file = fixture("native/c/loop.c");
        stopped_in_the_local_file(&mut server, &state, &file, &remote, given, "o->total");
        drop(server_process);
    }
    std::fs::remove_dir_all(app.parent().unwrap()).unwrap();
}

#[test]
fn a_c_session_from_breakpoint_to_exit() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let file = fixture("native/c/loop.c");
    let state = launch(&mut server, &format!("{} 3", c_loop()), &file, 15);
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["reason"], "breakpoint", "{state}");
    assert_eq!(state["location"]["function"], "add_order", "{state}");
    assert_eq!(state["location"]["line"], 15, "{state}");
    assert_eq!(local(&state, "sum")["value"], 0.0, "{state}");
    assert_eq!(local(&state, "sum")["type"], "double", "{state}");

    let value = tool(&mut server, "debug-evaluate", json!({"expression": "o->total * 2"}));
    assert_eq!(value, json!({"type": "double", "value": 19.0}));
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "*o"}));
    assert_eq!(value["value"], json!({"id": 1, "total": 9.5, "customer": "ada"}), "{value}");
    let members = tool(&mut server, "debug-variables", json!({"path": "o"}));
    let names: Vec<&Value> =
        members["variables"].as_array().unwrap().iter().map(|v| &v["name"]).collect();
    assert_eq!(names, vec!["id", "total", "customer"], "{members}");

    let registers = tool(&mut server, "debug-variables", json!({"scope": "registers"}));
    let names: Vec<&Value> =
        registers["variables"].as_array().unwrap().iter().map(|v| &v["name"]).collect();
    assert!(names.contains(&&json!("rip")), "{registers}");
    let stack = tool(&mut server, "debug-stack", json!({}));
    assert_eq!(stack["totalFrames"], 2, "libc's start-up is not the program's: {stack}");
    assert_eq!(stack["frames"][1]["function"], "main", "{stack}");

    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(
        (state["state"].as_str(), state["reason"].as_str()),
        (Some("paused"), Some("step")),
        "{state}"
    );
    assert_eq!(state["location"]["line"], 16, "{state}");
    assert_eq!(local(&state, "next")["value"], 9.5, "{state}");

    let set = tool(&mut server, "debug-evaluate", json!({"set": "next", "expression": "100.5"}));
    assert_eq!((&set["type"], &set["value"]), (&json!("double"), &json!(100.5)), "{set}");

    let state = tool(&mut server, "debug-continue", json!({"step": "out"}));
    assert_eq!(state["location"]["function"], "main", "{state}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(local(&state, "sum")["value"], 100.5, "the set value was kept: {state}");
    tool(&mut server, "debug-continue", json!({"step": "over"}));
    let state = tool(&mut server, "debug-continue", json!({"step": "into"}));
    assert_eq!(state["location"]["function"], "add_order", "{state}");

    let removed = tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    assert!(removed.get("error").is_none(), "{removed}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!(state["exitCode"], 0, "{state}");
    let output = tool(&mut server, "debug-output", json!({}));
    assert!(output["stdout"].as_str().unwrap().contains("sum 125.75 after 3 orders\n"), "{output}");
    tool(&mut server, "debug-stop", json!({}));
}

/// Ruby's rdbg, declared in fixtures/native/ruby/debug-mcp.json (the README's example).
#[test]
fn a_configured_adapter_serves_debug_script_and_sessions() {
    if !need(Tool::Ruby) {
        return;
    }
    let mut server = Server::initialized();
    let dir = fixture("native/ruby");
    let file = fixture("native/ruby/orders.rb");
    let result = server.debug_script(json!({"command": "ruby orders.rb", "cwd": dir,
        "breakpoint": {"file": file, "line": 3}, "expression": "order[:total]"}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!(9.5), json!(20.25)], "{s}");
    assert_eq!(s["results"][0]["type"], "Float", "{s}");
    assert_eq!(s["exitCode"], 0, "{s}");
    assert_eq!(s["output"]["stdout"], "sum 29.75\n", "{s}");

    let breakpoints = json!([{"file": file, "line": 3}]);
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": "ruby orders.rb", "cwd": dir, "breakpoints": breakpoints}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["location"]["line"], 3, "{state}");
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "sum + 1"}));
    assert_eq!(value["value"], 1, "{value}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["location"]["line"], 3, "{state}");
    tool(&mut server, "debug-stop", json!({}));
}

#[test]
fn a_rust_session_reads_names_and_collections_as_written() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let file = fixture("native/rust/src/main.rs");
    let state = launch(&mut server, rust_orders(), &file, 13);
    assert_eq!(state["location"]["function"], "orders::total", "{state}");
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "order.customer"}));
    assert_eq!(value, json!({"type": "alloc::string::String", "value": "ada"}));
    let stack = tool(&mut server, "debug-stack", json!({}));
    let names: Vec<&Value> =
        stack["frames"].as_array().unwrap().iter().map(|f| &f["function"]).collect();
    assert_eq!(names, vec!["orders::total", "orders::main"], "{stack}");
    tool(&mut server, "debug-stop", json!({}));
}

/// `cargo run` and `cargo test`: cargo builds, lldb-dap runs what it built.
#[test]
fn cargo_run_and_cargo_test_debug_what_cargo_builds() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let dir = fixture("native/rust");
    let file = fixture("native/rust/src/main.rs");
    let target = out_dir().join("rust-cargo");
    let cargo = |verb: &str| format!("CARGO_TARGET_DIR={} cargo {verb} -q", target.display());
    let result = server.debug_script(json!({"command": cargo("run"), "cwd": dir,
        "breakpoint": {"file": file, "line": 13}, "expression": "*item", "timeout": 120000}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!(1), json!(2), json!(3)], "{s}");
    assert!(s["output"]["stdout"].as_str().unwrap().ends_with("grand total 42\n"), "{s}");

    let result = server.debug_script(json!({"command": cargo("test"), "cwd": dir,
        "breakpoint": {"file": file, "line": 13}, "expression": "*item", "timeout": 120000}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!(1), json!(2), json!(2)], "{s}");
    assert_eq!(s["exitCode"], 0, "{s}");
    let stdout = s["output"]["stdout"].as_str().unwrap();
    assert!(stdout.contains("test tests::totals_by_price ... ok\n"), "no terminal codes: {s}");
}

/// Watchpoints: `debug-set-breakpoint {"data": …}` stops where the value changes, with the
/// old and new value; adapters without data breakpoints say so.
#[test]
fn watchpoints_stop_where_a_value_changes() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let file = fixture("native/c/loop.c");
    let state = launch(&mut server, &format!("{} 3", c_loop()), &file, 24);
    assert_eq!(state["location"]["function"], "main", "{state}");
    let set = tool(&mut server, "debug-breakpoint", json!({"data": "sum"}));
    assert_eq!(set["verified"], true, "{set}");
    assert_eq!(set["value"], json!({"type": "double", "value": 0.0}), "{set}");
    let id = set["breakpointId"].as_str().unwrap().to_string();
    let removed = tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    assert!(removed.get("error").is_none(), "{removed}");

    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["reason"], "watchpoint", "{state}");
    assert_eq!(state["location"]["function"], "main", "{state}");
    assert_eq!(state["hitBreakpoints"], json!([id]), "{state}");
    let change = &state["watchpoints"][0];
    assert_eq!(change["expression"], "sum", "{state}");
    assert_eq!(change["old"]["value"], 0.0, "{state}");
    assert_eq!(change["new"]["value"], 9.5, "{state}");

    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["watchpoints"][0]["old"]["value"], 9.5, "{state}");
    assert_eq!(state["watchpoints"][0]["new"]["value"], 29.75, "{state}");
    let listed = tool(&mut server, "debug-breakpoint", json!({}));
    assert_eq!(listed["breakpoints"][0]["hits"], 2, "{listed}");
    assert_eq!(listed["breakpoints"][0]["data"], "sum", "{listed}");

    tool(&mut server, "debug-breakpoint", json!({"remove": id}));
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!(state["exitCode"], 0, "{state}");
    tool(&mut server, "debug-stop", json!({}));

    // Running: refused with what to do. Delve: no data breakpoints, said so.
    let dir = fixture("native/go");
    let breakpoints = json!([{"file": fixture("native/go/main.go"), "line": 16}]);
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": "go run .", "cwd": dir, "breakpoints": breakpoints, "timeout": 120000}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    let refused = tool(&mut server, "debug-breakpoint", json!({"data": "sum"}));
    assert_eq!(refused["code"], "unsupported", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("delve"), "{refused}");
    let refused = tool(&mut server, "debug-breakpoint", json!({"data": "sum", "line": 3}));
    assert_eq!(refused["code"], "invalid_arguments", "{refused}");
    tool(&mut server, "debug-stop", json!({}));
}

/// A core file of `crash` (fixtures/native/c/crash.c): the kernel's when it writes one in the
/// working directory, else lldb's own (`process save-core` as it crashes).
fn crash_core() -> (String, String) {
    let program = c_crash().to_string();
    let dir = out_dir().join("cores");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let _ = Command::new("sh")
        .args(["-c", &format!("ulimit -c unlimited; exec {program}")])
        .current_dir(&dir)
        .output();
    let kernel =
        std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).find(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("core"))
        });
    let core = kernel.unwrap_or_else(|| {
        let core = dir.join("core.lldb");
        let save = format!("process save-core {}", core.display());
        let lldb = Command::new("lldb-19")
            .args(["-b", "-o", "run", "-k", &save, "-k", "quit", "--", &program])
            .output()
            .unwrap();
        assert!(core.is_file(), "no core file: {}", String::from_utf8_lossy(&lldb.stderr));
        core
    });
    (core.display().to_string(), program)
}

#[test]
fn a_core_file_shows_the_crash() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let (core, program) = crash_core();
    let state = tool(&mut server, "debug-launch", json!({"core": core, "program": program}));
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["reason"], "exception", "{state}");
    assert_eq!(state["location"]["function"], "parse", "{state}");
    assert_eq!(state["location"]["line"], 11, "{state}");
    assert!(state["exception"]["message"].to_string().contains("SIGSEGV"), "{state}");
    assert_eq!(local(&state, "depth")["value"], 7, "{state}");
    // The null pointer it dereferenced. (Strings in the executable's read-only data are not
    // in a core file: lldb reads `c->name` as "".)
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "c->limit"}));
    assert_eq!(value, json!({"type": "int *", "value": null}), "{value}");
    eprintln!("VALUE {value}");
    let stack = tool(&mut server, "debug-stack", json!({}));
    let names: Vec<&Value> =
        stack["frames"].as_array().unwrap().iter().map(|f| &f["function"]).collect();
    assert_eq!(names, vec!["parse", "main"], "{stack}");
    tool(&mut server, "debug-stop", json!({}));

    let missing =
        tool(&mut server, "debug-launch", json!({"core": "no-such-core", "program": program}));
    assert_eq!(missing["code"], "file_not_found", "{missing}");
}

/// `debug-attach {"pid"}` to a running C program: lldb-dap attaches (no SIGUSR1, which would
/// end it), stops at a breakpoint, and at the end lets it run on.
#[test]
fn a_running_c_program_is_attached_by_pid_and_let_go() {
    if !need(Tool::Lldb) {
        return;
    }
    let program = build("gcc", "native/c/ticker.c", "ticker");
    let mut ticker =
        crate::Program::spawn(Command::new(&program).stdout(std::process::Stdio::null()));
    let pid = ticker.0.id();
    let mut server = Server::initialized();
    let breakpoints = json!([{"file": fixture("native/c/ticker.c"), "line": 8}]);
    let state = tool(&mut server, "debug-launch", json!({"pid": pid, "breakpoints": breakpoints}));
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["location"]["function"], "tick", "{state}");
    assert_eq!(state["attached"], json!({"pid": pid}), "{state}");
    let n = tool(&mut server, "debug-evaluate", json!({"expression": "n"}));
    assert!(n["value"].as_i64().is_some_and(|n| n > 0), "{n}");
    let set = tool(&mut server, "debug-breakpoint", json!({"data": "ticks"}));
    assert_eq!(set["verified"], true, "{set}");
    tool(&mut server, "debug-stop", json!({}));
    // Detached, watchpoint cleared first: it runs on.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(ticker.0.try_wait().unwrap().is_none(), "the attached program was ended");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let state = stat.rsplit(')').next().unwrap().split_whitespace().next().unwrap().to_string();
    assert!(state == "S" || state == "R", "left stopped ({state}): {stat}");
}

/// gdb's DAP mode (gdb 14 and newer: the venv's `gdb-for-pwndbg`, GDB 18), named by
/// `language`: debug-script, a session, a core file.
#[test]
fn gdb_serves_debug_script_sessions_and_core_files() {
    let bin = crate::need::gdb_bin();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut server = Server::initialized_with(&root(), &[("PATH", &path)]);
    let file = fixture("native/c/loop.c");
    let result = server.debug_script(json!({"command": format!("{} 3", c_loop()),
        "breakpoint": {"file": file, "line": 15}, "expression": "o->total", "language": "gdb"}));
    let s = ok(&result);
    assert_eq!(values(s), vec![json!(9.5), json!(20.25), json!(5.0)], "{s}");
    assert_eq!(
        s["output"]["stdout"], "sum 34.75 after 3 orders\n",
        "gdb's own lines left out: {s}"
    );

    let breakpoints = json!([{"file": file, "line": 15}]);
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": format!("{} 2", c_loop()), "breakpoints": breakpoints, "language": "gdb"}),
    );
    assert_eq!(state["location"]["function"], "add_order", "{state}");
    let value = tool(&mut server, "debug-evaluate", json!({"expression": "*o"}));
    assert_eq!(value["value"], json!({"id": 1, "total": 9.5, "customer": "ada"}), "{value}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(state["location"]["line"], 16, "{state}");
    tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    tool(&mut server, "debug-stop", json!({}));

    let (core, program) = crash_core();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"core": core, "program": program, "language": "gdb"}),
    );
    assert_eq!(state["location"]["function"], "parse", "{state}");
    assert_eq!(local(&state, "depth")["value"], 7, "{state}");
    tool(&mut server, "debug-stop", json!({}));
}

/// The names of a stack's frames.
fn functions(stack: &Value) -> Vec<String> {
    let frames = stack["frames"].as_array().unwrap_or_else(|| panic!("no frames: {stack}"));
    frames.iter().map(|f| f["function"].as_str().unwrap_or_default().to_string()).collect()
}

/// A C++ session through lldb-dap: breakpoint, stack, members by path, evaluate, step in, a
/// watchpoint, set a variable, step out and over, exit.
#[test]
fn a_cpp_session_steps_watches_and_sets() {
    if !need(Tool::Lldb) || !need(Tool::Cxx) {
        return;
    }
    let mut server = Server::initialized();
    let file = fixture("native/cpp/words.cpp");
    let state = launch(&mut server, cpp_words(), &file, 19);
    assert_eq!(state["location"]["function"], "main", "{state}");
    let words = tool(&mut server, "debug-variables", json!({"path": "words"}));
    let values: Vec<&Value> =
        words["variables"].as_array().unwrap().iter().map(|v| &v["value"]).collect();
    assert_eq!(values, vec!["a", "b", "a", "c"], "{words}");
    assert_eq!(tool(&mut server, "debug-evaluate", json!({"expression": "wanted"}))["value"], "a");

    let state = tool(&mut server, "debug-continue", json!({"step": "into"}));
    assert!(state["location"]["function"].as_str().unwrap().starts_with("count"), "{state}");
    let stack = tool(&mut server, "debug-stack", json!({}));
    assert_eq!(functions(&stack).len(), 2, "{stack}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(state["location"]["line"], 8, "{state}");
    let set = tool(&mut server, "debug-breakpoint", json!({"data": "found"}));
    let watch = set["breakpointId"].as_str().unwrap().to_string();
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["reason"], "watchpoint", "{state}");
    assert_eq!(state["watchpoints"][0]["old"]["value"], 0, "{state}");
    assert_eq!(state["watchpoints"][0]["new"]["value"], 1, "{state}");
    tool(&mut server, "debug-breakpoint", json!({"remove": watch}));
    let set = tool(&mut server, "debug-evaluate", json!({"set": "found", "expression": "5"}));
    assert_eq!(set["value"], 5, "{set}");

    let state = tool(&mut server, "debug-continue", json!({"step": "out"}));
    assert_eq!(state["location"]["function"], "main", "{state}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(local(&state, "n")["value"], 6, "{state}");
    tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!(state["exitCode"], 0, "{state}");
    assert_eq!(state["stdout"], "found 6\n", "{state}");
    tool(&mut server, "debug-stop", json!({}));
}

/// A Rust session through lldb-dap, with rustc's formatters: the same walk.
#[test]
fn a_rust_session_steps_watches_and_sets() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let file = fixture("native/rust/src/main.rs");
    let state = launch(&mut server, rust_orders(), &file, 26);
    assert_eq!(state["location"]["function"], "orders::main", "{state}");
    let order = tool(&mut server, "debug-variables", json!({"path": "*order"}));
    let customer = order["variables"].as_array().unwrap().iter().find(|v| v["name"] == "customer");
    assert_eq!(customer.unwrap()["value"], "ada", "{order}");

    let state = tool(&mut server, "debug-continue", json!({"step": "into"}));
    assert_eq!(state["location"]["function"], "orders::total", "{state}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(state["location"]["line"], 12, "{state}");
    let set = tool(&mut server, "debug-breakpoint", json!({"data": "sum"}));
    let watch = set["breakpointId"].as_str().unwrap().to_string();
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["reason"], "watchpoint", "{state}");
    assert_eq!(state["watchpoints"][0]["new"]["value"], 10, "{state}");
    tool(&mut server, "debug-breakpoint", json!({"remove": watch}));
    let set = tool(&mut server, "debug-evaluate", json!({"set": "sum", "expression": "100"}));
    assert_eq!(set["value"], 100, "{set}");

    let state = tool(&mut server, "debug-continue", json!({"step": "out"}));
    assert_eq!(state["location"]["function"], "orders::main", "{state}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(local(&state, "t")["value"], 125, "{state}");
    tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["exitCode"], 0, "{state}");
    assert!(state["stdout"].as_str().unwrap().starts_with("order 1 for ada: 125\n"), "{state}");
    tool(&mut server, "debug-stop", json!({}));
}

/// `go test` as written: a flag's value as the next word goes with the flag (`-run TestAdd`,
/// passed on to the test binary), not taken for the package; and a build Delve cannot make
/// fails in Delve's own words.
#[test]
fn go_test_flags_as_written_and_build_errors_in_delves_words() {
    if !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let dir = fixture("native/go");
    let file = fixture("native/go/main.go");
    for command in
        ["go test -run TestAdd -v .", "go test . -run=TestAdd -count 1", "go test -v -run TestAdd"]
    {
        let result = server.debug_script(json!({"command": command, "cwd": dir,
            "breakpoint": {"file": file, "line": 16}, "expression": "o.ID", "timeout": 120000}));
        let s = ok(&result);
        // Only TestAdd ran: its order, once.
        assert_eq!(values(s), vec![json!(9)], "{command}: {s}");
        let stdout = s["output"]["stdout"].as_str().unwrap();
        assert!(
            stdout.contains("--- PASS: TestAdd") == command.contains("-v"),
            "{command}: {stdout}"
        );
        assert!(!stdout.contains("TestOther"), "{command}: {stdout}");
    }
    let result = server.debug_script(json!({"command": "go test ./nothere", "cwd": dir,
        "breakpoint": {"file": file, "line": 16}, "expression": "o.ID", "timeout": 120000}));
    let e = err(&result);
    assert_eq!(e["code"], "launch_failed", "{e}");
    let message = e["error"].as_str().unwrap();
    assert!(message.starts_with("delve could not launch the program: "), "{message}");
    assert!(message.contains("Build Error: go test") && message.contains("nothere"), "{message}");
    // `./...` in a directory of one package: that package (it was refused).
    let result = server.debug_script(json!({"command": "go test ./...", "cwd": dir,
        "breakpoint": {"file": file, "line": 16}, "expression": "o.ID", "timeout": 120000}));
    let s = ok(&result);
    assert_eq!(values(s), [json!(9), json!(0)], "{s}");
    assert_eq!(s["processes"][0]["command"], "go test .", "{s}");
}

/// A Go session through Delve: goroutines as threads, steps, set a variable, run to a line,
/// exit. (Delve 1.20 answers a float64's setVariable, but the program keeps the old value:
/// an int is set here.)
#[test]
fn a_go_session_steps_and_sets() {
    if !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let dir = fixture("native/go");
    let file = fixture("native/go/main.go");
    let breakpoints = json!([{"file": file, "line": 24}]);
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": "go run .", "cwd": dir, "breakpoints": breakpoints, "timeout": 120000}),
    );
    assert_eq!(state["location"]["function"], "main.main", "{state}");
    let o = tool(&mut server, "debug-variables", json!({"path": "o"}));
    let total = o["variables"].as_array().unwrap().iter().find(|v| v["name"] == "Total");
    assert_eq!(total.unwrap()["value"], 9.5, "{o}");
    assert_eq!(
        tool(&mut server, "debug-evaluate", json!({"expression": "len(orders)"}))["value"],
        2
    );
    let threads = tool(&mut server, "debug-threads", json!({}));
    assert!(threads["threads"].as_array().unwrap().len() > 1, "goroutines: {threads}");

    let state = tool(&mut server, "debug-continue", json!({"step": "into"}));
    assert_eq!(state["location"]["function"], "main.add", "{state}");
    let stack = tool(&mut server, "debug-stack", json!({}));
    assert_eq!(functions(&stack), vec!["main.add", "main.main"], "Go's start-up left out: {stack}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(state["location"]["line"], 16, "{state}");
    let state = tool(&mut server, "debug-continue", json!({"step": "over"}));
    assert_eq!(state["location"]["line"], 17, "{state}");
    assert_eq!(local(&state, "next")["value"], 9.5, "{state}");
    let state = tool(&mut server, "debug-continue", json!({"step": "out"}));
    assert_eq!(state["location"]["function"], "main.main", "{state}");
    // An int, set where the loop starts its goroutines: one worker, 5.
    tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    let to = json!({"file": file, "line": 28});
    let state = tool(&mut server, "debug-continue", json!({"to": to}));
    assert_eq!(state["location"]["line"], 28, "{state}");
    let set = tool(&mut server, "debug-evaluate", json!({"set": "i", "expression": "5"}));
    assert_eq!(set["value"], 5, "{set}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!(state["exitCode"], 0, "{state}");
    assert_eq!(state["stdout"], "worker 5\nsum 29.75\n", "{state}");
    tool(&mut server, "debug-stop", json!({}));
}

/// Zig from PyPI's `ziglang` (in the test venv, installed on first use).
fn zig_orders() -> &'static str {
    static BUILT: OnceLock<String> = OnceLock::new();
    BUILT.get_or_init(|| {
        let python = crate::need::zig_python();
        let out = out_dir().join("zig-orders");
        let status = Command::new(&python)
            .args(["-m", "ziglang", "build-exe", "-O", "Debug"])
            .arg(format!("-femit-bin={}", out.display()))
            .arg(fixture("native/zig/orders.zig"))
            .current_dir(out_dir())
            .status()
            .unwrap();
        assert!(status.success(), "building the Zig fixture");
        out.display().to_string()
    })
}

/// lldb 19 stops, steps and walks the stack of a Zig program, but has no type system for Zig:
/// values come back as lldb's own error, said per hit.
#[test]
fn zig_stops_and_steps_without_values() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let file = fixture("native/zig/orders.zig");
    let state = launch(&mut server, zig_orders(), &file, 7);
    assert_eq!(state["reason"], "breakpoint", "{state}");
    assert_eq!(state["location"]["function"], "orders.addOrder", "{state}");
    assert_eq!(state["location"]["line"], 7, "{state}");
    let stack = tool(&mut server, "debug-stack", json!({}));
    assert_eq!(
        functions(&stack),
        vec!["orders.addOrder", "orders.main"],
        "Zig's start-up is not the program's: {stack}"
    );
    let state = tool(&mut server, "debug-continue", json!({"step": "out"}));
    assert_eq!(state["location"]["function"], "orders.main", "{state}");
    tool(&mut server, "debug-stop", json!({}));

    let result = server.debug_script(json!({"command": zig_orders(),
        "breakpoint": {"file": file, "line": 7}, "expression": "next"}));
    let s = ok(&result);
    assert_eq!(s["results"].as_array().unwrap().len(), 2, "{s}");
    assert_eq!(s["results"][0]["type"], "error", "{s}");
    let said = s["results"][0]["value"].as_str().unwrap();
    assert!(said.contains("TypeSystem for language zig doesn't exist"), "{s}");
    // std.debug.print writes to stderr.
    assert_eq!(s["output"]["stderr"], "sum 29.75\n", "{s}");
}

/// `failures: true` for compiled programs: a Go test's `t.Errorf` and a panic in the code under
/// test, a failing `cargo test` (its panic), a C program's crash; each with the program's own
/// frames and their locals.
#[test]
fn failures_of_go_tests_rust_panics_and_c_crashes() {
    if !need(Tool::Lldb) || !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let failures = |server: &mut Server, arguments: Value| {
        let result = server.debug_script(arguments);
        let s = ok(&result).clone();
        assert_ne!(s["exitCode"], 0, "{s}");
        s["failures"].as_array().unwrap().clone()
    };

    let go = fixture("native/go-failing");
    let found = failures(
        &mut server,
        json!({"command": "go test .", "cwd": go, "failures": true, "timeout": 120000}),
    );
    assert_eq!(found.len(), 3, "{found:?}");
    let errorf = &found[0];
    assert_eq!(
        (&errorf["kind"], &errorf["test"]),
        (&json!("test"), &json!("TestTotal")),
        "{errorf}"
    );
    assert_eq!(errorf["message"], "Total = 7.2, want 8", "{errorf}");
    assert!(errorf["process"].is_u64(), "the test binary's pid: {errorf}");
    let frame = &errorf["frames"][0];
    assert_eq!(
        (&frame["file"], &frame["line"]),
        (&json!(format!("{go}/calc_test.go")), &json!(10))
    );
    assert_eq!(frame["locals"]["got"], "7.2", "{errorf}");
    // t.Fatalf: its FailNow calls Fail (it was taken for a subtest marking its parent).
    let fatalf = &found[1];
    assert_eq!(
        (&fatalf["test"], &fatalf["message"]),
        (&json!("TestDouble"), &json!("Total = 3.6, want 5"))
    );
    assert_eq!((&fatalf["type"], &fatalf["frames"][0]["line"]), (&json!("t.Fatal"), &json!(17)));
    let panic = &found[2];
    assert_eq!((&panic["kind"], &panic["test"]), (&json!("panic"), &json!("TestShort")), "{panic}");
    assert!(panic["message"].as_str().unwrap().contains("index out of range [1]"), "{panic}");
    let frame = &panic["frames"][0];
    assert_eq!(
        (&frame["function"], &frame["line"]),
        (&json!("example.com/gofailing.Total"), &json!(7))
    );
    assert_eq!(frame["locals"]["i"], "1", "{panic}");

    let rust = fixture("native/rust-failing");
    let target = out_dir().join("rust-failing");
    let command = format!("CARGO_TARGET_DIR={} cargo test -q", target.display());
    let found = failures(
        &mut server,
        json!({"command": command, "cwd": rust, "failures": true, "timeout": 120000}),
    );
    assert_eq!(found.len(), 1, "{found:?}");
    let panic = &found[0];
    assert_eq!(
        (&panic["kind"], &panic["test"]),
        (&json!("panic"), &json!("tests::totals")),
        "{panic}"
    );
    assert!(panic["message"].as_str().unwrap().starts_with("assertion `left == right` failed"));
    let frame = &panic["frames"][0];
    assert_eq!(
        (&frame["function"], &frame["line"]),
        (&json!("rust_failing::tests::totals"), &json!(18))
    );
    assert!(frame["locals"]["got"].as_str().unwrap().starts_with("7.2"), "{panic}");

    let crash = c_crash();
    let found = failures(&mut server, json!({"command": crash, "failures": true}));
    assert_eq!(found.len(), 1, "{found:?}");
    let signal = &found[0];
    assert_eq!(
        (&signal["kind"], &signal["type"]),
        (&json!("signal"), &json!("SIGSEGV")),
        "{signal}"
    );
    let frames = signal["frames"].as_array().unwrap();
    assert_eq!((&frames[0]["function"], &frames[0]["line"]), (&json!("parse"), &json!(11)));
    assert_eq!(frames[1]["function"], "main", "{signal}");

    // C++: an uncaught exception aborts; the frames listed are the program's, not glibc's or
    // libstdc++'s (whose sources lldb names by relative paths).
    let abort = build("g++", "native/cpp/abort.cpp", "abort");
    let found = failures(&mut server, json!({"command": abort, "failures": true}));
    assert_eq!(found.len(), 1, "{found:?}");
    let signal = &found[0];
    assert_eq!(signal["type"], "SIGABRT", "{signal}");
    let frames = signal["frames"].as_array().unwrap();
    assert!(frames[0]["function"].as_str().unwrap().starts_with("pick("), "{signal}");
    assert_eq!(
        (&frames[0]["line"], &frames[0]["locals"]["i"]),
        (&json!(6), &json!("3")),
        "{signal}"
    );
    assert_eq!(frames[1]["function"], "main", "{signal}");
}

/// `probes` through debug adapters: C (lldb-dap) and a Go test (Delve), results in execution
/// order with their probe's index, the locals where a probe has no expression.
#[test]
fn probes_in_c_and_go_answer_in_execution_order() {
    if !need(Tool::Lldb) || !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let file = fixture("native/c/loop.c");
    let result = server.debug_script(json!({"command": format!("{} 2", c_loop()),
        "probes": [{"file": file, "line": 15, "expression": "o->total"}, {"file": file, "line": 24}]}));
    let s = ok(&result);
    let results = s["results"].as_array().unwrap();
    let order: Vec<&Value> = results.iter().map(|r| &r["probe"]).collect();
    assert_eq!(order, [&json!(1), &json!(0), &json!(1), &json!(0)], "{s}");
    assert_eq!(results[0]["locals"]["i"], "0", "{s}");
    assert_eq!(results[1]["value"], 9.5, "{s}");
    assert_eq!(results[2]["locals"]["sum"], "9.5", "{s}");
    assert_eq!(results[3]["value"], 20.25, "{s}");
    assert_eq!(s["probes"][1]["resolvedLine"], 24, "{s}");

    let go = fixture("native/go-failing");
    let result = server.debug_script(json!({"command": "go test -run TestTotal .", "cwd": go,
        "probes": [{"file": "calc.go", "line": 7}, {"file": "calc_test.go", "line": 9, "expression": "got"}],
        "timeout": 120000}));
    let s = ok(&result);
    let results = s["results"].as_array().unwrap();
    let order: Vec<&Value> = results.iter().map(|r| &r["probe"]).collect();
    assert_eq!(order, [&json!(0), &json!(0), &json!(1)], "{s}");
    assert_eq!(results[1]["locals"]["sum"], "2", "{s}");
    assert_eq!(
        (&results[2]["type"], &results[2]["value"]),
        (&json!("float64"), &json!(7.2)),
        "{s}"
    );
}

/// A Go failure's message is the text the test gave `t.Errorf`, once, as UTF-8: not the test's
/// whole log (each later failure of a test carried every earlier one), not Delve's escapes of
/// a character cut between the 64-byte slices it reads, nor its quotes escaped again.
#[test]
fn go_failure_messages_are_what_the_test_wrote() {
    if !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": "go test .",
        "cwd": fixture("native/go-suite/text"), "failures": true, "timeout": 120000}));
    let s = ok(&result);
    let found: Vec<(&Value, &Value)> =
        s["failures"].as_array().unwrap().iter().map(|f| (&f["test"], &f["message"])).collect();
    assert_eq!(
        found,
        [
            (
                &json!("TestGreet"),
                &json!(
                    r#"Greet("世界") = "こんにちは、\"世界\"さん", want "こんにちは、世界さん""#
                )
            ),
            (&json!("TestGreet"), &json!(r#"len(Greet("世界")) = 32, want 30: さようなら"#)),
            (&json!("TestLines"), &json!("first line\nsecond line: え")),
        ],
        "{s}"
    );
}

/// The notes of a result (its text blocks before the structured content).
pub fn notes(result: &Value) -> Vec<String> {
    let content = result["content"].as_array().unwrap();
    content[..content.len() - 1].iter().map(|c| c["text"].as_str().unwrap().to_string()).collect()
}

/// `go test ./...` as typed: each package's tests under Delve in turn, one answer with every
/// process and every failure (it was refused: "Delve debugs one package at a time"); with a
/// breakpoint, the packages that cannot reach its file are not run, and said.
#[test]
fn go_test_of_every_package() {
    if !need(Tool::Delve) {
        return;
    }
    let mut server = Server::initialized();
    let dir = fixture("native/go-suite");
    let result = server.debug_script(json!({"command": "go test ./...", "cwd": dir,
        "failures": true, "maxFailures": 10, "timeout": 120000}));
    let s = ok(&result);
    let commands: Vec<&Value> =
        s["processes"].as_array().unwrap().iter().map(|p| &p["command"]).collect();
    // util has no tests: `go test` runs nothing there either.
    assert_eq!(commands, [&json!("go test ."), &json!("go test ./text")], "{s}");
    let found: Vec<(&Value, &Value)> =
        s["failures"].as_array().unwrap().iter().map(|f| (&f["test"], &f["process"])).collect();
    let (calc, text) = (&s["processes"][0]["pid"], &s["processes"][1]["pid"]);
    assert_eq!(
        found,
        [
            (&json!("TestTotal"), calc),
            (&json!("TestGreet"), text),
            (&json!("TestGreet"), text),
            (&json!("TestLines"), text)
        ],
        "{s}"
    );
    assert_eq!(s["exitCode"], 1, "{s}");

    // A breakpoint in util/: the packages whose tests link util run (calc's), text's not.
    let result = server.debug_script(json!({"command": "go test ./...", "cwd": dir,
        "breakpoint": {"file": "util/util.go", "line": 8}, "expression": "x", "timeout": 120000}));
    let s = ok(&result);
    assert_eq!(values(s), [json!(7.2), json!(0.0)], "{s}");
    assert_eq!(s["processes"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s["processes"][0]["command"], "go test .", "{s}");
    assert!(
        notes(&result)
            .iter()
            .any(|n| n.starts_with("Not run: `go test ./text` (no code of theirs can reach")),
        "{:?}",
        notes(&result)
    );
}

/// `cargo test` as typed, in a crate with integration tests (several test programs): each
/// test program under lldb-dap in turn (it was refused); stopped after the first that fails,
/// as cargo does, or all with `--no-fail-fast`. Two tests failing at once in one program's
/// threads (the default) are both recorded, with their whole names.
#[test]
fn cargo_test_of_every_test_program() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let dir = fixture("native/rust-suite");
    let target = out_dir().join("rust-suite");
    let cargo = format!("CARGO_TARGET_DIR={} cargo test", target.display());
    // Sorted: tests failing at once in a program's threads are recorded as they come.
    let failures = |s: &Value| -> Vec<(String, String)> {
        let failures = s["failures"].as_array().unwrap().iter();
        let mut failures: Vec<(String, String)> = failures
            .map(|f| {
                (
                    f["test"].as_str().unwrap().into(),
                    f["frames"][0]["function"].as_str().unwrap().into(),
                )
            })
            .collect();
        failures.sort();
        failures
    };
    let result = server.debug_script(json!({"command": cargo, "cwd": dir, "failures": true,
        "maxFailures": 10, "timeout": 120000}));
    let s = ok(&result);
    let lib = [
        ("tests::bumps_minor".to_string(), "versions::tests::bumps_minor".to_string()),
        (
            "tests::bumps_minor_of_a_release".into(),
            "versions::tests::bumps_minor_of_a_release".into(),
        ),
        ("tests::sums_patches".into(), "versions::tests::sums_patches".into()),
    ];
    assert_eq!(failures(s), lib, "{s}");
    assert_eq!(s["processes"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s["processes"][0]["command"], "cargo test --lib", "{s}");
    let said = notes(&result);
    assert!(said.iter().any(|n| n.starts_with("Not run: `cargo test --test api` (cargo test stops at the first test program that fails")), "{said:?}");
    assert!(said.iter().any(|n| n.starts_with("Not run: the doc tests")), "{said:?}");

    let result = server.debug_script(json!({"command": format!("{cargo} --no-fail-fast"),
        "cwd": dir, "failures": true, "maxFailures": 10, "timeout": 120000}));
    let s = ok(&result);
    let mut all = lib.to_vec();
    all.push(("bumping_twice".into(), "api::bumping_twice".into()));
    all.sort();
    assert_eq!(failures(s), all, "{s}");
    let commands: Vec<&Value> =
        s["processes"].as_array().unwrap().iter().map(|p| &p["command"]).collect();
    assert_eq!(
        commands,
        [
            &json!("cargo test --lib"),
            &json!("cargo test --test api"),
            &json!("cargo test --test errors")
        ],
        "{s}"
    );

    // Two test threads at one probe at once: both read, at the stop (lldb-dap reports the
    // second thread's stop apart; read after the program went on, its locals were empty).
    let result = server.debug_script(json!({"command": format!("{cargo} --lib"), "cwd": dir,
        "timeout": 120000, "probes": [{"file": "src/lib.rs", "line": 40}]}));
    let s = ok(&result);
    let mut seen: Vec<&str> = s["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["locals"]["version"].as_str().unwrap_or_else(|| panic!("{s}")))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            r#"Version {major: 1, minor: 0, patch: 4, pre: None}"#,
            r#"Version {major: 1, minor: 2, patch: 3, pre: Some("beta")}"#
        ],
        "{s}"
    );

    // A probe in an integration test's own file: only that test program runs.
    let result = server.debug_script(json!({"command": cargo, "cwd": dir, "timeout": 120000,
        "probes": [{"file": "tests/api.rs", "line": 7, "expression": "name"}]}));
    let s = ok(&result);
    assert_eq!(s["processes"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s["processes"][0]["command"], "cargo test --test api", "{s}");
    assert_eq!(s["results"][0]["probe"], 0, "{s}");
}

/// Values, not addresses: a Rust failure's locals show a reference's or a `Box`'s pointee, a
/// structure's fields, a `Vec`'s and an array's items, a `Result` as the variant it is (lldb 19
/// with rustc's formatters read `Ok(7)` as `Err("")`, and a garbage length hung lldb-dap);
/// a C++ session's locals a `std::string`'s text, containers' items and smart pointers'
/// pointees. They read `Version @ 0x7ffff7baf4a8` and `0x00007ffff7baf538`.
#[test]
fn values_not_addresses_in_failures_and_sessions() {
    if !need(Tool::Lldb) || !need(Tool::Cxx) {
        return;
    }
    let mut server = Server::initialized();
    let target = out_dir().join("rust-suite");
    let cargo = format!("CARGO_TARGET_DIR={} cargo test --lib", target.display());
    let result = server.debug_script(json!({"command": cargo, "cwd": fixture("native/rust-suite"),
        "failures": true, "maxFailures": 10, "timeout": 120000}));
    let s = ok(&result);
    let locals = |test: &str| -> Value {
        let failure = s["failures"].as_array().unwrap().iter().find(|f| f["test"] == test);
        failure.unwrap_or_else(|| panic!("no failure of {test}: {s}"))["frames"][0]["locals"]
            .clone()
    };
    let bumps = locals("tests::bumps_minor");
    assert_eq!(bumps["version"], r#"Version {major: 1, minor: 2, patch: 3, pre: Some("beta")}"#);
    assert_eq!(bumps["left_val"], "Version {major: 1, minor: 3, patch: 3, pre: None}");
    let sums = locals("tests::sums_patches");
    assert_eq!(sums["boxed"], "Version {major: 1, minor: 0, patch: 1, pre: None}", "{sums}");
    assert_eq!(sums["checked"], "Ok(7)", "{sums}");
    assert_eq!(sums["names"], r#"["a", "b"]"#, "{sums}");
    let versions = sums["versions"].as_str().unwrap();
    let first_two =
        "[Version {major: 1, minor: 0, patch: 1, pre: None}, Version {major: 1, minor: 1";
    assert!(versions.starts_with(first_two), "{versions}");

    let program = build("g++", "native/cpp/values.cpp", "values");
    let state = launch(&mut server, &program, &fixture("native/cpp/values.cpp"), 17);
    assert_eq!(state["state"], "paused", "{state}");
    for (name, value) in [
        ("name", "widget"),
        ("nums", "[1, 2, 3]"),
        ("counts", r#"{"a": 1, "b": 2}"#),
        ("unique", r#"Point {x: 1, y: 2, label: "u"}"#),
        ("shared", r#"Point {x: 3, y: 4, label: "s"}"#),
        ("point", r#"Point {x: 5, y: 6, label: "p"}"#),
        ("raw", r#"Point {x: 5, y: 6, label: "p"}"#),
        ("points", r#"[Point {x: 5, y: 6, label: "p"}, Point {x: 5, y: 6, label: "p"}]"#),
    ] {
        assert_eq!(local(&state, name)["value"], value, "{name}: {state}");
    }
    tool(&mut server, "debug-stop", json!({}));
}
