//! MCP over Streamable HTTP (`debug-mcp-server --http ADDR`), on `std::net`: one endpoint,
//! `/mcp`, where each POST carries one JSON-RPC message and its answer comes back as JSON or, when
//! the client accepts it, as a server-sent-event stream (the call's progress and log
//! notifications, then its response).
//!
//! Each client context runs the stdio server's own loop (`server::serve`) over channels
//! (`contexts.rs`): a 2026-07-28 client (stateless) is the context of its bearer token; a
//! 2025-11-25 client gets an `Mcp-Session-Id` at `initialize`, a context of its own, ended by
//! DELETE. So one context's debug sessions are never listed to, or usable by, another, and every
//! call, cancellation and shutdown behaves as over stdio. Request ids and progress tokens are
//! made unique per POST on the way in and given back on the way out: two clients of one token
//! may use the same ids.
//!
//! Security (docs/security.md says it for users): the listener binds where it is told
//! (loopback by default) and refuses to bind beyond loopback without a token. Without tokens it
//! serves only connections made by processes of its own user (the peer's socket, read in
//! /proc/net/tcp); with them, a request without a matching `Authorization: Bearer` is refused
//! (401). Every request is checked to be what it claims (`request.rs`: `Host`, `Origin`,
//! `Content-Type`, `Accept`) and must arrive within a deadline; waiting connections give way to
//! newcomers (`slots.rs`); calls, sessions and contexts are limited per token (`contexts.rs`); a
//! client that disconnects while its call runs has the call cancelled (its program killed).

mod contexts;
mod request;
mod slots;

use std::io::{self, BufReader, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Receiver;
use serde_json::{json, Value};

use crate::jsonrpc::{self, Message, Notification, RequestId};
use crate::mcp;
use crate::thread::JoinOnDrop;
use contexts::{Context, Contexts, Waiting};
use request::{refuse, respond, respond_raw, Names, Reads, Refused, Request};
use slots::Slots;

/// How long a new connection may take to begin its first request, and a kept-alive one to
/// begin its next (either gives way sooner to a newcomer when the slots are full).
const FIRST_WAIT: Duration = Duration::from_secs(10);
const KEEP_ALIVE: Duration = Duration::from_secs(30);
/// How often a call's wait checks that its client is still there.
const CLIENT_CHECK: Duration = Duration::from_millis(100);
/// Refusals being written at once (each reads what its client still sends for a moment, so
/// that the client reads the status, not a reset); past it, a refused connection is closed.
const REFUSING_MAX: usize = 32;

/// What `--http` was given.
pub(crate) struct Options {
    pub(crate) address: String,
    /// Bearer tokens a request must carry one of (none: no authorization asked).
    pub(crate) tokens: Vec<String>,
    /// Host names clients may call this server by, beyond loopback ones (`--allowed-host`).
    pub(crate) hosts: Vec<String>,
}

/// The tokens of `--token-file` (one per line, mode 600), or of `DEBUG_MCP_HTTP_TOKEN` (one per
/// line): blank lines and `#` comments are not tokens, and a file, or a set variable, that
/// holds none is refused rather than serve without authorization.
pub(crate) fn tokens(file: Option<&str>) -> Result<Vec<String>, String> {
    let (text, from) = match file {
        Some(path) => {
            let meta = std::fs::metadata(path).map_err(|e| format!("--token-file {path}: {e}"))?;
            if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o077 != 0 {
                return Err(format!(
                    "--token-file {path} can be read by other users: `chmod 600 {path}` first"
                ));
            }
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("--token-file {path}: {e}"))?;
            (text, format!("--token-file {path}"))
        }
        None => match std::env::var("DEBUG_MCP_HTTP_TOKEN") {
            Ok(text) => (text, "DEBUG_MCP_HTTP_TOKEN".to_string()),
            Err(_) => return Ok(Vec::new()),
        },
    };
    let tokens: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(String::from)
        .collect();
    if tokens.is_empty() {
        return Err(format!(
            "{from} holds no token (blank lines and # comments are not tokens): write one token \
             per line, or give no tokens at all to serve only this user on loopback"
        ));
    }
    Ok(tokens)
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
    if options.tokens.is_empty() && !crate::net::PEERS_KNOWN {
        eprintln!(
            "debug-mcp: warning: this system does not say which user made a connection: any \
             local user may use this server; give --token-file to keep them out"
        );
    }
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
        names: Names::new(address.ip(), options.hosts),
        tokens: options.tokens,
        contexts: Contexts::default(),
        slots: Slots::new(slots::LIMITS),
        next: AtomicU64::new(1),
        stopping: stopping.clone(),
    });
    let refusing = Arc::new(AtomicUsize::new(0));
    let mut handlers: Vec<JoinOnDrop> = Vec::new();
    for stream in listener.incoming() {
        if stopping.load(Ordering::Relaxed) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let Ok(peer) = stream.peer_addr() else { continue };
        handlers.retain(|h| !h.is_finished());
        let Some(number) = shared.slots.admit(&stream, peer.ip()) else {
            if refusing.fetch_add(1, Ordering::SeqCst) < REFUSING_MAX {
                let refusing = refusing.clone();
                handlers.push(JoinOnDrop::spawn("http-refuse", move || {
                    refuse(&stream, 503, "every connection is busy with a call: try again");
                    refusing.fetch_sub(1, Ordering::SeqCst);
                }));
            } else {
                refusing.fetch_sub(1, Ordering::SeqCst);
            }
            continue;
        };
        let shared = shared.clone();
        handlers.push(JoinOnDrop::spawn("http", move || {
            serve_connection(&shared, &stream, number, peer.ip());
            shared.slots.release(number);
        }));
    }
    // Every connection is shut (a request waiting for its answer cancels its call), then the
    // contexts end (their calls cancelled, their sessions ended).
    shared.slots.close_all();
    drop(handlers);
    drop(shared.contexts.take_all());
    signals.wake();
    drop(signal_thread);
    Ok(())
}

