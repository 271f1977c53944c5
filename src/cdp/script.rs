//! One `debug-script` run against Node: spawn, attach, install the probe, set the breakpoint, let
//! the program run, collect each hit's value, and end with nothing left running.
//!
//! Hits do not pause the program (unless a stack was asked for). The breakpoint's condition calls
//! the probe (`probe.js`), which evaluates the expression in the frame's scope and reports it
//! through a `Runtime.addBinding` binding; the condition then returns false. Reports arrive as
//! `Runtime.bindingCalled` events in hit order, on the same socket and before the end-of-program
//! event, so none is lost. This is what makes a 10,000-hit loop take well under two seconds
//! (notes/cdp.md, "Speed").
//!
//! The run is one `select!` over the inspector's events, the child's exit, the deadline and the
//! cancel signal; every request has a deadline.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver};
use serde_json::{json, Value};

use crate::cdp::node::{self, Discovery};
use crate::cdp::{self, Client, Event};
use crate::log;
use crate::process::{Debuggee, Exit, SpawnError};
use crate::tools::script::{Failure, Outcome, Plan, RESULTS_BUDGET, VALUE_CHARS};
use crate::tools::Call;

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
/// How long to keep reading events after the process died without saying goodbye.
const EVENTS_GRACE: Duration = Duration::from_millis(500);
/// Frames reported per hit with `includeStack`.
const STACK_FRAMES: usize = 10;

pub(crate) fn run(plan: &Plan, call: &Call) -> Result<Outcome, Failure> {
    let deadline = Instant::now() + plan.timeout;
    let launch = node::prepare(plan.command.clone(), std::env::var("NODE_OPTIONS").ok())
        .map_err(|message| Failure::new("invalid_command", message))?;
    let mut debuggee =
        Debuggee::spawn(&launch.spec, node::is_inspector_line).map_err(|e| match e {
            SpawnError::NotFound(_) => Failure::new("command_not_found", e.to_string()),
            SpawnError::Other(..) => Failure::new("spawn_failed", e.to_string()),
        })?;
    let url = match node::discover(&mut debuggee, deadline, &call.cancel) {
        Ok(url) => url,
        Err(discovery) => return Err(discovery_failure(discovery, &launch, plan, &mut debuggee)),
    };
    log::debug(format_args!("inspector at {url}"));
    call.log.send(
        "info",
        format!("started {} (pid {}), inspector at {url}", launch.spec.program, debuggee.pid()),
    );
    let left = deadline.saturating_duration_since(Instant::now());
    let client = Client::connect(&url, left.min(REQUEST_TIMEOUT))
        .map_err(|message| Failure::new("inspector_failed", message))?;
    let mut run = Run {
        plan,
        call,
        client,
        debuggee,
        deadline,
        binding: binding_name(),
        breakpoint_id: String::new(),
        outcome: Outcome::default(),
        results_bytes: 0,
        scripts: HashMap::new(),
    };
    let outcome = run.setup().and_then(|()| run.collect());
    run.finish(outcome)
}

fn discovery_failure(
    discovery: Discovery,
    launch: &node::Launch,
    plan: &Plan,
    debuggee: &mut Debuggee,
) -> Failure {
    let output = debuggee.output().to_json();
    match discovery {
        Discovery::Cancelled => Failure::Cancelled,
        Discovery::PortInUse(address) => Failure::new(
            "port_in_use",
            format!(
                "inspector port {address} is already in use (another debugger or Node process \
                 holds it): drop the --inspect-brk flag from the command and debug-mcp picks a \
                 free port"
            ),
        ),
        Discovery::Failed(line) => Failure::new("inspector_failed", format!("Node could not start its inspector: {line}")),
        Discovery::Exited(exit) if launch.is_node => exited_before_hit(exit.describe(), None)
            .with("exitCode", exit.code.map_or(Value::Null, Value::from))
            .with("output", output),
        Discovery::Exited(exit) => Failure::new(
            "no_inspector",
            format!(
                "the command exited ({}) without opening a Node inspector: run a node script \
                 directly, e.g. `node app.js`, or make the command start node with --inspect-brk",
                exit.describe()
            ),
        )
        .with("output", output),
        Discovery::TimedOut => timeout_failure(plan)
            .with("hint", "the command never opened a Node inspector (no `Debugger listening on ws://` line on its stderr): run a node script directly, e.g. `node app.js`".into())
            .with("output", output),
    }
}

