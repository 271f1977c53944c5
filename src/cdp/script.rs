//! One `debug-script` run against Node: spawn, attach, install the probe, set the breakpoint, let
//! the program run, collect each hit's value, and end with nothing left running.
//!
//! Hits do not pause the program (unless a stack was asked for). The breakpoint's condition calls
//! the probe (`probe.js`), which evaluates the expression in the frame's scope and reports it
//! through a `Runtime.addBinding` binding; the condition then returns false. Reports arrive as
//! `Runtime.bindingCalled` events in hit order, on the same socket and before the end-of-program
//! event, so none is lost. This is what makes a 10,000-hit loop take well under two seconds
//! (README, "Performance").
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

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver};
use serde_json::{json, Value};

use crate::call::Call;
use crate::cdp::breakpoints::Breakpoint;
use crate::cdp::maps::Search;
use crate::cdp::runtime::{Runtime, Started};
use crate::cdp::scripts::Scripts;
use crate::cdp::{self, Client, Event};
use crate::debugger::backend::{Input, Inputs};
use crate::debugger::script::{self, Collector, Hit, Outcome, Plan, Step, Undebugged, VALUE_CHARS};
use crate::debugger::{Code, Failure};
use crate::log;
use crate::process::{Debuggee, Exit};

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

pub(crate) fn run<R: Runtime>(plan: &Plan, call: &Call) -> Result<Outcome, Failure> {
    let deadline = Instant::now() + plan.timeout;
    let Started { debuggee, client, entry, program } =
        R::start(&plan.command, false, plan.timeout, deadline, &call.cancel)?;
    // The condition is filled in by setup(), once the binding's name is known.
    let (breakpoint, search) = Breakpoint::plan(
        &plan.file,
        &plan.real_file,
        plan.line,
        None,
        String::new(),
        entry.as_deref(),
        R::URLS,
    )
    .map_err(|message| Failure::new(Code::NoCodeAtLine, message))?;
    call.log.send(
        "info",
        format!("started {program} (pid {}), inspector at {}", debuggee.pid(), client.url()),
    );
    let mut run = Run::<R> {
        runtime: PhantomData,
        plan,
        call,
        events: client.events().clone(),
        exited: debuggee.exited().clone(),
        nudge: crossbeam_channel::tick(NUDGE_EVERY),
        client,
        debuggee,
        deadline,
        binding: binding_name(),
        breakpoint,
        search,
        scripts: Scripts::new(R::URLS),
        workers: 0,
        timed_out: false,
    };
    let started = run.setup();
    script::drive(&mut run, started, plan, call, deadline)
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

struct Run<'a, R> {
    runtime: PhantomData<R>,
    plan: &'a Plan,
    call: &'a Call,
    client: Client,
    events: Receiver<Event>,
    exited: Receiver<Exit>,
    /// Until the program shows a sign of life, `runIfWaitingForDebugger` is re-sent (see
    /// `until_waiting`).
    nudge: Receiver<Instant>,
    debuggee: Debuggee,
    deadline: Instant,
    binding: String,
    /// The breakpoint; its condition calls the probe.
    breakpoint: Breakpoint,
    search: Search,
    scripts: Scripts,
    /// Worker threads the program started (they run undebugged).
    workers: usize,
    /// The run outlived its timeout (for the failure's words).
    timed_out: bool,
}

