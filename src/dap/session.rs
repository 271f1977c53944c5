//! A debug adapter as a session backend ([`Backend`]): the same commands and answers as every
//! runtime, spoken in DAP. What differs between adapters comes through the [`Flavour`] seam
//! (debugpy is the first).
//!
//! A launched session owns the adapter (spawned on the session's thread, so it dies with it)
//! and the program's process group (from the `process` event). An attached session
//! (`python -m debugpy --listen`) owns neither: it detaches, and the program runs on.
//! Breakpoints are sent per file, since DAP's `setBreakpoints` replaces a file's whole list.
//! Values go through the flavour's probe, as in `debug-script`.

mod children;
mod guess;
mod raise;
mod variables;
mod watch;

use std::path::PathBuf;

use std::time::Duration;

use crossbeam_channel::{never, select, Receiver, Sender};
use serde_json::{json, Value};

use crate::dap::flavour::{Flavour, Launched};
use crate::dap::{self, Child, Client};
use crate::debugger::backend::{Backend, Happening, Input, Inputs};
use crate::debugger::limits::VALUE_CHARS;
use crate::debugger::model::Undebugged;
use crate::debugger::model::{
    Action, AttachSpec, BreakpointSpec, Exception, Frame, LaunchSpec, Location, PathMapping,
    Reason, Resolution, Source, Stop, Thread, TraceFrame, Variable, VariablesQuery,
};
use crate::debugger::paths::{self, Whereabouts};
use crate::debugger::script::Debugged;
use crate::debugger::session::{self as actor, Begin, Handle, OnChange, Setup};
use crate::debugger::turns::{Turn, Turns};
use crate::debugger::{Code, Failure};
use crate::log;
use crate::process::{Debuggee, Exit, Output};
use crate::sys;
use raise::Raise;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const STACK_LEVELS: u64 = 50;

pub(crate) fn launch<F: Flavour>(
    flavour: F,
    id: &str,
    spec: LaunchSpec,
    on_change: OnChange,
    cancel: &Receiver<()>,
) -> Result<(Handle, Value), Failure> {
    actor::start(id, on_change, cancel, move |abandon| {
        Begin::launched(spec, abandon, move |command, setup, _| {
            start(flavour.clone(), command, setup)
        })
    })
}

/// Starts the adapter for `command`, launches the program and waits until breakpoints may be
/// set.
fn start<F: Flavour>(
    flavour: F,
    command: &crate::shell::CommandLine,
    setup: &Setup,
) -> Result<Dap<F>, Failure> {
    let stop_on_entry = setup.stop_on_entry;
    let Launched {
        client, adapter, mut arguments, prepared, label, request, output, arrivals, ..
    } = flavour.start(command, stop_on_entry)?;
    // `pauseOnExceptions: all` is for the program's own exceptions: an adapter that can leave
    // out libraries itself (debugpy) does, rather than stop at each one they raise and catch.
    let libraries_left_out = setup.pause_on_exceptions == "all"
        && !setup.include_libraries
        && flavour.pass_over_libraries(&mut arguments, &setup.breakpoint_files);
    let own = OwnAdapter { process: adapter, label };
    let mut backend = Dap::new(flavour, client, Some(own), prepared);
    if backend.flavour.follow_children(&mut arguments) {
        let (more_tx, more) = crossbeam_channel::unbounded();
        backend.more = more;
        backend.more_tx = Some(more_tx);
    }
    if let Some(arrivals) = arrivals {
        backend.more = arrivals.events.clone();
        backend.more_tx = Some(arrivals.events_tx.clone());
        // A child is attached to as the program was, but never stops on entry.
        let mut attach = arguments.clone();
        attach["stopOnEntry"] = false.into();
        backend.arrivals = Some((arrivals, attach));
    }
    backend.pause_on_exceptions = setup.pause_on_exceptions.clone();
    backend.libraries_left_out = libraries_left_out;
    backend.output = output.unwrap_or_default();
    // An adapter that runs the program itself and is attached to (rdbg) stops it as it loads.
    backend.load_pause = backend.flavour.pauses_as_it_loads() && !stop_on_entry;
    // Attached by our adapter (a pid, a core file), the program is not ours: we detach.
    backend.owns_program = request == "launch" || backend.flavour.adapter_is_program();
    let prepared = backend.initialize().and_then(|()| backend.prepare(request, arguments));
    backend.ready(prepared)?;
    if backend.files.elsewhere {
        backend.files.pending = Some((setup.breakpoint_files.clone(), command.dir()));
        backend.guess_paths();
    }
    Ok(backend)
}

/// Connects to what listens at `address` and says `initialize` as `F`'s client: the client
/// when a debug adapter answers (`python -m debugpy --listen`), `None` when it does not speak
/// DAP. Node's
/// inspector answers with an HTTP error, which ends the connection at once. (The other way
/// round would harm: after an HTTP request debugpy's adapter accepts no other client.)
pub(crate) fn connect<F: Flavour>(
    flavour: &F,
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
    let initialize = client.send("initialize", dap::initialize_arguments(flavour.adapter()));
    select! {
        recv(initialize) -> answer => Ok(matches!(answer, Ok(Ok(_))).then_some(client)),
        recv(cancel) -> _ => Err(Failure::Cancelled),
        default(REQUEST_TIMEOUT) => Err(Failure::new(
            Code::NoInspector,
            format!(
                "what listens on {address} answers neither as Node's inspector nor as {}",
                flavour.adapter()
            ),
        )),
    }
}

/// Attaches through a `client` that `connect` gave. The session never kills the program:
/// debug-stop detaches, and the adapter lets it run on.
pub(crate) fn attach<F: Flavour>(
    flavour: F,
    id: &str,
    client: Client,
    address: std::net::SocketAddr,
    start: AttachSpec,
    on_change: OnChange,
    cancel: &Receiver<()>,
) -> Result<(Handle, Value), Failure> {
    actor::start(id, on_change, cancel, move |_| {
        let mut backend = Dap::new(flavour, client, None, false);
        backend.pause_on_exceptions = start.pause_on_exceptions.clone();
        let mut arguments = backend.flavour.attach_arguments();
        if !start.path_mappings.is_empty()
            && !backend.flavour.map_paths(&mut arguments, &start.path_mappings)
        {
            return Err(Failure::new(
                Code::Unsupported,
                format!("{} cannot map paths: leave out `pathMappings`", backend.flavour.adapter()),
            ));
        }
        let prepared = backend.prepare("attach", arguments);
        backend.ready(prepared)?;
        backend.files = Whereabouts::attached(&start);
        backend.guess_paths();
        Ok(Begin::attached(backend, address, start))
    })
}

