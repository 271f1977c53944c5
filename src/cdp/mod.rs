//! A Chrome DevTools Protocol client: it speaks the protocol and knows no runtime. What a
//! runtime adds over CDP (how it starts, which events say it waits or ended, its URL form) is
//! the [`runtime::Runtime`] seam; Node (`node/`) is its first implementation.
//!
//! One thread owns the connection (`wire.rs`: a WebSocket, or a browser's pipes; tungstenite
//! has no read/write split, and a mutex around a blocking read would starve writers). It is
//! non-blocking; the thread sleeps in poll(2) on it and on a wake pipe that [`Client::send`]
//! pokes, so a request is written the moment it is queued (a socket read timeout would be
//! rounded up to the kernel tick, ~7 ms per request here). Each turn it writes the queued
//! requests, then reads every message available. Responses are routed to their caller by `id`;
//! events go to one channel in arrival order. When the connection dies every pending request
//! fails at once and the event channel closes, so nothing waits for a timeout that cannot
//! succeed.
//!
//! A browser's pipe reaches the browser itself: its page is a session attached to it
//! (`Target.attachToTarget`, flattened), whose id every request carries and every message of the
//! page comes back with; the client speaks to that page as if connected to it alone.
//!
//! `websocket_url` asks an inspector's HTTP endpoint for its target (`/json/list`).

pub(crate) mod breakpoints;
pub(crate) mod failures;
pub(crate) mod follow;
pub(crate) mod functions;
pub(crate) mod heap;
pub(crate) mod instrument;
pub(crate) mod maps;
pub(crate) mod preview;
pub(crate) mod runtime;
pub(crate) mod script;
pub(crate) mod scripts;
pub(crate) mod session;
pub(crate) mod unhandled;
pub(crate) mod urls;
pub(crate) mod wire;

use std::collections::HashMap;
use std::fmt;
use std::net::TcpStream;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use serde_json::{json, Value};
use tungstenite::protocol::WebSocketConfig;

use crate::thread::JoinOnDrop;
use crate::{log, sys};
use wire::{Pipe, Wire};

/// How long the socket thread sleeps when nothing happens; it wakes earlier for any traffic.
const IDLE_TURN: Duration = Duration::from_secs(1);

/// Node sends each message as one frame, and `scriptParsed` sources can be large.
const MAX_MESSAGE: usize = 512 * 1024 * 1024;

/// A protocol event (`Debugger.paused`, `Runtime.bindingCalled`, ...).
#[derive(Debug)]
pub(crate) struct Event {
    pub(crate) method: String,
    pub(crate) params: Value,
    /// Which target sent it, when several connections share one event channel.
    pub(crate) origin: Origin,
}

/// Where an event came from: a connection (numbered by whoever connected it, 0 unless said),
/// and the session within it when the target is relayed through its parent's (a Node worker
/// thread's, through `NodeWorker`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Origin {
    pub(crate) connection: usize,
    pub(crate) session: Option<String>,
}

/// How a runtime relays the protocol of a target inside another: the request that carries a
/// message to it, and the event that carries its messages back, both with `sessionId` and
/// `message` (the inner message as text). Node's worker threads: `NodeWorker.sendMessageToWorker`
/// and `NodeWorker.receivedMessageFromWorker`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Relay {
    pub(crate) send: &'static str,
    pub(crate) receive: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Error {
    /// The inspector answered with an error.
    Protocol(String),
    /// The connection closed before the answer came.
    Closed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Protocol(message) => write!(f, "the inspector refused: {message}"),
            Error::Closed => write!(f, "the inspector connection closed (the program ended)"),
        }
    }
}

type Reply = Result<Value, Error>;

struct Outgoing {
    id: u64,
    text: String,
    reply: Sender<Reply>,
    /// For a request relayed to an inner session: the session, the inner request's id and the
    /// event its answer arrives in. The outer request's own answer only matters if it fails.
    relayed: Option<(String, u64, &'static str)>,
}

pub(crate) struct Client {
    /// `None` once closed; dropping it tells the socket thread to close the connection.
    outgoing: Option<Sender<Outgoing>>,
    waker: Arc<sys::Waker>,
    events: Receiver<Event>,
    next_id: u64,
    thread: Option<JoinOnDrop>,
    url: String,
    /// The page session every request goes to, over a browser's pipe.
    session: Option<String>,
}

impl Client {
    /// Connects to an inspector WebSocket URL (`ws://host:port/uuid`); its events come on its
    /// own channel.
    pub(crate) fn connect(url: &str, timeout: Duration) -> Result<Client, String> {
        let (events_tx, events) = crossbeam_channel::unbounded();
        Client::connect_into(url, timeout, 0, events_tx, events)
    }

