//! A CDP runtime as a session backend ([`Backend`]): the program and its inspector connection,
//! the scripts it loaded and where each breakpoint landed. What differs between runtimes (how
//! they start, their own domains and events) comes through the [`Runtime`] seam. What every runtime shares (the waiting
//! call, the clocks, the breakpoint table, the answers) is the actor's (`debugger/session.rs`).
//!
//! Breakpoints go through `cdp/breakpoints.rs`, values through the same probe as
//! `debug-script`, locations through source maps (`cdp/scripts.rs`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use std::time::{Duration, Instant};

use crossbeam_channel::{never, select, Receiver, Sender};
use serde_json::{json, Value};

use crate::cdp::breakpoints::{Breakpoint, Step};
use crate::cdp::follow::{self, Channel, Report};
use crate::cdp::preview::{compact, console_entry};
use crate::cdp::runtime::{
    check_go, ended_while_starting, name_start_pause, Following, Runtime, Started, UrlForm,
};
use crate::cdp::scripts::Scripts;
use crate::cdp::unhandled::{self, Catchers};
use crate::cdp::urls::is_own;
use crate::cdp::{self, Client, Event, Origin};
use crate::debugger::backend::{Backend, Happening, Input, Inputs};
use crate::debugger::limits::clip;
use crate::debugger::limits::VALUE_CHARS;
use crate::debugger::model::Undebugged;
use crate::debugger::model::{logpoint_parts, AttachSpec, LaunchSpec, Part, PathMapping};
use crate::debugger::model::{
    Action, BreakpointSpec, Exception, Frame, Reason, Resolution, Source, Stop, Thread, Variable,
    VariablesQuery,
};
use crate::debugger::paths::Whereabouts;
use crate::debugger::script::{self, Debugged};
use crate::debugger::session::{self as actor, Begin, Handle, OnChange};
use crate::debugger::turns::{Turn, Turns};
use crate::debugger::{Code, Failure};
use crate::log;
use crate::process::{Debuggee, Exit, Output};
use crate::shell::CommandLine;

mod guess;
mod processes;
mod stack;

const PROBE: &str = include_str!("probe.js");
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a program may take to open its inspector and be set up.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
const NUDGE_EVERY: Duration = Duration::from_millis(500);
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Starts a session: spawns the program, sets the breakpoints, lets it run to its first stop
/// (or `timeout`), and returns the handle with that first state.
pub(crate) fn launch(
    runtime: Box<dyn Runtime>,
    id: &str,
    spec: LaunchSpec,
    on_change: OnChange,
    cancel: &Receiver<()>,
) -> Result<(Handle, Value), Failure> {
    let binding = binding(id);
    actor::start(id, on_change, cancel, move |abandon| {
        Begin::launched(spec, abandon, move |command, setup, abandon| {
            let pause = &setup.pause_on_exceptions;
            start(runtime.boxed(), command, setup.stop_on_entry, &binding, pause, abandon)
        })
    })
}

/// Spawns the program under the runtime's inspector, connects and prepares the connection.
fn start(
    runtime: Box<dyn Runtime>,
    command: &CommandLine,
    stop_on_entry: bool,
    binding: &str,
    pause_on_exceptions: &str,
    abandon: &Receiver<()>,
) -> Result<Cdp, Failure> {
    // Starting has its own limit: `timeout` is how long to wait for the first stop.
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    // Every process of the program reports on the channel; every connection shares one event
    // channel.
    let following = Following::open(runtime.as_ref())?;
    let follow = following.follow();
    let Started { debuggee, client, entry, .. } =
        runtime.start(command, stop_on_entry, follow, STARTUP_TIMEOUT, deadline, abandon)?;
    let Some(client) = client else {
        return Err(Failure::new(
            Code::NoInspector,
            "a session debugs a command that runs node itself (`node app.js`, `npx mocha`, \
             `npm test` running one node command); this one opens no inspector of its own \
             (a shell, `node --test`): use debug-script, which follows every process",
        ));
    };
    let mut backend = Cdp::new(runtime, client, Some(debuggee), binding.into(), stop_on_entry);
    backend.conns[0].command = command.words.join(" ");
    backend.events = following.events;
    backend.events_tx = Some(following.events_tx);
    backend.channel = following.channel;
    backend.entry = entry;
    if let Err(failure) = backend.prepare(pause_on_exceptions) {
        let debuggee = backend.debuggee.as_mut().expect("a launched program has its debuggee");
        return Err(ended_while_starting(debuggee, failure));
    }
    Ok(backend)
}

/// Attaches to a running program's inspector (`ws://...`). The session never kills it.
pub(crate) fn attach(
    runtime: Box<dyn Runtime>,
    id: &str,
    url: String,
    start: AttachSpec,
    on_change: OnChange,
    cancel: &Receiver<()>,
) -> Result<(Handle, Value), Failure> {
    let binding = binding(id);
    actor::start(id, on_change, cancel, move |_| {
        let client = Client::connect(&url, REQUEST_TIMEOUT)
            .map_err(|m| Failure::new(Code::InspectorFailed, m))?;
        let mut backend = Cdp::new(runtime, client, None, binding, false);
        backend.prepare(&start.pause_on_exceptions)?;
        backend.files = Whereabouts::attached(&start);
        backend.guess_on_attach();
        Ok(Begin::attached(backend, url, start))
    })
}

/// The name of the binding the probe reports through: unique per server and session.
fn binding(id: &str) -> String {
    format!("__debugMcp_{}_{id}", std::process::id())
}

/// What a CDP stop keeps: the `Debugger.paused` event's parameters (call frames with their
/// ids and scope chains, the async trace).
impl Turn for Paused {
    type Key = Origin;
    fn turn(&self) -> Origin {
        self.at.clone()
    }
}

pub(crate) struct Paused {
    params: Value,
    /// The thread that stopped.
    at: Origin,
    /// Why, and at which session breakpoints: to show this stop again after another thread's.
    reason: Reason,
    hits: Vec<String>,
}

impl Paused {
    fn frame(&self, index: usize) -> &Value {
        &self.params["callFrames"][index]
    }

    fn call_frame_id(&self, index: usize) -> String {
        self.frame(index)["callFrameId"].as_str().unwrap_or_default().to_string()
    }
}

/// A connection to one process's inspector: the program's (number 0) or a followed child's.
struct Conn {
    client: Client,
    pid: u32,
    parent: Option<u32>,
    command: String,
    /// Until its process ended (or could not be set up).
    open: bool,
}

/// One thread debugged: a process's main thread, or a worker in it.
struct Target {
    pid: u32,
    /// The worker's name, for a worker.
    worker: Option<String>,
    scripts: Scripts,
    /// Each session breakpoint's CDP breakpoints, by the session's id.
    placed: Vec<(String, Breakpoint)>,
}

impl Target {
    fn new(pid: u32, worker: Option<String>, urls: UrlForm) -> Target {
        Target { pid, worker, scripts: Scripts::new(urls), placed: Vec::new() }
    }

    fn breakpoint(&self, id: &str) -> Option<&Breakpoint> {
        self.placed.iter().find(|(i, _)| i == id).map(|(_, b)| b)
    }
}

