//! The actor against a fake backend, in memory: what a waiting call is answered with when the
//! program stops, runs past the deadline, exits, is left idle, or the start is cancelled; busy
//! calls; the breakpoint table and hit counts. No runtime is started.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{never, unbounded, Receiver, Sender};
use serde_json::{json, Value};

use super::{start_with, Begin, Command, Reply};
use super::{Clocks, Handle};
use crate::debugger::backend::{Backend, Happening, Input, Inputs};
use crate::debugger::model::Undebugged;
use crate::debugger::model::{
    Action, BreakpointSpec, Frame, Location, Reason, Resolution, Source, Stop, Thread, Variable,
    VariablesQuery,
};
use crate::debugger::{Code, Failure};
use crate::process::{Exit, Output};

/// Every wait in these tests ends by this.
const PATIENCE: Duration = Duration::from_secs(5);

/// A backend whose happenings the test sends, and which logs what the actor asked of it.
struct Fake {
    events: Receiver<Happening<()>>,
    log: Arc<Mutex<Vec<String>>>,
    placed: Vec<String>,
}

impl Fake {
    fn note(&self, what: String) {
        self.log.lock().unwrap().push(what);
    }
}

impl Backend for Fake {
    type Event = Happening<()>;
    type Paused = ();
    fn language(&self) -> &str {
        "fake"
    }
    const EVALUATES_RUNNING: bool = false;

    fn inputs(&self) -> Inputs<Happening<()>> {
        Inputs { events: self.events.clone(), exited: never(), tick: never(), more: never() }
    }
    fn handle(&mut self, input: Input<Happening<()>>) -> Option<Happening<()>> {
        match input {
            Input::Event(happening) => Some(happening),
            Input::Closed => {
                self.events = never();
                Some(Happening::Ended(None))
            }
            Input::Exited(_) | Input::Tick => None,
        }
    }
    fn begin(&mut self) -> Result<(), Failure> {
        self.note("begin".into());
        Ok(())
    }
    fn set_breakpoint(&mut self, id: &str, spec: &BreakpointSpec) -> Result<(), Failure> {
        if spec.line == 0 {
            return Err(Failure::new(Code::NoCodeAtLine, "line 0"));
        }
        self.placed.push(id.into());
        Ok(())
    }
    fn remove_breakpoint(&mut self, id: &str) -> Result<(), Failure> {
        self.placed.retain(|p| p != id);
        Ok(())
    }
    fn resolution(&self, _: &str) -> Resolution {
        Resolution {
            resolved: vec![json!({"file": "/app.js", "line": 3, "column": 1})],
            ..Resolution::default()
        }
    }
    fn resume(&mut self, action: Action, paused: Option<&()>) -> Result<(), Failure> {
        self.note(format!("resume {action:?} paused={}", paused.is_some()));
        Ok(())
    }
    fn stack(&mut self, _: &(), max: usize, _: bool) -> (Vec<Frame>, Option<usize>) {
        let frame = |line| Frame { location: location(line), async_reason: None };
        ([frame(3), frame(9)].into_iter().take(max).collect(), None)
    }
    fn locals(&mut self, _: &(), _: usize) -> Vec<Variable> {
        vec![Variable {
            name: "total".into(),
            kind: "number".into(),
            value: 11.700000000000001.into(),
            expandable: false,
            scope: Some("local".into()),
        }]
    }
    fn scope_variables(&mut self, p: &(), _: &VariablesQuery) -> Result<Vec<Variable>, Failure> {
        Ok(self.locals(p, 1))
    }
    fn expand(&mut self, _: &(), _: &str, _: &VariablesQuery) -> ExpandResult {
        Ok((json!("object"), json!("Object"), Vec::new()))
    }
    fn evaluate(&mut self, _: Option<&()>, e: &str, _: usize, max: usize) -> EvalResult {
        let cut: String = e.chars().take(max).collect();
        match cut.len() < e.len() {
            true => Ok(json!({"type": "string", "value": cut, "truncated": true})),
            false => Ok(json!({"type": "string", "value": e})),
        }
    }
    fn set_variable(
        &mut self,
        _: &(),
        _: &str,
        value: &str,
        _: usize,
        _: &str,
        _: usize,
    ) -> Result<Value, Failure> {
        Ok(json!({"type": "string", "value": value}))
    }
    fn threads(&mut self, _: Option<&()>) -> Result<(Vec<Thread>, String), Failure> {
        Ok((vec![Thread { id: "1".into(), name: "main".into() }], "1".into()))
    }
    fn select_thread(&mut self, _: &(), id: &str) -> Result<Stop<()>, Failure> {
        Err(Failure::new(Code::InvalidArguments, id.to_string()))
    }
    fn pause_on_exceptions(&mut self, _: &str, _: bool) -> Result<Option<String>, Failure> {
        Ok(None)
    }
    fn loaded_sources(&mut self, _: Option<&()>, _: bool) -> Result<Vec<Source>, Failure> {
        Ok(Vec::new())
    }
    fn source_text(&mut self, file: &str) -> Result<Value, Failure> {
        Err(Failure::new(Code::FileNotFound, file.to_string()))
    }
    fn output(&self) -> Output {
        let output = Output::default();
        output.push(false, "hello\n");
        output
    }
    fn undebugged(&self) -> Undebugged {
        Undebugged::default()
    }
    fn end(&mut self, code: Option<i32>, forced: bool) -> Exit {
        self.note(format!("end forced={forced}"));
        Exit { code: code.or(forced.then_some(137)), signal: None }
    }
    fn attached_note(&self) -> Option<String> {
        None
    }
    fn shutdown(&mut self) {
        self.note("shutdown".into());
    }
}

