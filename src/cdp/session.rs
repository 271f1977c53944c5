//! One interactive debug session with a Node program: a thread that owns the program and its
//! inspector connection for as long as the session lives, and answers tool calls sent to it
//! as [`Command`]s.
//!
//! The thread is one `select!` over commands, inspector events, the child's exit, the deadline
//! of the call waiting for the next stop, and the start-up nudge. A call that waits (launch,
//! continue, step, pause) parks its reply channel; the next pause, the program's end or the
//! deadline answers it, so no call hangs. Breakpoints go through `cdp/breakpoints.rs`, values
//! through the same probe as `debug-script`, locations through source maps (`cdp/scripts.rs`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{never, select, Receiver, Sender};
use serde_json::{json, Value};

use crate::cdp::breakpoints::Breakpoint;
use crate::cdp::node;
use crate::cdp::scripts::Scripts;
use crate::cdp::{self, script, Client, Event};
use crate::debugger::{Code, Failure};
use crate::log;
use crate::process::{Debuggee, Exit};
use crate::sessions::{Clocks, Handle, Watch};
use crate::shell::{self, CommandLine};
use crate::thread::JoinOnDrop;
use crate::tools::script::{Undebugged, VALUE_CHARS};

const PROBE: &str = include_str!("probe.js");
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a program may take to open its inspector and be set up.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
const NUDGE_EVERY: Duration = Duration::from_millis(500);
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// Lines of source shown on each side of the current line.
const CONTEXT: usize = 2;
/// Locals shown in a stop state, and characters of each value.
pub(crate) const MAX_LOCALS: usize = 50;
const VALUE_PREVIEW: usize = 200;

/// A breakpoint as `debug-launch` and `debug-set-breakpoint` take it.
pub(crate) struct BreakpointSpec {
    pub(crate) file: PathBuf,
    pub(crate) real_file: PathBuf,
    pub(crate) line: u32,
    pub(crate) column: Option<u32>,
    pub(crate) condition: Option<String>,
    /// A logpoint: `{expr}` parts are evaluated; the program does not stop.
    pub(crate) log_message: Option<String>,
}

/// A breakpoint of the session: what was asked, how it is carried, how often it was hit.
struct UserBreakpoint {
    id: String,
    spec: BreakpointSpec,
    breakpoint: Breakpoint,
    hits: u64,
}

impl UserBreakpoint {
    fn hit_by(&self, hits: &[String]) -> bool {
        self.breakpoint.ids().any(|id| hits.iter().any(|h| h == id))
    }

    /// `undebugged`: what the program ran outside the debugger so far (see [`Undebugged`]).
    fn to_json(&self, undebugged: Option<&str>) -> Value {
        let resolution = &self.breakpoint.resolution;
        let mut json = json!({"breakpointId": self.id, "file": self.spec.file.display().to_string(),
            "line": self.spec.line, "verified": resolution.line.is_some(), "hits": self.hits});
        if let Some(column) = self.spec.column {
            json["column"] = column.into();
        }
        if let Some(condition) = &self.spec.condition {
            json["condition"] = condition.as_str().into();
        }
        if let Some(message) = &self.spec.log_message {
            json["logMessage"] = message.as_str().into();
        }
        match resolution.line {
            Some(line) => {
                let file =
                    resolution.file.clone().unwrap_or_else(|| self.spec.file.display().to_string());
                json["resolved"] =
                    json!([{"file": file, "line": line, "column": resolution.column}]);
                if !resolution.generated.is_empty() {
                    json["generated"] = resolution.generated.clone().into();
                }
            }
            None => {
                json["resolved"] = json!([]);
                json["reason"] = match undebugged {
                    Some(what) => format!(
                        "not bound in the process debug-mcp started; the program also ran {what} \
                         outside the debugger: if the file runs there, its hits are not seen"
                    ),
                    None => format!(
                        "not bound yet; it binds when its script loads. If the program is past \
                         that: {}",
                        self.breakpoint
                            .never_bound()
                            .trim_start_matches("the breakpoint never bound: ")
                    ),
                }
                .into();
            }
        }
        json
    }
}

/// Sends the requests that place `breakpoint` in its loaded file ([`Breakpoint::at_load`],
/// [`Breakpoint::in_loaded_script`]), in order, and records where it landed.
fn send_steps(
    client: &mut Client,
    scripts: &Scripts,
    breakpoint: &mut Breakpoint,
    steps: [crate::cdp::breakpoints::Step; 2],
) -> Result<(), Failure> {
    for step in steps {
        let answer = answer(&client.send(step.method, step.params))?;
        if let Some(request) = step.request {
            breakpoint.set(request, &answer, scripts);
        }
    }
    Ok(())
}

/// The answer to a request, within [`REQUEST_TIMEOUT`].
fn answer(reply: &Receiver<Result<Value, cdp::Error>>) -> Result<Value, Failure> {
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
    // `x is {x}` becomes the template literal `x is ${x}`.
    let mut template = String::new();
    for c in message.chars() {
        match c {
            '`' | '\\' => {
                template.push('\\');
                template.push(c);
            }
            '$' => template.push_str("\\$"),
            '{' => template.push_str("${"),
            c => template.push(c),
        }
    }
    let log = format!("{binding}.log({}, () => `{template}`)", Value::from(id));
    match &spec.condition {
        Some(condition) => format!("(() => ({condition}\n))() && {log}"),
        None => log,
    }
}

