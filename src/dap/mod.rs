//! A Debug Adapter Protocol client over a debug adapter's stdin and stdout (an adapter we
//! start), over a TCP connection (one the program started, as `python -m debugpy --listen`), or
//! over a Unix socket (debug-mcp's own Python debugger, which runs in the program).
//!
//! Messages are `Content-Length: N\r\n\r\n` + N bytes of JSON. A reader thread owns the
//! adapter's output: it routes responses to their request by `request_seq` and sends events
//! (and the adapter's rare reverse requests) to one channel in arrival order. Requests are
//! written by the caller, who owns the adapter's input. When the adapter's output closes, every
//! pending request fails at once and the event channel closes.
//!
//! The client knows no adapter: what one adds over DAP is the [`flavour::Flavour`] seam, which
//! debugpy (`python/`) implements. `session.rs` is the session backend and `script.rs` the
//! `debug-script` collector for any flavour.

pub(crate) mod failures;
pub(crate) mod flavour;
pub(crate) mod script;
pub(crate) mod session;
pub(crate) mod values;

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::process::{ChildStdin, ChildStdout};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Value};

use crate::debugger::{Code, Failure};
use crate::log;
use crate::thread::JoinOnDrop;

/// Routes an `output` event: the program's stdout and stderr go to `output`; a logpoint's
/// message (as the flavour tells them apart) is returned; the adapter's own messages among
/// the program's output are left out.
pub(crate) fn route_output<'a, F: flavour::Flavour>(
    flavour: &F,
    body: &'a Value,
    output: &mut crate::process::Output,
) -> Option<&'a str> {
    let text = body["output"].as_str().unwrap_or_default();
    match body["category"].as_str().unwrap_or("console") {
        _ if flavour.is_logpoint_output(body) => return Some(text),
        _ if flavour.is_adapter_message(text) => {}
        "stdout" => output.push(false, &flavour.program_text(text)),
        "stderr" => output.push(true, &flavour.program_text(text)),
        _ => {}
    }
    None
}

/// A `stackTrace` answer's frames as the program knows them: the adapter's start-up frames at
/// the bottom left out (debugpy's runpy, the C runtime's, Go's) and function names as the
/// source spells them (Rust's hash suffixes left out).
pub(crate) fn program_frames<F: flavour::Flavour>(flavour: &F, trace: &Value) -> Vec<Value> {
    let mut frames = trace["stackFrames"].as_array().cloned().unwrap_or_default();
    while frames.len() > 1 && frames.last().is_some_and(|f| flavour.is_startup_frame(f)) {
        frames.pop();
    }
    for frame in &mut frames {
        let name = frame["name"].as_str().unwrap_or_default();
        let shown = flavour.function_name(name);
        if shown != name {
            frame["name"] = shown.into_owned().into();
        }
    }
    frames
}

/// The signal a `stopped` event's program stopped at (lldb's `signal SIGABRT`), if it did.
pub(crate) fn stop_signal(body: &Value) -> Option<i32> {
    let signal = body["description"].as_str()?.strip_prefix("signal ")?;
    (body["reason"] == "exception").then(|| crate::sys::signal_number(signal)).flatten()
}

/// How a program ended, from the exit code its adapter said: lldb says a program killed by a
/// signal it stopped at (`fatal`) as an exit code of the signal's number.
pub(crate) fn exit_of(code: Option<i32>, fatal: Option<i32>) -> crate::process::Exit {
    match code {
        Some(code) if fatal == Some(code) => {
            crate::process::Exit { code: None, signal: Some(code) }
        }
        code => crate::process::Exit { code, signal: None },
    }
}

/// An `evaluate` the adapter refused, as a probe would report it: `{type: "error", value}`
/// with the adapter's own words (lldb-dap's `error: ` prefix left out).
pub(crate) fn evaluation_error<F: flavour::Flavour>(flavour: &F, message: &str) -> Value {
    let message = message.split_once(": ").map_or(message, |(_, m)| m);
    json!({"type": "error", "value": flavour.evaluation_failed(message.trim())})
}

