//! One `debug-script` run against Node: spawn, attach, install the probe, set the breakpoint, let
//! the program run, collect each hit's value, and end with nothing left running.
//!
//! Hits do not pause the program (unless a stack was asked for). The breakpoint's condition calls
//! the probe (`probe.js`), which evaluates the expression in the frame's scope and reports it
//! through a `Runtime.addBinding` binding; the condition then returns false. Reports arrive as
//! `Runtime.bindingCalled` events in hit order, on the same socket and before the end-of-program
//! event, so none is lost. This is what makes a 10,000-hit loop take well under two seconds
//! (docs/performance.md).
//!
//! Source maps: a breakpoint in a file Node does not run itself (`src/app.ts`) is placed through
//! the maps `cdp/maps.rs` finds on disk, at the generated line and column of each covering
//! file. A file that is not JavaScript may also be compiled while it loads (tsx), so a probe
//! breakpoint at the start of the file's own URL is armed too: it stops the module after
//! `scriptParsed` (which carries its map) and before its body runs; the real breakpoint is set
//! from that map, then the probe goes. Resolved locations and stack frames are translated back.
//!
//! The run is one `select!` over the inspector's events, the child's exit, the deadline and the
//! cancel signal; every request has a deadline.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver, Sender};
use serde_json::{json, Value};

use crate::call::Call;
use crate::cdp::breakpoints::{Breakpoint, Resolution};
use crate::cdp::failures::{self, FailSite};
use crate::cdp::follow::{self, Channel, Report};
use crate::cdp::maps::Search;
use crate::cdp::preview::console_entry;
use crate::cdp::runtime::{
    check_go, ended_while_starting, name_start_pause, Following, Runtime, Started,
};
use crate::cdp::scripts::Scripts;
use crate::cdp::{self, Client, Event, Origin};
use crate::debugger::limits::VALUE_CHARS;
use crate::debugger::script::{self, Debugged, Hit, Outcome, Plan, Step};
use crate::debugger::{Code, Failure};
use crate::log;
use crate::process::{Debuggee, Exit};

mod awaits;
mod calls;
mod collector;
mod hang;
mod unhit;

const PROBE: &str = include_str!("probe.js");

/// The longest a single protocol request may take before the run is given up as broken.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the program may take to exit after it ended and we disconnected.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for Node to say it is waiting for the debugger before going on regardless.
const WAIT_GATE: Duration = Duration::from_secs(2);
/// Until the program shows a sign of life, `runIfWaitingForDebugger` is re-sent this often
/// (it does nothing once the program runs).
const NUDGE_EVERY: Duration = Duration::from_millis(500);
/// Frames reported per hit with `includeStack`.
const STACK_FRAMES: usize = 10;