/// A session breakpoint as the adapter holds it.
struct Placed {
    id: String,
    spec: BreakpointSpec,
    /// Its file as the adapter knows it ([`Flavour::breakpoint_path`]).
    path: PathBuf,
    /// The adapter's id, to match `hitBreakpointIds` and `breakpoint` events.
    dap_id: Option<i64>,
    verified: bool,
    line: Option<u64>,
    /// Where in the line, when the adapter says (debugpy places breakpoints by line only).
    column: Option<u64>,
    message: Option<String>,
}

impl Placed {
    /// Records where the adapter placed it (`line`: [`Flavour::placed_line`]).
    fn placed(&mut self, answer: &Value, line: Result<Option<u64>, String>) {
        match line {
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
}

/// The adapter a launched session started, and what runs it (for failures).
struct OwnAdapter {
    process: Debuggee,
    label: String,
}

/// What a DAP stop keeps: the stopped thread and its frames (the adapter's start-up trimmed).
pub(crate) struct Paused {
    thread: Value,
    frames: Vec<Value>,
    /// The session it is in: 0 the program's, then its children's.
    connection: usize,
}

impl Turn for Paused {
    type Key = usize;
    fn turn(&self) -> usize {
        self.connection
    }
}

impl Paused {
    fn frame_id(&self, index: usize) -> Value {
        self.frames.get(index).map_or(Value::Null, |f| f["id"].clone())
    }
}

pub(crate) struct Dap<F> {
    flavour: F,
    client: Client,
    /// The program's children the adapter offered (connection n is `children[n - 1]`).
    children: Vec<Child>,
    /// The children's events (tagged with their connection); `more_tx` keeps it open.
    more: Receiver<Value>,
    more_tx: Option<Sender<Value>>,
    /// Which session requests go to: set from the stop a call is about (0 the program's).
    on: usize,
    /// One session's stop shown at a time: the others' held (they stay stopped).
    turns: Turns<Paused>,
    events: Receiver<Value>,
    /// `None` when attached: the adapter and the program are not ours.
    adapter: Option<OwnAdapter>,
    /// Whether the probe is in the program and its debugger socket has TCP_NODELAY: from
    /// our PYTHONPATH when launched, else done at the first stop (`install_probe_at`).
    prepared: bool,
    debuggee: Option<sys::ProcessGroup>,
    /// The program's command line, read when it said its pid.
    command: String,
    /// The `launch` or `attach` request's answer, awaited once configuration is done.
    started: Option<(&'static str, Receiver<dap::Reply>)>,
    pause_on_exceptions: String,
    /// Whether exceptions raised and caught in the standard library and installed packages
    /// stop the program.
    include_libraries: bool,
    /// The adapter was launched leaving library code out (`Flavour::pass_over_libraries`).
    libraries_left_out: bool,
    /// The last stop for a raised exception, to pass over its unwinding.
    last_raise: Option<Raise>,
    /// A thread to pause, from `thread` events.
    thread: Option<Value>,
    placed: Vec<Placed>,
    output: Output,
    /// What happened while setting up, for the actor.
    early: Vec<Happening<Paused>>,
    /// Everything of ours was ended or let go.
    done: bool,
    /// The adapter ended under the program (its connection closed without the program's
    /// end): what `debugger_ended` says.
    ended_under: Option<(String, Value)>,
    /// The exit code an adapter said in words before `terminated` ([`Flavour::exit_said`]).
    exit_code: Option<i32>,
    /// A signal the program stopped at: its end by it is said as the signal.
    fatal_signal: Option<i32>,
    /// The program's first `pause` stop is the adapter's, as it loads: passed over.
    load_pause: bool,
    /// Whether the adapter has data breakpoints (`supportsDataBreakpoints`).
    data_breakpoints: bool,
    /// Whether the program is ours to end (launched), or only to let go (attached).
    owns_program: bool,
    /// The armed watchpoints: the session's id, the adapter's `dataId`, the access.
    watching: Vec<(String, Value, String)>,
    /// A load pause that came before `configurationDone`: it goes on after it, once the
    /// breakpoints are set.
    load_paused: Option<Value>,
    configured: bool,
    /// Children that connect by themselves, and the `attach` arguments each is given.
    arrivals: Option<(dap::flavour::Arrivals, Value)>,
    /// Where an attached program's files are here (`elsewhere` for a gdb-remote server's too).
    files: Whereabouts,
}

impl<F: Flavour> Dap<F> {
    fn new(flavour: F, client: Client, adapter: Option<OwnAdapter>, prepared: bool) -> Dap<F> {
        let files = Whereabouts::elsewhere(flavour.runs_elsewhere());
        Dap {
            flavour,
            events: client.events().clone(),
            client,
            children: Vec::new(),
            more: never(),
            more_tx: None,
            on: 0,
            turns: Turns::default(),
            adapter,
            prepared,
            debuggee: None,
            command: String::new(),
            started: None,
            pause_on_exceptions: "none".into(),
            include_libraries: false,
            libraries_left_out: false,
            last_raise: None,
            thread: None,
            placed: Vec::new(),
            output: Output::default(),
            early: Vec::new(),
            done: false,
            ended_under: None,
            exit_code: None,
            fatal_signal: None,
            load_pause: false,
            load_paused: None,
            configured: false,
            arrivals: None,
            data_breakpoints: false,
            owns_program: false,
            watching: Vec::new(),
            files,
        }
    }

    /// `prepared`, with nothing of ours left running when it failed.
    fn ready(&mut self, prepared: Result<(), Failure>) -> Result<(), Failure> {
        prepared.inspect_err(|_| self.shutdown())
    }

    /// A request to the session a call is about ([`Dap::on`]).
    fn request(&mut self, command: &str, arguments: Value) -> Result<Value, Failure> {
        let reply = self.session(self.on).send(command, arguments);
        let answer = wait(&reply, self.flavour.adapter());
        // An adapter whose program a signal stopped waits for it (pydevd answers from inside
        // the program): say so rather than that the adapter is slow.
        let program = self.debuggee.map(|g| g.pid()).and_then(sys::Process::now);
        match answer {
            Err(Failure::Error { code: Code::AdapterFailed, .. })
                if program.is_some_and(|p| p.is_stopped()) =>
            {
                let pid = program.map_or(0, |p| p.pid);
                Err(Failure::new(
                    Code::ProgramStopped,
                    format!(
                        "the program (pid {pid}) is stopped by a signal, not ended: it stopped \
                         itself (SIGSTOP) or read a terminal it does not own (SIGTTIN), and \
                         waits for SIGCONT; {} cannot answer for it. debug-stop ends it",
                        self.flavour.adapter()
                    ),
                ))
            }
            answer => answer,
        }
    }

    /// The session of `connection`: 0 the program's, then its children's.
    fn session(&mut self, connection: usize) -> &mut Client {
        match connection.checked_sub(1).and_then(|c| self.children.get_mut(c)) {
            Some(child) => &mut child.client,
            None => &mut self.client,
        }
    }

    /// Every breakpoint of every file, as `setBreakpoints` arguments.
    fn breakpoint_lists(&self) -> Vec<Value> {
        let mut files: Vec<&PathBuf> = self.placed.iter().map(|b| &b.path).collect();
        files.sort();
        files.dedup();
        files.into_iter().map(|file| self.breakpoint_list(file)).collect()
    }

    /// A file's breakpoints as `setBreakpoints` arguments.
    fn breakpoint_list(&self, file: &PathBuf) -> Value {
        let list: Vec<Value> = self
            .placed
            .iter()
            .filter(|b| &b.path == file)
            .map(|Placed { id, spec, .. }| {
                let mut bp = json!({"line": spec.line});
                if let Some(c) = &spec.condition {
                    bp["condition"] = c.as_str().into();
                }
                if let Some(m) = &spec.log_message {
                    bp["logMessage"] = self.flavour.logpoint_message(id, m, self.prepared).into();
                }
                bp
            })
            .collect();
        json!({"source": {"path": file.display().to_string()}, "breakpoints": list})
    }

    fn initialize(&mut self) -> Result<(), Failure> {
        let initialize =
            self.client.send("initialize", dap::initialize_arguments(self.flavour.adapter()));
        match wait(&initialize, self.flavour.adapter()) {
            Ok(capabilities) => {
                self.data_breakpoints = capabilities["supportsDataBreakpoints"] == true;
                Ok(())
            }
            Err(failure) => Err(self.adapter_failure(failure)),
        }
    }

    /// After `initialize`: sends `request` (`launch` or `attach`) and waits for the adapter's
    /// `initialized` event, after which breakpoints may be set.
    fn prepare(&mut self, request: &'static str, arguments: Value) -> Result<(), Failure> {
        let mut launch = self.client.send(request, arguments);
        let events = self.events.clone();
        let limit = crossbeam_channel::after(REQUEST_TIMEOUT);
        // lldb-dap answers `launch` at once, before `initialized`: kept for `begin`.
        let mut answered = None;
        let mut said = dap::Said::default();
        loop {
            let waiting = if answered.is_some() { &never() } else { &launch };
            select! {
                recv(events) -> event => match event {
                    Ok(event) if event["event"] == "initialized" => break,
                    Ok(event) => {
                        said.hear(&event);
                        if let Some(happening) = self.handle_event(event) {
                            self.early.push(happening);
                        }
                    }
                    Err(_) => return Err(self.adapter_failure(Failure::new(Code::AdapterFailed, format!("{}'s adapter ended", self.flavour.adapter())))),
                },
                recv(waiting) -> answer => {
                    if let Ok(Ok(body)) = answer {
                        answered = Some(body);
                        continue;
                    }
                    let message = match answer { Ok(Err(m)) => m, _ => format!("{request} ended early") };
                    return Err(match request {
                        "launch" => said.hear_waiting(&events).launch_failed(self.flavour.adapter(), &message),
                        _ if message.contains("already being debugged") => Failure::new(Code::AttachFailed, format!(
                            "{} could not attach to the program: {message} Another client is attached: end its session (debug-stop, or detach the other debugger) first", self.flavour.adapter())),
                        _ => Failure::new(Code::AttachFailed, format!("{} could not attach to the program: {message}", self.flavour.adapter())),
                    });
                },
                recv(limit) -> _ => return Err(Failure::new(Code::AdapterFailed, format!("{} did not get ready in time", self.flavour.adapter()))),
            }
        }
        if let Some(body) = answered {
            launch = dap::answered(body);
        }
        self.started = Some((request, launch));
        Ok(())
    }

    /// Explains an adapter that ended early, in its words (debugpy: most often, it is not
    /// installed for that interpreter); `failure` stands when the adapter is still there.
    fn adapter_failure(&mut self, failure: Failure) -> Failure {
        let Some(adapter) = &mut self.adapter else { return failure };
        if adapter.process.try_exit().is_none() {
            match adapter.process.exited().recv_timeout(Duration::from_millis(500)) {
                Ok(exit) => adapter.process.record_exit(exit),
                Err(_) => return failure,
            }
        }
        self.flavour.adapter_failed(&mut adapter.process, &self.client, &adapter.label)
    }

    /// Sends a file's whole breakpoint list and records what the adapter made of each.
    fn sync_file(&mut self, file: &PathBuf) -> Result<(), Failure> {
        let indices: Vec<usize> =
            (0..self.placed.len()).filter(|&i| &self.placed[i].path == file).collect();
        let list = self.breakpoint_list(file);
        // The children's answers are not waited for: where breakpoints land is the program's.
        for child in self.children.iter_mut().filter(|c| c.open) {
            drop(child.client.send("setBreakpoints", list.clone()));
        }
        let answer = wait(&self.client.send("setBreakpoints", list), self.flavour.adapter())?;
        for (position, &i) in indices.iter().enumerate() {
            let got = &answer["breakpoints"][position];
            let bp = &mut self.placed[i];
            bp.dap_id = got["id"].as_i64();
            bp.message = got["message"].as_str().map(String::from);
            bp.placed(got, self.flavour.placed_line(got));
        }
        Ok(())
    }

    fn handle_event(&mut self, event: Value) -> Option<Happening<Paused>> {
        if event["type"] == "request" {
            self.client.refuse(&event);
            return None;
        }
        if let Some(offered) = self.flavour.offered(&event) {
            self.follow(offered);
            return None;
        }
        let body = &event["body"];
        match event["event"].as_str().unwrap_or_default() {
            "output" => {
                if let Some(code) = self.flavour.exit_said(body) {
                    self.exit_code = Some(code);
                    return None;
                }
                let message = dap::route_output(&self.flavour, body, &mut self.output)?;
                // debugpy sends a logpoint's message with `"source": {}`, no path or line,
                // so its owner is found by the message's shape: the one logpoint whose
                // literal text fits it.
                let text = message.trim_end_matches('\n');
                // Our logpoints' messages say whose they are.
                if let Some((id, text)) = self.flavour.logpoint_owner(text) {
                    let breakpoint = Some(id.to_string());
                    return Some(Happening::Logpoint { breakpoint, text: text.into() });
                }
                let mut owners = self.placed.iter().filter(|b| {
                    b.spec
                        .log_message
                        .as_deref()
                        .is_some_and(|template| self.flavour.logpoint_fits(template, text))
                });
                let breakpoint = match (owners.next(), owners.next()) {
                    (Some(b), None) => Some(b.id.clone()),
                    // Attached (no launcher), debugpy marks the program's own output with a
                    // `source` too: what fits no logpoint is the program's.
                    (None, _) if self.adapter.is_none() => {
                        self.output.push(body["category"] == "stderr", message);
                        return None;
                    }
                    _ => None,
                };
                return Some(Happening::Logpoint { breakpoint, text: text.into() });
            }
            // A process our adapter attached to (a core file's, whose pid may be another's by
            // now) is not ours to kill.
            "process" if body["startMethod"] == "attach" && self.adapter.is_some() => {}
            "process" => {
                self.debuggee = dap::process_group(body);
                let process = self.debuggee.and_then(|group| sys::Process::now(group.pid()));
                self.command =
                    process.map(|p| self.flavour.command_shown(&p.command())).unwrap_or_default();
            }
            "thread" if body["reason"] == "started" && self.thread.is_none() => {
                self.thread = Some(body["threadId"].clone())
            }
            "breakpoint" => {
                let changed = &body["breakpoint"];
                let id = changed["id"].as_i64();
                if let Some(bp) =
                    self.placed.iter_mut().find(|b| b.dap_id.is_some() && b.dap_id == id)
                {
                    bp.placed(changed, self.flavour.placed_line(changed));
                }
            }
            "stopped" => return self.stopped(0, body.clone()),
            "continued" if self.turns.shown().is_none_or(|c| *c == 0) => {
                self.turns.resumed(&0);
                return Some(Happening::Resumed);
            }
            "exited" => {
                let code = body["exitCode"].as_i64().and_then(|c| i32::try_from(c).ok());
                return Some(Happening::Ended(code));
            }
            "terminated" => {
                if self.exit_code.is_none() && self.owns_program && self.adapter.is_some() {
                    self.exit_code = dap::exit_said_at_disconnect(&self.flavour, &mut self.client);
                }
                return Some(Happening::Ended(self.exit_code));
            }
            _ => {}
        }
        None
    }

    /// A stopped thread's frames, the adapter's own start-up frames (debugpy's runpy) left
    /// out.
    fn frames(&mut self, thread: &Value) -> Vec<Value> {
        self.request("stackTrace", json!({"threadId": thread, "levels": STACK_LEVELS}))
            .map(|trace| dap::program_frames(&self.flavour, &trace))
            .unwrap_or_default()
    }

    /// A stack frame as a line of an exception's traceback (the stack where it stopped: where
    /// the exception was raised, or where it reached the top when it was not caught).
    fn trace_frame(&self, frame: &Value) -> TraceFrame {
        let file = frame.pointer("/source/path").and_then(Value::as_str).unwrap_or_default();
        TraceFrame {
            function: frame["name"].as_str().unwrap_or_default().to_string(),
            file: file.to_string(),
            line: frame["line"].as_u64().and_then(|line| u32::try_from(line).ok()),
            library: file.is_empty() || self.flavour.is_library(file),
        }
    }

    fn stopped(&mut self, connection: usize, body: Value) -> Option<Happening<Paused>> {
        self.on = connection;
        self.fatal_signal = dap::stop_signal(&body).or(self.fatal_signal);
        let thread = body["threadId"].clone();
        if std::mem::take(&mut self.load_pause) && body["reason"] == "pause" {
            match self.configured {
                true => {
                    drop(self.session(connection).send("continue", json!({"threadId": thread})))
                }
                false => self.load_paused = Some(thread),
            }
            return None;
        }
        let frames = self.frames(&thread);
        // A child's breakpoint ids are its session's own: its stops are matched by line.
        let hit_ids: Vec<i64> = body["hitBreakpointIds"]
            .as_array()
            .filter(|_| connection == 0)
            .map(|ids| ids.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default();
        // lldb-dap says a watchpoint's stop is a breakpoint's, `watchpoint N` in words.
        let watchpoint = body["description"].as_str().is_some_and(|d| d.starts_with("watchpoint"));
        let reason = match body["reason"].as_str().unwrap_or_default() {
            "data breakpoint" => Reason::Watchpoint,
            "breakpoint" if watchpoint => Reason::Watchpoint,
            "breakpoint" => Reason::Breakpoint,
            "exception" => Reason::Exception,
            "entry" => Reason::Entry,
            "pause" => Reason::Pause,
            "step" => Reason::Step,
            _ => Reason::Unsaid,
        };
        let top = frames.first().cloned().unwrap_or(Value::Null);
        let mut hits: Vec<String> = self
            .placed
            .iter()
            .filter(|b| b.dap_id.is_some_and(|id| hit_ids.contains(&id)))
            .map(|b| b.id.clone())
            .collect();
        // Without ids, a breakpoint stop is at the breakpoints on its line.
        if hits.is_empty() && reason == Reason::Breakpoint {
            let file = top.pointer("/source/path").and_then(Value::as_str).unwrap_or_default();
            hits = self
                .placed
                .iter()
                .filter(|b| {
                    b.verified
                        && b.line == top["line"].as_u64()
                        && b.path.display().to_string() == file
                })
                .map(|b| b.id.clone())
                .collect();
        }
        let info = match reason {
            Reason::Exception => self.request("exceptionInfo", json!({"threadId": thread})).ok(),
            _ => None,
        };
        // debugpy appends "(note: full exception trace is shown but ...)" to the class.
        let class = info.as_ref().map(|info| {
            let class = info["exceptionId"].as_str().unwrap_or_default();
            class.split("(note:").next().unwrap_or_default().trim().to_string()
        });
        // The program ending (`sys.exit(1)`, `sys.exit(main())`) is no failure to stop at.
        if class.as_deref().is_some_and(|class| self.flavour.is_exit(class)) {
            drop(self.session(connection).send("continue", json!({"threadId": thread})));
            return None;
        }
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
            let top = top.pointer("/source/path").and_then(Value::as_str);
            let library =
                top.is_some_and(|x| self.flavour.is_library(x)) && !self.include_libraries;
            if library || last_raise.is_some_and(|last| raise.unwinds(&last)) {
                drop(self.session(connection).send("continue", json!({"threadId": thread})));
                return None;
            }
        }
        let exception = info.map(|info| Exception {
            class: class.unwrap_or_default().into(),
            message: info["description"].clone(),
            stack: frames.iter().map(|frame| self.trace_frame(frame)).collect(),
            uncaught: !matches!(info["breakMode"].as_str(), Some("always" | "userUnhandled")),
            user_unhandled: info["breakMode"] == "userUnhandled",
        });
        if !self.prepared {
            self.install_probe_at(&top["id"]);
        }
        if connection == 0 {
            self.thread = Some(thread.clone());
        }
        Some(Happening::Stopped(Stop {
            reason,
            hits,
            location: location(&top, &self.files),
            exception,
            frames: frames.len(),
            paused: Paused { thread, frames, connection },
        }))
    }

    /// At the first stop of a program without our sitecustomize.py (attached to, or run
    /// with -I, -E or -S): the probe and TCP_NODELAY ([`Flavour::install_probe`]). Every
    /// request after it is ~40 ms faster.
    fn install_probe_at(&mut self, frame_id: &Value) {
        self.prepared = true;
        let expression = self.flavour.install_probe();
        let prepared = self.request(
            "evaluate",
            json!({"expression": expression, "frameId": frame_id, "context": "watch"}),
        );
        if let Err(failure) = prepared {
            log::warn(format_args!("installing the probe in the program: {failure:?}"));
        }
    }

    /// The adapter's `loadedSources`, when it answers them.
    fn adapter_sources(&mut self) -> Result<Vec<Source>, Failure> {
        self.on = 0;
        let answer = self.request("loadedSources", json!({})).map_err(|_| {
            Failure::new(
                Code::Unsupported,
                format!(
                    "{} does not list loaded sources (no `loadedSources`): set breakpoints by \
                     file and line in the program's source files",
                    self.flavour.adapter()
                ),
            )
        })?;
        let sources = answer["sources"].as_array().into_iter().flatten();
        Ok(sources
            .filter_map(|s| s["path"].as_str())
            .map(|f| Source { file: f.into(), url: f.into(), source_map: None })
            .collect())
    }

    /// An adapter without a probe: its own `evaluate`, typed (`dap::typed`); an expression
    /// it cannot evaluate is `{type: "error"}`, as a probe reports it.
    fn evaluate_plain(
        &mut self,
        frame_id: &Value,
        expression: &str,
        max_chars: usize,
    ) -> Result<Value, Failure> {
        let arguments = json!({"expression": expression, "frameId": frame_id, "context": "watch"});
        let answer = match self.request("evaluate", arguments) {
            Ok(answer) => answer,
            Err(Failure::Error { message, .. }) => {
                return Ok(dap::evaluation_error(&self.flavour, &message))
            }
            Err(other) => return Err(other),
        };
        let flavour = self.flavour.clone();
        let mut value = dap::typed(&flavour, &answer, |reference| {
            self.variables_of(reference).unwrap_or_default()
        });
        if let Some(text) = value["value"].as_str().filter(|t| t.chars().count() > max_chars) {
            value["value"] = text.chars().take(max_chars).collect::<String>().into();
            value["truncated"] = true.into();
        }
        Ok(value)
    }

    /// Ends or lets go of everything of ours, once.
    /// When the connection closed: whether our adapter ended (killed, crashed) rather than
    /// let the program end, and if so how, what it said last, and whether the program still
    /// ran (`end` then kills it).
    fn adapter_ended(&mut self) -> Option<(String, Value)> {
        let adapter = self.adapter.as_mut()?;
        let exit = adapter.process.try_exit().or_else(|| {
            let exit = adapter.process.exited().recv_timeout(Duration::from_millis(300)).ok()?;
            adapter.process.record_exit(exit);
            Some(exit)
        })?;
        let name = self.flavour.adapter().to_string();
        let pid = adapter.process.pid();
        let (_, stderr, ..) = adapter.process.output().since(0, 0);
        let stderr = crate::debugger::limits::clip_end(stderr.trim(), 1000);
        let program = self.debuggee.map(|g| g.pid());
        let running = program.is_some_and(|pid| sys::Process::now(pid).is_some_and(|p| p.alive()));
        let fate = match (program, running) {
            (Some(pid), true) => {
                format!("the program (pid {pid}) still ran, and debug-mcp killed it")
            }
            (Some(pid), false) => format!("the program (pid {pid}) had ended"),
            (None, _) => "the program had not started".to_string(),
        };
        let mut ended = json!({"adapter": name, "pid": pid, "program": fate});
        match (exit.code, exit.signal) {
            (Some(code), _) => ended["exitCode"] = code.into(),
            (None, Some(signal)) => ended["signal"] = sys::signal_name(signal).into(),
            (None, None) => {}
        }
        if !stderr.is_empty() {
            ended["stderr"] = stderr.clone().into();
        }
        let said = match stderr.is_empty() {
            true => String::new(),
            false => format!("; it said last: {stderr}"),
        };
        let message = format!(
            "the debugger ended under the program: {name} (pid {pid}) {} while the session \
             ran; {fate}{said}. Start the session again (debug-launch)",
            exit.describe()
        );
        Some((message, ended))
    }

    fn kill_all(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }

        for child in &mut self.children {
            child.client.close_input();
        }
        if !self.owns_program {
            // lldb-dap kills a program it detaches from with a watchpoint armed: cleared first
            // (answered before the `disconnect`, which is awaited).
            if !std::mem::take(&mut self.watching).is_empty() {
                drop(self.client.send("setDataBreakpoints", json!({"breakpoints": []})));
            }
            // Not ours: detach. debugpy drops our breakpoints and lets the program run on.
            self.client.disconnect(false);
            self.client.close_input();
            if let Some(adapter) = &mut self.adapter {
                adapter.process.kill();
            }
            return;
        }
        let Some(adapter) = &mut self.adapter else { return };
        match self.debuggee {
            Some(group) => group.kill(),
            // Started, perhaps, but not yet said: the adapter knows and ends it.
            None => self.client.disconnect(true),
        }
        adapter.process.kill();
    }
}

/// A DAP stack frame as a location, its file as `files` shows it.
fn location(frame: &Value, files: &Whereabouts) -> Location {
    let file = frame.pointer("/source/path").and_then(Value::as_str).map(String::from);
    Location {
        function: frame["name"].as_str().unwrap_or_default().into(),
        file: file.map(|f| files.show(f)),
        line: frame["line"].as_u64().unwrap_or(0),
        column: frame["column"].as_u64(),
        generated: None,
    }
}

/// `adapter`'s answer to a request, within [`REQUEST_TIMEOUT`].
fn wait(reply: &Receiver<dap::Reply>, adapter: &str) -> Result<Value, Failure> {
    match reply.recv_timeout(REQUEST_TIMEOUT) {
        Ok(Ok(body)) => Ok(body),
        Ok(Err(message)) => Err(Failure::new(Code::AdapterFailed, format!("{adapter}: {message}"))),
        Err(_) => {
            Err(Failure::new(Code::AdapterFailed, format!("{adapter} did not answer in time")))
        }
    }
}

impl<F: Flavour> Backend for Dap<F> {
    type Event = Value;
    type Paused = Paused;

    fn language(&self) -> &str {
        self.flavour.language()
    }
    const EVALUATES_RUNNING: bool = false;

    fn inputs(&self) -> Inputs<Value> {
        // A held stop is due as soon as no stop is shown.
        let tick =
            if self.turns.due() { crossbeam_channel::after(Duration::ZERO) } else { never() };
        Inputs { events: self.events.clone(), exited: never(), tick, more: self.more.clone() }
    }

    fn handle(&mut self, input: Input<Value>) -> Option<Happening<Paused>> {
        match input {
            Input::Event(event) => self.take(event),
            // An adapter that is the program (our own Python debugger) closes its connection
            // as the program ends: its exit is the program's.
            Input::Closed if self.flavour.adapter_is_program() && self.owns_program => {
                self.events = never();
                let exit = self.adapter.as_mut().map(|a| a.process.finish(Duration::from_secs(2)));
                Some(Happening::Ended(exit.and_then(|exit| exit.code)))
            }
            Input::Closed => {
                self.events = never();
                self.ended_under = self.adapter_ended();
                Some(Happening::Ended(None))
            }
            Input::Tick => self.turns.next(),
            Input::Exited(_) => None,
        }
    }

    fn early(&mut self) -> Vec<Happening<Paused>> {
        std::mem::take(&mut self.early)
    }

    fn begin(&mut self) -> Result<(), Failure> {
        self.on = 0;
        let filters = self.flavour.exception_filters(&self.pause_on_exceptions);
        self.request("setExceptionBreakpoints", json!({"filters": filters}))?;
        let done = self.request("configurationDone", json!({}));
        // gdb answers a failed `launch` only after `initialized`: that failure is the one
        // that explains a refused configurationDone.
        if let Some((request, started)) = &mut self.started {
            match started.try_recv() {
                Ok(Err(message)) => {
                    return Err(Failure::new(
                        Code::LaunchFailed,
                        format!(
                            "{} could not {request} the program: {message}",
                            self.flavour.adapter()
                        ),
                    ))
                }
                Ok(Ok(body)) => *started = dap::answered(body),
                Err(_) => {}
            }
        }
        done?;
        self.configured = true;
        if let Some((_, started)) = self.started.take() {
            wait(&started, self.flavour.adapter())?;
        }
        if let Some(thread) = self.load_paused.take() {
            self.request("continue", json!({"threadId": thread}))?;
        }
        Ok(())
    }

    fn set_breakpoint(&mut self, id: &str, spec: &BreakpointSpec) -> Result<(), Failure> {
        self.on = 0;
        // An adapter keeps one breakpoint per line: a second would silently replace the first.
        let same = |b: &&Placed| b.spec.real_file == spec.real_file && b.spec.line == spec.line;
        if let Some(there) = self.placed.iter().find(same) {
            return Err(Failure::new(
                Code::DuplicateBreakpoint,
                format!(
                    "line {} of {} already has breakpoint {}: {} keeps one breakpoint per line; \
                     remove it first (debug-breakpoint with `remove`), then set the one you want",
                    spec.line,
                    spec.file.display(),
                    there.id,
                    self.flavour.adapter()
                ),
            ));
        }
        let path = self.flavour.breakpoint_path(&spec.file, &spec.real_file);
        // A file of the program's that is not here, as an answer showed it (`remote:/x.go`).
        let path =
            path.to_str().and_then(paths::unmarked).map_or(path.to_path_buf(), PathBuf::from);
        self.placed.push(Placed {
            id: id.to_string(),
            spec: spec.clone(),
            path: path.clone(),
            dap_id: None,
            verified: false,
            line: None,
            column: None,
            message: None,
        });
        if let Err(failure) = self.sync_file(&path) {
            self.placed.pop();
            return Err(failure);
        }
        Ok(())
    }

    fn remove_breakpoint(&mut self, id: &str) -> Result<(), Failure> {
        self.on = 0;
        let Some(index) = self.placed.iter().position(|b| b.id == id) else { return Ok(()) };
        let removed = self.placed.remove(index);
        self.sync_file(&removed.path)
    }

    fn resolution(&self, id: &str) -> Resolution {
        let Some(bp) = self.placed.iter().find(|b| b.id == id) else {
            return Resolution::default();
        };
        match (bp.verified, bp.line) {
            (true, Some(line)) => Resolution {
                resolved: vec![json!({"file": bp.spec.file.display().to_string(), "line": line,
                                      "column": bp.column})],
                ..Resolution::default()
            },
            _ => {
                Resolution {
                    reason: Some(bp.message.clone().unwrap_or_else(|| {
                        "not bound yet; it binds when its file is imported".into()
                    })),
                    ..Resolution::default()
                }
            }
        }
    }

    fn set_watchpoint(
        &mut self,
        id: &str,
        expression: &str,
        access: &str,
        paused: &Paused,
    ) -> Result<String, Failure> {
        self.watch(id, expression, access, paused)
    }

    fn remove_watchpoint(&mut self, id: &str) -> Result<(), Failure> {
        self.watching.retain(|(watched, ..)| watched != id);
        self.sync_watchpoints()
    }

    fn resume(&mut self, action: Action, paused: Option<&Paused>) -> Result<(), Failure> {
        let thread = match (paused, action) {
            (Some(paused), _) => paused.thread.clone(),
            (None, Action::Pause) => self.thread.clone().unwrap_or(json!(1)),
            (None, _) => return Ok(()),
        };
        let command = match action {
            Action::Continue => "continue",
            Action::StepOver => "next",
            Action::StepInto => "stepIn",
            Action::StepOut => "stepOut",
            Action::Pause => "pause",
        };
        self.on = paused.map_or(0, |p| p.connection);
        self.request(command, json!({"threadId": thread}))?;
        if paused.is_some() {
            // The shown stop goes on: a held one is due. A step keeps the session's turn.
            self.turns.went_on(action != Action::Continue);
        }
        Ok(())
    }

    fn stack(&mut self, paused: &Paused, max: usize, _: bool) -> (Vec<Frame>, Option<usize>) {
        // DAP has no awaited-caller chain apart from the frames: `includeAsync` changes
        // nothing (documented in docs/limits.md).
        let frames = paused.frames.iter().take(max);
        (
            frames
                .map(|f| Frame { location: location(f, &self.files), async_reason: None })
                .collect(),
            None,
        )
    }

    fn locals(&mut self, paused: &Paused, max: usize) -> Vec<Variable> {
        self.on = paused.connection;
        let names = self.flavour.scope_names("local").unwrap_or_default();
        let mut locals = self.named_scopes(&paused.frame_id(0), names, 0, max);
        for variable in locals.iter_mut().flatten() {
            variable.scope = None;
        }
        locals.unwrap_or_default()
    }

    fn scope_variables(
        &mut self,
        paused: &Paused,
        query: &VariablesQuery,
    ) -> Result<Vec<Variable>, Failure> {
        self.on = paused.connection;
        let names = self.flavour.scope_names(&query.scope).map_err(|why| {
            Failure::new(Code::InvalidArguments, format!("invalid argument `scope`: {why}"))
                .with("field", "scope".into())
        })?;
        self.named_scopes(&paused.frame_id(query.frame), names, query.start, query.max_items)
    }

    fn expand(
        &mut self,
        paused: &Paused,
        path: &str,
        query: &VariablesQuery,
    ) -> Result<(Value, Value, Vec<Variable>), Failure> {
        self.on = paused.connection;
        let frame = paused.frame_id(query.frame);
        let arguments = json!({"expression": path, "frameId": frame, "context": "watch"});
        let answer = self.request("evaluate", arguments).map_err(|f| match f {
            Failure::Error { message, .. } => {
                Failure::new(Code::InvalidPath, format!("`{path}`: {message}"))
            }
            other => other,
        })?;
        let children = match answer["variablesReference"].as_i64() {
            Some(r) if r > 0 => {
                let reference = &answer["variablesReference"];
                self.children(reference, query.start, query.max_items, false)?
            }
            _ => Vec::new(),
        };
        Ok((answer["type"].clone(), answer["result"].clone(), children))
    }

    fn evaluate(
        &mut self,
        paused: Option<&Paused>,
        expression: &str,
        frame: usize,
        max_chars: usize,
    ) -> Result<Value, Failure> {
        self.on = paused.map_or(0, |p| p.connection);
        let frame_id = paused.map_or(Value::Null, |p| p.frame_id(frame));
        let Some(probe) = self.flavour.probe(expression, true, Some(max_chars)) else {
            return self.evaluate_plain(&frame_id, expression, max_chars);
        };
        let answer = self.request(
            "evaluate",
            json!({"expression": probe, "frameId": frame_id,
            "context": "watch", "format": {"rawString": true}}),
        )?;
        let text = answer["result"].as_str().unwrap_or_default();
        let (truncated, payload) = self.flavour.probe_result(text).unwrap_or((false, ""));
        crate::debugger::script::probe_value(truncated, payload, text)
    }

    fn set_variable(
        &mut self,
        paused: &Paused,
        name: &str,
        value: &str,
        frame: usize,
        scope: &str,
        max_chars: usize,
    ) -> Result<Value, Failure> {
        self.on = paused.connection;
        let wanted = self
            .flavour
            .scope_names(if scope == "global" { "global" } else { "local" })
            .unwrap_or_default();
        let scopes = self.request("scopes", json!({"frameId": paused.frame_id(frame)}))?;
        let reference = scopes["scopes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| wanted.iter().any(|w| s["name"] == *w))
            .map(|s| s["variablesReference"].clone());
        let Some(reference) = reference else {
            return Err(Failure::new(
                Code::NoVariable,
                format!("frame {frame} has no {scope} scope"),
            ));
        };
        let known = self.children(&reference, 0, usize::MAX, true)?.iter().any(|v| v.name == name);
        if !known {
            return Err(Failure::new(Code::NoVariable, format!("no `{name}` in the {scope} scope of frame {frame}: list them with debug-variables")));
        }
        // Evaluated once, where a failure shows (debugpy would keep the old value and say
        // nothing), then handed over.
        let handed = match self.flavour.hold(value) {
            Some((held, handed)) => {
                let checked = self.evaluate(Some(paused), &held, frame, VALUE_CHARS)?;
                if checked["type"] == "error" {
                    let why = checked["value"].as_str().unwrap_or_default();
                    return Err(Failure::new(Code::InvalidExpression, format!("`value`: {why}"))
                        .with("field", "value".into()));
                }
                handed
            }
            None => value,
        };
        let set = self.request(
            "setVariable",
            json!({"variablesReference": reference, "name": name,
                   "value": handed}),
        );
        set.map_err(|f| match f {
            Failure::Error { message, .. } => {
                Failure::new(Code::InvalidExpression, format!("`value`: {message}"))
                    .with("field", "value".into())
            }
            other => other,
        })?;
        // Frames and their variables change with the value: read it back through the probe.
        self.evaluate(Some(paused), name, frame, max_chars)
    }

    /// The program's threads (by the adapter's ids), then each followed child's (`pid/id`).
    fn threads(&mut self, paused: Option<&Paused>) -> Result<(Vec<Thread>, String), Failure> {
        let mut threads = Vec::new();
        for connection in 0..=self.children.len() {
            let pid = match connection.checked_sub(1) {
                Some(c) if self.children[c].open => self.children[c].pid,
                Some(_) => continue,
                None => None,
            };
            self.on = connection;
            let answer = match self.request("threads", json!({})) {
                Ok(answer) => answer,
                Err(failure) if connection == 0 => return Err(failure),
                Err(_) => continue,
            };
            let held = self.turns.holds(&connection);
            for t in answer["threads"].as_array().into_iter().flatten() {
                let name = t["name"].as_str().unwrap_or_default();
                threads.push(match pid {
                    Some(pid) => Thread {
                        id: format!("{pid}/{}", t["id"]),
                        name: format!("pid {pid}: {name}{}", if held { ", paused" } else { "" }),
                    },
                    None => Thread { id: t["id"].to_string(), name: name.into() },
                });
            }
        }
        let current = match paused {
            Some(p) => self.thread_id(p.connection, &p.thread),
            None => self.thread.as_ref().map(|t| t.to_string()).unwrap_or_default(),
        };
        Ok((threads, current))
    }

    /// A thread of the stopped process, or of a child whose stop is held (the stop shown until
    /// then is held in turn). A child that runs is not stopped for this.
    fn select_thread(&mut self, paused: &Paused, id: &str) -> Result<Stop<Paused>, Failure> {
        let unknown = |why: &str| Failure::new(Code::InvalidArguments, why);
        let (connection, thread) = match id.split_once('/') {
            Some((pid, thread)) => {
                let index =
                    self.children.iter().position(|c| c.pid.is_some_and(|p| p.to_string() == pid));
                (index.map(|i| i + 1), thread)
            }
            None => (Some(0), id),
        };
        let thread: Value = serde_json::from_str(thread)
            .ok()
            .filter(|_| connection.is_some())
            .ok_or_else(|| unknown(&format!("no thread `{id}`: debug-stack lists them")))?;
        let connection = connection.unwrap_or_default();
        if connection != paused.connection {
            let Some(stop) = self.turns.take_held(&connection) else {
                return Err(unknown(&format!(
                    "thread `{id}` runs: its process is not stopped (it stops at its breakpoints; \
                     debug-stack's `threads` say `, paused` when it waits its turn)"
                )));
            };
            let shown = Paused {
                thread: paused.thread.clone(),
                frames: paused.frames.clone(),
                connection: paused.connection,
            };
            let top = shown.frames.first().cloned().unwrap_or(Value::Null);
            let frames = shown.frames.len();
            let shown = Stop {
                reason: Reason::Pause,
                hits: Vec::new(),
                location: location(&top, &self.files),
                exception: None,
                frames,
                paused: shown,
            };
            self.turns.hold_first(shown, connection);
            if stop.paused.thread == thread {
                return Ok(stop);
            }
        }
        self.on = connection;
        let (threads, _) = self.threads(None)?;
        self.on = connection;
        if !threads.iter().any(|t| t.id == id) {
            return Err(unknown(&format!("no thread `{id}`: debug-stack lists them")));
        }
        let frames = self.frames(&thread);
        let top = frames.first().cloned().unwrap_or(Value::Null);
        Ok(Stop {
            reason: Reason::Pause,
            hits: Vec::new(),
            location: location(&top, &self.files),
            exception: None,
            frames: frames.len(),
            paused: Paused { thread, frames, connection },
        })
    }

    fn pause_on_exceptions(
        &mut self,
        state: &str,
        include_libraries: bool,
    ) -> Result<Option<String>, Failure> {
        self.include_libraries = include_libraries;
        self.pause_on_exceptions = state.to_string();
        let filters = self.flavour.exception_filters(state);
        for child in self.children.iter_mut().filter(|c| c.open) {
            drop(child.client.send("setExceptionBreakpoints", json!({"filters": filters})));
        }
        self.on = 0;
        self.request("setExceptionBreakpoints", json!({"filters": filters}))?;
        let note = (include_libraries && self.libraries_left_out).then(|| {
            format!(
                "the program was started with pauseOnExceptions all, so {} leaves library code \
                 out (it never stops there): libraries' exceptions stop it from the next \
                 debug-restart on",
                self.flavour.adapter()
            )
        });
        Ok(note)
    }

    /// The program's loaded files, asked of the paused program itself (debugpy does not
    /// answer `loadedSources`).
    fn loaded_sources(
        &mut self,
        paused: Option<&Paused>,
        include_internal: bool,
    ) -> Result<Vec<Source>, Failure> {
        let Some(paused) = paused else {
            return Err(Failure::new(
                Code::Running,
                "this program lists its loaded files only while paused: pause it first (debug-continue with `pause: true`)",
            ));
        };
        let Some(expression) = self.flavour.loaded_files() else {
            return self.adapter_sources();
        };
        let answer = self.evaluate(Some(paused), expression, 0, VALUE_CHARS)?;
        let Some(files) = answer["value"].as_array() else {
            return Err(Failure::new(Code::Internal, format!("unreadable module list: {answer}")));
        };
        Ok(files
            .iter()
            .filter_map(Value::as_str)
            .filter(|f| include_internal || !self.flavour.is_library(f))
            .filter(|f| !self.flavour.is_helper(f))
            .map(|f| Source { file: f.into(), url: f.into(), source_map: None })
            .collect())
    }

    fn source_text(&mut self, file: &str) -> Result<Value, Failure> {
        Err(Failure::new(Code::FileNotFound, format!("{file} is not on disk")))
    }

    fn output(&self) -> Output {
        self.output.clone()
    }

    fn processes(&self) -> Vec<Value> {
        let Some(program) = self.debuggee else { return Vec::new() };
        let (pid, command) = (program.pid(), self.command.as_str());
        let program = Debugged { pid, command, parent: None, hits: None, threads: Vec::new() };
        let seen = self.adapter.as_ref().map(|a| a.process.descendants(Some(pid)));
        let seen = seen.unwrap_or_default();
        let open = self.children.iter().filter(|c| c.open);
        let children = open.filter_map(|c| c.debugged(&seen));
        std::iter::once(program).chain(children).map(|p| p.to_json()).collect()
    }

    fn stopped_in(&self, paused: &Paused) -> Option<Value> {
        let thread = self.thread_id(paused.connection, &paused.thread);
        match paused.connection.checked_sub(1).and_then(|c| self.children.get(c)) {
            Some(child) => Some(json!({"pid": child.pid?, "thread": thread,
                                       "command": crate::debugger::limits::clip(&child.command, 200)})),
            None => Some(json!({"pid": self.debuggee?.pid(), "thread": thread})),
        }
    }

    /// The adapter's descendants but the program and its followed children: processes the
    /// program started that are not debugged.
    fn undebugged(&self) -> Undebugged {
        let descendants = match (&self.adapter, self.debuggee) {
            (Some(adapter), Some(program)) => adapter.process.descendants(Some(program.pid())),
            _ => Vec::new(),
        };
        let followed: Vec<u32> = self.children.iter().filter_map(|c| c.pid).collect();
        Undebugged { processes: Undebugged::processes(descendants, &followed), workers: 0 }
    }

    fn end(&mut self, code: Option<i32>, _: bool) -> Exit {
        for child in &mut self.children {
            child.client.close_input();
        }
        match &mut self.adapter {
            // Our adapter exits when its input closes.
            Some(adapter) if self.owns_program => {
                self.client.close_input();
                let _ = adapter.process.finish(Duration::from_secs(2));
                // The program's last output is read before the answer says it ended.
                adapter.process.settle_output();
            }
            // Attached, this detaches first (an idle end), then closes the connection.
            _ => {}
        }
        self.kill_all();
        dap::exit_of(code, self.fatal_signal)
    }

    fn debugger_ended(&self) -> Option<(String, Value)> {
        self.ended_under.clone()
    }

    fn guessed_paths(&self) -> Option<&PathMapping> {
        self.files.guessed.as_ref()
    }

    fn attached_note(&self) -> Option<String> {
        self.adapter.is_none().then(|| {
            format!(
                "the attached program ended or {0} closed the connection; {0} does not tell an \
                 attached client the exit code",
                self.flavour.adapter()
            )
        })
    }

    fn shutdown(&mut self) {
        self.kill_all();
    }
}
