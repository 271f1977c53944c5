//! `--http`: MCP over Streamable HTTP, spoken here in raw HTTP/1.1 (what a client sends and
//! what it gets back, status lines and headers included). The official clients are checked by
//! tests/clients/.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::python::{py, python};
use crate::{assert_no_debuggee, eventually, root, tag};

/// A server on `--http 127.0.0.1:0` (with `args`), and where it listens.
pub struct Http {
    child: Child,
    pub address: String,
}

impl Http {
    pub fn start(args: &[&str]) -> Http {
        Http::start_with_env(args, &[])
    }

    /// A server given `env` too (and no `DEBUG_MCP_HTTP_TOKEN` but from it).
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Http {
        let mut child = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
            .arg("--http")
            .args(args)
            .current_dir(root())
            .env_remove("DEBUG_MCP_HTTP_TOKEN")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
        let address = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.strip_suffix("/mcp\n"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Http { child, address }
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        stream
    }

    /// Sends one request and reads the whole answer (the connection is closed after it). A
    /// POST says what MCP clients say (JSON, accepting JSON and events) unless `headers` give
    /// their own `Content-Type` or `Accept`; every request names the server as its `Host`.
    fn send(&self, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
        let mut request = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.address,
            body.len()
        );
        let given = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        if method == "POST" && !given("content-type") {
            request.push_str("Content-Type: application/json\r\n");
        }
        if method == "POST" && !given("accept") {
            request.push_str("Accept: application/json, text/event-stream\r\n");
        }
        for (name, value) in headers.iter().filter(|(_, value)| !value.is_empty()) {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        self.send_raw(&request)
    }

    /// Sends `request` as it is and reads the whole answer: `(status, head, body)`.
    fn send_raw(&self, request: &str) -> (u16, String, String) {
        let mut stream = self.connect();
        // A refused request may be answered before all of it is sent.
        let _ = stream.write_all(request.as_bytes());
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        parse_answer(&answer)
    }

    /// A JSON-RPC call as a 2026-07-28 client makes it; its result (or error).
    pub fn call(&self, token: Option<&str>, method: &str, params: Value) -> Value {
        let mut params = params;
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}});
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let bearer = token.map(|t| format!("Bearer {t}"));
        let mut headers = Vec::new();
        if let Some(bearer) = &bearer {
            headers.push(("Authorization", bearer.as_str()));
        }
        let (status, head, body) = self.send("POST", &headers, &body.to_string());
        assert_eq!(status, 200, "{head}\n{body}");
        let answer = response_of(&head, &body);
        assert_eq!(answer["id"], 7, "{answer}");
        answer.get("result").cloned().unwrap_or_else(|| answer["error"].clone())
    }

    pub fn tool(&self, token: Option<&str>, name: &str, arguments: Value) -> Value {
        let result = self.call(token, "tools/call", json!({"name": name, "arguments": arguments}));
        result["structuredContent"].clone()
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        // SIGTERM: the server ends every call and session, then exits.
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = Command::new("kill").arg(self.child.id().to_string()).status();
        }
        let _ = self.child.wait();
    }
}

/// The JSON-RPC response an answer carries: its body, or its event stream's last message.
fn response_of(head: &str, body: &str) -> Value {
    let json = match head.contains("text/event-stream") {
        true => body.lines().rev().find_map(|l| l.strip_prefix("data: ")).unwrap_or_default(),
        false => body,
    };
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {head}\n{body}"))
}

