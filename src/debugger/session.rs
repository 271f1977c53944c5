//! One interactive debug session, for every runtime: a thread that owns a [`Backend`] for as
//! long as the session lives and answers tool calls sent to it as [`Command`]s.
//!
//! The thread is one loop in rust-analyzer's shape: [`Actor::next_event`] selects over
//! commands, the backend's inputs, the deadline of the call waiting for the next stop and the
//! idle limit; [`Actor::handle_event`] acts on one. A call that waits (launch, continue, step,
//! pause) parks its reply channel; the next stop, the program's end or the deadline answers
//! it, so no call hangs. The actor owns the breakpoint table, the console buffer and every
//! answer's JSON; the backend places breakpoints, reads frames and values, and ends the
//! program.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{never, select, Receiver, Sender};
use serde_json::{json, Value};

use crate::debugger::backend::{Backend, Happening, Input};
use crate::debugger::limits::clip;
use crate::debugger::limits::VALUE_PREVIEW;
use crate::debugger::model::{
    trace_text, Action, BreakpointSpec, Exception, Reason, Stop, VariablesQuery,
};
use crate::debugger::model::{AttachSpec, LaunchSpec};
use crate::debugger::{Code, Failure};
use crate::log;
use crate::process::{Exit, Output};
use crate::shell::CommandLine;
use crate::thread::JoinOnDrop;
use breakpoints::{UserBreakpoint, Watchpoint};
pub(crate) use console::Console;

mod breakpoints;
mod console;

/// Lines of source shown on each side of the current line.
const CONTEXT: usize = 2;
/// Locals shown in a stop state.
pub(crate) const MAX_LOCALS: usize = 50;
/// How long a request that failed waits to learn whether the program ended meanwhile.
const ENDING_GRACE: Duration = Duration::from_millis(500);
/// Characters of a watch expression's value in a stop state.
const WATCH_CHARS: usize = 4096;

/// A session with no call for this long ends (its program is killed), unless
/// `DEBUG_MCP_SESSION_IDLE_MS` says otherwise.
fn idle_limit() -> Duration {
    let ms = std::env::var("DEBUG_MCP_SESSION_IDLE_MS").ok().and_then(|v| v.parse().ok());
    Duration::from_millis(ms.unwrap_or(30 * 60 * 1000))
}

/// The two clocks a session thread selects on besides its channels: the deadline of the
/// call waiting for an answer, and the idle limit, so that a session nobody calls (and
/// nobody waits on) ends and nothing runs for ever.
pub(crate) struct Clocks {
    pub(crate) idle_limit: Duration,
    last_call: Instant,
}

impl Clocks {
    pub(crate) fn start() -> Clocks {
        Clocks::with_idle_limit(idle_limit())
    }

    pub(crate) fn with_idle_limit(idle_limit: Duration) -> Clocks {
        Clocks { idle_limit, last_call: Instant::now() }
    }

    pub(crate) fn called(&mut self) {
        self.last_call = Instant::now();
    }

    /// `(waiting, idle)` for one turn of the loop: `waiting` fires at the waiting call's
    /// deadline; `idle` only while no call waits and the program has not exited.
    pub(crate) fn turn(
        &self,
        waiting: Option<Instant>,
        exited: bool,
    ) -> (Receiver<Instant>, Receiver<Instant>) {
        let idle = match (exited, waiting) {
            (true, _) | (_, Some(_)) => never(),
            _ => crossbeam_channel::at(self.last_call + self.idle_limit),
        };
        (waiting.map_or(never(), crossbeam_channel::at), idle)
    }
}

pub(crate) struct Handle {
    pub(crate) commands: Sender<Command>,
    /// `{sessionId, state, ...}`, kept current by the session thread.
    pub(crate) summary: Arc<Mutex<Value>>,
    /// Held only to be joined on drop, after `commands` closes.
    pub(crate) _thread: JoinOnDrop,
}

/// The state a waiting call answers when nothing stopped the program while it waited (which
/// may be no time at all: an attach without breakpoints answers at once).
pub(crate) fn running_state(id: &str) -> Value {
    json!({"sessionId": id, "state": "running",
           "message": "the program is running: nothing stopped it while this call waited. Call \
                       debug-continue with `pause: true` to stop it, debug-continue to wait for \
                       the next stop, or debug-output to read what it printed"})
}

/// Called with a session's id whenever its summary changes (resource subscriptions).
pub(crate) type OnChange = Arc<dyn Fn(&str) + Send + Sync>;

/// A tool call's answer: the structured content, or a failure.
pub(crate) type Reply = Result<Value, Failure>;

