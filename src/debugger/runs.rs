//! Runs a `debug-script` plan to its answer: the loop that collects hits until a program ends,
//! the deadline passes or the call is cancelled, and the ending: the outcome, or the failure
//! that says why no hit came. One [`Runs`] serves one program or several in turn (`go test
//! ./...` runs each package's test binary, `cargo test` each test program): every program's
//! hits, failures, processes and output go into one answer, with one hit cap, one failure cap
//! and one deadline; programs left out are said.

use std::time::{Duration, Instant};

use crossbeam_channel::select;
use serde_json::{json, Value};

use crate::call::Call;
use crate::debugger::backend::Input;
use crate::debugger::hang;
use crate::debugger::script::{
    describe_processes, stopped_json, timeout_failure, Collector, Outcome, Plan, Probe, Step,
};
use crate::debugger::{Code, Failure};
use crate::log;
use crate::process::{Exit, TAIL_BYTES};

/// How long to keep reading events after the program's process died without saying goodbye:
/// what it sent may still be in the socket.
const EVENTS_GRACE: Duration = Duration::from_millis(500);
/// The output of several programs together keeps at most this much of each stream.
const OUTPUT_BYTES: usize = 2 * TAIL_BYTES;
/// With `hang`, how often the program's activity is looked at (a quarter of `hang`, within).
const QUIET_CHECK_MIN: Duration = Duration::from_millis(20);
const QUIET_CHECK_MAX: Duration = Duration::from_millis(500);

/// How long before a hang would be said the collector looks ahead (`Collector::look_ahead`):
/// a third of the timeout (or of `hang`), at least `LOOK_AHEAD_MIN` (a small Node program's
/// heap snapshot takes ~0.5 s) but no more than three quarters of it, at most `LOOK_AHEAD_MAX`.
const LOOK_AHEAD_MIN: Duration = Duration::from_millis(1500);
const LOOK_AHEAD_MAX: Duration = Duration::from_secs(2);

/// Looks ahead in one run at most this often (each may stall the program while it looks).
const LOOKS: usize = 3;

/// Why collecting stopped.
#[derive(Clone, Copy, PartialEq)]
enum End {
    /// The program finished (or the connection closed).
    Finished,
    TimedOut,
    /// No hit, output or process change for the plan's `hang`.
    Quiet,
}

/// What the runtimes said that a no-hit answer may need: the first of each.
#[derive(Default)]
struct Words {
    /// A runtime's own reason for no hit.
    no_hit: Option<Failure>,
    /// Why the line can never stop.
    no_code: Option<String>,
    /// Why the breakpoint never bound, in the runtime's words.
    never_bound: Option<String>,
}

/// The programs of one `debug-script` call, run one after another into one outcome.
pub(crate) struct Runs<'a> {
    plan: &'a Plan,
    deadline: Instant,
    outcome: Outcome,
    words: Words,
    /// Programs that could not be started (a package that does not build), by label.
    unstarted: Vec<(String, Failure)>,
    /// Programs ran to their end (or to the deadline).
    ran: usize,
}

impl<'a> Runs<'a> {
    pub(crate) fn new(plan: &'a Plan, deadline: Instant) -> Runs<'a> {
        Runs {
            plan,
            deadline,
            outcome: Outcome::default(),
            words: Words::default(),
            unstarted: Vec::new(),
            ran: 0,
        }
    }

    /// Why no further program should run, if none should: the deadline passed. (Past the hit
    /// cap the rest run whole, their hits not taken, as one program runs on past it.)
    pub(crate) fn over(&self) -> Option<&'static str> {
        let over = self.outcome.timed_out || Instant::now() >= self.deadline;
        over.then_some("the timeout came first")
    }

    /// Notes a program left out, and why.
    pub(crate) fn skip(&mut self, label: &str, why: &str) {
        self.outcome.notes.push(format!("Not run: `{label}` ({why})."));
    }

    /// Adds a note to the answer.
    pub(crate) fn note(&mut self, note: String) {
        self.outcome.notes.push(note);
    }