/// An HTTP answer's status, head and body.
fn parse_answer(answer: &str) -> (u16, String, String) {
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

/// A private token file holding `tokens`, removed however the test ends.
fn token_file(tokens: &[&str]) -> TokenFile {
    let path = std::env::temp_dir().join(format!("dmcp-tokens-{}", tag()));
    std::fs::write(&path, tokens.join("\n")).unwrap();
    let private = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    std::fs::set_permissions(&path, private).unwrap();
    TokenFile(path)
}

struct TokenFile(std::path::PathBuf);

impl std::ops::Deref for TokenFile {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TokenFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Refused: a web page's Origin (403), a request without the token or with another (401),
/// headers and bodies past their caps (431, 413), GET (405); a server bound beyond loopback
/// without tokens, and a token file others can read, never start.
#[test]
fn http_refuses_what_it_must() {
    let server = Http::start(&["127.0.0.1:0"]);
    let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#;
    let (status, head, _) = server.send("POST", &[("Origin", "http://evil.example")], discover);
    assert_eq!(status, 403, "{head}");
    let (status, _, body) = server.send("POST", &[("Origin", "http://localhost:5173")], discover);
    assert_eq!(status, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["result"]["resultType"], "complete");
    let (status, head, _) = server.send("GET", &[], "");
    assert!(status == 405 && head.contains("Allow: POST, DELETE"), "{head}");
    let big = "x".repeat(20 * 1024);
    let (status, _, _) = server.send("POST", &[("X-Filler", &big)], discover);
    assert_eq!(status, 431);
    let (status, _, _) = server.send("POST", &[], &" ".repeat(5 * 1024 * 1024));
    assert_eq!(status, 413);
    let (status, _, body) = server.send("POST", &[], "[1, 2]");
    assert_eq!(status, 400, "{body}");
    drop(server);

    let file = token_file(&["alpha-token", "beta-token"]);
    let server = Http::start(&["127.0.0.1:0", "--token-file", file.to_str().unwrap()]);
    let (status, head, _) = server.send("POST", &[], discover);
    assert!(status == 401 && head.contains("WWW-Authenticate: Bearer"), "{head}");
    let (status, _, _) = server.send("POST", &[("Authorization", "Bearer gamma-token")], discover);
    assert_eq!(status, 401);
    let (status, _, _) = server.send("POST", &[("Authorization", "Bearer alpha-token")], discover);
    assert_eq!(status, 200);
    drop(server);

    let refused = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
        .args(["--http", "0.0.0.0:0"])
        .env_remove("DEBUG_MCP_HTTP_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("reachable from other machines"), "{said}");
    std::fs::set_permissions(&*file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
        .args(["--http", "127.0.0.1:0", "--token-file", file.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("chmod 600"), "{said}");
}

/// One token's debug sessions are not another's; a handshake client's session ends with its
/// DELETE (its program killed); a client that leaves while its call runs has the program
/// killed.
#[test]
fn http_sessions_belong_to_their_client() {
    let file = token_file(&["alpha-token", "beta-token"]);
    let server = Http::start(&["127.0.0.1:0", "--token-file", file.to_str().unwrap()]);
    let (alpha, beta) = (Some("alpha-token"), Some("beta-token"));
    let tag = tag();
    let command = format!("DMCP_TAG={tag} {} {}", python(), py("loop.py"));
    let state = server.tool(
        alpha,
        "debug-launch",
        json!({"command": command,
        "breakpoints": [{"file": py("loop.py"), "line": 5}]}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    let id = state["sessionId"].clone();
    let theirs = server.tool(beta, "debug-sessions", json!({}));
    assert_eq!(theirs["sessions"], json!([]), "{theirs}");
    let refused =
        server.tool(beta, "debug-evaluate", json!({"sessionId": id, "expression": "total"}));
    assert_eq!(refused["code"], "no_session", "{refused}");
    let ours =
        server.tool(alpha, "debug-evaluate", json!({"sessionId": id, "expression": "total"}));
    assert_eq!(ours["value"], 0, "{ours}");
    server.tool(alpha, "debug-stop", json!({}));
    assert_no_debuggee(&tag);

    // A handshake (2025-11-25) client: its Mcp-Session-Id, then DELETE ends its session.
    let bearer = ("Authorization", "Bearer alpha-token");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let (status, head, _) = server.send("POST", &[bearer], &initialize.to_string());
    assert_eq!(status, 200, "{head}");
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix("Mcp-Session-Id: "))
        .unwrap_or_else(|| panic!("no Mcp-Session-Id: {head}"))
        .to_string();
    let launch = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "debug-launch", "arguments": {"command": command,
            "breakpoints": [{"file": py("loop.py"), "line": 5}]}}});
    let with_session = [bearer, ("Mcp-Session-Id", session.as_str())];
    let (status, _, body) = server.send("POST", &with_session, &launch.to_string());
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""state":"paused""#), "{body}");
    let (status, _, _) =
        server.send("DELETE", &[("Authorization", "Bearer beta-token"), with_session[1]], "");
    assert_eq!(status, 404, "another token's session is not found");
    let (status, _, _) = server.send("DELETE", &with_session, "");
    assert_eq!(status, 204);
    eventually(Duration::from_secs(10), "the deleted session's program ends", || {
        crate::processes_with_tag(&tag).is_empty()
    });
    let (status, _, _) = server.send("POST", &with_session, &launch.to_string());
    assert_eq!(status, 404);

    // A client that leaves mid-call: the call is cancelled and its program killed.
    let long = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "debug-script", "arguments": {
            "command": format!("DMCP_TAG={tag} {} {} 100000000", python(), py("count.py")),
            "breakpoint": {"file": py("count.py"), "line": 7, "condition": "i < 0"},
            "expression": "i", "timeout": 60000},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut stream = server.connect();
    let body = long.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer alpha-token\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        server.address,
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    eventually(Duration::from_secs(20), "the long program runs", || {
        !crate::processes_with_tag(&tag).is_empty()
    });
    drop(stream);
    eventually(Duration::from_secs(10), "the departed client's program is killed", || {
        crate::processes_with_tag(&tag).is_empty()
    });
}

/// SIGTERM while a call runs: the call is cancelled (its program killed), the server exits.
#[test]
fn http_sigterm_mid_call_ends_the_call_and_the_server() {
    let mut server = Http::start(&["127.0.0.1:0"]);
    let tag = tag();
    let long = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "debug-script", "arguments": {
            "command": format!("DMCP_TAG={tag} {} {} 100000000", python(), py("count.py")),
            "breakpoint": {"file": py("count.py"), "line": 7, "condition": "i < 0"},
            "expression": "i", "timeout": 60000}}});
    let mut stream = server.connect();
    let body = long.to_string();
    let request =
        format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}", server.address, body.len());
    stream.write_all(request.as_bytes()).unwrap();
    eventually(Duration::from_secs(20), "the long program runs", || {
        !crate::processes_with_tag(&tag).is_empty()
    });
    let _ = Command::new("kill").arg(server.child.id().to_string()).status();
    eventually(Duration::from_secs(10), "the server exits", || {
        server.child.try_wait().unwrap().is_some()
    });
    assert!(crate::processes_with_tag(&tag).is_empty(), "the call's program was killed");
    drop(stream);
}

