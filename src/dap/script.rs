//! One `debug-script` run through a debug adapter: lldb-dap, Delve, gdb, rdbg and the adapters
//! named in `debug-mcp.json` (the native [`Flavour`]s; Python runs on its own tracer,
//! `python::trace`).
//!
//! The first hit stops the program and is read at its stop through the adapter's `evaluate`
//! (and `variables` one level down). In a program with one thread, once a value's text says it
//! whole, the breakpoint becomes a logpoint that writes that text ([`Run::after_plain_hit`]):
//! later hits do not stop. `includeStack`, probes and failures are read at their stops.
//!
//! The ordering every adapter takes: `initialize`, then `launch` (some answer it only after
//! `configurationDone`), the `initialized` event, breakpoints, `configurationDone`. An adapter
//! may stay after `disconnect`, and the program runs in its own process group: both are
//! killed at the end.

use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver};
use serde_json::{json, Value};

use crate::call::Call;
use crate::dap::failures;
use crate::dap::flavour::{Flavour, Launched};
use crate::dap::{self, Client, Reply};
use crate::debugger::backend::{Input, Inputs};
use crate::debugger::calls::Calls;
use crate::debugger::model::Undebugged;
use crate::debugger::runs::Runs;
use crate::debugger::script::{Collector, Debugged, Hit, Outcome, Plan, Step};
use crate::debugger::{Code, Failure};
use crate::log;
use crate::process::{self, Debuggee, Exit};
use crate::shell::CommandLine;
use crate::sys;
use ahead::{Ahead, Sent};

mod ahead;
mod calls;
mod hang;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the adapter may take to leave after its stdin closes (debugpy #672).
const ADAPTER_GRACE: Duration = Duration::from_secs(2);
/// How long an adapter that says the program's output in events is quiet before its last is
/// taken to be said (100 ms lost gdb's last line once, with CI's tests running beside it).
const OUTPUT_QUIET: Duration = Duration::from_millis(300);
/// Frames reported per hit with `includeStack`.
const STACK_FRAMES: usize = 10;
/// How long after a stop the adapter's reports of other threads at the same stop may still
/// be on their way (lldb-dap writes them one after another).
const SAME_STOP: Duration = Duration::from_millis(3);

/// Runs each program in turn (`go test ./...`'s packages, `cargo test`'s test programs; most
/// commands run one), each with its own adapter, into one answer; `notes` say what was left
/// out before; with `fail_fast` (why), none runs after one that failed.
pub(crate) fn run_each<F: Flavour>(
    programs: Vec<(CommandLine, F)>,
    notes: Vec<String>,
    fail_fast: Option<&str>,
    plan: &Plan,
    call: &Call,
) -> Result<Outcome, Failure> {
    let mut failed = false;
    let deadline = Instant::now() + plan.timeout;
    let mut runs = Runs::new(plan, deadline);
    for note in notes {
        runs.note(note);
    }
    // The next program's adapter starts while one runs.
    let mut ahead: Option<Ahead> = None;
    for (i, (command, flavour)) in programs.iter().enumerate() {
        // Dropped after the run (declared before it): its thread outlives the adapter.
        let current = ahead.take();
        let shown = command.words.join(" ");
        if let Some(why) = runs.over().or(fail_fast.filter(|_| failed)) {
            runs.skip(&shown, why);
            continue;
        }
        ahead = programs.get(i + 1).map(|(command, flavour)| Ahead::start(command, flavour));
        let plan = Plan { command: command.clone(), ..plan.clone() };
        if let Some(preparing) = flavour.preparing() {
            call.progress.report(0, || preparing);
        }
        let launched = match &current {
            Some(current) => current.launched().map(|(launched, sent)| (launched, Some(sent))),
            None => flavour.start(&plan.command, false).map(|launched| (launched, None)),
        };
        let (launched, sent) = match launched {
            Ok(launched) => launched,
            Err(failure) => {
                runs.not_started(&shown, failure)?;
                continue;
            }
        };
        let mut run = Run::start(flavour.clone(), launched, sent, &plan, call, deadline);
        let started = run.setup();
        let exit = runs.run(&mut run, started, &plan, call, &shown)?;
        failed |= exit.is_some_and(|e| e.code != Some(0));
    }
    runs.finish()
}

impl<'a, F: Flavour> Run<'a, F> {
    fn start(
        flavour: F,
        launched: Launched,
        sent: Option<Sent>,
        plan: &'a Plan,
        call: &'a Call,
        deadline: Instant,
    ) -> Run<'a, F> {
        let Launched { client, adapter, arguments, label, request, output, .. } = launched;
        Run::<F> {
            flavour,
            plan,
            call,
            client,
            adapter,
            label,
            deadline,
            debuggee: None,
            hits: 0,
            exit_code: None,
            fatal_signal: None,
            resolved_line: None,
            output_said: output.is_none(),
            output: output.unwrap_or_default(),
            no_code: None,
            logpoints: false,
            logged: None,
            terminated: false,
            pending: std::collections::VecDeque::new(),
            resume: None,
            configured: false,
            failure_ids: Vec::new(),
            probe_ids: Vec::new(),
            probe_lines: Vec::new(),
            read_ahead: Vec::new(),
            go_logs: Default::default(),
            launch: Some((request, arguments)),
            sent,
            child: None,
            later: Default::default(),
            failures_read: Vec::new(),
            holding: None,
            calls: None,
        }
    }
}

