//! One `debug-script` driver for every runtime: the loop that collects hits until the program
//! ends, the deadline passes or the call is cancelled; the hit cap, the answer's byte budget
//! and progress; and the ending: the outcome, or the failure that says why no hit came. A
//! runtime provides how a hit is collected ([`Collector`]); Node's is `cdp/script.rs`,
//! Python's `dap/script.rs`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::debugger::backend::{Input, Inputs};
use crate::debugger::calls::{Calls, Traced};
use crate::debugger::limits::{FAILURE_MESSAGE, LOCALS_SHOWN, LOCAL_PREVIEW, RESULTS_BUDGET};
use crate::debugger::model::Undebugged;
use crate::debugger::{Code, Failure};
use crate::process::{Exit, Stopped};
use crate::shell::CommandLine;

/// A checked request.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) command: CommandLine,
    /// The file as the agent named it, made absolute (a symlink stays a symlink).
    pub(crate) file: PathBuf,
    /// The file with every symlink resolved: what Node loads by default.
    pub(crate) real_file: PathBuf,
    pub(crate) line: u32,
    pub(crate) condition: Option<String>,
    pub(crate) expression: String,
    pub(crate) timeout: Duration,
    pub(crate) max_hits: u64,
    pub(crate) include_stack: bool,
    /// Which debugger runs it.
    pub(crate) language: Language,
    /// The `probes` argument, in order (the first is also `file`, `line`, `condition` and
    /// `expression` above); empty for the single `breakpoint` form.
    pub(crate) probes: Vec<Probe>,
    /// With `failures`: how many failures to record (`maxFailures`).
    pub(crate) failures: Option<u32>,
    /// `userUnhandled` (with `failures`): exceptions that leave the program's own code into a
    /// library that catches them are failures too (Python, JavaScript).
    pub(crate) user_unhandled: bool,
    /// `hang`: a stretch with no hit, output or process change this long ends the run as its
    /// timeout does (the program is taken for hung).
    pub(crate) hang: Option<Duration>,
    /// `calls`: the functions whose every call is traced (`debugger::calls`).
    pub(crate) calls: Vec<Traced>,
    /// How many calls are recorded (`maxHits` when given).
    pub(crate) max_calls: usize,
}

impl Plan {
    /// Whether a breakpoint or probes were given (`failures` alone gives neither).
    pub(crate) fn has_breakpoint(&self) -> bool {
        self.line > 0
    }

    /// Whether the run is for hits (a breakpoint or probes): without one none is a failure.
    pub(crate) fn expects_hits(&self) -> bool {
        self.has_breakpoint() && self.failures.is_none() && self.calls.is_empty()
    }

    /// The lines watched, as probes: the `probes` given, or the one `breakpoint` with its
    /// expression, or none.
    pub(crate) fn watched(&self) -> Vec<Probe> {
        match self.probes.is_empty() {
            true if self.has_breakpoint() => vec![Probe {
                file: self.file.clone(),
                real_file: self.real_file.clone(),
                line: self.line,
                condition: self.condition.clone(),
                expression: Some(self.expression.clone()),
            }],
            true => Vec::new(),
            false => self.probes.clone(),
        }
    }
}

/// One of several probes: a line, and what to record there (the expression's value, or with
/// none the frame's locals).
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    pub(crate) file: PathBuf,
    pub(crate) real_file: PathBuf,
    pub(crate) line: u32,
    pub(crate) condition: Option<String>,
    pub(crate) expression: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Language {
    Node,
    Deno,
    /// A web page in a browser.
    Browser,
    Python,
    /// The JVM, through JDWP.
    Java,
    /// A debug adapter for a compiled program or a configured runtime (`native::Native`).
    Native,
}