/// A request that is not what an MCP client sends, or that names another host or page, is
/// refused before anything acts on it (each passed before): a `Host` that is not this
/// server's (DNS rebinding), a "simple" POST a web page may send without a preflight
/// (`text/plain`, or no `Content-Type`), an `Accept` without the transport's two types, an
/// `Origin` that only starts like a local one, two `Origin`s.
#[test]
fn http_requests_are_what_they_claim() {
    let server = Http::start(&["127.0.0.1:0"]);
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let post = |headers: &[(&str, &str)]| {
        let (status, head, body) = server.send("POST", headers, list);
        assert!(!body.contains("\"tools\""), "{head}\n{body}");
        status
    };
    let raw = |host: &str| {
        server.send_raw(&format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{list}",
            list.len()
        ))
    };
    assert_eq!(raw("evil.example").0, 403);
    assert_eq!(raw("evil.example:8765").0, 403);
    assert_eq!(raw(&server.address).0, 200);
    assert_eq!(raw("localhost").0, 200);
    assert_eq!(post(&[("Content-Type", "text/plain")]), 415);
    assert_eq!(post(&[("Content-Type", "")]), 415);
    assert_eq!(post(&[("Content-Type", "application/x-www-form-urlencoded")]), 415);
    assert_eq!(post(&[("Accept", "text/html")]), 406);
    assert_eq!(post(&[("Accept", "application/json")]), 406);
    assert_eq!(post(&[("Origin", "http://localhost:80@evil.com")]), 403);
    assert_eq!(post(&[("Origin", "http://localhost"), ("Origin", "http://evil.example")]), 403);
    assert_eq!(post(&[("Origin", "http://localhost.evil.example")]), 403);
    let (status, _, body) = server.send("POST", &[("Origin", "http://localhost:5173")], list);
    assert!(status == 200 && body.contains("\"tools\""), "{body}");
    // Without Host at all: an HTTP/1.1 request must have one.
    let (status, _, _) = server.send_raw(&format!(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nConnection: close\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{list}",
        list.len()
    ));
    assert_eq!(status, 400);
    // A name the operator allowed is served.
    let allowed = Http::start(&["127.0.0.1:0", "--allowed-host", "dev.example"]);
    let (status, _, _) = allowed.send_raw(&format!(
        "POST /mcp HTTP/1.1\r\nHost: dev.example:8765\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n{list}",
        list.len()
    ));
    assert_eq!(status, 200);
}