pub(crate) struct Cdp {
    runtime: Box<dyn Runtime>,
    /// By connection number; 0 is the program's own process.
    conns: Vec<Conn>,
    /// Every thread debugged, by where its events come from.
    targets: BTreeMap<Origin, Target>,
    events: Receiver<Event>,
    /// For new connections, when the program's processes are followed.
    events_tx: Option<Sender<Event>>,
    /// Where followed processes report; dropped (and its pipe removed) at the end.
    channel: Option<Channel>,
    /// `None` when attached to a program we did not start (and must not kill).
    debuggee: Option<Debuggee>,
    exited: Receiver<Exit>,
    /// Asks the program to run until it says it started (see `script::until_waiting`).
    nudge: Receiver<Instant>,
    /// The session's breakpoints, to place in each thread that starts later.
    specs: Vec<(String, BreakpointSpec)>,
    /// The command's script, where source maps are looked for.
    entry: Option<PathBuf>,
    binding: String,
    stop_on_entry: bool,
    /// Worker threads the program started that run undebugged (when not followed).
    workers: usize,
    /// Whether exceptions thrown and caught in libraries and Node's internals stop the program.
    include_libraries: bool,
    /// `pauseOnExceptions`, for threads that start later.
    pause_state: String,
    /// With `userUnhandled`: the `try` blocks of the scripts a throw's stack stood in.
    catchers: Catchers,
    /// The instrumentation breakpoint that finds the entry script's first statement
    /// (stopOnEntry), until it does.
    entry_stop: Option<String>,
    /// What happened while setting up, for the actor.
    early: Vec<Happening<Paused>>,
    /// One thread's stop shown at a time: the others' held (they stay paused), and what else
    /// they said meanwhile, handed to the actor once the shown one goes on.
    turns: Turns<Paused>,
    /// The program's own thread paused once already (its start pause is behind it).
    began: bool,
    /// Where an attached program's files are here, when guessed.
    files: Whereabouts,
}

impl Cdp {
    fn new(
        runtime: Box<dyn Runtime>,
        client: Client,
        debuggee: Option<Debuggee>,
        binding: String,
        stop_on_entry: bool,
    ) -> Cdp {
        let pid = debuggee.as_ref().map_or(0, Debuggee::pid);
        let mut targets = BTreeMap::new();
        targets.insert(Origin::default(), Target::new(pid, None, runtime.urls()));
        Cdp {
            runtime,
            events: client.events().clone(),
            events_tx: None,
            channel: None,
            exited: debuggee.as_ref().map_or(never(), |d| d.exited().clone()),
            nudge: crossbeam_channel::tick(NUDGE_EVERY),
            conns: vec![Conn { client, pid, parent: None, command: String::new(), open: true }],
            targets,
            debuggee,
            specs: Vec::new(),
            entry: None,
            binding,
            stop_on_entry,
            workers: 0,
            include_libraries: false,
            pause_state: "none".into(),
            catchers: Catchers::default(),
            entry_stop: None,
            early: Vec::new(),
            turns: Turns::default(),
            began: false,
            files: Whereabouts::default(),
        }
    }

    /// Whether the program's processes and workers are followed (a program we started).
    fn follows(&self) -> bool {
        self.events_tx.is_some()
    }

    /// Sends a request to a thread: a process's, or a worker's through its process.
    fn send(&mut self, at: &Origin, method: &str, params: Value) -> Receiver<Reply> {
        let client = &mut self.conns[at.connection].client;
        match (&at.session, self.runtime.relay()) {
            (Some(session), Some(relay)) => client.send_to(Some((relay, session)), method, params),
            _ => client.send(method, params),
        }
    }

    fn request_at(&mut self, at: &Origin, method: &str, params: Value) -> Result<Value, Failure> {
        answer(&self.send(at, method, params))
    }

    /// A request to the program's own process.
    fn request(&mut self, method: &str, params: Value) -> Result<Value, Failure> {
        self.request_at(&Origin::default(), method, params)
    }

    /// Enables the domains and installs the probe in a thread, in one pipelined burst; `own`
    /// for the process debug-mcp started.
    fn prepare_target(&mut self, at: &Origin, own: bool) -> Result<(), Failure> {
        let options =
            json!({"maxHits": 0, "pause": false, "maxChars": VALUE_CHARS, "maxDepth": 20});
        let install =
            format!("({})({}, {options})", PROBE.trim_end(), Value::from(self.binding.as_str()));
        let pause = unhandled::v8_state(&self.pause_state).to_string();
        let replies = [
            self.send(at, "Runtime.enable", json!({})),
            self.send(at, "Debugger.enable", json!({})),
            self.send(at, "Debugger.setAsyncCallStackDepth", json!({"maxDepth": 32})),
            self.send(at, "Debugger.setPauseOnExceptions", json!({"state": pause})),
            self.send(at, "Runtime.addBinding", json!({"name": self.binding})),
            self.send(
                at,
                "Runtime.evaluate",
                json!({"expression": install, "returnByValue": true}),
            ),
        ];
        // A page's bundles and dev servers' modules carry breakpoints through maps fetched
        // from the page, each looked at before it runs.
        let mapped = matches!(self.runtime.urls(), UrlForm::Web { .. }).then(|| {
            let watch = json!({"instrumentation": "beforeScriptWithSourceMapExecution"});
            self.send(at, "Debugger.setInstrumentationBreakpoint", watch)
        });
        // The runtime's own last (Node's worker domain among them), as they always went.
        let runtime = match at.session {
            None => self.runtime.setup_requests(own, self.follows(), &install),
            Some(_) => Vec::new(),
        };
        let runtime: Vec<_> =
            runtime.into_iter().map(|(method, params)| self.send(at, method, params)).collect();
        for reply in replies.iter().chain(&runtime).chain(&mapped) {
            answer(reply)?;
        }
        Ok(())
    }

    /// Enables the domains and installs the probe in the program's process.
    fn prepare(&mut self, pause_on_exceptions: &str) -> Result<(), Failure> {
        self.pause_state = pause_on_exceptions.to_string();
        self.prepare_target(&Origin::default(), self.debuggee.is_some())
    }

    /// Places session breakpoint `id` in one thread.
    fn place(&mut self, at: &Origin, id: &str, spec: &BreakpointSpec) -> Result<(), Failure> {
        let condition = cdp_condition(&self.binding, id, spec);
        let (mut breakpoint, _) = Breakpoint::plan(
            &spec.file,
            &spec.real_file,
            spec.line,
            spec.column,
            condition,
            self.entry.as_deref(),
            self.runtime.urls(),
        )
        .map_err(|m| Failure::new(Code::NoCodeAtLine, m))?;
        breakpoint.set_unique(id);
        // A page's bundles carry it through maps looked at before each script runs (the
        // instrumentation pause `prepare_target` asks for).
        if matches!(self.runtime.urls(), UrlForm::Web { .. }) {
            breakpoint.watch_load();
        }
        if let Some(target) = self.targets.get_mut(at) {
            target.scripts.add_known(&spec.file);
            target.scripts.add_known(&spec.real_file);
        }
        for (params, request) in breakpoint.requests() {
            let answer = self.request_at(at, "Debugger.setBreakpointByUrl", params)?;
            let Some(target) = self.targets.get(at) else { return Ok(()) };
            breakpoint.set(request, &answer, &target.scripts);
        }
        let loaded =
            self.targets.get_mut(at).and_then(|t| breakpoint.in_loaded_script(&mut t.scripts));
        if let Some(steps) = loaded {
            self.send_steps(at, &mut breakpoint, steps?)?;
        }
        if let Some(target) = self.targets.get_mut(at) {
            target.placed.push((id.to_string(), breakpoint));
        }
        Ok(())
    }

