//! Traced calls (`calls`) in a program under a debug adapter (lldb-dap, gdb, Delve): a
//! breakpoint on each traced function's name line stops after its prologue, where its
//! arguments are read (the frame's variables named as its parameters, `native::functions`);
//! then the thread steps out, and at that stop the adapter's return value is read where it
//! reports one (lldb's `thread info`, gdb's `Return` scope; Delve's DAP reports none: the
//! call says `returned`).
//!
//! A step out ends early when the thread stops at another traced function (a nested call):
//! lldb keeps the step and finishes it later, Delve and gdb drop it. Either way, each stop of
//! a thread compares its stack's depth with the depth each open call started at: a call whose
//! frame is gone returned (at a step's stop one level up, with the value the adapter reports),
//! and a thread that still has open calls steps out again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Run;
use crate::dap::failures;
use crate::dap::flavour::Flavour;
use crate::dap::values;
use crate::debugger::calls::{Calls, Traced};
use crate::debugger::{Code, Failure};
use crate::native::functions::{self, Defined};

/// Instructions stepped at most past a prologue, and how long each step may take.
const PROLOGUE_STEPS: usize = 16;
const STEP_WAIT: Duration = Duration::from_secs(2);
/// Frames asked for to count a stack an adapter does not say the depth of.
const ALL_FRAMES: u64 = 1000;

/// The traced functions, their breakpoints, and the calls under way per thread.
#[derive(Default)]
pub(super) struct Tracer {
    functions: Vec<Function>,
    /// `(breakpoint id, function)`.
    ids: Vec<(i64, usize)>,
    /// Per thread (its id's text), the calls under way, outermost first.
    open: HashMap<String, Vec<Open>>,
    /// Threads stepping out of a traced call.
    stepping: Vec<String>,
    next: u64,
    calls: Calls,
    cap: usize,
}

struct Function {
    /// As the plan names it (the answer's `file`), as the adapter knows it, and the file
    /// itself (links followed).
    file: PathBuf,
    path: String,
    real: PathBuf,
    defined: Defined,
}

struct Open {
    record: Value,
    /// The thread's stack depth in the call (its own frame counted).
    depth: u64,
}

impl Tracer {
    /// The functions `traced` names, found in their files (a function asked for that a file
    /// does not define is an error that lists those it does).
    pub(super) fn new<F: Flavour>(
        flavour: &F,
        traced: &[Traced],
        cap: usize,
    ) -> Result<Tracer, Failure> {
        let mut functions = Vec::new();
        for t in traced {
            let source = std::fs::read_to_string(&t.real_file).map_err(|e| {
                Failure::new(Code::InvalidArguments, format!("{}: {e}", t.file.display()))
            })?;
            let defined = functions::defined(&source, &t.real_file);
            let path = flavour.breakpoint_path(&t.file, &t.real_file).display().to_string();
            let before = functions.len();
            for d in &defined {
                if t.function.as_deref().is_none_or(|asked| d.is(asked)) {
                    let defined = d.clone();
                    let (file, real) = (t.file.clone(), t.real_file.clone());
                    functions.push(Function { file, path: path.clone(), real, defined });
                }
            }
            if functions.len() == before {
                return Err(none_found(t, &defined));
            }
        }
        Ok(Tracer { functions, cap, ..Tracer::default() })
    }

    /// The traced functions' lines in `file` (each with its index), to set with the file's
    /// other breakpoints.
    pub(super) fn lines_in(&self, file: &Path) -> Vec<(usize, Value)> {
        let in_file = self.functions.iter().enumerate().filter(|(_, f)| f.file == file);
        in_file.map(|(i, f)| (i, json!({"line": f.defined.line}))).collect()
    }

    /// The files with traced functions, each with its path for the adapter.
    fn files(&self) -> Vec<(PathBuf, String)> {
        let mut files: Vec<(PathBuf, String)> = Vec::new();
        for f in &self.functions {
            if !files.iter().any(|(file, _)| file == &f.file) {
                files.push((f.file.clone(), f.path.clone()));
            }
        }
        files
    }

    /// Where the adapter placed function `index`'s breakpoint; one it could not place is
    /// said in the answer's notes.
    pub(super) fn placed(&mut self, index: usize, breakpoint: &Value) {
        self.ids.retain(|(_, i)| *i != index);
        if let Some(id) = breakpoint["id"].as_i64() {
            self.ids.push((id, index));
        }
        if breakpoint["verified"] == false {
            let function = &self.functions[index];
            let why = breakpoint["message"].as_str().unwrap_or(
                "the program has no code of it (never called, a generic never instantiated, or \
                 inlined everywhere)",
            );
            self.calls.note(format!(
                "calls: `{}` ({}:{}) could not be traced: {why}",
                function.defined.name,
                function.file.display(),
                function.defined.line
            ));
        }
    }

