//! Where a JavaScript program hangs (`debugger::hang`): every thread it follows (each process's
//! main thread, each worker) is first asked, by a short evaluation, whether it runs JavaScript
//! (the evaluation runs in an interrupt then, and sees the frames it interrupted) and what
//! keeps its event loop alive (Node's `process.getActiveResourcesInfo()`: timers, sockets,
//! child processes). One that runs JavaScript is paused and its stack walked; one that does
//! not is idle, and says what it waits on, and the program's async functions it found waiting
//! at an `await` (`awaits.rs`); one that does not answer is blocked in a native call.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver};
use serde_json::{json, Value};

use super::Run;
use crate::cdp::failures;
use crate::cdp::urls::is_own;
use crate::cdp::{self, Origin};
use crate::debugger::hang::{thread_record, Walked};

/// How long the threads have to answer, and a busy one to pause.
const HANG_WAIT: Duration = Duration::from_millis(250);

/// The name of the script our check runs as: its frames are told from the program's by it,
/// and its loading is not the program's doing something (`hang`).
macro_rules! check_url {
    () => {
        "debug-mcp-hang"
    };
}
pub(super) const CHECK_URL: &str = check_url!();

/// Whether the thread was running JavaScript (frames below the check's own), and what keeps an
/// idle event loop alive where the runtime can say (Node, and Deno's Node compatibility;
/// nothing in a page). A program's own `Error.prepareStackTrace` or `stackTraceLimit` is put
/// back as it was.
const CHECK: &str = concat!(
    "(() => {
  const E = Error, prepare = E.prepareStackTrace, limit = E.stackTraceLimit;
  let frames = [];
  try {
    E.prepareStackTrace = (_, stack) => stack;
    E.stackTraceLimit = 3;
    const o = {};
    E.captureStackTrace(o);
    frames = o.stack;
  } catch (_) {
  } finally {
    E.prepareStackTrace = prepare;
    E.stackTraceLimit = limit;
  }
  const busy = Array.isArray(frames) && frames.some((f) => f.getScriptNameOrSourceURL() !== '",
    check_url!(),
    "');
  const waiting = (typeof process === 'object' && typeof process.getActiveResourcesInfo === 'function')
    ? process.getActiveResourcesInfo() : [];
  return {busy, waiting};
})()
//# sourceURL=",
    check_url!()
);

/// What a thread said when asked.
pub(super) enum Answer {
    /// Running JavaScript.
    Busy,
    /// In its event loop, waiting on these.
    Idle(Value),
    /// No answer in time: inside a native call (a synchronous child process, `execSync`).
    Blocked,
}

impl Run<'_> {
    /// Each followed thread's record, before the program is killed for hanging.
    pub(super) fn where_it_hangs(&mut self) -> Vec<Value> {
        self.finish_snapshots();
        let answers = self.check_threads();
        let busy: Vec<&Origin> =
            answers.iter().filter(|(_, a)| matches!(a, Answer::Busy)).map(|(t, _)| t).collect();
        for target in &busy {
            drop(self.send(target, "Debugger.pause", json!({})));
        }
        let deadline = crossbeam_channel::at(Instant::now() + HANG_WAIT);
        let mut paused: BTreeMap<Origin, Value> = BTreeMap::new();
        while paused.len() < busy.len() {
            select! {
                recv(self.events) -> event => {
                    let Ok(mut event) = event else { break };
                    if event.method == "Debugger.paused" && busy.contains(&&event.origin) {
                        let origin = std::mem::take(&mut event.origin);
                        paused.entry(origin).or_insert(event.params);
                    }
                },
                recv(deadline) -> _ => break,
            }
        }
        (answers.iter())
            .map(|(target, answer)| self.thread(target, answer, paused.get(target)))
            .collect()
    }

    /// Asks every followed thread at once whether it runs JavaScript, within [`HANG_WAIT`].
    pub(super) fn check_threads(&mut self) -> Vec<(Origin, Answer)> {
        let targets: Vec<Origin> = self.targets.keys().cloned().collect();
        let asked: Vec<Receiver<Result<Value, cdp::Error>>> = (targets.iter())
            .map(|target| {
                let params = json!({"expression": CHECK, "returnByValue": true, "silent": true});
                self.send(target, "Runtime.evaluate", params)
            })
            .collect();
        let deadline = Instant::now() + HANG_WAIT;
        let answer = |reply: Receiver<Result<Value, cdp::Error>>| {
            let Ok(Ok(value)) = reply.recv_deadline(deadline) else { return Answer::Blocked };
            match value.pointer("/result/value") {
                Some(v) if v["busy"] == false => Answer::Idle(v["waiting"].clone()),
                _ => Answer::Busy,
            }
        };
        targets.into_iter().zip(asked.into_iter().map(answer)).collect()
    }

    /// One thread's record: its stack where it paused, or idle with what it waits on.
    fn thread(&mut self, target: &Origin, answer: &Answer, paused: Option<&Value>) -> Value {
        let pid = self.processes.get(target.connection).map_or(0, |p| p.pid);
        let name = self.targets.get(target).map_or("main".into(), |t| t.thread.clone());
        let Some(paused) = paused else {
            let state = match answer {
                Answer::Idle(_) => "idle",
                Answer::Blocked => "blocked",
                // Ran JavaScript, but did not pause in time.
                Answer::Busy => "running",
            };
            let mut record = thread_record(pid, &name, &[], Some(state), &mut |_| json!({}));
            if let Answer::Idle(waiting) = answer {
                record["waiting"] = counted(waiting.clone());
                // Said only when some wait: an empty list costs the answer and says nothing.
                if let Some(awaiting) = self.awaiting(target).filter(|a| a != &json!([])) {
                    record["awaiting"] = awaiting;
                }
            }
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
                    own: file.as_deref().is_some_and(is_own),
                    file,
                    line: shown["line"].as_u64().unwrap_or(0),
                }
            })
            .collect();
        let mut read = |method: &str, params: Value| self.read_now(target, method, params);
        thread_record(pid, &name, &walked, None, &mut |i| failures::locals(&frames[i], &mut read))
    }

    /// A request's answer within [`HANG_WAIT`] of its own: the run's deadline is passing, or
    /// has passed (it ends now).
    pub(super) fn read_now(
        &mut self,
        target: &Origin,
        method: &str,
        params: Value,
    ) -> Option<Value> {
        self.send(target, method, params).recv_timeout(HANG_WAIT).ok().and_then(Result::ok)
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