    /// Connects to an inspector whose events go to a channel shared with other connections,
    /// marked with `connection`.
    pub(crate) fn connect_shared(
        url: &str,
        timeout: Duration,
        connection: usize,
        events: &Sender<Event>,
    ) -> Result<Client, String> {
        Client::connect_into(url, timeout, connection, events.clone(), crossbeam_channel::never())
    }

    fn connect_into(
        url: &str,
        timeout: Duration,
        connection: usize,
        events_tx: Sender<Event>,
        events: Receiver<Event>,
    ) -> Result<Client, String> {
        let authority = url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .ok_or_else(|| format!("not an inspector WebSocket URL: {url}"))?;
        let (host, port) = authority
            .rsplit_once(':')
            .and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)))
            .ok_or_else(|| format!("no port in the inspector WebSocket URL {url}"))?;
        let address = crate::net::socket_address(host, port)?;
        let stream = TcpStream::connect_timeout(&address, timeout)
            .map_err(|e| format!("cannot connect to the inspector at {authority}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (socket, _) = tungstenite::client::client_with_config(url, stream, Some(config))
            .map_err(|e| format!("WebSocket handshake with {url} failed: {e}"))?;
        socket.get_ref().set_nonblocking(true).map_err(|e| e.to_string())?;
        let waker = Arc::new(sys::Waker::new().map_err(|e| e.to_string())?);
        let name = format!("cdp-{}", address.port());
        let on = Connection { wire: Wire::Socket(socket), number: connection, session: None };
        Ok(Client::start(on, &name, url, 1, waker, events_tx, events))
    }

    /// Speaks to a browser started with `--remote-debugging-pipe` over our ends of its pipes
    /// (`to` it, `from` it), and attaches to the page `pick` chooses among its targets (`None`
    /// while it has none yet); its events go to `shared`, marked with `connection`, or to a
    /// channel of its own.
    pub(crate) fn over_pipe(
        (to, from): (OwnedFd, OwnedFd),
        pick: impl Fn(&[Value]) -> Option<String>,
        timeout: Duration,
        connection: usize,
        shared: Option<&Sender<Event>>,
    ) -> Result<Client, String> {
        let deadline = Instant::now() + timeout;
        let mut wire = Wire::Pipe(Pipe::new(to, from));
        let waker = Arc::new(sys::Waker::new().map_err(|e| e.to_string())?);
        let mut next_id = 1;
        let target = loop {
            let targets = exchange(
                &mut wire,
                &waker,
                &mut next_id,
                "Target.getTargets",
                json!({}),
                deadline,
            )?;
            let infos = targets["targetInfos"].as_array().cloned().unwrap_or_default();
            if let Some(target) = pick(&infos) {
                break target;
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the browser opened no page within {} ms",
                    timeout.as_millis()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let attach = json!({"targetId": target, "flatten": true});
        let attached =
            exchange(&mut wire, &waker, &mut next_id, "Target.attachToTarget", attach, deadline)?;
        let session = attached["sessionId"].as_str().map(String::from);
        let session = session.ok_or("the browser attached to its page without a session")?;
        let on = Connection { wire, number: connection, session: Some(session) };
        let (events_tx, events) = match shared {
            Some(shared) => (shared.clone(), crossbeam_channel::never()),
            None => crossbeam_channel::unbounded(),
        };
        let url = "the browser's pipe";
        Ok(Client::start(on, "cdp-pipe", url, next_id, waker, events_tx, events))
    }

    fn start(
        connection: Connection,
        name: &str,
        url: &str,
        next_id: u64,
        waker: Arc<sys::Waker>,
        events_tx: Sender<Event>,
        events: Receiver<Event>,
    ) -> Client {
        let (outgoing_tx, outgoing_rx) = crossbeam_channel::unbounded();
        let session = connection.session.clone();
        let thread = JoinOnDrop::spawn(name, {
            let waker = waker.clone();
            move || pump(connection, &outgoing_rx, &waker, &events_tx)
        });
        let outgoing = Some(outgoing_tx);
        let url = url.to_string();
        Client { outgoing, waker, events, next_id, thread: Some(thread), url, session }
    }

    /// The WebSocket URL connected to.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Events in arrival order; the channel disconnects when the connection is gone.
    pub(crate) fn events(&self) -> &Receiver<Event> {
        &self.events
    }

    /// Queues a request and returns where its answer will arrive.
    pub(crate) fn send(&mut self, method: &str, params: Value) -> Receiver<Reply> {
        self.send_to(None, method, params)
    }

    /// Queues a request to the connection's own target (`None`) or, through `relay`, to an inner
    /// session of it; returns where its answer will arrive.
    pub(crate) fn send_to(
        &mut self,
        inner: Option<(Relay, &str)>,
        method: &str,
        params: Value,
    ) -> Receiver<Reply> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"id": id, "method": method, "params": params});
        let (mut outer, relayed) = match inner {
            None => (message, None),
            Some((relay, session)) => {
                let params = json!({"sessionId": session, "message": message.to_string()});
                let outer = json!({"id": id, "method": relay.send, "params": params});
                (outer, Some((session.to_string(), id, relay.receive)))
            }
        };
        if let Some(session) = &self.session {
            outer["sessionId"] = session.as_str().into();
        }
        let text = outer.to_string();
        let queued = match &self.outgoing {
            Some(outgoing) => {
                outgoing.send(Outgoing { id, text, reply, relayed }).map_err(|e| e.0.reply)
            }
            None => Err(reply),
        };
        match queued {
            Ok(()) => self.waker.wake(),
            Err(reply) => {
                let _ = reply.send(Err(Error::Closed));
            }
        }
        answer
    }

    /// Closes the connection (Node then finishes exiting) and joins the socket thread.
    pub(crate) fn close(&mut self) {
        self.outgoing.take();
        self.waker.wake();
        self.thread.take();
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.close();
    }
}

