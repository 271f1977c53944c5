//! Traced calls in JavaScript (`debugger::calls`): a script that holds a traced file's
//! functions (the file itself, or a script whose source map's sources name it) pauses before its
//! code runs (a breakpoint at its first statement, or at its first line when it is compiled
//! while loading); there its functions are found in its text (`cdp::functions`) and compiled
//! with their calls (`cdp::instrument`: the probe is called at each start and end, no pause).
//! Where V8 does not take the new text, each function gets two kinds of breakpoint instead:
//! - at its first statement, a condition that reports its parameters' values through the probe
//!   (`BINDING.call`) and never stops;
//! - at each of its returns (`getPossibleBreakpoints` with `restrictToFunction`: V8's return
//!   positions), a pause that reads the frame's `returnValue`.
//!
//! A call that left its function without returning (an exception went through it) has the
//! exception seen last while it was open (the run pauses on every exception): compiled, it says
//! so itself; with breakpoints it is told at the next return pause, whose stack no longer holds
//! it. An async function suspended in an `await` stays open until its own return (what it
//! resolved to).

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use super::Run;
use crate::cdp::failures;
use crate::cdp::functions::{self, Function};
use crate::cdp::Origin;
use crate::debugger::calls::Calls;

mod compiled;

/// Whether the run pauses before each script with a source map runs: a traced file that is not
/// JavaScript runs transformed, and its script's functions get their breakpoints while it waits.
pub(super) fn watch_load(plan: &crate::debugger::script::Plan) -> bool {
    plan.calls.iter().any(|c| !crate::cdp::maps::is_javascript(&c.file))
}

/// A map's source that is a traced file: its path, its text, the functions asked of it (`None`:
/// all).
type TracedSource = (String, String, Vec<Option<String>>);

/// What one thread knows of its traced functions and calls.
#[derive(Default)]
pub(super) struct Traced {
    functions: Vec<Traced1>,
    /// Breakpoint id → the function whose return (or, for an empty body, start and return)
    /// it is.
    returns: HashMap<String, (usize, bool)>,
    /// `functionLocation` (script, line, column) → function.
    by_location: HashMap<(String, u32, u32), usize>,
    /// Scripts looked at already.
    seen: Vec<String>,
    /// Breakpoints at the first statement of each traced file (the first line of one
    /// transformed while loading): a pause there is before its code runs (at its scriptParsed
    /// the code may run before our breakpoints are in).
    loads: Vec<String>,
    /// Traced JavaScript files with no statement to pause at: looked at when parsed.
    at_parse: Vec<std::path::PathBuf>,
    /// Scripts that are ES modules.
    modules: Vec<String>,
    /// The thread pauses at exceptions for its calls (a function traced by breakpoints).
    pausing: bool,
    /// The probe was told to count compiled calls only (past the cap).
    counting: bool,
    /// Calls started and not yet returned, oldest first.
    open: Vec<Open>,
    /// Past the cap, with no recorded call running: returns are not watched.
    capped: bool,
}

struct Traced1 {
    name: String,
    file: String,
    line: u64,
    params: Vec<String>,
    is_async: bool,
}

impl Traced1 {
    fn new(function: &Function, file: String, line: u64) -> Traced1 {
        let params = function.params.iter().flatten().cloned().collect();
        let (name, is_async) = (function.name.clone(), function.is_async);
        Traced1 { name, file, line, params, is_async }
    }
}

struct Open {
    record: Value,
    function: usize,
    /// Compiled: the call's number in its process (its end is reported, not paused at).
    local: Option<u64>,
    /// The exception seen going through it, until it is caught.
    threw: Option<Value>,
    /// An async function awaiting, or a generator between yields: not on the stack.
    suspended: bool,
}

/// The run's calls, before they go to the outcome.
#[derive(Default)]
pub(super) struct Recorded {
    /// `(pid, record)` of calls that ended.
    records: Vec<(u32, Value)>,
    omitted: BTreeMap<String, u64>,
    next: u64,
}