    /// The traced functions a stop's breakpoints are at, by their ids.
    fn functions_at(&self, body: &Value) -> Vec<usize> {
        let ids = body["hitBreakpointIds"].as_array().into_iter().flatten();
        let ids: Vec<i64> = ids.filter_map(Value::as_i64).collect();
        self.ids.iter().filter(|(id, _)| ids.contains(id)).map(|(_, index)| *index).collect()
    }

    /// Which of `candidates` the function `frame` is in: named so, in its file (a breakpoint
    /// the adapter moved may be in another function), the last defined at or before the
    /// frame's line.
    fn started(&self, candidates: &[usize], frame: &Value, name: &str) -> Option<usize> {
        let path = frame.pointer("/source/path").and_then(Value::as_str).map(Path::new);
        let line = frame["line"].as_u64().unwrap_or(u64::MAX);
        let fits = |f: &Function| {
            f.defined.name == name
                && path.is_none_or(|p| p == f.real || p == f.file || same_file(p, &f.real))
        };
        let named = |&i: &usize| self.functions[i].defined.name == name;
        let in_file: Vec<usize> =
            candidates.iter().copied().filter(|&i| fits(&self.functions[i])).collect();
        // A function whose first statement is a macro of another file has its entry there
        // (lldb places the breakpoint on the macro's line): its name says it.
        let fitting = match in_file.is_empty() {
            true => candidates.iter().copied().filter(named).collect(),
            false => in_file,
        };
        let fitting = fitting.into_iter();
        let before = |&i: &usize| u64::from(self.functions[i].defined.line) <= line;
        let lines = |&i: &usize| self.functions[i].defined.line;
        fitting.clone().filter(before).max_by_key(lines).or_else(|| fitting.min_by_key(lines))
    }

    /// How many calls ended or started so far (activity, for `hang`).
    pub(super) fn seen(&self) -> u64 {
        self.next
    }

    /// The calls recorded, those still under way among them, to `calls`.
    pub(super) fn hand(&mut self, pid: Option<u32>, calls: &mut Calls) {
        let mut mine = std::mem::take(&mut self.calls);
        for (_, open) in self.open.drain() {
            for call in open {
                mine.record(0, call.record, self.cap);
            }
        }
        calls.absorb(pid.unwrap_or(0), mine, self.cap);
    }
}

/// A frame's function without its parameters or generic arguments: `Cart::total(int) const`,
/// `shop::parse<u8>`: `Cart::total`, `shop::parse` (Go's `main.(*Cart).Total` kept whole).
fn function_name(frame: &str) -> &str {
    let cut = frame
        .char_indices()
        .find(|&(at, c)| (c == '(' && !frame[..at].ends_with('.') && at > 0) || c == '<');
    frame[..cut.map_or(frame.len(), |(at, _)| at)].trim()
}

fn same_file(a: &Path, b: &Path) -> bool {
    a.canonicalize().ok().is_some_and(|a| b.canonicalize().ok().is_some_and(|b| a == b))
}

/// The error for a `calls` entry whose file defines no function of that name.
fn none_found(traced: &Traced, defined: &[Defined]) -> Failure {
    let file = traced.file.display();
    let names: Vec<String> = defined
        .iter()
        .map(|d| match &d.owner {
            Some(owner) => format!("{owner}::{}", d.name),
            None => d.name.clone(),
        })
        .collect();
    let message = match (&traced.function, names.is_empty()) {
        (_, true) => format!("{file} defines no function debug-mcp can find"),
        (Some(asked), false) => {
            format!("{file} defines no function `{asked}`; it defines {}", names.join(", "))
        }
        (None, false) => unreachable!("every function of a file is traced"),
    };
    Failure::new(Code::InvalidArguments, format!("invalid argument `calls`: {message}"))
        .with("field", "calls".into())
}

