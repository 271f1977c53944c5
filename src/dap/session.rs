//! One interactive debug session with a Python program, through debugpy: the same commands
//! and stop states as a Node session (`cdp/session.rs`), spoken in DAP.
//!
//! A launched session's thread owns the adapter (spawned here, so it dies with this thread)
//! and the program's process group (from the `process` event). An attached session
//! (`python -m debugpy --listen`) owns neither: it detaches, and the program runs on. A call
//! that waits parks its reply until the next `stopped`, the program's end or its deadline. Breakpoints are kept per file, since DAP's
//! `setBreakpoints` replaces a file's whole list. Values go through the same probe as
//! `debug-script` (`probe.py`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{never, select, Receiver, Sender};
use serde_json::{json, Value};

use crate::cdp::session::{
    clip, run_session, source_lines, Action, AttachSpec, BreakpointSpec, Command, Console,
    LaunchSpec, Reply, Serve, VariablesQuery, MAX_LOCALS,
};
use crate::dap::{self, python, Client};
use crate::debugger::{Code, Failure};
use crate::log;
use crate::process::{self, Debuggee};
use crate::sessions::{Clocks, Handle, Watch};
use crate::sys;
use crate::tools::script::Undebugged;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const STACK_LEVELS: u64 = 50;

pub(crate) fn launch(
    id: &str,
    spec: LaunchSpec,
    watch: Arc<Watch>,
    cancel: &Receiver<()>,
) -> Result<(Handle, Value), Failure> {
    run_session(id, cancel, move |id, summary, _| start(id, spec, summary, watch))
}

/// Connects to what listens at `address` and says `initialize`: the client when a debug
/// adapter answers (`python -m debugpy --listen`), `None` when it does not speak DAP. Node's
/// inspector answers with an HTTP error, which ends the connection at once. (The other way
/// round would harm: after an HTTP request debugpy's adapter accepts no other client.)
pub(crate) fn connect(
    address: std::net::SocketAddr,
    cancel: &Receiver<()>,
) -> Result<Option<Client>, Failure> {
    let mut client = Client::connect(address, REQUEST_TIMEOUT).map_err(|e| {
        Failure::new(
            Code::NoInspector,
            format!(
                "no debugger answers on {address} ({e}): start the program with \
                 `node --inspect={port} app.js` or `python -m debugpy --listen {port} app.py`",
                port = address.port()
            ),
        )
    })?;
    let initialize = client.send("initialize", dap::initialize_arguments());
    select! {
        recv(initialize) -> answer => Ok(matches!(answer, Ok(Ok(_))).then_some(client)),
        recv(cancel) -> _ => Err(Failure::Cancelled),
        default(REQUEST_TIMEOUT) => Err(Failure::new(
            Code::NoInspector,
            format!("what listens on {address} answers neither as Node's inspector nor as debugpy"),
        )),
    }
}

/// Attaches through a `client` that `connect` gave. The session never kills the program:
/// debug-stop detaches, and debugpy lets it run on.
pub(crate) fn attach(
    id: &str,
    client: Client,
    address: std::net::SocketAddr,
    start: AttachSpec,
    watch: Arc<Watch>,
    cancel: &Receiver<()>,
) -> Result<(Handle, Value), Failure> {
    run_session(id, cancel, move |id, summary, _| {
        let command_line = format!("attached to {address}");
        let mut session = Session::new(id, client, None, false, command_line, summary, watch);
        let arguments = json!({"name": "debug-mcp", "type": "python", "request": "attach",
            "justMyCode": false, "subProcess": false, "redirectOutput": true});
        let started =
            session.setup("attach", arguments, start.breakpoints, &start.pause_on_exceptions);
        session.ready(started, start.timeout)
    })
}

struct Breakpoint {
    id: String,
    spec: BreakpointSpec,
    /// debugpy's id, to match `hitBreakpointIds` and `breakpoint` events.
    dap_id: Option<i64>,
    verified: bool,
    line: Option<u64>,
    /// Where in the line, when the adapter says (debugpy places breakpoints by line only).
    column: Option<u64>,
    message: Option<String>,
    hits: u64,
}

impl Breakpoint {
    /// Records where debugpy placed it. debugpy "verifies" a breakpoint on a line with no
    /// code (a comment, say) at line 0, where it never stops: that one is not verified.
    fn placed(&mut self, answer: &Value) {
        match dap::placed_line(answer) {
            Ok(line) => {
                self.verified = answer["verified"] == true;
                self.line = line.or(self.line);
                self.column = answer["column"].as_u64().or(self.column);
            }
            Err(why) => {
                self.verified = false;
                self.line = None;
                self.message = Some(why);
            }
        }
    }

    fn to_json(&self) -> Value {
        let mut json = json!({"breakpointId": self.id, "file": self.spec.file.display().to_string(),
            "line": self.spec.line, "verified": self.verified, "hits": self.hits});
        if let Some(condition) = &self.spec.condition {
            json["condition"] = condition.as_str().into();
        }
        if let Some(message) = &self.spec.log_message {
            json["logMessage"] = message.as_str().into();
        }
        json["resolved"] = match (self.verified, self.line) {
            (true, Some(line)) => json!([{"file": self.spec.file.display().to_string(),
                                          "line": line, "column": self.column}]),
            _ => json!([]),
        };
        if !self.verified {
            let why = self
                .message
                .clone()
                .unwrap_or_else(|| "not bound yet; it binds when its file is imported".into());
            json["reason"] = why.into();
        }
        json
    }
}

