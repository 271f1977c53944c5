//! MCP over Streamable HTTP (`debug-mcp-server --http ADDR`), on `std::net`: one endpoint,
//! `/mcp`, where each POST carries one JSON-RPC message and its answer comes back as JSON or, when
//! the client accepts it, as a server-sent-event stream (the call's progress and log
//! notifications, then its response).
//!
//! Each client context runs the stdio server's own loop (`server::serve`) over channels: a
//! 2026-07-28 client (stateless) is the context of its bearer token; a 2025-11-25 client gets an
//! `Mcp-Session-Id` at `initialize`, a context of its own, ended by DELETE. So one context's debug
//! sessions are never listed to, or usable by, another, and every call, cancellation and shutdown
//! behaves as over stdio. Request ids and progress tokens are made unique per POST on the way in
//! and given back on the way out: two clients of one token may use the same ids.
//!
//! Security: the listener binds where it is told (loopback by default) and refuses to bind
//! beyond loopback without a token; a request with an `Origin` that is not a loopback origin is
//! refused (403: DNS rebinding from a web page); with tokens, a request without a matching
//! `Authorization: Bearer` is refused (401); headers, bodies and concurrent connections are
//! capped; a client that disconnects while its call runs has the call cancelled (its program
//! killed).

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Value};

use crate::jsonrpc::{self, Message, Notification, RequestId};
use crate::server::{self, Connection};
use crate::thread::JoinOnDrop;
use crate::{mcp, stdio};

/// The largest head (request line and headers) and body a request may have.
const HEAD_MAX: usize = 16 * 1024;
const BODY_MAX: usize = 4 * 1024 * 1024;
/// Connections served at once; more are answered 503.
const CONNECTIONS_MAX: usize = 32;
/// How long a connection may take to send a request (or sit idle between two).
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a call's wait checks that its client is still there.
const CLIENT_CHECK: Duration = Duration::from_millis(100);
/// Handshake clients' sessions kept at once: past it, the one unused longest ends (its debug
/// sessions with it), as a client that never said DELETE would otherwise keep its own forever.
const SESSIONS_MAX: usize = 64;

/// What `--http` was given.
pub(crate) struct Options {
    pub(crate) address: String,
    /// Bearer tokens a request must carry one of (none: no authorization asked).
    pub(crate) tokens: Vec<String>,
}

/// The tokens of `--token-file` (one per line) or `DEBUG_MCP_HTTP_TOKEN`; a token file others
/// can read is refused.
pub(crate) fn tokens(file: Option<&str>) -> Result<Vec<String>, String> {
    let text = match file {
        Some(path) => {
            let meta = std::fs::metadata(path).map_err(|e| format!("--token-file {path}: {e}"))?;
            if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o077 != 0 {
                return Err(format!(
                    "--token-file {path} can be read by other users: `chmod 600 {path}` first"
                ));
            }
            std::fs::read_to_string(path).map_err(|e| format!("--token-file {path}: {e}"))?
        }
        None => std::env::var("DEBUG_MCP_HTTP_TOKEN").unwrap_or_default(),
    };
    Ok(text.lines().map(str::trim).filter(|t| !t.is_empty()).map(String::from).collect())
}