pub(crate) enum Command {
    Resume {
        action: Action,
        timeout: Duration,
        /// Run to this line (a one-shot breakpoint), for `Continue`.
        to: Option<BreakpointSpec>,
        reply: Sender<Reply>,
    },
    /// Kills the program and starts it again with the same breakpoints; answers the first
    /// stop.
    Restart {
        timeout: Duration,
        reply: Sender<Reply>,
    },
    /// The program's threads; with `select`, the stop as seen from that thread.
    Threads {
        select: Option<String>,
        reply: Sender<Reply>,
    },
    /// Adds and removes watch expressions; answers the list.
    Watch {
        add: Vec<String>,
        remove: Vec<String>,
        reply: Sender<Reply>,
    },
    Stack {
        max_frames: usize,
        include_async: bool,
        reply: Sender<Reply>,
    },
    Evaluate {
        expression: String,
        frame: usize,
        /// Characters of the value's JSON at most.
        max_chars: usize,
        reply: Sender<Reply>,
    },
    Variables {
        query: VariablesQuery,
        reply: Sender<Reply>,
    },
    SetBreakpoint {
        spec: BreakpointSpec,
        reply: Sender<Reply>,
    },
    /// A watchpoint on what `expression` names in the paused top frame.
    SetWatchpoint {
        expression: String,
        access: String,
        reply: Sender<Reply>,
    },
    RemoveBreakpoint {
        id: String,
        reply: Sender<Reply>,
    },
    ListBreakpoints {
        reply: Sender<Reply>,
    },
    Output {
        since: Option<String>,
        /// Without terminal colour codes.
        strip_ansi: bool,
        reply: Sender<Reply>,
    },
    Scripts {
        include_internal: bool,
        reply: Sender<Reply>,
    },
    /// The text of a loaded script that is not on disk.
    ScriptSource {
        file: String,
        reply: Sender<Reply>,
    },
    SetVariable {
        name: String,
        value: String,
        frame: usize,
        scope: String,
        /// Characters of the new value's JSON in the answer at most.
        max_chars: usize,
        reply: Sender<Reply>,
    },
    PauseOnExceptions {
        state: String,
        include_libraries: bool,
        reply: Sender<Reply>,
    },
}

/// How a session begins, on its own thread: a backend set up (connected, its domains enabled),
/// the breakpoints to place before the program runs, and how long the first answer waits.
pub(crate) struct Begin<B> {
    pub(crate) backend: B,
    pub(crate) command_line: String,
    pub(crate) breakpoints: Vec<BreakpointSpec>,
    pub(crate) timeout: Duration,
    /// How to start the program again (`debug-restart`); `None` for a program attached to.
    pub(crate) relaunch: Option<Relaunch<B>>,
    /// The `pauseOnExceptions` state it starts with.
    pub(crate) pause_on_exceptions: String,
    /// The program's working directory, when not the server's: where the session's relative
    /// paths resolve (its summary says it).
    pub(crate) cwd: Option<std::path::PathBuf>,
}

/// How a launched program is started: on the first launch, what the call asked for; on a
/// restart, what the session has come to (its exception setting, its breakpoints).
#[derive(Clone, Debug, Default)]
pub(crate) struct Setup {
    pub(crate) stop_on_entry: bool,
    pub(crate) pause_on_exceptions: String,
    /// `pauseOnExceptions: all` stops at exceptions raised and caught inside libraries too.
    pub(crate) include_libraries: bool,
    /// The files that hold breakpoints.
    pub(crate) breakpoint_files: Vec<std::path::PathBuf>,
}

impl<B: Backend> Begin<B> {
    /// How an attached program begins: `backend` connected to what `to` names (an address,
    /// an inspector's URL), set up as `start` asks; never started again.
    pub(crate) fn attached(backend: B, to: impl std::fmt::Display, start: AttachSpec) -> Begin<B> {
        Begin {
            backend,
            command_line: format!("attached to {to}"),
            breakpoints: start.breakpoints,
            timeout: start.timeout,
            relaunch: None,
            pause_on_exceptions: start.pause_on_exceptions,
            cwd: start.cwd,
        }
    }

    /// How a launched program begins: `start` spawns it under its debugger (`command`, how
    /// it is [`Setup`], the cancel signal) and sets it up; the same `start` serves
    /// `debug-restart`.
    pub(crate) fn launched(
        spec: LaunchSpec,
        abandon: &Receiver<()>,
        start: impl Fn(&CommandLine, &Setup, &Receiver<()>) -> Result<B, Failure> + Send + 'static,
    ) -> Result<Begin<B>, Failure> {
        let LaunchSpec { command, breakpoints, stop_on_entry, pause_on_exceptions, timeout } = spec;
        let setup = Setup {
            stop_on_entry,
            pause_on_exceptions: pause_on_exceptions.clone(),
            include_libraries: false,
            breakpoint_files: breakpoints.iter().map(|b| b.file.clone()).collect(),
        };
        let backend = start(&command, &setup, abandon)?;
        let command_line = crate::shell::join(&command.words);
        let cwd = command.cwd.clone();
        let relaunch: Relaunch<B> = Box::new(move |setup: Setup| {
            start(&command, &Setup { stop_on_entry, ..setup }, &never())
        });
        Ok(Begin {
            backend,
            command_line,
            breakpoints,
            timeout,
            relaunch: Some(relaunch),
            pause_on_exceptions,
            cwd,
        })
    }
}

/// Starts the program of a launched session again, set up as it first was, with the current
/// exception setting and breakpoints; the backend before it is shut down first.
pub(crate) type Relaunch<B> = Box<dyn FnMut(Setup) -> Result<B, Failure> + Send>;

/// Starts a session thread: `begin` sets the backend up there (a debuggee dies with the thread
/// that spawned it, see `sys::new_session`, so that must be the thread that owns it for
/// the session's life). Returns the handle and the first state, once the program stopped or
/// ran for `timeout`. `abandon` fires when the starting call is cancelled.
pub(crate) fn start<B: Backend>(
    id: &str,
    on_change: OnChange,
    cancel: &Receiver<()>,
    begin: impl FnOnce(&Receiver<()>) -> Result<Begin<B>, Failure> + Send + 'static,
) -> Result<(Handle, Value), Failure> {
    start_with(id, on_change, cancel, Clocks::start(), begin)
}