enum State {
    Running,
    Paused { reason: &'static str, thread: Value, frames: Vec<Value>, exception: Option<Value> },
    Exited(Option<i32>),
}

/// An exception stop for `pauseOnExceptions: all` (DAP's `raised`): the exception and where.
/// pydevd stops again in every frame the exception unwinds through, and DAP cannot ask it to
/// stop at the first raise only.
struct Raise {
    thread: Value,
    exception: Value,
    /// Each frame's file, function and line, innermost first.
    frames: Vec<Value>,
}

impl Raise {
    fn new(thread: &Value, info: &Value, frames: &[Value]) -> Raise {
        Raise {
            thread: thread.clone(),
            exception: json!([info["exceptionId"], info["description"]]),
            frames: frames
                .iter()
                .map(|f| json!([f.pointer("/source/path"), f["name"], f["line"]]))
                .collect(),
        }
    }

    /// Whether this is `earlier`'s exception, further out: the same exception on the same
    /// thread, its frames the outer part of `earlier`'s (the stacks may be cut at the bottom).
    fn unwinds(&self, earlier: &Raise) -> bool {
        self.thread == earlier.thread
            && self.exception == earlier.exception
            && !self.frames.is_empty()
            && (1..earlier.frames.len())
                .any(|out| earlier.frames[out..].iter().zip(&self.frames).all(|(a, b)| a == b))
    }
}

struct Waiter {
    reply: Sender<Reply>,
    deadline: Instant,
}

/// The adapter a launched session started, and the interpreter it runs under.
struct OwnAdapter {
    process: Debuggee,
    python: String,
}

struct Session {
    id: String,
    client: Client,
    /// `None` when attached: the adapter and the program are not ours.
    adapter: Option<OwnAdapter>,
    /// Whether the probe is in the program and its debugger socket has TCP_NODELAY: from
    /// our PYTHONPATH when launched, else done at the first stop (`install_probe_at`).
    prepared: bool,
    debuggee: Option<sys::ProcessGroup>,
    state: State,
    waiter: Option<Waiter>,
    last_action: Action,
    /// The last stop for a raised exception, to pass over its unwinding.
    last_raise: Option<Raise>,
    /// A thread to pause, from `thread` events.
    thread: Option<Value>,
    breakpoints: Vec<Breakpoint>,
    next_breakpoint: u32,
    output: process::Output,
    console: Console,
    summary: Arc<Mutex<Value>>,
    watch: Arc<Watch>,
    command_line: String,
    first_deadline: Instant,
    idle_ended: bool,
}

fn start(
    id: String,
    spec: LaunchSpec,
    summary: Arc<Mutex<Value>>,
    watch: Arc<Watch>,
) -> Result<Session, Failure> {
    let python::Adapter { program, helpers, python, process, client } =
        python::start_adapter(spec.command.clone())?;
    let mut session = Session::new(
        id,
        client,
        Some(OwnAdapter { process, python }),
        // A program that skips our sitecustomize.py (and perhaps our PYTHONPATH) gets the
        // probe and TCP_NODELAY at its first stop, as an attached one does.
        program.loads_sitecustomize(),
        crate::shell::join(&spec.command.words),
        summary,
        watch,
    );
    let mut arguments = python::launch_arguments(&program, helpers);
    arguments["stopOnEntry"] = spec.stop_on_entry.into();
    let started = session.initialize().and_then(|()| {
        session.setup("launch", arguments, spec.breakpoints, &spec.pause_on_exceptions)
    });
    session.ready(started, spec.timeout)
}

fn filters(state: &str) -> Value {
    match state {
        "all" => json!(["raised", "uncaught"]),
        "uncaught" => json!(["uncaught"]),
        _ => json!([]),
    }
}

impl Serve for Session {
    fn serve(mut self, first: Sender<Reply>, commands: &Receiver<Command>) {
        self.waiter = Some(Waiter { reply: first, deadline: self.first_deadline });
        self.publish();
        let mut events = self.client.events().clone();
        let mut clocks = Clocks::start();
        loop {
            let (waiting, idle) = clocks.turn(
                self.waiter.as_ref().map(|w| w.deadline),
                matches!(self.state, State::Exited(_)),
            );
            select! {
                recv(commands) -> command => match command {
                    Ok(command) => {
                        clocks.called();
                        self.handle_command(command);
                    }
                    Err(_) => break, // the session was stopped, or the server is exiting
                },
                recv(events) -> event => match event {
                    Ok(event) => self.handle_event(event),
                    Err(_) => {
                        events = never();
                        self.ended(None);
                    }
                },
                recv(waiting) -> _ => {
                    let state = self.stop_state();
                    self.reply(Ok(state));
                },
                recv(idle) -> _ => {
                    log::info(format_args!("session {} idle for {} s: ending it", self.id, clocks.idle_limit.as_secs()));
                    self.idle_ended = true;
                    self.ended(None);
                },
            }
        }
        self.kill_all();
    }
}

impl Session {
    fn new(
        id: String,
        client: Client,
        adapter: Option<OwnAdapter>,
        prepared: bool,
        command_line: String,
        summary: Arc<Mutex<Value>>,
        watch: Arc<Watch>,
    ) -> Session {
        Session {
            id,
            client,
            adapter,
            prepared,
            debuggee: None,
            state: State::Running,
            waiter: None,
            last_action: Action::Continue,
            last_raise: None,
            thread: None,
            breakpoints: Vec::new(),
            next_breakpoint: 0,
            output: process::Output::default(),
            console: Console::default(),
            summary,
            watch,
            command_line,
            first_deadline: Instant::now(),
            idle_ended: false,
        }
    }

    /// The session once set up, its first answer waiting up to `timeout` for a stop; or,
    /// when setting up failed, the failure, with nothing of ours left running.
    fn ready(
        mut self,
        started: Result<(), Failure>,
        timeout: Duration,
    ) -> Result<Session, Failure> {
        match started {
            Ok(()) => {
                self.first_deadline = Instant::now() + timeout;
                Ok(self)
            }
            Err(failure) => {
                self.kill_all();
                Err(failure)
            }
        }
    }