    /// A program that could not be started (its adapter, its build): noted, and the next may
    /// run; a cancel ends every run.
    pub(crate) fn not_started(&mut self, label: &str, failure: Failure) -> Result<(), Failure> {
        if matches!(failure, Failure::Cancelled) {
            return Err(failure);
        }
        self.unstarted.push((label.to_string(), failure));
        Ok(())
    }

    /// Runs one program: `started` is how setting it up went. A program that cannot start is
    /// noted and the next may run; a cancel, or a failure while collecting, ends every run.
    /// Answers how the program ended, when it ran.
    pub(crate) fn run<C: Collector>(
        &mut self,
        collector: &mut C,
        started: Result<(), Failure>,
        plan: &Plan,
        call: &Call,
        label: &str,
    ) -> Result<Option<Exit>, Failure> {
        if let Err(failure) = started {
            collector.abort();
            return self.not_started(label, failure).map(|()| None);
        }
        if self.outcome.hits_capped {
            collector.stop_hits();
        }
        let failures_before = self.outcome.failures.len();
        match collect(collector, &mut self.outcome, plan, call, self.deadline) {
            Ok(end @ (End::TimedOut | End::Quiet)) => {
                // Where it hangs, before the end kills it; `after` the command's start.
                let started = self.deadline.checked_sub(plan.timeout).unwrap_or(self.deadline);
                let after = started.elapsed().as_millis() as u64;
                let threads = hang::alike_together(collector.hang(&mut self.outcome.calls));
                self.outcome.hang = Some(json!({"after": after, "threads": threads}));
                self.outcome.quiet |= end == End::Quiet;
                Ok(Some(self.close(collector, end, failures_before, call)))
            }
            Ok(end) => Ok(Some(self.close(collector, end, failures_before, call))),
            Err(failure) => {
                collector.abort();
                Err(failure)
            }
        }
    }

    /// Ends one program's run and adds what its collector knows to the outcome.
    fn close<C: Collector>(
        &mut self,
        collector: &mut C,
        end: End,
        failures_before: usize,
        call: &Call,
    ) -> Exit {
        collector.calls(&mut self.outcome.calls);
        let exit = collector.end(end != End::Finished);
        // Stopped by a signal when the end killed it: the program had not ended, it ran out of
        // time (the end waits for such a program until the deadline).
        let stopped = collector.stopped();
        let timed_out = end != End::Finished || stopped.iter().any(|s| s.program);
        let hits = self.outcome.results.len();
        call.log.send("info", format!("program ended ({}) after {hits} hit(s)", exit.describe()));
        let output = collector.output();
        for failure in &mut self.outcome.failures[failures_before..] {
            collector.finish_failure(failure, &output);
        }
        let outcome = &mut self.outcome;
        outcome.timed_out |= timed_out;
        // The first program that failed says how the command ended, as `go test ./...` does.
        let failed = |e: &Exit| e.code != Some(0);
        outcome.exit = match outcome.exit {
            Some(earlier) if failed(&earlier) => Some(earlier),
            _ => Some(exit),
        };
        outcome.output = match self.ran {
            0 => output,
            _ => joined_output(&outcome.output, &output),
        };
        let undebugged = collector.undebugged();
        outcome.undebugged.processes.extend(undebugged.processes);
        outcome.undebugged.workers += undebugged.workers;
        outcome.processes.extend(collector.processes());
        let (line, file, generated) = collector.resolution();
        if outcome.resolved_line.is_none() {
            (outcome.resolved_line, outcome.resolved_file) = (line, file);
        }
        for place in generated {
            if !outcome.generated.contains(&place) {
                outcome.generated.push(place);
            }
        }
        let lines = collector.probe_lines();
        outcome.probe_lines.resize(lines.len().max(outcome.probe_lines.len()), None);
        for (known, line) in outcome.probe_lines.iter_mut().zip(lines) {
            *known = known.or(line);
        }
        outcome.stopped.extend(stopped);
        let words = &mut self.words;
        if words.no_hit.is_none() {
            words.no_hit = collector.no_hit_failure(exit, timed_out);
        }
        words.no_code = words.no_code.take().or_else(|| collector.no_code());
        words.never_bound = words.never_bound.take().or_else(|| Some(collector.never_bound()));
        self.ran += 1;
        exit
    }