/// How a run that produced an answer ended.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// The JSON text of one `{type, value}` (plus `stack`) per hit, in hit order.
    pub(crate) results: Vec<String>,
    /// Where the breakpoint landed, in the file's own (original) lines.
    pub(crate) resolved_line: Option<u32>,
    /// Set when a map placed it in another original file than asked.
    pub(crate) resolved_file: Option<String>,
    /// `{file, line, column}` of each generated location, when a source map placed it.
    pub(crate) generated: Vec<Value>,
    pub(crate) exit: Option<Exit>,
    pub(crate) timed_out: bool,
    pub(crate) hits_capped: bool,
    /// Some values were cut or left out to keep the answer small.
    pub(crate) values_truncated: bool,
    /// `{stdout, stderr, truncated}`.
    pub(crate) output: Value,
    /// Child processes and worker threads the program ran outside the debugger.
    pub(crate) undebugged: Undebugged,
    /// The processes debugged: `{pid, command, hits, parent?, threads?}` each.
    pub(crate) processes: Vec<Value>,
    /// With `failures`: each failure recorded, `{kind, type, message, test?, process, frames}`.
    pub(crate) failures: Vec<Value>,
    /// Failures past `maxFailures`, counted.
    pub(crate) more_failures: u64,
    /// A failure's `same` (its process and exception, as the runtime names them) to where it
    /// is in `failures`: a later record of the same exception (a `userUnhandled` one that a
    /// test runner then failed its test for, or that went on uncaught) takes its place.
    pub(crate) same: std::collections::HashMap<String, Option<usize>>,
    /// With `probes`: the line each probe resolved to.
    pub(crate) probe_lines: Vec<Option<u32>>,
    /// The program's processes a signal had stopped when the run ended.
    pub(crate) stopped: Vec<Stopped>,
    /// What the answer says besides (programs of the command not run, and why).
    pub(crate) notes: Vec<String>,
    /// Where the program was when it was killed for hanging: `{after, threads}`.
    pub(crate) hang: Option<Value>,
    /// The run ended for `hang` (a quiet stretch), not its timeout.
    pub(crate) quiet: bool,
    /// With `calls`: the calls traced.
    pub(crate) calls: Calls,
    /// Bytes of JSON in `results`, against [`RESULTS_BUDGET`].
    results_bytes: usize,
    /// Where each hit ran, as JSON fields (`"pid":12`, and `,"thread":"[worker 1]"`): an
    /// index into `places` per result, added to the results at the end.
    places: Vec<String>,
    place_of: Vec<Option<u32>>,
}

/// A process debugged, as answers list it (`processes`, in `debug-script` and
/// `debug-sessions`): `{pid, command, parent?, hits?, threads?}`, the command clipped.
pub(crate) struct Debugged<'a> {
    pub(crate) pid: u32,
    pub(crate) command: &'a str,
    pub(crate) parent: Option<u32>,
    /// `debug-script`'s count of the hits in it.
    pub(crate) hits: Option<u64>,
    /// The worker threads debugged in it, by name.
    pub(crate) threads: Vec<&'a str>,
}

impl Debugged<'_> {
    pub(crate) fn to_json(&self) -> Value {
        let mut process =
            json!({"pid": self.pid, "command": crate::debugger::limits::clip(self.command, 200)});
        if let Some(parent) = self.parent {
            process["parent"] = parent.into();
        }
        if let Some(hits) = self.hits {
            process["hits"] = hits.into();
        }
        if !self.threads.is_empty() {
            process["threads"] = self.threads.clone().into();
        }
        process
    }
}

/// `processes` as a run lists them: the started process (`top`) first, then in the order they
/// came.
pub(crate) fn listed<'a>(top: u32, debugged: impl IntoIterator<Item = Debugged<'a>>) -> Vec<Value> {
    let mut all: Vec<Debugged> = debugged.into_iter().collect();
    all.sort_by_key(|d| d.pid != top);
    all.iter().map(Debugged::to_json).collect()
}

/// "the 3 processes debugged (pid 12: node --test; pid 13: node t1.test.js; …)", or "the
/// process debugged (…)", from `{pid, command, threads?}` each.
pub(crate) fn describe_processes(processes: &[Value]) -> Option<String> {
    let named: Vec<String> = processes
        .iter()
        .take(4)
        .map(|p| {
            let threads = p["threads"].as_array().map_or(0, Vec::len);
            let threads = match threads {
                0 => String::new(),
                1 => " and its worker thread".to_string(),
                n => format!(" and its {n} worker threads"),
            };
            format!("pid {}: {}{threads}", p["pid"], p["command"].as_str().unwrap_or_default())
        })
        .collect();
    let more = if processes.len() > 4 { "; …" } else { "" };
    match processes.len() {
        0 => None,
        1 => Some(format!("the process debugged ({})", named.join("; "))),
        n => Some(format!("the {n} processes debugged ({}{more})", named.join("; "))),
    }
}