struct Shared {
    tokens: Vec<String>,
    names: Names,
    contexts: Contexts,
    slots: Slots,
    next: AtomicU64,
    stopping: Arc<AtomicBool>,
}

fn serve_connection(shared: &Shared, stream: &TcpStream, number: u64, peer: IpAddr) {
    let _ = stream.set_nodelay(true);
    let Ok(reading) = stream.try_clone() else { return };
    // Without tokens, only this user's processes are served: known once, before any request.
    let stranger = match shared.tokens.is_empty() {
        true => crate::net::peer_is_another_user(stream),
        false => None,
    };
    let mut reader = BufReader::new(Reads::new(reading));
    let mut wait = FIRST_WAIT;
    loop {
        if shared.stopping.load(Ordering::Relaxed) || !shared.slots.mark(number, false) {
            return;
        }
        let request = match request::read(&mut reader, wait) {
            Ok(request) => request,
            Err(Refused::Status(status, why)) => return refuse(stream, status, why),
            Err(Refused::Gone) => return,
        };
        wait = KEEP_ALIVE;
        if !shared.slots.mark(number, true) {
            return; // closed to make room meanwhile
        }
        if let Some(why) = &stranger {
            crate::log::info(format_args!("http: refused {peer}: {why}"));
            return refuse(
                stream,
                403,
                "this server has no tokens, so it serves only its own user's processes: ask for \
                 a token (--token-file)",
            );
        }
        let close = request.header("connection").is_some_and(|c| c.eq_ignore_ascii_case("close"));
        match handle(shared, &request, stream) {
            Ok(true) if !close => continue,
            _ => return,
        }
    }
}

/// Answers one request; whether the connection may serve another.
fn handle(shared: &Shared, request: &Request, stream: &TcpStream) -> io::Result<bool> {
    let checked = shared.names.check(request).and_then(|()| match request.method.as_str() {
        "POST" => request::check_post(request),
        _ => Ok(()),
    });
    if let Err(Refused::Status(status, why)) = checked {
        respond(stream, status, &[], why)?;
        return Ok(true);
    }
    let presented = request
        .header("authorization")
        .and_then(|a| a.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    let token = match (shared.tokens.is_empty(), presented) {
        (true, _) => String::new(),
        (false, Some(p)) if shared.tokens.iter().any(|t| request::same(t, p)) => p.to_string(),
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
            match shared.contexts.end_session(id, &token) {
                Some(context) => {
                    drop(context);
                    respond(stream, 204, &[], "")?;
                }
                None => respond(stream, 404, &[], "no such session")?,
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
    // Ended outside any lock: ending a context waits for its calls and sessions.
    let mut evicted = None;
    let context = match (session, method.as_str()) {
        (_, "initialize") => match shared.contexts.start_session(token) {
            Ok(started) => {
                evicted = started.ended;
                headers.push(("Mcp-Session-Id", started.id));
                started.context
            }
            Err(contexts::Full) => {
                let why = format!(
                    "this token's {} sessions each hold a call or a program: end one (DELETE) \
                     first",
                    contexts::HANDSHAKES_PER_TOKEN
                );
                respond(stream, 503, &[], &why)?;
                return Ok(true);
            }
        },
        (Some(id), _) => match shared.contexts.of_session(id, token) {
            Some(context) => context,
            None => {
                respond(stream, 404, &[], "no such session: initialize again")?;
                return Ok(true);
            }
        },
        (None, _) => shared.contexts.of_token(token),
    };
    drop(evicted);
    context.touch(shared.next.fetch_add(1, Ordering::Relaxed));
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