    /// The answer: the outcome, or why no hit came.
    pub(crate) fn finish(self) -> Result<Outcome, Failure> {
        let Runs { plan, mut outcome, mut words, unstarted, ran, .. } = self;
        outcome.add_places();
        let traced = std::mem::take(&mut outcome.calls.notes);
        outcome.notes.extend(traced);
        if ran == 0 {
            return Err(match unstarted.into_iter().next() {
                Some((_, failure)) => failure,
                None => Failure::new(Code::Exited, "no program of the command was run")
                    .with("notes", outcome.notes.into()),
            });
        }
        for (label, failure) in unstarted {
            let Failure::Error { message, .. } = failure else { continue };
            outcome.notes.push(format!("Not debugged: `{label}` could not start: {message}"));
            // As `go test` reports a package that does not build: a failure of its own.
            if plan.failures.is_some() {
                let mut record = crate::debugger::script::failure_record(
                    "build",
                    "build failed",
                    &message,
                    Vec::new(),
                    0,
                );
                record["test"] = label.into();
                outcome.failures.push(record);
            }
        }
        // Asked for failures, or where it hangs, a run without hits is an answer too.
        if !outcome.results.is_empty() || !plan.expects_hits() {
            return Ok(outcome);
        }
        let exit = outcome.exit.unwrap_or(Exit { code: None, signal: None });
        let timed_out = outcome.timed_out;
        let failure = words.no_hit.take().unwrap_or_else(|| match timed_out {
            true => timeout_failure(plan.timeout),
            false => Failure::new(Code::Exited, "Process exited before breakpoint was hit")
                .with("exit", exit.describe().into()),
        });
        let mut failure = failure.with("output", outcome.output.clone());
        if let Some(stopped) = stopped_json(&outcome.stopped) {
            failure = failure.with("stopped", stopped);
        }
        if let Some(hang) = &outcome.hang {
            failure = failure.with("hang", hang.clone());
        }
        if let Some(code) = exit.code.filter(|_| !timed_out) {
            failure = failure.with("exitCode", code.into());
        }
        if let Some(line) = outcome.resolved_line {
            failure = failure.with("resolvedLine", line.into());
        }
        let hint = never_hit_hint(&words, &outcome, plan, exit);
        if outcome.processes.len() > 1 {
            failure = failure.with("processes", outcome.processes.clone().into());
        }
        if !outcome.notes.is_empty() {
            failure = failure.with("notes", outcome.notes.clone().into());
        }
        Err(outcome.undebugged.add_to(failure.or_with("hint", hint.into())))
    }
}

/// Two programs' `{stdout, stderr, truncated}` one after the other, each stream's end kept.
fn joined_output(earlier: &Value, later: &Value) -> Value {
    let mut truncated = earlier["truncated"] == true || later["truncated"] == true;
    let mut joined = |stream: &str| {
        let text = format!(
            "{}{}",
            earlier[stream].as_str().unwrap_or_default(),
            later[stream].as_str().unwrap_or_default()
        );
        if text.len() <= OUTPUT_BYTES {
            return text;
        }
        truncated = true;
        let mut start = text.len() - OUTPUT_BYTES;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text[start..].to_string()
    };
    let (stdout, stderr) = (joined("stdout"), joined("stderr"));
    json!({"stdout": stdout, "stderr": stderr, "truncated": truncated})
}

