//! What a runtime must provide to be debugged through a session: the [`Backend`] trait. The
//! session actor (`session.rs`) owns everything a runtime does not need to know (the waiting
//! call, the clocks, the breakpoint table and hit counts, the console buffer, the answers'
//! JSON); a backend speaks its debugger's protocol and keeps its quirks to itself.

use crossbeam_channel::Receiver;
use serde_json::Value;

use crate::debugger::model::Undebugged;
use crate::debugger::model::{Action, BreakpointSpec, Resolution, Source, Stop, Thread};
use crate::debugger::model::{Frame, Variable, VariablesQuery};
use crate::debugger::{Code, Failure};
use crate::process::{Exit, Output};

/// What the actor selects on for a backend, besides its own commands and clocks. Each may be
/// `never()`.
pub(crate) struct Inputs<E> {
    /// The debugger's events; closed when the connection ends.
    pub(crate) events: Receiver<E>,
    /// The program's exit, for a program the backend started itself.
    pub(crate) exited: Receiver<Exit>,
    /// A clock the backend wants a turn on (Node's start-up nudge).
    pub(crate) tick: Receiver<std::time::Instant>,
    /// The events of other connections (the program's followed child processes); closing
    /// means nothing here.
    pub(crate) more: Receiver<E>,
}

/// One thing that reached the actor from the backend's side.
pub(crate) enum Input<E> {
    Event(E),
    /// The event channel closed.
    Closed,
    /// The program's exit (`None`: its watcher went away).
    Exited(Option<Exit>),
    Tick,
}

/// What an input meant, in runtime-neutral terms.
pub(crate) enum Happening<P> {
    Stopped(Stop<P>),
    Resumed,
    /// A console message (`{type, text}`).
    Console(Value),
    /// A logpoint's message; `breakpoint` is the session's breakpoint id when known.
    Logpoint {
        breakpoint: Option<String>,
        text: Value,
    },
    /// The program ended, or the debugger let go of it; the exit code when the debugger said.
    Ended(Option<i32>),
}