    /// Sends the requests that place `breakpoint` in its loaded file ([`Breakpoint::at_load`],
    /// [`Breakpoint::in_loaded_script`]), in order, and records where it landed.
    fn send_steps(
        &mut self,
        at: &Origin,
        breakpoint: &mut Breakpoint,
        steps: Vec<Step>,
    ) -> Result<(), Failure> {
        for step in steps {
            let answer = self.request_at(at, step.method, step.params)?;
            if let (Some(request), Some(target)) = (step.request, self.targets.get(at)) {
                breakpoint.set(request, &answer, &target.scripts);
            }
        }
        Ok(())
    }

    /// Places waiting breakpoints through maps of loaded scripts: at the start pause, with
    /// every module of the program parsed (Deno compiles its whole module graph first), in
    /// files already compiled, before their load-time probes could fire late; or (`script`)
    /// in a script with a source map about to run (a page's bundle whose map lists the file).
    fn place_in_loaded(&mut self, at: &Origin, script: Option<&str>) {
        let count = self.targets.get(at).map_or(0, |t| t.placed.len());
        for index in 0..count {
            let Some(target) = self.targets.get_mut(at) else { return };
            let (id, mut breakpoint) = target.placed.remove(index);
            let steps = match script {
                None => breakpoint.in_loaded_script(&mut target.scripts),
                Some(script) if breakpoint.awaits_script(script, &mut target.scripts) => {
                    breakpoint.in_script(script, &mut target.scripts)
                }
                Some(_) => None,
            };
            let placed = match steps {
                Some(steps) => steps.and_then(|steps| self.send_steps(at, &mut breakpoint, steps)),
                None => Ok(()),
            };
            if let Err(failure) = placed {
                log::warn(format_args!("breakpoint {id} at start: {failure:?}"));
            }
            let Some(target) = self.targets.get_mut(at) else { return };
            target.placed.insert(index, (id, breakpoint));
        }
    }

    /// Waits for the runtime's ready event (see `script.rs` for the start-up race).
    fn until_waiting(&mut self) {
        let Some(ready) = self.runtime.ready_event() else { return };
        let events = self.events.clone();
        let gate = crossbeam_channel::after(Duration::from_secs(2));
        loop {
            select! {
                recv(events) -> event => match event {
                    Ok(event) if event.method == ready && event.origin == Origin::default() => return,
                    Ok(event) => {
                        if let Some(happening) = self.take(event) {
                            self.early.push(happening);
                        }
                    }
                    Err(_) => return,
                },
                recv(gate) -> _ => return,
            }
        }
    }

    fn breakpoint(&self, id: &str) -> Option<&Breakpoint> {
        let mut placed = self.targets.values().filter_map(|t| t.breakpoint(id));
        let first = placed.clone().next();
        placed.find(|b| b.resolution.line.is_some()).or(first)
    }

    /// An event, as the actor should see it: a stop in another thread than the one shown is
    /// held (that thread stays paused) until the shown one goes on.
    fn take(&mut self, event: Event) -> Option<Happening<Paused>> {
        let happening = self.handle_event(event)?;
        self.turns.arrived(happening)
    }

    fn handle_event(&mut self, mut event: Event) -> Option<Happening<Paused>> {
        if event.method == follow::REPORTED {
            if let Some(report) = Report::from_event(&event.params) {
                self.follow_process(report);
            }
            return None;
        }
        if self.follows() {
            if let Some(inner) = self.runtime.inner_started(&event) {
                let at =
                    Origin { connection: event.origin.connection, session: Some(inner.session) };
                let pid = self.conns[at.connection].pid;
                self.adopt(at, pid, Some(inner.name));
                return None;
            }
            if let Some(session) = self.runtime.inner_ended(&event) {
                let at =
                    Origin { connection: event.origin.connection, session: Some(session.into()) };
                self.targets.remove(&at);
                self.turns.forget(|gone| *gone == at);
                return None;
            }
        } else if self.runtime.on_event(&mut self.conns[0].client, &event) {
            self.workers += 1;
        }
        let at = std::mem::take(&mut event.origin);
        let top = at == Origin::default();
        let target = self.targets.get_mut(&at)?;
        match event.method.as_str() {
            "Debugger.paused" => {
                if top && !self.began && self.files.pending.is_some() {
                    self.guess_paths();
                }
                if top {
                    name_start_pause(self.runtime.as_ref(), &mut self.began, &mut event.params);
                }
                return self.paused(at, std::mem::take(&mut event.params));
            }
            "Debugger.resumed" if self.turns.resumed(&at) => return Some(Happening::Resumed),
            "Debugger.breakpointResolved" => {
                let id = event.params["breakpointId"].as_str().unwrap_or_default();
                for (_, breakpoint) in &mut target.placed {
                    breakpoint.resolved(id, &event.params["location"], &target.scripts);
                }
            }
            "Runtime.bindingCalled" if event.params["name"] == self.binding.as_str() => {
                let payload = event.params["payload"].as_str().unwrap_or_default();
                let message = payload.strip_prefix('L').map(serde_json::from_str::<Value>);
                if let Some(Ok(message)) = message {
                    let breakpoint = message["id"].as_str().map(String::from);
                    return Some(Happening::Logpoint { breakpoint, text: message["text"].clone() });
                }
            }
            "Runtime.consoleAPICalled" => {
                let (kind, text) = console_entry(&event)?;
                let entry = json!({"type": kind, "text": clip(&text, 4000)});
                return Some(Happening::Console(entry));
            }
            // A page's uncaught errors are its output; Node's are on its stderr already.
            "Runtime.exceptionThrown" if self.runtime.console_is_output() => {
                let (kind, text) = console_entry(&event)?;
                let entry = json!({"type": kind, "text": clip(&text, 4000)});
                return Some(Happening::Console(entry));
            }
            "Debugger.scriptParsed" => target.scripts.on_parsed(&event.params),
            _ if self.runtime.is_end(&event) && top => return Some(Happening::Ended(None)),
            _ if self.runtime.is_end(&event) && at.session.is_none() => {
                self.disconnect(at.connection);
            }
            // A followed thread that began to wait only after our first go.
            method if Some(method) == self.runtime.ready_event() && !top => {
                drop(self.send(&at, "Runtime.runIfWaitingForDebugger", json!({})));
            }
            _ => {}
        }
        None
    }