impl Run<'_> {
    /// Whether the plan traces calls.
    pub(super) fn traces_calls(&self) -> bool {
        !self.plan.calls.is_empty()
    }

    /// Before a traced file loads: a breakpoint by its URL where its code starts (its first
    /// statement; the first line of a file transformed while loading, TypeScript), so that its
    /// functions are compiled (or get their breakpoints) before they run.
    pub(super) fn trace_before_load(&mut self, to: &Origin) {
        let urls = self.runtime.urls();
        let mut loads = Vec::new();
        let mut at_parse = Vec::new();
        for traced in &self.plan.calls {
            let regex = urls.regex(&[traced.file.as_path(), traced.real_file.as_path()]);
            if !crate::cdp::maps::is_javascript(&traced.file) {
                loads.push(json!({"urlRegex": regex, "lineNumber": 0, "columnNumber": 0}));
                continue;
            }
            let source = std::fs::read_to_string(&traced.real_file).unwrap_or_default();
            match functions::first_statement(&source) {
                Some((line, column)) => loads
                    .push(json!({"urlRegex": regex, "lineNumber": line, "columnNumber": column})),
                None => at_parse.extend([traced.file.clone(), traced.real_file.clone()]),
            }
        }
        for params in loads {
            let set = self.ask(to, "Debugger.setBreakpointByUrl", params);
            if let (Some(id), Some(target)) =
                (set.as_ref().and_then(|s| s["breakpointId"].as_str()), self.targets.get_mut(to))
            {
                target.calls.loads.push(id.to_string());
            }
        }
        if let Some(target) = self.targets.get_mut(to) {
            target.calls.at_parse = at_parse;
        }
    }

    /// A pause that is the calls' own (handled, and the program sent on), or not (false).
    pub(super) fn calls_pause(&mut self, origin: &Origin, params: &Value) -> bool {
        let go = match self.traced_file_loads(origin, params) {
            true => Some("Debugger.resume"),
            false => self.call_paused(origin, params),
        };
        if let Some(method) = go {
            drop(self.send(origin, method, json!({})));
        }
        go.is_some()
    }

    /// Whether a pause is at the start of a traced file (its load breakpoint): its script's
    /// functions are compiled with their calls. A pause before a script runs for another
    /// reason (Node's first, in the main script; one before a script with a source map) is
    /// used so too, and left to its own.
    fn traced_file_loads(&mut self, origin: &Origin, params: &Value) -> bool {
        let Some(target) = self.targets.get(origin) else { return false };
        let mut hits =
            params["hitBreakpoints"].as_array().into_iter().flatten().filter_map(Value::as_str);
        let ours = hits.any(|id| target.calls.loads.iter().any(|l| l == id));
        let script = params.pointer("/callFrames/0/location/scriptId").and_then(Value::as_str);
        let Some(script) = script.map(String::from) else { return ours };
        // Before the script's code runs: its frame may start again in the compiled text.
        let first =
            ours || matches!(params["reason"].as_str(), Some("Break on start" | "instrumentation"));
        if first {
            self.watch_calls(origin, &script, true);
        }
        ours
    }

    /// A script whose source map names a traced file (a bundle), or a traced file with no
    /// statement to pause at, is compiled as it is parsed (a traced file transformed while
    /// loading waits for its load breakpoint: it is paused there by now, where only a
    /// restart of its frame can change it).
    pub(super) fn script_parsed(&mut self, origin: &Origin, params: &Value) {
        let Some(script) = params["scriptId"].as_str() else { return };
        let mapped = !params["sourceMapURL"].as_str().unwrap_or_default().is_empty();
        let Some(target) = self.targets.get_mut(origin) else { return };
        if params["isModule"] == true {
            target.calls.modules.push(script.to_string());
        }
        let file = target.scripts.file(script);
        let path = std::path::Path::new(&file);
        let unpaused = target.calls.at_parse.iter().any(|p| p.as_path() == path);
        // Under a URL its load breakpoint matches (jest's scripts are named by bare paths).
        let url = params["url"].as_str().unwrap_or_default();
        let urls = self.runtime.urls();
        let waits = (self.plan.calls.iter())
            .any(|c| urls.names(url, &c.file) || urls.names(url, &c.real_file));
        if unpaused || (mapped && !waits) {
            self.watch_calls(origin, script, false);
        }
    }

    /// A script that is a traced file (or a traced file transformed): its traced functions are
    /// compiled with their calls, or else get their breakpoints. `restart`: paused at the
    /// script's first statement, where its frame may start again in the compiled text.
    fn watch_calls(&mut self, origin: &Origin, script: &str, restart: bool) {
        let Some(target) = self.targets.get_mut(origin) else { return };
        if target.calls.seen.iter().any(|s| s == script) {
            return;
        }
        target.calls.seen.push(script.to_string());
        let file = target.scripts.file(script);
        let path = std::path::Path::new(&file);
        let plan = self.plan;
        // A traced file itself (by its path, or the URL a page's server gives it).
        let url = target.scripts.get(script).0;
        let itself = traced_at(plan, path, Some((&self.runtime.urls(), &url)));
        let asked_here: Vec<Option<String>> = itself.iter().map(|c| c.function.clone()).collect();
        let shown = itself.first().map_or(file.clone(), |c| c.file.display().to_string());
        // Its functions are read in the script's own text: a JavaScript file, or a traced file
        // a loader compiled without a map, line for line (jiti); else through its map.
        let on_disk = crate::cdp::maps::is_javascript(path) && !asked_here.is_empty();
        let map = match on_disk {
            true => None,
            false => match target.scripts.map_of(script).and_then(Result::ok) {
                Some(map) => Some(map),
                None if !asked_here.is_empty() => None,
                None => return,
            },
        };
        // Each of the map's sources that is a traced file: its path, its text (read once) and
        // the functions asked of it (`None`: all).
        let traced: Vec<Option<TracedSource>> = (map.iter().flat_map(|m| m.sources()))
            .map(|source| {
                let path = source.path.as_ref()?;
                let asked = asked_of(plan, path);
                let text = std::fs::read_to_string(path).unwrap_or_default();
                (!asked.is_empty()).then(|| (path.display().to_string(), text, asked))
            })
            .collect();
        if map.is_some() && traced.iter().all(Option::is_none) {
            return;
        }
        let source = self.ask(origin, "Debugger.getScriptSource", json!({"scriptId": script}));
        let source = source.as_ref().and_then(|s| s["scriptSource"].as_str()).unwrap_or_default();
        let all = functions::functions(source);
        // Without a map, the file's own text (a loader's wrapper is not the file's).
        let own = match (&map, itself.first()) {
            (None, Some(c)) => std::fs::read_to_string(&c.real_file).unwrap_or_default(),
            _ => String::new(),
        };
        let mut found = Vec::new();
        for function in &all {
            let at = crate::sourcemap::Position { line: function.open.0, column: function.open.1 };
            // Where it is in the file the agent knows: the original, through the map.
            let (file, line, asked) = match &map {
                None => {
                    // A loader that compiled it without a map kept its lines, not its columns.
                    let there = match on_disk {
                        true => opens_there(&own, at, function),
                        false => on_its_line(&own, at.line, function),
                    };
                    if !there {
                        continue;
                    }
                    (shown.clone(), function.open.0, asked_here.clone())
                }
                Some(map) => {
                    let Some((source, position)) = map.original_for(at) else { continue };
                    let Some((file, text, asked)) = &traced[source] else { continue };
                    // Code a transform added (an export's getter) maps to some other text: a
                    // function of the file maps its parameter list to its own.
                    if !opens_there(text, position, function) {
                        continue;
                    }
                    (file.clone(), position.line, asked.clone())
                }
            };
            if asked.iter().any(|f| f.as_deref().is_none_or(|f| names(&function.name, f))) {
                found.push((function, file, u64::from(line) + 1));
            }
        }
        if found.is_empty() || self.compile_calls(origin, script, source, &all, &found, restart) {
            return;
        }
        for (function, file, line) in found {
            self.trace_function(origin, script, function, file, line);
        }
    }

    /// Sets the breakpoints of one function of a parsed script: at its start (reporting its
    /// arguments, never stopping) and at its returns.
    fn trace_function(
        &mut self,
        origin: &Origin,
        script: &str,
        function: &Function,
        file: String,
        line: u64,
    ) {
        let Some(target) = self.targets.get_mut(origin) else { return };
        if !std::mem::replace(&mut target.calls.pausing, true) && self.plan.failures.is_none() {
            let (method, params) = failures::pause_on_exceptions();
            drop(self.send(origin, method, params));
        }
        let Some(target) = self.targets.get_mut(origin) else { return };
        let index = target.calls.functions.len();
        let params: Vec<String> = function.params.iter().flatten().cloned().collect();
        let condition = format!("{}.call({index}, [{}])", self.binding, params.join(", "));
        target.calls.functions.push(Traced1::new(function, file, line));
        if let Some(entry) = self.place_returns(origin, script, function, index) {
            let location = json!({"location": entry, "condition": condition});
            self.ask(origin, "Debugger.setBreakpoint", location);
        }
    }

    /// Sets the breakpoints at a function's returns (its start too, for an empty body: then
    /// one pause is both), and gives its first statement's location (none for an empty body).
    fn place_returns(
        &mut self,
        origin: &Origin,
        script: &str,
        function: &Function,
        index: usize,
    ) -> Option<Value> {
        let locations = self.return_locations(origin, script, function);
        let entry = locations.first()?;
        let target = self.targets.get_mut(origin)?;
        target
            .calls
            .by_location
            .insert((script.to_string(), function.open.0, function.open.1), index);
        let at = |l: &Value| json!({"scriptId": l["scriptId"], "lineNumber": l["lineNumber"], "columnNumber": l["columnNumber"]});
        let empty = entry["type"] == "return";
        let capped = target.calls.capped && !empty;
        for location in locations.iter().filter(|l| l["type"] == "return" && !capped) {
            let set = self.ask(origin, "Debugger.setBreakpoint", json!({"location": at(location)}));
            if let (Some(id), Some(target)) = (
                set.as_ref().and_then(|s| s["breakpointId"].as_str()),
                self.targets.get_mut(origin),
            ) {
                target.calls.returns.insert(id.to_string(), (index, empty));
            }
        }
        (!empty).then(|| at(entry))
    }

    /// A function's breakable locations (V8's, in order): its first statement, its returns
    /// (`type: "return"`).
    fn return_locations(
        &mut self,
        origin: &Origin,
        script: &str,
        function: &Function,
    ) -> Vec<Value> {
        let (line, column) = function.body;
        let start = json!({"scriptId": script, "lineNumber": line, "columnNumber": column});
        let found = self.ask(
            origin,
            "Debugger.getPossibleBreakpoints",
            json!({"start": start, "restrictToFunction": true}),
        );
        found.as_ref().and_then(|f| f["locations"].as_array()).cloned().unwrap_or_default()
    }

    /// A report of the probe's that is the calls': a traced call's start (`C<index>:[previews]`)
    /// or an async one's settling (`R<call>:`, `X<call>:`), or a compiled call's.
    pub(super) fn call_report(&mut self, origin: &Origin, payload: &str) -> bool {
        if self.compiled_report(origin, payload) {
            return true;
        }
        if payload.starts_with('R') || payload.starts_with('X') {
            self.call_settled(origin, payload);
            return true;
        }
        let Some((index, values)) = payload.strip_prefix('C').and_then(|p| p.split_once(':'))
        else {
            return false;
        };
        if let Ok(index) = index.parse::<usize>() {
            self.call_started(origin, index, values);
        }
        true
    }

    /// A traced function started (its entry breakpoint's report): `[previews]` of its
    /// parameters.
    fn call_started(&mut self, origin: &Origin, index: usize, values: &str) {
        let values: Vec<Value> = serde_json::from_str(values).unwrap_or_default();
        self.open_call(origin, index, values, None);
    }

    /// An async function's call settled (`R<n>:` preview, or `X<n>:` {type, message}).
    fn call_settled(&mut self, origin: &Origin, report: &str) {
        let (resolved, rest) = match (report.strip_prefix('R'), report.strip_prefix('X')) {
            (Some(rest), _) => (true, rest),
            (_, Some(rest)) => (false, rest),
            _ => return,
        };
        let Some((number, value)) = rest.split_once(':') else { return };
        let Ok(number) = number.parse::<u64>() else { return };
        let Ok(value) = serde_json::from_str::<Value>(value) else { return };
        let Some(target) = self.targets.get_mut(origin) else { return };
        let Some(at) = target.calls.open.iter().position(|o| o.record["call"] == number) else {
            return;
        };
        let mut call = target.calls.open.remove(at);
        match resolved {
            true => call.record["return"] = value,
            false => call.record["threw"] = value,
        }
        self.ended(origin, call);
    }

    /// A traced call started, with its parameters' previews; `compiled`: its number in its
    /// process and that of the call it runs in (0: none), as the probe counts them.
    fn open_call(
        &mut self,
        origin: &Origin,
        index: usize,
        values: Vec<Value>,
        compiled: Option<(u64, u64)>,
    ) {
        let cap = self.plan.max_calls;
        let Some(target) = self.targets.get_mut(origin) else { return };
        let Some(function) = target.calls.functions.get(index) else { return };
        let recorded = &mut self.calls;
        let mut args = serde_json::Map::new();
        for (name, value) in function.params.iter().zip(values) {
            args.insert(name.clone(), value);
        }
        recorded.next += 1;
        // Its caller: the innermost call on the stack (not an async function awaiting); for a
        // compiled call, the one the probe saw, unless a call with breakpoints (a function
        // left out of the compiled text) started in it.
        let parent = target.calls.open.iter().rfind(|o| match compiled {
            Some((_, parent)) => o.local == Some(parent) || (o.local.is_none() && !o.suspended),
            None => !o.suspended,
        });
        let depth = parent.map_or(0, |p| p.record["depth"].as_u64().unwrap_or(0) + 1);
        let mut record = json!({"call": recorded.next, "function": function.name, "file": function.file,
                                "line": function.line, "depth": depth, "args": args});
        if let Some(parent) = parent {
            record["parent"] = parent.record["call"].clone();
        }
        if recorded.next as usize > cap {
            *recorded.omitted.entry(function.name.clone()).or_default() += 1;
            record["omitted"] = true.into();
            // Past the cap with no recorded call running, a call is only counted (at its
            // start, which never pauses): the returns' pauses go. Compiled calls are only
            // counted from now on.
            if target.calls.open.iter().all(|o| o.record.get("omitted").is_some()) {
                target.calls.open.clear();
                self.stop_watching_returns(origin);
                return;
            }
        }
        let past_cap = recorded.next as usize > cap;
        let local = compiled.map(|(local, _)| local);
        target.calls.open.push(Open {
            record,
            function: index,
            local,
            threw: None,
            suspended: false,
        });
        if compiled.is_some() && past_cap {
            self.count_only(origin);
        }
    }

    /// Tells the probe to count compiled calls from now on, without recording them (once).
    fn count_only(&mut self, origin: &Origin) {
        let Some(target) = self.targets.get_mut(origin) else { return };
        if !std::mem::replace(&mut target.calls.counting, true) {
            let count = format!("{}.count()", self.binding);
            drop(self.send(origin, "Runtime.evaluate", json!({"expression": count})));
        }
    }

    /// Removes the breakpoints at the traced functions' returns (an empty function's, its
    /// start too, stays: its calls are counted there); none are placed after.
    fn stop_watching_returns(&mut self, origin: &Origin) {
        self.count_only(origin);
        let Some(target) = self.targets.get_mut(origin) else { return };
        target.calls.capped = true;
        let returns: Vec<String> = target
            .calls
            .returns
            .iter()
            .filter(|(_, (_, empty))| !empty)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &returns {
            target.calls.returns.remove(id);
        }
        for id in returns {
            drop(self.send(origin, "Debugger.removeBreakpoint", json!({"breakpointId": id})));
        }
    }

    /// A pause at a traced function's return (its value recorded), or at an exception (kept
    /// for the open calls it goes through): how the program goes on from a pause that was the
    /// calls' own (resumed, or a step to where the exception is caught), none for another.
    fn call_paused(&mut self, origin: &Origin, params: &Value) -> Option<&'static str> {
        let stepping = self.plan.failures.is_none();
        let target = self.targets.get_mut(origin)?;
        if matches!(params["reason"].as_str(), Some("exception" | "promiseRejection")) {
            let through = traced_frames(&target.calls, &params["callFrames"], 0);
            if !target.calls.open.iter().any(|o| through.contains(&o.function)) {
                return None;
            }
            let threw = thrown(&params["data"]);
            let mut paused_at_returns = false;
            for open in target.calls.open.iter_mut().filter(|o| through.contains(&o.function)) {
                open.threw = Some(threw.clone());
                paused_at_returns |= open.local.is_none();
            }
            // One step lands where it is caught: the calls it left are known there. (With
            // `failures` the pause is the failure's: they are known at the next return. A
            // compiled call says itself that it left.)
            return match (stepping, paused_at_returns) {
                (true, true) => Some("Debugger.stepInto"),
                (true, false) => Some("Debugger.resume"),
                (false, _) => None,
            };
        }
        // Any other pause: an exception seen before was caught, or went out of the calls it
        // left (no longer on the stack).
        let stack = traced_frames(&target.calls, &params["callFrames"], 0);
        let left = settle(&mut target.calls.open, &stack);
        for call in left {
            self.ended(origin, call);
        }
        let target = self.targets.get_mut(origin)?;
        let hits = params["hitBreakpoints"].as_array().into_iter().flatten();
        let &(index, empty) =
            hits.filter_map(Value::as_str).find_map(|id| target.calls.returns.get(id))?;
        let frame = params["callFrames"][0].clone();
        if empty {
            let values = self.evaluate_params(origin, &frame, index);
            self.open_call(origin, index, values, None);
        }
        let Some(target) = self.targets.get_mut(origin) else { return Some("Debugger.resume") };
        let Some(at) = target.calls.open.iter().rposition(|o| o.function == index) else {
            return Some("Debugger.resume");
        };
        let remote =
            frame.get("returnValue").cloned().unwrap_or_else(|| json!({"type": "undefined"}));
        // An async function returns its promise: the call ends when it settles.
        if target.calls.functions[index].is_async && remote["subtype"] == "promise" {
            let call = &mut target.calls.open[at];
            call.suspended = true;
            let number = call.record["call"].clone();
            let settle = format!("function () {{ {}.settle({number}, this); }}", self.binding);
            if let Some(id) = remote["objectId"].as_str() {
                let params = json!({"objectId": id, "functionDeclaration": settle});
                drop(self.send(origin, "Runtime.callFunctionOn", params));
            }
            return Some("Debugger.resume");
        }
        let mut returned = target.calls.open.remove(at);
        returned.record["return"] = self.preview(origin, &remote).into();
        self.ended(origin, returned);
        Some("Debugger.resume")
    }

    /// A value's preview: a primitive as the protocol gives it, an object through the probe.
    fn preview(&mut self, origin: &Origin, remote: &Value) -> String {
        if remote["type"] == "undefined" {
            return "undefined".into();
        }
        let Some(id) = remote["objectId"].as_str() else { return failures::preview_text(remote) };
        let function = format!("function () {{ return {}.short(this); }}", self.binding);
        let asked = self.ask(
            origin,
            "Runtime.callFunctionOn",
            json!({"objectId": id, "functionDeclaration": function, "returnByValue": true}),
        );
        asked
            .and_then(|a| a.pointer("/result/value").and_then(Value::as_str).map(String::from))
            .unwrap_or_else(|| failures::preview_text(remote))
    }

    /// An empty function's parameters, read in its paused frame.
    fn evaluate_params(&mut self, origin: &Origin, frame: &Value, index: usize) -> Vec<Value> {
        let Some(params) = self
            .targets
            .get(origin)
            .and_then(|t| t.calls.functions.get(index))
            .map(|f| f.params.join(", "))
        else {
            return Vec::new();
        };
        let expression = format!("[{params}].map({}.short)", self.binding);
        let asked = self.ask(origin, "Debugger.evaluateOnCallFrame",
            json!({"callFrameId": frame["callFrameId"], "expression": expression, "returnByValue": true}));
        asked
            .and_then(|a| a.pointer("/result/value").and_then(Value::as_array).cloned())
            .unwrap_or_default()
    }

    fn ended(&mut self, origin: &Origin, call: Open) {
        if call.record.get("omitted").is_some() {
            return;
        }
        let pid = self.processes[origin.connection].pid;
        self.calls.records.push((pid, call.record));
    }

    /// Every call recorded, to the outcome, with those still open (not ended when the program
    /// did, or was killed).
    pub(super) fn hand_calls(&mut self, calls: &mut Calls) {
        let origins: Vec<Origin> = self.targets.keys().cloned().collect();
        for origin in origins {
            let open = self.targets.get_mut(&origin).map(|t| std::mem::take(&mut t.calls.open));
            for mut call in open.into_iter().flatten() {
                if let Some(threw) = call.threw.take() {
                    call.record["threw"] = threw;
                }
                self.ended(&origin, call);
            }
        }
        let recorded = std::mem::take(&mut self.calls);
        for (pid, record) in recorded.records {
            calls.record(pid, record, self.plan.max_calls);
        }
        for (function, count) in &recorded.omitted {
            calls.omit(function, *count);
        }
    }

    /// How many calls ended so far (activity, for `hang`).
    pub(super) fn calls_seen(&self) -> u64 {
        self.calls.next
    }
}

