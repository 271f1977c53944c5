//! The CDP `debug-script` run as the driver sees it (`debugger::script::Collector`): its
//! inputs, each one handled, and its end.

use std::time::Instant;

use serde_json::{json, Value};

use super::{Run, EXIT_GRACE};
use crate::cdp::breakpoints::Breakpoint;
use crate::cdp::follow;
use crate::cdp::{Event, Origin};
use crate::debugger::backend::{Input, Inputs};
use crate::debugger::calls::Calls;
use crate::debugger::model::Undebugged;
use crate::debugger::script::{Collector, Step};
use crate::debugger::Failure;
use crate::log;
use crate::process::Exit;

impl Collector for Run<'_> {
    type Event = Event;

    fn inputs(&self) -> Inputs<Event> {
        Inputs {
            events: match self.held.1.is_empty() {
                true => self.events.clone(),
                false => self.held.1.clone(),
            },
            exited: self.exited.clone(),
            tick: self.nudge.clone(),
            more: crossbeam_channel::never(),
        }
    }

    fn handle(&mut self, input: Input<Event>) -> Result<Step, Failure> {
        match input {
            Input::Event(event) => {
                // Any event of the started process shows it started: no more nudges.
                if event.origin == Origin::default()
                    && event.method != follow::REPORTED
                    && self.runtime.shows_running(&event)
                    && !self.limited
                {
                    self.nudge = crossbeam_channel::never();
                }
                if self.snapshot_chunk(&event) {
                    return Ok(Step::Go);
                }
                self.handle_event(event)
            }
            Input::Closed => Ok(Step::Finished),
            Input::Exited(exit) => {
                if let Some(exit) = exit {
                    self.debuggee.record_exit(exit);
                }
                self.exited = crossbeam_channel::never();
                // Every connection closed after its process said it ended: nothing is in
                // flight. Otherwise read on briefly.
                let open = self.processes.iter().any(|p| p.open);
                Ok(if open || self.top { Step::Draining } else { Step::Finished })
            }
            Input::Tick if self.limited => Ok(Step::Finished),
            Input::Tick => {
                log::warn(format_args!(
                    "no sign of the program running yet; sending runIfWaitingForDebugger again"
                ));
                drop(self.send(&Origin::default(), "Runtime.runIfWaitingForDebugger", json!({})));
                Ok(Step::Go)
            }
        }
    }

    fn stop_hits(&mut self) {
        let placed: Vec<(Origin, Vec<String>)> = self
            .targets
            .iter()
            .map(|(origin, t)| (origin.clone(), t.breakpoint.ids().map(String::from).collect()))
            .collect();
        for (origin, ids) in placed {
            for id in ids {
                drop(self.send(&origin, "Debugger.removeBreakpoint", json!({"breakpointId": id})));
            }
        }
    }

    /// A finished program is let go and exits by itself; one that timed out is killed. Either
    /// way every process of it is gone before this returns.
    fn end(&mut self, timed_out: bool) -> Exit {
        self.timed_out = timed_out;
        log::debug(format_args!("program ended; disconnecting"));
        // No process reports any more; those still waiting for us go with the group.
        self.channel.take();
        for process in self.processes.iter_mut().rev() {
            process.client.close();
        }
        let exit = if !self.runtime.exits_when_let_go() {
            // A browser: its exit says nothing about the page.
            self.debuggee.kill();
            Exit { code: None, signal: None }
        } else if timed_out {
            self.debuggee.kill()
        } else {
            let lingered = self.debuggee.try_exit().is_none();
            // A program stopped by a signal meanwhile has not ended: it has until its timeout.
            let exit = self.debuggee.finish_by(EXIT_GRACE, Some(self.deadline));
            if lingered && exit.code.is_none() {
                let message = format!(
                    "the program did not exit within {} s of its end and was killed",
                    EXIT_GRACE.as_secs()
                );
                self.call.log.send("warning", message);
            }
            exit
        };
        self.debuggee.settle_output();
        log::debug(format_args!("debuggee gone ({}); output complete", exit.describe()));
        exit
    }

    fn abort(&mut self) {
        self.channel.take();
        self.debuggee.kill();
    }

    fn output(&self) -> Value {
        self.debuggee.output().to_json()
    }

    fn processes(&self) -> Vec<Value> {
        self.followed()
    }

    fn stopped(&self) -> Vec<crate::process::Stopped> {
        self.debuggee.stopped()
    }

    fn hang(&mut self, _calls: &mut Calls) -> Vec<Value> {
        self.where_it_hangs()
    }

    fn look_ahead(&mut self, until: Instant) {
        self.look_ahead_awaits(until);
    }

    fn calls(&mut self, calls: &mut Calls) {
        self.hand_calls(calls);
    }

    fn activity(&self) -> u64 {
        self.debuggee.output().written()
            + self.processes.len() as u64
            + self.calls_seen()
            + self.parsed
    }

    fn undebugged(&self) -> Undebugged {
        let followed: Vec<u32> = self.processes.iter().map(|p| p.pid).collect();
        let mut processes = Undebugged::processes(self.debuggee.descendants(None), &followed);
        if self.runtime.children_are_its_own() {
            processes.clear();
        }
        Undebugged { processes, workers: 0 }
    }

    fn probe_lines(&self) -> Vec<Option<u32>> {
        self.probe_lines.clone()
    }

    fn resolution(&mut self) -> (Option<u32>, Option<String>, Vec<Value>) {
        self.retire(|_| true);
        let landed = std::mem::take(&mut self.landed);
        self.bound = landed.line.is_some();
        (landed.line, landed.file, landed.generated)
    }

    fn no_hit_failure(&self, exit: Exit, timed_out: bool) -> Option<Failure> {
        if let Some(end) = self.runtime.end_said().filter(|_| !timed_out) {
            return Some(self.not_hit_before(&end));
        }
        // Not JavaScript, no map on disk, and no process loaded the file itself; unless the
        // program failed, which says more (a syntax error in the file, say).
        let failed = !timed_out && exit.code != Some(0);
        let unplaceable = self.probes.iter().chain([&self.planned]).any(Breakpoint::unplaceable);
        let unplaced = unplaceable && !self.placed_at_load && !failed;
        unplaced.then(|| self.no_map_failure(exit, timed_out))
    }

    fn never_bound(&self) -> String {
        if !self.processes.is_empty() {
            // With `probes`, the first that did not bind.
            let unbound = self.probes.iter().zip(&self.probe_lines).find(|(_, l)| l.is_none());
            return unbound.map_or(&self.planned, |(probe, _)| probe).never_bound();
        }
        format!(
            "the command started no {} process that debug-mcp could follow: run the script with \
             node itself (`node app.js`), or a command that starts node (`npm test`, `npx jest`, \
             a script with a node shebang); a program that clears NODE_OPTIONS for its children \
             cannot be followed",
            self.runtime.language()
        )
    }
}