    fn paused(&mut self, at: Origin, params: Value) -> Option<Happening<Paused>> {
        let hits: Vec<String> = params["hitBreakpoints"]
            .as_array()
            .map(|ids| ids.iter().filter_map(|i| i.as_str().map(String::from)).collect())
            .unwrap_or_default();
        let hit_by = |b: &Breakpoint| b.ids().any(|id| hits.iter().any(|h| h == id));
        // A load-time probe: place the breakpoint from the file's map and go on.
        let probe_hit = |(_, b): &(String, Breakpoint)| {
            b.probe_id().is_some_and(|p| hits.iter().any(|h| h == p))
        };
        let target = self.targets.get_mut(&at)?;
        if let Some(index) = target.placed.iter().position(probe_hit) {
            let (id, mut breakpoint) = target.placed.remove(index);
            let placed = breakpoint
                .at_load(&params["callFrames"][0], &mut target.scripts)
                .and_then(|steps| self.send_steps(&at, &mut breakpoint, steps));
            if let Err(failure) = placed {
                log::warn(format_args!("breakpoint placement at load failed: {failure:?}"));
            }
            // The real breakpoint may sit right here; otherwise go on.
            let here = hit_by(&breakpoint);
            self.targets.get_mut(&at)?.placed.insert(index, (id, breakpoint));
            if !here {
                drop(self.send(&at, "Debugger.resume", json!({})));
                return None;
            }
        }
        if params["reason"] == "Break on start" {
            self.place_in_loaded(&at, None);
        }
        if params["reason"] == "instrumentation" {
            if let Some(script) = params.pointer("/data/scriptId").and_then(Value::as_str) {
                self.place_in_loaded(&at, Some(script));
            }
        }
        let target = self.targets.get(&at)?;
        let mut ours: Vec<String> =
            target.placed.iter().filter(|(_, b)| hit_by(b)).map(|(id, _)| id.clone()).collect();
        let top = at == Origin::default();
        let at_entry_line = ours.iter().any(|id| id == ENTRY);
        ours.retain(|id| id != ENTRY);
        let entry_script = top
            && params["reason"] == "instrumentation"
            && self.is_entry(params["data"]["url"].as_str().unwrap_or_default());
        let waits_for_entry =
            self.entry_stop.is_some() || target.placed.iter().any(|(id, _)| id == ENTRY);
        let library = !is_own(&target.scripts.file(top_script(&params)));
        if at_entry_line || entry_script {
            self.clear_entry_stop();
        }
        let reason = match params["reason"].as_str().unwrap_or_default() {
            _ if !ours.is_empty() => Reason::Breakpoint,
            _ if at_entry_line || entry_script => Reason::Entry,
            "instrumentation" => {
                drop(self.send(&at, "Debugger.resume", json!({})));
                return None;
            }
            "exception" | "promiseRejection"
                if self.pause_state == "userUnhandled"
                    && params["data"]["uncaught"] != true
                    && !self.leaves_own_code(&at, &params) =>
            {
                drop(self.send(&at, "Debugger.resume", json!({})));
                return None;
            }
            // A library's or Node's own exception, caught there: not the program's business.
            "exception" | "promiseRejection"
                if !self.include_libraries && params["data"]["uncaught"] != true && library =>
            {
                drop(self.send(&at, "Debugger.resume", json!({})));
                return None;
            }
            "exception" | "promiseRejection" => Reason::Exception,
            "Break on start" if !top || !self.stop_on_entry || waits_for_entry => {
                drop(self.send(&at, "Debugger.resume", json!({})));
                return None;
            }
            "Break on start" => Reason::Entry,
            _ => Reason::Unsaid,
        };
        Some(Happening::Stopped(self.stop(Paused { params, at, reason, hits: ours })))
    }

    /// The stop a pause makes (again, when another thread's was shown meanwhile).
    fn stop(&mut self, paused: Paused) -> Stop<Paused> {
        let reason = paused.reason;
        let exception = (reason == Reason::Exception).then(|| {
            let data = &paused.params["data"];
            // V8's description is the message, then the stack ("    at ..."), in generated
            // code's lines. V8 pauses where it is thrown: the paused frames are that stack, in
            // the source's own lines when a map has them.
            let description = data["description"].as_str().unwrap_or_default();
            let message = description.split_once("\n    at ").map_or(description, |(m, _)| m);
            Exception {
                class: data["className"].clone(),
                message: clip(message, 2000).into(),
                stack: self.trace(&paused),
                uncaught: data["uncaught"] == true,
                user_unhandled: self.pause_state == "userUnhandled" && data["uncaught"] != true,
            }
        });
        let location = match self.targets.get_mut(&paused.at) {
            Some(target) => target.scripts.location(&paused.params["callFrames"][0]),
            None => Scripts::new(self.runtime.urls()).location(&paused.params["callFrames"][0]),
        };
        // A stop in a file only the program has: its lines come from the runtime.
        if let Some(file) = self.files.unread(location.file.as_deref()) {
            let text = self.source_text(&file).ok().and_then(|t| t.as_str().map(String::from));
            self.files.keep(file, text);
        }
        let frames = paused.params["callFrames"].as_array().map_or(0, Vec::len);
        Stop { reason, hits: paused.hits.clone(), location, exception, frames, paused }
    }

    /// The scripts of the thread a stop is in (the program's when it is gone).
    fn scripts_of(&mut self, at: &Origin) -> &mut Scripts {
        let at = if self.targets.contains_key(at) { at.clone() } else { Origin::default() };
        &mut self.targets.get_mut(&at).expect("the program's own thread is always there").scripts
    }

    /// Pauses a running thread and waits (2 s at most) for its stop; what else happens
    /// meanwhile is held for the actor.
    fn pause_thread(&mut self, at: &Origin) -> Result<Stop<Paused>, Failure> {
        self.request_at(at, "Debugger.pause", json!({}))?;
        let events = self.events.clone();
        let limit = crossbeam_channel::after(Duration::from_secs(2));
        loop {
            let event = select! {
                recv(events) -> event => event.map_err(|_| Failure::new(Code::InspectorFailed, cdp::Error::Closed.to_string()))?,
                recv(limit) -> _ => return Err(Failure::new(
                    Code::InspectorFailed,
                    "the thread did not pause within 2 s (busy in native code?): try again",
                )),
            };
            match self.handle_event(event) {
                Some(Happening::Stopped(stop)) if stop.paused.at == *at => return Ok(stop),
                Some(Happening::Resumed) | None => {}
                Some(happening) => self.turns.hold(happening),
            }
        }
    }

    /// Closes every connection (children first) and stops taking reports.
    fn close_all(&mut self) {
        self.channel.take();
        for conn in self.conns.iter_mut().rev() {
            conn.client.close();
        }
    }

    /// A thread's id for `debug-threads`: `main` for the program's own main thread, the pid
    /// for another process's, `pid/worker` for a worker.
    fn thread_id(&self, at: &Origin) -> String {
        let Some(target) = self.targets.get(at) else { return MAIN.into() };
        match (at.session.as_deref(), at == &Origin::default()) {
            (None, true) => MAIN.into(),
            (None, false) => target.pid.to_string(),
            (Some(session), _) => format!("{}/{session}", target.pid),
        }
    }

