//! The main loop in process, over in-memory channels (lsp-server's `Connection::memory()`
//! habit): the handshake, answers while a call runs, cancellation, a reused request id, and
//! the end at EOF. The tool calls run the real `node` on a fixture.

use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Value};

use super::{serve, Connection};
use crate::jsonrpc::{self, Message};
use crate::stdio::Incoming;
use crate::thread::JoinOnDrop;

/// Every wait in these tests ends by this.
const PATIENCE: Duration = Duration::from_secs(20);

struct Server {
    to_server: Option<Sender<Incoming>>,
    from_server: Receiver<Message>,
    /// The loop's thread, joined on drop.
    thread: Option<JoinOnDrop>,
    _signals: Sender<i32>,
}

impl Server {
    fn start() -> Server {
        let (to_server, incoming) = crossbeam_channel::unbounded();
        let (out, from_server) = crossbeam_channel::unbounded();
        let (signals, signal_rx) = crossbeam_channel::bounded(1);
        let thread = JoinOnDrop::spawn("test-server", move || {
            let quota = crate::quota::Quota::new(usize::MAX, 10);
            serve(Connection { incoming, out }, &quota, &signal_rx);
        });
        Server { to_server: Some(to_server), from_server, thread: Some(thread), _signals: signals }
    }

    /// Sends one line, as a client would write it.
    fn send(&self, line: Value) {
        let message = jsonrpc::parse(line.to_string().as_bytes());
        self.to_server.as_ref().unwrap().send(message).unwrap();
    }

    /// The next message the server sends that has an `id` (a response), as JSON.
    fn response(&self) -> Value {
        loop {
            let message = self.from_server.recv_timeout(PATIENCE).expect("a response in time");
            let json: Value = serde_json::from_str(&message.to_line()).unwrap();
            if json.get("id").is_some() {
                return json;
            }
        }
    }

    fn call(&self, id: u64, name: &str, arguments: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": name, "arguments": arguments}}));
    }

    fn initialize(&self) {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}}}));
        assert_eq!(self.response()["result"]["serverInfo"]["name"], "debug-mcp");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }
}

fn fixture(name: &str) -> String {
    format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_handshake_tools_and_a_bad_line_are_answered() {
    let server = Server::start();
    server.initialize();
    server.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let tools = server.response();
    assert!(tools["result"]["tools"].as_array().unwrap().len() > 10, "{tools}");
    let bad = jsonrpc::parse(b"{not json");
    server.to_server.as_ref().unwrap().send(bad).unwrap();
    let error = server.response();
    assert_eq!(error["error"]["code"], jsonrpc::PARSE_ERROR);
    assert_eq!(error["id"], Value::Null);
    server.call(2, "debug-sessions", json!({}));
    assert_eq!(server.response()["result"]["structuredContent"], json!({"sessions": []}));
}

#[test]
fn a_running_call_leaves_the_loop_free_and_a_cancelled_one_gets_no_answer() {
    let server = Server::start();
    server.initialize();
    // hang.js never ends: the call runs until its 60 s timeout unless cancelled.
    let hang = fixture("hang.js");
    server.call(
        7,
        "debug-script",
        json!({"command": format!("node {hang}"), "breakpoint": {"file": hang, "line": 1},
               "expression": "1", "timeout": 60000}),
    );
    // The same id again, while the first is in flight: refused.
    server.call(7, "debug-sessions", json!({}));
    let reused = server.response();
    assert_eq!(reused["id"], 7);
    assert_eq!(reused["error"]["code"], jsonrpc::INVALID_REQUEST, "{reused}");
    server.send(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}));
    assert_eq!(server.response(), json!({"jsonrpc": "2.0", "id": 8, "result": {}}));
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 7}}));
    server.send(json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}));
    // The next response is the ping's: the cancelled call never answers.
    assert_eq!(server.response()["id"], 9);
}

#[test]
fn end_of_input_ends_calls_and_sessions_and_closes_the_output() {
    let mut server = Server::start();
    server.initialize();
    let count = fixture("count.js");
    server.call(
        1,
        "debug-launch",
        json!({"command": format!("node {count} 5"),
        "breakpoints": [{"file": count, "line": 5}]}),
    );
    let launched = server.response();
    assert_eq!(launched["result"]["structuredContent"]["state"], "paused", "{launched}");
    let hang = fixture("hang.js");
    server.call(
        2,
        "debug-script",
        json!({"command": format!("node {hang}"), "breakpoint": {"file": hang, "line": 1},
               "expression": "1", "timeout": 60000}),
    );
    drop(server.to_server.take());
    drop(server.thread.take());
    // The loop has returned: its output is closed, and no answer to the cancelled call came.
    loop {
        match server.from_server.recv_timeout(PATIENCE) {
            Ok(message) => {
                assert!(!message.to_line().contains("\"id\":2"), "{}", message.to_line())
            }
            Err(e) => {
                assert!(e.is_disconnected(), "the output did not close");
                break;
            }
        }
    }
}