/// Members of a structured value, listed at most, one level down.
pub(crate) const MEMBERS: usize = 100;

/// A value an adapter answered itself, without a probe (an `evaluate` answer's `result` and
/// `type`, or a variable's `value` and `type`), as `{type, value}`: the text typed by the
/// flavour (numbers, booleans, strings) or, for a structure whose text is only a summary
/// (`size=2`, `main.Order {...}`, an address), its members one level down: an array when
/// they are `[0]`, `[1]`, …, else an object. `members` lists a reference's variables.
pub(crate) fn typed<F: flavour::Flavour>(
    flavour: &F,
    answer: &Value,
    members: impl FnOnce(&Value) -> Vec<Value>,
) -> Value {
    let text = answer.get("result").or(answer.get("value")).and_then(Value::as_str);
    let text = text.unwrap_or_default();
    let kind = answer["type"].as_str().unwrap_or_default();
    let value = flavour.value(kind, text);
    let structured = answer["variablesReference"].as_i64().is_some_and(|r| r > 0);
    if !structured || !flavour.summary_only(kind, text) {
        return json!({"type": kind, "value": value});
    }
    let listed = members(&answer["variablesReference"]);
    let typed_member = |m: &Value| {
        let text = m["value"].as_str().unwrap_or_default();
        flavour.value(m["type"].as_str().unwrap_or_default(), text)
    };
    let indexed = !listed.is_empty()
        && listed.iter().all(|m| m["name"].as_str().is_some_and(|n| n.starts_with('[')));
    let value = if indexed {
        Value::Array(listed.iter().take(MEMBERS).map(typed_member).collect())
    } else {
        let members = listed.iter().take(MEMBERS);
        Value::Object(
            members
                .map(|m| (m["name"].as_str().unwrap_or_default().to_string(), typed_member(m)))
                .collect(),
        )
    };
    let mut typed = json!({"type": kind, "value": value});
    if listed.len() > MEMBERS {
        typed["truncated"] = true.into();
    }
    typed
}

/// The program's process group, from a `process` event.
pub(crate) fn process_group(body: &Value) -> Option<crate::sys::ProcessGroup> {
    let pid = body["systemProcessId"].as_u64().and_then(|p| u32::try_from(p).ok())?;
    Some(crate::sys::ProcessGroup::of(pid))
}

/// A child process of the program, debugged in a session of its own with the same adapter (a
/// debugpy `subProcess` offer); its events carry `"connection": n` on a shared channel.
pub(crate) struct Child {
    pub(crate) client: Client,
    pub(crate) pid: Option<u32>,
    /// Its command line, read when it said its pid.
    pub(crate) command: String,
    /// Until its session said it ended.
    pub(crate) open: bool,
}

impl Child {
    /// Opens the session of an offered child (`initialize`, then `attach`, answered after
    /// `configurationDone`); `None` when it cannot be reached (it then runs undebugged).
    pub(crate) fn follow<F: flavour::Flavour>(
        flavour: &F,
        offered: flavour::Offered,
        connection: usize,
        events: &Sender<Value>,
        timeout: Duration,
    ) -> Option<Child> {
        let client = Client::connect_shared(offered.address, timeout, connection, events)
            .inspect_err(|e| log::warn(format_args!("cannot follow a child process: {e}")))
            .ok()?;
        Some(Child::open(flavour, client, offered.arguments))
    }

    /// A child's session on its client: `initialize`, then `attach` with `arguments`.
    pub(crate) fn open<F: flavour::Flavour>(
        flavour: &F,
        mut client: Client,
        arguments: Value,
    ) -> Child {
        drop(client.send("initialize", initialize_arguments(flavour.adapter())));
        drop(client.send("attach", arguments));
        Child { client, pid: None, command: String::new(), open: true }
    }

