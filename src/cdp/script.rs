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
//! Source maps: a breakpoint in a file Node does not run itself (`src/app.ts`) is placed through
//! the maps `cdp/maps.rs` finds on disk, at the generated line and column of each covering
//! file. A file that is not JavaScript may also be compiled while it loads (tsx), so a probe
//! breakpoint at the start of the file's own URL is armed too: it stops the module after
//! `scriptParsed` (which carries its map) and before its body runs; the real breakpoint is set
//! from that map, then the probe goes. Resolved locations and stack frames are translated back.
//!
//! The run is one `select!` over the inspector's events, the child's exit, the deadline and the
//! cancel signal; every request has a deadline.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver};
use serde_json::{json, Value};

use crate::cdp::maps::{self, Search};
use crate::cdp::node::{self, Discovery};
use crate::cdp::{self, Client, Event};
use crate::log;
use crate::process::{Debuggee, Exit, SpawnError};
use crate::sourcemap::{Position, SourceMap};
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
    let prepare = |flag| {
        node::prepare(plan.command.clone(), std::env::var("NODE_OPTIONS").ok(), flag)
            .map_err(|message| Failure::new("invalid_command", message))
    };
    let mut launch = prepare(node::WAIT_FLAG)?;
    let (placement, search) = placement(plan, launch.entry.as_deref())?;
    let (mut debuggee, mut found) = start(&launch, deadline, call)?;
    if let Err(Discovery::Exited(_)) = found {
        if launch.inserted && node::refused_wait_flag(&debuggee.output().stderr_text()) {
            log::debug(format_args!("this node has no --inspect-wait; using --inspect-brk"));
            launch = prepare(node::BRK_FLAG)?;
            (debuggee, found) = start(&launch, deadline, call)?;
        }
    }
    let url = match found {
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
        condition: String::new(),
        placement,
        search,
        placed: Vec::new(),
        outcome: Outcome::default(),
        results_bytes: 0,
        scripts: HashMap::new(),
        script_maps: HashMap::new(),
    };
    let outcome = run.setup().and_then(|()| run.collect());
    run.finish(outcome)
}