impl<F: Flavour> Run<'_, F> {
    /// The traced functions' breakpoints in `file` (with their indexes), set with its others.
    pub(super) fn call_lines(&self, file: &std::path::Path) -> Vec<(usize, Value)> {
        self.calls.as_ref().map(|t| t.lines_in(file)).unwrap_or_default()
    }

    /// Where the traced functions' breakpoints in `file` landed: `placed` from `skip` on.
    pub(super) fn calls_placed(&mut self, file: &std::path::Path, placed: &Value, skip: usize) {
        let lines = self.call_lines(file);
        let placed = placed.as_array().into_iter().flatten().skip(skip);
        if let Some(tracer) = &mut self.calls {
            for ((index, _), breakpoint) in lines.iter().zip(placed) {
                tracer.placed(*index, breakpoint);
            }
        }
    }

    /// Breakpoints on the traced functions of the files no probe or breakpoint is in (those
    /// were set with theirs).
    pub(super) fn set_calls(&mut self) -> Result<(), Failure> {
        let Some(tracer) = &self.calls else { return Ok(()) };
        let files = tracer.files();
        for (file, path) in files {
            let shared = (self.plan.has_breakpoint() && self.plan.file == file)
                || self.plan.probes.iter().any(|p| p.file == file);
            if shared {
                continue;
            }
            let lines = self.calls.as_ref().map(|t| t.lines_in(&file)).unwrap_or_default();
            let breakpoints: Vec<&Value> = lines.iter().map(|(_, line)| line).collect();
            let set = self.client.send(
                "setBreakpoints",
                json!({"source": {"path": path}, "breakpoints": breakpoints}),
            );
            let set = self.answer(&set)?;
            let placed = set["breakpoints"].as_array().cloned().unwrap_or_default();
            let tracer = self.calls.as_mut().expect("tracing");
            for ((index, _), breakpoint) in lines.iter().zip(&placed) {
                tracer.placed(*index, breakpoint);
            }
        }
        Ok(())
    }

    /// A stop that is the calls' own: a traced function's start, or the end of a step out of
    /// one. Handled, and the thread sent on.
    pub(super) fn call_stop(&mut self, body: &Value) -> Result<Option<()>, Failure> {
        let Some(tracer) = &self.calls else { return Ok(None) };
        let thread = body["threadId"].clone();
        let key = thread.to_string();
        let reason = body["reason"].as_str().unwrap_or_default();
        let started = match reason {
            "breakpoint" | "function breakpoint" => tracer.functions_at(body),
            _ => Vec::new(),
        };
        let stepped = reason == "step" && tracer.stepping.contains(&key);
        if started.is_empty() && !stepped {
            return Ok(None);
        }
        let (frame, depth) = self.top_frame(&thread)?;
        let name = function_name(frame["name"].as_str().unwrap_or_default()).to_string();
        let tracer = self.calls.as_mut().expect("tracing");
        let started = tracer.started(&started, &frame, functions::split_name(&name).1);
        tracer.stepping.retain(|t| t != &key);
        let open = tracer.open.entry(key.clone()).or_default();
        // At a step's stop the frame one level down returned; at a start, a call at the same
        // depth or deeper had ended unseen (a longjmp, an unwind, a step the adapter dropped).
        let gone = if stepped { depth + 1 } else { depth };
        let mut ended = Vec::new();
        while open.last().is_some_and(|o| o.depth > gone || (!stepped && o.depth == gone)) {
            let mut record = open.pop().expect("open").record;
            record["returned"] = true.into();
            ended.push(record);
        }
        let just_returned = match stepped && open.last().is_some_and(|o| o.depth == gone) {
            true => open.pop().map(|o| o.record),
            false => None,
        };
        if let Some(mut record) = just_returned {
            match self.returned(&frame["id"]) {
                Some(value) => record["return"] = value.into(),
                None => record["returned"] = true.into(),
            }
            ended.push(record);
        }
        let tracer = self.calls.as_mut().expect("tracing");
        for record in ended {
            tracer.calls.record(0, record, tracer.cap);
        }
        if let Some(index) = started {
            self.call_started(&thread, &frame, &name, depth, index)?;
        }
        let tracer = self.calls.as_ref().expect("tracing");
        match tracer.open.get(&key).is_some_and(|o| !o.is_empty()) {
            true => self.step_out(&thread)?,
            false => self.go_on(&thread)?,
        }
        Ok(Some(()))
    }

    /// A traced function's call starts at `frame`: its record, with its arguments.
    fn call_started(
        &mut self,
        thread: &Value,
        frame: &Value,
        name: &str,
        depth: u64,
        index: usize,
    ) -> Result<(), Failure> {
        let tracer = self.calls.as_mut().expect("tracing");
        if tracer.calls.len() + tracer.open.values().map(Vec::len).sum::<usize>() >= tracer.cap {
            tracer.calls.omit(name, 1);
            return Ok(());
        }
        let function = &tracer.functions[index];
        let brace = function.defined.brace;
        let mut frame = frame.clone();
        let at = |f: &Value| (f["line"].as_u64(), f["column"].as_u64());
        // Stopped at a one-line function's `{` (gcc's line table, read by lldb), the prologue
        // has not stored the arguments yet: a few instructions on, it has.
        let prologue = (Some(u64::from(brace.0)), Some(u64::from(brace.1)));
        for _ in 0..PROLOGUE_STEPS {
            if at(&frame) != prologue {
                break;
            }
            frame = self.step_instruction(thread, &frame)?;
        }
        let tracer = self.calls.as_ref().expect("tracing");
        let function = &tracer.functions[index];
        let params = function.defined.params.clone();
        let file = function.file.display().to_string();
        let line = function.defined.line;
        let flavour = self.flavour.clone();
        let args = {
            let mut ask = |command: &str, arguments: Value| self.ask(command, arguments);
            failures::arguments(&flavour, &frame["id"], &mut ask, &params)
        };
        let tracer = self.calls.as_mut().expect("tracing");
        let open = tracer.open.entry(thread.to_string()).or_default();
        tracer.next += 1;
        let mut record = json!({"call": tracer.next, "function": name, "file": file,
            "line": line, "depth": open.len(), "args": args});
        if let Some(parent) = open.last() {
            record["parent"] = parent.record["call"].clone();
        }
        open.push(Open { record, depth });
        Ok(())
    }

    /// One instruction on (stepping over calls): the thread's top frame then. Events that come
    /// meanwhile are handled after this stop.
    fn step_instruction(&mut self, thread: &Value, frame: &Value) -> Result<Value, Failure> {
        let (command, arguments) = self.flavour.instruction_step(thread, &frame["id"]);
        let stepped = self.client.send(command, arguments);
        self.answer(&stepped)?;
        let deadline = Instant::now() + STEP_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(event) = self.client.events().recv_timeout(left) else {
                return Err(Failure::new(
                    Code::AdapterFailed,
                    format!("{} did not step in time", self.flavour.adapter()),
                ));
            };
            if event["event"] == "stopped" && event["body"]["threadId"] == *thread {
                break;
            }
            if event["event"] != "continued" {
                self.later.push_back(super::Later::Event(event));
            }
        }
        Ok(self.top_frame(thread)?.0)
    }

    /// The thread's top frame, and how deep its stack is.
    fn top_frame(&mut self, thread: &Value) -> Result<(Value, u64), Failure> {
        // Delve's `totalFrames` says only that there are more, gdb says none: their frames
        // are counted.
        let mut levels = if self.flavour.counts_frames() { 1 } else { ALL_FRAMES };
        loop {
            let arguments = json!({"threadId": thread, "levels": levels});
            let trace = self.client.send("stackTrace", arguments);
            let trace = self.answer(&trace)?;
            let total = trace["totalFrames"].as_u64().filter(|_| levels == 1);
            if total.is_none() && levels == 1 {
                levels = ALL_FRAMES;
                continue;
            }
            let frames = crate::dap::program_frames(&self.flavour, &trace);
            let depth = total.unwrap_or(trace["stackFrames"].as_array().map_or(0, Vec::len) as u64);
            return Ok((frames.into_iter().next().unwrap_or_default(), depth));
        }
    }

    /// The value the adapter says the function just stepped out of returned.
    fn returned(&mut self, frame: &Value) -> Option<String> {
        let flavour = self.flavour.clone();
        let mut ask = |command: &str, arguments: Value| self.ask(command, arguments);
        let variable = flavour.returned(frame, &mut ask)?;
        let mut children = |reference: &Value| {
            let arguments = json!({"variablesReference": reference, "count": values::SHOWN + 1});
            let listed = ask("variables", arguments).unwrap_or_default();
            listed["variables"].as_array().cloned().unwrap_or_default()
        };
        Some(values::preview(&flavour, &variable, &mut children))
    }

    /// Steps `thread` out of the call it is in; while other threads' reports of one stop
    /// are read (`Run::stopped`), it goes on instead (its return is not seen).
    fn step_out(&mut self, thread: &Value) -> Result<(), Failure> {
        if self.holding.is_some() {
            return self.go_on(thread);
        }
        if let Some(tracer) = &mut self.calls {
            tracer.stepping.push(thread.to_string());
        }
        let stepped = self.client.send("stepOut", json!({"threadId": thread}));
        match self.answer(&stepped) {
            Ok(_) => Ok(()),
            // gdb does not step out of `main` (its outermost frame): its return is not seen.
            Err(Failure::Error { code: Code::AdapterFailed, .. }) if !self.adapter_ended() => {
                if let Some(tracer) = &mut self.calls {
                    tracer.stepping.retain(|t| t != &thread.to_string());
                }
                self.go_on(thread)
            }
            Err(failure) => Err(failure),
        }
    }
}
