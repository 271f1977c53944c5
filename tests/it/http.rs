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
struct Http {
    child: Child,
    address: String,
}

impl Http {
    fn start(args: &[&str]) -> Http {
        let mut child = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
            .arg("--http")
            .args(args)
            .current_dir(root())
            .env_remove("DEBUG_MCP_HTTP_TOKEN")
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

    /// Sends one request and reads the whole answer (the connection is closed after it).
    fn send(&self, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
        let mut stream = self.connect();
        let mut request = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.address,
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        // A refused request may be answered before all of it is sent.
        let _ =
            stream.write_all(request.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, head.to_string(), body.to_string())
    }

    /// A JSON-RPC call as a 2026-07-28 client makes it; its result (or error).
    fn call(&self, token: Option<&str>, method: &str, params: Value) -> Value {
        let mut params = params;
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}});
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let bearer = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(bearer) = &bearer {
            headers.push(("Authorization", bearer.as_str()));
        }
        let (status, head, body) = self.send("POST", &headers, &body.to_string());
        assert_eq!(status, 200, "{head}\n{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["id"], 7, "{answer}");
        answer.get("result").cloned().unwrap_or_else(|| answer["error"].clone())
    }

    fn tool(&self, token: Option<&str>, name: &str, arguments: Value) -> Value {
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

/// A private token file holding `tokens`.
fn token_file(tokens: &[&str]) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("dmcp-tokens-{}", tag()));
    std::fs::write(&path, tokens.join("\n")).unwrap();
    let private = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    std::fs::set_permissions(&path, private).unwrap();
    path
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
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
        .args(["--http", "127.0.0.1:0", "--token-file", file.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("chmod 600"), "{said}");
    std::fs::remove_file(&file).unwrap();
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
        "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alpha-token\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
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
    std::fs::remove_file(&file).unwrap();
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
        format!("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}", body.len());
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