fn collect<C: Collector>(
    collector: &mut C,
    outcome: &mut Outcome,
    plan: &Plan,
    call: &Call,
    deadline: Instant,
) -> Result<End, Failure> {
    let mut timeout = crossbeam_channel::at(deadline);
    let mut timeout_means = End::TimedOut;
    // With `hang`: how the program showed it does something, and since when it has not.
    let quiet_check = match plan.hang {
        Some(hang) => crossbeam_channel::tick((hang / 4).clamp(QUIET_CHECK_MIN, QUIET_CHECK_MAX)),
        None => crossbeam_channel::never(),
    };
    let activity = |c: &C, o: &Outcome| {
        let calls = o.calls.len() as u64;
        c.activity() + o.results.len() as u64 + o.failures.len() as u64 + o.more_failures + calls
    };
    let mut last = (activity(collector, outcome), Instant::now());
    // Some of where a program hangs takes long to find: the collector looks ahead once the
    // deadline (or the end of a quiet stretch) is near, each quiet stretch once.
    let lead =
        |window: Duration| (window / 3).max(LOOK_AHEAD_MIN.min(window * 3 / 4)).min(LOOK_AHEAD_MAX);
    let mut look =
        crossbeam_channel::at(deadline.checked_sub(lead(plan.timeout)).unwrap_or(deadline));
    let (mut looks, mut looked) = (0, false);
    loop {
        let inputs = collector.inputs();
        let input = select! {
            recv(quiet_check) -> _ => {
                let now = activity(collector, outcome);
                let quiet = last.1.elapsed();
                if now != last.0 {
                    last = (now, Instant::now());
                    looked = false;
                } else if plan.hang.is_some_and(|hang| quiet >= hang) {
                    return Ok(End::Quiet);
                } else if let Some(hang) = plan.hang.filter(|h| quiet >= *h - lead(*h)) {
                    if !looked && looks < LOOKS {
                        (looked, looks) = (true, looks + 1);
                        collector.look_ahead(last.1 + hang);
                    }
                }
                continue;
            },
            recv(look) -> _ => {
                look = crossbeam_channel::never();
                if looks < LOOKS {
                    looks += 1;
                    collector.look_ahead(deadline);
                }
                continue;
            },
            recv(inputs.events) -> event => event.map_or(Input::Closed, Input::Event),
            recv(inputs.exited) -> exit => Input::Exited(exit.ok()),
            recv(inputs.tick) -> _ => Input::Tick,
            recv(inputs.more) -> event => match event {
                Ok(event) => Input::Event(event),
                Err(_) => continue,
            },
            recv(timeout) -> _ => return Ok(timeout_means),
            recv(call.cancel) -> _ => return Err(Failure::Cancelled),
        };
        match collector.handle(input)? {
            Step::Go => {}
            Step::Hit(hit) => {
                if outcome.hits_capped {
                    continue; // in flight when the breakpoint was removed
                }
                let from = hit.from.as_deref();
                let capped = outcome.record_hit(
                    hit.result,
                    hit.truncated,
                    from,
                    plan.max_hits,
                    &call.progress,
                );
                if let Some(stack) = hit.stack {
                    outcome.attach_stack(stack);
                }
                if capped {
                    collector.stop_hits();
                }
            }
            Step::Stack(stack) => outcome.attach_stack(stack),
            Step::Calls { pid, records, omitted } => {
                outcome.calls.add(pid, records, &omitted, plan.max_calls)
            }
            Step::Failed(failure) => outcome.failed(failure, plan.failures.unwrap_or(0)),
            // A program stopped by a signal (SIGSTOP, a background read of the terminal) has
            // not ended, whatever its runtime said: it ends by its timeout.
            Step::Draining | Step::Finished if program_stopped(collector) => {}
            Step::Draining => {
                look = crossbeam_channel::never();
                timeout = crossbeam_channel::at((Instant::now() + EVENTS_GRACE).min(deadline));
                timeout_means = End::Finished;
            }
            Step::Finished => return Ok(End::Finished),
        }
    }
}

/// Whether the process the run started is stopped by a signal.
fn program_stopped<C: Collector>(collector: &C) -> bool {
    let stopped = collector.stopped().iter().any(|s| s.program);
    if stopped {
        log::debug(format_args!("the program is stopped by a signal: it runs until its timeout"));
    }
    stopped
}