/// [`start`] with its clocks given (tests set the idle limit).
fn start_with<B: Backend>(
    id: &str,
    on_change: OnChange,
    cancel: &Receiver<()>,
    clocks: Clocks,
    begin: impl FnOnce(&Receiver<()>) -> Result<Begin<B>, Failure> + Send + 'static,
) -> Result<(Handle, Value), Failure> {
    let summary = Arc::new(Mutex::new(json!({"sessionId": id, "state": "starting"})));
    let (commands_tx, commands) = crossbeam_channel::unbounded();
    let (first_tx, first) = crossbeam_channel::bounded(1);
    let (abandon_tx, abandon) = crossbeam_channel::bounded::<()>(1);
    let thread = JoinOnDrop::spawn(&format!("session-{id}"), {
        let id = id.to_string();
        let summary = summary.clone();
        move || {
            let started =
                begin(&abandon).and_then(|begin| Actor::new(id, begin, clocks, summary, on_change));
            match started {
                Ok((actor, deadline)) => actor.run(Waiter { reply: first_tx, deadline }, &commands),
                Err(failure) => drop(first_tx.send(Err(failure))),
            }
        }
    });
    let handle = Handle { commands: commands_tx, summary, _thread: thread };
    let first = select! {
        recv(first) -> reply => reply.unwrap_or_else(|_| Err(Failure::new(Code::Internal, "the session ended while starting"))),
        recv(cancel) -> _ => {
            let _ = abandon_tx.send(());
            Err(Failure::Cancelled)
        },
    };
    // On failure, dropping the handle ends the session and joins its thread. A guessed
    // mapping is said in the first answer too: the paths in it depend on it.
    first.map(|mut state| {
        let guessed = handle.summary.lock().ok().and_then(|s| s.get("pathMappings").cloned());
        if let (Some(guessed), Some(answer)) = (guessed, state.as_object_mut()) {
            answer.insert("pathMappings".into(), guessed);
        }
        (handle, state)
    })
}

/// The call waiting for the next stop, and until when.
struct Waiter {
    reply: Sender<Reply>,
    deadline: Instant,
}

enum State<P> {
    Running,
    Paused { reason: &'static str, stop: Box<Stop<P>> },
    Exited(Exit),
}

/// One turn's reason to act.
enum Event<E> {
    Command(Command),
    /// The command channel closed: the session was stopped, or the server is exiting.
    Stopped,
    Backend(Input<E>),
    /// The waiting call's deadline passed.
    Deadline,
    /// No call came for the idle limit.
    Idle,
}

pub(crate) struct Actor<B: Backend> {
    id: String,
    backend: B,
    state: State<B::Paused>,
    waiter: Option<Waiter>,
    /// What the program was last told to do, to name the next stop.
    last_action: Action,
    breakpoints: Vec<UserBreakpoint>,
    next_breakpoint: u32,
    watchpoints: Vec<Watchpoint>,
    /// At a watchpoint stop: `{breakpointId, expression, old, new}` of each that changed.
    watched: Vec<Value>,
    console: Console,
    output: Output,
    clocks: Clocks,
    summary: Arc<Mutex<Value>>,
    /// Tells resource subscribers when the state changes.
    on_change: OnChange,
    command_line: String,
    /// Ended because no call came for the idle limit.
    idle_ended: bool,
    /// Paused where no answer has shown yet: the next call to go on reports it instead.
    unseen: bool,
    /// Expressions evaluated at every stop (`debug-watch`).
    watches: Vec<String>,
    /// The one-shot breakpoint of a `debug-continue` with `to`, until the next stop or end.
    run_to: Option<String>,
    next_run_to: u32,
    relaunch: Option<Relaunch<B>>,
    /// The `pauseOnExceptions` state now, for a restart.
    pause_on_exceptions: String,
    include_libraries: bool,
    /// How many times the program was started again.
    restarts: u32,
    cwd: Option<std::path::PathBuf>,
}

impl<B: Backend> Actor<B> {
    /// Places the breakpoints and lets the program go: the actor, and the first answer's
    /// deadline. A failure ends what the backend started.
    fn new(
        id: String,
        begin: Begin<B>,
        clocks: Clocks,
        summary: Arc<Mutex<Value>>,
        on_change: OnChange,
    ) -> Result<(Actor<B>, Instant), Failure> {
        let output = begin.backend.output();
        let mut actor = Actor {
            id,
            backend: begin.backend,
            state: State::Running,
            waiter: None,
            last_action: Action::Continue,
            breakpoints: Vec::new(),
            next_breakpoint: 0,
            watchpoints: Vec::new(),
            watched: Vec::new(),
            console: Console::default(),
            output,
            clocks,
            summary,
            on_change,
            command_line: begin.command_line,
            idle_ended: false,
            unseen: false,
            watches: Vec::new(),
            run_to: None,
            next_run_to: 0,
            relaunch: begin.relaunch,
            cwd: begin.cwd,
            pause_on_exceptions: begin.pause_on_exceptions,
            include_libraries: false,
            restarts: 0,
        };
        let placed = begin.breakpoints.into_iter().enumerate().try_for_each(|(i, spec)| {
            actor
                .add_breakpoint(spec)
                .map(drop)
                .map_err(|f| f.with("field", format!("breakpoints[{i}]").into()))
        });
        actor.start(placed)?;
        Ok((actor, Instant::now() + begin.timeout))
    }