    /// At its `initialized` event: its breakpoints (`setBreakpoints` arguments, a file each)
    /// and exception filters, then `configurationDone`. Answers are not waited for: where
    /// breakpoints land is the program's to say.
    pub(crate) fn configure(&mut self, breakpoints: Vec<Value>, filters: Value) {
        for list in breakpoints {
            drop(self.client.send("setBreakpoints", list));
        }
        drop(self.client.send("setExceptionBreakpoints", json!({"filters": filters})));
        drop(self.client.send("configurationDone", json!({})));
    }

    /// Its `process` event: its pid, and its command line as the program ran it.
    pub(crate) fn said_process<F: flavour::Flavour>(&mut self, flavour: &F, body: &Value) {
        self.pid = body["systemProcessId"].as_u64().and_then(|p| u32::try_from(p).ok());
        let process = self.pid.and_then(crate::sys::Process::now);
        self.command = process.map(|p| flavour.command_shown(&p.command())).unwrap_or_default();
    }

    /// As answers list it, its parent found among `seen` (the program's descendants); `None`
    /// before it said its pid.
    pub(crate) fn debugged<'a>(
        &'a self,
        seen: &[crate::process::Descendant],
    ) -> Option<crate::debugger::script::Debugged<'a>> {
        let pid = self.pid?;
        let parent = seen.iter().find(|d| d.process.pid == pid).map(|d| d.parent);
        let threads = Vec::new();
        Some(crate::debugger::script::Debugged {
            pid,
            command: &self.command,
            parent,
            hits: None,
            threads,
        })
    }

    /// Its session ended.
    pub(crate) fn ended(&mut self) {
        self.open = false;
        self.client.close_input();
    }
}

/// The arguments of our `initialize` request to adapter `adapter_id`.
pub(crate) fn initialize_arguments(adapter_id: &str) -> Value {
    json!({"clientID": "debug-mcp", "clientName": "debug-mcp", "adapterID": adapter_id, "pathFormat": "path",
           "linesStartAt1": true, "columnsStartAt1": true, "supportsVariableType": true})
}

/// A response: its `body` when `success`, else the adapter's message.
pub(crate) type Reply = Result<Value, String>;

/// The exit code an adapter says only as it answers `disconnect` (Delve: `Process N has
/// exited with status S`, after `terminated`): disconnects, then reads the events that came.
pub(crate) fn exit_said_at_disconnect<F: flavour::Flavour>(
    flavour: &F,
    client: &mut Client,
) -> Option<i32> {
    client.disconnect(false);
    let mut code = None;
    while let Ok(event) = client.events().try_recv() {
        if event["event"] == "output" {
            code = code.or(flavour.exit_said(&event["body"]));
        }
    }
    code
}

/// What an adapter says while it gets the program ready, before `initialized`: the text of
/// its `output` events (Delve's `Build Error: …`), kept to explain a launch it refuses.
#[derive(Default)]
pub(crate) struct Said(String);

impl Said {
    /// Keeps an event's text if it is an `output` event.
    pub(crate) fn hear(&mut self, event: &Value) {
        if event["event"] != "output" || event["body"]["category"] == "telemetry" {
            return;
        }
        if let Some(text) = event["body"]["output"].as_str() {
            self.0.push_str(text);
        }
    }

    /// Keeps the text of the `output` events already received: a refused `launch` may be
    /// answered while what explains it (Delve's build error, said on its debug console) waits
    /// in the event channel, and `select!` may take either first.
    pub(crate) fn hear_waiting(&mut self, events: &Receiver<Value>) -> &Self {
        for event in events.try_iter() {
            self.hear(&event);
        }
        self
    }

    /// The failure of a `launch` the adapter refused with `message`, in its own words too.
    pub(crate) fn launch_failed(&self, adapter: &str, message: &str) -> Failure {
        let said = crate::debugger::limits::clip(self.0.trim(), 2000);
        let message = match said.is_empty() || message.contains(said.as_str()) {
            true => message.to_string(),
            false => format!("{message}. {adapter} said: {said}"),
        };
        Failure::new(
            Code::LaunchFailed,
            format!("{adapter} could not launch the program: {message}"),
        )
    }
}