/// One connection as its thread owns it: what it travels on, its number on a shared event
/// channel, and the page session its messages are for (over a browser's pipe).
struct Connection {
    wire: Wire,
    number: usize,
    session: Option<String>,
}

/// The connection's thread: write what is queued, read what arrived, sleep until either side
/// has more, until either side closes.
fn pump(
    mut on: Connection,
    outgoing: &Receiver<Outgoing>,
    waker: &sys::Waker,
    events: &Sender<Event>,
) {
    let mut pending = Pending::default();
    let reason = 'run: loop {
        loop {
            match outgoing.try_recv() {
                Ok(mut request) => {
                    if log::enabled_debug() {
                        log::debug(format_args!("cdp -> {}", log::clip(&request.text)));
                    }
                    if let Err(e) = on.wire.send(std::mem::take(&mut request.text)) {
                        let _ = request.reply.send(Err(Error::Closed));
                        break 'run e;
                    }
                    pending.add(request);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    on.wire.close();
                    break 'run "closed by us".to_string();
                }
            }
        }
        let want_write = match on.wire.flush() {
            Ok(want) => want,
            Err(e) => break e,
        };
        // Read everything there is: tungstenite may hold several messages from one segment in
        // its buffer, which poll(2) cannot see.
        loop {
            match on.wire.receive() {
                Ok(Some(text)) => {
                    let origin = Origin { connection: on.number, session: None };
                    route(&text, &mut pending, events, origin, on.session.as_deref());
                }
                Ok(None) => break,
                Err(e) => break 'run e,
            }
        }
        if let Err(e) = on.wire.wait(want_write, waker, IDLE_TURN) {
            break format!("poll failed: {e}");
        }
    };
    log::debug(format_args!("cdp connection ended: {reason}"));
    let inner = pending.inner.into_values();
    for reply in pending.direct.into_values().chain(inner) {
        let _ = reply.send(Err(Error::Closed));
    }
}

/// One request and its answer over `wire` before its thread starts (a browser's pipe, while
/// the page is found and attached to): other messages are dropped.
fn exchange(
    wire: &mut Wire,
    waker: &sys::Waker,
    next_id: &mut u64,
    method: &str,
    params: Value,
    deadline: Instant,
) -> Result<Value, String> {
    let id = *next_id;
    *next_id += 1;
    wire.send(json!({"id": id, "method": method, "params": params}).to_string())?;
    loop {
        let want_write = wire.flush()?;
        while let Some(text) = wire.receive()? {
            let Ok(message) = serde_json::from_str::<Value>(&text) else { continue };
            if message["id"] != id {
                continue;
            }
            if let Some(error) = message.get("error") {
                let why = error["message"].as_str().unwrap_or("unknown error");
                return Err(format!("the browser refused {method}: {why}"));
            }
            return Ok(message["result"].clone());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("the browser did not answer {method} in time"));
        }
        wire.wait(want_write, waker, left).map_err(|e| format!("poll failed: {e}"))?;
    }
}

/// Requests waiting for their answers: by id, and by session and inner id for relayed ones.
#[derive(Default)]
struct Pending {
    direct: HashMap<u64, Sender<Reply>>,
    inner: HashMap<(String, u64), Sender<Reply>>,
    /// The relay event names seen in requests (a relayed answer is recognised by them).
    relays: Vec<&'static str>,
}

impl Pending {
    fn add(&mut self, request: Outgoing) {
        match request.relayed {
            None => {
                self.direct.insert(request.id, request.reply);
            }
            Some((session, id, receive)) => {
                // The outer request's answer is dropped; if it fails, the inner one never
                // comes: the caller's deadline covers that (the target is gone).
                self.inner.insert((session, id), request.reply);
                if !self.relays.contains(&receive) {
                    self.relays.push(receive);
                }
            }
        }
    }
}

