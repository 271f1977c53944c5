//! Where a JavaScript program hangs (`debugger::hang`): every thread it follows (each process's
//! main thread, each worker) is asked to pause; one that pauses is running JavaScript, and its
//! stack is walked; one that does not is idle in its event loop, and says what keeps the loop
//! alive (Node's `process.getActiveResourcesInfo()`: timers, sockets, child processes).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crossbeam_channel::select;
use serde_json::{json, Value};

use super::Run;
use crate::cdp::failures;
use crate::cdp::Origin;
use crate::debugger::hang::{thread_record, Walked};

/// How long the threads have to pause, and an idle one to say what it waits on.
const HANG_WAIT: Duration = Duration::from_millis(250);

/// What keeps an idle event loop alive, where the runtime can say (Node, and Deno's Node
/// compatibility); nothing in a page.
const RESOURCES: &str = "(typeof process === 'object' && typeof process.getActiveResourcesInfo \
                         === 'function') ? process.getActiveResourcesInfo() : []";

impl Run<'_> {
    /// Each followed thread's record, before the program is killed for hanging.
    pub(super) fn where_it_hangs(&mut self) -> Vec<Value> {
        let targets: Vec<Origin> = self.targets.keys().cloned().collect();
        for target in &targets {
            drop(self.send(target, "Debugger.pause", json!({})));
        }
        let deadline = crossbeam_channel::at(Instant::now() + HANG_WAIT);
        let mut paused: BTreeMap<Origin, Value> = BTreeMap::new();
        while paused.len() < targets.len() {
            select! {
                recv(self.events) -> event => {
                    let Ok(mut event) = event else { break };
                    if event.method == "Debugger.paused" && targets.contains(&event.origin) {
                        let origin = std::mem::take(&mut event.origin);
                        paused.entry(origin).or_insert(event.params);
                    }
                },
                recv(deadline) -> _ => break,
            }
        }
        targets.iter().map(|target| self.thread(target, paused.get(target))).collect()
    }

    /// One thread's record: its stack where it paused, or idle with what it waits on.
    fn thread(&mut self, target: &Origin, paused: Option<&Value>) -> Value {
        let pid = self.processes.get(target.connection).map_or(0, |p| p.pid);
        let name = self.targets.get(target).map_or("main".into(), |t| t.thread.clone());
        let Some(paused) = paused else {
            // Not running JavaScript: a pause would come with the next task. What the loop
            // waits on is asked with every pause skipped.
            drop(self.send(target, "Debugger.setSkipAllPauses", json!({"skip": true})));
            let asked = self.send(
                target,
                "Runtime.evaluate",
                json!({"expression": RESOURCES, "returnByValue": true}),
            );
            let resources = asked.recv_timeout(HANG_WAIT).ok().and_then(Result::ok);
            let waiting = resources.as_ref().and_then(|r| r.pointer("/result/value")).cloned();
            let mut record = thread_record(pid, &name, &[], Some("idle"), &mut |_| json!({}));
            record["waiting"] = counted(waiting.unwrap_or_else(|| json!([])));
            return record;
        };
        let frames: Vec<Value> = paused["callFrames"].as_array().cloned().unwrap_or_default();
        let Some(scripts) = self.targets.get_mut(target).map(|t| &mut t.scripts) else {
            return thread_record(pid, &name, &[], None, &mut |_| json!({}));
        };
        let walked: Vec<Walked> = frames
            .iter()
            .map(|frame| {
                let shown = scripts.frame_json(frame);
                let file = shown["file"].as_str().map(String::from);
                Walked {
                    function: shown["function"].as_str().unwrap_or_default().to_string(),
                    own: file.as_deref().is_some_and(failures::is_own),
                    file,
                    line: shown["line"].as_u64().unwrap_or(0),
                }
            })
            .collect();
        // The run's deadline has passed (it ends now): each read has a moment of its own.
        let mut read = |method: &str, params: Value| {
            let reply = self.send(target, method, params);
            reply.recv_timeout(HANG_WAIT).ok().and_then(Result::ok)
        };
        thread_record(pid, &name, &walked, None, &mut |i| failures::locals(&frames[i], &mut read))
    }
}

/// Resource names, each once, a repeated one with its count: `["PipeWrap ×6", "Timeout"]`.
fn counted(names: Value) -> Value {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for name in names.as_array().into_iter().flatten().filter_map(Value::as_str) {
        match counts.iter_mut().find(|(n, _)| n == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name.to_string(), 1)),
        }
    }
    let shown = counts.into_iter().map(|(name, count)| match count {
        1 => name,
        _ => format!("{name} ×{count}"),
    });
    Value::from(shown.collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    #[test]
    fn repeated_resources_are_counted() {
        let names = serde_json::json!(["PipeWrap", "Timeout", "PipeWrap", "PipeWrap"]);
        assert_eq!(super::counted(names), serde_json::json!(["PipeWrap ×3", "Timeout"]));
    }
}