/// A token file as people write them: comments and blank lines are not tokens, and a file
/// that holds no token refuses to start rather than serve without authorization.
#[test]
fn http_token_files_as_written() {
    let refused = |contents: &str| {
        let file = token_file(&[contents]);
        let mut child = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
            .args(["--http", "127.0.0.1:0", "--token-file", file.to_str().unwrap()])
            .env_remove("DEBUG_MCP_HTTP_TOKEN")
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A server that starts anyway is killed after a moment: it did not refuse.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let output = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&output.stderr).to_string();
        (output.status.code(), said)
    };
    for contents in ["", "\n  \n\t\n", "# the team's token\n\n# another comment\n"] {
        let (code, said) = refused(contents);
        assert_eq!(code, Some(2), "{contents:?}: {said}");
        assert!(said.contains("holds no token"), "{said}");
    }
    let file = token_file(&["# alpha-token", "", "beta-token  ", "  # gamma"]);
    let server = Http::start(&["127.0.0.1:0", "--token-file", file.to_str().unwrap()]);
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    for (token, status) in
        [("# alpha-token", 401), ("#", 401), ("# gamma", 401), ("beta-token", 200)]
    {
        let bearer = format!("Bearer {token}");
        let (got, head, _) = server.send("POST", &[("Authorization", &bearer)], list);
        assert_eq!(got, status, "{token}: {head}");
    }
}

/// One token's load never ends, shuts out or reads another's: token B's 70 handshakes let go
/// of B's own unused contexts, never A's (whose program stays paused), and with 64 of B's calls
/// running, B's next is refused while A is served.
#[test]
fn http_one_token_never_touches_anothers() {
    let file = token_file(&["alpha-token", "beta-token"]);
    let server = Http::start(&["127.0.0.1:0", "--token-file", file.to_str().unwrap()]);
    let (alpha, beta) =
        (("Authorization", "Bearer alpha-token"), ("Authorization", "Bearer beta-token"));
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let handshake = |token: (&str, &str)| {
        let (status, head, _) = server.send("POST", &[token], &initialize.to_string());
        assert_eq!(status, 200, "{head}");
        head.lines().find_map(|l| l.strip_prefix("Mcp-Session-Id: ")).unwrap().to_string()
    };
    let session = handshake(alpha);
    let tag = tag();
    let launch = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "debug-launch", "arguments": {
            "command": format!("DMCP_TAG={tag} {} {}", python(), py("loop.py")),
            "breakpoints": [{"file": py("loop.py"), "line": 5}]}}});
    let with_session = [alpha, ("Mcp-Session-Id", session.as_str())];
    let (_, head, body) = server.send("POST", &with_session, &launch.to_string());
    assert_eq!(response_of(&head, &body)["result"]["structuredContent"]["state"], "paused");
    for _ in 0..70 {
        handshake(beta);
    }
    let evaluate = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "debug-evaluate", "arguments": {"expression": "total"}}});
    let (status, head, body) = server.send("POST", &with_session, &evaluate.to_string());
    assert_eq!(status, 200, "A's session outlived B's handshakes: {head}");
    assert_eq!(response_of(&head, &body)["result"]["structuredContent"]["value"], 0);

    // B holds 64 running calls (each POST waits for its answer on its connection).
    let held: Vec<TcpStream> = (0..64)
        .map(|i| {
            let call = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "debug-script", "arguments": {
                    "command": format!("DMCP_TAG={tag} {} -c 'import time; time.sleep(60)'", python()),
                    "failures": true, "timeout": 60000},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}}}});
            let body = call.to_string();
            let mut stream = server.connect();
            let request = format!(
                "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer beta-token\r\n\
                 Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
                 Content-Length: {}\r\n\r\n{body}",
                server.address,
                body.len()
            );
            stream.write_all(request.as_bytes()).unwrap();
            stream
        })
        .collect();
    eventually(Duration::from_secs(60), "B's 64 programs run", || {
        crate::processes_with_tag(&tag).len() >= 65
    });
    let refused = server.tool(Some("beta-token"), "debug-sessions", json!({}));
    assert_eq!(refused["code"], "too_many_calls", "{refused}");
    let (status, head, body) = server.send("POST", &with_session, &evaluate.to_string());
    assert_eq!(status, 200, "A is served while B is at its limit: {head}");
    assert_eq!(response_of(&head, &body)["result"]["structuredContent"]["value"], 0);
    let theirs = server.tool(Some("alpha-token"), "debug-sessions", json!({}));
    assert_eq!(theirs["sessions"], json!([]), "A's stateless context is not its handshake's");
    drop(held);
    let (status, _, _) = server.send("DELETE", &with_session, "");
    assert_eq!(status, 204);
    eventually(Duration::from_secs(30), "B's calls are cancelled as B leaves", || {
        crate::processes_with_tag(&tag).is_empty()
    });
}