    fn request(&mut self, command: &str, arguments: Value) -> Result<Value, Failure> {
        let reply = self.client.send(command, arguments);
        self.wait(&reply)
    }

    fn initialize(&mut self) -> Result<(), Failure> {
        let initialize = self.client.send("initialize", dap::initialize_arguments());
        match self.wait(&initialize) {
            Ok(_) => Ok(()),
            Err(failure) => Err(self.adapter_failure(failure)),
        }
    }

    /// Starts debugging, after `initialize`: `request` is `launch` or `attach`, with its
    /// `arguments`.
    fn setup(
        &mut self,
        request: &str,
        arguments: Value,
        breakpoints: Vec<BreakpointSpec>,
        pause_on_exceptions: &str,
    ) -> Result<(), Failure> {
        let launch = self.client.send(request, arguments);
        // The `initialized` event, then the breakpoints and configurationDone: debugpy's order.
        let events = self.client.events().clone();
        let limit = crossbeam_channel::after(REQUEST_TIMEOUT);
        loop {
            select! {
                recv(events) -> event => match event {
                    Ok(event) if event["event"] == "initialized" => break,
                    Ok(event) => self.handle_event(event),
                    Err(_) => return Err(self.adapter_failure(Failure::new(Code::AdapterFailed, "debugpy's adapter ended"))),
                },
                recv(launch) -> answer => {
                    let message = match answer { Ok(Err(m)) => m, _ => format!("{request} ended early") };
                    return Err(match request {
                        "launch" => Failure::new(Code::LaunchFailed, format!("debugpy could not launch the program: {message}")),
                        _ if message.contains("already being debugged") => Failure::new(Code::AttachFailed, format!(
                            "debugpy could not attach to the program: {message} Another client is attached: end its session (debug-stop, or detach the other debugger) first")),
                        _ => Failure::new(Code::AttachFailed, format!("debugpy could not attach to the program: {message}")),
                    });
                },
                recv(limit) -> _ => return Err(Failure::new(Code::AdapterFailed, "debugpy did not get ready in time")),
            }
        }
        for (i, spec) in breakpoints.into_iter().enumerate() {
            self.add_breakpoint(spec)
                .map_err(|f| f.with("field", format!("breakpoints[{i}]").into()))?;
        }
        self.request("setExceptionBreakpoints", json!({"filters": filters(pause_on_exceptions)}))?;
        self.request("configurationDone", json!({}))?;
        self.wait(&launch)?;
        Ok(())
    }

    fn wait(&self, reply: &Receiver<crate::dap::Reply>) -> Result<Value, Failure> {
        match reply.recv_timeout(REQUEST_TIMEOUT) {
            Ok(Ok(body)) => Ok(body),
            Ok(Err(message)) => {
                Err(Failure::new(Code::AdapterFailed, format!("debugpy: {message}")))
            }
            Err(_) => Err(Failure::new(Code::AdapterFailed, "debugpy did not answer in time")),
        }
    }

    /// Explains an adapter that ended early, in its words (most often: no debugpy for that
    /// interpreter); `failure` stands when the adapter is still there.
    fn adapter_failure(&mut self, failure: Failure) -> Failure {
        let Some(adapter) = &mut self.adapter else { return failure };
        if adapter.process.try_exit().is_none() {
            match adapter.process.exited().recv_timeout(Duration::from_millis(500)) {
                Ok(exit) => adapter.process.record_exit(exit),
                Err(_) => return failure,
            }
        }
        python::adapter_failed(&mut adapter.process, &adapter.python, &self.client)
    }

    /// Sends a file's whole breakpoint list and records what debugpy made of each.
    fn sync_file(&mut self, file: &PathBuf) -> Result<(), Failure> {
        let indices: Vec<usize> = (0..self.breakpoints.len())
            .filter(|&i| &self.breakpoints[i].spec.real_file == file)
            .collect();
        let list: Vec<Value> = indices
            .iter()
            .map(|&i| {
                let spec = &self.breakpoints[i].spec;
                let mut bp = json!({"line": spec.line});
                if let Some(c) = &spec.condition {
                    bp["condition"] = c.as_str().into();
                }
                if let Some(m) = &spec.log_message {
                    bp["logMessage"] = m.as_str().into();
                }
                bp
            })
            .collect();
        let answer = self.request(
            "setBreakpoints",
            json!({"source": {"path": file.display().to_string()}, "breakpoints": list}),
        )?;
        for (position, &i) in indices.iter().enumerate() {
            let got = &answer["breakpoints"][position];
            let bp = &mut self.breakpoints[i];
            bp.dap_id = got["id"].as_i64();
            bp.message = got["message"].as_str().map(String::from);
            bp.placed(got);
        }
        Ok(())
    }

    fn add_breakpoint(&mut self, spec: BreakpointSpec) -> Result<Value, Failure> {
        // debugpy keeps one breakpoint per line: a second would silently replace the first.
        if let Some(there) = self
            .breakpoints
            .iter()
            .find(|b| b.spec.real_file == spec.real_file && b.spec.line == spec.line)
        {
            return Err(Failure::new(
                Code::DuplicateBreakpoint,
                format!(
                    "line {} of {} already has breakpoint {}: debugpy keeps one breakpoint per line; \
                     remove it with debug-remove-breakpoint first, then set the one you want",
                    spec.line,
                    spec.file.display(),
                    there.id
                ),
            ));
        }
        self.next_breakpoint += 1;
        let id = self.next_breakpoint.to_string();
        let file = spec.real_file.clone();
        self.breakpoints.push(Breakpoint {
            id: id.clone(),
            spec,
            dap_id: None,
            verified: false,
            line: None,
            column: None,
            message: None,
            hits: 0,
        });
        if let Err(failure) = self.sync_file(&file) {
            self.breakpoints.pop();
            return Err(failure);
        }
        let bp = self.breakpoints.iter().find(|b| b.id == id).expect("just added");
        Ok(bp.to_json())
    }