pub(crate) struct LaunchSpec {
    pub(crate) command: CommandLine,
    pub(crate) breakpoints: Vec<BreakpointSpec>,
    pub(crate) stop_on_entry: bool,
    pub(crate) pause_on_exceptions: String,
    pub(crate) timeout: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Action {
    Continue,
    StepOver,
    StepInto,
    StepOut,
    Pause,
}

/// A tool call's answer: the structured content, or a failure.
pub(crate) type Reply = Result<Value, Failure>;

pub(crate) enum Command {
    Resume {
        action: Action,
        timeout: Duration,
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
    RemoveBreakpoint {
        id: String,
        reply: Sender<Reply>,
    },
    ListBreakpoints {
        reply: Sender<Reply>,
    },
    Output {
        since: Option<String>,
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
        reply: Sender<Reply>,
    },
    PauseOnExceptions {
        state: String,
        reply: Sender<Reply>,
    },
}

/// What `debug-variables` asks for.
pub(crate) struct VariablesQuery {
    pub(crate) frame: usize,
    /// `local`, `closure`, `module`, `global` or `all`.
    pub(crate) scope: String,
    /// An expression to expand (`order.items[2]`) instead of a scope.
    pub(crate) path: Option<String>,
    pub(crate) max_items: usize,
}

/// Starts a session: spawns the program, sets the breakpoints, lets it run to its first stop
/// (or `timeout`), and returns the handle with that first state.
///
/// Everything happens on the session's own thread, the program's spawn included: on Linux a
/// debuggee dies with the thread that spawned it (see `sys::new_process_group`), so that must be
/// the thread that owns it for the session's life.
pub(crate) fn launch(
    id: &str,
    spec: LaunchSpec,
    watch: Arc<Watch>,
    cancel: &Receiver<()>,
) -> Result<(Handle, Value), Failure> {
    run_session(id, cancel, move |id, summary, abandon| start(id, spec, summary, watch, abandon))
}

/// What debug-attach sets up before it lets the program go on.
pub(crate) struct AttachSpec {
    pub(crate) breakpoints: Vec<BreakpointSpec>,
    pub(crate) pause_on_exceptions: String,
    /// How long the first answer waits for a stop.
    pub(crate) timeout: Duration,
}

/// Attaches to a running Node process's inspector (`ws://...`). The session never kills it.
pub(crate) fn attach(
    id: &str,
    url: String,
    start: AttachSpec,
    watch: Arc<Watch>,
    cancel: &Receiver<()>,
) -> Result<(Handle, Value), Failure> {
    run_session(id, cancel, move |id, summary, _| {
        let client = Client::connect(&url, REQUEST_TIMEOUT)
            .map_err(|m| Failure::new(Code::InspectorFailed, m))?;
        let mut session = Session {
            entry: None,
            next_breakpoint: 0,
            console: Console::default(),
            command_line: format!("attached to {url}"),
            binding: format!("__debugMcp_{}_{id}", std::process::id()),
            id,
            client,
            debuggee: None,
            scripts: Scripts::default(),
            breakpoints: Vec::new(),
            state: State::Running,
            waiter: None,
            last_action: Action::Continue,
            stop_on_entry: false,
            started: true,
            summary,
            first_deadline: Instant::now() + start.timeout,
            watch,
            idle_ended: false,
            workers: 0,
        };
        session.setup(&start.pause_on_exceptions, start.breakpoints)?;
        Ok(session)
    })
}

/// Runs a session thread made by `begin`, and waits for its first state.
/// A session's run loop, whichever debugger it speaks.
pub(crate) trait Serve: Send + 'static {
    /// Serves commands until the channel closes; `first` is the launch call, waiting for the
    /// first stop.
    fn serve(self, first: Sender<Reply>, commands: &Receiver<Command>);
}

impl Serve for Session {
    fn serve(mut self, first: Sender<Reply>, commands: &Receiver<Command>) {
        self.waiter = Some(Waiter { reply: first, deadline: self.first_deadline });
        self.serve_commands(commands);
    }
}

pub(crate) fn run_session<S: Serve>(
    id: &str,
    cancel: &Receiver<()>,
    begin: impl FnOnce(String, Arc<Mutex<Value>>, &Receiver<()>) -> Result<S, Failure> + Send + 'static,
) -> Result<(Handle, Value), Failure> {
    let summary = Arc::new(Mutex::new(json!({"sessionId": id, "state": "starting"})));
    let (commands_tx, commands) = crossbeam_channel::unbounded();
    let (first_tx, first) = crossbeam_channel::bounded(1);
    let (abandon_tx, abandon) = crossbeam_channel::bounded::<()>(1);
    let thread = JoinOnDrop::spawn(&format!("session-{id}"), {
        let id = id.to_string();
        let summary = summary.clone();
        move || match begin(id, summary, &abandon) {
            Ok(session) => session.serve(first_tx, &commands),
            Err(failure) => {
                let _ = first_tx.send(Err(failure));
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
    // On failure, dropping the handle ends the session and joins its thread.
    first.map(|state| (handle, state))
}

/// Spawns the program and sets the session up (on the session thread).
fn start(
    id: String,
    spec: LaunchSpec,
    summary: Arc<Mutex<Value>>,
    watch: Arc<Watch>,
    abandon: &Receiver<()>,
) -> Result<Session, Failure> {
    // Starting has its own limit: `timeout` is how long to wait for the first stop.
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    // --inspect-brk stops at the first line (stopOnEntry); --inspect-wait does not.
    let flag = if spec.stop_on_entry { node::BRK_FLAG } else { node::WAIT_FLAG };
    let (launch, debuggee, client) =
        script::start_node(&spec.command, flag, STARTUP_TIMEOUT, deadline, abandon)?;
    let mut session = Session {
        entry: launch.entry.map(PathBuf::from),
        next_breakpoint: 0,
        console: Console::default(),
        command_line: shell::join(&spec.command.words),
        binding: format!("__debugMcp_{}_{id}", std::process::id()),
        id,
        client,
        debuggee: Some(debuggee),
        scripts: Scripts::default(),
        breakpoints: Vec::new(),
        state: State::Running,
        waiter: None,
        last_action: Action::Continue,
        stop_on_entry: spec.stop_on_entry,
        started: false,
        summary,
        first_deadline: deadline,
        watch,
        idle_ended: false,
        workers: 0,
    };
    session.setup(&spec.pause_on_exceptions, spec.breakpoints)?;
    session.first_deadline = Instant::now() + spec.timeout;
    Ok(session)
}

struct Waiter {
    reply: Sender<Reply>,
    deadline: Instant,
}

enum State {
    Running,
    Paused { reason: &'static str, params: Value },
    Exited(Exit),
}

struct Session {
    id: String,
    client: Client,
    /// `None` when attached to a program we did not start (and must not kill).
    debuggee: Option<Debuggee>,
    scripts: Scripts,
    breakpoints: Vec<UserBreakpoint>,
    next_breakpoint: u32,
    /// The command's script, where source maps are looked for.
    entry: Option<PathBuf>,
    console: Console,
    binding: String,
    state: State,
    /// The call waiting for the next stop.
    waiter: Option<Waiter>,
    /// What the program was last told to do, to name the next pause.
    last_action: Action,
    stop_on_entry: bool,
    /// Whether any event came after the program was let go (see `script::until_waiting`).
    started: bool,
    summary: Arc<Mutex<Value>>,
    command_line: String,
    /// When the launch call stops waiting for the first stop.
    first_deadline: Instant,
    /// Tells resource subscribers when the state changes.
    watch: Arc<Watch>,
    /// Ended because no call came for the idle limit.
    idle_ended: bool,
    /// Worker threads the program started (they run undebugged).
    workers: usize,
}

impl Session {
    fn answer(&self, reply: &Receiver<Result<Value, cdp::Error>>) -> Result<Value, Failure> {
        answer(reply)
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value, Failure> {
        let reply = self.client.send(method, params);
        self.answer(&reply)
    }

    /// Enables the domains, installs the probe, sets the breakpoints, and lets the program run.
    fn setup(
        &mut self,
        pause_on_exceptions: &str,
        breakpoints: Vec<BreakpointSpec>,
    ) -> Result<(), Failure> {
        let options =
            json!({"maxHits": 0, "pause": false, "maxChars": VALUE_CHARS, "maxDepth": 20});
        let install =
            format!("({})({}, {options})", PROBE.trim_end(), Value::from(self.binding.as_str()));
        let client = &mut self.client;
        let replies = [
            client.send("NodeRuntime.enable", json!({})),
            client.send("Runtime.enable", json!({})),
            client.send("Debugger.enable", json!({})),
            client.send("Debugger.setAsyncCallStackDepth", json!({"maxDepth": 32})),
            client.send("Debugger.setPauseOnExceptions", json!({"state": pause_on_exceptions})),
            client.send("NodeRuntime.notifyWhenWaitingForDisconnect", json!({"enabled": true})),
            client.send("Runtime.addBinding", json!({"name": self.binding})),
            client.send("Runtime.evaluate", json!({"expression": install, "returnByValue": true})),
            client.send("NodeWorker.enable", node::worker_events()),
        ];
        // Only a program we start: an attached one's children are its own business.
        let uninherit = self.debuggee.is_some().then(|| {
            let params = json!({"expression": node::UNINHERIT_INSPECTOR, "returnByValue": true});
            self.client.send("Runtime.evaluate", params)
        });
        for reply in replies.into_iter().chain(uninherit) {
            self.answer(&reply)?;
        }
        for (i, spec) in breakpoints.into_iter().enumerate() {
            self.add_breakpoint(spec)
                .map_err(|f| f.with("field", format!("breakpoints[{i}]").into()))?;
        }
        // A program we attach to is already running (or waits, and then says so at once).
        if self.debuggee.is_some() {
            self.until_waiting()?;
        }
        self.request("Runtime.runIfWaitingForDebugger", json!({}))?;
        self.publish();
        Ok(())
    }

    /// Plans and sets a breakpoint; returns its description.
    fn add_breakpoint(&mut self, spec: BreakpointSpec) -> Result<Value, Failure> {
        self.next_breakpoint += 1;
        let id = self.next_breakpoint.to_string();
        let condition = cdp_condition(&self.binding, &id, &spec);
        let (mut breakpoint, _) = Breakpoint::plan(
            &spec.file,
            &spec.real_file,
            spec.line,
            spec.column,
            condition,
            self.entry.as_deref(),
        )
        .map_err(|m| Failure::new(Code::NoCodeAtLine, m))?;
        breakpoint.set_unique(&id);
        for (params, request) in breakpoint.requests() {
            let answer = self.request("Debugger.setBreakpointByUrl", params)?;
            breakpoint.set(request, &answer, &self.scripts);
        }
        if let Some(steps) = breakpoint.in_loaded_script(&self.scripts) {
            let steps = steps?;
            send_steps(&mut self.client, &self.scripts, &mut breakpoint, steps)?;
        }
        let user = UserBreakpoint { id, spec, breakpoint, hits: 0 };
        let json = user.to_json(self.undebugged().describe().as_deref());
        self.breakpoints.push(user);
        Ok(json)
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
        let user = self.breakpoints.remove(index);
        let ids: Vec<String> =
            user.breakpoint.ids().chain(user.breakpoint.probe_id()).map(String::from).collect();
        for cdp_id in ids {
            self.request("Debugger.removeBreakpoint", json!({"breakpointId": cdp_id}))?;
        }
        Ok(json!({"sessionId": self.id, "removed": id}))
    }

    /// Waits for `NodeRuntime.waitingForDebugger` (see `script.rs` for the start-up race).
    fn until_waiting(&mut self) -> Result<(), Failure> {
        let events = self.client.events().clone();
        let gate = crossbeam_channel::after(Duration::from_secs(2));
        loop {
            select! {
                recv(events) -> event => match event {
                    Ok(event) if event.method == "NodeRuntime.waitingForDebugger" => return Ok(()),
                    Ok(event) => self.handle_event(event),
                    Err(_) => return Ok(()),
                },
                recv(gate) -> _ => return Ok(()),
            }
        }
    }

    fn serve_commands(&mut self, commands: &Receiver<Command>) {
        let mut events = self.client.events().clone();
        let mut exited = self.debuggee.as_ref().map_or(never(), |d| d.exited().clone());
        let mut nudge = crossbeam_channel::tick(NUDGE_EVERY);
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
                recv(idle) -> _ => {
                    log::info(format_args!("session {} idle for {} s: ending it", self.id, clocks.idle_limit.as_secs()));
                    self.idle_ended = true;
                    if let Some(debuggee) = &mut self.debuggee {
                        debuggee.kill();
                    }
                    self.ended();
                },
                recv(events) -> event => match event {
                    Ok(event) => {
                        if !self.started {
                            self.started = true;
                            nudge = never();
                        }
                        self.handle_event(event);
                    }
                    Err(_) => {
                        events = never();
                        self.ended();
                    }
                },
                recv(exited) -> exit => {
                    exited = never();
                    if let (Ok(exit), Some(debuggee)) = (exit, &mut self.debuggee) {
                        debuggee.record_exit(exit);
                    }
                    self.ended();
                },
                recv(waiting) -> _ => self.reply(Ok(self.running_state())),
                recv(nudge) -> _ => drop(self.client.send("Runtime.runIfWaitingForDebugger", json!({}))),
            }
        }
        self.client.close();
        // An attached program is not ours: closing the connection detaches from it.
        if let Some(debuggee) = &mut self.debuggee {
            debuggee.kill();
        }
    }

    /// What the program ran outside the debugger so far: child processes (of a program we
    /// started) and worker threads.
    fn undebugged(&self) -> Undebugged {
        let processes = self.debuggee.as_ref().map(|d| d.descendants(None)).unwrap_or_default();
        Undebugged { processes, workers: self.workers }
    }

    fn reply(&mut self, reply: Reply) {
        if let Some(waiter) = self.waiter.take() {
            let _ = waiter.reply.send(reply);
        }
    }

    fn handle_event(&mut self, mut event: Event) {
        match event.method.as_str() {
            "Debugger.paused" => self.paused(std::mem::take(&mut event.params)),
            "Debugger.resumed" if !matches!(self.state, State::Exited(_)) => {
                self.state = State::Running;
                self.publish();
            }
            "Debugger.breakpointResolved" => {
                let id = event.params["breakpointId"].as_str().unwrap_or_default();
                for user in &mut self.breakpoints {
                    user.breakpoint.resolved(id, &event.params["location"], &self.scripts);
                }
            }
            "Runtime.bindingCalled" if event.params["name"] == self.binding.as_str() => {
                let payload = event.params["payload"].as_str().unwrap_or_default();
                let message = payload.strip_prefix('L').map(serde_json::from_str::<Value>);
                if let Some(Ok(message)) = message {
                    let id = message["id"].as_str().unwrap_or_default().to_string();
                    if let Some(user) = self.breakpoints.iter_mut().find(|b| b.id == id) {
                        user.hits += 1;
                    }
                    let entry =
                        json!({"type": "logpoint", "breakpointId": id, "text": message["text"]});
                    self.console.record(entry);
                }
            }
            "Runtime.consoleAPICalled" => {
                let text: Vec<String> = event.params["args"]
                    .as_array()
                    .map(|args| args.iter().map(console_text).collect())
                    .unwrap_or_default();
                let kind = event.params["type"].as_str().unwrap_or("log").to_string();
                self.console.record(json!({"type": kind, "text": clip(&text.join(" "), 4000)}));
            }
            "Debugger.scriptParsed" => self.scripts.on_parsed(&event.params),
            "NodeWorker.attachedToWorker" => {
                self.workers += 1;
                node::release_worker(&mut self.client, &event.params);
            }
            "NodeRuntime.waitingForDisconnect" => self.ended(),
            _ => {}
        }
    }

    fn paused(&mut self, params: Value) {
        let hits: Vec<String> = params["hitBreakpoints"]
            .as_array()
            .map(|ids| ids.iter().filter_map(|i| i.as_str().map(String::from)).collect())
            .unwrap_or_default();
        // A load-time probe: place the breakpoint from the file's map and go on.
        let probe_hit = |b: &UserBreakpoint| {
            b.breakpoint.probe_id().is_some_and(|p| hits.iter().any(|h| h == p))
        };
        if let Some(index) = self.breakpoints.iter().position(probe_hit) {
            if let Err(failure) = self.place_at_load(index, &params["callFrames"][0]) {
                log::warn(format_args!("breakpoint placement at load failed: {failure:?}"));
            }
            // The real breakpoint may sit right here; otherwise go on.
            let here = self.breakpoints[index].hit_by(&hits);
            if !here {
                drop(self.client.send("Debugger.resume", json!({})));
                return;
            }
        }
        let mut ours = false;
        for user in self.breakpoints.iter_mut().filter(|b| b.hit_by(&hits)) {
            user.hits += 1;
            ours = true;
        }
        let reason = match params["reason"].as_str().unwrap_or_default() {
            _ if ours => "breakpoint",
            "exception" | "promiseRejection" => "exception",
            "Break on start" if !self.stop_on_entry => {
                drop(self.client.send("Debugger.resume", json!({})));
                return;
            }
            "Break on start" => "entry",
            _ => match self.last_action {
                Action::StepOver | Action::StepInto | Action::StepOut => "step",
                Action::Pause => "pause",
                Action::Continue => "debugger",
            },
        };
        self.state = State::Paused { reason, params };
        self.publish();
        if self.waiter.is_some() {
            let state = self.stop_state();
            self.reply(Ok(state));
        }
    }

    fn place_at_load(&mut self, index: usize, frame: &Value) -> Result<(), Failure> {
        let breakpoint = &mut self.breakpoints[index].breakpoint;
        let steps = breakpoint.at_load(frame, &self.scripts)?;
        send_steps(&mut self.client, &self.scripts, breakpoint, steps)
    }

    /// The program finished (or its connection or process went away): let it exit, record how.
    fn ended(&mut self) {
        if matches!(self.state, State::Exited(_)) {
            return;
        }
        self.client.close();
        let exit = match &mut self.debuggee {
            Some(debuggee) => {
                let exit = debuggee.finish(EXIT_GRACE);
                debuggee.settle_output();
                exit
            }
            // Attached: the connection closed; how the process ended is not ours to know.
            None => Exit { code: None, signal: None },
        };
        self.state = State::Exited(exit);
        self.publish();
        let state = self.stop_state();
        self.reply(Ok(state));
    }

    fn handle_command(&mut self, command: Command) {
        match command {
            Command::Resume { action, timeout, reply } => self.resume(action, timeout, reply),
            Command::Stack { max_frames, include_async, reply } => {
                let _ = reply.send(self.stack(max_frames, include_async));
            }
            Command::Evaluate { expression, frame, reply } => {
                let _ = reply.send(self.evaluate(&expression, frame));
            }
            Command::Variables { query, reply } => {
                let _ = reply.send(self.variables(&query));
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
                let undebugged = self.undebugged().describe();
                let list: Vec<Value> =
                    self.breakpoints.iter().map(|b| b.to_json(undebugged.as_deref())).collect();
                let _ = reply.send(Ok(json!({"sessionId": self.id, "breakpoints": list})));
            }
            Command::Output { since, reply } => {
                let output = self.debuggee.as_ref().map(Debuggee::output);
                let _ = reply.send(self.console.since(&self.id, output, since.as_deref()));
            }
            Command::Scripts { include_internal, reply } => {
                let scripts = self.scripts.list(include_internal);
                let _ = reply.send(Ok(json!({"sessionId": self.id, "scripts": scripts})));
            }
            Command::ScriptSource { file, reply } => {
                let answer = match self.scripts.find(&file) {
                    Some(id) => self
                        .request("Debugger.getScriptSource", json!({"scriptId": id}))
                        .map(|a| json!({"text": a["scriptSource"]})),
                    None => Err(Failure::new(
                        Code::FileNotFound,
                        format!("{file} is neither on disk nor a script the program loaded: list them with debug-scripts"),
                    )),
                };
                let _ = reply.send(answer);
            }
            Command::SetVariable { name, value, frame, scope, reply } => {
                let _ = reply.send(self.set_variable(&name, &value, frame, &scope));
            }
            Command::PauseOnExceptions { state, reply } => {
                let answer = self
                    .request("Debugger.setPauseOnExceptions", json!({"state": state}))
                    .map(|_| json!({"sessionId": self.id, "pauseOnExceptions": state}));
                let _ = reply.send(answer);
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
        let method = match (&self.state, action) {
            (State::Exited(_), _) => {
                let _ = reply.send(Ok(self.stop_state()));
                return;
            }
            (State::Paused { .. }, Action::Pause) => {
                let _ = reply.send(Ok(self.stop_state()));
                return;
            }
            (State::Running, Action::Pause) => Some("Debugger.pause"),
            (State::Running, Action::Continue) => None,
            (State::Running, _) => {
                let _ = reply.send(Err(Failure::new(
                    Code::Running,
                    "the program is running: stop it with debug-pause (or wait with debug-continue) before stepping",
                )));
                return;
            }
            (State::Paused { .. }, Action::Continue) => Some("Debugger.resume"),
            (State::Paused { .. }, Action::StepOver) => Some("Debugger.stepOver"),
            (State::Paused { .. }, Action::StepInto) => Some("Debugger.stepInto"),
            (State::Paused { .. }, Action::StepOut) => Some("Debugger.stepOut"),
        };
        self.last_action = action;
        if let Some(method) = method {
            if let Err(failure) = self.request(method, json!({})) {
                let _ = reply.send(Err(failure));
                return;
            }
        }
        self.waiter = Some(Waiter { reply, deadline: Instant::now() + timeout });
    }

    fn running_state(&self) -> Value {
        crate::sessions::running_state(&self.id)
    }

    /// The state every waiting call returns: paused (where, why, the source and the locals),
    /// running, or exited.
    fn stop_state(&mut self) -> Value {
        match &self.state {
            State::Running => self.running_state(),
            State::Exited(exit) => {
                let Some(debuggee) = &self.debuggee else {
                    return json!({"sessionId": self.id, "state": "exited",
                        "message": "the attached program ended or closed its inspector"});
                };
                let output = debuggee.output().to_json();
                let mut state = json!({"sessionId": self.id, "state": "exited",
                    "stderr": output["stderr"], "stdout": output["stdout"]});
                if self.idle_ended {
                    state["message"] = "ended by debug-mcp: no call came for the idle limit (DEBUG_MCP_SESSION_IDLE_MS)".into();
                }
                match exit.code {
                    Some(code) => state["exitCode"] = code.into(),
                    None => state["signal"] = exit.signal.unwrap_or(0).into(),
                }
                self.undebugged().add_to_state(&mut state);
                state
            }
            State::Paused { reason, params } => {
                let reason = *reason;
                let params = params.clone();
                let top = &params["callFrames"][0];
                let location = self.scripts.location_json(top);
                let mut state = json!({"sessionId": self.id, "state": "paused", "reason": reason,
                    "location": location});
                if let Some(source) = source_lines(&location) {
                    state["source"] = source;
                }
                state["locals"] = self.locals(top);
                let cdp_hits: Vec<String> = params["hitBreakpoints"]
                    .as_array()
                    .map(|ids| ids.iter().filter_map(|i| i.as_str().map(String::from)).collect())
                    .unwrap_or_default();
                let hits: Vec<&str> = self
                    .breakpoints
                    .iter()
                    .filter(|b| b.hit_by(&cdp_hits))
                    .map(|b| b.id.as_str())
                    .collect();
                if !hits.is_empty() {
                    state["hitBreakpoints"] = json!(hits);
                }
                if reason == "exception" {
                    let data = &params["data"];
                    // V8's description is the message, then the stack ("    at ...").
                    let description = data["description"].as_str().unwrap_or_default();
                    let (message, stack) = description
                        .split_once("\n    at ")
                        .map_or((description.to_string(), String::new()), |(m, s)| {
                            (m.to_string(), format!("    at {s}"))
                        });
                    state["exception"] = json!({
                        "class": data["className"],
                        "message": clip(&message, 2000),
                        "stack": clip(&stack, 4000),
                        "uncaught": data["uncaught"] == true,
                    });
                }
                state
            }
        }
    }

    /// The top frame's local scope, compact: `{name, type, value}` each, capped.
    fn locals(&mut self, frame: &Value) -> Value {
        let scope = frame["scopeChain"]
            .as_array()
            .and_then(|scopes| scopes.iter().find(|s| s["type"] == "local"))
            .and_then(|s| s.pointer("/object/objectId"))
            .and_then(Value::as_str)
            .map(String::from);
        let Some(object_id) = scope else { return json!([]) };
        let mut items = self.properties(&object_id, MAX_LOCALS).unwrap_or_default();
        for item in &mut items {
            if let Some(object) = item.as_object_mut() {
                object.remove("expandable");
            }
        }
        Value::from(items)
    }

    /// An object's own properties as `{name, type, value, expandable}`, at most `max`.
    fn properties(&mut self, object_id: &str, max: usize) -> Result<Vec<Value>, Failure> {
        let answer = self.request(
            "Runtime.getProperties",
            json!({"objectId": object_id, "ownProperties": true, "generatePreview": false}),
        )?;
        let mut items: Vec<Value> = answer["result"]
            .as_array()
            .map(|props| {
                props
                    .iter()
                    .filter(|p| p.get("value").is_some())
                    .map(|p| {
                        let (kind, value) = compact(&p["value"]);
                        let expandable = p.pointer("/value/objectId").is_some()
                            && p["value"]["type"] == "object";
                        json!({"name": p["name"], "type": kind, "value": value, "expandable": expandable})
                    })
                    .collect()
            })
            .unwrap_or_default();
        if items.len() > max {
            let more = items.len() - max;
            items.truncate(max);
            items.push(json!({"name": "…", "type": "truncated",
                "value": format!("{more} more: raise maxItems or narrow with path")}));
        }
        Ok(items)
    }

    fn paused_frame(&self, frame: usize) -> Result<Value, Failure> {
        let State::Paused { params, .. } = &self.state else {
            return Err(self.not_paused());
        };
        params["callFrames"].get(frame).cloned().ok_or_else(|| {
            let count = params["callFrames"].as_array().map_or(0, Vec::len);
            Failure::new(
                Code::InvalidArguments,
                format!(
                    "invalid argument `frame`: there are {count} frames (0 to {})",
                    count.saturating_sub(1)
                ),
            )
            .with("field", "frame".into())
        })
    }

    /// Scope variables of a paused frame, or the children of `path`.
    fn variables(&mut self, query: &VariablesQuery) -> Reply {
        let frame = self.paused_frame(query.frame)?;
        if let Some(path) = &query.path {
            let id = frame["callFrameId"].as_str().unwrap_or_default().to_string();
            let answer = self.request(
                "Debugger.evaluateOnCallFrame",
                json!({"callFrameId": id, "expression": path, "silent": true}),
            )?;
            if let Some(text) = exception_text(&answer) {
                return Err(Failure::new(Code::InvalidPath, format!("`{path}`: {text}")));
            }
            let remote = &answer["result"];
            let (kind, value) = compact(remote);
            let variables = match remote["objectId"].as_str().map(String::from) {
                Some(object_id) => self.properties(&object_id, query.max_items)?,
                None => Vec::new(),
            };
            return Ok(json!({"sessionId": self.id, "path": path, "type": kind, "value": value,
                             "variables": variables}));
        }
        let wanted = |kind: &str| match query.scope.as_str() {
            "all" => true,
            "local" => matches!(kind, "local" | "block" | "catch"),
            "global" => matches!(kind, "global" | "script"),
            other => kind == other,
        };
        let scopes: Vec<(String, String)> = frame["scopeChain"]
            .as_array()
            .map(|scopes| {
                scopes
                    .iter()
                    .filter(|s| wanted(s["type"].as_str().unwrap_or_default()))
                    .filter_map(|s| {
                        let kind = s["type"].as_str()?.to_string();
                        Some((kind, s.pointer("/object/objectId")?.as_str()?.to_string()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        // One flat list; each variable names its scope.
        let mut variables = Vec::new();
        for (kind, object_id) in scopes {
            for mut variable in self.properties(&object_id, query.max_items)? {
                variable["scope"] = kind.as_str().into();
                variables.push(variable);
            }
        }
        Ok(
            json!({"sessionId": self.id, "frame": query.frame, "scope": query.scope, "variables": variables}),
        )
    }

    /// Sets a variable in a paused frame's scope to the value of a JavaScript expression.
    fn set_variable(&mut self, name: &str, value: &str, frame: usize, scope: &str) -> Reply {
        let frame_json = self.paused_frame(frame)?;
        let id = frame_json["callFrameId"].as_str().unwrap_or_default().to_string();
        let computed = self.request(
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
        let scopes = frame_json["scopeChain"].as_array().cloned().unwrap_or_default();
        let kinds: &[&str] = match scope {
            "closure" => &["closure"],
            "module" => &["module"],
            "global" => &["global", "script"],
            _ => &["local", "block", "catch"],
        };
        // The nearest scope of that kind that has the name (V8 answers a bare "Internal
        // error" for a name that is not there).
        for (number, s) in scopes.iter().enumerate() {
            let Some(object_id) = s.pointer("/object/objectId").and_then(Value::as_str) else {
                continue;
            };
            if !kinds.contains(&s["type"].as_str().unwrap_or_default()) {
                continue;
            }
            let has = self.properties(object_id, usize::MAX)?.iter().any(|p| p["name"] == name);
            if !has {
                continue;
            }
            let params = json!({"scopeNumber": number, "variableName": name,
                                "newValue": argument, "callFrameId": id});
            self.request("Debugger.setVariableValue", params)?;
            let now = self.evaluate(name, frame)?;
            return Ok(json!({"sessionId": self.id, "name": name,
                             "type": now["type"], "value": now["value"]}));
        }
        Err(Failure::new(
            Code::NoVariable,
            format!(
                "no `{name}` in the {scope} scope of frame {frame}: list them with debug-variables"
            ),
        ))
    }

    fn stack(&mut self, max_frames: usize, include_async: bool) -> Reply {
        let State::Paused { params, .. } = &self.state else {
            return Err(self.not_paused());
        };
        let params = params.clone();
        let frames: Vec<Value> = params["callFrames"]
            .as_array()
            .map(|frames| {
                frames
                    .iter()
                    .take(max_frames)
                    .enumerate()
                    .map(|(index, frame)| {
                        let mut location = self.scripts.location_json(frame);
                        location["index"] = index.into();
                        location
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut frames = frames;
        let total = params["callFrames"].as_array().map_or(0, Vec::len);
        // Awaited callers: each `asyncStackTrace` link names why it continues (e.g. `await`).
        let mut link = params.get("asyncStackTrace").filter(|_| include_async).cloned();
        while let Some(trace) = link {
            let reason = trace["description"].as_str().unwrap_or("async").to_string();
            for frame in trace["callFrames"].as_array().into_iter().flatten() {
                if frames.len() >= max_frames {
                    break;
                }
                // Async frames carry their location flat; shape it like a paused frame's.
                let shaped = json!({"functionName": frame["functionName"], "url": frame["url"],
                    "location": {"scriptId": frame["scriptId"], "lineNumber": frame["lineNumber"],
                                 "columnNumber": frame["columnNumber"]}});
                let mut location = self.scripts.location_json(&shaped);
                location["index"] = frames.len().into();
                location["async"] = reason.as_str().into();
                frames.push(location);
            }
            link = trace.get("parent").cloned();
        }
        Ok(json!({"sessionId": self.id, "frames": frames, "totalFrames": total}))
    }

    fn evaluate(&mut self, expression: &str, frame: usize) -> Reply {
        let wrapped = format!("{}.evaluate(() => ({expression}\n))", self.binding);
        let answer = match &self.state {
            State::Exited(_) => return Err(self.not_paused()),
            State::Paused { params, .. } => {
                let Some(id) =
                    params["callFrames"][frame]["callFrameId"].as_str().map(String::from)
                else {
                    let count = params["callFrames"].as_array().map_or(0, Vec::len);
                    return Err(Failure::new(
                        Code::InvalidArguments,
                        format!(
                            "invalid argument `frame`: there are {count} frames (0 to {})",
                            count.saturating_sub(1)
                        ),
                    )
                    .with("field", "frame".into()));
                };
                self.request(
                    "Debugger.evaluateOnCallFrame",
                    json!({"callFrameId": id, "expression": wrapped, "returnByValue": true}),
                )?
            }
            State::Running => self.request(
                "Runtime.evaluate",
                json!({"expression": wrapped, "returnByValue": true}),
            )?,
        };
        if let Some(details) = answer.get("exceptionDetails") {
            let text = details
                .pointer("/exception/description")
                .and_then(Value::as_str)
                .or_else(|| details["text"].as_str())
                .unwrap_or("error");
            return Ok(json!({"type": "error", "value": text.lines().next().unwrap_or(text)}));
        }
        let text = answer.pointer("/result/value").and_then(Value::as_str).unwrap_or("null");
        serde_json::from_str(text)
            .map_err(|e| Failure::new(Code::Internal, format!("unreadable value: {e}")))
    }

    fn not_paused(&self) -> Failure {
        match &self.state {
            State::Exited(exit) => Failure::new(
                Code::Exited,
                format!("session {} has ended: the program exited ({}); start a new one with debug-launch", self.id, exit.describe()),
            ),
            _ => Failure::new(
                Code::Running,
                format!("session {} is running: stop it with debug-pause first", self.id),
            ),
        }
    }

    /// Updates the summary `debug-sessions` shows.
    fn publish(&mut self) {
        let state = match &self.state {
            State::Running => "running",
            State::Paused { .. } => "paused",
            State::Exited(_) => "exited",
        };
        let mut summary = json!({"sessionId": self.id, "state": state, "command": self.command_line, "language": "node"});
        if let State::Paused { reason, .. } = &self.state {
            summary["reason"] = (*reason).into();
        }
        if let State::Exited(exit) = &self.state {
            if let Some(code) = exit.code {
                summary["exitCode"] = code.into();
            }
        }
        if let State::Paused { params, .. } = &self.state {
            let top = params["callFrames"][0].clone();
            summary["location"] = self.scripts.location_json(&top);
        }
        let undebugged = self.undebugged().describe();
        summary["breakpoints"] =
            self.breakpoints.iter().map(|b| b.to_json(undebugged.as_deref())).collect();
        *self.summary.lock().expect("session summary poisoned") = summary;
        self.watch.changed(&self.id);
    }
}

/// One console argument as text: strings as they are, other values as JSON, objects by their
/// description.
fn console_text(arg: &Value) -> String {
    match arg.get("value") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => arg["unserializableValue"]
            .as_str()
            .or_else(|| arg["description"].as_str())
            .or_else(|| arg["type"].as_str())
            .unwrap_or_default()
            .to_string(),
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

/// A compact `(type, value)` for a CDP RemoteObject.
fn compact(remote: &Value) -> (Value, Value) {
    let kind = match (remote["type"].as_str(), remote["subtype"].as_str()) {
        (Some("object"), Some("null")) => "object",
        (Some("object"), Some(sub)) => sub,
        (Some(kind), _) => kind,
        _ => "undefined",
    };
    let value = if let Some(text) = remote["unserializableValue"].as_str() {
        text.into()
    } else if let Some(v) =
        remote.get("value").filter(|_| kind != "object" || remote["subtype"] == "null")
    {
        match v {
            Value::String(s) => clip(s, VALUE_PREVIEW).into(),
            other => other.clone(),
        }
    } else if kind == "undefined" {
        Value::Null
    } else {
        remote["description"].as_str().map_or(Value::Null, |d| clip(d, VALUE_PREVIEW).into())
    };
    (kind.into(), value)
}

pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}… [truncated]")
}

/// The lines around a location, from the file it names.
pub(crate) fn source_lines(location: &Value) -> Option<Value> {
    let file = location["file"].as_str()?;
    let line = location["line"].as_u64()? as usize;
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(_) => cdp::maps::original_text(std::path::Path::new(file))?.to_string(),
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

/// Console and logpoint messages with their sequence numbers (the last `MAX_CONSOLE`),
/// and what `debug-output` answers from them and the program's stdout and stderr.
#[derive(Default)]
pub(crate) struct Console {
    entries: Vec<(u64, Value)>,
    seq: u64,
}

impl Console {
    const MAX_ENTRIES: usize = 1000;

    pub(crate) fn record(&mut self, entry: Value) {
        self.seq += 1;
        self.entries.push((self.seq, entry));
        if self.entries.len() > Console::MAX_ENTRIES {
            self.entries.drain(..self.entries.len() - Console::MAX_ENTRIES);
        }
    }

    /// Output since a cursor (`stdout.stderr.console`, from an earlier answer). `output`
    /// is `None` for an attached program: its stdout and stderr are not ours to read.
    pub(crate) fn since(
        &self,
        session: &str,
        output: Option<&crate::process::Output>,
        since: Option<&str>,
    ) -> Reply {
        let [out_at, err_at, console_at] = match since {
            None => [0, 0, 0],
            Some(cursor) => {
                let parts: Option<Vec<u64>> = cursor.split('.').map(|p| p.parse().ok()).collect();
                match parts.as_deref() {
                    Some(&[a, b, c]) => [a, b, c],
                    _ => {
                        return Err(Failure::new(
                            Code::InvalidArguments,
                            "invalid argument `since`: use the `cursor` of an earlier debug-output answer",
                        )
                        .with("field", "since".into()))
                    }
                }
            }
        };
        let (stdout, stderr, missed, (out_now, err_now)) = match output {
            Some(output) => output.since(out_at, err_at),
            None => (String::new(), String::new(), false, (0, 0)),
        };
        let console: Vec<Value> = self
            .entries
            .iter()
            .filter(|(seq, _)| *seq > console_at)
            .map(|(_, e)| e.clone())
            .collect();
        let missed = missed || self.entries.first().is_some_and(|(seq, _)| *seq > console_at + 1);
        Ok(json!({"sessionId": session, "stdout": stdout, "stderr": stderr, "console": console,
                  "truncated": missed, "cursor": format!("{out_now}.{err_now}.{}", self.seq)}))
    }
}