    /// The entry is found: neither way of finding it stops the program again.
    fn clear_entry_stop(&mut self) {
        if let Some(id) = self.entry_stop.take() {
            let params = json!({"breakpointId": id});
            drop(self.send(&Origin::default(), "Debugger.removeBreakpoint", params));
        }
        if let Err(failure) = self.remove_breakpoint(ENTRY) {
            log::warn(format_args!("removing the entry breakpoint: {failure:?}"));
        }
    }

    /// Whether a script URL is the command's own script.
    fn is_entry(&self, url: &str) -> bool {
        let Some(entry) = &self.entry else { return false };
        let file = std::path::PathBuf::from(self.runtime.urls().to_path(url));
        let real = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.into());
        real(&file) == real(entry)
    }

    /// An object's own properties, then a Map's or Set's entries (`[0]`, `[1]`...), from
    /// `start`, at most `max` (then how many more).
    fn properties(
        &mut self,
        at: &Origin,
        object_id: &str,
        start: usize,
        max: usize,
    ) -> Result<Vec<Variable>, Failure> {
        let answer = self.own_properties(at, object_id)?;
        let mut all = own_variables(&answer);
        let entries = answer["internalProperties"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == "[[Entries]]")
            .and_then(|p| p.pointer("/value/objectId"))
            .and_then(Value::as_str)
            .map(String::from);
        if let Some(entries) = entries {
            let answer = self.own_properties(at, &entries)?;
            let items = answer["result"].as_array().into_iter().flatten();
            let items: Vec<&Value> = items
                .filter(|p| p["name"].as_str().is_some_and(|n| n.parse::<usize>().is_ok()))
                .collect();
            // The entries on this page get their key's and value's own previews (an entry's
            // preview shows an object value as `Object`); the others are only counted.
            let page = start.saturating_sub(all.len())..start.saturating_add(max);
            for (index, item) in items.iter().enumerate() {
                let name = format!("[{}]", item["name"].as_str().unwrap_or_default());
                let mut entry = variable(&name, &item["value"]);
                entry.kind = "entry".into();
                if page.contains(&index) {
                    if let Some(id) = item.pointer("/value/objectId").and_then(Value::as_str) {
                        entry.value = self.entry_preview(at, id).unwrap_or(entry.value);
                    }
                }
                all.push(entry);
            }
        }
        Ok(Variable::page(all, start, max))
    }

    /// A Map entry as `key => value` or a Set entry as `value`, each with its own preview.
    fn entry_preview(&mut self, at: &Origin, entry_id: &str) -> Result<Value, Failure> {
        let answer = self.own_properties(at, entry_id)?;
        let part = |name: &str| {
            let parts = answer["result"].as_array().into_iter().flatten();
            parts
                .filter(|p| p["name"] == name)
                .map(|p| {
                    let (kind, value) = compact(&p["value"]);
                    match (kind.as_str(), value) {
                        ("string", Value::String(s)) => format!("'{s}'"),
                        (_, Value::String(s)) => s,
                        (_, other) => other.to_string(),
                    }
                })
                .next()
        };
        Ok(match (part("key"), part("value")) {
            (Some(key), Some(value)) => format!("{key} => {value}").into(),
            (None, Some(value)) => value.into(),
            _ => Value::Null,
        })
    }

    fn own_properties(&mut self, at: &Origin, object_id: &str) -> Result<Value, Failure> {
        self.request_at(at, "Runtime.getProperties", own_properties(object_id))
    }

    /// Places the entry stop when asked, and lets the program run.
    fn let_go(&mut self) -> Result<(), Failure> {
        // stopOnEntry stops at the first statement of the command's own script: Node's
        // "Break on start" may be in a loader's code (`--import tsx`) or before the imports
        // run. V8 pauses before each script runs; the entry's pause is the one kept.
        // That finds an ES module's; a CommonJS module (TypeScript that a loader compiles
        // too) is found by a breakpoint at its first line, placed as a user's would be.
        if let Some(entry) = self.entry.clone().filter(|_| self.stop_on_entry) {
            let params = json!({"instrumentation": "beforeScriptExecution"});
            match self.request("Debugger.setInstrumentationBreakpoint", params) {
                Ok(answer) => self.entry_stop = answer["breakpointId"].as_str().map(String::from),
                Err(failure) => log::debug(format_args!("no entry stop ({failure:?})")),
            }
            let real_file = std::fs::canonicalize(&entry).unwrap_or_else(|_| entry.clone());
            let spec = BreakpointSpec {
                file: entry,
                real_file,
                line: 1,
                column: None,
                condition: None,
                log_message: None,
                hit_count: None,
            };
            if let Err(failure) = self.set_breakpoint(ENTRY, &spec) {
                log::debug(format_args!("no entry breakpoint ({failure:?})"));
            }
        }
        // A program we attach to is already running (or waits, and then says so at once).
        if self.debuggee.is_some() {
            self.until_waiting();
        }
        self.request("Runtime.runIfWaitingForDebugger", json!({}))?;
        if self.debuggee.is_some() {
            for (method, params) in self.runtime.go_requests() {
                check_go(&self.request(method, params)?)?;
            }
        }
        Ok(())
    }
}

impl Backend for Cdp {
    type Event = Event;
    type Paused = Paused;
    fn language(&self) -> &str {
        self.runtime.language()
    }
    const EVALUATES_RUNNING: bool = true;

    fn inputs(&self) -> Inputs<Event> {
        // A held stop is due as soon as no stop is shown.
        let due = self.turns.due();
        Inputs {
            events: self.events.clone(),
            exited: self.exited.clone(),
            tick: if due { crossbeam_channel::after(Duration::ZERO) } else { self.nudge.clone() },
            more: never(),
        }
    }

    fn handle(&mut self, input: Input<Event>) -> Option<Happening<Paused>> {
        match input {
            Input::Event(event) => {
                // It runs: no more nudges.
                if event.origin == Origin::default()
                    && event.method != follow::REPORTED
                    && self.runtime.shows_running(&event)
                {
                    self.nudge = never();
                }
                self.take(event)
            }
            Input::Closed => {
                self.events = never();
                Some(Happening::Ended(None))
            }
            Input::Exited(exit) => {
                self.exited = never();
                if let (Some(exit), Some(debuggee)) = (exit, &mut self.debuggee) {
                    debuggee.record_exit(exit);
                }
                Some(Happening::Ended(None))
            }
            Input::Tick if self.turns.due() => self.turns.next(),
            Input::Tick => {
                drop(self.send(&Origin::default(), "Runtime.runIfWaitingForDebugger", json!({})));
                None
            }
        }
    }

    fn early(&mut self) -> Vec<Happening<Paused>> {
        std::mem::take(&mut self.early)
    }

    fn begin(&mut self) -> Result<(), Failure> {
        // The program may end as it is let go (Deno that cannot load its module): its exit
        // says why, not the connection that closed with it.
        match (self.let_go(), self.debuggee.as_mut()) {
            (Err(failure @ Failure::Error { code: Code::InspectorFailed, .. }), Some(debuggee)) => {
                Err(ended_while_starting(debuggee, failure))
            }
            (begun, _) => begun,
        }
    }