    fn remove_breakpoint(&mut self, id: &str) -> Reply {
        let Some(index) = self.breakpoints.iter().position(|b| b.id == id) else {
            let known: Vec<&str> = self.breakpoints.iter().map(|b| b.id.as_str()).collect();
            return Err(Failure::new(
                Code::NoBreakpoint,
                format!(
                    "no breakpoint {id} in session {}: its breakpoints are [{}]",
                    self.id,
                    known.join(", ")
                ),
            ));
        };
        let removed = self.breakpoints.remove(index);
        self.sync_file(&removed.spec.real_file)?;
        Ok(json!({"sessionId": self.id, "removed": id}))
    }

    fn reply(&mut self, reply: Reply) {
        if let Some(waiter) = self.waiter.take() {
            let _ = waiter.reply.send(reply);
        }
    }

    fn handle_event(&mut self, event: Value) {
        if event["type"] == "request" {
            self.client.refuse(&event);
            return;
        }
        let body = &event["body"];
        match event["event"].as_str().unwrap_or_default() {
            "output" => {
                let Some(message) = dap::route_output(body, &mut self.output) else { return };
                // debugpy sends a logpoint's message with `"source": {}`, no path or line,
                // so its owner is found by the message's shape: the one logpoint whose
                // literal text fits it.
                let text_line = message.trim_end_matches('\n');
                let mut owners = self.breakpoints.iter_mut().filter(|b| {
                    b.spec
                        .log_message
                        .as_deref()
                        .is_some_and(|template| template_fits(template, text_line))
                });
                let id = match (owners.next(), owners.next()) {
                    (Some(b), None) => {
                        b.hits += 1;
                        Some(b.id.clone())
                    }
                    // Attached (no launcher), debugpy marks the program's own output with a
                    // `source` too: what fits no logpoint is the program's.
                    (None, _) if self.adapter.is_none() => {
                        self.output.push(body["category"] == "stderr", message);
                        return;
                    }
                    _ => None,
                };
                self.console
                    .record(json!({"type": "logpoint", "breakpointId": id, "text": text_line}));
            }
            "process" => self.debuggee = dap::process_group(body),
            "thread" if body["reason"] == "started" && self.thread.is_none() => {
                self.thread = Some(body["threadId"].clone())
            }
            "breakpoint" => {
                let changed = &body["breakpoint"];
                if let Some(bp) = self
                    .breakpoints
                    .iter_mut()
                    .find(|b| b.dap_id.is_some() && b.dap_id == changed["id"].as_i64())
                {
                    bp.placed(changed);
                }
            }
            "stopped" => self.stopped(body.clone()),
            "continued" if !matches!(self.state, State::Exited(_)) => {
                self.state = State::Running;
                self.publish();
            }
            "exited" => self.ended(body["exitCode"].as_i64().and_then(|c| i32::try_from(c).ok())),
            "terminated" => self.ended(None),
            _ => {}
        }
    }