type EvalResult = Result<Value, Failure>;
type ExpandResult = Result<(Value, Value, Vec<Variable>), Failure>;

fn location(line: u64) -> Location {
    Location {
        function: "main".into(),
        file: Some("/app.js".into()),
        line,
        column: Some(1),
        generated: None,
    }
}

fn stop(reason: Reason, hits: &[&str]) -> Happening<()> {
    Happening::Stopped(Stop {
        reason,
        hits: hits.iter().map(|h| h.to_string()).collect(),
        location: location(3),
        exception: None,
        frames: 2,
        paused: (),
    })
}

fn spec(line: u32) -> BreakpointSpec {
    BreakpointSpec {
        file: "/app.js".into(),
        real_file: "/app.js".into(),
        line,
        column: None,
        condition: None,
        log_message: None,
        hit_count: None,
    }
}

/// A session over a fake backend, and how to drive it.
struct Session {
    handle: Option<Handle>,
    first: Result<Value, Failure>,
    program: Sender<Happening<()>>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Session {
    /// Starts a session; `early` is sent before it begins, so the first answer sees it.
    fn start(timeout: Duration, idle: Duration, early: Vec<Happening<()>>) -> Session {
        Session::start_with(timeout, idle, early, vec![spec(3)], &never())
    }

    fn start_with(
        timeout: Duration,
        idle: Duration,
        early: Vec<Happening<()>>,
        breakpoints: Vec<BreakpointSpec>,
        cancel: &Receiver<()>,
    ) -> Session {
        let (program, events) = unbounded();
        for happening in early {
            program.send(happening).unwrap();
        }
        let log = Arc::new(Mutex::new(Vec::new()));
        let backend = Fake { events, log: log.clone(), placed: Vec::new() };
        let clocks = Clocks::with_idle_limit(idle);
        let started = start_with("1", Arc::new(|_: &str| {}), cancel, clocks, move |_| {
            let command_line = "fake app".into();
            let pause_on_exceptions = "none".into();
            Ok(Begin {
                backend,
                command_line,
                breakpoints,
                timeout,
                relaunch: None,
                pause_on_exceptions,
                cwd: None,
            })
        });
        let (handle, first) = match started {
            Ok((handle, first)) => (Some(handle), Ok(first)),
            Err(failure) => (None, Err(failure)),
        };
        Session { handle, first, program, log }
    }

    fn ask(&self, command: impl FnOnce(Sender<Reply>) -> Command) -> Reply {
        let (reply, answer) = crossbeam_channel::bounded(1);
        self.handle.as_ref().unwrap().commands.send(command(reply)).unwrap();
        answer.recv_timeout(PATIENCE).expect("the actor answers in time")
    }

    fn summary(&self) -> Value {
        self.handle.as_ref().unwrap().summary.lock().unwrap().clone()
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

fn code(reply: Reply) -> Code {
    match reply {
        Err(Failure::Error { code, .. }) => code,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn the_first_answer_is_the_first_stop_with_its_locals_and_hits() {
    let session = Session::start(PATIENCE, PATIENCE, vec![stop(Reason::Unsaid, &["1"])]);
    let first = session.first.as_ref().unwrap();
    assert_eq!(first["state"], "paused");
    assert_eq!(first["reason"], "breakpoint", "{first}");
    assert_eq!(first["hitBreakpoints"], json!(["1"]));
    assert_eq!(first["location"]["line"], 3);
    assert_eq!(
        first["locals"],
        json!([{"name": "total", "type": "number", "value": 11.700000000000001}])
    );
    let summary = session.summary();
    assert_eq!(summary["language"], "fake");
    assert_eq!(summary["breakpoints"][0]["hits"], 1);
    assert_eq!(session.log()[0], "begin");
}

#[test]
fn a_call_that_waits_past_its_deadline_gets_the_running_state() {
    let session = Session::start(Duration::from_millis(30), PATIENCE, Vec::new());
    let first = session.first.as_ref().unwrap();
    assert_eq!(first["state"], "running", "{first}");
    assert!(first["message"].as_str().unwrap().contains("`pause: true`"));
}

#[test]
fn a_second_waiting_call_is_busy_and_a_stop_answers_the_first() {
    let session = Session::start(Duration::ZERO, PATIENCE, Vec::new());
    let (first_reply, first_answer) = crossbeam_channel::bounded(1);
    let commands = &session.handle.as_ref().unwrap().commands;
    let resume =
        |reply| Command::Resume { action: Action::Continue, timeout: PATIENCE, to: None, reply };
    commands.send(resume(first_reply)).unwrap();
    assert_eq!(code(session.ask(resume)), Code::Busy);
    // Stepping while running is refused; evaluating needs a stop in this runtime.
    let step =
        |reply| Command::Resume { action: Action::StepOver, timeout: PATIENCE, to: None, reply };
    assert_eq!(code(session.ask(step)), Code::Busy);
    let evaluate =
        |reply| Command::Evaluate { expression: "x".into(), frame: 0, max_chars: 100, reply };
    assert_eq!(code(session.ask(evaluate)), Code::Running);
    session.program.send(stop(Reason::Step, &[])).unwrap();
    let state = first_answer.recv_timeout(PATIENCE).unwrap().unwrap();
    assert_eq!(state["reason"], "step");
    // Paused now: frames are checked, and evaluation reaches the backend.
    let bad_frame =
        |reply| Command::Evaluate { expression: "x".into(), frame: 2, max_chars: 100, reply };
    assert_eq!(code(session.ask(bad_frame)), Code::InvalidArguments);
    assert_eq!(session.ask(evaluate).unwrap()["value"], "x");
    let stack = session.ask(|reply| Command::Stack { max_frames: 1, include_async: false, reply });
    let stack = stack.unwrap();
    assert_eq!(stack["totalFrames"], 2);
    assert_eq!(
        stack["frames"],
        json!([{"index": 0, "function": "main", "file": "/app.js", "line": 3, "column": 1}])
    );
    assert_eq!(session.log()[1], "resume Continue paused=false");
}

#[test]
fn a_value_cut_at_max_chars_says_how_to_see_more() {
    let session = Session::start(PATIENCE, PATIENCE, vec![stop(Reason::Breakpoint, &["1"])]);
    let evaluate = |reply| Command::Evaluate {
        expression: "order.lines".into(),
        frame: 0,
        max_chars: 5,
        reply,
    };
    let value = session.ask(evaluate).unwrap();
    assert_eq!((&value["value"], &value["truncated"]), (&json!("order"), &json!(true)));
    let hint = value["hint"].as_str().unwrap();
    assert!(hint.contains("maxChars") && hint.contains(r#"{"path": "order.lines"}"#), "{hint}");
}

#[test]
fn an_unsaid_reason_is_named_after_the_last_action() {
    let session = Session::start(PATIENCE, PATIENCE, vec![stop(Reason::Entry, &[])]);
    assert_eq!(session.first.as_ref().unwrap()["reason"], "entry");
    let step =
        |reply| Command::Resume { action: Action::StepInto, timeout: PATIENCE, to: None, reply };
    let (reply, answer) = crossbeam_channel::bounded(1);
    session.handle.as_ref().unwrap().commands.send(step(reply)).unwrap();
    // The stop comes after the step was taken (both waiting at once, the actor may take
    // either first).
    let deadline = std::time::Instant::now() + PATIENCE;
    while session.log().len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    session.program.send(stop(Reason::Unsaid, &[])).unwrap();
    assert_eq!(answer.recv_timeout(PATIENCE).unwrap().unwrap()["reason"], "step");
    assert_eq!(session.log()[1], "resume StepInto paused=true");
}

#[test]
fn the_end_answers_the_waiting_call_and_later_calls_say_exited() {
    let session = Session::start(PATIENCE, PATIENCE, vec![Happening::Ended(Some(3))]);
    let first = session.first.as_ref().unwrap();
    assert_eq!(first["state"], "exited", "{first}");
    assert_eq!(first["exitCode"], 3);
    assert_eq!(first["stdout"], "hello\n");
    assert!(first.get("signal").is_none());
    let evaluate =
        |reply| Command::Evaluate { expression: "x".into(), frame: 0, max_chars: 100, reply };
    assert_eq!(code(session.ask(evaluate)), Code::Exited);
    // A continue after the end answers the exited state again, at once.
    let resume =
        |reply| Command::Resume { action: Action::Continue, timeout: PATIENCE, to: None, reply };
    assert_eq!(session.ask(resume).unwrap()["exitCode"], 3);
    assert_eq!(session.summary()["exitCode"], 3);
    assert_eq!(session.log(), ["begin", "end forced=false"]);
}

#[test]
fn a_closed_connection_ends_the_session() {
    let session = Session::start(Duration::ZERO, PATIENCE, Vec::new());
    let Session { handle, program, log, .. } = session;
    drop(program);
    let handle = handle.unwrap();
    let (reply, answer) = crossbeam_channel::bounded(1);
    handle
        .commands
        .send(Command::Resume { action: Action::Continue, timeout: PATIENCE, to: None, reply })
        .unwrap();
    assert_eq!(answer.recv_timeout(PATIENCE).unwrap().unwrap()["state"], "exited");
    drop(handle);
    assert_eq!(log.lock().unwrap().last().unwrap(), "shutdown");
}

#[test]
fn a_session_nobody_calls_ends_at_the_idle_limit() {
    let session = Session::start(Duration::ZERO, Duration::from_millis(50), Vec::new());
    let deadline = std::time::Instant::now() + PATIENCE;
    while session.summary()["state"] != "exited" {
        assert!(std::time::Instant::now() < deadline, "the idle session did not end");
        std::thread::sleep(Duration::from_millis(10));
    }
    let resume =
        |reply| Command::Resume { action: Action::Continue, timeout: PATIENCE, to: None, reply };
    let state = session.ask(resume).unwrap();
    assert!(state["message"].as_str().unwrap().contains("idle"), "{state}");
    assert!(session.log().contains(&"end forced=true".to_string()));
}

#[test]
fn a_cancelled_start_answers_cancelled_and_ends_what_began() {
    let (cancel_tx, cancel) = crossbeam_channel::bounded(1);
    cancel_tx.send(()).unwrap();
    let session = Session::start_with(PATIENCE, PATIENCE, Vec::new(), vec![spec(3)], &cancel);
    assert!(matches!(session.first, Err(Failure::Cancelled)));
    assert!(session.handle.is_none());
    // The handle was dropped: the session thread ended and was joined.
    assert_eq!(session.log().last().unwrap(), "shutdown");
}

#[test]
fn a_breakpoint_that_cannot_be_placed_fails_the_start_and_names_its_field() {
    let breakpoints = vec![spec(3), spec(0)];
    let session = Session::start_with(PATIENCE, PATIENCE, Vec::new(), breakpoints, &never());
    let Err(Failure::Error { code, details, .. }) = &session.first else {
        panic!("expected a failure, got {:?}", session.first)
    };
    assert_eq!(*code, Code::NoCodeAtLine);
    assert_eq!(details["field"], "breakpoints[1]");
    assert_eq!(session.log(), ["shutdown"]);
}

#[test]
fn breakpoints_are_listed_counted_and_removed() {
    let session = Session::start(Duration::ZERO, PATIENCE, Vec::new());
    let added = session.ask(|reply| Command::SetBreakpoint { spec: spec(7), reply }).unwrap();
    assert_eq!(added["breakpointId"], "2");
    assert_eq!(added["sessionId"], "1");
    assert_eq!(added["verified"], true);
    session
        .program
        .send(Happening::Logpoint { breakpoint: Some("2".into()), text: "x".into() })
        .unwrap();
    session.program.send(stop(Reason::Breakpoint, &["1", "2"])).unwrap();
    let deadline = std::time::Instant::now() + PATIENCE;
    while session.summary()["state"] != "paused" {
        assert!(std::time::Instant::now() < deadline, "the stop did not arrive");
        std::thread::sleep(Duration::from_millis(5));
    }
    let list = session.ask(|reply| Command::ListBreakpoints { reply }).unwrap();
    let hits: Vec<&Value> =
        list["breakpoints"].as_array().unwrap().iter().map(|b| &b["hits"]).collect();
    assert_eq!(hits, [&json!(1), &json!(2)]);
    let output =
        session.ask(|reply| Command::Output { since: None, strip_ansi: true, reply }).unwrap();
    assert_eq!(output["console"], json!([{"type": "logpoint", "breakpointId": "2", "text": "x"}]));
    assert_eq!(output["cursor"], "6.0.1");
    let removed = session.ask(|reply| Command::RemoveBreakpoint { id: "1".into(), reply });
    assert_eq!(removed.unwrap()["removed"], "1");
    let again = session.ask(|reply| Command::RemoveBreakpoint { id: "1".into(), reply });
    assert_eq!(code(again), Code::NoBreakpoint);
}

/// A breakpoint with `hitCount` 3: its first two hits are counted and passed over (the program
/// told to go on), the third is the first answer; a logpoint's messages start at its count; a
/// step that ends on it is shown whatever its count.
#[test]
fn a_hit_count_passes_over_the_hits_before_it() {
    let counted = BreakpointSpec { hit_count: Some(3), ..spec(3) };
    let logpoint = BreakpointSpec { log_message: Some("x".into()), hit_count: Some(2), ..spec(5) };
    let mut early = vec![stop(Reason::Breakpoint, &["1"]), stop(Reason::Unsaid, &["1"])];
    for _ in 0..2 {
        early.push(Happening::Logpoint { breakpoint: Some("2".into()), text: json!("x is 1") });
    }
    early.push(stop(Reason::Breakpoint, &["1"]));
    let session = Session::start_with(PATIENCE, PATIENCE, early, vec![counted, logpoint], &never());
    let first = session.first.as_ref().unwrap();
    assert_eq!((&first["state"], &first["hitBreakpoints"]), (&json!("paused"), &json!(["1"])));
    let resumed = session.log().iter().filter(|l| *l == "resume Continue paused=true").count();
    assert_eq!(resumed, 2, "{:?}", session.log());
    let listed = session.ask(|reply| Command::ListBreakpoints { reply }).unwrap();
    let listed = &listed["breakpoints"];
    assert_eq!((&listed[0]["hits"], &listed[0]["hitCount"]), (&json!(3), &json!(3)), "{listed}");
    assert_eq!(listed[1]["hits"], 2, "{listed}");
    let output = session.ask(|reply| Command::Output { since: None, strip_ansi: true, reply });
    let logged = output.unwrap().to_string().matches("x is 1").count();
    assert_eq!(logged, 1, "only the logpoint's second hit is logged");

    let fresh = BreakpointSpec { hit_count: Some(9), ..spec(3) };
    let session = Session::start_with(
        PATIENCE,
        PATIENCE,
        vec![stop(Reason::Step, &["1"])],
        vec![fresh],
        &never(),
    );
    assert_eq!(session.first.as_ref().unwrap()["reason"], "breakpoint");
}