    /// Lets the program go once its breakpoints are `placed`, and acts on what it said while
    /// starting. A failure, there or before, ends what the backend started.
    fn start(&mut self, placed: Result<(), Failure>) -> Result<(), Failure> {
        if let Err(failure) = placed.and_then(|()| self.backend.begin()) {
            self.backend.shutdown();
            return Err(failure);
        }
        for happening in self.backend.early() {
            self.happen(happening);
        }
        self.publish();
        Ok(())
    }

    fn run(mut self, first: Waiter, commands: &Receiver<Command>) {
        // The program may have ended while starting: then the first call has its answer.
        match self.state {
            State::Running => self.waiter = Some(first),
            _ => drop(first.reply.send(Ok(self.stop_state()))),
        }
        loop {
            match self.next_event(commands) {
                Event::Stopped => break,
                event => self.handle_event(event),
            }
        }
        self.backend.shutdown();
    }

    fn next_event(&self, commands: &Receiver<Command>) -> Event<B::Event> {
        let inputs = self.backend.inputs();
        let (waiting, idle) = self
            .clocks
            .turn(self.waiter.as_ref().map(|w| w.deadline), matches!(self.state, State::Exited(_)));
        select! {
            recv(commands) -> command => command.map_or(Event::Stopped, Event::Command),
            recv(inputs.events) -> event => Event::Backend(event.map_or(Input::Closed, Input::Event)),
            recv(inputs.exited) -> exit => Event::Backend(Input::Exited(exit.ok())),
            recv(inputs.tick) -> _ => Event::Backend(Input::Tick),
            // Closed when the backend has no other connections: `never()` then.
            recv(inputs.more) -> event => match event {
                Ok(event) => Event::Backend(Input::Event(event)),
                Err(_) => Event::Backend(Input::Tick),
            },
            recv(waiting) -> _ => Event::Deadline,
            recv(idle) -> _ => Event::Idle,
        }
    }

    fn handle_event(&mut self, event: Event<B::Event>) {
        match event {
            Event::Command(command) => {
                self.clocks.called();
                self.handle_command(command);
            }
            Event::Backend(input) => {
                if let Some(happening) = self.backend.handle(input) {
                    self.happen(happening);
                }
            }
            Event::Deadline => {
                let state = self.stop_state();
                self.reply(Ok(state));
            }
            Event::Idle => {
                let limit = self.clocks.idle_limit.as_secs();
                log::info(format_args!("session {} idle for {limit} s: ending it", self.id));
                self.idle_ended = true;
                self.ended(None, true);
            }
            Event::Stopped => {}
        }
    }

    fn happen(&mut self, happening: Happening<B::Paused>) {
        match happening {
            Happening::Stopped(stop) => self.stopped(stop),
            Happening::Resumed => {
                if matches!(self.state, State::Paused { .. }) {
                    self.state = State::Running;
                    self.publish();
                }
            }
            Happening::Console(entry) => self.console.record(entry),
            Happening::Logpoint { breakpoint, text } => {
                if let Some(user) =
                    self.breakpoints.iter_mut().find(|b| Some(&b.id) == breakpoint.as_ref())
                {
                    user.hits += 1;
                    if user.hits < user.spec.hit_count.unwrap_or(0) {
                        return;
                    }
                }
                self.console
                    .record(json!({"type": "logpoint", "breakpointId": breakpoint, "text": text}));
            }
            Happening::Ended(code) => self.ended(code, false),
        }
    }

    fn stopped(&mut self, mut stop: Stop<B::Paused>) {
        if matches!(self.state, State::Exited(_)) {
            return;
        }
        let reached = self.clear_run_to().is_some_and(|id| {
            let hit = stop.hits.contains(&id);
            stop.hits.retain(|h| *h != id);
            hit
        });
        for user in self.breakpoints.iter_mut().filter(|b| stop.hits.contains(&b.id)) {
            user.hits += 1;
        }
        if !reached && self.before_hit_count(&stop) {
            match self.backend.resume(Action::Continue, Some(&stop.paused)) {
                Ok(()) => return,
                Err(failure) => log::debug(format_args!("passing a hit over: {failure:?}")),
            }
        }
        self.watched.clear();
        if stop.reason == Reason::Watchpoint {
            self.watchpoints_hit(&mut stop);
        }
        let reason = match stop.reason {
            Reason::Watchpoint => "watchpoint",
            _ if !stop.hits.is_empty() => "breakpoint",
            _ if reached => "runTo",
            Reason::Breakpoint => "breakpoint",
            Reason::Exception => "exception",
            Reason::Entry => "entry",
            Reason::Pause => "pause",
            Reason::Step => "step",
            Reason::Unsaid => match self.last_action {
                Action::StepOver | Action::StepInto | Action::StepOut => "step",
                Action::Pause => "pause",
                Action::Continue => "debugger",
            },
        };
        self.state = State::Paused { reason, stop: Box::new(stop) };
        self.publish();
        self.unseen = true;
        if self.waiter.is_some() {
            let state = self.stop_state();
            self.reply(Ok(state));
        }
    }