fn syntax_failure(field: &str, details: &Value) -> Failure {
    let error = details
        .pointer("/exception/description")
        .and_then(Value::as_str)
        .or_else(|| details["text"].as_str())
        .unwrap_or("SyntaxError");
    let error = error.lines().next().unwrap_or(error);
    Failure::new(
        "invalid_expression",
        format!("`{field}` is not a valid JavaScript expression: {error}"),
    )
    .with("field", field.into())
}

fn timeout_failure(plan: &Plan) -> Failure {
    // The exact wording existing clients of this tool match on.
    Failure::new(
        "timeout",
        format!("Timeout waiting for breakpoint after {}ms", plan.timeout.as_millis()),
    )
}

fn exited_before_hit(how: String, hint: Option<String>) -> Failure {
    let failure =
        Failure::new("exited", "Process exited before breakpoint was hit").with("exit", how.into());
    match hint {
        Some(hint) => failure.with("hint", hint.into()),
        None => failure,
    }
}

/// A global name the program is unlikely to use; it is visible to the program as a function.
fn binding_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("__debugMcp_{}_{n}", std::process::id())
}

struct Run<'a> {
    plan: &'a Plan,
    call: &'a Call,
    client: Client,
    debuggee: Debuggee,
    deadline: Instant,
    binding: String,
    breakpoint_id: String,
    outcome: Outcome,
    results_bytes: usize,
    /// `scriptId` to URL, from `Debugger.scriptParsed`: paused call frames carry only the id.
    scripts: HashMap<String, String>,
}

/// Why event collection stopped.
enum End {
    /// The program finished (or the connection closed).
    Finished,
    TimedOut,
}

