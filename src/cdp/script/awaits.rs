//! An idle JavaScript thread's pending awaits: the program's async functions suspended at an
//! `await`. They are on no stack; only a heap snapshot finds them (`cdp::heap`), and a
//! snapshot takes 70-100 ms per MB of heap, too long for the moment a hang is said. So the
//! run looks ahead (`Collector::look_ahead`): shortly before its deadline, an idle thread
//! whose heap is small enough for the time left is snapshotted and its suspended async
//! functions in the program's own code are kept (`HeapProfiler.getObjectByHeapObjectId`).
//! When the hang is said, each is read again: those still suspended say where they wait, with
//! their locals.

use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver};
use serde_json::{json, Value};

use super::hang::Answer;
use super::Run;
use crate::cdp::urls::is_own;
use crate::cdp::{self, failures, heap, Event, Origin};
use crate::debugger::limits::FAILURE_FRAMES;
use crate::log;

/// What a snapshot costs, measured on Node 20 with its transfer and reading: 4 MB used (a
/// small program) 0.43 s, 13 MB (an Express app under `node --test`) 1.03 s; at most this per
/// MB used, and this more.
const PER_MB: Duration = Duration::from_millis(90);
const FIXED: Duration = Duration::from_millis(150);

/// A piece of a snapshot's text.
const CHUNK: &str = "HeapProfiler.addHeapSnapshotChunk";

/// How long the hang report waits for snapshots the look ahead gave up on.
const SNAPSHOT_FINISH: Duration = Duration::from_secs(2);

/// The object group holding the async functions found (released with the run).
const GROUP: &str = "debug-mcp-awaits";

/// A snapshot still being written when the look ahead's time ran out: its thread, its text so
/// far, and the reply that says it is complete.
pub(super) struct Pending {
    target: Origin,
    text: String,
    done: Receiver<Result<Value, cdp::Error>>,
}

impl Pending {
    /// Keeps `event` when it is a piece of this snapshot.
    fn add(&mut self, event: &Event) -> bool {
        let ours = event.method == CHUNK && event.origin == self.target;
        if ours {
            self.text.push_str(event.params["chunk"].as_str().unwrap_or_default());
        }
        ours
    }
}

/// One async function found suspended: its object, and its function's name.
pub(super) struct Held {
    object: String,
    function: String,
}