    /// The program finished, its debugger let go, or (`forced`) the session ends it.
    fn ended(&mut self, code: Option<i32>, forced: bool) {
        if let State::Exited(exit) = &mut self.state {
            if exit.code.is_none() && code.is_some() {
                exit.code = code;
            }
            return;
        }
        self.run_to = None;
        let exit = self.backend.end(code, forced);
        self.state = State::Exited(exit);
        self.publish();
        let state = self.stop_state();
        self.reply(Ok(state));
    }

    fn reply(&mut self, reply: Reply) {
        if let Some(waiter) = self.waiter.take() {
            let _ = waiter.reply.send(reply);
        }
    }

    fn handle_command(&mut self, command: Command) {
        // An answer from the stop's own frames shows the stop.
        if let Command::Threads { .. }
        | Command::Stack { .. }
        | Command::Evaluate { .. }
        | Command::Variables { .. } = command
        {
            self.unseen = false;
        }
        let (reply, answer) = match command {
            Command::Resume { action, timeout, to, reply } => {
                return self.resume(action, timeout, to, reply)
            }
            Command::Restart { timeout, reply } => return self.restart(timeout, reply),
            Command::Threads { select, reply } => (reply, self.threads(select)),
            Command::Watch { add, remove, reply } => {
                for expression in add {
                    if !self.watches.contains(&expression) {
                        self.watches.push(expression);
                    }
                }
                self.watches.retain(|w| !remove.contains(w));
                (reply, Ok(json!({"sessionId": self.id, "watch": self.watches})))
            }
            Command::Stack { max_frames, include_async, reply } => {
                (reply, self.stack(max_frames, include_async))
            }
            Command::Evaluate { expression, frame, max_chars, reply } => {
                (reply, self.evaluate(&expression, frame, max_chars))
            }
            Command::Variables { query, reply } => (reply, self.variables(&query)),
            Command::SetBreakpoint { spec, reply } => {
                let answer = self.add_breakpoint(spec).map(|mut b| {
                    b["sessionId"] = self.id.as_str().into();
                    b
                });
                (reply, answer)
            }
            Command::SetWatchpoint { expression, access, reply } => {
                (reply, self.add_watchpoint(expression, access))
            }
            Command::RemoveBreakpoint { id, reply } => (reply, self.remove_breakpoint(&id)),
            Command::ListBreakpoints { reply } => {
                (reply, Ok(json!({"sessionId": self.id, "breakpoints": self.breakpoints_json()})))
            }
            Command::Output { since, strip_ansi, reply } => {
                (reply, self.console.since(&self.id, &self.output, since.as_deref(), strip_ansi))
            }
            Command::Scripts { include_internal, reply } => {
                let paused = paused(&self.state).map(|stop| &stop.paused);
                let sources = self.backend.loaded_sources(paused, include_internal);
                let answer = sources.map(|sources| {
                    let scripts: Vec<Value> = sources.iter().map(|s| s.to_json()).collect();
                    json!({"sessionId": self.id, "scripts": scripts})
                });
                (reply, answer)
            }
            Command::ScriptSource { file, reply } => {
                (reply, self.backend.source_text(&file).map(|text| json!({"text": text})))
            }
            Command::SetVariable { name, value, frame, scope, max_chars, reply } => {
                (reply, self.set_variable(&name, &value, frame, &scope, max_chars))
            }
            Command::PauseOnExceptions { state, include_libraries, reply } => {
                let answer =
                    self.backend.pause_on_exceptions(&state, include_libraries).map(|note| {
                        let mut answer = json!({"sessionId": self.id, "pauseOnExceptions": state,
                                        "includeLibraries": include_libraries});
                        if let Some(note) = note {
                            answer["message"] = note.into();
                        }
                        self.pause_on_exceptions = state;
                        self.include_libraries = include_libraries;
                        answer
                    });
                (reply, answer)
            }
        };
        let _ = reply.send(answer);
    }

    /// `debug-threads`: the threads, which one the stop is in; `select` moves the stop's view
    /// (frames, locals, stepping) to another.
    fn threads(&mut self, select: Option<String>) -> Reply {
        if matches!(self.state, State::Exited(_)) {
            return Err(self.not_paused());
        }
        if let Some(id) = select {
            let (_, current) = self.backend.threads(paused(&self.state).map(|s| &s.paused))?;
            let State::Paused { reason, stop } = &self.state else {
                return Err(self.not_paused());
            };
            let reason = *reason;
            if id != current {
                let stop = self.backend.select_thread(&stop.paused, &id)?;
                self.state = State::Paused { reason, stop: Box::new(stop) };
                self.publish();
            }
            let mut state = self.stop_state();
            state["thread"] = id.into();
            return Ok(state);
        }
        let (threads, current) = self.backend.threads(paused(&self.state).map(|s| &s.paused))?;
        let threads: Vec<Value> = threads
            .iter()
            .map(|t| json!({"id": t.id, "name": t.name, "current": t.id == current}))
            .collect();
        Ok(json!({"sessionId": self.id, "threads": threads}))
    }