/// Connections that send nothing, trickle a request in, or sit idle between requests give way:
/// 300 silent connections do not shut a client out, a request trickled in byte by byte is
/// ended at its deadline, and one peer's idle connections do not push out another peer's.
#[test]
fn http_held_connections_do_not_shut_others_out() {
    let server = Http::start(&["127.0.0.1:0"]);
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    // Another peer (127.0.0.2 is loopback too) with a few idle keep-alive connections.
    let address: std::net::SocketAddr = server.address.parse().unwrap();
    // Bound to 127.0.0.2 through a socket made by hand: std connects from 127.0.0.1.
    let from_other_peer = || {
        // SAFETY: plain socket calls on a descriptor made here and handed to a TcpStream.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
        let mut local: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        local.sin_family = libc::AF_INET as libc::sa_family_t;
        local.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 2]);
        let mut remote = local;
        remote.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        remote.sin_port = address.port().to_be();
        let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        unsafe {
            assert_eq!(libc::bind(fd, std::ptr::addr_of!(local).cast(), size), 0);
            assert_eq!(libc::connect(fd, std::ptr::addr_of!(remote).cast(), size), 0);
            <TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd)
        }
    };
    let theirs: Vec<TcpStream> = (0..5).map(|_| from_other_peer()).collect();
    let silent: Vec<TcpStream> = (0..300).map(|_| server.connect()).collect();
    let started = std::time::Instant::now();
    let (status, _, body) = server.send("POST", &[], list);
    assert!(status == 200 && body.contains("\"tools\""), "{status}: {body}");
    assert!(started.elapsed() < Duration::from_secs(5), "served at once: {:?}", started.elapsed());
    // The other peer's idle connections are still open: this peer's gave way.
    for stream in &theirs {
        stream.set_nonblocking(true).unwrap();
        let mut byte = [0u8; 1];
        let open =
            matches!(stream.peek(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        assert!(open, "another peer's connection was closed");
    }
    drop(silent);

    // A request trickled in a byte a second is answered 408 at its deadline (10 s), however
    // long it goes on.
    let mut slow = server.connect();
    slow.set_read_timeout(Some(Duration::from_millis(900))).unwrap();
    let request =
        format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nX-Slow: {}", server.address, "y".repeat(60));
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    for byte in request.bytes() {
        if slow.write_all(&[byte]).is_err() {
            break;
        }
        let mut buf = [0u8; 512];
        match slow.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        if !answer.is_empty() {
            break;
        }
    }
    let (status, head, _) = parse_answer(&String::from_utf8_lossy(&answer));
    assert_eq!(status, 408, "{head}");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(20), "ended at its deadline: {took:?}");
}