/// Hands a message to the request it answers, or to the event channel. Over a browser's pipe
/// (`page`: the page's session) only the page's events are the connection's; the browser's
/// own are dropped.
fn route(
    text: &str,
    pending: &mut Pending,
    events: &Sender<Event>,
    origin: Origin,
    page: Option<&str>,
) {
    if log::enabled_debug() {
        log::debug(format_args!("cdp <- {}", log::clip(text)));
    }
    let Ok(mut message) = serde_json::from_str::<Value>(text) else {
        log::warn(format_args!("unreadable inspector message: {}", log::clip(text)));
        return;
    };
    if page.is_some() && message.get("id").is_none() && message["sessionId"].as_str() != page {
        return;
    }
    let reply = |message: &mut Value, reply: Sender<Reply>| {
        let answer = match message.get_mut("error") {
            Some(error) => Err(Error::Protocol(
                error.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_string(),
            )),
            None => Ok(message.get_mut("result").map(Value::take).unwrap_or(Value::Null)),
        };
        let _ = reply.send(answer);
    };
    if let Some(id) = message.get("id").and_then(Value::as_u64) {
        if let Some(sender) = pending.direct.remove(&id) {
            reply(&mut message, sender);
        }
        return;
    }
    let Some(Value::String(method)) = message.get_mut("method").map(Value::take) else { return };
    let mut params = message.get_mut("params").map(Value::take).unwrap_or(Value::Null);
    if origin.session.is_none() && pending.relays.contains(&method.as_str()) {
        let session = params["sessionId"].as_str().unwrap_or_default().to_string();
        let Value::String(inner) = params["message"].take() else { return };
        let Ok(mut inner) = serde_json::from_str::<Value>(&inner) else { return };
        if let Some(id) = inner.get("id").and_then(Value::as_u64) {
            if let Some(sender) = pending.inner.remove(&(session, id)) {
                reply(&mut inner, sender);
            }
            return;
        }
        let Some(Value::String(method)) = inner.get_mut("method").map(Value::take) else {
            return;
        };
        let params = inner.get_mut("params").map(Value::take).unwrap_or(Value::Null);
        let origin = Origin { connection: origin.connection, session: Some(session) };
        let _ = events.send(Event { method, params, origin });
        return;
    }
    let _ = events.send(Event { method, params, origin });
}

/// GETs `path` (`/json/list`) from the HTTP server on `host:port`: an inspector's endpoint, or
/// the server of a page whose source map is fetched. The body as text, at most `limit` bytes.
/// Node keeps the connection open after answering; ureq reads the body by its Content-Length.
pub(crate) fn http_get(
    host: &str,
    port: u16,
    path: &str,
    timeout: Duration,
    limit: u64,
) -> Result<String, String> {
    let authority = format!("{host}:{port}");
    // The address, not the name, goes to ureq: see `socket_address`.
    let address = crate::net::socket_address(host, port)?;
    // Never through a proxy from the environment: the server is on this machine or on a host
    // the user allowed by name.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .proxy(None)
        .max_redirects(0)
        .build()
        .into();
    let url = format!("http://{address}{path}");
    agent
        .get(&url)
        .call()
        .and_then(|mut response| response.body_mut().with_config().limit(limit).read_to_string())
        .map_err(|e| match e {
            ureq::Error::Io(e) => format!("nothing answers on {authority} ({e})"),
            ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => {
                format!("nothing answers on {authority} ({e})")
            }
            e => format!("{authority} did not answer GET {path} ({e})"),
        })
}

/// An inspector's `/json/list` or `/json/version` answer, as JSON.
pub(crate) fn inspector_json(
    host: &str,
    port: u16,
    what: &str,
    timeout: Duration,
) -> Result<Value, String> {
    let authority = format!("{host}:{port}");
    let body =
        http_get(host, port, &format!("/json/{what}"), timeout, 1 << 20).map_err(|e| {
            match e.strip_prefix("nothing answers") {
                Some(rest) => format!("no inspector answers{rest}"),
                None => format!("{authority} does not answer like an inspector ({e})"),
            }
        })?;
    serde_json::from_str(&body)
        .map_err(|_| format!("{authority} does not answer like an inspector (/json/{what})"))
}

/// Asks an inspector's HTTP endpoint (`GET /json/list`) for its first target's WebSocket URL.
pub(crate) fn websocket_url(host: &str, port: u16, timeout: Duration) -> Result<String, String> {
    let targets = inspector_json(host, port, "list", timeout)?;
    targets
        .pointer("/0/webSocketDebuggerUrl")
        .and_then(serde_json::Value::as_str)
        .map(String::from)
        .ok_or_else(|| format!("the inspector on {host}:{port} lists no target"))
}