    fn set_breakpoint(&mut self, id: &str, spec: &BreakpointSpec) -> Result<(), Failure> {
        // In every thread; one that fails in the program's own fails the call.
        let targets: Vec<Origin> = self.targets.keys().cloned().collect();
        for at in targets {
            match self.place(&at, id, spec) {
                Err(failure) if at == Origin::default() => return Err(failure),
                Err(failure) => log::warn(format_args!("breakpoint {id} in {at:?}: {failure:?}")),
                Ok(()) => {}
            }
        }
        self.specs.retain(|(i, _)| i != id);
        self.specs.push((id.to_string(), spec.clone()));
        Ok(())
    }

    fn remove_breakpoint(&mut self, id: &str) -> Result<(), Failure> {
        self.specs.retain(|(i, _)| i != id);
        let targets: Vec<Origin> = self.targets.keys().cloned().collect();
        for at in targets {
            let Some(target) = self.targets.get_mut(&at) else { continue };
            let Some(index) = target.placed.iter().position(|(i, _)| i == id) else { continue };
            let (_, breakpoint) = target.placed.remove(index);
            let ids: Vec<String> =
                breakpoint.ids().chain(breakpoint.probe_id()).map(String::from).collect();
            for cdp_id in ids {
                let removed = self.request_at(
                    &at,
                    "Debugger.removeBreakpoint",
                    json!({"breakpointId": cdp_id}),
                );
                if at == Origin::default() {
                    removed?;
                }
            }
        }
        Ok(())
    }

    fn resolution(&self, id: &str) -> Resolution {
        let Some(breakpoint) = self.breakpoint(id) else { return Resolution::default() };
        let resolution = &breakpoint.resolution;
        match resolution.line {
            Some(line) => {
                let file = resolution.file.clone().unwrap_or_else(|| breakpoint.file_shown());
                Resolution {
                    resolved: vec![json!({"file": file, "line": line, "column": resolution.column})],
                    generated: resolution.generated.clone(),
                    reason: None,
                }
            }
            None => Resolution {
                reason: Some(format!(
                    "not bound yet; it binds when its script loads. If the program is past that: {}",
                    breakpoint.never_bound().trim_start_matches("the breakpoint never bound: ")
                )),
                ..Resolution::default()
            },
        }
    }

    fn resume(&mut self, action: Action, paused: Option<&Paused>) -> Result<(), Failure> {
        let at = paused.map_or(Origin::default(), |p| p.at.clone());
        let method = match (paused, action) {
            (None, Action::Pause) => "Debugger.pause",
            (None, _) => return Ok(()),
            (Some(_), Action::Continue) => "Debugger.resume",
            (Some(_), Action::StepOver) => "Debugger.stepOver",
            (Some(_), Action::StepInto) => "Debugger.stepInto",
            (Some(_), Action::StepOut) => "Debugger.stepOut",
            (Some(_), Action::Pause) => return Ok(()),
        };
        self.request_at(&at, method, json!({}))?;
        if paused.is_some() {
            // The shown stop goes on: a held one is due. A step keeps the thread's turn: its
            // next stop is the step's.
            self.turns.went_on(action != Action::Continue);
        }
        Ok(())
    }

    fn stack(
        &mut self,
        paused: &Paused,
        max: usize,
        include_async: bool,
    ) -> (Vec<Frame>, Option<usize>) {
        let scripts = self.scripts_of(&paused.at);
        let (frames, total) = stack::frames(scripts, &paused.params, max, include_async);
        (frames, Some(total))
    }

    /// What is in scope at the stopped line: the block scopes (a loop's `i`, a `for…of`'s
    /// `item`), then the function's locals, innermost first; a name an inner scope shadows
    /// shows once. At a CommonJS module's top level, the wrapper's `exports`, `require`,
    /// `module`, `__filename` and `__dirname` are left out (`debug-variables` lists them).
    fn locals(&mut self, paused: &Paused, max: usize) -> Vec<Variable> {
        // The scopes up to the function's own, innermost first: asked in one burst (a stop
        // state costs one round trip however many blocks the line is in).
        let chain = paused.frame(0)["scopeChain"].as_array().cloned().unwrap_or_default();
        let mut scopes = Vec::new();
        for scope in &chain {
            let kind = scope["type"].as_str().unwrap_or_default();
            if !matches!(kind, "block" | "catch" | "local") {
                break;
            }
            if let Some(id) = scope.pointer("/object/objectId").and_then(Value::as_str) {
                let params = own_properties(id);
                scopes.push((kind, self.send(&paused.at, "Runtime.getProperties", params)));
            }
            if kind == "local" {
                break;
            }
        }
        let mut locals: Vec<Variable> = Vec::new();
        for (kind, reply) in scopes {
            let Ok(answer) = answer(&reply) else { continue };
            let room = max.saturating_sub(locals.len());
            let mut variables: Vec<Variable> = own_variables(&answer)
                .into_iter()
                .filter(|v| !locals.iter().any(|l| l.name == v.name))
                .collect();
            if kind == "local" && is_commonjs_wrapper(&variables) {
                variables.retain(|v| !COMMONJS_WRAPPER.contains(&v.name.as_str()));
            }
            variables.truncate(room);
            locals.extend(variables);
            if kind == "local" || locals.len() >= max {
                break;
            }
        }
        locals
    }

    fn scope_variables(
        &mut self,
        paused: &Paused,
        query: &VariablesQuery,
    ) -> Result<Vec<Variable>, Failure> {
        if query.scope == "registers" {
            let why = "JavaScript frames have no registers: use local, closure, module or global";
            return Err(Failure::new(
                Code::InvalidArguments,
                format!("invalid argument `scope`: {why}"),
            )
            .with("field", "scope".into()));
        }
        let wanted = |kind: &str| match query.scope.as_str() {
            "all" => true,
            "local" => matches!(kind, "local" | "block" | "catch"),
            "global" => matches!(kind, "global" | "script"),
            other => kind == other,
        };
        let scopes: Vec<(String, String)> = paused.frame(query.frame)["scopeChain"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| wanted(s["type"].as_str().unwrap_or_default()))
            .filter_map(|s| {
                let kind = s["type"].as_str()?.to_string();
                Some((kind, s.pointer("/object/objectId")?.as_str()?.to_string()))
            })
            .collect();
        // One flat list; each variable names its scope.
        let mut variables = Vec::new();
        for (kind, object_id) in scopes {
            for mut variable in
                self.properties(&paused.at, &object_id, query.start, query.max_items)?
            {
                variable.scope = Some(kind.clone());
                variables.push(variable);
            }
        }
        Ok(variables)
    }

