//! Where a program under a debug adapter hangs (`debugger::hang`): the program is paused, and
//! each thread's stack walked (lldb-dap's and gdb's threads; Delve's goroutines, those with a
//! frame of the program's own). What each waits on is read from the runtime's and libraries'
//! frames above its own (Go's `runtime.chanrecv1`, glibc's `pthread_mutex_lock`).

use std::time::{Duration, Instant};

use crossbeam_channel::select;
use serde_json::{json, Value};

use super::Run;
use crate::dap::failures;
use crate::dap::flavour::Flavour;
use crate::debugger::hang::{thread_record, Walked};

/// How long the program has to pause (Delve takes ~0.7 s for a test binary of many
/// goroutines), and each request at the pause to be answered.
const PAUSE_WAIT: Duration = Duration::from_secs(2);
const HANG_WAIT: Duration = Duration::from_secs(1);
/// Frames walked per thread (the own ones listed are fewer).
const DEPTH: usize = 40;

impl<F: Flavour> Run<'_, F> {
    /// Each thread's record, before the program is killed for hanging.
    pub(super) fn where_it_hangs(&mut self) -> Vec<Value> {
        let Some(threads) = self.ask_now("threads", json!({})) else { return Vec::new() };
        let threads = threads["threads"].as_array().cloned().unwrap_or_default();
        let Some(first) = threads.first() else { return Vec::new() };
        // A program stopped already (at a probe, say) is not paused again.
        let pause = self.client.send("pause", json!({"threadId": first["id"]}));
        let deadline = crossbeam_channel::at(Instant::now() + PAUSE_WAIT);
        let events = self.client.events().clone();
        let mut stopped = false;
        while !stopped {
            select! {
                recv(events) -> event => match event {
                    Ok(event) => stopped = event["event"] == "stopped",
                    Err(_) => return Vec::new(),
                },
                recv(deadline) -> _ => break,
            }
        }
        drop(pause);
        // The threads again, now that it stopped (lldb-dap lists a running program's first).
        let threads = match self.ask_now("threads", json!({})) {
            Some(listed) => listed["threads"].as_array().cloned().unwrap_or(threads),
            None => threads,
        };
        self.threads_walked(&threads)
    }

    /// A Go runtime's fatal error that no goroutine of the program raised (`all goroutines
    /// are asleep - deadlock!`, found by the scheduler): a failure whose `threads` are every
    /// goroutine of the program's as `hang` shows them. The program is stopped there already.
    pub(super) fn fatal_of_the_runtime(&mut self, body: &Value) -> Option<Value> {
        let text = body["text"].as_str().filter(|t| !t.is_empty())?;
        let message = failures::unquote(text);
        let kind = body["description"].as_str().unwrap_or("fatal error");
        let threads = self.ask_now("threads", json!({}))?;
        let threads = threads["threads"].as_array().cloned().unwrap_or_default();
        let mut record =
            crate::debugger::script::failure_record("signal", kind, &message, Vec::new(), 0);
        record["threads"] = self.threads_walked(&threads).into();
        Some(record)
    }

    /// Each thread's own frames, with the locals and what it waits on.
    fn threads_walked(&mut self, threads: &[Value]) -> Vec<Value> {
        let threads_named: Vec<&str> = threads.iter().filter_map(|t| t["name"].as_str()).collect();
        let pid = self.program_pid().unwrap_or(0);
        let flavour = self.flavour.clone();
        let mut records = Vec::new();
        for thread in threads {
            let arguments = json!({"threadId": thread["id"], "levels": DEPTH});
            let Some(trace) = self.ask_now("stackTrace", arguments) else { continue };
            let frames = crate::dap::program_frames(&flavour, &trace);
            let walked: Vec<Walked> = frames
                .iter()
                .map(|f| {
                    let file = f.pointer("/source/path").and_then(Value::as_str).map(String::from);
                    Walked {
                        function: f["name"].as_str().unwrap_or_default().to_string(),
                        own: file.as_deref().is_some_and(|p| !flavour.is_library(p)),
                        file,
                        line: f["line"].as_u64().unwrap_or(0),
                    }
                })
                .collect();
            // Go's runtime goroutines (the garbage collector's, the timers') are not the
            // program's: only those in its own code are.
            if flavour.language() == "go" && !walked.iter().any(|w| w.own) {
                continue;
            }
            let name = thread_name(thread, &threads_named);
            let mut ask = |command: &str, arguments: Value| self.ask_now(command, arguments);
            let mut locals = |i: usize| failures::locals(&flavour, &frames[i]["id"], &mut ask);
            records.push(thread_record(pid, &name, &walked, None, &mut locals));
        }
        records
    }

    /// A request answered within a moment of its own (the run's deadline has passed: it ends
    /// now), `None` if refused or late.
    fn ask_now(&mut self, command: &str, arguments: Value) -> Option<Value> {
        let reply = self.client.send(command, arguments);
        reply.recv_timeout(HANG_WAIT).ok().and_then(Result::ok)
    }
}

/// A thread's name as the answer gives it: Delve's without the function it is in (`[Go 18]`:
/// its frames say that), and a name several threads share (lldb names each after the program)
/// with its id.
fn thread_name(thread: &Value, all: &[&str]) -> String {
    let name = thread["name"].as_str().unwrap_or_default();
    if let Some(end) = name.starts_with("[Go ").then(|| name.find(']')).flatten() {
        return name[..=end].to_string();
    }
    match all.iter().filter(|n| **n == name).count() > 1 {
        true => format!("{name} #{}", thread["id"]),
        false => name.to_string(),
    }
}