impl Outcome {
    /// Says in each hit where it ran (each result is rebuilt once, at its exact size), when
    /// hits came from more than one place. Where every hit ran in the same process and thread,
    /// `processes` says it once (its `hits`, and `hitThread` for a worker thread), and 10,000
    /// hits do not carry the same pid 10,000 times.
    pub(super) fn add_places(&mut self) {
        let mut used = self.place_of.iter().flatten();
        let first = used.next().copied();
        if used.all(|place| Some(*place) == first) {
            if let Some(place) = first {
                let place: Value =
                    serde_json::from_str(&format!("{{{}}}", self.places[place as usize]))
                        .unwrap_or_default();
                let process = self.processes.iter_mut().find(|p| p["pid"] == place["pid"]);
                if let (Some(process), Some(thread)) = (process, place.get("thread")) {
                    process["hitThread"] = thread.clone();
                }
            }
            return;
        }
        for (result, place) in self.results.iter_mut().zip(&self.place_of) {
            let Some(from) = place.map(|p| &self.places[p as usize]) else { continue };
            if !result.ends_with('}') {
                continue;
            }
            let mut joined = String::with_capacity(result.len() + from.len() + 1);
            joined.push_str(&result[..result.len() - 1]);
            joined.push(',');
            joined.push_str(from);
            joined.push('}');
            *result = joined;
        }
    }

    /// Adds `stack` to the last hit's result.
    pub(super) fn attach_stack(&mut self, stack: Vec<Value>) {
        // The result is a JSON object's text ending in `}`: add the field before it.
        let Some(last) = self.results.last_mut() else { return };
        if last.ends_with('}') {
            last.pop();
            last.push_str(&format!(r#","stack":{}}}"#, Value::from(stack)));
        }
    }
}

impl Outcome {
    /// Adds one hit's `{type, value}` JSON text (the value replaced by a marker once the
    /// answer's budget is spent; `from`, the fields that say where it ran, spliced in) and
    /// reports progress. True when this hit is the `max_hits`th.
    pub(crate) fn record_hit(
        &mut self,
        mut result: String,
        truncated: bool,
        from: Option<&str>,
        max_hits: u64,
        progress: &crate::call::Progress,
    ) -> bool {
        self.values_truncated |= truncated;
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
            self.values_truncated = true;
        }
        // The result is a JSON object's text ending in `}`: add the fields before it.
        let place = from.map(|from| {
            self.results_bytes += from.len() + 1;
            match self.places.iter().position(|p| p == from) {
                Some(index) => index as u32,
                None => {
                    self.places.push(from.to_string());
                    (self.places.len() - 1) as u32
                }
            }
        });
        self.place_of.push(place);
        self.results.push(result);
        let hits = self.results.len() as u64;
        progress.report(hits, || format!("hit {hits}"));
        if hits == max_hits {
            self.hits_capped = true;
        }
        hits == max_hits
    }
}

/// A failure's record, the same shape for every runtime: `{kind, type, message, frames,
/// framesOmitted?}` (`frames`: the own frames listed, of `all` in the stack); the runtime adds
/// `test` and `process`.
pub(crate) fn failure_record(
    kind: &str,
    kind_type: &str,
    message: &str,
    frames: Vec<Value>,
    all: usize,
) -> Value {
    let message = crate::debugger::limits::clip(message, FAILURE_MESSAGE);
    let listed = frames.len();
    let mut record = json!({"kind": kind, "type": kind_type, "message": message, "frames": frames});
    if all > listed {
        record["framesOmitted"] = (all - listed).into();
    }
    record
}

/// A frame's locals as a failure or a probe shows them, `{name: preview}`: the first
/// `LOCALS_SHOWN` names, each preview clipped to `LOCAL_PREVIEW` characters, the rest counted (`"…": "3 more"`); a name seen
/// already (an inner scope's) keeps its first value.
#[derive(Default)]
pub(crate) struct Locals {
    shown: serde_json::Map<String, Value>,
    more: usize,
}

impl Locals {
    pub(crate) fn add(&mut self, name: &str, preview: &str) {
        if name.is_empty() || self.shown.contains_key(name) {
            return;
        }
        match self.shown.len() {
            LOCALS_SHOWN => self.more += 1,
            _ => {
                let preview = crate::debugger::limits::clip(preview, LOCAL_PREVIEW);
                self.shown.insert(name.to_string(), preview.into());
            }
        }
    }