struct Run<'a, F> {
    flavour: F,
    plan: &'a Plan,
    call: &'a Call,
    client: Client,
    adapter: Debuggee,
    /// What runs the adapter, for the words of a failure.
    label: String,
    deadline: Instant,
    /// The program's pid (it runs in its own process group), from the `process` event.
    debuggee: Option<sys::ProcessGroup>,
    hits: u64,
    exit_code: Option<i32>,
    /// A signal the program stopped at (`signal SIGABRT`): lldb says its end by it as an exit
    /// code of the signal's number.
    fatal_signal: Option<i32>,
    /// Where the adapter placed the breakpoint.
    resolved_line: Option<u32>,
    /// The program's stdout and stderr, from `output` events.
    output: process::Output,
    /// The program's output comes in the adapter's `output` events (gdb's), not from streams
    /// of its own.
    output_said: bool,
    /// Why the breakpoint can never stop, when the adapter says so.
    no_code: Option<String>,
    /// Whether the adapter has logpoints (`supportsLogPoints`).
    logpoints: bool,
    /// The type of the expression's value once a logpoint reports its text.
    logged: Option<String>,
    /// The adapter said `terminated`: `end` disconnects and reads what it says before.
    terminated: bool,
    /// Hits of other threads stopped at the breakpoint at the same moment, reported one by
    /// one before the program goes on.
    pending: std::collections::VecDeque<Hit>,
    /// The stopped thread to continue once `pending` is reported, or once configuration is
    /// done.
    resume: Option<Value>,
    /// `configurationDone` was answered.
    configured: bool,
    /// With `failures`: the ids of the breakpoints at the flavour's failure functions.
    failure_ids: Vec<i64>,
    /// With `probes`: each probe's breakpoint id (with its index), and the line it landed on.
    probe_ids: Vec<(i64, usize)>,
    probe_lines: Vec<Option<u32>>,
    /// The threads `simultaneous` read at the last stop, and where (their instruction).
    read_ahead: Vec<(Value, Option<Value>)>,
    /// With `failures`: how much of each Go test's log its earlier failures read.
    go_logs: std::collections::HashMap<String, usize>,
    /// The `launch` (or `attach`) request and its arguments, until `setup` sends them.
    launch: Option<(&'static str, Value)>,
    /// `initialize` and `launch` sent ahead (`Ahead`), their answers to read.
    sent: Option<Sent>,
    /// The program's pid when the adapter does not say it (Delve's child), once found.
    child: Option<u32>,
    /// What is due before the next event: steps read beside a stop (other threads' failures
    /// and hits of the same stop), and events read while looking for them.
    later: std::collections::VecDeque<Later>,
    /// With `failures`: threads whose failure was read beside another's, whose own report of
    /// that stop comes later.
    failures_read: Vec<Value>,
    /// While other threads' reports of one stop are read: the thread to go on with after.
    holding: Option<Option<Value>>,
    /// With `calls`: the traced functions and the calls under way.
    calls: Option<calls::Tracer>,
}