    fn expand(
        &mut self,
        paused: &Paused,
        path: &str,
        query: &VariablesQuery,
    ) -> Result<(Value, Value, Vec<Variable>), Failure> {
        let frame = paused.call_frame_id(query.frame);
        let answer = self.request_at(
            &paused.at,
            "Debugger.evaluateOnCallFrame",
            json!({"callFrameId": frame, "expression": path, "silent": true,
                   "generatePreview": true}),
        )?;
        if let Some(text) = exception_text(&answer) {
            return Err(Failure::new(Code::InvalidPath, format!("`{path}`: {text}")));
        }
        let remote = &answer["result"];
        let (kind, value) = compact(remote);
        let children = match remote["objectId"].as_str() {
            Some(object_id) => {
                self.properties(&paused.at, object_id, query.start, query.max_items)?
            }
            None => Vec::new(),
        };
        Ok((kind.into(), value, children))
    }

    fn evaluate(
        &mut self,
        paused: Option<&Paused>,
        expression: &str,
        frame: usize,
        max_chars: usize,
    ) -> Result<Value, Failure> {
        let wrapped = format!("{}.evaluate(() => ({expression}\n), {max_chars})", self.binding);
        let answer = match paused {
            Some(paused) => self.request_at(
                &paused.at,
                "Debugger.evaluateOnCallFrame",
                json!({"callFrameId": paused.call_frame_id(frame), "expression": wrapped,
                       "returnByValue": true}),
            )?,
            None => self.request(
                "Runtime.evaluate",
                json!({"expression": wrapped, "returnByValue": true}),
            )?,
        };
        if let Some(text) = exception_text(&answer) {
            return Ok(json!({"type": "error", "value": text}));
        }
        let text = answer.pointer("/result/value").and_then(Value::as_str).unwrap_or("Fnull");
        let (truncated, json) = script::flagged(text).unwrap_or((false, "null"));
        script::probe_value(truncated, json, text)
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
        let id = paused.call_frame_id(frame);
        let computed = self.request_at(
            &paused.at,
            "Debugger.evaluateOnCallFrame",
            json!({"callFrameId": id, "expression": value, "silent": true}),
        )?;
        if let Some(text) = exception_text(&computed) {
            return Err(Failure::new(Code::InvalidExpression, format!("`value`: {text}"))
                .with("field", "value".into()));
        }
        let remote = &computed["result"];
        let argument = match (
            remote.get("objectId"),
            remote.get("unserializableValue"),
            remote.get("value"),
        ) {
            (Some(id), _, _) => json!({"objectId": id}),
            (_, Some(u), _) => json!({"unserializableValue": u}),
            (_, _, Some(v)) => json!({"value": v}),
            _ => json!({}),
        };
        let kinds: &[&str] = match scope {
            "closure" => &["closure"],
            "module" => &["module"],
            "global" => &["global", "script"],
            _ => &["local", "block", "catch"],
        };
        // The nearest scope of that kind that has the name (V8 answers a bare "Internal
        // error" for a name that is not there).
        let scopes = paused.frame(frame)["scopeChain"].as_array().cloned().unwrap_or_default();
        for (number, s) in scopes.iter().enumerate() {
            let Some(object_id) = s.pointer("/object/objectId").and_then(Value::as_str) else {
                continue;
            };
            if !kinds.contains(&s["type"].as_str().unwrap_or_default()) {
                continue;
            }
            let has = self
                .properties(&paused.at, object_id, 0, usize::MAX)?
                .iter()
                .any(|p| p.name == name);
            if !has {
                continue;
            }
            let params = json!({"scopeNumber": number, "variableName": name,
                                "newValue": argument, "callFrameId": id});
            self.request_at(&paused.at, "Debugger.setVariableValue", params)?;
            return self.evaluate(Some(paused), name, frame, max_chars);
        }
        Err(Failure::new(
            Code::NoVariable,
            format!(
                "no `{name}` in the {scope} scope of frame {frame}: list them with debug-variables"
            ),
        ))
    }

    /// Every thread debugged: the program's own (`main`), followed processes (by pid) and
    /// workers (`pid/n`); the current one is the stop's.
    fn threads(&mut self, paused: Option<&Paused>) -> Result<(Vec<Thread>, String), Failure> {
        let command = |c: usize| self.conns.get(c).map_or("", |c| c.command.as_str());
        let threads = self
            .targets
            .iter()
            .map(|(at, target)| {
                let what = match (&target.worker, at.connection) {
                    (Some(worker), _) => worker.clone(),
                    (None, 0) => "main".into(),
                    (None, c) => clip(command(c), 200),
                };
                let state = if self.turns.holds(at) { ", paused" } else { "" };
                Thread {
                    id: self.thread_id(at),
                    name: format!("pid {}: {what}{state}", target.pid),
                }
            })
            .collect();
        let current = paused.map_or(MAIN.into(), |p| self.thread_id(&p.at));
        Ok((threads, current))
    }

    /// The stop as seen from another thread: one that stopped meanwhile (held) is shown; one
    /// that runs is paused first. The stop shown until now is held in turn.
    fn select_thread(&mut self, paused: &Paused, id: &str) -> Result<Stop<Paused>, Failure> {
        let Some(at) = self.targets.keys().find(|at| self.thread_id(at) == id).cloned() else {
            let ids: Vec<String> = self.targets.keys().map(|at| self.thread_id(at)).collect();
            return Err(Failure::new(
                Code::InvalidArguments,
                format!(
                    "no thread `{id}`: the threads are {} (debug-stack lists them)",
                    ids.join(", ")
                ),
            ));
        };
        let stop = match self.turns.take_held(&at) {
            Some(stop) => stop,
            None => self.pause_thread(&at)?,
        };
        let shown = Paused {
            params: paused.params.clone(),
            at: paused.at.clone(),
            reason: paused.reason,
            hits: paused.hits.clone(),
        };
        let shown = self.stop(shown);
        self.turns.hold_first(shown, at);
        Ok(stop)
    }

    fn pause_on_exceptions(
        &mut self,
        state: &str,
        include_libraries: bool,
    ) -> Result<Option<String>, Failure> {
        self.include_libraries = include_libraries;
        self.pause_state = state.to_string();
        let targets: Vec<Origin> = self.targets.keys().cloned().collect();
        for at in targets {
            let set = self.request_at(
                &at,
                "Debugger.setPauseOnExceptions",
                json!({"state": unhandled::v8_state(state)}),
            );
            if at == Origin::default() {
                set?;
            }
        }
        Ok(None)
    }

    fn loaded_sources(
        &mut self,
        paused: Option<&Paused>,
        include_internal: bool,
    ) -> Result<Vec<Source>, Failure> {
        let at = paused.map_or(Origin::default(), |p| p.at.clone());
        Ok(self.scripts_of(&at).list(include_internal))
    }

    fn source_text(&mut self, file: &str) -> Result<Value, Failure> {
        let found = self
            .targets
            .iter()
            .find_map(|(at, target)| Some((at.clone(), target.scripts.find(file)?)));
        match found {
            Some((at, id)) => self
                .request_at(&at, "Debugger.getScriptSource", json!({"scriptId": id}))
                .map(|answer| answer["scriptSource"].clone()),
            None => Err(Failure::new(
                Code::FileNotFound,
                format!(
                    "{file} is neither on disk nor a script the program loaded: debug-source \
                     without `file` lists those"
                ),
            )),
        }
    }

    fn original_text(&self, file: &str) -> Option<String> {
        let text = crate::cdp::maps::original_text(std::path::Path::new(file));
        text.map(|text| text.to_string()).or_else(|| self.files.text(file))
    }