/// A runtime's debugger, as one session drives it. Every call runs on the session's thread;
/// requests that wait on the debugger keep their own time limit.
pub(crate) trait Backend: Send + 'static {
    /// What the debugger's connection delivers (a CDP event, a DAP message).
    type Event: Send + 'static;
    /// What the backend keeps of a stop to read its frames and values.
    type Paused;
    /// `language` in answers: `node`, `python`.
    fn language(&self) -> &str;
    /// Whether `debug-evaluate` works while the program runs.
    const EVALUATES_RUNNING: bool;

    fn inputs(&self) -> Inputs<Self::Event>;
    /// Interprets an input; `None` when it changes nothing the actor keeps.
    fn handle(&mut self, input: Input<Self::Event>) -> Option<Happening<Self::Paused>>;
    /// Happenings that came while the backend was setting up, before the actor's loop.
    fn early(&mut self) -> Vec<Happening<Self::Paused>> {
        Vec::new()
    }
    /// Lets the program run once its breakpoints are set (launch and attach both).
    fn begin(&mut self) -> Result<(), Failure>;

    /// Places breakpoint `id`.
    fn set_breakpoint(&mut self, id: &str, spec: &BreakpointSpec) -> Result<(), Failure>;
    fn remove_breakpoint(&mut self, id: &str) -> Result<(), Failure>;
    /// Where breakpoint `id` is bound now.
    fn resolution(&self, id: &str) -> Resolution;
    /// Arms watchpoint `id` on what `expression` names in the paused top frame, stopping on
    /// `access` (`write`, `read` or `readWrite`); answers an expression that reads the
    /// watched value wherever the program stops next (its address, typed).
    fn set_watchpoint(
        &mut self,
        id: &str,
        expression: &str,
        access: &str,
        paused: &Self::Paused,
    ) -> Result<String, Failure> {
        let _ = (id, expression, access, paused);
        Err(Failure::new(
            Code::Unsupported,
            format!(
                "{}'s debugger has no watchpoints (data breakpoints): set a breakpoint with a \
                 condition on the lines that change it, or debug-watch the expression",
                self.language()
            ),
        ))
    }
    fn remove_watchpoint(&mut self, id: &str) -> Result<(), Failure> {
        let _ = id;
        Ok(())
    }

    /// Tells the program to go on (`paused` is `None` while it runs: only `Continue` and
    /// `Pause` come then).
    fn resume(&mut self, action: Action, paused: Option<&Self::Paused>) -> Result<(), Failure>;
    /// Up to `max` frames of the stopped thread, awaited callers too when `include_async`, and
    /// how many there are in all when that is not the stop's own count.
    fn stack(
        &mut self,
        paused: &Self::Paused,
        max: usize,
        include_async: bool,
    ) -> (Vec<Frame>, Option<usize>);
    /// The stop state's `locals`: the top frame's, at most `max`.
    fn locals(&mut self, paused: &Self::Paused, max: usize) -> Vec<Variable>;
    /// A frame's scope variables (`frame` is checked against the stop's frame count).
    fn scope_variables(
        &mut self,
        paused: &Self::Paused,
        query: &VariablesQuery,
    ) -> Result<Vec<Variable>, Failure>;
    /// The value of `path` in the query's frame, `{type, value}`, and its children (a page of
    /// them: the query's `start` and `max_items`).
    fn expand(
        &mut self,
        paused: &Self::Paused,
        path: &str,
        query: &VariablesQuery,
    ) -> Result<(Value, Value, Vec<Variable>), Failure>;
    /// `{type, value}` of an expression, typed by the runtime's probe and cut at `max_chars`
    /// (then with `truncated: true`); `paused` is `None` only when
    /// [`Backend::EVALUATES_RUNNING`].
    fn evaluate(
        &mut self,
        paused: Option<&Self::Paused>,
        expression: &str,
        frame: usize,
        max_chars: usize,
    ) -> Result<Value, Failure>;
    /// Sets `name` in `scope` of a frame to the value of `value`; answers the new `{type,
    /// value}` as `evaluate` would, within `max_chars`.
    fn set_variable(
        &mut self,
        paused: &Self::Paused,
        name: &str,
        value: &str,
        frame: usize,
        scope: &str,
        max_chars: usize,
    ) -> Result<Value, Failure>;
    /// The program's threads, and the id of the one `paused` is in.
    fn threads(&mut self, paused: Option<&Self::Paused>) -> Result<(Vec<Thread>, String), Failure>;
    /// The stop as seen from another thread (its frames, locals, stepping).
    fn select_thread(
        &mut self,
        paused: &Self::Paused,
        id: &str,
    ) -> Result<Stop<Self::Paused>, Failure>;
    /// `none`, `uncaught` or `all`; with `all`, exceptions thrown and caught inside libraries
    /// and the runtime's own code stop the program only when `include_libraries`. Answers a
    /// note when part of it waits for the program to start again.
    fn pause_on_exceptions(
        &mut self,
        state: &str,
        include_libraries: bool,
    ) -> Result<Option<String>, Failure>;
    fn loaded_sources(
        &mut self,
        paused: Option<&Self::Paused>,
        include_internal: bool,
    ) -> Result<Vec<Source>, Failure>;
    /// The text of a loaded script that is not on disk.
    fn source_text(&mut self, file: &str) -> Result<Value, Failure>;
    /// The text of a source file that is not on disk but that the runtime knows (a source
    /// map's `sourcesContent`), for the lines around a stop.
    fn original_text(&self, _file: &str) -> Option<String> {
        None
    }

    /// The program's stdout and stderr, where the backend gathers them.
    fn output(&self) -> Output;
    /// What the program ran that is not debugged (children, workers).
    fn undebugged(&self) -> Undebugged;
    /// The processes debugged, `{pid, command, parent?, threads?}` each, for `debug-sessions`.
    fn processes(&self) -> Vec<Value> {
        Vec::new()
    }
    /// Which process (and thread) a stop is in: `{pid, command?, thread?}`.
    fn stopped_in(&self, _paused: &Self::Paused) -> Option<Value> {
        None
    }
    /// The program ended (`code` when the debugger said how), or `forced`: end it. Lets the
    /// program exit, records how; for an attached program, detaches.
    fn end(&mut self, code: Option<i32>, forced: bool) -> Exit;
    /// Said in the exited state of an attached program: what the debugger could not tell.
    fn attached_note(&self) -> Option<String>;
    /// Where an attached program's files are here, when guessed (no `pathMappings` given).
    fn guessed_paths(&self) -> Option<&crate::debugger::model::PathMapping> {
        None
    }
    /// Said in the exited state when the debugger itself ended under the program (killed,
    /// crashed): the message, and `{adapter, pid, exitCode | signal, stderr, program}`.
    fn debugger_ended(&self) -> Option<(String, Value)> {
        None
    }
    /// The program's processes that a signal stopped (not ended); once the session ended
    /// them, those stopped then.
    fn stopped(&self) -> Vec<crate::process::Stopped> {
        Vec::new()
    }
    /// The session is over: nothing of ours may be left running.
    fn shutdown(&mut self);
}