    /// `debug-restart`: ends the program, starts the same command again, places every
    /// breakpoint again (re-resolved against the files as they are now) and waits for the
    /// first stop. Watch expressions stay; hit counts, console messages and output start
    /// afresh.
    fn restart(&mut self, timeout: Duration, reply: Sender<Reply>) {
        if self.waiter.is_some() {
            let _ = reply.send(Err(busy()));
            return;
        }
        if self.relaunch.is_none() {
            let _ = reply.send(Err(Failure::new(
                Code::NotLaunched,
                format!(
                    "session {} is attached to a program debug-mcp did not start, so it cannot \
                     start it again: restart the program yourself and attach again",
                    self.id
                ),
            )));
            return;
        }
        self.run_to = None;
        self.backend.shutdown();
        if let Err(failure) = self.start_again() {
            // The program is gone and did not start again: the session has ended.
            self.state = State::Exited(Exit { code: None, signal: None });
            self.publish();
            let _ = reply.send(Err(failure));
            return;
        }
        match self.state {
            State::Running => {
                self.waiter = Some(Waiter { reply, deadline: Instant::now() + timeout });
            }
            _ => drop(reply.send(Ok(self.stop_state()))),
        }
    }

    /// Starts the program afresh with the session's breakpoints and exception setting.
    fn start_again(&mut self) -> Result<(), Failure> {
        let setup = Setup {
            stop_on_entry: false,
            pause_on_exceptions: self.pause_on_exceptions.clone(),
            include_libraries: self.include_libraries,
            breakpoint_files: self.breakpoints.iter().map(|b| b.spec.file.clone()).collect(),
        };
        let relaunch = self.relaunch.as_mut().expect("restart checks the session launched");
        self.backend = relaunch(setup)?;
        self.restarts += 1;
        self.output = self.backend.output();
        self.console = Console::default();
        self.state = State::Running;
        self.last_action = Action::Continue;
        self.idle_ended = false;
        for user in &mut self.breakpoints {
            user.hits = 0;
            if let Err(failure) = self.backend.set_breakpoint(&user.id, &user.spec) {
                log::warn(format_args!("breakpoint {} after restart: {failure:?}", user.id));
            }
        }
        let exceptions = match self.include_libraries {
            true => self.backend.pause_on_exceptions(&self.pause_on_exceptions, true).map(drop),
            false => Ok(()),
        };
        self.start(exceptions)
    }

    /// Acts on what the backend has to say for up to `limit`, or until the program ended.
    fn take_inputs(&mut self, limit: Duration) {
        let deadline = crossbeam_channel::at(Instant::now() + limit);
        while !matches!(self.state, State::Exited(_)) {
            let inputs = self.backend.inputs();
            let input = select! {
                recv(inputs.events) -> event => event.map_or(Input::Closed, Input::Event),
                recv(inputs.exited) -> exit => Input::Exited(exit.ok()),
                recv(inputs.more) -> event => match event {
                    Ok(event) => Input::Event(event),
                    Err(_) => Input::Tick,
                },
                recv(deadline) -> _ => return,
            };
            if let Some(happening) = self.backend.handle(input) {
                self.happen(happening);
            }
        }
    }

    /// Removes the one-shot breakpoint of a run to a line, if one is set; gives its id.
    fn clear_run_to(&mut self) -> Option<String> {
        let id = self.run_to.take()?;
        if let Err(failure) = self.backend.remove_breakpoint(&id) {
            log::warn(format_args!("removing the run-to breakpoint: {failure:?}"));
        }
        Some(id)
    }

    fn resume(
        &mut self,
        action: Action,
        timeout: Duration,
        to: Option<BreakpointSpec>,
        reply: Sender<Reply>,
    ) {
        if self.waiter.is_some() {
            let _ = reply.send(Err(busy()));
            return;
        }
        let was_paused = match (&self.state, action) {
            (State::Exited(_), _) | (State::Paused { .. }, Action::Pause) => {
                let _ = reply.send(Ok(self.stop_state()));
                return;
            }
            (State::Running, Action::Continue | Action::Pause) => false,
            (State::Running, _) => {
                let _ = reply.send(Err(Failure::new(
                    Code::Running,
                    "the program is running: pause it (debug-continue with `pause: true`), or wait for a stop with debug-continue, before stepping",
                )));
                return;
            }
            // A stop that came while no call waited: this call is the first to see it.
            (State::Paused { .. }, _) if self.unseen => {
                let mut state = self.stop_state();
                state["message"] = "stopped here before this call came, and not moved on: call \
                                    debug-continue again to go on"
                    .into();
                let _ = reply.send(Ok(state));
                return;
            }
            (State::Paused { .. }, _) => true,
        };
        if let Some(spec) = to {
            self.next_run_to += 1;
            let id = format!("to{}", self.next_run_to);
            match self.backend.set_breakpoint(&id, &spec) {
                Ok(()) => self.run_to = Some(id),
                // A breakpoint there already stops it (debugpy keeps one per line).
                Err(Failure::Error { code: Code::DuplicateBreakpoint, .. }) => {}
                Err(failure) => {
                    let _ = reply.send(Err(failure.with("field", "to".into())));
                    return;
                }
            }
        }
        self.last_action = action;
        if let Err(failure) = self.backend.resume(action, paused(&self.state).map(|s| &s.paused)) {
            self.clear_run_to();
            // The program may have ended as it was told to go on (its connection closed under
            // the request): then its end is the answer.
            self.take_inputs(ENDING_GRACE);
            let answer = match self.state {
                State::Exited(_) => Ok(self.stop_state()),
                _ => Err(failure),
            };
            let _ = reply.send(answer);
            return;
        }
        if was_paused {
            self.state = State::Running;
            self.publish();
        }
        self.waiter = Some(Waiter { reply, deadline: Instant::now() + timeout });
    }