/// A reply channel that holds an answer already received.
pub(crate) fn answered(body: Value) -> Receiver<Reply> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    tx.send(Ok(body)).expect("the receiver is here");
    rx
}

type Pending = Arc<Mutex<HashMap<u64, Sender<Reply>>>>;

pub(crate) struct Client {
    input: Option<Box<dyn Write + Send>>,
    /// The connection, when the adapter is reached over a socket: shutting it down ends the
    /// reader.
    socket: Option<Socket>,
    seq: u64,
    pending: Pending,
    events: Receiver<Value>,
    noise: Noise,
    reader: Option<JoinOnDrop>,
}

impl Client {
    /// A client on the pipes of an adapter we started.
    pub(crate) fn new(stdin: ChildStdin, stdout: ChildStdout) -> Client {
        Client::start(Box::new(stdin), stdout, None)
    }

    /// A client on a connection to an adapter that listens (`python -m debugpy --listen`).
    pub(crate) fn connect(address: std::net::SocketAddr, timeout: Duration) -> io::Result<Client> {
        let (socket, output) = Client::dial(address, timeout)?;
        Ok(Client::start(Box::new(socket.try_clone()?), output, Some(Socket::Tcp(socket))))
    }

    /// A client on a TCP connection the adapter made to us (Delve's `--client-addr`).
    pub(crate) fn over_tcp(socket: TcpStream) -> io::Result<Client> {
        socket.set_nodelay(true)?;
        crate::sys::quick_ack(&socket);
        let output = QuickAck(socket.try_clone()?);
        Ok(Client::start(Box::new(socket.try_clone()?), output, Some(Socket::Tcp(socket))))
    }

    /// A client on a Unix socket connection the adapter made to us; with `shared`, a child's,
    /// whose events go to a shared channel carrying `"connection": n` (as `connect_shared`).
    pub(crate) fn over_unix(
        stream: UnixStream,
        shared: Option<(Sender<Value>, usize)>,
    ) -> io::Result<Client> {
        let input = Box::new(stream.try_clone()?);
        let output = stream.try_clone()?;
        Ok(Client::start_with(input, output, Some(Socket::Unix(stream)), shared))
    }

    /// A client on another connection to an adapter (a child process's session), whose events
    /// go to a channel shared with other connections, each carrying `"connection": connection`.
    pub(crate) fn connect_shared(
        address: std::net::SocketAddr,
        timeout: Duration,
        connection: usize,
        events: &Sender<Value>,
    ) -> io::Result<Client> {
        let (socket, output) = Client::dial(address, timeout)?;
        let input = Box::new(socket.try_clone()?);
        let shared = Some((events.clone(), connection));
        Ok(Client::start_with(input, output, Some(Socket::Tcp(socket)), shared))
    }

    fn dial(address: std::net::SocketAddr, timeout: Duration) -> io::Result<(TcpStream, QuickAck)> {
        let socket = TcpStream::connect_timeout(&address, timeout)?;
        socket.set_nodelay(true)?;
        crate::sys::quick_ack(&socket);
        let output = QuickAck(socket.try_clone()?);
        Ok((socket, output))
    }

    fn start(
        input: Box<dyn Write + Send>,
        output: impl Read + Send + 'static,
        socket: Option<Socket>,
    ) -> Client {
        Client::start_with(input, output, socket, None)
    }

    fn start_with(
        input: Box<dyn Write + Send>,
        output: impl Read + Send + 'static,
        socket: Option<Socket>,
        shared: Option<(Sender<Value>, usize)>,
    ) -> Client {
        let pending: Pending = Arc::default();
        let noise: Noise = Arc::default();
        let (events_tx, events, tag) = match shared {
            Some((events_tx, connection)) => {
                (events_tx, crossbeam_channel::never(), Some(connection))
            }
            None => {
                let (events_tx, events) = crossbeam_channel::unbounded();
                (events_tx, events, None)
            }
        };
        let reader = JoinOnDrop::spawn("dap-reader", {
            let (pending, noise) = (pending.clone(), noise.clone());
            move || read_messages(output, &pending, &events_tx, &noise, tag)
        });
        let input = Some(input);
        Client { input, socket, seq: 0, pending, events, noise, reader: Some(reader) }
    }