/// Spawns the command and waits for its inspector's URL.
fn start(
    launch: &node::Launch,
    deadline: Instant,
    call: &Call,
) -> Result<(Debuggee, Result<String, Discovery>), Failure> {
    let mut debuggee =
        Debuggee::spawn(&launch.spec, node::is_inspector_line).map_err(|e| match e {
            SpawnError::NotFound(_) => Failure::new("command_not_found", e.to_string()),
            SpawnError::Other(..) => Failure::new("spawn_failed", e.to_string()),
        })?;
    let found = node::discover(&mut debuggee, deadline, &call.cancel);
    Ok((debuggee, found))
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

/// Where the breakpoint goes in the code Node runs. Every way is armed at once, so the
/// breakpoint binds whichever way the program runs the file.
struct Placement {
    /// JavaScript: set by the file's own URL (it may be what Node runs).
    direct: bool,
    /// Generated files on disk whose maps list the file: set at the mapped position in each.
    targets: Vec<Target>,
    /// Not JavaScript: a probe at the start of the file's own URL catches it being compiled
    /// while it loads (tsx), to place the breakpoint from the map it was compiled with.
    probe: Probe,
}

#[derive(Debug, PartialEq)]
enum Probe {
    Off,
    /// Set; its breakpoint id. The file has not been loaded (yet).
    Waiting(String),
    /// The file was loaded and the breakpoint placed from its map.
    Done,
}

/// A breakpoint to set in a generated file.
struct Target {
    generated: std::path::PathBuf,
    position: Position,
    map: Arc<SourceMap>,
    source: usize,
}

/// A `setBreakpointByUrl` to send: its params, the map that translates where it lands, and
/// whether it is the load-time probe.
type BreakpointRequest = (Value, Option<(Arc<SourceMap>, usize)>, bool);

/// A breakpoint we set, and the map that translates where it landed.
struct Placed {
    id: String,
    map: Option<(Arc<SourceMap>, usize)>,
}

fn placement(plan: &Plan, entry: Option<&str>) -> Result<(Placement, Search), Failure> {
    let search = maps::search(&plan.real_file, entry.map(Path::new));
    let direct = maps::is_javascript(&plan.real_file);
    let line = plan.line - 1;
    let targets: Vec<Target> = search
        .covered
        .iter()
        .filter_map(|covered| {
            let (_, positions) = covered.map.generated_for(covered.source, line)?;
            Some(Target {
                generated: covered.generated.clone(),
                position: *positions.first()?,
                map: covered.map.clone(),
                source: covered.source,
            })
        })
        .collect();
    if !direct && targets.is_empty() && !search.covered.is_empty() {
        let files: Vec<String> =
            search.covered.iter().map(|c| c.generated.display().to_string()).collect();
        return Err(Failure::new(
            "no_code_at_line",
            format!(
                "no code at or after line {} of {} in its source map (generated file {}): pick a \
                 line with a statement",
                plan.line,
                plan.file.display(),
                files.join(", ")
            ),
        ));
    }
    // The probe's id is filled in when it is set.
    let probe = if direct { Probe::Off } else { Probe::Waiting(String::new()) };
    Ok((Placement { direct, targets, probe }, search))
}

/// `{file, line, column}` (1-based) of a generated position.
fn generated_json(file: &str, position: Position) -> Value {
    json!({"file": file, "line": position.line + 1, "column": position.column + 1})
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
    /// The breakpoint condition that calls the probe.
    condition: String,
    placement: Placement,
    search: Search,
    /// The breakpoints carrying `condition`.
    placed: Vec<Placed>,
    outcome: Outcome,
    results_bytes: usize,
    /// `scriptId` to (URL, sourceMapURL), from `Debugger.scriptParsed`: paused call frames
    /// carry only the id.
    scripts: HashMap<String, (String, String)>,
    /// Maps of scripts met in stack frames, loaded once each (`None`: no usable map).
    script_maps: HashMap<String, Option<Arc<SourceMap>>>,
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
        self.condition = format!(
            "{}.hit({}, {})",
            self.binding,
            self.plan.condition.as_deref().map_or("null".to_string(), thunk),
            thunk(&self.plan.expression)
        );
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
        // What to set: (params, the map that translates where it lands, is it the probe).
        let mapped = |targets: &[Target]| -> Vec<BreakpointRequest> {
            targets
                .iter()
                .map(|t| {
                    let params = json!({
                        "urlRegex": node::file_url_regex(&[t.generated.as_path()]),
                        "lineNumber": t.position.line, "columnNumber": t.position.column,
                        "condition": self.condition});
                    (params, Some((t.map.clone(), t.source)), false)
                })
                .collect()
        };
        let placement = &self.placement;
        let mut requests: Vec<BreakpointRequest> = Vec::new();
        if placement.direct {
            let direct = json!({"urlRegex": self.file_regex(),
                "lineNumber": self.plan.line - 1, "condition": self.condition});
            requests.push((direct, None, false));
        }
        requests.extend(mapped(&placement.targets));
        if placement.probe != Probe::Off {
            let probe = json!({"urlRegex": self.file_regex(), "lineNumber": 0, "columnNumber": 0});
            requests.push((probe, None, true));
        }
        let sets: Vec<_> = requests
            .into_iter()
            .map(|(params, map, probe)| {
                (self.client.send("Debugger.setBreakpointByUrl", params), map, probe)
            })
            .collect();

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
        for (reply, map, probe) in sets {
            let set = self.answer(&reply)?;
            let id = set["breakpointId"].as_str().unwrap_or_default().to_string();
            if probe {
                self.placement.probe = Probe::Waiting(id);
                continue;
            }
            self.placed.push(Placed { id: id.clone(), map });
            if let Some(location) = set.pointer("/locations/0") {
                self.resolved(&id, location);
            }
        }
        let disabled = self.client.send("Runtime.disable", json!({}));
        self.answer(&disabled)?;
        self.until_waiting()?;
        let running = self.client.send("Runtime.runIfWaitingForDebugger", json!({}));
        self.answer(&running)?;
        log::debug(format_args!("breakpoint set; program running"));
        Ok(())
    }

    /// The URL regex of the breakpoint file itself (and of the path given, when a symlink led
    /// to it: Node keeps that spelling with --preserve-symlinks).
    fn file_regex(&self) -> String {
        let mut paths = vec![self.plan.real_file.as_path()];
        if self.plan.file != self.plan.real_file {
            paths.push(self.plan.file.as_path());
        }
        node::file_url_regex(&paths)
    }

    /// Records where breakpoint `id` landed (a CDP location), in original coordinates when a
    /// map translates it, with the generated position alongside.
    fn resolved(&mut self, id: &str, location: &Value) {
        let Some(placed) = self.placed.iter().find(|p| p.id == id) else { return };
        let generated = Position {
            line: location["lineNumber"].as_u64().unwrap_or(0) as u32,
            column: location["columnNumber"].as_u64().unwrap_or(0) as u32,
        };
        let script = location["scriptId"].as_str().and_then(|s| self.scripts.get(s));
        let url = script.map(|(url, _)| node::file_url_to_path(url));
        match &placed.map {
            None => {
                if self.outcome.resolved_line.is_none() {
                    self.outcome.resolved_line = Some(generated.line + 1);
                }
            }
            Some((map, source)) => {
                let file = url.unwrap_or_default();
                self.outcome.generated.push(generated_json(&file, generated));
                if self.outcome.resolved_line.is_some() {
                    return;
                }
                if let Some((found, original)) = map.original_for(generated) {
                    self.outcome.resolved_line = Some(original.line + 1);
                    if found != *source {
                        let other = &map.sources()[found];
                        let name = other
                            .path
                            .as_ref()
                            .map_or(other.name.clone(), |p| p.display().to_string());
                        self.outcome.resolved_file = Some(name);
                    }
                }
            }
        }
    }

    /// The probe stopped the breakpoint file's module before its body (tsx and the like
    /// compile it while it loads): set the real breakpoint from the map it was compiled with,
    /// remove the probe, resume.
    fn place_at_load(&mut self, probe: String, frame: &Value) -> Result<(), Failure> {
        let script_id =
            frame.pointer("/location/scriptId").and_then(Value::as_str).unwrap_or_default();
        let (url, map_url) = self.scripts.get(script_id).cloned().unwrap_or_default();
        let line = self.plan.line - 1;
        let (position, map) = if map_url.is_empty() {
            // Compiled without a map (type stripping keeps lines): the lines are the source's.
            (Position { line, column: 0 }, None)
        } else {
            let map = maps::load_for_script(&url, &map_url).map_err(|e| {
                Failure::new(
                    "bad_source_map",
                    format!("the source map of {url} cannot be read: {e}"),
                )
            })?;
            let source =
                map.find_source(&self.plan.real_file).or_else(|| map.find_source(&self.plan.file));
            let found = source.and_then(|s| map.generated_for(s, line).map(|(_, p)| (s, p)));
            match found {
                Some((source, positions)) => (positions[0], Some((Arc::new(map), source))),
                None => {
                    return Err(Failure::new(
                        "no_code_at_line",
                        format!(
                            "no code at or after line {} of {} in the map it was compiled with",
                            self.plan.line,
                            self.plan.file.display()
                        ),
                    ))
                }
            }
        };
        let removed = self.client.send("Debugger.removeBreakpoint", json!({"breakpointId": probe}));
        self.answer(&removed)?;
        let set = self.client.send(
            "Debugger.setBreakpointByUrl",
            json!({"urlRegex": self.file_regex(), "lineNumber": position.line,
                   "columnNumber": position.column, "condition": self.condition}),
        );
        let set = self.answer(&set)?;
        let id = set["breakpointId"].as_str().unwrap_or_default().to_string();
        self.placed.push(Placed { id: id.clone(), map });
        if let Some(location) = set.pointer("/locations/0") {
            self.resolved(&id, location);
        }
        log::debug(format_args!(
            "breakpoint placed at load, generated {}:{}",
            position.line + 1,
            position.column + 1
        ));
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
                        self.handle_event(event)?;
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
                        if self.handle_event(event)? {
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
    fn handle_event(&mut self, mut event: Event) -> Result<bool, Failure> {
        match event.method.as_str() {
            "Runtime.bindingCalled" if event.params["name"] == self.binding.as_str() => {
                let payload = match event.params.get_mut("payload").map(Value::take) {
                    Some(Value::String(payload)) => payload,
                    _ => String::new(),
                };
                self.record_hit(payload);
            }
            "Debugger.paused" => {
                let hit = |id: &str| {
                    event.params["hitBreakpoints"]
                        .as_array()
                        .is_some_and(|ids| ids.iter().any(|hit| hit == id))
                };
                if let Probe::Waiting(probe) = &self.placement.probe {
                    if hit(probe) {
                        let probe = probe.clone();
                        self.placement.probe = Probe::Done;
                        self.place_at_load(probe, &event.params["callFrames"][0])?;
                    }
                }
                if self.placed.iter().any(|p| hit(&p.id)) {
                    self.attach_stack(&event.params["callFrames"]);
                }
                // Every pause is resumed: the initial break on start, `debugger;` statements,
                // the load-time probe, and the hits themselves when a stack was asked for.
                drop(self.client.send("Debugger.resume", json!({})));
            }
            "Debugger.breakpointResolved" => {
                let id = event.params["breakpointId"].as_str().unwrap_or_default().to_string();
                self.resolved(&id, &event.params["location"]);
            }
            "Debugger.scriptParsed" => {
                let text = |key: &str| event.params[key].as_str().unwrap_or_default().to_string();
                self.scripts.insert(text("scriptId"), (text("url"), text("sourceMapURL")));
            }
            "NodeRuntime.waitingForDisconnect" => return Ok(true),
            _ => {}
        }
        Ok(false)
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
            for placed in &self.placed {
                let params = json!({"breakpointId": placed.id});
                drop(self.client.send("Debugger.removeBreakpoint", params));
            }
        }
    }

    fn attach_stack(&mut self, frames: &Value) {
        let frames: Vec<Value> = frames
            .as_array()
            .map(|frames| frames.iter().take(STACK_FRAMES).map(|f| self.frame_json(f)).collect())
            .unwrap_or_default();
        // The result is a JSON object's text ending in `}`: add the field before it.
        let Some(last) = self.outcome.results.last_mut() else { return };
        if last.ends_with('}') {
            last.pop();
            last.push_str(&format!(r#","stack":{}}}"#, Value::from(frames)));
        }
    }

    /// One stack frame, in original coordinates when its script has a map (the generated
    /// position alongside).
    fn frame_json(&mut self, frame: &Value) -> Value {
        let name =
            frame["functionName"].as_str().filter(|n| !n.is_empty()).unwrap_or("(anonymous)");
        let script_id =
            frame.pointer("/location/scriptId").and_then(Value::as_str).unwrap_or_default();
        let (url, map_url) = self.scripts.get(script_id).cloned().unwrap_or_default();
        let url = frame["url"].as_str().filter(|u| !u.is_empty()).map_or(url, String::from);
        let generated = Position {
            line: frame.pointer("/location/lineNumber").and_then(Value::as_u64).unwrap_or(0) as u32,
            column: frame.pointer("/location/columnNumber").and_then(Value::as_u64).unwrap_or(0)
                as u32,
        };
        let file = node::file_url_to_path(&url);
        let map = if map_url.is_empty() {
            None
        } else {
            self.script_maps
                .entry(script_id.to_string())
                .or_insert_with(|| maps::load_for_script(&url, &map_url).ok().map(Arc::new))
                .clone()
        };
        match map
            .as_ref()
            .and_then(|m| m.original_for(generated).map(|(s, p)| (&m.sources()[s], p)))
        {
            Some((source, original)) => json!({
                "function": name,
                "file": source.path.as_ref().map_or(source.name.clone(), |p| p.display().to_string()),
                "line": original.line + 1,
                "generated": generated_json(&file, generated),
            }),
            None => json!({"function": name, "file": file, "line": generated.line + 1}),
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
        let no_map =
            self.placement.targets.is_empty() && matches!(self.placement.probe, Probe::Waiting(_));
        let failure = if no_map {
            // Not JavaScript, no map on disk, and the program never loaded the file itself.
            self.no_map_failure(exit)
        } else if self.outcome.timed_out {
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

    fn no_map_failure(&self, exit: Exit) -> Failure {
        let looked = if self.search.looked_at.is_empty() {
            "no JavaScript file with a source map next to the command's script".to_string()
        } else {
            self.search.looked_at.join("; ")
        };
        let ended = if self.outcome.timed_out {
            format!("the program was killed after {} ms", self.plan.timeout.as_millis())
        } else {
            format!("the program ended ({})", exit.describe())
        };
        Failure::new(
            "no_source_map",
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

    fn never_hit_hint(&self, exit: Exit) -> String {
        if !self.outcome.timed_out && exit.code != Some(0) {
            return format!(
                "the program failed ({}) before the breakpoint was reached: see its stderr",
                exit.describe()
            );
        }
        match (self.outcome.resolved_line, &self.plan.condition) {
            (None, _) if !self.placement.targets.is_empty() => {
                let files: Vec<String> = self
                    .placement
                    .targets
                    .iter()
                    .map(|t| t.generated.display().to_string())
                    .collect();
                let direct = if self.placement.direct {
                    format!("no script loaded from {} itself, and ", self.plan.file.display())
                } else {
                    String::new()
                };
                format!(
                    "the breakpoint never bound: {direct}its source map places it in {}, none of \
                     which the program loaded (is that the build the command runs?)",
                    files.join(", ")
                )
            }
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