/// Serves until SIGTERM or SIGINT.
pub(crate) fn run(options: Options) -> io::Result<()> {
    let listener = TcpListener::bind(&options.address).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("{e}: give HOST:PORT, e.g. 127.0.0.1:8765 (port 0 picks a free one)"),
        )
    })?;
    let address = listener.local_addr()?;
    if !address.ip().is_loopback() && options.tokens.is_empty() {
        return Err(io::Error::other(format!(
            "{address} is reachable from other machines: give the tokens clients must present \
             (--token-file FILE, or DEBUG_MCP_HTTP_TOKEN), or bind 127.0.0.1"
        )));
    }
    eprintln!("debug-mcp: serving MCP at http://{address}/mcp");
    let signals = Arc::new(crate::sys::Signals::install()?);
    let stopping = Arc::new(AtomicBool::new(false));
    let signal_thread = JoinOnDrop::spawn("signals", {
        let (signals, stopping) = (signals.clone(), stopping.clone());
        move || {
            if signals.wait() != 0 {
                stopping.store(true, Ordering::Relaxed);
                // Wake the acceptor.
                drop(TcpStream::connect(address));
            }
        }
    });
    let shared = Arc::new(Shared {
        tokens: options.tokens,
        contexts: Mutex::new(HashMap::new()),
        next: AtomicU64::new(1),
        connections: AtomicUsize::new(0),
        open: Mutex::new(HashMap::new()),
        stopping: stopping.clone(),
    });
    let mut handlers: Vec<JoinOnDrop> = Vec::new();
    for stream in listener.incoming() {
        if stopping.load(Ordering::Relaxed) {
            break;
        }
        let Ok(stream) = stream else { continue };
        handlers.retain(|h| !h.is_finished());
        if shared.connections.fetch_add(1, Ordering::SeqCst) >= CONNECTIONS_MAX {
            shared.connections.fetch_sub(1, Ordering::SeqCst);
            let _ = respond(&stream, 503, &[], "too many connections: try again");
            continue;
        }
        let shared = shared.clone();
        handlers.push(JoinOnDrop::spawn("http", move || {
            let number = shared.next.fetch_add(1, Ordering::Relaxed);
            if let Ok(clone) = stream.try_clone() {
                shared.open.lock().unwrap_or_else(|e| e.into_inner()).insert(number, clone);
            }
            serve_connection(&shared, stream);
            shared.open.lock().unwrap_or_else(|e| e.into_inner()).remove(&number);
            shared.connections.fetch_sub(1, Ordering::SeqCst);
        }));
    }
    // Every connection is shut (a request waiting for its answer cancels its call), then the
    // contexts end (their calls cancelled, their sessions ended).
    for stream in shared.open.lock().unwrap_or_else(|e| e.into_inner()).values() {
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
    drop(handlers);
    let contexts = std::mem::take(&mut *shared.contexts.lock().unwrap_or_else(|e| e.into_inner()));
    drop(contexts);
    signals.wake();
    drop(signal_thread);
    Ok(())
}

struct Shared {
    tokens: Vec<String>,
    /// By key: `token:<token>` (stateless clients) or `session:<id>` (handshake clients).
    contexts: Mutex<HashMap<String, Arc<Context>>>,
    next: AtomicU64,
    connections: AtomicUsize,
    /// The connections being served, to shut them at the end.
    open: Mutex<HashMap<u64, TcpStream>>,
    stopping: Arc<AtomicBool>,
}

/// One client's server: the stdio loop over channels, and the POSTs waiting for its answers.
struct Context {
    /// The token that made it (a session is only used with its own token).
    token: String,
    incoming: Mutex<Option<Sender<stdio::Incoming>>>,
    waiting: Arc<Mutex<HashMap<String, Waiting>>>,
    threads: Mutex<Vec<JoinOnDrop>>,
    /// When it was last used (the server's request counter then).
    used: AtomicU64,
}

/// A POST waiting for its answer: where its messages go, and its client's own request id and
/// progress token.
struct Waiting {
    to: Sender<Message>,
    id: RequestId,
    progress: Option<Value>,
}

impl Context {
    fn start(token: &str) -> Arc<Context> {
        let (incoming_tx, incoming) = crossbeam_channel::unbounded();
        let (out, answers) = crossbeam_channel::unbounded();
        let waiting: Arc<Mutex<HashMap<String, Waiting>>> = Arc::default();
        let serve = JoinOnDrop::spawn("http-context", move || {
            server::serve(Connection { incoming, out }, &crossbeam_channel::never());
        });
        let route = JoinOnDrop::spawn("http-route", {
            let waiting = waiting.clone();
            move || route(&answers, &waiting)
        });
        Arc::new(Context {
            token: token.to_string(),
            incoming: Mutex::new(Some(incoming_tx)),
            waiting,
            threads: Mutex::new(vec![serve, route]),
            used: AtomicU64::new(0),
        })
    }

    fn send(&self, message: Message) -> bool {
        let incoming = self.incoming.lock().unwrap_or_else(|e| e.into_inner());
        incoming.as_ref().is_some_and(|tx| tx.send(Ok(message)).is_ok())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // The loop ends as at stdin's end: every call cancelled, every session ended.
        self.incoming.lock().unwrap_or_else(|e| e.into_inner()).take();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        drop(threads);
    }
}