    /// What the adapter wrote that is not DAP (empty for a well-behaved adapter), once its
    /// output has been read to the end (for an adapter that has ended: half a second at most).
    pub(crate) fn noise(&self) -> String {
        let deadline = std::time::Instant::now() + Duration::from_millis(500);
        while self.reader.as_ref().is_some_and(|r| !r.is_finished())
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        self.noise.lock().expect("noise poisoned").trim_end().to_string()
    }

    /// Events (and reverse requests) in arrival order; disconnects when the adapter is gone.
    pub(crate) fn events(&self) -> &Receiver<Value> {
        &self.events
    }

    /// Sends a request; its answer arrives on the returned channel.
    pub(crate) fn send(&mut self, command: &str, arguments: Value) -> Receiver<Reply> {
        self.seq += 1;
        let (reply_tx, reply) = crossbeam_channel::bounded(1);
        self.pending.lock().expect("pending poisoned").insert(self.seq, reply_tx);
        let message =
            json!({"seq": self.seq, "type": "request", "command": command, "arguments": arguments});
        if let Err(e) = self.write(&message) {
            if let Some(tx) = self.pending.lock().expect("pending poisoned").remove(&self.seq) {
                let _ = tx.send(Err(format!("the debug adapter is gone ({e})")));
            }
        }
        reply
    }

    /// Asks the adapter to end the program (and its launcher) or, not `terminate`, to let it
    /// run on, waiting half a second at most. The adapter itself stays (debugpy #672): the
    /// caller closes its input and, when it started it, kills it.
    pub(crate) fn disconnect(&mut self, terminate: bool) {
        let disconnect = self.send("disconnect", json!({"terminateDebuggee": terminate}));
        let _ = disconnect.recv_timeout(std::time::Duration::from_millis(500));
    }

    /// Answers a reverse request (we declare none, so refuse any).
    pub(crate) fn refuse(&mut self, request: &Value) {
        self.seq += 1;
        let message = json!({"seq": self.seq, "type": "response", "request_seq": request["seq"],
            "command": request["command"], "success": false, "message": "not supported"});
        let _ = self.write(&message);
    }

    fn write(&mut self, message: &Value) -> io::Result<()> {
        let body = message.to_string();
        if log::enabled_debug() {
            log::debug(format_args!("dap -> {}", log::clip(&body)));
        }
        let input = self.input.as_mut().ok_or_else(|| io::Error::other("closed"))?;
        input.write_all(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes())?;
        input.flush()
    }

    /// Closes the adapter's input: debugpy's adapter exits when its stdin closes; a connection
    /// is shut down, which also ends the reader.
    pub(crate) fn close_input(&mut self) {
        self.input.take();
        match &self.socket {
            Some(Socket::Tcp(socket)) => drop(socket.shutdown(Shutdown::Both)),
            Some(Socket::Unix(socket)) => drop(socket.shutdown(Shutdown::Both)),
            None => {}
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.close_input();
        // The reader ends when the adapter's output closes: the owner of an adapter process
        // kills it first.
        self.reader.take();
    }
}

/// A connection to the adapter.
enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// A connection read with TCP_QUICKACK set again after every read. debugpy's adapter lacks
/// TCP_NODELAY towards its clients, so its second small write in a row (a response, then an
/// event) waits for our ACK, which the kernel delays by up to 40 ms: measured, every attached
/// continue and step took 48 ms without this.
struct QuickAck(TcpStream);

impl Read for QuickAck {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.read(buf)?;
        crate::sys::quick_ack(&self.0);
        Ok(n)
    }
}