impl Run<'_> {
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
        let condition = format!(
            "{}.hit({}, {})",
            self.binding,
            self.plan.condition.as_deref().map_or("null".to_string(), thunk),
            thunk(&self.plan.expression)
        );
        let mut paths = vec![self.plan.real_file.as_path()];
        if self.plan.file != self.plan.real_file {
            paths.push(self.plan.file.as_path()); // with --preserve-symlinks
        }
        // A condition that does not compile is silently false in V8 and would look like "never
        // hit": compile the same wrappers first and report the syntax error.
        let mut checks = vec![("expression", thunk(&self.plan.expression))];
        if let Some(condition) = &self.plan.condition {
            checks.push(("breakpoint.condition", thunk(condition)));
        }

        let client = &mut self.client;
        let enabled = [
            client.send("NodeRuntime.enable", json!({})),
            client.send("Runtime.enable", json!({})),
            client.send("Debugger.enable", json!({})),
            client.send("NodeRuntime.notifyWhenWaitingForDisconnect", json!({"enabled": true})),
            client.send("Runtime.addBinding", json!({"name": self.binding})),
        ];
        let installed =
            client.send("Runtime.evaluate", json!({"expression": install, "returnByValue": true}));
        let compiled: Vec<_> = checks
            .iter()
            .map(|(field, code)| {
                let params = json!({"expression": code, "sourceURL": "", "persistScript": false});
                (*field, client.send("Runtime.compileScript", params))
            })
            .collect();
        let set = client.send(
            "Debugger.setBreakpointByUrl",
            json!({"urlRegex": node::file_url_regex(&paths), "lineNumber": self.plan.line - 1,
                   "condition": condition}),
        );

        for reply in enabled {
            self.answer(&reply)?;
        }
        let installed = self.answer(&installed)?;
        if installed.pointer("/result/value") != Some(&Value::Bool(true)) {
            return Err(Failure::new(
                "inspector_failed",
                format!("could not install the probe: {installed}"),
            ));
        }
        for (field, reply) in compiled {
            let compiled = self.answer(&reply)?;
            if let Some(details) = compiled.get("exceptionDetails") {
                return Err(syntax_failure(field, details));
            }
        }
        let set = self.answer(&set)?;
        self.breakpoint_id = set["breakpointId"].as_str().unwrap_or_default().to_string();
        if let Some(line) = set.pointer("/locations/0/lineNumber").and_then(Value::as_u64) {
            self.outcome.resolved_line = u32::try_from(line + 1).ok();
        }
        let disabled = self.client.send("Runtime.disable", json!({}));
        self.answer(&disabled)?;
        self.until_waiting()?;
        let running = self.client.send("Runtime.runIfWaitingForDebugger", json!({}));
        self.answer(&running)?;
        log::debug(format_args!("breakpoint set; program running"));
        Ok(())
    }

    /// Waits for the answer to a request sent earlier, within the run's deadline.
    fn answer(&self, reply: &Receiver<Result<Value, cdp::Error>>) -> Result<Value, Failure> {
        let limit = self.deadline.min(Instant::now() + REQUEST_TIMEOUT);
        select! {
            recv(reply) -> answer => match answer {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(e)) => Err(Failure::new("inspector_failed", e.to_string())),
                Err(_) => Err(Failure::new("inspector_failed", cdp::Error::Closed.to_string())),
            },
            recv(self.call.cancel) -> _ => Err(Failure::Cancelled),
            recv(crossbeam_channel::at(limit)) -> _ => Err(if limit >= self.deadline {
                timeout_failure(self.plan)
            } else {
                Failure::new(
                    "inspector_failed",
                    format!("the inspector did not answer within {} s", REQUEST_TIMEOUT.as_secs()),
                )
            }),
        }
    }

    /// Waits for `NodeRuntime.waitingForDebugger`: the process has entered its wait for us.
    /// Node reads our first requests during the start-up work just before that wait (while it
    /// runs JavaScript); a `runIfWaitingForDebugger` dispatched then is forgotten when the wait
    /// begins, and Node waits for ever. Seen about once in a hundred runs under load.
    fn until_waiting(&mut self) -> Result<(), Failure> {
        let events = self.client.events().clone();
        let gate = crossbeam_channel::at(self.deadline.min(Instant::now() + WAIT_GATE));
        loop {
            select! {
                recv(events) -> event => match event {
                    Ok(event) if event.method == "NodeRuntime.waitingForDebugger" => return Ok(()),
                    Ok(event) => {
                        self.handle_event(event);
                    }
                    Err(_) => return Ok(()), // collect() sees the closed connection
                },
                recv(gate) -> _ => {
                    // Older Node versions lack the event; collect() nudges until it runs.
                    log::warn(format_args!("no NodeRuntime.waitingForDebugger within {} ms", WAIT_GATE.as_millis()));
                    return Ok(());
                },
                recv(self.call.cancel) -> _ => return Err(Failure::Cancelled),
            }
        }
    }

    fn collect(&mut self) -> Result<End, Failure> {
        let mut timeout = crossbeam_channel::at(self.deadline);
        let mut timeout_means = End::TimedOut;
        let events = self.client.events().clone();
        let mut exited = self.debuggee.exited().clone();
        // Any event shows the program started; until then, nudge it (see until_waiting).
        let mut nudge = crossbeam_channel::tick(NUDGE_EVERY);
        loop {
            select! {
                recv(events) -> event => match event {
                    Ok(event) => {
                        nudge = crossbeam_channel::never();
                        if self.handle_event(event) {
                            return Ok(End::Finished);
                        }
                    }
                    Err(_) => return Ok(End::Finished),
                },
                recv(nudge) -> _ => {
                    log::warn(format_args!("no sign of the program running yet; sending runIfWaitingForDebugger again"));
                    drop(self.client.send("Runtime.runIfWaitingForDebugger", json!({})));
                },
                recv(exited) -> exit => {
                    if let Ok(exit) = exit {
                        self.debuggee.record_exit(exit);
                    }
                    // The process is gone but what it sent may still be in the socket: read on
                    // until the connection closes (briefly), so no hit is lost.
                    exited = crossbeam_channel::never();
                    let grace = (Instant::now() + EVENTS_GRACE).min(self.deadline);
                    timeout = crossbeam_channel::at(grace);
                    timeout_means = End::Finished;
                },
                recv(timeout) -> _ => return Ok(timeout_means),
                recv(self.call.cancel) -> _ => return Err(Failure::Cancelled),
            }
        }
    }

    /// Handles one inspector event; true when the program has finished.
    fn handle_event(&mut self, mut event: Event) -> bool {
        match event.method.as_str() {
            "Runtime.bindingCalled" if event.params["name"] == self.binding.as_str() => {
                let payload = match event.params.get_mut("payload").map(Value::take) {
                    Some(Value::String(payload)) => payload,
                    _ => String::new(),
                };
                self.record_hit(payload);
            }
            "Debugger.paused" => {
                let ours = event.params["hitBreakpoints"]
                    .as_array()
                    .is_some_and(|ids| ids.iter().any(|id| id == self.breakpoint_id.as_str()));
                if ours {
                    self.attach_stack(&event.params["callFrames"]);
                }
                // Every pause is resumed: the initial break on start, `debugger;` statements,
                // and the hits themselves when a stack was asked for.
                drop(self.client.send("Debugger.resume", json!({})));
            }
            "Debugger.breakpointResolved"
                if event.params["breakpointId"] == self.breakpoint_id.as_str()
                    && self.outcome.resolved_line.is_none() =>
            {
                let line = event.params.pointer("/location/lineNumber").and_then(Value::as_u64);
                self.outcome.resolved_line = line.and_then(|l| u32::try_from(l + 1).ok());
            }
            "Debugger.scriptParsed" if self.plan.include_stack => {
                if let (Some(id), Some(url)) =
                    (event.params["scriptId"].as_str(), event.params["url"].as_str())
                {
                    self.scripts.insert(id.to_string(), url.to_string());
                }
            }
            "NodeRuntime.waitingForDisconnect" => return true,
            _ => {}
        }
        false
    }

    /// Records one hit. The probe sends `T` or `F` (was the value truncated?) and then the
    /// JSON of `{type, value}`, which is kept as text: parsed once to check it (the program
    /// could call the binding itself), never held as a tree.
    fn record_hit(&mut self, payload: String) {
        let (truncated, json) = match payload.split_at_checked(1) {
            Some(("T", json)) => (true, json),
            Some(("F", json)) => (false, json),
            _ => (false, ""),
        };
        let well_formed = serde_json::from_str::<Value>(json).is_ok_and(|v| {
            v["type"].is_string()
                && v.get("value").is_some()
                && v.as_object().is_some_and(|o| o.len() == 2)
        });
        let mut result = if well_formed {
            json.to_string()
        } else {
            let message = format!("unreadable report from the probe: {}", log::clip(&payload));
            json!({"type": "error", "value": message}).to_string()
        };
        self.outcome.values_truncated |= truncated;
        self.results_bytes += result.len();
        if self.results_bytes > RESULTS_BUDGET {
            let omitted = format!(
                "[omitted: the values so far exceed the {} MiB answer budget]",
                RESULTS_BUDGET / (1024 * 1024)
            );
            let kind = serde_json::from_str::<Value>(&result)
                .map(|v| v["type"].clone())
                .unwrap_or_default();
            result = json!({"type": kind, "value": omitted}).to_string();
            self.outcome.values_truncated = true;
        }
        self.outcome.results.push(result);
        let hits = self.outcome.results.len() as u64;
        self.call.progress.report(hits, || format!("hit {hits}"));
        if hits == self.plan.max_hits {
            self.outcome.hits_capped = true;
            let id = self.breakpoint_id.clone();
            drop(self.client.send("Debugger.removeBreakpoint", json!({"breakpointId": id})));
        }
    }

    fn attach_stack(&mut self, frames: &Value) {
        let frames: Vec<Value> = frames
            .as_array()
            .map(|frames| {
                frames
                    .iter()
                    .take(STACK_FRAMES)
                    .map(|frame| {
                        let name = frame["functionName"]
                            .as_str()
                            .filter(|n| !n.is_empty())
                            .unwrap_or("(anonymous)");
                        let url = frame["url"]
                            .as_str()
                            .filter(|u| !u.is_empty())
                            .or_else(|| {
                                frame
                                    .pointer("/location/scriptId")
                                    .and_then(Value::as_str)
                                    .and_then(|id| self.scripts.get(id).map(String::as_str))
                            })
                            .unwrap_or_default();
                        let line = frame
                            .pointer("/location/lineNumber")
                            .and_then(Value::as_u64)
                            .unwrap_or(0)
                            + 1;
                        json!({"function": name, "file": node::file_url_to_path(url), "line": line})
                    })
                    .collect()
            })
            .unwrap_or_default();
        // The result is a JSON object's text ending in `}`: add the field before it.
        let Some(last) = self.outcome.results.last_mut() else { return };
        if last.ends_with('}') {
            last.pop();
            last.push_str(&format!(r#","stack":{}}}"#, Value::from(frames)));
        }
    }

    /// Ends the run: on a finished program, disconnect and let it exit by itself; on a timeout,
    /// kill it. Either way the process group is gone before this returns.
    fn finish(mut self, end: Result<End, Failure>) -> Result<Outcome, Failure> {
        let end = match end {
            Ok(end) => end,
            Err(failure) => {
                self.debuggee.kill();
                return Err(failure);
            }
        };
        log::debug(format_args!("program ended; disconnecting"));
        self.client.close();
        let exit = match end {
            End::Finished => {
                let lingered = self.debuggee.try_exit().is_none();
                let exit = self.debuggee.finish(EXIT_GRACE);
                if lingered && exit.code.is_none() {
                    self.call.log.send(
                        "warning",
                        format!(
                            "the program did not exit within {} s of its end and was killed",
                            EXIT_GRACE.as_secs()
                        ),
                    );
                }
                exit
            }
            End::TimedOut => {
                self.outcome.timed_out = true;
                self.debuggee.kill()
            }
        };
        self.debuggee.settle_output();
        log::debug(format_args!("debuggee gone ({}); output complete", exit.describe()));
        let hits = self.outcome.results.len();
        self.call
            .log
            .send("info", format!("program ended ({}) after {hits} hit(s)", exit.describe()));
        self.outcome.exit = Some(exit);
        self.outcome.output = self.debuggee.output().to_json();
        if !self.outcome.results.is_empty() {
            return Ok(self.outcome);
        }
        let failure = if self.outcome.timed_out {
            timeout_failure(self.plan)
        } else {
            exited_before_hit(exit.describe(), Some(self.never_hit_hint(exit)))
        };
        let mut failure = failure.with("output", self.outcome.output.clone());
        if let Some(code) = exit.code.filter(|_| !self.outcome.timed_out) {
            failure = failure.with("exitCode", code.into());
        }
        if let Some(line) = self.outcome.resolved_line {
            failure = failure.with("resolvedLine", line.into());
        } else if self.outcome.timed_out {
            failure = failure.with("hint", self.never_hit_hint(exit).into());
        }
        Err(failure)
    }

    fn never_hit_hint(&self, exit: Exit) -> String {
        if !self.outcome.timed_out && exit.code != Some(0) {
            return format!(
                "the program failed ({}) before the breakpoint was reached: see its stderr",
                exit.describe()
            );
        }
        match (self.outcome.resolved_line, &self.plan.condition) {
            (None, _) => format!(
                "the breakpoint never bound: no script loaded from {} (is it the file the command runs or requires?)",
                self.plan.file.display()
            ),
            (Some(line), None) => format!("the breakpoint was set at line {line} but that line never ran"),
            (Some(line), Some(condition)) => format!(
                "the breakpoint was set at line {line}; either that line never ran or `{condition}` was never truthy there"
            ),
        }
    }
}