impl<F: Flavour> Run<'_, F> {
    fn answer(&mut self, reply: &Receiver<Reply>) -> Result<Value, Failure> {
        let limit = self.deadline.min(Instant::now() + REQUEST_TIMEOUT);
        let exited = self.adapter.exited().clone();
        select! {
            recv(reply) -> answer => match answer {
                Ok(Ok(body)) => Ok(body),
                // A request fails when the adapter ends, too: then say why it ended.
                Ok(Err(_)) | Err(_) if self.adapter_ended() => Err(self.adapter_gone()),
                Ok(Err(message)) => Err(Failure::new(Code::AdapterFailed, format!("{}: {message}", self.flavour.adapter()))),
                Err(_) => Err(self.adapter_gone()),
            },
            recv(exited) -> exit => {
                if let Ok(exit) = exit {
                    self.adapter.record_exit(exit);
                }
                Err(self.adapter_gone())
            },
            recv(self.call.cancel) -> _ => Err(Failure::Cancelled),
            recv(crossbeam_channel::at(limit)) -> _ => Err(Failure::new(
                Code::AdapterFailed,
                format!("{} did not answer in time", self.flavour.adapter()),
            )),
        }
    }

    fn adapter_ended(&mut self) -> bool {
        if self.adapter.try_exit().is_some() {
            return true;
        }
        match self.adapter.exited().recv_timeout(Duration::from_millis(300)) {
            Ok(exit) => {
                self.adapter.record_exit(exit);
                true
            }
            Err(_) => false,
        }
    }

    /// The adapter ended early: why, in its words (debugpy: most often it is not installed).
    fn adapter_gone(&mut self) -> Failure {
        self.flavour.adapter_failed(&mut self.adapter, &self.client, &self.label)
    }

    /// The `launch` (or `attach`) request with its arguments, and the configuration.
    fn setup(&mut self) -> Result<(), Failure> {
        let (request, arguments) = self.launch.take().expect("set up once");
        if !self.plan.calls.is_empty() {
            let tracer = calls::Tracer::new(&self.flavour, &self.plan.calls, self.plan.max_calls)?;
            self.calls = Some(tracer);
        }
        let (initialize, launch) = match self.sent.take() {
            Some((initialize, launch)) => (initialize, Some(launch)),
            None => {
                let arguments = dap::initialize_arguments(self.flavour.adapter());
                (self.client.send("initialize", arguments), None)
            }
        };
        self.logpoints = self.answer(&initialize)?["supportsLogPoints"] == true;
        // debugpy answers `launch` only after `configurationDone`.
        let mut launch = launch.unwrap_or_else(|| self.client.send(request, arguments));
        self.until_initialized(&mut launch)?;
        if !self.plan.probes.is_empty() {
            self.set_probes()?;
        } else if self.plan.has_breakpoint() {
            self.set_breakpoint()?;
        }
        self.set_calls()?;
        let functions = self.flavour.failure_functions();
        if self.plan.failures.is_some() && !functions.is_empty() {
            let names: Vec<Value> = functions.iter().map(|name| json!({"name": name})).collect();
            let set = self.client.send("setFunctionBreakpoints", json!({"breakpoints": names}));
            // A program without the function (no tests, no panic) cannot fail there.
            let set = self.answer(&set).unwrap_or_default();
            let placed = set["breakpoints"].as_array().into_iter().flatten();
            self.failure_ids = placed.filter_map(|b| b["id"].as_i64()).collect();
        }
        if let Some(why) = &self.no_code {
            let message = format!("line {} of {}: {why}", self.plan.line, self.plan.file.display());
            return Err(Failure::new(Code::NoCodeAtLine, message));
        }
        let exceptions = self.client.send("setExceptionBreakpoints", json!({"filters": []}));
        self.answer(&exceptions)?;
        let done = self.client.send("configurationDone", json!({}));
        let done = self.answer(&done);
        // gdb answers a failed `launch` only after `initialized`: that failure is the one
        // that explains a refused configurationDone.
        match launch.try_recv() {
            Ok(Err(message)) => return Err(self.launch_failed(&message)),
            Ok(Ok(body)) => launch = dap::answered(body),
            Err(_) => {}
        }
        done?;
        self.configured = true;
        if let Some(thread) = self.resume.take() {
            self.go_on(&thread)?;
        }
        match self.answer(&launch) {
            Err(Failure::Error { code: Code::AdapterFailed, message, .. })
                if !self.adapter_ended() =>
            {
                let message = message.split_once(": ").map_or(message.as_str(), |(_, m)| m);
                Err(self.launch_failed(message))
            }
            other => other.map(drop),
        }
    }

    fn launch_failed(&self, message: &str) -> Failure {
        dap::Said::default().launch_failed(self.flavour.adapter(), message)
    }

    /// Waits for the `initialized` event; a failed `launch` answer before it aborts.
    /// A launch answered before it (lldb-dap answers at once) is kept in `launch` for later.
    fn until_initialized(&mut self, launch: &mut Receiver<Reply>) -> Result<(), Failure> {
        let events = self.client.events().clone();
        let limit = crossbeam_channel::at(self.deadline.min(Instant::now() + REQUEST_TIMEOUT));
        let mut answered = None;
        let mut said = dap::Said::default();
        loop {
            let waiting = if answered.is_some() { &crossbeam_channel::never() } else { &*launch };
            select! {
                recv(events) -> event => match event {
                    Ok(event) if event["event"] == "initialized" => break,
                    Ok(event) => {
                        said.hear(&event);
                        drop(self.handle_event(event)?);
                    }
                    Err(_) => return Err(self.adapter_gone()),
                },
                recv(waiting) -> answer => {
                    if let Ok(Ok(body)) = answer {
                        answered = Some(body);
                        continue;
                    }
                    let message = match answer {
                        Ok(Err(message)) => message,
                        _ => "launch ended early".into(),
                    };
                    return Err(said.hear_waiting(&events).launch_failed(self.flavour.adapter(), &message));
                },
                recv(limit) -> _ => return Err(Failure::new(Code::AdapterFailed, format!("{} did not get ready in time", self.flavour.adapter()))),
                recv(self.call.cancel) -> _ => return Err(Failure::Cancelled),
            }
        }
        if let Some(body) = answered {
            *launch = dap::answered(body);
        }
        Ok(())
    }

    fn breakpoint_changed(&mut self, breakpoint: &Value) {
        match self.flavour.placed_line(breakpoint) {
            Ok(Some(line)) if breakpoint["verified"] == true => {
                self.resolved_line = u32::try_from(line).ok();
            }
            Ok(_) => {}
            Err(why) => self.no_code = Some(why),
        }
    }

    /// The breakpoint as `setBreakpoints` arguments.
    fn breakpoints(&self) -> Value {
        let mut breakpoint = json!({"line": self.plan.line});
        if let Some(condition) = &self.plan.condition {
            breakpoint["condition"] = condition.as_str().into();
        }
        // The first hit stops; once its value's type is known and its text says it whole, a
        // logpoint writes the text (`after_plain_hit`).
        if self.logged.is_some() && !self.plan.include_stack {
            let template = format!("{{{}}}", self.plan.expression);
            let message = self.flavour.logpoint_message("hit", &template, true);
            breakpoint["logMessage"] = message.into();
        }
        let mut breakpoints = vec![breakpoint];
        breakpoints.extend(self.call_lines(&self.plan.file).into_iter().map(|(_, line)| line));
        json!({"source": {"path": self.source_path()}, "breakpoints": breakpoints})
    }

    /// Sets the breakpoint (with the traced functions' of its file), and says where it landed.
    fn set_breakpoint(&mut self) -> Result<(), Failure> {
        let set = self.client.send("setBreakpoints", self.breakpoints());
        let set = self.answer(&set)?;
        self.breakpoint_changed(&set["breakpoints"][0]);
        self.calls_placed(&self.plan.file, &set["breakpoints"], 1);
        Ok(())
    }

    fn handle_event(&mut self, event: Value) -> Result<Step, Failure> {
        if event["type"] == "request" {
            self.client.refuse(&event);
            return Ok(Step::Go);
        }
        let body = &event["body"];
        match event["event"].as_str().unwrap_or_default() {
            "output" => {
                if let Some(code) = self.flavour.exit_said(body) {
                    self.exit_code = Some(code);
                    return Ok(if self.terminated { Step::Finished } else { Step::Go });
                }
                let message = dap::route_output(&self.flavour, body, &mut self.output);
                if let (Some(message), Some(kind)) = (message, &self.logged) {
                    let hit = self.logged_hit(kind, message);
                    return Ok(Step::Hit(self.tag(hit)));
                }
            }
            "process" => self.debuggee = dap::process_group(body),
            "exited" => {
                self.exit_code = body["exitCode"].as_i64().and_then(|c| i32::try_from(c).ok())
            }
            "breakpoint" => self.breakpoint_changed(&body["breakpoint"]),
            "stopped" => return self.stopped(body),
            // What the adapter still has to say (Delve's exit code, gdb's last output) comes
            // when `end` disconnects (waiting for it here cost half a second each run).
            "terminated" => {
                self.terminated = true;
                return Ok(Step::Finished);
            }
            _ => {}
        }
        Ok(Step::Go)
    }

    /// A stop. lldb-dap says one stop of several threads (two tests failing at once, two
    /// threads at a probe) as one `stopped` event per thread, sent together: each is read
    /// before the program goes on, once (read after, the other threads are found running).
    fn stopped(&mut self, body: &Value) -> Result<Step, Failure> {
        if body["allThreadsStopped"] != true || self.holding.is_some() {
            return self.stop(body);
        }
        // lldb-dap sends them one after the other as the stop happens (the first says
        // `threadCausedFocus`): those not yet read from its pipe come within a moment. A
        // program of one thread has none to wait for.
        let grace = match body["threadCausedFocus"] == true && self.several_threads()? {
            true => SAME_STOP,
            false => Duration::ZERO,
        };
        let mut others = Vec::new();
        while let Ok(event) = self.client.events().recv_timeout(grace) {
            match event["event"] == "stopped" && event["body"]["allThreadsStopped"] == true {
                true => others.push(event),
                false => self.later.push_back(Later::Event(event)),
            }
        }
        if others.is_empty() {
            return self.stop(body);
        }
        self.holding = Some(None);
        let first = self.stop(body);
        let rest: Vec<Result<Step, Failure>> =
            others.iter().map(|other| self.stop(&other["body"])).collect();
        if let Some(thread) = self.holding.take().flatten() {
            self.go_on(&thread)?;
        }
        for step in rest {
            self.later.push_back(Later::Step(step?));
        }
        first
    }

    /// Whether the stopped program has more than one thread.
    fn several_threads(&mut self) -> Result<bool, Failure> {
        let threads = self.client.send("threads", json!({}));
        Ok(self.answer(&threads)?["threads"].as_array().is_some_and(|t| t.len() > 1))
    }

    /// One thread's stop: a probe's, a failure's or the breakpoint's hit is read (with
    /// `includeStack`, its frames too), then the program goes on.
    fn stop(&mut self, body: &Value) -> Result<Step, Failure> {
        let thread = body["threadId"].clone();
        let mut step = Step::Go;
        let reason = body["reason"].as_str().unwrap_or_default();
        if let Some(signal) = dap::stop_signal(body) {
            self.fatal_signal = Some(signal);
        }
        if self.configured && self.call_stop(body)?.is_some() {
            return Ok(step);
        }
        if let Some(index) = self.probe_stopped(body) {
            let step = self.probe_hit(&thread, index)?;
            self.go_on(&thread)?;
            return Ok(step);
        }
        // lldb-dap says a function breakpoint's stop is a breakpoint's: told by its id.
        let ids = body["hitBreakpointIds"].as_array().into_iter().flatten();
        let at_function = reason == "function breakpoint"
            || ids.filter_map(Value::as_i64).any(|id| self.failure_ids.contains(&id));
        if self.plan.failures.is_some()
            && self.configured
            && (at_function || failures::may_be_failure(reason))
        {
            // Read already, beside another thread's failure at the same stop: lldb-dap says
            // that stop once per thread, and the program has gone on since.
            if let Some(read) = self.failures_read.iter().position(|t| t == &thread) {
                self.failures_read.remove(read);
                let _ = self.go_on(&thread);
                return Ok(Step::Go);
            }
            if let Some(failure) = self.failure(body, at_function)? {
                step = Step::Failed(failure);
            }
            if at_function {
                self.failures_beside(&thread)?;
            }
            self.go_on(&thread)?;
            return Ok(step);
        }
        if body["reason"] == "breakpoint" {
            let levels = if self.plan.include_stack { STACK_FRAMES } else { 1 };
            let trace =
                self.client.send("stackTrace", json!({"threadId": thread, "levels": levels}));
            let trace = self.answer(&trace)?;
            let frames = dap::program_frames(&self.flavour, &trace);
            // A thread read at the last stop (`simultaneous`) that Delve reports now, at the
            // same instruction, had not run past the breakpoint: the same hit, read already.
            let at =
                (thread.clone(), frames.first().map(|f| f["instructionPointerReference"].clone()));
            if let Some(read) = self.read_ahead.iter().position(|r| r == &at && at.1.is_some()) {
                self.read_ahead.remove(read);
                self.go_on(&thread)?;
                return Ok(Step::Go);
            }
            let frame_id = frames.first().map(|f| f["id"].clone()).unwrap_or(Value::Null);
            let (mut hit, whole) = self.plain_hit(&frame_id)?;
            let top = frames.first().cloned().unwrap_or_default();
            self.after_plain_hit(&thread, &top, whole)?;
            if self.plan.include_stack {
                hit.stack = Some(stack_of(&frames));
            }
            step = Step::Hit(self.tag(hit));
        }
        // A stop before `configurationDone` (rdbg's as it loads the program) goes on after it,
        // once the breakpoint is set; one with hits held back, after they are reported.
        if !self.pending.is_empty() || !self.configured {
            self.resume = Some(thread);
            return Ok(step);
        }
        // Anything else (an exception we did not ask for) just goes on.
        self.go_on(&thread)?;
        Ok(step)
    }

    /// Lets a stopped thread go on.
    fn go_on(&mut self, thread: &Value) -> Result<(), Failure> {
        // Other threads' reports of the same stop are read first (`stopped`).
        if let Some(held) = &mut self.holding {
            *held = Some(thread.clone());
            return Ok(());
        }
        let resumed = self.client.send("continue", json!({"threadId": thread}));
        self.answer(&resumed).map(drop)
    }

    /// A request and its answer, `None` if refused.
    fn ask(&mut self, command: &str, arguments: Value) -> Option<Value> {
        let reply = self.client.send(command, arguments);
        self.answer(&reply).ok()
    }

    /// With `probes`: one breakpoint per probe (stopping: each hit is read at its stop), set
    /// file by file; where each landed, and its id.
    fn set_probes(&mut self) -> Result<(), Failure> {
        self.probe_lines = vec![None; self.plan.probes.len()];
        let mut files: Vec<&std::path::Path> = Vec::new();
        for probe in &self.plan.probes {
            if !files.contains(&probe.file.as_path()) {
                files.push(&probe.file);
            }
        }
        for file in files {
            let indexes: Vec<usize> =
                (0..self.plan.probes.len()).filter(|&i| self.plan.probes[i].file == file).collect();
            let lines: Vec<Value> = indexes
                .iter()
                .map(|&i| {
                    let probe = &self.plan.probes[i];
                    let mut line = json!({"line": probe.line});
                    if let Some(condition) = &probe.condition {
                        line["condition"] = condition.as_str().into();
                    }
                    line
                })
                .collect();
            let mut lines = lines;
            lines.extend(self.call_lines(file).into_iter().map(|(_, line)| line));
            let real = &self.plan.probes[indexes[0]].real_file;
            let path = self.flavour.breakpoint_path(file, real).display().to_string();
            let set = self
                .client
                .send("setBreakpoints", json!({"source": {"path": path}, "breakpoints": lines}));
            let set = self.answer(&set)?;
            self.calls_placed(file, &set["breakpoints"], indexes.len());
            let placed = set["breakpoints"].as_array().cloned().unwrap_or_default();
            for (&index, breakpoint) in indexes.iter().zip(&placed) {
                if let Some(id) = breakpoint["id"].as_i64() {
                    self.probe_ids.push((id, index));
                }
                if let Ok(Some(line)) = self.flavour.placed_line(breakpoint) {
                    self.probe_lines[index] = u32::try_from(line).ok();
                }
            }
        }
        Ok(())
    }

    /// The probe a stop is at, by its breakpoint's id.
    fn probe_stopped(&self, body: &Value) -> Option<usize> {
        if self.plan.probes.is_empty() || body["reason"] != "breakpoint" {
            return None;
        }
        let ids = body["hitBreakpointIds"].as_array()?;
        ids.iter()
            .filter_map(Value::as_i64)
            .find_map(|id| self.probe_ids.iter().find(|(i, _)| *i == id).map(|(_, index)| *index))
    }

    /// A probe's hit at its stop: its expression's value, or the frame's locals.
    fn probe_hit(&mut self, thread: &Value, index: usize) -> Result<Step, Failure> {
        let trace = self.client.send("stackTrace", json!({"threadId": thread, "levels": 1}));
        let trace = self.answer(&trace)?;
        let frame_id = trace["stackFrames"][0]["id"].clone();
        let hit = match self.plan.probes[index].expression.clone() {
            Some(expression) => self.evaluated_hit(&frame_id, &expression)?.0,
            None => {
                let flavour = self.flavour.clone();
                let mut ask = |command: &str, arguments: Value| self.ask(command, arguments);
                let locals = failures::locals(&flavour, &frame_id, &mut ask);
                let result = format!(r#"{{"locals":{locals}}}"#);
                Hit { result, truncated: false, stack: None, from: None }
            }
        };
        Ok(Step::Hit(self.tag(hit.of_probe(index))))
    }

    /// The failure a stop is, if it is one (see `dap::failures`): its record, with the
    /// process and, for a thread the adapter names (a `cargo test` test), the test.
    fn failure(&mut self, body: &Value, at_function: bool) -> Result<Option<Value>, Failure> {
        let thread = body["threadId"].clone();
        let trace = self.client.send("stackTrace", json!({"threadId": thread, "levels": 40}));
        let trace = self.answer(&trace)?;
        let frames = dap::program_frames(&self.flavour, &trace);
        let flavour = self.flavour.clone();
        let mut go_logs = std::mem::take(&mut self.go_logs);
        let record = {
            let mut ask = |command: &str, arguments: Value| self.ask(command, arguments);
            failures::record(&flavour, body, at_function, &frames, &mut go_logs, &mut ask)
        };
        self.go_logs = go_logs;
        let fatal = !at_function && body["reason"] == "exception" && flavour.language() == "go";
        let Some(mut record) = record.or_else(|| fatal.then(|| self.fatal_of_the_runtime(body))?)
        else {
            return Ok(None);
        };
        let mut ask = |command: &str, arguments: Value| self.ask(command, arguments);
        if record.get("test").is_none() && record["kind"] == "panic" {
            let threads = ask("threads", json!({})).unwrap_or_default();
            let named =
                threads["threads"].as_array().into_iter().flatten().find(|t| t["id"] == thread);
            // A test harness names each test's thread after the test (`tests::adds`); the main
            // thread is named after the test binary (`orders-0123456789abcdef`).
            let binary = |name: &str| {
                name.rsplit_once('-').is_some_and(|(_, hash)| {
                    hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit())
                })
            };
            let name = named.and_then(|t| t["name"].as_str());
            let name = name.filter(|n| !n.is_empty() && !binary(n));
            // The thread's name is cut at 15 bytes (Linux's limit): the test's function in
            // the frames says it whole.
            let whole = failures::rust_test(&frames)
                .filter(|whole| name.is_none_or(|name| whole.starts_with(name)));
            if let Some(test) = whole.or(name.map(String::from)) {
                record["test"] = test.into();
            }
        }
        if let Some(pid) = self.program_pid() {
            record["process"] = pid.into();
        }
        Ok(Some(record))
    }

    /// The program's pid: said by the adapter (`process`), or, for an adapter that does not
    /// say it (Delve), its child that is not Go's toolchain building it.
    fn program_pid(&mut self) -> Option<u32> {
        if let Some(group) = self.debuggee {
            return Some(group.pid());
        }
        if self.child.is_none() {
            let adapter = self.adapter.pid();
            let program = |d: &crate::process::Descendant| {
                let first = d.command.split_whitespace().next().unwrap_or_default();
                d.parent == adapter && first != "go" && !first.ends_with("/go")
            };
            let descendants = self.adapter.descendants(None).into_iter();
            self.child = descendants.filter(program).map(|d| d.process.pid).next_back();
        }
        self.child
    }

    /// The hits of other threads stopped at the same line as `top`, the hit just read (at
    /// `thread`). Delve reports one goroutine per stop and, most often, steps the others that
    /// stand on the breakpoint past it when the program goes on: their hits would be lost.
    /// When it does report one of them next, at the same instruction, that stop is passed
    /// over (`read_ahead`). Only threads whose
    /// name says the same function are looked at (Delve names goroutines by where they are);
    /// with a condition, it must hold for them too.
    fn simultaneous(
        &mut self,
        thread: &Value,
        top: &Value,
        threads: &[Value],
    ) -> Result<(), Failure> {
        let function = top["name"].as_str().unwrap_or_default();
        if function.is_empty() {
            return Ok(());
        }
        let others: Vec<Value> = threads
            .iter()
            .filter(|t| &t["id"] != thread)
            .filter(|t| t["name"].as_str().is_some_and(|n| n.contains(function)))
            .map(|t| t["id"].clone())
            .collect();
        let levels = if self.plan.include_stack { STACK_FRAMES } else { 1 };
        self.read_ahead.clear();
        for other in others {
            let trace =
                self.client.send("stackTrace", json!({"threadId": other, "levels": levels}));
            let trace = self.answer(&trace)?;
            let frames = dap::program_frames(&self.flavour, &trace);
            let Some(frame) = frames.first() else { continue };
            let same = |key: &str| frame.pointer(key) == top.pointer(key);
            // At the breakpoint's own instruction: one further on the line has run past it.
            if !(same("/source/path") && same("/line") && same("/instructionPointerReference")) {
                continue;
            }
            if let Some(condition) = self.plan.condition.clone() {
                let arguments =
                    json!({"expression": condition, "frameId": frame["id"], "context": "watch"});
                let held = self.client.send("evaluate", arguments);
                let held = self.answer(&held).ok();
                let text = held.as_ref().and_then(|h| h["result"].as_str()).unwrap_or("false");
                if matches!(text, "false" | "0") {
                    continue;
                }
            }
            let (mut hit, _) = self.plain_hit(&frame["id"])?;
            if self.plan.include_stack {
                hit.stack = Some(stack_of(&frames));
            }
            self.pending.push_back(hit);
            self.read_ahead.push((other, Some(frame["instructionPointerReference"].clone())));
        }
        Ok(())
    }

    /// At a failure stop of `thread`: the other threads stopped at a failure function too
    /// (two tests that fail at once, in parallel), read now, before the program goes on and
    /// the adapter forgets they stopped there; their records wait in `later`.
    fn failures_beside(&mut self, thread: &Value) -> Result<(), Failure> {
        let threads = self.client.send("threads", json!({}));
        let threads = self.answer(&threads)?;
        let others: Vec<Value> = (threads["threads"].as_array().into_iter().flatten())
            .map(|t| t["id"].clone())
            .filter(|id| id != thread)
            .collect();
        let functions = self.flavour.failure_functions();
        for other in others {
            let trace = self.client.send("stackTrace", json!({"threadId": other, "levels": 1}));
            let Ok(trace) = self.answer(&trace) else { continue };
            let top = trace["stackFrames"][0]["name"].as_str().unwrap_or_default();
            if !functions.iter().any(|f| top.contains(f)) {
                continue;
            }
            let body = json!({"threadId": other, "reason": "function breakpoint"});
            if let Some(failure) = self.failure(&body, true)? {
                self.later.push_back(Later::Step(Step::Failed(failure)));
            }
            self.failures_read.push(other);
        }
        Ok(())
    }

    /// The next hit held in `pending`; the program goes on after the last.
    fn next_pending(&mut self) -> Result<Step, Failure> {
        match self.later.pop_front() {
            Some(Later::Step(step)) => return Ok(step),
            Some(Later::Event(event)) => return self.handle_event(event),
            None => {}
        }
        let Some(hit) = self.pending.pop_front() else { return Ok(Step::Go) };
        let hit = self.tag(hit);
        if self.pending.is_empty() {
            if let Some(thread) = self.resume.take() {
                self.go_on(&thread)?;
            }
        }
        Ok(Step::Hit(hit))
    }

    /// The breakpoint's file as the adapter knows it ([`Flavour::breakpoint_path`]).
    fn source_path(&self) -> String {
        let path = self.flavour.breakpoint_path(&self.plan.file, &self.plan.real_file);
        path.display().to_string()
    }

    /// A hit read at its stop through the adapter's own `evaluate`, and its type when its text
    /// says the whole value (nothing was read one level down).
    fn plain_hit(&mut self, frame_id: &Value) -> Result<(Hit, Option<String>), Failure> {
        let expression = self.plan.expression.clone();
        self.evaluated_hit(frame_id, &expression)
    }

    /// `expression` read at a stop through the adapter's own `evaluate` (see `plain_hit`).
    fn evaluated_hit(
        &mut self,
        frame_id: &Value,
        expression: &str,
    ) -> Result<(Hit, Option<String>), Failure> {
        let arguments = json!({"expression": expression, "frameId": frame_id, "context": "watch"});
        let evaluated = self.client.send("evaluate", arguments);
        let answer = match self.answer(&evaluated) {
            Ok(answer) => answer,
            Err(Failure::Error { message, .. }) => {
                let result = dap::evaluation_error(&self.flavour, &message).to_string();
                return Ok((Hit { result, truncated: false, stack: None, from: None }, None));
            }
            Err(other) => return Err(other),
        };
        let flavour = self.flavour.clone();
        let mut expanded = false;
        let typed = dap::typed(&flavour, &answer, |reference| {
            expanded = true;
            let listed = self.client.send("variables", json!({"variablesReference": reference}));
            let listed = self.answer(&listed).unwrap_or_default();
            listed["variables"].as_array().cloned().unwrap_or_default()
        });
        let kind = typed["type"].as_str().filter(|t| !t.is_empty() && !expanded);
        let whole = kind.map(String::from);
        let truncated = typed["truncated"] == true;
        Ok((Hit { result: typed.to_string(), truncated, stack: None, from: None }, whole))
    }

    /// After a hit read at its stop, one `threads` answer decides what comes next. A program
    /// with one thread turns the breakpoint into a logpoint once a value's text says it whole
    /// ([`Run::logged`]): the type of an expression at one line does not change in a compiled
    /// language, and a logpoint does not stop the program for us. With several threads the
    /// breakpoint stays (changing it could lose another thread's hit at it), and the other
    /// threads at it are read now ([`Run::simultaneous`]).
    fn after_plain_hit(
        &mut self,
        thread: &Value,
        top: &Value,
        whole: Option<String>,
    ) -> Result<(), Failure> {
        let threads = self.client.send("threads", json!({}));
        let threads = self.answer(&threads)?;
        let threads = threads["threads"].as_array().cloned().unwrap_or_default();
        match whole {
            Some(kind) if threads.len() == 1 && self.logpoints && !self.plan.include_stack => {
                self.logged = Some(kind);
                self.set_breakpoint()?;
            }
            _ if threads.len() > 1 => self.simultaneous(thread, top, &threads)?,
            _ => {}
        }
        Ok(())
    }

    /// A hit a logpoint reported as text: typed as the first hit's value was.
    fn logged_hit(&self, kind: &str, message: &str) -> Hit {
        let text = message.trim_end_matches(['\n', '\r']);
        let text = self.flavour.logpoint_owner(text).map_or(text, |(_, text)| text);
        let result = json!({"type": kind, "value": self.flavour.value(kind, text)}).to_string();
        Hit { result, truncated: false, stack: None, from: None }
    }

    /// Says which process a hit ran in, and counts it.
    fn tag(&mut self, mut hit: Hit) -> Hit {
        self.hits += 1;
        hit.from = self.program_pid().map(|pid| format!(r#""pid":{pid}"#));
        hit
    }

    fn kill_all(&mut self) {
        if let Some(group) = self.debuggee {
            group.kill();
        }
        self.adapter.kill();
    }
}

/// What a run has to report before its next event.
enum Later {
    Step(Step),
    Event(Value),
}

/// A hit's `stack` with `includeStack`: each frame's function, file and line.
fn stack_of(frames: &[Value]) -> Vec<Value> {
    let frame = |f: &Value| {
        let file = f.pointer("/source/path").cloned().unwrap_or(Value::Null);
        json!({"function": f["name"], "file": file, "line": f["line"]})
    };
    frames.iter().map(frame).collect()
}

impl<F: Flavour> Collector for Run<'_, F> {
    type Event = Value;

    fn inputs(&self) -> Inputs<Value> {
        let exited = crossbeam_channel::never();
        // Hits held back are due at once.
        let tick = match self.pending.is_empty() && self.later.is_empty() {
            true => crossbeam_channel::never(),
            false => crossbeam_channel::after(Duration::ZERO),
        };
        let more = crossbeam_channel::never();
        Inputs { events: self.client.events().clone(), exited, tick, more }
    }

    fn handle(&mut self, input: Input<Value>) -> Result<Step, Failure> {
        match input {
            Input::Event(event) => self.handle_event(event),
            Input::Closed => Ok(Step::Finished),
            Input::Tick => self.next_pending(),
            Input::Exited(_) => Ok(Step::Go),
        }
    }

    fn stop_hits(&mut self) {
        let source = json!({"path": self.source_path()});
        let lines = self.call_lines(&self.plan.file);
        let breakpoints: Vec<&Value> = lines.iter().map(|(_, line)| line).collect();
        let set = self
            .client
            .send("setBreakpoints", json!({"source": source, "breakpoints": breakpoints}));
        if !lines.is_empty() {
            if let Ok(set) = self.answer(&set) {
                self.calls_placed(&self.plan.file.clone(), &set["breakpoints"], 0);
            }
        }
    }

    /// Nothing is left: the program (its process group) and the adapter.
    fn end(&mut self, timed_out: bool) -> Exit {
        // Known before anything is killed: the answer lists it.
        let _ = self.program_pid();
        if timed_out {
            self.client.disconnect(true);
        } else if self.terminated {
            // What the adapter says before it answers `disconnect` is read now: gdb sends the
            // program's last output after `terminated`, Delve its exit code only then.
            self.client.disconnect(false);
            // gdb reads the program's last output from its terminal as it pleases: what it
            // says is read until it has been quiet a moment (a second at most).
            let quiet = if self.output_said { OUTPUT_QUIET } else { Duration::ZERO };
            let until = Instant::now() + Duration::from_secs(1);
            while let Ok(event) = self.client.events().recv_timeout(quiet) {
                if event["event"] == "output" {
                    let body = &event["body"];
                    match self.flavour.exit_said(body) {
                        Some(code) => self.exit_code = self.exit_code.or(Some(code)),
                        None => drop(dap::route_output(&self.flavour, body, &mut self.output)),
                    }
                }
                if Instant::now() > until {
                    break;
                }
            }
        }
        // An adapter may stay after `disconnect` (debugpy #672): close its input, then kill.
        self.client.close_input();
        // An adapter that said the exit code has nothing more to say: lldb-dap 19 then spends
        // most of a second crashing in its exit handlers (`free(): invalid pointer`, and its
        // own symbolised stack trace) before it is gone.
        let said =
            self.terminated && self.exit_code.is_some() && !self.flavour.adapter_is_program();
        let grace = if timed_out || said { Duration::ZERO } else { ADAPTER_GRACE };
        let adapter = self.adapter.finish(grace);
        self.kill_all();
        let exit = match (timed_out, self.exit_code) {
            (false, Some(code)) => dap::exit_of(Some(code), self.fatal_signal),
            // rdbg runs the program in its own process: its exit is the program's.
            (false, None) if self.flavour.adapter_is_program() => adapter,
            _ => Exit { code: None, signal: Some(sys::SIGKILL) },
        };
        log::debug(format_args!("program ended ({})", exit.describe()));
        exit
    }

    fn abort(&mut self) {
        // The launcher and the program may have started before we know their pids: the
        // adapter ends them.
        self.client.disconnect(true);
        self.client.close_input();
        let _ = self.adapter.finish(Duration::ZERO);
        self.kill_all();
    }

    fn output(&self) -> Value {
        self.output.to_json()
    }

    fn processes(&self) -> Vec<Value> {
        let Some(top) = self.debuggee.map(|group| group.pid()).or(self.child) else {
            return Vec::new();
        };
        let command = self.plan.command.words.join(" ");
        let program = Debugged {
            pid: top,
            command: &command,
            parent: None,
            hits: Some(self.hits),
            threads: Vec::new(),
        };
        vec![program.to_json()]
    }

    fn hang(&mut self, _calls: &mut Calls) -> Vec<Value> {
        self.where_it_hangs()
    }

    fn calls(&mut self, calls: &mut Calls) {
        let pid = self.program_pid();
        if let Some(tracer) = &mut self.calls {
            tracer.hand(pid, calls);
        }
    }

    fn activity(&self) -> u64 {
        self.output.written() + self.hits + self.calls.as_ref().map_or(0, |t| t.seen())
    }

    fn undebugged(&self) -> Undebugged {
        let program = self.debuggee.map(|group| group.pid());
        let descendants =
            program.map(|pid| self.adapter.descendants(Some(pid))).unwrap_or_default();
        Undebugged { processes: Undebugged::processes(descendants, &[]), workers: 0 }
    }

    fn resolution(&mut self) -> (Option<u32>, Option<String>, Vec<Value>) {
        (self.resolved_line, None, Vec::new())
    }

    fn probe_lines(&self) -> Vec<Option<u32>> {
        self.probe_lines.clone()
    }

    fn finish_failure(&self, failure: &mut Value, output: &Value) {
        if failure["kind"] == "signal" {
            let stderr = output["stderr"].as_str().unwrap_or_default();
            if let Some(text) = failures::signal_text(stderr) {
                failure["message"] = text.into();
            }
            return;
        }
        if failure["kind"] != "panic" || failure["message"].as_str().is_some_and(|m| !m.is_empty())
        {
            return;
        }
        let frame = &failure["frames"][0];
        let (Some(file), Some(line)) = (frame["file"].as_str(), frame["line"].as_u64()) else {
            return;
        };
        let text = format!(
            "{}\n{}",
            output["stdout"].as_str().unwrap_or_default(),
            output["stderr"].as_str().unwrap_or_default()
        );
        let test = failure["test"].as_str().map(String::from);
        let test = test.as_deref();
        if let Some((message, thread)) = failures::panic_message(&text, file, line, test) {
            failure["message"] = message.into();
            // The test's whole name, where its thread's was cut short.
            if let Some(thread) = thread.filter(|t| test.is_some_and(|test| t.starts_with(test))) {
                failure["test"] = thread.into();
            }
        }
    }

    fn never_bound(&self) -> String {
        format!(
            "the breakpoint was not verified: {} did not load {}, and the program ran no other \
             process that debug-mcp saw: check the path, and that the program imports it",
            self.flavour.adapter(),
            self.plan.file.display()
        )
    }

    fn no_code(&self) -> Option<String> {
        self.no_code.clone()
    }
}