fn read_messages(
    output: impl Read,
    pending: &Pending,
    events: &Sender<Value>,
    noise: &Noise,
    tag: Option<usize>,
) {
    let mut reader = BufReader::new(output);
    loop {
        match read_message(&mut reader, noise) {
            Ok(Some(mut message)) => {
                if let Some(connection) = tag {
                    message["connection"] = connection.into();
                }
                route(message, pending, events);
            }
            Ok(None) => break,
            Err(e) => {
                log::warn(format_args!("reading the debug adapter: {e}"));
                break;
            }
        }
    }
    for (_, reply) in pending.lock().expect("pending poisoned").drain() {
        let _ = reply.send(Err("the debug adapter closed its connection".into()));
    }
    // A child's session whose connection closed has ended, whether or not it said so.
    if let Some(connection) = tag {
        let ended = json!({"type": "event", "event": "terminated", "connection": connection});
        let _ = events.send(ended);
    }
}

/// What the adapter wrote on its protocol channel that is not DAP (a program that is not an
/// adapter at all, a banner): kept, up to [`NOISE_BYTES`], to say why the adapter failed.
type Noise = Arc<Mutex<String>>;
const NOISE_BYTES: usize = 4096;

/// One framed message, or `None` at end of stream. Lines before a header block that are not
/// headers are kept in `noise` and passed over.
fn read_message(reader: &mut impl BufRead, noise: &Noise) -> io::Result<Option<Value>> {
    let mut length = None;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            keep_noise(noise, &headers);
            return Ok(None);
        }
        let line = line.trim_end();
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            keep_noise(noise, &headers);
            headers.clear();
            continue;
        }
        match line.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                length = value.trim().parse::<usize>().ok();
            }
            _ => headers.push(line.to_string()),
        }
    }
    let length = length.ok_or_else(|| io::Error::other("a message without Content-Length"))?;
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    if log::enabled_debug() {
        log::debug(format_args!("dap <- {}", log::clip(&String::from_utf8_lossy(&body))));
    }
    serde_json::from_slice(&body).map(Some).map_err(io::Error::other)
}

fn keep_noise(noise: &Noise, lines: &[String]) {
    let mut noise = noise.lock().expect("noise poisoned");
    for line in lines {
        if noise.len() + line.len() < NOISE_BYTES {
            noise.push_str(line);
            noise.push('\n');
        }
    }
}

fn route(message: Value, pending: &Pending, events: &Sender<Value>) {
    if message["type"] == "response" {
        let seq = message["request_seq"].as_u64().unwrap_or(0);
        if let Some(reply) = pending.lock().expect("pending poisoned").remove(&seq) {
            let answer = if message["success"] == true {
                Ok(message.get("body").cloned().unwrap_or(Value::Null))
            } else {
                // Delve's `message` is only the kind ("Unable to evaluate expression"), its
                // `error.format` the whole of it (with no `{variables}` to fill in).
                let format = message.pointer("/body/error/format").and_then(Value::as_str);
                let said = message["message"].as_str().unwrap_or("the request failed");
                Err(format
                    .filter(|f| f.starts_with(said) && !f.contains('{'))
                    .unwrap_or(said)
                    .to_string())
            };
            let _ = reply.send(answer);
        }
    } else {
        let _ = events.send(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_framed_messages() {
        let input =
            b"Content-Length: 10\r\n\r\n{\"seq\": 1}content-length:2\r\nX-Other: y\r\n\r\n{}";
        let noise = Noise::default();
        let mut reader = BufReader::new(&input[..]);
        assert_eq!(read_message(&mut reader, &noise).unwrap(), Some(json!({"seq": 1})));
        assert_eq!(read_message(&mut reader, &noise).unwrap(), Some(json!({})));
        assert_eq!(read_message(&mut reader, &noise).unwrap(), None);
        assert_eq!(*noise.lock().unwrap(), "");
        // A program that is not an adapter: its words are kept, and the stream just ends.
        let noise = Noise::default();
        let mut reader = BufReader::new(&b"ERROR: usage: pytest\n\nbad: 1\n"[..]);
        assert_eq!(read_message(&mut reader, &noise).unwrap(), None);
        assert_eq!(*noise.lock().unwrap(), "ERROR: usage: pytest\nbad: 1\n");
    }
}