    fn stopped(&mut self, body: Value) {
        let thread = body["threadId"].clone();
        let mut frames = self
            .request("stackTrace", json!({"threadId": thread, "levels": STACK_LEVELS}))
            .map(|t| t["stackFrames"].as_array().cloned().unwrap_or_default())
            .unwrap_or_default();
        // debugpy starts the program through runpy; those frames are its, not the user's.
        while frames.len() > 1
            && frames
                .last()
                .and_then(|f| f.pointer("/source/path"))
                .and_then(Value::as_str)
                .is_some_and(|p| p.ends_with("runpy.py"))
        {
            frames.pop();
        }
        let hit_ids: Vec<i64> = body["hitBreakpointIds"]
            .as_array()
            .map(|ids| ids.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default();
        let mut ours = false;
        for bp in
            self.breakpoints.iter_mut().filter(|b| b.dap_id.is_some_and(|id| hit_ids.contains(&id)))
        {
            bp.hits += 1;
            ours = true;
        }
        let reason = match body["reason"].as_str().unwrap_or_default() {
            "breakpoint" => "breakpoint",
            _ if ours => "breakpoint",
            "exception" => "exception",
            "entry" => "entry",
            "pause" => "pause",
            "step" => "step",
            _ => match self.last_action {
                Action::Pause => "pause",
                Action::StepOver | Action::StepInto | Action::StepOut => "step",
                Action::Continue => "debugger",
            },
        };
        let info = match reason {
            "exception" => self.request("exceptionInfo", json!({"threadId": thread})).ok(),
            _ => None,
        };
        let raise = info
            .as_ref()
            .filter(|info| info["breakMode"] == "always")
            .map(|info| Raise::new(&thread, info, &frames));
        let last_raise = std::mem::replace(&mut self.last_raise, raise);
        if let Some(raise) = &self.last_raise {
            // `pauseOnExceptions: all` is for the program's exceptions: the ones the standard
            // library and installed packages raise and catch themselves (runpy's start-up
            // does several) are passed over; and it stops where one is raised, not again in
            // each frame it unwinds through.
            let top =
                frames.first().and_then(|f| f.pointer("/source/path")).and_then(Value::as_str);
            if top.is_some_and(is_library) || last_raise.is_some_and(|last| raise.unwinds(&last)) {
                drop(self.client.send("continue", json!({"threadId": thread})));
                return;
            }
        }
        let exception = info.map(|info| {
            // debugpy appends "(note: full exception trace is shown but ...)" to the class.
            let class = info["exceptionId"].as_str().unwrap_or_default();
            let class = class.split("(note:").next().unwrap_or_default().trim();
            json!({"class": class, "message": info["description"],
                   "stack": info.pointer("/details/stackTrace").cloned().unwrap_or(Value::Null),
                   "uncaught": info["breakMode"] != "always"})
        });
        if !self.prepared {
            if let Some(frame) = frames.first() {
                self.install_probe_at(&frame["id"]);
            }
        }
        self.thread = Some(thread.clone());
        self.state = State::Paused { reason, thread, frames, exception };
        self.publish();
        if self.waiter.is_some() {
            let state = self.stop_state();
            self.reply(Ok(state));
        }
    }

    fn ended(&mut self, code: Option<i32>) {
        if let State::Exited(known) = &mut self.state {
            if known.is_none() {
                *known = code;
            }
            return;
        }
        self.state = State::Exited(code);
        if let Some(adapter) = &mut self.adapter {
            // Our adapter exits when its input closes.
            self.client.close_input();
            let _ = adapter.process.finish(Duration::from_secs(2));
        }
        // Attached, this detaches first (an idle end), then closes the connection.
        self.kill_all();
        self.publish();
        let state = self.stop_state();
        self.reply(Ok(state));
    }

    fn kill_all(&mut self) {
        let Some(adapter) = &mut self.adapter else {
            // Not ours: detach. debugpy drops our breakpoints and lets the program run on.
            self.client.disconnect(false);
            self.client.close_input();
            return;
        };
        match self.debuggee {
            Some(group) => group.kill(),
            // Started, perhaps, but not yet said: the adapter knows and ends it.
            None => self.client.disconnect(true),
        }
        adapter.process.kill();
    }

    /// At the first stop of a program without our sitecustomize.py (attached to, or run
    /// with -I, -E or -S): the probe and TCP_NODELAY (`python::install_probe`). Every
    /// request after it is ~40 ms faster.
    fn install_probe_at(&mut self, frame_id: &Value) {
        self.prepared = true;
        let expression = python::install_probe();
        let prepared = self.request(
            "evaluate",
            json!({"expression": expression, "frameId": frame_id, "context": "watch"}),
        );
        if let Err(failure) = prepared {
            log::warn(format_args!("installing the probe in the program: {failure:?}"));
        }
    }

    fn frame_json(frame: &Value, index: usize) -> Value {
        json!({"index": index, "function": frame["name"],
               "file": frame.pointer("/source/path").cloned().unwrap_or(Value::Null),
               "line": frame["line"], "column": frame["column"]})
    }

    /// A frame as a location: `frame_json` without the index.
    fn location_json(frame: &Value) -> Value {
        let mut location = Session::frame_json(frame, 0);
        location.as_object_mut().map(|o| o.remove("index"));
        location
    }

    fn stop_state(&mut self) -> Value {
        match &self.state {
            State::Running => crate::sessions::running_state(&self.id),
            State::Exited(code) => {
                let output = self.output.to_json();
                let mut state = json!({"sessionId": self.id, "state": "exited",
                    "stdout": output["stdout"], "stderr": output["stderr"]});
                if let Some(code) = code {
                    state["exitCode"] = (*code).into();
                }
                if self.idle_ended {
                    state["message"] = "ended by debug-mcp: no call came for the idle limit (DEBUG_MCP_SESSION_IDLE_MS)".into();
                } else if self.adapter.is_none() {
                    state["message"] =
                        "the attached program ended or debugpy closed the connection; \
                        debugpy does not tell an attached client the exit code"
                            .into();
                }
                let processes = match (&self.adapter, self.debuggee) {
                    (Some(adapter), Some(program)) => {
                        adapter.process.descendants(Some(program.pid()))
                    }
                    _ => Vec::new(),
                };
                Undebugged { processes, workers: 0 }.add_to_state(&mut state);
                state
            }
            State::Paused { reason, frames, exception, .. } => {
                let reason = *reason;
                let exception = exception.clone();
                let top = frames.first().cloned().unwrap_or(Value::Null);
                let location = Session::location_json(&top);
                let mut state = json!({"sessionId": self.id, "state": "paused", "reason": reason, "location": location});
                if let Some(source) = source_lines(&state["location"]) {
                    state["source"] = source;
                }
                let frame_id = top["id"].clone();
                state["locals"] = self
                    .scope_variables(&frame_id, &["Locals"], MAX_LOCALS)
                    .map(|mut v| {
                        for item in v.iter_mut().filter_map(Value::as_object_mut) {
                            item.remove("expandable");
                            item.remove("scope");
                        }
                        Value::from(v)
                    })
                    .unwrap_or_else(|_| json!([]));
                let hits: Vec<&str> = self
                    .breakpoints
                    .iter()
                    .filter(|b| {
                        reason == "breakpoint"
                            && b.verified
                            && b.line == top["line"].as_u64()
                            && b.spec.real_file.display().to_string()
                                == top
                                    .pointer("/source/path")
                                    .and_then(Value::as_str)
                                    .unwrap_or_default()
                    })
                    .map(|b| b.id.as_str())
                    .collect();
                if !hits.is_empty() {
                    state["hitBreakpoints"] = json!(hits);
                }
                if let Some(exception) = exception {
                    state["exception"] = exception;
                }
                state
            }
        }
    }

    /// Variables of the named scopes (`Locals`, `Globals`) of a frame.
    fn scope_variables(
        &mut self,
        frame_id: &Value,
        names: &[&str],
        max: usize,
    ) -> Result<Vec<Value>, Failure> {
        let scopes = self.request("scopes", json!({"frameId": frame_id}))?;
        let mut out = Vec::new();
        for scope in scopes["scopes"].as_array().cloned().unwrap_or_default() {
            let name = scope["name"].as_str().unwrap_or_default();
            if !names.contains(&name) {
                continue;
            }
            for mut v in self.children(&scope["variablesReference"], max)? {
                v["scope"] = if name == "Locals" { "local" } else { "global" }.into();
                out.push(v);
            }
        }
        Ok(out)
    }

    /// `variables` of a reference, compact: {name, type, value, expandable}.
    fn children(&mut self, reference: &Value, max: usize) -> Result<Vec<Value>, Failure> {
        let answer = self.request("variables", json!({"variablesReference": reference}))?;
        let all: Vec<Value> = answer["variables"].as_array().cloned().unwrap_or_default();
        let total = all.len();
        let mut items: Vec<Value> = all
            .into_iter()
            .filter(|v| {
                !v["name"].as_str().unwrap_or_default().starts_with("special variables")
                    && v["name"] != "function variables"
            })
            .take(max)
            .map(|v| {
                let kind = v["type"].as_str().unwrap_or_default().to_string();
                let text = v["value"].as_str().unwrap_or_default();
                let value = match kind.as_str() {
                    "int" | "float" => {
                        serde_json::from_str::<Value>(text).unwrap_or_else(|_| text.into())
                    }
                    "bool" => Value::Bool(text == "True"),
                    "NoneType" => Value::Null,
                    "str" => clip(&python_string(text).unwrap_or_else(|| text.into()), 200).into(),
                    _ => clip(text, 200).into(),
                };
                json!({"name": v["name"], "type": kind, "value": value,
                       "expandable": v["variablesReference"].as_i64().is_some_and(|r| r > 0)})
            })
            .collect();
        if total > max {
            items.push(json!({"name": "…", "type": "truncated", "value": format!("{} more: raise maxItems or narrow with path", total - max)}));
        }
        Ok(items)
    }

    fn paused_frame(&self, frame: usize) -> Result<(Value, Value), Failure> {
        match &self.state {
            State::Paused { frames, thread, .. } => {
                frames.get(frame).cloned().map(|f| (f, thread.clone())).ok_or_else(|| {
                    Failure::new(
                        Code::InvalidArguments,
                        format!(
                            "invalid argument `frame`: there are {} frames (0 to {})",
                            frames.len(),
                            frames.len().saturating_sub(1)
                        ),
                    )
                    .with("field", "frame".into())
                })
            }
            _ => Err(self.not_paused()),
        }
    }

    fn not_paused(&self) -> Failure {
        match &self.state {
            State::Exited(code) => Failure::new(
                Code::Exited,
                format!("session {} has ended: the program exited ({}); start a new one with debug-launch", self.id,
                    code.map_or("exit code unknown".into(), |c| format!("exit code {c}"))),
            ),
            _ => Failure::new(Code::Running, format!("session {} is running: stop it with debug-pause first", self.id)),
        }
    }

    fn handle_command(&mut self, command: Command) {
        match command {
            Command::Resume { action, timeout, reply } => self.resume(action, timeout, reply),
            Command::Stack { max_frames, reply, .. } => {
                let answer = match &self.state {
                    State::Paused { frames, .. } => {
                        Ok(json!({"sessionId": self.id, "totalFrames": frames.len(),
                        "frames": frames.iter().take(max_frames).enumerate().map(|(i, f)| Session::frame_json(f, i)).collect::<Vec<_>>()}))
                    }
                    _ => Err(self.not_paused()),
                };
                let _ = reply.send(answer);
            }
            Command::Evaluate { expression, frame, reply } => {
                let _ = reply.send(self.evaluate(&expression, frame));
            }
            Command::Variables { query, reply } => {
                let _ = reply.send(self.variables(&query));
            }
            Command::SetVariable { name, value, frame, scope, reply } => {
                let _ = reply.send(self.set_variable(&name, &value, frame, &scope));
            }
            Command::PauseOnExceptions { state, reply } => {
                let answer = self
                    .request("setExceptionBreakpoints", json!({"filters": filters(&state)}))
                    .map(|_| json!({"sessionId": self.id, "pauseOnExceptions": state}));
                let _ = reply.send(answer);
            }
            Command::SetBreakpoint { spec, reply } => {
                let answer = self.add_breakpoint(spec).map(|mut b| {
                    b["sessionId"] = self.id.as_str().into();
                    b
                });
                let _ = reply.send(answer);
            }
            Command::RemoveBreakpoint { id, reply } => {
                let _ = reply.send(self.remove_breakpoint(&id));
            }
            Command::ListBreakpoints { reply } => {
                let list: Vec<Value> = self.breakpoints.iter().map(Breakpoint::to_json).collect();
                let _ = reply.send(Ok(json!({"sessionId": self.id, "breakpoints": list})));
            }
            Command::Output { since, reply } => {
                let _ =
                    reply.send(self.console.since(&self.id, Some(&self.output), since.as_deref()));
            }
            Command::Scripts { include_internal, reply } => {
                let _ = reply.send(self.loaded_files(include_internal));
            }
            Command::ScriptSource { file, reply } => {
                let _ = reply
                    .send(Err(Failure::new(Code::FileNotFound, format!("{file} is not on disk"))));
            }
        }
    }

    fn resume(&mut self, action: Action, timeout: Duration, reply: Sender<Reply>) {
        if self.waiter.is_some() {
            let _ = reply.send(Err(Failure::new(
                Code::Busy,
                "another call is already waiting on this session: wait for it, or use debug-pause",
            )));
            return;
        }
        let thread = match &self.state {
            State::Exited(_) => {
                let _ = reply.send(Ok(self.stop_state()));
                return;
            }
            State::Paused { .. } if action == Action::Pause => {
                let _ = reply.send(Ok(self.stop_state()));
                return;
            }
            State::Paused { thread, .. } => thread.clone(),
            State::Running if action == Action::Continue => Value::Null,
            State::Running if action == Action::Pause => self.thread.clone().unwrap_or(json!(1)),
            State::Running => {
                let _ = reply.send(Err(Failure::new(Code::Running, "the program is running: stop it with debug-pause (or wait with debug-continue) before stepping")));
                return;
            }
        };
        let command = match action {
            Action::Continue if thread.is_null() => None,
            Action::Continue => Some("continue"),
            Action::StepOver => Some("next"),
            Action::StepInto => Some("stepIn"),
            Action::StepOut => Some("stepOut"),
            Action::Pause => Some("pause"),
        };
        self.last_action = action;
        if let Some(command) = command {
            if let Err(failure) = self.request(command, json!({"threadId": thread})) {
                let _ = reply.send(Err(failure));
                return;
            }
            if command != "pause" {
                self.state = State::Running;
            }
        }
        self.waiter = Some(Waiter { reply, deadline: Instant::now() + timeout });
    }

    fn evaluate(&mut self, expression: &str, frame: usize) -> Reply {
        let (frame, _) = self.paused_frame(frame)?;
        let probe = format!(
            "__import__('debug_mcp_probe').hit('{}')",
            super::script::base64(expression.as_bytes())
        );
        let answer = self.request(
            "evaluate",
            json!({"expression": probe, "frameId": frame["id"],
            "context": "watch", "format": {"rawString": true}}),
        )?;
        let text = answer["result"].as_str().unwrap_or_default();
        let payload = text
            .find("\u{1e}dmcp:")
            .map(|at| &text[at + "\u{1e}dmcp:".len() + 1..])
            .unwrap_or_default();
        serde_json::from_str(payload).map_err(|_| {
            Failure::new(Code::Internal, format!("unreadable value: {}", log::clip(text)))
        })
    }

    /// The program's loaded Python files, asked of the paused program itself (debugpy
    /// does not answer `loadedSources`).
    fn loaded_files(&mut self, include_internal: bool) -> Reply {
        // Absolute in the program's own working directory (a program started as
        // `python app.py` has `__main__.__file__ == 'app.py'`).
        const FILES: &str = "sorted({__import__('os').path.abspath(f) \
                             for m in list(__import__('sys').modules.values()) \
                             for f in [getattr(m, '__file__', None)] if isinstance(f, str)})";
        let answer = self.evaluate(FILES, 0).map_err(|f| match f {
            Failure::Error { code: Code::Running, .. } => Failure::new(
                Code::Running,
                "a Python program lists its loaded files only while paused: call debug-pause first",
            ),
            other => other,
        })?;
        let Some(files) = answer["value"].as_array() else {
            return Err(Failure::new(Code::Internal, format!("unreadable module list: {answer}")));
        };
        let helpers = python::helper_dir().ok();
        let scripts: Vec<Value> = files
            .iter()
            .filter_map(Value::as_str)
            .filter(|f| include_internal || !is_library(f))
            // debug-mcp's own helpers, which debugpy's launcher imports.
            .filter(|f| !helpers.is_some_and(|h| std::path::Path::new(f).starts_with(h)))
            .map(|f| json!({"file": f, "url": f}))
            .collect();
        Ok(json!({"sessionId": self.id, "scripts": scripts}))
    }

    fn variables(&mut self, query: &VariablesQuery) -> Reply {
        let (frame, _) = self.paused_frame(query.frame)?;
        if let Some(path) = &query.path {
            let answer = self
                .request(
                    "evaluate",
                    json!({"expression": path, "frameId": frame["id"], "context": "watch"}),
                )
                .map_err(|f| match f {
                    Failure::Error { message, .. } => {
                        Failure::new(Code::InvalidPath, format!("`{path}`: {message}"))
                    }
                    other => other,
                })?;
            let variables = match answer["variablesReference"].as_i64() {
                Some(r) if r > 0 => {
                    self.children(&answer["variablesReference"], query.max_items)?
                }
                _ => Vec::new(),
            };
            return Ok(
                json!({"sessionId": self.id, "path": path, "type": answer["type"], "value": answer["result"], "variables": variables}),
            );
        }
        let names: &[&str] = match query.scope.as_str() {
            "local" => &["Locals"],
            "global" => &["Globals"],
            "all" => &["Locals", "Globals"],
            other => {
                return Err(Failure::new(
                    Code::InvalidArguments,
                    format!("invalid argument `scope`: Python frames have `local` and `global` scopes, not `{other}`"),
                )
                .with("field", "scope".into()))
            }
        };
        let variables = self.scope_variables(&frame["id"], names, query.max_items)?;
        Ok(
            json!({"sessionId": self.id, "frame": query.frame, "scope": query.scope, "variables": variables}),
        )
    }

    fn set_variable(&mut self, name: &str, value: &str, frame: usize, scope: &str) -> Reply {
        let (frame_json, _) = self.paused_frame(frame)?;
        let wanted = if scope == "global" { "Globals" } else { "Locals" };
        let scopes = self.request("scopes", json!({"frameId": frame_json["id"]}))?;
        let reference = scopes["scopes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["name"] == wanted)
            .map(|s| s["variablesReference"].clone());
        let Some(reference) = reference else {
            return Err(Failure::new(
                Code::NoVariable,
                format!("frame {frame} has no {scope} scope"),
            ));
        };
        let known = self.children(&reference, usize::MAX)?.iter().any(|v| v["name"] == name);
        if !known {
            return Err(Failure::new(Code::NoVariable, format!("no `{name}` in the {scope} scope of frame {frame}: list them with debug-variables")));
        }
        // debugpy keeps the old value, and says nothing, when `value` fails: so it is
        // evaluated once here, where a failure shows, and handed over through the probe.
        let held = format!(
            "(__import__('debug_mcp_probe').__dict__.__setitem__('held', ({value})), \
             __import__('debug_mcp_probe').held)[1]"
        );
        let checked = self.evaluate(&held, frame)?;
        if checked["type"] == "error" {
            let why = checked["value"].as_str().unwrap_or_default();
            return Err(Failure::new(Code::InvalidExpression, format!("`value`: {why}"))
                .with("field", "value".into()));
        }
        let set = self.request(
            "setVariable",
            json!({"variablesReference": reference, "name": name,
                   "value": "__import__('debug_mcp_probe').__dict__.pop('held')"}),
        );
        set.map_err(|f| match f {
            Failure::Error { message, .. } => {
                Failure::new(Code::InvalidExpression, format!("`value`: {message}"))
                    .with("field", "value".into())
            }
            other => other,
        })?;
        // Frames and their variables change with the value: read it back through the probe.
        let now = self.evaluate(name, frame)?;
        Ok(json!({"sessionId": self.id, "name": name, "type": now["type"], "value": now["value"]}))
    }

    fn publish(&mut self) {
        let state = match &self.state {
            State::Running => "running",
            State::Paused { .. } => "paused",
            State::Exited(_) => "exited",
        };
        let mut summary = json!({"sessionId": self.id, "state": state, "command": self.command_line, "language": "python"});
        if let State::Paused { reason, frames, .. } = &self.state {
            summary["reason"] = (*reason).into();
            if let Some(top) = frames.first() {
                summary["location"] = Session::location_json(top);
            }
        }
        if let State::Exited(Some(code)) = &self.state {
            summary["exitCode"] = (*code).into();
        }
        summary["breakpoints"] = self.breakpoints.iter().map(Breakpoint::to_json).collect();
        *self.summary.lock().expect("session summary poisoned") = summary;
        self.watch.changed(&self.id);
    }
}

/// The string a Python `repr` of a `str` stands for, or `None` when `text` is not one (debugpy
/// cuts long values, for one).
fn python_string(text: &str) -> Option<String> {
    let quote = text.chars().next().filter(|q| *q == '\'' || *q == '"')?;
    let body = text.strip_prefix(quote)?.strip_suffix(quote)?;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    let hex = |chars: &mut std::str::Chars, n: usize| -> Option<char> {
        let digits: String = chars.by_ref().take(n).collect();
        if digits.len() != n {
            return None;
        }
        char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
    };
    while let Some(c) = chars.next() {
        if c == quote {
            return None; // unescaped: not one literal
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = chars.next()?;
        out.push(match escaped {
            '\\' | '\'' | '"' => escaped,
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'v' => '\u{b}',
            '0' => '\0',
            'x' => hex(&mut chars, 2)?,
            'u' => hex(&mut chars, 4)?,
            'U' => hex(&mut chars, 8)?,
            _ => return None,
        });
    }
    Some(out)
}

/// Whether a frame's file is Python's own or an installed package's, not the program's.
fn is_library(path: &str) -> bool {
    ["/lib/python3.", "/site-packages/", "/dist-packages/"].iter().any(|part| path.contains(part))
        || path.starts_with("<frozen")
}

/// Whether `text` could be `template` with its `{expression}` parts filled in:
/// the literal pieces appear in order, the first at the start and the last at
/// the end.
fn template_fits(template: &str, text: &str) -> bool {
    let mut literals = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        literals.push(&rest[..open]);
        match rest[open..].find('}') {
            Some(close) => rest = &rest[open + close + 1..],
            None => return false,
        }
    }
    literals.push(rest);
    if literals.len() == 1 {
        return text == template;
    }
    let (first, last) = (literals[0], literals[literals.len() - 1]);
    if !text.starts_with(first) || !text.ends_with(last) {
        return false;
    }
    let mut at = first.len();
    for piece in &literals[1..literals.len() - 1] {
        match text[at..].find(piece) {
            Some(found) => at += found + piece.len(),
            None => return false,
        }
    }
    text.len() - at >= last.len()
}

#[cfg(test)]
mod tests {
    use super::{python_string, template_fits};

    #[test]
    fn python_string_reprs_become_strings() {
        for (repr, string) in [
            (r"'tick 1'", Some("tick 1")),
            (r#""it's""#, Some("it's")),
            (r"'a\tb\nc\'d\x1b\u20ac\U0001f600'", Some("a\tb\nc'd\u{1b}\u{20ac}\u{1f600}")),
            (r"''", Some("")),
            (r"'cut...", None),
            (r"'a'b'", None),
            (r"'\q'", None),
            (r"'\x1'", None),
            ("Point(x=1)", None),
        ] {
            assert_eq!(python_string(repr).as_deref(), string, "{repr}");
        }
    }

    #[test]
    fn logpoint_text_is_matched_to_its_template() {
        assert!(template_fits("total={total}", "total=1025.0"));
        assert!(template_fits("{a} and {b}!", "1 and 2!"));
        assert!(template_fits("plain", "plain"));
        assert!(!template_fits("plain", "plain text"));
        assert!(!template_fits("total={total}", "count=3"));
        assert!(!template_fits("x={x} y={y}", "x=1"));
        assert!(!template_fits("ab{x}ba", "aba"));
    }
}