/// Why no hit came, and what to try.
fn never_hit_hint(words: &Words, outcome: &Outcome, plan: &Plan, exit: Exit) -> String {
    let never_bound = || words.never_bound.clone().unwrap_or_default();
    if let Some(why) = &words.no_code {
        return format!("line {}: {why}", plan.line);
    }
    if let Some(stopped) = outcome.stopped.iter().find(|s| s.program) {
        let by = stopped.signal.map(|s| format!(" by {}", crate::sys::signal_name(s)));
        return format!(
            "the program (pid {}) was stopped{} before the line ran, and a stopped process \
             waits for SIGCONT: it stops itself, or reads a terminal it does not own",
            stopped.pid,
            by.unwrap_or_default()
        );
    }
    if !outcome.timed_out && exit.code != Some(0) {
        return format!(
            "the program failed ({}) before the breakpoint was reached: see its stderr",
            exit.describe()
        );
    }
    if !plan.probes.is_empty() {
        return probes_hint(&never_bound, outcome, plan);
    }
    let mut missed = match outcome.resolved_line {
        Some(line) => format!("line {line} never ran"),
        None => format!("no script loaded from {}", plan.file.display()),
    };
    if let Some(processes) = describe_processes(&outcome.processes) {
        missed = format!("{missed} in {processes}");
    }
    if let Some(hint) = outcome.undebugged.hint(&missed) {
        return hint;
    }
    if outcome.processes.len() > 1 {
        let condition = match &plan.condition {
            Some(condition) => format!(" (or `{condition}` was never truthy there)"),
            None => String::new(),
        };
        return format!("{missed}{condition}: check the path, and that the program reaches it");
    }
    match (outcome.resolved_line, &plan.condition) {
        (None, _) => never_bound(),
        (Some(line), None) => {
            format!("the breakpoint was set at line {line} but that line never ran")
        }
        (Some(line), Some(condition)) => format!(
            "the breakpoint was set at line {line}; either that line never ran or `{condition}` \
             was never truthy there"
        ),
    }
}

/// Why none of the `probes` was hit: each probe's line that bound and never ran, or its file
/// that was never loaded (in the runtime's words, `never_bound`, which name that file).
fn probes_hint(never_bound: &dyn Fn() -> String, outcome: &Outcome, plan: &Plan) -> String {
    let lines = plan.probes.iter().enumerate().map(|(index, probe)| {
        let line = outcome.probe_lines.get(index).copied().flatten().filter(|&l| l > 0);
        (probe, line)
    });
    let (bound, unbound): (Vec<_>, Vec<_>) = lines.partition(|(_, line)| line.is_some());
    let places = |probes: &[(&Probe, Option<u32>)]| {
        let places: Vec<String> = probes
            .iter()
            .map(|(probe, line)| format!("{}:{}", probe.file.display(), line.unwrap_or(probe.line)))
            .collect();
        places.join(", ")
    };
    let condition = match plan.probes.iter().any(|p| p.condition.is_some()) {
        true => " (or their conditions were never truthy there)",
        false => "",
    };
    let mut missed = match (bound.is_empty(), unbound.is_empty()) {
        (false, true) => format!("the probes' lines never ran ({}){condition}", places(&bound)),
        (true, _) => format!("no probe bound: no script loaded from {}", places(&unbound)),
        (false, false) => format!(
            "the lines of {} never ran, and no script loaded from {}",
            places(&bound),
            places(&unbound)
        ),
    };
    if let Some(processes) = describe_processes(&outcome.processes) {
        missed = format!("{missed} in {processes}");
    }
    if let Some(hint) = outcome.undebugged.hint(&missed) {
        return hint;
    }
    match bound.is_empty() && outcome.processes.len() <= 1 {
        // The runtime's words for a file never loaded (a source map's, a loader's).
        true => never_bound(),
        false => format!("{missed}: check the paths, and that the program reaches them"),
    }
}

/// Collects hits until the program ends, then ends the run. `started` is how setting up went:
/// on failure, everything the collector started is ended and the failure returned.
pub(crate) fn drive<C: Collector>(
    collector: &mut C,
    started: Result<(), Failure>,
    plan: &Plan,
    call: &Call,
    deadline: Instant,
) -> Result<Outcome, Failure> {
    let mut runs = Runs::new(plan, deadline);
    runs.run(collector, started, plan, call, "")?;
    runs.finish()
}