    fn output(&self) -> Output {
        self.debuggee.as_ref().map(|d| d.output().clone()).unwrap_or_default()
    }

    fn processes(&self) -> Vec<Value> {
        self.conns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.open)
            .map(|(n, c)| {
                let threads = self
                    .targets
                    .iter()
                    .filter(|(at, _)| at.connection == n)
                    .filter_map(|(_, t)| t.worker.as_deref())
                    .collect();
                let debugged = Debugged {
                    pid: c.pid,
                    command: &c.command,
                    parent: c.parent,
                    hits: None,
                    threads,
                };
                debugged.to_json()
            })
            .collect()
    }

    fn stopped_in(&self, paused: &Paused) -> Option<Value> {
        let conn = self.conns.get(paused.at.connection)?;
        let mut process = json!({"pid": conn.pid, "thread": self.thread_id(&paused.at)});
        if paused.at.connection > 0 {
            process["command"] = clip(&conn.command, 200).into();
        }
        if let Some(worker) = self.targets.get(&paused.at).and_then(|t| t.worker.as_deref()) {
            process["worker"] = worker.into();
        }
        Some(process)
    }

    /// Child processes (of a program we started) not followed, and worker threads not
    /// followed.
    fn undebugged(&self) -> Undebugged {
        let descendants = self.debuggee.as_ref().map(|d| d.descendants(None)).unwrap_or_default();
        let followed: Vec<u32> = self.conns.iter().map(|c| c.pid).collect();
        let mut processes = Undebugged::processes(descendants, &followed);
        if self.runtime.children_are_its_own() {
            processes.clear();
        }
        Undebugged { processes, workers: self.workers }
    }

    fn end(&mut self, _: Option<i32>, forced: bool) -> Exit {
        self.close_all();
        let Some(debuggee) = &mut self.debuggee else {
            // Attached: the connection closed; how the process ended is not ours to know.
            return Exit { code: None, signal: None };
        };
        if !self.runtime.exits_when_let_go() {
            // A browser: its exit says nothing about the page.
            debuggee.kill();
            debuggee.settle_output();
            return Exit { code: None, signal: None };
        }
        if forced {
            debuggee.kill();
        }
        let exit = debuggee.finish(EXIT_GRACE);
        debuggee.settle_output();
        exit
    }

    fn stopped(&self) -> Vec<crate::process::Stopped> {
        self.debuggee.as_ref().map(|d| d.stopped()).unwrap_or_default()
    }

    fn guessed_paths(&self) -> Option<&PathMapping> {
        self.files.guessed.as_ref()
    }

    fn attached_note(&self) -> Option<String> {
        self.debuggee.is_none().then(|| {
            "the attached program ended or closed its inspector; its exit code and output are \
             its own: debug-mcp did not start it"
                .into()
        })
    }

    fn shutdown(&mut self) {
        self.close_all();
        // An attached program is not ours: closing the connection detaches from it.
        if let Some(debuggee) = &mut self.debuggee {
            debuggee.kill();
        }
    }
}

/// `Runtime.getProperties` of an object's own properties, with previews of their values.
fn own_properties(object_id: &str) -> Value {
    json!({"objectId": object_id, "ownProperties": true, "generatePreview": true})
}

/// The own properties in a `Runtime.getProperties` answer, as variables.
fn own_variables(answer: &Value) -> Vec<Variable> {
    let properties = answer["result"].as_array().into_iter().flatten();
    properties
        .filter(|p| p.get("value").is_some())
        .map(|p| variable(p["name"].as_str().unwrap_or_default(), &p["value"]))
        .collect()
}

/// A property or entry as a variable: its preview, and whether `path` can open it.
fn variable(name: &str, remote: &Value) -> Variable {
    let (kind, mut value) = compact(remote);
    // `const total = () => ...` names its function `total`, as JS does.
    if value == "[Function (anonymous)]" {
        value = format!("[Function: {name}]").into();
    }
    Variable {
        name: name.into(),
        kind,
        value,
        expandable: remote.get("objectId").is_some() && remote["type"] == "object",
        scope: None,
    }
}

/// Whether a script's file (or URL) is a dependency's or the runtime's own, not the program's.
/// The script of the top frame of a `Debugger.paused` event (frames' own `url` is empty).
fn top_script(params: &Value) -> &str {
    params.pointer("/callFrames/0/location/scriptId").and_then(Value::as_str).unwrap_or_default()
}

/// The id of the program's own thread.
const MAIN: &str = "main";

/// The id of the breakpoint at the first line of the command's script, for stopOnEntry.
const ENTRY: &str = "entry";

/// The parameters of the function Node wraps a CommonJS module in.
const COMMONJS_WRAPPER: [&str; 5] = ["exports", "require", "module", "__filename", "__dirname"];

/// Whether a function's locals are those of a CommonJS module's wrapper (all five parameters).
fn is_commonjs_wrapper(locals: &[Variable]) -> bool {
    COMMONJS_WRAPPER.iter().all(|name| locals.iter().any(|v| v.name == *name))
}

type Reply = Result<Value, cdp::Error>;

/// The answer to a request, within [`REQUEST_TIMEOUT`].
fn answer(reply: &Receiver<Reply>) -> Result<Value, Failure> {
    match reply.recv_timeout(REQUEST_TIMEOUT) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(Failure::new(Code::InspectorFailed, e.to_string())),
        Err(_) => Err(Failure::new(
            Code::InspectorFailed,
            format!("the inspector did not answer within {} s", REQUEST_TIMEOUT.as_secs()),
        )),
    }
}

/// The CDP condition for a breakpoint: its condition, and for a logpoint a call that reports
/// the message through the probe and never stops.
fn cdp_condition(binding: &str, id: &str, spec: &BreakpointSpec) -> String {
    let Some(message) = &spec.log_message else {
        return spec.condition.clone().unwrap_or_default();
    };
    // `x is {x}` becomes the template literal `x is ${BINDING.part(() => (x))}`: each part
    // evaluated on its own, so that an error replaces only its part.
    let mut template = String::new();
    for part in logpoint_parts(message) {
        match part {
            Part::Text(text) => {
                for c in text.chars() {
                    if matches!(c, '`' | '\\' | '$') {
                        template.push('\\');
                    }
                    template.push(c);
                }
            }
            Part::Expression(expression) => {
                template.push_str(&format!("${{{binding}.part(() => ({expression}\n))}}"));
            }
        }
    }
    let log = format!("{binding}.log({}, () => `{template}`)", Value::from(id));
    match &spec.condition {
        Some(condition) => format!("(() => ({condition}\n))() && {log}"),
        None => log,
    }
}

/// The first line of the exception in an evaluation's answer, if it threw.
fn exception_text(answer: &Value) -> Option<String> {
    let details = answer.get("exceptionDetails")?;
    let text = details
        .pointer("/exception/description")
        .and_then(Value::as_str)
        .or_else(|| details["text"].as_str())
        .unwrap_or("error");
    Some(text.lines().next().unwrap_or(text).to_string())
}