    fn not_paused(&self) -> Failure {
        not_paused(&self.id, &self.state)
    }

    fn stack(&mut self, max_frames: usize, include_async: bool) -> Reply {
        let State::Paused { stop, .. } = &self.state else {
            return Err(self.not_paused());
        };
        let (frames, total) = self.backend.stack(&stop.paused, max_frames, include_async);
        let total = total.unwrap_or(stop.frames);
        let frames: Vec<Value> = frames
            .into_iter()
            .enumerate()
            .map(|(index, frame)| {
                let mut json = frame.location.to_json();
                json["index"] = index.into();
                if let Some(reason) = frame.async_reason {
                    json["async"] = reason.into();
                }
                json
            })
            .collect();
        Ok(json!({"sessionId": self.id, "frames": frames, "totalFrames": total}))
    }

    fn evaluate(&mut self, expression: &str, frame: usize, max_chars: usize) -> Reply {
        let paused = match &self.state {
            State::Running if B::EVALUATES_RUNNING => None,
            _ => Some(&paused_frame(&self.id, &self.state, frame)?.paused),
        };
        let mut value = self.backend.evaluate(paused, expression, frame, max_chars)?;
        let cut = value["truncated"] == true;
        mark_cut(&mut value, cut, expression, max_chars);
        Ok(value)
    }

    fn variables(&mut self, query: &VariablesQuery) -> Reply {
        let stop = paused_frame(&self.id, &self.state, query.frame)?;
        let max_chars = query.max_chars;
        let variables = |list: Vec<crate::debugger::model::Variable>| -> Vec<Value> {
            list.iter().map(|v| v.to_json(true, max_chars)).collect()
        };
        if let Some(path) = &query.path {
            let (kind, value, children) = self.backend.expand(&stop.paused, path, query)?;
            // The value's own text is cut as its members' are (a dict of 10,000 entries was
            // 70 KB here): its members are listed, paged.
            let value = match value {
                Value::String(text) => clip(&text, max_chars).into(),
                other => other,
            };
            return Ok(json!({"sessionId": self.id, "path": path, "type": kind, "value": value,
                             "variables": variables(children)}));
        }
        let list = self.backend.scope_variables(&stop.paused, query)?;
        Ok(json!({"sessionId": self.id, "frame": query.frame, "scope": query.scope,
                  "variables": variables(list)}))
    }

    fn set_variable(
        &mut self,
        name: &str,
        value: &str,
        frame: usize,
        scope: &str,
        max_chars: usize,
    ) -> Reply {
        let stop = paused_frame(&self.id, &self.state, frame)?;
        let now = self.backend.set_variable(&stop.paused, name, value, frame, scope, max_chars)?;
        let mut answer = json!({"sessionId": self.id, "name": name, "type": now["type"],
                                "value": now["value"]});
        mark_cut(&mut answer, now["truncated"] == true, name, max_chars);
        Ok(answer)
    }

    /// The state every waiting call returns: paused (where, why, the source and the locals),
    /// running, or exited.
    fn stop_state(&mut self) -> Value {
        match &self.state {
            State::Running => running_state(&self.id),
            State::Exited(exit) => {
                let output = self.output.to_json();
                let mut state = json!({"sessionId": self.id, "state": "exited",
                    "stdout": output["stdout"], "stderr": output["stderr"]});
                match (exit.code, exit.signal) {
                    (Some(code), _) => state["exitCode"] = code.into(),
                    (None, Some(signal)) => state["signal"] = signal.into(),
                    (None, None) => {}
                }
                let stopped = self.backend.stopped();
                if let Some((message, ended)) = self.backend.debugger_ended() {
                    state["message"] = message.into();
                    state["debuggerEnded"] = ended;
                } else if let Some(note) =
                    crate::debugger::script::stopped_note(&stopped, "debug-mcp ended it")
                {
                    state["message"] = note.into();
                    state["stopped"] = crate::debugger::script::stopped_json(&stopped).into();
                } else if self.idle_ended {
                    state["message"] = "ended by debug-mcp: no call came for the idle limit \
                                        (DEBUG_MCP_SESSION_IDLE_MS)"
                        .into();
                } else if let Some(note) = self.backend.attached_note() {
                    state["message"] = note.into();
                }
                self.backend.undebugged().add_to_state(&mut state);
                state
            }
            State::Paused { reason, stop } => {
                self.unseen = false;
                let location = stop.location.to_json();
                let mut state = json!({"sessionId": self.id, "state": "paused", "reason": reason,
                                       "location": location});
                let original = |file: &str| self.backend.original_text(file);
                if let Some(source) = source_lines(&state["location"], original) {
                    state["source"] = source;
                }
                if let Some(process) = self.backend.stopped_in(&stop.paused) {
                    state["process"] = process;
                }
                let locals = self.backend.locals(&stop.paused, MAX_LOCALS);
                state["locals"] = locals.iter().map(|v| v.to_json(false, VALUE_PREVIEW)).collect();
                if !stop.hits.is_empty() {
                    state["hitBreakpoints"] = json!(stop.hits);
                }
                if !self.watched.is_empty() {
                    state["watchpoints"] = self.watched.clone().into();
                }
                if let Some(Exception { class, message, stack, uncaught, user_unhandled }) =
                    &stop.exception
                {
                    state["exception"] = json!({"class": class, "message": message,
                                                "stack": trace_text(stack), "uncaught": uncaught});
                    if *user_unhandled {
                        state["exception"]["userUnhandled"] = true.into();
                    }
                }
                if !self.watches.is_empty() {
                    let watches = self.watches.iter().map(|expression| {
                        let value = self.backend.evaluate(Some(&stop.paused), expression, 0, WATCH_CHARS);
                        let value = value.unwrap_or_else(|f| json!({"type": "error", "value": f.message()}));
                        let mut watched = json!({"expression": expression, "type": value["type"], "value": value["value"]});
                        mark_cut(&mut watched, value["truncated"] == true, expression, WATCH_CHARS);
                        watched
                    });
                    state["watch"] = watches.collect();
                }
                state
            }
        }
    }