/// The traced functions of a pause's frames from `skip` on, bottom first.
fn traced_frames(traced: &Traced, frames: &Value, skip: usize) -> Vec<usize> {
    let frames = frames.as_array().map_or(&[][..], Vec::as_slice);
    let frames = frames.iter().skip(skip).rev();
    frames
        .filter_map(|f| {
            let l = &f["functionLocation"];
            let line = u32::try_from(l["lineNumber"].as_u64()?).ok()?;
            let column = u32::try_from(l["columnNumber"].as_u64()?).ok()?;
            traced.by_location.get(&(l["scriptId"].as_str()?.to_string(), line, column)).copied()
        })
        .collect()
}

/// `{type, message}` of an exception a pause is at (its message's first line, cut).
fn thrown(error: &Value) -> Value {
    let (class, description) = failures::exception(error);
    let message = failures::message(&description, class);
    let message: String = message.lines().next().unwrap_or_default().chars().take(200).collect();
    let class = if error["className"].is_string() { class } else { "Error" };
    json!({"type": class, "message": message})
}

/// After an exception, at the next pause (`stack`: the traced functions on it, bottom first):
/// the open calls it went through that are not on the stack any more left by it (returned,
/// `threw` set); those still on it caught it.
fn settle(open: &mut Vec<Open>, stack: &[usize]) -> Vec<Open> {
    if open.iter().all(|o| o.threw.is_none()) {
        return Vec::new();
    }
    let mut on_stack = stack.iter().peekable();
    let mut left = Vec::new();
    let mut still = Vec::new();
    for mut call in open.drain(..) {
        if call.local.is_some() {
            still.push(call);
        } else if !call.suspended && on_stack.peek() == Some(&&call.function) {
            on_stack.next();
            call.threw = None;
            still.push(call);
        } else if let Some(threw) = call.threw.take().filter(|_| !call.suspended) {
            call.record["threw"] = threw;
            left.push(call);
        } else {
            still.push(call);
        }
    }
    *open = still;
    left
}