pub(crate) fn run(runtime: Box<dyn Runtime>, plan: &Plan, call: &Call) -> Result<Outcome, Failure> {
    let deadline = Instant::now() + plan.timeout;
    // Every connection, and the channel followed processes report on, feed one event channel.
    let following = Following::open(runtime.as_ref())?;
    let Started { debuggee, client, entry, program } = runtime.start(
        &plan.command,
        false,
        following.follow(),
        plan.timeout,
        deadline,
        &call.cancel,
    )?;
    let Following { channel, events_tx, events } = following;
    // The condition is filled in by setup(), once the binding's name is known.
    let (mut breakpoint, search) = match plan.has_breakpoint() && plan.probes.is_empty() {
        true => Breakpoint::plan(
            &plan.file,
            &plan.real_file,
            plan.line,
            None,
            String::new(),
            entry.as_deref(),
            runtime.urls(),
        )
        .map_err(|message| Failure::new(Code::NoCodeAtLine, message))?,
        false => (Breakpoint::none(runtime.urls()), Search::default()),
    };
    // With `probes`, one breakpoint each (placed directly or through maps on disk).
    let mut probes = plan
        .probes
        .iter()
        .enumerate()
        .map(|(index, probe)| {
            let file = (&probe.file, &probe.real_file);
            let (mut breakpoint, _) = Breakpoint::plan(
                file.0,
                file.1,
                probe.line,
                None,
                String::new(),
                entry.as_deref(),
                runtime.urls(),
            )
            .map_err(|message| Failure::new(Code::NoCodeAtLine, message))?;
            // Two probes in one file ask for the same load-time probe: V8 refuses the second
            // unless their URL regexes differ.
            breakpoint.set_unique(&format!("p{index}"));
            Ok(breakpoint)
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    // Every probe's file may be transformed while loading too (each is asked: it arms itself).
    let watch_load =
        probes.iter_mut().map(Breakpoint::watch_load).fold(breakpoint.watch_load(), |a, b| a | b);
    let watch_load = watch_load || calls::watch_load(plan);
    let inspector = client.as_ref().map_or("each process's own".into(), |c| c.url().to_string());
    call.log.send(
        "info",
        format!("started {program} (pid {}), inspector at {inspector}", debuggee.pid()),
    );
    let top = debuggee.pid();
    let mut run = Run {
        runtime,
        plan,
        call,
        events,
        events_tx,
        channel,
        exited: debuggee.exited().clone(),
        nudge: crossbeam_channel::never(),
        processes: Vec::new(),
        targets: BTreeMap::new(),
        top: client.is_some(),
        debuggee,
        deadline,
        binding: binding_name(),
        planned: breakpoint,
        probe_lines: vec![None; probes.len()],
        probes,
        search,
        landed: Resolution::default(),
        // Without a breakpoint there is no expression to check.
        checked: !plan.has_breakpoint() && plan.probes.is_empty(),
        seen: failures::Seen::new(plan.user_unhandled),
        placed_at_load: false,
        watch_load,
        timed_out: false,
        began: false,
        limited: false,
        loaded: Vec::new(),
        bound: false,
        unreachable: None,
        calls: calls::Recorded::default(),
        parsed: 0,
        awaits: BTreeMap::new(),
        held: crossbeam_channel::unbounded(),
        snapshots_left: Vec::new(),
    };
    let started = run
        .setup(client, top, program)
        .map_err(|failure| ended_while_starting(&mut run.debuggee, failure));
    // A program that never ends by itself (a page) ends after its time: the tick says when.
    if let Some(limit) = run.runtime.runs_for() {
        run.nudge = crossbeam_channel::after(limit);
        run.limited = true;
    }
    crate::debugger::runs::drive(&mut run, started, plan, call, deadline)
}

/// Whether a `Debugger.paused` event's `params` say breakpoint `id` was hit.
fn hit_breakpoint(params: &Value, id: &str) -> bool {
    params["hitBreakpoints"].as_array().is_some_and(|ids| ids.iter().any(|hit| hit == id))
}

fn syntax_failure(field: &str, details: &Value) -> Failure {
    let error = details
        .pointer("/exception/description")
        .and_then(Value::as_str)
        .or_else(|| details["text"].as_str())
        .unwrap_or("SyntaxError");
    let error = error.lines().next().unwrap_or(error);
    Failure::new(
        Code::InvalidExpression,
        format!("`{field}` is not a valid JavaScript expression: {error}"),
    )
    .with("field", field.into())
}

/// A global name the program is unlikely to use; it is visible to the program as a function.
fn binding_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("__debugMcp_{}_{n}", std::process::id())
}

/// One process of the program, connected to its inspector (connection number = its index).
struct Process {
    client: Client,
    pid: u32,
    /// Its parent's pid, when it reported it.
    parent: Option<u32>,
    command: String,
    /// Connected until it ends (its end event) or could not be set up.
    open: bool,
    /// The worker threads debugged in it, by name.
    workers: Vec<String>,
    hits: u64,
}

/// One JavaScript thread debugged: a process's main thread, or a worker in it.
struct Target {
    /// `"pid":N` (and `,"thread":"[worker 1]"` for a worker), spliced into each of its hits.
    tag: String,
    /// `main`, or the worker's name.
    thread: String,
    breakpoint: Breakpoint,
    /// With `probes`: each probe's breakpoint in this thread.
    probes: Vec<Breakpoint>,
    scripts: Scripts,
    /// With `failures`: the breakpoints at the runners' functions that mark a test failed.
    fail_sites: Vec<(String, &'static FailSite)>,
    /// With `calls`: the functions traced in this thread, and its calls not ended.
    calls: calls::Traced,
}

impl Target {
    /// The breakpoint (`which`: or that probe's), with the scripts to place it through.
    fn parts(&mut self, which: Option<usize>) -> Option<(&mut Breakpoint, &mut Scripts)> {
        let breakpoint = match which {
            Some(index) => self.probes.get_mut(index)?,
            None => &mut self.breakpoint,
        };
        Some((breakpoint, &mut self.scripts))
    }
}

struct Run<'a> {
    runtime: Box<dyn Runtime>,
    plan: &'a Plan,
    call: &'a Call,
    /// Every connection's events, and the reports of followed processes.
    events: Receiver<Event>,
    events_tx: Sender<Event>,
    /// Where followed processes report; dropped (and its pipe removed) with the run.
    channel: Option<Channel>,
    exited: Receiver<Exit>,
    /// Until the started process shows a sign of life, `runIfWaitingForDebugger` is re-sent
    /// (see `until_waiting`).
    nudge: Receiver<Instant>,
    processes: Vec<Process>,
    targets: BTreeMap<Origin, Target>,
    /// Whether connection 0 is the process debug-mcp started (it opened its own inspector);
    /// otherwise every process came through the channel, the started one too if it is Node.
    top: bool,
    debuggee: Debuggee,
    deadline: Instant,
    binding: String,
    /// The breakpoint as planned; each thread gets a copy (its condition calls the probe).
    planned: Breakpoint,
    /// With `probes`: each probe's breakpoint as planned, and the line it landed on.
    probes: Vec<Breakpoint>,
    probe_lines: Vec<Option<u32>>,
    search: Search,
    /// Where the breakpoint landed, gathered from the threads that ended.
    landed: Resolution,
    /// The expression (and condition) were compiled once, in the first process.
    checked: bool,
    /// The failures recorded (with `failures`), each once.
    seen: failures::Seen,
    /// Some thread compiled a file while loading it, and the breakpoint (or a probe) was
    /// placed then.
    placed_at_load: bool,
    /// Each thread pauses before a script with a source map runs, so that the breakpoint's
    /// JavaScript file, transformed while loading, gets its breakpoint through that map.
    watch_load: bool,
    /// The run outlived its timeout (for the failure's words).
    timed_out: bool,
    /// The started process paused once already (its start pause is behind it).
    began: bool,
    /// The tick ends the run (the runtime's `runs_for`), rather than nudging the program.
    limited: bool,
    /// The scripts the threads that ended loaded (a page's, for its no-hit answer).
    loaded: Vec<String>,
    /// The breakpoint landed somewhere (known once the run ended).
    bound: bool,
    /// The page's main frame showed Chromium's error page for this URL.
    unreachable: Option<String>,
    /// With `calls`: the calls recorded.
    calls: calls::Recorded,
    /// Scripts parsed so far: loading code is doing something (`hang`).
    parsed: u64,
    /// Each idle thread's suspended async functions, found looking ahead (`awaits.rs`).
    awaits: BTreeMap<Origin, Vec<awaits::Held>>,
    /// Events that came while the run looked ahead, in order: they are handled before any
    /// newer one.
    held: (Sender<Event>, Receiver<Event>),
    /// Heap snapshots the look ahead gave up waiting for (`awaits.rs`).
    snapshots_left: Vec<awaits::Pending>,
}

impl Run<'_> {
    /// Sets up the started process when it opened its own inspector; otherwise waits for the
    /// program's processes to report.
    fn setup(&mut self, client: Option<Client>, pid: u32, program: String) -> Result<(), Failure> {
        let thunk = |code: &str| format!("() => ({code}\n)");
        let condition = self.plan.condition.as_deref().map_or("null".to_string(), thunk);
        let expression = thunk(&self.plan.expression);
        let binding = &self.binding;
        self.planned.set_condition(format!("{binding}.hit({condition}, {expression})"));
        self.planned.set_direct_condition(format!("{binding}.hit({condition}, {expression}, 'd')"));
        for (index, (breakpoint, probe)) in
            self.probes.iter_mut().zip(&self.plan.probes).enumerate()
        {
            let condition = probe.condition.as_deref().map_or("null".to_string(), thunk);
            let expression = probe.expression.as_deref().map_or("null".to_string(), thunk);
            let call = format!("{binding}.probe({index}, {condition}, {expression}");
            breakpoint.set_condition(format!("{call})"));
            breakpoint.set_direct_condition(format!("{call}, 'd')"));
        }
        let Some(client) = client else {
            log::debug(format_args!("following the program's processes"));
            return Ok(());
        };
        let command =
            std::iter::once(program).chain(self.plan.command.words.iter().skip(1).cloned());
        self.processes.push(Process {
            client,
            pid,
            parent: None,
            command: command.collect::<Vec<_>>().join(" "),
            open: true,
            workers: Vec::new(),
            hits: 0,
        });
        self.attach(Origin::default(), None)?;
        self.nudge = crossbeam_channel::tick(NUDGE_EVERY);
        Ok(())
    }

    /// Sends a request to a target: a process, or a worker through its process's connection.
    fn send(
        &mut self,
        to: &Origin,
        method: &str,
        params: Value,
    ) -> Receiver<Result<Value, cdp::Error>> {
        let client = &mut self.processes[to.connection].client;
        match (&to.session, self.runtime.relay()) {
            (Some(session), Some(relay)) => client.send_to(Some((relay, session)), method, params),
            _ => client.send(method, params),
        }
    }

    /// Prepares one target in one pipelined burst (the inspector handles requests in order, so
    /// each sees the effect of the ones before it): enables the domains, installs the probe,
    /// checks the expression compiles (once per run) and sets the breakpoint; then, once every
    /// answer is in and good, lets it run. The started process waits for the runtime's ready
    /// event first (see `until_waiting`); any other target is let go again when it says it
    /// waits, should the first go have come too early.
    fn attach(&mut self, to: Origin, worker: Option<&str>) -> Result<(), Failure> {
        let is_top = self.top && to == Origin::default();
        let options = json!({
            "maxHits": self.plan.max_hits,
            "pause": self.plan.include_stack,
            "maxChars": VALUE_CHARS,
            "maxDepth": 20,
        });
        let binding = Value::from(self.binding.as_str());
        let install = format!("({})({binding}, {options})", PROBE.trim_end());
        let thunk = |code: &str| format!("() => ({code}\n)");
        // A condition that does not compile is silently false in V8 and would look like "never
        // hit": compile the same wrappers first and report the syntax error.
        let mut checks: Vec<(String, String)> = Vec::new();
        if !self.checked && self.plan.probes.is_empty() {
            checks.push(("expression".into(), thunk(&self.plan.expression)));
            if let Some(condition) = &self.plan.condition {
                checks.push(("breakpoint.condition".into(), thunk(condition)));
            }
        }
        for (index, probe) in self.plan.probes.iter().enumerate().filter(|_| !self.checked) {
            if let Some(expression) = &probe.expression {
                checks.push((format!("probes[{index}].expression"), thunk(expression)));
            }
            if let Some(condition) = &probe.condition {
                checks.push((format!("probes[{index}].condition"), thunk(condition)));
            }
        }
        let mut breakpoint = self.planned.clone();
        let enabled = [
            self.send(&to, "Runtime.enable", json!({})),
            self.send(&to, "Debugger.enable", json!({})),
            self.send(&to, "Runtime.addBinding", json!({"name": self.binding})),
        ];
        // With `calls` set as breakpoints, an exception is a call's end as much as a failure
        // (the run pauses at exceptions once a function gets them: `calls::trace_function`).
        let pausing = self.plan.failures.is_some().then(|| {
            let (method, params) = failures::pause_on_exceptions();
            self.send(&to, method, params)
        });
        // Who catches a rejection past an `await` is in the frames that await it.
        let awaits = self
            .plan
            .user_unhandled
            .then(|| self.send(&to, "Debugger.setAsyncCallStackDepth", json!({"maxDepth": 32})));

        // The started process's own requests include undoing what our inspector flag would
        // hand its children; a followed process opened its inspector without a flag.
        let own_requests = match to.session {
            None => self.runtime.setup_requests(is_top, true, &install),
            Some(_) => Vec::new(),
        };
        let runtime: Vec<_> = own_requests
            .into_iter()
            .map(|(method, params)| self.send(&to, method, params))
            .collect();
        let installed = self.send(
            &to,
            "Runtime.evaluate",
            json!({"expression": install, "returnByValue": true}),
        );
        let compiled: Vec<_> = checks
            .iter()
            .map(|(field, code)| {
                let params = json!({"expression": code, "sourceURL": "", "persistScript": false});
                (field.clone(), self.send(&to, "Runtime.compileScript", params))
            })
            .collect();
        let sets: Vec<_> = breakpoint
            .requests()
            .into_iter()
            .map(|(params, request)| {
                (self.send(&to, "Debugger.setBreakpointByUrl", params.clone()), request, params)
            })
            .collect();
        let mut probes = self.probes.clone();
        let probe_sets: Vec<_> = (probes.iter().enumerate())
            .flat_map(|(index, probe)| probe.requests().into_iter().map(move |r| (index, r)))
            .map(|(index, (params, request))| {
                let reply = self.send(&to, "Debugger.setBreakpointByUrl", params.clone());
                (reply, request, params, index)
            })
            .collect();
        let watch = json!({"instrumentation": "beforeScriptWithSourceMapExecution"});
        let watching = self
            .watch_load
            .then(|| self.send(&to, "Debugger.setInstrumentationBreakpoint", watch.clone()));
        // Console calls would all become events; a runtime whose end is a Runtime event keeps it.
        let disabled = (!self.runtime.end_needs_runtime_domain())
            .then(|| self.send(&to, "Runtime.disable", json!({})));
        let early_run =
            (!is_top).then(|| self.send(&to, "Runtime.runIfWaitingForDebugger", json!({})));

        for reply in enabled.iter().chain(&runtime).chain(&pausing).chain(&awaits) {
            self.answer(reply)?;
        }
        let installed = self.answer(&installed)?;
        if installed.pointer("/result/value") != Some(&Value::Bool(true)) {
            return Err(Failure::new(
                Code::InspectorFailed,
                format!("could not install the probe: {installed}"),
            ));
        }
        for (field, reply) in compiled {
            let compiled = self.answer(&reply)?;
            if let Some(details) = compiled.get("exceptionDetails") {
                return Err(syntax_failure(&field, details));
            }
        }
        self.checked = true;
        let mut scripts = Scripts::new(self.runtime.urls());
        scripts.add_known(&self.plan.file);
        scripts.add_known(&self.plan.real_file);
        for (reply, request, params) in sets {
            let answer =
                self.answer_or_again(&to, &reply, "Debugger.setBreakpointByUrl", params)?;
            breakpoint.set(request, &answer, &scripts);
        }
        for (reply, request, params, index) in probe_sets {
            let answer =
                self.answer_or_again(&to, &reply, "Debugger.setBreakpointByUrl", params)?;
            probes[index].set(request, &answer, &scripts);
        }
        if let Some(disabled) = disabled {
            self.answer(&disabled)?;
        }
        if let Some(watching) = watching {
            // Older V8 lacks it: such a file then keeps its breakpoint by its own URL.
            let method = "Debugger.setInstrumentationBreakpoint";
            if let Err(failure) = self.answer_or_again(&to, &watching, method, watch) {
                log::debug(format_args!("no instrumentation pause: {failure:?}"));
            }
        }
        let process = &mut self.processes[to.connection];
        let mut tag = format!(r#""pid":{}"#, process.pid);
        let thread = worker.unwrap_or("main").to_string();
        if let Some(worker) = worker {
            tag.push_str(&format!(r#","thread":{}"#, Value::from(worker)));
            process.workers.push(worker.to_string());
        }
        self.targets.insert(
            to.clone(),
            Target {
                tag,
                thread,
                breakpoint,
                probes,
                scripts,
                fail_sites: Vec::new(),
                calls: calls::Traced::default(),
            },
        );
        if self.traces_calls() {
            self.trace_before_load(&to);
        }
        match early_run {
            Some(running) => drop(running),
            None => {
                self.until_waiting()?;
                let running = self.send(&to, "Runtime.runIfWaitingForDebugger", json!({}));
                self.answer(&running)?;
                let going: Vec<_> = (self.runtime.go_requests().into_iter())
                    .map(|(method, params)| self.send(&to, method, params))
                    .collect();
                for reply in going {
                    check_go(&self.answer(&reply)?)?;
                }
            }
        }
        log::debug(format_args!("breakpoint set in {to:?}; running"));
        Ok(())
    }

    /// A process reported its inspector: connect to it and set it up. One that cannot be set up
    /// is let go undebugged; the run goes on.
    fn follow(&mut self, report: Report) -> Result<(), Failure> {
        if self.processes.iter().any(|p| p.pid == report.pid) {
            return Ok(());
        }
        let connection = self.processes.len();
        let left = self.deadline.saturating_duration_since(Instant::now()).min(REQUEST_TIMEOUT);
        let client = match Client::connect_shared(&report.url, left, connection, &self.events_tx) {
            Ok(client) => client,
            Err(message) => {
                log::warn(format_args!("cannot follow pid {}: {message}", report.pid));
                return Ok(());
            }
        };
        self.call.log.send("info", format!("following pid {}: {}", report.pid, report.command));
        self.processes.push(Process {
            client,
            pid: report.pid,
            parent: Some(report.parent),
            command: report.command,
            open: true,
            workers: Vec::new(),
            hits: 0,
        });
        let origin = Origin { connection, session: None };
        match self.attach(origin.clone(), None) {
            Err(failure @ Failure::Error { code: Code::InvalidExpression, .. }) => Err(failure),
            Err(Failure::Cancelled) => Err(Failure::Cancelled),
            Err(failure) => {
                log::warn(format_args!("pid {} not followed: {failure:?}", report.pid));
                self.let_go(&origin);
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    }

    /// Lets a target run undebugged and forgets it.
    fn let_go(&mut self, target: &Origin) {
        drop(self.send(target, "Runtime.runIfWaitingForDebugger", json!({})));
        match target.session {
            Some(_) => self.retire(|origin| origin == target),
            None => self.disconnect(target.connection),
        }
    }

    /// Closes a process's connection (one that finished then exits) and retires its threads.
    fn disconnect(&mut self, connection: usize) {
        let process = &mut self.processes[connection];
        process.open = false;
        process.client.close();
        self.retire(|origin| origin.connection == connection);
    }

    /// Forgets the threads `which` picks, keeping where their breakpoints landed.
    fn retire(&mut self, which: impl Fn(&Origin) -> bool) {
        let gone: Vec<Origin> = self.targets.keys().filter(|o| which(o)).cloned().collect();
        for origin in gone {
            let Some(mut target) = self.targets.remove(&origin) else { continue };
            let found = std::mem::take(&mut target.breakpoint.resolution);
            merge(&mut self.landed, found);
            for (landed, probe) in self.probe_lines.iter_mut().zip(&target.probes) {
                *landed = landed.or(probe.resolution.line);
            }
            // What a page loaded, for the answer when nothing was hit.
            if self.runtime.end_said().is_some() {
                self.loaded.extend(target.scripts.urls());
            }
        }
    }

    /// A load-time probe stopped a file's module before its body ran (tsx, jiti, vite-node and
    /// the like compile it while it loads): place the real breakpoint, and each of the `probes`
    /// in that file, from its map; the caller resumes.
    fn place_at_load(&mut self, at: &Origin, params: &Value) -> Result<(), Failure> {
        let hit = |id: &str| hit_breakpoint(params, id);
        let frame = &params["callFrames"][0];
        for which in std::iter::once(None).chain((0..self.plan.probes.len()).map(Some)) {
            let Some((breakpoint, scripts)) = self.targets.get_mut(at).and_then(|t| t.parts(which))
            else {
                return Ok(());
            };
            if breakpoint.probe_id().is_some_and(hit) {
                let steps = breakpoint.at_load(frame, scripts)?;
                self.send_steps(at, steps, which)?;
            }
        }
        Ok(())
    }

    /// At a pause before a script with a source map runs: a breakpoint's own file, transformed
    /// while loading, gets its breakpoint through that map (or keeps it); so does a page's
    /// bundle whose map lists the file. At the start pause, with every module of the program
    /// parsed (Deno compiles its whole module graph first): a file already compiled is placed
    /// through its map now, before its load-time probe could fire late. The breakpoint, then
    /// each of the `probes`.
    fn place_at_pause(&mut self, at: &Origin, params: &Value) -> Result<(), Failure> {
        let start = params["reason"] == "Break on start";
        let script = params.pointer("/data/scriptId").and_then(Value::as_str);
        let script = script.filter(|_| params["reason"] == "instrumentation");
        if !start && script.is_none() {
            return Ok(());
        }
        for which in std::iter::once(None).chain((0..self.plan.probes.len()).map(Some)) {
            let Some((breakpoint, scripts)) = self.targets.get_mut(at).and_then(|t| t.parts(which))
            else {
                return Ok(());
            };
            let steps = match script {
                Some(id) if breakpoint.awaits_script(id, scripts) => {
                    breakpoint.in_script(id, scripts).transpose()?
                }
                Some(_) => None,
                None => breakpoint.in_loaded_script(scripts).transpose()?,
            };
            if let Some(steps) = steps {
                self.send_steps(at, steps, which)?;
            }
        }
        Ok(())
    }

    /// Sends the requests that place the breakpoint (`which`: or that probe's) in its loaded
    /// file, in order, and records where it landed.
    fn send_steps(
        &mut self,
        at: &Origin,
        steps: Vec<crate::cdp::breakpoints::Step>,
        which: Option<usize>,
    ) -> Result<(), Failure> {
        for step in steps {
            let reply = self.send(at, step.method, step.params);
            let answer = self.answer(&reply)?;
            let target = self.targets.get_mut(at).and_then(|t| t.parts(which));
            if let (Some(request), Some((breakpoint, scripts))) = (step.request, target) {
                breakpoint.set(request, &answer, scripts);
            }
        }
        self.placed_at_load = true;
        log::debug(format_args!("breakpoint placed at load ({which:?})"));
        Ok(())
    }

    /// Waits for the answer to a request pipelined after `Debugger.enable`; sends it once more
    /// if refused for want of it: Chromium under load has refused such a request, and
    /// `Debugger.enable` has answered by the time this is read.
    fn answer_or_again(
        &mut self,
        to: &Origin,
        reply: &Receiver<Result<Value, cdp::Error>>,
        method: &str,
        params: Value,
    ) -> Result<Value, Failure> {
        match self.answer(reply) {
            Err(Failure::Error { message, .. })
                if message.contains("Debugger agent is not enabled") =>
            {
                log::debug(format_args!("{method} refused before the debugger was enabled; again"));
                let again = self.send(to, method, params);
                self.answer(&again)
            }
            other => other,
        }
    }

    /// A request to a target and its answer, `None` if refused.
    fn ask(&mut self, to: &Origin, method: &str, params: Value) -> Option<Value> {
        let reply = self.send(to, method, params);
        self.answer(&reply).ok()
    }

    /// Waits for the answer to a request sent earlier, within the run's deadline.
    fn answer(&self, reply: &Receiver<Result<Value, cdp::Error>>) -> Result<Value, Failure> {
        let limit = self.deadline.min(Instant::now() + REQUEST_TIMEOUT);
        select! {
            recv(reply) -> answer => match answer {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(e)) => Err(Failure::new(Code::InspectorFailed, e.to_string())),
                Err(_) => Err(Failure::new(Code::InspectorFailed, cdp::Error::Closed.to_string())),
            },
            recv(self.call.cancel) -> _ => Err(Failure::Cancelled),
            recv(crossbeam_channel::at(limit)) -> _ => Err(if limit >= self.deadline {
                script::timeout_failure(self.plan.timeout)
            } else {
                Failure::new(
                    Code::InspectorFailed,
                    format!("the inspector did not answer within {} s", REQUEST_TIMEOUT.as_secs()),
                )
            }),
        }
    }

    /// Waits for the runtime's ready event (Node's `NodeRuntime.waitingForDebugger`) from the
    /// started process: it has entered its wait for us. Node reads our first requests during
    /// the start-up work just before that wait (while it runs JavaScript); a
    /// `runIfWaitingForDebugger` dispatched then is forgotten when the wait begins, and Node
    /// waits for ever. Seen about once in a hundred runs under load. Nothing else runs yet, so
    /// the other events read meanwhile have no hit to lose.
    fn until_waiting(&mut self) -> Result<(), Failure> {
        let Some(ready) = self.runtime.ready_event() else { return Ok(()) };
        let events = self.events.clone();
        let gate = crossbeam_channel::at(self.deadline.min(Instant::now() + WAIT_GATE));
        loop {
            select! {
                recv(events) -> event => match event {
                    Ok(event) if event.method == ready && event.origin == Origin::default() => return Ok(()),
                    Ok(event) => {
                        self.handle_event(event)?;
                    }
                    Err(_) => return Ok(()), // the driver sees the closed connection
                },
                recv(gate) -> _ => {
                    // Older Node versions lack the event; the driver nudges until it runs.
                    log::warn(format_args!("no {ready} within {} ms", WAIT_GATE.as_millis()));
                    return Ok(());
                },
                recv(self.call.cancel) -> _ => return Err(Failure::Cancelled),
            }
        }
    }

    /// Handles one event of any target (or a report of a new process).
    fn handle_event(&mut self, mut event: Event) -> Result<Step, Failure> {
        if event.method == follow::REPORTED {
            if let Some(report) = Report::from_event(&event.params) {
                self.follow(report)?;
            }
            return Ok(Step::Go);
        }
        if let Some(inner) = self.runtime.inner_started(&event) {
            let origin =
                Origin { connection: event.origin.connection, session: Some(inner.session) };
            if let Err(failure) = self.attach(origin.clone(), Some(&inner.name)) {
                log::warn(format_args!("{} not followed: {failure:?}", inner.name));
                self.let_go(&origin);
            }
            return Ok(Step::Go);
        }
        if let Some(session) = self.runtime.inner_ended(&event) {
            let origin =
                Origin { connection: event.origin.connection, session: Some(session.to_string()) };
            self.retire(|o| *o == origin);
            return Ok(Step::Go);
        }
        let origin = std::mem::take(&mut event.origin);
        let Some(target) = self.targets.get_mut(&origin) else { return Ok(Step::Go) };
        match event.method.as_str() {
            "Runtime.bindingCalled" if event.params["name"] == self.binding.as_str() => {
                let payload = match event.params.get_mut("payload").map(Value::take) {
                    Some(Value::String(payload)) => payload,
                    _ => String::new(),
                };
                if self.traces_calls() && self.call_report(&origin, &payload) {
                    return Ok(Step::Go);
                }
                let Some(target) = self.targets.get_mut(&origin) else { return Ok(Step::Go) };
                // A probe's report: `P<index>:` and a hit's (`Pd`: from the breakpoint by the
                // file's own URL, dropped once the file turned out transformed).
                let probe = payload.strip_prefix('P').and_then(|p| p.split_once(':'));
                let probe = probe.and_then(|(index, rest)| {
                    let (direct, index) = match index.strip_prefix('d') {
                        Some(index) => (true, index),
                        None => (false, index),
                    };
                    Some((direct, index.parse::<usize>().ok()?, rest))
                });
                if let Some((direct, index, rest)) = probe {
                    if direct && target.probes.get(index).is_some_and(Breakpoint::moved) {
                        return Ok(Step::Go);
                    }
                    let mut hit = hit(rest.to_string()).of_probe(index);
                    hit.from = Some(target.tag.clone());
                    self.processes[origin.connection].hits += 1;
                    return Ok(Step::Hit(hit));
                }
                // From the breakpoint by the file's own URL in a file transformed while loading:
                // at another line than asked (it ran before the breakpoint moved).
                let payload = match payload.strip_prefix('d') {
                    Some(_) if target.breakpoint.moved() => {
                        log::debug(format_args!("a hit at the untransformed line dropped"));
                        return Ok(Step::Go);
                    }
                    Some(rest) => rest.to_string(),
                    None => payload,
                };
                let mut hit = hit(payload);
                hit.from = Some(target.tag.clone());
                self.processes[origin.connection].hits += 1;
                return Ok(Step::Hit(hit));
            }
            "Debugger.paused" => {
                if self.top && origin == Origin::default() {
                    name_start_pause(self.runtime.as_ref(), &mut self.began, &mut event.params);
                }
                if self.traces_calls() && self.calls_pause(&origin, &event.params) {
                    return Ok(Step::Go);
                }
                let Some(target) = self.targets.get_mut(&origin) else { return Ok(Step::Go) };
                let hit = |id: &str| hit_breakpoint(&event.params, id);
                let at_load = target
                    .probes
                    .iter()
                    .chain([&target.breakpoint])
                    .any(|b| b.probe_id().is_some_and(hit));
                self.place_at_pause(&origin, &event.params)?;
                // A probe without an expression stopped: its frame's locals.
                let target = self.targets.get_mut(&origin).expect("looked up above");
                let probe = target.probes.iter().position(|p| p.ids().any(hit));
                if let Some(index) = probe {
                    let frame = event.params["callFrames"][0].clone();
                    let mut read = |method: &str, params: Value| self.ask(&origin, method, params);
                    let locals = failures::locals(&frame, &mut read);
                    drop(self.send(&origin, "Debugger.resume", json!({})));
                    let result = format!(r#"{{"locals":{locals}}}"#);
                    let tag = self.targets.get(&origin).map(|t| t.tag.clone());
                    self.processes[origin.connection].hits += 1;
                    let hit = Hit { result, truncated: false, stack: None, from: tag };
                    return Ok(Step::Hit(hit.of_probe(index)));
                }
                let failed = match self.plan.failures {
                    Some(_) => self.failure(&origin, &event.params),
                    None => None,
                };
                if let Some(failure) = failed {
                    drop(self.send(&origin, "Debugger.resume", json!({})));
                    return Ok(Step::Failed(failure));
                }
                let Some(target) = self.targets.get_mut(&origin) else { return Ok(Step::Go) };
                let ours = target.breakpoint.ids().any(hit);
                let frames = event.params["callFrames"].as_array().into_iter().flatten();
                let frames: Vec<Value> =
                    frames.take(STACK_FRAMES).map(|f| target.scripts.frame_json(f)).collect();
                if at_load {
                    self.place_at_load(&origin, &event.params)?;
                }
                // Every pause is resumed: `debugger;` statements, the load-time probe, the
                // initial pause of --inspect-brk, and hits when a stack was asked for.
                drop(self.send(&origin, "Debugger.resume", json!({})));
                if ours {
                    return Ok(Step::Stack(frames));
                }
            }
            "Debugger.breakpointResolved" => {
                let id = event.params["breakpointId"].as_str().unwrap_or_default();
                target.breakpoint.resolved(id, &event.params["location"], &target.scripts);
                for probe in &mut target.probes {
                    probe.resolved(id, &event.params["location"], &target.scripts);
                }
            }
            "Debugger.scriptParsed" => {
                let url = event.params["url"].as_str().unwrap_or_default();
                self.parsed += u64::from(url != hang::CHECK_URL);
                target.scripts.on_parsed(&event.params);
                if self.traces_calls() {
                    self.script_parsed(&origin, &event.params);
                }
                if let Some(site) = self.plan.failures.and_then(|_| FailSite::of(url)) {
                    self.watch_fail_site(&origin, site, &event.params["scriptId"]);
                }
            }
            // A page whose main frame could not be loaded (Chromium's error page instead).
            "Page.frameNavigated" if event.params.pointer("/frame/parentId").is_none() => {
                let unreachable = event.params.pointer("/frame/unreachableUrl");
                self.unreachable = unreachable.and_then(Value::as_str).map(String::from);
            }
            "Runtime.consoleAPICalled" | "Runtime.exceptionThrown"
                if self.runtime.console_is_output() =>
            {
                if let Some((kind, text)) = console_entry(&event) {
                    let stderr = matches!(kind.as_str(), "error" | "warning" | "assert" | "trace");
                    self.debuggee.output().push(stderr, &format!("{text}\n"));
                }
            }
            method
                if Some(method) == self.runtime.ready_event()
                    && !(self.top && origin == Origin::default()) =>
            {
                drop(self.send(&origin, "Runtime.runIfWaitingForDebugger", json!({})));
            }
            _ if self.runtime.is_end(&event) && origin.session.is_none() => {
                if self.top && origin.connection == 0 {
                    // Others may still be sending what they did before it ended.
                    let others = self.processes.iter().skip(1).any(|p| p.open);
                    return Ok(if others { Step::Draining } else { Step::Finished });
                }
                // A followed process finished: disconnecting lets it exit.
                self.disconnect(origin.connection);
            }
            _ => {}
        }
        Ok(Step::Go)
    }

    /// A breakpoint in the body of a runner's function that marks a test failed ([`FailSite`]).
    fn watch_fail_site(&mut self, origin: &Origin, site: &'static FailSite, script: &Value) {
        let source = self.ask(origin, "Debugger.getScriptSource", json!({"scriptId": script}));
        let source = source.as_ref().and_then(|s| s["scriptSource"].as_str()).unwrap_or_default();
        let Some(line) = site.body_line(source) else { return };
        let location = json!({"location": {"scriptId": script, "lineNumber": line}});
        let set = self.ask(origin, "Debugger.setBreakpoint", location);
        if let (Some(id), Some(target)) =
            (set.as_ref().and_then(|s| s["breakpointId"].as_str()), self.targets.get_mut(origin))
        {
            target.fail_sites.push((id.to_string(), site));
        }
    }

    /// The failure a pause of `origin` is, if it is one: an exception (see `cdp::failures`), or
    /// a runner marking a test failed.
    fn failure(&mut self, origin: &Origin, params: &Value) -> Option<Value> {
        let target = self.targets.get_mut(origin)?;
        let site = target.fail_sites.iter().find(|(id, _)| hit_breakpoint(params, id));
        let site = site.map(|&(_, site)| site);
        let runner_reports = !target.fail_sites.is_empty();
        // An exception's frames, source-mapped (a runner's report reads its error's stack).
        let frames: Vec<Value> = match site {
            Some(_) => Vec::new(),
            None => {
                let frames = params["callFrames"].as_array().into_iter().flatten();
                frames.map(|f| target.scripts.frame_json(f)).collect()
            }
        };
        let mut seen = std::mem::take(&mut self.seen);
        let mut read = |method: &str, params: Value| self.ask(origin, method, params);
        let record = match site {
            Some(site) => site.report(params, &mut seen, &mut read),
            None => failures::record(origin, params, &frames, runner_reports, &mut seen, &mut read)
                .and_then(|record| seen.thrown(record, runner_reports)),
        };
        self.seen = seen;
        let mut record = record?;
        record["process"] = self.processes[origin.connection].pid.into();
        Some(record)
    }

    /// Processes debugged, for the answer: `[{pid, parent, command, hits, threads}]`.
    fn followed(&self) -> Vec<Value> {
        let debugged = |p: &Process| {
            let threads = p.workers.iter().map(String::as_str).collect();
            let hits = Some(p.hits);
            Debugged { pid: p.pid, command: &p.command, parent: p.parent, hits, threads }.to_json()
        };
        self.processes.iter().map(debugged).collect()
    }
}

/// Adds where one thread's breakpoint landed to what is known: the line of the first that placed
/// it (every process loads the same file the same way), the generated places of all, once each.
fn merge(landed: &mut Resolution, found: Resolution) {
    if landed.line.is_none() {
        landed.line = found.line;
        landed.column = found.column;
        landed.file = found.file;
    }
    for place in found.generated {
        if !landed.generated.contains(&place) {
            landed.generated.push(place);
        }
    }
}

/// One hit from the probe's report: `T` or `F` (was the value truncated?), then the JSON of
/// `{type, value}`, which is kept as text: parsed once to check it (the program could call the
/// binding itself), never held as a tree.
fn hit(payload: String) -> Hit {
    let (truncated, json) = script::flagged(&payload).unwrap_or((false, ""));
    let well_formed = serde_json::from_str::<Value>(json).is_ok_and(|v| {
        v["type"].is_string()
            && v.get("value").is_some()
            && v.as_object().is_some_and(|o| o.len() == 2)
    });
    let result = if well_formed {
        json.to_string()
    } else {
        let message = format!("unreadable report from the probe: {}", log::clip(&payload));
        json!({"type": "error", "value": message}).to_string()
    };
    Hit { result, truncated, stack: None, from: None }
}