    /// Updates the summary `debug-sessions` shows.
    fn publish(&mut self) {
        let state = match &self.state {
            State::Running => "running",
            State::Paused { .. } => "paused",
            State::Exited(_) => "exited",
        };
        let mut summary = json!({"sessionId": self.id, "state": state,
                                 "command": self.command_line, "language": self.backend.language()});
        if let Some(cwd) = &self.cwd {
            summary["cwd"] = cwd.display().to_string().into();
        }
        if let Some(mapping) = self.backend.guessed_paths() {
            summary["pathMappings"] = crate::debugger::paths::guessed_json(mapping);
        }
        if self.restarts > 0 {
            summary["restarts"] = self.restarts.into();
        }
        match &self.state {
            State::Paused { reason, stop } => {
                summary["reason"] = (*reason).into();
                summary["location"] = stop.location.to_json();
            }
            State::Exited(Exit { code: Some(code), .. }) => summary["exitCode"] = (*code).into(),
            _ => {}
        }
        summary["breakpoints"] = self.breakpoints_json().into();
        let processes = self.backend.processes();
        if !processes.is_empty() {
            summary["processes"] = processes.into();
        }
        *self.summary.lock().expect("session summary poisoned") = summary;
        (self.on_change)(&self.id);
    }
}

/// Marks an answer whose value of `expression` was `cut` at `max_chars`, saying how to see
/// more.
fn mark_cut(answer: &mut Value, cut: bool, expression: &str, max_chars: usize) {
    if cut {
        answer["truncated"] = true.into();
        answer["hint"] = format!(
            "the value was cut at {max_chars} characters: ask debug-evaluate with a larger \
             maxChars, or open it part by part with debug-variables {{\"path\": {}}}",
            Value::from(expression)
        )
        .into();
    }
}

/// The answer to a call that would wait while another one does.
fn busy() -> Failure {
    Failure::new(
        Code::Busy,
        "another call is already waiting on this session: wait for it, or pause the program (debug-continue with `pause: true`)",
    )
}

fn paused<P>(state: &State<P>) -> Option<&Stop<P>> {
    match state {
        State::Paused { stop, .. } => Some(stop),
        _ => None,
    }
}

/// The stop, with `frame` checked against its frames.
fn paused_frame<'a, P>(
    id: &str,
    state: &'a State<P>,
    frame: usize,
) -> Result<&'a Stop<P>, Failure> {
    let stop = paused(state).ok_or_else(|| not_paused(id, state))?;
    if frame >= stop.frames {
        return Err(Failure::new(
            Code::InvalidArguments,
            format!(
                "invalid argument `frame`: there are {} frames (0 to {})",
                stop.frames,
                stop.frames.saturating_sub(1)
            ),
        )
        .with("field", "frame".into()));
    }
    Ok(stop)
}

fn not_paused<P>(id: &str, state: &State<P>) -> Failure {
    match state {
        State::Exited(exit) => Failure::new(
            Code::Exited,
            format!(
                "session {id} has ended: the program exited ({}); start a new one with debug-launch",
                exit.describe()
            ),
        ),
        _ => Failure::new(
            Code::Running,
            format!("session {id} is running: pause it first (debug-continue with `pause: true`)"),
        ),
    }
}

#[cfg(test)]
mod tests;

/// The lines around a location, from the file it names (or, for a file not on disk, from
/// `original`).
fn source_lines(location: &Value, original: impl Fn(&str) -> Option<String>) -> Option<Value> {
    let file = location["file"].as_str()?;
    let line = location["line"].as_u64()? as usize;
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(_) => original(file)?,
    };
    let lines: Vec<Value> = text
        .lines()
        .enumerate()
        .skip(line.saturating_sub(CONTEXT + 1))
        .take(CONTEXT * 2 + 1)
        .map(|(i, t)| {
            let mut entry = json!({"line": i + 1, "text": clip(t, 500)});
            if i + 1 == line {
                entry["current"] = true.into();
            }
            entry
        })
        .collect();
    Some(lines.into())
}