impl Run<'_> {
    /// Snapshots each idle thread whose heap can be read before `until`, and keeps its
    /// program's suspended async functions. Events that come meanwhile are held for the run.
    pub(super) fn look_ahead_awaits(&mut self, until: Instant) {
        for (target, answer) in self.check_threads() {
            if !matches!(answer, Answer::Idle(_)) {
                continue;
            }
            match self.snapshot(&target, until) {
                Ok(found) => {
                    log::debug(format_args!(
                        "{} suspended function(s) of the program",
                        found.len()
                    ));
                    self.awaits.insert(target, found);
                }
                Err(why) => log::debug(format_args!("no look for pending awaits: {why}")),
            }
        }
    }

    /// The program's async functions suspended in one thread, from its heap.
    fn snapshot(&mut self, target: &Origin, until: Instant) -> Result<Vec<Held>, String> {
        let usage = self.read_now(target, "Runtime.getHeapUsage", json!({}));
        let usage = usage.ok_or("no heap usage")?;
        let used = usage["usedSize"].as_f64().unwrap_or(f64::MAX) / 1_000_000.0;
        let takes = PER_MB.mul_f64(used) + FIXED;
        let left = until.saturating_duration_since(Instant::now());
        if takes > left {
            return Err(format!("{used:.0} MB would take {takes:?}, {left:?} left"));
        }
        drop(self.send(target, "HeapProfiler.enable", json!({})));
        let params = json!({"reportProgress": false, "captureNumericValue": false});
        let done = self.send(target, "HeapProfiler.takeHeapSnapshot", params);
        let mut pending = Pending { target: target.clone(), text: String::new(), done };
        if !self.read_snapshot(&mut pending, until)? {
            // The thread writes it on, and answers nothing else until it is done: the hang
            // report reads the rest (`finish_snapshots`).
            self.snapshots_left.push(pending);
            return Err("the snapshot took too long".into());
        }
        self.suspended(target, &pending.text)
    }

    /// Reads a snapshot's text until it is complete (true) or `until` (false). Other events
    /// that come meanwhile are held for the run.
    fn read_snapshot(&mut self, pending: &mut Pending, until: Instant) -> Result<bool, String> {
        let end = crossbeam_channel::at(until);
        loop {
            select! {
                recv(self.events) -> event => {
                    let Ok(event) = event else { return Err("the connection closed".into()) };
                    self.keep(pending, event);
                },
                recv(pending.done) -> reply => {
                    let Ok(Ok(_)) = reply else { return Err("the snapshot failed".into()) };
                    // The connection's reader queued the last pieces before the reply, but
                    // the select may take the reply first: they are read now.
                    while let Ok(event) = self.events.try_recv() {
                        self.keep(pending, event);
                    }
                    return Ok(true);
                },
                recv(end) -> _ => return Ok(false),
            }
        }
    }

    /// Keeps `event` with `pending` (or another snapshot) when it is a piece of it; holds any
    /// other event for the run.
    fn keep(&mut self, pending: &mut Pending, event: Event) {
        if !pending.add(&event) && !self.snapshot_chunk(&event) {
            drop(self.held.0.send(event));
        }
    }

    /// The program's async functions suspended in the heap of `target`'s snapshot `text`.
    fn suspended(&mut self, target: &Origin, text: &str) -> Result<Vec<Held>, String> {
        let scripts = &self.targets.get(target).ok_or("the thread ended")?.scripts;
        let own = |script: &str| is_own(&scripts.file(script));
        let found = heap::generators(text, &own)?;
        let names: Vec<&str> = found.iter().map(|g| g.function.as_str()).collect();
        log::debug(format_args!("the program's suspended functions, innermost first: {names:?}"));
        let mut held = Vec::new();
        for generator in found {
            let params = json!({"objectId": generator.heap_id.to_string(), "objectGroup": GROUP});
            let opened = self.read_now(target, "HeapProfiler.getObjectByHeapObjectId", params);
            if let Some(id) = opened.as_ref().and_then(|o| o.pointer("/result/objectId")) {
                let object = id.as_str().unwrap_or_default().to_string();
                held.push(Held { object, function: generator.function });
            }
        }
        Ok(held)
    }

    /// Whether `event` is a piece of a snapshot the look ahead gave up waiting for: then kept
    /// with it.
    pub(super) fn snapshot_chunk(&mut self, event: &Event) -> bool {
        if event.method != CHUNK {
            return false;
        }
        for pending in &mut self.snapshots_left {
            pending.add(event);
        }
        true
    }

    /// Reads on (a moment at most) the snapshots still being written when the look ahead
    /// gave up on them (a loaded machine): until then their threads answer nothing, and
    /// would seem blocked; once complete, their suspended functions are kept as the look
    /// ahead's would have been.
    pub(super) fn finish_snapshots(&mut self) {
        let until = Instant::now() + SNAPSHOT_FINISH;
        // One at a time: the others' pieces that come meanwhile are kept with them.
        while !self.snapshots_left.is_empty() {
            let mut pending = self.snapshots_left.remove(0);
            let found = match self.read_snapshot(&mut pending, until) {
                Ok(true) => self.suspended(&pending.target, &pending.text),
                Ok(false) => Err("the snapshot took too long".into()),
                Err(why) => Err(why),
            };
            match found {
                Ok(found) => drop(self.awaits.insert(pending.target, found)),
                Err(why) => log::debug(format_args!("no pending awaits: {why}")),
            }
        }
    }

    /// With the awaits kept for this thread: those still suspended, `[{function, file, line,
    /// locals}]` (the program's own, at most as many as a failure's frames).
    pub(super) fn awaiting(&mut self, target: &Origin) -> Option<Value> {
        let held = self.awaits.remove(target)?;
        let mut shown = Vec::new();
        for one in &held {
            if shown.len() == FAILURE_FRAMES {
                break;
            }
            let params = json!({"objectId": one.object, "ownProperties": true});
            let Some(object) = self.read_now(target, "Runtime.getProperties", params) else {
                continue;
            };
            let internal = |name: &str| {
                let properties = object["internalProperties"].as_array().into_iter().flatten();
                properties.filter(|p| p["name"] == name).map(|p| p["value"].clone()).next()
            };
            let state = internal("[[GeneratorState]]").unwrap_or_default();
            let function = internal("[[GeneratorFunction]]").unwrap_or_default();
            if state["value"] != "suspended" || function["className"] != "AsyncFunction" {
                continue;
            }
            let location = internal("[[GeneratorLocation]]").unwrap_or_default()["value"].clone();
            let frame = json!({"functionName": one.function, "location": location});
            let Some(place) = self.targets.get_mut(target).map(|t| t.scripts.frame_json(&frame))
            else {
                continue;
            };
            let scopes = internal("[[Scopes]]").unwrap_or_default();
            let locals = self.await_locals(target, &scopes["objectId"]);
            shown.push(json!({
                "function": place["function"], "file": place["file"], "line": place["line"],
                "locals": locals,
            }));
        }
        drop(self.send(target, "Runtime.releaseObjectGroup", json!({"objectGroup": GROUP})));
        Some(Value::from(shown))
    }

    /// A suspended function's locals, from its `[[Scopes]]` (the local and block scopes).
    fn await_locals(&mut self, target: &Origin, scopes: &Value) -> Value {
        let mut read = |method: &str, params: Value| self.read_now(target, method, params);
        let Some(id) = scopes.as_str() else { return json!({}) };
        let listed = read("Runtime.getProperties", json!({"objectId": id, "ownProperties": true}));
        // Each scope is shown as `Local (handle)`, `Block`, `Closure (…)`, `Global`: the frame a
        // failure's locals come from has the same kinds, by type.
        let chain: Vec<Value> = (listed.as_ref().and_then(|l| l["result"].as_array()))
            .into_iter()
            .flatten()
            .map(|scope| {
                let description = scope["value"]["description"].as_str().unwrap_or_default();
                let kind = description.split(' ').next().unwrap_or_default().to_lowercase();
                json!({"type": kind, "object": {"objectId": scope["value"]["objectId"]}})
            })
            .collect();
        failures::locals(&json!({"scopeChain": chain}), &mut read)
    }
}