impl<R: Runtime> Run<'_, R> {
    /// Enables the domains, installs the probe, checks the expression compiles and sets the
    /// breakpoint, all pipelined in one burst (the inspector handles requests in order, so each
    /// sees the effect of the ones before it); then, once every answer is in and good, lets the
    /// program start.
    fn setup(&mut self) -> Result<(), Failure> {
        let options = json!({
            "maxHits": self.plan.max_hits,
            "pause": self.plan.include_stack,
            "maxChars": VALUE_CHARS,
            "maxDepth": 20,
        });
        let install =
            format!("({})({}, {options})", PROBE.trim_end(), Value::from(self.binding.as_str()));
        let thunk = |code: &str| format!("() => ({code}\n)");
        self.breakpoint.set_condition(format!(
            "{}.hit({}, {})",
            self.binding,
            self.plan.condition.as_deref().map_or("null".to_string(), thunk),
            thunk(&self.plan.expression)
        ));
        // A condition that does not compile is silently false in V8 and would look like "never
        // hit": compile the same wrappers first and report the syntax error.
        let mut checks = vec![("expression", thunk(&self.plan.expression))];
        if let Some(condition) = &self.plan.condition {
            checks.push(("breakpoint.condition", thunk(condition)));
        }

        let client = &mut self.client;
        let enabled = [
            client.send("Runtime.enable", json!({})),
            client.send("Debugger.enable", json!({})),
            client.send("Runtime.addBinding", json!({"name": self.binding})),
        ];
        let runtime: Vec<_> = R::setup_requests(true)
            .into_iter()
            .map(|(method, params)| client.send(method, params))
            .collect();
        let installed =
            client.send("Runtime.evaluate", json!({"expression": install, "returnByValue": true}));
        let compiled: Vec<_> = checks
            .iter()
            .map(|(field, code)| {
                let params = json!({"expression": code, "sourceURL": "", "persistScript": false});
                (*field, client.send("Runtime.compileScript", params))
            })
            .collect();
        let sets: Vec<_> = self
            .breakpoint
            .requests()
            .into_iter()
            .map(|(params, request)| {
                (self.client.send("Debugger.setBreakpointByUrl", params), request)
            })
            .collect();

        for reply in enabled.iter().chain(&runtime) {
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
                return Err(syntax_failure(field, details));
            }
        }
        for (reply, request) in sets {
            let answer = self.answer(&reply)?;
            self.breakpoint.set(request, &answer, &self.scripts);
        }
        let disabled = self.client.send("Runtime.disable", json!({}));
        self.answer(&disabled)?;
        self.until_waiting()?;
        let running = self.client.send("Runtime.runIfWaitingForDebugger", json!({}));
        self.answer(&running)?;
        log::debug(format_args!("breakpoint set; program running"));
        Ok(())
    }

    /// The probe stopped the breakpoint file's module before its body ran (tsx and the like
    /// compile it while it loads): place the real breakpoint from its map; the caller resumes.
    fn place_at_load(&mut self, frame: &Value) -> Result<(), Failure> {
        let steps = self.breakpoint.at_load(frame, &self.scripts)?;
        for step in steps {
            let reply = self.client.send(step.method, step.params);
            let answer = self.answer(&reply)?;
            if let Some(request) = step.request {
                self.breakpoint.set(request, &answer, &self.scripts);
            }
        }
        log::debug(format_args!("breakpoint placed at load"));
        Ok(())
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

    /// Waits for the runtime's ready event (Node's `NodeRuntime.waitingForDebugger`): the
    /// process has entered its wait for us. Node reads our first requests during the start-up work just before that wait (while it
    /// runs JavaScript); a `runIfWaitingForDebugger` dispatched then is forgotten when the wait
    /// begins, and Node waits for ever. Seen about once in a hundred runs under load.
    fn until_waiting(&mut self) -> Result<(), Failure> {
        let events = self.client.events().clone();
        let gate = crossbeam_channel::at(self.deadline.min(Instant::now() + WAIT_GATE));
        loop {
            select! {
                recv(events) -> event => match event {
                    Ok(event) if event.method == R::READY_EVENT => return Ok(()),
                    Ok(event) => {
                        self.handle_event(event)?;
                    }
                    Err(_) => return Ok(()), // the driver sees the closed connection
                },
                recv(gate) -> _ => {
                    // Older Node versions lack the event; the driver nudges until it runs.
                    log::warn(format_args!("no {} within {} ms", R::READY_EVENT, WAIT_GATE.as_millis()));
                    return Ok(());
                },
                recv(self.call.cancel) -> _ => return Err(Failure::Cancelled),
            }
        }
    }

    /// Handles one inspector event.
    fn handle_event(&mut self, mut event: Event) -> Result<Step, Failure> {
        if R::on_event(&mut self.client, &event) {
            self.workers += 1;
        }
        match event.method.as_str() {
            "Runtime.bindingCalled" if event.params["name"] == self.binding.as_str() => {
                let payload = match event.params.get_mut("payload").map(Value::take) {
                    Some(Value::String(payload)) => payload,
                    _ => String::new(),
                };
                return Ok(Step::Hit(hit(payload)));
            }
            "Debugger.paused" => {
                let hit = |id: &str| {
                    event.params["hitBreakpoints"]
                        .as_array()
                        .is_some_and(|ids| ids.iter().any(|hit| hit == id))
                };
                if self.breakpoint.probe_id().is_some_and(hit) {
                    self.place_at_load(&event.params["callFrames"][0])?;
                }
                let ours = self.breakpoint.ids().any(hit);
                // Every pause is resumed: `debugger;` statements, the load-time probe, the
                // initial pause of --inspect-brk, and hits when a stack was asked for.
                drop(self.client.send("Debugger.resume", json!({})));
                if ours {
                    let frames = event.params["callFrames"].as_array().into_iter().flatten();
                    let frames = frames.take(STACK_FRAMES).map(|f| self.scripts.frame_json(f));
                    return Ok(Step::Stack(frames.collect()));
                }
            }
            "Debugger.breakpointResolved" => {
                let id = event.params["breakpointId"].as_str().unwrap_or_default();
                self.breakpoint.resolved(id, &event.params["location"], &self.scripts);
            }
            "Debugger.scriptParsed" => self.scripts.on_parsed(&event.params),
            method if method == R::END_EVENT => return Ok(Step::Finished),
            _ => {}
        }
        Ok(Step::Go)
    }

    fn no_map_failure(&self, exit: Exit, timed_out: bool) -> Failure {
        let looked = if self.search.looked_at.is_empty() {
            "no JavaScript file with a source map next to the command's script".to_string()
        } else {
            self.search.looked_at.join("; ")
        };
        let ended = if timed_out {
            format!("the program was killed after {} ms", self.plan.timeout.as_millis())
        } else {
            format!("the program ended ({})", exit.describe())
        };
        Failure::new(
            Code::NoSourceMap,
            format!(
                "no source map covers {}: looked at {looked}. Nor was it compiled while loading \
                 (e.g. `node --import tsx ...`); {ended} without loading it. Build with source \
                 maps (tsc `sourceMap`, esbuild `--sourcemap`), or set the breakpoint in the \
                 JavaScript that runs",
                self.plan.file.display()
            ),
        )
        .with("lookedAt", self.search.looked_at.clone().into())
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
    Hit { result, truncated, stack: None }
}

impl<R: Runtime> Collector for Run<'_, R> {
    type Event = Event;

    fn inputs(&self) -> Inputs<Event> {
        Inputs {
            events: self.events.clone(),
            exited: self.exited.clone(),
            tick: self.nudge.clone(),
        }
    }

    fn handle(&mut self, input: Input<Event>) -> Result<Step, Failure> {
        match input {
            Input::Event(event) => {
                // Any event shows the program started: no more nudges.
                self.nudge = crossbeam_channel::never();
                self.handle_event(event)
            }
            Input::Closed => Ok(Step::Finished),
            Input::Exited(exit) => {
                if let Some(exit) = exit {
                    self.debuggee.record_exit(exit);
                }
                self.exited = crossbeam_channel::never();
                Ok(Step::Draining)
            }
            Input::Tick => {
                log::warn(format_args!(
                    "no sign of the program running yet; sending runIfWaitingForDebugger again"
                ));
                drop(self.client.send("Runtime.runIfWaitingForDebugger", json!({})));
                Ok(Step::Go)
            }
        }
    }

    fn stop_hits(&mut self) {
        for id in self.breakpoint.ids() {
            drop(self.client.send("Debugger.removeBreakpoint", json!({"breakpointId": id})));
        }
    }

    /// A finished program is let go and exits by itself; one that timed out is killed. Either
    /// way the process group is gone before this returns.
    fn end(&mut self, timed_out: bool) -> Exit {
        self.timed_out = timed_out;
        log::debug(format_args!("program ended; disconnecting"));
        self.client.close();
        let exit = if timed_out {
            self.debuggee.kill()
        } else {
            let lingered = self.debuggee.try_exit().is_none();
            let exit = self.debuggee.finish(EXIT_GRACE);
            if lingered && exit.code.is_none() {
                let message = format!(
                    "the program did not exit within {} s of its end and was killed",
                    EXIT_GRACE.as_secs()
                );
                self.call.log.send("warning", message);
            }
            exit
        };
        self.debuggee.settle_output();
        log::debug(format_args!("debuggee gone ({}); output complete", exit.describe()));
        exit
    }

    fn abort(&mut self) {
        self.debuggee.kill();
    }

    fn output(&self) -> Value {
        self.debuggee.output().to_json()
    }

    fn undebugged(&self) -> Undebugged {
        Undebugged { processes: self.debuggee.descendants(None), workers: self.workers }
    }

    fn resolution(&mut self) -> (Option<u32>, Option<String>, Vec<Value>) {
        let resolution = std::mem::take(&mut self.breakpoint.resolution);
        (resolution.line, resolution.file, resolution.generated)
    }

    fn no_hit_failure(&self, exit: Exit, timed_out: bool) -> Option<Failure> {
        // Not JavaScript, no map on disk, and the program never loaded the file itself.
        self.breakpoint.unplaceable().then(|| self.no_map_failure(exit, timed_out))
    }

    fn never_bound(&self) -> String {
        self.breakpoint.never_bound()
    }
}