/// The functions the plan traces in `path` (as given, or its real path): `None` for all of its
/// functions; empty when it traces none there.
fn asked_of(plan: &crate::debugger::script::Plan, path: &std::path::Path) -> Vec<Option<String>> {
    traced_at(plan, path, None).into_iter().map(|c| c.function.clone()).collect()
}

/// What the plan traces in the file at `path` (as given, or its real path), or served under
/// `url` (a page's).
fn traced_at<'p>(
    plan: &'p crate::debugger::script::Plan,
    path: &std::path::Path,
    url: Option<(&crate::cdp::urls::UrlForm, &str)>,
) -> Vec<&'p crate::debugger::calls::Traced> {
    let real = std::fs::canonicalize(path).ok();
    let names = |file: &std::path::Path| url.is_some_and(|(urls, url)| urls.names(url, file));
    (plan.calls.iter())
        .filter(|c| {
            path == c.file
                || real.as_deref() == Some(c.real_file.as_path())
                || names(&c.file)
                || names(&c.real_file)
        })
        .collect()
}

/// Whether `asked` names a function found as `name`: wholly (`Cart.total`) or by its own part
/// (`total`).
fn names(name: &str, asked: &str) -> bool {
    name == asked || name.rsplit('.').next() == Some(asked)
}

/// Whether the original file's line `line` (of `text`) is where `function` is defined: its
/// name is on it, or an anonymous function's `=>` or `function`.
fn on_its_line(text: &str, line: u32, function: &Function) -> bool {
    let Some(line) = text.lines().nth(line as usize) else { return false };
    match function.name.rsplit('.').next().unwrap_or_default() {
        "(anonymous)" => line.contains("=>") || line.contains("function"),
        own => line.contains(own),
    }
}

/// Whether the original file's `text` at `at` is where `function`'s parameters open: its `(`,
/// or its one parameter (an unreadable file: taken as so).
fn opens_there(text: &str, at: crate::sourcemap::Position, function: &Function) -> bool {
    if text.is_empty() {
        return true;
    }
    let Some(line) = text.lines().nth(at.line as usize) else { return false };
    let units: Vec<u16> = line.encode_utf16().skip(at.column as usize).take(64).collect();
    let rest = String::from_utf16_lossy(&units);
    let first = function.params.first().and_then(|p| p.as_deref()).unwrap_or("(");
    let own = function.name.rsplit('.').next().unwrap_or_default();
    ["(", "<", first, "function", "async", own].iter().any(|s| !s.is_empty() && rest.starts_with(s))
}