    pub(crate) fn into_json(mut self) -> Value {
        if self.more > 0 {
            self.shown.insert("…".into(), format!("{} more", self.more).into());
        }
        Value::Object(self.shown)
    }
}

/// One hit, as a runtime collected it: the JSON text of `{type, value}`, whether the probe cut
/// the value, the stack when one was asked for, and where it ran: JSON fields (`"pid":12` and
/// perhaps `,"thread":"[worker 1]"`) added to the result.
pub(crate) struct Hit {
    pub(crate) result: String,
    pub(crate) truncated: bool,
    pub(crate) stack: Option<Vec<Value>>,
    pub(crate) from: Option<String>,
}

impl Hit {
    /// The hit of probe `index` (with `probes`): the index spliced into the result, first.
    pub(crate) fn of_probe(mut self, index: usize) -> Hit {
        if let Some(rest) = self.result.strip_prefix('{') {
            self.result = format!("{{\"probe\":{index},{rest}");
        }
        self
    }
}

impl Outcome {
    /// Records a failure, the first `max`; counts the rest. A record that says it is the
    /// `same` exception as an earlier one replaces it.
    pub(crate) fn failed(&mut self, mut failure: Value, max: u32) {
        let same = failure
            .as_object_mut()
            .and_then(|f| f.remove("same"))
            .map(|same| format!("{}/{same}", failure["process"]));
        if let Some(&at) = same.as_ref().and_then(|same| self.same.get(same)) {
            if let Some(at) = at {
                self.failures[at] = failure;
            }
            return;
        }
        let at = (self.failures.len() < max as usize).then_some(self.failures.len());
        match at {
            Some(_) => self.failures.push(failure),
            None => self.more_failures += 1,
        }
        if let Some(same) = same {
            self.same.insert(same, at);
        }
    }
}

/// A probe's report split at its flag: `T` or `F` (was the value cut?), then the JSON of the
/// value. The same for every runtime's probe.
pub(crate) fn flagged(report: &str) -> Option<(bool, &str)> {
    match report.split_at_checked(1)? {
        ("T", json) => Some((true, json)),
        ("F", json) => Some((false, json)),
        _ => None,
    }
}

/// A probe's value (`json`, cut when `truncated`) as an evaluation answers it: `{type, value,
/// truncated?}`; `report` is what the probe said, for the error when it is not JSON.
pub(crate) fn probe_value(truncated: bool, json: &str, report: &str) -> Result<Value, Failure> {
    let mut value: Value = serde_json::from_str(json).map_err(|_| {
        Failure::new(Code::Internal, format!("unreadable value: {}", crate::log::clip(report)))
    })?;
    if truncated {
        value["truncated"] = true.into();
    }
    Ok(value)
}

/// What one input meant to a run.
pub(crate) enum Step {
    Go,
    Hit(Hit),
    /// The stack of the hit reported last (Node pauses after its probe reported the value).
    Stack(Vec<Value>),
    /// A failure (with `failures`): `{kind, type, message, test?, process, frames}`.
    Failed(Value),
    /// Traced calls of one process (with `calls`): records, and those left out per function.
    Calls {
        pid: u32,
        records: Vec<Value>,
        omitted: serde_json::Map<String, Value>,
    },
    /// The program's process ended: read on briefly, then finish.
    Draining,
    Finished,
}

/// How a runtime collects `debug-script` hits, once its program runs with the breakpoint set.
pub(crate) trait Collector {
    type Event;