/// Hands each message of a context's loop to the POST it answers: a response by its id, a
/// progress notification by its token, a log message to every POST waiting; the rest (list
/// changes: no client listens for them here) is dropped.
fn route(answers: &Receiver<Message>, waiting: &Mutex<HashMap<String, Waiting>>) {
    for message in answers {
        let mut waiting = waiting.lock().unwrap_or_else(|e| e.into_inner());
        match message {
            Message::Response(mut response) => {
                let internal = response.id.as_ref().and_then(RequestId::as_str).unwrap_or_default();
                if let Some(post) = waiting.remove(internal) {
                    response.id = Some(post.id);
                    let _ = post.to.send(Message::Response(response));
                }
            }
            Message::Notification(mut notification) => {
                let token = notification.params.pointer("/progressToken").and_then(Value::as_str);
                if let Some(post) = token.and_then(|token| waiting.get(token)) {
                    notification.params["progressToken"] =
                        post.progress.clone().unwrap_or(Value::Null);
                    let _ = post.to.send(Message::Notification(notification));
                } else if notification.method == "notifications/message" {
                    for post in waiting.values() {
                        let _ = post.to.send(Message::Notification(notification.clone()));
                    }
                }
            }
            Message::Request(_) => {}
        }
    }
}

/// One HTTP request, as read.
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Why a request could not be read: the status to answer, or nothing (the client left).
enum Refused {
    Status(u16, &'static str),
    Gone,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Result<Request, Refused> {
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let read =
            reader.by_ref().take((HEAD_MAX + 1 - head.len()) as u64).read_until(b'\n', &mut line);
        match read {
            Ok(0) => return Err(Refused::Gone),
            Ok(_) => {}
            Err(_) => return Err(Refused::Gone),
        }
        if head.len() + line.len() > HEAD_MAX {
            return Err(Refused::Status(431, "request headers too large"));
        }
        let blank = line == b"\r\n" || line == b"\n";
        head.extend_from_slice(&line);
        if blank && head.len() > line.len() {
            break;
        }
        if blank {
            head.clear(); // a stray empty line before a request
        }
    }
    let text =
        String::from_utf8(head).map_err(|_| Refused::Status(400, "headers are not UTF-8"))?;
    let mut lines = text.lines();
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (method, path) = (first.next().unwrap_or_default(), first.next().unwrap_or_default());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut request =
        Request { method: method.into(), path: path.into(), headers, body: Vec::new() };
    if request.header("transfer-encoding").is_some() {
        return Err(Refused::Status(411, "send the body with a Content-Length"));
    }
    let length: usize = match request.header("content-length") {
        Some(n) => n.parse().map_err(|_| Refused::Status(400, "bad Content-Length"))?,
        None => 0,
    };
    if length > BODY_MAX {
        return Err(Refused::Status(413, "request body too large"));
    }
    request.body.resize(length, 0);
    reader.read_exact(&mut request.body).map_err(|_| Refused::Gone)?;
    Ok(request)
}

fn serve_connection(shared: &Shared, stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_nodelay(true);
    let Ok(reading) = stream.try_clone() else { return };
    let mut reader = BufReader::new(reading);
    loop {
        if shared.stopping.load(Ordering::Relaxed) {
            return;
        }
        let request = match read_request(&mut reader) {
            Ok(request) => request,
            Err(Refused::Status(status, why)) => {
                let _ = respond(&stream, status, &[("Connection", "close")], why);
                // What the client still sends is read and dropped for a moment, so that it
                // reads the answer rather than a reset.
                let _ = stream.shutdown(std::net::Shutdown::Write);
                let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
                let _ = io::copy(&mut reader.take(BODY_MAX as u64 * 2), &mut io::sink());
                return;
            }
            Err(Refused::Gone) => return,
        };
        let close = request.header("connection").is_some_and(|c| c.eq_ignore_ascii_case("close"));
        match handle(shared, &request, &stream) {
            Ok(true) if !close => continue,
            _ => return,
        }
    }
}

/// Whether an `Origin` is a page served from this machine (`http://localhost:5173`).
fn loopback_origin(origin: &str) -> bool {
    let Some((_, rest)) = origin.split_once("://") else { return false };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => rest.split(':').next().unwrap_or_default(),
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// Compares without stopping at the first difference (a token's bytes are not guessable from
/// how long a refusal takes).
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Answers one request; whether the connection may serve another.
fn handle(shared: &Shared, request: &Request, stream: &TcpStream) -> io::Result<bool> {
    if request.header("origin").is_some_and(|o| !loopback_origin(o)) {
        respond(
            stream,
            403,
            &[],
            "Origin not allowed: only pages served from this machine may call",
        )?;
        return Ok(true);
    }
    let presented = request
        .header("authorization")
        .and_then(|a| a.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token);
    let token = match (shared.tokens.is_empty(), presented) {
        (true, _) => String::new(),
        (false, Some(p)) if shared.tokens.iter().any(|t| same(t, p.trim())) => p.trim().to_string(),
        _ => {
            respond(stream, 401, &[("WWW-Authenticate", "Bearer")], "a bearer token is required")?;
            return Ok(true);
        }
    };
    if request.path.split('?').next() != Some("/mcp") {
        respond(stream, 404, &[], "not found: MCP is served at /mcp")?;
        return Ok(true);
    }
    match request.method.as_str() {
        "POST" => post(shared, request, stream, &token),
        "DELETE" => {
            let Some(id) = request.header("mcp-session-id") else {
                respond(stream, 400, &[], "DELETE needs the Mcp-Session-Id header")?;
                return Ok(true);
            };
            let mut contexts = shared.contexts.lock().unwrap_or_else(|e| e.into_inner());
            let key = format!("session:{id}");
            match contexts.get(&key) {
                Some(context) if context.token == token => {
                    let context = contexts.remove(&key);
                    drop(contexts);
                    drop(context);
                    respond(stream, 204, &[], "")?;
                }
                _ => respond(stream, 404, &[], "no such session")?,
            }
            Ok(true)
        }
        // No stream of server-initiated messages: answers come on each POST.
        _ => {
            respond(stream, 405, &[("Allow", "POST, DELETE")], "method not allowed")?;
            Ok(true)
        }
    }
}

fn post(shared: &Shared, request: &Request, stream: &TcpStream, token: &str) -> io::Result<bool> {
    if let Some(version) = request.header("mcp-protocol-version") {
        if version != mcp::MODERN && !mcp::VERSIONS.contains(&version) {
            respond(stream, 400, &[], "unsupported MCP-Protocol-Version")?;
            return Ok(true);
        }
    }
    let message = match jsonrpc::parse(&request.body) {
        Ok(message) => message,
        Err(refused) => {
            respond_raw(
                stream,
                400,
                &[],
                "application/json",
                Message::Response(refused).to_line().as_bytes(),
            )?;
            return Ok(true);
        }
    };
    let method = match &message {
        Message::Request(r) => r.method.clone(),
        Message::Notification(n) => n.method.clone(),
        Message::Response(_) => String::new(),
    };
    let session = request.header("mcp-session-id");
    // The context: a handshake client's session (made at `initialize`), else its token's.
    let mut headers: Vec<(&str, String)> = Vec::new();
    // Ended after the lock is let go: ending a context waits for its calls and sessions.
    let mut evicted = None;
    let context = {
        let mut contexts = shared.contexts.lock().unwrap_or_else(|e| e.into_inner());
        match (session, method.as_str()) {
            (_, "initialize") => {
                let sessions: Vec<(&String, u64)> = contexts
                    .iter()
                    .filter(|(key, _)| key.starts_with("session:"))
                    .map(|(key, context)| (key, context.used.load(Ordering::Relaxed)))
                    .collect();
                if sessions.len() >= SESSIONS_MAX {
                    let oldest =
                        sessions.iter().min_by_key(|(_, used)| *used).map(|(k, _)| (*k).clone());
                    evicted = oldest.and_then(|key| contexts.remove(&key));
                }
                let id = format!("{:016x}{:016x}", crate::sys::random(), crate::sys::random());
                let context = Context::start(token);
                contexts.insert(format!("session:{id}"), context.clone());
                headers.push(("Mcp-Session-Id", id));
                context
            }
            (Some(id), _) => match contexts.get(&format!("session:{id}")) {
                Some(context) if context.token == token => context.clone(),
                _ => {
                    drop(contexts);
                    respond(stream, 404, &[], "no such session: initialize again")?;
                    return Ok(true);
                }
            },
            (None, _) => contexts
                .entry(format!("token:{token}"))
                .or_insert_with(|| Context::start(token))
                .clone(),
        }
    };
    drop(evicted);
    context.used.store(shared.next.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let mut call = match message {
        Message::Request(call) => call,
        Message::Notification(notification) => {
            match notification.method.as_str() {
                "notifications/cancelled" => cancel(&context, &notification.params["requestId"]),
                _ => drop(context.send(Message::Notification(notification))),
            }
            respond(stream, 202, &headers, "")?;
            return Ok(true);
        }
        // This server asks clients nothing.
        Message::Response(_) => {
            respond(stream, 202, &headers, "")?;
            return Ok(true);
        }
    };
    // Unique on the way in, the client's own on the way out.
    let internal = format!("h{}", shared.next.fetch_add(1, Ordering::Relaxed));
    let id = std::mem::replace(&mut call.id, RequestId::from_value(internal.clone().into()));
    let progress = call.params.pointer("/_meta/progressToken").cloned();
    if progress.is_some() {
        call.params["_meta"]["progressToken"] = internal.clone().into();
    }
    let (to, answers) = crossbeam_channel::unbounded();
    context
        .waiting
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(internal.clone(), Waiting { to, id, progress });
    if !context.send(Message::Request(call)) {
        respond(stream, 503, &headers, "the server is ending")?;
        return Ok(false);
    }
    // A tool call's progress and log messages come as events when the client takes them; other
    // answers are one JSON object.
    let sse = method == "tools/call"
        && request.header("accept").is_some_and(|a| a.contains("text/event-stream"));
    let answered = answer(stream, &answers, sse, &headers, &shared.stopping);
    context.waiting.lock().unwrap_or_else(|e| e.into_inner()).remove(&internal);
    match answered {
        Ok(keep) => Ok(keep),
        Err(_) => {
            // The client left before its answer: its call is cancelled, its program killed.
            cancel(&context, &Value::from(internal.as_str()));
            Ok(false)
        }
    }
}

/// Cancels a call in `context`, as `notifications/cancelled` would over stdio: `id` is the
/// client's own, or an internal one.
fn cancel(context: &Context, id: &Value) {
    let wanted = id.to_string();
    let waiting = context.waiting.lock().unwrap_or_else(|e| e.into_inner());
    let internal = waiting
        .iter()
        .find(|(_, post)| post.id.key() == wanted)
        .map_or_else(|| id.clone(), |(internal, _)| Value::from(internal.as_str()));
    drop(waiting);
    let params = json!({"requestId": internal, "reason": "the client went away"});
    context.send(Message::Notification(Notification::new("notifications/cancelled", params)));
}

/// Writes a POST's answer: the response as JSON, or every message as an event; checks while it
/// waits that the client is still there (an error: it left).
fn answer(
    stream: &TcpStream,
    answers: &Receiver<Message>,
    sse: bool,
    headers: &[(&str, &str)],
    stopping: &AtomicBool,
) -> io::Result<bool> {
    let mut writer = stream;
    let mut started = false;
    loop {
        let message = match answers.recv_timeout(CLIENT_CHECK) {
            Ok(message) => message,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                if gone(stream) || stopping.load(Ordering::Relaxed) {
                    return Err(io::Error::other("the client closed its connection"));
                }
                continue;
            }
            Err(_) => return Err(io::Error::other("the context ended")),
        };
        let last = matches!(message, Message::Response(_));
        let text = message.to_line();
        if !sse {
            if last {
                respond_raw(stream, 200, headers, "application/json", text.as_bytes())?;
                return Ok(true);
            }
            continue;
        }
        if !started {
            let mut head = String::from("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n");
            head.push_str("Cache-Control: no-cache\r\nConnection: close\r\n");
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            writer.write_all(head.as_bytes())?;
            started = true;
        }
        writer.write_all(format!("event: message\ndata: {text}\n\n").as_bytes())?;
        writer.flush()?;
        if last {
            return Ok(false); // the stream's end is the connection's
        }
    }
}

/// Whether the client closed its end (read sees the end, without waiting).
fn gone(stream: &TcpStream) -> bool {
    let _ = stream.set_nonblocking(true);
    let mut byte = [0u8; 1];
    let gone = matches!(stream.peek(&mut byte), Ok(0))
        || matches!(stream.peek(&mut byte), Err(e) if e.kind() != io::ErrorKind::WouldBlock);
    let _ = stream.set_nonblocking(false);
    gone
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    }
}

fn respond(
    stream: &TcpStream,
    status: u16,
    headers: &[(&str, &str)],
    text: &str,
) -> io::Result<()> {
    respond_raw(stream, status, headers, "text/plain; charset=utf-8", text.as_bytes())
}

fn respond_raw(
    mut stream: &TcpStream,
    status: u16,
    headers: &[(&str, &str)],
    kind: &str,
    body: &[u8],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    if status != 204 {
        head.push_str(&format!("Content-Type: {kind}\r\nContent-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_from_this_machine_only() {
        for (origin, ok) in [
            ("http://localhost:5173", true),
            ("http://127.0.0.1", true),
            ("https://[::1]:8443", true),
            ("http://evil.example", false),
            ("http://localhost.evil.example", false),
            ("null", false),
        ] {
            assert_eq!(loopback_origin(origin), ok, "{origin}");
        }
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
