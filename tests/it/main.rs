//! Integration tests: the real `debug-mcp-server` binary, spoken to over stdio as an MCP client would,
//! debugging real `node` processes on the programs in `fixtures/`.
//!
//! Every receive has a deadline, so a bug fails a test instead of hanging CI. Each debuggee is
//! started with a unique `DMCP_TAG=...` in its environment, which its children inherit, so a
//! test can check afterwards that no process of its own is left (see [`assert_no_debuggee`]).
#![allow(clippy::unwrap_used)]

mod browser;
mod budget;
mod c;
mod calls;
mod children;
mod cli;
mod confined;
mod defects;
mod deno;
mod docs;
mod doors;
mod elsewhere;
mod failures;
mod faults;
mod go;
mod hang;
mod hits;
mod http;
mod java;
mod javasession;
mod launchers;
mod lean;
mod native;
pub mod need;
mod protocol;
mod pysession;
mod python;
mod rust;
mod schema;
mod scratch;
mod script;
mod session;
mod shapes;
mod soak;
mod sourcemaps;
mod unhandled;
mod values;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The longest any single answer may take in a test before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(60);

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(name: &str) -> String {
    root().join("fixtures").join(name).display().to_string()
}

/// A unique tag for one test's debuggees.
pub fn tag() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("t{}x{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// A TCP port nothing listens on at the moment (the OS's pick, released at once).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `DMCP_TAG=<tag> node <fixture> <args>`, quoted for the tool's shell-like splitting.
pub fn node(tag: &str, fixture_name: &str, args: &str) -> String {
    format!("DMCP_TAG={tag} node '{}' {args}", fixture(fixture_name))
}

/// Pids of live processes whose environment carries `DMCP_TAG=<tag>`.
pub fn processes_with_tag(tag: &str) -> Vec<u32> {
    let needle = format!("DMCP_TAG={tag}\0");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        if status.contains("State:\tZ") {
            continue; // a zombie is dead; its parent (or init) reaps it
        }
        if environ.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// Fails unless every process tagged `tag` is gone (within a second, for the kernel to finish).
pub fn assert_no_debuggee(tag: &str) {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let left = processes_with_tag(tag);
        if left.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            panic!("debuggee processes left behind for tag {tag}: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A program started outside the server, in its own process group; the group is killed
/// when dropped, even by a failing test.
pub struct Program(pub Child);

impl Program {
    pub fn spawn(command: &mut Command) -> Program {
        use std::os::unix::process::CommandExt;
        Program(command.stdin(Stdio::null()).process_group(0).spawn().unwrap())
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `f` holds, polling, or fails after `timeout`. For observing other processes,
/// where there is no event to wait on.
pub fn eventually(timeout: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The server under test, spoken to over its stdin and stdout.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: i64,
    /// Notifications received while waiting for responses, in order.
    pub notifications: Vec<Value>,
    /// The tool each `tools/call` in flight names, by request id: its answer is checked
    /// against that tool's output schema when it arrives, whoever reads it.
    /// The `tools/call` requests under way, by id: the tool's name and its arguments.
    calls: std::collections::HashMap<Value, (String, Value)>,
}

impl Server {
    /// Starts the server with the environment official clients give it (a few variables:
    /// HOME, LOGNAME, PATH, SHELL, TERM, USER).
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    pub fn start_with(env: &[(&str, &str)]) -> Server {
        Server::start_in(&root(), env)
    }

    /// Starts the server with `dir` as its working directory (where agents' clients start it:
    /// the project).
    pub fn start_in(dir: &std::path::Path, env: &[(&str, &str)]) -> Server {
        Server::start_set_up(dir, env, |_| {})
    }

    /// [`Server::start_in`], its command given to `set_up` first (to run it elsewhere).
    pub fn start_set_up(
        dir: &std::path::Path,
        env: &[(&str, &str)],
        set_up: impl FnOnce(&mut Command),
    ) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"));
        set_up(&mut command);
        command
            .current_dir(dir)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // DEBUG_MCP_PYTHON_DEBUGGER=debugpy: .ci/run runs the Python session tests through debugpy too.
        let keys = [
            "HOME",
            "LOGNAME",
            "PATH",
            "SHELL",
            "TERM",
            "USER",
            "DEBUG_MCP_LOG",
            "DEBUG_MCP_PYTHON_DEBUGGER",
        ];
        for key in keys {
            if let Ok(value) = std::env::var(key) {
                command.env(key, value);
            }
        }
        command.envs(env.iter().copied());
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            child,
            stdin,
            lines,
            next_id: 1,
            notifications: Vec::new(),
            calls: Default::default(),
        }
    }

    /// Starts and completes the handshake.
    pub fn initialized() -> Server {
        Server::initialized_in(&root())
    }

    pub fn initialized_in(dir: &std::path::Path) -> Server {
        Server::initialized_with(dir, &[])
    }

    pub fn initialized_with(dir: &std::path::Path, env: &[(&str, &str)]) -> Server {
        let mut server = Server::start_in(dir, env);
        let result = server.request(
            "initialize",
            json!({
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "it", "version": "0"}}),
        );
        assert_eq!(result["result"]["protocolVersion"], "2025-11-25");
        server.notify("notifications/initialized", json!({}));
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send_raw(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, message: &Value) {
        if message["method"] == "tools/call" && !message["id"].is_null() {
            let name = message["params"]["name"].as_str().unwrap_or_default().to_string();
            let arguments = message["params"]["arguments"].clone();
            self.calls.insert(message["id"].clone(), (name, arguments));
        }
        self.send_raw(message.to_string().as_bytes());
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request with a fresh integer id and returns the id.
    pub fn start_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next line from the server as JSON, or `None` after `timeout`.
    pub fn recv_within(&mut self, timeout: Duration) -> Option<Value> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => {
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("bad JSON from server ({e}): {line}"));
                self.check_answer(&message);
                Some(message)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// A tool's answer (a response to a `tools/call` this client sent): its shape, and its
    /// structured content against the tool's output schema.
    fn check_answer(&mut self, message: &Value) {
        if message.get("method").is_some() {
            return;
        }
        let Some((name, arguments)) = message.get("id").and_then(|id| self.calls.remove(id)) else {
            return;
        };
        let Some(mut result) = message.get("result") else { return };
        // A task's answer is a handle now and the tool's answer later (`tasks/get`), checked
        // by the test that reads it.
        if result["resultType"] == "task" {
            return;
        }
        if let Some(answer) = result.get("result").filter(|_| result.get("taskId").is_some()) {
            result = answer;
        }
        check_result_shape(result);
        if let Some(structured) = result.get("structuredContent") {
            schema::check(&name, structured);
        }
        budget::check(&name, &arguments, result);
    }

    /// The next line from the server as it was written.
    pub fn recv_line(&mut self) -> String {
        self.lines.recv_timeout(DEADLINE).expect("no line from the server within the deadline")
    }

    pub fn recv(&mut self) -> Value {
        self.recv_within(DEADLINE).expect("no message from the server within the deadline")
    }

    /// Waits for the response to `id`, keeping notifications that arrive first.
    pub fn response(&mut self, id: &Value) -> Value {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.recv_within(left).unwrap_or_else(|| panic!("no response to {id}"));
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return message;
            }
            assert!(message.get("id").is_none(), "response to another request: {message}");
            self.notifications.push(message);
        }
    }

    /// The response to `id` if it has come (notifications before it are kept), without waiting.
    pub fn try_response(&mut self, id: &Value) -> Option<Value> {
        while let Some(message) = self.recv_within(Duration::ZERO) {
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return Some(message);
            }
            assert!(message.get("id").is_none(), "response to another request: {message}");
            self.notifications.push(message);
        }
        None
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start_request(method, params);
        self.response(&json!(id))
    }

    /// Calls a tool and returns its `result` (failing on a JSON-RPC error).
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert!(response.get("error").is_none(), "JSON-RPC error: {response}");
        response["result"].clone()
    }

    pub fn debug_script(&mut self, arguments: Value) -> Value {
        let result = self.call("debug-script", arguments);
        if result["isError"] != true {
            assert!(result["structuredContent"]["results"].is_array(), "{result}");
        }
        result
    }

    /// Closes stdin and waits for the exit.
    pub fn close(&mut self) -> (ExitStatus, Duration) {
        let start = Instant::now();
        self.stdin.take();
        (self.wait_exit(), start.elapsed())
    }

    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not exit");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    /// Ends the server as clients do, by closing its stdin, so that it removes its scratch
    /// directory; kills it only if it does not exit in time (a failing test).
    fn drop(&mut self) {
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every tool result: `content` with text blocks, the structured content repeated as the last
/// text block, and errors carrying `error` and `code`.
pub fn check_result_shape(result: &Value) {
    let content = result["content"].as_array().unwrap_or_else(|| panic!("no content: {result}"));
    let last = content.last().unwrap();
    assert_eq!(last["type"], "text");
    let repeated: Value = serde_json::from_str(last["text"].as_str().unwrap()).unwrap();
    assert_eq!(repeated, result["structuredContent"]);
    if result["isError"] == true {
        assert!(result["structuredContent"]["error"].is_string(), "{result}");
        assert!(result["structuredContent"]["code"].is_string(), "{result}");
        // The message once: in the one text block, which is the structured content.
        assert_eq!(content.len(), 1, "{result}");
    }
}

/// The structured content of a result, after checking it is not an error.
pub fn ok(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "tool error: {result}");
    &result["structuredContent"]
}

/// The structured content of an error result.
pub fn err(result: &Value) -> &Value {
    assert_eq!(result["isError"], true, "expected a tool error: {result}");
    &result["structuredContent"]
}

/// The hits of a run in one process, checked to carry no `pid` (the one process in
/// `processes` says where they ran), to compare them whole.
pub fn plain_results(structured: &Value) -> Value {
    let processes = structured["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 1, "{structured}");
    let results = structured["results"].clone();
    for hit in results.as_array().unwrap() {
        assert!(hit.get("pid").is_none() && hit.get("thread").is_none(), "{structured}");
    }
    results
}

/// The values of the results, without their types.
pub fn values(structured: &Value) -> Vec<Value> {
    structured["results"].as_array().unwrap().iter().map(|r| r["value"].clone()).collect()
}

/// Runs one debug-script call on a fresh server and checks that nothing it started (found by
/// the command's `DMCP_TAG=`) is left running.
pub fn run_script(arguments: Value) -> Value {
    let tag = arguments["command"]
        .as_str()
        .and_then(|c| c.strip_prefix("DMCP_TAG="))
        .map(|c| c.split(' ').next().unwrap().to_string());
    let mut server = Server::initialized();
    let result = server.debug_script(arguments);
    if let Some(tag) = tag {
        assert_no_debuggee(&tag);
    }
    result
}

/// debug-launch with one breakpoint; the first state.
pub fn launch(server: &mut Server, command: &str, file: &str, line: u64) -> Value {
    let breakpoints = json!([{"file": file, "line": line}]);
    tool(server, "debug-launch", json!({"command": command, "breakpoints": breakpoints}))
}

/// A local variable of a stop state.
pub fn local<'a>(state: &'a Value, name: &str) -> &'a Value {
    state["locals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no local {name} in {state}"))
}

/// Calls a session tool and returns its structured content, whether it succeeded or not.
pub fn tool(server: &mut Server, name: &str, arguments: Value) -> Value {
    server.call(name, arguments)["structuredContent"].clone()
}