    fn inputs(&self) -> Inputs<Self::Event>;
    fn handle(&mut self, input: Input<Self::Event>) -> Result<Step, Failure>;
    /// The hit cap was reached: stop reporting (remove the breakpoint).
    fn stop_hits(&mut self);
    /// The program finished, or (`timed_out`) is killed: how it ended, with nothing of ours
    /// left running.
    fn end(&mut self, timed_out: bool) -> Exit;
    /// A failure or a cancel: end everything at once.
    fn abort(&mut self);
    /// `{stdout, stderr, truncated}`.
    fn output(&self) -> Value;
    fn undebugged(&self) -> Undebugged;
    /// The processes debugged, `{pid, command, hits, parent?, threads?}` each.
    fn processes(&self) -> Vec<Value>;
    /// Where the breakpoint landed: its line, the original file when a map put it in another,
    /// and the generated places.
    fn resolution(&mut self) -> (Option<u32>, Option<String>, Vec<Value>);
    /// A runtime's own reason for no hit, when it has a better one than "never ran".
    fn no_hit_failure(&self, _exit: Exit, _timed_out: bool) -> Option<Failure> {
        None
    }
    /// Why the breakpoint never bound, in the runtime's words.
    fn never_bound(&self) -> String;
    /// With `probes`: the line each resolved to.
    fn probe_lines(&self) -> Vec<Option<u32>> {
        Vec::new()
    }
    /// Completes a failure's record once the program's output is known (a Rust panic's
    /// message is in it).
    fn finish_failure(&self, _failure: &mut Value, _output: &Value) {}
    /// Why the breakpoint's line can never stop, when the debugger said so.
    fn no_code(&self) -> Option<String> {
        None
    }
    /// The program's processes that a signal stopped (not ended). A debug adapter's program
    /// is the adapter's to stop and go on.
    fn stopped(&self) -> Vec<Stopped> {
        Vec::new()
    }
    /// Where every thread of the program is, before it is killed for hanging (its timeout, or
    /// a quiet stretch): each stopped and its stack walked, `[{process, thread, state,
    /// frames, framesOmitted?}]` (`debugger::hang::thread_record`).
    /// Calls the program reports meanwhile (those still running among them) go to `calls`.
    fn hang(&mut self, calls: &mut Calls) -> Vec<Value> {
        let _ = calls;
        Vec::new()
    }
    /// The run may be found hanging at `until` (its deadline, or the end of a quiet
    /// stretch): finds now what would take too long then (an idle JavaScript thread's pending
    /// awaits need a heap snapshot). The program runs on; what is found is checked again then.
    fn look_ahead(&mut self, until: Instant) {
        let _ = until;
    }
    /// The calls the collector holds (those still running among them), to `calls`, as the run
    /// ends (a runtime that reports calls as steps holds none).
    fn calls(&mut self, calls: &mut Calls) {
        let _ = calls;
    }
    /// A count that grows whenever the program shows it is doing something besides hits
    /// (output, a process started): with `hang`, none for that long is a hang.
    fn activity(&self) -> u64 {
        0
    }
}

/// The failure for a run that outlived its `timeout` before any hit.
pub(crate) fn timeout_failure(timeout: Duration) -> Failure {
    // The exact wording existing clients of this tool match on.
    Failure::new(
        Code::Timeout,
        format!("Timeout waiting for breakpoint after {}ms", timeout.as_millis()),
    )
}

/// `[{pid, signal?}]` of the processes stopped by a signal, if any.
pub(crate) fn stopped_json(stopped: &[Stopped]) -> Option<Value> {
    (!stopped.is_empty()).then(|| stopped.iter().map(|s| s.to_json()).collect())
}

/// The note for processes a signal stopped: they had not ended, and would not by themselves;
/// `then`, what became of them.
pub(crate) fn stopped_note(stopped: &[Stopped], then: &str) -> Option<String> {
    let each: Vec<String> = stopped
        .iter()
        .map(|s| match s.signal {
            Some(signal) => format!("pid {} by {}", s.pid, crate::sys::signal_name(signal)),
            None => format!("pid {}", s.pid),
        })
        .collect();
    (!each.is_empty()).then(|| {
        format!(
            "Stopped by a signal, not ended: {} (a program that stops itself with SIGSTOP, or \
             reads a terminal in the background: SIGTTIN). Such a process waits for SIGCONT: \
             {then}.",
            each.join(", ")
        )
    })
}
